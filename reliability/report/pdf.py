"""Render a :class:`Report` as a paginated A4 PDF with matplotlib's PDF backend.

No system packages are needed. The text flows: the action list and headline numbers, then
each section, a new page only when the next block does not fit (no blank pages). Tables are
drawn as wrapped monospace text, so no cell is cut: long paths and reasons wrap inside their
column.

Text from the data (job and node names, paths, reasons) is drawn as it is: never as mathtext
(a ``$`` is a dollar sign), in fonts that have its characters, falling back per glyph from
DejaVu to the fonts installed (:mod:`reliability.report.fonts`). A character no font has prints
as U+FFFD, and a note on the first page names it. A wide (East Asian) character takes two
columns of a table.
"""

from __future__ import annotations

import textwrap
import unicodedata
from pathlib import Path

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.backends.backend_pdf import PdfPages
from matplotlib.figure import Figure as MplFigure
from matplotlib.font_manager import FontProperties

from reliability._result import column_scales
from reliability.report.fonts import drawable, prepare_figure, undrawn_note
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
NOTE_COLOUR = "#6b4e00"


def _width(s: str) -> int:
    """Columns a text takes in monospace: 2 for a wide (East Asian) character, 0 for a mark."""
    if s.isascii():
        return len(s)
    return sum(
        0
        if unicodedata.category(c) in ("Mn", "Me", "Cf")
        else 2
        if unicodedata.east_asian_width(c) in ("W", "F")
        else 1
        for c in s
    )


def _wrap(s: str, width: int, break_on_hyphens: bool = True) -> list[str]:
    """Wrap a text into lines of at most ``width`` columns (see :func:`_width`)."""
    if _width(s) == len(s):
        return textwrap.wrap(
            s, width, break_long_words=True, break_on_hyphens=break_on_hyphens
        ) or [""]
    lines: list[str] = []
    line = ""
    for word in s.split():
        w = _width(word)
        if line and _width(line) + 1 + w <= width:
            line += " " + word
            continue
        if line and w <= width:
            lines.append(line)
            line = word
            continue
        # a word longer than a line: fill the line, then break it anywhere
        if line:
            line += " "
        for c in word:
            if _width(line + c) > width and line.strip():
                lines.append(line.rstrip())
                line = ""
            line += c
    lines.append(line)
    return lines


class _Page:
    """A cursor on A4 pages: starts a new page when the next block does not fit.

    Without a ``pdf`` it lays the report out without drawing it, and records what its text
    needs: the characters no font has and whether a font needs Type 3.
    """

    def __init__(self, pdf: PdfPages | None) -> None:
        self.pdf = pdf
        self.fig: MplFigure | None = None
        self.y = TOP
        self.pages = 0
        self.blank = True
        self.missing: dict[str, None] = {}
        self.type3 = False

    def new(self) -> None:
        self.flush()
        self.fig = MplFigure(figsize=A4)
        self.y = TOP
        self.blank = True

    def flush(self) -> None:
        if self.fig is not None and not self.blank:
            if self.pdf is not None:
                self.pdf.savefig(self.fig)
            self.pages += 1
        self.fig = None

    def need(self, height: float) -> None:
        if self.fig is None or (self.y - height < BOTTOM and not self.blank):
            self.new()

    def _put(self, x: float, s: str, size: float, family: str, weight: str, **kw: object) -> None:
        assert self.fig is not None
        d = drawable(s, FontProperties(family=family, weight=weight, size=size))
        self.missing.update(dict.fromkeys(d.missing))
        self.type3 |= d.type3
        if self.pdf is not None:
            self.fig.text(  # type: ignore[arg-type]
                x,
                self.y,
                d.text,
                fontsize=size,
                va="top",
                parse_math=False,
                family=d.family or family,
                weight=weight,
                **kw,
            )
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
        lines = _wrap(s, width)
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
        cap = len(_wrap(caption, int(WRAP * 9 / 8))) * 8 / 72 / A4[1] * 1.45
        self.need(frac + cap + 0.02)
        assert self.fig is not None
        self.missing.update(dict.fromkeys(prepare_figure(fig)))
        if self.pdf is not None:  # (a raster: any font will do)
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
        widths = [
            min(max([_width(c), *(_width(r[i]) for r in cells)]), 200) for i, c in enumerate(cols)
        ]
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
                _wrap(v, w, break_on_hyphens=False) for v, w in zip(values, widths, strict=False)
            ]

        step = TABLE_PT / 72 / A4[1] * 1.3
        column = TABLE_PT * MONO_EM / 72 / A4[0]  # one monospace column [page width]

        def draw(values: list[list[str]], weight: str) -> None:
            n = max(len(v) for v in values)
            self.need(n * step)
            for k in range(n):  # each cell at its column's place: a fallback glyph's width varies
                x = 0
                for i, v in enumerate(values):
                    if k < len(v) and v[k].strip():
                        self._put(LEFT + x * column, v[k], TABLE_PT, "DejaVu Sans Mono", weight)
                    x += widths[i] + gap
                self.blank = False
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
    # lay out once without drawing: which characters no font has (named on the first page),
    # and whether a font with CFF outlines is needed (embedded as Type 3, not as TrueType)
    dry = _Page(None)
    _render(report, dry, None)
    note = undrawn_note("".join(dry.missing))
    with (
        matplotlib.rc_context({"pdf.fonttype": 3 if dry.type3 else 42}),
        PdfPages(path, metadata={"Title": report.title, "CreationDate": None}) as pdf,
    ):
        page = _Page(pdf)
        _render(report, page, note)
        return page.pages


def _render(report: Report, page: _Page, note: str | None) -> None:
    page.new()
    page.text(report.title, size=18, weight="bold", wrap=48)
    page.text(report.subtitle, size=9)
    if note:
        page.text(note, size=9, colour=NOTE_COLOUR)
    page.heading("What to do")
    if not report.actions:
        page.text(
            "Nothing to act on: no node out of service for a hardware reason, no flagged lemon, no "
            "crash-looping job, no quarantined row."
        )
    for i, a in enumerate(report.actions, 1):
        page.text(f"{i}. [{a.kind}] {a.text}", size=9, weight="bold", gap=0.001)
        page.text(a.evidence + (f" (see {a.section})" if a.section else ""), size=8, indent=0.02)
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
                page.text(b.text, colour=NOTE_COLOUR if b.kind == "note" else "#222222")
            elif isinstance(b, Figure):
                page.figure(b.figure, b.caption)
            elif isinstance(b, Table):
                page.table(b)
    page.flush()
