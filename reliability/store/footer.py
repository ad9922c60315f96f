"""Read a parquet file's footer cheaply: its row count and key-value metadata.

A parquet file ends with ``<FileMetaData> <length: u32 LE> PAR1``; ``FileMetaData`` is a
Thrift struct in the compact protocol (Apache Parquet format, ``parquet.thrift``): field 3
``num_rows`` (i64), field 5 ``key_value_metadata`` (list of ``KeyValue{1: key, 2: value}``).
Reading only the footer costs one small read per file (no polars query plan), which is what
the Dataset needs to check every part before a scan.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Footer", "FooterError", "footer_span", "read_footer", "read_num_rows"]

_MAGIC = b"PAR1"
#: footers larger than this are not parquet files written by this package
_MAX_FOOTER = 64 << 20


class FooterError(ValueError):
    """The file does not end with a readable parquet footer."""


@dataclass(frozen=True)
class Footer:
    """What the footer says: ``num_rows`` and the key-value ``metadata``."""

    num_rows: int
    metadata: dict[str, str]


class _Reader:
    """Thrift compact protocol, just enough to walk ``FileMetaData``."""

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def byte(self) -> int:
        if self.pos >= len(self.buf):
            raise FooterError("footer ends early")
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = out = 0
        while True:
            b = self.byte()
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out
            shift += 7
            if shift > 70:
                raise FooterError("malformed varint")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def binary(self) -> bytes:
        n = self.varint()
        if n < 0 or self.pos + n > len(self.buf):
            raise FooterError("string runs past the footer")
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def skip(self, ctype: int, depth: int = 0) -> None:
        if depth > 64:
            raise FooterError("nesting too deep")
        if ctype in (1, 2):  # bool in a field header: no payload
            return
        if ctype == 3:
            self.byte()
        elif ctype in (4, 5, 6):
            self.varint()
        elif ctype == 7:
            self.pos += 8
        elif ctype == 8:
            self.binary()
        elif ctype in (9, 10):
            size, etype = self.list_header()
            for _ in range(size):
                if etype in (1, 2):
                    self.byte()
                else:
                    self.skip(etype, depth + 1)
        elif ctype == 11:
            size = self.varint()
            if size:
                kv = self.byte()
                for _ in range(size):
                    self.skip(kv >> 4, depth + 1)
                    self.skip(kv & 0x0F, depth + 1)
        elif ctype == 12:
            for fid, ftype in self.fields():
                del fid
                self.skip(ftype, depth + 1)
        else:
            raise FooterError(f"unknown thrift type {ctype}")

    def list_header(self) -> tuple[int, int]:
        h = self.byte()
        size = h >> 4
        if size == 15:
            size = self.varint()
        return size, h & 0x0F

    def fields(self):
        last = 0
        while True:
            h = self.byte()
            ftype = h & 0x0F
            if ftype == 0:
                return
            delta = h >> 4
            fid = last + delta if delta else self.zigzag()
            last = fid
            yield fid, ftype


def _parse(buf: bytes) -> Footer:
    r = _Reader(buf)
    num_rows: int | None = None
    meta: dict[str, str] = {}
    for fid, ftype in r.fields():
        if fid == 3 and ftype == 6:
            num_rows = r.zigzag()
        elif fid == 5 and ftype == 9:
            size, etype = r.list_header()
            if etype != 12:
                raise FooterError("key_value_metadata is not a list of structs")
            for _ in range(size):
                key = value = None
                for kid, ktype in r.fields():
                    if kid == 1 and ktype == 8:
                        key = r.binary().decode("utf-8", errors="replace")
                    elif kid == 2 and ktype == 8:
                        value = r.binary().decode("utf-8", errors="replace")
                    else:
                        r.skip(ktype)
                if key is not None:
                    meta[key] = value or ""
        else:
            r.skip(ftype)
    if num_rows is None:
        raise FooterError("footer has no row count")
    return Footer(num_rows, meta)


def _footer_bytes(path: str | Path) -> bytes:
    return footer_span(path)[1]


def footer_span(path: str | Path) -> tuple[int, bytes]:
    """Return where a parquet file's footer (``FileMetaData``) starts, and its bytes.

    Parameters
    ----------
    path : str or Path
        A parquet file.

    Returns
    -------
    (int, bytes)
        The footer's offset in the file [bytes] and its content.

    Raises
    ------
    FooterError
        As :func:`read_footer`.
    """
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size < 12:
            raise FooterError(f"{size} bytes: too short for a parquet file")
        fh.seek(size - 8)
        tail = fh.read(8)
        if tail[4:] != _MAGIC:
            raise FooterError("does not end with the parquet magic bytes (truncated?)")
        (length,) = struct.unpack("<I", tail[:4])
        if length <= 0 or length > min(size - 12, _MAX_FOOTER):
            raise FooterError(f"footer length {length} does not fit a {size}-byte file")
        fh.seek(size - 8 - length)
        return size - 8 - length, fh.read(length)


def read_num_rows(path: str | Path) -> int:
    """Read the row count recorded in a parquet file's footer (reads only the footer).

    Parameters
    ----------
    path : str or Path
        A parquet file.

    Returns
    -------
    int
        Number of rows the file holds.

    Raises
    ------
    FooterError
        As :func:`read_footer`, or if the footer has no row count.
    """
    r = _Reader(_footer_bytes(path))
    for fid, ftype in r.fields():
        if fid == 3 and ftype == 6:
            return r.zigzag()
        r.skip(ftype)
    raise FooterError("footer has no row count")


def read_footer(path: str | Path) -> Footer:
    """Read the row count and key-value metadata of a parquet file.

    Parameters
    ----------
    path : str or Path
        A parquet file.

    Returns
    -------
    Footer
        Its row count and key-value metadata.

    Raises
    ------
    FooterError
        If the file is too short, does not end with ``PAR1``, or its footer cannot be parsed
        (a truncated or overwritten file).
    """
    return _parse(_footer_bytes(path))
