"""The same wrong input through the library, the CLI and a pipeline: each names the option in
its own spelling (issue 38, item 2). The expected spellings are written out by hand from each
front end's documented terms (``year=`` / ``--year`` / ``inputs[0].options.year``), not taken
from the code under test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reliability import Dataset
from reliability.cli import main
from reliability.errors import Hint, Hinted, IngestError, message_of
from reliability.pipeline import PipelineError, load_pipeline
from reliability.pipeline.steps.data import _ingest

#: syslog lines carry no year: the kernel reader needs year=
SYSLOG = (
    "Mar  3 10:00:01 node07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"
)
HEADER = "JobID|JobName|State|ExitCode|Submit|Start|End|NNodes|AllocTRES|NodeList|Cluster"
#: local times without a zone (sacct's default): the reader needs tz=
DONE = "1|a|COMPLETED|0:0|2025-01-01T00:00:00|2025-01-01T00:00:01|2025-01-01T00:01:00|1||n1|c"
#: an attempt still running at export: the store says how to record the export time
RUNNING = "2|b|RUNNING|0:0|2025-01-01T00:00:00|2025-01-01T00:00:01|Unknown|1||n1|c"


def _pipeline(tmp_path: Path, reader: str, path: Path, keys: str) -> Path:
    p = tmp_path / "p.toml"
    p.write_text(
        f'[pipeline]\nname = "t"\n[[inputs]]\nkind = "files"\nreader = "{reader}"\n'
        f'paths = ["{path.name}"]\n{keys}\n'
    )
    return p


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_syslog_without_a_year(tmp_path, capsys):
    log = tmp_path / "kern.log"
    log.write_text(SYSLOG)
    # the library: Python's spelling, and the option as a structured hint
    with pytest.raises(IngestError) as err:
        Dataset(tmp_path / "lib").ingest("kernel", log, tz="UTC", cluster="c")
    assert "syslog timestamps have no year: pass year=" in str(err.value)
    assert Hint("year") in message_of(err.value).hints
    # the CLI: its flag
    code, _, stderr = _cli(
        capsys, "ingest", "kernel", str(log), "--into", str(tmp_path / "cli"), "--tz", "UTC",
        "--cluster", "c",
    )  # fmt: skip
    assert code == 2
    assert "syslog timestamps have no year: pass --year" in stderr
    assert "year=" not in stderr
    # a pipeline: the input's key
    spec = load_pipeline(_pipeline(tmp_path, "kernel", log, 'tz = "UTC"\ncluster = "c"')).inputs[0]
    with pytest.raises(PipelineError) as perr:
        _ingest([spec], tmp_path / "work", "cluster")
    assert "syslog timestamps have no year: set inputs[0].options.year" in str(perr.value)
    assert "year=" not in str(perr.value)


def test_a_syslog_without_a_year_or_a_zone_names_both(tmp_path, capsys):
    """Both options missing: one refusal names both (stop 47's trial met them one run at a time)."""
    log = tmp_path / "kern.log"
    log.write_text(SYSLOG)
    with pytest.raises(IngestError) as err:
        Dataset(tmp_path / "lib").ingest("kernel", log, cluster="c")
    assert {Hint("year"), Hint("tz")} <= set(message_of(err.value).hints)
    code, _, stderr = _cli(
        capsys, "ingest", "kernel", str(log), "--into", str(tmp_path / "cli"), "--cluster", "c"
    )
    assert code == 2
    assert "no year: pass --year, and no zone: pass --tz" in stderr
    spec = load_pipeline(_pipeline(tmp_path, "kernel", log, 'cluster = "c"')).inputs[0]
    with pytest.raises(PipelineError) as perr:
        _ingest([spec], tmp_path / "work", "cluster")
    assert "set inputs[0].options.year, and no zone: set inputs[0].tz" in str(perr.value)


def test_sacct_local_times_without_a_zone(tmp_path, capsys):
    psv = tmp_path / "a.psv"
    psv.write_text(f"{HEADER}\n{DONE}\n")
    with pytest.raises(IngestError) as err:
        Dataset(tmp_path / "lib").ingest("slurm", psv)
    assert "sacct prints local times without a zone: pass tz= (e.g. 'UTC'" in str(err.value)
    code, _, stderr = _cli(capsys, "ingest", "slurm", str(psv), "--into", str(tmp_path / "cli"))
    assert code == 2
    assert "sacct prints local times without a zone: pass --tz (e.g. 'UTC'" in stderr
    spec = load_pipeline(_pipeline(tmp_path, "slurm", psv, "")).inputs[0]
    with pytest.raises(PipelineError) as perr:
        _ingest([spec], tmp_path / "work", "cluster")
    assert "sacct prints local times without a zone: set inputs[0].tz (e.g. 'UTC'" in str(
        perr.value
    )


def test_a_note_keeps_its_hint_through_the_manifest(tmp_path, capsys):
    """A reader's note is written to the manifest as text and parts; each front end reads the
    parts back (a pipeline renders the saved note, not the reader's object)."""
    psv = tmp_path / "a.psv"
    psv.write_text(f"{HEADER}\n{DONE}\n{RUNNING}\n")
    [o] = Dataset(tmp_path / "lib").ingest("slurm", psv, tz="UTC")
    [note] = [n for n in o.notes if "still running" in n]
    assert note.endswith("pass observed_at= to record when the export was taken")
    manifest = json.loads((tmp_path / "lib" / "manifest.json").read_text())
    [entry] = manifest["inputs"]
    i = entry["notes"].index(str(note))
    assert isinstance(entry["note_parts"][i], list)  # the structured parts beside the text
    back = Dataset(tmp_path / "lib")
    assert any(isinstance(n, Hinted) and Hint("observed_at") in n.hints for n in _notes_of(back))
    code, out, _ = _cli(capsys, "ingest", "slurm", str(psv), "--into", str(tmp_path / "cli"),
                        "--tz", "UTC")  # fmt: skip
    assert code == 0
    assert "pass --observed-at to record when the export was taken" in out
    spec = load_pipeline(_pipeline(tmp_path, "slurm", psv, 'tz = "UTC"')).inputs[0]
    data = _ingest([spec], tmp_path / "work", "cluster")
    notes = data.reader_notes.get_column("note").to_list()
    assert any("set inputs[0].observed_at to record when the export was taken" in n for n in notes)
    assert not any("observed_at=" in n for n in notes)
    # a rerun finds the input unchanged and renders the saved note the same way
    again = _ingest([spec], tmp_path / "work", "cluster")
    assert again.reader_notes.get_column("note").to_list() == notes


def _notes_of(ds: Dataset) -> list[str]:
    from reliability.store.parts import notes_of

    manifest = json.loads((ds.path / "manifest.json").read_text())
    return [n for e in manifest["inputs"] for n in notes_of(e)]


def test_a_failure_on_an_executor_keeps_its_hint(tmp_path, capsys):
    """Inputs read as tasks (one per file): the refusal comes back from the task as text and
    hints, so the CLI still names its flag."""
    from reliability.parallel import Executor

    logs = []
    for i in range(2):
        logs.append(tmp_path / f"kern{i}.log")
        logs[-1].write_text(SYSLOG.replace("node07", f"node0{i}"))
    with pytest.raises(IngestError) as err:
        Dataset(tmp_path / "lib").ingest(
            "kernel", logs, tz="UTC", cluster="c", executor=Executor("serial")
        )
    assert "2 of 2 input(s) failed" in str(err.value)
    assert "no year: pass year=" in str(err.value)
    assert Hint("year") in message_of(err.value).hints
    code, _, stderr = _cli(
        capsys, "ingest", "kernel", *map(str, logs), "--into", str(tmp_path / "cli"),
        "--tz", "UTC", "--cluster", "c", "--workers", "2",
    )  # fmt: skip
    assert code == 2
    assert "no year: pass --year" in stderr
    assert "year=" not in stderr


def test_the_plan_refusal_keeps_its_hint_in_the_report_action():
    """The checkpoint action quotes the plan's refusal as evidence: the pipeline report spells
    its hint as the [analysis] key (the action joins text to the refusal, keeping the hint)."""
    from dataclasses import replace

    from reliability.pipeline.steps.cluster import CheckpointPlan
    from reliability.pipeline.steps.common import analysis_terms
    from reliability.report.actions import checkpoint_actions

    refusal = Hinted("r_f is not estimable; ", Hint("min_gpus", 4), " or lower")
    plan = replace(CheckpointPlan._example(), refusal=refusal)
    [action] = checkpoint_actions(plan, None)
    assert analysis_terms(action.evidence) == (
        "r_f is not estimable; set [analysis].min_gpus = 4 or lower."
    )
