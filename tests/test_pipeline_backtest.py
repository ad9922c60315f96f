"""The pipeline's lemon backtest forks the simulated run at its split.

`cluster_data` saves the simulated cluster's state at the backtest's split and the lemon stage
continues it with the flagged nodes drained. The oracle is the backtest run the slow way, from
scratch (both runs simulated from the start): the pipeline's figures must be the same.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import polars as pl
import pytest

from reliability.models.lemon import default_detector
from reliability.pipeline import load_pipeline
from reliability.pipeline.steps.common import sim_cluster_config
from reliability.pipeline.steps.data import cluster_data
from reliability.pipeline.steps.lemon import lemon
from reliability.sim.experiments import checkpoint_path, lemon_backtest


@pytest.mark.slow
def test_pipeline_backtest_equals_the_backtest_from_scratch(tmp_path: Path) -> None:
    # the small preset on 96 nodes (four lemons) for 120 days: the bundled detector flags
    # three nodes at day 60 on seed 2 (none on 48 nodes, where there are only two lemons)
    small = resources.files("reliability.sim") / "presets" / "small.toml"
    preset = tmp_path / "small96.toml"
    preset.write_text(
        small.read_text(encoding="utf-8").replace("n_nodes = 48", "n_nodes = 96"), encoding="utf-8"
    )
    p = tmp_path / "bt.toml"
    p.write_text(
        '[pipeline]\nname = "bt"\nout = "out"\n\n[[inputs]]\nkind = "simulate-cluster"\n'
        f'preset = "{preset}"\nseed = 2\ndays = 120\n',
        encoding="utf-8",
    )
    cfg = load_pipeline(p)
    data = cluster_data(cfg, {}, tmp_path / "data")
    assert checkpoint_path(data.raw[0]).is_file()  # saved at the split (day 60 >= 56)
    rep = lemon(cfg, {"cluster_data": data}, tmp_path / "lemon")
    assert rep.backtest is not None
    direct = lemon_backtest(
        sim_cluster_config(cfg.inputs[0]), default_detector(), seed=2, split_day=60,
        window_days=cfg.analysis.lemon_window_days,
    )  # fmt: skip
    assert rep.backtest.summary.equals(direct.summary)
    assert rep.backtest.flagged.select("node").equals(direct.flagged.select("node"))
    # the quarantine did something, so equal figures are not equal by default
    assert rep.backtest.metric("flagged nodes") > 0
    before = rep.backtest.summary.filter(pl.col("metric").str.contains("hardware, before"))
    after = rep.backtest.summary.filter(pl.col("metric").str.contains("hardware, quarantined"))
    assert not before["value"].equals(after["value"])
