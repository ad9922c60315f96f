"""Shared fixtures. Real Slurm/kernel samples are read from ../shared/data beside the clone
(they are not redistributable: see datasets/README.md); CI lays that folder out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("RELIABILITY_SHARED_DATA", ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared() -> Path:
    """Folder of real sample outputs (../shared/data)."""
    if not SHARED.is_dir():
        pytest.skip(f"real sample data not found at {SHARED} (set RELIABILITY_SHARED_DATA)")
    return SHARED


@pytest.fixture(scope="session")
def run1(shared: Path) -> Path:
    """Real Slurm 22.05.8 output, final snapshot of run 1."""
    return shared / "slurm-real-run1" / "final_snapshot"
