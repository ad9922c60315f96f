"""Reports: the HTML and PDF a pipeline writes (:func:`write_report`), built from
:mod:`reliability.plots` figures and the pipeline's result frames."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from reliability.report.build import build_report
from reliability.report.html import render_html, table_html
from reliability.report.model import Figure, Report, Section, Table, Text
from reliability.report.pdf import render_pdf

__all__ = [
    "Figure",
    "Report",
    "Section",
    "Table",
    "Text",
    "build_report",
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


def write_report(result: Any, folder: str | Path) -> dict[str, Path]:
    """Write ``report.html``, ``report.pdf`` (as the pipeline's formats ask) and every figure's
    and table's numbers as ``data/<name>.csv`` into ``folder``; returns the paths."""
    folder = Path(folder)
    (folder / "data").mkdir(parents=True, exist_ok=True)
    report = build_report(result)
    links: dict[str, str] = {}
    for s in report.sections:
        for b in s.blocks:
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
                _atomic_text(flat.write_csv(), dest)
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
