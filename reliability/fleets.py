"""Published fleets: counts, exposure, component tables and their mapping to the taxonomy.

One :class:`Fleet` per published fleet or training run, built from the records of
:mod:`reliability.references` (headline counts, exposure, rates, each with its citation) and
the component tables printed in the papers (each row as printed: component, the paper's
category, count, printed share). :func:`reliability.models.fleets.published_fleets` re-derives the
rates and intervals from them and flags the tables that do not add up.

Each component row is mapped to the package's taxonomy (:data:`reliability.schema.COMPONENTS`
and the attribution domains of :data:`reliability.taxonomy.FAILURE_DOMAINS`), or left unmapped
with the reason, so that a user's hardware-attributed failures can be set beside it.

Definitions differ and the rows say how:

- ``failure_definition``: what was counted (interruptions of one synchronous job of any cause,
  uncorrectable memory errors, failed jobs by cause, incidents);
- ``exposure_basis``: ``job`` (one job's nodes over its run: Llama 3, FT-HSDP), ``jobs`` (the
  node-days of a cluster's large jobs: RSC-1, RSC-2, and a user's r_f), ``fleet`` (every GPU in
  service: Delta), or ``none`` (no exposure published);
- ``basis``: ``counts`` (count and exposure published: a rate with an interval),
  ``published rate`` (the rate as printed, no counts: no interval), ``MTBF only``,
  ``shares only``.
"""

from __future__ import annotations

from dataclasses import dataclass

from reliability import references as ref
from reliability.references import Paper, Reference

__all__ = ["FLEETS", "ComponentRow", "Fleet", "PrintedClaim", "fleet"]


@dataclass(frozen=True)
class ComponentRow:
    """One row of a published component table, as printed, and its taxonomy mapping.

    Attributes
    ----------
    label : str
        The component as the paper names it (``"GPU HBM3 Memory"``).
    category : str
        The paper's own category column (``"GPU"``, ``"Host"``; ``""`` when it has none).
    count : int
        Failures of this row [count], as printed.
    printed_share : float or None
        Its share as printed [fraction of the table's total]; None when not printed.
    component : str or None
        The package taxonomy component it maps to (:data:`reliability.schema.COMPONENTS`), or
        None when it does not map.
    domain : str
        The attribution domain the package would give it (``hardware``, ``user``,
        ``system_software``, ``infrastructure``, ``unknown``); ``""`` when unmapped.
    why : str
        Why it maps there, or why it does not map.
    """

    label: str
    category: str
    count: int
    printed_share: float | None
    component: str | None
    domain: str
    why: str = ""


@dataclass(frozen=True)
class PrintedClaim:
    """A number a paper prints about its own table, to be checked against the table.

    Attributes
    ----------
    what : str
        What is claimed, in words.
    printed : float
        The printed value (a fraction for a share, a count for a total).
    categories : tuple of str
        Table categories whose counts make the claimed share (empty: ``parts`` are given).
    parts : tuple of int
        Printed parts whose sum should equal ``printed`` (a total), when there is no table.
    reference : Reference
        Where the claim is printed.
    """

    what: str
    printed: float
    categories: tuple[str, ...] = ()
    parts: tuple[int, ...] = ()
    reference: Reference | None = None


@dataclass(frozen=True)
class Fleet:
    """A published fleet or training run (see the module doc for the definitions).

    Attributes
    ----------
    key, name, hardware : str
        Short key (``"llama3"``), display name, accelerator.
    gpus, gpus_per_node, nodes : int or None
        Accelerators, accelerators per node, nodes (None when not published).
    days : float or None
        Observation period [days].
    gpu_hours : float or None
        Exposure [GPU-hours] when published that way (Delta).
    failures : int or None
        Count behind the rate [count].
    failure_definition : str
        What ``failures`` counts.
    exposure_basis : str
        ``job``, ``jobs``, ``fleet`` or ``none``.
    basis : str
        ``counts``, ``published rate``, ``MTBF only`` or ``shares only``.
    published_rate_per_node_day : float or None
        The rate as printed, converted to failures per node-day (when no counts are).
    mtbf_h : float or None
        A published mean time between failures or incidents [h].
    components : tuple of ComponentRow
        The component table (empty when none is recorded).
    claims : tuple of PrintedClaim
        Printed totals and shares to check against the table.
    paper : Paper
        The source.
    where : str
        Where in it.
    checked : str
        Where the numbers were checked (primary text or a secondary summary).
    headline : str
        What the source gives when it gives no rate (shares, MTBF), in words with its numbers.
    caveat : str
        What makes it differ from a Slurm cluster's r_f.
    """

    key: str
    name: str
    hardware: str
    gpus: int | None
    gpus_per_node: int | None
    nodes: int | None
    days: float | None
    gpu_hours: float | None
    failures: int | None
    failure_definition: str
    exposure_basis: str
    basis: str
    published_rate_per_node_day: float | None
    mtbf_h: float | None
    components: tuple[ComponentRow, ...]
    claims: tuple[PrintedClaim, ...]
    paper: Paper
    where: str
    checked: str
    headline: str
    caveat: str

    def cite(self) -> str:
        """Return the short citation, e.g. ``"Dubey et al., 2024 (Llama 3), Table 5"``.

        Returns
        -------
        str
            The paper's short name and where the numbers are.
        """
        return f"{self.paper.short}, {self.where}"


_H, _U, _S, _UNK = "hardware", "user", "system_software", "unknown"
_FABRIC = "backend-fabric switch or cable: the taxonomy's ib_link stands for any fabric link"
_HOST = "unplanned maintenance or reboot of one host: the package sees the node drained or rebooted"
_SDC = "silent data corruption: no signal the package reads marks it"
_NCCL = "a collective-communication timeout is a symptom, not a component"
_BUG = "a bug in the training software: the package attributes the job's own crash to the user"


def _row(
    label: str,
    category: str,
    count: int,
    share: float | None,
    component: str | None,
    domain: str,
    why: str = "",
) -> ComponentRow:
    return ComponentRow(label, category, count, share, component, domain if component else "", why)


LLAMA3_TABLE5 = (
    _row("Faulty GPU", "GPU", 148, 0.301, "gpu", _H),
    _row("GPU HBM3 Memory", "GPU", 72, 0.172, "gpu_memory", _H),
    _row("Software Bug", "Dependency", 54, 0.129, "software", _U, _BUG),
    _row("Network Switch/Cable", "Network", 35, 0.084, "ib_link", _H, _FABRIC),
    _row("Host Maintenance", "Unplanned Maintenance", 32, 0.076, "machine", _H, _HOST),
    _row("GPU SRAM Memory", "GPU", 19, 0.045, "gpu_memory", _H, "on-chip SRAM: one GPU-memory component in the taxonomy"),
    _row("GPU System Processor", "GPU", 17, 0.041, "gpu", _H, "GSP: Xid 119/120 are the taxonomy's gpu"),
    _row("NIC", "Host", 7, 0.017, "nic", _H),
    _row("NCCL Watchdog Timeouts", "Unknown", 7, 0.017, "unknown", _UNK, _NCCL),
    _row("Silent Data Corruption", "GPU", 6, 0.014, None, "", _SDC),
    _row("GPU Thermal Interface + Sensor", "GPU", 6, 0.014, "gpu", _H),
    _row("SSD", "Host", 3, 0.007, "disk", _H),
    _row("Power Supply", "Host", 3, 0.007, "psu", _H),
    _row("Server Chassis", "Host", 2, 0.005, "machine", _H),
    _row("IO Expansion Board", "Host", 2, 0.005, "machine", _H, "a board of the host"),
    _row("Dependency", "Dependency", 2, 0.005, None, "", "an external dependency of the job, not a node component"),
    _row("CPU", "Host", 2, 0.005, "cpu", _H),
    _row("System Memory", "Host", 2, 0.005, "dimm", _H),
)  # fmt: skip

FTHSDP_TABLE1 = (
    _row("GPU HBM3 Memory", "", 155, 0.229, "gpu_memory", _H),
    _row("PCIe Device", "", 122, 0.180, "pcie", _H),
    _row("NCCL Watchdog Timeouts", "", 61, 0.090, "unknown", _UNK, _NCCL),
    _row("Faulty GPU Compute", "", 50, 0.074, "gpu", _H),
    _row("Software Bug", "", 48, 0.071, "software", _U, _BUG),
    _row("Host Maintenance", "", 42, 0.062, "machine", _H, _HOST),
    _row("Kernel Fault", "", 39, 0.058, "software", _S, "an OS kernel fault: node software"),
    _row("System Reboot", "", 38, 0.056, "machine", _H, _HOST),
    _row("Numerics/Silent Data Corruption", "", 37, 0.055, None, "", _SDC),
    _row("Network Switch/Cable", "", 36, 0.053, "ib_link", _H, _FABRIC),
    _row("SSD", "", 30, 0.044, "disk", _H),
    _row("GPU SRAM Memory", "", 8, 0.012, "gpu_memory", _H, "on-chip SRAM: one GPU-memory component in the taxonomy"),
    _row("Unknown", "", 7, 0.010, "unknown", _UNK),
    _row("System Memory", "", 2, 0.003, "dimm", _H),
    _row("System Cooling", "", 2, 0.003, None, "", "facility cooling: no node component"),
    _row("GPU Thermal Interface + Sensor", "", 1, 0.002, "gpu", _H),
)  # fmt: skip

ACME_CATEGORIES = (
    _row("Infrastructure", "", 281, 0.11, None, "", "a category (GPU, NVLink, ECC, network, storage) without a component"),
    _row("Framework", "", 404, None, "software", _U, "framework runtime errors: the job's own"),
    _row("Script", "", 1890, None, "software", _U, "user programming errors"),
)  # fmt: skip

_RSC_CAVEAT = (
    "hardware failures of jobs of more than 128 GPUs over their node-days, the package's own "
    "definition of r_f; counts and exposure are not published, so no interval"
)
_JOB = (
    "interruptions of one synchronous job of any cause (software bugs and timeouts included) over "
    "that job's node-days; the package's r_f counts hardware-attributed failures only"
)

FLEETS: tuple[Fleet, ...] = (
    Fleet(
        key="rsc1",
        name="RSC-1 (Meta research cluster)",
        hardware="A100",
        gpus=16000,
        gpus_per_node=8,
        nodes=2000,
        days=None,
        gpu_hours=None,
        failures=None,
        failure_definition="hardware failures of jobs > 128 GPUs",
        exposure_basis="jobs",
        basis="published rate",
        published_rate_per_node_day=ref.RSC1_RATE_PER_NODE_DAY,
        mtbf_h=None,
        components=(),
        claims=(),
        paper=ref.HPCA25,
        where=ref.RSC1_FAILURE_RATE.where,
        checked="the package's HPCA'25 records",
        headline=f"r_f {ref.RSC1_FAILURE_RATE.value} per 1000 node-days over 11 months",
        caveat=_RSC_CAVEAT,
    ),
    Fleet(
        key="rsc2",
        name="RSC-2 (Meta research cluster)",
        hardware="A100",
        gpus=8000,
        gpus_per_node=8,
        nodes=1000,
        days=None,
        gpu_hours=None,
        failures=None,
        failure_definition="hardware failures of jobs > 128 GPUs",
        exposure_basis="jobs",
        basis="published rate",
        published_rate_per_node_day=ref.RSC2_RATE_PER_NODE_DAY,
        mtbf_h=None,
        components=(),
        claims=(),
        paper=ref.HPCA25,
        where=ref.RSC2_FAILURE_RATE.where,
        checked="the package's HPCA'25 records",
        headline=f"r_f {ref.RSC2_FAILURE_RATE.value} per 1000 node-days over 11 months",
        caveat=_RSC_CAVEAT,
    ),
    Fleet(
        key="llama3",
        name="Llama 3 405B pre-training",
        hardware="H100 80GB",
        gpus=int(ref.LLAMA3_GPUS.value),
        gpus_per_node=int(ref.LLAMA3_GPUS_PER_SERVER.value),
        nodes=int(ref.LLAMA3_GPUS.value) // int(ref.LLAMA3_GPUS_PER_SERVER.value),
        days=float(ref.LLAMA3_DAYS.value),
        gpu_hours=None,
        failures=ref.LLAMA3_INTERRUPTIONS.value[2],
        failure_definition="unexpected interruptions of the job (47 planned ones left out)",
        exposure_basis="job",
        basis="counts",
        published_rate_per_node_day=None,
        mtbf_h=None,
        components=LLAMA3_TABLE5,
        claims=(
            PrintedClaim(
                "GPU issues (text)",
                ref.LLAMA3_GPU_ISSUES_SHARE.value,
                categories=("GPU",),
                reference=ref.LLAMA3_GPU_ISSUES_SHARE,
            ),
            PrintedClaim(
                "interruptions: planned + unexpected = total",
                ref.LLAMA3_INTERRUPTIONS.value[0],
                parts=ref.LLAMA3_INTERRUPTIONS.value[1:],
                reference=ref.LLAMA3_INTERRUPTIONS,
            ),
        ),
        paper=ref.DUBEY24,
        where="§3.3.4, Table 5",
        checked="the paper's text (§3.3.4, Table 5) in a text extraction of the arXiv PDF; "
        "glennklockwood.com/garden/component-reliability",
        headline="466 interruptions in 54 days: 47 planned, 419 unexpected",
        caveat=_JOB,
    ),
    Fleet(
        key="fthsdp",
        name="Meta FT-HSDP production training",
        hardware="H100",
        gpus=32000,
        gpus_per_node=8,
        nodes=None,
        days=None,
        gpu_hours=None,
        failures=int(ref.FTHSDP_INTERRUPTIONS.value),
        failure_definition="unexpected interruptions of synchronous training",
        exposure_basis="job",
        basis="published rate",
        published_rate_per_node_day=ref.FTHSDP_RATE.value / 1000.0,
        mtbf_h=ref.FTHSDP_MTBF_100K.value / 60.0,
        components=FTHSDP_TABLE1,
        claims=(),
        paper=ref.SALPEKAR26,
        where="Table 1, §2",
        checked=ref.SECONDARY,
        headline="678 unexpected interruptions at 32K GPUs (period not given); "
        "2.3 per 1000 servers per day; MTBF 18 min measured at about 100K GPUs",
        caveat=_JOB + "; the period of the 678 is not given, so the rate is the printed one "
        "without an interval; the 18-min MTBF measured at ~98K GPUs is about a third of the 51 min that 2.3 per 1000 "
        "server-days projects there",
    ),
    Fleet(
        key="delta_a100",
        name="NCSA Delta A100 (memory errors)",
        hardware="A100 40GB",
        gpus=ref.DELTA_GPUS.value[0],
        gpus_per_node=None,
        nodes=None,
        days=float(ref.DELTA_DAYS.value[0]),
        gpu_hours=float(ref.DELTA_MEMORY_ERRORS.value[0] * ref.DELTA_MEMORY_MTBE.value[0]),
        failures=ref.DELTA_MEMORY_ERRORS.value[0],
        failure_definition="uncorrectable GPU memory errors (not all end a job)",
        exposure_basis="fleet",
        basis="counts",
        published_rate_per_node_day=None,
        mtbf_h=float(ref.DELTA_MEMORY_MTBE.value[0]),
        components=(),
        claims=(),
        paper=ref.CUI25,
        where="Table 1",
        checked=ref.SECONDARY,
        headline="34 uncorrectable memory errors; per-GPU MTBE 283,271 h",
        caveat="GPU memory errors only, per GPU-hour of the whole fleet (nodes of 4 and 8 GPUs: "
        "no per-node rate); exposure = errors x printed MTBE (448 GPUs x 895 days agrees within "
        "0.1%)",
    ),
    Fleet(
        key="delta_h100",
        name="NCSA Delta H100 (memory errors)",
        hardware="H100 96GB (GH200)",
        gpus=ref.DELTA_GPUS.value[1],
        gpus_per_node=4,
        nodes=ref.DELTA_GPUS.value[1] // 4,
        days=float(ref.DELTA_DAYS.value[1]),
        gpu_hours=float(ref.DELTA_MEMORY_ERRORS.value[1] * ref.DELTA_MEMORY_MTBE.value[1]),
        failures=ref.DELTA_MEMORY_ERRORS.value[1],
        failure_definition="uncorrectable GPU memory errors (not all end a job)",
        exposure_basis="fleet",
        basis="counts",
        published_rate_per_node_day=None,
        mtbf_h=float(ref.DELTA_MEMORY_MTBE.value[1]),
        components=(),
        claims=(),
        paper=ref.CUI25,
        where="Table 1",
        checked=ref.SECONDARY,
        headline="24 uncorrectable memory errors; per-GPU MTBE 88,768 h (3.2x below A100's)",
        caveat="GPU memory errors only, per GPU-hour of the whole fleet; exposure = errors x "
        "printed MTBE = 608 GPUs x 146 days exactly",
    ),
    Fleet(
        key="acme",
        name="Acme (Shanghai AI Lab LLM clusters)",
        hardware="A100",
        gpus=None,
        gpus_per_node=8,
        nodes=None,
        days=None,
        gpu_hours=None,
        failures=None,
        failure_definition="failed jobs by cause",
        exposure_basis="none",
        basis="shares only",
        published_rate_per_node_day=None,
        mtbf_h=None,
        components=ACME_CATEGORIES,
        claims=(),
        paper=ref.HU24,
        where="failure table (§5)",
        checked=ref.SECONDARY,
        headline="infrastructure causes about 11% of failed jobs (281) but about 82% of their "
        "GPU time",
        caveat="shares of failed jobs, no exposure: no rate",
    ),
    Fleet(
        key="philly",
        name="Microsoft Philly",
        hardware="P100/P40",
        gpus=None,
        gpus_per_node=None,
        nodes=None,
        days=None,
        gpu_hours=None,
        failures=None,
        failure_definition="failed job trials by cause",
        exposure_basis="none",
        basis="shares only",
        published_rate_per_node_day=None,
        mtbf_h=None,
        components=(),
        claims=(),
        paper=ref.JEON19,
        where="Table 6, failure table",
        checked=ref.SECONDARY,
        headline="17.2% of jobs unsuccessful (17.76% of GPU time); hardware-rooted failures "
        "negligible (GPU ECC errors: 10 trials)",
        caveat="a two-month trace of mostly user failures; shares only, no exposure",
    ),
    Fleet(
        key="superbench",
        name="Azure AI fleet (SuperBench)",
        hardware="A100/H100",
        gpus=None,
        gpus_per_node=8,
        nodes=None,
        days=None,
        gpu_hours=None,
        failures=None,
        failure_definition="incidents per node after repairs",
        exposure_basis="none",
        basis="MTBF only",
        published_rate_per_node_day=None,
        mtbf_h=float(ref.SUPERBENCH_NODE_MTBI.value[0]),
        components=(),
        claims=(),
        paper=ref.XIONG24,
        where="incident analysis",
        checked=ref.SECONDARY,
        headline="per-node MTBI 719.4 h at the 1st incident, 151.7 h at the 20th; 10.36% of "
        "nodes defective at validation",
        caveat="the MTBI of nodes that already had incidents, not a fleet rate",
    ),
    Fleet(
        key="byterobust",
        name="ByteDance training platform (ByteRobust)",
        hardware="GPU",
        gpus=None,
        gpus_per_node=None,
        nodes=None,
        days=None,
        gpu_hours=None,
        failures=int(ref.BYTEROBUST_INCIDENTS.value),
        failure_definition="incidents over 778,135 jobs in three months",
        exposure_basis="none",
        basis="shares only",
        published_rate_per_node_day=None,
        mtbf_h=None,
        components=(),
        claims=(
            PrintedClaim(
                "incidents: explicit + implicit + manual restarts = total",
                ref.BYTEROBUST_INCIDENTS.value,
                parts=ref.BYTEROBUST_INCIDENT_PARTS.value,
                reference=ref.BYTEROBUST_INCIDENTS,
            ),
        ),
        paper=ref.WAN25,
        where="incident table",
        checked=ref.SECONDARY,
        headline="55,366 incidents over 778,135 jobs in three months",
        caveat="incidents per job, no node exposure: no rate",
    ),
)


def fleet(key: str) -> Fleet:
    """Return a published fleet by its key.

    Parameters
    ----------
    key : str
        One of the keys of :data:`FLEETS` (``"llama3"``, ``"fthsdp"``, ``"rsc1"``...).

    Returns
    -------
    Fleet
        The fleet.

    Raises
    ------
    KeyError
        For an unknown key, naming the known ones.
    """
    for f in FLEETS:
        if f.key == key:
            return f
    raise KeyError(f"no published fleet {key!r}; known: {', '.join(f.key for f in FLEETS)}")
