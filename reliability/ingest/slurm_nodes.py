"""Readers of Slurm node-state snapshots -> ``node_states`` intervals (and ``health_events``).

The history, ``sacctmgr --parsable2 show event``, is read by
:mod:`reliability.ingest.slurm_events` (its reader is also importable from here).

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
from pathlib import Path

import polars as pl

from reliability import hostlist
from reliability.errors import IngestError
from reliability.ingest._common import (
    RAW_PREFIX,
    ReadResult,
    check_name_option,
    check_zone,
    clip_lines,
    decode_text,
    read_bytes,
    read_lines,
)
from reliability.ingest._delimited import split_delimited
from reliability.ingest._node_states import (
    MAX_RECORD_BYTES,
    _Builder,
    _expand,
    _to_utc,
    _too_long,
    _user,
    reduce_state,
)
from reliability.ingest._slurm_text import _WHAT, identify, refusal
from reliability.ingest._spec import CLUSTER, TZ, FileHead, ReaderSample, ReaderSpec
from reliability.ingest.sacct.io import head
from reliability.ingest.slurm_events import read_sacctmgr_events

__all__ = [
    "MAX_RECORD_BYTES",
    "SPEC",
    "read_node_snapshot",
    "read_sacctmgr_events",
    "read_scontrol_nodes",
    "read_sinfo_reasons",
    "reduce_state",
]


def _is_snapshot(head: FileHead) -> str | None:
    fmt = head.slurm_format
    if fmt == "scontrol_node" and any(ln.startswith("NodeName=") for ln in head.lines):
        return _WHAT[fmt]  # ("NodeName=" inside another log's line, e.g. slurmd's, is not)
    return _WHAT[fmt] if fmt == "sinfo_reasons" else None


SPEC = ReaderSpec(
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


@SPEC.reads
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
