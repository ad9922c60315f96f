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
from reliability.ingest._common import ReadResult, quarantine_frame, read_bytes

__all__ = ["read_sacct_json"]


def _num(v: Any) -> int | None:
    """A number, unwrapping ``{"set": .., "infinite": .., "number": ..}``; None if unset/infinite."""
    if isinstance(v, dict):
        if v.get("infinite") or not v.get("set", True):
            return None
        v = v.get("number")
    if v is None or isinstance(v, bool):
        return None
    return int(v)


def _time(v: Any) -> datetime | None:
    n = _num(v)
    return datetime.fromtimestamp(n, UTC) if n else None


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


def _gpus(tres: Any) -> int:
    items = tres.get("allocated") or tres.get("requested") or [] if isinstance(tres, dict) else []
    plain = [
        _num(t.get("count")) for t in items if t.get("type") == "gres" and t.get("name") == "gpu"
    ]
    if plain and plain[0] is not None:
        return plain[0]
    typed = [_num(t.get("count")) or 0 for t in items
             if t.get("type") == "gres" and str(t.get("name", "")).startswith("gpu:")]  # fmt: skip
    return sum(typed)


def _nodes_requested(tres: Any) -> int | None:
    items = tres.get("requested") or [] if isinstance(tres, dict) else []
    counts = [_num(t.get("count")) for t in items if t.get("type") == "node"]
    return counts[0] if counts else None


def _job_id(j: dict[str, Any]) -> str:
    arr, het = j.get("array") or {}, j.get("het") or {}
    task = _num(arr.get("task_id"))
    if task is not None:
        return f"{_num(arr.get('job_id'))}_{task}"
    if arr.get("task"):  # collapsed pending tasks, e.g. "[1-5]"
        return f"{_num(arr.get('job_id'))}_{arr['task']}"
    offset = _num(het.get("job_offset"))
    if offset is not None:
        return f"{_num(het.get('job_id'))}+{offset}"
    return str(_num(j.get("job_id")))


def read_sacct_json(path: str | Path, *, cluster: str | None = None) -> ReadResult:
    """Read ``sacct --json`` output (see the module notes).

    Parameters
    ----------
    path : the export (plain or gzip)
    cluster : used where a job record has no ``cluster``
    """
    src = str(path)
    try:
        doc = json.loads(read_bytes(path))
    except (ValueError, UnicodeDecodeError) as exc:
        raise IngestError(src, f"not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise IngestError(src, "not sacct --json output (no 'jobs' list)")
    plugin = str(((doc.get("meta") or {}).get("plugin") or {}).get("type", ""))
    # Slurm 22.05's data_parser (dbv0.0.38) prints status SUCCESS / return code 0 for jobs
    # that exited non-zero (signals survive): such exit codes are unknown, not 0.
    old_parser = plugin.endswith("dbv0.0.38") or plugin.endswith("dbv0.0.37")
    notes: list[str] = []
    jobs: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    q: tuple[list[int], list[str], list[str]] = ([], [], [])
    n_steps = 0
    states = set(schema.JOB_STATES)
    for i, j in enumerate(doc["jobs"], start=1):
        raw = json.dumps(j, ensure_ascii=False)[:4000]
        try:
            t = j.get("time") or {}
            row = {
                "cluster": j.get("cluster") or cluster,
                "job_id": _job_id(j),
                "name": j.get("name"),
                "user": j.get("user") or None,
                "account": j.get("account") or None,
                "partition": j.get("partition") or None,
                "qos": j.get("qos") or None,
                "submit_time": _time(t.get("submission")),
                "start_time": _time(t.get("start")),
                "end_time": _time(t.get("end")),
                "state": _state(j.get("state")),
                "n_nodes": _num(j.get("allocation_nodes")) or _nodes_requested(j.get("tres")) or 0,
                "n_accelerators": _gpus(j.get("tres") or {}),
                "nodes": hostlist.expand(j.get("nodes")),
                "time_limit_s": (lim * 60) if (lim := _num(t.get("limit"))) is not None else None,
                "priority": _num(j.get("priority")),
                "topology": None,
            }
            trusted = not old_parser or _state(j.get("state")) == "COMPLETED"
            row["exit_code"], row["exit_signal"] = _exit(j.get("exit_code"), trusted)
        except (TypeError, ValueError, AttributeError, hostlist.HostlistError) as exc:
            q[0].append(i), q[1].append(raw), q[2].append(f"malformed job record: {exc}")
            continue
        reason = None
        if row["cluster"] is None:
            reason = "no cluster in the record, and no cluster= was given"
        elif row["state"] not in states:
            reason = f"unknown job state {row['state']!r}"
        elif row["submit_time"] is None:
            reason = "no submission time"
        elif row["start_time"] is not None and row["submit_time"] > row["start_time"]:
            reason = "submission is after start (impossible order; not fixed)"
        elif (
            row["end_time"] is not None
            and row["start_time"] is not None
            and row["start_time"] > row["end_time"]
        ):
            reason = "end is before start (impossible order; not fixed)"
        if reason is None:
            bad_steps = [_state(st.get("state")) for st in j.get("steps") or []
                         if _state(st.get("state")) not in states]  # fmt: skip
            if bad_steps:
                reason = f"a step has unknown state {bad_steps[0]!r}"
        if reason:
            q[0].append(i), q[1].append(raw), q[2].append(reason)
            continue
        jobs.append(row)
        n_steps += len(j.get("steps") or [])
        for s in j.get("steps") or []:
            sid = str((s.get("step") or {}).get("id", ""))
            sid = sid.split(".", 1)[1] if "." in sid else sid
            code, sig = _exit(
                s.get("exit_code"), not old_parser or _state(s.get("state")) == "COMPLETED"
            )
            st = s.get("time") or {}
            nodes = s.get("nodes") or {}
            steps.append({
                "cluster": row["cluster"], "job_id": row["job_id"], "step": sid,
                "name": (s.get("step") or {}).get("name"), "start_time": _time(st.get("start")),
                "end_time": _time(st.get("end")), "state": _state(s.get("state")),
                "exit_code": code, "exit_signal": sig, "n_nodes": _num(nodes.get("count")),
                "nodes": list(nodes.get("list") or []),
            })  # fmt: skip
    frame = pl.DataFrame(jobs, schema={k: v for k, v in schema.TABLES["jobs"].schema.items() if k != "attempt"},
                         orient="row") if jobs else schema.empty("jobs").drop("attempt")  # fmt: skip
    frame = (
        frame.with_row_index("__order")
        .sort("cluster", "job_id", "start_time", "submit_time", "__order", nulls_last=True)
        .with_columns(attempt=pl.int_range(pl.len(), dtype=pl.UInt16).over("cluster", "job_id"))
        .sort("__order")
        .select(list(schema.TABLES["jobs"].schema))
    )
    step_frame = pl.DataFrame(steps, schema=schema.TABLES["job_steps"].schema, orient="row")
    qf = quarantine_frame(src, *q)
    # records: each job record, plus the steps of accepted jobs; a refused job is one
    # quarantined record whose raw text holds its steps
    if old_parser:
        notes.append(f"{plugin}: exit codes of jobs/steps that did not complete are not reliable "
                     "in this Slurm version's JSON and are left null (use --parsable2 for them)")  # fmt: skip
    return ReadResult(src, {"jobs": frame, "job_steps": step_frame}, qf,
                      len(doc["jobs"]) + n_steps, len(jobs) + len(steps), notes)  # fmt: skip
