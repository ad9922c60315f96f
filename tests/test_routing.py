"""Slice all-to-all throughput by max concurrent flow (Zu et al. NSDI'24 Table 2)."""

from __future__ import annotations

import pytest

from reliability.models import all_to_all_throughput, dimension_order_load


def test_healthy_torus_closed_forms():
    """On a k-ary torus all-to-all is limited by the busiest dimension: per chip
    ``(N − 1) / (N · avg ring distance / links per dim)``. 4x4x4: 63/32; 4x4x8: the ring of 8
    carries twice the hops, 127/128."""
    assert all_to_all_throughput((4, 4, 4)).healthy == pytest.approx(63 / 32, rel=1e-6)
    assert all_to_all_throughput((4, 4, 8)).healthy == pytest.approx(127 / 128, rel=1e-6)
    # dimension-order routing with even tie-splitting reaches the optimum on the regular torus
    dor = dimension_order_load((4, 4, 4))
    assert dor["per_chip"] == pytest.approx(63 / 32)
    assert dor["max_load"] == pytest.approx(dor["mean_load"])  # perfectly balanced


def test_symmetry_reduction_is_exact():
    """The LP reduced by the torus symmetries gives the same optimum as the full LP."""
    full = all_to_all_throughput((4, 4, 4), failed_ocs=("x", 3), use_symmetry=False)
    fast = all_to_all_throughput((4, 4, 4), failed_ocs=("x", 3))
    assert fast.failed == pytest.approx(full.failed, rel=1e-6)
    assert fast.variables < full.variables / 3


def test_failed_ocs_beside_table2():
    """One OCS down: the optimal flow loses little (4x4x4: 96.9%; NSDI'24 measured 92.2% with
    its routing). The twisted 4x4x8 beats the regular one and barely notices the failure (paper
    101.7%, i.e. within noise of 100%; an optimal flow cannot gain from losing links)."""
    r = all_to_all_throughput((4, 4, 4), failed_ocs=("y", 6))
    assert r.links_lost == 1
    assert r.ratio == pytest.approx(0.969, abs=0.005)
    assert r.paper_ratio == pytest.approx(70.0 / 75.9)
    assert r.ratio > r.paper_ratio  # the optimum bounds any real routing
    tw = all_to_all_throughput((4, 4, 8), twisted=True, failed_ocs=("z", 0))
    plain = all_to_all_throughput((4, 4, 8), failed_ocs=("z", 0))
    assert tw.healthy > 1.7 * plain.healthy
    assert 0.98 < tw.ratio <= 1.0
    assert tw.links_lost == 2  # one link in each of the two cubes
    assert "Table 2" in str(tw)
