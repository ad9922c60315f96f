"""Independent generators for the statistical tests (not the package's simulator).

``job_histories``: job attempts on a cluster with a known hardware failure rate per node-day,
optionally modulated by weekly gamma-distributed multipliers, observed until a given end, so
that attempts still running then are open (``RUNNING``, no end). Written from the model's
definition only: each of ``slots`` groups of ``nodes_per_job`` nodes runs jobs back to back;
a job runs for an exponential duration unless a hardware failure (a Poisson process of rate
``nodes_per_job · r · m(week)`` per day) interrupts it first.

``weekly_counts``: counts per week with exposure, for the vectorised coverage tests.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl

T0 = datetime(2025, 1, 6, tzinfo=UTC)  # a Monday: weeks align with dt.truncate("1w")
DAY = 86400.0


def weekly_counts(
    rng: np.random.Generator,
    replicates: int,
    weeks: int,
    exposure_per_week: float,
    rate_per_day: float,
    *,
    gamma_shape: float | None = None,
    exposure_spread: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Counts ``k`` and exposures ``E`` of shape ``(replicates, weeks)``: ``k ~ Poisson(r m E)``
    with ``m ~ Gamma(shape, 1/shape)`` per week (mean 1) or ``m = 1``; ``E`` uniform within
    ``± exposure_spread`` of ``exposure_per_week``."""
    e = np.full((replicates, weeks), float(exposure_per_week))
    if exposure_spread:
        e *= rng.uniform(1 - exposure_spread, 1 + exposure_spread, e.shape)
    m = rng.gamma(gamma_shape, 1.0 / gamma_shape, e.shape) if gamma_shape else 1.0
    return rng.poisson(rate_per_day * m * e), e


def job_histories(
    rng: np.random.Generator,
    *,
    days: float,
    rate_per_node_day: float,
    slots: int = 4,
    nodes_per_job: int = 16,
    gpus_per_node: int = 8,
    mean_job_days: float = 2.0,
    gamma_shape: float | None = None,
    trend_per_week: float = 1.0,
    cluster: str = "c",
    hazard_shape: float = 1.0,
) -> tuple[pl.DataFrame, datetime]:
    """Attributed job attempts (``failure_domain`` set) and the observation end.

    Each slot starts at ``T0`` and runs jobs back to back until ``T0 + days``. A job's planned
    duration is exponential with mean ``mean_job_days``; hardware failures arrive at
    ``nodes_per_job · r · m(week) · trend_per_week^week`` per day (piecewise constant by week,
    exact thinning-free sampling by inversion of the cumulative hazard). With
    ``hazard_shape != 1`` the time to failure of each attempt is Weibull with that shape and
    the same mean at the base rate (no weekly modulation). An attempt still running at the end
    is ``RUNNING`` with no end time. Returns the frame and ``T0 + days``.
    """
    end_s = days * DAY
    n_weeks = int(np.ceil(days / 7)) + 1
    mult = rng.gamma(gamma_shape, 1.0 / gamma_shape, n_weeks) if gamma_shape else np.ones(n_weeks)
    mult = mult * trend_per_week ** np.arange(n_weeks)
    lam_week = nodes_per_job * rate_per_node_day * mult / DAY  # failures per second, per week
    week_s = 7 * DAY
    cum = np.concatenate([[0.0], np.cumsum(lam_week * week_s)])  # cumulative hazard at week starts

    def hazard_at(t: float) -> float:
        w = min(int(t // week_s), n_weeks - 1)
        return cum[w] + lam_week[w] * (t - w * week_s)

    def time_of(h: float) -> float:
        w = int(np.searchsorted(cum, h, side="right") - 1)
        if w >= n_weeks:
            return np.inf
        return w * week_s + (h - cum[w]) / lam_week[w]

    rows = []
    job = 0
    for slot in range(slots):
        t = 0.0
        while t < end_s:
            planned = rng.exponential(mean_job_days * DAY)
            if hazard_shape == 1.0:
                fail_at = time_of(hazard_at(t) + rng.exponential())
            else:
                from math import gamma

                scale = (
                    1.0 / (nodes_per_job * rate_per_node_day / DAY) / gamma(1 + 1 / hazard_shape)
                )
                fail_at = t + scale * rng.weibull(hazard_shape)
            stop = min(t + planned, fail_at)
            failed = fail_at <= t + planned
            nodes = [f"n{slot * nodes_per_job + i:04d}" for i in range(nodes_per_job)]
            if stop >= end_s:
                state, end, domain = "RUNNING", None, "none"
            else:
                state, end, domain = (
                    ("NODE_FAIL", stop, "hardware") if failed else ("COMPLETED", stop, "none")
                )
            rows.append({
                "cluster": cluster, "job_id": str(job), "attempt": 0, "state": state,
                "submit_time": T0 + timedelta(seconds=t), "start_time": T0 + timedelta(seconds=t),
                "end_time": None if end is None else T0 + timedelta(seconds=end),
                "n_nodes": nodes_per_job, "n_accelerators": nodes_per_job * gpus_per_node,
                "nodes": nodes, "failure_domain": domain,
            })  # fmt: skip
            job += 1
            t = stop
    frame = pl.DataFrame(rows, schema_overrides={"end_time": pl.Datetime("us", "UTC"),
                                                 "submit_time": pl.Datetime("us", "UTC"),
                                                 "start_time": pl.Datetime("us", "UTC")})  # fmt: skip
    return frame, T0 + timedelta(days=days)
