"""MTTF of a job as a function of its size, and the per-node failure rate r_f.

Kokolis et al. HPCA'25 §IV: a job on N nodes is interrupted by hardware at rate N·r_f, so
``MTTF = 1 / (N · r_f)``; r_f [failures per node-day] is estimated from hardware-attributed
interruptions over the node-days of exposure of large jobs (paper: > 128 GPUs). An attempt
that ends without a hardware failure is right-censored, not a failure.

Confidence intervals on counts are exact (Garwood) Poisson intervals. A Poisson GLM of
failures on log(nodes) with a log-exposure offset tests whether failures are proportional to
the number of nodes (slope 1). Survival of attempts (time to hardware interruption) is fitted
with lifelines (Kaplan-Meier, exponential, Weibull) per size class.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
from scipy import stats

from reliability.attribution import attribute_failures

if TYPE_CHECKING:
    from reliability.store import Dataset

__all__ = ["SIZE_BUCKETS", "MTTFResult", "fit_mttf", "mttf_h", "poisson_ci"]

#: Job-size buckets [GPUs]: lower edges (1, 8, 16, ..., 4096+)
SIZE_BUCKETS = (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
HARDWARE = ("hardware", "infrastructure")


def poisson_ci(k: int | np.ndarray, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Exact (Garwood) two-sided interval for a Poisson mean given ``k`` events:
    ``[chi2(alpha/2, 2k)/2, chi2(1-alpha/2, 2k+2)/2]`` (lower bound 0 when k = 0)."""
    k = np.asarray(k, dtype=float)
    lo = np.where(k > 0, stats.chi2.ppf(alpha / 2, 2 * k) / 2, 0.0)
    hi = stats.chi2.ppf(1 - alpha / 2, 2 * k + 2) / 2
    return lo, hi


def mttf_h(
    n_gpus: float | np.ndarray, rate_per_node_day: float, gpus_per_node: int = 8
) -> np.ndarray:
    """Model MTTF [h] of a job on ``n_gpus`` GPUs: ``24 / (N_nodes · r_f)`` (HPCA'25 Eq. 1).

    A job smaller than a node is counted as one node.
    """
    nodes = np.maximum(np.asarray(n_gpus, dtype=float) / gpus_per_node, 1.0)
    with np.errstate(divide="ignore"):  # r_f = 0 (no failures seen): MTTF is unbounded
        return 24.0 / (nodes * rate_per_node_day)


@dataclass
class MTTFResult:
    """Fitted failure rate and MTTF by job size.

    Attributes
    ----------
    rate_per_node_day_ : r_f, hardware interruptions per node-day (jobs >= ``min_gpus``)
    ci_ : (low, high) exact Poisson interval of r_f at ``1 - alpha``
    failures_ : hardware-attributed interruptions counted
    node_days_ : exposure [node-days]
    by_size : per size bucket: attempts, failures, job-hours, measured MTTF [h] with interval,
        model MTTF ``1/(N r_f)`` [h]
    glm_slope_ : slope of log(failure rate per job-hour) on log(nodes) (1 = proportional)
    glm_slope_ci_ : its 95% interval; ``glm_p_slope_is_1_`` the Wald test p-value of slope = 1
    survival : per size class: Weibull shape and scale, exponential rate, KM median [h]
    """

    rate_per_node_day_: float
    ci_: tuple[float, float]
    failures_: int
    node_days_: float
    by_size: pl.DataFrame
    glm_slope_: float
    glm_slope_ci_: tuple[float, float]
    glm_p_slope_is_1_: float
    survival: pl.DataFrame
    min_gpus: int = 129
    gpus_per_node: int = 8
    alpha: float = 0.05
    notes: list[str] = field(default_factory=list)

    def mttf_h(self, n_gpus: float | np.ndarray) -> np.ndarray:
        """Model MTTF [h] at ``n_gpus`` from the fitted r_f."""
        return mttf_h(n_gpus, self.rate_per_node_day_, self.gpus_per_node)

    def projection(self, n_gpus: list[int] | None = None) -> pl.DataFrame:
        """MTTF [h] with the interval implied by r_f's interval at sizes beyond the data."""
        sizes = n_gpus or [1024, 4096, 16384, 131072]
        lo, hi = self.ci_
        return pl.DataFrame({
            "n_gpus": sizes,
            "mttf_h": self.mttf_h(np.array(sizes)),
            "mttf_h_low": mttf_h(np.array(sizes), hi, self.gpus_per_node) if hi > 0 else np.inf,
            "mttf_h_high": mttf_h(np.array(sizes), lo, self.gpus_per_node) if lo > 0 else np.inf,
        })  # fmt: skip

    @property
    def summary(self) -> pl.DataFrame:
        """One-row table of the headline numbers."""
        return pl.DataFrame({
            "rate_per_1000_node_days": [1000 * self.rate_per_node_day_],
            "ci_low": [1000 * self.ci_[0]], "ci_high": [1000 * self.ci_[1]],
            "failures": [self.failures_], "node_days": [self.node_days_],
            "glm_slope": [self.glm_slope_], "glm_p_slope_is_1": [self.glm_p_slope_is_1_],
        })  # fmt: skip

    def __str__(self) -> str:
        lo, hi = self.ci_
        lines = [
            f"r_f = {1000 * self.rate_per_node_day_:.2f} per 1000 node-days "
            f"({100 * (1 - self.alpha):.0f}% CI {1000 * lo:.2f}-{1000 * hi:.2f}; {self.failures_} failures "
            f"over {self.node_days_:,.0f} node-days of jobs >= {self.min_gpus} GPUs)",
            f"GLM slope of failures on log(nodes): {self.glm_slope_:.2f} "
            f"(95% CI {self.glm_slope_ci_[0]:.2f}-{self.glm_slope_ci_[1]:.2f}; p(slope=1) = {self.glm_p_slope_is_1_:.2f})",
            "MTTF by job size [h]: measured (CI) vs model 1/(N r_f)",
        ]
        for row in self.by_size.iter_rows(named=True):
            lines.append(
                f"  {row['bucket']:>6} GPUs  {row['mttf_h']:>10.1f} ({row['mttf_h_low']:.1f}-{row['mttf_h_high']:.1f})"
                f"  model {row['model_mttf_h']:>10.1f}   [{row['failures']} failures, {row['job_hours']:,.0f} job-h]"
            )
        lines.append("projections: " + ", ".join(
            f"{n:,} GPUs {m:.2f} h" for n, m in self.projection().select("n_gpus", "mttf_h").iter_rows()))  # fmt: skip
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return "<pre>" + str(self).replace("&", "&amp;").replace("<", "&lt;") + "</pre>"


def size_bucket(gpus: pl.Expr) -> pl.Expr:
    """Lower edge of the :data:`SIZE_BUCKETS` bucket holding ``gpus`` (at least 1)."""
    edges = np.array(SIZE_BUCKETS)
    return gpus.map_batches(
        lambda s: pl.Series(
            edges[np.searchsorted(edges, np.maximum(s.to_numpy(), 1), side="right") - 1]
        ),
        return_dtype=pl.Int64,
    )


def _exposure(jobs: pl.DataFrame) -> pl.DataFrame:
    """Started-and-ended attempts with duration [h], nodes, hardware flag and size bucket."""
    return (
        jobs.filter(pl.col("start_time").is_not_null() & pl.col("end_time").is_not_null())
        .with_columns(
            hours=(pl.col("end_time") - pl.col("start_time")).dt.total_seconds() / 3600.0,
            failed=pl.col("failure_domain").is_in(HARDWARE),
        )
        .filter(pl.col("hours") >= 0)
        .with_columns(bucket=size_bucket(pl.col("n_accelerators")))
    )


def fit_mttf(
    source: Dataset | pl.DataFrame,
    *,
    min_gpus: int = 129,
    gpus_per_node: int = 8,
    alpha: float = 0.05,
    cluster: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> MTTFResult:
    """Fit r_f and MTTF by size from a Dataset (attributed here) or an attributed jobs frame.

    Parameters
    ----------
    min_gpus : only attempts of jobs with at least this many GPUs enter r_f (paper: > 128)
    gpus_per_node : to turn GPUs into nodes for the model
    alpha : 1 - confidence level
    cluster : restrict to one cluster
    start, end : restrict to attempts that ended in [start, end) (UTC-aware)
    """
    jobs = source if isinstance(source, pl.DataFrame) else attribute_failures(source)
    if "failure_domain" not in jobs.columns:
        jobs = attribute_failures(jobs, health_events=None, node_states=None)
    if cluster is not None:
        jobs = jobs.filter(pl.col("cluster") == cluster)
    if start is not None:
        jobs = jobs.filter(pl.col("end_time") >= start)
    if end is not None:
        jobs = jobs.filter(pl.col("end_time") < end)
    exp = _exposure(jobs)
    big = exp.filter(pl.col("n_accelerators") >= min_gpus)
    node_days = float(
        (big.get_column("n_nodes").cast(pl.Float64) * big.get_column("hours")).sum() / 24.0
    )
    k = int(big.get_column("failed").sum())
    notes = []
    if node_days <= 0:
        raise ValueError(f"no exposure from jobs of >= {min_gpus} GPUs to estimate r_f from")
    rate = k / node_days
    lo, hi = poisson_ci(k, alpha)
    by = (
        exp.group_by("bucket")
        .agg(
            attempts=pl.len(),
            failures=pl.col("failed").sum().cast(pl.Int64),
            job_hours=pl.col("hours").sum(),
            node_hours=(pl.col("n_nodes").cast(pl.Float64) * pl.col("hours")).sum(),
        )
        .sort("bucket")
    )
    f = by.get_column("failures").to_numpy()
    h = by.get_column("job_hours").to_numpy()
    flo, fhi = poisson_ci(f, alpha)
    with np.errstate(divide="ignore"):
        by = by.with_columns(
            mttf_h=pl.Series(np.where(f > 0, h / np.maximum(f, 1), np.inf)),
            mttf_h_low=pl.Series(h / fhi),
            mttf_h_high=pl.Series(np.where(flo > 0, h / np.where(flo > 0, flo, 1), np.inf)),
            model_mttf_h=pl.Series(mttf_h(by.get_column("bucket").to_numpy(), rate, gpus_per_node) if rate > 0 else np.full(len(f), np.inf)),
        )  # fmt: skip
    slope, slope_ci, p1 = _glm_slope(by, gpus_per_node, notes)
    return MTTFResult(
        rate_per_node_day_=rate, ci_=(float(lo) / node_days, float(hi) / node_days), failures_=k,
        node_days_=node_days, by_size=by.with_columns(pl.col("bucket").cast(pl.String)),
        glm_slope_=slope, glm_slope_ci_=slope_ci, glm_p_slope_is_1_=p1,
        survival=_survival(exp), min_gpus=min_gpus, gpus_per_node=gpus_per_node, alpha=alpha, notes=notes,
    )  # fmt: skip


def _glm_slope(
    by: pl.DataFrame, gpus_per_node: int, notes: list[str]
) -> tuple[float, tuple[float, float], float]:
    """Poisson GLM: failures ~ log(nodes), offset log(job-hours); slope and test of slope = 1.

    ``nodes`` is each bucket's exposure-weighted mean node count (node-hours / job-hours), not
    its lower edge. Failures are overdispersed (one crash fails every job sharing the node),
    so the standard errors are scaled by the Pearson dispersion when it exceeds 1
    (quasi-Poisson)."""
    import statsmodels.api as sm

    d = by.filter(pl.col("job_hours") > 0)
    if d.height < 2 or d.get_column("failures").sum() == 0:
        notes.append("too few size buckets with exposure for the GLM")
        return math.nan, (math.nan, math.nan), math.nan
    nodes = np.maximum((d.get_column("node_hours") / d.get_column("job_hours")).to_numpy(), 1.0)
    X = sm.add_constant(np.log(nodes))
    model = sm.GLM(d.get_column("failures").to_numpy(), X, family=sm.families.Poisson(),
                   offset=np.log(d.get_column("job_hours").to_numpy()))  # fmt: skip
    fit = model.fit()
    slope = float(fit.params[1])
    dispersion = float(fit.pearson_chi2 / fit.df_resid) if fit.df_resid > 0 else 1.0
    se = float(fit.bse[1]) * math.sqrt(max(dispersion, 1.0))
    z = (slope - 1.0) / se if se > 0 else math.inf
    p = float(2 * stats.norm.sf(abs(z)))
    return slope, (slope - 1.96 * se, slope + 1.96 * se), p


def _survival(exp: pl.DataFrame) -> pl.DataFrame:
    """Per size class: lifelines Weibull (shape rho, scale lambda [h]), exponential rate, KM median."""
    from lifelines import ExponentialFitter, KaplanMeierFitter, WeibullFitter

    rows = []
    classes = [("1-7", 1, 8), ("8-127", 8, 128), ("128-1023", 128, 1024), ("1024+", 1024, 10**9)]
    for name, lo, hi in classes:
        part = exp.filter(
            (pl.col("n_accelerators") >= lo)
            & (pl.col("n_accelerators") < hi)
            & (pl.col("hours") > 0)
        )
        events = int(part.get_column("failed").sum()) if part.height else 0
        if part.height < 10 or events < 3:
            continue
        # lifelines' edge: numpy arrays (polars' to_pandas would need pyarrow)
        hours = part.get_column("hours").to_numpy()
        failed = part.get_column("failed").cast(pl.Int8).to_numpy()
        wf = WeibullFitter().fit(hours, failed)
        ef = ExponentialFitter().fit(hours, failed)
        km = KaplanMeierFitter().fit(hours, failed)
        rows.append({"size_class": name, "attempts": part.height, "failures": events,
                     "weibull_shape": float(wf.rho_), "weibull_scale_h": float(wf.lambda_),
                     "exp_rate_per_h": 1.0 / float(ef.lambda_), "km_median_h": float(km.median_survival_time_)})  # fmt: skip
    schema = {"size_class": pl.String, "attempts": pl.Int64, "failures": pl.Int64, "weibull_shape": pl.Float64,
              "weibull_scale_h": pl.Float64, "exp_rate_per_h": pl.Float64, "km_median_h": pl.Float64}  # fmt: skip
    return pl.DataFrame(rows, schema=schema)
