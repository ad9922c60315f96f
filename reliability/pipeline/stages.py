"""The stages of a pipeline run, and the report sections that render them.

Each stage is a pure function of the configuration and its upstream stages' typed results
(cached by :mod:`reliability.pipeline.runner`, each result saved as parquet + JSON and rebuilt
from it), and each has the report sections that render it, next to it in
:mod:`reliability.pipeline.steps`.

Stage             needs                            makes (a result object)
----------------  -------------------------------  ------------------------------------------------
cluster_split     (a lone simulated cluster)       SplitResult: its state saved at the backtest's split
cluster_data      cluster inputs, cluster_split    DataResult: a Dataset (jobs, health events, node states)
pod_data          pod inputs                       DataResult: a Dataset (inventory, component failures)
attribution       cluster_data                     AttributionResult: every attempt with how it ended
mttf              attribution                      MTTFResult: r_f, MTTF by size, projections
rates             attribution                      RateSeries: weekly failure rate and trend
workload          attribution                      WorkloadResult: states, sizes, taxonomy, overhead, crash loops
node_health       cluster_data, attribution        NodeHealth: out-of-service time, open drains, offenders
ettr              attribution                      RunETTR: ETTR by run / size / priority
plan              attribution, mttf, node_health   CheckpointPlan: interval per job size for the target
signals           cluster_data, attribution        SignalCalibration: which signals predict job failures
lemon_quarantine  cluster_split                    QuarantineStep: nodes flagged at the split, the run drained
lemon             cluster_data, attribution,       LemonReport: lemon test or node scores (and the backtest
                  lemon_quarantine                 when simulated)
components        cluster_data                     ComponentReliability: lifetimes, time between failures
pod               pod_data                         PodAnalysis: rates, availability, recovery paths, jobs
pod_components    pod_data                         ComponentReliability: the pods' components
routing           (parameters only)                RoutingTable: Table 2 throughput ratios
fleets            attribution, mttf                FleetComparison: r_f, components and largest-job
                                                   MTTF beside published fleets

A simulated cluster that is the only cluster input is run in two halves for the lemon backtest:
``cluster_split`` simulates it to the split, then ``cluster_data`` continues the baseline to its
end while ``lemon_quarantine`` (on a second process) continues it with the flagged nodes drained.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reliability.pipeline.config import InputSpec, PipelineConfig
from reliability.pipeline.steps import (
    cluster,
    components,
    data,
    fleets,
    health,
    lemon,
    pod,
    signals,
)
from reliability.pipeline.steps.common import Context
from reliability.report.model import Section

__all__ = ["SECTIONS", "STAGES", "Stage"]


@dataclass(frozen=True)
class Stage:
    """A named pipeline step.

    ``params(config)`` picks the parameters its cache key covers; ``run`` returns its result;
    ``optional(config)`` says whether the pipeline runs it.
    """

    name: str
    needs: tuple[str, ...]
    params: Callable[[PipelineConfig], dict[str, Any]]
    run: Callable[[PipelineConfig, dict[str, Any], Path], Any]
    optional: Callable[[PipelineConfig], bool] = lambda cfg: True
    #: slow and single-threaded (a simulation): run on a second process as soon as what it
    #: needs is done, beside the stages after it (:func:`~reliability.pipeline.run_pipeline`)
    background: bool = False


def _input_key(spec: InputSpec) -> dict[str, Any]:
    from reliability.store import _sha256

    d: dict[str, Any] = {
        "kind": spec.kind,
        "preset": spec.preset,
        "seed": spec.seed,
        "days": spec.days,
        "reader": spec.reader,
        "cluster": spec.cluster,
        "tz": spec.tz,
        "options": spec.options,
    }
    if spec.paths:
        d["files"] = [_sha256(p)[0] for p in spec.paths]
    return d


def _has_cluster(cfg: PipelineConfig) -> bool:
    return any(not s.is_pod for s in cfg.inputs)


def _has_pod(cfg: PipelineConfig) -> bool:
    return any(s.is_pod for s in cfg.inputs)


def _a(*keys: str) -> Callable[[PipelineConfig], dict[str, Any]]:
    return lambda cfg: cfg.analysis.pick(*keys)


STAGES: tuple[Stage, ...] = (
    Stage(
        "cluster_split",
        (),
        # keyed on where it stops (None: no backtest), not on the window: another window that
        # still allows the backtest splits at the same day and reruns nothing before the lemons
        lambda cfg: {
            "inputs": [_input_key(s) for s in cfg.inputs if not s.is_pod],
            "split_day": data.split_day(cfg),
        },
        data.cluster_split,
        _has_cluster,
    ),
    Stage(
        "cluster_data",
        ("cluster_split",),
        lambda cfg: {"inputs": [_input_key(s) for s in cfg.inputs if not s.is_pod]},
        data.cluster_data,
        _has_cluster,
    ),
    Stage(
        "pod_data",
        (),
        lambda cfg: {"inputs": [_input_key(s) for s in cfg.inputs if s.is_pod]},
        data.pod_data,
        _has_pod,
        background=True,  # a pod simulation, beside the cluster's
    ),
    Stage(
        "attribution",
        ("cluster_data",),
        lambda cfg: {
            **_a("before_min", "after_min", "requeue_exit_codes", "gpus_per_node")(cfg),
            "reasons": cfg.reasons_table,
        },
        cluster.attribution,
        _has_cluster,
    ),
    Stage("mttf", ("attribution",), _a("min_gpus"), cluster.mttf, _has_cluster),
    Stage("rates", ("attribution",), _a("min_gpus"), cluster.rates, _has_cluster),
    Stage("workload", ("attribution",), _a(), cluster.workload, _has_cluster),
    Stage("node_health", ("cluster_data", "attribution"), _a(), health.node_health, _has_cluster),
    Stage(
        "ettr",
        ("attribution",),
        _a("ckpt_interval_min", "restart_min", "ckpt_min_gpus"),
        cluster.ettr,
        _has_cluster,
    ),
    Stage(
        "plan",
        ("attribution", "mttf", "node_health"),
        _a("restart_min", "target_ettr", "plan_gpus", "ckpt_interval_min"),
        cluster.checkpoint_plan,
        _has_cluster,
    ),
    Stage(
        "signals",
        ("cluster_data", "attribution"),
        lambda cfg: {"reasons": cfg.reasons_table},
        signals.signals,
        _has_cluster,
    ),
    Stage(
        "lemon_quarantine",
        ("cluster_split",),
        _a("lemon_window_days", "lemon_model"),
        lemon.lemon_quarantine,
        _has_cluster,
        # the second half of the run again, with the flagged nodes drained: beside
        # cluster_data's second half (listed late, so the stages before it are not held up)
        background=True,
    ),
    Stage(
        "lemon",
        ("cluster_data", "attribution", "lemon_quarantine"),
        lambda cfg: {**_a("lemon_window_days", "lemon_model")(cfg), "reasons": cfg.reasons_table},
        lemon.lemon,
        _has_cluster,
    ),
    Stage("components", ("cluster_data",), _a(), components.components, _has_cluster),
    Stage("pod", ("pod_data",), _a("host_availability", "ckpt_interval_min"), pod.pod, _has_pod),
    Stage("pod_components", ("pod_data",), _a(), components.pod_components, _has_pod),
    Stage("routing", (), _a("routing_shapes"), pod.routing, _has_pod, background=True),
    Stage("fleets", ("attribution", "mttf"), _a(), fleets.fleets, _has_cluster),
)

#: the report's sections in order: (stage whose result they render, builder)
SECTIONS: tuple[tuple[str, Callable[[Any, Context], list[Section]]], ...] = (
    ("cluster_data", data.data_section),
    ("node_health", health.health_section),
    ("workload", cluster.workload_sections),
    ("rates", cluster.rates_section),
    ("mttf", cluster.mttf_section),
    ("ettr", cluster.ettr_section),
    ("plan", cluster.plan_section),
    ("signals", signals.signals_section),
    ("lemon", lemon.lemon_section),
    ("fleets", fleets.fleets_section),
    ("components", components.components_section),
    ("pod_data", data.data_section),
    ("pod", pod.pod_section),
    ("pod_components", components.pod_components_section),
    ("routing", pod.routing_section),
)
