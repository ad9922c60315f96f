"""read_sacct on real Slurm 22.05.8 output (../shared/data/slurm-real-run1), checked against
independent renderings of the same database: the run's `sacct --json` export, a plain Python
count of the records in each file, and the run's manifest (what each job id was meant to do).

Run 1's job ids differ from the README's (written for run 2): in run 1 the resized job is 120
(`resize_shrink` in manifest.tsv), the prolog failure 121, the admin requeues 16 and 17.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from datetime import UTC, date, datetime

import polars as pl
import pytest

from reliability.errors import IngestError
from reliability.ingest import read_sacct
from reliability.ingest.sacct.fields import SACCT_EXPORT_COMMAND

#: every complete `sacct --parsable2` export of run 1 (all fields the reader needs)
PARSABLE2 = [
    "sacct_broad.psv",
    "sacct_broad_allocations.psv",
    "sacct_broad_allocations_duplicates.psv",
    "sacct_broad_duplicates.psv",
    "sacct_broad_duplicates_by_jobid.psv",
    "sacct_broad_duplicates_noconvert.psv",
    "sacct_broad_duplicates_epoch.psv",
    "sacct_broad_duplicates_TZ_America_New_York.psv",
]
SNAPSHOTS = ["final_snapshot", "inflight_snapshot"]
_JOBID = re.compile(r"\d+(_(\d+|\[[^\]|]*\]))?(\+\d+)?(\.[\w-]+)?")


def _zone(name: str) -> str | None:
    if "epoch" in name:
        return None
    return "America/New_York" if "New_York" in name else "UTC"


def _count_records(path) -> int:
    """Records in an export by a plain Python rule: lines after the header whose first field
    is a job id (continuation lines of a name with a newline start with the name's text)."""
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")[1:]
    return sum(1 for line in lines if _JOBID.fullmatch(line.split("|", 1)[0]))


def _json_jobs(path):
    data = json.loads(gzip.decompress(path.read_bytes()))
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
                    "submit": datetime.fromtimestamp(j["time"]["submission"], UTC),
                    "steps": len(j["steps"])})  # fmt: skip
    return out


@pytest.mark.parametrize("name", PARSABLE2)
@pytest.mark.parametrize("snapshot", SNAPSHOTS)
def test_every_complete_export_reads_without_quarantine(shared, snapshot, name):
    """Real, clean Slurm output (resized job, requeues, names with '|' and newlines) keeps
    every record: the count made by a plain Python rule, nothing quarantined (what --strict
    checks)."""
    path = shared / "slurm-real-run1" / snapshot / name
    r = read_sacct(path, tz=_zone(name))
    assert r.rows_read == _count_records(path)
    assert r.rows_quarantined == 0, r.quarantine.get_column("reason").to_list()
    assert r.rows_kept == r.frames["jobs"].height + r.frames["job_steps"].height


@pytest.mark.parametrize("snapshot", SNAPSHOTS)
def test_strict_ingest_of_every_complete_export(shared, tmp_path, snapshot):
    """`--strict` (any quarantined row fails the ingest) passes on every complete export."""
    from reliability import Dataset

    folder = shared / "slurm-real-run1" / snapshot
    ds = Dataset(tmp_path / "ds")
    for name in PARSABLE2:
        ds.ingest("slurm", [folder / name], tz=_zone(name), strict=True)
    ds.ingest("slurm", [folder / "sacct.json.gz"], strict=True)
    assert ds.jobs.height > 100


def test_matches_json_export(run1):
    """Records, states, job ids, submit and start times and step counts agree with
    `sacct --json`, record for record (the resize segment's start is the resize time)."""
    expected = _json_jobs(run1 / "sacct.json.gz")
    r = read_sacct(run1 / "sacct_broad_duplicates.psv", tz="UTC")
    jobs = r.frames["jobs"]
    assert r.rows_read == len(expected) + sum(e["steps"] for e in expected)
    assert jobs.height == len(expected)
    assert r.frames["job_steps"].height == sum(e["steps"] for e in expected)
    got_states = Counter(jobs.get_column("state").cast(pl.String).to_list())
    assert got_states == Counter(e["state"] for e in expected)
    # a resized job's later record starts (as a segment) when it was resubmitted
    want = {(e["job_id"], max(e["start"], e["submit"]) if e["start"] else None) for e in expected}
    assert set(jobs.select("job_id", "start_time").iter_rows()) == want


def test_resized_job_is_two_segments(run1):
    """Job 120 (manifest: `resize_shrink`, 3 nodes shrunk to 1 with scontrol update NumNodes=1)
    is a RESIZING segment on its 3 nodes, then the next segment on 1 node from the resize."""
    r = read_sacct(run1 / "sacct_broad_duplicates.psv", tz="UTC")
    segs = r.frames["jobs"].filter(pl.col("job_id") == "120").sort("attempt").to_dicts()
    assert [s["state"] for s in segs] == ["RESIZING", "COMPLETED"]
    assert [s["nodes"] for s in segs] == [["fat01", "node01", "node02"], ["fat01"]]
    assert [s["n_nodes"] for s in segs] == [3, 1]
    # the raw records: RESIZING 01:24:43-01:24:46; then Submit 01:24:46, Start 01:24:43
    resize = datetime(2026, 11, 30, 1, 24, 46, tzinfo=UTC)
    assert segs[0]["end_time"] == resize
    assert segs[1]["submit_time"] == segs[1]["start_time"] == resize
    assert segs[1]["end_time"] == datetime(2026, 11, 30, 1, 25, 3, tzinfo=UTC)
    assert any(n.startswith("job 120: resized") for n in r.notes)
    steps = r.frames["job_steps"].filter(pl.col("job_id") == "120")
    assert steps.filter(pl.col("state") == "RESIZING").height == 2  # .batch and .extern


@pytest.mark.parametrize("snapshot", SNAPSHOTS)
def test_export_without_duplicates_is_detected(shared, snapshot):
    """Without --duplicates, requeued jobs show only their last attempt: the notes say so and
    give the complete command; exports with --duplicates get no such note."""
    folder = shared / "slurm-real-run1" / snapshot
    with_d = read_sacct(folder / "sacct_broad_duplicates.psv", tz="UTC").frames["jobs"]
    # jobs requeued in this run: the job ids that repeat in the --duplicates export (120 is
    # the resize, not a requeue)
    requeued = set(
        with_d.filter(pl.col("job_id").is_duplicated() & (pl.col("job_id") != "120"))
        .get_column("job_id")
        .to_list()
    )
    assert {"2", "3", "5", "16", "17", "42", "43", "44", "121"} <= requeued
    for name, detect in [
        ("sacct_broad.psv", True),
        ("sacct_broad_allocations.psv", True),
        ("sacct_broad_duplicates.psv", False),
        ("sacct_broad_allocations_duplicates.psv", False),
    ]:
        notes = [n for n in read_sacct(folder / name, tz="UTC").notes if "--duplicates" in n]
        assert bool(notes) is detect, name
        if detect:
            (note,) = notes
            assert SACCT_EXPORT_COMMAND in note
            named = set(re.search(r"\(e\.g\. ([^)]*)\)", note).group(1).split(", "))
            assert named <= requeued


def test_hostile_names_and_repairs(run1):
    jobs = read_sacct(run1 / "sacct_broad_duplicates.psv", tz="UTC").frames["jobs"]
    names = dict(jobs.filter(pl.col("attempt") == 0).select("job_id", "name").iter_rows())
    assert names["56"] == "pipe|in|name"  # '|' inside the name, also inside SubmitLine
    assert names["57"] == "<script>alert(`x`)</script>"  # Slurm stores " as `
    assert names["60"] == "new\nline"  # record split over two physical lines, rejoined
    assert names["66"] == "commented"  # the '|' was in the comment, not the name
    assert names["115"] == "long_running"  # '|' in AdminComment


def test_states_exit_codes_attempts(run1):
    jobs = read_sacct(run1 / "sacct_broad_duplicates.psv", tz="UTC").frames["jobs"]
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


def test_gpu_counts_from_tres_and_cpu_only_jobs(run1):
    """n_accelerators is the gres/gpu count of AllocTRES (ReqTRES for jobs that never got an
    allocation), and 0, never 1, for CPU-only jobs: checked against a Python parse of the
    raw fields."""
    path = run1 / "sacct_broad_duplicates.psv"
    header, *lines = path.read_text().split("\n")
    names = header.split("|")
    want: dict[str, int] = {}
    for line in lines:
        parts = line.split("|")
        if len(parts) != len(names) or "." in parts[0]:
            continue  # steps, and the few records split by '|' or newlines
        rec = dict(zip(names, parts, strict=True))
        tres = rec["AllocTRES"] or rec["ReqTRES"]
        m = re.search(r"(?:^|,)gres/gpu=(\d+)", tres)
        want.setdefault(rec["JobID"], int(m.group(1)) if m else 0)
    jobs = read_sacct(path, tz="UTC").frames["jobs"].filter(pl.col("attempt") == 0)
    got = dict(jobs.select("job_id", "n_accelerators").iter_rows())
    assert {j: got[j] for j in want} == want
    assert sum(v == 0 for v in want.values()) > 50  # most run-1 jobs are CPU-only
    assert sum(v > 0 for v in want.values()) >= 3


def test_time_zones_and_epoch_agree(run1):
    """The same database printed with TZ=America/New_York and as epoch seconds reads the same."""
    utc = read_sacct(run1 / "sacct_broad_duplicates.psv", tz="UTC").frames["jobs"]
    ny = read_sacct(run1 / "sacct_broad_duplicates_TZ_America_New_York.psv", tz="America/New_York")
    epoch = read_sacct(run1 / "sacct_broad_duplicates_epoch.psv")  # no tz needed
    assert utc.equals(ny.frames["jobs"])
    assert utc.drop("time_limit_s").equals(epoch.frames["jobs"].drop("time_limit_s"))
    # the wrong zone shifts every time by the offset (5 h in November)
    wrong = read_sacct(run1 / "sacct_broad_duplicates_TZ_America_New_York.psv", tz="UTC").frames[
        "jobs"
    ]
    shift = (utc.get_column("submit_time") - wrong.get_column("submit_time")).unique().to_list()
    assert [s.total_seconds() for s in shift] == [5 * 3600]


def test_naive_times_need_a_zone(run1):
    with pytest.raises(IngestError, match="tz="):
        read_sacct(run1 / "sacct_broad_duplicates.psv")


def test_unknown_zone_is_a_clear_error(run1):
    with pytest.raises(IngestError, match=r"unknown time zone 'Mars/Olympus' \(option tz=\)"):
        read_sacct(run1 / "sacct_broad_duplicates.psv", tz="Mars/Olympus")


@pytest.mark.parametrize("name", ["sacct_default_parsable.psv", "sacct_long_parsable2.psv"])
def test_exports_without_times_are_refused_clearly(run1, name):
    with pytest.raises(IngestError) as err:
        read_sacct(run1 / name, tz="UTC", cluster="testclu")
    assert err.value.field == "Submit"
    assert err.value.line == 1
    assert name in str(err.value)
    assert SACCT_EXPORT_COMMAND in str(err.value)


@pytest.mark.parametrize("name", ["sacct_default.txt", "sacct_default_duplicates.txt"])
def test_fixed_width_tables_are_refused_with_the_command(run1, name):
    with pytest.raises(IngestError) as err:
        read_sacct(run1 / name, tz="UTC")
    assert "fixed-width" in str(err.value)
    assert f"use --parsable2: {SACCT_EXPORT_COMMAND}" in str(err.value)
    assert err.value.line == 1


def test_gc3pie_noheader_parsable(shared):
    """Old Slurm (2.6-14.11) --noheader --parsable lines with trailing '|', concatenated
    samples annotated with '#' lines."""
    path = shared / "slurm-sacct-gc3pie" / "sacct_samples_gc3pie.txt"
    fields = ["JobID", "ExitCode", "State", "NCPUS", "Elapsed", "TotalCPU", "Submit", "Start", "End",
              "MaxRSS", "MaxVMSize"]  # fmt: skip
    r = read_sacct(path, fields=fields, cluster="gc3", tz="Europe/Zurich")
    lines = path.read_text().split("\n")
    records = [(i, ln) for i, ln in enumerate(lines, 1) if _JOBID.fullmatch(ln.split("|", 1)[0])]
    assert r.rows_read == len(records) == 32
    reasons = dict(r.quarantine.select("line_no", "reason").iter_rows())
    # the two relative-time lines ("4 Sep 11:18") and the job whose Submit is after Start
    assert sum("cannot read time '4 Sep 11:18'" in x for x in reasons.values()) == 2
    assert sum("is after Start" in x for x in reasons.values()) == 1
    # the samples repeat one line exactly: counted once
    seen: dict[str, int] = {}
    repeats = {}
    for i, ln in records:
        if ln in seen:
            repeats[i] = seen[ln]
        seen.setdefault(ln, i)
    assert repeats
    for i, first in repeats.items():
        assert reasons[i] == f"exact duplicate of line {first}"
    # "sacct_almost_done" and "sacct_done_ok2" are job 123 seen running and then done (same
    # Submit and Start): one attempt, the finished record (line 67) kept
    assert reasons[62].startswith("the same attempt as line 67 (same JobID, Submit and Start)")
    assert r.rows_quarantined == 3 + len(repeats) + 1
    # (the samples reuse id 123 for other jobs: this one is the one submitted 2016-03-31)
    job123 = r.frames["jobs"].filter(
        (pl.col("job_id") == "123") & (pl.col("submit_time").dt.date() == date(2016, 3, 31))
    )
    assert job123.get_column("state").cast(pl.String).to_list() == ["COMPLETED"]
    jobs = r.frames["jobs"]
    assert set(jobs.get_column("state").cast(pl.String)) >= {
        "COMPLETED",
        "CANCELLED",
        "NODE_FAIL",
        "FAILED",
        "TIMEOUT",
    }
    # the one RUNNING record (End "Unknown", read as null, not an unreadable time) is job
    # 123's snapshot before it completed: quarantined as the same attempt (asserted above)
    # step 123.0's ExitCode '-2:0' (CANCELLED; old Slurm printed an internal value there, no
    # exit status): kept with the exit code unknown, and said
    steps = r.frames["job_steps"]
    assert steps.get_column("exit_code").min() >= 0
    assert steps.filter(pl.col("step") == "0", pl.col("job_id") == "123").height >= 1
    assert any("1 record(s) with a negative ExitCode" in n for n in r.notes)
    # all the same job id 123: attempts are numbered by start time
    assert sorted(jobs.get_column("attempt").to_list()) == list(range(jobs.height))
    assert any("n_accelerators set to 0" in n for n in r.notes)
    assert any("comment line" in n for n in r.notes)


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
    a, b = j.frames["jobs"].sort(key), p.frames["jobs"].sort(key)
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
    assert any("dbv0.0.38" in n for n in j.notes)
    steps = ["job_id", "step", "start_time", "end_time", "state", "nodes"]
    assert (
        j.frames["job_steps"]
        .select(steps)
        .sort(steps[:3])
        .equals(p.frames["job_steps"].select(steps).sort(steps[:3]))
    )


def test_time_limits(run1):
    jobs = read_sacct(run1 / "sacct_broad_duplicates.psv", tz="UTC").frames["jobs"]
    limits = dict(jobs.filter(pl.col("attempt") == 0).select("job_id", "time_limit_s").iter_rows())
    assert limits["34"] == 36 * 3600  # Timelimit "1-12:00:00"
    assert limits["1"] == 300  # "00:05:00"
    # "UNLIMITED" (bigmem partition) is no limit: null, and not a quarantine reason
    unlimited = [j for j, v in limits.items() if v is None]
    assert unlimited


def test_fields_are_taken_in_any_case(shared):
    """sacct takes --format names in any case; so does fields= (GC3Pie writes them lower case)."""
    path = shared / "slurm-sacct-gc3pie" / "sacct_samples_gc3pie.txt"
    fields = ["JobID", "ExitCode", "State", "NCPUS", "Elapsed", "TotalCPU", "Submit", "Start", "End",
              "MaxRSS", "MaxVMSize"]  # fmt: skip
    canon = read_sacct(path, fields=fields, cluster="gc3", tz="Europe/Zurich")
    lower = read_sacct(path, fields=",".join(f.lower() for f in fields), cluster="gc3",
                       tz="Europe/Zurich")  # fmt: skip
    for t in ("jobs", "job_steps"):
        assert lower.frames[t].equals(canon.frames[t])
    assert lower.quarantine.equals(canon.quarantine)
