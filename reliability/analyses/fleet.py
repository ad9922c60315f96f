"""The stages after attribution of a fleet, one cluster per task: ETTR and lemon features.

A run (its key holds the cluster) and a node (named with its cluster) belong to one cluster,
so a fleet's runs and per-node features are computed cluster by cluster, each cluster a task
of a :class:`reliability.parallel.Executor` (``dask.distributed``: a ``Client`` on any
scheduler address, or a ``LocalCluster``), from the attributed parts that
:func:`~reliability.analyses.write_attributed_by_cluster` wrote. Each task writes its
cluster's rows to a parquet part and sends back a path and a few counts; put end to end in
cluster order, the parts are the rows the serial call makes on the whole Dataset:

- :func:`ettr_by_cluster`: :func:`reliability.models.recovery.job_run_ettr` (Kokolis et al.
  HPCA'25 §V): the runs, in key order, and the notes' counts summed;
- :func:`features_by_cluster`: :func:`reliability.models.nodes.node_features` (§VI): one row
  per (cluster, node, window end) on the fleet's window grid.

What a serial call takes from the whole Dataset (the observation end, the first window's
start) is worked out once here, from the parts and tables read lazily, and handed to every
task. The tasks read their cluster's attributed part and their cluster's rows of the
Dataset's tables, so the workers must see both folders at the same paths (a shared file
system on a real Dask cluster). Node health, which needs no per-attempt state, reads the
fleet's parts directly on the streaming engine (:func:`reliability.models.nodes.node_health`
with the scan as ``attributed`` and ``jobs``).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from reliability._atomic import write_parquet_atomic
from reliability.analyses.distributed import _ORDER, attributed_parts, map_clusters, tidy_parts
from reliability.models.failures.counts import as_utc, clip_lazy, resolve_observation_end
from reliability.models.nodes.lemon_features import (
    check_grid,
    check_history,
    features_of,
    node_features,
)
from reliability.models.recovery.ettr_logs import (
    ATTEMPT_COLUMNS,
    RUN_COUNTS,
    RunETTR,
    check_assumptions,
    run_frame,
    run_key_columns,
    run_notes,
)

if TYPE_CHECKING:
    from reliability.parallel import Executor
    from reliability.store import Dataset

__all__ = ["ettr_by_cluster", "features_by_cluster"]


def _part(path: str, cluster: str, columns: list[str] | None = None) -> pl.DataFrame:
    """Read a cluster's attributed part, in the Dataset's row order; check it is that cluster's."""
    names = pl.read_parquet_schema(path)
    want = None if columns is None else [c for c in (*columns, _ORDER) if c in names]
    frame = pl.read_parquet(path, columns=want)
    if _ORDER in frame.columns:
        frame = frame.sort(_ORDER).drop(_ORDER)
    found = frame.get_column("cluster").unique().to_list() if "cluster" in frame.columns else []
    if found not in ([cluster], []):
        raise ValueError(f"{path}: holds cluster(s) {sorted(map(str, found))}, not {cluster!r}")
    return frame


def _ettr_cluster(
    part: str,
    cluster: str,
    key: list[str],
    obs_end: datetime | None,
    params: tuple[float | None, float, str, int],
    out: str,
) -> dict[str, int]:
    """Run one task: the runs of ``cluster`` written to ``out``; the notes' counts returned."""
    jobs = _part(part, cluster, [*key, *ATTEMPT_COLUMNS])
    runs, counts = run_frame(jobs, key, obs_end, *params)
    write_parquet_atomic(runs, Path(out))
    return counts


def ettr_by_cluster(
    dataset: Dataset,
    executor: Executor,
    attributed: str | Path,
    folder: str | Path,
    ckpt_interval_h: float | None = 1.0,
    restart_h: float = 5.0 / 60.0,
    *,
    run_key: str | list[str] | None = None,
    lost_work: str = "aligned",
    ckpt_min_gpus: int = 0,
    observation_end: datetime | None = None,
) -> RunETTR:
    """ETTR per job run of a fleet, one cluster per task, each task writing its runs' part.

    Equal to :func:`~reliability.models.recovery.job_run_ettr` on the attempts as the parts
    attributed them (``job_run_ettr(dataset, ...)`` for parts written with the default
    options; Kokolis et al. HPCA'25 §V): the same runs in the same order (the parts
    ``folder/runs-NNNNN.parquet``, one per cluster in sorted order; the result's ``runs`` is a
    LazyFrame over them, which ``to_disk`` does not save), the same notes. Its tables are
    aggregated over the parts on the streaming engine: counts and quantiles are the serial
    ones; sums and means may differ from them in the last digits (the additions come in
    another order).

    Parameters
    ----------
    dataset : Dataset
        The fleet's Dataset.
    executor : Executor
        Where the tasks run (:class:`reliability.parallel.Executor`).
    attributed : str or Path
        The folder :func:`~reliability.analyses.write_attributed_by_cluster` wrote for this
        Dataset (checked: :func:`~reliability.analyses.distributed.attributed_parts`).
    folder : str or Path
        Where the runs' parts go (created if missing); the workers must be able to write it
        at the same path. Parts of an earlier run beyond this run's clusters are removed.
    ckpt_interval_h, restart_h, lost_work, ckpt_min_gpus, observation_end
        As :func:`reliability.models.recovery.job_run_ettr` [h, h, -, GPUs, UTC].
    run_key : str or list of str or None
        Column(s) that identify a run; default (cluster, job_id). It must start with
        ``cluster``: a run keyed across clusters is not one cluster's, and the runs come in
        key order.

    Returns
    -------
    RunETTR
        Its ``runs`` a LazyFrame over the parts.

    Raises
    ------
    ValueError
        If ``attributed`` holds no parts of this Dataset as it is now, or the run key does
        not start with the cluster.
    TaskError
        If a cluster's task still failed after the executor's retries (naming it; a
        ``RuntimeError``).
    """
    check_assumptions(ckpt_interval_h, lost_work)
    clusters, parts = attributed_parts(dataset, attributed)
    scan = pl.scan_parquet(parts)
    key = run_key_columns(scan.head(0).collect(), run_key)
    if key[0] != "cluster":
        raise ValueError(
            f"run_key {key}: a fleet's runs are computed one cluster at a time and put end to end "
            "in cluster order, so the key must start with 'cluster' (e.g. ['cluster', 'user', "
            "'name'])"
        )
    obs_end, note = resolve_observation_end(dataset, scan, observation_end)
    folder = Path(folder).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    outs = tidy_parts(folder, "runs", max(len(clusters), 1))
    params = (ckpt_interval_h, restart_h, lost_work, ckpt_min_gpus)
    if clusters:
        args = [
            (str(p), c, key, obs_end, params, str(o))
            for p, c, o in zip(parts, clusters, outs, strict=True)
        ]
        counts = map_clusters(executor, _ettr_cluster, clusters, args, "ETTR")
    else:  # no attempts: one empty part
        counts = [_ettr_cluster(str(parts[0]), "", key, obs_end, params, str(outs[0]))]
    total = {c: sum(n[c] for n in counts) for c in RUN_COUNTS}
    return RunETTR(
        runs=pl.scan_parquet(outs),
        ckpt_interval_h=ckpt_interval_h,
        restart_h=restart_h,
        lost_work=lost_work,
        observation_end=obs_end,
        notes=([note] if note else []) + run_notes(total),
    )


def _features_cluster(
    path: str,
    part: str,
    cluster: str,
    window: tuple[int, int],
    bounds: tuple[datetime, datetime | None, datetime | None],
    verified: frozenset[tuple[str, int, int]],
    out: str,
) -> None:
    """Run one task: the features of ``cluster``'s nodes written to ``out``."""
    from reliability.store import Dataset

    ds = Dataset(path, verified=verified)
    mine = [cluster]
    start, end, obs = bounds
    frame = features_of(
        _part(part, cluster),
        ds.scan("health_events", clusters=mine).collect(),
        ds.scan("node_states", clusters=mine).collect(),
        obs,
        *window,
        start,
        end,
        some_attempts=False,  # (a cluster whose attempts all start after the end: its nodes'
        # events and states still make their rows, as in the whole fleet's call)
    )
    write_parquet_atomic(frame, Path(out))


def features_by_cluster(
    dataset: Dataset,
    executor: Executor,
    attributed: str | Path,
    folder: str | Path,
    window_days: int = 28,
    step_days: int = 7,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    observation_end: datetime | None = None,
) -> pl.LazyFrame:
    """Compute a fleet's rolling per-node lemon features, one cluster per task, each writing its part.

    Collected, equal to ``node_features(dataset, window_days, step_days, ...)`` on the
    attempts as the parts attributed them (Kokolis et al. HPCA'25 §VI), for the clusters with
    attempts (see the notes): one row per (cluster, node, window end), the same windows (the
    fleet's observation end and first start are worked out here as
    :func:`~reliability.models.nodes.node_features` works them out on the whole Dataset, and
    given to every task), the same values.

    Parameters
    ----------
    dataset : Dataset
        The fleet's Dataset; the workers read its health events and node states.
    executor : Executor
        Where the tasks run (:class:`reliability.parallel.Executor`).
    attributed : str or Path
        The folder :func:`~reliability.analyses.write_attributed_by_cluster` wrote for this
        Dataset (checked: :func:`~reliability.analyses.distributed.attributed_parts`).
    folder : str or Path
        Where the features' parts go (``features-NNNNN.parquet``; created if missing).
    window_days, step_days : int
        Window length and the step between window ends [days].
    start, end, observation_end : datetime or None
        As :func:`reliability.models.nodes.node_features` [UTC].

    Returns
    -------
    polars.LazyFrame
        A scan of the parts, sorted by cluster, node and window end.

    Raises
    ------
    ValueError
        As :func:`~reliability.models.nodes.node_features` (no attempts; a window longer
        than the fleet's history), or when ``attributed`` holds no parts of this Dataset.
    TaskError
        If a cluster's task still failed after the executor's retries (naming it; a
        ``RuntimeError``).

    Notes
    -----
    The tasks are the clusters of the jobs table: the nodes of a cluster with no job attempt
    at all (events or states only) have no rows here, where the serial call gives them rows
    of zero attempts.
    """
    check_grid(window_days, step_days)
    clusters, parts = attributed_parts(dataset, attributed)
    if not clusters:  # (the serial call's refusal, in its words)
        return node_features(
            {
                "jobs": _part(str(parts[0]), ""),
                "health_events": dataset.health_events,
                "node_states": dataset.node_states,
            },
            window_days,
            step_days,
        ).lazy()
    scan = pl.scan_parquet(parts)
    he = dataset.scan("health_events").select("time")
    ns = dataset.scan("node_states").select("start", "end")
    obs = observation_end or dataset.observation_end
    if obs is None:  # node_features' default: the latest timestamp in the tables
        obs = _latest(
            scan.select(pl.max_horizontal(pl.col("end_time").max(), pl.col("start_time").max())),
            he.select(pl.col("time").max()),
            ns.select(pl.max_horizontal(pl.col("start").max(), pl.col("end").max())),
        )
    obs = as_utc(obs, "observation_end") if obs is not None else None
    if start is None:  # the earliest time node_features keeps, after censoring at ``obs``
        lit = None if obs is None else pl.lit(obs).cast(pl.Datetime("us", "UTC"))
        start = _earliest(
            clip_lazy(scan.select("start_time", "end_time"), obs).select(
                pl.col("start_time").min()
            ),
            (he if lit is None else he.filter(pl.col("time") <= lit)).select(pl.col("time").min()),
            (ns if lit is None else ns.filter(pl.col("start") < lit)).select(pl.col("start").min()),
        )
    last = end or obs
    if start is not None and last is not None:  # (every task's grid is the fleet's: once, here)
        check_history(start, last, window_days)
    folder = Path(folder).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    outs = tidy_parts(folder, "features", len(clusters))
    ok = dataset.verified_parts
    args: list[tuple[Any, ...]] = [
        (str(dataset.path), str(p), c, (window_days, step_days), (start, end, obs), ok, str(o))
        for p, c, o in zip(parts, clusters, outs, strict=True)
    ]
    map_clusters(executor, _features_cluster, clusters, args, "lemon features")
    return pl.scan_parquet(outs)


def _latest(*queries: pl.LazyFrame) -> datetime | None:
    found = [q.collect(engine="streaming").item() for q in queries]
    return max((t for t in found if t is not None), default=None)


def _earliest(*queries: pl.LazyFrame) -> datetime | None:
    found = [q.collect(engine="streaming").item() for q in queries]
    return min((t for t in found if t is not None), default=None)
