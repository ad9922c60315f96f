"""Writers that take turns (issue 37): ``ingest --wait SECONDS`` / ``Dataset.ingest(wait_s=)``.

Four real ``reliability ingest`` processes started at the same moment: with ``--wait`` every one
commits (one at a time), without it one commits and the three others are refused naming it; a
holder that never lets go refuses a waiting writer after the wait, saying it waited."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from reliability import Dataset
from reliability.cli import main
from reliability.errors import DatasetLockedError
from reliability.testing import synthetic_sacct

ROOT = Path(__file__).resolve().parents[1]

#: ``reliability ingest`` of argv[2] into argv[1] once the file argv[3] exists (so that every
#: process asks for the lock at the same moment), reading for argv[4] seconds under the lock;
#: further arguments are passed to the command
GATED_INGEST = """
    import os, sys, time
    import reliability.store.inputs as inp
    real = inp.READERS["slurm"]
    @__import__("functools").wraps(real.read)  # keeps the reader's options
    def reader(path, **kw):
        time.sleep(float(sys.argv[4]))
        return real(path, **kw)
    inp.READERS["slurm"] = __import__("dataclasses").replace(real, read=reader)
    from reliability.cli import main
    print("ready", flush=True)
    while not os.path.exists(sys.argv[3]):
        time.sleep(0.01)
    sys.exit(main(["ingest", "slurm", sys.argv[2], "--into", sys.argv[1], "--tz", "UTC",
                   *sys.argv[5:]]))
"""


def _child(script: str, *args: str) -> subprocess.Popen[str]:
    """Start ``script`` in a fresh interpreter importing this source tree."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    cmd = [sys.executable, "-c", textwrap.dedent(script), *args]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip


def _records(path: Path) -> int:
    """Records of a synthetic sacct export (one per line after the header)."""
    return sum(1 for ln in path.read_text().splitlines()[1:] if ln.strip())


def _allocations(path: Path) -> int:
    """Allocation records (JobID without a step suffix): the job attempts of the export."""
    return sum(
        1 for ln in path.read_text().splitlines()[1:] if ln.strip() and "." not in ln.split("|")[0]
    )


@pytest.fixture
def four(tmp_path):
    """A Dataset holding a.psv, and four exports of four other clusters."""
    a = tmp_path / "a.psv"
    synthetic_sacct(a, 200, seed=1, n_nodes=16)
    Dataset(tmp_path / "ds").ingest("slurm", a, tz="UTC")
    files = []
    for i in range(4):
        f = tmp_path / f"c{i}.psv"
        synthetic_sacct(f, 100 + 10 * i, seed=10 + i, n_nodes=8, cluster=f"c{i}")
        files.append(f)
    return tmp_path / "ds", a, files


def _race(root: Path, files: list[Path], hold_s: float, *extra: str) -> list[tuple[int, str, int]]:
    """Run one gated ingest per file; return (exit code, stderr, pid) of each."""
    go = root.parent / "go"
    procs = [_child(GATED_INGEST, str(root), str(f), str(go), str(hold_s), *extra) for f in files]
    try:
        for p in procs:
            assert p.stdout.readline().strip() == "ready", p.stderr.read()
        go.touch()
        done = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            p.kill()
    return [(p.returncode, err, p.pid) for p, (_, err) in zip(procs, done, strict=True)]


def test_four_concurrent_ingests_with_wait_all_commit_one_at_a_time(four):
    root, a, files = four
    hold = 1.0
    t0 = time.monotonic()
    results = _race(root, files, hold, "--wait", "60")
    elapsed = time.monotonic() - t0
    assert [rc for rc, _, _ in results] == [0, 0, 0, 0], [err for _, err, _ in results]
    assert elapsed >= 4 * hold  # each read its input holding the lock: one after the other
    fresh = Dataset(root)
    assert sorted(i["name"] for i in fresh.inputs) == [
        "a.psv",
        "c0.psv",
        "c1.psv",
        "c2.psv",
        "c3.psv",
    ]
    by_name = {i["name"]: i["rows_read"] for i in fresh.inputs}
    assert by_name == {f.name: _records(f) for f in (a, *files)}
    counts = dict(fresh.jobs["cluster"].value_counts().rows())
    assert counts == {"synth": _allocations(a), **{f.stem: _allocations(f) for f in files}}
    assert fresh.verify().ok
    assert not (root / ".lock").exists()


def test_four_concurrent_ingests_without_wait_one_commits_and_the_others_name_it(four):
    root, _, files = four
    results = _race(root, files, 3.0)
    [winner] = [pid for rc, _, pid in results if rc == 0]
    refused = [err for rc, err, _ in results if rc != 0]
    assert len(refused) == 3
    for err in refused:
        assert f"another process is writing this Dataset (it is held by pid {winner}" in err
        assert "waited" not in err
        assert "or let this call wait for it with --wait SECONDS" in err  # the CLI's flag
        assert "Traceback" not in err
    assert len(Dataset(root).inputs) == 2


HOLDER = """
    import sys, time
    from pathlib import Path
    from reliability.store.lock import DatasetLock
    with DatasetLock(Path(sys.argv[1])).held():
        print("held", flush=True)
        time.sleep(float(sys.argv[2]))
"""


def test_the_wait_is_bounded_and_the_refusal_says_it_waited(four, capsys):
    root, _, files = four
    holder = _child(HOLDER, str(root), "60")  # never lets go within the test
    try:
        assert holder.stdout.readline().strip() == "held"
        t0 = time.monotonic()
        assert main(["ingest", "slurm", str(files[0]), "--into", str(root), "--tz", "UTC",
                     "--wait", "1.5"]) == 2  # fmt: skip
        waited = time.monotonic() - t0
        err = capsys.readouterr().err
        assert 1.5 <= waited < 6.0
        assert f"(it is held by pid {holder.pid}" in err
        assert "waited 1.5 s for it to finish" in err
        # without a wait: refused at once, as before
        t0 = time.monotonic()
        with pytest.raises(DatasetLockedError) as refused:
            Dataset(root).ingest("slurm", files[0], tz="UTC")
        assert time.monotonic() - t0 < 1.0
        assert "waited" not in str(refused.value)
    finally:
        holder.kill()
        holder.communicate()
    assert [i["name"] for i in Dataset(root).inputs] == ["a.psv"]


def test_a_waiting_ingest_commits_once_the_holder_finishes(four):
    root, _, files = four
    holder = _child(HOLDER, str(root), "2")
    try:
        assert holder.stdout.readline().strip() == "held"
        [o] = Dataset(root).ingest("slurm", files[0], tz="UTC", wait_s=60)
    finally:
        holder.communicate(timeout=60)
    assert (o.status, o.rows_read) == ("ingested", _records(files[0]))


@pytest.mark.parametrize("value", ["-1", "nan", "inf"])
def test_a_wait_that_is_no_bounded_time_is_refused_in_cli_terms(four, value, capsys):
    root, _, files = four
    assert main(["ingest", "slurm", str(files[0]), "--into", str(root), "--tz", "UTC",
                 "--wait", value]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "error: --wait " in err
    assert "expected a finite number of seconds >= 0" in err
