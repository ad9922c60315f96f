"""Stages ``pod`` and ``routing`` and their sections (Zu et al., NSDI '24).

``pod``: component rates, measured and analytic job availability, recovery paths, pod jobs
(:func:`reliability.analyses.analyze_pods`; :class:`PodAnalysis` is re-exported here so saved
results load); ``routing``: all-to-all throughput with an OCS down.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from reliability import plots
from reliability import references as ref
from reliability._result import Result, fmt_duration_h
from reliability.analyses.pods import PodAnalysis, analyze_pods
from reliability.models.pods import ThroughputResult
from reliability.pipeline.config import PipelineConfig, parse_shape
from reliability.pipeline.steps.common import Context, notes_blocks, plot_block
from reliability.pipeline.steps.data import DataResult
from reliability.report.model import Section, Table, Text

__all__ = ["PodAnalysis", "RoutingTable", "pod", "pod_section", "routing", "routing_section"]


def pod(pod_data: DataResult, cfg: PipelineConfig) -> PodAnalysis:
    """Run stage ``pod``: rates, availability and recovery paths of every pod in the pod data.

    :func:`reliability.analyses.analyze_pods` at ``[analysis].host_availability``
    (``"measured"``: each pod's own) and ``ckpt_interval_min`` (Zu et al., NSDI '24).

    Parameters
    ----------
    pod_data : DataResult
        The pods' Dataset.
    cfg : PipelineConfig
        The pipeline configuration (``[analysis]`` settings).

    Returns
    -------
    PodAnalysis
        The pods, their rates, measured and analytic availability, recovery comparison and jobs.
    """
    host = cfg.analysis.host_availability
    return analyze_pods(
        pod_data.open(),
        host_availability=None if host == "measured" else float(host),
        ckpt_interval_min=cfg.analysis.ckpt_interval_min,
    )


def pod_section(p: PodAnalysis, ctx: Context) -> list[Section]:
    """Build the "TPU pod: failures and availability" report section.

    Parameters
    ----------
    p : PodAnalysis
        The ``pod`` stage's result.
    ctx : Context
        The report context.

    Returns
    -------
    list of Section
        The one section: rates, availability and recovery figures and tables.
    """
    sec = Section("TPU pod: failures and availability")
    sec.blocks += [Text(ln) for ln in p._lines()]
    sec.blocks.append(
        plot_block(
            "component_rates_weekly",
            lambda ax: plots.plot_component_rates(p.component_rates, ax=ax),
            (6.4, 3.6),
            "Weekly failure rate per component type "
            f"({ref.MACHINE_FAILURES_PER_DAY.cite()}; paper daily rates: machines 0.08%, ICI cables "
            "0.005%, OCS 0.04%).",
            p.component_rates,
        )
    )
    sec.blocks.append(
        plot_block(
            "availability",
            lambda ax: plots.plot_availability(p.curves, p.measured_curves, ax=ax),
            (6.4, 4.0),
            "Probability that a job of each size can be placed (NSDI'24 Fig. 1). "
            "Lines: model at each pod's measured host availability; points: fraction of time the pod "
            "could place it (95% batch-means intervals); the numbers hold both (column kind).",
            pl.concat(
                [
                    p.curves.with_columns(kind=pl.lit("model")),
                    p.measured_curves.with_columns(kind=pl.lit("measured")),
                ],
                how="diagonal_relaxed",
            )
            if p.measured_curves.height
            else p.curves.with_columns(kind=pl.lit("model")),
        )
    )
    sec.blocks.append(
        Table("pod_components", p.components, "Measured component availabilities of each pod.")
    )
    if p.jobs is not None:
        sec.blocks.append(
            Table(
                "pod_jobs",
                p.jobs.per_pod,
                "Jobs on each pod: the share that saw a hardware "
                f"interruption ({ref.JOBS_WITH_HW_INTERRUPTION.cite()}: about 1%), attempts and preemptions "
                "(defragmentation and maintenance).",
            )
        )
        sec.blocks += [Text(ln) for ln in p.jobs._lines()[-1:] if "fault-tolerant" in ln]
    sec.blocks.append(
        plot_block(
            "recovery_paths",
            lambda ax: plots.plot_recovery(p.recovery, ax=ax),
            (6.4, 3.0),
            "Reconfigure vs reroute for a 50-cube job at the measured failure "
            "rates: rerouting around an OCS beats reconfiguring while its repair takes under "
            f"{fmt_duration_h(p.recovery.break_even_repair_h)} (NSDI'24 §4-5).",
            p.recovery.summary,
        )
    )
    sec.blocks += notes_blocks(p)
    return [sec]


@dataclass
class RoutingTable(Result):
    """All-to-all throughput of each slice with one OCS down (NSDI'24 Table 2).

    Attributes
    ----------
    results : list of ThroughputResult
        One :class:`~reliability.models.pods.identify.ThroughputResult` per slice.
    """

    title = "Routing around a failed OCS (Zu et al. NSDI'24 Table 2)"
    results: list[ThroughputResult]
    notes: list[str] = field(default_factory=list)

    @property
    def summary(self) -> pl.DataFrame:
        """The slices' throughput summaries, stacked (empty without slices)."""
        return pl.concat([r.summary for r in self.results]) if self.results else pl.DataFrame()

    def _lines(self) -> list[str]:
        return [ln for r in self.results for ln in r._lines()] or ["no slices"]

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """How many slices were solved."""
        return {"slices": len(self.results)}

    @classmethod
    def _example(cls) -> RoutingTable:
        """Build a tiny instance: one 4x4x4 slice with one OCS down (for contract tests)."""
        from reliability.models.pods import ThroughputResult

        return cls(results=[ThroughputResult._example()])


def routing(cfg: PipelineConfig) -> RoutingTable:
    """Run stage ``routing``: the slices of ``[analysis].routing_shapes`` with OCS z5 down.

    Zu et al., NSDI '24, Table 2.

    Parameters
    ----------
    cfg : PipelineConfig
        The pipeline configuration (``[analysis].routing_shapes``).

    Returns
    -------
    RoutingTable
        One throughput result per slice.
    """
    from reliability.models.pods import all_to_all_throughput

    out = []
    for text in cfg.analysis.routing_shapes:
        shape, twisted = parse_shape(text)
        out.append(all_to_all_throughput(shape, twisted, failed_ocs=("z", 5)))
    return RoutingTable(results=out)


def routing_section(r: RoutingTable, ctx: Context) -> list[Section]:
    """Build the "Routing around a failed OCS" report section.

    Parameters
    ----------
    r : RoutingTable
        The ``routing`` stage's result.
    ctx : Context
        The report context.

    Returns
    -------
    list of Section
        The section, or none without slices.
    """
    if not r.results:
        return []
    sec = Section("Routing around a failed OCS")
    sec.blocks.append(
        plot_block(
            "routing",
            lambda ax: plots.plot_routing(r.results, ax=ax),
            (6.4, 3.0),
            "All-to-all throughput kept with one OCS down: the maximum concurrent flow "
            "(an upper bound for any routing) beside NSDI'24 Table 2's measurements.",
            r.summary.drop("solve_s"),  # (the LP's wall time: not a result, and not repeatable)
        )
    )
    sec.blocks.append(
        Table(
            "routing_table",
            r.summary.drop("lp_variables", "solve_s"),
            "Throughput per chip in link bandwidths, healthy and failed.",
        )
    )
    return [sec]
