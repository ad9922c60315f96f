"""Atomic file writes: write to a temporary file in the same folder, fsync, rename."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import polars as pl

__all__ = ["write_json_atomic", "write_parquet_atomic"]


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


def write_parquet_atomic(frame: pl.DataFrame, dest: Path) -> None:
    """Write ``frame`` to ``dest`` so that readers see the old file or the new one, never half."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    os.close(fd)
    try:
        frame.write_parquet(tmp, compression="zstd", statistics=True)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        _replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(obj: Any, dest: Path) -> None:
    """Write ``obj`` as indented JSON to ``dest`` atomically."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(obj, fh, indent=2, ensure_ascii=False, default=str)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        _replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
