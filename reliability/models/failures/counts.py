"""Failure counts over exposure: exact Poisson intervals, robust intervals and trend tests.

The robust intervals and tests stay valid when the rate swings from period to period;
exposure is split into periods with the attempts still open at the observation end censored
there.

Notes
-----
**Why robust intervals on period counts.** Real failure counts are *overdispersed*: the rate
itself moves from week to week (new workloads, software rollouts, bursts; HPCA'25 Fig. 5). A
Poisson interval on the total count then covers the long-run rate far less often than it claims
(about 60% instead of 95% for 26 weeks with gamma-distributed weekly multipliers of CV 0.5), and
a Poisson trend test rejects a true "no trend" about 40% of the time instead of 5%. Both are
computed here from the counts and exposures per period (weeks), treating the periods as
independent replicates:

- :func:`rate_interval`: the rate ``Σk / ΣE`` with a heteroscedasticity-robust (HC2
  sandwich) variance, the periods as clusters: ``Σ_w (k_w − r E_w)² / (1 − h_w) / E²`` with
  leverage ``h_w = E_w / E``, on the log scale with Student-t quantiles on ``n − 1`` degrees of
  freedom (Huber 1967; White 1980; MacKinnon & White 1985 for HC2). It assumes no variance
  function: quasi-Poisson (variance ∝ mean) undercovers (93%) when the exposure varies from
  week to week, because a rate swing shared by a whole week adds variance ∝ exposure².
- :func:`trend_test`: a negative-binomial (NB2) quasi-likelihood regression of the counts on
  the period index (variance ``φ(μ + αμ²)``: a swing shared by a week adds variance ∝ μ²),
  which weights each week by the information it holds and so keeps what power the swings
  leave (see its docstring for the figures).
- the slope of failures on log(nodes) of :func:`reliability.models.failures.fit_mttf`: a Poisson GLM
  of the counts with a log-exposure offset, its slope's variance from the HC3 sandwich (each residual inflated
  by ``1/(1 − h)²``, h the GLM leverage; MacKinnon & White 1985, Long & Ervin 2000 recommend
  it for small samples), Wald t-test on ``n − 2`` degrees of freedom. A quasi-Poisson scale
  (variance ∝ mean) undercovers the slope (92%) when the points' means differ a lot, and HC2
  over-rejects a little with 8-12 weeks (6-7%).

Both reduce to the Poisson answer when the counts are Poisson, so the same code is right with
and without fluctuation: coverage 94-95% and test size 4-5%, tested over thousands of
generated replicates in ``tests/test_coverage.py`` (figures: ``benchmarks/stats_calibration.py``). Both are closed forms, vectorised over
replicates (a bootstrap over weeks is slower and undercovers with few weeks). The dispersion
is not floored at 1 (that makes the interval conservative: 97-99% with 8-26 weeks of Poisson
counts), only at :data:`MIN_DISPERSION`, so that a few exactly proportional counts cannot give
an interval of zero width. A burst lasting several weeks (autocorrelation) is not modelled.
Below :data:`MIN_FAILURES_FOR_DISPERSION` failures or :data:`MIN_PERIODS_FOR_DISPERSION`
periods the variation cannot be estimated: the interval is then the exact Poisson one, and the
result says so. The exact Poisson interval is always reported beside the robust one as the
figure "if the rate were constant".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import polars as pl
from scipy import stats

from reliability._result import Result, fmt_count, fmt_num
from reliability.errors import Hint, Hinted

__all__ = [
    "MIN_DISPERSION",
    "MIN_FAILURES_FOR_DISPERSION",
    "MIN_FAILURES_FOR_RATE",
    "MIN_FAILURES_FOR_TREND",
    "MIN_PERIODS_FOR_DISPERSION",
    "MIN_PERIODS_FOR_TREND",
    "RateEstimate",
    "TrendTest",
    "estimate_rate",
    "period_counts",
    "poisson_ci",
    "poisson_regression",
    "rate_interval",
    "resolve_observation_end",
    "trend_of",
    "trend_test",
]

#: a point estimate of a rate needs at least this many failures (below: an upper bound only)
MIN_FAILURES_FOR_RATE = 1
#: the period-to-period dispersion needs at least this many failures ...
MIN_FAILURES_FOR_DISPERSION = 5
#: ... and this many periods with exposure (3 degrees of freedom)
MIN_PERIODS_FOR_DISPERSION = 4
#: a trend needs at least this many failures ...
MIN_FAILURES_FOR_TREND = 5
#: ... over this many periods with exposure (2 degrees of freedom after intercept and slope)
MIN_PERIODS_FOR_TREND = 4
#: smallest dispersion used (guards against an interval of zero width from tiny counts)
MIN_DISPERSION = 0.25


def poisson_ci(k: int | np.ndarray, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Exact (Garwood) two-sided interval for a Poisson mean given ``k`` events.

    Parameters
    ----------
    k : int or numpy.ndarray
        Observed count(s).
    alpha : float
        1 − confidence level.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        (low, high): ``[chi2(α/2, 2k)/2, chi2(1−α/2, 2k+2)/2]`` (low = 0 when k = 0).

    References
    ----------
    Garwood (1936), Biometrika 28(3/4):437-442.
    """
    k = np.asarray(k, dtype=float)
    with np.errstate(invalid="ignore"):
        lo = np.where(k > 0, stats.chi2.ppf(alpha / 2, 2 * np.maximum(k, 1e-300)) / 2, 0.0)
    hi = stats.chi2.ppf(1 - alpha / 2, 2 * k + 2) / 2
    return lo, hi


def rate_interval(
    k: np.ndarray, exposure: np.ndarray, alpha: float = 0.05
) -> dict[str, np.ndarray]:
    """Rate with its robust (HC2) interval from counts per period (see the module doc).

    Vectorised: the last axis holds the periods, leading axes are independent series.

    Parameters
    ----------
    k : numpy.ndarray
        Failures per period [count], shape ``(..., n_periods)``.
    exposure : numpy.ndarray
        Exposure per period [e.g. node-days], same shape; periods with no exposure are ignored.
    alpha : float
        1 − confidence level.

    Returns
    -------
    dict of str to numpy.ndarray
        Dict of arrays over the leading axes: ``rate`` (Σk/ΣE), ``low``, ``high`` (robust HC2,
        falling back to the exact Poisson interval where the dispersion cannot be estimated),
        ``poisson_low``, ``poisson_high`` (exact, "if the rate were constant"), ``dispersion`` (nan
        where not estimable), ``robust`` (bool: the interval is the robust one), ``failures``,
        ``exposure``, ``periods``.
    """
    k = np.asarray(k, dtype=float)
    e = np.asarray(exposure, dtype=float)
    used = e > 0
    k = np.where(used, k, 0.0)
    e = np.where(used, e, 0.0)
    K = k.sum(-1)
    E = e.sum(-1)
    n = used.sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(E > 0, K / np.where(E > 0, E, 1.0), np.nan)
        # HC2 sandwich variance of Σk/ΣE with periods as clusters: Σ e_w² / (1 − h_w) / E²,
        # h_w = E_w / E the leverage of period w (unbiased when the counts are Poisson)
        resid2 = np.where(used, (k - rate[..., None] * e) ** 2, 0.0)
        lev = np.where(used, e / np.where(E > 0, E, 1.0)[..., None], 0.0)
        meat = (resid2 / np.maximum(1.0 - lev, 1e-12)).sum(-1)
        # variance inflation over the Poisson variance K / E² (the "dispersion")
        phi = np.maximum(meat / np.maximum(K, 1.0), MIN_DISPERSION)
        robust = (K >= MIN_FAILURES_FOR_DISPERSION) & (n >= MIN_PERIODS_FOR_DISPERSION)
        se = np.sqrt(phi / np.maximum(K, 1.0))
        t = stats.t.ppf(1 - alpha / 2, np.maximum(n - 1, 1))
        plo, phi_ = poisson_ci(K, alpha)
        poisson_low = np.where(E > 0, plo / np.where(E > 0, E, 1.0), np.nan)
        poisson_high = np.where(E > 0, phi_ / np.where(E > 0, E, 1.0), np.nan)
        low = np.where(robust, rate * np.exp(-t * se), poisson_low)
        high = np.where(robust, rate * np.exp(t * se), poisson_high)
    return {
        "rate": rate,
        "low": low,
        "high": high,
        "poisson_low": poisson_low,
        "poisson_high": poisson_high,
        "dispersion": np.where(robust, phi, np.nan),
        "robust": robust,
        "failures": K,
        "exposure": E,
        "periods": n,
    }


def _poisson_glm(
    k: np.ndarray, e: np.ndarray, x: np.ndarray, used: np.ndarray, iters: int = 60
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised Newton fit of ``log μ = b0 + b1 x + log E`` over leading axes.

    Returns coefficients ``(..., 2)``, fitted means, the inverse information ``(..., 2, 2)``
    and a converged flag.
    """
    X = np.stack([np.ones_like(x), x], axis=-1)  # (n, 2)
    w = used.astype(float)
    K = (k * w).sum(-1)
    E = (e * w).sum(-1)
    b = np.zeros((*k.shape[:-1], 2))
    b[..., 0] = np.log(np.maximum(K, 0.5) / np.where(E > 0, E, 1.0))
    loge = np.log(np.where(e > 0, e, 1.0))
    converged = np.zeros(k.shape[:-1], dtype=bool)
    for _ in range(iters):
        eta = np.clip(b @ X.T + loge, -700, 700)
        mu = np.exp(eta) * w
        g = np.einsum("...n,ni->...i", k * w - mu, X)
        H = np.einsum("...n,ni,nj->...ij", mu, X, X) + 1e-12 * np.eye(2)
        step = np.linalg.solve(H, g[..., None])[..., 0]
        # damp huge steps (separation: all failures in the last periods)
        size = np.abs(step).max(-1, keepdims=True)
        step = np.where(size > 5.0, step * 5.0 / np.maximum(size, 1e-300), step)
        b = b + step
        converged = np.abs(step).max(-1) < 1e-9
        if converged.all():
            break
    mu = np.exp(np.clip(b @ X.T + loge, -700, 700)) * w
    H = np.einsum("...n,ni,nj->...ij", mu, X, X) + 1e-12 * np.eye(2)
    return b, mu, np.linalg.inv(H), converged


def poisson_regression(
    k: np.ndarray,
    exposure: np.ndarray,
    x: np.ndarray,
    *,
    alpha: float = 0.05,
    null_slope: float = 0.0,
    min_failures: int = 5,
    min_points: int = 3,
) -> dict[str, np.ndarray]:
    """Fit the Poisson regression ``log E[k] = b0 + b1 x + log(exposure)`` with a robust slope variance.

    Vectorised over the leading axes.

    The slope's variance is the HC3 sandwich ``H⁻¹ (Σ (k − μ)² / (1 − h)² x xᵀ) H⁻¹`` (H the
    Poisson information, h the leverage), valid whatever the variance of the counts, and its
    interval and Wald test use Student-t quantiles on ``n − 2`` degrees of freedom (see the
    module doc). Used for the trend over periods (:func:`trend_test`) and the slope of
    failures on log(nodes) (MTTF ∝ 1/N, :func:`reliability.models.failures.fit_mttf`).

    Parameters
    ----------
    k : numpy.ndarray
        Counts [failures], shape ``(..., n_points)``.
    exposure : numpy.ndarray
        Exposure of each point, same shape (points without exposure are ignored).
    x : numpy.ndarray
        Covariate, shape ``(n_points,)``.
    alpha : float
        1 − confidence level of the slope's interval.
    null_slope : float
        Slope under the null hypothesis of ``p``.
    min_failures, min_points : int
        Below these (total failures, points with exposure) the fit is not attempted (``valid``
        False).

    Returns
    -------
    dict of str to numpy.ndarray
        Dict of arrays over the leading axes: ``slope``, ``low``, ``high``, ``se`` (robust), ``p``
        (robust p-value of slope = ``null_slope``), ``p_poisson`` (the same test if the counts were
        Poisson), ``dispersion`` (Pearson ``X² / (n − 2)``, for information), ``valid`` (enough data
        and the fit converged; a fit with every failure in one point diverges and is invalid),
        ``intercept`` (``b0`` at the mean of ``x``: the model is ``b0 + b1 (x − x_mean)``),
        ``x_mean``, ``df`` (``n − 2``, the Student-t degrees of freedom) and ``cov`` (the robust covariance of ``(b0, b1)``, shape ``(..., 2, 2)``).
    """
    k = np.asarray(k, dtype=float)
    e = np.asarray(exposure, dtype=float)
    used = e > 0
    k = np.where(used, k, 0.0)
    x = np.asarray(x, dtype=float)
    xc = x - x.mean()  # centred: better conditioned; the slope is unchanged
    b, mu, cov, converged = _poisson_glm(k, e, xc, used)
    X = np.stack([np.ones_like(xc), xc], axis=-1)
    lev = np.einsum("ni,...ij,nj->...n", X, cov, X) * mu
    resid2 = np.where(used, (k - mu) ** 2, 0.0) / np.maximum(1.0 - lev, 1e-9) ** 2
    robust_cov = cov @ np.einsum("...n,ni,nj->...ij", resid2, X, X) @ cov
    n = used.sum(-1)
    K = k.sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        pearson = np.where(used & (mu > 0), (k - mu) ** 2 / np.where(mu > 0, mu, 1.0), 0.0).sum(-1)
        df = np.maximum(n - 2, 1)
        phi = np.maximum(pearson / df, MIN_DISPERSION)
        se_p = np.sqrt(np.maximum(cov[..., 1, 1], 0.0))
        se = np.sqrt(np.maximum(robust_cov[..., 1, 1], 0.0))
        slope = b[..., 1]
        p = 2 * stats.t.sf(np.abs((slope - null_slope) / se), df)
        p_poisson = 2 * stats.norm.sf(np.abs((slope - null_slope) / se_p))
        q = stats.t.ppf(1 - alpha / 2, df)
        valid = (
            (min_failures <= K)
            & (max(min_points, 3) <= n)
            & converged
            & np.isfinite(se)
            & (se > 0)
            & (np.abs(slope) < 20)
        )
    nan = np.full(np.shape(slope), np.nan)
    return {
        "slope": np.where(valid, slope, nan),
        "low": np.where(valid, slope - q * se, nan),
        "high": np.where(valid, slope + q * se, nan),
        "se": np.where(valid, se, nan),
        "p": np.where(valid, p, nan),
        "p_poisson": np.where(valid, p_poisson, nan),
        "dispersion": np.where(valid, phi, nan),
        "valid": valid,
        "intercept": np.where(valid, b[..., 0], nan),
        "x_mean": x.mean(),
        "df": df,
        "cov": np.where(valid[..., None, None], robust_cov, np.nan),
    }


def _nb_glm(
    k: np.ndarray, e: np.ndarray, x: np.ndarray, used: np.ndarray, rounds: int = 6, iters: int = 60
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Fit ``log μ = b0 + b1 x + log E`` with variance ``μ + α μ²`` (NB2), vectorised.

    Alternates iteratively reweighted least squares for ``b`` (weights ``μ / (1 + α μ)``) with
    the moment estimate of ``α`` (``Σ((k − μ)² − μ) / Σ μ²``, degrees-of-freedom corrected,
    floored at 0). Returns the coefficients, fitted means, ``α``, the inverse information and a
    converged flag.
    """
    X = np.stack([np.ones_like(x), x], axis=-1)
    w_used = used.astype(float)
    n = w_used.sum(-1)
    K = (k * w_used).sum(-1)
    E = (e * w_used).sum(-1)
    b = np.zeros((*k.shape[:-1], 2))
    b[..., 0] = np.log(np.maximum(K, 0.5) / np.where(E > 0, E, 1.0))
    loge = np.log(np.where(e > 0, e, 1.0))
    alpha = np.zeros(k.shape[:-1])
    converged = np.zeros(k.shape[:-1], dtype=bool)
    for _ in range(rounds):
        for _ in range(iters):
            mu = np.exp(np.clip(b @ X.T + loge, -700, 700)) * w_used
            w = mu / (1.0 + alpha[..., None] * mu)
            g = np.einsum(
                "...n,ni->...i", np.where(mu > 0, (k - mu) * w / np.maximum(mu, 1e-300), 0.0), X
            )
            H = np.einsum("...n,ni,nj->...ij", w, X, X) + 1e-12 * np.eye(2)
            step = np.linalg.solve(H, g[..., None])[..., 0]
            size = np.abs(step).max(-1, keepdims=True)
            step = np.where(size > 5.0, step * 5.0 / np.maximum(size, 1e-300), step)
            b = b + step
            converged = np.abs(step).max(-1) < 1e-9
            if converged.all():
                break
        mu = np.exp(np.clip(b @ X.T + loge, -700, 700)) * w_used
        with np.errstate(divide="ignore", invalid="ignore"):
            num = (np.where(used, (k - mu) ** 2 - mu, 0.0)).sum(-1) * n / np.maximum(n - 2, 1)
            alpha = np.maximum(np.nan_to_num(num / (mu**2).sum(-1)), 0.0)
    mu = np.exp(np.clip(b @ X.T + loge, -700, 700)) * w_used
    w = mu / (1.0 + alpha[..., None] * mu)
    H = np.einsum("...n,ni,nj->...ij", w, X, X) + 1e-12 * np.eye(2)
    return b, mu, alpha, np.linalg.inv(H), converged


def trend_test(k: np.ndarray, exposure: np.ndarray, alpha: float = 0.05) -> dict[str, np.ndarray]:
    """Test the trend of a rate over periods, allowing for period-to-period swings.

    A negative-binomial (NB2) quasi-likelihood regression of the counts on the period index
    with a log-exposure offset: variance ``φ (μ + α μ²)``, ``α`` by moments (a rate swing
    shared by a whole period adds variance ∝ μ², whatever the exposure), ``φ`` the Pearson
    scale on that variance (floored at :data:`MIN_DISPERSION`), Wald t-test on ``n − 2``
    degrees of freedom (McCullagh & Nelder 1989 §9; Cameron & Trivedi 2013 §3.3). It weights
    each period by the information it holds, where the HC3 sandwich of
    :func:`poisson_regression` (kept for the slope on log nodes) weights by Poisson
    information: with weekly swings of CV 0.5, a doubling over 8 weeks at 20 failures a week is
    detected in 18% of histories against 12% (no test can do much better: the swings hide
    it); without swings, 81% against 66%; size 4-6% in both (``benchmarks/stats_calibration.py``).
    Vectorised like :func:`rate_interval`. ``detectable`` is the smallest change per period
    the test would detect with 80% power at this variance.

    Parameters
    ----------
    k : numpy.ndarray
        Failures per period [count], shape ``(..., n_periods)``, periods equally spaced.
    exposure : numpy.ndarray
        Exposure per period, same shape (periods without exposure are ignored).
    alpha : float
        1 − confidence level of the interval of the change per period.

    Returns
    -------
    dict of str to numpy.ndarray
        Dict of arrays: ``per_period`` (multiplicative change of the rate per period,
        ``exp(slope)``), ``low``, ``high`` (its interval), ``p`` (p-value of "no trend"),
        ``p_poisson`` (the same test if counts were Poisson), ``dispersion`` (the NB ``α``: the
        squared coefficient of variation of the period-to-period swing), ``detectable`` (the
        change per period, ≥ 1, detectable with 80% power), ``valid`` (at least
        :data:`MIN_FAILURES_FOR_TREND` failures over :data:`MIN_PERIODS_FOR_TREND` periods, and
        the fit converged).
    """
    k = np.asarray(k, dtype=float)
    e = np.asarray(exposure, dtype=float)
    used = e > 0
    k = np.where(used, k, 0.0)
    x = np.arange(k.shape[-1], dtype=float)
    xc = x - x[used.any(axis=tuple(range(used.ndim - 1)))].mean() if used.any() else x
    b, mu, a, cov, converged = _nb_glm(k, e, xc, used)
    n = used.sum(-1)
    K = k.sum(-1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        df = np.maximum(n - 2, 1)
        var = mu + a[..., None] * mu**2
        pearson = np.where(used & (var > 0), (k - mu) ** 2 / np.where(var > 0, var, 1.0), 0.0).sum(
            -1
        )
        phi = np.maximum(pearson / df, MIN_DISPERSION)
        se = np.sqrt(np.maximum(cov[..., 1, 1] * phi, 0.0))
        # the Poisson test, for comparison ("if the counts were Poisson")
        pb, _, pcov, _ = _poisson_glm(k, e, xc, used)
        se_p = np.sqrt(np.maximum(pcov[..., 1, 1], 0.0))
        slope = b[..., 1]
        p = 2 * stats.t.sf(np.abs(slope / se), df)
        p_poisson = 2 * stats.norm.sf(np.abs(pb[..., 1] / se_p))
        q = stats.t.ppf(1 - alpha / 2, df)
        detect = (q + stats.t.ppf(0.8, df)) * se
        valid = (
            (K >= MIN_FAILURES_FOR_TREND)
            & (n >= MIN_PERIODS_FOR_TREND)
            & converged
            & np.isfinite(se)
            & (se > 0)
            & (np.abs(slope) < 20)
        )
        nan = np.full(np.shape(slope), np.nan)
        return {
            "per_period": np.where(valid, np.exp(np.clip(slope, -50, 50)), nan),
            "low": np.where(valid, np.exp(np.clip(slope - q * se, -50, 50)), nan),
            "high": np.where(valid, np.exp(np.clip(slope + q * se, -50, 50)), nan),
            "p": np.where(valid, p, nan),
            "p_poisson": np.where(valid, p_poisson, nan),
            "dispersion": np.where(valid, a, nan),
            "detectable": np.where(valid, np.exp(np.clip(detect, 0, 50)), nan),
            "valid": valid,
        }


@dataclass
class RateEstimate(Result):
    """A failure rate with its intervals and sample sizes (one window).

    Attributes
    ----------
    label : str
        Which window (``"whole window"``, ``"last 4 weeks"``).
    failures : int
        Failures counted [count].
    exposure : float
        Exposure [``unit`` days, e.g. node-days].
    periods : int
        Periods with exposure (weeks).
    rate : float or None
        Failures per exposure-day, None when fewer than :data:`MIN_FAILURES_FOR_RATE`.
    low, high : float
        Interval at ``1 − alpha`` (robust HC2 when ``robust``, else exact Poisson).
    poisson_low, poisson_high : float
        Exact Poisson interval ("if the rate were constant").
    dispersion : float or None
        Period-to-period dispersion φ (None when not estimable).
    robust : bool
        Whether ``low``/``high`` allow for period-to-period variation.
    """

    title = "Failure rate"
    label: str
    failures: int
    exposure: float
    periods: int
    rate: float | None
    low: float
    high: float
    poisson_low: float
    poisson_high: float
    dispersion: float | None
    robust: bool
    alpha: float = 0.05
    unit: str = "node"
    notes: list[str] = field(default_factory=list)

    @property
    def value(self) -> float:
        """The rate to plan with: the point estimate, or 0.0 when there were no failures."""
        return self.rate if self.rate is not None else 0.0

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the rate: failures, exposure [unit-days], periods."""
        return {
            "failures": self.failures,
            f"{self.unit}-days": self.exposure,
            "periods": self.periods,
        }

    @property
    def summary(self) -> pl.DataFrame:
        """One row: the rate per 1000 unit-days with the robust and the Poisson interval, dispersion, failures, exposure, periods."""
        return self._mapping_frame(
            {
                "window": self.label,
                "rate_per_1000_days": None if self.rate is None else 1000 * self.rate,
                "ci_low": 1000 * self.low,
                "ci_high": 1000 * self.high,
                "poisson_ci_low": 1000 * self.poisson_low,
                "poisson_ci_high": 1000 * self.poisson_high,
                "dispersion": self.dispersion,
                "robust": self.robust,
                "failures": self.failures,
                "exposure_days": self.exposure,
                "periods": self.periods,
            }
        )

    def describe(self) -> str:
        """Describe the rate in one sentence: per 1000 exposure-days with both intervals and its basis.

        Returns
        -------
        str
            The sentence, or why the rate is not estimable (with the upper bound when there is
            exposure).
        """
        u = f"{self.unit}-days"
        pct = f"{100 * (1 - self.alpha):.0f}%"
        if self.exposure <= 0:
            return f"{self.label}: no exposure ({u}): rate not estimable"
        if self.rate is None:
            return (
                f"{self.label}: {self.failures} failures in {fmt_num(self.exposure)} {u}: rate not "
                f"estimable; upper {pct} bound {fmt_num(1000 * self.high)} per 1000 {u}"
            )
        if self.robust:
            ci = (
                f"{pct} CI {fmt_num(1000 * self.low)}-{fmt_num(1000 * self.high)} allowing for "
                f"week-to-week variation [dispersion {self.dispersion:.2f} over {self.periods} weeks], "
                f"{fmt_num(1000 * self.poisson_low)}-{fmt_num(1000 * self.poisson_high)} if the rate were constant"
            )
        else:
            ci = (
                f"{pct} CI {fmt_num(1000 * self.poisson_low)}-{fmt_num(1000 * self.poisson_high)} "
                "if the rate were constant [too few failures or weeks to assess week-to-week variation]"
            )
        return (
            f"{self.label}: {fmt_num(1000 * self.rate)} per 1000 {u} ({ci}); {self.failures:,} failures "
            f"in {fmt_num(self.exposure)} {u}"
        )

    def _lines(self) -> list[str]:
        return [self.describe()]

    @classmethod
    def _example(cls, kind: str = "normal") -> RateEstimate:
        """Build a tiny instance: four weeks of a node fleet with a few failures (for contract tests).

        ``kind="no failures"``: the same without hardware failures.
        """
        from reliability.models._examples import check_kind

        check_kind(kind)
        return estimate_rate(
            [1, 0, 2, 1] if kind == "normal" else [0, 0, 0, 0],
            [30.0, 28.0, 31.0, 29.0],
            label="tiny",
            unit="node",
        )


def estimate_rate(
    k: np.ndarray | list[int],
    exposure: np.ndarray | list[float],
    *,
    alpha: float = 0.05,
    label: str = "whole window",
    unit: str = "node",
) -> RateEstimate:
    """Estimate the failure rate of one series of period counts (see :func:`rate_interval`).

    Parameters
    ----------
    k : array-like of int
        Failures per period [count].
    exposure : array-like of float
        Exposure per period [``unit``-days].
    alpha : float
        1 − confidence level.
    label : str
        Name of the window, for the text.
    unit : str
        What the exposure counts (``"node"``: node-days).

    Returns
    -------
    RateEstimate
        The rate [failures per unit-day] with the robust and the exact Poisson interval.
    """
    k = np.asarray(k, dtype=float).reshape(-1)
    e = np.asarray(exposure, dtype=float).reshape(-1)
    if k.size == 0:
        k, e = np.zeros(1), np.zeros(1)
    r = rate_interval(k, e, alpha)
    failures = int(r["failures"])
    expo = float(r["exposure"])
    notes = []
    if expo > 0 and failures >= MIN_FAILURES_FOR_RATE and not bool(r["robust"]):
        notes.append(
            f"{label}: week-to-week variation not assessed (needs {MIN_FAILURES_FOR_DISPERSION} failures "
            f"over {MIN_PERIODS_FOR_DISPERSION} weeks; have {failures} over {int(r['periods'])}): the interval "
            "assumes a constant rate and is too narrow if the rate swings"
        )

    def f(key: str) -> float:
        v = float(r[key])
        return v if math.isfinite(v) else 0.0

    return RateEstimate(
        label=label,
        failures=failures,
        exposure=expo,
        periods=int(r["periods"]),
        rate=float(r["rate"]) if expo > 0 and failures >= MIN_FAILURES_FOR_RATE else None,
        low=f("low"),
        high=f("high") if expo > 0 else 0.0,
        poisson_low=f("poisson_low"),
        poisson_high=f("poisson_high"),
        dispersion=float(r["dispersion"]) if bool(r["robust"]) else None,
        robust=bool(r["robust"]),
        alpha=alpha,
        unit=unit,
        notes=notes,
    )


@dataclass
class TrendTest(Result):
    """Trend of a rate over periods (see :func:`trend_test`).

    Attributes
    ----------
    per_period : float or None
        Multiplicative change of the rate per period (None when not estimable).
    low, high : float or None
        Its interval at ``1 − alpha``.
    p : float or None
        p-value of "no trend" allowing for period-to-period swings; ``p_poisson`` the Poisson one.
    dispersion : float or None
        The NB ``α`` of the fit: the squared coefficient of variation of the rate's swing from
        period to period (0: no swing beyond Poisson).
    periods, failures : int
        Sample sizes.
    period : str
        The period's name (``"week"``).
    detectable : float or None
        The smallest change per period (×, ≥ 1) the test would detect with 80% power at the
        variation seen: what "no trend found" can rule out.
    """

    title = "Trend test"
    per_period: float | None
    low: float | None
    high: float | None
    p: float | None
    p_poisson: float | None
    dispersion: float | None
    periods: int
    failures: int
    period: str = "week"
    alpha: float = 0.05
    detectable: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the test: failures and periods."""
        return {"failures": self.failures, "periods": self.periods}

    @property
    def summary(self) -> pl.DataFrame:
        """One row: change per period with its interval, robust and Poisson p-values, dispersion, periods, failures."""
        return self._mapping_frame(
            {
                "change_per_period": self.per_period,
                "ci_low": self.low,
                "ci_high": self.high,
                "p": self.p,
                "p_poisson": self.p_poisson,
                "dispersion": self.dispersion,
                "detectable_change": self.detectable,
                "periods": self.periods,
                "failures": self.failures,
            }
        )

    def describe(self) -> str:
        """Describe the trend in one sentence, or say why there is none.

        Returns
        -------
        str
            The change per period with its interval and p-values, or what is missing.
        """
        if self.per_period is None:
            return (
                f"trend not estimable: {fmt_count(self.failures, 'failure')} over "
                f"{fmt_count(self.periods, self.period)} "
                f"(needs {MIN_FAILURES_FOR_TREND} failures over {MIN_PERIODS_FOR_TREND} {self.period}s, and "
                "failures not all in one period)"
            )
        pct = f"{100 * (1 - self.alpha):.0f}%"
        swing = math.sqrt(self.dispersion) if self.dispersion is not None else 0.0
        text = (
            f"rate changes x{self.per_period:.3f} per {self.period} ({pct} CI {self.low:.3f}-{self.high:.3f}; "
            f"p(no trend) = {self.p:.3g} allowing for {self.period}-to-{self.period} variation "
            f"(swing CV {swing:.2f}); p = {self.p_poisson:.3g} if counts were Poisson)"
        )
        if self.detectable is not None and self.p is not None and self.p >= self.alpha:
            text += (
                f"; with this variation a change of x{self.detectable:.2f} per {self.period} or more "
                "would be detected 80% of the time"
            )
        return text

    def _lines(self) -> list[str]:
        return [self.describe()]

    @classmethod
    def _example(cls, kind: str = "normal") -> TrendTest:
        """Build a tiny instance: failures over four weeks of equal exposure (for contract tests).

        ``kind="no failures"``: the same without hardware failures.
        """
        from reliability.models._examples import check_kind

        check_kind(kind)
        return trend_of(
            np.array([0, 1, 1, 3] if kind == "normal" else [0, 0, 0, 0]),
            np.array([30.0, 30.0, 30.0, 30.0]),
        )


def trend_of(
    k: np.ndarray, exposure: np.ndarray, *, alpha: float = 0.05, period: str = "week"
) -> TrendTest:
    """Test the trend of one series of period counts (see :func:`trend_test`).

    Parameters
    ----------
    k : numpy.ndarray
        Failures per period [count], periods equally spaced.
    exposure : numpy.ndarray
        Exposure per period (periods without exposure are ignored).
    alpha : float
        1 − confidence level of the interval of the change per period.
    period : str
        What a period is, for the text (``"week"``).

    Returns
    -------
    TrendTest
        The multiplicative change per period with its interval and p-values (None where not
        estimable).
    """
    k = np.asarray(k, dtype=float).reshape(-1)
    e = np.asarray(exposure, dtype=float).reshape(-1)
    n = int((e > 0).sum())
    K = int(k[e > 0].sum()) if n else 0
    if n == 0:
        return TrendTest(None, None, None, None, None, None, 0, 0, period, alpha)
    r = trend_test(k, e, alpha)
    if not bool(r["valid"]):
        return TrendTest(None, None, None, None, None, None, n, K, period, alpha)
    return TrendTest(
        *(float(r[c]) for c in ("per_period", "low", "high", "p", "p_poisson", "dispersion")),
        periods=n,
        failures=K,
        period=period,
        alpha=alpha,
        detectable=float(r["detectable"]),
    )


def as_utc(t: datetime, name: str = "time") -> datetime:
    """Convert an aware datetime to UTC; a naive one is refused (its time zone is unknown).

    Parameters
    ----------
    t : datetime
        A timezone-aware datetime.
    name : str
        What it is, for the error.

    Returns
    -------
    datetime
        ``t`` in UTC.

    Raises
    ------
    ValueError
        For a naive datetime.
    """
    if t.tzinfo is None:
        raise ValueError(
            f"{name} must be timezone-aware (e.g. datetime(..., tzinfo=UTC)), got {t!r}"
        )
    return t.astimezone(UTC)


def resolve_observation_end(
    source: Any, frame: pl.DataFrame | pl.LazyFrame, observation_end: datetime | None
) -> tuple[datetime | None, str | None]:
    """Work out the observation end to censor at, and a note on where it came from.

    Parameters
    ----------
    source : object
        A Dataset or a frame (what the caller was given).
    frame : polars.DataFrame or polars.LazyFrame
        The attempts (``submit_time``, ``start_time``, ``end_time``); a LazyFrame is read for
        the latest time only (streaming).
    observation_end : datetime or None
        The caller's observation end [UTC, aware].

    Returns
    -------
    (datetime or None, str or None)
        ``observation_end`` when given; else the Dataset's (``source`` is a Dataset); else the
        latest timestamp in ``frame`` (submit, start or end), with a note saying so; None when
        there is none.
    """
    if observation_end is not None:
        return as_utc(observation_end, "observation_end"), None
    ds_end = (
        getattr(source, "observation_end", None) if not isinstance(source, pl.DataFrame) else None
    )
    if isinstance(ds_end, datetime):
        return as_utc(ds_end, "the Dataset's observation end"), None
    names = frame.collect_schema().names() if isinstance(frame, pl.LazyFrame) else frame.columns
    cols = [c for c in ("submit_time", "start_time", "end_time") if c in names]
    if not cols:
        return None, None
    latest = frame.select(pl.max_horizontal([pl.col(c).max() for c in cols]))
    if isinstance(latest, pl.LazyFrame):
        latest = latest.collect(engine="streaming")
    latest = latest.item()  # (None for no rows)
    if latest is None:
        return None, None
    return latest, Hinted(
        "observation end not given: taken as the latest timestamp in the jobs "
        f"({latest:%Y-%m-%d %H:%M} UTC); ",
        Hint("observation_end"),
        " (e.g. the sacct --endtime) to censor running attempts exactly",
    )


def clip_attempts(
    frame: pl.DataFrame, observation_end: datetime | None
) -> tuple[pl.DataFrame, int]:
    """Clip the exposure of started attempts at the observation end.

    Attempts that start after the observation end are dropped.

    Parameters
    ----------
    frame : polars.DataFrame
        Attempts with ``start_time`` and ``end_time``.
    observation_end : datetime or None
        The observation end [UTC]; None: only ended attempts are kept.

    Returns
    -------
    (polars.DataFrame, int)
        The attempts with ``stop`` (end, or the observation end for attempts still open) and
        ``open`` (no end, or an end after the observation end: censored, not failed); and the
        number of open attempts.
    """
    f = clip_lazy(frame.lazy(), observation_end).collect()
    return f, int(f.get_column("open").sum())


def clip_lazy(frame: pl.LazyFrame, observation_end: datetime | None) -> pl.LazyFrame:
    """:func:`clip_attempts`' rows and columns as a query (for a caller that adds to it).

    Parameters
    ----------
    frame : polars.LazyFrame
        Attempts with ``start_time`` and ``end_time``.
    observation_end : datetime or None
        The observation end [UTC]; None: only ended attempts are kept.

    Returns
    -------
    polars.LazyFrame
        The started attempts with ``stop`` and ``open`` (see :func:`clip_attempts`).
    """
    f = frame.filter(pl.col("start_time").is_not_null())
    if observation_end is None:
        return f.filter(pl.col("end_time").is_not_null()).with_columns(
            stop=pl.col("end_time"), open=pl.lit(False)
        )
    end = pl.lit(observation_end).cast(pl.Datetime("us", "UTC"))
    return f.filter(pl.col("start_time") < end).with_columns(
        open=pl.col("end_time").is_null() | (pl.col("end_time") > end),
        stop=pl.min_horizontal(pl.col("end_time").fill_null(end), end),
    )


def period_counts(
    attempts: pl.DataFrame, *, every: str = "1w", weight: str = "n_nodes"
) -> pl.DataFrame:
    """Count failures and exposure per period.

    Each attempt's exposure (``weight`` × duration [days], e.g. node-days) is split over the
    periods it spans; its failure counts in the period it ended in (open attempts never fail).

    Parameters
    ----------
    attempts : polars.DataFrame
        Attempts with ``start_time``, ``stop`` and boolean ``failed`` / ``open`` (see
        :func:`clip_attempts`).
    every : str
        Period length as a polars duration (``"1w"``).
    weight : str
        Column the duration is multiplied by (``"n_nodes"``: node-days).

    Returns
    -------
    polars.DataFrame
        ``period`` (UTC start, aligned with ``dt.truncate(every)``), ``failures``, ``exposure``
        [days × weight], sorted, periods without exposure left out.
    """
    a = attempts.select(
        "start_time",
        "stop",
        w=pl.col(weight).cast(pl.Float64),
        failed=pl.col("failed") & ~pl.col("open"),
    ).filter(pl.col("stop") >= pl.col("start_time"))
    pieces = []
    cur = a.with_columns(p=pl.col("start_time").dt.truncate(every))
    while cur.height:
        p_end = pl.col("p").dt.offset_by(every)
        pieces.append(
            cur.select(
                period="p",
                exposure=(
                    pl.min_horizontal("stop", p_end) - pl.max_horizontal("start_time", "p")
                ).dt.total_microseconds()
                / 1e6
                / 86400.0
                * pl.col("w"),
                failures=(pl.col("failed") & (pl.col("stop") <= p_end)).cast(pl.Int64),
            )
        )
        cur = cur.filter(pl.col("stop") > p_end).with_columns(p=p_end)
    if not pieces:
        return pl.DataFrame(
            schema={
                "period": pl.Datetime("us", "UTC"),
                "failures": pl.Int64,
                "exposure": pl.Float64,
            }
        )
    return (
        pl.concat(pieces)
        .group_by("period")
        # (summed in a fixed order: polars' parallel group-by otherwise adds the floats in an
        # order that varies from run to run, and the last digits with it)
        .agg(pl.col("failures").sum(), pl.col("exposure").sort().sum())
        .filter(pl.col("exposure") > 0)
        .sort("period")
    )


def is_dataset(source: Any) -> bool:
    """Tell whether an object is a Dataset (duck-typed: not a frame or dict, and has ``jobs``).

    Parameters
    ----------
    source : object
        What a model was given.

    Returns
    -------
    bool
        True for a Dataset.
    """
    return not isinstance(source, pl.DataFrame | dict) and hasattr(source, "jobs")
