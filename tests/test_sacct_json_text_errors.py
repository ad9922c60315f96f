"""``sacct --json`` with text JSON cannot hold: every such input is an IngestError naming the
file, the line and (where there is one) the field, never a bare json.JSONDecodeError or
UnicodeDecodeError.

A NUL byte, a bad escape (``\\q``, a cut ``\\u12``) or bytes that are not UTF-8 in a top-level
member's name raised json.JSONDecodeError / UnicodeDecodeError from the reader. The expected
line is where the planted bytes are in the file, counted here from the file's text; that the
document is invalid is checked with json.loads of the whole.
"""

from __future__ import annotations

import json

import pytest
from test_sacct_bad_input import _json_job

from reliability.errors import IngestError
from reliability.ingest import read_sacct

MARK = "MARK-7f3a"
BAD = {
    "a NUL byte": b"a\x00b",
    "a bad escape": b"a\\qb",
    "a cut unicode escape": b"a\\u12",
    "bytes that are not UTF-8": b"caf\xe9 \xff",
}


def _doc(where: str) -> bytes:
    """A pretty-printed export (one key or value per line) with MARK where the bad text goes."""
    meta = {"plugin": {"type": "openapi/slurmdbd"}, "note": "x"}
    jobs = [_json_job(5), _json_job(6)]
    if where == "job name":
        jobs[1]["name"] = MARK
    elif where == "meta value":
        meta["note"] = MARK
    doc = {"meta": meta, "jobs": jobs}
    if where == "top-level name":
        doc = {"meta": meta, MARK: 1, "jobs": jobs}
    return json.dumps(doc, indent=2).encode()


def _line_of_mark(data: bytes) -> int:
    (no,) = [i for i, line in enumerate(data.split(b"\n"), start=1) if MARK.encode() in line]
    return no


@pytest.mark.parametrize("bad", list(BAD))
@pytest.mark.parametrize(
    ("where", "field"),
    [("job name", "name"), ("meta value", "note"), ("top-level name", None)],
)
def test_text_json_cannot_hold_is_an_ingest_error_naming_file_line_and_field(
    tmp_path, bad, where, field
):
    clean = _doc(where)
    line = _line_of_mark(clean)
    p = tmp_path / "s.json"
    p.write_bytes(clean.replace(MARK.encode(), BAD[bad]))
    with pytest.raises((json.JSONDecodeError, UnicodeDecodeError)):  # the oracle: not JSON
        json.loads(p.read_bytes())
    with pytest.raises(IngestError) as got:
        read_sacct(p)
    e = got.value
    assert (e.path, e.line, e.field) == (str(p), line, field)
    assert e.problem.startswith("not valid JSON: "), e.problem
    assert str(e).startswith(f"{p}:{line}: "), str(e)
    if where == "job name":
        assert "record 2 of the jobs list" in e.problem


def test_the_same_export_without_the_bad_bytes_reads(tmp_path):
    """The planted text is the only fault: with a plain name the exports read."""
    for where in ("job name", "meta value", "top-level name"):
        p = tmp_path / f"{where}.json"
        p.write_bytes(_doc(where))
        r = read_sacct(p)
        assert r.frames["jobs"].get_column("job_id").to_list() == ["5", "6"], where
