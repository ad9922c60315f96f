"""Attribution as an analysis: every attempt of a Dataset with how it ended, and why.

:func:`attribute` runs :func:`reliability.attribution.attribute_failures` on a Dataset and
keeps what the models downstream need beside the attributed attempts: the window used, the
observation end, the reason table, the GPUs per node (Kokolis et al. HPCA'25 §III).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import polars as pl

from reliability._result import Result
from reliability.attribution import attribute_failures, zone_mismatch_note
from reliability.reasons import ReasonRules, reason_table

if TYPE_CHECKING:
    from reliability.parallel import Executor
    from reliability.store import Dataset

__all__ = ["DEFAULT_GPUS_PER_NODE", "AttributionResult", "attribute", "gpus_per_node_of"]

#: GPUs per node assumed when no job in the data says (the HGX / DGX node of both papers)
DEFAULT_GPUS_PER_NODE = 8


@dataclass
class AttributionResult(Result):
    """Every attempt with how it ended (:func:`reliability.attribute_failures`).

    Attributes
    ----------
    jobs : polars.DataFrame
        The attributed attempts.
    before_min, after_min : float
        The evidence window around each end [min].
    requeue_exit_codes : tuple of int
        RequeueExit / RequeueExitHold codes taken as the user's requests.
    observation_end : datetime or None
        The data's end [UTC] (attempts open then are censored downstream).
    reasons : polars.DataFrame
        Every reason a node left service with, its class and the failed attempts it explains
        (:func:`reliability.reasons.reason_table`).
    gpus_per_node : int
        GPUs per node the models downstream turn GPUs into nodes with (given, or the most one
        node held in the data: :func:`gpus_per_node_of`).
    gpus_per_node_basis : str
        Where ``gpus_per_node`` comes from.
    """

    title = "Failure attribution (Kokolis et al. HPCA'25 §III)"
    jobs: pl.DataFrame
    before_min: float
    after_min: float
    requeue_exit_codes: tuple[int, ...]
    observation_end: datetime | None
    reasons: pl.DataFrame = field(default_factory=pl.DataFrame)
    notes: list[str] = field(default_factory=list)
    gpus_per_node: int = 8
    gpus_per_node_basis: str = "assumed"

    @property
    def summary(self) -> pl.DataFrame:
        """Attempts by failure domain (``failure_domain``, ``attempts``)."""
        return (
            self.jobs.group_by(pl.col("failure_domain").cast(pl.String))
            .agg(attempts=pl.len().cast(pl.Int64))
            .sort("attempts", "failure_domain", descending=[True, False])
        )

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the result: attempts attributed."""
        return {"attempts": self.jobs.height}

    def _lines(self) -> list[str]:
        return [
            f"{self.jobs.height:,} attempts attributed (evidence from {self.before_min:g} min before an "
            f"attempt's end to {self.after_min:g} min after)",
            f"GPUs per node: {self.gpus_per_node} ({self.gpus_per_node_basis})",
        ]

    @classmethod
    def _example(cls, kind: str = "normal") -> AttributionResult:
        """Build a tiny instance: the attempts of a 14-day, 16-node cluster attributed (for contract tests).

        ``kind="no failures"``: the same without hardware failures.
        """
        from reliability.attribution import attribute_failures
        from reliability.models._examples import tiny_jobs, tiny_tables
        from reliability.reasons import reason_table

        t = tiny_tables(kind=kind)
        jobs = attribute_failures(
            t["jobs"], health_events=t["health_events"], node_states=t["node_states"]
        )
        return cls(
            jobs=jobs,
            before_min=10.0,
            after_min=5.0,
            requeue_exit_codes=(),
            observation_end=tiny_jobs(kind=kind)[1],
            reasons=reason_table(jobs, t["node_states"]),
        )


def gpus_per_node_of(jobs: pl.DataFrame | pl.LazyFrame) -> tuple[int, str]:
    """Infer the GPUs per node from the jobs: the most one node of one started attempt held.

    Parameters
    ----------
    jobs : polars.DataFrame or polars.LazyFrame
        Job attempts with ``n_accelerators`` and ``n_nodes`` (a LazyFrame, e.g. a fleet's
        attributed parts, is read for those columns only).

    Returns
    -------
    (int, str)
        GPUs per node, and where it comes from (:data:`DEFAULT_GPUS_PER_NODE` when no attempt
        held a GPU).
    """
    seen = 0
    names = jobs.collect_schema().names()
    if {"n_accelerators", "n_nodes"} <= set(names):
        started = (
            jobs.lazy().filter(pl.col("start_time").is_not_null())
            if "start_time" in names
            else jobs.lazy()
        )
        v = (
            started.select(
                (pl.col("n_accelerators") / pl.col("n_nodes").clip(lower_bound=1)).ceil().max()
            )
            .collect(engine="streaming")
            .item()
        )
        seen = int(v) if v is not None else 0
    if seen >= 1:
        return seen, "the most one node held in the data"
    return DEFAULT_GPUS_PER_NODE, f"no job held a GPU: {DEFAULT_GPUS_PER_NODE} assumed"


def attribute(
    dataset: Dataset,
    *,
    before_min: float = 10.0,
    after_min: float = 5.0,
    requeue_exit_codes: tuple[int, ...] = (),
    reasons: ReasonRules | None = None,
    gpus_per_node: int | None = None,
    executor: Executor | None = None,
) -> AttributionResult:
    """Attribute every attempt of a Dataset (Kokolis et al. HPCA'25 §III).

    Parameters
    ----------
    dataset : Dataset
        The cluster's Dataset.
    before_min, after_min : float
        Evidence window around each attempt's end [min] (paper: 10, 5).
    requeue_exit_codes : tuple of int
        The cluster's RequeueExit / RequeueExitHold codes.
    reasons : ReasonRules or None
        Reason rules (None: the built-in ones).
    gpus_per_node : int or None
        GPUs per node; None: inferred from the data (:func:`gpus_per_node_of`).
    executor : Executor or None
        Attribute one cluster per task on it (:func:`~reliability.analyses.distributed.attribute_by_cluster`:
        Dask, any scheduler address); None: in this process. The result is the same.

    Returns
    -------
    AttributionResult
        The attributed attempts, the reason table, the GPUs per node and a note when the
        node states look recorded in another time zone than the jobs.
    """
    if gpus_per_node is not None and gpus_per_node < 1:
        raise ValueError(f"gpus_per_node: expected an integer >= 1, got {gpus_per_node}")
    rules = reasons if reasons is not None else ReasonRules()
    options = {
        "before_min": before_min,
        "after_min": after_min,
        "requeue_exit_codes": requeue_exit_codes,
        "reasons": rules,
    }
    if executor is not None:
        from reliability.analyses.distributed import attribute_by_cluster

        jobs = attribute_by_cluster(dataset, executor, **options)
    else:
        jobs = attribute_failures(dataset, **options)
    states = dataset.scan("node_states")
    zone = zone_mismatch_note(jobs, states)
    stray = _cluster_mismatch_note(jobs, dataset)
    if gpus_per_node is None:
        per_node, basis = gpus_per_node_of(jobs)
    else:
        per_node, basis = gpus_per_node, "given"
    return AttributionResult(
        jobs=jobs,
        before_min=before_min,
        after_min=after_min,
        requeue_exit_codes=tuple(requeue_exit_codes),
        observation_end=dataset.observation_end,
        reasons=reason_table(jobs, states, rules),
        notes=[n for n in (zone, stray) if n],
        gpus_per_node=per_node,
        gpus_per_node_basis=basis,
    )


def _cluster_mismatch_note(jobs: pl.DataFrame, dataset: Dataset) -> str | None:
    """Say when health events or node states name a cluster no job ran on.

    Evidence joins attempts by cluster and node: rows of another cluster name (a kernel-log or
    DCGM input ingested under a placeholder name) explain nothing, yet their times still widen
    the node inventory's window. Nothing is said when the Dataset holds no jobs.
    """
    if jobs.height == 0:
        return None
    job_clusters = set(jobs.get_column("cluster").unique().to_list())
    stray: dict[str, int] = {}
    for table in ("health_events", "node_states"):
        counts = (
            dataset.scan(table)
            .filter(~pl.col("cluster").is_in(sorted(job_clusters)))
            .group_by("cluster")
            .len()
            .collect()
        )
        for cluster, n in counts.iter_rows():
            stray[cluster] = stray.get(cluster, 0) + n
    if not stray:
        return None
    named = ", ".join(f"{c!r} ({n:,} rows)" for c, n in sorted(stray.items()))
    jobs_on = ", ".join(repr(c) for c in sorted(job_clusters))
    return (
        f"health events or node states of cluster {named} match no job attempt (the jobs ran on "
        f"{jobs_on}): they are no evidence for any failure, and their times still count in the "
        "nodes' observed window; if they are the same cluster, ingest those inputs again under "
        "the jobs' cluster name"
    )
