"""Reader of canonical CSV / JSONL files: ``health_events``, ``component_failures``,
``inventory``.

This is the door for sources without a dedicated reader (ticket systems, custom health
checks, other schedulers) and the format the simulators write. Columns are the data
contract's (``reliability.schema``); extra columns are an error, missing nullable ones are
filled with null, and ``cluster`` may come from the ``cluster=`` option. Times are ISO 8601
with ``Z`` or an offset; naive times need ``tz=``; plain numbers are epoch seconds.
Each bad row is quarantined with the column and the problem.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import polars as pl

from reliability import schema
from reliability.errors import IngestError
from reliability.ingest._common import ReadResult, quarantine_frame, read_bytes, read_lines

__all__ = ["CANONICAL_TABLES", "detect_table", "read_health"]

CANONICAL_TABLES = ("health_events", "component_failures", "inventory")


def detect_table(columns: list[str]) -> str:
    """Which canonical table a header describes (by its distinctive columns)."""
    cols = set(columns)
    if {"component_type", "failed_at"} <= cols:
        return "component_failures"
    if {"component_type", "in_service"} <= cols:
        return "inventory"
    if {"node", "time", "component"} <= cols:
        return "health_events"
    raise ValueError(
        "columns match no canonical table (health_events needs node,time,component; "
        "component_failures needs component_type,failed_at; inventory needs component_type,in_service)"
    )


def _csv_rows(data: bytes, src: str) -> tuple[list[str], list[tuple[int, str, list[str]]]]:
    text = data.decode("utf-8", errors="replace")
    reader = csv.reader(io.StringIO(text, newline=""))
    rows: list[tuple[int, str, list[str]]] = []
    header: list[str] | None = None
    physical = text.split("\n")
    start = 1
    try:
        for rec in reader:
            end = reader.line_num
            if header is None:
                header = [h.strip() for h in rec]
            elif rec and any(v.strip() for v in rec):
                rows.append((start, "\n".join(physical[start - 1 : end]), rec))
            start = end + 1
    except csv.Error as exc:
        raise IngestError(src, f"malformed CSV: {exc}", line=reader.line_num) from None
    if header is None:
        raise IngestError(src, "empty file")
    return header, rows


def _time(expr: pl.Expr, tz: str | None) -> pl.Expr:
    v = (
        expr.str.strip_chars()
        .str.replace(r"^(\d{4}-\d\d-\d\d) ", "${1}T")
        .str.replace(r"Z$", "+00:00")
    )
    aware = v.str.to_datetime(
        "%Y-%m-%dT%H:%M:%S%.f%:z", strict=False, time_unit="us", time_zone="UTC"
    )
    epoch = pl.when(v.str.contains(r"^\d+(\.\d+)?$")).then(
        (v.cast(pl.Float64, strict=False) * 1e6)
        .cast(pl.Int64)
        .cast(pl.Datetime("us"))
        .dt.replace_time_zone("UTC")
    )
    naive = v.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f", strict=False, time_unit="us")
    if tz is not None:
        naive_utc = naive.dt.replace_time_zone(
            tz, ambiguous="earliest", non_existent="null"
        ).dt.convert_time_zone("UTC")
    else:
        naive_utc = pl.lit(None, schema.UTC_TIME)
    return pl.coalesce(
        aware.cast(schema.UTC_TIME), epoch.cast(schema.UTC_TIME), naive_utc.cast(schema.UTC_TIME)
    )


def read_health(
    path: str | Path,
    *,
    table: str | None = None,
    cluster: str | None = None,
    tz: str | None = None,
) -> ReadResult:
    """Read a canonical CSV (``.csv``) or JSON-lines (``.jsonl``/``.ndjson``) file.

    Parameters
    ----------
    table : ``health_events``, ``component_failures`` or ``inventory``; detected from the
        columns when None
    cluster : fills a missing or empty ``cluster`` column
    tz : zone of naive times (ISO strings without offset)
    """
    src = str(path)
    name = Path(src).name.lower().removesuffix(".gz")
    data = read_bytes(path)
    records: list[tuple[int, str, dict[str, object] | None, str | None]] = []
    if name.endswith((".jsonl", ".ndjson", ".json")):
        lines, _ = read_lines(path, data)
        columns: set[str] = set()
        for no, line in lines.iter_rows():
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                records.append((no, line, None, f"not valid JSON: {exc.msg} at column {exc.colno}"))
                continue
            if not isinstance(obj, dict):
                records.append((no, line, None, "JSON line is not an object"))
                continue
            columns |= obj.keys()
            records.append((no, line, obj, None))
        header = sorted(columns)
    elif name.endswith(".csv"):
        header, rows = _csv_rows(data, src)
        for no, raw, rec in rows:
            if len(rec) != len(header):
                records.append((no, raw, None, f"{len(rec)} fields, expected {len(header)}"))
            else:
                records.append((no, raw, dict(zip(header, rec, strict=True)), None))
    else:
        raise IngestError(src, "unknown format: expected a .csv or .jsonl/.ndjson file")
    if not records and not header:
        raise IngestError(src, "empty file")
    try:
        table = table or detect_table(header)
    except ValueError as exc:
        raise IngestError(src, str(exc), line=1) from None
    if table not in CANONICAL_TABLES:
        raise IngestError(src, f"table must be one of {CANONICAL_TABLES}, got {table!r}")
    spec = schema.TABLES[table]
    extra = [c for c in header if c not in spec.schema]
    if extra:
        raise IngestError(src, f"column not in the {table} contract", line=1, field=extra[0])
    required = [c for c in spec.schema if c not in spec.nullable and c != "cluster"]
    missing = [c for c in required if c not in header]
    if missing:
        raise IngestError(src, f"required {table} column missing", line=1, field=missing[0])
    good = [(no, raw, obj) for no, raw, obj, why in records if why is None]
    q_no = [no for no, _, _, why in records if why is not None]
    q_raw = [raw for no, raw, _, why in records if why is not None]
    q_why = [str(why) for *_, why in records if why is not None]

    def as_str(v: object) -> str | None:
        if v is None:
            return None
        if isinstance(v, (dict, list)):
            return json.dumps(v)
        s = str(v)
        return None if s == "" else s

    raw_frame = pl.DataFrame(
        {
            "line_no": [g[0] for g in good],
            "raw": [g[1] for g in good],
            **{c: [as_str(g[2].get(c)) for g in good] for c in spec.schema},  # type: ignore[union-attr]
        },
        schema={"line_no": pl.Int64, "raw": pl.String, **dict.fromkeys(spec.schema, pl.String)},
    )
    if cluster is not None:
        raw_frame = raw_frame.with_columns(pl.col("cluster").fill_null(cluster))
    typed: dict[str, pl.Expr] = {}
    checks: list[tuple[pl.Expr, pl.Expr]] = []
    for col, dtype in spec.schema.items():
        c = pl.col(col)
        if dtype == schema.UTC_TIME:
            e = _time(c, tz)
        elif isinstance(dtype, pl.Enum):
            e = c.str.strip_chars().cast(dtype, strict=False)
        else:
            e = c.cast(dtype, strict=False)
        typed[col] = e
        if isinstance(dtype, pl.Enum):
            what = "allowed: " + ", ".join(dtype.categories.to_list())
        elif dtype == schema.UTC_TIME:
            what = "an ISO-8601 time with offset, or epoch seconds"
        else:
            what = str(dtype)
        checks.append(
            (
                c.is_not_null() & pl.col(f"__{col}").is_null(),
                pl.format(f"column {col}: cannot read '{{}}' as {what}", c),
            )
        )
        if col not in spec.nullable:
            checks.append(
                (c.is_null(), pl.lit(f"column {col}: missing value in a required column"))
            )
    out = raw_frame.with_columns(**{f"__{k}": v for k, v in typed.items()})
    if tz is None:
        naive = pl.any_horizontal(
            [
                pl.col(c).str.contains(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?$")
                for c, d in spec.schema.items()
                if d == schema.UTC_TIME
            ]
        )
        if out.select(naive.any()).item():
            raise IngestError(
                src, "times without a UTC offset: pass tz= or write them with Z/offset"
            )
    out = out.with_columns(reason=pl.coalesce([pl.when(cond).then(msg) for cond, msg in checks]))
    for a, b_ in (("failed_at", "repaired_at"), ("in_service", "out_of_service")):
        if a in spec.schema and b_ in spec.schema:
            out = out.with_columns(
                reason=pl.coalesce(
                    "reason",
                    pl.when(pl.col(f"__{b_}") < pl.col(f"__{a}")).then(
                        pl.lit(f"{b_} is before {a} (impossible order; not fixed)")
                    ),
                )
            )
    bad = out.filter(pl.col("reason").is_not_null())
    frame = out.filter(pl.col("reason").is_null()).select(
        [pl.col(f"__{c}").alias(c) for c in spec.schema]
    )
    q = quarantine_frame(
        src,
        q_no + bad.get_column("line_no").to_list(),
        q_raw + bad.get_column("raw").to_list(),
        q_why + bad.get_column("reason").to_list(),
    ).sort("line_no")
    n = len(records)
    return ReadResult(src, {table: frame}, q, n, n - q.height, [])
