"""The cluster simulator's queue order (Slurm multifactor priority: QOS + age) against a brute
force sort of the formula, and the end-to-end guarantee it buys: a low-QOS job is not starved
by a stream of high-QOS work."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from reliability.sim.cluster import ClusterSim, _Queue
from reliability.sim.config import ClusterConfig, FailureConfig, WorkloadConfig


def _oracle(prio, submit, jobs, now, weight, max_age):
    """Slurm's order: higher priority + weight * min(age / max_age, 1) first, then older, then
    lower index."""

    def key(j):
        age = min(max(now - submit[j], 0.0) / max_age, 1.0) if weight else 0.0
        return (-(prio[j] + weight * age), submit[j], j)

    return sorted(jobs, key=key)


@pytest.mark.parametrize("seed", range(5))
def test_pop_order_matches_the_formula(seed):
    """Random jobs pushed at their submit times, popped at later times (some ages past the
    maximum, some not, pushes interleaved with pops): the pop order is the formula's."""
    rng = np.random.default_rng(seed)
    n = 300
    prio = rng.choice([10000, 20000, 30000], size=n).tolist()
    submit = np.sort(rng.uniform(0, 10 * 86400, size=n)).tolist()
    weight, max_age = 25000.0, 2 * 86400.0
    q = _Queue(prio, submit, weight, max_age)
    waiting: set[int] = set()
    popped: list[int] = []
    want: list[int] = []
    nxt = 0
    for now in np.sort(rng.uniform(0, 14 * 86400, size=60)):
        while nxt < n and submit[nxt] <= now:
            q.push(nxt, submit[nxt])
            waiting.add(nxt)
            nxt += 1
        q.age(now)
        for _ in range(int(rng.integers(1, 6))):
            if not waiting:
                break
            want.append(_oracle(prio, submit, waiting, now, weight, max_age)[0])
            job = q.pop(now)
            popped.append(job)
            waiting.discard(job)
    assert len(popped) > 100
    assert popped == want


@pytest.mark.parametrize("seed", range(3))
def test_scan_walks_the_order_and_takes_nothing_out(seed):
    """A scheduling pass walks the queue (scan) and takes out only the jobs it starts (remove):
    the walk is the formula's order, twice the same, and a removal takes out that job alone."""
    rng = np.random.default_rng(100 + seed)
    n = 200
    prio = rng.choice([10000, 20000, 30000], size=n).tolist()
    submit = np.sort(rng.uniform(0, 5 * 86400, size=n)).tolist()
    weight, max_age = 25000.0, 2 * 86400.0
    q = _Queue(prio, submit, weight, max_age)
    for j in range(n):
        q.push(j, submit[j])
    now = 6 * 86400.0
    q.age(now)
    want = _oracle(prio, submit, range(n), now, weight, max_age)
    assert list(q.scan(now)) == want
    assert list(q.scan(now)) == want
    assert len(q) == n
    gone = set(rng.choice(n, size=50, replace=False).tolist())
    for j in gone:
        q.remove(j)
    assert list(q.scan(now)) == [j for j in want if j not in gone]
    assert len(q) == n - 50
    assert all((j in q) != (j in gone) for j in range(n))


def test_push_of_a_queued_job_moves_it():
    """Pushing a job that is already queued (a requeue) keeps one entry, at its current key."""
    prio, submit = [10000, 30000, 20000], [0.0, 10.0, 20.0]
    q = _Queue(prio, submit, 25000.0, 100.0)
    for j in range(3):
        q.push(j, submit[j])
    submit[1] = 40.0  # requeued: its eligible time is later (the list is the simulator's)
    q.push(1, 40.0)
    assert len(q) == 3
    assert list(q.scan(50.0)) == _oracle(prio, submit, {0, 1, 2}, 50.0, 25000.0, 100.0)
    assert [q.pop(50.0) for _ in range(3)] == _oracle(prio, submit, {0, 1, 2}, 50.0, 25000.0, 100.0)
    assert q.pop(50.0) is None
    assert not q


def _starvation_run(weight: float) -> float | None:
    """One node; a low-QOS job submitted 30 s after a stream of 1-h high-QOS jobs began, one
    every 50 minutes (more work than the node can do). When does the low job start?"""
    cfg = ClusterConfig(n_nodes=1, days=10.0, failures=FailureConfig(),
                        workload=WorkloadConfig(age_priority_weight=weight, age_priority_max_days=2.0))  # fmt: skip
    cols = {"job": pl.Int64, "submit_s": pl.Float64, "gpus": pl.Int64, "n_nodes": pl.Int64,
            "work_s": pl.Float64, "priority": pl.Int64, "time_limit_s": pl.Float64,
            "outcome": pl.String, "outcome_at": pl.Float64, "training": pl.Boolean}  # fmt: skip
    high = lambda i, t: (i, t, 8, 1, 3600.0, 30000, 7200.0, "COMPLETED", 0.5, False)  # noqa: E731
    rows = [high(0, 0.0), (1, 30.0, 8, 1, 3600.0, 10000, 7200.0, "COMPLETED", 0.5, False)]
    rows += [high(i, 3000.0 * (i - 1)) for i in range(2, 280)]
    jobs = pl.DataFrame([dict(zip(cols, r, strict=True)) for r in rows], schema=cols)
    fails = pl.DataFrame(schema={"node": pl.Int64, "time_s": pl.Float64, "kind": pl.String, "cause": pl.String,
                                 "detected": pl.Boolean, "repair_s": pl.Float64, "lemon": pl.Boolean,
                                 "check_phase_s": pl.Float64})  # fmt: skip
    a = ClusterSim(cfg, jobs, fails).run().frame("attempt")
    start = a.filter((pl.col("job") == 1) & pl.col("time").is_not_null())["time"]
    return float(start.min()) if start.len() else None


def test_age_priority_prevents_starvation():
    """Without the age term the low-QOS job never starts in 10 days (the high-QOS stream
    never ends); with it (25,000 over 2 days) it overtakes fresh high-QOS jobs once its age term
    exceeds the QOS gap of 20,000 plus the age of the waiting high job: after 1.6 to 2 days,
    starting when the running 1-h job ends."""
    assert _starvation_run(0.0) is None
    t = _starvation_run(25000.0)
    assert t is not None
    assert 0.8 * 2 * 86400 <= t <= 2 * 86400 + 3600


def test_aging_entries_stay_sorted_and_a_heap_from_an_older_checkpoint_loads():
    # jobs are queued about in submit order; a requeued one (eligible from its end, queued two
    # minutes later) goes in its place; an older checkpoint held the entries as a heap
    import heapq
    import pickle
    import random

    from reliability.sim.cluster import _Queue

    rng = random.Random(5)
    n = 300
    submit = [rng.uniform(0.0, 5000.0) for _ in range(n)]
    q = _Queue([0] * n, submit, 1.0, 1e6)
    for job in sorted(range(n), key=lambda j: submit[j] + rng.uniform(0.0, 120.0)):
        q.push(job, 6000.0)
    want = sorted((submit[j], j) for j in range(n))
    assert list(q.aging) == want
    heap = list(want)
    rng.shuffle(heap)
    heapq.heapify(heap)
    q.aging = heap
    restored = pickle.loads(pickle.dumps(q))
    assert list(restored.aging) == want
    restored.age(5000.0 + 1e6)  # every job reached the maximum age: all move to the old list
    assert not restored.young
    assert len(restored.old) == n
