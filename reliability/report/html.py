"""Render a :class:`Report` as one self-contained HTML file.

Inline CSS, figures as inline SVG, no scripts, no network references. Every string is
escaped; no cell prints nan or inf (a value that is not estimable prints as "–").
"""

from __future__ import annotations

import html
import io
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import polars as pl

from reliability._result import MISSING, column_scales, fmt_num
from reliability.report.fonts import prepare_figure
from reliability.report.model import Figure, Report, Table, Text, anchor

__all__ = ["cell_text", "figure_svg", "render_html", "table_html"]

CSS = """
*{box-sizing:border-box}
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;max-width:980px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45;overflow-wrap:anywhere}
h1{margin-bottom:0}.sub{color:#666;margin-top:.2em}
h2{border-bottom:2px solid #0072B2;padding-bottom:.2em;margin-top:2em}
.cards{display:flex;gap:1em;flex-wrap:wrap;margin:1em 0}
.card{flex:1 1 200px;min-width:0;border:1px solid #ddd;border-radius:6px;padding:.8em;background:#f8fafc}
.card .v{font-size:1.4em;font-weight:600;color:#0072B2}.card .l{font-weight:600}.card .e{color:#555;font-size:.85em}
ol.actions{padding-left:1.4em}ol.actions li{margin:.5em 0}
.kind{display:inline-block;font-size:.75em;font-weight:600;text-transform:uppercase;border-radius:3px;padding:0 .4em;margin-right:.4em;color:#fff;background:#0072B2}
.kind.node{background:#D55E00}.kind.job{background:#CC79A7}.kind.data{background:#555}
.evidence{display:block;color:#555;font-size:.88em}
figure{margin:1.2em 0}figure svg{display:block;max-width:100%;height:auto}figcaption{color:#444;font-size:.9em}
.table-wrap{max-width:100%;overflow-x:auto;margin:.6em 0}
table{border-collapse:collapse;font-size:.85em}th,td{border:1px solid #ddd;padding:.25em .5em;text-align:right;vertical-align:top}
th{background:#f0f4f8;white-space:nowrap}td.s{text-align:left;overflow-wrap:anywhere;max-width:32em}caption{caption-side:bottom;color:#555;text-align:left;font-size:.9em;padding-top:.3em}
p.note{color:#6b4e00;background:#fff8e6;border-left:3px solid #E69F00;padding:.3em .6em}
nav ol{columns:2}.data{font-size:.8em;color:#666}
"""


def figure_svg(fig: Any) -> str:
    """Render a matplotlib figure as an inline SVG element.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.

    Returns
    -------
    str
        The ``<svg>`` element (no XML prolog; deterministic: no date). Its text is drawn as it
        is, never as mathtext, in fonts that have its characters
        (:func:`reliability.report.fonts.prepare_figure`).
    """
    return _svg(fig)


def _svg(fig: Any) -> str:
    prepare_figure(fig)
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    svg = buf.getvalue()
    # drop the XML prolog; matplotlib salts its SVG ids per figure, so inline figures do not clash
    return svg[svg.find("<svg") :]


def cell_text(v: object, scale: float | None = None) -> str:
    """Format a table cell for people.

    Parameters
    ----------
    v : object
        The cell's value.
    scale : float or None
        The scale of the cell's column (:func:`reliability._result.column_scales`): a float far
        below it is floating-point residue and prints as 0.

    Returns
    -------
    str
        Numbers by :func:`reliability._result.fmt_num` (nan, inf and None print as "–"), times
        to the minute (to the second when they have seconds), lists joined by ", ".
    """
    if v is None:
        return MISSING
    if isinstance(v, datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S" if v.second else "%Y-%m-%d %H:%M")
    if isinstance(v, bool | int | float):
        return fmt_num(v, scale=scale)
    if isinstance(v, list | tuple):
        return ", ".join(cell_text(x) for x in v)
    return str(v)


def table_html(
    frame: pl.DataFrame,
    caption: str = "",
    max_rows: int = 25,
    scales: Mapping[str, float] | None = None,
) -> str:
    """Render a frame as an escaped HTML table in a horizontally scrolling box.

    A wide table never widens the page.

    Parameters
    ----------
    frame : polars.DataFrame
        The table.
    caption : str
        Caption text; a note of the rows shown is added when the table is cut.
    max_rows : int
        Most rows shown.
    scales : mapping of str to float or None
        Known scales of columns (:func:`reliability._result.column_scales`).

    Returns
    -------
    str
        The ``<div class="table-wrap"><table>...</table></div>`` markup.
    """
    head = "".join(f"<th>{html.escape(c)}</th>" for c in frame.columns)
    sc = [column_scales(frame, scales).get(c) for c in frame.columns]
    rows = []
    for row in frame.head(max_rows).iter_rows():
        cells = []
        for v, s in zip(row, sc, strict=True):
            cls = ' class="s"' if isinstance(v, str | datetime | list) else ""
            cells.append(f"<td{cls}>{html.escape(cell_text(v, s))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    if frame.height == 0:
        rows.append(f'<tr><td class="s" colspan="{max(frame.width, 1)}">(no rows)</td></tr>')
    more = f" (first {max_rows} of {frame.height:,} rows)" if frame.height > max_rows else ""
    cap = f"<caption>{html.escape(caption + more)}</caption>" if caption or more else ""
    return f'<div class="table-wrap"><table>{cap}<thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'


def render_html(report: Report, data_links: dict[str, str] | None = None) -> str:
    """Render the whole report as an HTML string.

    Parameters
    ----------
    report : Report
        The report.
    data_links : dict of str to str or None
        Figure/table name -> the file holding its numbers, relative to the report (shown as
        text).

    Returns
    -------
    str
        A complete, self-contained HTML document.
    """
    links = data_links or {}
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(report.title)}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>{e(report.title)}</h1>",
        f'<p class="sub">{e(report.subtitle)}</p>',
        '<h2 id="actions">What to do</h2>',
    ]
    if report.actions:
        parts.append('<ol class="actions">')
        for a in report.actions:
            link = f' <a href="#{anchor(a.section)}">details</a>' if a.section else ""
            parts.append(
                f'<li><span class="kind {e(a.kind)}">{e(a.kind)}</span>{e(a.text)}'
                f'<span class="evidence">{e(a.evidence)}{link}</span></li>'
            )
        parts.append("</ol>")
    else:
        parts.append(
            "<p>Nothing to act on: no node out of service for a hardware reason, no flagged lemon, no "
            "crash-looping job, no quarantined row.</p>"
        )
    parts += ['<h2 id="summary">Summary</h2>', '<div class="cards">']
    for c in report.headline:
        parts.append(
            f'<div class="card"><div class="l">{e(c.label)}</div><div class="v">{e(c.value)}</div>'
            f'<div class="e">{e(c.explanation)}</div></div>'
        )
    parts.append("</div>")
    parts += [f"<p>{e(p)}</p>" for p in report.summary]
    parts.append(
        "<nav><ol>"
        + "".join(f'<li><a href="#{s.id}">{e(s.title)}</a></li>' for s in report.sections)
        + "</ol></nav>"
    )
    for s in report.sections:
        parts.append(f'<section><h2 id="{s.id}">{e(s.title)}</h2>')
        for b in s.blocks:
            if isinstance(b, Text):
                cls = ' class="note"' if b.kind == "note" else ""
                parts.append(f"<p{cls}>{e(b.text)}</p>")
            elif isinstance(b, Figure):
                link = links.get(b.name)
                data = f' <span class="data">Numbers: {e(link)}</span>' if link else ""
                parts.append(
                    f'<figure id="fig-{e(b.name)}">{b.svg or _svg(b.figure)}<figcaption>{e(b.caption)}{data}</figcaption></figure>'
                )
            elif isinstance(b, Table):
                link = links.get(b.name)
                cap = b.caption + (f" Numbers: {link}" if link else "")
                parts.append(table_html(b.frame, cap, b.max_rows, b.scales))
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts)
