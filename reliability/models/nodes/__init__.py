"""Node health and lemon nodes.

Node health: out-of-service time and open drains, lemon-node detection and its features,
which health signals predict job failures.
"""

from reliability.models.nodes.health import OUT_OF_SERVICE, NodeHealth, node_health
from reliability.models.nodes.lemon import (
    LemonDetector,
    ModelFileError,
    count_baseline,
    dominant_component,
    rule_baseline,
    score_nodes,
)
from reliability.models.nodes.lemon_features import FEATURES as LEMON_FEATURES
from reliability.models.nodes.lemon_features import ShortHistoryError, node_features
from reliability.models.nodes.lemon_testing import LemonTest, lemon_test
from reliability.models.nodes.signals import SignalCalibration, policy_table, signal_calibration

__all__ = [
    "LEMON_FEATURES",
    "OUT_OF_SERVICE",
    "LemonDetector",
    "LemonTest",
    "ModelFileError",
    "NodeHealth",
    "ShortHistoryError",
    "SignalCalibration",
    "count_baseline",
    "dominant_component",
    "lemon_test",
    "node_features",
    "node_health",
    "policy_table",
    "rule_baseline",
    "score_nodes",
    "signal_calibration",
]
