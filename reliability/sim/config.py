"""Configuration of the GPU-cluster simulator, loaded from TOML presets (data, not code).

Every field has a documented default; a preset (``reliability/sim/presets/*.toml``) or a user
file overrides any of them by section (``[cluster]``, ``[workload]``, ``[failures]``).
Reference numbers: Kokolis et al. HPCA'25 (DESIGN.md §5).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = [
    "Cause",
    "ClusterConfig",
    "FailureConfig",
    "WorkloadConfig",
    "load_preset",
    "preset_names",
]


@dataclass(frozen=True)
class Cause:
    """A hardware failure cause and its signature.

    component : taxonomy component (``gpu``, ``ib_link``...)
    xid : NVIDIA Xid written to the kernel log (None: no driver message)
    node_down : the node stops responding (jobs end NODE_FAIL) rather than crashing the job
    reason : drain reason a health check writes (sacctmgr event / scontrol Reason)
    """

    component: str
    xid: str | None
    node_down: bool
    reason: str


#: Default cause catalogue (name -> Cause).
CAUSES: dict[str, Cause] = {
    "gpu_fell_off_bus": Cause("gpu", "79", False, "GPU fell off the bus (Xid 79)"),
    "gpu_gsp_timeout": Cause("gpu", "119", False, "GSP RPC timeout (Xid 119)"),
    "gpu_eud": Cause("gpu", "61", False, "GPU diagnostics (EUD) failed"),
    "gpu_memory_dbe": Cause("gpu_memory", "48", False, "GPU ECC double-bit error (Xid 48)"),
    "gpu_memory_uncontained": Cause("gpu_memory", "95", False, "uncontained ECC error (Xid 95)"),
    "nvlink": Cause("nvlink", "74", False, "NVLink error (Xid 74)"),
    "pcie": Cause("pcie", None, False, "PCIe link degraded"),
    "ib_link": Cause("ib_link", None, False, "IB link down"),
    "nic": Cause("nic", None, False, "NIC failure"),
    "dimm": Cause("dimm", None, True, "DIMM uncorrectable error"),
    "filesystem": Cause("filesystem", None, False, "filesystem mount missing"),
    "psu": Cause("psu", None, True, "PSU failure"),
    "bios": Cause("bios", None, True, "BIOS / firmware fault"),
    "cpu": Cause("cpu", None, True, "CPU machine check"),
}

#: Share of each cause among ordinary nodes' failures.
DEFAULT_CAUSE_MIX = {
    "gpu_fell_off_bus": 0.12, "gpu_gsp_timeout": 0.06, "gpu_eud": 0.03, "gpu_memory_dbe": 0.10,
    "gpu_memory_uncontained": 0.06, "nvlink": 0.08, "pcie": 0.06, "ib_link": 0.14, "nic": 0.05,
    "dimm": 0.07, "filesystem": 0.12, "psu": 0.04, "bios": 0.04, "cpu": 0.03,
}  # fmt: skip
#: Root causes of lemon nodes (HPCA'25: GPU 28.2%, DIMM 20.5%, PCIe 15.4%, EUD 10.3%, NIC 7.7%,
#: BIOS 7.7%, PSU 5.1%, optics 2.6%, CPU 2.6%).
LEMON_CAUSE_MIX = {
    "gpu_fell_off_bus": 0.282, "dimm": 0.205, "pcie": 0.154, "gpu_eud": 0.103, "nic": 0.077,
    "bios": 0.077, "psu": 0.051, "ib_link": 0.026, "cpu": 0.026,
}  # fmt: skip
#: Job size mix (GPUs -> share of jobs). With the default durations: 46% of jobs use 1 GPU,
#: 91.5% under 8 GPUs taking 7.5% of GPU time, 256+ GPU jobs 66% of GPU time, ~47 GPU-hours per
#: job (HPCA'25 Fig. 2: >40%, >90% and <10%, 66% on RSC-1; 7.2k jobs/day on 2,000 nodes).
DEFAULT_SIZE_MIX = {
    1: 0.46, 2: 0.20, 4: 0.25, 8: 0.05, 16: 0.015, 32: 0.01, 64: 0.005, 128: 0.003,
    256: 0.0006, 512: 0.00032, 1024: 0.00016, 2048: 0.00008, 4096: 0.00004,
}  # fmt: skip


@dataclass(frozen=True)
class WorkloadConfig:
    """Job stream. Durations are log-normal with median ``median_h * gpus**size_exponent``."""

    target_utilization: float = 0.83
    max_job_gpus: int = 4096
    max_lifetime_h: float = 168.0
    array_fraction: float = 0.15
    size_mix: dict[int, float] = field(default_factory=lambda: dict(DEFAULT_SIZE_MIX))
    median_h: float = 0.5
    size_exponent: float = 0.5
    sigma: float = 1.3
    qos_mix: dict[str, float] = field(
        default_factory=lambda: {"high": 0.25, "normal": 0.55, "low": 0.20}
    )
    #: chance a job fails from user code / is cancelled / runs out of memory, before its end
    p_user_fail: float = 0.23
    p_cancel: float = 0.03
    p_oom: float = 0.001
    #: chance the requested time limit is shorter than the work (ends TIMEOUT)
    p_timeout: float = 0.006
    n_users: int = 300
    #: long multi-node runs (>= this many GPUs) checkpoint and restart
    training_min_gpus: int = 64
    checkpoint_interval_min: float = 60.0
    restart_overhead_min: float = 5.0
    preempt_after_h: float = 2.0


@dataclass(frozen=True)
class FailureConfig:
    """Hardware failures, health checks and repairs."""

    rate_start: float = 2.5  # failures per 1000 node-days at the start of the run
    rate_end: float = 17.5  # ... at the end (linear ramp)
    weekly_amplitude: float = 0.0  # relative weekly swing of the rate
    lemon_fraction: float = 0.015
    lemon_rate_multiplier: float = 15.0
    cause_mix: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_CAUSE_MIX))
    lemon_cause_mix: dict[str, float] = field(default_factory=lambda: dict(LEMON_CAUSE_MIX))
    health_check_interval_s: float = 300.0
    #: chance a health check catches a failure (otherwise it escapes; the node stays in service)
    p_detect: float = 0.9
    p_detect_lemon: float = 0.35
    #: healthy nodes drained by a health check without a fault, per 1000 node-days
    false_alarm_rate: float = 0.3
    #: seconds until Slurm marks a silent node down (SlurmdTimeout)
    slurmd_timeout_s: float = 300.0
    repair_median_h: float = 18.0
    repair_sigma: float = 0.9
    false_alarm_repair_h: float = 1.0


@dataclass(frozen=True)
class ClusterConfig:
    """The whole simulation: cluster shape, time window, workload and failures."""

    name: str = "cluster"
    n_nodes: int = 48
    gpus_per_node: int = 8
    days: float = 30.0
    start: datetime = datetime(2025, 1, 1, tzinfo=UTC)
    tz: str = "UTC"
    node_prefix: str = "gpu"
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    failures: FailureConfig = field(default_factory=FailureConfig)

    def node_names(self) -> list[str]:
        """Node host names, zero-padded (``gpu001``...)."""
        width = max(3, len(str(self.n_nodes)))
        return [f"{self.node_prefix}{i:0{width}d}" for i in range(1, self.n_nodes + 1)]

    @property
    def horizon_s(self) -> float:
        return self.days * 86400.0

    def with_days(self, days: float) -> ClusterConfig:
        return replace(self, days=float(days))

    def as_dict(self) -> dict[str, Any]:
        """Plain dict (for truth/config.json)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, (WorkloadConfig, FailureConfig)):
                out[f.name] = {g.name: getattr(v, g.name) for g in fields(v)}
            else:
                out[f.name] = v.isoformat() if isinstance(v, datetime) else v
        return out


def _section(cls: type, data: dict[str, Any], where: str) -> Any:
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r}; expected one of {sorted(known)}")
    data = dict(data)
    for key in ("size_mix",):
        if key in data:
            data[key] = {int(k): float(v) for k, v in data[key].items()}
    return cls(**data)


def from_dict(data: dict[str, Any], where: str = "config") -> ClusterConfig:
    """Build a config from a parsed TOML document (``[cluster]``, ``[workload]``, ``[failures]``)."""
    unknown = sorted(set(data) - {"cluster", "workload", "failures"})
    if unknown:
        raise ValueError(f"{where}: unknown section [{unknown[0]}]")
    cl = dict(data.get("cluster", {}))
    if "start" in cl:
        start = cl["start"]
        if isinstance(start, str):
            start = datetime.fromisoformat(start.replace("Z", "+00:00"))
        if start.tzinfo is None:
            raise ValueError(f"{where}: cluster.start needs a UTC offset")
        cl["start"] = start.astimezone(UTC)
    wl = _section(WorkloadConfig, data.get("workload", {}), f"{where} [workload]")
    fl = _section(FailureConfig, data.get("failures", {}), f"{where} [failures]")
    known = {f.name for f in fields(ClusterConfig)} - {"workload", "failures"}
    bad = sorted(set(cl) - known)
    if bad:
        raise ValueError(
            f"{where} [cluster]: unknown key {bad[0]!r}; expected one of {sorted(known)}"
        )
    return ClusterConfig(**cl, workload=wl, failures=fl)


def preset_names() -> list[str]:
    """Bundled presets."""
    root = resources.files("reliability.sim") / "presets"
    return sorted(p.name.removesuffix(".toml") for p in root.iterdir() if p.name.endswith(".toml"))


def load_preset(name_or_path: str | Path) -> ClusterConfig:
    """A bundled preset by name (``small``, ``rsc1``, ``rsc2``) or a TOML file path."""
    p = Path(name_or_path)
    if p.suffix == ".toml" and p.is_file():
        return from_dict(tomllib.loads(p.read_text(encoding="utf-8")), str(p))
    res = resources.files("reliability.sim") / "presets" / f"{name_or_path}.toml"
    if not res.is_file():
        raise ValueError(f"unknown preset {name_or_path!r}; bundled: {preset_names()}")
    return from_dict(tomllib.loads(res.read_text(encoding="utf-8")), f"preset {name_or_path}")
