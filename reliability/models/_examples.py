"""Tiny canonical tables the result classes' ``_example()`` builds their instances from.

Fourteen days of a 16-node cluster (8 GPUs a node): attributed job attempts of 1 to 8 nodes
with a few hardware failures (``failure_domain`` set as attribution would), one attempt still
running at the observation end and one CPU-only attempt; health events, drains and the
inventory of the same nodes. Deterministic (a fixed seed) and small enough that every model
runs on it in well under 0.2 s. Not statistics: a realistic shape for the contract tests.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl

from reliability.schema import TABLES

#: start of the tiny window (a Monday)
T0 = datetime(2025, 1, 6, tzinfo=UTC)
#: length of the tiny window [days]
DAYS = 14
#: the examples there are: ``"normal"``, and ``"no failures"`` (the degenerate case every
#: model has to say something sensible about)
KINDS = ("normal", "no failures")
#: nodes of the tiny cluster
NODES = [f"n{i:02d}" for i in range(16)]


def _frame(rows: list[dict], table: str) -> pl.DataFrame:
    schema = TABLES[table].schema
    return pl.DataFrame(
        [
            {c: r.get(c) for c in schema} | {k: v for k, v in r.items() if k not in schema}
            for r in rows
        ],
        schema_overrides=dict(schema),
        strict=False,
    )


def check_kind(kind: str) -> None:
    """Refuse a kind of example there is not.

    Parameters
    ----------
    kind : str
        One of :data:`KINDS`.

    Raises
    ------
    ValueError
        If it is not.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")


def tiny_jobs(seed: int = 0, *, kind: str = "normal") -> tuple[pl.DataFrame, datetime]:
    """Return attributed job attempts of the tiny cluster and the observation end.

    Parameters
    ----------
    seed : int
        Random seed (same seed, same frame).
    kind : {"normal", "no failures"}
        ``"no failures"``: the same attempts, those a hardware failure ended completing instead.

    Returns
    -------
    tuple of polars.DataFrame and datetime
        The jobs table plus ``failure_domain``, ``failure_cause`` and ``culprit_node``; the
        observation end [UTC].
    """
    check_kind(kind)
    rng = np.random.default_rng(seed)
    end = T0 + timedelta(days=DAYS)
    rows = []
    t_h = np.zeros(4)  # four slots run jobs back to back
    job = 0
    sizes = (1, 2, 4, 8)  # nodes a job of each slot holds
    while True:
        slot = int(np.argmin(t_h))
        start_h = t_h[slot]
        if start_h >= 24 * DAYS - 6:
            break
        nodes = NODES[slot * 4 : slot * 4 + sizes[slot]] if sizes[slot] <= 4 else NODES[8:16]
        dur_h = float(rng.exponential(20.0)) + 0.5
        failed = rng.random() < 0.05 * len(nodes) * dur_h / 20.0
        stop_h = start_h + dur_h
        state, domain, cause, culprit = "COMPLETED", "none", None, None
        if failed and kind != "no failures":
            state, domain, cause, culprit = "NODE_FAIL", "hardware", "gpu", nodes[0]
        elif rng.random() < 0.15:
            state, domain = "FAILED", "user"
        end_time: datetime | None = T0 + timedelta(hours=stop_h)
        if stop_h >= 24 * DAYS:
            state, domain, end_time = "RUNNING", "none", None
        rows.append(
            {
                "cluster": "tiny",
                "job_id": str(job),
                "attempt": 0,
                "state": state,
                "submit_time": T0 + timedelta(hours=start_h),
                "start_time": T0 + timedelta(hours=start_h),
                "end_time": end_time,
                "n_nodes": len(nodes),
                "n_accelerators": 8 * len(nodes),
                "nodes": nodes,
                "failure_domain": domain,
                "failure_cause": cause,
                "culprit_node": culprit,
            }
        )
        job += 1
        t_h[slot] = stop_h + 0.25
    rows.append(
        {
            "cluster": "tiny",
            "job_id": "cpu",
            "attempt": 0,
            "state": "COMPLETED",
            "submit_time": T0,
            "start_time": T0,
            "end_time": T0 + timedelta(hours=3),
            "n_nodes": 1,
            "n_accelerators": 0,
            "nodes": [NODES[0]],
            "failure_domain": "none",
            "failure_cause": None,
            "culprit_node": None,
        }
    )
    return _frame(rows, "jobs"), end


def tiny_tables(seed: int = 0, *, kind: str = "normal") -> dict[str, pl.DataFrame]:
    """Return the tiny cluster's canonical tables, as a Dataset would give them.

    Parameters
    ----------
    seed : int
        Random seed of the jobs (:func:`tiny_jobs`).
    kind : {"normal", "no failures"}
        As for :func:`tiny_jobs`.

    Returns
    -------
    dict of str to polars.DataFrame
        ``jobs`` (canonical columns only), ``attributed`` (with the attribution columns),
        ``health_events``, ``node_states``, ``inventory`` and ``component_failures``.
    """
    attributed, end = tiny_jobs(seed, kind=kind)
    jobs = attributed.select(list(TABLES["jobs"].schema))
    fails = attributed.filter(pl.col("failure_domain") == "hardware")
    events = [
        {
            "cluster": "tiny",
            "node": r["culprit_node"],
            "time": r["end_time"] - timedelta(minutes=2),
            "source": "kernel_log",
            "component": "gpu",
            "code": "79",
            "severity": "critical",
            "device": "0",
            "message": "NVRM: Xid 79, GPU has fallen off the bus",
        }
        for r in fails.iter_rows(named=True)
    ] + [
        {
            "cluster": "tiny",
            "node": NODES[3],
            "time": T0 + timedelta(days=d, hours=5),
            "source": "dcgm",
            "component": "gpu_memory",
            "code": "DBE",
            "severity": "warning",
            "device": "1",
            "message": "double-bit ECC error",
        }
        for d in (1, 4, 9)
    ]
    states = [
        {
            "cluster": "tiny",
            "node": r["culprit_node"],
            "state": "DRAIN",
            "start": r["end_time"],
            "end": r["end_time"] + timedelta(hours=6),
            "reason": "Xid 79",
            "user": "root",
        }
        for r in fails.iter_rows(named=True)
    ] + [
        {
            "cluster": "tiny",
            "node": NODES[5],
            "state": "DRAIN",
            "start": end - timedelta(hours=4),
            "end": None,
            "reason": "maintenance",
            "user": "admin",
        }
    ]
    inventory = [
        {
            "cluster": "tiny",
            "component_type": "node",
            "component_id": n,
            "in_service": T0,
            "out_of_service": None,
        }
        for n in NODES
    ]
    failures = [
        {
            "cluster": "tiny",
            "component_type": "node",
            "component_id": r["culprit_node"],
            "failed_at": r["end_time"],
            "repaired_at": r["end_time"] + timedelta(hours=6),
        }
        for r in fails.iter_rows(named=True)
    ]
    return {
        "jobs": jobs,
        "attributed": attributed,
        "health_events": _frame(events, "health_events"),
        "node_states": _frame(states, "node_states"),
        "inventory": _frame(inventory, "inventory"),
        "component_failures": _frame(failures, "component_failures"),
    }
