"""MTTF of a job as a function of its size, and the per-node failure rate r_f.

Kokolis et al. HPCA'25 §IV (Fig. 7): a job on N nodes is interrupted by hardware at rate
N·r_f, so ``MTTF = 1 / (N · r_f)``; r_f [failures per node-day] is estimated from
hardware-attributed interruptions over the node-days of exposure of large jobs (paper: > 128
GPUs). An attempt that ends without a hardware failure is right-censored, not a failure, and
so is an attempt still running at the observation end: it contributes its exposure up to
that end (dropping it would bias r_f upwards).

Intervals: r_f's headline interval allows for week-to-week swings of the rate (robust
variance over weekly counts, :mod:`reliability.models.failures.counts`); the exact (Garwood) Poisson
interval is given beside it as the figure "if the rate were constant". A Poisson GLM of
failures on log(nodes) with a log-exposure offset and a robust slope variance tests whether
failures are proportional to the number of nodes (slope 1). ``MTTF = 1/(N r_f)`` assumes a
constant rate: the Weibull shape of the time to a hardware interruption per size class
checks it, with its interval and a verdict. CPU-only jobs (0 GPUs) are a class of their own,
never 1-GPU jobs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from reliability._result import Result, fmt_count, fmt_duration_h, fmt_num
from reliability.attribution import attribute_failures
from reliability.errors import Hint, Hinted
from reliability.models.failures.counts import (
    RateEstimate,
    clip_lazy,
    estimate_rate,
    period_counts,
    poisson_ci,
    poisson_regression,
    resolve_observation_end,
)
from reliability.models.failures.scaling import ScalingCheck, check_scaling

if TYPE_CHECKING:
    from collections.abc import Sequence

    from reliability.store import Dataset

__all__ = [
    "CPU_ONLY_BUCKET",
    "MIN_BUCKETS_FOR_GLM",
    "MIN_FAILURES_FOR_GLM",
    "MIN_FAILURES_FOR_SHAPE",
    "RECENT_WEEKS",
    "SIZE_BUCKETS",
    "MTTFResult",
    "fit_mttf",
    "glm_slope",
    "mttf_h",
    "poisson_ci",
    "size_bucket",
]

#: Job-size buckets [GPUs]: lower edges (1, 8, 16, ..., 4096+)
SIZE_BUCKETS = (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
#: bucket of CPU-only jobs (0 GPUs): a class of its own
CPU_ONLY_BUCKET = 0
HARDWARE = ("hardware", "infrastructure")
#: the GLM slope needs this many size buckets with exposure ...
MIN_BUCKETS_FOR_GLM = 3
#: ... and this many failures
MIN_FAILURES_FOR_GLM = 5
#: the Weibull shape of a size class needs this many failures
MIN_FAILURES_FOR_SHAPE = 5
#: the "recent" rate is over this many weeks before the observation end
RECENT_WEEKS = 4
_CLASSES = (("1-7", 1, 8), ("8-127", 8, 128), ("128-1023", 128, 1024), ("1024+", 1024, 10**9))


def mttf_h(
    n_gpus: float | np.ndarray, rate_per_node_day: float, gpus_per_node: int = 8
) -> np.ndarray:
    """Model MTTF [h] of a job on ``n_gpus`` GPUs: ``24 / (N_nodes · r_f)`` (HPCA'25 Eq. 1).

    Parameters
    ----------
    n_gpus : float or numpy.ndarray
        Job size [GPUs]; a job smaller than a node counts as one node.
    rate_per_node_day : float
        r_f [failures per node-day]; 0 gives ``inf`` (numeric API only: results never print it).
    gpus_per_node : int
        GPUs per node.

    Returns
    -------
    numpy.ndarray
        MTTF [h].
    """
    nodes = np.maximum(np.asarray(n_gpus, dtype=float) / gpus_per_node, 1.0)
    with np.errstate(divide="ignore"):
        return 24.0 / (nodes * rate_per_node_day)


def size_bucket(gpus: pl.Expr) -> pl.Expr:
    """Map a GPU count to its size bucket: the lower edge of the :data:`SIZE_BUCKETS` bucket.

    CPU-only jobs (0 GPUs) get :data:`CPU_ONLY_BUCKET` (0), never the 1-GPU bucket.

    Parameters
    ----------
    gpus : polars.Expr
        GPUs per job (null counts as 0).

    Returns
    -------
    polars.Expr
        Int64 bucket lower edge [GPUs].
    """
    edges = np.array(SIZE_BUCKETS)

    def f(s: pl.Series) -> pl.Series:
        g = s.fill_null(0).to_numpy()
        b = edges[np.searchsorted(edges, np.maximum(g, 1), side="right") - 1]
        return pl.Series(np.where(g <= 0, CPU_ONLY_BUCKET, b).astype(np.int64))

    return gpus.map_batches(f, return_dtype=pl.Int64)


def glm_slope(
    failures: np.ndarray,
    job_hours: np.ndarray,
    nodes: np.ndarray,
    *,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Slope of log(failure rate per job-hour) on log(nodes), and the test of slope = 1.

    Poisson GLM ``failures ~ log(nodes)`` with offset ``log(job_hours)`` and a robust (HC3
    sandwich) slope variance (:func:`reliability.models.failures.counts.poisson_regression`): failures
    are overdispersed (one crash fails every job sharing the node), differently in each size
    bucket; the interval uses Student-t on ``n − 2`` degrees of freedom.

    Parameters
    ----------
    failures : numpy.ndarray
        Failures per size bucket [count], shape ``(..., n_buckets)``.
    job_hours : numpy.ndarray
        Exposure per bucket [job-hours].
    nodes : numpy.ndarray
        Exposure-weighted mean nodes per bucket, shape ``(n_buckets,)``.
    alpha : float
        1 − confidence level.

    Returns
    -------
    dict of str to object
        Dict of arrays: ``slope``, ``low``, ``high``, ``p`` (of slope = 1), ``dispersion``,
        ``valid`` (at least :data:`MIN_BUCKETS_FOR_GLM` buckets and :data:`MIN_FAILURES_FOR_GLM`
        failures).
    """
    return poisson_regression(
        np.asarray(failures, float),
        np.asarray(job_hours, float),
        np.log(np.asarray(nodes, float)),
        alpha=alpha,
        null_slope=1.0,
        min_failures=MIN_FAILURES_FOR_GLM,
        min_points=MIN_BUCKETS_FOR_GLM,
    )


def _at_least(h: float) -> str:
    """Say a lower bound of an MTTF [h] for people: "at least 20 s", or "lower bound under 1 s"."""
    text = fmt_duration_h(h)
    return "lower bound under 1 s" if text.startswith("under") else f"at least {text}"


@dataclass
class MTTFResult(Result):
    """Fitted failure rate and MTTF by job size.

    Attributes
    ----------
    rate_ : RateEstimate
        r_f over the whole window (:class:`~reliability.models.failures.counts.RateEstimate`).
    recent_rate_ : RateEstimate
        r_f over the last :data:`RECENT_WEEKS` weeks before the observation end.
    rate_per_node_day_ : float
        r_f [hardware interruptions per node-day] (0.0 when not estimable, with no failures or
        no exposure: check ``estimable_``; :func:`~reliability.models.recovery.plan` takes the fit itself
        and plans with the upper bound).
    estimable_ : bool
        Whether r_f has a point estimate (at least one failure over some exposure).
    ci_ : (float, float)
        (low, high) interval of r_f at ``1 − alpha``, allowing for week-to-week variation (the exact
        Poisson one when the variation cannot be assessed); ``(0.0, inf)`` with no exposure.
    poisson_ci_ : (float, float)
        Exact Poisson interval ("if the rate were constant").
    failures_ : int
        Hardware-attributed interruptions counted (jobs >= ``min_gpus``).
    node_days_ : float
        Exposure [node-days], open attempts included up to the observation end.
    open_attempts_ : int
        Attempts still running at the observation end (censored).
    by_size : polars.DataFrame
        Per size bucket [GPUs]: attempts, failures, job-hours, measured MTTF [h] with interval,
        model MTTF ``1/(N r_f)`` [h] (null where not estimable).
    cpu_only : polars.DataFrame
        The same for CPU-only jobs (0 GPUs; no model MTTF: r_f is per GPU node).
    glm_slope_, glm_slope_ci_, glm_p_slope_is_1_
        Slope of log failures on log(nodes) (1 = proportional to nodes), its interval and the
        p-value of slope = 1 (nan when not estimable: the text and summary say so instead of
        printing it).
    survival : polars.DataFrame
        Per size class: Weibull shape with interval and verdict, scale [h], exponential rate [1/h],
        Kaplan-Meier median [h].
    observation_end : datetime or None
        The censoring time [UTC].
    scaling : ScalingCheck or None
        Whether MTTF ∝ 1/N holds on the measured sizes, and the projection to the next scale
        with the fitted slope's uncertainty (:func:`~reliability.models.failures.scaling.check_scaling`).
    """

    title = "Failure rate and MTTF by job size (Kokolis et al. HPCA'25 Fig. 7)"
    rate_: RateEstimate
    recent_rate_: RateEstimate
    open_attempts_: int
    by_size: pl.DataFrame
    cpu_only: pl.DataFrame
    glm_slope_: float
    glm_slope_ci_: tuple[float, float]
    glm_p_slope_is_1_: float
    survival: pl.DataFrame
    observation_end: datetime | None = None
    min_gpus: int = 129
    gpus_per_node: int = 8
    alpha: float = 0.05
    notes: list[str] = field(default_factory=list)
    scaling: ScalingCheck | None = None

    @property
    def rate_per_node_day_(self) -> float:
        """r_f [hardware failures per node-day] (Kokolis et al., HPCA '25, §IV, Fig. 7)."""
        return self.rate_.value

    @property
    def estimable_(self) -> bool:
        """True when r_f is estimable (enough failures)."""
        return self.rate_.rate is not None

    @property
    def ci_(self) -> tuple[float, float]:
        """Interval of r_f [failures per node-day] (robust when there are enough weeks).

        ``(0.0, inf)`` when there is no exposure at all: the data rule out no rate.
        """
        if self.rate_.exposure <= 0:
            return (0.0, math.inf)
        return (self.rate_.low, self.rate_.high)

    @property
    def poisson_ci_(self) -> tuple[float, float]:
        """Exact Poisson interval of r_f [failures per node-day] ("if the rate were constant")."""
        return (self.rate_.poisson_low, self.rate_.poisson_high)

    @property
    def failures_(self) -> int:
        """Hardware failures counted in r_f."""
        return self.rate_.failures

    @property
    def node_days_(self) -> float:
        """Exposure behind r_f [node-days]."""
        return self.rate_.exposure

    def mttf_h(self, n_gpus: float | np.ndarray) -> np.ndarray:
        """Compute the model MTTF at a job size from the fitted r_f: ``1/(N r_f)``.

        Kokolis et al., HPCA '25, §IV, Eq. 1.

        Parameters
        ----------
        n_gpus : float or numpy.ndarray
            Job size [GPUs].

        Returns
        -------
        numpy.ndarray
            MTTF [h]; ``inf`` when r_f = 0 (use :meth:`mttf_at` for text).
        """
        return mttf_h(n_gpus, self.rate_per_node_day_, self.gpus_per_node)

    def mttf_at(self, n_gpus: int) -> dict[str, Any]:
        """Give the MTTF of a job of ``n_gpus`` GPUs for people, with its interval.

        Parameters
        ----------
        n_gpus : int
            Job size [GPUs].

        Returns
        -------
        dict of str to object
            ``mttf_h`` [h] (None when r_f is not estimable), ``low_h``, ``high_h`` [h] (None when
            unbounded) and ``text``.
        """
        lo, hi = self.rate_.low, self.rate_.high  # (0, 0) without exposure: no bound
        low = float(mttf_h(n_gpus, hi, self.gpus_per_node)) if hi > 0 else None
        high = float(mttf_h(n_gpus, lo, self.gpus_per_node)) if lo > 0 else None
        if not self.estimable_:
            text = (
                f"{_at_least(low)} (no hardware failures; from the upper {100 * (1 - self.alpha):.0f}% "
                "bound of r_f)"
                if low is not None
                else "not estimable (no exposure)"
            )
            return {"mttf_h": None, "low_h": low, "high_h": high, "text": text}
        point = float(self.mttf_h(n_gpus))
        rng = (
            f"{fmt_duration_h(low)}-{fmt_duration_h(high)}" if high is not None else _at_least(low)
        )
        return {
            "mttf_h": point,
            "low_h": low,
            "high_h": high,
            "text": f"{fmt_duration_h(point)} ({rng})",
        }

    def projection(self, n_gpus: list[int] | None = None) -> pl.DataFrame:
        """Project the MTTF to job sizes beyond the data, with the interval implied by r_f's interval.

        Parameters
        ----------
        n_gpus : list of int or None
            Job sizes [GPUs]; None: 1024, 4096, 16384 and 131072.

        Returns
        -------
        polars.DataFrame
            ``n_gpus``, ``mttf_h``, ``mttf_h_low``, ``mttf_h_high`` [h] (null where not estimable or
            unbounded).
        """
        sizes = n_gpus or [1024, 4096, 16384, 131072]
        rows = [self.mttf_at(n) for n in sizes]
        return pl.DataFrame(
            {
                "n_gpus": sizes,
                "mttf_h": [r["mttf_h"] for r in rows],
                "mttf_h_low": [r["low_h"] for r in rows],
                "mttf_h_high": [r["high_h"] for r in rows],
            },
            schema={
                "n_gpus": pl.Int64,
                "mttf_h": pl.Float64,
                "mttf_h_low": pl.Float64,
                "mttf_h_high": pl.Float64,
            },
        )

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the result: hardware failures, node-days, weeks, open attempts, attempts."""
        return {
            "hardware failures": self.failures_,
            "node-days": self.node_days_,
            "weeks": self.rate_.periods,
            "open attempts (censored)": self.open_attempts_,
            "attempts": int(self.by_size.get_column("attempts").sum())
            if self.by_size.height
            else 0,
        }

    @property
    def summary(self) -> pl.DataFrame:
        """One row of headline numbers (rates per 1000 node-days; null where not estimable)."""
        r, q = self.rate_, self.recent_rate_
        ci = self.glm_slope_ci_
        return self._mapping_frame(
            {
                "rate_per_1000_node_days": None if r.rate is None else 1000 * r.rate,
                "ci_low": 1000 * r.low,
                "ci_high": 1000 * r.high,
                "poisson_ci_low": 1000 * r.poisson_low,
                "poisson_ci_high": 1000 * r.poisson_high,
                "dispersion": r.dispersion,
                "interval_allows_variation": r.robust,
                "failures": r.failures,
                "node_days": r.exposure,
                "weeks": r.periods,
                "open_attempts": self.open_attempts_,
                "recent_rate_per_1000_node_days": None if q.rate is None else 1000 * q.rate,
                "recent_ci_low": 1000 * q.low,
                "recent_ci_high": 1000 * q.high,
                "recent_failures": q.failures,
                "glm_slope": self.glm_slope_,
                "glm_slope_ci_low": ci[0],
                "glm_slope_ci_high": ci[1],
                "glm_p_slope_is_1": self.glm_p_slope_is_1_,
                "min_gpus": self.min_gpus,
            }
        )

    def tables(self) -> dict[str, pl.DataFrame]:
        """Return the result's tables by name.

        Returns
        -------
        dict of str to polars.DataFrame
            ``"summary"``, ``"by size"``, ``"constant-rate check"``, when there are any,
            ``"CPU-only jobs"``, and the 1/N check's ``"1/N check"`` and
            ``"projection to the next scale"``.
        """
        t = {"summary": self.summary, "by size": self.by_size, "constant-rate check": self.survival}
        if self.cpu_only.height:
            t["CPU-only jobs"] = self.cpu_only
        if self.scaling is not None:
            t["1/N check"] = self.scaling.points
            t["projection to the next scale"] = self.scaling.projection
        return t

    def _lines(self) -> list[str]:
        r = self.rate_
        lines = [f"r_f (jobs >= {self.min_gpus} GPUs) {r.describe()}"]
        if self.recent_rate_.exposure > 0:
            lines.append(f"r_f {self.recent_rate_.describe()}")
        lines.append(
            "MTTF = 1/(N r_f) assumes a constant failure rate; Weibull shape of the time to a hardware "
            "interruption (1 = constant):"
        )
        if self.survival.height:
            for row in self.survival.iter_rows(named=True):
                if row["weibull_shape"] is None:
                    lines.append(f"  {row['size_class']:>8} GPUs: {row['verdict']}")
                else:
                    lines.append(
                        f"  {row['size_class']:>8} GPUs: {row['weibull_shape']:.2f} ({row['shape_low']:.2f}-"
                        f"{row['shape_high']:.2f}), {row['verdict']} [{row['failures']} failures]"
                    )
        else:
            lines.append("  no size class has jobs to check")
        if not math.isfinite(self.glm_slope_):
            lines.append(
                f"GLM slope of failures on log(nodes): not estimable (needs {MIN_FAILURES_FOR_GLM} failures over "
                f"{MIN_BUCKETS_FOR_GLM} size buckets)"
            )
        else:
            lo, hi = self.glm_slope_ci_
            lines.append(
                f"GLM slope of failures on log(nodes): {self.glm_slope_:.2f} ({100 * (1 - self.alpha):.0f}% CI "
                f"{lo:.2f}-{hi:.2f}; p(slope = 1) = {self.glm_p_slope_is_1_:.2g}; 1 = failures proportional to nodes)"
            )
        lines.append("MTTF by job size: measured (CI) vs model 1/(N r_f)")
        for row in self.by_size.iter_rows(named=True):
            lines.append(_size_line(row))
        for row in self.cpu_only.iter_rows(named=True):
            lines.append(_size_line(row, label="CPU-only"))
        proj = [f"{n:,} GPUs {self.mttf_at(n)['text']}" for n in (1024, 16384, 131072)]
        lines.append("projections: " + "; ".join(proj))
        if self.scaling is not None:
            lines.append("Does MTTF ∝ 1/N hold here?")
            lines += ["  " + ln for ln in self.scaling._lines()]
        return lines

    @classmethod
    def _example(cls, kind: str = "normal") -> MTTFResult:
        """Build a tiny instance: a 14-day, 16-node cluster, jobs of 1 to 8 nodes (for contract tests).

        ``kind="no failures"``: the same without hardware failures.
        """
        from reliability.models._examples import tiny_jobs

        jobs, end = tiny_jobs(kind=kind)
        return fit_mttf(jobs, min_gpus=1, observation_end=end)


def _bucket_name(bucket: int) -> str:
    """Name the GPUs a size bucket holds, from its lower edge: ``"8-15 GPUs"``, ``"4096+ GPUs"``."""
    above = [e for e in SIZE_BUCKETS if e > bucket]
    if not above:
        return f"{bucket:,}+ GPUs"
    top = above[0] - 1
    return f"{bucket:,} GPUs" if top == bucket else f"{bucket:,}-{top:,} GPUs"


def _size_line(row: dict[str, Any], label: str | None = None) -> str:
    name = label or _bucket_name(int(row["bucket"]))
    if row["failures"] == 0:
        meas = (
            f"no failures (MTTF {_at_least(row['mttf_h_low'])})"
            if row["mttf_h_low"] is not None
            else "no exposure"
        )
    else:
        hi = fmt_duration_h(row["mttf_h_high"]) if row["mttf_h_high"] is not None else "?"
        meas = f"{fmt_duration_h(row['mttf_h'])} ({fmt_duration_h(row['mttf_h_low'])}-{hi})"
    model = row.get("model_mttf_h")
    mtext = f"model {fmt_duration_h(model)}" if model is not None else "model not estimable"
    return f"  {name:>16}  {meas:<40}  {mtext}   [{fmt_count(row['failures'], 'failure')}, {fmt_num(row['job_hours'])} job-h]"


def attributed_jobs(
    source: Any, observation_end: datetime | None, columns: Sequence[str] | None = None
) -> tuple[pl.DataFrame, datetime | None, list[str]]:
    """Attribute a source's jobs and work out their observation end.

    Parameters
    ----------
    source : Dataset, polars.DataFrame or polars.LazyFrame
        A Dataset, or a jobs frame (attributed or not). An attributed LazyFrame (e.g. the parts
        of :func:`reliability.analyses.write_attributed_by_cluster`) is read for ``columns``
        only (and the times the observation end is taken from), with polars' streaming engine.
    observation_end : datetime or None
        The caller's observation end [UTC]; None: see
        :func:`~reliability.models.failures.counts.resolve_observation_end`.
    columns : sequence of str or None
        The columns the caller reads (None: all).

    Returns
    -------
    (polars.DataFrame, datetime or None, list of str)
        Attributed jobs, their observation end, and notes.
    """
    if isinstance(source, pl.LazyFrame):
        names = source.collect_schema().names()
        if "failure_domain" in names:
            # the observation end by a streaming max over every attempt's times, then only the
            # columns the caller reads, their few-valued strings as categoricals (a fleet's 50M
            # attempts: 4 bytes a value, not a string each)
            end, note = resolve_observation_end(source, source, observation_end)
            keep = [c for c in names if columns is None or c in columns]
            few = [c for c in _FEW_VALUES if c in keep and columns is not None]
            jobs = (
                source.select(keep)
                .with_columns(pl.col(c).cast(pl.Categorical) for c in few)
                .collect(engine="streaming")
            )
            return jobs, end, [note] if note else []
    jobs = source if isinstance(source, pl.DataFrame) else attribute_failures(source)
    if "failure_domain" not in jobs.columns:
        jobs = attribute_failures(jobs, health_events=None, node_states=None)
    end, note = resolve_observation_end(source, jobs, observation_end)
    return jobs, end, [note] if note else []


#: the columns of :func:`exposure_frame` that :func:`fit_mttf` reads
_FIT_COLUMNS = (
    "start_time",
    "stop",
    "n_nodes",
    "n_accelerators",
    "hours",
    "failed",
    "open",
    "bucket",
)

#: string columns of few values, read as categoricals from an attributed LazyFrame when the
#: caller names its columns (:func:`attributed_jobs`: the rates compare them, never show them)
_FEW_VALUES = ("cluster", "failure_domain")


#: the attempts' columns the rates read (:func:`fit_mttf`,
#: :func:`~reliability.models.failures.failure_rate_series`; :func:`exposure_frame` keeps them)
EXPOSURE_COLUMNS = (
    "cluster",
    "start_time",
    "end_time",
    "failure_domain",
    "n_nodes",
    "n_accelerators",
)


#: the columns :func:`exposure_frame` keeps: the rates' and the failures' cause (the fleet
#: comparison counts failures by component)
RATE_COLUMNS = (*EXPOSURE_COLUMNS, "failure_cause")


def exposure_frame(
    jobs: pl.DataFrame, observation_end: datetime | None
) -> tuple[pl.DataFrame, int]:
    """Clip started attempts at the observation end and add what the rate needs.

    Parameters
    ----------
    jobs : polars.DataFrame
        Attributed attempts.
    observation_end : datetime or None
        The observation end [UTC].

    Returns
    -------
    (polars.DataFrame, int)
        The attempts' :data:`EXPOSURE_COLUMNS` and ``failure_cause`` with ``hours``, ``failed``
        (hardware-ended; open attempts are censored: never failed), ``open``, ``bucket``; and
        the number of open attempts.
    """
    # only the columns the rates read (the filters copy every column they carry: the host
    # lists alone are GiBs at millions of attempts)
    jobs = jobs.select(c for c in RATE_COLUMNS if c in jobs.columns)
    # one query, one copy (a fleet's 50M attempts: each eager step copied every column)
    a = (
        clip_lazy(jobs.lazy(), observation_end)
        .with_columns(
            hours=(pl.col("stop") - pl.col("start_time")).dt.total_microseconds() / 1e6 / 3600.0,
            failed=pl.col("failure_domain").is_in(HARDWARE) & ~pl.col("open"),
            n_nodes=pl.col("n_nodes").fill_null(1),
        )
        .filter(pl.col("hours") >= 0)  # (an open attempt started before the end: never left out)
        .with_columns(bucket=size_bucket(pl.col("n_accelerators")))
        .collect()
    )
    return a, int(a.get_column("open").sum())


def fit_mttf(
    source: Dataset | pl.DataFrame | pl.LazyFrame,
    *,
    min_gpus: int = 129,
    gpus_per_node: int = 8,
    alpha: float = 0.05,
    cluster: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
    observation_end: datetime | None = None,
) -> MTTFResult:
    """Fit r_f and MTTF by size from a Dataset (attributed here) or an attributed jobs frame.

    Parameters
    ----------
    source : Dataset, polars.DataFrame or polars.LazyFrame
        A Dataset, or the output of :func:`reliability.attribute_failures`; a LazyFrame of
        attributed attempts (:func:`reliability.analyses.write_attributed_by_cluster`) is read
        for the columns the rates need only.
    min_gpus : int
        Only attempts of jobs with at least this many GPUs enter r_f (paper: > 128; CPU-only jobs
        never do, whatever min_gpus: they are reported apart).
    gpus_per_node : int
        To turn GPUs into nodes for the model.
    alpha : float
        1 − confidence level of every interval.
    cluster : str or None
        Restrict to one cluster.
    start, end : datetime or None
        Restrict to attempts that ended (or are still open) in [start, end) [UTC].
    observation_end : datetime or None
        When the data end [UTC]: attempts still running then are censored there. Default: the
        Dataset's observation end, else the latest timestamp in the jobs (noted in the result).

    Returns
    -------
    MTTFResult
        MTTFResult (says what it cannot estimate and why when data are thin; never raises for lack
        of failures or exposure).
    """
    jobs, obs_end, notes = attributed_jobs(source, observation_end, EXPOSURE_COLUMNS)
    # only the columns read below: the filters copy every column they carry (the host lists
    # alone are hundreds of MiB at a million attempts)
    jobs = jobs.select(c for c in EXPOSURE_COLUMNS if c in jobs.columns)
    if cluster is not None:
        jobs = jobs.filter(pl.col("cluster") == cluster)
    if start is not None or end is not None:
        stop = pl.col("end_time").fill_null(pl.lit(obs_end) if obs_end else pl.col("start_time"))
        if start is not None:
            jobs = jobs.filter(stop >= start)
        if end is not None:
            jobs = jobs.filter(stop < end)
    exp, n_open = exposure_frame(jobs, obs_end)
    del jobs  # (only what the fits below read is kept: a fleet's 50M attempts are GiBs)
    exp = exp.select(_FIT_COLUMNS)
    if n_open:
        notes.append(
            f"{n_open:,} attempts still running at the observation end are censored there (exposure counted, no failure)"
        )
    big = exp.filter(pl.col("n_accelerators") >= max(min_gpus, 1))  # GPU jobs: CPU-only apart
    if big.height == 0:
        largest = int(exp.get_column("n_accelerators").max() or 0) if exp.height else 0
        if largest >= 1:
            fix = Hinted(Hint("min_gpus", largest), " or lower to estimate it from smaller jobs")
        elif exp.height:
            fix = "the jobs ran on no GPUs (r_f counts GPU jobs: CPU-only jobs are reported apart)"
        else:
            fix = "no attempt ran (no start time) in the window"
        notes.append(
            Hinted(
                f"no exposure from jobs of >= {min_gpus} GPUs (largest job: {largest:,} GPUs): r_f "
                "not estimable; ",
                fix,
            )
        )
    weekly = period_counts(big, every="1w")
    rate = estimate_rate(
        weekly["failures"].to_numpy(),
        weekly["exposure"].to_numpy(),
        alpha=alpha,
        label="whole window",
    )
    recent = recent_rate(big, obs_end, alpha)
    notes += rate.notes
    cpu_only = pl.col("bucket") == CPU_ONLY_BUCKET
    by = _by_size(exp, ~cpu_only, rate, gpus_per_node, alpha)
    cpu = _by_size(exp, cpu_only, None, gpus_per_node, alpha)
    if cpu.height:
        cpu = cpu.with_columns(bucket=pl.lit("CPU-only"))
        notes.append(
            f"{int(cpu['attempts'].sum()):,} started attempts of CPU-only jobs (0 GPUs) are a class of their own "
            f"({fmt_count(int(cpu['failures'].sum()), 'hardware failure')}), not counted as 1-GPU jobs"
        )
    d = by.filter(pl.col("job_hours") > 0)
    g = (
        glm_slope(
            d["failures"].to_numpy(),
            d["job_hours"].to_numpy(),
            np.maximum((d["node_hours"] / d["job_hours"]).to_numpy(), 1.0),
            alpha=alpha,
        )
        if d.height
        else None
    )
    if g is not None and bool(g["valid"]):
        slope, slope_ci, p1 = float(g["slope"]), (float(g["low"]), float(g["high"])), float(g["p"])
    else:
        slope, slope_ci, p1 = math.nan, (math.nan, math.nan), math.nan
        notes.append(
            f"GLM slope not estimable: {fmt_count(int(d['failures'].sum()) if d.height else 0, 'failure')} over "
            f"{fmt_count(d.height, 'size bucket')} (needs {MIN_FAILURES_FOR_GLM} over {MIN_BUCKETS_FOR_GLM})"
        )
    m = MTTFResult(
        rate_=rate,
        recent_rate_=recent,
        open_attempts_=n_open,
        by_size=by,
        cpu_only=cpu,
        glm_slope_=slope,
        glm_slope_ci_=slope_ci,
        glm_p_slope_is_1_=p1,
        survival=_survival(exp, alpha),  # (its size classes are of 1 GPU and more)
        observation_end=obs_end,
        min_gpus=min_gpus,
        gpus_per_node=gpus_per_node,
        alpha=alpha,
        notes=notes,
    )
    m.scaling = check_scaling(
        d["failures"].to_numpy() if d.height else np.zeros(0),
        d["job_hours"].to_numpy() if d.height else np.zeros(0),
        np.maximum((d["node_hours"] / d["job_hours"]).to_numpy(), 1.0) if d.height else np.zeros(0),
        [_bucket_name(int(b)) for b in d.get_column("bucket")] if d.height else [],
        g,
        model_mttf=m.mttf_at if m.estimable_ else None,
        largest_gpus=max(int(exp.get_column("n_accelerators").max() or 0), 0),
        gpus_per_node=gpus_per_node,
        dispersion=rate.dispersion,
        dispersion_periods=rate.periods,
        alpha=alpha,
    )
    return m


def recent_rate(
    attempts: pl.DataFrame, obs_end: datetime | None, alpha: float, *, every: str = "1w"
) -> RateEstimate:
    """Estimate the rate over the :data:`RECENT_WEEKS` weeks before the observation end.

    Parameters
    ----------
    attempts : polars.DataFrame
        Clipped attempts (:func:`exposure_frame`).
    obs_end : datetime or None
        The observation end [UTC].
    alpha : float
        1 − confidence level.
    every : str
        Period length of the counts (polars duration).

    Returns
    -------
    RateEstimate
        The recent rate; the whole window's when the data span less (its label says so).
    """
    label = f"last {RECENT_WEEKS} weeks"
    if obs_end is None or attempts.height == 0:
        return estimate_rate([], [], alpha=alpha, label=label)
    w0 = obs_end - timedelta(weeks=RECENT_WEEKS)
    if attempts.get_column("start_time").min() >= w0:
        label = f"last {RECENT_WEEKS} weeks (= the whole window: the data span less)"
    recent = attempts.filter(pl.col("stop") > w0).with_columns(
        start_time=pl.max_horizontal("start_time", pl.lit(w0).cast(pl.Datetime("us", "UTC")))
    )
    per = period_counts(recent, every=every)
    return estimate_rate(
        per["failures"].to_numpy(), per["exposure"].to_numpy(), alpha=alpha, label=label
    )


def _by_size(
    exp: pl.DataFrame,
    rows: pl.Expr,
    rate: RateEstimate | None,
    gpus_per_node: int,
    alpha: float,
) -> pl.DataFrame:
    """Failures, job and node hours and MTTF per size bucket of the attempts ``rows`` selects."""
    by = (
        # (the four columns read copied out, not the attempts: most of a fleet's are GPU jobs;
        # the hours summed sorted, on an eager frame: a plain group-by sum, and a sorted one in
        # a lazy filter and group-by, add in the order polars' threads end, 2M rows measured)
        exp.select("bucket", "failed", "hours", "n_nodes")
        .filter(rows)
        .group_by("bucket")
        .agg(
            attempts=pl.len(),
            failures=pl.col("failed").sum().cast(pl.Int64),
            job_hours=pl.col("hours").sort().sum(),
            node_hours=(pl.col("n_nodes").cast(pl.Float64) * pl.col("hours")).sort().sum(),
        )
        .sort("bucket")
    )
    f = by.get_column("failures").to_numpy()
    h = by.get_column("job_hours").to_numpy()
    flo, fhi = poisson_ci(f, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        mttf = np.where(f > 0, h / np.maximum(f, 1), np.nan)
        low = np.where(h > 0, h / fhi, np.nan)
        high = np.where((flo > 0) & (h > 0), h / np.where(flo > 0, flo, 1), np.nan)
        if rate is not None and rate.rate is not None:
            model = mttf_h(by.get_column("bucket").to_numpy(), rate.rate, gpus_per_node)
        else:
            model = np.full(len(f), np.nan)

    def col(x: np.ndarray) -> pl.Series:
        return pl.Series(np.where(np.isfinite(x), x, np.nan)).fill_nan(None)

    return by.with_columns(
        mttf_h=col(mttf),
        mttf_h_low=col(low),
        mttf_h_high=col(high),
        model_mttf_h=col(model),
    ).with_columns(pl.col("bucket").cast(pl.String))


def km_median(durations: np.ndarray, events: np.ndarray) -> float | None:
    """Compute the Kaplan-Meier median of censored durations.

    The first time the product-limit survival falls to 0.5 or below (lifelines'
    ``median_survival_time_``).

    Parameters
    ----------
    durations : numpy.ndarray
        Times [any unit].
    events : numpy.ndarray
        True where the duration ended in the event, False where it is censored.

    Returns
    -------
    float or None
        The median [unit of ``durations``]; None when the survival never falls to 0.5.
    """
    t = np.asarray(durations, float)
    e = np.asarray(events, bool)
    order = np.argsort(t)
    t, e = t[order], e[order]
    first = np.flatnonzero(np.concatenate([[True], t[1:] != t[:-1]]))  # t is sorted
    times = t[first]
    n_at = t.size - first
    d = np.add.reduceat(e.astype(float), first)
    surv = np.cumprod(1.0 - d / n_at)
    hit = np.flatnonzero(surv <= 0.5)
    return float(times[hit[0]]) if hit.size else None


def _survival(exp: pl.DataFrame, alpha: float) -> pl.DataFrame:
    """Check the constant-rate assumption per size class with lifelines fits.

    Weibull shape (interval, verdict), scale [h], exponential rate [1/h], Kaplan-Meier median
    [h]; classes with too few failures say so.
    """
    from reliability.models.lifetimes.weibull import fit_weibull, hazard_verdict

    rows = []
    for name, lo, hi in _CLASSES:
        part = exp.filter(
            (pl.col("n_accelerators") >= lo)
            & (pl.col("n_accelerators") < hi)
            & (pl.col("hours") > 0)
        )
        if part.height == 0:
            continue
        events = int(part.get_column("failed").sum())
        row: dict[str, Any] = {
            "size_class": name,
            "attempts": part.height,
            "failures": events,
            "weibull_shape": None,
            "shape_low": None,
            "shape_high": None,
            "weibull_scale_h": None,
            "exp_rate_per_h": None,
            "km_median_h": None,
        }
        if events < MIN_FAILURES_FOR_SHAPE:
            row["verdict"] = f"not estimable ({events} failures; needs {MIN_FAILURES_FOR_SHAPE})"
            rows.append(row)
            continue
        # lifelines' edge: numpy arrays (polars' to_pandas would need pyarrow)
        hours = part.get_column("hours").to_numpy()
        failed = part.get_column("failed").to_numpy()
        try:
            w = fit_weibull(hours, failed, alpha=alpha, engine="numpy")
        except (ValueError, np.linalg.LinAlgError) as exc:
            # e.g. every failure at the same duration: no finite Weibull shape
            row["verdict"] = f"not estimable (no Weibull fits these durations: {exc})"
            rows.append(row)
            continue
        med = km_median(hours, failed)
        row |= {
            "weibull_shape": w["shape"],
            "shape_low": w["shape_low"],
            "shape_high": w["shape_high"],
            "weibull_scale_h": w["scale"],
            "exp_rate_per_h": events / float(hours.sum()),
            "km_median_h": med,
            "verdict": hazard_verdict(w["shape"], w["shape_low"], w["shape_high"], short=True),
        }
        rows.append(row)
    schema = {
        "size_class": pl.String,
        "attempts": pl.Int64,
        "failures": pl.Int64,
        "weibull_shape": pl.Float64,
        "shape_low": pl.Float64,
        "shape_high": pl.Float64,
        "weibull_scale_h": pl.Float64,
        "exp_rate_per_h": pl.Float64,
        "km_median_h": pl.Float64,
        "verdict": pl.String,
    }
    return pl.DataFrame(rows, schema=schema)
