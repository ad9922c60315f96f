"""read_sacct recovers exactly what the synthetic generator wrote (known truth)."""

from datetime import UTC, datetime

import polars as pl

from reliability import hostlist
from reliability.ingest import read_sacct
from reliability.testing import synthetic_sacct


def test_recovers_truth(tmp_path):
    truth = synthetic_sacct(tmp_path / "s.psv", 20_000, seed=11, n_nodes=2000)
    r = read_sacct(tmp_path / "s.psv", tz="UTC")
    assert r.rows_quarantined == 0
    jobs = r.frames["jobs"]
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
    steps = r.frames["job_steps"]
    started = truth.filter(pl.col("start_s").is_not_null()).height
    assert steps.filter(pl.col("step") == "batch").height == started
    assert jobs.get_column("submit_time").min() >= datetime(2025, 1, 1, tzinfo=UTC)


def test_byte_counts_match_bytes_count_across_sub_blocks(monkeypatch):
    # the mapped front end counts newlines and separators 1 MiB at a time, notes whether
    # every byte is ASCII (then polars reads the file as strict UTF-8) and whether every line
    # has the header's separator count: oracle bytes.count/max and bytes.split per line
    import numpy as np

    from reliability.ingest.sacct import io as _sacct_io
    from reliability.ingest.sacct import mapped as _sacct_mapped

    def oracle(part: bytes, e: int) -> bool:
        lines = part.split(b"\n")
        if part.endswith(b"\n"):
            lines = lines[:-1]
        return all(x.count(b"|") == e for x in lines)

    monkeypatch.setattr(_sacct_mapped, "_COUNT_BYTES", 7)
    rng = np.random.default_rng(5)
    data = rng.choice(np.frombuffer(b"ab|\n|x\n\x00", np.uint8), size=1000)
    for lo, hi in ((0, 1000), (3, 997), (10, 11), (500, 507)):
        part = data[lo:hi].tobytes()
        got = _sacct_mapped._byte_counts(data, lo, hi, 2)
        assert got[:3] == (part.count(b"\n"), part.count(b"|"), max(part))
        assert got[3] == oracle(part, 2)
    data[640] = 0xC3
    assert _sacct_mapped._byte_counts(data, 600, 700, 2)[2] == 0xC3
    # regular and ragged lines, the ragged ones compensating (the total is right), split
    # across sub-blocks at every offset
    rows = [b"1|a|b", b"2|c|d", b"3|e", b"4|f|g|h", b"5|i|j"]
    for text in (b"\n".join(rows[:2]) + b"\n", b"\n".join(rows[:2]), b"\n".join(rows) + b"\n",
                 b"\n".join([rows[0], rows[3], rows[1], rows[2]]), b"1|a|b\n\n2|c|d||\n"):  # fmt: skip
        arr = np.frombuffer(text, np.uint8)
        for step in (1, 2, 3, 5, 7, 64):
            monkeypatch.setattr(_sacct_mapped, "_COUNT_BYTES", step)
            assert _sacct_mapped._byte_counts(arr, 0, arr.size, 2)[3] == oracle(text, 2), text
        assert _sacct_io.regular_lines(arr, 2) == oracle(text, 2), text


def test_non_ascii_names_and_invalid_bytes_read_as_before(tmp_path):
    # a valid UTF-8 job name is kept exactly; an invalid byte is replaced (not an error)
    from reliability.ingest import read_sacct

    head = "JobID|JobName|State|Submit|Start|End|Cluster\n"
    rows = [
        "1|ascii|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:01:00|2024-01-01T00:02:00|c\n",
        "2|caf\u00e9|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:01:00|2024-01-01T00:02:00|c\n",
    ]
    p = tmp_path / "a.psv"
    p.write_bytes((head + "".join(rows)).encode())
    names = read_sacct(p, tz="UTC").frames["jobs"].get_column("name").to_list()
    assert names == ["ascii", "caf\u00e9"]
    q = tmp_path / "b.psv"
    q.write_bytes((head + rows[0]).encode() + rows[1].encode().replace(b"\xc3\xa9", b"\xff"))
    r = read_sacct(q, tz="UTC")
    assert r.frames["jobs"].get_column("name").to_list() == ["ascii", "caf\ufffd"]
    assert any("not valid UTF-8" in n for n in r.notes)


def test_synthetic_export_reads_the_same_in_either_time_form(tmp_path):
    """The generator's two time forms (ISO text, epoch seconds) print the same truth: the reader
    gives identical tables from both, and the times match the returned epoch seconds."""
    truth = synthetic_sacct(tmp_path / "iso.psv", 500, seed=9, n_nodes=32)
    synthetic_sacct(tmp_path / "epoch.psv", 500, seed=9, n_nodes=32, times="epoch")
    assert (tmp_path / "epoch.psv").read_bytes() != (tmp_path / "iso.psv").read_bytes()
    a = read_sacct(tmp_path / "iso.psv", tz="UTC")
    b = read_sacct(tmp_path / "epoch.psv", tz="UTC")
    for t in ("jobs", "job_steps"):
        assert a.frames[t].equals(b.frames[t])
    starts = b.frames["jobs"].sort("job_id").get_column("start_time").dt.epoch("s").to_list()
    assert starts == truth.sort("job_id").get_column("start_s").to_list()
