"""Hardware failures of the GPU-cluster simulator, drawn up front with numpy.

Per node, failures follow a non-homogeneous Poisson process with the configured rate schedule
r(t) [failures per node-day] (linear ramp from ``rate_start`` to ``rate_end`` per 1000
node-days, optional weekly swing), multiplied for lemon nodes. Event times are drawn by
inverting the cumulative hazard on a one-hour grid. Each failure gets a cause (lemons have
their own root-cause mix, HPCA'25), whether a health check will catch it, and a repair time.
False alarms (a health check drains a healthy node) are a separate Poisson stream.

The simulator skips failures that fall while a node is already out of service, so the rate
holds per node-day *in service*.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from reliability.sim.config import CAUSES, ClusterConfig

__all__ = ["draw_failures", "rate_schedule"]


def rate_schedule(cfg: ClusterConfig, step_s: float = 3600.0) -> pl.DataFrame:
    """The configured failure rate over the run: ``t_s``, ``rate_per_node_day`` (ordinary nodes)."""
    f = cfg.failures
    t = np.arange(0.0, cfg.horizon_s + step_s, step_s)
    frac = np.clip(t / cfg.horizon_s, 0.0, 1.0)
    rate = (f.rate_start + (f.rate_end - f.rate_start) * frac) / 1000.0
    if f.weekly_amplitude:
        rate = rate * (1.0 + f.weekly_amplitude * np.sin(2 * np.pi * t / (7 * 86400.0)))
    return pl.DataFrame({"t_s": t, "rate_per_node_day": np.maximum(rate, 0.0)})


def _draw_times(
    cfg: ClusterConfig, multipliers: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    sched = rate_schedule(cfg)
    t = sched.get_column("t_s").to_numpy()
    r = sched.get_column("rate_per_node_day").to_numpy() / 86400.0  # per node-second
    cum = np.concatenate([[0.0], np.cumsum((r[1:] + r[:-1]) / 2 * np.diff(t))])  # hazard
    total = cum[-1]
    counts = rng.poisson(multipliers * total)
    node = np.repeat(np.arange(len(multipliers)), counts)
    # inverse cumulative hazard of U * total (the multiplier only scales the count)
    times = np.interp(rng.uniform(0.0, total, size=node.size), cum, t)
    order = np.lexsort((times, node))
    return node[order], times[order]


def draw_failures(cfg: ClusterConfig, rng: np.random.Generator) -> tuple[pl.DataFrame, np.ndarray]:
    """Draw every hardware failure and false alarm of the run.

    Returns (events, lemon mask). ``events`` columns: ``node``, ``time_s``, ``kind``
    (``failure`` or ``false_alarm``), ``cause`` (a key of :data:`reliability.sim.config.CAUSES`,
    null for false alarms), ``detected`` (a health check will catch it), ``check_phase_s``
    (the node's health-check phase), ``repair_s``, ``lemon``.
    """
    f = cfg.failures
    n = cfg.n_nodes
    n_lemons = round(f.lemon_fraction * n)
    lemon = np.zeros(n, dtype=bool)
    lemon[rng.choice(n, size=n_lemons, replace=False)] = True
    mult = np.where(lemon, f.lemon_rate_multiplier, 1.0)
    node, times = _draw_times(cfg, mult, rng)
    is_lemon = lemon[node]
    names = list(f.cause_mix)
    lnames = list(f.lemon_cause_mix)
    for c in (*names, *lnames):
        if c not in CAUSES:
            raise ValueError(f"unknown failure cause {c!r}; known: {sorted(CAUSES)}")
    p = np.array([f.cause_mix[c] for c in names])
    lp = np.array([f.lemon_cause_mix[c] for c in lnames])
    cause = np.array(names, dtype=object)[rng.choice(len(names), size=node.size, p=p / p.sum())]
    # a lemon fails repeatedly from its one root cause
    lemon_root = {
        int(i): lnames[int(rng.choice(len(lnames), p=lp / lp.sum()))] for i in np.flatnonzero(lemon)
    }
    cause = np.where(
        is_lemon, np.array([lemon_root.get(int(i), "") for i in node], dtype=object), cause
    )
    detected = rng.random(node.size) < np.where(is_lemon, f.p_detect_lemon, f.p_detect)
    repair = rng.lognormal(np.log(f.repair_median_h * 3600.0), f.repair_sigma, size=node.size)
    phase = rng.uniform(0.0, f.health_check_interval_s, size=n)
    # false alarms
    fa_total = f.false_alarm_rate / 1000.0 / 86400.0 * cfg.horizon_s
    fa_counts = rng.poisson(np.full(n, fa_total))
    fa_node = np.repeat(np.arange(n), fa_counts)
    fa_time = rng.uniform(0.0, cfg.horizon_s, size=fa_node.size)
    events = pl.concat(
        [
            pl.DataFrame(
                {
                    "node": node,
                    "time_s": times,
                    "kind": "failure",
                    "cause": cause.astype(str),
                    "detected": detected,
                    "repair_s": repair,
                }
            ),
            pl.DataFrame(
                {
                    "node": fa_node,
                    "time_s": fa_time,
                    "kind": "false_alarm",
                    "cause": pl.Series([None] * fa_node.size, dtype=pl.String),
                    "detected": np.ones(fa_node.size, dtype=bool),
                    "repair_s": np.full(fa_node.size, f.false_alarm_repair_h * 3600.0),
                }
            ),
        ],
        how="vertical_relaxed",
    )
    events = events.with_columns(
        check_phase_s=pl.Series("p", phase).gather(events.get_column("node"))
    )
    events = events.with_columns(lemon=pl.Series(lemon).gather(events.get_column("node")))
    return events.sort("time_s", "node", maintain_order=True), lemon
