"""Component lifetimes: fit_lifetimes against lifelines on the same data (exact), against known
truth on generated Weibull lifetimes with censoring and left truncation (coverage of the
shape's interval over seeds), at realistic scale, on a Dataset's inventory, and its figure."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import matplotlib
import numpy as np
import polars as pl
import pytest
from lifelines import (
    ExponentialFitter,
    KaplanMeierFitter,
    LogNormalFitter,
    WeibullFitter,
)
from scipy import special

from reliability._result import frame_is_finite
from reliability.models.lifetimes.weibull import (
    fit_lifetimes,
    fit_weibull,
    lifetime_table,
    weibull_mle,
)
from reliability.plots import plot_lifetimes
from reliability.plots.lifetimes import model_survival

matplotlib.use("Agg")
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _fleet(rng: np.random.Generator, n: int, shape: float, scale: float, *, max_age: float,
           window: float) -> pl.DataFrame:  # fmt: skip
    """Components installed at ages up to ``max_age`` before observation starts (left
    truncation: only those still alive then are seen), observed for ``window`` (censoring)."""
    age0 = rng.uniform(0, max_age, n)
    life = scale * rng.weibull(shape, n)
    alive = life > age0
    age0, life = age0[alive], life[alive]
    stop = age0 + window
    return pl.DataFrame({"duration": np.minimum(life, stop), "failed": life <= stop, "entry": age0})


@pytest.fixture(scope="module")
def fleet():
    return _fleet(np.random.default_rng(0), 3000, 1.6, 2000.0, max_age=1500.0, window=800.0)


def test_equals_lifelines_on_the_same_data(fleet):
    """Every number comes from lifelines fitted on the same arrays: Kaplan-Meier (with the
    entry ages), exponential, Weibull, log-normal, their AIC; MTTF and B10 from the fitted
    parameters by their closed forms."""
    r = fit_lifetimes(fleet, "duration", "failed", "entry")
    t, e, a = (fleet[c].to_numpy() for c in ("duration", "failed", "entry"))
    f = r.fit_of("all")
    wf = WeibullFitter().fit(t, e, entry=a)
    ef = ExponentialFitter().fit(t, e, entry=a)
    lf = LogNormalFitter().fit(t, e, entry=a)
    km = KaplanMeierFitter().fit(t, e, entry=a)
    assert r.weibull_shape_ == pytest.approx(wf.rho_, rel=1e-6)
    w = f.models["weibull"]
    assert w["params"]["lambda_"] == pytest.approx(wf.lambda_, rel=1e-6)
    assert w["aic"] == pytest.approx(wf.AIC_, rel=1e-9)
    assert w["mttf"] == pytest.approx(wf.lambda_ * special.gamma(1 + 1 / wf.rho_), rel=1e-6)
    assert w["b10"] == pytest.approx(wf.lambda_ * (-math.log(0.9)) ** (1 / wf.rho_), rel=1e-6)
    assert f.models["exponential"]["mttf"] == pytest.approx(ef.lambda_, rel=1e-6)
    assert f.models["exponential"]["aic"] == pytest.approx(ef.AIC_, rel=1e-9)
    assert f.models["lognormal"]["params"]["mu_"] == pytest.approx(lf.mu_, rel=1e-6)
    assert f.models["lognormal"]["aic"] == pytest.approx(lf.AIC_, rel=1e-9)
    assert f.lr_stat == pytest.approx(2 * (wf.log_likelihood_ - ef.log_likelihood_), rel=1e-6)
    np.testing.assert_allclose(
        f.km["survival"].to_numpy(), km.survival_function_.iloc[:, 0].to_numpy()
    )
    np.testing.assert_allclose(
        f.km["ci_low"].to_numpy(), km.confidence_interval_.iloc[:, 0].to_numpy()
    )
    assert f.best == min(("exponential", wf.AIC_), ("weibull", wf.AIC_), ("lognormal", lf.AIC_),
                         key=lambda x: (ef.AIC_ if x[0] == "exponential" else x[1]))[0]  # fmt: skip


@pytest.mark.parametrize(("shape", "entry"), [(0.7, False), (1.6, True), (1.0, True)])
def test_numpy_weibull_mle_equals_lifelines(shape, entry):
    """weibull_mle (used for millions of attempts in fit_mttf) is lifelines' estimate and
    covariance, with right censoring and left truncation."""
    rng = np.random.default_rng(int(10 * shape))
    d = _fleet(rng, 2000, shape, 100.0, max_age=80.0 if entry else 0.0, window=60.0)
    a = d["entry"].to_numpy() if entry else None
    lam, rho, cov = weibull_mle(d["duration"].to_numpy(), d["failed"].to_numpy(), a)
    wf = WeibullFitter().fit(d["duration"].to_numpy(), d["failed"].to_numpy(), entry=a)
    assert (lam, rho) == pytest.approx((wf.lambda_, wf.rho_), rel=1e-6)
    np.testing.assert_allclose(cov, wf.variance_matrix_.to_numpy(), rtol=1e-4)


@pytest.mark.parametrize("shape", [0.7, 1.6])
def test_shape_interval_covers_the_truth(shape):
    """Over 1,000 seeds of 600 components with left truncation and heavy censoring, the 95%
    interval of the Weibull shape covers the true shape in 93-97% of them (Monte Carlo
    standard error 0.7%).

    The interval is fit_weibull's (MLE, inverse observed information, Wald on log ρ); the
    seeds use its numpy engine, whose estimate and covariance equal lifelines' to 1e-6 / 1e-4
    (test above, and checked again on the first seeds here), because lifelines takes ~0.3 s a
    fit (5 minutes for 1,000)."""
    covered = 0
    for seed in range(1000):
        d = _fleet(np.random.default_rng(seed), 600, shape, 1000.0, max_age=800.0, window=500.0)
        args = (d["duration"].to_numpy(), d["failed"].to_numpy(), d["entry"].to_numpy())
        w = fit_weibull(*args, engine="numpy")
        if seed < 3:
            ref = fit_weibull(*args, engine="lifelines")
            assert (w["shape_low"], w["shape_high"]) == pytest.approx(
                (ref["shape_low"], ref["shape_high"]), rel=1e-4
            )
        covered += w["shape_low"] <= shape <= w["shape_high"]
    assert 930 <= covered <= 970, covered


@pytest.mark.slow  # 8 s
def test_realistic_fleet_and_verdicts():
    """20,000 GPUs installed over two years and observed for one (60% censored, every one with
    an entry age): the wear-out shape is recovered within its interval, the verdict says
    wear-out, and the exponential is rejected; an exponential fleet is found "random"."""
    rng = np.random.default_rng(42)
    d = _fleet(rng, 20000, 1.5, 20000.0, max_age=17520.0, window=8760.0)
    assert d["failed"].mean() < 0.45  # mostly censored
    r = fit_lifetimes(d, "duration", "failed", "entry")
    f = r.fit_of("all")
    assert f.shape_low <= 1.5 <= f.shape_high
    assert f.verdict.startswith("wear-out")
    assert f.lr_p < 1e-6
    assert f.entry_truncated == d.height
    flat = _fleet(rng, 5000, 1.0, 5000.0, max_age=3000.0, window=2000.0)
    g = fit_lifetimes(flat, "duration", "failed", "entry").fit_of("all")
    assert g.verdict.startswith("random")


def test_groups_text_and_degenerate_groups():
    """``by`` fits each group; a group with too few failures says why and prints no nan."""
    rng = np.random.default_rng(5)
    a = _fleet(rng, 800, 0.6, 500.0, max_age=0.0, window=400.0).with_columns(vendor=pl.lit("a"))
    b = _fleet(rng, 30, 1.0, 1e6, max_age=0.0, window=10.0).with_columns(vendor=pl.lit("b"))
    r = fit_lifetimes(pl.concat([a, b]), "duration", "failed", by="vendor")
    assert set(r.weibull_shape_) == {"a", "b"}
    assert r.weibull_shape_["b"] is None
    assert r.fit_of("a").verdict.startswith("infant mortality")
    text = str(r)
    assert "not estimable" in text
    assert "nan" not in text.lower()
    assert frame_is_finite(r.summary)
    assert "&lt;" not in r._repr_html_() or "<table" in r._repr_html_()


def test_bad_input_is_refused_with_the_column_named():
    d = pl.DataFrame({"t": [1.0, -2.0, 3.0], "e": [True, False, True], "a": [0.0, 0.0, 5.0]})
    with pytest.raises(ValueError, match=r"duration column 't'.*1 rows"):
        fit_lifetimes(d, "t", "e")
    with pytest.raises(ValueError, match="entry column 'a' must be below the duration"):
        fit_lifetimes(d.with_columns(t=pl.lit(4.0)), "t", "e", "a")
    with pytest.raises(ValueError, match="'missing' not in the table"):
        fit_lifetimes(d, "missing", "e")
    with pytest.raises(ValueError, match="null"):
        fit_lifetimes(d.with_columns(t=pl.Series([1.0, None, 2.0])), "t", "e")


def test_lifetime_table_from_inventory_by_hand():
    """In service from in_service to the first failure (event), else censored at leaving
    service or the observation end; left-truncated at the observation start."""
    h = timedelta(hours=1)
    inv = pl.DataFrame({
        "cluster": "c", "component_type": ["gpu", "gpu", "gpu", "psu"], "component_id": ["1", "2", "3", "1"],
        "in_service": [T0, T0, T0 - 10 * h, T0], "out_of_service": [None, T0 + 50 * h, None, None],
    }, schema_overrides={"out_of_service": pl.Datetime("us", "UTC")})  # fmt: skip
    cf = pl.DataFrame({
        "cluster": "c", "component_type": ["gpu", "gpu", "gpu", "nic"], "component_id": ["1", "1", "3", "9"],
        "failed_at": [T0 + 30 * h, T0 + 40 * h, T0 + 5 * h, T0 + 1 * h],
    })  # fmt: skip
    t, notes = lifetime_table(inv, cf, observation_start=T0, observation_end=T0 + 100 * h)
    rows = {(r["component_type"], r["component_id"]): r for r in t.iter_rows(named=True)}
    assert (rows["gpu", "1"]["duration_h"], rows["gpu", "1"]["failed"]) == (30.0, True)
    assert (rows["gpu", "2"]["duration_h"], rows["gpu", "2"]["failed"]) == (50.0, False)
    assert (rows["gpu", "3"]["duration_h"], rows["gpu", "3"]["entry_h"]) == (15.0, 10.0)
    assert (rows["psu", "1"]["duration_h"], rows["psu", "1"]["failed"]) == (100.0, False)
    assert any("not in the inventory" in n for n in notes)


def test_on_a_lanl_dataset(shared, tmp_path):
    """fit_lifetimes on a Dataset: the LANL nodes' time to first failure (every node, the
    never-failed ones censored at the end of the records)."""
    from reliability import Dataset

    ds = Dataset(tmp_path / "ds")
    ds.ingest(
        "lanl", [shared / "lanl-failure-1996-2005" / "LA-UR-05-7318-failure-data-1996-2005.csv"]
    )
    r = fit_lifetimes(ds)
    f = r.fit_of("node")
    # the 4 single-node systems in service before tracking began fail at their first record
    assert f.n == ds.inventory.height - 4
    assert any("fail the moment they enter service" in n for n in r.notes)
    assert f.failures == ds.component_failures.select("cluster", "component_id").n_unique() - 4
    assert f.shape is not None
    assert "nan" not in str(r).lower()


def test_plot_draws_the_result(fleet):
    r = fit_lifetimes(fleet, "duration", "failed", "entry")
    ax = plot_lifetimes(r)
    lines = {line.get_label(): line for line in ax.get_lines()}
    km = r.fit_of("all").km
    x, y = lines["Kaplan-Meier"].get_data()
    np.testing.assert_allclose(x, km["time"].to_numpy())
    np.testing.assert_allclose(y, km["survival"].to_numpy())
    best = r.fit_of("all").best
    xb, yb = lines[f"{best} (best AIC)"].get_data()
    np.testing.assert_allclose(yb, model_survival(best, r.fit_of("all").models[best]["params"], xb))
    import matplotlib.pyplot as plt

    plt.close(ax.figure)
