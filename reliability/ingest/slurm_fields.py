"""Slurm accounting (sacct) field map: required and used fields, free-text fields, the shape
of every structured field, and sentinels. Shared by the sacct readers."""

from __future__ import annotations

import re

__all__ = [
    "CHUNK_ROWS",
    "FIELD_PATTERNS",
    "HEADER_FIRST",
    "RECOMMENDED_FORMAT",
    "REQUIRED_FIELDS",
    "TEXT_FIELDS",
    "USED_FIELDS",
]

#: Fields without which a jobs table cannot be built (sacct's default and ``--long`` formats
#: print no times at all, so they cannot say when anything failed).
REQUIRED_FIELDS = ("JobID", "State", "Submit")
#: The export we recommend (all fields the data contract uses, plus the free-text ones last).
RECOMMENDED_FORMAT = (
    "JobID,JobIDRaw,Cluster,Partition,Account,User,QOS,Priority,State,ExitCode,Submit,Start,End,"
    "Timelimit,NNodes,AllocTRES,ReqTRES,NodeList,JobName"
)
#: Fields the reader uses (others are read past; they do not reach the canonical tables).
USED_FIELDS = frozenset(
    {
        "JobID", "JobName", "User", "Account", "Partition", "QOS", "State", "ExitCode", "Submit",
        "Start", "End", "Timelimit", "TimelimitRaw", "NNodes", "AllocNodes", "AllocTRES",
        "ReqTRES", "AllocGRES", "ReqGRES", "Gres", "NodeList", "Priority", "Cluster",
    }
)  # fmt: skip
#: Free-text fields (user-controlled; may contain ``|`` or newlines), most likely first.
TEXT_FIELDS = (
    "JobName", "SubmitLine", "Comment", "AdminComment", "SystemComment", "Constraints",
    "WorkDir", "Extra", "Container", "MCSLabel", "StdOut", "StdErr", "StdIn", "FailedNode",
)  # fmt: skip

_TIME = r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d|\d+|Unknown|None|)"
_DUR = r"((\d+-)?(\d+:)?\d+:\d+(\.\d+)?|UNLIMITED|Partition_Limit|INVALID|)"
_COUNT = r"(\d*|UNLIMITED|Partition_Limit|INVALID)"
_IDENT = r"[\w\-.$@]*"
_TRES = r"[\w/:=,.\-]*"
_MEM = r"([\d.]+[KMGTPkmgtp]?[cn]?|)"
#: Shape of each structured field; used to choose among repairs of delimiter collisions.
FIELD_PATTERNS: dict[str, re.Pattern[str]] = {
    name: re.compile(p)
    for name, p in {
        "JobID": r"\d+(_(\d+|\[[^\]|]*\]))?(\+\d+)?(\.[\w-]+)?",
        "JobIDRaw": r"\d+(\+\d+)?(\.[\w-]+)?",
        "User": _IDENT, "Group": _IDENT, "UID": r"\d*", "GID": r"\d*",
        "Account": _IDENT, "Partition": r"[\w\-.,]*", "QOS": r"[\w\-.,]*", "QOSRAW": r"\d*",
        "State": r"([A-Z_]+( by -?\d+)?\+?)?",
        "ExitCode": r"(-?\d+:-?\d+)?", "DerivedExitCode": r"(-?\d+:-?\d+)?",
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
STATE_SUFFIX = r"( by -?\d+)?\+?$"
DURATION = r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)(?:\.\d+)?$"
NO_LIMIT = ("UNLIMITED", "Partition_Limit", "INVALID")
ISO_FMT = "%Y-%m-%dT%H:%M:%S"
TIMES = ("submit", "start", "end")
#: Records parsed per slice (bounds the temporary memory of a large export).
CHUNK_ROWS = 100_000
