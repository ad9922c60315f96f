"""Models: what a cluster's logs say about its reliability, in six groups.

=============  =================================================================================
group          what it holds
=============  =================================================================================
``failures``   failure counts and rate intervals, r_f and MTTF by job size (MTTF ∝ 1/(N·r_f))
               with the 1/N check, weekly rates and trends, workload breakdowns, per-job
               interruptions (crash loops, secondary preemptions), node incidents
``recovery``   ETTR (closed form, Monte Carlo, from logs), checkpoint intervals, the checkpoint
               planner, measured recovery costs, recovery strategies
``nodes``      node health (out-of-service time, open drains, repeat offenders), the lemon
               detector, its features and the lemon test, which signals predict failures
``pods``       TPU pod job availability (analytic and measured), recovery paths, pod
               identification, slice all-to-all routing throughput
``lifetimes``  Weibull lifetimes with hazard verdicts, repairable systems (time between
               failures, Crow-AMSAA), per-component reliability
``fleets``     published fleets re-derived, and a Dataset's fleet beside them
=============  =================================================================================

Import from the group (``from reliability.models.failures import fit_mttf``). The flat names of
earlier releases (``from reliability.models import fit_mttf``) still work for this release and
emit a :class:`DeprecationWarning` naming the group.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from typing import Any

from reliability.models import failures, fleets, lifetimes, nodes, pods, recovery

__all__ = ["failures", "fleets", "lifetimes", "nodes", "pods", "recovery"]

#: flat name of earlier releases -> (group, name in the group); kept for one release
_FLAT: dict[str, tuple[str, str]] = {
    "CPU_ONLY_BUCKET": ("failures", "CPU_ONLY_BUCKET"),
    "CRASH_LOOP_MIN_REQUEUES": ("failures", "CRASH_LOOP_MIN_REQUEUES"),
    "ComponentReliability": ("lifetimes", "ComponentReliability"),
    "CrowAMSAA": ("lifetimes", "CrowAMSAA"),
    "ESTIMANDS": ("recovery", "ESTIMANDS"),
    "ETTRApproximationWarning": ("recovery", "ETTRApproximationWarning"),
    "ETTRSimulation": ("recovery", "ETTRSimulation"),
    "FleetComparison": ("fleets", "FleetComparison"),
    "InterFailureResult": ("lifetimes", "InterFailureResult"),
    "LEMON_FEATURES": ("nodes", "LEMON_FEATURES"),
    "LemonDetector": ("nodes", "LemonDetector"),
    "LifetimeFit": ("lifetimes", "LifetimeFit"),
    "LifetimeResult": ("lifetimes", "LifetimeResult"),
    "MTTFResult": ("failures", "MTTFResult"),
    "MeasuredAvailability": ("pods", "MeasuredAvailability"),
    "ModelFileError": ("nodes", "ModelFileError"),
    "NodeHealth": ("nodes", "NodeHealth"),
    "OUT_OF_SERVICE": ("nodes", "OUT_OF_SERVICE"),
    "PODS": ("pods", "PODS"),
    "PlanResult": ("recovery", "PlanResult"),
    "PodJobStats": ("pods", "PodJobStats"),
    "PodSpec": ("pods", "PodSpec"),
    "PublishedFleets": ("fleets", "PublishedFleets"),
    "RateEstimate": ("failures", "RateEstimate"),
    "RateSeries": ("failures", "RateSeries"),
    "RecoveryComparison": ("pods", "RecoveryComparison"),
    "RecoveryCosts": ("recovery", "RecoveryCosts"),
    "RunETTR": ("recovery", "RunETTR"),
    "SIZE_BUCKETS": ("failures", "SIZE_BUCKETS"),
    "ScalingCheck": ("failures", "ScalingCheck"),
    "StrategyComparison": ("recovery", "StrategyComparison"),
    "StrategySimulation": ("recovery", "StrategySimulation"),
    "ThroughputResult": ("pods", "ThroughputResult"),
    "TrendTest": ("failures", "TrendTest"),
    "VARIANTS": ("recovery", "VARIANTS"),
    "WorkloadResult": ("failures", "WorkloadResult"),
    "all_to_all_throughput": ("pods", "all_to_all_throughput"),
    "availability_curve": ("pods", "availability_curve"),
    "check_scaling": ("failures", "check_scaling"),
    "compare_fleets": ("fleets", "compare_fleets"),
    "compare_strategies": ("recovery", "compare_strategies"),
    "component_failure_rates": ("failures", "component_failure_rates"),
    "component_reliability": ("lifetimes", "component_reliability"),
    "count_baseline": ("nodes", "count_baseline"),
    "crash_loops": ("failures", "crash_loops"),
    "crow_amsaa": ("lifetimes", "crow_amsaa"),
    "daly_interval_h": ("recovery", "daly_interval_h"),
    "dimension_order_load": ("pods", "dimension_order_load"),
    "dominant_component": ("nodes", "dominant_component"),
    "estimate_rate": ("failures", "estimate_rate"),
    "expected_ettr": ("recovery", "expected_ettr"),
    "failure_rate_series": ("failures", "failure_rate_series"),
    "failure_taxonomy": ("failures", "failure_taxonomy"),
    "failures_by_node": ("failures", "failures_by_node"),
    "fit_interfailure": ("lifetimes", "fit_interfailure"),
    "fit_lifetimes": ("lifetimes", "fit_lifetimes"),
    "fit_mttf": ("failures", "fit_mttf"),
    "fit_weibull": ("lifetimes", "fit_weibull"),
    "glm_slope": ("failures", "glm_slope"),
    "hardware_failed_jobs": ("failures", "hardware_failed_jobs"),
    "hardware_share": ("failures", "hardware_share"),
    "hazard_verdict": ("lifetimes", "hazard_verdict"),
    "identify_pods": ("pods", "identify_pods"),
    "interfailure_times": ("lifetimes", "interfailure_times"),
    "interruption_rate_per_h": ("recovery", "interruption_rate_per_h"),
    "job_availability": ("pods", "job_availability"),
    "job_interruptions": ("failures", "job_interruptions"),
    "job_run_ettr": ("recovery", "job_run_ettr"),
    "job_size_distribution": ("failures", "job_size_distribution"),
    "job_state_breakdown": ("failures", "job_state_breakdown"),
    "lifetime_table": ("lifetimes", "lifetime_table"),
    "measured_job_availability": ("pods", "measured_job_availability"),
    "mttf_h": ("failures", "mttf_h"),
    "node_features": ("nodes", "node_features"),
    "node_health": ("nodes", "node_health"),
    "node_incidents": ("failures", "node_incidents"),
    "node_mttf": ("failures", "node_mttf"),
    "optimal_interval_h": ("recovery", "optimal_interval_h"),
    "plan": ("recovery", "plan"),
    "pod_job_stats": ("pods", "pod_job_stats"),
    "poisson_ci": ("failures", "poisson_ci"),
    "poisson_regression": ("failures", "poisson_regression"),
    "published_fleets": ("fleets", "published_fleets"),
    "rate_interval": ("failures", "rate_interval"),
    "recovery_costs": ("recovery", "recovery_costs"),
    "recovery_paths": ("pods", "recovery_paths"),
    "required_host_availability": ("pods", "required_host_availability"),
    "rule_baseline": ("nodes", "rule_baseline"),
    "score_nodes": ("nodes", "score_nodes"),
    "secondary_preemptions": ("failures", "secondary_preemptions"),
    "signal_cooccurrence": ("failures", "signal_cooccurrence"),
    "simulate_ettr": ("recovery", "simulate_ettr"),
    "simulate_strategy": ("recovery", "simulate_strategy"),
    "spares_needed": ("recovery", "spares_needed"),
    "steady_state_availability": ("pods", "steady_state_availability"),
    "trend_test": ("failures", "trend_test"),
    "weibull_mle": ("lifetimes", "weibull_mle"),
    "workload_summary": ("failures", "workload_summary"),
    "young_interval_h": ("recovery", "young_interval_h"),
}


def __getattr__(name: str) -> Any:
    try:
        group, attr = _FLAT[name]
    except KeyError:
        raise AttributeError(f"module 'reliability.models' has no attribute {name!r}") from None
    # `from reliability.models import x` asks twice (the import system's hasattr, then the
    # import itself): warn on the import, not on the check
    if sys._getframe(1).f_code.co_name != "_handle_fromlist":
        _warn_moved(name, group, attr)
    return getattr(importlib.import_module(f"reliability.models.{group}"), attr)


def _warn_moved(name: str, group: str, attr: str) -> None:
    warnings.warn(
        f"reliability.models.{name} moved to reliability.models.{group}.{attr}; the flat "
        "name will be removed in the next release",
        DeprecationWarning,
        stacklevel=3,
    )


def __dir__() -> list[str]:
    return sorted([*__all__, *_FLAT])
