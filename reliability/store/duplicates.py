"""Recognise a second copy of records already in a Dataset, read in another time zone.

The same sacct export read twice (epoch times, then local times with a wrong ``tz``) gives
every job twice, a whole number of hours apart: the merge cannot see that they are one record
(its key holds the times), and every count doubles. The copy is recognisable: the same job ids
(or the same node, state and reason), the same durations to the second, and start times
shifted by a multiple of 15 minutes (every UTC offset is one) of at most 26 hours.

:func:`shifted_copy` compares a new input's ``jobs`` and ``node_states`` with every input
already in the Dataset. An input is a shifted copy of an earlier one when most of the records
they share (same ids and durations) are shifted and not also present unshifted (overlapping
exports of the same zone share records exactly: those merge, and are not a copy).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from reliability.errors import Hint, Hinted

__all__ = ["ShiftedCopy", "shifted_copy"]

#: every UTC offset in use is a multiple of this [minutes] (India +5:30, Nepal +5:45)
OFFSET_STEP_MIN = 15
#: the largest difference of two UTC offsets (UTC-12 to UTC+14) [h]
MAX_SHIFT_H = 26
#: records of a table compared, with the columns that identify one and its start and end
_TABLES = {
    "jobs": (("cluster", "job_id"), "start_time", "end_time"),
    "node_states": (("cluster", "node", "state", "reason"), "start", "end"),
}
#: most shared records shifted, and at least this many (or all shared, when fewer)
_MIN_SHIFTED = 3


@dataclass(frozen=True)
class ShiftedCopy:
    """An input that repeats an earlier input's records with shifted times.

    Attributes
    ----------
    table : str
        The table compared (``jobs`` or ``node_states``).
    earlier : dict
        The earlier input's manifest entry.
    shared : int
        Records of the new input that the earlier one also holds (same ids and durations).
    shifted : int
        Of those, the ones present only with shifted times.
    shifts_h : tuple of float
        The shifts, most frequent first [h] (new minus earlier; two when a daylight-saving
        change lies inside the data).
    """

    table: str
    earlier: dict[str, Any]
    shared: int
    shifted: int
    shifts_h: tuple[float, ...]

    def message(self, tz_now: str | None) -> str:
        """Say what was found and what to do, naming the time zones of both reads.

        Parameters
        ----------
        tz_now : str or None
            The new input's ``tz`` option.

        Returns
        -------
        str
            The refusal, with ``tz=`` as a :class:`~reliability.errors.Hint` (front ends spell it).
        """
        what = "jobs" if self.table == "jobs" else "node-state intervals"
        shifts = " and ".join(_hours(h) for h in self.shifts_h)
        # the zones are named, not spelled as options: a front end spells the ``tz=`` hint as
        # the input being ingested's, and the earlier input's option is not this one's
        then = (self.earlier.get("options") or {}).get("tz")
        zone_then = f"local times in {then!r}" if then else "epoch times or times with a zone"
        zone_new = f"local times in {tz_now!r}" if tz_now else "epoch times or times with a zone"
        return Hinted(
            f"the same {self.shifted:,} {what} as {self.earlier.get('name')!r} (ingested "
            f"{str(self.earlier.get('ingested_at', '?'))[:19]}), with the same durations and "
            f"every time shifted by {shifts}: the same records read twice in different time zones "
            f"(this one read as {zone_new}, that one as {zone_then}). Nothing was ingested. "
            "sacct and sacctmgr print local time without a zone: pass the zone of the host that "
            "ran them as ",
            Hint("tz", action=False),
            "; if the earlier input was read in the wrong zone, ingest that one again, replacing "
            "it, in the right zone",
        )


def _hours(h: float) -> str:
    sign = "+" if h > 0 else "-"
    a = abs(h)
    return f"{sign}{a:g} h" if a == int(a) else f"{sign}{int(a)} h {round((a - int(a)) * 60)} min"


def shifted_copy(
    root: Path, others: list[dict[str, Any]], tables: dict[str, pl.DataFrame]
) -> ShiftedCopy | None:
    """Find an earlier input whose records a new input repeats with shifted times.

    Parameters
    ----------
    root : Path
        The Dataset folder (the earlier inputs' parts are read from it).
    others : list of dict
        Manifest entries of the earlier inputs (committed, or written in this call).
    tables : dict of str to polars.DataFrame
        The new input's tables.

    Returns
    -------
    ShiftedCopy or None
        The earlier input it copies (the one sharing the most shifted records), or None.
    """
    best: ShiftedCopy | None = None
    for table, (ids, start, end) in _TABLES.items():
        frame = tables.get(table)
        if frame is None or frame.height == 0:
            continue
        found = _compare(root, others, frame, table, list(ids), start, end)
        if found is not None and (best is None or found.shifted > best.shifted):
            best = found
    return best


def _overlaps(entry: dict[str, Any], lo: datetime, hi: datetime) -> bool:
    """Tell whether an input's observation window meets ``[lo, hi]`` (True when unknown)."""
    obs = entry.get("observation") or {}
    try:
        start = datetime.fromisoformat(obs["from"]) if obs.get("from") else None
        end = datetime.fromisoformat(obs["until"]) if obs.get("until") else None
    except (TypeError, ValueError):
        return True
    return not ((end is not None and end < lo) or (start is not None and start > hi))


def _compare(
    root: Path, others: list[dict[str, Any]], frame: pl.DataFrame, table: str,
    ids: list[str], start: str, end: str,
) -> ShiftedCopy | None:  # fmt: skip
    key = [f"_{c}" for c in ids]
    new = frame.filter(pl.col(start).is_not_null() & pl.col(end).is_not_null()).select(
        *[pl.col(c).cast(pl.String).alias(k) for c, k in zip(ids, key, strict=True)],
        _s=pl.col(start),
        _d=pl.col(end) - pl.col(start),
    )
    if new.height == 0:
        return None
    # only inputs whose observation comes within the largest shift of this one's can hold a copy
    lo = new.get_column("_s").min() - timedelta(hours=MAX_SHIFT_H)
    hi = (new.get_column("_s") + new.get_column("_d")).max() + timedelta(hours=MAX_SHIFT_H)
    # a copy shares its ids, cluster included: only the new input's clusters' rows are read
    # (the parts' statistics skip the rest; a fleet's other clusters overlap it in time, and
    # reading them made each ingest cost as much as every earlier input together)
    mine = pl.col("cluster").is_in(frame.get_column("cluster").unique().drop_nulls().implode())
    scans = []
    for i, e in enumerate(others):
        part = (e.get("parts") or {}).get(table)
        if part is None or not _overlaps(e, lo, hi):
            continue
        scans.append(
            pl.scan_parquet(root / part["file"])
            .filter(mine & pl.col(start).is_not_null() & pl.col(end).is_not_null())
            .select(
                *[pl.col(c).cast(pl.String).alias(k) for c, k in zip(ids, key, strict=True)],
                _i=pl.lit(i, pl.Int64),
                _s0=pl.col(start),
                _d0=pl.col(end) - pl.col(start),
            )
        )
    if not scans:
        return None
    ids_new = new.select(key).unique()
    old = (
        pl.concat(scans, how="vertical")
        .join(ids_new.lazy(), on=key, how="semi", nulls_equal=True)
        .collect()
    )
    if old.height == 0:
        return None
    step_us = OFFSET_STEP_MIN * 60 * 1_000_000
    pairs = (
        new.join(old, on=key, nulls_equal=True)
        .filter(pl.col("_d") == pl.col("_d0"))
        .with_columns(_shift=(pl.col("_s") - pl.col("_s0")).dt.total_microseconds())
    )
    shared = pairs.group_by("_i").agg(shared=pl.struct(key).n_unique())
    exact = pairs.filter(pl.col("_shift") == 0).select("_i", *key).unique()
    shifted = pairs.filter(
        (pl.col("_shift") != 0)
        & (pl.col("_shift") % step_us == 0)
        & (pl.col("_shift").abs() <= MAX_SHIFT_H * 3600 * 1_000_000)
    ).join(exact, on=["_i", *key], how="anti", nulls_equal=True)
    if shifted.height == 0:
        return None
    per = (
        shifted.group_by("_i")
        .agg(
            shifted=pl.struct(key).n_unique(),
            shifts=pl.col("_shift").value_counts(sort=True).struct.field("_shift"),
        )
        .join(shared, on="_i")
        .filter(
            (pl.col("shifted") * 2 > pl.col("shared"))
            & (pl.col("shifted") >= pl.min_horizontal(pl.col("shared"), pl.lit(_MIN_SHIFTED)))
        )
        .sort("shifted", descending=True)
    )
    if per.height == 0:
        return None
    row = per.row(0, named=True)
    return ShiftedCopy(
        table=table,
        earlier=others[row["_i"]],
        shared=int(row["shared"]),
        shifted=int(row["shifted"]),
        shifts_h=tuple(s / 3.6e9 for s in row["shifts"][:2]),
    )
