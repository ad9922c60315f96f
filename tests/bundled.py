"""The simulator presets bundled with the package, listed from the preset files themselves (so
a new preset does not break the tests that quote the list in a message)."""

from __future__ import annotations

from pathlib import Path

PRESETS = Path(__file__).resolve().parents[1] / "reliability" / "sim" / "presets"


def _bundled(kind: str) -> list[str]:
    return sorted(
        p.stem for p in PRESETS.glob("*.toml") if f"[{kind}]" in p.read_text(encoding="utf-8")
    )


BUNDLED_CLUSTER = _bundled("cluster")
BUNDLED_POD = _bundled("pod")
