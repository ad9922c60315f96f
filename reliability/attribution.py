"""Failure attribution: why did each job attempt end? (Kokolis et al. HPCA'25 §III).

Each attempt is joined with the critical health events and the node-state changes on its own
nodes around its end, as polars joins (no per-job Python loop), and classified:

- ``failure_domain``: ``none`` (completed, or still running/pending), ``user``,
  ``system_software``, ``hardware``, ``infrastructure`` (shared filesystem), ``preemption``,
  ``unknown``;
- ``failure_cause``: the taxonomy component of the evidence (``gpu``, ``gpu_memory``,
  ``ib_link``, ``filesystem``...), ``unknown`` when a node failed without a signal;
- ``culprit_node``: the node the evidence is on.

Default rule (the paper's): an attempt ended by hardware is NODE_FAIL, or FAILED (here also
REQUEUED: Slurm's state for a health-check requeue) with a critical health event on one of its
nodes from ``before_min`` minutes before its end to ``after_min`` after.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from reliability.store import Dataset

__all__ = ["DOMAINS", "attribute_failures", "attribution_quality"]

DOMAINS = ("none", "user", "system_software", "hardware", "infrastructure", "preemption", "unknown")
#: component -> failure domain of a critical event
COMPONENT_DOMAIN = {
    "filesystem": "infrastructure",
    "software": "system_software",
    "unknown": "unknown",
}
_EVIDENCE_STATES = ("FAILED", "NODE_FAIL", "REQUEUED", "BOOT_FAIL", "LAUNCH_FAILED")
_OUT_OF_SERVICE = ("DOWN", "FAIL", "DRAIN")


def _frames(source: Dataset | pl.DataFrame | pl.LazyFrame, health, states):
    """(jobs, health events, node states) as LazyFrames (None where there are none)."""
    if isinstance(source, (pl.DataFrame, pl.LazyFrame)):
        lazy = lambda f: None if f is None else (f.lazy() if isinstance(f, pl.DataFrame) else f)  # noqa: E731
        he, ns = lazy(health), lazy(states)
        if isinstance(health, pl.DataFrame) and health.height == 0:
            he = None
        if isinstance(states, pl.DataFrame) and states.height == 0:
            ns = None
        return source.lazy(), he, ns
    return source.scan("jobs"), source.scan("health_events"), source.scan("node_states")


def attribute_failures(
    source: Dataset | pl.DataFrame | pl.LazyFrame,
    *,
    before_min: float = 10.0,
    after_min: float = 5.0,
    health_events: pl.DataFrame | pl.LazyFrame | None = None,
    node_states: pl.DataFrame | pl.LazyFrame | None = None,
    lazy: bool = False,
) -> pl.DataFrame | pl.LazyFrame:
    """Classify how every job attempt ended.

    Parameters
    ----------
    source : a Dataset (read lazily), or a jobs frame (then pass ``health_events`` /
        ``node_states``)
    before_min, after_min : evidence window around the attempt's end [minutes]
    lazy : return the query as a LazyFrame instead of collecting it, so that an analysis on
        top of it can run on polars' streaming engine over data larger than memory

    Returns
    -------
    The jobs frame with ``failure_domain``, ``failure_cause``, ``culprit_node`` added.
    """
    jobs, he, ns = _frames(source, health_events, node_states)
    jobs = jobs.with_row_index("__rid")
    before, after = timedelta(minutes=before_min), timedelta(minutes=after_min)
    ended = (
        jobs.filter(
            pl.col("state").cast(pl.String).is_in(_EVIDENCE_STATES)
            & pl.col("end_time").is_not_null()
        )
        .select("__rid", "cluster", "end_time", node=pl.col("nodes"))
        .explode("node")
        .drop_nulls("node")
    )
    evidence = [pl.LazyFrame(schema={"__rid": pl.UInt32, "__cause": pl.String, "__node": pl.String,
                                     "__dist": pl.Int64, "__kind": pl.Int8})]  # fmt: skip
    ended = ended.sort("end_time")

    def nearest(events: pl.LazyFrame, time_col: str, kind: int, cause: pl.Expr) -> pl.LazyFrame:
        """Per (attempt, node): the event nearest the attempt's end within the window, as two
        as-of joins (latest before, earliest after) instead of a many-to-many join, so memory
        stays linear in the input even on nodes with thousands of events."""
        ev = events.select("cluster", "node", pl.col(time_col).alias("__t"), __cause=cause).sort(
            "__t"
        )
        back = ended.join_asof(ev, left_on="end_time", right_on="__t", by=["cluster", "node"],
                               strategy="backward", tolerance=before, check_sortedness=False)  # fmt: skip
        fwd = ended.join_asof(ev, left_on="end_time", right_on="__t", by=["cluster", "node"],
                              strategy="forward", tolerance=after, check_sortedness=False)  # fmt: skip
        return pl.concat([back, fwd]).filter(pl.col("__t").is_not_null()).select(
            "__rid", "__cause", __node=pl.col("node"),
            __dist=(pl.col("__t") - pl.col("end_time")).dt.total_microseconds().abs(), __kind=pl.lit(kind, pl.Int8),
        )  # fmt: skip

    if he is not None:
        crit = he.filter(pl.col("severity") == "critical")
        evidence.append(nearest(crit, "time", 0, pl.col("component").cast(pl.String)))
    if ns is not None:
        down = ns.filter(pl.col("state").cast(pl.String).is_in(_OUT_OF_SERVICE))
        evidence.append(nearest(down, "start", 1, pl.lit("unknown")))
    # the best evidence per attempt: a health event before a bare node-state change, then nearest
    best = (
        pl.concat(evidence, how="vertical_relaxed")
        .sort("__rid", "__kind", "__dist", "__node")
        .group_by("__rid", maintain_order=True)
        .first()
    )
    out = jobs.join(best, on="__rid", how="left", maintain_order="left")
    state = pl.col("state").cast(pl.String)
    has_health = pl.col("__kind") == 0
    evidence_domain = pl.col("__cause").replace_strict(
        COMPONENT_DOMAIN, default="hardware", return_dtype=pl.String
    )
    domain = (
        pl.when(state.is_in(["COMPLETED", "RUNNING", "PENDING", "SUSPENDED", "RESIZING"])).then(pl.lit("none"))
        .when(state == "PREEMPTED").then(pl.lit("preemption"))
        .when(state.is_in(["NODE_FAIL", "BOOT_FAIL"])).then(
            pl.when(has_health).then(evidence_domain).otherwise(pl.lit("hardware")))
        .when(state.is_in(["FAILED", "REQUEUED", "LAUNCH_FAILED"]) & has_health).then(evidence_domain)
        .when(state == "REQUEUED").then(pl.lit("unknown"))
        .otherwise(pl.lit("user"))
    )  # fmt: skip
    failed_by_evidence = pl.col("failure_domain").is_in(
        ["hardware", "infrastructure", "system_software", "unknown"]
    )
    query = (
        out.with_columns(failure_domain=domain)
        .with_columns(
            failure_cause=pl.when(failed_by_evidence).then(pl.col("__cause").fill_null("unknown")),
            culprit_node=pl.when(failed_by_evidence).then(pl.col("__node")),
        )
        .drop("__rid", "__cause", "__node", "__dist", "__kind")
    )
    return query if lazy else query.collect()


def attribution_quality(attributed: pl.DataFrame, truth: pl.DataFrame) -> dict[str, float]:
    """Precision and recall of the ``hardware``/``infrastructure`` label against a simulator's
    ``truth/attempts.parquet`` (column ``hardware``), matched on job id and attempt."""
    got = attributed.select(
        "job_id", pl.col("attempt").cast(pl.Int64),
        flagged=pl.col("failure_domain").is_in(["hardware", "infrastructure"]),
    )  # fmt: skip
    both = got.join(
        truth.select("job_id", pl.col("attempt").cast(pl.Int64), "hardware"),
        on=["job_id", "attempt"],
    )
    tp = both.filter(pl.col("flagged") & pl.col("hardware")).height
    fp = both.filter(pl.col("flagged") & ~pl.col("hardware")).height
    fn = both.filter(~pl.col("flagged") & pl.col("hardware")).height
    return {
        "precision": tp / (tp + fp) if tp + fp else float("nan"),
        "recall": tp / (tp + fn) if tp + fn else float("nan"),
        "true_positives": float(tp), "false_positives": float(fp), "false_negatives": float(fn),
    }  # fmt: skip
