"""Validate the inference layer on worlds the package did not build (issue 40).

Two independent generators (tests/generators: their own schedulers, failure processes, reason
vocabularies; no code shared with reliability.sim) write Slurm exports with a known truth. Over
many seeds, with and without weekly swings of the failure rate, this measures:

- attribution: hardware recall (all hardware-ended attempts, and those that left any evidence:
  not "silent"), the share of attempts attributed to hardware that were not;
- r_f (fit_mttf, jobs of 129+ GPUs): bias against the true rate of the same attempts and the
  coverage of its 95% interval;
- lemon nodes (the statistical test, the default): precision and recall against the planted
  lemons, beside an oracle that knows the lemon and ordinary rates and the prior and flags a
  node when its posterior odds exceed 1 (the ceiling on those counts).

    nice -n 10 .venv/bin/python benchmarks/validate_inference.py [--seeds 20] [--nodes 512] [--days 56]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from generators import generate_a, generate_b

from reliability import Dataset, attribute_failures
from reliability.models.failures import fit_mttf
from reliability.models.nodes.lemon_testing import lemon_test

HW = ("hardware", "infrastructure")


def one(
    gen: str, seed: int, nodes: int, days: float, swing: float, out: Path, lemons: int,
    silent: float | None = None,
) -> dict:  # fmt: skip
    """Generate one history, run the inference, score it against the truth."""
    kw = {} if silent is None else {"silent_share": silent}
    h = {"a": generate_a, "b": generate_b}[gen](
        out / "h", seed=seed, n_nodes=nodes, days=days, weekly_swing=swing, n_lemons=lemons, **kw
    )
    ds = Dataset(out / "ds")
    h.ingest(ds)
    att = attribute_failures(ds)
    truth = h.attempts.select(
        "job_id", "attempt", "hardware", "mechanism", "true_hazard", "node_days"
    )
    m = att.join(truth, on=["job_id", "attempt"], how="left")
    pred = pl.col("failure_domain").is_in(HW)
    tp = m.filter(pred & pl.col("hardware")).height
    fp = m.filter(pred & ~pl.col("hardware")).height
    fn = m.filter(~pred & pl.col("hardware")).height
    fn_seen = m.filter(~pred & pl.col("hardware") & (pl.col("mechanism") != "silent")).height
    fit = fit_mttf(att, min_gpus=129, observation_end=h.end)
    big = m.filter((pl.col("n_accelerators") >= 129) & pl.col("start_time").is_not_null())
    true_rf = h.true_rate(big)
    r = fit.rate_
    # lemons
    t = lemon_test(ds, attributed=att)
    lem = set(h.nodes.filter(pl.col("is_lemon"))["node"].to_list())
    flagged = set(t.flagged["node"].to_list())
    nd = t.nodes.join(h.nodes.select("node", "base_rate_per_day", "factor", "is_lemon"), on="node")
    base = float(h.nodes.filter(~pl.col("is_lemon"))["base_rate_per_day"].mean())
    factor = float(h.nodes.filter(pl.col("is_lemon"))["factor"].mean()) if lem else 1.0
    prior = len(lem) / h.nodes.height
    k, e = nd["incidents"].to_numpy(), nd["exposure_days"].to_numpy()
    lr = stats.poisson.pmf(k, base * factor * e) / np.maximum(
        stats.poisson.pmf(k, base * e), 1e-300
    )
    oracle = {n for n, f in zip(nd["node"], prior * lr > (1 - prior), strict=True) if f}
    return {
        "gen": gen, "swing": swing, "seed": seed, "hw": tp + fn, "tp": tp, "fp": fp, "fn": fn,
        "fn_seen": fn_seen, "rate": r.rate, "low": r.low, "high": r.high, "true": true_rf,
        "lemons": len(lem), "flagged": len(flagged), "lemon_tp": len(flagged & lem),
        "oracle": len(oracle), "oracle_tp": len(oracle & lem),
    }  # fmt: skip


def summarise(rows: list[dict]) -> None:
    df = pl.DataFrame(rows)
    print(f"{'gen':<4}{'swing':>6}{'seeds':>6} {'recall':>7} {'seen rec':>9} {'false hw':>9} "
          f"{'r_f bias':>9} {'±2se':>6} {'CI cover':>9} {'lemon P':>8} {'lemon R':>8} {'oracle P':>9} {'oracle R':>9}")  # fmt: skip
    for (gen, swing), g in df.group_by("gen", "swing", maintain_order=True):
        tp, fp, fn, fns = g["tp"].sum(), g["fp"].sum(), g["fn"].sum(), g["fn_seen"].sum()
        ok = g.filter(pl.col("rate").is_not_null())
        rel = (ok["rate"] / ok["true"] - 1).to_numpy()
        cover = ((ok["low"] <= ok["true"]) & (ok["true"] <= ok["high"])).mean()
        lp = g["lemon_tp"].sum() / max(g["flagged"].sum(), 1)
        lr = g["lemon_tp"].sum() / max(g["lemons"].sum(), 1)
        op = g["oracle_tp"].sum() / max(g["oracle"].sum(), 1)
        orr = g["oracle_tp"].sum() / max(g["lemons"].sum(), 1)
        print(f"{gen:<4}{swing:>6g}{g.height:>6} {tp / (tp + fn):7.3f} {tp / (tp + fns):9.3f} "
              f"{fp / max(tp + fp, 1):9.4f} {rel.mean():+9.3f} {2 * rel.std(ddof=1) / np.sqrt(rel.size):6.3f} "
              f"{cover:9.2f} {lp:8.2f} {lr:8.2f} {op:9.2f} {orr:9.2f}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--nodes", type=int, default=512)
    ap.add_argument("--days", type=float, default=56.0)
    ap.add_argument("--lemons", type=int, default=6, help="lemons planted per history (5-10x)")
    ap.add_argument(
        "--silent", type=float, default=None,
        help="share of hardware failures that leave no trace (the generators' default: 0.04)",
    )  # fmt: skip
    a = ap.parse_args()
    rows = []
    t0 = time.perf_counter()
    for gen in ("a", "b"):
        for swing in (0.0, 0.4):
            for seed in range(a.seeds):
                with tempfile.TemporaryDirectory() as tmp:
                    rows.append(
                        one(gen, seed, a.nodes, a.days, swing, Path(tmp), a.lemons, a.silent)
                    )
    print(
        f"{len(rows)} histories of {a.nodes} nodes x {a.days:g} days in {time.perf_counter() - t0:.0f} s"
    )
    summarise(rows)


if __name__ == "__main__":
    main()
