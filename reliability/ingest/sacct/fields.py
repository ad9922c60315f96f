"""Slurm accounting (sacct) field map, shared by the sacct readers.

Required and used fields, free-text fields, the shape of every structured field, sentinels,
and the one export command every message, the README, the template pipeline and
``reliability collect`` quote.
"""

from __future__ import annotations

import re

__all__ = [
    "EXPORT_FIELDS",
    "FIELD_PATTERNS",
    "HEADER_FIRST",
    "READ_FIELDS",
    "RECOMMENDED_FORMAT",
    "REQUIRED_FIELDS",
    "SACCTMGR_EVENTS_COMMAND",
    "SACCTMGR_EVENTS_FORMAT",
    "SACCT_EXPORT_COMMAND",
    "SACCT_FIELDS",
    "SACCT_SPELLING",
    "TEXT_FIELDS",
    "USED_FIELDS",
    "copy_of",
    "read_column",
    "sacct_export_args",
    "sacct_jobs_args",
    "sacctmgr_events_args",
]

#: Fields without which a jobs table cannot be built (sacct's default and ``--long`` formats
#: print no times at all, so they cannot say when anything failed).
REQUIRED_FIELDS = ("JobID", "State", "Submit")
#: The fields of the export we recommend: every field the data contract uses. JobName, the
#: only free-text field, comes right after JobID: a newline or ``|`` inside a name then leaves
#: a short first line and a short last line that the reader rejoins and checks, and a name
#: that holds a forged line can at most relabel its own job's record (every other field of
#: the last line is Slurm's).
EXPORT_FIELDS = (
    "JobID", "JobName", "JobIDRaw", "Cluster", "Partition", "Account", "User", "QOS",
    "Priority", "State", "ExitCode", "Submit", "Start", "End", "Timelimit", "NNodes",
    "AllocTRES", "ReqTRES", "NodeList",
)  # fmt: skip
RECOMMENDED_FORMAT = ",".join(EXPORT_FIELDS)
#: The complete export, as every message and document prints it: all users, every attempt of
#: a requeued job (``--duplicates``), an explicit window, and the full field list. Times as
#: epoch seconds (``SLURM_TIME_FORMAT=%s``) need no time zone; without it, pass the zone
#: sacct printed local times in.
SACCT_EXPORT_COMMAND = (
    "SLURM_TIME_FORMAT=%s sacct --allusers --duplicates --parsable2 "
    "--starttime 2025-01-01T00:00:00 --endtime 2025-12-01T00:00:00 "
    f"--format={RECOMMENDED_FORMAT}"
)
#: The fields of the matching node-state export (``sacctmgr show event``).
SACCTMGR_EVENTS_FORMAT = "Cluster,NodeName,TimeStart,TimeEnd,State,Reason,User"
#: The matching ``sacctmgr`` export (Start= is needed: without it sacctmgr prints only the
#: events since midnight of the previous day).
SACCTMGR_EVENTS_COMMAND = (
    "sacctmgr --parsable2 show event Start=2025-01-01T00:00:00 End=2025-12-01T00:00:00 "
    f"Format={SACCTMGR_EVENTS_FORMAT}"
)


def sacct_export_args(start: str, end: str) -> list[str]:
    """Build the ``sacct`` arguments of :data:`SACCT_EXPORT_COMMAND` for a window.

    Run them with ``SLURM_TIME_FORMAT=%s``.

    Parameters
    ----------
    start, end : str
        The window [start, end) in sacct's time syntax, e.g. ``2025-01-01T00:00:00``.

    Returns
    -------
    list of str
        The argument vector, ``sacct`` first.
    """
    return [
        "sacct",
        "--allusers",
        "--duplicates",
        "--parsable2",
        "--starttime",
        start,
        "--endtime",
        end,
        f"--format={RECOMMENDED_FORMAT}",
    ]


def sacct_jobs_args(job_ids: list[str]) -> list[str]:
    """Build the ``sacct`` arguments that export every record of the given jobs, at any time.

    With ``--jobs`` and no window, sacct lists every record of those jobs, including a pending
    rerun whose ``BeginTime`` lies after the window a time-windowed export asked for (which that
    export leaves out) and a held rerun cancelled before it became eligible. Run them with
    ``SLURM_TIME_FORMAT=%s``.

    Parameters
    ----------
    job_ids : list of str
        Job ids as sacct prints them (``123``, ``123_4``).

    Returns
    -------
    list of str
        The argument vector, ``sacct`` first.
    """
    return [
        "sacct",
        "--allusers",
        "--duplicates",
        "--parsable2",
        f"--jobs={','.join(job_ids)}",
        f"--format={RECOMMENDED_FORMAT}",
    ]


def sacctmgr_events_args(start: str, end: str) -> list[str]:
    """Build the ``sacctmgr`` arguments of :data:`SACCTMGR_EVENTS_COMMAND` for a window.

    Parameters
    ----------
    start, end : str
        The window [start, end) in Slurm's time syntax, e.g. ``2025-01-01T00:00:00``.

    Returns
    -------
    list of str
        The argument vector, ``sacctmgr`` first.
    """
    return [
        "sacctmgr",
        "--parsable2",
        "show",
        "event",
        f"Start={start}",
        f"End={end}",
        f"Format={SACCTMGR_EVENTS_FORMAT}",
    ]


#: Every field name sacct can print (``sacct --helpformat``, Slurm 14 to 25; compared
#: case-insensitively). A header line in the middle of a file must use only these.
_SACCT_FIELD_NAMES = (
    "Account AdminComment AllocCPUS AllocGRES AllocNodes AllocTRES AssocID AveCPU "
    "AveCPUFreq AveDiskRead AveDiskWrite AvePages AveRSS AveVMSize BlockID Cluster Comment "
    "Constraints ConsumedEnergy ConsumedEnergyRaw Container CPUTime CPUTimeRAW DBIndex "
    "DerivedExitCode Elapsed ElapsedRaw Eligible End ExitCode Extra FailedNode Flags GID "
    "Group JobID JobIDRaw JobName Layout Licenses MaxDiskRead MaxDiskReadNode "
    "MaxDiskReadTask MaxDiskWrite MaxDiskWriteNode MaxDiskWriteTask MaxPages MaxPagesNode "
    "MaxPagesTask MaxRSS MaxRSSNode MaxRSSTask MaxVMSize MaxVMSizeNode MaxVMSizeTask "
    "McsLabel MinCPU MinCPUNode MinCPUTask NCPUS NNodes NodeList NTasks Partition Planned "
    "PlannedCPU PlannedCPURAW Priority QOS QOSRAW QOSREQ Reason ReqCPUFreq ReqCPUFreqGov "
    "ReqCPUFreqMax ReqCPUFreqMin ReqCPUS ReqGRES ReqMem ReqNodes ReqTRES Reservation "
    "ReservationId Reserved ResvCPU ResvCPURAW Restarts SegmentSize SLUID Start State "
    "StdErr StdIn StdOut Submit SubmitLine Suspended SystemComment SystemCPU Timelimit "
    "TimelimitRaw TotalCPU TRESUsageInAve TRESUsageInMax TRESUsageInMaxNode "
    "TRESUsageInMaxTask TRESUsageInMin TRESUsageInMinNode TRESUsageInMinTask "
    "TRESUsageInTot TRESUsageOutAve TRESUsageOutMax TRESUsageOutMaxNode "
    "TRESUsageOutMaxTask TRESUsageOutMin TRESUsageOutMinNode TRESUsageOutMinTask "
    "TRESUsageOutTot UID User UserCPU WCKey WCKeyID WorkDir"
)
SACCT_FIELDS = frozenset(f.lower() for f in _SACCT_FIELD_NAMES.split())
#: sacct's spelling of each field, by its lower-case name (sacct takes --format names in any case)
SACCT_SPELLING = {f.lower(): f for f in _SACCT_FIELD_NAMES.split()}
#: Fields the reader uses (others are read past; they do not reach the canonical tables).
USED_FIELDS = frozenset(
    {
        "JobID", "JobName", "User", "Account", "Partition", "QOS", "State", "ExitCode", "Submit",
        "Start", "End", "Timelimit", "TimelimitRaw", "NNodes", "AllocNodes", "AllocTRES",
        "ReqTRES", "AllocGRES", "ReqGRES", "Gres", "NodeList", "Priority", "Cluster",
    }
)  # fmt: skip
#: Fields read when present: the used ones, and those only checked (a DerivedExitCode that is
#: no ``code:signal`` quarantines its record; the contract has no column for it).
READ_FIELDS = USED_FIELDS | {"DerivedExitCode"}


def copy_of(name: str) -> str | None:
    """Return the field a header column repeats (``State_2`` -> ``State``), or None.

    sacct prints a field once per mention in ``--format``. Only fields the reader reads and
    that are not free text count: their copies are read and compared (a record whose copies
    differ is quarantined).

    Parameters
    ----------
    name : str
        A column name of the layout (copies numbered by :func:`parse_header`).

    Returns
    -------
    str or None
        The repeated field.
    """
    base, _, n = name.rpartition("_")
    if n.isdigit() and n.isascii() and base in READ_FIELDS and base not in TEXT_FIELDS:
        return base
    return None


def read_column(name: str) -> bool:
    """Tell whether the reader reads a header column (a field it uses, or a copy of one).

    Parameters
    ----------
    name : str
        A column name of the layout.

    Returns
    -------
    bool
        True if the column is read.
    """
    return name in READ_FIELDS or copy_of(name) is not None


#: Free-text fields (user-controlled; may contain ``|`` or newlines), most likely first.
TEXT_FIELDS = (
    "JobName", "SubmitLine", "Comment", "AdminComment", "SystemComment", "Constraints",
    "WorkDir", "Extra", "Container", "MCSLabel", "StdOut", "StdErr", "StdIn", "FailedNode",
)  # fmt: skip

_TIME = r"([0-9]{4}-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]|[0-9]+|Unknown|None|)"
_DUR = r"(([0-9]+-)?([0-9]+:)?[0-9]+:[0-9]+(\.[0-9]+)?|UNLIMITED|Partition_Limit|INVALID|)"
_COUNT = r"([0-9]*|UNLIMITED|Partition_Limit|INVALID)"
_IDENT = r"[\w\-.$@]*"
_TRES = r"[\w/:=,.\-]*"
_MEM = r"([0-9.]+[KMGTPkmgtp]?[cn]?|)"
#: Shape of each structured field; used to choose among repairs of delimiter collisions.
FIELD_PATTERNS: dict[str, re.Pattern[str]] = {
    name: re.compile(p)
    for name, p in {
        "JobID": r"[0-9]+(_([0-9]+|\[[^\]|]*\]))?(\+[0-9]+)?(\.[A-Za-z0-9_-]+)?",
        "JobIDRaw": r"[0-9]+(\+[0-9]+)?(\.[A-Za-z0-9_-]+)?",
        "User": _IDENT, "Group": _IDENT, "UID": r"[0-9]*", "GID": r"[0-9]*",
        "Account": _IDENT, "Partition": r"[\w\-.,]*", "QOS": r"[\w\-.,]*", "QOSRAW": r"[0-9]*",
        "State": r"([A-Z_]+( by -?[0-9]+)?\+?)?",
        "ExitCode": r"(-?[0-9]+:-?[0-9]+)?", "DerivedExitCode": r"(-?[0-9]+:-?[0-9]+)?",
        "Submit": _TIME, "Eligible": _TIME, "Start": _TIME, "End": _TIME,
        "Elapsed": _DUR, "Suspended": _DUR, "Timelimit": _DUR, "TotalCPU": _DUR,
        "UserCPU": _DUR, "SystemCPU": _DUR, "CPUTime": _DUR, "AveCPU": _DUR, "MinCPU": _DUR,
        "ElapsedRaw": _COUNT, "TimelimitRaw": _COUNT, "CPUTimeRAW": _COUNT, "NNodes": _COUNT,
        "NCPUS": _COUNT, "AllocCPUS": _COUNT, "ReqCPUS": _COUNT, "NTasks": _COUNT,
        "AllocNodes": _COUNT, "ReqNodes": _COUNT, "Priority": _COUNT, "DBIndex": _COUNT,
        "ReservationId": _COUNT,
        "NodeList": r"([\w\-.\[\],]*|None assigned)",
        "AllocTRES": _TRES, "ReqTRES": _TRES, "TRESUsageInTot": _TRES, "TRESUsageInMax": _TRES,
        "TRESUsageOutTot": _TRES, "ReqMem": _MEM, "MaxRSS": _MEM, "AveRSS": _MEM,
        "MaxVMSize": _MEM, "Cluster": _IDENT, "Flags": r"[\w,]*", "Layout": r"[\w\-]*",
        "MaxRSSNode": r"[\w\-.]*", "Reservation": r"[\w\-.]*", "WCKey": r"\*?[\w\-.]*",
        "WorkDir": r"(/.*)?",
    }.items()
}  # fmt: skip

HEADER_FIRST = re.compile(r"(?i)^jobid(raw)?$")
DURATION = r"^(?:([0-9]+)-)?(?:([0-9]+):)?([0-9]+):([0-9]+)(?:\.[0-9]+)?$"
NO_LIMIT = ("UNLIMITED", "Partition_Limit", "INVALID")
ISO_FMT = "%Y-%m-%dT%H:%M:%S"
