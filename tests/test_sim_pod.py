"""Pod component simulator (NSDI'24) through the pod-log reader: rates, availability, bad input."""

from __future__ import annotations

import polars as pl
import pytest
from scipy import stats

from reliability.ingest import read_pod_log
from reliability.models import component_failure_rates
from reliability.sim.pod import load_pod_preset, simulate_pod


@pytest.fixture(scope="module")
def pod(tmp_path_factory):
    out = tmp_path_factory.mktemp("pod")
    r = simulate_pod("tpuv4", seed=3)
    r.write(out)
    return r, read_pod_log(out / "pod_events.jsonl")


def test_log_reads_cleanly(pod):
    r, rr = pod
    assert rr.rows_quarantined == 0
    inv = rr.tables["inventory"]
    # NSDI'24: 64 cubes x 16 hosts, 6,144 optical ICI links, 48 OCS
    assert dict(inv.group_by("component_type").len().iter_rows()) == {
        "machine": 1024,
        "ici_link": 6144,
        "ocs": 48,
    }
    assert rr.tables["component_failures"].height == r.truth.get_column("failures").sum()


@pytest.mark.parametrize("ctype", ["machine", "ici_link", "ocs"])
def test_daily_failure_rates_match_configuration(pod, ctype):
    """Failures per component-day in service lie in the exact Poisson 99% interval around the
    configured daily rate (machines 0.08%, ICI cables 0.005%, OCS 0.04%), including the
    expected burst excess (2% of days at 3x: +4%)."""
    r, rr = pod
    t = r.truth.filter(pl.col("component_type") == ctype).row(0, named=True)
    k = rr.tables["component_failures"].filter(pl.col("component_type") == ctype).height
    cfg = r.config.failures
    expected = t["configured_rate_per_day"] * (
        1 + cfg.burst_probability_per_day * (cfg.burst_multiplier - 1)
    )
    lo, hi = stats.poisson.ppf([0.005, 0.995], expected * t["in_service_days"])
    assert lo <= k <= hi


def test_host_availability_about_99_percent(pod):
    """NSDI'24: hosts are available about 99% of the time (a ~ 0.9896 gives Figure 1's 94%)."""
    r, rr = pod
    ns = rr.tables["node_states"]
    end = r.config.start + pl.duration(days=r.config.days)
    down_days = ns.select(
        ((pl.col("end").fill_null(end) - pl.col("start")).dt.total_seconds() / 86400).sum()
    ).item()  # fmt: skip
    availability = 1 - down_days / (1024 * r.config.days)
    assert availability == pytest.approx(0.99, abs=0.004)


def test_component_rates_series(pod):
    _, rr = pod
    weekly = component_failure_rates(
        rr.tables["component_failures"], rr.tables["inventory"], every="1w"
    )
    machines = weekly.filter(pl.col("component_type") == "machine")
    assert machines.height >= 100  # two years of weeks
    mean = machines.get_column("rate_per_day").mean()
    assert mean == pytest.approx(0.0008, rel=0.2)
    assert (machines.get_column("ci_low") <= machines.get_column("rate_per_day")).all()


def test_deterministic_and_static_preset(tmp_path):
    a = simulate_pod("tpuv4", days=60, seed=5).write(tmp_path / "a")
    b = simulate_pod("tpuv4", days=60, seed=5).write(tmp_path / "b")
    assert (a / "pod_events.jsonl").read_bytes() == (b / "pod_events.jsonl").read_bytes()
    static = load_pod_preset("tpuv3-static")
    assert static.components()["ocs"] == []
    assert len(static.components()["machine"]) == 256  # 1,024 chips


def test_bad_lines_are_quarantined(tmp_path):
    p = tmp_path / "pod.jsonl"
    p.write_text(
        '{"time": "2022-01-01T00:00:00Z", "cluster": "p", "event": "inventory", "component_type": "ocs", "component_id": "o1"}\n'
        "not json\n"
        '{"time": "2022-01-01T00:00:00Z", "cluster": "p", "event": "teleport", "component_type": "ocs", "component_id": "o1"}\n'
        '{"time": "2022-01-02T00:00:00Z", "cluster": "p", "event": "component_repair", "component_type": "ocs", "component_id": "o1"}\n'
        '{"time": "2022-01-02T00:00:00", "cluster": "p", "event": "component_fail", "component_type": "ocs", "component_id": "o1"}\n'
    )
    r = read_pod_log(p)
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (5, 1, 4)
    reasons = r.quarantine.get_column("reason").to_list()
    assert "unknown event 'teleport'" in reasons
    assert "repair without an open failure" in reasons
    assert any("UTC offset" in x for x in reasons)
