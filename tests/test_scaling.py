"""Does MTTF ∝ 1/N hold? (:mod:`reliability.models.failures.scaling`).

References: statsmodels' Poisson GLM (the Pearson X² of the intercept-only model with offset
log(node-hours)), scipy's exact binomial test and Clopper-Pearson interval (the conditional
rate-ratio test), and known-parameter data (Poisson counts per size bucket, and job histories
from the independent generator in ``histories.py``) for the size, power and coverage claims.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm
from histories import job_histories
from scipy import stats

from reliability._result import frame_is_finite
from reliability.models.failures import fit_mttf
from reliability.models.failures.mttf import glm_slope
from reliability.models.failures.scaling import check_scaling

NODES = np.array([1.0, 4.0, 16.0, 64.0])
JOB_HOURS = np.array([40000.0, 12000.0, 3000.0, 900.0])
NAMES = ["8-15 GPUs", "32-63 GPUs", "128-255 GPUs", "512-1,023 GPUs"]


def _check(k, h=JOB_HOURS, nodes=NODES, **kw):
    g = glm_slope(k, h, nodes)
    return check_scaling(k, h, nodes, NAMES, g, **kw)


def test_goodness_of_fit_matches_statsmodels_pearson_chi2():
    k = np.array([30, 22, 25, 21])
    r = _check(k)
    ref = sm.GLM(
        k, np.ones((4, 1)), family=sm.families.Poisson(), offset=np.log(JOB_HOURS * NODES)
    ).fit()
    assert r.gof_statistic_ == pytest.approx(ref.pearson_chi2, rel=1e-9)
    assert r.gof_df_ == 3
    assert r.gof_p_ == pytest.approx(stats.chi2.sf(ref.pearson_chi2, 3), rel=1e-9)
    expected = ref.fittedvalues
    got = r.points.get_column("expected_failures").to_numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-9)


def test_largest_bucket_ratio_matches_exact_binomial():
    k = np.array([30, 22, 25, 21])
    r = _check(k)
    e = JOB_HOURS * NODES
    n, kl = int(k.sum()), int(k[-1])
    p0 = e[-1] / e.sum()
    bt = stats.binomtest(kl, n, p0, alternative="greater")
    assert r.largest_p_faster_ == pytest.approx(bt.pvalue, rel=1e-9)
    ci = stats.binomtest(kl, n, p0).proportion_ci(confidence_level=0.95, method="exact")
    odds = e[:-1].sum() / e[-1]
    assert r.largest_ci_[0] == pytest.approx(ci.low / (1 - ci.low) * odds, rel=1e-7)
    assert r.largest_ci_[1] == pytest.approx(ci.high / (1 - ci.high) * odds, rel=1e-7)
    assert r.largest_ratio_ == pytest.approx((kl / e[-1]) / ((n - kl) / e[:-1].sum()), rel=1e-12)


def test_size_and_power_over_seeds():
    """Under 1/N the tests reject at about their level; a largest bucket at 2.5x is found."""
    rng = np.random.default_rng(20261205)
    rate = 1.2e-3  # per node-hour: 10-60 failures per bucket
    e = JOB_HOURS * NODES
    n_seeds = 600
    gof_rej = faster_null = faster_alt = 0
    for _ in range(n_seeds):
        null = _check(rng.poisson(rate * e))
        gof_rej += null.gof_p_ < 0.05
        faster_null += null.largest_ci_[0] > 1
        alt = _check(rng.poisson(rate * e * np.array([1, 1, 1, 2.5])))
        faster_alt += alt.largest_ci_[0] > 1 and "fail faster" in alt.verdict
    # binomial sd of a 5% rate over 600 seeds is 0.9%: 4 sd bands
    assert 0.05 - 0.036 < gof_rej / n_seeds < 0.05 + 0.036
    assert faster_null / n_seeds < 0.025 + 0.026  # one side of a 95% interval
    assert faster_alt / n_seeds > 0.9


def test_fitted_slope_projection_covers_the_true_mttf():
    """Power law with slope 1.3: the fitted projection at 2x the largest size covers the truth."""
    rng = np.random.default_rng(7)
    slope, base = 1.3, 2e-4  # failures per job-hour of a one-node job
    h = JOB_HOURS * 3
    mu = base * NODES**slope * h
    largest_gpus = 64 * 8
    true_mttf_2x = 1.0 / (base * (2 * 64) ** slope)
    n_seeds = 400
    covered = 0
    for _ in range(n_seeds):
        r = _check(rng.poisson(mu), h=h, largest_gpus=largest_gpus)
        row = r.projection.filter(pl.col("scale").str.starts_with("next")).row(0, named=True)
        covered += row["fitted_mttf_h_low"] <= true_mttf_2x <= row["fitted_mttf_h_high"]
    # robust (HC3) intervals on 4 points, t on 2 df: at least nominal within binomial noise
    assert covered / n_seeds > 0.95 - 0.045


def test_not_testable_says_why_and_prints_no_nan():
    r = _check(np.array([1, 0, 2, 0]))
    assert r.gof_p_ is None
    assert r.largest_ratio_ is None
    assert "cannot be tested" in r.verdict
    assert "3 hardware failures" in r.verdict
    assert frame_is_finite(r.summary)
    assert frame_is_finite(r.points)
    assert "nan" not in str(r).lower()
    assert "inf" not in str(r).lower()


def test_every_failure_in_the_largest_bucket_has_no_upper_bound():
    r = _check(np.array([0, 0, 0, 9]))
    assert r.largest_ratio_ is None
    assert r.largest_ci_[1] is None
    assert r.largest_ci_[0] > 1
    assert "fail faster" in r.verdict
    assert "no upper bound" in " ".join(r.notes)
    assert "nan" not in str(r).lower()
    assert "inf" not in str(r).lower()


def _world(seed: int, big_mult: float):
    """Jobs of 2, 8, 32 and 128 nodes on one cluster; the 128-node jobs' nodes fail big_mult x faster."""
    rng = np.random.default_rng(seed)
    parts, end = [], None
    for i, (npj, slots, mult) in enumerate(
        [(2, 12, 1.0), (8, 6, 1.0), (32, 3, 1.0), (128, 1, big_mult)]
    ):
        f, end = job_histories(
            rng, days=84, rate_per_node_day=0.01 * mult, slots=slots, nodes_per_job=npj
        )
        parts.append(f.with_columns(job_id=pl.lit(f"s{i}_") + pl.col("job_id")))
    return pl.concat(parts, how="vertical_relaxed"), end


def test_fit_mttf_says_when_the_largest_jobs_fail_faster():
    """End to end on the independent generator: 1/N worlds pass, 2x-at-scale worlds are caught."""
    n_seeds = 30
    consistent = caught = 0
    for seed in range(n_seeds):
        jobs, end = _world(seed, 1.0)
        m = fit_mttf(jobs, min_gpus=9, observation_end=end)
        assert m.scaling is not None
        consistent += "fail faster" not in m.scaling.verdict
        jobs, end = _world(1000 + seed, 2.0)
        m = fit_mttf(jobs, min_gpus=9, observation_end=end)
        caught += "fail faster" in m.scaling.verdict
        proj = m.scaling.projection
        assert proj.get_column("n_gpus").to_list() == [1024, 2048]
        assert frame_is_finite(proj)
    assert consistent / n_seeds >= 0.9
    assert caught / n_seeds >= 0.8


def test_projection_under_1_over_n_is_the_model_mttf():
    jobs, end = _world(3, 1.0)
    m = fit_mttf(jobs, min_gpus=9, observation_end=end)
    row = m.scaling.projection.row(1, named=True)
    assert row["n_gpus"] == 2048
    assert row["model_mttf_h"] == pytest.approx(24.0 / (2048 / 8 * m.rate_per_node_day_), rel=1e-9)
    lo, hi = m.ci_
    assert row["model_mttf_h_low"] == pytest.approx(24.0 / (256 * hi), rel=1e-9)
    assert row["model_mttf_h_high"] == pytest.approx(24.0 / (256 * lo), rel=1e-9)
    assert math.isfinite(row["fitted_mttf_h"])


def test_a_p_value_that_underflowed_is_not_printed_as_zero():
    """scipy returns 0.0 below the smallest double; a p-value is never 0 (was printed "p = 0")."""
    from reliability._result import fmt_p

    assert fmt_p(0.0) == "< 1e-300"
    assert fmt_p(0.0312) == "0.031"
    r = _check(np.array([2, 1, 3, 4000]), h=JOB_HOURS, nodes=NODES)
    assert r.largest_p_faster_ == 0.0  # underflows: 4000 of 4006 failures in 2% of the exposure
    assert "p(faster) = < 1e-300" in str(r)
    assert "= 0)" not in str(r)


def test_untestable_text_agrees_in_number():
    """One failure in one bucket reads "1 hardware failure over 1 size bucket" (stop 47's
    new-user trial read "1 size buckets"); three over two, in the plural."""
    import numpy as np

    from reliability.models.failures import check_scaling

    one = check_scaling(np.array([1]), np.array([100.0]), np.array([8]), ["8"], None)
    assert "1 hardware failure over 1 size bucket (" in str(one)
    assert one.notes[0].startswith("1/N not testable: 1 failure over 1 size bucket with")
    two = check_scaling(
        np.array([1, 2]), np.array([100.0, 80.0]), np.array([8, 16]), ["8", "16"], None
    )
    assert "3 hardware failures over 2 size buckets (" in str(two)
