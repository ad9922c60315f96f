"""Assemble the report from a pipeline run: the plain-words summary, then one section per
analysis, each figure captioned with what it shows and the paper figure it corresponds to."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import polars as pl
from matplotlib.figure import Figure as MplFigure

from reliability import plots
from reliability._version import __version__
from reliability.report.model import Figure, Report, Section, Table, Text

__all__ = ["build_report"]


def _fig(size: tuple[float, float] = (6.4, 3.6)) -> tuple[MplFigure, Any]:
    fig = MplFigure(figsize=size, layout="constrained")
    return fig, fig.subplots()


def _h(hours: float | None) -> str:
    if hours is None:
        return "n/a"
    if hours != hours or hours == float("inf"):
        return "unbounded (no failures seen)"
    if hours < 1:
        return f"{60 * hours:.0f} min"
    if hours < 48:
        return f"{hours:.1f} h"
    return f"{hours / 24:.1f} days"


def build_report(result: Any) -> Report:
    """A :class:`Report` from a :class:`~reliability.pipeline.RunResult`."""
    cfg = result.config
    out = result.outputs
    a = cfg.analysis
    headline: list[tuple[str, str, str]] = []
    summary: list[str] = []
    sections: list[Section] = []

    if "cluster_data" in out:
        d = out["cluster_data"]
        s = d.scalars
        inputs = d.frames["inputs"]
        q = int(inputs["rows_quarantined"].sum())
        sec = Section("Data and quarantine")
        sec.blocks.append(Text(
            f"Clusters {', '.join(s['clusters'])}: {s['n_nodes']:,} nodes, from {s['first'][:16]} to {s['last'][:16]} UTC, "
            f"{s['accelerator_hours']:,.0f} GPU-hours. {int(inputs['rows_read'].sum()):,} rows read from {inputs.height} inputs; "
            f"{q:,} quarantined (rows read = kept + quarantined for every input)."))  # fmt: skip
        sec.blocks.append(Table("inputs", inputs, "Rows read, kept and quarantined per input."))
        sec.blocks.append(Table("tables", d.frames["tables"], "Rows per canonical table."))
        sections.append(sec)

    if "mttf" in out:
        m = out["mttf"].scalars
        rate = m["rate_per_node_day"]
        lo, hi = m["ci"]
        headline.append(("Failure rate r_f", f"{1000 * rate:.2f} per 1000 node-days",
                         f"95% CI {1000 * lo:.2f}-{1000 * hi:.2f}; {m['failures']} hardware interruptions of jobs of "
                         f"{a['min_gpus']}+ GPUs (paper: RSC-1 6.50, RSC-2 2.34)."))  # fmt: skip
        headline.append((f"MTTF at {m['largest_job_gpus']:,} GPUs", _h(m["mttf_largest_h"]),
                         "Mean time between hardware interruptions of the cluster's largest job, 1/(N r_f)."))  # fmt: skip
    if "ettr" in out and out["ettr"].scalars.get("recommended_interval_h") is not None:
        e = out["ettr"].scalars
        headline.append(("Checkpoint at least every", _h(e["recommended_interval_h"]),
                         f"for ETTR {a['target_ettr']:.2f} on {e['plan_gpus']:,} GPUs with a {a['restart_min']:g}-min restart "
                         f"(expected ETTR {e['ettr_at_recommended']:.3f})."))  # fmt: skip
    elif "ettr" in out and "mttf" in out:
        headline.append(("Checkpoint interval", "target out of reach",
                         f"ETTR {a['target_ettr']:.2f} cannot be reached with a {a['restart_min']:g}-min restart; see the planner."))  # fmt: skip

    if "workload" in out:
        w = out["workload"]
        hw = w.scalars["hardware_share"]
        sp = w.scalars["secondary_preemptions"]
        summary.append(
            f"{w.scalars['jobs']:,} jobs ran {w.scalars['attempts']:,} attempts. Hardware ended "
            f"{100 * hw['attempt_share']:.2f}% of attempts but {100 * hw['gpu_time_share']:.1f}% of GPU time "
            f"(HPCA'25: 0.2% and 18.7%): failures hit the large jobs. Their requeues caused {sp['count']:.0f} secondary "
            f"preemptions, {100 * sp['share_of_failure_overhead']:.1f}% of the failure overhead (paper: 16%)."
        )  # fmt: skip
        sec = Section("Job states and sizes")
        fig, ax = _fig()
        plots.plot_job_states(w.frames["job_states"], ax=ax)
        sec.blocks.append(
            Figure(
                "job_states",
                fig,
                "Share of attempts and of GPU time by final state (Kokolis et al. HPCA'25 Fig. 3).",
                w.frames["job_states"],
            )
        )
        fig, ax = _fig()
        plots.plot_job_sizes(w.frames["job_sizes"], ax=ax)
        sec.blocks.append(
            Figure(
                "job_sizes",
                fig,
                "Jobs and GPU time by job size (HPCA'25 Fig. 6): most jobs are small, most GPU time is in large jobs.",
                w.frames["job_sizes"],
            )
        )
        sections.append(sec)
        sec = Section("Failure taxonomy")
        fig, ax = _fig((6.4, 4.0))
        plots.plot_failure_taxonomy(w.frames["failure_taxonomy"], ax=ax)
        sec.blocks.append(
            Figure(
                "failure_taxonomy",
                fig,
                "Attempts that failed for a non-user reason, by attributed domain and cause (attribution: NODE_FAIL, or FAILED with a critical health event on the job's nodes from 10 min before its end to 5 min after; HPCA'25 §III).",
                w.frames["failure_taxonomy"],
            )
        )
        sec.blocks.append(
            Table(
                "hardware_failed_jobs",
                w.frames["hardware_failed_jobs"],
                "Job names and users with the most hardware-ended attempts (names and users as logged).",
            )
        )
        sections.append(sec)

    if "rates" in out:
        r = out["rates"]
        sec = Section("Failure rate over time")
        fig, ax = _fig()
        plots.plot_failure_rate(r.frames["failure_rate_weekly"], ax=ax)
        trend = r.scalars["trend_per_week"]
        sec.blocks.append(Figure("failure_rate_weekly", fig,
                                 f"Weekly hardware failure rate of jobs of {a['min_gpus']}+ GPUs with exact 95% Poisson intervals "
                                 f"(Kokolis et al. HPCA'25 Fig. 5). Trend: x{trend:.3f} per week (p = {r.scalars['trend_p']:.2g}).",
                                 r.frames["failure_rate_weekly"]))  # fmt: skip
        sections.append(sec)

    if "mttf" in out:
        mt = out["mttf"]
        sec = Section("MTTF vs job size")
        fig, ax = _fig((6.4, 4.0))
        plots.plot_mttf(
            mt.frames["mttf_by_size"],
            ax=ax,
            rate_per_node_day=mt.scalars["rate_per_node_day"],
            gpus_per_node=a["gpus_per_node"],
        )
        sec.blocks.append(
            Figure(
                "mttf_by_size",
                fig,
                "Measured MTTF per size bucket (95% intervals) and the model MTTF = 1/(N r_f) projected to 131k GPUs (HPCA'25 Fig. 7; paper projections 1.8 h at 16k GPUs and 0.23 h at 131k for r_f = 6.5).",
                mt.frames["mttf_by_size"],
            )
        )
        sec.blocks.append(
            Table(
                "projections",
                mt.frames["projections"],
                "Model MTTF at the paper's projection sizes, with the interval from r_f's 95% CI.",
            )
        )
        sec.blocks.append(
            Text(
                f"GLM slope of log failures on log nodes: {mt.scalars['glm_slope']:.2f} (1 means failures proportional to nodes)."
            )
        )
        sections.append(sec)

    if "workload" in out:
        w = out["workload"]
        sec = Section("Secondary preemptions")
        fig, ax = _fig((6.4, 2.4))
        plots.plot_secondary_preemptions(w.scalars["secondary_preemptions"], ax=ax)
        sp = w.scalars["secondary_preemptions"]
        sec.blocks.append(Figure("secondary_preemptions", fig, "Failure overhead in GPU-hours: attempts ended by hardware, and the preemptions their requeues caused (HPCA'25 Fig. 8).",
                                 pl.DataFrame({k: [v] for k, v in sp.items()})))  # fmt: skip
        sections.append(sec)

    if "ettr" in out:
        e = out["ettr"]
        sec = Section("ETTR and checkpointing")
        sec.blocks.append(Text(
            f"ETTR (productive time over wall time, queue included) of every job run, assuming a checkpoint every "
            f"{a['ckpt_interval_min']:g} min and a {a['restart_min']:g}-min restart (the paper's assumptions when logs do not say)."))  # fmt: skip
        fig, ax = _fig()
        plots.plot_ettr_by_size(e.frames["ettr_by_size"], ax=ax)
        sec.blocks.append(
            Figure(
                "ettr_by_size",
                fig,
                "ETTR by job size: per-run median and 10-90% range, and the GPU-time-weighted ETTR (Kokolis et al. HPCA'25 Fig. 9).",
                e.frames["ettr_by_size"],
            )
        )
        sec.blocks.append(
            Table("ettr_by_priority", e.frames["ettr_by_priority"], "ETTR by QoS / priority class.")
        )
        if "plan_grid" in e.frames:
            fig, ax = _fig()
            plots.plot_ettr_grid(e.frames["plan_grid"], ax=ax, target=a["target_ettr"])
            sec.blocks.append(
                Figure(
                    "ettr_what_if",
                    fig,
                    "Expected ETTR vs job size and checkpoint interval at this cluster's r_f (exact renewal form; HPCA'25 Fig. 10).",
                    e.frames["plan_grid"],
                )
            )
            sec.blocks.append(Text(e.scalars["plan_text"].split("\n\n")[0].replace("\n", " ")))
            sec.blocks.append(
                Table(
                    "plan_frontier",
                    e.frames["plan_frontier"],
                    "Planner frontier: for each restart overhead, the longest checkpoint interval that reaches the target ETTR.",
                )
            )
        sections.append(sec)

    if "lemon" in out:
        lm = out["lemon"]
        sec = Section("Lemon nodes")
        if not lm.scalars.get("available", True):
            sec.blocks.append(
                Text(
                    "The lemon-node detector is not part of this version; this section will list suspects and the quarantine backtest."
                )
            )
        else:
            if "suspects" in lm.frames and lm.frames["suspects"].height:
                fig, ax = _fig((6.4, 4.2))
                plots.plot_lemon_suspects(lm.frames["suspects"], ax=ax)
                sec.blocks.append(Figure("lemon_suspects", fig, "Nodes ranked by the lemon detector's calibrated probability "
                                         "(Kokolis et al. HPCA'25 §VI: nodes that fail jobs repeatedly yet pass health checks).",
                                         lm.frames["suspects"]))  # fmt: skip
            for name, caption in lm.scalars.get("tables", {}).items():
                sec.blocks.append(Table(name, lm.frames[name], caption))
            for t in lm.scalars.get("texts", []):
                sec.blocks.append(Text(t))
            if "suspects" in lm.frames and lm.frames["suspects"].height:
                top = ", ".join(lm.frames["suspects"].head(3).get_column("node").to_list())
                headline.append(
                    (
                        "Top lemon suspects",
                        top,
                        "Nodes the detector flags most confidently; see the Lemon nodes section.",
                    )
                )
        sections.append(sec)

    if "pod" in out:
        p = out["pod"]
        sec = Section("TPU pod: failures and availability")
        fig, ax = _fig()
        plots.plot_component_rates(p.frames["component_rates_weekly"], ax=ax)
        sec.blocks.append(
            Figure(
                "component_rates_weekly",
                fig,
                "Weekly failure rate per component type (Zu et al. NSDI'24 Fig. 12; paper daily rates: machines 0.08%, ICI cables 0.005%, OCS 0.04%).",
                p.frames["component_rates_weekly"],
            )
        )
        fig, ax = _fig((6.4, 4.0))
        plots.plot_availability(
            p.frames["availability_curves"], p.frames["availability_measured"], ax=ax
        )
        sec.blocks.append(Figure("availability", fig,
                                 f"Probability that a job of each size can be placed (NSDI'24 Fig. 1). Lines: model at the measured host availability; "
                                 f"points: fraction of time the simulated pod could place it (95% batch-means intervals). At a = "
                                 f"{p.scalars['reference_host_availability']:.4f}: TPUv4 {100 * p.scalars['fig1_tpuv4_3200']:.1f}% at 3,200 chips "
                                 f"(paper ~94%), TPUv3 static {100 * p.scalars['fig1_tpuv3_1024']:.1f}% at 1,024 chips (paper ~0).",
                                 p.frames["availability_curves"]))  # fmt: skip
        sec.blocks.append(
            Table(
                "pod_components",
                p.frames["pod_components"],
                "Measured component availabilities of each pod.",
            )
        )
        if "pod_jobs" in p.frames:
            sec.blocks.append(Table("pod_jobs", p.frames["pod_jobs"],
                                    "Jobs on each pod: the share that saw a hardware interruption (NSDI'24: about 1%), "
                                    "attempts and preemptions (defragmentation and maintenance)."))  # fmt: skip
            sec.blocks.append(Text(f"Jobs ran on fault-tolerant routing for {100 * p.scalars.get('ft_share', 0.0):.2f}% of "
                                   "their running time (NSDI'24: under 2% of jobs at any time)."))  # fmt: skip
        fig, ax = _fig((6.4, 3.0))
        plots.plot_recovery(p.frames["recovery_paths"], ax=ax)
        sec.blocks.append(
            Figure(
                "recovery_paths",
                fig,
                f"Reconfigure vs reroute for a 50-cube job at the measured failure rates: rerouting around an OCS beats reconfiguring while its repair takes under {p.scalars['break_even_repair_h']:.1f} h (NSDI'24 §4-5).",
                p.frames["recovery_paths"],
            )
        )
        sections.append(sec)
    if "routing" in out and out["routing"].frames["routing"].height:
        r = out["routing"]
        sec = Section("Routing around a failed OCS")
        fig, ax = _fig((6.4, 3.0))
        plots.plot_routing(r.frames["routing"], ax=ax)
        sec.blocks.append(
            Figure(
                "routing",
                fig,
                "All-to-all throughput kept with one OCS down: the maximum concurrent flow (an upper bound for any routing) beside NSDI'24 Table 2's measurements.",
                r.frames["routing"],
            )
        )
        sec.blocks.append(
            Table(
                "routing_table",
                r.frames["routing"].drop("lp_variables", "solve_s"),
                "Throughput per chip in link bandwidths, healthy and failed.",
            )
        )
        sections.append(sec)

    for sweep_file in getattr(cfg, "sweeps", ()):
        from reliability.sweep import load_sweep

        spec = load_sweep(sweep_file)
        agg_path = spec.out / "aggregates.parquet"
        sec = Section(f"Sweep: {spec.name}")
        if agg_path.is_file():
            agg = pl.read_parquet(agg_path)
            fig, ax = _fig((6.4, max(2.4, 0.22 * agg.height + 1)))
            plots.plot_sweep(agg, ax=ax)
            sec.blocks.append(Figure(f"sweep_{spec.name}", fig, f"Sweep {spec.name} ({spec.model}, {len(spec.seeds)} seeds per cell): "
                                     "mean over seeds with a 95% t-interval per parameter cell and metric.", agg))  # fmt: skip
        else:
            sec.blocks.append(Text(f"No results yet: run `reliability sweep {sweep_file.name}`."))
        sections.append(sec)

    if not headline:
        headline.append(
            ("Inputs", f"{len(cfg.inputs)}", "No cluster job data: cluster figures are omitted.")
        )
    subtitle = f"Pipeline {cfg.name} - generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by reliability {__version__}"
    return Report(
        title=cfg.title, subtitle=subtitle, headline=headline, summary=summary, sections=sections
    )
