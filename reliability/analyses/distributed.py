"""Attribution of a Dataset one cluster per task, on Dask or local processes (issue 39).

Every join of :func:`reliability.attribution.attribute_failures` is keyed on the cluster (an
attempt's evidence is on its own cluster's nodes), so a Dataset of several clusters is
attributed cluster by cluster, each cluster a task of a :class:`reliability.parallel.Executor`
(``dask.distributed``: a ``Client`` on any scheduler address, or a ``LocalCluster``), and the
pieces put back in the Dataset's row order: the result is equal to the serial run's.

Each task opens the Dataset by its path and reads only its cluster's rows of each part, so the
workers must see the Dataset's folder at the same path (a shared file system on a real Dask
cluster).

A fleet too large for one process's memory is attributed with
:func:`write_attributed_by_cluster`: each task writes its cluster's attempts to a parquet part
and only the part's path travels back; the caller gets a ``LazyFrame`` over the parts, which
the models read column by column (:func:`reliability.models.failures.fit_mttf` takes it).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from reliability._atomic import write_json_atomic, write_parquet_atomic
from reliability.attribution import _SNAPSHOT_KINDS, attribute_failures
from reliability.errors import TaskError
from reliability.store.lock import crash_leftover

if TYPE_CHECKING:
    from reliability.parallel import Executor
    from reliability.store import Dataset

__all__ = [
    "attribute_by_cluster",
    "attributed_parts",
    "attributed_scan",
    "code_key",
    "options_key",
    "reusable_parts",
    "reuse_refusal",
    "write_attributed_by_cluster",
]

_ORDER = "__order"

#: the name of cluster ``i``'s part in :func:`write_attributed_by_cluster`'s folder
_PART = "attributed-{:05d}.parquet"
#: what :func:`write_attributed_by_cluster` wrote the parts from (:func:`attributed_parts`)
_PARTS_OF = "attributed.json"
#: the tables an attributed part is made from
_SOURCES = ("jobs", "health_events", "node_states")


def _attribute_cluster(
    path: str,
    cluster: str,
    history: bool,
    merged: bool,
    options: dict[str, Any],
    verified: frozenset[tuple[str, int, int]] = frozenset(),
    out: str | None = None,
) -> pl.DataFrame | tuple[str, int]:
    """Run one task: attribute the attempts of ``cluster`` in the Dataset at ``path``.

    The task reads only its cluster's rows of each part (:meth:`Dataset.scan` ``clusters=``).
    A jobs table of several parts is merged, hence sorted by cluster: the tasks' pieces in
    cluster order are the serial row order. A single part keeps its file order, so the task
    numbers the rows of the whole part first (``__order``) to put them back.

    ``verified``: the part versions the caller checked (:attr:`Dataset.verified_parts`), not
    hashed again here (every task would otherwise hash every part of the fleet: 50 clusters of
    1M attempts, 3.5 GiB of jobs parts per task). With ``out`` (a part's path), the frame is
    written there (atomically) and ``(out, rows)`` returned instead.
    """
    from reliability.store import Dataset

    ds = Dataset(path, verified=verified)
    mine = [cluster]
    if merged:
        jobs = ds.scan("jobs", clusters=mine)
    else:
        jobs = ds.scan("jobs").with_row_index(_ORDER).filter(pl.col("cluster") == cluster)
    states = ds.scan("node_states", clusters=mine) if history else None
    # one cluster's rows, read and merged once: attribution reads each table in several
    # branches, and a lazy merged scan is merged again in each (a fleet's cluster of 1M
    # attempts: 43 s lazy, 21 s read first)
    frame = attribute_failures(
        jobs.collect(),
        health_events=ds.scan("health_events", clusters=mine).collect(),
        node_states=None if states is None else states.collect(),
        **options,
    )
    if out is None:
        return frame
    write_parquet_atomic(frame, Path(out))
    return out, frame.height


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
    TaskError
        If a cluster's task still failed after the executor's retries (naming it; a
        ``RuntimeError``).
    """
    clusters, history, merged = _plan(dataset)
    if len(clusters) < 2:  # nothing to share out
        return attribute_failures(dataset, **options)
    ok = dataset.verified_parts
    args = [(str(dataset.path), c, history, merged, options, ok) for c in clusters]
    done = map_clusters(executor, _attribute_cluster, clusters, args, "attribution")
    out = pl.concat(done)  # (clusters sorted as the merge sorts them)
    return out if merged else out.sort(_ORDER).drop(_ORDER)


def write_attributed_by_cluster(
    dataset: Dataset, executor: Executor, folder: str | Path, *, reuse: bool = False, **options: Any
) -> pl.LazyFrame:
    """Attribute every attempt of a Dataset one cluster per task, each task writing its part.

    For a fleet whose attributed attempts do not fit in memory: each task writes its cluster's
    frame to ``folder/attributed-NNNNN.parquet`` (atomically; ``NNNNN`` numbers the clusters in
    sorted order) and sends back only the path, so neither the caller nor the scheduler ever
    holds more than a path per cluster (a Dataset of one cluster is one task too). Collected,
    the result equals ``attribute_failures(dataset, **options)`` (Kokolis et al. HPCA'25 §III):
    same rows, same order, same values. Beside the parts, ``attributed.json`` says what they
    are of (the Dataset's parts, the clusters in order, each part's size and time, the
    options): :func:`attributed_parts` checks it before the parts are read again. Reruns
    overwrite the parts (a scan taken before a rerun
    is not to be read after it); parts of an earlier run beyond this run's clusters are removed,
    and so are a part's temporary files left by a killed writer (older than a day, or whose
    writer's pid is gone on this host): files of exactly those name patterns only, no other
    file of the folder is touched. When the jobs table is a single part (one
    export), the parts carry its row number, ``__order``, which the scan sorts by and drops.

    Parameters
    ----------
    dataset : Dataset
        The Dataset; its folder must be readable by the workers at the same path.
    executor : Executor
        Where the tasks run (:class:`reliability.parallel.Executor`).
    folder : str or Path
        Where the parts go (created if missing; a relative path is taken from the caller's
        working directory); the workers must be able to write it at the same path (a shared
        file system on a real Dask cluster).
    reuse : bool
        Keep the folder's parts when they were written by this version of the package from
        this Dataset as it is now, with the same options, and are unchanged since
        (:func:`reusable_parts`); otherwise (and by default) attribute again.
    **options : object
        Keyword arguments of :func:`reliability.attribution.attribute_failures`.

    Returns
    -------
    polars.LazyFrame
        A scan of the parts, in the Dataset's row order (read it column by column: a model
        that reads five columns never loads the host lists).

    Raises
    ------
    TaskError
        If a cluster's task still failed after the executor's retries (naming it; a
        ``RuntimeError``).
    """
    folder = Path(folder).resolve()  # (the workers write it: not relative to their own cwd)
    if reuse and reusable_parts(dataset, folder, **options):
        return attributed_scan(dataset, folder)
    clusters, history, merged = _plan(dataset)
    folder.mkdir(parents=True, exist_ok=True)
    # what the parts are of goes first: a run that stops half-way leaves parts of two runs,
    # which no reader takes for this Dataset's (:func:`attributed_parts`)
    (folder / _PARTS_OF).unlink(missing_ok=True)
    if clusters:
        ok = dataset.verified_parts
        args = [
            (str(dataset.path), c, history, merged, options, ok, str(folder / _PART.format(i)))
            for i, c in enumerate(clusters)
        ]
        map_clusters(executor, _attribute_cluster, clusters, args, "attribution")
        n = len(clusters)
    else:  # no attempts: one empty part
        write_parquet_atomic(attribute_failures(dataset, **options), folder / _PART.format(0))
        n, merged = 1, True
    paths = tidy_parts(folder, "attributed", n)
    what = {
        "dataset": fingerprint(dataset),
        "clusters": clusters,
        "parts": [_stamp(p) for p in paths],
        "options": options,  # (for the reader's information: the readers do not redo them)
        "options_key": options_key(options),
        "code": code_key(),
    }
    write_json_atomic(what, folder / _PARTS_OF)
    return _scan(paths, merged)


def attributed_scan(dataset: Dataset, folder: str | Path) -> pl.LazyFrame:
    """Scan a folder's attributed parts of this Dataset, in the Dataset's row order.

    The parts are checked first (:func:`attributed_parts`); the scan is the one
    :func:`write_attributed_by_cluster` returned when it wrote them.

    Parameters
    ----------
    dataset : Dataset
        The Dataset the parts are to be of, as it is now.
    folder : str or Path
        The folder :func:`write_attributed_by_cluster` wrote.

    Returns
    -------
    polars.LazyFrame
        The attributed attempts.

    Raises
    ------
    ValueError
        As :func:`attributed_parts`.
    """
    clusters, paths = attributed_parts(dataset, folder)
    return _scan(paths, not clusters or _merged(dataset))  # (no attempts: one empty part)


def _scan(paths: list[Path], merged: bool) -> pl.LazyFrame:
    """Scan parts in the Dataset's row order (one jobs part, not ``merged``: by its row numbers)."""
    scan = pl.scan_parquet(paths)
    return scan if merged else scan.sort(_ORDER).drop(_ORDER)


def _merged(dataset: Dataset) -> bool:
    """Tell whether the Dataset's jobs table is merged from several parts (sorted by cluster)."""
    return sum("jobs" in (i.get("parts") or {}) for i in dataset.inputs) > 1


def code_key() -> str:
    """Name the build of the package that attributes: its files, and the polars it runs on.

    A hash of every file of the installed ``reliability`` package (its modules and data, by
    path and content) and of polars' version: any change to the code, a release or an edit
    of a development tree alike, gives another key.

    Returns
    -------
    str
        A sha256 hex digest.
    """
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256(f"polars {pl.__version__}\0".encode())
    for f in sorted(root.rglob("*")):
        if f.is_file() and "__pycache__" not in f.parts and f.suffix != ".pyc":
            h.update(f.relative_to(root).as_posix().encode() + b"\0")
            h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def options_key(options: dict[str, Any]) -> str | None:
    """Name attribution options by their values and types: equal ones, equal keys.

    Numbers, strings, None, lists and tuples (as lists), dicts (by sorted key) and dataclasses
    such as :class:`reliability.reasons.ReasonRules` (their class and compared fields) are
    named by value; ``10`` and ``10.0`` are different keys (so parts are attributed again,
    never wrongly kept).

    Parameters
    ----------
    options : dict of str to object
        Keyword arguments of :func:`reliability.attribution.attribute_failures`.

    Returns
    -------
    str or None
        A sha256 hex digest; None if a value is of another kind, or a float is not finite
        (parts attributed with it are never reused: its value cannot be compared).
    """

    def plain(v: Any) -> Any:
        if v is None or isinstance(v, bool | int | float | str):
            return v
        if isinstance(v, list | tuple):
            return [plain(x) for x in v]
        if isinstance(v, dict) and all(isinstance(k, str) for k in v):
            return {k: plain(v[k]) for k in sorted(v)}
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            fields = [f.name for f in dataclasses.fields(v) if f.compare]
            kind = f"{type(v).__module__}.{type(v).__qualname__}"
            return {"__type": kind} | {f: plain(getattr(v, f)) for f in fields}
        raise TypeError(type(v).__name__)

    try:
        text = json.dumps(plain(options), sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return None
    return hashlib.sha256(text.encode()).hexdigest()


def reusable_parts(dataset: Dataset, folder: str | Path, **options: Any) -> bool:
    """Tell whether a folder's attributed parts stand for this Dataset with these options.

    True when :func:`write_attributed_by_cluster` wrote them with this build of the package
    (:func:`code_key`: the same code on the same polars), from the Dataset as it is now
    (:func:`fingerprint`), with options of the same values (:func:`options_key`), and no part
    changed since (:func:`attributed_parts`); :func:`reuse_refusal` says why not.

    Parameters
    ----------
    dataset : Dataset
        The Dataset.
    folder : str or Path
        The parts' folder.
    **options : object
        Keyword arguments of :func:`reliability.attribution.attribute_failures`.

    Returns
    -------
    bool
        Whether the parts may be read instead of attributing again.
    """
    return reuse_refusal(dataset, folder, **options) is None


def reuse_refusal(dataset: Dataset, folder: str | Path, **options: Any) -> str | None:
    """Say why a folder's attributed parts may not stand for this Dataset with these options.

    Parameters
    ----------
    dataset : Dataset
        The Dataset.
    folder : str or Path
        The parts' folder.
    **options : object
        Keyword arguments of :func:`reliability.attribution.attribute_failures`.

    Returns
    -------
    str or None
        Why not (no finished run's parts; another Dataset, or a part changed; other options;
        another build of the package); None when they may (:func:`reusable_parts`).
    """
    folder = Path(folder).resolve()
    if not (folder / _PARTS_OF).is_file():
        return f"{folder} holds no finished run's attributed parts ({_PARTS_OF} is missing)"
    try:
        what, _, _ = _checked(dataset, folder)
    except ValueError as e:
        return str(e).split(": run write_attributed_by_cluster")[0]
    key = options_key(options)
    if key is None:
        return "the attribution options cannot be compared by value"
    if what.get("code") != code_key():
        return "they were attributed by another build of the package (its code or polars' version)"
    if what.get("options_key") != key:
        return (
            "they were attributed with other options (such as before_min, after_min, "
            "requeue_exit_codes or the reason rules)"
        )
    return None


def fingerprint(dataset: Dataset) -> str:
    """Name the Dataset's contents that attribution reads: its jobs, events and states parts.

    Every such part as the manifest records it (file, rows, sha256), in the manifest's order
    (which decides merges of overlapping inputs): equal for a copy of the Dataset in another
    folder; different once an input is added or removed.

    Parameters
    ----------
    dataset : Dataset
        The Dataset.

    Returns
    -------
    str
        A sha256 hex digest.
    """
    parts = [
        (table, part.get("file"), part.get("rows"), part.get("sha256"))
        for i in dataset.inputs
        for table, part in (i.get("parts") or {}).items()
        if table in _SOURCES and part
    ]
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()


def _stamp(path: Path) -> dict[str, Any]:
    """Return a part's name, size [bytes] and modification time [ns], as written."""
    st = path.stat()
    return {"file": path.name, "bytes": st.st_size, "mtime_ns": st.st_mtime_ns}


def attributed_parts(dataset: Dataset, folder: str | Path) -> tuple[list[str], list[Path]]:
    """Check that a folder holds :func:`write_attributed_by_cluster`'s parts of this Dataset.

    Parameters
    ----------
    dataset : Dataset
        The Dataset the parts are to be of, as it is now.
    folder : str or Path
        The folder :func:`write_attributed_by_cluster` wrote.

    Returns
    -------
    (list of str, list of Path)
        The clusters (sorted) and their parts, one per cluster in that order.

    Raises
    ------
    ValueError
        If the folder holds no such parts, or parts of another Dataset, or of this Dataset
        before an input was added or removed (naming the folder; rerun
        :func:`write_attributed_by_cluster`).
    """
    _, clusters, paths = _checked(dataset, folder)
    return clusters, paths


def _checked(dataset: Dataset, folder: str | Path) -> tuple[dict[str, Any], list[str], list[Path]]:
    """:func:`attributed_parts`, with what ``attributed.json`` says (read once)."""
    folder = Path(folder).resolve()
    redo = "run write_attributed_by_cluster for this Dataset into it first"
    try:
        what = json.loads((folder / _PARTS_OF).read_text())
    except FileNotFoundError:
        raise ValueError(
            f"{folder}: no attributed parts ({_PARTS_OF} is missing): {redo}"
        ) from None
    except (OSError, ValueError) as e:
        raise ValueError(f"{folder / _PARTS_OF}: unreadable ({e}): {redo}") from None
    if not isinstance(what, dict) or what.get("dataset") != fingerprint(dataset):
        raise ValueError(
            f"{folder}: its attributed parts are of another Dataset, or of this one before an "
            f"input was added or removed: {redo}"
        )
    clusters = list(what.get("clusters") or [])
    paths = [folder / _PART.format(i) for i in range(max(len(clusters), 1))]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise ValueError(f"{folder}: attributed part(s) missing ({', '.join(missing[:3])}): {redo}")
    changed = [
        p.name for p, was in zip(paths, what.get("parts") or [], strict=False) if _stamp(p) != was
    ]
    if changed or len(what.get("parts") or []) != len(paths):
        raise ValueError(
            f"{folder}: attributed part(s) changed since they were written "
            f"({', '.join(changed[:3]) or 'their list'}): {redo}"
        )
    return what, clusters, paths


def tidy_parts(folder: Path, prefix: str, n: int) -> list[Path]:
    """Remove what an earlier run left in a folder of parts; return this run's ``n`` parts.

    Parts ``<prefix>-NNNNN.parquet`` beyond ``n`` (an earlier run had more clusters) go, and
    so do such parts' temporary files left by a killed writer (older than a day, or whose
    writer's pid is gone on this host: :func:`reliability.store.lock.crash_leftover`). Files
    of exactly those name patterns only: no other file of the folder is touched.

    Parameters
    ----------
    folder : Path
        The folder of parts (it exists).
    prefix : str
        The parts' name before ``-NNNNN.parquet`` (``"attributed"``, ``"runs"``...).
    n : int
        This run's parts.

    Returns
    -------
    list of Path
        ``folder/<prefix>-00000.parquet`` ... for the ``n`` parts, in order.
    """
    name = re.compile(rf"{re.escape(prefix)}-[0-9]{{5}}\.parquet")
    # a part's temporary file (:mod:`reliability._atomic`: ``.<part>.<host>-<pid>.<random>.tmp``)
    temp = re.compile(rf"\.{re.escape(prefix)}-[0-9]{{5}}\.parquet\..+\.tmp")
    keep = [folder / f"{prefix}-{i:05d}.parquet" for i in range(n)]
    names = {p.name for p in keep}
    now = time.time()
    for stale in folder.iterdir():
        if name.fullmatch(stale.name):
            if stale.name not in names:
                stale.unlink()
        elif temp.fullmatch(stale.name) and crash_leftover(stale, now):
            stale.unlink(missing_ok=True)
    return keep


def _plan(dataset: Dataset) -> tuple[list[str], bool, bool]:
    """Tell how the Dataset is shared out: one task per cluster.

    Returns the clusters (sorted), whether the Dataset holds a node-state history, and whether
    its jobs table is merged from several parts. The parts the tasks read are checked here,
    once (:attr:`Dataset.verified_parts`).
    """
    for table in ("health_events", "node_states"):  # (the jobs parts: by clusters below)
        dataset.checked_parts(table)
    clusters = dataset.clusters("jobs")  # (from the parts: not the merged table)
    history = any(
        "node_states" in (i.get("rows_out") or {}) and i.get("kind") not in _SNAPSHOT_KINDS
        for i in dataset.inputs
    )
    return clusters, history, _merged(dataset)


def map_clusters(
    executor: Executor, task: Callable[..., Any], clusters: list[str], args: list[tuple], what: str
) -> list[Any]:
    """Run ``task`` once per cluster on ``executor``; the results in the clusters' order.

    Parameters
    ----------
    executor : Executor
        Where the tasks run.
    task : callable
        A module-level function (spawned workers import it).
    clusters : list of str
        The clusters, one task each.
    args : list of tuple
        Each cluster's arguments of ``task``, in the order of ``clusters``.
    what : str
        What the tasks compute, for the task names and the error (``"attribution"``).

    Returns
    -------
    list
        The tasks' results, in the order of ``clusters``.

    Raises
    ------
    TaskError
        If a cluster's task still failed after the executor's retries (naming it and
        ``what``; a ``RuntimeError``).
    """
    names = [f"{what.replace(' ', '-')}-{i:04d}" for i in range(len(clusters))]
    done, failures = executor.map(task, args, names)
    if failures:
        first = failures[0]
        who = clusters[names.index(first.name)]
        raise TaskError(
            f"{what} of cluster {who!r} failed on the executor: {first.error}"
            + (f" (and {len(failures) - 1} other cluster(s))" if len(failures) > 1 else "")
        )
    return [done[n] for n in names]
