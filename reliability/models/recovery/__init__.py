"""What failures cost, and how to recover from them.

What failures cost and how to recover: ETTR (closed form, Monte Carlo, from logs),
checkpoint intervals and the planner, measured recovery costs, recovery strategies.
"""

from reliability.models.recovery.checkpoint import (
    daly_interval_h,
    optimal_interval_h,
    young_interval_h,
)
from reliability.models.recovery.cost import RecoveryCosts, recovery_costs
from reliability.models.recovery.ettr import (
    VARIANTS,
    ETTRApproximationWarning,
    expected_ettr,
    interruption_rate_per_h,
)
from reliability.models.recovery.ettr_logs import RunETTR, job_run_ettr
from reliability.models.recovery.ettr_mc import ESTIMANDS, ETTRSimulation, simulate_ettr
from reliability.models.recovery.planner import PlanResult, plan
from reliability.models.recovery.strategies import (
    StrategyComparison,
    compare_strategies,
    spares_needed,
)
from reliability.models.recovery.strategies_mc import StrategySimulation, simulate_strategy

__all__ = [
    "ESTIMANDS",
    "VARIANTS",
    "ETTRApproximationWarning",
    "ETTRSimulation",
    "PlanResult",
    "RecoveryCosts",
    "RunETTR",
    "StrategyComparison",
    "StrategySimulation",
    "compare_strategies",
    "daly_interval_h",
    "expected_ettr",
    "interruption_rate_per_h",
    "job_run_ettr",
    "optimal_interval_h",
    "plan",
    "recovery_costs",
    "simulate_ettr",
    "simulate_strategy",
    "spares_needed",
    "young_interval_h",
]
