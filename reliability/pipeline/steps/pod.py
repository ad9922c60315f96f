"""Stages ``pod`` and ``routing`` and their sections (Zu et al., NSDI '24).

``pod``: component rates, measured and analytic job availability, recovery paths, pod jobs;
``routing``: all-to-all throughput with an OCS down.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from reliability import plots
from reliability import references as ref
from reliability._result import Result, fmt_duration_h
from reliability.models import (
    MeasuredAvailability,
    PodJobStats,
    RecoveryComparison,
    ThroughputResult,
)
from reliability.pipeline.config import PipelineConfig, parse_shape
from reliability.pipeline.steps.common import Context, notes_blocks, plot_block
from reliability.pipeline.steps.data import DataResult
from reliability.report.model import Section, Table, Text

__all__ = ["PodAnalysis", "RoutingTable", "pod", "pod_section", "routing", "routing_section"]

#: job sizes of the availability curves [chips]
SIZES_CHIPS = (16, 64, 256, 1024, 2048, 3072, 3200, 3584, 4096)


@dataclass
class PodAnalysis(Result):
    """Failures and availability of the pods in the data.

    Attributes
    ----------
    pods : polars.DataFrame
        Per cluster: ``pod``, ``mode``, ``n_cubes`` (:func:`reliability.models.identify_pods`).
    component_rates : polars.DataFrame
        Weekly failure rate per component type.
    measured : list of MeasuredAvailability
        Per pod, :class:`~reliability.models.MeasuredAvailability`.
    curves : polars.DataFrame
        The analytic availability per job size at each pod's host availability.
    recovery : RecoveryComparison
        Reconfigure vs reroute for a 50-cube job at the measured rates.
    jobs : PodJobStats or None
        How the pods' jobs fared (None without jobs in the logs).
    reference_host_availability : float
        Host availability of the TPUv4 pod (the Fig. 1 check's).
    fig1_tpuv4_3200 : float
        The model's TPUv4 job availability at 3,200 chips at the host availability, with the
        TPUv4 pod's measured link and OCS availability (the plotted curve's point).
    fig1_tpuv4_3200_hosts, fig1_tpuv3_1024 : float
        The model with hosts alone (NSDI'24 Fig. 1's basis) for TPUv4 at 3,200 chips and static
        TPUv3 at 1,024 chips, at the same host availability.
    """

    title = "TPU pods: failures and availability (Zu et al. NSDI'24)"
    pods: pl.DataFrame
    component_rates: pl.DataFrame
    measured: list[MeasuredAvailability]
    curves: pl.DataFrame
    recovery: RecoveryComparison
    jobs: PodJobStats | None
    reference_host_availability: float
    fig1_tpuv4_3200: float
    fig1_tpuv4_3200_hosts: float
    fig1_tpuv3_1024: float
    notes: list[str] = field(default_factory=list)

    @property
    def components(self) -> pl.DataFrame:
        """Per pod: the measured host, link and OCS availability and the samples taken."""
        rows = [
            m.summary.with_columns(pl.lit(c).alias("cluster"))
            for c, m in zip(self.pods["cluster"], self.measured, strict=True)
        ]
        pods = self.pods.drop("n_cubes", strict=False)  # (the measurement has it)
        return pl.concat(rows).join(pods, on="cluster") if rows else pl.DataFrame()

    @property
    def measured_curves(self) -> pl.DataFrame:
        """The measured job availability of every pod, stacked, with a ``pod`` column."""
        parts = [
            m.curve.with_columns(pod=pl.lit(p))
            for p, m in zip(self.pods["pod"], self.measured, strict=True)
        ]
        return pl.concat(parts) if parts else pl.DataFrame()

    @property
    def summary(self) -> pl.DataFrame:
        """The component rates table."""
        return self.components

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the result: pods and availability samples."""
        return {"pods": self.pods.height, "samples": sum(m.samples for m in self.measured)}

    def _lines(self) -> list[str]:
        return [
            f"{self.pods.height} pod(s): "
            + ", ".join(f"{c} ({p}, {m}, {n} cubes)" for c, p, m, n in self.pods.iter_rows()),
            f"At host availability {self.reference_host_availability:.4f} the model gives TPUv4 "
            f"{100 * self.fig1_tpuv4_3200:.1f}% at 3,200 chips with the pod's measured links and "
            f"OCS; with hosts alone, as NSDI'24 Fig. 1, TPUv4 {100 * self.fig1_tpuv4_3200_hosts:.1f}% "
            f"at 3,200 chips (paper ~94%) and TPUv3 static {100 * self.fig1_tpuv3_1024:.1f}% at "
            "1,024 chips (paper ~0).",
        ]

    @classmethod
    def _example(cls) -> PodAnalysis:
        """Build a tiny instance: one 4-cube TPUv4 pod (for contract tests)."""
        from reliability.models import (
            MeasuredAvailability,
            PodJobStats,
            RecoveryComparison,
            availability_curve,
            component_failure_rates,
            job_availability,
        )
        from reliability.models._examples import tiny_tables

        t = tiny_tables()
        m = MeasuredAvailability._example()
        host = m.host_availability
        links = {"ocs_availability": m.ocs_availability, "link_availability": m.link_availability}
        curve = availability_curve(host, "tpuv4", **links)
        return cls(
            pods=pl.DataFrame(
                {"cluster": ["tiny"], "pod": ["tpuv4"], "mode": ["reconfigurable"], "n_cubes": [4]}
            ),
            component_rates=component_failure_rates(
                t["component_failures"], t["inventory"], every="1w"
            ),
            measured=[m],
            curves=curve.filter(pl.col("mode") == "reconfigurable").with_columns(
                pod=pl.lit("tpuv4")
            ),
            recovery=RecoveryComparison._example(),
            jobs=PodJobStats._example(),
            reference_host_availability=host,
            fig1_tpuv4_3200=float(job_availability(3200, host, **links)),
            fig1_tpuv4_3200_hosts=float(job_availability(3200, host)),
            fig1_tpuv3_1024=float(job_availability(1024, host, "static", pod="tpuv3")),
        )


def pod(pod_data: DataResult, cfg: PipelineConfig) -> PodAnalysis:
    """Run stage ``pod``: rates, availability and recovery paths of every pod in the pod data.

    Weekly component failure rates (Zu et al., NSDI '24, Fig. 12), measured and analytic job
    availability (§5, Fig. 1) at the host availability of ``[analysis].host_availability``
    (``"measured"``: each pod's own), recovery paths (§6) and pod job statistics.

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
    from reliability.models import (
        availability_curve,
        component_failure_rates,
        identify_pods,
        job_availability,
        measured_job_availability,
        pod_job_stats,
        recovery_paths,
    )

    ds = pod_data.open()
    inv, cf = ds.inventory, ds.component_failures
    rates = component_failure_rates(cf, inv, every="1w")
    pods = identify_pods(inv)
    measured, curves = [], []
    host_setting = cfg.analysis.host_availability
    for cl, name, mode, n_cubes in pods.iter_rows():
        frames = {
            "inventory": inv.filter(pl.col("cluster") == cl),
            "component_failures": cf.filter(pl.col("cluster") == cl),
            "node_states": ds.node_states.filter(pl.col("cluster") == cl),
        }
        m = measured_job_availability(
            frames, [s for s in SIZES_CHIPS if s <= 64 * n_cubes], mode=mode
        )
        measured.append(m)
        host = m.host_availability if host_setting == "measured" else float(host_setting)
        c = availability_curve(
            host,
            name,
            ocs_availability=m.ocs_availability if mode == "reconfigurable" else None,
            link_availability=m.link_availability,
        )
        curves.append(c.filter(pl.col("mode") == mode).with_columns(pod=pl.lit(name)))
    v4 = next((m for m, p in zip(measured, pods["pod"], strict=True) if p == "tpuv4"), None)
    ref_host = v4.host_availability if v4 is not None else ref.FIG1_HOST_AVAILABILITY.value
    if host_setting != "measured":
        ref_host = float(host_setting)
    # the headline is the plotted curve's point: hosts, and the pod's measured links and OCS
    links = (
        {"ocs_availability": v4.ocs_availability, "link_availability": v4.link_availability}
        if v4
        else {}
    )
    mean = rates.group_by("component_type").agg(
        rate=pl.col("failures").sum() / pl.col("component_days").sum()
    )
    r = dict(mean.iter_rows())
    notes = []
    missing = [t for t in ("machine", "ici_link", "ocs") if t not in r]
    if missing:
        notes.append(
            f"no {', '.join(missing)} in the inventory: the recovery paths use NSDI'24's rates for them"
        )
    rec = recovery_paths(
        50,
        machine_rate_per_day=r.get("machine", ref.MACHINE_FAILURES_PER_DAY.value),
        ici_rate_per_day=r.get("ici_link", ref.ICI_CABLE_FAILURES_PER_DAY.value),
        ocs_rate_per_day=r.get("ocs", 0.0004),
        ckpt_interval_h=cfg.analysis.ckpt_interval_h,
    )
    jobs = pod_job_stats(ds.jobs, ds.job_steps) if ds.jobs.height else None
    return PodAnalysis(
        pods=pods,
        component_rates=rates,
        measured=measured,
        curves=pl.concat(curves) if curves else pl.DataFrame(),
        recovery=rec,
        jobs=jobs,
        reference_host_availability=ref_host,
        fig1_tpuv4_3200=float(job_availability(3200, ref_host, **links)),
        fig1_tpuv4_3200_hosts=float(job_availability(3200, ref_host)),
        fig1_tpuv3_1024=float(job_availability(1024, ref_host, "static", pod="tpuv3")),
        notes=notes,
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
        One :class:`~reliability.models.ThroughputResult` per slice.
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
        from reliability.models import ThroughputResult

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
    from reliability.models import all_to_all_throughput

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
