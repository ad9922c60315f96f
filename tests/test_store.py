from __future__ import annotations

import json

import polars as pl
import pytest

import reliability.store as store_mod
from reliability import Dataset, ReliabilityError
from reliability.errors import IngestError
from reliability.testing import synthetic_sacct

HEADER = "JobID|JobName|State|ExitCode|Submit|Start|End|NNodes|AllocTRES|NodeList|Cluster"


def _export(path, rows):
    path.write_text("\n".join([HEADER, *rows]) + "\n")
    return path


def test_invariant_recorded_in_manifest(tmp_path, run1):
    ds = Dataset(tmp_path / "ds")
    [o] = ds.ingest("slurm", run1 / "sacct_broad_duplicates.psv", tz="UTC")
    entry = ds.manifest["inputs"][0]
    assert (
        entry["rows_read"] == entry["rows_kept"] + entry["rows_quarantined"] == o.rows_read == 388
    )
    assert entry["rows_out"] == {"jobs": 125, "job_steps": 262}
    assert len(entry["sha256"]) == 64
    assert entry["size"] == (run1 / "sacct_broad_duplicates.psv").stat().st_size
    assert ds.quarantine.height == entry["rows_quarantined"] == 1
    assert ds.jobs.height == 125
    assert ds.job_steps.height == 262


def test_reingest_is_a_noop(tmp_path, run1):
    ds = Dataset(tmp_path / "ds")
    ds.ingest("slurm", run1 / "sacct_broad_duplicates.psv", tz="UTC")
    before = (tmp_path / "ds" / "manifest.json").read_bytes()
    files = sorted(p.name for p in (tmp_path / "ds").rglob("*"))
    [o] = ds.ingest("slurm", run1 / "sacct_broad_duplicates.psv", tz="UTC")
    assert o.status == "unchanged"
    assert (tmp_path / "ds" / "manifest.json").read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "ds").rglob("*")) == files


def test_crash_before_manifest_keeps_previous_state(tmp_path, monkeypatch):
    ds = Dataset(tmp_path / "ds")
    ds.ingest(
        "slurm",
        _export(
            tmp_path / "a.psv",
            [
                "1|a|COMPLETED|0:0|2025-01-01T00:00:00|2025-01-01T00:00:01|2025-01-01T00:01:00|1||n1|c"
            ],
        ),
        tz="UTC",
    )
    good = ds.jobs

    def boom(obj, dest):
        raise OSError("disk full")

    monkeypatch.setattr(store_mod, "write_json_atomic", boom)
    with pytest.raises(OSError, match="disk full"):
        ds.ingest(
            "slurm",
            _export(
                tmp_path / "b.psv",
                [
                    "2|b|FAILED|1:0|2025-01-02T00:00:00|2025-01-02T00:00:01|2025-01-02T00:01:00|1||n2|c"
                ],
            ),
            tz="UTC",
        )
    monkeypatch.undo()
    # the new part file was written but is not in the manifest: readers do not see it
    assert Dataset(tmp_path / "ds").jobs.equals(good)
    assert len(list((tmp_path / "ds" / "jobs").glob("part-*.parquet"))) == 2
    assert not (tmp_path / "ds" / ".lock").exists()
    # the next ingest removes the orphan and then succeeds
    ds.ingest("slurm", tmp_path / "b.psv", tz="UTC")
    assert len(list((tmp_path / "ds" / "jobs").glob("part-*.parquet"))) == 2
    assert ds.jobs.get_column("job_id").to_list() == ["1", "2"]


def test_strict_writes_nothing(tmp_path):
    ds = Dataset(tmp_path / "ds")
    bad = _export(
        tmp_path / "bad.psv",
        ["1|a|EXPLODED|0:0|2025-01-01T00:00:00|2025-01-01T00:00:01|2025-01-01T00:01:00|1||n1|c"],
    )
    with pytest.raises(IngestError, match=r"bad\.psv:2: 1 row\(s\) would be quarantined"):
        ds.ingest("slurm", bad, tz="UTC", strict=True)
    assert ds.inputs == []


def test_overlapping_exports_latest_wins_and_attempts_renumbered(tmp_path):
    ds = Dataset(tmp_path / "ds")
    first = _export(tmp_path / "jan.psv", [
        "7|train|NODE_FAIL|0:0|2025-01-01T00:00:00|2025-01-01T00:01:00|2025-01-01T02:00:00|1||n1|c",
        "8|eval|RUNNING|0:0|2025-01-01T00:00:00|2025-01-01T00:01:00|Unknown|1||n2|c",
    ])  # fmt: skip
    second = _export(tmp_path / "feb.psv", [
        "8|eval|COMPLETED|0:0|2025-01-01T00:00:00|2025-01-01T00:01:00|2025-01-01T05:00:00|1||n2|c",
        "7|train|COMPLETED|0:0|2025-01-01T02:05:00|2025-01-01T02:10:00|2025-01-01T09:00:00|1||n3|c",
    ])  # fmt: skip
    ds.ingest("slurm", [first, second], tz="UTC")
    jobs = ds.jobs.sort("job_id", "attempt")
    assert jobs.select("job_id", "attempt", pl.col("state").cast(pl.String)).rows() == [
        ("7", 0, "NODE_FAIL"), ("7", 1, "COMPLETED"), ("8", 0, "COMPLETED"),
    ]  # fmt: skip


def test_reader_options_are_checked(tmp_path):
    ds = Dataset(tmp_path / "ds")
    with pytest.raises(ReliabilityError, match="need cluster="):
        ds.ingest("kernel", tmp_path / "x.log")
    with pytest.raises(ReliabilityError, match="does not apply"):
        ds.ingest("slurm", tmp_path / "x.psv", year=2024)
    with pytest.raises(ReliabilityError, match="unknown input kind"):
        ds.ingest("pbs", tmp_path / "x")
    with pytest.raises(IngestError, match="no such file"):
        ds.ingest("slurm", tmp_path / "missing.psv", tz="UTC")


def test_lock_blocks_a_second_writer(tmp_path):
    ds = Dataset(tmp_path / "ds")
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / ".lock").write_text("123")
    with pytest.raises(ReliabilityError, match="another ingest"):
        ds.ingest("slurm", tmp_path / "x.psv", tz="UTC")


def test_manifest_checks(tmp_path):
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "manifest.json").write_text(
        json.dumps({"format": "reliability-dataset", "schema_version": 99, "inputs": []})
    )
    with pytest.raises(ReliabilityError, match="schema version 99"):
        Dataset(tmp_path / "ds").jobs  # noqa: B018


def test_summary_counts(tmp_path):
    truth = synthetic_sacct(tmp_path / "s.psv", 500, seed=3, n_nodes=64)
    ds = Dataset(tmp_path / "ds")
    ds.ingest("slurm", tmp_path / "s.psv", tz="UTC")
    s = ds.summary()
    assert dict(s.summary.iter_rows())["jobs"] == 500
    assert s.clusters == ["synth"]
    started = truth.filter(pl.col("start_s").is_not_null())
    expect_h = (started["gpus"] * (started["end_s"] - started["start_s"])).sum() / 3600
    assert s.accelerator_hours == pytest.approx(expect_h)
    assert s.accelerators_per_node == 8
    text = str(s)
    assert "read = kept + quarantined" in text
    assert "s.psv" in text
    assert "<pre>" in s._repr_html_()
