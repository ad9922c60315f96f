"""Training, scoring and the quarantine backtest of the lemon-node detector (HPCA'25 §VI).

The backtest is the honest kind: the simulator is run twice with the same seed (so the same
job stream and the same hardware faults), once as is and once with the flagged nodes drained
for good at the split time (running jobs finish first), and the runs are compared after the
split using the simulator's truth: the hardware-failure rate of large jobs (512+ GPUs in the
paper: 14% -> 4%) and the GPU-hours lost to hardware. Detection is scored against the true
lemon nodes: precision, recall, footprint (share of nodes removed; paper 1.2-1.7%).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from reliability.models.lemon import LemonDetector
from reliability.models.lemon_features import FEATURES, node_features

if TYPE_CHECKING:
    from reliability.sim.config import ClusterConfig
    from reliability.store import Dataset

__all__ = [
    "LemonBacktest",
    "dominant_component",
    "lemon_backtest",
    "score_nodes",
    "train_on_simulation",
]

PAPER = {
    "precision": "> 0.85",
    "footprint": "1.2% / 1.7% of nodes",
    "large_job_failure_rate": "14% -> 4% (512+ GPUs)",
}
#: node-down causes leave no component in the logs, only "Not responding"
NODE_DOWN_CLASS = "node down (dimm/psu/bios/cpu)"


def _simulate_to_dataset(cfg: ClusterConfig, seed: int, work: Path, quarantine: dict | None = None):
    from reliability.sim.run import ingest_simulation, simulate_cluster
    from reliability.store import Dataset

    r = simulate_cluster(cfg, seed=seed, quarantine=quarantine)
    r.write(work / "raw")
    ingest_simulation(work / "raw", work / "ds")
    return r, Dataset(work / "ds")


def train_on_simulation(
    cfg: ClusterConfig,
    seed: int,
    *,
    window_days: int = 28,
    step_days: int = 7,
    work: str | Path | None = None,
    **detector_params: Any,
) -> tuple[LemonDetector, pl.DataFrame]:
    """Simulate ``cfg`` with ``seed``, compute node features and fit a detector on the
    simulator's lemon labels. Returns (detector, labelled feature frame)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(work) if work is not None else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        r, ds = _simulate_to_dataset(cfg, seed, folder)
        feats = node_features(ds, window_days, step_days)
    names = cfg.node_names()
    lemons = {names[i] for i in np.flatnonzero(r.lemon)}
    labelled = feats.with_columns(lemon=pl.col("node").is_in(list(lemons)))
    det = LemonDetector(**detector_params).fit(
        labelled.select(FEATURES), labelled["lemon"].to_numpy()
    )
    return det, labelled


def score_nodes(
    detector: LemonDetector,
    features: pl.DataFrame,
    at: datetime | None = None,
    top_features: int = 3,
) -> pl.DataFrame:
    """Score every node on its window ending at ``at`` (default: the last window): a ranked
    frame of ``node, probability, flagged`` and the features that drove each score."""
    when = at if at is not None else features["window_end"].max()
    last = features.filter(pl.col("window_end") <= when)
    last = last.filter(pl.col("window_end") == last["window_end"].max())
    X = last.select(FEATURES)
    p = detector.predict_proba(X)[:, 1]
    contrib = detector.contributions(X)
    drivers = [
        ", ".join(
            f"{FEATURES[j]}={last[FEATURES[j]][i]:g}"
            for j in np.argsort(-contrib[i])[:top_features]
            if contrib[i, j] > 0
        )
        for i in range(last.height)
    ]
    return (
        last.select("cluster", "node", "window_end")
        .with_columns(probability=pl.Series(p), flagged=pl.Series(p >= detector.threshold_), drivers=pl.Series(drivers, dtype=pl.String))
        .sort("probability", "node", descending=[True, False])
    )  # fmt: skip


def dominant_component(
    dataset: Dataset | dict[str, pl.DataFrame], nodes: list[str], end: datetime | None = None
) -> pl.DataFrame:
    """The component with the most critical health events on each node (before ``end``), or
    :data:`NODE_DOWN_CLASS` when the node only went silent (DOWN, no component logged)."""
    he = dataset["health_events"] if isinstance(dataset, dict) else dataset.health_events
    ns = dataset["node_states"] if isinstance(dataset, dict) else dataset.node_states
    if end is not None:
        he, ns = he.filter(pl.col("time") < end), ns.filter(pl.col("start") < end)
    comp = (
        he.filter(pl.col("node").is_in(nodes) & (pl.col("component") != "unknown"))
        .group_by("node", component=pl.col("component").cast(pl.String))
        .agg(n=pl.len())
        .sort("n", "component", descending=[True, False])
        .group_by("node", maintain_order=True)
        .first()
    )
    downs = (
        ns.filter(pl.col("node").is_in(nodes) & (pl.col("state") == "DOWN"))
        .group_by("node")
        .agg(downs=pl.len())
    )
    return (
        pl.DataFrame({"node": nodes}, schema={"node": pl.String})
        .join(comp, on="node", how="left")
        .join(downs, on="node", how="left")
        .with_columns(pl.col("downs").fill_null(0), pl.col("n").fill_null(0))
        .with_columns(
            dominant=pl.when(pl.col("downs") > pl.col("n")).then(pl.lit(NODE_DOWN_CLASS))
            .otherwise(pl.col("component").fill_null(NODE_DOWN_CLASS))
        )
        .select("node", "dominant")
    )  # fmt: skip


@dataclass
class LemonBacktest:
    """Detection quality and the effect of quarantine, with the paper's figures beside."""

    summary: pl.DataFrame
    flagged: pl.DataFrame
    root_causes: pl.DataFrame
    notes: list[str] = field(default_factory=list)

    def metric(self, name: str) -> float:
        return float(self.summary.filter(pl.col("metric") == name)["value"][0])

    def __str__(self) -> str:
        lines = ["Lemon backtest (simulator re-run with the flagged nodes drained):"]
        for m, v, p in self.summary.select("metric", "value", "paper").iter_rows():
            lines.append(f"  {m:<36} {v:>10.4g}   {p or ''}")
        return "\n".join(lines + self.notes)

    def _repr_html_(self) -> str:
        return "<pre>" + str(self).replace("&", "&amp;").replace("<", "&lt;") + "</pre>"


def _large_job_stats(result, start_s: float, min_gpus: int) -> tuple[float, float, int, float]:
    """After ``start_s``: share of large attempts ended by hardware, their hardware
    interruptions per 1000 node-days, their count, and GPU-hours lost to hardware (all jobs)."""
    from reliability.sim.config import CAUSES

    a = result.log.frame("attempt").join(result.jobs.select("job", "gpus"), on="job")
    after = a.filter((pl.col("time") >= start_s) & pl.col("end_s").is_not_null())
    hw = pl.col("cause").is_in(list(CAUSES))
    big = after.filter(pl.col("gpus") >= min_gpus)
    share = float(big.select(hw.mean()).item() or 0.0) if big.height else float("nan")
    node_days = (
        float(
            big.select(
                (pl.col("nodes").list.len() * (pl.col("end_s") - pl.col("time"))).sum()
            ).item()
            or 0.0
        )
        / 86400.0
    )
    rate = (
        1000.0 * float(big.select(hw.sum()).item() or 0) / node_days if node_days else float("nan")
    )
    lost = (
        float(
            after.filter(hw)
            .select((pl.col("gpus") * (pl.col("end_s") - pl.col("time"))).sum())
            .item()
            or 0.0
        )
        / 3600.0
    )
    return share, rate, big.height, lost


def lemon_backtest(
    cfg: ClusterConfig,
    detector: LemonDetector,
    *,
    seed: int,
    split_day: float,
    window_days: int = 28,
    step_days: int = 7,
    min_gpus: int = 512,
    work: str | Path | None = None,
) -> LemonBacktest:
    """Flag nodes on the window ending at ``split_day`` of a run with ``seed``, re-run with
    them drained from then on, and compare (see module doc)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(work) if work is not None else Path(tmp)
        base, ds = _simulate_to_dataset(cfg, seed, folder / "base")
        split = cfg.start + timedelta(days=split_day)
        feats = node_features(ds, window_days, step_days, end=split)
        scores = score_nodes(detector, feats, at=split)
        flagged = scores.filter(pl.col("flagged"))
        comps = dominant_component(ds, flagged["node"].to_list(), end=split)
    names = cfg.node_names()
    lemon = {names[i] for i in np.flatnonzero(base.lemon)}
    from reliability.sim.config import CAUSES
    from reliability.sim.run import simulate_cluster

    quarantined = simulate_cluster(
        cfg, seed=seed, quarantine={n: split for n in flagged["node"].to_list()}
    )
    split_s = split_day * 86400.0
    r0, k0, n0, lost0 = _large_job_stats(base, split_s, min_gpus)
    r1, k1, n1, lost1 = _large_job_stats(quarantined, split_s, min_gpus)
    tp = flagged.filter(pl.col("node").is_in(list(lemon))).height
    precision = tp / flagged.height if flagged.height else float("nan")
    recall = tp / len(lemon) if lemon else float("nan")
    # truth root cause of each lemon: the cause of its failures
    f = base.log.frame("failure").filter(pl.col("lemon"))
    truth_cause = f.group_by("node").agg(cause=pl.col("cause").mode().first())
    truth_comp = truth_cause.with_columns(
        node=pl.Series([names[i] for i in truth_cause["node"].to_list()], dtype=pl.String),
        truth=pl.col("cause").replace_strict(
            {k: v.component for k, v in CAUSES.items()}, return_dtype=pl.String
        ),
        truth_node_down=pl.col("cause").replace_strict(
            {k: v.node_down for k, v in CAUSES.items()}, return_dtype=pl.Boolean
        ),
    ).select("node", "truth", "truth_node_down")
    flagged_out = (
        flagged.join(comps, on="node", how="left")
        .join(truth_comp, on="node", how="left")
        .with_columns(lemon=pl.col("node").is_in(list(lemon)))
    )
    root = (
        flagged_out.group_by("dominant").agg(flagged=pl.len(), true_lemons=pl.col("lemon").sum())
        .sort("flagged", "dominant", descending=[True, False])
    )  # fmt: skip
    rows = [
        ("precision", precision, PAPER["precision"]),
        ("recall", recall, None),
        ("flagged nodes", float(flagged.height), None),
        ("footprint (share of nodes)", flagged.height / cfg.n_nodes, PAPER["footprint"]),
        ("true lemon share", len(lemon) / cfg.n_nodes, None),
        (f"{min_gpus}+ GPU attempts failed by hardware, before", r0, "14%"),
        (f"{min_gpus}+ GPU attempts failed by hardware, quarantined", r1, "4%"),
        (f"{min_gpus}+ GPU interruptions per 1000 node-days, before", k0, None),
        (f"{min_gpus}+ GPU interruptions per 1000 node-days, quarantined", k1, None),
        (f"{min_gpus}+ GPU attempts (before / quarantined)", float(n0), f"{n1}"),
        ("GPU-hours lost to hardware, before", lost0, None),
        ("GPU-hours lost to hardware, quarantined", lost1, None),
    ]
    summary = pl.DataFrame(
        rows, schema={"metric": pl.String, "value": pl.Float64, "paper": pl.String}, orient="row"
    )
    return LemonBacktest(summary=summary, flagged=flagged_out, root_causes=root,
                         notes=[f"split at day {split_day:g}; window {window_days} days; seed {seed}"])  # fmt: skip
