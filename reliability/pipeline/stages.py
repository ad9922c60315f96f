"""The stages of a pipeline run: each is a pure function of its parameters and its upstream
stages' outputs, returning frames and scalars (cached by :mod:`reliability.pipeline.runner`).

Stage          needs                         makes
-------------  ----------------------------  ---------------------------------------------------
cluster_data   cluster inputs                a Dataset (jobs, health events, node states)
pod_data       pod inputs                    a Dataset (inventory, component failures, states)
attribution    cluster_data                  attributed jobs
mttf           attribution                   r_f, MTTF by size, projections
rates          attribution                   weekly failure rate and trend
workload       attribution                   job states, sizes, taxonomy, hardware share, secondary preemptions
ettr           attribution, mttf             ETTR by run / size / priority, the planner
lemon          cluster_data                  lemon-node suspects and backtest (when available)
pod            pod_data                      component rates, measured and analytic availability, recovery paths
routing        (parameters only)             Table 2 throughput ratios
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from reliability.errors import ReliabilityError
from reliability.pipeline.config import InputSpec, PipelineConfig, parse_shape
from reliability.store import Dataset

__all__ = ["STAGES", "Stage", "StageOutput"]


@dataclass
class StageOutput:
    """What a stage made: frames (written as parquet), JSON scalars, and its work folder."""

    frames: dict[str, pl.DataFrame] = field(default_factory=dict)
    scalars: dict[str, Any] = field(default_factory=dict)
    folder: Path | None = None

    @property
    def rows(self) -> int:
        return sum(f.height for f in self.frames.values())


@dataclass(frozen=True)
class Stage:
    """A named step: ``params(config)`` picks the parameters its cache key covers."""

    name: str
    needs: tuple[str, ...]
    params: Callable[[PipelineConfig], dict[str, Any]]
    run: Callable[[PipelineConfig, dict[str, StageOutput], Path], StageOutput]
    optional: Callable[[PipelineConfig], bool] = lambda cfg: True


def _input_key(spec: InputSpec) -> dict[str, Any]:
    from reliability.store import _sha256

    d: dict[str, Any] = {"kind": spec.kind, "preset": spec.preset, "seed": spec.seed, "days": spec.days,
                         "reader": spec.reader, "cluster": spec.cluster, "tz": spec.tz, "options": spec.options}  # fmt: skip
    if spec.paths:
        d["files"] = [_sha256(p)[0] for p in spec.paths]
    return d


def _ingest_inputs(specs: list[InputSpec], work: Path) -> StageOutput:
    from reliability.sim.pod import simulate_pod
    from reliability.sim.run import simulate_cluster
    from reliability.simulated import ingest_simulation

    ds = Dataset(work / "dataset")
    for i, spec in enumerate(specs):
        if spec.kind == "simulate-cluster":
            simulate_cluster(spec.preset, days=spec.days, seed=spec.seed).write(work / f"raw{i}")
            ingest_simulation(work / f"raw{i}", ds.path)
        elif spec.kind == "simulate-pod":
            simulate_pod(spec.preset, days=spec.days, seed=spec.seed).write(work / f"raw{i}")
            ds.ingest("pod", [work / f"raw{i}" / "pod_events.jsonl"])
        else:
            try:
                ds.ingest(
                    spec.reader, list(spec.paths), cluster=spec.cluster, tz=spec.tz, **spec.options
                )
            except ReliabilityError as exc:  # name the pipeline keys, not Python keywords
                raise spec.error(exc) from None
    s = ds.summary()
    return StageOutput(frames={"inputs": s.inputs, "tables": s.summary},
                       scalars={"clusters": s.clusters, "n_nodes": s.n_nodes, "first": str(s.first),
                                "last": str(s.last), "accelerator_hours": s.accelerator_hours})  # fmt: skip


def _cluster_data(cfg: PipelineConfig, deps: dict[str, StageOutput], work: Path) -> StageOutput:
    return _ingest_inputs([s for s in cfg.inputs if not s.is_pod], work)


def _pod_data(cfg: PipelineConfig, deps: dict[str, StageOutput], work: Path) -> StageOutput:
    return _ingest_inputs([s for s in cfg.inputs if s.is_pod], work)


def _dataset(out: StageOutput) -> Dataset:
    assert out.folder is not None
    return Dataset(out.folder / "dataset")


def _attribution(cfg: PipelineConfig, deps: dict[str, StageOutput], work: Path) -> StageOutput:
    from reliability.attribution import attribute_failures

    a = cfg.analysis
    jobs = attribute_failures(
        _dataset(deps["cluster_data"]), before_min=a["before_min"], after_min=a["after_min"]
    )
    return StageOutput(frames={"jobs": jobs})


def _largest_job(jobs: pl.DataFrame) -> int:
    return int(jobs.get_column("n_accelerators").max() or 1)


def _mttf(cfg: PipelineConfig, deps: dict[str, StageOutput], work: Path) -> StageOutput:
    from reliability.models import fit_mttf

    a = cfg.analysis
    jobs = deps["attribution"].frames["jobs"]
    m = fit_mttf(jobs, min_gpus=a["min_gpus"], gpus_per_node=a["gpus_per_node"])
    largest = _largest_job(jobs)
    return StageOutput(
        frames={"mttf_by_size": m.by_size, "mttf_summary": m.summary, "projections": m.projection(),
                "survival": m.survival},
        scalars={"rate_per_node_day": m.rate_per_node_day_, "ci": list(m.ci_), "failures": m.failures_,
                 "node_days": m.node_days_, "glm_slope": m.glm_slope_, "largest_job_gpus": largest,
                 "mttf_largest_h": float(m.mttf_h(largest)), "text": str(m)},
    )  # fmt: skip


def _rates(cfg: PipelineConfig, deps: dict[str, StageOutput], work: Path) -> StageOutput:
    from reliability.models import failure_rate_series

    s = failure_rate_series(deps["attribution"].frames["jobs"], min_gpus=cfg.analysis["min_gpus"])
    return StageOutput(frames={"failure_rate_weekly": s.series},
                       scalars={"trend_per_week": s.trend_per_week_, "trend_p": s.trend_p_})  # fmt: skip


def _workload(cfg: PipelineConfig, deps: dict[str, StageOutput], work: Path) -> StageOutput:
    from reliability.models import (
        failure_taxonomy,
        hardware_share,
        job_size_distribution,
        job_state_breakdown,
        secondary_preemptions,
    )

    jobs = deps["attribution"].frames["jobs"]
    hw = hardware_share(jobs)
    sp = secondary_preemptions(jobs)
    top_names = (
        jobs.filter(pl.col("failure_domain").is_in(["hardware", "infrastructure"]))
        .group_by("name", "user").agg(attempts=pl.len()).sort("attempts", "name", descending=[True, False]).head(10)
    )  # fmt: skip
    return StageOutput(
        frames={"job_states": job_state_breakdown(jobs), "job_sizes": job_size_distribution(jobs),
                "failure_taxonomy": failure_taxonomy(jobs), "hardware_failed_jobs": top_names},
        scalars={"hardware_share": hw, "secondary_preemptions": sp, "attempts": jobs.height,
                 "jobs": jobs.select("cluster", "job_id").n_unique()},
    )  # fmt: skip


def _ettr(cfg: PipelineConfig, deps: dict[str, StageOutput], work: Path) -> StageOutput:
    from reliability.models import job_run_ettr, plan

    a = cfg.analysis
    jobs = deps["attribution"].frames["jobs"]
    res = job_run_ettr(
        jobs,
        a["ckpt_interval_min"] / 60.0,
        a["restart_min"] / 60.0,
        ckpt_min_gpus=a["ckpt_min_gpus"],
    )
    rate = deps["mttf"].scalars["rate_per_node_day"]
    largest = deps["mttf"].scalars["largest_job_gpus"]
    frames = {
        "ettr_by_size": res.by_size,
        "ettr_by_priority": res.by_priority,
        "ettr_summary": res.summary,
    }
    scalars: dict[str, Any] = {"ettr_text": str(res)}
    if rate > 0:
        p = plan(
            max(largest, 8),
            rate,
            a["target_ettr"],
            restart_h=a["restart_min"] / 60.0,
            gpus_per_node=a["gpus_per_node"],
        )
        frames |= {"plan_frontier": p.frontier, "plan_grid": p.grid, "plan_summary": p.summary}
        scalars |= {"plan_text": str(p), "recommended_interval_h": p.recommended_interval_h,
                    "ettr_at_recommended": p.ettr_at_recommended, "equal_cost_h": p.equal_cost_h,
                    "plan_gpus": p.n_gpus}  # fmt: skip
    return StageOutput(frames=frames, scalars=scalars)


def _cluster_config(spec: InputSpec):
    """The simulator config of a ``simulate-cluster`` input (preset, with its days override)."""
    from reliability.sim.config import load_preset

    sim_cfg = load_preset(spec.preset)
    return sim_cfg.with_days(spec.days) if spec.days else sim_cfg


def _lemon(cfg: PipelineConfig, deps: dict[str, StageOutput], work: Path) -> StageOutput:
    from reliability.models import LemonDetector, node_features, score_nodes
    from reliability.models.lemon import default_detector

    a = cfg.analysis
    window = a["lemon_window_days"]
    sims = [s for s in cfg.inputs if s.kind == "simulate-cluster"]
    notes = []
    if a["lemon_model"]:
        det = LemonDetector.load(a["lemon_model"])
        notes.append(f"Detector loaded from {a['lemon_model']}.")
    else:
        det = default_detector()
        notes.append(f"Bundled detector (trained on simulated RSC-1-like clusters with their true lemon labels); "
                     f"threshold {det.threshold_:.2f} for out-of-fold precision {det.oof_precision_:.2f} at recall "
                     f"{det.oof_recall_:.2f}. Train your own with `reliability lemon train`.")  # fmt: skip
    try:
        feats = node_features(_dataset(deps["cluster_data"]), window_days=window, step_days=7)
    except ValueError as exc:  # less history than one window
        return StageOutput(scalars={"available": True, "tables": {}, "texts": [
            *notes, f"Not enough history for {window}-day lemon windows ({exc}); set [analysis].lemon_window_days lower."]})  # fmt: skip
    scores = score_nodes(det, feats)
    frames = {"suspects": scores.head(20).drop("window_end")}
    tables = {"suspects": f"Nodes ranked by the detector on the last {window}-day window; flagged = probability above "
                          f"the threshold {det.threshold_:.2f}. Drivers: the features that raised the score most."}  # fmt: skip
    texts = [
        *notes,
        f"{int(scores['flagged'].sum())} of {scores.height} nodes flagged ({100 * scores['flagged'].mean():.1f}%; paper: 1.2-1.7%).",
    ]
    sim_cfg = _cluster_config(sims[0]) if sims else None
    if sim_cfg is not None and sim_cfg.days / 2 < window:
        texts.append(
            f"No quarantine backtest: the simulated run ({sim_cfg.days:g} days) is shorter than two {window}-day windows."
        )
    elif sim_cfg is not None:
        from reliability.sim.experiments import lemon_backtest

        # the run as is is the one cluster_data already simulated and ingested (when it is the
        # only cluster input): reuse it, so only the quarantined variant is simulated
        cluster_inputs = [s for s in cfg.inputs if not s.is_pod]
        baseline = None
        if cluster_inputs == sims[:1] and deps["cluster_data"].folder is not None:
            baseline = (deps["cluster_data"].folder / "raw0", _dataset(deps["cluster_data"]))
        bt = lemon_backtest(
            sim_cfg,
            det,
            seed=sims[0].seed,
            split_day=sim_cfg.days / 2,
            window_days=window,
            work=work / "backtest",
            baseline=baseline,
        )
        frames |= {"lemon_backtest": bt.summary, "lemon_root_causes": bt.root_causes}
        tables |= {"lemon_backtest": "Backtest: the simulator re-run with the flagged nodes drained at mid-run, compared "
                                     "after the split with the run as is (same seed, same faults); the paper's figures beside.",
                   "lemon_root_causes": "Flagged nodes by the component their logs point at (node down = no component logged)."}  # fmt: skip
    return StageOutput(frames=frames, scalars={"available": True, "tables": tables, "texts": texts})


def _pod(cfg: PipelineConfig, deps: dict[str, StageOutput], work: Path) -> StageOutput:
    from reliability.models import (
        availability_curve,
        component_failure_rates,
        job_availability,
        measured_job_availability,
        recovery_paths,
    )

    ds = _dataset(deps["pod_data"])
    inv, cf = ds.inventory, ds.component_failures
    rates = component_failure_rates(cf, inv, every="1w")
    sizes = [16, 64, 256, 1024, 2048, 3072, 3200, 3584, 4096]
    clusters = sorted(inv.get_column("cluster").unique().to_list())
    curves, measured, comps = [], [], []
    for cl in clusters:
        frames = {
            "inventory": inv.filter(pl.col("cluster") == cl),
            "component_failures": cf.filter(pl.col("cluster") == cl),
            "node_states": ds.node_states.filter(pl.col("cluster") == cl),
        }
        has_ocs = frames["inventory"].filter(pl.col("component_type") == "ocs").height > 0
        mode = "reconfigurable" if has_ocs else "static"
        n_cubes = frames["inventory"].filter(pl.col("component_type") == "machine").height // 16
        pod = "tpuv4" if has_ocs else ("tpuv3" if n_cubes == 16 else "tpuv4-static")
        m = measured_job_availability(frames, [s for s in sizes if s <= 64 * n_cubes], mode=mode)
        measured.append(m.curve.with_columns(pod=pl.lit(pod)))
        a = cfg.analysis["host_availability"]
        host = m.host_availability if a == "measured" else float(a)
        c = availability_curve(host, pod, ocs_availability=m.ocs_availability if has_ocs else None,
                               link_availability=m.link_availability)  # fmt: skip
        curves.append(c.filter(pl.col("mode") == mode).with_columns(pod=pl.lit(pod)))
        comps.append({"cluster": cl, "pod": pod, "mode": mode, "host_availability": m.host_availability,
                      "link_availability": m.link_availability, "ocs_availability": m.ocs_availability,
                      "samples": m.samples})  # fmt: skip
    frames = {"component_rates_weekly": rates, "availability_curves": pl.concat(curves) if curves else pl.DataFrame(),
              "availability_measured": pl.concat(measured) if measured else pl.DataFrame(),
              "pod_components": pl.DataFrame(comps)}  # fmt: skip
    ref_host = next((c["host_availability"] for c in comps if c["pod"] == "tpuv4"), 0.9896)
    mean_rate = rates.group_by("component_type").agg(
        rate=(pl.col("failures").sum() / pl.col("component_days").sum())
    )
    r = {k: v for k, v in mean_rate.iter_rows()}
    rec = recovery_paths(50, machine_rate_per_day=r.get("machine", 0.0008), ici_rate_per_day=r.get("ici_link", 0.00005),
                         ocs_rate_per_day=r.get("ocs", 0.0004), ckpt_interval_h=cfg.analysis["ckpt_interval_min"] / 60.0)  # fmt: skip
    frames["recovery_paths"] = rec.summary
    jobs, steps = ds.jobs, ds.job_steps
    pod_jobs = {}
    if jobs.height:
        ended = jobs.drop_nulls("end_time")
        run_s = float((ended["end_time"] - ended["start_time"]).dt.total_seconds().sum())
        ft_s = (
            float((steps["end_time"] - steps["start_time"]).dt.total_seconds().sum())
            if steps.height
            else 0.0
        )
        hit = jobs.group_by("cluster", "job_id").agg(hw=(pl.col("state") == "NODE_FAIL").any())
        per = hit.group_by("cluster").agg(jobs=pl.len(), interrupted=pl.col("hw").mean())
        frames["pod_jobs"] = per.join(
            jobs.group_by("cluster").agg(
                attempts=pl.len(), preempted=(pl.col("state") == "PREEMPTED").sum()
            ),
            on="cluster",
        ).sort("cluster")
        pod_jobs = {"ft_share": ft_s / run_s if run_s else 0.0}
    return StageOutput(frames=frames, scalars={
        "fig1_tpuv4_3200": float(job_availability(3200, ref_host)),
        "fig1_tpuv3_1024": float(job_availability(1024, ref_host, "static", pod="tpuv3")),
        "reference_host_availability": ref_host, "break_even_repair_h": rec.break_even_repair_h,
        "recovery_text": str(rec), **pod_jobs,
    })  # fmt: skip


def _routing(cfg: PipelineConfig, deps: dict[str, StageOutput], work: Path) -> StageOutput:
    from reliability.models import all_to_all_throughput

    rows = []
    for text in cfg.analysis["routing_shapes"]:
        shape, twisted = parse_shape(text)
        rows.append(all_to_all_throughput(shape, twisted, failed_ocs=("z", 5)).summary)
    return StageOutput(frames={"routing": pl.concat(rows) if rows else pl.DataFrame()})


def _has_cluster(cfg: PipelineConfig) -> bool:
    return any(not s.is_pod for s in cfg.inputs)


def _has_pod(cfg: PipelineConfig) -> bool:
    return any(s.is_pod for s in cfg.inputs)


_A = lambda *keys: lambda cfg: {k: cfg.analysis[k] for k in keys}  # noqa: E731

STAGES: tuple[Stage, ...] = (
    Stage("cluster_data", (), lambda cfg: {"inputs": [_input_key(s) for s in cfg.inputs if not s.is_pod]}, _cluster_data, _has_cluster),
    Stage("pod_data", (), lambda cfg: {"inputs": [_input_key(s) for s in cfg.inputs if s.is_pod]}, _pod_data, _has_pod),
    Stage("attribution", ("cluster_data",), _A("before_min", "after_min"), _attribution, _has_cluster),
    Stage("mttf", ("attribution",), _A("min_gpus", "gpus_per_node"), _mttf, _has_cluster),
    Stage("rates", ("attribution",), _A("min_gpus"), _rates, _has_cluster),
    Stage("workload", ("attribution",), lambda cfg: {}, _workload, _has_cluster),
    Stage("ettr", ("attribution", "mttf"), _A("ckpt_interval_min", "restart_min", "ckpt_min_gpus", "target_ettr", "gpus_per_node"), _ettr, _has_cluster),
    Stage("lemon", ("cluster_data",), _A("lemon_window_days", "lemon_model"), _lemon, _has_cluster),
    Stage("pod", ("pod_data",), _A("host_availability", "ckpt_interval_min"), _pod, _has_pod),
    Stage("routing", (), _A("routing_shapes"), _routing, _has_pod),
)  # fmt: skip
