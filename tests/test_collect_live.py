"""`reliability collect` against a real Slurm (Debian's slurmctld, slurmd, slurmdbd, MariaDB,
munge), started on loopback by tests/slurm/cluster.sh under a private temp dir.

The module brings the cluster up once (about 10 s), runs a small workload with a node
failure, an admin requeue, an exit-code requeue, a preemption, a prolog failure and a crash
on a node drained with an Xid reason, collects twice (the second window overlaps the first),
and checks the Dataset against what the workload did and against sacct queried directly.
Every daemon is stopped by PID afterwards, also when a test fails. Locally the module skips
when Slurm is not installed or not root; in CI (RELIABILITY_CI=1) it must run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from conftest import require

from reliability import Dataset, attribute_failures
from reliability.cli import main as cli_main
from reliability.collect import CollectError, CollectResult, collect_slurm

HERE = Path(__file__).resolve().parent
CLUSTER_SH = HERE / "slurm" / "cluster.sh"
DAEMONS = ("slurmctld", "slurmd", "slurmdbd", "mariadbd", "munged")


@dataclass
class Cluster:
    dir: Path
    env: dict[str, str]
    nodes: list[str]
    gpu_nodes: list[str]
    name: str
    start_s: float = 0.0

    def run(self, *args: str, check: bool = True, timeout: float = 30) -> str:
        p = subprocess.run(
            args, env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )
        if check and p.returncode != 0:
            raise AssertionError(f"{' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
        return p.stdout

    def sbatch(self, *args: str, wrap: str | None = None, script: str | None = None) -> str:
        out = f"--output={self.dir}/out/%j.out"
        cmd = ["sbatch", "--parsable", out, f"--chdir={self.dir}/out", *args]
        cmd += (
            ["--wrap", wrap]
            if wrap is not None
            else [script or str(self.dir / "jobs" / "restart.sh")]
        )
        return self.run(*cmd).strip().split(";")[0]

    def records(self, job: str) -> list[tuple[str, str]]:
        """(State, ExitCode) of every allocation record of a job, straight from sacct."""
        out = self.run("sacct", "-X", "-D", "-n", "-P", "-j", job, "--format=State,ExitCode")
        rows = [line.split("|") for line in out.splitlines() if line]
        return [(state.split(" ")[0], code) for state, code in rows]  # "CANCELLED by 0"

    def queue_state(self, job: str) -> str:
        return self.run("squeue", "-h", "-j", job, "-o", "%T", check=False).strip()

    def release(self, job: str) -> None:
        """A requeued job waits ~121 s for its BeginTime: start it now."""
        wait_until(lambda: self.queue_state(job) == "PENDING", f"job {job} pending")

        def go() -> bool:
            self.run("scontrol", "update", f"JobId={job}", "StartTime=now", check=False)
            return "BeginTime" not in self.run("squeue", "-h", "-j", job, "-o", "%r", check=False)

        wait_until(go, f"job {job} released")


def wait_until(pred, what: str, timeout: float = 40.0, step: float = 0.3) -> None:
    t_end = time.monotonic() + timeout
    while time.monotonic() < t_end:
        if pred():
            return
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def _have_slurm() -> bool:
    return all(shutil.which(d) or Path("/usr/sbin", d).exists() for d in DAEMONS) and bool(
        shutil.which("sacct")
    )


@pytest.fixture(scope="module")
def cluster():
    """The running cluster; stopped by PID (tests/slurm/cluster.sh stop) however the module
    ends. RELIABILITY_KEEP_SLURM=1 keeps its folder (logs) for a post-mortem."""
    require(
        _have_slurm(),
        "Debian's Slurm/MariaDB/munge packages are not installed (.ci/install-system-packages)",
    )
    require(
        os.geteuid() == 0, "the live Slurm test needs root (slurmd launches jobs as their owner)"
    )
    d = Path(tempfile.mkdtemp(prefix="reliability-slurm-", dir="/tmp"))
    try:
        t0 = time.monotonic()
        p = subprocess.run(
            [str(CLUSTER_SH), "start", str(d)], capture_output=True, text=True, timeout=240,
            check=False, env={**os.environ, "PYTHON": sys.executable},
        )  # fmt: skip
        if p.returncode != 0:
            logs = "".join(f"\n--- {f.name}\n{f.read_text(errors='replace')[-2000:]}"
                           for f in sorted((d / "log").glob("*.log")) + sorted((d / "mysql").glob("*.err")))  # fmt: skip
            pytest.fail(f"cluster.sh start failed ({p.returncode}):\n{p.stdout}\n{p.stderr}{logs}")
        conf = dict(
            line.split("=", 1) for line in (d / "env").read_text().splitlines() if "=" in line
        )
        env = {**os.environ, "SLURM_CONF": conf["SLURM_CONF"]}
        (d / "jobs" / "restart.sh").write_text(
            "#!/bin/bash\n# first attempt: exit $FIRST_EXIT, or wait for a marker / run long; reruns finish at once\n"
            'if [ "${SLURM_RESTART_COUNT:-0}" -eq 0 ]; then\n'
            '  [ -n "${FIRST_EXIT:-}" ] && exit "$FIRST_EXIT"\n'
            '  if [ -n "${CRASH_ON:-}" ]; then while [ ! -e "$CRASH_ON" ]; do sleep 0.2; done; exit 1; fi\n'
            "  sleep 300\nfi\nsleep 1\n"
        )  # fmt: skip
        (d / "jobs" / "restart.sh").chmod(0o755)
        nodes, gpu_nodes = conf["RELTEST_NODES"].split(), conf.get("RELTEST_GPU_NODES", "").split()
        yield Cluster(d, env, nodes, gpu_nodes, conf["RELTEST_CLUSTER"], time.monotonic() - t0)
    finally:
        subprocess.run(
            [str(CLUSTER_SH), "stop", str(d)], capture_output=True, timeout=120, check=False
        )
        if os.environ.get("RELIABILITY_KEEP_SLURM") != "1":
            shutil.rmtree(d, ignore_errors=True)


@dataclass
class Scenario:
    ds: Dataset
    jobs: dict[str, str]  # role -> job id
    first: CollectResult
    second: CollectResult
    after_first: dict[str, pl.DataFrame]
    begin: datetime
    timings: dict[str, float] = field(default_factory=dict)
    db_down_error: str = ""


def _snapshot(ds: Dataset) -> dict[str, pl.DataFrame]:
    return {t: ds.table(t) for t in ("jobs", "node_states", "health_events")}


def _wait_records(c: Cluster, job: str, want: list[str]) -> None:
    seen: list = []

    def done() -> bool:
        # a requeued job soon shows a PENDING record for its next attempt: not waited for
        seen[:] = [s for s, _ in c.records(job)]
        if seen[-1:] == ["PENDING"] and want[-1:] != ["PENDING"]:
            return seen[:-1] == want
        return seen == want

    try:
        wait_until(done, f"sacct records {want} of job {job}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; sacct shows {seen}") from None


@pytest.fixture(scope="module")
def scenario(cluster: Cluster, tmp_path_factory) -> Scenario:
    c = cluster
    t0 = time.monotonic()
    begin = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=5)
    ds_dir = tmp_path_factory.mktemp("collect") / "ds"
    jobs: dict[str, str] = {}
    n1, n2, n3, n4 = c.nodes
    # --- phase 1: node failure, admin requeue, exit-code requeue, a failure, a success -----
    jobs["node_fail"] = c.sbatch("-J", "nf", "-w", n1)
    jobs["admin_requeue"] = c.sbatch("-J", "rq", "-w", n2)
    jobs["exit_requeue"] = c.sbatch("-J", "ex99", "-w", n3, "--export=ALL,FIRST_EXIT=99")
    jobs["failed"] = c.sbatch("-J", "fail3", "-w", n4, wrap="exit 3")
    jobs["completed"] = c.sbatch("-J", "ok", "-w", n4, wrap="sleep 1")
    wait_until(lambda: c.queue_state(jobs["node_fail"]) == "RUNNING" and c.queue_state(jobs["admin_requeue"]) == "RUNNING", "first jobs running")  # fmt: skip
    c.run("scontrol", "update", f"NodeName={n1}", "State=DOWN", "Reason=test: PSU failure")
    c.run("scontrol", "requeue", jobs["admin_requeue"])
    _wait_records(c, jobs["node_fail"], ["NODE_FAIL"])
    _wait_records(c, jobs["exit_requeue"], ["REQUEUED"])
    time.sleep(1)  # the DOWN interval lasts a moment
    c.run("scontrol", "update", f"NodeName={n1}", "State=RESUME")
    for role in ("node_fail", "admin_requeue", "exit_requeue"):
        c.release(jobs[role])
    _wait_records(c, jobs["node_fail"], ["NODE_FAIL", "COMPLETED"])
    _wait_records(c, jobs["admin_requeue"], ["REQUEUED", "COMPLETED"])
    _wait_records(c, jobs["exit_requeue"], ["REQUEUED", "COMPLETED"])
    _wait_records(c, jobs["failed"], ["FAILED"])
    _wait_records(c, jobs["completed"], ["COMPLETED"])
    t1 = time.monotonic()
    first = collect_slurm(ds_dir, since=begin, env={"SLURM_CONF": c.env["SLURM_CONF"]})
    after_first = _snapshot(Dataset(ds_dir))
    t2 = time.monotonic()
    # --- phase 2: preemption, prolog failure, a crash on a node drained with an Xid reason --
    gres = ["--gres=gpu:1"] if n4 in c.gpu_nodes else []
    jobs["preempted"] = c.sbatch("-J", "low", "-w", n4, *gres)
    wait_until(lambda: c.queue_state(jobs["preempted"]) == "RUNNING", "low-priority job running")
    jobs["preemptor"] = c.sbatch(
        "-J", "high", "-p", "high", "-w", n4, "--exclusive", wrap="sleep 2"
    )
    _wait_records(c, jobs["preempted"], ["PREEMPTED"])
    jobs["prolog"] = c.sbatch("-J", "pl", "-p", "plfail", "-w", n2, wrap="sleep 1")
    marker = c.dir / "out" / "crash-now"
    jobs["xid_crash"] = c.sbatch("-J", "xid", "-w", n3, f"--export=ALL,CRASH_ON={marker}")
    wait_until(lambda: c.queue_state(jobs["xid_crash"]) == "RUNNING", "xid job running")
    c.run(
        "scontrol",
        "update",
        f"NodeName={n3}",
        "State=DRAIN",
        "Reason=GPU ECC errors <xid 79> on gpu:1",
    )
    marker.touch()
    _wait_records(c, jobs["xid_crash"], ["FAILED"])
    # a held requeued job shows its REQUEUED record and a PENDING one
    _wait_records(c, jobs["prolog"], ["REQUEUED", "PENDING"])
    wait_until(
        lambda: "held" in c.run("squeue", "-h", "-j", jobs["prolog"], "-o", "%r", check=False),
        "prolog job held",
    )
    c.run("scancel", jobs["prolog"])
    c.run("scontrol", "update", f"NodeName={n2},{n3}", "State=RESUME")
    _wait_records(c, jobs["preemptor"], ["COMPLETED"])
    c.release(jobs["preempted"])
    _wait_records(c, jobs["preempted"], ["PREEMPTED", "COMPLETED"])
    _wait_records(c, jobs["prolog"], ["REQUEUED", "CANCELLED"])
    wait_until(lambda: "Prolog error" in c.run("sacctmgr", "-n", "-P", "show", "event", f"Start={begin:%Y-%m-%dT%H:%M:%S}",
                                               "Format=Reason,TimeEnd"), "prolog drain event")  # fmt: skip
    t3 = time.monotonic()
    second = collect_slurm(ds_dir, env={"SLURM_CONF": c.env["SLURM_CONF"]})  # since=auto
    t4 = time.monotonic()
    sc = Scenario(Dataset(ds_dir), jobs, first, second, after_first, begin)
    sc.timings = {"phase 1 workload": t1 - t0, "first collect": t2 - t1, "phase 2 workload": t3 - t2,
                  "second collect": t4 - t3, "cluster start": c.start_s}  # fmt: skip
    return sc


def _attempts(jobs: pl.DataFrame, job: str) -> list[tuple]:
    return jobs.filter(pl.col("job_id") == job).sort("attempt").select("state", "exit_code").rows()


def test_first_collection_holds_phase_one(scenario):
    jobs, j = scenario.after_first["jobs"], scenario.jobs
    states = lambda role: [s for s, _ in _attempts(jobs, j[role])]  # noqa: E731
    assert states("node_fail") == ["NODE_FAIL", "COMPLETED"]
    assert states("admin_requeue") == ["REQUEUED", "COMPLETED"]
    assert _attempts(jobs, j["exit_requeue"]) == [("REQUEUED", 99), ("COMPLETED", 0)]
    assert _attempts(jobs, j["failed"]) == [("FAILED", 3)]
    assert states("completed") == ["COMPLETED"]
    assert not jobs.filter(pl.col("job_id") == j["preempted"]).height  # not submitted yet
    assert scenario.first.since_basis == "--since"
    assert [o.status for o in scenario.first.outcomes] == ["ingested", "ingested"]


def test_second_collection_adds_only_the_new_records(scenario, cluster):
    """The second window starts 1 h before the first one ended (since=auto), so it re-exports
    every phase-1 record: each still counts once, and the phase-1 rows are unchanged."""
    first, second = scenario.first, scenario.second
    assert second.since == first.until - timedelta(hours=1) < first.since
    assert second.since_basis.startswith("last collection ended")
    final = scenario.ds.jobs
    before = scenario.after_first["jobs"]
    keys = ["job_id", "attempt"]
    old = final.join(before.select(keys), on=keys, how="semi").sort(keys)
    assert old.select(before.columns).equals(before.sort(keys))
    j = scenario.jobs
    new = {
        r: [s for s, _ in _attempts(final, j[r])]
        for r in ("preempted", "preemptor", "prolog", "xid_crash")
    }
    # the prolog job's held rerun, cancelled before it became eligible, is a record that no
    # sacct time window selects (Slurm's semantics): collect asks for the job by id, since its
    # last record in the window was a requeue, and so sees that the run ended
    assert new == {"preempted": ["PREEMPTED", "COMPLETED"], "preemptor": ["COMPLETED"],
                   "prolog": ["REQUEUED", "CANCELLED"], "xid_crash": ["FAILED"]}  # fmt: skip
    assert second.requeued_jobs == 1
    assert final.height == before.height + sum(map(len, new.values()))
    # against sacct itself, over the whole time: one row per allocation record (the window's,
    # and the prolog job's by id)
    out = cluster.run("sacct", "-a", "-X", "-D", "-n", "-P", "-S", f"{scenario.begin:%Y-%m-%dT%H:%M:%S}",
                      "-E", f"{second.until:%Y-%m-%dT%H:%M:%S}", "--format=JobID,State")  # fmt: skip
    out += cluster.run(
        "sacct", "-a", "-X", "-D", "-n", "-P", "-j", j["prolog"], "--format=JobID,State"
    )
    records = sorted(set(tuple(line.split("|")) for line in out.splitlines() if line))
    got = sorted(final.select("job_id", pl.col("state").cast(pl.String)).rows())
    assert got == sorted((jid, st.split(" ")[0]) for jid, st in records)


def test_node_states_match_the_workload(scenario, cluster):
    ns = scenario.ds.node_states
    n1, n2, n3, _ = cluster.nodes
    down = ns.filter((pl.col("node") == n1) & (pl.col("state") == "DOWN")).row(0, named=True)
    assert down["reason"] == "test: PSU failure"
    assert down["end"] is not None  # resumed: closed
    assert down["end"] >= down["start"]
    prolog = ns.filter((pl.col("node") == n2) & (pl.col("reason") == "Prolog error"))
    assert prolog["state"].to_list() == ["DRAIN"]
    xid = ns.filter(pl.col("node") == n3)
    assert xid["reason"].to_list() == ["GPU ECC errors <xid 79> on gpu:1"]


def test_gpu_counts(scenario, cluster):
    jobs, j = scenario.ds.jobs, scenario.jobs
    gpus = jobs.filter(pl.col("job_id") == j["preempted"])["n_accelerators"].to_list()
    want = 1 if cluster.gpu_nodes else 0
    assert gpus == [want, want]
    assert jobs.filter(pl.col("job_id") == j["failed"])["n_accelerators"].to_list() == [0]


def test_attribution_of_the_collected_dataset(scenario, cluster):
    codes = scenario.second.requeue_exit_codes
    assert codes == (99, 100)  # read from `scontrol show config` of the live cluster
    a = attribute_failures(scenario.ds, requeue_exit_codes=codes)
    j = scenario.jobs
    n1, n2, n3, _ = cluster.nodes

    def first(role):
        row = a.filter((pl.col("job_id") == j[role]) & (pl.col("attempt") == 0)).row(0, named=True)
        return row["state"], row["failure_domain"], row["culprit_node"]

    assert first("node_fail") == ("NODE_FAIL", "hardware", n1)
    assert first("admin_requeue") == ("REQUEUED", "admin", None)
    assert first("exit_requeue") == ("REQUEUED", "user", None)
    assert first("failed") == ("FAILED", "user", None)
    assert first("preempted") == ("PREEMPTED", "preemption", None)
    assert first("prolog") == ("REQUEUED", "system_software", n2)
    # the drain reason's Xid 79 is a health event (source slurm): GPU, on the drained node
    row = a.filter(pl.col("job_id") == j["xid_crash"]).row(0, named=True)
    assert (row["state"], row["failure_domain"], row["failure_cause"], row["culprit_node"]) == (
        "FAILED", "hardware", "gpu", n3,
    )  # fmt: skip


def test_rerun_is_idempotent(scenario, cluster):
    before = _snapshot(scenario.ds)
    again = collect_slurm(scenario.ds.path, since=scenario.second.since, until=scenario.second.until,
                          env={"SLURM_CONF": cluster.env["SLURM_CONF"]})  # fmt: skip
    assert again.raw_dir == scenario.second.raw_dir  # same window, same bytes: same raw folder
    assert [o.status for o in again.outcomes] == ["unchanged", "unchanged", "unchanged"]
    after = _snapshot(scenario.ds)
    for t in before:
        assert after[t].equals(before[t]), t


def test_cli_collect_and_dry_run(scenario, cluster, monkeypatch, capsys):
    monkeypatch.setenv("SLURM_CONF", cluster.env["SLURM_CONF"])
    n_inputs = len(scenario.ds.inputs)
    assert cli_main(["collect", "slurm", "--into", str(scenario.ds.path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "sacct --allusers --duplicates --parsable2 --starttime" in out
    assert "dry run" in out
    assert len(scenario.ds.inputs) == n_inputs
    before = scenario.ds.jobs
    assert cli_main(["collect", "slurm", "--into", str(scenario.ds.path)]) == 0
    out = capsys.readouterr().out
    assert "raw exports:" in out
    assert scenario.ds.jobs.sort("job_id", "attempt").equals(before.sort("job_id", "attempt"))


def test_an_inflight_requeue_is_an_open_run(scenario, cluster, tmp_path):
    """Issue 37: a job requeued just before the collection waits for its BeginTime (~2 min), so
    the window's sacct does not list its pending rerun; collect asks for it by id, and the run
    is open at the window's end (censored), not finished."""
    from reliability.models.recovery import job_run_ettr

    c = cluster
    begin = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=5)
    job = c.sbatch("-J", "inflight", "-w", c.nodes[0], "--requeue")
    wait_until(lambda: c.queue_state(job) == "RUNNING", "in-flight job running")
    c.run("scontrol", "requeue", job)
    wait_until(lambda: c.queue_state(job) == "PENDING", "requeued job pending")
    # slurmdbd records the pending rerun a moment after the requeue
    wait_until(lambda: [st for st, _ in c.records(job)] == ["REQUEUED", "PENDING"], "rerun record")
    # not in the window's export (its BeginTime is ~2 min away)
    window = c.run("sacct", "-a", "-X", "-D", "-n", "-P", "-S", f"{begin:%Y-%m-%dT%H:%M:%S}",
                   "-E", "now", "--format=JobID,State")  # fmt: skip
    assert [ln for ln in window.splitlines() if ln.startswith(f"{job}|")] == [f"{job}|REQUEUED"]
    r = collect_slurm(tmp_path / "ds", since=begin, env={"SLURM_CONF": c.env["SLURM_CONF"]})
    assert r.requeued_jobs == 1
    jobs = Dataset(tmp_path / "ds").jobs.filter(pl.col("job_id") == job).sort("attempt")
    assert jobs["state"].cast(pl.String).to_list() == ["REQUEUED", "PENDING"]
    run = job_run_ettr(Dataset(tmp_path / "ds")).runs.filter(pl.col("job_id") == job)
    assert run["open"].to_list() == [True]
    end = r.until
    assert run["last_end"].to_list() == [end]
    c.run("scancel", job)


def test_zz_slurmdbd_down_is_a_clear_error(scenario, cluster):
    """Last in the module: stops slurmdbd (by its PID file) and collects."""
    pid = int((cluster.dir / "run" / "slurmdbd.pid").read_text())
    os.kill(pid, 15)
    wait_until(lambda: not Path(f"/proc/{pid}").exists(), "slurmdbd stopped")
    with pytest.raises(CollectError, match=r"could not reach the accounting database.*slurmdbd"):
        collect_slurm(scenario.ds.path, env={"SLURM_CONF": cluster.env["SLURM_CONF"]})
    print("live Slurm timings [s]:", {k: round(v, 1) for k, v in scenario.timings.items()})
