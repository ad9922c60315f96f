"""Attribution one cluster per task on a Dask LocalCluster (reliability.analyses.distributed)
against the serial run on the same Dataset: equal rows, order and values."""

from __future__ import annotations

import os
import subprocess
import sys

import polars as pl
import pytest
from generators import generate_b
from polars.testing import assert_frame_equal

from reliability import Dataset
from reliability._atomic import HOST_TAG
from reliability.analyses import attribute, attribute_by_cluster, write_attributed_by_cluster
from reliability.attribution import attribute_failures
from reliability.parallel import Executor


@pytest.fixture(scope="module")
def three_clusters(tmp_path_factory):
    """Three clusters of generator B (independent histories, different seeds and sizes)."""
    root = tmp_path_factory.mktemp("dist")
    ds = Dataset(root / "ds")
    for i, (name, nodes) in enumerate([("tern", 48), ("gull", 32), ("skua", 24)]):
        h = generate_b(root / name, seed=11 + i, n_nodes=nodes, days=8, cluster=name)
        h.ingest(ds)
    return ds


def test_dask_attribution_equals_the_serial_run(three_clusters):
    ds = three_clusters
    serial = attribute_failures(ds, before_min=10, after_min=5)
    assert serial.get_column("cluster").n_unique() == 3
    assert serial.get_column("failure_domain").is_in(["hardware"]).any()
    with Executor("dask", workers=2, processes=False, retries=0) as ex:
        got = attribute_by_cluster(ds, ex, before_min=10, after_min=5)
        # the analysis entry point gives the same result object either way
        a_serial, a_dask = attribute(ds), attribute(ds, executor=ex)
    assert_frame_equal(got, serial)
    assert_frame_equal(a_dask.jobs, a_serial.jobs)
    assert_frame_equal(a_dask.reasons, a_serial.reasons)
    assert a_dask.gpus_per_node == a_serial.gpus_per_node


def test_serial_executor_and_one_cluster(three_clusters, tmp_path):
    """The serial backend gives the same frame; a one-cluster Dataset is not shared out."""
    ds = three_clusters
    with Executor("serial") as ex:
        assert_frame_equal(attribute_by_cluster(ds, ex), attribute_failures(ds))
    one = Dataset(tmp_path / "one")
    generate_b(tmp_path / "raw", seed=5, n_nodes=8, days=3).ingest(one)
    with Executor("serial") as ex:
        assert_frame_equal(attribute_by_cluster(one, ex), attribute_failures(one))


def test_failed_cluster_task_is_named(three_clusters, monkeypatch):
    import reliability.analyses.distributed as dist

    def boom(path, cluster, history, merged, options, *rest):
        if cluster == "gull":
            raise ValueError("disk gone")
        return pl.DataFrame()

    monkeypatch.setattr(dist, "_attribute_cluster", boom)
    with (
        Executor("serial", retries=0) as ex,
        pytest.raises(RuntimeError, match=r"'gull'.*disk gone"),
    ):
        attribute_by_cluster(three_clusters, ex)


def _pipeline(tmp_path, head: str):
    from reliability.pipeline.config import load_pipeline

    p = tmp_path / "p.toml"
    p.write_text(
        f'[pipeline]\nname = "d"\n{head}\n[[inputs]]\nkind = "simulate-cluster"\n'
        'preset = "small"\nseed = 1\ndays = 5\n'
    )
    return load_pipeline(p)


def test_pipeline_scheduler_key_and_stage(three_clusters, tmp_path, monkeypatch):
    """``[pipeline].scheduler`` is read and checked; the attribution stage then sends one
    cluster per task to Dask and its result equals the stage run in this process."""
    from reliability.errors import PipelineError
    from reliability.parallel import Executor as RealExecutor
    from reliability.pipeline.steps import cluster

    assert _pipeline(tmp_path, "").scheduler is None
    with pytest.raises(PipelineError, match="scheduler"):
        _pipeline(tmp_path, "scheduler = 3")
    cfg = _pipeline(tmp_path, 'scheduler = "local"')
    assert cfg.scheduler == "local"
    used = []

    def threaded(backend, scheduler=None, **kw):
        used.append((backend, scheduler))
        return RealExecutor(backend, scheduler=scheduler, workers=2, processes=False)

    monkeypatch.setattr("reliability.parallel.Executor", threaded)

    class Data:
        def open(self):
            return three_clusters

    on_dask = cluster.attribution(Data(), cfg)
    here = cluster.attribution(Data(), _pipeline(tmp_path, ""))
    assert used == [("dask", None)]
    assert_frame_equal(on_dask.jobs, here.jobs)


def test_tasks_do_not_hash_the_parts_the_caller_checked(three_clusters, tmp_path, monkeypatch):
    """Each part is hashed once per run, by the caller, not once more by every cluster's task
    (50 clusters of 1M attempts: each task hashed 3.5 GiB of jobs parts); a part changed
    after the caller's check is checked again, and refused, in the task."""
    import shutil

    import reliability.store.dataset as store
    from reliability.errors import DatasetDamagedError

    copy = tmp_path / "ds"
    shutil.copytree(three_clusters.path, copy)
    ds = Dataset(copy)
    parts = {
        e["parts"][t]["file"]
        for e in ds.inputs
        for t in ("jobs", "health_events", "node_states")
        if t in e["parts"]
    }
    real, seen = store.check_part, []

    def counting(root, table, part):
        seen.append(part["file"])
        return real(root, table, part)

    monkeypatch.setattr(store, "check_part", counting)
    with Executor("serial") as ex:
        got = attribute_by_cluster(ds, ex)
    assert sorted(seen) == sorted(parts)  # each once (three tasks: each would hash them all)
    assert_frame_equal(got, attribute_failures(Dataset(copy)))
    # a part damaged in place after the caller's check: the task hashes it and refuses
    victim = copy / next(e["parts"]["jobs"]["file"] for e in ds.inputs if "jobs" in e["parts"])
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    task = Dataset(copy, verified=ds.verified_parts)
    with pytest.raises(DatasetDamagedError, match="sha256"):
        task.scan("jobs")


def test_cluster_scan_equals_the_merged_table_filtered(three_clusters):
    """``Dataset.scan(table, clusters=)`` filters each part before the merge: the rows are
    those of the whole merged table filtered afterwards, in the same order."""
    ds = three_clusters
    for table in ("jobs", "health_events", "node_states"):
        whole = ds.scan(table).collect()
        for picked in (["gull"], ["skua", "tern"]):
            want = whole.filter(pl.col("cluster").is_in(picked))
            got = ds.scan(table, clusters=picked).collect()
            assert want.height > 0
            if table != "jobs":  # (only the jobs table has a defined order: by key)
                want, got = want.sort(pl.all()), got.sort(pl.all())
            assert_frame_equal(got, want)
    with pytest.raises(Exception, match="no cluster column"):
        ds.scan("quarantine", clusters=["gull"])
    # the clusters, read from the parts unmerged, are the merged table's
    for table in ("jobs", "health_events", "node_states"):
        merged = ds.scan(table).select(pl.col("cluster").unique()).collect().to_series()
        assert ds.clusters(table) == sorted(merged.to_list())
    with pytest.raises(Exception, match="not a canonical table with a cluster column"):
        ds.clusters("quarantine")


def test_reading_a_fleet_prints_no_polars_deprecation(three_clusters):
    """polars prints (from its engine, past Python's warning filters) a DeprecationWarning for
    ``is_in`` with a Series of the column's own type: a merged jobs table and a scan by
    cluster printed it in the user's notebook."""
    import subprocess
    import sys

    code = (
        "import sys; from reliability import Dataset; ds = Dataset(sys.argv[1]); "
        "ds.jobs; ds.scan('jobs', clusters=['gull']).collect(); "
        "ds.scan('node_states', clusters=['gull', 'skua']).collect(); "
        "ds.scan('health_events', clusters=['tern']).collect()"
    )
    res = subprocess.run(
        [sys.executable, "-c", code, str(three_clusters.path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "Warning" not in res.stderr, res.stderr


def test_one_jobs_part_of_two_clusters_keeps_the_file_order(tmp_path):
    """A single sacct export holding two clusters' jobs is not merged (file order): the tasks'
    rows are put back in that order."""
    from reliability.testing import synthetic_sacct

    a, b = tmp_path / "a.psv", tmp_path / "b.psv"
    synthetic_sacct(a, 300, seed=1, n_nodes=40, cluster="alder", days=20)
    synthetic_sacct(b, 300, seed=2, n_nodes=40, cluster="birch", days=20)
    lines_a, lines_b = a.read_text().splitlines(), b.read_text().splitlines()
    assert lines_a[0] == lines_b[0]  # one header
    body = [x for pair in zip(lines_a[1:], lines_b[1:], strict=False) for x in pair]
    both = tmp_path / "both.psv"
    both.write_text("\n".join([lines_a[0], *body]) + "\n")
    ds = Dataset(tmp_path / "ds")
    ds.ingest("slurm", both, tz="UTC")
    order = ds.jobs.get_column("cluster").head(6).to_list()
    assert set(order) == {"alder", "birch"}  # interleaved in the file
    with Executor("serial") as ex:
        assert_frame_equal(attribute_by_cluster(ds, ex), attribute_failures(ds))
        written = write_attributed_by_cluster(ds, ex, tmp_path / "parts")
    assert_frame_equal(written.collect(), attribute_failures(ds))


def test_written_parts_equal_the_serial_run(three_clusters, tmp_path, monkeypatch):
    """Each task writes its cluster's part and sends back its path: the scan of the parts is
    the serial frame; a rerun with fewer clusters leaves no part of the earlier run behind
    and no other file is touched; the rate models read the scan as they read the frame."""
    from reliability.models.failures import failure_rate_series, fit_mttf

    ds = three_clusters
    serial = attribute_failures(ds, before_min=10, after_min=5)
    folder = tmp_path / "parts"
    with Executor("dask", workers=2, processes=False, retries=0) as ex:
        got = write_attributed_by_cluster(ds, ex, folder, before_min=10, after_min=5)
        assert_frame_equal(got.collect(), serial)
        parts = sorted(p.name for p in folder.glob("*.parquet"))
        # the parts, and what they are of (the Dataset's parts, the clusters in their order)
        assert sorted(p.name for p in folder.iterdir()) == [*parts, "attributed.json"]
        assert parts == [f"attributed-{i:05d}.parquet" for i in range(3)]
        for name, cluster in zip(parts, ("gull", "skua", "tern"), strict=True):  # (sorted)
            assert pl.read_parquet(folder / name).get_column("cluster").unique().to_list() == [
                cluster
            ]
        # a rerun over the same folder: the same frame (parts overwritten, not added; a scan
        # taken before it reads the files it replaced: not used again)
        again = write_attributed_by_cluster(ds, ex, folder, before_min=10, after_min=5)
        assert_frame_equal(again.collect(), serial)
    end = ds.observation_end
    m_frame, m_scan = fit_mttf(serial, min_gpus=8), fit_mttf(again, min_gpus=8)
    assert m_frame.rate_.failures > 0
    assert_frame_equal(m_scan.summary, m_frame.summary)
    assert_frame_equal(m_scan.by_size, m_frame.by_size)
    assert m_scan.notes == m_frame.notes
    r_frame = failure_rate_series(serial, min_gpus=8, observation_end=end)
    r_scan = failure_rate_series(again, min_gpus=8, observation_end=end)
    assert_frame_equal(r_scan.series, r_frame.series)
    assert_frame_equal(r_scan.summary, r_frame.summary)
    # one cluster of the scan (its names read as categoricals), no observation end given, and
    # no rows at all: what the frame gives, notes included
    for kw in ({"cluster": "skua"}, {"cluster": "none such"}):
        a, b = fit_mttf(again, min_gpus=8, **kw), fit_mttf(serial, min_gpus=8, **kw)
        assert_frame_equal(a.summary, b.summary)
        assert_frame_equal(a.by_size, b.by_size)
        assert a.notes == b.notes
    a, b = failure_rate_series(again, min_gpus=8), failure_rate_series(serial, min_gpus=8)
    assert_frame_equal(a.series, b.series)
    assert (a.notes, a.observation_end) == (b.notes, b.observation_end)
    none = pl.col("job_id") == "none such"
    a, b = fit_mttf(again.filter(none)), fit_mttf(serial.filter(none))
    assert_frame_equal(a.summary, b.summary)
    assert (a.notes, a.observation_end) == (b.notes, None)

    (folder / "attributed-00007.parquet").write_bytes(b"an earlier run's part")
    # a part's temporary file left by a writer that was killed (its pid gone), one of a live
    # writer (this process), and the user's own files, whatever their names
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    (folder / f".attributed-00001.parquet.{HOST_TAG}-{dead}.x7k2q9.tmp").write_bytes(b"half")
    live = f".attributed-00002.parquet.{HOST_TAG}-{os.getpid()}.a1b2c3.tmp"
    mine = ["attributed-serial.parquet", "attributed-2025-01.parquet", "notes.txt", live]
    mine += [f".attributed-serial.parquet.{HOST_TAG}-{dead}.x7k2q9.tmp"]
    for name in mine:
        (folder / name).write_bytes(b"kept")
    one = Dataset(tmp_path / "one")
    generate_b(tmp_path / "raw", seed=5, n_nodes=8, days=3).ingest(one)
    monkeypatch.chdir(tmp_path)
    with Executor("serial") as ex:
        alone = write_attributed_by_cluster(one, ex, "parts")  # (relative to this folder)
    monkeypatch.chdir(tmp_path / "raw")
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["attributed-00000.parquet", "attributed.json", *mine]
    )
    assert_frame_equal(alone.collect(), attribute_failures(one))


def _payload(i: int) -> bytes:
    return bytes(100_000) + bytes([i])


def test_dask_results_are_let_go_as_they_are_gathered():
    """A task's result leaves the workers once the caller has it: at the last task, the
    workers hold at most that one (a fleet's attribution held every cluster's frame on its
    worker until the end: 9.7 GiB on one worker for ten 1M-attempt clusters)."""
    import time

    from distributed import default_client

    held_at_end: list[int] = []

    def held() -> int:
        return sum(
            k.startswith("reliability-")
            for keys in default_client().has_what().values()
            for k in keys
        )

    done: list[str] = []

    def progress(name: str) -> None:
        done.append(name)
        if len(done) == 4:  # the last: earlier results let go (asynchronously)
            deadline = time.monotonic() + 10
            while held() > 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            held_at_end.append(held())

    with Executor("dask", workers=1, processes=False, retries=0) as ex:
        got, failures = ex.map(_payload, [(i,) for i in range(4)], progress=progress)
    assert failures == []
    assert [got[str(i)][-1] for i in range(4)] == [0, 1, 2, 3]
    assert len(held_at_end) == 1
    assert held_at_end[0] <= 1
