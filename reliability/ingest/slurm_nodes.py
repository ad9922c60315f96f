"""Readers of Slurm node-state history -> ``node_states`` intervals (and ``health_events``).

- ``sacctmgr --parsable2 show event``: the history (DOWN / DRAIN / FAIL intervals with reasons).
- ``scontrol show node`` (multi-line or ``--oneliner``): a snapshot; each node whose state
  flags include DOWN / DRAIN / FAIL / MAINT gives an open interval starting at its reason time.
- ``sinfo -R`` (whitespace-aligned, or ``-o '%E|%U|%H|%N|%T'``): a snapshot of the reasons of
  unavailable nodes.

State flag sets such as ``IDLE+DRAIN`` or ``DOWN*+DRAIN`` are reduced to the most severe
out-of-service state, in the order DOWN > FAIL > DRAIN > MAINT.

**Drain reasons carry signals**: a DOWN / DRAIN / FAIL reason that names a hardware signal
(``GPU ECC errors <xid 79> on gpu:1``, ``Xid 48``, ``NVLink``, "fell off the bus": see
:func:`reliability.taxonomy.reason_signals`) also gives a ``health_events`` row per node
(source ``slurm``, at the interval's start, code / component / severity from the taxonomy,
device when the reason names one), so attribution and lemon features see it.

Other Slurm outputs (``sinfo -N -l``, plain ``sinfo``, fixed-width ``sacctmgr`` tables, YAML)
are refused with what the file is and what to export instead.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

import polars as pl

from reliability import schema, taxonomy
from reliability.errors import IngestError
from reliability.ingest import hostlist
from reliability.ingest._bounds import bounds_text, latest_time, out_of_range_time
from reliability.ingest._common import (
    RAW_PREFIX,
    ReadResult,
    check_name_option,
    check_zone,
    clip_lines,
    decode_text,
    quarantine_frame,
    read_bytes,
    read_lines,
)
from reliability.ingest._delimited import split_delimited
from reliability.ingest._sacct_io import head
from reliability.ingest._slurm_text import _WHAT, identify, refusal
from reliability.ingest._spec import CLUSTER, TZ, FileHead, ReaderSample, ReaderSpec

__all__ = [
    "EVENTS_SPEC",
    "MAX_RECORD_BYTES",
    "NODES_SPEC",
    "read_node_snapshot",
    "read_sacctmgr_events",
    "read_scontrol_nodes",
    "read_sinfo_reasons",
    "reduce_state",
]


def _is_events(head: FileHead) -> str | None:
    return _WHAT["sacctmgr_event"] if head.slurm_format == "sacctmgr_event" else None


def _is_snapshot(head: FileHead) -> str | None:
    fmt = head.slurm_format
    if fmt == "scontrol_node" and any(ln.startswith("NodeName=") for ln in head.lines):
        return _WHAT[fmt]  # ("NodeName=" inside another log's line, e.g. slurmd's, is not)
    return _WHAT[fmt] if fmt == "sinfo_reasons" else None


EVENTS_SPEC = ReaderSpec(
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
NODES_SPEC = ReaderSpec(
    kind="nodes",
    summary="scontrol show node / sinfo -R snapshots (detected from the content)",
    options=(CLUSTER.required_(), TZ),
    tables=("node_states", "health_events"),
    signature=_is_snapshot,
    rank=30,
    sample=ReaderSample(
        "nodes.txt",
        "NodeName=n1 Arch=x86_64 CoresPerSocket=32\n"
        "   State=DOWN+DRAIN ThreadsPerCore=1\n"
        "   Reason=Xid 79 [root@2025-01-01T00:00:00]\n",
        {"cluster": "c", "tz": "UTC"},
    ),
)

#: ``scontrol show node``: the node, its state flags, and ``Reason=... [user@time]``
_NODE_NAME = re.compile(r"NodeName=(\S+)")
_NODE_STATE = re.compile(r"\bState=(\S+)")
_REASON = re.compile(
    r"Reason=(?P<reason>.*?)(?:\s*\[(?P<user>[^@\]\s]+)@(?P<time>[^\]\s]+)\])?\s*$"
)
#: ``sinfo -R``: an aligned row, the ``-o`` header fields and their patterns
_SINFO_ROW = re.compile(
    r"^(?P<reason>.*?)\s+(?P<user>\S+)\s+(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d|\d+|Unknown)"
    r"\s+(?P<nodes>\S+)(?:\s+(?P<state>[A-Za-z_*~#!%$@^+-]+))?\s*$"
)
_SINFO_FIELDS = {
    "REASON": "reason",
    "USER": "user",
    "TIMESTAMP": "time",
    "NODELIST": "nodes",
    "STATE": "state",
}
_SINFO_PATTERNS = {
    "USER": re.compile(r"\S*"),
    "TIMESTAMP": re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d|\d+|Unknown)"),
    "NODELIST": re.compile(r"[\w\-.\[\],]+"),
    "STATE": re.compile(r"[A-Za-z_*~#!%$@^+-]*"),
}
#: Slurm state flags (long and ``sinfo %t`` short forms) -> canonical node state, most
#: severe first.
STATE_PRECEDENCE = (
    ("DOWN", "DOWN"),
    ("FAIL", "FAIL"),
    ("FAILING", "FAIL"),
    ("FAILG", "FAIL"),
    ("DRAIN", "DRAIN"),
    ("DRAINED", "DRAIN"),
    ("DRAINING", "DRAIN"),
    ("DRNG", "DRAIN"),
    ("MAINT", "MAINT"),
    ("REBOOT_REQUESTED", "MAINT"),
    ("REBOOT_ISSUED", "MAINT"),
)
_IN_SERVICE = frozenset(
    {"IDLE", "ALLOCATED", "ALLOC", "MIXED", "MIX", "COMPLETING", "COMP", "RESERVED", "RESV",
     "PLANNED", "PLND", "POWERED_DOWN", "POWER_DOWN", "POWERING_UP", "POWERING_DOWN", "POW_UP",
     "POW_DN", "CLOUD", "FUTURE", "FUTR", "NOT_RESPONDING", "NPC", "PERFCTRS", "UNKNOWN",
     "UNK", "POWER", "IDLE~", "DYNAMIC_NORM", "BOOT", "INVAL"}
)  # fmt: skip
#: states whose reasons are read for hardware signals (MAINT is planned work)
_SIGNAL_STATES = frozenset({"DOWN", "DRAIN", "FAIL"})
_TIME_FMT = "%Y-%m-%dT%H:%M:%S"
_NO_TIME = frozenset({"", "Unknown", "None", "N/A"})
#: an epoch of more digits than this is beyond year 5138: out of range before any arithmetic
_MAX_EPOCH_DIGITS = 11
#: longest line (and ``scontrol show node`` record) read [bytes]: Slurm prints node records of
#: 1-2 KB, and reasons kept by slurmdbd are at most 255 bytes (tinytext); a longer one is
#: quarantined unread (a 100 MiB record took 40 s, mostly in the reason's regexes)
MAX_RECORD_BYTES = 64 << 10
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


def reduce_state(flags: str) -> str | None:
    """Reduce a Slurm node state string to its most severe out-of-service state.

    Parameters
    ----------
    flags : str
        A state as Slurm prints it, flags joined by ``+`` and possibly suffixed (``IDLE+DRAIN``,
        ``down*``).

    Returns
    -------
    str or None
        The canonical out-of-service state (``IDLE+DRAIN`` -> ``DRAIN``), by
        :data:`STATE_PRECEDENCE`; None for in-service states (IDLE, MIXED, ...).

    Raises
    ------
    ValueError
        For an empty state or an unknown flag.
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
        raise ValueError(f"unknown node state flag {unknown[0][:40]!r}")
    return None


def _user(u: str | None) -> str | None:
    if u is None or u.strip() == "":
        return None
    return re.sub(r"\(\d+\)$", "", u.strip())


def _to_utc(
    values: list[str | None], tz: str | None, src: str, field: str
) -> tuple[list[object], list[str | None]]:
    """Parse local ISO or epoch strings to UTC.

    Returns the times (None for sentinels and bad values) and, per value, None or the reason
    it is not a time (unreadable, or outside the sane bounds of ``_bounds``). Raises
    :class:`IngestError` naming ``tz=`` if local times appear and no zone was given.
    """
    clean = [None if v is None or v.strip() in _NO_TIME else v.strip() for v in values]
    n = _MAX_EPOCH_DIGITS
    df = pl.DataFrame({"t": clean}, schema={"t": pl.String}).with_columns(
        iso=pl.col("t").str.to_datetime(_TIME_FMT, strict=False, time_unit="us"),
        epoch=pl.col("t").str.extract(rf"^(\d{{1,{n}}})$").cast(pl.Int64),
        huge=pl.col("t").str.contains(rf"^\d{{{n + 1},}}$").fill_null(False),
    )
    if tz is None and df.get_column("iso").is_not_null().any():
        raise IngestError(
            src,
            "Slurm prints local times without a zone: pass tz= (the zone of the host that "
            "ran the command, e.g. tz='UTC')",
            field=field,
        )
    utc = pl.from_epoch("epoch", time_unit="s").dt.replace_time_zone("UTC").cast(schema.UTC_TIME)
    gap = pl.lit(False)
    if tz is not None:
        local = pl.col("iso").dt.replace_time_zone(tz, ambiguous="earliest", non_existent="null")
        utc = pl.coalesce(utc, local.dt.convert_time_zone("UTC").cast(schema.UTC_TIME))
        gap = pl.col("iso").is_not_null() & local.is_null()
    df = df.with_columns(gap=gap)
    latest = latest_time()
    df = df.with_columns(out=utc).with_columns(
        oob=out_of_range_time("out", latest) | pl.col("huge")
    )
    df = df.with_columns(out=pl.when(~pl.col("oob")).then(pl.col("out")))
    oob = df.get_column("oob").to_list()
    out = df.get_column("out")
    times = out.to_list()
    reasons: list[str | None] = []
    bounds = bounds_text(latest)
    gaps = df.get_column("gap").to_list()
    for raw, t, far, in_gap in zip(clean, times, oob, gaps, strict=True):
        if raw is None:
            reasons.append(None)
        elif in_gap:
            reasons.append(
                f"field {field}: cannot read time {raw[:40]!r}: it does not exist in {tz} "
                "(a daylight-saving gap)"
            )
        elif far:
            reasons.append(f"field {field}: time {raw[:40]!r} is {bounds}")
        elif t is None:
            reasons.append(f"field {field}: cannot read time {raw[:40]!r}")
        else:
            reasons.append(None)
    return times, reasons


@lru_cache(maxsize=4096)
def _signals(reason: str) -> tuple[taxonomy.ReasonSignal, ...]:
    return tuple(taxonomy.reason_signals(reason))


class _Builder:
    """Accumulates node_states, health_events and quarantine rows for one input."""

    def __init__(self, src: str) -> None:
        self.src = src
        self.rows: list[dict[str, object]] = []
        self.events: list[dict[str, object]] = []
        self.q: tuple[list[int], list[str], list[str]] = ([], [], [])
        self.read = 0

    def bad(self, line_no: int, raw: str, reason: str) -> None:
        self.q[0].append(line_no)
        self.q[1].append(raw)
        self.q[2].append(reason)

    def long_lines(self, lines: pl.DataFrame, what: str) -> pl.DataFrame:
        """Quarantine the lines over :data:`MAX_RECORD_BYTES` (each a record read), unread.

        Returns the other lines (``line_no``, ``line``).
        """
        cut = clip_lines(lines, MAX_RECORD_BYTES, RAW_PREFIX)
        long = cut.filter(pl.col("n_bytes").is_not_null())
        for no, raw, n in long.iter_rows():
            self.read += 1
            self.bad(no, raw, _too_long(n, what))
        return cut.filter(pl.col("n_bytes").is_null()).select("line_no", "line")

    def add(self, row: dict[str, object]) -> None:
        """One node_states row (its reason's hardware signals become health events)."""
        self.rows.append(row)

    def _add_events(self, row: dict[str, object]) -> None:
        """Record a health event per hardware signal in a row's reason."""
        reason = row["reason"]
        if not reason or row["state"] not in _SIGNAL_STATES:
            return
        for sig in _signals(str(reason)):
            c = sig.classification
            self.events.append(
                {
                    "cluster": row["cluster"],
                    "node": row["node"],
                    "time": row["start"],
                    "source": "slurm",
                    "component": c.component,
                    "code": sig.code,
                    "severity": c.severity,
                    "device": sig.device,
                    "message": f"Slurm {row['state']} reason: {reason}",
                }
            )

    def result(self, notes: list[str]) -> ReadResult:
        for row in self.rows:
            self._add_events(row)
        frame = pl.DataFrame(self.rows, schema=schema.TABLES["node_states"].schema, orient="row")
        events = pl.DataFrame(
            self.events, schema=schema.TABLES["health_events"].schema, orient="row"
        )
        if self.events:
            notes.append(
                f"{len(self.events)} hardware signal(s) in node-state reasons (Xid, ECC, "
                "NVLink...) recorded as health events (source slurm)"
            )
        q = quarantine_frame(self.src, *self.q)
        return ReadResult(
            self.src,
            {"node_states": frame, "health_events": events},
            q,
            self.read,
            self.read - q.height,
            notes,
        )


def _too_long(n_bytes: int, what: str) -> str:
    return (
        f"{what} of {n_bytes:,} bytes, longer than the {MAX_RECORD_BYTES:,}-byte limit "
        "of one (Slurm prints 1-2 KB): not read"
    )


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


def _expand(expr: str) -> list[str]:
    return hostlist.expand(expr)


@EVENTS_SPEC.reads
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
            src, "the export has no Cluster field: pass cluster=", line=no, field="Cluster"
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


def read_scontrol_nodes(path: str | Path, *, cluster: str, tz: str | None = None) -> ReadResult:
    """Read ``scontrol show node`` (multi-line or ``--oneliner``) into open ``node_states``.

    A record per ``NodeName=`` line and its indented continuation lines (a line that is neither
    is a damaged record of its own, quarantined). Nodes whose ``State=`` flags hold DOWN / DRAIN /
    FAIL / MAINT give one interval starting at the time in ``Reason=... [user@time]`` and still
    open (``end`` null), plus a health event per hardware signal in the reason. In-service nodes
    are kept (counted) and give no interval. Lines before the first ``NodeName=`` (e.g. a shell
    prompt) are not records; the notes say how many.

    Parameters
    ----------
    path : str or Path
        The saved ``scontrol show node`` output (plain or compressed).
    cluster : str
        Cluster name recorded on every row.
    tz : str or None
        IANA time zone of the reason timestamps (scontrol prints local time without a zone).

    Returns
    -------
    ReadResult
        ``node_states`` (open intervals) and ``health_events``, quarantined records and notes.

    Raises
    ------
    IngestError
        If the file is empty, holds no ``NodeName=`` record, or an option is invalid.
    """
    src = str(path)
    check_zone(src, tz)
    check_name_option(src, cluster, "cluster")
    lines, notes = read_lines(path)
    if lines.height == 0:
        raise IngestError(src, "empty file")
    recs, preamble = _scontrol_records(lines)
    if not recs:
        head = "\n".join(lines.head(5).get_column("line").to_list())
        raise IngestError(src, refusal(identify(head), "nodes"), line=1)
    if preamble:
        notes.append(f"{preamble} line(s) before the first NodeName= record ignored")
    b = _Builder(src)
    b.read = len(recs)
    healthy = 0
    parsed: list[tuple[int, str, tuple[str, str, str | None, str | None, str]]] = []
    for no, rec_lines, n_bytes in recs:
        raw = "\n".join(rec_lines)
        got = _scontrol_record(rec_lines, n_bytes)
        if got is None:
            healthy += 1
        elif isinstance(got, str):
            b.bad(no, raw[:RAW_PREFIX] if n_bytes > MAX_RECORD_BYTES else raw, got)
        else:
            parsed.append((no, raw, got))
    times = [when for _, _, (*_, when) in parsed]
    starts, whys = _to_utc(times, tz, src, "Reason")
    for (no, raw, (node, state, reason, user, t)), start, why in zip(
        parsed, starts, whys, strict=True
    ):
        if why is not None or start is None:
            b.bad(no, raw, why or f"field Reason: cannot read time {t!r}")
            continue
        b.add(
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


def _scontrol_records(lines: pl.DataFrame) -> tuple[list[tuple[int, list[str], int]], int]:
    """Group ``scontrol show node`` lines into records.

    Returns the records (first line number, lines, bytes: lines past the size limit are not
    kept) and the number of lines before the first ``NodeName=``.
    """
    recs: list[tuple[int, list[str], int]] = []
    preamble = 0
    for no, line, n_bytes in clip_lines(lines, MAX_RECORD_BYTES, RAW_PREFIX).iter_rows():
        n = len(line.encode()) + 1 if n_bytes is None else n_bytes
        if line.lstrip().startswith("NodeName="):
            recs.append((no, [line], n))
        elif recs:
            if not line.strip():
                continue
            if line[:1].isspace():  # continuation lines are indented
                first, rec_lines, size = recs[-1]
                if size <= MAX_RECORD_BYTES:
                    rec_lines.append(line)
                recs[-1] = (first, rec_lines, size + n)
            else:
                recs.append((no, [line], n))  # a broken record start: its own (bad) record
        elif line.strip():
            preamble += 1
    return recs, preamble


def _scontrol_record(
    rec_lines: list[str], n_bytes: int
) -> tuple[str, str, str | None, str | None, str] | str | None:
    """Read one node record.

    Returns (node, state, reason, user, reason time as printed) for a node out of service,
    None for one in service, or why the record is quarantined.
    """
    if n_bytes > MAX_RECORD_BYTES:
        return _too_long(n_bytes, "record")
    if not rec_lines[0].lstrip().startswith("NodeName="):
        return "record does not start with NodeName= (a damaged record)"
    if sum(ln.lstrip().startswith("Reason=") for ln in rec_lines) > 1:
        return "record has more than one Reason= line"
    raw = "\n".join(rec_lines)
    node_m = _NODE_NAME.search(raw)
    state_m = _NODE_STATE.search(raw)
    if node_m is None or state_m is None:
        return "record has no State= field"
    try:
        state = reduce_state(state_m.group(1))
    except ValueError as exc:
        return f"field State: {exc}"
    if state is None:
        return None
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
        return f"node is {state} but Reason= has no [user@time]: start time unknown"
    return node_m.group(1), state, reason, user, when


def read_sinfo_reasons(path: str | Path, *, cluster: str, tz: str | None = None) -> ReadResult:
    """Read ``sinfo -R`` (REASON USER TIMESTAMP NODELIST [STATE]) into open ``node_states``.

    Either sinfo's aligned columns or ``|``-separated output (``sinfo -R -o
    '%E|%U|%H|%N|%T'``, header included). Plain ``sinfo -R`` has no state column; those nodes are
    recorded as DRAIN and the notes say so (the ``-o`` form adds the exact state). The reason
    column is cut to 20 characters by sinfo's default format (``%E`` in ``-o`` is not). A hardware
    signal in a reason also gives a health event.

    Parameters
    ----------
    path : str or Path
        The saved ``sinfo -R`` output (plain or compressed).
    cluster : str
        Cluster name recorded on every row.
    tz : str or None
        IANA time zone of the TIMESTAMP column (sinfo prints local time without a zone).

    Returns
    -------
    ReadResult
        ``node_states`` (open intervals) and ``health_events``, quarantined lines and notes.

    Raises
    ------
    IngestError
        If the file is empty, has no ``REASON ... NODELIST`` header (another output is named), or
        an option is invalid.
    """
    src = str(path)
    check_zone(src, tz)
    check_name_option(src, cluster, "cluster")
    lines, notes = read_lines(path)
    if lines.height == 0:
        raise IngestError(src, "empty file")
    b = _Builder(src)
    header, pipe, body = _sinfo_header(src, lines, b)
    pending = _sinfo_piped(src, header, body, b) if pipe else _sinfo_aligned(body, b)
    starts, whys = _to_utc([p[6] for p in pending], tz, src, "TIMESTAMP")
    assumed = 0
    for (no, line, reason, user, nodes_expr, state_s, _), start, why in zip(
        pending, starts, whys, strict=True
    ):
        if why is not None or start is None:
            b.bad(no, line, why or "field TIMESTAMP: unknown time")
            continue
        try:
            state = reduce_state(state_s) if state_s else "DRAIN"
        except ValueError as exc:
            b.bad(no, line, f"field STATE: {exc}")
            continue
        if state is None:
            b.bad(no, line, f"field STATE: {state_s!r} is not an out-of-service state")
            continue
        try:
            nodes = _expand(nodes_expr)
        except hostlist.HostlistError as exc:
            b.bad(no, line, f"field NODELIST: {exc}")
            continue
        assumed += state_s is None
        for node in nodes:
            b.add(
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


#: a ``sinfo -R`` row: (line number, line, reason, user, node list, state or None, time)
_SinfoRow = tuple[int, str, str, str, str, str | None, str]


def _sinfo_header(
    src: str, lines: pl.DataFrame, b: _Builder
) -> tuple[list[str], bool, pl.DataFrame]:
    """Find the ``REASON ... NODELIST`` header (the first non-blank line).

    Returns its columns, whether they are ``|``-separated, and the lines after it (long ones
    quarantined by ``b``).
    """
    data = lines.filter(pl.col("line").str.strip_chars() != "")
    for no, line in data.iter_rows():
        if "REASON" in line and "NODELIST" in line:
            pipe = "|" in line
            tail = line[line.index("REASON") :]
            header = [h.strip() for h in (tail.split("|") if pipe else tail.split())]
            return header, pipe, b.long_lines(data.filter(pl.col("line_no") > no), "line")
        head = "\n".join(data.head(5).get_column("line").to_list())
        raise IngestError(src, refusal(identify(head), "nodes"), line=no)
    raise IngestError(src, "empty file")


def _sinfo_piped(src: str, header: list[str], body: pl.DataFrame, b: _Builder) -> list[_SinfoRow]:
    """Read the rows of ``sinfo -R -o '%E|%U|%H|%N|%T'`` output (bad ones quarantined)."""
    unknown = [h for h in header if h not in _SINFO_FIELDS]
    if unknown or not {"TIMESTAMP", "NODELIST"} <= set(header):
        raise IngestError(
            src,
            "sinfo -R -o header needs REASON, USER, TIMESTAMP, NODELIST (and STATE) only",
            line=int(body.item(0, "line_no")) - 1 if body.height else 1,
            field=(unknown or ["TIMESTAMP"])[0],
        )
    split = split_delimited(
        body, header, trailing=False, text_fields=("REASON",), patterns=_SINFO_PATTERNS
    )
    for no, raw, why in zip(split.bad_line_no, split.bad_raw, split.bad_reason, strict=True):
        b.bad(no, raw, why)
    b.read += len(split.bad_line_no) + split.records.height
    recs = split.records.rename({h: _SINFO_FIELDS[h] for h in header})
    return [
        (
            row["line_no"],
            row["line"],
            (row.get("reason") or "").strip(),
            row.get("user") or "",
            row["nodes"],
            row.get("state") or None,
            row["time"],
        )
        for row in recs.iter_rows(named=True)
    ]


def _sinfo_aligned(body: pl.DataFrame, b: _Builder) -> list[_SinfoRow]:
    """Read the rows of sinfo's aligned ``-R`` columns (bad ones quarantined)."""
    pending: list[_SinfoRow] = []
    for no, line in body.iter_rows():
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
    return pending


@NODES_SPEC.reads
def read_node_snapshot(path: str | Path, *, cluster: str, tz: str | None = None) -> ReadResult:
    """Read ``scontrol show node`` or ``sinfo -R`` output, whichever the file holds.

    Any other Slurm output (``sinfo -N -l``, plain ``sinfo``, ``sacctmgr`` tables, YAML...) is
    refused with what the file is and the accepted forms.

    Parameters
    ----------
    path : str or Path
        The saved command output (plain or compressed).
    cluster : str
        Cluster name recorded on every row.
    tz : str or None
        Time zone of the timestamps in the file (IANA name, e.g. ``"Europe/Paris"``); None: the
        reader's default (see :func:`read_scontrol_nodes`, :func:`read_sinfo_reasons`).

    Returns
    -------
    ReadResult
        The node-state rows, quarantined lines and notes.

    Raises
    ------
    IngestError
        If the file is empty or holds another kind of output.
    """
    start = head(path)  # (the start decides: the reader reads the file itself)
    data, _ = decode_text(start)
    fmt = identify(data[:65536].decode("utf-8", errors="replace"))
    if fmt == "scontrol_node":
        return read_scontrol_nodes(path, cluster=cluster, tz=tz)
    if fmt == "sinfo_reasons":
        return read_sinfo_reasons(path, cluster=cluster, tz=tz)
    if not data.strip() and not decode_text(read_bytes(path))[0].strip():
        raise IngestError(str(path), "empty file")
    raise IngestError(str(path), refusal(fmt, "nodes"), line=1)
