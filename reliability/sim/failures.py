"""Hardware failures of the GPU-cluster simulator, drawn up front with numpy.

Per node, failures follow a non-homogeneous Poisson process. The configured schedule r(t) is
the fleet's rate (failures per node-day, every node, lemons included: what HPCA'25 Fig. 5
measures); it rises from ``rate_start`` to ``rate_end`` as a power of time whose exponent
makes the run average ``rate_mean`` (see :class:`~reliability.sim.config.FailureConfig`), with
an optional weekly swing. A lemon node fails ``m`` times as often as an ordinary node at
every moment, so ordinary nodes run at ``r(t) / (1 - f + f m)`` (``f`` the lemon fraction).
Event times are drawn by inverting the cumulative hazard on a one-hour grid. Each failure gets
a cause (lemons fail repeatedly from one root cause drawn from the paper's root-cause mix,
HPCA'25 Table 2), whether a health check will catch it, and a repair time. False alarms (a
health check drains a healthy node) are a separate Poisson stream.

The simulator skips failures that fall while a node is already out of service, so the rate
holds per node-day *in service*.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from reliability.sim.config import CAUSES, ClusterConfig

__all__ = ["draw_failures", "rate_schedule"]


def rate_schedule(cfg: ClusterConfig, step_s: float = 3600.0) -> pl.DataFrame:
    """Tabulate the configured failure rate over the run (truth).

    The fleet's schedule ``start + (end - start) (t/T)^k`` (see
    :class:`~reliability.sim.config.FailureConfig`), with the optional weekly swing, split into
    the ordinary nodes' rate ``r / (1 - f + f m)`` and the lemons' ``m`` times that.

    Parameters
    ----------
    cfg : ClusterConfig
        The run's configuration (its ``failures`` section, ``days`` and ``n_nodes``).
    step_s : float
        Grid step [s] from the start to the end of the run (both included).

    Returns
    -------
    polars.DataFrame
        ``t_s`` [s since the start], ``rate_per_node_day`` (the fleet's rate, lemons included),
        ``ordinary_rate_per_node_day``, ``lemon_rate_per_node_day`` [failures per node-day].
    """
    f = cfg.failures
    t = np.arange(0.0, cfg.horizon_s + step_s, step_s)
    frac = np.clip(t / cfg.horizon_s, 0.0, 1.0)
    lo, hi = f.rate_start_per_1000_node_days, f.rate_end_per_1000_node_days
    rate = (lo + (hi - lo) * frac**f.ramp_exponent) / 1000.0
    if f.weekly_amplitude:
        rate = rate * (1.0 + f.weekly_amplitude * np.sin(2 * np.pi * t / (7 * 86400.0)))
    rate = np.maximum(rate, 0.0)
    n_lemons = round(f.lemon_fraction * cfg.n_nodes)
    share = n_lemons / cfg.n_nodes if cfg.n_nodes else 0.0
    m = f.lemon_multiplier(cfg.n_nodes)
    ordinary = rate / (1.0 - share + share * m)
    return pl.DataFrame(
        {
            "t_s": t,
            "rate_per_node_day": rate,
            "ordinary_rate_per_node_day": ordinary,
            "lemon_rate_per_node_day": m * ordinary,
        }
    )


def _draw_times(
    cfg: ClusterConfig, multipliers: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    sched = rate_schedule(cfg)
    t = sched.get_column("t_s").to_numpy()
    r = sched.get_column("ordinary_rate_per_node_day").to_numpy() / 86400.0  # per node-second
    cum = np.concatenate([[0.0], np.cumsum((r[1:] + r[:-1]) / 2 * np.diff(t))])  # hazard
    total = cum[-1]
    counts = rng.poisson(multipliers * total)
    node = np.repeat(np.arange(len(multipliers)), counts)
    # inverse cumulative hazard of U * total (the multiplier only scales the count)
    times = np.interp(rng.uniform(0.0, total, size=node.size), cum, t)
    order = np.lexsort((times, node))
    return node[order], times[order]


_EVENT_SCHEMA = {
    "node": pl.Int64,
    "time_s": pl.Float64,
    "kind": pl.String,
    "cause": pl.String,
    "detected": pl.Boolean,
    "repair_s": pl.Float64,
}


def _apportion(names: list[str], p: np.ndarray, n: int) -> list[str]:
    """Share ``n`` items out over ``names`` in proportions ``p`` by largest remainders.

    Hamilton's method: each name gets floor(n p) or one more.
    """
    quota = p * n
    count = np.floor(quota).astype(int)
    order = np.argsort(-(quota - count), kind="stable")
    count[order[: n - int(count.sum())]] += 1
    return [name for name, k in zip(names, count.tolist(), strict=True) for _ in range(k)]


def draw_failures(cfg: ClusterConfig, rng: np.random.Generator) -> tuple[pl.DataFrame, np.ndarray]:
    """Draw every hardware failure and false alarm of the run.

    The lemon nodes are drawn first (``round(lemon_fraction * n_nodes)`` of them, at random),
    then the failure times per node (see the module docstring), their causes, whether a health
    check catches them and their repair times.

    Parameters
    ----------
    cfg : ClusterConfig
        The run's configuration (its ``failures`` section, ``days`` and ``n_nodes``).
    rng : numpy.random.Generator
        Source of randomness (the run's seed determines every draw).

    Returns
    -------
    events : polars.DataFrame
        Sorted by time: ``node`` (index), ``time_s`` [s since the start], ``kind``
        (``failure`` or ``false_alarm``), ``cause`` (a key of
        :data:`reliability.sim.config.CAUSES`, null for false alarms), ``detected`` (a health
        check will catch it; always for false alarms), ``repair_s`` [s], ``check_phase_s``
        (the node's health-check phase [s]), ``lemon``.
    lemon : numpy.ndarray
        Lemon-node mask, one bool per node index.

    Raises
    ------
    ValueError
        If ``cause_mix`` or ``lemon_cause_mix`` names a cause that is not in ``CAUSES``.
    """
    f = cfg.failures
    n = cfg.n_nodes
    n_lemons = round(f.lemon_fraction * n)
    lemon = np.zeros(n, dtype=bool)
    lemon[rng.choice(n, size=n_lemons, replace=False)] = True
    mult = np.where(lemon, f.lemon_multiplier(n), 1.0)
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
    # a lemon fails repeatedly from its one root cause; the causes are shared out over the
    # lemons as the paper's mix says (largest remainders), then dealt to them at random
    lemon_ids = np.flatnonzero(lemon)
    roots = _apportion(lnames, lp / lp.sum(), lemon_ids.size)
    lemon_root = dict(
        zip(
            lemon_ids.tolist(), rng.permutation(np.array(roots, dtype=object)).tolist(), strict=True
        )
    )
    cause = np.where(
        is_lemon, np.array([lemon_root.get(int(i), "") for i in node], dtype=object), cause
    )
    detected = rng.random(node.size) < np.where(is_lemon, f.p_detect_lemon, f.p_detect)
    repair_h = np.where(is_lemon, f.lemon_repair_median_h or f.repair_median_h, f.repair_median_h)
    repair = rng.lognormal(np.log(repair_h * 3600.0), f.repair_sigma, size=node.size)
    phase = rng.uniform(0.0, f.health_check_interval_s, size=n)
    # false alarms
    fa_total = f.false_alarm_rate_per_1000_node_days / 1000.0 / 86400.0 * cfg.horizon_s
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
                },
                schema=_EVENT_SCHEMA,
            ),
            pl.DataFrame(
                {
                    "node": fa_node,
                    "time_s": fa_time,
                    "kind": "false_alarm",
                    "cause": pl.Series([None] * fa_node.size, dtype=pl.String),
                    "detected": np.ones(fa_node.size, dtype=bool),
                    "repair_s": np.full(fa_node.size, f.false_alarm_repair_h * 3600.0),
                },
                schema=_EVENT_SCHEMA,
            ),
        ],
        how="vertical_relaxed",
    )
    events = events.with_columns(
        check_phase_s=pl.Series("p", phase).gather(events.get_column("node"))
    )
    events = events.with_columns(lemon=pl.Series(lemon).gather(events.get_column("node")))
    return events.sort("time_s", "node", maintain_order=True), lemon
