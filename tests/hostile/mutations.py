"""Hypothesis strategies for hostile mutations of records and whole files, and the helpers
that read a mutated input and group its output rows by unit."""

from __future__ import annotations

import codecs
import gzip
import json
from collections import defaultdict
from pathlib import Path

from hypothesis import strategies as st

from hostile.samples import READERS, Sample
from reliability.errors import IngestError
from reliability.ingest import ReadResult

#: short strings that break parsers: separators, quotes, control bytes, sentinels, numbers
#: that overflow int64 / float64 / datetime, brackets that recurse
TOKENS = [
    '"', "'", "|", ",", ";", "\t", " ", "\n", "\r", "\r\n", "\x00", "\x1f", "\\", "#", "=",
    ":", "-", "+", "[", "]", "{", "}", "é", "\ufffd", "\u2028", "\ufeff", "NaN", "-Inf",
    "+Inf", "inf", "-1", "0", "9" * 30, str(2**63), str(2**64), str(2**32), "1e308", "1e400",
    "Unknown", "None", "", "(null)", "0000-01-01T00:00:00", "2025-13-01T00:00:00",
    "2025-02-30T00:00:00", "99999-01-01T00:00:00Z", "[" * 400, "{" * 50, "node[1-100000000]",
    "r[1-100000]n[1-100000]", "<xid 79>", "Xid 48", "NVRM: Xid (PCI:0000:00:00): ", "SXid ",
    "x" * 5000, "\u00b2", "\u0663", "\\ud800", "null",
]  # fmt: skip
#: JSON values put in place of a value of a JSON-lines record (issue 37): null or another type
#: where a string belongs, digits int() refuses ('²', '٣'), a lone surrogate (not text),
#: nesting, numbers beyond int64 / float64
JSON_VALUES: list[object] = [
    None, True, 0, -1, 2**64, 1e308, [], {}, "", "\u00b2", "\u0663", "\ud800", "x" * 5000,
    [[[[[[[[[[]]]]]]]]]], "2025-13-01T00:00:00Z", "attempt=\u00b2;cubes=1", "changed=\u00b2",
]  # fmt: skip


def header_tokens(header: str) -> list[str]:
    """Header-injection tokens for a delimited file: a newline followed by the header, and
    by the header with two fields swapped (what a job name ``evil\\n<header>`` smuggles in)."""
    sep = "|" if "|" in header else ","
    fields = header.split(sep)
    if len(fields) < 4:
        return []
    swapped = list(fields)
    swapped[1], swapped[3] = swapped[3], swapped[1]
    return ["\n" + header, "\n" + sep.join(swapped), "\n" + sep.join(reversed(fields))]


@st.composite
def record_edit(draw: st.DrawFn, text: str, extra: tuple[str, ...] = ()) -> str:
    """One to three edits of a record's text: replace / insert a token (``TOKENS`` plus
    ``extra``), truncate, replace a digit run by a huge number, or delete a character; or,
    for a JSON object, one field's value replaced by one of ``JSON_VALUES``."""
    tokens = [*TOKENS, *extra]
    if text.startswith("{") and draw(st.booleans()):
        try:
            obj = json.loads(text)
        except ValueError:
            obj = None
        if isinstance(obj, dict):  # a JSON-lines record: put a hostile value in a field
            key = draw(st.sampled_from([*sorted(obj), "detail", "extra"]))
            obj[key] = draw(st.sampled_from(JSON_VALUES))
            return json.dumps(obj)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["replace", "insert", "truncate", "number", "delete"]))
        pos = draw(st.integers(0, len(text)))
        if kind == "replace" and text:
            pos = min(pos, len(text) - 1)
            text = text[:pos] + draw(st.sampled_from(tokens)) + text[pos + 1 :]
        elif kind == "insert":
            text = text[:pos] + draw(st.sampled_from(tokens)) + text[pos:]
        elif kind == "truncate":
            text = text[:pos]
        elif kind == "delete" and text:
            pos = min(pos, len(text) - 1)
            text = text[:pos] + text[pos + 1 :]
        elif kind == "number":
            digits = [i for i, c in enumerate(text) if c.isdigit()]
            if digits:
                i = digits[draw(st.integers(0, len(digits) - 1))]
                j = i
                while j < len(text) and text[j].isdigit():
                    j += 1
                big = draw(st.sampled_from(["9" * 25, str(2**63), str(2**64 + 1), "-1", "1e999"]))
                text = text[:i] + big + text[j:]
    return text


def _encode(text: str, encoding: str) -> bytes:
    if encoding == "utf-16-le-bom":
        return codecs.BOM_UTF16_LE + text.encode("utf-16-le")
    if encoding == "utf-16-be-bom":
        return codecs.BOM_UTF16_BE + text.encode("utf-16-be")
    if encoding == "utf-8-bom":
        return codecs.BOM_UTF8 + text.encode("utf-8")
    if encoding == "crlf":
        return text.replace("\n", "\r\n").encode("utf-8")
    if encoding == "gzip":
        return gzip.compress(text.encode("utf-8"), mtime=0)
    return text.encode(encoding)


#: encodings under which a reader must give exactly the output of the plain UTF-8 file
LOSSLESS_ENCODINGS = ["utf-16-le-bom", "utf-16-be-bom", "utf-16-le", "utf-8-bom", "crlf", "gzip"]


@st.composite
def file_mutation(draw: st.DrawFn, data: bytes) -> bytes:
    """A whole-file mutation: byte flips, truncation, inserted / duplicated / swapped lines,
    hostile tokens anywhere, or a re-encoding (UTF-16, BOM, latin-1, gzip)."""
    kind = draw(
        st.sampled_from(["flip", "truncate", "insert_line", "dup_line", "swap", "token", "encode"])
    )
    if kind == "encode":
        text = data.decode("utf-8")
        enc = draw(st.sampled_from([*LOSSLESS_ENCODINGS, "latin-1", "utf-16-be"]))
        try:
            return _encode(text, enc)
        except UnicodeEncodeError:
            return text.encode("utf-8", errors="replace")
    if kind == "flip":
        out = bytearray(data)
        for _ in range(draw(st.integers(1, 8))):
            if out:
                out[draw(st.integers(0, len(out) - 1))] = draw(st.integers(0, 255))
        return bytes(out)
    if kind == "truncate":
        return data[: draw(st.integers(0, len(data)))]
    lines = data.split(b"\n")
    i = draw(st.integers(0, max(0, len(lines) - 1)))
    if kind == "insert_line":
        lines.insert(i, draw(st.sampled_from(TOKENS)).encode("utf-8", errors="replace"))
    elif kind == "dup_line":
        lines.insert(i, lines[i])
    elif kind == "swap" and len(lines) > 1:
        j = draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "token":
        line = lines[i].decode("utf-8", errors="replace")
        pos = draw(st.integers(0, len(line)))
        lines[i] = (line[:pos] + draw(st.sampled_from(TOKENS)) + line[pos:]).encode()
    return b"\n".join(lines)


def read(sample: Sample, path: Path) -> ReadResult | IngestError:
    """Read ``path`` with the sample's reader and options; an :class:`IngestError` is
    returned, any other exception propagates (the test fails on it)."""
    fn = READERS[sample.reader][0]
    try:
        return fn(path, **sample.options)  # type: ignore[return-value]
    except IngestError as exc:
        return exc


def by_unit(result: ReadResult, reader: str) -> dict[str, list[tuple[object, ...]]]:
    """Output rows grouped by unit: {unit: sorted [(table, *row)]}."""
    out: dict[str, list[tuple[object, ...]]] = defaultdict(list)
    for table, column in READERS[reader][1].items():
        frame = result.frames.get(table)
        if frame is None:
            continue
        for row in frame.iter_rows(named=True):
            out[str(row[column])].append((table, *(repr(v) for v in row.values())))
    return {u: sorted(rows) for u, rows in out.items()}
