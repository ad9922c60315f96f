"""Part files: the rows one input contributed to one table, and the manifest entry they carry.

Every part is ``DIR/<table>/part-<sha16>-<token>.parquet`` (``sha16``: the input's sha256
prefix; ``token``: unique per write, so re-reading an input never overwrites a committed
part). Its parquet footer holds, under the key ``reliability.part``, a JSON copy of the
input's manifest entry (name, path, sha256, kind, options, counts, observation window,
notes, ingest time, package version, the list of its sibling parts with their row counts)
and who wrote it (pid, host), and is sealed with the part's own sha256 (``content_sha256``:
of the whole file with those 64 characters read as ``0``), so a part proves itself intact
without the manifest. ``reliability repair`` rebuilds a lost or edited manifest from these.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from reliability import schema, taxonomy
from reliability._atomic import file_sha256, write_parquet_atomic
from reliability._version import __version__
from reliability.errors import DatasetDamagedError, Hinted
from reliability.ingest import ReadResult
from reliability.store.footer import FooterError, footer_span, read_footer, read_num_rows

__all__ = [
    "PART_KEY",
    "check_part",
    "entry_notes",
    "new_entry",
    "notes_of",
    "part_files",
    "part_path",
    "part_path_problem",
    "read_part_meta",
    "remove_parts",
    "seal_problem",
    "write_parts",
]

#: parquet key-value metadata key of a part's description
PART_KEY = "reliability.part"
PART_FORMAT = "reliability-part"
DATA_TABLES = (
    "jobs",
    "job_steps",
    "health_events",
    "node_states",
    "component_failures",
    "inventory",
)
PART_DIRS = (*DATA_TABLES, "quarantine")
#: key of a part's own sha256 in its description (see :func:`seal_problem`)
SEAL_KEY = "content_sha256"
_UNSEALED = "0" * 64
#: what :func:`seal_problem` returns for a part written without a seal
UNSEALED = "unsealed"


def _iso(t: datetime | None) -> str | None:
    return None if t is None else t.isoformat()


def writer_identity() -> dict[str, Any]:
    """Say who is writing: pid, host and when this process started writing.

    Returns
    -------
    dict of str to object
        ``pid``, ``host``, ``at`` [UTC, ISO 8601].
    """
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def entry_notes(notes: list[str]) -> dict[str, list[Any]]:
    """Return a manifest entry's notes: the plain text, and the structured parts beside it.

    ``notes`` is each note in the library's spelling; ``note_parts`` keeps a
    :class:`~reliability.errors.Hinted` note's text and hints (:meth:`~reliability.errors.Hinted.to_json`;
    None for a plain note), so a pipeline rerun or the CLI renders them in its own terms.

    Parameters
    ----------
    notes : list of str
        The reader's (and store's) notes on an input.

    Returns
    -------
    dict
        ``{"notes": [...], "note_parts": [...]}``.
    """
    return {
        "notes": [str(n) for n in notes],
        "note_parts": [n.to_json() if isinstance(n, Hinted) else None for n in notes],
    }


def notes_of(entry: dict[str, Any]) -> list[str]:
    """Return a manifest entry's notes, a structured one as a :class:`~reliability.errors.Hinted` message.

    Parameters
    ----------
    entry : dict
        A manifest entry (one written before ``note_parts`` existed gives its plain notes).

    Returns
    -------
    list of str
        The notes.
    """
    notes = list(entry.get("notes") or [])
    parts = entry.get("note_parts") or []
    return [
        Hinted.from_json(parts[i]) if i < len(parts) and parts[i] is not None else n
        for i, n in enumerate(notes)
    ]


def new_entry(
    kind: str,
    name: str,
    path: str,
    sha: str,
    size: int,
    result: ReadResult,
    options: dict[str, str],
) -> dict[str, Any]:
    """Make the manifest entry of one input (its ``parts`` are filled by :func:`write_parts`).

    Parameters
    ----------
    kind : str
        The input kind.
    name : str
        The input's file name (``<stdin>`` for standard input).
    path : str
        The input's absolute path as given.
    sha, size : str, int
        The input's sha256 hex digest and size [bytes].
    result : ReadResult
        What the reader returned: row counts, notes and observation window are recorded.
    options : dict of str to str
        The reader options (:func:`~reliability.store.manifest.normalise_options`).

    Returns
    -------
    dict of str to object
        The entry, with a fresh id and empty ``parts``.
    """
    return {
        "id": f"{sha[:16]}-{os.urandom(4).hex()}",
        "kind": kind,
        "name": name,
        "path": path,
        "size": size,
        "sha256": sha,
        "rows_read": result.rows_read,
        "rows_kept": result.rows_kept,
        "rows_quarantined": result.rows_quarantined,
        "rows_out": {t: f.height for t, f in result.frames.items()},
        "parts": {},
        "options": options,
        **entry_notes(result.notes),
        "observation": {
            "from": _iso(result.observed_from),
            "until": _iso(result.observed_until),
            "basis": result.observation_basis,
        },
        "ingested_at": datetime.now(UTC).isoformat(timespec="microseconds"),
        "package_version": __version__,
        "taxonomy_version": taxonomy.TAXONOMY_VERSION,
    }


def write_parts(
    root: Path, entry: dict[str, Any], result: ReadResult, writer: dict[str, Any]
) -> dict[str, Any]:
    """Write one input's parts under ``root`` and record them in ``entry``.

    Each part's footer carries the entry (without the parts' own hashes, which cannot be inside
    the file they hash). If a write fails, the parts already written for this input are removed
    and the error is raised: nothing of the input remains.

    Parameters
    ----------
    root : Path
        The Dataset folder.
    entry : dict of str to object
        The input's manifest entry (:func:`new_entry`), updated in place.
    result : ReadResult
        The tables (and quarantine) to write.
    writer : dict of str to object
        :func:`writer_identity`, recorded in each footer.

    Returns
    -------
    dict of str to object
        ``entry``, its ``parts`` filled (file, rows, bytes, sha256 per table).
    """
    frames = {t: f for t, f in result.frames.items()}
    if result.rows_quarantined:
        frames["quarantine"] = result.quarantine
    files = {t: f"{t}/part-{entry['id']}.parquet" for t in frames}
    entry["parts"] = {t: {"file": files[t], "rows": frames[t].height} for t in frames}
    meta = {k: v for k, v in entry.items() if k != "parts"}
    meta["parts"] = {t: {"file": files[t], "rows": frames[t].height} for t in frames}
    written: list[Path] = []
    try:
        for table, frame in frames.items():
            desc = {
                "format": PART_FORMAT,
                "version": 1,
                "table": table,
                "rows": frame.height,
                "input": meta,
                "writer": writer,
            }
            dest = root / files[table]
            desc[SEAL_KEY] = _UNSEALED
            # streamed: the compact columns (node lists) are cast batch by batch, never
            # materialised as strings all at once
            size, sha = write_parquet_atomic(
                schema.canonical(frame.lazy(), table),
                dest,
                metadata={PART_KEY: json.dumps(desc, ensure_ascii=False)},
                finish=_seal,
            )
            written.append(dest)
            entry["parts"][table].update(bytes=size, sha256=sha)
    except BaseException:
        remove_parts(written)
        raise
    return entry


def _seal_marker(digest: str) -> bytes:
    """Return the bytes of the seal in a part's footer (as the JSON of its description has it)."""
    return json.dumps({SEAL_KEY: digest})[1:-1].encode()


def _hash_with_hole(path: Path, at: int, n: int) -> str:
    """Hash a file with its bytes ``[at, at + n)`` read as ``0`` characters."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        pos = 0
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            lo, hi = max(at - pos, 0), min(at + n - pos, len(chunk))
            if lo < hi:
                chunk = chunk[:lo] + b"0" * (hi - lo) + chunk[hi:]
            h.update(chunk)
            pos += len(chunk)
    return h.hexdigest()


def _seal(path: Path) -> None:
    """Write the part's own sha256 into its footer (the placeholder the description holds).

    The digest is of the whole file with the 64 characters of the digest itself read as ``0``:
    data pages, schema, statistics, row count and the description (counts, input, table) are
    all covered, so a part proves itself intact without the manifest (:func:`seal_problem`).
    The digest has the placeholder's length: no offset in the file moves.
    """
    start, footer = footer_span(path)
    marker = _seal_marker(_UNSEALED)
    at = footer.rfind(marker)
    if at < 0 or footer.count(marker) != 1:
        raise ValueError(f"{path}: the seal placeholder is not once in the footer")
    value_at = start + at + len(marker) - 65  # the 64 characters between the quotes
    digest = _hash_with_hole(path, value_at, 64)
    with open(path, "r+b") as fh:
        fh.seek(value_at)
        fh.write(digest.encode())


def seal_problem(path: Path, meta: dict[str, Any]) -> str | None:
    """Say whether a part is as its writer sealed it (its own sha256 in its footer).

    Parameters
    ----------
    path : Path
        A part file.
    meta : dict of str to object
        Its description (:func:`read_part_meta`).

    Returns
    -------
    str or None
        None if the part's content matches its seal; ``UNSEALED`` if it carries no seal (written
        before 0.9, it cannot prove itself intact); else what differs.
    """
    digest = meta.get(SEAL_KEY)
    if not isinstance(digest, str) or len(digest) != 64 or digest == _UNSEALED:
        return UNSEALED
    try:
        start, footer = footer_span(path)
    except (FooterError, OSError) as exc:
        return f"unreadable parquet footer ({exc})"
    marker = _seal_marker(digest)
    at = footer.rfind(marker)
    if at < 0:
        return "its seal is not where its writer put it"
    actual = _hash_with_hole(path, start + at + len(marker) - 65, 64)
    if actual != digest:
        return (
            f"its content no longer matches the sha256 its footer was sealed with "
            f"({actual[:12]}..., sealed {digest[:12]}...): damaged or changed"
        )
    return None


def remove_parts(paths: list[Path]) -> None:
    """Delete part files (missing ones are fine).

    Parameters
    ----------
    paths : list of Path
        The part files.
    """
    for p in paths:
        p.unlink(missing_ok=True)


def part_files(root: Path) -> list[Path]:
    """List every ``part-*.parquet`` file under the table folders of a Dataset.

    Parameters
    ----------
    root : Path
        The Dataset folder.

    Returns
    -------
    list of Path
        Sorted within each table folder.
    """
    out: list[Path] = []
    for sub in PART_DIRS:
        d = root / sub
        if d.is_dir():
            out += sorted(
                p for p in d.iterdir() if p.name.startswith("part-") and p.suffix == ".parquet"
            )
    return out


def part_path_problem(file: object) -> str | None:
    """Say what is wrong with a part path recorded in a manifest or a part footer.

    A part path is ``<table>/part-<id>.parquet``, relative to the Dataset folder; an absolute
    path or one with a ``..`` would make a reader (or a repair, or the removal of a replaced
    input's parts) follow it out of the folder.

    Parameters
    ----------
    file : object
        The recorded path (``parts.<table>.file``).

    Returns
    -------
    str or None
        The problem in words (``part path '../x' escapes the Dataset folder``), or None.
    """
    if not isinstance(file, str) or not file:
        return f"part path {file!r} is not a file name"
    posix = PurePosixPath(file)
    if posix.is_absolute() or PureWindowsPath(file).anchor or ".." in posix.parts or "\\" in file:
        return f"part path {file!r} escapes the Dataset folder"
    if (
        len(posix.parts) != 2
        or posix.parts[0] not in PART_DIRS
        or not (posix.name.startswith("part-") and posix.suffix == ".parquet")
    ):
        return f"part path {file!r} is not <table>/part-<id>.parquet"
    return None


def part_path(root: Path, file: object) -> Path:
    """Return the file a recorded part path names, refusing one outside the Dataset folder.

    Parameters
    ----------
    root : Path
        The Dataset folder.
    file : object
        The recorded path (see :func:`part_path_problem`).

    Returns
    -------
    Path
        ``root / file``.

    Raises
    ------
    DatasetDamagedError
        Naming the path and what to run (``reliability verify`` / ``repair``), if it escapes the
        folder or is not a part path.
    """
    problem = part_path_problem(file)
    if problem is not None:
        raise DatasetDamagedError(
            f"{root}: {problem} (nothing was read there); run `reliability verify {root}` for "
            f"details and `reliability repair {root}` to fix"
        )
    assert isinstance(file, str)
    return root / file


def read_part_meta(path: Path) -> dict[str, Any]:
    """Read the ``reliability.part`` description in a part's footer.

    Parameters
    ----------
    path : Path
        A part file.

    Returns
    -------
    dict of str to object
        The description (format, table, rows, input entry, writer) plus ``num_rows``, the
        footer's row count.

    Raises
    ------
    FooterError
        If the footer is unreadable.
    ValueError
        If it has no or an unknown ``reliability.part`` description.
    """
    footer = read_footer(path)
    raw = footer.metadata.get(PART_KEY)
    if raw is None:
        raise ValueError("no reliability.part metadata (written by a version before 0.3?)")
    desc = json.loads(raw)
    if not isinstance(desc, dict) or desc.get("format") != PART_FORMAT:
        raise ValueError("reliability.part metadata of an unknown format")
    desc["num_rows"] = footer.num_rows
    return desc


def check_part(root: Path, table: str, part: dict[str, Any]) -> None:
    """Check one committed part cheaply before it is read.

    Its path must stay inside the Dataset folder (:func:`part_path`), it must exist, and its
    size, footer row count and sha256 must be the ones recorded: a part damaged in place (same
    size) would otherwise decode to wrong values, or fail inside polars. Hashing reads the part
    once more (about 1 s per GB; :class:`~reliability.store.dataset.Dataset` does it once per
    file version).

    Parameters
    ----------
    root : Path
        The Dataset folder.
    table : str
        The part's table, for the message.
    part : dict of str to object
        The part's manifest record (``file``, ``bytes``, ``rows``).

    Raises
    ------
    DatasetDamagedError
        Naming the file and what to run (``reliability verify`` / ``repair``).
    """
    path = part_path(root, part.get("file"))
    hint = f"run `reliability verify {root}` for details and `reliability repair {root}` to fix"
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise DatasetDamagedError(
            f"{path}: part of table {table!r} listed in the manifest is missing; {hint}"
        ) from None
    want = part.get("bytes")
    if want is not None and size != want:
        raise DatasetDamagedError(
            f"{path}: {size} bytes, the manifest records {want}: the part was truncated or "
            f"replaced after it was committed; {hint}"
        )
    if part.get("rows") is not None:
        try:
            n = read_num_rows(path)
        except (FooterError, OSError) as exc:
            raise DatasetDamagedError(
                f"{path}: unreadable parquet footer ({exc}); {hint}"
            ) from None
        if n != part["rows"]:
            raise DatasetDamagedError(
                f"{path}: {n} rows in its footer, the manifest records {part['rows']}: the part "
                f"was replaced after it was committed; {hint}"
            )
    want_sha = part.get("sha256")
    if want_sha is not None and (sha := file_sha256(path)[0]) != want_sha:
        raise DatasetDamagedError(
            f"{path}: sha256 {sha[:12]}..., the manifest records {str(want_sha)[:12]}...: the part "
            f"was damaged or changed after it was committed; {hint}"
        )
