"""Workload and failure-impact breakdowns (Kokolis et al. HPCA'25 Figs. 3, 6 and 8).

All functions take the attributed jobs frame (:func:`reliability.attribute_failures`); GPU
time is ``n_accelerators x (end - start)`` of each attempt. CPU-only jobs (0 GPUs) are a
class of their own: size bucket 0 (:data:`~reliability.models.failures.mttf.CPU_ONLY_BUCKET`), never
the 1-GPU bucket, and outside the GPU-job shares of :func:`hardware_share`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

import polars as pl

from reliability._result import Result, fmt_num
from reliability.models.failures.jobs import (
    crash_loops,
    gpu_hours,
    hardware_failed_jobs,
    job_interruptions,
    match_secondary_preemptions,
)
from reliability.models.failures.mttf import HARDWARE, size_bucket

__all__ = [
    "WorkloadResult",
    "failure_taxonomy",
    "hardware_share",
    "job_size_distribution",
    "job_state_breakdown",
    "secondary_preemptions",
    "signal_cooccurrence",
    "workload_summary",
]


def _fsum(values: pl.Series) -> float:
    """Sum floats in one order whatever the chunks (polars' threads split a filtered column)."""
    return float(values.sort().sum())


def _share(num: pl.Expr, den: pl.Expr) -> pl.Expr:
    """Num / den, null (not nan) where den is 0."""
    return pl.when(den > 0).then(num / den)


def job_state_breakdown(
    jobs: pl.DataFrame, *, observation_end: datetime | None = None
) -> pl.DataFrame:
    """Count attempts by final state: count and share, GPU-hours and share.

    Kokolis et al., HPCA '25, Fig. 3.

    Parameters
    ----------
    jobs : polars.DataFrame
        One row per attempt.
    observation_end : datetime or None
        Attempts still running then count their GPU time up to it [UTC] (without it a running
        attempt has no GPU time).

    Returns
    -------
    polars.DataFrame
        ``state, attempts, gpu_hours, share, gpu_share`` (``gpu_share`` null when there is no GPU
        time at all), most attempts first.
    """
    # GPU-hours are summed in a fixed order (sorted within each group, then the groups by
    # state): polars' parallel group_by otherwise sums floats in an order that varies from run
    # to run, and the last digits with it
    g = (
        gpu_hours(jobs, observation_end)
        .group_by(pl.col("state").cast(pl.String))
        .agg(attempts=pl.len(), gpu_hours=pl.col("gpu_hours").sort().sum())
        .sort("state")
    )
    return g.with_columns(
        share=_share(pl.col("attempts"), pl.col("attempts").sum()),
        gpu_share=_share(pl.col("gpu_hours"), pl.col("gpu_hours").sum()),
    ).sort("attempts", "state", descending=[True, False])


def job_size_distribution(
    jobs: pl.DataFrame, *, observation_end: datetime | None = None
) -> pl.DataFrame:
    """Count jobs (first attempts) and GPU time by size bucket.

    Kokolis et al., HPCA '25, Fig. 6.

    Parameters
    ----------
    jobs : polars.DataFrame
        One row per attempt (``attempt``, ``n_accelerators``, ``start_time``, ``end_time``).
    observation_end : datetime or None
        Attempts still running then count their GPU time up to it [UTC] (without it a running
        attempt has no GPU time).

    Returns
    -------
    polars.DataFrame
        ``bucket`` (the lower edge [GPUs] of :data:`~reliability.models.failures.SIZE_BUCKETS`, 0 for
        CPU-only jobs), ``jobs``, ``gpu_hours`` [GPU-h], ``job_share`` (over all jobs),
        ``gpu_share`` (over GPU time; null when there is none).
    """
    g = gpu_hours(jobs, observation_end).with_columns(bucket=size_bucket(pl.col("n_accelerators")))
    out = (
        g.group_by("bucket")
        .agg(jobs=(pl.col("attempt") == 0).sum(), gpu_hours=pl.col("gpu_hours").sort().sum())
        .sort("bucket")  # summed in a fixed order, as in job_state_breakdown
    )
    return out.with_columns(
        job_share=_share(pl.col("jobs"), pl.col("jobs").sum()),
        gpu_share=_share(pl.col("gpu_hours"), pl.col("gpu_hours").sum()),
    )


def hardware_share(
    attributed: pl.DataFrame, *, observation_end: datetime | None = None
) -> dict[str, float | None]:
    """Compute the share of GPU-job attempts ended by hardware and their share of GPU runtime.

    Kokolis et al., HPCA '25, Fig. 3 (RSC-1: 0.2% of attempts, 18.7% of GPU runtime).

    CPU-only attempts (0 GPUs) are counted apart (``cpu_only_attempts``,
    ``cpu_only_hardware_attempts``): they have no GPU time, and counting them among the attempts
    would set a share of attempts beside a share of GPU time they cannot have. Attempts still
    running are not counted (they have not ended); ``observation_end`` only bounds GPU time.

    Parameters
    ----------
    attributed : polars.DataFrame
        Attributed attempts (:func:`reliability.attribution.attribute_failures`).
    observation_end : datetime or None
        Caps the GPU time of attempts [UTC].

    Returns
    -------
    dict of str to float or None
        ``attempt_share`` (of ended GPU-job attempts; None when there is none),
        ``gpu_time_share`` (None when there is no GPU time), ``gpu_attempts``,
        ``hardware_attempts``, ``cpu_only_attempts``, ``cpu_only_hardware_attempts``.
    """
    g = gpu_hours(attributed.filter(pl.col("end_time").is_not_null()), observation_end)
    gpu_job = g.get_column("n_accelerators").fill_null(0) > 0
    hw_all = g.get_column("failure_domain").is_in(HARDWARE)
    gg = g.filter(gpu_job)
    hw = gg.get_column("failure_domain").is_in(HARDWARE)
    total = _fsum(gg.get_column("gpu_hours"))
    return {
        "attempt_share": float(hw.mean()) if gg.height else None,  # type: ignore[arg-type]
        "gpu_time_share": _fsum(gg.filter(hw).get_column("gpu_hours")) / total
        if total > 0
        else None,
        "gpu_attempts": float(gg.height),
        "hardware_attempts": float(hw.sum()),
        "cpu_only_attempts": float((~gpu_job).sum()),
        "cpu_only_hardware_attempts": float((hw_all & ~gpu_job).sum()),
    }


def secondary_preemptions(
    attributed: pl.DataFrame,
    *,
    tolerance_s: float = 60.0,
    observation_end: datetime | None = None,
    secondary: pl.DataFrame | None = None,
) -> dict[str, float | None]:
    """Measure the preemptions caused by the requeue of hardware-failed jobs.

    Kokolis et al., HPCA '25, §IV-C, Fig. 8 (RSC-1: 16% of the failure overhead).

    A preemption counts as secondary when it ends within ``tolerance_s`` before the start of an
    attempt that follows a hardware-ended attempt of another job, on a shared node
    (:func:`reliability.models.failures.jobs.match_secondary_preemptions`). Failure overhead = GPU-hours
    of hardware-ended attempts + GPU-hours of secondary preemptions.

    Parameters
    ----------
    attributed : polars.DataFrame
        Attributed attempts (:func:`reliability.attribution.attribute_failures`).
    tolerance_s : float
        How long before the restart's start a preemption may end and still count [s].
    observation_end : datetime or None
        Caps the GPU time of attempts still running [UTC].
    secondary : polars.DataFrame or None
        The secondary preemptions already matched
        (:func:`~reliability.models.failures.jobs.match_secondary_preemptions` of the same
        attempts, ``tolerance_s`` and ``observation_end``); None: matched here.

    Returns
    -------
    dict of str to float or None
        ``count``, ``gpu_hours`` (of the secondary preemptions) [GPU-h], ``hardware_gpu_hours``
        [GPU-h], ``share_of_failure_overhead`` (None when there is no failure overhead at all).
    """
    hit = (
        match_secondary_preemptions(
            attributed, tolerance_s=tolerance_s, observation_end=observation_end
        )
        if secondary is None
        else secondary
    )
    secondary_h = _fsum(hit.get_column("gpu_hours"))
    g = gpu_hours(attributed.filter(pl.col("failure_domain").is_in(HARDWARE)), observation_end)
    hw_h = _fsum(g.get_column("gpu_hours"))
    total = secondary_h + hw_h
    return {
        "count": float(hit.height),
        "gpu_hours": secondary_h,
        "hardware_gpu_hours": hw_h,
        "share_of_failure_overhead": secondary_h / total if total > 0 else None,
    }


def failure_taxonomy(attributed: pl.DataFrame) -> pl.DataFrame:
    """Count attempts by failure domain and cause.

    Parameters
    ----------
    attributed : polars.DataFrame
        Attributed attempts (``failure_domain``, ``failure_cause``).

    Returns
    -------
    polars.DataFrame
        ``failure_domain``, ``failure_cause`` (``-`` when none), ``attempts``, ``share`` (of all
        attempts) and ``share_of_failures`` (of the attempts that failed for a non-user reason:
        hardware, infrastructure, system software, unknown; null for the others).
    """
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
        failing.select(
            "failure_domain", "failure_cause", share_of_failures=pl.col("attempts") / total
        ),
        on=["failure_domain", "failure_cause"],
        how="left",
    ).sort(["attempts", "failure_domain", "failure_cause"], descending=[True, False, False])


def signal_cooccurrence(health_events: pl.DataFrame, *, window_min: float = 10.0) -> pl.DataFrame:
    """Count how often two signal codes appear on the same node close in time.

    E.g. PCIe errors with Xid 79.

    Parameters
    ----------
    health_events : polars.DataFrame
        Health events (``cluster``, ``node``, ``time``, ``source``, ``code``).
    window_min : float
        Largest time between the two events [min].

    Returns
    -------
    polars.DataFrame
        ``code_a``, ``code_b`` (``source:code``, a < b), ``pairs``, ``nodes``; most pairs first.
    """
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


@dataclass
class WorkloadResult(Result):
    """What the cluster's jobs did and what failures cost them.

    Job states, sizes, failure taxonomy, the hardware share of attempts and GPU time, secondary
    preemptions and the jobs that lost most (Kokolis et al., HPCA '25, Figs. 3, 6 and 8).

    Attributes
    ----------
    states, sizes, taxonomy : polars.DataFrame
        :func:`job_state_breakdown`, :func:`job_size_distribution`, :func:`failure_taxonomy`.
    jobs : polars.DataFrame
        :func:`reliability.models.failures.jobs.job_interruptions` (interrupted or requeued jobs).
    hardware_failed : polars.DataFrame
        :func:`reliability.models.failures.jobs.hardware_failed_jobs`.
    attempts, n_jobs : int
        Attempts and distinct jobs.
    gpu_attempts, hardware_attempts : int
        Ended GPU-job attempts, and those ended by hardware.
    cpu_only_attempts, cpu_only_hardware_attempts : int
        The same for CPU-only jobs.
    attempt_share, gpu_time_share : float or None
        Hardware-ended share of GPU-job attempts and of GPU time (None when not defined).
    secondary_count, secondary_gpu_hours
        Secondary preemptions and their GPU-hours.
    hardware_gpu_hours : float
        GPU-hours of hardware-ended attempts.
    secondary_share : float or None
        Secondary share of the failure overhead (None without overhead).
    open_attempts : int
        Attempts still running at ``observation_end`` (GPU time counted up to it).
    """

    title = "Workload and failure impact (Kokolis et al. HPCA'25 Figs. 3, 6, 8)"
    states: pl.DataFrame
    sizes: pl.DataFrame
    taxonomy: pl.DataFrame
    jobs: pl.DataFrame
    hardware_failed: pl.DataFrame
    attempts: int
    n_jobs: int
    gpu_attempts: int
    hardware_attempts: int
    cpu_only_attempts: int
    cpu_only_hardware_attempts: int
    attempt_share: float | None
    gpu_time_share: float | None
    secondary_count: int
    secondary_gpu_hours: float
    hardware_gpu_hours: float
    secondary_share: float | None
    open_attempts: int = 0
    observation_end: datetime | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def crash_loops(self) -> pl.DataFrame:
        """Jobs requeued at least :data:`~reliability.models.failures.jobs.CRASH_LOOP_MIN_REQUEUES` times.

        Requeued for something other than a preemption.
        """
        return crash_loops(self.jobs)

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the result: jobs, attempts, ended GPU-job attempts, hardware-ended attempts."""
        return {
            "jobs": self.n_jobs,
            "attempts": self.attempts,
            "GPU-job attempts ended": self.gpu_attempts,
            "hardware-ended": self.hardware_attempts,
        }

    @property
    def summary(self) -> pl.DataFrame:
        """One row: jobs, attempts, hardware shares of attempts and GPU time, secondary preemptions and their share, crash loops."""
        return self._mapping_frame(
            {
                "jobs": self.n_jobs,
                "attempts": self.attempts,
                "gpu_attempts": self.gpu_attempts,
                "hardware_attempts": self.hardware_attempts,
                "attempt_share": self.attempt_share,
                "gpu_time_share": self.gpu_time_share,
                "cpu_only_attempts": self.cpu_only_attempts,
                "cpu_only_hardware_attempts": self.cpu_only_hardware_attempts,
                "secondary_preemptions": self.secondary_count,
                "secondary_gpu_hours": self.secondary_gpu_hours,
                "hardware_gpu_hours": self.hardware_gpu_hours,
                "secondary_share": self.secondary_share,
                "crash_looping_jobs": self.crash_loops.height,
            }
        )

    def tables(self) -> dict[str, pl.DataFrame]:
        """Return the result's tables by name.

        Returns
        -------
        dict of str to polars.DataFrame
            ``"summary"``, ``"job states"``, ``"job sizes"``, ``"failure taxonomy"`` and
            ``"crash-looping jobs"`` (the first 20).
        """
        return {
            "summary": self.summary,
            "job states": self.states,
            "job sizes": self.sizes,
            "failure taxonomy": self.taxonomy,
            "crash-looping jobs": self.crash_loops.head(20),
        }

    def hardware_sentence(self) -> str:
        """Say what hardware ended, in words, with a conclusion only where the data carry one.

        Returns
        -------
        str
            The hardware share of GPU-job attempts and GPU time beside the paper's (or why there is
            none).
        """
        if self.gpu_attempts == 0:
            return "No GPU-job attempt ended in the window: no hardware share to give."
        k, n = self.hardware_attempts, self.gpu_attempts
        if k == 0:
            return f"No GPU-job attempt of {n:,} ended by hardware."
        a = self.attempt_share or 0.0
        text = f"Hardware ended {100 * a:.2g}% of GPU-job attempts ({k:,} of {n:,})"
        g = self.gpu_time_share
        if g is None:
            return text + "; they ran no GPU time."
        text += f" and {100 * g:.2g}% of their GPU time (HPCA'25 RSC-1: 0.2% and 18.7%)"
        if k >= 5 and g > 2 * a:
            text += ": hardware failures fall on the larger, longer attempts"
        elif k >= 5 and g < a / 2:
            text += ": hardware failures fall on the smaller, shorter attempts"
        return text + "."

    def secondary_sentence(self) -> str:
        """Say how many attempts the restarts of hardware-failed jobs preempted, in words.

        Kokolis et al., HPCA '25, §IV-C: 16% of the failure overhead.

        Returns
        -------
        str
            The count, GPU-hours and share of the failure overhead (or why there are none).
        """
        if self.hardware_attempts + self.cpu_only_hardware_attempts == 0:
            return "No hardware-ended attempts: no secondary preemptions to count."
        share = self.secondary_share
        tail = (
            ""
            if share is None
            else f", {100 * share:.2g}% of the failure overhead in GPU-hours (HPCA'25: 16%)"
        )
        n = self.secondary_count
        return (
            f"Restarts of hardware-failed jobs preempted {n:,} other attempt{'s' if n != 1 else ''} "
            f"({fmt_num(self.secondary_gpu_hours)} GPU-hours){tail}."
        )

    def _lines(self) -> list[str]:
        lines = [
            f"{self.n_jobs:,} jobs ran {self.attempts:,} attempts.",
            self.hardware_sentence(),
            self.secondary_sentence(),
        ]
        if self.cpu_only_attempts:
            lines.append(
                f"{self.cpu_only_attempts:,} attempts of CPU-only jobs (0 GPUs), {self.cpu_only_hardware_attempts:,} "
                "ended by hardware: counted apart"
            )
        loops = self.crash_loops
        if loops.height:
            lines.append(
                f"{loops.height} jobs crash-loop (requeued 3+ times for something other than a preemption):"
            )
            for r in loops.head(5).iter_rows(named=True):
                lines.append(
                    f"  job {r['job_id']} ({r['user'] or '?'}, {r['name'] or '?'}, {r['gpus']} GPUs): "
                    f"{r['self_requeues']} requeues, {r['hw_interruptions']} by hardware, "
                    f"{r['secondary_caused']} secondary preemptions caused"
                )
        return lines

    @classmethod
    def _example(cls, kind: str = "normal") -> WorkloadResult:
        """Build a tiny instance: the workload of a 14-day, 16-node cluster (for contract tests).

        ``kind="no failures"``: the same without hardware failures.
        """
        from reliability.models._examples import tiny_jobs

        jobs, end = tiny_jobs(kind=kind)
        return workload_summary(jobs, observation_end=end)


def workload_summary(
    attributed: pl.DataFrame,
    *,
    observation_end: datetime | None = None,
    tolerance_s: float = 60.0,
    top: int = 10,
) -> WorkloadResult:
    """Every workload breakdown of the attributed jobs as one result.

    Parameters
    ----------
    attributed : polars.DataFrame
        The output of :func:`reliability.attribute_failures`.
    observation_end : datetime or None
        Attempts still running then count their GPU time up to it [UTC] (default: the latest
        timestamp in the jobs, noted).
    tolerance_s : float
        Secondary-preemption window [s].
    top : int
        Rows of the hardware-failed job names.

    Returns
    -------
    WorkloadResult
        Job states, sizes, failure taxonomy, hardware shares, secondary preemptions, crash
        loops and the jobs that lost most (see :class:`WorkloadResult`).
    """
    from reliability.models.failures.counts import clip_attempts, resolve_observation_end

    end, note = resolve_observation_end(attributed, attributed, observation_end)
    notes = [note] if note else []
    # the attempts open at the end as the rates count them (one that starts at the end ran
    # nothing before it and is not among them)
    if end is not None:
        n_open = clip_attempts(attributed.select("start_time", "end_time"), end)[1]
    else:
        n_open = attributed.filter(
            pl.col("start_time").is_not_null() & pl.col("end_time").is_null()
        ).height
    if n_open:
        notes.append(
            f"{n_open:,} attempts still running at the observation end: GPU time counted up to it"
        )
    # matched once, for the share and the per-job table (the one step that reads host lists)
    hit = match_secondary_preemptions(attributed, tolerance_s=tolerance_s, observation_end=end)
    # the breakdowns without the host lists: an eager group-by on a frame of many chunks
    # copies every column it carries into one (+3.6 GiB at five million attempts)
    attributed = attributed.drop("nodes", strict=False)
    hs = hardware_share(attributed, observation_end=end)
    sp = secondary_preemptions(
        attributed, tolerance_s=tolerance_s, observation_end=end, secondary=hit
    )
    if hs["gpu_attempts"] and hs["gpu_time_share"] is None:
        notes.append(
            "the ended GPU-job attempts ran no GPU time (all ended at their start): no GPU-time share"
        )
    if sp["share_of_failure_overhead"] is None and hs["hardware_attempts"]:
        notes.append(
            "the hardware-ended attempts ran no GPU time: no share of the failure overhead"
        )
    return WorkloadResult(
        states=job_state_breakdown(attributed, observation_end=end),
        sizes=job_size_distribution(attributed, observation_end=end),
        taxonomy=failure_taxonomy(attributed),
        jobs=job_interruptions(
            attributed, observation_end=end, tolerance_s=tolerance_s, secondary=hit
        ),
        hardware_failed=hardware_failed_jobs(attributed, top=top, observation_end=end),
        attempts=attributed.height,
        n_jobs=attributed.select("cluster", "job_id").n_unique(),
        gpu_attempts=int(hs["gpu_attempts"] or 0),
        hardware_attempts=int(hs["hardware_attempts"] or 0),
        cpu_only_attempts=int(hs["cpu_only_attempts"] or 0),
        cpu_only_hardware_attempts=int(hs["cpu_only_hardware_attempts"] or 0),
        attempt_share=hs["attempt_share"],
        gpu_time_share=hs["gpu_time_share"],
        secondary_count=int(sp["count"] or 0),
        secondary_gpu_hours=float(sp["gpu_hours"] or 0.0),
        hardware_gpu_hours=float(sp["hardware_gpu_hours"] or 0.0),
        secondary_share=sp["share_of_failure_overhead"],
        open_attempts=n_open,
        observation_end=end,
        notes=notes,
    )
