"""Assembling sacct records from the physical lines of a block that is not clean.

``sacct --parsable2`` does no escaping: a ``|`` inside a free-text field (job name, comment,
submit line) adds separators, and a newline splits a record over several physical lines. A
user controls those fields, so the assembly must never let one user's text change another
user's record. The rules, applied only around the lines that do not have the header's number
of separators (everything else is split in bulk by polars):

* A record starts with a line whose first field is well formed (a job id). A line with too
  few separators opens a record; the following short (or blank) lines are appended while the
  separators are short of the header's count, and the joined text must then place its surplus
  ``|`` in the free-text fields in exactly one way that leaves every structured field well
  formed (:func:`place`), else the lines are quarantined together.
* If the next line has the full count (it may be a forged record or a header inside the job
  name), the record may span it only up to a closing line that is not a clean record itself
  (its separator count is not the header's, or its first field is not a job id), within
  :data:`SPAN_LINES` lines; such a record is quarantined whole, with the spanned lines, so
  that no line inside a job name becomes a record. Spanning is not tried right after a record
  start that failed, so a stray closing fragment cannot swallow the records after it.

What no parser of ``--parsable2`` can tell apart: when a free-text field is the *last* field,
a job name can hold a whole forged line with the header's separator count, which reads as a
record. The recommended export (:data:`~reliability.ingest.sacct.fields.EXPORT_FIELDS`) puts
JobName second, so that the most a job name can do is relabel its own job's record with
another job id; ``--json`` output has no such problem.
* A line that looks like a header (first field ``JobID``, or the header's own first field
  when the export's ``--format`` does not start with JobID) starts a new section only if it
  names known sacct fields, including the required ones, and the lines after it read better
  under it than under the current header (more of them have its field count and well-formed
  fields). A repeated copy of the current header is skipped. Otherwise the line is part of
  the previous record's last free-text field (if the joined record is well formed) or
  quarantined: a header injected through a job name re-maps nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from reliability.ingest.sacct.fields import (
    FIELD_PATTERNS,
    HEADER_FIRST,
    REQUIRED_FIELDS,
    SACCT_FIELDS,
    TEXT_FIELDS,
)
from reliability.ingest.sacct.io import HEADERISH_PATTERN

__all__ = [
    "HEADER_LOOKAHEAD",
    "SPAN_LINES",
    "Assembly",
    "Layout",
    "Record",
    "assemble",
    "headerish_pattern",
    "known_header",
    "parse_header",
    "place",
]

#: most physical lines a record may span across lines that have the full separator count
SPAN_LINES = 8
#: lines after a header-like line that decide whether it starts a new section
HEADER_LOOKAHEAD = 16
#: most candidate placements of surplus '|' that are examined for one record
_MAX_PLACEMENTS = 1000
#: bound on the placement search (fields x parts x surplus)
_MAX_WORK = 2_000_000


@dataclass(frozen=True)
class Layout:
    """The fields of one section of an export (one header line)."""

    names: tuple[str, ...]
    trailing: bool  # --parsable: every line ends with a spare '|'

    @property
    def expected(self) -> int:
        """Separators per physical line of a clean record."""
        return len(self.names) - 1 + int(self.trailing)

    @property
    def text_idx(self) -> tuple[int, ...]:
        """Positions of the free-text fields."""
        return tuple(i for i, n in enumerate(self.names) if n in TEXT_FIELDS)

    def pattern(self, i: int) -> re.Pattern[str] | None:
        """Return the full-match pattern of a field.

        Parameters
        ----------
        i : int
            The field's position.

        Returns
        -------
        re.Pattern or None
            Its pattern; None for fields of any shape.
        """
        return FIELD_PATTERNS.get(self.names[i])

    def starts_record(self, first: str) -> bool:
        """Tell whether a value can be the first field of a record.

        Parameters
        ----------
        first : str
            The text before a line's first ``|``.

        Returns
        -------
        bool
            True if it matches the first field's pattern (or that field has none).
        """
        pat = self.pattern(0)
        return (pat.fullmatch(first) is not None) if pat is not None else True

    def same_as(self, other: Layout) -> bool:
        """Tell whether another layout has the same fields (case-insensitively) in the same order.

        Parameters
        ----------
        other : Layout
            The other layout.

        Returns
        -------
        bool
            True when the fields and the trailing ``|`` agree.
        """
        return self.trailing == other.trailing and [n.lower() for n in self.names] == [
            n.lower() for n in other.names
        ]


def parse_header(line: str) -> Layout | None:
    """Parse a sacct header line.

    A header's first field is ``JobID`` or ``JobIDRaw``, or it names only fields sacct prints,
    ``JobID`` or ``JobIDRaw`` among them (``--format=JobName,JobID,...``: any order works);
    duplicate names are numbered (``JobName_2``) as sacct prints a field once per mention in
    ``--format``.

    Parameters
    ----------
    line : str
        A line of the export.

    Returns
    -------
    Layout or None
        Its layout, or None if ``line`` is not a header.
    """
    if "|" not in line:
        return None
    names = [n.strip() for n in line.rstrip("\r").split("|")]
    trailing = names[-1] == "" and len(names) > 1
    if trailing:
        names = names[:-1]
    if any(not n for n in names):
        return None
    if not HEADER_FIRST.match(names[0]) and not (
        all(n.lower() in SACCT_FIELDS for n in names) and any(HEADER_FIRST.match(n) for n in names)
    ):
        return None
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}_{seen[n]}")
    return Layout(tuple(out), trailing)


def known_header(layout: Layout) -> bool:
    """Tell whether a header is one sacct prints.

    Parameters
    ----------
    layout : Layout
        A parsed header.

    Returns
    -------
    bool
        True if every field is one sacct prints, each once, and the required ones are there.
    """
    lower = [n.lower() for n in layout.names]
    return (
        len(set(lower)) == len(lower)
        and all(n in SACCT_FIELDS for n in lower)
        and all(r.lower() in lower for r in REQUIRED_FIELDS)
    )


def _valid(layout: Layout, i: int, value: str) -> bool:
    pat = layout.pattern(i)
    return pat is None or pat.fullmatch(value) is not None


def place(parts: Sequence[str], layout: Layout) -> tuple[list[str] | None, str]:
    """Assign the parts of a record split at every ``|`` to the layout's fields.

    Surplus parts go to free-text fields; structured fields must match their patterns.

    Parameters
    ----------
    parts : sequence of str
        The record split at every ``|``.
    layout : Layout
        The section's fields.

    Returns
    -------
    (list of str or None, str)
        (values, ``""``) for the one placement (after Slurm-aware tie-breaks), or (None,
        reason).
    """
    names, n, total = layout.names, len(layout.names), len(parts)
    if total < n:
        return None, f"{total} fields, expected {n}: truncated or malformed record"
    extra = total - n
    text = layout.text_idx
    if extra == 0:
        if all(_valid(layout, i, parts[i]) for i in range(n)):
            return list(parts), ""
        return None, "rejoined lines do not form a well-formed record"
    if not text:
        return None, f"{total} fields, expected {n}, and no free-text field to hold '|'"
    first, last = text[0], text[-1]
    # fields before the first and after the last free-text field are fixed
    for i in range(first):
        if not _valid(layout, i, parts[i]):
            return None, _no_placement(layout, total)
    for k, i in enumerate(range(last + 1, n)):
        if not _valid(layout, i, parts[total - (n - last - 1) + k]):
            return None, _no_placement(layout, total)
    lo, hi = first, total - (n - last - 1)  # parts[lo:hi] go to fields first..last
    mid = list(range(first, last + 1))
    if len(mid) * (hi - lo) * (extra + 1) > _MAX_WORK:
        return None, f"{total} fields, expected {n}: too many '|' to place in free-text fields"
    # ways[f][q]: placements of fields mid[f:] onto parts[q:hi]
    m = len(mid)
    ways = [[0] * (hi - lo + 2) for _ in range(m + 1)]
    ways[m][hi - lo] = 1
    for f in range(m - 1, -1, -1):
        i = mid[f]
        row, nxt = ways[f], ways[f + 1]
        if i in text:
            for q in range(hi - lo - 1, -1, -1):
                acc = 0
                for r in range(1, extra + 2):
                    if q + r > hi - lo:
                        break
                    if nxt[q + r] and _valid(layout, i, "|".join(parts[lo + q : lo + q + r])):
                        acc += nxt[q + r]
                row[q] = min(acc, _MAX_PLACEMENTS + 1)
        else:
            for q in range(hi - lo - 1, -1, -1):
                row[q] = nxt[q + 1] if _valid(layout, i, parts[lo + q]) else 0
    count = ways[0][0]
    if count == 0:
        return None, _no_placement(layout, total)
    if count > _MAX_PLACEMENTS:
        return None, "too many ways to place '|' in free-text fields"
    found: list[list[str]] = []

    def walk(f: int, q: int, acc: list[str]) -> None:
        if f == m:
            found.append(acc)
            return
        i = mid[f]
        if i in text:
            for r in range(1, extra + 2):
                if q + r <= hi - lo and ways[f + 1][q + r]:
                    value = "|".join(parts[lo + q : lo + q + r])
                    if _valid(layout, i, value):
                        walk(f + 1, q + r, [*acc, value])
        elif ways[f + 1][q + 1]:
            walk(f + 1, q + 1, [*acc, parts[lo + q]])

    walk(0, 0, [])
    candidates = [[*parts[:first], *middle, *parts[hi:]] for middle in found]
    if len(candidates) == 1:
        return candidates[0], ""
    return _tie_break(candidates, layout, names)


def _no_placement(layout: Layout, total: int) -> str:
    names = ", ".join(layout.names[i] for i in layout.text_idx)
    return (
        f"{total} fields, expected {len(layout.names)}; no placement of the extra '|' in "
        f"free-text fields ({names}) gives well-formed fields"
    )


def _tie_break(
    candidates: list[list[str]], layout: Layout, names: Sequence[str]
) -> tuple[list[str] | None, str]:
    # In order: (1) Slurm repeats the job name / comment inside SubmitLine, so prefer splits
    # whose '|'-holding values reappear verbatim in another field; (2) prefer fewer values that
    # begin or end with '|' (an empty neighbour swallowed); (3) prefer the fields that most
    # often hold '|' (the order of TEXT_FIELDS).
    rank = {f: r for r, f in enumerate(TEXT_FIELDS)}

    def key(values: list[str]) -> tuple[int, int, int]:
        reappear = edges = prio = 0
        for i in layout.text_idx:
            v = values[i]
            if "|" not in v:
                continue
            if any(v in values[j] for j in range(len(values)) if j != i):
                reappear += 1
            if v.startswith("|") or v.endswith("|"):
                edges += 1
            prio += rank[names[i]]
        return (-reappear, edges, prio)

    keys = [key(v) for v in candidates]
    best = min(keys)
    if keys.count(best) == 1:
        return candidates[keys.index(best)], ""
    text = ", ".join(names[i] for i in layout.text_idx)
    return None, f"ambiguous '|' inside free-text fields ({text}): cannot split unambiguously"


@dataclass
class Record:
    """A record assembled from physical lines ``first``..``last`` (0-based in the block)."""

    first: int
    last: int
    raw: str
    values: list[str] | None  # None: quarantined with ``reason``
    reason: str = ""
    #: read by its own field count, with or without the trailing ``|`` its header does not
    #: have (or has): ``--parsable`` and ``--parsable2`` lines mixed
    other_form: bool = False


@dataclass
class Assembly:
    """What :func:`assemble` made of the lines around the anomalies of a block."""

    records: list[Record] = field(default_factory=list)
    #: indexes of the lines handled here (the others are split in bulk)
    consumed: set[int] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    #: index of the first line left for the next block (a record may continue there)
    carry_from: int | None = None
    #: a header line that starts a new section: (line index, its layout)
    new_section: tuple[int, Layout] | None = None
    #: comment lines ('#') skipped at record starts
    comments: int = 0


class _NeedMore(Exception):
    """The decision at a line needs lines past the end of the block."""


def _headerish(line: str, layout: Layout) -> bool:
    """Tell whether a line may be a header.

    Its first field is JobID, or the current header's first field (when that is another
    field) and the line parses as a header.
    """
    if "|" not in line:
        return False
    first = line.split("|", 1)[0].strip()
    if HEADER_FIRST.match(first):
        return True
    return first.lower() == layout.names[0].lower() and parse_header(line) is not None


def headerish_pattern(layout: Layout) -> str:
    """Return the regular expression of a first field that may start a header line.

    Parameters
    ----------
    layout : Layout
        The current header's fields.

    Returns
    -------
    str
        ``JobID`` or ``JobIDRaw``, or the header's own first field (any case).
    """
    first = layout.names[0]
    if HEADER_FIRST.match(first):
        return HEADERISH_PATTERN
    return rf"(?i)^\s*(jobid(raw)?|{re.escape(first)})\s*$"


def _parts(raw: str, layout: Layout) -> list[str] | None:
    """Parts of a record's raw text, without the spare trailing part of --parsable."""
    parts = raw.split("|")
    if layout.trailing:
        if len(parts) > 1 and parts[-1] == "":
            return parts[:-1]
        return None
    return parts


def _other_form(line: str, layout: Layout) -> list[str] | None:
    """Parts of a line in the other ``--parsable`` form than its header's, or None.

    A ``--parsable`` header (trailing ``|``) with a line that does not end with ``|``: every
    part; a ``--parsable2`` header with a line that ends with ``|``: the parts before it.
    """
    ends = line.endswith("|")
    if layout.trailing and not ends:
        return line.split("|")
    if not layout.trailing and ends:
        return line.split("|")[:-1]
    return None


def _malformed(values: Sequence[str], layout: Layout) -> str:
    """Name the first field of a record that does not have its field's form."""
    for i, v in enumerate(values):
        if not _valid(layout, i, v):
            return f"field {layout.names[i]} is not well formed: '{v[:80]}'"
    return "every field is well formed"


def _n_fields(raw: str, layout: Layout) -> int:
    """Fields of a record's text (without the spare trailing part of ``--parsable``)."""
    parts = raw.split("|")
    if layout.trailing and len(parts) > 1 and parts[-1] == "":
        return len(parts) - 1
    return len(parts)


def _count_reason(raw: str, layout: Layout, what: str) -> str:
    """Say a record's field count against its header's, and why it is not read."""
    n = _n_fields(raw, layout)
    if layout.trailing:
        found = f"{n} fields, expected {len(layout.names)} (--parsable: each line ends with '|')"
    elif raw.endswith("|"):
        found = (
            f"{n} fields (the last one empty: the trailing '|' of --parsable?), expected "
            f"{len(layout.names)}"
        )
    else:
        found = f"{n} fields, expected {len(layout.names)}"
    return f"{found}: {what}"


def _score(line: str, layout: Layout) -> bool:
    parts = _parts(line, layout)
    return (
        parts is not None
        and len(parts) == len(layout.names)
        and all(_valid(layout, i, v) for i, v in enumerate(parts))
    )


class _Assembler:
    def __init__(
        self,
        text: Callable[[int], str],
        counts: Sequence[int],
        layout: Layout,
        final: bool,
        line_no: Callable[[int], int],
    ) -> None:
        self.text, self.counts, self.layout = text, counts, layout
        self.final, self.line_no = final, line_no
        self.n = len(counts)
        self.e = layout.expected
        self.out = Assembly()
        self.failed_head = -(10**9)
        self.last: Record | None = None
        self._cache: dict[int, str] = {}

    def t(self, i: int) -> str:
        if i >= self.n:
            raise _NeedMore
        got = self._cache.get(i)
        if got is None:
            got = self._cache[i] = self.text(i)
        return got

    def emit(self, rec: Record) -> None:
        self.out.records.append(rec)
        self.out.consumed.update(range(rec.first, rec.last + 1))
        self.last = rec

    def quarantine(self, first: int, last: int, reason: str) -> None:
        raw = "\n".join(self.t(j) for j in range(first, last + 1))
        self.emit(Record(first, last, raw, None, reason))

    # -- one record starting at line i; returns the index of the next record start --------
    def record_at(self, i: int) -> int:
        line, c, e, lay = self.t(i), self.counts[i], self.e, self.layout
        if line.strip() == "":
            self.out.consumed.add(i)
            return i + 1
        if line.startswith("#") and not lay.starts_record(line.split("|", 1)[0].strip()):
            # not sacct output: an annotation someone added (sacct never prints '#')
            self.out.consumed.add(i)
            self.out.comments += 1
            return i + 1
        if _headerish(line, lay):
            return self.header_at(i)
        if c == e and _parts(line, lay) is not None:
            self.emit(Record(i, i, line, _parts(line, lay)))
            return i + 1
        first = line.split("|", 1)[0]
        if not lay.starts_record(first.strip()):
            self.quarantine(
                i,
                i,
                _count_reason(
                    line,
                    lay,
                    "the first field is not a job id: a fragment of a record split by a newline",
                ),
            )
            return i + 1
        read = self.own_line(i)
        if read is not None:
            return read
        if c == e:  # (a --parsable header, and a line that does not end with '|')
            self.emit(
                Record(
                    i,
                    i,
                    line,
                    None,
                    _count_reason(
                        line,
                        lay,
                        "no '|' in a free-text field gives well-formed fields, with or "
                        "without the trailing '|' of --parsable",
                    ),
                )
            )
            return i + 1
        if c > e:
            parts = _parts(line, lay)
            values, reason = (
                place(parts, lay)
                if parts is not None
                else (
                    None,
                    _count_reason(
                        line,
                        lay,
                        "no '|' in a free-text field gives "
                        "well-formed fields, with or without the trailing '|' of --parsable",
                    ),
                )
            )
            if values is None and _other_form(line, lay) is not None and not lay.trailing:
                reason = _count_reason(
                    line,
                    lay,
                    "no '|' in a free-text field gives "
                    "well-formed fields, with or without the last one",
                )
            if values is not None or not self._short_next(i):
                self.emit(Record(i, i, line, values, reason))
                return i + 1
        return self.head_at(i)

    def own_line(self, i: int) -> int | None:
        """Read line i by itself when only the trailing ``|`` of ``--parsable`` is off.

        ``sacct --parsable`` ends every line with ``|``, ``--parsable2`` does not; a file may
        mix them (concatenated exports). A line in the other form than its header's is read
        by its own field count when its fields are well formed (placing any surplus ``|`` in
        free-text fields). It is never joined with the lines after it, except with a short
        fragment that completes it (a newline inside its last field, when that field is free
        text). When it also reads as a record of the header's own form, differently, it is
        quarantined as ambiguous. Returns the next line's index, or None when the line is
        not such a line.
        """
        line, lay = self.t(i), self.layout
        alt = self.other_values(i)
        if alt is None:
            return None
        c, e = self.counts[i], self.e
        if lay.trailing and c == e - 1 and self._short_next(i, e - 1):
            # a newline in the last field? the header's form joined with the next line
            raw = line + "\n" + self.t(i + 1)
            parts = _parts(raw, lay)
            if parts is not None:
                values, _ = place(parts, lay)
                if values is not None:
                    self.emit(Record(i, i + 1, raw, values))
                    return i + 2
        own = _parts(line, lay)
        if own is not None and c >= e:
            values, _ = place(own, lay)
            if values is not None and values != alt:
                self.emit(
                    Record(
                        i,
                        i,
                        line,
                        None,
                        _count_reason(
                            line,
                            lay,
                            "ambiguous: read with and without the trailing '|' of "
                            "--parsable, the fields differ",
                        ),
                    )
                )
                return i + 1
        self.emit(Record(i, i, line, alt, other_form=True))
        return i + 1

    def other_values(self, i: int) -> list[str] | None:
        """Values of line i read in the other ``--parsable`` form (None: not well formed)."""
        c, e, lay = self.counts[i], self.e, self.layout
        if c < e - 1:
            return None
        parts = _other_form(self.t(i), lay)
        if parts is None or len(parts) < len(lay.names):
            return None
        values, _ = place(parts, lay)
        return values

    def _short_next(self, i: int, below: int | None = None) -> bool:
        if i + 1 >= self.n:
            if not self.final:
                raise _NeedMore
            return False
        return self.counts[i + 1] < (self.e if below is None else below)

    def head_at(self, i: int) -> int:
        e, lay = self.e, self.layout
        j, total = i, self.counts[i]
        while total < e:
            if j + 1 >= self.n:
                if not self.final:
                    raise _NeedMore
                break
            if self.counts[j + 1] >= e or self._stands_alone(j + 1):
                break
            j += 1
            total += self.counts[j]
        if total >= e:
            raw = "\n".join(self.t(k) for k in range(i, j + 1))
            parts = _parts(raw, lay)
            if parts is None:
                values, reason = None, "line does not end with '|' as --parsable output does"
            else:
                values, reason = place(parts, lay)
            if values is not None:
                self.emit(Record(i, j, raw, values, reason))
                return j + 1
            # the lines have the count but do not place: the name may hold header-like or
            # record-like lines, and the record go on
            span = self.span_from(i, j) if i - self.failed_head > SPAN_LINES else None
            if span is not None:
                return span
            self.failed_head = i
            self.emit(Record(i, j, raw, None, reason))
            return j + 1
        if i - self.failed_head > SPAN_LINES:
            span = self.span_from(i, j)
            if span is not None:
                return span
        self.failed_head = i
        raw = "\n".join(self.t(k) for k in range(i, j + 1))
        what = "truncated or malformed record"
        alt = _other_form(raw, lay) if j == i else None
        if alt is not None and len(alt) == len(lay.names):
            what = f"read without the trailing '|' of --parsable, {_malformed(alt, lay)}"
        self.quarantine(i, j, _count_reason(raw, lay, what))
        return j + 1

    def _stands_alone(self, k: int) -> bool:
        """Line k is a record by itself in the other ``--parsable`` form than its header's."""
        line = self.t(k)
        if _other_form(line, self.layout) is None:
            return False
        first = line.split("|", 1)[0].strip()
        return self.layout.starts_record(first) and self.other_values(k) is not None

    def span_from(self, i: int, j: int) -> int | None:
        """Find a record from line i that spans full-count lines up to a closing line.

        First choice: the nearest closing line that cannot be a clean record itself. Else
        (a name can end in a line that looks like a clean record, e.g. one relabelling the
        job with another id), the nearest line after which the head's own steps follow
        (``<job id>.batch`` ...): the lines up to it belong to the head's record.
        """
        lay, e = self.layout, self.e
        last = min(i + SPAN_LINES, self.n)
        if not self.final and i + SPAN_LINES >= self.n:
            raise _NeedMore
        # (a job's steps follow it only where the first field is the job id)
        head_id = self.t(i).split("|", 1)[0].strip() if HEADER_FIRST.match(lay.names[0]) else None
        anchored: int | None = None
        for k in range(j + 1, last):
            line = self.t(k)
            first = line.split("|", 1)[0].strip()
            closer = (self.counts[k] != e or not lay.starts_record(first)) and not (
                self._stands_alone(k)
            )
            if not closer:
                if anchored is None and head_id is not None and k + 1 < self.n:
                    nxt = self.t(k + 1).split("|", 1)[0].strip()
                    if nxt.startswith(head_id + ".") and self._joins(i, k):
                        anchored = k
                continue
            if self._joins(i, k):
                return self._spanned(i, k)
        if anchored is not None:
            return self._spanned(i, anchored)
        return None

    def _joins(self, i: int, k: int) -> bool:
        parts = _parts("\n".join(self.t(x) for x in range(i, k + 1)), self.layout)
        return parts is not None and place(parts, self.layout)[0] is not None

    def _spanned(self, i: int, k: int) -> int:
        raw = "\n".join(self.t(x) for x in range(i, k + 1))
        self.emit(
            Record(
                i,
                k,
                raw,
                None,
                f"one record over lines {self.line_no(i)}-{self.line_no(k)} whose free text "
                "holds a line with a record's or a header's number of '|' (a job name with "
                "newlines?): quarantined whole, so that no line of it becomes a record",
            )
        )
        return k + 1

    def header_at(self, i: int) -> int:
        line, lay = self.t(i), self.layout
        new = parse_header(line)
        if new is not None and new.same_as(lay):
            self.out.consumed.add(i)
            self.out.notes.append(f"line {self.line_no(i)}: repeated header line skipped")
            return i + 1
        if new is not None and known_header(new):
            follow: list[str] = []
            k = i + 1
            while len(follow) < HEADER_LOOKAHEAD:
                if k >= self.n:
                    if not self.final:
                        raise _NeedMore
                    break
                nxt = self.t(k)
                if _headerish(nxt, lay):
                    after = parse_header(nxt)
                    if after is not None and known_header(after) and not after.same_as(new):
                        break  # another export's header: this section may well be empty
                    # a copy of the candidate, or a header-like line that is no header (a job
                    # name's text, a header run into a record): neither may end the look-ahead,
                    # or a forged header followed by it would be taken with no record to
                    # support it (issue 37); it reads well under neither layout
                    k += 1
                    continue
                if nxt.strip():
                    follow.append(nxt)
                k += 1
            new_score = sum(_score(x, new) for x in follow)
            old_score = sum(_score(x, lay) for x in follow)
            if new_score > old_score or not follow:
                self.out.consumed.add(i)
                self.out.new_section = (i, new)
                return i + 1
        # not a header the data follows: text of the previous record's last field, or bad
        prev = self.last
        if (
            prev is not None
            and prev.last == i - 1
            and prev.values is not None
            and not lay.trailing
            and lay.names[-1] in TEXT_FIELDS
        ):
            prev.values[-1] = prev.values[-1] + "\n" + line
            prev.raw = prev.raw + "\n" + line
            prev.last = i
            self.out.consumed.add(i)
            self.out.notes.append(
                f"line {self.line_no(i)}: a header line that the records after it do not "
                f"follow was read as part of the {lay.names[-1]} of the record above it"
            )
            return i + 1
        self.quarantine(
            i,
            i,
            "a line that looks like a sacct header, but the records after "
            "it do not follow it (a header inside a job name?)",
        )
        return i + 1


def assemble(
    text: Callable[[int], str],
    counts: Sequence[int],
    anomalies: Sequence[int],
    layout: Layout,
    *,
    final: bool,
    line_no: Callable[[int], int],
) -> Assembly:
    """Assemble the records around the anomalous lines of a block.

    Parameters
    ----------
    text : callable
        ``text(i)`` returns the decoded physical line ``i`` of the block.
    counts : sequence of int
        Separators per line of the block.
    anomalies : sequence of int
        Sorted indexes of the block's lines that do not have ``layout.expected`` separators or
        look like headers.
    layout : Layout
        The current section's fields.
    final : bool
        The block ends the input (else a decision that needs lines past the block end is left
        for the next block: ``carry_from``).
    line_no : callable
        ``line_no(i)`` returns the line's 1-based number in the input, for messages.

    Returns
    -------
    Assembly
        The records made from the lines around the anomalies; the other lines are untouched.
    """
    asm = _Assembler(text, counts, layout, final, line_no)
    out = _assemble(asm, counts, anomalies, layout)
    for rec in out.records:
        if "\x00" in rec.raw:
            _no_nul(rec, layout)
    return out


def _no_nul(rec: Record, layout: Layout) -> None:
    """Quarantine a record that holds a NUL byte, naming the field; replace NUL in its text.

    sacct prints C strings, which cannot hold NUL: a NUL is a corrupt line (a file system
    zero-filled a block after a crash, a copy went wrong). It is never kept in a field (where
    it would truncate the value for C readers downstream, or reach the report).
    """
    if rec.values is not None:
        field = next((layout.names[i] for i, v in enumerate(rec.values) if "\x00" in v), None)
        where = f"field {field}" if field is not None else "after the last field"
        rec.values = None
        rec.reason = (
            f"{where}: NUL byte (sacct prints none: a corrupt line; shown as U+FFFD in raw)"
        )
    rec.raw = rec.raw.replace("\x00", "\ufffd")


def _assemble(
    asm: _Assembler, counts: Sequence[int], anomalies: Sequence[int], layout: Layout
) -> Assembly:
    n, cursor = len(counts), 0
    marked = set(anomalies)
    for a in anomalies:
        if a < cursor:
            continue
        i = max(cursor, a - 1)
        try:
            while i < n and (i <= a or i in marked):
                i = asm.record_at(i)
                if asm.out.new_section is not None:
                    return asm.out
        except _NeedMore:
            prev = asm.last
            if prev is not None and prev.last == i - 1 and _headerish(asm.t(i), layout):
                # the decision at a header-like line may change the record before it: take
                # that record back and decide both with the next block
                asm.out.records.remove(prev)
                asm.out.consumed.difference_update(range(prev.first, prev.last + 1))
                i = prev.first
            asm.out.carry_from = i
            return asm.out
        cursor = i
    return asm.out
