"""Versioned failure taxonomy: NVIDIA Xid / SXid codes and DCGM fields -> component, domain, severity.

Sources: NVIDIA "XID Errors" documentation (docs.nvidia.com/deploy/xid-errors), the NVSwitch
SXid list in the Fabric Manager user guide, and Kokolis et al. HPCA'25 §III (which Xids mark
hardware failures of a job). ``severity = critical`` means "the node should be taken out of
service / the job on it is lost"; ``warning`` means "worth counting, usually not fatal";
``info`` means "context only". ``domain`` is the failure domain used by attribution
(``hardware``, ``user``, ``software``, ``infrastructure``).

An unknown code is never dropped: it maps to ``component = unknown``, ``severity = warning``.
Bump :data:`TAXONOMY_VERSION` whenever a mapping changes; the Dataset manifest records it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

from reliability import schema

__all__ = [
    "DCGM_FIELDS",
    "FAILURE_DOMAINS",
    "REASON_SYMPTOMS",
    "SLURM_NODE_REASONS",
    "SXID",
    "TAXONOMY_VERSION",
    "XID",
    "Classification",
    "ReasonSignal",
    "classify_slurm_reason",
    "classify_sxid",
    "classify_xid",
    "reason_signals",
    "xid_table",
]

TAXONOMY_VERSION = "2026.12.1"  # Xid 94 critical (it terminates the application)


@dataclass(frozen=True)
class Classification:
    """What a code means: component, failure domain, severity, and a short description."""

    component: str
    domain: str
    severity: str
    description: str


_C = Classification
#: Xid code -> classification.
XID: dict[int, Classification] = {
    8: _C("gpu", "software", "warning", "GPU stopped processing (driver/application timeout)"),
    13: _C("software", "user", "warning", "graphics engine exception (usually an application bug)"),
    31: _C("software", "user", "warning", "GPU memory page fault (usually an application bug)"),
    32: _C("pcie", "hardware", "warning", "invalid or corrupted push buffer stream (PCIe/DMA)"),
    38: _C("gpu", "software", "warning", "driver firmware error"),
    43: _C("software", "user", "warning", "GPU stopped processing (application fault)"),
    45: _C("software", "software", "info", "preemptive cleanup after previous errors"),
    48: _C("gpu_memory", "hardware", "critical", "double-bit ECC error (DBE)"),
    56: _C("gpu", "hardware", "warning", "display engine error"),
    57: _C("gpu_memory", "hardware", "warning", "error programming video memory interface"),
    61: _C("gpu", "hardware", "critical", "internal micro-controller breakpoint/warning"),
    62: _C("gpu", "hardware", "critical", "internal micro-controller halt"),
    63: _C("gpu_memory", "hardware", "warning", "ECC page retirement or row remapping recorded"),
    64: _C("gpu_memory", "hardware", "critical", "ECC page retirement or row remapping failure"),
    68: _C("gpu", "hardware", "warning", "NVDEC/video processor exception"),
    69: _C("gpu", "hardware", "warning", "graphics engine class error"),
    74: _C("nvlink", "hardware", "critical", "NVLink error"),
    79: _C("gpu", "hardware", "critical", "GPU has fallen off the bus"),
    92: _C("gpu_memory", "hardware", "warning", "high single-bit ECC error rate"),
    # the process that touched the poisoned memory is terminated (NVIDIA Xid catalog: immediate
    # action RESTART_APP): a job ends on it, so it is evidence for that job's failure
    94: _C(
        "gpu_memory", "hardware", "critical", "contained ECC error (the application is terminated)"
    ),
    95: _C("gpu_memory", "hardware", "critical", "uncontained ECC error (GPU reset required)"),
    109: _C("gpu", "software", "warning", "context switch timeout"),
    119: _C("gpu", "hardware", "critical", "GSP RPC timeout"),
    120: _C("gpu", "hardware", "critical", "GSP error"),
    121: _C("nvlink", "hardware", "critical", "C2C link error"),
    122: _C("gpu", "hardware", "warning", "SPI PMU RPC read failure"),
    123: _C("gpu", "hardware", "warning", "SPI PMU RPC write failure"),
    136: _C("gpu", "hardware", "warning", "power-management event"),
    137: _C("nvlink", "hardware", "critical", "NVLink FLA privilege error"),
    140: _C("gpu_memory", "hardware", "critical", "unrecovered ECC error"),
    143: _C("gpu", "hardware", "critical", "GPU initialization failure"),
    144: _C("nvlink", "hardware", "critical", "NVLink SAW error"),
    145: _C("nvlink", "hardware", "critical", "NVLink RLW error"),
    149: _C("nvlink", "hardware", "critical", "NVLink NETIR error"),
    154: _C(
        "gpu", "hardware", "critical", "GPU recovery action changed (reset or reboot required)"
    ),
}

#: NVSwitch SXid code -> classification (fatal ones take the fabric down for the node).
SXID: dict[int, Classification] = {
    11004: _C("nvlink", "hardware", "critical", "NVSwitch ingress invalid ACL"),
    12028: _C("nvlink", "hardware", "warning", "NVSwitch egress non-posted PRIV error"),
    19084: _C("nvlink", "hardware", "critical", "NVSwitch AN1 fatal heartbeat timeout"),
    20034: _C("nvlink", "hardware", "critical", "NVSwitch LTSSM fault (link down)"),
    22013: _C("nvlink", "hardware", "critical", "NVSwitch minion link DLREQ interrupt"),
    24007: _C("nvlink", "hardware", "critical", "NVSwitch NVLink TL error"),
}

_UNKNOWN = _C("unknown", "unknown", "warning", "code not in the taxonomy")

#: DCGM exporter counters -> (classification, kind). ``kind`` is ``counter`` (an event when
#: it increases) or ``last_xid`` (a gauge holding the last Xid seen).
DCGM_FIELDS: dict[str, tuple[Classification, str]] = {
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": (_C("gpu_memory", "hardware", "critical", "volatile double-bit ECC errors"), "counter"),
    "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": (_C("gpu_memory", "hardware", "critical", "aggregate double-bit ECC errors"), "counter"),
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": (_C("gpu_memory", "hardware", "info", "volatile single-bit ECC errors"), "counter"),
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": (_C("gpu_memory", "hardware", "critical", "row remapping failure"), "counter"),
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": (_C("gpu_memory", "hardware", "warning", "rows remapped after uncorrectable errors"), "counter"),
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": (_C("nvlink", "hardware", "warning", "NVLink flit CRC errors"), "counter"),
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL": (_C("nvlink", "hardware", "warning", "NVLink data CRC errors"), "counter"),
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL": (_C("nvlink", "hardware", "warning", "NVLink recovery errors"), "counter"),
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL": (_C("nvlink", "hardware", "info", "NVLink replay errors"), "counter"),
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": (_C("pcie", "hardware", "warning", "PCIe replays"), "counter"),
    "DCGM_FI_DEV_XID_ERRORS": (_UNKNOWN, "last_xid"),
    "DCGM_EXP_XID_ERRORS_COUNT": (_UNKNOWN, "xid_window_count"),
    "DCGM_FI_DEV_XID_ERRORS_ACTIVE": (_UNKNOWN, "xid_window_count"),
}  # fmt: skip


def classify_xid(code: int | str) -> Classification:
    """Classify an Xid code.

    Parameters
    ----------
    code : int or str
        The Xid number.

    Returns
    -------
    Classification
        Component, domain, severity and description; an unknown (or non-numeric) code gives
        component ``unknown``, severity ``warning``, never an error.
    """
    try:
        return XID.get(int(code), _UNKNOWN)
    except (TypeError, ValueError):
        return _UNKNOWN


def classify_sxid(code: int | str, fatal: bool | None = None) -> Classification:
    """Classify an NVSwitch SXid code.

    Parameters
    ----------
    code : int or str
        The SXid number.
    fatal : bool or None
        The line's own ``Fatal`` / ``Non-fatal`` marker, used for an unlisted SXid.

    Returns
    -------
    Classification
        The listed classification, else an NVLink hardware fault, ``critical`` when ``fatal``
        and ``warning`` otherwise.
    """
    try:
        c = SXID.get(int(code))
    except (TypeError, ValueError):
        c = None
    if c is not None:
        return c
    return _C(
        "nvlink", "hardware", "critical" if fatal else "warning", "NVSwitch error (unlisted SXid)"
    )


def xid_table() -> pl.DataFrame:
    """Tabulate the Xid taxonomy, for joins in attribution and for reports.

    Returns
    -------
    polars.DataFrame
        ``code``, ``component``, ``domain``, ``severity``, ``description``, one row per Xid.
    """
    rows = [
        (str(k), v.component, v.domain, v.severity, v.description) for k, v in sorted(XID.items())
    ]
    return pl.DataFrame(
        rows,
        schema={
            "code": pl.String,
            "component": schema.Component,
            "domain": pl.String,
            "severity": schema.Severity,
            "description": pl.String,
        },
        orient="row",
    )


#: Failure domains of a job attempt (the ``failure_domain`` column of
#: :func:`reliability.attribute_failures`), with what each one means.
FAILURE_DOMAINS: dict[str, str] = {
    "none": "completed, or still running / pending / being resized",
    "user": "ended by the job itself: a non-zero exit, timeout, out of memory, cancellation, "
    "or a requeue the application asked for through a RequeueExit / RequeueExitHold code",
    "admin": "requeued by an explicit command (scontrol requeue / requeuehold) with no node "
    "failing under it: not a failure of the job or of the cluster",
    "system_software": "node software: Slurm prolog / epilog failures, unkillable processes, "
    "driver and firmware faults",
    "hardware": "a node or one of its components failed under the attempt",
    "infrastructure": "a shared service (filesystem) failed",
    "preemption": "preempted by a higher-priority job",
    "unknown": "a failure with evidence on a node whose cause is not known (e.g. a health "
    "check drained the node without naming a component)",
}

_R = Classification
#: Reasons Slurm itself sets when it takes a node out of service (``Reason=`` of ``scontrol
#: show node``, ``sacctmgr show event``), as anchored case-insensitive patterns. Free-text
#: reasons written by operators are not guessed at here (the node-state readers turn the
#: signals in them, e.g. ``xid 79``, into health events). ``Not responding`` is left out on
#: purpose: it says the node stopped answering, not why.
SLURM_NODE_REASONS: tuple[tuple[str, Classification], ...] = (
    (r"^\s*prolog (error|failure)", _R("software", "software", "critical", "Slurm prolog failed on the node")),
    (r"^\s*epilog (error|failure)", _R("software", "software", "critical", "Slurm epilog failed on the node")),
    (r"^\s*kill task failed", _R("software", "software", "critical", "processes of a job could not be killed (UnkillableStepTimeout)")),
    (r"^\s*batch job complete failure", _R("software", "software", "critical", "slurmd could not complete the batch job")),
    (r"^\s*slurmdspooldir is full", _R("disk", "software", "critical", "the node's spool directory is full")),
    (r"^\s*node unexpectedly rebooted", _R("machine", "hardware", "critical", "the node rebooted under its jobs")),
    (r"^\s*low realmemory", _R("dimm", "hardware", "critical", "the node reports less memory than configured")),
    (r"^\s*low (cpus|socket)", _R("cpu", "hardware", "critical", "the node reports fewer CPUs than configured")),
    (r"^\s*gres/gpu count reported lower", _R("gpu", "hardware", "critical", "the node reports fewer GPUs than configured")),
)  # fmt: skip


def classify_slurm_reason(reason: str | None) -> Classification | None:
    """Classify a node-state reason that Slurm itself sets (``Prolog error``, ``Kill task failed``...).

    Parameters
    ----------
    reason : str or None
        A node-state reason.

    Returns
    -------
    Classification or None
        The classification, or None for any other reason (operators' free text).
    """
    if not reason:
        return None
    for pattern, c in SLURM_NODE_REASONS:
        if re.match(pattern, reason, flags=re.IGNORECASE):
            return c
    return None


#: Symptom codes for hardware signals named in a node-state reason without an Xid number
#: (``GPU ECC errors``, ``NVLink down``); see :func:`reason_signals`.
REASON_SYMPTOMS: dict[str, Classification] = {
    "ecc": _C("gpu_memory", "hardware", "critical", "GPU ECC errors named in a drain reason (type not given)"),
    "ecc_uncorrectable": _C("gpu_memory", "hardware", "critical", "uncorrectable (double-bit) GPU ECC errors named in a drain reason"),
    "ecc_correctable": _C("gpu_memory", "hardware", "warning", "correctable (single-bit) GPU ECC errors named in a drain reason"),
    "nvlink": _C("nvlink", "hardware", "critical", "NVLink fault named in a drain reason"),
}  # fmt: skip


@dataclass(frozen=True)
class ReasonSignal:
    """A hardware signal found in a node-state reason.

    The code (an Xid number such as ``79``, ``SXid20034``, or a :data:`REASON_SYMPTOMS` key), its
    classification, and the device the reason names (``gpu:1``, a PCI bus id ``0000:3b:00``), if
    any.
    """

    code: str
    classification: Classification
    device: str | None


_NOT_LETTER = r"(?<![A-Za-z])"
_XID_IN_REASON = re.compile(_NOT_LETTER + r"xid\s*[:=#]?\s*(\d{1,5})(?!\d)", re.IGNORECASE)
_SXID_IN_REASON = re.compile(_NOT_LETTER + r"sxid\s*[:=#]?\s*(\d{1,5})(?!\d)", re.IGNORECASE)
_OFF_THE_BUS = re.compile(r"\b(fell|fallen|falling|dropped)\s+off\s+the\s+bus\b", re.IGNORECASE)
_ECC = re.compile(_NOT_LETTER + r"ecc(?![A-Za-z])", re.IGNORECASE)
_ECC_UNCORRECTABLE = re.compile(
    _NOT_LETTER + r"(dbe|double[\s-]*bit|uncorrect(able|ed)|non[\s-]*correctable)(?![A-Za-z])",
    re.IGNORECASE,
)
_ECC_CORRECTABLE = re.compile(
    _NOT_LETTER + r"(sbe|single[\s-]*bit|correct(able|ed))(?![A-Za-z])", re.IGNORECASE
)
_NVLINK = re.compile(_NOT_LETTER + r"nv[\s-]?link(?![A-Za-z])", re.IGNORECASE)
_GPU_DEVICE = re.compile(_NOT_LETTER + r"gpu\s*[:#]?\s*(\d{1,3})(?!\d)", re.IGNORECASE)
_BUS_ID = re.compile(
    r"(?<![0-9A-Fa-f:])([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})(?:\.\d)?(?![0-9A-Fa-f:])"
)


def reason_signals(reason: str | None) -> list[ReasonSignal]:
    """Find the hardware signals named in a Slurm node-state reason, read conservatively.

    The reason is ``Reason=`` of ``scontrol show node``, ``sacctmgr show event`` or ``sinfo -R``.

    - ``Xid N`` / ``xid N`` / ``XID:N`` / ``<xid 79>``: the Xid, classified by :data:`XID`;
      several different Xids give several signals;
    - ``SXid N``: the NVSwitch SXid (a drain for it is treated as fatal);
    - "fell / fallen off the bus" without an Xid: Xid 79;
    - without an Xid: ``ECC`` (uncorrectable / double-bit / DBE, correctable / single-bit /
      SBE, else type not given) and ``NVLink`` give the :data:`REASON_SYMPTOMS` codes.

    The device is ``gpu:N`` when the reason names a GPU index (``gpu:1``, ``GPU 1``, ``gpu1``),
    else a PCI bus id when it names one. Other reasons (``Not responding``, ``Kill task
    failed``, free text) give no signal: see :func:`classify_slurm_reason`.

    Parameters
    ----------
    reason : str or None
        A node-state reason.

    Returns
    -------
    list of ReasonSignal
        One per signal found, in order; empty when there is none.
    """
    if not reason:
        return []
    text = str(reason)
    m = _GPU_DEVICE.search(text)
    if m:
        device: str | None = f"gpu:{int(m.group(1))}"
    else:
        b = _BUS_ID.search(text)
        device = b.group(1).lower() if b else None
    out: list[ReasonSignal] = []
    seen: set[str] = set()
    for code in _SXID_IN_REASON.findall(text):
        key = f"SXid{int(code)}"
        if key not in seen:
            seen.add(key)
            out.append(ReasonSignal(key, classify_sxid(code, fatal=True), device))
    no_sxid = _SXID_IN_REASON.sub(" ", text)
    for code in _XID_IN_REASON.findall(no_sxid):
        key = str(int(code))
        if key not in seen:
            seen.add(key)
            out.append(ReasonSignal(key, classify_xid(key), device))
    if out:
        return out
    if _OFF_THE_BUS.search(text):
        return [ReasonSignal("79", classify_xid(79), device)]
    if _ECC.search(text):
        if _ECC_UNCORRECTABLE.search(text):
            key = "ecc_uncorrectable"
        elif _ECC_CORRECTABLE.search(text):
            key = "ecc_correctable"
        else:
            key = "ecc"
        out.append(ReasonSignal(key, REASON_SYMPTOMS[key], device))
    if _NVLINK.search(text):
        out.append(ReasonSignal("nvlink", REASON_SYMPTOMS["nvlink"], device))
    return out
