"""Sane bounds on input values: a value outside them is a poison value, quarantined.

It is quarantined with the reason, never kept: one such value would otherwise break every
later analysis.

Every reader checks its times and counts against these named constants.
"""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl

__all__ = [
    "MAX_ACCELERATORS_PER_JOB",
    "MAX_HOSTLIST_NODES",
    "MAX_NODES_PER_JOB",
    "TIME_MAX",
    "TIME_MIN",
    "YEAR_MAX",
    "YEAR_MIN",
    "out_of_range_time",
]

#: earliest and latest calendar year accepted for any timestamp
YEAR_MIN, YEAR_MAX = 1990, 2200
TIME_MIN = datetime(YEAR_MIN, 1, 1, tzinfo=UTC)
TIME_MAX = datetime(YEAR_MAX, 12, 31, 23, 59, 59, tzinfo=UTC)
#: most nodes one job attempt may hold (the largest machines have ~10^5 nodes)
MAX_NODES_PER_JOB = 1_000_000
#: most accelerators (GPUs, TPU chips) one job attempt may hold
MAX_ACCELERATORS_PER_JOB = 10_000_000
#: most node names one hostlist expression may expand to (bounded before expansion)
MAX_HOSTLIST_NODES = MAX_NODES_PER_JOB


def out_of_range_time(col: str) -> pl.Expr:
    """Flag datetimes outside the sane range [TIME_MIN, TIME_MAX].

    Parameters
    ----------
    col : str
        Name of a UTC-aware datetime column.

    Returns
    -------
    polars.Expr
        True where the column is set and lies outside [TIME_MIN, TIME_MAX]; False where it is
        inside or null.
    """
    c = pl.col(col)
    return c.is_not_null() & ((c < TIME_MIN) | (c > TIME_MAX))
