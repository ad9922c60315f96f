"""Workload and failure-impact breakdowns (Kokolis et al. HPCA'25 Figs. 3, 6 and 8).

All functions take the attributed jobs frame (:func:`reliability.attribute_failures`); GPU
time is ``n_accelerators x (end - start)`` of each attempt. CPU-only jobs (0 GPUs) are a
class of their own: size bucket 0 (:data:`~reliability.models.mttf.CPU_ONLY_BUCKET`), never
the 1-GPU bucket, and outside the GPU-job shares of :func:`hardware_share`.
"""

from __future__ import annotations

from datetime import timedelta

import polars as pl

from reliability.models.mttf import HARDWARE, size_bucket

__all__ = [
    "hardware_share",
    "job_size_distribution",
    "job_state_breakdown",
    "secondary_preemptions",
]


def _gpu_hours(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(
        gpu_hours=(pl.col("n_accelerators").cast(pl.Float64)
                   * (pl.col("end_time") - pl.col("start_time")).dt.total_seconds().fill_null(0.0) / 3600.0)
    )  # fmt: skip


def job_state_breakdown(jobs: pl.DataFrame) -> pl.DataFrame:
    """Attempts by final state: count and share, GPU-hours and share (HPCA'25 Fig. 3)."""
    g = (
        _gpu_hours(jobs)
        .group_by(pl.col("state").cast(pl.String))
        .agg(attempts=pl.len(), gpu_hours=pl.col("gpu_hours").sum())
    )
    return g.with_columns(
        share=pl.col("attempts") / pl.col("attempts").sum(),
        gpu_share=pl.col("gpu_hours") / pl.col("gpu_hours").sum(),
    ).sort("attempts", descending=True)


def job_size_distribution(jobs: pl.DataFrame) -> pl.DataFrame:
    """Jobs (first attempts) and GPU time by size bucket (HPCA'25 Fig. 6).

    ``bucket`` is the lower edge [GPUs] of :data:`~reliability.models.SIZE_BUCKETS`, 0 for
    CPU-only jobs; ``job_share`` is over all jobs, ``gpu_share`` over GPU time."""
    g = _gpu_hours(jobs).with_columns(bucket=size_bucket(pl.col("n_accelerators")))
    out = (
        g.group_by("bucket")
        .agg(jobs=(pl.col("attempt") == 0).sum(), gpu_hours=pl.col("gpu_hours").sum())
        .sort("bucket")
    )
    return out.with_columns(
        job_share=pl.col("jobs") / pl.col("jobs").sum(),
        gpu_share=pl.col("gpu_hours") / pl.col("gpu_hours").sum(),
    )


def hardware_share(attributed: pl.DataFrame) -> dict[str, float]:
    """Share of GPU-job attempts ended by hardware and their share of GPU runtime
    (HPCA'25 Fig. 3: 0.2% / 18.7%).

    CPU-only attempts (0 GPUs) are counted apart (``cpu_only_attempts``,
    ``cpu_only_hardware_attempts``): they have no GPU time, and counting them among the
    attempts would set a share of attempts beside a share of GPU time they cannot have.

    Returns
    -------
    dict: ``attempt_share`` (of ended GPU-job attempts), ``gpu_time_share`` (nan when there
    is no GPU time), ``gpu_attempts``, ``hardware_attempts``, ``cpu_only_attempts``,
    ``cpu_only_hardware_attempts``
    """
    g = _gpu_hours(attributed.filter(pl.col("end_time").is_not_null()))
    gpu_job = g.get_column("n_accelerators").fill_null(0) > 0
    hw_all = g.get_column("failure_domain").is_in(HARDWARE)
    gg = g.filter(gpu_job)
    hw = gg.get_column("failure_domain").is_in(HARDWARE)
    total = gg.get_column("gpu_hours").sum()
    return {
        "attempt_share": float(hw.mean() or 0.0),
        "gpu_time_share": float(gg.filter(hw).get_column("gpu_hours").sum() / total)
        if total
        else float("nan"),
        "gpu_attempts": float(gg.height),
        "hardware_attempts": float(hw.sum()),
        "cpu_only_attempts": float((~gpu_job).sum()),
        "cpu_only_hardware_attempts": float((hw_all & ~gpu_job).sum()),
    }


def secondary_preemptions(
    attributed: pl.DataFrame, *, tolerance_s: float = 60.0
) -> dict[str, float]:
    """Preemptions caused by the requeue of hardware-failed jobs (HPCA'25 Fig. 8; paper: 16%
    of the failure overhead).

    A preemption counts as secondary when it ends within ``tolerance_s`` before the start of
    an attempt that follows a hardware-ended attempt of the same job, on a shared node.
    Failure overhead = GPU-hours of hardware-ended attempts + GPU-hours of secondary
    preemptions.
    """
    g = _gpu_hours(attributed)
    hw_prev = g.sort("cluster", "job_id", "attempt").with_columns(
        prev_hw=pl.col("failure_domain").is_in(HARDWARE).shift(1).over("cluster", "job_id")
    )
    restarts = (
        hw_prev.filter(pl.col("prev_hw").fill_null(False) & pl.col("start_time").is_not_null())
        .select("cluster", restart_start="start_time", node=pl.col("nodes"))
        .explode("node")
    )
    pre = (
        g.filter(pl.col("state").cast(pl.String) == "PREEMPTED")
        .with_row_index("__p")
        .select("__p", "cluster", "end_time", "gpu_hours", node=pl.col("nodes"))
        .explode("node")
    )
    tol = timedelta(seconds=tolerance_s)
    # for each preempted (node, end), the next restart on that node within the tolerance
    hit = (
        pre.drop_nulls("end_time").sort("end_time")
        .join_asof(
            restarts.sort("restart_start"), left_on="end_time", right_on="restart_start",
            by=["cluster", "node"], strategy="forward", tolerance=tol, check_sortedness=False,
        )
        .filter(pl.col("restart_start").is_not_null())
        .unique("__p")
    )  # fmt: skip
    secondary_h = float(hit.get_column("gpu_hours").sum())
    hw_h = float(g.filter(pl.col("failure_domain").is_in(HARDWARE)).get_column("gpu_hours").sum())
    total = secondary_h + hw_h
    return {
        "count": float(hit.height),
        "gpu_hours": secondary_h,
        "hardware_gpu_hours": hw_h,
        "share_of_failure_overhead": secondary_h / total if total else float("nan"),
    }


def failure_taxonomy(attributed: pl.DataFrame) -> pl.DataFrame:
    """Attempts by failure domain and cause: counts and shares (of all attempts, and of the
    attempts that failed for a non-user reason)."""
    out = (
        attributed.group_by("failure_domain", pl.col("failure_cause").fill_null("-"))
        .agg(attempts=pl.len())
        .with_columns(share=pl.col("attempts") / pl.col("attempts").sum())
    )
    failing = out.filter(
        pl.col("failure_domain").is_in(["hardware", "infrastructure", "system_software", "unknown"])
    )
    total = failing.get_column("attempts").sum()
    return out.join(
        failing.select("failure_domain", "failure_cause", share_of_failures=pl.col("attempts") / total),
        on=["failure_domain", "failure_cause"], how="left",
    ).sort("attempts", descending=True)  # fmt: skip


def signal_cooccurrence(health_events: pl.DataFrame, *, window_min: float = 10.0) -> pl.DataFrame:
    """How often two signal codes appear on the same node within ``window_min`` minutes
    (e.g. PCIe errors with Xid 79): ``code_a``, ``code_b`` (a < b), ``pairs``, ``nodes``."""
    e = health_events.select(
        "cluster", "node", "time", code=pl.format("{}:{}", pl.col("source").cast(pl.String), "code")
    )
    w = timedelta(minutes=window_min)
    pairs = e.join(e, on=["cluster", "node"], how="inner", suffix="_b").filter(
        (pl.col("code") < pl.col("code_b")) & ((pl.col("time") - pl.col("time_b")).abs() <= w)
    )
    return (
        pairs.group_by(code_a="code", code_b="code_b")
        .agg(pairs=pl.len(), nodes=pl.col("node").n_unique())
        .sort("pairs", descending=True)
    )
