"""Store faults: kill -9 at several points of a real ingest (in a subprocess), stale and live
locks, a lock deleted while an ingest runs, concurrent ingests, a lost manifest (repair), a
truncated or swapped part (verify), disk full, and workers orphaned by a killed parent.

Each test asserts the Dataset afterwards: readable, every committed input intact, counts
right (against a count of the input made here), and an idempotent rerun."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from reliability import Dataset
from reliability.cli import main
from reliability.errors import DatasetDamagedError, DatasetError, DatasetLockedError
from reliability.testing import synthetic_sacct

ROOT = Path(__file__).resolve().parents[1]


def _records(path: Path) -> int:
    """Records of a synthetic sacct export (one per line after the header; the generator
    writes no newline inside a field)."""
    return sum(1 for ln in path.read_text().splitlines()[1:] if ln.strip())


def _allocations(path: Path) -> int:
    """Allocation records (JobID without a step suffix): the job attempts of the export."""
    return sum(
        1 for ln in path.read_text().splitlines()[1:] if ln.strip() and "." not in ln.split("|")[0]
    )


def _child(script: str, *args: str, wait: bool = True, **kw):
    """Run ``script`` in a fresh interpreter importing this source tree."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    cmd = [sys.executable, "-c", textwrap.dedent(script), *args]
    if not wait:
        return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, **kw)  # fmt: skip
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, **kw)


@pytest.fixture
def base(tmp_path):
    """A Dataset with one committed input, and a second input ready to be ingested."""
    a, b = tmp_path / "a.psv", tmp_path / "b.psv"
    synthetic_sacct(a, 300, seed=1, n_nodes=16)
    synthetic_sacct(b, 200, seed=2, n_nodes=16, cluster="other")
    ds = Dataset(tmp_path / "ds")
    ds.ingest("slurm", a, tz="UTC")
    return ds, a, b


def _assert_only_a(ds: Dataset, a: Path, jobs_a: pl.DataFrame) -> None:
    fresh = Dataset(ds.path)
    assert [i["name"] for i in fresh.inputs] == [a.name]
    assert_frame_equal(fresh.jobs, jobs_a)
    assert fresh.verify().ok


KILL_POINTS = {
    # killed while reading the input: nothing written yet
    "during read": """
        import reliability.store.inputs as inp
        real = inp.READERS["slurm"]
        @__import__("functools").wraps(real.read)  # keeps the reader's options
        def reader(path, **kw):
            real(path, **kw); os.kill(os.getpid(), signal.SIGKILL)
        inp.READERS["slurm"] = __import__("dataclasses").replace(real, read=reader)
    """,
    # killed after the first of its parts was written
    "between parts": """
        import reliability.store.parts as parts
        real = parts.write_parquet_atomic
        def write(*a, **kw):
            out = real(*a, **kw); os.kill(os.getpid(), signal.SIGKILL)
        parts.write_parquet_atomic = write
    """,
    # every part written, the manifest not yet
    "before the manifest": """
        import reliability.store.dataset as d
        d.write_manifest = lambda *a, **kw: os.kill(os.getpid(), signal.SIGKILL)
    """,
    # the new manifest half written to its temp file, not renamed
    "during the manifest write": """
        import reliability._atomic as at
        real = at.write_bytes_atomic
        def write(data, dest):
            if dest.name == "manifest.json":
                import tempfile
                fd, tmp = tempfile.mkstemp(prefix=at._prefix(dest), suffix=".tmp", dir=dest.parent)
                os.write(fd, data[: len(data) // 2]); os.fsync(fd)
                os.kill(os.getpid(), signal.SIGKILL)
            return real(data, dest)
        at.write_bytes_atomic = write
    """,
}


@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_kill_9_during_an_ingest_keeps_the_committed_state(base, point):
    ds, a, b = base
    jobs_a = ds.jobs
    script = "import os, signal, sys\n" + textwrap.dedent(KILL_POINTS[point]) + textwrap.dedent("""
        from reliability import Dataset
        Dataset(sys.argv[1]).ingest("slurm", sys.argv[2], tz="UTC")
    """)  # fmt: skip
    r = _child(script, str(ds.path), str(b))
    assert r.returncode == -signal.SIGKILL, r.stderr
    # the previous state is what a reader sees; the lock file of the dead writer is left
    _assert_only_a(ds, a, jobs_a)
    assert json.loads((ds.path / ".lock").read_text())["pid"] > 0
    # the next ingest takes the lock over (and says so), then commits the input
    [o] = ds.ingest("slurm", b, tz="UTC")
    assert o.status == "ingested"
    assert any("no longer running" in n for n in o.notes), o.notes
    assert o.rows_read == _records(b)
    assert not (ds.path / ".lock").exists()
    assert not [p for p in ds.path.rglob(".*.tmp")]  # the dead writer's temp files are gone
    assert Dataset(ds.path).jobs.height == jobs_a.height + _allocations(b)
    # a rerun is a no-op, and removes what the crash left (parts of an input now committed)
    [again] = ds.ingest("slurm", b, tz="UTC")
    assert again.status == "unchanged"
    report = ds.verify()
    assert report.ok, report
    assert not report.unreferenced, report


def test_a_live_lock_is_reported_with_its_holder_and_never_advises_deletion(tmp_path, base):
    ds, _, b = base
    holder = _child("""
        import sys, time
        from reliability.store.lock import DatasetLock
        with DatasetLock(__import__("pathlib").Path(sys.argv[1])).held():
            print("held", flush=True); time.sleep(30)
    """, str(ds.path), wait=False)  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(DatasetLockedError) as err:
            ds.ingest("slurm", b, tz="UTC")
        msg = str(err.value)
        assert f"pid {holder.pid}" in msg
        assert "delete" not in msg.lower()
        assert "remove" not in msg.lower()
    finally:
        holder.kill()
        holder.communicate()
    # the holder died (kill -9): its lock went with it
    [o] = ds.ingest("slurm", b, tz="UTC")
    assert o.status == "ingested"


def test_a_stale_lock_file_is_taken_over_and_the_cli_says_so(base, capsys):
    ds, _, b = base
    dead = _child("import os; print(os.getpid())")
    pid = int(dead.stdout)
    (ds.path / ".lock").write_text(json.dumps({"pid": pid, "host": os.uname().nodename,
                                               "started": "2025-01-01T00:00:00+00:00"}))  # fmt: skip
    assert main(["ingest", "slurm", str(b), "--into", str(ds.path), "--tz", "UTC"]) == 0
    out = capsys.readouterr().out
    assert f"took over the lock of {ds.path} left by pid {pid}" in out
    assert "no longer running" in out
    assert len(Dataset(ds.path).inputs) == 2


SLOW_INGEST = """
    import sys, time
    import reliability.store.inputs as inp
    real = inp.READERS["slurm"]
    @__import__("functools").wraps(real.read)  # keeps the reader's options
    def reader(path, **kw):
        print("reading", flush=True)
        time.sleep(float(sys.argv[3]))
        return real(path, **kw)
    inp.READERS["slurm"] = __import__("dataclasses").replace(real, read=reader)
    from reliability.cli import main
    sys.exit(main(["ingest", "slurm", sys.argv[2], "--into", sys.argv[1], "--tz", "UTC"]))
"""


def test_concurrent_ingests_one_waits_for_the_other(tmp_path, base):
    ds, a, b = base
    c = tmp_path / "c.psv"
    synthetic_sacct(c, 100, seed=3, n_nodes=16, cluster="third")
    first = _child(SLOW_INGEST, str(ds.path), str(b), "3", wait=False)
    try:
        assert first.stdout.readline().strip() == "reading"
        second = _child(SLOW_INGEST, str(ds.path), str(c), "0")
        assert second.returncode == 2
        assert (
            f"another process is writing this Dataset (it is held by pid {first.pid}"
            in second.stderr
        )
    finally:
        _, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    again = _child(SLOW_INGEST, str(ds.path), str(c), "0")
    assert again.returncode == 0, again.stderr
    fresh = Dataset(ds.path)
    assert [i["name"] for i in fresh.inputs] == ["a.psv", "b.psv", "c.psv"]
    assert [i["rows_read"] for i in fresh.inputs] == [_records(p) for p in (a, b, c)]
    assert fresh.verify().ok


def test_deleting_the_lock_during_an_ingest_loses_no_committed_input(tmp_path, base):
    ds, a, b = base
    c = tmp_path / "c.psv"
    synthetic_sacct(c, 100, seed=3, n_nodes=16, cluster="third")
    slow = _child(SLOW_INGEST, str(ds.path), str(b), "3", wait=False)
    try:
        assert slow.stdout.readline().strip() == "reading"
        (ds.path / ".lock").unlink()  # what a user told to "delete the lock file" would do
        [o] = Dataset(ds.path).ingest("slurm", c, tz="UTC")  # gets in meanwhile, commits
        assert o.status == "ingested"
    finally:
        out, err = slow.communicate(timeout=60)
    assert slow.returncode == 0, err
    assert "was removed while this ingest ran" in out
    fresh = Dataset(ds.path)
    assert sorted(i["name"] for i in fresh.inputs) == ["a.psv", "b.psv", "c.psv"]
    assert fresh.jobs["cluster"].value_counts().sort("cluster").rows() == [
        ("other", _allocations(b)), ("synth", _allocations(a)), ("third", _allocations(c)),
    ]  # fmt: skip
    assert fresh.verify().ok


def test_a_lost_manifest_is_refused_then_rebuilt_by_repair(tmp_path, run1):
    ds = Dataset(tmp_path / "ds")
    ds.ingest("slurm", run1 / "sacct_broad_duplicates.psv", tz="UTC")
    ds.ingest("events", run1 / "sacctmgr_event.psv", tz="UTC")
    ds.ingest("nodes", run1 / "scontrol_show_node.txt", tz="UTC", cluster="testclu")
    before = {
        t: ds.table(t) for t in ("jobs", "job_steps", "node_states", "health_events", "quarantine")
    }
    inputs, window = ds.inputs, ds.observation_window()
    parts = sorted(p.name for p in (tmp_path / "ds").rglob("part-*.parquet"))
    (tmp_path / "ds" / "manifest.json").unlink()
    with pytest.raises(
        DatasetDamagedError, match=r"part file\(s\) but no manifest.json.*reliability repair"
    ):
        Dataset(tmp_path / "ds").ingest("slurm", run1 / "sacct_broad.psv", tz="UTC")
    with pytest.raises(DatasetDamagedError):
        Dataset(tmp_path / "ds").jobs  # noqa: B018
    assert (
        sorted(p.name for p in (tmp_path / "ds").rglob("part-*.parquet")) == parts
    )  # nothing deleted
    assert main(["info", str(tmp_path / "ds")]) == 2
    assert main(["repair", str(tmp_path / "ds")]) == 0
    fixed = Dataset(tmp_path / "ds")
    for t, frame in before.items():
        assert_frame_equal(fixed.table(t), frame)
    assert [(i["sha256"], i["kind"], i["options"], i["rows_read"]) for i in fixed.inputs] == [
        (i["sha256"], i["kind"], i["options"], i["rows_read"]) for i in inputs
    ]
    assert fixed.observation_window() == window
    assert fixed.verify().ok
    [o] = fixed.ingest("slurm", run1 / "sacct_broad_duplicates.psv", tz="UTC")
    assert o.status == "unchanged"


def test_repair_leaves_out_an_input_whose_parts_were_not_all_written(base):
    ds, a, b = base
    r = _child("import os, signal, sys\n" + textwrap.dedent(KILL_POINTS["between parts"]) + textwrap.dedent("""
        from reliability import Dataset
        Dataset(sys.argv[1]).ingest("slurm", sys.argv[2], tz="UTC")
    """), str(ds.path), str(b))  # fmt: skip
    assert r.returncode == -signal.SIGKILL
    jobs_a = ds.jobs
    (ds.path / "manifest.json").unlink()
    report = ds.repair()
    assert report.rebuilt
    assert report.kept == 1
    assert len(report.incomplete) == 1
    assert "'b.psv'" in report.incomplete[0]
    _assert_only_a(ds, a, jobs_a)


def test_a_truncated_or_swapped_part_is_a_clear_error_and_verify_names_it(tmp_path, base, capsys):
    ds, a, b = base
    ds.ingest("slurm", b, tz="UTC")
    ja, jb = (tmp_path / "ds" / i["parts"]["jobs"]["file"] for i in ds.inputs)
    jobs_b = Dataset(ds.path).jobs.filter(pl.col("cluster") == "other")
    # swapped: input a's jobs part replaced by input b's (a different size)
    saved = ja.read_bytes()
    ja.write_bytes(jb.read_bytes())
    with pytest.raises(DatasetDamagedError, match=rf"{ja.name}: \d+ bytes, the manifest records"):
        Dataset(ds.path).jobs  # noqa: B018
    assert main(["verify", str(ds.path)]) == 1
    assert f"jobs/{ja.name}" in capsys.readouterr().out
    # the same bytes, one flipped in the middle: same size and footer, only the sha256 tells;
    # a read refuses it too (it would decode to a wrong value, or fail inside polars)
    flipped = bytearray(saved)
    flipped[len(flipped) // 2] ^= 0xFF
    ja.write_bytes(bytes(flipped))
    report = Dataset(ds.path).verify()
    assert not report.ok
    assert f"jobs/{ja.name}: sha256" in report.problems[0]
    with pytest.raises(DatasetDamagedError, match=rf"{ja.name}: sha256 .* damaged or changed"):
        Dataset(ds.path).jobs  # noqa: B018
    # truncated
    ja.write_bytes(saved[: len(saved) // 3])
    with pytest.raises(DatasetDamagedError, match=r"truncated or replaced"):
        Dataset(ds.path).jobs  # noqa: B018
    # repair drops the damaged input (and says how to ingest it again); the rest is readable
    report = Dataset(ds.path).repair()
    assert report.kept == 1
    assert "reliability ingest slurm" in report.dropped[0]
    order = ["cluster", "job_id", "attempt"]
    assert_frame_equal(Dataset(ds.path).jobs.sort(order), jobs_b.sort(order))
    [o] = Dataset(ds.path).ingest("slurm", a, tz="UTC")
    assert o.status == "ingested"
    assert o.rows_read == _records(a)


def test_disk_full_while_writing_parts_commits_nothing_of_that_input(base, monkeypatch):
    ds, a, b = base
    jobs_a = ds.jobs
    real = pl.LazyFrame.sink_parquet  # parts are streamed
    calls = []

    def full(self, file, **kw):
        calls.append(file)
        if len(calls) == 2:  # the second part of the input
            Path(file).write_bytes(b"PAR1 partial")
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, file, **kw)

    monkeypatch.setattr(pl.LazyFrame, "sink_parquet", full)
    with pytest.raises(
        DatasetError,
        match=r"b\.psv: could not write its rows .*no space left.*nothing of this input was committed",
    ):
        ds.ingest("slurm", b, tz="UTC")
    monkeypatch.undo()
    _assert_only_a(ds, a, jobs_a)
    assert not [
        p
        for p in ds.path.rglob("*")
        if p.is_file() and (p.name.endswith(".tmp") or p.name == ".lock")
    ]
    assert len(list(ds.path.rglob("part-*.parquet"))) == len(ds.inputs[0]["parts"])


def test_disk_full_while_writing_the_manifest_keeps_the_previous_one(base, monkeypatch):
    import reliability._atomic as at

    ds, a, b = base
    jobs_a = ds.jobs

    def full(data, dest):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(at, "write_bytes_atomic", full)
    with pytest.raises(DatasetError, match=r"could not write the manifest .*were not committed"):
        ds.ingest("slurm", b, tz="UTC")
    monkeypatch.undo()
    _assert_only_a(ds, a, jobs_a)
    assert len(list(ds.path.rglob("part-*.parquet"))) == len(ds.inputs[0]["parts"])


def test_a_real_write_failure_file_size_limit_is_a_clear_cli_error(tmp_path, base):
    """The kernel refuses the write (RLIMIT_FSIZE: EFBIG, as a full disk refuses with ENOSPC)."""
    ds, a, _ = base
    jobs_a = ds.jobs
    big = tmp_path / "big.psv"
    synthetic_sacct(big, 20_000, seed=4, n_nodes=64, cluster="big")
    r = _child("""
        import resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
        from reliability.cli import main
        sys.exit(main(["ingest", "slurm", sys.argv[2], "--into", sys.argv[1], "--tz", "UTC"]))
    """, str(ds.path), str(big))  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert "could not write its rows" in r.stderr
    assert "file too large" in r.stderr
    _assert_only_a(ds, a, jobs_a)
    assert not [
        p
        for p in ds.path.rglob("*")
        if p.is_file() and (p.name.endswith(".tmp") or p.name == ".lock")
    ]


def _children(pid: int) -> set[int]:
    out = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(d.name))
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize("backend", ["processes", pytest.param("dask", marks=pytest.mark.slow)])
def test_killing_the_parent_of_a_partitioned_run_leaves_no_workers(backend):
    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc to list processes")
    parent = _child("""
        import os, sys, time
        from reliability.parallel import Executor
        with Executor(sys.argv[1], workers=2, retries=0) as ex:
            print(os.getpid(), flush=True)
            ex.map(time.sleep, [(120,), (120,)], ["a", "b"])
    """, backend, wait=False, start_new_session=True)  # fmt: skip
    try:
        pid = int(parent.stdout.readline())
        deadline = time.monotonic() + 60
        workers: set[int] = set()
        while time.monotonic() < deadline and len(workers) < 2:
            workers = {
                p
                for p in _children(pid)
                if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()
            }
            time.sleep(0.2)
        assert len(workers) >= 2, "workers did not start"
        time.sleep(1.0)  # let them reach the task
        os.kill(pid, signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_alive(p) for p in workers):
            time.sleep(0.2)
        assert not [p for p in workers if _alive(p)], "orphaned workers"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.killpg(pid, 0)  # the session's process group: anything left in it?
            except ProcessLookupError:
                break
            time.sleep(0.2)
        else:
            pytest.fail("processes left in the parent's process group")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(parent.pid, signal.SIGKILL)
        parent.communicate()


def _part_names(ds: Dataset) -> set[str]:
    return {f"{p.parent.name}/{p.name}" for p in ds.path.rglob("part-*.parquet")}


def _kill_before_commit(ds: Dataset, path: Path) -> set[str]:
    """Ingest ``path`` in a child killed (SIGKILL) after its parts, before its manifest commit;
    return the part files it left."""
    before = _part_names(ds)
    r = _child("import os, signal, sys\n" + textwrap.dedent(KILL_POINTS["before the manifest"]) + textwrap.dedent("""
        from reliability import Dataset
        Dataset(sys.argv[1]).ingest("slurm", sys.argv[2], tz="UTC")
    """), str(ds.path), str(path))  # fmt: skip
    assert r.returncode == -signal.SIGKILL, r.stderr
    left = _part_names(ds) - before
    assert left  # the child wrote its parts, then died
    return left


def test_an_orphan_part_of_a_killed_ingest_is_named_by_verify_and_removed_by_the_next_ingest(
    tmp_path, base
):
    ds, a, b = base
    c = tmp_path / "c.psv"
    synthetic_sacct(c, 100, seed=3, n_nodes=16, cluster="third")
    orphans = _kill_before_commit(ds, b)
    # verify names each orphan as a file outside the Dataset, not as damage to its data
    report = Dataset(ds.path).verify()
    assert report.ok, report
    assert sorted(report.unreferenced) == sorted(orphans)
    assert all(o in str(report) for o in orphans)
    # the next ingest of ANOTHER input (b is never retried) removes them, and says so
    [o] = Dataset(ds.path).ingest("slurm", c, tz="UTC")
    assert o.status == "ingested"
    assert any("removed 2 part file(s)" in n and "'b.psv'" in n for n in o.notes), o.notes
    fresh = Dataset(ds.path)
    referenced = {p["file"] for i in fresh.inputs for p in i["parts"].values()}
    assert _part_names(fresh) == referenced  # every file on disk is in the manifest
    assert not (orphans & _part_names(fresh))
    assert fresh.jobs.height == _allocations(a) + _allocations(c)
    report = fresh.verify()
    assert report.ok, report
    assert not report.unreferenced, report


@pytest.mark.parametrize("point", ["between parts", "before the manifest"])
def test_repair_removes_the_orphan_parts_of_a_killed_ingest(base, capsys, point):
    ds, a, b = base
    jobs_a = ds.jobs
    before = _part_names(ds)
    r = _child("import os, signal, sys\n" + textwrap.dedent(KILL_POINTS[point]) + textwrap.dedent("""
        from reliability import Dataset
        Dataset(sys.argv[1]).ingest("slurm", sys.argv[2], tz="UTC")
    """), str(ds.path), str(b))  # fmt: skip
    assert r.returncode == -signal.SIGKILL, r.stderr
    orphans = _part_names(ds) - before
    assert orphans
    assert main(["repair", str(ds.path)]) == 0
    out = capsys.readouterr().out
    assert all(o in out for o in orphans), out
    assert "reliability ingest slurm" in out  # how to ingest it
    assert "b.psv" in out
    assert _part_names(ds) == before
    _assert_only_a(ds, a, jobs_a)
    assert not Dataset(ds.path).verify().unreferenced
    [o] = Dataset(ds.path).ingest("slurm", b, tz="UTC")  # nothing of b was committed
    assert o.status == "ingested"
    assert o.rows_read == _records(b)


WAIT_BEFORE_COMMIT = """
    import os, sys, time
    from pathlib import Path
    import reliability.store.dataset as d
    real = d.write_manifest
    def write(*a, **kw):
        print("parts written", flush=True)
        while not Path(sys.argv[3]).exists():
            time.sleep(0.05)
        return real(*a, **kw)
    d.write_manifest = write
    from reliability import Dataset
    [o] = Dataset(sys.argv[1]).ingest("slurm", sys.argv[2], tz="UTC")
    print(o.status, flush=True)
"""


def test_repair_never_removes_the_parts_of_a_live_writer(tmp_path, base):
    # a writer has written its parts and is about to commit; the lock file was deleted, so a
    # repair gets the lock meanwhile: the writer's parts are not in the manifest yet, but it
    # is alive and will commit them
    ds, a, b = base
    before = _part_names(ds)
    go = tmp_path / "go"
    slow = _child(WAIT_BEFORE_COMMIT, str(ds.path), str(b), str(go), wait=False)
    try:
        assert slow.stdout.readline().strip() == "parts written"
        pending = _part_names(ds) - before
        assert pending
        (ds.path / ".lock").unlink()
        report = Dataset(ds.path).repair()
        assert not report.removed, report
        assert _part_names(ds) - before == pending
        # the next ingest does not remove them either
        assert Dataset(ds.path).ingest("slurm", a, tz="UTC")[0].status == "unchanged"
        assert _part_names(ds) - before == pending
    finally:
        go.touch()
        out, err = slow.communicate(timeout=60)
    assert slow.returncode == 0, err
    assert "ingested" in out
    fresh = Dataset(ds.path)
    assert [i["rows_read"] for i in fresh.inputs] == [_records(a), _records(b)]
    report = fresh.verify()
    assert report.ok, report
    assert not report.unreferenced, report
