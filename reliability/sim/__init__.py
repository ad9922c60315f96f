"""Simulators and their building blocks: the event kernel and the TPUv4 pod topology.

The GPU-cluster and TPU-pod simulators themselves land with their issues.
"""

from reliability.sim import topology
from reliability.sim.engine import EventLog, Handle, Kernel, SchedulingError

__all__ = ["EventLog", "Handle", "Kernel", "SchedulingError", "topology"]
