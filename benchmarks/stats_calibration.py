"""Calibration of the statistics (issue 17): coverage of the intervals, size of the tests and
bias of the rates before/after censoring open attempts, over replicates of the independent
generators in tests/histories.py (not the package's simulator). Prints a table; 3 CPU-minutes.

    nice -n 10 .venv/bin/python benchmarks/stats_calibration.py [--replicates 4000]

"Before" figures recompute the old estimators from the generated data: the exact Poisson
interval and the Poisson trend test (no allowance for week-to-week variation), and rates
with the attempts still running at the observation end dropped.
"""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from histories import job_histories, weekly_counts

from reliability.models.failures import (
    failure_rate_series,
    glm_slope,
    poisson_regression,
    rate_interval,
    trend_test,
)
from reliability.models.lifetimes import crow_amsaa, fit_weibull

SCENARIOS = {
    "26 wk, 20 fail/wk": dict(weeks=26, exposure_per_week=3000.0, rate_per_day=6.5e-3),
    "12 wk, 5 fail/wk, exposure ±50%": dict(weeks=12, exposure_per_week=500.0, rate_per_day=0.01,
                                            exposure_spread=0.5),
    "52 wk, 65 fail/wk": dict(weeks=52, exposure_per_week=10000.0, rate_per_day=6.5e-3),
}  # fmt: skip


def _cov(lo, hi, truth) -> float:
    return float(((lo <= truth) & (truth <= hi)).mean())


def rates_and_trends(R: int) -> None:
    print(f"r_f 95% interval coverage and trend-test size at 5% ({R:,} replicates each)")
    print(
        f"  {'scenario':<34} {'weekly swing':<13} {'robust CI':>9} {'Poisson CI':>10} {'robust size':>11} {'Poisson size':>12}"
    )
    for name, p in SCENARIOS.items():
        for shape in (None, 4.0):
            k, e = weekly_counts(np.random.default_rng(17), R, gamma_shape=shape, **p)
            r = rate_interval(k, e)
            t = trend_test(k, e)
            v = t["valid"]
            print(f"  {name:<34} {'Gamma(4) CV .5' if shape else 'none':<13} "
                  f"{_cov(r['low'], r['high'], p['rate_per_day']):9.3f} "
                  f"{_cov(r['poisson_low'], r['poisson_high'], p['rate_per_day']):10.3f} "
                  f"{(t['p'][v] < 0.05).mean():11.3f} {(t['p_poisson'][v] < 0.05).mean():12.3f}")  # fmt: skip


def trend_power(R: int) -> None:
    """Issue 40: the trend test's power under weekly swings, NB2 quasi-likelihood (now) against
    the HC3 sandwich on a Poisson GLM (before), and the size of both."""
    print(f"trend test: rejection rate at 5% ({R:,} replicates; doubling = x2 every 7 weeks)")
    print(
        f"  {'weeks':>5} {'fail/wk':>7} {'weekly swing':<14} {'trend':<9} {'NB2 (now)':>9} {'HC3 (before)':>12}"
    )
    rng = np.random.default_rng(40)
    for weeks in (8, 12, 26):
        for mu0 in (5.0, 20.0, 60.0):
            for shape in (None, 4.0):
                for growth in (1.0, 2 ** (1 / 7)):
                    e = np.full((R, weeks), 1000.0)
                    m = rng.gamma(shape, 1 / shape, e.shape) if shape else 1.0
                    k = rng.poisson(mu0 / 1000 * m * growth ** np.arange(weeks) * e)
                    now = trend_test(k, e)["p"]
                    before = poisson_regression(k, e, np.arange(weeks, dtype=float), min_failures=5,
                                                min_points=4)["p"]  # fmt: skip
                    print(f"  {weeks:>5} {mu0:>7g} {'Gamma(4) CV .5' if shape else 'none':<14} "
                          f"{'doubling' if growth > 1 else 'none':<9} {np.nanmean(now < 0.05):9.3f} "
                          f"{np.nanmean(before < 0.05):12.3f}")  # fmt: skip


def slopes(R: int) -> None:
    nodes = np.array([1, 1, 2, 4, 8, 16, 32, 64, 128, 256], float)
    job_hours = np.array([9e5, 3e5, 1e5, 6e4, 4e4, 3e4, 2e4, 1e4, 5e3, 2e3])
    mu = nodes * job_hours / (24 * 150)
    rng = np.random.default_rng(11)
    for noise in (None, 4.0):
        m = rng.gamma(noise, 1 / noise, (R, nodes.size)) if noise else np.ones((R, nodes.size))
        g = glm_slope(rng.poisson(mu * m), np.broadcast_to(job_hours, (R, nodes.size)), nodes)
        print(f"GLM slope on log(nodes), true 1, {'gamma per bucket' if noise else 'Poisson':<16}: "
              f"coverage {_cov(g['low'], g['high'], 1.0):.3f}, size of slope = 1 {(g['p'] < 0.05).mean():.3f}")  # fmt: skip


def shapes(n_seeds: int) -> None:
    for shape in (0.7, 1.6):
        covered = 0
        for seed in range(n_seeds):
            rng = np.random.default_rng(seed)
            age0 = rng.uniform(0, 800, 600)
            life = 1000 * rng.weibull(shape, 600)
            keep = life > age0
            age0, life = age0[keep], life[keep]
            stop = age0 + 500
            w = fit_weibull(np.minimum(life, stop), life <= stop, age0, engine="numpy")
            covered += w["shape_low"] <= shape <= w["shape_high"]
        print(f"Weibull shape {shape} (left-truncated, censored, 600 components): coverage "
              f"{covered / n_seeds:.3f} over {n_seeds} seeds")  # fmt: skip
    for beta in (0.6, 1.0, 1.8):
        rng = np.random.default_rng(int(100 * beta))
        fits = []
        for _ in range(2000):
            n = rng.poisson(60)
            fits.append(crow_amsaa(1000 * rng.uniform(size=n) ** (1 / beta), 1000.0))
        ok = [f for f in fits if f.beta is not None]
        extra = (
            f", size of beta = 1 {np.mean([f.p_constant < 0.05 for f in ok]):.3f}"
            if beta == 1.0
            else ""
        )
        print(
            f"Crow-AMSAA beta {beta}: coverage {np.mean([f.beta_low <= beta <= f.beta_high for f in ok]):.3f}{extra}"
        )


def censoring(replicates: int) -> None:
    print(
        f"bias of rates (mean estimate / true rate - 1, {replicates} replicates), open attempts censored vs dropped"
    )
    for label, days, mean_job in (
        ("8 weeks of 4-day jobs", 56, 4.0),
        ("26 weeks of 1-day jobs", 182, 1.0),
    ):
        rng = np.random.default_rng(2025)
        est = {"whole window": [], "last 4 weeks": [], "last week": []}
        old = {k: [] for k in est}
        for _ in range(replicates):
            jobs, end = job_histories(
                rng, days=days, rate_per_node_day=0.01, slots=8, mean_job_days=mean_job
            )
            s = failure_rate_series(jobs, min_gpus=128, observation_end=end)
            last = s.series.row(-1, named=True)
            for k, v in (("whole window", s.rate_.value), ("last 4 weeks", s.recent_rate_.value),
                         ("last week", last["failures"] / last["node_days"])):  # fmt: skip
                est[k].append(v)
            closed = jobs.filter(pl.col("end_time").is_not_null())
            for k, d in (("whole window", days), ("last 4 weeks", 28), ("last week", 7)):
                w0 = end - timedelta(days=d)
                part = closed.filter(pl.col("end_time") > w0)
                nd = ((part["end_time"] - part["start_time"].clip(lower_bound=w0)).dt.total_seconds() / 86400
                      * part["n_nodes"]).sum()  # fmt: skip
                old[k].append((part["failure_domain"] == "hardware").sum() / nd)
        for k in est:
            after = np.asarray(est[k]) / 0.01
            print(
                f"  {label:<24} {k:<13} before {np.mean(old[k]) / 0.01 - 1:+7.1%}   after "
                f"{after.mean() - 1:+7.1%} (± {2 * after.std(ddof=1) / np.sqrt(after.size):.1%})"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replicates", type=int, default=4000)
    ap.add_argument("--histories", type=int, default=1000)
    a = ap.parse_args()
    rates_and_trends(a.replicates)
    trend_power(a.replicates)
    slopes(a.replicates)
    shapes(1000)
    censoring(a.histories)


if __name__ == "__main__":
    main()
