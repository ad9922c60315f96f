"""Byte-level access for :func:`reliability.ingest.slurm.read_sacct`.

The input (plain or gzip, see :mod:`reliability.ingest._compressed`) is read in blocks of
whole lines of about :data:`BLOCK_BYTES`, so that memory stays bounded whatever the file
holds. Each block is split into columns by polars' CSV reader (one row per physical line);
numpy counts the separators, which proves a block clean (every line has exactly the header's
number of ``|``) or finds the lines that need the record assembly of
:mod:`reliability.ingest.sacct.records`.
"""

from __future__ import annotations

import codecs
import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from reliability.errors import IngestError
from reliability.ingest._compressed import ByteStream, open_input, read_all

__all__ = [
    "BLOCK_BYTES",
    "HEADERISH_PATTERN",
    "MAX_LINE_BYTES",
    "Block",
    "LongLine",
    "block_frame",
    "count_pipes",
    "ends_with_bar",
    "head",
    "iter_blocks",
    "line_spans",
    "line_text",
    "regular_lines",
    "utf8_stream",
    "wide_text",
]

#: bytes read per block (the memory a block's temporary columns take is a few times this)
BLOCK_BYTES = 64 << 20
#: the first field of a line that looks like a sacct header
HEADERISH_PATTERN = r"(?i)^\s*jobid(raw)?\s*$"
#: a physical line longer than this is quarantined with its first bytes, never held whole
MAX_LINE_BYTES = 16 << 20
_RAW_PREFIX = 4096


def head(path: str | Path, n: int = 65536) -> bytes:
    """Read the first bytes of a file (decompressed if gzip).

    Parameters
    ----------
    path : str or Path
        The file.
    n : int
        Most bytes read.

    Returns
    -------
    bytes
        Up to ``n`` bytes; ``b""`` if unreadable.
    """
    try:
        stream = open_input(path)
    except IngestError:
        return b""
    try:
        return stream.read(n)
    except (IngestError, OSError, EOFError):
        return b""
    finally:
        stream.close()


_WIDE = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def _wide_codec(start: bytes) -> tuple[str, int] | None:
    """(codec, BOM length) of UTF-16/32 text, with a byte-order mark or (UTF-16) without."""
    for bom, codec in _WIDE:
        if start.startswith(bom):
            return codec, len(bom)
    sample = start[:4096]
    if len(sample) >= 8 and len(sample) % 2 == 0:
        even, odd = sample[0::2], sample[1::2]
        if odd.count(0) >= 0.9 * len(odd) and even.count(0) <= 0.1 * len(even):
            return "utf-16-le", 0
        if even.count(0) >= 0.9 * len(even) and odd.count(0) <= 0.1 * len(odd):
            return "utf-16-be", 0
    return None


def wide_text(path: str | Path) -> bool:
    """Tell whether a file is UTF-16/32 text (see :func:`utf8_stream`).

    Parameters
    ----------
    path : str or Path
        The file.

    Returns
    -------
    bool
        True for UTF-16/32 text.
    """
    return _wide_codec(head(path, 4096)) is not None


def utf8_stream(path: str | Path, notes: list[str]) -> ByteStream:
    """Open an input as a UTF-8 byte stream.

    UTF-16/32 text (rare: re-encoded by Windows tools) is decoded whole and re-encoded, with a
    note; anything else is streamed as it is.

    Parameters
    ----------
    path : str or Path
        The input (plain or gzip).
    notes : list of str
        The reader's notes, appended to.

    Returns
    -------
    ByteStream
        The stream; the caller closes it.
    """
    start = head(path, 4096)
    wide = _wide_codec(start)
    if wide is None:
        return open_input(path)
    codec, skip = wide
    text = read_all(path)[skip:].decode(codec, errors="replace")
    notes.append(f"input is {codec.upper()} text: decoded")
    return io.BytesIO(text.encode("utf-8"))


@dataclass(frozen=True)
class Block:
    """Whole physical lines of the input.

    ``data`` ends with a newline except at the end of the input; ``first_line`` is the 1-based
    number of its first line.
    """

    data: bytes
    first_line: int
    n_lines: int

    @property
    def end_line(self) -> int:
        """Number of the line after the block."""
        return self.first_line + self.n_lines


@dataclass(frozen=True)
class LongLine:
    """A physical line longer than :data:`MAX_LINE_BYTES` (only its first bytes are kept)."""

    line_no: int
    prefix: str
    n_bytes: int


def _count_lines(data: bytes) -> int:
    if not data:
        return 0
    n = int(np.count_nonzero(np.frombuffer(data, np.uint8) == 10))
    return n + (0 if data.endswith(b"\n") else 1)


def _prefix(data: bytes) -> str:
    return data[:_RAW_PREFIX].decode("utf-8", errors="replace").replace("\x00", "\ufffd")


def _split_long(data: bytes, first_line: int, limit: int) -> Iterator[Block | LongLine]:
    """Yield whole lines as blocks, each line longer than ``limit`` bytes as a LongLine.

    Every line longer than ``limit`` covers a whole aligned stretch of ``limit // 2`` bytes
    without a newline, so a few ``find`` calls prove most blocks free of them; only a block
    with such a stretch is split line by line (with numpy).
    """
    half = max(limit // 2, 1)
    if len(data) <= limit + 1 or all(
        data.find(b"\n", k, k + half) >= 0 for k in range(0, len(data), half)
    ):
        yield Block(data, first_line, _count_lines(data))
        return
    arr = np.frombuffer(data, np.uint8)
    ends = np.flatnonzero(arr == 10)
    if not data.endswith(b"\n"):
        ends = np.append(ends, len(data))
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    lengths = ends - starts
    prev = 0
    for i in np.flatnonzero(lengths > limit).tolist():
        if i > prev:
            yield Block(data[int(starts[prev]) : int(starts[i])], first_line + prev, i - prev)
        a = int(starts[i])
        yield LongLine(first_line + i, _prefix(data[a : a + _RAW_PREFIX]), int(lengths[i]))
        prev = i + 1
    if prev < len(ends):
        yield Block(data[int(starts[prev]) :], first_line + prev, len(ends) - prev)


def iter_blocks(
    stream: ByteStream, *, block_bytes: int | None = None, first_line: int = 1
) -> Iterator[Block | LongLine]:
    """Split a stream into blocks of whole lines.

    Parameters
    ----------
    stream : ByteStream
        The input.
    block_bytes : int or None
        Bytes read per block; None: :data:`BLOCK_BYTES`.
    first_line : int
        Number of the stream's first line.

    Yields
    ------
    Block or LongLine
        Blocks of whole lines, and every line longer than :data:`MAX_LINE_BYTES` (wherever it
        lies: inside a block, across blocks, or at the end) as a :class:`LongLine` (only its
        start is kept; a line longer than a block is skipped without being held).

    Raises
    ------
    IngestError
        From the stream, for corrupt or oversized gzip input.
    OSError
        For read errors.
    """
    size = block_bytes or BLOCK_BYTES
    limit = MAX_LINE_BYTES
    carry = b""
    line = first_line
    while True:
        chunk = stream.read(size)
        if not chunk:
            if len(carry) > limit:
                yield LongLine(line, _prefix(carry), len(carry))
            elif carry:
                yield Block(carry, line, 1)
            return
        buf = carry + chunk if carry else chunk
        cut = buf.rfind(b"\n")
        carry = buf[cut + 1 :]
        if cut >= 0:
            for item in _split_long(buf[: cut + 1], line, limit):
                yield item
                line += item.n_lines if isinstance(item, Block) else 1
        del buf
        if len(carry) <= limit:
            continue
        # a line already longer than the limit and not ended: keep its start, skip to its end
        n_bytes = len(carry)
        prefix = _prefix(carry)
        carry = b""
        while True:
            more = stream.read(size)
            if not more:
                break
            k = more.find(b"\n")
            if k >= 0:
                n_bytes += k
                carry = more[k + 1 :]
                break
            n_bytes += len(more)
        yield LongLine(line, prefix, n_bytes)
        line += 1


def block_frame(data: bytes, n_fields: int, columns: Sequence[int]) -> pl.DataFrame:
    """Read some fields of every physical line of a block.

    Parameters
    ----------
    data : bytes
        Whole lines.
    n_fields : int
        Fields per line (``|``-separated).
    columns : sequence of int
        0-based positions of the fields read.

    Returns
    -------
    polars.DataFrame
        One row per line, one String column ``f<position>`` per field read (empty or missing
        fields are null).
    """
    schema = {f"column_{i + 1}": pl.String for i in range(n_fields)}
    frame = pl.read_csv(
        data,
        has_header=False,
        separator="|",
        quote_char=None,
        schema=schema,
        columns=[f"column_{i + 1}" for i in columns],
        encoding="utf8-lossy",
        truncate_ragged_lines=True,
        raise_if_empty=False,
        missing_columns="insert",
        extra_columns="ignore",
    )
    return frame.rename({f"column_{i + 1}": f"f{i}" for i in columns})


def count_pipes(data: bytes) -> int:
    """Count the ``|`` bytes in a buffer.

    Parameters
    ----------
    data : bytes
        The buffer.

    Returns
    -------
    int
        The number of ``|``.
    """
    return int(np.count_nonzero(np.frombuffer(data, np.uint8) == 124))


def ends_with_bar(
    arr: np.ndarray, ends: np.ndarray, starts: np.ndarray | None = None
) -> np.ndarray:
    r"""Tell which lines end with ``|`` (before a ``\r``), as ``sacct --parsable`` prints them.

    Parameters
    ----------
    arr : numpy.ndarray
        The bytes (uint8).
    ends : numpy.ndarray
        Offset of each line's end (its newline, or the end of the data).
    starts : numpy.ndarray or None
        Offset of each line's start (an empty line ends with nothing); None: no line is empty.

    Returns
    -------
    numpy.ndarray
        One bool per line.
    """
    ends = np.asarray(ends, np.int64)
    lo = np.zeros_like(ends) if starts is None else np.asarray(starts, np.int64)
    last = ends - 1
    cr = (last >= lo) & (arr[last.clip(0, None)] == 13)
    last = np.where(cr, last - 1, last)
    return (last >= lo) & (arr[last.clip(0, None)] == 124)


def regular_lines(arr: np.ndarray, e: int, trailing: bool = False) -> bool:
    """Tell whether every line of a buffer has exactly ``e`` ``|`` separators.

    Checked line by line (a line with one ``|`` too many and another with one too few have the
    right total): in the sequence of separators (``|`` and newlines), every ``(e + 1)``-th is a
    newline and no other is; a last line without a newline has ``e`` too. With ``trailing``
    (a ``--parsable`` header) every line must also end with ``|``.

    Parameters
    ----------
    arr : numpy.ndarray
        The buffer's bytes (uint8), whole lines.
    e : int
        Separators per line.
    trailing : bool
        Every line must end with ``|`` too.

    Returns
    -------
    bool
        True when every line has ``e`` separators (and ends with ``|`` if ``trailing``).
    """
    step = 1 << 20
    phase = 0
    for a in range(0, arr.size, step):
        w = arr[a : a + step]
        sep = w == 124
        sep |= w == 10
        pos = np.flatnonzero(sep)
        is_nl = w[pos] == 10
        due = is_nl[(e - phase) % (e + 1) :: e + 1]
        if due.size != int(np.count_nonzero(is_nl)) or not bool(due.all()):
            return False
        if trailing and not bool(ends_with_bar(arr, pos[is_nl] + a).all()):
            return False
        phase = (phase + pos.size) % (e + 1)
    ends_line = arr.size == 0 or arr[-1] == 10
    if trailing and not ends_line and not bool(ends_with_bar(arr, np.array([arr.size])).all()):
        return False
    return phase == (0 if ends_line else e)


def line_spans(data: bytes, n_lines: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Locate every physical line of a buffer and count its separators.

    Parameters
    ----------
    data : bytes
        Whole lines.
    n_lines : int
        Their number.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, numpy.ndarray)
        Start offset, end offset (the newline) and number of ``|`` of every line.
    """
    arr = np.frombuffer(data, np.uint8)
    ends = np.flatnonzero(arr == 10)
    if ends.size < n_lines:  # last line without a newline
        ends = np.append(ends, len(data))
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    pipes = np.flatnonzero(arr == 124)
    counts = np.bincount(np.searchsorted(ends, pipes), minlength=n_lines)[:n_lines]
    return starts, ends, counts


def line_text(data: bytes, start: int, end: int, *, keep_nul: bool = False) -> str:
    r"""Decode one physical line (invalid UTF-8 and NUL replaced by U+FFFD, ``\r`` dropped).

    Parameters
    ----------
    data : bytes
        The buffer.
    start, end : int
        The line's offsets (end: its newline).
    keep_nul : bool
        Keep NUL bytes (for the record assembly, which quarantines records holding them).

    Returns
    -------
    str
        The line's text.
    """
    raw = data[start:end]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    text = raw.decode("utf-8", errors="replace")
    return text if keep_nul else text.replace("\x00", "\ufffd")
