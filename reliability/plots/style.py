"""Shared look of the figures: the Okabe-Ito colour-blind-safe palette and small helpers.

Legends outside the data, an honest "no data" panel, time axes that fit the data's span, text
drawn as it is (never as mathtext).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, ParamSpec

import polars as pl
from matplotlib.axes import Axes

__all__ = [
    "PALETTE",
    "colour",
    "frame_of",
    "legend_outside",
    "new_axes",
    "no_data",
    "percent_axis",
    "plain_text",
    "time_axis",
]

P = ParamSpec("P")

#: Okabe & Ito (2008), safe for the common colour-vision deficiencies
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]


def new_axes(ax: Axes | None, figsize: tuple[float, float] = (6.4, 3.6)) -> Axes:
    """Return the given axes, or the axes of a new figure, styled like the report.

    Parameters
    ----------
    ax : matplotlib.axes.Axes or None
        Axes to draw on; None: a new pyplot figure (for notebooks).
    figsize : (float, float)
        Size of a new figure [inches].

    Returns
    -------
    matplotlib.axes.Axes
        The styled axes.
    """
    if ax is not None:
        _style(ax)
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    _style(ax)
    return ax


def plain_text(plot: Callable[P, Axes]) -> Callable[P, Axes]:
    """Make a plot function draw its text as it is, never as mathtext.

    Names from the data (jobs, nodes, states, QoS classes, titles built from them) are text:
    matplotlib would read ``sweep_$lr_$bs`` or ``cost $5 and $6`` as mathtext between two
    ``$`` and fail on it, or draw a formula. Every plot function is wrapped: after it draws,
    every text of its axes (title, axis labels, tick labels, legend, annotations) has
    ``parse_math=False``.

    Parameters
    ----------
    plot : callable
        A plot function returning the axes it drew on.

    Returns
    -------
    callable
        The same function, its axes' text plain.
    """

    @functools.wraps(plot)
    def plain(*args: P.args, **kwargs: P.kwargs) -> Axes:
        from matplotlib.text import Text

        ax = plot(*args, **kwargs)
        for t in ax.findobj(Text):
            t.set_parse_math(False)
        return ax

    return plain


def _style(ax: Axes) -> None:
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(True, alpha=0.3, linewidth=0.6)
    ax.set_axisbelow(True)


def percent_axis(ax: Axes, axis: str = "y", decimals: int | None = 0) -> None:
    """Format an axis holding fractions as percentages.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes.
    axis : {"x", "y"}
        Which axis.
    decimals : int or None
        Decimals shown; None: matplotlib chooses.
    """
    from matplotlib.ticker import PercentFormatter

    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(
        PercentFormatter(1.0, decimals=decimals)
    )


def colour(i: int) -> str:
    """Return a palette colour (cycling).

    Parameters
    ----------
    i : int
        Index into :data:`PALETTE`.

    Returns
    -------
    str
        The colour's hex code.
    """
    return PALETTE[i % len(PALETTE)]


def legend_outside(ax: Axes, **kw: Any) -> None:
    """Draw a legend to the right of the axes, outside the data (nothing is drawn under it).

    No legend is drawn when nothing is labelled.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes.
    **kw
        Passed to ``Axes.legend``.
    """
    handles, _labels = ax.get_legend_handles_labels()
    if not handles:
        return
    ax.legend(
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        borderaxespad=0.0,
        frameon=False,
        fontsize=8,
        **kw,
    )


def no_data(ax: Axes, message: str, title: str | None = None) -> Axes:
    """Make axes say why there is nothing to draw (instead of an empty or misleading chart).

    ``ax.reliability_no_data`` holds the message (a report shows it as a note instead).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes.
    message : str
        Why there is nothing to draw.
    title : str or None
        The plot's title.

    Returns
    -------
    matplotlib.axes.Axes
        ``ax``, with the message and no ticks.
    """
    ax.reliability_no_data = message  # type: ignore[attr-defined]
    ax.text(
        0.5,
        0.5,
        message,
        ha="center",
        va="center",
        transform=ax.transAxes,
        fontsize=9,
        color="#555555",
        wrap=True,
    )
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    if title:
        ax.set_title(title)
    return ax


def time_axis(ax: Axes, start: datetime, end: datetime, axis: str = "x") -> None:
    """Make a UTC time axis from ``start`` to ``end``.

    A short span gets minutes, a long one dates; an instant gets a one-hour window around it.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes.
    start, end : datetime
        The span shown [UTC].
    axis : {"x", "y"}
        Which axis.
    """
    import matplotlib.dates as mdates

    if end <= start:
        start, end = start - timedelta(minutes=30), start + timedelta(minutes=30)
    (ax.set_xlim if axis == "x" else ax.set_ylim)(start, end)
    loc = mdates.AutoDateLocator(tz="UTC")
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(loc)
    target.set_major_formatter(mdates.ConciseDateFormatter(loc, tz="UTC"))


def frame_of(obj: Any, attr: str) -> pl.DataFrame:
    """Return the polars frame behind a result object, or the object if it is a frame.

    Parameters
    ----------
    obj : object
        A result or a polars frame.
    attr : str
        The result's attribute holding the frame.

    Returns
    -------
    polars.DataFrame
        ``obj`` or ``obj.<attr>``.

    Raises
    ------
    TypeError
        If neither is a frame.
    """
    if isinstance(obj, pl.DataFrame):
        return obj
    value = getattr(obj, attr, None)
    if not isinstance(value, pl.DataFrame):
        raise TypeError(
            f"expected a polars DataFrame or an object with .{attr}, got {type(obj).__name__}"
        )
    return value
