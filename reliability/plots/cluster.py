"""Figures of a GPU cluster's jobs and failures (Kokolis et al. HPCA'25 Figs. 3, 5-8).

Each function takes the result it draws (or the frame behind it) and draws only what the
result holds: no model is refitted here. Empty or degenerate results get a panel that says
why there is nothing to draw.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np
import polars as pl
from matplotlib.axes import Axes

from reliability.plots.style import (
    colour,
    frame_of,
    legend_outside,
    new_axes,
    no_data,
    percent_axis,
    plain_text,
    time_axis,
)

__all__ = [
    "bucket_label",
    "plot_failure_rate",
    "plot_failure_taxonomy",
    "plot_job_sizes",
    "plot_job_states",
    "plot_lemon_suspects",
    "plot_mttf",
    "plot_secondary_preemptions",
]


def bucket_label(bucket: Any) -> str:
    """Make a size bucket's tick label.

    Parameters
    ----------
    bucket : object
        A job-size bucket (its lower edge [GPUs], 0 or ``"CPU-only"`` for CPU-only jobs).

    Returns
    -------
    str
        ``"CPU"`` for CPU-only jobs, else the lower edge.
    """
    return "CPU" if str(bucket) in ("0", "CPU-only") else str(bucket)


@plain_text
def plot_job_states(states: Any, ax: Axes | None = None) -> Axes:
    """Share of attempts and of GPU time by final state (HPCA'25 Fig. 3).

    Parameters
    ----------
    states : object
        A :class:`~reliability.models.failures.WorkloadResult` or
        :func:`~reliability.models.failures.job_state_breakdown`'s frame.
    ax : matplotlib.axes.Axes or None
        Axes to draw on (default: a new figure).

    Returns
    -------
    matplotlib.axes.Axes
        The axes: two ``barh`` containers, ``attempts`` (``share``) and ``GPU time`` (``gpu_share``,
        0 where null), one bar per state, fewest attempts at the bottom.
    """
    ax = new_axes(ax)
    s = frame_of(states, "states").sort("attempts", "state", descending=[False, True])
    if s.height == 0:
        return no_data(ax, "no job attempts", "Job attempts by final state")
    y = np.arange(s.height)
    ax.barh(y + 0.2, s["share"].fill_null(0.0), height=0.4, color=colour(0), label="attempts")
    ax.barh(y - 0.2, s["gpu_share"].fill_null(0.0), height=0.4, color=colour(1), label="GPU time")
    ax.set_yticks(y, s["state"].to_list())
    ax.set_xlim(0, 1)
    ax.set_xlabel("share")
    percent_axis(ax, "x")
    ax.set_title("Job attempts by final state")
    legend_outside(ax)
    return ax


@plain_text
def plot_job_sizes(sizes: Any, ax: Axes | None = None) -> Axes:
    """Plot jobs and GPU time by job size.

    Kokolis et al., HPCA '25, Fig. 6.

    Parameters
    ----------
    sizes : WorkloadResult or polars.DataFrame
        A :class:`~reliability.models.failures.WorkloadResult` or the frame of
        :func:`~reliability.models.failures.job_size_distribution`.
    ax : matplotlib.axes.Axes or None
        Axes to draw on; None: a new figure.

    Returns
    -------
    matplotlib.axes.Axes
        Bar containers ``jobs`` (``job_share``) and ``GPU time`` (``gpu_share``, 0 where null),
        one bar per bucket in bucket order (``CPU`` = CPU-only jobs).
    """
    ax = new_axes(ax)
    s = frame_of(sizes, "sizes").sort("bucket")
    if s.height == 0:
        return no_data(ax, "no jobs", "Job sizes")
    x = np.arange(s.height)
    ax.bar(x - 0.2, s["job_share"].fill_null(0.0), width=0.4, color=colour(0), label="jobs")
    ax.bar(x + 0.2, s["gpu_share"].fill_null(0.0), width=0.4, color=colour(1), label="GPU time")
    ax.set_xticks(x, [bucket_label(b) for b in s["bucket"].to_list()])
    ax.set_xlabel("job size [GPUs, bucket lower edge]")
    ax.set_ylabel("share")
    ax.set_ylim(0, 1)
    percent_axis(ax)
    ax.set_title("Jobs and GPU time by job size")
    legend_outside(ax)
    return ax


@plain_text
def plot_failure_taxonomy(taxonomy: Any, ax: Axes | None = None, top: int = 12) -> Axes:
    """Plot the attempts that failed for a non-user reason, by domain and cause.

    Parameters
    ----------
    taxonomy : WorkloadResult or polars.DataFrame
        A :class:`~reliability.models.failures.WorkloadResult` or the frame of
        :func:`~reliability.models.failures.failure_taxonomy`.
    ax : matplotlib.axes.Axes or None
        Axes to draw on; None: a new figure.
    top : int
        Most frequent causes shown.

    Returns
    -------
    matplotlib.axes.Axes
        One ``barh`` container of ``attempts``, most frequent at the top.
    """
    ax = new_axes(ax)
    t = (
        frame_of(taxonomy, "taxonomy")
        .drop_nulls("share_of_failures")
        .sort(["attempts", "failure_domain", "failure_cause"], descending=[True, False, False])
        .head(top)
        .reverse()
    )
    if t.height == 0:
        return no_data(ax, "no attempt failed for a non-user reason", "Failure taxonomy")
    labels = [f"{d}: {c}" for d, c in t.select("failure_domain", "failure_cause").iter_rows()]
    domains = sorted(set(t["failure_domain"].to_list()))
    colours = [colour(domains.index(d)) for d in t["failure_domain"].to_list()]
    ax.barh(np.arange(t.height), t["attempts"], color=colours)
    ax.set_yticks(np.arange(t.height), labels)
    ax.set_xlabel("attempts")
    if t["attempts"].max() / max(t["attempts"].min(), 1) > 100:
        ax.set_xscale("log")
    ax.set_title("Failure taxonomy (non-user failures)")
    return ax


@plain_text
def plot_failure_rate(series: Any, ax: Axes | None = None) -> Axes:
    """Plot the weekly hardware failure rate of large jobs with its 95% interval.

    Kokolis et al., HPCA '25, Fig. 5.

    Parameters
    ----------
    series : RateSeries or polars.DataFrame
        A :class:`~reliability.models.failures.RateSeries` (or its ``series`` frame).
    ax : matplotlib.axes.Axes or None
        Axes to draw on; None: a new figure.

    Returns
    -------
    matplotlib.axes.Axes
        An ``errorbar`` of the weeks with exposure, x = the middle of each week's observed part,
        y = ``rate_per_1000_node_days``, its interval ``ci_low``-``ci_high``; the whole window's
        rate as a horizontal line when estimable (labelled ``window average``).
    """
    ax = new_axes(ax)
    s = frame_of(series, "series").sort("week").filter(pl.col("node_days") > 0)
    title = "Hardware failure rate over time"
    if s.height == 0:
        return no_data(ax, "no exposure of jobs large enough to enter r_f", title)
    end = getattr(series, "observation_end", None)
    starts = s["week"].to_list()
    mids = []
    for w in starts:
        stop = w + timedelta(days=7)
        if end is not None and end < stop:
            stop = max(end, w)
        mids.append(w + (stop - w) / 2)
    y = s["rate_per_1000_node_days"].to_numpy()
    lo = np.clip(y - s["ci_low"].to_numpy(), 0, None)
    hi = np.clip(s["ci_high"].to_numpy() - y, 0, None)
    ax.errorbar(
        mids,
        y,
        yerr=[lo, hi],
        fmt="o",
        markersize=4,
        capsize=3,
        color=colour(0),
        label="weekly r_f (95% exact interval)",
    )
    rate = getattr(series, "rate_", None)
    if rate is not None and rate.rate is not None:
        ax.axhline(
            1000 * rate.rate,
            color=colour(3),
            linestyle="--",
            linewidth=1,
            label=f"window average {1000 * rate.rate:.3g}",
        )
    first = starts[0]
    last = max(
        mids[-1],
        starts[-1] + timedelta(days=7) if end is None else min(end, starts[-1] + timedelta(days=7)),
    )
    time_axis(ax, first - timedelta(days=1), last + timedelta(days=1))
    ax.set_ylim(bottom=0)
    ax.set_ylabel("failures per 1000 node-days")
    ax.set_title(title)
    legend_outside(ax)
    return ax


def _bucket_gpus(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.filter(pl.col("bucket").cast(pl.String).str.contains(r"^\d+$")).with_columns(
        gpus=pl.col("bucket").cast(pl.String).cast(pl.Int64)
    )


@plain_text
def plot_mttf(result: Any, ax: Axes | None = None, project_to: int = 131072) -> Axes:
    """Plot MTTF by job size, measured and modelled.

    Measured per size bucket (95% interval) and the fitted model ``1/(N r_f)`` projected to
    ``project_to`` GPUs (Kokolis et al., HPCA '25, §IV, Eq. 1, Fig. 7).

    Parameters
    ----------
    result : MTTFResult or polars.DataFrame
        A :class:`~reliability.models.failures.MTTFResult` (or its ``by_size`` frame: measured points
        only).
    ax : matplotlib.axes.Axes or None
        Axes to draw on; None: a new figure.
    project_to : int
        Largest job size of the model line [GPUs].

    Returns
    -------
    matplotlib.axes.Axes
        An ``errorbar`` of the buckets with failures (x = bucket lower edge [GPUs], y =
        ``mttf_h``), ``^`` markers at the lower bound ``mttf_h_low`` of buckets without failures,
        and, when r_f is estimable, the model line ``result.mttf_h(n)`` with the band of r_f's
        interval.
    """
    ax = new_axes(ax, figsize=(6.4, 4.0))
    title = "Mean time to failure vs job size"
    by = _bucket_gpus(frame_of(result, "by_size")).filter(pl.col("gpus") > 0)
    hit = by.filter((pl.col("failures") > 0) & pl.col("mttf_h").is_not_null())
    none = by.filter((pl.col("failures") == 0) & pl.col("mttf_h_low").is_not_null())
    estimable = bool(getattr(result, "estimable_", False))
    if hit.height == 0 and none.height == 0 and not estimable:
        return no_data(ax, "no exposure of GPU jobs: MTTF not estimable", title)
    if hit.height:
        x = hit["gpus"].to_numpy().astype(float)
        y = hit["mttf_h"].to_numpy()
        lo = np.clip(y - hit["mttf_h_low"].to_numpy(), 0, None)
        top = hit["mttf_h_high"].fill_null(np.nan).to_numpy()
        up = np.where(np.isfinite(top), top - y, 0.0)
        ax.errorbar(
            x, y, yerr=[lo, up], fmt="o", color=colour(0), capsize=3, label="measured (95% CI)"
        )
    if none.height:
        ax.plot(
            none["gpus"].to_numpy().astype(float),
            none["mttf_h_low"].to_numpy(),
            "^",
            color=colour(2),
            linestyle="none",
            label="no failures: lower bound",
        )
    if estimable:
        n = np.geomspace(1, project_to, 200)
        model = np.asarray(result.mttf_h(n), dtype=float)
        lo_r, hi_r = result.ci_
        ax.plot(
            n,
            model,
            color=colour(3),
            label=f"1/(N r_f), r_f = {1000 * result.rate_per_node_day_:.3g}/1000 node-days",
        )
        if hi_r > 0 and lo_r > 0:
            ax.fill_between(
                n,
                model * result.rate_per_node_day_ / hi_r,
                model * result.rate_per_node_day_ / lo_r,
                color=colour(3),
                alpha=0.15,
                linewidth=0,
                label="r_f's 95% interval",
            )
        for g in (16384, 131072):
            if g <= project_to:
                m = float(result.mttf_h(g))
                ax.annotate(
                    f"{g:,} GPUs: {m:.2g} h",
                    (g, m),
                    textcoords="offset points",
                    xytext=(-70, 8),
                    fontsize=7,
                )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("job size [GPUs]")
    ax.set_ylabel("MTTF [h]")
    ax.set_title(title)
    legend_outside(ax)
    return ax


@plain_text
def plot_secondary_preemptions(stats: Any, ax: Axes | None = None) -> Axes:
    """Plot the failure overhead: hardware-failed GPU-hours and the secondary preemptions they cause.

    Kokolis et al., HPCA '25, §IV-C, Fig. 8.

    Parameters
    ----------
    stats : WorkloadResult or dict
        A :class:`~reliability.models.failures.WorkloadResult`, or the dict of
        :func:`~reliability.models.failures.secondary_preemptions`.
    ax : matplotlib.axes.Axes or None
        Axes to draw on; None: a new figure.

    Returns
    -------
    matplotlib.axes.Axes
        Two stacked ``barh`` containers, ``hardware-failed attempts`` (width = hardware
        GPU-hours) and ``secondary preemptions`` (width = their GPU-hours, left edge at the
        first's width).
    """
    ax = new_axes(ax, figsize=(6.4, 2.2))
    if isinstance(stats, dict):
        hw, sec, n, share = (
            stats["hardware_gpu_hours"],
            stats["gpu_hours"],
            stats["count"],
            stats["share_of_failure_overhead"],
        )
    else:
        hw, sec, n, share = (
            stats.hardware_gpu_hours,
            stats.secondary_gpu_hours,
            stats.secondary_count,
            stats.secondary_share,
        )
    title = "Failure overhead [GPU-hours]"
    if not (hw or 0) + (sec or 0) > 0:
        return no_data(ax, "no GPU time lost to hardware failures or their requeues", title)
    ax.barh([0], [hw], color=colour(0), label="hardware-failed attempts")
    ax.barh([0], [sec], left=[hw], color=colour(1), label=f"secondary preemptions ({int(n):,})")
    ax.set_yticks([])
    ax.set_xlabel("GPU-hours of failure overhead")
    if share is not None:
        title = f"Secondary preemptions: {100 * share:.2g}% of the failure overhead (paper: 16%)"
    ax.set_title(title, fontsize=10)
    legend_outside(ax)
    return ax


@plain_text
def plot_lemon_suspects(
    scores: Any, ax: Axes | None = None, top: int = 15, threshold: float | None = None
) -> Axes:
    """Plot the lemon probability of the top-ranked nodes, flagged ones highlighted.

    Parameters
    ----------
    scores : polars.DataFrame or object
        The frame of :func:`reliability.models.nodes.score_nodes`, or a result with ``scores`` and
        ``threshold``.
    ax : matplotlib.axes.Axes or None
        Axes to draw on; None: a new figure sized to ``top``.
    top : int
        Nodes shown.
    threshold : float or None
        The detector's threshold, drawn as a dashed line; None: the result's, if any.

    Returns
    -------
    matplotlib.axes.Axes
        One ``barh`` container of ``probability``, the highest at the top, flagged bars in the
        palette's vermillion.
    """
    frame = frame_of(scores, "scores")
    threshold = threshold if threshold is not None else getattr(scores, "threshold", None)
    ax = new_axes(ax, figsize=(6.4, 0.25 * min(top, max(frame.height, 1)) + 1.2))
    if frame.height == 0:
        return no_data(ax, "no nodes scored", "Lemon suspects")
    s = frame.head(top).reverse()
    colours = [colour(3) if f else colour(0) for f in s["flagged"].to_list()]
    ax.barh(np.arange(s.height), s["probability"], color=colours)
    ax.set_yticks(np.arange(s.height), s["node"].to_list(), fontsize=7)
    if threshold is not None:
        ax.axvline(
            threshold, color="grey", linestyle="--", linewidth=1, label=f"threshold {threshold:.2f}"
        )
    from matplotlib.patches import Patch

    handles = [Patch(color=colour(3), label="flagged"), Patch(color=colour(0), label="not flagged")]
    h, _ = ax.get_legend_handles_labels()
    ax.legend(
        handles=[*handles, *h],
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        borderaxespad=0.0,
        frameon=False,
        fontsize=8,
    )
    ax.set_xlim(0, 1)
    ax.set_xlabel("P(lemon)")
    percent_axis(ax, "x")
    ax.set_title("Lemon suspects")
    return ax


@plain_text
def plot_lemon_test(test: Any, ax: Axes | None = None, top: int = 15) -> Axes:
    """Plot each node's distinct failures against what the fleet's rate predicts for it.

    Parameters
    ----------
    test : LemonTest or polars.DataFrame
        A :class:`reliability.models.nodes.LemonTest` (or its ``nodes`` frame).
    ax : matplotlib.axes.Axes or None
        Axes to draw on; None: a new figure.
    top : int
        Flagged nodes labelled by name (the most significant first).

    Returns
    -------
    matplotlib.axes.Axes
        A scatter of ``incidents`` against ``expected`` (log-log, counts + 0.5), flagged nodes in
        the palette's vermillion, the line incidents = expected dashed.
    """
    frame = frame_of(test, "nodes")
    ax = new_axes(ax, figsize=(6.4, 3.6))
    if frame.height == 0 or frame["expected"].max() is None or frame["expected"].max() <= 0:
        return no_data(ax, "no incidents to test", "Lemon nodes: failures against the fleet's rate")
    x = frame["expected"].to_numpy() + 0.5
    y = frame["incidents"].to_numpy() + 0.5
    flagged = frame["flagged"].to_numpy()
    ax.scatter(x[~flagged], y[~flagged], s=10, color=colour(0), alpha=0.5, label="not flagged")
    ax.scatter(x[flagged], y[flagged], s=22, color=colour(3), label="flagged")
    lo, hi = min(x.min(), y.min()) * 0.8, max(x.max(), y.max()) * 1.3
    ax.plot([lo, hi], [lo, hi], color="grey", linestyle="--", linewidth=1, label="as expected")
    for r in frame.filter(pl.col("flagged")).head(top).iter_rows(named=True):
        ax.annotate(
            r["node"],
            (r["expected"] + 0.5, r["incidents"] + 0.5),
            fontsize=6,
            xytext=(3, 2),
            textcoords="offset points",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("expected at the fleet's rate (+0.5)")
    ax.set_ylabel("distinct failures (+0.5)")
    ax.legend(loc="upper left", frameon=False, fontsize=8)
    ax.set_title("Lemon nodes: failures against the fleet's rate")
    return ax
