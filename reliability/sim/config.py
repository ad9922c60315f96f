"""Configuration of the GPU-cluster simulator, loaded from TOML presets (data, not code).

Every field has a documented default; a preset (``reliability/sim/presets/*.toml``) or a user
file overrides any of them by section (``[cluster]``, ``[workload]``, ``[failures]``).
Reference numbers: Kokolis et al. HPCA'25 (DESIGN.md §5).
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_DAYS",
    "SITE_WORDINGS",
    "Cause",
    "ClusterConfig",
    "FailureConfig",
    "WorkloadConfig",
    "load_preset",
    "preset_names",
    "site_wording",
]


#: the longest run a simulator accepts [days]: a century (a run is held in memory as it goes;
#: :mod:`reliability.sim.budget` also sizes it against the memory available)
MAX_DAYS = 36525.0


def check_days(days: float, option: str = "days=") -> float:
    """Check a run length: a number of days > 0, at most :data:`MAX_DAYS`.

    Parameters
    ----------
    days : float
        Run length [days].
    option : str
        How the caller spells it, for the message (``days=``, ``--days ``).

    Returns
    -------
    float
        ``days`` as a float.

    Raises
    ------
    ValueError
        Naming ``option`` and the value, and the limit.
    """
    d = float(days)
    if not (math.isfinite(d) and 0 < d <= MAX_DAYS):
        raise ValueError(
            f"{option}{d:g}: expected a run length in days > 0 and at most {MAX_DAYS:,.0f} "
            "(a century; a run is held in memory as it goes)"
        )
    return d


@dataclass(frozen=True)
class Cause:
    """A hardware failure cause and its signature.

    Attributes
    ----------
    component : str
        Taxonomy component (``gpu``, ``ib_link``...).
    xid : str or None
        NVIDIA Xid written to the kernel log (None: no driver message).
    node_down : bool
        The node stops responding (jobs end NODE_FAIL) rather than crashing the job.
    reason : str
        Drain reason a health check writes (sacctmgr event / scontrol Reason).
    """

    component: str
    xid: str | None
    node_down: bool
    reason: str


#: Default cause catalogue (name -> Cause).
CAUSES: dict[str, Cause] = {
    "gpu_fell_off_bus": Cause("gpu", "79", False, "GPU fell off the bus (Xid 79)"),
    "gpu_gsp_timeout": Cause("gpu", "119", False, "GSP RPC timeout (Xid 119)"),
    "gpu_eud": Cause("gpu", "61", False, "GPU diagnostics (EUD) failed"),
    "gpu_memory_dbe": Cause("gpu_memory", "48", False, "GPU ECC double-bit error (Xid 48)"),
    "gpu_memory_uncontained": Cause("gpu_memory", "95", False, "uncontained ECC error (Xid 95)"),
    "nvlink": Cause("nvlink", "74", False, "NVLink error (Xid 74)"),
    "pcie": Cause("pcie", None, True, "PCIe link down (node unresponsive)"),
    "ib_link": Cause("ib_link", None, False, "IB link down"),
    "nic": Cause("nic", None, False, "NIC failure"),
    "dimm": Cause("dimm", None, True, "DIMM uncorrectable error"),
    "filesystem": Cause("filesystem", None, False, "filesystem mount missing"),
    "psu": Cause("psu", None, True, "PSU failure"),
    "bios": Cause("bios", None, True, "BIOS / firmware fault"),
    "cpu": Cause("cpu", None, True, "CPU machine check"),
}

#: How a site's health check words a drain for each cause, beside :attr:`Cause.reason`: real
#: sites write their own wording, which often names no signal the taxonomy knows (NHC's check
#: names, a vendor diagnostic, free text with a ticket). A drain takes one of these (or the
#: cause's own reason) by the node and the second it happens: no random draw, so the run's
#: random stream, and every figure built on it, is unchanged.
SITE_WORDINGS: dict[str, tuple[str, ...]] = {
    "gpu": ("NHC: check_hw_gpu failed", "HC FAIL: dcgmi diag -r 3", "nvidia-smi timeout"),
    "gpu_memory": ("NHC: check_hw_gpu failed", "hc: retired pages pending", "HC FAIL: dcgmi diag -r 3"),
    "nvlink": ("HC FAIL: nvbandwidth below threshold", "NHC: check_hw_gpu failed"),
    "pcie": ("node unresponsive - see ops",),
    "ib_link": ("HC FAIL: ibstat mlx5_0 not Active", "NHC: check_hw_ib failed", "IB errors - ticket 4411"),
    "nic": ("NHC: check_hw_eth failed", "eth0 link flapping"),
    "dimm": ("NHC: check_hw_physmem failed", "EDAC: CE storm on mc1"),
    "filesystem": ("NHC: check_fs_mount /scratch", "lustre client evicted"),
    "psu": ("BMC SEL: critical event", "power supply fault - ticket 3021"),
    "bios": ("NHC: check_hw_cpuinfo failed", "BIOS settings drift"),
    "cpu": ("mce: cpu machine check", "NHC: check_hw_cpuinfo failed"),
    "unknown": ("node unhealthy - see ops", "HC FAIL"),
}  # fmt: skip


def site_wording(component: str, reason: str, node: int, time_s: float) -> str:
    """Pick the drain reason a site would write: a site wording or the cause's own reason.

    Deterministic in (node, second), so the simulator's random stream is untouched.

    Parameters
    ----------
    component : str
        The failing component (a key of :data:`SITE_WORDINGS`).
    reason : str
        The cause's own reason (:attr:`Cause.reason`).
    node : int
        Node index.
    time_s : float
        When the drain is written [s since the start].

    Returns
    -------
    str
        One of the site's wordings for the component, or ``reason`` (one time in two).
    """
    words = SITE_WORDINGS.get(component, SITE_WORDINGS["unknown"])
    k = (node * 7919 + int(time_s)) % (2 * len(words))
    return reason if k >= len(words) else words[k]


#: Share of each cause among ordinary nodes' failures.
DEFAULT_CAUSE_MIX = {
    "gpu_fell_off_bus": 0.10, "gpu_gsp_timeout": 0.05, "gpu_eud": 0.02, "gpu_memory_dbe": 0.08,
    "gpu_memory_uncontained": 0.05, "nvlink": 0.06, "pcie": 0.05, "ib_link": 0.11, "nic": 0.04,
    "dimm": 0.20, "filesystem": 0.09, "psu": 0.08, "bios": 0.08, "cpu": 0.06,
}  # fmt: skip
#: Root causes of lemon nodes (HPCA'25: GPU 28.2%, DIMM 20.5%, PCIe 15.4%, EUD 10.3%, NIC 7.7%,
#: BIOS 7.7%, PSU 5.1%, optics 2.6%, CPU 2.6%).
LEMON_CAUSE_MIX = {
    "gpu_fell_off_bus": 0.282, "dimm": 0.205, "pcie": 0.154, "gpu_eud": 0.103, "nic": 0.077,
    "bios": 0.077, "psu": 0.051, "ib_link": 0.026, "cpu": 0.026,
}  # fmt: skip
#: Job size mix (GPUs -> share of jobs). With the default durations: 46% of jobs use 1 GPU,
#: 91.5% under 8 GPUs taking 7.5% of GPU time, 256+ GPU jobs 66% of GPU time, ~47 GPU-hours per
#: job (HPCA'25 Fig. 2: >40%, >90% and <10%, 66% on RSC-1; 7.2k jobs/day on 2,000 nodes).
DEFAULT_SIZE_MIX = {
    1: 0.46, 2: 0.20, 4: 0.25, 8: 0.05, 16: 0.015, 32: 0.01, 64: 0.005, 128: 0.003,
    256: 0.0006, 512: 0.00032, 1024: 0.00016, 2048: 0.00008, 4096: 0.00004,
}  # fmt: skip


@dataclass(frozen=True)
class WorkloadConfig:
    """Job stream and scheduler policy (Kokolis et al. HPCA'25 §II).

    Durations: the work of a job is log-normal with median ``median_h * gpus**size_exponent``
    and shape ``sigma``; training runs (``gpus >= training_min_gpus``) have their own median,
    size exponent and shape (``training_*``) and may need more than one job's lifetime
    (``max_run_days``): they checkpoint, restart
    from the last checkpoint when interrupted, and, when a job reaches ``max_lifetime_h``
    (counted from its first start, across requeues) or ``max_requeues``, continue as a new
    submission of the same run (same user, same job name).

    Queue order (Slurm's multifactor priority): QOS priority plus an age term that grows
    linearly to ``age_priority_weight`` over ``age_priority_max_days`` of waiting, so that no
    job starves behind a stream of higher-QOS work. Preemption follows QOS alone: a job may
    preempt jobs of a lower QOS listed in ``preemptible_qos`` that have run ``preempt_after_h``.

    Requeues that are not hardware failures (Slurm state REQUEUED): a share ``p_app_requeue``
    of jobs ask to be requeued once through Slurm's ``RequeueExit`` (exit code
    ``app_requeue_exit_code``, the ``.batch`` step FAILED with that code), and a share
    ``p_admin_requeue`` are requeued once by an administrator (``scontrol requeue``: exit code
    0:0, the ``.batch`` step CANCELLED by signal 15), at a random point of their work.
    """

    target_utilization: float = 0.83
    max_job_gpus: int = 4096
    #: maximum lifetime of a job [h], from its first start across its requeues (RSC: 7 days)
    max_lifetime_h: float = 168.0
    #: requeues after which Slurm stops requeueing a job (a training run then resubmits)
    max_requeues: int = 40
    #: longest training run [days] (its work spans several jobs of at most the lifetime)
    max_run_days: float = 21.0
    array_fraction: float = 0.15
    size_mix: dict[int, float] = field(default_factory=lambda: dict(DEFAULT_SIZE_MIX))
    median_h: float = 0.5
    size_exponent: float = 0.5
    sigma: float = 1.3
    #: training runs: median work ``training_median_h * (gpus / training_min_gpus) **
    #: training_size_exponent`` [h], log-normal shape ``training_sigma``
    training_median_h: float = 4.0
    training_size_exponent: float = 0.5
    training_sigma: float = 1.3
    qos_mix: dict[str, float] = field(
        default_factory=lambda: {"high": 0.25, "normal": 0.55, "low": 0.20}
    )
    #: QOS mix of training runs (None: ``qos_mix``); large runs are usually high priority
    training_qos_mix: dict[str, float] | None = None
    #: chance a job fails from user code / is cancelled / runs out of memory, before its end
    p_user_fail: float = 0.23
    p_cancel: float = 0.03
    p_oom: float = 0.001
    #: chance the requested time limit is shorter than the work (ends TIMEOUT)
    p_timeout: float = 0.006
    #: chance a job asks Slurm to requeue it once (RequeueExit) / an admin requeues it once
    p_app_requeue: float = 0.0
    p_admin_requeue: float = 0.0
    app_requeue_exit_code: int = 99
    n_users: int = 300
    #: long multi-node runs (>= this many GPUs) checkpoint and restart
    training_min_gpus: int = 64
    checkpoint_interval_min: float = 60.0
    restart_overhead_min: float = 5.0
    preempt_after_h: float = 2.0
    #: QOS whose jobs a job of a higher QOS may preempt (Slurm's per-QOS ``Preempt`` list)
    preemptible_qos: tuple[str, ...] = ("normal", "low")
    #: age term of the queue priority: weight reached after this many days of waiting
    age_priority_weight: float = 0.0
    age_priority_max_days: float = 7.0


@dataclass(frozen=True)
class FailureConfig:
    """Hardware failures, health checks and repairs.

    The failure-rate schedule is the fleet's: failures per 1000 node-days in service,
    averaged over every node, lemons included (what HPCA'25 Fig. 5 measures). It rises from
    ``rate_start_per_1000_node_days`` to ``rate_end_per_1000_node_days`` as
    ``start + (end - start) * (t / T) ** k``, with ``k`` set so that the run averages
    ``rate_mean_per_1000_node_days`` (``k = (end - start) / (mean - start) - 1``; linear when
    the mean is None or midway). Lemon nodes fail ``lemon_rate_multiplier`` times as often as
    ordinary nodes at every moment, or, with ``lemon_failure_share`` set, as often as makes
    lemons cause that share of the fleet's failures.
    """

    rate_start_per_1000_node_days: float = 2.5
    rate_end_per_1000_node_days: float = 17.5
    rate_mean_per_1000_node_days: float | None = None
    weekly_amplitude: float = 0.0  # relative weekly swing of the rate
    lemon_fraction: float = 0.015
    lemon_rate_multiplier: float = 15.0
    lemon_failure_share: float | None = None
    cause_mix: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_CAUSE_MIX))
    lemon_cause_mix: dict[str, float] = field(default_factory=lambda: dict(LEMON_CAUSE_MIX))
    health_check_interval_s: float = 300.0
    #: chance a health check catches a failure (otherwise it escapes; the node stays in service)
    p_detect: float = 0.9
    p_detect_lemon: float = 0.35
    #: healthy nodes drained by a health check without a fault
    false_alarm_rate_per_1000_node_days: float = 0.3
    #: seconds until Slurm marks a silent node down (SlurmdTimeout)
    slurmd_timeout_s: float = 300.0
    repair_median_h: float = 18.0
    repair_sigma: float = 0.9
    #: repairs of a lemon find nothing lasting (the node returns and fails again)
    lemon_repair_median_h: float | None = None
    false_alarm_repair_h: float = 1.0

    def __post_init__(self) -> None:
        lo, hi = self.rate_start_per_1000_node_days, self.rate_end_per_1000_node_days
        mean = self.rate_mean_per_1000_node_days
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo < 0 or hi < 0:
            raise ValueError(
                "[failures] rate_start/rate_end_per_1000_node_days must be finite and >= 0"
            )
        if mean is not None and not (min(lo, hi) <= mean <= max(lo, hi)):
            raise ValueError(
                f"[failures] rate_mean_per_1000_node_days = {mean} must lie between the start "
                f"({lo}) and the end ({hi}) of the schedule"
            )
        if mean is not None and lo != hi and mean in (lo, hi):
            raise ValueError(
                "[failures] rate_mean_per_1000_node_days equal to an endpoint needs an infinitely "
                "sharp ramp; choose a mean strictly between start and end"
            )
        if not 0.0 <= self.lemon_fraction < 1.0:
            raise ValueError("[failures] lemon_fraction must be in [0, 1)")
        share = self.lemon_failure_share
        if share is not None and not 0.0 <= share < 1.0:
            raise ValueError("[failures] lemon_failure_share must be in [0, 1)")
        for name in ("p_detect", "p_detect_lemon"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"[failures] {name} must be in [0, 1]")

    @property
    def ramp_exponent(self) -> float:
        """``k`` of the schedule ``start + (end - start) (t/T)^k`` (1: linear)."""
        lo, hi = self.rate_start_per_1000_node_days, self.rate_end_per_1000_node_days
        mean = self.rate_mean_per_1000_node_days
        if mean is None or lo == hi:
            return 1.0
        return (hi - lo) / (mean - lo) - 1.0

    def lemon_multiplier(self, n_nodes: int) -> float:
        """Return the lemon failure rate over the ordinary nodes' rate.

        That is ``lemon_rate_multiplier``, or, with ``lemon_failure_share`` = s set, the
        multiplier that makes lemons cause that share of the failures of ``n_nodes`` nodes
        with the drawn number of lemons ``round(lemon_fraction * n_nodes)`` (fraction f of
        the nodes): ``m = s (1 - f) / ((1 - s) f)`` (1 when s = 0).

        Parameters
        ----------
        n_nodes : int
            Nodes in the cluster.

        Returns
        -------
        float
            The multiplier [lemon rate / ordinary rate]; ``lemon_rate_multiplier`` when the
            share is not set or the cluster draws no lemon.
        """
        share = self.lemon_failure_share
        n_lemons = round(self.lemon_fraction * n_nodes)
        if share is None or n_lemons == 0:
            return self.lemon_rate_multiplier
        f = n_lemons / n_nodes
        return share * (1.0 - f) / ((1.0 - share) * f) if share > 0 else 1.0


@dataclass(frozen=True)
class ClusterConfig:
    """The whole simulation: cluster shape, time window, workload and failures."""

    name: str = "cluster"
    n_nodes: int = 48
    gpus_per_node: int = 8
    days: float = 30.0
    start: datetime = datetime(2025, 1, 1, tzinfo=UTC)
    tz: str = "UTC"
    node_prefix: str = "gpu"
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    failures: FailureConfig = field(default_factory=FailureConfig)

    def node_names(self) -> list[str]:
        """Return the node host names, zero-padded (``gpu001``...).

        Returns
        -------
        list of str
            ``node_prefix`` followed by 1..``n_nodes``, at least 3 digits wide.
        """
        width = max(3, len(str(self.n_nodes)))
        return [f"{self.node_prefix}{i:0{width}d}" for i in range(1, self.n_nodes + 1)]

    @property
    def horizon_s(self) -> float:
        """Length of the simulated window [s] (``days`` in seconds)."""
        return self.days * 86400.0

    def with_days(self, days: float) -> ClusterConfig:
        """Return a copy of this config with another window length.

        Parameters
        ----------
        days : float
            Length of the simulated window [days].

        Returns
        -------
        ClusterConfig
            The same cluster, workload and failures over ``days``.

        Raises
        ------
        ValueError
            If ``days`` is not in (0, :data:`MAX_DAYS`].
        """
        return replace(self, days=check_days(days))

    def as_dict(self) -> dict[str, Any]:
        """Return the config as a plain dict (for ``truth/config.json``).

        Returns
        -------
        dict of str to object
            One key per field; ``workload`` and ``failures`` as nested dicts, ``start`` as an
            ISO 8601 string.
        """
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, (WorkloadConfig, FailureConfig)):
                out[f.name] = {g.name: getattr(v, g.name) for g in fields(v)}
            else:
                out[f.name] = v.isoformat() if isinstance(v, datetime) else v
        return out


def _section(cls: type, data: dict[str, Any], where: str) -> Any:
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r}; expected one of {sorted(known)}")
    data = dict(data)
    for key in ("size_mix",):
        if key in data:
            data[key] = {int(k): float(v) for k, v in data[key].items()}
    if isinstance(data.get("preemptible_qos"), list):
        data["preemptible_qos"] = tuple(data["preemptible_qos"])
    try:
        return cls(**data)
    except ValueError as exc:  # a value the section rejects: name the document
        msg = str(exc)
        tag = where.rsplit(" ", 1)[-1] + " "  # "[failures] " (the section says its name)
        msg = msg.removeprefix(tag)
        raise ValueError(msg if msg.startswith(where) else f"{where}: {msg}") from None


def from_dict(data: dict[str, Any], where: str = "config") -> ClusterConfig:
    """Build a config from a parsed TOML document (``[cluster]``, ``[workload]``, ``[failures]``).

    Keys left out keep their defaults.

    Parameters
    ----------
    data : dict of str to object
        The parsed document: one table per section.
    where : str
        Names the document in error messages (a file path or ``preset NAME``).

    Returns
    -------
    ClusterConfig
        The configuration.

    Raises
    ------
    ValueError
        On an unknown section or key, a ``cluster.start`` without a UTC offset, or a value the
        section rejects (e.g. a failure-rate mean outside the schedule), naming ``where``.
    """
    unknown = sorted(set(data) - {"cluster", "workload", "failures"})
    if unknown:
        raise ValueError(f"{where}: unknown section [{unknown[0]}]")
    cl = dict(data.get("cluster", {}))
    if "start" in cl:
        start = cl["start"]
        if isinstance(start, str):
            start = datetime.fromisoformat(start.replace("Z", "+00:00"))
        if start.tzinfo is None:
            raise ValueError(f"{where}: cluster.start needs a UTC offset")
        cl["start"] = start.astimezone(UTC)
    wl = _section(WorkloadConfig, data.get("workload", {}), f"{where} [workload]")
    fl = _section(FailureConfig, data.get("failures", {}), f"{where} [failures]")
    known = {f.name for f in fields(ClusterConfig)} - {"workload", "failures"}
    bad = sorted(set(cl) - known)
    if bad:
        raise ValueError(
            f"{where} [cluster]: unknown key {bad[0]!r}; expected one of {sorted(known)}"
        )
    for key in ("n_nodes", "gpus_per_node"):
        v = cl.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise ValueError(f"{where} [cluster]: {key} must be an integer >= 1, got {v!r}")
    days = cl.get("days")
    if days is not None and (
        isinstance(days, bool) or not isinstance(days, int | float) or not 0 < days < math.inf
    ):
        raise ValueError(f"{where} [cluster]: days must be a number > 0, got {days!r}")
    return ClusterConfig(**cl, workload=wl, failures=fl)


def preset_names() -> list[str]:
    """List the bundled presets.

    Returns
    -------
    list of str
        Preset names (``reliability/sim/presets/*.toml`` without the suffix), sorted.
    """
    root = resources.files("reliability.sim") / "presets"
    return sorted(p.name.removesuffix(".toml") for p in root.iterdir() if p.name.endswith(".toml"))


def _cluster_presets() -> list[str]:
    """List the bundled presets of the cluster simulator (the others are pods')."""
    root = resources.files("reliability.sim") / "presets"
    return [
        n for n in preset_names() if "[cluster]" in (root / f"{n}.toml").read_text(encoding="utf-8")
    ]


def load_preset(name_or_path: str | Path) -> ClusterConfig:
    """Load a bundled preset by name (``small``, ``rsc1``, ``rsc2``) or a TOML file.

    Parameters
    ----------
    name_or_path : str or pathlib.Path
        A path to an existing ``.toml`` file, or the name of a bundled preset.

    Returns
    -------
    ClusterConfig
        The configuration (:func:`from_dict`).

    Raises
    ------
    ValueError
        If neither a file nor a bundled preset has that name (the message lists the presets),
        or the document is invalid.
    """
    p = Path(name_or_path)
    if p.suffix == ".toml" and p.is_file():
        return from_dict(tomllib.loads(p.read_text(encoding="utf-8")), str(p))
    if p.suffix == ".toml":
        raise ValueError(f"{p}: no such preset file")
    res = resources.files("reliability.sim") / "presets" / f"{name_or_path}.toml"
    if not res.is_file():
        raise ValueError(
            f"unknown cluster preset {name_or_path!r}; bundled: {', '.join(_cluster_presets())}, "
            "or a .toml file"
        )
    return from_dict(tomllib.loads(res.read_text(encoding="utf-8")), f"preset {name_or_path}")
