"""TPUv4-like pod: component failures, repairs, maintenance and healthd symptoms (NSDI'24).

The component side of Zu et al. NSDI'24, and the entry point :func:`simulate_pod` that also
runs the job side (:mod:`reliability.sim.pod_jobs`: scheduling, preflight, the two recovery
paths) on top of it.

Per component type, failures follow a non-homogeneous Poisson process with the configured
daily rate, a weekly swing and occasional bursts (NSDI'24 Fig. 12 shows machines swinging
between about 0.04% and 0.15% per day); a component out of service does not fail again.
Machines also go through planned maintenance. Repair times are log-normal; OCS repairs are
prioritised (short). With the defaults a host is available about 99% of the time.

Output: a JSON-lines event log (``pod_events.jsonl``) read by
:func:`reliability.ingest.read_pod_log`, and ``truth/``.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

import numpy as np
import polars as pl

from reliability import references as ref
from reliability._result import Result
from reliability.sim.config import check_days
from reliability.sim.pod_jobs import PodJobConfig, simulate_pod_jobs
from reliability.topology import DIMS, FACE_LINKS, HOSTS_PER_CUBE

__all__ = ["PodConfig", "PodFailureConfig", "PodResult", "load_pod_preset", "simulate_pod"]


@dataclass(frozen=True)
class PodFailureConfig:
    """Component failure, maintenance and repair processes (rates are per component per day)."""

    machine_rate_per_day: float = ref.MACHINE_FAILURES_PER_DAY.value
    ici_rate_per_day: float = ref.ICI_CABLE_FAILURES_PER_DAY.value
    ocs_rate_per_day: float = ref.OCS_FAILURES_PER_DAY.value
    weekly_amplitude: float = 0.35
    burst_probability_per_day: float = 0.02
    burst_multiplier: float = 3.0
    machine_repair_median_h: float = 96.0
    ici_repair_median_h: float = 48.0
    ocs_repair_median_h: float = 6.0  # prioritised
    repair_sigma: float = 0.8
    maintenance_interval_days: float = 90.0
    maintenance_duration_h: float = 12.0


@dataclass(frozen=True)
class PodConfig:
    """A pod: its cubes, time window, mode and failure processes."""

    name: str = "tpuv4"
    n_cubes: int = 64
    days: float = 730.0
    start: datetime = datetime(2022, 1, 1, tzinfo=UTC)
    mode: str = "reconfigurable"
    failures: PodFailureConfig = field(default_factory=PodFailureConfig)
    #: the job side (None: components only)
    jobs: PodJobConfig | None = field(default_factory=PodJobConfig)

    @property
    def horizon_s(self) -> float:
        """Length of the simulated window [s] (``days`` in seconds)."""
        return self.days * 86400.0

    def components(self) -> dict[str, list[str]]:
        """List the pod's component ids per type.

        Returns
        -------
        dict of str to list of str
            ``machine`` (cube-host, e.g. ``c03-h07``), ``ici_link`` (cube-dim-index-polarity,
            e.g. ``c03-x05+``), ``ocs`` (dim-index, e.g. ``ocs-x05``; none in a static pod).
        """
        machines = [
            f"c{c:02d}-h{h:02d}" for c in range(self.n_cubes) for h in range(HOSTS_PER_CUBE)
        ]
        links = [
            f"c{c:02d}-{d}{i:02d}{p}"
            for c in range(self.n_cubes)
            for d in DIMS
            for i in range(FACE_LINKS)
            for p in "-+"
        ]
        ocs = (
            [f"ocs-{d}{i:02d}" for d in DIMS for i in range(FACE_LINKS)]
            if self.mode == "reconfigurable"
            else []
        )
        return {"machine": machines, "ici_link": links, "ocs": ocs}


def load_pod_preset(name_or_path: str | Path) -> PodConfig:
    """Load a bundled pod preset (``tpuv4``, ``tpuv3-static``) or a TOML file.

    The document has ``[pod]`` (fields of :class:`PodConfig`), ``[failures]``
    (:class:`PodFailureConfig`) and ``[jobs]`` (:class:`PodJobConfig`; ``enabled = false``
    simulates the components alone) sections; keys left out keep their defaults.

    Parameters
    ----------
    name_or_path : str or pathlib.Path
        A path to an existing ``.toml`` file, or the name of a bundled preset.

    Returns
    -------
    PodConfig
        The configuration.

    Raises
    ------
    ValueError
        If neither a file nor a bundled preset has that name.
    """
    p = Path(name_or_path)
    if p.suffix == ".toml" and p.is_file():
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    elif p.suffix == ".toml":
        raise ValueError(f"{p}: no such preset file")
    else:
        root = resources.files("reliability.sim") / "presets"
        res = root / f"{name_or_path}.toml"
        text = res.read_text(encoding="utf-8") if res.is_file() else ""
        if "[pod]" not in text:
            pods = sorted(
                f.name.removesuffix(".toml")
                for f in root.iterdir()
                if f.name.endswith(".toml") and "[pod]" in f.read_text(encoding="utf-8")
            )
            raise ValueError(
                f"unknown pod preset {name_or_path!r}; bundled: {', '.join(pods)}, or a .toml file"
            )
        data = tomllib.loads(text)
    pod = dict(data.get("pod", {}))
    if "start" in pod:
        pod["start"] = datetime.fromisoformat(str(pod["start"]).replace("Z", "+00:00")).astimezone(
            UTC
        )
    jobs = data.get("jobs", {})
    return PodConfig(
        **pod,
        failures=PodFailureConfig(**data.get("failures", {})),
        jobs=None
        if jobs.get("enabled", True) is False
        else PodJobConfig(**{k: v for k, v in jobs.items() if k != "enabled"}),
    )


def _rate_grid(
    cfg: PodConfig, base: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Hourly grid of the rate [per component-second] with weekly swing and burst days."""
    f = cfg.failures
    t = np.arange(0.0, cfg.horizon_s + 3600.0, 3600.0)
    weekly = 1.0 + f.weekly_amplitude * np.sin(2 * np.pi * t / (7 * 86400.0))
    n_days = int(np.ceil(cfg.days)) + 1
    burst_days = rng.random(n_days) < f.burst_probability_per_day
    burst = np.where(burst_days[(t // 86400).astype(int)], f.burst_multiplier, 1.0)
    return t, np.maximum(base * weekly * burst, 0.0) / 86400.0


def _draw(
    cfg: PodConfig, n: int, base: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Draw (component index, time [s]) of the failures of ``n`` components.

    Not yet thinned for components out of service.
    """
    if n == 0 or base <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    t, r = _rate_grid(cfg, base, rng)
    cum = np.concatenate([[0.0], np.cumsum((r[1:] + r[:-1]) / 2 * np.diff(t))])
    counts = rng.poisson(np.full(n, cum[-1]))
    comp = np.repeat(np.arange(n), counts)
    times = np.interp(rng.uniform(0.0, cum[-1], size=comp.size), cum, t)
    order = np.lexsort((times, comp))
    return comp[order], times[order]


@dataclass
class PodResult(Result):
    """Events of a pod run, with the config, seed and the truth per component type.

    Attributes
    ----------
    config : PodConfig
        The configuration that was run.
    seed : int
        The run's seed.
    events : polars.DataFrame
        ``time_s`` [s since the start], ``event``, ``component_type``, ``component_id``,
        ``detail``: component and job events.
    truth : polars.DataFrame
        Per component type: ``components``, ``failures``, ``configured_rate_per_day``,
        ``in_service_days``, ``availability``.
    jobs : polars.DataFrame
        The job records of the job side (empty without it).
    job_stats : dict
        Counters of the job side (empty without it).
    """

    config: PodConfig
    seed: int
    events: pl.DataFrame
    truth: pl.DataFrame
    jobs: pl.DataFrame = field(default_factory=pl.DataFrame)
    job_stats: dict = field(default_factory=dict)
    title = "Simulated pod"

    @property
    def summary(self) -> pl.DataFrame:
        """Events by kind and component type (``event, component_type, events``)."""
        if self.events.height == 0:
            return pl.DataFrame(
                schema={"event": pl.String, "component_type": pl.String, "events": pl.Int64}
            )
        return (
            self.events.group_by("event", "component_type")
            .agg(events=pl.len().cast(pl.Int64))
            .sort("event", "component_type", nulls_last=True)
        )

    def _lines(self) -> list[str]:
        c = self.config
        return [
            f"Simulated pod {c.name} for {c.days:g} days (seed {self.seed}): {self.events.height:,} events, "
            f"{self.jobs.height:,} job records"
        ]

    def write(self, out: str | Path) -> Path:
        """Write ``pod_events.jsonl`` and ``truth/`` under ``out``.

        ``pod_events.jsonl`` is read by :func:`reliability.ingest.read_pod_log`; ``truth/``
        holds ``components.parquet``, ``jobs.parquet`` (with the job side) and
        ``config.json``.

        Parameters
        ----------
        out : str or pathlib.Path
            Output folder (created if missing; files of the same names are replaced).

        Returns
        -------
        pathlib.Path
            ``out``.
        """
        out = Path(out)
        (out / "truth").mkdir(parents=True, exist_ok=True)
        start_us = int(self.config.start.timestamp() * 1_000_000)
        ev = self.events.sort("time_s", maintain_order=True).with_columns(
            time=(pl.lit(start_us) + (pl.col("time_s") * 1_000_000).cast(pl.Int64))
            .cast(pl.Datetime("us", "UTC"))
            .dt.strftime("%Y-%m-%dT%H:%M:%S%.6fZ"),
            cluster=pl.lit(self.config.name),
        )
        with open(out / "pod_events.jsonl", "w", encoding="utf-8") as fh:
            for row in ev.select(
                "time", "cluster", "event", "component_type", "component_id", "detail"
            ).iter_rows(named=True):
                row = {k: v for k, v in row.items() if v is not None}
                fh.write(json.dumps(row, sort_keys=True) + "\n")
        self.truth.write_parquet(out / "truth" / "components.parquet")
        if self.jobs.height:
            self.jobs.write_parquet(out / "truth" / "jobs.parquet")
        cfg = asdict(self.config)
        if cfg.get("jobs"):
            cfg["jobs"]["sizes"] = {str(k): v for k, v in cfg["jobs"]["sizes"].items()}
        cfg["start"] = self.config.start.isoformat()
        (out / "truth" / "config.json").write_text(
            json.dumps({**cfg, "seed": self.seed}, indent=2) + "\n"
        )
        return out

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """What was simulated: component events and job records."""
        return {"events": self.events.height, "job records": self.jobs.height}

    @classmethod
    def _example(cls) -> PodResult:
        """Build a tiny instance: a TPUv4 pod for one day (for contract tests)."""
        return simulate_pod("tpuv4", days=1, seed=0)


def simulate_pod(
    config: PodConfig | str | Path = "tpuv4",
    *,
    days: float | None = None,
    seed: int = 0,
    mode: str | None = None,
    ft_routing: bool = True,
) -> PodResult:
    """Simulate a TPU pod: its components and the jobs that run on it (Zu et al. NSDI'24).

    The component side draws machine, optical ICI cable and OCS failures (weekly swing,
    bursts), repairs, planned maintenance and healthd symptoms; the job side
    (:mod:`reliability.sim.pod_jobs`) schedules a Borg-like job stream on the cubes, runs
    preflight checks, preempts batch jobs to defragment, and recovers interrupted jobs by
    reconfiguring onto other cubes or, for an OCS failure under a job with fault-tolerant
    routing, by rerouting around it at a step-time cost. Set ``config.jobs = None`` for the
    component side alone.

    Parameters
    ----------
    config : PodConfig or str or pathlib.Path
        A :class:`PodConfig`, a preset name (``tpuv4``, ``tpuv3-static``) or a TOML path.
    days : float or None
        Run length [days], overriding the config's (None: the config's).
    seed : int
        Random seed; the same seed gives the same result (and byte-identical files).
    mode : str or None
        ``"reconfigurable"`` (cubes joined by OCSes: any usable cubes make a slice) or
        ``"static"`` (a fixed arrangement without OCSes: a job needs an aligned healthy block);
        None: the preset's.
    ft_routing : bool
        Whether the pod offers fault-tolerant routing. ``False``: no job can run around a
        failed OCS, so every OCS failure interrupts the jobs on the pod (reconfigure path) and
        jobs wait for OCS repairs (the configured opt-in share applies otherwise).

    Returns
    -------
    PodResult
        The run (write it with :meth:`PodResult.write`).

    Raises
    ------
    ValueError
        If ``mode`` is neither ``"reconfigurable"`` nor ``"static"``, the preset is unknown, or
        ``days`` is not in (0, 36525] (:data:`reliability.sim.config.MAX_DAYS`).
    """
    cfg = config if isinstance(config, PodConfig) else load_pod_preset(config)
    if days is not None:
        cfg = replace(cfg, days=check_days(days))
    if mode is not None:
        if mode not in ("reconfigurable", "static"):
            raise ValueError(f"mode must be 'reconfigurable' or 'static', got {mode!r}")
        cfg = replace(cfg, mode=mode)
    if not ft_routing and cfg.jobs is not None:
        cfg = replace(cfg, jobs=replace(cfg.jobs, ft_routing_share=0.0))
    rng = np.random.default_rng(seed)
    f = cfg.failures
    comps = cfg.components()
    rates = {
        "machine": f.machine_rate_per_day,
        "ici_link": f.ici_rate_per_day,
        "ocs": f.ocs_rate_per_day,
    }
    repair_h = {
        "machine": f.machine_repair_median_h,
        "ici_link": f.ici_repair_median_h,
        "ocs": f.ocs_repair_median_h,
    }
    rows: list[tuple[float, str, str, str, str | None]] = []
    truth_rows = []
    for ctype, ids in comps.items():
        for cid in ids:
            rows.append((0.0, "inventory", ctype, cid, None))
        comp, times = _draw(cfg, len(ids), rates[ctype], rng)
        repair = rng.lognormal(np.log(repair_h[ctype] * 3600.0), f.repair_sigma, size=comp.size)
        # planned maintenance of machines: one window per interval, at a random phase
        maint: dict[int, list[tuple[float, float]]] = {}
        if ctype == "machine" and f.maintenance_interval_days > 0:
            period = f.maintenance_interval_days * 86400.0
            phase = rng.uniform(0.0, period, size=len(ids))
            for i in range(len(ids)):
                s = phase[i]
                while s < cfg.horizon_s:
                    maint.setdefault(i, []).append((s, s + f.maintenance_duration_h * 3600.0))
                    s += period
        busy_until = np.zeros(len(ids))
        down_s = np.zeros(len(ids))
        n_fail = 0
        # walk each component's events in time order: failures while out of service are skipped
        events_by_comp: dict[int, list[tuple[float, str, float]]] = {}
        for c, t, rep in zip(comp.tolist(), times.tolist(), repair.tolist(), strict=True):
            events_by_comp.setdefault(c, []).append((t, "fail", rep))
        for c, windows in maint.items():
            for s, e in windows:
                events_by_comp.setdefault(c, []).append((s, "maint", e - s))
        for c in sorted(events_by_comp):
            for t, kind, dur in sorted(events_by_comp[c]):
                if t < busy_until[c] or t >= cfg.horizon_s:
                    continue
                end = min(t + dur, cfg.horizon_s)
                busy_until[c] = t + dur
                down_s[c] += end - t
                cid = ids[c]
                if kind == "fail":
                    n_fail += 1
                    rows.append((t, "component_fail", ctype, cid, None))
                    if ctype != "ocs":
                        # an ICI cable is watched by one host of its cube (deterministic choice)
                        host = (
                            cid if ctype == "machine" else cid[:3] + f"-h{c % HOSTS_PER_CUBE:02d}"
                        )
                        symptom = "machine_unhealthy" if ctype == "machine" else "ici_link_down"
                        rows.append((t, "healthd", "machine", host, symptom))
                    if t + dur < cfg.horizon_s:
                        rows.append((t + dur, "component_repair", ctype, cid, None))
                else:
                    rows.append((t, "maintenance_start", ctype, cid, None))
                    if t + dur < cfg.horizon_s:
                        rows.append((t + dur, "maintenance_end", ctype, cid, None))
        days_total = len(ids) * cfg.days
        truth_rows.append(
            {
                "component_type": ctype,
                "components": len(ids),
                "failures": n_fail,
                "configured_rate_per_day": rates[ctype],
                "in_service_days": days_total - float(down_s.sum()) / 86400.0,
                "availability": 1.0 - float(down_s.sum()) / 86400.0 / days_total
                if days_total
                else 1.0,
            }
        )
    events = pl.DataFrame(
        rows,
        schema={
            "time_s": pl.Float64,
            "event": pl.String,
            "component_type": pl.String,
            "component_id": pl.String,
            "detail": pl.String,
        },
        orient="row",
    )
    jobs = pl.DataFrame()
    stats: dict = {}
    if cfg.jobs is not None:
        job_cfg = replace(cfg.jobs, arrivals_per_day=cfg.jobs.arrivals_per_day * cfg.n_cubes / 64)
        job_events, jobs, stats = simulate_pod_jobs(
            cfg,
            events.sort("time_s", "component_type", "component_id", "event"),
            job_cfg,
            np.random.default_rng([seed, 1]),
        )
        events = pl.concat([events, job_events])
    return PodResult(cfg, seed, events, pl.DataFrame(truth_rows), jobs, stats)
