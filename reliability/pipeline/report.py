"""Assemble the report of a pipeline run.

The action list and headline numbers at the top (:mod:`reliability.report.actions`), then one
section per analysis, each built next to the stage it renders
(:data:`reliability.pipeline.stages.SECTIONS`), then the sweeps. The report layer renders it
(:func:`reliability.report.write_report`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import polars as pl
from matplotlib.figure import Figure as MplFigure

from reliability import plots
from reliability._version import __version__
from reliability.pipeline.stages import SECTIONS, RunResults
from reliability.pipeline.steps.common import Context, analysis_terms
from reliability.report.actions import (
    checkpoint_actions,
    data_actions,
    headline_cards,
    job_actions,
    node_actions,
)
from reliability.report.model import Card, Figure, Report, Section, Text

__all__ = ["build_report"]


def _sweep_sections(cfg: Any) -> list[Section]:
    from reliability.sweep import load_sweep

    out = []
    for sweep_file in getattr(cfg, "sweeps", ()):
        spec = load_sweep(sweep_file)
        agg_path = spec.out / "aggregates.parquet"
        sec = Section(f"Sweep: {spec.name}")
        if agg_path.is_file():
            agg = pl.read_parquet(agg_path)
            fig = MplFigure(figsize=(6.4, max(2.4, 0.22 * agg.height + 1)), layout="constrained")
            plots.plot_sweep(agg, ax=fig.subplots())
            sec.blocks.append(
                Figure(
                    f"sweep_{spec.name}",
                    fig,
                    f"Sweep {spec.name} ({spec.model}, {len(spec.seeds)} "
                    "seeds per cell): mean over seeds with a 95% t-interval per parameter cell and "
                    "metric.",
                    agg,
                )
            )
        else:
            sec.blocks.append(
                Text(f"No results yet: run `reliability sweep {sweep_file.name}`.", kind="note")
            )
        out.append(sec)
    return out


def build_report(run: Any) -> Report:
    """Build the :class:`~reliability.report.Report` of a pipeline run.

    The action list, the headline numbers and every section are computed from the run's typed
    results; a stage that did not run leaves its section out and says so where it matters.

    Parameters
    ----------
    run : RunResult
        A finished :class:`~reliability.pipeline.RunResult` (its config and its stages'
        results, a :class:`~reliability.pipeline.RunResults`).

    Returns
    -------
    Report
        Actions, headline cards, summary lines and sections, ready to render.
    """
    cfg = run.config
    results: RunResults = run.outputs
    ctx = Context(cfg, results)
    cluster, pods = results.cluster_data, results.pod_data
    actions = [
        *node_actions(results.node_health, results.lemon),
        *checkpoint_actions(results.plan, results.mttf),
        *job_actions(results.workload),
        *data_actions(
            [cluster, pods], dataset_hint=str(cluster.path) if cluster is not None else ""
        ),
    ]
    for a in actions:
        a.text, a.evidence = analysis_terms(a.text), analysis_terms(a.evidence)
    cards = headline_cards(results)
    for c in cards:
        c.explanation = analysis_terms(c.explanation)
    if not cards:
        cards.append(
            Card("Inputs", f"{len(cfg.inputs)}", "no cluster job data: cluster figures are omitted")
        )
    sections: list[Section] = []
    for stage, builder in SECTIONS:
        got = results[stage]
        if got is not None:
            sections += builder(got, ctx)
    sections += _sweep_sections(cfg)
    subtitle = f"Pipeline {cfg.name} - generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by reliability {__version__}"
    return Report(
        title=cfg.title, subtitle=subtitle, actions=actions, headline=cards, sections=sections
    )
