"""From sacct allocation records to job attempts: Slurm's requeue and resize semantics.

Shared by the ``--parsable2`` and ``--json`` readers, on a frame of allocation records with
a ``line_no`` (the record's position in its input, for messages and the quarantine):

* **Exact duplicates** (the same record printed twice in one input, e.g. concatenated
  overlapping exports: byte-identical text) count once: the repeats are quarantined
  "exact duplicate of line N".
* **Resized jobs**: after ``scontrol update NumNodes=``, sacct prints the job's record up to
  the resize with state ``RESIZING``, then a new record whose Submit is the resize time and
  whose Start repeats the job's original start (so Submit is after Start). That record is
  kept as the next segment of the same job: its ``start_time`` is set to the resize time (its
  Submit), so that the two segments do not overlap and no attempt starts before it was
  submitted; ``RESIZING`` is a state of the contract's ``JobState`` enum. A Submit after
  Start without such a ``RESIZING`` partner is quarantined (impossible order).
* **Attempts** of a job (``--duplicates``) are numbered 0, 1, ... by start time.
* **Exports without --duplicates**: Slurm resets a job's Submit to the requeue time, and job
  ids are handed out in submission order, so a record whose Submit is later than that of
  jobs with higher ids was requeued (or resized). If no job id repeats, such records mean the
  export shows only the last attempt of each requeued job: a note says so, with the command.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta

import numpy as np
import polars as pl

from reliability import schema
from reliability.ingest._common import first_of_runs
from reliability.ingest.sacct.fields import SACCT_EXPORT_COMMAND

__all__ = [
    "RESIZE_TOLERANCE",
    "duplicate_candidates",
    "duplicated",
    "exact_duplicates",
    "missing_duplicates_note",
    "number_attempts",
    "resize_segments",
    "same_attempts",
]

#: most distance between a RESIZING record's End and the next segment's Submit
RESIZE_TOLERANCE = timedelta(seconds=1)


def duplicated(frame: pl.DataFrame, cols: Sequence[str]) -> np.ndarray:
    """Mask the rows whose values in some columns occur more than once.

    The mask is a superset: rows whose 64-bit hash of ``cols`` collides are included; callers
    compare exactly.

    Parameters
    ----------
    frame : polars.DataFrame
        The rows.
    cols : sequence of str
        The columns compared (list columns too).

    Returns
    -------
    numpy.ndarray
        Boolean, one entry per row.
    """
    n = frame.height
    if n < 2:
        return np.zeros(n, dtype=bool)
    if not cols:  # every row has the same (empty) values
        return np.ones(n, dtype=bool)
    # one row hash over the columns (polars hashes rows in parallel; list columns natively)
    h = frame.select(cols).hash_rows(seed=17).to_numpy()
    # numpy's sort of 64-bit keys (SIMD) is 3x faster than polars' hash count of them
    order = np.sort(h)
    same = order[1:] == order[:-1]
    if not same.any():  # the common case
        return np.zeros(n, dtype=bool)
    return np.isin(h, order[1:][same])


#: columns that identify a record well enough to find duplicate candidates
_KEY_COLS = ("cluster", "job_id", "step", "submit_time", "start_time", "end_time", "state")


def duplicate_candidates(frame: pl.DataFrame) -> pl.Series:
    """Return the ``line_no`` of the records that may repeat another exactly.

    A superset: the records that agree with another on the identifying columns (or whose hash
    of them collides); two records with the same text have the same parse, so both are in it.

    Parameters
    ----------
    frame : polars.DataFrame
        Typed records with ``line_no``.

    Returns
    -------
    polars.Series
        Int64 line numbers, in the frame's order.
    """
    mask = duplicated(frame, [c for c in _KEY_COLS if c in frame.columns])
    lines = frame.get_column("line_no")
    return lines.filter(pl.Series(mask)) if mask.any() else lines.clear()


def same_attempts(
    frame: pl.DataFrame, key: Sequence[str], candidates: pl.Series
) -> tuple[pl.DataFrame, list[tuple[int, str]]]:
    """Keep one record of each job attempt (or step) that one input holds twice.

    ``sacct --duplicates`` prints each attempt once; an input holds one twice when exports
    are concatenated, e.g. one taken while a job ran and one after it ended. Records that share
    the table's natural key (``key``: cluster, job id, [step,] Submit, Start) are one record
    seen twice, and the winner is chosen as the Dataset chooses between inputs
    (:mod:`reliability.store.merge`): a finished record beats an unfinished one
    (:data:`~reliability.schema.UNFINISHED_STATES`, or no End), then the later End, then the
    later line. An allocation that never started and is unfinished (PENDING) is the same
    attempt as another record of its job with the same Submit (one that started, or ended
    without starting), which is kept. Run after :func:`exact_duplicates` (a repeat is reported
    as such, not here).

    Parameters
    ----------
    frame : polars.DataFrame
        Typed records with ``line_no``, ``state``, ``end_time`` and the ``key`` columns.
    key : sequence of str
        The natural key (``reliability.schema.TABLES[...].key``).
    candidates : polars.Series
        ``line_no`` of the records that may share a key with another (a superset; e.g. those
        whose job id repeats).

    Returns
    -------
    (polars.DataFrame, list of (int, str))
        The frame without the records that lost, and (line, quarantine reason) of each.
    """
    if candidates.len() < 2:
        return frame, []
    key = list(key)
    unfinished = pl.Series(schema.UNFINISHED_STATES, dtype=schema.JobState)
    sub = (
        frame.filter(pl.col("line_no").is_in(candidates.implode()))
        .select(*key, "state", "end_time", "line_no")
        .with_columns(
            _fin=pl.col("end_time").is_not_null() & ~pl.col("state").is_in(unfinished.implode())
        )
        .sort(
            [*key, "_fin", "end_time", "line_no"],
            descending=[False] * len(key) + [True] * 3,
            nulls_last=True,
        )
    )
    if sub.height < 2:
        return frame, []

    sub = sub.with_columns(_run=first_of_runs(key).cum_sum()).with_columns(
        _winner=pl.col("line_no").first().over("_run")
    )
    lost = sub.filter(pl.col("line_no") != pl.col("_winner"))
    out = [
        (
            ln,
            f"the same attempt as line {w} (same JobID, Submit and Start), which is kept: a "
            "finished record beats an unfinished one, then the later End, then the later line "
            "(exports concatenated, one taken while the job ran?)",
        )
        for ln, w in lost.select("line_no", "_winner").iter_rows()
    ]
    if "submit_time" in key and "step" not in key:
        kept = sub.filter(pl.col("line_no") == pl.col("_winner"))
        job = ["cluster", "job_id", "submit_time"]
        same = pl.all_horizontal([pl.col(c).eq_missing(pl.col(c).shift(1)) for c in job])
        pending = pl.col("start_time").is_null() & ~pl.col("_fin")
        never = kept.with_columns(_prev=pl.col("line_no").shift(1)).filter(
            (same & pending).fill_null(False)
        )
        out += [
            (
                ln,
                f"a never-started, unfinished record of the attempt at line {w} (same JobID and "
                "Submit), which is kept",
            )
            for ln, w in never.select("line_no", "_prev").iter_rows()
        ]
    if not out:
        return frame, []
    drop = pl.Series([ln for ln, _ in out], dtype=pl.Int64)
    return frame.filter(~pl.col("line_no").is_in(drop.implode())), out


def exact_duplicates(
    frame: pl.DataFrame,
    raw_of: Callable[[list[int]], dict[int, str]],
    candidates: pl.Series | None = None,
) -> tuple[pl.DataFrame, list[tuple[int, int]]]:
    """Find the records that repeat an earlier record of the same input exactly.

    Records that agree on the identifying columns are candidates; a candidate whose raw text
    equals an earlier one's is a repeat.

    Parameters
    ----------
    frame : polars.DataFrame
        Typed records with ``line_no``.
    raw_of : callable
        ``raw_of(line_nos)`` returns ``{line_no: raw text}`` of those records.
    candidates : polars.Series or None
        ``line_no`` of the candidates, from :func:`duplicate_candidates` of these records or of
        a superset of them with the same parse (rows the frame no longer holds are ignored);
        None: found here.

    Returns
    -------
    (polars.DataFrame, list of (int, int))
        The frame without the repeats, and (repeat line, line of the first record) per repeat.
    """
    if candidates is None:
        candidates = duplicate_candidates(frame)
    if candidates.len() == 0:
        return frame, []
    here = frame.get_column("line_no")
    lines = sorted(here.filter(here.is_in(candidates.implode())).to_list())
    raw = raw_of(lines)
    first: dict[str, int] = {}
    repeats: list[tuple[int, int]] = []
    for ln in lines:
        text = raw.get(ln)
        if text is None:
            continue
        if text in first:
            repeats.append((ln, first[text]))
        else:
            first[text] = ln
    if not repeats:
        return frame, []
    drop = pl.Series([r for r, _ in repeats], dtype=pl.Int64).implode()
    return frame.filter(~pl.col("line_no").is_in(drop)), repeats


def resize_segments(
    allocs: pl.DataFrame, *, unit: str = "line"
) -> tuple[pl.DataFrame, list[tuple[int, str]], list[str]]:
    """Keep the records after a resize as segments; quarantine other Submit-after-Start records.

    Parameters
    ----------
    allocs : polars.DataFrame
        Allocation records with ``line_no``, ``cluster``, ``job_id``, ``state``, ``submit_time``,
        ``start_time``, ``end_time``.
    unit : str
        What ``line_no`` counts, in notes (``line``, or ``record`` for JSON).

    Returns
    -------
    (polars.DataFrame, list of (int, str), list of str)
        The allocations kept, (line_no, reason) of the records to quarantine, and notes.
    """
    late = pl.col("submit_time") > pl.col("start_time")
    odd = allocs.filter(late.fill_null(False))
    if odd.height == 0:
        return allocs, [], []
    resizing = allocs.filter(pl.col("state") == "RESIZING").select(
        "cluster", "job_id", p_start="start_time", p_end="end_time", p_line="line_no"
    )
    matched = (
        odd.select("line_no", "cluster", "job_id", "submit_time", "start_time")
        .join(resizing, on=["cluster", "job_id"], how="inner")
        .filter(
            (pl.col("p_start") == pl.col("start_time"))
            & ((pl.col("p_end") - pl.col("submit_time")).abs() <= RESIZE_TOLERANCE)
        )
        .unique("line_no", keep="first")
    )
    notes = [
        f"job {job}: resized; the record at {unit} {ln} (Submit {sub:%Y-%m-%dT%H:%M:%SZ}, the "
        f"resize time) follows the RESIZING record at {unit} {p} and is kept as the job's "
        "next segment, starting at the resize time"
        for ln, job, sub, p in matched.select("line_no", "job_id", "submit_time", "p_line")
        .sort("line_no")
        .iter_rows()
    ]
    seg = pl.col("line_no").is_in(matched.get_column("line_no").implode())
    bad = odd.filter(~pl.col("line_no").is_in(matched.get_column("line_no").implode()))
    reasons = [
        (
            ln,
            f"Submit {s:%Y-%m-%dT%H:%M:%S} is after Start {t:%Y-%m-%dT%H:%M:%S} (UTC; "
            "impossible order, and no RESIZING record of the job explains it; not fixed)",
        )
        for ln, s, t in bad.select("line_no", "submit_time", "start_time").iter_rows()
    ]
    out = allocs.filter(~pl.col("line_no").is_in(bad.get_column("line_no").implode()))
    out = out.with_columns(
        start_time=pl.when(seg).then(pl.col("submit_time")).otherwise(pl.col("start_time"))
    )
    return out, reasons, notes


def number_attempts(allocs: pl.DataFrame, dup: np.ndarray | None = None) -> pl.Series:
    """Assign attempt numbers: 0 for a job id seen once, by start time otherwise.

    Parameters
    ----------
    allocs : polars.DataFrame
        Allocation records with ``cluster``, ``job_id``, ``start_time``, ``submit_time``,
        ``line_no``.
    dup : numpy.ndarray or None
        :func:`duplicated` of cluster and job id, if already known.

    Returns
    -------
    polars.Series
        ``attempt`` (UInt16), one per row of ``allocs``.
    """
    attempt = pl.repeat(0, allocs.height, dtype=pl.UInt16, eager=True).alias("attempt")
    if dup is None:
        dup = duplicated(allocs, ["cluster", "job_id"])
    if dup.any():
        numbered = (
            allocs.with_row_index("__i")
            .filter(pl.Series(dup))
            .sort("cluster", "job_id", "start_time", "submit_time", "line_no", nulls_last=True)
            .select("__i", n=pl.int_range(pl.len(), dtype=pl.UInt16).over("cluster", "job_id"))
        )
        attempt = attempt.scatter(numbered.get_column("__i"), numbered.get_column("n"))
    return attempt


def _resubmitted(allocs: pl.DataFrame) -> list[str]:
    """Find job ids (plain, not array tasks) whose Submit is later than that of a higher id.

    Slurm hands out ids in submission order (per cluster) and resets Submit only when it
    requeues or resizes a job.
    """
    # lean on memory: this runs beside the node-list expansion (the whole frame at once
    # in one polars select held 90 MB of temporaries for 1 M allocations)
    ids = allocs.get_column("job_id")
    base = ids.cast(pl.Int64, strict=False)  # a bare number: its own base
    odd = base.is_null() & ids.is_not_null()
    if odd.any():  # array tasks (12_3), het jobs (12+1): the number before the suffix
        head = ids.filter(odd).str.split_exact("_", 1).struct.field("field_0")
        head = head.str.split_exact("+", 1).struct.field("field_0").cast(pl.Int64, strict=False)
        base = base.scatter(odd.arg_true(), head)
    submit = allocs.get_column("submit_time").dt.epoch("us")
    ok = (base.is_not_null() & submit.is_not_null()).to_numpy()
    if np.count_nonzero(ok) < 2:
        return []
    # integers (a column with nulls would come out as floats); the null rows are left out
    b, t = base.fill_null(0).to_numpy(), submit.fill_null(0).to_numpy()
    kept = None if ok.all() else np.flatnonzero(ok)
    if kept is not None:
        b, t = b[kept], t[kept]
    # highest id first (the order among equal ids does not matter below); polars' sort is
    # 5x numpy's on 1 M ids, mostly in order already
    order = pl.Series(b).arg_sort(descending=True).to_numpy()
    b, t = b[order], t[order]
    rows = order if kept is None else kept[order]  # rows of allocs, highest id first
    del order, kept
    running = np.minimum.accumulate(t)  # earliest Submit among ids >= this one
    first = np.r_[True, b[1:] != b[:-1]]  # first row of each id
    del b
    start = np.where(first, np.arange(t.size), 0)
    np.maximum.accumulate(start, out=start)
    later = np.where(start > 0, running[np.maximum(start - 1, 0)], np.iinfo(np.int64).max)
    del running, start
    # array tasks (12_3) are not resubmissions: only the ids that are not bare numbers can be
    plain = ~odd.to_numpy()
    if not plain.all():
        at = np.flatnonzero(~plain)
        plain[at] = ~ids.gather(at).str.contains("_", literal=True).to_numpy()
    rows = rows[(t > later) & plain[rows]]
    return allocs.get_column("job_id").gather(rows).to_list()


def missing_duplicates_note(
    allocs: pl.DataFrame, *, example_count: int = 5, dup: np.ndarray | None = None
) -> str | None:
    """Warn when an export looks like it was made without ``--duplicates`` (see the module notes).

    Parameters
    ----------
    allocs : polars.DataFrame
        The export's allocation records.
    example_count : int
        Most job ids quoted as examples.
    dup : numpy.ndarray or None
        :func:`duplicated` of cluster and job id, if already known.

    Returns
    -------
    str or None
        The note, with example job ids, or None when nothing suggests it.
    """
    if allocs.height < 2:
        return None
    # only the columns used: the group_by below copies every column it is given
    allocs = allocs.select("cluster", "job_id", "state", "submit_time")
    resized = allocs.filter(pl.col("state") == "RESIZING").select("cluster", "job_id").unique()
    if resized.height:
        rest = allocs.join(resized, on=["cluster", "job_id"], how="anti")
        dup = duplicated(rest, ["cluster", "job_id"])
    else:
        rest = allocs
        dup = duplicated(rest, ["cluster", "job_id"]) if dup is None else dup
    if (
        dup.any()
        and rest.filter(pl.Series(dup))
        .select(pl.struct("cluster", "job_id").is_duplicated().any())
        .item()
    ):
        return None
    flagged: list[str] = []
    # one cluster (the usual export) needs no partition, which would copy the columns
    parts = [rest] if rest.get_column("cluster").n_unique() == 1 else rest.partition_by("cluster")
    for part in parts:
        flagged += _resubmitted(part)
    if not flagged:
        return None
    # the lowest ids first (shorter first: numbers); a bounded sort (a tiled or re-numbered
    # export may flag every job)
    requeued = pl.Series("job_id", flagged, dtype=pl.String)
    order = pl.DataFrame({"n": requeued.str.len_chars(), "job_id": requeued})
    lowest = order.top_k(example_count, by=["n", "job_id"], reverse=True).sort("n", "job_id")
    ids = ", ".join(lowest.get_column("job_id"))
    return (
        f"no job id appears twice, yet {requeued.len()} job(s) (e.g. {ids}) were submitted "
        "later than jobs with higher ids: Slurm resets Submit when it requeues a job, so this "
        "export was likely made without --duplicates and holds only the last attempt of each "
        "requeued job (their NODE_FAIL, PREEMPTED or REQUEUED attempts are missing, and with "
        f"them most node failures). Export with: {SACCT_EXPORT_COMMAND}"
    )
