"""Pod component simulator (NSDI'24) through the pod-log reader: rates, availability, bad input."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import polars as pl
import pytest
from scipy import stats

from reliability.ingest import read_pod_log
from reliability.models.failures import component_failure_rates
from reliability.sim.pod import load_pod_preset, simulate_pod

#: one simulated year of the preset's pod (the preset runs two): ~28,000 jobs, ~300 jobs on
#: an interruption, ~150 jobs rerouting around an OCS, ~300 machine failures; every check
#: below is an exact identity or an interval sized for its own count, so a year has the power
#: the two years had (the interval widths scale with the counts)
POD_DAYS = 365


@pytest.fixture(scope="module")
def pod(tmp_path_factory):
    out = tmp_path_factory.mktemp("pod")
    r = simulate_pod("tpuv4", seed=3, days=POD_DAYS)
    r.write(out)
    return r, read_pod_log(out / "pod_events.jsonl")


@pytest.mark.slow  # the pod fixture: 57 s
def test_log_reads_cleanly(pod):
    r, rr = pod
    assert rr.rows_quarantined == 0
    inv = rr.frames["inventory"]
    # NSDI'24: 64 cubes x 16 hosts, 6,144 optical ICI links, 48 OCS
    assert dict(inv.group_by("component_type").len().iter_rows()) == {
        "machine": 1024,
        "ici_link": 6144,
        "ocs": 48,
    }
    assert rr.frames["component_failures"].height == r.truth.get_column("failures").sum()


@pytest.mark.slow  # the pod fixture: 57 s
@pytest.mark.parametrize("ctype", ["machine", "ici_link", "ocs"])
def test_daily_failure_rates_match_configuration(pod, ctype):
    """Failures per component-day in service lie in the exact Poisson 99% interval around the
    configured daily rate (machines 0.08%, ICI cables 0.005%, OCS 0.04%), including the
    expected burst excess (2% of days at 3x: +4%)."""
    r, rr = pod
    t = r.truth.filter(pl.col("component_type") == ctype).row(0, named=True)
    k = rr.frames["component_failures"].filter(pl.col("component_type") == ctype).height
    cfg = r.config.failures
    expected = t["configured_rate_per_day"] * (
        1 + cfg.burst_probability_per_day * (cfg.burst_multiplier - 1)
    )
    lo, hi = stats.poisson.ppf([0.005, 0.995], expected * t["in_service_days"])
    assert lo <= k <= hi


@pytest.mark.slow  # the pod fixture: 57 s
def test_host_availability_about_99_percent(pod):
    """NSDI'24: hosts are available about 99% of the time (a ~ 0.9896 gives Figure 1's 94%)."""
    r, rr = pod
    ns = rr.frames["node_states"]
    end = r.config.start + pl.duration(days=r.config.days)
    down_days = ns.select(
        ((pl.col("end").fill_null(end) - pl.col("start")).dt.total_seconds() / 86400).sum()
    ).item()  # fmt: skip
    availability = 1 - down_days / (1024 * r.config.days)
    assert availability == pytest.approx(0.99, abs=0.004)


@pytest.mark.slow  # the pod fixture: 57 s
def test_component_rates_series(pod):
    _r, rr = pod
    weekly = component_failure_rates(
        rr.frames["component_failures"], rr.frames["inventory"], every="1w"
    )
    machines = weekly.filter(pl.col("component_type") == "machine")
    # one row per calendar week (Monday-based) that the window touches, first and last partial
    start = _r.config.start
    mondays = {
        (start + timedelta(days=d) - timedelta(days=(start + timedelta(days=d)).weekday())).date()
        for d in range(int(_r.config.days))
    }
    assert machines.height == len(mondays)
    mean = machines.get_column("rate_per_day").mean()
    assert mean == pytest.approx(0.0008, rel=0.2)


def test_weekly_rate_intervals_cover_the_rate():
    """The weekly exact (Garwood) 95% intervals of a constant machine rate (no weekly swing, no
    bursts) cover it in 93-99.5% of 315 weeks over three seeds (exact intervals are
    conservative: coverage at least 95% up to sampling error). The covered rate is the
    configured one times the machines' availability (a machine under repair does not fail,
    while the denominator counts every day in the inventory)."""
    from dataclasses import replace

    base = load_preset_pod()
    cfg = replace(base, jobs=None, failures=replace(base.failures, weekly_amplitude=0.0,
                                                    burst_probability_per_day=0.0))  # fmt: skip
    hits = total = 0
    for seed in (11, 12, 13):
        r = simulate_pod(cfg, seed=seed)
        truth = r.truth.filter(pl.col("component_type") == "machine").row(0, named=True)
        rate = truth["configured_rate_per_day"] * truth["availability"]
        ev = r.events
        fails = ev.filter(
            (pl.col("event") == "component_fail") & (pl.col("component_type") == "machine")
        )
        start = cfg.start
        cf = fails.select(
            cluster=pl.lit("p"), component_type=pl.lit("machine"), component_id="component_id",
            failed_at=pl.lit(start) + pl.duration(microseconds=(pl.col("time_s") * 1e6).cast(pl.Int64)),
            repaired_at=pl.lit(None, pl.Datetime("us", "UTC")),
        )  # fmt: skip
        inv = pl.DataFrame({"cluster": "p", "component_type": "machine",
                            "component_id": cfg.components()["machine"]}).with_columns(
            in_service=pl.lit(start), out_of_service=pl.lit(start + timedelta(days=cfg.days)),
        )  # fmt: skip
        w = component_failure_rates(cf, inv, every="1w").filter(
            pl.col("component_type") == "machine"
        )
        w = w.filter(pl.col("component_days") > 0.5 * 7 * 1024)  # whole weeks
        hits += int(((w["ci_low"] <= rate) & (rate <= w["ci_high"])).sum())
        total += w.height
    assert total >= 300
    assert 0.93 <= hits / total <= 0.995, (hits, total)


def load_preset_pod():
    return load_pod_preset("tpuv4")


def test_deterministic_and_static_preset(tmp_path):
    a = simulate_pod("tpuv4", days=60, seed=5).write(tmp_path / "a")
    b = simulate_pod("tpuv4", days=60, seed=5).write(tmp_path / "b")
    assert (a / "pod_events.jsonl").read_bytes() == (b / "pod_events.jsonl").read_bytes()
    static = load_pod_preset("tpuv3-static")
    assert static.components()["ocs"] == []
    assert len(static.components()["machine"]) == 256  # 1,024 chips


def test_bad_lines_are_quarantined(tmp_path):
    p = tmp_path / "pod.jsonl"
    p.write_text(
        '{"time": "2022-01-01T00:00:00Z", "cluster": "p", "event": "inventory", "component_type": "ocs", "component_id": "o1"}\n'
        "not json\n"
        '{"time": "2022-01-01T00:00:00Z", "cluster": "p", "event": "teleport", "component_type": "ocs", "component_id": "o1"}\n'
        '{"time": "2022-01-02T00:00:00Z", "cluster": "p", "event": "component_repair", "component_type": "ocs", "component_id": "o1"}\n'
        '{"time": "2022-01-02T00:00:00", "cluster": "p", "event": "component_fail", "component_type": "ocs", "component_id": "o1"}\n'
    )
    r = read_pod_log(p)
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (5, 1, 4)
    reasons = r.quarantine.get_column("reason").to_list()
    assert "unknown event 'teleport'" in reasons
    assert "repair without an open failure" in reasons
    assert any("UTC offset" in x for x in reasons)


# -- the job side: scheduling, preflight, recovery paths (NSDI'24 §3-5) -------------------
@pytest.mark.slow  # the pod fixture: 57 s
def test_jobs_ingest_with_topology(pod):
    r, rr = pod
    jobs = rr.frames["jobs"]
    cfg = r.config
    # the job stream is Poisson: arrivals per day x days, within its 99.9% interval
    n_jobs = jobs.select("job_id").n_unique()
    lo, hi = stats.poisson.ppf([0.0005, 0.9995], cfg.jobs.arrivals_per_day * cfg.days)
    assert lo <= n_jobs <= hi
    assert set(jobs["state"].cast(pl.String).unique()) <= {
        "COMPLETED",
        "PREEMPTED",
        "NODE_FAIL",
        "RUNNING",
    }
    # a k-cube job has 16k hosts and 64k chips, and names its slice topology
    assert (jobs["n_accelerators"] == 4 * jobs["n_nodes"]).all()
    assert (jobs["n_nodes"] % 16 == 0).all()
    assert jobs["topology"].str.contains(r"^\d+x\d+x\d+( twisted)?$").all()
    # twisted tori: every other job whose cube arrangement is 1x1x2, 1x2x2, 2x2x4 or 2x4x4
    # (2, 4, 16 or 32 cubes: 31% of the default size mix) -> 15.5% of jobs, binomial 99.9%
    first = jobs.filter(pl.col("attempt") == 0)
    twisted = first["topology"].str.ends_with("twisted").sum()
    p = (
        0.5
        * sum(v for k, v in cfg.jobs.sizes.items() if k in (2, 4, 16, 32))
        / sum(cfg.jobs.sizes.values())
    )
    lo, hi = stats.binom.ppf([0.0005, 0.9995], first.height, p)
    assert lo <= twisted <= hi
    # a job's attempts are numbered without gaps
    att = jobs.group_by("job_id").agg(n=pl.len(), top=pl.col("attempt").max())
    assert (att["top"].cast(pl.Int64) == att["n"] - 1).all()


def _intervals(ev: pl.DataFrame, start: str, end: str, key: str = "component_id") -> dict:
    """key -> list of [t0, t1) from paired start/end events (open at the horizon: inf)."""
    out: dict[str, list[list[float]]] = {}
    for t, e, k in (
        ev.filter(pl.col("event").is_in([start, end]))
        .sort("time_s")
        .select("time_s", "event", key)
        .rows()
    ):
        if e == start:
            out.setdefault(k, []).append([t, float("inf")])
        elif out.get(k) and out[k][-1][1] == float("inf"):
            out[k][-1][1] = t
    return out


@pytest.mark.slow  # the pod fixture: 57 s
def test_fault_tolerant_routing_covers_exactly_the_ocs_outages(pod):
    """Every job with FT routing runs on it exactly while an OCS is down and the job runs: its
    rerouted time (the pod log's FT steps, as read back) equals the overlap of its running
    intervals with each OCS's outages, computed here from the raw component and job events."""
    r, rr = pod
    ev = r.events
    horizon = r.config.horizon_s
    outages = _intervals(
        ev.filter(pl.col("component_type") == "ocs"), "component_fail", "component_repair"
    )
    runs = _intervals(ev.filter(pl.col("component_type") == "job"), "job_start", "job_end")
    ft = {
        j
        for j, d in ev.filter(pl.col("event") == "job_submit")
        .select("component_id", "detail")
        .rows()
        if d.endswith("ft=1")
    }
    want: dict[str, float] = {}
    for job in ft:
        total = 0.0
        for a0, a1 in runs.get(job, []):
            for ivs in outages.values():
                for o0, o1 in ivs:
                    total += max(0.0, min(a1, o1, horizon) - max(a0, o0))
        if total > 0:
            want[job] = total
    steps = rr.frames["job_steps"].with_columns(
        # fractional seconds: the log has microseconds, and whole seconds per step would
        # drop up to a second per reroute
        s=(pl.col("end_time") - pl.col("start_time")).dt.total_microseconds() / 1e6
    )
    got = dict(steps.group_by("job_id").agg(pl.col("s").sum()).iter_rows())
    assert len(want) > 50  # a year holds many OCS outages under running jobs (~150)
    assert set(got) == set(want)
    assert all(abs(got[j] - want[j]) < 1.0 for j in want)


@pytest.mark.slow  # the pod fixture: 57 s
def test_calibration_against_the_paper(pod):
    """NSDI'24 §5: about 1% of jobs see a hardware interruption (here within 0.5-1.5%, the
    paper gives one significant figure); fewer than 2% of jobs run on fault-tolerant routing
    at any time (time-averaged share of running jobs here, which the OCS outage time and the
    95% opt-in set: see the exact test above); during an OCS outage most jobs reroute."""
    r, rr = pod
    jobs, steps = rr.frames["jobs"], rr.frames["job_steps"]
    hit = jobs.group_by("job_id").agg(hw=(pl.col("state") == "NODE_FAIL").any())["hw"].mean()
    assert hit == pytest.approx(0.01, rel=0.5)
    ended = jobs.drop_nulls("end_time")
    run_s = (ended["end_time"] - ended["start_time"]).dt.total_seconds().sum()
    ft_s = (steps["end_time"] - steps["start_time"]).dt.total_seconds().sum()
    assert ft_s / run_s < 0.02
    s = r.job_stats["reroute_samples"]
    # at an OCS failure, the jobs that reroute are the FT ones: 95% opt in (NSDI'24); pooled
    # over the year's OCS failures (about 7, a dozen jobs running at each), the rerouted count
    # lies in the binomial 99.9% interval around 95% of the jobs running
    fails = r.events.filter(
        (pl.col("event") == "component_fail") & (pl.col("component_type") == "ocs")
    )["time_s"]
    at_fault = s.filter(pl.col("time_s").is_in(fails.to_list()) & (pl.col("running") > 0))
    assert at_fault.height >= 3
    n = int(at_fault["running"].sum())
    lo, hi = stats.binom.ppf([0.0005, 0.9995], n, 0.95)
    assert lo <= at_fault["rerouted"].sum() <= hi


def test_static_mode_and_no_ft_routing_options():
    """``simulate_pod(..., mode="static")`` lays the same cubes out without OCSes (the same
    machine and cable failures, drawn first), and every job then runs on an aligned block of
    cubes; ``ft_routing=False``: no job reroutes, so every job running at an OCS failure is
    interrupted by it."""
    recon = simulate_pod("tpuv4", days=40, seed=4)
    static = simulate_pod("tpuv4", days=40, seed=4, mode="static")
    assert static.config.mode == "static"
    assert static.config.components()["ocs"] == []

    def mach(r):
        return r.events.filter(
            (pl.col("event") == "component_fail") & (pl.col("component_type") != "ocs")
        )

    assert (
        mach(static)
        .select("time_s", "component_id")
        .equals(mach(recon).select("time_s", "component_id"))
    )
    starts = static.events.filter(pl.col("event") == "job_start")["detail"].str.extract(
        r"cubes=([\d,]+)"
    )
    for text in starts.to_list():
        cubes = [int(c) for c in text.split(",")]
        size = 1 << (len(cubes) - 1).bit_length()
        assert cubes[0] % size == 0
        assert cubes == list(range(cubes[0], cubes[0] + len(cubes)))
    assert static.events.filter(pl.col("event") == "crossconnect").height == 0
    # OCS failures are rare (48 x 0.04% a day: 0.8 in 40 days): ten times the rate makes the
    # check meet about eight of them
    cfg = load_pod_preset("tpuv4")
    cfg = replace(cfg, failures=replace(cfg.failures, ocs_rate_per_day=0.004))
    no_ft = simulate_pod(cfg, days=40, seed=4, ft_routing=False)
    ev = no_ft.events
    assert ev.filter(pl.col("event") == "reroute_start").height == 0
    ocs_fail = ev.filter(
        (pl.col("event") == "component_fail") & (pl.col("component_type") == "ocs")
    )
    assert ocs_fail.height >= 3
    ends = ev.filter(pl.col("event") == "job_end")
    for t in ocs_fail["time_s"].to_list():
        running = _running_at(ev, t)
        interrupted = ends.filter(
            (pl.col("time_s") == t) & pl.col("detail").str.ends_with("NODE_FAIL")
        )
        assert set(interrupted["component_id"]) == running
    with pytest.raises(ValueError, match="mode"):
        simulate_pod("tpuv4", days=1, mode="folded")


def _running_at(ev: pl.DataFrame, t: float) -> set[str]:
    """Jobs that started before ``t`` and had not ended before it."""
    before = ev.filter((pl.col("time_s") < t) & pl.col("event").is_in(["job_start", "job_end"]))
    last = before.sort("time_s").group_by("component_id").agg(pl.col("event").last())
    return set(last.filter(pl.col("event") == "job_start")["component_id"])


def test_crossconnect_changes_grow_with_submissions():
    """NSDI'24 Fig. 13: OCS reconfigurations grow with the job submissions. Doubling the
    arrival rate multiplies at least 1.5x and at most 3.5x the cross-connect changes per
    day (a busier pod also preempts and restarts more, each restart re-cabling its slice)."""
    per_day = []
    for rate in (15.0, 30.0):
        cfg = load_pod_preset("tpuv4")
        cfg = replace(cfg, days=60.0, jobs=replace(cfg.jobs, arrivals_per_day=rate))
        r = simulate_pod(cfg, seed=9)
        changed = r.events.filter(pl.col("event") == "crossconnect")["detail"].str.extract(
            r"changed=(\d+)"
        )
        subs = r.events.filter(pl.col("event") == "job_submit").height
        per_day.append((subs / 60.0, changed.cast(pl.Int64).sum() / 60.0))
    (s1, c1), (s2, c2) = per_day
    assert 1.6 < s2 / s1 < 2.4
    assert 1.5 < c2 / c1 < 3.5


def _components(rows):
    return pl.DataFrame(rows, schema={"time_s": pl.Float64, "event": pl.String, "component_type": pl.String,
                                      "component_id": pl.String, "detail": pl.String}, orient="row")  # fmt: skip


def _run(jobs, rows, mode="reconfigurable", **jcfg):
    import numpy as np

    from reliability.sim.pod import PodConfig
    from reliability.sim.pod_jobs import PodJobConfig, simulate_pod_jobs

    cfg = PodConfig(n_cubes=4, days=5, mode=mode)
    jc = PodJobConfig(preflight_catch_prob=0.0, tax_low=0.05, tax_high=0.05, **jcfg)
    ev, truth, stats = simulate_pod_jobs(
        cfg, _components(rows), jc, np.random.default_rng(0), jobs=jobs
    )
    return ev, truth, stats


def _ends(ev):
    return ev.filter(pl.col("event") == "job_end").select("time_s", "detail").rows()


def test_reconfigure_path_on_a_machine_failure():
    """A 2-cube job (10 h) loses a machine at 2.5 h: it is evicted, loses the half hour since its
    last checkpoint (hourly), restarts after the 10-minute reconfiguration on the spare cubes and
    needs 8 h more."""
    jobs = [{"submit_s": 0.0, "cubes": 2, "work_h": 10.0}]
    rows = [(2.5 * 3600, "component_fail", "machine", "c00-h03", None)]
    ev, truth, stats = _run(jobs, rows)
    ends = _ends(ev)
    assert ends[0] == (2.5 * 3600, "attempt=0;state=NODE_FAIL")
    starts = ev.filter(pl.col("event") == "job_start").select("time_s", "detail").rows()
    assert starts[1][0] == pytest.approx(2.5 * 3600 + 600)
    assert "cubes=1,2" in starts[1][1]  # cube 0 is broken: the lowest two usable free cubes
    assert ends[1][0] == pytest.approx(2.5 * 3600 + 600 + 8 * 3600)
    assert stats["interruptions"] == 1
    assert truth["hardware_interruptions"][0] == 1


def test_reroute_path_on_an_ocs_failure():
    """An OCS fails at 1 h and is repaired at 3 h: the FT job keeps its cubes and runs 5% slower
    for those 2 h (finishing 0.1 h of work later, i.e. at 10 h + 2 h * 0.05 / 0.95); the job
    without FT routing is interrupted (reconfigure path)."""
    jobs = [{"submit_s": 0.0, "cubes": 1, "work_h": 10.0, "ft": True},
            {"submit_s": 0.0, "cubes": 1, "work_h": 10.0, "ft": False}]  # fmt: skip
    rows = [
        (3600.0, "component_fail", "ocs", "ocs-x03", None),
        (3 * 3600.0, "component_repair", "ocs", "ocs-x03", None),
    ]
    ev, _, stats = _run(jobs, rows)
    by_job = {cid: t for t, e, _, cid, d in ev.rows() if e == "job_end" and "COMPLETED" in d}
    slow = 2 * 3600 * 0.05  # work not done during the 2 h at 95% speed
    assert by_job["0"] == pytest.approx(10 * 3600 + slow)
    assert ev.filter(pl.col("event") == "reroute_start")["component_id"].to_list() == ["0"]
    assert ev.filter((pl.col("event") == "job_end") & (pl.col("component_id") == "1"))["detail"][
        0
    ].endswith("NODE_FAIL")
    assert stats["reroutes"] == 1


def test_static_mode_needs_an_aligned_healthy_block():
    """Static: a 2-cube job needs cubes (0,1) or (2,3); with cube 1 broken it takes (2,3); a
    second 2-cube job then waits for the repair."""
    jobs = [
        {"submit_s": 10.0, "cubes": 2, "work_h": 5.0},
        {"submit_s": 20.0, "cubes": 2, "work_h": 1.0},
    ]
    rows = [
        (0.0, "component_fail", "machine", "c01-h00", None),
        (7200.0, "component_repair", "machine", "c01-h00", None),
    ]
    ev, _, _ = _run(jobs, rows, mode="static")
    starts = (
        ev.filter(pl.col("event") == "job_start").select("time_s", "component_id", "detail").rows()
    )
    assert starts[0] == (10.0, "0", "attempt=0;cubes=2,3;topology=4x4x8")
    assert starts[1][0] == pytest.approx(7200.0)
    assert "cubes=0,1" in starts[1][2]
    assert ev.filter(pl.col("event") == "crossconnect").height == 0  # no OCS in a static pod


def test_prod_job_preempts_batch_to_defragment():
    jobs = [
        {"submit_s": 0.0, "cubes": 4, "work_h": 10.0},
        {"submit_s": 60.0, "cubes": 2, "work_h": 1.0, "prod": True},
    ]
    ev, _, stats = _run(jobs, [])
    assert stats["preemptions"] == 1
    first_end = _ends(ev)[0]
    assert first_end == (60.0, "attempt=0;state=PREEMPTED")
    assert (
        ev.filter((pl.col("event") == "job_start") & (pl.col("component_id") == "1"))["time_s"][0]
        == 60.0
    )


def test_preflight_catches_latent_faults():
    """Preflight catches a latent fault with probability p per cube of a start: a 1-cube job
    is rescheduled until a preflight passes, so the catches before the start are geometric,
    mean p / (1 - p) = 1.5 at p = 0.6; 400 jobs: the total within 4.5 standard deviations.
    Every job still completes (on other cubes)."""
    import numpy as np

    from reliability.sim.pod import PodConfig
    from reliability.sim.pod_jobs import PodJobConfig, simulate_pod_jobs

    p, n = 0.6, 400
    jobs = [{"submit_s": 600.0 * i, "cubes": 1, "work_h": 0.1} for i in range(n)]
    cfg = PodConfig(n_cubes=64, days=30)
    ev, truth, stats = simulate_pod_jobs(cfg, _components([]), PodJobConfig(preflight_catch_prob=p, preflight_repair_h=0.01),
                                         np.random.default_rng(1), jobs=jobs)  # fmt: skip
    mean, var = p / (1 - p), p / (1 - p) ** 2
    assert abs(stats["preflight_fails"] - n * mean) < 4.5 * np.sqrt(n * var)
    assert ev.filter(pl.col("event") == "preflight_fail").height == stats["preflight_fails"]
    assert truth["completed"].all()


def test_recovery_costs_match_the_recovery_model():
    """The per-failure costs of `reliability.models.recovery_paths` (issue 6) are what the
    simulator charges: reconfigure = downtime + the work since the checkpoint (Δt/2 for a
    failure mid-interval), reroute = tax x repair time."""
    from reliability.models.pods import recovery_paths

    model = recovery_paths(
        1, ckpt_interval_h=1.0, reconfigure_downtime_h=10 / 60, ocs_repair_h=2.0, reroute_tax=0.05
    )
    cost = {
        (c, p): h
        for c, p, h in model.summary.select("component", "path", "cost_per_failure_h").iter_rows()
    }
    # reconfigure: a machine fails at 2.5 h, half-way through a checkpoint interval
    ev, _, _ = _run(
        [{"submit_s": 0.0, "cubes": 1, "work_h": 10.0}],
        [(2.5 * 3600, "component_fail", "machine", "c00-h01", None)],
    )
    done = max(t for t, e, _, _, d in ev.rows() if e == "job_end" and "COMPLETED" in d)
    assert done / 3600 - 10.0 == pytest.approx(cost[("machine", "reconfigure")])
    # reroute: an OCS down from 1 h to 3 h under an FT job
    ev, _, _ = _run([{"submit_s": 0.0, "cubes": 1, "work_h": 10.0, "ft": True}],
                    [(3600.0, "component_fail", "ocs", "ocs-y01", None), (3 * 3600.0, "component_repair", "ocs", "ocs-y01", None)])  # fmt: skip
    done = max(t for t, e, _, _, d in ev.rows() if e == "job_end" and "COMPLETED" in d)
    assert done / 3600 - 10.0 == pytest.approx(cost[("ocs", "reroute")])


def test_a_cluster_option_the_lines_override_is_said(tmp_path):
    """cluster= names the cluster of lines that carry none; lines that name theirs keep it,
    and the note says so (it was ignored without a word)."""
    from reliability.ingest import read_pod_log

    p = tmp_path / "pod.jsonl"
    p.write_text(
        '{"event": "inventory", "time": "2025-01-01T00:00:00+00:00", "cluster": "tpuv4", '
        '"component_type": "machine", "component_id": "m0"}\n'
        '{"event": "inventory", "time": "2025-01-01T00:00:00+00:00", '
        '"component_type": "machine", "component_id": "m1"}\n',
        encoding="utf-8",
    )
    r = read_pod_log(p, cluster="mine")
    assert sorted(r.frames["inventory"].get_column("cluster")) == ["mine", "tpuv4"]
    assert any("cluster='mine' applies to the lines without a cluster" in n for n in r.notes)
    assert not any("applies to the lines" in n for n in read_pod_log(p).notes)


def test_simulate_pod_counts_the_jobs_the_logs_hold(tmp_path, capsys):
    """`simulate pod` printed every submitted job as a job (620 against 570 ingested on one
    run): those still queued at the end never started and are in no log. It says how many
    started, and that is the number of distinct jobs an ingest of its log finds."""
    import re

    from reliability import Dataset
    from reliability.cli import main

    out = tmp_path / "pod"
    assert main(["simulate", "pod", "--preset", "tpuv4", "--days", "20", "--seed", "3",
                 "--out", str(out)]) == 0  # fmt: skip
    text = capsys.readouterr().out
    m = re.search(r"jobs: ([\d,]+) submitted, ([\d,]+) started", text)
    assert m is not None, text
    submitted, started = (int(g.replace(",", "")) for g in m.groups())
    assert (
        main(["ingest", "pod", str(out / "pod_events.jsonl"), "--into", str(tmp_path / "ds")]) == 0
    )
    jobs = Dataset(tmp_path / "ds").jobs
    assert jobs["job_id"].n_unique() == started
    assert submitted >= started
