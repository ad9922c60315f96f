"""The Dataset: a folder of parquet tables, a manifest, and the quarantine (DESIGN.md §3).

Layout::

    DIR/manifest.json                          every ingested input, its counts and parts
    DIR/<table>/part-<sha16>-<token>.parquet   the rows one input contributed to a table
    DIR/quarantine/part-<sha16>-<token>.parquet  the rows of that input that were not kept
    DIR/.lock                                  present while a writer runs (see store.lock)

The manifest is the commit point: an input's parts are written first (temp file + rename),
then the manifest (temp file + rename, every 200 inputs and at the end of an ingest call).
A crash leaves the previous state readable; parts that no manifest entry names are not part
of the Dataset (the next ingest, or ``reliability repair``, removes those whose writer is gone). Every part carries its input's description in its footer, so a lost manifest
is rebuilt by ``reliability repair`` (a Dataset with parts and no manifest is refused, never
emptied). Reads check each part's size, footer row count and sha256 against the manifest.

An input is identified by (sha256, reader kind, options): the same again is a no-op; other
options are refused, or replace the input's rows with ``replace=True``.

Reading merges overlapping inputs by data (:mod:`reliability.store.merge`).
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from reliability import schema
from reliability._result import Result
from reliability.errors import (
    DatasetDamagedError,
    DatasetError,
    Hint,
    IngestError,
    ReliabilityError,
    join_messages,
)
from reliability.store import integrity, merge
from reliability.store.duplicates import shifted_copy
from reliability.store.inputs import (
    STDIN,
    Source,
    hash_source,
    read_input,
    reader_options,
    sources,
)
from reliability.store.integrity import RepairReport, VerifyReport
from reliability.store.lock import DatasetLock, crash_leftover
from reliability.store.manifest import (
    empty_manifest,
    load_manifest,
    manifest_stamp,
    normalise_options,
    option_changes,
    write_manifest,
)
from reliability.store.parts import (
    PART_DIRS,
    check_part,
    new_entry,
    notes_of,
    part_files,
    part_path,
    remove_parts,
    write_parts,
)
from reliability.store.summary import DatasetSummary, summarise

__all__ = ["STDIN", "Dataset", "IngestOutcome"]

#: inputs per manifest write when many files are ingested in one call
MANIFEST_BATCH = 200

#: column naming the part file of a row, in a scan of several parts
_PATH = "__part_file"


@dataclass
class IngestOutcome(Result):
    """What happened to one input.

    ``ingested``, ``replaced`` (re-read with ``replace``, its old rows dropped) or ``unchanged``
    (already ingested the same way). A result like the models': a one-row ``summary``, a text
    form and sample sizes (rows read).
    """

    title = "Ingest"

    path: str
    status: str
    sha256: str
    rows_read: int
    rows_kept: int
    rows_quarantined: int
    rows_out: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: the end of the input's observation [UTC] (given, known or inferred; None if it has no time)
    observed_until: datetime | None = None

    def line(self) -> str:
        """Summarise the outcome in one line for the CLI.

        Returns
        -------
        str
            Path, rows read / kept / quarantined and rows per table, or that nothing was done.
        """
        if self.status == "unchanged":
            return f"{self.path}: already ingested (sha256 {self.sha256[:12]}), nothing to do"
        out = ", ".join(f"{k}={v}" for k, v in self.rows_out.items())
        verb = "replaced: " if self.status == "replaced" else ""
        return (
            f"{self.path}: {verb}read {self.rows_read}, kept {self.rows_kept}, "
            f"quarantined {self.rows_quarantined} ({out})"
        )

    @property
    def summary(self) -> pl.DataFrame:
        """One row: ``path, status, rows_read, rows_kept, rows_quarantined``, ``rows_<table>``."""
        return pl.DataFrame(
            [
                {
                    "path": self.path,
                    "status": self.status,
                    "rows_read": self.rows_read,
                    "rows_kept": self.rows_kept,
                    "rows_quarantined": self.rows_quarantined,
                    **{f"rows_{t}": n for t, n in self.rows_out.items()},
                }
            ],
            schema_overrides={
                "rows_read": pl.Int64,
                "rows_kept": pl.Int64,
                "rows_quarantined": pl.Int64,
            },
        )

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Records read, kept and quarantined."""
        return {
            "rows read": self.rows_read,
            "kept": self.rows_kept,
            "quarantined": self.rows_quarantined,
        }

    def _lines(self) -> list[str]:
        return [self.line()]

    @classmethod
    def _example(cls) -> IngestOutcome:
        """Build a tiny instance: one sacct export with two rows quarantined (for contract tests)."""
        return cls(
            "raw/sacct-2025-01-06.psv",
            "ingested",
            "0" * 64,
            120,
            118,
            2,
            {"jobs": 80, "job_steps": 38},
            ["2 rows without a start time"],
            datetime(2025, 1, 7, tzinfo=UTC),
        )


def _outcome(entry: dict[str, Any], shown: str, status: str) -> IngestOutcome:
    until = (entry.get("observation") or {}).get("until")
    return IngestOutcome(
        shown,
        status,
        entry["sha256"],
        entry["rows_read"],
        entry["rows_kept"],
        entry["rows_quarantined"],
        dict(entry.get("rows_out") or {}),
        notes_of(entry) if status != "unchanged" else [],
        datetime.fromisoformat(until) if until else None,
    )


class Dataset:
    """A folder of canonical tables built by ingesting raw logs.

    Parameters
    ----------
    path : str or Path
        The folder; created on first ingest if missing.
    verified : iterable of (str, int, int)
        Part versions another instance has already checked (its :attr:`verified_parts`, e.g.
        handed to a worker process): not hashed again while their size and modification time
        are unchanged.

    Examples
    --------
    >>> ds = Dataset("data/rsc")                                   # doctest: +SKIP
    >>> ds.ingest("slurm", ["sacct-2025-01.psv"], tz="UTC")        # doctest: +SKIP
    >>> ds.jobs.filter(pl.col("state") == "NODE_FAIL")             # doctest: +SKIP
    """

    def __init__(self, path: str | Path, *, verified: Iterable[tuple[str, int, int]] = ()) -> None:
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise ReliabilityError(f"{self.path}: not a directory")
        self._cache: tuple[Any, dict[str, Any] | None] | None = None
        self._checked: set[tuple[str, int, int]] = {
            (str(f), int(b), int(t)) for f, b, t in verified
        }

    @property
    def verified_parts(self) -> frozenset[tuple[str, int, int]]:
        """The part versions this instance has checked before reading them.

        Each is (file relative to the folder, size [bytes], modification time [ns]): the size,
        footer row count and sha256 matched the manifest. Pass them to ``Dataset(path,
        verified=...)`` in another process that reads the same parts (one task per cluster:
        otherwise each task hashes every part of the Dataset again).
        """
        return frozenset(self._checked)

    # -- manifest ------------------------------------------------------------------------
    def _load(self) -> dict[str, Any] | None:
        stamp = manifest_stamp(self.path)
        if stamp is not None and self._cache is not None and self._cache[0] == stamp:
            return self._cache[1]
        m = load_manifest(self.path)
        self._cache = (stamp, m) if stamp is not None else None
        return m

    def _refuse_if_damaged(self, writer: bool) -> None:
        """Parts without a manifest: a damaged Dataset (unless the first ingest is running)."""
        parts = part_files(self.path) if self.path.is_dir() else []
        if not parts:
            return
        if not writer and DatasetLock(self.path).is_held_by_other():
            return  # a first ingest that has not committed yet
        raise DatasetDamagedError(
            f"{self.path}: {len(parts)} part file(s) but no manifest.json: the manifest was "
            f"lost (nothing was changed); run `reliability repair {self.path}` to rebuild it "
            "from the parts"
        )

    @property
    def manifest(self) -> dict[str, Any]:
        """The manifest as a dict (a fresh empty one if nothing was ingested yet)."""
        m = self._load()
        if m is None:
            self._refuse_if_damaged(writer=False)
            return empty_manifest()
        return m

    @property
    def inputs(self) -> list[dict[str, Any]]:
        """The ingested inputs, in ingest order."""
        return list(self.manifest["inputs"])

    # -- writing -------------------------------------------------------------------------
    @contextlib.contextmanager
    def _writer(self, wait_s: float = 0.0) -> Iterator[tuple[DatasetLock, dict[str, Any], str]]:
        """Hold the lock (waiting up to ``wait_s`` [s]); yield (lock, manifest as on disk, call id).

        Refuses a damaged Dataset; removes crash leftovers first.
        """
        lock = DatasetLock(self.path)
        with lock.held(wait_s):
            m = self._load()
            if m is None:
                self._refuse_if_damaged(writer=True)
                m = empty_manifest()
            call = os.urandom(6).hex()
            lock.notes += self._collect_garbage(m, call)
            yield lock, m, call

    def _collect_garbage(self, manifest: dict[str, Any], call: str) -> list[str]:
        """Remove what crashed writers left; return what was removed, in words.

        Their temp files, and part files no manifest entry names whose writer can no longer
        commit them (an ingest killed before its commit: see
        :func:`~reliability.store.integrity.remove_orphans`); parts a live writer may still
        commit are kept.
        """
        if not self.path.is_dir():
            return []
        now = datetime.now(UTC).timestamp()
        for d in (self.path, *(self.path / s for s in PART_DIRS)):
            if not d.is_dir():
                continue
            for f in d.iterdir():
                if crash_leftover(f, now):  # (older than a day, or its writer gone)
                    with contextlib.suppress(FileNotFoundError):
                        f.unlink()
        return integrity.remove_orphans(self.path, manifest, call)

    def _decide(
        self,
        known: dict[str, dict[str, Any]],
        src: Source,
        sha: str,
        kind: str,
        opts: dict[str, str],
        replace: bool,
    ) -> tuple[str, dict[str, Any] | None]:
        """Decide ``new``, ``unchanged`` or ``replace`` (with the entry replaced) for one input."""
        old = known.get(sha)
        if old is None:
            return "new", None
        changes = option_changes(old, kind, opts)
        if replace:
            return "replace", old
        if not changes:
            return "unchanged", old
        raise IngestError(
            src.shown,
            join_messages(
                f"already ingested (as {old.get('name')!r}, {old.get('ingested_at', '?')[:19]}) "
                "differently: ",
                join_messages(*changes, sep="; "),
                ". Pass ",
                Hint("replace", True, action=False),
                " to re-read it this way (its rows from the earlier read are replaced), or read "
                "it as before",
            ),
        )

    def ingest(
        self,
        kind: str,
        paths: str | Path | Iterable[str | Path],
        *,
        cluster: str | None = None,
        tz: str | None = None,
        strict: bool = False,
        progress: Callable[[Path], None] | None = None,
        executor: Any = None,
        replace: bool = False,
        observed_at: datetime | str | None = None,
        wait_s: float = 0.0,
        **options: Any,
    ) -> list[IngestOutcome]:
        """Read inputs with the reader for ``kind`` and add their rows.

        Parameters
        ----------
        kind : str
            A key of :data:`reliability.ingest.READERS` (``slurm``, ``kernel``, ``dcgm``, ...).
        paths : str or Path or iterable of str or Path
            One path or several; ``-`` reads standard input (spooled to a temp file inside the
            Dataset, recorded as ``<stdin>``).
        cluster, tz : str or None
            Passed to the reader (see each reader for when they are needed).
        strict : bool
            Raise :class:`IngestError` (and write nothing for that input) if any row would be
            quarantined.
        progress : callable or None
            Called with each path before it is read (after it is read, with an executor).
        executor : Executor or None
            A :class:`reliability.parallel.Executor`: one task per input, each writing its own
            parts; the manifest is written once at the end (same invariants).
        replace : bool
            Re-read inputs already ingested (e.g. with a corrected ``tz``) and replace their rows;
            without it, an input ingested with other options is refused.
        observed_at : datetime or str or None
            When the inputs were exported [UTC; aware, or ISO 8601 with an offset]: attempts and
            node-state intervals still open in them are open at that time ("now" in reports). A
            timestamp in an input after it is refused. None: the latest time in each input, said
            in its notes when something in it is still open (see
            :mod:`reliability.store.observation`).
        wait_s : float
            If another process is writing the Dataset, wait up to this long for it to finish
            [s] (0: refuse at once with :class:`~reliability.errors.DatasetLockedError`).
        options : object
            Other reader options (``fields=``, ``node=``, ``year=``, ``boot_time=``,
            ``window_start=``, ``window_end=``...).

        Returns
        -------
        list of IngestOutcome
            One :class:`IngestOutcome` per input; an input already recorded with the same sha256,
            kind and options is ``unchanged``. Inputs read before an error stay committed.
        """
        if observed_at is not None:
            options = {**options, "observed_at": observed_at}
        kwargs = reader_options(kind, cluster, tz, options)
        opts = normalise_options(kwargs)
        plist = [paths] if isinstance(paths, (str, Path)) else list(paths)
        if executor is not None:
            return self._ingest_partitioned(
                kind, plist, kwargs, opts, strict, replace, executor, progress, wait_s
            )
        outcomes: list[IngestOutcome] = []
        started = datetime.now(UTC).isoformat(timespec="microseconds")
        with self._writer(wait_s) as (lock, manifest, call), sources(self.path, plist) as srcs:
            writer = {"pid": os.getpid(), "host": socket.gethostname(), "call": call}
            known = {e["sha256"]: e for e in manifest["inputs"]}
            pending: list[tuple[dict[str, Any], IngestOutcome, str | None]] = []
            try:
                for i, src in enumerate(srcs):
                    if progress is not None:
                        progress(src.path if src.name != STDIN else Path(STDIN))
                    sha, size = hash_source(src)
                    action, old = self._decide(known, src, sha, kind, opts, replace)
                    if action == "unchanged":
                        assert old is not None
                        outcomes.append(_outcome(old, src.shown, "unchanged"))
                        continue
                    result = read_input(kind, src.path, src.shown, kwargs, strict)
                    others = [e for e in known.values() if e["sha256"] != sha]
                    copy = shifted_copy(self.path, others, result.frames)
                    if copy is not None:
                        raise IngestError(src.shown, copy.message(kwargs.get("tz")))
                    entry = new_entry(kind, src.name, src.recorded_path, sha, size, result, opts)
                    entry["order"] = [started, i]
                    _write_parts(self.path, entry, result, writer, src.shown)
                    outcome = _outcome(entry, src.shown, "replaced" if old else "ingested")
                    pending.append((entry, outcome, old["id"] if old else None))
                    known[sha] = entry
                    outcomes.append(outcome)
                    if len(pending) >= MANIFEST_BATCH:
                        batch, pending = pending, []
                        self._commit(lock, batch)
            finally:
                # inputs read before an error stay committed, as if ingested one by one
                if pending:
                    self._commit(lock, pending)
            if lock.notes and outcomes:
                outcomes[0].notes[:0] = lock.notes
        return outcomes

    def _commit(
        self, lock: DatasetLock, batch: list[tuple[dict[str, Any], IngestOutcome, str | None]]
    ) -> None:
        """Add ``batch`` to the manifest on disk, then drop the parts of entries replaced.

        The manifest is re-read under the lock: another writer may have committed since, e.g. after
        the lock file was deleted. An entry for an input another writer committed meanwhile is
        dropped (its parts removed) and its outcome becomes ``unchanged``.
        """
        try:
            lock.ensure_held()
            current = self._load() or empty_manifest()
            index = {e["sha256"]: i for i, e in enumerate(current["inputs"])}
            superseded: list[dict[str, Any]] = []
            dropped: list[tuple[dict[str, Any], IngestOutcome]] = []
            for entry, outcome, replaces in batch:
                i = index.get(entry["sha256"])
                if i is None:
                    index[entry["sha256"]] = len(current["inputs"])
                    current["inputs"].append(entry)
                elif replaces is not None and current["inputs"][i]["id"] == replaces:
                    superseded.append(current["inputs"][i])
                    current["inputs"][i] = entry
                else:
                    dropped.append((entry, outcome))
            if len(dropped) < len(batch):
                write_manifest(self.path, current)
        except BaseException as exc:
            remove_parts([self.path / p["file"] for e, _, _ in batch for p in e["parts"].values()])
            if isinstance(exc, OSError):
                raise DatasetError(
                    f"{self.path}: could not write the manifest ({exc}): the {len(batch)} input(s) "
                    "read since the last commit were not committed (their parts were removed); "
                    "the Dataset is as it was before them"
                ) from exc
            raise
        self._cache = None
        for entry, outcome in dropped:
            remove_parts([self.path / p["file"] for p in entry["parts"].values()])
            outcome.status = "unchanged"
            outcome.notes.append("another process committed the same input meanwhile: kept that")
        for old in superseded:
            remove_parts([part_path(self.path, p["file"]) for p in old["parts"].values()])

    def _ingest_partitioned(
        self,
        kind: str,
        paths: list[str | Path],
        kwargs: dict[str, Any],
        opts: dict[str, str],
        strict: bool,
        replace: bool,
        executor: Any,
        progress: Callable[[Path], None] | None,
        wait_s: float = 0.0,
    ) -> list[IngestOutcome]:
        """Ingest with one task per input on ``executor``.

        Each task reads its file and writes its own parts; the manifest is written once, at the end,
        with every input that succeeded.
        """
        outcomes: dict[int, IngestOutcome] = {}
        started = datetime.now(UTC).isoformat(timespec="microseconds")
        with self._writer(wait_s) as (lock, manifest, call), sources(self.path, paths) as srcs:
            writer = {"pid": os.getpid(), "host": socket.gethostname(), "call": call}
            known = {e["sha256"]: e for e in manifest["inputs"]}
            todo: list[tuple[int, Source, str, int, str | None]] = []
            seen: dict[str, int] = {}
            for i, src in enumerate(srcs):
                sha, size = hash_source(src)
                if sha in seen:  # the same content twice in one call
                    outcomes[i] = IngestOutcome(
                        src.shown,
                        "unchanged",
                        sha,
                        0,
                        0,
                        0,
                        notes=[f"same content as input {seen[sha] + 1} of this call"],
                    )
                    continue
                action, old = self._decide(known, src, sha, kind, opts, replace)
                if action == "unchanged":
                    assert old is not None
                    outcomes[i] = _outcome(old, src.shown, "unchanged")
                    continue
                seen[sha] = i
                todo.append((i, src, sha, size, old["id"] if old else None))
            names = [f"{i:06d}-{src.name}" for i, src, *_ in todo]
            args = [
                (
                    str(self.path),
                    kind,
                    str(src.path),
                    src.name,
                    src.recorded_path,
                    src.shown,
                    sha,
                    size,
                    kwargs,
                    opts,
                    strict,
                    writer,
                    [started, i],
                )
                for i, src, sha, size, _ in todo
            ]
            by_name = {n: t for n, t in zip(names, todo, strict=True)}
            done, failures = executor.map(
                _ingest_task,
                args,
                names,
                progress=(lambda n: progress(by_name[n][1].path)) if progress else None,
            )
            batch = []
            copies: list[tuple[str, str]] = []  # (input, refusal)
            accepted = [e for e in known.values() if e["sha256"] not in seen]
            for name in names:
                if name not in done:
                    continue
                i, src, _sha, _size, replaces = by_name[name]
                entry = done[name]
                copy = shifted_copy(self.path, accepted, _part_tables(self.path, entry))
                if copy is not None:  # a shifted copy of an input: nothing of it is committed
                    remove_parts([self.path / p["file"] for p in entry["parts"].values()])
                    copies.append((src.shown, copy.message(kwargs.get("tz"))))
                    continue
                accepted.append(entry)
                outcome = _outcome(entry, src.shown, "replaced" if replaces else "ingested")
                outcomes[i] = outcome
                batch.append((entry, outcome, replaces))
            if batch:
                self._commit(lock, batch)
            if lock.notes and outcomes:
                outcomes[min(outcomes)].notes[:0] = lock.notes
        if copies:
            raise IngestError(
                copies[0][0],
                join_messages(
                    f"{len(copies)} of {len(todo)} input(s) refused (the others are committed): ",
                    join_messages(*(c[1] for c in copies[:3]), sep="; "),
                ),
            )
        if failures:
            first = by_name[failures[0].name][1].shown
            raise IngestError(
                first,
                join_messages(
                    f"{len(failures)} of {len(todo)} input(s) failed (the others are committed): ",
                    join_messages(*(f.message for f in failures[:3]), sep="; "),
                ),
            )
        return [outcomes[i] for i in sorted(outcomes)]

    # -- reading -------------------------------------------------------------------------
    def _check(self, table: str, part: dict[str, Any]) -> None:
        """Size, footer row count and sha256 of a part, once per file version per instance."""
        path = part_path(self.path, part.get("file"))
        try:
            st = path.stat()
        except FileNotFoundError:
            st = None
        if st is not None and (part["file"], st.st_size, st.st_mtime_ns) in self._checked:
            return
        check_part(self.path, table, part)
        assert st is not None
        self._checked.add((part["file"], st.st_size, st.st_mtime_ns))

    def checked_parts(self, table: str) -> list[tuple[int, str, Path]]:
        """Check a table's parts (:meth:`_check`: once per file version) and list them.

        Parameters
        ----------
        table : str
            A canonical table.

        Returns
        -------
        list of (int, str, Path)
            Per input holding the table, in manifest order: its position, its kind, its part.

        Raises
        ------
        DatasetDamagedError
            Naming a part whose size, row count or sha256 differs from the manifest.
        """
        found: list[tuple[int, str, Path]] = []
        for i, e in enumerate(self.manifest["inputs"]):
            part = e["parts"].get(table)
            if part is not None:
                self._check(table, part)
                found.append((i, e["kind"], part_path(self.path, part["file"])))
        return found

    def scan(self, table: str, *, clusters: Sequence[str] | None = None) -> pl.LazyFrame:
        """Scan one table lazily, overlapping inputs merged by data (see :mod:`reliability.store.merge`).

        Each part's size, footer row count and sha256 are checked against the manifest first.

        Parameters
        ----------
        table : str
            A canonical table (``jobs``, ``job_steps``, ``health_events``, ``node_states``,
            ``quarantine``, ...).
        clusters : sequence of str, optional
            Only these clusters' rows, kept in each part before the parts are merged (every
            merge rule matches rows of one cluster, so the rows are those of the whole merged
            table's with these clusters, in the same order; parquet statistics let the scan
            skip the row groups of other clusters). Needs a ``cluster`` column.

        Returns
        -------
        polars.LazyFrame
            The merged table (empty with the canonical schema when no input has it).

        Raises
        ------
        ReliabilityError
            For an unknown table.
        DatasetDamagedError
            Naming a part whose size, row count or sha256 differs from the manifest.
        """
        spec = schema.TABLES.get(table)
        if spec is None:
            raise ReliabilityError(
                f"unknown table {table!r}; expected one of {sorted(schema.TABLES)}"
            )
        if clusters is not None and "cluster" not in spec.schema:
            raise ReliabilityError(f"table {table!r} has no cluster column to select clusters by")
        found = self.checked_parts(table)
        if not found:
            return spec.empty().lazy()

        # one scan of all the parts (a scan per part makes a plan of thousands of nodes when
        # every node's kernel log is an input); the file path gives each row its input
        files = [str(f) for _, _, f in found]
        merged = len(files) > 1 and table != "quarantine"
        lf = pl.scan_parquet(files, include_file_paths=_PATH if merged else None)
        if clusters is not None:
            lf = lf.filter(
                pl.col("cluster").is_in(pl.Series(list(clusters), dtype=pl.String).implode())
            )
        if not merged:
            return lf
        path = pl.col(_PATH)
        lf = lf.with_columns(
            path.replace_strict(
                {f: i for f, (i, _, _) in zip(files, found, strict=True)}, return_dtype=pl.UInt32
            ).alias(merge.INPUT),
            path.replace_strict(
                {
                    f: k not in merge.SNAPSHOT_KINDS
                    for f, (_, k, _) in zip(files, found, strict=True)
                },
                return_dtype=pl.Boolean,
            ).alias(merge.HISTORY),
        ).drop(_PATH)
        if table == "jobs":  # (merged and renumbered, the host lists moved once)
            return merge.merge_jobs(lf).select(list(spec.schema))
        lf = merge.merge_rows(lf, table)
        if table == "node_states":
            if sum(kind in merge.SNAPSHOT_KINDS for _, kind, _ in found) > 1:
                lf = merge.reconcile_snapshots(lf)  # (scontrol and sinfo -R of one time)
            if len({kind in merge.SNAPSHOT_KINDS for _, kind, _ in found}) == 2:
                lf = merge.reconcile_node_states(lf)
        elif table == "health_events":
            views = [i for i, kind, _ in found if kind in merge.NODE_STATE_KINDS]
            if len(views) > 1:
                lf = merge.reconcile_reason_events(lf, views)
        return lf.select(list(spec.schema))

    def clusters(self, table: str = "jobs") -> list[str]:
        """List the clusters a table holds rows of, read from its parts without merging them.

        Merging overlapping inputs never adds or removes a cluster (two rows merge only within
        one cluster), so this is the merged table's set of clusters at the cost of reading one
        column: :meth:`scan` would merge a fleet's whole table first (50M attempts: minutes and
        GiBs).

        Parameters
        ----------
        table : str
            A canonical table with a ``cluster`` column.

        Returns
        -------
        list of str
            The clusters, sorted.

        Raises
        ------
        ReliabilityError
            For an unknown table or one without a cluster column.
        DatasetDamagedError
            Naming a part whose size, row count or sha256 differs from the manifest.
        """
        spec = schema.TABLES.get(table)
        if spec is None or "cluster" not in spec.schema:
            raise ReliabilityError(f"table {table!r}: not a canonical table with a cluster column")
        files = [str(f) for _, _, f in self.checked_parts(table)]
        if not files:
            return []
        got = pl.scan_parquet(files).select(pl.col("cluster").unique()).collect()
        return sorted(got.get_column("cluster").drop_nulls().to_list())

    def observation_window(self) -> tuple[datetime | None, datetime | None]:
        """Return the window the Dataset's inputs observed [UTC]: earliest start, latest end.

        Each input records its own window (see :class:`reliability.ingest.ReadResult`); models
        censor attempts and intervals still open at the end of it (``observation_end``).

        Returns
        -------
        (datetime or None, datetime or None)
            The window's start and end (None where no input records one).
        """
        lo, hi = [], []
        for i in self.inputs:
            obs = i.get("observation") or {}
            if obs.get("from"):
                lo.append(datetime.fromisoformat(obs["from"]))
            if obs.get("until"):
                hi.append(datetime.fromisoformat(obs["until"]))
        return (min(lo) if lo else None, max(hi) if hi else None)

    @property
    def observation_end(self) -> datetime | None:
        """When the Dataset's observation ends [UTC] (latest input's end; None if empty)."""
        return self.observation_window()[1]

    @property
    def observation_end_basis(self) -> str:
        """Say where the observation end comes from: how the input that sets it found it.

        E.g. ``"latest timestamp in the input (sacct.psv)"`` or ``"the export time given at
        ingest (sacct.psv)"``; ``""`` for an empty Dataset.
        """
        end = self.observation_end
        if end is None:
            return ""
        for i in self.inputs:
            obs = i.get("observation") or {}
            if obs.get("until") and datetime.fromisoformat(obs["until"]) == end:
                return f"{obs.get('basis') or 'unknown'} ({i.get('name')})"
        return ""

    def table(self, table: str) -> pl.DataFrame:
        """Read one table, collected (see :meth:`scan`).

        Parameters
        ----------
        table : str
            A canonical table.

        Returns
        -------
        polars.DataFrame
            The merged table.
        """
        return self.scan(table).collect()

    @property
    def jobs(self) -> pl.DataFrame:
        """Job attempts (one row per attempt)."""
        return self.table("jobs")

    @property
    def job_steps(self) -> pl.DataFrame:
        """Job steps (``.batch``, ``.extern``, ``.0``...)."""
        return self.table("job_steps")

    @property
    def health_events(self) -> pl.DataFrame:
        """Health events (Xids, DCGM counters, tickets, health checks...)."""
        return self.table("health_events")

    @property
    def node_states(self) -> pl.DataFrame:
        """Out-of-service intervals of nodes."""
        return self.table("node_states")

    @property
    def component_failures(self) -> pl.DataFrame:
        """Component failure and repair times."""
        return self.table("component_failures")

    @property
    def inventory(self) -> pl.DataFrame:
        """Components and their in-service intervals."""
        return self.table("inventory")

    @property
    def quarantine(self) -> pl.DataFrame:
        """Every input row that was not kept, with the reason."""
        return self.table("quarantine")

    def summary(self) -> DatasetSummary:
        """Summarise the Dataset.

        Returns
        -------
        DatasetSummary
            Row counts, time span, clusters, nodes, accelerators, inputs and the quarantine (reasons
            with counts and their first rows).
        """
        return summarise(self)

    # -- integrity -----------------------------------------------------------------------
    def verify(self) -> VerifyReport:
        """Check every part against the manifest.

        Returns
        -------
        VerifyReport
            A :class:`VerifyReport`: each part's size, sha256, footer row count and footer identity
            (``report.ok``, ``report.problems``), and part files no entry names.
        """
        return integrity.verify(self)

    def repair(self) -> RepairReport:
        """Repair the manifest (holds the writer lock).

        Rebuild a lost or unreadable manifest from the parts, or drop the inputs whose parts are
        damaged.

        Returns
        -------
        RepairReport
            A :class:`RepairReport`: inputs kept, dropped (with the command that ingests each again)
            and left out as incomplete.
        """
        return integrity.repair(self)

    def __repr__(self) -> str:
        return f"Dataset({str(self.path)!r}, inputs={len(self.inputs)})"


def _part_tables(root: Path, entry: dict[str, Any]) -> dict[str, pl.DataFrame]:
    """Read back the tables a shifted copy is looked for in from an input's written parts."""
    return {
        t: pl.read_parquet(root / p["file"])
        for t, p in entry["parts"].items()
        if t in ("jobs", "node_states")
    }


def _ingest_task(
    root: str, kind: str, path: str, name: str, recorded: str, shown: str, sha: str, size: int,
    kwargs: dict[str, Any], opts: dict[str, str], strict: bool, writer: dict[str, Any],
    order: list[Any],
) -> dict[str, Any]:  # fmt: skip
    """Run the worker side of a partitioned ingest: read one input, write its parts.

    Footers name the parent as the writer; returns its manifest entry (a plain dict: no frames
    travel).
    """
    result = read_input(kind, Path(path), shown, kwargs, strict)
    entry = new_entry(kind, name, recorded, sha, size, result, opts)
    entry["order"] = order
    return _write_parts(Path(root), entry, result, writer, shown)


def _write_parts(
    root: Path, entry: dict[str, Any], result: Any, writer: dict[str, Any], shown: str
) -> dict[str, Any]:
    """:func:`write_parts`, with a write failure (disk full...) explained in the user's terms."""
    try:
        return write_parts(root, entry, result, writer)
    except OSError as exc:
        raise DatasetError(
            f"{shown}: could not write its rows into {root} ({exc}); nothing of this input was "
            "committed (inputs committed before it are kept)"
        ) from exc
