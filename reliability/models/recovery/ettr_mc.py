"""Monte Carlo ETTR: many independent runs of one job's timeline, vectorised over runs.

The timeline (the same one :func:`reliability.models.recovery.expected_ettr` with ``variant="renewal"``
solves exactly for Poisson failures): the job waits ``initial_queue_h``, then computes in
segments of Δt, each followed by a blocking checkpoint write of w (none after the last segment);
work is committed when a write finishes. Interruptions arrive while the job runs (computing,
writing or restarting): exponential inter-arrival times at rate λ = N·r_f, or Weibull with the
same mean and a given shape (the clock restarts with each attempt, i.e. a renewal process). An
interruption loses the uncommitted work; the job waits q, spends u0 restarting, and continues.
ETTR = W / wall time.

Two estimands, by name (``estimand=``):

``"ratio_of_means"`` (default)
    ``E[productive] / E[wall] = W / mean(wall)``: what the closed forms compute (the renewal
    form is the expected productive time over the expected wall time, and the paper's
    ``E[ETTR] ≈ 1 − N r_f (u0 + Δt/2)`` is the expected fraction of wall time lost; Kokolis
    et al. HPCA'25 §V), and what a cluster's GPU-time-weighted ETTR measures. Compare it with
    :func:`reliability.models.recovery.expected_ettr`.
``"mean_of_ratios"``
    ``E[W / wall]``: the average run's ETTR (Jensen: above the ratio of means, noticeably so
    for short jobs, whose wall time varies most); compare it with a per-run average such as
    :attr:`reliability.models.recovery.RunETTR` ``ettr_by_run``.

Both are returned (:attr:`ETTRSimulation.ratio_of_means`, :attr:`ETTRSimulation.mean_of_ratios`
with standard errors); ``estimate``, ``stderr`` and ``ci`` are the chosen one's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import polars as pl
from scipy import stats

from reliability._result import Result
from reliability.models.recovery.ettr import interruption_rate_per_h

__all__ = ["ESTIMANDS", "ETTRSimulation", "simulate_ettr"]

#: the two ETTR estimands (see the module doc)
ESTIMANDS = ("ratio_of_means", "mean_of_ratios")


@dataclass
class ETTRSimulation(Result):
    """Per-run outcomes of :func:`simulate_ettr` and both estimands with standard errors.

    Attributes
    ----------
    ettr : numpy.ndarray
        Per-run ETTR (W / wall).
    wall_h : numpy.ndarray
        Per-run wall time [h].
    interruptions : numpy.ndarray
        Per-run interruption count.
    job_h : float
        Productive hours W every run needs.
    estimand : str
        The estimand ``estimate`` / ``stderr`` / ``ci`` refer to.
    alpha : float
        1 − confidence level of ``ci``.
    params : dict
        The simulation's parameters.
    """

    title = "Monte Carlo ETTR"
    ettr: np.ndarray
    wall_h: np.ndarray
    interruptions: np.ndarray
    job_h: float = 0.0
    estimand: str = "ratio_of_means"
    alpha: float = 0.05
    params: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def ratio_of_means(self) -> float:
        """``W / mean(wall)`` = E[productive] / E[wall] (the closed forms' estimand)."""
        return float(self.job_h / self.wall_h.mean())

    @property
    def ratio_of_means_stderr(self) -> float:
        """Delta-method standard error of :attr:`ratio_of_means`: ``R · sd(wall) / (√n · mean(wall))``."""
        n = len(self.wall_h)
        if n < 2:
            return 0.0
        return float(
            self.ratio_of_means * self.wall_h.std(ddof=1) / (math.sqrt(n) * self.wall_h.mean())
        )

    @property
    def mean_of_ratios(self) -> float:
        """``mean(W / wall)`` = E[ETTR of a run]."""
        return float(self.ettr.mean())

    @property
    def mean_of_ratios_stderr(self) -> float:
        """Standard error of :attr:`mean_of_ratios`."""
        n = len(self.ettr)
        return float(self.ettr.std(ddof=1) / math.sqrt(n)) if n > 1 else 0.0

    @property
    def estimate(self) -> float:
        """The chosen estimand's value."""
        return self.ratio_of_means if self.estimand == "ratio_of_means" else self.mean_of_ratios

    @property
    def mean(self) -> float:
        """Alias of :attr:`estimate` (the chosen estimand; the name predates the choice)."""
        return self.estimate

    @property
    def stderr(self) -> float:
        """Standard error of :attr:`estimate`."""
        return (
            self.ratio_of_means_stderr
            if self.estimand == "ratio_of_means"
            else self.mean_of_ratios_stderr
        )

    @property
    def ci(self) -> tuple[float, float]:
        """Normal interval of :attr:`estimate` at ``1 − alpha``."""
        z = float(stats.norm.ppf(1 - self.alpha / 2))
        return self.estimate - z * self.stderr, self.estimate + z * self.stderr

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the result: the number of simulated runs."""
        return {"runs": len(self.ettr)}

    @property
    def summary(self) -> pl.DataFrame:
        """One row: the estimate with its standard error, both estimands, ETTR quantiles, mean interruptions and wall time [h]."""
        q = np.quantile(self.ettr, [0.05, 0.5, 0.95])
        return pl.DataFrame(
            {
                "runs": [len(self.ettr)],
                "estimand": [self.estimand],
                "estimate": [self.estimate],
                "stderr": [self.stderr],
                "ratio_of_means": [self.ratio_of_means],
                "ratio_of_means_stderr": [self.ratio_of_means_stderr],
                "mean_of_ratios": [self.mean_of_ratios],
                "mean_of_ratios_stderr": [self.mean_of_ratios_stderr],
                "p05": [q[0]],
                "median": [q[1]],
                "p95": [q[2]],
                "mean_interruptions": [float(self.interruptions.mean())],
                "mean_wall_h": [float(self.wall_h.mean())],
            }
        )

    def _lines(self) -> list[str]:
        s = self.summary.row(0, named=True)
        lo, hi = self.ci
        pct = f"{100 * (1 - self.alpha):.0f}%"
        return [
            f"Monte Carlo ETTR over {s['runs']:,} runs, {self.estimand.replace('_', ' ')}: {s['estimate']:.4f} "
            f"({pct} CI {lo:.4f}-{hi:.4f})",
            f"ratio of means E[productive]/E[wall] {s['ratio_of_means']:.4f} (se {s['ratio_of_means_stderr']:.2g}; "
            f"the closed forms' estimand); mean of per-run ratios {s['mean_of_ratios']:.4f} "
            f"(se {s['mean_of_ratios_stderr']:.2g})",
            f"per run: median {s['median']:.4f}, 5-95% {s['p05']:.4f}-{s['p95']:.4f}; "
            f"{s['mean_interruptions']:.1f} interruptions and {s['mean_wall_h']:.1f} h wall time on average",
        ]

    @classmethod
    def _example(cls) -> ETTRSimulation:
        """Build a tiny instance: 200 simulated 24-h runs of a 64-GPU job (for contract tests)."""
        return simulate_ettr(64, 0.01, 1.0, 5 / 60, job_h=24.0, n_runs=200, seed=0)


def simulate_ettr(
    n_gpus: float,
    rate_per_node_day: float,
    ckpt_interval_h: float,
    restart_h: float,
    *,
    job_h: float,
    queue_h: float = 0.0,
    ckpt_write_h: float = 0.0,
    initial_queue_h: float = 0.0,
    gpus_per_node: int = 8,
    distribution: str = "exponential",
    weibull_shape: float = 1.0,
    n_runs: int = 10_000,
    seed: int = 0,
    max_interruptions: int = 1_000_000,
    estimand: str = "ratio_of_means",
    alpha: float = 0.05,
) -> ETTRSimulation:
    """Simulate ``n_runs`` runs of a job needing ``job_h`` productive hours (see module doc).

    The Monte Carlo check of the closed forms of :func:`reliability.models.recovery.ettr.expected_ettr`
    (Kokolis et al., HPCA '25, §V).

    Parameters
    ----------
    n_gpus : float
        Job size [GPUs].
    rate_per_node_day : float
        r_f [failures per node-day].
    ckpt_interval_h : float
        Δt, compute time between checkpoints [h], > 0.
    restart_h : float
        u0, restart overhead after each interruption [h].
    job_h : float
        W, productive hours the job needs [h], > 0.
    queue_h : float
        q, queue wait after each interruption [h].
    ckpt_write_h : float
        w, blocking checkpoint write time [h].
    initial_queue_h : float
        q0, wait before the first start [h].
    gpus_per_node : int
        GPUs per node.
    distribution : {"exponential", "weibull"}
        Time between interruptions: ``"exponential"`` (Poisson interruptions) or ``"weibull"``
        (shape ``weibull_shape``, scale set so the mean is 1/λ).
    weibull_shape : float
        Weibull shape k (< 1: infant mortality, > 1: wear-out); used only with
        ``distribution="weibull"``.
    n_runs : int
        Runs simulated, >= 1.
    seed : int
        Random seed (same seed, same result).
    max_interruptions : int
        Refuse (RuntimeError) when one run needs more interruptions than this.
    estimand : {"ratio_of_means", "mean_of_ratios"}
        ``"ratio_of_means"`` (default; the closed forms' quantity) or ``"mean_of_ratios"``.
    alpha : float
        1 − confidence level of ``ci``, in (0, 1).

    Returns
    -------
    ETTRSimulation
        Per-run ETTR, interruptions and wall time, and the estimate with its standard error.
    """
    if estimand not in ESTIMANDS:
        raise ValueError(f"estimand must be one of {ESTIMANDS}, got {estimand!r}")
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
        n_gpus=n_gpus,
        rate_per_node_day=rate_per_node_day,
        ckpt_interval_h=dt,
        restart_h=u0,
        job_h=job_h,
        queue_h=queue_h,
        ckpt_write_h=w,
        initial_queue_h=initial_queue_h,
        distribution=distribution,
        weibull_shape=weibull_shape,
        n_runs=n_runs,
        seed=seed,
    )
    return ETTRSimulation(
        ettr=job_h / wall,
        wall_h=wall,
        interruptions=hits,
        job_h=float(job_h),
        estimand=estimand,
        alpha=alpha,
        params=params,
    )
