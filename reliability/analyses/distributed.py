"""Attribution of a Dataset one cluster per task, on Dask or local processes (issue 39).

Every join of :func:`reliability.attribution.attribute_failures` is keyed on the cluster (an
attempt's evidence is on its own cluster's nodes), so a Dataset of several clusters is
attributed cluster by cluster, each cluster a task of a :class:`reliability.parallel.Executor`
(``dask.distributed``: a ``Client`` on any scheduler address, or a ``LocalCluster``), and the
pieces put back in the Dataset's row order: the result is equal to the serial run's.

Each task opens the Dataset by its path and reads only its cluster's rows of each part, so the
workers must see the Dataset's folder at the same path (a shared file system on a real Dask
cluster).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from reliability.attribution import _SNAPSHOT_KINDS, attribute_failures

if TYPE_CHECKING:
    from reliability.parallel import Executor
    from reliability.store import Dataset

__all__ = ["attribute_by_cluster"]

_ORDER = "__order"


def _attribute_cluster(
    path: str, cluster: str, history: bool, merged: bool, options: dict[str, Any]
) -> pl.DataFrame:
    """Run one task: attribute the attempts of ``cluster`` in the Dataset at ``path``.

    The task reads only its cluster's rows of each part (:meth:`Dataset.scan` ``clusters=``).
    A jobs table of several parts is merged, hence sorted by cluster: the tasks' pieces in
    cluster order are the serial row order. A single part keeps its file order, so the task
    numbers the rows of the whole part first (``__order``) to put them back.
    """
    from reliability.store import Dataset

    ds = Dataset(path)
    mine = [cluster]
    if merged:
        jobs = ds.scan("jobs", clusters=mine)
    else:
        jobs = ds.scan("jobs").with_row_index(_ORDER).filter(pl.col("cluster") == cluster)
    states = ds.scan("node_states", clusters=mine) if history else None
    return attribute_failures(
        jobs,
        health_events=ds.scan("health_events", clusters=mine),
        node_states=states,
        **options,
    )


def attribute_by_cluster(dataset: Dataset, executor: Executor, **options: Any) -> pl.DataFrame:
    """Attribute every attempt of a Dataset, one cluster per task on ``executor``.

    Equal to ``attribute_failures(dataset, **options)`` (Kokolis et al. HPCA'25 §III): same
    rows, same order, same values.

    Parameters
    ----------
    dataset : Dataset
        The Dataset; its folder must be readable by the workers at the same path.
    executor : Executor
        Where the tasks run (:class:`reliability.parallel.Executor`; ``backend="dask"`` with
        ``scheduler="tcp://host:8786"`` for a real Dask cluster).
    **options : object
        Keyword arguments of :func:`reliability.attribution.attribute_failures` (``before_min``,
        ``after_min``, ``requeue_exit_codes``, ``reasons``...).

    Returns
    -------
    polars.DataFrame
        The attributed attempts, in the Dataset's row order.

    Raises
    ------
    RuntimeError
        If a cluster's task still failed after the executor's retries (naming it).
    """
    clusters = (
        dataset.scan("jobs").select(pl.col("cluster").unique()).collect().to_series().sort()
    ).to_list()
    if len(clusters) < 2:  # nothing to share out
        return attribute_failures(dataset, **options)
    history = any(
        "node_states" in (i.get("rows_out") or {}) and i.get("kind") not in _SNAPSHOT_KINDS
        for i in dataset.inputs
    )
    merged = sum("jobs" in (i.get("parts") or {}) for i in dataset.inputs) > 1
    names = [f"attribute-{i:04d}" for i in range(len(clusters))]
    args = [(str(dataset.path), c, history, merged, options) for c in clusters]
    done, failures = executor.map(_attribute_cluster, args, names)
    if failures:
        first = failures[0]
        who = clusters[names.index(first.name)]
        raise RuntimeError(
            f"attribution of cluster {who!r} failed on the executor: {first.error}"
            + (f" (and {len(failures) - 1} other cluster(s))" if len(failures) > 1 else "")
        )
    out = pl.concat([done[n] for n in names])  # (clusters sorted as the merge sorts them)
    return out if merged else out.sort(_ORDER).drop(_ORDER)
