"""Shared fixtures. Real Slurm/kernel samples are read from ../shared/data beside the clone
(they are not redistributable: see datasets/README.md); CI lays that folder out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("RELIABILITY_SHARED_DATA", ROOT.parent / "shared" / "data"))
#: set by .ci/run: a test whose prerequisite is missing fails instead of skipping
IN_CI = os.environ.get("RELIABILITY_CI") == "1"


def require(condition: bool, reason: str) -> None:
    """Skip the calling test when ``condition`` is false, except in CI, where it fails.

    For prerequisites that CI provides (../shared/data, Debian's Slurm, MariaDB, Chromium):
    locally a missing one is a skip with its reason; in CI it is a failure.
    """
    if condition:
        return
    if IN_CI:
        pytest.fail(f"{reason} (required in CI: RELIABILITY_CI=1)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def shared() -> Path:
    """Folder of real sample outputs (../shared/data)."""
    require(
        SHARED.is_dir(), f"real sample data not found at {SHARED} (set RELIABILITY_SHARED_DATA)"
    )
    return SHARED


@pytest.fixture(scope="session")
def run1(shared: Path) -> Path:
    """Real Slurm 22.05.8 output, final snapshot of run 1."""
    return shared / "slurm-real-run1" / "final_snapshot"
