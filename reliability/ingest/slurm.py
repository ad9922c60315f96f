"""Reader for Slurm accounting exports: ``sacct --parsable2`` / ``--parsable``.

Any subset and order of fields, with or without ``--duplicates``; a header line is expected
(``--noheader`` output needs ``fields=``). Allocation records become ``jobs`` rows (one per
attempt); step records (``.batch``, ``.extern``, ``.0``, ``45+1.0``) become ``job_steps`` rows.
Everything is parsed with polars expressions; only records that need repair (``|`` or newlines
in job names) go through Python.

Times: sacct prints local time without a zone, so a time zone must be given (``tz=``);
``SLURM_TIME_FORMAT=%s`` (epoch) output needs none. Ambiguous local times (DST fall-back)
are read as the earlier instant; non-existent ones (spring-forward) are quarantined.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import polars as pl

from reliability import schema
from reliability.errors import IngestError
from reliability.ingest import hostlist
from reliability.ingest._common import (
    NULL_SENTINELS,
    ReadResult,
    quarantine_frame,
    read_bytes,
    read_lines,
)
from reliability.ingest._delimited import split_delimited

__all__ = ["FIELD_PATTERNS", "RECOMMENDED_FORMAT", "REQUIRED_FIELDS", "TEXT_FIELDS", "read_sacct"]

#: Fields without which a jobs table cannot be built (sacct's default and ``--long`` formats
#: print no times at all, so they cannot say when anything failed).
REQUIRED_FIELDS = ("JobID", "State", "Submit")
#: The export we recommend (all fields the data contract uses, plus the free-text ones last).
RECOMMENDED_FORMAT = (
    "JobID,JobIDRaw,Cluster,Partition,Account,User,QOS,Priority,State,ExitCode,Submit,Start,End,"
    "Timelimit,NNodes,AllocTRES,ReqTRES,NodeList,JobName"
)
#: Fields the reader uses (others are read past; they do not reach the canonical tables).
USED_FIELDS = frozenset(
    {
        "JobID", "JobName", "User", "Account", "Partition", "QOS", "State", "ExitCode", "Submit",
        "Start", "End", "Timelimit", "TimelimitRaw", "NNodes", "AllocNodes", "AllocTRES",
        "ReqTRES", "AllocGRES", "ReqGRES", "Gres", "NodeList", "Priority", "Cluster",
    }
)  # fmt: skip
#: Free-text fields (user-controlled; may contain ``|`` or newlines), most likely first.
TEXT_FIELDS = (
    "JobName", "SubmitLine", "Comment", "AdminComment", "SystemComment", "Constraints",
    "WorkDir", "Extra", "Container", "MCSLabel", "StdOut", "StdErr", "StdIn", "FailedNode",
)  # fmt: skip

_TIME = r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d|\d+|Unknown|None|)"
_DUR = r"((\d+-)?(\d+:)?\d+:\d+(\.\d+)?|UNLIMITED|Partition_Limit|INVALID|)"
_COUNT = r"(\d*|UNLIMITED|Partition_Limit|INVALID)"
_IDENT = r"[\w\-.$@]*"
_TRES = r"[\w/:=,.\-]*"
_MEM = r"([\d.]+[KMGTPkmgtp]?[cn]?|)"
#: Shape of each structured field; used to choose among repairs of delimiter collisions.
FIELD_PATTERNS: dict[str, re.Pattern[str]] = {
    name: re.compile(p)
    for name, p in {
        "JobID": r"\d+(_(\d+|\[[^\]|]*\]))?(\+\d+)?(\.[\w-]+)?",
        "JobIDRaw": r"\d+(\+\d+)?(\.[\w-]+)?",
        "User": _IDENT, "Group": _IDENT, "UID": r"\d*", "GID": r"\d*",
        "Account": _IDENT, "Partition": r"[\w\-.,]*", "QOS": r"[\w\-.,]*", "QOSRAW": r"\d*",
        "State": r"([A-Z_]+( by -?\d+)?\+?)?",
        "ExitCode": r"(-?\d+:-?\d+)?", "DerivedExitCode": r"(-?\d+:-?\d+)?",
        "Submit": _TIME, "Eligible": _TIME, "Start": _TIME, "End": _TIME,
        "Elapsed": _DUR, "Suspended": _DUR, "Timelimit": _DUR, "TotalCPU": _DUR,
        "UserCPU": _DUR, "SystemCPU": _DUR, "CPUTime": _DUR, "AveCPU": _DUR, "MinCPU": _DUR,
        "ElapsedRaw": _COUNT, "TimelimitRaw": _COUNT, "CPUTimeRAW": _COUNT, "NNodes": _COUNT,
        "NCPUS": _COUNT, "AllocCPUS": _COUNT, "ReqCPUS": _COUNT, "NTasks": _COUNT,
        "AllocNodes": _COUNT, "ReqNodes": _COUNT, "Priority": _COUNT, "DBIndex": _COUNT,
        "ReservationId": _COUNT,
        "NodeList": r"([\w\-.\[\],]*|None assigned)",
        "AllocTRES": _TRES, "ReqTRES": _TRES, "TRESUsageInTot": _TRES, "TRESUsageInMax": _TRES,
        "TRESUsageOutTot": _TRES, "ReqMem": _MEM, "MaxRSS": _MEM, "AveRSS": _MEM,
        "MaxVMSize": _MEM, "Cluster": _IDENT, "Flags": r"[\w,]*", "Layout": r"[\w\-]*",
        "MaxRSSNode": r"[\w\-.]*", "Reservation": r"[\w\-.]*", "WCKey": r"\*?[\w\-.]*",
        "WorkDir": r"(/.*)?",
    }.items()
}  # fmt: skip

_HEADER_FIRST = re.compile(r"(?i)^jobid(raw)?$")
_STATE_SUFFIX = r"( by -?\d+)?\+?$"
_JOBID = r"^([^.]+)(?:\.(.+))?$"
_DURATION = r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)(?:\.\d+)?$"
_NO_LIMIT = ("UNLIMITED", "Partition_Limit", "INVALID")
_ISO_FMT = "%Y-%m-%dT%H:%M:%S"
_TIMES = ("submit", "start", "end")
#: Records parsed per slice (bounds the temporary memory of a large export).
CHUNK_ROWS = 100_000
_STEP_COLS = list(schema.TABLES["job_steps"].schema)
_ALLOC_COLS = [
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


def _time(expr: pl.Expr, tz: str | None) -> tuple[pl.Expr, pl.Expr]:
    """(UTC datetime, is-naive-ISO flag) from a sacct time string."""
    v = _nulled(expr)
    iso = v.str.to_datetime(_ISO_FMT, strict=False, time_unit="us")
    epoch = pl.when(v.str.contains(r"^\d+$")).then(
        pl.from_epoch(v.cast(pl.Int64, strict=False), time_unit="s")
    )
    epoch_utc = epoch.dt.replace_time_zone("UTC")
    if tz is None:
        iso_utc = pl.lit(None, schema.UTC_TIME)
    else:
        iso_utc = iso.dt.replace_time_zone(
            tz, ambiguous="earliest", non_existent="null"
        ).dt.convert_time_zone("UTC")
    return pl.coalesce(
        epoch_utc.cast(schema.UTC_TIME), iso_utc.cast(schema.UTC_TIME)
    ), iso.is_not_null()


def _duration_s(expr: pl.Expr) -> pl.Expr:
    """Seconds from ``[D-][HH:]MM:SS[.mmm]``; null for sentinels and UNLIMITED."""
    g = expr.str.extract_groups(_DURATION)
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


def _find_segments(
    lines: pl.DataFrame, fields: Sequence[str] | None, path: str
) -> list[tuple[list[str], bool, pl.DataFrame]]:
    """Split the file at header lines (mixed exports); return (fields, trailing, data lines)."""
    first = pl.col("line").str.split_exact("|", 1).struct.field("field_0").str.strip_chars()
    marked = lines.with_columns(
        is_header=first.str.contains(_HEADER_FIRST.pattern, strict=True)
        & pl.col("line").str.contains("|", literal=True),
        is_skip=(pl.col("line").str.strip_chars() == "") | pl.col("line").str.starts_with("#"),
    ).with_columns(segment=pl.col("is_header").cum_sum())
    headers = marked.filter("is_header").select("line_no", "line", "segment").rows()
    segments: list[tuple[list[str], bool, pl.DataFrame]] = []
    data = marked.filter(~pl.col("is_header") & ~pl.col("is_skip"))
    seg0 = data.filter(pl.col("segment") == 0)
    if seg0.height:
        if fields is None:
            ln = seg0.get_column("line_no")[0]
            first_line = seg0.get_column("line")[0]
            for sep in (",", "\t", ";", " "):
                if re.match(rf"(?i)^\s*jobid(raw)?\s*{re.escape(sep)}", first_line):
                    raise IngestError(
                        path, f"wrong delimiter {sep!r}: expected '|' (sacct --parsable2)", line=ln
                    )
            raise IngestError(
                path,
                "no sacct header line (the first field should be JobID); for --noheader "
                "output pass fields=[...] in the --format order",
                line=ln,
            )
        sample = seg0.get_column("line")[0]
        trailing = sample.endswith("|") and sample.count("|") == len(fields)
        segments.append((list(fields), trailing, seg0.select("line_no", "line")))
    for line_no, text, seg in headers:
        names = [f.strip() for f in text.split("|")]
        trailing = names[-1] == ""
        if trailing:
            names = names[:-1]
        seen: dict[str, int] = {}
        for k, nm in enumerate(names):
            if not nm:
                raise IngestError(path, "empty field name in header", line=line_no)
            if nm in seen:
                seen[nm] += 1
                names[k] = f"{nm}_{seen[nm]}"
            else:
                seen[nm] = 1
        part = data.filter(pl.col("segment") == seg).select("line_no", "line")
        if part.height:
            segments.append((names, trailing, part))
    if not segments and not headers and lines.height and fields is None:
        raise IngestError(path, "no sacct header line and no data")
    return segments


def _parse_segment(
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
    limit_bad = limit.is_not_null() & ~limit.is_in(_NO_LIMIT) & limit_parsed.is_null()
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
    state_raw = c("State").str.strip_chars().str.replace(_STATE_SUFFIX, "")
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
        t: pl.col(f"_{t}_s").str.to_datetime(_ISO_FMT, strict=False, time_unit="us") for t in _TIMES
    }
    epoch = {
        t: pl.when(pl.col(f"_{t}_s").str.contains(r"^\d+$")).then(
            pl.from_epoch(pl.col(f"_{t}_s").cast(pl.Int64, strict=False), time_unit="s")
        )
        for t in _TIMES
    }
    stage2 = stage1.with_columns(
        **{f"_{t}_naive": naive[t] for t in _TIMES}, **{f"_{t}_epoch": epoch[t] for t in _TIMES}
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
        **{f"{t}_time": utc(t) for t in _TIMES},
        **{f"_{t}_iso": pl.col(f"_{t}_naive").is_not_null() for t in _TIMES},
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
    out, hl_errors = _expand_nodes(out)
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


def _expand_nodes(frame: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, str]]:
    """Add ``nodes`` (list[str]) from ``nodelist``.

    Each distinct hostlist is expanded once (in polars for the common forms, with
    :func:`hostlist.expand` for the rest) and gathered back by index. Returns the frame and
    {hostlist: error} for expressions that are not valid.
    """
    col = frame.get_column("nodelist")
    distinct = col.unique().drop_nulls()
    bracketed = distinct.filter(distinct.str.contains("[", literal=True))
    plain = distinct.filter(~distinct.str.contains("[", literal=True))
    mapping, errors = hostlist_table(bracketed)
    table = pl.concat(
        [pl.DataFrame({"nodelist": plain, "_expanded": plain.str.split(",")}), mapping]
    )
    keys = table.get_column("nodelist")
    idx = col.replace_strict(
        keys, pl.int_range(len(keys), eager=True), default=None, return_dtype=pl.Int64
    )
    empty = pl.Series([[]], dtype=pl.List(pl.String))
    values = pl.concat([table.get_column("_expanded"), empty])
    nodes = values.gather(idx.fill_null(len(keys)))  # unknown / null hostlist -> []
    return frame.with_columns(nodes=nodes), errors


_SIMPLE_HOSTLIST = (
    r"^[\w\-.]+(\[\d+(-\d+)?(,\d+(-\d+)?)*\])?(,[\w\-.]+(\[\d+(-\d+)?(,\d+(-\d+)?)*\])?)*$"
)


def hostlist_table(exprs: pl.Series) -> tuple[pl.DataFrame, dict[str, str]]:
    """Expand distinct hostlist expressions: (frame ``nodelist`` -> ``_expanded``, errors).

    Expressions made of ``prefix[ranges]`` parts (one bracket group per part, the common
    case) are expanded with polars; others go through :func:`hostlist.expand`. Both follow
    the same zero-padding rule, checked by the tests.
    """
    exprs = exprs.drop_nulls()
    simple = exprs.filter(exprs.str.contains(_SIMPLE_HOSTLIST))
    other = exprs.filter(~exprs.str.contains(_SIMPLE_HOSTLIST))
    out: list[pl.DataFrame] = []
    if simple.len():
        parts = (
            pl.DataFrame({"nodelist": simple})
            .with_row_index("eid")
            .with_columns(part=pl.col("nodelist").str.extract_all(r"[\w\-.]+(?:\[[^\]]*\])?"))
            .explode("part")
            .with_row_index("pid")
            .with_columns(
                prefix=pl.col("part").str.extract(r"^([^\[]+)", 1),
                body=pl.col("part").str.extract(r"\[([^\]]*)\]", 1),
            )
        )
        plain_parts = parts.filter(pl.col("body").is_null()).select("eid", "pid", host="part")
        ranges = (
            parts.filter(pl.col("body").is_not_null())
            .with_columns(item=pl.col("body").str.split(","))
            .explode("item")
            .with_row_index("rid")
            .with_columns(
                lo=pl.col("item").str.extract(r"^(\d+)", 1),
                hi=pl.coalesce(pl.col("item").str.extract(r"-(\d+)$", 1), pl.col("item").str.extract(r"^(\d+)", 1)),
            )
            .with_columns(
                width=pl.when(pl.col("lo").str.starts_with("0") | (pl.col("lo").str.len_chars() == pl.col("hi").str.len_chars()))
                .then(pl.col("lo").str.len_chars())
                .otherwise(0),
                a=pl.col("lo").cast(pl.Int64),
                b=pl.col("hi").cast(pl.Int64),
            )
        )  # fmt: skip
        bad_eids = ranges.filter(
            (pl.col("b") < pl.col("a")) | (pl.col("b") - pl.col("a") > 1_000_000)
        )
        bad_eids = set(bad_eids.get_column("eid").to_list())
        hosts = (
            ranges.filter(~pl.col("eid").is_in(list(bad_eids)))
            .with_columns(n=pl.int_ranges("a", pl.col("b") + 1))
            .explode("n")
            .select(
                "eid",
                "pid",
                "rid",
                host=pl.col("prefix") + pl.col("n").cast(pl.String).str.zfill(pl.col("width")),
            )
        )
        allh = pl.concat(
            [plain_parts.select("eid", "pid", rid=pl.lit(0, pl.UInt32), host="host"), hosts],
            how="vertical_relaxed",
        )
        table = (
            allh.filter(~pl.col("eid").is_in(list(bad_eids)))
            .sort("eid", "pid", "rid", maintain_order=True)
            .group_by("eid", maintain_order=True)
            .agg(_expanded=pl.col("host"))
            .join(parts.select("eid", "nodelist").unique("eid"), on="eid")
            .select("nodelist", "_expanded")
        )
        out.append(table)
        if bad_eids:
            other = pl.concat([other, simple.gather(sorted(bad_eids))])
    errors: dict[str, str] = {}
    py_keys: list[str] = []
    py_vals: list[list[str]] = []
    for expr in other.to_list():
        try:
            py_vals.append(hostlist.expand(expr))
            py_keys.append(expr)
        except hostlist.HostlistError as exc:
            errors[expr] = str(exc)
    if py_keys:
        out.append(pl.DataFrame({"nodelist": py_keys, "_expanded": py_vals},
                                schema={"nodelist": pl.String, "_expanded": pl.List(pl.String)}))  # fmt: skip
    if not out:
        return pl.DataFrame(schema={"nodelist": pl.String, "_expanded": pl.List(pl.String)}), errors
    return pl.concat(out), errors


def read_sacct(
    path: str | Path,
    *,
    cluster: str | None = None,
    tz: str | None = None,
    fields: Sequence[str] | None = None,
) -> ReadResult:
    """Read a ``sacct --parsable2`` (or ``--parsable``) export into ``jobs`` and ``job_steps``.

    ``sacct --json`` output is recognised by its first character and read by
    :func:`reliability.ingest.slurm_json.read_sacct_json`.

    Parameters
    ----------
    path : the export (plain or gzip)
    cluster : cluster name, used where the export has no ``Cluster`` field or it is empty
    tz : IANA time zone the times were printed in (sacct prints local time without a zone);
        not needed for ``SLURM_TIME_FORMAT=%s`` output
    fields : field names in ``--format`` order, for ``--noheader`` output

    Returns
    -------
    ReadResult with ``jobs`` (one row per allocation record = attempt) and ``job_steps``.
    Attempts of a job (``--duplicates``) are numbered 0, 1, ... by start time.
    """
    if fields is None and _head(path).lstrip()[:1] == b"{":
        from reliability.ingest.slurm_json import read_sacct_json

        return read_sacct_json(path, cluster=cluster)
    try:
        return _read_sacct(path, cluster=cluster, tz=tz, fields=fields, allow_stream=True)
    except _StreamFailed:
        # a line the byte counts could not rule out (e.g. one too long, one too short)
        return _read_sacct(path, cluster=cluster, tz=tz, fields=fields, allow_stream=False)


def _head(path: str | Path, n: int = 4096) -> bytes:
    """The first ``n`` bytes of a file (decompressed if gzip); b"" if unreadable."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(n)
        if head[:2] == b"\x1f\x8b":
            with gzip.open(path, "rb") as gz:
                head = gz.read(n)
    except (OSError, EOFError):
        return b""
    return head


class _StreamFailed(Exception):
    """The streaming fast path met a malformed line; read again line by line."""


def _guarded(batches: Iterator[pl.DataFrame]) -> Iterator[pl.DataFrame]:
    """Re-raise polars' refusal of a ragged line as :class:`_StreamFailed`."""
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except pl.exceptions.PolarsError as exc:
            raise _StreamFailed(str(exc)) from exc
        yield batch


def _read_sacct(
    path: str | Path,
    *,
    cluster: str | None,
    tz: str | None,
    fields: Sequence[str] | None,
    allow_stream: bool,
) -> ReadResult:
    src = str(path)
    notes: list[str] = []
    stream = None
    if allow_stream and fields is None and Path(path).is_file():
        try:
            stream = _stream_records(Path(path))
        except OSError as exc:
            raise IngestError(src, f"cannot read file: {exc.strerror or exc}") from None
    fast: tuple[list[str], bool, pl.DataFrame] | None = None
    if stream is not None:
        segments = [(stream[0], stream[1], None)]
    else:
        data = read_bytes(path)
        if not data or data.isspace():
            raise IngestError(
                src, "empty file (sacct prints a header line even when no job matches)"
            )
        fast = _fast_records(data) if fields is None else None
        if fast is not None:
            segments = [fast]
        else:
            lines, notes = read_lines(path, data)
            segments = _find_segments(lines, fields, src)
        del data
    alloc_parts: list[pl.DataFrame] = []
    step_parts: list[pl.DataFrame] = []
    n_good = 0
    replaced = False
    bads: list[pl.DataFrame] = []
    naive = False
    for names, trailing, seg in segments:
        missing = [f for f in REQUIRED_FIELDS if f not in names]
        if missing:
            raise IngestError(
                src,
                "required sacct field missing from the header; export with "
                f"sacct --parsable2 --duplicates --format={RECOMMENDED_FORMAT}",
                field=missing[0],
                line=max(int(seg.get_column("line_no")[0]) - 1, 1)
                if seg is not None and seg.height
                else 1,
            )
        if "Cluster" not in names and cluster is None:
            raise IngestError(
                src, "the export has no Cluster field: pass cluster=", field="Cluster"
            )
        if fast is None and stream is None:
            split = split_delimited(
                seg, names, trailing=trailing, text_fields=TEXT_FIELDS, patterns=FIELD_PATTERNS
            )
            bads.append(quarantine_frame(src, split.bad_line_no, split.bad_raw, split.bad_reason)
                        .select("line_no", "raw", "reason"))  # fmt: skip
            seg = split.records
        # parse in slices so that the temporary columns of only one slice are alive at a time
        chunks = _guarded(stream[3]) if stream is not None else seg.iter_slices(n_rows=CHUNK_ROWS)
        for chunk in chunks:
            good, bad, seg_naive = _parse_segment(
                chunk, names, trailing=trailing, tz=tz, cluster=cluster
            )
            is_step = good.get_column("step").is_not_null()
            alloc_parts.append(good.filter(~is_step).select(_ALLOC_COLS))
            step_parts.append(good.filter(is_step).select(_STEP_COLS))
            n_good += good.height
            replaced |= bool(good.get_column("name").str.contains("\ufffd", literal=True).any())
            bads.append(bad)
            naive |= seg_naive
            del good
    if len(segments) > 1:
        notes.append(f"{len(segments)} header lines: read as {len(segments)} concatenated exports")
    if naive and tz is None:
        raise IngestError(
            src,
            "sacct prints local times without a zone: pass tz= (e.g. 'UTC' or the "
            "cluster's zone), or export with SLURM_TIME_FORMAT=%s",
            field="Submit",
        )
    bad = (
        pl.concat(bads)
        if bads
        else pl.DataFrame(schema={"line_no": pl.Int64, "raw": pl.String, "reason": pl.String})
    )
    if (fast is not None or stream is not None) and bad.height:
        # the fast paths kept no raw text: fetch those lines
        if stream is not None:
            raw = _fetch_lines(Path(path), bad.get_column("line_no").to_list())
        else:
            lines, _ = read_lines(path)
            raw = lines.filter(pl.col("line_no").is_in(bad.get_column("line_no").implode()))
        bad = bad.drop("raw").join(raw.rename({"line": "raw"}), on="line_no", how="left")
        bad = bad.select("line_no", pl.col("raw").fill_null(""), "reason")
    q = quarantine_frame(
        src, bad["line_no"].to_list(), bad["raw"].to_list(), bad["reason"].to_list()
    ).sort("line_no")
    if n_good == 0:
        tables = {"jobs": schema.empty("jobs"), "job_steps": schema.empty("job_steps")}
        return ReadResult(src, tables, q, q.height, 0, notes)
    if stream is not None and n_good + q.height != stream[2]:
        raise _StreamFailed(f"read {n_good + q.height} records, expected {stream[2]}")
    if replaced and (fast is not None or stream is not None):
        notes.append("input is not valid UTF-8: undecodable bytes were replaced by U+FFFD")
    if not any("TRES" in n or "GRES" in n for names, _, _ in segments for n in names):
        notes.append("no AllocTRES/ReqTRES/GRES field: n_accelerators set to 0 (GPU count unknown)")
    allocs = pl.concat(alloc_parts) if len(alloc_parts) > 1 else alloc_parts[0]
    steps = pl.concat(step_parts) if len(step_parts) > 1 else step_parts[0]
    del alloc_parts, step_parts
    # attempts: 0 for a job id seen once (the common case); numbered by start time otherwise
    attempt = pl.repeat(0, allocs.height, dtype=pl.UInt16, eager=True).alias("attempt")
    dup = allocs.select(pl.struct("cluster", "job_id").is_duplicated()).to_series()
    if dup.any():
        numbered = (
            allocs.with_row_index("__i")
            .filter(dup)
            .sort("cluster", "job_id", "start_time", "submit_time", "line_no", nulls_last=True)
            .select("__i", n=pl.int_range(pl.len(), dtype=pl.UInt16).over("cluster", "job_id"))
        )
        attempt = attempt.scatter(numbered.get_column("__i"), numbered.get_column("n"))
    jobs = allocs.with_columns(attempt, topology=pl.lit(None, pl.String)).select(
        list(schema.TABLES["jobs"].schema)
    )
    return ReadResult(src, {"jobs": jobs, "job_steps": steps}, q, n_good + q.height, n_good, notes)


def _fast_records(data: bytes) -> tuple[list[str], bool, pl.DataFrame] | None:
    """Parse a clean export straight into columns with polars' CSV reader, or return None.

    Clean means: one header line first, no NUL bytes, and every line with exactly the
    header's number of separators (proved by counting: no line has more, since polars refuses
    ragged lines, and the total equals lines x separators; a blank or comment line breaks it).
    Anything else goes through the line-by-line path, which repairs and quarantines.
    """
    nl = data.find(b"\n")
    header = data[: nl if nl >= 0 else len(data)].decode("utf-8", errors="replace").rstrip("\r")
    if not _HEADER_FIRST.match(header.split("|", 1)[0].strip()) or "|" not in header:
        return None
    # Blank, comment or split lines fail the counts below; NUL bytes are left to the slow path.
    if b"\x00" in data:
        return None
    names = header.split("|")
    trailing = names[-1] == ""
    if trailing:
        names = names[:-1]
    if len(set(names)) != len(names) or not all(n.strip() == n and n for n in names):
        return None
    if data.count(header.encode()) != 1:
        return None
    try:
        frame = pl.read_csv(
            data, separator="|", quote_char=None, infer_schema=False, has_header=True,
            encoding="utf8-lossy", truncate_ragged_lines=False,
        )  # fmt: skip
    except (pl.exceptions.ComputeError, pl.exceptions.ShapeError, pl.exceptions.NoDataError):
        return None
    expected = len(names) - 1 + int(trailing)
    n_lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    if n_lines != frame.height + 1 or data.count(b"|") != (frame.height + 1) * expected:
        return None
    if trailing:
        frame = frame.select(frame.columns[: len(names)])
    frame.columns = names
    return (
        names,
        trailing,
        frame.with_row_index("line_no", offset=2).with_columns(pl.col("line_no").cast(pl.Int64)),
    )


def _stream_records(path: Path) -> tuple[list[str], bool, int, Iterator[pl.DataFrame]] | None:
    """Stream a clean, uncompressed export in batches (bounded memory), or return None.

    A first pass reads the file in 16 MB blocks to check that the first line is a header,
    that there are no NUL / 0x1f bytes, and that separators = lines x header separators;
    polars then streams the used columns in batches of :data:`CHUNK_ROWS` records.
    Returns (names, trailing, number of records, batches).
    """
    with path.open("rb") as fh:
        head = fh.read(1 << 16)
        if head[:2] == b"\x1f\x8b":
            return None
        nl = head.find(b"\n")
        if nl < 0:
            return None
        header = head[:nl].decode("utf-8", errors="replace").rstrip("\r")
        if not _HEADER_FIRST.match(header.split("|", 1)[0].strip()) or "|" not in header:
            return None
        names = header.split("|")
        trailing = names[-1] == ""
        if trailing:
            names = names[:-1]
        if len(set(names)) != len(names) or not all(n.strip() == n and n for n in names):
            return None
        fh.seek(0)
        pipes = newlines = 0
        last = b""
        tail = b""
        for block in iter(lambda: fh.read(1 << 24), b""):
            if b"\x00" in block or b"\x1f" in block:
                return None
            if b"\nJobID" in tail + block:
                return None  # concatenated exports: the line-by-line path reads them segment-wise
            tail = block[-16:]
            pipes += block.count(b"|")
            newlines += block.count(b"\n")
            last = block
    n_lines = newlines + (0 if last.endswith(b"\n") else 1)
    expected = len(names) - 1 + int(trailing)
    if pipes != n_lines * expected or n_lines < 2:
        return None
    used = [n for n in names if n in USED_FIELDS]
    lf = pl.scan_csv(
        path, separator="|", quote_char=None, infer_schema=False, has_header=True,
        encoding="utf8-lossy", truncate_ragged_lines=False, row_index_name="line_no",
        row_index_offset=2, new_columns=[*names, ""] if trailing else None,
    ).select(pl.col("line_no").cast(pl.Int64), *used)  # fmt: skip
    return names, trailing, n_lines - 1, iter(lf.collect_batches(chunk_size=CHUNK_ROWS))


def _fetch_lines(path: Path, line_nos: list[int]) -> pl.DataFrame:
    """``line_no``, ``line`` of the given physical lines, streamed (for quarantine text)."""
    lf = pl.scan_csv(
        path, has_header=False, separator="\x1f", quote_char=None, infer_schema=False,
        new_columns=["line"], encoding="utf8-lossy", row_index_name="line_no", row_index_offset=1,
    )  # fmt: skip
    return (
        lf.filter(pl.col("line_no").is_in(line_nos))
        .select(pl.col("line_no").cast(pl.Int64), "line")
        .collect()
    )
