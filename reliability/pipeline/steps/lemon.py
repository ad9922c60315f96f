"""Stage ``lemon`` and the "Lemon nodes" section (Kokolis et al., HPCA '25, §VI).

By default the stage tests every node's distinct failures against the fleet's rate
(:func:`reliability.models.lemon_test`: no training, so it holds on any fleet). With
``[analysis].lemon_model`` (a detector the operator trained on their own labelled history,
``reliability lemon train``) it scores the nodes on the last feature window instead. For a
simulated cluster it runs the quarantine backtest with whichever flags the nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from reliability import plots
from reliability import references as ref
from reliability._result import Result, fmt_duration_h
from reliability.analyses.attribution import AttributionResult
from reliability.experiments.backtests import LemonBacktest, QuarantineRun
from reliability.models.lemon_test import LemonTest
from reliability.pipeline.config import PipelineConfig
from reliability.pipeline.steps.common import Context, notes_blocks, plot_block, sim_cluster_config
from reliability.pipeline.steps.data import DataResult, SplitResult
from reliability.report.model import Section, Table, Text

__all__ = [
    "BUNDLED_WINDOW_DAYS",
    "LemonReport",
    "QuarantineStep",
    "lemon",
    "lemon_quarantine",
    "lemon_section",
]

#: the feature window the bundled detector was trained on [days] (benchmarks/train_lemon_model.py)
BUNDLED_WINDOW_DAYS = 56


@dataclass
class LemonReport(Result):
    """Lemon-node scores and, where a simulator stands behind the data, the quarantine backtest.

    Attributes
    ----------
    scores : polars.DataFrame
        Every node scored on the last window: ``cluster, node, window_end, probability, flagged,
        drivers`` (highest first); empty when there is too little history.
    threshold : float or None
        The detector's threshold on P(lemon) (flagged at or above it).
    detector : str
        Which detector, and its out-of-fold precision / recall.
    window_days : int
        The feature window [days].
    span_h : float
        How much history the data hold [h].
    backtest : LemonBacktest or None
        The quarantine backtest (None when not run; ``notes`` say why).
    calibrated : bool
        False when the detector's probabilities do not apply to this window (it was trained on
        windows of another length, e.g. the bundled one on 56 days): the scores are shown, no node
        is flagged.
    test : LemonTest or None
        The statistical test (the default; then ``scores`` is empty and the flags are the test's).
    """

    title = "Lemon nodes (Kokolis et al. HPCA'25 §VI)"
    scores: pl.DataFrame
    threshold: float | None
    detector: str
    window_days: int
    span_h: float
    backtest: LemonBacktest | None = None
    notes: list[str] = field(default_factory=list)
    calibrated: bool = True
    test: LemonTest | None = None

    @property
    def flagged(self) -> pl.DataFrame:
        """The flagged nodes: the test's, else those with a probability at or above the threshold.

        None are flagged when the scores are not calibrated for the window.
        """
        if self.test is not None:
            return self.test.flagged
        if self.scores.height == 0 or not self.calibrated:
            return self.scores.clear()
        return self.scores.filter(pl.col("flagged"))

    @property
    def window_end(self) -> datetime | None:
        """End of the scored feature window [UTC] (None without scores)."""
        return self.scores["window_end"].max() if self.scores.height else None  # type: ignore[return-value]

    @property
    def summary(self) -> pl.DataFrame:
        """One row: nodes scored, flagged, threshold, window length [days] (the test's summary)."""
        if self.test is not None:
            return self.test.summary
        return self._mapping_frame(
            {
                "nodes_scored": self.scores.height,
                "flagged": self.flagged.height,
                "threshold": self.threshold,
                "window_days": self.window_days,
            }
        )

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the result: nodes scored (or tested)."""
        if self.test is not None:
            return self.test.sample_sizes
        return {"nodes": self.scores.height}

    def tables(self) -> dict[str, pl.DataFrame]:
        """Return the result's tables by name.

        Returns
        -------
        dict of str to polars.DataFrame
            ``"summary"``, ``"flagged"`` and ``"top scores"`` (the first 20).
        """
        return {
            "summary": self.summary,
            "flagged": self.flagged,
            "top scores": self.scores.head(20),
        }

    def _lines(self) -> list[str]:
        if self.test is not None:
            return self.test._lines()
        if self.scores.height == 0:
            return [
                f"No lemon scores: the data hold {fmt_duration_h(self.span_h)}, less than one {self.window_days}-day window."
            ]
        if not self.calibrated:
            return [
                f"{self.scores.height:,} nodes scored on the {self.window_days}-day window ending "
                f"{self.window_end:%Y-%m-%d}; none flagged: the detector's probabilities are not "
                "calibrated for this window (see the note)."
            ]
        f = self.flagged
        share = f.height / self.scores.height
        lines = [
            f"{f.height} of {self.scores.height:,} nodes flagged ({100 * share:.1f}%; {ref.LEMON_FOOTPRINT.cite()}: "
            "1.2-1.7% of nodes) on the window ending "
            f"{self.window_end:%Y-%m-%d} ({self.window_days} days); threshold {self.threshold:.2f}."
        ]
        if f.height:
            lines.append(
                "Flagged: "
                + ", ".join(f["node"].to_list()[:20])
                + ("" if f.height <= 20 else ", ...")
            )
        return lines

    @classmethod
    def _example(cls) -> LemonReport:
        """Build a tiny instance: the lemon test of a 14-day, 16-node cluster (for contract tests)."""
        test = LemonTest._example()
        scores = pl.DataFrame(
            schema={
                "cluster": pl.String,
                "node": pl.String,
                "window_end": pl.Datetime("us", "UTC"),
                "probability": pl.Float64,
                "flagged": pl.Boolean,
                "drivers": pl.String,
            }
        )
        return cls(
            scores=scores,
            threshold=None,
            detector="negative-binomial test",
            window_days=14,
            span_h=14 * 24.0,
            backtest=LemonBacktest._example(),
            test=test,
        )


def _span_h(data: Any) -> float:
    if data.observation_start is None or data.observation_end is None:
        return 0.0
    return max((data.observation_end - data.observation_start).total_seconds() / 3600.0, 0.0)


@dataclass
class QuarantineStep(Result):
    """Stage ``lemon_quarantine``: the lemon backtest's quarantined run, or why there is none.

    Attributes
    ----------
    run : QuarantineRun or None
        The nodes flagged on the logs at the split and the run with them drained (from
        ``cluster_split``'s checkpoint).
    backtest : LemonBacktest or None
        The whole backtest, both runs simulated here, when a simulated cluster has no
        checkpoint (it is not the only cluster input): run on the second process too.
    note : str
        Why neither ran.
    """

    title = "Lemon backtest: the quarantined run"
    run: QuarantineRun | None = None
    backtest: LemonBacktest | None = None
    note: str = ""

    @property
    def summary(self) -> pl.DataFrame:
        """The quarantined run's figures after the split (empty when it did not run)."""
        if self.run is not None:
            return self.run.summary
        if self.backtest is not None:
            return self.backtest.summary.select("metric", "value")
        return pl.DataFrame(schema={"metric": pl.String, "value": pl.Float64})

    def _lines(self) -> list[str]:
        if self.run is not None:
            return self.run._lines()
        if self.backtest is not None:
            return ["The whole backtest was simulated (no checkpoint to start from)"]
        return [f"No quarantined run: {self.note}"]

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """The quarantined run's (or the whole backtest's) counts; empty when neither ran."""
        if self.run is not None:
            return self.run.sample_sizes
        return self.backtest.sample_sizes if self.backtest is not None else {}

    @classmethod
    def _example(cls) -> QuarantineStep:
        """Build a tiny instance: the quarantined run of a backtest (for contract tests)."""
        return cls(run=QuarantineRun._example())


#: how the default path is described in the report
TEST_DESCRIPTION = (
    "the statistical test: each node's distinct failures (non-administrative departures from "
    "service and hardware job failures) against the rest of the fleet's rate times the node's own "
    "exposure, allowing for the ordinary spread of rates between nodes (negative binomial), with "
    "the false-discovery rate controlled across nodes (Benjamini-Hochberg). It needs no "
    "training, so it holds on any fleet; a detector trained on your own labelled history "
    "(`reliability lemon train`, then lemon_model=) replaces it"
)


def _detector(cfg: PipelineConfig) -> tuple[Any, str]:
    """Load the operator's trained detector and say what it is (None and the test's description)."""
    from reliability.models import LemonDetector

    if cfg.analysis.lemon_model:
        return LemonDetector.load(cfg.analysis.lemon_model), (
            f"detector loaded from {cfg.analysis.lemon_model}"
        )
    return None, TEST_DESCRIPTION


def _trained_window(det: Any, cfg: PipelineConfig) -> int | None:
    """Return the feature window the detector was trained on [days] (None: not recorded).

    The bundled detector's file says 56 days; a detector fitted without ``window_days=`` (or
    saved before windows were recorded) does not say, and is taken at its word.
    """
    if det is None:
        return None
    return getattr(det, "window_days_", None)


def _uncalibrated_note(det: Any, cfg: PipelineConfig) -> str | None:
    """Return why the detector's flags do not hold on the configured window (None: they do)."""
    if det is None:
        return None
    trained, window = _trained_window(det, cfg), cfg.analysis.lemon_window_days
    if trained is None or trained == window:
        return None
    return (
        f"no quarantine backtest: the detector was trained on {trained}-day windows, and on "
        f"{window}-day ones its flags are not calibrated (nodes it would drain are not lemons "
        "by its own threshold)"
    )


def lemon_quarantine(cluster_split: SplitResult, cfg: PipelineConfig, work: Path) -> QuarantineStep:
    """Run stage ``lemon_quarantine``: flag nodes at the split and run on with them drained.

    From the state ``cluster_split`` saved: the run's logs as they stood at the split are
    written and ingested, the detector scores the last window ending by then, and the run
    continues to its end with the flagged nodes drained. It needs only the checkpoint, so it
    runs on a second process while ``cluster_data`` simulates the baseline's second half. A
    simulated cluster beside other cluster inputs has no checkpoint: then the whole backtest
    (both runs) is simulated here.

    Parameters
    ----------
    cluster_split : SplitResult
        The simulated run's state at the split.
    cfg : PipelineConfig
        The pipeline configuration (``[analysis].lemon_window_days``, ``lemon_model``).
    work : Path
        The stage's work folder (the logs at the split and their Dataset).

    Returns
    -------
    QuarantineStep
        The quarantined run, or why there is none.
    """
    from reliability.experiments.backtests import (
        backtest_split_day,
        lemon_backtest,
        quarantine_at_checkpoint,
    )

    det, _ = _detector(cfg)  # a bad lemon_model is refused here too, with or without a backtest
    window = cfg.analysis.lemon_window_days
    split = cluster_split
    uncalibrated = _uncalibrated_note(det, cfg)
    if uncalibrated is not None:
        return QuarantineStep(note=uncalibrated)
    sims = [s for s in cfg.inputs if s.kind == "simulate-cluster"]
    if split.checkpoint is not None:
        run = quarantine_at_checkpoint(
            sim_cluster_config(sims[0]),
            det,
            seed=sims[0].seed,
            checkpoint=split.checkpoint,
            window_days=window,
            work=work,
        )
        return QuarantineStep(run=run)
    sim_cfg = sim_cluster_config(sims[0]) if sims else None
    if sim_cfg is None or backtest_split_day(sim_cfg.days) < window:
        return QuarantineStep(note=split.note)
    # a simulated cluster beside other cluster inputs: its run is not the Dataset's alone, so
    # the backtest simulates both of its runs (here, on the second process)
    backtest = lemon_backtest(
        sim_cfg,
        det,
        seed=sims[0].seed,
        split_day=backtest_split_day(sim_cfg.days),
        window_days=window,
        work=work / "backtest",
    )
    return QuarantineStep(backtest=backtest, note=split.note)


def lemon(
    cluster_data: DataResult,
    attribution: AttributionResult,
    lemon_quarantine: QuarantineStep,
    cfg: PipelineConfig,
    work: Path,
) -> LemonReport:
    """Run stage ``lemon``: score every node with the detector on the last window.

    For a single simulated cluster input long enough (two windows), the run is repeated with the
    flagged nodes drained (the backtest reuses the run ``cluster_data`` already simulated as its
    baseline). A detector flags nobody on a window of another length than it was trained on
    (its probabilities are not calibrated there), and the stage says so.

    Parameters
    ----------
    cluster_data : DataResult
        The cluster's Dataset.
    attribution : AttributionResult
        The attributed jobs.
    lemon_quarantine : QuarantineStep
        The backtest's quarantined run, when the pipeline ran one.
    cfg : PipelineConfig
        The pipeline configuration (``[analysis].lemon_window_days``, ``lemon_model``).
    work : Path
        The stage's work folder (a backtest that cannot reuse the pipeline's runs simulates
        there).

    Returns
    -------
    LemonReport
        Node scores, the flagged nodes, the detector's description, the backtest (or None) and
        notes on what was not assessed and why.
    """
    from reliability.models import node_features, score_nodes

    a = cfg.analysis
    window = a.lemon_window_days
    data = cluster_data
    notes: list[str] = []
    det, source = _detector(cfg)
    if det is None:
        return _tested(cfg, cluster_data, attribution, lemon_quarantine, work, source)
    desc = (
        f"{source}; threshold {det.threshold_:.2f} for out-of-fold precision {det.oof_precision_:.2f} at recall "
        f"{det.oof_recall_:.2f}. Train your own with `reliability lemon train`"
    )
    span = _span_h(data)
    empty = pl.DataFrame(
        schema={
            "cluster": pl.String,
            "node": pl.String,
            "window_end": pl.Datetime("us", "UTC"),
            "probability": pl.Float64,
            "flagged": pl.Boolean,
            "drivers": pl.String,
        }
    )
    common = {
        "threshold": float(det.threshold_),
        "detector": desc,
        "window_days": window,
        "span_h": span,
    }
    try:
        feats = node_features(data.open(), window_days=window, step_days=7)
    except ValueError:  # less history than one window
        fix = (
            "pass lemon_window_days= (a multiple of 7) within the data's span, or collect more "
            "history"
            if span >= 7 * 24
            else "the detector needs at least 7 days of history (its shortest window)"
        )
        notes.append(
            f"no lemon scores: the data hold {fmt_duration_h(span)}, less than one {window}-day "
            f"feature window; {fix}"
        )
        return LemonReport(scores=empty, notes=notes, **common)
    scores = score_nodes(det, feats)
    trained = _trained_window(det, cfg)
    uncalibrated = _uncalibrated_note(det, cfg)
    calibrated = uncalibrated is None
    if trained is None:
        notes.append(
            f"{a.lemon_model} does not record the window it was trained on (fitted without "
            f"window_days=, or saved before windows were recorded): its probabilities are taken "
            f"to hold for {window}-day windows; retrain it (`reliability lemon train`) to be sure"
        )
    if not calibrated:
        above = int(scores["flagged"].sum())
        scores = scores.with_columns(flagged=pl.lit(False))
        which = "the detector" if a.lemon_model else "the bundled detector"
        notes.append(
            f"{which} was trained on {trained}-day windows; on a {window}-day window its "
            f"probabilities are not calibrated ({above:,} of {scores.height:,} nodes reach its threshold), so no "
            f"node is flagged: set lemon_window_days={trained} with at least {trained} days "
            "of data, or train a detector on your own windows (`reliability lemon train`) and set lemon_model="
        )
    from reliability.experiments.backtests import backtest_split_day, lemon_backtest

    sims = [s for s in cfg.inputs if s.kind == "simulate-cluster"]
    backtest = None
    sim_cfg = sim_cluster_config(sims[0]) if sims else None
    if sim_cfg is not None and uncalibrated is not None:
        notes.append(uncalibrated)
    elif sim_cfg is not None and backtest_split_day(sim_cfg.days) < window:
        notes.append(
            f"no quarantine backtest: the simulated run ({sim_cfg.days:g} days) is shorter than two "
            f"{window}-day windows"
        )
    elif sim_cfg is not None:
        # the run as is is the one cluster_data already simulated and ingested (when it is the
        # only cluster input), and lemon_quarantine ran the quarantined variant from its split;
        # otherwise lemon_quarantine ran the whole backtest
        step = lemon_quarantine
        if step.run is not None and data.raw and data.raw[0] is not None:
            backtest = lemon_backtest(
                sim_cfg,
                det,
                seed=sims[0].seed,
                split_day=backtest_split_day(sim_cfg.days),
                window_days=window,
                work=work / "backtest",
                baseline=(data.raw[0], data.open()),
                quarantine=step.run,
            )
        else:
            backtest = step.backtest
    return LemonReport(
        scores=scores, backtest=backtest, notes=notes, calibrated=calibrated, **common
    )


def _backtest(
    cfg: PipelineConfig,
    cluster_data: DataResult,
    lemon_quarantine: QuarantineStep,
    work: Path,
    det: Any,
    notes: list[str],
) -> LemonBacktest | None:
    """Run the quarantine backtest of a simulated cluster (None, with a note, when it cannot)."""
    from reliability.experiments.backtests import backtest_split_day, lemon_backtest

    window = cfg.analysis.lemon_window_days
    data = cluster_data
    sims = [s for s in cfg.inputs if s.kind == "simulate-cluster"]
    sim_cfg = sim_cluster_config(sims[0]) if sims else None
    if sim_cfg is None:
        return None
    if backtest_split_day(sim_cfg.days) < window:
        notes.append(
            f"no quarantine backtest: the simulated run ({sim_cfg.days:g} days) is shorter than two "
            f"{window}-day windows"
        )
        return None
    step = lemon_quarantine
    if step.run is not None and data.raw and data.raw[0] is not None:
        return lemon_backtest(
            sim_cfg,
            det,
            seed=sims[0].seed,
            split_day=backtest_split_day(sim_cfg.days),
            window_days=window,
            work=work / "backtest",
            baseline=(data.raw[0], data.open()),
            quarantine=step.run,
        )
    return step.backtest


def _tested(
    cfg: PipelineConfig,
    cluster_data: DataResult,
    attribution: AttributionResult | None,
    lemon_quarantine: QuarantineStep,
    work: Path,
    desc: str,
) -> LemonReport:
    """Run the default path: the statistical test over the whole observation, and the backtest."""
    from reliability.models.lemon_test import lemon_test

    data = cluster_data
    attributed = attribution.jobs if attribution is not None else None
    test = lemon_test(data.open(), attributed=attributed, reasons=cfg.reasons)
    notes: list[str] = []
    backtest = _backtest(cfg, cluster_data, lemon_quarantine, work, None, notes)
    empty = pl.DataFrame(
        schema={
            "cluster": pl.String,
            "node": pl.String,
            "window_end": pl.Datetime("us", "UTC"),
            "probability": pl.Float64,
            "flagged": pl.Boolean,
            "drivers": pl.String,
        }
    )
    return LemonReport(
        scores=empty,
        threshold=None,
        detector=desc,
        window_days=cfg.analysis.lemon_window_days,
        span_h=_span_h(data),
        backtest=backtest,
        notes=notes,
        test=test,
    )


def lemon_section(r: LemonReport, ctx: Context) -> list[Section]:
    """Build the "Lemon nodes" report section.

    Parameters
    ----------
    r : LemonReport
        The ``lemon`` stage's result.
    ctx : Context
        The report context.

    Returns
    -------
    list of Section
        The one section: the detector, the suspects figure and table, and the backtest when run.
    """
    sec = Section("Lemon nodes")
    sec.blocks.append(Text("Detector: " + r.detector + "."))
    if r.test is not None:
        sec.blocks += _test_blocks(r.test)
    elif r.scores.height or not r.notes:  # without scores, the notes say why
        sec.blocks += [Text(ln) for ln in r._lines()]
    if r.scores.height:
        size = (6.4, 0.25 * min(15, r.scores.height) + 1.2)
        sec.blocks.append(
            plot_block(
                "lemon_suspects",
                lambda ax: plots.plot_lemon_suspects(r.scores, ax=ax, threshold=r.threshold),
                size,
                "The highest lemon probabilities, flagged nodes in vermillion, the threshold dashed "
                "(nodes that fail jobs repeatedly yet pass health checks; "
                f"{ref.LEMONS_FOUND.cite()}).",
                r.scores.head(15).drop("window_end"),
            )
        )
        shown = r.flagged if r.flagged.height else r.scores.head(5)
        caption = (
            "Flagged nodes, with the features that raised each score most."
            if r.flagged.height
            else "No node flagged; the five highest scores, with their drivers."
        )
        sec.blocks.append(
            Table("lemon_suspects_table", shown.drop("window_end"), caption, wrap=("drivers",))
        )
    bt = r.backtest
    if bt is not None:
        sec.blocks.append(
            Table(
                "lemon_backtest",
                bt.summary,
                "Backtest: the simulator re-run with the flagged nodes drained at mid-run, compared "
                "after the split with the run as is (same seed, same faults); the paper's figures beside "
                "(– not measurable).",
                max_rows=30,
            )
        )
        sec.blocks.append(
            Table(
                "lemon_root_causes",
                bt.root_causes,
                "Backtest: the nodes it flagged at the split (from the logs before it) and drained, "
                "by the component their logs point at (node down = no component logged); not the "
                "nodes flagged over the whole run above.",
            )
        )
        sec.blocks += notes_blocks(bt)
    sec.blocks += notes_blocks(r)
    return [sec]


def _test_blocks(t: LemonTest) -> list[Any]:
    """Show the test: its sentence, incidents against expected, the flagged nodes."""
    if t.nodes.height == 0:
        return notes_blocks(t) or [Text(ln) for ln in t._lines()[:1]]
    blocks: list[Any] = [Text(ln) for ln in t._lines()[:1]]
    blocks.append(
        plot_block(
            "lemon_test",
            lambda ax: plots.plot_lemon_test(t, ax=ax),
            (6.4, 3.6),
            "Each node's distinct failures against what the fleet's rate predicts for its own "
            f"exposure; flagged nodes (FDR {t.fdr:g}, at least {t.min_incidents} failures) in "
            f"vermillion ({ref.LEMONS_FOUND.cite()}).",
            t.nodes.head(50),
        )
    )
    shown = t.flagged if t.flagged.height else t.nodes.head(5)
    caption = (
        "Flagged nodes: distinct failures, expected at the fleet's rate, excess, p and q "
        "(Benjamini-Hochberg), and the events behind them."
        if t.flagged.height
        else "No node flagged; the five that stand out most."
    )
    blocks.append(Table("lemon_test_table", shown.drop("cluster"), caption, wrap=("evidence",)))
    blocks += notes_blocks(t)
    return blocks
