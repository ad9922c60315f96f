"""Component lifetimes: Kaplan-Meier, parametric fits, the hazard-shape verdict, MTTF and B10.

Kaplan-Meier with confidence bands, exponential / Weibull / log-normal fits (lifelines) with
AIC and a likelihood-ratio test against the exponential, the hazard-shape verdict, MTTF and
B10 life, for any lifetime table (one row per component: time in service, failed or
censored, optional left-truncation entry age).

Models (``t`` in the table's time unit; lifelines' parametrisations):

- exponential ``S(t) = exp(−t/λ)``: MTTF ``λ``, B10 ``λ·(−ln 0.9)``;
- Weibull ``S(t) = exp(−(t/λ)^ρ)``: MTTF ``λ·Γ(1 + 1/ρ)``, B10 ``λ·(−ln 0.9)^{1/ρ}``;
  the exponential is the Weibull with ``ρ = 1``, so ``2 (ℓ_W − ℓ_E) ~ χ²₁`` tests it;
- log-normal ``log t ~ N(μ, σ²)``: MTTF ``exp(μ + σ²/2)``, B10 ``exp(μ + σ Φ⁻¹(0.1))``
  (not nested with the exponential: compared by AIC only).

The shape ``ρ``'s interval is a Wald interval on ``log ρ`` (``ρ·exp(±z·se(ρ)/ρ)``), MTTF's and
B10's are delta-method intervals on the log scale from lifelines' variance matrix. The verdict
reads the shape's interval: entirely below 1 → infant mortality (decreasing hazard); entirely
above 1 → wear-out (increasing hazard); containing 1 → random failures (constant hazard, the
assumption behind MTTF = 1/(N r_f)). Left truncation (``entry``: age when observation began)
keeps components that entered the data already old from biasing the fit towards long lives
(lifelines' ``entry=``; Klein & Moeschberger 2003 §3.4).

A Dataset's ``inventory`` + ``component_failures`` become such a table with
:func:`lifetime_table`: time from entering service to the first failure, censored at leaving
service or at the observation end (later failures of a repaired component are a repairable
system's inter-failure times: :mod:`reliability.models.lifetimes.repairable`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import polars as pl
from scipy import special, stats

from reliability._result import Result, fmt_num
from reliability.errors import Hint, Hinted

__all__ = [
    "MIN_FAILURES_FOR_FIT",
    "LifetimeFit",
    "LifetimeResult",
    "fit_lifetimes",
    "fit_weibull",
    "hazard_verdict",
    "lifetime_table",
    "weibull_mle",
]

#: parametric fits need at least this many failures in a group (below: Kaplan-Meier only)
MIN_FAILURES_FOR_FIT = 5
_B10 = -math.log(0.9)
_MODELS = ("exponential", "weibull", "lognormal")


def hazard_verdict(
    shape: float | None, low: float | None, high: float | None, *, short: bool = False
) -> str:
    """Read the hazard's shape from a Weibull shape's interval (see the module doc).

    Parameters
    ----------
    shape : float or None
        The Weibull shape ρ.
    low, high : float or None
        Its confidence interval.
    short : bool
        Say ``"decreasing hazard"`` / ``"constant hazard"`` / ``"increasing hazard"`` instead of
        naming the failure mode (infant mortality / random / wear-out).

    Returns
    -------
    str
        The verdict; ``"not estimable"`` when any input is None.
    """
    if shape is None or low is None or high is None:
        return "not estimable"
    if high < 1.0:
        return "decreasing hazard" if short else "infant mortality (decreasing hazard)"
    if low > 1.0:
        return "increasing hazard" if short else "wear-out (increasing hazard)"
    return "constant hazard" if short else "random (constant hazard: shape consistent with 1)"


def _check_positive_finite(name: str, x: np.ndarray, *, allow_zero: bool = False) -> None:
    bad = ~np.isfinite(x) | ((x < 0) if allow_zero else (x <= 0))
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        need = "non-negative" if allow_zero else "positive"
        raise ValueError(
            f"{name} must be {need} and finite: {int(bad.sum()):,} rows are not (first: row {first}, "
            f"value {x[first]!r})"
        )


def _delta_log_ci(
    g: Callable[[np.ndarray], float], theta: np.ndarray, cov: np.ndarray, z: float
) -> tuple[float | None, float | None]:
    """Delta-method interval of ``g(θ) > 0`` on the log scale."""
    v = g(theta)
    if not (v > 0 and math.isfinite(v)):
        return None, None
    grad = np.zeros_like(theta)
    for i in range(theta.size):
        h = 1e-6 * max(abs(theta[i]), 1e-3)
        up, dn = theta.copy(), theta.copy()
        up[i] += h
        dn[i] -= h
        grad[i] = (math.log(g(up)) - math.log(g(dn))) / (2 * h)
    var = float(grad @ cov @ grad)
    if not (var >= 0 and math.isfinite(var)):
        return None, None
    se = math.sqrt(var)
    return v * math.exp(-z * se), v * math.exp(z * se)


def weibull_mle(
    durations: np.ndarray, events: np.ndarray, entry: np.ndarray | None = None
) -> tuple[float, float, np.ndarray]:
    """Weibull maximum likelihood with right censoring and left truncation, in numpy.

    The likelihood is lifelines' (``S(t) = exp(−(t/λ)^ρ)``): for a fixed shape ``ρ`` the scale
    has the closed form ``λ^ρ = Σ(t^ρ − a^ρ) / d`` (``d`` failures, ``a`` entry ages), so the
    MLE is a one-dimensional root of the profile score; the covariance is the inverse of the
    analytic observed information. Fast at millions of rows (lifelines' optimiser is not):
    :func:`reliability.models.failures.fit_mttf` uses it directly, :func:`fit_weibull` as lifelines'
    starting point; the tests check it against lifelines.

    Parameters
    ----------
    durations : numpy.ndarray
        Time to failure or censoring, positive.
    events : numpy.ndarray
        True where failed.
    entry : numpy.ndarray or None
        Entry age (left truncation) or None.

    Returns
    -------
    (float, float, numpy.ndarray)
        The scale λ [the durations' unit], the shape ρ, and the 2×2 covariance matrix of
        (λ, ρ).
    """
    from scipy import optimize

    t = np.asarray(durations, float)
    e = np.asarray(events, bool)
    d = float(e.sum())
    if d < 1:
        raise ValueError("the Weibull fit needs at least one failure")
    c = float(np.exp(np.mean(np.log(t))))  # rescale for numerical range; λ scales back
    lt = np.log(t / c)
    a = None if entry is None else np.asarray(entry, float) / c
    la = None if a is None else np.log(np.where(a > 0, a, 1.0))
    s_lt = float(lt[e].sum())

    def sums(r: float) -> tuple[float, float, float]:
        m = float(lt.max() * r)  # factor out the largest power against overflow
        u = np.exp(r * lt - m)
        s0, s1, s2 = u.sum(), (u * lt).sum(), (u * lt * lt).sum()
        if a is not None:
            v = np.where(a > 0, np.exp(r * la - m), 0.0)
            s0, s1, s2 = s0 - v.sum(), s1 - (v * la).sum(), s2 - (v * la * la).sum()
        return s0, s1, s2

    def score(lr: float) -> float:
        r = math.exp(lr)
        s0, s1, _ = sums(r)
        return d / r + s_lt - d * s1 / s0

    lo, hi = math.log(0.01), math.log(100.0)
    if score(lo) * score(hi) > 0:
        raise ValueError("Weibull shape outside [0.01, 100]: the data do not fit a Weibull")
    rho = math.exp(optimize.brentq(score, lo, hi, xtol=1e-12))
    s0, s1, s2 = sums(rho)
    m = float(lt.max() * rho)
    # λ^ρ = Σ(u − v)/d with u = (t/c)^ρ: log λ = (log(s0) + m − log d)/ρ (+ log c)
    log_lam = (math.log(s0) + m - math.log(d)) / rho
    lam = math.exp(log_lam)
    # observed information in (λ, ρ) on the rescaled time axis, from
    # ℓ = d ln ρ − dρ ln λ + (ρ−1) Σ_e ln t − Σ (t/λ)^ρ − (a/λ)^ρ
    w = math.exp(m - rho * log_lam)  # turns the scaled sums into sums of (t/λ)^ρ
    S0 = s0 * w  # Σ (u − v)
    S1 = (s1 - s0 * log_lam) * w  # Σ (u ln(t/λ) − v ln(a/λ))
    S2 = (s2 - 2 * s1 * log_lam + s0 * log_lam**2) * w
    h_ll = d * rho / lam**2 - rho * (1 + rho) / lam**2 * S0
    h_lr = -d / lam + S0 / lam + rho / lam * S1
    h_rr = -d / rho**2 - S2
    info = -np.array([[h_ll, h_lr], [h_lr, h_rr]])
    cov = np.linalg.inv(info)
    # back to the original time axis: λ_orig = c λ
    scale = np.array([c, 1.0])
    return c * lam, rho, cov * np.outer(scale, scale)


def fit_weibull(
    durations: np.ndarray,
    events: np.ndarray,
    entry: np.ndarray | None = None,
    *,
    alpha: float = 0.05,
    engine: str = "lifelines",
) -> dict[str, Any]:
    """Weibull fit with the shape's interval and verdict.

    Parameters
    ----------
    durations : numpy.ndarray
        Time to failure or censoring [any unit], positive.
    events : numpy.ndarray
        True where the component failed (False: censored).
    entry : numpy.ndarray or None
        Age when observation began (left truncation), or None.
    alpha : float
        1 − confidence level.
    engine : str
        ``"lifelines"`` (``WeibullFitter``, started at the numpy MLE) or ``"numpy"``
        (:func:`weibull_mle` only: the same estimate, for millions of rows).

    Returns
    -------
    dict of str to object
        Dict: ``shape``, ``shape_low``, ``shape_high`` (Wald interval on log ρ), ``scale`` [unit of
        ``durations``], ``verdict``, ``loglik`` (lifelines only), ``fitter`` (the lifelines
        ``WeibullFitter``, or None), ``cov`` (covariance of (scale, shape)).
    """
    z = float(stats.norm.ppf(1 - alpha / 2))
    t = np.asarray(durations, float)
    ev = np.asarray(events, bool)
    en = None if entry is None else np.asarray(entry, float)
    lam, rho, cov = weibull_mle(t, ev, en)
    fitter, loglik = None, None
    if engine == "lifelines":
        from lifelines import WeibullFitter

        fitter = WeibullFitter(alpha=alpha).fit(t, ev, entry=en, initial_point=np.array([lam, rho]))
        lam, rho = float(fitter.lambda_), float(fitter.rho_)
        cov = fitter.variance_matrix_.loc[["lambda_", "rho_"], ["lambda_", "rho_"]].to_numpy()
        loglik = float(fitter.log_likelihood_)
    elif engine != "numpy":
        raise ValueError(f"engine must be 'lifelines' or 'numpy', got {engine!r}")
    se = math.sqrt(max(float(cov[1, 1]), 0.0))
    lo, hi = rho * math.exp(-z * se / rho), rho * math.exp(z * se / rho)
    return {
        "shape": rho,
        "shape_low": lo,
        "shape_high": hi,
        "scale": lam,
        "verdict": hazard_verdict(rho, lo, hi),
        "loglik": loglik,
        "fitter": fitter,
        "cov": cov,
    }


@dataclass
class LifetimeFit:
    """The fits of one group.

    Attributes
    ----------
    group : str
        The group's key (``"all"`` without ``by``).
    n, failures : int
        Components and failures [count].
    total_time : float
        Sum of durations [time unit].
    entry_truncated : int
        Components with entry age > 0.
    models : dict of str to dict of str to object
        Per model ``{"loglik", "aic", "params", "mttf", "mttf_low", "mttf_high", "b10", "b10_low",
        "b10_high"}`` (empty below :data:`MIN_FAILURES_FOR_FIT` failures).
    shape, shape_low, shape_high : float or None
        Weibull shape and interval (None when not estimable).
    lr_stat, lr_p : float or None
        Likelihood-ratio test of the exponential against the Weibull.
    best : str or None
        Model with the lowest AIC (None when none was fitted).
    verdict : str
        Hazard-shape verdict.
    km : polars.DataFrame
        Kaplan-Meier curve: ``time``, ``survival``, ``ci_low``, ``ci_high``, ``at_risk``.
    """

    group: str
    n: int
    failures: int
    total_time: float
    entry_truncated: int
    models: dict[str, dict[str, Any]]
    shape: float | None
    shape_low: float | None
    shape_high: float | None
    lr_stat: float | None
    lr_p: float | None
    best: str | None
    verdict: str
    km: pl.DataFrame
    km_median: float | None = None
    km_note: str | None = None


def _km_numpy(
    t: np.ndarray, e: np.ndarray, entry: np.ndarray | None, z: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Compute the product-limit estimate with left truncation and the exponential-Greenwood band.

    At risk at τ: entry < τ ≤ t; evaluated at every distinct failure time (plus 0).
    """
    a = np.zeros_like(t) if entry is None else entry
    times = np.unique(t[e])
    ts, as_ = np.sort(t), np.sort(a)
    n = np.searchsorted(as_, times, side="left") - np.searchsorted(ts, times, side="left")
    d = np.searchsorted(np.sort(t[e]), times, side="right") - np.searchsorted(
        np.sort(t[e]), times, side="left"
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        surv = np.cumprod(np.where(n > 0, 1.0 - d / n, 1.0))
        gw = np.cumsum(np.where(n > d, d / (n * (n - d)), 0.0))
        log_s = np.log(surv)
        v = np.sqrt(gw) / np.abs(log_s)
        lo = np.where(surv > 0, surv ** np.exp(-z * v), 0.0)
        hi = np.where(surv > 0, surv ** np.exp(z * v), 0.0)
    lo, hi = np.nan_to_num(lo, nan=1.0), np.nan_to_num(hi, nan=1.0)
    return (
        np.concatenate([[0.0], times]),
        np.concatenate([[1.0], surv]),
        np.concatenate([[1.0], np.minimum(lo, hi)]),
        np.concatenate([[1.0], np.maximum(lo, hi)]),
        np.concatenate([[int((a <= 0).sum())], n]),
    )


def _fit_group(
    group: str, t: np.ndarray, e: np.ndarray, entry: np.ndarray | None, alpha: float
) -> LifetimeFit:
    from lifelines import ExponentialFitter, KaplanMeierFitter, LogNormalFitter
    from lifelines.exceptions import ConvergenceError, StatError

    z = float(stats.norm.ppf(1 - alpha / 2))
    km_note = None
    try:
        km = KaplanMeierFitter(alpha=alpha).fit(t, e, entry=entry)
        sf = km.survival_function_.iloc[:, 0].to_numpy()
        ci = km.confidence_interval_.to_numpy()
        times = km.survival_function_.index.to_numpy(dtype=float)
        at_risk = km.event_table["at_risk"].to_numpy()
        lo_band, hi_band = ci[:, 0], ci[:, 1]
    except StatError:
        # lifelines refuses when the product-limit estimate reaches 0 among the first few
        # components at risk (few entered early); the same estimate, computed here, says so
        times, sf, lo_band, hi_band, at_risk = _km_numpy(t, e, entry, z)
        km_note = (
            f"{group}: Kaplan-Meier falls to 0 early (few components at risk at the youngest ages, "
            "left truncation): the curve is unreliable at early ages"
        )
    km_frame = pl.DataFrame(
        {
            "group": group,
            "time": times,
            "survival": sf,
            "ci_low": lo_band,
            "ci_high": hi_band,
            "at_risk": np.asarray(at_risk).astype(np.int64),
        }
    )
    below = np.flatnonzero(sf <= 0.5)
    med = float(times[below[0]]) if below.size else math.inf
    failures = int(e.sum())
    base = dict(
        group=group,
        n=int(t.size),
        failures=failures,
        total_time=float(t.sum()),
        entry_truncated=int((entry > 0).sum()) if entry is not None else 0,
        km=km_frame,
        km_median=med if math.isfinite(med) else None,
        km_note=km_note,
    )
    if failures < MIN_FAILURES_FOR_FIT:
        return LifetimeFit(
            **base,
            models={},
            shape=None,
            shape_low=None,
            shape_high=None,
            lr_stat=None,
            lr_p=None,
            best=None,
            verdict="not estimable",
        )
    models: dict[str, dict[str, Any]] = {}
    ef = ExponentialFitter(alpha=alpha).fit(t, e, entry=entry)
    lam = float(ef.lambda_)
    se_lam = math.sqrt(max(float(ef.variance_matrix_.iloc[0, 0]), 0.0))
    f = math.exp(z * se_lam / lam)
    models["exponential"] = {
        "loglik": float(ef.log_likelihood_),
        "aic": float(ef.AIC_),
        "params": {"lambda_": lam},
        "mttf": lam,
        "mttf_low": lam / f,
        "mttf_high": lam * f,
        "b10": lam * _B10,
        "b10_low": lam * _B10 / f,
        "b10_high": lam * _B10 * f,
    }
    try:
        w = fit_weibull(t, e, entry, alpha=alpha)
    except (ValueError, np.linalg.LinAlgError, ConvergenceError):
        # e.g. every failure at the same age: no finite Weibull shape; the exponential stands
        return LifetimeFit(
            **base,
            models=models,
            shape=None,
            shape_low=None,
            shape_high=None,
            lr_stat=None,
            lr_p=None,
            best=None,
            verdict="Weibull not estimable (no finite shape fits these ages)",
        )
    wf = w["fitter"]
    theta = np.array([float(wf.lambda_), float(wf.rho_)])
    cov = wf.variance_matrix_.loc[["lambda_", "rho_"], ["lambda_", "rho_"]].to_numpy()

    def w_mttf(p: np.ndarray) -> float:
        return float(p[0] * special.gamma(1.0 + 1.0 / p[1]))

    def w_b10(p: np.ndarray) -> float:
        return float(p[0] * _B10 ** (1.0 / p[1]))

    ml, mh = _delta_log_ci(w_mttf, theta, cov, z)
    bl, bh = _delta_log_ci(w_b10, theta, cov, z)
    models["weibull"] = {
        "loglik": w["loglik"],
        "aic": float(wf.AIC_),
        "params": {"lambda_": theta[0], "rho_": theta[1]},
        "mttf": w_mttf(theta),
        "mttf_low": ml,
        "mttf_high": mh,
        "b10": w_b10(theta),
        "b10_low": bl,
        "b10_high": bh,
    }
    try:
        lf = LogNormalFitter(alpha=alpha).fit(t, e, entry=entry)
        th = np.array([float(lf.mu_), float(lf.sigma_)])
        cv = lf.variance_matrix_.loc[["mu_", "sigma_"], ["mu_", "sigma_"]].to_numpy()

        def l_mttf(p: np.ndarray) -> float:
            return float(math.exp(p[0] + p[1] ** 2 / 2))

        def l_b10(p: np.ndarray) -> float:
            return float(math.exp(p[0] + p[1] * stats.norm.ppf(0.1)))

        ml, mh = _delta_log_ci(l_mttf, th, cv, z)
        bl, bh = _delta_log_ci(l_b10, th, cv, z)
        models["lognormal"] = {
            "loglik": float(lf.log_likelihood_),
            "aic": float(lf.AIC_),
            "params": {"mu_": th[0], "sigma_": th[1]},
            "mttf": l_mttf(th),
            "mttf_low": ml,
            "mttf_high": mh,
            "b10": l_b10(th),
            "b10_low": bl,
            "b10_high": bh,
        }
    except Exception:
        pass
    lr = max(2.0 * (models["weibull"]["loglik"] - models["exponential"]["loglik"]), 0.0)
    best = min(models, key=lambda m: models[m]["aic"])
    return LifetimeFit(
        **base,
        models=models,
        shape=w["shape"],
        shape_low=w["shape_low"],
        shape_high=w["shape_high"],
        lr_stat=lr,
        lr_p=float(stats.chi2.sf(lr, 1)),
        best=best,
        verdict=w["verdict"],
    )


@dataclass
class LifetimeResult(Result):
    """Answer of :func:`fit_lifetimes`.

    Attributes
    ----------
    fits : list of LifetimeFit
        One :class:`LifetimeFit` per group.
    weibull_shape_ : float, dict of str to float, or None
        The Weibull shape (a float without ``by``; a dict by group with ``by``; None / missing where
        not estimable).
    weibull_shape_ci_ : tuple, dict of str to tuple, or None
        Its interval (same layout).
    time_unit : str
        Unit of the durations (``"h"``).
    alpha : float
        1 − confidence level.
    """

    title = "Component lifetimes"
    fits: list[LifetimeFit]
    by: str | None
    time_unit: str = "h"
    alpha: float = 0.05
    notes: list[str] = field(default_factory=list)

    @property
    def weibull_shape_(self) -> float | dict[str, float | None] | None:
        """Fitted Weibull shape ρ (a dict by group when grouped; None when not estimable)."""
        if self.by is None:
            return self.fits[0].shape
        return {f.group: f.shape for f in self.fits}

    @property
    def weibull_shape_ci_(self) -> tuple | dict[str, tuple | None] | None:
        """Confidence interval (low, high) of the Weibull shape (a dict by group when grouped)."""

        def ci(f: LifetimeFit) -> tuple | None:
            return None if f.shape is None else (f.shape_low, f.shape_high)

        if self.by is None:
            return ci(self.fits[0])
        return {f.group: ci(f) for f in self.fits}

    def fit_of(self, group: str = "all") -> LifetimeFit:
        """Return the :class:`LifetimeFit` of one group.

        Parameters
        ----------
        group : str
            The group (``"all"`` when ungrouped).

        Returns
        -------
        LifetimeFit
            Its fits, sizes and verdict.

        Raises
        ------
        KeyError
            For an unknown group (the message lists the groups).
        """
        for f in self.fits:
            if f.group == group:
                return f
        raise KeyError(f"no group {group!r}; groups: {[f.group for f in self.fits]}")

    @property
    def km(self) -> pl.DataFrame:
        """Kaplan-Meier curves of every group.

        Columns ``group``, ``time``, ``survival``, ``ci_low``, ``ci_high``, ``at_risk``.
        """
        return pl.concat([f.km for f in self.fits])

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the result: components, failures, groups."""
        return {
            "components": sum(f.n for f in self.fits),
            "failures": sum(f.failures for f in self.fits),
            "groups": len(self.fits),
        }

    @property
    def summary(self) -> pl.DataFrame:
        """One row per group and model: sizes, AIC, LR test, shape, MTTF and B10 with intervals.

        Times are in the table's unit; best model and verdict; null where not estimable.
        """
        rows = []
        for f in self.fits:
            for m in _MODELS if f.models else (None,):
                d = f.models.get(m, {}) if m else {}
                if m and not d:
                    continue
                rows.append(
                    {
                        "group": f.group,
                        "model": m,
                        "components": f.n,
                        "failures": f.failures,
                        "censored": f.n - f.failures,
                        "entry_truncated": f.entry_truncated,
                        "aic": d.get("aic"),
                        "best_by_aic": None if m is None else m == f.best,
                        "lr_vs_exponential_p": f.lr_p if m == "weibull" else None,
                        "weibull_shape": f.shape if m == "weibull" else None,
                        "shape_low": f.shape_low if m == "weibull" else None,
                        "shape_high": f.shape_high if m == "weibull" else None,
                        "mttf": d.get("mttf"),
                        "mttf_low": d.get("mttf_low"),
                        "mttf_high": d.get("mttf_high"),
                        "b10": d.get("b10"),
                        "b10_low": d.get("b10_low"),
                        "b10_high": d.get("b10_high"),
                        "km_median": f.km_median,
                        "verdict": f.verdict,
                    }
                )
        schema = {
            "group": pl.String,
            "model": pl.String,
            "components": pl.Int64,
            "failures": pl.Int64,
            "censored": pl.Int64,
            "entry_truncated": pl.Int64,
            "aic": pl.Float64,
            "best_by_aic": pl.Boolean,
            "lr_vs_exponential_p": pl.Float64,
            "weibull_shape": pl.Float64,
            "shape_low": pl.Float64,
            "shape_high": pl.Float64,
            "mttf": pl.Float64,
            "mttf_low": pl.Float64,
            "mttf_high": pl.Float64,
            "b10": pl.Float64,
            "b10_low": pl.Float64,
            "b10_high": pl.Float64,
            "km_median": pl.Float64,
            "verdict": pl.String,
        }
        out = pl.DataFrame(rows, schema=schema)
        return out.with_columns(pl.when(pl.col(pl.Float64).is_finite()).then(pl.col(pl.Float64)))

    def tables(self) -> dict[str, pl.DataFrame]:
        """Return the result's tables by name.

        Returns
        -------
        dict of str to polars.DataFrame
            ``"summary"``.
        """
        return {"summary": self.summary}

    def _lines(self) -> list[str]:
        u = self.time_unit
        pct = f"{100 * (1 - self.alpha):.0f}%"
        lines = []
        for f in self.fits:
            head = (
                f"{f.group}: {f.n:,} components, {f.failures:,} failures, {f.n - f.failures:,} censored"
                + (
                    f", {f.entry_truncated:,} entered the data already in service (left-truncated)"
                    if f.entry_truncated
                    else ""
                )
            )
            lines.append(head)
            if not f.models:
                lines.append(
                    f"  parametric fits not estimable: {f.failures} failures (needs {MIN_FAILURES_FOR_FIT}); "
                    + (
                        f"Kaplan-Meier median {fmt_num(f.km_median)} {u}"
                        if f.km_median
                        else "Kaplan-Meier median not reached"
                    )
                )
                continue
            if f.shape is None:
                lines.append(f"  {f.verdict}")
            else:
                lines.append(
                    f"  Weibull shape {f.shape:.3f} ({pct} CI {f.shape_low:.3f}-{f.shape_high:.3f}): {f.verdict}; "
                    f"LR test against the exponential p = {f.lr_p:.3g}"
                )
            for m in _MODELS:
                d = f.models.get(m)
                if not d:
                    continue
                mark = " (best by AIC)" if m == f.best else ""
                lines.append(
                    f"  {m:<11} AIC {d['aic']:,.1f}  MTTF {fmt_num(d['mttf'])} {u} ({fmt_num(d['mttf_low'])}-"
                    f"{fmt_num(d['mttf_high'])})  B10 {fmt_num(d['b10'])} {u} ({fmt_num(d['b10_low'])}-"
                    f"{fmt_num(d['b10_high'])}){mark}"
                )
        return lines

    @classmethod
    def _example(cls, kind: str = "normal") -> LifetimeResult:
        """Build a tiny instance: eight lifetimes [h], three censored (for contract tests).

        ``kind="no failures"``: the same without hardware failures.
        """
        from reliability.models._examples import check_kind

        check_kind(kind)
        life = pl.DataFrame(
            {
                "t": [120.0, 340.0, 90.0, 800.0, 410.0, 60.0, 1000.0, 230.0],
                "e": [True, True, False, True, True, False, False, True]
                if kind == "normal"
                else [False] * 8,
            }
        )
        return fit_lifetimes(life, "t", "e")


def _as_numpy(frame: pl.DataFrame, col: str, dtype: Any) -> np.ndarray:
    if col not in frame.columns:
        raise ValueError(f"column {col!r} not in the table (columns: {frame.columns})")
    s = frame.get_column(col)
    if s.null_count():
        raise ValueError(f"column {col!r} has {s.null_count():,} null values")
    return s.cast(dtype).to_numpy()


def fit_lifetimes(
    frame: Any,
    duration: str | None = None,
    event: str | None = None,
    entry: str | None = None,
    by: str | None = None,
    *,
    alpha: float = 0.05,
    time_unit: str = "h",
    observation_end: datetime | None = None,
) -> LifetimeResult:
    """Fit lifetimes of a table (one row per component) or of a Dataset's inventory.

    Parameters
    ----------
    frame : object
        A polars frame, or a Dataset (its ``inventory`` and ``component_failures`` through
        :func:`lifetime_table`; then ``duration``, ``event``, ``entry`` and ``by`` default to
        ``duration_h``, ``failed``, ``entry_h`` and ``component_type``).
    duration : str or None
        Column of time in service until failure or censoring [``time_unit``], > 0.
    event : str or None
        Boolean (or 0/1) column, true where the component failed.
    entry : str or None
        Column of the age at which observation began (left truncation), ≥ 0 and below the duration;
        None = every component observed from age 0.
    by : str or None
        Column to fit separately by (e.g. component type, vendor).
    alpha : float
        1 − confidence level of every interval.
    time_unit : str
        Unit of ``duration`` and ``entry``, for the text.
    observation_end : datetime or None
        Dataset only: censor at this time [UTC] (default: the Dataset's end).

    Returns
    -------
    LifetimeResult
        One :class:`LifetimeFit` per group (Kaplan-Meier, the parametric fits, the LR test,
        MTTF and B10 with intervals, the hazard verdict) and the summary.
    """
    notes: list[str] = []
    if not isinstance(frame, pl.DataFrame):
        ds = frame
        table, tnotes = lifetime_table(
            ds.inventory,
            ds.component_failures,
            observation_start=ds.observation_window()[0],
            observation_end=observation_end or ds.observation_end,
        )
        notes += tnotes
        frame = table
        duration, event = duration or "duration_h", event or "failed"
        entry = entry or "entry_h"
        by = by or "component_type"
    if duration is None or event is None:
        raise ValueError(
            Hinted(
                "give ",
                Hint("duration", action=False),
                " and ",
                Hint("event", action=False),
                " (column names)",
            )
        )
    if frame.height == 0:
        raise ValueError("the lifetime table is empty")
    t_all = _as_numpy(frame, duration, pl.Float64)
    _check_positive_finite(f"duration column {duration!r}", t_all)
    e_all = _as_numpy(frame, event, pl.Boolean)
    en_all = None
    if entry is not None:
        en_all = _as_numpy(frame, entry, pl.Float64)
        _check_positive_finite(f"entry column {entry!r}", en_all, allow_zero=True)
        late = en_all >= t_all
        if late.any():
            raise ValueError(
                f"entry column {entry!r} must be below the duration: {int(late.sum()):,} rows are not "
                f"(first: row {int(np.flatnonzero(late)[0])})"
            )
        if not (en_all > 0).any():
            en_all = None
    groups = (
        ["all"]
        if by is None
        else sorted(str(g) for g in frame.get_column(by).cast(pl.String).unique().drop_nulls())
    )
    keys = None if by is None else frame.get_column(by).cast(pl.String).to_numpy()
    fits = []
    for g in groups:
        m = np.ones(t_all.size, bool) if keys is None else keys == g
        fit = _fit_group(g, t_all[m], e_all[m], None if en_all is None else en_all[m], alpha)
        if fit.km_note:
            notes.append(fit.km_note)
        if fit.failures < MIN_FAILURES_FOR_FIT:
            notes.append(
                f"{g}: {fit.failures} failures among {fit.n:,} components: parametric fits, shape, MTTF and B10 "
                f"not estimable (need {MIN_FAILURES_FOR_FIT} failures); Kaplan-Meier only"
            )
        fits.append(fit)
    return LifetimeResult(fits=fits, by=by, time_unit=time_unit, alpha=alpha, notes=notes)


def lifetime_table(
    inventory: pl.DataFrame,
    component_failures: pl.DataFrame,
    *,
    observation_start: datetime | None = None,
    observation_end: datetime | None = None,
) -> tuple[pl.DataFrame, list[str]]:
    """Build the lifetime table: per inventory component, the time to its first failure.

    Time from entering service to the first failure, censored at leaving service or at the
    observation end.

    Parameters
    ----------
    inventory : polars.DataFrame
        ``cluster``, ``component_type``, ``component_id``, ``in_service``, ``out_of_service`` (null
        while in service).
    component_failures : polars.DataFrame
        ``cluster``, ``component_type``, ``component_id``, ``failed_at``.
    observation_start : datetime or None
        When records began [UTC]; a component in service before it enters the data at age
        ``observation_start − in_service`` (left truncation). Default: no truncation.
    observation_end : datetime or None
        Censoring time [UTC] for components still in service (default: the latest failure or
        leaving-service time).

    Returns
    -------
    (polars.DataFrame, list of str)
        (table, notes): ``cluster``, ``component_type``, ``component_id``, ``duration_h``,
        ``failed``, ``entry_h``; notes on rows left out and why.
    """
    key = ["cluster", "component_type", "component_id"]
    notes: list[str] = []
    from reliability.models.failures.counts import as_utc

    end = None if observation_end is None else as_utc(observation_end, "observation_end")
    if observation_start is not None:
        observation_start = as_utc(observation_start, "observation_start")
    if end is None:
        cands = [
            component_failures.get_column("failed_at").max(),
            inventory.get_column("out_of_service").max(),
        ]
        end = max((c for c in cands if c is not None), default=None)
    if end is None:
        raise ValueError(
            Hinted(
                "no observation end: give ",
                Hint("observation_end", action=False),
                " (nothing failed or left service)",
            )
        )
    first = (
        component_failures.filter(pl.col("failed_at") <= end)
        .group_by(key)
        .agg(first_failure=pl.col("failed_at").min())
    )
    orphans = first.join(inventory.select(key), on=key, how="anti").height
    if orphans:
        notes.append(f"{orphans:,} failed components are not in the inventory and are left out")
    endl = pl.lit(end).cast(pl.Datetime("us", "UTC"))
    t = inventory.join(first, on=key, how="left").with_columns(
        stop=pl.min_horizontal(pl.col("out_of_service").fill_null(endl), endl)
    )
    t = t.with_columns(
        failed=pl.col("first_failure").is_not_null()
        & (pl.col("first_failure") >= pl.col("in_service"))
        & (pl.col("first_failure") <= pl.col("stop")),
    ).with_columns(
        duration_h=(
            pl.when(pl.col("failed")).then(pl.col("first_failure")).otherwise(pl.col("stop"))
            - pl.col("in_service")
        ).dt.total_microseconds()
        / 1e6
        / 3600.0,
        entry_h=(
            (
                (
                    pl.lit(observation_start).cast(pl.Datetime("us", "UTC")) - pl.col("in_service")
                ).dt.total_microseconds()
                / 1e6
                / 3600.0
            ).clip(0.0)
            if observation_start is not None
            else pl.lit(0.0)
        ),
    )
    before = t.filter(pl.col("first_failure") < pl.col("in_service")).height
    if before:
        notes.append(
            f"{before:,} components failed before their in-service time: their first failure is ignored"
        )
    instant = t.filter(pl.col("failed") & (pl.col("duration_h") <= 0)).height
    if instant:
        notes.append(
            f"{instant:,} components fail the moment they enter service (e.g. in service before the records "
            "began, age unknown) and are left out"
        )
    bad = t.filter(~(pl.col("failed") & (pl.col("duration_h") <= 0)))
    bad = bad.filter((pl.col("duration_h") <= 0) | (pl.col("entry_h") >= pl.col("duration_h")))
    if bad.height:
        notes.append(
            f"{bad.height:,} components with no time in service inside the observation window are left out"
        )
    out = t.filter((pl.col("duration_h") > 0) & (pl.col("entry_h") < pl.col("duration_h")))
    return out.select(*key, "duration_h", "failed", "entry_h").sort(key), notes
