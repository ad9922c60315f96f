"""Failure counts and rates.

Failure counts and rates: r_f and MTTF by job size (MTTF ∝ 1/(N·r_f)) with the 1/N check,
weekly rates and trends, workload breakdowns, per-job interruptions and node incidents.
"""

from reliability.models.failures.counts import (
    RateEstimate,
    TrendTest,
    estimate_rate,
    poisson_regression,
    rate_interval,
    trend_test,
)
from reliability.models.failures.incidents import failures_by_node, node_incidents
from reliability.models.failures.jobs import (
    CRASH_LOOP_MIN_REQUEUES,
    crash_loops,
    hardware_failed_jobs,
    job_interruptions,
)
from reliability.models.failures.mttf import (
    CPU_ONLY_BUCKET,
    SIZE_BUCKETS,
    MTTFResult,
    fit_mttf,
    glm_slope,
    mttf_h,
    poisson_ci,
)
from reliability.models.failures.rates import (
    RateSeries,
    component_failure_rates,
    failure_rate_series,
    node_mttf,
)
from reliability.models.failures.scaling import ScalingCheck, check_scaling
from reliability.models.failures.workload import (
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
    "SIZE_BUCKETS",
    "MTTFResult",
    "RateEstimate",
    "RateSeries",
    "ScalingCheck",
    "TrendTest",
    "WorkloadResult",
    "check_scaling",
    "component_failure_rates",
    "crash_loops",
    "estimate_rate",
    "failure_rate_series",
    "failure_taxonomy",
    "failures_by_node",
    "fit_mttf",
    "glm_slope",
    "hardware_failed_jobs",
    "hardware_share",
    "job_interruptions",
    "job_size_distribution",
    "job_state_breakdown",
    "mttf_h",
    "node_incidents",
    "node_mttf",
    "poisson_ci",
    "poisson_regression",
    "rate_interval",
    "secondary_preemptions",
    "signal_cooccurrence",
    "trend_test",
    "workload_summary",
]
