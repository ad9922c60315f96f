"""Reader of the TPU pod event log (JSON lines) -> canonical tables.

One JSON object per line with ``time`` (ISO 8601, UTC), ``event`` and fields per event:

===================  ===============================================  =====================
event                fields                                           table
===================  ===============================================  =====================
inventory            component_type, component_id                     inventory
component_fail       component_type, component_id                     component_failures,
component_repair     component_type, component_id                     node_states (machines)
maintenance_start    component_type, component_id                     node_states (MAINT)
maintenance_end      component_type, component_id
healthd              component_id (the host), detail (the symptom)    health_events
===================  ===============================================  =====================

A failure without a repair in the log is still open (``repaired_at`` null). Machine failures
and maintenance become node_states intervals (REPAIR / MAINT). ``cluster`` comes from each
line, else from ``cluster=``. A file in which no line is a JSON object with ``time`` and ``event``
(a JSON document, an image, random text) is refused with an
:class:`~reliability.errors.IngestError`; a file with some such lines keeps them and
quarantines the others.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from reliability import schema
from reliability.errors import IngestError
from reliability.ingest._bounds import (
    MAX_NODES_PER_JOB,
    bounds_text,
    latest_time,
    time_out_of_bounds,
)
from reliability.ingest._common import (
    ReadResult,
    check_name_option,
    clip_lines,
    not_this_format,
    quarantine_frame,
    read_lines,
)
from reliability.ingest._json import (
    MAX_LINE_BYTES,
    RAW_PREFIX,
    JsonLimitError,
    JsonValueError,
    loads_record,
)

__all__ = ["POD_EVENTS", "read_pod_log"]

POD_EVENTS = (
    "inventory",
    "component_fail",
    "component_repair",
    "maintenance_start",
    "maintenance_end",
    "healthd",
    "job_submit",
    "job_start",
    "job_end",
    "reroute_start",
    "reroute_end",
    "preflight_fail",
    "crossconnect",
)
_JOB_EVENTS = ("job_submit", "job_start", "job_end", "reroute_start", "reroute_end", "crossconnect")
_HEALTHD = {"machine_unhealthy": ("machine", "critical"), "ici_link_down": ("ici_link", "critical")}


def read_pod_log(path: str | Path, *, cluster: str | None = None) -> ReadResult:
    """Read a pod event log (see the module notes for the event types and their fields).

    Parameters
    ----------
    path : str or Path
        The JSON-lines event log (plain or compressed).
    cluster : str or None
        Cluster name to record on every row; None: the name the log's events carry.

    Returns
    -------
    ReadResult
        Inventory, component failures, state intervals, health events, jobs and steps; every
        malformed line quarantined with the reason.

    Raises
    ------
    IngestError
        If the file is empty, no line of it is a pod event (a JSON object with ``time`` and
        ``event``: the file is not a pod event log), or ``cluster`` is not a valid name.
    """
    src = str(path)
    check_name_option(src, cluster, "cluster")
    lines, notes = read_lines(path)
    if lines.height == 0:
        raise IngestError(src, "empty file")
    q: tuple[list[int], list[str], list[str]] = ([], [], [])
    inv: list[dict[str, object]] = []
    fails: list[dict[str, object]] = []
    states: list[dict[str, object]] = []
    health: list[dict[str, object]] = []
    open_fail: dict[tuple[str, str, str], dict[str, object]] = {}
    open_maint: dict[tuple[str, str], dict[str, object]] = {}
    submits: dict[tuple[str, str], tuple[datetime, dict[str, str]]] = {}
    open_jobs: dict[tuple[str, str], dict[str, object]] = {}
    jobs: list[dict[str, object]] = []
    steps: list[dict[str, object]] = []
    open_reroute: dict[tuple[str, str], dict[str, object]] = {}
    crossconnects = 0
    n = 0
    events_seen = 0  # lines that are pod events (a JSON object with "time" and "event")
    named: set[str] = set()  # clusters the lines name, other than cluster=
    fixed = 0
    fail_line: dict[tuple[object, ...], int] = {}  # line of each open failure
    for no, line, n_bytes in clip_lines(lines, MAX_LINE_BYTES, RAW_PREFIX).iter_rows():
        if not line.strip():
            continue
        n += 1
        if n_bytes is not None:
            why = (
                f"{_NOT_EVENT}: line of {n_bytes:,} bytes is longer than the "
                f"{MAX_LINE_BYTES:,}-byte limit of one JSON record: not parsed"
            )
            q[0].append(no), q[1].append(line), q[2].append(why)
            continue
        obj, why, replaced = _event(line)
        fixed += replaced
        events_seen += why is None or not why.startswith(_NOT_EVENT)
        if why is not None:
            q[0].append(no), q[1].append(line), q[2].append(why)
            continue
        event, t = obj["event"], obj["time"]
        clus = obj.get("cluster") or cluster
        if cluster is not None and clus != cluster:
            named.add(clus)
        ctype, cid = obj.get("component_type"), obj.get("component_id")
        if event not in POD_EVENTS:
            q[0].append(no), q[1].append(line), q[2].append(f"unknown event {event!r}")
            continue
        if clus is None or ctype is None or cid is None:
            (
                q[0].append(no),
                q[1].append(line),
                q[2].append("missing cluster, component_type or component_id"),
            )
            continue
        key = (clus, ctype, cid)
        if event in _JOB_EVENTS:
            detail = dict(
                kv.split("=", 1) for kv in str(obj.get("detail") or "").split(";") if "=" in kv
            )
            problem = _job_event(
                event, clus, cid, t, detail, submits, open_jobs, jobs, steps, open_reroute
            )
            if problem:
                q[0].append(no), q[1].append(line), q[2].append(problem)
            elif event == "crossconnect":
                crossconnects += int(detail.get("changed", 0))
            continue
        if event == "preflight_fail":
            health.append(
                {
                    "cluster": clus,
                    "node": cid,
                    "time": t,
                    "source": "preflight",
                    "component": "machine",
                    "code": "preflight_fail",
                    "severity": "critical",
                    "device": None,
                    "message": f"preflight check failed ({obj.get('detail') or ''})",
                }
            )
            continue
        if event == "inventory":
            inv.append(
                {
                    "cluster": clus,
                    "component_type": ctype,
                    "component_id": cid,
                    "in_service": t,
                    "out_of_service": None,
                }
            )
        elif event == "component_fail":
            if key in open_fail:  # a second failure of a failed component: no repair between
                why = (
                    f"{ctype} {cid} already failed at line {fail_line[key]} (no repair in between)"
                )
                q[0].append(no), q[1].append(line), q[2].append(why)
                continue
            fail_line[key] = no
            rec = {
                "cluster": clus,
                "component_type": ctype,
                "component_id": cid,
                "failed_at": t,
                "repaired_at": None,
            }
            fails.append(rec)
            open_fail[key] = rec
            if ctype == "machine":
                st = {
                    "cluster": clus,
                    "node": cid,
                    "state": "REPAIR",
                    "start": t,
                    "end": None,
                    "reason": "machine failure",
                    "user": None,
                }
                states.append(st)
                open_fail[(clus, "state", cid)] = st
        elif event == "component_repair":
            rec = open_fail.get(key)
            if rec is None:
                q[0].append(no), q[1].append(line), q[2].append("repair without an open failure")
                continue
            if t < rec["failed_at"]:  # type: ignore[operator]
                (
                    q[0].append(no),
                    q[1].append(line),
                    q[2].append(_before(event, t, "failure", rec["failed_at"])),
                )
                continue
            del open_fail[key]
            rec["repaired_at"] = t
            st = open_fail.pop((clus, "state", cid), None)
            if st is not None:
                st["end"] = t
        elif event == "maintenance_start":
            st = {
                "cluster": clus,
                "node": cid,
                "state": "MAINT",
                "start": t,
                "end": None,
                "reason": "planned maintenance",
                "user": None,
            }
            states.append(st)
            open_maint[(clus, cid)] = st
        elif event == "maintenance_end":
            st = open_maint.get((clus, cid))
            if st is None:
                q[0].append(no), q[1].append(line), q[2].append("maintenance end without a start")
                continue
            if t < st["start"]:  # type: ignore[operator]
                (
                    q[0].append(no),
                    q[1].append(line),
                    q[2].append(_before(event, t, "maintenance start", st["start"])),
                )
                continue
            del open_maint[(clus, cid)]
            st["end"] = t
        else:  # healthd
            symptom = str(obj.get("detail") or "unknown")
            component, severity = _HEALTHD.get(symptom, ("unknown", "warning"))
            health.append(
                {
                    "cluster": clus,
                    "node": cid,
                    "time": t,
                    "source": "healthd",
                    "component": component,
                    "code": symptom,
                    "severity": severity,
                    "device": None,
                    "message": symptom,
                }
            )
    if events_seen == 0:  # not one line is a pod event: this is not a pod event log
        first = q[2][0].removeprefix(f"{_NOT_EVENT}: ") if q[2] else None
        raise not_this_format(src, lines, "pod event line", _EXPECTED, first)
    tables = {
        "inventory": pl.DataFrame(inv, schema=schema.TABLES["inventory"].schema, orient="row"),
        "component_failures": pl.DataFrame(
            fails, schema=schema.TABLES["component_failures"].schema, orient="row"
        ),
        "node_states": pl.DataFrame(
            states, schema=schema.TABLES["node_states"].schema, orient="row"
        ),
        "health_events": pl.DataFrame(
            health, schema=schema.TABLES["health_events"].schema, orient="row"
        ),
    }
    for rec in open_jobs.values():  # still running at the end of the log
        jobs.append(rec)
    for rec in open_reroute.values():
        steps.append(rec)
    tables["jobs"] = pl.DataFrame(jobs, schema=schema.TABLES["jobs"].schema, orient="row")
    tables["job_steps"] = pl.DataFrame(
        steps, schema=schema.TABLES["job_steps"].schema, orient="row"
    )
    if crossconnects:
        notes.append(f"{crossconnects:,} OCS circuits switched by job starts (crossconnect events)")
    qf = quarantine_frame(src, *q)
    if fixed:
        notes.append(
            f"{fixed} line(s) hold lone surrogate escapes (\\ud800..., not text): replaced by U+FFFD"
        )
    if named:
        notes.append(
            f"cluster={cluster!r} applies to the lines without a cluster; {len(named)} cluster(s) "
            f"named by the lines themselves kept ({', '.join(sorted(named)[:3])})"
        )
    return ReadResult(src, tables, qf, n, n - qf.height, notes)


_STR_FIELDS = ("event", "time", "cluster", "component_type", "component_id", "detail")
#: the start of the reason of a line that is not a pod event at all (not a JSON object with
#: "time" and "event")
_NOT_EVENT = "not a pod event"
#: the form read, for the refusal of a file that holds no pod event
_EXPECTED = (
    'JSON lines, one object per line with "time" and "event", e.g. `{"time": '
    '"2025-01-01T00:00:00Z", "event": "component_fail", "component_type": "machine", '
    '"component_id": "h1"}`'
)


def _event(line: str) -> tuple[dict[str, object], str | None, bool]:
    """Read one log line.

    Returns (object with ``time`` as a UTC datetime, None, whether lone surrogate escapes were
    replaced) or ({}, why, False).
    """
    try:
        obj, replaced = loads_record(line, strict=True)
    except JsonLimitError as exc:
        return {}, f"{_NOT_EVENT}: {exc}", False
    except JsonValueError as exc:
        return {}, str(exc), False
    except ValueError as exc:
        return {}, f"{_NOT_EVENT}: not valid JSON: {str(exc)[:120]}", False
    if not isinstance(obj, dict):
        return {}, f"{_NOT_EVENT}: the line is not a JSON object", False
    for key in ("event", "time"):
        if key not in obj:
            return {}, f"{_NOT_EVENT}: no {key!r}", False
        if not isinstance(obj[key], str):
            return {}, f"field {key}: expected a string, got {_json_type(obj[key])}", False
    for key in _STR_FIELDS:
        v = obj.get(key)
        if v is not None and not isinstance(v, str):
            return {}, f"field {key}: expected a string, got {_json_type(v)}", False
    try:
        t = datetime.fromisoformat(obj["time"])
    except ValueError:
        return {}, f"field time: {obj['time'][:40]!r} is not an ISO-8601 time", False
    if t.tzinfo is None or t.utcoffset() is None:
        return {}, "field time: time has no UTC offset", False
    shown = f"field time: {obj['time'][:40]!r} is"
    try:
        t = t.astimezone(UTC)
    except (OverflowError, ValueError):
        return {}, f"{shown} {bounds_text(latest_time())}", False
    if (outside := time_out_of_bounds(t)) is not None:
        return {}, f"{shown} {outside}", False
    obj["time"] = t
    return obj, None, replaced


_CUBES = re.compile(r"[0-9]{1,3}(,[0-9]{1,3})*")
#: a count in a detail field: ASCII digits only (str.isdigit() takes '²', which int() refuses)
_COUNT = re.compile(r"[0-9]{1,9}")


def _before(event: str, t: datetime, what: str, then: object) -> str:
    """Word the quarantine reason of an event that ends something before it began."""
    shown = then.isoformat() if isinstance(then, datetime) else str(then)
    return f"{event} at {t.isoformat()}, before its {what} at {shown} (impossible order; not fixed)"


def _json_type(v: object) -> str:
    """Name a JSON value's type as JSON does (null, a boolean, a number...)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    return "an object" if isinstance(v, dict) else "an array"


def _hosts(cubes: str) -> list[str]:
    return [f"c{int(c):02d}-h{h:02d}" for c in cubes.split(",") if c for h in range(16)]


def _job_event(
    event, clus, job_id, t, detail, submits, open_jobs, jobs, steps, open_reroute
) -> str | None:
    """Fold one job event into the jobs / job_steps rows; returns a quarantine reason or None.

    ``job_start`` opens an attempt (cubes -> 16 hosts each, 64 chips per cube, the slice
    topology); ``job_end`` closes it with its state (NODE_FAIL = a hardware interruption);
    ``reroute_start`` / ``reroute_end`` become job steps ``ft_reroute-N`` spanning the time
    the job ran on fault-tolerant routing.
    """
    key = (clus, job_id)
    if event == "job_submit":
        submits[key] = (t, detail)
        return None
    if event == "crossconnect":
        return (
            None
            if "changed" in detail and _COUNT.fullmatch(detail["changed"])
            else "crossconnect without changed=N"
        )
    if event == "job_start":
        if key not in submits:
            return "job_start without a job_submit"
        if key in open_jobs:
            return "job_start while the job is already running"
        sub_t, sub = submits[key]
        if t < sub_t:
            return _before(event, t, "job_submit", sub_t)
        attempt_s, cubes = detail.get("attempt", ""), detail.get("cubes", "")
        if not (_COUNT.fullmatch(attempt_s) and int(attempt_s) <= 65535):
            return "job_start needs attempt=N (0-65535) and cubes="
        if not _CUBES.fullmatch(cubes) or cubes.count(",") >= MAX_NODES_PER_JOB // 16:
            return "job_start needs cubes=<cube numbers separated by commas>"
        attempt = int(attempt_s)
        hosts = _hosts(cubes)
        open_jobs[key] = {
            "cluster": clus,
            "job_id": job_id,
            "attempt": attempt,
            "name": None,
            "user": None,
            "account": None,
            "partition": None,
            "qos": sub.get("prio"),
            "submit_time": sub_t,
            "start_time": t,
            "end_time": None,
            "state": "RUNNING",
            "exit_code": None,
            "exit_signal": None,
            "n_nodes": len(hosts),
            "n_accelerators": 4 * len(hosts),
            "nodes": hosts,
            "time_limit_s": None,
            "priority": 1 if sub.get("prio") == "prod" else 0,
            "topology": detail.get("topology"),
        }
        return None
    if event == "job_end":
        rec = open_jobs.get(key)
        if rec is None:
            return "job_end without a job_start"
        state = detail.get("state", "")
        if state not in ("COMPLETED", "PREEMPTED", "NODE_FAIL", "FAILED", "CANCELLED"):
            return f"job_end with unknown state {state!r}"
        if t < rec["start_time"]:
            return _before(event, t, "job_start", rec["start_time"])
        late = [k for k in open_reroute if k[:2] == key and t < open_reroute[k]["start_time"]]
        if late:
            return _before(event, t, "reroute_start", open_reroute[late[0]]["start_time"])
        del open_jobs[key]
        rec["end_time"], rec["state"] = t, state
        rec["exit_code"] = 0 if state in ("COMPLETED", "PREEMPTED") else 1
        jobs.append(rec)
        for rkey in [k for k in open_reroute if k[:2] == key]:
            step = open_reroute.pop(rkey)
            step["end_time"] = t
            steps.append(step)
        return None
    run = open_jobs.get(key)
    if run is None:
        return f"{event} for a job that is not running"
    if event == "reroute_start":
        if t < run["start_time"]:
            return _before(event, t, "job_start", run["start_time"])
        n = sum(1 for k in open_reroute if k[:2] == key) + sum(
            1 for s in steps if (s["cluster"], s["job_id"]) == key
        )
        open_reroute[(clus, job_id, detail.get("ocs", "?"))] = {
            "cluster": clus,
            "job_id": job_id,
            "step": f"ft_reroute-{n}",
            "name": f"ft_reroute {detail.get('ocs', '?')} tax={detail.get('tax', '?')}",
            "start_time": t,
            "end_time": None,
            "state": "RUNNING",
            "exit_code": None,
            "exit_signal": None,
            "n_nodes": run["n_nodes"],
            "nodes": run["nodes"],
        }
        return None
    # reroute_end: this OCS's reroute, or (job ended) all of them
    ocs = detail.get("ocs")
    ending = [k for k in open_reroute if k[:2] == key and (ocs is None or k[2] == ocs)]
    late = [k for k in ending if t < open_reroute[k]["start_time"]]
    if late:
        return _before(event, t, "reroute_start", open_reroute[late[0]]["start_time"])
    for rkey in ending:
        step = open_reroute.pop(rkey)
        step["end_time"], step["state"] = t, "COMPLETED"
        steps.append(step)
    return None
