"""Readers of Slurm node-state history -> ``node_states`` intervals.

- ``sacctmgr --parsable2 show event``: the history (DOWN / DRAIN / FAIL intervals with reasons).
- ``scontrol show node`` (multi-line or ``--oneliner``): a snapshot; each node whose state
  flags include DOWN / DRAIN / FAIL / MAINT gives an open interval starting at its reason time.
- ``sinfo -R``: a snapshot of the reasons of unavailable nodes.

State flag sets such as ``IDLE+DRAIN`` or ``DOWN*+DRAIN`` are reduced to the most severe
out-of-service state, in the order DOWN > FAIL > DRAIN > MAINT.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from reliability import schema
from reliability.errors import IngestError
from reliability.ingest import hostlist
from reliability.ingest._common import ReadResult, quarantine_frame, read_lines
from reliability.ingest._delimited import split_delimited

__all__ = ["read_sacctmgr_events", "read_scontrol_nodes", "read_sinfo_reasons", "reduce_state"]

#: Slurm state flags -> canonical node state, most severe first.
STATE_PRECEDENCE = (
    ("DOWN", "DOWN"),
    ("FAIL", "FAIL"),
    ("FAILING", "FAIL"),
    ("DRAIN", "DRAIN"),
    ("DRAINED", "DRAIN"),
    ("DRAINING", "DRAIN"),
    ("MAINT", "MAINT"),
    ("REBOOT_REQUESTED", "MAINT"),
    ("REBOOT_ISSUED", "MAINT"),
)
_IN_SERVICE = frozenset(
    {"IDLE", "ALLOCATED", "ALLOC", "MIXED", "MIX", "COMPLETING", "COMP", "RESERVED", "RESV",
     "PLANNED", "POWERED_DOWN", "POWER_DOWN", "POWERING_UP", "POWERING_DOWN", "CLOUD",
     "FUTURE", "NOT_RESPONDING", "PERFCTRS", "UNKNOWN", "POWER", "IDLE~", "DYNAMIC_NORM"}
)  # fmt: skip
_TIME_FMT = "%Y-%m-%dT%H:%M:%S"
_EVENT_TEXT = ("Reason",)
_EVENT_PATTERNS = {
    n: re.compile(p)
    for n, p in {
        "Cluster": r"[\w\-.]*",
        "NodeName": r"[\w\-.\[\],]*",
        "ClusterNodes": r"[\w\-.\[\],]*",
        "Cluster Nodes": r"[\w\-.\[\],]*",
        "TimeStart": r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d|\d+|Unknown)",
        "TimeEnd": r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d|\d+|Unknown|)",
        "State": r"[A-Z_*~#!%$@^+-]*",
        "StateRaw": r"\d*",
        "Event": r"(Cluster|Node|)",
        "EventRaw": r"\d*",
        "Duration": r"((\d+-)?(\d+:)?\d+:\d+|)",
        "User": r"([\w\-.$]+\(\d+\)|[\w\-.$]*)",
        "TRES": r"[\w/:=,.\-]*",
    }.items()
}


def reduce_state(flags: str) -> str | None:
    """Most severe out-of-service state in a Slurm state string (``IDLE+DRAIN`` -> DRAIN).

    Returns None for in-service states (IDLE, MIXED, ...); raises ValueError for unknown flags.
    """
    parts = [p.strip("*~#!%$@^-").upper() for p in flags.split("+") if p.strip()]
    if not parts:
        raise ValueError("empty state")
    found = {canon for flag, canon in STATE_PRECEDENCE if flag in parts}
    for _, canon in STATE_PRECEDENCE:
        if canon in found:
            return canon
    unknown = [p for p in parts if p not in _IN_SERVICE]
    if unknown:
        raise ValueError(f"unknown node state flag {unknown[0]!r}")
    return None


def _user(u: str | None) -> str | None:
    if u is None or u.strip() == "":
        return None
    return re.sub(r"\(\d+\)$", "", u.strip())


def _to_utc(values: list[str | None], tz: str | None, src: str, field: str) -> list[object]:
    """Parse local ISO or epoch strings to UTC; None for sentinels. Raises if tz is needed."""
    s = pl.Series(
        "t", [None if v in (None, "", "Unknown", "None") else v for v in values], dtype=pl.String
    )
    iso = s.str.to_datetime(_TIME_FMT, strict=False, time_unit="us")
    if iso.is_not_null().any() and tz is None:
        raise IngestError(src, "Slurm prints local times without a zone: pass tz=", field=field)
    epoch = pl.Series([int(v) if v and v.isdigit() else None for v in s], dtype=pl.Int64)
    epoch_t = pl.from_epoch(epoch, time_unit="s").dt.replace_time_zone("UTC")
    if tz is not None:
        iso = iso.dt.replace_time_zone(tz, ambiguous="earliest", non_existent="null")
        iso = iso.dt.convert_time_zone("UTC")
        out = epoch_t.cast(schema.UTC_TIME).fill_null(iso.cast(schema.UTC_TIME))
    else:
        out = epoch_t.cast(schema.UTC_TIME)
    return out.to_list()


class _Builder:
    """Accumulates node_states rows and quarantine rows for one input."""

    def __init__(self, src: str) -> None:
        self.src = src
        self.rows: list[dict[str, object]] = []
        self.q: tuple[list[int], list[str], list[str]] = ([], [], [])
        self.read = 0

    def bad(self, line_no: int, raw: str, reason: str) -> None:
        self.q[0].append(line_no)
        self.q[1].append(raw)
        self.q[2].append(reason)

    def result(self, notes: list[str]) -> ReadResult:
        frame = pl.DataFrame(self.rows, schema=schema.TABLES["node_states"].schema, orient="row")
        q = quarantine_frame(self.src, *self.q)
        return ReadResult(
            self.src, {"node_states": frame}, q, self.read, self.read - q.height, notes
        )


def read_sacctmgr_events(
    path: str | Path, *, cluster: str | None = None, tz: str | None = None
) -> ReadResult:
    """Read ``sacctmgr --parsable2 show event`` output into ``node_states`` intervals.

    Parameters
    ----------
    path : the export, with its header line (any subset/order of the event fields)
    cluster : used where the export has no Cluster field
    tz : IANA zone of the printed times (sacctmgr prints local time without a zone)

    Cluster-level events (no node name, e.g. "Cluster Registered TRES") are read and kept but
    produce no interval; the notes say how many. An open event (TimeEnd ``Unknown``) gives
    ``end = null``.
    """
    src = str(path)
    lines, notes = read_lines(path)
    data = lines.filter(pl.col("line").str.strip_chars() != "")
    if data.height == 0:
        raise IngestError(src, "empty file (sacctmgr prints a header line even with no events)")
    header_no, header = data.row(0)
    names = header.split("|")
    if names[-1] == "":
        names, trailing = names[:-1], True
    else:
        trailing = False
    for req in ("TimeStart",):
        if req not in names:
            raise IngestError(
                src, "not a sacctmgr show event header: missing field", line=header_no, field=req
            )
    b = _Builder(src)
    body = data.slice(1)
    split = split_delimited(
        body, names, trailing=trailing, text_fields=_EVENT_TEXT, patterns=_EVENT_PATTERNS
    )
    for no, raw, reason in zip(split.bad_line_no, split.bad_raw, split.bad_reason, strict=True):
        b.bad(no, raw, reason)
    b.read = len(split.bad_line_no) + split.records.height
    recs = split.records
    get = lambda n: recs.get_column(n).to_list() if n in recs.columns else [None] * recs.height  # noqa: E731
    starts = _to_utc(get("TimeStart"), tz, src, "TimeStart")
    ends = _to_utc(get("TimeEnd"), tz, src, "TimeEnd")
    cluster_events = 0
    for i, (no, raw) in enumerate(zip(get("line_no"), get("line"), strict=True)):
        node_expr = (get("NodeName")[i] or "").strip()
        clus = (get("Cluster")[i] or "").strip() or cluster
        if not node_expr:
            cluster_events += 1
            continue
        if clus is None:
            raise IngestError(src, "no Cluster field: pass cluster=", line=no, field="Cluster")
        try:
            state = reduce_state(get("State")[i] or "")
        except ValueError as exc:
            b.bad(no, raw, f"field State: {exc}")
            continue
        if state is None:
            b.bad(no, raw, f"field State: {get('State')[i]!r} is not an out-of-service state")
            continue
        if starts[i] is None:
            b.bad(no, raw, f"field TimeStart: cannot read time {get('TimeStart')[i]!r}")
            continue
        end_raw = get("TimeEnd")[i]
        if end_raw not in (None, "", "Unknown") and ends[i] is None:
            b.bad(no, raw, f"field TimeEnd: cannot read time {end_raw!r}")
            continue
        if ends[i] is not None and ends[i] < starts[i]:
            b.bad(no, raw, "TimeEnd is before TimeStart (impossible order; not fixed)")
            continue
        try:
            nodes = hostlist.expand(node_expr)
        except hostlist.HostlistError as exc:
            b.bad(no, raw, f"field NodeName: {exc}")
            continue
        reason = get("Reason")[i]
        for node in nodes:
            b.rows.append(
                {
                    "cluster": clus,
                    "node": node,
                    "state": state,
                    "start": starts[i],
                    "end": ends[i],
                    "reason": reason or None,
                    "user": _user(get("User")[i]),
                }
            )
    if cluster_events:
        notes.append(f"{cluster_events} cluster-level event(s) (no node name): kept, no interval")
    return b.result(notes)


_REASON = re.compile(
    r"Reason=(?P<reason>.*?)(?:\s*\[(?P<user>[^@\]\s]+)@(?P<time>[^\]\s]+)\])?\s*$"
)


def read_scontrol_nodes(path: str | Path, *, cluster: str, tz: str | None = None) -> ReadResult:
    """Read ``scontrol show node`` (multi-line or ``--oneliner``) into open ``node_states``.

    A record per ``NodeName=``. Nodes whose ``State=`` flags hold DOWN / DRAIN / FAIL / MAINT
    give one interval starting at the time in ``Reason=... [user@time]`` and still open
    (``end`` null). In-service nodes are kept (counted) and give no interval. Lines before
    the first ``NodeName=`` (e.g. a shell prompt) are not records; the notes say how many.
    """
    src = str(path)
    lines, notes = read_lines(path)
    if lines.height == 0:
        raise IngestError(src, "empty file")
    recs: list[tuple[int, list[str]]] = []
    preamble = 0
    for no, line in lines.iter_rows():
        if line.lstrip().startswith("NodeName="):
            recs.append((no, [line]))
        elif recs:
            if line.strip():
                recs[-1][1].append(line)
        elif line.strip():
            preamble += 1
    if not recs:
        raise IngestError(src, "no 'NodeName=' record: not scontrol show node output", line=1)
    if preamble:
        notes.append(f"{preamble} line(s) before the first NodeName= record ignored")
    b = _Builder(src)
    b.read = len(recs)
    healthy = 0
    times: list[str | None] = []
    parsed: list[tuple[int, str, str, str | None, str | None, str | None]] = []
    for no, rec_lines in recs:
        raw = "\n".join(rec_lines)
        node_m = re.search(r"NodeName=(\S+)", raw)
        state_m = re.search(r"\bState=(\S+)", raw)
        if node_m is None or state_m is None:
            b.bad(no, raw, "record has no State= field")
            continue
        try:
            state = reduce_state(state_m.group(1))
        except ValueError as exc:
            b.bad(no, raw, f"field State: {exc}")
            continue
        if state is None:
            healthy += 1
            continue
        reason = user = when = None
        for line in rec_lines:
            m = _REASON.search(line)
            if m and "Reason=" in line:
                reason, user, when = (
                    m.group("reason").strip() or None,
                    m.group("user"),
                    m.group("time"),
                )
        if when is None:
            b.bad(no, raw, f"node is {state} but Reason= has no [user@time]: start time unknown")
            continue
        times.append(when)
        parsed.append((no, raw, node_m.group(1), state, reason, user))
    starts = _to_utc(times, tz, src, "Reason")
    for (no, raw, node, state, reason, user), start, t in zip(parsed, starts, times, strict=True):
        if start is None:
            b.bad(no, raw, f"field Reason: cannot read time {t!r}")
            continue
        b.rows.append(
            {
                "cluster": cluster,
                "node": node,
                "state": state,
                "start": start,
                "end": None,
                "reason": reason,
                "user": user,
            }
        )
    if healthy:
        notes.append(f"{healthy} node(s) in service: kept, no interval")
    return b.result(notes)


_SINFO_ROW = re.compile(
    r"^(?P<reason>.*?)\s+(?P<user>\S+)\s+(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d|Unknown)"
    r"\s+(?P<nodes>\S+)(?:\s+(?P<state>[A-Za-z_*~#!%$@^+-]+))?\s*$"
)


def read_sinfo_reasons(path: str | Path, *, cluster: str, tz: str | None = None) -> ReadResult:
    """Read ``sinfo -R`` (REASON USER TIMESTAMP NODELIST [STATE]) into open ``node_states``.

    Plain ``sinfo -R`` has no state column; those nodes are recorded as DRAIN and the notes
    say so (``sinfo -R -o "%E %U %H %N %T"`` adds the exact state). The reason column is
    truncated to 20 characters by sinfo's default format.
    """
    src = str(path)
    lines, notes = read_lines(path)
    if lines.height == 0:
        raise IngestError(src, "empty file")
    b = _Builder(src)
    header_seen = False
    assumed = 0
    pending: list[tuple[int, str, str, str, str, str | None, str]] = []
    for no, line in lines.iter_rows():
        if not line.strip():
            continue
        if not header_seen and "REASON" in line and "NODELIST" in line:
            header_seen = True
            continue
        if not header_seen:
            raise IngestError(src, "no 'REASON ... NODELIST' header: not sinfo -R output", line=no)
        b.read += 1
        m = _SINFO_ROW.match(line)
        if m is None:
            b.bad(no, line, "not a sinfo -R row (REASON USER TIMESTAMP NODELIST)")
            continue
        pending.append(
            (
                no,
                line,
                m.group("reason").strip(),
                m.group("user"),
                m.group("nodes"),
                m.group("state"),
                m.group("time"),
            )
        )
    starts = _to_utc([p[6] for p in pending], tz, src, "TIMESTAMP")
    for (no, line, reason, user, nodes_expr, state_s, _), start in zip(
        pending, starts, strict=True
    ):
        if start is None:
            b.bad(no, line, "field TIMESTAMP: unknown or unreadable time")
            continue
        try:
            state = reduce_state(state_s) if state_s else "DRAIN"
            nodes = hostlist.expand(nodes_expr)
        except (ValueError, hostlist.HostlistError) as exc:
            b.bad(no, line, str(exc))
            continue
        if state is None:
            b.bad(no, line, f"field STATE: {state_s!r} is not an out-of-service state")
            continue
        assumed += state_s is None
        for node in nodes:
            b.rows.append(
                {
                    "cluster": cluster,
                    "node": node,
                    "state": state,
                    "start": start,
                    "end": None,
                    "reason": reason or None,
                    "user": _user(user),
                }
            )
    if assumed:
        notes.append(f"{assumed} row(s) without a STATE column recorded as DRAIN")
    return b.result(notes)
