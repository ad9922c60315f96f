"""Failure rates over time (Kokolis et al. HPCA'25 Fig. 5; Zu et al. NSDI'24 Fig. 12).

``failure_rate_series``: hardware interruptions per 1000 node-days of large jobs, per week,
with exact Poisson intervals per week; the whole window's rate and the last
:data:`~reliability.models.failures.mttf.RECENT_WEEKS` weeks' with intervals that allow for
week-to-week variation; and a trend test that does too (Poisson GLM of failures on the week
index with a log-exposure offset and a robust slope variance: :mod:`reliability.models.failures.counts`). Exposure of an
attempt is split over the weeks it spans; attempts still running at the observation end
contribute exposure up to it and are censored there.

``component_failure_rates``: daily-average failure rate per component type (machines, ICI
links, OCS...) from ``component_failures`` over the component-days in service from
``inventory``. ``node_mttf``: per cluster, mean time to failure of one component.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from reliability._result import Result, fmt_count
from reliability.models.failures.counts import (
    RateEstimate,
    as_utc,
    estimate_rate,
    period_counts,
    poisson_ci,
    trend_of,
)
from reliability.models.failures.mttf import (
    EXPOSURE_COLUMNS,
    attributed_jobs,
    exposure_frame,
    recent_rate,
)

if TYPE_CHECKING:
    from reliability.models.failures.counts import TrendTest
    from reliability.store import Dataset

__all__ = ["RateSeries", "component_failure_rates", "failure_rate_series", "node_mttf"]


@dataclass
class RateSeries(Result):
    """Weekly failure rate, the window's and the recent rate, and the trend.

    Attributes
    ----------
    series : polars.DataFrame
        ``week`` (UTC start), ``failures``, ``node_days``, ``rate_per_1000_node_days``, ``ci_low``,
        ``ci_high`` (exact Poisson interval of that week's rate).
    rate_ : RateEstimate
        Rate over the whole window (:class:`~reliability.models.failures.counts.RateEstimate`).
    recent_rate_ : RateEstimate
        Rate over the last :data:`~reliability.models.failures.mttf.RECENT_WEEKS` weeks.
    trend_ : TrendTest
        :class:`~reliability.models.failures.counts.TrendTest` of the weekly counts.
    trend_per_week_ : float
        Multiplicative change of the rate per week (nan when not estimable).
    trend_p_ : float
        p-value of "no trend", allowing for week-to-week variation (nan when not estimable).
    """

    title = "Failure rate over time (Kokolis et al. HPCA'25 Fig. 5)"
    series: pl.DataFrame
    rate_: RateEstimate
    recent_rate_: RateEstimate
    trend_: TrendTest
    open_attempts_: int = 0
    min_gpus: int = 129
    observation_end: datetime | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def trend_per_week_(self) -> float:
        """Fitted change of the rate per week [failures per 1000 node-days per week]; nan when not estimable."""
        return math.nan if self.trend_.per_period is None else self.trend_.per_period

    @property
    def trend_p_(self) -> float:
        """p-value of the trend (null hypothesis: a constant rate); nan when not estimable."""
        return math.nan if self.trend_.p is None else self.trend_.p

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the result: weeks, hardware failures, node-days, open (censored) attempts."""
        return {
            "weeks": self.series.height,
            "hardware failures": self.rate_.failures,
            "node-days": self.rate_.exposure,
            "open attempts (censored)": self.open_attempts_,
        }

    @property
    def summary(self) -> pl.DataFrame:
        """The weekly series (see ``series``)."""
        return self.series

    def tables(self) -> dict[str, pl.DataFrame]:
        """Return the result's tables by name.

        Returns
        -------
        dict of str to polars.DataFrame
            ``"rates"`` (whole-window and recent r_f), ``"trend"`` and ``"weekly"`` (the series).
        """
        return {
            "rates": pl.concat(
                [self.rate_.summary, self.recent_rate_.summary], how="diagonal_relaxed"
            ),
            "trend": self.trend_.summary,
            "weekly": self.series,
        }

    def _lines(self) -> list[str]:
        return [
            f"{fmt_count(self.series.height, 'week')} of jobs >= {self.min_gpus} GPUs",
            f"r_f {self.rate_.describe()}",
            f"r_f {self.recent_rate_.describe()}",
            f"trend: {self.trend_.describe()}",
        ]

    @classmethod
    def _example(cls, kind: str = "normal") -> RateSeries:
        """Build a tiny instance: weekly rates of a 14-day, 16-node cluster (for contract tests).

        ``kind="no failures"``: the same without hardware failures.
        """
        from reliability.models._examples import tiny_jobs

        jobs, end = tiny_jobs(kind=kind)
        return failure_rate_series(jobs, min_gpus=1, observation_end=end)


def failure_rate_series(
    attributed: pl.DataFrame | pl.LazyFrame | Dataset,
    *,
    min_gpus: int = 129,
    every: str = "1w",
    alpha: float = 0.05,
    observation_end: datetime | None = None,
) -> RateSeries:
    """Weekly hardware-interruption rate of jobs with at least ``min_gpus`` GPUs.

    Parameters
    ----------
    attributed : polars.DataFrame, polars.LazyFrame or Dataset
        The output of :func:`reliability.attribute_failures`, or a Dataset; a LazyFrame of
        attributed attempts is read for the columns the rates need only.
    min_gpus : int
        Jobs smaller than this are left out (HPCA'25: > 128 GPUs); CPU-only jobs always are.
    every : str
        Period length (polars duration string; default one week).
    alpha : float
        1 − confidence level.
    observation_end : datetime or None
        When the data end [UTC]; attempts still running then are censored there. Default: the
        Dataset's observation end, else the latest timestamp (noted).

    Returns
    -------
    RateSeries
        The weekly series of r_f, the whole window's and the recent rate, and the trend test.
    """
    jobs, obs_end, notes = attributed_jobs(attributed, observation_end, EXPOSURE_COLUMNS)
    exp, n_open = exposure_frame(jobs, obs_end)
    del jobs  # (a fleet's 50M attempts are GiBs: only the large jobs' are kept)
    big = exp.filter(pl.col("n_accelerators") >= max(min_gpus, 1))  # GPU jobs: CPU-only apart
    del exp
    if n_open:
        notes.append(f"{n_open:,} attempts still running at the observation end are censored there")
    per = period_counts(big, every=every).rename({"period": "week", "exposure": "node_days"})
    k = per.get_column("failures").to_numpy()
    nd = per.get_column("node_days").to_numpy()
    lo, hi = poisson_ci(k, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        per = per.with_columns(
            rate_per_1000_node_days=pl.Series(1000 * k / nd, dtype=pl.Float64),
            ci_low=pl.Series(1000 * lo / nd, dtype=pl.Float64),
            ci_high=pl.Series(1000 * hi / nd, dtype=pl.Float64),
        )
    rate = estimate_rate(k, nd, alpha=alpha, label="whole window")
    recent = recent_rate(big, obs_end, alpha, every=every)
    trend = trend_of(k, nd, alpha=alpha, period="week" if every == "1w" else f"period ({every})")
    notes += rate.notes
    if big.height == 0:
        notes.append(f"no exposure from jobs of >= {min_gpus} GPUs: no rate to show")
    return RateSeries(
        series=per,
        rate_=rate,
        recent_rate_=recent,
        trend_=trend,
        open_attempts_=n_open,
        min_gpus=min_gpus,
        observation_end=obs_end,
        notes=notes,
    )


def component_failure_rates(
    component_failures: pl.DataFrame,
    inventory: pl.DataFrame,
    *,
    every: str = "1d",
    alpha: float = 0.05,
) -> pl.DataFrame:
    """Compute failures per component-day per component type and period.

    Zu et al., NSDI '24, Fig. 12. Components count as in service from ``in_service`` to
    ``out_of_service``.

    Parameters
    ----------
    component_failures : polars.DataFrame
        One row per failure: ``component_type``, ``failed_at``.
    inventory : polars.DataFrame
        One row per component, failed or not (the denominator): ``component_type``,
        ``in_service``, ``out_of_service``.
    every : str
        Period length as a polars duration (``"1d"``, ``"1w"``); periods are aligned like
        ``dt.truncate`` (weeks start on Monday).
    alpha : float
        1 − confidence level of the interval.

    Returns
    -------
    polars.DataFrame
        ``component_type``, ``period``, ``failures``, ``component_days``, ``rate_per_day``
        [failures per component-day, e.g. 0.0008 for machines], ``ci_low``, ``ci_high``.

    Raises
    ------
    ValueError
        For an empty inventory.
    """
    if inventory.height == 0:
        raise ValueError("component rates need an inventory (the denominator)")
    # the period grid is aligned with ``dt.truncate`` (weeks start on Monday), like the failures
    start = inventory.select(pl.col("in_service").min().dt.truncate(every)).item()
    end = pl.concat(
        [
            inventory.get_column("out_of_service").drop_nulls(),
            component_failures.get_column("failed_at"),
        ]
    ).max()
    periods = pl.datetime_range(start, end, every, eager=True, time_zone="UTC").alias("period")  # type: ignore[arg-type]
    step = periods[1] - periods[0] if len(periods) > 1 else timedelta(days=1)
    grid = pl.DataFrame({"period": periods})
    inv = inventory.with_columns(out=pl.col("out_of_service").fill_null(end + step))
    days = (
        inv.join(grid, how="cross")
        .with_columns(
            overlap=(
                pl.min_horizontal("out", pl.col("period") + step)
                - pl.max_horizontal("in_service", "period")
            )
            .dt.total_microseconds()
            .clip(lower_bound=0)
            / 86400e6
        )
        .group_by("component_type", "period")
        .agg(component_days=pl.col("overlap").sum())
    )
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
    end: datetime | None = None,
    alpha: float = 0.05,
) -> pl.DataFrame:
    """Compute per cluster the mean time to failure of one component, with an exact Poisson interval.

    Components, failures and component-days in service (censored at ``end``), and the MTTF of
    one component [days].

    Parameters
    ----------
    component_failures : polars.DataFrame
        ``cluster``, ``failed_at`` (one row per failure).
    inventory : polars.DataFrame
        ``cluster``, ``in_service``, ``out_of_service`` (one row per component, every component
        whether it failed or not: the denominator).
    end : datetime or None
        Observation end [UTC] (default: the latest failure, a lower bound of the true end).
    alpha : float
        1 − confidence level.

    Returns
    -------
    polars.DataFrame
        ``cluster``, ``components``, ``component_days``, ``failures``, ``mttf_days`` (null when no
        failure), ``mttf_days_low``, ``mttf_days_high`` (null when unbounded).
    """
    stop = (
        as_utc(end, "end") if end is not None else component_failures.get_column("failed_at").max()
    )
    days = (
        inventory.with_columns(
            d=(
                pl.min_horizontal(pl.col("out_of_service").fill_null(stop), pl.lit(stop))
                - pl.col("in_service")
            )
            .dt.total_microseconds()
            .clip(lower_bound=0)
            / 86400e6
        )
        .group_by("cluster")
        .agg(component_days=pl.col("d").sum(), components=pl.len())
    )
    k = (
        component_failures.filter(pl.col("failed_at") <= stop)
        .group_by("cluster")
        .agg(failures=pl.len().cast(pl.Int64))
    )
    out = (
        days.join(k, on="cluster", how="left")
        .with_columns(pl.col("failures").fill_null(0))
        .sort("cluster")
    )
    f = out.get_column("failures").to_numpy()
    cd = out.get_column("component_days").to_numpy()
    lo, hi = poisson_ci(f, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        cols = {
            "mttf_days": np.where(f > 0, cd / np.maximum(f, 1), np.nan),
            "mttf_days_low": np.where(cd > 0, cd / hi, np.nan),
            "mttf_days_high": np.where(lo > 0, cd / np.where(lo > 0, lo, 1), np.nan),
        }
    return out.select("cluster", "components", "component_days", "failures").with_columns(
        [pl.Series(n, v, dtype=pl.Float64).fill_nan(None) for n, v in cols.items()]
    )
