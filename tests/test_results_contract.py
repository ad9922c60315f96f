"""One contract over every result of the statistics models (the one result base): a summary
frame without nan/inf, a text form without nan/inf/"unbounded" that says what it cannot
estimate and why, escaped HTML with real tables, print_summary() and sample sizes; on normal
and degenerate inputs (0 failures, 1 failure, 7 minutes of data, one node). Plus the planner
(which rate it plans with), the ETTR estimands and measured ETTR by cause, and the censoring
of lemon features."""

from __future__ import annotations

import io
import math
import re
from datetime import timedelta

import numpy as np
import polars as pl
import pytest
from histories import T0, job_histories

from reliability._result import Result, frame_is_finite
from reliability.models.failures import estimate_rate, failure_rate_series, fit_mttf
from reliability.models.failures.counts import trend_of
from reliability.models.lifetimes import fit_interfailure, fit_lifetimes
from reliability.models.lifetimes.repairable import crow_amsaa
from reliability.models.nodes import node_features
from reliability.models.recovery import (
    compare_strategies,
    expected_ettr,
    job_run_ettr,
    plan,
    recovery_costs,
    simulate_ettr,
    simulate_strategy,
)
from reliability.testing import all_results, import_all_modules

INPUTS = {
    "normal": dict(days=84, rate_per_node_day=0.01, slots=8, mean_job_days=2.0),
    "no failures": dict(days=3, rate_per_node_day=0.0, slots=1, nodes_per_job=1),
    "one failure": dict(days=40, rate_per_node_day=0.001, slots=2, nodes_per_job=16),
    "seven minutes": dict(days=7 / 1440, rate_per_node_day=0.0, slots=2, nodes_per_job=1),
    "one node": dict(days=20, rate_per_node_day=0.05, slots=1, nodes_per_job=1),
}


def _results(case: str) -> list[Result]:
    jobs, end = job_histories(np.random.default_rng(3), **INPUTS[case])
    out: list[Result] = [
        fit_mttf(jobs, min_gpus=1, observation_end=end),
        failure_rate_series(jobs, min_gpus=1, observation_end=end),
        job_run_ettr(jobs, observation_end=end),
        simulate_ettr(1024, 0.01, 1.0, 5 / 60, job_h=24.0, n_runs=200, seed=1),
        trend_of([0, 1], [1.0, 1.0]),
        estimate_rate([], []),
        crow_amsaa(np.array([1.0]), 10.0),
        recovery_costs(jobs, observation_end=end),
    ]
    strategies = compare_strategies(64, 0.01, 1.0, 5 / 60, queue_h=0.5)
    out += [strategies, simulate_strategy(strategies, "hot_spares", n_runs=50, n_pools=4, seed=1)]
    m = out[0]
    if m.node_days_ > 0:  # with no exposure at all the planner refuses (tested below)
        out.append(plan(1024, m, 0.9, restart_h=5 / 60))
    life = pl.DataFrame({"t": [1.0, 2.0, 3.0], "e": [False, True, False]})
    out.append(fit_lifetimes(life, "t", "e"))
    cf = jobs.filter(pl.col("state") == "NODE_FAIL").select(
        "cluster", component_id=pl.col("nodes").list.first(), failed_at="end_time", repaired_at="end_time"
    )  # fmt: skip
    if cf.height:
        out.append(fit_interfailure(cf, observation_end=end))
    return out


def _clean(text: str) -> None:
    """No nan, inf or "unbounded" as a word ("maintenance", "infant" are fine)."""
    import re

    low = text.lower()
    for word in ("nan", "inf", "unbounded"):
        assert not re.search(rf"\b{word}\b", low), (word, text)


@pytest.mark.parametrize("case", list(INPUTS))
def test_every_result_keeps_the_contract(case):
    for r in _results(case):
        name = type(r).__name__
        s = r.summary
        assert isinstance(s, pl.DataFrame), name
        assert frame_is_finite(s), name
        text = str(r)
        _clean(text)
        html = r._repr_html_()
        _clean(html)
        assert "<table" in html, name
        buf = io.StringIO()
        r.print_summary(file=buf)
        _clean(buf.getvalue())
        assert r.title in buf.getvalue()
        for frame in r.tables().values():
            assert frame_is_finite(frame), name
        if case != "normal" and name in ("MTTFResult", "RateSeries", "TrendTest", "RateEstimate"):
            assert "not estimable" in text or "not assessed" in text, name


def test_html_escapes_what_comes_from_the_data():
    jobs, end = job_histories(
        np.random.default_rng(1), days=10, rate_per_node_day=0.01, cluster="<b>x</b>"
    )
    m = fit_mttf(jobs.with_columns(n_accelerators=pl.lit(0)), min_gpus=1, observation_end=end)
    m.notes.append("<script>alert(1)</script>")
    html = m._repr_html_()
    assert "<script>" not in html
    assert "&lt;script&gt;" in html


# ---------------------------------------------------------------- the planner's rate


def test_planner_plans_with_the_recent_rate_and_says_so():
    """A rate that tripled over 12 weeks: the planner shows both rates with intervals and plans
    with the last 4 weeks', which gives a shorter interval than the window average would."""
    jobs, end = job_histories(np.random.default_rng(6), days=84, rate_per_node_day=0.006, slots=16,
                              mean_job_days=2.0, trend_per_week=1.1)  # fmt: skip
    m = fit_mttf(jobs, min_gpus=128, observation_end=end)
    p = plan(1024, m, 0.9, restart_h=5 / 60)
    assert p.basis == "last 4 weeks"
    assert p.rate_per_node_day == pytest.approx(m.recent_rate_.rate)
    assert p.rates["window"].to_list() == ["whole window", "last 4 weeks"]
    avg = plan(1024, m.rate_.rate, 0.9, restart_h=5 / 60)
    assert p.recommended_interval_h < avg.recommended_interval_h
    assert p.recommended_at_upper_h < p.recommended_interval_h
    text = str(p)
    assert "the rate that applies now" in text
    assert "rather than the window average" in text


def test_planner_with_no_failures_plans_at_the_upper_bound():
    """No failures over a long exposure: the planner says so and plans at the upper bound
    (a conservative but reachable plan), never "out of reach"; over 7 minutes it says the
    data are too thin instead."""
    jobs, end = job_histories(np.random.default_rng(2), days=60, rate_per_node_day=0.0, slots=8)
    m = fit_mttf(jobs, min_gpus=128, observation_end=end)
    p = plan(1024, m, 0.9, restart_h=5 / 60)
    assert p.basis.startswith("upper 95% bound")
    assert p.rate_per_node_day == pytest.approx(m.rate_.high)
    assert p.recommended_interval_h is not None
    text = str(p)
    assert "no hardware failures" in text.lower()
    assert "conservative" in text
    assert "cannot be reached" not in text
    tiny, end = job_histories(
        np.random.default_rng(2), days=7 / 1440, rate_per_node_day=0.0, slots=1
    )
    t = str(plan(16384, fit_mttf(tiny, min_gpus=128, observation_end=end), 0.9, restart_h=5 / 60))
    assert "too little exposure" in t
    with pytest.raises(ValueError, match="positive"):
        plan(1024, 0.0, 0.9)


def test_planner_falls_back_to_the_window_when_recent_data_are_thin():
    jobs, end = job_histories(np.random.default_rng(4), days=168, rate_per_node_day=0.002, slots=4)
    m = fit_mttf(jobs, min_gpus=128, observation_end=end)
    assert m.recent_rate_.failures < 5 <= m.rate_.failures
    p = plan(1024, m, 0.9, restart_h=5 / 60)
    assert p.basis == "whole window"
    assert any("planned with the whole window's average rate" in n for n in p.notes)


# ---------------------------------------------------------------- ETTR: estimands and causes


def test_monte_carlo_estimands_compare_like_with_like():
    """A 6-h job: the ratio of means matches the exact renewal expectation within 4 standard
    errors; the mean of per-run ratios is a different quantity, well above it."""
    kw = dict(n_gpus=16384, rate_per_node_day=6.5e-3, ckpt_interval_h=0.5, restart_h=5 / 60)
    exact = float(
        expected_ettr(
            kw["n_gpus"], kw["rate_per_node_day"], 0.5, 5 / 60, variant="renewal", job_h=6.0
        )
    )
    mc = simulate_ettr(**kw, job_h=6.0, n_runs=20000, seed=3)
    assert mc.estimand == "ratio_of_means"
    assert abs(mc.estimate - exact) <= 4 * mc.stderr
    assert (mc.mean_of_ratios - exact) > 10 * mc.mean_of_ratios_stderr
    per_run = simulate_ettr(**kw, job_h=6.0, n_runs=20000, seed=3, estimand="mean_of_ratios")
    assert per_run.estimate == pytest.approx(float(per_run.ettr.mean()))
    lo, hi = mc.ci
    assert lo < mc.estimate < hi
    with pytest.raises(ValueError, match="estimand"):
        simulate_ettr(**kw, job_h=6.0, estimand="median")
    with pytest.raises(TypeError):
        simulate_ettr(16384, 6.5e-3, 0.5, 5 / 60, 6.0)  # job_h is keyword-only


def _attempt(job, start_h, end_h, state, domain, gpus=64):
    return {
        "cluster": "c", "job_id": job, "state": state, "failure_domain": domain,
        "submit_time": T0 if job != "late" else T0 + timedelta(hours=start_h),
        "start_time": T0 + timedelta(hours=start_h),
        "end_time": None if end_h is None else T0 + timedelta(hours=end_h),
        "n_accelerators": gpus, "n_nodes": max(gpus // 8, 1), "nodes": ["a"],
        "failure_cause": None, "culprit_node": None,
    }  # fmt: skip


def test_measured_ettr_separates_hardware_from_preemptions():
    """By hand (checkpoints every 1 h, restart 0.1 h): run 1 is preempted at 2.5 h, waits
    0.5 h, fails on hardware at 3 + 2.6 h, restarts at 6 h and completes at 8 h.
    Wall 8 h; scheduled 7.1 h; lost 0.5 (preempted) + 0.5 (hardware); overhead 0.1 x 2;
    productive 5.9 h. The preemption cost 0.5 lost + 0.5 wait + 0.1 restart = 1.1 h:
    hardware-only ETTR 5.9 / 6.9. Run 2 is still running at the observation end."""
    rows = [
        _attempt("1", 0.0, 2.5, "PREEMPTED", "preemption"),
        _attempt("1", 3.0, 5.6, "NODE_FAIL", "hardware"),
        _attempt("1", 6.0, 8.0, "COMPLETED", "none"),
        _attempt("late", 1.0, None, "RUNNING", "none"),
        _attempt("cpu", 0.0, 2.0, "COMPLETED", "none", gpus=0),
    ]
    jobs = pl.DataFrame(rows, schema_overrides={"end_time": pl.Datetime("us", "UTC")})
    r = job_run_ettr(
        jobs, ckpt_interval_h=1.0, restart_h=0.1, observation_end=T0 + timedelta(hours=9)
    )
    one = r.runs.filter(pl.col("job_id") == "1").row(0, named=True)
    assert (one["hw_interruptions"], one["preemptions"], one["other_interruptions"]) == (1, 1, 0)
    assert one["productive_h"] == pytest.approx(5.9)
    assert one["ettr"] == pytest.approx(5.9 / 8.0)
    assert one["ettr_hardware"] == pytest.approx(5.9 / 6.9)
    late = r.runs.filter(pl.col("job_id") == "late").row(0, named=True)
    assert late["open"]
    assert late["wall_h"] == pytest.approx(8.0)
    cpu = r.by_size.filter(pl.col("bucket") == 0).row(0, named=True)
    assert cpu["ettr_by_gpu_time"] is None  # no GPU time: no GPU-time weight, not nan
    text = str(r)
    assert "1 hardware, 1 preemptions" in text
    assert "what E[ETTR] models" in text
    assert not math.isnan(r.summary["ettr_hardware_by_run"][0])


# ---------------------------------------------------------------- lemon features censoring


def test_lemon_features_censor_at_the_observation_end():
    """A running attempt counts as an attempt, not a failure; an open drain counts its hours
    up to the observation end, not to the window's end."""
    end = T0 + timedelta(days=14)
    jobs = pl.DataFrame([
        _attempt("1", 24.0, 30.0, "FAILED", "user"),
        _attempt("2", 300.0, None, "RUNNING", "none"),
    ], schema_overrides={"end_time": pl.Datetime("us", "UTC")})  # fmt: skip
    ns = pl.DataFrame({"cluster": "c", "node": "a", "state": "DRAIN", "start": end - timedelta(hours=10),
                       "end": None, "reason": "x"}, schema_overrides={"end": pl.Datetime("us", "UTC")})  # fmt: skip
    he = pl.DataFrame(schema={"cluster": pl.String, "node": pl.String, "time": pl.Datetime("us", "UTC"),
                              "source": pl.String, "component": pl.String, "severity": pl.String})  # fmt: skip
    f = node_features({"jobs": jobs, "health_events": he, "node_states": ns}, window_days=14, step_days=14,
                      start=T0, end=end, observation_end=end)  # fmt: skip
    row = f.filter(pl.col("node") == "a").row(0, named=True)
    assert row["attempts"] == 2
    assert row["failed"] == 1
    assert row["hours_out"] == pytest.approx(10.0)


# ---------------------------------------------------------------- every result class

#: public classes that look like results but are not on the base, and why
NOT_RESULTS = {
    "reliability.ingest._delimited.SplitResult": "an internal of the delimited-file splitter",
    "reliability.ingest.sacct.parse.ValueTable": "the sacct reader's cache of parsed field values",
    "reliability.models.nodes.lemon.LemonDetector": "an estimator (fit/predict), not a result",
    "reliability.report.model.Report": "the report's document model",
    "reliability.report.model.Table": "a report block",
    "reliability.store.integrity.VerifyReport": "the store's integrity check (own text form)",
    "reliability.store.integrity.RepairReport": "the store's repair log (own text form)",
}
_LOOKS_LIKE = ("Result", "Report", "Analysis", "Stats", "Series", "Comparison", "Backtest",
               "Summary", "Plan", "Health", "Table", "Test", "Simulation", "ETTR")  # fmt: skip


def _public_classes() -> dict[str, type]:
    import importlib
    import inspect
    import pkgutil

    import reliability

    out = {}
    for m in pkgutil.walk_packages(reliability.__path__, "reliability."):
        if m.name == "reliability.__main__":
            continue
        mod = importlib.import_module(m.name)
        for name, obj in vars(mod).items():
            if inspect.isclass(obj) and obj.__module__ == m.name and not name.startswith("_"):
                out[f"{m.name}.{name}"] = obj
    return out


def _walk(value, seen: dict[type, list]) -> None:
    """Every Result inside ``value`` (fields of results, lists, dicts), by class."""
    import dataclasses

    if isinstance(value, Result):
        seen.setdefault(type(value), []).append(value)
    if isinstance(value, list | tuple):
        for v in value:
            _walk(v, seen)
    elif isinstance(value, dict):
        for v in value.values():
            _walk(v, seen)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            _walk(getattr(value, f.name), seen)
    if isinstance(value, Result):
        for name in ("dataset",):  # properties that hold results
            _walk(getattr(value, name, None), seen)


@pytest.fixture(scope="module")
def every_result(tmp_path_factory) -> dict[type, list]:
    """At least one instance of every result class: the tiny pipeline's stages (and the
    results inside them), the statistics results above, and small ones built here."""
    from datetime import UTC, datetime
    from pathlib import Path

    from test_pipeline import tiny_run

    from reliability.collect import CollectResult
    from reliability.experiments.backtests import LemonBacktest, QuarantineRun
    from reliability.sim.pod import simulate_pod
    from reliability.sim.run import simulate_cluster
    from reliability.store import IngestOutcome
    from reliability.sweep import SweepResult

    seen: dict[type, list] = {}
    run = tiny_run(tmp_path_factory)[1]
    _walk(run, seen)  # the RunResult and its stages' results
    from reliability.analyses import analyze_cluster

    _walk(analyze_cluster(run.outputs["cluster_data"].open(), min_gpus=1), seen)
    for case in ("normal", "one failure"):
        _walk(_results(case), seen)
    sim = simulate_cluster("small", days=1, seed=0)
    _walk(sim, seen)
    from reliability.ingest import read_sacct

    raw = sim.write(tmp_path_factory.mktemp("sim"))
    _walk(read_sacct(raw / "sacct.psv", tz=sim.config.tz), seen)
    _walk(simulate_pod("tpuv4", days=3, seed=0), seen)
    t = datetime(2025, 1, 1, tzinfo=UTC)
    _walk(IngestOutcome("raw.psv", "unchanged", "ab" * 32, 0, 0, 0), seen)
    _walk(CollectResult(Path("ds"), t, t + timedelta(days=1), "given", ("sacct ...",), dry_run=True), seen)  # fmt: skip
    agg = pl.DataFrame({"cell": ["a"], "key": ["ettr"], "n": [1], "mean": [0.9], "sd": [None],
                        "ci_low": [None], "ci_high": [None]}, schema_overrides={"sd": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64})  # fmt: skip
    res = pl.DataFrame({"cell": ["a"], "seed": [0], "key": ["ettr"], "value": [0.9]})
    _walk(SweepResult(results=res, aggregates=agg, tasks_run=1), seen)
    summary = pl.DataFrame({"metric": ["precision", "large-job failure rate cut"],
                            "value": [0.5, float("nan")], "paper": ["0.9", None]})  # fmt: skip
    flagged = pl.DataFrame({"node": ["n1"], "score": [0.9], "component": ["gpu"], "lemon": [True]})
    roots = pl.DataFrame({"component": ["gpu"], "flagged": [1], "true_lemons": [1]})
    _walk(LemonBacktest(summary=summary, flagged=flagged, root_causes=roots), seen)
    effect = pl.DataFrame({"metric": ["jobs", "job_share"], "value": [0.0, float("nan")]})
    _walk(QuarantineRun(summary=effect, flagged=flagged, split_day=10.0, seed=1,
                        flagged_on="the logs as they stood at the split"), seen)  # fmt: skip
    return seen


def test_a_class_that_looks_like_a_result_is_on_the_base():
    classes = _public_classes()
    looks = {
        k
        for k, v in classes.items()
        if not issubclass(v, Result)
        and (k.endswith(_LOOKS_LIKE) or hasattr(v, "_repr_html_") or hasattr(v, "print_summary"))
    }
    # a new result-like class must adopt the base (or be listed here with the reason)
    assert looks - set(NOT_RESULTS) == set()


@pytest.mark.slow  # 37 s: a pipeline run and two simulations
def test_results_of_real_runs_keep_the_contract(every_result):
    """Instances from a real pipeline run and simulations (not only the tiny examples)."""
    classes = _public_classes()
    results = {k: v for k, v in classes.items() if issubclass(v, Result) and v is not Result}
    assert len(results) >= 25
    missing = sorted(k for k, v in results.items() if v not in every_result)
    assert missing == [], "no instance of these result classes is checked: add one above"
    for cls, instances in every_result.items():
        for r in instances[:3]:
            name = cls.__name__
            s = r.summary
            assert isinstance(s, pl.DataFrame), name
            assert frame_is_finite(s), name
            _clean(str(r))
            html = r._repr_html_()
            _clean(html)
            assert "<table" in html, name
            buf = io.StringIO()
            r.print_summary(file=buf)
            _clean(buf.getvalue())
            assert r.title in buf.getvalue(), name
            for frame in r.tables().values():
                assert isinstance(frame, pl.DataFrame), name
                assert frame_is_finite(frame), name
            assert isinstance(r.sample_sizes, dict), name


# ---------------------------------------------------------------- enumerated: every Result subclass

ALL_RESULTS = all_results()
#: the tags Result._repr_html_ writes
_HTML_TAGS = {"div", "p", "strong", "em", "pre", "table", "thead", "tbody", "tr", "th", "td", "ul", "li"}  # fmt: skip


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _no_empty_heading(text: str, name: str) -> None:
    """A heading of the text form (a line ending in ":") is followed by its content, indented
    or a list: an empty section says nothing about why it is empty."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not line.rstrip().endswith(":"):
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        assert nxt.strip(), (name, "heading with nothing after it", line)
        assert _indent(nxt) > _indent(line) or nxt.lstrip().startswith("-"), (
            name, "heading followed by another heading", line, nxt
        )  # fmt: skip


def check_result_contract(r: Result) -> None:
    """The contract every result keeps (the module doc), on one instance."""
    name = type(r).__name__
    s = r.summary
    assert isinstance(s, pl.DataFrame), name
    assert frame_is_finite(s), (name, s)
    text = str(r)
    assert text.strip(), name
    _clean(text)
    _no_empty_heading(text, name)
    html = r._repr_html_()
    _clean(html)
    assert "<table" in html, name
    # every tag is one the base writes: text from the data (a reason, a raw line) is escaped
    tags = set(re.findall(r"</?\s*([A-Za-z][A-Za-z0-9]*)", html))
    assert tags <= _HTML_TAGS, (name, tags - _HTML_TAGS)
    buf = io.StringIO()
    r.print_summary(file=buf)
    _clean(buf.getvalue())
    assert r.title in buf.getvalue(), name
    for key, frame in r.tables().items():
        assert isinstance(key, str), name
        assert isinstance(frame, pl.DataFrame), (name, key)
        assert frame_is_finite(frame), (name, key)
    sizes = r.sample_sizes
    assert isinstance(sizes, dict), name
    assert sizes, f"{name}: no sample sizes (what was it estimated from?)"
    for k, v in sizes.items():
        assert isinstance(k, str), name
        assert isinstance(v, int | float), (name, k, v)
        assert not isinstance(v, bool), (name, k, v)
        assert math.isfinite(v), (name, k, v)
        assert v >= 0, (name, k, v)


@pytest.mark.parametrize("cls", ALL_RESULTS, ids=lambda c: c.__qualname__)
def test_every_result_class_has_an_example_that_keeps_the_contract(cls):
    """Every concrete Result subclass of the package (found by walking the class tree after
    importing every module, not listed by hand) builds a tiny instance of itself with
    ``_example()``, and that instance keeps the contract."""
    example = cls.__dict__.get("_example")
    assert example is not None, f"{cls.__module__}.{cls.__qualname__} has no _example()"
    r = cls._example()
    assert type(r) is cls
    check_result_contract(r)


#: results whose to_disk() fails, and why (a strict xfail: fixing one fails the test)
CANNOT_SAVE = {
    "ClusterResult": "its EventLog (the simulator's log) is not a dataclass: the run is saved "
    "by write() as raw logs, or pickled as a checkpoint",
}


@pytest.mark.parametrize(
    "cls",
    [
        pytest.param(c, marks=pytest.mark.xfail(strict=True, raises=TypeError,
                                                reason=CANNOT_SAVE[c.__name__]))
        if c.__name__ in CANNOT_SAVE else c
        for c in ALL_RESULTS
    ],
    ids=lambda c: c.__qualname__,
)  # fmt: skip
def test_every_result_example_round_trips_to_disk(cls, tmp_path):
    """Result.to_disk / from_disk (no pickle) give back the same result: the same text form
    and the same summary."""
    from polars.testing import assert_frame_equal

    r = cls._example()
    r.to_disk(tmp_path / "r")
    back = cls.from_disk(tmp_path / "r")
    assert type(back) is cls
    assert str(back) == str(r)
    assert_frame_equal(back.summary, r.summary)


def test_a_mapping_with_integer_keys_is_saved(tmp_path):
    """A pod's job-size mix is keyed by chips (ints): to_disk refused it ("only string keys")."""
    from reliability.sim.pod import PodResult

    r = PodResult._example()
    assert any(not isinstance(k, str) for k in r.config.jobs.sizes)
    r.to_disk(tmp_path / "pod")
    back = PodResult.from_disk(tmp_path / "pod")
    assert back.config == r.config
    assert back.config.jobs.sizes == r.config.jobs.sizes


def _takes_kind(cls: type) -> bool:
    import inspect

    example = cls.__dict__.get("_example")
    return example is not None and "kind" in inspect.signature(cls._example).parameters


@pytest.mark.parametrize(
    "cls", [c for c in ALL_RESULTS if _takes_kind(c)], ids=lambda c: c.__qualname__
)
def test_every_result_without_failures_keeps_the_contract(cls):
    """The degenerate example (no hardware failure at all) of every result class that has one:
    the contract holds, and what could not be estimated is said, not printed as 0 or nan."""
    r = cls._example(kind="no failures")
    assert type(r) is cls
    check_result_contract(r)
    with pytest.raises(ValueError, match="kind"):
        cls._example(kind="no such kind")


def test_the_walk_finds_a_result_class_it_was_not_told_about():
    """The enumeration is a walk of the class tree, not a list: a subclass defined here (of a
    subclass, and abstract ones left out) is found, and a class off the base is not."""
    import abc

    class _Base(Result):
        pass

    class ThrowawayResult(_Base):
        title = "Throwaway"

        @property
        def summary(self) -> pl.DataFrame:
            return pl.DataFrame({"x": [1.0]})

        def _lines(self) -> list[str]:
            return ["throwaway"]

    class AbstractResult(Result, abc.ABC):
        @abc.abstractmethod
        def f(self) -> None: ...

    class NotAResult:
        summary = pl.DataFrame({"x": [1.0]})

    found = all_results()
    assert ThrowawayResult in found
    assert _Base not in found
    assert AbstractResult not in found
    assert NotAResult not in found
    assert set(ALL_RESULTS) <= set(found)


def test_every_module_of_the_package_imports():
    """The walk imports every module; in the test environment none is skipped for a missing
    dependency (a plain install may skip one, with the reason)."""
    assert import_all_modules() == {}


def test_a_module_that_needs_a_missing_dependency_is_skipped_with_the_reason(monkeypatch):
    import importlib

    import reliability.testing as rt

    real = importlib.import_module

    def fake(name, *args, **kwargs):
        if name == "reliability.sweep":
            raise ModuleNotFoundError("No module named 'dask'", name="dask")
        if name == "reliability.cli":
            raise ModuleNotFoundError(
                "No module named 'reliability.nothere'", name="reliability.nothere"
            )
        return real(name, *args, **kwargs)

    monkeypatch.setattr(rt.importlib, "import_module", fake)
    monkeypatch.setattr(rt, "_NOT_IMPORTED", ("reliability.__main__", "reliability.cli"))
    assert rt.import_all_modules() == {"reliability.sweep": "needs dask, which is not installed"}
    monkeypatch.setattr(rt, "_NOT_IMPORTED", ("reliability.__main__",))
    with pytest.raises(ModuleNotFoundError, match="nothere"):
        rt.import_all_modules()


@pytest.mark.parametrize("nines", range(1, 13))
def test_a_fraction_just_below_one_keeps_its_nines(nines):
    """fmt_num gives 4 significant digits, which printed an OCS availability of 0.99998 as
    "1" (a component that never fails). A fraction below 1 keeps enough digits to read back
    below 1, and within half a unit of its last printed digit; other numbers keep 4."""
    from reliability._result import fmt_num

    x = 1.0 - 2.0 * 10.0**-nines  # 0.8, 0.98, ..., 0.999999999998
    text = fmt_num(x)
    back = float(text)
    assert back < 1.0, text
    shown = len(text.split(".")[1])
    assert abs(back - x) <= 0.5 * 10.0**-shown, text
    assert text == f"{x:.{max(4, nines + 1)}g}"
    assert fmt_num(-x) == "-" + text
    assert fmt_num(1.0) == "1"
    assert fmt_num(1 - 1.1e-16) == "0.9999999999999999"
    assert fmt_num(0.12345678) == "0.1235"
    assert fmt_num(123.456) == "123.5"


def test_hardware_only_ettr_leaves_out_the_first_queue_wait():
    """By hand (checkpoints every 1 h, restart 0.1 h): a run submitted 10 h before it first
    starts fails on hardware at 3.4 h (0.4 h lost since the checkpoint at 3 h), waits 0.5 h,
    restarts and completes at 6 h. Productive 3.4 + 2.1 - 0.1 - 0.4 = 5.0 h. Its ETTR counts
    the first wait (wall 16 h: 5/16); the hardware-only ETTR, labelled "what E[ETTR] models",
    kept it too (5/16 beside a closed form near 1). The closed forms model a running job with a
    wait q after each interruption, (1 - lambda(u0 + dt/2)) / (1 + lambda q): so the wait after
    the hardware failure stays and the first one goes: 5 / 6."""
    rows = [
        _attempt("1", 0.0, 3.4, "NODE_FAIL", "hardware"),
        _attempt("1", 3.9, 6.0, "COMPLETED", "none"),
    ]
    for r in rows:
        r["submit_time"] = T0 - timedelta(hours=10)
    jobs = pl.DataFrame(rows, schema_overrides={"end_time": pl.Datetime("us", "UTC")})
    r = job_run_ettr(
        jobs, ckpt_interval_h=1.0, restart_h=0.1, observation_end=T0 + timedelta(hours=9)
    )
    one = r.runs.row(0, named=True)
    assert one["productive_h"] == pytest.approx(5.0)
    assert one["ettr"] == pytest.approx(5.0 / 16.0)
    assert one["ettr_hardware"] == pytest.approx(5.0 / 6.0)
    assert "from the first start (what E[ETTR] models)" in str(r)


@pytest.mark.parametrize("nines", range(1, 13))
def test_a_percentage_below_100_never_prints_as_100(nines):
    """`simulate pod` printed an OCS availability of 0.99995 (one failure in 60 days) as
    "100.00%". fmt_pct keeps 2 decimals, more where a fraction below 1 would round to 100,
    and the text reads back within half a unit of its last decimal."""
    from reliability._result import MISSING, fmt_pct

    x = 1.0 - 5.0 * 10.0**-nines
    text = fmt_pct(x)
    assert text.endswith("%")
    back = float(text[:-1])
    assert back < 100.0, text
    decimals = len(text[:-1].split(".")[1])
    assert decimals >= 2
    assert abs(back - 100 * x) <= 0.5 * 10.0**-decimals + 1e-12, text
    assert fmt_pct(1.0) == "100.00%"
    assert fmt_pct(0.9912) == "99.12%"
    assert fmt_pct(None) == fmt_pct(float("nan")) == MISSING


def test_a_requeue_the_application_asked_for_loses_no_work():
    """By hand (checkpoints every 1 h, restart 0.1 h): a 64-GPU run exits at 2.5 h with its
    RequeueExit code (REQUEUED, attribution's domain "user": it checkpointed before exiting)
    and completes from 3 h to 5 h: nothing is lost, productive 2.5 + 2 - 0.1 = 4.4 h (0.5 h
    since the 2-h checkpoint was charged: 3.9 h, below the simulator's truth). A requeue by an
    admin still loses that 0.5 h, and a run that does not checkpoint loses its whole attempt."""

    def run(domain, job):
        return [
            _attempt(job, 0.0, 2.5, "REQUEUED", domain),
            _attempt(job, 3.0, 5.0, "COMPLETED", "none"),
        ]

    jobs = pl.DataFrame(run("user", "app") + run("admin", "adm"),
                        schema_overrides={"end_time": pl.Datetime("us", "UTC")})  # fmt: skip
    end = T0 + timedelta(hours=9)
    r = job_run_ettr(jobs, ckpt_interval_h=1.0, restart_h=0.1, observation_end=end).runs
    lost = dict(zip(r["job_id"], r["lost_h"], strict=True))
    prod = dict(zip(r["job_id"], r["productive_h"], strict=True))
    assert lost["app"] == pytest.approx(0.0)
    assert prod["app"] == pytest.approx(4.4)
    assert lost["adm"] == pytest.approx(0.5)
    none = job_run_ettr(jobs, ckpt_interval_h=1.0, restart_h=0.1, observation_end=end,
                        ckpt_min_gpus=128).runs  # fmt: skip
    assert dict(zip(none["job_id"], none["lost_h"], strict=True))["app"] == pytest.approx(2.5)


@pytest.mark.parametrize(
    ("old_module", "cls_name"),
    [
        ("reliability.models.mttf", "MTTFResult"),
        ("reliability.models.node_health", "NodeHealth"),
        ("reliability.models.recovery_cost", "RecoveryCosts"),
        ("reliability.models.lifetimes", "LifetimeResult"),
    ],
)
def test_a_result_saved_before_models_were_grouped_still_loads(old_module, cls_name, tmp_path):
    """Files written by the release before ``reliability.models`` was grouped name the flat
    module (``reliability.models.failures.mttf:MTTFResult``, as that release's save_result wrote it);
    they load as the class that lives in the group now."""
    import json

    import reliability.models as models
    from reliability._result_io import RESULT_FILE

    group = {"MTTFResult": "failures", "NodeHealth": "nodes", "RecoveryCosts": "recovery"}.get(
        cls_name, "lifetimes"
    )
    cls = getattr(getattr(models, group), cls_name)
    r = cls._example()
    r.to_disk(tmp_path / "r")
    path = tmp_path / "r" / RESULT_FILE
    doc = json.loads(path.read_text())
    assert doc["result"]["__dataclass__"] == f"{cls.__module__}:{cls_name}"
    doc["result"]["__dataclass__"] = f"{old_module}:{cls_name}"
    path.write_text(json.dumps(doc))
    back = cls.from_disk(tmp_path / "r")
    assert type(back) is cls
    assert str(back) == str(r)
