"""Monte Carlo of the recovery strategies of :func:`reliability.models.recovery.compare_strategies`.

Each strategy's assumptions simulated event by event, vectorised over runs, with the
parameters a :class:`~reliability.models.recovery.StrategyComparison` used (its closed forms are in
:mod:`reliability.models.recovery.strategies`):

- ``checkpoint_restart``, ``hot_spares``, ``peer_checkpoint``: runs of ``n_segments``
  checkpoint segments (each Δt of compute and a write w). Interruptions arrive at rate λ while
  the job runs (computing, writing or restarting); one loses the uncommitted work, waits, then
  restarts (the restart is exposed to interruptions too). The estimate is the ratio of means
  ``n_segments Δt / mean(wall)`` (the closed forms' estimand, as in
  :func:`~reliability.models.recovery.simulate_ettr`), with its delta-method standard error.

  - hot spares: the waits come from a simulation of the spare pool: failures of the pool's
    nodes arrive as a Poisson process in wall-clock time, each node is in repair for R
    (deterministic or exponential with mean R); a failure waits q when s or more other nodes are
    in repair. The pool runs ``burn`` repair times before it is sampled (stationary), and each
    interruption of a job takes the outcome of a randomly drawn pool failure.
    :attr:`StrategySimulation.p_wait` is that pool's fraction of failures that wait (standard
    error over independent pools).
  - peer checkpoints: each interruption draws the failure times of the peers holding the copy;
    when all fall inside the window ``q + u0'`` the restart costs u0 (storage) instead of u0'.

- ``elastic``: every replica of every run alternates up (exponential, rate ρ) and down (H,
  deterministic or exponential), started in its stationary state, over ``horizon_h``; a run's
  ETTR is ``(1 − σ)(1 − down time / (D · horizon) − c · failures / horizon)``; the estimate is
  the mean over runs with its standard error.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import polars as pl

from reliability._result import Result
from reliability.models.recovery.strategies import STRATEGIES, StrategyComparison

__all__ = ["StrategySimulation", "simulate_strategy"]


@dataclass
class StrategySimulation(Result):
    """Monte Carlo estimate of one strategy's expected ETTR.

    Attributes
    ----------
    strategy : str
        The strategy simulated.
    estimate : float
        Expected ETTR (ratio of means; for elastic the mean over runs).
    stderr : float
        Its standard error.
    runs : int
        Runs simulated.
    p_wait : float or None
        Hot spares: fraction of the pool's failures that found no spare free.
    p_wait_stderr : float or None
        Its standard error (over independent pools).
    fallback_fraction : float or None
        Peer checkpoints: fraction of interruptions restored from storage.
    params : dict
        The simulation's settings.
    """

    title = "Monte Carlo of a recovery strategy"
    table_scales: ClassVar[dict[str, float]] = {"estimate": 1.0}
    strategy: str
    estimate: float
    stderr: float
    runs: int
    p_wait: float | None = None
    p_wait_stderr: float | None = None
    fallback_fraction: float | None = None
    params: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def summary(self) -> pl.DataFrame:
        """One row: strategy, estimate, stderr, runs and the strategy's own fractions."""
        return pl.DataFrame(
            {
                "strategy": [self.strategy],
                "estimate": [self.estimate],
                "stderr": [self.stderr],
                "runs": [self.runs],
                "p_wait": [self.p_wait],
                "p_wait_stderr": [self.p_wait_stderr],
                "fallback_fraction": [self.fallback_fraction],
            },
            schema={
                "strategy": pl.String,
                "estimate": pl.Float64,
                "stderr": pl.Float64,
                "runs": pl.Int64,
                "p_wait": pl.Float64,
                "p_wait_stderr": pl.Float64,
                "fallback_fraction": pl.Float64,
            },
        )

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the estimate: runs simulated."""
        return {"runs": self.runs}

    @classmethod
    def _example(cls) -> StrategySimulation:
        """Build a tiny instance: 200 runs of the hot-spares row of a comparison's example (for contract tests)."""
        c = StrategyComparison._example()
        return simulate_strategy(c, "hot_spares", n_runs=200, n_pools=10, pool_failures=50, seed=0)

    def _lines(self) -> list[str]:
        lines = [
            f"{self.strategy}: Monte Carlo ETTR {self.estimate:.4f} (se {self.stderr:.2g}) over {self.runs:,} runs"
        ]
        if self.p_wait is not None:
            lines.append(
                f"fraction of failures finding no spare: {self.p_wait:.4g} (se {self.p_wait_stderr:.2g})"
            )
        if self.fallback_fraction is not None:
            lines.append(f"interruptions restored from storage: {self.fallback_fraction:.4g}")
        return lines


def _timeline(
    rng: np.random.Generator,
    lam: float,
    dt: float,
    w: float,
    n_seg: int,
    n_runs: int,
    wait: Callable[[int], np.ndarray],
    restart: Callable[[int], np.ndarray],
) -> tuple[np.ndarray, int]:
    """Return each run's wall time [h] to commit ``n_seg`` segments, and the interruptions (module doc)."""
    seg = dt + w
    done_seg = np.zeros(n_runs)
    wall = np.zeros(n_runs)
    u = np.zeros(n_runs)  # restart cost ahead of each run (0 before its first interruption)
    active = np.arange(n_runs)
    hits = 0
    while active.size:
        need = u[active] + (n_seg - done_seg[active]) * seg
        f = rng.exponential(1.0 / lam, active.size)
        ok = f >= need
        wall[active[ok]] += need[ok]
        idx, ff = active[~ok], f[~ok]
        hits += idx.size
        wall[idx] += ff + wait(idx.size)
        done_seg[idx] += np.floor(np.maximum(ff - u[idx], 0.0) / seg)
        u[idx] = restart(idx.size)
        active = idx
    return wall, hits


def _ratio(n_seg: int, dt: float, wall: np.ndarray) -> tuple[float, float]:
    est = n_seg * dt / wall.mean()
    se = est * wall.std(ddof=1) / (math.sqrt(wall.size) * wall.mean())
    return float(est), float(se)


def _pool_waits(
    rng: np.random.Generator,
    rate: float,
    repair_h: float,
    spares: int,
    distribution: str,
    n_pools: int,
    per_pool: int,
    burn: float,
) -> tuple[np.ndarray, float, float]:
    """Simulate ``n_pools`` spare pools; return the wait indicators of the sampled failures.

    Returns the indicators (1: no spare free), their mean and its standard error over pools.
    """
    burn_n = math.ceil(rate * burn * repair_h * 1.2) + 10
    k = burn_n + per_pool
    t = np.cumsum(rng.exponential(1.0 / rate, (n_pools, k)), axis=1)
    r = (
        np.full((n_pools, k), repair_h)
        if distribution == "deterministic"
        else rng.exponential(repair_h, (n_pools, k))
    )
    ends = t + r
    span = float(ends.max()) + 1.0
    off = (np.arange(n_pools) * span)[:, None]
    te, ee = (t + off).ravel(), np.sort((ends + off).ravel())
    # in repair at arrival i (others): earlier arrivals whose repair has not ended; an end
    # <= t_i belongs to an earlier arrival of the same pool (ends of other pools are offset)
    finished = np.searchsorted(ee, te, side="right") - (np.arange(n_pools) * k).repeat(k)
    in_repair = np.tile(np.arange(k), n_pools) - finished
    waits = (in_repair >= spares).reshape(n_pools, k)
    keep = t > burn * repair_h
    w = np.where(keep, waits, False)
    n = keep.sum(axis=1)
    if (n == 0).any():
        raise RuntimeError("a simulated pool has no failures after its burn-in: raise per_pool")
    total = w.sum() / n.sum()
    # ratio estimator over pools: se from the per-pool residuals
    resid = w.sum(axis=1) - total * n
    se = math.sqrt(float(np.sum(resid**2)) / (n_pools * (n_pools - 1))) / n.mean()
    return waits[keep].astype(float), float(total), float(se)


def simulate_strategy(
    comparison: StrategyComparison,
    strategy: str,
    *,
    n_runs: int | None = None,
    n_segments: int = 20,
    horizon_h: float | None = None,
    repair_distribution: str = "exponential",
    n_pools: int = 400,
    pool_failures: int = 500,
    seed: int = 0,
) -> StrategySimulation:
    """Simulate one strategy of a comparison with the parameters it used (see module doc).

    The Monte Carlo check of :func:`reliability.models.recovery.compare_strategies` (Kokolis et al.,
    HPCA '25, §V, ETTR model; Daly, FGCS 2006, §3, the renewal argument it checks).

    Parameters
    ----------
    comparison : StrategyComparison
        The comparison whose row to simulate.
    strategy : str
        One of :data:`~reliability.models.recovery.strategies.STRATEGIES`.
    n_runs : int or None
        Runs (jobs) simulated, >= 2; None: 20,000, or for elastic as many as keep
        runs × replicas under two million.
    n_segments : int
        Checkpoint segments per run (checkpointing strategies), >= 1.
    horizon_h : float or None
        Elastic: hours each run lasts (default 20 mean replica cycles).
    repair_distribution : {"exponential", "deterministic"}
        Distribution of node repair (hot spares) and replica heal (elastic) times, both with the
        comparison's mean.
    n_pools : int
        Hot spares: independent spare pools simulated, >= 2.
    pool_failures : int
        Hot spares: failures sampled per pool after its burn-in.
    seed : int
        Random seed (same seed, same result).

    Returns
    -------
    StrategySimulation
        The estimate with its standard error (and the pool's wait fraction or the fallback
        fraction).
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    if repair_distribution not in ("exponential", "deterministic"):
        raise ValueError(
            f"repair_distribution must be 'exponential' or 'deterministic', got {repair_distribution!r}"
        )
    row = comparison.row(strategy)
    if n_runs is None:
        n_runs = (
            20_000
            if strategy != "elastic"
            else max(2, min(20_000, int(2e6 // max(row["replicas"], 1.0))))
        )
    if n_runs < 2 or n_segments < 1:
        raise ValueError("n_runs must be >= 2 and n_segments >= 1")
    rng = np.random.default_rng(seed)
    p = comparison.params
    lam = p["lam_per_h"]
    settings = dict(
        strategy=strategy, n_runs=n_runs, seed=seed, repair_distribution=repair_distribution
    )
    if strategy == "elastic":
        return _elastic(rng, row, p, n_runs, horizon_h, repair_distribution, settings)
    dt, w, q, u0 = row["ckpt_interval_h"], row["ckpt_write_h"], row["queue_h"], row["restart_h"]
    p_wait = p_se = fb = None
    if strategy == "checkpoint_restart":
        wall, hits = _timeline(
            rng, lam, dt, w, n_segments, n_runs, lambda n: np.full(n, q), lambda n: np.full(n, u0)
        )
    elif strategy == "hot_spares":
        waits, p_wait, p_se = _pool_waits(
            rng,
            p["pool_rate_per_h"],
            row["repair_h"],
            row["spare_nodes"],
            repair_distribution,
            n_pools,
            pool_failures,
            burn=10.0 if repair_distribution == "exponential" else 1.0,
        )
        wall, hits = _timeline(
            rng,
            lam,
            dt,
            w,
            n_segments,
            n_runs,
            lambda n: q * waits[rng.integers(0, waits.size, n)],
            lambda n: np.full(n, u0),
        )
    else:  # peer_checkpoint
        u_store = comparison.row("checkpoint_restart")["restart_h"]
        copies, window, node_rate = p["peer_copies"], p["peer_window_h"], p["node_rate_per_h"]
        drawn = [0, 0]

        def restart(n: int) -> np.ndarray:
            lost = (rng.exponential(1.0 / node_rate, (n, copies)) < window).all(axis=1)
            drawn[0] += n
            drawn[1] += int(lost.sum())
            return np.where(lost, u_store, u0)

        wall, hits = _timeline(
            rng, lam, dt, w, n_segments, n_runs, lambda n: np.full(n, q), restart
        )
        fb = drawn[1] / drawn[0] if drawn[0] else 0.0
    est, se = _ratio(n_segments, dt, wall)
    return StrategySimulation(
        strategy=strategy,
        estimate=est,
        stderr=se,
        runs=n_runs,
        p_wait=p_wait,
        p_wait_stderr=p_se,
        fallback_fraction=fb,
        params={**settings, "n_segments": n_segments, "interruptions": hits},
    )


def _elastic(
    rng: np.random.Generator,
    row: dict,
    p: dict,
    n_runs: int,
    horizon_h: float | None,
    dist: str,
    settings: dict,
) -> StrategySimulation:
    d = round(row["replicas"])
    if abs(d - row["replicas"]) > 1e-9:
        raise ValueError(
            f"elastic simulation needs a whole number of replicas, got {row['replicas']:g}"
        )
    rho, heal, c = p["replica_rate_per_h"], row["heal_h"], row["reconfig_h"]
    horizon = horizon_h if horizon_h is not None else 20.0 * (1.0 / rho + heal)
    m = n_runs * d

    def draw_heal(n: int) -> np.ndarray:
        return np.full(n, heal) if dist == "deterministic" else rng.exponential(heal, n)

    # stationary start: down with probability ρH / (1 + ρH), with the residual of its heal
    down0 = rng.random(m) < rho * heal / (1.0 + rho * heal)
    resid = rng.uniform(0.0, heal, m) if dist == "deterministic" else rng.exponential(heal, m)
    t = np.where(down0, resid, 0.0)
    down_h = np.minimum(t, horizon)
    fails = np.zeros(m)
    active = np.flatnonzero(t < horizon)
    while active.size:
        up = rng.exponential(1.0 / rho, active.size)
        at = t[active] + up
        hit = at < horizon
        idx = active[hit]
        fails[idx] += 1
        h = draw_heal(idx.size)
        down_h[idx] += np.minimum(at[hit] + h, horizon) - at[hit]
        t[idx] = at[hit] + h
        active = idx[t[idx] < horizon]
    down_run = down_h.reshape(n_runs, d).sum(axis=1)
    fails_run = fails.reshape(n_runs, d).sum(axis=1)
    ettr = (1.0 - p["elastic_slowdown"]) * (
        1.0 - down_run / (d * horizon) - c * fails_run / horizon
    )
    return StrategySimulation(
        strategy="elastic",
        estimate=float(ettr.mean()),
        stderr=float(ettr.std(ddof=1) / math.sqrt(n_runs)),
        runs=n_runs,
        params={**settings, "horizon_h": horizon, "replicas": d},
    )
