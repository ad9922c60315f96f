"""A stage's cache key covers what it reads: :func:`reliability.pipeline.cache.run_checked` runs a
stage on a configuration that records the ``[analysis]`` keys (and reason rules) it reads, and
refuses one it does not declare (it would be served a stale cached result when that key changes).
Every real stage is run through it by the pipeline tests; here, stages written to break it."""

from __future__ import annotations

from pathlib import Path

import pytest

from reliability.pipeline import load_pipeline
from reliability.pipeline.cache import StaleKeyError, run_checked
from reliability.pipeline.stages import Stage


def _cfg(tmp_path: Path):
    p = tmp_path / "p.toml"
    p.write_text(
        '[pipeline]\nname = "t"\n[[inputs]]\nkind = "simulate-pod"\npreset = "tpuv4"\ndays = 10\n'
    )
    return load_pipeline(p)


def _stage(run, *keys):
    return Stage("probe", run, reads=keys)


def test_a_declared_key_passes_and_the_value_is_the_real_one(tmp_path):
    cfg = _cfg(tmp_path)
    got = run_checked(_stage(lambda cfg: cfg.analysis.min_gpus, "min_gpus"), cfg, {}, tmp_path)
    assert got == cfg.analysis.min_gpus


def test_an_undeclared_key_is_refused(tmp_path):
    cfg = _cfg(tmp_path)
    with pytest.raises(StaleKeyError, match="stage probe read target_ettr"):
        run_checked(_stage(lambda cfg: cfg.analysis.target_ettr, "min_gpus"), cfg, {}, tmp_path)


def test_a_key_read_through_a_property_or_an_alias_is_seen(tmp_path):
    """``restart_h`` is computed from ``restart_min``: reading it reads that key."""
    cfg = _cfg(tmp_path)

    def run(cfg):
        a = cfg.analysis
        return a.restart_h

    with pytest.raises(StaleKeyError, match="restart_min"):
        run_checked(_stage(run, "min_gpus"), cfg, {}, tmp_path)
    assert (
        run_checked(_stage(run, "restart_min"), cfg, {}, tmp_path) == cfg.analysis.restart_min / 60
    )


def test_the_reason_rules_need_their_key(tmp_path):
    cfg = _cfg(tmp_path)
    with pytest.raises(StaleKeyError, match="reasons"):
        run_checked(_stage(lambda cfg: cfg.reasons), cfg, {}, tmp_path)
    ok = _stage(lambda cfg: cfg.reasons, "reasons")
    assert run_checked(ok, cfg, {}, tmp_path) is not None


def test_a_key_the_params_derive_a_value_from_is_covered(tmp_path):
    """A stage keyed on a value derived from a key (the backtest's split day from the lemon
    window) may read that key: a change of it changes the derived value in the key."""
    cfg = _cfg(tmp_path)
    derived = Stage(
        "probe",
        lambda cfg: cfg.analysis.target_ettr,
        key=lambda c: {"half": c.analysis.target_ettr / 2},
    )
    assert run_checked(derived, cfg, {}, tmp_path) == cfg.analysis.target_ettr
