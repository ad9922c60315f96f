"""Plumbing shared by the readers: line reading, quarantine frames.

The result type, :class:`~reliability.ingest._result.ReadResult`, is re-exported here.
"""

from __future__ import annotations

import codecs
import io
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import polars as pl

from reliability import schema
from reliability.errors import Hint, Hinted, IngestError
from reliability.ingest._bounds import TIME_MAX, TIME_MIN
from reliability.ingest._compressed import read_all
from reliability.ingest._result import ReadResult

__all__ = [
    "NULL_SENTINELS",
    "RAW_PREFIX",
    "ReadResult",
    "check_name_option",
    "check_time_option",
    "check_zone",
    "clip_lines",
    "decode_text",
    "first_of_runs",
    "not_this_format",
    "quarantine_frame",
    "read_bytes",
    "read_lines",
]


def first_of_runs(cols: list[str]) -> pl.Expr:
    """Flag the first row of each run of equal ``cols`` in a sorted frame (null equals null).

    Parameters
    ----------
    cols : list of str
        The columns whose runs are flagged.

    Returns
    -------
    polars.Expr
        True on the first row of each run.
    """
    changed = pl.any_horizontal([pl.col(c).ne_missing(pl.col(c).shift(1)) for c in cols])
    return changed | (pl.int_range(pl.len()) == 0)


#: Strings that Slurm and friends print for "no value".
NULL_SENTINELS = ("", "Unknown", "None", "None assigned", "(null)", "N/A", "n/a")


def read_bytes(path: str | Path) -> bytes:
    """Read a file, gunzipping it if it is gzip.

    gzip input is inflated in a stream with a decompressed-size limit and a compression-ratio
    guard (:mod:`reliability.ingest._compressed`): a gzip bomb is a clear error, not GBs of RAM.

    Parameters
    ----------
    path : str or Path
        The input file.

    Returns
    -------
    bytes
        The (decompressed) content.

    Raises
    ------
    IngestError
        If the file is unreadable, corrupt gzip, or breaks the limits.
    """
    return read_all(path)


_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def _looks_utf16(data: bytes) -> str | None:
    """``utf-16-le``/``-be`` for BOM-less UTF-16 text (mostly ASCII: every other byte NUL)."""
    head = data[:4096]
    if len(head) < 4 or len(data) % 2:
        return None
    even, odd = head[0::2], head[1::2]
    if odd.count(0) >= 0.9 * len(odd) and even.count(0) <= 0.1 * len(even):
        return "utf-16-le"
    if even.count(0) >= 0.9 * len(even) and odd.count(0) <= 0.1 * len(odd):
        return "utf-16-be"
    return None


def decode_text(data: bytes) -> tuple[bytes, list[str]]:
    """Re-encode UTF-16/UTF-32 input as UTF-8 and drop a UTF-8 byte-order mark.

    UTF-16/UTF-32 is recognised by its byte-order mark, or for UTF-16 without one by every
    other byte being NUL (mostly ASCII text); other input is returned unchanged.

    Parameters
    ----------
    data : bytes
        The raw content of an input.

    Returns
    -------
    (bytes, list of str)
        UTF-8 bytes, and notes about what was done (empty for plain UTF-8).
    """
    for bom, codec in _BOMS:
        if data.startswith(bom):
            if codec == "utf-8":
                return data[len(bom) :], []
            text = data[len(bom) :].decode(codec, errors="replace")
            return text.encode("utf-8"), [f"input is {codec.upper()} (byte-order mark): decoded"]
    codec = _looks_utf16(data)
    if codec is not None:
        text = data.decode(codec, errors="replace")
        return text.encode("utf-8"), [
            f"input looks like {codec.upper()} without a byte-order mark: decoded"
        ]
    return data, []


def check_zone(src: str, tz: str | None, option: str = "tz") -> ZoneInfo | None:
    """Check a time-zone option and return its zone.

    The name must be known to both Python's zoneinfo and polars (which bundles its own
    database), so that every reader can use it.

    Parameters
    ----------
    src : str
        The input's name, for the error.
    tz : str or None
        An IANA time-zone name, e.g. ``"Europe/Berlin"``.
    option : str
        The option's name, for the error.

    Returns
    -------
    zoneinfo.ZoneInfo or None
        The zone; None when ``tz`` is None.

    Raises
    ------
    IngestError
        Naming the option, for an empty or unknown zone.
    """
    if tz is None:
        return None
    if not isinstance(tz, str) or not tz.strip():
        raise IngestError(
            src,
            Hinted(
                "option ",
                Hint(option, action=False),
                f" must be an IANA time zone name, got {tz!r}",
            ),
        )
    try:
        zone = ZoneInfo(tz)
        pl.Series([None], dtype=pl.Datetime("us")).dt.replace_time_zone(tz)
    except (ZoneInfoNotFoundError, ValueError, OSError, pl.exceptions.PolarsError):
        raise IngestError(
            src,
            Hinted(
                f"unknown time zone {tz!r} (option ",
                Hint(option, action=False),
                "): use an IANA name such as 'UTC', 'Europe/Berlin' or 'America/New_York'",
            ),
        ) from None
    return zone


def check_time_option(src: str, value: object, option: str) -> datetime | None:
    """Validate a UTC-aware datetime option (``boot_time``, ``scraped_at``).

    Parameters
    ----------
    src : str
        The input's name, for the error.
    value : object
        The option's value.
    option : str
        The option's name, for the error.

    Returns
    -------
    datetime or None
        ``value`` unchanged; None when it is None.

    Raises
    ------
    IngestError
        Naming the option, unless the value is an aware datetime within the sane bounds of
        :mod:`reliability.ingest._bounds`.
    """
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise IngestError(
            src,
            Hinted(
                "option ",
                Hint(option, action=False),
                f" must be a datetime, got {type(value).__name__}",
            ),
        )
    if value.tzinfo is None or value.utcoffset() is None:
        raise IngestError(
            src,
            Hinted(
                "option ",
                Hint(option, action=False),
                f" must be timezone-aware (e.g. 2025-03-01T08:00:00Z), got {value}",
            ),
        )
    if not TIME_MIN <= value <= TIME_MAX:
        raise IngestError(
            src,
            Hinted(
                "option ",
                Hint(option, value, action=False),
                f" is outside {TIME_MIN.year}-{TIME_MAX.year}",
            ),
        )
    return value


def check_name_option(src: str, value: object, option: str) -> str | None:
    """Validate a name option (``cluster``, ``node``): a non-empty string without newlines.

    Parameters
    ----------
    src : str
        The input's name, for the error.
    value : object
        The option's value.
    option : str
        The option's name, for the error.

    Returns
    -------
    str or None
        ``value`` unchanged; None when it is None.

    Raises
    ------
    IngestError
        Naming the option, for anything else.
    """
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or any(c in value for c in "\n\r\0"):
        raise IngestError(
            src,
            Hinted(
                "option ", Hint(option, action=False), f" must be a non-empty name, got {value!r}"
            ),
        )
    return value


def read_lines(path: str | Path, data: bytes | None = None) -> tuple[pl.DataFrame, list[str]]:
    """Split an input into physical lines, fast and without losing any.

    UTF-16 / UTF-32 input (with a byte-order mark, or BOM-less UTF-16) is decoded first and a
    UTF-8 byte-order mark is dropped (:func:`decode_text`).

    Parameters
    ----------
    path : str or Path
        The input file (read with :func:`read_bytes` unless ``data`` is given).
    data : bytes or None
        Its content, when already read.

    Returns
    -------
    (polars.DataFrame, list of str)
        A frame ``line_no`` (1-based, i64), ``line`` (str; blank lines are ``""``; invalid UTF-8
        replaced by U+FFFD), and notes about the decoding.
    """
    if data is None:
        data = read_bytes(path)
    data, notes = decode_text(data)
    if b"\x1f" in data or b"\x00" in data:
        # control bytes that polars' splitter would treat specially: decode in Python instead
        text = data.decode("utf-8", errors="replace").replace("\x00", "\ufffd")
        lines = pl.Series("line", text.split("\n"), dtype=pl.String)
        if lines.len() and lines[-1] == "":
            lines = lines.head(-1)
        frame = pl.DataFrame(lines).with_columns(pl.col("line").str.strip_suffix("\r"))
        notes.append("input holds NUL or control bytes (binary data?): decoded line by line")
    elif not data:
        frame = pl.DataFrame({"line": pl.Series([], dtype=pl.String)})
    else:
        frame = pl.read_csv(
            io.BytesIO(data),
            has_header=False,
            separator="\x1f",
            quote_char=None,
            infer_schema=False,
            new_columns=["line"],
            encoding="utf8-lossy",
            truncate_ragged_lines=False,
        ).with_columns(pl.col("line").fill_null(""))
    if frame.height and frame.get_column("line").str.contains("\ufffd", literal=True).any():
        notes.append("input is not valid UTF-8: undecodable bytes were replaced by U+FFFD")
    frame = frame.with_row_index("line_no", offset=1).with_columns(pl.col("line_no").cast(pl.Int64))
    return frame, notes


def quarantine_frame(
    source: str, line_no: list[int], raw: list[str], reason: list[str]
) -> pl.DataFrame:
    """Build a quarantine table from parallel lists.

    Parameters
    ----------
    source : str
        The input's name, on every row.
    line_no : list of int
        Line (or record) numbers, 1-based.
    raw : list of str
        The raw text of each bad line.
    reason : list of str
        Why each was quarantined.

    Returns
    -------
    polars.DataFrame
        The canonical ``quarantine`` table.
    """
    return pl.DataFrame(
        {"source_file": [source] * len(line_no), "line_no": line_no, "raw": raw, "reason": reason},
        schema=schema.TABLES["quarantine"].schema,
    )


#: characters of an unread record kept as its raw text in the quarantine
RAW_PREFIX = 4096


def not_this_format(
    src: str, lines: pl.DataFrame, found: str, expected: str, first: str | None = None
) -> IngestError:
    """Build the refusal of an input in which no line is of the reader's format.

    A foreign file (a JSON document, an image, random text, another tool's export) would
    otherwise be "read" with nothing kept, or with every line quarantined, and report success.

    Parameters
    ----------
    src : str
        The input's name.
    lines : polars.DataFrame
        Its lines, as :func:`read_lines` returns them.
    found : str
        What was looked for, e.g. ``"DCGM sample line"``.
    expected : str
        The form the reader reads, with an example.
    first : str or None
        Why the first line is not of the format, when the reader knows; else its text is
        quoted.

    Returns
    -------
    IngestError
        Naming the file (not a line: the whole file is refused), what was expected, and the
        first line (or that the file holds binary data).
    """
    text = lines.get_column("line")
    nonblank = lines.filter(text.str.strip_chars() != "")
    problem = f"no {found} found (expected {expected})"
    binary = text.str.contains("\ufffd", literal=True).sum()
    if binary and binary >= nonblank.height / 10:
        problem += "; the file holds bytes that are not text (binary data?)"
    elif nonblank.height == 0:
        problem += "; the file holds only blank lines"
    else:
        no, line = nonblank.row(0)
        problem += f"; line {no}: " + (first if first is not None else f"{line[:80]!r}")
    return IngestError(src, problem)


def clip_lines(lines: pl.DataFrame, max_bytes: int, keep: int = RAW_PREFIX) -> pl.DataFrame:
    """Cut the lines longer than a reader's limit to their start, before they reach Python.

    Parameters
    ----------
    lines : polars.DataFrame
        ``line_no`` and ``line``, as :func:`read_lines` returns them.
    max_bytes : int
        Longest line kept whole [bytes].
    keep : int
        Characters kept of a longer line (its raw text in the quarantine).

    Returns
    -------
    polars.DataFrame
        ``line_no``, ``line`` and ``n_bytes``: the length of each cut line [bytes], null for
        the lines kept whole.
    """
    n = pl.col("line").str.len_bytes()
    return lines.select(
        "line_no",
        pl.when(n > max_bytes)
        .then(pl.col("line").str.slice(0, keep))
        .otherwise("line")
        .alias("line"),
        pl.when(n > max_bytes).then(n).alias("n_bytes"),
    )
