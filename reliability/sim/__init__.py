"""Simulators of the clusters the papers describe, and their building blocks.

The Slurm-like GPU research cluster (Kokolis et al., HPCA'25), the TPUv4-like pod (Zu et al.,
NSDI'24: components, jobs, recovery paths) and their building blocks (the event kernel, the pod
topology).
"""

from reliability import topology
from reliability.sim.config import (
    ClusterConfig,
    FailureConfig,
    WorkloadConfig,
    load_preset,
    preset_names,
)
from reliability.sim.engine import EventLog, Handle, Kernel, SchedulingError
from reliability.sim.pod import (
    PodConfig,
    PodFailureConfig,
    PodResult,
    load_pod_preset,
    simulate_pod,
)
from reliability.sim.pod_jobs import PodJobConfig
from reliability.sim.run import ClusterResult, simulate_cluster

__all__ = [
    "ClusterConfig",
    "ClusterResult",
    "EventLog",
    "FailureConfig",
    "Handle",
    "Kernel",
    "PodConfig",
    "PodFailureConfig",
    "PodJobConfig",
    "PodResult",
    "SchedulingError",
    "WorkloadConfig",
    "load_pod_preset",
    "load_preset",
    "preset_names",
    "simulate_cluster",
    "simulate_pod",
    "topology",
]
