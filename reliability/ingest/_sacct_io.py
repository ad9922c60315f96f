"""File access for :func:`reliability.ingest.slurm.read_sacct`: the streaming and in-memory
fast paths for clean exports, and fetching raw lines for the quarantine."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

import polars as pl

from reliability.ingest.slurm_fields import CHUNK_ROWS, HEADER_FIRST, USED_FIELDS

__all__ = ["StreamFailed", "fast_records", "fetch_lines", "guarded", "head", "stream_records"]


def head(path: str | Path, n: int = 4096) -> bytes:
    """The first ``n`` bytes of a file (decompressed if gzip); b"" if unreadable."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(n)
        if head[:2] == b"\x1f\x8b":
            with gzip.open(path, "rb") as gz:
                head = gz.read(n)
    except (OSError, EOFError):
        return b""
    return head


class StreamFailed(Exception):
    """The streaming fast path met a malformed line; read again line by line."""


def guarded(batches: Iterator[pl.DataFrame]) -> Iterator[pl.DataFrame]:
    """Re-raise polars' refusal of a ragged line as :class:`StreamFailed`."""
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except pl.exceptions.PolarsError as exc:
            raise StreamFailed(str(exc)) from exc
        yield batch


def _header(line: str) -> tuple[list[str], bool] | None:
    """(field names, trailing '|') of a plain sacct header line, or None if it is not one
    the fast paths can take (no JobID first, duplicate or padded names)."""
    if "|" not in line or not HEADER_FIRST.match(line.split("|", 1)[0].strip()):
        return None
    names = line.split("|")
    trailing = names[-1] == ""
    if trailing:
        names = names[:-1]
    if len(set(names)) != len(names) or not all(n.strip() == n and n for n in names):
        return None
    return names, trailing


def fast_records(data: bytes) -> tuple[list[str], bool, pl.DataFrame] | None:
    """Parse a clean export straight into columns with polars' CSV reader, or return None.

    Clean means: one header line first, no NUL bytes, and every line with exactly the
    header's number of separators (proved by counting: no line has more, since polars refuses
    ragged lines, and the total equals lines x separators; a blank or comment line breaks it).
    Anything else goes through the line-by-line path, which repairs and quarantines.
    """
    nl = data.find(b"\n")
    header = data[: nl if nl >= 0 else len(data)].decode("utf-8", errors="replace").rstrip("\r")
    parsed = _header(header)
    # Blank, comment or split lines fail the counts below; NUL bytes are left to the slow path.
    if parsed is None or b"\x00" in data:
        return None
    names, trailing = parsed
    if data.count(header.encode()) != 1:
        return None
    try:
        frame = pl.read_csv(
            data, separator="|", quote_char=None, infer_schema=False, has_header=True,
            encoding="utf8-lossy", truncate_ragged_lines=False,
        )  # fmt: skip
    except (pl.exceptions.ComputeError, pl.exceptions.ShapeError, pl.exceptions.NoDataError):
        return None
    expected = len(names) - 1 + int(trailing)
    n_lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    if n_lines != frame.height + 1 or data.count(b"|") != (frame.height + 1) * expected:
        return None
    if trailing:
        frame = frame.select(frame.columns[: len(names)])
    frame.columns = names
    return (
        names,
        trailing,
        frame.with_row_index("line_no", offset=2).with_columns(pl.col("line_no").cast(pl.Int64)),
    )


def stream_records(path: Path) -> tuple[list[str], bool, int, Iterator[pl.DataFrame]] | None:
    """Stream a clean, uncompressed export in batches (bounded memory), or return None.

    A first pass reads the file in 16 MB blocks to check that the first line is a header,
    that there are no NUL / 0x1f bytes, and that separators = lines x header separators;
    polars then streams the used columns in batches of :data:`CHUNK_ROWS` records.
    Returns (names, trailing, number of records, batches).
    """
    with path.open("rb") as fh:
        head = fh.read(1 << 16)
        if head[:2] == b"\x1f\x8b":
            return None
        nl = head.find(b"\n")
        if nl < 0:
            return None
        parsed = _header(head[:nl].decode("utf-8", errors="replace").rstrip("\r"))
        if parsed is None:
            return None
        names, trailing = parsed
        fh.seek(0)
        pipes = newlines = 0
        last = b""
        tail = b""
        for block in iter(lambda: fh.read(1 << 24), b""):
            if b"\x00" in block or b"\x1f" in block:
                return None
            if b"\nJobID" in tail + block:
                return None  # concatenated exports: the line-by-line path reads them segment-wise
            tail = block[-16:]
            pipes += block.count(b"|")
            newlines += block.count(b"\n")
            last = block
    n_lines = newlines + (0 if last.endswith(b"\n") else 1)
    expected = len(names) - 1 + int(trailing)
    if pipes != n_lines * expected or n_lines < 2:
        return None
    used = [n for n in names if n in USED_FIELDS]
    lf = pl.scan_csv(
        path, separator="|", quote_char=None, infer_schema=False, has_header=True,
        encoding="utf8-lossy", truncate_ragged_lines=False, row_index_name="line_no",
        row_index_offset=2, new_columns=[*names, ""] if trailing else None,
    ).select(pl.col("line_no").cast(pl.Int64), *used)  # fmt: skip
    return names, trailing, n_lines - 1, iter(lf.collect_batches(chunk_size=CHUNK_ROWS))


def fetch_lines(path: Path, line_nos: list[int]) -> pl.DataFrame:
    """``line_no``, ``line`` of the given physical lines, streamed (for quarantine text)."""
    lf = pl.scan_csv(
        path, has_header=False, separator="\x1f", quote_char=None, infer_schema=False,
        new_columns=["line"], encoding="utf8-lossy", row_index_name="line_no", row_index_offset=1,
    )  # fmt: skip
    return (
        lf.filter(pl.col("line_no").is_in(line_nos))
        .select(pl.col("line_no").cast(pl.Int64), "line")
        .collect()
    )
