"""Does a trained lemon detector transfer to a fleet it was not trained on? (issue 40)

A classifier (:class:`reliability.models.LemonDetector`, the paper's approach) learns what a
lemon looks like on one fleet. This measures, per node, its precision and recall on fleets of
another origin, beside the statistical test (:func:`reliability.models.nodes.lemon_test`, the
default, which needs no training):

- **bundled**: the detector shipped with the package (trained on the bundled simulator);
- **A -> B**, **B -> A**: trained on histories of one independent generator (tests/generators,
  no code shared with reliability.sim), scored on held-out histories of the other;
- **A -> A**, **B -> B**: trained and scored on the same generator's (different) seeds, the
  in-domain ceiling of the classifier.

Every node is scored on the window ending at the end of its history (56-day windows, 7-day
steps). Train seeds and held-out seeds never overlap.

    nice -n 10 .venv/bin/python benchmarks/lemon_transfer.py [--train 2] [--held-out 3] [--nodes 512] [--days 120]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from generators import generate_a, generate_b

from reliability import Dataset
from reliability.models.nodes import LemonDetector, node_features, score_nodes
from reliability.models.nodes.lemon import default_detector
from reliability.models.nodes.lemon_features import FEATURES
from reliability.models.nodes.lemon_testing import lemon_test

WINDOW_DAYS = 56
GENERATORS = {"A": generate_a, "B": generate_b}


def history(gen: str, seed: int, nodes: int, days: float, lemons: int) -> dict:
    """Features, lemon-test flags and true lemons of one generated history."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        h = GENERATORS[gen](Path(tmp) / "h", seed=seed, n_nodes=nodes, days=days, n_lemons=lemons)
        ds = Dataset(Path(tmp) / "ds")
        h.ingest(ds)
        f = node_features(ds, WINDOW_DAYS, 7)
        test_flags = set(lemon_test(ds).flagged["node"].to_list())
    truth = set(h.nodes.filter(pl.col("is_lemon"))["node"].to_list())
    print(f"  {gen} seed {seed}: {len(truth)} lemons, {time.perf_counter() - t0:.0f} s", flush=True)
    return {"features": f, "lemons": truth, "test": test_flags}


def _labelled(runs: list[dict]) -> pl.DataFrame:
    return pl.concat(
        [r["features"].with_columns(lemon=pl.col("node").is_in(list(r["lemons"]))) for r in runs]
    )


def _score(flags: list[set[str]], runs: list[dict]) -> tuple[int, int, int]:
    tp = sum(len(f & r["lemons"]) for f, r in zip(flags, runs, strict=True))
    return tp, sum(len(f) for f in flags), sum(len(r["lemons"]) for r in runs)


def _line(name: str, tp: int, flagged: int, lemons: int) -> str:
    p = f"{tp / flagged:.2f}" if flagged else "  - "
    return f"  {name:<28} precision {p} ({tp}/{flagged})  recall {tp / max(lemons, 1):.2f} ({tp}/{lemons})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", type=int, default=2, help="training histories per generator")
    ap.add_argument("--held-out", type=int, default=3, help="held-out histories per generator")
    ap.add_argument("--nodes", type=int, default=512)
    ap.add_argument("--days", type=float, default=120.0)
    ap.add_argument("--lemons", type=int, default=8)
    a = ap.parse_args()
    train, held = {}, {}
    for gen in GENERATORS:
        print(f"generator {gen}:", flush=True)
        train[gen] = [history(gen, 700 + s, a.nodes, a.days, a.lemons) for s in range(a.train)]
        held[gen] = [history(gen, 800 + s, a.nodes, a.days, a.lemons) for s in range(a.held_out)]
    detectors = {"bundled (simulator)": default_detector()}
    for gen in GENERATORS:
        data = _labelled(train[gen])
        detectors[gen] = LemonDetector().fit(
            data.select(FEATURES), data["lemon"].to_numpy(), window_days=WINDOW_DAYS
        )
        d = detectors[gen]
        print(f"trained on {gen}: out-of-fold precision {d.oof_precision_:.2f}, recall "
              f"{d.oof_recall_:.2f} (per node-window)")  # fmt: skip
    print(f"\nper node, window ending at each held-out history's end ({a.nodes} nodes, "
          f"{a.days:g} days, {a.lemons} lemons at 5-10x, {a.held_out} histories per generator)")  # fmt: skip
    for target in GENERATORS:
        runs = held[target]
        print(f"scored on {target}:")
        print(_line("lemon_test (default)", *_score([r["test"] for r in runs], runs)))
        for name, det in detectors.items():
            label = name if name.startswith("bundled") else f"classifier {name} -> {target}"
            flags = [
                set(score_nodes(det, r["features"]).filter(pl.col("flagged"))["node"].to_list())
                for r in runs
            ]
            print(_line(label, *_score(flags, runs)))


if __name__ == "__main__":
    main()
