"""Models: failure rates, MTTF, ETTR, checkpoint planning, pod availability and node health.

Attribution-based failure rates, MTTF by job size, rates over time, workload breakdowns,
ETTR (from logs, closed form, Monte Carlo), checkpoint intervals, the checkpoint planner, the
cost of a TPU pod's recovery paths, pod job availability (analytic and measured) and slice
all-to-all routing throughput, node health (out-of-service time, open drains, repeat
offenders), per-job failure impact (crash loops, secondary preemptions) and pod identification.
"""

from reliability.models.availability import (
    PODS,
    PodSpec,
    availability_curve,
    job_availability,
    required_host_availability,
    steady_state_availability,
)
from reliability.models.checkpoint import daly_interval_h, optimal_interval_h, young_interval_h
from reliability.models.components import ComponentReliability, component_reliability
from reliability.models.counts import (
    RateEstimate,
    TrendTest,
    estimate_rate,
    poisson_regression,
    rate_interval,
    trend_test,
)
from reliability.models.ettr import (
    VARIANTS,
    ETTRApproximationWarning,
    expected_ettr,
    interruption_rate_per_h,
)
from reliability.models.ettr_logs import RunETTR, job_run_ettr
from reliability.models.ettr_mc import ESTIMANDS, ETTRSimulation, simulate_ettr
from reliability.models.fleet_compare import FleetComparison, compare_fleets
from reliability.models.fleets import PublishedFleets, published_fleets
from reliability.models.incidents import failures_by_node, node_incidents
from reliability.models.jobs import (
    CRASH_LOOP_MIN_REQUEUES,
    crash_loops,
    hardware_failed_jobs,
    job_interruptions,
)
from reliability.models.lemon import (
    LemonDetector,
    ModelFileError,
    count_baseline,
    dominant_component,
    rule_baseline,
    score_nodes,
)
from reliability.models.lemon_features import FEATURES as LEMON_FEATURES
from reliability.models.lemon_features import node_features
from reliability.models.lifetimes import (
    LifetimeFit,
    LifetimeResult,
    fit_lifetimes,
    fit_weibull,
    hazard_verdict,
    lifetime_table,
    weibull_mle,
)
from reliability.models.mttf import (
    CPU_ONLY_BUCKET,
    SIZE_BUCKETS,
    MTTFResult,
    fit_mttf,
    glm_slope,
    mttf_h,
    poisson_ci,
)
from reliability.models.node_health import OUT_OF_SERVICE, NodeHealth, node_health
from reliability.models.planner import PlanResult, plan
from reliability.models.pod_measure import MeasuredAvailability, measured_job_availability
from reliability.models.pod_recovery import RecoveryComparison, recovery_paths
from reliability.models.pods import PodJobStats, identify_pods, pod_job_stats
from reliability.models.rates import (
    RateSeries,
    component_failure_rates,
    failure_rate_series,
    node_mttf,
)
from reliability.models.recovery_cost import RecoveryCosts, recovery_costs
from reliability.models.repairable import (
    CrowAMSAA,
    InterFailureResult,
    crow_amsaa,
    fit_interfailure,
    interfailure_times,
)
from reliability.models.routing import ThroughputResult, all_to_all_throughput, dimension_order_load
from reliability.models.scaling import ScalingCheck, check_scaling
from reliability.models.strategies import StrategyComparison, compare_strategies, spares_needed
from reliability.models.strategies_mc import StrategySimulation, simulate_strategy
from reliability.models.workload import (
    WorkloadResult,
    failure_taxonomy,
    hardware_share,
    job_size_distribution,
    job_state_breakdown,
    secondary_preemptions,
    signal_cooccurrence,
    workload_summary,
)

__all__ = [
    "CPU_ONLY_BUCKET",
    "CRASH_LOOP_MIN_REQUEUES",
    "ESTIMANDS",
    "LEMON_FEATURES",
    "OUT_OF_SERVICE",
    "PODS",
    "SIZE_BUCKETS",
    "VARIANTS",
    "ComponentReliability",
    "CrowAMSAA",
    "ETTRApproximationWarning",
    "ETTRSimulation",
    "FleetComparison",
    "InterFailureResult",
    "LemonDetector",
    "LifetimeFit",
    "LifetimeResult",
    "MTTFResult",
    "MeasuredAvailability",
    "ModelFileError",
    "NodeHealth",
    "PlanResult",
    "PodJobStats",
    "PodSpec",
    "PublishedFleets",
    "RateEstimate",
    "RateSeries",
    "RecoveryComparison",
    "RecoveryCosts",
    "RunETTR",
    "ScalingCheck",
    "StrategyComparison",
    "StrategySimulation",
    "ThroughputResult",
    "TrendTest",
    "WorkloadResult",
    "all_to_all_throughput",
    "availability_curve",
    "check_scaling",
    "compare_fleets",
    "compare_strategies",
    "component_failure_rates",
    "component_reliability",
    "count_baseline",
    "crash_loops",
    "crow_amsaa",
    "daly_interval_h",
    "dimension_order_load",
    "dominant_component",
    "estimate_rate",
    "expected_ettr",
    "failure_rate_series",
    "failure_taxonomy",
    "failures_by_node",
    "fit_interfailure",
    "fit_lifetimes",
    "fit_mttf",
    "fit_weibull",
    "glm_slope",
    "hardware_failed_jobs",
    "hardware_share",
    "hazard_verdict",
    "identify_pods",
    "interfailure_times",
    "interruption_rate_per_h",
    "job_availability",
    "job_interruptions",
    "job_run_ettr",
    "job_size_distribution",
    "job_state_breakdown",
    "lifetime_table",
    "measured_job_availability",
    "mttf_h",
    "node_features",
    "node_health",
    "node_incidents",
    "node_mttf",
    "optimal_interval_h",
    "plan",
    "pod_job_stats",
    "poisson_ci",
    "poisson_regression",
    "published_fleets",
    "rate_interval",
    "recovery_costs",
    "recovery_paths",
    "required_host_availability",
    "rule_baseline",
    "score_nodes",
    "secondary_preemptions",
    "signal_cooccurrence",
    "simulate_ettr",
    "simulate_strategy",
    "spares_needed",
    "steady_state_availability",
    "trend_test",
    "weibull_mle",
    "workload_summary",
    "young_interval_h",
]
