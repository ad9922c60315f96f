"""Train the bundled lemon detector (reliability/models/_data/lemon_detector.json) and measure
its precision per node on runs it was not trained on.

Simulates RSC-1's calibration at half scale (1,024 nodes, 150 days, the paper's 1.2% lemons)
and RSC-2's (1,000 nodes, 150 days, 1.7% lemons, a third of RSC-1's failure rate) with the
training seeds, so that one detector serves both clusters' rates, computes 56-day rolling node features from the ingested logs, fits
:class:`LemonDetector` on the simulator's true lemon labels and prints its out-of-fold figures
(per node-window, on its own training data). Then, on held-out seeds, it scores every node on
the window ending at mid-run and at the end of the run and reports what matters to an operator
(HPCA'25 §VI, issue 17): precision and recall **per node** (a node counts once, flagged or not)
on runs the detector never saw.

    python benchmarks/train_lemon_model.py [--seeds 101 102 103 104] [--held-out 201 202]
        [--presets rsc1 rsc2] [--target-precision 0.97] [--out PATH]

Tests use seeds 31-33 and the calibration benchmark 900+; neither is a training seed.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import numpy as np
import polars as pl

from reliability.experiments.backtests import simulate_to_dataset
from reliability.models.nodes import LemonDetector, node_features, score_nodes
from reliability.models.nodes.lemon_features import FEATURES
from reliability.sim.config import load_preset

WINDOW_DAYS = 56


def training_config(preset: str = "rsc1"):
    """RSC-1's or RSC-2's calibration at about half and full scale (1,024 and 1,000 nodes), 150 days."""
    n_nodes = {"rsc1": 1024, "rsc2": 1000}.get(preset, 1024)
    return replace(load_preset(preset), name=f"lemon-train-{preset}", n_nodes=n_nodes, days=150.0)


def _run(cfg, seed: int) -> tuple[pl.DataFrame, set[str]]:
    """Node features of one simulated run and its true lemons."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        r, ds = simulate_to_dataset(cfg, seed, Path(tmp))
        f = node_features(ds, WINDOW_DAYS, 7)
    names = cfg.node_names()
    lemons = {names[i] for i in np.flatnonzero(r.lemon)}
    print(
        f"seed {seed}: {len(lemons)} lemons, {f.height:,} node-windows, {time.perf_counter() - t0:.0f} s",
        flush=True,
    )
    return f, lemons


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[101, 102, 103, 104])
    ap.add_argument("--held-out", type=int, nargs="+", default=[201, 202])
    ap.add_argument("--target-precision", type=float, default=0.95)
    ap.add_argument(
        "--presets", nargs="+", default=["rsc1", "rsc2"],
        help="clusters to train and hold out on: each seed is run on each preset",
    )  # fmt: skip
    ap.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parents[1]
        / "reliability"
        / "models"
        / "_data"
        / "lemon_detector.json",
    )
    args = ap.parse_args()
    cfgs = [training_config(p) for p in args.presets]
    frames = []
    for cfg in cfgs:
        for seed in args.seeds:
            f, lemons = _run(cfg, seed)
            frames.append(f.with_columns(lemon=pl.col("node").is_in(list(lemons))))
    data = pl.concat(frames)
    det = LemonDetector(target_precision=args.target_precision).fit(
        data.select(FEATURES), data["lemon"].to_numpy(), window_days=WINDOW_DAYS
    )
    det.save(args.out)
    print(f"threshold {det.threshold_:.3f}: out-of-fold precision {det.oof_precision_:.3f}, "
          f"recall {det.oof_recall_:.3f} (per node-window, training seeds {args.seeds})")  # fmt: skip
    print(f"wrote {args.out}")
    for cfg in cfgs:
        tp = flagged = lemons_total = 0
        for seed in args.held_out:
            f, lemons = _run(cfg, seed)
            for day in (cfg.days / 2, cfg.days):
                at = cfg.start + timedelta(days=day)
                s = score_nodes(det, f, at=at).filter(pl.col("flagged"))
                hits = int(s["node"].is_in(list(lemons)).sum())
                tp, flagged, lemons_total = (
                    tp + hits,
                    flagged + s.height,
                    lemons_total + len(lemons),
                )
                print(f"  {cfg.name}, held-out seed {seed}, window ending day {day:g}: {s.height} nodes "
                      f"flagged, {hits} of them lemons ({len(lemons)} lemons)")  # fmt: skip
        print(f"{cfg.name}: held-out precision per node {tp / max(flagged, 1):.3f} ({tp}/{flagged}), "
              f"recall per node {tp / max(lemons_total, 1):.3f} ({tp}/{lemons_total}); paper: > 0.85")  # fmt: skip


if __name__ == "__main__":
    main()
