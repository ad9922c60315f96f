"""ETTR (Kokolis et al. HPCA'25 §V): closed forms against Monte Carlo, the published numbers,
and run ETTR measured from logs against the simulator's true productive time."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl
import pytest

from reliability import Dataset
from reliability.models.pods import recovery_paths
from reliability.models.recovery import (
    ETTRApproximationWarning,
    expected_ettr,
    interruption_rate_per_h,
    job_run_ettr,
    simulate_ettr,
)
from reliability.sim.config import load_preset
from reliability.sim.run import simulate_cluster
from reliability.simulated import ingest_simulation

U0 = 5 / 60


def test_published_16k_gpu_numbers():
    """DESIGN.md §5: 16k GPUs (2,000 nodes) at r_f = 6.5e-3, u0 = 5 min: ETTR about 0.7 at
    Δt = 60 min and 0.93 at 5 min (tolerances 0.03 and 0.01)."""
    with pytest.warns(ETTRApproximationWarning):  # x = 0.32 at 60 min: the paper's own range edge
        at60 = expected_ettr(16000, 6.5e-3, 1.0, U0)
    assert at60 == pytest.approx(0.7, abs=0.03)
    assert expected_ettr(16000, 6.5e-3, 5 / 60, U0) == pytest.approx(0.93, abs=0.01)
    # the exact form agrees with the paper's rounding too
    assert expected_ettr(16000, 6.5e-3, 1.0, U0, variant="renewal") == pytest.approx(0.7, abs=0.03)


def test_renewal_form_matches_its_own_closed_form():
    """With no queue and no write the renewal form reduces to λΔt·e^{−λu0} / (e^{λΔt} − 1)."""
    for n, dt, u0 in [(1024, 1.0, U0), (16384, 0.25, 0.2), (131072, 0.05, 0.02)]:
        lam = float(interruption_rate_per_h(n, 6.5e-3))
        want = lam * dt * math.exp(-lam * u0) / math.expm1(lam * dt)
        assert expected_ettr(n, 6.5e-3, dt, u0, variant="renewal") == pytest.approx(want, rel=1e-12)


GRID = [
    # n_gpus, r_f, Δt [h], u0 [h], q [h], w [h]
    (1024, 6.5e-3, 1.0, U0, 0.0, 0.0),
    (4096, 6.5e-3, 0.5, U0, 0.25, 0.0),
    (16384, 2.34e-3, 1.0, U0, 0.0, 0.02),
    (16384, 6.5e-3, 5 / 60, U0, 0.1, 0.005),
    (32768, 2.34e-3, 0.25, 0.1, 0.0, 0.01),
    (131072, 2.34e-3, 2 / 60, 2 / 60, 0.0, 0.0),
]


@pytest.mark.parametrize(("n", "r", "dt", "u0", "q", "w"), GRID)
def test_closed_forms_against_monte_carlo(n, r, dt, u0, q, w):
    """The exact renewal form is within 4 standard errors of the Monte Carlo mean; each
    linearised form that models the inputs is within 5% (the paper's claim) where
    x = λ·(cost per interruption) <= 0.3, its stated range."""
    job_h = 400.0
    mc = simulate_ettr(n, r, dt, u0, job_h=job_h, queue_h=q, ckpt_write_h=w, n_runs=4000, seed=7)
    exact = float(
        expected_ettr(n, r, dt, u0, queue_h=q, ckpt_write_h=w, variant="renewal", job_h=job_h)
    )
    assert abs(exact - mc.mean) <= 4 * mc.stderr + 1e-9
    lam = float(interruption_rate_per_h(n, r))
    variants = {"simplified": q == 0 and w == 0, "queue": w == 0, "hpca": q == 0, "finite": True}
    for variant, applies in variants.items():
        if not applies:
            continue
        x = lam * (u0 + dt / 2 + q + w / 2)
        kw = {"job_h": job_h} if variant == "finite" else {}
        if x > 0.3:
            continue
        v = float(expected_ettr(n, r, dt, u0, queue_h=q if variant in ("queue", "finite") else 0.0,
                                ckpt_write_h=w if variant in ("hpca", "finite") else 0.0,
                                variant=variant, **kw))  # fmt: skip
        assert v == pytest.approx(mc.mean, rel=0.05), variant


def test_linearisation_guards():
    with pytest.raises(ValueError, match=">= 1"):
        expected_ettr(131072, 6.5e-3, 2.0, 0.5)
    with pytest.warns(ETTRApproximationWarning):
        expected_ettr(16384, 6.5e-3, 1.0, 0.2)
    with pytest.raises(ValueError, match="does not model queue_h"):
        expected_ettr(1024, 6.5e-3, 1.0, U0, queue_h=0.5)  # simplified ignores q: refuse
    with pytest.raises(ValueError, match="job_h"):
        expected_ettr(1024, 6.5e-3, 1.0, U0, variant="finite")
    with pytest.raises(ValueError, match="variant"):
        expected_ettr(1024, 6.5e-3, 1.0, U0, variant="nope")
    with pytest.raises(TypeError):
        expected_ettr(1024, 6.5e-3, 1.0, U0, 0.5)  # queue_h and the rest must be named
    # the exact form holds where the linear one breaks, and stays in (0, 1)
    v = float(expected_ettr(131072, 6.5e-3, 2.0, 0.5, variant="renewal"))
    assert 0 < v < 0.3


def test_monte_carlo_is_deterministic_and_degenerates_correctly():
    a = simulate_ettr(4096, 6.5e-3, 0.5, U0, job_h=100, n_runs=500, seed=3)
    b = simulate_ettr(4096, 6.5e-3, 0.5, U0, job_h=100, n_runs=500, seed=3)
    c = simulate_ettr(4096, 6.5e-3, 0.5, U0, job_h=100, n_runs=500, seed=4)
    assert np.array_equal(a.ettr, b.ettr)
    assert not np.array_equal(a.ettr, c.ettr)
    # no failures: wall = q0 + W + (segments − 1)·w exactly
    z = simulate_ettr(8, 0.0, 1.0, U0, job_h=10.5, ckpt_write_h=0.1, initial_queue_h=2.0, n_runs=10)
    assert np.allclose(z.wall_h, 2.0 + 10.5 + 10 * 0.1)
    assert (z.interruptions == 0).all()
    # Weibull of shape 1 is the exponential: same mean within Monte Carlo error
    e = simulate_ettr(16384, 6.5e-3, 0.5, U0, job_h=200, n_runs=3000, seed=1)
    w1 = simulate_ettr(
        16384, 6.5e-3, 0.5, U0, job_h=200, n_runs=3000, seed=2, distribution="weibull"
    )
    assert abs(e.mean - w1.mean) < 4 * math.hypot(e.stderr, w1.stderr)


def _attempt(job, attempt, submit_h, start_h, end_h, state, gpus=64, **kw):
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    h = lambda x: t0 + timedelta(hours=x)  # noqa: E731
    return {"cluster": "c", "job_id": job, "attempt": attempt, "submit_time": h(submit_h),
            "start_time": h(start_h), "end_time": h(end_h), "state": state, "n_accelerators": gpus,
            "n_nodes": max(gpus // 8, 1), "qos": "high", "priority": 1, "user": "u", "name": kw.get("name", job),
            "failure_domain": kw.get("domain", "none")}  # fmt: skip


def test_run_ettr_by_hand():
    """One run: queued 1 h, ran 2.5 h, NODE_FAIL; requeued, ran 2 h to completion.
    Δt = 2 h aligned: kept 2 h, lost 0.5 h; restart 5 min; wall 6 h."""
    jobs = pl.DataFrame([
        _attempt("1", 0, 0, 1, 3.5, "NODE_FAIL"), _attempt("1", 1, 3.5, 4, 6, "COMPLETED"),
        # a FAILED attempt attributed to hardware is an interruption; one attributed to the user is not
        _attempt("2", 0, 0, 0, 3, "FAILED", domain="hardware", name="big"),
        _attempt("3", 0, 3, 3, 6, "FAILED", domain="user", name="big"),
    ])  # fmt: skip
    r = job_run_ettr(jobs, ckpt_interval_h=2.0, restart_h=U0).runs
    one = r.filter(pl.col("job_id") == "1").row(0, named=True)
    assert one["wall_h"] == pytest.approx(6.0)
    assert one["queue_h"] == pytest.approx(1.5)
    assert one["lost_h"] == pytest.approx(0.5)
    assert one["productive_h"] == pytest.approx(2.0 + 2.0 - U0)
    assert one["ettr"] == pytest.approx((4.0 - U0) / 6.0)
    two = r.filter(pl.col("job_id") == "2").row(0, named=True)
    assert two["lost_h"] == pytest.approx(1.0)
    assert two["interruptions"] == 1
    assert r.filter(pl.col("job_id") == "3")["ettr"][0] == pytest.approx(1.0)
    # expected lost work charges Δt/2 = 1 h per interruption
    e = job_run_ettr(jobs, ckpt_interval_h=2.0, restart_h=U0, lost_work="expected").runs
    assert e.filter(pl.col("job_id") == "1")["lost_h"][0] == pytest.approx(1.0)
    # linking resubmissions by (user, name): jobs 2 and 3 are one run of 6 h wall
    linked = job_run_ettr(jobs, ckpt_interval_h=2.0, restart_h=U0, run_key=["user", "name"]).runs
    big = linked.filter(pl.col("name") == "big").row(0, named=True)
    assert big["attempts"] == 2
    assert big["wall_h"] == pytest.approx(6.0)
    assert big["productive_h"] == pytest.approx(2.0 + 3.0 - U0)
    # no checkpoints: an interruption loses the whole attempt
    none = job_run_ettr(jobs, ckpt_interval_h=None).runs
    assert none.filter(pl.col("job_id") == "1")["lost_h"][0] == pytest.approx(2.5)


def test_a_run_waiting_to_restart_at_the_end_is_open_not_finished():
    """Issue 37: a run whose last record is its pending rerun, or a requeue just before the
    export, is open: its wall time runs to the observation end (12 h here), censored. By hand,
    Δt = 2 h: run 1 queued 1 h, ran 1-9 h (8 h, all kept), requeued by hardware, its rerun
    listed PENDING: wall 12 h, queue 4 h, ETTR so far 8/12. Run 2 ran 1-11.95 h and was
    requeued 3 min before the export (its rerun not listed yet): wall 12 h. Run 3 was requeued
    at 9 h with no later record (held, or cancelled while held): open, censored at the requeue
    (wall 9 h). Run 4 was requeued and then finished; run 5 requeued, then cancelled while
    pending (its last record CANCELLED): both closed."""
    end = datetime(2025, 1, 1, 12, tzinfo=UTC)
    pending = _attempt("1", 1, 9, 0, 0, "PENDING") | {"start_time": None, "end_time": None}
    cancelled = _attempt("5", 1, 9, 0, 0, "CANCELLED") | {"start_time": None}
    jobs = pl.DataFrame([
        _attempt("1", 0, 0, 1, 9, "REQUEUED", domain="hardware"), pending,
        _attempt("2", 0, 0, 1, 11.95, "REQUEUED", domain="hardware"),
        _attempt("3", 0, 0, 1, 9, "REQUEUED", domain="hardware"),
        _attempt("4", 0, 0, 1, 9, "REQUEUED", domain="hardware"),
        _attempt("4", 1, 9, 9, 9.5, "COMPLETED"),
        _attempt("5", 0, 0, 1, 9, "REQUEUED", domain="hardware"), cancelled,
    ])  # fmt: skip
    res = job_run_ettr(jobs, ckpt_interval_h=2.0, restart_h=U0, observation_end=end)
    r = {row["job_id"]: row for row in res.runs.iter_rows(named=True)}
    one = r["1"]
    assert one["open"]
    assert one["wall_h"] == pytest.approx(12.0)
    assert one["queue_h"] == pytest.approx(4.0)
    assert one["ettr"] == pytest.approx(8.0 / 12.0)
    # the wait after a hardware interruption stays in the hardware-only ETTR (from 1 h)
    assert one["ettr_hardware"] == pytest.approx(8.0 / 11.0)
    assert r["2"]["open"]
    assert r["2"]["wall_h"] == pytest.approx(12.0)
    assert r["3"]["open"]
    assert r["3"]["wall_h"] == pytest.approx(9.0)
    assert not r["4"]["open"]
    assert r["4"]["wall_h"] == pytest.approx(9.5)
    assert not r["5"]["open"]
    assert r["5"]["wall_h"] == pytest.approx(9.0)
    assert any(n.startswith("2 runs wait to run again") for n in res.notes)
    assert any(n.startswith("1 runs end in a requeue more than 10 min") for n in res.notes)
    # a preempted run waiting to restart (PreemptMode=REQUEUE: its rerun pending): the wait so
    # far is the preemption's cost; PREEMPTED alone may be PreemptMode=CANCEL: it ended
    rerun = _attempt("6", 1, 9, 0, 0, "PENDING") | {"start_time": None, "end_time": None}
    pre = pl.DataFrame([_attempt("6", 0, 0, 1, 9, "PREEMPTED", domain="preemption"), rerun])
    p = job_run_ettr(pre, ckpt_interval_h=2.0, restart_h=U0, observation_end=end).runs.row(
        0, named=True
    )
    assert p["open"]
    assert p["ettr"] == pytest.approx(8.0 / 12.0)
    assert p["ettr_hardware"] == pytest.approx(1.0)
    alone = job_run_ettr(pre.head(1), ckpt_interval_h=2.0, restart_h=U0, observation_end=end).runs
    assert not alone["open"][0]


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ettr")
    cfg = load_preset("small")
    r = simulate_cluster(cfg, seed=11)
    r.write(tmp / "raw")
    ingest_simulation(tmp / "raw", tmp / "ds")
    truth = pl.read_parquet(tmp / "raw" / "truth" / "attempts.parquet")
    return cfg, Dataset(tmp / "ds"), truth


def test_run_ettr_matches_simulated_truth(simulated):
    """With the simulator's own checkpoint interval and restart overhead, run ETTR from the
    logs reproduces the true productive time of every run the simulation finished (the truth
    has no productive time yet for attempts still running or pending at its end): per run for
    >= 98% of runs (misses are faults that attribution cannot see) and the GPU-time-weighted
    ETTR within 1%."""
    cfg, ds, truth = simulated
    w = cfg.workload
    res = job_run_ettr(ds, w.checkpoint_interval_min / 60, w.restart_overhead_min / 60,
                       ckpt_min_gpus=w.training_min_gpus)  # fmt: skip
    true = truth.group_by("job_id").agg(
        true_h=pl.col("productive_s").sum() / 3600,
        unfinished=pl.col("productive_s").is_null().any(),
    )
    every = res.runs.join(true, on="job_id", how="inner")
    assert every.height == res.runs.height > 1000
    j = every.filter(~pl.col("unfinished"))
    assert j.height > 0.99 * every.height
    match = ((j["productive_h"] - j["true_h"]).abs() < 1e-3).mean()
    assert match >= 0.98
    gw = lambda f, c: float((f["gpus"] * f[c]).sum() / (f["gpus"] * f["wall_h"]).sum())  # noqa: E731
    assert gw(j, "productive_h") == pytest.approx(gw(j, "true_h"), rel=0.01)
    s = res.summary.row(0, named=True)
    assert s["ettr_by_gpu_time"] == pytest.approx(gw(every, "productive_h"))
    assert res.by_size["runs"].sum() == res.runs.height


@pytest.mark.xfail(
    strict=True,
    reason="HPCA'25 Fig. 9 shape not reproduced on the 48-node small preset (seed 11): 1-GPU "
    "runs have a GPU-time ETTR of 0.60 against 0.71 for 64-GPU runs (128: 0.40, 256: 0.18). "
    "Queue waits dominate: heavy-tailed training runs of up to 256 of the 384 GPUs fill this "
    "small cluster for days (used utilization 0.89, offered 0.82) and small low-QOS jobs wait "
    "behind high-QOS reservations; the full-size rsc1 calibration runs measure 0.28 for 1-GPU "
    "runs and 0.52 for 1024+ GPU high-QOS runs (benchmarks/calibration.py, README)",
)
def test_run_ettr_fig9_shape(simulated):
    """HPCA'25 Fig. 9 shape: large runs have lower GPU-time ETTR than single-GPU runs."""
    cfg, ds, _ = simulated
    w = cfg.workload
    res = job_run_ettr(ds, w.checkpoint_interval_min / 60, w.restart_overhead_min / 60,
                       ckpt_min_gpus=w.training_min_gpus)  # fmt: skip
    by = res.by_size
    small = by.filter(pl.col("bucket") == 1)["ettr_by_gpu_time"][0]
    large = by.filter(pl.col("bucket") >= 64)
    assert (large["ettr_by_gpu_time"] < small).all()


def test_recovery_paths_break_even():
    r = recovery_paths(50, ckpt_interval_h=1.0, reconfigure_downtime_h=0.25, reroute_tax=0.05,
                       ocs_repair_h=4.0)  # fmt: skip
    s = {
        (a, b): c
        for a, b, c in r.summary.select("component", "path", "cost_per_failure_h").iter_rows()
    }
    assert s[("ocs", "reconfigure")] == pytest.approx(0.75)
    assert s[("ocs", "reroute")] == pytest.approx(0.2)
    assert r.break_even_repair_h == pytest.approx(0.75 / 0.05)
    m = r.summary.filter(pl.col("component") == "machine").row(0, named=True)
    assert m["failures_per_day"] == pytest.approx(50 * 16 * 0.0008)
    assert m["goodput_loss"] == pytest.approx(50 * 16 * 0.0008 * 0.75 / 24)
    with pytest.raises(ValueError, match="n_cubes"):
        recovery_paths(65)
    # the text form prints those numbers, recomputed here: per component, the failures per
    # day of the components a 50-cube job uses (16 hosts and 96 links per cube, 48 OCSes),
    # the cost per failure in minutes and the goodput loss
    text = str(r)
    for comp, count, rate in (("machine", 50 * 16, 0.0008), ("ici_link", 50 * 96, 0.00005),
                              ("ocs", 48, 0.0004)):  # fmt: skip
        paths = {"reconfigure": 0.75} | ({"reroute": 0.05 * 4.0} if comp == "ocs" else {})
        for path, cost in paths.items():
            line = next(ln for ln in text.splitlines() if ln.split()[:2] == [comp, path])
            assert f"{count * rate:.4f}/day" in line
            assert f"{60 * cost:.1f} min per failure" in line
            assert f"goodput loss {100 * count * rate * cost / 24:.3f}%" in line
    assert f"less than {0.75 / 0.05:.1f} h" in text
    html = r._repr_html_()  # the one result base: the text, then the summary as a real table
    assert "<pre>" + text + "</pre>" in html  # nothing in it needs escaping
    assert html.count("<tr>") == r.summary.height + 1


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: expected_ettr(1024, 6.5e-3, math.nan, U0), "ckpt_interval_h"),
        (lambda: expected_ettr(1024, 6.5e-3, 0.0, U0), "ckpt_interval_h"),
        (lambda: expected_ettr(1024, -1e-3, 1.0, U0), "rate_per_node_day"),
        (lambda: expected_ettr(1024, math.inf, 1.0, U0, variant="renewal"), "rate_per_node_day"),
        (lambda: expected_ettr(0, 6.5e-3, 1.0, U0), "n_gpus"),
        (lambda: expected_ettr(1024, 6.5e-3, 1.0, math.inf, variant="renewal"), "restart_h"),
        (lambda: expected_ettr(1024, 6.5e-3, 1.0, U0, gpus_per_node=0), "gpus_per_node"),
        (lambda: expected_ettr(1024, 6.5e-3, 1.0, U0, variant="renewal", job_h=-5), "job_h"),
        (lambda: recovery_paths(8, machine_rate_per_day=-0.1), "machine_rate_per_day"),
        (lambda: recovery_paths(8, ocs_repair_h=math.nan), "ocs_repair_h"),
        (lambda: recovery_paths(2.5), "n_cubes"),
    ],
)
def test_invalid_arguments_are_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_run_ettr_with_the_requeue_exit_code_matches_every_finished_run(tmp_path):
    """Given the simulator's RequeueExit code (99, as its slurm.conf says), attribution marks
    the requeues the application asked for, and run ETTR from the logs reproduces the true
    productive time of every finished run of seed 5 (its runs have no continuation jobs):
    those requeues follow a checkpoint the application took, so they lose no work (2 runs
    were charged the work since the assumed checkpoint: 57 and 5 minutes)."""
    from reliability.attribution import attribute_failures

    cfg = load_preset("small")
    simulate_cluster(cfg, seed=5).write(tmp_path / "raw")
    ingest_simulation(tmp_path / "raw", tmp_path / "ds")
    truth = pl.read_parquet(tmp_path / "raw" / "truth" / "attempts.parquet")
    w = cfg.workload
    jobs = attribute_failures(Dataset(tmp_path / "ds"), requeue_exit_codes=[99])
    res = job_run_ettr(jobs, w.checkpoint_interval_min / 60, w.restart_overhead_min / 60,
                       ckpt_min_gpus=w.training_min_gpus)  # fmt: skip
    true = truth.group_by("job_id").agg(
        true_h=pl.col("productive_s").sum() / 3600,
        unfinished=pl.col("productive_s").is_null().any(),
    )
    j = res.runs.join(true, on="job_id", how="inner").filter(~pl.col("unfinished"))
    assert j.height > 10_000
    assert (j["productive_h"] - j["true_h"]).abs().max() < 1e-3
