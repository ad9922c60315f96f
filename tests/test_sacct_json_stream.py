"""``sacct --json`` read one job record at a time (issue 37, items 1, 6 and 8).

The export was loaded whole with json.loads: a 100 MiB record took 2.8 GB; a byte-order mark
or a top-level list was "no sacct header line". The reader now finds the records with a
numpy scan and parses each alone; json.loads of the whole document is the oracle here: a
document it refuses must be refused, one it reads must give the same jobs.
"""

from __future__ import annotations

import codecs
import contextlib
import gzip
import json
from pathlib import Path

import pytest
from hostile.mutations import file_mutation
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_json_bounds import _peak_mb
from test_sacct_bad_input import _json_job

from reliability.errors import IngestError
from reliability.ingest import read_sacct
from reliability.ingest.sacct import json as slurm_json

META = {"plugin": {"type": "openapi/slurmdbd", "name": "Slurm OpenAPI slurmdbd"}}


def _doc(indent: int | None, meta_last: bool = False) -> bytes:
    jobs = [
        _json_job(5),
        _json_job(6, state={"current": "EXPLODED"}),
        _json_job(7, name='a[{"}]\\'),
    ]
    doc = {"jobs": jobs, "meta": META} if meta_last else {"meta": META, "jobs": jobs}
    return json.dumps(doc, indent=indent).encode()


def _write(tmp: Path, data: bytes, name: str = "s.json") -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    p = tmp / name
    p.write_bytes(data)
    return p


def _kept(r) -> list[str]:
    return r.frames["jobs"].get_column("job_id").to_list()


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("meta_last", [False, True])
def test_pretty_compact_and_member_order_read_alike(tmp_path, indent, meta_last):
    r = read_sacct(_write(tmp_path, _doc(indent, meta_last)))
    # job 6's state is unknown; 5 and 7 are kept with their one step each
    assert _kept(r) == ["5", "7"]
    assert (r.rows_read, r.rows_kept) == (5, 4)
    assert r.quarantine.get_column("line_no").to_list() == [2]
    assert r.frames["jobs"].filter(job_id="7").item(0, "name") == 'a[{"}]\\'


@pytest.mark.parametrize(
    ("prefix", "encoding"),
    [(codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (b"", "utf-16-le"),
     (b"\n \t", "utf-8")],
)  # fmt: skip
def test_byte_order_marks_and_utf16_give_the_plain_tables(tmp_path, prefix, encoding):
    """A BOM'd export was refused as 'no sacct header line'."""
    plain = read_sacct(_write(tmp_path / "a", _doc(2)))
    data = prefix + _doc(2).decode().encode(encoding)
    other = read_sacct(_write(tmp_path / "b", data))
    for table, frame in plain.frames.items():
        assert other.frames[table].equals(frame), table


def test_a_json_list_is_refused_saying_what_it_is(tmp_path):
    p = _write(tmp_path, b"\xef\xbb\xbf  [" + _doc(None) + b"]")
    with pytest.raises(IngestError, match=r"s\.json:1: this is a JSON list \(\[\.\.\.\]\), not "
                       r"sacct --json output: sacct --json prints one object"):  # fmt: skip
        read_sacct(p)


def test_nesting_past_the_limit_is_refused_naming_the_line(tmp_path):
    text = '{"meta": {},\n"jobs": [\n' + "[" * 62 + "]" * 62 + ",\n" + "[" * 63 + "]" * 63 + "]}"
    with pytest.raises(
        IngestError, match=r"s\.json:4: JSON nested too deeply, more than 64 levels"
    ):
        read_sacct(_write(tmp_path, text.encode()))


def test_a_record_over_the_limits_is_quarantined_unread(tmp_path, monkeypatch):
    big = _json_job(6, comment="x" * 5000)
    many = _json_job(7, steps=[_json_job(7)["steps"][0]] * 50)
    doc = {"meta": META, "jobs": [_json_job(5), big, many, _json_job(8)]}
    p = _write(tmp_path, json.dumps(doc).encode())
    monkeypatch.setattr(slurm_json, "MAX_JOB_RECORD_BYTES", 4096)
    monkeypatch.setattr(slurm_json, "MAX_JOB_RECORD_MARKS", 400)
    r = read_sacct(p)
    assert _kept(r) == ["5", "8"]
    reasons = dict(zip(r.quarantine["line_no"], r.quarantine["reason"], strict=True))
    assert set(reasons) == {2, 3}
    assert reasons[2].startswith("record 2: job record of 5,")
    assert "larger than one record may be" in reasons[3]


def test_old_parser_note_whatever_the_member_order(tmp_path):
    for meta_last in (False, True):
        jobs = [_json_job(5)]
        doc = {"meta": {"plugin": {"type": "openapi/dbv0.0.38"}}, "jobs": jobs}
        if meta_last:
            doc = {"jobs": jobs, "meta": doc["meta"]}
        r = read_sacct(_write(tmp_path / str(meta_last), json.dumps(doc).encode()))
        assert any("dbv0.0.38" in n for n in r.notes)


SMALL = _doc(1)


def _text(data: bytes) -> str | None:
    """The document's text as json would be given it: gunzipped, a byte-order mark decoded;
    None for text with NUL bytes and no byte-order mark."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    for bom, encoding in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
                          (codecs.BOM_UTF16_BE, "utf-16-be")):  # fmt: skip
        if data.startswith(bom):
            return data[len(bom) :].decode(encoding)
    return None if b"\x00" in data else data.decode("utf-8")


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
@given(data=st.data())
def test_same_verdict_and_jobs_as_json_loads_of_the_whole(data, tmp_path_factory):
    """Under byte flips, truncation, inserted lines and tokens: json.loads of the whole
    document refuses it -> the reader refuses it; json.loads reads a {"jobs": [...]} ->
    the reader reads exactly those records (the same number, the kept ids among them)."""
    mutated = data.draw(file_mutation(SMALL), label="mutated")
    path = _write(tmp_path_factory.mktemp("m"), mutated)
    doc = None
    try:
        text = _text(mutated)
    except ValueError:  # not UTF-8: json cannot read it either
        text = ""
    if text is None:  # (UTF-16 without a byte-order mark: not judged here)
        with contextlib.suppress(IngestError):
            read_sacct(path)
        return
    with contextlib.suppress(ValueError, RecursionError):
        doc = json.loads(text)
    if doc is not None and not (isinstance(doc, dict) and isinstance(doc.get("jobs"), list)):
        doc = None
    try:
        r = read_sacct(path)
    except IngestError:
        assert doc is None, mutated
        return
    assert doc is not None, mutated
    jobs = doc["jobs"]
    steps = r.frames["job_steps"].height
    assert r.rows_read == len(jobs) + steps
    ids = {str(j.get("job_id")) for j in jobs if isinstance(j, dict)}
    assert set(_kept(r)) <= ids


@pytest.mark.slow
def test_a_100_mib_record_is_bounded(tmp_path):
    """{"jobs": [{"x": [{},{},...]}]} of 100 MiB took 2.8 GB and 6.6 s."""
    p = tmp_path / "big.json"
    with p.open("w") as f:
        f.write('{"meta": {}, "jobs": [' + json.dumps(_json_job(5)) + ', {"x": [')
        f.write(",".join(["{}"] * (35 << 20)) + "]}]}")
    grew, out = _peak_mb(
        "from reliability.ingest import read_sacct",
        f"r = read_sacct({str(p)!r})\nprint(r.rows_read, r.rows_kept, r.quarantine['reason'][0])",
    )
    assert out.startswith("3 2 record 2: job record of 110,100,4"), out
    assert grew < 600, grew  # the file is 105 MB
