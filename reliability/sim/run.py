"""``simulate_cluster``: draw the workload and failures, run the cluster, collect the result."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import polars as pl

from reliability._result import Result
from reliability.sim.cluster import ClusterSim
from reliability.sim.config import ClusterConfig, load_preset
from reliability.sim.emit import write_cluster
from reliability.sim.engine import EventLog
from reliability.sim.failures import draw_failures, rate_schedule
from reliability.sim.workload import assign_ids, generate_workload

__all__ = ["ClusterResult", "simulate_cluster"]


@dataclass
class ClusterResult(Result):
    """What a cluster simulation produced.

    Attributes
    ----------
    config : the configuration used
    seed : the seed
    jobs : every job of the run, one row each: the drawn workload and the continuation jobs of
        long training runs (``run`` links the jobs of one run), with Slurm ids and names
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
    title = "Simulated cluster"

    @property
    def summary(self) -> pl.DataFrame:
        """One row: nodes, days, seed, jobs, failures drawn, lemon nodes, events processed."""
        c = self.config
        return self._mapping_frame({
            "cluster": c.name, "nodes": c.n_nodes, "gpus_per_node": c.gpus_per_node, "days": float(c.days),
            "seed": self.seed, "jobs": self.jobs.height, "failures": self.failures.height,
            "lemon_nodes": int(np.asarray(self.lemon).sum()), "events_processed": self.events_processed,
        })  # fmt: skip

    def _lines(self) -> list[str]:
        c = self.config
        return [
            f"Simulated {c.name}: {c.n_nodes:,} nodes x {c.gpus_per_node} GPUs for {c.days:g} days (seed {self.seed}): "
            f"{self.jobs.height:,} jobs, {self.failures.height:,} failure events drawn, "
            f"{int(np.asarray(self.lemon).sum())} lemon nodes; {self.events_processed:,} events processed"
        ]

    def write(self, out: str | Path) -> Path:
        """Write raw logs (``sacct.psv``, ``sacctmgr_events.psv``, ``kernel/*.log``,
        ``health_checks.csv``) and ``truth/`` under ``out``; returns ``out``."""
        return write_cluster(
            Path(out), config=self.config, seed=self.seed, jobs=self.jobs, log=self.log,
            lemon=self.lemon,
        )  # fmt: skip

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
    return ClusterResult(
        cfg, seed, _all_jobs(jobs, sim.continuations, cfg.horizon_s), failures, lemon, log,
        sim.k.processed,
    )  # fmt: skip


def _all_jobs(
    drawn: pl.DataFrame, continuations: list[tuple[int, int, float, float, float]], horizon: float
) -> pl.DataFrame:
    """The drawn jobs plus the continuation jobs of long training runs (submitted before the
    horizon), each with its ``run`` (the index of the run's first job), ids and names."""
    jobs = drawn.with_columns(run=pl.col("job"))
    if continuations:
        cont = pl.DataFrame(
            continuations, schema={"job": pl.Int64, "parent": pl.Int64, "submit_s": pl.Float64,
                                   "work_s": pl.Float64, "outcome_at": pl.Float64}, orient="row",
        ).filter(pl.col("submit_s") < horizon)  # fmt: skip
        # a continuation's parent may itself be a continuation: follow the chain to the root
        root = dict(zip(jobs["job"].to_list(), jobs["run"].to_list(), strict=True))
        runs = []
        for job, parent in cont.select("job", "parent").iter_rows():
            root[job] = root[parent]
            runs.append(root[parent])
        inherited = [
            c for c in jobs.columns if c not in ("job", "submit_s", "work_s", "outcome_at", "run")
        ]
        # every job of a run has the run's size, QOS, user...: take them from its first job
        cont = cont.with_columns(run=pl.Series(runs, dtype=pl.Int64)).join(
            jobs.select(pl.col("job").alias("run"), *inherited), on="run", how="left"
        ).with_columns(requeue_kind=pl.lit(0, pl.Int64))  # fmt: skip
        jobs = pl.concat([jobs, cont.select(jobs.columns)])
    return assign_ids(jobs)
