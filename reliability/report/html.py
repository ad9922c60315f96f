"""Render a :class:`Report` as one self-contained HTML file: inline CSS, figures as inline SVG,
no scripts, no network references. Every string is escaped."""

from __future__ import annotations

import html
import io
import re
from datetime import datetime

import polars as pl

from reliability.report.model import Figure, Report, Table, Text

__all__ = ["render_html"]

CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;max-width:980px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}
h1{margin-bottom:0}.sub{color:#666;margin-top:.2em}
h2{border-bottom:2px solid #0072B2;padding-bottom:.2em;margin-top:2em}
.cards{display:flex;gap:1em;flex-wrap:wrap;margin:1em 0}
.card{flex:1 1 200px;border:1px solid #ddd;border-radius:6px;padding:.8em;background:#f8fafc}
.card .v{font-size:1.6em;font-weight:600;color:#0072B2}.card .l{font-weight:600}.card .e{color:#555;font-size:.85em}
figure{margin:1.2em 0}figure svg{max-width:100%;height:auto}figcaption{color:#444;font-size:.9em}
table{border-collapse:collapse;font-size:.85em;margin:.6em 0}th,td{border:1px solid #ddd;padding:.25em .5em;text-align:right}
th{background:#f0f4f8}td.s{text-align:left}caption{caption-side:bottom;color:#555;text-align:left;font-size:.9em;padding-top:.3em}
nav ol{columns:2}.data{font-size:.8em;color:#666}
"""


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    svg = buf.getvalue()
    # drop the XML prolog; matplotlib salts its SVG ids per figure, so inline figures do not clash
    return svg[svg.find("<svg") :]


def _fmt(v: object) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if v != v:
            return "NaN"
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.4g}"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, datetime):
        return v.strftime("%Y-%m-%d %H:%M")
    return str(v)


def table_html(frame: pl.DataFrame, caption: str = "", max_rows: int = 25) -> str:
    """An escaped HTML table of ``frame`` (first ``max_rows`` rows)."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in frame.columns)
    rows = []
    for row in frame.head(max_rows).iter_rows():
        cells = []
        for v in row:
            cls = ' class="s"' if isinstance(v, str) else ""
            cells.append(f"<td{cls}>{html.escape(_fmt(v))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    more = f" (first {max_rows} of {frame.height:,} rows)" if frame.height > max_rows else ""
    cap = f"<caption>{html.escape(caption + more)}</caption>" if caption or more else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _anchor(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def render_html(report: Report, data_links: dict[str, str] | None = None) -> str:
    """The whole report as an HTML string. ``data_links`` maps a figure/table name to the file
    holding its numbers (shown as text, relative to the report)."""
    links = data_links or {}
    e = html.escape
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{e(report.title)}</title>", f"<style>{CSS}</style></head><body>",
        f"<h1>{e(report.title)}</h1>", f'<p class="sub">{e(report.subtitle)}</p>',
        '<h2 id="summary">Summary</h2>', '<div class="cards">',
    ]  # fmt: skip
    for label, value, expl in report.headline:
        parts.append(f'<div class="card"><div class="l">{e(label)}</div><div class="v">{e(value)}</div>'
                     f'<div class="e">{e(expl)}</div></div>')  # fmt: skip
    parts.append("</div>")
    parts += [f"<p>{e(p)}</p>" for p in report.summary]
    parts.append(
        "<nav><ol>"
        + "".join(
            f'<li><a href="#{_anchor(s.title)}">{e(s.title)}</a></li>' for s in report.sections
        )
        + "</ol></nav>"
    )
    for s in report.sections:
        parts.append(f'<section><h2 id="{_anchor(s.title)}">{e(s.title)}</h2>')
        for b in s.blocks:
            if isinstance(b, Text):
                parts.append(f"<p>{e(b.text)}</p>")
            elif isinstance(b, Figure):
                link = links.get(b.name)
                data = f' <span class="data">Numbers: {e(link)}</span>' if link else ""
                parts.append(
                    f'<figure id="fig-{e(b.name)}">{_svg(b.figure)}<figcaption>{e(b.caption)}{data}</figcaption></figure>'
                )
            elif isinstance(b, Table):
                link = links.get(b.name)
                cap = b.caption + (f" Numbers: {link}" if link else "")
                parts.append(table_html(b.frame, cap, b.max_rows))
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts)
