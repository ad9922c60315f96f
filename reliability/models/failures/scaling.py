"""Does MTTF ∝ 1/N hold on this cluster? The 1/N model put to the test, and projected with it.

Kokolis et al. HPCA'25 §IV project the MTTF of a job on N nodes as ``1/(N r_f)``: every node
fails independently at the same rate, whatever the size of the job it serves. Large jobs can
break this (more switches and links per job, collective timeouts that turn one slow node into an
interruption); Meta's 2026 fault-tolerant HSDP study measured an MTBF at 100K GPUs well below
what 1/N from its 32K-GPU rate predicts. Three checks on the measured size buckets:

- **Goodness of fit** of the 1/N model (one free rate, ``μ_b = r · node_hours_b``): Pearson
  ``X² = Σ (k_b − μ_b)² / μ_b`` on ``n − 1`` degrees of freedom. Failures are overdispersed
  (week-to-week swings, one crash failing every job of a node): when r_f's weekly dispersion
  φ > 1 is measured over W weeks, the statistic is scaled by it and referred to
  ``F(n − 1, W − 1)`` (quasi-Poisson, McCullagh & Nelder 1989 §4.5); otherwise ``χ²(n − 1)``,
  said in the notes.
- **The largest size against the rest**: the rate per node-hour of the largest bucket divided
  by that of every smaller one. Given the total failures ``n``, the largest bucket's count is
  binomial with ``p0 = E_L / (E_L + E_R)`` under 1/N (equal rates per node); the exact
  (Clopper-Pearson) interval of ``p`` gives the rate ratio ``p/(1 − p) · E_R/E_L`` and its
  interval; with φ > 1 the counts are divided by φ first (the quasi-likelihood scaling). A
  ratio whose interval lies above 1 says the largest jobs fail faster than 1/N predicts.
- **Projection** to the largest size in the data and to the next scale (twice it), two ways:
  1/N with r_f's interval (:meth:`MTTFResult.mttf_at`), and the fitted power law
  ``rate_per_job_h = exp(b0 + b1 (log N − x̄))`` of the GLM (:func:`~reliability.models.failures.mttf.
  glm_slope`) with the interval from the robust covariance of ``(b0, b1)`` (delta method on the
  log scale, Student-t on ``n − 2`` degrees of freedom), which carries the slope's uncertainty.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
from scipy import special, stats

from reliability._result import Result, fmt_count, fmt_duration_h, fmt_num, fmt_p

__all__ = ["MIN_FAILURES_FOR_SCALING", "ScalingCheck", "check_scaling"]

#: the checks need this many failures over at least two size buckets
MIN_FAILURES_FOR_SCALING = 5

_POINT_SCHEMA = {
    "bucket": pl.String, "nodes": pl.Float64, "node_hours": pl.Float64, "failures": pl.Int64,
    "expected_failures": pl.Float64, "rate_ratio": pl.Float64,
}  # fmt: skip
_PROJ_SCHEMA = {
    "n_gpus": pl.Int64, "scale": pl.String, "model_mttf_h": pl.Float64,
    "model_mttf_h_low": pl.Float64, "model_mttf_h_high": pl.Float64, "fitted_mttf_h": pl.Float64,
    "fitted_mttf_h_low": pl.Float64, "fitted_mttf_h_high": pl.Float64,
}  # fmt: skip


@dataclass
class ScalingCheck(Result):
    """The 1/N model tested against the measured size buckets, and projected.

    Attributes
    ----------
    points : polars.DataFrame
        Per size bucket: ``bucket`` [GPUs], ``nodes`` (exposure-weighted mean), ``node_hours``,
        ``failures``, ``expected_failures`` under 1/N with the pooled rate, ``rate_ratio``
        (observed / expected; null with no expected failure).
    gof_statistic_ : float or None
        Pearson X² of the 1/N model (scaled by φ when φ > 1); None when not testable.
    gof_df_ : int
        Its degrees of freedom (buckets − 1).
    gof_p_ : float or None
        p-value of "1/N fits the points".
    dispersion_ : float
        φ used (1.0: Poisson).
    largest_bucket_ : str or None
        The largest size bucket with exposure [GPUs].
    largest_ratio_ : float or None
        Its rate per node-hour divided by the smaller buckets' (1 under 1/N).
    largest_ci_ : (float or None, float or None)
        Interval of that ratio (None: unbounded above / no lower bound above 0).
    largest_p_faster_ : float or None
        One-sided p-value of "the largest jobs fail faster per node than the rest".
    slope_, slope_ci_ : float or None, (float or None, float or None)
        The GLM slope of failures on log(nodes) and its interval (1 = 1/N).
    projection : polars.DataFrame
        Per projected size: ``n_gpus``, ``scale`` (``"largest in data"``, ``"next scale (2x)"``),
        the 1/N MTTF [h] with r_f's interval, the fitted-slope MTTF [h] with its interval (null
        where not estimable or unbounded).
    verdict : str
        One sentence for people.
    """

    title = "Does MTTF ∝ 1/N hold? (Kokolis et al. HPCA'25 §IV)"
    points: pl.DataFrame
    gof_statistic_: float | None
    gof_df_: int
    gof_p_: float | None
    dispersion_: float
    largest_bucket_: str | None
    largest_ratio_: float | None
    largest_ci_: tuple[float | None, float | None]
    largest_p_faster_: float | None
    slope_: float | None
    slope_ci_: tuple[float | None, float | None]
    projection: pl.DataFrame
    verdict: str
    alpha: float = 0.05
    notes: list[str] = field(default_factory=list)

    @property
    def summary(self) -> pl.DataFrame:
        """One row: goodness of fit, the largest bucket's rate ratio, the slope, the verdict."""
        lo, hi = self.largest_ci_
        return self._mapping_frame(
            {
                "gof_statistic": self.gof_statistic_,
                "gof_df": self.gof_df_,
                "gof_p": self.gof_p_,
                "dispersion": self.dispersion_,
                "largest_bucket": self.largest_bucket_,
                "largest_rate_ratio": self.largest_ratio_,
                "largest_ci_low": lo,
                "largest_ci_high": hi,
                "largest_p_faster": self.largest_p_faster_,
                "slope": self.slope_,
                "slope_ci_low": self.slope_ci_[0],
                "slope_ci_high": self.slope_ci_[1],
                "verdict": self.verdict,
            }
        )

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Failures and node-hours over the buckets tested, and the number of buckets."""
        p = self.points
        return {
            "failures": int(p.get_column("failures").sum()) if p.height else 0,
            "node-hours": float(p.get_column("node_hours").sum()) if p.height else 0.0,
            "size buckets": p.height,
        }

    def tables(self) -> dict[str, pl.DataFrame]:
        """Return ``"summary"``, ``"by size"`` and ``"projection"``.

        Returns
        -------
        dict of str to polars.DataFrame
            The result's tables by name.
        """
        return {"summary": self.summary, "by size": self.points, "projection": self.projection}

    def _lines(self) -> list[str]:
        lines = [self.verdict, *self.test_lines()]
        for row in self.projection.iter_rows(named=True):
            lines.append(f"{row['n_gpus']:,} GPUs ({row['scale']}): {_proj_text(row)}")
        return lines

    def test_lines(self) -> list[str]:
        """Say the goodness of fit and the largest size's rate ratio, one line each (none untested).

        Returns
        -------
        list of str
            Lines without a final full stop.
        """
        conf = f"{100 * (1 - self.alpha):.0f}%"
        lines = []
        if self.gof_p_ is not None:
            basis = f"scaled by φ = {self.dispersion_:.2f}" if self.dispersion_ > 1 else "Poisson"
            lines.append(
                f"goodness of fit of 1/N: X² = {self.gof_statistic_:.2f} on {self.gof_df_} df ({basis}), "
                f"p = {fmt_p(self.gof_p_)}"
            )
        if self.largest_ratio_ is not None:
            lo, hi = self.largest_ci_
            rng = (
                f"{fmt_num(lo or 0.0, 3)}-{fmt_num(hi, 3) if hi is not None else 'no upper bound'}"
            )
            lines.append(
                f"largest jobs ({self.largest_bucket_}) vs smaller: rate per node x{fmt_num(self.largest_ratio_, 3)} "
                f"({conf} CI {rng}; p(faster) = {fmt_p(self.largest_p_faster_)})"
            )
        return lines

    @classmethod
    def _example(cls, kind: str = "normal") -> ScalingCheck:
        """Build a tiny instance: failures and job hours of four job sizes (for contract tests).

        ``kind="no failures"``: the same without hardware failures.
        """
        from reliability.models._examples import check_kind

        check_kind(kind)
        return check_scaling(
            np.array([1, 2, 3, 5] if kind == "normal" else [0, 0, 0, 0]),
            np.array([2000.0, 1500.0, 1200.0, 900.0]),
            np.array([1, 2, 4, 8]),
            ["8", "16", "32", "64"],
            None,
        )


def _failures(total: float, kind: str = "") -> str:
    """``"1 failure"``, ``"3 hardware failures"`` (a count that may be weighted: shown rounded)."""
    return f"{fmt_num(total, 0)} {kind}failure{'' if round(total) == 1 else 's'}"


def _rng(point: float | None, low: float | None, high: float | None) -> str:
    if point is None:
        return "not estimable"
    if high is None:
        return (
            f"{fmt_duration_h(point)} (at least {fmt_duration_h(low)})"
            if low
            else fmt_duration_h(point)
        )
    return f"{fmt_duration_h(point)} ({fmt_duration_h(low)}-{fmt_duration_h(high)})"


def _proj_text(row: dict[str, Any]) -> str:
    model = _rng(row["model_mttf_h"], row["model_mttf_h_low"], row["model_mttf_h_high"])
    fitted = _rng(row["fitted_mttf_h"], row["fitted_mttf_h_low"], row["fitted_mttf_h_high"])
    return f"1/N {model}; fitted slope {fitted}"


def _rate_ratio_ci(
    k_large: int, n: int, e_large: float, e_rest: float, phi: float, alpha: float
) -> tuple[float, float | None, float | None, float]:
    """Rate ratio (largest / rest) with its exact conditional interval and one-sided p (faster)."""
    k, m = k_large / phi, n / phi  # quasi-likelihood: effective counts
    p0 = e_large / (e_large + e_rest)
    odds = e_rest / e_large
    lo_p = stats.beta.ppf(alpha / 2, k, m - k + 1) if k > 0 else 0.0
    hi_p = stats.beta.ppf(1 - alpha / 2, k + 1, m - k) if k < m else 1.0
    ratio = (k_large / e_large) / ((n - k_large) / e_rest) if n > k_large else math.inf
    low = lo_p / (1 - lo_p) * odds
    high = hi_p / (1 - hi_p) * odds if hi_p < 1 else None
    # P(X >= k | m, p0) = I_{p0}(k, m - k + 1) (regularised incomplete beta)
    p_faster = float(special.betainc(k, m - k + 1, p0)) if k > 0 else 1.0
    return ratio, low, high, p_faster


def check_scaling(
    failures: np.ndarray,
    job_hours: np.ndarray,
    nodes: np.ndarray,
    buckets: list[str],
    glm: dict[str, Any] | None,
    *,
    model_mttf: Any = None,
    largest_gpus: int = 0,
    gpus_per_node: int = 8,
    dispersion: float | None = None,
    dispersion_periods: int = 0,
    alpha: float = 0.05,
) -> ScalingCheck:
    """Test MTTF ∝ 1/N on size buckets and project it (Kokolis et al. HPCA'25 §IV, Eq. 1).

    The module docstring gives the three checks and their formulas.

    Parameters
    ----------
    failures : numpy.ndarray
        Hardware failures per size bucket [count].
    job_hours : numpy.ndarray
        Exposure per bucket [job-hours].
    nodes : numpy.ndarray
        Exposure-weighted mean nodes per bucket (at least 1).
    buckets : list of str
        Bucket names [GPUs], in increasing size.
    glm : dict or None
        :func:`~reliability.models.failures.mttf.glm_slope`'s output on the same points (None: not fitted).
    model_mttf : callable or None
        ``n_gpus -> dict`` with ``mttf_h``, ``low_h``, ``high_h`` [h]: the 1/N projection with r_f's
        interval (:meth:`~reliability.models.failures.MTTFResult.mttf_at`).
    largest_gpus : int
        The largest job in the data [GPUs]; the projection is at it and at twice it.
    gpus_per_node : int
        GPUs per node (to turn a projected size into nodes).
    dispersion : float or None
        φ of r_f's weekly counts (None: not measured).
    dispersion_periods : int
        Weeks behind φ.
    alpha : float
        1 − confidence level.

    Returns
    -------
    ScalingCheck
        The checks, the projection and a verdict (saying why a check cannot be made).
    """
    k = np.asarray(failures, float)
    h = np.asarray(job_hours, float)
    nd = np.maximum(np.asarray(nodes, float), 1.0)
    keep = h > 0
    k, h, nd = k[keep], h[keep], nd[keep]
    names = [b for b, ok in zip(buckets, keep, strict=True) if ok]
    e = h * nd  # node-hours
    notes: list[str] = []
    total = float(k.sum())
    phi = 1.0
    if (
        dispersion is not None
        and math.isfinite(dispersion)
        and dispersion > 1
        and dispersion_periods >= 2
    ):
        phi = float(dispersion)
    testable = total >= MIN_FAILURES_FOR_SCALING and len(k) >= 2
    with np.errstate(divide="ignore", invalid="ignore"):
        r = total / e.sum() if e.sum() > 0 else 0.0
        mu = r * e
        ratio = np.where(mu > 0, k / np.where(mu > 0, mu, 1.0), np.nan)
    points = pl.DataFrame(
        {
            "bucket": names,
            "nodes": nd,
            "node_hours": e,
            "failures": k.astype(np.int64),
            "expected_failures": mu if testable else np.full(len(k), np.nan),
            "rate_ratio": ratio if testable else np.full(len(k), np.nan),
        },
        schema=_POINT_SCHEMA,
    ).fill_nan(None)
    gof = gof_p = None
    big = big_ratio = big_p = None
    big_ci: tuple[float | None, float | None] = (None, None)
    if testable:
        x2 = float(((k - mu) ** 2 / mu).sum())
        df = len(k) - 1
        if phi > 1:
            gof = x2 / phi
            gof_p = float(stats.f.sf(gof / df, df, dispersion_periods - 1))
            notes.append(
                f"counts vary more than Poisson (weekly dispersion φ = {phi:.2f} over {dispersion_periods} weeks): "
                "the fit and the rate-ratio interval are scaled by it"
            )
        else:
            gof, gof_p = x2, float(stats.chi2.sf(x2, df))
            if dispersion is None or dispersion_periods < 2:
                notes.append(
                    "week-to-week variation not assessable: the tests assume Poisson counts"
                )
        big = names[-1]
        e_rest = float(e[:-1].sum())
        big_ratio, lo, hi, big_p = _rate_ratio_ci(
            int(k[-1]), int(total), float(e[-1]), e_rest, phi, alpha
        )
        if int(total) == int(k[-1]):
            notes.append(
                f"every failure fell in the largest bucket ({big}): its rate ratio has no upper bound"
            )
            big_ratio = None
        big_ci = (lo, hi)
    else:
        notes.append(
            f"1/N not testable: {_failures(total)} over {fmt_count(len(k), 'size bucket')} with exposure "
            f"(the goodness of fit needs {MIN_FAILURES_FOR_SCALING} over 2 buckets)"
        )
    slope = slope_ci = None
    valid = glm is not None and bool(glm.get("valid", False))
    if valid:
        slope = float(glm["slope"])
        slope_ci = (float(glm["low"]), float(glm["high"]))
    projection = _projection(glm if valid else None, model_mttf, largest_gpus, gpus_per_node, alpha)
    verdict = _verdict(
        testable, gof_p, big, big_ratio, big_ci, slope, slope_ci, alpha, total, len(k)
    )
    return ScalingCheck(
        points=points,
        gof_statistic_=gof,
        gof_df_=max(len(k) - 1, 0),
        gof_p_=gof_p,
        dispersion_=phi,
        largest_bucket_=big,
        largest_ratio_=big_ratio,
        largest_ci_=big_ci,
        largest_p_faster_=big_p,
        slope_=slope,
        slope_ci_=slope_ci or (None, None),
        projection=projection,
        verdict=verdict,
        alpha=alpha,
        notes=notes,
    )


def _projection(
    glm: dict[str, Any] | None, model_mttf: Any, largest_gpus: int, gpus_per_node: int, alpha: float
) -> pl.DataFrame:
    rows = []
    if largest_gpus >= 1:
        for n_gpus, scale in (
            (largest_gpus, "largest in data"),
            (2 * largest_gpus, "next scale (2x)"),
        ):
            m = (
                model_mttf(n_gpus)
                if model_mttf is not None
                else {"mttf_h": None, "low_h": None, "high_h": None}
            )
            f = _fitted(glm, n_gpus, gpus_per_node, alpha)
            rows.append(
                {
                    "n_gpus": n_gpus,
                    "scale": scale,
                    "model_mttf_h": m["mttf_h"],
                    "model_mttf_h_low": m["low_h"],
                    "model_mttf_h_high": m["high_h"],
                    **f,
                }
            )
    return pl.DataFrame(rows, schema=_PROJ_SCHEMA)


def _fitted(
    glm: dict[str, Any] | None, n_gpus: int, gpus_per_node: int, alpha: float
) -> dict[str, Any]:
    """MTTF [h] of the fitted power law at ``n_gpus`` with its delta-method interval."""
    none = {"fitted_mttf_h": None, "fitted_mttf_h_low": None, "fitted_mttf_h_high": None}
    if glm is None:
        return none
    d = math.log(max(n_gpus / gpus_per_node, 1.0)) - float(glm["x_mean"])
    eta = float(glm["intercept"]) + float(glm["slope"]) * d  # log failures per job-hour
    cov = np.asarray(glm["cov"], float)
    var = cov[0, 0] + 2 * d * cov[0, 1] + d * d * cov[1, 1]
    if not (math.isfinite(eta) and math.isfinite(var)) or var < 0:
        return none
    dof = max(round(glm.get("df", 0) or 0), 1)
    q = float(stats.t.ppf(1 - alpha / 2, dof))
    se = math.sqrt(var)
    out = [math.exp(-eta), math.exp(-(eta + q * se)), math.exp(-(eta - q * se))]
    if not all(math.isfinite(v) and v > 0 for v in out):
        return none
    return dict(zip(none, out, strict=True))


def _verdict(
    testable: bool,
    gof_p: float | None,
    big: str | None,
    ratio: float | None,
    ci: tuple[float | None, float | None],
    slope: float | None,
    slope_ci: tuple[float, float] | None,
    alpha: float,
    total: float,
    n_points: int,
) -> str:
    if not testable:
        return (
            f"Whether MTTF ∝ 1/N holds cannot be tested here: {_failures(total, 'hardware ')} over "
            f"{fmt_count(n_points, 'size bucket')} (the goodness of fit needs {MIN_FAILURES_FOR_SCALING} over 2 buckets; "
            "the GLM slope, 3)."
        )
    lo, hi = ci
    slope_txt = ""
    if slope is not None and slope_ci is not None:
        slope_txt = f"; GLM slope {slope:.2f} ({slope_ci[0]:.2f}-{slope_ci[1]:.2f}, 1 = 1/N)"
    if lo is not None and lo > 1:
        r = f"x{fmt_num(ratio, 3)}" if ratio is not None else "faster"
        return (
            f"The largest jobs ({big}) fail faster per node than smaller ones ({r}, interval "
            f"{fmt_num(lo, 3)}-{fmt_num(hi, 3) if hi is not None else 'no upper bound'}): 1/N from the cluster's rate "
            f"overstates their MTTF; plan them with their measured MTTF or the fitted slope{slope_txt}."
        )
    if hi is not None and hi < 1:
        return (
            f"The largest jobs ({big}) fail more slowly per node than smaller ones (x{fmt_num(ratio, 3)}, "
            f"interval {fmt_num(lo, 3)}-{fmt_num(hi, 3)}): 1/N is pessimistic for them{slope_txt}."
        )
    if gof_p is not None and gof_p < alpha:
        return (
            f"The measured sizes depart from 1/N (goodness of fit p = {fmt_p(gof_p)}), though the largest jobs "
            f"are not measurably faster to fail: compare the rate ratios by size{slope_txt}."
        )
    return f"MTTF ∝ 1/N is consistent with the measured sizes (goodness of fit p = {fmt_p(gof_p)}){slope_txt}."
