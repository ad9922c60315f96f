"""Node health of a Dataset in one call, with the repeat offenders the report shows.

:func:`analyze_node_health` is :func:`reliability.models.nodes.node_health` over the Dataset's
observation window with the attributed attempts beside it, as the report's "Node health"
section has it. (Named apart from the model function it composes, which takes frames.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reliability.analyses.attribution import AttributionResult, attribute
from reliability.models.nodes import NodeHealth, node_health

if TYPE_CHECKING:
    from reliability.store import Dataset

__all__ = ["analyze_node_health"]


def analyze_node_health(
    dataset: Dataset, attribution: AttributionResult | None = None, *, every: str | None = None
) -> NodeHealth:
    """Out-of-service intervals, downtime, availability and repeat offenders of every node.

    Per node, out-of-service time by state and reason over the Dataset's observation window
    and the fleet's availability over time; the repeat offenders from the attributed attempts
    (:func:`reliability.models.nodes.node_health`).

    Parameters
    ----------
    dataset : Dataset
        The cluster's Dataset (it needs a ``node_states`` table).
    attribution : AttributionResult or None
        The attempts attributed (:func:`reliability.analyses.attribute`); None attributes them
        here with the default settings (10 min before an attempt's end, 5 after).
    every : str or None
        Period of the availability table (polars duration, e.g. ``"1d"``); None: from the
        window's length.

    Returns
    -------
    NodeHealth
        Intervals, per-node downtime and availability, nodes out now, repeat offenders and the
        fleet's availability over time.
    """
    if attribution is None:
        attribution = attribute(dataset)
    # the attributed attempts are every attempt of the Dataset: the jobs are not read again
    return node_health(dataset, attributed=attribution.jobs, jobs=attribution.jobs, every=every)
