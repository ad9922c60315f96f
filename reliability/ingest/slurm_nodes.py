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

from reliability import hostlist, schema, taxonomy
from reliability.errors import IngestError
from reliability.ingest._bounds import bounds_text, latest_time, out_of_range_time
from reliability.ingest._common import (
    RAW_PREFIX,
    ReadResult,
    check_name_option,
    check_zone,
    clip_lines,
    quarantine_frame,
    read_lines,
)
from reliability.ingest._delimited import split_delimited
from reliability.ingest._slurm_text import identify, refusal

__all__ = [
    "MAX_RECORD_BYTES",
    "read_sacctmgr_events",
    "read_scontrol_nodes",
    "read_sinfo_reasons",
    "reduce_state",
]

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
    b = _Builder(src)
    body = b.long_lines(data.slice(1), "line")
    split = split_delimited(
        body, names, trailing=trailing, text_fields=_EVENT_TEXT, patterns=_EVENT_PATTERNS
    )
    for no, raw, reason in zip(split.bad_line_no, split.bad_raw, split.bad_reason, strict=True):
        b.bad(no, raw, reason)
    b.read += len(split.bad_line_no) + split.records.height
    recs = split.records
    cols = {n: recs.get_column(n).to_list() for n in recs.columns}
    none = [None] * recs.height
    get = cols.get
    starts, start_why = _to_utc(get("TimeStart", none), tz, src, "TimeStart")
    ends, end_why = _to_utc(get("TimeEnd", none), tz, src, "TimeEnd")
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
        node_expr = (get("NodeName", none)[i] or "").strip()
        clus = (get("Cluster", none)[i] or "").strip() or cluster
        if not node_expr:
            cluster_events += 1
            continue
        if clus is None:
            raise IngestError(
                src, "the export has no Cluster field: pass cluster=", line=no, field="Cluster"
            )
        state_s = get("State", none)[i] or ""
        try:
            state = reduce_state(state_s)
        except ValueError as exc:
            b.bad(no, raw, f"field State: {exc}")
            continue
        if state is None:
            b.bad(no, raw, f"field State: {state_s[:40]!r} is not an out-of-service state")
            continue
        why = start_why[i] or end_why[i]
        if why is None and starts[i] is None:
            why = "field TimeStart: no start time"
        if why is not None:
            b.bad(no, raw, why)
            continue
        if ends[i] is not None and ends[i] < starts[i]:  # type: ignore[operator]
            b.bad(no, raw, "TimeEnd is before TimeStart (impossible order; not fixed)")
            continue
        try:
            nodes = _expand(node_expr)
        except hostlist.HostlistError as exc:
            b.bad(no, raw, f"field NodeName: {exc}")
            continue
        reason = get("Reason", none)[i]
        user = _user(get("User", none)[i])
        for node in nodes:
            row = {
                "cluster": clus,
                "node": node,
                "state": state,
                "start": starts[i],
                "end": ends[i],
                "reason": reason or None,
                "user": user,
            }
            key = (clus, node, state, starts[i])
            if key in seen_key:
                # one interval printed twice (exports concatenated): keep one, as the store
                # merges the same key across inputs (store.merge: closed, later end, longer
                # reason, later line)
                merged += 1
                at, _ = seen_key[key]
                if _event_rank(row, no) > _event_rank(b.rows[at], seen_key[key][1]):
                    b.rows[at] = row
                    seen_key[key] = (at, no)
                continue
            seen_key[key] = (len(b.rows), no)
            b.add(row)
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


_REASON = re.compile(
    r"Reason=(?P<reason>.*?)(?:\s*\[(?P<user>[^@\]\s]+)@(?P<time>[^\]\s]+)\])?\s*$"
)


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
    recs: list[tuple[int, list[str]]] = []
    size: list[int] = []  # bytes of each record (its lines are no longer kept past the limit)
    preamble = 0
    for no, line, n_bytes in clip_lines(lines, MAX_RECORD_BYTES, RAW_PREFIX).iter_rows():
        n = len(line.encode()) + 1 if n_bytes is None else n_bytes
        if line.lstrip().startswith("NodeName="):
            recs.append((no, [line]))
            size.append(n)
        elif recs:
            if not line.strip():
                continue
            if line[:1].isspace():  # continuation lines are indented
                if size[-1] <= MAX_RECORD_BYTES:
                    recs[-1][1].append(line)
                size[-1] += n
            else:
                recs.append((no, [line]))  # a broken record start: its own (bad) record
                size.append(n)
        elif line.strip():
            preamble += 1
    if not recs:
        head = "\n".join(lines.head(5).get_column("line").to_list())
        raise IngestError(src, refusal(identify(head), "nodes"), line=1)
    if preamble:
        notes.append(f"{preamble} line(s) before the first NodeName= record ignored")
    b = _Builder(src)
    b.read = len(recs)
    healthy = 0
    times: list[str | None] = []
    parsed: list[tuple[int, str, str, str, str | None, str | None]] = []
    for (no, rec_lines), n_bytes in zip(recs, size, strict=True):
        raw = "\n".join(rec_lines)
        if n_bytes > MAX_RECORD_BYTES:
            b.bad(no, raw[:RAW_PREFIX], _too_long(n_bytes, "record"))
            continue
        if not rec_lines[0].lstrip().startswith("NodeName="):
            b.bad(no, raw, "record does not start with NodeName= (a damaged record)")
            continue
        if sum(ln.lstrip().startswith("Reason=") for ln in rec_lines) > 1:
            b.bad(no, raw, "record has more than one Reason= line")
            continue
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
    starts, whys = _to_utc(times, tz, src, "Reason")
    for (no, raw, node, state, reason, user), start, why, t in zip(
        parsed, starts, whys, times, strict=True
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
    header: list[str] | None = None
    pipe = False
    assumed = 0
    pending: list[tuple[int, str, str, str, str, str | None, str]] = []
    data = lines.filter(pl.col("line").str.strip_chars() != "")
    for no, line in data.iter_rows():
        if header is None and "REASON" in line and "NODELIST" in line:
            pipe = "|" in line
            tail = line[line.index("REASON") :]
            header = [h.strip() for h in (tail.split("|") if pipe else tail.split())]
            body = b.long_lines(data.filter(pl.col("line_no") > no), "line")
            break
        head = "\n".join(data.head(5).get_column("line").to_list())
        raise IngestError(src, refusal(identify(head), "nodes"), line=no)
    if header is None:
        raise IngestError(src, "empty file")
    if pipe:
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
        for row in recs.iter_rows(named=True):
            pending.append(
                (
                    row["line_no"],
                    row["line"],
                    (row.get("reason") or "").strip(),
                    row.get("user") or "",
                    row["nodes"],
                    row.get("state") or None,
                    row["time"],
                )
            )
    else:
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
    starts, whys = _to_utc([p[6] for p in pending], tz, src, "TIMESTAMP")
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
