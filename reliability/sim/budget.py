"""How much memory a simulator run needs, and whether this machine has it.

A simulator holds its whole run in memory (the job stream, the event log, the logs it
writes), so a run too long for the machine ends in a ``MemoryError`` or the OOM killer after
minutes of work. :func:`refuse_run` refuses it up front instead, naming the run length, what
it needs and the longest run that fits.

Peak resident memory of ``reliability simulate`` (the command, writing its output; seed 0;
Linux x86-64, Python 3.11, polars 2.1), measured 2026-12:

==============  =====  =======  ==========
run             days   jobs     peak [MiB]
==============  =====  =======  ==========
cluster small   10       4,435     186
cluster small   60      26,522     279
cluster small   240    105,980     530
cluster small   960    423,686   1,201
cluster rsc1    3       20,360     250
cluster rsc1    15     101,651     538
pod tpuv4       100      7,926     184
pod tpuv4       730     57,281     351
pod tpuv4       2,920  228,443     914
==============  =====  =======  ==========

:data:`BASE_BYTES` + :data:`BYTES_PER_JOB` per expected job (+ :data:`POD_BYTES_PER_DAY` a
day for a pod's rate grids) is above every one of them, by a factor 1.2 to 1.6: an upper
bound, so a run it lets through fits. Runs are also capped at :data:`MAX_DAYS` whatever the
memory.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from reliability.sim.config import MAX_DAYS, ClusterConfig, check_days
from reliability.sim.pod import PodConfig
from reliability.sim.workload import expected_gpu_seconds

__all__ = [
    "BASE_BYTES",
    "BYTES_PER_JOB",
    "MAX_DAYS",
    "POD_BYTES_PER_DAY",
    "RunSize",
    "available_memory",
    "cluster_run_size",
    "pod_run_size",
    "refuse_run",
]

#: memory of a run before its first job (interpreter, libraries, the cluster) [bytes]
BASE_BYTES = 256 * 2**20
#: memory per job of the run, its attempts, events and log lines included [bytes]
BYTES_PER_JOB = 4 * 2**10
#: memory per simulated day of a pod beside its jobs (hourly rate grids, maintenance) [bytes]
POD_BYTES_PER_DAY = 16 * 2**10


@dataclass(frozen=True)
class RunSize:
    """What a simulator run needs.

    Attributes
    ----------
    name : str
        The preset's name.
    days : float
        Run length [days].
    jobs_per_day : float
        Expected jobs submitted a day.
    bytes_per_day : float
        Memory the run needs per simulated day [bytes].
    """

    name: str
    days: float
    jobs_per_day: float
    bytes_per_day: float

    @property
    def memory(self) -> float:
        """Peak memory the run needs (an upper bound) [bytes]."""
        return BASE_BYTES + self.days * self.bytes_per_day

    def max_days(self, available: float) -> float:
        """Return the longest run of this config that fits in the memory available.

        Parameters
        ----------
        available : float
            Memory the run may use [bytes].

        Returns
        -------
        float
            Run length [days]; 0 if not even the base fits.
        """
        return max(0.0, (available - BASE_BYTES) / self.bytes_per_day)


def cluster_run_size(cfg: ClusterConfig, days: float | None = None) -> RunSize:
    """Size a cluster run: its expected jobs a day and the memory they take.

    Parameters
    ----------
    cfg : ClusterConfig
        The run's configuration.
    days : float or None
        Run length [days] (None: the config's).

    Returns
    -------
    RunSize
        Jobs a day = offered load x GPUs x 86400 s / expected GPU-seconds per job (the mean the
        workload draws; :func:`~reliability.sim.workload.expected_gpu_seconds`).
    """
    jobs = cfg.workload.target_utilization * cfg.n_nodes * cfg.gpus_per_node * 86400.0
    jobs /= expected_gpu_seconds(cfg)
    return RunSize(cfg.name, cfg.days if days is None else days, jobs, jobs * BYTES_PER_JOB)


def pod_run_size(cfg: PodConfig, days: float | None = None) -> RunSize:
    """Size a pod run: its jobs a day and the memory they and the rate grids take.

    Parameters
    ----------
    cfg : PodConfig
        The run's configuration.
    days : float or None
        Run length [days] (None: the config's).

    Returns
    -------
    RunSize
        Jobs a day = the configured arrivals (none without a job side).
    """
    jobs = cfg.jobs.arrivals_per_day if cfg.jobs is not None else 0.0
    days = cfg.days if days is None else days
    return RunSize(cfg.name, days, jobs, jobs * BYTES_PER_JOB + POD_BYTES_PER_DAY)


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _cgroup_room() -> int | None:
    """Memory left under this process's cgroup limit [bytes] (None: no limit found)."""
    rel = ""
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):  # cgroup v2
                rel = line[3:].lstrip("/")
    except OSError:
        return None
    for folder, limit, usage in (
        (Path("/sys/fs/cgroup") / rel, "memory.max", "memory.current"),
        (Path("/sys/fs/cgroup"), "memory.max", "memory.current"),
        (Path("/sys/fs/cgroup/memory"), "memory.limit_in_bytes", "memory.usage_in_bytes"),
    ):
        cap, used = _read_int(folder / limit), _read_int(folder / usage)
        if cap is not None and used is not None and cap < 2**60:
            return max(cap - used, 0)
    return None


def available_memory() -> int | None:
    """Return the memory a new run can use on this machine [bytes].

    Linux's ``MemAvailable`` (``/proc/meminfo``), or the room left under the process's cgroup
    memory limit (a container's) when that is less.

    Returns
    -------
    int or None
        Bytes; None where neither can be read (then only :data:`MAX_DAYS` limits a run).
    """
    free = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                free = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        free = None
    if free is None:
        try:
            free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, ValueError, OSError):
            free = None
    room = _cgroup_room()
    if room is not None:
        free = room if free is None else min(free, room)
    return free


def _size(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB" if n >= 2**30 else f"{n / 2**20:,.0f} MiB"


def refuse_run(size: RunSize, option: str, available: int | None = None) -> None:
    """Refuse a run longer than :data:`MAX_DAYS`, or one that needs more memory than there is.

    Parameters
    ----------
    size : RunSize
        The run (:func:`cluster_run_size`, :func:`pod_run_size`).
    option : str
        How the run length is given, for the message (``--days`` on the CLI).
    available : int or None
        Memory the run may use [bytes]; None: :func:`available_memory`.

    Raises
    ------
    ValueError
        Naming ``option`` and its value, and the limit: the maximum, or what the run needs, the
        memory available and the longest run that fits, and why (the run is held in memory).
    """
    days = check_days(size.days, f"{option} ")
    free = available_memory() if available is None else available
    if free is None or size.memory <= free:
        return
    fits = size.max_days(free)
    longest = (
        f"at most about {math.floor(fits):,} days fit" if fits >= 1 else "not even a 1-day run fits"
    )
    raise ValueError(
        f"{option} {days:g}: a {days:g}-day run of {size.name} ({size.jobs_per_day:,.0f} jobs a "
        f"day) is held in memory and needs about {_size(size.memory)} (an upper bound: "
        f"{_size(BASE_BYTES)} + {BYTES_PER_JOB // 1024} KiB per job), more than the "
        f"{_size(free)} available here: {longest}; run fewer days, or on a machine with more "
        "memory"
    )
