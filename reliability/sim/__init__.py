"""Simulators (the GPU cluster and the TPU pod land with their issues) and their kernel."""

from reliability.sim.engine import EventLog, Handle, Kernel, SchedulingError

__all__ = ["EventLog", "Handle", "Kernel", "SchedulingError"]
