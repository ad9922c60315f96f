"""The memory-mapped front end of :class:`reliability.ingest.sacct.reader.SacctReader`.

It fills any :class:`RecordSink` (the reader is one) and imports nothing of the reader: the
reader calls :func:`read_mapped` as its fast path and falls back to its block stream.

For a plain (uncompressed, UTF-8) file:

1. numpy counts ``|``, newlines and NUL bytes of each window of whole lines of the mapped
   file, without copying it; a window whose every line has the header's separator count
   (checked line by line, not as a total) and no NUL is clean;
2. in the few windows that are not, per-line counts find the anomalies, and the record
   assembly (:func:`reliability.ingest.sacct.records.assemble`) turns the lines around them
   into records (or quarantine rows), remembering which lines it consumed;
3. polars reads the file itself in batches, one row per physical line; each batch loses the
   consumed lines and goes through the typed parse.

Whatever this front end does not expect (a line that looks like a header, found in a clean
window by the batches' first column; a second header that the data follows; a line longer
than a window; polars disagreeing about the number of lines) returns False, and the caller
reads the file again through the block stream, which handles everything.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import polars as pl

from reliability.ingest.sacct import io as _sacct_io
from reliability.ingest.sacct.fields import read_column
from reliability.ingest.sacct.io import ends_with_bar
from reliability.ingest.sacct.parse import time_form, typed_plan
from reliability.ingest.sacct.records import (
    Layout,
    Record,
    assemble,
    headerish_pattern,
    parse_header,
)

__all__ = ["BATCH_ROWS", "RecordSink", "read_mapped"]

#: records parsed per batch (bounds the temporary columns of the typed parse)
BATCH_ROWS = 100_000


class RecordSink(Protocol):
    """What the fast path reads into: the reader's state and the steps it calls back.

    :class:`reliability.ingest.sacct.reader.SacctReader` is one; this module names only this
    protocol, so the reader depends on the fast path and not the other way round.
    """

    cluster: str | None
    tz: str | None
    #: the fields of ``--noheader`` output (None: the export has a header)
    fields: list[str] | None
    consumed: set[int]
    notes: list[str]
    comments: int
    n_records: int
    #: the mapped file while the fast path reads it (for the quarantine's raw lines)
    mapped: object | None

    def fields_layout(self, sample: str) -> Layout:
        """Build the layout of ``fields=`` for ``--noheader`` output.

        Parameters
        ----------
        sample : str
            The first lines of the export.

        Returns
        -------
        Layout
            The given fields, and whether lines end with a spare ``|``.
        """
        ...

    def no_header(self, text: str, line: int) -> None:
        """Refuse an export whose first data line is not a sacct header (raises).

        Parameters
        ----------
        text : str
            The first non-comment line.
        line : int
            Its line number.
        """
        ...

    def set_layout(self, layout: Layout, line: int) -> None:
        """Start a section of the export with a header's layout.

        Parameters
        ----------
        layout : Layout
            The header's fields.
        line : int
            The header's line number.
        """
        ...

    def take_window_record(self, line_no: int, rec: Record) -> None:
        """Take a record the assembly made (quarantined, or kept for the typed parse).

        Parameters
        ----------
        line_no : int
            The record's first line number.
        rec : Record
            The assembled record.
        """
        ...

    def parse_window_records(self) -> None:
        """Parse the records the assembly kept."""
        ...

    def take(
        self,
        typed: pl.DataFrame,
        raw_fields: Callable[[list[int]], pl.DataFrame],
        raw_of: Callable[[int], str],
        first_line: int,
        *,
        ascii_only: bool = False,
    ) -> None:
        """Finish the parse of a batch of :func:`typed_plan` columns and keep its rows.

        Parameters
        ----------
        typed : polars.DataFrame
            The batch's columns parsed by :func:`typed_plan`.
        raw_fields : callable
            ``raw_fields(line_nos)`` gives those records' raw fields.
        raw_of : callable
            ``raw_of(line_no)`` gives a record's raw text, for the quarantine.
        first_line : int
            Line number of the batch's first record.
        ascii_only : bool
            The batch was read from bytes that are all ASCII.
        """
        ...


@dataclass
class _Window:
    lo: int  # byte offsets of whole lines [lo, hi)
    hi: int
    first_line: int
    n_lines: int
    clean: bool


class _Mapped:
    """The mapped file and the line lookups the assembly and the quarantine need."""

    def __init__(self, mm: mmap.mmap) -> None:
        self.mm = mm
        self.arr = np.frombuffer(mm, np.uint8)
        self.windows: list[_Window] = []
        #: every byte of the data is ASCII (so polars may read it as strict UTF-8)
        self.ascii = True
        self._spans: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def spans(self, lo: int, hi: int, n_lines: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return (starts, ends, separator counts) of the lines in [lo, hi), as absolute offsets."""
        w = self.arr[lo:hi]
        ends = np.flatnonzero(w == 10)
        if ends.size < n_lines:
            ends = np.append(ends, hi - lo)
        starts = np.empty_like(ends)
        starts[:1] = 0
        starts[1:] = ends[:-1] + 1
        counts = np.bincount(np.searchsorted(ends, np.flatnonzero(w == 124)), minlength=n_lines)[
            :n_lines
        ]
        return starts + lo, ends + lo, counts

    def release(self, lo: int, hi: int) -> None:
        """Drop the mapped pages of [lo, hi) from this process (they stay in the page cache).

        So reading a large file does not hold it all resident.
        """
        if hasattr(mmap, "MADV_DONTNEED"):
            start = lo - lo % mmap.PAGESIZE
            with contextlib.suppress(OSError, ValueError):
                self.mm.madvise(mmap.MADV_DONTNEED, start, hi - start)

    def text(self, start: int, end: int, *, keep_nul: bool = False) -> str:
        raw = self.mm[start:end]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        text = raw.decode("utf-8", errors="replace")
        return text if keep_nul else text.replace("\x00", "\ufffd")

    def line(self, line_no: int) -> str:
        """Text of physical line ``line_no`` (1-based) of the data windows."""
        k = bisect_right([w.first_line for w in self.windows], line_no) - 1
        w = self.windows[k]
        if k not in self._spans:
            self._spans = {k: self.spans(w.lo, w.hi, w.n_lines)}  # keep one window's spans
        starts, ends, _ = self._spans[k]
        i = line_no - w.first_line
        return self.text(int(starts[i]), int(ends[i]))


#: most bytes of a window: a window with a bad line is read line by line, so one bad line
#: costs the per-line counts of its window only (64 MB windows made it cost 0.27 s)
WINDOW_BYTES = 4 << 20

#: bytes counted at a time (the comparison's temporary stays in the CPU cache: 3x faster)
_COUNT_BYTES = 1 << 20


def _byte_counts(
    arr: np.ndarray, lo: int, hi: int, e: int, trailing: bool = False
) -> tuple[int, int, int, bool]:
    """Count the separators of ``arr[lo:hi]`` and check every line's.

    Returns (newlines, ``|`` separators, largest byte value, regular): regular when every line
    of the stretch has exactly ``e`` separators (the last one, if no newline ends it, too).
    A per-line check, not a total: a line with one ``|`` too many and another with one too
    few have the right total, and taken as clean the first would be split into shifted
    columns. In the sequence of separators (``|`` and newlines) of a regular stretch, every
    ``(e + 1)``-th is a newline and no other is. With ``trailing`` (a ``--parsable`` header),
    every line must also end with ``|`` (one that does not is ``--parsable2`` output: its
    ``|`` count says nothing about its fields).
    """
    lines = pipes = top = phase = 0
    regular = True
    for a in range(lo, hi, _COUNT_BYTES):
        w = arr[a : min(a + _COUNT_BYTES, hi)]
        sep = w == 124
        sep |= w == 10
        pos = np.flatnonzero(sep)
        is_nl = w[pos] == 10
        k = int(np.count_nonzero(is_nl))
        if regular:
            due = is_nl[(e - phase) % (e + 1) :: e + 1]
            regular = due.size == k and bool(due.all())
            if regular and trailing and k:
                regular = bool(ends_with_bar(arr, pos[is_nl] + a).all())
        phase = (phase + pos.size) % (e + 1)
        lines += k
        pipes += pos.size - k
        top = max(top, int(w.max()))
    ends_line = hi > lo and arr[hi - 1] == 10
    if regular and trailing and hi > lo and not ends_line:
        regular = bool(ends_with_bar(arr, np.array([hi], np.int64)).all())
    return lines, pipes, top, regular and phase == (0 if ends_line or hi == lo else e)


def _windows(m: _Mapped, start: int, first_line: int, e: int, trailing: bool = False) -> bool:
    """Split [start, end of file) into windows of whole lines and count them.

    The windows are counted two at a time (numpy's comparisons release the GIL). False if a
    line is longer than a window.
    """
    mm, arr, size = m.mm, m.arr, len(m.mm)
    bounds: list[tuple[int, int]] = []
    lo = start
    block = min(_sacct_io.BLOCK_BYTES, WINDOW_BYTES)
    while lo < size:
        hi = min(lo + block, size)
        if hi < size:
            cut = mm.rfind(b"\n", lo, hi)
            if cut < 0:
                return False
            hi = cut + 1
        bounds.append((lo, hi))
        lo = hi

    def count(span: tuple[int, int]) -> tuple[int, int, bool, bool]:
        lo, hi = span
        n, _, top, regular = _byte_counts(arr, lo, hi, e, trailing)
        n += 0 if arr[hi - 1] == 10 else 1
        nul = mm.find(b"\x00", lo, hi) >= 0
        m.release(lo, hi)
        return n, top, regular, nul

    with ThreadPoolExecutor(max_workers=2) as pool:
        counts = list(pool.map(count, bounds))
    line = first_line
    for (lo, hi), (n, top, regular, nul) in zip(bounds, counts, strict=True):
        m.ascii = m.ascii and top < 0x80
        m.windows.append(_Window(lo, hi, line, n, regular and not nul))
        line += n
    return True


def _assemble(reader: RecordSink, m: _Mapped, layout: Layout, data_start: int) -> bool:
    """Run the record assembly over the windows that are not clean (False: fall back)."""
    e, windows = layout.expected, m.windows
    k = 0
    while k < len(windows):
        if windows[k].clean:
            k += 1
            continue
        w = windows[k]
        lo, first = w.lo, w.first_line
        if lo > data_start and (first - 1) not in reader.consumed:
            lo = m.mm.rfind(b"\n", data_start, lo - 1) + 1 if lo - 1 > data_start else data_start
            lo = max(lo, data_start)
            first -= 1
        j, hi = k, w.hi
        while True:
            n = windows[j].first_line + windows[j].n_lines - first
            starts, ends, counts = m.spans(lo, hi, n)
            lead = m.arr[starts.clip(0, len(m.mm) - 1)] | 0x20
            marks = counts != e
            if layout.trailing:  # (a line without the trailing '|': --parsable2 output)
                marks |= ~ends_with_bar(m.arr, ends, starts)
            # the assembly checks the lines that may be headers (JobID or the header's first)
            marks |= (lead == ord("j")) | (lead == ord(layout.names[0][:1].lower() or "j"))
            if np.count_nonzero(m.arr[lo:hi] == 0):
                nul = np.searchsorted(ends, np.flatnonzero(m.arr[lo:hi] == 0) + lo)
                marks[nul[nul < n]] = True
            anomalies = np.flatnonzero(marks).tolist()
            final = j == len(windows) - 1
            asm = assemble(
                lambda i, s=starts, t=ends: m.text(int(s[i]), int(t[i]), keep_nul=True),
                counts.tolist(),
                anomalies,
                layout,
                final=final,
                line_no=lambda i, f=first: f + i,
            )
            if asm.new_section is not None:
                return False
            cut = n if asm.carry_from is None else asm.carry_from
            for r in asm.records:
                if r.first < cut:
                    reader.take_window_record(first + r.first, r)
            reader.consumed.update(first + i for i in asm.consumed if i < cut)
            reader.notes.extend(asm.notes)
            reader.comments += asm.comments
            if asm.carry_from is None or final:
                break
            # a record may continue in the next window: decide it with that window
            lo, first = int(starts[asm.carry_from]), first + asm.carry_from
            j += 1
            hi = windows[j].hi
            windows[j].clean = False
        k = j + 1
    return True


def read_mapped(reader: RecordSink, path: str | Path) -> bool:
    """Read a sacct export into a reader through the memory-mapped front end.

    Parameters
    ----------
    reader : RecordSink
        The reader accumulating rows and quarantine (a
        :class:`~reliability.ingest.sacct.reader.SacctReader`).
    path : str or Path
        The (uncompressed) export file.

    Returns
    -------
    bool
        True when read; False if the caller must use the block stream instead (e.g. the file
        cannot be opened, is empty, or has a line longer than a window); nothing of the file has
        then been kept.
    """
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError:
        return False
    with fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return False
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    m = _Mapped(mm)
    try:
        return _read(reader, path, m)
    finally:
        reader.mapped = None
        m.arr = np.empty(0, np.uint8)
        m._spans.clear()
        # a view may still be alive (an exception's traceback): then GC closes the map
        with contextlib.suppress(BufferError):
            mm.close()


def _read(reader: RecordSink, path: str | Path, m: _Mapped) -> bool:
    mm = m.mm
    # the first non-blank line: the header (or, with fields=, the first record)
    pos, line = 0, 1
    while True:
        nl = mm.find(b"\n", pos)
        end = len(mm) if nl < 0 else nl
        text = m.text(pos, end).lstrip("\ufeff")
        if text.strip():
            break
        if nl < 0:
            return False
        pos, line = nl + 1, line + 1
    if reader.fields is None:
        layout = parse_header(text)
        if layout is None:
            reader.no_header(text, line)
        assert layout is not None
        data_start, data_line = (end + 1, line + 1)
    else:
        layout = reader.fields_layout(m.text(pos, min(len(mm), pos + 65536)))
        data_start, data_line = pos, line
    reader.set_layout(layout, line)
    if data_start >= len(mm):
        return True  # a header and no records
    if not _windows(m, data_start, data_line, layout.expected, layout.trailing):
        return False
    reader.mapped = m
    if any(not w.clean for w in m.windows) and not _assemble(reader, m, layout, data_start):
        return False
    n_fields = len(layout.names) + int(layout.trailing)
    cols = sorted({0} | {i for i, n in enumerate(layout.names) if read_column(n)})
    schema = {f"column_{i + 1}": pl.String for i in range(n_fields)}
    consumed = sorted(reader.consumed)
    lf = pl.scan_csv(
        path,
        has_header=False,
        separator="|",
        quote_char=None,
        schema=schema,
        skip_lines=data_line - 1,
        encoding="utf8" if m.ascii else "utf8-lossy",
        truncate_ragged_lines=True,
        raise_if_empty=False,
        missing_columns="insert",
        extra_columns="ignore",
        row_index_name="line_no",
        row_index_offset=data_line,
    ).select(
        pl.col("line_no").cast(pl.Int64),
        *(pl.col(f"column_{i + 1}").alias(layout.names[i]) for i in cols),
    )
    used = {layout.names[i] for i in cols}
    pattern, keep = headerish_pattern(layout), []
    if layout.names[0] != "JobID":  # (a header line fails the job-id check: the plan tests those)
        lf = lf.with_columns(_headerish=pl.col(layout.names[0]).str.contains(pattern))
        pattern, keep = None, ["_headerish"]
    # the form of the times, from the first record (only a hint: either form is read)
    nl = mm.find(b"\n", data_start)
    fields = m.text(data_start, len(mm) if nl < 0 else nl).split("|")
    first = dict(zip(layout.names, fields, strict=False))  # (the line may be ragged)
    texts = [first.get(f) for f in ("Submit", "Start", "End")]
    lf = typed_plan(
        lf,
        used,
        tz=reader.tz,
        cluster=reader.cluster,
        keep=keep,
        headerish=pattern,
        times=time_form(texts),
    )
    names = list(layout.names)

    def raw_fields(lines: list[int]) -> pl.DataFrame:
        rows = [m.line(ln).split("|") for ln in lines]
        return pl.DataFrame(
            {
                "line_no": lines,
                **{n: [r[i] if i < len(r) else None for r in rows] for i, n in enumerate(names)},
            },
            schema={"line_no": pl.Int64, **dict.fromkeys(names, pl.String)},
        )

    n_rows = 0
    total = sum(w.n_lines for w in m.windows)
    try:
        for batch in lf.collect_batches(chunk_size=BATCH_ROWS):
            n_rows += batch.height
            # the lines the assembly consumed leave the batches that hold them (a filter in the
            # scan would gather every column of every batch)
            lines = batch.get_column("line_no")
            if consumed and batch.height:
                a = bisect_left(consumed, lines.min())
                b = bisect_right(consumed, lines.max())
                if b > a:
                    gone = pl.Series(consumed[a:b], dtype=pl.Int64).implode()
                    batch = batch.filter(~pl.col("line_no").is_in(gone))
            if bool(batch.get_column("_headerish").fill_null(False).any()):
                return False  # a header the window counts did not see: read it the other way
            reader.n_records += batch.height
            first_line = int(batch.item(0, "line_no")) if batch.height else 0
            reader.take(
                batch.drop("_headerish"), raw_fields, m.line, first_line, ascii_only=m.ascii
            )
    except pl.exceptions.PolarsError:
        return False
    if n_rows != total:
        return False
    reader.parse_window_records()
    return True
