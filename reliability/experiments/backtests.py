"""Experiments: runs of the simulator whose outcome is compared with the simulator's truth.

Models (:mod:`reliability.models`) only fit data; the simulator (:mod:`reliability.sim`) only
makes data. An experiment sits above both: it simulates, ingests what the simulation wrote
through the ordinary readers, runs a model on it, and scores the model against the truth the
simulator knows (true lemon nodes, true end causes). Nothing below this module imports it.

- :func:`train_on_simulation`: fit a :class:`~reliability.models.nodes.LemonDetector` on the
  simulator's true lemon labels.
- :func:`lemon_backtest`: the quarantine backtest of HPCA'25 §VI. Flag nodes at a split time,
  re-run the *same* simulation (same seed: same job stream, same hardware faults) with the
  flagged nodes drained from then on, and compare the two runs after the split (share of large
  jobs and attempts ended by hardware, their interruption rate, GPU-hours lost), with detection
  scored per node against the true lemons. A baseline run that was already simulated and
  ingested (a pipeline's) is reused: only the quarantined variant is simulated.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from reliability import references as ref
from reliability._result import Result
from reliability.models.nodes.lemon import (
    NODE_DOWN_CLASS,
    LemonDetector,
    dominant_component,
    score_nodes,
)
from reliability.models.nodes.lemon_features import FEATURES, node_features
from reliability.sim.config import CAUSES, ClusterConfig
from reliability.sim.emit import truth_attempts
from reliability.sim.run import resume_cluster, simulate_cluster, snapshot_cluster
from reliability.simulated import ingest_simulation
from reliability.store import Dataset

__all__ = [
    "NODE_DOWN_CLASS",
    "LemonBacktest",
    "QuarantineRun",
    "backtest_split_day",
    "large_job_effect",
    "lemon_backtest",
    "quarantine_at_checkpoint",
    "quarantine_run",
    "simulate_to_dataset",
    "train_on_simulation",
]


def backtest_split_day(days: float) -> float:
    """Return where a pipeline's lemon backtest splits a simulated run: the middle.

    The detector scores the last feature window ending by then (windows step from the data's
    start, so it may end up to a step earlier); the quarantine runs from there on.

    Parameters
    ----------
    days : float
        Length of the simulated run [days].

    Returns
    -------
    float
        The split [days since the start].
    """
    return days / 2.0


def simulate_to_dataset(
    cfg: ClusterConfig,
    seed: int,
    work: str | Path,
    *,
    quarantine: dict | None = None,
    checkpoint: tuple[float, str | Path] | None = None,
    resume: str | Path | None = None,
) -> tuple[Any, Dataset]:
    """Simulate ``cfg`` with ``seed`` and ingest what it wrote through the ordinary readers.

    The raw logs go to ``work/raw`` and the Dataset to ``work/ds``.

    Parameters
    ----------
    cfg : ClusterConfig
        The cluster to simulate.
    seed : int
        Seed of the simulation.
    work : str or pathlib.Path
        Folder for ``raw/`` and ``ds/``.
    quarantine : dict or None
        Nodes to drain and from when (node name -> UTC time), as ``simulate_cluster``'s
        ``quarantine``; None: none.
    checkpoint : tuple of (float, str or Path), optional
        ``(day, path)``: also save the run's state at ``day`` [days since the start]
        (``simulate_cluster``'s ``checkpoint``).
    resume : str or Path, optional
        A checkpoint of this configuration and seed to continue from instead of simulating
        from the start (:func:`~reliability.sim.run.resume_cluster`; the same result).

    Returns
    -------
    result : ClusterResult
        The run (:class:`~reliability.sim.ClusterResult`, with its truth).
    dataset : Dataset
        The ingested Dataset at ``work/ds``.
    """
    work = Path(work)
    if resume is not None:
        r = resume_cluster(resume, config=cfg, seed=seed, quarantine=quarantine)
    else:
        r = simulate_cluster(cfg, seed=seed, quarantine=quarantine, checkpoint=checkpoint)
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
    """Fit a lemon detector on a simulated cluster's true lemon labels.

    Simulates ``cfg`` with ``seed``, computes node features from the ingested logs
    (:func:`~reliability.models.nodes.lemon_features.node_features`) and fits a
    :class:`~reliability.models.nodes.LemonDetector` on them.

    Parameters
    ----------
    cfg : ClusterConfig
        The cluster to simulate.
    seed : int
        Seed of the simulation.
    window_days : int
        Length of each feature window [days].
    step_days : int
        Step between the ends of successive feature windows [days].
    work : str or pathlib.Path or None
        Folder for the raw logs and the Dataset (None: a temporary folder, removed after).
    **detector_params
        Passed to :class:`~reliability.models.nodes.LemonDetector`.

    Returns
    -------
    detector : LemonDetector
        The fitted detector.
    labelled : polars.DataFrame
        The labelled feature frame: node features plus ``lemon`` (truth).
    """
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(work) if work is not None else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        r, ds = simulate_to_dataset(cfg, seed, folder)
        feats = node_features(ds, window_days, step_days)
    names = cfg.node_names()
    lemons = {names[i] for i in np.flatnonzero(r.lemon)}
    labelled = feats.with_columns(lemon=pl.col("node").is_in(list(lemons)))
    det = LemonDetector(**detector_params).fit(
        labelled.select(FEATURES), labelled["lemon"].to_numpy()
    )
    return det, labelled


@dataclass
class LemonBacktest(Result):
    """Detection quality and the effect of quarantine, with the paper's figures beside.

    HPCA'25 §VI: the paper's precision (> 85%), footprint and 512+ GPU job failure share
    (14% -> 4%) stand in the ``paper`` column.

    Attributes
    ----------
    summary : polars.DataFrame
        ``metric, value, paper`` rows (shares are fractions, rates per 1000 node-days; null
        where not measurable).
    flagged : polars.DataFrame
        The flagged nodes with their score, dominant logged component and truth.
    root_causes : polars.DataFrame
        Flagged nodes by dominant component, with how many are true lemons.
    notes : list of str
        The split, window and seed.
    """

    title = "Lemon backtest: the simulator re-run with the flagged nodes drained"
    summary: pl.DataFrame
    flagged: pl.DataFrame
    root_causes: pl.DataFrame
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.summary = self.summary.with_columns(pl.col("value").fill_nan(None))

    def metric(self, name: str) -> float:
        """Return the value of the summary row ``name``.

        Parameters
        ----------
        name : str
            A ``metric`` of :attr:`summary` (e.g. ``"precision (per node)"``).

        Returns
        -------
        float
            The value (nan where not measurable).

        Raises
        ------
        KeyError
            If no summary row has that name (the message lists the metrics).
        """
        rows = self.summary.filter(pl.col("metric") == name)
        if rows.height == 0:
            raise KeyError(f"no metric {name!r}; have {self.summary['metric'].to_list()}")
        v = rows["value"][0]
        return float("nan") if v is None else float(v)

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """How many nodes were flagged (the sample the precision is measured on)."""
        return {"flagged nodes": self.flagged.height}

    def tables(self) -> dict[str, pl.DataFrame]:
        """Return the tables a report shows.

        Returns
        -------
        dict of str to polars.DataFrame
            ``summary`` and ``root causes``.
        """
        return {"summary": self.summary, "root causes": self.root_causes}

    def _lines(self) -> list[str]:
        lines = ["Lemon backtest (simulator re-run with the flagged nodes drained):"]
        for m, v, p in self.summary.select("metric", "value", "paper").iter_rows():
            shown = "not measurable" if v is None or not np.isfinite(v) else f"{v:>10.4g}"
            lines.append(f"  {m:<52} {shown:>14}   {p or ''}")
        return lines

    @classmethod
    def _example(cls) -> LemonBacktest:
        """Build a tiny instance: two flagged nodes, one a true lemon (for contract tests)."""
        summary = pl.DataFrame(
            {
                "metric": ["precision (per node)", "large-job failure rate cut"],
                "value": [0.5, float("nan")],
                "paper": ["> 85%", "14% -> 4%"],
            }
        )
        flagged = pl.DataFrame(
            {
                "node": ["n03", "n07"],
                "score": [0.91, 0.62],
                "component": ["gpu_memory", "gpu"],
                "lemon": [True, False],
            }
        )
        roots = pl.DataFrame(
            {"component": ["gpu", "gpu_memory"], "flagged": [1, 1], "true_lemons": [0, 1]}
        )
        return cls(
            summary=summary,
            flagged=flagged,
            root_causes=roots,
            notes=["split at day 10, 14-day window, seed 1"],
        )


@dataclass
class QuarantineRun(Result):
    """The quarantined side of the lemon backtest (HPCA'25 §VI).

    The nodes flagged at the split, and the large jobs after it in the run with them drained.

    Attributes
    ----------
    summary : polars.DataFrame
        ``metric, value`` rows: the :func:`large_job_effect` figures of the quarantined run
        after the split (null where not measurable).
    flagged : polars.DataFrame
        The flagged nodes with their score and dominant logged component.
    split_day : float
        When the flagged nodes were drained [days since the start].
    seed : int
        The run's seed.
    flagged_on : str
        Which logs the detector scored (the run as observed at the split, or the whole run's
        windows ending there).
    """

    title = "Lemon quarantine: the run with the flagged nodes drained"
    summary: pl.DataFrame
    flagged: pl.DataFrame
    split_day: float
    seed: int
    flagged_on: str = ""

    def __post_init__(self) -> None:
        self.summary = self.summary.with_columns(pl.col("value").fill_nan(None))

    def effect(self) -> dict[str, float]:
        """Return the quarantined run's :func:`large_job_effect` after the split.

        Returns
        -------
        dict of str to float
            Metric -> value (nan where not measurable).
        """
        rows = self.summary.select("metric", "value").iter_rows()
        return {m: float("nan") if v is None else float(v) for m, v in rows}

    def _lines(self) -> list[str]:
        return [
            f"Quarantine from day {self.split_day:g} (seed {self.seed}): {self.flagged.height} "
            f"nodes flagged on {self.flagged_on}"
        ]

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """How many nodes were flagged and drained."""
        return {"flagged nodes": self.flagged.height}

    @classmethod
    def _example(cls) -> QuarantineRun:
        """Build a tiny instance: two nodes drained at day 10 (for contract tests)."""
        effect = pl.DataFrame({"metric": ["jobs", "job_share"], "value": [12.0, float("nan")]})
        flagged = pl.DataFrame(
            {"node": ["n03", "n07"], "score": [0.91, 0.62], "component": ["gpu_memory", "gpu"]}
        )
        return cls(
            summary=effect,
            flagged=flagged,
            split_day=10.0,
            seed=1,
            flagged_on="the logs as they stood at the split",
        )


def quarantine_run(
    cfg: ClusterConfig,
    detector: LemonDetector | None,
    *,
    seed: int,
    split_day: float,
    flag_on: Dataset,
    flagged_on: str,
    window_days: int = 28,
    step_days: int = 7,
    min_gpus: int = 512,
    checkpoint: str | Path | None = None,
) -> QuarantineRun:
    """Flag nodes on the last window ending by the split and run the cluster with them drained.

    HPCA'25 §VI. The half of :func:`lemon_backtest` that needs no baseline run.

    Parameters
    ----------
    cfg : ClusterConfig
        The simulated cluster.
    detector : LemonDetector or None
        A fitted lemon detector; None: the statistical test
        (:func:`reliability.models.nodes.lemon_test`) on the history before the split.
    seed : int
        Seed of the run (the baseline's: same job stream, same hardware faults).
    split_day : float
        When the flagged nodes are drained [days since the start].
    flag_on : Dataset
        The logs the detector scores (only what lies before the split is used).
    flagged_on : str
        Says which logs those are (kept in the result).
    window_days, step_days : int
        Length of the feature windows and the step between their ends [days].
    min_gpus : int
        Large jobs are those with at least this many GPUs (paper: 512).
    checkpoint : str or pathlib.Path or None
        The baseline's state saved at the split: the quarantined run continues from it
        instead of being simulated from the start (the same result).

    Returns
    -------
    QuarantineRun
        The flagged nodes and the quarantined run's large-job figures after the split.
    """
    split = cfg.start + timedelta(days=split_day)
    if detector is None:
        from reliability.models.nodes.lemon_testing import lemon_test

        flagged = lemon_test(flag_on, end=split).flagged
    else:
        feats = node_features(flag_on, window_days, step_days, end=split)
        scores = score_nodes(detector, feats, at=split)
        flagged = scores.filter(pl.col("flagged"))
    comps = dominant_component(flag_on, flagged["node"].to_list(), end=split)
    drain = dict.fromkeys(flagged["node"].to_list(), split)
    if checkpoint is not None:
        quarantined = resume_cluster(checkpoint, config=cfg, seed=seed, quarantine=drain)
    else:
        quarantined = simulate_cluster(cfg, seed=seed, quarantine=drain)
    after = large_job_effect(
        truth_attempts(cfg, quarantined.jobs, quarantined.log), split, min_gpus=min_gpus
    )
    summary = pl.DataFrame(
        {"metric": list(after), "value": [float(v) for v in after.values()]},
        schema={"metric": pl.String, "value": pl.Float64},
    )
    return QuarantineRun(
        summary=summary,
        flagged=flagged.join(comps, on="node", how="left"),
        split_day=float(split_day),
        seed=seed,
        flagged_on=flagged_on,
    )


def quarantine_at_checkpoint(
    cfg: ClusterConfig,
    detector: LemonDetector | None,
    *,
    seed: int,
    checkpoint: str | Path,
    window_days: int = 28,
    step_days: int = 7,
    min_gpus: int = 512,
    work: str | Path,
) -> QuarantineRun:
    """Flag nodes on the logs as they stood at a checkpoint, then run on with them drained.

    The run's logs up to the checkpoint (:func:`~reliability.sim.run.snapshot_cluster`) are
    written and ingested as a site's would be at that moment, the detector scores the last
    window ending by then, and the run continues from the checkpoint with the flagged nodes
    drained.
    It needs only the checkpoint, not the rest of the baseline run, so a pipeline runs it
    beside the baseline's second half.

    Parameters
    ----------
    cfg : ClusterConfig
        The simulated cluster.
    detector : LemonDetector or None
        A fitted lemon detector; None: the statistical test
        (:func:`reliability.models.nodes.lemon_test`) on the history before the split.
    seed : int
        The run's seed.
    checkpoint : str or pathlib.Path
        The baseline's state at the split (``simulate_cluster(checkpoint=...)``).
    window_days, step_days : int
        Length of the feature windows and the step between their ends [days].
    min_gpus : int
        Large jobs are those with at least this many GPUs (paper: 512).
    work : str or pathlib.Path
        Folder for the logs at the split (``at_split/raw``, removed once ingested) and their
        Dataset (``at_split/ds``).

    Returns
    -------
    QuarantineRun
        The flagged nodes and the quarantined run's large-job figures after the split.

    Raises
    ------
    ValueError
        If the checkpoint belongs to another configuration or seed.
    """
    snap = snapshot_cluster(checkpoint, config=cfg, seed=seed)
    raw, ds_path = Path(work) / "at_split" / "raw", Path(work) / "at_split" / "ds"
    snap.write(raw)
    assert snap.observed_days is not None  # a snapshot always says where its logs end
    split_day = snap.observed_days
    # the run at the split is on disk now; the quarantined run loads its own copy (the
    # snapshot's simulator was freed when snapshot_cluster returned: it cleared its events)
    del snap
    ingest_simulation(raw, ds_path)
    shutil.rmtree(raw)  # the Dataset holds what the detector reads
    return quarantine_run(
        cfg,
        detector,
        seed=seed,
        split_day=split_day,
        flag_on=Dataset(ds_path),
        flagged_on="the logs as they stood at the split",
        window_days=window_days,
        step_days=step_days,
        min_gpus=min_gpus,
        checkpoint=checkpoint,
    )


def large_job_effect(
    attempts: pl.DataFrame, split: Any, *, min_gpus: int = 512, hardware: str = "hardware"
) -> dict[str, float]:
    """Measure how large jobs fared after ``split``, from one attempt per row.

    Jobs count when their first attempt started at or after ``split``; attempts when they
    started at or after it and ended.

    Parameters
    ----------
    attempts : polars.DataFrame
        One row per attempt with ``job_id``, ``start_time``, ``end_time``, ``gpus`` (or
        ``n_accelerators``), ``n_nodes`` and the boolean column ``hardware``.
    split : datetime
        Start of the period measured [UTC].
    min_gpus : int
        Large jobs are those with at least this many GPUs (HPCA'25 §VI: 512).
    hardware : str
        Name of the boolean column that says an attempt was ended by hardware.

    Returns
    -------
    dict of str to float
        ``jobs``, ``job_share`` (share of those jobs with an attempt ended by hardware),
        ``attempts``, ``attempt_share``, ``rate_per_1000_node_days`` (hardware-ended attempts
        per 1000 node-days of large attempts) and ``gpu_hours_lost`` (GPU-hours of
        hardware-ended attempts of every size); nan where there is nothing to divide by.
    """
    gpus = "gpus" if "gpus" in attempts.columns else "n_accelerators"
    ended = attempts.filter(pl.col("end_time").is_not_null() & pl.col("start_time").is_not_null())
    hours = (pl.col("end_time") - pl.col("start_time")).dt.total_seconds() / 3600.0
    after = ended.filter(pl.col("start_time") >= split)
    big = after.filter(pl.col(gpus) >= min_gpus)
    first = (
        attempts.filter(pl.col(gpus) >= min_gpus)
        .group_by("job_id")
        .agg(first=pl.col("start_time").min(), hit=pl.col(hardware).any())
        .filter(pl.col("first") >= split)
    )
    node_days = float(big.select((pl.col("n_nodes").cast(pl.Float64) * hours).sum()).item()) / 24
    hw = int(big.get_column(hardware).sum())
    nan = float("nan")
    return {
        "jobs": float(first.height),
        "job_share": float(first.get_column("hit").mean()) if first.height else nan,
        "attempts": float(big.height),
        "attempt_share": hw / big.height if big.height else nan,
        "rate_per_1000_node_days": 1000.0 * hw / node_days if node_days else nan,
        "gpu_hours_lost": float(
            after.filter(pl.col(hardware)).select((pl.col(gpus) * hours).sum()).item() or 0.0
        ),
    }


def _truth_lemons(raw: Path) -> set[str]:
    nodes = pl.read_parquet(raw / "truth" / "nodes.parquet")
    return set(nodes.filter(pl.col("lemon")).get_column("node").to_list())


def _check_baseline(raw: Path, cfg: ClusterConfig, seed: int) -> None:
    try:
        doc = json.loads((raw / "truth" / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{raw}: not a simulator output folder with truth/ ({exc})") from None
    want = json.loads(json.dumps({**cfg.as_dict(), "seed": seed}, default=str))
    if doc != want:
        diff = sorted(k for k in set(doc) | set(want) if doc.get(k) != want.get(k))
        raise ValueError(
            f"{raw}: the baseline was simulated with another configuration or seed "
            f"(differs in {diff}); it cannot stand for this backtest's baseline"
        )


def lemon_backtest(
    cfg: ClusterConfig,
    detector: LemonDetector | None,
    *,
    seed: int,
    split_day: float,
    window_days: int = 28,
    step_days: int = 7,
    min_gpus: int = 512,
    work: str | Path | None = None,
    baseline: tuple[str | Path, Dataset | str | Path] | None = None,
    checkpoint: str | Path | None = None,
    quarantine: QuarantineRun | None = None,
) -> LemonBacktest:
    """Run the quarantine backtest of HPCA'25 §VI on a simulated cluster.

    Flag nodes on the last window ending by ``split_day``, re-run with them drained from then on
    (same seed), and compare both runs after the split (see the module doc).

    Parameters
    ----------
    cfg : ClusterConfig
        The simulated cluster.
    detector : LemonDetector or None
        A fitted lemon detector, which scores the nodes on the last feature window ending by the
        split (windows step by ``step_days`` from the data's start, so it may end up to a step
        before the split); None: the statistical test
        (:func:`reliability.models.nodes.lemon_test`) on the history before the split.
    seed : int
        Seed of both runs (same job stream, same hardware faults).
    split_day : float
        When the flagged nodes are drained [days since the start].
    window_days, step_days : int
        Length of the feature windows and the step between their ends [days].
    min_gpus : int
        Large jobs are those with at least this many GPUs (paper: 512).
    work : str or pathlib.Path or None
        Folder for the runs (None: a temporary one, removed after).
    baseline : (str or pathlib.Path, Dataset or str or pathlib.Path) or None
        ``(raw folder, Dataset)`` of the run as is, already simulated with ``cfg`` and
        ``seed`` and ingested (a pipeline's): reused instead of simulated again. Its
        ``truth/config.json`` must match ``cfg`` and ``seed``.
    checkpoint : str or pathlib.Path or None
        The baseline's state saved at or before the split
        (``simulate_cluster(checkpoint=...)``): the quarantined run continues from it instead
        of being simulated from the start (the same result, half the time at a mid-run split).
    quarantine : QuarantineRun or None
        The quarantined side already run (:func:`quarantine_at_checkpoint`, which flags on
        the logs as they stood at the split); None: flag on ``baseline``'s windows ending at
        the split and run it here.

    Returns
    -------
    LemonBacktest
        Detection scored per node against the true lemons (precision, recall, footprint;
        paper: > 85% on 1.2-1.7% of nodes) and the quarantine's effect on large jobs (paper:
        the 512+ GPU job failure rate fell from 14% to 4%).

    Raises
    ------
    ValueError
        If ``baseline``'s raw folder has no ``truth/`` or was simulated with another
        configuration or seed, or ``quarantine`` belongs to another seed or split.
    """
    split = cfg.start + timedelta(days=split_day)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(work) if work is not None else Path(tmp)
        if baseline is None:
            simulate_to_dataset(cfg, seed, folder / "base")
            raw, ds = folder / "base" / "raw", Dataset(folder / "base" / "ds")
        else:
            raw = Path(baseline[0])
            ds = baseline[1] if isinstance(baseline[1], Dataset) else Dataset(baseline[1])
            _check_baseline(raw, cfg, seed)
        base_attempts = pl.read_parquet(raw / "truth" / "attempts.parquet")
        truth_failures = pl.read_parquet(raw / "truth" / "failures.parquet")
        lemon = _truth_lemons(raw)
        if quarantine is None:
            quarantine = quarantine_run(
                cfg,
                detector,
                seed=seed,
                split_day=split_day,
                flag_on=ds,
                flagged_on="the whole run's windows ending at the split",
                window_days=window_days,
                step_days=step_days,
                min_gpus=min_gpus,
                checkpoint=checkpoint,
            )
        elif quarantine.seed != seed or quarantine.split_day != float(split_day):
            raise ValueError(
                f"quarantine: a run of seed {quarantine.seed} split at day "
                f"{quarantine.split_day:g}, not seed {seed} at day {split_day:g}"
            )
    flagged = quarantine.flagged
    before = large_job_effect(base_attempts, split, min_gpus=min_gpus)
    after = quarantine.effect()
    tp = flagged.filter(pl.col("node").is_in(list(lemon))).height
    nan = float("nan")
    precision = tp / flagged.height if flagged.height else nan
    recall = tp / len(lemon) if lemon else nan
    # the true root cause of each lemon: the cause of most of its failures
    truth_comp = (
        truth_failures.filter(pl.col("lemon"))
        .group_by("node")
        .agg(cause=pl.col("cause").mode().sort().first())
        .select(
            "node",
            truth=pl.col("cause").replace_strict(
                {k: v.component for k, v in CAUSES.items()}, return_dtype=pl.String
            ),
            truth_node_down=pl.col("cause").replace_strict(
                {k: v.node_down for k, v in CAUSES.items()}, return_dtype=pl.Boolean
            ),
        )
    )
    flagged_out = flagged.join(truth_comp, on="node", how="left").with_columns(
        lemon=pl.col("node").is_in(list(lemon))
    )
    root = (
        flagged_out.group_by("dominant")
        .agg(flagged=pl.len(), true_lemons=pl.col("lemon").sum())
        .sort("flagged", "dominant", descending=[True, False])
    )
    before_q, after_q = ref.LEMON_LARGE_JOB_FAILURE_RATE.value  # type: ignore[misc]
    g = f"{min_gpus}+ GPU"
    rows = [
        ("precision (per node)", precision, f"> {ref.LEMON_PRECISION.value:g}"),
        ("recall (per node)", recall, None),
        ("flagged nodes", float(flagged.height), None),
        (
            "footprint (share of nodes)",
            flagged.height / cfg.n_nodes,
            " / ".join(f"{v:.1%}" for v in ref.LEMON_FOOTPRINT.value),
        ),  # type: ignore[union-attr]
        ("true lemon share", len(lemon) / cfg.n_nodes, None),
        (f"{g} jobs after the split", before["jobs"], None),
        (f"{g} jobs ended by hardware, as is", before["job_share"], f"{before_q:.0%}"),
        (f"{g} jobs ended by hardware, quarantined", after["job_share"], f"{after_q:.0%}"),
        (f"{g} attempts ended by hardware, as is", before["attempt_share"], None),
        (f"{g} attempts ended by hardware, quarantined", after["attempt_share"], None),
        (f"{g} interruptions per 1000 node-days, as is", before["rate_per_1000_node_days"], None),
        (
            f"{g} interruptions per 1000 node-days, quarantined",
            after["rate_per_1000_node_days"],
            None,
        ),
        ("GPU-hours lost to hardware, as is", before["gpu_hours_lost"], None),
        ("GPU-hours lost to hardware, quarantined", after["gpu_hours_lost"], None),
    ]
    summary = pl.DataFrame(
        rows, schema={"metric": pl.String, "value": pl.Float64, "paper": pl.String}, orient="row"
    )
    return LemonBacktest(
        summary=summary,
        flagged=flagged_out,
        root_causes=root,
        notes=[
            f"split at day {split_day:g}; window {window_days} days; seed {seed}; nodes flagged on "
            f"{quarantine.flagged_on}; large-job figures from the simulator's truth, after the split"
        ],
    )
