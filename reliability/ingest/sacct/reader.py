"""The streaming reader behind :func:`reliability.ingest.slurm.read_sacct`.

Two front ends feed the same typed parse (:mod:`reliability.ingest.sacct.parse`) and the
same attempt semantics (:mod:`reliability.ingest.sacct.post`):

* a plain file is memory-mapped; numpy counts the separators of each window of whole lines
  without copying it (a window whose every line has the header's count is clean), the record
  assembly (:mod:`reliability.ingest.sacct.records`) handles the lines around anomalies,
  and polars reads the file itself in batches (:meth:`SacctReader.run_mapped`);
* anything else (gzip, UTF-16, concatenated exports with several headers, or whatever the
  first front end did not expect) is read as a stream of blocks of whole lines
  (:meth:`SacctReader.run_blocks`).

Either way memory stays bounded by a few blocks plus the output, whatever the file holds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

import numpy as np
import polars as pl

from reliability import hostlist, schema
from reliability.errors import Hint, Hinted, IngestError, Placeholder
from reliability.ingest._bounds import MAX_HOSTLIST_NODES
from reliability.ingest._common import ReadResult, quarantine_frame
from reliability.ingest._compressed import is_gzip
from reliability.ingest.sacct import io as _sacct_io
from reliability.ingest.sacct.fields import (
    HEADER_FIRST,
    REQUIRED_FIELDS,
    SACCT_EXPORT_COMMAND,
    SACCT_FIELDS,
    read_column,
)
from reliability.ingest.sacct.io import (
    Block,
    LongLine,
    block_frame,
    ends_with_bar,
    iter_blocks,
    line_spans,
    line_text,
    regular_lines,
    utf8_stream,
    wide_text,
)
from reliability.ingest.sacct.mapped import read_mapped
from reliability.ingest.sacct.parse import (
    Parsed,
    ValueTable,
    chunked_like,
    complete,
    completed_schema,
    finish,
    repeated_hour_times,
    time_form_of,
    typed_plan,
)
from reliability.ingest.sacct.post import (
    duplicate_candidates,
    duplicated,
    exact_duplicates,
    missing_duplicates_note,
    number_attempts,
    resize_segments,
    same_attempts,
)
from reliability.ingest.sacct.records import (
    Layout,
    Record,
    assemble,
    headerish_pattern,
    parse_header,
)

__all__ = ["MAX_NODE_NAMES_PER_INGEST", "MAX_NODE_NAMES_PER_INPUT", "SacctReader", "node_budget"]

#: most host names the expanded node lists of one input read by ``read_sacct`` may hold in
#: total (compact: about 0.4 GB; a caller that turns them into strings needs 16 bytes a name);
#: beyond it the input is refused (split the export by time) instead of exhausting memory
MAX_NODE_NAMES_PER_INPUT = 100_000_000
#: the same, for an input read by ``Dataset.ingest``, which writes the node lists as they are
#: (compact, cast to strings batch by batch as its parts are written): about 1.6 GB
MAX_NODE_NAMES_PER_INGEST = 400_000_000
#: bytes one compact host name takes in the node lists (a 4-byte category; list offsets aside)
_COMPACT_NAME_BYTES = 4
_NODE_BUDGET: ContextVar[tuple[int, str]] = ContextVar(
    "sacct_node_budget", default=(MAX_NODE_NAMES_PER_INPUT, "read_sacct")
)


@contextmanager
def node_budget(names: int, reader: str) -> Iterator[None]:
    """Let the sacct reads inside the block keep up to ``names`` host names per input.

    Parameters
    ----------
    names : int
        Most host names the node lists of one input may hold.
    reader : str
        Who reads, for the refusal message (e.g. ``Dataset.ingest``).

    Yields
    ------
    None
    """
    token = _NODE_BUDGET.set((names, reader))
    try:
        yield
    finally:
        _NODE_BUDGET.reset(token)


def _budget_refusal(names: int | None, budget: int, reader: str, at_line: int) -> str:
    """Say why an input whose node lists hold more than ``budget`` host names is refused.

    ``names``: how many the records up to ``at_line`` name (the rest is not read).
    """
    held = (
        f"{names:,} host names up to line {at_line:,}"
        if names
        else f"more than {budget:,} host names in all"
    )
    parts = f" into at least {-(-names // budget)} parts" if names else ""
    more = (
        f", or ingest it into a Dataset (Dataset.ingest keeps up to {MAX_NODE_NAMES_PER_INGEST:,})"
        if budget < MAX_NODE_NAMES_PER_INGEST
        else ""
    )
    size = budget * _COMPACT_NAME_BYTES
    size_text = f"{size / 2**30:.1f} GiB" if size >= 2**30 else f"{size / 2**20:.1f} MiB"
    return (
        f"its NodeList fields name {held} (every job's and step's nodes counted), more "
        f"than the {budget:,} {reader} keeps of one input (about {size_text}; each list at most "
        f"{MAX_HOSTLIST_NODES:,}): refused before expanding them, to bound memory; split the "
        f"export by --starttime/--endtime{parts}{more}"
    )


_EXPORT_HINT = f"export with: {SACCT_EXPORT_COMMAND}"


class SacctReader:
    """Read one sacct export (see the module notes); one instance per input.

    Parameters
    ----------
    src : str
        The input's name, for errors and the quarantine.
    cluster : str or None
        Cluster name for an export without a ``Cluster`` field.
    tz : str or None
        IANA time zone of local ISO times in the export.
    names : list of str or None
        The fields of ``--noheader`` output, in ``--format`` order (``fields=``); None: the
        export has header lines.
    """

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
        #: records read in the other --parsable form than their header's (trailing '|')
        self.other_form = 0
        #: lines the record assembly consumed (mapped front end)
        self.consumed: set[int] = set()
        self.mapped: object | None = None
        self._window_records: list[tuple[int, list[str]]] = []
        #: allocation and step frames parsed from the bulk of the input, in line order; the
        #: frames after them hold the assembled records (mapped front end), parsed last
        self._bulk_parts: tuple[int, int] | None = None
        #: per-value fields parsed so far (finish's cache)
        self._values = ValueTable()

    # -- driving --------------------------------------------------------------------------
    def run(self, path: str | Path) -> ReadResult:
        """Read a sacct export: memory-mapped if the front end can take it, else as a block stream.

        Parameters
        ----------
        path : str or Path
            The export (plain or gzip; UTF-16/32 text is streamed).

        Returns
        -------
        ReadResult
            Jobs rows, quarantine and notes.
        """
        if not is_gzip(path) and not wide_text(path):
            mapped = SacctReader(self.src, cluster=self.cluster, tz=self.tz, names=self.fields)
            if read_mapped(mapped, path):
                return mapped._result(path)
        return self.run_blocks(path)

    def run_blocks(self, path: str | Path) -> ReadResult:
        """Read a sacct export as a stream of blocks of whole lines.

        Parameters
        ----------
        path : str or Path
            The export (plain or gzip).

        Returns
        -------
        ReadResult
            Jobs rows, quarantine and notes.
        """
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
            sample = data[pos : pos + 65536].decode("utf-8", "replace")
            self.set_layout(self.fields_layout(sample), line)
            rest = data[pos:]
            return Block(rest, line, block.n_lines - (line - block.first_line))
        layout = parse_header(text)
        if layout is None:
            self.no_header(text, line)
        assert layout is not None
        self.set_layout(layout, line)
        rest = data[end + 1 :] if nl >= 0 else b""
        return Block(rest, line + 1, max(block.n_lines - (line - block.first_line) - 1, 0))

    def fields_layout(self, sample: str) -> Layout:
        """Build the layout of ``fields=`` for ``--noheader`` output.

        Parameters
        ----------
        sample : str
            The first lines of the export, from which ``--parsable``'s trailing ``|`` is
            recognised.

        Returns
        -------
        Layout
            The given fields, and whether lines end with a spare ``|``.
        """
        assert self.fields is not None
        lines = [
            ln.rstrip("\r")
            for ln in sample.split("\n")[:64]
            if ln.strip() and not ln.startswith("#")
        ]
        n = len(self.fields)
        if lines and not any(x.count("|") in (n - 1, n) for x in lines):
            # not one line fits: the fields are not the export's (checked before the fields'
            # content, e.g. a missing Cluster, so the message names the real mistake)
            raise IngestError(
                self.src,
                Hinted(
                    "option ",
                    Hint("fields", action=False),
                    f" names {n} fields, but none of the first {len(lines)} lines has "
                    f"{n} (the first has {lines[0].count('|') + 1}, '|'-separated): give the "
                    "--format list the export was made with, in its order",
                ),
            )
        trailing = sum(x.endswith("|") and x.count("|") == n for x in lines) > len(lines) / 2
        return Layout(tuple(self.fields), trailing)

    def take_window_record(self, line_no: int, rec: Record) -> None:
        """Take a record the assembly made (mapped front end).

        It is quarantined, or kept for the typed parse of :meth:`parse_window_records`.

        Parameters
        ----------
        line_no : int
            The record's first line number.
        rec : Record
            The assembled record (``values`` None when malformed, with the reason).
        """
        self.n_records += 1
        if rec.values is None:
            self.quarantine.append((line_no, rec.raw, rec.reason))
            return
        self.other_form += rec.other_form
        self.window_raw[line_no] = rec.raw
        self._window_records.append((line_no, rec.values))

    def parse_window_records(self) -> None:
        """Typed parse of the records the assembly kept (mapped front end)."""
        layout = self.layout
        if not self._window_records or layout is None:
            return
        cols = sorted({0} | {i for i, n in enumerate(layout.names) if read_column(n)})
        recs = pl.DataFrame(
            {
                "line_no": [ln for ln, _ in self._window_records],
                **{
                    layout.names[i]: [v[i] if v[i] != "" else None for _, v in self._window_records]
                    for i in cols
                },
            },
            schema={"line_no": pl.Int64, **{layout.names[i]: pl.String for i in cols}},
        )
        first = int(recs.item(0, "line_no"))
        self._bulk_parts = (len(self.allocs), len(self.steps))
        self._parse(recs, lambda ln: self.window_raw.get(ln, ""), first)
        self._window_records = []

    def no_header(self, text: str, line: int) -> None:
        """Refuse an export whose first data line is not a sacct header, saying what it is.

        Parameters
        ----------
        text : str
            The first non-comment line.
        line : int
            Its line number.

        Raises
        ------
        IngestError
            Always: a wrong delimiter (``,``, tab, ``;``), sacct's fixed-width table, or no header
            (with how to pass ``fields=`` for ``--noheader`` output).
        """
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
        names = [n.strip() for n in text.split("|")]
        unknown = [n for n in names if n and n.lower() not in SACCT_FIELDS]
        if len(names) > 1 and unknown and any(HEADER_FIRST.match(n) for n in names):
            raise IngestError(
                self.src,
                f"a header line names fields sacct does not print ({', '.join(unknown[:3])}): "
                f"a header must name sacct fields only when JobID is not first; {_EXPORT_HINT}",
                line=line,
            )
        raise IngestError(
            self.src,
            Hinted(
                "no sacct header line (the first field should be JobID); for --noheader output ",
                Hint("fields", Placeholder("[...]")),
                f" in the --format order; {_EXPORT_HINT}",
            ),
            line=line,
        )

    def set_layout(self, layout: Layout, line: int) -> None:
        """Start a section of the export with a header's layout.

        Parameters
        ----------
        layout : Layout
            The header's fields.
        line : int
            The header's line number.

        Raises
        ------
        IngestError
            If a required field is missing, or there is no ``Cluster`` field and no ``cluster=``.
        """
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
                self.src,
                Hinted("the export has no Cluster field: ", Hint("cluster")),
                field="Cluster",
            )
        self.layout = layout
        self.layouts.append(layout)
        self.sections += 1

    def _long_line(self, item: LongLine) -> None:
        self.n_records += 1
        self.quarantine.append(
            (
                item.line_no,
                item.prefix,
                f"line of {item.n_bytes:,} bytes, longer than any sacct record (the limit is "
                f"{_sacct_io.MAX_LINE_BYTES:,} bytes): not read",
            )
        )

    # -- one block ------------------------------------------------------------------------
    def _block(self, block: Block, *, final: bool) -> Block | None:
        layout = self.layout
        assert layout is not None
        if block.n_lines == 0 or not block.data:
            return None
        data = block.data
        n_fields = len(layout.names) + int(layout.trailing)
        cols = sorted({0} | {i for i, n in enumerate(layout.names) if read_column(n)})
        frame = block_frame(data, n_fields, cols)
        if frame.height != block.n_lines:  # pragma: no cover - polars kept one row per line
            raise IngestError(
                self.src, "internal error: lines and rows disagree", line=block.first_line
            )
        e = layout.expected
        headerish = frame.get_column("f0").str.contains(headerish_pattern(layout)).fill_null(False)
        has_nul = b"\x00" in data
        clean = (
            not has_nul
            and not bool(headerish.any())
            and regular_lines(np.frombuffer(data, np.uint8), e, layout.trailing)
        )
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
            if layout.trailing:  # (a line without the trailing '|': --parsable2 output)
                marks |= ~ends_with_bar(np.frombuffer(data, np.uint8), ends, starts)
            if has_nul:
                arr = np.frombuffer(data, np.uint8)
                nul_lines = np.searchsorted(ends, np.flatnonzero(arr == 0))
                marks[nul_lines[nul_lines < block.n_lines]] = True
            anomalies = np.flatnonzero(marks).tolist()
            asm = assemble(
                lambda i: line_text(data, int(starts[i]), int(ends[i]), keep_nul=True),
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
            self.other_form += r.other_form
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
        span_cache: list = [spans]

        def raw_of(ln: int) -> str:
            if span_cache[0] is None:
                span_cache[0] = line_spans(data, block.n_lines)
            starts, ends, _ = span_cache[0]
            i = ln - block.first_line
            return line_text(data, int(starts[i]), int(ends[i]))

        self._parse(recs, raw_of, block.first_line)
        if new_section is not None:
            idx, new = new_section
            self.set_layout(new, block.first_line + idx)
            rest_start = int(spans[1][idx]) + 1 if spans is not None else len(data)
            rest = Block(data[rest_start:], block.first_line + idx + 1, block.n_lines - idx - 1)
            return self._block(rest, final=final)
        if carry is not None and spans is not None:
            return Block(
                data[int(spans[0][carry]) :], block.first_line + carry, block.n_lines - carry
            )
        return None

    def _parse(self, recs: pl.DataFrame, raw_of: Callable[[int], str], first_line: int) -> None:
        """Parse a frame of string records into typed rows.

        ``raw_of(line_no)`` gives a bulk record's text for the quarantine (window records keep theirs
        in ``window_raw``).
        """
        if recs.height == 0:
            return
        typed = typed_plan(
            recs.lazy(),
            set(recs.columns),
            tz=self.tz,
            cluster=self.cluster,
            times=time_form_of(recs),
        )
        typed = typed.collect()

        def raw_fields(lines: list[int]) -> pl.DataFrame:
            return recs.filter(pl.col("line_no").is_in(pl.Series(lines, dtype=pl.Int64).implode()))

        self.take(typed, raw_fields, raw_of, first_line)

    def take(
        self,
        typed: pl.DataFrame,
        raw_fields: Callable[[list[int]], pl.DataFrame],
        raw_of: Callable[[int], str],
        first_line: int,
        *,
        ascii_only: bool = False,
    ) -> None:
        """Finish the parse of a batch of :func:`typed_plan` columns and keep its rows.

        Parameters
        ----------
        typed : polars.DataFrame
            The batch's columns parsed by :func:`typed_plan`.
        raw_fields : callable
            ``raw_fields(line_nos)`` gives those records' raw fields (for the fields the plan could
            not type).
        raw_of : callable
            ``raw_of(line_no)`` gives a record's raw text, for the quarantine.
        first_line : int
            Line number of the batch's first record.
        ascii_only : bool
            The batch was read from bytes that are all ASCII (so no text was replaced).
        """
        layout = self.layout
        assert layout is not None
        if typed.height == 0:
            return
        has_gpu = any("TRES" in n or "GRES" in n for n in layout.names)
        parsed: Parsed = finish(typed, raw_fields, tz=self.tz, gpu=has_gpu, cache=self._values)
        self.naive |= parsed.naive
        if not self.replaced and not ascii_only:
            for frame in (parsed.allocs, parsed.steps):
                names = frame.get_column("name")
                if frame.height and names.str.contains("\ufffd", literal=True).any():
                    self.replaced = True
        # the batch's node lists expanded now (compact), and its NodeList text let go: the
        # input's host names are never held as strings all at once
        budget, reader = _NODE_BUDGET.get()
        try:
            allocs, steps, late, names = complete(
                parsed.allocs, parsed.steps, node_budget=budget - self.node_names
            )
        except hostlist.NodeBudgetError as exc:
            raise IngestError(
                self.src,
                _budget_refusal(
                    None if exc.names is None else self.node_names + exc.names,
                    budget,
                    reader,
                    at_line=int(typed.get_column("line_no").max() or first_line),
                ),
            ) from None
        self.node_names += names
        if allocs.height:
            self.allocs.append(allocs)
        if steps.height:
            self.steps.append(steps)
        for ln, reason in [*parsed.bad.iter_rows(), *late]:
            raw = self.window_raw.pop(ln, None)
            self.quarantine.append((ln, raw if raw is not None else raw_of(ln), reason))

    # -- the result -----------------------------------------------------------------------
    def _result(self, path: str | Path) -> ReadResult:
        src = self.src
        if self.naive and self.tz is None:
            raise IngestError(
                src,
                Hinted(
                    "sacct prints local times without a zone: ",
                    Hint("tz"),
                    " (e.g. 'UTC' or the cluster's zone), or export with SLURM_TIME_FORMAT=%s",
                ),
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
        if self.other_form:
            notes.append(
                f"{self.other_form} line(s) in the other sacct form than their header line "
                "(a trailing '|' where the header has none, or none where it has one: "
                "--parsable and --parsable2 output mixed?): each read by its own field count"
            )
        if self.replaced:
            notes.append("input is not valid UTF-8: undecodable bytes were replaced by U+FFFD")
        if not any("TRES" in n or "GRES" in n for lay in self.layouts for n in lay.names):
            notes.append(
                "no AllocTRES/ReqTRES/GRES field: n_accelerators set to 0 (GPU count unknown)"
            )
        n_allocs, n_steps = self._bulk_parts or (len(self.allocs), len(self.steps))
        allocs = _in_line_order(self.allocs, n_allocs, completed_schema("allocs"))
        steps = _in_line_order(self.steps, n_steps, completed_schema("steps"))
        self.allocs, self.steps = [], []
        negative = allocs.height and int((allocs.get_column("exit_code") < 0).sum())
        negative += steps.height and int((steps.get_column("exit_code") < 0).sum())
        if negative:
            unknown = pl.when(pl.col("exit_code") >= 0)
            allocs = allocs.with_columns(unknown.then("exit_code"), unknown.then("exit_signal"))
            steps = steps.with_columns(unknown.then("exit_code"), unknown.then("exit_signal"))
            notes.append(
                f"{negative} record(s) with a negative ExitCode (e.g. '-2:0': Slurm before "
                "15.08 printed internal values there, not an exit status): kept with the exit "
                "code unknown"
            )
        n_allocs = allocs.height
        # the duplicate candidates, and the job-id checks, which hold for the rows kept unless
        # some are quarantined below (the node lists were expanded batch by batch, as the
        # records were taken)
        cand_a, cand_s, dup, note, same_a, same_s = _early_checks(allocs, steps)
        late: list[tuple[int, str]] = []
        allocs, rep_a = exact_duplicates(allocs, lambda ls: self._fetch_raw(path, ls), cand_a)
        steps, rep_s = exact_duplicates(steps, lambda ls: self._fetch_raw(path, ls), cand_s)
        late += [(r, f"exact duplicate of line {f}") for r, f in rep_a + rep_s]
        if rep_a or rep_s:
            notes.append(
                f"{len(rep_a) + len(rep_s)} record(s) repeat an earlier record exactly "
                "(concatenated exports?): counted once, the repeats quarantined"
            )
        seen_twice: list[tuple[int, str]] = []
        if same_a is not None:
            allocs, seen = same_attempts(allocs, schema.TABLES["jobs"].key, same_a)
            seen_twice += seen
        if same_s is not None:
            steps, seen = same_attempts(steps, schema.TABLES["job_steps"].key, same_s)
            seen_twice += seen
        if seen_twice:
            late += seen_twice
            notes.append(
                f"{len(seen_twice)} record(s) are an attempt or step the export holds twice with "
                "another state (an export taken while jobs ran, concatenated with a later "
                "one?): the finished record kept, the others quarantined"
            )
        # resized jobs' segments last: a record seen twice would be taken for a segment
        allocs, resize_bad, resize_notes = resize_segments(allocs)
        late += resize_bad
        notes += resize_notes
        if late:
            raw = self._fetch_raw(path, [ln for ln, _ in late])
            for ln, reason in late:
                self.quarantine.append((ln, raw.get(ln, ""), reason))
        if allocs.height != n_allocs:  # rows were only removed: the early checks are stale
            dup = duplicated(allocs, ["cluster", "job_id"])
            note = missing_duplicates_note(allocs, dup=dup)
        if note:
            notes.append(note)
        ambiguous = repeated_hour_times(allocs, self.tz)
        if ambiguous:
            notes.append(
                f"{ambiguous:,} start/end time(s) fall in the hour repeated when daylight saving "
                f"time ended ({self.tz}): each read as the instant that keeps Submit <= Start <= "
                "End, the earlier one where both do (then possibly an hour off); export with "
                "SLURM_TIME_FORMAT=%s for exact times"
            )
        # the added columns are chunked like the rows (else polars copies the whole table)
        topology = pl.repeat(None, allocs.height, dtype=pl.String, eager=True).alias("topology")
        jobs = allocs.with_columns(
            chunked_like(number_attempts(allocs, dup), allocs), chunked_like(topology, allocs)
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


#: most assembled records merged into the bulk by slicing (more: one sort)
_MERGE_MAX = 10_000


def _in_line_order(parts: list[pl.DataFrame], n_bulk: int, empty: dict) -> pl.DataFrame:
    """Concatenate parsed frames in line order, without copying the rows.

    ``parts[:n_bulk]`` are in line order, one after another; the frames after them (the
    records the assembly made, from the windows with anomalies) are in line order among
    themselves and go between the bulk's rows. A few of them are put in place by slicing the
    bulk around them (a sort would copy every row of the input: 0.1 s and a third more peak
    memory for one bad line in 1 M allocations). Parts that are not in line order as said
    (which the readers never make) are sorted, not merged out of order.
    """
    if not parts:
        return pl.DataFrame(schema=empty)
    bulk = pl.concat(parts[:n_bulk]) if n_bulk else None
    tail = pl.concat(parts[n_bulk:]) if n_bulk < len(parts) else None
    if tail is None or bulk is None:
        one = bulk if tail is None else tail
        assert one is not None
        return one if one.get_column("line_no").is_sorted() else one.sort("line_no")
    in_order = bulk.get_column("line_no").is_sorted() and tail.get_column("line_no").is_sorted()
    if tail.height > _MERGE_MAX or not in_order:
        return pl.concat([bulk, tail]).sort("line_no")
    at = bulk.get_column("line_no").search_sorted(tail.get_column("line_no")).to_list()
    pieces, prev = [], 0
    for i, p in enumerate(at):
        pieces += [bulk.slice(prev, p - prev), tail.slice(i, 1)]
        prev = p
    pieces.append(bulk.slice(prev))
    return pl.concat(pieces)


def _early_checks(
    allocs: pl.DataFrame, steps: pl.DataFrame
) -> tuple[pl.Series, pl.Series, np.ndarray, str | None, pl.Series | None, pl.Series | None]:
    """Run the checks of the end of a read that need no node list.

    Returns the exact-duplicate candidates of allocations and steps, the mask of allocations
    whose job id repeats, the note of an export made without ``--duplicates``, and the
    ``line_no`` of the allocations and steps of the job ids that repeat (None if none).
    """
    dup = duplicated(allocs, ["cluster", "job_id"])
    note = missing_duplicates_note(allocs, dup=dup)
    # the records that may be one attempt seen twice: those of the job ids that repeat
    same_a = allocs.get_column("line_no").filter(pl.Series(dup)) if dup.any() else None
    same_s = None
    if same_a is not None and steps.height:
        ids = allocs.filter(pl.Series(dup)).get_column("job_id").unique()
        same_s = steps.get_column("line_no").filter(steps.get_column("job_id").is_in(ids.implode()))
    # two allocations that repeat each other exactly share a job id: only those rows can
    cand_a = (
        duplicate_candidates(allocs.filter(pl.Series(dup)))
        if dup.any()
        else allocs.get_column("line_no").clear()
    )
    return cand_a, duplicate_candidates(steps), dup, note, same_a, same_s


def _join(a: Block | None, b: Block | None) -> Block:
    """Two consecutive blocks as one (either may be None, not both)."""
    if a is None:
        assert b is not None
        return b
    if b is None:
        return a
    return Block(a.data + b.data, a.first_line, a.n_lines + b.n_lines)
