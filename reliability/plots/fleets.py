"""Your failure rate beside the published fleets' (:func:`reliability.models.fleets.compare_fleets`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
from matplotlib.axes import Axes

from reliability.plots.style import PALETTE, frame_of, legend_outside, new_axes, no_data

__all__ = ["plot_fleet_rates"]

#: the x axis reaches at most this many times the largest published value (a huge upper bound
#: of yours from a few node-days would squash every fleet to the left edge)
MAX_X_OVER_FLEETS = 3.0


def plot_fleet_rates(comparison: Any, ax: Axes | None = None) -> Axes:
    """Plot your r_f and its interval beside each published fleet's rate.

    Parameters
    ----------
    comparison : FleetComparison or polars.DataFrame
        A :class:`~reliability.models.fleets.FleetComparison` (or its ``summary``: ``fleet``,
        ``rate_per_node_day``, ``ci_low``, ``ci_high`` [failures per node-day], yours first).
    ax : matplotlib.axes.Axes or None
        Axes to draw on; None: a new figure.

    Returns
    -------
    matplotlib.axes.Axes
        One row per fleet with a per-node rate [per 1000 node-days], top to bottom in the
        summary's order: an ``errorbar`` (label ``published, with interval``) where an interval
        is published, hollow markers (``published rate, no interval``) where only a rate is;
        your interval as a shaded band (``your interval``, or ``your upper bound`` with no
        failure) and your rate as a vertical line (``your r_f``). The x axis reaches at most
        :data:`MAX_X_OVER_FLEETS` times the largest published value (noted in the title when it
        cuts your band).
    """
    ax = new_axes(ax, (6.4, 3.8))
    s = frame_of(comparison, "summary")
    title = "Failure rate beside published fleets"
    if s.height == 0 or "fleet" not in s.columns:
        return no_data(ax, "no comparison to draw", title)
    yours = s.row(0, named=True) if s["fleet"][0] == "yours" else None
    f = s.filter((pl.col("fleet") != "yours") & pl.col("rate_per_node_day").is_not_null())
    if f.height == 0:
        return no_data(ax, "no published fleet with a per-node rate", title)
    y = np.arange(f.height)[::-1].astype(float)
    rate = 1000 * f["rate_per_node_day"].to_numpy()
    has = f["ci_low"].is_not_null().to_numpy()
    if has.any():
        lo = 1000 * f["ci_low"].to_numpy()[has].astype(float)
        hi = 1000 * f["ci_high"].to_numpy()[has].astype(float)
        ax.errorbar(
            rate[has],
            y[has],
            xerr=[rate[has] - lo, hi - rate[has]],
            fmt="o",
            color=PALETTE[0],
            markersize=4,
            capsize=3,
            label="published, with interval",
        )
    if (~has).any():
        ax.plot(
            rate[~has],
            y[~has],
            "o",
            mfc="none",
            color=PALETTE[0],
            markersize=5,
            linestyle="none",
            label="published rate, no interval",
        )
    top = float(np.nanmax(np.concatenate([rate, 1000 * f["ci_high"].drop_nulls().to_numpy()])))
    xmax = MAX_X_OVER_FLEETS * top
    if yours is not None and yours["rate_per_node_day"] is not None:
        xmax = max(xmax, 1.15 * 1000 * yours["rate_per_node_day"])
    if yours is not None and yours["ci_high"] is not None:
        ylo, yhi = 1000 * (yours["ci_low"] or 0.0), 1000 * yours["ci_high"]
        band = "your interval" if yours["rate_per_node_day"] is not None else "your upper bound"
        ax.axvspan(ylo, min(yhi, xmax), color=PALETTE[1], alpha=0.25, label=band)
        if yours["rate_per_node_day"] is not None:
            ax.axvline(1000 * yours["rate_per_node_day"], color=PALETTE[1], label="your r_f")
        if yhi > xmax:
            title += f" ({band} reaches {yhi:,.3g}: cut)"
    ax.set_xlim(0, xmax)
    ax.set_yticks(y, [str(v) for v in f["fleet"]], fontsize=7)
    ax.set_xlabel("failures per 1000 node-days")
    ax.set_title(title, fontsize=9)
    legend_outside(ax)
    return ax
