"""MTTF / r_f (Kokolis et al. HPCA'25) against closed forms, lifelines, and simulated truth."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import numpy as np
import polars as pl
import pytest
from lifelines import ExponentialFitter
from scipy import stats

from reliability import Dataset, attribute_failures
from reliability.attribution import attribution_quality
from reliability.models import fit_mttf, mttf_h, poisson_ci
from reliability.sim.config import FailureConfig, load_preset
from reliability.sim.run import ingest_simulation, simulate_cluster


def test_published_projections():
    """HPCA'25 (DESIGN.md §5): with r_f = 6.5e-3 per node-day, MTTF(16,384 GPUs) = 1.8 h and
    MTTF(131,072 GPUs) = 0.23 h (tolerance 5%)."""
    assert mttf_h(16384, 6.5e-3) == pytest.approx(1.8, rel=0.05)
    assert mttf_h(131072, 6.5e-3) == pytest.approx(0.23, rel=0.05)
    assert mttf_h(4, 6.5e-3) == pytest.approx(24 / 6.5e-3)  # sub-node jobs count as one node


@pytest.mark.parametrize("k", [0, 1, 5, 37, 400])
def test_poisson_ci_matches_gamma_form(k):
    """Garwood interval (chi-square form) equals the gamma-quantile form."""
    lo, hi = poisson_ci(k, 0.05)
    assert hi == pytest.approx(stats.gamma.ppf(0.975, k + 1))
    assert lo == pytest.approx(stats.gamma.ppf(0.025, k) if k else 0.0)


@pytest.fixture(scope="module")
def controlled(tmp_path_factory):
    """A cluster whose hardware-interruption rate is exactly the configured rate: constant
    rate, no lemons or false alarms, every fault detected at once."""
    base = load_preset("small")
    fail = FailureConfig(rate_start=20.0, rate_end=20.0, lemon_fraction=0.0, false_alarm_rate=0.0,
                         p_detect=1.0, health_check_interval_s=1.0, slurmd_timeout_s=1.0)  # fmt: skip
    return replace(base, n_nodes=128, days=30, failures=fail)


def _fit(cfg, seed, tmp):
    r = simulate_cluster(cfg, seed=seed)
    r.write(tmp / f"raw{seed}")
    ingest_simulation(tmp / f"raw{seed}", tmp / f"ds{seed}")
    jobs = attribute_failures(Dataset(tmp / f"ds{seed}"))
    truth = pl.read_parquet(tmp / f"raw{seed}" / "truth" / "attempts.parquet")
    return jobs, fit_mttf(jobs, min_gpus=64), truth


def test_interval_covers_the_configured_rate(controlled, tmp_path):
    """The 95% interval of r_f covers the configured 20 per 1000 node-days in most seeds
    (12 seeds; with 95% coverage, 9 or fewer covering has probability < 2%)."""
    covered, slopes = 0, []
    for seed in range(12):
        _, m, _ = _fit(controlled, seed, tmp_path)
        covered += m.ci_[0] <= 20e-3 <= m.ci_[1]
        slopes.append(m.glm_slope_)
    assert covered >= 10
    # failures proportional to nodes: the GLM slope of log failures on log nodes averages 1.
    # One seed's slope varies by about 0.18 (more than its Poisson standard error: a crash
    # fails every job sharing the node), so the mean of 12 is held to 3 standard errors.
    assert np.mean(slopes) == pytest.approx(1.0, abs=0.15)


def test_mttf_follows_one_over_n_and_agrees_with_lifelines(controlled, tmp_path):
    jobs, m, truth = _fit(controlled, 99, tmp_path)
    # failures grow with nodes (slope near 1; its spread across seeds is tested above)
    assert m.glm_slope_ci_[0] < m.glm_slope_ < m.glm_slope_ci_[1]
    assert m.glm_slope_ == pytest.approx(1.0, abs=0.5)
    # our r_f equals lifelines' exponential MLE on the same exposure (node-days, censored)
    e = jobs.filter(
        (pl.col("n_accelerators") >= 64)
        & pl.col("end_time").is_not_null()
        & pl.col("start_time").is_not_null()
    )
    node_days = (
        e["n_nodes"].cast(pl.Float64) * (e["end_time"] - e["start_time"]).dt.total_seconds() / 86400
    ).to_numpy()
    events = e["failure_domain"].is_in(["hardware", "infrastructure"]).to_numpy()
    keep = node_days > 0
    ef = ExponentialFitter().fit(node_days[keep], events[keep])
    assert m.rate_per_node_day_ == pytest.approx(1.0 / ef.lambda_, rel=1e-6)
    # attribution against the simulator's truth
    q = attribution_quality(jobs, truth)
    assert q["precision"] > 0.95
    assert q["recall"] > 0.95
    text = str(m)
    assert "r_f =" in text
    assert "<pre>" in m._repr_html_()
    assert m.summary.height == 1
    proj = m.projection([16384])
    assert proj.item(0, "mttf_h_low") <= proj.item(0, "mttf_h") <= proj.item(0, "mttf_h_high")


def test_attribution_rule_and_windows():
    """The paper's rule on a hand-made case: FAILED with a critical event 8 min before the end
    is hardware; 12 min before is not (window 10 min), unless the window is widened."""
    t = pl.datetime(2025, 1, 1, 1, 0, 0, time_zone="UTC")
    jobs = pl.DataFrame({
        "cluster": ["c", "c", "c", "c"], "job_id": ["1", "2", "3", "4"], "attempt": [0, 0, 0, 0],
        "state": ["FAILED", "FAILED", "NODE_FAIL", "COMPLETED"], "nodes": [["n1"], ["n2"], ["n3"], ["n1"]],
        "n_accelerators": [8, 8, 8, 8], "n_nodes": [1, 1, 1, 1],
    }).with_columns(start_time=t - pl.duration(hours=1), end_time=t)  # fmt: skip
    from datetime import UTC, datetime, timedelta

    end = datetime(2025, 1, 1, 1, tzinfo=UTC)
    he = pl.DataFrame({
        "cluster": ["c", "c"], "node": ["n1", "n2"], "component": ["gpu_memory", "ib_link"],
        "severity": ["critical", "critical"], "time": [end - timedelta(minutes=8), end - timedelta(minutes=12)],
    })  # fmt: skip
    a = attribute_failures(jobs, health_events=he, node_states=pl.DataFrame())
    got = a.select("job_id", "failure_domain", "failure_cause", "culprit_node").rows()
    assert got == [("1", "hardware", "gpu_memory", "n1"), ("2", "user", None, None),
                   ("3", "hardware", "unknown", None), ("4", "none", None, None)]  # fmt: skip
    wide = attribute_failures(jobs, before_min=15, health_events=he, node_states=pl.DataFrame())
    assert wide.filter(pl.col("job_id") == "2").item(0, "failure_domain") == "hardware"
    np.testing.assert_array_equal(
        a.get_column("job_id").to_numpy(), jobs.get_column("job_id").to_numpy()
    )


def test_period_and_cluster_filters(controlled, tmp_path):
    jobs, whole, _ = _fit(controlled, 7, tmp_path)
    mid = controlled.start + timedelta(days=controlled.days / 2)
    first = fit_mttf(jobs, min_gpus=64, end=mid)
    second = fit_mttf(jobs, min_gpus=64, start=mid)
    assert first.failures_ + second.failures_ == whole.failures_
    assert first.node_days_ + second.node_days_ == pytest.approx(whole.node_days_)
    with pytest.raises(ValueError, match="no exposure"):
        fit_mttf(jobs, min_gpus=64, cluster="elsewhere")
