"""Reader of canonical CSV / JSONL files of ``health_events``, ``component_failures``, ``inventory``.

This is the door for sources without a dedicated reader (ticket systems, custom health
checks, other schedulers) and the format the simulators write. Columns are the data
contract's (``reliability.schema``); extra CSV columns are an error, missing nullable ones are
filled with null, and ``cluster`` may come from the ``cluster=`` option. Times are ISO 8601
with ``Z`` or an offset; naive times need ``tz=``; plain numbers are epoch seconds. Times
outside 1990-2200 or after the time of reading (``reliability.ingest._bounds``) are poison values, quarantined.
Each bad row is quarantined with the column and the problem; one bad row never changes
another:

- CSV quoting follows RFC 4180, but a quoted field may run over several lines only until a
  line that is itself a whole record, and only if the lines then form a well-formed record:
  otherwise a stray ``"`` quarantines its own line ("unterminated quote") instead of
  swallowing the rest of the file. A row whose field count is wrong is quarantined by itself.
- JSON lines: each line is one object; invalid JSON, JSON nested deeper than 64 levels, a
  line longer than 1 MiB (not parsed: :mod:`reliability.ingest._json`), a value of the wrong
  type (an object, array or boolean where a string, number or time belongs), a
  non-finite number, or a key outside the contract quarantines that line only. The table of
  a JSONL file is the one most of its lines describe.
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
from collections import Counter
from pathlib import Path

import polars as pl

from reliability import schema
from reliability.errors import Hint, Hinted, IngestError, message_of
from reliability.ingest._bounds import bounds_text, latest_time, out_of_range_time
from reliability.ingest._common import (
    ReadResult,
    check_name_option,
    check_zone,
    clip_lines,
    quarantine_frame,
    read_lines,
)
from reliability.ingest._json import (
    MAX_LINE_BYTES,
    RAW_PREFIX,
    JsonLimitError,
    JsonValueError,
    loads_record,
)
from reliability.ingest._spec import CLUSTER, TZ, FileHead, ReaderOption, ReaderSample, ReaderSpec

__all__ = ["CANONICAL_TABLES", "SPEC", "detect_table", "read_health"]

CANONICAL_TABLES = ("health_events", "component_failures", "inventory")
#: the header of a health_events CSV, for the file-kind signature
_HEALTH_HEADER = {"node", "time", "source", "component", "code", "severity"}


def _is_health_csv(head: FileHead) -> str | None:
    return "a health_events CSV" if head.header >= _HEALTH_HEADER else None


SPEC = ReaderSpec(
    kind="health",
    summary="health_events / component_failures / inventory as CSV or JSON lines",
    options=(
        ReaderOption(
            "table", "name", "canonical table for 'health' files (default: from the columns)"
        ),
        CLUSTER,
        TZ,
    ),
    tables=CANONICAL_TABLES,
    signature=_is_health_csv,
    rank=20,
    # its message quotes an Xid line: a CSV's text is not a kernel log's
    sample=ReaderSample(
        "health.csv",
        "node,time,source,component,code,severity,message\n"
        'n1,2025-01-01T00:00:00Z,kernel_log,gpu,79,critical,"NVRM: Xid (PCI:0000:3b:00): 79, '
        'pid=0, GPU has fallen off the bus."\n',
        {"cluster": "c"},
    ),
)
#: a quoted CSV field may span at most this many physical lines / characters
MAX_RECORD_LINES = 200
MAX_RECORD_CHARS = 1_000_000
_UNTERMINATED = (
    "unterminated quote: the quoted field does not close before the next record "
    "(a stray '\"'?); this row only is quarantined"
)


def detect_table(columns: list[str]) -> str:
    """Tell which canonical table a header describes, by its distinctive columns.

    Parameters
    ----------
    columns : list of str
        The header's column names.

    Returns
    -------
    str
        ``component_failures``, ``inventory`` or ``health_events``.

    Raises
    ------
    ValueError
        If the columns match none of them (the message lists what each needs).
    """
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


def _scan(text: str) -> tuple[list[str], str | None]:
    """Split one CSV record (RFC 4180 quoting).

    Returns the fields and ``None`` (complete), ``"open"`` (a quoted field is still open at the
    end) or the reason it is malformed.
    """
    fields: list[str] = []
    i, n = 0, len(text)
    while True:
        if i < n and text[i] == '"':
            j, parts = i + 1, []
            while True:
                k = text.find('"', j)
                if k < 0:
                    fields.append("".join(parts) + text[j:])
                    return fields, "open"
                if k + 1 < n and text[k + 1] == '"':
                    parts.append(text[j : k + 1])
                    j = k + 2
                    continue
                parts.append(text[j:k])
                i = k + 1
                break
            fields.append("".join(parts))
            if i == n:
                return fields, None
            if text[i] != ",":
                return fields, (
                    f"text after a closing quote in field {len(fields)} "
                    "(a quote inside a quoted field must be doubled)"
                )
            i += 1
        else:
            k = text.find(",", i)
            if k < 0:
                fields.append(text[i:])
                return fields, None
            fields.append(text[i:k])
            i = k + 1


def _split(line: str) -> tuple[list[str], str | None]:
    """Split one line as :func:`_scan` does, trying the C csv module first.

    The C module applies the same rules in strict mode: it fails exactly where :func:`_scan`
    reports an open or malformed field.
    """
    if '"' not in line:
        return line.split(","), None
    if "\r" in line or "\n" in line:
        return _scan(line)  # csv treats line ends itself
    try:
        return next(csv.reader((line,), strict=True)), None
    except (csv.Error, StopIteration):
        return _scan(line)


def _csv_records(
    lines: pl.DataFrame, src: str
) -> tuple[list[str], pl.DataFrame, tuple[list[int], list[str], list[str]], int]:
    """Read a CSV's header, well-formed records, bad records and number of records.

    Well-formed records have ``line_no``, ``raw`` and one String column per header field (``""``
    read as null); bad records are line numbers, raw text and reasons.

    Lines without a quote character are split in bulk (polars); only lines with quotes, and
    the lines a quoted field runs into, are read one by one.
    """
    header_no, header = _csv_header(src, lines)
    width = len(header)
    # blank lines stay in the body: they are content inside a quoted field, else no record
    body = (
        lines.filter(pl.col("line_no") > header_no)
        .with_row_index("pos")
        .with_columns(
            quoted=pl.col("line").str.contains('"', literal=True),
            blank=pl.col("line").str.strip_chars() == "",
        )
    )
    nos = body.get_column("line_no").to_list()
    quoted_pos = body.filter("quoted").get_column("pos").to_list()
    text: list[str] = body.get_column("line").to_list() if quoted_pos else []
    consumed: set[int] = set()
    rows: list[tuple[int, str, list[str]]] = []
    bad: tuple[list[int], list[str], list[str]] = ([], [], [])
    n_records = 0
    for i in quoted_pos:
        if i in consumed:
            continue
        n_records += 1
        fields, why, line, last = _quoted_record(text, i, width)
        consumed.update(range(i + 1, last + 1))
        if why is None and len(fields) != width:
            why = f"{len(fields)} fields, expected {width}"
        if why is not None:
            bad[0].append(nos[i])
            bad[1].append(line)
            bad[2].append(why)
        else:
            rows.append((nos[i], line, fields))
    free = ~pl.col("quoted") & ~pl.col("blank") & ~pl.col("pos").is_in(list(consumed))
    split, n_plain = _plain_records(body.filter(free), width, bad)
    if rows:
        extra = pl.DataFrame(
            [(no, raw, *f) for no, raw, f in rows], schema=split.schema, orient="row"
        )
        split = pl.concat([split, extra])
    names = [f"__f{k}" for k in range(width)]
    frame = split.rename(dict(zip(names, header, strict=True))).with_columns(
        pl.when(pl.col(h) != "").then(pl.col(h)).alias(h) for h in header
    )
    return header, frame.sort("line_no"), bad, n_records + n_plain


def _csv_header(src: str, lines: pl.DataFrame) -> tuple[int, list[str]]:
    """Return the line number and the column names of a CSV's header (first non-blank line)."""
    nonblank = lines.filter(pl.col("line").str.strip_chars() != "")
    if nonblank.height == 0:
        raise IngestError(src, "empty file")
    header_no, header_line = nonblank.row(0)
    head, why = _split(header_line)
    if why is not None:
        raise IngestError(src, f"malformed CSV header: {why}", line=header_no)
    header = [h.strip() for h in head]
    dup = [h for h, c in Counter(header).items() if c > 1]
    if dup:
        raise IngestError(src, "column appears twice in the header", line=header_no, field=dup[0])
    return header_no, header


def _quoted_record(text: list[str], i: int, width: int) -> tuple[list[str], str | None, str, int]:
    """Read the record that starts on line ``i`` (position in ``text``) and holds a quote.

    A quoted field still open at the end of the line runs into the next lines, up to
    :data:`MAX_RECORD_LINES` / :data:`MAX_RECORD_CHARS`, and never into a line that is a record
    of its own. Returns (fields, why it is malformed or None, its text, the position of its
    last line).
    """
    line = text[i]
    fields, why = _split(line)
    if why != "open":
        return fields, why, line, i
    buf, size, j, done = [line], len(line), i + 1, False
    while j < len(text) and j - i < MAX_RECORD_LINES and size < MAX_RECORD_CHARS:
        nxt = text[j]
        if len(_split(nxt)[0]) == width:
            break  # the next line is a record of its own: do not swallow it
        buf.append(nxt)
        size += len(nxt) + 1
        fields, why = _scan("\n".join(buf))
        if why != "open":
            done = True
            break
        j += 1
    if done and why is None:
        return fields, None, "\n".join(buf), j
    # a join that does not give a well-formed record: this line only is bad
    return [], _UNTERMINATED, line, i


def _plain_records(
    plain: pl.DataFrame, width: int, bad: tuple[list[int], list[str], list[str]]
) -> tuple[pl.DataFrame, int]:
    """Split the lines without a quote in bulk (polars).

    Lines with the wrong number of fields go to ``bad``. Returns the records (``line_no``,
    ``raw``, ``__f0``...) and the number of lines read.
    """
    plain = plain.with_columns(nf=pl.col("line").str.count_matches(",", literal=True) + 1)
    wrong = plain.filter(pl.col("nf") != width)
    bad[0].extend(wrong.get_column("line_no").to_list())
    bad[1].extend(wrong.get_column("line").to_list())
    bad[2].extend(f"{k} fields, expected {width}" for k in wrong.get_column("nf").to_list())
    names = [f"__f{k}" for k in range(width)]
    split = (
        plain.filter(pl.col("nf") == width)
        .select(
            "line_no",
            pl.col("line").alias("raw"),
            pl.col("line").str.split_exact(",", width - 1).struct.rename_fields(names).alias("s"),
        )
        .unnest("s")
    )
    schema_ = {"line_no": pl.Int64, "raw": pl.String, **dict.fromkeys(names, pl.String)}
    return split.select(list(schema_)).cast(schema_), plain.height  # type: ignore[arg-type]


def _time(expr: pl.Expr, tz: str | None) -> tuple[pl.Expr, pl.Expr]:
    """(UTC time, is-an-epoch-number) of a string column."""
    v = (
        expr.str.strip_chars()
        .str.replace(r"^([0-9]{4}-[0-9][0-9]-[0-9][0-9]) ", "${1}T")
        .str.replace(r"Z$", "+00:00")
    )
    aware = v.str.to_datetime(
        "%Y-%m-%dT%H:%M:%S%.f%:z", strict=False, time_unit="us", time_zone="UTC"
    )
    is_epoch = v.str.contains(r"^[0-9]+(\.[0-9]+)?$")
    epoch = pl.when(is_epoch).then(
        (v.cast(pl.Float64, strict=False) * 1e6)
        .cast(pl.Int64, strict=False)
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
    value = pl.coalesce(
        aware.cast(schema.UTC_TIME), epoch.cast(schema.UTC_TIME), naive_utc.cast(schema.UTC_TIME)
    )
    return value, is_epoch.fill_null(False)


def _json_value(col: str, v: object) -> tuple[str | None, str | None]:
    """Convert one JSON value to (string value, None) or (None, reason)."""
    if type(v) is str:
        return (v or None), None
    if v is None:
        return None, None
    if isinstance(v, (bool, dict, list)):
        kind = (
            "a boolean"
            if isinstance(v, bool)
            else ("an object" if isinstance(v, dict) else "an array")
        )
        return None, f"column {col}: expected a string or a number, got {kind}"
    if isinstance(v, float) and not math.isfinite(v):
        return None, f"column {col}: {v} is not a finite number"
    if isinstance(v, int) and abs(v) > 10**18:
        return None, f"column {col}: number {str(v)[:24]}... is out of range"
    s = str(v)
    return (None if s == "" else s), None


def _jsonl_records(
    lines: pl.DataFrame, table: str | None
) -> tuple[str | None, list[tuple[int, str, dict[str, object] | None, str | None]], int]:
    """Read the records of a JSONL file.

    Returns the table, the records (line_no, raw, object or None, reason or None) and the
    number of records whose lone surrogate escapes were replaced.
    """
    records: list[tuple[int, str, dict[str, object] | None, str | None]] = []
    votes: Counter[str] = Counter()
    fixed = 0
    for no, line, n_bytes in clip_lines(lines, MAX_LINE_BYTES, RAW_PREFIX).iter_rows():
        if not line.strip():
            continue
        if n_bytes is not None:
            why = (
                f"line of {n_bytes:,} bytes is longer than the {MAX_LINE_BYTES:,}-byte limit "
                "of one JSON record: not parsed"
            )
            records.append((no, line, None, why))
            continue
        try:
            obj, replaced = loads_record(line, strict=True)
        except (JsonLimitError, JsonValueError) as exc:
            records.append((no, line, None, str(exc)))
            continue
        except json.JSONDecodeError as exc:
            records.append((no, line, None, f"not valid JSON: {exc.msg} at column {exc.colno}"))
            continue
        except ValueError as exc:  # e.g. an integer of more than 4300 digits
            records.append((no, line, None, f"not valid JSON: {str(exc)[:120]}"))
            continue
        if not isinstance(obj, dict):
            records.append((no, line, None, "JSON line is not an object"))
            continue
        fixed += replaced
        with contextlib.suppress(ValueError):
            votes[detect_table(list(obj))] += 1
        records.append((no, line, obj, None))
    if table is None and votes:
        ranked = votes.most_common()
        tie = len(ranked) > 1 and ranked[0][1] == ranked[1][1]
        table = None if tie else ranked[0][0]  # a tie: the caller is asked for table=
    return table, records, fixed


@SPEC.reads
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
    path : str or Path
        The file (plain or gzip); its suffix says CSV or JSON lines.
    table : str or None
        ``health_events``, ``component_failures`` or ``inventory``; None: detected from the
        columns (JSONL: from the keys most lines have).
    cluster : str or None
        Fills a missing or empty ``cluster`` column.
    tz : str or None
        IANA zone of naive times (ISO strings without offset).

    Returns
    -------
    ReadResult
        The one table. Rows read are the records of the file (a CSV record may span lines inside
        a quoted field); blank lines are not records.

    Raises
    ------
    IngestError
        For an empty file, an unknown ``table=``, a header with columns outside the contract, or
        JSON lines that match no single table.
    """
    src = str(path)
    check_zone(src, tz)
    check_name_option(src, cluster, "cluster")
    if table is not None and table not in CANONICAL_TABLES:
        raise IngestError(
            src,
            Hinted(
                "option ",
                Hint("table", action=False),
                f" must be one of {CANONICAL_TABLES}, got {table!r}",
            ),
        )
    name = Path(src).name.lower().removesuffix(".gz")
    lines, notes = read_lines(path)
    if name.endswith((".jsonl", ".ndjson", ".json")):
        table, raw_frame, q, n, present = _jsonl_input(src, lines, table, notes)
        header_line = None
    elif name.endswith(".csv"):
        table, raw_frame, q, n, present = _csv_input(src, lines, table)
        header_line = 1
    else:
        raise IngestError(src, "unknown format: expected a .csv or .jsonl/.ndjson file")
    if "cluster" not in present and cluster is None:
        raise IngestError(
            src,
            Hinted("no cluster column: ", Hint("cluster"), " (the cluster these rows belong to)"),
            line=header_line,
            field="cluster",
        )
    if cluster is not None:
        raw_frame = raw_frame.with_columns(pl.col("cluster").fill_null(cluster))
    frame, bad = _typed(src, raw_frame, schema.TABLES[table], tz)
    qf = quarantine_frame(
        src,
        q[0] + bad.get_column("line_no").to_list(),
        q[1] + bad.get_column("raw").to_list(),
        q[2] + bad.get_column("reason").to_list(),
    ).sort("line_no")
    return ReadResult(src, {table: frame}, qf, n, n - qf.height, notes)


#: what an input gives: (table, its columns as text with line_no and raw, quarantine, records
#: read, columns or keys present)
_Raw = tuple[str, pl.DataFrame, tuple[list[int], list[str], list[str]], int, set[str]]


def _jsonl_input(src: str, lines: pl.DataFrame, table: str | None, notes: list[str]) -> _Raw:
    """Read JSON lines into (table, text frame, quarantine, records read, keys present)."""
    q: tuple[list[int], list[str], list[str]] = ([], [], [])
    table, records, fixed = _jsonl_records(lines, table)
    if fixed:
        notes.append(
            f"{fixed} JSON line(s) hold lone surrogate escapes (\\ud800..., not text): "
            "replaced by U+FFFD"
        )
    if not records:
        raise IngestError(src, "empty file")
    if table is None:
        unread = [(no, why) for no, _, obj, why in records if obj is None]
        if len(unread) == len(records):  # not one object: say why the first is not
            raise IngestError(
                src,
                f"no line is a JSON object to read; first: {unread[0][1]}",
                line=unread[0][0],
            )
        raise IngestError(
            src,
            Hinted(
                "the JSON lines match no single canonical table: ",
                Hint("table"),
                " (health_events, component_failures or inventory)",
            ),
        )
    spec = schema.TABLES[table]
    cols = list(spec.schema)
    present = set().union(*(set(obj) for _, _, obj, _ in records if obj is not None))
    good: list[tuple[int, str, list[str | None]]] = []
    for no, raw, obj, why in records:
        if obj is not None:
            extra = [k for k in obj if k not in spec.schema]
            if extra:
                why = f"key {extra[0][:40]!r} is not in the {table} contract"
            else:
                values: list[str | None] = []
                for c in cols:
                    v, why = _json_value(c, obj.get(c))
                    if why is not None:
                        break
                    values.append(v)
        if obj is None or why is not None:
            q[0].append(no)
            q[1].append(raw)
            q[2].append(str(why))
        else:
            good.append((no, raw, values))
    raw_frame = pl.DataFrame(
        [(no, raw, *vals) for no, raw, vals in good],
        schema={"line_no": pl.Int64, "raw": pl.String, **dict.fromkeys(cols, pl.String)},
        orient="row",
    )
    return table, raw_frame, q, len(records), present


def _csv_input(src: str, lines: pl.DataFrame, table: str | None) -> _Raw:
    """Read a CSV into (table, text frame, quarantine, records read, columns present)."""
    header, raw_frame, q, n = _csv_records(lines, src)
    try:
        table = table or detect_table(header)
    except ValueError as exc:
        raise IngestError(src, message_of(exc), line=1) from None
    spec = schema.TABLES[table]
    extra = [c for c in header if c not in spec.schema]
    if extra:
        raise IngestError(src, f"column not in the {table} contract", line=1, field=extra[0])
    required = [c for c in spec.schema if c not in spec.nullable and c != "cluster"]
    missing = [c for c in required if c not in header]
    if missing:
        raise IngestError(src, f"required {table} column missing", line=1, field=missing[0])
    raw_frame = raw_frame.with_columns(
        pl.lit(None, pl.String).alias(c) for c in spec.schema if c not in header
    ).select("line_no", "raw", *spec.schema)
    return table, raw_frame, q, n, set(header)


def _typed(
    src: str, raw_frame: pl.DataFrame, spec: schema.TableSpec, tz: str | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Type the text columns into the table; return (rows kept, rows refused with a reason).

    Each value must read as its column's type, required columns must be set, times must be
    within bounds and intervals in order.
    """
    typed: dict[str, pl.Expr] = {}
    checks: list[tuple[pl.Expr, pl.Expr]] = []
    latest = latest_time()
    bounds = bounds_text(latest)
    time_cols = [c for c, d in spec.schema.items() if d == schema.UTC_TIME]
    for col, dtype in spec.schema.items():
        c = pl.col(col)
        if dtype == schema.UTC_TIME:
            e, is_epoch = _time(c, tz)
            checks.append(
                (
                    (is_epoch & e.is_null()) | out_of_range_time(f"__{col}", latest),
                    pl.format(f"column {col}: time '{{}}' is {bounds}", c.str.slice(0, 40)),
                )
            )
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
                pl.format(f"column {col}: cannot read '{{}}' as {what}", c.str.slice(0, 80)),
            )
        )
        if col not in spec.nullable:
            checks.append(
                (c.is_null(), pl.lit(f"column {col}: missing value in a required column"))
            )
    out = raw_frame.with_columns(**{f"__{k}": v for k, v in typed.items()})
    if tz is None and out.height:
        naive = pl.any_horizontal(
            [
                pl.col(c).str.contains(
                    r"^[0-9]{4}-[0-9][0-9]-[0-9][0-9][T ][0-9][0-9]:[0-9][0-9](:[0-9][0-9](\.[0-9]+)?)?$"
                )
                for c in time_cols
            ]
        ).fill_null(False)
        first = out.filter(naive).head(1)
        if first.height:
            raise IngestError(
                src,
                Hinted(
                    "times without a UTC offset: ",
                    Hint("tz"),
                    " (their zone) or write them with Z/offset",
                ),
                line=int(first.item(0, "line_no")),
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
    return frame, bad
