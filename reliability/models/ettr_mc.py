"""Monte Carlo ETTR: many independent runs of one job's timeline, vectorised over runs.

The timeline (the same one :func:`reliability.models.expected_ettr` with ``variant="renewal"``
solves exactly for Poisson failures): the job waits ``initial_queue_h``, then computes in
segments of Δt, each followed by a blocking checkpoint write of w (none after the last segment);
work is committed when a write finishes. Interruptions arrive while the job runs (computing,
writing or restarting): exponential inter-arrival times at rate λ = N·r_f, or Weibull with the
same mean and a given shape (the clock restarts with each attempt, i.e. a renewal process). An
interruption loses the uncommitted work; the job waits q, spends u0 restarting, and continues.
ETTR = W / wall time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from reliability.models.ettr import interruption_rate_per_h

__all__ = ["ETTRSimulation", "simulate_ettr"]


@dataclass
class ETTRSimulation:
    """Per-run outcomes of :func:`simulate_ettr` and their summary."""

    ettr: np.ndarray
    wall_h: np.ndarray
    interruptions: np.ndarray
    params: dict = field(default_factory=dict)

    @property
    def mean(self) -> float:
        return float(self.ettr.mean())

    @property
    def stderr(self) -> float:
        """Standard error of :attr:`mean`."""
        return (
            float(self.ettr.std(ddof=1) / math.sqrt(len(self.ettr))) if len(self.ettr) > 1 else 0.0
        )

    @property
    def ci(self) -> tuple[float, float]:
        """Normal 95% interval for the mean ETTR."""
        return self.mean - 1.96 * self.stderr, self.mean + 1.96 * self.stderr

    @property
    def summary(self) -> pl.DataFrame:
        q = np.quantile(self.ettr, [0.05, 0.5, 0.95])
        return pl.DataFrame({
            "runs": [len(self.ettr)], "mean_ettr": [self.mean], "stderr": [self.stderr],
            "p05": [q[0]], "median": [q[1]], "p95": [q[2]],
            "mean_interruptions": [float(self.interruptions.mean())],
            "mean_wall_h": [float(self.wall_h.mean())],
        })  # fmt: skip

    def __str__(self) -> str:
        s = self.summary.row(0, named=True)
        lo, hi = self.ci
        return (
            f"Monte Carlo ETTR over {s['runs']:,} runs: mean {s['mean_ettr']:.4f} (95% CI {lo:.4f}-{hi:.4f}), "
            f"median {s['median']:.4f}, 5-95% {s['p05']:.4f}-{s['p95']:.4f}; "
            f"{s['mean_interruptions']:.1f} interruptions and {s['mean_wall_h']:.1f} h wall time per run"
        )

    def _repr_html_(self) -> str:
        return "<pre>" + str(self).replace("&", "&amp;").replace("<", "&lt;") + "</pre>"


def simulate_ettr(
    n_gpus: float,
    rate_per_node_day: float,
    ckpt_interval_h: float,
    restart_h: float,
    job_h: float,
    *,
    queue_h: float = 0.0,
    ckpt_write_h: float = 0.0,
    initial_queue_h: float = 0.0,
    gpus_per_node: int = 8,
    distribution: str = "exponential",
    weibull_shape: float = 1.0,
    n_runs: int = 10_000,
    seed: int = 0,
    max_interruptions: int = 1_000_000,
) -> ETTRSimulation:
    """Simulate ``n_runs`` runs of a job needing ``job_h`` productive hours (see module doc).

    ``distribution``: ``"exponential"`` (Poisson interruptions) or ``"weibull"`` (shape
    ``weibull_shape``, scale set so the mean is 1/λ). Same seed, same result.
    """
    if distribution not in ("exponential", "weibull"):
        raise ValueError(f"distribution must be 'exponential' or 'weibull', got {distribution!r}")
    if ckpt_interval_h <= 0 or job_h <= 0 or n_runs < 1:
        raise ValueError("ckpt_interval_h and job_h must be positive and n_runs >= 1")
    lam = float(interruption_rate_per_h(n_gpus, rate_per_node_day, gpus_per_node))
    rng = np.random.default_rng(seed)
    if distribution == "weibull":
        scale = 1.0 / (lam * math.gamma(1.0 + 1.0 / weibull_shape)) if lam > 0 else np.inf

        def draw(n: int) -> np.ndarray:
            return scale * rng.weibull(weibull_shape, n)
    else:

        def draw(n: int) -> np.ndarray:
            return rng.exponential(1.0 / lam, n) if lam > 0 else np.full(n, np.inf)

    dt, w, u0 = float(ckpt_interval_h), float(ckpt_write_h), float(restart_h)
    committed = np.zeros(n_runs)
    wall = np.full(n_runs, float(initial_queue_h))
    hits = np.zeros(n_runs, dtype=np.int64)
    active = np.arange(n_runs)
    restarting = np.zeros(n_runs, dtype=bool)
    while active.size:
        if hits.max() > max_interruptions:
            raise RuntimeError(
                f"more than {max_interruptions} interruptions in one run: the job cannot finish "
                "(the interval between failures is shorter than a checkpoint segment)"
            )
        left = job_h - committed[active]
        n_seg = np.maximum(np.ceil(left / dt - 1e-9), 1.0)
        u = np.where(restarting[active], u0, 0.0)
        need = u + left + (n_seg - 1.0) * w
        f = draw(active.size)
        done = f >= need
        wall[active[done]] += need[done]
        fail = ~done
        idx = active[fail]
        wall[idx] += f[fail] + queue_h
        cycles = np.floor(np.maximum(f[fail] - u[fail], 0.0) / (dt + w))
        committed[idx] = np.minimum(committed[idx] + cycles * dt, job_h)
        hits[idx] += 1
        restarting[idx] = True
        active = idx
    params = dict(
        n_gpus=n_gpus, rate_per_node_day=rate_per_node_day, ckpt_interval_h=dt, restart_h=u0,
        job_h=job_h, queue_h=queue_h, ckpt_write_h=w, initial_queue_h=initial_queue_h,
        distribution=distribution, weibull_shape=weibull_shape, n_runs=n_runs, seed=seed,
    )  # fmt: skip
    return ETTRSimulation(ettr=job_h / wall, wall_h=wall, interruptions=hits, params=params)
