"""ReadResult on the one result base (issue 38, item 6): what one reader produced from one
input is a Result with a summary, text and HTML forms, sample sizes and a round trip to disk.

Checked on real samples (../shared/data) read by their readers: the summary's counts equal the
heights of the frames and of the quarantine, and rows read = kept + quarantined; for the
sacct export the records are also counted by hand from the file. The deprecated ``tables``
mapping warns; calling ``tables()`` is Result.tables(). The HTML form escapes what comes from
the data and shows at most 20 quarantined rows.
"""

from __future__ import annotations

import html as htmlmod
import re
import warnings
from datetime import UTC, datetime

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from test_sacct_real import _count_records

from reliability._result import Result
from reliability.ingest import (
    ReadResult,
    _common,
    read_dcgm,
    read_kernel_log,
    read_lanl,
    read_node_snapshot,
    read_sacct,
)

T0 = datetime(2025, 3, 1, tzinfo=UTC)


def _reads(shared) -> dict[str, ReadResult]:
    run1 = shared / "slurm-real-run1" / "final_snapshot"
    xid = shared / "nvidia-xid-dmesg-gpud"
    dcgm = shared / "dcgm-exporter-excerpts"
    return {
        "sacct psv": read_sacct(run1 / "sacct_broad_duplicates.psv", tz="UTC"),
        "sacct json": read_sacct(run1 / "sacct.json.gz"),
        "scontrol": read_node_snapshot(run1 / "scontrol_show_node.txt", cluster="c", tz="UTC"),
        "kernel log": read_kernel_log(xid / "dmesg-with-xid-119.log", cluster="c", node="n", tz="UTC"),
        "kernel log, no timestamps": read_kernel_log(
            xid / "ml-engineering-xid63-nvidia-smi-q.txt", cluster="c", node="n"
        ),
        "dcgm": read_dcgm(dcgm / "dcgm_issue235_err_code_labels.txt", cluster="c", scraped_at=T0),
        "lanl": read_lanl(shared / "lanl-failure-1996-2005" / "LA-UR-05-7318-failure-data-1996-2005.csv"),
    }  # fmt: skip


@pytest.fixture(scope="module")
def reads(shared) -> dict[str, ReadResult]:
    return _reads(shared)


def test_it_is_a_result_and_is_where_it_was():
    assert issubclass(ReadResult, Result)
    assert _common.ReadResult is ReadResult


def test_summary_counts_equal_the_frames_on_real_samples(reads):
    quarantined = 0
    for name, r in reads.items():
        s = r.summary
        assert s.height == 1, name
        row = s.row(0, named=True)
        assert row["source"] == r.source
        assert row["rows_read"] == r.rows_read == row["rows_kept"] + row["rows_quarantined"], name
        assert row["rows_quarantined"] == r.quarantine.height, name
        assert {c for c in s.columns if c.startswith("rows_")} - {
            "rows_read", "rows_kept", "rows_quarantined"
        } == {f"rows_{t}" for t in r.frames}, name  # fmt: skip
        for t, frame in r.frames.items():
            assert row[f"rows_{t}"] == frame.height, (name, t)
        assert (row["observed_from"], row["observed_until"]) == (r.observed_from, r.observed_until)
        assert row["observation_basis"] == r.observation_basis
        assert r.sample_sizes == {
            "records read": r.rows_read, "kept": r.rows_kept, "quarantined": r.quarantine.height
        }  # fmt: skip
        quarantined += r.quarantine.height
    assert quarantined >= 2  # the samples exercise the quarantine, not only clean reads


def test_sacct_records_counted_by_hand(shared):
    """rows_read of a real --parsable2 export equals its records counted by a plain Python
    rule (names with '|' and newlines included); every record is kept, as one job or step."""
    path = shared / "slurm-real-run1" / "final_snapshot" / "sacct_broad_duplicates.psv"
    row = read_sacct(path, tz="UTC").summary.row(0, named=True)
    assert row["rows_read"] == _count_records(path)
    assert row["rows_quarantined"] == 0
    assert row["rows_kept"] == row["rows_jobs"] + row["rows_job_steps"]


def test_text_form_says_the_counts_and_the_window(reads):
    r = reads["sacct psv"]
    text = str(r)
    assert text.splitlines()[0] == r.source
    assert (
        f"{r.rows_read:,} records read: {r.rows_kept:,} kept, {r.rows_quarantined:,} quarantined"
        in text
    )
    assert f"jobs {r.frames['jobs'].height:,}" in text
    assert f"{r.observed_until:%Y-%m-%d %H:%M:%S} UTC" in text
    q = reads["kernel log, no timestamps"]
    assert "quarantined (first rows):" in str(q)
    assert f"line {q.quarantine.item(0, 'line_no')}: no timestamp on the line" in str(q)
    assert repr(r) == f"ReadResult({r.summary_line()})"


def test_round_trip_to_disk_on_real_reads(reads, tmp_path):
    for name, r in reads.items():
        folder = tmp_path / re.sub(r"\W+", "_", name)
        r.to_disk(folder)
        back = ReadResult.from_disk(folder)
        assert str(back) == str(r), name
        assert_frame_equal(back.summary, r.summary)
        assert back.frames.keys() == r.frames.keys()
        for t in r.frames:
            assert_frame_equal(back.frames[t], r.frames[t])
        assert_frame_equal(back.quarantine, r.quarantine)
        assert (back.notes, back.observation_basis) == (r.notes, r.observation_basis)


def test_tables_as_a_mapping_warns_and_calling_it_does_not(reads):
    r = reads["sacct psv"]
    jobs = r.frames["jobs"]
    with pytest.warns(DeprecationWarning, match=r"use ReadResult\.frames"):
        assert r.tables["jobs"] is jobs
    with pytest.warns(DeprecationWarning, match="deprecated"):
        assert "jobs" in r.tables
    with pytest.warns(DeprecationWarning, match="deprecated"):
        assert list(r.tables) == list(r.frames)
    with pytest.warns(DeprecationWarning, match="deprecated"):
        assert dict(r.tables.items()) == r.frames
    with pytest.warns(DeprecationWarning, match="deprecated"):
        assert r.tables.get("inventory") is None
    with pytest.warns(DeprecationWarning, match="deprecated"):
        assert len(r.tables) == len(r.frames)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        shown = r.tables()
    assert shown.keys() == {"summary", "quarantine"} or shown.keys() == {"summary"}
    assert_frame_equal(shown["summary"], r.summary)


def test_the_tables_keyword_is_gone():
    e = ReadResult._example()
    with pytest.raises(TypeError, match="tables"):
        ReadResult(source="x", tables=e.frames, quarantine=e.quarantine, rows_read=3, rows_kept=2)  # type: ignore[call-arg]


def _xid_log(tmp_path, n_bad: int):
    """A kernel log of one good Xid line and ``n_bad`` Xid lines without a timestamp whose
    text holds markup."""
    good = "2025-03-01T08:00:00+00:00 gpu01 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, fell off"
    bad = "NVRM: Xid (PCI:0000:3b:00): 48, <script>alert({i})</script> & <b>bold</b>"
    p = tmp_path / "kern<1>.log"
    p.write_text("\n".join([good, *(bad.format(i=i) for i in range(n_bad))]) + "\n")
    return p


def test_html_escapes_the_data_and_shows_20_quarantined_rows(tmp_path):
    r = read_kernel_log(_xid_log(tmp_path, 30), cluster="c", node="n")
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (31, 1, 30)
    out = r._repr_html_()
    assert "<script" not in out
    assert "<b>" not in out
    assert "&lt;script&gt;alert(0)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in out
    assert htmlmod.escape(r.source) in out
    assert "quarantine (first 20 of 30 rows)" in out
    # the quarantine table: its 20 rows name lines 2..21, line 22 onwards is not shown
    q = out.split("quarantine (first 20 of 30 rows)")[1]
    assert q.count("<tr>") == 1 + 20
    assert "alert(19)" in q
    assert "alert(20)" not in q


def test_html_of_a_short_quarantine_shows_it_whole(tmp_path):
    r = read_kernel_log(_xid_log(tmp_path, 3), cluster="c", node="n")
    out = r._repr_html_()
    assert "<em>quarantine</em>" in out
    assert out.split("<em>quarantine</em>")[1].count("<tr>") == 1 + 3


def test_a_clean_read_shows_no_quarantine_table(reads):
    clean = [r for r in reads.values() if r.rows_quarantined == 0]
    assert clean
    for r in clean:
        assert list(r.tables()) == ["summary"]
        assert "<em>quarantine" not in r._repr_html_()
        assert "quarantined (first rows)" not in str(r)


def test_an_empty_read_says_the_window_is_unknown():
    r = ReadResult("empty.log", {}, _common.quarantine_frame("empty.log", [], [], []), 0, 0)
    assert r.observed_until is None
    assert "observed window unknown" in str(r)
    assert "no tables produced" in str(r)
    assert r.summary.item(0, "observed_until") is None
    assert r.summary.schema["observed_until"] == pl.Datetime("us", "UTC")
