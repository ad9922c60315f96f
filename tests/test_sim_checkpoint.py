"""A run resumed from a checkpoint equals the run simulated from the start.

The lemon backtest (and the pipeline's lemon stage) saves the baseline's state at the split and
continues it with the flagged nodes drained, instead of simulating the whole run again. The
oracle is the plain run given the same quarantine from the start: every event table must be
identical, and the baseline written beside the checkpoint must equal a run without one.
"""

from __future__ import annotations

import pickle
from datetime import timedelta

import polars as pl
import pytest

from reliability.sim.config import load_preset
from reliability.sim.emit import truth_attempts
from reliability.sim.run import (
    resume_cluster,
    save_checkpoint,
    simulate_cluster,
    snapshot_cluster,
)


@pytest.fixture(scope="module")
def small():
    return load_preset("small").with_days(20)


def test_resumed_run_equals_the_run_quarantined_from_the_start(small, tmp_path):
    names = small.node_names()
    split = small.start + timedelta(days=10)
    drain = {names[3]: split, names[10]: split, names[11]: split + timedelta(hours=5)}
    path = tmp_path / "ck.pkl"
    base = simulate_cluster(small, seed=3, checkpoint=(10, path))
    resumed = resume_cluster(path, config=small, seed=3, quarantine=drain)
    full = simulate_cluster(small, seed=3, quarantine=drain)
    assert resumed.jobs.equals(full.jobs)
    assert set(resumed.log.kinds) == set(full.log.kinds)
    for kind in full.log.kinds:
        assert resumed.log.frame(kind).equals(full.log.frame(kind)), kind
    # the quarantine changed the run after the split (else the test says nothing) ...
    q = truth_attempts(small, full.jobs, full.log)
    plain = simulate_cluster(small, seed=3)
    assert not q.equals(truth_attempts(small, plain.jobs, plain.log))
    # ... and saving the checkpoint did not change the baseline
    for kind in plain.log.kinds:
        assert base.log.frame(kind).equals(plain.log.frame(kind)), kind


def test_resume_refuses_another_run_or_an_earlier_quarantine(small, tmp_path):
    path = tmp_path / "ck.pkl"
    simulate_cluster(small, seed=3, checkpoint=(10, path))
    with pytest.raises(ValueError, match="another configuration or seed"):
        resume_cluster(path, config=small, seed=4)
    with pytest.raises(ValueError, match="another configuration or seed"):
        resume_cluster(path, config=small.with_days(21), seed=3)
    early = {small.node_names()[0]: small.start + timedelta(days=9)}
    with pytest.raises(ValueError, match="precedes the checkpoint"):
        resume_cluster(path, config=small, seed=3, quarantine=early)
    (tmp_path / "bad.pkl").write_bytes(b"not a pickle")
    with pytest.raises(ValueError, match="not a readable simulator checkpoint"):
        resume_cluster(tmp_path / "bad.pkl", config=small, seed=3)
    with pytest.raises(ValueError, match="outside the run"):
        simulate_cluster(small, seed=3, checkpoint=(30, tmp_path / "x.pkl"))
    # a checkpoint of an earlier format (its pending events carry other arguments) is refused,
    # not resumed into a different run
    state = pickle.loads(path.read_bytes())
    state["format"] = 3
    (tmp_path / "old.pkl").write_bytes(pickle.dumps(state))
    with pytest.raises(ValueError, match="not a simulator checkpoint of format 5"):
        resume_cluster(tmp_path / "old.pkl", config=small, seed=3)


def test_snapshot_is_the_run_as_seen_at_the_checkpoint(small, tmp_path):
    """The logs at the checkpoint (what the pipeline's lemon backtest flags on) hold exactly
    what the whole run had logged by then: the oracle is the plain run, cut at that time."""
    path = save_checkpoint(small, seed=3, day=15, path=tmp_path / "ck.pkl")
    snap = snapshot_cluster(path, config=small, seed=3)
    full = simulate_cluster(small, seed=3)
    cut = 15 * 86400.0
    assert snap.config == small  # the whole run's (its truth's rate schedule is the run's)
    assert snap.observed_days == 15
    key = ["job", "attempt"]
    a, f = snap.log.frame("attempt"), full.log.frame("attempt")
    ended = a.filter(pl.col("end_s").is_not_null()).sort(key)
    assert ended.equals(f.filter(pl.col("end_s") < cut).sort(key))
    running = a.filter(pl.col("state") == "RUNNING").sort(key)
    crossing = f.filter((pl.col("time") < cut) & ~(pl.col("end_s") < cut)).sort(key)
    assert running.select(*key, "time", "nodes").equals(crossing.select(*key, "time", "nodes"))
    assert running.height > 0  # jobs run across the cut, so the check says something
    # a job pending at the cut starts after it in the whole run (or never)
    pending = a.filter(pl.col("state") == "PENDING").select(key)
    assert pending.height > 0
    started = pending.join(f.filter(pl.col("time").is_not_null()), on=key, how="inner")
    assert (started["time"] >= cut).all()
    for kind in ("xid", "failure", "health"):
        assert snap.log.frame(kind).equals(full.log.frame(kind).filter(pl.col("time") < cut)), kind
    ns, fs = snap.log.frame("node_state"), full.log.frame("node_state")
    closed = ns.filter(pl.col("end_s").is_not_null()).sort("node", "time")
    assert closed.equals(fs.filter(pl.col("end_s") < cut).sort("node", "time"))
    still = ns.filter(pl.col("end_s").is_null()).sort("node").select("node", "time")
    out = fs.filter((pl.col("time") < cut) & ~(pl.col("end_s") < cut)).sort("node")
    assert still.equals(out.select("node", "time"))
    # the jobs submitted by then, and only those, carry the ids and names the whole run
    # gives them; the failures are those drawn before the cut
    before = pl.col("submit_s") < cut
    assert snap.jobs.sort("job").equals(full.jobs.filter(before).sort("job"))
    assert snap.failures.equals(full.failures.filter(pl.col("time_s") < cut))


def test_resume_takes_a_drain_rounded_to_just_before_the_checkpoint(tmp_path):
    """A drain at the split, given as a datetime, comes back microseconds early for some run
    lengths (timedelta rounds to microseconds): it is the same drain as one at the split."""
    cfg = load_preset("small").with_days(14.021)
    day = cfg.days / 2  # 7.0105 days: start + timedelta(days=day) falls before day * 86400 s
    when = cfg.start + timedelta(days=day)
    assert (when - cfg.start).total_seconds() < day * 86400.0
    path = save_checkpoint(cfg, seed=3, day=day, path=tmp_path / "ck.pkl")
    node = cfg.node_names()[4]
    resumed = resume_cluster(path, config=cfg, seed=3, quarantine={node: when})
    full = simulate_cluster(cfg, seed=3, quarantine={node: when})
    for kind in full.log.kinds:
        assert resumed.log.frame(kind).equals(full.log.frame(kind)), kind
