"""Reader for ``sacct --json`` (Slurm's OpenAPI data_parser output) -> ``jobs`` / ``job_steps``.

Handles the 22.05 shape (``openapi/dbv0.0.38``: plain numbers, ``state.current`` a string,
``time.limit`` in minutes) and the later one (numbers wrapped as
``{"set", "infinite", "number"}``, ``state.current`` a list, step ids ``"36.batch"``). Times are
epoch seconds, so no time zone is needed. JSON has no field-delimiter problems, so it is the
most faithful export; it is loaded whole, so for years of history prefer ``--parsable2``.
Quarantine rows name the record's position in the ``jobs`` array as its "line"; a refused job
is one quarantined record (its steps go with it).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from reliability import schema
from reliability.errors import IngestError
from reliability.ingest import hostlist
from reliability.ingest._bounds import (
    MAX_ACCELERATORS_PER_JOB,
    MAX_NODES_PER_JOB,
    bounds_text,
    latest_time,
)
from reliability.ingest._common import ReadResult, quarantine_frame
from reliability.ingest._compressed import read_all
from reliability.ingest._sacct_parse import MAX_DURATION_S
from reliability.ingest._sacct_post import (
    exact_duplicates,
    missing_duplicates_note,
    number_attempts,
    resize_segments,
)

__all__ = ["read_sacct_json"]

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
    typed = [_num(t.get("count")) or 0 for t in items
             if t.get("type") == "gres" and str(t.get("name", "")).startswith("gpu:")]  # fmt: skip
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
            MAX_NODES_PER_JOB, "node count",
        ),
        "n_accelerators": _gpus(tres),
        "nodes": hostlist.expand(nodes),
        "time_limit_s": lim * 60 if lim is not None else None,
        "priority": _num(j.get("priority")),
        "topology": None,
    }  # fmt: skip
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
        out.append({
            "cluster": row["cluster"], "job_id": row["job_id"], "step": sid,
            "name": _text(_obj(s.get("step"), "step.step").get("name")),
            "start_time": _time(st.get("start"), "step.time.start"),
            "end_time": _time(st.get("end"), "step.time.end"), "state": state,
            "exit_code": code, "exit_signal": sig,
            "n_nodes": _bounded(_num(nodes.get("count")), MAX_NODES_PER_JOB, "step node count"),
            "nodes": list(names),
        })  # fmt: skip
    return out


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
        The read, with ``jobs`` and ``job_steps``; a job record of the wrong shape or with a poison
        value is one quarantined record (with its steps), named by its position.
    """
    src = str(path)
    try:
        doc = json.loads(read_all(path))
    except RecursionError:
        raise IngestError(src, "JSON nested too deeply to be sacct --json output") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise IngestError(src, f"not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise IngestError(src, "not sacct --json output (no 'jobs' list)")
    meta = doc.get("meta") if isinstance(doc.get("meta"), dict) else {}
    plugin_info = meta.get("plugin") if isinstance(meta.get("plugin"), dict) else {}
    plugin = str(plugin_info.get("type", ""))
    # Slurm 22.05's data_parser (dbv0.0.38) prints status SUCCESS / return code 0 for jobs
    # that exited non-zero (signals survive): such exit codes are unknown, not 0.
    old_parser = plugin.endswith("dbv0.0.38") or plugin.endswith("dbv0.0.37")
    notes: list[str] = []
    jobs: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    raws: dict[int, str] = {}
    q: tuple[list[int], list[str], list[str]] = ([], [], [])
    states = set(schema.JOB_STATES)
    for i, j in enumerate(doc["jobs"], start=1):
        try:
            raw = json.dumps(j, ensure_ascii=False)[:4000]
        except (RecursionError, ValueError):  # pragma: no cover - loads would have failed
            raw = "<unprintable>"
        try:
            if not isinstance(j, dict):
                raise _Bad(f"a job record must be an object, got {type(j).__name__}")
            row = _row(j, cluster, old_parser)
            reason = _check(row, states)
            job_steps = _step_rows(j, row, old_parser, states) if reason is None else []
        except (_Bad, TypeError, ValueError, AttributeError, KeyError, OverflowError,
                RecursionError, hostlist.HostlistError) as exc:  # fmt: skip
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
        raws[i] = raw
        jobs.append(row)
        steps.extend(job_steps)
    cols = {
        "line_no": pl.Int64,
        **{k: v for k, v in schema.TABLES["jobs"].schema.items() if k != "attempt"},
    }
    frame = pl.DataFrame(jobs, schema=cols, orient="row") if jobs else pl.DataFrame(schema=cols)
    frame, late, resize_notes = resize_segments(frame, unit="record")
    notes += resize_notes
    frame, repeats = exact_duplicates(frame, lambda lines: {k: raws[k] for k in lines})
    late += [(r, f"exact duplicate of record {f}") for r, f in repeats]
    for ln, reason in late:
        q[0].append(ln), q[1].append(raws.get(ln, "")), q[2].append(f"record {ln}: {reason}")
    if frame.height:
        note = missing_duplicates_note(frame)
        if note:
            notes.append(note)
    frame = frame.with_columns(number_attempts(frame)).select(list(schema.TABLES["jobs"].schema))
    step_frame = pl.DataFrame(steps, schema=schema.TABLES["job_steps"].schema, orient="row")
    order = sorted(range(len(q[0])), key=lambda k: q[0][k])
    qf = quarantine_frame(src, [q[0][k] for k in order], [q[1][k] for k in order],
                          [q[2][k] for k in order])  # fmt: skip
    # records: each job record, plus the steps of accepted jobs; a refused job is one
    # quarantined record whose raw text holds its steps
    if old_parser:
        notes.append(f"{plugin}: exit codes of jobs/steps that did not complete are not reliable "
                     "in this Slurm version's JSON and are left null (use --parsable2 for them)")  # fmt: skip
    n_read = len(doc["jobs"]) + len(steps)
    return ReadResult(src, {"jobs": frame, "job_steps": step_frame}, qf, n_read,
                      frame.height + step_frame.height, notes)  # fmt: skip


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
