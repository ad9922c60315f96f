"""Stages ``lemon`` and ``lemon_quarantine`` and the "Lemon nodes" section (HPCA '25, §VI).

The lemon report is :func:`reliability.analyses.lemon_report` (:class:`LemonReport` and
:data:`BUNDLED_WINDOW_DAYS` are re-exported here so saved results load). By default the
stage tests every node's distinct failures against the fleet's rate
(:func:`reliability.models.nodes.lemon_test`: no training, so it holds on any fleet). With
``[analysis].lemon_model`` (a detector the operator trained on their own labelled history,
``reliability lemon train``) it scores the nodes on the last feature window instead. For a
simulated cluster it runs the quarantine backtest with whichever flags the nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import polars as pl

from reliability import plots
from reliability import references as ref
from reliability._result import Result
from reliability.analyses.attribution import AttributionResult
from reliability.analyses.lemons import (
    BUNDLED_WINDOW_DAYS,
    LemonReport,
    lemon_report,
    load_detector,
    uncalibrated_note,
)
from reliability.errors import Hinted
from reliability.experiments.backtests import LemonBacktest, QuarantineRun
from reliability.models.nodes.lemon_testing import LemonTest
from reliability.pipeline.config import PipelineConfig
from reliability.pipeline.steps.common import (
    Context,
    analysis_terms,
    notes_blocks,
    plot_block,
    sim_cluster_config,
)
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
        The simulated cluster's state at the backtest's split.
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

    # a bad lemon_model is refused here too, with or without a backtest
    det = load_detector(cfg.analysis.lemon_model or None)
    window = cfg.analysis.lemon_window_days
    split = cluster_split
    uncalibrated = uncalibrated_note(det, window)
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
    """Run stage ``lemon``: the test, or the detector's scores on the last window.

    :func:`reliability.analyses.lemon_report` at ``[analysis].lemon_window_days`` and
    ``lemon_model``. For a single simulated cluster input long enough (two windows), the run is
    repeated with the flagged nodes drained (the backtest reuses the run ``cluster_data``
    already simulated as its baseline). A detector flags nobody on a window of another length
    than it was trained on (its probabilities are not calibrated there), and the stage says so.

    Parameters
    ----------
    cluster_data : DataResult
        The cluster's Dataset.
    attribution : AttributionResult
        Every attempt attributed.
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
        Node scores (or the test), the flagged nodes, the detector's description, the backtest
        (or None) and notes on what was not assessed and why.
    """
    a = cfg.analysis
    model = a.lemon_model or None
    r = lemon_report(
        cluster_data.open(),
        attribution,
        window_days=a.lemon_window_days,
        model=model,
        reasons=cfg.reasons,
    )
    notes = [_lemon_terms(n) for n in r.notes]
    backtest = None
    if r.test is not None or r.scores.height:  # (no scores: too little history to backtest)
        backtest = _backtest(cfg, cluster_data, lemon_quarantine, work, load_detector(model), notes)
    return replace(r, backtest=backtest, notes=notes)


def _lemon_terms(note: str) -> str:
    """Name lemon_report's options as the pipeline's: ``window_days=`` -> ``lemon_window_days``."""
    if isinstance(note, Hinted):
        return note.renamed({"window_days": "lemon_window_days", "model": "lemon_model"})
    return note


def _backtest(
    cfg: PipelineConfig,
    data: DataResult,
    step: QuarantineStep,
    work: Path,
    det: Any,
    notes: list[str],
) -> LemonBacktest | None:
    """Run the quarantine backtest of a simulated cluster (None, with a note, when it cannot)."""
    from reliability.experiments.backtests import backtest_split_day, lemon_backtest

    window = cfg.analysis.lemon_window_days
    sims = [s for s in cfg.inputs if s.kind == "simulate-cluster"]
    sim_cfg = sim_cluster_config(sims[0]) if sims else None
    if sim_cfg is None:
        return None
    uncalibrated = uncalibrated_note(det, window)
    if uncalibrated is not None:
        notes.append(uncalibrated)
        return None
    if backtest_split_day(sim_cfg.days) < window:
        notes.append(
            f"no quarantine backtest: the simulated run ({sim_cfg.days:g} days) is shorter than two "
            f"{window}-day windows"
        )
        return None
    # the run as is is the one cluster_data already simulated and ingested (when it is the
    # only cluster input), and lemon_quarantine ran the quarantined variant from its split;
    # otherwise lemon_quarantine ran the whole backtest
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
    sec.blocks.append(Text("Detector: " + analysis_terms(r.detector) + "."))
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
