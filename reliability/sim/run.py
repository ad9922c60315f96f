"""``simulate_cluster``: draw the workload and failures, run the cluster, collect the result."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import polars as pl

from reliability.sim.cluster import ClusterSim
from reliability.sim.config import ClusterConfig, load_preset
from reliability.sim.engine import EventLog
from reliability.sim.failures import draw_failures, rate_schedule
from reliability.sim.workload import generate_workload

__all__ = ["ClusterResult", "ingest_simulation", "simulate_cluster"]


@dataclass
class ClusterResult:
    """What a cluster simulation produced.

    Attributes
    ----------
    config : the configuration used
    seed : the seed
    jobs : the drawn workload (one row per job)
    failures : the drawn failure and false-alarm events
    lemon : lemon-node mask (truth)
    log : the event log of the run
    events_processed : kernel events processed
    """

    config: ClusterConfig
    seed: int
    jobs: pl.DataFrame
    failures: pl.DataFrame
    lemon: np.ndarray
    log: EventLog
    events_processed: int

    def write(self, out: str | Path) -> Path:
        """Write raw logs (``sacct.psv``, ``sacctmgr_events.psv``, ``kernel/*.log``,
        ``health_checks.csv``) and ``truth/`` under ``out``; returns ``out``."""
        from reliability.sim.emit import write_cluster

        return write_cluster(self, Path(out))

    def rate_schedule(self) -> pl.DataFrame:
        """The configured failure rate over the run (truth)."""
        return rate_schedule(self.config)


def simulate_cluster(
    config: ClusterConfig | str | Path,
    *,
    days: float | None = None,
    seed: int = 0,
    progress: Callable[[float], None] | None = None,
    quarantine: dict[str, datetime] | None = None,
) -> ClusterResult:
    """Simulate a GPU research cluster.

    Parameters
    ----------
    config : a :class:`ClusterConfig`, a preset name (``small``, ``rsc1``, ``rsc2``) or a TOML path
    days : override the run length [days]
    seed : random seed; the same seed gives the same result (and byte-identical files)
    progress : called with the simulated time [s] after each simulated day
    quarantine : node name -> UTC time at which an admin drains it for good (running jobs
        finish first); same seed, same workload and failures, so a run with and without
        quarantine differ only by it (the lemon backtest)
    """
    cfg = config if isinstance(config, ClusterConfig) else load_preset(config)
    if days is not None:
        cfg = cfg.with_days(days)
    rng = np.random.default_rng(seed)
    jobs = generate_workload(cfg, rng)
    failures, lemon = draw_failures(cfg, rng)
    q: dict[int, float] = {}
    if quarantine:
        names = cfg.node_names()
        index = {n: i for i, n in enumerate(names)}
        for name, when in quarantine.items():
            if name not in index:
                raise ValueError(
                    f"quarantine: unknown node {name!r} (nodes are {names[0]}..{names[-1]})"
                )
            q[index[name]] = max((when - cfg.start).total_seconds(), 0.0)
    sim = ClusterSim(cfg, jobs, failures, quarantine=q)
    log = sim.run(progress)
    return ClusterResult(cfg, seed, jobs, failures, lemon, log, sim.k.processed)


def ingest_simulation(out: str | Path, dataset: str | Path) -> list[object]:
    """Ingest what :meth:`ClusterResult.write` wrote in ``out`` into a Dataset, through the
    ordinary readers (the simulator's ``truth/`` is not ingested). Returns the outcomes."""
    import json

    from reliability.store import Dataset

    out = Path(out)
    m = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    ds = Dataset(dataset)
    outcomes: list[object] = []
    files = m["ingest"]
    outcomes += ds.ingest("slurm", [out / f for f in files["slurm"]], tz=m["tz"])
    outcomes += ds.ingest("events", [out / f for f in files["events"]], tz=m["tz"])
    if files["kernel"]:
        outcomes += ds.ingest("kernel", [out / f for f in files["kernel"]], cluster=m["cluster"])
    outcomes += ds.ingest("health", [out / f for f in files["health"]], cluster=m["cluster"])
    return outcomes
