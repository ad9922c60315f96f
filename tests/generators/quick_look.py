"""A quick look at the package's inference on one generated history (not a test).

Runs ``reliability.attribute_failures`` and ``reliability.models.fit_mttf`` (and the bundled
lemon detector) on a history of generator A or B and prints them beside the truth: hardware
recall, false hardware attributions, culprit nodes, r_f against the true r_f of the same
attempts, lemons flagged against lemons planted.

Usage (from ``tests/``, with the package importable)::

    python -m generators.quick_look a 1024 --seed 1 --days 60
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import polars as pl

from generators import generate_a, generate_b

HARDWARE_DOMAINS = ("hardware", "infrastructure")


def quick_look(which: str, n_nodes: int, seed: int, days: float, out: Path) -> list[str]:
    """Generate, ingest, attribute and fit; return the report lines.

    Parameters
    ----------
    which : str
        ``"a"`` or ``"b"``.
    n_nodes : int
        Fleet size.
    seed : int
        Generator seed.
    days : float
        History length [days].
    out : Path
        Working folder (history and Dataset).

    Returns
    -------
    list of str
        The report.
    """
    from reliability import Dataset, attribute_failures
    from reliability.models.failures import fit_mttf
    from reliability.models.nodes import node_features
    from reliability.models.nodes.lemon import default_detector, score_nodes

    gen = {"a": generate_a, "b": generate_b}[which]
    t0 = time.perf_counter()
    h = gen(out / "history", seed=seed, n_nodes=n_nodes, days=days)
    lines = [
        f"generator {which.upper()}: {n_nodes} nodes, {days:g} days, seed {seed}: "
        f"{h.attempts.height} attempts, {time.perf_counter() - t0:.1f} s"
    ]
    ds = Dataset(out / "ds")
    h.ingest(ds)
    att = attribute_failures(ds)
    truth = h.attempts.select(
        "job_id", "attempt", "hardware", "mechanism", "end_reason",
        pl.col("culprit_node").alias("true_culprit"),
    )  # fmt: skip
    m = att.join(truth, on=["job_id", "attempt"], how="left")
    pred = pl.col("failure_domain").is_in(HARDWARE_DOMAINS)
    tp = m.filter(pred & pl.col("hardware")).height
    fp = m.filter(pred & ~pl.col("hardware")).height
    fn = m.filter(~pred & pl.col("hardware")).height
    lines.append(
        f"  hardware-ended attempts {tp + fn}, attributed hardware {tp + fp}: recall "
        f"{tp / max(1, tp + fn):.3f}, false hardware {fp} ({fp / max(1, tp + fp):.3f} of those "
        "attributed)"
    )
    by = (
        m.filter(pl.col("hardware"))
        .group_by("mechanism", "failure_domain")
        .len()
        .sort("mechanism", "len")
    )
    lines.append(
        "  truth mechanism -> package domain: "
        + ", ".join(f"{a}->{b}: {n}" for a, b, n in by.iter_rows())
    )
    ok = m.filter(pred & pl.col("hardware"))
    right = int((ok["culprit_node"] == ok["true_culprit"]).sum())
    lines.append(f"  culprit node right in {right} of {ok.height}")
    for min_gpus in (1, 129):
        r = fit_mttf(att, min_gpus=min_gpus, gpus_per_node=h.gpus_per_node, observation_end=h.end)
        sub = h.attempts.filter((pl.col("n_gpus") >= min_gpus) & pl.col("start_time").is_not_null())
        rate = r.rate_.rate
        fit = f"{1000 * rate:.2f}" if rate is not None else "n/a"
        lines.append(
            f"  min_gpus={min_gpus}: fit_mttf r_f {fit} per 1000 node-days ({r.failures_} failures, "
            f"{r.node_days_:.0f} node-days); truth {1000 * h.true_rate(sub):.2f} (hazard "
            f"{sub['true_hazard'].sum():.1f}, {int(sub['hardware'].sum())} hardware-ended)"
        )
    if days < 56:
        lines.append("  lemons: not scored (the bundled detector wants 56-day windows)")
        return lines
    feats = node_features(ds, window_days=56, step_days=7, observation_end=h.end)
    sc = score_nodes(default_detector(), feats)
    lemons = set(h.nodes.filter("is_lemon")["node"])
    flagged = set(sc.filter("flagged")["node"])
    lines.append(
        f"  lemons: {len(lemons)} planted, {len(flagged)} flagged by the bundled detector, "
        f"{len(flagged & lemons)} of them lemons"
    )
    return lines


def main() -> None:
    """Command line: ``python -m generators.quick_look a|b N [--seed S] [--days D]``."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("which", choices=["a", "b"])
    p.add_argument("n_nodes", type=int)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--days", type=float, default=60.0)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print("\n".join(quick_look(args.which, args.n_nodes, args.seed, args.days, Path(tmp))))


if __name__ == "__main__":
    main()
