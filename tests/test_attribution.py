"""Attribution: evidence windows, Slurm's requeue semantics, CPU-only jobs.

Hand-made cases check each rule against the times they are built from; a brute-force
reference (plain Python loops over every event, no joins) checks the as-of-join machinery on
generated jobs, health events and node-state intervals, and a metamorphic property checks that
intervals outside an attempt never change its attribution.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from reliability import attribute_failures
from reliability.attribution import DOMAINS, attribution_quality
from reliability.reasons import ReasonRules
from reliability.taxonomy import FAILURE_DOMAINS, classify_slurm_reason

T0 = datetime(2026, 1, 1, tzinfo=UTC)
M = timedelta(minutes=1)
S = timedelta(seconds=1)


def _jobs(rows: list[dict]) -> pl.DataFrame:
    """Jobs frame: each row gives state, start, end (datetimes), nodes, and optionally
    exit_code / n_accelerators."""
    return pl.DataFrame(
        {
            "cluster": ["c"] * len(rows),
            "job_id": [str(i) for i in range(len(rows))],
            "attempt": [0] * len(rows),
            "state": [r["state"] for r in rows],
            "exit_code": [r.get("exit_code", 0) for r in rows],
            "start_time": [r["start"] for r in rows],
            "end_time": [r["end"] for r in rows],
            "nodes": [r["nodes"] for r in rows],
            "n_nodes": [len(r["nodes"]) for r in rows],
            "n_accelerators": [r.get("gpus", 8) for r in rows],
        },
        schema_overrides={
            "exit_code": pl.Int32,
            "attempt": pl.UInt16,
            "n_nodes": pl.UInt32,
            "n_accelerators": pl.UInt32,
            "start_time": pl.Datetime("us", "UTC"),
            "end_time": pl.Datetime("us", "UTC"),
        },
    )


def _health(rows: list[tuple]) -> pl.DataFrame:
    """Health events from (node, time, component, severity[, source, code])."""
    return pl.DataFrame(
        {
            "cluster": ["c"] * len(rows),
            "node": [r[0] for r in rows],
            "time": [r[1] for r in rows],
            "component": [r[2] for r in rows],
            "severity": [r[3] for r in rows],
            "source": [r[4] if len(r) > 4 else "kernel_log" for r in rows],
            "code": [r[5] if len(r) > 5 else "" for r in rows],
        },
        schema={"cluster": pl.String, "node": pl.String, "time": pl.Datetime("us", "UTC"),
                "component": pl.String, "severity": pl.String, "source": pl.String, "code": pl.String},
    )  # fmt: skip


def _states(rows: list[tuple]) -> pl.DataFrame:
    """Node-state intervals from (node, state, start, end, reason)."""
    return pl.DataFrame(
        {
            "cluster": ["c"] * len(rows),
            "node": [r[0] for r in rows],
            "state": [r[1] for r in rows],
            "start": [r[2] for r in rows],
            "end": [r[3] for r in rows],
            "reason": [r[4] for r in rows],
        },
        schema={"cluster": pl.String, "node": pl.String, "state": pl.String,
                "start": pl.Datetime("us", "UTC"), "end": pl.Datetime("us", "UTC"), "reason": pl.String},
    )  # fmt: skip


NO_STATES = _states([])


def _one(job: dict, health=None, states=NO_STATES, **kw) -> dict:
    out = attribute_failures(_jobs([job]), health_events=health, node_states=states, **kw)
    return out.select("failure_domain", "failure_cause", "culprit_node", "evidence").row(
        0, named=True
    )


# -- evidence windows ----------------------------------------------------------------------
def test_health_event_window_is_clipped_at_the_attempt_start():
    """[max(start, end - 10 min), end + 5 min]: an event 8 min before the end of a 5-minute
    attempt happened before it started and is not evidence; 4 min before is."""
    end = T0 + 60 * M
    short = {"state": "FAILED", "start": end - 5 * M, "end": end, "nodes": ["n1"]}
    before_start = _health([("n1", end - 8 * M, "gpu_memory", "critical")])
    inside = _health([("n1", end - 4 * M, "gpu_memory", "critical")])
    assert _one(short, before_start)["failure_domain"] == "user"
    assert _one(short, inside) == {"failure_domain": "hardware", "failure_cause": "gpu_memory",
                                   "culprit_node": "n1", "evidence": "health_event"}  # fmt: skip
    long = dict(short, start=end - 60 * M)
    assert _one(long, before_start)["culprit_node"] == "n1"
    # after the end: 5 min counts, 6 min does not
    assert (
        _one(long, _health([("n1", end + 5 * M, "nvlink", "critical")]))["failure_cause"]
        == "nvlink"
    )
    assert (
        _one(long, _health([("n1", end + 6 * M, "nvlink", "critical")]))["failure_domain"] == "user"
    )
    # a hardware warning counts only in the 3 minutes before the end (to 5 s after); the
    # application's own warnings (Xid 13, 31: component software) never
    assert (
        _one(long, _health([("n1", end - 2 * M, "gpu_memory", "warning")]))["failure_cause"]
        == "gpu_memory"
    )
    assert (
        _one(long, _health([("n1", end - 4 * M, "gpu_memory", "warning")]))["failure_domain"]
        == "user"
    )
    assert _one(long, _health([("n1", end + M, "nvlink", "warning")]))["failure_domain"] == "user"
    assert _one(long, _health([("n1", end - M, "software", "warning")]))["failure_domain"] == "user"
    # an event on another node is not evidence for this attempt
    assert _one(long, _health([("n2", end, "nvlink", "critical")]))["failure_domain"] == "user"


def test_node_state_that_ended_before_the_attempt_is_never_its_culprit():
    """The reported bug: a DOWN interval that ended minutes before an attempt began was named
    as its culprit. Also an interval still open from before the start is not evidence."""
    start, end = T0 + 20 * M, T0 + 22 * M
    job = {"state": "NODE_FAIL", "start": start, "end": end, "nodes": ["n1", "n2"]}
    ended_before = _states([("n1", "DOWN", start - 8 * M, start - 3 * M, "PSU failure")])
    assert _one(job, states=ended_before) == {"failure_domain": "hardware", "failure_cause": "unknown",
                                             "culprit_node": None, "evidence": "job_state"}  # fmt: skip
    open_before = _states([("n1", "DOWN", start - 1 * M, None, "PSU failure")])
    assert _one(job, states=open_before)["culprit_node"] is None
    # the node that goes DOWN at the attempt's end is the culprit, even beside a stale one
    at_end = _states(
        [("n1", "DOWN", start - 8 * M, start - 3 * M, "x"), ("n2", "DOWN", end, None, "x")]
    )
    assert _one(job, states=at_end)["culprit_node"] == "n2"


def test_node_state_change_after_the_end_is_not_evidence():
    """Run 1: an admin set node07 FAIL 21-29 s after user failures on it. A state change
    counts up to state_slack_s (5 s) after the end, not later."""
    start, end = T0, T0 + 10 * M
    job = {"state": "FAILED", "exit_code": 1, "start": start, "end": end, "nodes": ["n1"]}
    late = _states([("n1", "FAIL", end + 22 * S, end + 26 * S, "scontrol FAIL test")])
    assert _one(job, states=late)["failure_domain"] == "user"
    at_end = _states([("n1", "DOWN", end + 2 * S, None, "kernel panic")])
    assert _one(job, states=at_end) == {"failure_domain": "hardware", "failure_cause": "unknown",
                                        "culprit_node": "n1", "evidence": "node_state"}  # fmt: skip
    assert _one(job, states=late, state_slack_s=30)["culprit_node"] == "n1"


def test_failed_with_a_plain_drain_is_user():
    """DRAIN does not kill jobs: without a health event it does not explain a FAILED attempt."""
    job = {"state": "FAILED", "exit_code": 2, "start": T0, "end": T0 + M, "nodes": ["n1"]}
    assert (
        _one(job, states=_states([("n1", "DRAIN", T0 + M, None, "rack move")]))["failure_domain"]
        == "user"
    )


def test_health_event_beats_node_state_and_nearest_wins():
    end = T0 + 60 * M
    job = {"state": "NODE_FAIL", "start": T0, "end": end, "nodes": ["n1", "n2", "n3"]}
    he = _health(
        [("n3", end - 3 * M, "ib_link", "critical"), ("n2", end - 1 * M, "gpu", "critical")]
    )
    ns = _states([("n1", "DOWN", end, None, "x")])
    assert _one(job, he, ns)[("culprit_node")] == "n2"
    assert _one(job, he, ns)["failure_cause"] == "gpu"
    assert _one(job, None, ns)["culprit_node"] == "n1"


# -- Slurm semantics -------------------------------------------------------------------------
REQ = {"state": "REQUEUED", "start": T0, "end": T0 + 5 * M, "nodes": ["n1"]}


def test_admin_requeue_is_admin_when_node_history_is_known():
    """scontrol requeue: REQUEUED, exit 0, the node stays in service."""
    assert _one(REQ) == {"failure_domain": "admin", "failure_cause": None, "culprit_node": None,
                         "evidence": "job_state"}  # fmt: skip
    # without node-state history the requeue cannot be told from a health-check one
    assert _one(REQ, states=None) == {"failure_domain": "unknown", "failure_cause": "unknown",
                                      "culprit_node": None, "evidence": "job_state"}  # fmt: skip


def test_requeue_exit_codes_are_the_users():
    """RequeueExit / RequeueExitHold: the application asked to be requeued."""
    job = dict(REQ, exit_code=99)
    assert _one(job)["failure_domain"] == "admin"  # Slurm's default: no RequeueExit codes
    assert _one(job, requeue_exit_codes=[99, 100]) == {
        "failure_domain": "user", "failure_cause": None, "culprit_node": None, "evidence": "exit_code",
    }  # fmt: skip
    # a node set DOWN at the requeue does not override the application's own request...
    down = _states([("n1", "DOWN", job["end"], None, "x")])
    assert _one(job, states=down, requeue_exit_codes=[99])["failure_domain"] == "user"
    # ...nor does a critical health event: the requeue was the application's decision
    he = _health([("n1", job["end"] - M, "gpu", "critical")])
    assert _one(job, he, requeue_exit_codes=[99])["failure_domain"] == "user"
    assert _one(job, he)["culprit_node"] == "n1"  # without the code: a health-check requeue


def test_health_check_and_prolog_requeues_are_the_nodes():
    end = REQ["end"]
    # a health check's own wording names no component: an unclassified node fault, hardware
    # with cause unknown (issue 40: evidence first, words second)
    drain = _states([("n1", "DRAIN", end, None, "NHC: check_fs_mount failed")])
    assert _one(REQ, states=drain) == {"failure_domain": "hardware", "failure_cause": "unknown",
                                       "culprit_node": "n1", "evidence": "node_state"}  # fmt: skip
    prolog = _states([("n1", "DRAIN", end, end + 6 * S, "Prolog error")])
    assert _one(REQ, states=prolog) == {"failure_domain": "system_software", "failure_cause": "software",
                                        "culprit_node": "n1", "evidence": "node_state"}  # fmt: skip
    he = _health([("n1", end, "gpu_memory", "critical", "health_check", "ecc")])
    assert _one(REQ, he, drain)["failure_domain"] == "hardware"


def test_epilog_error_on_failed_attempt_is_the_nodes():
    job = {"state": "FAILED", "exit_code": 1, "start": T0, "end": T0 + M, "nodes": ["n1"]}
    ns = _states([("n1", "DRAIN", T0 + M + S, None, "Epilog error")])
    assert _one(job, states=ns)["failure_domain"] == "system_software"
    assert _one(job, states=ns)["culprit_node"] == "n1"


def test_an_epilog_error_after_a_drain_in_the_run_is_its_aftermath():
    """The epilog runs after the job: an ``Epilog error`` drain seconds after the end is a
    consequence of the fault that a health-check drain 3 s before the end recorded, not the
    cause; alone it still explains the failure (system_software, above)."""
    job = {"state": "FAILED", "exit_code": 1, "start": T0, "end": T0 + M, "nodes": ["n1", "n2"]}
    ns = _states([("n1", "DRAIN", T0 + M - 3 * S, None, "site check 17 failed"),
                  ("n2", "DRAIN", T0 + M + S, None, "Epilog error")])  # fmt: skip
    got = _one(job, states=ns)
    assert (got["failure_domain"], got["failure_cause"], got["culprit_node"]) == (
        "hardware",
        "unknown",
        "n1",
    )
    # a DOWN in the run still beats it; an aftermath still beats a hardware warning
    ns = _states([("n1", "DOWN", T0 + M - 9 * S, None, "Not responding"),
                  ("n2", "DRAIN", T0 + M, None, "Kill task failed")])  # fmt: skip
    assert _one(job, states=ns)["culprit_node"] == "n1"
    he = _health([("n1", T0 + M - S, "gpu", "warning", "kernel_log", "63")])
    ns = _states([("n2", "DRAIN", T0 + M + 2 * S, None, "Kill task failed")])
    got = _one(job, he, ns)
    assert (got["failure_domain"], got["culprit_node"]) == ("system_software", "n2")


def test_drain_reason_signal_is_evidence_of_its_component():
    """A drain reason like 'GPU ECC errors <xid 79> on gpu:1' becomes a health event
    (source slurm, code 79, component gpu, critical): attribution names the component and the
    node, even when the drain comes a minute after the crash."""
    end = T0 + 30 * M
    job = {"state": "FAILED", "exit_code": 1, "start": T0, "end": end, "nodes": ["n7", "n8"]}
    he = _health([("n8", end + M, "gpu", "critical", "slurm", "79")])
    ns = _states([("n8", "DRAIN", end + M, None, "GPU ECC errors <xid 79> on gpu:1")])
    assert _one(job, he, ns) == {"failure_domain": "hardware", "failure_cause": "gpu",
                                 "culprit_node": "n8", "evidence": "health_event"}  # fmt: skip


def test_preempted_resizing_and_other_states():
    base = {"start": T0, "end": T0 + M, "nodes": ["n1"]}
    down = _states([("n1", "DOWN", T0 + M, None, "x")])
    for state, want in [("PREEMPTED", "preemption"), ("RESIZING", "none"), ("COMPLETED", "none"),
                        ("TIMEOUT", "user"), ("CANCELLED", "user"), ("OUT_OF_MEMORY", "user")]:  # fmt: skip
        got = _one(dict(base, state=state), states=down)
        assert got["failure_domain"] == want, state
        assert got["culprit_node"] is None, state


def test_cpu_only_jobs_are_their_own_class():
    jobs = _jobs([
        {"state": "NODE_FAIL", "start": T0, "end": T0 + M, "nodes": ["n1"], "gpus": 0},
        {"state": "NODE_FAIL", "start": T0, "end": T0 + M, "nodes": ["n2"], "gpus": 1},
        {"state": "COMPLETED", "start": T0, "end": T0 + M, "nodes": ["n3"], "gpus": 8},
    ])  # fmt: skip
    out = attribute_failures(jobs, health_events=None, node_states=NO_STATES)
    assert out["resource_class"].to_list() == ["cpu_only", "accelerator", "accelerator"]
    assert out["n_accelerators"].to_list() == [0, 1, 8]  # never coerced


def test_parameters_are_checked():
    with pytest.raises(ValueError, match="requeue_exit_codes"):
        attribute_failures(_jobs([REQ]), requeue_exit_codes=[256])
    with pytest.raises(ValueError, match="requeue_exit_codes"):
        attribute_failures(_jobs([REQ]), requeue_exit_codes=["99"])
    with pytest.raises(ValueError, match="before_min"):
        attribute_failures(_jobs([REQ]), before_min=-1)


def test_domains_and_slurm_reasons():
    assert set(DOMAINS) == set(FAILURE_DOMAINS) >= {"admin", "user", "hardware", "none"}
    assert classify_slurm_reason("Prolog error").domain == "software"
    assert classify_slurm_reason("Kill task failed").component == "software"
    assert (
        classify_slurm_reason(
            "Low RealMemory (reported:2000 < 100.00% of configured:4000)"
        ).component
        == "dimm"
    )
    for free_text in ("Not responding", "PSU failure (test)", "", None, "my prolog error note"):
        assert classify_slurm_reason(free_text) is None


# -- brute-force reference and properties ---------------------------------------------------
FAULT = ("DOWN", "FAIL", "REPAIR")


def _reference(jobs, he, ns, before_min=10.0, after_min=5.0, slack_s=5.0, codes=()):
    """The documented rules as plain loops over every event (no joins): (domain, culprit)."""
    before, after, slack = (
        timedelta(minutes=before_min),
        timedelta(minutes=after_min),
        timedelta(seconds=slack_s),
    )
    out = []
    failing_ends: dict[str, list] = {}
    # (the rows read once, the rules built once: the loops below are the rules as written)
    job_rows, he_rows, ns_rows = (list(f.iter_rows(named=True)) for f in (jobs, he, ns))
    rules = ReasonRules()
    for o in job_rows:
        if o["end_time"] is not None and o["state"] in (
            "FAILED",
            "NODE_FAIL",
            "REQUEUED",
            "BOOT_FAIL",
            "LAUNCH_FAILED",
        ):
            for n in o["nodes"]:
                failing_ends.setdefault(n, []).append(o["end_time"])
    for j in job_rows:
        state, start, end = j["state"], j["start_time"], j["end_time"]
        cands = []
        if (
            state in ("FAILED", "NODE_FAIL", "REQUEUED", "BOOT_FAIL", "LAUNCH_FAILED")
            and end is not None
        ):
            lo = end - before if start is None else max(start, end - before)
            for e in he_rows:
                if (
                    e["node"] in j["nodes"]
                    and e["severity"] == "critical"
                    and lo <= e["time"] <= end + after
                ):
                    comp = e["component"]
                    dom = {
                        "filesystem": "infrastructure",
                        "software": "system_software",
                        "unknown": "unknown",
                    }.get(comp, "hardware")
                    cands.append((0, abs(e["time"] - end), e["node"], comp == "unknown", comp, dom))
            # a hardware warning in the 3 minutes before the end (to the clock slack after)
            warn_lo = (
                end - timedelta(minutes=3)
                if start is None
                else max(start, end - timedelta(minutes=3))
            )
            for e in he_rows:
                if (e["node"] in j["nodes"] and e["severity"] == "warning"
                        and e["component"] not in ("software", "filesystem", "unknown")
                        and warn_lo <= e["time"] <= end + slack):  # fmt: skip
                    cands.append(
                        (4, abs(e["time"] - end), e["node"], False, e["component"], "hardware")
                    )
            for s in ns_rows:
                # a drain (recorded when the node became DRAINED) and a reboot (recorded when
                # slurmd came back) also count up to 120 s after the end, for every failing
                # attempt on the node in the 120 s before them, each by the first such record
                # of its kind after its end (an administrator's only within 5 s); anything
                # else 5 s
                def is_late(r):
                    return r["state"] == "DRAIN" or str(r["reason"]).lower().startswith(
                        "node unexpectedly rebooted"
                    )

                def kind_of(r, state=state):
                    """(kind, component, domain) of a state change as evidence, or None."""
                    if r["state"] not in (*FAULT, "DRAIN"):
                        return None
                    # evidence first: the change is a fault unless its reason is an
                    # administrator's (then it explains only states an admin can cause)
                    c = rules.classify(r["reason"], r.get("user"))
                    if c["reason_class"] == "administrative":
                        if state not in ("NODE_FAIL", "REQUEUED", "BOOT_FAIL"):
                            return None
                        return 5, "none", "admin"
                    if c["domain"] == "user":
                        return None
                    if r["state"] in FAULT or c["reason_class"] in ("signal", "slurm"):
                        # Slurm sets these because a job ended: weaker than a drain in the run
                        aftermath = (
                            str(r["reason"])
                            .lower()
                            .startswith(
                                ("epilog error", "kill task failed", "batch job complete failure")
                            )
                        )
                        comp, dom = c["component"] or "unknown", c["domain"] or "hardware"
                        return (3 if aftermath else 1), comp, dom
                    return 2, "unknown", "hardware"

                k = kind_of(s)
                if s["node"] not in j["nodes"] or k is None:
                    continue
                first = min(
                    (r["start"] for r in ns_rows
                     if r["node"] == s["node"] and is_late(r) and (kind_of(r) or (None,))[0] == k[0]
                     and end <= r["start"] <= end + timedelta(seconds=120)),
                    default=None,
                )  # fmt: skip
                in_window = lo <= s["start"] <= end + slack
                # ... unless an attempt started on the node between the end and the record
                restarted = any(
                    o["start_time"] is not None and s["node"] in o["nodes"]
                    and end < o["start_time"] <= s["start"]
                    for o in job_rows
                )  # fmt: skip
                after_fact = is_late(s) and first == s["start"] and k[0] != 5 and not restarted
                if in_window or after_fact:
                    kind, comp, dom = k
                    cands.append(
                        (kind, abs(s["start"] - end), s["node"], comp == "unknown", comp, dom)
                    )
        best = min(cands) if cands else None
        kind = best[0] if best else None
        if state in ("COMPLETED", "RUNNING", "PENDING", "SUSPENDED", "RESIZING"):
            dom = "none"
        elif state == "PREEMPTED":
            dom = "preemption"
        elif state in ("NODE_FAIL", "BOOT_FAIL"):
            dom = best[5] if best else "hardware"
        elif state in ("FAILED", "LAUNCH_FAILED"):
            dom = best[5] if kind in (0, 1, 2, 3, 4) else "user"
        elif state == "REQUEUED":
            dom = "user" if j["exit_code"] in codes else (best[5] if best else "admin")
        else:
            dom = "user"
        failing = dom in ("hardware", "infrastructure", "system_software", "unknown")
        out.append((dom, best[2] if failing and best else None))
    return out  # fmt: skip


def _random_case(rng: np.random.Generator, n_jobs: int, n_nodes: int, n_events: int):
    nodes = [f"n{i}" for i in range(n_nodes)]
    states = ["FAILED", "NODE_FAIL", "REQUEUED", "COMPLETED", "PREEMPTED", "TIMEOUT"]
    rows = []
    for _ in range(n_jobs):
        start = T0 + int(rng.integers(0, 600)) * M
        end = start + int(rng.integers(0, 40 * 60)) * S
        k = int(rng.integers(1, min(3, n_nodes) + 1))
        rows.append({"state": states[rng.integers(len(states))], "start": start, "end": end,
                     "nodes": list(rng.choice(nodes, k, replace=False)),
                     "exit_code": int(rng.choice([0, 1, 99]))})  # fmt: skip
    jobs = _jobs(rows)

    # events land on the minute grid or a few seconds off it, so windows' edges are hit
    def t():
        return T0 + int(rng.integers(-30, 680)) * M + int(rng.choice([0, 0, 1, 4, 5, 6, 30])) * S

    he = _health([(nodes[rng.integers(n_nodes)], t(), str(rng.choice(["gpu", "filesystem", "software", "unknown"])),
                   str(rng.choice(["critical", "warning"]))) for _ in range(n_events)])  # fmt: skip
    ns_rows = []
    for _ in range(n_events):
        s = t()
        e = None if rng.random() < 0.3 else s + int(rng.integers(0, 120)) * M
        ns_rows.append((nodes[rng.integers(n_nodes)], str(rng.choice(["DOWN", "DRAIN", "FAIL", "MAINT"])), s, e,
                        str(rng.choice(["Prolog error", "kernel panic", "Not responding", "Kill task failed", "Epilog error",
                                        "maintenance window", "NHC: check_hw failed", "PSU redundancy lost",
                                        "Xid 13", "reboot for upgrade"]))))  # fmt: skip
    return jobs, he, _states(ns_rows)


# one seed in the fast tier; all six (5-9 s each) in the full suite
@pytest.mark.parametrize(
    "seed", [0, *(pytest.param(s, marks=pytest.mark.slow) for s in range(1, 6))]
)
def test_matches_brute_force_reference(seed):
    rng = np.random.default_rng(seed)
    jobs, he, ns = _random_case(rng, n_jobs=150, n_nodes=6, n_events=120)
    got = attribute_failures(jobs, health_events=he, node_states=ns, requeue_exit_codes=[99])
    want = _reference(jobs, he, ns, codes=(99,))
    assert list(zip(got["failure_domain"], got["culprit_node"], strict=True)) == want
    lazy = attribute_failures(
        jobs, health_events=he, node_states=ns, requeue_exit_codes=[99], lazy=True
    )
    assert_frame_equal(lazy.collect(), got)


def _outside(job: dict, rng: np.random.Generator) -> tuple[list, list]:
    """Evidence on the job's own nodes that lies outside its windows: intervals that ended
    before it started or began before its start, changes after end + slack, health events
    before its start or after end + 5 min."""
    start, end, node = job["start"], job["end"], job["nodes"][0]
    gap = timedelta(seconds=int(rng.integers(1, 3600)))
    states = [(node, "DOWN", start - gap - M, start - gap, "x"), (node, "DRAIN", start - gap, None, "Prolog error"),
              (node, "FAIL", end + 6 * S + gap, None, "x")]  # fmt: skip
    health = [(node, start - gap, "gpu", "critical"), (node, end + 5 * M + gap, "gpu", "critical")]
    return states, health


@settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 12))
def test_no_culprit_from_outside_the_attempt(seed, n):
    """Adding evidence outside every attempt's windows never changes the attribution, and
    every culprit is one of the attempt's own nodes."""
    rng = np.random.default_rng(seed)
    jobs, he, ns = _random_case(rng, n_jobs=n, n_nodes=4, n_events=int(rng.integers(0, 10)))
    base = attribute_failures(jobs, health_events=he, node_states=ns)
    extra_s, extra_h = [], []
    for row in jobs.iter_rows(named=True):
        if row["state"] in ("FAILED", "NODE_FAIL", "REQUEUED"):
            s, h = _outside(
                {"start": row["start_time"], "end": row["end_time"], "nodes": row["nodes"]}, rng
            )
            extra_s += s
            extra_h += h

    # only evidence that is outside every attempt on that node (others may legitimately see it)
    def outside_all(node, t, lo_pad, hi_pad):
        for r in jobs.filter(pl.col("nodes").list.contains(node)).iter_rows(named=True):
            if max(r["start_time"], r["end_time"] - lo_pad) <= t <= r["end_time"] + hi_pad:
                return False
        return True

    extra_s = [
        x for x in extra_s if outside_all(x[0], x[2], 10 * M, 120 * S if x[1] == "DRAIN" else 5 * S)
    ]
    extra_h = [x for x in extra_h if outside_all(x[0], x[1], 10 * M, 5 * M)]
    more = attribute_failures(
        jobs, health_events=pl.concat([he, _health(extra_h)]) if extra_h else he,
        node_states=pl.concat([ns, _states(extra_s)]) if extra_s else ns,
    )  # fmt: skip
    assert_frame_equal(more, base)
    for nodes, culprit in zip(base["nodes"], base["culprit_node"], strict=True):
        assert culprit is None or culprit in nodes


def test_attribution_quality_counts_and_undefined_values():
    """Against a truth table built here: 3 flagged attempts of which 2 are true failures,
    1 true failure missed; nothing flagged gives None, not nan."""
    att = pl.DataFrame({"job_id": ["1", "2", "3", "4", "5"], "attempt": [0] * 5,
                        "failure_domain": ["hardware", "infrastructure", "hardware", "user", "none"]})  # fmt: skip
    truth = pl.DataFrame({"job_id": ["1", "2", "3", "4", "5"], "attempt": [0] * 5,
                          "hardware": [True, True, False, True, False]})  # fmt: skip
    q = attribution_quality(att, truth)
    assert (q["true_positives"], q["false_positives"], q["false_negatives"]) == (2, 1, 1)
    assert q["precision"] == pytest.approx(2 / 3)
    assert q["recall"] == pytest.approx(2 / 3)
    none = attribution_quality(
        att.with_columns(failure_domain=pl.lit("user")), truth.with_columns(hardware=pl.lit(False))
    )
    assert none["precision"] is None
    assert none["recall"] is None


# -- evidence first, words second (issue 40) ------------------------------------------------
def _with_user(rows: list[tuple]) -> pl.DataFrame:
    """Node-state intervals from (node, state, start, end, reason, user)."""
    return _states([r[:5] for r in rows]).with_columns(user=pl.Series([r[5] for r in rows]))


FAILED_JOB = {
    "state": "FAILED",
    "exit_code": 1,
    "start": T0,
    "end": T0 + 30 * M,
    "nodes": ["n1", "n2"],
}


@pytest.mark.parametrize(
    "reason",
    ["NHC: check_hw_gpu failed", "node unhealthy - see ops", "see ticket 4711", None,
     "HC: sel_check rc=2", "vendor-diag: code 0x3f"],
)  # fmt: skip
def test_a_drain_at_the_failure_with_an_unclassified_reason_is_hardware(reason):
    """A FAILED attempt whose node is drained at the same second, the reason naming no signal
    the taxonomy knows: an unclassified node fault (hardware, cause unknown, the node is the
    culprit). It was 'user' before: a fifth of hardware failures on other fleets."""
    end = FAILED_JOB["end"]
    ns = _with_user([("n2", "DRAIN", end, None, reason, "root(0)")])
    got = attribute_failures(_jobs([FAILED_JOB]), health_events=None, node_states=ns).row(
        0, named=True
    )
    assert (got["failure_domain"], got["failure_cause"], got["culprit_node"]) == (
        "hardware",
        "unknown",
        "n2",
    )
    assert got["reason_class"] == "unclassified"
    assert got["evidence_reason"] == reason


@pytest.mark.parametrize(
    ("reason", "user"),
    [("maintenance window 2025-03-04", "root(0)"), ("reboot for kernel upgrade", "root(0)"),
     ("RESV: benchmark", "root(0)"), ("checking something", "jsmith(1203)")],
)  # fmt: skip
def test_an_administrators_drain_is_not_evidence(reason, user):
    end = FAILED_JOB["end"]
    ns = _with_user([("n2", "DRAIN", end, None, reason, user)])
    assert _one(FAILED_JOB, states=ns)["failure_domain"] == "user"
    # a DOWN set by an administrator ends the jobs NODE_FAIL: the administrator's doing
    nf = dict(FAILED_JOB, state="NODE_FAIL")
    down = _with_user([("n2", "DOWN", end, None, reason, user)])
    got = attribute_failures(_jobs([nf]), health_events=None, node_states=down).row(0, named=True)
    assert (got["failure_domain"], got["culprit_node"], got["reason_class"]) == (
        "admin",
        None,
        "administrative",
    )


def test_a_component_named_in_the_reason_is_the_cause():
    end = FAILED_JOB["end"]
    for reason, comp in [("PSU redundancy lost", "psu"), ("IB port down mlx5_0", "ib_link"),
                         ("maintenance: bad DIMM", "dimm")]:  # fmt: skip
        ns = _with_user([("n1", "DRAIN", end - 2 * M, None, reason, "root(0)")])
        assert _one(FAILED_JOB, states=ns) == {"failure_domain": "hardware", "failure_cause": comp,
                                               "culprit_node": "n1", "evidence": "node_state"}  # fmt: skip


def test_the_rule_that_separates_an_admins_later_fail_from_a_cause():
    """Run 1's lesson, as a rule: a node-state change counts only when it begins by the
    attempt's end plus the clock slack (5 s); an administrator's FAIL 21 s after a user's
    failure (run 1, node07) is after the end and explains nothing, whatever its reason. The
    same change at the end is evidence."""
    end = FAILED_JOB["end"]
    later = _with_user([("n1", "FAIL", end + 21 * S, None, "scontrol FAIL test", "root(0)")])
    assert _one(FAILED_JOB, states=later)["failure_domain"] == "user"
    at_end = _with_user([("n1", "FAIL", end, None, "scontrol FAIL test", "root(0)")])
    assert _one(FAILED_JOB, states=at_end)["failure_domain"] == "hardware"


def test_a_drain_recorded_after_a_burst_explains_every_attempt_it_ended():
    """A health check kills the three jobs sharing a node (ends at +0, +1 and +10 s); Slurm
    records the DRAIN when the node became DRAINED, at the last end. All three are the node's
    (generator A's shared nodes: only the last was, before). A failure 3 minutes earlier is
    outside the 120 s and stays the user's; a DOWN 10 s after an end still explains nothing
    (a DOWN takes effect at once)."""
    end = T0 + 3 * 60 * M
    jobs = [{"state": "FAILED", "exit_code": 1, "start": T0 + i * M, "end": end + d * S,
             "nodes": ["n1"]} for i, d in enumerate((-180, 0, 1))]  # fmt: skip
    jobs.append({"state": "REQUEUED", "exit_code": 0, "start": T0, "end": end + 10 * S,
                 "nodes": ["n1"]})  # fmt: skip
    ns = _states([("n1", "DRAIN", end + 10 * S, None, "hc: check 17 failed")])
    got = attribute_failures(_jobs(jobs), node_states=ns)
    assert got["failure_domain"].to_list() == ["user", "hardware", "hardware", "hardware"]
    assert got["culprit_node"].to_list() == [None, "n1", "n1", "n1"]
    down = _states([("n1", "DOWN", end + 10 * S, None, "hc: check 17 failed")])
    got = attribute_failures(_jobs(jobs), node_states=down)
    assert got["failure_domain"].to_list() == ["user", "user", "user", "hardware"]


def test_a_drain_after_the_next_job_started_does_not_explain_the_failure_before_it():
    """Real Slurm (tests/test_collect_live.py): an admin requeue on n2, the next job started
    on n2 and its prolog failed 40 s later (DRAIN "Prolog error" at that requeue). The node
    ran a new job in between: the drain explains the prolog requeue, not the admin's."""
    t = T0 + 60 * M
    jobs = [{"state": "REQUEUED", "exit_code": 0, "start": T0, "end": t, "nodes": ["n2"]},
            {"state": "REQUEUED", "exit_code": 0, "start": t + 38 * S, "end": t + 40 * S,
             "nodes": ["n2"]}]  # fmt: skip
    ns = _states([("n2", "DRAIN", t + 40 * S, None, "Prolog error")])
    got = attribute_failures(_jobs(jobs), node_states=ns)
    assert got["failure_domain"].to_list() == ["admin", "system_software"]
    assert got["culprit_node"].to_list() == [None, "n2"]
    # the same two ends without the second start (a third job's, on another node): a burst
    jobs[1]["nodes"] = ["n3"]
    jobs.append({"state": "FAILED", "exit_code": 1, "start": T0, "end": t + 30 * S,
                 "nodes": ["n2"]})  # fmt: skip
    got = attribute_failures(_jobs(jobs), node_states=ns)
    assert got["failure_domain"].to_list() == ["system_software", "admin", "system_software"]


def test_operators_extend_the_reason_rules():
    """A site whose health check writes 'HC-OK-DRAIN' for planned drains marks it
    administrative; one whose vendor tool writes 'xgmi' names the GPU."""
    end = FAILED_JOB["end"]
    rules = ReasonRules().extended(admin=[r"^HC-OK-DRAIN"], components={"nvlink": [r"\bxgmi\b"]})
    planned = _with_user([("n1", "DRAIN", end, None, "HC-OK-DRAIN: quarterly", "root(0)")])
    assert _one(FAILED_JOB, states=planned)["failure_domain"] == "hardware"  # built-in: a fault
    assert _one(FAILED_JOB, states=planned, reasons=rules)["failure_domain"] == "user"
    xgmi = _with_user([("n1", "DRAIN", end, None, "xgmi link errors", "root(0)")])
    assert _one(FAILED_JOB, states=xgmi, reasons=rules)["failure_cause"] == "nvlink"
    with pytest.raises(Exception, match="not a regular expression"):
        ReasonRules().extended(admin=["(unclosed"])
    with pytest.raises(Exception, match="unknown component 'psuu'"):
        ReasonRules().extended(components={"psuu": ["x"]})


@pytest.mark.parametrize("gap", [0, 30], ids=["same-time", "either-side"])
def test_tied_evidence_does_not_depend_on_row_order(gap):
    """Two drains of the failing node tie (the same time, or as far before the end as after
    it) and name different reasons: the reason kept does not depend on the order the rows
    come in (two clusters with the same history got different reasons in one run, and a Dask
    run one cluster per task another)."""
    end = T0 + 60 * M
    jobs = _jobs([{"state": "NODE_FAIL", "start": T0, "end": end, "nodes": ["n1", "n2"]}])
    first = ("n1", "DOWN", end - gap * S, end + 9 * M, "NHC: check_gpu failed")
    second = ("n1", "DOWN", end + gap * S, end + 9 * M, "Kernel health check failed")
    kept = set()
    for rows in ([first, second], [second, first]):
        out = attribute_failures(jobs, node_states=_states(rows))
        kept.add(out.select("evidence_reason", "failure_cause", "culprit_node").row(0))
    assert len(kept) == 1
    assert next(iter(kept))[2] == "n1"
