"""The pipeline's lemon backtest forks the simulated run at its split.

`cluster_split` saves the simulated cluster's state at the backtest's split; `cluster_data`
continues it to the end (the baseline) while `lemon_quarantine` flags nodes on the logs as they
stood at the split and continues it with them drained. The oracles are the run simulated in
one go (the baseline's files must be byte-identical) and the backtest run the slow way, from
scratch (both runs simulated from the start): the pipeline's figures must be the same.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import polars as pl
import pytest

from reliability.experiments.backtests import lemon_backtest
from reliability.pipeline import load_pipeline
from reliability.pipeline.steps.common import sim_cluster_config
from reliability.pipeline.steps.data import cluster_data, cluster_split
from reliability.pipeline.steps.lemon import lemon, lemon_quarantine
from reliability.sim.run import simulate_cluster


@pytest.mark.slow
def test_pipeline_backtest_equals_the_backtest_from_scratch(tmp_path: Path) -> None:
    # the small preset on 96 nodes (four lemons) for 120 days: the bundled detector flags
    # three nodes at day 60 on seed 2 (the 48-node preset has only two lemons)
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
    for stage in ("split", "data", "quarantine", "lemon"):
        (tmp_path / stage).mkdir()
    split = cluster_split(cfg, tmp_path / "split")
    assert split.checkpoint is not None
    assert split.split_day == 60
    data = cluster_data(split, cfg, tmp_path / "data")
    q = lemon_quarantine(split, cfg, tmp_path / "quarantine")
    assert q.run is not None
    rep = lemon(data, None, q, cfg, tmp_path / "lemon")  # no attribution: the test on data alone
    assert rep.backtest is not None
    sim_cfg = sim_cluster_config(cfg.inputs[0])
    # the baseline continued from the split is the run simulated in one go, file for file
    simulate_cluster(sim_cfg, seed=2).write(tmp_path / "whole")
    for name in ("sacct.psv", "sacctmgr_events.psv", "health_checks.csv"):
        assert (data.raw[0] / name).read_bytes() == (tmp_path / "whole" / name).read_bytes()
    direct = lemon_backtest(
        sim_cfg, None, seed=2, split_day=60,
        window_days=cfg.analysis.lemon_window_days,
    )  # fmt: skip
    assert rep.backtest.summary.equals(direct.summary)
    # (the same nodes; their order is by p-value, which the logs at the split and the whole
    # run's windows ending there give to a few decimals apart)
    assert sorted(rep.backtest.flagged["node"]) == sorted(direct.flagged["node"])
    # the quarantine did something, so equal figures are not equal by default
    assert rep.backtest.metric("flagged nodes") > 0
    before = rep.backtest.summary.filter(pl.col("metric").str.contains("hardware, as is"))
    after = rep.backtest.summary.filter(pl.col("metric").str.contains("hardware, quarantined"))
    assert not before["value"].equals(after["value"])
