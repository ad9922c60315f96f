"""A cluster set beside the published fleets (:mod:`reliability.models.fleets.published`).

:func:`compare_fleets` sets a cluster's r_f (:func:`~reliability.models.failures.fit_mttf`, Kokolis et
al. HPCA'25 §IV) beside every fleet's rate, its hardware failures by taxonomy component beside
the component tables of Llama 3 (Dubey et al. 2024, Table 5) and FT-HSDP (Salpekar et al.
2026, Table 1), and the MTTF of its largest job beside what each fleet's rate projects for a
job of that size, ``MTTF = 24 / (N_nodes · r_f)`` [h] with ``N_nodes = N_GPUs / GPUs per node``
of the fleet (HPCA'25 Eq. 1). Every row carries its caveat: what was counted (interruptions of
one job of any cause, memory errors, hardware failures of large jobs) and over what exposure
(one job's nodes, the whole fleet).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import polars as pl

from reliability._result import Result, fmt_duration_h, fmt_num
from reliability.fleets import FLEETS, Fleet
from reliability.models.failures.mttf import (
    HARDWARE,
    SIZE_BUCKETS,
    MTTFResult,
    attributed_jobs,
    exposure_frame,
    fit_mttf,
    mttf_h,
)
from reliability.models.fleets.published import (
    PublishedFleets,
    published_fleets,
    total_failures,
)

if TYPE_CHECKING:
    from reliability.store import Dataset

__all__ = ["COMPARED_TABLES", "FleetComparison", "compare_fleets"]

#: the fleets whose component tables are set beside the user's components
COMPARED_TABLES = ("llama3", "fthsdp")

_COMPARE_RATES = {
    "fleet": pl.String, "failures": pl.Int64, "node_days": pl.Float64,
    "rate_per_node_day": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
    "rate_per_gpu_day": pl.Float64, "versus_yours": pl.String, "definition": pl.String, "source": pl.String, "caveat": pl.String,
}  # fmt: skip
_COMPARE_MTTF = {
    "fleet": pl.String, "n_gpus": pl.Int64, "mttf_h": pl.Float64, "mttf_h_low": pl.Float64,
    "mttf_h_high": pl.Float64, "basis": pl.String, "caveat": pl.String,
}  # fmt: skip
_UNMAPPED = {
    "fleet": pl.String, "label": pl.String, "count": pl.Int64, "share": pl.Float64,
    "why": pl.String,
}  # fmt: skip


def _versus(
    rate: float,
    lo: float | None,
    hi: float | None,
    ylo: float | None,
    yhi: float | None,
    estimable: bool = True,
) -> str:
    """Say where a fleet's rate (and interval) lies against yours (or your upper bound)."""
    if yhi is None or ylo is None:
        return "not comparable (no exposure of yours)"
    if not estimable:  # no failure of yours: only an upper bound
        above = (lo if lo is not None else rate) > yhi
        return f"{'above' if above else 'within'} your upper bound (you had no hardware failure)"
    if lo is None or hi is None:
        if rate > yhi:
            return "printed rate above your interval"
        if rate < ylo:
            return "printed rate below your interval"
        return "printed rate inside your interval"
    if ylo > hi:
        return "yours higher (intervals do not overlap)"
    if yhi < lo:  # type: ignore[operator]
        return "yours lower (intervals do not overlap)"
    return "intervals overlap"


@dataclass
class FleetComparison(Result):
    """A cluster's r_f, components and largest-job MTTF beside the published fleets.

    Attributes
    ----------
    summary : polars.DataFrame
        The rates: the user's r_f (first row, ``fleet = "yours"``) and every fleet's rate
        [failures per node-day] with its interval (null where not published or not
        estimable), ``versus_yours``, ``definition``, ``source``, ``caveat``.
    components : polars.DataFrame
        Per taxonomy component: ``yours`` (hardware failures counted in r_f), ``your_share``,
        and for Llama 3 and FT-HSDP the count and share of their rows in the hardware domains
        (``llama3``, ``llama3_share``, ``fthsdp``, ``fthsdp_share``).
    unmapped : polars.DataFrame
        Published rows left out of ``components``: ``fleet``, ``label``, ``count``, ``share`` (of
        that fleet's total), ``why`` (no taxonomy component, or a domain r_f does not count).
    mttf : polars.DataFrame
        MTTF of the user's largest job size [h]: measured (its size bucket) and the model
        ``1/(N r_f)``, then each fleet's projection at that size, with intervals and caveats.
    largest_gpus : int or None
        The largest job [GPUs] (None without GPU jobs).
    published : PublishedFleets or None
        The published fleets compared against (:func:`published_fleets`).
    min_gpus : int
        Jobs of at least this many GPUs enter the user's r_f.
    alpha : float
        1 − confidence level.
    """

    title = "Your fleet beside published fleets"
    summary: pl.DataFrame
    components: pl.DataFrame
    unmapped: pl.DataFrame
    mttf: pl.DataFrame
    largest_gpus: int | None
    published: PublishedFleets | None = None
    min_gpus: int = 129
    failures: int = 0
    node_days: float = 0.0
    alpha: float = 0.05
    notes: list[str] = field(default_factory=list)

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """The user's hardware failures and node-days behind r_f."""
        return {"hardware failures": self.failures, "node-days": self.node_days}

    def tables(self) -> dict[str, pl.DataFrame]:
        """Return the rates, components, unmapped rows and MTTF tables.

        Returns
        -------
        dict of str to polars.DataFrame
            ``"rates"``, ``"components"``, ``"not mapped"``, ``"MTTF of the largest job"``.
        """
        return {
            "rates": self.summary,
            "components": self.components,
            "not mapped": self.unmapped,
            "MTTF of the largest job": self.mttf,
        }

    def _lines(self) -> list[str]:
        pct = f"{100 * (1 - self.alpha):.0f}%"
        out = [f"r_f per 1000 node-days ({pct} intervals; yours: jobs of {self.min_gpus:,}+ GPUs):"]
        for r in self.summary.iter_rows(named=True):
            if r["rate_per_node_day"] is None:
                rate = r["versus_yours"]
                if r["fleet"] == "yours":
                    rate = (
                        "not estimable (no exposure)"
                        if r["ci_high"] is None
                        else f"no hardware failure: at most {fmt_num(1000 * r['ci_high'])} (upper bound)"
                    )
            elif r["ci_low"] is None:
                rate = f"{fmt_num(1000 * r['rate_per_node_day'])} (as printed, no interval)"
            else:
                rate = (
                    f"{fmt_num(1000 * r['rate_per_node_day'])} ({fmt_num(1000 * r['ci_low'])}-"
                    f"{fmt_num(1000 * r['ci_high'])})"
                )
            tail = (
                ""
                if r["fleet"] == "yours" or r["rate_per_node_day"] is None
                else f"; {r['versus_yours']}"
            )
            out.append(f"  {r['fleet']:<42} {rate}{tail}")
        if self.components.height:
            out.append("hardware failures by component, share (yours / Llama 3 / FT-HSDP):")
            for r in self.components.iter_rows(named=True):
                s = [_pct(r[c]) for c in ("your_share", "llama3_share", "fthsdp_share")]
                out.append(f"  {r['component']:<12} {s[0]:>7} {s[1]:>7} {s[2]:>7}")
        for r in self.mttf.iter_rows(named=True):
            if r["mttf_h"] is None and r["mttf_h_low"] is not None:
                v = f"at least {fmt_duration_h(r['mttf_h_low'])}"
            elif r["mttf_h"] is None:
                v = "not estimable"
            else:
                rng = (
                    ""
                    if r["mttf_h_low"] is None or r["mttf_h_high"] is None
                    else f" ({fmt_duration_h(r['mttf_h_low'])}-{fmt_duration_h(r['mttf_h_high'])})"
                )
                v = fmt_duration_h(r["mttf_h"]) + rng
            out.append(f"MTTF at {r['n_gpus']:,} GPUs, {r['fleet']} ({r['basis']}): {v}")
        return out

    @classmethod
    def _example(cls, kind: str = "normal") -> FleetComparison:
        """Build a tiny instance: the 14-day, 16-node example cluster beside the published fleets.

        ``kind="no failures"``: the same without hardware failures (an upper bound only).
        """
        from reliability.models._examples import tiny_jobs

        jobs, end = tiny_jobs(kind=kind)
        return compare_fleets(jobs, min_gpus=1, observation_end=end)


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _left_out(f: Fleet) -> str:
    """Say which rows of a fleet's table its hardware-only rate leaves out."""
    out = [c for c in f.components if c.domain not in HARDWARE]
    kept = total_failures(f) - sum(c.count for c in out)
    return (
        f"the {kept:,} of {total_failures(f):,} interruptions in rows the taxonomy counts as hardware, as "
        "your r_f does; left out: " + ", ".join(f"{c.label} {c.count:,}" for c in out)
    )


def _component_tables(
    hw: pl.DataFrame, fleets: dict[str, Fleet]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Set the user's hardware failures by component beside the compared tables; list what is left out."""
    yours = (
        hw.group_by("component").agg(yours=pl.len().cast(pl.Int64))
        if hw.height
        else pl.DataFrame(schema={"component": pl.String, "yours": pl.Int64})
    )
    frame = yours
    unmapped: list[dict[str, Any]] = []
    for key in COMPARED_TABLES:
        f = fleets[key]
        total = total_failures(f)
        mapped = [c for c in f.components if c.component and c.domain in HARDWARE]
        n_hw = sum(c.count for c in mapped)
        counts: dict[str, int] = {}
        for c in mapped:
            counts[c.component] = counts.get(c.component, 0) + c.count  # type: ignore[index]
        for c in f.components:
            if c not in mapped:
                why = c.why or f"domain {c.domain}: r_f counts hardware failures only"
                if c.component and c.why:
                    why = f"{c.why} (domain {c.domain}: not counted in r_f)"
                unmapped.append(
                    {
                        "fleet": f.name,
                        "label": c.label,
                        "count": c.count,
                        "share": c.count / total,
                        "why": why,
                    }
                )
        theirs = pl.DataFrame(
            {"component": list(counts), key: list(counts.values())},
            schema={"component": pl.String, key: pl.Int64},
        ).with_columns((pl.col(key) / max(n_hw, 1)).alias(f"{key}_share"))
        frame = frame.join(theirs, on="component", how="full", coalesce=True)
    # your most frequent components first, then the published tables' largest shares
    theirs_share = pl.sum_horizontal(pl.col([f"{k}_share" for k in COMPARED_TABLES]).fill_null(0))
    frame = frame.with_columns(pl.col("yours").fill_null(0)).sort(
        ["yours", theirs_share, "component"], descending=[True, True, False]
    )
    frame = frame.with_columns(
        your_share=pl.col("yours") / hw.height if hw.height else pl.lit(None, pl.Float64)
    ).select(
        "component", "yours", "your_share", *[c for k in COMPARED_TABLES for c in (k, f"{k}_share")]
    )
    return frame, pl.DataFrame(unmapped, schema=_UNMAPPED)


def compare_fleets(
    source: Dataset | pl.DataFrame,
    *,
    fit: MTTFResult | None = None,
    min_gpus: int = 129,
    gpus_per_node: int = 8,
    alpha: float = 0.05,
    observation_end: datetime | None = None,
) -> FleetComparison:
    """Set a cluster's r_f, components and largest-job MTTF beside the published fleets.

    Parameters
    ----------
    source : Dataset or polars.DataFrame
        A Dataset, or attributed jobs (:func:`reliability.attribute_failures`).
    fit : MTTFResult or None
        The cluster's fit (:func:`~reliability.models.failures.fit_mttf`) on the same source; None:
        fitted here with ``min_gpus`` and ``gpus_per_node``.
    min_gpus : int
        Jobs of at least this many GPUs enter r_f (HPCA'25: > 128).
    gpus_per_node : int
        The cluster's GPUs per node.
    alpha : float
        1 − confidence level.
    observation_end : datetime or None
        When the data end [UTC] (see :func:`~reliability.models.failures.fit_mttf`).

    Returns
    -------
    FleetComparison
        The rates, components and MTTF tables, each row with its caveat (never raises for lack
        of failures: what is not estimable is null and the notes say why).
    """
    jobs, end, notes = attributed_jobs(source, observation_end)
    if fit is None:
        fit = fit_mttf(
            jobs, min_gpus=min_gpus, gpus_per_node=gpus_per_node, alpha=alpha, observation_end=end
        )
    notes = notes + list(fit.notes)
    published = published_fleets(alpha=alpha)
    fleets = {f.key: f for f in FLEETS}
    exp, _ = exposure_frame(jobs, end)
    big = exp.filter(pl.col("n_accelerators") >= max(fit.min_gpus, 1))
    hw = big.filter(pl.col("failed"))
    cause = pl.col("failure_cause") if "failure_cause" in hw.columns else pl.lit(None, pl.String)
    hw = hw.with_columns(component=pl.coalesce(cause.cast(pl.String), pl.lit("unknown"))).select(
        "component"
    )
    if "failure_cause" not in exp.columns and hw.height:
        notes.append("the jobs carry no failure_cause: every hardware failure counts as 'unknown'")

    r = fit.rate_
    has_rate = r.exposure > 0 and r.rate is not None
    ylo, yhi = (r.low, r.high) if r.exposure > 0 else (None, None)
    rates: list[dict[str, Any]] = [
        {
            "fleet": "yours",
            "failures": r.failures,
            "node_days": r.exposure,
            "rate_per_node_day": r.rate if has_rate else None,
            "ci_low": ylo,
            "ci_high": yhi,
            "rate_per_gpu_day": r.rate / fit.gpus_per_node if has_rate else None,
            "versus_yours": "",
            "source": "this Dataset",
            "definition": f"hardware-attributed failures of jobs of {fit.min_gpus:,}+ GPUs over their node-days",
            "caveat": "interval allows for week-to-week variation"
            if r.robust
            else "exact Poisson interval (too few weeks or failures to assess variation)",
        }
    ]
    if not has_rate:
        notes.append(
            "your r_f is not estimable: "
            + (
                "no exposure from jobs of that size"
                if r.exposure <= 0
                else f"no hardware failures in {fmt_num(r.exposure)} node-days (upper bound "
                f"{fmt_num(1000 * r.high)} per 1000 node-days)"
            )
        )
    for row in published.summary.iter_rows(named=True):
        if row["rate_per_node_day"] is None:
            rates.append(
                {
                    "fleet": row["fleet"],
                    "failures": row["failures"],
                    "node_days": row["node_days"],
                    "rate_per_gpu_day": row["rate_per_gpu_day"],
                    "versus_yours": "no per-node rate: "
                    + (
                        "a per-GPU rate only (nodes of mixed size)"
                        if row["rate_per_gpu_day"] is not None
                        else row["basis"]
                    ),
                    "definition": row["failure_definition"],
                    "source": row["source"],
                    "caveat": row["caveat"] + f" ({row['component_shares']})",
                }
            )
            continue
        for hw_only in (False, True):
            pre = "hardware_" if hw_only else ""
            if hw_only and row["hardware_rate_per_node_day"] is None:
                continue
            lo, hi = row[f"{pre}ci_low"], row[f"{pre}ci_high"]
            rates.append(
                {
                    "fleet": row["fleet"] + (" (hardware rows)" if hw_only else ""),
                    "failures": row["hardware_failures"] if hw_only else row["failures"],
                    "node_days": row["node_days"],
                    "rate_per_node_day": row[f"{pre}rate_per_node_day"],
                    "ci_low": lo,
                    "ci_high": hi,
                    "rate_per_gpu_day": None if hw_only else row["rate_per_gpu_day"],
                    "versus_yours": _versus(
                        row[f"{pre}rate_per_node_day"], lo, hi, ylo, yhi, estimable=has_rate
                    ),
                    "definition": (
                        "rows the taxonomy puts in the hardware domains"
                        if hw_only
                        else row["failure_definition"]
                    ),
                    "source": row["source"],
                    "caveat": _left_out(fleets[row["key"]]) if hw_only else row["caveat"],
                }
            )
    components, unmapped = _component_tables(hw, fleets)
    for row in published.summary.iter_rows(named=True):
        if row["flags"]:
            notes.append(f"{row['fleet']} ({row['source']}) does not add up: {row['flags']}")

    gpu_jobs = exp.filter(pl.col("n_accelerators") >= 1)
    largest = int(gpu_jobs.get_column("n_accelerators").max()) if gpu_jobs.height else None  # type: ignore[arg-type]
    mttf_rows: list[dict[str, Any]] = []
    if largest is None:
        notes.append("no GPU job started: no MTTF to compare")
    else:
        edge = max(e for e in SIZE_BUCKETS if e <= largest)
        b = fit.by_size.filter(pl.col("bucket") == str(edge)).to_dicts()
        if b:
            mttf_rows.append(
                {
                    "fleet": "yours",
                    "n_gpus": largest,
                    "mttf_h": b[0]["mttf_h"],
                    "mttf_h_low": b[0]["mttf_h_low"],
                    "mttf_h_high": b[0]["mttf_h_high"],
                    "basis": f"measured, jobs of the {edge:,}+ GPU bucket",
                    "caveat": f"{b[0]['failures']:,} hardware failures in {fmt_num(b[0]['job_hours'])} job-hours",
                }
            )
        at = fit.mttf_at(largest)
        mttf_rows.append(
            {
                "fleet": "yours",
                "n_gpus": largest,
                "mttf_h": at["mttf_h"],
                "mttf_h_low": at["low_h"],
                "mttf_h_high": at["high_h"],
                "basis": "model 1/(N r_f)",
                "caveat": f"your r_f, {fit.gpus_per_node} GPUs per node",
            }
        )
        for row in published.summary.iter_rows(named=True):
            per_gpu = row["rate_per_gpu_day"]
            if per_gpu is None or per_gpu <= 0:
                continue
            lo, hi = row["gpu_ci_low"], row["gpu_ci_high"]
            # a job on part of a node fails when the node does: at least one of the fleet's
            # nodes, as for your own row (1/(N r_f) with N >= 1 node)
            per_node = row["rate_per_node_day"]
            n_eff = max(largest, round(per_node / per_gpu)) if per_node else largest
            mttf_rows.append(
                {
                    "fleet": row["fleet"],
                    "n_gpus": largest,
                    "mttf_h": float(mttf_h(n_eff, per_gpu, 1)),
                    "mttf_h_low": float(mttf_h(n_eff, hi, 1)) if hi else None,
                    "mttf_h_high": float(mttf_h(n_eff, lo, 1)) if lo else None,
                    "basis": "projected at its rate",
                    "caveat": row["caveat"],
                }
            )
    return FleetComparison(
        summary=pl.DataFrame(rates, schema=_COMPARE_RATES),
        components=components,
        unmapped=unmapped,
        mttf=pl.DataFrame(mttf_rows, schema=_COMPARE_MTTF),
        largest_gpus=largest,
        published=published,
        min_gpus=fit.min_gpus,
        failures=r.failures,
        node_days=r.exposure,
        alpha=alpha,
        notes=notes,
    )
