"""Atomic file writes: write to a temporary file in the same folder, fsync, rename.

Temporary files are named ``.<dest>.<host>-<pid>.<random>.tmp`` (``host`` is a short tag of
this machine's name), so a cleanup can tell a live writer's file from a crash leftover
(:func:`temp_owner`).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

__all__ = [
    "HOST_TAG",
    "file_sha256",
    "temp_owner",
    "write_bytes_atomic",
    "write_json_atomic",
    "write_parquet_atomic",
]

#: short, file-name-safe tag of this host (temp files carry it beside the writer's pid)
HOST_TAG = hashlib.sha1(socket.gethostname().encode(), usedforsecurity=False).hexdigest()[:8]


def _prefix(dest: Path) -> str:
    return f".{dest.name}.{HOST_TAG}-{os.getpid()}."


def temp_owner(name: str) -> tuple[str, int] | None:
    """Tell who wrote a temporary file made by this module, from its name.

    Parameters
    ----------
    name : str
        A file name (no folder), e.g. ``.manifest.json.ab12cd34-4242.x7k2q9.tmp``.

    Returns
    -------
    (str, int) or None
        The writer's host tag (8 characters) and process id, or None if ``name`` is not a
        temporary file of this module.
    """
    if not (name.startswith(".") and name.endswith(".tmp")):
        return None
    parts = name[1:-4].split(".")
    for p in reversed(parts):
        host, sep, pid = p.partition("-")
        if sep and len(host) == 8 and pid.isdigit():
            return host, int(pid)
    return None


def file_sha256(path: str | Path) -> tuple[str, int]:
    """Hash a file, reading it in 1 MiB blocks.

    Parameters
    ----------
    path : str or Path
        The file.

    Returns
    -------
    (str, int)
        Its sha256 hex digest and size [bytes].
    """
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def _replace(tmp: str, dest: Path) -> None:
    os.replace(tmp, dest)
    try:
        fd = os.open(dest.parent, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _explain(exc: OSError, dest: Path) -> OSError:
    """Return the same OSError with a message that names ``dest`` and what was kept."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        what = {
            errno.ENOSPC: "no space left on the device",
            errno.EDQUOT: "disk quota exceeded",
            errno.EFBIG: "file too large for this file system or limit",
        }[exc.errno]
        return OSError(exc.errno, f"{what} while writing {dest} (nothing was replaced)", str(dest))
    return exc


#: what :func:`_write_errno` appends to a failed write to learn why it failed [bytes]
_PROBE_BYTES = 1 << 20


def _write_errno(exc: Exception, tmp: str) -> int | None:
    """Tell the ``errno`` of a write that polars reported as its own error (None: not I/O).

    Polars names it (``os error 28``) when a data page fails to be written, but not when the
    failure comes inside the footer: ``Invalid thrift: transport error`` has lost it. Then
    appending to the same file (up to :data:`_PROBE_BYTES`) meets the same refusal (no space,
    quota, file size limit) and says which; if that succeeds, the error was not the disk's.
    """
    m = re.search(r"os error (\d+)", str(exc))
    if m is not None:
        return int(m.group(1))
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_APPEND)
    except OSError as err:
        return err.errno
    try:
        block = bytes(1 << 16)
        for _ in range(_PROBE_BYTES // len(block)):
            os.write(fd, block)
        os.fsync(fd)
    except OSError as err:
        return err.errno
    finally:
        os.close(fd)
    return None


def write_parquet_atomic(
    frame: pl.DataFrame | pl.LazyFrame,
    dest: Path,
    metadata: dict[str, str] | None = None,
    finish: Callable[[Path], None] | None = None,
) -> tuple[int, str]:
    """Write ``frame`` to ``dest`` so that readers see the old file or the new one, never half.

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        The rows; a LazyFrame is written by polars' streaming sink, batch by batch (what it
        computes, e.g. a cast, is never materialised whole).
    dest : Path
        Final path.
    metadata : dict of str to str or None
        Parquet key-value metadata stored in the footer.
    finish : callable or None
        Called with the temporary file once it is written, before it is synced and renamed
        (e.g. to seal it: write a digest of its content into a placeholder of its footer).

    Returns
    -------
    (int, str)
        (size [bytes], sha256 hex digest) of the file written.

    Raises
    ------
    OSError
        If the disk refuses the write (full, quota, file size limit), also when polars reports
        it as its own error; the message names ``dest``, and ``dest`` is left as it was.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=_prefix(dest), suffix=".tmp", dir=dest.parent)
    os.close(fd)
    try:
        try:
            if isinstance(frame, pl.LazyFrame):
                frame.sink_parquet(tmp, compression="zstd", statistics=True, metadata=metadata)
            else:
                frame.write_parquet(tmp, compression="zstd", statistics=True, metadata=metadata)
        except pl.exceptions.PolarsError as exc:  # polars reports I/O errors as its own
            code = _write_errno(exc, tmp)
            if code is None:
                raise
            raise OSError(code, os.strerror(code), tmp) from exc
        if finish is not None:
            finish(Path(tmp))
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        sha, size = file_sha256(tmp)
        _replace(tmp, dest)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise _explain(exc, dest) from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return size, sha


def write_bytes_atomic(data: bytes, dest: Path) -> None:
    """Write bytes to a file atomically.

    A temporary file in the same folder is written, fsynced and renamed over ``dest``, so a
    reader sees the old content or the new, never a part; on failure the temporary file is
    removed and ``dest`` is left as it was.

    Parameters
    ----------
    data : bytes
        The new content.
    dest : Path
        The file to (over)write; its folder is created if missing.

    Raises
    ------
    OSError
        With a message naming ``dest``, if the write or rename fails.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=_prefix(dest), suffix=".tmp", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        _replace(tmp, dest)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise _explain(exc, dest) from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(obj: Any, dest: Path) -> None:
    """Write an object as indented JSON to a file atomically (see :func:`write_bytes_atomic`).

    Parameters
    ----------
    obj : object
        A JSON-serialisable value (anything else is written as its ``str``).
    dest : Path
        The file to (over)write.
    """
    text = json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n"
    write_bytes_atomic(text.encode("utf-8"), dest)
