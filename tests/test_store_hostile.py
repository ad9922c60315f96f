"""Hostile Datasets and disks (issue 37, store and CLI part): a disk that fills inside a part's
parquet footer (polars then loses the errno), a manifest that contradicts itself (counts, an
input listed twice), part paths that leave the Dataset folder, and a part damaged in place
read by every command that reads a Dataset.

Each test asserts what the user sees (the message, the exit code, no traceback) and the Dataset
afterwards (the committed inputs intact, counted independently of the code under test)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from reliability import Dataset
from reliability.cli import main
from reliability.errors import DatasetDamagedError, DatasetError
from reliability.store.parts import PART_KEY, read_part_meta
from reliability.testing import synthetic_sacct

ROOT = Path(__file__).resolve().parents[1]


def _records(path: Path) -> int:
    """Records of a synthetic sacct export (one per line after the header)."""
    return sum(1 for ln in path.read_text().splitlines()[1:] if ln.strip())


def _child(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` in a fresh interpreter importing this source tree."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    cmd = [sys.executable, "-c", textwrap.dedent(script), *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


def _inputs(folder: Path) -> tuple[Path, Path]:
    a, b = folder / "a.psv", folder / "b.psv"
    synthetic_sacct(a, 300, seed=1, n_nodes=16)
    synthetic_sacct(b, 2000, seed=2, n_nodes=16, cluster="other")
    return a, b


def _assert_only(root: Path, a: Path, jobs_a: pl.DataFrame) -> None:
    fresh = Dataset(root)
    assert [i["name"] for i in fresh.inputs] == [a.name]
    assert fresh.inputs[0]["rows_read"] == _records(a)
    assert_frame_equal(fresh.jobs, jobs_a)
    assert fresh.verify().ok
    assert not [p for p in root.rglob("*") if p.name.endswith(".tmp") or p.name == ".lock"]


def _footer_start(write, frame: pl.LazyFrame, **kw) -> int:
    """Offset [bytes] where the parquet footer of ``frame`` written with ``kw`` starts."""
    buf = io.BytesIO()
    write(frame, buf, **kw)
    raw = buf.getvalue()
    return len(raw) - 8 - int.from_bytes(raw[-8:-4], "little")


# -- 3. a disk that fills inside a part's footer ---------------------------------------------


@pytest.fixture
def tiny_fs(tmp_path):
    """A 2 MiB tmpfs (needs root; skipped otherwise)."""
    mnt = tmp_path / "fs"
    mnt.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)],
                       capture_output=True, text=True)  # fmt: skip
    if r.returncode:
        pytest.skip(f"cannot mount a tmpfs: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_disk_full_inside_a_parts_footer_is_the_clear_disk_full_error(tmp_path, tiny_fs, monkeypatch, capsys):  # fmt: skip
    a, b = _inputs(tmp_path)
    root = tiny_fs / "ds"
    Dataset(root).ingest("slurm", a, tz="UTC")
    jobs_a = Dataset(root).jobs
    real = pl.LazyFrame.sink_parquet
    polars_errors: list[str] = []

    def fill_then_write(self, file, **kw):
        if not polars_errors and not (tiny_fs / "pad").exists():
            # leave free only the whole pages before the footer of this part starts
            start = _footer_start(real, self, **kw)
            st = os.statvfs(tiny_fs)
            keep = start // st.f_frsize * st.f_frsize
            (tiny_fs / "pad").write_bytes(bytes(st.f_bavail * st.f_frsize - keep))
        try:
            return real(self, file, **kw)
        except pl.exceptions.PolarsError as exc:
            polars_errors.append(str(exc))
            raise

    monkeypatch.setattr(pl.LazyFrame, "sink_parquet", fill_then_write)  # parts are streamed
    assert main(["ingest", "slurm", str(b), "--into", str(root), "--tz", "UTC"]) == 2
    monkeypatch.undo()
    err = capsys.readouterr().err
    # the real disk-full error polars gives inside a footer, which names no errno
    assert polars_errors
    assert "Invalid thrift" in polars_errors[0], polars_errors
    assert "os error" not in polars_errors[0]
    assert f"error: {b}: could not write its rows into {root}" in err
    assert "no space left on the device" in err
    assert "nothing of this input was committed" in err
    assert "Traceback" not in err
    assert "thrift" not in err
    (tiny_fs / "pad").unlink()
    _assert_only(root, a, jobs_a)
    [o] = Dataset(root).ingest("slurm", b, tz="UTC")
    assert (o.status, o.rows_read) == ("ingested", _records(b))


def test_a_file_size_limit_inside_a_parts_footer_is_a_clear_cli_error(tmp_path):
    """The kernel refuses the write (RLIMIT_FSIZE: EFBIG) where the footer starts: no root
    needed, and polars' message has lost the errno as with a full disk."""
    a, b = _inputs(tmp_path)
    root = tmp_path / "ds"
    Dataset(root).ingest("slurm", a, tz="UTC")
    jobs_a = Dataset(root).jobs
    r = _child("""
        import io, resource, signal, sys
        import polars as pl
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        real = pl.LazyFrame.sink_parquet
        def limited(self, file, **kw):
            buf = io.BytesIO()
            real(self, buf, **kw)
            raw = buf.getvalue()
            start = len(raw) - 8 - int.from_bytes(raw[-8:-4], "little")
            resource.setrlimit(resource.RLIMIT_FSIZE, (start, resource.RLIM_INFINITY))
            try:
                return real(self, file, **kw)
            except pl.exceptions.PolarsError as exc:
                print("polars said:", exc, file=sys.stderr)
                raise
        pl.LazyFrame.sink_parquet = limited  # parts are streamed
        from reliability.cli import main
        sys.exit(main(["ingest", "slurm", sys.argv[2], "--into", sys.argv[1], "--tz", "UTC"]))
    """, str(root), str(b))  # fmt: skip
    assert r.returncode == 2, r.stderr
    said, _, shown = r.stderr.partition("\n")
    assert "Invalid thrift" in said, r.stderr
    assert "os error" not in said
    assert "Traceback" not in shown
    assert shown.startswith(f"error: {b}: could not write its rows into {root}"), shown
    assert "file too large" in shown
    assert "nothing of this input was committed" in shown
    _assert_only(root, a, jobs_a)


# -- 1. a manifest that contradicts itself ---------------------------------------------------


@pytest.fixture
def two(tmp_path):
    """A Dataset of a.psv (300 jobs, nothing quarantined) and q.psv (50 jobs and one line that
    is no record, quarantined)."""
    a, q = tmp_path / "a.psv", tmp_path / "q.psv"
    synthetic_sacct(a, 300, seed=1, n_nodes=16)
    synthetic_sacct(q, 50, seed=5, n_nodes=4, cluster="qq")
    with q.open("a") as fh:
        fh.write("not|a|record\n")
    root = tmp_path / "ds"
    Dataset(root).ingest("slurm", [a, q], tz="UTC")
    return root, a, q


def _edit_manifest(root: Path, edit) -> None:
    m = json.loads((root / "manifest.json").read_text())
    edit(m)
    (root / "manifest.json").write_text(json.dumps(m))


def test_counts_that_break_read_eq_kept_plus_quarantined_are_reported_and_mended(two, capsys):
    root, a, q = two
    read = _records(a)  # every record of a was kept

    def edit(m):
        m["inputs"][0]["rows_kept"] = read - 5

    _edit_manifest(root, edit)
    assert main(["verify", str(root)]) == 1
    out = capsys.readouterr().out
    assert (
        f"input 'a.psv' (slurm, entry 1): rows read {read} != kept {read - 5} + quarantined 0"
        in out
    )
    assert main(["info", str(root)]) == 2
    err = capsys.readouterr().err
    assert f"rows read {read} != kept {read - 5} + quarantined 0" in err
    assert f"reliability repair {root}" in err
    assert "Traceback" not in err
    with pytest.raises(DatasetDamagedError, match="contradicts itself"):
        Dataset(root).jobs  # noqa: B018
    # repair restores the record from the footers of a's parts
    assert main(["repair", str(root)]) == 0
    assert "restored its record from its parts' footers" in capsys.readouterr().out
    fixed = Dataset(root)
    assert [(i["name"], i["rows_read"], i["rows_kept"], i["rows_quarantined"]) for i in fixed.inputs] == [
        ("a.psv", read, read, 0), ("q.psv", _records(q), _records(q) - 1, 1),
    ]  # fmt: skip
    assert fixed.verify().ok
    assert main(["info", str(root)]) == 0


def test_a_quarantine_count_its_part_does_not_hold_is_reported(two, capsys):
    root = two[0]

    def edit(m):  # read = kept + quarantined still holds, the quarantine part says otherwise
        m["inputs"][1]["rows_kept"] -= 2
        m["inputs"][1]["rows_quarantined"] += 2

    _edit_manifest(root, edit)
    assert main(["verify", str(root)]) == 1
    assert (
        "input 'q.psv' (slurm, entry 2): quarantined 3, but its quarantine part holds 1 rows"
        in (capsys.readouterr().out)
    )


def test_an_input_listed_twice_is_reported_never_counted_twice(two, capsys):
    root = two[0]
    _edit_manifest(root, lambda m: m["inputs"].append(dict(m["inputs"][1])))
    with pytest.raises(
        DatasetDamagedError, match=r"input 'q.psv' \(slurm, entry 3\): the same input"
    ):
        Dataset(root).quarantine  # noqa: B018  (the old code read its one row twice)
    assert main(["verify", str(root)]) == 1
    assert "(slurm, entry 3): the same input (sha256" in capsys.readouterr().out
    assert main(["info", str(root)]) == 2
    assert "listed twice" in capsys.readouterr().err
    assert main(["repair", str(root)]) == 0
    assert "'q.psv' (sha256" in capsys.readouterr().out
    fixed = Dataset(root)
    assert [i["name"] for i in fixed.inputs] == ["a.psv", "q.psv"]
    assert fixed.quarantine["raw"].to_list() == ["not|a|record"]
    assert fixed.jobs.height == 300 + 50
    assert fixed.verify().ok


# -- 2. part paths that leave the Dataset folder ----------------------------------------------


@pytest.mark.parametrize("where", ["relative", "absolute", "inside then out"])
def test_a_part_path_outside_the_dataset_is_refused_by_name(two, where, capsys):
    root, a, _ = two
    part = json.loads((root / "manifest.json").read_text())["inputs"][0]["parts"]["jobs"]
    outside = root.parent / "elsewhere" / "part-x.parquet"
    outside.parent.mkdir()
    shutil.copy(root / part["file"], outside)  # same bytes: the size check cannot tell
    before = outside.read_bytes()
    recorded = {"relative": "../elsewhere/part-x.parquet", "absolute": str(outside),
                "inside then out": "jobs/../../elsewhere/part-x.parquet"}[where]  # fmt: skip
    _edit_manifest(root, lambda m: m["inputs"][0]["parts"]["jobs"].update(file=recorded))
    msg = f"part path {recorded!r} escapes the Dataset folder"
    with pytest.raises(DatasetDamagedError, match=re.escape(msg)):
        Dataset(root).jobs  # noqa: B018
    # replacing the input would have removed the file its old entry names
    with pytest.raises(DatasetDamagedError, match=re.escape(msg)):
        Dataset(root).ingest("slurm", a, tz="UTC", replace=True)
    assert outside.read_bytes() == before
    for command in ("info", "analyze"):
        assert main([command, str(root)]) == 2
        assert msg in capsys.readouterr().err
    assert main(["verify", str(root)]) == 1
    assert f"input 'a.psv' (slurm, entry 1): table 'jobs': {msg}" in capsys.readouterr().out
    assert main(["repair", str(root)]) == 0
    assert "restored its record from its parts' footers" in capsys.readouterr().out
    assert outside.read_bytes() == before
    fixed = Dataset(root)
    assert fixed.inputs[0]["parts"]["jobs"]["file"] == part["file"]
    assert fixed.verify().ok


def test_repair_refuses_part_paths_outside_the_dataset_in_part_footers(two):
    root = two[0]
    entry = json.loads((root / "manifest.json").read_text())["inputs"][0]
    for p in entry["parts"].values():  # every footer of a lists its jobs part outside
        f = root / p["file"]
        desc = read_part_meta(f)
        desc.pop("num_rows")
        desc["input"]["parts"]["jobs"]["file"] = "../elsewhere/part-x.parquet"
        pl.read_parquet(f).write_parquet(f, metadata={PART_KEY: json.dumps(desc)})
    (root / "manifest.json").unlink()
    report = Dataset(root).repair()
    assert report.rebuilt
    assert [i["name"] for i in Dataset(root).inputs] == ["q.psv"]
    [left_out] = report.incomplete
    assert left_out.startswith("'a.psv'")
    assert "part path '../elsewhere/part-x.parquet' escapes the Dataset folder" in left_out


# -- 4. a part damaged in place, read by every command that reads a Dataset -----------------


def _damage(path: Path, how: str) -> None:
    raw = path.read_bytes()
    if how == "truncated":
        path.write_bytes(raw[: len(raw) // 2])
    else:  # zeroed in the middle, same size: only its bytes (sha256) tell
        path.write_bytes(raw[:100] + bytes(len(raw) // 2 - 100) + raw[len(raw) // 2 :])


@pytest.mark.parametrize("how", ["truncated", "zeroed"])
@pytest.mark.parametrize("command", ["analyze", "info", "lemon score", "lemon train"])
def test_a_damaged_part_is_named_by_every_command_that_reads_the_dataset(two, tmp_path, how, command, capsys):  # fmt: skip
    root, _, _ = two
    part = json.loads((root / "manifest.json").read_text())["inputs"][0]["parts"]["jobs"]["file"]
    _damage(root / part, how)
    labels = tmp_path / "lemons.txt"
    labels.write_text("gpu001\n")
    extra = {"lemon train": ["--labels", str(labels), "--out", str(tmp_path / "m.json")]}
    assert main([*command.split(), str(root), *extra.get(command, [])]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert part in err or part.split("/")[1] in err
    assert f"reliability verify {root}" in err
    assert f"reliability repair {root}" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("command", ["analyze", "info"])
def test_a_part_polars_cannot_read_is_named_even_when_the_manifest_vouches_for_it(two, command, capsys):  # fmt: skip
    """The manifest's size and sha256 rewritten to match the damage: the reads' checks pass and
    polars fails; the command then finds and names the part instead of a traceback (the part's
    own seal tells it is damaged)."""
    root, _, _ = two
    m = json.loads((root / "manifest.json").read_text())
    part = m["inputs"][0]["parts"]["jobs"]
    _damage(root / part["file"], "zeroed")
    part["sha256"] = hashlib.sha256((root / part["file"]).read_bytes()).hexdigest()
    (root / "manifest.json").write_text(json.dumps(m))
    assert main([command, str(root)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {root}: the Dataset is damaged: {part['file']}: the part is "
                          "damaged: its content no longer matches the sha256 its footer was "
                          "sealed with")  # fmt: skip
    assert "(input 'a.psv', slurm)" in err
    assert f"reliability repair {root}" in err
    assert "Traceback" not in err


# -- an edited manifest over intact parts ----------------------------------------------------


def _tables(root: Path) -> dict[str, pl.DataFrame]:
    ds = Dataset(root)
    return {t: ds.table(t) for t in ("jobs", "job_steps", "quarantine")}


EDITS = {
    # one part's sha256 (its file is untouched)
    "a part's sha256": lambda m: m["inputs"][0]["parts"]["jobs"].update(sha256="0" * 64),
    # one part's size
    "a part's size": lambda m: m["inputs"][0]["parts"]["jobs"].update(
        bytes=m["inputs"][0]["parts"]["jobs"]["bytes"] + 1
    ),
    # a table's rows, consistently in rows_out and in the part record
    "a part's rows": lambda m: (
        m["inputs"][0]["parts"]["jobs"].update(rows=m["inputs"][0]["parts"]["jobs"]["rows"] + 7),
        m["inputs"][0]["rows_out"].update(jobs=m["inputs"][0]["rows_out"]["jobs"] + 7),
    ),
    # rows read and kept, so that read = kept + quarantined still holds
    "rows read and kept": lambda m: m["inputs"][1].update(
        rows_read=m["inputs"][1]["rows_read"] + 5, rows_kept=m["inputs"][1]["rows_kept"] + 5
    ),
}


@pytest.mark.parametrize("edit", list(EDITS))
def test_repair_restores_an_edited_record_from_intact_parts_and_drops_nothing(two, edit, capsys):
    root, a, q = two
    before = _tables(root)
    _edit_manifest(root, EDITS[edit])
    assert main(["verify", str(root)]) == 1  # the edit is seen
    capsys.readouterr()
    assert main(["repair", str(root)]) == 0
    out = capsys.readouterr().out
    assert "input(s) dropped" not in out, out
    assert "1 manifest record(s) mended" in out, out
    assert "restored its record from its parts' footers, nothing dropped" in out
    fixed = Dataset(root)
    # the counts are the inputs' own (counted here from the files), the rows those read before
    assert [(i["name"], i["rows_read"], i["rows_kept"], i["rows_quarantined"]) for i in fixed.inputs] == [
        ("a.psv", _records(a), _records(a), 0), ("q.psv", _records(q), _records(q) - 1, 1),
    ]  # fmt: skip
    for t, frame in before.items():
        assert_frame_equal(fixed.table(t), frame)
    assert fixed.verify().ok


def test_repair_drops_only_the_input_whose_part_is_really_damaged(two, capsys):
    root, _a, q = two
    jobs_q = Dataset(root).jobs.filter(pl.col("cluster") == "qq")
    m = json.loads((root / "manifest.json").read_text())
    part_a = root / m["inputs"][0]["parts"]["jobs"]["file"]
    # q's record edited (intact parts), a's part damaged in place and its sha "fixed" to match
    data = bytearray(part_a.read_bytes())
    data[len(data) // 2] ^= 0xFF
    part_a.write_bytes(bytes(data))

    def edit(m):
        m["inputs"][0]["parts"]["jobs"]["sha256"] = hashlib.sha256(data).hexdigest()
        m["inputs"][1]["rows_read"] += 3
        m["inputs"][1]["rows_kept"] += 3

    _edit_manifest(root, edit)
    report = Dataset(root).verify()
    assert any(part_a.name in p and "damaged" in p for p in report.problems), report
    assert main(["repair", str(root)]) == 0
    out = capsys.readouterr().out
    assert "1 input(s) dropped" in out, out
    assert f"its part jobs/{part_a.name} is damaged" in out
    assert "reliability ingest slurm" in out
    assert "1 manifest record(s) mended" in out
    fixed = Dataset(root)
    assert [(i["name"], i["rows_read"]) for i in fixed.inputs] == [("q.psv", _records(q))]
    order = ["cluster", "job_id", "attempt"]
    assert_frame_equal(fixed.jobs.sort(order), jobs_q.sort(order))
    assert fixed.verify().ok


# -- manifest fields outside their domain ----------------------------------------------------


def _latest_time(root: Path) -> datetime:
    """The latest time of any datetime column of the Dataset's jobs (computed here)."""
    jobs = Dataset(root).jobs
    cols = [c for c, t in jobs.schema.items() if isinstance(t, pl.Datetime)]
    return max(v for c in cols if (v := jobs[c].max()) is not None)


FIELD_EDITS = {
    "manifest_version -1": (lambda m, root: m.update(manifest_version=-1), "manifest_version -1"),
    "an unknown tz": (
        lambda m, root: m["inputs"][0]["options"].update(tz="Mars/Olympus_Mons"),
        "options.tz 'Mars/Olympus_Mons'",
    ),
    "another valid tz": (
        lambda m, root: m["inputs"][0]["options"].update(tz="Europe/Paris"),
        "inputs[0].options.tz",
    ),
    "until not a time": (
        lambda m, root: m["inputs"][0]["observation"].update(until="yesterday"),
        "observation.until 'yesterday'",
    ),
    "until in the future": (
        lambda m, root: m["inputs"][0]["observation"].update(until="2999-01-01T00:00:00+00:00"),
        "observation.until '2999-01-01T00:00:00+00:00' is in the future",
    ),
    "until not UTC": (
        lambda m, root: m["inputs"][0]["observation"].update(until="2020-01-01T00:00:00+02:00"),
        "not a UTC timestamp",
    ),
    "until before the data": (
        lambda m, root: m["inputs"][0]["observation"].update(
            until=(_latest_time(root) - timedelta(seconds=1)).isoformat()
        ),
        "observation.until",
    ),
}


@pytest.mark.parametrize("edit", list(FIELD_EDITS))
def test_verify_names_an_edited_manifest_field_and_repair_restores_it(two, edit, capsys):
    root = two[0]
    before = _tables(root)
    inputs = Dataset(root).inputs
    change, named = FIELD_EDITS[edit]
    _edit_manifest(root, lambda m: change(m, root))
    assert main(["verify", str(root)]) == 1
    out = capsys.readouterr().out
    assert named in out, out
    assert main(["repair", str(root)]) == 0
    out = capsys.readouterr().out
    assert "input(s) dropped" not in out, out
    fixed = Dataset(root)
    assert fixed.manifest["manifest_version"] == 2
    assert [(i["options"], i["observation"]) for i in fixed.inputs] == [
        (i["options"], i["observation"]) for i in inputs
    ]
    for t, frame in before.items():
        assert_frame_equal(fixed.table(t), frame)
    assert fixed.verify().ok


@pytest.mark.parametrize("edit", ["manifest_version -1", "an unknown tz", "until in the future"])
def test_reads_refuse_a_manifest_field_outside_its_domain(two, edit):
    root = two[0]
    change, named = FIELD_EDITS[edit]
    _edit_manifest(root, lambda m: change(m, root))
    with pytest.raises(DatasetDamagedError, match=re.escape(named)):
        Dataset(root).jobs  # noqa: B018


def test_a_manifest_of_a_newer_version_is_refused_not_mended(two):
    root = two[0]
    _edit_manifest(root, lambda m: m.update(manifest_version=3))
    with pytest.raises(DatasetError, match=r"manifest version 3.*newer version"):
        Dataset(root).jobs  # noqa: B018
    with pytest.raises(DatasetError, match="manifest version 3"):
        Dataset(root).repair()
    assert json.loads((root / "manifest.json").read_text())["manifest_version"] == 3
