"""Checkpoint interval: Young, Daly (first order, higher order, exact) and the numerical optimum.

Notation (Daly, FGCS 22(3) 2006): δ = time to write a checkpoint, M = mean time to interrupt
(MTTF of the job), R = restart time. All times in hours.

- Young (1974): ``τ = √(2δM)``.
- Daly first order (Daly 2006 Eq. 27): ``τ = √(2δ(M + R))``.
- Daly higher order (Daly 2006 Eq. 37): ``τ = √(2δM)·[1 + ⅓√(δ/2M) + (1/9)(δ/2M)] − δ`` for
  ``δ < 2M``, else ``τ = M``.
- Exact optimum of Daly's model: the wall time ``M e^{R/M} (e^{(τ+δ)/M} − 1) T/τ`` is minimal
  where ``e^{(τ+δ)/M}(1 − τ/M) = 1``, i.e. ``τ = M·[1 + W0(−e^{−(δ/M + 1)})]`` (W0: principal
  branch of Lambert W). It does not depend on R.

:func:`optimal_interval_h` maximises the expected ETTR of :mod:`reliability.models.recovery.ettr`
numerically, so it also accounts for queue wait after each interruption.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from scipy import optimize, special

__all__ = ["daly_interval_h", "optimal_interval_h", "young_interval_h"]


def _check(ckpt_write_h: float, mttf_h: float, restart_h: float = 0.0) -> None:
    if not (ckpt_write_h > 0 and math.isfinite(ckpt_write_h)):
        raise ValueError(f"ckpt_write_h must be a positive number of hours, got {ckpt_write_h!r}")
    if not (mttf_h > 0 and math.isfinite(mttf_h)):
        # an infinite MTTF (no failures seen) has no finite optimum: say so rather than print inf
        raise ValueError(f"mttf_h must be a positive, finite number of hours, got {mttf_h!r}")
    if not (restart_h >= 0 and math.isfinite(restart_h)):
        raise ValueError(f"restart_h must be a finite number of hours >= 0, got {restart_h!r}")


def young_interval_h(ckpt_write_h: float, mttf_h: float) -> float:
    """Young's (1974) first-order optimum checkpoint interval: ``τ = √(2δM)``.

    Parameters
    ----------
    ckpt_write_h : float
        δ, time to write a checkpoint [h], > 0.
    mttf_h : float
        M, mean time to interrupt of the job [h], > 0 and finite.

    Returns
    -------
    float
        τ, compute time between checkpoints [h].
    """
    _check(ckpt_write_h, mttf_h)
    return math.sqrt(2.0 * ckpt_write_h * mttf_h)


def daly_interval_h(
    ckpt_write_h: float,
    mttf_h: float,
    restart_h: float = 0.0,
    *,
    order: Literal["first", "higher", "exact"] = "higher",
) -> float:
    """Daly's (FGCS 22(3), 2006) optimum checkpoint interval.

    Parameters
    ----------
    ckpt_write_h : float
        δ, time to write a checkpoint [h], > 0.
    mttf_h : float
        M, mean time to interrupt of the job [h], > 0 and finite.
    restart_h : float
        R, restart time [h], >= 0 (only the first-order form uses it).
    order : {"first", "higher", "exact"}
        ``"first"``: ``√(2δ(M+R))`` (Eq. 27); ``"higher"``: the perturbation series (Eq. 37),
        valid for ``δ < 2M`` (M otherwise, as Daly does); ``"exact"``: the Lambert-W optimum of
        Daly's model, ``M·[1 + W0(−e^{−(δ/M + 1)})]``. The series converges to the exact value
        as δ/M → 0.

    Returns
    -------
    float
        τ, compute time between checkpoints [h].
    """
    _check(ckpt_write_h, mttf_h, restart_h)
    d, m = ckpt_write_h, mttf_h
    if order == "first":
        return math.sqrt(2.0 * d * (m + restart_h))
    if order == "higher":
        if d >= 2.0 * m:
            return m
        x = d / (2.0 * m)
        return math.sqrt(2.0 * d * m) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - d
    if order == "exact":
        w = special.lambertw(-math.exp(-(d / m + 1.0)), k=0).real
        return m * (1.0 + w)
    raise ValueError(f"order must be 'first', 'higher' or 'exact', got {order!r}")


def optimal_interval_h(
    n_gpus: float,
    rate_per_node_day: float,
    restart_h: float,
    *,
    ckpt_write_h: float = 0.0,
    queue_h: float = 0.0,
    gpus_per_node: int = 8,
    variant: str = "renewal",
    bounds_h: tuple[float, float] = (1.0 / 3600.0, 24.0 * 7),
) -> tuple[float, float]:
    """Find the checkpoint interval that maximises expected ETTR, and that ETTR.

    Kokolis et al., HPCA '25, §V (the ETTR model of :func:`reliability.models.recovery.ettr.expected_ettr`),
    maximised numerically over the interval.

    Parameters
    ----------
    n_gpus : float
        Job size [GPUs].
    rate_per_node_day : float
        r_f [failures per node-day].
    restart_h : float
        u0, restart overhead after each interruption [h].
    ckpt_write_h : float
        w, blocking checkpoint write time [h]. With no write cost the optimum of a non-blocking
        checkpoint is "as often as possible": the lower bound is returned.
    queue_h : float
        q, queue wait after each interruption [h].
    gpus_per_node : int
        GPUs per node.
    variant : str
        The :func:`reliability.models.recovery.ettr.expected_ettr` form (default the exact renewal form,
        which includes write cost and queue wait).
    bounds_h : (float, float)
        Search range of the interval [h], ``0 < low < high``.

    Returns
    -------
    (float, float)
        The interval [h] and its expected ETTR.
    """
    from reliability.models.recovery.ettr import expected_ettr

    lo_h, hi_h = bounds_h
    if not (0 < lo_h < hi_h and math.isfinite(hi_h)):
        raise ValueError(
            f"bounds_h must be (low, high) hours with 0 < low < high, got {bounds_h!r}"
        )
    # validate the numbers once (the exact form accepts every input; inner evaluations skip it)
    expected_ettr(
        n_gpus,
        rate_per_node_day,
        hi_h,
        restart_h,
        queue_h=queue_h,
        ckpt_write_h=ckpt_write_h,
        gpus_per_node=gpus_per_node,
        variant="renewal",
    )

    def neg(log_dt: float) -> float:
        v = expected_ettr(
            n_gpus,
            rate_per_node_day,
            float(np.exp(log_dt)),
            restart_h,
            queue_h=queue_h,
            ckpt_write_h=ckpt_write_h,
            gpus_per_node=gpus_per_node,
            variant=variant,
            check=False,
        )
        return -float(v)

    lo, hi = math.log(bounds_h[0]), math.log(bounds_h[1])
    if ckpt_write_h <= 0:
        return bounds_h[0], -neg(lo)
    res = optimize.minimize_scalar(neg, bounds=(lo, hi), method="bounded", options={"xatol": 1e-6})
    return float(np.exp(res.x)), -float(res.fun)
