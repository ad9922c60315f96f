"""The action list: each item is computed from the result it cites. Inputs are small results
built here with known content (duck-typed: the builders read only the frames and fields
named in their docstrings)."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import polars as pl

from reliability.report.actions import (
    MAX_NODE_ACTIONS,
    REPEAT_OFFENDER_MIN_FAILURES,
    data_actions,
    job_actions,
    node_actions,
)

T = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)


def _health(open_rows: list[dict], offenders: list[dict]) -> SimpleNamespace:
    now = pl.DataFrame(
        open_rows,
        schema={"cluster": pl.String, "node": pl.String, "state": pl.String, "reason": pl.String,
                "since": pl.Datetime("us", "UTC"), "hours": pl.Float64, "hardware": pl.Boolean,
                "signal": pl.String},
    )  # fmt: skip
    off = pl.DataFrame(
        offenders,
        schema={"cluster": pl.String, "node": pl.String, "failures": pl.Int64,
                "attempts_hit": pl.Int64, "jobs_hit": pl.Int64, "gpu_hours_failed": pl.Float64},
    )  # fmt: skip
    return SimpleNamespace(open_now=now, offenders=off)


def _lemon(probs: dict[str, float], threshold: float) -> SimpleNamespace:
    scores = pl.DataFrame(
        {
            "cluster": ["c"] * len(probs),
            "node": list(probs),
            "window_end": [T] * len(probs),
            "probability": list(probs.values()),
            "drivers": ["xid_79=3"] * len(probs),
        }
    ).with_columns(flagged=pl.col("probability") >= threshold)
    return SimpleNamespace(
        scores=scores,
        flagged=scores.filter(pl.col("flagged")),
        threshold=threshold,
        window_days=28,
    )


def test_node_actions_list_what_the_results_support():
    health = _health(
        [
            {
                "cluster": "c",
                "node": "n08",
                "state": "DRAIN",
                "reason": "GPU ECC errors <xid 79>",
                "since": T,
                "hours": 6.0,
                "hardware": True,
                "signal": "Xid 79",
            },
            {
                "cluster": "c",
                "node": "n02",
                "state": "DRAIN",
                "reason": "maintenance",
                "since": T,
                "hours": 1.0,
                "hardware": False,
                "signal": None,
            },
        ],
        [
            {
                "cluster": "c",
                "node": "n05",
                "failures": REPEAT_OFFENDER_MIN_FAILURES,
                "attempts_hit": 4,
                "jobs_hit": 2,
                "gpu_hours_failed": 512.0,
            },
            {
                "cluster": "c",
                "node": "n06",
                "failures": REPEAT_OFFENDER_MIN_FAILURES - 1,
                "attempts_hit": 5,
                "jobs_hit": 1,
                "gpu_hours_failed": 64.0,
            },
        ],
    )
    lemon = _lemon({"n11": 0.95, "n12": 0.50, "n08": 0.91}, threshold=0.9)
    acts = node_actions(health, lemon)
    texts = [a.text for a in acts]
    # the open hardware drain first, with its reason and time; an admin drain is not an action
    assert texts[0].startswith("Inspect and repair n08: DRAIN since 2025-05-01 12:00 UTC")
    assert "GPU ECC errors <xid 79>" in texts[0]
    assert "Xid 79" in acts[0].evidence
    assert not any("n02" in t for t in texts)
    # flagged lemons only (n12 is below the threshold), each node once
    assert any(t.startswith("Drain and inspect n11") for t in texts)
    assert "P(lemon) = 0.95 >= threshold 0.90" in next(a.evidence for a in acts if "n11" in a.text)
    assert not any("n12" in t for t in texts)
    assert sum("n08" in t for t in texts) == 1
    # repeat offenders from the threshold up, with what they cost
    (n05,) = [a for a in acts if "n05" in a.text]
    assert (
        "3 time(s) (distinct hardware incidents), ending 4 attempt(s) of 2 job(s), 512 GPU-hours"
        in n05.evidence
    )
    # n06 ended more attempts, in fewer failures: not a repeat offender
    assert not any("n06" in t for t in texts)
    assert len(acts) == 3


def test_node_actions_are_capped_and_say_how_many_more():
    many = _lemon({f"n{i:03d}": 0.99 for i in range(MAX_NODE_ACTIONS + 4)}, threshold=0.5)
    acts = node_actions(None, many)
    assert len(acts) == MAX_NODE_ACTIONS + 1
    assert acts[-1].text == "... and 4 more node(s)"
    assert node_actions(None, None) == []


def test_job_actions_give_requeues_and_the_preemptions_caused():
    loops = pl.DataFrame(
        {
            "job_id": [f"{100 + i}" for i in range(7)],
            "user": ["alice"] * 7,
            "name": ["train"] * 7,
            "gpus": [1024] * 7,
            "self_requeues": [35, 9, 8, 7, 6, 5, 4],
            "hw_interruptions": [30, 2, 1, 1, 1, 1, 1],
            "secondary_caused": [548, 3, 2, 1, 0, 0, 0],
            "secondary_gpu_hours": [9000.0, 10.0, 5.0, 1.0, 0.0, 0.0, 0.0],
            "gpu_hours": [50000.0] * 7,
        }
    )
    acts = job_actions(SimpleNamespace(crash_loops=loops), top=5)
    assert len(acts) == 6
    assert acts[0].text == "Look at job 100 (alice, train, 1,024 GPUs): it crash-loops"
    assert "requeued 35 times" in acts[0].evidence
    assert "30 attempt(s) ended by hardware" in acts[0].evidence
    assert "preempted 548 other attempt(s) (9,000 GPU-hours)" in acts[0].evidence
    assert acts[-1].text == "... and 2 more crash-looping job(s)"
    assert job_actions(SimpleNamespace(crash_loops=loops.clear())) == []


def test_data_actions_name_the_inputs_and_the_fix():
    inputs = pl.DataFrame(
        {
            "path": ["/exports/sacct-2025.psv", "/exports/events.psv"],
            "rows_read": [1000, 10],
            "rows_quarantined": [12, 0],
        }
    )
    reasons = pl.DataFrame({"reason": ["time outside 1990-2200"], "rows": [12]})
    missing = pl.DataFrame(
        {"path": ["/exports/sacct-2025.psv"], "note": ["exported without --duplicates"]}
    )
    d = SimpleNamespace(
        inputs=inputs,
        dataset=SimpleNamespace(quarantine_reasons=reasons),
        quarantined=12,
        missing_duplicates=missing,
        kind="cluster",
    )
    q, dup = data_actions([d, None], dataset_hint="out/ds")
    assert q.text == "12 row(s) quarantined in 1 input(s): check the exports"
    assert "/exports/sacct-2025.psv (12 of 1,000)" in q.evidence
    assert "time outside 1990-2200 (12 rows)" in q.evidence
    assert "`reliability info out/ds`" in q.evidence
    assert "events.psv" not in q.evidence
    assert dup.text == "Re-export /exports/sacct-2025.psv with sacct --duplicates"


def test_attribution_caption_uses_the_configured_window():
    from reliability.pipeline.steps.cluster import AttributionResult, attribution_caption

    a = AttributionResult(
        jobs=pl.DataFrame(), before_min=20.0, after_min=2.5, requeue_exit_codes=(99,),
        observation_end=T,
    )  # fmt: skip
    text = attribution_caption(a, 10.0, 5.0)
    assert "from 20 min before its end to 2.5 min after" in text
    assert "the paper uses 10 and 5" in text


def test_node_actions_of_a_fleet_name_each_node_with_its_cluster():
    """Two clusters with a node of the same name: each action names its cluster, and one
    cluster's repeat-offender count is not charged to the other's node."""
    health = _health(
        [
            {"cluster": "east", "node": "n1", "state": "DRAIN", "reason": "Xid 79",
             "since": T, "hours": 2.0, "hardware": True, "signal": "Xid 79"},
        ],
        [
            {"cluster": "west", "node": "n1", "failures": 7, "attempts_hit": 9, "jobs_hit": 9,
             "gpu_hours_failed": 120.0},
        ],
    )  # fmt: skip
    acts = node_actions(health, None)
    texts = [a.text for a in acts]
    assert texts[0].startswith("Inspect and repair n1 (east): DRAIN")
    assert "failed" not in acts[0].evidence  # (west's failures are not east's)
    assert texts[1] == "Inspect n1 (west): a repeat offender"
    assert acts[1].evidence.startswith("Failed 7 time(s)")
    # one cluster: names as before
    one = _health(health.open_now.to_dicts(), [])
    assert node_actions(one, None)[0].text.startswith("Inspect and repair n1: DRAIN")
