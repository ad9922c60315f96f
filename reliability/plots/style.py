"""Shared look of the figures: the Okabe-Ito colour-blind-safe palette and small helpers."""

from __future__ import annotations

from typing import Any

from matplotlib.axes import Axes

__all__ = ["PALETTE", "new_axes", "percent_axis"]

#: Okabe & Ito (2008), safe for the common colour-vision deficiencies
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]


def new_axes(ax: Axes | None, figsize: tuple[float, float] = (6.4, 3.6)) -> Axes:
    """``ax`` itself, or the axes of a new figure (pyplot, for notebooks) styled like the report."""
    if ax is not None:
        _style(ax)
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    _style(ax)
    return ax


def _style(ax: Axes) -> None:
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(True, alpha=0.3, linewidth=0.6)
    ax.set_axisbelow(True)


def percent_axis(ax: Axes, axis: str = "y", decimals: int = 0) -> None:
    """Format an axis holding fractions as percentages."""
    from matplotlib.ticker import PercentFormatter

    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(
        PercentFormatter(1.0, decimals=decimals)
    )


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def frame_of(obj: Any, attr: str):
    """The polars frame behind a result object (``obj.attr``), or ``obj`` if it is a frame."""
    import polars as pl

    if isinstance(obj, pl.DataFrame):
        return obj
    value = getattr(obj, attr, None)
    if value is None:
        raise TypeError(
            f"expected a polars DataFrame or an object with .{attr}, got {type(obj).__name__}"
        )
    return value
