"""The report as data: an action list, headline cards, and sections.

Sections hold text, figures and tables, rendered to HTML and PDF.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import polars as pl
from matplotlib.figure import Figure as MplFigure

__all__ = ["Action", "Card", "Figure", "Report", "Section", "Table", "Text", "anchor"]


def anchor(title: str) -> str:
    """Make the HTML id of a section title.

    Parameters
    ----------
    title : str
        The section title, e.g. ``"Node health"``.

    Returns
    -------
    str
        Lower-case words joined by ``-``, e.g. ``"node-health"``.
    """
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


@dataclass
class Text:
    """A paragraph (plain text; escaped when rendered).

    ``kind="note"`` marks what the data could not support (small samples, what was not
    estimable and why).
    """

    text: str
    kind: str = "text"


@dataclass
class Figure:
    """A figure with its caption (what it shows, which paper figure) and its numbers."""

    name: str
    figure: MplFigure
    caption: str
    data: pl.DataFrame | None = None
    #: the figure as inline SVG, once rendered (the HTML reuses it; the PDF rasterises the
    #: same layout)
    svg: str | None = None


@dataclass
class Table:
    """A table (a polars frame) with a caption; long tables are cut to ``max_rows``.

    ``wrap`` names text columns that hold long values (paths, reasons) the PDF wraps.
    ``scales`` gives known scales of float columns (1 for fractions): a value far below its
    column's scale is floating-point residue and prints as 0
    (:func:`reliability._result.fmt_num`).
    """

    name: str
    frame: pl.DataFrame
    caption: str
    max_rows: int = 25
    wrap: tuple[str, ...] = ()
    scales: Mapping[str, float] = field(default_factory=dict)


@dataclass
class Section:
    """A titled part of the report."""

    title: str
    blocks: list[Text | Figure | Table] = field(default_factory=list)

    @property
    def id(self) -> str:
        """The section's HTML id (:func:`anchor` of its title)."""
        return anchor(self.title)


@dataclass
class Action:
    """One thing to do, with the evidence it rests on and the section that shows it.

    Attributes
    ----------
    kind : str
        ``"node"`` (inspect or drain), ``"checkpoint"``, ``"job"``, ``"data"``.
    text : str
        What to do, in one line.
    evidence : str
        The numbers behind it.
    section : str
        Title of the section with the details.
    """

    kind: str
    text: str
    evidence: str
    section: str = ""


@dataclass
class Card:
    """A headline number: label, value, and what it rests on."""

    label: str
    value: str
    explanation: str
    #: the number behind ``value`` (None when there is none to give)
    number: float | None = None


@dataclass
class Report:
    """The whole report."""

    title: str
    subtitle: str
    actions: list[Action]
    headline: list[Card]
    sections: list[Section]
    summary: list[str] = field(default_factory=list)
