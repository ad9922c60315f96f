"""Lemon-node detector: a calibrated scikit-learn classifier with a precision-targeted threshold.

Kokolis et al. HPCA'25 §VI flag nodes that repeatedly fail jobs yet pass health checks, from
per-node counts (:func:`reliability.models.node_features`), and report precision above 85% on
1.2-1.7% of nodes. :class:`LemonDetector` is a logistic regression on ``log1p`` of the
(non-negative) features, standardised, with balanced class weights; its scores are calibrated
by Platt scaling fitted on out-of-fold scores, and the decision threshold is the lowest one
whose out-of-fold precision reaches ``target_precision``.

Two baselines for comparison: :func:`rule_baseline`, a hand-tuned rule of the paper's kind
(repeated out-of-service events, or many failed jobs with hardware evidence), and
:func:`count_baseline`, a plain threshold on the node's failed-job count.

Persistence is a JSON description (:meth:`LemonDetector.save` / :meth:`LemonDetector.load`):
no pickle; a file that is not ours, was edited, or does not match its checksum is rejected with
:class:`ModelFileError`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.utils.multiclass import type_of_target, unique_labels
from sklearn.utils.validation import check_is_fitted, validate_data

from reliability.errors import ReliabilityError
from reliability.models.lemon_features import FEATURES

__all__ = [
    "FORMAT",
    "LemonDetector",
    "ModelFileError",
    "count_baseline",
    "default_detector",
    "rule_baseline",
]

FORMAT = "reliability.lemon-detector/1"


class ModelFileError(ReliabilityError):
    """A saved detector is missing, foreign, corrupted or edited."""


def _transform(X: np.ndarray) -> np.ndarray:
    return np.log1p(np.clip(X, 0.0, None))


class LemonDetector(ClassifierMixin, BaseEstimator):
    """Calibrated lemon-node classifier (see the module doc).

    Parameters
    ----------
    C : inverse regularisation strength of the logistic regression
    target_precision : the threshold is the lowest whose out-of-fold precision reaches this
    cv : folds for the out-of-fold scores (reduced when a class has fewer members)
    random_state : seed of the fold split

    Fitted attributes: ``classes_``, ``n_features_in_``, ``feature_names_in_`` (when X has
    column names), ``mean_``, ``scale_``, ``coef_``, ``intercept_``, ``platt_`` (slope,
    intercept), ``threshold_``, ``oof_precision_``, ``oof_recall_``.
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

    def fit(self, X: Any, y: Any) -> LemonDetector:
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
        return self

    # -- prediction ------------------------------------------------------------------------
    def _score(self, X: Any) -> np.ndarray:
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return ((_transform(X) - self.mean_) / self.scale_) @ self.coef_ + self.intercept_

    def predict_proba(self, X: Any) -> np.ndarray:
        """Calibrated probabilities ``[P(not lemon), P(lemon)]``."""
        s = self._score(X)
        p = 1.0 / (1.0 + np.exp(-(self.platt_[0] * s + self.platt_[1])))
        return np.column_stack([1.0 - p, p])

    def decision_function(self, X: Any) -> np.ndarray:
        """Calibrated log-odds minus those of the threshold: positive exactly when flagged."""
        p = np.clip(self.predict_proba(X)[:, 1], 1e-15, 1 - 1e-15)
        t = min(max(self.threshold_, 1e-15), 1 - 1e-15)
        return np.log(p / (1 - p)) - np.log(t / (1 - t))

    def predict(self, X: Any) -> np.ndarray:
        """Flag (class 1) where P(lemon) reaches ``threshold_`` (not 0.5: the threshold is chosen
        for the target precision)."""
        flagged = self.predict_proba(X)[:, 1] >= self.threshold_
        return self.classes_[flagged.astype(int)]

    def contributions(self, X: Any) -> np.ndarray:
        """Per-feature contribution to each row's score (standardised value x coefficient):
        what drove the decision."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return ((_transform(X) - self.mean_) / self.scale_) * self.coef_

    # -- persistence -----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        check_is_fitted(self)
        body = {
            "params": self.get_params(),
            "classes": [c.item() if hasattr(c, "item") else c for c in self.classes_],
            "features": [str(f) for f in getattr(self, "feature_names_in_", [])] or None,
            "n_features": int(self.n_features_in_),
            "mean": self.mean_.tolist(), "scale": self.scale_.tolist(), "coef": self.coef_.tolist(),
            "intercept": self.intercept_, "platt": list(self.platt_), "threshold": self.threshold_,
            "oof_precision": self.oof_precision_, "oof_recall": self.oof_recall_,
        }  # fmt: skip
        blob = json.dumps(body, sort_keys=True)
        return {
            "format": FORMAT,
            "sha256": hashlib.sha256(blob.encode()).hexdigest(),
            "model": body,
        }

    def save(self, path: str | Path) -> Path:
        """Write the detector as JSON (no pickle)."""
        from reliability._atomic import write_json_atomic

        path = Path(path)
        write_json_atomic(self.to_dict(), path)
        return path

    @classmethod
    def load(cls, path: str | Path) -> LemonDetector:
        """Read a detector written by :meth:`save`; anything else raises :class:`ModelFileError`."""
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
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ModelFileError(f"{path}: malformed model ({exc!r})") from None
        if not (det.mean_.shape == det.scale_.shape == det.coef_.shape == (n,)):
            raise ModelFileError(
                f"{path}: malformed model (array shapes do not match n_features={n})"
            )
        return det


def _pick_threshold(p: np.ndarray, y: np.ndarray, target: float) -> tuple[float, float, float]:
    """The lowest threshold whose precision reaches ``target`` (else the most precise one);
    returns (threshold, precision, recall) on these scores."""
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
    """A hand-tuned rule of the paper's kind: flag a node-window with repeated out-of-service
    events, or with many failed jobs and repeated Xid evidence."""
    f = _frame(features)
    return (
        (f["out_of_service"] >= min_out_of_service)
        | ((f["failed"] >= min_failed) & (f["xid"] >= min_xid))
    ).to_numpy()


def count_baseline(features: pl.DataFrame, threshold: float) -> np.ndarray:
    """Flag node-windows whose failed-job count reaches ``threshold``."""
    return (_frame(features)["failed"] >= threshold).to_numpy()


def default_detector() -> LemonDetector:
    """The bundled detector, trained on simulated RSC-1-like clusters (1,024 nodes, 150 days,
    seeds 101-103, 56-day windows) by ``benchmarks/train_lemon_model.py``."""
    from importlib import resources

    res = resources.files("reliability.models") / "_data" / "lemon_detector.json"
    with resources.as_file(res) as path:
        return LemonDetector.load(path)
