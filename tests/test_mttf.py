"""MTTF / r_f (Kokolis et al. HPCA'25) against closed forms, lifelines, published values and
job histories generated in the tests (tests/histories.py) with a known rate."""

from __future__ import annotations

import math
from datetime import timedelta

import numpy as np
import polars as pl
import pytest
from histories import T0, job_histories
from lifelines import ExponentialFitter
from scipy import stats

from reliability import attribute_failures
from reliability._result import frame_is_finite
from reliability.models.failures import fit_mttf, mttf_h, poisson_ci
from reliability.models.recovery import plan
from reliability.references import (
    MTTF_PROJECTED_16K_GPUS,
    MTTF_PROJECTED_131K_GPUS,
    RSC1_RATE_PER_NODE_DAY,
)

BAD_WORDS = ("nan", "inf", "unbounded")


def _no_bad_words(text: str) -> None:
    low = text.lower()
    for word in BAD_WORDS:
        assert word not in low.replace("infant", "").replace("information", ""), (word, text)


def test_published_projections():
    """HPCA'25 Fig. 7: with r_f = 6.5 per 1000 node-days, MTTF(16,384 GPUs) = 1.8 h and
    MTTF(131,072 GPUs) = 0.23 h, within half a unit of the printed last digit."""
    assert mttf_h(16384, RSC1_RATE_PER_NODE_DAY) == pytest.approx(
        MTTF_PROJECTED_16K_GPUS.value, abs=0.05
    )
    assert mttf_h(131072, RSC1_RATE_PER_NODE_DAY) == pytest.approx(
        MTTF_PROJECTED_131K_GPUS.value, abs=0.005
    )
    assert mttf_h(4, RSC1_RATE_PER_NODE_DAY) == pytest.approx(
        24 / RSC1_RATE_PER_NODE_DAY
    )  # one node


@pytest.mark.parametrize("k", [0, 1, 5, 37, 400])
def test_poisson_ci_matches_gamma_form(k):
    """Garwood interval (chi-square form) equals the gamma-quantile form."""
    lo, hi = poisson_ci(k, 0.05)
    assert hi == pytest.approx(stats.gamma.ppf(0.975, k + 1))
    assert lo == pytest.approx(stats.gamma.ppf(0.025, k) if k else 0.0)


@pytest.fixture(scope="module")
def history():
    rng = np.random.default_rng(7)
    return job_histories(rng, days=42, rate_per_node_day=0.02, slots=6, mean_job_days=2.0)


def test_rate_is_lifelines_exponential_mle_with_open_attempts_censored(history):
    """r_f equals lifelines' exponential MLE on node-days of exposure, where attempts still
    running at the observation end are censored at it (an independent route: durations
    computed here from the raw attempts)."""
    jobs, end = history
    m = fit_mttf(jobs, min_gpus=128, observation_end=end)
    stop = jobs["end_time"].fill_null(end)
    node_days = (
        (stop - jobs["start_time"]).dt.total_microseconds() / 86400e6 * jobs["n_nodes"]
    ).to_numpy()
    failed = (jobs["failure_domain"] == "hardware").to_numpy()
    ef = ExponentialFitter().fit(node_days, failed)
    assert m.rate_per_node_day_ == pytest.approx(
        1.0 / ef.lambda_, rel=1e-5
    )  # lifelines optimises to ~1e-6
    assert m.open_attempts_ == jobs.filter(pl.col("state") == "RUNNING").height > 0
    assert m.node_days_ == pytest.approx(node_days.sum(), rel=1e-9)
    # the exact interval is Garwood's on the count over that exposure
    lo, hi = poisson_ci(m.failures_)
    assert m.poisson_ci_ == pytest.approx((lo / m.node_days_, hi / m.node_days_))


def test_open_attempts_and_the_observation_end():
    """By hand: an attempt running at the observation end counts its exposure up to it and
    no failure; one that ends after it is open too (its failure is not yet seen); one that
    starts after it is ignored. Without an explicit end, the latest timestamp is used and
    the result says so."""
    h = timedelta(hours=1)
    jobs = pl.DataFrame({
        "cluster": "c", "job_id": ["1", "2", "3", "4"], "attempt": 0,
        "state": ["NODE_FAIL", "RUNNING", "NODE_FAIL", "COMPLETED"],
        "failure_domain": ["hardware", "none", "hardware", "none"],
        "start_time": [T0, T0 + 10 * h, T0 + 20 * h, T0 + 40 * h],
        "end_time": [T0 + 5 * h, None, T0 + 35 * h, T0 + 41 * h],
        "n_nodes": 16, "n_accelerators": 128, "nodes": [["a"]] * 4,
    }, schema_overrides={"end_time": pl.Datetime("us", "UTC")})  # fmt: skip
    end = T0 + 30 * h
    m = fit_mttf(jobs, min_gpus=128, observation_end=end)
    assert m.failures_ == 1  # job 3's failure at 35 h is after the end
    assert m.open_attempts_ == 2
    assert m.node_days_ == pytest.approx(16 * (5 + 20 + 10) / 24)
    guessed = fit_mttf(jobs, min_gpus=128)
    assert guessed.observation_end == T0 + 41 * h
    assert any("observation end not given" in n for n in guessed.notes)
    with pytest.raises(ValueError, match="timezone"):
        fit_mttf(jobs, min_gpus=128, observation_end=end.replace(tzinfo=None))


def test_cpu_only_jobs_are_their_own_class():
    """Three NODE_FAILs of CPU-only jobs (0 GPUs) never show as 1-GPU failures."""
    h = timedelta(hours=1)
    jobs = pl.DataFrame({
        "cluster": "c", "job_id": [str(i) for i in range(6)], "attempt": 0,
        "state": ["NODE_FAIL"] * 3 + ["COMPLETED"] * 3,
        "failure_domain": ["hardware"] * 3 + ["none"] * 3,
        "start_time": [T0 + i * h for i in range(6)], "end_time": [T0 + (i + 0.5) * h for i in range(6)],
        "n_nodes": 1, "n_accelerators": [0, 0, 0, 1, 1, 8], "nodes": [["a"]] * 6,
    })  # fmt: skip
    m = fit_mttf(jobs, min_gpus=1, observation_end=T0 + 10 * h)
    one = m.by_size.filter(pl.col("bucket") == "1")
    assert one["failures"].to_list() == [0]
    assert one["attempts"].to_list() == [2]
    assert m.cpu_only["failures"].to_list() == [3]
    assert m.cpu_only["model_mttf_h"].to_list() == [None]
    assert m.failures_ == 0  # r_f counts GPU jobs of >= min_gpus only
    assert (
        fit_mttf(jobs, min_gpus=0, observation_end=T0 + 10 * h).failures_ == 0
    )  # whatever min_gpus
    text = str(m)
    assert "CPU-only" in text
    _no_bad_words(text)


DEGENERATE = {
    "no failures": dict(days=3, rate_per_node_day=0.0, slots=1, nodes_per_job=1, gpus_per_node=1),
    "one failure": dict(days=30, rate_per_node_day=0.002, slots=2, nodes_per_job=16),
    "seven minutes": dict(days=7 / 1440, rate_per_node_day=0.0, slots=2, nodes_per_job=1),
    "one node": dict(days=20, rate_per_node_day=0.05, slots=1, nodes_per_job=1, gpus_per_node=8),
}


@pytest.mark.parametrize("case", list(DEGENERATE))
def test_degenerate_inputs_say_why_and_print_no_nan(case):
    """0 failures, 1 failure, 7 minutes of data, one node: the text, HTML and summary hold no
    nan/inf/"unbounded", and say what cannot be estimated and why."""
    rng = np.random.default_rng(1)
    jobs, end = job_histories(rng, **DEGENERATE[case])
    if case == "one failure":  # keep exactly one failure
        first = jobs.filter(pl.col("state") == "NODE_FAIL").head(1)["job_id"]
        jobs = jobs.with_columns(
            failure_domain=pl.when(pl.col("job_id").is_in(first.implode()) | (pl.col("state") != "NODE_FAIL"))
            .then("failure_domain").otherwise(pl.lit("none"))
        )  # fmt: skip
    m = fit_mttf(jobs, min_gpus=1, observation_end=end)
    text, html = str(m), m._repr_html_()
    _no_bad_words(text)
    _no_bad_words(html)
    assert frame_is_finite(m.summary)
    assert frame_is_finite(m.by_size)
    assert frame_is_finite(m.projection())
    if m.failures_ == 0:
        assert "not estimable" in text
        assert "upper 95% bound" in text
        assert m.summary["rate_per_1000_node_days"].to_list() == [None]
        # a lower bound, said as one even when it is below a second (not "at least under 1 s")
        bound = m.mttf_at(16384)["text"]
        assert bound.startswith(("at least", "lower bound under 1 s")), bound
        assert "at least under" not in text
    if m.failures_ < 5:
        assert "GLM slope" in text
        assert "not estimable" in text
    if case == "one failure":
        assert m.failures_ == 1
        assert "week-to-week variation not assessed" in " ".join(m.notes)


def test_no_large_jobs_is_not_an_error():
    """min_gpus above every job (the template's 129 on a small cluster) gives a result that
    says why, not an exception."""
    rng = np.random.default_rng(3)
    jobs, end = job_histories(rng, days=5, rate_per_node_day=0.01, slots=2, nodes_per_job=1)
    m = fit_mttf(jobs, min_gpus=129, observation_end=end)
    assert not m.estimable_
    assert any("no exposure from jobs of >= 129 GPUs (largest job: 8 GPUs)" in n for n in m.notes)
    _no_bad_words(str(m))
    # no exposure: the interval rules out no rate (it read (0, 0), as if r_f were known to be 0)
    assert m.ci_ == (0.0, math.inf)
    assert m.rate_per_node_day_ == 0.0
    # planning with such a fit (the README's example on a small cluster) says how to get a rate
    with pytest.raises(ValueError, match=r"no exposure from jobs of >= 129 GPUs .*lower min_gpus="):
        plan(16384, m, target_ettr=0.9, restart_h=5 / 60)


def test_cpu_only_cluster_gets_no_min_gpus_advice():
    """Jobs on no GPUs (LANL-like or CPU partitions): r_f is not estimable and the note says
    why, without telling the user to pass a min_gpus they already passed."""
    rng = np.random.default_rng(4)
    jobs, end = job_histories(rng, days=5, rate_per_node_day=0.01, slots=2, nodes_per_job=1)
    jobs = jobs.with_columns(n_accelerators=pl.lit(0, jobs.schema["n_accelerators"]))
    m = fit_mttf(jobs, min_gpus=1, observation_end=end)
    assert not m.estimable_
    note = next(n for n in m.notes if n.startswith("no exposure from jobs of >= 1 GPUs"))
    assert "ran on no GPUs" in note
    assert "min_gpus=" not in note


def test_constant_rate_assumption_is_checked():
    """The text says MTTF = 1/(N r_f) assumes a constant rate and shows the Weibull shape per
    size class with its interval and verdict: attempts whose time to failure is Weibull of
    shape 0.6 are found "decreasing hazard", exponential ones "constant hazard"."""
    rng = np.random.default_rng(5)
    dec, end = job_histories(
        rng, days=300, rate_per_node_day=0.02, slots=8, mean_job_days=3.0, hazard_shape=0.6
    )
    m = fit_mttf(dec, min_gpus=128, observation_end=end)
    row = m.survival.filter(pl.col("size_class") == "128-1023").row(0, named=True)
    assert row["shape_high"] < 1.0
    assert row["shape_low"] <= 0.6 <= row["shape_high"]
    assert row["verdict"] == "decreasing hazard"
    text = str(m)
    assert "assumes a constant failure rate" in text
    assert "decreasing hazard" in text
    const, end = job_histories(rng, days=300, rate_per_node_day=0.02, slots=8, mean_job_days=3.0)
    row = fit_mttf(const, min_gpus=128, observation_end=end).survival.row(0, named=True)
    assert row["shape_low"] <= 1.0 <= row["shape_high"]
    assert row["verdict"] == "constant hazard"


def test_mttf_by_size_follows_one_over_n():
    """Jobs of 1, 4 and 16 nodes at one rate: measured MTTF per bucket matches 1/(N r_f)
    within its interval, and the GLM slope's interval holds 1."""
    rng = np.random.default_rng(9)
    parts = [
        job_histories(rng, days=200, rate_per_node_day=0.02, slots=s, nodes_per_job=n, cluster="c",
                      mean_job_days=2.0)[0].with_columns(job_id=pl.format("{}-{}", pl.lit(n), "job_id"))
        for s, n in ((16, 1), (8, 4), (4, 16))
    ]  # fmt: skip
    jobs = pl.concat(parts)
    m = fit_mttf(jobs, min_gpus=8, observation_end=T0 + timedelta(days=200))
    assert m.rate_per_node_day_ == pytest.approx(0.02, rel=0.15)
    for row in m.by_size.iter_rows(named=True):
        nodes = int(row["bucket"]) // 8
        truth = 24 / (nodes * 0.02)
        assert row["mttf_h_low"] <= truth <= row["mttf_h_high"], row
    lo, hi = m.glm_slope_ci_
    assert lo <= 1.0 <= hi


def test_period_and_cluster_filters(history):
    jobs, end = history
    whole = fit_mttf(jobs, min_gpus=128, observation_end=end)
    mid = T0 + timedelta(days=21)
    first = fit_mttf(jobs, min_gpus=128, end=mid, observation_end=end)
    second = fit_mttf(jobs, min_gpus=128, start=mid, observation_end=end)
    assert first.failures_ + second.failures_ == whole.failures_
    assert first.node_days_ + second.node_days_ == pytest.approx(whole.node_days_)
    elsewhere = fit_mttf(jobs, min_gpus=128, cluster="elsewhere", observation_end=end)
    assert not elsewhere.estimable_
    assert elsewhere.node_days_ == 0


def test_attribution_rule_and_windows():
    """The paper's rule on a hand-made case: FAILED with a critical event 8 min before the end
    is hardware; 12 min before is not (window 10 min), unless the window is widened."""
    t = pl.datetime(2025, 1, 1, 1, 0, 0, time_zone="UTC")
    jobs = pl.DataFrame({
        "cluster": ["c", "c", "c", "c"], "job_id": ["1", "2", "3", "4"], "attempt": [0, 0, 0, 0],
        "state": ["FAILED", "FAILED", "NODE_FAIL", "COMPLETED"], "nodes": [["n1"], ["n2"], ["n3"], ["n1"]],
        "n_accelerators": [8, 8, 8, 8], "n_nodes": [1, 1, 1, 1],
    }).with_columns(start_time=t - pl.duration(hours=1), end_time=t)  # fmt: skip
    from datetime import UTC, datetime

    end = datetime(2025, 1, 1, 1, tzinfo=UTC)
    he = pl.DataFrame({
        "cluster": ["c", "c"], "node": ["n1", "n2"], "component": ["gpu_memory", "ib_link"],
        "severity": ["critical", "critical"], "time": [end - timedelta(minutes=8), end - timedelta(minutes=12)],
    })  # fmt: skip
    a = attribute_failures(jobs, health_events=he, node_states=pl.DataFrame())
    got = a.select("job_id", "failure_domain", "failure_cause", "culprit_node").rows()
    assert got == [("1", "hardware", "gpu_memory", "n1"), ("2", "user", None, None),
                   ("3", "hardware", "unknown", None), ("4", "none", None, None)]  # fmt: skip
    wide = attribute_failures(jobs, before_min=15, health_events=he, node_states=pl.DataFrame())
    assert wide.filter(pl.col("job_id") == "2").item(0, "failure_domain") == "hardware"


def test_text_and_html_forms(history):
    jobs, end = history
    m = fit_mttf(jobs, min_gpus=128, observation_end=end)
    text = str(m)
    assert f"{1000 * m.rate_per_node_day_:.4g} per 1000 node-days" in text
    assert "if the rate were constant" in text
    html = m._repr_html_()
    assert "<table" in html
    assert "by size" in html
    assert m.summary.height == 1
    assert frame_is_finite(m.summary)
    proj = m.projection([16384])
    assert proj.item(0, "mttf_h_low") <= proj.item(0, "mttf_h") <= proj.item(0, "mttf_h_high")
    assert proj.item(0, "mttf_h") == pytest.approx(24 / (2048 * m.rate_per_node_day_))
    assert math.isfinite(m.glm_slope_) or "GLM slope not estimable" in " ".join(m.notes)


def test_failures_all_at_one_duration_give_no_weibull_and_no_abort():
    """Every attempt fails at exactly 2,000 s: the Weibull likelihood grows without bound as the
    shape grows (a point mass has no finite-shape MLE), so the shape is not estimable; the rate
    still is (failures over exposure), and nothing raises (`analyze` aborted on such data)."""
    rng = np.random.default_rng(6)
    jobs, _ = job_histories(rng, days=20, rate_per_node_day=0.01, slots=4, nodes_per_job=16)
    jobs = jobs.with_columns(
        end_time=pl.col("start_time") + timedelta(seconds=2000),
        state=pl.lit("NODE_FAIL", jobs.schema["state"]),
        failure_domain=pl.lit("hardware", jobs.schema["failure_domain"]),
    )
    end = jobs["end_time"].max()
    m = fit_mttf(jobs, min_gpus=1, observation_end=end)
    row = m.survival.row(0, named=True)
    assert row["weibull_shape"] is None
    assert row["verdict"].startswith("not estimable")
    hours = jobs.height * (2000 / 3600) * 16
    assert m.failures_ == jobs.height
    assert m.rate_per_node_day_ == pytest.approx(jobs.height / (hours / 24))
    _no_bad_words(str(m))
