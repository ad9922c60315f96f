"""The Dataset store: counts against independent parses of the inputs, idempotence, option
changes (refused or replaced), strict mode, option checks, standard input, the summary."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import io
import json
import re
import sys
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import polars as pl
import pytest

from reliability import Dataset, ReliabilityError
from reliability.errors import IngestError
from reliability.ingest import READERS
from reliability.store.footer import FooterError, read_footer, read_num_rows
from reliability.testing import synthetic_sacct

HEADER = "JobID|JobName|State|ExitCode|Submit|Start|End|NNodes|AllocTRES|NodeList|Cluster"
_JOBID = re.compile(r"^\d+(_(\d+|\[[\d,%\-]+\]))?(\+\d+)?(\.[\w]+)?$")


def _export(path, rows):
    path.write_text("\n".join([HEADER, *rows]) + "\n")
    return path


def _sacct_records(path):
    """Records of a sacct --parsable2 export by a plain parse, independent of the reader: a
    record starts on a line whose first two fields are a JobID and its JobIDRaw (a newline
    inside a job name continues the record on the next physical line). Returns
    [(first line number, JobID)]."""
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    head = lines[0].split("|")
    assert head[:2] == ["JobID", "JobIDRaw"]
    out = []
    for no, line in enumerate(lines[1:], start=2):
        f = line.split("|")
        if len(f) > 2 and _JOBID.match(f[0]) and re.match(r"^\d+(\.\w+)?$", f[1]):
            out.append((no, f[0]))
    return out


def test_counts_match_an_independent_parse_of_the_export(tmp_path, run1):
    src = run1 / "sacct_broad_duplicates.psv"
    records = _sacct_records(src)
    ds = Dataset(tmp_path / "ds")
    [o] = ds.ingest("slurm", src, tz="UTC")
    entry = ds.manifest["inputs"][0]
    assert o.rows_read == entry["rows_read"] == len(records)
    quarantined = set(ds.quarantine["line_no"].to_list())
    assert len(quarantined) == o.rows_quarantined
    assert quarantined <= {no for no, _ in records}  # a quarantined row is one of the records
    jobs = [j for no, j in records if "." not in j and no not in quarantined]
    steps = [j for no, j in records if "." in j and no not in quarantined]
    assert entry["rows_out"] == {"jobs": len(jobs), "job_steps": len(steps)}
    assert ds.jobs.height == len(jobs)
    assert sorted(ds.job_steps.select(pl.concat_str("job_id", pl.lit("."), "step"))
                  .to_series().to_list()) == sorted(steps)  # fmt: skip
    assert entry["sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()
    assert entry["size"] == src.stat().st_size


def test_node_state_counts_match_independent_parses(tmp_path, run1):
    ds = Dataset(tmp_path / "ds")
    ev = run1 / "sacctmgr_event.psv"
    body = [ln for ln in ev.read_text(encoding="utf-8").splitlines()[1:] if ln.strip()]
    [o] = ds.ingest("events", ev, tz="UTC")
    assert o.rows_read == len(body)  # one event per line (| in a reason adds fields, not lines)
    node_events = [ln for ln in body if ln.split("|")[1]]  # NodeName is the second field
    assert o.rows_out["node_states"] == len(node_events)
    snap = run1 / "scontrol_show_node.txt"
    text = snap.read_text(encoding="utf-8")
    [o] = ds.ingest("nodes", snap, cluster="testclu", tz="UTC")
    assert o.rows_read == text.count("NodeName=")
    out_of_service = re.findall(r"State=\S*(DOWN|DRAIN|FAIL|MAINT)", text)
    assert o.rows_out["node_states"] == len(out_of_service)


def test_reingest_is_a_noop(tmp_path):
    src = tmp_path / "s.psv"
    synthetic_sacct(src, 50, seed=1, n_nodes=8)
    ds = Dataset(tmp_path / "ds")
    ds.ingest("slurm", src, tz="UTC")
    before = (tmp_path / "ds" / "manifest.json").read_bytes()
    files = sorted(p.name for p in (tmp_path / "ds").rglob("*"))
    [o] = ds.ingest("slurm", src, tz="UTC")
    assert o.status == "unchanged"
    assert (tmp_path / "ds" / "manifest.json").read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "ds").rglob("*")) == files


def test_another_tz_is_refused_naming_the_option_or_replaces_the_rows(tmp_path):
    src = _export(tmp_path / "a.psv", [
        "1|a|COMPLETED|0:0|2025-07-01T10:00:00|2025-07-01T10:00:05|2025-07-01T11:00:00|1||n1|c",
        "2|b|FAILED|1:0|2025-07-02T10:00:00|2025-07-02T10:00:05|2025-07-02T12:00:00|1||n2|c",
    ])  # fmt: skip
    ds = Dataset(tmp_path / "ds")
    ds.ingest("slurm", src, tz="UTC")
    utc = ds.jobs.sort("job_id")
    with pytest.raises(
        IngestError, match=r"tz='UTC' then, tz='America/New_York' now.*replace=True"
    ):
        ds.ingest("slurm", src, tz="America/New_York")
    assert ds.jobs.equals(utc)  # refused: nothing changed
    old_parts = [tmp_path / "ds" / p["file"] for p in ds.inputs[0]["parts"].values()]
    [o] = ds.ingest("slurm", src, tz="America/New_York", replace=True)
    assert o.status == "replaced"
    assert len(ds.inputs) == 1
    assert ds.inputs[0]["options"]["tz"] == "America/New_York"
    assert not any(p.exists() for p in old_parts)  # the superseded parts are gone
    ny = ds.jobs.sort("job_id")
    # the same wall-clock times read in New York: shifted by that zone's offset (EDT in July)
    offset = ZoneInfo("America/New_York").utcoffset(datetime(2025, 7, 1, 10))
    assert offset == timedelta(hours=-4)
    for col in ("submit_time", "start_time", "end_time"):
        assert (ny[col] - utc[col]).to_list() == [-offset] * 2
    [again] = ds.ingest("slurm", src, tz="America/New_York")
    assert again.status == "unchanged"


def test_another_kind_is_refused(tmp_path, run1):
    ds = Dataset(tmp_path / "ds")
    src = run1 / "sacctmgr_event.psv"
    ds.ingest("events", src, tz="UTC")
    with pytest.raises(IngestError, match="read as 'events' inputs then, as 'slurm' now"):
        ds.ingest("slurm", src, tz="UTC")


def test_strict_writes_nothing(tmp_path):
    ds = Dataset(tmp_path / "ds")
    bad = _export(
        tmp_path / "bad.psv",
        ["1|a|EXPLODED|0:0|2025-01-01T00:00:00|2025-01-01T00:00:01|2025-01-01T00:01:00|1||n1|c"],
    )
    with pytest.raises(IngestError, match=r"bad\.psv:2: 1 row\(s\) would be quarantined"):
        ds.ingest("slurm", bad, tz="UTC", strict=True)
    assert ds.inputs == []
    assert not list((tmp_path / "ds").rglob("part-*"))


def test_reader_options_are_checked(tmp_path):
    ds = Dataset(tmp_path / "ds")
    with pytest.raises(ReliabilityError, match="'kernel' inputs need cluster="):
        ds.ingest("kernel", tmp_path / "x.log")
    with pytest.raises(
        ReliabilityError, match=r"year= does not apply to 'slurm' inputs \(they take"
    ):
        ds.ingest("slurm", tmp_path / "x.psv", year=2024)
    with pytest.raises(ReliabilityError, match="unknown input kind"):
        ds.ingest("pbs", tmp_path / "x")
    with pytest.raises(ReliabilityError, match=r"year=99999: expected a year in 1990-2200"):
        ds.ingest("kernel", tmp_path / "x.log", cluster="c", year=99999)
    with pytest.raises(ReliabilityError, match=r"boot_time=.* needs a UTC offset"):
        ds.ingest("kernel", tmp_path / "x.log", cluster="c", boot_time=datetime(2025, 1, 1))
    with pytest.raises(IngestError, match="no such file"):
        ds.ingest("slurm", tmp_path / "missing.psv", tz="UTC")
    with pytest.raises(IngestError, match="not a file"):
        ds.ingest("slurm", tmp_path, tz="UTC")


_TAKES = {k: set(inspect.signature(r.read).parameters) for k, r in READERS.items()}


@pytest.mark.parametrize("kind", sorted(k for k, p in _TAKES.items() if "tz" in p))
def test_an_unknown_zone_is_a_clear_error_for_every_reader(tmp_path, kind):
    (tmp_path / "x").write_text("anything\n")
    ds = Dataset(tmp_path / "ds")
    extra = {"cluster": "c"} if "cluster" in _TAKES[kind] else {}
    with pytest.raises(ReliabilityError, match=r"tz='Mars/Olympus' is not a time zone"):
        ds.ingest(kind, tmp_path / "x", tz="Mars/Olympus", **extra)
    assert not (tmp_path / "ds" / "manifest.json").exists()


def test_a_reader_bug_is_an_ingest_error_naming_the_input(tmp_path, monkeypatch):
    import reliability.store.inputs as inputs

    @functools.wraps(inputs.READERS["slurm"].read)  # same options as the real reader
    def broken(path, **kw):
        raise ZeroDivisionError("division by zero")

    spec = dataclasses.replace(inputs.READERS["slurm"], read=broken)
    monkeypatch.setitem(inputs.READERS, "slurm", spec)
    (tmp_path / "a.psv").write_text("x\n")
    with pytest.raises(IngestError, match=r"a\.psv: the 'slurm' reader failed \(ZeroDivisionError"):
        Dataset(tmp_path / "ds").ingest("slurm", tmp_path / "a.psv", tz="UTC")


def test_standard_input_is_spooled_hashed_and_recorded_as_stdin(tmp_path, monkeypatch, run1):
    data = (run1 / "sacctmgr_event.psv").read_bytes()
    bad = data + b"testclu|node01|2026-11-30T01:30:00|Unknown|NOT_A_STATE|x|root(0)\n"

    def feed(payload: bytes) -> None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(payload)))

    ds = Dataset(tmp_path / "ds")
    feed(bad)
    [o] = ds.ingest("events", "-", tz="UTC")
    assert o.path == "<stdin>"
    entry = ds.inputs[0]
    assert (entry["name"], entry["path"]) == ("<stdin>", "<stdin>")
    assert entry["sha256"] == hashlib.sha256(bad).hexdigest()
    assert entry["size"] == len(bad)
    assert ds.quarantine["source_file"].to_list() == ["<stdin>"]
    assert ds.quarantine["line_no"].to_list() == [bad.count(b"\n")]
    assert not [p for p in (tmp_path / "ds").iterdir() if p.name.startswith(".stdin")]
    feed(bad)
    [again] = ds.ingest("events", "-", tz="UTC")
    assert again.status == "unchanged"


def test_manifest_checks(tmp_path):
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "manifest.json").write_text(
        json.dumps({"format": "reliability-dataset", "schema_version": 99, "inputs": []})
    )
    with pytest.raises(ReliabilityError, match="schema version 99"):
        Dataset(tmp_path / "ds").jobs  # noqa: B018


def test_summary_counts_and_quarantine_reasons(tmp_path):
    truth = synthetic_sacct(tmp_path / "s.psv", 500, seed=3, n_nodes=64)
    bad = _export(tmp_path / "bad.psv", [
        "1|a|EXPLODED|0:0|2025-01-01T00:00:00|2025-01-01T00:00:01|2025-01-01T00:01:00|1||n1|c",
        "2|b|EXPLODED|0:0|2025-01-01T00:00:00|2025-01-01T00:00:01|2025-01-01T00:01:00|1||n1|c",
        "3|c|IMPLODED|0:0|2025-01-01T00:00:00|2025-01-01T00:00:01|2025-01-01T00:01:00|1||n1|c",
    ])  # fmt: skip
    ds = Dataset(tmp_path / "ds")
    ds.ingest("slurm", [tmp_path / "s.psv", bad], tz="UTC")
    s = ds.summary()
    assert dict(s.summary.iter_rows())["jobs"] == 500
    assert s.clusters == ["synth"]  # every row of cluster c was quarantined
    started = truth.filter(pl.col("start_s").is_not_null())
    expect_h = (started["gpus"] * (started["end_s"] - started["start_s"])).sum() / 3600
    assert s.accelerator_hours == pytest.approx(expect_h)
    assert s.accelerators_per_node == 8
    # three bad states: one reason kind with the state blanked, three rows, from one input
    reasons = s.quarantine_reasons
    assert reasons["rows"].sum() == 3
    assert reasons.height == 1
    assert reasons["inputs"][0] == 1
    assert s.quarantine_examples["line_no"].to_list() == [2, 3, 4]
    text = str(s)
    assert "quarantine: 3 row(s), by reason" in text
    assert "bad.psv:2: 1|a|EXPLODED" in text
    assert "<pre>" in s._repr_html_()


def test_inputs_are_listed_by_path_relative_to_the_datasets_parent(tmp_path):
    for snap in ("inflight", "final"):
        (tmp_path / snap).mkdir()
        synthetic_sacct(tmp_path / snap / "sacct.psv", 20, seed=len(snap), n_nodes=8)
    ds = Dataset(tmp_path / "ds")
    ds.ingest(
        "slurm", [tmp_path / "inflight" / "sacct.psv", tmp_path / "final" / "sacct.psv"], tz="UTC"
    )
    assert ds.summary().inputs["name"].to_list() == ["inflight/sacct.psv", "final/sacct.psv"]


def test_footer_reader_agrees_with_polars(tmp_path):
    frames = [
        pl.DataFrame({"a": list(range(1000))}),
        pl.DataFrame({"a": [None] * 3, "s": ["x", None, "z"], "l": [[1], [], None]}),
        pl.DataFrame(schema={"t": pl.Datetime("us", "UTC")}),
    ]
    for i, f in enumerate(frames):
        p = tmp_path / f"{i}.parquet"
        f.write_parquet(p, row_group_size=100, metadata={"k": "v" * i, "é": "ü"})
        footer = read_footer(p)
        assert (
            footer.num_rows
            == read_num_rows(p)
            == pl.scan_parquet(p).select(pl.len()).collect().item()
        )
        assert footer.metadata == pl.read_parquet_metadata(p)
    p = tmp_path / "0.parquet"
    p.write_bytes(p.read_bytes()[:-100])
    with pytest.raises(FooterError, match="magic"):
        read_num_rows(p)


def test_times_are_utc_aware_in_every_table(tmp_path, run1):
    ds = Dataset(tmp_path / "ds")
    ds.ingest("slurm", run1 / "sacct_broad_duplicates.psv", tz="UTC")
    for t in ("jobs", "job_steps"):
        for c, dt in ds.table(t).schema.items():
            if isinstance(dt, pl.Datetime):
                assert dt.time_zone == "UTC", (t, c)
    assert ds.observation_end is not None
    assert ds.observation_end.tzinfo is not None
    assert ds.observation_end <= datetime(2026, 12, 1, tzinfo=UTC)


def test_summary_counts_running_attempts_up_to_the_observation_end(tmp_path):
    """An attempt still RUNNING when the export was taken has accelerator time up to the
    observation end (the export's --endtime here), counted by hand: 2 GPUs x 60 s finished plus
    4 GPUs x 90 s running until 00:03:00, i.e. 0.1333 h; the text keeps three significant
    digits (not "0.0")."""
    rows = [
        "1|a|COMPLETED|0:0|2025-01-01T00:00:00|2025-01-01T00:00:30|2025-01-01T00:01:30|1|gres/gpu=2|n1|c",
        "2|b|RUNNING|0:0|2025-01-01T00:00:00|2025-01-01T00:01:30|Unknown|1|gres/gpu=4|n2|c",
    ]  # fmt: skip
    ds = Dataset(tmp_path / "ds")
    ds.ingest("slurm", [_export(tmp_path / "s.psv", rows)], tz="UTC",
              window_end=datetime(2025, 1, 1, 0, 3, tzinfo=UTC))  # fmt: skip
    s = ds.summary()
    want_h = (2 * 60 + 4 * 90) / 3600
    assert s.accelerator_hours == pytest.approx(want_h)
    assert f"accelerator-hours: {want_h:.3g}" in str(s)


def test_a_symlink_loop_or_a_device_is_refused_clearly(tmp_path):
    import os

    ds = Dataset(tmp_path / "ds")
    (tmp_path / "l1").symlink_to(tmp_path / "l2")
    (tmp_path / "l2").symlink_to(tmp_path / "l1")
    with pytest.raises(IngestError, match=r"l1: symlink loop"):
        ds.ingest("slurm", tmp_path / "l1", tz="UTC")
    with pytest.raises(IngestError, match=r"/dev/null: not a regular file \(a device or pipe\)"):
        ds.ingest("slurm", "/dev/null", tz="UTC")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(IngestError, match=r"fifo: not a regular file \(a device or pipe\)"):
        ds.ingest("slurm", tmp_path / "fifo", tz="UTC")
    with pytest.raises(IngestError, match=r"not a file \(a folder\?"):
        ds.ingest("slurm", tmp_path, tz="UTC")
