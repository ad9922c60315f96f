"""Reader of Slurm's node-state history, ``sacctmgr --parsable2 show event`` -> ``node_states``.

The history of DOWN / DRAIN / FAIL intervals with their reasons (and a ``health_events`` row
per hardware signal a reason names: :mod:`reliability.ingest._node_states`). Other Slurm
outputs are refused with what the file is and what to export instead.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from reliability import hostlist
from reliability.errors import Hint, Hinted, IngestError
from reliability.ingest._common import ReadResult, check_name_option, check_zone, read_lines
from reliability.ingest._delimited import split_delimited
from reliability.ingest._node_states import _Builder, _expand, _to_utc, _user, reduce_state
from reliability.ingest._slurm_text import _WHAT, identify, refusal
from reliability.ingest._spec import CLUSTER, TZ, FileHead, ReaderSample, ReaderSpec

__all__ = ["SPEC", "read_sacctmgr_events"]


def _is_events(head: FileHead) -> str | None:
    return _WHAT["sacctmgr_event"] if head.slurm_format == "sacctmgr_event" else None


SPEC = ReaderSpec(
    kind="events",
    summary="sacctmgr --parsable2 show event (node-state history)",
    options=(CLUSTER, TZ),
    tables=("node_states", "health_events"),
    signature=_is_events,
    rank=30,
    sample=ReaderSample(
        "events.psv",
        "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User\n"
        "c|n1|2025-01-01T00:00:00|2025-01-01T06:00:00|DOWN|Xid 79|root\n",
        {"cluster": "c", "tz": "UTC"},
    ),
)
_EVENT_TEXT = ("Reason",)
#: fields an export of node events (one with NodeName) must have besides TimeStart, and why
_EVENT_REQUIRED = {
    "State": "without it no event says whether the node was down, drained or failed",
    "TimeEnd": "without it every interval would read as still open",
}
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


@SPEC.reads
def read_sacctmgr_events(
    path: str | Path, *, cluster: str | None = None, tz: str | None = None
) -> ReadResult:
    """Read ``sacctmgr --parsable2 show event`` output into ``node_states`` intervals.

    Parameters
    ----------
    path : str or Path
        The export, with its header line (any subset/order of the event fields).
    cluster : str or None
        Used where the export has no Cluster field.
    tz : str or None
        IANA zone of the printed times (sacctmgr prints local time without a zone).

    Returns
    -------
    ReadResult
        The read, with ``node_states`` and ``health_events`` (hardware signals named in the
        reasons). Cluster-level events (no node name, e.g. "Cluster Registered TRES") are read and
        kept but produce no interval; the notes say how many. An open event (TimeEnd ``Unknown``)
        gives ``end = null``. A bad time (unreadable, outside 1990-2200 or in the future), state or node list
        quarantines that row only.
    """
    src = str(path)
    check_zone(src, tz)
    check_name_option(src, cluster, "cluster")
    lines, notes = read_lines(path)
    data = lines.filter(pl.col("line").str.strip_chars() != "")
    if data.height == 0:
        raise IngestError(src, "empty file (sacctmgr prints a header line even with no events)")
    names, trailing = _event_header(src, data)
    b = _Builder(src)
    body = b.long_lines(data.slice(1), "line")
    split = split_delimited(
        body, names, trailing=trailing, text_fields=_EVENT_TEXT, patterns=_EVENT_PATTERNS
    )
    for no, raw, reason in zip(split.bad_line_no, split.bad_raw, split.bad_reason, strict=True):
        b.bad(no, raw, reason)
    b.read += len(split.bad_line_no) + split.records.height
    recs = split.records
    none = [None] * recs.height
    cols = {n: recs.get_column(n).to_list() for n in recs.columns}
    fields = {n: cols.get(n, none) for n in ("NodeName", "Cluster", "State", "Reason", "User")}
    starts, start_why = _to_utc(cols.get("TimeStart", none), tz, src, "TimeStart")
    ends, end_why = _to_utc(cols.get("TimeEnd", none), tz, src, "TimeEnd")
    cluster_events = 0
    seen_raw: dict[str, int] = {}
    # (cluster, node, state, start) -> index in b.rows and line of the row kept so far
    seen_key: dict[tuple[object, ...], tuple[int, int]] = {}
    merged = 0
    for i, (no, raw) in enumerate(zip(cols["line_no"], cols["line"], strict=True)):
        first = seen_raw.setdefault(raw, no)
        if first != no:
            b.bad(no, raw, f"exact duplicate of line {first}")
            continue
        if not (fields["NodeName"][i] or "").strip():
            cluster_events += 1
            continue
        got = _event(src, no, {k: v[i] for k, v in fields.items()}, cluster)
        if isinstance(got, str):
            b.bad(no, raw, got)
            continue
        fixed, nodes = got
        why = start_why[i] or end_why[i]
        if why is None and starts[i] is None:
            why = "field TimeStart: no start time"
        if why is None and ends[i] is not None and ends[i] < starts[i]:  # type: ignore[operator]
            why = "TimeEnd is before TimeStart (impossible order; not fixed)"
        if why is None:
            try:
                expanded = _expand(nodes)
            except hostlist.HostlistError as exc:
                why = f"field NodeName: {exc}"
        if why is not None:
            b.bad(no, raw, why)
            continue
        for node in expanded:
            row = {**fixed, "node": node, "start": starts[i], "end": ends[i]}
            merged += _add_interval(b, seen_key, row, no)
    overlaps = _overlapping(b.rows, {at: ln for at, ln in seen_key.values()})
    if overlaps:
        shown = ", ".join(map(str, overlaps[:5])) + (", ..." if len(overlaps) > 5 else "")
        notes.append(
            f"{len(overlaps)} interval(s) overlap an earlier one of the same node and state "
            f"(lines {shown}): kept as printed, so the time they share is in both"
        )
    if merged:
        notes.append(
            f"{merged} interval(s) repeat the cluster, node, state and start of another line "
            "with a different end or reason: merged into one (the closed one, then the later "
            "end, then the longer reason, as across inputs)"
        )
    if cluster_events:
        notes.append(f"{cluster_events} cluster-level event(s) (no node name): kept, no interval")
    return b.result(notes)


def _event_header(src: str, data: pl.DataFrame) -> tuple[list[str], bool]:
    """Check the header of a ``sacctmgr show event`` export.

    Returns its field names and whether its lines end with a ``|``.
    """
    header_no, header = data.row(0)
    fmt = identify("\n".join(data.head(3).get_column("line").to_list()))
    if fmt != "sacctmgr_event":
        piped = "|" in header and fmt in (None, "sacctmgr_other_parsable")
        raise IngestError(
            src, refusal(fmt, "events"), line=header_no, field="TimeStart" if piped else None
        )
    names = header.split("|")
    if names[-1] == "":
        names, trailing = names[:-1], True
    else:
        trailing = False
    repeated = [n for n in names if not n.strip() or names.count(n) > 1]
    if repeated:  # (a header line run into the next line: polars cannot name the fields)
        raise IngestError(
            src,
            "malformed sacctmgr header: a field name is empty or appears twice",
            line=header_no,
            field=repeated[0],
        )
    if "TimeStart" not in names:
        raise IngestError(
            src,
            "not a sacctmgr show event header: missing field; " + refusal(None, "events"),
            line=header_no,
            field="TimeStart",
        )
    for need in _EVENT_REQUIRED if "NodeName" in names else ():  # (else cluster events only)
        if need not in names:
            raise IngestError(
                src,
                f"the export has no {need} field, which the intervals need ("
                + _EVENT_REQUIRED[need]
                + "): export it with format=Cluster,NodeName,TimeStart,TimeEnd,State,Reason,User",
                line=header_no,
                field=need,
            )
    return names, trailing


def _event(
    src: str, no: int, fields: dict[str, str | None], cluster: str | None
) -> tuple[dict[str, object], str] | str:
    """Read a node event's fields other than its times.

    Returns (cluster, state, reason and user of its intervals; its node list expression), or
    why the record is quarantined.
    """
    clus = (fields["Cluster"] or "").strip() or cluster
    if clus is None:
        raise IngestError(
            src,
            Hinted("the export has no Cluster field: ", Hint("cluster")),
            line=no,
            field="Cluster",
        )
    state_s = fields["State"] or ""
    try:
        state = reduce_state(state_s)
    except ValueError as exc:
        return f"field State: {exc}"
    if state is None:
        return f"field State: {state_s[:40]!r} is not an out-of-service state"
    row = {
        "cluster": clus,
        "state": state,
        "reason": fields["Reason"] or None,
        "user": _user(fields["User"]),
    }
    return row, (fields["NodeName"] or "").strip()


def _add_interval(
    b: _Builder,
    seen_key: dict[tuple[object, ...], tuple[int, int]],
    row: dict[str, object],
    no: int,
) -> bool:
    """Add a node's interval; return True when it merges with one of the same key.

    One interval printed twice (exports concatenated) is kept once, as the store merges the
    same key across inputs (:mod:`reliability.store.merge`: closed, later end, longer reason,
    later line).
    """
    row = {k: row[k] for k in ("cluster", "node", "state", "start", "end", "reason", "user")}
    key = (row["cluster"], row["node"], row["state"], row["start"])
    if key in seen_key:
        at, line = seen_key[key]
        if _event_rank(row, no) > _event_rank(b.rows[at], line):
            b.rows[at] = row
            seen_key[key] = (at, no)
        return True
    seen_key[key] = (len(b.rows), no)
    b.add(row)
    return False


def _overlapping(rows: list[dict[str, object]], lines: dict[int, int]) -> list[int]:
    """Lines of the intervals that start before an earlier one of the node and state ends."""
    by: dict[tuple[object, ...], list[tuple[datetime, datetime | None, int]]] = {}
    for i, r in enumerate(rows):
        key = (r["cluster"], r["node"], r["state"])
        by.setdefault(key, []).append((r["start"], r["end"], lines[i]))  # type: ignore[arg-type]
    out: set[int] = set()
    for ivs in by.values():
        if len(ivs) < 2:
            continue
        ivs.sort(key=lambda x: x[0])
        reach: datetime | None = ivs[0][1]
        for start, end, line in ivs[1:]:
            if reach is None or start < reach:
                out.add(line)
            if reach is not None and (end is None or end > reach):
                reach = end
    return sorted(out)


def _event_rank(row: dict[str, object], line_no: int) -> tuple[object, ...]:
    """Rank of a node_states row among rows of the same key (higher wins; see store.merge)."""
    end = row["end"]
    reason = row["reason"]
    return (
        end is not None,
        end if end is not None else datetime.min.replace(tzinfo=UTC),
        len(str(reason)) if reason is not None else -1,
        line_no,
    )
