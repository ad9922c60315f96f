"""The independent history generators (``tests/generators``): determinism, readability by the
package (zero quarantined rows, the jobs table is exactly the generated attempts), and a truth
that agrees with itself and with the failure law.

These tests check the generators, not the package's inference (attribution accuracy, r_f):
that is what the generators are for.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from generators import (
    SITE_A_VOCABULARY,
    SITE_B_VOCABULARY,
    History,
    Vocabulary,
    generate_a,
    generate_b,
)
from generators._common import EVENT_FIELDS, SACCT_FIELDS, HazardClock, compress_hostlist

from reliability import Dataset, hostlist
from reliability.ingest.sacct.fields import EXPORT_FIELDS, SACCTMGR_EVENTS_FORMAT

GEN = {"a": generate_a, "b": generate_b}
SMALL = {"n_nodes": 96, "days": 28}
#: reasons Slurm sets itself (not from a site's vocabulary)
SLURM_OWN = {"Not responding", "Prolog error", "Kill task failed", "Epilog error",
             "Node unexpectedly rebooted", "Cluster Registered TRES"}  # fmt: skip


@pytest.fixture(scope="module", params=["a", "b"])
def history(request, tmp_path_factory) -> History:
    """One small history of each generator, shared by the tests of this module."""
    out = tmp_path_factory.mktemp(f"gen_{request.param}")
    return GEN[request.param](out, seed=11, **SMALL)


@pytest.fixture(scope="module")
def ingested(history, tmp_path_factory) -> tuple[History, Dataset, list]:
    ds = Dataset(tmp_path_factory.mktemp("ds"))
    outcomes = history.ingest(ds)
    return history, ds, outcomes


def _files(h: History) -> dict[str, bytes]:
    paths = [h.sacct, h.events, *h.kernel]
    return {str(p.relative_to(h.out_dir)): p.read_bytes() for p in paths}


def test_formats_are_the_packages_documented_exports():
    assert SACCT_FIELDS == EXPORT_FIELDS
    assert ",".join(EVENT_FIELDS) == SACCTMGR_EVENTS_FORMAT


def test_hostlists_round_trip_through_the_package():
    names = ["gpu-a0001", "gpu-a0002", "gpu-a0003", "gpu-a0007", "r01n09", "r01n10", "r03n01"]
    text = compress_hostlist(names)
    assert text == "gpu-a[0001-0003,0007],r01n[09-10],r03n01"
    assert sorted(hostlist.expand(text)) == sorted(names)
    assert compress_hostlist([]) == "None assigned"


@pytest.mark.parametrize("which", ["a", "b"])
def test_same_seed_same_files_byte_for_byte(which, tmp_path):
    kw = {"n_nodes": 64, "days": 14}
    h1 = GEN[which](tmp_path / "one", seed=5, **kw)
    h2 = GEN[which](tmp_path / "two", seed=5, **kw)
    h3 = GEN[which](tmp_path / "three", seed=6, **kw)
    assert _files(h1) == _files(h2)
    for name in ("attempts", "nodes", "failures", "weeks", "node_events"):
        assert getattr(h1, name).equals(getattr(h2, name)), name
        t1 = (h1.out_dir / "truth" / f"{name}.parquet").read_bytes()
        assert t1 == (h2.out_dir / "truth" / f"{name}.parquet").read_bytes(), name
    assert h1.sacct.read_bytes() != h3.sacct.read_bytes()


def test_ingests_with_nothing_quarantined(ingested):
    _h, ds, outcomes = ingested
    assert outcomes, "nothing ingested"
    for o in outcomes:
        assert o.rows_quarantined == 0, (o.path, o.notes)
        assert o.rows_read == o.rows_kept
    assert ds.quarantine.height == 0
    # no note says the export looks incomplete (e.g. made without --duplicates)
    assert not [n for o in outcomes for n in o.notes if "--duplicates" in n]


def test_jobs_table_is_exactly_the_generated_attempts(ingested):
    h, ds, _ = ingested
    jobs = ds.jobs
    truth = h.attempts
    assert jobs.height == truth.height
    both = truth.join(jobs, on=["job_id", "attempt"], how="full", suffix="_pkg", coalesce=True)
    assert both.filter(pl.col("state").is_null() | pl.col("state_pkg").is_null()).height == 0
    diff = both.filter(
        pl.col("state").ne_missing(pl.col("state_pkg").cast(pl.String))
        | pl.col("submit_time").ne_missing(pl.col("submit_time_pkg"))
        | pl.col("start_time").ne_missing(pl.col("start_time_pkg"))
        | pl.col("end_time").ne_missing(pl.col("end_time_pkg"))
        | pl.col("nodes").ne_missing(pl.col("nodes_pkg"))
        | pl.col("n_gpus").cast(pl.Int64).ne_missing(pl.col("n_accelerators").cast(pl.Int64))
        | pl.col("n_nodes").cast(pl.Int64).ne_missing(pl.col("n_nodes_pkg").cast(pl.Int64))
    )
    assert diff.height == 0, diff.head(5)
    assert (
        truth.group_by("state")
        .len()
        .sort("state")
        .equals(jobs.group_by(pl.col("state").cast(pl.String)).len().sort("state"))
    )


def test_node_states_and_kernel_events_are_all_read(ingested):
    h, ds, _ = ingested
    assert ds.node_states.height == h.node_events.height
    xid_lines = sum(len(re.findall(r"NVRM: Xid \(PCI:", p.read_text())) for p in h.kernel)
    # one event per Xid line ("fallen off the bus" lines repeat an Xid 79 a second earlier)
    assert ds.health_events.filter(pl.col("source") == "kernel_log").height == xid_lines > 0
    # every Xid failure that ended a job left its Xid on the culprit node at the failure time
    xf = h.failures.filter((pl.col("mechanism") == "xid") & pl.col("hit_job") & pl.col("in_window"))
    ke = ds.health_events.filter(pl.col("source") == "kernel_log").select(
        "node", "time", pl.col("code").cast(pl.Int64).alias("xid")
    )
    assert xf.join(ke, on=["node", "time", "xid"], how="anti").height == 0


def test_each_generator_emits_every_ending_it_promises(history):
    h = history
    states = set(h.attempts["state"])
    text = h.sacct.read_text()
    assert {"COMPLETED", "FAILED", "NODE_FAIL", "TIMEOUT", "CANCELLED", "OUT_OF_MEMORY",
            "RUNNING", "PENDING"} <= states  # fmt: skip
    if h.generator == "A":
        assert {"REQUEUED", "PREEMPTED"} <= states
        # --requeue: a NODE_FAIL attempt followed by another attempt of the same JobID
        nf = h.attempts.filter(pl.col("state") == "NODE_FAIL").select("job_id", "attempt")
        assert (
            nf.with_columns(pl.col("attempt") + 1).join(h.attempts, on=["job_id", "attempt"]).height
        )
        assert ".batch|batch|" in text
        assert ".extern|extern|" in text
        assert re.search(r"\|CANCELLED by \d+\|0:0\|\d+\|None\|\d+\|", text)  # cancelled pending
        assert h.tz is None  # epoch seconds
        assert h.nodes["node"][0] == "gpu-a0001"
        assert h.gpus_per_node == 8
    else:
        assert h.attempts["attempt"].max() == 0  # no requeue: every attempt has its own JobID
        assert h.attempts.filter(pl.col("job_id").str.contains(r"^\d+_\d+$")).height > 0
        resub = h.attempts.filter(pl.col("resubmit_of").is_not_null())
        assert resub.height > 0
        orig = resub.join(
            h.attempts.select("job_id", pl.col("name").alias("orig_name")),
            left_on="resubmit_of", right_on="job_id",
        )  # fmt: skip
        assert (orig["name"] == orig["orig_name"]).all()
        assert ".batch" not in text
        assert h.tz is not None
        assert re.search(r"\|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\|", text)
        assert re.fullmatch(r"r\d\dn\d\d", h.nodes["node"][0])
        assert h.gpus_per_node == 4


def test_truth_is_self_consistent(history):
    h = history
    a = h.attempts
    obs = pl.lit(h.end)
    hw = a.filter("hardware")
    assert hw.height > 0
    assert hw["failure_id"].null_count() == 0
    f = h.failures.select(
        "failure_id", pl.col("node").alias("f_node"), pl.col("time").alias("f_time"),
        pl.col("mechanism").alias("f_mech"), pl.col("cause").alias("f_cause"),
    )  # fmt: skip
    j = hw.join(f, on="failure_id")
    assert j.height == hw.height
    assert (j["culprit_node"] == j["f_node"]).all()
    assert (j["mechanism"] == j["f_mech"]).all()
    assert (j["cause"] == j["f_cause"]).all()
    assert j.filter(~pl.col("nodes").list.contains(pl.col("f_node"))).height == 0
    lag = (pl.col("end_time") - pl.col("f_time")).dt.total_seconds()
    assert j.filter((pl.col("f_time") < pl.col("start_time")) | (lag < 0) | (lag > 300)).height == 0
    states = dict(j.group_by("mechanism").agg(pl.col("state").unique()).iter_rows())
    assert set(states.get("not_responding", [])) <= {"NODE_FAIL"}
    assert set(states.get("xid", [])) | set(states.get("silent", [])) <= {"FAILED"}
    assert set(states.get("health_check", [])) <= {"FAILED", "REQUEUED"}
    # the failures' own count of the attempts they ended agrees
    assert h.failures["attempts_hit_in_export"].sum() == hw.height
    # no attempt outlives a failure on one of its nodes (it ends within the mechanism's delay)
    ran = a.filter(pl.col("start_time").is_not_null()).with_columns(
        stop=pl.col("end_time").fill_null(obs)
    )
    hit = (
        ran.explode("nodes")
        .join(f, left_on="nodes", right_on="f_node")
        .filter((pl.col("f_time") > pl.col("start_time")) & (pl.col("f_time") < pl.col("stop")))
    )
    survivors = hit.filter(
        ~pl.col("hardware") & ((pl.col("stop") - pl.col("f_time")).dt.total_seconds() > 300)
    )
    assert survivors.height == 0, survivors.head()
    # exposure and hazard: zero without a start, positive with one
    assert a.filter(pl.col("start_time").is_null() & (pl.col("node_days") != 0)).height == 0
    assert (a["true_hazard"] >= 0).all()
    # node-state intervals: no overlaps per node, hardware ones point at a failure at or before
    ev = h.node_events.sort("node", "start")
    nxt = ev.with_columns(next_start=pl.col("start").shift(-1).over("node"))
    assert nxt.filter(pl.col("end").is_null() & pl.col("next_start").is_not_null()).height == 0
    assert nxt.filter(pl.col("end") > pl.col("next_start")).height == 0
    hwev = ev.filter(pl.col("kind") == "hardware").join(f, on="failure_id")
    assert hwev.filter(pl.col("start") < pl.col("f_time")).height == 0
    assert hwev.filter(pl.col("node") != pl.col("f_node")).height == 0
    assert ev.filter((pl.col("kind") == "admin") & pl.col("failure_id").is_not_null()).height == 0
    # lemons exist as asked and are the nodes with the larger rates
    nodes = h.nodes
    assert nodes["is_lemon"].sum() == h.config["n_lemons"]
    if h.config["n_lemons"]:
        lemon_min = nodes.filter("is_lemon")["base_rate_per_day"].min()
        assert lemon_min > nodes.filter(~pl.col("is_lemon"))["base_rate_per_day"].median()


@pytest.mark.parametrize("which", ["a", "b"])
def test_constant_rate_hazard_and_counts(which, tmp_path):
    base = 20.0
    h = GEN[which](tmp_path, seed=21, n_nodes=128, days=42, base_rate_per_1000_node_days=base,
                   weekly_swing=0.0, trend=1.0, n_lemons=0, node_spread=0.0)  # fmt: skip
    a = h.attempts
    # the true r_f of any subset is the base rate exactly
    assert h.true_rate() == pytest.approx(base / 1000, rel=1e-9)
    big = a.filter(pl.col("n_nodes") >= 4)
    assert h.true_rate(big) == pytest.approx(base / 1000, rel=1e-9)
    # failures: Poisson with mean rate x time in service (the clock stops during repairs)
    f = h.failures
    span_days = (h.end - _sim_start(h)).total_seconds() / 86400
    out = (
        f.with_columns(d=(pl.min_horizontal(pl.col("outage_end"), pl.lit(h.end)) - pl.col("time")))
        .get_column("d")
        .dt.total_seconds()
        .sum()
        / 86400
    )
    mean = base / 1000 * (128 * span_days - out)
    assert abs(f.height - mean) < 4.5 * math.sqrt(mean), (f.height, mean)
    # hardware-ended attempts: about the summed hazard (sub-node jobs share a failure: loose)
    hz = a["true_hazard"].sum()
    assert abs(a["hardware"].sum() - hz) < 5 * math.sqrt(hz) + 5, (a["hardware"].sum(), hz)


def _sim_start(h: History):
    """Where the simulated history starts (A simulates a warm-up before the export window)."""
    from datetime import timedelta

    return h.start - timedelta(days=float(h.config.get("warmup_days", 0.0)))


def test_hazard_clock_integrates_and_inverts():
    # weekly multipliers, a trend and a week boundary 5 days after t = 0
    clock = HazardClock([1.0, 2.5, 0.4, 1.7], 3.0, 28 * 86400.0, offset_s=2 * 86400.0)
    t = np.linspace(0, 30 * 86400.0, 3_000_001)
    numeric = np.concatenate(
        [[0.0], np.cumsum((clock.factor(t[1:]) + clock.factor(t[:-1])) / 2 * np.diff(t))]
    )
    assert np.allclose(clock.cum(t[::1000]), numeric[::1000], rtol=1e-5)
    assert np.allclose(clock.inv(clock.cum(t[::1000])), t[::1000], atol=1e-3)
    assert clock.factor(5 * 86400.0 - 1) == pytest.approx(
        1.0 * 3.0 ** ((5 * 86400.0 - 1) / (28 * 86400.0))
    )
    assert clock.factor(5 * 86400.0 + 1) == pytest.approx(
        2.5 * 3.0 ** ((5 * 86400.0 + 1) / (28 * 86400.0))
    )


@pytest.mark.parametrize("which", ["a", "b"])
def test_swings_trend_and_lemons_follow_the_law(which, tmp_path):
    # weekly swings, rate x3 over the history, 8 lemons at 8x: both samplers (A inverts the
    # integrated rate, B thins a homogeneous process) must give the same law
    h = GEN[which](tmp_path, seed=33, n_nodes=128, days=42, base_rate_per_1000_node_days=18.0,
                   weekly_swing=0.6, trend=3.0, n_lemons=8, lemon_factor=8.0, node_spread=0.0,
                   repair_median_h=1.0, repair_sigma=0.3)  # fmt: skip
    start = _sim_start(h)
    horizon = (h.end - start).total_seconds()
    w = h.weeks.sort("week")
    offset = (start - w["week_start"][0]).total_seconds()
    clock = HazardClock(w["multiplier"].to_numpy(), 3.0, horizon, offset_s=offset)
    edges = np.clip(np.append(clock.week_starts(), np.inf), 0, horizon)
    weeks = np.flatnonzero(np.diff(edges) > 86400)  # weeks with at least a day in the history
    t = (h.failures["time"] - start).dt.total_seconds().to_numpy()
    observed = np.histogram(t, bins=edges)[0][weeks]
    mass = np.diff(clock.cum(edges))[weeks]  # expected counts are proportional to it
    expected = observed.sum() * mass / mass.sum()
    chi2 = float(((observed - expected) ** 2 / expected).sum())
    dof = weeks.size - 1
    assert chi2 < dof + 4 * math.sqrt(2 * dof), (observed, expected.round(1))
    flat = observed.sum() * np.diff(edges)[weeks] / np.diff(edges)[weeks].sum()
    assert chi2 < float(((observed - flat) ** 2 / flat).sum())  # the swings are visible
    per = h.failures.group_by("node").len().join(h.nodes, on="node", how="right").fill_null(0)
    lem = per.filter("is_lemon")["len"].mean()
    ok = per.filter(~pl.col("is_lemon"))["len"].mean()
    assert 4 < lem / ok < 14, (lem, ok)


_PLACEHOLDER = {"gpu": r"\d+", "xid": r"\d+", "port": r"\d+", "ticket": r"\d+", "rack": r"\d+",
                "date": r"\d{4}-\d\d-\d\d", "admin": r"[\w.-]+"}  # fmt: skip


def _template_regex(t: str) -> str:
    """A regular expression for the reasons a vocabulary template renders to."""
    parts = re.split(r"\{(\w+)\}", t)
    return "".join(re.escape(p) if i % 2 == 0 else _PLACEHOLDER[p] for i, p in enumerate(parts))


@pytest.mark.parametrize("which", ["a", "b"])
def test_vocabulary_parameter(which, tmp_path):
    vocab = Vocabulary(
        hardware={"unknown": ("ZZ-HW {ticket}",), "gpu": ("ZZ-GPU gpu{gpu} xid {xid}",)},
        xid_drain=("ZZ-XID {xid}",),
        admin=("ZZ-ADMIN maint {date}", "ZZ-ADMIN rack {rack}"),
        admin_users=("zadmin(4242)",),
        slurm_user="slurm(999)",
    )
    h = GEN[which](
        tmp_path, seed=2, n_nodes=96, days=28, vocabulary=vocab, base_rate_per_1000_node_days=15.0
    )
    rx = re.compile("|".join(f"(?:{_template_regex(t)})" for t in vocab.all_reasons()))
    ev = h.node_events
    assert ev.height > 0
    for reason in ev["reason"]:
        assert reason in SLURM_OWN or rx.fullmatch(reason), reason
    kinds = set(ev.filter(pl.col("reason").str.starts_with("ZZ-"))["kind"])
    assert {"hardware", "admin"} <= kinds
    users = set(ev["user"])
    assert users <= {"zadmin(4242)", "slurm(999)", "root(0)"}
    assert "zadmin(4242)" in users or which == "a"  # A records busy drains under SlurmUser
    # what the events file says is what the truth says
    text = h.events.read_text()
    assert all(r in text for r in ev["reason"].unique())


def test_site_vocabularies_differ():
    a = set(SITE_A_VOCABULARY.all_reasons())
    b = set(SITE_B_VOCABULARY.all_reasons())
    shared = a & b
    assert len(shared) <= 0.25 * min(len(a), len(b)), shared
    assert SITE_A_VOCABULARY.admin_users != SITE_B_VOCABULARY.admin_users


def test_truth_is_written_as_parquet(history):
    d = Path(history.out_dir) / "truth"
    for name in ("attempts", "nodes", "failures", "weeks", "node_events"):
        back = pl.read_parquet(d / f"{name}.parquet")
        assert back.equals(getattr(history, name)), name
    assert (d / "config.json").exists()
    w = history.weeks
    # weekly multipliers start on Mondays 00:00 UTC (the package's weeks)
    assert (w["week_start"].dt.weekday() == 1).all()
    assert (w["week_start"].dt.hour() == 0).all()
    assert np.isfinite(w["multiplier"].to_numpy()).all()
