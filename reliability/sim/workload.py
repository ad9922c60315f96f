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

__all__ = ["OUTCOMES", "PRIORITY", "assign_ids", "expected_gpu_seconds", "generate_workload"]

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


def _work_cap_s(cfg: ClusterConfig, sizes: np.ndarray) -> np.ndarray:
    """Return the longest work of a job of each size [s].

    One job's lifetime, or a training run's ``max_run_days`` (it continues over several jobs).
    """
    w = cfg.workload
    training = sizes >= w.training_min_gpus
    return np.where(
        training,
        max(w.max_run_days * 86400.0, w.max_lifetime_h * 3600.0),
        w.max_lifetime_h * 3600.0,
    )


def _sigma(cfg: ClusterConfig, sizes: np.ndarray) -> np.ndarray:
    w = cfg.workload
    return np.where(sizes >= w.training_min_gpus, w.training_sigma, w.sigma)


def _log_median_s(cfg: ClusterConfig, sizes: np.ndarray) -> np.ndarray:
    """Return the log of the median work [s] of a job of each size.

    ``median_h * gpus**size_exponent`` below ``training_min_gpus``, ``training_median_h *
    (gpus / training_min_gpus) ** training_size_exponent`` from there on.
    """
    w = cfg.workload
    sizes = np.asarray(sizes, dtype=float)
    small = np.log(w.median_h * 3600.0) + w.size_exponent * np.log(sizes)
    big = np.log(w.training_median_h * 3600.0) + w.training_size_exponent * np.log(
        sizes / w.training_min_gpus
    )
    return np.where(sizes >= w.training_min_gpus, big, small)


def expected_gpu_seconds(cfg: ClusterConfig) -> float:
    """Return the expected GPUs x work done per job [GPU-s], over the size mix.

    Work ~ LogNormal capped at the longest work of its size (``E[min(X, c)]`` in closed form),
    of which a job that ends early (fails, is cancelled, runs out of memory or time) does half
    on average. :func:`generate_workload` divides the cluster's capacity by it to set the
    arrival rate.

    Parameters
    ----------
    cfg : ClusterConfig
        The run's configuration (its workload, and the cluster size that caps the job sizes).

    Returns
    -------
    float
        Expected GPU-seconds of work per job [GPU-s].
    """
    w = cfg.workload
    sizes, p = _size_mix(cfg)
    mu = _log_median_s(cfg, sizes)
    cap = _work_cap_s(cfg, sizes)
    s = _sigma(cfg, sizes)
    # E[min(X, c)] for X ~ LogNormal(mu, s)
    capped = np.exp(mu + s * s / 2) * stats.norm.cdf(
        (np.log(cap) - mu - s * s) / s
    ) + cap * stats.norm.sf((np.log(cap) - mu) / s)
    # jobs that fail, are cancelled, run out of memory or time out stop at a uniform point of
    # their work (mean: half way), so they offer only about half of it
    early = w.p_user_fail + w.p_cancel + w.p_oom + w.p_timeout
    return float((p * sizes * capped).sum() * (1.0 - 0.5 * early))


def _draw_qos(mix: dict[str, float], n: int, rng: np.random.Generator) -> np.ndarray:
    names = list(mix)
    p = np.array([mix[q] for q in names], dtype=float)
    unknown = sorted(set(names) - set(PRIORITY))
    if unknown:
        raise ValueError(f"[workload] unknown QOS {unknown[0]!r}; known: {sorted(PRIORITY)}")
    return np.array(names)[rng.choice(len(names), size=n, p=p / p.sum())]


def generate_workload(cfg: ClusterConfig, rng: np.random.Generator) -> pl.DataFrame:
    """Draw every job of the run.

    The number of jobs is Poisson with the mean that makes the offered load
    ``target_utilization`` of the cluster (:func:`expected_gpu_seconds`); submit times are
    uniform over the run. Job ids are given after the run, when the continuation jobs of long
    training runs are known (:func:`assign_ids`).

    Parameters
    ----------
    cfg : ClusterConfig
        The run's configuration (its workload section and the cluster size).
    rng : numpy.random.Generator
        Source of randomness (the run's seed determines every draw).

    Returns
    -------
    polars.DataFrame
        One row per job in submit order: ``job`` (index), ``submit_s`` [s since the start],
        ``gpus``, ``n_nodes``, ``work_s`` [s], ``qos``, ``priority``, ``user``,
        ``time_limit_s`` [s], ``outcome`` (see :data:`OUTCOMES`), ``outcome_at`` (fraction of
        the work at which a non-completing outcome happens), ``training`` (checkpointing
        multi-node run), ``requeue_kind`` (0 none, 1 the job asks to be requeued once through
        RequeueExit, 2 an admin requeues it once), ``requeue_at`` (fraction of the attempt at
        which that happens), ``in_array``.

    Raises
    ------
    ValueError
        If ``qos_mix`` or ``training_qos_mix`` names a QOS not in :data:`PRIORITY`.
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
    lifetime = w.max_lifetime_h * 3600.0
    work = np.minimum(
        rng.lognormal(_log_median_s(cfg, gpus), _sigma(cfg, gpus)),
        _work_cap_s(cfg, gpus),
    )
    work = np.maximum(np.round(work), 30.0)
    training = gpus >= w.training_min_gpus
    qos = _draw_qos(w.qos_mix, n, rng)
    if w.training_qos_mix is not None:
        qos = np.where(training, _draw_qos(w.training_qos_mix, n, rng), qos)
    u = rng.random(n)
    edges = np.cumsum([w.p_user_fail, w.p_cancel, w.p_oom, w.p_timeout])
    outcome = np.searchsorted(edges, u, side="right")  # 0 fail .. 3 timeout, 4 = complete
    outcome = np.where(outcome == 4, 0, outcome + 1)  # -> index into OUTCOMES
    outcome_at = rng.uniform(0.02, 0.98, size=n)
    # time limits: generous multiples of the work, rounded up to 10 minutes, within the max
    # lifetime (a training run longer than that asks for the lifetime and resubmits); a
    # TIMEOUT job asked for less than its work
    limit = np.minimum(np.ceil(work * rng.uniform(1.3, 3.0, size=n) / 600.0) * 600.0, lifetime)
    timeout = outcome == OUTCOMES.index("TIMEOUT")
    limit = np.where(timeout, np.maximum(np.floor(work * outcome_at / 60.0) * 60.0, 60.0), limit)
    limit = np.maximum(
        limit, np.where(timeout, 60.0, np.minimum(np.ceil(work / 60.0) * 60.0, lifetime))
    )
    user = rng.integers(0, w.n_users, size=n)
    in_array = (gpus < gpn) & (rng.random(n) < w.array_fraction)
    r = rng.random(n)
    requeue_kind = np.where(
        r < w.p_app_requeue, 1, np.where(r < w.p_app_requeue + w.p_admin_requeue, 2, 0)
    )
    requeue_at = rng.uniform(0.05, 0.95, size=n)
    return pl.DataFrame(
        {
            "job": np.arange(n, dtype=np.int64),
            "submit_s": submit,
            "gpus": gpus.astype(np.int64),
            "n_nodes": n_nodes.astype(np.int64),
            "work_s": work,
            "qos": qos,
            "priority": pl.Series(qos).replace_strict(PRIORITY, return_dtype=pl.Int64),
            "user": user.astype(np.int64),
            "time_limit_s": limit,
            "outcome": np.array(OUTCOMES)[outcome],
            "outcome_at": outcome_at,
            "training": training,
            "requeue_kind": requeue_kind.astype(np.int64),
            "requeue_at": requeue_at,
            "in_array": in_array,
        }
    )


def assign_ids(jobs: pl.DataFrame) -> pl.DataFrame:
    """Give Slurm job ids in submit order and job names, once every job of the run is known.

    Parameters
    ----------
    jobs : polars.DataFrame
        The drawn jobs and the continuations of long training runs (with ``run``: the index
        of the run's first job), as :func:`generate_workload` columns.

    Returns
    -------
    polars.DataFrame
        ``jobs`` sorted by ``job``, plus ``raw_id`` (1000, 1001, ... by submit time),
        ``job_id`` as sacct prints it (``1234``, or ``1200_7`` for array tasks: runs of
        consecutive small jobs share the base id of their first task) and ``name`` (a
        training run's jobs share one name).
    """
    frame = jobs.sort("submit_s", "job", maintain_order=True).with_columns(
        raw_id=pl.int_range(1000, 1000 + pl.len(), dtype=pl.Int64)
    )
    # an array = a run of array jobs between two non-array jobs: base id of its first task
    frame = frame.with_columns(
        grp=(~pl.col("in_array")).cum_sum(),
    ).with_columns(
        base=pl.col("raw_id").min().over("grp", "in_array"),
        task=pl.int_range(pl.len()).over("grp", "in_array"),
    )
    root = frame.select("job", root_id=pl.col("raw_id"))
    frame = frame.join(root.rename({"job": "run"}), on="run", how="left", maintain_order="left")
    frame = frame.with_columns(
        job_id=pl.when(pl.col("in_array"))
        .then(pl.format("{}_{}", "base", "task"))
        .otherwise(pl.col("raw_id").cast(pl.String)),
        name=pl.when(pl.col("training"))
        .then(pl.format("train_{}", "root_id"))
        .otherwise(pl.format("job_{}", pl.col("raw_id") % 997)),
    )
    return frame.drop("grp", "base", "task", "root_id").sort("job")
