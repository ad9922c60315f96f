"""ETTR of job runs measured from scheduler logs (Kokolis et al. HPCA'25 §V, Fig. 9).

A *run* is every attempt of one logical job: the same (cluster, job id) across requeues, or
any user-supplied key that links resubmissions (e.g. ``run_key=["cluster", "user", "name"]``).
Per run:

- ``wall_h``: first submission to last end (queue waits included);
- ``scheduled_h``: the sum of attempt durations; ``queue_h = wall_h − scheduled_h``;
- ``overhead_h``: a restart overhead u0 (reloading the checkpoint) at the start of every
  attempt after the first, for runs that checkpoint (others restart from scratch: their
  whole interrupted attempt is lost work);
- ``lost_h``: the work since the last checkpoint of every *interrupted* attempt (NODE_FAIL,
  PREEMPTED, REQUEUED, or FAILED attributed to hardware, infrastructure or system software).
  The logs do not say when checkpoints were taken, so an interval Δt is assumed (paper: 60 min,
  u0 = 5 min). ``lost_work="aligned"`` assumes checkpoints every Δt of compute from the
  attempt's start (after the restart), ``"expected"`` charges Δt/2 per interruption. Runs
  smaller than ``ckpt_min_gpus`` are assumed not to checkpoint: an interrupted attempt loses
  all of its work;
- ``productive_h = scheduled_h − overhead_h − lost_h``; ``ettr = productive_h / wall_h``.

Aggregates state their weights: ``ettr_by_run`` is the mean of the runs' ETTRs,
``ettr_by_gpu_time`` is Σ gpus·productive / Σ gpus·wall.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import polars as pl

from reliability.attribution import attribute_failures
from reliability.models.mttf import size_bucket

if TYPE_CHECKING:
    from reliability.store import Dataset

__all__ = ["RunETTR", "job_run_ettr"]

INTERRUPTING_STATES = ("NODE_FAIL", "PREEMPTED", "REQUEUED")
INTERRUPTING_DOMAINS = ("hardware", "infrastructure", "system_software")


@dataclass
class RunETTR:
    """Per-run ETTR (:attr:`runs`) and its distribution by size and priority."""

    runs: pl.DataFrame
    ckpt_interval_h: float | None
    restart_h: float
    lost_work: str
    notes: list[str] = field(default_factory=list)

    def _agg(self, by: str) -> pl.DataFrame:
        r = self.runs
        return (
            r.group_by(by)
            .agg(
                runs=pl.len(),
                ettr_by_run=pl.col("ettr").mean(),
                ettr_median=pl.col("ettr").median(),
                ettr_p10=pl.col("ettr").quantile(0.10),
                ettr_p90=pl.col("ettr").quantile(0.90),
                ettr_by_gpu_time=(pl.col("gpus") * pl.col("productive_h")).sum()
                / (pl.col("gpus") * pl.col("wall_h")).sum(),
                interruptions=pl.col("interruptions").sum(),
                gpu_hours_lost=(pl.col("gpus") * pl.col("lost_h")).sum(),
                gpu_hours_overhead=(pl.col("gpus") * pl.col("overhead_h")).sum(),
                gpu_hours_queued=(pl.col("gpus") * pl.col("queue_h")).sum(),
            )
            .sort(by)
        )

    @property
    def by_size(self) -> pl.DataFrame:
        """ETTR by job-size bucket [GPUs] (Fig. 9)."""
        return self._agg("bucket")

    @property
    def by_priority(self) -> pl.DataFrame:
        """ETTR by QoS (or priority where there is no QoS)."""
        return self._agg("priority_class")

    @property
    def summary(self) -> pl.DataFrame:
        """Whole-cluster figures, both weightings."""
        return self._agg("all").drop("all")

    def __str__(self) -> str:
        s = self.summary.row(0, named=True)
        ck = "none" if self.ckpt_interval_h is None else f"{60 * self.ckpt_interval_h:.0f} min"
        lines = [
            f"ETTR over {s['runs']:,} job runs (checkpoint interval {ck}, restart {60 * self.restart_h:.0f} min, "
            f"lost work {self.lost_work}): {s['ettr_by_run']:.3f} by run, {s['ettr_by_gpu_time']:.3f} by GPU time",
            "by size [GPUs]:  runs  ETTR(run)  ETTR(GPU-time)  median  p10",
        ]
        for row in self.by_size.iter_rows(named=True):
            lines.append(
                f"  {row['bucket']:>6}  {row['runs']:>8,}  {row['ettr_by_run']:9.3f}  {row['ettr_by_gpu_time']:14.3f}"
                f"  {row['ettr_median']:6.3f}  {row['ettr_p10']:.3f}"
            )
        lines += self.notes
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return "<pre>" + str(self).replace("&", "&amp;").replace("<", "&lt;") + "</pre>"


def job_run_ettr(
    source: Dataset | pl.DataFrame,
    ckpt_interval_h: float | None = 1.0,
    restart_h: float = 5.0 / 60.0,
    *,
    run_key: str | list[str] | None = None,
    lost_work: str = "aligned",
    ckpt_min_gpus: int = 0,
) -> RunETTR:
    """ETTR per job run from a Dataset (attributed here) or a jobs frame (see module doc).

    Parameters
    ----------
    ckpt_interval_h : assumed Δt [h]; None = no checkpoints (an interruption loses the attempt)
    restart_h : assumed u0 [h] per restart
    run_key : column(s) that identify a run; default (cluster, job_id)
    lost_work : "aligned" or "expected" (see module doc)
    ckpt_min_gpus : runs with fewer GPUs are assumed not to checkpoint
    """
    if lost_work not in ("aligned", "expected"):
        raise ValueError(f"lost_work must be 'aligned' or 'expected', got {lost_work!r}")
    if ckpt_interval_h is not None and ckpt_interval_h <= 0:
        raise ValueError("ckpt_interval_h must be positive (or None for no checkpoints)")
    jobs = source if isinstance(source, pl.DataFrame) else attribute_failures(source)
    if "failure_domain" not in jobs.columns:
        jobs = attribute_failures(jobs, health_events=None, node_states=None)
    key = (
        ["cluster", "job_id"]
        if run_key is None
        else [run_key]
        if isinstance(run_key, str)
        else list(run_key)
    )
    missing = [c for c in key if c not in jobs.columns]
    if missing:
        raise ValueError(f"run_key column(s) {missing} not in the jobs table")
    notes = []
    started = jobs.filter(pl.col("start_time").is_not_null() & pl.col("end_time").is_not_null())
    never = jobs.select(key).unique().height - started.select(key).unique().height
    if never:
        notes.append(f"{never:,} runs never started (no ETTR) and are left out")
    dt = ckpt_interval_h
    a = started.sort([*key, "start_time"]).with_columns(
        elapsed_h=((pl.col("end_time") - pl.col("start_time")).dt.total_seconds() / 3600.0).clip(
            0.0
        ),
        nth=pl.int_range(pl.len()).over(key),
        run_gpus=pl.col("n_accelerators").max().over(key),
        interrupted=pl.col("state").cast(pl.String).is_in(INTERRUPTING_STATES)
        | ((pl.col("state") == "FAILED") & pl.col("failure_domain").is_in(INTERRUPTING_DOMAINS)),
    )
    checkpoints = pl.lit(dt is not None) & (pl.col("run_gpus") >= ckpt_min_gpus)
    a = a.with_columns(
        overhead_h=pl.when((pl.col("nth") > 0) & checkpoints)
        .then(pl.min_horizontal(pl.col("elapsed_h"), pl.lit(restart_h)))
        .otherwise(0.0)
    )
    work = pl.col("elapsed_h") - pl.col("overhead_h")
    if dt is None:
        kept = pl.lit(0.0)
    elif lost_work == "aligned":
        kept = (work / dt).floor() * dt
    else:
        kept = (work - dt / 2.0).clip(0.0)
    a = a.with_columns(
        lost_h=pl.when(~pl.col("interrupted"))
        .then(0.0)
        .when(checkpoints)
        .then(work - kept)
        .otherwise(work)
    )
    # QoS where the logs have it, else the numeric priority
    classes = [pl.col(c).cast(pl.String) for c in ("qos", "priority") if c in a.columns]
    prio = pl.coalesce(classes) if classes else pl.lit(None, pl.String)
    runs = (
        a.group_by(key)
        .agg(
            attempts=pl.len(),
            interruptions=pl.col("interrupted").sum().cast(pl.Int64),
            gpus=pl.col("n_accelerators").max().cast(pl.Int64),
            priority_class=prio.first().fill_null("unknown"),
            first_submit=pl.col("submit_time").min(),
            first_start=pl.col("start_time").min(),
            last_end=pl.col("end_time").max(),
            final_state=pl.col("state").last().cast(pl.String),
            scheduled_h=pl.col("elapsed_h").sum(),
            overhead_h=pl.col("overhead_h").sum(),
            lost_h=pl.col("lost_h").sum(),
        )
        .with_columns(
            wall_h=(
                pl.col("last_end") - pl.min_horizontal("first_submit", "first_start")
            ).dt.total_seconds()
            / 3600.0,
        )
        .with_columns(
            queue_h=(pl.col("wall_h") - pl.col("scheduled_h")).clip(0.0),
            productive_h=pl.col("scheduled_h") - pl.col("overhead_h") - pl.col("lost_h"),
        )
    )
    zero = runs.filter(pl.col("wall_h") <= 0).height
    if zero:
        notes.append(f"{zero:,} runs with zero wall time (no ETTR) are left out")
    runs = (
        runs.filter(pl.col("wall_h") > 0)
        .with_columns(
            ettr=(pl.col("productive_h") / pl.col("wall_h")).clip(0.0, 1.0),
            bucket=size_bucket(pl.col("gpus")),
            all=pl.lit("all"),
        )
        .sort(key)
    )
    return RunETTR(
        runs=runs, ckpt_interval_h=dt, restart_h=restart_h, lost_work=lost_work, notes=notes
    )
