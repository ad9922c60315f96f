"""Typed stages: a stage's upstream stages are its parameters, checked when the stages are
declared; its cache key is the ``[analysis]`` keys it declares; a run's results are a typed
:class:`~reliability.pipeline.RunResults`.

The dependency graph is checked against the table in :mod:`reliability.pipeline.stages`'s
docstring (written for readers, an independent statement of what each stage needs)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from reliability.models.failures import MTTFResult, RateSeries
from reliability.pipeline import RunResults, load_pipeline
from reliability.pipeline import stages as stages_module
from reliability.pipeline.cache import StaleKeyError, run_checked
from reliability.pipeline.config import PipelineConfig
from reliability.pipeline.stages import STAGES, Stage, StageDefinitionError, check_stages
from reliability.pipeline.steps.cluster import AttributionResult

# ---------------------------------------------------------------- stage functions for the tests
# (module level: their annotations resolve against this module's names)


def source(cfg: PipelineConfig) -> AttributionResult:
    """Stand in for an upstream stage."""
    return AttributionResult._example()


def fit(attribution: AttributionResult, cfg: PipelineConfig) -> MTTFResult:
    """Stand in for a stage that needs ``attribution``."""
    return MTTFResult._example()


def misspelled(atribution: AttributionResult, cfg: PipelineConfig) -> MTTFResult:
    """Name its upstream stage wrong."""
    return MTTFResult._example()


def wrong_type(attribution: RateSeries, cfg: PipelineConfig) -> MTTFResult:
    """Take its upstream stage's result as another type."""
    return MTTFResult._example()


def untyped(attribution, cfg: PipelineConfig) -> MTTFResult:
    """Leave its upstream stage's result without a type."""
    return MTTFResult._example()


def _cfg(tmp_path: Path) -> PipelineConfig:
    p = tmp_path / "p.toml"
    p.write_text(
        '[pipeline]\nname = "t"\n[[inputs]]\nkind = "simulate-pod"\npreset = "tpuv4"\ndays = 10\n'
    )
    return load_pipeline(p)


# ---------------------------------------------------------------- declaration


def test_needs_are_the_parameter_names_other_than_cfg_and_work():
    st = Stage("fit", fit, reads=("min_gpus",))
    assert st.needs == ("attribution",)
    assert check_stages((Stage("attribution", source), st)) == (Stage("attribution", source), st)


def test_a_misspelled_parameter_fails_when_the_stages_are_declared():
    with pytest.raises(
        StageDefinitionError, match=r"'atribution' is no stage \(did you mean attribution\?\)"
    ):
        check_stages((Stage("attribution", source), Stage("fit", misspelled)))


def test_a_stage_needed_before_it_runs_is_refused():
    with pytest.raises(StageDefinitionError, match="runs after it"):
        check_stages((Stage("fit", fit), Stage("attribution", source)))


@pytest.mark.parametrize("fn", [wrong_type, untyped], ids=["wrong type", "no type"])
def test_a_parameter_must_take_the_upstream_result_type(fn):
    with pytest.raises(
        StageDefinitionError,
        match="must be annotated with stage attribution's result type AttributionResult",
    ):
        check_stages((Stage("attribution", source), Stage("fit", fn)))


def test_an_unknown_analysis_key_in_reads_fails_at_definition():
    with pytest.raises(
        StageDefinitionError,
        match=r"reads='min_gpu' is no \[analysis\] key \(did you mean min_gpus\?\)",
    ):
        Stage("fit", fit, reads=("min_gpu",))


def test_a_duplicate_stage_name_is_refused():
    with pytest.raises(StageDefinitionError, match="declared twice"):
        check_stages((Stage("attribution", source), Stage("attribution", source)))


# ---------------------------------------------------------------- the cache key


def test_the_key_holds_the_declared_keys_and_the_reason_rules(tmp_path):
    cfg = _cfg(tmp_path)
    st = Stage("fit", fit, reads=("min_gpus", "reasons"), key=lambda c: {"inputs": ["x"]})
    assert st.params(cfg) == {
        "inputs": ["x"],
        "min_gpus": cfg.analysis.min_gpus,
        "reasons": cfg.reasons_table,
    }


def test_a_real_stage_reading_an_undeclared_key_fails(tmp_path):
    """Stage ``mttf`` reads ``[analysis].min_gpus``: without it in ``reads`` the run fails
    instead of caching a result that a change of min_gpus would not invalidate."""
    cfg = _cfg(tmp_path)
    real = next(s for s in STAGES if s.name == "mttf")
    assert "min_gpus" in real.reads
    up = {"attribution": AttributionResult._example()}
    assert isinstance(run_checked(real, cfg, up, tmp_path), MTTFResult)
    undeclared = dataclasses.replace(real, reads=())
    with pytest.raises(StaleKeyError, match="stage mttf read min_gpus"):
        run_checked(undeclared, cfg, up, tmp_path)


# ---------------------------------------------------------------- the documented table


def _documented_needs() -> dict[str, set[str]]:
    """Parse the stage table in the stages module's docstring: stage -> the stages it needs.

    A row whose first column is blank continues the row above. Entries that are not stage
    names must be the table's own words for inputs ("cluster inputs", "pod inputs") or a
    parenthesised remark; anything else fails (a typo in the table is caught too).
    """
    doc = stages_module.__doc__
    lines = doc.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("Stage ") and "needs" in ln)
    rule = lines[head + 1]
    cols = [m.span() for m in re.finditer(r"-+", rule)]
    rows: dict[str, str] = {}
    last = None
    for ln in lines[head + 2 :]:
        if not ln.strip():
            break
        name = ln[cols[0][0] : cols[0][1]].strip()
        needs = ln[cols[1][0] : cols[1][1] + 1].strip()
        if name:
            rows[name] = needs
            last = name
        else:
            rows[last] += " " + needs
    names = {s.name for s in STAGES}
    out = {}
    for name, text in rows.items():
        got = set()
        for entry in re.sub(r"\([^)]*\)", "", text).split(","):
            entry = entry.strip()
            if not entry or entry in ("cluster inputs", "pod inputs"):
                continue
            assert entry in names, f"{name}: the table names {entry!r}, which is no stage"
            got.add(entry)
        out[name] = got
    return out


def test_the_derived_needs_are_the_documented_ones():
    documented = _documented_needs()
    assert list(documented) == [s.name for s in STAGES]  # every stage, in the order they run
    assert {s.name: set(s.needs) for s in STAGES} == documented


# ---------------------------------------------------------------- RunResults


def test_run_results_has_one_attribute_per_stage_none_when_it_did_not_run():
    assert [f.name for f in dataclasses.fields(RunResults)] == [s.name for s in STAGES]
    m = MTTFResult._example()
    r = RunResults.of({"mttf": m})
    assert r.mttf is m
    assert r["mttf"] is m
    assert r.rates is None
    assert r["rates"] is None
    assert r.ran() == ("mttf",)


def test_run_results_refuses_unknown_stages_and_wrong_types():
    with pytest.raises(KeyError, match="mtf"):
        RunResults.of({"mtf": MTTFResult._example()})
    with pytest.raises(KeyError):
        RunResults()["mtf"]
    with pytest.raises(TypeError, match="stage mttf: expected a MTTFResult, got RateSeries"):
        RunResults.of({"mttf": RateSeries._example()})
