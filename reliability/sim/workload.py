"""The job stream of the GPU-cluster simulator, drawn up front with numpy (no per-job loop).

Each job gets: submit time, GPUs, work [s], QOS / priority, user, array membership, time
limit, and its planned user-side outcome (completes, fails from user code, is cancelled, runs
out of memory, or exceeds its time limit) with the fraction of the work at which it happens.
The arrival rate is set so that the offered load equals ``target_utilization`` of the cluster
(Kokolis et al. HPCA'25: 83-85%).
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy import stats

from reliability.sim.config import ClusterConfig

__all__ = ["OUTCOMES", "PRIORITY", "expected_gpu_seconds", "generate_workload"]

#: Planned user-side outcomes, in the order of the ``outcome`` codes.
OUTCOMES = ("COMPLETED", "FAILED", "CANCELLED", "OUT_OF_MEMORY", "TIMEOUT")
#: Slurm priority per QOS.
PRIORITY = {"high": 30000, "normal": 20000, "low": 10000}


def _size_mix(cfg: ClusterConfig) -> tuple[np.ndarray, np.ndarray]:
    cap = min(cfg.workload.max_job_gpus, cfg.n_nodes * cfg.gpus_per_node)
    items = sorted((g, p) for g, p in cfg.workload.size_mix.items() if g <= cap)
    sizes = np.array([g for g, _ in items], dtype=np.int64)
    p = np.array([p for _, p in items], dtype=float)
    return sizes, p / p.sum()


def expected_gpu_seconds(cfg: ClusterConfig) -> float:
    """E[GPUs x work] per job [GPU-s], with work ~ LogNormal capped at the maximum lifetime."""
    w = cfg.workload
    sizes, p = _size_mix(cfg)
    mu = np.log(w.median_h * 3600.0 * sizes**w.size_exponent)
    cap = w.max_lifetime_h * 3600.0
    s = w.sigma
    # E[min(X, c)] for X ~ LogNormal(mu, s)
    capped = np.exp(mu + s * s / 2) * stats.norm.cdf(
        (np.log(cap) - mu - s * s) / s
    ) + cap * stats.norm.sf((np.log(cap) - mu) / s)
    return float((p * sizes * capped).sum())


def generate_workload(cfg: ClusterConfig, rng: np.random.Generator) -> pl.DataFrame:
    """Draw every job of the run.

    Returns a frame, one row per job in submit order: ``job`` (index), ``job_id`` (as sacct
    prints it: ``1234`` or ``1200_7`` for array tasks), ``submit_s``, ``gpus``, ``n_nodes``,
    ``work_s``, ``qos``, ``priority``, ``user``, ``time_limit_s``, ``outcome`` (see
    :data:`OUTCOMES`), ``outcome_at`` (fraction of the work at which a non-completing outcome
    happens), ``training`` (checkpointing multi-node run).
    """
    w = cfg.workload
    horizon = cfg.horizon_s
    capacity = cfg.n_nodes * cfg.gpus_per_node * horizon
    mean_jobs = w.target_utilization * capacity / expected_gpu_seconds(cfg)
    n = int(rng.poisson(mean_jobs))
    submit = np.sort(rng.uniform(0.0, horizon, size=n))
    sizes, p = _size_mix(cfg)
    gpus = rng.choice(sizes, size=n, p=p)
    gpn = cfg.gpus_per_node
    n_nodes = np.where(gpus >= gpn, gpus // gpn, 1)
    cap = w.max_lifetime_h * 3600.0
    work = np.minimum(
        rng.lognormal(np.log(w.median_h * 3600.0 * gpus**w.size_exponent), w.sigma), cap
    )
    work = np.maximum(np.round(work), 30.0)
    qos_names = list(w.qos_mix)
    qos_p = np.array([w.qos_mix[q] for q in qos_names])
    qos = np.array(qos_names)[rng.choice(len(qos_names), size=n, p=qos_p / qos_p.sum())]
    u = rng.random(n)
    edges = np.cumsum([w.p_user_fail, w.p_cancel, w.p_oom, w.p_timeout])
    outcome = np.searchsorted(edges, u, side="right")  # 0 fail .. 3 timeout, 4 = complete
    outcome = np.where(outcome == 4, 0, outcome + 1)  # -> index into OUTCOMES
    outcome_at = rng.uniform(0.02, 0.98, size=n)
    # time limits: generous multiples of the work, rounded up to 10 minutes, within the max
    # lifetime; a TIMEOUT job asked for less than its work
    limit = np.minimum(np.ceil(work * rng.uniform(1.3, 3.0, size=n) / 600.0) * 600.0, cap)
    timeout = outcome == OUTCOMES.index("TIMEOUT")
    limit = np.where(timeout, np.maximum(np.floor(work * outcome_at / 60.0) * 60.0, 60.0), limit)
    limit = np.maximum(limit, np.where(timeout, 60.0, np.ceil(work / 60.0) * 60.0))
    user = rng.integers(0, w.n_users, size=n)
    # job arrays: runs of consecutive small jobs of one user share a base id
    ids = np.arange(1000, 1000 + n, dtype=np.int64)
    in_array = (gpus < gpn) & (rng.random(n) < w.array_fraction)
    frame = pl.DataFrame(
        {
            "job": np.arange(n, dtype=np.int64),
            "raw_id": ids,
            "submit_s": submit,
            "gpus": gpus.astype(np.int64),
            "n_nodes": n_nodes.astype(np.int64),
            "work_s": work,
            "qos": qos,
            "user": user.astype(np.int64),
            "time_limit_s": limit,
            "outcome": np.array(OUTCOMES)[outcome],
            "outcome_at": outcome_at,
            "in_array": in_array,
        }
    )
    # an array = a run of array jobs between two non-array jobs: base id of its first task
    frame = frame.with_columns(
        grp=(~pl.col("in_array")).cum_sum(),
    ).with_columns(
        base=pl.col("raw_id").min().over("grp", "in_array"),
        task=pl.int_range(pl.len()).over("grp", "in_array"),
    )
    frame = frame.with_columns(
        job_id=pl.when(pl.col("in_array"))
        .then(pl.format("{}_{}", "base", "task"))
        .otherwise(pl.col("raw_id").cast(pl.String)),
        priority=pl.col("qos").replace_strict(PRIORITY, return_dtype=pl.Int64),
        training=pl.col("gpus") >= w.training_min_gpus,
    )
    return frame.select(
        "job", "job_id", "raw_id", "submit_s", "gpus", "n_nodes", "work_s", "qos", "priority",
        "user", "time_limit_s", "outcome", "outcome_at", "training",
    )  # fmt: skip
