"""Stage ``signals`` and the "Which signals predict job failures" section.

Per signal kind (Xid, DCGM field, health check, drain-reason class), measured on the cluster's
own history: how often a job running on the node failed soon after, against the node's own
baseline, and what drain policies built on it would have caught
(:func:`reliability.models.nodes.signal_calibration`).
"""

from __future__ import annotations

import polars as pl

from reliability._result import fmt_num
from reliability.analyses.attribution import AttributionResult
from reliability.models.nodes.signals import SignalCalibration
from reliability.pipeline.config import PipelineConfig
from reliability.pipeline.steps.common import Context, notes_blocks
from reliability.pipeline.steps.data import DataResult
from reliability.report.model import Section, Table, Text

__all__ = ["signals", "signals_section"]


def signals(
    cluster_data: DataResult, attribution: AttributionResult, cfg: PipelineConfig
) -> SignalCalibration:
    """Run stage ``signals``: calibrate every signal kind on the cluster's own history.

    Parameters
    ----------
    cluster_data : DataResult
        The cluster's Dataset.
    attribution : AttributionResult
        The attributed jobs.
    cfg : PipelineConfig
        The pipeline configuration (``[attribution.reasons]``).

    Returns
    -------
    SignalCalibration
        The signal table and the drain-policy table.
    """
    from reliability.models.nodes.signals import signal_calibration

    return signal_calibration(cluster_data.open(), attributed=attribution.jobs, reasons=cfg.reasons)


def signals_section(s: SignalCalibration, ctx: Context) -> list[Section]:
    """Build the "Which signals predict job failures" section.

    Parameters
    ----------
    s : SignalCalibration
        The ``signals`` stage's result.
    ctx : Context
        The report context.

    Returns
    -------
    list of Section
        The one section: what was measured, the signal table, the drain policies.
    """
    sec = Section("Which signals predict job failures")
    if s.signals.height == 0:
        sec.blocks.append(Text("No health events or node-state changes: no signal to calibrate."))
        return [sec]
    best = s.signals.filter(pl.col("p") < 0.05).head(3)
    lead = ", ".join(f"{r['signal']} (x{fmt_num(r['lift'])})" for r in best.iter_rows(named=True))
    sec.blocks.append(
        Text(
            f"For each kind of signal, the share of its events, among those with a job running on the "
            f"node, after which a running job ended abnormally (FAILED, NODE_FAIL, REQUEUED) within "
            f"{fmt_num(s.horizon_h)} h, against the same node's baseline at any time it ran jobs: "
            "measured on this cluster's own history, without failure attribution (whose evidence "
            "is these same signals). "
            + (
                f"Most predictive here: {lead}."
                if lead
                else "No signal kind predicts failures beyond its nodes' baseline here (p < 0.05)."
            )
        )
    )
    sec.blocks.append(
        Table(
            "signal_calibration",
            s.signals.select(
                "signal",
                "events",
                "nodes",
                "exposed",
                "followed",
                "share",
                "baseline",
                "lift",
                "lift_low",
                "lift_high",
                "p",
                "lead_min_median",
            ),
            "Per signal kind: events, nodes, events with a job running (exposed), of those followed "
            f"by an abnormal end within {fmt_num(s.horizon_h)} h, the share and the nodes' baseline, "
            f"the lift with its {100 * (1 - s.alpha):.0f}% interval, the one-sided p-value, and the "
            "median lead time [min].",
            max_rows=30,
            wrap=("signal",),
        )
    )
    if s.policies.height:
        sec.blocks.append(
            Table(
                "drain_policies",
                s.policies,
                "Drain policies 'drain after k events within t hours' for the commonest signals: the "
                f"share of firings followed by a hardware failure of the node within {fmt_num(s.horizon_h)} h "
                "(precision) and the share of hardware failures a firing preceded (recall).",
                max_rows=40,
            )
        )
    sec.blocks += notes_blocks(s)
    return [sec]
