"""Expected ETTR (effective training time ratio) of a job in closed form.

ETTR = productive runtime / wall-clock time of a job run, queue time included (Kokolis et al.,
HPCA'25 §V). A job on N nodes is interrupted at rate ``λ = N · r_f`` (per hour:
``N · r_f / 24`` with r_f per node-day). Each interruption costs the work since the last
checkpoint (on average Δt/2), a restart overhead u0 and, if it goes back to the queue, a wait q.

Variants (``variant=``), each in the form its source gives it:

``"simplified"``
    ``1 − λ(u0 + Δt/2)``: long, high-priority jobs, non-blocking checkpoints (HPCA'25 arXiv v1,
    Eq. 2). Uses no queue wait and no write cost.
``"queue"``
    ``(1 − λ(u0 + Δt/2)) / (1 + λq)``: a queue wait q after each interruption, long-job limit
    (HPCA'25 §V, the general expression with queue time).
``"hpca"``
    ``(1 − λ(u0 + Δt/2)) / (1 + w/Δt)``: blocking checkpoint writes of w (HPCA'25 camera-ready).
``"finite"``
    ``W / (q0 + W(1 + w/Δt)(1 + λ(u0 + (Δt + w)/2 + q)))``: a job of W productive hours that first
    waits q0, first order in λ (the expected number of interruptions over its running time times
    the cost of each).
``"renewal"``
    Exact expectation for Poisson interruptions of the timeline :func:`simulate_ettr` simulates
    (a renewal argument per checkpoint segment, Daly 2006 §3): ``Δt / A(Δt + w)`` for long jobs,
    and the sum over the job's segments when ``job_h`` is given. Valid for any λ.

The linearised variants are first order in ``x = λ·(cost of one interruption)``, i.e.
``λ(u0 + Δt/2)`` plus q and w/2 where the variant models them; against the exact value their
relative error is about ``x²/2`` (5% at x ≈ 0.3). :func:`expected_ettr` warns above
:data:`LINEAR_WARN_X` and refuses at ``x ≥ 1``, where the linear form goes negative.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from reliability.errors import Hint, Hinted

__all__ = [
    "LINEAR_WARN_X",
    "VARIANTS",
    "ETTRApproximationWarning",
    "expected_ettr",
    "interruption_rate_per_h",
]

VARIANTS = ("simplified", "queue", "hpca", "finite", "renewal")
#: warn when λ(u0 + Δt/2) exceeds this for a linearised variant (error above ~5%)
LINEAR_WARN_X = 0.3
_USES = {
    "simplified": set(),
    "queue": {"queue_h"},
    "hpca": {"ckpt_write_h"},
    "finite": {"queue_h", "ckpt_write_h", "job_h", "initial_queue_h"},
    "renewal": {"queue_h", "ckpt_write_h", "job_h", "initial_queue_h"},
}


class ETTRApproximationWarning(UserWarning):
    """A linearised ETTR form is used outside the range where it is accurate."""


def interruption_rate_per_h(
    n_gpus: float | np.ndarray, rate_per_node_day: float, gpus_per_node: int = 8
) -> np.ndarray:
    """Interruption rate of a job: ``λ = N_nodes · r_f / 24`` (Kokolis et al. HPCA'25 §V).

    Parameters
    ----------
    n_gpus : float or array
        Job size [GPUs], > 0; a job smaller than a node counts as one node.
    rate_per_node_day : float
        r_f [failures per node-day], >= 0.
    gpus_per_node : int
        GPUs per node, >= 1.

    Returns
    -------
    numpy.ndarray
        λ [interruptions per hour], shaped like ``n_gpus``.
    """
    gpus = np.asarray(n_gpus, dtype=float)
    if not np.all(np.isfinite(gpus) & (gpus > 0)):
        raise ValueError(f"n_gpus must be positive, got {n_gpus!r}")
    if not (math.isfinite(rate_per_node_day) and rate_per_node_day >= 0):
        raise ValueError(
            f"rate_per_node_day must be a finite number >= 0, got {rate_per_node_day!r}"
        )
    if int(gpus_per_node) != gpus_per_node or gpus_per_node < 1:
        raise ValueError(f"gpus_per_node must be a whole number >= 1, got {gpus_per_node!r}")
    nodes = np.maximum(gpus / gpus_per_node, 1.0)
    return nodes * rate_per_node_day / 24.0


def _segment_time(lam: np.ndarray, s: np.ndarray, u0: float, q: float) -> np.ndarray:
    """Return the expected wall time to commit a segment of ``s`` hours started right after a commit.

    Failures at rate λ during running time; each failure costs a wait q, then the restart u0
    and the whole segment again (both exposed to failures). With f(L) = (1 − e^{−λL})/λ the mean
    time until failure-or-L and p(L) = e^{−λL}:
    ``B = (f(u0+s) + (1 − p(u0+s)) q) / p(u0+s)``, ``A = f(s) + (1 − p(s))(q + B)``.
    """
    lam = np.maximum(lam, 1e-300)
    with np.errstate(all="ignore"):  # hopeless jobs overflow: their expected time is +inf
        p_s = np.exp(-lam * s)
        f_s = -np.expm1(-lam * s) / lam
        # B = f(u0+s)/p + (1/p − 1) q with 1/p = e^{λ(u0+s)}
        inv_p = np.exp(lam * (u0 + s))
        b = -np.expm1(-lam * (u0 + s)) / lam * inv_p + np.expm1(lam * (u0 + s)) * q
        a = f_s + (1.0 - p_s) * (q + b)
    return np.where(np.isnan(a), np.inf, a)


def _renewal(lam, dt, u0, q, w, job_h, q0):
    if job_h is None:
        return dt / _segment_time(lam, np.asarray(dt + w, dtype=float), u0, q)
    n_full = math.floor(job_h / dt + 1e-12)
    rest = job_h - n_full * dt
    if rest <= 1e-12:  # the last full segment needs no checkpoint write
        n_written, last = n_full - 1, dt
    else:
        n_written, last = n_full, rest
    wall = (
        q0
        + n_written * _segment_time(lam, np.asarray(dt + w, dtype=float), u0, q)
        + _segment_time(lam, np.asarray(last, dtype=float), u0, q)
    )
    return job_h / wall


def expected_ettr(
    n_gpus: float | np.ndarray,
    rate_per_node_day: float,
    ckpt_interval_h: float | np.ndarray,
    restart_h: float,
    *,
    queue_h: float = 0.0,
    ckpt_write_h: float = 0.0,
    gpus_per_node: int = 8,
    variant: str = "simplified",
    job_h: float | None = None,
    initial_queue_h: float = 0.0,
    check: bool = True,
) -> np.ndarray:
    """Compute the expected ETTR of a job (Kokolis et al., HPCA '25, §V).

    The variants are described in the module docstring.

    Parameters
    ----------
    n_gpus : float or array
        Job size [GPUs]; broadcasts with ``ckpt_interval_h``.
    rate_per_node_day : float
        r_f [hardware interruptions per node-day].
    ckpt_interval_h : float or array
        Δt, compute time between checkpoints [h].
    restart_h : float
        u0, restart overhead after each interruption [h].
    queue_h : float
        q, queue wait after each interruption [h] (variants queue, finite, renewal).
    ckpt_write_h : float
        w, blocking checkpoint write time [h] (variants hpca, finite, renewal).
    gpus_per_node : int
        GPUs per node.
    variant : str
        One of :data:`VARIANTS`.
    job_h : float or None
        W, productive hours the job needs (finite: required; renewal: None = long-job limit).
    initial_queue_h : float
        q0, the wait before the first start [h] (finite, renewal with job_h).
    check : bool
        Validate the inputs and the linearisation's range (raise / warn). Inner loops that
        validated once may pass False.

    Returns
    -------
    numpy.ndarray
        Expected ETTR, in [0, 1] for the renewal form (0 for a job that cannot progress).

    Raises
    ------
    ValueError
        An unknown variant, an input the variant does not use, a negative or non-finite input,
        or (linear variants) ``λ(u0 + Δt/2) ≥ 1``. Warns :class:`ETTRApproximationWarning` above
        :data:`LINEAR_WARN_X`.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    given = {
        "queue_h": queue_h != 0,
        "ckpt_write_h": ckpt_write_h != 0,
        "job_h": job_h is not None,
        "initial_queue_h": initial_queue_h != 0,
    }
    unused = sorted(k for k, v in given.items() if v and k not in _USES[variant])
    if unused:
        users = [v for v in VARIANTS if set(unused) <= _USES[v]]
        raise ValueError(
            f"variant {variant!r} does not model {', '.join(unused)}; use one of {users}"
        )
    if variant == "finite" and job_h is None:
        raise ValueError("variant 'finite' needs job_h (the productive hours the job needs)")
    dt = np.asarray(ckpt_interval_h, dtype=float)
    if check:
        if not np.all(np.isfinite(dt) & (dt > 0)):
            raise ValueError(
                f"ckpt_interval_h must be positive and finite, got {ckpt_interval_h!r}"
            )
        for name, v in (
            ("restart_h", restart_h),
            ("queue_h", queue_h),
            ("ckpt_write_h", ckpt_write_h),
            ("initial_queue_h", initial_queue_h),
        ):
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be a finite number of hours >= 0, got {v!r}")
        if job_h is not None and not (math.isfinite(job_h) and job_h > 0):
            raise ValueError(f"job_h must be a positive, finite number of hours, got {job_h!r}")
    lam = interruption_rate_per_h(n_gpus, rate_per_node_day, gpus_per_node)
    u0, q, w = restart_h, queue_h, ckpt_write_h
    if variant == "renewal":
        return np.asarray(_renewal(lam, dt, u0, q, w, job_h, initial_queue_h))
    x = lam * (u0 + dt / 2.0)
    cost = u0 + dt / 2.0 + (q if "queue_h" in _USES[variant] else 0.0)
    cost = cost + (w / 2.0 if "ckpt_write_h" in _USES[variant] else 0.0)
    if check:
        worst = float(np.max(lam * cost))
        if worst >= 1.0:
            raise ValueError(
                Hinted(
                    f"the linearised {variant!r} form does not hold: N·r_f·(u0 + Δt/2 + ...) = "
                    f"{worst:.2f} >= 1 (the job is interrupted more often than it can make "
                    "progress); use ",
                    Hint("variant", "renewal", action=False),
                )
            )
        if worst > LINEAR_WARN_X:
            warnings.warn(
                Hinted(
                    f"N·r_f·(u0 + Δt/2 + ...) = {worst:.2f} > {LINEAR_WARN_X}: the linearised "
                    f"{variant!r} form is off by about {100 * worst**2 / 2:.0f}%; ",
                    Hint("variant", "renewal", action=False),
                    " is exact for Poisson failures",
                ),
                ETTRApproximationWarning,
                stacklevel=2,
            )
    if variant == "simplified":
        return 1.0 - x
    if variant == "queue":
        return (1.0 - x) / (1.0 + lam * q)
    if variant == "hpca":
        return (1.0 - x) / (1.0 + w / dt)
    # finite
    running = job_h * (1.0 + w / dt)
    cost = u0 + (dt + w) / 2.0 + q
    return job_h / (initial_queue_h + running * (1.0 + lam * cost))
