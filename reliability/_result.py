"""The one result base: summary table, text and HTML forms, sample sizes, notes.

Every model result has a ``summary`` table, a text form, an HTML form, ``print_summary()``,
its sample sizes and notes on what could not be estimated and why.

A subclass implements

- :attr:`summary` (a polars frame; not-estimable values are null, never nan or inf),
- :meth:`_lines` (the text form's lines, without the notes),

and may override :attr:`sample_sizes` (``{"failures": 3, "node-days": 0.0009}``),
:meth:`tables` (extra frames the HTML form shows) and :attr:`title`. Results that are
dataclasses keep a ``notes: list[str]`` field; the base reads ``self.notes``.

The layout follows lifelines' ``print_summary`` (a header of sample sizes, the table, the
notes) and statsmodels' ``summary2`` (one object rendered as text and HTML).
"""

from __future__ import annotations

import html
import math
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, Any, ClassVar, Self

import polars as pl

__all__ = [
    "RESIDUE",
    "Result",
    "column_scales",
    "fmt_count",
    "fmt_duration_h",
    "fmt_num",
    "fmt_p",
    "fmt_pct",
    "format_table",
    "frame_is_finite",
]

#: how a missing (not estimable) value prints in tables
MISSING = "–"
#: a float smaller than this fraction of its scale is floating-point residue and prints as 0
#: (see :func:`fmt_num`)
RESIDUE = 1e-12


def fmt_count(n: int, noun: str, plural: str | None = None) -> str:
    """Say a count of things for people: ``"1 failure"``, ``"2,345 failures"``.

    Parameters
    ----------
    n : int
        How many.
    noun : str
        The thing, singular.
    plural : str or None
        Its plural (default: ``noun + "s"``).

    Returns
    -------
    str
        The count with thousands separators and the noun agreeing with it.
    """
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"


def fmt_num(x: Any, digits: int = 4, scale: float | None = None) -> str:
    """Format a number for people.

    Parameters
    ----------
    x : object
        A number, bool or None.
    digits : int
        Significant digits of a float.
    scale : float or None
        The magnitude ``x`` is read against, in its unit: the largest magnitude of its table
        column (:func:`column_scales`), or 1 for a fraction (an ETTR, an availability). None:
        ``x`` is read on its own.

    Returns
    -------
    str
        ``digits`` significant digits (more for a fraction just below 1, which would round to
        1: 0.99998, not 1), thousands separators for large values and integers,
        ``yes``/``no`` for booleans, ``MISSING`` for None; never ``nan`` or ``inf`` (those print
        as ``MISSING``), never ``-0``.

    Notes
    -----
    Floating-point residue prints as 0. A difference of nearly equal numbers keeps a few units
    in the last place of its operands (2.2e-16 of their size) where the exact result is 0: the
    ETTR of a run that lost all its work, ``(scheduled - overhead - lost) / wall``, comes out
    as 2.891e-18. The rule: a float with ``|x| < RESIDUE * scale`` (``RESIDUE`` = 1e-12) prints
    as ``0``. 1e-12 is well above the residue of a sum of thousands of terms (each adds at most
    one unit in the last place) and well below anything the column's 4 significant digits show
    next to its largest value. Without a scale nothing is zeroed: a lone small number (a rate
    of 2.3e-6 per node-day, a p-value of 1e-20) is a measurement and prints as it is.
    """
    if x is None:
        return MISSING
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        if not math.isfinite(x):
            return MISSING
        a = abs(x)
        if a == 0 or (scale is not None and a < RESIDUE * abs(scale)):
            return "0"
        if a >= 10 ** (digits - 1):
            return f"{x:,.0f}"
        text = f"{x:.{digits}g}"
        # a fraction just below 1 (an availability of 0.99998) keeps its nines: "1" would say
        # the component never fails
        while 0 < a < 1 and abs(float(text)) == 1 and digits < 17:
            digits += 1
            text = f"{x:.{digits}g}"
        return text
    return str(x)


def fmt_p(p: float, digits: int = 2) -> str:
    """Format a p-value: 2 significant digits, and ``"< 1e-300"`` for one that underflowed to 0.

    Parameters
    ----------
    p : float
        The p-value, in [0, 1].
    digits : int
        Significant digits.

    Returns
    -------
    str
        E.g. ``"0.031"``, ``"4.2e-12"``, ``"< 1e-300"`` (a p-value is never exactly 0).
    """
    if p <= 0:
        return "< 1e-300"
    return f"{p:.{digits}g}"


def fmt_pct(x: float | None, decimals: int = 2) -> str:
    """Format a fraction as a percentage that never rounds an availability up to 100%.

    Parameters
    ----------
    x : float or None
        A fraction in [0, 1].
    decimals : int
        Decimals of the percentage, more where a fraction below 1 would print as 100.

    Returns
    -------
    str
        E.g. ``"99.12%"``, ``"99.998%"`` for 0.99998 (not ``"100.00%"``), ``"0.00%"`` for a
        residue of -1e-18 (never ``"-0.00%"``); ``MISSING`` for None or a non-finite value.
    """
    if x is None or not math.isfinite(x):
        return MISSING
    text = f"{100 * x:.{decimals}f}"
    while x < 1 and float(text) >= 100 and decimals < 15:
        decimals += 1
        text = f"{100 * x:.{decimals}f}"
    if float(text) == 0:
        text = text.lstrip("-")
    return text + "%"


def fmt_duration_h(h: float | None) -> str:
    """Format a duration in the unit a person would use (s, min, h, days, years).

    Parameters
    ----------
    h : float or None
        The duration [h].

    Returns
    -------
    str
        E.g. ``"1.6 s"``, ``"42 s"``, ``"3.5 min"``, ``"7.2 h"``, ``"12.0 days"``, ``"2.1 years"``;
        ``MISSING`` for None or a non-finite value.
    """
    if h is None or not math.isfinite(h):
        return MISSING
    if h < 0.5 / 3600.0:
        return "under 1 s"
    if h < 10.0 / 3600.0:  # 1.6 s, not 2 s: a rounded-up lower bound would overstate it
        return f"{3600 * h:.1f} s"
    if h < 1.0 / 60.0:
        return f"{3600 * h:.0f} s"
    if h < 2.0:
        return f"{60 * h:.1f} min"
    if h < 72.0:
        return f"{h:.1f} h"
    if h < 2 * 8766.0:
        return f"{h / 24:,.1f} days"
    return f"{h / 8766.0:,.1f} years"


def column_scales(
    frame: pl.DataFrame, scales: Mapping[str, float] | None = None
) -> dict[str, float]:
    """Return the scale each float column's values are read against (see :func:`fmt_num`).

    Parameters
    ----------
    frame : polars.DataFrame
        A table; every row counts, also those a rendering cuts.
    scales : mapping of str to float or None
        Known scales by column, e.g. 1 for a column of fractions; the larger of this and the
        column's largest magnitude is used.

    Returns
    -------
    dict of str to float
        Column -> its largest finite magnitude (or the known scale), for float columns with a
        finite value or a known scale.
    """
    known = dict(scales or {})
    out: dict[str, float] = {}
    for name, dtype in frame.schema.items():
        if not dtype.is_float():
            continue
        col = frame.get_column(name)
        big = col.filter(col.is_finite()).abs().max() if col.len() else None
        s = max(float(big) if big is not None else 0.0, abs(known.get(name, 0.0)))
        if s > 0:
            out[name] = s
    return out


def _cell(x: Any, scale: float | None = None) -> str:
    if isinstance(x, float | int | bool) or x is None:
        return fmt_num(x, scale=scale)
    if isinstance(x, list | tuple):
        return ", ".join(_cell(v) for v in x)
    return str(x)


def format_table(
    frame: pl.DataFrame, max_rows: int = 40, scales: Mapping[str, float] | None = None
) -> str:
    """Format a frame as a fixed-width text table (numbers formatted by :func:`fmt_num`).

    Parameters
    ----------
    frame : polars.DataFrame
        The table.
    max_rows : int
        Most rows shown; a last line says how many more there are.
    scales : mapping of str to float or None
        Known scales of columns (see :func:`column_scales`); a float far below its column's
        scale is residue and prints as 0.

    Returns
    -------
    str
        The table's text.
    """
    if frame.width == 0:
        return "(empty table)"
    head = frame.head(max_rows)
    cols = head.columns
    sc = column_scales(frame, scales)
    cells = [
        [_cell(v, sc.get(c)) for v, c in zip(row, cols, strict=True)] for row in head.iter_rows()
    ]
    widths = [
        max(len(c), *(len(r[i]) for r in cells)) if cells else len(c) for i, c in enumerate(cols)
    ]
    numeric = [head.schema[c].is_numeric() for c in cols]

    def line(values: list[str]) -> str:
        return "  ".join(
            v.rjust(w) if n else v.ljust(w) for v, w, n in zip(values, widths, numeric, strict=True)
        ).rstrip()

    out = [line(cols), line(["-" * w for w in widths]), *(line(r) for r in cells)]
    if frame.height > max_rows:
        out.append(f"... {frame.height - max_rows:,} more rows")
    if frame.height == 0:
        out.append("(no rows)")
    return "\n".join(out)


def _html_table(
    frame: pl.DataFrame, max_rows: int = 200, scales: Mapping[str, float] | None = None
) -> str:
    head = frame.head(max_rows)
    th = "".join(f"<th>{html.escape(c)}</th>" for c in head.columns)
    numeric = [head.schema[c].is_numeric() for c in head.columns]
    sc = [column_scales(frame, scales).get(c) for c in head.columns]
    rows = []
    for row in head.iter_rows():
        tds = "".join(
            f'<td style="text-align:right">{html.escape(_cell(v, s))}</td>'
            if n
            else f"<td>{html.escape(_cell(v))}</td>"
            for v, n, s in zip(row, numeric, sc, strict=True)
        )
        rows.append(f"<tr>{tds}</tr>")
    more = (
        f'<tr><td colspan="{head.width}">… {frame.height - max_rows:,} more rows</td></tr>'
        if frame.height > max_rows
        else ""
    )
    return f'<table class="reliability-table"><thead><tr>{th}</tr></thead><tbody>{"".join(rows)}{more}</tbody></table>'


def frame_is_finite(frame: pl.DataFrame) -> bool:
    """Tell whether no float column of a frame holds nan or ±inf (nulls are fine).

    Parameters
    ----------
    frame : polars.DataFrame
        The frame.

    Returns
    -------
    bool
        True when every float value is finite or null.
    """
    for name, dtype in frame.schema.items():
        if dtype.is_float():
            col = frame.get_column(name).drop_nulls()
            if col.len() and not col.is_finite().all():
                return False
    return True


class Result:
    """Base of every model result (see the module doc)."""

    #: heading of the text and HTML forms
    title: ClassVar[str] = "Result"
    #: known scales of table columns (1 for a column of fractions): a float far below its
    #: column's scale is residue and prints as 0 (see :func:`fmt_num`)
    table_scales: ClassVar[Mapping[str, float]] = {}
    notes: list[str]
    #: the headline numbers as a table (not-estimable values are null, never nan or inf): a
    #: property or a dataclass field of the subclass
    summary: pl.DataFrame

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """What the result was estimated from: counts and exposure, by name with unit."""
        return {}

    def tables(self) -> dict[str, pl.DataFrame]:
        """Return the named frames the HTML form shows (default: the summary).

        Returns
        -------
        dict of str to polars.DataFrame
            Name -> frame.
        """
        return {"summary": self.summary}

    def _lines(self) -> list[str]:
        """Lines of the text form, without the notes."""
        raise NotImplementedError

    def _notes(self) -> list[str]:
        return list(getattr(self, "notes", None) or [])

    def _sample_line(self) -> str | None:
        s = self.sample_sizes
        if not s:
            return None
        return "Sample: " + ", ".join(f"{fmt_num(v)} {k}" for k, v in s.items())

    def __str__(self) -> str:
        return self.text()

    def text(self, note: Callable[[str], str] = str) -> str:
        """Return the text form, each note as ``note`` renders it.

        Parameters
        ----------
        note : callable
            ``note(message)`` -> its text; a front end passes its renderer of structured hints
            (:class:`~reliability.errors.Hinted` notes), the default is the library's spelling.

        Returns
        -------
        str
            The lines of the text form, then the notes.
        """
        lines = list(self._lines())
        notes = self._notes()
        if notes:
            lines += ["Notes:", *(f"  - {note(n)}" for n in notes)]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        parts = [
            f'<div class="reliability-result"><p><strong>{html.escape(self.title)}</strong></p>'
        ]
        sample = self._sample_line()
        if sample:
            parts.append(f"<p>{html.escape(sample)}</p>")
        parts.append("<pre>" + html.escape("\n".join(self._lines())) + "</pre>")
        for name, frame in self.tables().items():
            parts.append(
                f"<p><em>{html.escape(name)}</em></p>{_html_table(frame, scales=self.table_scales)}"
            )
        notes = self._notes()
        if notes:
            parts.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
        parts.append("</div>")
        return "".join(parts)

    def to_disk(self, folder: str | Path) -> None:
        """Save the result into a folder (frames as parquet, the rest as JSON; no pickle).

        :meth:`from_disk` rebuilds it.

        Parameters
        ----------
        folder : str or Path
            Destination folder; created if missing.
        """
        from reliability._result_io import save_result

        save_result(self, folder)

    @classmethod
    def from_disk(cls, folder: str | Path) -> Self:
        """Load the result :meth:`to_disk` saved in a folder.

        Parameters
        ----------
        folder : str or Path
            The folder.

        Returns
        -------
        Result
            The rebuilt result.

        Raises
        ------
        TypeError
            If the folder holds a result of another class.
        """
        from reliability._result_io import load_result

        got = load_result(folder)
        if not isinstance(got, cls):
            raise TypeError(f"{folder}: holds a {type(got).__name__}, not a {cls.__name__}")
        return got

    def print_summary(self, file: IO[str] | None = None) -> None:
        """Print the text form, the sample sizes and the summary table (lifelines' style).

        Parameters
        ----------
        file : file-like or None
            Where to print; None: standard output.
        """
        out = file or sys.stdout
        bar = "=" * 78
        print(bar, file=out)
        print(self.title, file=out)
        sample = self._sample_line()
        if sample:
            print(sample, file=out)
        print(bar, file=out)
        print(str(self), file=out)
        print("", file=out)
        print(format_table(self.summary, scales=self.table_scales), file=out)

    @staticmethod
    def _join(items: Iterable[str]) -> str:
        return ", ".join(items)

    @staticmethod
    def _mapping_frame(values: Mapping[str, Any]) -> pl.DataFrame:
        """One-row frame from a mapping, with nan/inf turned into nulls."""
        clean = {
            k: [None if isinstance(v, float) and not math.isfinite(v) else v]
            for k, v in values.items()
        }
        return pl.DataFrame(clean, strict=False)
