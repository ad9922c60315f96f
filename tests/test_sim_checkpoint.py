"""A run resumed from a checkpoint equals the run simulated from the start.

The lemon backtest (and the pipeline's lemon stage) saves the baseline's state at the split and
continues it with the flagged nodes drained, instead of simulating the whole run again. The
oracle is the plain run given the same quarantine from the start: every event table must be
identical, and the baseline written beside the checkpoint must equal a run without one.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from reliability.sim.config import load_preset
from reliability.sim.emit import truth_attempts
from reliability.sim.run import resume_cluster, simulate_cluster


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
