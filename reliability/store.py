"""The Dataset: a folder of parquet tables, a manifest, and the quarantine (DESIGN.md §3).

Layout::

    DIR/manifest.json                   schema version, every ingested input and its counts
    DIR/<table>/part-<sha16>.parquet    the rows one input contributed to a table
    DIR/quarantine/part-<sha16>.parquet the rows of that input that were not kept

The manifest is the commit point: parts are written first (temp file + rename), then the
manifest (temp file + rename, every 200 inputs and at the end of an ingest call), so a crash
leaves the previous state readable and any part not in the manifest is ignored (and removed
by the next ingest). Ingesting a file whose
sha256 is already recorded is a no-op. One writer at a time (a ``.lock`` file enforces it).

Reading concatenates the parts in ingest order and drops rows repeated across inputs by each
table's natural key (``reliability.schema.TABLES[t].key``), keeping the latest (an export taken while a job ran, then one taken after it
ended, give one row with the final state); job attempts are renumbered 0, 1, ... by start
time across all inputs.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from reliability import schema, taxonomy
from reliability._atomic import write_json_atomic, write_parquet_atomic
from reliability._version import __version__
from reliability.errors import IngestError, ReliabilityError
from reliability.ingest import READERS, ReadResult

__all__ = ["Dataset", "DatasetSummary", "IngestOutcome"]

MANIFEST = "manifest.json"
#: inputs per manifest write when many files are ingested in one call
MANIFEST_BATCH = 200
FORMAT = "reliability-dataset"
DATA_TABLES = (
    "jobs",
    "job_steps",
    "health_events",
    "node_states",
    "component_failures",
    "inventory",
)


def _sha256(path: Path) -> tuple[str, int]:
    h = hashlib.sha256()
    size = 0
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


@dataclass
class IngestOutcome:
    """What happened to one input: ``ingested`` (with its counts) or ``unchanged``."""

    path: str
    status: str
    sha256: str
    rows_read: int
    rows_kept: int
    rows_quarantined: int
    rows_out: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        """One-line summary for the CLI."""
        if self.status == "unchanged":
            return f"{self.path}: already ingested (sha256 {self.sha256[:12]}), nothing to do"
        out = ", ".join(f"{k}={v}" for k, v in self.rows_out.items())
        return (
            f"{self.path}: read {self.rows_read}, kept {self.rows_kept}, "
            f"quarantined {self.rows_quarantined} ({out})"
        )


@dataclass
class DatasetSummary:
    """Overview of a Dataset.

    Attributes
    ----------
    summary : one row per table: ``table``, ``rows``
    inputs : one row per input: ``name``, ``kind``, ``rows_read``, ``rows_kept``, ``rows_quarantined``
    clusters : cluster names seen
    n_nodes : distinct node names in jobs, health events and node states
    first, last : earliest and latest time in the data [UTC]
    accelerators_per_node : most accelerators seen on one node of one job attempt
    accelerator_hours : accelerator-hours of all started attempts [h]
    """

    summary: pl.DataFrame
    inputs: pl.DataFrame
    clusters: list[str]
    n_nodes: int
    first: datetime | None
    last: datetime | None
    accelerators_per_node: int
    accelerator_hours: float

    def __str__(self) -> str:
        span = (
            f"{self.first:%Y-%m-%d %H:%M} .. {self.last:%Y-%m-%d %H:%M} UTC"
            if self.first
            else "empty"
        )
        head = [
            f"clusters: {', '.join(self.clusters) or '-'}",
            f"time span: {span}",
            f"nodes: {self.n_nodes}, accelerators per node (max seen): {self.accelerators_per_node}, "
            f"accelerator-hours: {self.accelerator_hours:,.1f}",
            "",
            "rows per table:",
            *(f"  {t:<20} {n:>12,}" for t, n in self.summary.iter_rows()),
            "",
            "inputs (read = kept + quarantined):",
        ]
        for name, kind, r, k, q in self.inputs.iter_rows():
            head.append(f"  {kind:<7} {name:<50} read {r:>10,}  kept {k:>10,}  quarantined {q:>7,}")
        return "\n".join(head)

    def _repr_html_(self) -> str:
        return f"<pre>{_html_escape(str(self))}</pre>"


def _html_escape(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class Dataset:
    """A folder of canonical tables built by ingesting raw logs.

    Parameters
    ----------
    path : the folder; created on first ingest if missing

    Examples
    --------
    >>> ds = Dataset("data/rsc")                                   # doctest: +SKIP
    >>> ds.ingest("slurm", ["sacct-2025-01.psv"], tz="UTC")        # doctest: +SKIP
    >>> ds.jobs.filter(pl.col("state") == "NODE_FAIL")             # doctest: +SKIP
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise ReliabilityError(f"{self.path}: not a directory")

    # -- manifest ------------------------------------------------------------------------
    @property
    def manifest(self) -> dict[str, Any]:
        """The manifest as a dict (a fresh empty one if nothing was ingested yet)."""
        p = self.path / MANIFEST
        if not p.exists():
            return {"format": FORMAT, "schema_version": schema.SCHEMA_VERSION, "inputs": []}
        try:
            m = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ReliabilityError(f"{p}: unreadable manifest: {exc}") from None
        if m.get("format") != FORMAT:
            raise ReliabilityError(f"{p}: not a reliability dataset manifest")
        if m.get("schema_version") != schema.SCHEMA_VERSION:
            raise ReliabilityError(
                f"{p}: schema version {m.get('schema_version')}, this package reads {schema.SCHEMA_VERSION}"
            )
        return m

    @property
    def inputs(self) -> list[dict[str, Any]]:
        """The ingested inputs, in ingest order."""
        return list(self.manifest["inputs"])

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        self.path.mkdir(parents=True, exist_ok=True)
        lock = self.path / ".lock"
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            raise ReliabilityError(
                f"{lock}: another ingest is running (delete the file if no process holds it)"
            ) from None
        try:
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)
            yield
        finally:
            lock.unlink(missing_ok=True)

    # -- writing -------------------------------------------------------------------------
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
        **options: Any,
    ) -> list[IngestOutcome]:
        """Read inputs with the reader for ``kind`` and append their rows.

        Parameters
        ----------
        kind : ``slurm``, ``events``, ``nodes``, ``kernel``, ``dcgm`` or ``health``
        paths : one path or several
        cluster, tz : passed to the reader (see each reader for when they are needed)
        strict : raise :class:`IngestError` (and write nothing for that input) if any row
            would be quarantined
        progress : called with each path before it is read (after it is read, with an executor)
        executor : a :class:`reliability.parallel.Executor`: one task per input, each writing
            its own parts; the manifest is written once at the end (same invariants)
        options : other reader options (``fields=``, ``node=``, ``year=``, ``boot_time=``...)

        Returns
        -------
        one :class:`IngestOutcome` per input; an input already recorded (same sha256) is
        ``unchanged``.
        """
        reader = READERS.get(kind)
        if reader is None:
            raise ReliabilityError(
                f"unknown input kind {kind!r}; expected one of {sorted(READERS)}"
            )
        if isinstance(paths, (str, Path)):
            paths = [paths]
        params = inspect.signature(reader).parameters
        kwargs: dict[str, Any] = {
            k: v for k, v in {"cluster": cluster, "tz": tz}.items() if v is not None
        }
        kwargs.update(options)
        unknown = [k for k in kwargs if k not in params]
        if unknown:
            raise ReliabilityError(f"option {unknown[0]!r} does not apply to {kind!r} inputs")
        needed = [n for n, p in params.items() if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
        missing = [n for n in needed if n not in kwargs]
        if missing:
            raise ReliabilityError(f"{kind!r} inputs need {missing[0]}=")
        if executor is not None:
            return self._ingest_partitioned(
                kind, [Path(p) for p in paths], kwargs, strict, executor, progress
            )
        outcomes: list[IngestOutcome] = []
        with self._lock():
            self._clean_orphans()
            manifest = self.manifest
            known = {i["sha256"]: i for i in manifest["inputs"]}
            pending = 0  # entries appended to `manifest` but not yet written
            try:
                for p in paths:
                    path = Path(p)
                    if progress is not None:
                        progress(path)
                    if not path.is_file():
                        raise IngestError(str(path), "no such file")
                    sha, size = _sha256(path)
                    if sha in known:
                        k = known[sha]
                        outcomes.append(IngestOutcome(str(path), "unchanged", sha, k["rows_read"],
                                                      k["rows_kept"], k["rows_quarantined"]))  # fmt: skip
                        continue
                    result = _read(kind, path, kwargs, strict)
                    entry, outcome = self._commit(kind, path, sha, size, result, kwargs)
                    manifest["inputs"].append(entry)
                    known[sha] = entry
                    outcomes.append(outcome)
                    pending += 1
                    if pending >= MANIFEST_BATCH:
                        self._write_manifest(manifest)
                        pending = 0
            finally:
                # inputs read before an error stay committed, as if ingested one by one
                if pending:
                    self._write_manifest(manifest)
        return outcomes

    def _write_manifest(self, manifest: dict[str, Any]) -> None:
        manifest["package_version"] = __version__
        manifest["updated"] = datetime.now(UTC).isoformat(timespec="seconds")
        write_json_atomic(manifest, self.path / MANIFEST)

    def _commit(
        self,
        kind: str,
        path: Path,
        sha: str,
        size: int,
        result: ReadResult,
        options: dict[str, Any],
    ) -> tuple[dict[str, Any], IngestOutcome]:
        """Write one input's parts; return its manifest entry (the caller records it)."""
        return _write_parts(self.path, kind, path, sha, size, result, options)

    def _ingest_partitioned(
        self,
        kind: str,
        paths: list[Path],
        kwargs: dict[str, Any],
        strict: bool,
        executor: Any,
        progress: Callable[[Path], None] | None,
    ) -> list[IngestOutcome]:
        """One task per input on ``executor``: each reads its file and writes its own parts;
        the manifest is written once, at the end, with every input that succeeded."""
        outcomes: dict[int, IngestOutcome] = {}
        with self._lock():
            self._clean_orphans()
            manifest = self.manifest
            known = {i["sha256"]: i for i in manifest["inputs"]}
            todo, seen = [], set()
            for i, path in enumerate(paths):
                if not path.is_file():
                    raise IngestError(str(path), "no such file")
                sha, size = _sha256(path)
                if sha in known or sha in seen:
                    k = known.get(sha)
                    outcomes[i] = IngestOutcome(str(path), "unchanged", sha, k["rows_read"] if k else 0,
                                                k["rows_kept"] if k else 0, k["rows_quarantined"] if k else 0)  # fmt: skip
                    continue
                seen.add(sha)
                todo.append((i, path, sha, size))
            names = [f"{i:06d}-{p.name}" for i, p, _, _ in todo]
            args = [
                (str(self.path), kind, str(p), sha, size, kwargs, strict)
                for _, p, sha, size in todo
            ]
            done, failures = executor.map(
                _ingest_task, args, names,
                progress=(lambda n: progress(paths[int(n[:6])])) if progress else None,
            )  # fmt: skip
            for (i, _path, _sha, _), name in zip(todo, names, strict=True):
                if name not in done:
                    continue
                entry, outcome = done[name]
                manifest["inputs"].append(entry)
                outcomes[i] = IngestOutcome(**outcome)
            if done:
                self._write_manifest(manifest)
        if failures:
            raise IngestError(
                failures[0].name.split("-", 1)[1],
                f"{len(failures)} of {len(todo)} input(s) failed (the others are committed): "
                + "; ".join(str(f) for f in failures[:3]),
            )
        return [outcomes[i] for i in sorted(outcomes)]

    def _clean_orphans(self) -> None:
        """Remove part files and temp files that no manifest entry refers to (crash leftovers)."""
        if not self.path.exists():
            return
        referenced = {p for i in self.manifest["inputs"] for p in i["parts"].values()}
        for sub in (*DATA_TABLES, "quarantine"):
            d = self.path / sub
            if not d.is_dir():
                continue
            for f in d.iterdir():
                rel = f"{sub}/{f.name}"
                if rel not in referenced and (f.name.startswith(".") or f.name.startswith("part-")):
                    f.unlink(missing_ok=True)

    # -- reading -------------------------------------------------------------------------
    def scan(self, table: str) -> pl.LazyFrame:
        """A lazy frame over one table, deduplicated by its natural key (latest input wins)."""
        spec = schema.TABLES.get(table)
        if spec is None:
            raise ReliabilityError(
                f"unknown table {table!r}; expected one of {sorted(schema.TABLES)}"
            )
        files = [
            self.path / i["parts"][table] for i in self.manifest["inputs"] if table in i["parts"]
        ]
        if not files:
            return spec.empty().lazy()
        lf = pl.concat([pl.scan_parquet(f) for f in files], how="vertical")
        if table == "quarantine":
            return lf
        if len(files) > 1:
            lf = lf.unique(subset=list(spec.key), keep="last", maintain_order=True)
        if table == "jobs" and len(files) > 1:
            lf = (
                lf.with_row_index("__order")
                .sort("cluster", "job_id", "start_time", "submit_time", "__order", nulls_last=True)
                .with_columns(
                    attempt=pl.int_range(pl.len(), dtype=pl.UInt16).over("cluster", "job_id")
                )
                .sort("__order")
                .drop("__order")
            )
        return lf

    def observation_window(self) -> tuple[datetime | None, datetime | None]:
        """The window the Dataset's inputs observed [UTC]: earliest start, latest end.

        Each input records its own window (see :class:`reliability.ingest.ReadResult`); models
        censor attempts and intervals still open at the end of it (``observation_end``).
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

    def table(self, table: str) -> pl.DataFrame:
        """One table, collected (see :meth:`scan`)."""
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
        """Row counts, time span, clusters, nodes, accelerators and quarantine per input."""
        counts = pl.DataFrame(
            {
                "table": [*DATA_TABLES, "quarantine"],
                "rows": [
                    self.scan(t).select(pl.len()).collect().item()
                    for t in (*DATA_TABLES, "quarantine")
                ],
            },
            schema={"table": pl.String, "rows": pl.Int64},
        )
        jobs = self.scan("jobs")
        he = self.scan("health_events")
        ns = self.scan("node_states")
        clusters = (
            pl.concat([jobs.select("cluster"), he.select("cluster"), ns.select("cluster")])
            .unique()
            .collect()
        )
        nodes = (
            pl.concat(
                [
                    jobs.select(pl.col("nodes").explode().alias("node")),
                    he.select("node"),
                    ns.select("node"),
                ]
            )
            .drop_nulls()
            .unique()
            .select(pl.len())
            .collect()
            .item()
        )
        times = (
            pl.concat(
                [
                    jobs.select(pl.col("submit_time").alias("t")),
                    jobs.select(pl.col("end_time").alias("t")),
                    he.select(pl.col("time").alias("t")),
                    ns.select(pl.col("start").alias("t")),
                ]
            )
            .select(pl.col("t").min().alias("first"), pl.col("t").max().alias("last"))
            .collect()
        )
        acc = jobs.select(
            per_node=(pl.col("n_accelerators") / pl.col("n_nodes").clip(lower_bound=1))
            .ceil()
            .max(),
            hours=(
                pl.col("n_accelerators")
                * (pl.col("end_time") - pl.col("start_time")).dt.total_seconds()
            ).sum()
            / 3600.0,
        ).collect()
        inputs = self.inputs
        inp = pl.DataFrame(
            {
                "name": [i["name"] for i in inputs],
                "kind": [i["kind"] for i in inputs],
                "rows_read": [i["rows_read"] for i in inputs],
                "rows_kept": [i["rows_kept"] for i in inputs],
                "rows_quarantined": [i["rows_quarantined"] for i in inputs],
            },
            schema={
                "name": pl.String,
                "kind": pl.String,
                "rows_read": pl.Int64,
                "rows_kept": pl.Int64,
                "rows_quarantined": pl.Int64,
            },
        )
        return DatasetSummary(
            summary=counts,
            inputs=inp,
            clusters=sorted(clusters.get_column("cluster").to_list()),
            n_nodes=int(nodes),
            first=times.item(0, "first"),
            last=times.item(0, "last"),
            accelerators_per_node=int(acc.item(0, "per_node") or 0),
            accelerator_hours=float(acc.item(0, "hours") or 0.0),
        )

    def __repr__(self) -> str:
        return f"Dataset({str(self.path)!r}, inputs={len(self.inputs)})"


def _iso(t: datetime | None) -> str | None:
    return None if t is None else t.isoformat()


def _read(kind: str, path: Path, kwargs: dict[str, Any], strict: bool) -> ReadResult:
    """Read one input with the reader for ``kind``; with ``strict``, refuse an input that
    would quarantine anything (naming its first bad line)."""
    result = READERS[kind](path, **kwargs)
    if strict and result.rows_quarantined:
        first = result.quarantine.row(0, named=True)
        raise IngestError(
            str(path),
            f"{result.rows_quarantined} row(s) would be quarantined (--strict); first: {first['reason']}",
            line=first["line_no"],
        )
    return result


def _ingest_task(
    root: str, kind: str, path: str, sha: str, size: int, kwargs: dict[str, Any], strict: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Worker side of a partitioned ingest: read one input, write its parts, return its
    manifest entry and outcome (plain dicts: no frames travel back)."""
    from dataclasses import asdict

    result = _read(kind, Path(path), kwargs, strict)
    entry, outcome = _write_parts(Path(root), kind, Path(path), sha, size, result, kwargs)
    return entry, asdict(outcome)


def _write_parts(
    root: Path,
    kind: str,
    path: Path,
    sha: str,
    size: int,
    result: ReadResult,
    options: dict[str, Any],
) -> tuple[dict[str, Any], IngestOutcome]:
    """Write one input's parts under ``root``; return its manifest entry and outcome."""
    part_id = sha[:16]
    parts: dict[str, str] = {}
    for table, frame in result.tables.items():
        rel = f"{table}/part-{part_id}.parquet"
        write_parquet_atomic(frame, root / rel)
        parts[table] = rel
    if result.rows_quarantined:
        rel = f"quarantine/part-{part_id}.parquet"
        write_parquet_atomic(result.quarantine, root / rel)
        parts["quarantine"] = rel
    rows_out = {t: f.height for t, f in result.tables.items()}
    entry = {
        "id": part_id,
        "kind": kind,
        "name": path.name,
        "path": str(path.resolve()),
        "size": size,
        "sha256": sha,
        "rows_read": result.rows_read,
        "rows_kept": result.rows_kept,
        "rows_quarantined": result.rows_quarantined,
        "rows_out": rows_out,
        "parts": parts,
        "options": {k: str(v) for k, v in options.items()},
        "notes": result.notes,
        "observation": {
            "from": _iso(result.observed_from),
            "until": _iso(result.observed_until),
            "basis": result.observation_basis,
        },
        "ingested_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "package_version": __version__,
        "taxonomy_version": taxonomy.TAXONOMY_VERSION,
    }
    return entry, IngestOutcome(
        str(path),
        "ingested",
        sha,
        result.rows_read,
        result.rows_kept,
        result.rows_quarantined,
        rows_out,
        list(result.notes),
    )
