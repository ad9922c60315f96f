"""When an input was observed: the export time given at ingest, or inferred and said.

Every input records the end of its observation (``observation.until`` in its manifest entry):
an attempt or a node-state interval still open in the input is open at that time, "now" for
the report. It comes from, in order of precedence:

1. ``observed_at=`` given at ingest (``--observed-at`` on the CLI, ``inputs[i].observed_at``
   in a pipeline): when the export was taken. A timestamp in the input later than it is a
   contradiction (a wrong ``observed_at`` or a wrong time zone) and the input is refused;
   with sacct's ``--endtime`` (``window_end=``) the earlier of the two ends the observation.
   A time past this machine's clock (by more than :data:`FUTURE_MARGIN`) is refused; one more
   than :data:`LONG_AFTER` after the latest record, with something open, gets a note (what is
   open is counted as open until then);
2. what the reader knows (sacct's ``--endtime`` given as ``window_end=``);
3. the latest timestamp in the input: a lower bound of when it was exported. An export
   taken while a node is DOWN has that node's open interval start as its latest timestamp;
   the interval is open there, never dropped. When the input holds anything still open, the
   ingest says so (the CLI adds the file's modification time, a likely export time).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl

from reliability.errors import Hint, Hinted, IngestError, ReliabilityError, join_messages
from reliability.ingest import ReadResult

__all__ = [
    "GIVEN",
    "INFERRED",
    "INFERRED_NOTE_END",
    "apply_observed_at",
    "check_observed_at",
    "note_inferred_end",
]

#: the basis recorded for an observation end given at ingest
GIVEN = "the export time given at ingest"
#: the basis a reader records when it infers the end (see ReadResult)
INFERRED = "latest timestamp in the input"
#: job states of an attempt that is still going at export (no end yet)
_OPEN_STATES = ("RUNNING", "PENDING", "SUSPENDED", "REQUEUED")


def check_observed_at(value: object) -> datetime:
    """Check an ``observed_at=`` value and return it as a UTC datetime.

    Parameters
    ----------
    value : datetime or str
        An aware datetime, or ISO 8601 text with a UTC offset (``2025-03-01T12:00:00Z``).

    Returns
    -------
    datetime
        The time [UTC].

    Raises
    ------
    ReliabilityError
        For a naive time, unparsable text or a time outside the accepted years.
    """
    from reliability.ingest.shared import YEAR_MAX, YEAR_MIN

    t = value
    if isinstance(value, str):
        try:
            t = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ReliabilityError(
                Hinted(
                    Hint("observed_at", value, action=False),
                    ": expected an ISO 8601 time with a UTC offset (e.g. 2025-03-01T12:00:00Z)",
                )
            ) from None
    if not isinstance(t, datetime):
        raise ReliabilityError(
            Hinted(
                Hint("observed_at", value, action=False),
                ": expected a time (ISO 8601 with a UTC offset)",
            )
        )
    if t.tzinfo is None:
        raise ReliabilityError(
            Hinted(
                Hint("observed_at", t.isoformat(), action=False),
                " needs a UTC offset (e.g. 2025-03-01T12:00:00Z)",
            )
        )
    if not YEAR_MIN <= t.year <= YEAR_MAX:
        raise ReliabilityError(
            Hinted(
                Hint("observed_at", t.isoformat(), action=False),
                f" is outside the years {YEAR_MIN}-{YEAR_MAX}",
            )
        )
    t = t.astimezone(UTC)
    now = datetime.now(UTC)
    if t > now + FUTURE_MARGIN:
        raise ReliabilityError(
            Hinted(
                Hint("observed_at", t, action=False),
                f" is in the future (this machine's clock reads {now:%Y-%m-%dT%H:%M:%SZ}): an "
                "export cannot have been taken after now, and every interval or attempt open at "
                "the end would be counted as open until then; give the time the export was taken",
            )
        )
    return t


#: how far past this machine's clock an ``observed_at`` may be (clock skew between the cluster
#: and the machine reading its export)
FUTURE_MARGIN = timedelta(hours=1)


def _latest(result: ReadResult) -> tuple[datetime, str] | None:
    """Find the latest timestamp of the input's tables and where it is (``table.column``)."""
    best: tuple[datetime, str] | None = None
    for name, frame in result.frames.items():
        if frame.height == 0:
            continue
        for col, dtype in frame.schema.items():
            if not isinstance(dtype, pl.Datetime):
                continue
            t = frame.get_column(col).max()
            if isinstance(t, datetime) and (best is None or t > best[0]):
                best = (t, f"{name}.{col}")
    return best


def apply_observed_at(result: ReadResult, shown: str, observed_at: datetime) -> None:
    """Record ``observed_at`` as the end of an input's observation (in place).

    Parameters
    ----------
    result : ReadResult
        What the reader returned.
    shown : str
        The input's name as the user knows it (for the error).
    observed_at : datetime
        When the export was taken [UTC].

    Raises
    ------
    IngestError
        If the input holds a timestamp after ``observed_at``: the export cannot record what had
        not happened yet (a wrong ``observed_at``, or local times read in the wrong zone).
    """
    latest = _latest(result)
    if latest is not None and latest[0] > observed_at:
        t, where = latest
        gap_h = (t - observed_at).total_seconds() / 3600.0
        zone = (
            Hinted(
                f" ({gap_h:.0f} h: a whole number of hours, as when local times are read in the "
                "wrong zone: check ",
                Hint("tz", action=False),
                ")",
            )
            if gap_h >= 1 and abs(gap_h - round(gap_h)) < 1e-9
            else ""
        )
        raise IngestError(
            shown,
            join_messages(
                Hint("observed_at", observed_at, action=False),
                f" is before the latest time in the input, {t.isoformat()} ({where}), by "
                f"{_span(gap_h)}",
                zone,
                ": an export cannot record what happened after it was taken; give the time the "
                "export was taken",
            ),
        )
    if (
        latest is not None
        and observed_at - latest[0] > LONG_AFTER
        and _open_counts(result) != (0, 0)
    ):
        days = (observed_at - latest[0]).total_seconds() / 86400.0
        result.notes.append(
            Hinted(
                Hint("observed_at", observed_at, action=False),
                f" is {days:.1f} days after the latest time in the input "
                f"({latest[0]:%Y-%m-%dT%H:%M:%SZ}): what is open at the end (attempts running or "
                "pending, nodes out of service) is counted as open for those days; if the export "
                "was taken earlier, give that time",
            )
        )
    if result.observed_until is not None and result.observation_basis not in ("", INFERRED):
        if observed_at < result.observed_until:
            result.observed_until = observed_at
            result.observation_basis = GIVEN
        return
    result.observed_until = observed_at
    result.observation_basis = GIVEN


def _span(hours: float) -> str:
    if hours >= 1:
        return f"{hours:.2f} h".replace(".00 h", " h")
    return f"{hours * 3600:.0f} s"


#: the start of the note :func:`note_inferred_end` writes (front ends add the file's mtime)
INFERRED_NOTE_END = Hinted(Hint("observed_at"), " to record when the export was taken")


def _open_counts(result: ReadResult) -> tuple[int, int]:
    """Count the attempts still running or pending and the node-state intervals still open."""
    jobs = result.frames.get("jobs")
    states = result.frames.get("node_states")
    n_jobs = (
        jobs.filter(
            pl.col("end_time").is_null() & pl.col("state").cast(pl.String).is_in(_OPEN_STATES)
        ).height
        if jobs is not None and jobs.height
        else 0
    )
    n_states = states.filter(pl.col("end").is_null()).height if states is not None else 0
    return n_jobs, n_states


#: an ``observed_at`` this long after the latest record in an input gets a note
LONG_AFTER = timedelta(days=1)


def note_inferred_end(result: ReadResult) -> None:
    """Say, in the input's notes, where open records end when the export time was inferred.

    Nothing is said when the end was given or known, or when nothing in the input is open.

    Parameters
    ----------
    result : ReadResult
        What the reader returned (a note is appended in place).
    """
    if result.observation_basis != INFERRED or result.observed_until is None:
        return
    n_jobs, n_states = _open_counts(result)
    if not n_jobs and not n_states:
        return
    what = " and ".join(
        p
        for p in (
            f"{n_jobs:,} attempt(s) still running or pending" if n_jobs else "",
            f"{n_states:,} node-state interval(s) still open" if n_states else "",
        )
        if p
    )
    result.notes.append(
        Hinted(
            f"{what} at export: open at the end of the observation, taken as the latest time in "
            f"the input, {result.observed_until:%Y-%m-%d %H:%M:%S} UTC (a lower bound of when it "
            "was exported); ",
            INFERRED_NOTE_END,
        )
    )
