"""Merging the parts of a table: which record wins when inputs overlap (by data, not by order).

Rows of different inputs that share a table's natural key (``reliability.schema``) are one
record seen twice, e.g. an export taken while a job ran and one taken after it ended. The
winner depends on the records, never on the order the inputs were ingested:

1. a finished record beats an unfinished one: for jobs and steps, a record with an end time
   and a final state beats one that is RUNNING / PENDING / SUSPENDED (:data:`UNFINISHED`) or
   has no end; for intervals (``node_states``, ``component_failures``, ``inventory``) a
   closed one beats an open one;
2. then the later end beats the earlier one;
3. then (``node_states``) a row of the history (``sacctmgr show event``) beats a snapshot's,
   and the longer reason beats a shorter one (``sinfo -R`` truncates reasons to 20
   characters);
4. then the input ingested later.

A job attempt that never started and is still unfinished (PENDING in an in-flight export) is
the same attempt as a started record of the same job with the same submit time: the started
one replaces it. Job attempts are then renumbered 0, 1, ... by start time (never-started
last, then by submit time) across all inputs.

The sacct reader applies the same rules to the records of one input that share a key
(exports concatenated into one file: :func:`reliability.ingest.sacct.post.same_attempts`).

Node-state intervals from snapshots (``scontrol show node``, ``sinfo -R``: kind ``nodes``)
are reconciled with the history (``sacctmgr show event`` and the other interval sources) by
:func:`reconcile_node_states`, and the health events read from their reasons by
:func:`reconcile_reason_events`.

Everything stays lazy: a sort by key and rank, then comparisons with the previous row.
"""

from __future__ import annotations

from datetime import timedelta

import polars as pl

from reliability import schema
from reliability.ingest.shared import first_of_runs

__all__ = [
    "NODE_STATE_KINDS",
    "NODE_STATE_TOLERANCE",
    "SNAPSHOT_KINDS",
    "UNFINISHED",
    "merge_jobs",
    "merge_rows",
    "reconcile_node_states",
    "reconcile_reason_events",
    "reconcile_snapshots",
    "renumber_attempts",
]

#: job / step states of a record that is not final yet
UNFINISHED = schema.UNFINISHED_STATES
#: input kinds whose node_states rows are snapshots (open intervals seen at one time)
SNAPSHOT_KINDS = frozenset({"nodes"})
#: input kinds that read Slurm's node states (their reasons may give health events)
NODE_STATE_KINDS = frozenset({"events", "nodes"})
#: a snapshot interval and a history interval of the same node and state are one interval
#: when the snapshot's start lies within the history interval widened by this much
NODE_STATE_TOLERANCE = timedelta(minutes=10)

INPUT = "__input"
ROW = "__row"
_AT = "__at"  # a row's number in the parts (merge_jobs)
HISTORY = "__history"

_END = {
    "jobs": "end_time",
    "job_steps": "end_time",
    "node_states": "end",
    "component_failures": "repaired_at",
    "inventory": "out_of_service",
}


def _finished(table: str) -> pl.Expr | None:
    end = _END.get(table)
    if end is None:
        return None
    done = pl.col(end).is_not_null()
    if table in ("jobs", "job_steps"):
        done = done & ~pl.col("state").is_in(pl.Series(UNFINISHED, dtype=schema.JobState).implode())
    return done


def _rank(table: str) -> list[tuple[pl.Expr, str]]:
    """(expression, name) of the rank columns, best first (all sorted descending)."""
    out: list[tuple[pl.Expr, str]] = []
    fin = _finished(table)
    if fin is not None:
        out.append((fin, "__fin"))
        out.append((pl.col(_END[table]), "__end"))
    if table == "node_states":
        # a history row (sacctmgr events) beats a snapshot row of the same key (scontrol
        # show node): the snapshots are then reconciled with it whatever the ingest order
        out.append((pl.col(HISTORY).fill_null(True), "__history"))
        out.append((pl.col("reason").str.len_chars().fill_null(-1), "__reason_len"))
    return out


def merge_rows(lf: pl.LazyFrame, table: str) -> pl.LazyFrame:
    """Keep one row per natural key of a table, by the rules of this module.

    Parameters
    ----------
    lf : polars.LazyFrame
        The concatenation of the table's parts in ingest order, with an ``__input`` column (the
        input's position in the manifest).
    table : str
        The canonical table (its natural key is ``schema.TABLES[table].key``).

    Returns
    -------
    polars.LazyFrame
        One row per key, sorted by the key, with the columns of ``lf``.
    """
    spec = schema.TABLES[table]
    key = list(spec.key)
    rank = _rank(table)
    cols = lf.collect_schema().names()
    lf = lf.with_row_index(ROW).with_columns([e.alias(n) for e, n in rank])
    by = [*key, *(n for _, n in rank), ROW]
    desc = [False] * len(key) + [True] * (len(rank) + 1)
    lf = lf.sort(by, descending=desc, nulls_last=True, maintain_order=False)
    lf = lf.filter(first_of_runs(key))
    if table == "jobs":
        same = pl.all_horizontal(
            [pl.col(c).eq_missing(pl.col(c).shift(1)) for c in ("cluster", "job_id", "submit_time")]
        )
        pending = pl.col("start_time").is_null() & ~pl.col("__fin")
        lf = lf.filter(~(same & pending).fill_null(False))
    return lf.select(cols)


def renumber_attempts(lf: pl.LazyFrame) -> pl.LazyFrame:
    """Renumber the attempts of each job in start order.

    Parameters
    ----------
    lf : polars.LazyFrame
        Merged job rows.

    Returns
    -------
    polars.LazyFrame
        ``lf`` with ``attempt`` = 0, 1, ... per (cluster, job_id) in start order (never started
        last, then by submit time); sorted by cluster, job_id, attempt.
    """
    cols = lf.collect_schema().names()
    i = pl.int_range(pl.len(), dtype=pl.Int64)
    first = pl.when(first_of_runs(["cluster", "job_id"])).then(i)
    return (
        lf.sort(["cluster", "job_id", "start_time", "submit_time"], nulls_last=True)
        .with_columns(__first=first)
        .with_columns(attempt=(i - pl.col("__first").forward_fill()).cast(pl.UInt16))
        .select(cols)
    )


def merge_jobs(lf: pl.LazyFrame) -> pl.LazyFrame:
    """Merge job rows and renumber their attempts, moving the wide columns once.

    The result of :func:`renumber_attempts` of :func:`merge_rows` (``table="jobs"``), row for
    row. Both sort, and a sort moves every column, the host lists too: here both sort only the
    columns they decide by (the key, state, end, attempt and each row's number), and the other
    columns are joined to the rows kept by that number, once (a 1M-attempt cluster of a
    50-cluster fleet: 8.6 s, now 4.2 s).

    Parameters
    ----------
    lf : polars.LazyFrame
        The concatenation of the jobs parts in ingest order, with an ``__input`` column.

    Returns
    -------
    polars.LazyFrame
        One row per job attempt, sorted by cluster, job_id, attempt, with the columns of ``lf``.
    """
    cols = lf.collect_schema().names()
    full = lf.with_row_index(_AT)
    decide = [_AT, *schema.TABLES["jobs"].key, "state", "end_time", "attempt"]
    kept = renumber_attempts(merge_rows(full.select(decide), "jobs"))
    rest = full.select(_AT, *(c for c in cols if c not in decide))
    return kept.join(rest, on=_AT, how="left", maintain_order="left").select(cols)


def reconcile_reason_events(
    lf: pl.LazyFrame, inputs: list[int], tolerance: timedelta = NODE_STATE_TOLERANCE
) -> pl.LazyFrame:
    """Keep one health event per node-state reason seen by several sources.

    Readers turn hardware signals in node-state reasons (``GPU ECC errors <xid 79>``) into
    health events of source ``slurm``; the same drain seen by ``scontrol show node``,
    ``sinfo -R`` (reason cut at 20 characters) and ``sacctmgr show event`` (a minute later)
    gives one such event per view. Two ``slurm`` events from two of ``inputs`` of the same
    cluster and node are one when their times are within ``tolerance`` and one message begins
    the other. The event kept is the one with the longest message (its code, component, device,
    severity), at the earliest time of the two. Other events are not touched.

    Parameters
    ----------
    lf : polars.LazyFrame
        Health events with an ``__input`` column.
    inputs : list of int
        The positions of the node-state inputs (kinds ``events`` and ``nodes``).
    tolerance : datetime.timedelta
        Largest time difference between two views of one event.

    Returns
    -------
    polars.LazyFrame
        ``lf`` without the duplicate views, same columns.
    """
    cols = lf.collect_schema().names()
    is_reason = (pl.col("source") == "slurm") & pl.col(INPUT).is_in(
        pl.Series(inputs, dtype=pl.UInt32).implode()
    )
    ev = lf.filter(is_reason).with_row_index("__eid")
    rest = lf.filter(~is_reason)
    cand = ev.select(
        "cluster",
        "node",
        "__eid",
        INPUT,
        "time",
        "message",
        __len=pl.col("message").str.len_chars(),
    )
    pairs = (
        cand.join(cand, on=["cluster", "node"], suffix="_o")
        .filter(pl.col(INPUT) != pl.col(f"{INPUT}_o"))  # the same event seen by two inputs
        .filter((pl.col("time") - pl.col("time_o")).abs() <= pl.lit(tolerance))
        .filter(
            pl.col("message").str.starts_with(pl.col("message_o"))
            | pl.col("message_o").str.starts_with(pl.col("message"))
        )
    )
    # an event is dropped when a matching one is better: a longer message, or as long and
    # earlier, or the same and listed first
    better = (pl.col("__len_o") > pl.col("__len")) | (
        (pl.col("__len_o") == pl.col("__len"))
        & (
            (pl.col("time_o") < pl.col("time"))
            | ((pl.col("time_o") == pl.col("time")) & (pl.col("__eid_o") < pl.col("__eid")))
        )
    )
    dropped = pairs.filter(better).select("__eid").unique()
    earliest = pairs.group_by("__eid").agg(__t=pl.col("time_o").min())
    kept = (
        ev.join(dropped, on="__eid", how="anti")
        .join(earliest, on="__eid", how="left")
        .with_columns(time=pl.min_horizontal("time", "__t"))
    )
    return pl.concat([rest.select(cols), kept.select(cols)])


def reconcile_snapshots(
    lf: pl.LazyFrame, tolerance: timedelta = NODE_STATE_TOLERANCE
) -> pl.LazyFrame:
    """Merge the snapshot rows that see one out-of-service period twice.

    ``sinfo -R`` prints no state (the reader assumes DRAIN) and cuts reasons at 20 characters;
    ``scontrol show node`` prints both. A snapshot row whose reason begins another snapshot
    row's longer reason, for the same cluster and node and starts within ``tolerance``, is
    that row seen by ``sinfo -R``: it goes. So does a DRAIN row whose reason equals that of
    another state's row (the state ``scontrol`` knows beats the one assumed). History rows
    (``__history`` True) pass unchanged; :func:`reconcile_node_states` then matches what is
    left against them.

    Parameters
    ----------
    lf : polars.LazyFrame
        Node-state rows with a boolean ``__history`` column.
    tolerance : datetime.timedelta
        Largest gap between the two rows' starts.

    Returns
    -------
    polars.LazyFrame
        The rows, without the snapshot rows that repeat another.
    """
    on = ["cluster", "node"]
    snap = lf.filter(~pl.col(HISTORY)).with_row_index("__sid")
    a = snap.select(
        *on, "__sid", a_state=pl.col("state"), a0=pl.col("start"), a_reason=pl.col("reason")
    )
    b = snap.select(
        *on,
        __oid=pl.col("__sid"),
        b_state=pl.col("state"),
        b0=pl.col("start"),
        b_reason=pl.col("reason"),
    )
    drain = pl.lit("DRAIN").cast(schema.TABLES["node_states"].schema["state"])
    repeats = (
        a.join(b, on=on)
        .filter(
            (pl.col("__sid") != pl.col("__oid"))
            & ((pl.col("a0") - pl.col("b0")).abs() <= pl.lit(tolerance))
            & (pl.col("a_reason").str.len_chars() > 0)
            & pl.col("b_reason").str.starts_with(pl.col("a_reason"))
            & (
                (pl.col("a_reason").str.len_chars() < pl.col("b_reason").str.len_chars())
                | ((pl.col("a_state") == drain) & (pl.col("b_state") != drain))
            )
        )
        .select("__sid")
        .unique()
    )
    kept = snap.join(repeats, on="__sid", how="anti").drop("__sid")
    return pl.concat([lf.filter(pl.col(HISTORY)), kept], how="vertical")


def reconcile_node_states(
    lf: pl.LazyFrame, tolerance: timedelta = NODE_STATE_TOLERANCE
) -> pl.LazyFrame:
    """Merge into one interval each out-of-service period seen by a snapshot and by the history.

    A snapshot row (always open: a snapshot never sees an end) and a history row are the same
    interval when they have the same cluster, node and state, and the snapshot's start lies in
    ``[h.start - tolerance, h.end + tolerance]`` (``h.end`` open = no upper bound); or, whatever
    the states, when the snapshot's reason begins the history's reason and the starts are within
    ``tolerance`` (``sinfo -R`` prints no state and cuts reasons at 20 characters: the same
    reason at the same time is the same event, and the history's state is kept).
    ``scontrol show node`` stamps a drain with the time its reason was set, ``sacctmgr show
    event`` with the time the node became DRAINED (a minute or more later on a busy node). Each
    snapshot row joins the matching history row with the nearest start. The merged interval
    takes:

    - ``start`` and ``user`` from the earliest of them (when the state was set, and by whom:
      the event of a drain on a busy node names ``slurm``, the snapshot the admin);
    - ``end`` from the history (snapshots never see one);
    - ``reason`` from the history (printed in full), else the longest snapshot reason.

    Snapshot rows that match no history row are kept as they are.

    Parameters
    ----------
    lf : polars.LazyFrame
        Node-state rows with a boolean ``__history`` column (False for rows from snapshot
        inputs, :data:`SNAPSHOT_KINDS`).
    tolerance : datetime.timedelta
        Largest gap between a snapshot's start and the history interval it belongs to.

    Returns
    -------
    polars.LazyFrame
        The reconciled intervals, without ``__history``.
    """
    cols = [c for c in lf.collect_schema().names() if c != HISTORY]
    on = ["cluster", "node"]
    hist = lf.filter(pl.col(HISTORY)).drop(HISTORY).with_row_index("__hid")
    snap = lf.filter(~pl.col(HISTORY)).drop(HISTORY).with_row_index("__sid")
    tol = pl.lit(tolerance)
    same_state = pl.col("s_state") == pl.col("h_state")
    # sinfo -R prints no state (the reader assumes DRAIN) and cuts the reason at 20
    # characters: the same reason text at the same time is the same event
    same_reason = (pl.col("s_reason").str.len_chars() > 0) & pl.col("h_reason").str.starts_with(
        pl.col("s_reason")
    )
    pairs = (
        snap.select(
            *on,
            "__sid",
            s_state=pl.col("state"),
            s0=pl.col("start"),
            s_user=pl.col("user"),
            s_reason=pl.col("reason"),
        )
        .join(
            hist.select(
                *on,
                "__hid",
                h_state=pl.col("state"),
                h0=pl.col("start"),
                h1=pl.col("end"),
                h_reason=pl.col("reason"),
            ),
            on=on,
        )
        .filter(
            (pl.col("s0") >= pl.col("h0") - tol)
            & (pl.col("h1").is_null() | (pl.col("s0") <= pl.col("h1") + tol))
            & (
                same_state
                | (same_reason & ((pl.col("s0") - pl.col("h0")).abs() <= tol)).fill_null(False)
            )
        )
        .with_columns(__dist=(pl.col("s0") - pl.col("h0")).abs(), __other=~same_state)
        .sort("__sid", "__other", "__dist", "__hid")
        .filter(first_of_runs(["__sid"]))
    )
    per_h = (
        pairs.sort("__hid", "s0", "__sid")
        .group_by("__hid")
        .agg(
            s0=pl.col("s0").first(),
            s_user=pl.col("s_user").first(),
            s_reason=pl.col("s_reason").sort_by(pl.col("s_reason").str.len_chars()).last(),
        )
    )
    earlier = pl.col("s0").is_not_null() & (pl.col("s0") < pl.col("start"))
    merged = hist.join(per_h, on="__hid", how="left").with_columns(
        start=pl.when(earlier).then(pl.col("s0")).otherwise(pl.col("start")),
        user=pl.when(earlier).then(pl.coalesce("s_user", "user")).otherwise(pl.col("user")),
        reason=pl.coalesce("reason", "s_reason"),
    )
    unmatched = snap.join(pairs.select("__sid"), on="__sid", how="anti")
    return pl.concat([merged.select(cols), unmatched.select(cols)]).sort(
        list(schema.TABLES["node_states"].key), nulls_last=True
    )
