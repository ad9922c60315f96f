"""``simulate_cluster``: draw the workload and failures, run the cluster, collect the result."""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import polars as pl

from reliability._atomic import write_bytes_atomic
from reliability._result import Result
from reliability.sim.cluster import ClusterSim
from reliability.sim.config import ClusterConfig, load_preset
from reliability.sim.emit import write_cluster
from reliability.sim.engine import EventLog, paused_gc
from reliability.sim.failures import draw_failures, rate_schedule
from reliability.sim.workload import assign_ids, generate_workload

__all__ = [
    "ClusterResult",
    "resume_cluster",
    "save_checkpoint",
    "simulate_cluster",
    "snapshot_cluster",
]

#: version of the checkpoint format written by ``simulate_cluster(checkpoint=...)``
CHECKPOINT_FORMAT = 5  # 5: lifetime expiry events of requeued jobs


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
    observed_days : for a run seen at a checkpoint (:func:`snapshot_cluster`), the day its
        logs end [days since the start]; None for a whole run
    """

    config: ClusterConfig
    seed: int
    jobs: pl.DataFrame
    failures: pl.DataFrame
    lemon: np.ndarray
    log: EventLog
    events_processed: int
    observed_days: float | None = None
    title = "Simulated cluster"

    @property
    def summary(self) -> pl.DataFrame:
        """One row: nodes, days, seed, jobs, failures drawn, lemon nodes, events processed."""
        c = self.config
        return self._mapping_frame(
            {
                "cluster": c.name,
                "nodes": c.n_nodes,
                "gpus_per_node": c.gpus_per_node,
                "days": float(c.days),
                "seed": self.seed,
                "jobs": self.jobs.height,
                "failures": self.failures.height,
                "lemon_nodes": int(np.asarray(self.lemon).sum()),
                "events_processed": self.events_processed,
            }
        )

    def _lines(self) -> list[str]:
        c = self.config
        seen = "" if self.observed_days is None else f", as seen at day {self.observed_days:g}"
        return [
            f"Simulated {c.name}: {c.n_nodes:,} nodes x {c.gpus_per_node} GPUs for {c.days:g} days (seed {self.seed}{seen}): "
            f"{self.jobs.height:,} jobs, {self.failures.height:,} failure events drawn, "
            f"{int(np.asarray(self.lemon).sum())} lemon nodes; {self.events_processed:,} events processed"
        ]

    def write(self, out: str | Path) -> Path:
        """Write the raw logs and the truth under ``out``.

        The raw logs are ``sacct.psv``, ``sacctmgr_events.psv``, ``kernel/*.log`` and
        ``health_checks.csv``; ``truth/`` holds what only the simulator knows.

        Parameters
        ----------
        out : str or Path
            The folder to write (created).

        Returns
        -------
        Path
            ``out``.
        """
        return write_cluster(
            Path(out),
            config=self.config,
            seed=self.seed,
            jobs=self.jobs,
            log=self.log,
            lemon=self.lemon,
        )

    def rate_schedule(self) -> pl.DataFrame:
        """Give the configured failure rate over the run (truth).

        Returns
        -------
        polars.DataFrame
            The rate schedule (:func:`~reliability.sim.failures.rate_schedule`).
        """
        return rate_schedule(self.config)

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """What was simulated: jobs, failure events drawn and node-days."""
        days = self.observed_days if self.observed_days is not None else self.config.days
        return {
            "jobs": self.jobs.height,
            "failure events": self.failures.height,
            "node-days": float(self.config.n_nodes * days),
        }

    @classmethod
    def _example(cls) -> ClusterResult:
        """Build a tiny instance: the ``small`` preset for two days (for contract tests)."""
        return simulate_cluster("small", days=2, seed=0)


def simulate_cluster(
    config: ClusterConfig | str | Path,
    *,
    days: float | None = None,
    seed: int = 0,
    progress: Callable[[float], None] | None = None,
    quarantine: dict[str, datetime] | None = None,
    checkpoint: tuple[float, str | Path] | None = None,
) -> ClusterResult:
    """Simulate a GPU research cluster.

    Parameters
    ----------
    config : ClusterConfig or str or Path
        A configuration, a preset name (``small``, ``rsc1``, ``rsc2``) or a TOML path.
    days : float, optional
        Override the run length [days].
    seed : int
        Random seed; the same seed gives the same result (and byte-identical files).
    progress : callable, optional
        Called with the simulated time [s] after each simulated day.
    quarantine : dict of str to datetime, optional
        Node name -> UTC time at which an admin drains it for good (running jobs finish
        first); same seed, same workload and failures, so a run with and without quarantine
        differ only by it (the lemon backtest, HPCA'25 §VI).
    checkpoint : tuple of (float, str or Path), optional
        ``(day, path)``: also save the state of the run at ``day`` [days since the start] to
        ``path`` (a pickle; only load checkpoints you wrote). :func:`resume_cluster` continues
        it, with nodes quarantined from then on, to the same result as a run given that
        quarantine from the start: the lemon backtest simulates only the days after its split.

    Returns
    -------
    ClusterResult
        The jobs, failures, lemon mask and event log of the run.

    Raises
    ------
    ValueError
        If a quarantined node is unknown or the checkpoint day is outside the run.
    """
    cfg = config if isinstance(config, ClusterConfig) else load_preset(config)
    if days is not None:
        cfg = cfg.with_days(days)
    jobs, failures, lemon, sim = _begin(cfg, seed, _node_times(cfg, quarantine))
    if checkpoint is not None:
        _save_state(cfg, seed, jobs, failures, lemon, sim, *checkpoint, progress)
    sim.advance(cfg.horizon_s, progress)
    return _result(cfg, seed, jobs, failures, lemon, sim)


def save_checkpoint(
    config: ClusterConfig,
    *,
    seed: int,
    day: float,
    path: str | Path,
    progress: Callable[[float], None] | None = None,
) -> Path:
    """Simulate a run up to ``day`` and save its state there, without going on.

    The first half of ``simulate_cluster(config, seed=seed, checkpoint=(day, path))``:
    :func:`resume_cluster` continues it to the same result, and :func:`snapshot_cluster`
    gives the run as observed at ``day``.

    Parameters
    ----------
    config : ClusterConfig
        The configuration (its ``days`` is the whole run's length).
    seed : int
        Random seed.
    day : float
        Where to stop [days since the start].
    path : str or Path
        Where to write the checkpoint (a pickle).
    progress : callable, optional
        Called with the simulated time [s] after each simulated day.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ValueError
        If ``day`` is outside the run.
    """
    jobs, failures, lemon, sim = _begin(config, seed, {})
    _save_state(config, seed, jobs, failures, lemon, sim, day, path, progress)
    sim.k.clear()  # saved: the simulator is freed once this returns (see Kernel.clear)
    return Path(path)


def _begin(
    cfg: ClusterConfig, seed: int, quarantine: dict[int, float]
) -> tuple[pl.DataFrame, pl.DataFrame, np.ndarray, ClusterSim]:
    """Draw the workload and failures of ``seed`` and start the simulator at time 0."""
    rng = np.random.default_rng(seed)
    jobs = generate_workload(cfg, rng)
    failures, lemon = draw_failures(cfg, rng)
    sim = ClusterSim(cfg, jobs, failures, quarantine=quarantine)
    sim.begin()
    return jobs, failures, lemon, sim


def _save_state(
    cfg: ClusterConfig,
    seed: int,
    jobs: pl.DataFrame,
    failures: pl.DataFrame,
    lemon: np.ndarray,
    sim: ClusterSim,
    day: float,
    path: str | Path,
    progress: Callable[[float], None] | None,
) -> None:
    """Run ``sim`` to ``day`` and write the checkpoint (atomically)."""
    if not 0.0 <= day <= cfg.days:
        raise ValueError(f"checkpoint day {day!r} is outside the run (0-{cfg.days:g} days)")
    sim.advance(day * 86400.0, progress)
    state = {
        "format": CHECKPOINT_FORMAT,
        "config": _config_doc(cfg, seed),
        "day": day,
        "jobs": jobs,
        "failures": failures,
        "lemon": lemon,
        "sim": sim,
    }
    write_bytes_atomic(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL), Path(path))


def resume_cluster(
    path: str | Path,
    *,
    config: ClusterConfig,
    seed: int,
    quarantine: dict[str, datetime] | None = None,
    progress: Callable[[float], None] | None = None,
) -> ClusterResult:
    """Continue a run saved by ``simulate_cluster(checkpoint=(day, path))`` to its horizon.

    Parameters
    ----------
    path : str or Path
        The checkpoint file (a pickle written by this package; never load one from elsewhere).
    config : ClusterConfig
        The configuration the checkpoint must belong to (refused otherwise).
    seed : int
        The seed the checkpoint must belong to (refused otherwise).
    quarantine : dict of str to datetime, optional
        Node name -> UTC time, not before the checkpoint, at which an admin drains it for good
        (as in :func:`simulate_cluster`).
    progress : callable, optional
        Called with the simulated time [s] after each simulated day.

    Returns
    -------
    ClusterResult
        The whole run, equal to ``simulate_cluster(config, seed=seed, quarantine=quarantine)``.

    Raises
    ------
    ValueError
        If the file is not a checkpoint, belongs to another run, or a drain precedes it.
    """
    state = _load_checkpoint(path, config, seed)
    sim: ClusterSim = state["sim"]
    # a drain at the checkpoint's own time may come back a few microseconds early from the
    # datetime round trip (timedelta rounds to microseconds): it is at the checkpoint
    q = {
        n: sim.k.now if 0.0 < sim.k.now - t < 1e-3 else t
        for n, t in _node_times(config, quarantine).items()
    }
    early = {n: t for n, t in q.items() if t < sim.k.now}
    if early:
        names = config.node_names()
        raise ValueError(
            f"quarantine of {', '.join(names[n] for n in sorted(early))} precedes the checkpoint "
            f"(day {state['day']:g}): simulate from the start instead"
        )
    sim.add_quarantine(q)
    sim.advance(config.horizon_s, progress)
    return _result(config, seed, state["jobs"], state["failures"], state["lemon"], sim)


def snapshot_cluster(path: str | Path, *, config: ClusterConfig, seed: int) -> ClusterResult:
    """Give the run saved by ``simulate_cluster(checkpoint=(day, path))`` as seen at that day.

    What a site's logs hold at the checkpoint: the attempts that ended before it, those still
    running or pending then (``RUNNING`` / ``PENDING``, as ``sacct`` shows them), the nodes
    still out of service, and every health and kernel event so far; nothing after it. The
    jobs are those submitted before it and the failures those drawn before it; the
    configuration (and so the truth's rate schedule) is the whole run's, and
    ``observed_days`` says where the logs end. The lemon backtest flags nodes on these logs,
    as an operator at the split would.

    Parameters
    ----------
    path : str or Path
        The checkpoint file (a pickle written by this package; never load one from elsewhere).
    config : ClusterConfig
        The configuration the checkpoint must belong to (refused otherwise).
    seed : int
        The seed the checkpoint must belong to (refused otherwise).

    Returns
    -------
    ClusterResult
        The run up to the checkpoint.

    Raises
    ------
    ValueError
        If the file is not a checkpoint or belongs to another run.
    """
    state = _load_checkpoint(path, config, seed)
    sim: ClusterSim = state["sim"]
    horizon_s = sim.k.now
    log = sim.finish(horizon_s)
    sim.k.clear()  # seen as it stood: the simulator is freed once this returns
    jobs = _all_jobs(state["jobs"], sim.continuations, horizon_s)
    return ClusterResult(
        config,
        seed,
        jobs.filter(pl.col("submit_s") < horizon_s),
        state["failures"].filter(pl.col("time_s") < horizon_s),
        state["lemon"],
        log,
        sim.k.processed,
        observed_days=horizon_s / 86400.0,
    )


def _load_checkpoint(path: str | Path, config: ClusterConfig, seed: int) -> dict:
    """Read a checkpoint of ``config`` and ``seed`` (refused otherwise)."""
    path = Path(path)
    try:
        state = pickle.loads(path.read_bytes())  # our own checkpoint (see resume_cluster)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError) as exc:
        raise ValueError(f"{path}: not a readable simulator checkpoint ({exc})") from None
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path}: not a simulator checkpoint of format {CHECKPOINT_FORMAT}")
    if state["config"] != _config_doc(config, seed):
        raise ValueError(f"{path}: the checkpoint belongs to another configuration or seed")
    return state


def _node_times(cfg: ClusterConfig, quarantine: dict[str, datetime] | None) -> dict[int, float]:
    """Node name -> UTC time as node index -> seconds since the start (not before it)."""
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
    return q


def _config_doc(cfg: ClusterConfig, seed: int) -> str:
    return json.dumps({**cfg.as_dict(), "seed": seed}, default=str, sort_keys=True)


def _result(
    cfg: ClusterConfig,
    seed: int,
    jobs: pl.DataFrame,
    failures: pl.DataFrame,
    lemon: np.ndarray,
    sim: ClusterSim,
) -> ClusterResult:
    with paused_gc():  # (see Kernel.run: no garbage cycles, a big log to walk)
        log = sim.finish()
        all_jobs = _all_jobs(jobs, sim.continuations, cfg.horizon_s)
    sim.k.clear()  # the run is over: the simulator is freed once this returns
    return ClusterResult(
        cfg,
        seed,
        all_jobs,
        failures,
        lemon,
        log,
        sim.k.processed,
    )


def _all_jobs(
    drawn: pl.DataFrame, continuations: list[tuple[int, int, float, float, float]], horizon: float
) -> pl.DataFrame:
    """Join the drawn jobs and the continuation jobs of long training runs.

    Continuations submitted before the horizon are kept, each with its ``run`` (the index of the
    run's first job), ids and names.
    """
    jobs = drawn.with_columns(run=pl.col("job"))
    if continuations:
        cont = pl.DataFrame(
            continuations,
            schema={
                "job": pl.Int64,
                "parent": pl.Int64,
                "submit_s": pl.Float64,
                "work_s": pl.Float64,
                "outcome_at": pl.Float64,
            },
            orient="row",
        ).filter(pl.col("submit_s") < horizon)
        # a continuation's parent may itself be a continuation: follow the chain to the root
        # (a drawn job is its own run's root)
        root: dict[int, int] = {}
        runs = []
        for job, parent in cont.select("job", "parent").iter_rows():
            root[job] = root.get(parent, parent)
            runs.append(root[job])
        inherited = [
            c for c in jobs.columns if c not in ("job", "submit_s", "work_s", "outcome_at", "run")
        ]
        # every job of a run has the run's size, QOS, user...: take them from its first job
        cont = (
            cont.with_columns(run=pl.Series(runs, dtype=pl.Int64))
            .join(jobs.select(pl.col("job").alias("run"), *inherited), on="run", how="left")
            .with_columns(requeue_kind=pl.lit(0, pl.Int64))
        )
        jobs = pl.concat([jobs, cont.select(jobs.columns)])
    return assign_ids(jobs)
