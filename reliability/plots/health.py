"""Figures of node health: a timeline of node states and the fleet's availability over time.

From :func:`reliability.models.nodes.node_health`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np
import polars as pl
from matplotlib.axes import Axes

from reliability.plots.style import (
    colour,
    legend_outside,
    new_axes,
    no_data,
    percent_axis,
    plain_text,
    time_axis,
)

__all__ = ["STATE_COLOURS", "plot_fleet_availability", "plot_node_timeline"]

#: colour of each out-of-service state
STATE_COLOURS = {
    "DOWN": colour(3),
    "FAIL": colour(4),
    "DRAIN": colour(1),
    "REPAIR": colour(0),
    "MAINT": colour(5),
}
#: the fleet availability is drawn as its exact step function up to this many changes, else
#: per period (mean and minimum)
MAX_STEPS = 2000


def _num(t: datetime) -> float:
    import matplotlib.dates as mdates

    return float(mdates.date2num(t))


def timeline_nodes(health: Any, top: int) -> list[tuple[str, str]]:
    """Choose the (cluster, node) rows of the node-state timeline.

    Parameters
    ----------
    health : NodeHealth
        A :class:`~reliability.models.nodes.NodeHealth`.
    top : int
        Most rows shown.

    Returns
    -------
    list of (str, str)
        Every node out of service now, then the nodes with the most downtime, at most ``top``, in
        that order.
    """
    by = health.by_node.filter(pl.col("intervals") > 0)
    ranked = by.sort(["out_now", "downtime_h", "node"], descending=[True, True, False])
    return [(c, n) for c, n in ranked.select("cluster", "node").head(top).iter_rows()]


@plain_text
def plot_node_timeline(health: Any, ax: Axes | None = None, top: int = 30) -> Axes:
    """Plot when each node was out of service, by state (DOWN, DRAIN, FAIL, MAINT, REPAIR).

    Parameters
    ----------
    health : NodeHealth
        A :class:`~reliability.models.nodes.NodeHealth`.
    ax : matplotlib.axes.Axes or None
        Axes to draw on; None: a new figure sized to the number of rows.
    top : int
        Most nodes shown (those out of service now first, then by downtime).

    Returns
    -------
    matplotlib.axes.Axes
        One ``broken_barh`` collection per state, its bars spanning each interval from its start
        to its end (or the observation end while open; open ones hatched), one row per node (the
        first at the top).
    """
    nodes = timeline_nodes(health, top) if health.by_node.height else []
    ax = new_axes(ax, figsize=(6.4, 0.22 * max(len(nodes), 1) + 1.6))
    title = "Node states"
    if not nodes or health.start is None or health.end is None:
        return no_data(ax, "no node was out of service in the window", title)
    row = {key: i for i, key in enumerate(nodes)}
    iv = health.intervals.with_columns(
        s=pl.max_horizontal("start", pl.lit(health.start).cast(pl.Datetime("us", "UTC"))),
        e=pl.min_horizontal(
            pl.col("end").fill_null(pl.lit(health.end).cast(pl.Datetime("us", "UTC"))),
            pl.lit(health.end).cast(pl.Datetime("us", "UTC")),
        ),
    )
    for state in ("DOWN", "FAIL", "REPAIR", "DRAIN", "MAINT"):
        part = iv.filter(pl.col("state") == state)
        for is_open in (False, True):
            p = part.filter(pl.col("open") == is_open)
            spans, ys = [], []
            for c, n, s, e in p.select("cluster", "node", "s", "e").iter_rows():
                if (c, n) not in row:
                    continue
                a = _num(s)
                spans.append((a, max(_num(e) - a, 0.0)))
                ys.append(len(nodes) - 1 - row[(c, n)])
            for y in sorted(set(ys)):
                mine = [sp for sp, yy in zip(spans, ys, strict=True) if yy == y]
                ax.broken_barh(
                    mine,
                    (y - 0.35, 0.7),
                    facecolors=STATE_COLOURS[state],
                    hatch="///" if is_open else None,
                    edgecolor="white" if is_open else "none",
                    label=(f"{state}" + (" (open at the end)" if is_open else ""))
                    if y == max(ys)
                    else None,
                )
    ax.set_yticks(np.arange(len(nodes)), [n for _, n in reversed(nodes)], fontsize=7)
    ax.set_ylim(-0.6, len(nodes) - 0.4)
    time_axis(ax, health.start, health.end)
    ax.grid(False, axis="y")
    shown = len(nodes)
    total = int((health.by_node["intervals"] > 0).sum())
    ax.set_title(
        title + (f" ({shown} of {total} nodes with out-of-service time)" if total > shown else ""),
        fontsize=9,
    )
    legend_outside(ax)
    return ax


@plain_text
def plot_fleet_availability(health: Any, ax: Axes | None = None) -> Axes:
    """Plot the share of the fleet's nodes in service over time.

    Parameters
    ----------
    health : NodeHealth
        A :class:`~reliability.models.nodes.NodeHealth`.
    ax : matplotlib.axes.Axes or None
        Axes to draw on; None: a new figure.

    Returns
    -------
    matplotlib.axes.Axes
        With at most :data:`MAX_STEPS` changes, the exact step function (a ``step`` line, x =
        ``fleet.time`` plus the observation end, y = ``fleet.availability``); else per period the
        time-weighted mean (a line at each period's start) and the minimum (a dashed line).
    """
    ax = new_axes(ax, figsize=(6.4, 2.8))
    title = "Fleet availability (share of nodes in service)"
    if health.fleet.height == 0 or health.start is None or health.end is None:
        return no_data(ax, "no observation window", title)
    if health.fleet.height <= MAX_STEPS:
        t = [*health.fleet["time"].to_list(), health.end]
        a = health.fleet["availability"].to_list()
        ax.step(t, [*a, a[-1]], where="post", color=colour(0), label="nodes in service")
    else:
        p = health.by_period
        ax.plot(
            p["period"].to_list(),
            p["availability"].to_numpy(),
            color=colour(0),
            label=f"mean per {health.every}",
        )
        ax.plot(
            p["period"].to_list(),
            p["min_availability"].to_numpy(),
            color=colour(3),
            linestyle="--",
            linewidth=1,
            label=f"minimum per {health.every}",
        )
    fa = health.fleet_availability
    if fa is not None:
        ax.axhline(
            fa, color="grey", linestyle=":", linewidth=1, label=f"window average {100 * fa:.2f}%"
        )
    low = float(health.fleet["availability"].min())
    ax.set_ylim(max(0.0, min(low, fa or 1.0) - 0.05), 1.005)
    percent_axis(ax, decimals=None)
    time_axis(ax, health.start, health.end)
    ax.set_title(title, fontsize=9)
    legend_outside(ax)
    return ax
