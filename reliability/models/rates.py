"""Failure rates over time (Kokolis et al. HPCA'25 Fig. 5; Zu et al. NSDI'24 Fig. 12).

``failure_rate_series``: hardware interruptions per 1000 node-days of large jobs, per week,
with exact Poisson intervals and a trend test (Poisson GLM of failures on week index with a
log-exposure offset). Exposure of an attempt is split over the weeks it spans.

``component_failure_rates``: daily-average failure rate per component type (machines, ICI
links, OCS...) from ``component_failures`` over the component-days in service from
``inventory``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import numpy as np
import polars as pl

from reliability.models.mttf import HARDWARE, poisson_ci

__all__ = ["RateSeries", "component_failure_rates", "failure_rate_series", "node_mttf"]


@dataclass
class RateSeries:
    """Weekly failure rate and its trend.

    Attributes
    ----------
    series : ``week`` (UTC start), ``failures``, ``node_days``, ``rate_per_1000_node_days``,
        ``ci_low``, ``ci_high``
    trend_per_week_ : multiplicative change of the rate per week (GLM, exp(slope))
    trend_p_ : p-value of "no trend"
    """

    series: pl.DataFrame
    trend_per_week_: float
    trend_p_: float

    @property
    def summary(self) -> pl.DataFrame:
        return self.series

    def __str__(self) -> str:
        return (f"{self.series.height} weeks; rate changes x{self.trend_per_week_:.3f} per week "
                f"(p = {self.trend_p_:.3g})")  # fmt: skip

    def _repr_html_(self) -> str:
        return f"<p>{self}</p>" + self.series._repr_html_()


def failure_rate_series(
    attributed: pl.DataFrame, *, min_gpus: int = 129, every: str = "1w", alpha: float = 0.05
) -> RateSeries:
    """Weekly hardware-interruption rate of jobs with at least ``min_gpus`` GPUs.

    ``attributed`` is the output of :func:`reliability.attribute_failures`.
    """
    a = attributed.filter(
        (pl.col("n_accelerators") >= min_gpus)
        & pl.col("start_time").is_not_null()
        & pl.col("end_time").is_not_null()
    ).select("start_time", "end_time", "n_nodes", failed=pl.col("failure_domain").is_in(HARDWARE))
    pieces = []
    # split each attempt's exposure over the periods it spans (until none is left)
    cur = a.with_columns(w=pl.col("start_time").dt.truncate(every))
    while cur.height:
        w_end = pl.col("w").dt.offset_by(every)
        pieces.append(cur.select(
            week="w",
            node_days=(pl.min_horizontal("end_time", w_end) - pl.max_horizontal("start_time", "w")).dt.total_seconds()
            / 86400.0 * pl.col("n_nodes").cast(pl.Float64),
            failures=(pl.col("failed") & (pl.col("end_time") <= w_end)).cast(pl.Int64),
        ))  # fmt: skip
        cur = cur.filter(pl.col("end_time") > w_end).with_columns(w=w_end)
    if not pieces:
        empty = pl.DataFrame(
            schema={"week": pl.Datetime("us", "UTC"), "failures": pl.Int64, "node_days": pl.Float64}
        )
        return RateSeries(empty, float("nan"), float("nan"))
    s = (
        pl.concat(pieces)
        .group_by("week")
        .agg(pl.col("failures").sum(), pl.col("node_days").sum())
        .filter(pl.col("node_days") > 0)
        .sort("week")
    )
    k = s.get_column("failures").to_numpy()
    nd = s.get_column("node_days").to_numpy()
    lo, hi = poisson_ci(k, alpha)
    s = s.with_columns(
        rate_per_1000_node_days=pl.Series(1000 * k / nd),
        ci_low=pl.Series(1000 * lo / nd),
        ci_high=pl.Series(1000 * hi / nd),
    )
    trend, p = _trend(k, nd)
    return RateSeries(s, trend, p)


def _trend(k: np.ndarray, exposure: np.ndarray) -> tuple[float, float]:
    import statsmodels.api as sm

    if len(k) < 3 or k.sum() == 0:
        return float("nan"), float("nan")
    X = sm.add_constant(np.arange(len(k), dtype=float))
    fit = sm.GLM(k, X, family=sm.families.Poisson(), offset=np.log(exposure)).fit()
    return float(np.exp(fit.params[1])), float(fit.pvalues[1])


def component_failure_rates(
    component_failures: pl.DataFrame,
    inventory: pl.DataFrame,
    *,
    every: str = "1d",
    alpha: float = 0.05,
) -> pl.DataFrame:
    """Failures per component-day per component type and period (NSDI'24 Fig. 12).

    Returns ``component_type``, ``period``, ``failures``, ``component_days``,
    ``rate_per_day`` (daily-average failure rate, e.g. 0.0008 for machines), ``ci_low``,
    ``ci_high``. Components count as in service from ``in_service`` to ``out_of_service``.
    """
    if inventory.height == 0:
        raise ValueError("component rates need an inventory (the denominator)")
    # the period grid is aligned with ``dt.truncate`` (weeks start on Monday), like the failures
    start = inventory.select(pl.col("in_service").min().dt.truncate(every)).item()
    end = pl.concat([inventory.get_column("out_of_service").drop_nulls(),
                     component_failures.get_column("failed_at")]).max()  # fmt: skip
    periods = pl.datetime_range(start, end, every, eager=True, time_zone="UTC").alias("period")  # type: ignore[arg-type]
    step = periods[1] - periods[0] if len(periods) > 1 else timedelta(days=1)
    grid = pl.DataFrame({"period": periods})
    inv = inventory.with_columns(out=pl.col("out_of_service").fill_null(end + step))
    days = (
        inv.join(grid, how="cross")
        .with_columns(
            overlap=(pl.min_horizontal("out", pl.col("period") + step) - pl.max_horizontal("in_service", "period"))
            .dt.total_seconds().clip(lower_bound=0) / 86400.0
        )
        .group_by("component_type", "period")
        .agg(component_days=pl.col("overlap").sum())
    )  # fmt: skip
    fails = (
        component_failures.with_columns(period=pl.col("failed_at").dt.truncate(every))
        .group_by("component_type", "period")
        .agg(failures=pl.len().cast(pl.Int64))
    )
    out = (
        days.join(fails, on=["component_type", "period"], how="left")
        .with_columns(pl.col("failures").fill_null(0))
        .filter(pl.col("component_days") > 0)
        .sort("component_type", "period")
    )
    k = out.get_column("failures").to_numpy()
    cd = out.get_column("component_days").to_numpy()
    lo, hi = poisson_ci(k, alpha)
    return out.with_columns(
        rate_per_day=pl.Series(k / cd), ci_low=pl.Series(lo / cd), ci_high=pl.Series(hi / cd)
    )


def node_mttf(
    component_failures: pl.DataFrame,
    inventory: pl.DataFrame,
    *,
    end: object = None,
    alpha: float = 0.05,
) -> pl.DataFrame:
    """Per cluster: failures, component-days in service (censored at ``end``, default the last
    failure), and the mean time to failure of one component [days] with an exact interval."""
    stop = end if end is not None else component_failures.get_column("failed_at").max()
    days = inventory.with_columns(
        d=(pl.min_horizontal(pl.col("out_of_service").fill_null(stop), pl.lit(stop)) - pl.col("in_service"))
        .dt.total_seconds().clip(lower_bound=0) / 86400.0
    ).group_by("cluster").agg(component_days=pl.col("d").sum(), components=pl.len())  # fmt: skip
    k = component_failures.group_by("cluster").agg(failures=pl.len().cast(pl.Int64))
    out = (
        days.join(k, on="cluster", how="left")
        .with_columns(pl.col("failures").fill_null(0))
        .sort("cluster")
    )
    f = out.get_column("failures").to_numpy()
    cd = out.get_column("component_days").to_numpy()
    lo, hi = poisson_ci(f, alpha)
    with np.errstate(divide="ignore"):
        return out.with_columns(
            mttf_days=pl.Series(np.where(f > 0, cd / np.maximum(f, 1), np.inf)),
            mttf_days_low=pl.Series(cd / hi),
            mttf_days_high=pl.Series(np.where(lo > 0, cd / np.where(lo > 0, lo, 1), np.inf)),
        )
