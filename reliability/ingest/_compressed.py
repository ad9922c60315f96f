"""Open an input file as a stream of bytes: plain, or gunzipped on the fly with guards.

The gzip stream has a decompressed-size limit and a compression-ratio guard.

A gzip bomb (a small file that inflates to many GB) is a clear :class:`IngestError`, raised
while streaming, after at most :data:`RATIO_CHECK_AFTER` bytes beyond the ratio limit have been
produced; it never fills the memory or the disk. Multi-member gzip files (``cat a.gz b.gz``)
are read as one stream, as ``gunzip`` does.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import BinaryIO, Protocol

from reliability.errors import IngestError

__all__ = [
    "MAX_DECOMPRESSED_BYTES",
    "MAX_IN_MEMORY_BYTES",
    "MAX_RATIO",
    "RATIO_CHECK_AFTER",
    "ByteStream",
    "is_gzip",
    "open_input",
    "read_all",
    "unsupported_compression",
]

#: most bytes a gzip input may inflate to when it is streamed (sacct exports)
MAX_DECOMPRESSED_BYTES = 16 << 30
#: most bytes a gzip input may inflate to when a reader needs it whole in memory
MAX_IN_MEMORY_BYTES = 4 << 30
#: largest accepted ratio of decompressed to compressed size (text logs compress 5-60:1;
#: zlib's maximum is about 1032:1, which is what a bomb uses)
MAX_RATIO = 250
#: the ratio is checked once this many bytes have been decompressed (small, very
#: repetitive files are fine)
RATIO_CHECK_AFTER = 8 << 20

_GZIP_MAGIC = b"\x1f\x8b"
_READ = 1 << 16


class ByteStream(Protocol):
    """What :func:`open_input` returns: ``read(n)`` (b"" at the end) and ``close()``."""

    def read(self, n: int, /) -> bytes:
        """Read up to ``n`` bytes.

        Parameters
        ----------
        n : int
            Most bytes returned.

        Returns
        -------
        bytes
            The next bytes; empty at the end of the stream.
        """

    def close(self) -> None:
        """Close the stream and the file under it."""


#: magic bytes of the compressed forms no reader inflates, with their names
_OTHER_MAGIC = (
    (b"BZh", "bzip2", "bunzip2"),
    (b"\xfd7zXZ\x00", "xz", "unxz"),
    (b"\x28\xb5\x2f\xfd", "zstd", "unzstd"),
    (b"PK\x03\x04", "zip", "unzip"),
)


def unsupported_compression(start: bytes) -> str | None:
    """Say what an input is when it starts like a compressed form the readers do not inflate.

    Parameters
    ----------
    start : bytes
        The file's first bytes (as stored, or after one gunzip).

    Returns
    -------
    str or None
        E.g. ``"is bzip2-compressed (not supported: decompress it first, e.g. bunzip2)"``;
        None for any other start.
    """
    for magic, name, tool in _OTHER_MAGIC:
        if start.startswith(magic) and (name != "bzip2" or start[3:4] in b"123456789"):
            return f"is {name}-compressed (not supported: decompress it first, e.g. {tool})"
    return None


def is_gzip(path: str | Path) -> bool:
    """Tell whether a file starts with the gzip magic bytes.

    Parameters
    ----------
    path : str or Path
        The file.

    Returns
    -------
    bool
        True for a gzip file; False otherwise or if it is unreadable.
    """
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == _GZIP_MAGIC
    except OSError:
        return False


class _Gunzip:
    """Streaming gunzip with the size and ratio guards (see the module notes)."""

    def __init__(self, src: str, fh: BinaryIO, limit: int) -> None:
        self._src, self._fh, self._limit = src, fh, limit
        self._d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._pending = b""
        self._in = self._out = 0
        self._in_member = True

    def _check(self) -> None:
        if self._out > self._limit:
            raise IngestError(
                self._src,
                f"gzip input inflates to more than {self._limit / 2**30:.0f} GiB: refused "
                "(split the export, e.g. by --starttime/--endtime)",
            )
        consumed = self._in - len(self._pending)  # compressed bytes the output came from
        if self._out > RATIO_CHECK_AFTER and self._out > MAX_RATIO * max(consumed, 1):
            raise IngestError(
                self._src,
                f"gzip input inflates more than {MAX_RATIO}:1 ({consumed:,} bytes gave "
                f"{self._out:,}): refused as a likely decompression bomb; if the file is "
                "genuine, decompress it first (gunzip) and read the plain file",
            )

    def read(self, n: int, /) -> bytes:
        parts: list[bytes] = []
        got = 0
        while got < n:
            if not self._pending:
                self._pending = self._fh.read(_READ)
                self._in += len(self._pending)
                if not self._pending:
                    if self._in_member:
                        raise IngestError(self._src, "corrupt gzip file: truncated stream")
                    break
            if not self._in_member:
                if not self._pending.startswith(_GZIP_MAGIC[: len(self._pending)]):
                    if self._pending.strip(b"\0"):
                        raise IngestError(self._src, "corrupt gzip file: data after the end")
                    self._pending = b""
                    continue
                self._d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                self._in_member = True
            try:
                chunk = self._d.decompress(self._pending, n - got)
            except zlib.error as exc:
                raise IngestError(self._src, f"corrupt gzip file: {exc}") from None
            self._pending = self._d.unconsumed_tail
            if self._d.eof:
                self._pending = self._d.unused_data + self._pending
                self._in_member = False
            if chunk:
                self._out += len(chunk)
                self._check()
                parts.append(chunk)
                got += len(chunk)
        return b"".join(parts)

    def close(self) -> None:
        self._fh.close()


def open_input(path: str | Path, *, limit: int = MAX_DECOMPRESSED_BYTES) -> ByteStream:
    """Open a file for reading bytes, gunzipping it on the fly if it is gzip.

    Parameters
    ----------
    path : str or Path
        The input file.
    limit : int
        Most decompressed bytes a gzip file may produce [bytes].

    Returns
    -------
    ByteStream
        The open stream; the caller closes it. Its reads raise :class:`IngestError` for a
        corrupt gzip stream or one that breaks the limits (``limit``, :data:`MAX_RATIO`).

    Raises
    ------
    IngestError
        If the file cannot be opened or read.
    """
    src = str(path)
    try:
        fh = open(path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    except OSError as exc:
        raise IngestError(src, f"cannot read file: {exc.strerror or exc}") from None
    try:
        magic = fh.read(2)
        fh.seek(0)
    except OSError as exc:
        fh.close()
        raise IngestError(src, f"cannot read file: {exc.strerror or exc}") from None
    if magic == _GZIP_MAGIC:
        return _Gunzip(src, fh, limit)
    return fh


def read_all(path: str | Path, *, limit: int = MAX_IN_MEMORY_BYTES) -> bytes:
    """Read the whole (decompressed) content of a file, with the guards of :func:`open_input`.

    Parameters
    ----------
    path : str or Path
        The input file.
    limit : int
        Most bytes held in memory [bytes].

    Returns
    -------
    bytes
        The content.

    Raises
    ------
    IngestError
        If the file cannot be read, is corrupt gzip, or breaks the limits.
    """
    stream = open_input(path, limit=limit)
    try:
        if not isinstance(stream, _Gunzip):
            try:
                return stream.read()
            except OSError as exc:
                raise IngestError(str(path), f"cannot read file: {exc.strerror or exc}") from None
        parts = []
        while chunk := stream.read(16 << 20):
            parts.append(chunk)
        return b"".join(parts)
    finally:
        stream.close()
