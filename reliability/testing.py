"""Synthetic inputs with known content, for tests, benchmarks and demos.

:func:`synthetic_sacct` writes a realistic ``sacct --parsable2 --duplicates`` export of a GPU
cluster (allocations, ``.batch`` / ``.extern`` / ``.0`` steps, job arrays, compressed
hostlists, GPU TRES, the job-state mix of Kokolis et al. HPCA'25 Table II) fully vectorised,
so millions of rows take seconds. It is a format generator, not the cluster simulator: jobs
do not compete for nodes.

:func:`all_results` lists every concrete result class of the package (every
:class:`~reliability._result.Result` subclass, found after importing every module), so that a
contract test covers a new result without being told about it: the pattern of
scikit-survival's ``all_survival_estimators``. Each result class builds a tiny instance of itself
with ``_example()``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl

__all__ = ["SACCT_FIELDS", "all_results", "import_all_modules", "synthetic_sacct"]

#: Fields written by :func:`synthetic_sacct` (what an operator would export).
SACCT_FIELDS = (
    "JobID", "JobIDRaw", "JobName", "User", "Account", "Partition", "QOS", "State", "ExitCode",
    "Submit", "Start", "End", "Elapsed", "Timelimit", "NNodes", "AllocTRES", "NodeList",
    "Priority", "Cluster",
)  # fmt: skip

# Kokolis et al. HPCA'25, RSC-1 final job states (DESIGN.md §5); the rest are CANCELLED.
_STATES = (
    "COMPLETED",
    "FAILED",
    "PREEMPTED",
    "REQUEUED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "CANCELLED",
)
_STATE_P = (0.60, 0.24, 0.10, 0.02, 0.006, 0.001, 0.001)


def _hms(seconds: pl.Expr) -> pl.Expr:
    d = seconds // 86400
    rem = seconds % 86400
    hh = (rem // 3600).cast(pl.String).str.zfill(2)
    mm = ((rem % 3600) // 60).cast(pl.String).str.zfill(2)
    ss = (rem % 60).cast(pl.String).str.zfill(2)
    base = pl.concat_str([hh, mm, ss], separator=":")
    return (
        pl.when(d > 0).then(pl.concat_str([d.cast(pl.String), pl.lit("-"), base])).otherwise(base)
    )


def synthetic_sacct(
    path: str | Path,
    n_jobs: int,
    *,
    seed: int,
    n_nodes: int = 2000,
    gpus_per_node: int = 8,
    cluster: str = "synth",
    start: datetime = datetime(2025, 1, 1, tzinfo=UTC),
    days: float = 330.0,
    times: str = "iso",
) -> pl.DataFrame:
    """Write a synthetic sacct export of ``n_jobs`` allocation records to ``path``.

    Parameters
    ----------
    path : str or Path
        File to write (its folder is created).
    n_jobs : int
        Allocation records, >= 1 (steps come on top: ``.batch`` and ``.extern`` for each
        started job, ``.0`` for about a third).
    seed : int
        Random seed (same seed, same file).
    n_nodes, gpus_per_node : int
        Cluster shape [nodes], [GPUs per node]; job sizes that do not fit are not drawn.
    cluster : str
        The ``Cluster`` field.
    start : datetime
        Start of the accounting window (time-zone aware; times are printed in UTC without a
        zone, as sacct does).
    days : float
        Length of the window [days].
    times : {"iso", "epoch"}
        How times are printed: sacct's default ISO text, or epoch seconds
        (``SLURM_TIME_FORMAT=%s``, the export the documentation recommends).

    Returns
    -------
    polars.DataFrame
        The allocation records (``job_id``, ``state``, ``n_nodes``, ``gpus``, ``submit_s``,
        ``start_s``, ``end_s`` [epoch s], ``array_task``) so that tests can compare a reader's
        output with the truth.
    """
    if int(n_jobs) != n_jobs or n_jobs < 1:
        raise ValueError(f"n_jobs must be a whole number >= 1, got {n_jobs!r}")
    if (
        int(n_nodes) != n_nodes
        or n_nodes < 1
        or int(gpus_per_node) != gpus_per_node
        or gpus_per_node < 1
    ):
        raise ValueError(
            f"n_nodes and gpus_per_node must be whole numbers >= 1, got {n_nodes!r}, {gpus_per_node!r}"
        )
    if not days > 0:
        raise ValueError(f"days must be positive, got {days!r}")
    if times not in ("iso", "epoch"):
        raise ValueError(f"times must be 'iso' or 'epoch', got {times!r}")
    if start.tzinfo is None:
        raise ValueError("start must be time-zone aware (e.g. datetime(2025, 1, 1, tzinfo=UTC))")
    rng = np.random.default_rng(seed)
    n = int(n_jobs)
    # job sizes: >40% 1 GPU, >90% under 8 GPUs; a tail of multi-node jobs (HPCA'25 Fig. 2);
    # sizes that do not fit the cluster are left out
    size_choices = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024])
    size_p = np.array([0.45, 0.25, 0.21, 0.04, 0.02, 0.012, 0.008, 0.005, 0.0025, 0.0015, 0.001])
    fits = np.maximum(1, size_choices // gpus_per_node) <= n_nodes
    size_choices, size_p = size_choices[fits], size_p[fits]
    gpus = rng.choice(size_choices, size=n, p=size_p / size_p.sum())
    nnodes = np.maximum(1, gpus // gpus_per_node)
    first_node = rng.integers(0, np.maximum(1, n_nodes - nnodes), size=n)
    # some allocations in two ranges, with a one-node gap (where the cluster has room for it)
    split = (nnodes >= 4) & (rng.random(n) < 0.3) & (first_node + nnodes < n_nodes)
    submit = np.sort(rng.uniform(0, days * 86400, size=n)).astype(np.int64)
    wait = rng.exponential(600, size=n).astype(np.int64)
    run = np.minimum(rng.lognormal(7.5, 1.6, size=n), 7 * 86400).astype(np.int64) + 1
    state_idx = rng.choice(len(_STATES), size=n, p=[*_STATE_P, 1 - sum(_STATE_P)])
    never_started = (state_idx == len(_STATES) - 1) & (rng.random(n) < 0.3)
    array_task = np.where(rng.random(n) < 0.1, rng.integers(0, 50, size=n), -1)
    step0 = rng.random(n) < 0.35
    t0 = int(start.timestamp())
    width = len(str(n_nodes))
    jobs = pl.DataFrame(
        {
            "raw_id": np.arange(1000, 1000 + n, dtype=np.int64),
            "array_task": array_task,
            "gpus": gpus,
            "n_nodes": nnodes,
            "first_node": first_node,
            "split": split,
            "submit_s": submit + t0,
            "start_s": np.where(never_started, -1, submit + wait + t0),
            "run_s": run,
            "state": np.array(_STATES)[state_idx],
            "user_i": rng.integers(0, 300, size=n),
            "prio": rng.integers(1000, 20000, size=n),
            "step0": step0,
        }
    ).with_columns(
        end_s=pl.when(pl.col("start_s") >= 0).then(pl.col("start_s") + pl.col("run_s")),
        start_s=pl.when(pl.col("start_s") >= 0).then(pl.col("start_s")),
        job_id=pl.when(pl.col("array_task") >= 0)
        .then(pl.format("{}_{}", pl.col("raw_id") - pl.col("array_task"), pl.col("array_task")))
        .otherwise(pl.col("raw_id").cast(pl.String)),
    )
    pad = lambda e: e.cast(pl.String).str.zfill(width)  # noqa: E731
    lo = pl.col("first_node")
    hi = lo + pl.col("n_nodes") - 1
    half = pl.col("n_nodes") // 2
    nodelist = (
        pl.when(pl.col("start_s").is_null())
        .then(pl.lit("None assigned"))
        .when(pl.col("n_nodes") == 1)
        .then(pl.concat_str([pl.lit("node"), pad(lo)]))
        .when(pl.col("split"))
        .then(
            pl.format(
                "node[{}-{},{}-{}]", pad(lo), pad(lo + half - 1), pad(lo + half + 1), pad(hi + 1)
            )
        )
        .otherwise(pl.format("node[{}-{}]", pad(lo), pad(hi)))
    )

    def ts(c: pl.Expr) -> pl.Expr:
        if times == "epoch":
            return c.cast(pl.String).fill_null("Unknown")
        return pl.from_epoch(c, time_unit="s").dt.strftime("%Y-%m-%dT%H:%M:%S").fill_null("Unknown")

    exit_code = (
        pl.when(pl.col("state") == "COMPLETED")
        .then(pl.lit("0:0"))
        .when(pl.col("state") == "FAILED")
        .then(pl.lit("1:0"))
        .when(pl.col("state") == "OUT_OF_MEMORY")
        .then(pl.lit("0:125"))
        .when(pl.col("state") == "TIMEOUT")
        .then(pl.lit("0:1"))
        .otherwise(pl.lit("0:0"))
    )
    state_txt = (
        pl.when(pl.col("state") == "CANCELLED")
        .then(pl.format("CANCELLED by {}", 1000 + pl.col("user_i")))
        .otherwise(pl.col("state"))
    )
    elapsed = _hms(pl.col("run_s").fill_null(0)).fill_null("00:00:00")
    alloc = jobs.select(
        "raw_id",
        JobID=pl.col("job_id"),
        JobIDRaw=pl.col("raw_id").cast(pl.String),
        JobName=pl.format("train_{}", pl.col("raw_id") % 997),
        User=pl.format("user{}", pl.col("user_i")),
        Account=pl.format("team{}", pl.col("user_i") % 40),
        Partition=pl.lit("learn"),
        QOS=pl.when(pl.col("prio") > 15000).then(pl.lit("high")).otherwise(pl.lit("normal")),
        State=state_txt,
        ExitCode=exit_code,
        Submit=ts(pl.col("submit_s")),
        Start=pl.when(pl.col("start_s").is_null())
        .then(pl.lit("None"))
        .otherwise(ts(pl.col("start_s"))),
        End=ts(pl.col("end_s")),
        Elapsed=pl.when(pl.col("start_s").is_null()).then(pl.lit("00:00:00")).otherwise(elapsed),
        Timelimit=pl.lit("7-00:00:00"),
        NNodes=pl.col("n_nodes").cast(pl.String),
        AllocTRES=pl.format(
            "billing={},cpu={},gres/gpu={},mem={}G,node={}",
            pl.col("gpus") * 12,
            pl.col("gpus") * 12,
            pl.col("gpus"),
            pl.col("gpus") * 64,
            pl.col("n_nodes"),
        ),
        NodeList=nodelist,
        Priority=pl.col("prio").cast(pl.String),
        Cluster=pl.lit(cluster),
        order=pl.lit(0),
    )
    started = alloc.filter(pl.col("Start") != "None")
    steps = []
    for order, suffix in ((1, "batch"), (2, "extern")):
        steps.append(
            started.with_columns(
                JobID=pl.col("JobID") + f".{suffix}",
                JobIDRaw=pl.col("JobIDRaw") + f".{suffix}",
                JobName=pl.lit(suffix),
                User=pl.lit(""),
                QOS=pl.lit(""),
                Partition=pl.lit(""),
                State=pl.col("State").str.replace(r" by \d+$", ""),
                Timelimit=pl.lit(""),
                Priority=pl.lit(""),
                order=pl.lit(order),
            )
        )
    with_step0 = started.join(jobs.filter("step0").select("raw_id"), on="raw_id", how="semi")
    steps.append(
        with_step0.with_columns(
            JobID=pl.col("JobID") + ".0",
            JobIDRaw=pl.col("JobIDRaw") + ".0",
            JobName=pl.lit("python"),
            User=pl.lit(""),
            QOS=pl.lit(""),
            Partition=pl.lit(""),
            Timelimit=pl.lit(""),
            Priority=pl.lit(""),
            State=pl.col("State").str.replace(r" by \d+$", ""),
            order=pl.lit(3),
        )
    )
    out = pl.concat([alloc, *steps]).sort("raw_id", "order").select(list(SACCT_FIELDS))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    out.write_csv(path, separator="|", quote_style="never", include_header=True)
    return jobs.select(
        "job_id", "state", "n_nodes", "gpus", "submit_s", "start_s", "end_s", "array_task"
    )


#: modules :func:`import_all_modules` does not import: running them does something
_NOT_IMPORTED = ("reliability.__main__",)


def import_all_modules() -> dict[str, str]:
    """Import every module of the package (so that every result class is defined).

    A module that needs a third-party package missing from this install is not an error (a
    plain install lacks the test and dev extras); it is returned with the reason. An import
    that fails for any other reason (a broken module of the package) raises.

    Returns
    -------
    dict of str to str
        Module not imported -> why (the missing third-party package); empty when every module
        imported.
    """
    import reliability

    skipped: dict[str, str] = {}
    for info in pkgutil.walk_packages(reliability.__path__, "reliability."):
        if info.name in _NOT_IMPORTED or any(info.name.startswith(s + ".") for s in skipped):
            continue
        try:
            importlib.import_module(info.name)
        except ModuleNotFoundError as e:
            missing = (e.name or "").split(".")[0]
            if not missing or missing == "reliability":
                raise
            skipped[info.name] = f"needs {missing}, which is not installed"
    return skipped


def all_results() -> list[type]:
    """Return every concrete result class of the package.

    Imports every module (:func:`import_all_modules`), then walks
    ``Result.__subclasses__()`` recursively: a result class defined anywhere, also outside the
    package, is found. Abstract classes and classes whose name starts with ``_`` are left out.

    Returns
    -------
    list of type
        The classes, sorted by module and name.
    """
    from reliability._result import Result

    import_all_modules()
    found: set[type] = set()
    todo = list(Result.__subclasses__())
    while todo:
        cls = todo.pop()
        if cls in found:
            continue
        todo.extend(cls.__subclasses__())
        if not inspect.isabstract(cls) and not cls.__name__.startswith("_"):
            found.add(cls)
    return sorted(found, key=lambda c: (c.__module__, c.__qualname__))
