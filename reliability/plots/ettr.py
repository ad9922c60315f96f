"""Figures of ETTR and checkpoint planning (Kokolis et al. HPCA'25 Figs. 9-10)."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
from matplotlib.axes import Axes

from reliability.plots.style import colour, frame_of, new_axes, percent_axis

__all__ = ["plot_ettr_by_size", "plot_ettr_grid"]


def plot_ettr_by_size(result: Any, ax: Axes | None = None) -> Axes:
    """ETTR by job size, by run (median, 10-90% range) and by GPU time (HPCA'25 Fig. 9); a
    :class:`~reliability.models.RunETTR` or its ``by_size`` frame."""
    ax = new_axes(ax)
    by = frame_of(result, "by_size").sort("bucket")
    x = np.arange(by.height)
    med = by["ettr_median"].to_numpy()
    ax.errorbar(x - 0.1, med, yerr=[med - by["ettr_p10"].to_numpy(), by["ettr_p90"].to_numpy() - med],
                fmt="o", color=colour(0), capsize=3, label="per run: median, 10-90%")  # fmt: skip
    ax.plot(x + 0.1, by["ettr_by_gpu_time"], "s", color=colour(3), label="GPU-time weighted")
    ax.set_xticks(x, [str(b) for b in by["bucket"].to_list()])
    ax.set_xlabel("job size [GPUs, bucket lower edge]")
    ax.set_ylabel("ETTR")
    ax.set_ylim(0, 1.05)
    percent_axis(ax)
    ax.set_title("Effective training time ratio by job size")
    ax.legend(loc="lower left")
    return ax


def plot_ettr_grid(plan: Any, ax: Axes | None = None, target: float | None = None) -> Axes:
    """Expected ETTR vs job size for several checkpoint intervals (HPCA'25 Fig. 10); a
    :class:`~reliability.models.PlanResult` or its ``grid`` frame."""
    ax = new_axes(ax)
    grid = frame_of(plan, "grid")
    target = target if target is not None else getattr(plan, "target_ettr", None)
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
        ax.axhline(target, color="grey", linestyle="--", linewidth=1)
        ax.annotate(
            f"target {target:.2f}",
            (grid["n_gpus"].min(), target),
            xytext=(2, 3),
            textcoords="offset points",
            fontsize=7,
        )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("job size [GPUs]")
    ax.set_ylabel("expected ETTR")
    percent_axis(ax)
    restart = grid["restart_min"][0]
    ax.set_title(f"What-if: ETTR vs size and checkpoint interval (restart {restart:g} min)")
    ax.legend(loc="lower left")
    return ax
