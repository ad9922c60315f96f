"""Experiments: simulator runs whose outcome is compared with the simulator's truth.

Above both the simulator (:mod:`reliability.sim`, which only makes data) and the models
(:mod:`reliability.models`, which only fit it): :mod:`~reliability.experiments.backtests`
(training the lemon detector on true labels, the quarantine backtest of HPCA'25 §VI) and
:mod:`~reliability.experiments.calibration` (the simulator measured against the paper as a
user would). The pipeline's lemon stage and the benchmarks call them; nothing below does.
"""

from reliability.experiments.backtests import (
    LemonBacktest,
    QuarantineRun,
    lemon_backtest,
    train_on_simulation,
)

__all__ = ["LemonBacktest", "QuarantineRun", "lemon_backtest", "train_on_simulation"]
