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
line, else from ``cluster=``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from reliability import schema
from reliability.errors import IngestError
from reliability.ingest._common import ReadResult, quarantine_frame, read_lines

__all__ = ["POD_EVENTS", "read_pod_log"]

POD_EVENTS = (
    "inventory",
    "component_fail",
    "component_repair",
    "maintenance_start",
    "maintenance_end",
    "healthd",
)
_HEALTHD = {"machine_unhealthy": ("machine", "critical"), "ici_link_down": ("ici_link", "critical")}


def read_pod_log(path: str | Path, *, cluster: str | None = None) -> ReadResult:
    """Read a pod event log (see the module notes)."""
    src = str(path)
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
    n = 0
    for no, line in lines.iter_rows():
        if not line.strip():
            continue
        n += 1
        try:
            obj = json.loads(line)
            event = obj["event"]
            t = datetime.fromisoformat(obj["time"])
            if t.tzinfo is None:
                raise ValueError("time has no UTC offset")
            t = t.astimezone(UTC)
            clus = obj.get("cluster") or cluster
            ctype, cid = obj.get("component_type"), obj.get("component_id")
        except (ValueError, KeyError, TypeError, AttributeError, pl.exceptions.PolarsError) as exc:
            (
                q[0].append(no),
                q[1].append(line),
                q[2].append(f"not a pod event: {type(exc).__name__}: {exc}"),
            )
            continue
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
        if event == "inventory":
            inv.append({"cluster": clus, "component_type": ctype, "component_id": cid, "in_service": t,
                        "out_of_service": None})  # fmt: skip
        elif event == "component_fail":
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
                st = {"cluster": clus, "node": cid, "state": "REPAIR", "start": t, "end": None,
                      "reason": "machine failure", "user": None}  # fmt: skip
                states.append(st)
                open_fail[(clus, "state", cid)] = st
        elif event == "component_repair":
            rec = open_fail.pop(key, None)
            if rec is None:
                q[0].append(no), q[1].append(line), q[2].append("repair without an open failure")
                continue
            rec["repaired_at"] = t
            st = open_fail.pop((clus, "state", cid), None)
            if st is not None:
                st["end"] = t
        elif event == "maintenance_start":
            st = {"cluster": clus, "node": cid, "state": "MAINT", "start": t, "end": None,
                  "reason": "planned maintenance", "user": None}  # fmt: skip
            states.append(st)
            open_maint[(clus, cid)] = st
        elif event == "maintenance_end":
            st = open_maint.pop((clus, cid), None)
            if st is None:
                q[0].append(no), q[1].append(line), q[2].append("maintenance end without a start")
                continue
            st["end"] = t
        else:  # healthd
            symptom = str(obj.get("detail") or "unknown")
            component, severity = _HEALTHD.get(symptom, ("unknown", "warning"))
            health.append({"cluster": clus, "node": cid, "time": t, "source": "healthd", "component": component,
                           "code": symptom, "severity": severity, "device": None, "message": symptom})  # fmt: skip
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
    qf = quarantine_frame(src, *q)
    return ReadResult(src, tables, qf, n, n - qf.height, notes)
