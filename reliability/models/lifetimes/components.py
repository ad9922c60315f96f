"""Component reliability of a Dataset: lifetimes per component type and time between failures.

One call over a Dataset's ``inventory`` and ``component_failures`` (written by the ``health``,
``lanl`` and ``pod`` readers): :func:`~reliability.models.lifetimes.weibull.fit_lifetimes` per
component type (Kaplan-Meier, exponential / Weibull / log-normal, the hazard verdict: infant
mortality, random or wear-out; MTTF and B10) and
:func:`~reliability.models.lifetimes.repairable.fit_interfailure` per system and component type (a
repaired component fails again: the Weibull shape of the gaps between its failures, with a
gamma frailty for components that fail at different rates, and each system's Crow-AMSAA trend;
Schroeder & Gibson, DSN '06). MTTF = 1/(N r_f) (Kokolis et al. HPCA '25 §IV) assumes the
constant hazard these fits test.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import polars as pl

from reliability._result import Result
from reliability.models.lifetimes.repairable import InterFailureResult, fit_interfailure
from reliability.models.lifetimes.weibull import LifetimeResult, fit_lifetimes

if TYPE_CHECKING:
    from reliability.store import Dataset

__all__ = ["ComponentReliability", "component_reliability"]

_SUMMARY_SCHEMA = {
    "component_type": pl.String, "components": pl.Int64, "failures": pl.Int64,
    "weibull_shape": pl.Float64, "shape_low": pl.Float64, "shape_high": pl.Float64,
    "mttf_h": pl.Float64, "mttf_h_low": pl.Float64, "mttf_h_high": pl.Float64,
    "b10_h": pl.Float64, "best_model": pl.String, "verdict": pl.String,
}  # fmt: skip


@dataclass
class ComponentReliability(Result):
    """Lifetimes and time between failures of a Dataset's components.

    Attributes
    ----------
    lifetimes : LifetimeResult or None
        Time to first failure per component type (None: no inventory, or nothing to fit).
    interfailure : InterFailureResult or None
        Time between failures per system and component type (None: no failures).
    observation_end : datetime or None
        The censoring time [UTC].
    """

    title = "Component lifetimes"
    lifetimes: LifetimeResult | None
    interfailure: InterFailureResult | None
    observation_end: datetime | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def available(self) -> bool:
        """Whether there was anything to fit."""
        return self.lifetimes is not None or self.interfailure is not None

    @property
    def summary(self) -> pl.DataFrame:
        """Per component type: counts, Weibull shape with interval, MTTF and B10 [h] of the best model by AIC, verdict."""
        rows = []
        for f in self.lifetimes.fits if self.lifetimes is not None else []:
            best = f.models.get(f.best, {}) if f.best else {}
            rows.append(
                {
                    "component_type": f.group,
                    "components": f.n,
                    "failures": f.failures,
                    "weibull_shape": f.shape,
                    "shape_low": f.shape_low,
                    "shape_high": f.shape_high,
                    "mttf_h": best.get("mttf"),
                    "mttf_h_low": best.get("mttf_low"),
                    "mttf_h_high": best.get("mttf_high"),
                    "b10_h": best.get("b10"),
                    "best_model": f.best,
                    "verdict": f.verdict,
                }
            )
        return pl.DataFrame(rows, schema=_SUMMARY_SCHEMA).fill_nan(None)

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Components and failures behind the fits."""
        s = self.summary
        return {
            "components": int(s.get_column("components").sum()) if s.height else 0,
            "failures": int(s.get_column("failures").sum()) if s.height else 0,
        }

    def tables(self) -> dict[str, pl.DataFrame]:
        """Return ``"summary"`` and, when fitted, ``"time between failures"``.

        Returns
        -------
        dict of str to polars.DataFrame
            The result's tables by name.
        """
        t = {"summary": self.summary}
        if self.interfailure is not None:
            t["time between failures"] = self.interfailure.systems
        return t

    def _lines(self) -> list[str]:
        if not self.available:
            return ["no component inventory or failures to fit"]
        lines = []
        for part in (self.lifetimes, self.interfailure):
            if part is not None:
                lines += part._lines()
        return lines

    @classmethod
    def _example(cls, kind: str = "normal") -> ComponentReliability:
        """Build a tiny instance: eight components' lifetimes and two nodes' failures (for contract tests).

        ``kind="no failures"``: the lifetimes all censored and no time between failures, as
        :func:`component_reliability` gives for a Dataset without component failures.
        """
        from reliability.models._examples import DAYS, T0, check_kind

        check_kind(kind)
        end = T0 + timedelta(days=DAYS)
        if kind == "no failures":
            return cls(
                lifetimes=LifetimeResult._example(kind),
                interfailure=None,
                observation_end=end,
                notes=["no component failures in the Dataset: no time between failures to fit"],
            )
        return cls(
            lifetimes=LifetimeResult._example(),
            interfailure=InterFailureResult._example(),
            observation_end=end,
        )


def component_reliability(
    dataset: Dataset, *, alpha: float = 0.05, observation_end: datetime | None = None
) -> ComponentReliability:
    """Fit component lifetimes and the time between failures of a Dataset.

    Parameters
    ----------
    dataset : Dataset
        A Dataset with ``inventory`` and ``component_failures`` (from the ``health``, ``lanl`` or
        ``pod`` readers).
    alpha : float
        1 − confidence level of every interval.
    observation_end : datetime or None
        Censoring time [UTC] (default: the Dataset's observation end).

    Returns
    -------
    ComponentReliability
        Both fits, or a result that says why there is nothing to fit (never raises for lack of
        data).
    """
    end = observation_end or dataset.observation_end
    inventory = dataset.inventory
    failures = dataset.component_failures
    notes: list[str] = []
    lifetimes = interfailure = None
    if inventory.height == 0:
        notes.append(
            "no component inventory in the Dataset: lifetimes need every component with its time in "
            "service (the health, lanl and pod readers write one)"
        )
    else:
        try:
            lifetimes = fit_lifetimes(dataset, alpha=alpha, observation_end=end)
        except ValueError as exc:  # an empty or inconsistent lifetime table: said, not raised
            notes.append(f"component lifetimes not fitted: {exc}")
    if failures.height == 0:
        notes.append("no component failures in the Dataset: no time between failures to fit")
    else:
        # a system per cluster and component type: a link and a machine are not one process
        def system(frame: pl.DataFrame) -> pl.DataFrame:
            return frame.with_columns(
                cluster=pl.col("cluster") + pl.lit(" ") + pl.col("component_type"),
                component_id=pl.col("component_type") + pl.lit(":") + pl.col("component_id"),
            )

        interfailure = fit_interfailure(
            system(failures),
            system(inventory) if inventory.height else None,
            observation_end=end,
            alpha=alpha,
        )
    # what each fit could not estimate, or left out, and why (e.g. components that fail the
    # moment they enter service have no lifetime to fit)
    for part in (lifetimes, interfailure):
        if part is not None:
            notes += [n for n in part.notes if n not in notes]
    return ComponentReliability(
        lifetimes=lifetimes, interfailure=interfailure, observation_end=end, notes=notes
    )
