"""Recovery costs measured from logs: queue waits after hardware interruptions against the waits
a hand-built history was given, censoring, size buckets, and node repair spells."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl
import pytest

from reliability.models.nodes import node_health
from reliability.models.recovery import recovery_costs

T0 = datetime(2026, 1, 1, tzinfo=UTC)
TS = pl.Datetime("us", "UTC")


def _history(rng: np.random.Generator, n_runs: int, gpus: int, mean_wait_h: float):
    """Runs of two attempts: the first ends in a hardware failure, the second starts after a known
    wait; every third run also has a preempted attempt (not hardware) before its failure.
    Returns the attempts and the waits given."""
    rows, waits = [], []
    for i in range(n_runs):
        t = T0 + timedelta(hours=10 * i)
        wait = float(rng.exponential(mean_wait_h))
        waits.append(wait)
        att = 0
        if i % 3 == 0:  # a preemption first: its wait is not a hardware interruption's
            rows.append((f"p{gpus}_{i}", att, t, t + timedelta(hours=1), "PREEMPTED", "preemption"))
            t += timedelta(hours=3)
            att += 1
        end = t + timedelta(hours=2)
        rows.append((f"p{gpus}_{i}", att, t, end, "NODE_FAIL", "hardware"))
        start = end + timedelta(hours=wait)
        rows.append((f"p{gpus}_{i}", att + 1, start, start + timedelta(hours=1), "COMPLETED", None))
    frame = pl.DataFrame(
        rows, schema={"job_id": pl.String, "attempt": pl.UInt16, "start_time": TS, "end_time": TS,
                      "state": pl.String, "failure_domain": pl.String}, orient="row",
    ).with_columns(cluster=pl.lit("c"), n_accelerators=pl.lit(gpus, pl.UInt32), submit_time=pl.col("start_time"))  # fmt: skip
    return frame, np.array(waits)


def test_waits_are_the_given_ones_by_size():
    rng = np.random.default_rng(5)
    a, wa = _history(rng, 40, 8, 0.5)
    b, wb = _history(rng, 25, 300, 3.0)
    # a run failed by hardware at the end with no rerun: censored; and one failed with its
    # rerun pending at the end
    cens = pl.DataFrame(
        {"job_id": ["x", "y", "y"], "attempt": [0, 0, 1], "start_time": [T0, T0, None],
         "end_time": [T0 + timedelta(hours=1), T0 + timedelta(hours=2), None],
         "state": ["NODE_FAIL", "NODE_FAIL", "PENDING"], "failure_domain": ["hardware", "infrastructure", None]},
        schema={"job_id": pl.String, "attempt": pl.UInt16, "start_time": TS, "end_time": TS, "state": pl.String,
                "failure_domain": pl.String},
    ).with_columns(cluster=pl.lit("c"), n_accelerators=pl.lit(300, pl.UInt32), submit_time=pl.lit(T0).cast(TS))  # fmt: skip
    jobs = pl.concat([a, b, cens], how="diagonal_relaxed")
    end = T0 + timedelta(days=2000)
    r = recovery_costs(jobs, observation_end=end)
    s = {row["bucket"]: row for row in r.by_size.iter_rows(named=True)}
    assert set(s) == {8, 256}
    for bucket, w in ((8, wa), (256, wb)):
        assert s[bucket]["n"] == len(w)
        assert s[bucket]["mean_h"] == pytest.approx(w.mean(), rel=1e-6)
        assert s[bucket]["median_h"] == pytest.approx(np.median(w), rel=1e-6)
        assert s[bucket]["p90_h"] == pytest.approx(np.quantile(w, 0.9), rel=1e-6)
    assert s[256]["censored"] == 2
    assert s[256]["interruptions"] == len(wb) + 2
    assert s[8]["censored"] == 0
    assert int(r.waits.get_column("waiting_at_end").sum()) == 1
    assert r.queue_h_for(8)[0] == pytest.approx(wa.mean(), rel=1e-6)
    # a size without waits of its own: the nearest smaller size measured (waits grow with size)
    assert r.queue_h_for(512)[0] == pytest.approx(wb.mean(), rel=1e-6)
    assert "nearest smaller size" in r.queue_h_for(512)[1]
    # none smaller either: every GPU job size
    assert r.queue_h_for(4)[0] == pytest.approx(np.concatenate([wa, wb]).mean(), rel=1e-6)
    assert any("censored" in n for n in r.notes)
    assert r.repairs is None
    assert r.repair_h is None


def test_no_hardware_interruption_says_so():
    rng = np.random.default_rng(1)
    a, _ = _history(rng, 3, 8, 1.0)
    a = a.with_columns(failure_domain=pl.lit(None, pl.String), state=pl.lit("COMPLETED"))
    r = recovery_costs(a, observation_end=T0 + timedelta(days=10))
    assert r.by_size.height == 0
    assert r.queue_h_for(8)[0] is None
    assert "No hardware interruptions" in str(r)


def test_repair_spells_merge_overlaps_and_skip_administrative_work():
    states = pl.DataFrame(
        {"cluster": ["c"] * 5, "node": ["n1", "n1", "n2", "n3", "n4"],
         "state": ["DOWN", "DRAIN", "DRAIN", "DRAIN", "DOWN"],
         "start": [T0, T0 + timedelta(hours=2), T0, T0, T0 + timedelta(hours=90)],
         "end": [T0 + timedelta(hours=3), T0 + timedelta(hours=5), T0 + timedelta(hours=10),
                 T0 + timedelta(hours=50), None],
         "reason": ["Not responding", "xid 79", "GPU fell off the bus", "scheduled maintenance", "Not responding"]},
        schema_overrides={"start": TS, "end": TS},
    )  # fmt: skip
    h = node_health({"node_states": states}, start=T0, end=T0 + timedelta(hours=100))
    rng = np.random.default_rng(2)
    jobs, _ = _history(rng, 2, 8, 1.0)
    r = recovery_costs(jobs, node_health=h, observation_end=T0 + timedelta(hours=100))
    rep = r.repairs.sort("node")
    # n1: DOWN 0-3 and DRAIN 2-5 are one 5 h spell; n2 10 h; n3 is maintenance; n4 open 10 h so far
    assert rep.get_column("node").to_list() == ["n1", "n2", "n4"]
    assert rep.get_column("hours").to_list() == pytest.approx([5.0, 10.0, 10.0])
    assert rep.get_column("open").to_list() == [False, False, True]
    assert r.repair_h == pytest.approx(7.5)
    assert r.repair_summary.item(0, "open") == 1
    assert any("lower bound" in n for n in r.notes)


@pytest.mark.slow  # simulates and ingests a small cluster (~5 s)
def test_cli_plan_dataset_uses_the_measured_costs(tmp_path, capsys):
    """`plan --dataset`: the queue wait and repair time the comparison assumes are the measured ones."""
    from reliability.attribution import attribute_failures
    from reliability.cli import main
    from reliability.datasets import simulated_demo

    ds = simulated_demo(tmp_path, seed=0)
    code = main(["plan", "--gpus", "128", "--rate", "2e-3", "--target-ettr", "0.9", "--restart-min", "5",
                 "--interval-min", "60", "--dataset", str(ds.path), "--compare-strategies"])  # fmt: skip
    out = capsys.readouterr()
    assert code == 0, out.err
    r = recovery_costs(
        attribute_failures(ds), node_health=node_health(ds), observation_end=ds.observation_end
    )
    q, _ = r.queue_h_for(128)
    assert q is not None
    assert r.repair_h is not None
    assert f"queue after interruption {60 * q:.1f} min" in out.out
    assert "queue wait after an interruption: measured in --dataset" in out.out
    assert "node repair time: measured in --dataset" in out.out
    assert f"repaired in {r.repair_h:.1f} h" in out.out


def test_component_repair_h_from_failed_and_repaired_times():
    from reliability.models.recovery.cost import component_repair_h

    cf = pl.DataFrame(
        {
            "component_type": ["node", "node", "node", "link"],
            "failed_at": [T0, T0, T0, T0],
            # 2 h and 6 h repairs; one still open; a link (not a node) of 100 h
            "repaired_at": [
                T0 + timedelta(hours=2),
                T0 + timedelta(hours=6),
                None,
                T0 + timedelta(hours=100),
            ],
        },
        schema={"component_type": pl.String, "failed_at": TS, "repaired_at": TS},
    )
    mean, why = component_repair_h(cf)
    assert mean == pytest.approx(4.0)
    assert "2 node failures" in why
    none, why = component_repair_h(cf.head(0))
    assert none is None
    assert "no component_failures" in why
