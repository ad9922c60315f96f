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
  PREEMPTED, REQUEUED, or FAILED attributed to hardware, infrastructure or system software);
  none for a requeue the application asked for (an exit code in attribution's
  ``requeue_exit_codes``: domain ``user``) in a run that checkpoints, which saved its work
  before exiting.
  Each interruption has a cause: ``hardware`` (attributed to hardware or infrastructure, as
  in r_f), ``preemption`` (PREEMPTED: the scheduler, not the machine) or ``other`` (requeues
  and system-software failures);
  The logs do not say when checkpoints were taken, so an interval Δt is assumed (paper: 60 min,
  u0 = 5 min). ``lost_work="aligned"`` assumes checkpoints every Δt of compute from the
  attempt's start (after the restart), ``"expected"`` charges Δt/2 per interruption. Runs
  smaller than ``ckpt_min_gpus`` are assumed not to checkpoint: an interrupted attempt loses
  all of its work;
- ``productive_h = scheduled_h − overhead_h − lost_h``; ``ettr = productive_h / wall_h``.
- ``ettr_hardware``: the ETTR the run would have had with its hardware interruptions only,
  from its first start: its wall time without its first queue wait and without what its
  preemptions and other interruptions cost (their lost work, the restart after them and the
  queue wait before that restart); the waits after hardware interruptions stay. This is what
  :func:`reliability.models.recovery.expected_ettr` and the planner model (they count hardware
  interruptions at rate N·r_f), so measured and expected ETTR compare like with like.

Runs still going at the observation end are **open** (censored): ``open`` marks them and their
ETTR is the ETTR so far. A run is open when an attempt runs past the end (RUNNING, SUSPENDED,
or an end after it), or when its last record (started or not) is one a job holds while it
waits to run again (:data:`OPEN_RUN_STATES`):

- PENDING, REQUEUE_HOLD or REQUEUE_FED (the rerun of a requeued job, listed): it waits at the
  end, so its wall time runs to the end and the wait counts as queue time so far;
- REQUEUED with no later record: Slurm lists the pending rerun once it is eligible, about two
  minutes after the requeue (``BeginTime``), so a requeue within :data:`REQUEUE_LISTED_S` of the
  end is waiting at the end (measured to it); an older one was held, or cancelled while held,
  which a time-windowed ``sacct`` does not show: it is censored at the requeue, the last time
  its state is known (``reliability collect`` asks sacct for such jobs by id, which lists them).

Aggregates state their weights: ``ettr_by_run`` is the mean of the runs' ETTRs,
``ettr_by_gpu_time`` is Σ gpus·productive / Σ gpus·wall (null for CPU-only jobs, which have no
GPU time).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import polars as pl

from reliability._result import Result, fmt_num
from reliability.models.failures.counts import clip_attempts
from reliability.models.failures.mttf import HARDWARE, attributed_jobs, size_bucket

if TYPE_CHECKING:
    from reliability.store import Dataset

__all__ = ["OPEN_RUN_STATES", "REQUEUE_LISTED_S", "RunETTR", "job_run_ettr"]

INTERRUPTING_STATES = ("NODE_FAIL", "PREEMPTED", "REQUEUED")
#: a run whose last record is in one of these at the observation end has not ended
OPEN_RUN_STATES = ("RUNNING", "SUSPENDED", "PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED")
#: how long after a requeue a time-windowed sacct may still not list the pending rerun [s]:
#: Slurm sets the rerun's BeginTime about 121 s after the requeue (and slurmdbd may lag)
REQUEUE_LISTED_S = 600.0
INTERRUPTING_DOMAINS = ("hardware", "infrastructure", "system_software")
#: the quantiles of :class:`RunETTR`'s tables (computed apart on a fleet's parts)
_QUANTILES = ("ettr_median", "ettr_p10", "ettr_p90")
#: what :func:`run_frame` counts for the notes (:func:`run_notes`)
RUN_COUNTS = ("never", "open", "waiting", "held", "zero", "cpu")


@dataclass
class RunETTR(Result):
    """Per-run ETTR (:attr:`runs`) and its distribution by size and priority.

    Attributes
    ----------
    runs : polars.DataFrame or polars.LazyFrame
        One row per run: attempts, interruptions by cause (``hw_interruptions``, ``preemptions``,
        ``other_interruptions``), gpus, wall / scheduled / queue / overhead / lost / productive
        hours, ``ettr``, ``ettr_hardware``, ``open``, bucket. A fleet's runs
        (:func:`reliability.analyses.ettr_by_cluster`) are a LazyFrame over their parts: the
        tables read the columns they aggregate, on polars' streaming engine.
    ckpt_interval_h, restart_h, lost_work
        The assumptions (see the module doc).
    observation_end : datetime or None
        Censoring time of runs still going [UTC].
    """

    title = "ETTR of job runs (Kokolis et al. HPCA'25 Fig. 9)"
    #: ETTRs are fractions: read against 1, a residue of a run that lost all its work prints as
    #: 0 even in a one-row table
    table_scales = dict.fromkeys(
        (
            "ettr_by_run",
            "ettr_median",
            "ettr_p10",
            "ettr_p90",
            "ettr_by_gpu_time",
            "ettr_hardware_by_run",
            "ettr_hardware_by_gpu_time",
        ),
        1.0,
    )
    runs: pl.DataFrame | pl.LazyFrame
    ckpt_interval_h: float | None
    restart_h: float
    lost_work: str
    observation_end: datetime | None = None
    notes: list[str] = field(default_factory=list)

    def _agg(self, by: str) -> pl.DataFrame:
        r = self.runs
        gpu_wall = (pl.col("gpus") * pl.col("wall_h")).sum()
        measures = self._measures(gpu_wall)
        if not isinstance(r, pl.LazyFrame):
            return r.group_by(by).agg(measures).sort(by)
        done = self.__dict__.setdefault("_tables", {})  # (each a pass over the parts: once)
        if by not in done:
            done[by] = self._lazy_agg(r, by, measures)
        return done[by]

    @staticmethod
    def _lazy_agg(r: pl.LazyFrame, by: str, measures: list[pl.Expr]) -> pl.DataFrame:
        # a fleet's parts: the counts, sums and means on the streaming engine a batch at a
        # time; the quantiles from the two columns they read (not every column at once)
        names = [m.meta.output_name() for m in measures]
        ranked = [m for m, n in zip(measures, names, strict=True) if n in _QUANTILES]
        summed = [m for m, n in zip(measures, names, strict=True) if n not in _QUANTILES]
        sums = r.group_by(by).agg(summed).collect(engine="streaming")
        ranks = r.select(by, "ettr").collect(engine="streaming").group_by(by).agg(ranked)
        return sums.join(ranks, on=by, how="left", nulls_equal=True).select(by, *names).sort(by)

    @staticmethod
    def _measures(gpu_wall: pl.Expr) -> list[pl.Expr]:
        return [
            pl.len().alias("runs"),
            pl.col("open").sum().cast(pl.Int64).alias("open_runs"),
            pl.col("ettr").mean().alias("ettr_by_run"),
            pl.col("ettr").median().alias("ettr_median"),
            pl.col("ettr").quantile(0.10).alias("ettr_p10"),
            pl.col("ettr").quantile(0.90).alias("ettr_p90"),
            pl.when(gpu_wall > 0)
            .then((pl.col("gpus") * pl.col("productive_h")).sum() / gpu_wall)
            .alias("ettr_by_gpu_time"),
            pl.col("ettr_hardware").mean().alias("ettr_hardware_by_run"),
            pl.when((pl.col("gpus") * pl.col("wall_hw_h")).sum() > 0)
            .then(
                (pl.col("gpus") * pl.col("productive_h")).sum()
                / (pl.col("gpus") * pl.col("wall_hw_h")).sum()
            )
            .alias("ettr_hardware_by_gpu_time"),
            pl.col("interruptions").sum(),
            pl.col("hw_interruptions").sum(),
            pl.col("preemptions").sum(),
            pl.col("other_interruptions").sum(),
            (pl.col("gpus") * pl.col("lost_h")).sum().alias("gpu_hours_lost"),
            (pl.col("gpus") * pl.col("lost_hw_h")).sum().alias("gpu_hours_lost_hw"),
            (pl.col("gpus") * pl.col("overhead_h")).sum().alias("gpu_hours_overhead"),
            (pl.col("gpus") * pl.col("queue_h")).sum().alias("gpu_hours_queued"),
        ]

    @property
    def by_size(self) -> pl.DataFrame:
        """ETTR by job-size bucket [GPUs] (Fig. 9); bucket 0 = CPU-only."""
        return self._agg("bucket")

    @property
    def by_priority(self) -> pl.DataFrame:
        """ETTR by QoS (or priority where there is no QoS)."""
        return self._agg("priority_class")

    @property
    def summary(self) -> pl.DataFrame:
        """Whole-cluster figures, both weightings."""
        return self._agg("all").drop("all")

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the result: runs, attempts, hardware interruptions, open (censored) runs."""
        n, attempts, hw, open_ = (
            self.runs.lazy()
            .select(
                pl.len(),
                pl.col("attempts").sum(),
                pl.col("hw_interruptions").sum(),
                pl.col("open").sum(),
            )
            .collect()
            .row(0)
        )
        return {
            "runs": int(n),
            "attempts": int(attempts or 0),
            "hardware interruptions": int(hw or 0),
            "open runs (censored)": int(open_ or 0),
        }

    def tables(self) -> dict[str, pl.DataFrame]:
        """Return the result's tables by name.

        Returns
        -------
        dict of str to polars.DataFrame
            ``"summary"`` (the headline ETTR figures) and ``"by size"`` (ETTR per job-size bucket).
        """
        return {"summary": self.summary, "by size": self.by_size}

    def _lines(self) -> list[str]:
        ck = "none" if self.ckpt_interval_h is None else f"{60 * self.ckpt_interval_h:.0f} min"
        head = (
            f"ETTR over job runs (checkpoint interval {ck}, restart {60 * self.restart_h:.0f} min, "
            f"lost work {self.lost_work})"
        )
        if self.summary.height == 0:  # (no runs: the summary's group-by has no group)
            return [head + ": no runs with wall time to measure"]
        s = self.summary.row(0, named=True)
        lines = [
            f"{head}: {s['ettr_by_run']:.3f} by run, {fmt_num(s['ettr_by_gpu_time'], scale=1)} by GPU time over "
            f"{s['runs']:,} runs; with hardware interruptions only, from the first start (what E[ETTR] models): "
            f"{fmt_num(s['ettr_hardware_by_run'], 3, scale=1)} by run, {fmt_num(s['ettr_hardware_by_gpu_time'], scale=1)} by GPU time",
            f"interruptions: {s['hw_interruptions']:,} hardware, {s['preemptions']:,} preemptions, "
            f"{s['other_interruptions']:,} other",
            "by size [GPUs]:  runs  ETTR(run)  ETTR(GPU-time)  hardware-only  median  p10",
        ]
        for row in self.by_size.iter_rows(named=True):
            name = "CPU" if row["bucket"] == 0 else str(row["bucket"])
            lines.append(
                f"  {name:>6}  {row['runs']:>8,}  {row['ettr_by_run']:9.3f}  {fmt_num(row['ettr_by_gpu_time'], scale=1):>14}"
                f"  {fmt_num(row['ettr_hardware_by_run'], 3, scale=1):>13}  {row['ettr_median']:6.3f}  {row['ettr_p10']:.3f}"
            )
        return lines

    @classmethod
    def _example(cls, kind: str = "normal") -> RunETTR:
        """Build a tiny instance: the runs of a 14-day, 16-node cluster (for contract tests).

        ``kind="no failures"``: the same without hardware failures.
        """
        from reliability.models._examples import tiny_jobs

        jobs, end = tiny_jobs(kind=kind)
        return job_run_ettr(jobs, observation_end=end)


def run_key_columns(jobs: pl.DataFrame, run_key: str | list[str] | None) -> list[str]:
    """Return the columns that identify a run (default: cluster and job id), checked.

    Parameters
    ----------
    jobs : polars.DataFrame
        The attempts.
    run_key : str, list of str or None
        Column(s) linking a run's attempts (e.g. ``["cluster", "user", "name"]`` for
        resubmissions); None: ``["cluster", "job_id"]``.

    Returns
    -------
    list of str
        The key columns.

    Raises
    ------
    ValueError
        If a column is not in ``jobs``.
    """
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
    return key


#: the attempts' columns :func:`job_run_ettr` reads (besides the run key)
ATTEMPT_COLUMNS = (
    "start_time",
    "end_time",
    "submit_time",
    "state",
    "failure_domain",
    "n_accelerators",
    "qos",
    "priority",
)


def job_run_ettr(
    source: Dataset | pl.DataFrame,
    ckpt_interval_h: float | None = 1.0,
    restart_h: float = 5.0 / 60.0,
    *,
    run_key: str | list[str] | None = None,
    lost_work: str = "aligned",
    ckpt_min_gpus: int = 0,
    observation_end: datetime | None = None,
) -> RunETTR:
    """ETTR per job run from a Dataset (attributed here) or a jobs frame (see module doc).

    Parameters
    ----------
    source : Dataset or polars.DataFrame
        A Dataset, or a jobs frame (attributed or not).
    ckpt_interval_h : float or None
        Assumed Δt [h]; None = no checkpoints (an interruption loses the attempt).
    restart_h : float
        Assumed u0 [h] per restart.
    run_key : str or list of str or None
        Column(s) that identify a run; default (cluster, job_id).
    lost_work : str
        "aligned" or "expected" (see module doc).
    ckpt_min_gpus : int
        Runs with fewer GPUs are assumed not to checkpoint.
    observation_end : datetime or None
        When the data end [UTC]; runs still going then are censored there. Default: the Dataset's
        observation end, else the latest timestamp (noted).

    Returns
    -------
    RunETTR
        One row per job run (attempts, interruptions by cause, wall and productive time, ETTR),
        ETTR by job size and the summary (Kokolis et al., HPCA '25, §V).
    """
    check_assumptions(ckpt_interval_h, lost_work)
    jobs, obs_end, notes = attributed_jobs(source, observation_end)
    key = run_key_columns(jobs, run_key)
    runs, counts = run_frame(
        jobs, key, obs_end, ckpt_interval_h, restart_h, lost_work, ckpt_min_gpus
    )
    return RunETTR(
        runs=runs,
        ckpt_interval_h=ckpt_interval_h,
        restart_h=restart_h,
        lost_work=lost_work,
        observation_end=obs_end,
        notes=notes + run_notes(counts),
    )


def check_assumptions(ckpt_interval_h: float | None, lost_work: str) -> None:
    """Refuse a checkpoint interval or lost-work rule :func:`run_frame` cannot use.

    Parameters
    ----------
    ckpt_interval_h : float or None
        Assumed Δt [h] (None: no checkpoints).
    lost_work : str
        ``"aligned"`` or ``"expected"``.

    Raises
    ------
    ValueError
        Naming the argument.
    """
    if lost_work not in ("aligned", "expected"):
        raise ValueError(f"lost_work must be 'aligned' or 'expected', got {lost_work!r}")
    if ckpt_interval_h is not None and ckpt_interval_h <= 0:
        raise ValueError("ckpt_interval_h must be positive (or None for no checkpoints)")


def run_frame(
    jobs: pl.DataFrame,
    key: list[str],
    obs_end: datetime | None,
    ckpt_interval_h: float | None,
    restart_h: float,
    lost_work: str,
    ckpt_min_gpus: int,
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Return :func:`job_run_ettr`'s runs and the counts behind its notes (:func:`run_notes`).

    A run's row depends on its own attempts and the observation end only, and the runs come
    in the order of their key: the runs of a fleet's clusters, each computed on its own
    cluster's attempts (a key that holds ``cluster``), put end to end in cluster order are
    the whole fleet's runs (:func:`reliability.analyses.ettr_by_cluster`), and their counts add.

    Parameters
    ----------
    jobs : polars.DataFrame
        Attributed attempts.
    key : list of str
        The run key's columns.
    obs_end : datetime or None
        The observation end [UTC].
    ckpt_interval_h, restart_h, lost_work, ckpt_min_gpus
        As :func:`job_run_ettr` [h, h, -, GPUs].

    Returns
    -------
    (polars.DataFrame, dict of str to int)
        The runs (:attr:`RunETTR.runs`) and :data:`RUN_COUNTS` by name.
    """
    # only the columns read below: the filters and the sort copy every column they carry (the
    # host lists alone are hundreds of MiB at a million attempts)
    used = (*key, *ATTEMPT_COLUMNS)
    jobs = jobs.select(c for c in dict.fromkeys(used) if c in jobs.columns)
    started, n_open = clip_attempts(jobs, obs_end)
    waiting = _waiting_runs(jobs, key, obs_end)
    started = started.with_columns(end_time=pl.col("stop"))
    counts = dict.fromkeys(RUN_COUNTS, 0)
    counts["never"] = jobs.select(key).unique().height - started.select(key).unique().height
    counts["open"] = n_open
    dt = ckpt_interval_h
    state = pl.col("state").cast(pl.String)
    # one pass over attempts sorted by run and start: run boundaries, not window functions
    # over string keys (those are slow with millions of runs)
    # (stable: a run's attempts that start together keep their input order, so its last
    # attempt, hence ``final_state``, does not depend on how polars split the sort)
    a = started.sort([*key, "start_time"], maintain_order=True)
    new_run = pl.any_horizontal([pl.col(c).ne_missing(pl.col(c).shift(1)) for c in key])
    row = pl.int_range(pl.len(), dtype=pl.Int64)
    a = a.with_columns(_first=new_run.fill_null(True)).with_columns(
        _rid=pl.col("_first").cum_sum(), nth=row - pl.when("_first").then(row).forward_fill()
    )
    a = a.with_columns(run_gpus=pl.col("n_accelerators").max().over("_rid"))
    a = a.with_columns(
        elapsed_h=(
            (pl.col("end_time") - pl.col("start_time")).dt.total_microseconds() / 1e6 / 3600.0
        ).clip(0.0),
        interrupted=~pl.col("open")
        & (
            state.is_in(INTERRUPTING_STATES)
            | ((state == "FAILED") & pl.col("failure_domain").is_in(INTERRUPTING_DOMAINS))
        ),
    )
    a = a.with_columns(
        cause=pl.when(~pl.col("interrupted"))
        .then(pl.lit(None, pl.String))
        .when(pl.col("failure_domain").is_in(HARDWARE))
        .then(pl.lit("hardware"))
        .when(state == "PREEMPTED")
        .then(pl.lit("preemption"))
        .otherwise(pl.lit("other"))
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
    # a requeue the application asked for (its RequeueExit code: attribution's "user") follows
    # a checkpoint it took itself, if it checkpoints at all
    asked = ((state == "REQUEUED") & (pl.col("failure_domain") == "user")).fill_null(False)
    a = a.with_columns(
        lost_h=pl.when(~pl.col("interrupted") | (asked & checkpoints))
        .then(0.0)
        .when(checkpoints)
        .then(work - kept)
        .otherwise(work)
    )
    # what each non-hardware interruption cost: its lost work, the next attempt's restart
    # overhead and the queue wait until that restart
    prev_cause = pl.when(~pl.col("_first")).then(pl.col("cause").shift(1))
    prev_end = pl.when(~pl.col("_first")).then(pl.col("end_time").shift(1))
    a = a.with_columns(
        gap_h=((pl.col("start_time") - prev_end).dt.total_microseconds() / 1e6 / 3600.0)
        .clip(0.0)
        .fill_null(0.0),
        prev_cause=prev_cause,
    ).with_columns(
        non_hw_cost_h=pl.when(pl.col("cause").is_in(["preemption", "other"]))
        .then(pl.col("lost_h"))
        .otherwise(0.0)
        + pl.when(pl.col("prev_cause").is_in(["preemption", "other"]))
        .then(pl.col("gap_h") + pl.col("overhead_h"))
        .otherwise(0.0),
    )
    # QoS where the logs have it, else the numeric priority
    classes = [pl.col(c).cast(pl.String) for c in ("qos", "priority") if c in a.columns]
    prio = pl.coalesce(classes) if classes else pl.lit(None, pl.String)
    runs = a.group_by("_rid", maintain_order=True).agg(  # run order = the sorted key order
        *[pl.col(c).first() for c in key],
        attempts=pl.len(),
        interruptions=pl.col("interrupted").sum().cast(pl.Int64),
        hw_interruptions=(pl.col("cause") == "hardware").sum().cast(pl.Int64),
        preemptions=(pl.col("cause") == "preemption").sum().cast(pl.Int64),
        other_interruptions=(pl.col("cause") == "other").sum().cast(pl.Int64),
        gpus=pl.col("n_accelerators").max().cast(pl.Int64),
        priority_class=prio.first().fill_null("unknown"),
        first_submit=pl.col("submit_time").min(),
        first_start=pl.col("start_time").min(),
        last_end=pl.col("end_time").max(),
        last_cause=pl.col("cause").last(),
        final_state=pl.col("state").last().cast(pl.String),
        open=pl.col("open").any(),
        scheduled_h=pl.col("elapsed_h").sum(),
        overhead_h=pl.col("overhead_h").sum(),
        lost_h=pl.col("lost_h").sum(),
        lost_hw_h=pl.when(pl.col("cause") == "hardware")
        .then(pl.col("lost_h"))
        .otherwise(0.0)
        .sum(),
        non_hw_cost_h=pl.col("non_hw_cost_h").sum(),
    )
    runs = _open_waiting(runs, waiting, key, obs_end)
    runs = runs.with_columns(
        wall_h=(
            pl.col("last_end") - pl.min_horizontal("first_submit", "first_start")
        ).dt.total_microseconds()
        / 1e6
        / 3600.0,
    ).with_columns(
        queue_h=(pl.col("wall_h") - pl.col("scheduled_h")).clip(0.0),
        productive_h=pl.col("scheduled_h") - pl.col("overhead_h") - pl.col("lost_h"),
        # from the first start: the closed forms model a job that runs (with a wait after
        # each interruption), not its first wait in the queue
        wall_hw_h=(
            pl.col("wall_h")
            - pl.col("non_hw_cost_h")
            - (pl.col("first_start") - pl.col("first_submit"))
            .dt.total_microseconds()
            .clip(0)
            .fill_null(0)  # (a run that never started: its whole wall time, as before)
            / 1e6
            / 3600.0
        ).clip(0.0),
    )
    runs = runs.drop("last_cause")
    counts["waiting"] = int(runs.get_column("waiting").sum()) if runs.height else 0
    counts["held"] = int(runs.get_column("censored_at_requeue").sum()) if runs.height else 0
    runs = runs.drop("waiting", "censored_at_requeue")
    counts["zero"] = runs.filter(pl.col("wall_h") <= 0).height
    runs = (
        runs.filter(pl.col("wall_h") > 0)
        .with_columns(
            ettr=(pl.col("productive_h") / pl.col("wall_h")).clip(0.0, 1.0),
            ettr_hardware=pl.when(pl.col("wall_hw_h") > 0)
            .then(pl.col("productive_h") / pl.col("wall_hw_h"))
            .clip(0.0, 1.0),
            bucket=size_bucket(pl.col("gpus")),
            all=pl.lit("all"),
        )
        .drop("_rid")
    )
    counts["cpu"] = runs.filter(pl.col("bucket") == 0).height
    return runs, counts


def run_notes(counts: dict[str, int]) -> list[str]:
    """Say what :func:`run_frame`'s counts mean for the ETTR (the runs left out or censored).

    Parameters
    ----------
    counts : dict of str to int
        Runs never started, attempts open at the end, runs waiting or held at the end, runs
        of zero wall time and runs of CPU-only jobs (:func:`run_frame`; a fleet's: summed).

    Returns
    -------
    list of str
        One note per count above 0.
    """
    notes = []
    if counts["never"]:
        notes.append(f"{counts['never']:,} runs never started (no ETTR) and are left out")
    if counts["open"]:
        notes.append(
            f"{counts['open']:,} attempts still running at the observation end: their runs are measured up to it (censored)"
        )
    if counts["waiting"]:
        notes.append(
            f"{counts['waiting']:,} runs wait to run again at the observation end (a pending or held rerun, "
            "or a requeue just before the end): open, measured up to it (censored), not finished"
        )
    if counts["held"]:
        notes.append(
            f"{counts['held']:,} runs end in a requeue more than {REQUEUE_LISTED_S / 60:.0f} min before the "
            "observation end with no later record: a rerun held, or cancelled while held (a "
            "time-windowed sacct lists neither); open, censored at the requeue. `sacct -j` with "
            "their job ids (what `reliability collect` runs) says which"
        )
    if counts["zero"]:
        notes.append(f"{counts['zero']:,} runs with zero wall time (no ETTR) are left out")
    if counts["cpu"]:
        notes.append(
            f"{counts['cpu']:,} runs of CPU-only jobs are their own size class (0 GPUs: no GPU-time weight)"
        )
    return notes


def _waiting_runs(jobs: pl.DataFrame, key: list[str], obs_end: datetime | None) -> pl.DataFrame:
    """Return the runs whose last record waits to run again at the observation end.

    The last record by start (a record that never started, e.g. the pending rerun of a
    requeued job, comes last), then submit time: PENDING, REQUEUED or held. ``extend``: the run
    is known to wait at the end (a listed rerun, or a requeue too recent for its rerun to be
    listed), so its wall time runs to the end.
    """
    schema = {**{c: jobs.schema[c] for c in key}, "extend": pl.Boolean}
    if obs_end is None or jobs.height == 0:
        return pl.DataFrame(schema=schema)
    end = pl.lit(obs_end).cast(pl.Datetime("us", "UTC"))
    last = (
        jobs.select(*key, "start_time", "submit_time", "end_time", "state")
        .sort([*key, "start_time", "submit_time"], nulls_last=True, maintain_order=True)
        .group_by(key, maintain_order=True)
        .agg(pl.col("state").last().cast(pl.String), pl.col("submit_time", "end_time").last())
    )
    # a record submitted after the end is outside the observation: it does not hold the run open
    last = last.filter(
        pl.col("state").is_in(["PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED"])
        & (pl.col("submit_time").is_null() | (pl.col("submit_time") <= end))
    )
    recent = (end - pl.col("end_time")).dt.total_microseconds() <= int(REQUEUE_LISTED_S * 1e6)
    return last.select(*key, extend=(pl.col("state") != "REQUEUED") | recent.fill_null(False)).cast(
        schema
    )  # type: ignore[arg-type]


def _open_waiting(
    runs: pl.DataFrame, waiting: pl.DataFrame, key: list[str], obs_end: datetime | None
) -> pl.DataFrame:
    """Mark the runs waiting to run again as open; those known to wait at the end run to it.

    The wait since their last attempt ended is queue time so far; when that attempt was
    preempted or otherwise interrupted (not by hardware), it is also what the interruption has
    cost so far (left out of ``ettr_hardware``). ``waiting`` / ``censored_at_requeue`` count
    the two kinds for the notes.
    """
    if obs_end is None or waiting.height == 0:
        return runs.with_columns(waiting=pl.lit(False), censored_at_requeue=pl.lit(False))
    end = pl.lit(obs_end).cast(pl.Datetime("us", "UTC"))
    runs = runs.join(
        waiting.with_columns(_w=pl.lit(True)),
        on=key,
        how="left",
        nulls_equal=True,
        maintain_order="left",
    )
    w = ~pl.col("open") & pl.col("_w").fill_null(False) & (pl.col("last_end") <= end)
    run_on = w & pl.col("extend")
    tail_h = (end - pl.col("last_end")).dt.total_microseconds() / 1e6 / 3600.0
    return runs.with_columns(
        non_hw_cost_h=pl.col("non_hw_cost_h")
        + pl.when(run_on & pl.col("last_cause").is_in(["preemption", "other"]))
        .then(tail_h)
        .otherwise(0.0),
        last_end=pl.when(run_on).then(end).otherwise(pl.col("last_end")),
        open=pl.col("open") | w,
        waiting=run_on,
        censored_at_requeue=w & ~pl.col("extend"),
    ).drop("_w", "extend")
