"""Figures of a TPU pod (Zu et al. NSDI'24 Figs. 1 and 12, Table 2) and of sweeps."""

from __future__ import annotations

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
)

__all__ = [
    "plot_availability",
    "plot_component_rates",
    "plot_recovery",
    "plot_routing",
    "plot_sweep",
]


@plain_text
def plot_component_rates(rates: pl.DataFrame, ax: Axes | None = None) -> Axes:
    """Plot the failure rate per component type and period, per component-day.

    Zu et al., NSDI '24, Fig. 12.

    Parameters
    ----------
    rates : polars.DataFrame
        The frame of :func:`reliability.models.failures.component_failure_rates` (``component_type``,
        ``period``, ``rate_per_day`` [failures per component-day]).
    ax : matplotlib.axes.Axes or None
        Axes to draw on; None: a new figure.

    Returns
    -------
    matplotlib.axes.Axes
        Log y: one line per component type (alphabetical), x = ``period``, y = ``rate_per_day`` of
        the periods with at least one failure (a log scale has no zero).
    """
    ax = new_axes(ax)
    title = "Component failure rates by week"
    pos = rates.filter(pl.col("rate_per_day") > 0)
    if pos.height == 0:
        return no_data(ax, "no component failures", title)
    for i, (ctype,) in enumerate(
        rates.select("component_type").unique().sort("component_type").iter_rows()
    ):
        r = pos.filter(pl.col("component_type") == ctype).sort("period")
        if r.height:
            ax.plot(
                r["period"].to_list(),
                r["rate_per_day"].to_numpy(),
                marker="o",
                markersize=2,
                linewidth=1,
                color=colour(i),
                label=ctype,
            )
    ax.set_yscale("log")
    ax.set_ylabel("failures per component-day")
    percent_axis(ax, "y", 3)
    ax.set_title(title)
    legend_outside(ax)
    ax.figure.autofmt_xdate()
    return ax


@plain_text
def plot_availability(
    curves: pl.DataFrame, measured: pl.DataFrame | None = None, ax: Axes | None = None
) -> Axes:
    """Plot job availability vs job size, analytic lines and measured points.

    Zu et al., NSDI '24, Fig. 1.

    Parameters
    ----------
    curves : polars.DataFrame
        Analytic availability: ``pod, mode, ft_routing, n_chips, availability``.
    measured : polars.DataFrame or None
        Measured points: ``pod, mode, ft_routing, n_chips, measured, stderr``.
    ax : matplotlib.axes.Axes or None
        Axes to draw on; None: a new figure.

    Returns
    -------
    matplotlib.axes.Axes
        Per (pod, mode, ft_routing) of ``curves`` in order, a line (x = ``n_chips``, y =
        ``availability``) and, where measured, an ``errorbar`` of ``measured`` ± 1.96 stderr
        (sizes measured with ``ft_routing`` null, where routing makes no difference, with the
        first line of their pod and mode): every measured row is drawn once.
    """
    ax = new_axes(ax)
    title = "Job availability vs size (lines: model; points: simulated pod)"
    if curves.height == 0:
        return no_data(ax, "no pod to model", title)
    keys = curves.select("pod", "mode", "ft_routing").unique(maintain_order=True)
    seen: set[tuple[Any, Any]] = set()
    for i, (pod, mode, ft) in enumerate(keys.iter_rows()):
        # a measured size where routing makes no difference (ft_routing null: a job inside one
        # cube) is drawn once, with the first curve of its pod and mode
        first = (pod, mode) not in seen
        seen.add((pod, mode))
        c = curves.filter(
            (pl.col("pod") == pod) & (pl.col("mode") == mode) & pl.col("ft_routing").eq_missing(ft)
        ).sort("n_chips")
        label = f"{pod} {mode}" + (
            "" if ft is None else (" + FT routing" if ft else ", no FT routing")
        )
        ax.plot(
            c["n_chips"],
            c["availability"],
            color=colour(i),
            linestyle="-" if ft is not False else ":",
            label=label,
        )
        if measured is not None and measured.height:
            m = measured.filter(
                (pl.col("pod") == pod)
                & (pl.col("mode") == mode)
                & (
                    pl.col("ft_routing").eq_missing(ft)
                    | (pl.col("ft_routing").is_null() & pl.lit(first))
                )
            ).sort("n_chips")
            if m.height:
                ax.errorbar(
                    m["n_chips"],
                    m["measured"],
                    yerr=1.96 * m["stderr"].to_numpy(),
                    fmt="o",
                    markersize=3,
                    color=colour(i),
                    capsize=2,
                )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("job size [chips]")
    ax.set_ylabel("job availability")
    percent_axis(ax)
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title, fontsize=9)
    legend_outside(ax)
    return ax


@plain_text
def plot_recovery(result: Any, ax: Axes | None = None) -> Axes:
    """Plot the goodput lost per failure type and recovery path (reconfigure vs reroute).

    Zu et al., NSDI '24, §6.

    Parameters
    ----------
    result : RecoveryComparison or polars.DataFrame
        A :class:`~reliability.models.pods.RecoveryComparison` (or its ``summary`` frame).
    ax : matplotlib.axes.Axes or None
        Axes to draw on; None: a new figure.

    Returns
    -------
    matplotlib.axes.Axes
        One ``barh`` container of ``goodput_loss`` [fraction of job time], one bar per summary
        row in order.
    """
    ax = new_axes(ax, figsize=(6.4, 3.0))
    s = frame_of(result, "summary")
    labels = [f"{c} / {p}" for c, p in s.select("component", "path").iter_rows()]
    colours = [colour(0) if p == "reconfigure" else colour(2) for p in s["path"].to_list()]
    ax.barh(np.arange(s.height), s["goodput_loss"], color=colours)
    ax.set_yticks(np.arange(s.height), labels)
    ax.set_xlabel("goodput lost (share of job time)")
    percent_axis(ax, "x", 3)
    ax.set_title("Recovery paths: reconfigure (blue) vs reroute (green)")
    return ax


@plain_text
def plot_routing(table: Any, ax: Axes | None = None) -> Axes:
    """Plot the all-to-all throughput kept with one OCS down, ours (LP optimum) beside the paper's.

    Zu et al., NSDI '24, Table 2.

    Parameters
    ----------
    table : list of ThroughputResult or polars.DataFrame
        :class:`~reliability.models.pods.ThroughputResult` objects, or their stacked ``summary`` rows.
    ax : matplotlib.axes.Axes or None
        Axes to draw on; None: a new figure.

    Returns
    -------
    matplotlib.axes.Axes
        Bar containers ``max concurrent flow`` (``ratio``) and ``NSDI'24 Table 2``
        (``paper_ratio``; nan where the paper has no figure), one bar per slice.
    """
    if not isinstance(table, pl.DataFrame):
        table = pl.concat([r.summary for r in table]) if table else pl.DataFrame()
    ax = new_axes(ax, figsize=(6.4, 3.0))
    title = "All-to-all throughput with one OCS down"
    if table.height == 0:
        return no_data(ax, "no slices", title)
    x = np.arange(table.height)
    ax.bar(
        x - 0.2,
        table["ratio"].fill_null(np.nan),
        width=0.4,
        color=colour(0),
        label="max concurrent flow (this model)",
    )
    ax.bar(
        x + 0.2,
        table["paper_ratio"].fill_null(np.nan),
        width=0.4,
        color=colour(1),
        label="NSDI'24 Table 2 (measured)",
    )
    names = [s + (" twisted" if t else "") for s, t in table.select("shape", "twisted").iter_rows()]
    ax.set_xticks(x, names)
    ax.set_ylim(0.85, 1.05)
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_ylabel("throughput failed / healthy")
    percent_axis(ax)
    ax.set_title(title)
    legend_outside(ax)
    return ax


@plain_text
def plot_sweep(aggregates: Any, ax: Axes | None = None, keys: list[str] | None = None) -> Axes:
    """Plot a sweep's aggregates: mean and 95% interval per cell and metric.

    Parameters
    ----------
    aggregates : SweepResult or polars.DataFrame
        A :class:`~reliability.sweep.SweepResult` (or its ``aggregates`` frame).
    ax : matplotlib.axes.Axes or None
        Axes to draw on; None: a new figure sized to the number of rows.
    keys : list of str or None
        Metrics to show (default: all).

    Returns
    -------
    matplotlib.axes.Axes
        One ``errorbar`` per metric (alphabetical), x = ``mean`` with the ``ci_low``-``ci_high``
        interval (none with one seed), y = the row of each cell and metric.
    """
    frame = frame_of(aggregates, "aggregates")
    a = frame if keys is None else frame.filter(pl.col("key").is_in(keys))
    ax = new_axes(ax, figsize=(6.4, max(2.4, 0.22 * a.height + 1)))
    if a.height == 0:
        return no_data(ax, "no sweep results", "Sweep results")
    labels = [f"{c}  {k}" for c, k in a.select("cell", "key").iter_rows()]
    y = np.arange(a.height)
    m = a["mean"].fill_null(np.nan).to_numpy()
    err = np.vstack(
        [
            m - a["ci_low"].fill_null(np.nan).to_numpy(),
            a["ci_high"].fill_null(np.nan).to_numpy() - m,
        ]
    )
    err = np.nan_to_num(err, nan=0.0)
    for i, k in enumerate(sorted(set(a["key"].to_list()))):
        sel = (a["key"] == k).to_numpy()
        ax.errorbar(
            m[sel],
            y[sel],
            xerr=err[:, sel],
            fmt="o",
            markersize=3,
            capsize=2,
            color=colour(i),
            label=k,
        )
    ax.set_yticks(y, labels, fontsize=6)
    ax.set_xlabel("value (mean over seeds, 95% interval)")
    ax.set_title("Sweep results")
    legend_outside(ax)
    return ax
