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

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from reliability import schema
from reliability.errors import IngestError
from reliability.ingest._common import (
    ReadResult,
    quarantine_frame,
    read_bytes,
    read_lines,
)
from reliability.ingest._delimited import split_delimited
from reliability.ingest._sacct_io import (
    StreamFailed,
    fast_records,
    fetch_lines,
    guarded,
    head,
    stream_records,
)
from reliability.ingest._sacct_parse import ALLOC_COLS, STEP_COLS, parse_segment
from reliability.ingest.slurm_fields import (
    CHUNK_ROWS,
    FIELD_PATTERNS,
    HEADER_FIRST,
    RECOMMENDED_FORMAT,
    REQUIRED_FIELDS,
    TEXT_FIELDS,
)

__all__ = ["FIELD_PATTERNS", "RECOMMENDED_FORMAT", "REQUIRED_FIELDS", "TEXT_FIELDS", "read_sacct"]


def _find_segments(
    lines: pl.DataFrame, fields: Sequence[str] | None, path: str
) -> list[tuple[list[str], bool, pl.DataFrame]]:
    """Split the file at header lines (mixed exports); return (fields, trailing, data lines)."""
    first = pl.col("line").str.split_exact("|", 1).struct.field("field_0").str.strip_chars()
    marked = lines.with_columns(
        is_header=first.str.contains(HEADER_FIRST.pattern, strict=True)
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


def read_sacct(
    path: str | Path,
    *,
    cluster: str | None = None,
    tz: str | None = None,
    fields: Sequence[str] | None = None,
    window_start: datetime | str | None = None,
    window_end: datetime | str | None = None,
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
    window_start, window_end : the export's ``--starttime`` / ``--endtime`` [UTC; ISO 8601
        with a zone, or an aware datetime], when known: they become the input's observation
        window (attempts still running are censored at ``window_end``). Without them the
        window is inferred from the earliest / latest timestamp in the export.

    Returns
    -------
    ReadResult with ``jobs`` (one row per allocation record = attempt) and ``job_steps``.
    Attempts of a job (``--duplicates``) are numbered 0, 1, ... by start time.
    """
    start = _window_time(path, "window_start", window_start)
    end = _window_time(path, "window_end", window_end)
    if start is not None and end is not None and end <= start:
        raise IngestError(str(path), f"window_end {end} is not after window_start {start}")
    if fields is None and head(path).lstrip()[:1] == b"{":
        from reliability.ingest.slurm_json import read_sacct_json

        result = read_sacct_json(path, cluster=cluster)
    else:
        try:
            result = _read_sacct(path, cluster=cluster, tz=tz, fields=fields, allow_stream=True)
        except StreamFailed:
            # a line the byte counts could not rule out (e.g. one too long, one too short)
            result = _read_sacct(path, cluster=cluster, tz=tz, fields=fields, allow_stream=False)
    if start is not None:
        result.observed_from = start
    if end is not None:
        result.observed_until = end
        result.observation_basis = "sacct --endtime"
    return result


def _window_time(path: str | Path, name: str, value: datetime | str | None) -> datetime | None:
    """An export window bound as an aware UTC datetime (ISO strings must carry a zone)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise IngestError(str(path), f"{name} {value!r} is not an ISO 8601 time") from None
    if value.tzinfo is None:
        raise IngestError(str(path), f"{name} {value} has no time zone (give e.g. ...Z)")
    return value.astimezone(UTC)


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
            stream = stream_records(Path(path))
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
        fast = fast_records(data) if fields is None else None
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
        chunks = guarded(stream[3]) if stream is not None else seg.iter_slices(n_rows=CHUNK_ROWS)
        for chunk in chunks:
            good, bad, seg_naive = parse_segment(
                chunk, names, trailing=trailing, tz=tz, cluster=cluster
            )
            is_step = good.get_column("step").is_not_null()
            alloc_parts.append(good.filter(~is_step).select(ALLOC_COLS))
            step_parts.append(good.filter(is_step).select(STEP_COLS))
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
            raw = fetch_lines(Path(path), bad.get_column("line_no").to_list())
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
        raise StreamFailed(f"read {n_good + q.height} records, expected {stream[2]}")
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
