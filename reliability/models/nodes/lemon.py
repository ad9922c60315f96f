"""Lemon-node detector: a calibrated scikit-learn classifier with a precision-targeted threshold.

Kokolis et al. HPCA'25 §VI flag nodes that repeatedly fail jobs yet pass health checks, from
per-node counts (:func:`reliability.models.nodes.node_features`), and report precision above 85% on
1.2-1.7% of nodes. :class:`LemonDetector` is a logistic regression on ``log1p`` of the
(non-negative) features, standardised, with balanced class weights; its scores are calibrated
by Platt scaling fitted on out-of-fold scores, and the decision threshold is the lowest one
whose out-of-fold precision reaches ``target_precision``.

Two baselines for comparison: :func:`rule_baseline`, a hand-tuned rule of the paper's kind
(repeated out-of-service events, or many failed jobs with hardware evidence), and
:func:`count_baseline`, a plain threshold on the node's failed-job count.

Persistence is a JSON description (:meth:`LemonDetector.save` / :meth:`LemonDetector.load`),
never a pickle, so loading a model file cannot run code. What protects what:

- the **checksum** (SHA-256 of the model body) catches a file that was truncated, corrupted
  or edited by hand *without* recomputing it. It is not a signature: it has no key, so anyone
  who edits the file can recompute it, and it says nothing about who wrote the file;
- the **parameter checks** on load are what stop a hostile or broken file whose checksum was
  recomputed: the features must be exactly the package's (:data:`FEATURES`, in order), every
  array must have one finite value per feature (positive scales), the calibration slope must
  be positive and finite, the threshold strictly between 0 and 1. A file with threshold -1
  (which would flag every node) or a negated calibration (which would flag the healthiest
  nodes) is refused with :class:`ModelFileError`;
- neither makes a model *good*: load detectors you trained or got from someone you trust.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.utils.multiclass import type_of_target, unique_labels
from sklearn.utils.validation import check_is_fitted, validate_data

from reliability.errors import ReliabilityError
from reliability.models.nodes.lemon_features import FEATURES

if TYPE_CHECKING:
    from datetime import datetime

    from reliability.store import Dataset

__all__ = [
    "FORMAT",
    "NODE_DOWN_CLASS",
    "LemonDetector",
    "ModelFileError",
    "count_baseline",
    "default_detector",
    "dominant_component",
    "rule_baseline",
    "score_nodes",
]

FORMAT = "reliability.lemon-detector/1"
#: node-down causes leave no component in the logs, only "Not responding"
NODE_DOWN_CLASS = "node down (dimm/pcie/psu/bios/cpu)"


class ModelFileError(ReliabilityError):
    """A saved detector is missing, foreign, corrupted or edited."""


def _transform(X: np.ndarray) -> np.ndarray:
    return np.log1p(np.clip(X, 0.0, None))


class LemonDetector(ClassifierMixin, BaseEstimator):
    """Calibrated lemon-node classifier (see the module doc).

    A scikit-learn estimator: a regularised logistic regression on transformed, standardised
    node-window features (:data:`FEATURES`), its out-of-fold scores calibrated by Platt scaling,
    and a threshold chosen for a target precision (Kokolis et al., HPCA '25, §VI).

    Parameters
    ----------
    C : float
        Inverse regularisation strength of the logistic regression, > 0.
    target_precision : float
        The threshold is the lowest whose out-of-fold precision reaches this, in (0, 1].
    cv : int
        Folds for the out-of-fold scores (reduced when a class has fewer members).
    random_state : int
        Seed of the fold split.

    Attributes
    ----------
    classes_ : numpy.ndarray
        The two labels; the second is "lemon".
    mean_, scale_ : numpy.ndarray
        Standardisation of the transformed features.
    coef_ : numpy.ndarray
        Coefficients on the standardised features.
    intercept_ : float
        Intercept of the linear score.
    platt_ : (float, float)
        Platt scaling slope and intercept.
    threshold_ : float
        Probability at and above which a node-window is flagged.
    oof_precision_, oof_recall_ : float
        Precision and recall of the threshold on the out-of-fold scores (in-sample when a class
        is too small for two folds).
    window_days_ : int or None
        The feature window the detector was trained on [days] (None: not told). Counts grow
        with the window, so its probabilities are calibrated for that window only; the CLI and
        the pipeline refuse to flag nodes on another.
    n_features_in_, feature_names_in_
        As in scikit-learn (names when X has column names).
    """

    def __init__(
        self, C: float = 1.0, target_precision: float = 0.85, cv: int = 5, random_state: int = 0
    ) -> None:
        self.C = C
        self.target_precision = target_precision
        self.cv = cv
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    # -- fitting ---------------------------------------------------------------------------
    def _fit_linear(
        self, Z: np.ndarray, y01: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        mean = Z.mean(axis=0)
        scale = Z.std(axis=0)
        scale[scale == 0] = 1.0
        lr = LogisticRegression(C=self.C, class_weight="balanced", max_iter=2000)
        lr.fit((Z - mean) / scale, y01)
        return mean, scale, lr.coef_[0].copy(), float(lr.intercept_[0])

    def fit(self, X: Any, y: Any, *, window_days: int | None = None) -> LemonDetector:
        """Fit the classifier, its calibration and its threshold.

        Parameters
        ----------
        X : array-like or polars.DataFrame, shape (n_windows, n_features)
            Node-window features, e.g. :func:`reliability.models.nodes.node_features` (columns
            :data:`FEATURES`).
        y : array-like, shape (n_windows,)
            Two classes: whether each node-window's node is a lemon (the larger label is "lemon").
        window_days : int or None
            The window ``X`` was computed on [days], kept as ``window_days_`` (and saved) so that
            scores on another window can be refused.

        Returns
        -------
        LemonDetector
            ``self``, fitted.

        Raises
        ------
        ValueError
            Unless ``y`` holds exactly two classes.
        """
        if not _valid_window(window_days):
            raise ValueError(
                f"window_days: expected a whole number of days > 0, got {window_days!r}"
            )
        X, y = validate_data(self, X, y, dtype=np.float64)
        y_type = type_of_target(y, input_name="y", raise_unknown=True)
        if len(unique_labels(y)) > 2:
            raise ValueError(
                f"Only binary classification is supported. The type of the target is {y_type}."
            )
        self.classes_ = unique_labels(y)
        if len(self.classes_) != 2:
            raise ValueError(
                f"LemonDetector needs two classes (lemon and not), got {len(self.classes_)} class(es)"
            )
        y01 = (y == self.classes_[1]).astype(int)
        Z = _transform(X)
        self.mean_, self.scale_, self.coef_, self.intercept_ = self._fit_linear(Z, y01)
        # out-of-fold scores for calibration and the threshold
        folds = int(min(self.cv, np.bincount(y01).min()))
        if folds >= 2:
            oof = np.empty(len(y01))
            split = StratifiedKFold(folds, shuffle=True, random_state=self.random_state)
            for tr, te in split.split(Z, y01):
                m, s, c, b = self._fit_linear(Z[tr], y01[tr])
                oof[te] = ((Z[te] - m) / s) @ c + b
        else:  # too few of one class: in-sample scores (stated by oof_precision_ being in-sample)
            oof = ((Z - self.mean_) / self.scale_) @ self.coef_ + self.intercept_
        platt = LogisticRegression(C=1e6, max_iter=2000).fit(oof.reshape(-1, 1), y01)
        self.platt_ = (float(platt.coef_[0, 0]), float(platt.intercept_[0]))
        p = 1.0 / (1.0 + np.exp(-(self.platt_[0] * oof + self.platt_[1])))
        self.threshold_, self.oof_precision_, self.oof_recall_ = _pick_threshold(
            p, y01, self.target_precision
        )
        self.window_days_ = None if window_days is None else int(window_days)
        return self

    # -- prediction ------------------------------------------------------------------------
    def _score(self, X: Any) -> np.ndarray:
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return ((_transform(X) - self.mean_) / self.scale_) @ self.coef_ + self.intercept_

    def predict_proba(self, X: Any) -> np.ndarray:
        """Return calibrated probabilities ``[P(not lemon), P(lemon)]``.

        Parameters
        ----------
        X : array-like, shape (n_windows, n_features)
            Node-window features, in the columns the detector was fitted on.

        Returns
        -------
        numpy.ndarray, shape (n_windows, 2)
            Probabilities of each class.
        """
        s = self._score(X)
        p = 1.0 / (1.0 + np.exp(-(self.platt_[0] * s + self.platt_[1])))
        return np.column_stack([1.0 - p, p])

    def decision_function(self, X: Any) -> np.ndarray:
        """Return the calibrated log-odds minus those of the threshold: positive exactly when flagged.

        Parameters
        ----------
        X : array-like, shape (n_windows, n_features)
            Node-window features.

        Returns
        -------
        numpy.ndarray, shape (n_windows,)
            The decision values.
        """
        p = np.clip(self.predict_proba(X)[:, 1], 1e-15, 1 - 1e-15)
        t = min(max(self.threshold_, 1e-15), 1 - 1e-15)
        return np.log(p / (1 - p)) - np.log(t / (1 - t))

    def predict(self, X: Any) -> np.ndarray:
        """Flag (class 1) where P(lemon) reaches ``threshold_``.

        Not 0.5: the threshold is chosen for the target precision.

        Parameters
        ----------
        X : array-like, shape (n_windows, n_features)
            Node-window features.

        Returns
        -------
        numpy.ndarray, shape (n_windows,)
            The predicted labels (``classes_[1]`` where flagged).
        """
        flagged = self.predict_proba(X)[:, 1] >= self.threshold_
        return self.classes_[flagged.astype(int)]

    def contributions(self, X: Any) -> np.ndarray:
        """Return each feature's contribution to each row's score: what drove the decision.

        Parameters
        ----------
        X : array-like, shape (n_windows, n_features)
            Node-window features.

        Returns
        -------
        numpy.ndarray, shape (n_windows, n_features)
            Standardised value × coefficient per feature.
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return ((_transform(X) - self.mean_) / self.scale_) * self.coef_

    # -- persistence -----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Return the detector as a JSON-able document (format, checksum, model body).

        Returns
        -------
        dict of str to object
            The document :meth:`save` writes.

        Raises
        ------
        ValueError
            Unless the detector was fitted on a :func:`node_features` frame (columns
            :data:`FEATURES`, in order).
        """
        check_is_fitted(self)
        names = [str(f) for f in getattr(self, "feature_names_in_", [])]
        if names != list(FEATURES):
            raise ValueError(
                "only a detector fitted on a node_features() frame (columns "
                "reliability.models.nodes.LEMON_FEATURES, in order) can be saved; this one was fitted on "
                + (f"{len(names)} other columns" if names else "an array without column names")
            )
        body = {
            "params": self.get_params(),
            "classes": [c.item() if hasattr(c, "item") else c for c in self.classes_],
            "features": [str(f) for f in getattr(self, "feature_names_in_", [])] or None,
            "n_features": int(self.n_features_in_),
            "mean": self.mean_.tolist(),
            "scale": self.scale_.tolist(),
            "coef": self.coef_.tolist(),
            "intercept": self.intercept_,
            "platt": list(self.platt_),
            "threshold": self.threshold_,
            "oof_precision": self.oof_precision_,
            "oof_recall": self.oof_recall_,
        }
        window = getattr(self, "window_days_", None)
        if window is not None:  # (a file without it was trained on an unknown window)
            body["window_days"] = int(window)
        blob = json.dumps(body, sort_keys=True)
        return {
            "format": FORMAT,
            "sha256": hashlib.sha256(blob.encode()).hexdigest(),
            "model": body,
        }

    def save(self, path: str | Path) -> Path:
        """Write the detector as JSON (no pickle), atomically.

        Parameters
        ----------
        path : str or Path
            Destination file.

        Returns
        -------
        Path
            ``path``.
        """
        from reliability._atomic import write_json_atomic

        path = Path(path)
        write_json_atomic(self.to_dict(), path)
        return path

    @classmethod
    def load(cls, path: str | Path) -> LemonDetector:
        """Read a detector written by :meth:`save`.

        Parameters
        ----------
        path : str or Path
            A model file.

        Returns
        -------
        LemonDetector
            The fitted detector.

        Raises
        ------
        ModelFileError
            For anything else: unreadable, another format, a checksum mismatch or a malformed body.
        """
        path = Path(path)
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ModelFileError(f"{path}: not a readable JSON model file ({exc})") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise ModelFileError(
                f"{path}: not a {FORMAT} file (format {doc.get('format') if isinstance(doc, dict) else None!r})"
            )
        body = doc.get("model")
        if not isinstance(body, dict) or hashlib.sha256(
            json.dumps(body, sort_keys=True).encode()
        ).hexdigest() != doc.get("sha256"):
            raise ModelFileError(f"{path}: checksum mismatch: the model was edited or corrupted")
        try:
            det = cls(**body["params"])
            n = int(body["n_features"])
            det.classes_ = np.asarray(body["classes"])
            det.n_features_in_ = n
            if body["features"]:
                det.feature_names_in_ = np.asarray(body["features"], dtype=object)
            det.mean_ = np.asarray(body["mean"], dtype=float)
            det.scale_ = np.asarray(body["scale"], dtype=float)
            det.coef_ = np.asarray(body["coef"], dtype=float)
            det.intercept_ = float(body["intercept"])
            det.platt_ = (float(body["platt"][0]), float(body["platt"][1]))
            det.threshold_ = float(body["threshold"])
            det.oof_precision_ = float(body["oof_precision"])
            det.oof_recall_ = float(body["oof_recall"])
            window = body.get("window_days")
            if not _valid_window(window):
                raise ValueError(f"window_days {window!r} is not a number of days")
            det.window_days_ = window
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ModelFileError(f"{path}: malformed model ({exc!r})") from None
        problem = _invalid(det, body)
        if problem:
            raise ModelFileError(f"{path}: refused: {problem}")
        return det


def _invalid(det: LemonDetector, body: dict[str, Any]) -> str | None:
    """Why a loaded detector cannot be used (None if it can): see the module doc."""
    n = det.n_features_in_
    features = body.get("features")
    if features != list(FEATURES) or n != len(FEATURES):
        return (
            f"it was trained on other features ({n} columns"
            + (f", starting {features[:3]}" if features else ", unnamed")
            + f"); this package's detector uses the {len(FEATURES)} LEMON_FEATURES"
        )
    if not (det.mean_.shape == det.scale_.shape == det.coef_.shape == (n,)):
        return f"array shapes do not match the {n} features"
    arrays = {"mean": det.mean_, "scale": det.scale_, "coef": det.coef_}
    for name, arr in arrays.items():
        if not np.all(np.isfinite(arr)):
            return f"non-finite values in {name}"
    if np.any(det.scale_ <= 0):
        return "scales must be positive"
    if not (np.isfinite(det.intercept_) and all(np.isfinite(det.platt_))):
        return "non-finite intercept or calibration"
    if det.platt_[0] <= 0:
        return (
            f"calibration slope {det.platt_[0]:g} is not positive (it would rank nodes backwards)"
        )
    if not 0.0 < det.threshold_ < 1.0:
        return f"threshold {det.threshold_:g} is not strictly between 0 and 1"
    if not (0.0 <= det.oof_precision_ <= 1.0 and 0.0 <= det.oof_recall_ <= 1.0):
        return "out-of-fold precision and recall must lie in [0, 1]"
    if len(det.classes_) != 2:
        return f"{len(det.classes_)} classes; a detector has two (lemon and not)"
    params = det.get_params()
    if not (np.isfinite(params["C"]) and params["C"] > 0 and 0 < params["target_precision"] <= 1):
        return f"invalid parameters {params}"
    return None


def _pick_threshold(p: np.ndarray, y: np.ndarray, target: float) -> tuple[float, float, float]:
    """Pick the lowest threshold whose precision reaches ``target`` (else the most precise one).

    Returns (threshold, precision, recall) on these scores.
    """
    order = np.argsort(-p, kind="stable")
    ps, ys = p[order], y[order]
    tp = np.cumsum(ys)
    k = np.arange(1, len(ys) + 1)
    prec = tp / k
    # only cut between distinct scores
    last = np.r_[ps[1:] != ps[:-1], True]
    ok = np.flatnonzero(last & (prec >= target))
    i = int(ok.max()) if ok.size else int(np.flatnonzero(last)[np.argmax(prec[last])])
    recall = float(tp[i] / max(ys.sum(), 1))
    return float(ps[i]), float(prec[i]), recall


def _frame(features: pl.DataFrame) -> pl.DataFrame:
    missing = [f for f in FEATURES if f not in features.columns]
    if missing:
        raise ValueError(f"feature frame lacks {missing}; build it with node_features()")
    return features


def rule_baseline(
    features: pl.DataFrame, *, min_out_of_service: int = 2, min_failed: int = 40, min_xid: int = 3
) -> np.ndarray:
    """Flag node-windows by a hand-tuned rule of the paper's kind.

    Flag a node-window with repeated out-of-service events, or with many failed jobs and repeated
    Xid evidence (a baseline for the classifier; Kokolis et al., HPCA '25, §VI).

    Parameters
    ----------
    features : polars.DataFrame
        Node-window features (:func:`node_features`).
    min_out_of_service : int
        Out-of-service events in the window that flag a node.
    min_failed, min_xid : int
        Failed jobs and Xid events in the window that, together, flag a node.

    Returns
    -------
    numpy.ndarray
        Boolean, one entry per row.
    """
    f = _frame(features)
    return (
        (f["out_of_service"] >= min_out_of_service)
        | ((f["failed"] >= min_failed) & (f["xid"] >= min_xid))
    ).to_numpy()


def count_baseline(features: pl.DataFrame, threshold: float) -> np.ndarray:
    """Flag node-windows whose failed-job count reaches a threshold (a baseline).

    Parameters
    ----------
    features : polars.DataFrame
        Node-window features (:func:`node_features`).
    threshold : float
        Failed jobs in the window that flag a node.

    Returns
    -------
    numpy.ndarray
        Boolean, one entry per row.
    """
    return (_frame(features)["failed"] >= threshold).to_numpy()


def _valid_window(days: object) -> bool:
    """Tell whether ``days`` is a feature window: a whole number of days > 0, or None."""
    return days is None or (
        isinstance(days, int | np.integer) and not isinstance(days, bool) and days > 0
    )


def default_detector() -> LemonDetector:
    """Load the bundled detector.

    It was trained on simulated RSC-1- and RSC-2-like clusters (1,024 and 1,000 nodes, 150
    days, seeds 101-103 of each, 56-day windows) by ``benchmarks/train_lemon_model.py``, which
    also reports its precision per node on held-out seeds.

    Returns
    -------
    LemonDetector
        The fitted detector.
    """
    from importlib import resources

    res = resources.files("reliability.models") / "_data" / "lemon_detector.json"
    with resources.as_file(res) as path:
        return LemonDetector.load(path)


def score_nodes(
    detector: LemonDetector,
    features: pl.DataFrame,
    at: datetime | None = None,
    top_features: int = 3,
) -> pl.DataFrame:
    """Score every node on its window ending at ``at`` (default: the last window).

    Parameters
    ----------
    detector : LemonDetector
        A fitted :class:`LemonDetector`.
    features : polars.DataFrame
        :func:`reliability.models.nodes.node_features` output.
    at : datetime or None
        Window end to score [UTC]; the latest window ending at or before it is used.
    top_features : int
        How many of the features that raised each score most to name.

    Returns
    -------
    polars.DataFrame
        A frame ranked by ``probability``: ``cluster, node, window_end, probability, flagged,
        drivers`` (the features that drove each score, as ``name=value`` text).
    """
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
        .with_columns(
            probability=pl.Series(p),
            flagged=pl.Series(p >= detector.threshold_),
            drivers=pl.Series(drivers, dtype=pl.String),
        )
        .sort("probability", "node", descending=[True, False])
    )


def dominant_component(
    dataset: Dataset | dict[str, pl.DataFrame], nodes: list[str], end: datetime | None = None
) -> pl.DataFrame:
    """Name the component with the most critical health events on each node (before ``end``).

    :data:`NODE_DOWN_CLASS` when the node only went silent (DOWN, no component logged).

    Parameters
    ----------
    dataset : Dataset or dict of str to polars.DataFrame
        A Dataset, or a dict with ``health_events`` and ``node_states``.
    nodes : list of str
        Node names.
    end : datetime or None
        Only evidence before this time [UTC] counts.

    Returns
    -------
    polars.DataFrame
        A frame ``node, dominant`` (one row per node, in the order given).
    """
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
            dominant=pl.when(pl.col("downs") > pl.col("n"))
            .then(pl.lit(NODE_DOWN_CLASS))
            .otherwise(pl.col("component").fill_null(NODE_DOWN_CLASS))
        )
        .select("node", "dominant")
    )
