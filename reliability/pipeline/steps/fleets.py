"""Stage ``fleets``: the cluster beside published fleets, and its report section.

The cluster's r_f, hardware failures by component and largest-job MTTF beside RSC-1/RSC-2
(Kokolis et al. HPCA'25), Llama 3 (Dubey et al. 2024, Table 5), FT-HSDP (Salpekar et al.
2026), NCSA Delta (Cui et al. SC'25) and the fleets that publish shares only
(:func:`reliability.models.fleets.compare_fleets`).
"""

from __future__ import annotations

import polars as pl

from reliability import plots
from reliability.analyses.attribution import AttributionResult
from reliability.models.failures import MTTFResult
from reliability.models.fleets import FleetComparison
from reliability.pipeline.steps.common import Context, notes_blocks, plot_block, table
from reliability.report.model import Section, Text

__all__ = ["fleets", "fleets_section"]


def fleets(attribution: AttributionResult, mttf: MTTFResult) -> FleetComparison:
    """Run stage ``fleets``: the cluster's r_f, components and largest-job MTTF beside published fleets.

    Parameters
    ----------
    attribution : AttributionResult
        The attributed jobs.
    mttf : MTTFResult
        The cluster's r_f fit (``[analysis].min_gpus``, ``gpus_per_node``).

    Returns
    -------
    FleetComparison
        The rates, components and MTTF tables with their caveats.
    """
    from reliability.models.fleets import compare_fleets

    a = attribution
    return compare_fleets(a.jobs, fit=mttf, observation_end=a.observation_end)


def _per_1000(frame: pl.DataFrame, cols: tuple[str, ...]) -> pl.DataFrame:
    return frame.with_columns(pl.col(c) * 1000 for c in cols).rename(
        {"rate_per_node_day": "per_1000_node_days"}
    )


def fleets_section(c: FleetComparison, ctx: Context) -> list[Section]:
    """Build the "Your fleet beside published fleets" report section.

    Parameters
    ----------
    c : FleetComparison
        The ``fleets`` stage's result.
    ctx : Context
        The report context.

    Returns
    -------
    list of Section
        The one section: the rates, the component shares, what does not map, the MTTF of the
        largest job, and the notes (the published tables that do not add up among them).
    """
    sec = Section("Your fleet beside published fleets")
    yours = c.summary.row(0, named=True)
    if yours["rate_per_node_day"] is None:
        head = f"Your r_f (jobs of {c.min_gpus:,}+ GPUs) is not estimable here (see the notes)"
    else:
        head = (
            f"Your r_f (jobs of {c.min_gpus:,}+ GPUs) is {1000 * yours['rate_per_node_day']:.3g} "
            f"per 1000 node-days ({1000 * yours['ci_low']:.3g}-{1000 * yours['ci_high']:.3g})"
        )
    sec.blocks.append(
        Text(
            head + ". Published fleets count different things over different exposure: Llama 3 "
            "and FT-HSDP count every unexpected interruption of one job (software bugs and "
            "timeouts too) over that job's node-days, Delta counts GPU memory errors over every "
            "GPU-hour of its fleet, RSC-1/RSC-2 count hardware failures of large jobs as this "
            "package does. Each row says which."
        )
    )
    sec.blocks.append(
        plot_block(
            "fleet_rates",
            lambda ax: plots.plot_fleet_rates(c, ax=ax),
            (6.4, 3.8),
            "Your r_f (line, shaded: its 95% interval) beside each published fleet's rate per "
            "1000 node-days (points with bars: exact 95% intervals from published counts; hollow: "
            "a printed rate without counts). The fleets count different things; the table says "
            "what.",
            _per_1000(c.summary, ("rate_per_node_day", "ci_low", "ci_high")).select(
                "fleet", "per_1000_node_days", "ci_low", "ci_high"
            ),
        )
    )
    rates = _per_1000(c.summary, ("rate_per_node_day", "ci_low", "ci_high")).drop(
        "rate_per_gpu_day", "definition"
    )
    sec.blocks.append(
        table(
            "fleet_rates",
            rates,
            "Failure rate per 1000 node-days with 95% intervals (exact Poisson for published "
            "counts; none where only a rate is printed), yours first.",
            wrap=("fleet", "versus_yours", "source", "caveat"),
        )
    )
    if c.components.height:
        sec.blocks.append(
            table(
                "fleet_components",
                c.components,
                "Hardware failures by taxonomy component: your share of the failures in r_f beside "
                "the shares of the Llama 3 (Table 5) and FT-HSDP rows the taxonomy puts in the "
                "hardware domains.",
                scales={"your_share": 1.0, "llama3_share": 1.0, "fthsdp_share": 1.0},
            )
        )
    sec.blocks.append(
        table(
            "fleet_components_not_mapped",
            c.unmapped,
            "Published rows left out of the comparison: no taxonomy component, or a domain that "
            "r_f does not count (share of that table's total).",
            wrap=("label", "why"),
            scales={"share": 1.0},
        )
    )
    if c.mttf.height:
        sec.blocks.append(
            table(
                "fleet_mttf",
                c.mttf,
                f"MTTF [h] of your largest job ({c.largest_gpus:,} GPUs): measured, your model "
                "1/(N r_f), and what each fleet's rate projects for a job of that size "
                "(24 / (N_nodes r_f) with the fleet's GPUs per node; Kokolis et al. HPCA'25 Eq. 1).",
                wrap=("basis", "caveat"),
            )
        )
    sec.blocks += notes_blocks(c)
    return [sec]
