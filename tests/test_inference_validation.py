"""The inference layer on worlds the package did not build (issue 40).

Histories from two independent generators (tests/generators: their own schedulers, failure
processes and reason vocabularies, no code shared with reliability.sim), weekly swings of the
failure rate on, several seeds each. Statistical claims over seeds; the figures for more
seeds, longer histories and both swing settings are in benchmarks/validate_inference.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from generators import generate_a, generate_b

from reliability import Dataset, attribute_failures
from reliability.models.failures import fit_mttf
from reliability.models.nodes.lemon_testing import lemon_test

HW = ("hardware", "infrastructure")
SEEDS = range(4)


def _run(gen, seed: int, tmp: Path) -> dict:
    h = gen(tmp / "h", seed=seed, n_nodes=384, days=56, weekly_swing=0.4, n_lemons=4)
    ds = Dataset(tmp / "ds")
    h.ingest(ds)
    att = attribute_failures(ds)
    truth = h.attempts.select(
        "job_id", "attempt", "hardware", "mechanism",
        pl.col("culprit_node").alias("true_culprit"),
    )  # fmt: skip
    m = att.join(truth, on=["job_id", "attempt"], how="left")
    pred = pl.col("failure_domain").is_in(HW)
    seen = pl.col("hardware") & (pl.col("mechanism") != "silent")
    big = m.filter((pl.col("n_accelerators") >= 129) & pl.col("start_time").is_not_null())
    fit = fit_mttf(att, min_gpus=129, observation_end=h.end)
    t = lemon_test(ds, attributed=att)
    lemons = set(h.nodes.filter(pl.col("is_lemon"))["node"].to_list())
    return {
        "tp": m.filter(pred & pl.col("hardware")).height,
        "fp": m.filter(pred & ~pl.col("hardware")).height,
        "seen": m.filter(seen).height,
        "seen_found": m.filter(seen & pred).height,
        "culprit_right": m.filter(pred & pl.col("hardware") & (pl.col("culprit_node") == pl.col("true_culprit"))).height,
        # r_f against the failures that left evidence, on the same attempts and node-days
        "fit_failures": fit.failures_, "true_seen": big.filter(seen).height,
        "flagged": set(t.flagged["node"].to_list()), "lemons": lemons,
    }  # fmt: skip


@pytest.fixture(scope="module", params=["a", "b"])
def runs(request, tmp_path_factory):
    gen = {"a": generate_a, "b": generate_b}[request.param]
    return [_run(gen, s, tmp_path_factory.mktemp(f"{request.param}{s}")) for s in SEEDS]


@pytest.mark.slow
def test_attribution_finds_the_failures_that_left_evidence(runs):
    """Hardware recall over the failures that left any evidence (not 'silent': no event, no
    drain, which no log-based rule can see) at least 0.93, and at most 0.5% of the attempts
    attributed to hardware were not; the culprit node right for at least 99%."""
    seen = sum(r["seen"] for r in runs)
    found = sum(r["seen_found"] for r in runs)
    tp, fp = sum(r["tp"] for r in runs), sum(r["fp"] for r in runs)
    assert found / seen >= 0.93, (found, seen)
    assert fp / (tp + fp) <= 0.005, (fp, tp)
    assert sum(r["culprit_right"] for r in runs) / tp >= 0.99


@pytest.mark.slow
def test_rf_counts_the_evidenced_failures_of_large_jobs(runs):
    """fit_mttf's failure count for jobs of 129+ GPUs against the true hardware-ended attempts
    of those jobs that left evidence: pooled over seeds within 5%."""
    got = sum(r["fit_failures"] for r in runs)
    want = sum(r["true_seen"] for r in runs)
    assert abs(got / want - 1) <= 0.05, (got, want)


@pytest.mark.slow
def test_lemon_flags_are_mostly_lemons(runs):
    """The statistical test's flags over 56 days: precision at least 0.8 pooled (its recall is
    what 56 days allow: benchmarks/validate_inference.py compares it with an oracle)."""
    flagged = sum(len(r["flagged"]) for r in runs)
    right = sum(len(r["flagged"] & r["lemons"]) for r in runs)
    assert flagged == 0 or right / flagged >= 0.8, (right, flagged)
    assert np.isfinite(right)
