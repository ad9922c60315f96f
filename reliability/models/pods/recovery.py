"""TPU pods: the goodput cost of the two recovery paths, reconfigure and reroute (NSDI'24 §4-5).

A job on k cubes of a TPUv4-like pod uses 16k machines, 96k optical ICI cables and all 48 OCSes
(every slice closes its torus through the OCSes). When one of them fails:

- **reconfigure** (path 1, machines and ICI cables; OCS too when the job has no fault-tolerant
  routing): the job is evicted, rescheduled onto spare cubes, cross-connected, preflighted and
  reloaded from its last checkpoint. Cost per failure, in hours of the whole job:
  ``downtime_h + Δt/2`` (the expected work since the last checkpoint).
- **reroute** (path 2, OCS faults of jobs that opted into fault-tolerant routing): the job keeps
  its cubes and runs at a step-time tax τ (Table 3: 0.5-8.6%) until the OCS is repaired. Cost
  per failure: ``τ · repair_h``.

Break-even repair time: rerouting is cheaper while ``repair_h < (downtime_h + Δt/2) / τ``.
Rates are per component per day; goodput loss is the expected fraction of the job's time lost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl

from reliability import references as ref
from reliability._result import Result
from reliability.models.pods.availability import LINKS_PER_CUBE, N_OCS
from reliability.topology import HOSTS_PER_CUBE

__all__ = ["RecoveryComparison", "recovery_paths"]


@dataclass
class RecoveryComparison(Result):
    """Per failure type and path: rate, cost per failure and goodput loss (``summary``).

    Attributes
    ----------
    summary : polars.DataFrame
        Per component and path: ``components_used``, ``failures_per_day``, ``cost_per_failure_h``
        [h], ``goodput_loss`` [fraction of the job's time].
    break_even_repair_h : float
        OCS repair time below which rerouting beats reconfiguring [h].
    n_cubes : int
        The job's size [cubes].
    """

    title = "Recovery paths: reconfigure vs reroute (Zu et al. NSDI'24 §4-5)"
    summary: pl.DataFrame
    break_even_repair_h: float
    n_cubes: int

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the result: the job size [cubes]."""
        return {"cubes": self.n_cubes}

    def _lines(self) -> list[str]:
        lines = [f"Recovery paths for a {self.n_cubes}-cube job ({64 * self.n_cubes:,} chips):"]
        for r in self.summary.iter_rows(named=True):
            lines.append(
                f"  {r['component']:<9} {r['path']:<11} {r['failures_per_day']:.4f}/day  "
                f"{60 * r['cost_per_failure_h']:7.1f} min per failure  goodput loss {100 * r['goodput_loss']:.3f}%"
            )
        lines.append(
            f"rerouting around an OCS beats reconfiguring while its repair takes less than "
            f"{self.break_even_repair_h:.1f} h"
        )
        return lines

    @classmethod
    def _example(cls) -> RecoveryComparison:
        """Build a tiny instance: the recovery paths of a 16-cube pod (for contract tests)."""
        return recovery_paths(16)


def recovery_paths(
    n_cubes: int,
    *,
    machine_rate_per_day: float = ref.MACHINE_FAILURES_PER_DAY.value,
    ici_rate_per_day: float = ref.ICI_CABLE_FAILURES_PER_DAY.value,
    ocs_rate_per_day: float = ref.OCS_FAILURES_PER_DAY.value,
    ckpt_interval_h: float = 1.0,
    reconfigure_downtime_h: float = 10.0 / 60.0,
    ocs_repair_h: float = 6.0 * math.exp(0.8**2 / 2),
    reroute_tax: float = (0.005 + 0.086) / 2,
) -> RecoveryComparison:
    """Compare the expected goodput loss of reconfigure vs reroute for a job of ``n_cubes`` cubes.

    Zu et al., NSDI '24, §6 (recovery by reconfiguration vs fault-tolerant routing, Table 3).

    Parameters
    ----------
    n_cubes : int
        Job size [cubes of 64 chips], 1..64.
    machine_rate_per_day, ici_rate_per_day, ocs_rate_per_day : float
        Failure rates per component [1/day], >= 0 (defaults: NSDI'24 §6).
    ckpt_interval_h : float
        Checkpoint interval [h], >= 0: a reconfiguration loses Δt/2 of work on average.
    reconfigure_downtime_h : float
        Evict, reschedule, cross-connect, preflight and reload [h], >= 0.
    ocs_repair_h : float
        Mean OCS repair time [h], >= 0 (default: the pod simulator's lognormal, median 6 h,
        σ 0.8).
    reroute_tax : float
        Step-time tax of fault-tolerant routing, a fraction in (0, 1) (default: the middle of
        NSDI'24 Table 3's 0.5-8.6%).

    Returns
    -------
    RecoveryComparison
        Per component and path: components used, failures per day, cost per failure [h] and
        goodput loss [fraction of the job's time]; the break-even OCS repair time [h].
    """
    if int(n_cubes) != n_cubes or not 1 <= n_cubes <= 64:
        raise ValueError(f"n_cubes must be a whole number in 1..64, got {n_cubes}")
    if not 0 < reroute_tax < 1:
        raise ValueError(f"reroute_tax must be a fraction in (0, 1), got {reroute_tax}")
    for name, v in (
        ("machine_rate_per_day", machine_rate_per_day),
        ("ici_rate_per_day", ici_rate_per_day),
        ("ocs_rate_per_day", ocs_rate_per_day),
        ("ckpt_interval_h", ckpt_interval_h),
        ("reconfigure_downtime_h", reconfigure_downtime_h),
        ("ocs_repair_h", ocs_repair_h),
    ):
        if not (math.isfinite(v) and v >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
    reconf = reconfigure_downtime_h + ckpt_interval_h / 2.0
    rows = []
    for comp, count, rate in (
        ("machine", HOSTS_PER_CUBE * n_cubes, machine_rate_per_day),
        ("ici_link", LINKS_PER_CUBE * n_cubes, ici_rate_per_day),
        ("ocs", N_OCS, ocs_rate_per_day),
    ):
        per_day = count * rate
        paths = [("reconfigure", reconf)]
        if comp == "ocs":
            paths.append(("reroute", reroute_tax * ocs_repair_h))
        for path, cost in paths:
            rows.append(
                {
                    "component": comp,
                    "path": path,
                    "components_used": count,
                    "failures_per_day": per_day,
                    "cost_per_failure_h": cost,
                    "goodput_loss": per_day * cost / 24.0,
                }
            )
    return RecoveryComparison(
        summary=pl.DataFrame(rows), break_even_repair_h=reconf / reroute_tax, n_cubes=n_cubes
    )
