"""The report as data: sections of text, figures and tables, rendered to HTML and PDF."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl
from matplotlib.figure import Figure as MplFigure

__all__ = ["Figure", "Report", "Section", "Table", "Text"]


@dataclass
class Text:
    """A paragraph (plain text; escaped when rendered)."""

    text: str


@dataclass
class Figure:
    """A figure with its caption (what it shows, which paper figure) and its numbers."""

    name: str
    figure: MplFigure
    caption: str
    data: pl.DataFrame | None = None


@dataclass
class Table:
    """A table (a polars frame) with a caption; long tables are cut to ``max_rows``."""

    name: str
    frame: pl.DataFrame
    caption: str
    max_rows: int = 25


@dataclass
class Section:
    title: str
    blocks: list[Text | Figure | Table] = field(default_factory=list)


@dataclass
class Report:
    title: str
    subtitle: str
    headline: list[tuple[str, str, str]]  # (label, value, explanation)
    summary: list[str]
    sections: list[Section]
