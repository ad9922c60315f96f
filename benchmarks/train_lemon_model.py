"""Train the bundled lemon detector (reliability/models/_data/lemon_detector.json).

Simulates an RSC-1-like cluster at half scale (1,024 nodes, 150 days, the paper's 1.5% lemons)
with several seeds, computes 56-day rolling node features, fits :class:`LemonDetector` on the
simulator's true lemon labels, and prints its out-of-fold precision and recall. Seeds 101-103
are used for training; tests evaluate on other seeds.

    python benchmarks/train_lemon_model.py [--seeds 101 102 103] [--out PATH]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl

from reliability.models import LemonDetector, node_features
from reliability.models.lemon_features import FEATURES
from reliability.sim.config import load_preset
from reliability.sim.run import simulate_cluster
from reliability.simulated import ingest_simulation

WINDOW_DAYS = 56


def training_config():
    base = load_preset("rsc1")
    return replace(base, name="lemon-train", n_nodes=1024, days=150.0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[101, 102, 103])
    ap.add_argument("--target-precision", type=float, default=0.95)
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
    cfg = training_config()
    names = cfg.node_names()
    frames = []
    for seed in args.seeds:
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            r = simulate_cluster(cfg, seed=seed)
            r.write(Path(tmp) / "raw")
            ingest_simulation(Path(tmp) / "raw", Path(tmp) / "ds")
            from reliability import Dataset

            f = node_features(Dataset(Path(tmp) / "ds"), WINDOW_DAYS, 7)
        lemons = [names[i] for i in np.flatnonzero(r.lemon)]
        frames.append(f.with_columns(lemon=pl.col("node").is_in(lemons)))
        print(
            f"seed {seed}: {len(lemons)} lemons, {f.height:,} node-windows, {time.perf_counter() - t0:.1f} s",
            flush=True,
        )
    data = pl.concat(frames)
    det = LemonDetector(target_precision=args.target_precision).fit(
        data.select(FEATURES), data["lemon"].to_numpy()
    )
    det.save(args.out)
    print(
        f"threshold {det.threshold_:.3f}: out-of-fold precision {det.oof_precision_:.3f}, recall {det.oof_recall_:.3f}"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
