import pytest

from reliability import Dataset
from reliability.cli import main
from reliability.datasets import load_sample_dataset, sample_files


def test_ingest_and_info(tmp_path, run1, capsys):
    out = tmp_path / "ds"
    rc = main(
        [
            "ingest",
            "slurm",
            str(run1 / "sacct_broad_duplicates.psv"),
            "--into",
            str(out),
            "--tz",
            "UTC",
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "read 388, kept 387, quarantined 1 (jobs=125, job_steps=262)" in text
    assert main(["info", str(out)]) == 0
    assert "jobs                          125" in capsys.readouterr().out


def test_fatal_error_names_file_and_line(tmp_path, run1, capsys):
    rc = main(["ingest", "slurm", str(run1 / "sacct_default_parsable.psv"), "--into", str(tmp_path / "d"),
               "--tz", "UTC", "--cluster", "x"])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2
    assert "sacct_default_parsable.psv:1: field 'Submit'" in err
    assert "Traceback" not in err


def test_strict_fails_on_quarantine(tmp_path, run1, capsys):
    rc = main(
        [
            "ingest",
            "slurm",
            str(run1 / "sacct_broad.psv"),
            "--into",
            str(tmp_path / "d"),
            "--tz",
            "UTC",
            "--strict",
        ]
    )
    assert rc == 2
    assert "would be quarantined" in capsys.readouterr().err
    assert not (tmp_path / "d" / "manifest.json").exists()


def test_info_on_non_dataset(tmp_path, capsys):
    assert main(["info", str(tmp_path)]) == 2
    assert "not a Dataset folder" in capsys.readouterr().err


def test_kernel_options(tmp_path, shared, capsys):
    rc = main(["ingest", "kernel", str(shared / "nvidia-xid-dmesg-gpud/sxid-readme-xid79-sxid20034.log"),
               "--into", str(tmp_path / "d"), "--cluster", "c", "--node", "n1", "--boot-time", "2025-01-01T00:00:00Z"])  # fmt: skip
    assert rc == 0
    assert "kept 5, quarantined 0" in capsys.readouterr().out
    assert main(["ingest", "kernel", "x.log", "--into", str(tmp_path / "d"), "--cluster", "c",
                 "--boot-time", "2025-01-01T00:00:00"]) == 2  # fmt: skip
    assert "needs a UTC offset" in capsys.readouterr().err


def test_sample_dataset_is_idempotent(tmp_path):
    assert {"synthetic/sacct_synth_2000.psv", "gc3pie/sacct_samples_gc3pie.txt"} <= set(
        sample_files()
    )
    ds = load_sample_dataset(tmp_path / "s")
    n = len(ds.inputs)
    s = ds.summary()
    assert dict(s.summary.iter_rows())["jobs"] > 2000
    assert all(i["rows_read"] == i["rows_kept"] + i["rows_quarantined"] for i in ds.inputs)
    assert len(load_sample_dataset(tmp_path / "s").inputs) == n
    assert Dataset(tmp_path / "s").health_events.height == 10


@pytest.mark.parametrize("argv", [["--version"], ["ingest", "--help"]])
def test_help_and_version(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 0


def test_simulate_cluster_cli(tmp_path, capsys):
    rc = main(["simulate", "cluster", "--preset", "small", "--days", "3", "--seed", "4",
               "--out", str(tmp_path / "sim"), "--ingest", str(tmp_path / "ds")])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0
    assert "small: 48 nodes, 3 days, seed 4" in out
    assert "quarantined 0" in out
    assert (tmp_path / "sim" / "truth" / "attempts.parquet").is_file()
    assert Dataset(tmp_path / "ds").jobs.height > 100
    assert main(["simulate", "cluster", "--preset", "nope", "--out", str(tmp_path / "x")]) == 2
    assert "unknown preset" in capsys.readouterr().err


def test_analyze_cli(tmp_path, capsys):
    assert main(["simulate", "cluster", "--preset", "small", "--days", "20", "--seed", "1",
                 "--out", str(tmp_path / "sim"), "--ingest", str(tmp_path / "ds")]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["analyze", str(tmp_path / "ds"), "--min-gpus", "32"]) == 0
    out = capsys.readouterr().out
    assert "r_f =" in out
    assert "secondary preemptions" in out
    import polars as pl

    by = pl.read_parquet(tmp_path / "ds" / "analysis" / "mttf_by_size.parquet")
    assert by.height > 3
    assert main(["analyze", str(tmp_path)]) == 2


def test_simulate_pod_and_ingest(tmp_path, capsys):
    assert (
        main(
            [
                "simulate",
                "pod",
                "--preset",
                "tpuv4",
                "--days",
                "30",
                "--seed",
                "2",
                "--out",
                str(tmp_path / "p"),
            ]
        )
        == 0
    )
    assert "machine" in capsys.readouterr().out
    assert (
        main(
            [
                "ingest",
                "pod",
                str(tmp_path / "p" / "pod_events.jsonl"),
                "--into",
                str(tmp_path / "ds"),
            ]
        )
        == 0
    )
    assert "quarantined 0" in capsys.readouterr().out
    assert Dataset(tmp_path / "ds").inventory.height == 1024 + 6144 + 48
