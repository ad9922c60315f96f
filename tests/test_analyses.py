"""The analyses layer (:mod:`reliability.analyses`): the GPUs per node come from the data the
same way for the CLI, the pipeline and a notebook, and ``analyze_cluster`` composes the models
as the report does. Checked against a hand-written sacct export of a 4-GPU-per-node cluster
(the closed form 24 / (N_nodes r_f) with N_nodes = GPUs / 4) and hand-built frames."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pytest

from reliability.analyses import DEFAULT_GPUS_PER_NODE, analyze_cluster, attribute, gpus_per_node_of
from reliability.store import Dataset

T = datetime(2025, 1, 1, tzinfo=UTC)


def test_gpus_per_node_is_the_most_one_node_held():
    jobs = pl.DataFrame(
        {"n_accelerators": [4, 16, 6, 64], "n_nodes": [1, 4, 2, 1], "start_time": [T, T, T, None]},
    )
    # 64 GPUs on one node never started: not evidence; 6 on 2 nodes is 3 each
    assert gpus_per_node_of(jobs) == (4, "the most one node held in the data")
    cpu = pl.DataFrame({"n_accelerators": [0, 0], "n_nodes": [2, 1], "start_time": [T, T]})
    per_node, basis = gpus_per_node_of(cpu)
    assert per_node == DEFAULT_GPUS_PER_NODE
    assert "assumed" in basis


def _export(path):
    head = "JobID|JobName|User|State|ExitCode|Submit|Start|End|NNodes|AllocTRES|NodeList|Cluster"
    rows = []
    for i in range(40):
        day = 1 + i // 2
        state = "NODE_FAIL" if i % 5 == 0 else "COMPLETED"
        rows.append(
            f"{100 + i}|train|u|{state}|0:0|2025-01-{day:02d}T00:00:00|2025-01-{day:02d}T00:01:00|"
            f"2025-01-{day:02d}T10:01:00|8|gres/gpu=32,node=8|g[{1 + (i % 4) * 8:02d}-{8 + (i % 4) * 8:02d}]|c4"
        )
    path.write_text("\n".join([head, *rows]) + "\n")


@pytest.fixture(scope="module")
def four_gpu_dataset(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("a")
    _export(tmp / "sacct.psv")
    ds = Dataset(tmp / "ds")
    ds.ingest("slurm", [tmp / "sacct.psv"], tz="UTC", observed_at=datetime(2025, 1, 25, tzinfo=UTC))
    return ds


def test_analyze_cluster_turns_gpus_into_nodes_with_the_data_s_gpus_per_node(four_gpu_dataset):
    c = analyze_cluster(four_gpu_dataset, min_gpus=32)
    assert c.attribution.gpus_per_node == 4
    assert c.mttf.gpus_per_node == 4
    # 8 failures (every 5th of 40 attempts) over 40 attempts x 10 h x 8 nodes
    node_days = 40 * 10 * 8 / 24
    assert c.mttf.failures_ == 8
    assert c.mttf.node_days_ == pytest.approx(node_days, rel=1e-9)
    r_f = 8 / node_days
    row = c.mttf.by_size.filter(pl.col("bucket") == "32").row(0, named=True)
    assert row["model_mttf_h"] == pytest.approx(24 / ((32 / 4) * r_f), rel=1e-9)
    assert "GPUs per node: 4 (the most one node held in the data)" in str(c)


def test_a_given_gpus_per_node_wins_and_is_checked(four_gpu_dataset):
    a = attribute(four_gpu_dataset, gpus_per_node=8)
    assert (a.gpus_per_node, a.gpus_per_node_basis) == (8, "given")
    with pytest.raises(ValueError, match="gpus_per_node"):
        attribute(four_gpu_dataset, gpus_per_node=0)


# ---------------------------------------------------------------- node health, lemons, pods


def test_analyze_node_health_availability_is_one_minus_the_union_of_intervals():
    """Each node's availability is 1 - (the union of its out-of-service intervals inside the
    window) / window, the union merged here by hand from the raw node states."""
    from reliability.analyses import AttributionResult, analyze_node_health
    from reliability.models._examples import tiny_tables
    from reliability.models.nodes import OUT_OF_SERVICE

    t = tiny_tables()
    a = AttributionResult._example()
    h = analyze_node_health(t, a)
    lo, hi = h.start, h.end
    per_node: dict[str, list[tuple[datetime, datetime]]] = {}
    for node, state, s, e in t["node_states"].select("node", "state", "start", "end").iter_rows():
        if state in OUT_OF_SERVICE:
            s, e = max(s, lo), min(e or hi, hi)
            if e > s:
                per_node.setdefault(node, []).append((s, e))
    window_h = (hi - lo).total_seconds() / 3600
    expected = {}
    for node, spans in per_node.items():
        total, cur_s, cur_e = 0.0, None, None
        for s, e in sorted(spans):
            if cur_e is None or s > cur_e:
                total += 0.0 if cur_e is None else (cur_e - cur_s).total_seconds()
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        total += (cur_e - cur_s).total_seconds()
        expected[node] = 1 - total / 3600 / window_h
    got = dict(h.by_node.select("node", "availability").iter_rows())
    assert per_node  # the example has drains
    for node, avail in got.items():
        assert avail == pytest.approx(expected.get(node, 1.0), rel=1e-12), node


def test_lemon_report_refuses_a_window_that_is_not_whole_weeks(four_gpu_dataset):
    from reliability.analyses import lemon_report

    for bad in (0, 10, -7, 7.0, True):
        with pytest.raises(ValueError, match="window_days: expected a whole number of weeks"):
            lemon_report(four_gpu_dataset, window_days=bad)


def test_lemon_report_with_a_detector_on_another_window_flags_nobody(four_gpu_dataset):
    """The bundled detector (trained on 56-day windows) scored on 7-day windows: the scores are
    shown, no node is flagged, the note names the option to change; the library's calibration
    check says the same. On too short a history there are no scores and the note says why."""
    from reliability.analyses import lemon_report, load_detector, uncalibrated_note

    det = load_detector("bundled")
    assert det.window_days_ == 56
    assert uncalibrated_note(det, 56) is None
    assert "trained on 56-day windows" in uncalibrated_note(det, 7)
    r = lemon_report(four_gpu_dataset, window_days=7, model="bundled")
    assert r.scores.height == 8 * 4  # every node of the export (g01-g32)
    assert r.flagged.height == 0
    assert not r.calibrated
    assert "pass window_days=56" in " ".join(r.notes)
    short = lemon_report(four_gpu_dataset, window_days=56, model=det)
    assert short.scores.height == 0
    assert "less than one 56-day feature window" in " ".join(short.notes)


@pytest.fixture(scope="module")
def pod_dataset(tmp_path_factory):
    from reliability.sim.pod import simulate_pod

    tmp = tmp_path_factory.mktemp("pod")
    simulate_pod("tpuv4", days=POD_DAYS, seed=5).write(tmp / "raw")
    ds = Dataset(tmp / "ds")
    ds.ingest("pod", [tmp / "raw" / "pod_events.jsonl"])
    return ds


#: the simulated pod's run [days]
POD_DAYS = 30


def test_analyze_pods_recovery_rates_are_failures_over_component_days(pod_dataset):
    """The recovery comparison's failure rate per component type is the failures in the raw
    table over (components x the run's days), times the components a 50-cube job uses."""
    from reliability.analyses import analyze_pods

    p = analyze_pods(pod_dataset, ckpt_interval_min=30.0)
    assert p.pods.rows() == [("tpuv4", "tpuv4", "reconfigurable", 64)]
    inv, cf = pod_dataset.inventory, pod_dataset.component_failures
    rec = p.recovery.summary.filter(pl.col("path") == "reconfigure")
    for kind in ("machine", "ici_link", "ocs"):
        k = cf.filter(pl.col("component_type") == kind).height
        n = inv.filter(pl.col("component_type") == kind).height
        row = rec.filter(pl.col("component") == kind).row(0, named=True)
        assert row["failures_per_day"] == pytest.approx(
            k / (n * POD_DAYS) * row["components_used"], rel=1e-12, abs=1e-15
        ), kind
    assert p.notes == []  # every type measured: no published rate stood in


def test_analyze_pods_at_a_given_host_availability_is_the_closed_form(pod_dataset):
    """With host_availability given, the Fig. 1 check with hosts alone is P(Bin(64, a^16) >= 50)
    (NSDI'24 Fig. 1's model); a value outside (0, 1] is refused."""
    from scipy import stats

    from reliability.analyses import analyze_pods

    a = 0.99
    p = analyze_pods(pod_dataset, host_availability=a)
    assert p.reference_host_availability == a
    assert p.fig1_tpuv4_3200_hosts == pytest.approx(stats.binom.sf(49, 64, a**16), rel=1e-9)
    for bad in (0.0, 1.5, float("nan")):
        with pytest.raises(ValueError, match="host_availability"):
            analyze_pods(pod_dataset, host_availability=bad)
    with pytest.raises(ValueError, match="ckpt_interval_min"):
        analyze_pods(pod_dataset, ckpt_interval_min=0.0)


def test_lemon_report_on_too_short_a_history_says_what_would_score(four_gpu_dataset):
    """24 days of data: a detector trained on 56-day windows cannot score them (collect more);
    one trained on 7-day windows asked for 56 is pointed at its own window."""
    from reliability.analyses import lemon_report

    bundled = lemon_report(four_gpu_dataset, window_days=56, model="bundled")
    assert "collect at least 56 days of history" in bundled.notes[0]
    det = _week_detector(n=200, lemon_share=0.3, target_precision=0.5)
    week = lemon_report(four_gpu_dataset, window_days=56, model=det)
    assert week.scores.height == 0
    assert "pass window_days=7, the window the detector was trained on" in week.notes[0]


def _week_detector(n: int = 400, lemon_share: float = 0.2, target_precision: float = 0.2):
    """A detector trained on 7-day windows of ``n`` synthetic nodes (lemons count 6x more)."""
    import numpy as np

    from reliability.models.nodes import LEMON_FEATURES, LemonDetector

    rng = np.random.default_rng(0)
    y = rng.random(n) < lemon_share
    X = pl.DataFrame(
        rng.poisson(np.where(y[:, None], 6.0, 1.0), (n, len(LEMON_FEATURES))),
        schema=list(LEMON_FEATURES),
    ).cast(pl.Float64)
    return LemonDetector(target_precision=target_precision).fit(X, y, window_days=7)


def test_lemon_detector_reuses_an_attribution_made_with_its_training_settings(
    four_gpu_dataset, monkeypatch
):
    """Given attempts attributed with the settings the detector's features are trained with
    (10/5 min, no requeue codes, built-in reasons), the features are computed from them, not by
    attributing the Dataset again; the scores are those of the Dataset attributed afresh."""
    from polars.testing import assert_frame_equal

    import reliability.models.nodes.lemon_features as lf
    from reliability.analyses import DETECTOR_ATTRIBUTION, lemon_report
    from reliability.reasons import ReasonRules

    assert DETECTOR_ATTRIBUTION == {"before_min": 10.0, "after_min": 5.0, "requeue_exit_codes": ()}
    det = _week_detector()
    fresh = lemon_report(four_gpu_dataset, window_days=7, model=det)  # attributed inside
    a = attribute(four_gpu_dataset, reasons=ReasonRules())

    def refuse(*args, **kwargs):
        raise AssertionError("the Dataset was attributed again")

    monkeypatch.setattr(lf, "attribute_failures", refuse)
    reused = lemon_report(four_gpu_dataset, a, window_days=7, model=det, reasons=ReasonRules())
    assert reused.scores.height == 32  # every node of the export (g01-g32)
    assert_frame_equal(reused.scores, fresh.scores)
    assert reused.notes == fresh.notes


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"before_min": 30.0}, "before_min=30.0"),
        ({"requeue_exit_codes": (42,)}, "requeue_exit_codes=(42,)"),
        ({"reasons": "extended"}, "reasons ("),
    ],
)
def test_lemon_detector_attributes_again_when_the_attribution_differs(
    four_gpu_dataset, options, named
):
    """Attempts attributed otherwise than the detector was trained on: the Dataset is
    attributed again with the training settings (the scores are those without an attribution
    given) and a note names what differed."""
    from polars.testing import assert_frame_equal

    from reliability.analyses import lemon_report
    from reliability.reasons import ReasonRules

    if options.get("reasons") == "extended":
        options = {"reasons": ReasonRules().extended(admin=["^planned"])}
    det = _week_detector()
    fresh = lemon_report(four_gpu_dataset, window_days=7, model=det)
    a = attribute(four_gpu_dataset, **options)
    other = lemon_report(
        four_gpu_dataset, a, window_days=7, model=det, reasons=options.get("reasons")
    )
    assert_frame_equal(other.scores, fresh.scores)
    said = [n for n in other.notes if n not in fresh.notes]
    assert len(said) == 1
    assert "attributed again with the settings it is trained with" in said[0]
    assert named in said[0]


def test_node_health_takes_jobs_already_read(four_gpu_dataset):
    """node_health(jobs=) with the attributed attempts gives what reading the Dataset's jobs
    gives (the fleet of 32 nodes and the window)."""
    from polars.testing import assert_frame_equal

    from reliability.models.nodes import node_health

    a = attribute(four_gpu_dataset)
    read = node_health(four_gpu_dataset, attributed=a.jobs)
    given = node_health(four_gpu_dataset, attributed=a.jobs, jobs=a.jobs)
    assert read.n_nodes == given.n_nodes == 32
    assert (read.start, read.end) == (given.start, given.end)
    assert_frame_equal(read.by_node, given.by_node)
    assert_frame_equal(read.by_period, given.by_period)


def test_attribution_says_when_evidence_names_a_cluster_no_job_ran_on(tmp_path, shared):
    """A kernel log ingested under a placeholder cluster name (a user's template left as it
    was) explains no failure of the real cluster's jobs: the attribution says so, once; the
    same log under the jobs' cluster name draws no such note."""
    sacct = shared / "slurm-real-run1" / "final_snapshot" / "sacct_broad.psv"
    log = shared / "nvidia-xid-dmesg-gpud" / "dmesg-with-xid-119.log"
    notes = {}
    for name in ("my-cluster", "testclu"):
        ds = Dataset(tmp_path / name)
        ds.ingest("slurm", sacct, tz="UTC")
        ds.ingest("kernel", log, cluster=name, tz="UTC", year=2025)
        assert set(ds.jobs.get_column("cluster").unique()) == {"testclu"}
        notes[name] = [n for n in attribute(ds).notes if "match no job attempt" in n]
    assert len(notes["my-cluster"]) == 1
    n_events = Dataset(tmp_path / "my-cluster").health_events.height
    assert f"cluster 'my-cluster' ({n_events:,} rows)" in notes["my-cluster"][0]
    assert "the jobs ran on 'testclu'" in notes["my-cluster"][0]
    assert notes["testclu"] == []
