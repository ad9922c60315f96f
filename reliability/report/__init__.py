"""Reports: the HTML and PDF a pipeline writes (:func:`write_report`).

The action list and headline numbers (:mod:`reliability.report.actions`), then the sections
built next to each stage from its typed result, with :mod:`reliability.plots` figures.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import polars as pl

from reliability.report.build import build_report
from reliability.report.html import figure_svg, render_html, table_html
from reliability.report.model import Action, Card, Figure, Report, Section, Table, Text
from reliability.report.pdf import render_pdf

__all__ = [
    "Action",
    "Card",
    "Figure",
    "Report",
    "Section",
    "Table",
    "Text",
    "build_report",
    "csv_safe",
    "render_html",
    "render_pdf",
    "table_html",
    "write_report",
]


def _atomic_text(text: str, dest: Path) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", dir=dest.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def csv_safe(frame: pl.DataFrame) -> pl.DataFrame:
    """Neutralise spreadsheet formulas in the text cells of ``frame`` (OWASP, "CSV Injection").

    Parameters
    ----------
    frame : polars.DataFrame
        A table about to be written as CSV; its text cells may come from input data (job names, QoS,
        users, reasons).

    Returns
    -------
    polars.DataFrame
        The frame with every text cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a
        carriage return prefixed with a single quote, but for a lone ``-`` or ``+`` (text and enum
        columns become text; numbers are unchanged).
    """
    text = [
        c
        for c, t in frame.schema.items()
        if t == pl.String or isinstance(t, (pl.Enum, pl.Categorical))
    ]
    return frame.with_columns(
        # (a lone "-" or "+", a table's placeholder, is no formula: left as it is)
        pl.when(pl.col(c).cast(pl.String).str.contains(r"^(?:[=@\t\r]|[+\-](?s:.))"))
        .then(pl.lit("'") + pl.col(c).cast(pl.String))
        .otherwise(pl.col(c).cast(pl.String))
        .alias(c)
        for c in text
    )


def write_report(result: Any, folder: str | Path) -> dict[str, Path]:
    """Write a run's report and the numbers behind it into a folder.

    Writes ``report.html`` and ``report.pdf`` (as the pipeline's ``formats`` ask) and every
    figure's and table's numbers as ``data/<name>.csv``.

    Parameters
    ----------
    result : RunResult
        A finished pipeline run (see :func:`build_report`).
    folder : str or Path
        Output folder; created if missing.

    Returns
    -------
    dict of str to Path
        The files written, by format (``"html"``, ``"pdf"``).
    """
    folder = Path(folder)
    (folder / "data").mkdir(parents=True, exist_ok=True)
    report = build_report(result)
    links: dict[str, str] = {}
    for s in report.sections:
        for b in s.blocks:
            if isinstance(b, Figure):  # lay out once (drawing the SVG); the PDF raster reuses it
                b.svg = figure_svg(b.figure)
                b.figure.set_layout_engine("none")
            frame = b.data if isinstance(b, Figure) else b.frame if isinstance(b, Table) else None
            if frame is not None and frame.height:
                dest = folder / "data" / f"{b.name}.csv"
                flat = frame.select(
                    [
                        c
                        for c in frame.columns
                        if not str(frame.schema[c]).startswith(("List", "Struct"))
                    ]
                )
                _atomic_text(csv_safe(flat).write_csv(), dest)
                links[b.name] = f"data/{b.name}.csv"
    files: dict[str, Path] = {}
    formats = result.config.formats
    if "html" in formats:
        files["html"] = folder / "report.html"
        _atomic_text(render_html(report, links), files["html"])
    if "pdf" in formats:
        files["pdf"] = folder / "report.pdf"
        fd, tmp = tempfile.mkstemp(prefix=".report.pdf.", dir=folder)
        os.close(fd)
        try:
            pages = render_pdf(report, Path(tmp))
            os.chmod(tmp, 0o644)
            os.replace(tmp, files["pdf"])
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        result.pdf_pages = pages
    return files
