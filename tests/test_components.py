"""Component reliability of a Dataset (:func:`reliability.models.component_reliability`) on
known-parameter fleets written as the ``health`` reader's files (not the simulator): two
component types with Weibull lifetimes of known shape (wear-out 2.5, infant mortality 0.6),
repaired components failing again at a known constant rate; and a Dataset without an inventory.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import numpy as np

from reliability._result import frame_is_finite
from reliability.models.lifetimes import component_reliability
from reliability.store import Dataset

T0 = datetime(2024, 1, 1, tzinfo=UTC)
YEARS_H = 2 * 365 * 24.0


def _fleet(tmp_path, seed: int = 3):
    rng = np.random.default_rng(seed)
    inv = ["cluster,component_type,component_id,in_service,out_of_service"]
    fails = []
    truth = {"psu": (2.5, 9000.0), "gpu": (0.6, 30000.0)}  # Weibull (shape, scale [h])
    for ctype, (shape, scale) in truth.items():
        for i in range(400):
            cid = f"{ctype}{i:03d}"
            inv.append(f"c,{ctype},{cid},{T0.isoformat()},")
            t = scale * rng.weibull(shape)
            while t < YEARS_H:  # repaired in 8 h, then fails again at a constant rate
                at = T0 + timedelta(hours=float(t))
                fails.append({"cluster": "c", "component_type": ctype, "component_id": cid,
                              "failed_at": at.isoformat(), "repaired_at": (at + timedelta(hours=8)).isoformat()})  # fmt: skip
                t += 8 + rng.exponential(4000.0)
    (tmp_path / "inventory.csv").write_text("\n".join(inv) + "\n")
    (tmp_path / "failures.jsonl").write_text("\n".join(json.dumps(f) for f in fails) + "\n")
    ds = Dataset(tmp_path / "ds")
    ds.ingest("health", [tmp_path / "inventory.csv", tmp_path / "failures.jsonl"],
              observed_at=T0 + timedelta(hours=YEARS_H + 9))  # fmt: skip
    return ds, truth


def test_lifetime_verdicts_and_shapes_per_component_type(tmp_path):
    ds, truth = _fleet(tmp_path)
    r = component_reliability(ds)
    s = r.summary
    assert set(s.get_column("component_type")) == {"psu", "gpu"}
    assert frame_is_finite(s)
    for row in s.iter_rows(named=True):
        shape = truth[row["component_type"]][0]
        assert row["components"] == 400
        assert row["shape_low"] <= shape <= row["shape_high"], row
    verdict = dict(zip(s["component_type"], s["verdict"], strict=True))
    assert verdict["psu"].startswith("wear-out")
    assert verdict["gpu"].startswith("infant mortality")


def test_time_between_failures_is_per_component_type(tmp_path):
    """Each (cluster, type) is its own system: a PSU's repairs and a GPU's are not one process.
    After the first failure the gaps are exponential (mean 4,000 h + 8 h of repair), so the
    system-wide shape of the repaired GPUs' gaps (dominated by the renewals) is near 1."""
    ds, _ = _fleet(tmp_path)
    r = component_reliability(ds)
    systems = r.interfailure.systems
    assert sorted(systems.get_column("system")) == ["c gpu", "c psu"]
    n = ds.component_failures.group_by("component_type").len()
    got = dict(zip(systems["system"], systems["failures"], strict=True))
    assert got == {f"c {t}": k for t, k in n.iter_rows()}


def test_no_inventory_says_why(tmp_path):
    p = tmp_path / "failures.jsonl"
    p.write_text(json.dumps({"cluster": "c", "component_type": "gpu", "component_id": "g1",
                             "failed_at": "2025-01-01T00:00:00Z"}) + "\n")  # fmt: skip
    ds = Dataset(tmp_path / "ds")
    ds.ingest("health", [p])
    r = component_reliability(ds)
    assert r.lifetimes is None
    assert any("no component inventory" in n for n in r.notes)
    assert r.summary.height == 0
    text = str(r).lower()
    assert "nan" not in text
    assert "inf " not in text
