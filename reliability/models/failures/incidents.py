"""Node failure incidents: distinct failures of a node, however many attempts each one ended.

A node that goes DOWN (or is drained by a health check, or throws an Xid that kills its jobs)
ends every attempt running on it at that moment: one failure of the node, not one per
attempt. Counting attempts makes a node that held three array tasks when it failed once look
like a repeat offender; counting incidents does not.

From the hardware-attributed attempts (:func:`reliability.attribute_failures`: domain
``hardware`` or ``infrastructure``), each charged to its ``culprit_node`` or, when it ran on
one node, to that node, per node in the order the attempts ended:

- an attempt that **started at or after** the previous failure on the node ran after that
  failure (the node was back in service): its failure is a new incident;
- an attempt that was already running when the previous one failed, and ended within
  ``window_min`` of it, failed in the same incident (Slurm ends every job on a node that goes
  DOWN within seconds; a health-check drain requeues them within minutes);
- otherwise (a later, separate failure of a job that survived the first) a new incident.

Every incident keeps the attempts and jobs it hit and the GPU-hours of those attempts.
"""

from __future__ import annotations

from datetime import timedelta

import polars as pl

from reliability.models.failures.mttf import HARDWARE

__all__ = ["INCIDENT_WINDOW_MIN", "failures_by_node", "node_incidents", "unattributed_failures"]

#: most time between the failures of attempts that were running together on a node for them
#: to be one incident [min] (the attribution windows of Kokolis et al. HPCA'25 §III span 15)
INCIDENT_WINDOW_MIN = 30.0
_TS = pl.Datetime("us", "UTC")
_SCHEMA = {
    "cluster": pl.String,
    "node": pl.String,
    "incident": pl.Int64,
    "first_failure": _TS,
    "last_failure": _TS,
    "attempts": pl.Int64,
    "jobs": pl.Int64,
    "gpu_hours": pl.Float64,
    "causes": pl.String,
}


def node_incidents(
    attributed: pl.DataFrame, *, window_min: float = INCIDENT_WINDOW_MIN
) -> pl.DataFrame:
    """Group hardware-attributed attempts into distinct node failures (see the module doc).

    Parameters
    ----------
    attributed : polars.DataFrame
        Attributed attempts (:func:`reliability.attribute_failures`) with ``cluster``,
        ``job_id``, ``nodes``, ``start_time``, ``end_time``, ``n_accelerators``,
        ``failure_domain``, ``failure_cause``, ``culprit_node``.
    window_min : float
        Most time between failures of attempts running together for one incident [min], >= 0.

    Returns
    -------
    polars.DataFrame
        One row per incident: ``cluster, node, incident`` (1, 2, ... per node in time order),
        ``first_failure`` and ``last_failure`` (the attempts' ends) [UTC], ``attempts`` and
        ``jobs`` it ended, ``gpu_hours`` of those attempts [GPU-h], ``causes`` (the attributed
        causes, comma-separated). Attempts charged to no node (several nodes, no culprit) are
        left out: :func:`unattributed_failures` counts them.
    """
    hw = _incidents(attributed, window_min)
    if hw is None:
        return pl.DataFrame(schema=_SCHEMA)
    out = (
        hw.group_by("cluster", "node", "incident")
        .agg(
            first_failure=pl.col("end_time").min(),
            last_failure=pl.col("end_time").max(),
            attempts=pl.len().cast(pl.Int64),
            jobs=pl.col("job_id").n_unique().cast(pl.Int64),
            gpu_hours=pl.col("gpu_h").sum(),
            causes=pl.col("failure_cause").drop_nulls().unique().sort().str.join(","),
        )
        .sort("cluster", "node", "incident")
    )
    return out.cast(_SCHEMA)  # type: ignore[arg-type]


def failures_by_node(
    attributed: pl.DataFrame, *, window_min: float = INCIDENT_WINDOW_MIN
) -> pl.DataFrame:
    """Count each node's distinct failures (incidents) and what they hit.

    Parameters
    ----------
    attributed : polars.DataFrame
        Attributed attempts (see :func:`node_incidents`).
    window_min : float
        See :func:`node_incidents` [min].

    Returns
    -------
    polars.DataFrame
        One row per node with a hardware-attributed failure, most failures first: ``cluster,
        node``, ``failures`` (incidents), ``attempts_hit`` and ``jobs_hit`` (attempts and
        distinct jobs those incidents ended), ``gpu_hours_failed`` (of those attempts [GPU-h]:
        an upper bound of the work lost), ``last_failure`` [UTC].
    """
    schema = {
        "cluster": pl.String,
        "node": pl.String,
        "failures": pl.Int64,
        "attempts_hit": pl.Int64,
        "jobs_hit": pl.Int64,
        "gpu_hours_failed": pl.Float64,
        "last_failure": _TS,
    }
    hw = _incidents(attributed, window_min)
    if hw is None:
        return pl.DataFrame(schema=schema)
    out = (
        hw.group_by("cluster", "node")
        .agg(
            failures=pl.col("incident").n_unique().cast(pl.Int64),
            attempts_hit=pl.len().cast(pl.Int64),
            jobs_hit=pl.col("job_id").n_unique().cast(pl.Int64),
            gpu_hours_failed=pl.col("gpu_h").sum(),
            last_failure=pl.col("end_time").max(),
        )
        .sort(["failures", "gpu_hours_failed", "node"], descending=[True, True, False])
    )
    return out.cast(schema)  # type: ignore[arg-type]


def _incidents(attributed: pl.DataFrame, window_min: float) -> pl.DataFrame | None:
    """Add the incident number to the charged attempts on a node (None when there are none)."""
    if window_min < 0:
        raise ValueError(f"window_min must be >= 0 minutes, got {window_min}")
    hw = _charged(attributed)
    if hw is None:
        return None
    hw = hw.drop_nulls("node")
    if hw.height == 0:
        return None
    window = timedelta(minutes=window_min)
    hw = hw.sort("cluster", "node", "end_time", "start_time", "job_id")
    prev = pl.col("end_time").shift(1).over("cluster", "node")
    new = prev.is_null() | (pl.col("start_time") >= prev) | (pl.col("end_time") - prev > window)
    return hw.with_columns(incident=new.cast(pl.Int64).cum_sum().over("cluster", "node"))


def unattributed_failures(attributed: pl.DataFrame) -> int:
    """Count hardware-attributed attempts charged to no node (several nodes, no culprit).

    Parameters
    ----------
    attributed : polars.DataFrame
        Attributed attempts (:func:`reliability.attribute_failures`).

    Returns
    -------
    int
        Attempts that :func:`node_incidents` cannot charge to a node.
    """
    hw = _charged(attributed)
    return 0 if hw is None else int(hw.get_column("node").null_count())


def _charged(attributed: pl.DataFrame) -> pl.DataFrame | None:
    """Select the ended hardware-attributed attempts with the node they are charged to (or null)."""
    if attributed.height == 0 or "failure_domain" not in attributed.columns:
        return None
    hw = attributed.filter(
        pl.col("failure_domain").is_in(HARDWARE)
        & pl.col("start_time").is_not_null()
        & pl.col("end_time").is_not_null()
    )
    return hw.select(
        pl.col("cluster").cast(pl.String),
        "job_id",
        "start_time",
        "end_time",
        pl.col("failure_cause").cast(pl.String),
        node=pl.coalesce(
            pl.col("culprit_node"),
            pl.when(pl.col("nodes").list.len() == 1).then(pl.col("nodes").list.first()),
        ).cast(pl.String),
        gpu_h=pl.col("n_accelerators").cast(pl.Float64).fill_null(0.0)
        * (pl.col("end_time") - pl.col("start_time")).dt.total_seconds().fill_null(0.0)
        / 3600.0,
    )
