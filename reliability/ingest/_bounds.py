"""Sane bounds on input values: a value outside them is a poison value, quarantined.

It is quarantined with the reason, never kept: one such value would otherwise break every
later analysis.

Every reader checks its times and counts against these named constants.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl

from reliability.hostlist import MAX_HOSTLIST_NODES

__all__ = [
    "FUTURE_MARGIN",
    "MAX_ACCELERATORS_PER_JOB",
    "MAX_HOSTLIST_NODES",
    "MAX_NODES_PER_JOB",
    "TIME_MAX",
    "TIME_MIN",
    "YEAR_MAX",
    "YEAR_MIN",
    "bounds_text",
    "latest_time",
    "out_of_range_time",
    "time_out_of_bounds",
]

#: earliest and latest calendar year accepted for any timestamp
YEAR_MIN, YEAR_MAX = 1990, 2200
TIME_MIN = datetime(YEAR_MIN, 1, 1, tzinfo=UTC)
TIME_MAX = datetime(YEAR_MAX, 12, 31, 23, 59, 59, tzinfo=UTC)
#: how far past the time of reading a timestamp may lie: clock skew, or a time zone misread
#: (at most 14 h); a later one is a clock or parse error (one scrape stamped 2199 stretched a
#: report's observation window, availability and downtime to 173 years)
FUTURE_MARGIN = timedelta(days=2)
#: most nodes one job attempt may hold (the largest machines have ~10^5 nodes); also the most
#: names one hostlist expression may expand to (:data:`reliability.hostlist.MAX_HOSTLIST_NODES`,
#: defined there so the hostlist module stays a leaf the simulator can use)
MAX_NODES_PER_JOB = MAX_HOSTLIST_NODES
#: most accelerators (GPUs, TPU chips) one job attempt may hold
MAX_ACCELERATORS_PER_JOB = 10_000_000


def latest_time() -> datetime:
    """Return the latest timestamp accepted now.

    Returns
    -------
    datetime
        :data:`TIME_MAX`, or the time of reading plus :data:`FUTURE_MARGIN` if earlier [UTC].
    """
    return min(TIME_MAX, datetime.now(UTC) + FUTURE_MARGIN)


def bounds_text(latest: datetime) -> str:
    """Say the accepted range of timestamps, for a quarantine reason.

    Parameters
    ----------
    latest : datetime
        The latest accepted (:func:`latest_time` of the read).

    Returns
    -------
    str
        ``"outside 1990-2200 or after 2026-12-05 07:32 UTC (two days past the time of reading)"``.
    """
    days = FUTURE_MARGIN.days
    return (
        f"outside {YEAR_MIN}-{YEAR_MAX} or after {latest:%Y-%m-%d %H:%M} UTC ({days} days past "
        "the time of reading)"
    )


def out_of_range_time(col: str, latest: datetime | None = None) -> pl.Expr:
    """Flag datetimes outside the sane range [TIME_MIN, latest].

    Parameters
    ----------
    col : str
        Name of a UTC-aware datetime column.
    latest : datetime or None
        The latest accepted; None: :func:`latest_time`.

    Returns
    -------
    polars.Expr
        True where the column is set and lies outside [TIME_MIN, latest]; False where it is
        inside or null.
    """
    c = pl.col(col)
    return c.is_not_null() & ((c < TIME_MIN) | (c > (latest or latest_time())))


def time_out_of_bounds(t: datetime) -> str | None:
    """Check one timestamp against [TIME_MIN, :func:`latest_time`].

    Parameters
    ----------
    t : datetime
        An aware timestamp.

    Returns
    -------
    str or None
        None when it is within the bounds; else :func:`bounds_text` (``"outside ..."``), for the
        quarantine reason.
    """
    latest = latest_time()
    return None if TIME_MIN <= t <= latest else bounds_text(latest)
