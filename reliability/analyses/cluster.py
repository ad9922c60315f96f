"""A cluster's jobs analysed in one call: attribution, r_f and MTTF by size, rates, workload.

What ``reliability analyze`` prints and a notebook's first cell wants: the same functions the
pipeline's stages run (:mod:`reliability.pipeline.stages`), composed (Kokolis et al. HPCA'25
§III-IV).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import polars as pl

from reliability._result import Result
from reliability.analyses.attribution import AttributionResult, attribute
from reliability.models.failures import (
    MTTFResult,
    RateSeries,
    WorkloadResult,
    failure_rate_series,
    fit_mttf,
    workload_summary,
)
from reliability.reasons import ReasonRules

if TYPE_CHECKING:
    from reliability.store import Dataset

__all__ = ["ClusterAnalysis", "analyze_cluster"]


@dataclass
class ClusterAnalysis(Result):
    """A cluster's failure attribution, r_f and MTTF by size, weekly rates and workload.

    Attributes
    ----------
    attribution : AttributionResult
        Every attempt with how it ended, and the GPUs per node used.
    mttf : MTTFResult
        r_f with its intervals, MTTF by size, the 1/N check and projections.
    rates : RateSeries
        The weekly hardware failure rate and its trend.
    workload : WorkloadResult
        Job states, sizes, failure taxonomy, crash loops.
    """

    title = "Cluster analysis (Kokolis et al. HPCA'25 §III-IV)"
    attribution: AttributionResult
    mttf: MTTFResult
    rates: RateSeries
    workload: WorkloadResult
    notes: list[str] = field(default_factory=list)

    @property
    def summary(self) -> pl.DataFrame:
        """The MTTF fit's one-row summary (r_f, intervals, GLM slope)."""
        return self.mttf.summary

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Attempts attributed and the counts behind r_f."""
        return {"attempts": self.attribution.jobs.height, **self.mttf.sample_sizes}

    def tables(self) -> dict[str, pl.DataFrame]:
        """Return every part's tables, prefixed with the part.

        Returns
        -------
        dict of str to polars.DataFrame
            ``"summary"`` and ``"<part>: <table>"`` for attribution, mttf, rates and workload.
        """
        out = {"summary": self.summary}
        for part in ("attribution", "mttf", "rates", "workload"):
            for name, frame in getattr(self, part).tables().items():
                out[f"{part}: {name}"] = frame
        return out

    def _lines(self) -> list[str]:
        lines: list[str] = []
        for part in (self.attribution, self.mttf, self.rates, self.workload):
            lines += part._lines()
            lines += [f"note: {n}" for n in part.notes]
        return lines

    @classmethod
    def _example(cls, kind: str = "normal") -> ClusterAnalysis:
        """Build a tiny instance from the 14-day, 16-node example cluster (for contract tests).

        ``kind="no failures"``: the same without hardware failures.
        """
        a = AttributionResult._example(kind)
        end = a.observation_end
        return cls(
            attribution=a,
            mttf=fit_mttf(a.jobs, min_gpus=1, observation_end=end, gpus_per_node=a.gpus_per_node),
            rates=failure_rate_series(a.jobs, min_gpus=1, observation_end=end),
            workload=workload_summary(a.jobs, observation_end=end),
        )


def analyze_cluster(
    dataset: Dataset,
    *,
    before_min: float = 10.0,
    after_min: float = 5.0,
    requeue_exit_codes: tuple[int, ...] = (),
    reasons: ReasonRules | None = None,
    min_gpus: int = 129,
    gpus_per_node: int | None = None,
) -> ClusterAnalysis:
    """Attribute a Dataset's attempts and fit r_f, MTTF by size, rates and the workload.

    Parameters
    ----------
    dataset : Dataset
        The cluster's Dataset.
    before_min, after_min : float
        Attribution window around each attempt's end [min] (HPCA'25 §III: 10, 5).
    requeue_exit_codes : tuple of int
        The cluster's RequeueExit / RequeueExitHold codes.
    reasons : ReasonRules or None
        Reason rules (None: the built-in ones).
    min_gpus : int
        Jobs that enter r_f [GPUs] (paper: > 128).
    gpus_per_node : int or None
        GPUs per node; None: the most one node held in the data.

    Returns
    -------
    ClusterAnalysis
        Every part, each saying what it cannot estimate and why.
    """
    a = attribute(
        dataset,
        before_min=before_min,
        after_min=after_min,
        requeue_exit_codes=requeue_exit_codes,
        reasons=reasons,
        gpus_per_node=gpus_per_node,
    )
    end = a.observation_end
    return ClusterAnalysis(
        attribution=a,
        mttf=fit_mttf(
            a.jobs, min_gpus=min_gpus, observation_end=end, gpus_per_node=a.gpus_per_node
        ),
        rates=failure_rate_series(a.jobs, min_gpus=min_gpus, observation_end=end),
        workload=workload_summary(a.jobs, observation_end=end),
    )
