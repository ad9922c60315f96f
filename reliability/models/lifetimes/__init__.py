"""Component lifetimes and repairable systems.

Component lifetimes: Weibull fits with wear-out / infant-mortality verdicts, repairable-system
models (time between failures, Crow-AMSAA), per-component reliability of a Dataset.
"""

from reliability.models.lifetimes.components import (
    ComponentReliability,
    component_reliability,
)
from reliability.models.lifetimes.repairable import (
    CrowAMSAA,
    InterFailureResult,
    crow_amsaa,
    fit_interfailure,
    interfailure_times,
)
from reliability.models.lifetimes.weibull import (
    LifetimeFit,
    LifetimeResult,
    fit_lifetimes,
    fit_weibull,
    hazard_verdict,
    lifetime_table,
    weibull_mle,
)

__all__ = [
    "ComponentReliability",
    "CrowAMSAA",
    "InterFailureResult",
    "LifetimeFit",
    "LifetimeResult",
    "component_reliability",
    "crow_amsaa",
    "fit_interfailure",
    "fit_lifetimes",
    "fit_weibull",
    "hazard_verdict",
    "interfailure_times",
    "lifetime_table",
    "weibull_mle",
]
