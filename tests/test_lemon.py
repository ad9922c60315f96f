"""Lemon-node detection (Kokolis et al. HPCA'25 §VI): features by hand, the estimator contract,
persistence, and detection + quarantine on simulated clusters the detector never saw."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from reliability.cli import main
from reliability.errors import ReliabilityError
from reliability.models.nodes import LEMON_FEATURES, LemonDetector, ModelFileError, node_features
from reliability.sim.config import load_preset

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _h(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def test_node_features_by_hand():
    """Two nodes, one 14-day window: counts as written out by hand."""
    jobs = pl.DataFrame([
        # n1: two single-node jobs crash in the same minute (a co-failure), one ok
        {"job_id": "1", "nodes": ["n1"], "state": "FAILED", "end_time": _h(10)},
        {"job_id": "2", "nodes": ["n1"], "state": "FAILED", "end_time": _h(10.005)},
        {"job_id": "3", "nodes": ["n1"], "state": "COMPLETED", "end_time": _h(20)},
        # a two-node job on n1 and n2 ends NODE_FAIL (n1 culprit via the node state below)
        {"job_id": "4", "nodes": ["n1", "n2"], "state": "NODE_FAIL", "end_time": _h(30)},
        {"job_id": "5", "nodes": ["n2"], "state": "COMPLETED", "end_time": _h(40)},
        # outside the window: ignored
        {"job_id": "6", "nodes": ["n2"], "state": "FAILED", "end_time": _h(24 * 20)},
    ]).with_columns(
        cluster=pl.lit("c"), attempt=pl.lit(0), start_time=pl.col("end_time") - timedelta(hours=1),
        n_nodes=pl.col("nodes").list.len(), n_accelerators=pl.col("nodes").list.len() * 8,
    )  # fmt: skip
    he = pl.DataFrame({
        "cluster": ["c"] * 4, "node": ["n1", "n1", "n2", "n2"], "time": [_h(9.99), _h(29.9), _h(35), _h(39)],
        "source": ["kernel_log", "kernel_log", "health_check", "kernel_log"],
        # n2's Xid 13 is the application's (software), not the node's hardware
        "component": ["gpu", "gpu_memory", "ib_link", "software"],
        "severity": ["critical", "critical", "warning", "warning"],
    })  # fmt: skip
    ns = pl.DataFrame({
        "cluster": ["c", "c"], "node": ["n1", "n1"], "state": ["DOWN", "DRAIN"],
        "start": [_h(30), _h(200)], "end": [_h(36), None],
    })  # fmt: skip
    f = node_features({"jobs": jobs, "health_events": he, "node_states": ns}, window_days=14, step_days=14,
                      start=T0, end=T0 + timedelta(days=28))  # fmt: skip
    w1 = f.filter(pl.col("window_end") == T0 + timedelta(days=14))
    n1 = w1.filter(pl.col("node") == "n1").row(0, named=True)
    n2 = w1.filter(pl.col("node") == "n2").row(0, named=True)
    assert n1["attempts"] == 4
    assert n1["failed"] == 3
    assert n1["node_fail"] == 1
    assert n1["single_node_failed"] == 2
    assert n1["multi_node_failed"] == 1
    assert n1["single_node_fail_rate"] == pytest.approx(2 / 3)
    assert n1["cofailures"] == 1
    assert n1["xid"] == 2
    assert n1["xid_gpu"] == 1
    assert n1["xid_gpu_memory"] == 1
    assert n1["critical_events"] == 2
    assert n1["out_of_service"] == 2
    assert n1["downs"] == 1
    assert n1["drains"] == 1
    # DOWN 6 h + DRAIN from hour 200 to the window end (hour 336)
    assert n1["hours_out"] == pytest.approx(6 + 136)
    # attributed to hardware on n1: jobs 1 and 2 (critical Xid 36 s before they failed) and
    # the NODE_FAIL job 4
    assert n1["hw_culprit"] == 3
    assert n2["attempts"] == 2
    assert n2["failed"] == 1
    assert n2["hw_culprit"] == 0
    assert n2["xid"] == 0
    assert n2["critical_events"] == 0
    # fleet-relative, shrunk: n1 was in service 14 - 142/24 days, n2 14 days; the fleet had
    # 2 out-of-service intervals over those days, so n1 would expect 2 * e1 / (e1 + 14) of them
    # at the fleet's rate; (2 + 2) / (2 + expected) with a prior of 2 events (docstring)
    e1 = 14 - 142 / 24
    assert n1["out_of_service_vs_fleet"] == pytest.approx(4 / (2 + 2 * e1 / (e1 + 14)))
    assert n2["out_of_service_vs_fleet"] == pytest.approx(2 / (2 + 2 * 14 / (e1 + 14)))
    # no critical events on either node: both read 1 (no evidence either way)
    assert n2["critical_events_vs_fleet"] == pytest.approx((0 + 2) / (2 + 2 * 14 / (e1 + 14)))
    # hours out: a day of pseudo-downtime on both sides of the ratio to the mean (71 h)
    assert n1["hours_out_vs_fleet"] == pytest.approx((142 + 24) / (71 + 24))
    # the second window holds job 6 only
    w2 = f.filter((pl.col("window_end") == T0 + timedelta(days=28)) & (pl.col("node") == "n2"))
    assert w2["failed"][0] == 1
    assert set(LEMON_FEATURES) <= set(f.columns)


def _not_applicable(estimator):
    # predict() flags at the precision-targeted threshold, not at P = 0.5, so predictions
    # differ from argmax(predict_proba) by design (like sklearn's FixedThresholdClassifier)
    return {"check_classifiers_train": "decision threshold is not 0.5 by design"}


@parametrize_with_checks([LemonDetector(cv=3)], expected_failed_checks=_not_applicable)
def test_sklearn_estimator_contract(estimator, check):
    check(estimator)


def _separable(n=600, seed=0):
    """Node-feature-shaped data (the package's LEMON_FEATURES columns) where lemons have
    about six times the counts of other nodes."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.1).astype(int)
    X = rng.poisson(np.where(y[:, None] == 1, 6.0, 1.0), size=(n, len(LEMON_FEATURES))).astype(
        float
    )
    return pl.DataFrame(X, schema=list(LEMON_FEATURES)), y


def test_threshold_reaches_target_precision_and_persistence(tmp_path):
    X, y = _separable()
    det = LemonDetector(target_precision=0.9).fit(X, y)
    assert det.oof_precision_ >= 0.9
    assert 0 < det.oof_recall_ <= 1
    Xt, yt = _separable(seed=1)
    pred = det.predict(Xt)
    assert (yt[pred == 1] == 1).mean() >= 0.8  # held-out precision near the target
    proba = det.predict_proba(Xt)[:, 1]
    assert np.all((proba >= 0) & (proba <= 1))
    # save / load round trip (JSON, no pickle)
    path = det.save(tmp_path / "m.json")
    back = LemonDetector.load(path)
    assert np.allclose(back.predict_proba(Xt), det.predict_proba(Xt))
    assert back.threshold_ == det.threshold_
    # a tampered file is refused
    doc = json.loads(path.read_text())
    doc["model"]["coef"][0] *= 2
    (tmp_path / "t.json").write_text(json.dumps(doc))
    with pytest.raises(ModelFileError, match="checksum"):
        LemonDetector.load(tmp_path / "t.json")
    (tmp_path / "f.json").write_text(json.dumps({"format": "sklearn-pickle", "blob": "..."}))
    with pytest.raises(ModelFileError, match=r"not a reliability\.lemon-detector/1 file"):
        LemonDetector.load(tmp_path / "f.json")
    (tmp_path / "g.json").write_bytes(b"\x80\x04\x95 pickle bytes")
    with pytest.raises(ModelFileError, match="not a readable JSON"):
        LemonDetector.load(tmp_path / "g.json")
    with pytest.raises(ValueError, match="two classes"):
        LemonDetector().fit(X, np.zeros(len(X)))
    # a detector fitted on other columns cannot be saved as a lemon detector
    with pytest.raises(ValueError, match="node_features"):
        LemonDetector().fit(X.to_numpy(), y).save(tmp_path / "x.json")


@pytest.fixture(scope="module")
def fitted_doc() -> dict:
    """A detector fitted once on separable data, as its file document (each test edits a
    deep copy)."""
    X, y = _separable()
    return LemonDetector().fit(X, y).to_dict()


def _resealed(doc: dict) -> dict:
    """The document with its checksum recomputed, as anyone editing the file can do."""
    import hashlib

    blob = json.dumps(doc["model"], sort_keys=True)
    return {**doc, "sha256": hashlib.sha256(blob.encode()).hexdigest()}


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (lambda m: m.update(threshold=-1.0), "threshold -1 is not strictly between 0 and 1"),
        (lambda m: m.update(threshold=1.0), "threshold 1 is not strictly between 0 and 1"),
        (lambda m: m.update(platt=[-m["platt"][0], m["platt"][1]]), "calibration slope"),
        (lambda m: m["coef"].__setitem__(0, float("nan")), "non-finite values in coef"),
        (lambda m: m["scale"].__setitem__(2, 0.0), "scales must be positive"),
        (lambda m: m.update(coef=m["coef"][:-1]), "array shapes"),
        (lambda m: m.update(features=list(reversed(m["features"]))), "trained on other features"),
        (lambda m: m.update(features=None), "trained on other features"),
        (lambda m: m.update(oof_precision=1.5), "precision and recall"),
        (lambda m: m["params"].update(C=-1.0), "invalid parameters"),
    ],
)
def test_resealed_hostile_model_is_refused(tmp_path, fitted_doc, edit, reason):
    """The checksum has no key, so an edited file can be resealed; the parameter checks on
    load still refuse a model that would flag every node, rank nodes backwards, or read other
    features (issue 16)."""
    import copy

    doc = copy.deepcopy(fitted_doc)
    edit(doc["model"])
    (tmp_path / "m.json").write_text(json.dumps(_resealed(doc)))
    with pytest.raises(ModelFileError, match="refused: .*" + reason):
        LemonDetector.load(tmp_path / "m.json")


def test_a_resealed_valid_model_loads(tmp_path, fitted_doc):
    """Resealing alone is not refused: the checks are on the values, not on who wrote them."""
    import copy

    doc = copy.deepcopy(fitted_doc)
    doc["model"]["threshold"] = 0.5
    (tmp_path / "m.json").write_text(json.dumps(_resealed(doc)))
    assert LemonDetector.load(tmp_path / "m.json").threshold_ == 0.5


def test_lemon_cli(tmp_path, capsys):
    """`lemon train` on a simulated cluster's truth, then `lemon score`: the nodes printed as
    flagged are mostly the simulator's true lemons, and the count line matches the rows printed.
    96 nodes (four lemons): with the small preset's two, one seed's detector could learn
    nothing (out-of-fold recall 0.1) and flag nobody."""
    from reliability.sim.run import simulate_cluster
    from reliability.simulated import ingest_simulation

    cfg = replace(load_preset("small"), days=60.0, n_nodes=96)
    simulate_cluster(cfg, seed=3).write(tmp_path / "raw")
    ingest_simulation(tmp_path / "raw", tmp_path / "ds")
    truth = pl.read_parquet(tmp_path / "raw" / "truth" / "nodes.parquet")
    lemons = set(truth.filter(pl.col("lemon"))["node"])
    assert main(["lemon", "train", str(tmp_path / "ds"), "--sim-truth", str(tmp_path / "raw"),
                 "--out", str(tmp_path / "m.json"), "--window-days", "28"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert f"({len(lemons)} lemon nodes)" in out
    argv = ["lemon", "score", str(tmp_path / "ds"), "--model", str(tmp_path / "m.json"),
            "--window-days", "28"]  # fmt: skip
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    n_flagged = int(lines[0].split(" of ")[0])
    rows = [ln.split() for ln in lines[2:]]
    flagged = {r[0] for r in rows if r[2] == "yes"}
    assert len(flagged) == n_flagged > 0
    # scored on the run it was trained on, with four lemons: most of what it flags are lemons
    # and it finds most of them (its precision on unseen runs is the benchmark's and
    # test_sim_calibration's business; seed 3 flags one healthy node beside the lemons)
    assert len(flagged & lemons) > len(flagged) / 2
    assert len(flagged & lemons) >= len(lemons) / 2
    # the model file says it was trained on 28-day windows: scoring on 56 is refused
    assert LemonDetector.load(tmp_path / "m.json").window_days_ == 28
    argv[-1] = "56"
    assert main(argv) == 2
    assert "the detector was trained on 28-day windows" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{}")
    assert (
        main(["lemon", "score", str(tmp_path / "ds"), "--model", str(tmp_path / "bad.json")]) == 2
    )
    assert "not a reliability.lemon-detector/1 file" in capsys.readouterr().err


def test_labels_files_keep_names_that_start_with_node(tmp_path):
    """A labels file of real Slurm names (node07, node08) keeps them; only a header line
    "node" is skipped (every line starting "node" was, so node07 vanished without a word)."""
    from reliability.cli import _read_labels

    p = tmp_path / "labels.txt"
    p.write_text("node\nnode07\n# a comment\nnode08,suspected PSU\n\ngpu020\n", encoding="utf-8")
    assert _read_labels(p) == {"node07", "node08", "gpu020"}
    p.write_text("node07\n", encoding="utf-8")
    assert _read_labels(p) == {"node07"}
    p.write_text("# nothing\n\n", encoding="utf-8")
    with pytest.raises(ReliabilityError, match="names no node"):
        _read_labels(p)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["train", "--labels", "L", "--target-precision", "1.5"],
            "--target-precision: expected a fraction in (0, 1)",
        ),
        (
            ["train", "--labels", "L", "--target-precision", "0"],
            "--target-precision: expected a fraction in (0, 1)",
        ),
        (["train", "--labels", "missing.txt"], "--labels: missing.txt: no such file"),
        (
            ["score", "--model", "bundled", "--window-days", "10"],
            "--window-days: expected a whole number of weeks",
        ),
        (["score", "--window-days", "0"], "--window-days: expected a number of days >= 1"),
        (["score", "--fdr", "1.5"], "--fdr: expected a rate in (0, 1)"),
        (["score", "--top", "-45"], "--top: expected a number of nodes >= 1"),
        (["score", "--model", "missing.json"], "--model: missing.json: no such file"),
    ],
)
def test_lemon_flags_are_checked_by_name(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "L").write_text("gpu001\n", encoding="utf-8")
    sub, rest = argv[0], argv[1:]
    extra = ["--out", "m.json"] if sub == "train" else []
    assert main(["lemon", sub, str(tmp_path / "ds"), *rest, *extra]) == 2
    assert message in capsys.readouterr().err


def test_scoring_jobs_alone_warns_that_it_is_no_all_clear(tmp_path, capsys):
    """A Dataset of the sacct export alone (no kernel logs, no node states): the detector's
    strongest features are all zero, so its low scores are said to be no all-clear."""
    from reliability.sim.run import simulate_cluster

    cfg = replace(load_preset("small"), days=60.0)
    simulate_cluster(cfg, seed=5).write(tmp_path / "raw")
    assert main(["ingest", "slurm", str(tmp_path / "raw" / "sacct.psv"), "--into",
                 str(tmp_path / "ds"), "--tz", "UTC"]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["lemon", "score", str(tmp_path / "ds"), "--model", "bundled"]) == 0
    err = capsys.readouterr().err
    assert "no health events and no node states" in err
    assert "no all-clear" in err


def test_a_detector_keeps_the_window_it_was_trained_on(tmp_path, fitted_doc):
    """The feature window goes into the model file and comes back; a file without it (saved
    before the window was recorded) loads with an unknown window; a window that is not a
    number of days is refused; the bundled file says 56 days, the window
    benchmarks/train_lemon_model.py trains on."""
    import copy

    from reliability.models.nodes.lemon import default_detector
    from reliability.pipeline.steps.lemon import BUNDLED_WINDOW_DAYS

    X, y = _separable()
    det = LemonDetector().fit(X, y, window_days=28)
    assert LemonDetector.load(det.save(tmp_path / "m.json")).window_days_ == 28
    assert "window_days" not in fitted_doc["model"]
    (tmp_path / "old.json").write_text(json.dumps(fitted_doc))
    assert LemonDetector.load(tmp_path / "old.json").window_days_ is None
    for bad in (0, -7, "28", 2.5, True):
        doc = copy.deepcopy(fitted_doc)
        doc["model"]["window_days"] = bad
        (tmp_path / "bad.json").write_text(json.dumps(_resealed(doc)))
        with pytest.raises(ModelFileError, match="window_days"):
            LemonDetector.load(tmp_path / "bad.json")
    for bad in (0, -7, 2.5, float("nan"), float("inf"), "28", True):
        with pytest.raises(ValueError, match="window_days: expected a whole number"):
            LemonDetector().fit(X, y, window_days=bad)
    assert default_detector().window_days_ == BUNDLED_WINDOW_DAYS == 56


def test_lemon_score_refuses_a_window_the_detector_was_not_trained_on(tmp_path, capsys):
    """The bundled detector was trained on 56-day windows; its features are counts over the
    window, so on a 14-day window every node scores lower and lemons go unflagged. `lemon score
    --window-days 14` printed such scores as flags; it is refused, naming the flag."""
    code = main(
        ["lemon", "score", str(tmp_path / "ds"), "--model", "bundled", "--window-days", "14"]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "--window-days: the detector was trained on 56-day windows" in err
    assert "reliability lemon train --window-days 14" in err
