"""Typed parsing of sacct records: string columns -> canonical columns, or a quarantine reason.

All in polars expressions over a block of records. Every value is checked against the sane
bounds of :mod:`reliability.ingest._bounds` before it is converted, so that a poison value
(a Submit of ``0000-01-01``, an epoch in year 248,073, ``gres/gpu=4294967296``, a node list
of 10^10 hosts, a number that overflows 64 bits) becomes a quarantine row naming the field,
never an overflow, a wrapped number or a traceback. (A Submit after Start is left to
:func:`reliability.ingest._sacct_post.resize_segments`: it is how sacct prints a resized
job.) Used by :func:`reliability.ingest.slurm.read_sacct`.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from reliability import schema
from reliability.ingest import hostlist
from reliability.ingest._bounds import (
    MAX_ACCELERATORS_PER_JOB,
    MAX_NODES_PER_JOB,
    TIME_MAX,
    TIME_MIN,
    YEAR_MAX,
    YEAR_MIN,
)
from reliability.ingest._common import NULL_SENTINELS
from reliability.ingest.slurm_fields import DURATION, FIELD_PATTERNS, ISO_FMT, NO_LIMIT

__all__ = ["ALLOC_COLS", "MAX_DURATION_S", "STEP_COLS", "Parsed", "parse_records"]

STEP_COLS = ["line_no", *schema.TABLES["job_steps"].schema]
ALLOC_COLS = [
    "line_no",
    *(c for c in schema.TABLES["jobs"].schema if c not in ("attempt", "topology")),
]
#: longest accepted duration (a time limit beyond the whole accepted calendar is poison)
MAX_DURATION_S = (YEAR_MAX - YEAR_MIN + 1) * 366 * 86400
_EPOCH_MIN = int(TIME_MIN.timestamp())
_EPOCH_MAX = int(TIME_MAX.timestamp())
_SENTINELS = [s for s in NULL_SENTINELS if s]
_JOBID = FIELD_PATTERNS["JobID"].pattern
_TIMES = (("Submit", "submit"), ("Start", "start"), ("End", "end"))


class Parsed:
    """One block's records, typed: ``allocs`` / ``steps`` (with ``line_no``), ``bad``
    (``line_no``, ``reason``), ``naive`` (some time was local ISO text), ``node_names``
    (names in the expanded node lists)."""

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


def _per_value(
    frame: pl.DataFrame, col: str, fn: Callable[[pl.Expr], pl.Expr], dtype: pl.DataType
) -> pl.Series:
    """``fn`` applied once per distinct value of ``col`` and mapped back to the rows (fast
    for fields such as Timelimit, ExitCode or AllocTRES that take few distinct values)."""
    s = frame.get_column(col)
    keys = s.drop_nulls().unique()
    vals = pl.DataFrame({"k": keys}).select(fn(pl.col("k")).cast(dtype)).to_series()
    return s.replace_strict(keys, vals, default=None, return_dtype=dtype)


def _duration_s(expr: pl.Expr) -> pl.Expr:
    """Seconds from ``[D-][HH:]MM:SS[.mmm]``; null for sentinels, UNLIMITED, or a value
    beyond :data:`MAX_DURATION_S`; -1 for a well-formed but absurd duration."""
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


def _gpu_count(tres: pl.Expr) -> pl.Expr:
    """GPU count of a TRES string (``gres/gpu=8``, or typed ``gres/gpu:a100=8`` summed);
    null when it names no GPUs, -1 when a count does not fit 64 bits."""
    plain_s = tres.str.extract(r"(?:^|,)gres/gpu=(\d+)", 1)
    plain = plain_s.cast(pl.Int64, strict=False)
    typed_s = tres.str.extract_all(r"gres/gpu:[^=,]+=\d+").list.eval(
        pl.element().str.extract(r"=(\d+)$", 1)
    )
    typed_i = typed_s.list.eval(pl.element().cast(pl.Int64, strict=False))
    typed_bad = typed_i.list.eval(pl.element().is_null()).list.any()
    typed = (
        pl.when(typed_bad)
        .then(-1)
        .otherwise(typed_i.list.eval(pl.element().clip(0, MAX_ACCELERATORS_PER_JOB + 1)).list.sum())
    )
    typed = pl.when(tres.str.contains("gres/gpu:", literal=True)).then(typed)
    plain = pl.when(plain_s.is_not_null() & plain.is_null()).then(-1).otherwise(plain)
    return pl.coalesce(plain, typed)


def _gres_count(gres: pl.Expr) -> pl.Expr:
    """GPU count of an old GRES string (``gpu:4``, ``gpu:a100:2(IDX:0-1)``)."""
    items = gres.str.extract_all(r"gpu(?::[^:,(]+)?:\d+").list.eval(
        pl.element().str.extract(r":(\d+)$", 1).cast(pl.Int64, strict=False)
    )
    bad = items.list.eval(pl.element().is_null()).list.any()
    total = pl.when(bad).then(-1).otherwise(items.list.sum())
    return pl.when(gres.str.contains("gpu", literal=True)).then(total)


def _zone_text(tz: str | None) -> str:
    return tz or "UTC"


def _state_of(x: pl.Expr) -> pl.Expr:
    """Job state of sacct's State text (``CANCELLED by 1001`` -> CANCELLED)."""
    return pl.coalesce(
        x.cast(schema.JobState, strict=False),
        x.str.extract(r"^([A-Z_]+)(?: by -?\d+)?\+?$", 1).cast(schema.JobState, strict=False),
    )


def _exit_of(x: pl.Expr) -> pl.Expr:
    return pl.struct(
        code=x.str.extract(r"^(-?\d+):-?\d+$", 1).cast(pl.Int32, strict=False),
        signal=x.str.extract(r"^-?\d+:(-?\d+)$", 1).cast(pl.Int32, strict=False),
    )


_EXIT = pl.Struct({"code": pl.Int32, "signal": pl.Int32})


def parse_records(
    recs: pl.DataFrame,
    *,
    tz: str | None,
    cluster: str | None,
    has_gpu_field: bool,
    node_budget: int | None = None,
) -> Parsed:
    """Parse one block of records (``line_no`` + string columns named by sacct field).

    Parameters
    ----------
    recs : the records; fields the export lacks are simply absent
    tz : IANA zone of local ISO times (None: only epoch times can be read)
    cluster : cluster name where the Cluster field is missing or empty
    has_gpu_field : the export has a TRES or GRES field (else the GPU count is 0)
    node_budget : most host names the block's node lists may expand to
        (:class:`~reliability.ingest.hostlist.NodeBudgetError` beyond it, before expanding)

    Returns
    -------
    :class:`Parsed`: allocation and step rows (with ``line_no``), and the ``line_no`` and
    reason of every record that failed a check.
    """
    is_step = recs.get_column("JobID").str.contains(".", literal=True).fill_null(False)
    parts = [
        _parse_kind(recs.filter(~is_step), step=False, tz=tz, cluster=cluster, gpu=has_gpu_field),
        _parse_kind(recs.filter(is_step), step=True, tz=tz, cluster=cluster, gpu=has_gpu_field),
    ]
    nodelists = pl.concat([p.get_column("nodelist") for p in parts])
    nodes, hl_errors, node_names = hostlist.node_lists(nodelists, budget=node_budget)
    n_alloc = parts[0].height
    parts = [
        parts[0].with_columns(nodes.slice(0, n_alloc)),
        parts[1].with_columns(nodes.slice(n_alloc)),
    ]
    naive = any(bool(p.get_column("_naive").any()) for p in parts if p.height)
    good: list[pl.DataFrame] = []
    bad: list[pl.DataFrame] = []
    for k, frame in enumerate(parts):
        if hl_errors:
            frame = frame.with_columns(
                _c_hostlist=pl.col("nodelist").is_in(list(hl_errors)).fill_null(False)
            )
        checks = [c for c in frame.columns if c.startswith("_c_")]
        frame = frame.with_columns(_bad=pl.any_horizontal(checks))
        bad_rows = frame.filter("_bad")
        ok = frame.filter(~pl.col("_bad")) if bad_rows.height else frame
        bad.append(_reasons(bad_rows, recs, hl_errors, tz))
        ok = ok.with_columns(
            n_nodes=pl.coalesce(pl.col("_nnodes"), pl.col("nodes").list.len()).cast(pl.UInt32),
        )
        good.append(ok.select(STEP_COLS if k else ALLOC_COLS))
    return Parsed(good[0], good[1], pl.concat(bad), naive, node_names)


def _parse_kind(
    recs: pl.DataFrame, *, step: bool, tz: str | None, cluster: str | None, gpu: bool
) -> pl.DataFrame:
    """Typed columns and check flags (``_c_*``, True = bad) of allocation or step records."""
    cols = set(recs.columns)

    def c(name: str) -> pl.Expr:
        return pl.col(name) if name in cols else pl.lit(None, pl.String)

    def text(name: str) -> pl.Expr:
        e = c(name)
        return pl.when(e.is_in(_SENTINELS)).then(None).otherwise(e)

    extra: dict[str, pl.Series] = {}
    if "State" in cols:
        extra["_state"] = _per_value(recs, "State", _state_of, schema.JobState)
    if "ExitCode" in cols:
        extra["_exit"] = _per_value(recs, "ExitCode", _exit_of, _EXIT)
    if not step:
        if "Timelimit" in cols:
            extra["_limit"] = _per_value(recs, "Timelimit", _duration_s, pl.Int64())
        for name in ("AllocTRES", "ReqTRES"):
            if name in cols:
                extra[f"_gpu_{name}"] = _per_value(recs, name, _gpu_count, pl.Int64())
        for name in ("AllocGRES", "ReqGRES", "Gres"):
            if name in cols:
                extra[f"_gpu_{name}"] = _per_value(recs, name, _gres_count, pl.Int64())
    frame = recs.with_columns(**extra) if extra else recs

    jid = c("JobID")
    ids = jid.str.split_exact(".", 1)
    state = pl.col("_state") if "_state" in extra else pl.lit(None, schema.JobState)
    exit_ = pl.col("_exit") if "_exit" in extra else pl.lit(None, _EXIT)
    n_nodes = pl.coalesce(
        text("NNodes").cast(pl.Int64, strict=False), text("AllocNodes").cast(pl.Int64, strict=False)
    )
    nodes_txt = pl.coalesce(text("NNodes"), text("AllocNodes"))
    cluster_ = pl.coalesce(text("Cluster"), pl.lit(cluster, pl.String))
    exprs: dict[str, pl.Expr] = {
        "cluster": cluster_,
        "job_id": ids.struct.field("field_0"),
        "step": ids.struct.field("field_1"),
        "name": c("JobName"),
        "state": state,
        "exit_code": exit_.struct.field("code"),
        "exit_signal": exit_.struct.field("signal"),
        "_nnodes": n_nodes,
        "nodelist": text("NodeList"),
        # checks (True = bad); the reasons are in _reasons
        "_c_jobid": ~jid.str.contains(f"^(?:{_JOBID})$").fill_null(False)
        | (ids.struct.field("field_1") == "").fill_null(False),
        "_c_cluster": cluster_.is_null(),
        "_c_state": state.is_null(),
        "_c_exit": c("ExitCode").is_not_null()
        & (exit_.struct.field("code").is_null() | exit_.struct.field("signal").is_null()),
        "_c_nnodes": (nodes_txt.is_not_null() & n_nodes.is_null()),
        "_c_nnodes_poison": ((n_nodes > MAX_NODES_PER_JOB) | (n_nodes < 0)).fill_null(False),
    }
    if not step:
        limit = pl.col("_limit") if "_limit" in extra else pl.lit(None, pl.Int64)
        limit_raw = text("TimelimitRaw").cast(pl.Int64, strict=False)
        limit_txt = text("Timelimit")
        gpu_cols = [f"_gpu_{n}" for n in ("AllocTRES", "ReqTRES") if f"_gpu_{n}" in extra]
        gres_cols = [f"_gpu_{n}" for n in ("AllocGRES", "ReqGRES", "Gres") if f"_gpu_{n}" in extra]
        if "_gpu_AllocTRES" in extra:
            from_tres = pl.when(text("AllocTRES").is_not_null()).then(pl.col("_gpu_AllocTRES"))
            if "_gpu_ReqTRES" in extra:
                from_tres = from_tres.otherwise(pl.col("_gpu_ReqTRES"))
        elif gpu_cols:
            from_tres = pl.col(gpu_cols[0])
        else:
            from_tres = pl.lit(None, pl.Int64)
        gpus = pl.coalesce(from_tres, *(pl.col(g) for g in gres_cols))
        priority = text("Priority").cast(pl.Int64, strict=False)
        exprs |= {
            "user": text("User"),
            "account": text("Account"),
            "partition": text("Partition"),
            "qos": text("QOS"),
            "time_limit_s": pl.coalesce(
                pl.when(limit >= 0).then(limit),
                pl.when(limit_raw.is_between(0, MAX_DURATION_S // 60)).then(limit_raw * 60),
            ),
            "priority": priority,
            "n_accelerators": gpus.fill_null(0).clip(0, MAX_ACCELERATORS_PER_JOB).cast(pl.UInt32)
            if gpu else pl.lit(0, pl.UInt32),
            "_c_limit": limit_txt.is_not_null() & ~limit_txt.is_in(NO_LIMIT) & limit.is_null(),
            "_c_limit_poison": ((limit == -1) | (limit_raw > MAX_DURATION_S // 60)
                                | (limit_raw < 0)).fill_null(False),
            "_c_priority": text("Priority").is_not_null() & priority.is_null(),
            "_c_gpus": ((gpus < 0) | (gpus > MAX_ACCELERATORS_PER_JOB)).fill_null(False),
        }  # fmt: skip
    times = [(f, k) for f, k in _TIMES if not (step and k == "submit")]
    for field, key in times:
        raw = text(field)
        iso = raw.str.to_datetime(ISO_FMT, strict=False, time_unit="us")
        if tz is None:
            local = pl.lit(None, schema.UTC_TIME)
        elif tz == "UTC":
            local = iso.dt.replace_time_zone("UTC")
        else:
            local = iso.dt.replace_time_zone(
                tz, ambiguous="earliest", non_existent="null"
            ).dt.convert_time_zone("UTC")
        exprs[f"{key}_time"] = local
        exprs[f"_iso_{key}"] = iso.is_not_null()
        # text that is not ISO (epoch seconds, or garbage): parsed below, row by row
        exprs[f"_other_{key}"] = pl.when(raw.is_not_null() & iso.is_null()).then(raw)
    out = frame.lazy().select("line_no", **exprs).collect()
    fix: dict[str, pl.Expr] = {}
    for _, key in times:
        other = pl.col(f"_other_{key}")
        num = other.cast(pl.Int64, strict=False)
        in_range = num.is_between(_EPOCH_MIN, _EPOCH_MAX)
        if out.get_column(f"_other_{key}").null_count() < out.height:
            epoch = pl.from_epoch(pl.when(in_range).then(num), time_unit="s")
            value = pl.coalesce(pl.col(f"{key}_time"), epoch.dt.replace_time_zone("UTC"))
        else:
            value = pl.col(f"{key}_time")
        outside = ((value < TIME_MIN) | (value > TIME_MAX)).fill_null(False)
        fix[f"{key}_time"] = pl.when(~outside).then(value)
        fix[f"_c_{key}_range"] = (num.is_not_null() & ~in_range).fill_null(False) | outside
        fix[f"_c_{key}_gap"] = (
            pl.col(f"_iso_{key}") & pl.col(f"{key}_time").is_null()
            if tz not in (None, "UTC")
            else pl.lit(False)
        )
        fix[f"_c_{key}_read"] = other.is_not_null() & num.is_null()
    out = out.with_columns(**fix).with_columns(
        _naive=pl.any_horizontal(f"_iso_{k}" for _, k in times)
    )
    more = {
        "_c_order_end": (pl.col("start_time") > pl.col("end_time")).fill_null(False),
    }
    if not step:
        more["_c_submit_missing"] = (
            pl.col("submit_time").is_null()
            & ~pl.col("_c_submit_read")
            & ~pl.col("_c_submit_range")
            & ~pl.col("_c_submit_gap")
        )
    else:
        more["submit_time"] = pl.lit(None, schema.UTC_TIME)
    return out.with_columns(**more).with_columns(
        [pl.col(k).fill_null(False) for k in out.columns if k.startswith("_c_")]
    )


def _reasons(
    bad: pl.DataFrame, recs: pl.DataFrame, hl_errors: dict[str, str], tz: str | None
) -> pl.DataFrame:
    """``line_no``, ``reason`` of the rows that failed a check (the first failed check)."""
    if bad.height == 0:
        return pl.DataFrame(schema={"line_no": pl.Int64, "reason": pl.String})
    raw = recs.join(bad.select("line_no"), on="line_no", how="semi")
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
        ("_c_submit_missing", pl.lit("field Submit: missing submit time")),
    ]
    for field, key in _TIMES:
        msgs += [
            (f"_c_{key}_range", pl.format(
                f"field {field}: time '{{}}' is outside {YEAR_MIN}-{YEAR_MAX} (a poison value)",
                v(field))),
            (f"_c_{key}_gap", pl.format(
                f"field {field}: cannot read time '{{}}': it does not exist in {zone} "
                "(a daylight-saving gap)", v(field))),
            (f"_c_{key}_read", pl.format(f"field {field}: cannot read time '{{}}'", v(field))),
        ]  # fmt: skip
    msgs += [
        ("_c_limit_poison", pl.format(
            "field Timelimit: '{}' is longer than the accepted calendar (a poison value)",
            pl.coalesce(v("Timelimit"), v("TimelimitRaw")))),
        ("_c_limit", pl.format("field Timelimit: cannot read duration '{}'", v("Timelimit"))),
        ("_c_nnodes", pl.format("field NNodes: not a count '{}'",
                                pl.coalesce(v("NNodes"), v("AllocNodes")))),
        ("_c_nnodes_poison", pl.format(
            f"field NNodes: {{}} nodes is more than {MAX_NODES_PER_JOB:,} (a poison value)",
            pl.coalesce(v("NNodes"), v("AllocNodes")))),
        ("_c_priority", pl.format("field Priority: not an integer '{}'", v("Priority"))),
        ("_c_gpus", pl.format(
            f"field AllocTRES: the GPU count is more than {MAX_ACCELERATORS_PER_JOB:,} or "
            "does not fit 64 bits (a poison value): '{}'",
            pl.coalesce(v("AllocTRES"), v("ReqTRES"), v("AllocGRES"), v("ReqGRES"), v("Gres")))),
        ("_c_order_end", pl.format("End {} is before Start {} (impossible order; not fixed)",
                                   v("End"), v("Start"))),
        ("_c_hostlist", pl.lit("field NodeList: ") + pl.col("nodelist").replace_strict(
            hl_errors, default="", return_dtype=pl.String) if hl_errors else pl.lit("")),
    ]  # fmt: skip
    reason = pl.coalesce(
        [pl.when(pl.col(flag)).then(msg) for flag, msg in msgs if flag in frame.columns]
    )
    return frame.select("line_no", reason=reason.fill_null("malformed record"))
