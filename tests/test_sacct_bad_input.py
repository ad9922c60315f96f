"""Bad input never gives a traceback or a silent drop: it parses, quarantines (per record, with
the reason), or raises IngestError naming the file (and line/field). Counts are checked
against the inputs the tests build, whose records and bad rows are known."""

from __future__ import annotations

import gzip
import json
import zlib
from collections import Counter

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reliability.errors import IngestError
from reliability.ingest import read_sacct
from reliability.ingest._bounds import MAX_ACCELERATORS_PER_JOB, MAX_HOSTLIST_NODES
from reliability.ingest._compressed import MAX_RATIO, RATIO_CHECK_AFTER
from reliability.ingest.sacct.fields import SACCT_EXPORT_COMMAND
from reliability.ingest.sacct.post import duplicated

HEADER = "JobID|JobName|State|ExitCode|Submit|Start|End|NNodes|AllocTRES|NodeList|Cluster"
ROWS = [
    "10|train|COMPLETED|0:0|2025-01-01T00:00:00|2025-01-01T00:01:00|2025-01-01T01:00:00|2|gres/gpu=16|n[01-02]|c",
    "10.batch|batch|COMPLETED|0:0|2025-01-01T00:01:00|2025-01-01T00:01:00|2025-01-01T01:00:00|1||n01|c",
    "11|eval|FAILED|1:0|2025-01-01T00:00:00|2025-01-01T00:02:00|2025-01-01T00:03:00|1|gres/gpu:h100=8|n03|c",
    "12_3|sweep|NODE_FAIL|0:0|2025-01-01T00:00:00|2025-01-01T00:02:00|2025-01-01T00:09:00|1|gres/gpu=1|n04|c",
]
SEP = HEADER.count("|")


def _write(tmp_path, text: str | bytes, name="in.psv"):
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return p


def test_clean_file(tmp_path):
    r = read_sacct(_write(tmp_path, "\n".join([HEADER, *ROWS]) + "\n"), tz="UTC")
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (len(ROWS), len(ROWS), 0)
    jobs = r.frames["jobs"]
    assert jobs.get_column("n_accelerators").to_list() == [16, 8, 1]  # typed TRES summed too
    assert jobs.get_column("nodes").to_list() == [["n01", "n02"], ["n03"], ["n04"]]


def test_truncated_last_record(tmp_path):
    text = "\n".join([HEADER, *ROWS])[:-40]  # cut inside the last record
    r = read_sacct(_write(tmp_path, text), tz="UTC")
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (4, 3, 1)
    assert r.quarantine.item(0, "line_no") == 5
    assert "truncated" in r.quarantine.item(0, "reason")


def test_binary_garbage_without_header_is_an_error(tmp_path):
    p = _write(tmp_path, bytes(range(256)) * 20)
    with pytest.raises(IngestError, match=r"in\.psv: the file holds binary data"):
        read_sacct(p, tz="UTC")


def test_binary_garbage_after_header_is_quarantined(tmp_path):
    data = (
        (HEADER + "\n" + ROWS[0] + "\n").encode()
        + b"\x00\xff\xfe|||\x01\n"
        + (ROWS[2] + "\n").encode()
    )
    r = read_sacct(_write(tmp_path, data), tz="UTC")
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (3, 2, 1)
    assert r.quarantine.item(0, "line_no") == 3


@pytest.mark.parametrize("sep", [",", "\t", ";"])
def test_wrong_delimiter(tmp_path, sep):
    p = _write(tmp_path, "\n".join(x.replace("|", sep) for x in [HEADER, *ROWS]))
    with pytest.raises(IngestError, match="wrong delimiter") as err:
        read_sacct(p, tz="UTC")
    assert err.value.line == 1


def test_yaml_export_is_refused_with_what_to_do(tmp_path):
    p = _write(
        tmp_path, "---\nmeta:\n  plugin:\n    type: openapi/dbv0.0.38\njobs:\n- account: bio\n"
    )
    with pytest.raises(IngestError, match="YAML is not read: export with --parsable2 or --json"):
        read_sacct(p, tz="UTC")
    gz = _write(tmp_path, gzip.compress(p.read_bytes()), name="sacct.yaml.gz")
    with pytest.raises(IngestError, match="YAML is not read") as err:
        read_sacct(gz, tz="UTC")
    assert SACCT_EXPORT_COMMAND in str(err.value)


def test_empty_file(tmp_path):
    with pytest.raises(IngestError, match="empty file"):
        read_sacct(_write(tmp_path, ""), tz="UTC")


def test_unreadable_file(tmp_path):
    with pytest.raises(IngestError, match="cannot read file"):
        read_sacct(tmp_path / "missing.psv", tz="UTC")


def test_repeated_header_lines(tmp_path):
    r = read_sacct(_write(tmp_path, "\n".join([HEADER, ROWS[0], HEADER, ROWS[2]])), tz="UTC")
    assert r.frames["jobs"].get_column("job_id").to_list() == ["10", "11"]
    assert (r.rows_read, r.rows_quarantined) == (2, 0)
    assert any("line 3: repeated header line skipped" in n for n in r.notes)


def test_mixed_slurm_versions_concatenated(tmp_path):
    """Two exports with different fields (e.g. an old and a new Slurm) in one file."""
    old = "JobID|State|Submit|Start|End|NodeList|Cluster\n11|FAILED|2025-01-01T00:00:00|2025-01-01T00:02:00|2025-01-01T00:03:00|n03|c\n"
    r = read_sacct(_write(tmp_path, "\n".join([HEADER, ROWS[0]]) + "\n" + old), tz="UTC")
    jobs = r.frames["jobs"]
    assert jobs.get_column("job_id").to_list() == ["10", "11"]
    assert jobs.get_column("name").to_list() == ["train", None]
    assert any("2 header lines" in n for n in r.notes)


def test_exact_duplicates_count_once(tmp_path):
    """Three identical lines are one record (plus two quarantined repeats), not three
    attempts. A record that differs in one byte is not an exact duplicate, but with the same
    JobID, Submit and Start it is the same attempt: the later line is kept (as the Dataset
    keeps the later input), the earlier quarantined saying so."""
    other = ROWS[2].replace("FAILED|1:0", "FAILED|2:0")
    lines = [HEADER, ROWS[2], ROWS[0], ROWS[2], ROWS[2], other]
    r = read_sacct(_write(tmp_path, "\n".join(lines)), tz="UTC")
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (5, 2, 3)
    reasons = dict(r.quarantine.select("line_no", "reason").iter_rows())
    assert reasons[4] == reasons[5] == "exact duplicate of line 2"
    assert reasons[2].startswith("the same attempt as line 6 (same JobID, Submit and Start)")
    assert r.quarantine.get_column("raw").to_list() == [ROWS[2]] * 3
    jobs = r.frames["jobs"].filter(pl.col("job_id") == "11")
    assert jobs.select("attempt", "exit_code").rows() == [(0, 2)]  # one attempt, not four


def test_non_utf8_job_name_is_kept(tmp_path):
    data = (HEADER + "\n").encode() + ROWS[0].replace("train", "tr\xe4in").encode("latin-1")
    r = read_sacct(_write(tmp_path, data), tz="UTC")
    assert r.frames["jobs"].item(0, "name") == "tr\ufffdin"
    assert any("not valid UTF-8" in n for n in r.notes)


def test_utf16_export_is_decoded(tmp_path):
    text = "\n".join([HEADER, *ROWS]) + "\n"
    plain = read_sacct(_write(tmp_path, text), tz="UTC")
    wide = read_sacct(_write(tmp_path, text.encode("utf-16"), "w.psv"), tz="UTC")
    assert wide.frames["jobs"].equals(plain.frames["jobs"])
    assert any("UTF-16" in n for n in wide.notes)


def test_pipe_and_html_in_job_name(tmp_path):
    rows = [
        ROWS[0].replace("|train|", "|a|b<td>|c|"),
        ROWS[2].replace("|eval|", "|<script>x</script>|"),
    ]
    r = read_sacct(_write(tmp_path, "\n".join([HEADER, *rows])), tz="UTC")
    assert r.frames["jobs"].get_column("name").to_list() == ["a|b<td>|c", "<script>x</script>"]


def test_newline_in_job_name(tmp_path):
    rows = [ROWS[0].replace("|train|", "|line one\nline two|"), ROWS[2]]
    r = read_sacct(_write(tmp_path, "\n".join([HEADER, *rows])), tz="UTC")
    assert (r.rows_read, r.rows_kept) == (2, 2)
    assert r.frames["jobs"].item(0, "name") == "line one\nline two"


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (("2025-01-01T00:01:00", "2025-13-01T00:01:00"), "field Start: cannot read time '2025-13-01"),
        (("2025-01-01T00:01:00", "2025-02-30T00:01:00"), "field Start: cannot read time '2025-02-30"),
        (("COMPLETED", "EXPLODED"), "unknown job state 'EXPLODED'"),
        (("0:0", "zero"), "field ExitCode"),
        (("|0:0|", "|99999999999:0|"), "field ExitCode"),
        (("n[01-02]", "n[02-01]"), "field NodeList: descending range"),
        (("n[01-02]", "n 01"), "field NodeList: not a hostlist"),
        (("|2|gres", "|two|gres"), "field NNodes"),
        (("2025-01-01T01:00:00", "2024-12-31T00:00:00"), "End 2024-12-31T00:00:00 is before Start"),
    ],
)  # fmt: skip
def test_bad_fields_are_quarantined_with_reason(tmp_path, bad, reason):
    rows = [ROWS[0].replace(*bad), ROWS[2]]
    r = read_sacct(_write(tmp_path, "\n".join([HEADER, *rows])), tz="UTC")
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (2, 1, 1)
    assert reason in r.quarantine.item(0, "reason"), r.quarantine.item(0, "reason")
    assert r.quarantine.item(0, "line_no") == 2
    assert r.quarantine.item(0, "raw") == rows[0]


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        # a Submit of year 0, and an epoch in year 248,073
        (("|2025-01-01T00:00:00|2025-01-01T00:01:00", "|0000-01-01T00:00:00|2025-01-01T00:01:00"),
         "field Submit: time '0000-01-01T00:00:00' is outside 1990-2200"),
        (("|2025-01-01T00:00:00|2025-01-01T00:01:00", "|7766368588800|2025-01-01T00:01:00"),
         "field Submit: time '7766368588800' is outside 1990-2200"),
        (("|2025-01-01T00:00:00|2025-01-01T00:01:00", "|99999999999999999999999|2025-01-01T00:01:00"),
         "field Submit: cannot read time"),
        (("T01:00:00|2|", "T01:00:00|99999999999|"), "field NNodes: 99999999999 nodes is more than"),
        (("T01:00:00|2|", "T01:00:00|999999999999999999999999|"), "field NNodes: not a node count"),
        (("gres/gpu=16", f"gres/gpu={2**32}"), f"the GPU count is more than {MAX_ACCELERATORS_PER_JOB:,}"),
        (("gres/gpu=16", "gres/gpu=99999999999999999999999"), "does not fit 64 bits"),
        # issue 37: a sign or a unit suffix is no GPU count (was read as 0 GPUs, and as 8)
        (("gres/gpu=16", "cpu=4,gres/gpu=-8,mem=1G"),
         "field AllocTRES: a GPU count is not a whole number of GPUs (Slurm prints gres/gpu "
         "counts without a sign or a unit suffix): 'cpu=4,gres/gpu=-8,mem=1G'"),
        (("gres/gpu=16", "gres/gpu=8K"), "field AllocTRES: a GPU count is not a whole number"),
        (("gres/gpu=16", "gres/gpu:a100=8,gres/gpu:h100=2M"), "a GPU count is not a whole number"),
        (("gres/gpu=16", "gres/gpu=NONE"), "a GPU count is not a whole number"),
        (("n[01-02]", "node[1-100000000]"), f"more than the {MAX_HOSTLIST_NODES:,}"),
        (("n[01-02]", "r[1-100000]n[1-100000]"), "names 10,000,000,000 hosts"),
        (("n[01-02]", "n[1-99999999999999999999999]"), "host number too long"),
    ],
)  # fmt: skip
def test_poison_values_are_quarantined_per_row(tmp_path, bad, reason):
    """One poison value quarantines its row with the reason; the other rows are unaffected."""
    rows = [ROWS[0].replace(*bad), *ROWS[1:]]
    assert rows[0] != ROWS[0]
    clean = read_sacct(_write(tmp_path, "\n".join([HEADER, *ROWS]), "c.psv"), tz="UTC")
    r = read_sacct(_write(tmp_path, "\n".join([HEADER, *rows])), tz="UTC")
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (4, 3, 1)
    assert reason in r.quarantine.item(0, "reason"), r.quarantine.item(0, "reason")
    assert r.quarantine.item(0, "line_no") == 2
    assert r.frames["jobs"].equals(clean.frames["jobs"].slice(1))
    assert r.frames["job_steps"].equals(clean.frames["job_steps"])


def test_poison_time_limit(tmp_path):
    row = ROWS[2].replace("|c", "|c|99999999999-00:00:00")
    r = read_sacct(_write(tmp_path, "\n".join([HEADER + "|Timelimit", row])), tz="UTC")
    assert r.rows_quarantined == 1
    assert "field Timelimit" in r.quarantine.item(0, "reason")


def test_dst_gap_is_quarantined_not_shifted(tmp_path):
    """02:30 on 2025-03-09 does not exist in New York: refused, not silently moved."""
    row = ROWS[2].replace("2025-01-01T00:02:00", "2025-03-09T02:30:00").replace(
        "2025-01-01T00:03:00", "2025-03-09T04:00:00").replace("2025-01-01T00:00:00", "2025-03-09T01:00:00")  # fmt: skip
    r = read_sacct(_write(tmp_path, "\n".join([HEADER, row])), tz="America/New_York")
    assert r.rows_quarantined == 1
    assert "field Start" in r.quarantine.item(0, "reason")
    assert "daylight-saving gap" in r.quarantine.item(0, "reason")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"tz": "Mars/Olympus"}, r"unknown time zone 'Mars/Olympus' \(option tz=\)"),
        ({"tz": ""}, "option tz= must be an IANA time zone name"),
        ({"tz": "UTC", "fields": []}, "option fields= must list"),
        ({"tz": "UTC", "fields": ["JobID", "State"]}, "option fields= lacks the required field Submit"),
        ({"tz": "UTC", "fields": ["JobID", "State", "Submit", "State"]}, "option fields= names a field twice"),
        ({"tz": "UTC", "cluster": ""}, "option cluster= must be a non-empty name"),
        ({"tz": "UTC", "window_end": "2025-13-01"}, "option window_end="),
    ],
)  # fmt: skip
def test_option_errors_name_the_option(tmp_path, kwargs, match):
    """Errors name the option as it was passed (tz=, fields=), which front ends respell."""
    p = _write(tmp_path, "\n".join([HEADER, *ROWS]))
    with pytest.raises(IngestError, match=match):
        read_sacct(p, **kwargs)


def test_gzip_input_reads_like_plain(tmp_path):
    text = ("\n".join([HEADER, *ROWS]) + "\n").encode()
    plain = read_sacct(_write(tmp_path, text), tz="UTC")
    gz = read_sacct(_write(tmp_path, gzip.compress(text), "s.psv.gz"), tz="UTC")
    two = read_sacct(_write(tmp_path, gzip.compress(text[:200]) + gzip.compress(text[200:]), "m.gz"), tz="UTC")  # fmt: skip
    for other in (gz, two):
        assert other.frames["jobs"].equals(plain.frames["jobs"])
        assert other.frames["job_steps"].equals(plain.frames["job_steps"])


def test_corrupt_and_truncated_gzip_are_clear_errors(tmp_path):
    data = gzip.compress(("\n".join([HEADER, *ROWS]) + "\n").encode())
    with pytest.raises(IngestError, match="corrupt gzip file"):
        read_sacct(_write(tmp_path, data[: len(data) // 2], "t.gz"), tz="UTC")
    broken = data[:20] + bytes(b ^ 0xFF for b in data[20:40]) + data[40:]
    with pytest.raises(IngestError, match="corrupt gzip file"):
        read_sacct(_write(tmp_path, broken, "b.gz"), tz="UTC")


def test_gzip_bomb_is_refused(tmp_path):
    """A header line followed by 96 MiB of one repeated record compresses about 1000:1: the
    ratio guard refuses it once RATIO_CHECK_AFTER bytes are out (the peak memory of this is
    measured in test_sacct_memory)."""
    line = ROWS[2].encode() + b"\n"
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = [comp.compress(HEADER.encode() + b"\n")]
    chunk = line * (1 << 20 // len(line))
    total = 0
    while total < RATIO_CHECK_AFTER + (32 << 20):
        out.append(comp.compress(chunk))
        total += len(chunk)
    out.append(comp.flush())
    data = b"".join(out)
    assert total / len(data) > MAX_RATIO
    with pytest.raises(IngestError, match=f"inflates more than {MAX_RATIO}:1"):
        read_sacct(_write(tmp_path, data, "bomb.psv.gz"), tz="UTC")


def _valid_rows(n: int) -> list[str]:
    return [
        f"{100 + i}|job{i}|COMPLETED|0:0|2025-01-01T00:00:00|2025-01-01T00:01:00|"
        f"2025-01-01T01:00:00|1|gres/gpu=8|n{i:03d}|c"
        for i in range(n)
    ]


_junk_field = st.text(alphabet=st.sampled_from(list("abcXYZ :-_.[],01")), max_size=12)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_fuzz_known_records_and_bad_rows(tmp_path, data):
    """Valid records mixed with malformed ones of the header's field count: exactly the
    valid ones are kept (and unchanged), exactly the malformed ones quarantined, by line."""
    n_good = data.draw(st.integers(1, 12))
    good = _valid_rows(n_good)
    bad = [
        "|".join(["x" + data.draw(_junk_field), *(data.draw(_junk_field) for _ in range(SEP))])
        for _ in range(data.draw(st.integers(0, 6)))
    ]
    order = data.draw(st.permutations([*good, *bad]))
    r = read_sacct(_write(tmp_path, "\n".join([HEADER, *order])), tz="UTC")
    bad_lines = sorted(i + 2 for i, row in enumerate(order) if row in bad)
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (len(order), n_good, len(bad))
    assert r.quarantine.get_column("line_no").to_list() == bad_lines
    clean = read_sacct(_write(tmp_path, "\n".join([HEADER, *good]), "c.psv"), tz="UTC")
    assert r.frames["jobs"].sort("job_id").equals(clean.frames["jobs"].sort("job_id"))


_line = st.text(
    alphabet=st.sampled_from(list("0123456789|:-_.T[],abcNODE_FAILCOMPLETED \t")), max_size=120
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_line, max_size=12))
def test_fuzz_lines_after_header(tmp_path, lines):
    """Arbitrary lines under a valid header: no traceback; the records read are at most the
    non-blank lines (continuation lines join records, never vanish: each quarantined row
    names a distinct line of the input)."""
    p = _write(tmp_path, "\n".join([HEADER, *lines]))
    r = read_sacct(p, tz="UTC")
    data_lines = [x for x in lines if x.strip()]
    assert r.rows_read <= len(data_lines)
    q_lines = r.quarantine.get_column("line_no").to_list()
    assert len(set(q_lines)) == len(q_lines)
    assert all(2 <= ln <= len(lines) + 1 for ln in q_lines)
    texts = [lines[ln - 2] for ln in q_lines]
    assert all(t and raw.startswith(t) for t, raw in zip(texts, r.quarantine["raw"], strict=True))


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.binary(max_size=400))
def test_fuzz_bytes(tmp_path, data):
    """Any bytes: a ReadResult, or IngestError naming the file; nothing else."""
    p = _write(tmp_path, data)
    error = ""
    try:
        read_sacct(p, tz="UTC", cluster="c")
    except IngestError as exc:
        error = str(exc)
    assert not error or str(p) in error


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_fuzz_mutated_real_rows(tmp_path, data):
    """Valid rows with random edits: each record is kept (and then valid) or quarantined; the
    rows left untouched are kept as they are."""
    rows, touched = [], []
    for row in ROWS:
        i = data.draw(st.integers(0, len(row)))
        junk = data.draw(st.text(alphabet="|\n x9-:[]", max_size=3))
        cut = data.draw(st.integers(0, 3))
        new = row[:i] + junk + row[i + cut :]
        rows.append(new)
        touched.append(new != row)
    r = read_sacct(_write(tmp_path, "\n".join([HEADER, *rows])), tz="UTC")
    jobs = r.frames["jobs"]
    assert jobs.filter(pl.col("start_time") > pl.col("end_time")).height == 0
    assert jobs.filter(pl.col("submit_time") > pl.col("start_time")).height == 0
    assert r.rows_read <= sum(x.count("\n") + 1 for x in rows)
    untouched_ids = {ROWS[k].split("|", 1)[0] for k in range(len(ROWS)) if not touched[k]}
    kept_ids = set(jobs.get_column("job_id")) | {
        f"{j}.{s}" for j, s in r.frames["job_steps"].select("job_id", "step").iter_rows()
    }
    # an untouched record next to a mangled one may be swallowed by it only into quarantine
    q_raw = "\n".join(r.quarantine.get_column("raw").to_list())
    for jid in untouched_ids:
        assert jid in kept_ids or jid in q_raw


def _json_job(job_id: int, **over):
    t0 = 1735689600  # 2025-01-01T00:00:00Z
    job = {"cluster": "c", "job_id": job_id, "name": "x", "state": {"current": ["COMPLETED"]},
           "time": {"submission": t0, "start": t0 + 100, "end": t0 + 200,
                    "limit": {"set": True, "infinite": True, "number": 0}},
           "nodes": "n[1-2]", "allocation_nodes": 2,
           "exit_code": {"status": ["SUCCESS"], "return_code": {"set": True, "number": 0}},
           "tres": {"allocated": [{"type": "gres", "name": "gpu:h100", "count": 8},
                                  {"type": "gres", "name": "gpu:h100", "count": 8}]},
           "steps": [{"step": {"id": f"{job_id}.batch", "name": "batch"}, "state": "COMPLETED",
                      "time": {"start": t0 + 100, "end": t0 + 200},
                      "nodes": {"count": 1, "list": ["n1"]},
                      "exit_code": {"status": "SUCCESS", "return_code": 0}}]}  # fmt: skip
    job.update(over)
    return job


def test_json_bad_input(tmp_path):
    good = _json_job(5)
    bad_state = _json_job(6, state={"current": "EXPLODED"})
    bad_order = _json_job(
        7, time={"submission": 1735689600, "start": 1735689900, "end": 1735689700}
    )
    p = tmp_path / "s.json"
    p.write_text(json.dumps({"meta": {"plugin": {"type": "openapi/slurmdbd"}},
                             "jobs": [good, bad_state, bad_order]}))  # fmt: skip
    r = read_sacct(p)
    # 3 job records + the 1 step of the one accepted job
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (4, 2, 2)
    job = r.frames["jobs"].row(0, named=True)
    # newer JSON shapes: wrapped numbers, list states, infinite limit, typed GPU TRES summed
    assert (job["job_id"], job["nodes"], job["n_accelerators"], job["time_limit_s"]) == (
        "5",
        ["n1", "n2"],
        16,
        None,
    )
    assert r.frames["job_steps"].item(0, "step") == "batch"
    assert r.quarantine.get_column("line_no").to_list() == [2, 3]
    (tmp_path / "t.json").write_text("{not json")
    with pytest.raises(IngestError, match="not valid JSON"):
        read_sacct(tmp_path / "t.json")
    (tmp_path / "u.json").write_text('{"a": 1}')
    with pytest.raises(IngestError, match="no 'jobs' list"):
        read_sacct(tmp_path / "u.json")


def test_json_deeply_nested_is_a_clear_error(tmp_path):
    p = tmp_path / "deep.json"
    p.write_text('{"jobs": [' + "[" * 100_000 + "]" * 100_000 + "]}")
    with pytest.raises(IngestError, match="nested too deeply"):
        read_sacct(p)


@pytest.mark.parametrize(
    ("over", "reason"),
    [
        ({"time": "yesterday"}, "time must be an object"),
        ({"time": {"submission": "soon"}}, "expected a number"),
        ({"time": {"submission": 7766368588800}}, "outside 1990-2200"),
        ({"tres": {"allocated": [{"type": "gres", "name": "gpu", "count": 2**32}]}}, "GPU count"),
        ({"tres": {"allocated": "gpu=8"}}, "tres.allocated must be a list"),
        ({"nodes": ["n1"]}, "nodes must be a hostlist string"),
        ({"nodes": "r[1-100000]n[1-100000]"}, "10,000,000,000 hosts"),
        ({"allocation_nodes": 10**30}, "does not fit 64 bits"),
        ({"steps": {"0": {}}}, "steps must be a list"),
        ({"steps": [7]}, "a step must be an object"),
        ({"array": [1, 2]}, "array must be an object"),
        ({"name": {"x": 1}}, "expected a string"),
    ],
)
def test_json_wrong_shapes_are_quarantined_naming_the_record(tmp_path, over, reason):
    p = tmp_path / "s.json"
    jobs = [_json_job(5), _json_job(6, **over), _json_job(7)]
    p.write_text(json.dumps({"jobs": jobs, "meta": {}}))
    r = read_sacct(p)
    assert r.frames["jobs"].get_column("job_id").to_list() == ["5", "7"]
    assert r.quarantine.get_column("line_no").to_list() == [2]
    assert r.quarantine.item(0, "reason").startswith("record 2: ")
    assert reason in r.quarantine.item(0, "reason")
    (tmp_path / "n.json").write_text(json.dumps({"jobs": [_json_job(5), "a string", None, 3]}))
    r = read_sacct(tmp_path / "n.json")
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (5, 2, 3)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1-12:00:00", 129600), ("00:05:00", 300), ("05:00", 300), ("00:00.005", 0), ("7-00:00:00", 604800),
     ("UNLIMITED", None), ("Partition_Limit", None), ("", None)],
)  # fmt: skip
def test_duration_forms(tmp_path, text, seconds):
    row = ROWS[2].replace("|c", f"|c|{text}")
    r = read_sacct(_write(tmp_path, "\n".join([HEADER + "|Timelimit", row])), tz="UTC")
    assert r.rows_quarantined == 0
    assert r.frames["jobs"].item(0, "time_limit_s") == seconds


def test_collapsed_pending_array_ids(tmp_path):
    rows = [
        "53_[11-20%2]|arr|PENDING|0:0|2025-01-01T00:00:00|Unknown|Unknown|1||None assigned|c",
        "129_[1-5]|held|CANCELLED by 0|0:0|2025-01-01T00:00:00|None|2025-01-01T00:05:00|1||None assigned|c",
        "45+1.0|het|COMPLETED|0:0|2025-01-01T00:00:00|2025-01-01T00:00:01|2025-01-01T00:00:02|1||n1|c",
    ]
    r = read_sacct(_write(tmp_path, "\n".join([HEADER, *rows])), tz="UTC")
    jobs = r.frames["jobs"]
    assert jobs.get_column("job_id").to_list() == ["53_[11-20%2]", "129_[1-5]"]
    assert jobs.get_column("nodes").to_list() == [[], []]
    assert jobs.get_column("start_time").to_list() == [None, None]
    assert r.frames["job_steps"].select("job_id", "step").row(0) == ("45+1", "0")


def test_cpu_only_jobs_have_zero_gpus(tmp_path):
    """No gres/gpu in AllocTRES (nor ReqTRES): 0 accelerators, never 1."""
    rows = [
        ROWS[0].replace("gres/gpu=16", "billing=4,cpu=4,mem=1G,node=1"),
        ROWS[2].replace("gres/gpu:h100=8", ""),
    ]
    r = read_sacct(_write(tmp_path, "\n".join([HEADER, *rows])), tz="UTC")
    assert r.frames["jobs"].get_column("n_accelerators").to_list() == [0, 0]
    req = "JobID|State|Submit|AllocTRES|ReqTRES|Cluster\n7|PENDING|2025-01-01T00:00:00||cpu=2,gres/gpu=2|c\n8|PENDING|2025-01-01T00:00:00||cpu=2|c"
    r = read_sacct(_write(tmp_path, req, "r.psv"), tz="UTC")
    assert r.frames["jobs"].get_column("n_accelerators").to_list() == [2, 0]


def test_gpu_counts_beside_suffixed_tres_and_the_field_named(tmp_path):
    """Slurm suffixes mem, gres/gpumem and bb counts (mem=64G, gres/gpumem=80G): not the GPU
    count. A bad count is named with the field it was read from (ReqTRES when the job never
    got an allocation)."""
    req = ("JobID|State|Submit|AllocTRES|ReqTRES|Cluster\n"
           "7|COMPLETED|2025-01-01T00:00:00|cpu=8,gres/gpu=8,gres/gpumem=80G,mem=64G|cpu=8|c\n"
           "8|PENDING|2025-01-01T00:00:00||cpu=2,gres/gpu=2G|c\n"
           "9|PENDING|2025-01-01T00:00:00||gres/gpu:a100=3,gres/gpu:h100=1|c")  # fmt: skip
    r = read_sacct(_write(tmp_path, req, "r.psv"), tz="UTC")
    assert dict(r.frames["jobs"].select("job_id", "n_accelerators").iter_rows()) == {"7": 8, "9": 4}
    assert r.quarantine.item(0, "reason").startswith("field ReqTRES: a GPU count is not a whole")


def test_long_line_is_quarantined_without_holding_it(tmp_path, monkeypatch):
    from reliability.ingest.sacct import io as _sacct_io

    monkeypatch.setattr(_sacct_io, "MAX_LINE_BYTES", 4096)
    monkeypatch.setattr(_sacct_io, "BLOCK_BYTES", 1024)
    rows = [ROWS[0], "11|" + "x" * 20_000 + "|FAILED", ROWS[2]]
    r = read_sacct(_write(tmp_path, "\n".join([HEADER, *rows])), tz="UTC")
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (3, 2, 1)
    assert r.quarantine.item(0, "line_no") == 3
    assert "longer than any sacct record" in r.quarantine.item(0, "reason")
    assert len(r.quarantine.item(0, "raw")) <= 4096


@pytest.mark.parametrize("compress", [False, True])
def test_line_over_16_mib_is_quarantined_wherever_it_lies(tmp_path, compress):
    """README: "a line longer than 16 MiB is quarantined unread". With the real bounds (no
    monkeypatch): a line of exactly 16 MiB (16,777,216 bytes before its newline) is a record;
    one byte more is quarantined naming its size, whether it lies between short lines inside
    one read block, or is the last line without a newline; plain (mapped, then the block
    stream) and gzip input alike. The sizes are counted here from the text written."""
    limit = 16 * 1024 * 1024
    head = "11|"
    tail = ROWS[2][len("11|eval") :]  # "|FAILED|1:0|..." (the rest of the record)
    exact = head + "x" * (limit - len(head) - len(tail)) + tail
    over = head + "y" * (limit + 1 - len(head) - len(tail)) + tail
    assert (len(exact), len(over)) == (limit, limit + 1)
    lines = [HEADER, ROWS[0], exact, over.replace("11|", "13|", 1), ROWS[3], over]
    data = "\n".join(lines).encode()  # the last line has no newline
    p = _write(tmp_path, gzip.compress(data, 1) if compress else data, "big.psv")
    r = read_sacct(p, tz="UTC")
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (5, 3, 2)
    jobs = r.frames["jobs"]
    assert jobs.get_column("job_id").to_list() == ["10", "11", "12_3"]
    assert jobs.filter(pl.col("job_id") == "11").item(0, "name") == "x" * (limit - 3 - len(tail))
    q = r.quarantine
    assert q.get_column("line_no").to_list() == [4, 6]
    for reason in q.get_column("reason"):
        assert "16,777,217 bytes" in reason, reason
    assert all(len(raw) <= 4096 for raw in q.get_column("raw"))


def test_both_front_ends_agree_on_a_real_dirty_export(shared, tmp_path):
    """The mapped front end (plain file) and the block stream (the same file gzipped) give
    identical tables, quarantine and notes on real output with '|' and newlines in names."""
    src = shared / "slurm-real-run1" / "final_snapshot" / "sacct_broad_duplicates.psv"
    gz = _write(tmp_path, gzip.compress(src.read_bytes()), "s.psv.gz")
    a, b = read_sacct(src, tz="UTC"), read_sacct(gz, tz="UTC")
    for t in ("jobs", "job_steps"):
        assert a.frames[t].equals(b.frames[t])
    assert a.quarantine.drop("source_file").equals(b.quarantine.drop("source_file"))
    assert (a.rows_read, a.rows_kept) == (b.rows_read, b.rows_kept)


def test_allocation_without_a_submit_time_is_quarantined(tmp_path):
    rows = [ROWS[0].replace("|2025-01-01T00:00:00|", "|Unknown|"), ROWS[2]]
    r = read_sacct(_write(tmp_path, "\n".join([HEADER, *rows])), tz="UTC")
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (2, 1, 1)
    assert r.quarantine.item(0, "reason") == "field Submit: missing submit time"


def test_duplicated_mask_matches_a_count():
    """The mask of repeated keys equals a Counter's, with and without repeats (the no-repeat
    case takes the hash-count shortcut)."""
    rng = np.random.default_rng(7)
    for n_distinct in (50, 10_000, 1_000_000):
        ids = [str(v) for v in rng.integers(0, n_distinct, 5_000)]
        if n_distinct == 1_000_000:
            ids = list(dict.fromkeys(ids))  # no repeats at all
        clusters = [("a", "b")[i % 2] for i in range(len(ids))]
        frame = pl.DataFrame({"cluster": clusters, "job_id": ids})
        counts = Counter(zip(clusters, ids, strict=True))
        expected = [counts[k] > 1 for k in zip(clusters, ids, strict=True)]
        assert duplicated(frame, ["cluster", "job_id"]).tolist() == expected, n_distinct
    # no columns compared: every row has the same (empty) key, as a Counter of () says
    assert duplicated(frame, []).tolist() == [True] * frame.height


@pytest.mark.parametrize("n_tail", [0, 1, 7, 40])
def test_assembled_records_go_between_the_bulk_rows_in_line_order(n_tail, monkeypatch):
    """The records assembled around anomalies are parsed after the bulk; they are put in place
    by slicing (or, beyond _MERGE_MAX of them, by a sort): the result is the rows sorted by
    line, whatever the chunks, including records before and after every bulk row."""
    from reliability.ingest.sacct import reader as _sacct_reader

    rng = np.random.default_rng(n_tail)
    lines = rng.choice(np.arange(1, 500), size=200 + n_tail, replace=False)
    tail_lines = np.sort(lines[:n_tail])
    bulk_lines = np.sort(lines[n_tail:])
    if n_tail == 1:
        tail_lines[0] = 0  # before the whole bulk
    elif n_tail:
        tail_lines[0], tail_lines[-1] = 0, 1000  # before and after the whole bulk

    def frame(ln):
        schema = {"line_no": pl.Int64, "v": pl.Int64}
        return pl.DataFrame({"line_no": ln, "v": ln * 10}, schema=schema)

    bulk = [frame(part) for part in np.array_split(bulk_lines, 5)]
    tail = [frame(part) for part in np.array_split(tail_lines, 2)] if n_tail else []
    want = pl.concat([*bulk, *tail]).sort("line_no")
    for limit in (10_000, 3):
        monkeypatch.setattr(_sacct_reader, "_MERGE_MAX", limit)
        got = _sacct_reader._in_line_order([*bulk, *tail], len(bulk), {})
        assert got.equals(want)
        # parts out of the promised order are sorted, never merged out of order
        shuffled = [bulk[-1], *bulk[:-1]]
        assert _sacct_reader._in_line_order([*shuffled, *tail], len(bulk), {}).equals(want)
        assert _sacct_reader._in_line_order([*shuffled, *tail], 0, {}).equals(want)
    assert _sacct_reader._in_line_order([], 0, {"line_no": pl.Int64}).height == 0


def test_a_column_is_added_chunked_like_the_rows():
    """A column added to a frame built batch by batch is sliced at the frame's chunk boundaries
    (so polars adds it without copying the frame); values and order are unchanged, and a frame
    whose columns are chunked differently gets the values as they are."""
    from reliability.ingest.sacct.parse import chunked_like

    parts = [
        pl.DataFrame({"a": np.arange(a, b), "b": np.arange(a, b) * 2})
        for a, b in ((0, 3), (3, 10), (10, 11))
    ]
    frame = pl.concat(parts, rechunk=False)
    values = pl.Series("c", np.arange(11) * 3)
    got = chunked_like(values, frame)
    assert got.chunk_lengths() == [3, 7, 1]
    assert got.to_list() == values.to_list()
    added = frame.with_columns(got).select("c", "a", "b")
    assert added.n_chunks("all") == [3, 3, 3]  # nothing was copied into one chunk
    mixed = frame.with_columns(pl.Series("b", np.arange(11)))  # "b" in one chunk
    assert chunked_like(values, mixed).chunk_lengths() == [11]


def test_checks_redone_when_a_record_is_quarantined_late(tmp_path):
    """The duplicate-export check and the attempts run beside the node-list expansion, on the
    records before it; when a record is quarantined there (a bad NodeList), they are redone
    on the records kept. Here job 20 appears twice, one copy with a bad NodeList: what is kept
    has no repeated id, and job 20 was submitted after job 21, a higher id, so the note that
    the export lacks --duplicates must appear (it would not for the records before)."""
    rows = [
        "20|a|NODE_FAIL|0:0|2025-01-01T00:00:00|2025-01-01T00:01:00|2025-01-01T01:00:00|1|gres/gpu=8|n[01|c",
        "21|b|COMPLETED|0:0|2025-01-01T00:30:00|2025-01-01T00:31:00|2025-01-01T02:00:00|1|gres/gpu=8|n02|c",
        "20|a|COMPLETED|0:0|2025-01-01T01:00:00|2025-01-01T01:01:00|2025-01-01T03:00:00|1|gres/gpu=8|n03|c",
    ]  # fmt: skip
    r = read_sacct(_write(tmp_path, "\n".join([HEADER, *rows]) + "\n"), tz="UTC")
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (3, 2, 1)
    assert r.quarantine.get_column("line_no").to_list() == [2]
    assert r.quarantine.get_column("reason").str.starts_with("field NodeList").all()
    jobs = r.frames["jobs"].sort("job_id")
    assert jobs.get_column("attempt").to_list() == [0, 0]
    (note,) = [n for n in r.notes if "--duplicates" in n]
    assert "(e.g. 20)" in note
    assert SACCT_EXPORT_COMMAND in note
    # the same two records alone: the same note (the check is not a leftover of line 2)
    alone = read_sacct(_write(tmp_path, "\n".join([HEADER, *rows[1:]]) + "\n", "b.psv"), tz="UTC")
    assert [n for n in alone.notes if "--duplicates" in n] == [note]


def test_node_count_without_an_nnodes_field_is_the_lists_length(tmp_path):
    """With no NNodes/AllocNodes field the count is the expanded list's length (the hostlists
    here are counted by hand); with the field, its value is kept where the list agrees, and a
    record whose list names another number of nodes is quarantined (neither is trusted)."""
    rows = [
        "5|COMPLETED|2025-01-01T00:00:00|2025-01-01T00:01:00|2025-01-01T01:00:00|n[01-03,07]",
        "5.0|COMPLETED|2025-01-01T00:01:00|2025-01-01T00:01:00|2025-01-01T01:00:00|n02",
        "6|PENDING|2025-01-01T00:00:00|Unknown|Unknown|None assigned",
    ]
    p = _write(tmp_path, "\n".join(["JobID|State|Submit|Start|End|NodeList", *rows]) + "\n")
    r = read_sacct(p, tz="UTC", cluster="c")
    assert r.frames["jobs"].sort("job_id").get_column("n_nodes").to_list() == [4, 0]
    assert r.frames["job_steps"].get_column("n_nodes").to_list() == [1]
    with_field = [row.replace("|n", "|2|n").replace("|None", "|0|None") for row in rows]
    header = "JobID|State|Submit|Start|End|NNodes|NodeList"
    r = read_sacct(_write(tmp_path, "\n".join([header, *with_field]) + "\n", "b.psv"), tz="UTC",
                   cluster="c")  # fmt: skip
    assert r.frames["jobs"].sort("job_id").get_column("n_nodes").to_list() == [0]
    assert r.frames["job_steps"].height == 0
    assert r.quarantine.select("line_no", "reason").rows() == [
        (2, "field NNodes: 2 nodes, but NodeList 'n[01-03,07]' names 4"),
        (3, "field NNodes: 2 nodes, but NodeList 'n02' names 1"),
    ]
    agree = [rows[0].replace("|n", "|4|n"), rows[1].replace("|n", "|1|n"), with_field[2]]
    r = read_sacct(_write(tmp_path, "\n".join([header, *agree]) + "\n", "c.psv"), tz="UTC",
                   cluster="c")  # fmt: skip
    assert r.frames["jobs"].sort("job_id").get_column("n_nodes").to_list() == [4, 0]
    assert r.frames["job_steps"].get_column("n_nodes").to_list() == [1]


def test_a_node_count_that_disagrees_with_the_node_list_is_quarantined(tmp_path):
    """NNodes says 4 where NodeList names one node (e.g. NNodes and NCPUS swapped in the
    header): the exposure would be 4x, so the record is quarantined naming both; a pending job
    (no nodes yet, NNodes the request) and consistent records are kept."""
    rows = [
        ROWS[0],  # 2 nodes, n[01-02]
        ROWS[2].replace("|1|gres/gpu:h100=8|n03|", "|4|gres/gpu:h100=8|n03|"),
        "12|wait|PENDING|0:0|2025-01-01T00:00:00|Unknown|Unknown|4||None assigned|c",
    ]
    r = read_sacct(_write(tmp_path, "\n".join([HEADER, *rows])), tz="UTC")
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (3, 2, 1)
    assert r.quarantine.select("line_no", "reason").rows() == [
        (3, "field NNodes: 4 nodes, but NodeList 'n03' names 1")
    ]
    assert r.frames["jobs"].select("job_id", "n_nodes").sort("job_id").rows() == [
        ("10", 2), ("12", 4),
    ]  # fmt: skip


def _front_ends_used(monkeypatch) -> list[bool]:
    """Record, per read, whether the mapped front end read the file (False: it handed over)."""
    from reliability.ingest.sacct import mapped as _sacct_mapped
    from reliability.ingest.sacct import reader as _sacct_reader

    used: list[bool] = []

    def mapped(reader, path):
        used.append(_sacct_mapped.read_mapped(reader, path))
        return used[-1]

    monkeypatch.setattr(_sacct_reader, "read_mapped", mapped)
    return used


@pytest.mark.parametrize(("batch_rows", "window_bytes"), [(3, 1024), (7, 4096), (50, 1 << 20)])
def test_front_ends_agree_with_small_batches_and_windows(
    shared, tmp_path, monkeypatch, batch_rows, window_bytes
):
    """The lines the record assembly consumes (names split by newlines, with '|') leave the
    mapped front end's batches wherever the batch and window boundaries fall: the result is
    the block stream's (the same real export, gzipped), and every line is counted once."""
    from reliability.ingest.sacct import mapped as _sacct_mapped

    src = shared / "slurm-real-run1" / "final_snapshot" / "sacct_broad_duplicates.psv"
    gz = _write(tmp_path, gzip.compress(src.read_bytes()), "s.psv.gz")
    b = read_sacct(gz, tz="UTC")
    monkeypatch.setattr(_sacct_mapped, "BATCH_ROWS", batch_rows)
    monkeypatch.setattr(_sacct_mapped, "WINDOW_BYTES", window_bytes)
    used = _front_ends_used(monkeypatch)
    a = read_sacct(src, tz="UTC")
    assert used == [True]  # (the mapped front end read it: it did not hand over to the stream)
    for t in ("jobs", "job_steps"):
        assert a.frames[t].equals(b.frames[t])
    assert a.quarantine.drop("source_file").equals(b.quarantine.drop("source_file"))
    assert (a.rows_read, a.rows_kept) == (b.rows_read, b.rows_kept)


@pytest.mark.parametrize("form", ["iso", "epoch"])
def test_a_clean_export_takes_the_mapped_front_end(tmp_path, monkeypatch, form):
    """A clean export is read by the memory-mapped front end. The block stream gives the same
    rows, so a fault there (any polars error while taking a batch makes the reader hand the file
    over) would only show as a read several times slower: checked here, in both time forms."""
    from reliability.ingest.sacct import mapped as _sacct_mapped
    from reliability.testing import synthetic_sacct

    path = tmp_path / "clean.psv"
    synthetic_sacct(path, 3_000, seed=3, n_nodes=64, times=form)
    monkeypatch.setattr(_sacct_mapped, "BATCH_ROWS", 1_000)
    used = _front_ends_used(monkeypatch)
    r = read_sacct(path, tz="UTC")
    assert used == [True]
    assert r.rows_quarantined == 0
    assert r.rows_read == r.rows_kept > 3_000
