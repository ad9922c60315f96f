"""Render a :class:`Report` as a paginated A4 PDF with matplotlib's PDF backend.

No system packages are needed. The text flows: the action list and headline numbers, then
each section, a new page only when the next block does not fit (no blank pages). Tables are
drawn as wrapped monospace text, so no cell is cut: long paths and reasons wrap inside their
column.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.backends.backend_pdf import PdfPages
from matplotlib.figure import Figure as MplFigure

from reliability._result import column_scales
from reliability.report.html import cell_text
from reliability.report.model import Figure, Report, Table, Text

__all__ = ["render_pdf"]

A4 = (8.27, 11.69)
LEFT, RIGHT, TOP, BOTTOM = 0.07, 0.93, 0.95, 0.05
#: characters per line of body text at 9 pt (DejaVu Sans averages about 0.52 em)
WRAP = 100
#: monospace table text
TABLE_PT = 6.0
MONO_EM = 0.602  # DejaVu Sans Mono advance width [em]


class _Page:
    """A cursor on A4 pages: starts a new page when the next block does not fit."""

    def __init__(self, pdf: PdfPages) -> None:
        self.pdf = pdf
        self.fig: MplFigure | None = None
        self.y = TOP
        self.pages = 0
        self.blank = True

    def new(self) -> None:
        self.flush()
        self.fig = MplFigure(figsize=A4)
        self.y = TOP
        self.blank = True

    def flush(self) -> None:
        if self.fig is not None and not self.blank:
            self.pdf.savefig(self.fig)
            self.pages += 1
        self.fig = None

    def need(self, height: float) -> None:
        if self.fig is None or (self.y - height < BOTTOM and not self.blank):
            self.new()

    def _put(self, x: float, s: str, size: float, **kw: object) -> None:
        assert self.fig is not None
        self.fig.text(x, self.y, s, fontsize=size, va="top", **kw)  # type: ignore[arg-type]
        self.blank = False

    def text(
        self,
        s: str,
        size: float = 9,
        weight: str = "normal",
        wrap: int | None = None,
        gap: float = 0.006,
        indent: float = 0.0,
        colour: str = "#222222",
    ) -> None:
        width = wrap or int(WRAP * 9 / size * (1 - indent / (RIGHT - LEFT)))
        lines = textwrap.wrap(s, width, break_long_words=True) or [""]
        step = size / 72 / A4[1] * 1.45
        for line in lines:
            self.need(step)
            self._put(LEFT + indent, line, size, weight=weight, family="DejaVu Sans", color=colour)
            self.y -= step
        self.y -= gap

    def heading(self, s: str) -> None:
        self.need(0.12)  # a heading never ends a page alone
        self.y -= 0.01
        self.text(s, size=14, weight="bold", wrap=70)

    def figure(self, fig: MplFigure, caption: str) -> None:
        w, h = fig.get_size_inches()
        scale = min((RIGHT - LEFT) * A4[0] / w, 1.0)
        frac = h * scale / A4[1]
        cap = len(textwrap.wrap(caption, int(WRAP * 9 / 8))) * 8 / 72 / A4[1] * 1.45
        self.need(frac + cap + 0.02)
        assert self.fig is not None
        fig.set_dpi(150)
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        ax = self.fig.add_axes((LEFT, self.y - frac, w * scale / A4[0], frac))
        ax.imshow(canvas.buffer_rgba(), interpolation="none")
        ax.set_axis_off()
        self.blank = False
        self.y -= frac + 0.01
        self.text(caption, size=8, gap=0.012)

    def table(self, t: Table) -> None:
        frame = t.frame.head(t.max_rows)
        avail = int((RIGHT - LEFT) * A4[0] * 72 / (TABLE_PT * MONO_EM))  # characters per line
        cols = list(frame.columns)
        sc = [column_scales(t.frame, t.scales).get(c) for c in cols]
        cells = [
            [cell_text(v, s) for v, s in zip(row, sc, strict=True)] for row in frame.iter_rows()
        ]
        widths = [min(max([len(c), *(len(r[i]) for r in cells)]), 200) for i, c in enumerate(cols)]
        gap = 2
        # drop trailing columns that cannot fit even at 8 characters
        while cols and sum(max(min(w, 8), 1) for w in widths) + gap * (len(cols) - 1) > avail:
            cols.pop()
            widths.pop()
        shown = len(cols)
        while sum(widths) + gap * (shown - 1) > avail:  # narrow the widest column
            i = max(range(shown), key=lambda j: widths[j])
            widths[i] = max(8, widths[i] - 1)
            if all(w <= 8 for w in widths):
                break

        def wrapped(values: list[str]) -> list[list[str]]:
            return [
                textwrap.wrap(v, w, break_long_words=True, break_on_hyphens=False) or [""]
                for v, w in zip(values, widths, strict=False)
            ]

        step = TABLE_PT / 72 / A4[1] * 1.3

        def draw(values: list[list[str]], weight: str) -> None:
            n = max(len(v) for v in values)
            self.need(n * step)
            for k in range(n):  # one monospace line per physical row: columns padded to width
                line = (" " * gap).join(
                    (v[k] if k < len(v) else "").ljust(widths[i]) for i, v in enumerate(values)
                )
                self._put(LEFT, line.rstrip(), TABLE_PT, family="DejaVu Sans Mono", weight=weight)
                self.y -= step

        head = wrapped(cols)
        self.need(step * (max(len(h) for h in head) + min(3, len(cells) + 1)))
        draw(head, "bold")
        for r in cells:
            draw(wrapped(r[:shown]), "normal")
        if not cells:
            draw([["(no rows)"]], "normal")
        self.y -= 0.004
        more = []
        if t.frame.height > t.max_rows:
            more.append(f"first {t.max_rows} of {t.frame.height:,} rows")
        if shown < t.frame.width:
            more.append(
                f"{t.frame.width - shown} more columns: {', '.join(t.frame.columns[shown:])}"
            )
        self.text(t.caption + (f" ({'; '.join(more)})" if more else ""), size=8, gap=0.012)


def render_pdf(report: Report, path: Path) -> int:
    """Write a report as a PDF.

    Parameters
    ----------
    report : Report
        The report to render.
    path : Path
        Destination ``.pdf`` file.

    Returns
    -------
    int
        The number of pages written.
    """
    with (
        matplotlib.rc_context({"pdf.fonttype": 42}),
        PdfPages(path, metadata={"Title": report.title, "CreationDate": None}) as pdf,
    ):
        page = _Page(pdf)
        page.new()
        page.text(report.title, size=18, weight="bold", wrap=48)
        page.text(report.subtitle, size=9)
        page.heading("What to do")
        if not report.actions:
            page.text(
                "Nothing to act on: no node out of service for a hardware reason, no flagged lemon, no "
                "crash-looping job, no quarantined row."
            )
        for i, a in enumerate(report.actions, 1):
            page.text(f"{i}. [{a.kind}] {a.text}", size=9, weight="bold", gap=0.001)
            page.text(
                a.evidence + (f" (see {a.section})" if a.section else ""), size=8, indent=0.02
            )
        page.heading("Summary")
        for c in report.headline:
            page.text(f"{c.label}: {c.value}", size=10, weight="bold", gap=0.001)
            page.text(c.explanation, size=8)
        for p in report.summary:
            page.text(p, size=9)
        for s in report.sections:
            page.heading(s.title)
            for b in s.blocks:
                if isinstance(b, Text):
                    page.text(b.text, colour="#6b4e00" if b.kind == "note" else "#222222")
                elif isinstance(b, Figure):
                    page.figure(b.figure, b.caption)
                elif isinstance(b, Table):
                    page.table(b)
        page.flush()
        return page.pages
