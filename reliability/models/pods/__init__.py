"""TPU pods.

TPU pods (NSDI '24): job availability (analytic and measured), recovery paths, pod
identification and slice all-to-all routing throughput.
"""

from reliability.models.pods.availability import (
    PODS,
    PodSpec,
    availability_curve,
    job_availability,
    required_host_availability,
    steady_state_availability,
)
from reliability.models.pods.identify import PodJobStats, identify_pods, pod_job_stats
from reliability.models.pods.measure import MeasuredAvailability, measured_job_availability
from reliability.models.pods.recovery import RecoveryComparison, recovery_paths
from reliability.models.pods.routing import (
    ThroughputResult,
    all_to_all_throughput,
    dimension_order_load,
)

__all__ = [
    "PODS",
    "MeasuredAvailability",
    "PodJobStats",
    "PodSpec",
    "RecoveryComparison",
    "ThroughputResult",
    "all_to_all_throughput",
    "availability_curve",
    "dimension_order_load",
    "identify_pods",
    "job_availability",
    "measured_job_availability",
    "pod_job_stats",
    "recovery_paths",
    "required_host_availability",
    "steady_state_availability",
]
