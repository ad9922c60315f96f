"""Reader for ``sacct --json`` (Slurm's OpenAPI data_parser output) -> ``jobs`` / ``job_steps``.

Handles the 22.05 shape (``openapi/dbv0.0.38``: plain numbers, ``state.current`` a string,
``time.limit`` in minutes) and the later one (numbers wrapped as
``{"set", "infinite", "number"}``, ``state.current`` a list, step ids ``"36.batch"``). Times are
epoch seconds, so no time zone is needed. JSON has no field-delimiter problems, so it is the
most faithful export. Quarantine rows name the record's position in the ``jobs`` array as its
"line"; a refused job is one quarantined record (its steps go with it).

The export is read one job record at a time (:mod:`reliability.ingest._json` finds the records'
extent and the nesting depth with numpy before :mod:`json` parses anything), so memory is the
file, one record, and the rows: a record over :data:`MAX_JOB_RECORD_BYTES` or
:data:`MAX_JOB_RECORD_MARKS` is quarantined unread (``json.loads`` of the whole of a 100 MiB
export took up to 2.6 GB); JSON nested deeper than 64 levels is refused (sacct nests about 10).
A UTF-8 byte-order mark (or UTF-16/32 text) is decoded; a top-level JSON list is refused
saying what it is.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from reliability import hostlist, schema
from reliability.errors import IngestError
from reliability.ingest._bounds import (
    MAX_ACCELERATORS_PER_JOB,
    MAX_NODES_PER_JOB,
    bounds_text,
    latest_time,
)
from reliability.ingest._common import ReadResult, decode_text, quarantine_frame
from reliability.ingest._compressed import read_all
from reliability.ingest._json import (
    MAX_DEPTH,
    RAW_PREFIX,
    JsonLimitError,
    blank,
    list_items,
    loads_record,
    shallow_marks,
)
from reliability.ingest.sacct.fields import SACCT_EXPORT_COMMAND
from reliability.ingest.sacct.parse import MAX_DURATION_S
from reliability.ingest.sacct.post import (
    exact_duplicates,
    missing_duplicates_note,
    number_attempts,
    resize_segments,
)

__all__ = ["MAX_JOB_RECORD_BYTES", "MAX_JOB_RECORD_MARKS", "read_sacct_json"]

#: largest job record read [bytes] (Slurm 22.05 prints about 4 KB per step: ~15,000 steps)
MAX_JOB_RECORD_BYTES = 64 << 20
#: most brackets and commas in one job record (about 400 per step: ~12,000 steps); bounds what
#: json.loads builds for one record (at most a value per bracket or comma, ~70 bytes each)
MAX_JOB_RECORD_MARKS = 5_000_000
#: largest top-level value other than ``jobs`` (meta, errors, warnings) [bytes]
_MAX_OTHER_BYTES = 16 << 20
_LEAD = re.compile(rb"[^ \t\r\n]")
_KEY = re.compile(rb'\s*("(?:[^"\\]|\\.)*")\s*:\s*', re.DOTALL)
_EXPORT = f"export with `sacct --json`, or with: {SACCT_EXPORT_COMMAND}"

_EPOCH_MIN = int(datetime(1990, 1, 1, tzinfo=UTC).timestamp())
_INT64_MAX = 2**63 - 1


class _Bad(ValueError):
    """A field of a job record has the wrong shape or a poison value."""


def _obj(v: Any, what: str) -> dict[str, Any]:
    """``v`` if it is a JSON object (or absent: {}), else :class:`_Bad`."""
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise _Bad(f"{what} must be an object, got {type(v).__name__}")
    return v


def _num(v: Any) -> int | None:
    """Return a number, unwrapping ``{"set": .., "infinite": .., "number": ..}``; None if unset/infinite."""
    if isinstance(v, dict):
        if v.get("infinite") or not v.get("set", True):
            return None
        v = v.get("number")
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            raise _Bad(f"number {v} is not finite")
        v = int(v)
    if not isinstance(v, int):
        raise _Bad(f"expected a number, got {type(v).__name__} {str(v)[:40]!r}")
    if not -_INT64_MAX <= v <= _INT64_MAX:
        raise _Bad(f"number {v} does not fit 64 bits")
    return v


def _time(v: Any, what: str = "time") -> datetime | None:
    n = _num(v)
    if not n:
        return None
    latest = latest_time()
    if not _EPOCH_MIN <= n <= latest.timestamp():
        raise _Bad(f"{what} {n} is {bounds_text(latest)} (a poison value)")
    return datetime.fromtimestamp(n, UTC)


def _bounded(n: int | None, limit: int, what: str) -> int | None:
    if n is not None and not 0 <= n <= limit:
        raise _Bad(f"{what} {n} is outside 0-{limit:,} (a poison value)")
    return n


def _state(v: Any) -> str | None:
    cur = v.get("current") if isinstance(v, dict) else v
    if isinstance(cur, list):
        cur = cur[0] if cur else None
    return None if cur is None else str(cur).split(" ")[0]


def _exit(v: Any, trusted: bool = True) -> tuple[int | None, int | None]:
    """(code, signal). ``trusted=False``: a "SUCCESS" status is not believed (see notes)."""
    if not isinstance(v, dict):
        return None, None
    status = v.get("status")
    status = status[0] if isinstance(status, list) and status else status
    if not trusted and status == "SUCCESS":
        return None, None
    code = _num(v.get("return_code"))
    sig = v.get("signal") or {}
    signal = _num(sig.get("signal_id", sig.get("id"))) if isinstance(sig, dict) else None
    if code is None and signal is None and status in ("PENDING", None):
        return None, None  # no exit yet (a step sacct has no code for): unknown, not 0
    return (code if code is not None else 0), (signal if signal is not None else 0)


def _tres_items(tres: dict[str, Any], key: str) -> list[dict[str, Any]]:
    items = tres.get(key) or []
    if not isinstance(items, list) or not all(isinstance(t, dict) for t in items):
        raise _Bad(f"tres.{key} must be a list of objects")
    return items


def _gpus(tres: dict[str, Any]) -> int:
    """GPUs of the allocation (else the request); 0 for a CPU-only job."""
    items = _tres_items(tres, "allocated") or _tres_items(tres, "requested")
    plain = [
        _num(t.get("count")) for t in items if t.get("type") == "gres" and t.get("name") == "gpu"
    ]
    if plain and plain[0] is not None:
        return _bounded(plain[0], MAX_ACCELERATORS_PER_JOB, "GPU count") or 0
    typed = [
        _num(t.get("count")) or 0
        for t in items
        if t.get("type") == "gres" and str(t.get("name", "")).startswith("gpu:")
    ]
    return _bounded(sum(typed), MAX_ACCELERATORS_PER_JOB, "GPU count") or 0


def _nodes_requested(tres: dict[str, Any]) -> int | None:
    counts = [
        _num(t.get("count")) for t in _tres_items(tres, "requested") if t.get("type") == "node"
    ]
    return counts[0] if counts else None


def _job_id(j: dict[str, Any]) -> str:
    arr, het = _obj(j.get("array"), "array"), _obj(j.get("het"), "het")
    task = _num(arr.get("task_id"))
    if task is not None:
        return f"{_num(arr.get('job_id'))}_{task}"
    if arr.get("task"):  # collapsed pending tasks, e.g. "[1-5]"
        return f"{_num(arr.get('job_id'))}_{arr['task']}"
    offset = _num(het.get("job_offset"))
    if offset is not None:
        return f"{_num(het.get('job_id'))}+{offset}"
    return str(_num(j.get("job_id")))


def _row(j: dict[str, Any], cluster: str | None, old_parser: bool) -> dict[str, Any]:
    """Build the jobs row of one job record (raises :class:`_Bad`, TypeError... if malformed)."""
    t = _obj(j.get("time"), "time")
    tres = _obj(j.get("tres"), "tres")
    nodes = j.get("nodes")
    if nodes is not None and not isinstance(nodes, str):
        raise _Bad(f"nodes must be a hostlist string, got {type(nodes).__name__}")
    lim = _num(t.get("limit"))
    if lim is not None and not 0 <= lim <= MAX_DURATION_S // 60:
        raise _Bad(f"time.limit {lim} min is outside the accepted calendar (a poison value)")
    row = {
        "cluster": _text(j.get("cluster")) or cluster,
        "job_id": _job_id(j),
        "name": _text(j.get("name")),
        "user": _text(j.get("user")) or None,
        "account": _text(j.get("account")) or None,
        "partition": _text(j.get("partition")) or None,
        "qos": _text(j.get("qos")) or None,
        "submit_time": _time(t.get("submission"), "time.submission"),
        "start_time": _time(t.get("start"), "time.start"),
        "end_time": _time(t.get("end"), "time.end"),
        "state": _state(j.get("state")),
        "n_nodes": _bounded(
            _num(j.get("allocation_nodes")) or _nodes_requested(tres) or 0,
            MAX_NODES_PER_JOB,
            "node count",
        ),
        "n_accelerators": _gpus(tres),
        "nodes": hostlist.expand(nodes),
        "time_limit_s": lim * 60 if lim is not None else None,
        "priority": _num(j.get("priority")),
        "topology": None,
    }
    trusted = not old_parser or _state(j.get("state")) == "COMPLETED"
    row["exit_code"], row["exit_signal"] = _exit(j.get("exit_code"), trusted)
    return row


def _text(v: Any) -> str | None:
    if v is None or isinstance(v, str):
        return v
    raise _Bad(f"expected a string, got {type(v).__name__}")


def _step_rows(
    j: dict[str, Any], row: dict[str, Any], old_parser: bool, states: set[str]
) -> list[dict[str, Any]]:
    steps = j.get("steps") or []
    if not isinstance(steps, list):
        raise _Bad("steps must be a list")
    out = []
    for s in steps:
        if not isinstance(s, dict):
            raise _Bad("a step must be an object")
        state = _state(s.get("state"))
        if state not in states:
            raise _Bad(f"a step has unknown state {state!r}")
        sid = str(_obj(s.get("step"), "step.step").get("id", ""))
        sid = sid.split(".", 1)[1] if "." in sid else sid
        code, sig = _exit(s.get("exit_code"), not old_parser or state == "COMPLETED")
        st = _obj(s.get("time"), "step.time")
        nodes = _obj(s.get("nodes"), "step.nodes")
        names = nodes.get("list") or []
        if not isinstance(names, list) or not all(isinstance(x, str) for x in names):
            raise _Bad("step.nodes.list must be a list of names")
        out.append(
            {
                "cluster": row["cluster"],
                "job_id": row["job_id"],
                "step": sid,
                "name": _text(_obj(s.get("step"), "step.step").get("name")),
                "start_time": _time(st.get("start"), "step.time.start"),
                "end_time": _time(st.get("end"), "step.time.end"),
                "state": state,
                "exit_code": code,
                "exit_signal": sig,
                "n_nodes": _bounded(_num(nodes.get("count")), MAX_NODES_PER_JOB, "step node count"),
                "nodes": list(names),
            }
        )
    return out


def _line(data: bytes, pos: int) -> int:
    """Return the 1-based line number of a byte offset."""
    return data.count(b"\n", 0, pos) + 1


def _offset(exc: ValueError) -> int:
    """Return the byte offset of a parse error in the bytes that were parsed (0 if unknown)."""
    if isinstance(exc, json.JSONDecodeError):
        return len(exc.doc[: exc.pos].encode("utf-8", "surrogatepass"))
    if isinstance(exc, UnicodeDecodeError):
        return exc.start
    return 0


def _why(exc: ValueError) -> str:
    """Say what is wrong at a parse error, without the position in the parsed slice."""
    if isinstance(exc, json.JSONDecodeError):  # "Invalid control character at": a NUL...
        return exc.msg.removesuffix(" at")
    if isinstance(exc, UnicodeDecodeError):
        return f"byte 0x{exc.object[exc.start]:02x} is not UTF-8 text"
    return str(exc)[:200]


_FIELD = re.compile(rb'"((?:[^"\\]|\\.){1,200})"\s*:')


def _field_at(data: bytes, start: int, pos: int) -> str | None:
    """Return the name of the last ``"name":`` before ``pos`` in a record starting at ``start``."""
    found = None
    for m in _FIELD.finditer(data, start, pos):
        found = m
    if found is None:
        return None
    return found.group(1).decode("utf-8", "replace")


class _Reader:
    """The byte-level structure of one export: its top-level members and the job records."""

    def __init__(self, src: str, data: bytes) -> None:
        self.src, self.data = src, data

    def error(self, pos: int, problem: str, field: str | None = None) -> IngestError:
        return IngestError(self.src, problem, line=_line(self.data, pos), field=field)

    def top(self) -> tuple[dict[str, Any], tuple[int, int] | None]:
        """Parse the top-level object but the ``jobs`` list, and find that list's brackets."""
        data, src = self.data, self.src
        lead_m = _LEAD.search(data)
        start = len(data) if lead_m is None else lead_m.start()
        if start == len(data):
            raise IngestError(src, "empty file")
        lead = data[start : start + 1]
        if lead == b"[":
            raise self.error(
                start,
                "this is a JSON list ([...]), not sacct --json output: sacct --json prints one "
                f'object, {{"meta": {{...}}, "jobs": [...]}}; {_EXPORT}',
            )
        if lead != b"{":
            raise self.error(
                start, f"not sacct --json output (it does not start with '{{'); {_EXPORT}"
            )
        members: dict[str, Any] = {}
        jobs: tuple[int, int] | None = None
        prev, value, end = start, None, None
        try:
            for m in shallow_marks(data, start, level=1):
                if m.pos == start:
                    continue
                if m.kind == 1 and m.depth == 2:
                    value = (m.pos, -1)
                elif m.kind == 2 and m.depth == 1 and value is not None:
                    value = (value[0], m.pos)
                elif (m.kind == 3 and m.depth == 1) or (m.kind == 2 and m.depth == 0):
                    found = self.member(
                        prev + 1, m.pos, value, members, not members and m.kind == 2
                    )
                    if found is not None:
                        if jobs is not None:
                            raise self.error(found[0], "not sacct --json output: two 'jobs' lists")
                        jobs = found
                    prev, value = m.pos, None
                    if m.depth == 0:
                        end = m.pos
                        break
        except JsonLimitError as exc:
            raise self.error(
                exc.pos or 0,
                f"JSON nested too deeply, more than {MAX_DEPTH} levels: not sacct "
                "--json output (it nests about 10)",
            ) from None
        if end is None or data[end] != ord("}"):
            raise self.error(
                len(data) if end is None else end,
                "not valid JSON: the top-level object does not close (a truncated file?)",
            )
        if not blank(data, end + 1):
            raise self.error(end + 1, "not valid JSON: text after the top-level object")
        return members, jobs

    def member(
        self,
        lo: int,
        hi: int,
        value: tuple[int, int] | None,
        members: dict[str, Any],
        empty_ok: bool,
    ) -> tuple[int, int] | None:
        """Read one ``"key": value`` of the top-level object; the brackets of ``jobs``'s list."""
        data = self.data
        key_m = _KEY.match(data, lo, min(hi, lo + 4096))  # (names are short)
        if key_m is None:
            if empty_ok and blank(data, lo, hi):
                return None  # {}
            raise self.error(lo, 'not valid JSON: expected "name": value in the top-level object')
        try:
            key = json.loads(key_m.group(1))
        except ValueError as exc:  # a NUL, a bad escape, bytes that are not UTF-8 in the name
            raise self.error(
                key_m.start(1) + getattr(exc, "pos", getattr(exc, "start", 0)),
                f"not valid JSON: the name of a top-level member: {_why(exc)}",
            ) from None
        at = key_m.end()
        if key == "jobs" and value is not None and value[0] == at and data[at] == ord("["):
            if data[value[1]] != ord("]") or not blank(data, value[1] + 1, hi):
                raise self.error(value[1], "not valid JSON: the 'jobs' list does not close")
            return value
        if hi - lo > _MAX_OTHER_BYTES:
            raise self.error(
                lo,
                f"not sacct --json output: its top-level '{str(key)[:40]}' value is "
                f"{hi - lo:,} bytes (sacct prints a small meta/errors/warnings object)",
            )
        try:
            got, _ = loads_record(
                b"{" + data[lo:hi] + b"}", max_bytes=_MAX_OTHER_BYTES, depth_checked=True
            )
        except ValueError as exc:
            # (the parsed text is "{" + data[lo:hi] + "}")
            at = lo + max(_offset(exc) - 1, 0)
            raise self.error(
                at,
                f"not valid JSON: {_why(exc)} (in the top-level {str(key)[:40]!r})",
                _field_at(data, lo, at),
            ) from None
        members.update(got)  # type: ignore[arg-type]
        return None

    def raw(self, start: int, stop: int) -> str:
        """Return a record's text for the quarantine (its first 4096 bytes)."""
        text = self.data[start : min(stop, start + RAW_PREFIX)].decode("utf-8", "replace")
        return text.strip()


def read_sacct_json(path: str | Path, *, cluster: str | None = None) -> ReadResult:
    """Read ``sacct --json`` output (see the module notes).

    Parameters
    ----------
    path : str or Path
        The export (plain or gzip).
    cluster : str or None
        Used where a job record has no ``cluster``.

    Returns
    -------
    ReadResult
        The read, with ``jobs`` and ``job_steps``; a job record of the wrong shape, with a poison
        value, or over the size limits is one quarantined record (with its steps), named by its
        position.

    Raises
    ------
    IngestError
        If the file is not one JSON object with a ``jobs`` list (a JSON list, invalid JSON, JSON
        nested deeper than 64 levels), naming the line.
    """
    src = str(path)
    data, notes = decode_text(read_all(path))
    reader = _Reader(src, data)
    doc, span = reader.top()
    if span is None:
        raise IngestError(src, "not sacct --json output (no 'jobs' list)")
    if "jobs" in doc:  # json.loads would keep the last of two 'jobs' members
        raise IngestError(src, "not sacct --json output: two 'jobs' members")
    meta = doc.get("meta") if isinstance(doc.get("meta"), dict) else {}
    plugin_info = meta.get("plugin") if isinstance(meta.get("plugin"), dict) else {}
    plugin = str(plugin_info.get("type", ""))
    # Slurm 22.05's data_parser (dbv0.0.38) prints status SUCCESS / return code 0 for jobs
    # that exited non-zero (signals survive): such exit codes are unknown, not 0.
    old_parser = plugin.endswith("dbv0.0.38") or plugin.endswith("dbv0.0.37")
    jobs: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    spans: dict[int, tuple[int, int]] = {}
    q: tuple[list[int], list[str], list[str]] = ([], [], [])
    states = set(schema.JOB_STATES)
    fixed = n_jobs = 0
    for i, (start, stop, marks) in enumerate(list_items(data, *span, depth=2), start=1):
        n_jobs = i
        if stop - start > MAX_JOB_RECORD_BYTES or marks > MAX_JOB_RECORD_MARKS:
            q[0].append(i), q[1].append(reader.raw(start, stop))
            q[2].append(
                f"record {i}: job record of {stop - start:,} bytes and {marks:,} brackets and "
                f"commas is larger than one record may be ({MAX_JOB_RECORD_BYTES >> 20} MiB, "
                f"{MAX_JOB_RECORD_MARKS:,}: about 12,000 steps): not read; export this window "
                "with --parsable2"
            )
            continue
        repeated: list[str] = []
        try:
            j, replaced = loads_record(
                data[start:stop],
                max_bytes=MAX_JOB_RECORD_BYTES,
                what="job record",
                depth_checked=True,
                repeated_keys=repeated,
            )
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, too long an integer
            at = start + _offset(exc)
            raise reader.error(
                at,
                f"not valid JSON: {_why(exc)} (in record {i} of the jobs list)",
                field=_field_at(data, start, at),
            ) from None
        fixed += replaced
        raw = reader.raw(start, stop)
        try:
            if not isinstance(j, dict):
                raise _Bad(f"a job record must be an object, got {type(j).__name__}")
            if repeated:
                raise _Bad(
                    f"key '{repeated[0]}' appears twice in one object: the record is ambiguous "
                    "(sacct prints each key once)"
                )
            row = _row(j, cluster, old_parser)
            reason = _check(row, states)
            job_steps = _step_rows(j, row, old_parser, states) if reason is None else []
        except (
            _Bad,
            TypeError,
            ValueError,
            AttributeError,
            KeyError,
            OverflowError,
            RecursionError,
            hostlist.HostlistError,
        ) as exc:
            (
                q[0].append(i),
                q[1].append(raw),
                q[2].append(f"record {i}: malformed job record: {exc}"),
            )
            continue
        if reason:
            q[0].append(i), q[1].append(raw), q[2].append(f"record {i}: {reason}")
            continue
        row["line_no"] = i
        spans[i] = (start, stop)
        jobs.append(row)
        steps.extend(job_steps)
    if fixed:
        notes.append(
            f"{fixed} job record(s) hold lone surrogate escapes (\\ud800..., not text): "
            "replaced by U+FFFD"
        )

    def canonical(lines: list[int]) -> dict[int, str]:
        """Return the records' JSON, parsed again and printed alike (to find exact repeats)."""
        out = {}
        for ln in lines:
            value, _ = loads_record(
                data[slice(*spans[ln])], max_bytes=MAX_JOB_RECORD_BYTES, depth_checked=True
            )
            out[ln] = json.dumps(value, ensure_ascii=False, sort_keys=True)
        return out

    cols = {
        "line_no": pl.Int64,
        **{k: v for k, v in schema.TABLES["jobs"].schema.items() if k != "attempt"},
    }
    frame = pl.DataFrame(jobs, schema=cols, orient="row") if jobs else pl.DataFrame(schema=cols)
    frame, late, resize_notes = resize_segments(frame, unit="record")
    notes += resize_notes
    frame, repeats = exact_duplicates(frame, canonical)
    late += [(r, f"exact duplicate of record {f}") for r, f in repeats]
    for ln, reason in late:
        raw = reader.raw(*spans[ln]) if ln in spans else ""
        q[0].append(ln), q[1].append(raw), q[2].append(f"record {ln}: {reason}")
    if frame.height:
        note = missing_duplicates_note(frame)
        if note:
            notes.append(note)
    frame = frame.with_columns(number_attempts(frame)).select(list(schema.TABLES["jobs"].schema))
    step_frame = pl.DataFrame(steps, schema=schema.TABLES["job_steps"].schema, orient="row")
    order = sorted(range(len(q[0])), key=lambda k: q[0][k])
    qf = quarantine_frame(
        src, [q[0][k] for k in order], [q[1][k] for k in order], [q[2][k] for k in order]
    )
    # records: each job record, plus the steps of accepted jobs; a refused job is one
    # quarantined record whose raw text holds its steps
    if old_parser:
        notes.append(
            f"{plugin}: exit codes of jobs/steps that did not complete are not reliable "
            "in this Slurm version's JSON and are left null (use --parsable2 for them)"
        )
    n_read = n_jobs + len(steps)
    return ReadResult(
        src,
        {"jobs": frame, "job_steps": step_frame},
        qf,
        n_read,
        frame.height + step_frame.height,
        notes,
    )


def _check(row: dict[str, Any], states: set[str]) -> str | None:
    """Why a parsed job row cannot be kept, or None."""
    if row["cluster"] is None:
        return "no cluster in the record, and no cluster= was given"
    if row["state"] not in states:
        return f"unknown job state {row['state']!r}"
    if row["submit_time"] is None:
        return "no submission time"
    if (
        row["end_time"] is not None
        and row["start_time"] is not None
        and row["start_time"] > row["end_time"]
    ):
        return "end is before start (impossible order; not fixed)"
    return None
