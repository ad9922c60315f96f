"""Calibration of the cluster simulator, as tests: the shape of HPCA'25's headline table on a
scaled-down RSC-1 (the same rows as ``benchmarks/calibration.py``, measured the same way:
through the readers, attribution and the package's models, with wider tolerances because the
cluster is a fifth of the size), and the lemon-quarantine backtest over several seeds the
bundled detector never saw (detection per node, the effect on large jobs, root causes, the
baselines). The small preset's own shape is checked too.

The runs are shared by the tests of this module: three seeds of RSC-1's calibration at 384
nodes for 100 days, each simulated, written, ingested, and backtested (reusing the ingested
run as the baseline, as the pipeline does: only the quarantined variant is simulated again).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import polars as pl
import pytest

from reliability.attribution import attribute_failures
from reliability.experiments.backtests import lemon_backtest, simulate_to_dataset
from reliability.experiments.calibration import ROWS, calibration_table, measure
from reliability.models.nodes import LEMON_FEATURES, count_baseline, node_features, rule_baseline
from reliability.models.nodes.lemon import NODE_DOWN_CLASS, default_detector
from reliability.sim.config import load_preset

#: seeds of the backtests: the bundled detector was trained on seeds 101-104 (see
#: benchmarks/train_lemon_model.py) and the calibration benchmark uses 900+
SEEDS = (31, 32, 33)
#: PREEMPTED share of attempts and secondary preemptions' share of failure overhead on the
#: scaled cluster, pooled over SEEDS (a band around what it measured, see the shape test)
PREEMPTED_BAND = (0.003, 0.05)
SECONDARY_BAND = (0.01, 0.2)


def _test_cluster():
    """RSC-1's calibration at a fifth of its size (384 nodes, 100 days, 1.2% lemons: five per
    seed), not the bundled detector's training setup (1,024 nodes, 150 days)."""
    return replace(load_preset("rsc1"), name="lemon-test", n_nodes=384, days=100.0)


@pytest.fixture(scope="module")
def backtests(tmp_path_factory):
    """The quarantine backtest on three seeds; each reuses the baseline run that was already
    simulated and ingested (as the pipeline does) and simulates only the quarantined run."""
    cfg = _test_cluster()
    out = []
    for seed in SEEDS:
        work = tmp_path_factory.mktemp(f"bt{seed}")
        r, ds = simulate_to_dataset(cfg, seed, work / "base")
        bt = lemon_backtest(cfg, default_detector(), seed=seed, split_day=60, window_days=56,
                            work=work / "bt", baseline=(work / "base" / "raw", ds))  # fmt: skip
        out.append((r, ds, bt))
    return out


def _pooled(backtests, tp_name="precision (per node)"):
    flagged = sum(bt.metric("flagged nodes") for _, _, bt in backtests)
    lemons = sum(int(r.lemon.sum()) for r, _, _ in backtests)
    tp = sum(bt.flagged["lemon"].sum() for _, _, bt in backtests)
    return flagged, lemons, tp


@pytest.mark.slow
def test_detection_per_node_on_unseen_runs(backtests):
    """HPCA'25 §VI: precision above 85% on 1.2-1.7% of nodes. Pooled over three seeds the
    bundled detector never saw (15 true lemons), per node at the split: precision >= 0.85,
    recall >= 0.7, and on each seed the flagged share of nodes within 0.5-2x of the true share."""
    flagged, lemons, tp = _pooled(backtests)
    assert lemons == 15
    assert tp / flagged >= 0.85
    assert tp / lemons >= 0.7
    for _, _, bt in backtests:
        share = bt.metric("true lemon share")
        assert share / 2 <= bt.metric("footprint (share of nodes)") <= 2 * share


@pytest.mark.slow
def test_quarantine_cuts_large_job_failures(backtests):
    """HPCA'25: quarantining lemons cut the 512+ GPU job failure rate from 14% to 4% (a ratio
    of 0.29). The preset's lemons carry the share of failures that implies (see the preset's
    derivation), so over three seeds, counting the 512+ GPU jobs started after the split: the
    quarantined runs' share of them ended by hardware is at most 0.6 of the runs' as is (the
    bound leaves room for the few hundred jobs of a 384-node cluster), their interruption rate
    per node-day falls by at least half, and the GPU-hours lost to hardware fall."""
    g = "512+ GPU"
    n = [bt.metric(f"{g} jobs after the split") for _, _, bt in backtests]
    before = sum(
        k * bt.metric(f"{g} jobs ended by hardware, as is")
        for k, (_, _, bt) in zip(n, backtests, strict=True)
    )
    after = sum(
        k * bt.metric(f"{g} jobs ended by hardware, quarantined")
        for k, (_, _, bt) in zip(n, backtests, strict=True)
    )
    assert sum(n) >= 300
    assert after <= 0.6 * before
    for _, _, bt in backtests:
        assert bt.metric(f"{g} interruptions per 1000 node-days, quarantined") <= 0.5 * bt.metric(
            f"{g} interruptions per 1000 node-days, as is"
        )
        assert bt.metric("GPU-hours lost to hardware, quarantined") < bt.metric(
            "GPU-hours lost to hardware, as is"
        )


@pytest.mark.slow
def test_root_causes_match_truth(backtests):
    """The component the logs point at for each flagged true lemon is its true root cause
    (node-down causes leave no component: they must show as node down), for at least 80% of
    them pooled over the seeds."""
    f = pl.concat([bt.flagged.filter(pl.col("lemon")) for _, _, bt in backtests])
    want = (
        pl.when(pl.col("truth_node_down")).then(pl.lit(NODE_DOWN_CLASS)).otherwise(pl.col("truth"))
    )
    assert f.height >= 10
    assert f.select((pl.col("dominant") == want).mean()).item() >= 0.8


@pytest.mark.slow
def test_detector_beats_the_baselines(backtests):
    """On node-windows of runs it never saw, the detector's precision among its top-k scores is
    at least the hand-tuned rule's precision at the rule's k flags, and at least the failed-job
    count threshold's at the detector's own number of flags; neither comparison can pass
    vacuously: both the rule and the detector must flag something."""
    det = default_detector()
    frames = []
    for i, (r, ds, _) in enumerate(backtests):
        names = r.config.node_names()
        lemons = [names[j] for j in np.flatnonzero(r.lemon)]
        frames.append(
            node_features(ds, 56, 7).with_columns(lemon=pl.col("node").is_in(lemons), run=i)
        )
    f = pl.concat(frames)
    y = f["lemon"].to_numpy()
    score = det.predict_proba(f.select(LEMON_FEATURES))[:, 1]
    order = np.argsort(-score, kind="stable")
    rule = rule_baseline(f)
    k_rule = int(rule.sum())
    assert k_rule > 0
    assert y[order[:k_rule]].mean() >= y[rule].mean()
    flags = det.predict(f.select(LEMON_FEATURES)).astype(bool)
    k = int(flags.sum())
    assert k > 0
    t = np.sort(f["failed"].to_numpy())[-k]
    count = count_baseline(f, t)
    assert y[flags].mean() >= y[count].mean()
    assert y[flags].mean() >= 0.85


@pytest.mark.slow
def test_headline_shape_on_scaled_rsc1(backtests):
    """The rows of the calibration table on the scaled cluster, pooled over the three seeds:
    each within twice the benchmark's tolerance of the paper (so +-50%; the lemon effect has
    its own test above), except where a fifth of the cluster cannot show it: jobs per day
    scale with the nodes, the longest requeue chain and the 8- and 1,024-GPU MTTFs are not
    checked here (informational rows), and the benchmark checks them at full size.
    Preemption depends on the cluster's size: on 384 nodes the PREEMPTED share is several times
    lower than at full size and so are secondary preemptions (at 2,000 nodes, jobs of 256+
    GPUs cause ~60% of the preemption, and a fifth of the cluster fits few of them beside other
    work). These two rows are held to bands around what this cluster measured (a drift guard,
    not a check against the paper); the benchmark checks them against the paper at full
    size."""
    cfg = _test_cluster()
    runs = [
        measure(
            attribute_failures(ds, requeue_exit_codes=[99]),
            n_nodes=cfg.n_nodes,
            gpus_per_node=8,
            days=cfg.days,
        )
        for _, ds, _ in backtests
    ]
    for run in runs:
        run["jobs_per_day"] *= 2000 / cfg.n_nodes  # RSC-1 has 2,000 nodes
    table = calibration_table(runs, tol_scale=2.0)
    skip = {
        "longest requeue chain (requeues of one job)",
        "PREEMPTED share of attempts",
        "secondary preemptions, share of failure overhead",
    }
    by = dict(zip(table["figure"], table["mean"], strict=True))
    assert PREEMPTED_BAND[0] <= by["PREEMPTED share of attempts"] <= PREEMPTED_BAND[1]
    assert (
        SECONDARY_BAND[0]
        <= by["secondary preemptions, share of failure overhead"]
        <= SECONDARY_BAND[1]
    )
    checked = table.filter(pl.col("ok").is_not_null() & ~pl.col("figure").is_in(list(skip)))
    bad = checked.filter(~pl.col("ok"))
    assert bad.height == 0, bad.select("figure", "paper", "mean", "low", "high", "target")
    # every row of the table was measured (the lemon rows come from the backtest), and every
    # row with a target was checked
    keys = {r.label for r in ROWS if not r.key.startswith(("quarantine", "lemon_"))}
    assert keys <= set(table["figure"])
    targets = {
        r.label
        for r in ROWS
        if r.kind != "info"
        and r.paper[0] is not None
        and not r.key.startswith(("quarantine", "lemon_"))
    }
    assert set(checked["figure"]) == targets - skip
    assert checked.height == 17


def test_small_preset_shape(tmp_path):
    """The 48-node preset the tests and the demo use keeps RSC-1's mix of states and sizes:
    completed, failed and requeued shares of attempts within +-50% of the paper's, more than 40%
    of jobs on one GPU and nearly 90% under a node, utilization near 83%, every job started
    within a week. Preemption is rarer than RSC-1's 10% on 48 nodes: at full size jobs of 256
    GPUs and more cause about 60% of it (a 330-day 2,000-node run, seed 900: 160 k of 261 k
    preempted attempts, a third for jobs of 1,024-4,096 GPUs), and this preset has none larger
    than 256; it must still happen (1-15% of attempts; seeds 5-8 measured 1.7-4.5%)."""
    cfg = load_preset("small")
    _, ds = simulate_to_dataset(cfg, 5, tmp_path)
    jobs = attribute_failures(ds, requeue_exit_codes=[99])
    m = measure(jobs, n_nodes=cfg.n_nodes, gpus_per_node=8, days=cfg.days)
    for state, paper in (
        ("COMPLETED", 0.60),
        ("FAILED", 0.24),
        ("REQUEUED", 0.02),
    ):
        assert m[f"state_{state}"] == pytest.approx(paper, rel=0.5), state
    assert 0.01 <= m["state_PREEMPTED"] <= 0.15
    assert m["one_gpu_job_share"] > 0.40
    assert m["sub_node_job_share"] > 0.88
    assert m["utilization"] == pytest.approx(0.83, rel=0.2)
    assert m["start_within_7_days"] == 1.0


def test_notes_on_rsc1_figures_stay_off_the_rsc2_table():
    """The MTTF and ETTR rows' notes discuss RSC-1's published values (47.7 d, 7.9 h, 0.9):
    on RSC-2's table, where the paper gives none, those rows carry no note."""
    noted = [r for r in ROWS if r.note]
    assert noted
    assert all(r.paper[1] is None for r in noted)
    run = {r.key: 0.5 for r in ROWS}
    rsc1 = dict(zip(*calibration_table([run], cluster=0).select("figure", "note"), strict=True))
    rsc2 = dict(zip(*calibration_table([run], cluster=1).select("figure", "note"), strict=True))
    for r in noted:
        assert rsc1[r.label] == r.note
        assert rsc2[r.label] == ""
