"""Figures of a GPU cluster's jobs and failures (Kokolis et al. HPCA'25 Figs. 3, 5-8)."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
from matplotlib.axes import Axes

from reliability.plots.style import colour, frame_of, new_axes, percent_axis

__all__ = [
    "plot_failure_rate",
    "plot_failure_taxonomy",
    "plot_job_sizes",
    "plot_job_states",
    "plot_lemon_suspects",
    "plot_mttf",
    "plot_secondary_preemptions",
]


def plot_job_states(states: pl.DataFrame, ax: Axes | None = None) -> Axes:
    """Share of attempts and of GPU time by final state (HPCA'25 Fig. 3); ``states`` from
    :func:`reliability.models.job_state_breakdown`."""
    ax = new_axes(ax)
    s = states.sort("attempts")
    y = np.arange(s.height)
    ax.barh(y - 0.2, s["share"], height=0.4, color=colour(0), label="attempts")
    ax.barh(y + 0.2, s["gpu_share"], height=0.4, color=colour(1), label="GPU time")
    ax.set_yticks(y, s["state"].to_list())
    ax.set_xscale("log")
    ax.set_xlabel("share (log scale)")
    percent_axis(ax, "x", 1)
    ax.set_title("Job attempts by final state")
    ax.legend(loc="lower right")
    return ax


def plot_job_sizes(sizes: pl.DataFrame, ax: Axes | None = None) -> Axes:
    """Jobs and GPU time by job size (HPCA'25 Fig. 6); from :func:`job_size_distribution`."""
    ax = new_axes(ax)
    x = np.arange(sizes.height)
    ax.bar(x - 0.2, sizes["job_share"], width=0.4, color=colour(0), label="jobs")
    ax.bar(x + 0.2, sizes["gpu_share"], width=0.4, color=colour(1), label="GPU time")
    ax.set_xticks(x, [str(b) for b in sizes["bucket"].to_list()])
    ax.set_xlabel("job size [GPUs, bucket lower edge]")
    ax.set_ylabel("share")
    percent_axis(ax)
    ax.set_title("Job sizes: many small jobs, GPU time in the large ones")
    ax.legend()
    return ax


def plot_failure_taxonomy(taxonomy: pl.DataFrame, ax: Axes | None = None, top: int = 12) -> Axes:
    """Attempts that failed for a non-user reason, by domain and cause; from
    :func:`failure_taxonomy`."""
    ax = new_axes(ax)
    t = (
        taxonomy.drop_nulls("share_of_failures")
        .sort("attempts", descending=True)
        .head(top)
        .reverse()
    )
    labels = [f"{d}: {c}" for d, c in t.select("failure_domain", "failure_cause").iter_rows()]
    domains = sorted(set(t["failure_domain"].to_list()))
    colours = [colour(domains.index(d)) for d in t["failure_domain"].to_list()]
    ax.barh(np.arange(t.height), t["attempts"], color=colours)
    ax.set_yticks(np.arange(t.height), labels)
    ax.set_xlabel("attempts")
    if t.height and t["attempts"].max() / max(t["attempts"].min(), 1) > 100:
        ax.set_xscale("log")
    ax.set_title("Failure taxonomy (non-user failures)")
    return ax


def plot_failure_rate(series: Any, ax: Axes | None = None) -> Axes:
    """Weekly hardware failure rate of large jobs with its 95% interval (HPCA'25 Fig. 5); a
    :class:`~reliability.models.RateSeries` or its ``series`` frame."""
    ax = new_axes(ax)
    s = frame_of(series, "series").sort("week")
    weeks = s["week"].to_list()
    ax.fill_between(
        weeks,
        s["ci_low"],
        s["ci_high"],
        color=colour(0),
        alpha=0.2,
        linewidth=0,
        label="95% interval",
    )
    ax.plot(
        weeks,
        s["rate_per_1000_node_days"],
        marker="o",
        markersize=3,
        color=colour(0),
        label="weekly r_f",
    )
    ax.set_ylabel("failures per 1000 node-days")
    ax.set_xlabel("week (UTC)")
    ax.set_title("Hardware failure rate over time")
    ax.legend()
    ax.figure.autofmt_xdate()
    return ax


def plot_mttf(
    result: Any,
    ax: Axes | None = None,
    project_to: int = 131072,
    *,
    rate_per_node_day: float | None = None,
    gpus_per_node: int | None = None,
) -> Axes:
    """MTTF by job size: measured (with 95% interval) and the model 1/(N r_f), projected to
    ``project_to`` GPUs (HPCA'25 Fig. 7); an :class:`~reliability.models.MTTFResult`, or its
    ``by_size`` frame with ``rate_per_node_day`` given."""
    ax = new_axes(ax)
    by = frame_of(result, "by_size").with_columns(pl.col("bucket").cast(pl.Int64))
    fin = by.filter(pl.col("mttf_h").is_finite())
    x = fin["bucket"].to_numpy().astype(float)
    y = fin["mttf_h"].to_numpy()
    lo = np.clip(y - fin["mttf_h_low"].to_numpy(), 0, None)
    hi = np.where(
        np.isfinite(fin["mttf_h_high"].to_numpy()), fin["mttf_h_high"].to_numpy() - y, y * 3
    )
    ax.errorbar(x, y, yerr=[lo, hi], fmt="o", color=colour(0), capsize=3, label="measured (95% CI)")
    rate = (
        rate_per_node_day
        if rate_per_node_day is not None
        else getattr(result, "rate_per_node_day_", None)
    )
    gpn = gpus_per_node or getattr(result, "gpus_per_node", 8)
    if rate:
        n = np.geomspace(1, project_to, 200)
        model = 24.0 / (np.maximum(n / gpn, 1.0) * rate)
        ax.plot(
            n, model, color=colour(3), label=f"1/(N r_f), r_f = {1000 * rate:.2f}/1000 node-days"
        )
        for g in (16384, 131072):
            if g <= project_to:
                m = 24.0 / (g / gpn * rate)
                ax.annotate(
                    f"{g:,} GPUs: {m:.2g} h",
                    (g, m),
                    textcoords="offset points",
                    xytext=(-60, 10),
                    fontsize=7,
                )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("job size [GPUs]")
    ax.set_ylabel("MTTF [h]")
    ax.set_title("Mean time to failure vs job size")
    ax.legend()
    return ax


def plot_secondary_preemptions(stats: dict[str, float], ax: Axes | None = None) -> Axes:
    """Failure overhead split into hardware-failed GPU-hours and the secondary preemptions
    their requeues cause (HPCA'25 Fig. 8); ``stats`` from :func:`secondary_preemptions`."""
    ax = new_axes(ax, figsize=(6.4, 2.2))
    hw, sec = stats["hardware_gpu_hours"], stats["gpu_hours"]
    ax.barh([0], [hw], color=colour(0), label="hardware-failed attempts")
    ax.barh(
        [0],
        [sec],
        left=[hw],
        color=colour(1),
        label=f"secondary preemptions ({stats['count']:.0f})",
    )
    ax.set_yticks([])
    ax.set_xlabel("GPU-hours of failure overhead")
    share = stats["share_of_failure_overhead"]
    ax.set_title(f"Secondary preemptions: {100 * share:.1f}% of the failure overhead (paper: 16%)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.45), ncol=2)
    return ax


def plot_lemon_suspects(
    scores: pl.DataFrame, ax: Axes | None = None, top: int = 15, threshold: float | None = None
) -> Axes:
    """Lemon probability of the top-ranked nodes (from
    :func:`reliability.models.score_nodes`), flagged ones highlighted."""
    ax = new_axes(ax, figsize=(6.4, 0.25 * min(top, scores.height) + 1.2))
    s = scores.head(top).reverse()
    colours = [colour(3) if f else colour(0) for f in s["flagged"].to_list()]
    ax.barh(np.arange(s.height), s["probability"], color=colours)
    ax.set_yticks(np.arange(s.height), s["node"].to_list(), fontsize=7)
    if threshold is not None:
        ax.axvline(threshold, color="grey", linestyle="--", linewidth=1)
    ax.set_xlim(0, 1)
    ax.set_xlabel("P(lemon)")
    percent_axis(ax, "x")
    ax.set_title("Lemon suspects (red: flagged)")
    return ax
