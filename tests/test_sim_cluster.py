"""The cluster simulator: exact event sequences on tiny scenarios, determinism, round trip
through the readers, and calibration against the configured truth."""

from __future__ import annotations

import itertools
from dataclasses import replace

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from reliability import Dataset
from reliability.hostlist import compress
from reliability.sim.cluster import ClusterSim
from reliability.sim.config import ClusterConfig, FailureConfig, WorkloadConfig, load_preset
from reliability.sim.emit import node_hostlist
from reliability.sim.run import save_checkpoint, simulate_cluster, snapshot_cluster
from reliability.simulated import ingest_simulation

JOB_COLS = {"job": pl.Int64, "submit_s": pl.Float64, "gpus": pl.Int64, "n_nodes": pl.Int64, "work_s": pl.Float64,
            "priority": pl.Int64, "time_limit_s": pl.Float64, "outcome": pl.String, "outcome_at": pl.Float64,
            "training": pl.Boolean}  # fmt: skip
FAIL_COLS = {"node": pl.Int64, "time_s": pl.Float64, "kind": pl.String, "cause": pl.String, "detected": pl.Boolean,
             "repair_s": pl.Float64, "lemon": pl.Boolean, "check_phase_s": pl.Float64}  # fmt: skip


def _run(n_nodes, jobs, failures=(), days=1.0, extra=None, **workload):
    """Run hand-made jobs (JOB_COLS tuples; ``extra``: more columns) and failures."""
    cfg = ClusterConfig(n_nodes=n_nodes, days=days, failures=FailureConfig(slurmd_timeout_s=300.0),
                        workload=WorkloadConfig(**workload))  # fmt: skip
    jf = pl.DataFrame([dict(zip(JOB_COLS, j, strict=True)) for j in jobs], schema=JOB_COLS)
    if extra:
        jf = jf.with_columns(pl.Series(k, v) for k, v in extra.items())
    ff = pl.DataFrame([dict(zip(FAIL_COLS, f, strict=True)) for f in failures], schema=FAIL_COLS)
    sim = ClusterSim(cfg, jf, ff)
    log = sim.run()
    a = log.frame("attempt").select("job", "attempt", "time", "end_s", "state", "cause", "culprit")
    _run.sim = sim
    return a.sort("time", "job").rows(), log


def test_node_failure_requeue():
    """A 2-node job; node 0's PSU fails: NODE_FAIL after slurmd's timeout, requeue, wait for repair."""
    attempts, log = _run(2, [(0, 0.0, 16, 2, 1000.0, 20000, 5000.0, "COMPLETED", 0.5, False)],
                         [(0, 300.0, "failure", "psu", True, 1000.0, False, 0.0)])  # fmt: skip
    assert attempts == [
        (0, 0, 0.0, 600.0, "NODE_FAIL", "psu", 0),
        (0, 1, 1600.0, 2600.0, "COMPLETED", "none", -1),
    ]
    assert log.frame("node_state").rows() == [(600.0, 0, "DOWN", 1600.0, "Not responding", "slurm")]


def test_withdrawn_end_does_not_end_the_next_attempt():
    """A 10,000 s job's node dies at 100 s (NODE_FAIL at 400 s, after slurmd's 300 s); the job
    restarts on the other node at 520 s (requeue delay 120 s). Its first attempt's planned end
    at 10,000 s falls inside the second attempt and must not end it: that attempt runs its whole
    10,000 s. The withdrawn event is not counted as processed."""
    attempts, _ = _run(2, [(0, 0.0, 8, 1, 10000.0, 20000, 50000.0, "COMPLETED", 0.5, False)],
                       [(0, 100.0, "failure", "psu", True, 1000.0, False, 0.0)])  # fmt: skip
    assert attempts == [
        (0, 0, 0.0, 400.0, "NODE_FAIL", "psu", 0),
        (0, 1, 520.0, 10520.0, "COMPLETED", "none", -1),
    ]
    # counted by hand: arrive, pass (0 s), failure (100 s), take-down, pass (400 s), requeue,
    # pass (520 s), backfill timer, pass (580 s: 180 s after the last deep pass), return (node 0
    # repaired at 1,400 s), pass, end, pass (10,520 s); not the withdrawn end at 10,000 s
    assert _run.sim.k.processed == 13


def test_preemption_after_two_hours():
    """A high-priority job waits until the low-priority one has run 2 h, then preempts it;
    the victim is requeued (eligible 120 s later) and restarts from scratch."""
    attempts, _ = _run(1, [(0, 0.0, 8, 1, 20000.0, 10000, 50000.0, "COMPLETED", 0.5, False),
                           (1, 3600.0, 8, 1, 100.0, 30000, 600.0, "COMPLETED", 0.5, False)])  # fmt: skip
    assert attempts == [
        (0, 0, 0.0, 7200.0, "PREEMPTED", "preemption", -1),
        (1, 0, 7200.0, 7300.0, "COMPLETED", "none", -1),
        (0, 1, 7320.0, 27320.0, "COMPLETED", "none", -1),
    ]


def test_crash_health_check_and_escape():
    """A GPU falls off the bus: the job on it fails at once; its epilog's health check keeps
    the node from new work and drains it (reported 30 s later), so the next job waits for the
    repair."""
    attempts, log = _run(1, [(0, 0.0, 8, 1, 1000.0, 20000, 5000.0, "COMPLETED", 0.5, False),
                             (1, 200.0, 8, 1, 500.0, 20000, 5000.0, "COMPLETED", 0.5, False)],
                         [(0, 100.0, "failure", "gpu_fell_off_bus", True, 3600.0, False, 50.0)])  # fmt: skip
    assert attempts == [
        (0, 0, 0.0, 100.0, "FAILED", "gpu_fell_off_bus", 0),
        (1, 0, 3700.0, 4200.0, "COMPLETED", "none", -1),
    ]
    ((t, node, xid, gpu),) = log.frame("xid").rows()
    assert (t, node, xid) == (100.0, 0, "79")
    assert 0 <= gpu < 8
    assert log.frame("health").select("time", "code").rows() == [(130.0, "gpu_fell_off_bus")]
    # a fault on an idle node is caught at the node's next 5-minute tick (phase 50 s -> 350 s),
    # and a job that started on it in between is requeued
    attempts, log = _run(1, [(1, 200.0, 8, 1, 500.0, 20000, 5000.0, "COMPLETED", 0.5, False)],
                         [(0, 100.0, "failure", "gpu_fell_off_bus", True, 3600.0, False, 50.0)])  # fmt: skip
    assert attempts == [
        (0, 0, 200.0, 350.0, "REQUEUED", "gpu_fell_off_bus", 0),
        (0, 1, 3950.0, 4450.0, "COMPLETED", "none", -1),
    ]
    # the same fault escaping the health check: the node stays in service
    attempts, log = _run(1, [(0, 0.0, 8, 1, 1000.0, 20000, 5000.0, "COMPLETED", 0.5, False),
                             (1, 200.0, 8, 1, 500.0, 20000, 5000.0, "COMPLETED", 0.5, False)],
                         [(0, 100.0, "failure", "gpu_fell_off_bus", False, 3600.0, False, 50.0)])  # fmt: skip
    assert attempts[1] == (1, 0, 200.0, 700.0, "COMPLETED", "none", -1)
    assert log.frame("node_state").height == 0


def test_training_run_keeps_checkpointed_work():
    """A training run loses only the work since its last checkpoint and pays u0 on restart."""
    cfg_ckpt = 3600.0
    attempts, log = _run(1, [(0, 0.0, 8, 1, 10000.0, 20000, 90000.0, "COMPLETED", 0.5, True)],
                         [(0, 5000.0, "failure", "nvlink", True, 100.0, False, 0.0)])  # fmt: skip
    a = log.frame("attempt").sort("attempt")
    # crashed at 5000 s: one checkpoint (3600 s) kept, 1400 s lost; restart 5300+100 -> needs u0 + 6400
    assert a.get_column("productive_s").to_list() == [cfg_ckpt, 10000.0 - cfg_ckpt]
    assert a.get_column("lost_s").to_list() == [1400.0, 0.0]
    # requeued at 5000 (+120 s -> eligible 5120); the epilog check drains the node from 5000
    # for its 100 s repair (back at 5100): the run restarts at max(5120, 5100) and needs u0
    # (300 s) + the 6400 s left
    assert attempts[1][2] == 5120.0
    assert attempts[1][3] == 5120.0 + 300.0 + 6400.0


def test_lifetime_spans_requeues_and_the_run_resubmits():
    """The job lifetime (10 h here) counts from the first start across requeues: a 15-h
    training run crashes at 4 h (4 h checkpointed), restarts after the node's repair and is
    stopped (TIMEOUT) at 10 h after its first start; the run then resubmits itself 60 s later
    as a new job with the 5.36 h of work left, which pays the restart overhead (5 min) again."""
    job = (0, 0.0, 8, 1, 15 * 3600.0, 20000, 10 * 3600.0, "COMPLETED", 0.5, True)
    crash = (0, 4 * 3600.0, "failure", "gpu_fell_off_bus", True, 1000.0, False, 0.0)
    attempts, log = _run(1, [job], [crash], max_lifetime_h=10.0)
    left = 15 * 3600.0 - 4 * 3600.0 - (36000.0 - 15400.0 - 300.0)
    assert attempts == [
        (0, 0, 0.0, 14400.0, "FAILED", "gpu_fell_off_bus", 0),
        (0, 1, 15400.0, 36000.0, "TIMEOUT", "lifetime", -1),
        (1, 0, 36060.0, 36060.0 + 300.0 + left, "COMPLETED", "none", -1),
    ]
    assert _run.sim.continuations == [(1, 0, 36060.0, left, 1.0)]
    a = log.frame("attempt").sort("time")
    assert a.get_column("productive_s").to_list() == [14400.0, 36000.0 - 15400.0 - 300.0, left]
    assert a.get_column("overhead_s").to_list() == [0.0, 300.0, 300.0]


def test_requeue_cap_then_resubmission():
    """After ``max_requeues`` (2) requeues a crash-looping job is not requeued again: the run
    resubmits itself as a new job (with the work it has not checkpointed: all of it)."""
    job = (0, 0.0, 8, 1, 36000.0, 20000, 90000.0, "COMPLETED", 0.5, True)
    crashes = [(0, t, "failure", "gpu_fell_off_bus", False, 100.0, False, 0.0)
               for t in (1000.0, 2000.0, 3000.0, 4000.0)]  # fmt: skip
    attempts, _ = _run(1, [job], crashes, max_requeues=2)
    crash = ("FAILED", "gpu_fell_off_bus", 0)
    assert attempts == [
        (0, 0, 0.0, 1000.0, *crash),
        (0, 1, 1120.0, 2000.0, *crash),
        (0, 2, 2120.0, 3000.0, *crash),
        (1, 0, 3060.0, 4000.0, *crash),
        (1, 1, 4120.0, 4120.0 + 300.0 + 36000.0, "COMPLETED", "none", -1),
    ]


def test_planned_requeues_app_and_admin():
    """RequeueExit (the job exits 99 half-way) and an admin's scontrol requeue (at a quarter):
    REQUEUED, eligible again 120 s later, rerun from scratch (not a training run)."""
    jobs = [(0, 0.0, 8, 1, 1000.0, 20000, 5000.0, "COMPLETED", 0.5, False),
            (1, 0.0, 8, 1, 1000.0, 20000, 5000.0, "COMPLETED", 0.5, False)]  # fmt: skip
    attempts, log = _run(2, jobs, extra={"requeue_kind": [1, 2], "requeue_at": [0.5, 0.25]})
    assert attempts == [
        (0, 0, 0.0, 500.0, "REQUEUED", "app_requeue", -1),
        (1, 0, 0.0, 250.0, "REQUEUED", "admin_requeue", -1),
        (1, 1, 370.0, 1370.0, "COMPLETED", "none", -1),
        (0, 1, 620.0, 1620.0, "COMPLETED", "none", -1),
    ]
    codes = log.frame("attempt").filter(pl.col("attempt") == 0).sort("job")["exit_code"]
    assert codes.to_list() == [99, 0]


def test_requeued_job_preempts_at_its_restart():
    """HPCA'25's secondary preemption: a 2-node high-QOS training run crashes on node 1; a
    low-QOS job takes node 0 meanwhile; the run's restart has to wait until that job has run
    the 2 h after which it is preemptible, and preempts it at that moment."""
    run = (0, 0.0, 16, 2, 10000.0, 30000, 50000.0, "COMPLETED", 0.5, True)
    low = (1, 3010.0, 8, 1, 20000.0, 10000, 50000.0, "COMPLETED", 0.5, False)
    crash = (1, 3000.0, "failure", "nvlink", True, 100.0, False, 0.0)
    attempts, _ = _run(2, [run, low], [crash])
    assert attempts == [
        (0, 0, 0.0, 3000.0, "FAILED", "nvlink", 1),
        (1, 0, 3010.0, 3010.0 + 7200.0, "PREEMPTED", "preemption", -1),
        (0, 1, 10210.0, 10210.0 + 300.0 + 10000.0, "COMPLETED", "none", -1),
        (1, 1, 20510.0, 20510.0 + 20000.0, "COMPLETED", "none", -1),
    ]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("sim")
    r = simulate_cluster("small", seed=3)
    r.write(out / "raw")
    outcomes = ingest_simulation(out / "raw", out / "ds")
    return r, out, outcomes


def test_finished_run_is_freed_without_a_garbage_collection(monkeypatch, tmp_path):
    """The simulator of a finished run (its job tables: hundreds of MB at full scale) is freed
    as soon as the run returns, by reference counting alone: no cycle through its scheduled
    events keeps it until the next collection (which the event loop pauses)."""
    import gc
    import weakref

    refs = []
    init = ClusterSim.__init__

    def spy(self, *args, **kwargs):
        init(self, *args, **kwargs)
        refs.append(weakref.ref(self))

    monkeypatch.setattr(ClusterSim, "__init__", spy)
    gc.disable()
    # simulators other tests keep (``_run.sim``) are not this test's
    before = {id(o) for o in gc.get_objects() if isinstance(o, ClusterSim)}
    try:
        r = simulate_cluster("small", days=2, seed=1)
        assert r.log.frame("attempt").height > 0
        assert len(refs) == 1
        assert refs[0]() is None
        # a run seen at a checkpoint: its simulator comes from the pickle, not __init__
        cfg = load_preset("small").with_days(2)
        save_checkpoint(cfg, seed=1, day=1.0, path=tmp_path / "ckpt.pkl")
        snap = snapshot_cluster(tmp_path / "ckpt.pkl", config=cfg, seed=1)
        assert snap.log.frame("attempt").height > 0
        assert not [
            o for o in gc.get_objects() if isinstance(o, ClusterSim) and id(o) not in before
        ]
    finally:
        gc.enable()


def test_same_seed_same_bytes(tmp_path):
    a = simulate_cluster("small", days=5, seed=11).write(tmp_path / "a")
    b = simulate_cluster("small", days=5, seed=11).write(tmp_path / "b")
    c = simulate_cluster("small", days=5, seed=12).write(tmp_path / "c")
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files)
    assert (a / "sacct.psv").read_bytes() != (c / "sacct.psv").read_bytes()


def test_output_ingests_without_quarantine(small_run):
    r, out, outcomes = small_run
    assert all(o.rows_quarantined == 0 for o in outcomes)
    ds = Dataset(out / "ds")
    attempts = r.log.frame("attempt")
    assert ds.jobs.height == attempts.height
    truth = pl.read_parquet(out / "raw" / "truth" / "attempts.parquet")
    # states as read back equal the true states of every attempt
    got = ds.jobs.select("job_id", "attempt", pl.col("state").cast(pl.String)).sort(
        "job_id", "attempt"
    )
    want = truth.select("job_id", pl.col("attempt").cast(pl.UInt16), "state").sort(
        "job_id", "attempt"
    )
    assert got.equals(want)
    # every Xid the simulator logged is a health event; every drain is a node state
    assert (
        ds.health_events.filter(pl.col("source") == "kernel_log").height
        == r.log.frame("xid").height
    )
    assert ds.node_states.height == r.log.frame("node_state").height


@pytest.mark.slow
def test_failure_rate_matches_configuration():
    """Ordinary nodes fail at the configured rate: the count lies in the exact Poisson 99%
    interval of its expectation (failures while a node is out of service are skipped, so the
    expectation uses the time in service). The failure process does not depend on the jobs,
    so the cluster runs nearly idle (2% load): the same 18,000 node-days and failure count as
    at full load, without simulating ~200,000 jobs."""
    base = load_preset("small")
    cfg = replace(base, n_nodes=300, days=60,
                  workload=replace(base.workload, target_utilization=0.02))  # fmt: skip
    r = simulate_cluster(cfg, seed=5)
    f = r.log.frame("failure").filter(~pl.col("lemon") & (pl.col("effect") != "skipped"))
    sched = r.rate_schedule()
    mean_rate = sched.get_column("ordinary_rate_per_node_day").mean()  # per node-day
    down = r.log.frame("node_state")
    down_days = (
        down.get_column("end_s").fill_null(cfg.horizon_s) - down.get_column("time")
    ).sum() / 86400
    node_days = (~r.lemon).sum() * cfg.days - down_days * (~r.lemon).mean()
    expected = mean_rate * node_days
    lo, hi = stats.poisson.ppf([0.005, 0.995], expected)
    assert lo <= f.height <= hi, (f.height, expected)


def test_workload_shape_and_lemons(small_run):
    """HPCA'25 Fig. 6 sizes (>40% of jobs on 1 GPU, >90% under 8; tolerance 2 points at 48
    nodes), and the lemons' share of the failures in service: the configured 73% of the drawn
    failures, less those that fall while a lemon is out of service (between 55% and 80%)."""
    r, out, _ = small_run
    jobs = Dataset(out / "ds").jobs.filter(pl.col("attempt") == 0)
    sizes = jobs.get_column("n_accelerators")
    assert (sizes == 1).mean() > 0.40
    assert (sizes < 8).mean() > 0.88
    f = r.log.frame("failure").filter(pl.col("effect") != "skipped")
    assert 0.55 <= f["lemon"].mean() <= 0.80


def test_continuations_keep_the_run():
    """A training run's resubmitted jobs (many here: a 1-day lifetime) carry its user, name,
    size and QOS, and get later job ids (Slurm numbers jobs by submission)."""
    base = load_preset("small")
    cfg = replace(base, days=20.0, workload=replace(base.workload, max_lifetime_h=24.0))
    r = simulate_cluster(cfg, seed=4)
    jobs = r.jobs
    cont = jobs.filter(pl.col("run") != pl.col("job"))
    assert cont.height > 0
    root = jobs.select(pl.col("job").alias("run"), root_user="user", root_name="name", root_gpus="gpus",
                       root_qos="qos", root_id="raw_id")  # fmt: skip
    both = cont.join(root, on="run")
    assert (both["user"] == both["root_user"]).all()
    assert (both["name"] == both["root_name"]).all()
    assert (both["gpus"] == both["root_gpus"]).all()
    assert (both["qos"] == both["root_qos"]).all()
    assert (both["raw_id"] > both["root_id"]).all()
    assert jobs["raw_id"].n_unique() == jobs.height


def test_requeue_records_as_slurm_prints_them(small_run):
    """Read straight from sacct.psv (no reader): a RequeueExit requeue is REQUEUED 99:0 with
    its .batch step FAILED 99:0; an scontrol requeue is REQUEUED 0:0 with .batch CANCELLED 0:15
    (as Slurm 22.05 recorded run 1's jobs 42 and 16)."""
    import csv

    _, out, _ = small_run
    with open(out / "raw" / "sacct.psv", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="|"))
    seen = {"app": 0, "admin": 0}
    for alloc, batch in itertools.pairwise(rows):
        if alloc["State"] != "REQUEUED" or batch["JobID"] != alloc["JobID"] + ".batch":
            continue
        if alloc["ExitCode"] == "99:0":
            assert (batch["State"], batch["ExitCode"]) == ("FAILED", "99:0")
            seen["app"] += 1
        elif batch["State"] == "CANCELLED" and batch["ExitCode"] == "0:15":
            assert alloc["ExitCode"] == "0:0"
            seen["admin"] += 1
        else:
            raise AssertionError((alloc, batch))
    assert seen["app"] > 0
    assert seen["admin"] > 0


def test_public_api():
    import reliability.sim as sim

    assert {"small", "rsc1", "rsc2"} <= set(sim.preset_names())
    r = sim.simulate_cluster(sim.load_preset("small"), days=1, seed=0)
    assert isinstance(r, sim.ClusterResult)
    assert r.log.frame("attempt").height > 0
    with pytest.raises(ValueError, match="unknown cluster preset"):
        sim.load_preset("nope")


@settings(max_examples=300, deadline=None)
@given(
    width=st.integers(1, 5),
    picks=st.lists(st.integers(0, 2999), min_size=1, max_size=150),
    run=st.tuples(st.integers(0, 2999), st.integers(1, 130)),
)
def test_node_hostlist_is_compress_of_the_names(width, picks, run):
    # the writer's index-based hostlist against the reference compress() of the node names,
    # for scattered picks and for contiguous runs crossing the leading-zero boundary
    n = min(10**width - 1, 3000)
    names = [f"gpu{i:0{width}d}" for i in range(1, n + 1)]
    for nodes in ([p % n for p in picks], [(run[0] + j) % n for j in range(run[1])]):
        assert node_hostlist(nodes, "gpu", width) == compress([names[i] for i in nodes])


def test_sacct_lists_attempts_in_order_each_with_its_steps(small_run):
    """Read straight from sacct.psv: allocations by job id, a job's attempts in order (their
    states as the truth's attempts 0, 1, ...), each that ran followed by its .batch and .extern
    steps, as ``sacct --duplicates`` prints them."""
    import csv
    import re

    _, out, _ = small_run
    with open(out / "raw" / "sacct.psv", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="|"))
    allocs = []
    i = 0
    while i < len(rows):
        alloc = rows[i]
        assert "." not in alloc["JobID"], alloc
        allocs.append(alloc)
        i += 1
        if alloc["Start"] != "Unknown":
            steps = [r["JobID"] for r in rows[i : i + 2]]
            assert steps == [alloc["JobID"] + ".batch", alloc["JobID"] + ".extern"]
            i += 2
    raw = [int(a["JobIDRaw"]) for a in allocs]
    assert raw == sorted(raw)
    printed: dict[str, list[str]] = {}
    for alloc in allocs:
        printed.setdefault(alloc["JobID"], []).append(re.sub(r" by \d+$", "", alloc["State"]))
    truth = pl.read_parquet(out / "raw" / "truth" / "attempts.parquet")
    want = dict(
        truth.sort("job_id", "attempt").group_by("job_id", maintain_order=True).agg("state").rows()
    )
    assert printed == want
    assert max(map(len, want.values())) > 1  # requeued jobs: several attempts each


@pytest.mark.parametrize(
    "seconds", [0, 1, 59, 60, 3599, 3600, 86399, 86400, 86401, 7 * 86400 + 3723]
)
def test_durations_print_as_sacct_does(seconds):
    from reliability.sim.emit import _dhms

    d, rem = divmod(seconds, 86400)
    hms = f"{rem // 3600:02d}:{rem % 3600 // 60:02d}:{rem % 60:02d}"
    want = f"{d}-{hms}" if d else hms
    got = pl.select(_dhms(pl.lit(float(seconds)))).item()
    assert got == want


def test_a_run_without_attempts_writes_empty_logs(tmp_path):
    """A run too short for any attempt to end or start (9 simulated seconds) still writes its
    logs: sacct prints its header line and no record (as sacct does when no job matches), and
    the truth's attempts table has its columns and no row."""
    from reliability.ingest import read_sacct

    r = simulate_cluster("small", days=0.0001, seed=1)
    assert r.log.frame("attempt").height == 0
    out = r.write(tmp_path / "run")
    lines = (out / "sacct.psv").read_text().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("JobID|")
    read = read_sacct(out / "sacct.psv")
    assert (read.rows_read, read.frames["jobs"].height) == (0, 0)
    truth = pl.read_parquet(out / "truth" / "attempts.parquet")
    assert truth.height == 0
    assert {"job_id", "attempt", "state", "start_time", "end_time"} <= set(truth.columns)


@pytest.mark.parametrize("seed", [0, 4, 11])
def test_timeout_attempts_run_their_limit_or_the_rest_of_their_lifetime(seed):
    """A TIMEOUT attempt runs for its time limit, or until its job's lifetime ends (counted
    from the job's first start, across requeues), whichever is first; never for zero time,
    and nothing starts once its lifetime is over. A job requeued just before its lifetime
    ended started again after it and ended TIMEOUT at once (0-9 such attempts per small run,
    651 of 2,261 TIMEOUT attempts in 60 days of rsc1, seed 0). Checked against the drawn
    workload's own time limits and the configured lifetime. (Slurm records a job killed while
    pending as CANCELLED, without nodes; TIMEOUT only for a job that ran to its limit.)"""
    r = simulate_cluster(load_preset("small"), seed=seed)
    life_s = r.config.workload.max_lifetime_h * 3600.0
    a = r.log.frame("attempt").filter(pl.col("time").is_not_null())  # started attempts
    first = a.group_by("job").agg(first=pl.col("time").min())
    a = (
        a.join(first, on="job")
        .join(r.jobs.select("job", "time_limit_s"), on="job")
        .with_columns(
            elapsed=pl.col("end_s") - pl.col("time"),
            life_left=pl.col("first") + life_s - pl.col("time"),
        )
    )
    late = a.filter(pl.col("life_left") <= 0)
    assert late.height == 0, late.select("job", "attempt", "state", "time", "first").head()
    t = a.filter(pl.col("state") == "TIMEOUT")
    assert t.height > 0
    expect = pl.min_horizontal("time_limit_s", "life_left")
    bad = t.filter(((pl.col("elapsed") - expect).abs() > 1.0) | (pl.col("elapsed") <= 0))
    assert bad.height == 0, (bad.height, t.height, bad.head())
