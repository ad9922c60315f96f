"""Render a :class:`Report` as a paginated PDF with matplotlib's PDF backend (no system
packages): a title page with the summary, then each section's text, figures and tables."""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.backends.backend_pdf import PdfPages
from matplotlib.figure import Figure as MplFigure

from reliability.report.html import _fmt
from reliability.report.model import Figure, Report, Table, Text

__all__ = ["render_pdf"]

A4 = (8.27, 11.69)
WRAP = 95


class _Page:
    """A text cursor on an A4 page that starts a new page when full."""

    def __init__(self, pdf: PdfPages) -> None:
        self.pdf = pdf
        self.fig: MplFigure | None = None
        self.y = 0.0
        self.pages = 0

    def new(self) -> None:
        self.flush()
        self.fig = MplFigure(figsize=A4)
        self.y = 0.95

    def flush(self) -> None:
        if self.fig is not None:
            self.pdf.savefig(self.fig)
            self.pages += 1
            self.fig = None

    def need(self, height: float) -> None:
        if self.fig is None or self.y - height < 0.05:
            self.new()

    def text(
        self, s: str, size: float = 9, weight: str = "normal", wrap: int = WRAP, gap: float = 0.006
    ) -> None:
        lines = textwrap.wrap(s, wrap) or [""]
        step = size / 72 / A4[1] * 1.45
        for line in lines:
            self.need(step)
            assert self.fig is not None
            self.fig.text(
                0.07, self.y, line, fontsize=size, weight=weight, va="top", family="DejaVu Sans"
            )
            self.y -= step
        self.y -= gap

    def figure(self, fig: MplFigure, caption: str) -> None:
        w, h = fig.get_size_inches()
        scale = min(0.86 * A4[0] / w, 1.0)
        frac = h * scale / A4[1]
        cap_lines = len(textwrap.wrap(caption, WRAP)) * 8 / 72 / A4[1] * 1.45
        self.need(frac + cap_lines + 0.02)
        assert self.fig is not None
        fig.set_dpi(200)
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        img = canvas.buffer_rgba()
        ax = self.fig.add_axes((0.07, self.y - frac, w * scale / A4[0], frac))
        ax.imshow(img, interpolation="lanczos")
        ax.set_axis_off()
        self.y -= frac + 0.01
        self.text(caption, size=8, gap=0.012)

    def table(self, t: Table) -> None:
        frame = t.frame.head(t.max_rows)
        cols = frame.columns
        width = max(1, min(len(cols), 9))
        cols = cols[:width]
        cells = [[_fmt(v)[:18] for v in row[:width]] for row in frame.select(cols).iter_rows()]
        row_h = 0.016
        height = row_h * (len(cells) + 1)
        self.need(height + 0.04)
        assert self.fig is not None
        ax = self.fig.add_axes((0.07, self.y - height, 0.86, height))
        ax.set_axis_off()
        if cells:
            tab = ax.table(
                cellText=cells, colLabels=[c[:18] for c in cols], loc="upper left", cellLoc="right"
            )
            tab.auto_set_font_size(False)
            tab.set_fontsize(6.5)
            tab.scale(1, 0.9)
        self.y -= height + 0.01
        more = (
            f" (first {t.max_rows} of {t.frame.height:,} rows"
            + (
                f", {len(t.frame.columns) - width} columns not shown"
                if len(t.frame.columns) > width
                else ""
            )
            + ")"
            if t.frame.height > t.max_rows or len(t.frame.columns) > width
            else ""
        )
        self.text(t.caption + more, size=8, gap=0.012)


def render_pdf(report: Report, path: Path) -> int:
    """Write the PDF to ``path``; returns the number of pages."""
    with (
        matplotlib.rc_context({"pdf.fonttype": 42}),
        PdfPages(path, metadata={"Title": report.title, "CreationDate": None}) as pdf,
    ):
        page = _Page(pdf)
        page.new()
        page.text(report.title, size=18, weight="bold", wrap=48)
        page.text(report.subtitle, size=9)
        page.text("Summary", size=14, weight="bold")
        for label, value, expl in report.headline:
            page.text(f"{label}: {value}", size=10, weight="bold")
            page.text(expl, size=8)
        for p in report.summary:
            page.text(p, size=9)
        for s in report.sections:
            page.new()
            page.text(s.title, size=14, weight="bold", wrap=70)
            for b in s.blocks:
                if isinstance(b, Text):
                    page.text(b.text)
                elif isinstance(b, Figure):
                    page.figure(b.figure, b.caption)
                elif isinstance(b, Table):
                    page.table(b)
        page.flush()
        return page.pages
