"""The cluster simulator's failure process against closed forms: the convex rate ramp (HPCA'25
Fig. 5: ~2.5 to ~17.5 failures per 1000 node-days, averaging 6.5), the lemons' share of the
failures and their root-cause mix (Table 2), and the drawn counts (Poisson) per third of the
run."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import polars as pl
import pytest
from scipy import stats

from reliability.sim.config import LEMON_CAUSE_MIX, ClusterConfig, FailureConfig, load_preset
from reliability.sim.failures import draw_failures, rate_schedule


def _ramp_integral(lo: float, hi: float, k: float, a: float, b: float) -> float:
    """Integral over [a, b] (fractions of the run) of lo + (hi - lo) x^k."""
    return lo * (b - a) + (hi - lo) * (b ** (k + 1) - a ** (k + 1)) / (k + 1)


def test_convex_ramp_keeps_the_endpoints_and_the_mean():
    """rsc1: starts at 2.5, ends at 17.5, its draws average 8.0 (trapezoid on the hourly grid
    vs the closed form; r_f by the paper's rule then measures about 6.5, README Calibration),
    and the exponent is (17.5 - 2.5) / (8.0 - 2.5) - 1 = 1.727."""
    cfg = load_preset("rsc1")
    f = cfg.failures
    k = (17.5 - 2.5) / (8.0 - 2.5) - 1
    assert f.ramp_exponent == pytest.approx(k)
    s = rate_schedule(cfg)
    r = 1000 * s["rate_per_node_day"].to_numpy()
    t = s["t_s"].to_numpy() / cfg.horizon_s
    assert r[0] == pytest.approx(2.5)
    assert r[-1] == pytest.approx(17.5)
    mean = np.trapezoid(r[t <= 1.0], t[t <= 1.0])
    assert mean == pytest.approx(8.0, rel=1e-3)
    # half-way the rate is still close to the start: the spike comes at the end (Fig. 5)
    assert r[np.searchsorted(t, 0.5)] == pytest.approx(2.5 + 15 * 0.5**k, rel=1e-3)


def test_lemon_multiplier_carries_the_configured_share():
    """m = s (1 - f) / ((1 - s) f): lemons' expected share of the drawn failures is s, and
    the fleet rate splits as (1 - f) r_o + f m r_o."""
    cfg = load_preset("rsc1")
    f = cfg.failures
    n_lemons = round(f.lemon_fraction * cfg.n_nodes)
    frac = n_lemons / cfg.n_nodes
    m = f.lemon_multiplier(cfg.n_nodes)
    assert frac * m / (1 - frac + frac * m) == pytest.approx(f.lemon_failure_share)
    s = rate_schedule(cfg)
    fleet = (1 - frac) * s["ordinary_rate_per_node_day"] + frac * s["lemon_rate_per_node_day"]
    assert np.allclose(fleet.to_numpy(), s["rate_per_node_day"].to_numpy())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_drawn_failures_follow_the_schedule(seed):
    """Drawn failures (before the simulator skips those on nodes out of service) per third of
    the run and lemons' share: each within the 99.9% interval of its closed-form expectation."""
    base = load_preset("rsc1")
    cfg = replace(base, n_nodes=1000, days=120.0)
    f = cfg.failures
    ev, lemon = draw_failures(cfg, np.random.default_rng(seed))
    fail = ev.filter(pl.col("kind") == "failure")
    k = f.ramp_exponent
    lo, hi = f.rate_start_per_1000_node_days / 1000, f.rate_end_per_1000_node_days / 1000
    for a, b in ((0, 1 / 3), (1 / 3, 2 / 3), (2 / 3, 1)):
        expected = cfg.n_nodes * cfg.days * _ramp_integral(lo, hi, k, a, b)
        got = fail.filter(
            (pl.col("time_s") >= a * cfg.horizon_s) & (pl.col("time_s") < b * cfg.horizon_s)
        ).height
        low, high = stats.poisson.ppf([0.0005, 0.9995], expected)
        assert low <= got <= high, (a, b, got, expected)
    share = fail["lemon"].mean()
    n = fail.height
    sd = np.sqrt(f.lemon_failure_share * (1 - f.lemon_failure_share) / n)
    assert abs(share - f.lemon_failure_share) < 3.3 * sd + 0.02  # + Poisson spread over 12 lemons
    assert lemon.sum() == round(f.lemon_fraction * cfg.n_nodes)


def test_lemon_root_causes_follow_the_papers_mix():
    """With 200 lemons each root cause of HPCA'25 Table 2 gets within one lemon of its share
    (GPU 28.2%, DIMM 20.5%, PCIe 15.4%, EUD 10.3%, NIC 7.7%, BIOS 7.7%, PSU 5.1%, optics 2.6%,
    CPU 2.6%), and a lemon always fails from its own root cause."""
    cfg = ClusterConfig(
        n_nodes=2000,
        days=60.0,
        failures=FailureConfig(lemon_fraction=0.1, lemon_rate_multiplier=30.0),
    )
    ev, lemon = draw_failures(cfg, np.random.default_rng(0))
    lf = ev.filter((pl.col("kind") == "failure") & pl.col("lemon"))
    per_node = lf.group_by("node").agg(
        causes=pl.col("cause").n_unique(), cause=pl.col("cause").first()
    )
    assert (per_node["causes"] == 1).all()
    counts = dict(per_node.group_by("cause").len().iter_rows())
    n = int(lemon.sum())
    assert n == 200
    assert per_node.height == n
    total = sum(LEMON_CAUSE_MIX.values())
    for cause, p in LEMON_CAUSE_MIX.items():
        assert abs(counts.get(cause, 0) - n * p / total) < 1.0, cause


def test_bad_schedules_are_refused():
    with pytest.raises(ValueError, match="must lie between"):
        FailureConfig(rate_mean_per_1000_node_days=20.0)
    with pytest.raises(ValueError, match="strictly between"):
        FailureConfig(rate_mean_per_1000_node_days=2.5)
    with pytest.raises(ValueError, match="lemon_failure_share"):
        FailureConfig(lemon_failure_share=1.0)
    # a linear ramp when no mean is given: the mean is the midpoint
    assert FailureConfig().ramp_exponent == 1.0
