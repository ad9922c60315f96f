"""What one reader produced from one input: :class:`ReadResult`, a result on the one base.

A read is a result like a model's (:class:`reliability._result.Result`): a one-row
``summary`` (rows read, kept and quarantined, rows per canonical table, the observed window),
a text form, an HTML form for notebooks (the summary and the first quarantined rows, escaped),
its sample sizes, and ``to_disk`` / ``from_disk``.

The canonical frames are :attr:`ReadResult.frames`. ``ReadResult.tables`` was that mapping
until this release; for one release it still reads as one (with a :class:`DeprecationWarning`)
while calling it, ``r.tables()``, is :meth:`Result.tables` (the frames the HTML form shows).
"""

from __future__ import annotations

import warnings
from collections.abc import ItemsView, Iterator, KeysView, ValuesView
from dataclasses import dataclass, field
from datetime import UTC, datetime

import polars as pl

from reliability import schema
from reliability._result import Result, fmt_count
from reliability.errors import ReliabilityError

__all__ = ["QUARANTINE_SHOWN", "ReadResult"]

#: quarantined rows the HTML form shows (the rest are counted)
QUARANTINE_SHOWN = 20
#: quarantined rows the text form lists
_QUARANTINE_LISTED = 5
#: characters of a quarantined row's raw text the HTML form shows
_RAW_SHOWN = 200
_TIME = pl.Datetime("us", "UTC")
_DEPRECATED = (
    "ReadResult.tables as a mapping of frames is deprecated and will be removed in the next "
    "release: use ReadResult.frames (ReadResult.tables() is Result.tables(), the frames the "
    "HTML form shows)"
)


def _warn() -> None:
    warnings.warn(_DEPRECATED, DeprecationWarning, stacklevel=3)


class _TablesBridge:
    """``ReadResult.tables`` for one release: callable, and a deprecated view of ``frames``.

    Calling it is :meth:`Result.tables`; as a read-only mapping it is
    :attr:`ReadResult.frames`, with a :class:`DeprecationWarning` on every use.
    """

    __slots__ = ("_result",)

    def __init__(self, result: ReadResult) -> None:
        self._result = result

    def __call__(self) -> dict[str, pl.DataFrame]:
        return self._result._shown_tables()

    def __getitem__(self, table: str) -> pl.DataFrame:
        _warn()
        return self._result.frames[table]

    def __contains__(self, table: object) -> bool:
        _warn()
        return table in self._result.frames

    def __iter__(self) -> Iterator[str]:
        _warn()
        return iter(self._result.frames)

    def __len__(self) -> int:
        _warn()
        return len(self._result.frames)

    def get(self, table: str, default: pl.DataFrame | None = None) -> pl.DataFrame | None:
        _warn()
        return self._result.frames.get(table, default)

    def keys(self) -> KeysView[str]:
        _warn()
        return self._result.frames.keys()

    def values(self) -> ValuesView[pl.DataFrame]:
        _warn()
        return self._result.frames.values()

    def items(self) -> ItemsView[str, pl.DataFrame]:
        _warn()
        return self._result.frames.items()

    def __repr__(self) -> str:
        return f"<ReadResult.tables: deprecated view of frames {sorted(self._result.frames)}>"


@dataclass
class ReadResult(Result):
    """What one reader produced from one input file.

    Attributes
    ----------
    source : str
        Path of the input as given.
    frames : dict of str to polars.DataFrame
        Canonical tables produced (``{"jobs": ..., "job_steps": ...}``), validated.
    quarantine : polars.DataFrame
        Rows that were not kept, with ``source_file``, ``line_no``, ``raw``, ``reason``.
    rows_read : int
        Records read from the input (logical records: a job whose name holds a newline is one
        record over two physical lines; blank lines, comments and headers are not records).
    rows_kept : int
        Records accepted (a kept record may produce no output row, e.g. a healthy node in a
        snapshot, or a DCGM sample that is not an error).
    notes : list of str
        What the reader decided that a user should know (assumptions, skipped lines).
    observed_from, observed_until : datetime or None
        The window the input observed [UTC]. A reader that knows it (sacct's
        ``--starttime``/``--endtime``, given by the user or by ``collect``) sets it; otherwise
        it is the earliest / latest timestamp in the frames produced. Models censor still-open
        attempts and intervals at ``observed_until``.
    observation_basis : str
        How the window was found (``"latest timestamp in the input"`` when it was inferred,
        else what gave it, e.g. ``"sacct --endtime"``).

    Notes
    -----
    ``rows_read == rows_kept + rows_quarantined`` always (an internal accounting error
    otherwise). ``tables`` as a mapping is the deprecated name of :attr:`frames` (see the
    module notes).
    """

    title = "Input read"
    source: str
    frames: dict[str, pl.DataFrame]
    quarantine: pl.DataFrame
    rows_read: int
    rows_kept: int
    notes: list[str] = field(default_factory=list)
    observed_from: datetime | None = None
    observed_until: datetime | None = None
    observation_basis: str = ""

    def __post_init__(self) -> None:
        for name, frame in self.frames.items():
            self.frames[name] = schema.validate(frame, name)
        self.quarantine = schema.validate(self.quarantine, "quarantine")
        if self.observed_until is None or self.observed_from is None:
            first, last = _time_span(self.frames)
            if self.observed_from is None:
                self.observed_from = first
            if self.observed_until is None:
                self.observed_until = last
                if last is not None and not self.observation_basis:
                    self.observation_basis = "latest timestamp in the input"
        if self.rows_read != self.rows_kept + self.rows_quarantined:
            raise ReliabilityError(
                f"{self.source}: internal accounting error: rows read {self.rows_read} != "
                f"kept {self.rows_kept} + quarantined {self.rows_quarantined}"
            )

    @property
    def rows_quarantined(self) -> int:
        """Number of records quarantined."""
        return self.quarantine.height

    @property
    def tables(self) -> _TablesBridge:  # type: ignore[override]
        """Call it for the frames the HTML form shows (:meth:`Result.tables`).

        As a mapping (``r.tables["jobs"]``, ``.items()``, ``in``, iteration) it is the
        deprecated name of :attr:`frames`, for one release, with a :class:`DeprecationWarning`.
        """
        return _TablesBridge(self)

    def _shown_tables(self) -> dict[str, pl.DataFrame]:
        """Return the summary and the first quarantined rows (raw text cut to 200 characters)."""
        out = {"summary": self.summary}
        n = self.rows_quarantined
        if n:
            name = "quarantine"
            if n > QUARANTINE_SHOWN:
                name = f"quarantine (first {QUARANTINE_SHOWN} of {n:,} rows)"
            out[name] = self.quarantine.head(QUARANTINE_SHOWN).with_columns(
                pl.col("raw").str.slice(0, _RAW_SHOWN)
            )
        return out

    @property
    def summary(self) -> pl.DataFrame:
        """The read in one row.

        Columns ``source``, ``rows_read``, ``rows_kept``, ``rows_quarantined``,
        ``rows_<table>`` per canonical table, ``observed_from``, ``observed_until`` [UTC] and
        ``observation_basis``.
        """
        return pl.DataFrame(
            {
                "source": [self.source],
                "rows_read": [self.rows_read],
                "rows_kept": [self.rows_kept],
                "rows_quarantined": [self.rows_quarantined],
                **{f"rows_{t}": [f.height] for t, f in self.frames.items()},
                "observed_from": pl.Series([self.observed_from], dtype=_TIME),
                "observed_until": pl.Series([self.observed_until], dtype=_TIME),
                "observation_basis": [self.observation_basis],
            },
            schema_overrides=dict.fromkeys(
                ("rows_read", "rows_kept", "rows_quarantined"), pl.Int64
            ),
        )

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Records read, kept and quarantined."""
        return {
            "records read": self.rows_read,
            "kept": self.rows_kept,
            "quarantined": self.rows_quarantined,
        }

    def summary_line(self) -> str:
        """Summarise the read in one line.

        Returns
        -------
        str
            File, rows read / kept / quarantined, rows per table.
        """
        out = ", ".join(f"{t}={f.height}" for t, f in self.frames.items())
        return (
            f"{self.source}: read {self.rows_read}, kept {self.rows_kept}, "
            f"quarantined {self.rows_quarantined} -> {out}"
        )

    def _lines(self) -> list[str]:
        out = [
            self.source,
            f"  {fmt_count(self.rows_read, 'record')} read: {self.rows_kept:,} kept, "
            f"{self.rows_quarantined:,} quarantined",
        ]
        if self.frames:
            out.append(
                "  rows produced: " + ", ".join(f"{t} {f.height:,}" for t, f in self.frames.items())
            )
        else:
            out.append("  no tables produced")
        if self.observed_from is not None and self.observed_until is not None:
            out.append(
                f"  observed {_when(self.observed_from)} to {_when(self.observed_until)} UTC"
                + (f" ({self.observation_basis})" if self.observation_basis else "")
            )
        else:
            out.append("  observed window unknown (no timestamps in the input)")
        if self.rows_quarantined:
            shown = self.quarantine.head(_QUARANTINE_LISTED)
            out.append("  quarantined (first rows):")
            out += [
                f"    line {no}: {_one_line(reason)}"
                for no, reason in shown.select("line_no", "reason").iter_rows()
            ]
            if self.rows_quarantined > shown.height:
                out.append(f"    ... {self.rows_quarantined - shown.height:,} more")
        return out

    def __repr__(self) -> str:
        return f"ReadResult({self.summary_line()})"

    @classmethod
    def _example(cls) -> ReadResult:
        """Build a tiny instance: a DCGM-like read of 3 records, one quarantined.

        For the contract tests, which walk every result class.
        """
        t0 = datetime(2025, 3, 1, 8, 0, tzinfo=UTC)
        events = pl.DataFrame(
            {
                "cluster": ["tiny", "tiny"],
                "node": ["gpu01", "gpu02"],
                "time": [t0, t0.replace(hour=9)],
                "source": ["dcgm", "dcgm"],
                "component": ["gpu", "gpu_memory"],
                "code": ["79", "48"],
                "severity": ["critical", "critical"],
                "device": ["0", "3"],
                "message": ["fell off the bus", "double-bit ECC error"],
            },
            schema=schema.TABLES["health_events"].schema,
        )
        quarantine = pl.DataFrame(
            {
                "source_file": ["tiny/dcgm.txt"],
                "line_no": [2],
                "raw": ["gpu03 <b>not a sample</b>"],
                "reason": ["no timestamp"],
            }
        )
        return cls("tiny/dcgm.txt", {"health_events": events}, quarantine, 3, 2)


def _when(t: datetime) -> str:
    return f"{t.astimezone(UTC):%Y-%m-%d %H:%M:%S}"


def _one_line(text: str, width: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _time_span(frames: dict[str, pl.DataFrame]) -> tuple[datetime | None, datetime | None]:
    """Earliest and latest value of every datetime column of ``frames`` (None if none)."""
    lo: list[datetime] = []
    hi: list[datetime] = []
    for frame in frames.values():
        cols = [c for c, t in frame.schema.items() if isinstance(t, pl.Datetime)]
        if not cols or frame.height == 0:
            continue
        row = frame.select(
            pl.min_horizontal(pl.col(cols).min()).alias("lo"),
            pl.max_horizontal(pl.col(cols).max()).alias("hi"),
        ).row(0)
        if row[0] is not None:
            lo.append(row[0])
            hi.append(row[1])
    return (min(lo) if lo else None, max(hi) if hi else None)
