"""Reader for Slurm accounting exports: ``sacct --parsable2`` / ``--parsable``.

Any subset and order of fields, with or without ``--duplicates``; a header line is expected
(``--noheader`` output needs ``fields=``). Allocation records become ``jobs`` rows (one per
attempt or resize segment); step records (``.batch``, ``.extern``, ``.0``, ``45+1.0``) become
``job_steps`` rows. The export we recommend is
:data:`~reliability.ingest.sacct.fields.SACCT_EXPORT_COMMAND`.

The file is streamed in blocks (:mod:`reliability.ingest.sacct.io`): a clean block (every
line has the header's number of ``|``) is split by polars' CSV reader and parsed with polars
expressions (:mod:`reliability.ingest.sacct.parse`); around the few lines that are not clean
(``|`` or newlines inside free-text fields, headers in the middle), records are assembled in
Python (:mod:`reliability.ingest.sacct.records`), so one bad line costs one small window,
not the file. Slurm's requeue and resize semantics are in :mod:`reliability.ingest.sacct.post`.

Times: sacct prints local time without a zone, so a time zone must be given (``tz=``);
``SLURM_TIME_FORMAT=%s`` (epoch) output needs none. Ambiguous local times (DST fall-back)
are read as the earlier instant; non-existent ones (spring-forward) are quarantined.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import polars as pl

from reliability.errors import Hint, Hinted, IngestError
from reliability.ingest._common import ReadResult, decode_text
from reliability.ingest._compressed import is_gzip, unsupported_compression
from reliability.ingest._slurm_text import _WHAT
from reliability.ingest._spec import CLUSTER, TZ, FileHead, ReaderOption, ReaderSample, ReaderSpec
from reliability.ingest.sacct.fields import (
    FIELD_PATTERNS,
    RECOMMENDED_FORMAT,
    REQUIRED_FIELDS,
    SACCT_EXPORT_COMMAND,
    SACCT_SPELLING,
    TEXT_FIELDS,
)
from reliability.ingest.sacct.io import head
from reliability.ingest.sacct.reader import MAX_NODE_NAMES_PER_INPUT, SacctReader

__all__ = [
    "FIELD_PATTERNS",
    "MAX_NODE_NAMES_PER_INPUT",
    "RECOMMENDED_FORMAT",
    "REQUIRED_FIELDS",
    "SACCT_EXPORT_COMMAND",
    "SPEC",
    "TEXT_FIELDS",
    "read_sacct",
]


def _is_sacct(head: FileHead) -> str | None:
    return _WHAT["sacct"] if head.slurm_format == "sacct" else None


SPEC = ReaderSpec(
    kind="slurm",
    summary="sacct --parsable2 exports",
    options=(
        CLUSTER,
        TZ,
        ReaderOption("fields", "names", "comma-separated sacct fields, for --noheader exports"),
        ReaderOption("window_start", "time", "the export's --starttime", cli=False),
        ReaderOption("window_end", "time", "the export's --endtime", cli=False),
    ),
    tables=("jobs", "job_steps"),
    signature=_is_sacct,
    rank=30,
    sample=ReaderSample(
        "sacct.psv",
        "JobID|JobName|State|Submit|Start|End|NNodes|NodeList|Cluster\n"
        "17|train|COMPLETED|2025-01-01T00:00:00|2025-01-01T00:01:00|2025-01-01T01:00:00|1|n1|c\n"
        "18|eval|FAILED|2025-01-01T00:00:00|2025-01-01T00:02:00|2025-01-01T00:30:00|1|n2|c\n",
        {"cluster": "c", "tz": "UTC"},
    ),
)

_EXPORT_HINT = f"export with: {SACCT_EXPORT_COMMAND}"


@SPEC.reads
def read_sacct(
    path: str | Path,
    *,
    cluster: str | None = None,
    tz: str | None = None,
    fields: Sequence[str] | None = None,
    window_start: datetime | str | None = None,
    window_end: datetime | str | None = None,
) -> ReadResult:
    """Read a ``sacct --parsable2`` (or ``--parsable``) export into ``jobs`` and ``job_steps``.

    ``sacct --json`` output is recognised by its first character (after a byte-order mark) and
    read by :func:`reliability.ingest.sacct.json.read_sacct_json`; a JSON list is refused saying
    what it is. YAML and sacct's fixed-width
    tables are refused with the command to use instead.

    Parameters
    ----------
    path : str or Path
        The export (plain or gzip).
    cluster : str or None
        Cluster name, used where the export has no ``Cluster`` field or it is empty.
    tz : str or None
        IANA time zone the times were printed in (sacct prints local time without a zone); not
        needed for ``SLURM_TIME_FORMAT=%s`` output.
    fields : sequence of str or None
        Field names in ``--format`` order, for ``--noheader`` output.
    window_start, window_end : datetime or str or None
        The export's ``--starttime`` / ``--endtime`` [UTC; ISO 8601 with a zone, or an aware
        datetime], when known: they become the input's observation window (attempts still running
        are censored at ``window_end``). Without them the window is inferred from the earliest /
        latest timestamp in the export.

    Returns
    -------
    ReadResult
        The read, with ``jobs`` (one row per allocation record = attempt, or resize segment) and
        ``job_steps``. Attempts of a job (``--duplicates``) are numbered 0, 1, ... by start time.
        Records that cannot be read are quarantined with the reason.
    """
    src = str(path)
    _check_zone(src, tz)
    names = _check_fields(src, fields)
    if cluster is not None and (not isinstance(cluster, str) or not cluster.strip()):
        raise IngestError(
            src,
            Hinted(
                "option ",
                Hint("cluster", action=False),
                f" must be a non-empty name, got {cluster!r}",
            ),
        )
    start = _window_time(src, "window_start", window_start)
    end = _window_time(src, "window_end", window_end)
    if start is not None and end is not None and end <= start:
        raise IngestError(
            src,
            Hinted(
                Hint("window_end", end, action=False),
                " is not after ",
                Hint("window_start", start, action=False),
            ),
        )
    _refuse_unreadable(src, path)
    first = decode_text(head(path))[0]  # (without a byte-order mark; UTF-16 decoded)
    _refuse_binary(src, first)
    if names is None:
        _refuse_other_formats(src, first)
    if names is None and first.lstrip()[:1] in (b"{", b"["):  # JSON (a list is refused)
        from reliability.ingest.sacct.json import read_sacct_json

        result = read_sacct_json(path, cluster=cluster)
    else:
        if b"\n" not in first and b"\r" in first.strip():
            # old Mac line endings: read as one line, every record would be lost
            raise IngestError(
                src,
                "the file has CR-only line endings (old Mac style, no newline in its first "
                f"{len(first):,} bytes): convert them first, e.g. tr '\\r' '\\n' < in > out",
                line=1,
            )
        result = SacctReader(src, cluster=cluster, tz=tz, names=names).run(path)
        if result.rows_read and not _ends_with_newline(path):
            result.notes.append(
                "the last line has no newline (sacct ends every line with one): the file may "
                "have been cut, and its last record with it (kept as read: check it)"
            )
    if start is not None:
        result.observed_from = start
    if end is not None:
        result.observed_until = end
        result.observation_basis = "sacct --endtime"
    return result


def _check_zone(src: str, tz: object) -> None:
    if tz is None:
        return
    if not isinstance(tz, str) or not tz.strip():
        raise IngestError(
            src,
            Hinted(
                "option ", Hint("tz", action=False), f" must be an IANA time zone name, got {tz!r}"
            ),
        )
    try:
        ZoneInfo(tz)
        pl.Series([None], dtype=pl.Datetime("us")).dt.replace_time_zone(tz)
    except (ZoneInfoNotFoundError, ValueError, OSError, pl.exceptions.PolarsError):
        raise IngestError(
            src,
            Hinted(
                f"unknown time zone {tz!r} (option ",
                Hint("tz", action=False),
                "): use an IANA name such as 'UTC', 'Europe/Berlin' or 'America/New_York'",
            ),
        ) from None


def _check_fields(src: str, fields: Sequence[str] | None) -> list[str] | None:
    if fields is None:
        return None
    if isinstance(fields, str):
        fields = [f.strip() for f in fields.split(",")]
    names = list(fields)
    if not names or not all(isinstance(f, str) and f.strip() for f in names):
        raise IngestError(
            src,
            Hinted(
                "option ",
                Hint("fields", action=False),
                f" must list sacct field names in --format order, got {fields!r}",
            ),
        )
    # sacct takes --format names in any case (jobid, exitcode): its own spelling here
    names = [SACCT_SPELLING.get(f.strip().lower(), f.strip()) for f in names]
    if len({n.lower() for n in names}) != len(names):
        raise IngestError(
            src,
            Hinted(
                "option ", Hint("fields", action=False), f" names a field twice: {','.join(names)}"
            ),
        )
    missing = [f for f in REQUIRED_FIELDS if f not in names]
    if missing:
        raise IngestError(
            src,
            Hinted(
                "option ",
                Hint("fields", action=False),
                f" lacks the required field {missing[0]} (the reader needs "
                f"{', '.join(REQUIRED_FIELDS)}); {_EXPORT_HINT}",
            ),
        )
    return names


def _window_time(src: str, name: str, value: datetime | str | None) -> datetime | None:
    """Convert an export window bound to an aware UTC datetime (ISO strings must carry a zone)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise IngestError(
                src,
                Hinted("option ", Hint(name, value, action=False), " is not an ISO 8601 time"),
            ) from None
    if not isinstance(value, datetime):
        raise IngestError(
            src,
            Hinted(
                "option ", Hint(name, action=False), f" must be a time, got {type(value).__name__}"
            ),
        )
    if value.tzinfo is None:
        raise IngestError(
            src,
            Hinted(
                "option ", Hint(name, value, action=False), " has no time zone (give e.g. ...Z)"
            ),
        )
    return value.astimezone(UTC)


def _ends_with_newline(path: str | Path) -> bool:
    """Tell whether a plain file's last byte is a newline (True for gzip: not checked)."""
    if is_gzip(path):
        return True
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            if fh.tell() == 0:
                return True
            fh.seek(max(fh.tell() - 4, 0))
            tail = fh.read(4)
    except OSError:
        return True
    # (UTF-16/32 text ends with the newline's wide form)
    return tail.rstrip(b"\x00").endswith(b"\n") or tail.endswith(b"\x00\n")


def _refuse_unreadable(src: str, path: str | Path) -> None:
    """Refuse a compressed form that is not gzip, and gzip inside gzip, saying what it is."""
    try:
        with open(path, "rb") as fh:
            start = fh.read(8)
    except OSError:
        return  # the reader says why it cannot read the file
    what = unsupported_compression(start)
    if what is None and is_gzip(path):
        inner = head(path, 8)
        if inner[:2] == b"\x1f\x8b":
            what = "is gzip inside gzip (not supported: gunzip it twice)"
        else:
            what = (inner and unsupported_compression(inner)) or None
            what = what and what.replace("is ", "is gzip of ", 1)
    if what is not None:
        raise IngestError(src, f"the file {what}; then read the plain sacct export")


#: share of control bytes and undecodable bytes in a file's start that marks binary data
_BINARY_SHARE = 0.1
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f\ufffd]")


def _refuse_binary(src: str, first: bytes) -> None:
    """Refuse a file whose start is mostly not text (an image, an archive, random bytes)."""
    sample = first[:4096].decode("utf-8", errors="replace")
    if sample and len(_CONTROL.findall(sample)) > _BINARY_SHARE * len(sample):
        raise IngestError(
            src,
            "the file holds binary data, not a sacct export (text lines of '|'-separated "
            f"fields); {_EXPORT_HINT}",
        )


def _refuse_other_formats(src: str, first: bytes) -> None:
    """Refuse, with what to do, the sacct outputs this reader does not read."""
    text = first.decode("utf-8", errors="replace")
    lines = [ln.rstrip("\r") for ln in text.splitlines() if ln.strip()]
    if not lines:
        return
    top = lines[0].strip()
    if top == "---" or re.match(r"^(meta|jobs|errors|warnings):\s*$", top):
        raise IngestError(
            src, f"YAML is not read: export with --parsable2 or --json; {_EXPORT_HINT}", line=1
        )
    if len(lines) > 1 and re.fullmatch(r"[- ]+", lines[1].strip()) and "|" not in top:
        raise IngestError(
            src,
            "this is sacct's fixed-width table, which cuts values to their column width "
            f"(CANCELLED+, OUT_OF_ME+) and has no times: use --parsable2: {SACCT_EXPORT_COMMAND}",
            line=1,
        )
