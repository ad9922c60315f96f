"""Reader for Slurm accounting exports: ``sacct --parsable2`` / ``--parsable``.

Any subset and order of fields, with or without ``--duplicates``; a header line is expected
(``--noheader`` output needs ``fields=``). Allocation records become ``jobs`` rows (one per
attempt or resize segment); step records (``.batch``, ``.extern``, ``.0``, ``45+1.0``) become
``job_steps`` rows. The export we recommend is
:data:`~reliability.ingest.slurm_fields.SACCT_EXPORT_COMMAND`.

The file is streamed in blocks (:mod:`reliability.ingest._sacct_io`): a clean block (every
line has the header's number of ``|``) is split by polars' CSV reader and parsed with polars
expressions (:mod:`reliability.ingest._sacct_parse`); around the few lines that are not clean
(``|`` or newlines inside free-text fields, headers in the middle), records are assembled in
Python (:mod:`reliability.ingest._sacct_records`), so one bad line costs one small window,
not the file. Slurm's requeue and resize semantics are in :mod:`reliability.ingest._sacct_post`.

Times: sacct prints local time without a zone, so a time zone must be given (``tz=``);
``SLURM_TIME_FORMAT=%s`` (epoch) output needs none. Ambiguous local times (DST fall-back)
are read as the earlier instant; non-existent ones (spring-forward) are quarantined.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import polars as pl

from reliability import schema
from reliability.errors import IngestError
from reliability.ingest import hostlist
from reliability.ingest._bounds import MAX_HOSTLIST_NODES
from reliability.ingest._common import ReadResult, quarantine_frame
from reliability.ingest._sacct_io import (
    Block,
    LongLine,
    block_frame,
    count_pipes,
    head,
    iter_blocks,
    line_spans,
    line_text,
    utf8_stream,
)
from reliability.ingest._sacct_parse import ALLOC_COLS, STEP_COLS, Parsed, parse_records
from reliability.ingest._sacct_post import (
    exact_duplicates,
    missing_duplicates_note,
    number_attempts,
    resize_segments,
)
from reliability.ingest._sacct_records import Layout, assemble, parse_header
from reliability.ingest.slurm_fields import (
    FIELD_PATTERNS,
    RECOMMENDED_FORMAT,
    REQUIRED_FIELDS,
    SACCT_EXPORT_COMMAND,
    TEXT_FIELDS,
    USED_FIELDS,
)

__all__ = [
    "FIELD_PATTERNS",
    "MAX_NODE_NAMES_PER_INPUT",
    "RECOMMENDED_FORMAT",
    "REQUIRED_FIELDS",
    "SACCT_EXPORT_COMMAND",
    "TEXT_FIELDS",
    "read_sacct",
]

#: most host names the expanded node lists of one input may hold in total (about 1.6 GB);
#: beyond it the input is refused (split the export by time) instead of exhausting memory
MAX_NODE_NAMES_PER_INPUT = 100_000_000
_HEADERISH = re.compile(r"(?i)^\s*jobid(raw)?\s*$")
_EXPORT_HINT = f"export with: {SACCT_EXPORT_COMMAND}"


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
    :func:`reliability.ingest.slurm_json.read_sacct_json`. YAML and sacct's fixed-width
    tables are refused with the command to use instead.

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
    ReadResult with ``jobs`` (one row per allocation record = attempt, or resize segment)
    and ``job_steps``. Attempts of a job (``--duplicates``) are numbered 0, 1, ... by start
    time. Records that cannot be read are quarantined with the reason.
    """
    src = str(path)
    _check_zone(src, tz)
    names = _check_fields(src, fields)
    if cluster is not None and (not isinstance(cluster, str) or not cluster.strip()):
        raise IngestError(src, f"option cluster= must be a non-empty name, got {cluster!r}")
    start = _window_time(src, "window_start", window_start)
    end = _window_time(src, "window_end", window_end)
    if start is not None and end is not None and end <= start:
        raise IngestError(src, f"window_end={end} is not after window_start={start}")
    first = head(path)
    if names is None:
        _refuse_other_formats(src, first)
    if names is None and first.lstrip()[:1] == b"{":
        from reliability.ingest.slurm_json import read_sacct_json

        result = read_sacct_json(path, cluster=cluster)
    else:
        result = _Reader(src, cluster=cluster, tz=tz, names=names).run(path)
    if start is not None:
        result.observed_from = start
    if end is not None:
        result.observed_until = end
        result.observation_basis = "sacct --endtime"
    return result


def _check_zone(src: str, tz: object) -> None:
    if tz is None:
        return
    if not isinstance(tz, str) or not tz.strip():
        raise IngestError(src, f"option tz= must be an IANA time zone name, got {tz!r}")
    try:
        ZoneInfo(tz)
        pl.Series([None], dtype=pl.Datetime("us")).dt.replace_time_zone(tz)
    except (ZoneInfoNotFoundError, ValueError, OSError, pl.exceptions.PolarsError):
        raise IngestError(
            src,
            f"unknown time zone {tz!r} (option tz=): use an IANA name such as 'UTC', "
            "'Europe/Berlin' or 'America/New_York'",
        ) from None


def _check_fields(src: str, fields: Sequence[str] | None) -> list[str] | None:
    if fields is None:
        return None
    if isinstance(fields, str):
        fields = [f.strip() for f in fields.split(",")]
    names = list(fields)
    if not names or not all(isinstance(f, str) and f.strip() for f in names):
        raise IngestError(
            src, f"option fields= must list sacct field names in --format order, got {fields!r}"
        )
    names = [f.strip() for f in names]
    if len({n.lower() for n in names}) != len(names):
        raise IngestError(src, f"option fields= names a field twice: {','.join(names)}")
    missing = [f for f in REQUIRED_FIELDS if f not in names]
    if missing:
        raise IngestError(
            src,
            f"option fields= lacks the required field {missing[0]} (the reader needs "
            f"{', '.join(REQUIRED_FIELDS)}); {_EXPORT_HINT}",
        )
    return names


def _window_time(src: str, name: str, value: datetime | str | None) -> datetime | None:
    """An export window bound as an aware UTC datetime (ISO strings must carry a zone)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise IngestError(src, f"option {name}={value!r} is not an ISO 8601 time") from None
    if not isinstance(value, datetime):
        raise IngestError(src, f"option {name}= must be a time, got {type(value).__name__}")
    if value.tzinfo is None:
        raise IngestError(src, f"option {name}={value} has no time zone (give e.g. ...Z)")
    return value.astimezone(UTC)


def _refuse_other_formats(src: str, first: bytes) -> None:
    """Refuse, with what to do, the sacct outputs this reader does not read."""
    text = first.decode("utf-8", errors="replace")
    lines = [ln.rstrip("\r") for ln in text.splitlines() if ln.strip()]
    if not lines:
        return
    top = lines[0].strip()
    if top == "---" or re.match(r"^(meta|jobs|errors|warnings):\s*$", top):
        raise IngestError(
            src, f"YAML is not read: export with --parsable2 or --json; {_EXPORT_HINT}", line=1
        )
    if len(lines) > 1 and re.fullmatch(r"[- ]+", lines[1].strip()) and "|" not in top:
        raise IngestError(
            src,
            "this is sacct's fixed-width table, which cuts values to their column width "
            f"(CANCELLED+, OUT_OF_ME+) and has no times: use --parsable2: {SACCT_EXPORT_COMMAND}",
            line=1,
        )


class _Reader:
    """Streams one export through blocks (see the module notes)."""

    def __init__(
        self, src: str, *, cluster: str | None, tz: str | None, names: list[str] | None
    ) -> None:
        self.src, self.cluster, self.tz = src, cluster, tz
        self.fields = names
        self.layout: Layout | None = None
        self.layouts: list[Layout] = []
        self.allocs: list[pl.DataFrame] = []
        self.steps: list[pl.DataFrame] = []
        self.quarantine: list[tuple[int, str, str]] = []
        self.window_raw: dict[int, str] = {}
        self.notes: list[str] = []
        self.n_records = 0
        self.naive = False
        self.node_names = 0
        self.replaced = False
        self.sections = 0
        self.comments = 0

    # -- driving --------------------------------------------------------------------------
    def run(self, path: str | Path) -> ReadResult:
        stream = utf8_stream(path, self.notes)
        pending: Block | None = None
        saw_data = False
        try:
            for item in iter_blocks(stream):
                if isinstance(item, LongLine):
                    if pending is not None:
                        self._feed(pending, final=True)
                        pending = None
                    self._long_line(item)
                    continue
                saw_data = saw_data or bool(item.data.strip())
                block = _join(pending, item)
                pending = self._feed(block, final=False)
            if pending is not None:
                left = self._feed(pending, final=True)
                assert left is None
        except OSError as exc:
            raise IngestError(self.src, f"cannot read file: {exc.strerror or exc}") from None
        finally:
            stream.close()
        if not saw_data:
            raise IngestError(
                self.src, "empty file (sacct prints a header line even when no job matches)"
            )
        if self.layout is None:
            raise IngestError(self.src, "no sacct header line and no data")
        return self._result(path)

    def _feed(self, block: Block, *, final: bool) -> Block | None:
        """Process ``block``; return the lines left for the next block (None if none)."""
        if self.layout is None:
            block = self._start(block, final=final)
            if block is None or self.layout is None:
                return block
        if not final:
            # hold the last line back: it may be the start of a record the next block ends
            cut = block.data.rfind(b"\n", 0, len(block.data) - 1)
            if cut < 0:
                return block
            keep = Block(block.data[cut + 1 :], block.first_line + block.n_lines - 1, 1)
            block = Block(block.data[: cut + 1], block.first_line, block.n_lines - 1)
        else:
            keep = None
        left = self._block(block, final=final)
        if left is None:
            return keep
        return _join(left, keep) if keep is not None else left

    def _start(self, block: Block, *, final: bool) -> Block | None:
        """Find the header (or apply ``fields=``) at the start of the input."""
        data, pos, line = block.data, 0, block.first_line
        while pos < len(data):
            nl = data.find(b"\n", pos)
            end = len(data) if nl < 0 else nl
            text = line_text(data, pos, end).lstrip("\ufeff")
            if text.strip():
                break
            pos, line = end + 1, line + 1
        else:
            return None if final else block
        if nl < 0 and not final:
            return block  # the first line is not complete yet
        if self.fields is not None:
            sample = [
                ln.rstrip("\r")
                for ln in data[pos : pos + 65536].decode("utf-8", "replace").split("\n")[:64]
                if ln.strip() and not ln.startswith("#")
            ]
            n = len(self.fields)
            trailing = sum(x.endswith("|") and x.count("|") == n for x in sample) > len(sample) / 2
            self._set_layout(Layout(tuple(self.fields), trailing), line)
            rest = data[pos:]
            return Block(rest, line, block.n_lines - (line - block.first_line))
        layout = parse_header(text)
        if layout is None:
            self._no_header(text, line)
        assert layout is not None
        self._set_layout(layout, line)
        rest = data[end + 1 :] if nl >= 0 else b""
        return Block(rest, line + 1, max(block.n_lines - (line - block.first_line) - 1, 0))

    def _no_header(self, text: str, line: int) -> None:
        for sep in (",", "\t", ";"):
            if re.match(rf"(?i)^\s*jobid(raw)?\s*{re.escape(sep)}", text):
                raise IngestError(
                    self.src,
                    f"wrong delimiter {sep!r}: expected '|' (sacct --parsable2)",
                    line=line,
                )
        if re.match(r"(?i)^\s*jobid(raw)?\s+\S", text):
            raise IngestError(
                self.src,
                "wrong delimiter ' ': this is sacct's fixed-width table, which cuts values to "
                f"their column width; use --parsable2: {SACCT_EXPORT_COMMAND}",
                line=line,
            )
        raise IngestError(
            self.src,
            "no sacct header line (the first field should be JobID); for --noheader output "
            f"pass fields=[...] in the --format order; {_EXPORT_HINT}",
            line=line,
        )

    def _set_layout(self, layout: Layout, line: int) -> None:
        missing = [f for f in REQUIRED_FIELDS if f not in layout.names]
        if missing:
            raise IngestError(
                self.src,
                f"required sacct field missing from the header; {_EXPORT_HINT}",
                field=missing[0],
                line=line,
            )
        if "Cluster" not in layout.names and self.cluster is None:
            raise IngestError(
                self.src, "the export has no Cluster field: pass cluster=", field="Cluster"
            )
        self.layout = layout
        self.layouts.append(layout)
        self.sections += 1

    def _long_line(self, item: LongLine) -> None:
        self.n_records += 1
        self.quarantine.append(
            (item.line_no, item.prefix,
             f"line of {item.n_bytes:,} bytes, longer than any sacct record: not read")
        )  # fmt: skip

    # -- one block ------------------------------------------------------------------------
    def _block(self, block: Block, *, final: bool) -> Block | None:
        layout = self.layout
        assert layout is not None
        if block.n_lines == 0 or not block.data:
            return None
        data = block.data
        n_fields = len(layout.names) + int(layout.trailing)
        cols = sorted({0} | {i for i, n in enumerate(layout.names) if n in USED_FIELDS})
        frame = block_frame(data, n_fields, cols)
        if frame.height != block.n_lines:  # pragma: no cover - polars kept one row per line
            raise IngestError(
                self.src, "internal error: lines and rows disagree", line=block.first_line
            )
        e = layout.expected
        headerish = frame.get_column("f0").str.contains(_HEADERISH.pattern).fill_null(False)
        has_nul = b"\x00" in data
        clean = count_pipes(data) == block.n_lines * e and not has_nul and not bool(headerish.any())
        spans = None
        if clean:
            bulk = frame
            records: list = []
            cut = block.n_lines
            new_section = None
            carry = None
        else:
            spans = line_spans(data, block.n_lines)
            starts, ends, counts = spans
            marks = (counts != e) | headerish.to_numpy()
            if has_nul:
                arr = np.frombuffer(data, np.uint8)
                nul_lines = np.searchsorted(ends, np.flatnonzero(arr == 0))
                marks[nul_lines[nul_lines < block.n_lines]] = True
            anomalies = np.flatnonzero(marks).tolist()
            asm = assemble(
                lambda i: line_text(data, int(starts[i]), int(ends[i])),
                counts.tolist(),
                anomalies,
                layout,
                final=final,
                line_no=lambda i: block.first_line + i,
            )
            self.notes.extend(asm.notes)
            self.comments += asm.comments
            cut = block.n_lines
            carry = asm.carry_from
            new_section = asm.new_section
            if carry is not None:
                cut = min(cut, carry)
            if new_section is not None:
                cut = min(cut, new_section[0])
            keep = np.ones(block.n_lines, dtype=bool)
            if asm.consumed:
                keep[np.fromiter(asm.consumed, dtype=np.int64)] = False
            keep[cut:] = False
            bulk = frame.filter(pl.Series(keep))
            records = [r for r in asm.records if r.first < cut]
        bulk = bulk.with_columns(
            line_no=(pl.int_range(pl.len(), dtype=pl.Int64) + block.first_line)
            if clean
            else pl.Series(np.flatnonzero(keep).astype(np.int64) + block.first_line)
        )
        names = {f"f{i}": layout.names[i] for i in cols}
        bulk = bulk.rename(names).select("line_no", *names.values())
        parts = [bulk]
        for r in records:
            ln = block.first_line + r.first
            self.n_records += 1
            if r.values is None:
                self.quarantine.append((ln, r.raw, r.reason))
                continue
            self.window_raw[ln] = r.raw
        kept = [r for r in records if r.values is not None]
        if kept:
            win = pl.DataFrame(
                {
                    "line_no": [block.first_line + r.first for r in kept],
                    **{
                        layout.names[i]: [r.values[i] if r.values[i] != "" else None for r in kept]
                        for i in cols
                    },
                },
                schema={"line_no": pl.Int64, **dict.fromkeys(names.values(), pl.String)},
            )
            parts.append(win)
        recs = pl.concat(parts, how="vertical") if len(parts) > 1 else bulk
        if len(parts) > 1:
            recs = recs.sort("line_no")
        self.n_records += bulk.height
        self._parse(recs, data, block, spans)
        if new_section is not None:
            idx, new = new_section
            self._set_layout(new, block.first_line + idx)
            rest_start = int(spans[1][idx]) + 1 if spans is not None else len(data)
            rest = Block(data[rest_start:], block.first_line + idx + 1, block.n_lines - idx - 1)
            return self._block(rest, final=final)
        if carry is not None and spans is not None:
            return Block(
                data[int(spans[0][carry]) :], block.first_line + carry, block.n_lines - carry
            )
        return None

    def _parse(self, recs: pl.DataFrame, data: bytes, block: Block, spans: tuple | None) -> None:
        layout = self.layout
        assert layout is not None
        if recs.height == 0:
            return
        has_gpu = any("TRES" in n or "GRES" in n for n in layout.names)
        try:
            parsed: Parsed = parse_records(
                recs, tz=self.tz, cluster=self.cluster, has_gpu_field=has_gpu,
                node_budget=MAX_NODE_NAMES_PER_INPUT - self.node_names,
            )  # fmt: skip
        except hostlist.NodeBudgetError:
            raise IngestError(
                self.src,
                f"the node lists expand to more than {MAX_NODE_NAMES_PER_INPUT:,} host names "
                f"in total (each at most {MAX_HOSTLIST_NODES:,}): refused before expanding them, "
                "to bound memory; split the export by --starttime/--endtime",
                line=block.first_line,
            ) from None
        self.naive |= parsed.naive
        self.node_names += parsed.node_names
        if parsed.allocs.height:
            self.allocs.append(parsed.allocs)
        if parsed.steps.height:
            self.steps.append(parsed.steps)
        if not block.data.isascii():
            for frame in (parsed.allocs, parsed.steps):
                if (
                    frame.height
                    and frame.get_column("name").str.contains("\ufffd", literal=True).any()
                ):
                    self.replaced = True
        if parsed.bad.height:
            if spans is None:
                spans = line_spans(data, block.n_lines)
            starts, ends, _ = spans
            for ln, reason in parsed.bad.iter_rows():
                raw = self.window_raw.pop(ln, None)
                if raw is None:
                    i = ln - block.first_line
                    raw = line_text(data, int(starts[i]), int(ends[i]))
                self.quarantine.append((ln, raw, reason))

    # -- the result -----------------------------------------------------------------------
    def _result(self, path: str | Path) -> ReadResult:
        src = self.src
        if self.naive and self.tz is None:
            raise IngestError(
                src,
                "sacct prints local times without a zone: pass tz= (e.g. 'UTC' or the "
                "cluster's zone), or export with SLURM_TIME_FORMAT=%s",
                field="Submit",
            )
        notes = list(self.notes)
        if self.sections > 1:
            notes.append(
                f"{self.sections} header lines with different fields: read as {self.sections} "
                "concatenated exports"
            )
        if self.comments:
            notes.append(
                f"{self.comments} comment line(s) starting with '#' skipped (not sacct output)"
            )
        if self.replaced:
            notes.append("input is not valid UTF-8: undecodable bytes were replaced by U+FFFD")
        if not any("TRES" in n or "GRES" in n for lay in self.layouts for n in lay.names):
            notes.append(
                "no AllocTRES/ReqTRES/GRES field: n_accelerators set to 0 (GPU count unknown)"
            )
        allocs = (
            pl.concat(self.allocs, rechunk=True) if self.allocs
            else pl.DataFrame(schema={c: _ALLOC_SCHEMA[c] for c in ALLOC_COLS})
        )  # fmt: skip
        steps = (
            pl.concat(self.steps, rechunk=True) if self.steps
            else pl.DataFrame(schema={c: _STEP_SCHEMA[c] for c in STEP_COLS})
        )  # fmt: skip
        self.allocs, self.steps = [], []
        late: list[tuple[int, str]] = []
        allocs, resize_bad, resize_notes = resize_segments(allocs)
        late += resize_bad
        notes += resize_notes
        allocs, rep_a = exact_duplicates(allocs, lambda lines: self._fetch_raw(path, lines))
        steps, rep_s = exact_duplicates(steps, lambda lines: self._fetch_raw(path, lines))
        late += [(r, f"exact duplicate of line {f}") for r, f in rep_a + rep_s]
        if rep_a or rep_s:
            notes.append(
                f"{len(rep_a) + len(rep_s)} record(s) repeat an earlier record exactly "
                "(concatenated exports?): counted once, the repeats quarantined"
            )
        if late:
            raw = self._fetch_raw(path, [ln for ln, _ in late])
            for ln, reason in late:
                self.quarantine.append((ln, raw.get(ln, ""), reason))
        note = missing_duplicates_note(allocs)
        if note:
            notes.append(note)
        jobs = allocs.with_columns(
            number_attempts(allocs), topology=pl.lit(None, pl.String)
        ).select(list(schema.TABLES["jobs"].schema))
        steps = steps.select(list(schema.TABLES["job_steps"].schema))
        q = sorted(self.quarantine)
        qf = quarantine_frame(src, [x[0] for x in q], [x[1] for x in q], [x[2] for x in q])
        kept = jobs.height + steps.height
        # rows read is counted record by record as the blocks were split; ReadResult checks
        # that every one of them was kept or quarantined
        return ReadResult(src, {"jobs": jobs, "job_steps": steps}, qf, self.n_records, kept, notes)

    def _fetch_raw(self, path: str | Path, line_nos: list[int]) -> dict[int, str]:
        """Raw text of the records at ``line_nos`` (a second pass over the input)."""
        out = {ln: self.window_raw[ln] for ln in line_nos if ln in self.window_raw}
        want = sorted(set(line_nos) - set(out))
        if not want:
            return out
        stream = utf8_stream(path, [])
        try:
            k = 0
            for item in iter_blocks(stream):
                if isinstance(item, LongLine):
                    continue
                lo, hi = item.first_line, item.end_line
                if k < len(want) and want[k] < hi:
                    starts, ends, _ = line_spans(item.data, item.n_lines)
                    while k < len(want) and want[k] < hi:
                        i = want[k] - lo
                        if i >= 0:
                            out[want[k]] = line_text(item.data, int(starts[i]), int(ends[i]))
                        k += 1
                if k >= len(want):
                    break
        finally:
            stream.close()
        return out


_ALLOC_SCHEMA = {"line_no": pl.Int64, **schema.TABLES["jobs"].schema}
_STEP_SCHEMA = {"line_no": pl.Int64, **schema.TABLES["job_steps"].schema}


def _join(a: Block | None, b: Block | None) -> Block:
    """Two consecutive blocks as one (either may be None, not both)."""
    if a is None:
        assert b is not None
        return b
    if b is None:
        return a
    return Block(a.data + b.data, a.first_line, a.n_lines + b.n_lines)
