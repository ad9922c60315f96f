"""The pods of a Dataset analysed in one call: rates, availability, recovery paths, jobs.

What the report's "TPU pod" section shows and a notebook wants from pod data: weekly component
failure rates (Zu et al. NSDI'24 Fig. 12), each pod's measured and analytic job availability
(§5, Fig. 1), reconfigure vs reroute at the measured rates (§6) and how the pods' jobs fared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import polars as pl

from reliability import references as ref
from reliability._result import Result
from reliability.models.failures import component_failure_rates
from reliability.models.pods import (
    MeasuredAvailability,
    PodJobStats,
    RecoveryComparison,
    availability_curve,
    identify_pods,
    job_availability,
    measured_job_availability,
    pod_job_stats,
    recovery_paths,
)

if TYPE_CHECKING:
    from reliability.store import Dataset

__all__ = ["RECOVERY_JOB_CUBES", "SIZES_CHIPS", "PodAnalysis", "analyze_pods"]

#: job sizes of the availability curves [chips]
SIZES_CHIPS = (16, 64, 256, 1024, 2048, 3072, 3200, 3584, 4096)
#: the job the recovery paths compare [cubes of 64 chips] (NSDI'24 Fig. 1's 50-cube job)
RECOVERY_JOB_CUBES = 50
#: component type -> the published rate a pod without that type in its inventory falls back to
#: [failures per component-day] (NSDI'24 §5.2)
FALLBACK_RATES = {
    "machine": ref.MACHINE_FAILURES_PER_DAY,
    "ici_link": ref.ICI_CABLE_FAILURES_PER_DAY,
    "ocs": ref.OCS_FAILURES_PER_DAY,
}


@dataclass
class PodAnalysis(Result):
    """Failures and availability of the pods in the data.

    Attributes
    ----------
    pods : polars.DataFrame
        Per cluster: ``pod``, ``mode``, ``n_cubes`` (:func:`reliability.models.pods.identify.identify_pods`).
    component_rates : polars.DataFrame
        Weekly failure rate per component type.
    measured : list of MeasuredAvailability
        Per pod, :class:`~reliability.models.pods.identify.MeasuredAvailability`.
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


def _check_host(host_availability: float | None) -> None:
    if host_availability is None:
        return
    h = host_availability
    if (
        isinstance(h, bool)
        or not isinstance(h, int | float)
        or not (math.isfinite(h) and 0 < h <= 1)
    ):
        raise ValueError(
            f"host_availability: expected a fraction in (0, 1] or None (each pod's measured "
            f"one), got {h!r}"
        )


def _per_pod(
    dataset: Dataset, pods: pl.DataFrame, host_availability: float | None
) -> tuple[list[MeasuredAvailability], list[pl.DataFrame]]:
    """Measure each pod's availability and draw its analytic curve (NSDI'24 §5, Fig. 1)."""
    inv, cf, states = dataset.inventory, dataset.component_failures, dataset.node_states
    measured, curves = [], []
    for cl, name, mode, n_cubes in pods.iter_rows():
        frames = {
            "inventory": inv.filter(pl.col("cluster") == cl),
            "component_failures": cf.filter(pl.col("cluster") == cl),
            "node_states": states.filter(pl.col("cluster") == cl),
        }
        sizes = [s for s in SIZES_CHIPS if s <= 64 * n_cubes]
        m = measured_job_availability(frames, sizes, mode=mode)
        measured.append(m)
        host = m.host_availability if host_availability is None else float(host_availability)
        c = availability_curve(
            host,
            name,
            ocs_availability=m.ocs_availability if mode == "reconfigurable" else None,
            link_availability=m.link_availability,
        )
        curves.append(c.filter(pl.col("mode") == mode).with_columns(pod=pl.lit(name)))
    return measured, curves


def _recovery(rates: pl.DataFrame, ckpt_interval_h: float) -> tuple[RecoveryComparison, list[str]]:
    """Compare the recovery paths at the measured mean rates (NSDI'24's where none measured)."""
    mean = (
        rates.group_by("component_type")
        .agg(rate=pl.col("failures").sum() / pl.col("component_days").sum())
        .filter(pl.col("rate").is_finite())  # (no component-days: no rate measured)
    )
    measured = dict(mean.iter_rows())
    notes = []
    missing = [t for t in FALLBACK_RATES if t not in measured]
    if missing:
        notes.append(
            f"no {', '.join(missing)} in the inventory: the recovery paths use NSDI'24's rates for them"
        )
    r = {t: measured.get(t, fallback.value) for t, fallback in FALLBACK_RATES.items()}
    rec = recovery_paths(
        RECOVERY_JOB_CUBES,
        machine_rate_per_day=r["machine"],
        ici_rate_per_day=r["ici_link"],
        ocs_rate_per_day=r["ocs"],
        ckpt_interval_h=ckpt_interval_h,
    )
    return rec, notes


def analyze_pods(
    dataset: Dataset,
    *,
    host_availability: float | None = None,
    ckpt_interval_min: float = 60.0,
) -> PodAnalysis:
    """Rates, measured and analytic availability, recovery paths and jobs of every pod.

    Weekly component failure rates (Zu et al. NSDI'24 Fig. 12); per pod, the measured job
    availability and the analytic curve at a host availability (§5, Fig. 1); reconfigure vs
    reroute for a 50-cube job at the measured mean rates (§6); how the pods' jobs fared.

    Parameters
    ----------
    dataset : Dataset
        A Dataset of pod data (an ``inventory``, ``component_failures``, ``node_states``; jobs
        optional), e.g. what ``reliability simulate pod`` wrote, ingested.
    host_availability : float or None
        Host availability of the analytic curves and the Fig. 1 check, in (0, 1]; None: each
        pod's measured one (the TPUv4 pod's for the check, else NSDI'24 Fig. 1's 0.9896).
    ckpt_interval_min : float
        Checkpoint interval of the recovery comparison [min], > 0 (a reconfiguration loses half
        of it on average).

    Returns
    -------
    PodAnalysis
        The pods, their rates, measured and analytic availability, the recovery comparison, the
        jobs; a note when a component type has no measured rate (NSDI'24's is used).

    Raises
    ------
    ValueError
        When ``host_availability`` is not a fraction in (0, 1] or ``ckpt_interval_min`` is not
        a positive number of minutes.
    """
    _check_host(host_availability)
    if not (math.isfinite(ckpt_interval_min) and ckpt_interval_min > 0):
        raise ValueError(
            f"ckpt_interval_min: expected a number of minutes > 0, got {ckpt_interval_min:g}"
        )
    rates = component_failure_rates(dataset.component_failures, dataset.inventory, every="1w")
    pods = identify_pods(dataset.inventory)
    measured, curves = _per_pod(dataset, pods, host_availability)
    v4 = next((m for m, p in zip(measured, pods["pod"], strict=True) if p == "tpuv4"), None)
    if host_availability is not None:
        ref_host = float(host_availability)
    else:
        ref_host = v4.host_availability if v4 is not None else ref.FIG1_HOST_AVAILABILITY.value
    # the headline is the plotted curve's point: hosts, and the pod's measured links and OCS
    links = (
        {"ocs_availability": v4.ocs_availability, "link_availability": v4.link_availability}
        if v4
        else {}
    )
    rec, notes = _recovery(rates, ckpt_interval_min / 60.0)
    jobs = dataset.jobs
    return PodAnalysis(
        pods=pods,
        component_rates=rates,
        measured=measured,
        curves=pl.concat(curves) if curves else pl.DataFrame(),
        recovery=rec,
        jobs=pod_job_stats(jobs, dataset.job_steps) if jobs.height else None,
        reference_host_availability=ref_host,
        fig1_tpuv4_3200=float(job_availability(3200, ref_host, **links)),
        fig1_tpuv4_3200_hosts=float(job_availability(3200, ref_host)),
        fig1_tpuv3_1024=float(job_availability(1024, ref_host, "static", pod="tpuv3")),
        notes=notes,
    )
