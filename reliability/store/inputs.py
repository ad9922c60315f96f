"""The inputs of an ingest call: options checked up front, files and standard input.

The reader is run so that a failure is an :class:`IngestError` naming the input.

Messages name options as structured hints (:class:`reliability.errors.Hint`, ``name=`` in
Python's spelling); the CLI and pipelines spell them as their flags and keys.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import sys
import tempfile
import zoneinfo
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from reliability._atomic import HOST_TAG, file_sha256
from reliability.errors import Hint, Hinted, IngestError, ReliabilityError, join_messages
from reliability.ingest import MAX_NODE_NAMES_PER_INGEST, READERS, ReadResult, node_budget
from reliability.ingest.shared import YEAR_MAX, YEAR_MIN
from reliability.store.observation import apply_observed_at, check_observed_at, note_inferred_end

__all__ = [
    "INGEST_OPTIONS",
    "STDIN",
    "Source",
    "hash_source",
    "read_input",
    "reader_options",
    "sources",
]

#: the name recorded for an input read from standard input (path ``-``)
STDIN = "<stdin>"
#: options every input kind takes, applied by the store rather than the reader
#: (``observed_at``: when the export was taken, see :mod:`reliability.store.observation`)
INGEST_OPTIONS = ("observed_at",)


def _check_zone(tz: object) -> None:
    bad = Hinted(
        Hint("tz", tz, action=False),
        " is not a time zone: give an IANA name such as UTC or America/New_York",
    )
    if not isinstance(tz, str) or not tz.strip():
        raise ReliabilityError(bad)
    try:
        zoneinfo.ZoneInfo(tz)
        pl.Series([datetime(2000, 1, 1)]).dt.replace_time_zone(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError, pl.exceptions.PolarsError):
        raise ReliabilityError(bad) from None


def _check_time(name: str, value: object) -> None:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ReliabilityError(
                Hinted(
                    Hint(name, value.isoformat(), action=False), " needs a UTC offset (e.g. ...Z)"
                )
            )
        if not YEAR_MIN <= value.year <= YEAR_MAX:
            raise ReliabilityError(
                Hinted(
                    Hint(name, value.isoformat(), action=False),
                    f" is outside the years {YEAR_MIN}-{YEAR_MAX}",
                )
            )


def _checked(name: str, kind: str, choices: tuple[str, ...], value: Any) -> Any:
    """Check a reader option's value by its type (:data:`reliability.ingest._spec.OPTION_TYPES`)."""
    if kind == "zone":
        _check_zone(value)
    elif kind == "name" and (not isinstance(value, str) or not value.strip()):
        raise ReliabilityError(
            Hinted(Hint(name, value, action=False), ": expected a non-empty name")
        )
    elif kind == "year" and (
        isinstance(value, bool) or not isinstance(value, int) or not YEAR_MIN <= value <= YEAR_MAX
    ):
        raise ReliabilityError(
            Hinted(Hint(name, value, action=False), f": expected a year in {YEAR_MIN}-{YEAR_MAX}")
        )
    elif kind == "names":
        if isinstance(value, str) or not value or not all(isinstance(x, str) and x for x in value):
            raise ReliabilityError(
                Hinted(Hint(name, value, action=False), ": expected a list of sacct field names")
            )
        return list(value)
    elif kind == "time":
        _check_time(name, value)
    elif kind == "choice" and value not in choices:
        raise ReliabilityError(
            Hinted(
                Hint(name, value, action=False),
                f": expected one of {', '.join(repr(c) for c in choices)}",
            )
        )
    return value


def reader_options(
    kind: str, cluster: str | None, tz: str | None, options: dict[str, Any]
) -> dict[str, Any]:
    """Check and assemble the keyword arguments for the reader of an input kind.

    Each option must apply to the reader, the required ones must be there, and the values must
    be sane (a known time zone, a year within bounds, aware times). Errors name options as
    :class:`~reliability.errors.Hint` parts (``name=`` in the library's spelling).

    Parameters
    ----------
    kind : str
        The input kind (a key of ``READERS``: ``slurm``, ``kernel``, ``dcgm``, ...).
    cluster : str or None
        Cluster name, for readers that take one.
    tz : str or None
        IANA time zone of the input's local timestamps.
    options : dict of str to object
        The reader's other options (``node=``, ``year=``, ``window_start=``, ...).

    Returns
    -------
    dict of str to object
        The keyword arguments to pass to the reader (unset options left out).

    Raises
    ------
    ReliabilityError
        For an unknown kind, an option the reader does not take, a missing required one, or an
        insane value.
    """
    spec = READERS.get(kind)
    if spec is None:
        raise ReliabilityError(f"unknown input kind {kind!r}; expected one of {sorted(READERS)}")
    takes = [o.name for o in spec.options]
    kwargs = {k: v for k, v in {"cluster": cluster, "tz": tz, **options}.items() if v is not None}
    for k in kwargs:
        if k not in takes and k not in INGEST_OPTIONS:
            raise ReliabilityError(
                join_messages(
                    Hint(k, action=False),
                    f" does not apply to {kind!r} inputs (they take ",
                    join_messages(*(Hint(n, action=False) for n in takes), sep=", "),
                    ")",
                )
            )
    for o in spec.options:
        if o.required and o.name not in kwargs:
            raise ReliabilityError(Hinted(f"{kind!r} inputs need ", Hint(o.name, action=False)))
    for o in spec.options:
        if o.name in kwargs:
            kwargs[o.name] = _checked(o.name, o.type, o.choices, kwargs[o.name])
    if "observed_at" in kwargs:
        kwargs["observed_at"] = check_observed_at(kwargs["observed_at"])
    return kwargs


def read_input(
    kind: str, path: Path, shown: str, kwargs: dict[str, Any], strict: bool
) -> ReadResult:
    """Read one input with its reader.

    Reader failures become :class:`IngestError` naming the input (a reader bug is reported as
    one, never as a traceback).

    Parameters
    ----------
    kind : str
        The input kind (a key of ``READERS``).
    path : Path
        The file to read (a spooled copy for standard input).
    shown : str
        The name the user knows the input by (``<stdin>`` for standard input), used in errors
        and the quarantine's ``source_file``.
    kwargs : dict of str to object
        The reader's keyword arguments (:func:`reader_options`); ``observed_at`` among them is
        applied here, not passed to the reader.
    strict : bool
        Refuse an input that would quarantine anything, naming its first bad line.

    Returns
    -------
    ReadResult
        The reader's rows, quarantine and notes.

    Raises
    ------
    IngestError
        If the reader refuses the input, cannot read it, fails, or (``strict``) quarantines a
        row.
    """
    own = {k: v for k, v in kwargs.items() if k not in INGEST_OPTIONS}
    try:
        # the node lists are written compact, cast batch by batch: a larger budget than
        # read_sacct's own (whose caller may turn them into strings)
        with node_budget(MAX_NODE_NAMES_PER_INGEST, "Dataset.ingest"):
            result = READERS[kind](path, **own)
    except IngestError as exc:
        exc = exc.renamed(shown) if shown != str(path) else exc
        # refused at its start, without naming the reader that reads it: say what it is first
        if exc.line in (None, 1) and "ingest it with" not in exc.problem:
            other = _another_kind(kind, path)
            if other is not None:
                raise IngestError(
                    exc.path,
                    join_messages(f"{other}. The {kind!r} reader says: ", exc.problem),
                    line=exc.line,
                    field=exc.field,
                ) from None
        raise exc from None
    except ReliabilityError:
        raise
    except OSError as exc:
        raise IngestError(shown, f"cannot read: {exc.strerror or exc}") from None
    except Exception as exc:  # a reader bug: say so, with the input that triggers it
        raise IngestError(
            shown,
            f"the {kind!r} reader failed ({type(exc).__name__}: {str(exc)[:300]}); this is a bug "
            "in the package: please report it with this input",
        ) from exc
    if result.rows_kept == 0:
        _refuse_another_kind(kind, path, shown, result)
    if shown != str(path):
        result.quarantine = result.quarantine.with_columns(source_file=pl.lit(shown))
    if kwargs.get("observed_at") is not None:
        apply_observed_at(result, shown, kwargs["observed_at"])
    else:
        note_inferred_end(result)
    if strict and result.rows_quarantined:
        first = result.quarantine.row(0, named=True)
        raise IngestError(
            shown,
            Hinted(
                f"{result.rows_quarantined} row(s) would be quarantined (",
                Hint("strict", action=False),
                f"); first: {first['reason']}",
            ),
            line=first["line_no"],
        )
    return result


def _refuse_another_kind(kind: str, path: Path, shown: str, result: ReadResult) -> None:
    """Refuse an input that kept nothing and whose start is another reader's input.

    A sacct export given to the DCGM reader quarantines every line, each with a reason that
    does not say what the file is (and the kernel reader reads no record from it at all).
    """
    other = _another_kind(kind, path)
    if other is None:
        return
    done = (
        f"all {result.rows_quarantined:,} records would be quarantined"
        if result.rows_quarantined
        else "no record was read"
    )
    raise IngestError(shown, f"{done}: {other}")


def _another_kind(kind: str, path: Path) -> str | None:
    """Say which other reader the start of the file is for (None: none, or this one)."""
    from reliability.ingest.shared import input_kind

    found = input_kind(path)
    if found is None or found[0] == kind:
        return None
    right, what = found
    return (
        f"this is {what}, given to the {kind!r} reader: read it as {right!r} "
        f'(`reliability ingest {right}`, or reader = "{right}" in a pipeline)'
    )


@dataclass
class Source:
    """One input of a call."""

    path: Path  #: where to read it (a spool file for standard input)
    name: str  #: the name recorded in the manifest
    recorded_path: str  #: the path recorded (absolute, or ``<stdin>``)
    shown: str  #: how messages name it (as the user gave it)


def _spool_stdin(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".stdin.{HOST_TAG}-{os.getpid()}.", suffix=".tmp", dir=root)
    try:
        with os.fdopen(fd, "wb") as out:
            shutil.copyfileobj(sys.stdin.buffer, out, 1 << 20)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


@contextlib.contextmanager
def sources(root: Path, paths: list[str | Path]) -> Iterator[list[Source]]:
    """Open the inputs of one ingest call.

    ``-`` is standard input, spooled to a temp file inside the Dataset folder (removed
    afterwards) and recorded as ``<stdin>``.

    Parameters
    ----------
    root : Path
        The Dataset folder (where standard input is spooled).
    paths : list of str or Path
        The inputs as given; ``-`` at most once.

    Yields
    ------
    list of Source
        One per input, in order.

    Raises
    ------
    ReliabilityError
        If ``-`` is given more than once.
    """
    spools: list[Path] = []
    out: list[Source] = []
    try:
        for p in paths:
            if str(p) == "-":
                if spools:
                    raise ReliabilityError("standard input (-) can be read only once per call")
                spool = _spool_stdin(root)
                spools.append(spool)
                out.append(Source(spool, STDIN, STDIN, STDIN))
            else:
                path = Path(p)
                try:
                    resolved = str(path.resolve())
                except RuntimeError:  # Python < 3.13: a symlink loop
                    raise IngestError(str(p), "symlink loop") from None
                except OSError as exc:
                    if exc.errno == errno.ELOOP:
                        raise IngestError(str(p), "symlink loop") from None
                    raise IngestError(str(p), f"cannot read: {exc.strerror or exc}") from None
                out.append(Source(path, path.name, resolved, str(p)))
        yield out
    finally:
        for s in spools:
            s.unlink(missing_ok=True)


def hash_source(src: Source) -> tuple[str, int]:
    """Hash an input's content.

    Parameters
    ----------
    src : Source
        The input.

    Returns
    -------
    (str, int)
        Its sha256 hex digest and size [bytes].

    Raises
    ------
    IngestError
        If it is missing, not a file, or unreadable.
    """
    try:
        st = src.path.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise IngestError(src.shown, "symlink loop") from None
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            raise IngestError(src.shown, "no such file") from None
        raise IngestError(src.shown, f"cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise IngestError(src.shown, "not a file (a folder? pass the files in it)")
    if not stat.S_ISREG(st.st_mode):
        raise IngestError(src.shown, "not a regular file (a device or pipe)")
    try:
        return file_sha256(src.path)
    except OSError as exc:
        raise IngestError(src.shown, f"cannot read: {exc.strerror or exc}") from None
