"""Rates over time and workload breakdowns against hand-computed values and job histories
generated in the tests (tests/histories.py) with a known rate."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl
import pytest
from histories import job_histories

from reliability._result import frame_is_finite
from reliability.models.failures import (
    component_failure_rates,
    failure_rate_series,
    fit_mttf,
    hardware_share,
    job_size_distribution,
    job_state_breakdown,
    node_mttf,
    secondary_preemptions,
    workload_summary,
)

T0 = datetime(2025, 1, 6, tzinfo=UTC)  # a Monday


def test_weekly_series_conserves_totals_and_sees_the_ramp():
    """A rate rising 12% a week over 16 weeks (x5.5; RSC-1's rose about x7, HPCA'25 Fig. 5):
    the weekly series adds up to fit_mttf's totals (open attempts censored in both) and the
    trend test sees the rise through weekly gamma fluctuation, its interval holding the true
    change."""
    rng = np.random.default_rng(4)
    jobs, end = job_histories(rng, days=112, rate_per_node_day=0.01, slots=12, mean_job_days=2.0,
                              gamma_shape=8.0, trend_per_week=1.12)  # fmt: skip
    s = failure_rate_series(jobs, min_gpus=128, observation_end=end)
    m = fit_mttf(jobs, min_gpus=128, observation_end=end)
    assert s.series["failures"].sum() == m.failures_
    assert s.series["node_days"].sum() == pytest.approx(m.node_days_, rel=1e-12)
    assert s.trend_p_ < 0.01
    assert s.trend_.low <= 1.12 <= s.trend_.high
    assert s.recent_rate_.rate > s.rate_.rate  # the rate that applies now is above the average
    assert frame_is_finite(s.series)


def test_weekly_poisson_intervals_cover_the_weekly_rate():
    """Each week's exact Poisson interval covers a constant true rate in at least 95% of
    weeks (Garwood is conservative: about 96-97% at 5 failures a week); 300 weeks of one
    generated history, the intervals computed by failure_rate_series."""
    rng = np.random.default_rng(12)
    rate = 0.01
    jobs, end = job_histories(rng, days=7 * 300, rate_per_node_day=rate, slots=4, mean_job_days=3.0)
    s = failure_rate_series(jobs, min_gpus=128, observation_end=end).series
    assert s.height == 300
    covered = ((s["ci_low"] <= 1000 * rate) & (1000 * rate <= s["ci_high"])).mean()
    assert 0.94 <= covered <= 0.995, covered


def test_weekly_series_with_no_failures_or_large_jobs_says_why():
    rng = np.random.default_rng(1)
    jobs, end = job_histories(rng, days=10, rate_per_node_day=0.0, slots=2, nodes_per_job=1)
    for min_gpus in (1, 129):
        s = failure_rate_series(jobs, min_gpus=min_gpus, observation_end=end)
        text = str(s)
        assert "nan" not in text
        assert "trend not estimable" in text
        assert np.isnan(s.trend_p_)  # the numeric attribute; the text says why instead
        assert frame_is_finite(s.series)


def test_component_rates_hand_computed():
    inv = pl.DataFrame({
        "cluster": "pod", "component_type": ["machine"] * 100 + ["ocs"] * 48,
        "component_id": [f"m{i}" for i in range(100)] + [f"o{i}" for i in range(48)],
        "in_service": T0, "out_of_service": None,
    }, schema_overrides={"out_of_service": pl.Datetime("us", "UTC")})  # fmt: skip
    failures = pl.DataFrame({
        "cluster": "pod", "component_type": ["machine"] * 8 + ["ocs"],
        "component_id": [f"m{i}" for i in range(8)] + ["o1"],
        "failed_at": [T0 + timedelta(days=2, hours=h) for h in range(8)] + [T0 + timedelta(days=5)],
        "repaired_at": None,
    }, schema_overrides={"repaired_at": pl.Datetime("us", "UTC")})  # fmt: skip
    r = component_failure_rates(failures, inv)
    day2 = r.filter(
        (pl.col("component_type") == "machine") & (pl.col("period") == T0 + timedelta(days=2))
    )
    assert day2.item(0, "failures") == 8
    assert day2.item(0, "rate_per_day") == pytest.approx(0.08)  # 8 of 100 machines that day
    ocs = r.filter(pl.col("component_type") == "ocs")
    assert ocs.get_column("failures").sum() == 1
    assert ocs.filter(pl.col("failures") == 1).item(0, "rate_per_day") == pytest.approx(1 / 48)
    with pytest.raises(ValueError, match="inventory"):
        component_failure_rates(failures, inv.head(0))


def _jobs(rows):
    cols = [
        "job_id",
        "attempt",
        "state",
        "failure_domain",
        "n_accelerators",
        "start_h",
        "end_h",
        "nodes",
    ]
    f = pl.DataFrame([dict(zip(cols, r, strict=True)) for r in rows])
    return f.with_columns(
        cluster=pl.lit("c"),
        start_time=pl.lit(T0) + pl.duration(minutes=pl.col("start_h") * 60),
        end_time=pl.lit(T0) + pl.duration(minutes=pl.col("end_h") * 60),
    )


def test_breakdowns_and_secondary_preemption():
    jobs = _jobs([
        ("1", 0, "NODE_FAIL", "hardware", 64, 0.0, 2.0, ["a", "b"]),     # hardware failure
        ("1", 1, "COMPLETED", "none", 64, 3.0, 5.0, ["a", "b"]),          # its restart at 3 h
        ("2", 0, "PREEMPTED", "preemption", 8, 1.0, 3.0, ["b"]),          # preempted by the restart
        ("3", 0, "PREEMPTED", "preemption", 8, 1.0, 2.5, ["z"]),          # preempted, unrelated
        ("4", 0, "COMPLETED", "none", 1, 0.0, 10.0, ["z"]),
    ])  # fmt: skip
    states = dict(job_state_breakdown(jobs).select("state", "gpu_hours").iter_rows())
    assert states == {"NODE_FAIL": 128.0, "COMPLETED": 138.0, "PREEMPTED": 28.0}
    sp = secondary_preemptions(jobs)
    assert sp["count"] == 1
    assert sp["gpu_hours"] == 16.0
    assert sp["share_of_failure_overhead"] == pytest.approx(16.0 / (16.0 + 128.0))
    hs = hardware_share(jobs)
    assert hs["attempt_share"] == pytest.approx(1 / 5)
    assert hs["gpu_time_share"] == pytest.approx(128.0 / 294.0)
    sizes = job_size_distribution(jobs)
    assert sizes.get_column("job_share").sum() == pytest.approx(1.0)
    assert dict(sizes.select("bucket", "jobs").iter_rows()) == {1: 1, 8: 2, 64: 1}


def test_taxonomy_and_cooccurrence():
    from reliability.models.failures import failure_taxonomy, signal_cooccurrence

    jobs = _jobs([
        ("1", 0, "NODE_FAIL", "hardware", 64, 0.0, 2.0, ["a"]),
        ("2", 0, "FAILED", "hardware", 8, 0.0, 2.0, ["b"]),
        ("3", 0, "FAILED", "user", 8, 0.0, 2.0, ["c"]),
        ("4", 0, "COMPLETED", "none", 8, 0.0, 2.0, ["c"]),
    ]).with_columns(failure_cause=pl.Series(["gpu", "gpu", None, None]))  # fmt: skip
    t = failure_taxonomy(jobs)
    gpu = t.filter((pl.col("failure_domain") == "hardware") & (pl.col("failure_cause") == "gpu"))
    assert gpu.item(0, "attempts") == 2
    assert gpu.item(0, "share") == pytest.approx(0.5)
    assert gpu.item(0, "share_of_failures") == pytest.approx(1.0)
    he = pl.DataFrame({
        "cluster": "c", "node": ["a", "a", "a", "b"], "source": ["kernel_log", "dcgm", "kernel_log", "dcgm"],
        "code": ["79", "PCIE_REPLAY_COUNTER", "79", "PCIE_REPLAY_COUNTER"],
        "time": [T0, T0 + timedelta(minutes=3), T0 + timedelta(hours=5), T0],
    })  # fmt: skip
    co = signal_cooccurrence(he)
    assert co.rows() == [("dcgm:PCIE_REPLAY_COUNTER", "kernel_log:79", 1, 1)]


def test_weekly_series_keeps_exposure_of_long_attempts():
    """An attempt running 10 weeks contributes all its node-days, and its failure counts in
    the week it ended."""
    jobs = _jobs([("1", 0, "NODE_FAIL", "hardware", 256, 0.0, 70 * 24.0, ["a"])]).with_columns(
        n_nodes=pl.lit(32)
    )
    s = failure_rate_series(jobs, min_gpus=129).series
    assert s.height == 10
    assert s.get_column("node_days").sum() == pytest.approx(70 * 32)
    assert s.get_column("failures").to_list() == [0] * 9 + [1]


def test_cpu_only_jobs_in_sizes_and_shares():
    """CPU-only jobs (0 GPUs) are size bucket 0, not 1 GPU, and stay out of the GPU-job
    shares: three CPU-only NODE_FAILs do not make "hardware ended x% of attempts but 0% of
    GPU time"."""
    jobs = _jobs([
        ("1", 0, "NODE_FAIL", "hardware", 0, 0.0, 1.0, ["a"]),
        ("2", 0, "NODE_FAIL", "hardware", 0, 0.0, 1.0, ["a"]),
        ("3", 0, "NODE_FAIL", "hardware", 0, 0.0, 1.0, ["b"]),
        ("4", 0, "COMPLETED", "none", 1, 0.0, 4.0, ["b"]),
        ("5", 0, "NODE_FAIL", "hardware", 8, 0.0, 2.0, ["c"]),
    ])  # fmt: skip
    sizes = dict(job_size_distribution(jobs).select("bucket", "jobs").iter_rows())
    assert sizes == {0: 3, 1: 1, 8: 1}
    hs = hardware_share(jobs)
    assert hs["gpu_attempts"] == 2
    assert hs["attempt_share"] == pytest.approx(1 / 2)
    assert hs["gpu_time_share"] == pytest.approx(16 / (16 + 4))
    assert hs["cpu_only_attempts"] == 3
    assert hs["cpu_only_hardware_attempts"] == 3


def test_node_mttf_hand_computed_and_never_infinite():
    """Two clusters: one with 2 failures over 10 component-days, one with none; the second's
    MTTF is null (not inf) and its lower bound is the exact one, 10 / 3.689 days."""
    inv = pl.DataFrame({
        "cluster": ["a", "a", "b", "b"], "component_id": ["1", "2", "1", "2"],
        "in_service": [T0] * 4, "out_of_service": [None] * 4,
    }, schema_overrides={"out_of_service": pl.Datetime("us", "UTC")})  # fmt: skip
    cf = pl.DataFrame(
        {"cluster": ["a", "a"], "failed_at": [T0 + timedelta(days=1), T0 + timedelta(days=3)]}
    )
    m = node_mttf(cf, inv, end=T0 + timedelta(days=5))
    a, b = m.row(0, named=True), m.row(1, named=True)
    assert (a["failures"], a["component_days"], a["mttf_days"]) == (2, 10.0, 5.0)
    assert b["mttf_days"] is None
    assert b["mttf_days_high"] is None
    assert b["mttf_days_low"] == pytest.approx(10 / 3.6888794541139363)
    assert frame_is_finite(m)


def test_state_and_size_breakdowns_are_the_same_every_run():
    # 300k attempts of random length: polars' parallel group_by sums floats in an order that
    # varies between runs; the breakdowns must give the same bits every time (same seed, same
    # output) and the GPU-hours the exact sum (math.fsum) to rounding
    import math

    rng = np.random.default_rng(5)
    n = 300_000
    start_us = rng.integers(0, 86400 * 90, n) * 10**6
    dur_us = rng.integers(1, 86400 * 10**6, n)
    frame = pl.DataFrame(
        {
            "attempt": rng.integers(0, 3, n),
            "n_accelerators": rng.choice([1, 2, 8, 16, 64, 512], n),
            "state": rng.choice(["COMPLETED", "FAILED", "PREEMPTED", "NODE_FAIL"], n),
            "start_us": start_us,
            "dur_us": dur_us,
        }
    ).select(
        "attempt", "n_accelerators", "state",
        start_time=pl.lit(T0) + pl.duration(microseconds="start_us"),
        end_time=pl.lit(T0) + pl.duration(microseconds=pl.col("start_us") + pl.col("dur_us")),
    )  # fmt: skip
    runs = [(job_state_breakdown(frame), job_size_distribution(frame)) for _ in range(8)]
    for states, sizes in runs[1:]:
        assert states.equals(runs[0][0])
        assert sizes.equals(runs[0][1])
    states = runs[0][0]
    gpu_h = frame["n_accelerators"].to_numpy() * dur_us / 3.6e9
    for row in states.iter_rows(named=True):
        exact = math.fsum(gpu_h[frame["state"].to_numpy() == row["state"]])
        assert row["gpu_hours"] == pytest.approx(exact, rel=1e-12)


def test_open_attempts_agree_between_workload_and_mttf_at_the_end():
    """An attempt that starts exactly at the observation end ran nothing before it: neither the
    workload summary nor the rate fit counts it as open (the demo report said 63 and 62)."""
    end = T0 + timedelta(hours=5)
    jobs = _jobs([
        ("1", 0, "RUNNING", "none", 8, 1.0, 9.0, ["a"]),      # open: ends after the end
        ("2", 0, "COMPLETED", "none", 8, 0.0, 2.0, ["b"]),    # ended before it
        ("3", 0, "RUNNING", "none", 8, 5.0, 6.0, ["c"]),      # starts at the end: not open
        ("4", 0, "RUNNING", "none", 8, 2.0, 2.0, ["d"]),      # end cleared below: open
    ]).with_columns(
        end_time=pl.when(pl.col("job_id") == "4").then(None).otherwise(pl.col("end_time")),
        n_nodes=pl.lit(1, pl.UInt32), failure_cause=pl.lit(None, pl.String),
        name=pl.lit(None, pl.String), user=pl.lit(None, pl.String),
    )  # fmt: skip
    w = workload_summary(jobs, observation_end=end)
    m = fit_mttf(jobs, min_gpus=8, observation_end=end)
    assert w.open_attempts == 2  # hand count: jobs 1 and 4
    assert m.open_attempts_ == 2
