"""Bad input never gives a traceback or a silent drop: it parses, quarantines, or raises
IngestError naming the file (and line/field)."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reliability.errors import IngestError
from reliability.ingest import read_sacct

HEADER = "JobID|JobName|State|ExitCode|Submit|Start|End|NNodes|AllocTRES|NodeList|Cluster"
ROWS = [
    "10|train|COMPLETED|0:0|2025-01-01T00:00:00|2025-01-01T00:01:00|2025-01-01T01:00:00|2|gres/gpu=16|n[01-02]|c",
    "10.batch|batch|COMPLETED|0:0|2025-01-01T00:01:00|2025-01-01T00:01:00|2025-01-01T01:00:00|1||n01|c",
    "11|eval|FAILED|1:0|2025-01-01T00:00:00|2025-01-01T00:02:00|2025-01-01T00:03:00|1|gres/gpu:h100=8|n03|c",
    "12_3|sweep|NODE_FAIL|0:0|2025-01-01T00:00:00|2025-01-01T00:02:00|2025-01-01T00:09:00|1|gres/gpu=1|n04|c",
]


def _write(tmp_path, text: str | bytes, name="in.psv"):
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return p


def _ok(path, **kw):
    r = read_sacct(path, tz="UTC", **kw)
    assert r.rows_read == r.rows_kept + r.rows_quarantined
    return r


def test_clean_file(tmp_path):
    r = _ok(_write(tmp_path, "\n".join([HEADER, *ROWS]) + "\n"))
    assert (r.rows_read, r.rows_quarantined) == (4, 0)
    jobs = r.tables["jobs"]
    assert jobs.get_column("n_accelerators").to_list() == [16, 8, 1]  # typed TRES summed too
    assert jobs.get_column("nodes").to_list() == [["n01", "n02"], ["n03"], ["n04"]]


def test_truncated_last_record(tmp_path):
    text = "\n".join([HEADER, *ROWS])[:-40]  # cut inside the last record
    r = _ok(_write(tmp_path, text))
    assert r.rows_read == 4
    assert r.rows_quarantined == 1
    assert r.quarantine.item(0, "line_no") == 5
    assert "truncated" in r.quarantine.item(0, "reason")


def test_binary_garbage_without_header_is_an_error(tmp_path):
    p = _write(tmp_path, bytes(range(256)) * 20)
    with pytest.raises(IngestError, match=r"in\.psv:1: no sacct header"):
        read_sacct(p, tz="UTC")


def test_binary_garbage_after_header_is_quarantined(tmp_path):
    data = (
        (HEADER + "\n" + ROWS[0] + "\n").encode()
        + b"\x00\xff\xfe|||\x01\n"
        + (ROWS[2] + "\n").encode()
    )
    r = _ok(_write(tmp_path, data))
    assert r.rows_kept == 2
    assert r.rows_quarantined == 1
    assert r.quarantine.item(0, "line_no") == 3


@pytest.mark.parametrize("sep", [",", "\t", ";"])
def test_wrong_delimiter(tmp_path, sep):
    p = _write(tmp_path, "\n".join(x.replace("|", sep) for x in [HEADER, *ROWS]))
    with pytest.raises(IngestError, match="wrong delimiter") as err:
        read_sacct(p, tz="UTC")
    assert err.value.line == 1


def test_empty_file(tmp_path):
    with pytest.raises(IngestError, match="empty file"):
        read_sacct(_write(tmp_path, ""), tz="UTC")


def test_unreadable_file(tmp_path):
    with pytest.raises(IngestError, match="cannot read file"):
        read_sacct(tmp_path / "missing.psv", tz="UTC")


def test_duplicated_header_lines(tmp_path):
    r = _ok(_write(tmp_path, "\n".join([HEADER, ROWS[0], HEADER, ROWS[2]])))
    assert r.tables["jobs"].height == 2
    assert r.rows_quarantined == 0
    assert any("2 header lines" in n for n in r.notes)


def test_mixed_slurm_versions_concatenated(tmp_path):
    """Two exports with different fields (e.g. an old and a new Slurm) in one file."""
    old = "JobID|State|Submit|Start|End|NodeList|Cluster\n11|FAILED|2025-01-01T00:00:00|2025-01-01T00:02:00|2025-01-01T00:03:00|n03|c\n"
    r = _ok(_write(tmp_path, "\n".join([HEADER, ROWS[0]]) + "\n" + old))
    jobs = r.tables["jobs"]
    assert jobs.get_column("job_id").to_list() == ["10", "11"]
    assert jobs.get_column("name").to_list() == ["train", None]


def test_non_utf8_job_name_is_kept(tmp_path):
    data = (HEADER + "\n").encode() + ROWS[0].replace("train", "tr\xe4in").encode("latin-1")
    r = _ok(_write(tmp_path, data))
    assert r.tables["jobs"].item(0, "name") == "tr\ufffdin"
    assert any("not valid UTF-8" in n for n in r.notes)


def test_pipe_and_html_in_job_name(tmp_path):
    rows = [
        ROWS[0].replace("|train|", "|a|b<td>|c|"),
        ROWS[2].replace("|eval|", "|<script>x</script>|"),
    ]
    r = _ok(_write(tmp_path, "\n".join([HEADER, *rows])))
    assert r.tables["jobs"].get_column("name").to_list() == ["a|b<td>|c", "<script>x</script>"]


def test_newline_in_job_name(tmp_path):
    rows = [ROWS[0].replace("|train|", "|line one\nline two|"), ROWS[2]]
    r = _ok(_write(tmp_path, "\n".join([HEADER, *rows])))
    assert r.rows_read == 2
    assert r.tables["jobs"].item(0, "name") == "line one\nline two"


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (("2025-01-01T00:01:00", "2025-13-01T00:01:00"), "field Start: cannot read time"),
        (("COMPLETED", "EXPLODED"), "unknown job state 'EXPLODED'"),
        (("0:0", "zero"), "field ExitCode"),
        (("n[01-02]", "n[02-01]"), "field NodeList: descending range"),
        (("|2|gres", "|two|gres"), "field NNodes"),
        (("2025-01-01T01:00:00", "2024-12-31T00:00:00"), "End 2024-12-31T00:00:00 is before Start"),
    ],
)
def test_bad_fields_are_quarantined_with_reason(tmp_path, bad, reason):
    rows = [ROWS[0].replace(*bad), ROWS[2]]
    r = _ok(_write(tmp_path, "\n".join([HEADER, *rows])))
    assert r.rows_quarantined == 1
    assert r.rows_kept == 1
    assert reason in r.quarantine.item(0, "reason"), r.quarantine.item(0, "reason")
    assert r.quarantine.item(0, "line_no") == 2
    assert r.quarantine.item(0, "raw") == rows[0]


def test_dst_gap_is_quarantined_not_shifted(tmp_path):
    """02:30 on 2025-03-09 does not exist in New York: refused, not silently moved."""
    row = ROWS[2].replace("2025-01-01T00:02:00", "2025-03-09T02:30:00").replace(
        "2025-01-01T00:03:00", "2025-03-09T04:00:00").replace("2025-01-01T00:00:00", "2025-03-09T01:00:00")  # fmt: skip
    r = read_sacct(_write(tmp_path, "\n".join([HEADER, row])), tz="America/New_York")
    assert r.rows_quarantined == 1
    assert "field Start" in r.quarantine.item(0, "reason")


_line = st.text(
    alphabet=st.sampled_from(list("0123456789|:-_.T[],abcNODE_FAILCOMPLETED \t")), max_size=120
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_line, max_size=12))
def test_fuzz_lines_after_header(tmp_path, lines):
    """Arbitrary lines under a valid header: every one is kept or quarantined, none lost."""
    p = _write(tmp_path, "\n".join([HEADER, *lines]))
    r = _ok(p)
    data_lines = [x for x in lines if x.strip()]
    assert r.rows_read <= len(data_lines)  # continuation lines join records, never vanish
    kept = r.tables["jobs"].height + r.tables["job_steps"].height
    assert kept == r.rows_kept


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.binary(max_size=400))
def test_fuzz_bytes(tmp_path, data):
    """Any bytes: a ReadResult with consistent counts, or IngestError; nothing else."""
    p = _write(tmp_path, data)
    error: IngestError | None = None
    try:
        r = read_sacct(p, tz="UTC", cluster="c")
    except IngestError as exc:
        error = exc
    if error is not None:
        assert str(p) in str(error)
    else:
        assert r.rows_read == r.rows_kept + r.rows_quarantined


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_fuzz_mutated_real_rows(tmp_path, data):
    """Valid rows with random edits: each record is kept (and then valid) or quarantined."""
    rows = []
    for row in ROWS:
        i = data.draw(st.integers(0, len(row)))
        junk = data.draw(st.text(alphabet="|\n x9-:[]", max_size=3))
        rows.append(row[:i] + junk + row[i + data.draw(st.integers(0, 3)) :])
    r = _ok(_write(tmp_path, "\n".join([HEADER, *rows])))
    jobs = r.tables["jobs"]
    assert jobs.filter(pl.col("start_time") > pl.col("end_time")).height == 0
    assert jobs.filter(pl.col("submit_time") > pl.col("start_time")).height == 0


def test_json_bad_input(tmp_path):
    good = {"cluster": "c", "job_id": 5, "name": "x", "state": {"current": ["COMPLETED"]},
            "time": {"submission": 100, "start": 200, "end": 300, "limit": {"set": True, "infinite": True, "number": 0}},
            "nodes": "n[1-2]", "allocation_nodes": 2, "exit_code": {"status": ["SUCCESS"], "return_code": {"set": True, "number": 0}},
            "tres": {"allocated": [{"type": "gres", "name": "gpu:h100", "count": 8}, {"type": "gres", "name": "gpu:h100", "count": 8}]},
            "steps": [{"step": {"id": "5.batch", "name": "batch"}, "state": "COMPLETED", "time": {"start": 200, "end": 300},
                       "nodes": {"count": 1, "list": ["n1"]}, "exit_code": {"status": "SUCCESS", "return_code": 0}}]}  # fmt: skip
    bad_state = {**good, "job_id": 6, "state": {"current": "EXPLODED"}}
    bad_order = {**good, "job_id": 7, "time": {"submission": 400, "start": 200, "end": 300}}
    import json

    p = tmp_path / "s.json"
    p.write_text(
        json.dumps(
            {"meta": {"plugin": {"type": "openapi/slurmdbd"}}, "jobs": [good, bad_state, bad_order]}
        )
    )
    r = read_sacct(p)
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (4, 2, 2)
    job = r.tables["jobs"].row(0, named=True)
    # newer JSON shapes: wrapped numbers, list states, infinite limit, typed GPU TRES summed
    assert (job["job_id"], job["nodes"], job["n_accelerators"], job["time_limit_s"]) == (
        "5",
        ["n1", "n2"],
        16,
        None,
    )
    assert r.tables["job_steps"].item(0, "step") == "batch"
    assert r.quarantine.get_column("line_no").to_list() == [2, 3]
    (tmp_path / "t.json").write_text("{not json")
    with pytest.raises(IngestError, match="not valid JSON"):
        read_sacct(tmp_path / "t.json")
    (tmp_path / "u.json").write_text('{"a": 1}')
    with pytest.raises(IngestError, match="no 'jobs' list"):
        read_sacct(tmp_path / "u.json")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1-12:00:00", 129600), ("00:05:00", 300), ("05:00", 300), ("00:00.005", 0), ("7-00:00:00", 604800),
     ("UNLIMITED", None), ("Partition_Limit", None), ("", None)],
)  # fmt: skip
def test_duration_forms(tmp_path, text, seconds):
    row = ROWS[2].replace("|c", f"|c|{text}")
    r = _ok(_write(tmp_path, "\n".join([HEADER + "|Timelimit", row])))
    assert r.rows_quarantined == 0
    assert r.tables["jobs"].item(0, "time_limit_s") == seconds


def test_collapsed_pending_array_ids(tmp_path):
    rows = [
        "53_[11-20%2]|arr|PENDING|0:0|2025-01-01T00:00:00|Unknown|Unknown|1||None assigned|c",
        "129_[1-5]|held|CANCELLED by 0|0:0|2025-01-01T00:00:00|None|2025-01-01T00:05:00|1||None assigned|c",
        "45+1.0|het|COMPLETED|0:0|2025-01-01T00:00:00|2025-01-01T00:00:01|2025-01-01T00:00:02|1||n1|c",
    ]
    r = _ok(_write(tmp_path, "\n".join([HEADER, *rows])))
    jobs = r.tables["jobs"]
    assert jobs.get_column("job_id").to_list() == ["53_[11-20%2]", "129_[1-5]"]
    assert jobs.get_column("nodes").to_list() == [[], []]
    assert jobs.get_column("start_time").to_list() == [None, None]
    assert r.tables["job_steps"].select("job_id", "step").row(0) == ("45+1", "0")
