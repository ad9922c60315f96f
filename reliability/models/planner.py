"""Checkpoint planner: what checkpoint interval and restart overhead reach a target ETTR.

Built on :func:`reliability.models.expected_ettr` (HPCA'25 §V and Fig. 10). For a job of N GPUs
at failure rate r_f it gives

- the *frontier*: for each restart overhead u0, the range of checkpoint intervals Δt whose
  expected ETTR reaches the target (with non-blocking checkpoints any shorter interval also
  works, so only the longest matters; with a blocking write w, intervals that are too short
  lose to the writes and the range has a lower end too);
- the *equal-cost point*: the Δt = u0 at which the target is just reached (the paper's
  "100k GPUs need checkpoint and restart of about 2 minutes");
- the *recommendation* for given costs: the longest interval that still reaches the target
  (non-blocking), or the ETTR-optimal interval (blocking writes, :func:`optimal_interval_h`);
- the ETTR grid over job size and Δt (Fig. 10).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import polars as pl
from scipy import optimize

from reliability.models.checkpoint import optimal_interval_h
from reliability.models.ettr import expected_ettr
from reliability.models.mttf import mttf_h

__all__ = ["PlanResult", "plan"]

_MIN_H = 1.0 / 3600.0  # one second
_MAX_H = 24.0 * 7


@dataclass
class PlanResult:
    """Answer of :func:`plan`; ``frontier`` and ``grid`` are tidy frames."""

    n_gpus: int
    rate_per_node_day: float
    target_ettr: float
    variant: str
    mttf_h: float
    equal_cost_h: float | None
    restart_h: float | None
    recommended_interval_h: float | None
    ettr_at_recommended: float | None
    frontier: pl.DataFrame
    grid: pl.DataFrame
    ckpt_write_h: float = 0.0
    queue_h: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def summary(self) -> pl.DataFrame:
        return pl.DataFrame({
            "n_gpus": [self.n_gpus], "rate_per_node_day": [self.rate_per_node_day],
            "target_ettr": [self.target_ettr], "mttf_h": [self.mttf_h],
            "equal_cost_min": [None if self.equal_cost_h is None else 60 * self.equal_cost_h],
            "restart_min": [None if self.restart_h is None else 60 * self.restart_h],
            "recommended_interval_min": [None if self.recommended_interval_h is None else 60 * self.recommended_interval_h],
            "ettr_at_recommended": [self.ettr_at_recommended], "variant": [self.variant],
        })  # fmt: skip

    def __str__(self) -> str:
        lines = [
            f"A job on {self.n_gpus:,} GPUs at {1000 * self.rate_per_node_day:.2f} failures per 1000 node-days "
            f"is interrupted every {_fmt_h(self.mttf_h)} on average (MTTF = 1/(N r_f))."
        ]
        if self.equal_cost_h is None:
            lines.append(
                f"No checkpoint interval equal to the restart overhead reaches ETTR {self.target_ettr:.2f} at this "
                "size; the table below shows what does, if anything."
            )
        else:
            lines.append(
                f"To reach ETTR {self.target_ettr:.2f}, checkpointing and restarting must each take at most about "
                f"{_fmt_h(self.equal_cost_h)} (when the two are equal)."
            )
        if self.restart_h is not None:
            if self.recommended_interval_h is None:
                lines.append(
                    f"With a restart overhead of {_fmt_h(self.restart_h)} the target cannot be reached."
                )
            else:
                how = (
                    "at least every"
                    if self.ckpt_write_h == 0
                    else "every (the ETTR-optimal interval)"
                )
                lines.append(
                    f"With a restart overhead of {_fmt_h(self.restart_h)}, checkpoint {how} "
                    f"{_fmt_h(self.recommended_interval_h)}: expected ETTR {self.ettr_at_recommended:.3f}."
                )
        lines.append("")
        lines.append("restart overhead   longest checkpoint interval reaching the target")
        for row in self.frontier.iter_rows(named=True):
            hi = row["max_interval_min"]
            lines.append(
                f"  {row['restart_min']:8.1f} min     "
                + ("unreachable" if hi is None else f"{hi:8.1f} min")
            )
        lines.append(
            f"(expected ETTR, variant {self.variant!r}; writes {60 * self.ckpt_write_h:.1f} min, queue after interruption {60 * self.queue_h:.1f} min)"
        )
        lines += self.notes
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return "<pre>" + str(self).replace("&", "&amp;").replace("<", "&lt;") + "</pre>"


def _fmt_h(h: float) -> str:
    if h < 1.0 / 60.0:
        return f"{3600 * h:.0f} s"
    if h < 2.0:
        return f"{60 * h:.1f} min"
    return f"{h:.1f} h"


def plan(
    n_gpus: int,
    rate_per_node_day: float,
    target_ettr: float,
    *,
    restart_h: float | None = None,
    ckpt_write_h: float = 0.0,
    queue_h: float = 0.0,
    gpus_per_node: int = 8,
    variant: str = "renewal",
    restart_grid_min: list[float] | None = None,
    grid_gpus: list[int] | None = None,
    grid_interval_min: list[float] | None = None,
) -> PlanResult:
    """Plan checkpointing for a job of ``n_gpus`` GPUs to reach ``target_ettr`` (see module doc).

    ``variant`` is the :func:`expected_ettr` form (default ``"renewal"``, exact for Poisson
    failures; ``"simplified"`` is the paper's ``1 − N r_f (u0 + Δt/2)``).
    """
    if not 0.0 < target_ettr < 1.0:
        raise ValueError(f"target_ettr must be in (0, 1), got {target_ettr}")
    if n_gpus < 1 or rate_per_node_day <= 0:
        raise ValueError("n_gpus must be >= 1 and rate_per_node_day > 0")

    def ettr(dt_h, u0_h):
        return float(
            expected_ettr(
                n_gpus,
                rate_per_node_day,
                dt_h,
                u0_h,
                queue_h=queue_h,
                ckpt_write_h=ckpt_write_h,
                gpus_per_node=gpus_per_node,
                variant=variant,
                check=False,
            )
        )

    def interval_range(u0_h: float) -> tuple[float | None, float | None, float, float]:
        """(shortest, longest) interval reaching the target (None: unreachable), and the
        ETTR-optimal interval with its ETTR."""
        if ckpt_write_h > 0:
            best, top = optimal_interval_h(
                n_gpus, rate_per_node_day, u0_h, ckpt_write_h=ckpt_write_h, queue_h=queue_h,
                gpus_per_node=gpus_per_node, variant=variant,
            )  # fmt: skip
        else:
            best, top = _MIN_H, ettr(_MIN_H, u0_h)
        if not np.isfinite(top) or top < target_ettr:
            return None, None, best, top
        f = lambda lg: ettr(math.exp(lg), u0_h) - target_ettr  # noqa: E731
        lo_lg, hi_lg = math.log(best), math.log(_MAX_H)
        hi = _MAX_H if f(hi_lg) >= 0 else math.exp(optimize.brentq(f, lo_lg, hi_lg, xtol=1e-9))
        lo = None
        if ckpt_write_h > 0:
            m_lg = math.log(_MIN_H)
            lo = _MIN_H if f(m_lg) >= 0 else math.exp(optimize.brentq(f, m_lg, lo_lg, xtol=1e-9))
        return lo, hi, best, top

    grid_min = restart_grid_min or [0.5, 1, 2, 3, 5, 10, 15, 30]
    rows = []
    for u in grid_min:
        lo, hi, _, _ = interval_range(u / 60.0)
        rows.append({"restart_min": float(u), "min_interval_min": None if lo is None else 60 * lo,
                     "max_interval_min": None if hi is None else 60 * hi})  # fmt: skip
    frontier = pl.DataFrame(
        rows,
        schema={
            "restart_min": pl.Float64,
            "min_interval_min": pl.Float64,
            "max_interval_min": pl.Float64,
        },
    )

    # equal-cost point: the largest x with ETTR(Δt = x, u0 = x) >= target
    g = lambda lg: ettr(math.exp(lg), math.exp(lg)) - target_ettr  # noqa: E731
    lo_lg = math.log(max(_MIN_H, 2 * ckpt_write_h) if ckpt_write_h > 0 else _MIN_H)
    if g(lo_lg) < 0:
        equal = None
    else:
        hi_lg = math.log(_MAX_H)
        equal = _MAX_H if g(hi_lg) >= 0 else math.exp(optimize.brentq(g, lo_lg, hi_lg, xtol=1e-9))

    rec = rec_ettr = None
    if restart_h is not None:
        _, hi, best, top = interval_range(restart_h)
        if hi is not None:
            # blocking writes: the ETTR-optimal interval; non-blocking: the longest that reaches the target
            rec, rec_ettr = (best, top) if ckpt_write_h > 0 else (hi, ettr(hi, restart_h))

    gg = grid_gpus or [1024, 4096, 16384, 32768, 65536, 131072]
    gi = grid_interval_min or [5, 15, 30, 60, 120]
    u_grid = restart_h if restart_h is not None else 5.0 / 60.0
    grid = pl.DataFrame(
        [
            {"n_gpus": n, "interval_min": float(d), "restart_min": 60 * u_grid,
             "ettr": max(0.0, float(expected_ettr(n, rate_per_node_day, d / 60.0, u_grid, queue_h=queue_h,
                                                  ckpt_write_h=ckpt_write_h, gpus_per_node=gpus_per_node,
                                                  variant=variant, check=False)))}
            for n in gg for d in gi
        ]
    )  # fmt: skip
    notes = []
    if variant != "renewal":
        notes.append(
            "note: linearised forms are accurate to ~x^2/2 with x = N r_f (u0 + Δt/2); 'renewal' is exact"
        )
    return PlanResult(
        n_gpus=n_gpus, rate_per_node_day=rate_per_node_day, target_ettr=target_ettr, variant=variant,
        mttf_h=float(mttf_h(n_gpus, rate_per_node_day, gpus_per_node)), equal_cost_h=equal,
        restart_h=restart_h, recommended_interval_h=rec, ettr_at_recommended=rec_ettr,
        frontier=frontier, grid=grid, ckpt_write_h=ckpt_write_h, queue_h=queue_h, notes=notes,
    )  # fmt: skip
