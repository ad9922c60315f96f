"""Lemon nodes of a Dataset in one call: the statistical test, or a trained detector's scores.

By default every node's distinct failures are tested against the fleet's rate
(:func:`reliability.models.nodes.lemon_test`: no training, so it holds on any fleet). Given a
detector the operator trained on their own labelled history (``reliability lemon train``), it
scores the nodes on the last feature window instead, and flags none when the detector was
trained on windows of another length (its probabilities are not calibrated there). Kokolis
et al. HPCA'25 §VI. The quarantine backtest needs the simulator: it is run by
:func:`reliability.experiments.backtests.lemon_backtest` and attached here as is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from reliability import references as ref
from reliability._result import Result, fmt_duration_h
from reliability.errors import Hint, Hinted, join_messages
from reliability.models.nodes import (
    LemonDetector,
    LemonTest,
    ShortHistoryError,
    lemon_test,
    node_features,
    score_nodes,
)
from reliability.reasons import ReasonRules

if TYPE_CHECKING:
    from reliability.analyses.attribution import AttributionResult
    from reliability.store import Dataset

__all__ = [
    "BUNDLED_WINDOW_DAYS",
    "DETECTOR_ATTRIBUTION",
    "TEST_DESCRIPTION",
    "LemonReport",
    "lemon_report",
    "load_detector",
    "uncalibrated_note",
]

#: the feature window the bundled detector was trained on [days] (benchmarks/train_lemon_model.py)
BUNDLED_WINDOW_DAYS = 56

#: how the default path (the statistical test) is described in the report
TEST_DESCRIPTION = Hinted(
    "the statistical test: each node's distinct failures (non-administrative departures from "
    "service and hardware job failures) against the rest of the fleet's rate times the node's own "
    "exposure, allowing for the ordinary spread of rates between nodes (negative binomial), with "
    "the false-discovery rate controlled across nodes (Benjamini-Hochberg). It needs no "
    "training, so it holds on any fleet; a detector trained on your own labelled history "
    "(`reliability lemon train`, then ",
    Hint("lemon_model", action=False),
    ") replaces it",
)

#: the attribution a detector's features are computed with, in training (``reliability lemon
#: train``, ``benchmarks/train_lemon_model.py``: :func:`reliability.models.nodes.node_features`
#: attributes a Dataset with :func:`reliability.attribute_failures`' defaults) and so in scoring;
#: the reason rules are the built-in ones
DETECTOR_ATTRIBUTION: dict[str, Any] = {
    "before_min": 10.0,
    "after_min": 5.0,
    "requeue_exit_codes": (),
}

_SCORES_SCHEMA = {
    "cluster": pl.String,
    "node": pl.String,
    "window_end": pl.Datetime("us", "UTC"),
    "probability": pl.Float64,
    "flagged": pl.Boolean,
    "drivers": pl.String,
}


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
        The quarantine backtest (:class:`reliability.experiments.backtests.LemonBacktest`;
        None when not run, ``notes`` say why).
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
    backtest: Result | None = None
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
        """Build a tiny instance: the lemon test of a 14-day, 16-node cluster (for contract tests).

        (Without a backtest: that needs the simulator, which this layer does not import;
        :class:`~reliability.experiments.backtests.LemonBacktest` has its own example.)
        """
        return cls(
            scores=pl.DataFrame(schema=_SCORES_SCHEMA),
            threshold=None,
            detector="negative-binomial test",
            window_days=14,
            span_h=14 * 24.0,
            test=LemonTest._example(),
        )


def load_detector(model: str | Path | LemonDetector | None) -> LemonDetector | None:
    """Return the lemon detector ``model`` names (None: the statistical test, no detector).

    Parameters
    ----------
    model : str, Path, LemonDetector or None
        A model file written by ``reliability lemon train`` (:meth:`LemonDetector.save`),
        ``"bundled"`` (trained on this package's simulator: it does not transfer to other
        fleets), a fitted detector, or None.

    Returns
    -------
    LemonDetector or None
        The detector.

    Raises
    ------
    reliability.models.nodes.ModelFileError
        When the file is not a detector written by this package.
    """
    if model is None or isinstance(model, LemonDetector):
        return model
    if str(model) == "bundled":
        from reliability.models.nodes.lemon import default_detector

        return default_detector()
    return LemonDetector.load(model)


def uncalibrated_note(detector: LemonDetector | None, window_days: int) -> str | None:
    """Say why a detector's flags do not hold on ``window_days`` (None: they do).

    The features are counts over the window, so a detector's probabilities hold for windows of
    the length it was trained on only. A detector that does not record its window (fitted
    without ``window_days=``, or saved before windows were recorded) is taken at its word.

    Parameters
    ----------
    detector : LemonDetector or None
        The detector (None: the statistical test, which has no window to match).
    window_days : int
        The feature window scored [days].

    Returns
    -------
    str or None
        Why there is no quarantine backtest with its flags, or None.
    """
    trained = getattr(detector, "window_days_", None) if detector is not None else None
    if trained is None or trained == window_days:
        return None
    return (
        f"no quarantine backtest: the detector was trained on {trained}-day windows, and on "
        f"{window_days}-day ones its flags are not calibrated (nodes it would drain are not lemons "
        "by its own threshold)"
    )


def _span_h(dataset: Dataset) -> float:
    """How much history the Dataset's inputs observed [h] (0 when they do not say)."""
    start, end = dataset.observation_window()
    if start is None or end is None:
        return 0.0
    return max((end - start).total_seconds() / 3600.0, 0.0)


def _described(model: str | Path | LemonDetector, det: LemonDetector) -> tuple[str, str]:
    """Return what the detector is called in notes, and its description for the report."""
    if isinstance(model, LemonDetector):
        name, source = "the detector", "detector given"
    elif str(model) == "bundled":
        name, source = "the bundled detector", "the bundled detector (trained on the simulator)"
    else:
        name, source = str(model), f"detector loaded from {model}"
    return name, (
        f"{source}; threshold {det.threshold_:.2f} for out-of-fold precision "
        f"{det.oof_precision_:.2f} at recall {det.oof_recall_:.2f}. Train your own with "
        "`reliability lemon train`"
    )


def _features_source(
    dataset: Dataset, attribution: AttributionResult | None, reasons: ReasonRules | None
) -> tuple[Dataset | dict[str, pl.DataFrame], str | None]:
    """Return what the detector's features are computed from, and a note when it is not reused.

    The pipeline's attribution is reused when it was made with the settings the detector's
    features are trained with (:data:`DETECTOR_ATTRIBUTION`, the built-in reason rules);
    otherwise the Dataset is attributed again with those, and the note says so.
    """
    if attribution is None:
        return dataset, None
    given = {
        "before_min": float(attribution.before_min),
        "after_min": float(attribution.after_min),
        "requeue_exit_codes": tuple(attribution.requeue_exit_codes),
    }
    differ = [f"{k}={v!r}" for k, v in given.items() if v != DETECTOR_ATTRIBUTION[k]]
    if reasons is not None and reasons != ReasonRules():
        differ.append(f"reasons ({reasons.source})")
    if not differ:
        return {
            "jobs": attribution.jobs,
            "health_events": dataset.health_events,
            "node_states": dataset.node_states,
        }, None
    trained = DETECTOR_ATTRIBUTION
    return dataset, (
        "the detector's features were computed on the attempts attributed again with the "
        f"settings it is trained with ({trained['before_min']:g} min before an attempt's end, "
        f"{trained['after_min']:g} after, no requeue exit codes, the built-in reasons), not "
        "with this attribution's " + ", ".join(differ)
    )


def _scored(
    dataset: Dataset,
    model: str | Path | LemonDetector,
    window_days: int,
    backtest: Result | None,
    attribution: AttributionResult | None = None,
    reasons: ReasonRules | None = None,
) -> LemonReport:
    """Score every node on the last window with the detector (HPCA'25 §VI)."""
    det = load_detector(model)
    assert det is not None
    name, desc = _described(model, det)
    span = _span_h(dataset)
    common = {
        "threshold": float(det.threshold_),
        "detector": desc,
        "window_days": window_days,
        "span_h": span,
    }
    notes: list[str] = []
    source, recomputed = _features_source(dataset, attribution, reasons)
    try:
        feats = node_features(
            source,
            window_days=window_days,
            step_days=7,
            observation_end=dataset.observation_end,
        )
    except ShortHistoryError:  # less history than one window
        trained = getattr(det, "window_days_", None)
        if span < 7 * 24:
            fix = "the detector needs at least 7 days of history (its shortest window)"
        elif trained is not None and span >= trained * 24:
            fix = Hinted(Hint("window_days", trained), ", the window the detector was trained on")
        elif trained is not None:  # (on another window its probabilities do not hold)
            fix = (
                f"collect at least {trained} days of history (the detector was trained on "
                f"{trained}-day windows), or train one on shorter windows (`reliability lemon train`)"
            )
        else:
            fix = Hinted(
                Hint("window_days"),
                " (a multiple of 7) within the data's span, or collect more history",
            )
        notes.append(
            join_messages(
                f"no lemon scores: the data hold {fmt_duration_h(span)}, less than one "
                f"{window_days}-day feature window; ",
                fix,
            )
        )
        return LemonReport(scores=pl.DataFrame(schema=_SCORES_SCHEMA), notes=notes, **common)
    if recomputed is not None:
        notes.append(recomputed)
    scores = score_nodes(det, feats)
    trained = getattr(det, "window_days_", None)
    calibrated = uncalibrated_note(det, window_days) is None
    if trained is None:
        notes.append(
            f"{name} does not record the window it was trained on (fitted without "
            f"its window_days, or saved before windows were recorded): its probabilities are taken "
            f"to hold for {window_days}-day windows; retrain it (`reliability lemon train`) to be sure"
        )
    if not calibrated:
        above = int(scores["flagged"].sum())
        scores = scores.with_columns(flagged=pl.lit(False))
        which = "the bundled detector" if name == "the bundled detector" else "the detector"
        notes.append(
            Hinted(
                f"{which} was trained on {trained}-day windows; on a {window_days}-day window its "
                f"probabilities are not calibrated ({above:,} of {scores.height:,} nodes reach its "
                "threshold), so no node is flagged: ",
                Hint("window_days", trained),
                f" with at least {trained} days of data, or train a detector on your own windows "
                "(`reliability lemon train`) and ",
                Hint("model"),
            )
        )
    return LemonReport(
        scores=scores, backtest=backtest, notes=notes, calibrated=calibrated, **common
    )


def lemon_report(
    dataset: Dataset,
    attribution: AttributionResult | None = None,
    *,
    window_days: int = BUNDLED_WINDOW_DAYS,
    model: str | Path | LemonDetector | None = None,
    reasons: ReasonRules | None = None,
    backtest: Result | None = None,
) -> LemonReport:
    """Flag a Dataset's lemon nodes: the statistical test, or a trained detector's scores.

    Without ``model``, every node's distinct failures over the whole observation are tested
    against the fleet's rate (:func:`reliability.models.nodes.lemon_test`). With one, each node is
    scored on the last ``window_days`` (:func:`reliability.models.nodes.score_nodes`); a detector
    trained on windows of another length flags nobody (its probabilities are not calibrated
    there) and a note says so. Kokolis et al. HPCA'25 §VI.

    Parameters
    ----------
    dataset : Dataset
        The cluster's Dataset.
    attribution : AttributionResult or None
        The attempts attributed (:func:`reliability.analyses.attribute`) for the test's hardware
        job failures; None attributes them here with the default window. A detector's features
        reuse it when it was made with the settings the detector is trained with
        (:data:`DETECTOR_ATTRIBUTION` and the built-in reasons); otherwise the Dataset is
        attributed again with those, and a note says so.
    window_days : int
        The detector's feature window [days], a multiple of 7 (the test uses the whole
        observation).
    model : str, Path, LemonDetector or None
        A detector (see :func:`load_detector`); None: the statistical test.
    reasons : ReasonRules or None
        How node-state reasons are classified for the test, and how ``attribution`` was made
        (None: the built-in rules).
    backtest : Result or None
        A quarantine backtest already run with the same detector
        (:func:`reliability.experiments.backtests.lemon_backtest`), attached as is.

    Returns
    -------
    LemonReport
        The test (or the scores), the flagged nodes, the detector's description and notes on
        what was not assessed and why.

    Raises
    ------
    ValueError
        When ``window_days`` is not a positive multiple of 7 days.
    """
    if (
        isinstance(window_days, bool)
        or not isinstance(window_days, int)
        or window_days < 7
        or window_days % 7
    ):
        raise ValueError(
            f"window_days: expected a whole number of weeks in days (7, 14, ..., 56), got {window_days!r}"
        )
    if model is not None:
        return _scored(dataset, model, window_days, backtest, attribution, reasons)
    attributed = attribution.jobs if attribution is not None else None
    return LemonReport(
        scores=pl.DataFrame(schema=_SCORES_SCHEMA),
        threshold=None,
        detector=TEST_DESCRIPTION,
        window_days=window_days,
        span_h=_span_h(dataset),
        backtest=backtest,
        test=lemon_test(dataset, attributed=attributed, reasons=reasons),
    )
