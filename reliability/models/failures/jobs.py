"""Per-job failure impact: interruptions, secondary preemptions, crash loops, costly job names.

Which jobs were interrupted, how often and why, which requeues preempted other jobs, which
jobs crash-loop, and which job names lose most to hardware.

Kokolis et al. HPCA'25 §IV-C (Fig. 8): the requeue of a hardware-failed job can preempt
lower-priority jobs to get its nodes back (a *secondary preemption*; 16% of the failure
overhead on RSC-1, and "one 1024-GPU job requeued 35 times caused 548 preemptions"). A
preemption counts as secondary when it ends within ``tolerance_s`` before the start of an
attempt that follows a hardware-ended attempt of another job, on a node both used; the
restarting job is its cause.

GPU time is ``n_accelerators × (end − start)`` of each attempt, an attempt still running at
the observation end counted up to it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl

from reliability.models.failures.mttf import HARDWARE

__all__ = [
    "CRASH_LOOP_MIN_REQUEUES",
    "crash_loops",
    "gpu_hours",
    "hardware_failed_jobs",
    "job_interruptions",
    "match_secondary_preemptions",
]

#: a job crash-loops when at least this many of its attempts ended by something other than a
#: preemption and were requeued
CRASH_LOOP_MIN_REQUEUES = 3
_TS = pl.Datetime("us", "UTC")


def gpu_hours(frame: pl.DataFrame, observation_end: datetime | None = None) -> pl.DataFrame:
    """Add the GPU time of each attempt.

    GPU time is ``n_accelerators × (end − start)``: 0 for an attempt that never started; an
    attempt without an end counts up to ``observation_end`` (0 without one).

    Parameters
    ----------
    frame : polars.DataFrame
        Attempts with ``n_accelerators``, ``start_time``, ``end_time``.
    observation_end : datetime or None
        When the data end [UTC]; ends are also capped there.

    Returns
    -------
    polars.DataFrame
        ``frame`` with a ``gpu_hours`` column [GPU-h].
    """
    end = pl.col("end_time")
    if observation_end is not None:
        end = pl.min_horizontal(
            end.fill_null(pl.lit(observation_end).cast(_TS)), pl.lit(observation_end).cast(_TS)
        )
    hours = ((end - pl.col("start_time")).dt.total_microseconds() / 3.6e9).clip(lower_bound=0.0)
    return frame.with_columns(
        gpu_hours=pl.col("n_accelerators").cast(pl.Float64).fill_null(0.0) * hours.fill_null(0.0)
    )


def match_secondary_preemptions(
    attributed: pl.DataFrame, *, tolerance_s: float = 60.0, observation_end: datetime | None = None
) -> pl.DataFrame:
    """Find the preempted attempts that a hardware-failed job's restart caused.

    Kokolis et al., HPCA '25, §IV-C, Fig. 8 (see the module doc for the matching rule).

    Parameters
    ----------
    attributed : polars.DataFrame
        Attributed attempts (:func:`reliability.attribution.attribute_failures`).
    tolerance_s : float
        How long before the restart's start a preemption may end and still count as caused by it
        [s].
    observation_end : datetime or None
        When the data end [UTC], for the GPU time of attempts still running.

    Returns
    -------
    polars.DataFrame
        One row per secondary preemption: ``cluster``, ``job_id`` and ``attempt`` of the
        preempted attempt, its ``gpu_hours`` [GPU-h], and the ``cause_job_id`` whose restart
        preempted it.
    """
    # The attempts are sorted and filtered on their narrow columns; the host lists (hundreds
    # of MiB at a million attempts) are gathered for the few restarts and preemptions only.
    hw_prev = (
        attributed.select("cluster", "job_id", "attempt", "failure_domain", "start_time")
        .with_row_index("__r")
        .sort("cluster", "job_id", "attempt")
        .with_columns(  # (the previous row, when it is the same job's: sorted, no grouping)
            prev_hw=pl.when(
                (pl.col("cluster") == pl.col("cluster").shift(1))
                & (pl.col("job_id") == pl.col("job_id").shift(1))
            ).then(pl.col("failure_domain").is_in(HARDWARE).shift(1))
        )
    )
    rows = hw_prev.filter(
        pl.col("prev_hw").fill_null(False) & pl.col("start_time").is_not_null()
    ).get_column("__r")
    restarts = (
        attributed.select(pl.col("cluster", "start_time", "job_id", "nodes").gather(rows))
        .select("cluster", restart_start="start_time", cause_job_id="job_id", node=pl.col("nodes"))
        .explode("node")
    )
    tol = timedelta(seconds=tolerance_s)
    # the preemptions that ended within the tolerance before some restart of their cluster
    # (few): only they can match one on a node, and only their host lists are exploded
    times = restarts.select("cluster", __u="restart_start").unique().sort("__u")
    near = (
        attributed.select("cluster", "state", "end_time")
        .with_row_index("__p")
        .filter((pl.col("state").cast(pl.String) == "PREEMPTED") & pl.col("end_time").is_not_null())
        .sort("end_time")
        .join_asof(
            times,
            left_on="end_time",
            right_on="__u",
            by="cluster",
            strategy="forward",
            tolerance=tol,
            check_sortedness=False,
        )
        .drop_nulls("__u")
        .get_column("__p")
        .sort()
    )
    pre = (
        gpu_hours(
            attributed.select(
                "cluster", "job_id", "attempt", "start_time", "end_time", "n_accelerators", "nodes"
            )
            .with_row_index("__p")
            .select(pl.all().gather(near)),
            observation_end,
        )
        .select(
            "__p", "cluster", "job_id", "attempt", "end_time", "gpu_hours", node=pl.col("nodes")
        )
        .explode("node")
    )
    # for each preempted (node, end), the next restart on that node within the tolerance
    hit = (
        pre.drop_nulls("end_time")
        .sort("end_time")
        .join_asof(
            restarts.sort("restart_start"),
            left_on="end_time",
            right_on="restart_start",
            by=["cluster", "node"],
            strategy="forward",
            tolerance=tol,
            check_sortedness=False,
        )
        .filter(
            pl.col("restart_start").is_not_null() & (pl.col("cause_job_id") != pl.col("job_id"))
        )
        .sort("__p", "restart_start", "cause_job_id")
        .unique("__p", keep="first", maintain_order=True)
    )
    return hit.select("cluster", "job_id", "attempt", "gpu_hours", "cause_job_id")


def job_interruptions(
    attributed: pl.DataFrame,
    *,
    observation_end: datetime | None = None,
    tolerance_s: float = 60.0,
    secondary: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Per job that was interrupted, requeued or caused secondary preemptions: what happened.

    Parameters
    ----------
    attributed : polars.DataFrame
        The output of :func:`reliability.attribute_failures`.
    observation_end : datetime or None
        Attempts still running then count their GPU time up to it [UTC].
    tolerance_s : float
        Secondary-preemption window [s] (see the module doc).
    secondary : polars.DataFrame or None
        The secondary preemptions already matched (:func:`match_secondary_preemptions` of the
        same attempts, ``tolerance_s`` and ``observation_end``); None: matched here.

    Returns
    -------
    polars.DataFrame
        ``cluster, job_id, name, user, gpus`` (most of any attempt), ``attempts``, ``requeues``
        (attempts − 1), ``self_requeues`` (requeued attempts not ended by a preemption),
        ``hw_interruptions``, ``preempted``, ``secondary_caused`` (preemptions its restarts caused),
        ``secondary_gpu_hours`` [GPU-h], ``gpu_hours`` (all attempts), ``gpu_hours_hw`` (its
        hardware-ended attempts) [GPU-h]; most self-requeues first.
    """
    g = gpu_hours(attributed, observation_end)
    last = pl.col("attempt") == pl.col("attempt").max()
    per = g.group_by("cluster", "job_id").agg(
        name=pl.col("name").first() if "name" in g.columns else pl.lit(None, pl.String),
        user=pl.col("user").first() if "user" in g.columns else pl.lit(None, pl.String),
        gpus=pl.col("n_accelerators").max().cast(pl.Int64),
        attempts=pl.len().cast(pl.Int64),
        self_requeues=(~last & (pl.col("failure_domain") != "preemption")).sum().cast(pl.Int64),
        hw_interruptions=pl.col("failure_domain").is_in(HARDWARE).sum().cast(pl.Int64),
        preempted=(pl.col("state").cast(pl.String) == "PREEMPTED").sum().cast(pl.Int64),
        gpu_hours=pl.col("gpu_hours").sum(),
        gpu_hours_hw=pl.col("gpu_hours").filter(pl.col("failure_domain").is_in(HARDWARE)).sum(),
    )
    sec = (
        match_secondary_preemptions(
            attributed, tolerance_s=tolerance_s, observation_end=observation_end
        )
        if secondary is None
        else secondary
    )
    caused = sec.group_by("cluster", job_id="cause_job_id").agg(
        secondary_caused=pl.len().cast(pl.Int64), secondary_gpu_hours=pl.col("gpu_hours").sum()
    )
    out = (
        per.join(caused, on=["cluster", "job_id"], how="left", nulls_equal=True)
        .with_columns(
            pl.col("secondary_caused").fill_null(0),
            pl.col("secondary_gpu_hours").fill_null(0.0),
            requeues=pl.col("attempts") - 1,
        )
        .filter(
            (pl.col("attempts") > 1)
            | (pl.col("hw_interruptions") > 0)
            | (pl.col("secondary_caused") > 0)
        )
    )
    cols = [
        "cluster",
        "job_id",
        "name",
        "user",
        "gpus",
        "attempts",
        "requeues",
        "self_requeues",
        "hw_interruptions",
        "preempted",
        "secondary_caused",
        "secondary_gpu_hours",
        "gpu_hours",
        "gpu_hours_hw",
    ]
    return out.select(cols).sort(
        ["self_requeues", "secondary_caused", "gpu_hours", "job_id"],
        descending=[True, True, True, False],
    )


def crash_loops(
    per_job: pl.DataFrame, *, min_requeues: int = CRASH_LOOP_MIN_REQUEUES
) -> pl.DataFrame:
    """Select the crash-looping jobs.

    Parameters
    ----------
    per_job : polars.DataFrame
        The per-job table of :func:`job_interruptions`.
    min_requeues : int
        Fewest requeues for something other than a preemption (hardware, a RequeueExit code, an
        admin, a failing node) that make a crash loop.

    Returns
    -------
    polars.DataFrame
        The rows of ``per_job`` with ``self_requeues >= min_requeues``, in its order (most
        requeues first).
    """
    return per_job.filter(pl.col("self_requeues") >= min_requeues)


def hardware_failed_jobs(
    attributed: pl.DataFrame, *, top: int = 10, observation_end: datetime | None = None
) -> pl.DataFrame:
    """Rank job names and users by their hardware-ended attempts.

    Parameters
    ----------
    attributed : polars.DataFrame
        Attributed attempts (:func:`reliability.attribution.attribute_failures`).
    top : int
        Rows kept.
    observation_end : datetime or None
        When the data end [UTC], for the GPU time of attempts still running.

    Returns
    -------
    polars.DataFrame
        ``name, user, attempts`` (hardware-ended), ``jobs`` (distinct job ids), ``gpu_hours``
        [GPU-h of those attempts]; the ``top`` rows, most attempts first.
    """
    hw = gpu_hours(attributed.filter(pl.col("failure_domain").is_in(HARDWARE)), observation_end)
    return (
        hw.group_by("name", "user")
        .agg(
            attempts=pl.len().cast(pl.Int64),
            jobs=pl.col("job_id").n_unique().cast(pl.Int64),
            gpu_hours=pl.col("gpu_hours").sum(),
        )
        .sort(["attempts", "gpu_hours", "name"], descending=[True, True, False], nulls_last=True)
        .head(top)
    )
