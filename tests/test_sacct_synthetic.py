"""read_sacct recovers exactly what the synthetic generator wrote (known truth)."""

from datetime import UTC, datetime

import polars as pl

from reliability.ingest import hostlist, read_sacct
from reliability.testing import synthetic_sacct


def test_recovers_truth(tmp_path):
    truth = synthetic_sacct(tmp_path / "s.psv", 20_000, seed=11, n_nodes=2000)
    r = read_sacct(tmp_path / "s.psv", tz="UTC")
    assert r.rows_quarantined == 0
    jobs = r.tables["jobs"]
    assert jobs.height == truth.height
    t = truth.with_columns(
        submit=pl.from_epoch("submit_s", time_unit="s").dt.replace_time_zone("UTC"),
        start=pl.from_epoch("start_s", time_unit="s").dt.replace_time_zone("UTC"),
        end=pl.from_epoch("end_s", time_unit="s").dt.replace_time_zone("UTC"),
    )
    got = jobs.select(
        "job_id", pl.col("state").cast(pl.String), "n_nodes", "n_accelerators",
        pl.col("nodes").list.len().alias("n_listed"), "submit_time", "start_time", "end_time",
    ).sort("job_id")  # fmt: skip
    want = t.select(
        "job_id", "state", pl.col("n_nodes").cast(pl.UInt32), pl.col("gpus").cast(pl.UInt32).alias("n_accelerators"),
        pl.when(pl.col("start_s").is_null()).then(0).otherwise(pl.col("n_nodes")).cast(pl.UInt32).alias("n_listed"),
        pl.col("submit").alias("submit_time"), pl.col("start").alias("start_time"), pl.col("end").alias("end_time"),
    ).sort("job_id")  # fmt: skip
    assert got.equals(want)
    # every expanded node list is a valid, duplicate-free set of real node names
    lists = jobs.filter(pl.col("n_nodes") > 1).get_column("nodes").to_list()
    assert all(len(set(x)) == len(x) for x in lists)
    assert all(hostlist.expand(hostlist.compress(x)) == sorted(x) for x in lists[:200])
    # steps: .batch and .extern for every started job
    steps = r.tables["job_steps"]
    started = truth.filter(pl.col("start_s").is_not_null()).height
    assert steps.filter(pl.col("step") == "batch").height == started
    assert jobs.get_column("submit_time").min() >= datetime(2025, 1, 1, tzinfo=UTC)
