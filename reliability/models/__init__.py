"""Models: attribution-based failure rates, MTTF by job size, rates over time, workload breakdowns."""

from reliability.models.mttf import SIZE_BUCKETS, MTTFResult, fit_mttf, mttf_h, poisson_ci
from reliability.models.rates import (
    RateSeries,
    component_failure_rates,
    failure_rate_series,
    node_mttf,
)
from reliability.models.workload import (
    failure_taxonomy,
    hardware_share,
    job_size_distribution,
    job_state_breakdown,
    secondary_preemptions,
    signal_cooccurrence,
)

__all__ = [
    "SIZE_BUCKETS",
    "MTTFResult",
    "RateSeries",
    "component_failure_rates",
    "failure_rate_series",
    "failure_taxonomy",
    "fit_mttf",
    "hardware_share",
    "job_size_distribution",
    "job_state_breakdown",
    "mttf_h",
    "node_mttf",
    "poisson_ci",
    "secondary_preemptions",
    "signal_cooccurrence",
]
