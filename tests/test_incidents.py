"""Node failure incidents: distinct failures of a node, not the attempts they ended (issue 37).

Hand-built attempt histories with their failures attributed; the expected incident counts
follow from the timeline written here.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from reliability.models.failures.incidents import failures_by_node, node_incidents
from reliability.models.nodes import node_health
from reliability.report.actions import REPEAT_OFFENDER_MIN_FAILURES, node_actions

T0 = datetime(2025, 3, 1, tzinfo=UTC)


def _a(job: str, start_h: float, end_h: float, nodes: list[str], state: str = "NODE_FAIL",
       domain: str = "hardware", culprit: str | None = None, gpus: int = 8) -> dict:  # fmt: skip
    h = lambda x: T0 + timedelta(hours=x)  # noqa: E731
    return {"cluster": "c", "job_id": job, "attempt": 0, "submit_time": h(start_h),
            "start_time": h(start_h), "end_time": h(end_h), "state": state, "nodes": nodes,
            "n_nodes": len(nodes), "n_accelerators": gpus, "failure_domain": domain,
            "failure_cause": "unknown" if domain == "hardware" else None,
            "culprit_node": culprit}  # fmt: skip


def _frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema_overrides={"nodes": pl.List(pl.String)})


def test_three_array_tasks_killed_by_one_failure_are_one_incident() -> None:
    # three tasks of array 7 share n1; n1 goes DOWN at 10 h and ends all three
    jobs = _frame([_a("7_1", 0, 10, ["n1"]), _a("7_2", 1, 10, ["n1"]), _a("7_3", 2, 10, ["n1"])])
    f = failures_by_node(jobs).row(0, named=True)
    assert (f["failures"], f["attempts_hit"], f["jobs_hit"]) == (1, 3, 3)
    assert f["gpu_hours_failed"] == pytest.approx(8 * (10 + 9 + 8))
    h = node_health({"node_states": _empty_states(), "jobs": jobs}, attributed=jobs)
    assert h.offenders.item(0, "failures") == 1
    assert not [a for a in node_actions(h, None) if "repeat offender" in a.text]


def test_a_node_that_failed_twice_under_three_attempts_has_two_failures() -> None:
    # tasks 1 and 2 die together at 10 h; the node is back, task 3 starts at 12 h, dies at 15 h
    jobs = _frame(
        [_a("8_1", 0, 10, ["n1"]), _a("8_2", 0, 10.001, ["n1"]), _a("8_3", 12, 15, ["n1"])]
    )
    inc = node_incidents(jobs)
    assert inc["attempts"].to_list() == [2, 1]
    assert inc["first_failure"].to_list() == [T0 + timedelta(hours=10), T0 + timedelta(hours=15)]
    assert failures_by_node(jobs).item(0, "failures") == 2


def test_a_survivor_that_fails_hours_later_is_a_second_incident() -> None:
    # both run from 0 h; one fails at 2 h (an Xid), the other keeps running and fails at 6 h
    jobs = _frame([_a("1", 0, 2, ["n1"], "FAILED"), _a("2", 0, 6, ["n1"], "FAILED")])
    assert failures_by_node(jobs).item(0, "failures") == 2
    # within the window they are one: 20 minutes apart
    close = _frame([_a("1", 0, 2, ["n1"], "FAILED"), _a("2", 0, 2 + 20 / 60, ["n1"], "FAILED")])
    assert failures_by_node(close).item(0, "failures") == 1
    assert failures_by_node(close, window_min=10).item(0, "failures") == 2


def test_repeat_offender_counts_incidents_and_names_attempts() -> None:
    # n1 fails three times, each time under two jobs: a repeat offender with 3 failures, 6 attempts
    rows = []
    for k in range(3):
        rows += [
            _a(f"{k}a", 24 * k, 24 * k + 5, ["n1"]),
            _a(f"{k}b", 24 * k + 1, 24 * k + 5, ["n1"]),
        ]
    # a multi-node job with the culprit named, and one with none (charged to no node)
    rows += [_a("m", 0, 3, ["n2", "n3"], culprit="n3"), _a("u", 0, 3, ["n4", "n5"])]
    # a user failure on n6 is not a node failure
    rows += [_a("x", 0, 3, ["n6"], "FAILED", domain="user")]
    jobs = _frame(rows)
    h = node_health({"node_states": _empty_states(), "jobs": jobs}, attributed=jobs)
    off = {r["node"]: r for r in h.offenders.iter_rows(named=True)}
    assert set(off) == {"n1", "n3"}
    assert (off["n1"]["failures"], off["n1"]["attempts_hit"], off["n1"]["jobs_hit"]) == (3, 6, 6)
    assert h.unattributed_failures == 1
    assert REPEAT_OFFENDER_MIN_FAILURES == 3
    acts = [a for a in node_actions(h, None) if "repeat offender" in a.text]
    assert [a.text for a in acts] == ["Inspect n1: a repeat offender"]
    assert "Failed 3 time(s)" in acts[0].evidence
    assert "ending 6 attempt(s) of 6 job(s)" in acts[0].evidence


def _empty_states() -> pl.DataFrame:
    return pl.DataFrame(
        schema={
            "cluster": pl.String,
            "node": pl.String,
            "state": pl.String,
            "start": pl.Datetime("us", "UTC"),
            "end": pl.Datetime("us", "UTC"),
            "reason": pl.String,
            "user": pl.String,
        }
    )
