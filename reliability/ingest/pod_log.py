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
from reliability.errors import Hint, Hinted, IngestError
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
from reliability.ingest._spec import CLUSTER, FileHead, ReaderSample, ReaderSpec

__all__ = ["POD_EVENTS", "SPEC", "read_pod_log"]

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
_CUBES = re.compile(r"[0-9]{1,3}(,[0-9]{1,3})*")
#: a count in a detail field: ASCII digits only (str.isdigit() takes '²', which int() refuses)
_COUNT = re.compile(r"[0-9]{1,9}")
#: the states a job_end may carry
_END_STATES = ("COMPLETED", "PREEMPTED", "NODE_FAIL", "FAILED", "CANCELLED")


def _is_pod_log(head: FileHead) -> str | None:
    first = head.first_record
    if isinstance(first, dict) and "event" in first and "time" in first:
        return "a TPU pod event log (JSON lines)"
    return None


SPEC = ReaderSpec(
    kind="pod",
    summary="TPU pod event logs (JSON lines)",
    options=(CLUSTER,),
    tables=("inventory", "component_failures", "node_states", "health_events", "jobs", "job_steps"),
    signature=_is_pod_log,
    rank=60,
    sample=ReaderSample(
        "pod.jsonl",
        '{"time": "2025-01-01T00:00:00Z", "event": "inventory", "component_type": "host", '
        '"component_id": "h1", "cluster": "p"}\n'
        '{"time": "2025-01-02T00:00:00Z", "event": "component_fail", "component_type": "host", '
        '"component_id": "h1", "cluster": "p"}\n',
        {"cluster": "p"},
    ),
)


@SPEC.reads
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
    log = _PodLog(cluster)
    q: tuple[list[int], list[str], list[str]] = ([], [], [])
    n = 0
    events_seen = 0  # lines that are pod events (a JSON object with "time" and "event")
    fixed = 0
    for no, line, n_bytes in clip_lines(lines, MAX_LINE_BYTES, RAW_PREFIX).iter_rows():
        if not line.strip():
            continue
        n += 1
        obj, why, replaced = _record(line, n_bytes)
        fixed += replaced
        events_seen += why is None or not why.startswith(_NOT_EVENT)
        if why is None:
            why = log.fold(no, obj)
        if why is not None:
            q[0].append(no), q[1].append(line), q[2].append(why)
    if events_seen == 0:  # not one line is a pod event: this is not a pod event log
        first = q[2][0].removeprefix(f"{_NOT_EVENT}: ") if q[2] else None
        raise not_this_format(src, lines, "pod event line", _EXPECTED, first)
    qf = quarantine_frame(src, *q)
    return ReadResult(src, log.tables(), qf, n, n - qf.height, notes + log.notes(fixed))


def _record(line: str, n_bytes: int | None) -> tuple[dict[str, object], str | None, bool]:
    """Read one non-blank line: (the event, None, surrogates replaced) or ({}, why, False)."""
    if n_bytes is not None:
        why = (
            f"{_NOT_EVENT}: line of {n_bytes:,} bytes is longer than the "
            f"{MAX_LINE_BYTES:,}-byte limit of one JSON record: not parsed"
        )
        return {}, why, False
    return _event(line)


class _PodLog:
    """The rows of a pod event log, folded one event at a time, and its tables."""

    def __init__(self, cluster: str | None) -> None:
        self.cluster = cluster
        self.inv: list[dict[str, object]] = []
        self.fails: list[dict[str, object]] = []
        self.states: list[dict[str, object]] = []
        self.health: list[dict[str, object]] = []
        self.open_fail: dict[tuple[str, str, str], dict[str, object]] = {}
        self.fail_line: dict[tuple[object, ...], int] = {}  # line of each open failure
        self.open_maint: dict[tuple[str, str], dict[str, object]] = {}
        self.submits: dict[tuple[str, str], tuple[datetime, dict[str, str]]] = {}
        self.open_jobs: dict[tuple[str, str], dict[str, object]] = {}
        self.jobs: list[dict[str, object]] = []
        self.steps: list[dict[str, object]] = []
        self.open_reroute: dict[tuple[str, str, str], dict[str, object]] = {}
        self.crossconnects = 0
        self.named: set[str] = set()  # clusters the lines name, other than cluster=

    def fold(self, no: int, obj: dict[str, object]) -> str | None:
        """Fold the event of line ``no`` into the rows; return a quarantine reason or None."""
        event, t = str(obj["event"]), obj["time"]
        if not isinstance(t, datetime):  # (_event made it one)
            raise TypeError(f"line {no}: time not read")
        clus = obj.get("cluster") or self.cluster
        if self.cluster is not None and clus != self.cluster:
            self.named.add(str(clus))
        ctype, cid = obj.get("component_type"), obj.get("component_id")
        if event not in POD_EVENTS:
            return f"unknown event {event!r}"
        if clus is None or ctype is None or cid is None:
            return "missing cluster, component_type or component_id"
        clus, ctype, cid = str(clus), str(ctype), str(cid)
        if event in _JOB_EVENTS:
            detail = dict(
                kv.split("=", 1) for kv in str(obj.get("detail") or "").split(";") if "=" in kv
            )
            return self._job_event(event, clus, cid, t, detail)
        if event in ("preflight_fail", "healthd"):
            self._health(event, clus, cid, t, str(obj.get("detail") or ""))
            return None
        if event == "inventory":
            self.inv.append(
                {
                    "cluster": clus,
                    "component_type": ctype,
                    "component_id": cid,
                    "in_service": t,
                    "out_of_service": None,
                }
            )
            return None
        if event in ("component_fail", "component_repair"):
            return self._failure(no, event, (clus, ctype, cid), t)
        return self._maintenance(event, clus, cid, t)

    def _health(self, event: str, clus: str, node: str, t: datetime, detail: str) -> None:
        if event == "preflight_fail":
            code, source, component, severity = "preflight_fail", "preflight", "machine", "critical"
            message = f"preflight check failed ({detail})"
        else:  # healthd
            code = detail or "unknown"
            component, severity = _HEALTHD.get(code, ("unknown", "warning"))
            source, message = "healthd", code
        self.health.append(
            {
                "cluster": clus,
                "node": node,
                "time": t,
                "source": source,
                "component": component,
                "code": code,
                "severity": severity,
                "device": None,
                "message": message,
            }
        )

    def _failure(self, no: int, event: str, key: tuple[str, str, str], t: datetime) -> str | None:
        clus, ctype, cid = key
        if event == "component_fail":
            if key in self.open_fail:  # a second failure of a failed component: no repair between
                return (
                    f"{ctype} {cid} already failed at line {self.fail_line[key]} "
                    "(no repair in between)"
                )
            self.fail_line[key] = no
            rec = {
                "cluster": clus,
                "component_type": ctype,
                "component_id": cid,
                "failed_at": t,
                "repaired_at": None,
            }
            self.fails.append(rec)
            self.open_fail[key] = rec
            if ctype == "machine":
                st = _interval(clus, cid, "REPAIR", t, "machine failure")
                self.states.append(st)
                self.open_fail[(clus, "state", cid)] = st
            return None
        rec = self.open_fail.get(key)
        if rec is None:
            return "repair without an open failure"
        if t < rec["failed_at"]:  # type: ignore[operator]
            return _before(event, t, "failure", rec["failed_at"])
        del self.open_fail[key]
        rec["repaired_at"] = t
        st = self.open_fail.pop((clus, "state", cid), None)
        if st is not None:
            st["end"] = t
        return None

    def _maintenance(self, event: str, clus: str, cid: str, t: datetime) -> str | None:
        if event == "maintenance_start":
            st = _interval(clus, cid, "MAINT", t, "planned maintenance")
            self.states.append(st)
            self.open_maint[(clus, cid)] = st
            return None
        st = self.open_maint.get((clus, cid))
        if st is None:
            return "maintenance end without a start"
        if t < st["start"]:  # type: ignore[operator]
            return _before(event, t, "maintenance start", st["start"])
        del self.open_maint[(clus, cid)]
        st["end"] = t
        return None

    def _job_event(
        self, event: str, clus: str, job_id: str, t: datetime, detail: dict[str, str]
    ) -> str | None:
        """Fold one job event into the jobs / job_steps rows; returns a quarantine reason or None.

        ``job_start`` opens an attempt (cubes -> 16 hosts each, 64 chips per cube, the slice
        topology); ``job_end`` closes it with its state (NODE_FAIL = a hardware interruption);
        ``reroute_start`` / ``reroute_end`` become job steps ``ft_reroute-N`` spanning the time
        the job ran on fault-tolerant routing.
        """
        key = (clus, job_id)
        if event == "job_submit":
            self.submits[key] = (t, detail)
            return None
        if event == "crossconnect":
            if "changed" in detail and _COUNT.fullmatch(detail["changed"]):
                self.crossconnects += int(detail["changed"])
                return None
            return "crossconnect without changed=N"
        if event == "job_start":
            return self._job_start(key, t, detail)
        if event == "job_end":
            return self._job_end(key, t, detail)
        run = self.open_jobs.get(key)
        if run is None:
            return f"{event} for a job that is not running"
        if event == "reroute_start":
            if t < run["start_time"]:  # type: ignore[operator]
                return _before(event, t, "job_start", run["start_time"])
            n = sum(1 for k in self.open_reroute if k[:2] == key) + sum(
                1 for s in self.steps if (s["cluster"], s["job_id"]) == key
            )
            self.open_reroute[(clus, job_id, detail.get("ocs", "?"))] = {
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
        ending = [k for k in self.open_reroute if k[:2] == key and (ocs is None or k[2] == ocs)]
        late = [k for k in ending if t < self.open_reroute[k]["start_time"]]  # type: ignore[operator]
        if late:
            return _before(event, t, "reroute_start", self.open_reroute[late[0]]["start_time"])
        for rkey in ending:
            step = self.open_reroute.pop(rkey)
            step["end_time"], step["state"] = t, "COMPLETED"
            self.steps.append(step)
        return None

    def _job_start(self, key: tuple[str, str], t: datetime, detail: dict[str, str]) -> str | None:
        if key not in self.submits:
            return "job_start without a job_submit"
        if key in self.open_jobs:
            return "job_start while the job is already running"
        sub_t, sub = self.submits[key]
        if t < sub_t:
            return _before("job_start", t, "job_submit", sub_t)
        attempt_s, cubes = detail.get("attempt", ""), detail.get("cubes", "")
        if not (_COUNT.fullmatch(attempt_s) and int(attempt_s) <= 65535):
            return "job_start needs attempt=N (0-65535) and cubes="
        if not _CUBES.fullmatch(cubes) or cubes.count(",") >= MAX_NODES_PER_JOB // 16:
            return "job_start needs cubes=<cube numbers separated by commas>"
        hosts = _hosts(cubes)
        self.open_jobs[key] = {
            "cluster": key[0],
            "job_id": key[1],
            "attempt": int(attempt_s),
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

    def _job_end(self, key: tuple[str, str], t: datetime, detail: dict[str, str]) -> str | None:
        rec = self.open_jobs.get(key)
        if rec is None:
            return "job_end without a job_start"
        state = detail.get("state", "")
        if state not in _END_STATES:
            return f"job_end with unknown state {state!r}"
        if t < rec["start_time"]:  # type: ignore[operator]
            return _before("job_end", t, "job_start", rec["start_time"])
        reroutes = self.open_reroute
        late = [k for k in reroutes if k[:2] == key and t < reroutes[k]["start_time"]]  # type: ignore[operator]
        if late:
            return _before("job_end", t, "reroute_start", reroutes[late[0]]["start_time"])
        del self.open_jobs[key]
        rec["end_time"], rec["state"] = t, state
        rec["exit_code"] = 0 if state in ("COMPLETED", "PREEMPTED") else 1
        self.jobs.append(rec)
        for rkey in [k for k in reroutes if k[:2] == key]:
            step = reroutes.pop(rkey)
            step["end_time"] = t
            self.steps.append(step)
        return None

    def tables(self) -> dict[str, pl.DataFrame]:
        """Build the canonical tables (what is still open at the end of the log stays open)."""
        rows = {
            "inventory": self.inv,
            "component_failures": self.fails,
            "node_states": self.states,
            "health_events": self.health,
            "jobs": self.jobs + list(self.open_jobs.values()),
            "job_steps": self.steps + list(self.open_reroute.values()),
        }
        return {
            name: pl.DataFrame(r, schema=schema.TABLES[name].schema, orient="row")
            for name, r in rows.items()
        }

    def notes(self, fixed: int) -> list[str]:
        """Say what a user should know: circuits switched, text replaced, clusters named."""
        notes = []
        if self.crossconnects:
            notes.append(
                f"{self.crossconnects:,} OCS circuits switched by job starts (crossconnect events)"
            )
        if fixed:
            notes.append(
                f"{fixed} line(s) hold lone surrogate escapes (\\ud800..., not text): replaced by "
                "U+FFFD"
            )
        if self.named:
            notes.append(
                Hinted(
                    Hint("cluster", self.cluster, action=False),
                    " applies to the lines without a cluster; "
                    f"{len(self.named)} cluster(s) named by the lines themselves kept "
                    f"({', '.join(sorted(self.named)[:3])})",
                )
            )
        return notes


def _interval(clus: str, node: str, state: str, t: datetime, reason: str) -> dict[str, object]:
    """Open a node_states interval."""
    return {
        "cluster": clus,
        "node": node,
        "state": state,
        "start": t,
        "end": None,
        "reason": reason,
        "user": None,
    }


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
