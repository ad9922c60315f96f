"""read_sacct on real Slurm 22.05.8 output (../shared/data/slurm-real-run1), checked against
the same run's `sacct --json` export, an independent rendering of the same database."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from datetime import UTC, datetime

import polars as pl
import pytest

from reliability.datasets import sample_files
from reliability.errors import IngestError
from reliability.ingest import read_sacct

PARSABLE2 = [
    "sacct_broad.psv",
    "sacct_broad_allocations.psv",
    "sacct_broad_allocations_duplicates.psv",
    "sacct_broad_duplicates.psv",
    "sacct_broad_duplicates_by_jobid.psv",
    "sacct_broad_duplicates_noconvert.psv",
    "sacct_broad_duplicates_epoch.psv",
]


def _json_jobs(run1):
    data = json.loads(gzip.decompress((run1 / "sacct.json.gz").read_bytes()))
    out = []
    for j in data["jobs"]:
        if j["array"]["task_id"] is not None:
            jid = f"{j['array']['job_id']}_{j['array']['task_id']}"
        elif j["het"]["job_offset"] is not None:
            jid = f"{j['het']['job_id']}+{j['het']['job_offset']}"
        else:
            jid = str(j["job_id"])
        start = j["time"]["start"]
        out.append({"job_id": jid, "state": j["state"]["current"], "name": j["name"],
                    "start": datetime.fromtimestamp(start, UTC) if start else None,
                    "steps": len(j["steps"])})  # fmt: skip
    return out


@pytest.mark.parametrize("name", PARSABLE2)
@pytest.mark.parametrize("snapshot", ["final_snapshot", "inflight_snapshot"])
def test_every_parsable2_export_reads(shared, snapshot, name):
    r = read_sacct(shared / "slurm-real-run1" / snapshot / name, tz="UTC")
    assert r.rows_read == r.rows_kept + r.rows_quarantined
    assert r.tables["jobs"].height > 100
    # the only record refused is the resized job's second record (Start before Submit)
    assert r.quarantine.height == 1
    assert "is after Start" in r.quarantine.item(0, "reason")
    assert r.quarantine.item(0, "raw").startswith("120|")


def test_matches_json_export(run1):
    """Records, states, job ids, start times and step counts agree with `sacct --json`."""
    expected = _json_jobs(run1)
    r = read_sacct(run1 / "sacct_broad_duplicates.psv", tz="UTC")
    jobs = r.tables["jobs"]
    # 126 allocation records + 262 steps in the JSON; one allocation record is quarantined
    assert r.rows_read == len(expected) + sum(e["steps"] for e in expected)
    assert jobs.height == len(expected) - 1
    assert r.tables["job_steps"].height == sum(e["steps"] for e in expected)
    quarantined = r.quarantine.filter(~pl.col("raw").str.contains(r"^\d+[_+\d]*\."))
    got_states = Counter(jobs.get_column("state").cast(pl.String).to_list())
    got_states["COMPLETED"] += quarantined.height  # the refused resize record is COMPLETED
    assert got_states == Counter(e["state"] for e in expected)
    got = {(j, s) for j, s in jobs.select("job_id", "start_time").iter_rows()}
    want = {(e["job_id"], e["start"]) for e in expected}
    # the refused resize record shares job id and start time with the kept one
    assert got == want


def test_hostile_names_and_repairs(run1):
    jobs = read_sacct(run1 / "sacct_broad_duplicates.psv", tz="UTC").tables["jobs"]
    names = dict(jobs.filter(pl.col("attempt") == 0).select("job_id", "name").iter_rows())
    assert names["56"] == "pipe|in|name"  # '|' inside the name, also inside SubmitLine
    assert names["57"] == "<script>alert(`x`)</script>"  # Slurm stores " as `
    assert names["60"] == "new\nline"  # record split over two physical lines, rejoined
    assert names["66"] == "commented"  # the '|' was in the comment, not the name
    assert names["115"] == "long_running"  # '|' in AdminComment


def test_states_exit_codes_attempts(run1):
    jobs = read_sacct(run1 / "sacct_broad_duplicates.psv", tz="UTC").tables["jobs"]
    by = {(j, a): row for j, a, *row in jobs.select(
        "job_id", "attempt", "state", "exit_code", "exit_signal", "nodes", "n_accelerators"
    ).iter_rows()}  # fmt: skip
    # job 2: NODE_FAIL, then the requeued attempt completes (same job id, attempt 1)
    assert by[("2", 0)][0] == "NODE_FAIL"
    assert by[("2", 1)][0] == "COMPLETED"
    assert by[("1", 0)][0] == "NODE_FAIL"
    assert ("1", 1) not in by
    # "CANCELLED by <uid>" is CANCELLED
    assert "CANCELLED" in {v[0] for v in by.values()}
    # multi-node GPU job on node[06-07] with gres/gpu=4
    assert by[("29", 0)][3] == ["node06", "node07"]
    assert by[("29", 0)][4] == 4
    # exit code 0:9 (killed by signal 9)
    assert by[("36", 0)][1:3] == [0, 9]
    # het job components keep the printed id
    assert ("45+0", 0) in by
    assert ("45+1", 0) in by


def test_time_zones_and_epoch_agree(run1):
    """The same database printed with TZ=America/New_York and as epoch seconds reads the same."""
    utc = read_sacct(run1 / "sacct_broad_duplicates.psv", tz="UTC").tables["jobs"]
    ny = read_sacct(run1 / "sacct_broad_duplicates_TZ_America_New_York.psv", tz="America/New_York")
    epoch = read_sacct(run1 / "sacct_broad_duplicates_epoch.psv")  # no tz needed
    assert utc.equals(ny.tables["jobs"])
    assert utc.drop("time_limit_s").equals(epoch.tables["jobs"].drop("time_limit_s"))
    # the wrong zone shifts every time by the offset (5 h in November)
    wrong = read_sacct(run1 / "sacct_broad_duplicates_TZ_America_New_York.psv", tz="UTC").tables[
        "jobs"
    ]
    shift = (utc.get_column("submit_time") - wrong.get_column("submit_time")).unique().to_list()
    assert [s.total_seconds() for s in shift] == [5 * 3600]


def test_naive_times_need_a_zone(run1):
    with pytest.raises(IngestError, match="tz="):
        read_sacct(run1 / "sacct_broad_duplicates.psv")


@pytest.mark.parametrize("name", ["sacct_default_parsable.psv", "sacct_long_parsable2.psv"])
def test_exports_without_times_are_refused_clearly(run1, name):
    with pytest.raises(IngestError) as err:
        read_sacct(run1 / name, tz="UTC", cluster="testclu")
    assert err.value.field == "Submit"
    assert err.value.line == 1
    assert name in str(err.value)
    assert "--format=" in str(err.value)


def test_gc3pie_noheader_parsable():
    """Old Slurm (2.6-14.11) --noheader --parsable lines with trailing '|' (the bundled copy,
    byte-identical to ../shared/data/slurm-sacct-gc3pie/sacct_samples_gc3pie.txt)."""
    fields = ["JobID", "ExitCode", "State", "NCPUS", "Elapsed", "TotalCPU", "Submit", "Start", "End",
              "MaxRSS", "MaxVMSize"]  # fmt: skip
    r = read_sacct(sample_files()["gc3pie/sacct_samples_gc3pie.txt"],
                   fields=fields, cluster="gc3", tz="Europe/Zurich")  # fmt: skip
    assert r.rows_read == 32 == r.rows_kept + r.rows_quarantined
    reasons = r.quarantine.get_column("reason").to_list()
    # the two relative-time lines ("4 Sep 11:18") and the job whose Submit is after Start
    assert sum("cannot read time '4 Sep 11:18'" in x for x in reasons) == 2
    assert sum("is after Start" in x for x in reasons) == 1
    jobs = r.tables["jobs"]
    assert set(jobs.get_column("state").cast(pl.String)) >= {
        "COMPLETED",
        "CANCELLED",
        "NODE_FAIL",
        "FAILED",
        "TIMEOUT",
        "RUNNING",
    }
    # RUNNING job: End "Unknown" -> null
    assert jobs.filter(pl.col("state") == "RUNNING").item(0, "end_time") is None
    # negative exit code on a step: -2:0
    assert -2 in r.tables["job_steps"].get_column("exit_code").to_list()
    # all the same job id 123: attempts are numbered by start time
    assert sorted(jobs.get_column("attempt").to_list()) == list(range(jobs.height))
    assert r.notes
    assert "n_accelerators set to 0" in r.notes[-1]


def test_json_export_agrees_with_parsable2(run1):
    """sacct --json of the same database gives the same jobs and steps."""
    j = read_sacct(run1 / "sacct.json.gz")  # detected by content; epoch times, no tz needed
    p = read_sacct(run1 / "sacct_broad_duplicates.psv", tz="UTC")
    assert (j.rows_read, j.rows_kept, j.rows_quarantined) == (
        p.rows_read,
        p.rows_kept,
        p.rows_quarantined,
    )
    key = ["job_id", "attempt"]
    a, b = j.tables["jobs"].sort(key), p.tables["jobs"].sort(key)
    same = ["cluster", "job_id", "attempt", "name", "user", "account", "partition", "qos", "submit_time",
            "start_time", "end_time", "state", "n_nodes", "n_accelerators", "nodes", "time_limit_s", "priority"]  # fmt: skip
    assert a.select(same).equals(b.select(same))
    # exit codes: equal where the JSON is trusted; null (unknown) where Slurm 22.05 printed 0
    both = a.select(*key, "exit_code", "exit_signal").join(
        b.select(*key, "exit_code", "exit_signal"), on=key
    )
    known = both.filter(pl.col("exit_code").is_not_null())
    assert known.filter(pl.col("exit_code") != pl.col("exit_code_right")).height == 0
    assert known.filter(pl.col("exit_signal") != pl.col("exit_signal_right")).height == 0
    assert both.filter(pl.col("exit_code").is_null() & (pl.col("exit_code_right") != 0)).height > 10
    assert "dbv0.0.38" in j.notes[0]
    steps = ["job_id", "step", "start_time", "end_time", "state", "nodes"]
    assert (
        j.tables["job_steps"]
        .select(steps)
        .sort(steps[:3])
        .equals(p.tables["job_steps"].select(steps).sort(steps[:3]))
    )


def test_time_limits(run1):
    jobs = read_sacct(run1 / "sacct_broad_duplicates.psv", tz="UTC").tables["jobs"]
    limits = dict(jobs.filter(pl.col("attempt") == 0).select("job_id", "time_limit_s").iter_rows())
    assert limits["34"] == 36 * 3600  # Timelimit "1-12:00:00"
    assert limits["1"] == 300  # "00:05:00"
    # "UNLIMITED" (bigmem partition) is no limit: null, and not a quarantine reason
    unlimited = [j for j, v in limits.items() if v is None]
    assert unlimited


def test_fixed_width_default_format_is_refused(run1):
    with pytest.raises(IngestError, match="wrong delimiter ' '"):
        read_sacct(run1 / "sacct_default.txt", tz="UTC")
