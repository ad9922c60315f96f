"""Repairable systems: Crow-AMSAA against generated power-law NHPP data with known β
(coverage of its exact interval and size of its test of β = 1 over seeds), inter-failure
gaps by hand, and the Weibull shape of generated renewal processes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl
import pytest

from reliability.models.lifetimes import crow_amsaa, fit_interfailure, interfailure_times

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _nhpp(rng: np.random.Generator, beta: float, lam: float, end: float) -> np.ndarray:
    """Power-law NHPP on (0, end]: N ~ Poisson(λ end^β), then the times are iid with CDF
    (t / end)^β (inversion)."""
    n = rng.poisson(lam * end**beta)
    return end * rng.uniform(size=n) ** (1.0 / beta)


@pytest.mark.parametrize("beta", [0.6, 1.0, 1.8])
def test_crow_amsaa_interval_covers_beta(beta):
    """Over 2,000 generated systems (about 60 failures each), the 95% interval of β covers
    the true β in 93-97%; with β = 1 the test of a constant intensity rejects 3-8%."""
    rng = np.random.default_rng(int(beta * 100))
    end = 1000.0
    lam = 60.0 / end**beta
    fits = [crow_amsaa(_nhpp(rng, beta, lam, end), end) for _ in range(2000)]
    ok = [f for f in fits if f.beta is not None]
    assert len(ok) > 1990
    cov = np.mean([f.beta_low <= beta <= f.beta_high for f in ok])
    assert 0.93 <= cov <= 0.97, cov
    mean_unbiased = np.mean([f.beta_unbiased for f in ok])
    assert mean_unbiased == pytest.approx(beta, rel=0.02)  # (n-1)/n removes the MLE's bias
    if beta == 1.0:
        size = np.mean([f.p_constant < 0.05 for f in ok])
        assert 0.03 <= size <= 0.08, size
    else:
        trend = {0.6: "improving", 1.8: "deteriorating"}[beta]
        assert np.mean([f.trend.startswith(trend) for f in ok]) > 0.9


def test_crow_amsaa_small_and_bad_input():
    few = crow_amsaa(np.array([3.0, 5.0]), 10.0, system="s")
    assert few.beta is None
    assert "not estimable" in str(few)
    assert few.summary["beta"].to_list() == [None]
    with pytest.raises(ValueError, match="outside"):
        crow_amsaa(np.array([3.0, 12.0, 1.0]), 10.0)


def _failures(rows):
    return pl.DataFrame(
        [{"cluster": c, "component_id": n, "failed_at": T0 + timedelta(hours=f),
          "repaired_at": T0 + timedelta(hours=r)} for c, n, f, r in rows]
    )  # fmt: skip


def test_interfailure_gaps_by_hand():
    """Node a fails at 0, 10, 30 h (repaired 1 h later each time); the records end at 50 h:
    gaps 10, 20 and a censored 20 start to start; 9, 19 and a censored 19 up-time."""
    cf = _failures([("s", "a", 0, 1), ("s", "a", 10, 11), ("s", "a", 30, 31), ("s", "b", 5, 6)])
    end = T0 + timedelta(hours=50)
    g = interfailure_times(cf, observation_end=end).filter(pl.col("component_id") == "a")
    assert g["gap_h"].to_list() == [10.0, 20.0, 20.0]
    assert g["failed"].to_list() == [True, True, False]
    u = interfailure_times(cf, observation_end=end, measure="up_time").filter(
        pl.col("component_id") == "a"
    )
    assert u["gap_h"].to_list() == [9.0, 19.0, 19.0]
    inv = pl.DataFrame({"cluster": ["s", "s"], "component_id": ["a", "b"],
                        "in_service": [T0, T0], "out_of_service": [T0 + timedelta(hours=40), None]})  # fmt: skip
    left = interfailure_times(cf, inv, observation_end=end).filter(pl.col("component_id") == "a")
    assert left["gap_h"].to_list() == [10.0, 20.0, 10.0]  # censored at leaving service


def test_interfailure_weibull_shape_of_a_generated_renewal_process():
    """100 nodes whose gaps are Weibull(0.7): the pooled per-node shape's interval holds 0.7
    and the verdict is a decreasing hazard; the text and tables print no nan."""
    rng = np.random.default_rng(8)
    rows, end_h = [], 20000.0
    for node in range(100):
        t = 0.0
        while True:
            t += 300.0 * rng.weibull(0.7)
            if t > end_h:
                break
            rows.append(("sys", f"n{node}", t, t + 0.5))
    cf = _failures(rows)
    inv = pl.DataFrame({"cluster": "sys", "component_id": [f"n{i}" for i in range(100)],
                        "in_service": T0, "out_of_service": None},
                       schema_overrides={"out_of_service": pl.Datetime("us", "UTC")})  # fmt: skip
    r = fit_interfailure(cf, inv, observation_end=T0 + timedelta(hours=end_h))
    s = r.systems.row(0, named=True)
    assert s["node_shape_low"] <= 0.7 <= s["node_shape_high"]
    assert s["node_verdict"] == "decreasing hazard"
    assert s["nodes"] == 100
    assert r.nodes.height > 50
    assert "nan" not in str(r).lower()


def _renewal_fleet(rng, n_nodes=200, shape=0.8, var=1.0, horizon_h=2000.0, mean_gap_h=400.0):
    """Nodes whose gaps are Weibull(shape) renewals, each node's hazard scaled by its own
    Gamma(mean 1, variance var) factor: known shape, heterogeneous rates."""
    from math import gamma

    frail = rng.gamma(1 / var, var, n_nodes)
    gaps, failed, node = [], [], []
    for i in range(n_nodes):
        scale = mean_gap_h / gamma(1 + 1 / shape) * frail[i] ** (-1 / shape)
        t = 0.0
        while True:
            g = scale * rng.weibull(shape)
            if t + g > horizon_h:
                gaps.append(horizon_h - t)
                failed.append(False)
                node.append(i)
                break
            gaps.append(g)
            failed.append(True)
            node.append(i)
            t += g
    return np.array(gaps), np.array(failed), np.array(node)


def test_frailty_removes_the_pooling_bias_of_the_shape():
    """Issue 40: pooling nodes that fail at different rates drags the Weibull shape down; a
    gamma frailty per node gives it back. True shape 0.8, node rates CV 1, 8 fleets."""
    from reliability.models.lifetimes.repairable import weibull_frailty
    from reliability.models.lifetimes.weibull import fit_weibull

    frail, pooled, covered = [], [], 0
    for seed in range(8):
        g, f, n = _renewal_fleet(np.random.default_rng(seed))
        w = weibull_frailty(g, f, n)
        frail.append(w["shape"])
        covered += w["shape_low"] <= 0.8 <= w["shape_high"]
        pooled.append(fit_weibull(g, f, engine="numpy")["shape"])
        assert w["frailty_var"] == pytest.approx(1.0, abs=0.35)
    assert np.mean(frail) == pytest.approx(0.8, abs=0.03)
    assert np.mean(pooled) < 0.66
    assert covered >= 6


def test_systems_are_listed_in_number_order():
    """lanl-2 before lanl-10 (were sorted as text: lanl-10, lanl-11, ..., lanl-2)."""
    from datetime import UTC, datetime, timedelta

    import polars as pl

    from reliability.models.lifetimes.repairable import fit_interfailure

    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    rows = [
        {"cluster": c, "component_id": "n1", "failed_at": t0 + timedelta(days=d),
         "repaired_at": t0 + timedelta(days=d, hours=2)}
        for c in ("lanl-10", "lanl-2", "lanl-1") for d in (1, 5, 9)
    ]  # fmt: skip
    r = fit_interfailure(pl.DataFrame(rows), observation_end=t0 + timedelta(days=20))
    assert r.systems.get_column("system").to_list() == ["lanl-1", "lanl-2", "lanl-10"]


def test_a_failure_at_the_system_start_is_left_out_of_crow_amsaa_with_a_note():
    """A node that fails the moment it enters service (LANL systems 7, 17, 22, 24): its failure
    has time 0, outside Crow-AMSAA's (0, T]; the count drops by one and a note says why."""
    from datetime import UTC, datetime, timedelta

    import polars as pl

    from reliability.models.lifetimes.repairable import fit_interfailure

    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    cf = pl.DataFrame([
        {"cluster": "s", "component_id": "n1", "failed_at": t0 + timedelta(days=d),
         "repaired_at": t0 + timedelta(days=d, hours=1)} for d in (0, 3, 8, 12, 20)
    ])  # fmt: skip
    inv = pl.DataFrame(
        {"cluster": ["s"], "component_id": ["n1"], "in_service": [t0], "out_of_service": [None]}
    )
    r = fit_interfailure(cf, inv.with_columns(pl.col("out_of_service").cast(pl.Datetime("us", "UTC"))),
                         observation_end=t0 + timedelta(days=30))  # fmt: skip
    assert r.crow_amsaa["s"].failures == 4
    assert any("1 failure(s) at the system's start" in n for n in r.notes)
