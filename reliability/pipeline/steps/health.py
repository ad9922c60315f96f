"""Stage ``node_health`` and the "Node health" section.

Out-of-service intervals, open drains, repeat offenders, fleet availability
(:func:`reliability.models.nodes.node_health`).
"""

from __future__ import annotations

from datetime import datetime

import polars as pl

from reliability import plots
from reliability._result import fmt_duration_h, fmt_num
from reliability.analyses.attribution import AttributionResult
from reliability.analyses.health import analyze_node_health
from reliability.models.nodes import OUT_OF_SERVICE, NodeHealth
from reliability.pipeline.config import PipelineConfig
from reliability.pipeline.steps.common import Context, notes_blocks, plot_block
from reliability.pipeline.steps.data import DataResult
from reliability.report.actions import REPEAT_OFFENDER_MIN_FAILURES
from reliability.report.model import Section, Table, Text

__all__ = ["health_section", "node_health", "now_text"]


def node_health(
    cluster_data: DataResult, attribution: AttributionResult, cfg: PipelineConfig
) -> NodeHealth:
    """Run stage ``node_health``.

    Per node, out-of-service time by state and reason over the Dataset's observation window;
    repeat offenders from the attributed jobs (:func:`reliability.analyses.analyze_node_health`).

    Parameters
    ----------
    cluster_data : DataResult
        The cluster's Dataset.
    attribution : AttributionResult
        Every attempt attributed.
    cfg : PipelineConfig
        The pipeline configuration (this stage takes no parameters of its own).

    Returns
    -------
    NodeHealth
        Intervals, per-node totals, open drains, repeat offenders and fleet availability.
    """
    return analyze_node_health(cluster_data.open(), attribution)


def now_text(end: datetime | None, basis: str) -> str:
    """Say what the report takes as "now" (the observation end) and why.

    Parameters
    ----------
    end : datetime or None
        The observation end [UTC].
    basis : str
        How it was found (:attr:`reliability.Dataset.observation_end_basis`).

    Returns
    -------
    str
        One sentence; inferred ends say how to give the export time.
    """
    if end is None:
        return "The observation end is unknown (no timestamps in the data)."
    text = f"'Now' is the observation end, {end:%Y-%m-%d %H:%M:%S} UTC: {basis or 'the latest time in the data'}"
    if "latest" in (basis or "latest"):
        text += (
            " (a lower bound of when the data were exported: what was still open is open at "
            "it; give each input's observed_at, `--observed-at` at ingest, for the export time)"
        )
    return text + "."


def _n(k: int, what: str) -> str:
    return f"{k:,} {what}" + ("" if k == 1 else "s")


def _drop_zero_states(frame: pl.DataFrame) -> pl.DataFrame:
    """Drop the hours-by-state columns that are zero for every node from the per-node table."""
    zero = [
        f"{s.lower()}_h"
        for s in OUT_OF_SERVICE
        if f"{s.lower()}_h" in frame.columns and not (frame[f"{s.lower()}_h"] > 0).any()
    ]
    return frame.drop(zero)


def health_section(h: NodeHealth, ctx: Context) -> list[Section]:
    """Build the "Node health" report section.

    Parameters
    ----------
    h : NodeHealth
        The ``node_health`` stage's result.
    ctx : Context
        The report context (configuration and every stage's result).

    Returns
    -------
    list of Section
        The one section: window and fleet availability, nodes out now, repeat offenders,
        timeline and availability figures (or a note that there is no window).
    """
    sec = Section("Node health")
    if h.window_h <= 0:
        sec.blocks.append(Text("No observation window: node health not assessed.", kind="note"))
        return [sec]
    fa = h.fleet_availability
    sec.blocks.append(
        Text(
            f"{h.n_nodes:,} nodes ({h.inventory_basis}) over {fmt_duration_h(h.window_h)}, from "
            f"{h.start:%Y-%m-%d %H:%M} to {h.end:%Y-%m-%d %H:%M} UTC: {h.intervals.height:,} out-of-service intervals "
            "(DOWN, DRAIN, FAIL, MAINT, REPAIR)"
            + (f"; fleet availability {100 * fa:.2f}% of node-hours." if fa is not None else ".")
        )
    )
    sec.blocks.append(Text(now_text(h.end, h.end_basis), kind="note"))
    now = h.open_now
    if now.height:
        hw = now.filter(pl.col("hardware"))
        sec.blocks.append(
            Text(
                f"{now.select('cluster', 'node').n_unique()} node(s) out of service at the observation end"
                + (
                    f", {hw.height} for a hardware reason ({', '.join(hw['node'].to_list()[:10])})"
                    if hw.height
                    else ""
                )
                + "."
            )
        )
        sec.blocks.append(
            Table(
                "out_of_service_now",
                now.drop("cluster"),
                "Nodes out of service at the observation end: state, reason and since when "
                "(hours up to the end); hardware = the reason names a hardware signal.",
                max_rows=40,
                wrap=("reason", "signal"),
            )
        )
    else:
        sec.blocks.append(Text("No node was out of service at the observation end."))
    sec.blocks.append(
        plot_block(
            "node_timeline",
            lambda ax: plots.plot_node_timeline(h, ax=ax),
            (6.4, 0.22 * min(max(int((h.by_node["intervals"] > 0).sum()), 1), 30) + 1.6),
            "When nodes were out of service, by state (hatched: still open at "
            "the observation end); nodes out of service now first, then by downtime.",
            h.intervals.drop("cluster"),
        )
    )
    sec.blocks.append(
        plot_block(
            "fleet_availability",
            lambda ax: plots.plot_fleet_availability(h, ax=ax),
            (6.4, 2.8),
            "Share of the fleet's nodes in service over time (exact step function; per "
            f"{h.every} mean and minimum when there are many changes).",
            h.by_period,
        )
    )
    if h.offenders.height:
        top = h.offenders.head(1).row(0, named=True)
        ties = int((h.offenders["failures"] == top["failures"]).sum())
        who = (
            f"{top['node']} failed the most"
            if ties == 1
            else f"{ties} nodes tie for the most; {top['node']}, first by GPU-hours"
        )
        sec.blocks.append(
            Text(
                f"{_n(h.offenders.height, 'node')} failed under jobs (hardware-attributed); {who} "
                f"({_n(top['failures'], 'distinct failure')}, ending {_n(top['attempts_hit'], 'attempt')} of "
                f"{_n(top['jobs_hit'], 'job')}, {fmt_num(top['gpu_hours_failed'])} GPU-hours of those attempts)"
                + (
                    f"; {_n(repeat, 'node')} failed {REPEAT_OFFENDER_MIN_FAILURES} or more times (repeat offenders)."
                    if (
                        repeat := int(
                            (h.offenders["failures"] >= REPEAT_OFFENDER_MIN_FAILURES).sum()
                        )
                    )
                    else f"; none failed {REPEAT_OFFENDER_MIN_FAILURES} or more times (no repeat offender)."
                )
            )
        )
        sec.blocks.append(
            Table(
                "repeat_offenders",
                h.offenders.drop("cluster"),
                "Nodes by distinct hardware failures (incidents: one DOWN, drain or Xid that ended every "
                "attempt on the node is one failure), the node being the culprit of the attempts or "
                "their only node; the attempts and jobs they ended and the GPU-hours of those attempts "
                "(an upper bound of the work lost: the logs do not say when the last checkpoint was "
                "written).",
            )
        )
    else:
        sec.blocks.append(Text("No hardware-attributed failure names a node: no repeat offenders."))
    sec.blocks.append(
        Table(
            "node_downtime",
            _drop_zero_states(h.by_node.filter(pl.col("intervals") > 0).drop("cluster")),
            "Per node: out-of-service intervals, hours by state, downtime (the union of its "
            "intervals) and availability over the window.",
            max_rows=30,
        )
    )
    sec.blocks += notes_blocks(h)
    return [sec]
