"""Checkpoint planner: what checkpoint interval and restart overhead reach a target ETTR.

Built on :func:`reliability.models.recovery.expected_ettr` (HPCA'25 §V and Fig. 10). For a job of N GPUs
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

The rate: given a fit (:class:`~reliability.models.failures.MTTFResult` or
:class:`~reliability.models.failures.RateSeries`), the planner shows the window average and the last
:data:`~reliability.models.failures.mttf.RECENT_WEEKS` weeks' rate, each with its interval, and plans
with the recent one (the rate that applies now; failure rates drift, HPCA'25 Fig. 5) when it
rests on at least :data:`MIN_FAILURES_RECENT` failures, else with the window average, saying
which. With no failures at all it plans at the rate's upper confidence bound and says so: a
conservative plan, not "out of reach". The recommendation at the upper bound of the chosen
rate is given beside the point recommendation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
from scipy import optimize

from reliability._result import Result, fmt_duration_h, fmt_num
from reliability.errors import Hint, Hinted, join_messages
from reliability.models.failures.counts import RateEstimate
from reliability.models.failures.mttf import mttf_h
from reliability.models.recovery.checkpoint import optimal_interval_h
from reliability.models.recovery.ettr import expected_ettr

__all__ = ["MIN_FAILURES_RECENT", "PlanResult", "plan"]

#: the recent rate is planned with only when it rests on at least this many failures
MIN_FAILURES_RECENT = 5

_MIN_H = 1.0 / 3600.0  # one second
_MAX_H = 24.0 * 7


@dataclass
class PlanResult(Result):
    """Answer of :func:`plan`; ``frontier``, ``grid`` and ``rates`` are tidy frames.

    Attributes
    ----------
    n_gpus : int
        Job size [GPUs].
    rate_per_node_day : float
        The r_f planned with [failures per node-day].
    basis : str
        Where that rate comes from (``"given"``, ``"last 4 weeks"``, ``"whole window"``, ``"upper
        95% bound (no failures)"``).
    rates : polars.DataFrame or None
        The candidate rates with intervals [per 1000 node-days] (window, recent).
    mttf_h : float
        MTTF of the job at that rate [h].
    equal_cost_h : float or None
        Checkpoint interval = restart overhead that just reaches the target [h].
    recommended_interval_h : float or None
        Recommendation for ``restart_h`` [h] (None: unreachable).
    recommended_at_upper_h : float or None
        The same at the upper bound of the rate's interval [h].
    frontier : polars.DataFrame
        Per restart overhead, the interval range reaching the target [min].
    grid : polars.DataFrame
        Expected ETTR by job size and interval (Fig. 10).
    """

    title = "Checkpoint planner (Kokolis et al. HPCA'25 Fig. 10)"
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
    basis: str = "given"
    rates: pl.DataFrame | None = None
    rate_upper_per_node_day: float | None = None
    recommended_at_upper_h: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the rate: hardware failures and node-days (empty without rates)."""
        if self.rates is None or self.rates.height == 0:
            return {}
        r = self.rates.row(0, named=True)
        return {"hardware failures": r["failures"], "node-days": r["exposure_days"]}

    @property
    def summary(self) -> pl.DataFrame:
        """One row: job size, r_f, target ETTR, MTTF [h], equal-cost, restart and recommended intervals [min], ETTR there."""
        return self._mapping_frame(
            {
                "n_gpus": self.n_gpus,
                "rate_per_node_day": self.rate_per_node_day,
                "basis": self.basis,
                "target_ettr": self.target_ettr,
                "mttf_h": self.mttf_h,
                "equal_cost_min": None if self.equal_cost_h is None else 60 * self.equal_cost_h,
                "restart_min": None if self.restart_h is None else 60 * self.restart_h,
                "recommended_interval_min": None
                if self.recommended_interval_h is None
                else 60 * self.recommended_interval_h,
                "ettr_at_recommended": self.ettr_at_recommended,
                "recommended_at_upper_bound_min": None
                if self.recommended_at_upper_h is None
                else 60 * self.recommended_at_upper_h,
                "variant": self.variant,
            }
        )

    def tables(self) -> dict[str, pl.DataFrame]:
        """Return the result's tables by name.

        Returns
        -------
        dict of str to polars.DataFrame
            ``"rates"`` (when known), ``"summary"`` and ``"frontier"`` (ETTR per interval).
        """
        t = {"summary": self.summary, "frontier": self.frontier}
        if self.rates is not None:
            t = {"rates": self.rates, **t}
        return t

    def _lines(self) -> list[str]:
        lines = []
        if self.rates is not None:
            for r in self.rates.iter_rows(named=True):
                lines.append(f"r_f {r['description']}")
        if self.basis.startswith("upper"):
            tail = " (no hardware failures observed: the upper confidence bound of r_f, a conservative plan)"
        elif self.basis.startswith("last"):
            tail = f" (the {self.basis}' rate: the rate that applies now)"
        elif self.basis != "given":
            tail = f" (the {self.basis}'s average rate)"
        else:
            tail = ""
        lines.append(
            f"A job on {self.n_gpus:,} GPUs at {fmt_num(1000 * self.rate_per_node_day)} failures per 1000 node-days{tail} "
            f"is interrupted {_every(self.mttf_h)} on average (MTTF = 1/(N r_f), assuming a constant rate)."
        )
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
            if self.recommended_interval_h is None and self.basis.startswith("upper"):
                lines.append(
                    f"No hardware failures were observed, but too little exposure to rule out rates at which ETTR "
                    f"{self.target_ettr:.2f} cannot be reached with a {_fmt_h(self.restart_h)} restart: collect more "
                    "data or give r_f."
                )
            elif self.recommended_interval_h is None:
                lines.append(
                    f"With a restart overhead of {_fmt_h(self.restart_h)} the target cannot be reached at this rate."
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
                if self.rate_upper_per_node_day is not None and not self.basis.startswith("upper"):
                    at = (
                        f"checkpoint {how} {_fmt_h(self.recommended_at_upper_h)}"
                        if self.recommended_at_upper_h is not None
                        else "the target cannot be reached"
                    )
                    lines.append(
                        f"At the upper bound of r_f's interval ({1000 * self.rate_upper_per_node_day:.2f} per 1000 "
                        f"node-days) {at}."
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
        return lines

    @classmethod
    def _example(cls, kind: str = "normal") -> PlanResult:
        """Build a tiny instance: a 1,024-GPU job planned from a tiny cluster's MTTF fit (for contract tests).

        ``kind="no failures"``: the same without hardware failures.
        """
        from reliability.models.failures.mttf import MTTFResult

        return plan(1024, MTTFResult._example(kind), 0.9, restart_h=5 / 60)


def _fmt_h(h: float | None) -> str:
    return fmt_duration_h(h)


def _every(h: float) -> str:
    """``"every 1.7 min"``, or ``"more often than once a second"`` (not "every under 1 s")."""
    text = fmt_duration_h(h)
    return "more often than once a second" if text.startswith("under") else f"every {text}"


def _choose_rate(source: Any) -> tuple[float, str, pl.DataFrame, float | None, list[str]]:
    """(rate per node-day, basis, rates frame, upper bound, notes) from a fit or an estimate."""
    notes: list[str] = []
    if isinstance(source, RateEstimate):
        window, recent = source, None
    else:
        window, recent = source.rate_, source.recent_rate_
    cands = [r for r in (window, recent) if r is not None]
    rows = [
        {
            "window": r.label,
            "rate_per_1000_node_days": None if r.rate is None else 1000 * r.rate,
            "ci_low": 1000 * r.low,
            "ci_high": 1000 * r.high,
            "failures": r.failures,
            "exposure_days": r.exposure,
            "description": r.describe(),
        }
        for r in cands
    ]
    rates = pl.DataFrame(
        rows,
        schema={
            "window": pl.String,
            "rate_per_1000_node_days": pl.Float64,
            "ci_low": pl.Float64,
            "ci_high": pl.Float64,
            "failures": pl.Int64,
            "exposure_days": pl.Float64,
            "description": pl.String,
        },
    )
    if recent is not None and recent.rate is not None and recent.failures >= MIN_FAILURES_RECENT:
        chosen = recent
        if window.rate is not None and recent is not window:
            notes.append(
                f"planned with the {recent.label}' rate ({fmt_num(1000 * recent.rate)} per 1000 node-days), the "
                f"rate that applies now, rather than the window average ({fmt_num(1000 * window.rate)})"
            )
        return chosen.rate, recent.label, rates, chosen.high, notes  # type: ignore[return-value]
    if window.rate is not None:
        if recent is not None and recent.exposure > 0:
            notes.append(
                f"the {recent.label} hold {recent.failures} failures (fewer than {MIN_FAILURES_RECENT}): planned with "
                "the whole window's average rate"
            )
        return window.rate, window.label, rates, window.high, notes
    if window.exposure > 0 and window.high > 0:
        pct = f"{100 * (1 - window.alpha):.0f}%"
        notes.append(
            f"no hardware failures in {fmt_num(window.exposure)} node-days: r_f is below "
            f"{fmt_num(1000 * window.high)} per 1000 node-days (upper {pct} bound); the plan uses that bound, so "
            "its intervals are conservative (shorter than the rate itself would need)"
        )
        return window.high, f"upper {pct} bound (no failures)", rates, None, notes
    if hasattr(source, "min_gpus"):
        what = f" from jobs of >= {source.min_gpus} GPUs"
        fix = Hinted("fit with a lower ", Hint("min_gpus", action=False), ", or ")
    else:
        what, fix = "", ""
    raise ValueError(
        join_messages(
            f"no exposure{what} to estimate r_f from: nothing to plan with (",
            fix,
            "give rate_per_node_day)",
        )
    )


def plan(
    n_gpus: int,
    rate_per_node_day: float | Any,
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

    Parameters
    ----------
    n_gpus : int
        Job size [GPUs].
    rate_per_node_day : float or MTTFResult or RateSeries or RateEstimate
        r_f [failures per node-day] (> 0), or a fit to take it from: an
        :class:`~reliability.models.failures.MTTFResult`, a :class:`~reliability.models.failures.RateSeries` (both:
        the recent rate when it rests on enough failures) or a
        :class:`~reliability.models.failures.counts.RateEstimate`.
    target_ettr : float
        The ETTR to reach, in (0, 1).
    restart_h : float or None
        u0, restart overhead [h]; None = show the frontier only.
    ckpt_write_h : float
        w, blocking checkpoint write [h].
    queue_h : float
        q, queue wait after each interruption [h].
    gpus_per_node : int
        GPUs per node.
    variant : str
        The :func:`expected_ettr` form (default ``"renewal"``, exact for Poisson failures;
        ``"simplified"`` is the paper's ``1 − N r_f (u0 + Δt/2)``).
    restart_grid_min, grid_gpus, grid_interval_min
        Grids of the frontier and of Fig. 10.

    Returns
    -------
    PlanResult
        The recommended interval with its ETTR (None when the target is unreachable), the
        equal-cost interval, the frontier per restart overhead and the what-if grid (Kokolis et
        al., HPCA '25, §V, Fig. 10).
    """
    if not 0.0 < target_ettr < 1.0:
        raise ValueError(f"target_ettr must be in (0, 1), got {target_ettr}")
    notes: list[str] = []
    basis, rates, upper = "given", None, None
    if not isinstance(rate_per_node_day, int | float):
        rate_per_node_day, basis, rates, upper, notes = _choose_rate(rate_per_node_day)
    if n_gpus < 1:
        raise ValueError(f"n_gpus must be at least 1 GPU, got {n_gpus}")
    if not (math.isfinite(rate_per_node_day) and rate_per_node_day > 0):
        hint = (
            " (a fit's rate_per_node_day_ is 0.0 when it counted no failures: pass the fit "
            "itself, plan(n_gpus, fit, ...), to plan with the upper bound of its rate)"
            if rate_per_node_day == 0
            else ""
        )
        raise ValueError(
            "rate_per_node_day must be a positive number of failures per node-day, got "
            f"{rate_per_node_day!r}{hint}"
        )
    rate_per_node_day = float(rate_per_node_day)

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
        """Return the (shortest, longest) interval reaching the target, and the ETTR-optimal one.

        None for an unreachable target; the optimum comes with its ETTR.
        """
        if ckpt_write_h > 0:
            best, top = optimal_interval_h(
                n_gpus,
                rate_per_node_day,
                u0_h,
                ckpt_write_h=ckpt_write_h,
                queue_h=queue_h,
                gpus_per_node=gpus_per_node,
                variant=variant,
            )
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
        rows.append(
            {
                "restart_min": float(u),
                "min_interval_min": None if lo is None else 60 * lo,
                "max_interval_min": None if hi is None else 60 * hi,
            }
        )
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

    rec = rec_ettr = rec_upper = None
    if restart_h is not None:
        _, hi, best, top = interval_range(restart_h)
        if hi is not None:
            # blocking writes: the ETTR-optimal interval; non-blocking: the longest that reaches the target
            rec, rec_ettr = (best, top) if ckpt_write_h > 0 else (hi, ettr(hi, restart_h))
        if upper is not None and upper > rate_per_node_day:
            up = plan(
                n_gpus,
                upper,
                target_ettr,
                restart_h=restart_h,
                ckpt_write_h=ckpt_write_h,
                queue_h=queue_h,
                gpus_per_node=gpus_per_node,
                variant=variant,
                restart_grid_min=[60 * restart_h],
                grid_gpus=[n_gpus],
                grid_interval_min=[60.0],
            )
            rec_upper = up.recommended_interval_h

    gg = grid_gpus or [1024, 4096, 16384, 32768, 65536, 131072]
    gi = grid_interval_min or [5, 15, 30, 60, 120]
    u_grid = restart_h if restart_h is not None else 5.0 / 60.0
    grid = pl.DataFrame(
        [
            {
                "n_gpus": n,
                "interval_min": float(d),
                "restart_min": 60 * u_grid,
                "ettr": max(
                    0.0,
                    float(
                        expected_ettr(
                            n,
                            rate_per_node_day,
                            d / 60.0,
                            u_grid,
                            queue_h=queue_h,
                            ckpt_write_h=ckpt_write_h,
                            gpus_per_node=gpus_per_node,
                            variant=variant,
                            check=False,
                        )
                    ),
                ),
            }
            for n in gg
            for d in gi
        ]
    )
    if variant != "renewal":
        notes.append(
            "note: linearised forms are accurate to ~x^2/2 with x = N r_f (u0 + Δt/2); 'renewal' is exact"
        )
    if basis.startswith("upper") and equal is None and frontier["max_interval_min"].is_null().all():
        notes.append(
            "at that bound no checkpoint interval reaches the target: the data hold too little "
            "exposure to plan with (the bound, not a measured rate, rules out every interval)"
        )
    return PlanResult(
        n_gpus=n_gpus,
        rate_per_node_day=rate_per_node_day,
        target_ettr=target_ettr,
        variant=variant,
        mttf_h=float(mttf_h(n_gpus, rate_per_node_day, gpus_per_node)),
        equal_cost_h=equal,
        restart_h=restart_h,
        recommended_interval_h=rec,
        ettr_at_recommended=rec_ettr,
        frontier=frontier,
        grid=grid,
        ckpt_write_h=ckpt_write_h,
        queue_h=queue_h,
        basis=basis,
        rates=rates,
        rate_upper_per_node_day=upper,
        recommended_at_upper_h=rec_upper,
        notes=notes,
    )
