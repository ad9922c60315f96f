"""Typed parsing of sacct records (string columns -> canonical columns + quarantine reasons),
all in polars expressions. Used by :func:`reliability.ingest.slurm.read_sacct`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import polars as pl

from reliability import schema
from reliability.ingest import hostlist
from reliability.ingest._common import NULL_SENTINELS
from reliability.ingest.slurm_fields import DURATION, ISO_FMT, NO_LIMIT, STATE_SUFFIX, TIMES

__all__ = ["ALLOC_COLS", "STEP_COLS", "parse_segment"]

STEP_COLS = list(schema.TABLES["job_steps"].schema)
ALLOC_COLS = [
    "line_no",
    *(c for c in schema.TABLES["jobs"].schema if c not in ("attempt", "topology")),
]


def _per_value(
    recs: pl.DataFrame, expr: pl.Expr, fn: Callable[[pl.Expr], pl.Expr], dtype: pl.DataType
) -> pl.Expr:
    """``fn(expr)`` computed once per distinct value of ``expr`` in ``recs`` and mapped back
    (fast for fields like Timelimit or AllocTRES that take few distinct values)."""
    keys = recs.select(expr.alias("k")).get_column("k").unique().drop_nulls()
    vals = pl.DataFrame({"k": keys}).select(fn(pl.col("k")).cast(dtype).alias("v")).get_column("v")
    return expr.replace_strict(keys, vals, default=None, return_dtype=dtype)


def _col(frame_cols: Sequence[str], name: str) -> pl.Expr:
    return pl.col(name) if name in frame_cols else pl.lit(None, pl.String)


def _nulled(expr: pl.Expr) -> pl.Expr:
    e = expr.str.strip_chars(" ")
    return pl.when(e.is_in(NULL_SENTINELS)).then(None).otherwise(expr)


def _duration_s(expr: pl.Expr) -> pl.Expr:
    """Seconds from ``[D-][HH:]MM:SS[.mmm]``; null for sentinels and UNLIMITED."""
    g = expr.str.extract_groups(DURATION)
    parts = [g.struct.field(str(i)).cast(pl.Int64).fill_null(0) for i in (1, 2, 3, 4)]
    secs = parts[0] * 86400 + parts[1] * 3600 + parts[2] * 60 + parts[3]
    return pl.when(g.struct.field("4").is_not_null()).then(secs)


def _gpus(tres: pl.Expr, gres: pl.Expr) -> pl.Expr:
    """GPU count from a TRES string (``gres/gpu=8`` or typed ``gres/gpu:a100=8``) or GRES."""
    plain = tres.str.extract(r"(?:^|,)gres/gpu=(\d+)", 1).cast(pl.UInt32)
    typed = (
        tres.str.extract_all(r"gres/gpu:[^=,]+=\d+")
        .list.eval(pl.element().str.extract(r"=(\d+)$", 1).cast(pl.UInt32))
        .list.sum()
        .cast(pl.UInt32)
    )
    typed = pl.when(tres.str.contains("gres/gpu:", literal=True)).then(typed)
    from_gres = (
        gres.str.extract_all(r"gpu(?::[^:,(]+)?:\d+")
        .list.eval(pl.element().str.extract(r":(\d+)$", 1).cast(pl.UInt32))
        .list.sum()
        .cast(pl.UInt32)
    )
    from_gres = pl.when(gres.str.contains("gpu", literal=True)).then(from_gres)
    return pl.coalesce(plain, typed, from_gres)


def parse_segment(
    recs: pl.DataFrame, cols: Sequence[str], *, trailing: bool, tz: str | None, cluster: str | None
) -> tuple[pl.DataFrame, pl.DataFrame, bool]:
    """Parse one segment's string columns.

    Returns (good rows with typed columns, bad rows as ``line_no``/``raw``/``reason``,
    whether any time was a naive ISO string).
    """
    c = lambda n: _col(cols, n)  # noqa: E731

    def text(n: str) -> pl.Expr:
        return _nulled(c(n))

    # Low-cardinality fields are parsed once per distinct value and mapped back.
    limit = text("Timelimit")
    limit_parsed = (
        _per_value(recs, limit, _duration_s, pl.Int64)
        if "Timelimit" in cols
        else pl.lit(None, pl.Int64)
    )
    limit_s = pl.coalesce(limit_parsed, text("TimelimitRaw").cast(pl.Int64, strict=False) * 60)
    limit_bad = limit.is_not_null() & ~limit.is_in(NO_LIMIT) & limit_parsed.is_null()
    alloc, req = text("AllocTRES"), text("ReqTRES")
    gres = pl.coalesce(text("AllocGRES"), text("ReqGRES"), text("Gres")).fill_null("")

    def tres_gpus(e: pl.Expr) -> pl.Expr:
        return _per_value(recs, e, lambda x: _gpus(x, pl.lit("")), pl.UInt32)

    from_tres = (
        pl.when(alloc.is_not_null())
        .then(tres_gpus(alloc) if "AllocTRES" in cols else pl.lit(None, pl.UInt32))
        .otherwise(tres_gpus(req) if "ReqTRES" in cols else pl.lit(None, pl.UInt32))
    )
    has_gres = any(g in cols for g in ("AllocGRES", "ReqGRES", "Gres"))
    gpus = (
        pl.coalesce(
            from_tres,
            _per_value(recs, gres, lambda x: _gpus(pl.lit(""), x), pl.UInt32) if has_gres else None,
        )
        if has_gres
        else from_tres
    )
    exit_s = text("ExitCode")
    exit_pair = _per_value(
        recs, exit_s,
        lambda x: pl.struct(code=x.str.extract(r"^(-?\d+):-?\d+$", 1).cast(pl.Int32),
                            signal=x.str.extract(r"^-?\d+:(-?\d+)$", 1).cast(pl.Int32)),
        pl.Struct({"code": pl.Int32, "signal": pl.Int32}),
    )  # fmt: skip
    exit_code, exit_signal = exit_pair.struct.field("code"), exit_pair.struct.field("signal")
    ids = c("JobID").str.strip_chars().str.splitn(".", 2)
    state_raw = c("State").str.strip_chars().str.replace(STATE_SUFFIX, "")
    stage1 = recs.lazy().select(
        "line_no",
        cluster=pl.coalesce(_nulled(c("Cluster").str.strip_chars()), pl.lit(cluster, pl.String)),
        job_id=ids.struct.field("field_0"),
        step=ids.struct.field("field_1"),
        name=c("JobName"),
        user=text("User"),
        account=text("Account"),
        partition=text("Partition"),
        qos=text("QOS"),
        state=state_raw.cast(schema.JobState, strict=False),
        state_raw=state_raw,
        exit_code=exit_code,
        exit_signal=exit_signal,
        n_nodes_raw=pl.coalesce(text("NNodes"), text("AllocNodes")),
        n_accelerators=gpus,
        nodelist=_nulled(c("NodeList").str.strip_chars()),
        time_limit_s=limit_s,
        priority_raw=text("Priority"),
        _limit_bad=limit_bad,
        _submit_s=text("Submit"),
        _start_s=text("Start"),
        _end_s=text("End"),
        _exit_s=exit_s,
        _jobid_s=c("JobID"),
    )
    naive = {
        t: pl.col(f"_{t}_s").str.to_datetime(ISO_FMT, strict=False, time_unit="us") for t in TIMES
    }
    epoch = {
        t: pl.when(pl.col(f"_{t}_s").str.contains(r"^\d+$")).then(
            pl.from_epoch(pl.col(f"_{t}_s").cast(pl.Int64, strict=False), time_unit="s")
        )
        for t in TIMES
    }
    stage2 = stage1.with_columns(
        **{f"_{t}_naive": naive[t] for t in TIMES}, **{f"_{t}_epoch": epoch[t] for t in TIMES}
    )

    def utc(t: str) -> pl.Expr:
        e = pl.col(f"_{t}_epoch").dt.replace_time_zone("UTC").cast(schema.UTC_TIME)
        if tz is None:
            return e
        local = pl.col(f"_{t}_naive").dt.replace_time_zone(
            tz, ambiguous="earliest", non_existent="null"
        )
        return pl.coalesce(e, local.dt.convert_time_zone("UTC").cast(schema.UTC_TIME))

    out = stage2.with_columns(
        **{f"{t}_time": utc(t) for t in TIMES},
        **{f"_{t}_iso": pl.col(f"_{t}_naive").is_not_null() for t in TIMES},
    )
    is_step = pl.col("step").is_not_null()
    checks: list[tuple[pl.Expr, pl.Expr]] = [
        (pl.col("job_id").is_null() | (pl.col("job_id").str.strip_chars() == "")
         | (pl.col("step") == "") | ~pl.col("_jobid_s").str.contains(r"^\s*[^.]+(\.[^.]+)?\s*$"),
         pl.format("field JobID: malformed job id '{}'", pl.col("_jobid_s").fill_null(""))),
        (pl.col("cluster").is_null(),
         pl.lit("field Cluster: empty, and no cluster= was given")),
        (pl.col("state").is_null(),
         pl.format("field State: unknown job state '{}'", pl.col("state_raw").fill_null(""))),
        (pl.col("_exit_s").is_not_null() & pl.col("exit_code").is_null(),
         pl.format("field ExitCode: expected code:signal, got '{}'", pl.col("_exit_s"))),
        (~is_step & pl.col("_submit_s").is_null(),
         pl.lit("field Submit: missing submit time")),
        (pl.col("_submit_s").is_not_null() & pl.col("submit_time").is_null(),
         pl.format("field Submit: cannot read time '{}'", pl.col("_submit_s"))),
        (pl.col("_start_s").is_not_null() & pl.col("start_time").is_null(),
         pl.format("field Start: cannot read time '{}'", pl.col("_start_s"))),
        (pl.col("_end_s").is_not_null() & pl.col("end_time").is_null(),
         pl.format("field End: cannot read time '{}'", pl.col("_end_s"))),
        (pl.col("_limit_bad"), pl.lit("field Timelimit: cannot read duration")),
        (pl.col("n_nodes_raw").is_not_null()
         & pl.col("n_nodes_raw").cast(pl.UInt32, strict=False).is_null(),
         pl.format("field NNodes: not a count '{}'", pl.col("n_nodes_raw"))),
        (pl.col("priority_raw").is_not_null()
         & pl.col("priority_raw").cast(pl.Int64, strict=False).is_null(),
         pl.format("field Priority: not an integer '{}'", pl.col("priority_raw"))),
        (~is_step & (pl.col("submit_time") > pl.col("start_time")),
         pl.format("Submit {} is after Start {} (impossible order; not fixed)",
                   pl.col("_submit_s"), pl.col("_start_s"))),
        (pl.col("start_time") > pl.col("end_time"),
         pl.format("End {} is before Start {} (impossible order; not fixed)",
                   pl.col("_end_s"), pl.col("_start_s"))),
        (pl.col("nodelist").is_not_null()
         & pl.col("nodelist").str.contains(r"[^\w\-.\[\],]"),
         pl.format("field NodeList: not a hostlist '{}'", pl.col("nodelist"))),
    ]  # fmt: skip
    flag_names = [f"__check{i}" for i in range(len(checks))]
    out = (
        out.with_columns(
            [c.fill_null(False).alias(n) for (c, _), n in zip(checks, flag_names, strict=True)]
        )
        .with_columns(
            __bad=pl.any_horizontal(flag_names),
            __naive=pl.any_horizontal("_submit_iso", "_start_iso", "_end_iso"),
        )
        .collect()
    )
    naive = bool(out.get_column("__naive").any())
    out, hl_errors = hostlist.expand_column(out)
    if hl_errors:
        flag_names.append("__hostlist")
        checks.append(
            (
                pl.lit(True),
                pl.lit("field NodeList: ")
                + pl.col("nodelist").replace_strict(hl_errors, default="", return_dtype=pl.String),
            )
        )
        out = out.with_columns(
            __hostlist=pl.col("nodelist").is_in(list(hl_errors)).fill_null(False)
        )
        out = out.with_columns(__bad=pl.col("__bad") | pl.col("__hostlist"))
    bad = out.filter("__bad")
    if bad.height:
        reason = pl.coalesce(
            [pl.when(n).then(msg) for n, (_, msg) in zip(flag_names, checks, strict=True)]
        )
        bad = bad.select("line_no", reason=reason)
        if "line" in recs.columns:
            raw = recs.select("line_no", raw=pl.col("line"))
            bad = bad.join(raw, on="line_no", how="left").select("line_no", "raw", "reason")
        else:  # fast path: the raw lines are fetched afterwards (see read_sacct)
            bad = bad.select("line_no", raw=pl.lit(None, pl.String), reason="reason")
    else:
        bad = pl.DataFrame(schema={"line_no": pl.Int64, "raw": pl.String, "reason": pl.String})
    good = (out.filter(~pl.col("__bad")) if bad.height else out).select(
        "line_no", "cluster", "job_id", "step", "name", "user", "account", "partition", "qos",
        "submit_time", "start_time", "end_time", "state", "exit_code", "exit_signal",
        n_nodes=pl.coalesce(pl.col("n_nodes_raw").cast(pl.UInt32, strict=False),
                            pl.col("nodes").list.len().cast(pl.UInt32)),
        n_accelerators=pl.col("n_accelerators").fill_null(0),
        nodes="nodes",
        time_limit_s="time_limit_s",
        priority=pl.col("priority_raw").cast(pl.Int64, strict=False),
    )  # fmt: skip
    return good, bad, naive
