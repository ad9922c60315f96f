"""Typed parsing of sacct records: string columns -> canonical columns, or a quarantine reason.

All in polars expressions over a block of records. Every value is checked against the sane
bounds of :mod:`reliability.ingest._bounds` before it is converted, so that a poison value
(a Submit of ``0000-01-01``, an epoch in year 248,073, ``gres/gpu=4294967296``, a node list
of 10^10 hosts, a number that overflows 64 bits) becomes a quarantine row naming the field,
never an overflow, a wrapped number or a traceback. (A Submit after Start is left to
:func:`reliability.ingest.sacct.post.resize_segments`: it is how sacct prints a resized
job.) Used by :func:`reliability.ingest.slurm.read_sacct`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import polars as pl

from reliability import hostlist, schema
from reliability.hostlist_codes import NODES_COMPACT, budget_count, compact_node_lists
from reliability.ingest._bounds import (
    MAX_ACCELERATORS_PER_JOB,
    MAX_NODES_PER_JOB,
    TIME_MIN,
    YEAR_MAX,
    YEAR_MIN,
    bounds_text,
    latest_time,
)
from reliability.ingest._common import NULL_SENTINELS
from reliability.ingest.sacct.fields import DURATION, FIELD_PATTERNS, ISO_FMT, NO_LIMIT, copy_of

__all__ = [
    "ALLOC_COLS",
    "EXIT_CODE_MAX",
    "EXIT_SIGNAL_MAX",
    "MAX_DURATION_S",
    "STEP_COLS",
    "TERMINAL_STATES",
    "Parsed",
    "ValueTable",
    "chunked_like",
    "complete",
    "finish",
    "parse_records",
    "repeated_hour_times",
    "time_form",
    "typed_plan",
]

STEP_COLS = ["line_no", *schema.TABLES["job_steps"].schema]
ALLOC_COLS = [
    "line_no",
    *(c for c in schema.TABLES["jobs"].schema if c not in ("attempt", "topology")),
]
#: longest accepted duration (a time limit beyond the whole accepted calendar is poison)
MAX_DURATION_S = (YEAR_MAX - YEAR_MIN + 1) * 366 * 86400
_EPOCH_MIN = int(TIME_MIN.timestamp())
_SENTINELS = [s for s in NULL_SENTINELS if s]
_JOBID = FIELD_PATTERNS["JobID"].pattern
_TIMES = (("Submit", "submit"), ("Start", "start"), ("End", "end"))


class Parsed:
    """One batch of records, typed.

    Parameters
    ----------
    allocs, steps : polars.DataFrame
        Allocation and step rows, with ``line_no``.
    bad : polars.DataFrame
        ``line_no``, ``reason`` of the records that failed a check.
    naive : bool
        Some time was local ISO text (read in the ``tz=`` zone).
    node_names : int
        Host names in the expanded node lists.
    """

    __slots__ = ("allocs", "bad", "naive", "node_names", "steps")

    def __init__(
        self,
        allocs: pl.DataFrame,
        steps: pl.DataFrame,
        bad: pl.DataFrame,
        naive: bool,
        node_names: int,
    ) -> None:
        self.allocs, self.steps, self.bad = allocs, steps, bad
        self.naive, self.node_names = naive, node_names


class ValueTable:
    """The parsed values of text fields that take few distinct values, for one input.

    Each distinct text of a field is parsed once, by the first batch that holds it: the texts
    are numbered by a polars ``Categorical`` private to this table (a hash per row, as a
    dictionary lookup would cost), and the parsed values are kept in a column indexed by that
    number, so later rows take theirs by a gather. Memory grows with the distinct texts only.
    """

    def __init__(self) -> None:
        self._values: dict[str, pl.Series] = {}
        # an empty column of each numbering: its dtype is the numbering, and it keeps it alive
        # (polars frees a Categories' numbering when no column of it is left)
        self._anchors: dict[str, pl.Series] = {}

    def lookup(
        self, values: pl.Series, key: str, fn: Callable[[pl.Expr], pl.Expr], dtype: pl.DataType
    ) -> pl.Series:
        """Return ``fn`` of each text in ``values`` (null for null), parsing new texts only.

        Parameters
        ----------
        values : polars.Series
            String values.
        key : str
            The field (one numbering and one set of parsed values per key).
        fn : callable
            Expression of one string column -> its parsed value.
        dtype : polars.DataType
            The parsed values' type.

        Returns
        -------
        polars.Series
            One parsed value per row of ``values``.
        """
        if key not in self._anchors:
            numbering = pl.Categorical(pl.Categories.random(namespace="reliability"))
            self._anchors[key] = pl.Series(key, [], dtype=numbering)
            self._values[key] = pl.Series(key, [], dtype=dtype)
        ids = values.cast(self._anchors[key].dtype).to_physical()
        known = self._values[key]
        top = ids.max()
        if top is not None and int(top) >= known.len():
            # the texts first seen in this batch (numbered after the known ones)
            new = (
                pl.DataFrame({"id": ids, "text": values})
                .filter(pl.col("id") >= known.len())
                .unique("id")
                .select("id", value=fn(pl.col("text")).cast(dtype))
            )
            span = pl.DataFrame(
                {"id": pl.int_range(known.len(), int(top) + 1, dtype=pl.UInt32, eager=True)}
            )
            more = span.join(new, on="id", how="left", maintain_order="left").get_column("value")
            known = pl.concat([known, more.alias(key)])
            self._values[key] = known
        return known.gather(ids)


def _per_value(
    frame: pl.DataFrame,
    col: str,
    fn: Callable[[pl.Expr], pl.Expr],
    dtype: pl.DataType,
    where: pl.Series | None = None,
    cache: ValueTable | None = None,
) -> pl.Series:
    """Apply ``fn`` once per distinct value of ``col`` and map the results back to the rows.

    Fast for fields such as Timelimit or AllocTRES that take few distinct values; with ``where``,
    only for the rows where it is True (null elsewhere). ``cache`` keeps the values already
    parsed (by column) from one batch to the next.
    """
    s = frame.get_column(col)
    if where is not None:
        if not where.any():
            return pl.repeat(None, s.len(), dtype=dtype, eager=True)
        if not where.all():
            idx = where.arg_true()
            part = _per_value(frame.filter(where), col, fn, dtype, cache=cache)
            return pl.repeat(None, s.len(), dtype=dtype, eager=True).scatter(idx, part)
    table = cache if cache is not None else ValueTable()
    return table.lookup(s, col, fn, dtype).alias(col)


_EXIT_DTYPE = pl.Struct({"exit_code": pl.Int32(), "exit_signal": pl.Int32()})


def _exit_parts(text: pl.Expr) -> pl.Expr:
    """Split ``code:signal`` into two 32-bit integers (null where either is not one)."""
    ex = text.str.split_exact(":", 1)
    return pl.struct(
        exit_code=ex.struct.field("field_0").cast(pl.Int32, strict=False),
        exit_signal=ex.struct.field("field_1").cast(pl.Int32, strict=False),
    )


#: states of a finished job or step: Slurm sets End when a record enters one of them, so such a
#: record that started, with End ``Unknown`` (or empty), is corrupt, not an attempt still running
TERMINAL_STATES = (
    "COMPLETED", "FAILED", "NODE_FAIL", "TIMEOUT", "CANCELLED", "OUT_OF_MEMORY", "PREEMPTED",
    "BOOT_FAIL", "DEADLINE",
)  # fmt: skip
#: Slurm's ExitCode / DerivedExitCode is ``code:signal``: the exit status 0-255 and the number
#: of the signal that ended the process, 0-127 (``man sacct``; the wait status's bit fields)
EXIT_CODE_MAX, EXIT_SIGNAL_MAX = 255, 127


def _exit_flags(text: pl.Series, parts: pl.DataFrame, key: str) -> list[pl.Series]:
    """Flag exit codes that are not ``code:signal`` (``_c_<key>``) or out of range.

    The range flag (``_c_<key>_range``) is set where both parts are integers but the code is
    above 255 or the signal outside 0-127. A negative code is not flagged: Slurm before 15.08
    printed internal values there (``-2:0`` on a cancelled step, in real output); the reader
    keeps such a record with the exit code unknown, and says so.
    """
    code, sig = parts.get_column("exit_code"), parts.get_column("exit_signal")
    form = text.is_not_null() & (code.is_null() | sig.is_null())
    out_of_range = ((code > EXIT_CODE_MAX) | ~sig.is_between(0, EXIT_SIGNAL_MAX)).fill_null(False)
    return [form.alias(f"_c_{key}"), out_of_range.alias(f"_c_{key}_range")]


def _duration_s(expr: pl.Expr) -> pl.Expr:
    """Convert ``[D-][HH:]MM:SS[.mmm]`` to seconds.

    Null for sentinels, UNLIMITED, or a value beyond :data:`MAX_DURATION_S`; -1 for a
    well-formed but absurd duration.
    """
    g = expr.str.extract_groups(DURATION)
    parts = [g.struct.field(str(i)).cast(pl.Int64, strict=False) for i in (1, 2, 3, 4)]
    too_big = parts[0].fill_null(0) > MAX_DURATION_S // 86400
    secs = (
        parts[0].fill_null(0) * 86400
        + parts[1].fill_null(0) * 3600
        + parts[2].fill_null(0) * 60
        + parts[3].fill_null(0)
    )
    ok = g.struct.field("4").is_not_null() & parts[2].is_not_null() & parts[3].is_not_null()
    return pl.when(ok & too_big).then(-1).when(ok).then(secs)


#: a GPU count in a TRES string: Slurm prints gres/gpu counts as plain integers (only mem,
#: gres/gpumem and bb get unit suffixes: slurmdb_make_tres_string_from_simple in Slurm's
#: src/common/slurmdb_defs.c), so a sign or a suffix (gres/gpu=-8, gres/gpu=8K) is no count
_COUNT = r"^[0-9]+$"
#: :func:`_gpu_count` of a count that does not fit 64 bits / that is not a plain integer
GPU_OVERFLOW, GPU_NOT_A_COUNT = -1, -2


def _gpu_count(tres: pl.Expr) -> pl.Expr:
    """Count the GPUs of a TRES string (``gres/gpu=8``, or typed ``gres/gpu:a100=8`` summed).

    Null when it names no GPUs, :data:`GPU_OVERFLOW` when a count does not fit 64 bits,
    :data:`GPU_NOT_A_COUNT` when a count is not a plain integer (a sign, a unit suffix, text).
    """
    plain_s = tres.str.extract(r"(?:^|,)gres/gpu=([^,]*)", 1)
    plain_form = plain_s.str.contains(_COUNT)
    plain = pl.when(plain_form).then(plain_s.cast(pl.Int64, strict=False))
    typed_s = tres.str.extract_all(r"gres/gpu:[^=,]+=[^,]*").list.eval(
        pl.element().str.extract(r"=([^,=]*)$", 1)
    )
    typed_form_bad = typed_s.list.eval(
        ~pl.element().str.contains(_COUNT).fill_null(False)
    ).list.any()
    typed_i = typed_s.list.eval(pl.element().cast(pl.Int64, strict=False))
    typed_bad = typed_i.list.eval(pl.element().is_null()).list.any()
    typed = (
        pl.when(typed_form_bad)
        .then(GPU_NOT_A_COUNT)
        .when(typed_bad)
        .then(GPU_OVERFLOW)
        .otherwise(typed_i.list.eval(pl.element().clip(0, MAX_ACCELERATORS_PER_JOB + 1)).list.sum())
    )
    typed = pl.when(tres.str.contains("gres/gpu:", literal=True)).then(typed)
    plain = (
        pl.when(plain_s.is_not_null() & ~plain_form)
        .then(GPU_NOT_A_COUNT)
        .when(plain_s.is_not_null() & plain.is_null())
        .then(GPU_OVERFLOW)
        .otherwise(plain)
    )
    # 'gres/gpu' (or 'gres/gpu:a100') with no '=N': not a TRES value (Slurm prints name=count)
    bare = tres.str.contains(r"(?:^|,)gres/gpu(?::[^=,]*)?(?:,|$)")
    return pl.when(bare).then(GPU_NOT_A_COUNT).otherwise(pl.coalesce(plain, typed))


def _gres_count(gres: pl.Expr) -> pl.Expr:
    """GPU count of an old GRES string (``gpu:4``, ``gpu:a100:2(IDX:0-1)``)."""
    items = gres.str.extract_all(r"gpu(?::[^:,(]+)?:[0-9]+").list.eval(
        pl.element().str.extract(r":([0-9]+)$", 1).cast(pl.Int64, strict=False)
    )
    bad = items.list.eval(pl.element().is_null()).list.any()
    total = pl.when(bad).then(-1).otherwise(items.list.sum())
    return pl.when(gres.str.contains("gpu", literal=True)).then(total)


def _zone_text(tz: str | None) -> str:
    return tz or "UTC"


#: string columns kept from the input for the allocation-only fields parsed per value
_ALLOC_RAW = ("Timelimit", "TimelimitRaw", "AllocTRES", "ReqTRES", "AllocGRES", "ReqGRES", "Gres")


def time_form(texts: Sequence[str | None]) -> str:
    """Return the form of the first time among ``texts``: ``"epoch"`` (digits) or ``"iso"``.

    Parameters
    ----------
    texts : sequence of str or None
        Time fields of the first records (Submit, Start, End), in order.

    Returns
    -------
    str
        ``"epoch"`` when the first that is not empty or a sentinel is all digits
        (``SLURM_TIME_FORMAT=%s``), else ``"iso"``. Only a hint: :func:`typed_plan` reads
        either form whatever it is told.
    """
    for t in texts:
        if t is not None and t.strip() and t not in NULL_SENTINELS:
            return "epoch" if t.strip().isdigit() else "iso"
    return "iso"


def time_form_of(recs: pl.DataFrame) -> str:
    """Return :func:`time_form` of the first time of a frame of string records.

    Parameters
    ----------
    recs : polars.DataFrame
        String columns named by sacct field.

    Returns
    -------
    str
        ``"epoch"`` or ``"iso"``.
    """
    cols = [f for f, _ in _TIMES if f in recs.columns]
    if not cols or recs.height == 0:
        return "iso"
    firsts = recs.select(pl.col(c).drop_nulls().first() for c in cols).row(0)
    return time_form(list(firsts))


def typed_plan(
    lf: pl.LazyFrame,
    cols: set[str],
    *,
    tz: str | None,
    cluster: str | None,
    keep: Sequence[str] = (),
    headerish: str | None = None,
    times: str = "iso",
) -> pl.LazyFrame:
    """Plan the row-wise parse of string sacct fields into typed columns and check flags.

    The stages run inside polars' scan of the file (or of a block), fused with the CSV parse, in
    stages so that no value is computed twice; :func:`finish` does the rest on each batch.

    Parameters
    ----------
    lf : polars.LazyFrame
        String columns named by sacct field, plus ``line_no``.
    cols : set of str
        The fields present (absent ones are read as null).
    tz : str or None
        IANA time zone of local ISO times in the export.
    cluster : str or None
        Cluster name for an export without a ``Cluster`` field.
    keep : sequence of str
        Columns passed through unchanged.
    headerish : str or None
        A regular expression: add ``_headerish``, True where the JobID text is not a job id and
        matches it (a header line inside the data), tested only on those rows.
    times : {"iso", "epoch"}
        The form the export's times are mostly in (:func:`time_form`), read first; the other
        is read where it fails. Only the cost depends on it.

    Returns
    -------
    polars.LazyFrame
        Typed columns and check flags (``_c_*``: True = bad; ``_bad``: any of them).
    """

    def c(name: str) -> pl.Expr:
        return pl.col(name) if name in cols else pl.lit(None, pl.String)

    def text(name: str) -> pl.Expr:
        e = c(name)
        return pl.when(e.is_in(_SENTINELS)).then(None).otherwise(e)

    ids = c("JobID").str.split_exact(".", 1)
    id_ok = c("JobID").str.contains(f"^(?:{_JOBID})$").fill_null(False)
    st = c("State")
    st_exact = st.cast(schema.JobState, strict=False)
    # stage 1: parse each field once
    stage1: dict[str, pl.Expr] = {
        "cluster": pl.coalesce(text("Cluster"), pl.lit(cluster, pl.String)),
        "job_id": ids.struct.field("field_0"),
        "step": ids.struct.field("field_1"),
        "name": c("JobName"),
        "user": text("User"),
        "account": text("Account"),
        "partition": text("Partition"),
        "qos": text("QOS"),
        # the regex only on the few states that are not a bare name ("CANCELLED by 1234"):
        # polars skips null rows, and a regex over every row costs a third of this plan
        "state": pl.coalesce(
            st_exact,
            pl.when(st_exact.is_null())
            .then(st)
            .str.extract(r"^([A-Z_]+)(?: by -?[0-9]+)?\+?$", 1)
            .cast(schema.JobState, strict=False),
        ),
        # (read per distinct value by finish: a few values over millions of rows)
        "_exit_txt": c("ExitCode"),
        **({"_dexit_txt": c("DerivedExitCode")} if "DerivedExitCode" in cols else {}),
        "priority": text("Priority").cast(pl.Int64, strict=False),
        "_nnodes": pl.coalesce(
            text("NNodes").cast(pl.Int64, strict=False),
            text("AllocNodes").cast(pl.Int64, strict=False),
        ),
        "nodelist": text("NodeList"),
        "_has_nnodes": pl.coalesce(text("NNodes"), text("AllocNodes")).is_not_null(),
        "_has_priority": text("Priority").is_not_null(),
        "_c_jobid": ~id_ok,
    }
    if headerish is not None:
        stage1["_headerish"] = (
            pl.when(~id_ok).then(c("JobID")).str.contains(headerish).fill_null(False)
        )
    for name in _ALLOC_RAW:
        if name in cols:
            stage1[f"_raw_{name}"] = text(name)
    # times: each text is read in the export's own form first (``times``), and in the other
    # only where that fails (polars parses only the rows left non-null), so either form
    # costs one parse; the result is the same whichever form is tried first
    for field, key in _TIMES:
        stage1[f"_txt_{key}"] = c(field)
        if times == "epoch":
            num = c(field).cast(pl.Int64, strict=False)
            stage1[f"_num_{key}"] = num
            stage1[f"_iso_{key}"] = (
                pl.when(num.is_null())
                .then(c(field))
                .str.to_datetime(ISO_FMT, strict=False, time_unit="us")
            )
        else:
            stage1[f"_iso_{key}"] = c(field).str.to_datetime(ISO_FMT, strict=False, time_unit="us")
    # stage 2: zones and checks, from the stage-1 columns
    stage2: dict[str, pl.Expr] = {
        "_c_jobid": pl.col("_c_jobid") | (pl.col("step") == "").fill_null(False),
        "_c_cluster": pl.col("cluster").is_null(),
        "_c_state": pl.col("state").is_null(),
        "_c_nnodes": (
            pl.col("_has_nnodes") & (pl.col("_nnodes").is_null() | (pl.col("_nnodes") < 0))
        ).fill_null(False),
        "_c_nnodes_poison": (pl.col("_nnodes") > MAX_NODES_PER_JOB).fill_null(False),
        "_c_priority": (pl.col("_has_priority") & pl.col("priority").is_null()).fill_null(False),
    }
    # a field named twice in --format: sacct prints the same value in each copy; copies that
    # differ leave the record's value unknown (which one is it?)
    for name in sorted(cols):
        base = copy_of(name)
        if base is not None and base in cols:
            stage1[f"_twice_{name}"] = c(base).ne_missing(c(name))
            stage2[f"_c_twice_{name}"] = pl.col(f"_twice_{name}")
    for _, key in _TIMES:
        iso, txt = pl.col(f"_iso_{key}"), pl.col(f"_txt_{key}")
        if tz is None:
            local = pl.lit(None, schema.UTC_TIME)
        elif tz == "UTC":
            local = iso.dt.replace_time_zone("UTC")
        else:
            local = iso.dt.replace_time_zone(
                tz, ambiguous="earliest", non_existent="null"
            ).dt.convert_time_zone("UTC")
        stage2[f"_local_{key}"] = local
        if tz not in (None, "UTC") and key in ("start", "end"):
            # the other reading of a time in the hour repeated when daylight saving ends
            stage2[f"_late_{key}"] = iso.dt.replace_time_zone(
                tz, ambiguous="latest", non_existent="null"
            ).dt.convert_time_zone("UTC")
        # text that is neither an ISO time nor a sentinel (epoch seconds, or garbage)
        stage2[f"_other_{key}"] = pl.when(
            txt.is_not_null() & iso.is_null() & ~txt.is_in(_SENTINELS)
        ).then(txt)
        stage2[f"_c_{key}_gap"] = (
            (iso.is_not_null() & local.is_null()) if tz not in (None, "UTC") else pl.lit(False)
        )
    # stage 3: epoch seconds (SLURM_TIME_FORMAT=%s), and times outside the sane bounds (a
    # clock or parse error: nulled and flagged)
    latest = latest_time()
    epoch_max = int(latest.timestamp())
    stage3: dict[str, pl.Expr] = {}
    for _, key in _TIMES:
        other, local = pl.col(f"_other_{key}"), pl.col(f"_local_{key}")
        # (an integer text is never an ISO time: read as one, it is the text that is "other")
        num = pl.col(f"_num_{key}") if times == "epoch" else other.cast(pl.Int64, strict=False)
        epoch_ok = num.is_between(_EPOCH_MIN, epoch_max)
        iso_out = ((local < TIME_MIN) | (local > latest)).fill_null(False)
        epoch = pl.from_epoch(num, time_unit="s").dt.replace_time_zone("UTC").cast(schema.UTC_TIME)
        stage3[f"{key}_time"] = (
            pl.when(iso_out).then(None).otherwise(pl.coalesce(local, pl.when(epoch_ok).then(epoch)))
        )
        stage3[f"_c_{key}_range"] = iso_out | (num.is_not_null() & ~epoch_ok)
        stage3[f"_c_{key}_read"] = other.is_not_null() & num.is_null()
        stage3[f"_iso_{key}"] = pl.col(f"_iso_{key}").is_not_null()
    # stage 3b: a time in the repeated hour of a fall-back change takes the reading that keeps
    # Submit <= Start <= End (the earlier one where both do)
    stage3b: dict[str, pl.Expr] = {}
    if tz not in (None, "UTC"):
        s_, e_ = pl.col("start_time"), pl.col("end_time")
        late_e = pl.col("_late_end")
        end_fix = (e_ < s_) & (late_e >= s_) & (late_e != e_)
        stage3b["end_time"] = pl.when(end_fix.fill_null(False)).then(late_e).otherwise(e_)
    stage3c: dict[str, pl.Expr] = {}
    if tz not in (None, "UTC"):
        s_, e_, sub = pl.col("start_time"), pl.col("end_time"), pl.col("submit_time")
        late_s = pl.col("_late_start")
        start_fix = (s_ < sub) & (late_s >= sub) & (late_s != s_) & (e_.is_null() | (late_s <= e_))
        stage3c["start_time"] = pl.when(start_fix.fill_null(False)).then(late_s).otherwise(s_)
    # stage 4: checks across fields
    alloc = pl.col("step").is_null()
    if "End" in cols:
        # a finished record that ran always has an End: without one it would count as still
        # running (one that never started, e.g. cancelled while pending, has no exposure)
        end_txt = pl.col("_txt_end")
        end_missing = end_txt.is_null() | end_txt.is_in(_SENTINELS)
        finished = pl.col("state").is_in(
            pl.Series(TERMINAL_STATES, dtype=schema.JobState).implode()
        )
        end_unknown = (finished & end_missing & pl.col("start_time").is_not_null()).fill_null(False)
    else:
        end_unknown = pl.lit(False)
    stage4: dict[str, pl.Expr] = {
        "_c_end_unknown": end_unknown,
        # a record that started ran on at least one node: with the NodeList field exported,
        # an empty one (or 'None assigned', which only never-started records print) would
        # hide its exposure
        "_c_no_nodes": (
            (pl.col("nodelist").is_null() & pl.col("start_time").is_not_null()).fill_null(False)
            if "NodeList" in cols
            else pl.lit(False)
        ),
        "_c_order_end": (pl.col("start_time") > pl.col("end_time")).fill_null(False),
        # no Submit time, and not for a reason given by another check
        "_c_submit_missing": (
            alloc
            & pl.col("submit_time").is_null()
            & ~pl.col("_c_submit_read")
            & ~pl.col("_c_submit_range")
            & ~pl.col("_c_submit_gap")
        ).fill_null(False),
    }
    checks = [
        *(k for k in stage2 if k.startswith("_c_")),
        *(k for k in stage3 if k.startswith("_c_")),
        *stage4,
    ]
    only_alloc = [k for k in checks if k.startswith(("_c_submit", "_c_priority"))]
    common = [k for k in checks if k not in only_alloc]
    bad = pl.any_horizontal(common) | (alloc & pl.any_horizontal(only_alloc))
    drop = [
        "_has_nnodes",
        "_has_priority",
        *(k[2:] for k in stage2 if k.startswith("_c_twice_")),
        *(f"_{part}_{k}" for _, k in _TIMES for part in ("txt", "local", "other")),
        *((f"_num_{k}" for _, k in _TIMES) if times == "epoch" else ()),
        *(("_late_start", "_late_end") if tz not in (None, "UTC") else ()),
    ]
    return (
        lf.select("line_no", *keep, **stage1)
        .with_columns(**stage2)
        .with_columns(**stage3)
        .with_columns(**stage3b)
        .with_columns(**stage3c)
        .with_columns(**stage4)
        .with_columns(_bad=bad)
        # the count as the table stores it (the rows outside [0, MAX] are quarantined above):
        # complete() then takes it as n_nodes without temporaries beside the node lists
        .with_columns(_nnodes=pl.col("_nnodes").clip(0, MAX_NODES_PER_JOB).cast(pl.UInt32))
        .drop(drop)
    )


def _alloc_fields(allocs: pl.DataFrame, gpu: bool, cache: ValueTable | None = None) -> pl.DataFrame:
    """Time limit and GPU count of allocation rows (parsed once per distinct value)."""
    cols = set(allocs.columns)
    extra: dict[str, pl.Series] = {}
    if "_raw_Timelimit" in cols:
        extra["_limit"] = _per_value(allocs, "_raw_Timelimit", _duration_s, pl.Int64(), cache=cache)
    # ReqTRES only where there is no AllocTRES (jobs that never got an allocation)
    need: pl.Series | None = None
    for name in ("AllocTRES", "ReqTRES"):
        if f"_raw_{name}" in cols:
            extra[f"_gpu_{name}"] = _per_value(
                allocs, f"_raw_{name}", _gpu_count, pl.Int64(), where=need, cache=cache
            )
            got = allocs.get_column(f"_raw_{name}").is_not_null()
            need = ~got if need is None else need & ~got
    for name in ("AllocGRES", "ReqGRES", "Gres"):
        if f"_raw_{name}" in cols:
            extra[f"_gpu_{name}"] = _per_value(
                allocs, f"_raw_{name}", _gres_count, pl.Int64(), cache=cache
            )
    frame = allocs.with_columns(**extra) if extra else allocs
    limit = pl.col("_limit") if "_limit" in extra else pl.lit(None, pl.Int64)
    limit_raw = (
        pl.col("_raw_TimelimitRaw").cast(pl.Int64, strict=False)
        if "_raw_TimelimitRaw" in cols
        else pl.lit(None, pl.Int64)
    )
    limit_txt = pl.col("_raw_Timelimit") if "_raw_Timelimit" in cols else pl.lit(None, pl.String)
    if "_gpu_AllocTRES" in extra:
        from_tres = pl.when(pl.col("_raw_AllocTRES").is_not_null()).then(pl.col("_gpu_AllocTRES"))
        if "_gpu_ReqTRES" in extra:
            from_tres = from_tres.otherwise(pl.col("_gpu_ReqTRES"))
    elif "_gpu_ReqTRES" in extra:
        from_tres = pl.col("_gpu_ReqTRES")
    else:
        from_tres = pl.lit(None, pl.Int64)
    gres = [pl.col(f"_gpu_{n}") for n in ("AllocGRES", "ReqGRES", "Gres") if f"_gpu_{n}" in extra]
    gpus = pl.coalesce(from_tres, *gres)
    return frame.with_columns(
        time_limit_s=pl.coalesce(
            pl.when(limit >= 0).then(limit),
            pl.when(limit_raw.is_between(0, MAX_DURATION_S // 60)).then(limit_raw * 60),
        ),
        n_accelerators=gpus.fill_null(0).clip(0, MAX_ACCELERATORS_PER_JOB).cast(pl.UInt32)
        if gpu
        else pl.lit(0, pl.UInt32),
        _c_limit=(limit_txt.is_not_null() & ~limit_txt.is_in(NO_LIMIT) & limit.is_null()).fill_null(
            False
        ),
        _c_limit_poison=(
            (limit == -1) | (limit_raw > MAX_DURATION_S // 60) | (limit_raw < 0)
        ).fill_null(False),
        _c_gpus=((gpus == GPU_OVERFLOW) | (gpus > MAX_ACCELERATORS_PER_JOB)).fill_null(False),
        _c_gpus_form=(gpus == GPU_NOT_A_COUNT).fill_null(False),
        _gpu_field=_gpu_field(cols),
    )


def _gpu_field(cols: set[str]) -> pl.Expr:
    """Name the field the GPU count of a row is read from (as :func:`_alloc_fields` picks it)."""
    order = [
        n for n in ("AllocTRES", "ReqTRES", "AllocGRES", "ReqGRES", "Gres") if f"_raw_{n}" in cols
    ]
    if not order:
        return pl.lit("AllocTRES")
    out = pl.lit(order[-1])
    for n in reversed(order[:-1]):
        out = pl.when(pl.col(f"_raw_{n}").is_not_null()).then(pl.lit(n)).otherwise(out)
    return out


def _alloc_msgs(frame: pl.DataFrame) -> list[tuple[pl.Expr, pl.Expr]]:
    """(flag, reason) of the checks made by :func:`_alloc_fields`."""

    def v(name: str) -> pl.Expr:
        col = f"_raw_{name}"
        return (pl.col(col) if col in frame.columns else pl.lit(None, pl.String)).fill_null("")

    gpu_text = pl.coalesce(v("AllocTRES"), v("ReqTRES"), v("AllocGRES"), v("ReqGRES"), v("Gres"))
    return [
        (
            pl.col("_c_limit_poison"),
            pl.format(
                "field Timelimit: '{}' is longer than the accepted calendar (a poison value)",
                pl.coalesce(v("Timelimit"), v("TimelimitRaw")),
            ),
        ),
        (
            pl.col("_c_limit"),
            pl.format("field Timelimit: cannot read duration '{}'", v("Timelimit")),
        ),
        (
            pl.col("_c_gpus"),
            pl.format(
                f"field {{}}: the GPU count is more than {MAX_ACCELERATORS_PER_JOB:,} or "
                "does not fit 64 bits (a poison value): '{}'",
                pl.col("_gpu_field"),
                gpu_text,
            ),
        ),
        (
            pl.col("_c_gpus_form"),
            pl.format(
                "field {}: a GPU count is not a whole number of GPUs (Slurm prints gres/gpu counts "
                "without a sign or a unit suffix): '{}'",
                pl.col("_gpu_field"),
                gpu_text,
            ),
        ),
    ]


#: the columns :func:`finish` keeps for :func:`complete`
_ALLOC_KEEP = [c for c in ALLOC_COLS if c not in ("n_nodes", "nodes")] + ["_nnodes", "nodelist"]
_STEP_KEEP = [c for c in STEP_COLS if c not in ("n_nodes", "nodes")] + ["_nnodes", "nodelist"]


def completed_schema(kind: str) -> dict[str, pl.DataType]:
    """Return the schema of an empty ``allocs`` or ``steps`` frame as :func:`complete` returns it.

    Parameters
    ----------
    kind : {"allocs", "steps"}
        Which frame.

    Returns
    -------
    dict of str to polars.DataType
        Column -> dtype (``nodes`` compact: :data:`NODES_COMPACT`).
    """
    cols = {
        "line_no": pl.Int64(),
        **schema.TABLES["jobs"].schema,
        **schema.TABLES["job_steps"].schema,
        "nodes": NODES_COMPACT,
    }
    return {c: cols[c] for c in (ALLOC_COLS if kind == "allocs" else STEP_COLS)}


def finish(
    typed: pl.DataFrame,
    raw_fields: Callable[[list[int]], pl.DataFrame],
    *,
    tz: str | None,
    gpu: bool,
    cache: ValueTable | None = None,
) -> Parsed:
    """Finish the parse of one batch: exit codes, allocation fields, row checks.

    Exit codes, time limits and GPU counts are parsed once per distinct value.

    Parameters
    ----------
    typed : polars.DataFrame
        The batch, with the columns of :func:`typed_plan` and ``line_no``.
    raw_fields : callable
        ``raw_fields(line_nos)`` -> the input's string fields of those records (``line_no`` + field
        columns), for the quarantine reasons of the few bad rows.
    tz : str or None
        The time zone the times were printed in (for messages).
    gpu : bool
        The export has a TRES or GRES field (else the GPU count is 0).
    cache : ValueTable or None
        The values of per-value fields parsed in earlier batches of the same input.

    Returns
    -------
    Parsed
        :class:`Parsed` with allocation and step rows whose node lists are still text
        (:func:`complete` expands them once for the whole input).
    """
    cache = cache if cache is not None else ValueTable()
    text = typed.get_column("_exit_txt")
    parts = cache.lookup(text, "ExitCode", _exit_parts, _EXIT_DTYPE).struct.unnest()
    flags = _exit_flags(text, parts, "exit")
    if "_dexit_txt" in typed.columns:  # (checked, not kept: the contract has no column for it)
        dtext = typed.get_column("_dexit_txt")
        dparts = cache.lookup(dtext, "DerivedExitCode", _exit_parts, _EXIT_DTYPE).struct.unnest()
        flags += _exit_flags(dtext, dparts, "dexit")
        typed = typed.drop("_dexit_txt")
    # (chunked like the read columns: a column in one chunk among them would make polars
    # copy every column it is selected with)
    typed = typed.drop("_exit_txt").with_columns(
        *(chunked_like(parts.get_column(c), typed, "line_no") for c in parts.columns),
        *(chunked_like(f, typed, "line_no") for f in flags),
    )
    naive = bool(typed.select(pl.any_horizontal(f"_iso_{k}" for _, k in _TIMES).any()).item())
    out = typed
    checks = [c for c in out.columns if c.startswith("_c_")]
    only_alloc = [c for c in checks if c.startswith(("_c_submit", "_c_priority"))]
    flag = out.get_column("_bad")
    for f in flags:
        flag = flag | f
    reasons = [_NO_REASONS]
    if flag.any():
        bad_rows = out.filter(flag).with_columns(
            [(pl.col(c) & pl.col("step").is_null()).alias(c) for c in only_alloc]
        )
        raw = raw_fields(bad_rows.get_column("line_no").to_list())
        reasons.append(_reasons(bad_rows, raw, {}, tz))
        out = out.filter(~flag)
    # only the columns kept or still to parse go through the split (it gathers every column)
    wanted = {*_ALLOC_KEEP, *_STEP_KEEP, "step"}
    out = out.select([c for c in out.columns if c in wanted or c.startswith("_raw_")])
    is_step = out.get_column("step").is_not_null()
    alloc_cols = [c for c in out.columns if c in _ALLOC_KEEP or c.startswith("_raw_")]
    allocs = _alloc_fields(out.select(alloc_cols).filter(~is_step), gpu, cache)
    msgs = _alloc_msgs(allocs)
    late = allocs.select(pl.any_horizontal([f for f, _ in msgs])).to_series()
    if late.any():
        reason = pl.coalesce([pl.when(f).then(m) for f, m in msgs])
        reasons.append(allocs.filter(late).select("line_no", reason=reason))
        allocs = allocs.filter(~late)
    steps = out.select(_STEP_KEEP).filter(is_step)  # (a filter gathers every column it has)
    return Parsed(allocs.select(_ALLOC_KEEP), steps, pl.concat(reasons), naive, 0)


_NO_REASONS = pl.DataFrame(schema={"line_no": pl.Int64, "reason": pl.String})


#: records whose node lists :func:`complete` expands at a time, straight into the compact
#: :data:`NODES_COMPACT` (``List(Categorical)``: 4 bytes a name, each distinct name stored once)
NODE_BATCH_ROWS = 100_000


def _compact_node_lists(
    both: pl.Series, *, node_budget: int | None, batch_rows: int
) -> tuple[pl.Series, dict[str, str], int]:
    """:func:`compact_node_lists` a batch of ``batch_rows`` rows at a time.

    Peak memory is one batch's working arrays plus the compact lists of every batch, not every
    name as a string at once. The budget counts the names of every batch; when it is passed,
    the whole column is counted (without expanding) for the message.
    """
    parts: list[pl.Series] = []
    errors: dict[str, str] = {}
    used = 0
    for a in range(0, both.len(), batch_rows):
        left = None if node_budget is None else node_budget - used
        try:
            got, errs, n = compact_node_lists(both.slice(a, batch_rows), budget=left, distinct=True)
        except hostlist.NodeBudgetError:
            total = budget_count(both)  # (as the budget counts: a list it refuses holds none)
            raise hostlist.NodeBudgetError(
                f"the node lists would hold {total:,} host names", names=total
            ) from None
        used += n
        errors.update(errs)
        parts.append(got)
    if not parts:
        return pl.Series("nodes", [], dtype=NODES_COMPACT), errors, 0
    return pl.concat(parts, rechunk=False).rename("nodes"), errors, used


def complete(
    allocs: pl.DataFrame,
    steps: pl.DataFrame,
    *,
    node_budget: int | None,
    batch_rows: int | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame, list[tuple[int, str]], int]:
    """Finish the parse of the whole input: expand the node lists of every record kept.

    The node lists are expanded a batch of records at a time into the compact
    :data:`NODES_COMPACT` form; a batch whose hostlists repeat (a compact export, or steps
    beside their allocation) expands each distinct one once.

    Parameters
    ----------
    allocs, steps : polars.DataFrame
        The allocation and step rows :func:`finish` kept, node lists still text.
    node_budget : int or None
        Most host names the node lists may hold in total; None: no limit.
    batch_rows : int or None
        Records expanded at a time (default :data:`NODE_BATCH_ROWS`); the tables do not
        depend on it.

    Returns
    -------
    (polars.DataFrame, polars.DataFrame, list of (int, str), int)
        Allocations and steps in the canonical columns with ``line_no`` (``nodes`` as
        ``List(Categorical)``), (line_no, reason) of the records to quarantine, and the number
        of host names expanded.

    Raises
    ------
    NodeBudgetError
        Before building the lists of the batch that would pass it, if the node lists would
        hold more than ``node_budget`` names (its ``names``: how many they hold in all).
    """
    both = pl.concat([allocs.get_column("nodelist"), steps.get_column("nodelist")], rechunk=False)
    nodes, hl_errors, node_names = _compact_node_lists(
        both, node_budget=node_budget, batch_rows=max(1, batch_rows or NODE_BATCH_ROWS)
    )
    del both
    late: list[tuple[int, str]] = []
    out: list[pl.DataFrame] = []
    for frame, keep, part in (
        (allocs, ALLOC_COLS, nodes.slice(0, allocs.height)),
        (steps, STEP_COLS, nodes.slice(allocs.height)),
    ):
        frame = frame.with_columns(chunked_like(part, frame))
        given = frame.get_column("_nnodes")  # NNodes as printed (null: no such field / empty)
        if frame.get_column("_nnodes").has_nulls():  # no NNodes field: the list's length
            count = pl.col("nodes").list.len().clip(0, MAX_NODES_PER_JOB).cast(pl.UInt32)
            frame = frame.with_columns(n_nodes=pl.coalesce(pl.col("_nnodes"), count))
        else:
            frame = frame.rename({"_nnodes": "n_nodes"})
        # a record that started ran on at least one node: NNodes 0 (and no NodeList) would
        # hide its exposure (a never-started record prints NNodes 1 'None assigned')
        nodeless = ((given == 0) & frame.get_column("start_time").is_not_null()).fill_null(False)
        if nodeless.any():
            bad = frame.filter(nodeless).select("line_no", "nodelist")
            late += [
                (
                    ln,
                    f"field NNodes: 0 nodes (NodeList '{nl or ''}') for a record that started: "
                    "a started job or step runs on at least one node",
                )
                for ln, nl in bad.iter_rows()
            ]
            frame = frame.filter(~nodeless)
        if hl_errors:
            flag = frame.get_column("nodelist").is_in(list(hl_errors)).fill_null(False)
            if flag.any():
                bad = frame.filter(flag).select("line_no", "nodelist")
                late += [(ln, f"field NodeList: {hl_errors[nl]}") for ln, nl in bad.iter_rows()]
                frame = frame.filter(~flag)
        # a node count that disagrees with the nodes listed (fields swapped or mislabelled)
        # would change the exposure: the record is not trusted
        listed = frame.get_column("nodes").list.len()
        odd = (listed > 0) & (listed != frame.get_column("n_nodes"))
        if odd.any():
            bad = frame.filter(odd).select(
                "line_no", "n_nodes", "nodelist", listed=listed.filter(odd)
            )
            late += [
                (ln, f"field NNodes: {n:,} nodes, but NodeList '{nl}' names {k:,}")
                for ln, n, nl, k in bad.iter_rows()
            ]
            frame = frame.filter(~odd)
        out.append(frame.select(keep))
    return out[0], out[1], late, node_names


def chunked_like(values: pl.Series, frame: pl.DataFrame, column: str | None = None) -> pl.Series:
    """Split ``values`` at the chunk boundaries of ``frame`` (zero-copy slices).

    A frame built batch by batch holds its columns in chunks; a column added to it in one
    chunk makes polars copy the whole frame into single chunks (a rechunk: for 1 M sacct
    allocations, 0.2 s and 450 MB at the read's peak). Sliced like the frame, it is added
    without a copy. ``values`` is returned as it is when the frame's columns are not chunked
    alike.

    Parameters
    ----------
    values : polars.Series
        One value per row of ``frame``.
    frame : polars.DataFrame
        The frame the values are for.
    column : str or None
        Chunk like this column of ``frame`` (else like all of them, when they agree).

    Returns
    -------
    polars.Series
        ``values``, chunked like ``frame``.
    """
    if not frame.width or values.len() != frame.height:
        return values
    lengths = frame.get_column(column or frame.columns[0]).chunk_lengths()
    if len(lengths) < 2 or (
        column is None
        and any(frame.get_column(c).chunk_lengths() != lengths for c in frame.columns[1:])
    ):
        return values
    starts = np.cumsum([0, *lengths[:-1]]).tolist()
    return pl.concat(
        [values.slice(a, n) for a, n in zip(starts, lengths, strict=True)], rechunk=False
    )


def parse_records(
    recs: pl.DataFrame,
    *,
    tz: str | None,
    cluster: str | None,
    has_gpu_field: bool,
    node_budget: int | None = None,
) -> Parsed:
    """Parse a frame of records at once, for tests and small inputs.

    Runs :func:`typed_plan`, :func:`finish` and :func:`complete`.

    Parameters
    ----------
    recs : polars.DataFrame
        ``line_no`` and string columns named by sacct field.
    tz : str or None
        IANA time zone of local ISO times.
    cluster : str or None
        Cluster name for records without a ``Cluster`` field.
    has_gpu_field : bool
        The records have a TRES or GRES field (else the GPU count is 0).
    node_budget : int or None
        Most host names the node lists may hold in total; None: no limit.

    Returns
    -------
    Parsed
        Allocation and step rows (with ``line_no``), and the ``line_no`` and reason of every
        record that failed a check.
    """
    typed = typed_plan(
        recs.lazy(), set(recs.columns), tz=tz, cluster=cluster, times=time_form_of(recs)
    ).collect()

    def raw_fields(lines: list[int]) -> pl.DataFrame:
        return recs.filter(pl.col("line_no").is_in(pl.Series(lines, dtype=pl.Int64).implode()))

    part = finish(typed, raw_fields, tz=tz, gpu=has_gpu_field)
    allocs, steps, late, names = complete(part.allocs, part.steps, node_budget=node_budget)
    late_frame = pl.DataFrame(late, schema={"line_no": pl.Int64, "reason": pl.String}, orient="row")
    return Parsed(allocs, steps, pl.concat([part.bad, late_frame]), part.naive, names)


def _reasons(
    bad: pl.DataFrame, raw: pl.DataFrame, hl_errors: dict[str, str], tz: str | None
) -> pl.DataFrame:
    """Return ``line_no`` and ``reason`` of the rows that failed a check (the first one failed).

    ``raw`` holds their string fields, for the messages.
    """
    if bad.height == 0:
        return pl.DataFrame(schema={"line_no": pl.Int64, "reason": pl.String})
    cols = set(raw.columns)

    def v(name: str) -> pl.Expr:
        return (pl.col(name) if name in cols else pl.lit(None, pl.String)).fill_null("")

    frame = bad.join(raw, on="line_no", how="left", suffix="_raw")
    zone = _zone_text(tz)
    msgs: list[tuple[str, pl.Expr]] = [
        ("_c_jobid", pl.format("field JobID: malformed job id '{}'", v("JobID"))),
        ("_c_cluster", pl.lit("field Cluster: empty, and no cluster= was given")),
        ("_c_state", pl.format("field State: unknown job state '{}'", v("State"))),
        ("_c_exit", pl.format("field ExitCode: expected code:signal, got '{}'", v("ExitCode"))),
        (
            "_c_exit_range",
            pl.format(
                f"field ExitCode: '{{}}' is out of range (code:signal, code 0-{EXIT_CODE_MAX}, "
                f"signal 0-{EXIT_SIGNAL_MAX})",
                v("ExitCode"),
            ),
        ),
        (
            "_c_dexit",
            pl.format(
                "field DerivedExitCode: expected code:signal, got '{}'", v("DerivedExitCode")
            ),
        ),
        (
            "_c_dexit_range",
            pl.format(
                f"field DerivedExitCode: '{{}}' is out of range (code:signal, code 0-{EXIT_CODE_MAX}"
                f", signal 0-{EXIT_SIGNAL_MAX})",
                v("DerivedExitCode"),
            ),
        ),
        ("_c_submit_missing", pl.lit("field Submit: missing submit time")),
    ]
    for field, key in _TIMES:
        msgs += [
            (
                f"_c_{key}_range",
                pl.format(
                    f"field {field}: time '{{}}' is {bounds_text(latest_time())} (a poison value)",
                    v(field),
                ),
            ),
            (
                f"_c_{key}_gap",
                pl.format(
                    f"field {field}: cannot read time '{{}}': it does not exist in {zone} "
                    "(a daylight-saving gap)",
                    v(field),
                ),
            ),
            (f"_c_{key}_read", pl.format(f"field {field}: cannot read time '{{}}'", v(field))),
        ]
    msgs += [
        (
            "_c_limit_poison",
            pl.format(
                "field Timelimit: '{}' is longer than the accepted calendar (a poison value)",
                pl.coalesce(v("Timelimit"), v("TimelimitRaw")),
            ),
        ),
        ("_c_limit", pl.format("field Timelimit: cannot read duration '{}'", v("Timelimit"))),
        (
            "_c_nnodes",
            pl.format(
                "field NNodes: not a node count '{}'", pl.coalesce(v("NNodes"), v("AllocNodes"))
            ),
        ),
        (
            "_c_nnodes_poison",
            pl.format(
                f"field NNodes: {{}} nodes is more than {MAX_NODES_PER_JOB:,} (a poison value)",
                pl.coalesce(v("NNodes"), v("AllocNodes")),
            ),
        ),
        ("_c_priority", pl.format("field Priority: not an integer '{}'", v("Priority"))),
        (
            "_c_gpus",
            pl.format(
                f"field AllocTRES: the GPU count is more than {MAX_ACCELERATORS_PER_JOB:,} or "
                "does not fit 64 bits (a poison value): '{}'",
                pl.coalesce(v("AllocTRES"), v("ReqTRES"), v("AllocGRES"), v("ReqGRES"), v("Gres")),
            ),
        ),
        (
            "_c_no_nodes",
            pl.format(
                "field NodeList: '{}' for a record that started ({}): a started job or step runs "
                "on at least one node",
                v("NodeList"),
                v("Start"),
            ),
        ),
        (
            "_c_order_end",
            pl.format(
                "End {} is before Start {} (impossible order; not fixed)", v("End"), v("Start")
            ),
        ),
        (
            "_c_end_unknown",
            pl.format(
                "field End: '{}' for a record that started ({}) and is in the finished State {} "
                "(Slurm sets End when a job or step finishes: a corrupt record, not one still "
                "running)",
                v("End"),
                v("Start"),
                v("State"),
            ),
        ),
        (
            "_c_hostlist",
            pl.lit("field NodeList: ")
            + pl.col("nodelist").replace_strict(hl_errors, default="", return_dtype=pl.String)
            if hl_errors
            else pl.lit(""),
        ),
    ]
    for flag in frame.columns:
        if flag.startswith("_c_twice_"):
            name = flag.removeprefix("_c_twice_")
            base = copy_of(name) or name
            msgs.append(
                (
                    flag,
                    pl.format(
                        f"field {base}: the header names {base} twice and the copies differ "
                        "('{}' and '{}'): the record's value is unknown",
                        v(base),
                        v(name),
                    ),
                )
            )
    reason = pl.coalesce(
        [pl.when(pl.col(flag)).then(msg) for flag, msg in msgs if flag in frame.columns]
    )
    return frame.select("line_no", reason=reason.fill_null("malformed record"))


def repeated_hour_times(jobs: pl.DataFrame, tz: str | None) -> int:
    """Count the start and end times of ``jobs`` that fall in an hour repeated in ``tz``.

    Parameters
    ----------
    jobs : polars.DataFrame
        Attempts with ``start_time`` and ``end_time`` [UTC].
    tz : str or None
        The zone the export printed its times in.

    Returns
    -------
    int
        Times whose local reading is ambiguous (the hour repeated when daylight saving time
        ends): read by the order Submit <= Start <= End, or as the earlier instant where both
        readings keep it.
    """
    if tz in (None, "UTC") or jobs.height == 0:
        return 0
    n = 0
    for col in ("start_time", "end_time"):
        local = (
            jobs.get_column(col).drop_nulls().dt.convert_time_zone(tz).dt.replace_time_zone(None)
        )
        early = local.dt.replace_time_zone(tz, ambiguous="earliest", non_existent="null")
        late = local.dt.replace_time_zone(tz, ambiguous="latest", non_existent="null")
        n += int((early != late).sum())
    return n
