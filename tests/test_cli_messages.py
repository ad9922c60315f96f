"""Messages an operator can act on: errors in CLI terms (--tz, --cluster, --fields, --year)
or pipeline keys (inputs[0].tz), a bad zone never a traceback, `reliability info` shows the
quarantine, `-` reads standard input, pipeline globs, verify/repair exit codes, and report
CSV cells that a spreadsheet would run as formulas are neutralised."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest
from bundled import BUNDLED_CLUSTER

from reliability import Dataset
from reliability.cli import main
from reliability.errors import Hint, Hinted, Placeholder
from reliability.ingest import READERS
from reliability.pipeline import PipelineError, load_pipeline
from reliability.pipeline.config import pipeline_terms
from reliability.testing import synthetic_sacct

ROOT = Path(__file__).resolve().parents[1]
HEADER = "JobID|JobName|State|ExitCode|Submit|Start|End|NNodes|AllocTRES|NodeList|Cluster"
ROW = "1|a|COMPLETED|0:0|2025-01-01T00:00:00|2025-01-01T00:00:01|2025-01-01T00:01:00|1||n1|c"


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _python_spelling(text: str) -> list[str]:
    """Python keyword spellings of options left in a CLI message (``tz=``, ``year=``)."""
    import re

    return re.findall(r"(?<![\w-])(tz|cluster|fields|year|node|boot_time|replace)=", text)


def test_missing_options_are_named_as_flags(tmp_path, capsys):
    psv = tmp_path / "a.psv"
    psv.write_text(f"{HEADER}\n{ROW}\n")
    code, _, err = _run(capsys, "ingest", "slurm", str(psv), "--into", str(tmp_path / "ds"))
    assert code == 2
    assert "--tz" in err
    assert not _python_spelling(err)
    log = tmp_path / "k.log"
    log.write_text(
        "2025-01-01T00:00:00+00:00 node1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"
    )
    code, _, err = _run(capsys, "ingest", "kernel", str(log), "--into", str(tmp_path / "ds"))
    assert code == 2
    assert "need --cluster" in err
    assert not _python_spelling(err)
    code, _, err = _run(
        capsys,
        "ingest",
        "slurm",
        str(psv),
        "--into",
        str(tmp_path / "ds"),
        "--tz",
        "UTC",
        "--year",
        "2025",
    )
    assert code == 2
    assert "--year does not apply to 'slurm' inputs" in err
    # what they take: the flags, and the options this command has no flag for said as such
    assert "(they take --cluster, --tz, --fields, window_start= (no flag here)" in err
    code, _, err = _run(
        capsys,
        "ingest",
        "kernel",
        str(log),
        "--into",
        str(tmp_path / "ds"),
        "--cluster",
        "c",
        "--year",
        "3000",
    )
    assert code == 2
    assert "--year 3000: expected a year in 1990-2200" in err
    noheader = tmp_path / "nh.psv"
    noheader.write_text(f"{ROW}\n")
    code, _, err = _run(
        capsys, "ingest", "slurm", str(noheader), "--into", str(tmp_path / "ds"), "--tz", "UTC"
    )
    assert code == 2
    assert "--fields" in err
    assert not _python_spelling(err)
    assert not (tmp_path / "ds" / "manifest.json").exists()


@pytest.mark.parametrize("kind", sorted(k for k, s in READERS.items() if s.option("tz")))
def test_a_bad_zone_is_a_clear_error_in_cli_terms_for_every_reader(tmp_path, kind):
    """In a fresh process, as an operator would run it: exit 2, one line, no traceback."""
    f = tmp_path / "x"
    f.write_text("anything\n")
    argv = ["ingest", kind, str(f), "--into", str(tmp_path / "ds"), "--tz", "Mars/Olympus"]
    if READERS[kind].option("cluster") is not None:
        argv += ["--cluster", "c"]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    r = subprocess.run([sys.executable, "-m", "reliability.cli", *argv], capture_output=True,
                       text=True, env=env, timeout=60)  # fmt: skip
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert r.stderr.strip() == (
        "error: --tz Mars/Olympus is not a time zone: give an IANA name such as UTC or America/New_York"
    )


def test_a_changed_option_names_the_flags_and_the_way_out(tmp_path, capsys):
    psv = tmp_path / "a.psv"
    psv.write_text(f"{HEADER}\n{ROW}\n")
    into = str(tmp_path / "ds")
    assert _run(capsys, "ingest", "slurm", str(psv), "--into", into, "--tz", "UTC")[0] == 0
    code, _, err = _run(capsys, "ingest", "slurm", str(psv), "--into", into, "--tz", "Europe/Paris")
    assert code == 2
    assert "--tz UTC then, --tz Europe/Paris now. Pass --replace to re-read it" in err
    code, out, _ = _run(
        capsys, "ingest", "slurm", str(psv), "--into", into, "--tz", "Europe/Paris", "--replace"
    )
    assert code == 0
    assert "replaced: read 1" in out
    assert Dataset(into).jobs["end_time"].to_list() == [
        pl.Series(["2024-12-31T23:01:00+00:00"]).str.to_datetime(time_zone="UTC").item()
    ]  # 00:01 in Paris (CET, UTC+1) is 23:01 UTC the day before


def test_spelling_rules():
    """Hints are spelled by structure: the CLI's flags, a pipeline's input keys; plain text is
    never rewritten (no pattern matching)."""
    from reliability.cli import _cli_terms, _parser

    args = _parser().parse_args(["ingest", "slurm", "x", "--into", "ds"])
    tz_hint = Hinted("pass the zone ", Hint("tz"), " (e.g. ", Hint("tz", "UTC", action=False), ")")
    assert _cli_terms(tz_hint, args) == "pass the zone pass --tz (e.g. --tz UTC)"
    boot = Hinted(Hint("boot_time", "2025-01-01T00:00:00", action=False), " needs")
    assert str(boot) == "boot_time='2025-01-01T00:00:00' needs"
    assert _cli_terms(boot, args) == "--boot-time 2025-01-01T00:00:00 needs"
    fields = Hinted(Hint("fields", Placeholder("[...]")), " in order")
    assert str(fields) == "pass fields=[...] in order"
    assert _cli_terms(fields, args) == "pass --fields [...] in order"
    # a value with a space is quoted for the shell; a switch takes no value
    assert _cli_terms(Hinted(Hint("cluster", "my c", action=False)), args) == "--cluster 'my c'"
    assert _cli_terms(Hinted(Hint("replace", True, action=False)), args) == "--replace"
    # plain text is shown as it is, even text that looks like an option
    assert _cli_terms("NodeName=n1 Reason=x tz=1", args) == "NodeName=n1 Reason=x tz=1"
    # an option this command has no flag for keeps the library's spelling
    assert _cli_terms(Hinted(Hint("min_gpus", 4)), args) == "pass min_gpus=4"
    assert pipeline_terms(
        Hinted("sacct prints local times without a zone: ", Hint("tz"), " (e.g. 'UTC')"), 2
    ) == ("sacct prints local times without a zone: set inputs[2].tz (e.g. 'UTC')")
    assert (
        pipeline_terms(Hinted(Hint("year", 3000, action=False), ": expected a year"), 0)
        == "inputs[0].options.year = 3000: expected a year"
    )
    assert pipeline_terms(Hinted(Hint("tz", "UTC", action=False)), 1) == 'inputs[1].tz = "UTC"'
    # the store's switches have no pipeline key; a caller's own key wins
    assert pipeline_terms(Hinted(Hint("replace", True, action=False)), 0) == "replace=True"
    assert pipeline_terms(Hinted(Hint("year")), 0, keys={"year": "[x].y"}) == "set [x].y"
    assert pipeline_terms("year=3000 stays", 0) == "year=3000 stays"


def test_info_shows_the_quarantine_and_inputs_by_relative_path(tmp_path, capsys, shared):
    run1 = shared / "slurm-real-run1"
    into = tmp_path / "work" / "ds"
    for snap in ("inflight_snapshot", "final_snapshot"):
        dest = tmp_path / "work" / "exports" / snap
        dest.mkdir(parents=True)
        text = (run1 / snap / "sacct_broad_duplicates.psv").read_text(encoding="utf-8")
        (dest / "sacct.psv").write_text(text + "999|bad|EXPLODED|0:0\n", encoding="utf-8")
        assert (
            main(["ingest", "slurm", str(dest / "sacct.psv"), "--into", str(into), "--tz", "UTC"])
            == 0
        )
    capsys.readouterr()
    code, out, _ = _run(capsys, "info", str(into))
    assert code == 0
    assert "exports/inflight_snapshot/sacct.psv" in out
    assert "exports/final_snapshot/sacct.psv" in out
    q = Dataset(into).quarantine
    assert f"quarantine: {q.height} row(s), by reason" in out
    # each reason with its count, and its first rows (file:line: raw)
    s = Dataset(into).summary()
    for reason, n, _ in s.quarantine_reasons.iter_rows():
        assert f"{n:>8,}  {reason}" in out
    first = q.sort("source_file", "line_no").row(0, named=True)
    assert f"{first['source_file']}:{first['line_no']}: {first['raw'][:40]}" in out


def test_dash_reads_standard_input(tmp_path, run1):
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    data = (run1 / "sacctmgr_event.psv").read_bytes()
    cmd = [
        sys.executable,
        "-m",
        "reliability.cli",
        "ingest",
        "events",
        "-",
        "--into",
        str(tmp_path / "ds"),
        "--tz",
        "UTC",
    ]
    r = subprocess.run(cmd, input=data, capture_output=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().startswith("<stdin>: read ")
    r2 = subprocess.run(cmd, input=data, capture_output=True, env=env, timeout=60)
    assert b"already ingested" in r2.stdout
    [entry] = Dataset(tmp_path / "ds").inputs
    assert entry["name"] == "<stdin>"
    assert entry["size"] == len(data)


def test_pipeline_errors_name_the_keys(tmp_path):
    (tmp_path / "a.psv").write_text(f"{HEADER}\n{ROW}\n")

    def pipe(inputs: str) -> Path:
        p = tmp_path / "p.toml"
        p.write_text(
            f'[pipeline]\nname = "t"\n[[inputs]]\nkind = "files"\nreader = "slurm"\npaths = ["a.psv"]\n{inputs}\n'
        )
        return p

    with pytest.raises(
        PipelineError,
        match=r'inputs\[0\] \(slurm files\): inputs\[0\].tz = "Mars/Olympus" is not a time zone',
    ):
        load_pipeline(pipe('tz = "Mars/Olympus"'))
    with pytest.raises(
        PipelineError, match=r"inputs\[0\].options.year does not apply to 'slurm' inputs"
    ):
        load_pipeline(pipe('tz = "UTC"\noptions = { year = 2024 }'))
    # a misspelled option, which no reader knows, by its key as well
    with pytest.raises(PipelineError, match=r"inputs\[0\].options.yaer does not apply") as err:
        load_pipeline(pipe('tz = "UTC"\noptions = { yaer = 2024 }'))
    assert "yaer=" not in str(err.value)
    # an input's own keys and the store's switches are not reader options (a user's TOML; the
    # input's tz in its options table once reached Dataset.ingest twice: a TypeError)
    for key, value in (
        ("tz", '"UTC"'),
        ("cluster", '"c"'),
        ("observed_at", "2025-01-01T00:00:00Z"),
    ):
        with pytest.raises(
            PipelineError, match=rf"inputs\[0\].options.{key}: set it as inputs\[0\].{key}$"
        ):
            load_pipeline(pipe(f"options = {{ {key} = {value} }}"))
    for key in ("strict", "replace", "wait_s"):
        with pytest.raises(
            PipelineError, match=rf"inputs\[0\].options.{key}: not an option of a pipeline input"
        ):
            load_pipeline(pipe(f'tz = "UTC"\noptions = {{ {key} = true }}'))
    # one file given to two inputs (two readers): refused up front, naming both inputs
    p = tmp_path / "two.toml"
    p.write_text(
        '[pipeline]\nname = "t"\n[[inputs]]\nkind = "files"\nreader = "slurm"\npaths = ["a.psv"]\n'
        'tz = "UTC"\n[[inputs]]\nkind = "files"\nreader = "events"\npaths = ["*.psv"]\ntz = "UTC"\n'
    )
    with pytest.raises(
        PipelineError,
        match=r"inputs\[1\].paths: .*a.psv is also a file of inputs\[0\] \(slurm files\)",
    ):
        load_pipeline(p)
    # a reader option beside the input's keys: where it goes
    with pytest.raises(
        PipelineError, match=r"inputs\[0\].year: unknown key .*inputs\[0\].options.year\)"
    ):
        load_pipeline(pipe('tz = "UTC"\nyear = 2025'))
    # an error found while reading (no zone given): the key to set
    from reliability.pipeline.steps.data import _ingest

    spec = load_pipeline(pipe("")).inputs[0]
    with pytest.raises(PipelineError, match=r"set inputs\[0\].tz") as err:
        _ingest([spec], tmp_path / "work", "cluster")
    assert "tz=" not in str(err.value)


def test_pipeline_globs_work_in_directory_components(tmp_path):
    for sub in ("a", "b", "a/deep"):
        (tmp_path / "exports" / sub).mkdir(parents=True)
        synthetic_sacct(tmp_path / "exports" / sub / "sacct.psv", 5, seed=1, n_nodes=2)
    (tmp_path / "pipes").mkdir()

    def paths(glob: str) -> list[str]:
        p = tmp_path / "pipes" / "p.toml"
        p.write_text(
            f'[[inputs]]\nkind = "files"\nreader = "slurm"\npaths = ["{glob}"]\ntz = "UTC"\n'
        )
        return [str(x.relative_to(tmp_path)) for x in load_pipeline(p).inputs[0].paths]

    assert paths("../exports/*/sacct.psv") == ["exports/a/sacct.psv", "exports/b/sacct.psv"]
    assert paths("../exports/**/sacct.psv") == [
        "exports/a/deep/sacct.psv",
        "exports/a/sacct.psv",
        "exports/b/sacct.psv",
    ]
    assert paths(f"{tmp_path}/exports/*/deep/*.psv") == ["exports/a/deep/sacct.psv"]
    with pytest.raises(
        PipelineError, match=r"inputs\[0\].paths: no file matches '../exports/\*/none.psv'"
    ):
        paths("../exports/*/none.psv")


def test_verify_and_repair_exit_codes(tmp_path, capsys):
    synthetic_sacct(tmp_path / "s.psv", 20, seed=1, n_nodes=4)
    into = tmp_path / "ds"
    Dataset(into).ingest("slurm", tmp_path / "s.psv", tz="UTC")
    assert _run(capsys, "verify", str(into))[0] == 0
    part = next((into / "jobs").glob("part-*.parquet"))
    part.write_bytes(part.read_bytes()[:-10])
    code, out, _ = _run(capsys, "verify", str(into))
    assert code == 1
    assert f"jobs/{part.name}" in out
    code, _, err = _run(capsys, "info", str(into))
    assert code == 2
    assert f"{part.name}" in err
    assert "reliability verify" in err
    code, out, _ = _run(capsys, "repair", str(into))
    assert code == 0
    assert "1 input(s) dropped" in out
    assert "reliability ingest slurm" in out
    assert _run(capsys, "verify", str(into))[0] == 0
    assert _run(capsys, "verify", str(tmp_path / "nowhere"))[0] == 2


def test_report_csv_cells_cannot_run_as_spreadsheet_formulas(tmp_path, monkeypatch):
    """OWASP CSV injection: a text cell that starts with = + - @ TAB or CR gets a leading '."""
    import reliability.report as report
    from reliability.report.model import Report, Section, Table

    hostile = [
        '=HYPERLINK("http://x")',
        "+1+1",
        "-2+3",
        "@SUM(A1)",
        "\tcmd",
        "\rcmd",
        "fine",
        "a=b",
        "-",  # a placeholder, no formula: left as it is
        "-\ncmd",
    ]
    frame = pl.DataFrame({"name": hostile, "state": pl.Series(["=X"] * 10).cast(pl.Enum(["=X"])),
                          "n": [-1, 2, 3, 4, 5, 6, 7, 8, 9, 10]})  # fmt: skip
    fake = Report("t", "s", [], [], [Section("s", [Table("hostile", frame, "c")])])
    monkeypatch.setattr(report, "build_report", lambda result: fake)
    report.write_report(SimpleNamespace(config=SimpleNamespace(formats=())), tmp_path)
    with open(tmp_path / "data" / "hostile.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    for row, raw in zip(rows, hostile, strict=True):
        guard = raw[:1] in ("=", "+", "-", "@", "\t", "\r") and raw != "-"
        expect = "'" + raw if guard else raw
        assert row["name"] == expect
        assert row["state"] == "'=X"
    assert [int(r["n"]) for r in rows] == [-1, 2, 3, 4, 5, 6, 7, 8, 9, 10]  # numbers are numbers


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--gpus", "0", "--rate", "6.5e-3", "--target-ettr", "0.9"], "--gpus"),
        (["--gpus", "8", "--rate", "0", "--target-ettr", "0.9"], "--rate"),
        (["--gpus", "8", "--rate", "nan", "--target-ettr", "0.9"], "--rate"),
        (["--gpus", "8", "--rate", "6.5e-3", "--target-ettr", "1.5"], "--target-ettr"),
        (["--gpus", "8", "--rate", "6.5e-3", "--target-ettr", "0.9", "--restart-min", "-1"],
         "--restart-min"),
        (["--gpus", "8", "--rate", "6.5e-3", "--target-ettr", "0.9", "--gpus-per-node", "0"],
         "--gpus-per-node"),
    ],
)  # fmt: skip
def test_plan_refuses_a_bad_flag_by_its_name(capsys, argv, flag):
    code, _out, err = _run(capsys, "plan", *argv)
    assert code == 2
    assert err.startswith(f"error: {flag}: expected"), err
    for python_name in ("n_gpus", "target_ettr", "rate_per_node_day"):
        assert python_name not in err


def test_plan_checks_the_strategy_flags_before_printing(capsys):
    """A refused --compare-strategies run prints no plan first (exit 2, nothing on stdout)."""
    base = [
        "plan",
        "--gpus",
        "1024",
        "--rate",
        "1e-3",
        "--target-ettr",
        "0.9",
        "--compare-strategies",
    ]
    code, out, err = _run(capsys, *base)
    assert (code, out) == (2, "")
    assert err.startswith("error: --compare-strategies: needs --restart-min")
    code, out, err = _run(capsys, *base, "--restart-min", "5", "--spares", "-1")
    assert (code, out) == (2, "")
    assert err.startswith("error: --spares: expected")


@pytest.mark.parametrize("command", ["analyze", "compare"])
def test_min_gpus_must_be_a_count(tmp_path, capsys, command):
    """``--min-gpus -3`` once ran and printed "r_f (jobs >= -3 GPUs)"."""
    with pytest.raises(SystemExit) as exit_:
        main([command, str(tmp_path), "--min-gpus", "-3"])
    assert exit_.value.code == 2
    assert "argument --min-gpus: expected an integer >= 0, got -3" in capsys.readouterr().err


def test_plan_warns_when_the_rate_looks_per_1000_node_days(capsys):
    """--rate is per node-day; 6.5 (RSC-1's rate as the paper prints it) means 6,500 per 1000."""
    code, out, err = _run(capsys, "plan", "--gpus", "1024", "--rate", "6.5", "--target-ettr", "0.9")
    assert code == 0
    assert "6,500 per 1000 node-days" in err
    assert "pass --rate 0.0065" in err
    code, out, err = _run(
        capsys, "plan", "--gpus", "1024", "--rate", "0.0065", "--target-ettr", "0.9"
    )
    assert code == 0
    assert err == ""
    assert "at 6.5 failures per 1000 node-days" in out


def test_a_closed_pipe_ends_the_command_quietly():
    """`reliability availability ... | head -1`: the reader goes away; no "error: Broken pipe"."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody reads: the first write fails with EPIPE
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "reliability", "availability", "--mode", "reconfigurable",
             "--host-availability", "0.99"],
            stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert proc.returncode == 0
    assert proc.stderr == ""


def test_a_failed_first_ingest_leaves_no_folder(tmp_path, capsys):
    """The refused file leaves no empty --into folder (`info` would call it a damaged
    Dataset); a Dataset that existed stays as it was."""
    bad = tmp_path / "bad.csv"
    bad.write_text("foo,bar\n1,2\n", encoding="utf-8")
    into = tmp_path / "new"
    code, _out, err = _run(capsys, "ingest", "slurm", str(bad), "--into", str(into), "--tz", "UTC")
    assert code == 2
    assert "no sacct header" in err
    assert not into.exists()
    good = tmp_path / "good.psv"
    good.write_text(f"{HEADER}\n{ROW}\n", encoding="utf-8")
    assert _run(capsys, "ingest", "slurm", str(good), "--into", str(into), "--tz", "UTC")[0] == 0
    before = sorted(p.name for p in into.rglob("*"))
    assert _run(capsys, "ingest", "slurm", str(bad), "--into", str(into), "--tz", "UTC")[0] == 2
    assert sorted(p.name for p in into.rglob("*")) == before


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["cluster", "--preset", "small", "--days", "inf"], "--days: expected a run length"),
        (["cluster", "--preset", "small", "--days", "nan"], "--days: expected a run length"),
        (["cluster", "--preset", "small", "--days", "-5"], "--days: expected a run length"),
        (["cluster", "--preset", "small", "--seed", "-3"], "--seed: expected an integer >= 0"),
        (["pod", "--days", "-1"], "--days: expected a run length"),
        (
            ["cluster", "--preset", "smal"],
            "unknown cluster preset 'smal'; bundled: " + ", ".join(BUNDLED_CLUSTER),
        ),
        (["cluster", "--preset", "missing.toml"], "missing.toml: no such preset file"),
    ],
)
def test_simulate_refuses_bad_flags_by_name(tmp_path, capsys, argv, message):
    code, _out, err = _run(capsys, "simulate", *argv, "--out", str(tmp_path / "out"))
    assert code == 2
    assert message in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[cluster]\nn_nodes = 0\n", "[cluster]: n_nodes must be an integer >= 1, got 0"),
        ("[cluster]\ngpus_per_node = 0\n", "[cluster]: gpus_per_node must be an integer >= 1"),
        ("[cluster]\ndays = -1\n", "[cluster]: days must be a number > 0"),
        ("[failures]\nlemon_fraction = 1.5\n", "[failures]: lemon_fraction must be in [0, 1)"),
    ],
)
def test_a_bad_preset_value_names_the_file_and_key(tmp_path, capsys, toml, message):
    preset = tmp_path / "mine.toml"
    preset.write_text(toml, encoding="utf-8")
    code, _out, err = _run(capsys, "simulate", "cluster", "--preset", str(preset), "--out",
                           str(tmp_path / "out"))  # fmt: skip
    assert code == 2
    assert f"{preset} {message}" in err


def test_availability_refuses_a_mode_the_pod_lacks_before_printing(capsys):
    """TPUv3 has fixed wiring: --mode reconfigurable is refused, with no table header printed
    above the error (the output contradicted itself)."""
    code, out, err = _run(capsys, "availability", "--mode", "reconfigurable", "--pod", "tpuv3",
                          "--host-availability", "0.99")  # fmt: skip
    assert code == 2
    assert out == ""
    assert "--pod tpuv3: fixed wiring" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "pass --ocs-availability below 1 (e.g. 0.9995) to model OCS faults"),
        (["--ocs-availability", "1"], "pass --ocs-availability below 1 (e.g. 0.9995)"),
        (["--mode", "static", "--pod", "tpuv3", "--ocs-availability", "0.99"],
         "--mode static has no OCS"),
    ],
)  # fmt: skip
def test_availability_refuses_no_ft_routing_where_it_changes_nothing(capsys, extra, message):
    """Without an OCS that can be down (no --ocs-availability, or static wiring), routing
    around one changes nothing: --no-ft-routing printed the same table as without it, as if
    it had been modelled. With --ocs-availability it lowers large jobs' availability by the
    closed form's factor o^48 (Zu et al., NSDI '24: 48 OCSes join the cubes)."""
    code, out, err = _run(capsys, "availability", "--host-availability", "0.999",
                          "--no-ft-routing", *extra)  # fmt: skip
    assert code == 2
    assert out == ""
    assert (
        f"--no-ft-routing: fault-tolerant routing only matters when an OCS can be down; {message}"
        in err
    )
    base = ["availability", "--host-availability", "0.999", "--ocs-availability", "0.999"]
    code, ft_out, _ = _run(capsys, *base)
    code2, no_ft_out, _ = _run(capsys, *base, "--no-ft-routing")
    assert code == code2 == 0
    ft_rows = {ln.split()[0]: float(ln.split()[1].rstrip("%")) for ln in ft_out.splitlines()[2:]}
    no_rows = {ln.split()[0]: float(ln.split()[1].rstrip("%")) for ln in no_ft_out.splitlines()[2:]}
    # (both printed to 0.01 points)
    assert no_rows["4096"] == pytest.approx(ft_rows["4096"] * 0.999**48, abs=0.01)


def test_an_os_error_names_the_flag_and_the_reason(tmp_path, capsys):
    """An output folder that cannot be made printed Python's "[Errno 20] Not a directory:
    '...'"; it names the flag and the path given, then the reason, as other CLI errors do."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n", encoding="utf-8")
    out = blocker / "sim"
    code, _, err = _run(capsys, "simulate", "cluster", "--preset", "small", "--days", "1",
                        "--out", str(out))  # fmt: skip
    assert code == 2
    assert "[Errno" not in err
    assert err.startswith(f"error: --out {out}")
    assert err.rstrip().endswith(": Not a directory")


def test_an_os_error_blames_a_path_argument_not_a_name(tmp_path, capsys, monkeypatch):
    """`--preset small --out small/sim` with a file named `small` here: the path given to
    --out is at fault, not the preset named `small` (every argument was tried as a path)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "small").write_text("a file\n", encoding="utf-8")
    code, _, err = _run(capsys, "simulate", "cluster", "--preset", "small", "--days", "1",
                        "--out", "small/sim")  # fmt: skip
    assert code == 2
    assert err.startswith("error: --out small/sim")
    assert "--preset" not in err


@pytest.mark.parametrize("command", ["analyze", "compare"])
@pytest.mark.parametrize(
    ("flag", "value"), [("--before-min", "inf"), ("--after-min", "nan"), ("--before-min", "-5")]
)
def test_attribution_window_is_refused_by_its_flag(tmp_path, capsys, command, flag, value):
    """A window of inf / nan / negative minutes: the flag named, no traceback (was an
    OverflowError, or Python's argument names)."""
    from reliability import Dataset

    Dataset(tmp_path / "ds")
    assert main([command, str(tmp_path / "ds"), flag, value]) == 2
    err = capsys.readouterr().err
    assert f"{flag}: expected a number of minutes >= 0" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "argv",
    [["analyze"], ["compare"], ["signals"], ["lemon", "score"], ["lemon", "score", "--model", "bundled"]],
)  # fmt: skip
def test_commands_on_jobs_refuse_a_dataset_without_jobs(tmp_path, capsys, shared, argv):
    """LANL's node failure records hold no job attempts: the job commands say so instead of a
    page of "not estimable" (or, with a detector, "less than one 56-day window" on 10 years)."""
    lanl = shared / "lanl-failure-1996-2005" / "LA-UR-05-7318-failure-data-1996-2005.csv"
    ds = tmp_path / "ds"
    assert _run(capsys, "ingest", "lanl", str(lanl), "--into", str(ds))[0] == 0
    code, _out, err = _run(capsys, *argv[:2], str(ds), *argv[2:])
    assert code == 2
    assert "the Dataset holds no job attempts (its inputs: lanl)" in err
    assert "needs job accounting" in err


def test_node_features_without_attempts_is_not_short_history():
    """No attempts is its own refusal, not the short-history one the lemon report words as
    "the data hold N, less than one window"."""
    from datetime import UTC, datetime

    from reliability.models.nodes import ShortHistoryError, node_features
    from reliability.schema import TABLES

    t = datetime(2025, 1, 1, tzinfo=UTC)
    frames = {name: TABLES[name].empty() for name in ("jobs", "health_events", "node_states")}
    frames["health_events"] = pl.DataFrame(
        {"cluster": ["c"] * 2, "node": ["n1"] * 2, "time": [t, t.replace(year=2026)]}
    ).join(frames["health_events"].drop("cluster", "node", "time"), how="cross")
    with pytest.raises(ValueError, match="no job attempts") as err:
        node_features(frames, observation_end=t.replace(year=2026))
    assert not isinstance(err.value, ShortHistoryError)
