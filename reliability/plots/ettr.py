"""Figures of ETTR and checkpoint planning (Kokolis et al. HPCA'25 Figs. 9-10)."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
from matplotlib.axes import Axes

from reliability.plots.cluster import bucket_label
from reliability.plots.style import (
    colour,
    frame_of,
    legend_outside,
    new_axes,
    no_data,
    percent_axis,
    plain_text,
)

__all__ = ["plot_ettr_by_size", "plot_ettr_grid"]


@plain_text
def plot_ettr_by_size(result: Any, ax: Axes | None = None) -> Axes:
    """Plot ETTR by job size, by run (median, 10-90% range) and by GPU time.

    Kokolis et al., HPCA '25, §V, Fig. 9.

    Parameters
    ----------
    result : RunETTR or polars.DataFrame
        A :class:`~reliability.models.recovery.RunETTR` (or its ``by_size`` frame).
    ax : matplotlib.axes.Axes or None
        Axes to draw on; None: a new figure.

    Returns
    -------
    matplotlib.axes.Axes
        An ``errorbar`` at x = 0, 1, ... (one per bucket) of ``ettr_median`` with the
        ``ettr_p10``-``ettr_p90`` range, and ``s`` markers of ``ettr_by_gpu_time`` for the buckets
        where it is defined (not for CPU-only jobs).
    """
    ax = new_axes(ax)
    by = frame_of(result, "by_size").sort("bucket")
    title = "Effective training time ratio by job size"
    if by.height == 0:
        return no_data(ax, "no job runs with wall time to measure", title)
    x = np.arange(by.height)
    med = by["ettr_median"].to_numpy()
    ax.errorbar(
        x - 0.1,
        med,
        yerr=[med - by["ettr_p10"].to_numpy(), by["ettr_p90"].to_numpy() - med],
        fmt="o",
        color=colour(0),
        capsize=3,
        label="per run: median, 10-90%",
    )
    g = by.with_row_index("i").drop_nulls("ettr_by_gpu_time")
    if g.height:
        ax.plot(
            g["i"].to_numpy() + 0.1,
            g["ettr_by_gpu_time"].to_numpy(),
            "s",
            color=colour(3),
            label="GPU-time weighted",
        )
    ax.set_xticks(x, [bucket_label(b) for b in by["bucket"].to_list()])
    ax.set_xlabel("job size [GPUs, bucket lower edge]")
    ax.set_ylabel("ETTR")
    ax.set_ylim(0, 1.05)
    percent_axis(ax)
    ax.set_title(title)
    legend_outside(ax)
    return ax


@plain_text
def plot_ettr_grid(plan: Any, ax: Axes | None = None, target: float | None = None) -> Axes:
    """Plot expected ETTR vs job size for several checkpoint intervals.

    Kokolis et al., HPCA '25, §V, Fig. 10.

    Parameters
    ----------
    plan : PlanResult or polars.DataFrame
        A :class:`~reliability.models.recovery.PlanResult` (or its ``grid`` frame).
    ax : matplotlib.axes.Axes or None
        Axes to draw on; None: a new figure.
    target : float or None
        The target ETTR drawn as a dashed line, in (0, 1); None: the plan's ``target_ettr``.

    Returns
    -------
    matplotlib.axes.Axes
        One line per checkpoint interval (shortest first), x = ``n_gpus`` (log2), y = ``ettr``.
    """
    ax = new_axes(ax)
    grid = frame_of(plan, "grid")
    target = target if target is not None else getattr(plan, "target_ettr", None)
    title = "What-if: expected ETTR vs job size and checkpoint interval"
    if grid.height == 0:
        return no_data(ax, "no plan", title)
    for i, (dt,) in enumerate(
        grid.select("interval_min").unique().sort("interval_min").iter_rows()
    ):
        g = grid.filter(pl.col("interval_min") == dt).sort("n_gpus")
        ax.plot(
            g["n_gpus"],
            g["ettr"],
            marker="o",
            markersize=3,
            color=colour(i),
            label=f"checkpoint every {dt:g} min",
        )
    if target:
        ax.axhline(target, color="grey", linestyle="--", linewidth=1, label=f"target {target:.2f}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("job size [GPUs]")
    ax.set_ylabel("expected ETTR")
    ax.set_ylim(0, 1.02)
    percent_axis(ax)
    restart = grid["restart_min"][0]
    ax.set_title(f"{title} (restart {restart:g} min)", fontsize=9)
    legend_outside(ax)
    return ax
