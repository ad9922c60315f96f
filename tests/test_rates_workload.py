"""Rates over time and workload breakdowns against hand-computed values and simulated truth."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from reliability import Dataset, attribute_failures
from reliability.models import (
    component_failure_rates,
    failure_rate_series,
    fit_mttf,
    hardware_share,
    job_size_distribution,
    job_state_breakdown,
    secondary_preemptions,
)
from reliability.sim.config import FailureConfig, load_preset
from reliability.sim.run import ingest_simulation, simulate_cluster

T0 = datetime(2025, 1, 6, tzinfo=UTC)  # a Monday


def _attributed(cfg, seed, tmp):
    simulate_cluster(cfg, seed=seed).write(tmp / "raw")
    ingest_simulation(tmp / "raw", tmp / "ds")
    return attribute_failures(Dataset(tmp / "ds"))


def test_weekly_series_conserves_totals_and_sees_the_ramp(tmp_path):
    cfg = replace(load_preset("small"), n_nodes=256, days=56)  # rate ramps 2.5 -> 17.5
    a = _attributed(cfg, 4, tmp_path)
    s = failure_rate_series(a, min_gpus=32)
    m = fit_mttf(a, min_gpus=32)
    assert s.series.get_column("failures").sum() == m.failures_
    assert s.series.get_column("node_days").sum() == pytest.approx(m.node_days_, rel=1e-9)
    assert s.trend_per_week_ > 1.0
    assert s.trend_p_ < 0.01
    lo, rate, hi = (
        s.series.get_column(c).to_numpy() for c in ("ci_low", "rate_per_1000_node_days", "ci_high")
    )
    assert (lo <= rate).all()
    assert (rate <= hi).all()


def test_constant_rate_has_no_trend(tmp_path):
    fail = FailureConfig(rate_start=15.0, rate_end=15.0, lemon_fraction=0.0, false_alarm_rate=0.0)
    cfg = replace(load_preset("small"), n_nodes=128, days=56, failures=fail)
    s = failure_rate_series(_attributed(cfg, 8, tmp_path), min_gpus=64)
    assert s.trend_p_ > 0.01


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
    from reliability.models import failure_taxonomy, signal_cooccurrence

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


def test_lanl_node_mttf(shared):
    """Real data (LANL 1996-2005, Schroeder & Gibson DSN'06): every record reads, and the
    per-system node MTTF with censoring at the observation end is finite and sane."""
    from reliability.ingest import read_lanl
    from reliability.models import node_mttf

    r = read_lanl(shared / "lanl-failure-1996-2005" / "LA-UR-05-7318-failure-data-1996-2005.csv")
    assert r.rows_read == 23739
    assert r.rows_quarantined == 0
    cf, inv = r.tables["component_failures"], r.tables["inventory"]
    m = node_mttf(cf, inv)
    assert m.get_column("failures").sum() == 23739
    assert m.height >= 22
    many = m.filter(pl.col("components") >= 20)  # systems with many nodes
    mttf = many.get_column("mttf_days")
    # node MTTF from weeks (system 2: 49 nodes of 128 processors, 7,104 failures) to years
    assert (mttf > 5).all()
    assert (mttf < 20 * 365).all()
    assert (many.get_column("mttf_days_low") <= mttf).all()
    assert (mttf <= many.get_column("mttf_days_high")).all()


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
