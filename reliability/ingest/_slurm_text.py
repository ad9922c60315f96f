"""Recognise which Slurm text output a file holds.

So that a reader given the wrong one refuses it with what the file is and what to export or
which reader to use instead.

Recognised from the first lines: YAML and JSON output, ``sacctmgr show event`` (parsable and
fixed-width), ``scontrol show node`` / ``show job``, ``sinfo -R``, ``sinfo -N -l``, plain
``sinfo``, ``squeue``, ``sacct`` (parsable and fixed-width).
"""

from __future__ import annotations

import re

from reliability.ingest.sacct.fields import SACCTMGR_EVENTS_COMMAND

__all__ = [
    "NODE_INPUT_FORMS",
    "SACCTMGR_EVENTS_COMMAND",
    "identify",
    "refusal",
]

#: What the node-state readers accept, for refusals.
NODE_INPUT_FORMS = (
    "accepted node-state inputs: history (`reliability ingest events`): "
    f"`{SACCTMGR_EVENTS_COMMAND}`; snapshots (`reliability ingest nodes`): `scontrol show node` "
    "or `scontrol show node --oneliner`, `sinfo -R`, or `sinfo -R -o '%E|%U|%H|%N|%T'` "
    "(adds the exact state)"
)

_DASHES = re.compile(r"^[\s-]+$")


def _first_lines(head: str, n: int = 3) -> list[str]:
    return [ln.rstrip("\r") for ln in head.splitlines() if ln.strip()][:n]


def identify(head: str) -> str | None:
    """Tell which Slurm output the start of a file looks like.

    Parameters
    ----------
    head : str
        The start of a file, decoded (the first 64 KiB is plenty).

    Returns
    -------
    str or None
        One of ``yaml``, ``json``, ``sacctmgr_event``, ``sacctmgr_event_fixed``,
        ``sacctmgr_other``, ``sacctmgr_other_parsable``, ``scontrol_node``, ``scontrol_job``,
        ``sinfo_reasons``, ``sinfo_nodes_long``, ``sinfo_summary``, ``squeue``, ``sacct``,
        ``sacct_fixed``; None when the text is empty or none of these.
    """
    lines = _first_lines(head)
    if not lines:
        return None
    first = lines[0].strip()
    if first.startswith(("{", "[")):
        return "json"
    if first == "---" or re.match(r"^(meta|nodes|jobs|errors|warnings|events|sinfo):\s*$", first):
        return "yaml"
    if "NodeName=" in head:
        return "scontrol_node"
    if re.search(r"^\s*JobId=\d", head, re.MULTILINE):
        return "scontrol_job"
    # sinfo -N -l prints a date line first
    cols = [
        ln.upper()
        for ln in lines
        if not re.match(r"^[A-Z][a-z]{2} [A-Z][a-z]{2} +\d+ \d\d:\d\d:\d\d \d{4}$", ln.strip())
    ]
    header = cols[0] if cols else ""
    if "|" in header:
        fields = {f.strip() for f in header.split("|")}
        if "TIMESTART" in fields and fields & {
            "NODENAME",
            "STATE",
            "REASON",
            "CLUSTER NODES",
            "EVENT",
        }:
            return "sacctmgr_event"
        if "JOBID" in fields or "JOBIDRAW" in fields:
            return "sacct"
        if "SINFO" not in fields and "REASON" not in fields:
            return "sacctmgr_other_parsable"
    names = set(re.split(r"[\s|]+", header.strip()))
    reasons = {"REASON", "NODELIST"} <= names and bool(names & {"TIMESTAMP", "USER"})
    if reasons and not names & {"PARTITION", "NODES"}:
        return "sinfo_reasons"
    if {"NODELIST", "NODES", "PARTITION", "STATE"} <= names:
        return "sinfo_nodes_long" if "REASON" in names or "CPUS" in names else "sinfo_summary"
    if {"PARTITION", "AVAIL", "NODELIST"} <= names:
        return "sinfo_summary"
    if {"JOBID", "PARTITION", "ST"} <= names or {"JOBID", "PARTITION", "STATE", "NAME"} <= names:
        return "squeue"
    second = lines[1] if len(lines) > 1 else ""
    if _DASHES.match(second) and "-" in second:
        if "TIMESTART" in names:
            return "sacctmgr_event_fixed"
        if "JOBID" in names:
            return "sacct_fixed"
        return "sacctmgr_other"
    return None


_WHAT = {
    "yaml": "YAML output",
    "json": "JSON output",
    "sacctmgr_event": "`sacctmgr --parsable2 show event` output",
    "sacctmgr_event_fixed": "sacctmgr's fixed-width `show event` table",
    "sacctmgr_other": "a fixed-width sacctmgr or sacct table",
    "sacctmgr_other_parsable": "a `|`-separated table other than `sacctmgr show event`",
    "scontrol_node": "`scontrol show node` output",
    "scontrol_job": "`scontrol show job` output (jobs, not nodes)",
    "sinfo_reasons": "`sinfo -R` output",
    "sinfo_nodes_long": "`sinfo -N -l` output (a node-per-partition listing)",
    "sinfo_summary": "plain `sinfo` output (a partition summary)",
    "squeue": "`squeue` output (the job queue)",
    "sacct": "`sacct --parsable2` output",
    "sacct_fixed": "sacct's fixed-width table",
}
_WHY = {
    "yaml": "YAML is not read",
    "json": "JSON node/event output is not read",
    "sacctmgr_event_fixed": "columns are cut to their width (long reasons end in '+') and "
    "cannot be split reliably: use --parsable2",
    "sacctmgr_other": "fixed-width tables cut values to their column width: use --parsable2",
    "sacctmgr_other_parsable": "it has no TimeStart and NodeName/State/Reason fields",
    "scontrol_job": "it holds jobs, not node states",
    "sinfo_nodes_long": "it has no reason time and cuts reasons to 20 characters",
    "sinfo_summary": "it has no reasons and no times",
    "squeue": "it holds jobs, not node states",
    "sacct_fixed": "it holds jobs (and cuts values to their column width)",
}
#: the reader (CLI kind) for the formats that are read
_KIND = {
    "sacctmgr_event": "events",
    "scontrol_node": "nodes",
    "sinfo_reasons": "nodes",
    "sacct": "slurm",
}


def refusal(fmt: str | None, kind: str) -> str:
    """Word the refusal of a reader given the wrong Slurm output.

    Parameters
    ----------
    fmt : str or None
        What :func:`identify` said the file holds (None: unknown).
    kind : str
        The reader's CLI kind: ``events`` or ``nodes``.

    Returns
    -------
    str
        What the file is and which reader or export command to use instead.
    """
    if fmt is None:
        return f"unknown format for `reliability ingest {kind}`; {NODE_INPUT_FORMS}"
    what = _WHAT.get(fmt, fmt)
    right = _KIND.get(fmt)
    if right is not None and right != kind:
        return f"this is {what}: ingest it with `reliability ingest {right}`"
    why = _WHY.get(fmt, "not a format this reader reads")
    if fmt == "sacct_fixed":
        return f"this is {what}: {why}; export it with --parsable2 and ingest it as `slurm`"
    return f"this is {what}: {why}; {NODE_INPUT_FORMS}"
