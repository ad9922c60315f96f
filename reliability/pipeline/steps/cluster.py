"""Stages of a GPU cluster's jobs and the report sections that render them.

``attribution``, ``mttf``, ``rates``, ``workload``, ``ettr`` and ``plan`` (Kokolis et al.,
HPCA '25, §III-V).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from reliability import plots
from reliability import references as ref
from reliability._result import Result, fmt_duration_h, fmt_num
from reliability.analyses.attribution import AttributionResult, attribute
from reliability.errors import Hint, Hinted
from reliability.models.failures import MTTFResult, RateSeries, WorkloadResult
from reliability.models.failures.mttf import SIZE_BUCKETS
from reliability.models.failures.scaling import ScalingCheck
from reliability.models.nodes import NodeHealth
from reliability.models.recovery import PlanResult, RecoveryCosts, RunETTR, StrategyComparison
from reliability.pipeline.config import PipelineConfig
from reliability.pipeline.steps.common import Context, analysis_terms, notes_blocks, plot_block
from reliability.pipeline.steps.data import DataResult
from reliability.report.model import Section, Table, Text

__all__ = [
    "AttributionResult",
    "CheckpointPlan",
    "attribution",
    "attribution_caption",
    "checkpoint_plan",
    "ettr",
    "ettr_section",
    "mttf",
    "mttf_section",
    "next_scale",
    "plan_section",
    "plan_sizes",
    "rates",
    "rates_section",
    "reason_blocks",
    "scaling_section",
    "workload",
    "workload_sections",
]

#: at most this many job sizes are planned for by default (the largest ones)
MAX_PLAN_SIZES = 6


def reason_blocks(a: AttributionResult) -> list[Any]:
    """Say how node-state reasons were counted: the unclassified faults, then every reason.

    Parameters
    ----------
    a : AttributionResult
        The ``attribution`` stage's result.

    Returns
    -------
    list
        A sentence and the reason table (nothing when no node left service).
    """
    r = a.reasons
    if r.height == 0:
        return []
    hw = a.jobs.filter(pl.col("failure_domain").is_in(["hardware", "infrastructure"]))
    unclassified = hw.filter(pl.col("reason_class") == "unclassified").height
    admin = int(r.filter(pl.col("reason_class") == "administrative")["intervals"].sum())
    text = (
        f"Evidence first, words second: a node leaving service (DOWN, DRAIN, FAIL) in a failed "
        f"attempt's window is evidence that the node ended it, unless its reason is an "
        f"administrator's. {unclassified:,} of {hw.height:,} hardware-attributed attempts rest on "
        f"an unclassified node fault (a reason that names no signal: cause unknown); "
        f"{admin:,} administrative interval(s) were not counted as evidence. Add your site's "
        "wording in [attribution.reasons] (`reliability analyze --reasons FILE`)."
    )
    return [
        Text(text),
        Table(
            "node_state_reasons",
            r,
            "Every reason a node left service with: its class (signal, slurm, unclassified node "
            "fault, administrative), the intervals and nodes, and the failed attempts it explains "
            "(of those, hardware).",
            max_rows=40,
            wrap=("reason",),
        ),
    ]


def attribution_caption(a: AttributionResult | None, before_min: float, after_min: float) -> str:
    """Describe the attribution rule with the window the run used.

    Parameters
    ----------
    a : AttributionResult or None
        The ``attribution`` stage's result (its window wins when given).
    before_min, after_min : float
        The window around a job's end, from ``[analysis]`` [min].

    Returns
    -------
    str
        The rule, beside the paper's window (Kokolis et al., HPCA '25, §III: 10 and 5 min).
    """
    b, f = (a.before_min, a.after_min) if a is not None else (before_min, after_min)
    return (
        f"NODE_FAIL, or FAILED with a critical health event on one of the job's nodes from {b:g} min before "
        f"its end to {f:g} min after (the paper uses 10 and 5; {ref.HPCA25.short} §III)"
    )


# ---------------------------------------------------------------- stages


def attribution(cluster_data: DataResult, cfg: PipelineConfig) -> AttributionResult:
    """Run stage ``attribution``: how every attempt ended, and why.

    Kokolis et al., HPCA '25, §III (see :func:`reliability.attribution.attribute_failures`).

    Parameters
    ----------
    cluster_data : DataResult
        The cluster's Dataset.
    cfg : PipelineConfig
        The pipeline configuration (``[analysis].before_min``, ``after_min``,
        ``requeue_exit_codes``, ``gpus_per_node``; ``[pipeline].scheduler``: one cluster per
        Dask task).

    Returns
    -------
    AttributionResult
        Every attempt with its failure domain and cause, the window used and the observation end.
    """
    a = cfg.analysis
    options = {
        "before_min": a.before_min,
        "after_min": a.after_min,
        "requeue_exit_codes": a.requeue_exit_codes,
        "reasons": cfg.reasons,
        "gpus_per_node": a.gpus_per_node,
    }
    ds = cluster_data.open()
    if not cfg.scheduler:
        return attribute(ds, **options)
    from reliability.parallel import Executor

    address = None if cfg.scheduler == "local" else cfg.scheduler
    with Executor("dask", scheduler=address) as ex:  # one cluster per task (same result)
        return attribute(ds, executor=ex, **options)


def mttf(attribution: AttributionResult, cfg: PipelineConfig) -> MTTFResult:
    """Run stage ``mttf``: r_f and MTTF by job size, censored at the observation end.

    Kokolis et al., HPCA '25, §IV, Fig. 7 (see :func:`reliability.models.failures.fit_mttf`).

    Parameters
    ----------
    attribution : AttributionResult
        The attribution stage's result.
    cfg : PipelineConfig
        The pipeline configuration (``[analysis].min_gpus``, ``gpus_per_node``).

    Returns
    -------
    MTTFResult
        r_f with its intervals, MTTF by size bucket and the projections.
    """
    from reliability.models.failures import fit_mttf

    a = attribution
    return fit_mttf(
        a.jobs,
        min_gpus=cfg.analysis.min_gpus,
        gpus_per_node=attribution.gpus_per_node,
        observation_end=a.observation_end,
    )


def rates(attribution: AttributionResult, cfg: PipelineConfig) -> RateSeries:
    """Run stage ``rates``: the weekly failure rate and its trend.

    Parameters
    ----------
    attribution : AttributionResult
        The attribution stage's result.
    cfg : PipelineConfig
        The pipeline configuration (``[analysis].min_gpus``).

    Returns
    -------
    RateSeries
        The weekly series, the window's and the recent rate, and the trend test.
    """
    from reliability.models.failures import failure_rate_series

    a = attribution
    return failure_rate_series(
        a.jobs, min_gpus=cfg.analysis.min_gpus, observation_end=a.observation_end
    )


def workload(attribution: AttributionResult) -> WorkloadResult:
    """Run stage ``workload``: job states, sizes, taxonomy, secondary preemptions, crash loops.

    Parameters
    ----------
    attribution : AttributionResult
        The attribution stage's result.

    Returns
    -------
    WorkloadResult
        See :func:`reliability.models.failures.workload_summary`.
    """
    from reliability.models.failures import workload_summary

    a = attribution
    return workload_summary(a.jobs, observation_end=a.observation_end)


def ettr(attribution: AttributionResult, cfg: PipelineConfig) -> RunETTR:
    """Run stage ``ettr``: ETTR of every job run, with the assumed checkpoint interval and restart.

    Kokolis et al., HPCA '25, §V (see :func:`reliability.models.recovery.job_run_ettr`).

    Parameters
    ----------
    attribution : AttributionResult
        The attribution stage's result.
    cfg : PipelineConfig
        The pipeline configuration (``[analysis].ckpt_interval_min``, ``restart_min``,
        ``ckpt_min_gpus``).

    Returns
    -------
    RunETTR
        ETTR per run, by size and the summary.
    """
    from reliability.models.recovery import job_run_ettr

    a, c = attribution, cfg.analysis
    return job_run_ettr(
        a.jobs,
        c.ckpt_interval_h,
        c.restart_h,
        ckpt_min_gpus=c.ckpt_min_gpus,
        observation_end=a.observation_end,
    )


@dataclass
class CheckpointPlan(Result):
    """The checkpoint interval per job size that reaches the target ETTR at the cluster's rate.

    Attributes
    ----------
    sizes : polars.DataFrame
        Per job size: ``n_gpus``, ``basis`` (which rate), ``rate_per_1000_node_days``, ``mttf_h``,
        ``recommended_interval_min`` (null: no interval reaches the target),
        ``ettr_at_recommended``, ``at_upper_bound_min`` (the same at the rate's upper bound),
        ``status``.
    plans : list of PlanResult
        The :class:`~reliability.models.recovery.PlanResult` of each size, in order.
    target_ettr, restart_h : float
        The target and the assumed restart overhead [h].
    sizes_basis : str
        Where the sizes come from.
    refusal : str or None
        Why nothing could be planned (None when something was).
    recovery : RecoveryCosts or None
        Queue wait after hardware interruptions and node repair times, measured from the logs.
    strategies : list of StrategyComparison
        Recovery strategies compared at the largest planned size and at the projected next
        scale (the next power of two above it).
    """

    title = "Checkpoint plan per job size (Kokolis et al. HPCA'25 §V, Fig. 10)"
    sizes: pl.DataFrame
    plans: list[PlanResult]
    target_ettr: float
    restart_h: float
    sizes_basis: str
    refusal: str | None = None
    notes: list[str] = field(default_factory=list)
    recovery: RecoveryCosts | None = None
    strategies: list[StrategyComparison] = field(default_factory=list)

    @property
    def strategy_table(self) -> pl.DataFrame:
        """The strategies at each compared size: ETTR and what each assumes (times in minutes)."""
        frames = [
            c.summary.select(
                pl.lit(int(c.n_gpus), pl.Int64).alias("n_gpus"),
                pl.lit(scale).alias("scale"),
                "strategy",
                "ettr",
                (60 * pl.col("ckpt_interval_h")).alias("ckpt_interval_min"),
                (60 * pl.col("queue_h")).alias("queue_min"),
                "spare_nodes",
                "p_wait",
                "assumes",
            )
            for c, scale in zip(self.strategies, ("largest job", "next scale"), strict=False)
        ]
        return pl.concat(frames) if frames else pl.DataFrame()

    @property
    def summary(self) -> pl.DataFrame:
        """The per-size plan table."""
        return self.sizes

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the plan: those of the rate of the first size planned (empty without a plan)."""
        return self.plans[0].sample_sizes if self.plans else {}

    @property
    def largest(self) -> PlanResult | None:
        """The plan of the largest size (the what-if figure's)."""
        return self.plans[-1] if self.plans else None

    def _lines(self) -> list[str]:
        if self.refusal:
            return [f"No checkpoint plan: {self.refusal}"]
        lines = [
            f"Checkpoint intervals for ETTR {self.target_ettr:.2f} with a {fmt_duration_h(self.restart_h)} restart:"
        ]
        lines += [
            f"  {r['n_gpus']:>7,} GPUs: {r['status']}" for r in self.sizes.iter_rows(named=True)
        ]
        return lines

    @classmethod
    def _example(cls, kind: str = "normal") -> CheckpointPlan:
        """Build a tiny instance: the plan per job size of a 14-day, 16-node cluster (for contract tests).

        ``kind="no failures"``: the same without hardware failures.
        """
        from types import SimpleNamespace

        from reliability.pipeline.analysis import AnalysisConfig

        cfg = SimpleNamespace(analysis=AnalysisConfig(min_gpus=1))
        # no node states: the repair time is assumed (as for a cluster without them)
        return checkpoint_plan(
            AttributionResult._example(kind),
            MTTFResult._example(kind),
            None,  # type: ignore[arg-type]
            cfg,  # type: ignore[arg-type]
        )


def plan_sizes(
    attributed: pl.DataFrame, cfg: PipelineConfig, per_node: int = 8
) -> tuple[list[int], str]:
    """Choose the job sizes to plan for.

    Parameters
    ----------
    attributed : polars.DataFrame
        Attributed attempts (``n_accelerators``).
    cfg : PipelineConfig
        The pipeline configuration (``[analysis].plan_gpus``).
    per_node : int
        GPUs per node (sizes of at least one node are planned for).

    Returns
    -------
    (list of int, str)
        The sizes [GPUs] and where they came from: ``[analysis].plan_gpus``, else the size
        buckets of the cluster's GPU jobs of at least one node and its largest GPU job (the
        largest :data:`MAX_PLAN_SIZES`); empty with ``"no GPU jobs"``.
    """
    a = cfg.analysis
    if a.plan_gpus:
        return sorted(set(a.plan_gpus)), "[analysis].plan_gpus"
    g = attributed.get_column("n_accelerators").drop_nulls()
    g = g.filter(g > 0)
    if g.len() == 0:
        return [], "no GPU jobs"
    largest = int(g.max())  # type: ignore[arg-type]
    edges = {b for b in SIZE_BUCKETS if b >= per_node and (g >= b).any()}
    sizes = sorted(edges | {largest})[-MAX_PLAN_SIZES:]
    return sizes, "the cluster's job sizes (size buckets of one node and more, and the largest job)"


def _status(p: PlanResult) -> str:
    conservative = (
        " (conservative: planned at the rate's upper bound, no failures seen)"
        if p.basis.startswith("upper")
        else ""
    )
    if p.recommended_interval_h is not None:
        return (
            f"checkpoint at least every {fmt_duration_h(p.recommended_interval_h)} "
            f"(expected ETTR {p.ettr_at_recommended:.3f}){conservative}"
        )
    if p.basis.startswith("upper"):
        return (
            "too little exposure to plan: no failures seen, and the data do not rule out rates at which "
            "no checkpoint interval reaches the target; collect more history"
        )
    q = p.queue_h or 0.0
    if q > 0 and p.mttf_h:
        # each interruption costs at least the wait for the rerun: ETTR <= MTTF / (MTTF + q)
        cap = p.mttf_h / (p.mttf_h + q)
        if cap < p.target_ettr:
            return (
                f"no checkpoint interval reaches ETTR {p.target_ettr:.2f}: the measured wait for the rerun after "
                f"an interruption ({fmt_duration_h(q)}) alone caps it at {cap:.3f} at this rate; recover without "
                "waiting in the queue (hot spares, elastic training: see the recovery strategies below)"
            )
        return (
            f"no checkpoint interval reaches ETTR {p.target_ettr:.2f} with a {fmt_duration_h(p.restart_h)} "
            f"restart and a {fmt_duration_h(q)} wait for the rerun at this rate: shorten the restart or the wait"
        )
    return (
        f"no checkpoint interval reaches ETTR {p.target_ettr:.2f} with a {fmt_duration_h(p.restart_h)} "
        "restart at this rate: shorten the restart"
    )


def checkpoint_plan(
    attribution: AttributionResult, mttf: MTTFResult, node_health: NodeHealth, cfg: PipelineConfig
) -> CheckpointPlan:
    """Run stage ``plan``: a checkpoint interval for each job size at the fitted r_f.

    The rate is the recent rate, the window's, or the upper bound when no failures were seen:
    :func:`reliability.models.recovery.plan` says which (Kokolis et al., HPCA '25, §V).

    Parameters
    ----------
    attribution : AttributionResult
        The attributed jobs.
    mttf : MTTFResult
        The fitted r_f.
    node_health : NodeHealth
        Out-of-service spells (the repair times hot spares need).
    cfg : PipelineConfig
        The pipeline configuration (``[analysis].target_ettr``, ``restart_min``,
        ``plan_gpus``, ``ckpt_interval_min``).

    Returns
    -------
    CheckpointPlan
        One plan per size, the per-size table, the measured recovery costs and the recovery
        strategies compared at the largest size and the next scale; or the refusal (why there
        is no plan).
    """
    from reliability.models.recovery import plan

    a = cfg.analysis
    m = mttf
    per_node = attribution.gpus_per_node
    sizes, basis = plan_sizes(attribution.jobs, cfg, per_node)
    schema = {
        "n_gpus": pl.Int64,
        "basis": pl.String,
        "rate_per_1000_node_days": pl.Float64,
        "mttf_h": pl.Float64,
        "recommended_interval_min": pl.Float64,
        "ettr_at_recommended": pl.Float64,
        "at_upper_bound_min": pl.Float64,
        "status": pl.String,
    }
    empty = pl.DataFrame(schema=schema)
    common = {"target_ettr": a.target_ettr, "restart_h": a.restart_h, "sizes_basis": basis}
    if not sizes:
        return CheckpointPlan(
            sizes=empty, plans=[], refusal="the cluster ran no GPU jobs", **common
        )
    if m.node_days_ <= 0:
        largest = int(attribution.jobs.get_column("n_accelerators").max() or 0)
        why = Hinted(
            f"r_f is not estimable: no exposure from jobs of >= {m.min_gpus} GPUs; ",
            Hint("min_gpus", max(largest, 1)),
            " (the largest GPU job) or lower to estimate it from smaller jobs",
        )
        return CheckpointPlan(sizes=empty, plans=[], refusal=why, **common)
    costs = _recovery_costs(attribution, node_health)
    plans, rows, queue_notes = [], [], []
    for n in sizes:
        # the wait after an interruption the logs measured at this size (or the nearest smaller):
        # a plan that assumed none would promise an ETTR the cluster's queue cannot give
        queue_h, why = costs.queue_h_for(n)
        p = plan(
            n,
            m,
            a.target_ettr,
            restart_h=a.restart_h,
            gpus_per_node=per_node,
            queue_h=queue_h or 0.0,
        )
        if queue_h is not None:
            queue_notes.append(
                f"{n:,} GPUs: queue wait after an interruption {fmt_duration_h(queue_h)} ({why})"
            )
        plans.append(p)
        mins = lambda h: None if h is None else 60.0 * h  # noqa: E731
        rows.append(
            {
                "n_gpus": n,
                "basis": p.basis,
                "rate_per_1000_node_days": 1000 * p.rate_per_node_day,
                "mttf_h": p.mttf_h,
                "recommended_interval_min": mins(p.recommended_interval_h),
                "ettr_at_recommended": p.ettr_at_recommended,
                "at_upper_bound_min": mins(p.recommended_at_upper_h),
                "status": _status(p),
            }
        )
    notes = list(dict.fromkeys(n for p in plans for n in p.notes))
    if queue_notes:
        notes.append("planned with the measured queue waits: " + "; ".join(queue_notes))
    else:
        notes.append("no rerun after a hardware interruption was seen: planned with no queue wait")
    recovery, strategies, more = _strategies(cfg, per_node, plans[-1], costs)
    return CheckpointPlan(
        sizes=pl.DataFrame(rows, schema=schema),
        plans=plans,
        notes=notes + more,
        recovery=recovery,
        strategies=strategies,
        **common,
    )


def next_scale(n_gpus: int) -> int:
    """Return the projected next scale of a job size: the next power of two above it [GPUs].

    Parameters
    ----------
    n_gpus : int
        The largest job size [GPUs].

    Returns
    -------
    int
        The smallest power of two greater than ``n_gpus``.
    """
    return 1 << int(n_gpus).bit_length()


def _recovery_costs(
    attribution: AttributionResult, node_health: NodeHealth | None
) -> RecoveryCosts:
    """Measure what recovery costs today: queue waits after hardware interruptions, repair spells."""
    from reliability.models.recovery import recovery_costs

    return recovery_costs(
        attribution.jobs,
        node_health=node_health,
        observation_end=attribution.observation_end,
    )


#: compare_strategies' assumed costs, which a pipeline has no keys for
_ASSUMED = ("peer_write_h", "reconfig_h", "ckpt_write_h")


def _assumed(note: str) -> str:
    """Say a strategy note's parenthesis that names an assumed cost's argument as an assumption.

    ``(pass peer_write_h=)`` -> ``(an assumption, not measured: compare_strategies() takes your
    own)``: the text from the ``(`` before the hint to the ``)`` after it is replaced.
    """
    if not isinstance(note, Hinted) or not any(h.option in _ASSUMED for h in note.hints):
        return note
    parts = list(note.parts)
    for i, p in enumerate(parts):
        if isinstance(p, Hint) and p.option in _ASSUMED and 0 < i < len(parts) - 1:
            before, after = parts[i - 1], parts[i + 1]
            if (
                isinstance(before, str)
                and isinstance(after, str)
                and "(" in before
                and ")" in after
            ):
                parts[i - 1] = before[: before.rindex("(")]
                parts[i] = "(an assumption, not measured: compare_strategies() takes your own)"
                parts[i + 1] = after[after.index(")") + 1 :]
    return Hinted(*parts)


def _strategies(
    cfg: PipelineConfig, per_node: int, big: PlanResult, costs: RecoveryCosts
) -> tuple[RecoveryCosts, list[StrategyComparison], list[str]]:
    """Compare the recovery strategies at the largest size and the next, at the measured costs."""
    from reliability.models.recovery import compare_strategies
    from reliability.models.recovery.strategies import DEFAULT_REPAIR_H

    a = cfg.analysis
    notes: list[str] = []
    out = []
    for n in (big.n_gpus, next_scale(big.n_gpus)):
        queue_h, _ = costs.queue_h_for(n)
        out.append(
            compare_strategies(
                n,
                big.rate_per_node_day,
                a.ckpt_interval_h,
                a.restart_h,
                queue_h=queue_h or 0.0,
                gpus_per_node=per_node,
                repair_h=costs.repair_h,
            )
        )
    q, why = costs.queue_h_for(big.n_gpus)
    notes.append(
        "recovery strategies: queue wait after an interruption "
        + (f"{fmt_duration_h(q)} ({why})" if q is not None else f"0 ({why})")
        + "; "
        + (
            f"node repair {fmt_duration_h(costs.repair_h)} (measured: mean out-of-service spell)"
            if costs.repair_h is not None
            else f"node repair time not measured (no node states): {DEFAULT_REPAIR_H:g} h assumed"
        )
    )
    # the library's hints name its arguments; the report has no keys for these assumptions
    for m in dict.fromkeys(m for c in out for m in c.notes):
        if "repair time not given" in m:
            continue
        notes.append(_assumed(m))
    return costs, out, notes


# ---------------------------------------------------------------- sections


def workload_sections(w: WorkloadResult, ctx: Context) -> list[Section]:
    """Build the "Job states and sizes", "Failure taxonomy" and "Secondary preemptions and crash loops" sections.

    Parameters
    ----------
    w : WorkloadResult
        The ``workload`` stage's result.
    ctx : Context
        The report context.

    Returns
    -------
    list of Section
        The three sections.
    """
    a = ctx.analysis
    states = Section("Job states and sizes")
    states.blocks.append(
        Text(f"{w.n_jobs:,} jobs ran {w.attempts:,} attempts. {w.hardware_sentence()}")
    )
    states.blocks.append(
        plot_block(
            "job_states",
            lambda ax: plots.plot_job_states(w, ax=ax),
            (6.4, 3.6),
            "Share of attempts and of GPU time by final state "
            f"({ref.JOB_STATE_SHARES.cite()}: RSC-1 completed 60%, failed 24%, preempted 10%).",
            w.states,
        )
    )
    states.blocks.append(
        plot_block(
            "job_sizes",
            lambda ax: plots.plot_job_sizes(w, ax=ax),
            (6.4, 3.6),
            f"Jobs and GPU time by job size ({ref.ONE_GPU_JOB_SHARE.cite()}: "
            "most jobs are small, most GPU time is in large jobs). CPU = CPU-only jobs.",
            w.sizes,
        )
    )
    states.blocks += notes_blocks(w)
    tax = Section("Failure taxonomy")
    tax.blocks.append(
        plot_block(
            "failure_taxonomy",
            lambda ax: plots.plot_failure_taxonomy(w, ax=ax),
            (6.4, 4.0),
            "Attempts that failed for a non-user reason, by attributed "
            f"domain and cause. Attribution: {attribution_caption(ctx.results.attribution, a.before_min, a.after_min)}.",
            w.taxonomy,
        )
    )
    if w.hardware_failed.height:
        tax.blocks.append(
            Table(
                "hardware_failed_jobs",
                w.hardware_failed,
                "Job names and users with the most hardware-ended attempts (names and users as "
                "logged; GPU-hours of those attempts).",
                wrap=("name",),
            )
        )
    else:
        tax.blocks.append(Text("No attempt ended by hardware: no job names to rank."))
    attributed = ctx.results.attribution
    if attributed is not None:
        tax.blocks += reason_blocks(attributed)
        tax.blocks += notes_blocks(attributed)
    sec = Section("Secondary preemptions and crash loops")
    sec.blocks.append(Text(w.secondary_sentence()))
    sec.blocks.append(
        plot_block(
            "secondary_preemptions",
            lambda ax: plots.plot_secondary_preemptions(w, ax=ax),
            (6.4, 2.4),
            "Failure overhead in GPU-hours: attempts ended by hardware, "
            f"and the preemptions their requeues caused ({ref.SECONDARY_PREEMPTION_SHARE.cite()}).",
            w.summary.select(
                "hardware_gpu_hours",
                "secondary_gpu_hours",
                "secondary_preemptions",
                "secondary_share",
            ),
        )
    )
    loops = w.crash_loops
    if loops.height:
        sec.blocks.append(
            Table(
                "crash_loops",
                loops.drop("cluster"),
                "Jobs requeued 3 or more times for something other than a preemption (self_requeues), "
                "with the preemptions their restarts caused; HPCA'25 Fig. 8: one 1,024-GPU job "
                "requeued 35 times caused 548 preemptions.",
                wrap=("name",),
            )
        )
    else:
        sec.blocks.append(
            Text("No job was requeued 3 or more times for something other than a preemption.")
        )
    return [states, tax, sec]


def rates_section(s: RateSeries, ctx: Context) -> list[Section]:
    """Build the "Failure rate over time" report section.

    Parameters
    ----------
    s : RateSeries
        The ``rates`` stage's result.
    ctx : Context
        The report context.

    Returns
    -------
    list of Section
        The one section: the weekly rate figure, the rates and the trend.
    """
    sec = Section("Failure rate over time")
    sec.blocks.append(
        plot_block(
            "failure_rate_weekly",
            lambda ax: plots.plot_failure_rate(s, ax=ax),
            (6.4, 3.6),
            f"Weekly hardware failure rate of jobs of {s.min_gpus:,}+ GPUs with exact 95% Poisson "
            f"intervals ({ref.FAILURE_RATE_RANGE.cite()}: RSC-1 rose from about 2.5 to 17.5).",
            s.series,
        )
    )
    sec.blocks += [
        Text("r_f " + s.rate_.describe() + "."),
        Text("r_f " + s.recent_rate_.describe() + "."),
        Text("Trend: " + s.trend_.describe() + "."),
    ]
    sec.blocks += notes_blocks(s)
    return [sec]


def mttf_section(m: MTTFResult, ctx: Context) -> list[Section]:
    """Build the "MTTF vs job size" report section.

    Parameters
    ----------
    m : MTTFResult
        The ``mttf`` stage's result.
    ctx : Context
        The report context.

    Returns
    -------
    list of Section
        The one section: r_f, the MTTF figure, projections and the constant-rate check.
    """
    sec = Section("MTTF vs job size")
    sec.blocks.append(Text(f"r_f (jobs of {m.min_gpus:,}+ GPUs) {m.rate_.describe()}."))
    sec.blocks.append(
        plot_block(
            "mttf_by_size",
            lambda ax: plots.plot_mttf(m, ax=ax),
            (6.4, 4.0),
            "Measured MTTF per size bucket (95% intervals; triangles: lower bounds where no failure "
            "was seen) and, where r_f is estimable, the model MTTF = 1/(N r_f) with r_f's interval "
            f"({ref.MTTF_PROJECTED_16K_GPUS.cite()}: 1.8 h at 16k GPUs and 0.23 h at 131k for r_f = 6.5).",
            m.by_size,
        )
    )
    sec.blocks.append(
        Table(
            "projections",
            m.projection(),
            "Model MTTF [h] at the paper's projection sizes with the interval from r_f's interval "
            "(– where not estimable; an interval with no upper end when no failure bounds it).",
        )
    )
    sec.blocks.append(
        Table(
            "constant_rate_check",
            m.survival,
            "Constant-rate check: Weibull shape of the time to a hardware interruption per size class "
            "(1 = constant rate, which MTTF = 1/(N r_f) assumes).",
            wrap=("verdict",),
        )
    )
    line = next((ln for ln in m._lines() if ln.startswith("GLM slope")), None)
    if line and "not estimable" not in line:  # the notes say why it is not
        sec.blocks.append(Text(line + "."))
    sec.blocks += notes_blocks(m)
    return [sec] if m.scaling is None else [sec, scaling_section(m.scaling)]


def scaling_section(s: ScalingCheck) -> Section:
    """Build the "Does MTTF ∝ 1/N hold here?" report section.

    Parameters
    ----------
    s : ScalingCheck
        The MTTF stage's test of the 1/N model (:func:`reliability.models.failures.scaling.check_scaling`).

    Returns
    -------
    Section
        The verdict, the measured rate per node by size against 1/N, and the projection to the
        largest size and the next scale under 1/N and under the fitted slope.
    """
    sec = Section("Does MTTF ∝ 1/N hold here?")
    sec.blocks.append(Text(s.verdict))
    sec.blocks += [Text(line[:1].upper() + line[1:] + ".") for line in s.test_lines()]
    sec.blocks.append(
        Table(
            "scaling_points",
            s.points,
            "Hardware failures per size bucket against 1/N (one rate per node-hour pooled over the buckets): "
            "expected failures and the ratio observed/expected (1 = as 1/N predicts). MTTF = 1/(N r_f) "
            f"({ref.MTTF_PROJECTED_16K_GPUS.cite()}) assumes every node fails at the same rate whatever "
            "the size of its job; at scale more links, switches and collective timeouts per job can break it.",
        )
    )
    if s.projection.height:
        sec.blocks.append(
            Table(
                "scaling_projection",
                s.projection,
                "MTTF [h] at the largest job size in the data and at the next scale (twice it): under 1/N with "
                "r_f's interval, and under the fitted power law with the interval its slope's uncertainty "
                "implies (– where not estimable, or where the data set no upper end).",
            )
        )
    sec.blocks += notes_blocks(s)
    return sec


def ettr_section(r: RunETTR, ctx: Context) -> list[Section]:
    """Build the "ETTR of job runs" report section.

    Parameters
    ----------
    r : RunETTR
        The ``ettr`` stage's result.
    ctx : Context
        The report context (the assumed checkpoint interval and restart).

    Returns
    -------
    list of Section
        The one section.
    """
    a = ctx.analysis
    sec = Section("ETTR of job runs")
    sec.blocks.append(
        Text(
            "ETTR (productive time over wall time, queue included) of every job run, assuming a checkpoint every "
            f"{a.ckpt_interval_min:g} min and a {a.restart_min:g}-min restart ([analysis].ckpt_interval_min and "
            "restart_min; the paper assumes 60 and 5 when logs do not say); "
            + (
                f"runs under {a.ckpt_min_gpus:,} GPUs are assumed not to checkpoint ([analysis].ckpt_min_gpus)."
                if a.ckpt_min_gpus
                else "every run is assumed to checkpoint ([analysis].ckpt_min_gpus = 0)."
            )
        )
    )
    sec.blocks += [Text(ln) for ln in r._lines()[:2]]
    sec.blocks.append(
        plot_block(
            "ettr_by_size",
            lambda ax: plots.plot_ettr_by_size(r, ax=ax),
            (6.4, 3.6),
            "ETTR by job size: per-run median and 10-90% range, and the "
            f"GPU-time-weighted ETTR ({ref.ETTR_LARGE_JOBS_MEASURED.cite()}).",
            r.by_size,
        )
    )
    sec.blocks.append(
        Table(
            "ettr_by_priority",
            r.by_priority,
            "ETTR by QoS / priority class.",
            scales=r.table_scales,
        )
    )
    sec.blocks += notes_blocks(r)
    return [sec]


def plan_section(p: CheckpointPlan, ctx: Context) -> list[Section]:
    """Build the "Checkpoint planning" report section.

    Parameters
    ----------
    p : CheckpointPlan
        The ``plan`` stage's result.
    ctx : Context
        The report context.

    Returns
    -------
    list of Section
        The one section: the interval per job size, the ETTR what-if figure and the frontier, or
        why there is no plan.
    """
    sec = Section("Checkpoint planning")
    if p.refusal:
        sec.blocks.append(
            Text("No checkpoint plan: " + analysis_terms(p.refusal) + ".", kind="note")
        )
        return [sec]
    sec.blocks.append(
        Table(
            "checkpoint_plan",
            p.sizes,
            f"Checkpoint interval per job size for ETTR {p.target_ettr:.2f} with a "
            f"{fmt_duration_h(p.restart_h)} restart (exact renewal form; sizes: {p.sizes_basis}).",
            wrap=("status", "basis"),
        )
    )
    big = p.largest
    assert big is not None
    sec.blocks += [
        Text(ln) for ln in big._lines() if ln and not ln.startswith(("restart overhead", "  "))
    ]
    sec.blocks.append(
        plot_block(
            "ettr_what_if",
            lambda ax: plots.plot_ettr_grid(big, ax=ax),
            (6.4, 3.6),
            f"Expected ETTR vs job size and checkpoint interval at the rate "
            f"planned with ({fmt_num(1000 * big.rate_per_node_day)} per 1000 node-days, {big.basis}; "
            f"{ref.ETTR_100K_GPUS_INTERVAL.cite()}).",
            big.grid,
        )
    )
    # with no blocking checkpoint write there is no shortest interval (any will do): the
    # column would be all "–", which the caption reads as unreachable
    frontier = big.frontier
    if frontier.get_column("min_interval_min").null_count() == frontier.height:
        frontier = frontier.drop("min_interval_min")
    sec.blocks.append(
        Table(
            "plan_frontier",
            frontier,
            f"Planner frontier at {big.n_gpus:,} GPUs: for each restart overhead, the longest "
            "checkpoint interval that reaches the target (– unreachable).",
        )
    )
    sec.blocks += _strategy_blocks(p)
    sec.blocks += notes_blocks(p)
    return [sec]


def _strategy_blocks(p: CheckpointPlan) -> list[Any]:
    """Build the measured recovery costs and the strategy table of the "Checkpoint planning" section."""
    blocks: list[Any] = []
    if p.recovery is not None:
        r = p.recovery
        blocks.append(
            Table(
                "recovery_costs",
                r.by_size.rename({"bucket": "gpus_from"}),
                "What recovery costs today: per hardware interruption (as counted in r_f), the wait from the "
                "failed attempt's end to its rerun's start, by job size [GPUs, lower edge of the bucket; 0: "
                "CPU-only] (hours; censored: no rerun seen before the data end).",
            )
        )
        blocks += [Text(ln) for ln in r._lines()]
    if p.strategies:
        big = p.strategies[0]
        blocks.append(
            Table(
                "recovery_strategies",
                p.strategy_table,
                f"Expected ETTR of recovery strategies at the largest job size ({int(big.n_gpus):,} GPUs) and at "
                f"the next scale ({int(p.strategies[-1].n_gpus):,} GPUs), at the rate planned with: "
                "checkpoint-restart as today (exact renewal form), hot spares (no queue wait while spares last), "
                "peer in-memory checkpoints (cheap writes, shorter intervals) and elastic training (throughput "
                "lost instead of work). Each closed form is checked against a Monte Carlo in the tests.",
                wrap=("assumes",),
                scales={"ettr": 1.0, "p_wait": 1.0},
            )
        )
    return blocks
