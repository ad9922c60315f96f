"""Simulators: the Slurm-like GPU research cluster (HPCA'25) and its building blocks (the
event kernel, the TPUv4 pod topology). The TPU pod simulator lands with its issue."""

from reliability.sim import topology
from reliability.sim.config import (
    ClusterConfig,
    FailureConfig,
    WorkloadConfig,
    load_preset,
    preset_names,
)
from reliability.sim.engine import EventLog, Handle, Kernel, SchedulingError
from reliability.sim.run import ClusterResult, ingest_simulation, simulate_cluster

__all__ = [
    "ClusterConfig",
    "ClusterResult",
    "EventLog",
    "FailureConfig",
    "Handle",
    "Kernel",
    "SchedulingError",
    "WorkloadConfig",
    "ingest_simulation",
    "load_preset",
    "preset_names",
    "simulate_cluster",
    "topology",
]
