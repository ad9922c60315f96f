"""Recovery strategies compared on one cluster's rates: expected ETTR of each, in closed form.

A job of N nodes (``n_gpus / gpus_per_node``) is interrupted by hardware at ``λ = N · r_f / 24``
per hour (Kokolis et al., HPCA'25 §V). Four ways to recover, each a closed form for the
long-run expected ETTR (expected productive time over expected wall time), each checked
against a Monte Carlo of the same assumptions in :mod:`reliability.models.recovery.strategies_mc`:

``checkpoint_restart`` (today)
    Checkpoint every Δt with a blocking write w; an interruption loses the work since the last
    checkpoint, waits q in the queue for nodes and restarts in u0. Exactly
    :func:`~reliability.models.recovery.expected_ettr` with ``variant="renewal"`` (the long-job limit
    ``Δt / A(Δt + w)`` of the per-segment renewal argument, Daly 2006 §3).
``hot_spares``
    s idle spare nodes stand by: a failed node is swapped for a free spare with no queue wait;
    the failed node is repaired (mean R hours) and returns to the spares. The nodes the spares
    serve (the job's, or a larger ``pool_nodes``) fail at ``λ_pool = pool_nodes · r_f / 24``; the
    nodes in repair form an M/G/∞ queue, so their number at a random time is
    ``X ~ Poisson(λ_pool · R)`` whatever the repair-time distribution, and by PASTA a failure
    sees the same distribution. A failure finds a spare free when fewer than s other nodes are
    in repair: ``P(no wait) = P(X ≤ s − 1)``. The spares needed for a target probability of
    never waiting: the smallest s with ``P(X ≤ s − 1) ≥ target``, i.e.
    ``s = F⁻¹_Poisson(target; λ_pool R) + 1`` (at least one: with none, every failure waits).
    ETTR is the renewal form with the queue wait replaced by its expectation
    ``q' = P(X ≥ s) · q``; exact when the waits are independent of the job's own failure
    times (the renewal form is linear in q, Wald's identity). That is the model's assumption:
    the pool's failures run in wall-clock time whatever the job does. It is an approximation
    for a pool of the job's own nodes, which fail only while the job runs: fewer nodes are in
    repair than Poisson(λR) says, so the closed form is conservative (simulated jointly for
    2,048 GPUs at r_f = 0.1, R = 6 h, q = 30 min: 0.9% low with 12 spares, P(wait) = 3%; 7%
    low with 8 spares, P(wait) = 31%).
``peer_checkpoint`` (in memory, replicated to peers)
    Each checkpoint is a copy to ``peer_copies`` other nodes' memory: a cheap write w', so the
    interval shrinks to Daly's higher-order optimum ``Δt' = τ(w', M = 1/λ, u0')``
    (:func:`~reliability.models.recovery.daly_interval_h`, Daly 2006 Eq. 37). After an interruption the
    job restores from a peer in u0'. The copy is lost when every peer holding it also fails
    before the replacement node has it back (within the window ``q + u0'``): probability
    ``p_fb = (1 − e^{−r_f W / 24})^c`` (independent Poisson node failures); then the job
    restores the same step from persistent storage (drained in the background) in u0. The
    renewal argument with a random restart (u0' with probability 1 − p_fb, u0 with p_fb) gives,
    with ``f(L) = (1 − e^{−λL})/λ`` and ``p(L) = e^{−λL}``:
    ``B = (Σ π_k f(u_k + s) + (1 − Σ π_k p(u_k + s)) q) / Σ π_k p(u_k + s)``,
    ``A(s) = f(s) + (1 − p(s)) (q + B)``, ``ETTR = Δt' / A(Δt' + w')``.
``elastic`` (fault-tolerant data parallelism)
    The job is D = N / ``replica_nodes`` data-parallel replicas. A failed replica drops out and
    the step continues on the others (throughput lost, no work lost, no restart) until it
    heals after H (default ``q + u0``: a replacement node, then loading state from a peer
    replica). Each replica alternates up (exponential, rate ``ρ = replica_nodes · r_f / 24``)
    and down (mean H): it is down a fraction ``m = ρH / (1 + ρH)`` of the time (alternating
    renewal, any distribution of H), and the job sees ``ν = D ρ / (1 + ρH) = λ / (1 + ρH)``
    failures per hour, each costing a pause of c (reconfiguration) of the whole job:
    ``ETTR = (1 − σ) (1 − m − c ν)`` with σ the steady throughput cost of running elastically.

The comparison is per job: spare nodes held idle are capacity the cluster does not run jobs
on (the ``extra_nodes`` column), which ETTR does not charge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import polars as pl
from scipy import stats

from reliability._result import Result, fmt_count, fmt_duration_h, fmt_num, fmt_pct
from reliability.errors import Hint, Hinted, join_messages
from reliability.models.recovery.checkpoint import daly_interval_h
from reliability.models.recovery.ettr import expected_ettr, interruption_rate_per_h

__all__ = [
    "DEFAULT_ELASTIC_RECONFIG_S",
    "DEFAULT_PEER_WRITE_S",
    "DEFAULT_REPAIR_H",
    "MEANINGFUL_ETTR",
    "SHORTEST_INTERVAL_H",
    "STRATEGIES",
    "StrategyComparison",
    "best_interval_h",
    "compare_strategies",
    "mixed_restart_ettr",
    "spares_needed",
]

#: the strategies, in the order of the comparison's rows
STRATEGIES = ("checkpoint_restart", "hot_spares", "peer_checkpoint", "elastic")
#: assumed time to copy a checkpoint to a peer's memory [s] when none is given (an assumption,
#: not a measurement: pass your own)
DEFAULT_PEER_WRITE_S = 10.0
#: assumed pause of an elastic job when a replica leaves [s] (an assumption: pass your own)
DEFAULT_ELASTIC_RECONFIG_S = 60.0
#: assumed mean node repair time [h] when none is measured (an assumption: pass your own, or
#: measure it with :func:`reliability.models.recovery.recovery_costs`)
DEFAULT_REPAIR_H = 24.0
#: shortest checkpoint interval :func:`best_interval_h` considers [h] (1 min)
SHORTEST_INTERVAL_H = 1.0 / 60.0
#: below this expected ETTR a job barely progresses: the comparison names no best strategy
#: (at 1e-7 against 0 the ranking says nothing a user can act on)
MEANINGFUL_ETTR = 0.01

_SCHEMA = {
    "strategy": pl.String,
    "ettr": pl.Float64,
    "ckpt_interval_h": pl.Float64,
    "ckpt_write_h": pl.Float64,
    "restart_h": pl.Float64,
    "queue_h": pl.Float64,
    "spare_nodes": pl.Int64,
    "p_wait": pl.Float64,
    "repair_h": pl.Float64,
    "fallback_prob": pl.Float64,
    "replicas": pl.Float64,
    "heal_h": pl.Float64,
    "reconfig_h": pl.Float64,
    "extra_nodes": pl.Int64,
    "assumes": pl.String,
}


def spares_needed(pool_rate_per_h: float, repair_h: float, target_no_wait: float) -> int:
    """Spare nodes needed so that a failure finds one free with probability ``target_no_wait``.

    Nodes in repair form an M/G/∞ queue: their number is ``X ~ Poisson(λ_pool R)``, and a failure
    (Poisson arrivals see time averages) finds a spare free when ``X ≤ s − 1``. The answer is
    the smallest s with ``P(X ≤ s − 1) ≥ target`` (see the module doc).

    Parameters
    ----------
    pool_rate_per_h : float
        λ_pool, failures per hour of the nodes the spares serve, > 0.
    repair_h : float
        R, mean time a failed node is out of service [h], > 0.
    target_no_wait : float
        Probability that a failure finds a spare free, in (0, 1).

    Returns
    -------
    int
        s, spare nodes (>= 1): ``poisson.ppf(target, λ_pool R) + 1``, in constant time
        however long the repairs.
    """
    if not (math.isfinite(pool_rate_per_h) and pool_rate_per_h > 0):
        raise ValueError(f"pool_rate_per_h must be positive, got {pool_rate_per_h!r}")
    if not (math.isfinite(repair_h) and repair_h > 0):
        raise ValueError(f"repair_h must be a positive number of hours, got {repair_h!r}")
    if not 0.0 < target_no_wait < 1.0:
        raise ValueError(f"target_no_wait must be in (0, 1), got {target_no_wait!r}")
    mu = pool_rate_per_h * repair_h
    if mu == 0.0:  # rate x repair underflows: nobody is ever in repair, one spare suffices
        return 1
    # the Poisson quantile: the smallest k with P(X <= k) >= target (closed form, not a count-up)
    return int(stats.poisson.ppf(target_no_wait, mu)) + 1


def best_interval_h(
    n_gpus: float,
    rate_per_node_day: float,
    restart_h: float,
    *,
    queue_h: float = 0.0,
    ckpt_write_h: float = 0.0,
    gpus_per_node: int = 8,
) -> tuple[float, float]:
    """Checkpoint interval that maximises checkpoint-restart's expected ETTR (renewal form).

    ``Δt / A(Δt + w)`` (Daly 2006 §3) is maximised numerically over ``log Δt`` in
    [:data:`SHORTEST_INTERVAL_H`, 1e4] h (bounded Brent search); used to compare strategies when
    no interval reaches a target. With ``w = 0`` checkpoints are free and the ETTR rises as the
    interval shrinks: the answer is then the shortest interval considered (1 min).

    Parameters
    ----------
    n_gpus : float
        Job size [GPUs].
    rate_per_node_day : float
        r_f [failures per node-day].
    restart_h : float
        u0, restart overhead [h].
    queue_h : float
        q, queue wait per interruption [h].
    ckpt_write_h : float
        w, blocking checkpoint write [h].
    gpus_per_node : int
        GPUs per node.

    Returns
    -------
    tuple of float
        The interval [h] and the expected ETTR there (the interval is
        :data:`SHORTEST_INTERVAL_H` when the ETTR still rises there).
    """
    from scipy import optimize

    def ettr(log_dt: float) -> float:
        return float(
            expected_ettr(
                n_gpus,
                rate_per_node_day,
                math.exp(log_dt),
                restart_h,
                queue_h=queue_h,
                ckpt_write_h=ckpt_write_h,
                gpus_per_node=gpus_per_node,
                variant="renewal",
            )
        )

    res = optimize.minimize_scalar(
        lambda x: -ettr(x),
        bounds=(math.log(SHORTEST_INTERVAL_H), math.log(1e4)),
        method="bounded",
        options={"xatol": 1e-6},
    )
    x = float(res.x)
    lo = math.log(SHORTEST_INTERVAL_H)
    if ettr(lo) >= ettr(x):  # Brent stops short of a bound: the maximum is at the shortest
        x = lo
    return math.exp(x), ettr(x)


def mixed_restart_ettr(
    lam_per_h: float,
    interval_h: float,
    write_h: float,
    restarts_h: tuple[float, ...],
    probs: tuple[float, ...],
    queue_h: float,
) -> float:
    """Long-run expected ETTR of checkpoint-restart with a random restart cost (renewal form).

    After each interruption the job waits ``queue_h`` and restarts in ``restarts_h[k]`` with
    probability ``probs[k]`` (independently per interruption); see the module doc for B and A
    (Daly 2006 §3, with the restart drawn per interruption). With one restart cost this is
    :func:`~reliability.models.recovery.expected_ettr` ``variant="renewal"``.

    Parameters
    ----------
    lam_per_h : float
        λ, interruptions per hour of running time, > 0.
    interval_h : float
        Δt, compute between checkpoints [h], > 0.
    write_h : float
        w, blocking write per checkpoint [h], >= 0.
    restarts_h : tuple of float
        The possible restart costs [h].
    probs : tuple of float
        Their probabilities (summing to 1).
    queue_h : float
        q, wait after each interruption [h].

    Returns
    -------
    float
        Expected ETTR in [0, 1] (0 for a job that cannot progress).
    """
    lam, s = float(lam_per_h), float(interval_h) + float(write_h)
    pi = np.asarray(probs, dtype=float)
    u = np.asarray(restarts_h, dtype=float)
    with np.errstate(all="ignore"):
        p_us = float(np.sum(pi * np.exp(-lam * (u + s))))
        f_us = float(np.sum(pi * -np.expm1(-lam * (u + s)) / lam))
        b = (f_us + (1.0 - p_us) * queue_h) / p_us if p_us > 0 else math.inf
        a = -math.expm1(-lam * s) / lam + (-math.expm1(-lam * s)) * (queue_h + b)
    if not math.isfinite(a) or a <= 0:
        return 0.0
    return float(interval_h / a)


@dataclass
class StrategyComparison(Result):
    """Expected ETTR of a job under each recovery strategy (see the module doc).

    Attributes
    ----------
    summary : polars.DataFrame
        One row per strategy: ``strategy``, ``ettr`` and what it assumes (``ckpt_interval_h``,
        ``ckpt_write_h``, ``restart_h``, ``queue_h`` [h], ``spare_nodes``, ``p_wait`` (the
        probability an interruption waits in the queue), ``repair_h``, ``fallback_prob``,
        ``replicas``, ``heal_h``, ``reconfig_h``, ``extra_nodes`` (idle nodes held), ``assumes``).
    n_gpus : float
        Job size [GPUs].
    rate_per_node_day : float
        r_f [failures per node-day].
    params : dict
        The rates and derived quantities the Monte Carlo needs (``lam_per_h``, ``n_nodes``,
        ``pool_rate_per_h``, ``replica_rate_per_h``, ``peer_copies``, ...).
    """

    title = "Recovery strategies compared (expected ETTR, Kokolis et al. HPCA'25 §V)"
    table_scales: ClassVar[dict[str, float]] = {"ettr": 1.0, "p_wait": 1.0, "fallback_prob": 1.0}
    summary: pl.DataFrame
    n_gpus: float
    rate_per_node_day: float
    params: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def row(self, strategy: str) -> dict:
        """Return one strategy's row as a dict.

        Parameters
        ----------
        strategy : str
            One of :data:`STRATEGIES`.

        Returns
        -------
        dict
            The summary row.
        """
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
        return self.summary.filter(pl.col("strategy") == strategy).row(0, named=True)

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """What the comparison is of: the job size [GPUs, nodes] (a model at given rates, no sample)."""
        return {"GPUs": float(self.n_gpus), "nodes": float(self.params["n_nodes"])}

    @classmethod
    def _example(cls) -> StrategyComparison:
        """Build a tiny instance: a 1,024-GPU job at RSC-1's rate with a 30-min queue wait (for contract tests)."""
        return compare_strategies(1024, 6.5e-3, 1.0, 5 / 60, queue_h=0.5, repair_h=8.0)

    def _lines(self) -> list[str]:
        lam = self.params["lam_per_h"]
        lines = [
            f"A job on {fmt_num(float(self.n_gpus))} GPUs at {fmt_num(1000 * self.rate_per_node_day)} failures per "
            f"1000 node-days is interrupted every {fmt_duration_h(1 / lam)} on average.",
            "strategy             expected ETTR   assumes",
        ]
        for r in self.summary.iter_rows(named=True):
            lines.append(
                f"  {r['strategy']:<18} {fmt_num(r['ettr'], 4, scale=1):>13}   {r['assumes']}"
            )
        best = self.summary.sort("ettr", descending=True, nulls_last=True).row(0, named=True)
        base = self.row("checkpoint_restart")["ettr"]
        if best["ettr"] is None or best["ettr"] < MEANINGFUL_ETTR:
            lines.append(
                f"No best strategy: every expected ETTR is below {fmt_num(MEANINGFUL_ETTR)} (the job "
                f"barely progresses, interrupted every {fmt_duration_h(1 / lam)}); the ranking means nothing."
            )
            return lines
        lines.append(
            f"Best: {best['strategy']} ({fmt_num(best['ettr'], 4, scale=1)} against {fmt_num(base, 4, scale=1)} "
            "for checkpoint-restart today)."
        )
        return lines


def _nodes(n: float) -> str:
    """Say a number of nodes: ``1 node``, ``2,048 nodes``, ``12.5 nodes``."""
    n = float(n)
    return fmt_count(int(n), "node") if n.is_integer() else f"{fmt_num(n)} nodes"


def _check_h(name: str, v: float, positive: bool = False) -> None:
    if not (isinstance(v, int | float) and math.isfinite(v) and (v > 0 if positive else v >= 0)):
        what = "> 0" if positive else ">= 0"
        raise ValueError(f"{name} must be a finite number of hours {what}, got {v!r}")


def compare_strategies(
    n_gpus: float,
    rate_per_node_day: float,
    ckpt_interval_h: float,
    restart_h: float,
    *,
    queue_h: float = 0.0,
    ckpt_write_h: float = 0.0,
    gpus_per_node: int = 8,
    spare_nodes: int | None = None,
    repair_h: float | None = None,
    target_no_wait: float = 0.99,
    pool_nodes: float | None = None,
    peer_ckpt_interval_h: float | None = None,
    peer_write_h: float | None = None,
    peer_restore_h: float | None = None,
    peer_copies: int = 1,
    replica_nodes: float = 1.0,
    heal_h: float | None = None,
    reconfig_h: float | None = None,
    elastic_slowdown: float = 0.0,
) -> StrategyComparison:
    """Compare checkpoint-restart, hot spares, peer checkpoints and elastic training.

    The closed forms are in the module doc (Kokolis et al., HPCA '25, §V for the ETTR model;
    Daly, FGCS 2006, Eq. 37 for the peer-checkpoint interval; M/G/∞ for the spares).

    Parameters
    ----------
    n_gpus : float
        Job size [GPUs], > 0.
    rate_per_node_day : float
        r_f [hardware failures per node-day], > 0.
    ckpt_interval_h : float
        Δt, today's checkpoint interval [h], > 0.
    restart_h : float
        u0, today's restart overhead (restore from persistent storage) [h].
    queue_h : float
        q, queue wait after an interruption [h] (measured: :func:`reliability.models.recovery.recovery_costs`).
    ckpt_write_h : float
        w, blocking write of today's checkpoint [h].
    gpus_per_node : int
        GPUs per node.
    spare_nodes : int or None
        Hot spares held; None: the fewest for ``target_no_wait``.
    repair_h : float or None
        R, mean time a failed node is out of service [h]; None: :data:`DEFAULT_REPAIR_H` (noted).
    target_no_wait : float
        Probability that an interruption finds a spare free, in (0, 1).
    pool_nodes : float or None
        Nodes the spares serve (default: the job's nodes).
    peer_ckpt_interval_h : float or None
        Δt' of peer checkpoints [h]; None: Daly's higher-order optimum for ``peer_write_h``.
    peer_write_h : float or None
        w', blocking copy to peers [h], > 0; None: :data:`DEFAULT_PEER_WRITE_S` (noted).
    peer_restore_h : float or None
        u0', restart from a peer's copy [h]; None: ``restart_h`` (conservative: only the write
        is cheaper).
    peer_copies : int
        Peers holding each copy, >= 1.
    replica_nodes : float
        Nodes per data-parallel replica of the elastic job, in (0, job's nodes].
    heal_h : float or None
        H, mean time a failed replica is out [h]; None: ``queue_h + restart_h``.
    reconfig_h : float or None
        c, pause of the whole elastic job per failure [h]; None:
        :data:`DEFAULT_ELASTIC_RECONFIG_S` (noted).
    elastic_slowdown : float
        σ, steady throughput cost of running elastically, in [0, 1).

    Returns
    -------
    StrategyComparison
        One row per strategy with its expected ETTR and what it assumes.
    """
    if not (math.isfinite(rate_per_node_day) and rate_per_node_day > 0):
        raise ValueError(
            f"rate_per_node_day must be a positive number of failures per node-day, got {rate_per_node_day!r}"
        )
    _check_h("ckpt_interval_h", ckpt_interval_h, positive=True)
    for name, v in (("restart_h", restart_h), ("queue_h", queue_h), ("ckpt_write_h", ckpt_write_h)):
        _check_h(name, v)
    lam = float(interruption_rate_per_h(n_gpus, rate_per_node_day, gpus_per_node))
    job = _Job(
        n_gpus=n_gpus,
        rate_per_node_day=rate_per_node_day,
        gpus_per_node=gpus_per_node,
        ckpt_interval_h=ckpt_interval_h,
        restart_h=restart_h,
        queue_h=queue_h,
        ckpt_write_h=ckpt_write_h,
        lam_per_h=lam,
        n_nodes=max(float(n_gpus) / gpus_per_node, 1.0),
        node_rate_h=rate_per_node_day / 24.0,
    )
    notes: list[str] = []
    rows = [_checkpoint_restart(job)]
    row, pool_rate = _hot_spares(job, spare_nodes, repair_h, target_no_wait, pool_nodes, notes)
    rows.append(row)
    row, replicas, peer_write_h, window = _peer_checkpoint(
        job, replica_nodes, peer_ckpt_interval_h, peer_write_h, peer_restore_h, peer_copies, notes
    )
    rows.append(row)
    notes.append(
        join_messages(
            f"checkpoint writes assumed: to storage "
            f"{fmt_duration_h(ckpt_write_h) if ckpt_write_h else '0'} (checkpoint-restart, hot "
            f"spares), to peers {fmt_duration_h(peer_write_h)} (peer checkpoints)",
            Hinted(
                "; a storage write of 0 favours checkpoint-restart and hot spares over peer "
                "checkpoints (give the measured storage write: ",
                Hint("ckpt_write_h"),
                ")",
            )
            if ckpt_write_h == 0
            else "",
        )
    )
    if queue_h > 0:
        notes.append(
            "peer checkpoints save the write and the lost work, not the queue wait for a replacement "
            "node: hot spares remove that wait, and the two combine"
        )
    row, rho = _elastic(job, replicas, replica_nodes, heal_h, reconfig_h, elastic_slowdown, notes)
    rows.append(row)
    summary = pl.DataFrame(rows, schema=_SCHEMA)
    params = dict(
        lam_per_h=lam,
        n_nodes=job.n_nodes,
        node_rate_per_h=job.node_rate_h,
        pool_rate_per_h=pool_rate,
        replica_rate_per_h=rho,
        peer_copies=int(peer_copies),
        peer_window_h=window,
        elastic_slowdown=elastic_slowdown,
        gpus_per_node=gpus_per_node,
    )
    return StrategyComparison(
        summary=summary,
        n_gpus=n_gpus,
        rate_per_node_day=float(rate_per_node_day),
        params=params,
        notes=notes,
    )


@dataclass(frozen=True)
class _Job:
    """The job and today's checkpointing, shared by every strategy's row."""

    n_gpus: float
    rate_per_node_day: float
    gpus_per_node: int
    ckpt_interval_h: float
    restart_h: float
    queue_h: float
    ckpt_write_h: float
    lam_per_h: float  # interruptions of the whole job [1/h]
    n_nodes: float
    node_rate_h: float  # failures per node [1/h]

    def renewal_ettr(self, queue_h: float) -> float:
        """E[ETTR] of checkpoint-restart with this queue wait per interruption (renewal form)."""
        return float(
            expected_ettr(
                self.n_gpus,
                self.rate_per_node_day,
                self.ckpt_interval_h,
                self.restart_h,
                queue_h=queue_h,
                ckpt_write_h=self.ckpt_write_h,
                gpus_per_node=self.gpus_per_node,
                variant="renewal",
            )
        )


def _checkpoint_restart(job: _Job) -> dict:
    """Today's strategy: the package's renewal E[ETTR]."""
    return {
        **dict.fromkeys(_SCHEMA),
        "strategy": "checkpoint_restart",
        "ettr": job.renewal_ettr(job.queue_h),
        "ckpt_interval_h": job.ckpt_interval_h,
        "ckpt_write_h": job.ckpt_write_h,
        "restart_h": job.restart_h,
        "queue_h": job.queue_h,
        "p_wait": 1.0,
        "spare_nodes": 0,
        "extra_nodes": 0,
        "assumes": f"today: checkpoint every {fmt_duration_h(job.ckpt_interval_h)}, every interruption "
        f"waits {fmt_duration_h(job.queue_h) if job.queue_h else 'nothing'} in the queue, restarts in "
        f"{fmt_duration_h(job.restart_h)}",
    }


def _hot_spares(
    job: _Job,
    spare_nodes: int | None,
    repair_h: float | None,
    target_no_wait: float,
    pool_nodes: float | None,
    notes: list[str],
) -> tuple[dict, float]:
    """Hot spares (M/G/∞ count of nodes in repair): the row and the pool's failure rate [1/h]."""
    if repair_h is None:
        repair_h = DEFAULT_REPAIR_H
        notes.append(
            Hinted(
                f"node repair time not given: {DEFAULT_REPAIR_H:g} h assumed for the spares (",
                Hint("repair_h"),
                ", or measure it from node states with recovery_costs)",
            )
        )
    _check_h("repair_h", repair_h, positive=True)
    pool = job.n_nodes if pool_nodes is None else float(pool_nodes)
    if not (math.isfinite(pool) and pool >= job.n_nodes):
        raise ValueError(
            f"pool_nodes must be at least the job's {job.n_nodes:g} nodes, got {pool_nodes!r}"
        )
    pool_rate = pool * job.node_rate_h
    mu = pool_rate * repair_h
    if spare_nodes is None:
        s = spares_needed(pool_rate, repair_h, target_no_wait)
        why = f"the fewest for P(no wait) >= {target_no_wait:g}"
    else:
        if int(spare_nodes) != spare_nodes or spare_nodes < 0:
            raise ValueError(f"spare_nodes must be a whole number >= 0, got {spare_nodes!r}")
        s, why = int(spare_nodes), "given"
    p_wait = float(stats.poisson.sf(s - 1, mu)) if s > 0 else 1.0
    row = {
        **dict.fromkeys(_SCHEMA),
        "strategy": "hot_spares",
        "ettr": job.renewal_ettr(p_wait * job.queue_h),
        "ckpt_interval_h": job.ckpt_interval_h,
        "ckpt_write_h": job.ckpt_write_h,
        "restart_h": job.restart_h,
        "queue_h": job.queue_h,
        "spare_nodes": s,
        "p_wait": p_wait,
        "repair_h": repair_h,
        "extra_nodes": s,
        "assumes": f"{fmt_count(s, 'spare node')} ({why}) for {_nodes(pool)} repaired in {fmt_duration_h(repair_h)} "
        f"on average: an interruption waits in the queue with probability {fmt_pct(p_wait, 3)}",
    }
    if s > job.n_nodes:
        notes.append(
            f"hot spares: {fmt_count(s, 'spare node')} needed, more than the job's own {_nodes(job.n_nodes)}: "
            f"nodes repaired in {fmt_duration_h(repair_h)} on average are out so long that spares are no "
            "remedy (check the repair time)"
        )
    if job.queue_h == 0:
        notes.append(
            "no queue wait after interruptions: hot spares change nothing (they save only the wait)"
        )
    return row, pool_rate


def _replicas(job: _Job, replica_nodes: float, notes: list[str]) -> float:
    """Whole data-parallel replicas of ``replica_nodes`` in the job (a fraction does not train)."""
    if not (math.isfinite(replica_nodes) and 0 < replica_nodes <= job.n_nodes):
        raise ValueError(
            f"replica_nodes must be in (0, {job.n_nodes:g}] (the job's nodes), got {replica_nodes!r}"
        )
    replicas = float(math.floor(job.n_nodes / replica_nodes + 1e-9))
    if abs(replicas * replica_nodes - job.n_nodes) > 1e-9 * job.n_nodes:
        notes.append(
            f"elastic: the job's {fmt_num(job.n_nodes)} nodes are not a whole number of replicas of "
            f"{fmt_num(float(replica_nodes))} node(s): {fmt_num(replicas)} replicas assumed (the rest idle)"
        )
    return replicas


def _peer_checkpoint(
    job: _Job,
    replica_nodes: float,
    peer_ckpt_interval_h: float | None,
    peer_write_h: float | None,
    peer_restore_h: float | None,
    peer_copies: int,
    notes: list[str],
) -> tuple[dict, float, float, float]:
    """Peer (in-memory) checkpoints, storage as the fallback.

    Returns the row, the job's whole replicas, w' [h] and the window q + u0' [h] in which the
    peers holding the copy must not fail too.
    """
    if peer_write_h is None:
        peer_write_h = DEFAULT_PEER_WRITE_S / 3600.0
        notes.append(
            Hinted(
                f"peer checkpoint write not given: {DEFAULT_PEER_WRITE_S:g} s assumed (",
                Hint("peer_write_h"),
                ")",
            )
        )
    _check_h("peer_write_h", peer_write_h, positive=True)
    u_peer = job.restart_h if peer_restore_h is None else peer_restore_h
    _check_h("peer_restore_h", u_peer)
    if int(peer_copies) != peer_copies or peer_copies < 1:
        raise ValueError(f"peer_copies must be a whole number >= 1, got {peer_copies!r}")
    replicas = _replicas(job, replica_nodes, notes)
    if replicas >= 2 and peer_copies >= replicas:
        raise ValueError(
            f"peer_copies must be fewer than the job's {replicas:g} replicas (the peers are other "
            f"replicas' nodes), got {peer_copies!r}"
        )
    if peer_ckpt_interval_h is None:
        dt_peer = daly_interval_h(peer_write_h, 1.0 / job.lam_per_h, u_peer, order="higher")
        how = "Daly's optimum"
    else:
        _check_h("peer_ckpt_interval_h", peer_ckpt_interval_h, positive=True)
        dt_peer, how = float(peer_ckpt_interval_h), "given"
    window = job.queue_h + u_peer
    p_fb = float((-math.expm1(-job.node_rate_h * window)) ** peer_copies)
    pc: float | None = mixed_restart_ettr(
        job.lam_per_h,
        dt_peer,
        peer_write_h,
        (u_peer, job.restart_h),
        (1.0 - p_fb, p_fb),
        job.queue_h,
    )
    if replicas < 2:  # the copies live on other replicas' nodes: one replica has no peer
        pc = None
        notes.append(
            "peer checkpoints do not apply: a job of one replica has no peer to hold its copy"
        )
    row = {
        **dict.fromkeys(_SCHEMA),
        "strategy": "peer_checkpoint",
        "ettr": pc,
        "ckpt_interval_h": dt_peer,
        "ckpt_write_h": peer_write_h,
        "restart_h": u_peer,
        "queue_h": job.queue_h,
        "p_wait": 1.0,
        "fallback_prob": p_fb,
        "spare_nodes": 0,
        "extra_nodes": 0,
        "assumes": (
            f"copies to {fmt_count(int(peer_copies), 'peer')} in {fmt_duration_h(peer_write_h)} every "
            f"{fmt_duration_h(dt_peer)} ({how}), restore from a peer in {fmt_duration_h(u_peer)}; "
            f"from storage ({fmt_duration_h(job.restart_h)}) when the peers fail too "
            f"(probability {fmt_pct(p_fb, 3)})"
            if replicas >= 2
            else f"does not apply: one replica of {_nodes(replica_nodes)}, no peer"
        ),
    }
    return row, replicas, peer_write_h, window


def _elastic(
    job: _Job,
    replicas: float,
    replica_nodes: float,
    heal_h: float | None,
    reconfig_h: float | None,
    elastic_slowdown: float,
    notes: list[str],
) -> tuple[dict, float]:
    """Elastic training (a failed replica is out while the others continue): the row and ρ [1/h]."""
    if reconfig_h is None:
        reconfig_h = DEFAULT_ELASTIC_RECONFIG_S / 3600.0
        notes.append(
            Hinted(
                f"elastic reconfiguration pause not given: {DEFAULT_ELASTIC_RECONFIG_S:g} s per "
                "failure assumed (",
                Hint("reconfig_h"),
                ")",
            )
        )
    _check_h("reconfig_h", reconfig_h)
    heal = job.queue_h + job.restart_h if heal_h is None else heal_h
    _check_h("heal_h", heal)
    if not 0.0 <= elastic_slowdown < 1.0:
        raise ValueError(f"elastic_slowdown must be in [0, 1), got {elastic_slowdown!r}")
    rho = replica_nodes * job.node_rate_h
    down = rho * heal / (1.0 + rho * heal)
    nu = job.lam_per_h / (1.0 + rho * heal)
    el_raw = (1.0 - elastic_slowdown) * (1.0 - down - reconfig_h * nu)
    el: float | None = max(0.0, el_raw)
    if replicas < 2:
        el = None
        notes.append(
            "elastic does not apply: a job of one replica cannot continue on fewer replicas"
        )
    elif el_raw < 0:
        notes.append("elastic: the reconfiguration pauses take all the time: ETTR 0")
    row = {
        **dict.fromkeys(_SCHEMA),
        "strategy": "elastic",
        "ettr": el,
        "queue_h": job.queue_h,
        "restart_h": job.restart_h,
        "p_wait": 0.0,
        "replicas": replicas,
        "heal_h": heal,
        "reconfig_h": reconfig_h,
        "spare_nodes": 0,
        "extra_nodes": 0,
        "assumes": (
            f"{fmt_count(int(replicas), 'replica')} of {_nodes(replica_nodes)}: a failed replica "
            f"is out {fmt_duration_h(heal)} while the others continue, "
            f"{fmt_duration_h(reconfig_h)} pause per failure"
            + (f", {fmt_pct(elastic_slowdown)} slower throughput" if elastic_slowdown else "")
            if replicas >= 2
            else f"does not apply: one replica of {_nodes(replica_nodes)}"
        ),
    }
    return row, rho
