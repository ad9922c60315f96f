"""Figures: one function per figure, taking result objects (or their frames) and ``ax=None``.

Computing and plotting are separate: :mod:`reliability.models` returns results, these turn
them into matplotlib axes, and :mod:`reliability.report` assembles them. Colours are the
Okabe-Ito colour-blind-safe palette.
"""

from reliability.plots.cluster import (
    plot_failure_rate,
    plot_failure_taxonomy,
    plot_job_sizes,
    plot_job_states,
    plot_lemon_suspects,
    plot_lemon_test,
    plot_mttf,
    plot_secondary_preemptions,
)
from reliability.plots.ettr import plot_ettr_by_size, plot_ettr_grid
from reliability.plots.fleets import plot_fleet_rates
from reliability.plots.health import plot_fleet_availability, plot_node_timeline
from reliability.plots.lifetimes import plot_lifetimes
from reliability.plots.pod import (
    plot_availability,
    plot_component_rates,
    plot_recovery,
    plot_routing,
    plot_sweep,
)
from reliability.plots.style import PALETTE

__all__ = [
    "PALETTE",
    "plot_availability",
    "plot_component_rates",
    "plot_ettr_by_size",
    "plot_ettr_grid",
    "plot_failure_rate",
    "plot_failure_taxonomy",
    "plot_fleet_availability",
    "plot_fleet_rates",
    "plot_job_sizes",
    "plot_job_states",
    "plot_lemon_suspects",
    "plot_lemon_test",
    "plot_lifetimes",
    "plot_mttf",
    "plot_node_timeline",
    "plot_recovery",
    "plot_routing",
    "plot_secondary_preemptions",
    "plot_sweep",
]
