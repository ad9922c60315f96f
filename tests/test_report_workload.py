"""The workload numbers the report prints (issue 19 follow-ups): attempts still running at
the observation end count their GPU time up to it, and shares with a zero denominator are
null (said in notes), never nan."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
from histories import job_histories

from reliability.models.failures import hardware_share, job_state_breakdown, secondary_preemptions


def _jobs():
    return job_histories(
        np.random.default_rng(3), days=3, rate_per_node_day=0.0, slots=1, nodes_per_job=1
    )


def test_running_attempts_are_censored_at_the_observation_end():
    jobs, end = _jobs()
    assert "RUNNING" in jobs["state"].to_list()
    states = dict(job_state_breakdown(jobs, observation_end=end).select("state", "gpu_hours").iter_rows())  # fmt: skip
    by_hand: dict[str, float] = {}
    for r in jobs.iter_rows(named=True):
        stop = r["end_time"] or end  # running: up to the observation end
        h = r["n_accelerators"] * (min(stop, end) - r["start_time"]).total_seconds() / 3600
        by_hand[r["state"]] = by_hand.get(r["state"], 0.0) + h
    assert states.keys() == by_hand.keys()
    for state, h in by_hand.items():
        assert math.isclose(states[state], h, rel_tol=1e-9), state
    assert states["RUNNING"] > 0


def test_zero_denominators_are_null_not_nan():
    jobs, end = _jobs()
    cpu = jobs.with_columns(n_accelerators=pl.lit(0, pl.Int64))  # CPU-only: no GPU attempts
    hs = hardware_share(cpu, observation_end=end)
    assert hs["attempt_share"] is None
    assert hs["gpu_time_share"] is None
    sp = secondary_preemptions(cpu, observation_end=end)
    assert sp["share_of_failure_overhead"] is None  # no failure overhead at all
