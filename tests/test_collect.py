"""`reliability collect` without a cluster: stand-in sacct / sacctmgr / scontrol scripts that
record how they were called and print fixed exports. (The same path against a real Slurm is
tests/test_collect_live.py.)"""

from __future__ import annotations

import json
import os
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from reliability import Dataset
from reliability.cli import main as cli_main
from reliability.collect import CollectError, collect_slurm, last_collected
from reliability.ingest.sacct.fields import RECOMMENDED_FORMAT, SACCTMGR_EVENTS_FORMAT

T = datetime(2021, 3, 1, 12, 0, tzinfo=UTC)
FIELDS = RECOMMENDED_FORMAT.split(",")


def _sacct_line(**values: str) -> str:
    return "|".join(values.get(f, "") for f in FIELDS)


def _epoch(t: datetime) -> str:
    return str(int(t.timestamp()))


def _export(records: list[dict]) -> str:
    lines = ["|".join(FIELDS)]
    for r in records:
        lines.append(_sacct_line(
            JobID=r["id"], JobIDRaw=r["id"], Cluster="c1", Partition="batch", Account="a",
            User="u", QOS="normal", Priority="1", State=r["state"], ExitCode=r.get("exit", "0:0"),
            Submit=_epoch(r["start"]), Start=_epoch(r["start"]), End=_epoch(r["end"]),
            Timelimit="01:00:00", NNodes="1", JobName="j", AllocTRES="cpu=1,node=1",
            ReqTRES="cpu=1,node=1", NodeList=r["node"],
        ))  # fmt: skip
    return "\n".join(lines) + "\n"


EVENTS = (
    SACCTMGR_EVENTS_FORMAT.replace(",", "|") + "\n"
    + f"c1|n1|{_epoch(T - timedelta(minutes=30))}|{_epoch(T - timedelta(minutes=20))}|DOWN|psu|root(0)\n"
)  # fmt: skip


@pytest.fixture
def fake_slurm(tmp_path: Path):
    """bin/ with sacct, sacctmgr, scontrol scripts; each appends its argv and environment
    (TZ, SLURM_TIME_FORMAT) as a JSON line to calls.jsonl and prints out/<name> (sacct
    --jobs=...: out/sacct.jobs when it exists)."""
    b, out = tmp_path / "bin", tmp_path / "out"
    b.mkdir()
    out.mkdir()
    calls = tmp_path / "calls.jsonl"
    for name in ("sacct", "sacctmgr", "scontrol"):
        script = b / name
        script.write_text(
            "#!/bin/sh\n"
            f'printf \'{{"cmd": "{name}", "tz": "%s", "fmt": "%s", "argv": "%s"}}\\n\' '
            f'"$TZ" "$SLURM_TIME_FORMAT" "$*" >> {calls}\n'
            f'if [ -f {out}/{name}.fail ]; then cat {out}/{name}.fail >&2; exit 1; fi\n'
            # sacct --jobs=...: every record of those jobs (out/sacct.jobs), else the window's
            f'case "$*" in *--jobs=*) [ -f {out}/{name}.jobs ] && exec cat {out}/{name}.jobs;; esac\n'
            f"cat {out}/{name}\n"
        )  # fmt: skip
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
    (out / "sacctmgr").write_text(EVENTS)
    (out / "scontrol").write_text(
        "RequeueExit             = 99\nRequeueExitHold         = 100,101\n"
    )
    env = {"PATH": f"{b}:{os.environ['PATH']}"}

    def calls_made() -> list[dict]:
        return (
            [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []
        )

    return out, env, calls_made


RECORDS = [
    {"id": "1", "state": "NODE_FAIL", "start": T - timedelta(minutes=40), "end": T - timedelta(minutes=30), "node": "n1"},
    {"id": "1", "state": "COMPLETED", "start": T - timedelta(minutes=10), "end": T - timedelta(minutes=5), "node": "n2"},
    {"id": "2", "state": "REQUEUED", "exit": "99:0", "start": T - timedelta(minutes=9), "end": T - timedelta(minutes=8), "node": "n2"},
]  # fmt: skip


def test_collect_runs_the_complete_export_in_utc_and_ingests_it(fake_slurm, tmp_path):
    out, env, calls = fake_slurm
    (out / "sacct").write_text(_export(RECORDS))
    r = collect_slurm(tmp_path / "ds", since="2021-03-01T10:00:00", until=T, env=env)
    sacct, sacctmgr, by_id, _scontrol = calls()
    # job 2's last record is a requeue: every record of it asked for again by id, no window
    assert by_id["argv"].split() == ["--allusers", "--duplicates", "--parsable2", "--jobs=2",
                                     f"--format={RECOMMENDED_FORMAT}"]  # fmt: skip
    # the child sees UTC and epoch times whatever the caller's environment says
    assert (sacct["tz"], sacct["fmt"], sacctmgr["tz"], sacctmgr["fmt"]) == (
        "UTC",
        "%s",
        "UTC",
        "%s",
    )
    argv = sacct["argv"].split()
    for flag in ("--allusers", "--duplicates", "--parsable2", f"--format={RECOMMENDED_FORMAT}"):
        assert flag in argv
    assert argv[argv.index("--starttime") + 1] == "2021-03-01T10:00:00"
    assert argv[argv.index("--endtime") + 1] == "2021-03-01T12:00:00"
    assert sacctmgr["argv"].split() == ["--parsable2", "show", "event", "Start=2021-03-01T10:00:00",
                                        "End=2021-03-01T12:00:00", f"Format={SACCTMGR_EVENTS_FORMAT}"]  # fmt: skip
    # raw exports beside the Dataset, byte for byte what the commands printed
    assert r.raw_dir == tmp_path / "ds" / "raw" / "20210301T120000Z"
    assert (r.raw_dir / "sacct.psv").read_text() == _export(RECORDS)
    assert json.loads((r.raw_dir / "collect.json").read_text())["until"] == T.isoformat()
    ds = Dataset(tmp_path / "ds")
    assert sorted(ds.jobs.select("job_id", pl.col("state").cast(pl.String)).rows()) == [
        ("1", "COMPLETED"), ("1", "NODE_FAIL"), ("2", "REQUEUED"),
    ]  # fmt: skip
    assert ds.node_states.select("node", pl.col("state").cast(pl.String)).rows() == [("n1", "DOWN")]
    assert ds.observation_end == T  # the window's end, not the latest record
    assert last_collected(ds) == T
    assert r.requeue_exit_codes == (99, 100, 101)
    assert "RequeueExit/RequeueExitHold codes on this cluster: 99,100,101" in str(r)


def test_auto_since_overlaps_the_last_collection_and_reruns_are_idempotent(fake_slurm, tmp_path):
    out, env, calls = fake_slurm
    (out / "sacct").write_text(_export(RECORDS[:2]))
    collect_slurm(tmp_path / "ds", since=T - timedelta(hours=3), until=T, env=env)
    (out / "sacct").write_text(_export(RECORDS))  # a record arrived late
    later = T + timedelta(hours=2)
    r = collect_slurm(tmp_path / "ds", until=later, env=env)
    assert r.since == T - timedelta(hours=1)  # last until minus the 1-h overlap
    assert "last collection ended 2021-03-01T12:00:00Z" in r.since_basis
    ds = Dataset(tmp_path / "ds")
    assert ds.jobs.height == 3  # the overlapping records count once
    assert last_collected(ds) == later
    # the same window again: same raw folder, nothing ingested twice
    again = collect_slurm(tmp_path / "ds", since=r.since, until=later, env=env)
    assert again.raw_dir == r.raw_dir
    assert {o.status for o in again.outcomes} == {"unchanged"}
    assert Dataset(tmp_path / "ds").jobs.height == 3
    # a quiet cluster: an identical export over a later window extends the observation
    quiet = collect_slurm(tmp_path / "ds", until=later + timedelta(hours=1), env=env)
    assert Dataset(tmp_path / "ds").observation_end == later + timedelta(hours=1)
    assert Dataset(tmp_path / "ds").jobs.height == 3
    assert any("window extended" in n for n in quiet.notes)
    # 4 collections of sacct, sacctmgr, scontrol; the last 3 also ask for job 2 by id
    assert len(calls()) == 4 * 3 + 3


def test_dry_run_prints_the_commands_and_runs_nothing(fake_slurm, tmp_path, capsys, monkeypatch):
    _, env, calls = fake_slurm
    monkeypatch.setenv("PATH", env["PATH"])
    code = cli_main(["collect", "slurm", "--into", str(tmp_path / "ds"), "--since", "2021-03-01",
                     "--until", "2021-03-02T00:00:00Z", "--cluster", "c1", "--dry-run"])  # fmt: skip
    assert code == 0
    text = capsys.readouterr().out
    assert "TZ=UTC SLURM_TIME_FORMAT=%s sacct --clusters=c1 --allusers --duplicates --parsable2 " \
           "--starttime 2021-03-01T00:00:00 --endtime 2021-03-02T00:00:00" in text  # fmt: skip
    assert "Clusters=c1 Format=" in text
    assert calls() == []
    assert not (tmp_path / "ds").exists()


def test_errors_are_clear(fake_slurm, tmp_path, capsys, monkeypatch):
    out, env, _ = fake_slurm
    ds = tmp_path / "ds"
    with pytest.raises(CollectError, match=r"no earlier collection .* pass --since"):
        collect_slurm(ds, env=env)
    with pytest.raises(CollectError, match="is not before --until"):
        collect_slurm(ds, since=T, until=T - timedelta(hours=1), env=env)
    with pytest.raises(CollectError, match="is in the future"):
        collect_slurm(ds, since=T, until=datetime.now(UTC) + timedelta(hours=1), env=env)
    with pytest.raises(CollectError, match="--since: 'yesterday' is not an ISO 8601 time"):
        collect_slurm(ds, since="yesterday", env=env)
    with pytest.raises(CollectError, match=r"not found.*slurm-client"):
        collect_slurm(ds, since=T - timedelta(hours=1), until=T, sacct=str(tmp_path / "no-sacct"))
    (out / "sacct.fail").write_text(
        "sacct: error: slurm_persist_conn_open_without_init: failed to open persistent connection "
        "to host:127.0.0.1:6819: Connection refused\n"
        "sacct: error: Problem talking to the database: Connection refused\n"
    )  # fmt: skip
    with pytest.raises(
        CollectError, match=r"could not reach the accounting database.*slurmdbd is running"
    ):
        collect_slurm(ds, since=T - timedelta(hours=1), until=T, env=env)
    assert not (ds / "manifest.json").exists()  # nothing half-written
    assert list((ds / "raw").iterdir()) == []
    # the CLI says it in one line, exit status 2
    monkeypatch.setenv("PATH", env["PATH"])
    assert cli_main(["collect", "slurm", "--into", str(ds), "--since", "2021-03-01T00:00:00Z",
                     "--until", "2021-03-01T01:00:00Z"]) == 2  # fmt: skip
    assert "error: sacct could not reach the accounting database" in capsys.readouterr().err


def _pending(job: str, submit: datetime, state: str = "PENDING", end: str = "Unknown") -> str:
    return _sacct_line(
        JobID=job, JobIDRaw=job, Cluster="c1", Partition="batch", Account="a", User="u",
        QOS="normal", Priority="1", State=state, ExitCode="0:0", Submit=_epoch(submit),
        Start="Unknown", End=end, Timelimit="01:00:00", NNodes="1", JobName="j",
        AllocTRES="", ReqTRES="cpu=1,node=1", NodeList="None assigned",
    )  # fmt: skip


def test_a_requeued_job_is_asked_for_by_id_and_its_waiting_run_is_open(fake_slurm, tmp_path):
    """Issue 37: a time-windowed sacct does not list the pending rerun of a job requeued in
    the window (its BeginTime is later). collect asks for it by id; the run is then open at
    the window's end, measured up to it: job 2 submitted T-9 min, ran 1 min, requeued at
    T-8 min, pending since: wall 9 min."""
    from reliability.models.recovery import job_run_ettr

    out, env, _ = fake_slurm
    (out / "sacct").write_text(_export(RECORDS))
    by_id = [r for r in RECORDS if r["id"] == "2"]
    (out / "sacct.jobs").write_text(_export(by_id) + _pending("2", T - timedelta(minutes=8)) + "\n")
    r = collect_slurm(tmp_path / "ds", since="2021-03-01T10:00:00", until=T, env=env)
    assert r.requeued_jobs == 1
    assert (r.raw_dir / "sacct_requeued.psv").is_file()
    ds = Dataset(tmp_path / "ds")
    two = ds.jobs.filter(pl.col("job_id") == "2").sort("attempt")
    assert two["state"].cast(pl.String).to_list() == ["REQUEUED", "PENDING"]
    assert ds.observation_end == T
    runs = job_run_ettr(ds).runs.filter(pl.col("job_id") == "2").row(0, named=True)
    assert runs["open"]
    assert runs["wall_h"] == pytest.approx(9 / 60)


def test_a_held_rerun_cancelled_is_seen_by_id_and_the_run_ends(fake_slurm, tmp_path):
    """The rerun was held and cancelled before it became eligible: no window lists it, the
    query by id does (CANCELLED, never started), and the run is not open."""
    from reliability.models.recovery import job_run_ettr

    out, env, _ = fake_slurm
    (out / "sacct").write_text(_export(RECORDS))
    cancel = T - timedelta(minutes=5)
    (out / "sacct.jobs").write_text(
        _export([r for r in RECORDS if r["id"] == "2"])
        + _pending("2", T - timedelta(minutes=8), "CANCELLED by 0", _epoch(cancel))
        + "\n"
    )
    collect_slurm(tmp_path / "ds", since="2021-03-01T10:00:00", until=T, env=env)
    ds = Dataset(tmp_path / "ds")
    runs = job_run_ettr(ds).runs.filter(pl.col("job_id") == "2").row(0, named=True)
    assert not runs["open"]


def test_requeue_exit_codes_not_read_is_said_with_what_it_changes(fake_slurm, tmp_path):
    out, env, _ = fake_slurm
    (out / "sacct").write_text(_export(RECORDS[:2]))
    (out / "scontrol.fail").write_text(
        "slurm_load_ctl_conf error: Unable to contact slurm controller (connect failure)\n"
    )
    r = collect_slurm(tmp_path / "ds", since="2021-03-01T10:00:00", until=T, env=env)
    assert r.requeue_exit_codes is None
    text = str(r)
    assert "RequeueExit/RequeueExitHold codes: not read" in text
    assert "Unable to contact slurm controller" in text
    assert "--requeue-exit-codes" in text


def test_collect_wait_takes_its_turn_behind_another_writer(fake_slurm, tmp_path, monkeypatch, capsys):  # fmt: skip
    """A collector started while another process writes the Dataset waits for it with --wait
    (and is refused at once without)."""
    import subprocess
    import sys
    import time

    out, env, _ = fake_slurm
    (out / "sacct").write_text(_export(RECORDS))
    ds = tmp_path / "ds"
    root = Path(__file__).resolve().parents[1]
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path\n"
         "from reliability.store.lock import DatasetLock\n"
         "with DatasetLock(Path(sys.argv[1])).held():\n"
         "    print('held', flush=True); time.sleep(float(sys.argv[2]))", str(ds), "3"],
        env={**os.environ, "PYTHONPATH": str(root)}, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    monkeypatch.setenv("PATH", env["PATH"])
    args = ["collect", "slurm", "--into", str(ds), "--since", "2021-03-01T10:00:00Z",
            "--until", "2021-03-01T12:00:00Z"]  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        assert cli_main(args) == 2
        assert f"(it is held by pid {holder.pid}" in capsys.readouterr().err
        t0 = time.monotonic()
        assert cli_main([*args, "--wait", "60"]) == 0
        assert time.monotonic() - t0 < 60
    finally:
        holder.communicate(timeout=60)
    assert holder.returncode == 0
    assert Dataset(ds).jobs.height == len(RECORDS)
