"""The stages of a pipeline run, and the report sections that render them.

Each stage is a pure function of its upstream stages' typed results and the configuration
(cached by :mod:`reliability.pipeline.runner`, each result saved as parquet + JSON and rebuilt
from it), and each has the report sections that render it, next to it in
:mod:`reliability.pipeline.steps`. A stage function's parameters are the stages it needs, by
name and result type (``def mttf(attribution: AttributionResult, cfg: PipelineConfig) ->
MTTFResult``): the runner derives ``needs`` from them, and :func:`check_stages` refuses, when
this module is imported, a parameter that names no earlier stage or takes another type. Its
cache key covers the ``[analysis]`` keys it declares (``Stage(reads=...)``), and reading any
other fails the run (:func:`~reliability.pipeline.cache.run_checked`). A run's results come
back as :class:`RunResults`, one attribute per stage.

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

import dataclasses
import difflib
import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reliability.models.failures import MTTFResult, RateSeries, WorkloadResult
from reliability.models.fleets import FleetComparison
from reliability.models.lifetimes.components import ComponentReliability
from reliability.models.nodes import NodeHealth
from reliability.models.nodes.signals import SignalCalibration
from reliability.models.recovery import RunETTR
from reliability.pipeline.analysis import AnalysisConfig
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
from reliability.pipeline.steps.cluster import AttributionResult, CheckpointPlan
from reliability.pipeline.steps.common import Context
from reliability.pipeline.steps.data import DataResult, SplitResult
from reliability.pipeline.steps.lemon import LemonReport, QuarantineStep
from reliability.pipeline.steps.pod import PodAnalysis, RoutingTable
from reliability.report.model import Section

__all__ = ["SECTIONS", "STAGES", "RunResults", "Stage", "StageDefinitionError", "check_stages"]

#: the parameters of a stage function that are not upstream results
_CONFIG, _WORK = "cfg", "work"
#: what ``Stage.reads`` may name besides the ``[analysis]`` keys: the reason rules
#: (``[attribution.reasons]``, keyed as written)
_REASONS = "reasons"


class StageDefinitionError(TypeError):
    """A stage is declared wrong (a bug of the package).

    A parameter that names no earlier stage, a type that is not the upstream stage's result, or
    an unknown ``[analysis]`` key.
    """


def _always(cfg: PipelineConfig) -> bool:
    return True


@dataclass(frozen=True)
class Stage:
    """A named pipeline step: a function of its upstream stages' results and the configuration.

    The function's parameters are its dependencies, each named after the stage whose result it
    takes and annotated with that result's type, then ``cfg: PipelineConfig`` and, where it
    needs a folder of its own, ``work: Path``; e.g.
    ``def mttf(attribution: AttributionResult, cfg: PipelineConfig) -> MTTFResult``.
    :attr:`needs` is derived from those names (:func:`check_stages` refuses a name that is no
    earlier stage's).

    Parameters
    ----------
    name : str
        The stage's name (its cache folder ``<name>-<key16>``, its report sections).
    run : callable
        The stage function.
    reads : tuple of str
        The ``[analysis]`` keys the stage reads (and ``"reasons"`` for the reason rules): its
        cache key covers exactly these (:func:`~reliability.pipeline.cache.run_checked` refuses
        a read of any other).
    key : callable or None
        More of the cache key that is not an ``[analysis]`` key (the inputs, a derived value):
        ``key(cfg)`` returns a JSON-ready dict.
    optional : callable
        ``optional(cfg)``: whether the pipeline runs the stage.
    background : bool
        Slow and single-threaded (a simulation): run on a second process as soon as what it
        needs is done, beside the stages after it (:func:`~reliability.pipeline.run_pipeline`).
    """

    name: str
    run: Callable[..., Any]
    reads: tuple[str, ...] = ()
    key: Callable[[PipelineConfig], dict[str, Any]] | None = None
    optional: Callable[[PipelineConfig], bool] = _always
    background: bool = False
    #: the upstream stages, from the function's parameter names
    needs: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        params = inspect.signature(self.run).parameters.values()
        odd = [
            p.name
            for p in params
            if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) or p.default is not p.empty
        ]
        if odd:
            raise StageDefinitionError(
                f"stage {self.name}: {self.run.__qualname__}() parameter {odd[0]!r}: a stage "
                "takes named parameters without defaults (upstream stages, cfg, work)"
            )
        keys = {f.name for f in dataclasses.fields(AnalysisConfig)} | {_REASONS}
        for k in self.reads:
            if k not in keys:
                near = difflib.get_close_matches(k, sorted(keys), n=1)
                hint = f" (did you mean {near[0]}?)" if near else ""
                raise StageDefinitionError(
                    f"stage {self.name}: reads={k!r} is no [analysis] key{hint}"
                )
        needs = tuple(p.name for p in params if p.name not in (_CONFIG, _WORK))
        object.__setattr__(self, "needs", needs)

    def params(self, cfg: PipelineConfig) -> dict[str, Any]:
        """Return what the stage's cache key covers: the keys it reads and its ``key(cfg)``.

        Parameters
        ----------
        cfg : PipelineConfig
            The pipeline.

        Returns
        -------
        dict of str to object
            JSON-ready: ``[analysis]`` key -> value, ``"reasons"`` -> ``[attribution.reasons]``
            as written, and whatever ``key(cfg)`` adds.
        """
        out = dict(self.key(cfg)) if self.key is not None else {}
        out.update(cfg.analysis.pick(*(k for k in self.reads if k != _REASONS)))
        if _REASONS in self.reads:
            out[_REASONS] = cfg.reasons_table
        return out

    def __call__(self, cfg: PipelineConfig, results: Any, work: Path) -> Any:
        """Run the stage on its upstream results.

        Parameters
        ----------
        cfg : PipelineConfig
            The pipeline (or a view of it that records what is read).
        results : RunResults or mapping of str to object
            Upstream results, by stage name (``results[name]``).
        work : Path
            The stage's cache folder.

        Returns
        -------
        object
            The stage's result.
        """
        kwargs = {n: results[n] for n in self.needs}
        names = inspect.signature(self.run).parameters
        if _CONFIG in names:
            kwargs[_CONFIG] = cfg
        if _WORK in names:
            kwargs[_WORK] = work
        return self.run(**kwargs)


def _hints(fn: Callable[..., Any], stage: str) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn)
    except NameError as exc:
        raise StageDefinitionError(
            f"stage {stage}: the annotations of {fn.__qualname__}() cannot be resolved: {exc}"
        ) from None


def check_stages(stages: tuple[Stage, ...]) -> tuple[Stage, ...]:
    """Check that every stage's parameters name earlier stages and take their result types.

    Parameters
    ----------
    stages : tuple of Stage
        The stages in the order they run.

    Returns
    -------
    tuple of Stage
        ``stages``, unchanged.

    Raises
    ------
    StageDefinitionError
        For a duplicate name, a parameter that names no earlier stage (a misspelling, with the
        nearest name), a dependency or ``cfg`` without the right annotation, or a stage function
        without a return annotation.
    """
    made: dict[str, Any] = {}  # stage name -> its result type
    for s in stages:
        if s.name in made:
            raise StageDefinitionError(f"stage {s.name} is declared twice")
        hints = _hints(s.run, s.name)
        for need in s.needs:
            if need not in made:
                later = [t.name for t in stages if t.name == need]
                near = difflib.get_close_matches(need, [t.name for t in stages], n=1)
                why = (
                    "runs after it: list it earlier"
                    if later
                    else "is no stage" + (f" (did you mean {near[0]}?)" if near else "")
                )
                raise StageDefinitionError(
                    f"stage {s.name}: {s.run.__qualname__}() parameter {need!r} {why}"
                )
            want = hints.get(need)
            if not (isinstance(want, type) and issubclass(made[need], want)):
                raise StageDefinitionError(
                    f"stage {s.name}: {s.run.__qualname__}() parameter {need!r} must be annotated "
                    f"with stage {need}'s result type {made[need].__name__}, not {want!r}"
                )
        if _CONFIG in inspect.signature(s.run).parameters and hints.get(_CONFIG) is not (
            PipelineConfig
        ):
            raise StageDefinitionError(
                f"stage {s.name}: {s.run.__qualname__}() parameter 'cfg' must be a PipelineConfig"
            )
        result = hints.get("return")
        if not isinstance(result, type):
            raise StageDefinitionError(
                f"stage {s.name}: {s.run.__qualname__}() must be annotated with its result type"
            )
        made[s.name] = result
    return stages


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


def _cluster_inputs(cfg: PipelineConfig) -> dict[str, Any]:
    return {"inputs": [_input_key(s) for s in cfg.inputs if not s.is_pod]}


def _split_key(cfg: PipelineConfig) -> dict[str, Any]:
    # keyed on where it stops (None: no backtest), not on the window: another window that still
    # allows the backtest splits at the same day and reruns nothing before the lemons
    return {**_cluster_inputs(cfg), "split_day": data.split_day(cfg)}


def _pod_inputs(cfg: PipelineConfig) -> dict[str, Any]:
    return {"inputs": [_input_key(s) for s in cfg.inputs if s.is_pod]}


_C, _P = _has_cluster, _has_pod

STAGES: tuple[Stage, ...] = check_stages(
    (
        Stage("cluster_split", data.cluster_split, key=_split_key, optional=_C),
        Stage("cluster_data", data.cluster_data, key=_cluster_inputs, optional=_C),
        # a pod simulation, beside the cluster's
        Stage("pod_data", data.pod_data, key=_pod_inputs, optional=_P, background=True),
        Stage(
            "attribution",
            cluster.attribution,
            reads=("before_min", "after_min", "requeue_exit_codes", "gpus_per_node", _REASONS),
            optional=_C,
        ),
        Stage("mttf", cluster.mttf, reads=("min_gpus",), optional=_C),
        Stage("rates", cluster.rates, reads=("min_gpus",), optional=_C),
        Stage("workload", cluster.workload, optional=_C),
        Stage("node_health", health.node_health, optional=_C),
        Stage(
            "ettr",
            cluster.ettr,
            reads=("ckpt_interval_min", "restart_min", "ckpt_min_gpus"),
            optional=_C,
        ),
        Stage(
            "plan",
            cluster.checkpoint_plan,
            reads=("restart_min", "target_ettr", "plan_gpus", "ckpt_interval_min"),
            optional=_C,
        ),
        Stage("signals", signals.signals, reads=(_REASONS,), optional=_C),
        # the second half of the run again, with the flagged nodes drained: beside
        # cluster_data's second half (listed late, so the stages before it are not held up)
        Stage(
            "lemon_quarantine",
            lemon.lemon_quarantine,
            reads=("lemon_window_days", "lemon_model"),
            optional=_C,
            background=True,
        ),
        Stage(
            "lemon",
            lemon.lemon,
            reads=("lemon_window_days", "lemon_model", _REASONS),
            optional=_C,
        ),
        Stage("components", components.components, optional=_C),
        Stage("pod", pod.pod, reads=("host_availability", "ckpt_interval_min"), optional=_P),
        Stage("pod_components", components.pod_components, optional=_P),
        Stage("routing", pod.routing, reads=("routing_shapes",), optional=_P, background=True),
        Stage("fleets", fleets.fleets, optional=_C),
    )
)


@dataclass(frozen=True)
class RunResults:
    """Every stage's result of a pipeline run: one attribute per stage, None when it did not run.

    What :func:`~reliability.pipeline.run_pipeline` returns (as ``RunResult.outputs``) and the
    report's builders read: ``results.mttf`` is an :class:`~reliability.models.failures.MTTFResult` or
    None. ``results["mttf"]`` is the same, for code that walks the stages by name.

    Attributes
    ----------
    cluster_split : SplitResult or None
        The lone simulated cluster's state at the backtest's split.
    cluster_data, pod_data : DataResult or None
        The cluster's and the pods' Datasets.
    attribution : AttributionResult or None
        Every attempt with how it ended.
    mttf : MTTFResult or None
        r_f, MTTF by size, projections.
    rates : RateSeries or None
        The weekly failure rate and its trend.
    workload : WorkloadResult or None
        States, sizes, taxonomy, overhead, crash loops.
    node_health : NodeHealth or None
        Out-of-service time, open drains, offenders.
    ettr : RunETTR or None
        ETTR by run, size and priority.
    plan : CheckpointPlan or None
        A checkpoint interval per job size for the target.
    signals : SignalCalibration or None
        Which signals predict job failures.
    lemon_quarantine : QuarantineStep or None
        The backtest's run with the flagged nodes drained.
    lemon : LemonReport or None
        The lemon test or node scores, and the backtest.
    components, pod_components : ComponentReliability or None
        Component lifetimes and times between failures (the cluster's, the pods').
    pod : PodAnalysis or None
        Pod rates, availability, recovery paths, jobs.
    routing : RoutingTable or None
        Table 2 throughput ratios.
    fleets : FleetComparison or None
        r_f, components and largest-job MTTF beside published fleets.
    """

    cluster_split: SplitResult | None = None
    cluster_data: DataResult | None = None
    pod_data: DataResult | None = None
    attribution: AttributionResult | None = None
    mttf: MTTFResult | None = None
    rates: RateSeries | None = None
    workload: WorkloadResult | None = None
    node_health: NodeHealth | None = None
    ettr: RunETTR | None = None
    plan: CheckpointPlan | None = None
    signals: SignalCalibration | None = None
    lemon_quarantine: QuarantineStep | None = None
    lemon: LemonReport | None = None
    components: ComponentReliability | None = None
    pod: PodAnalysis | None = None
    pod_components: ComponentReliability | None = None
    routing: RoutingTable | None = None
    fleets: FleetComparison | None = None

    def __getitem__(self, name: str) -> Any:
        """Return the result of stage ``name`` (None when it did not run).

        Parameters
        ----------
        name : str
            A stage name.

        Returns
        -------
        object or None
            The stage's result.

        Raises
        ------
        KeyError
            If no stage has that name.
        """
        if name not in _FIELDS:
            raise KeyError(name)
        return getattr(self, name)

    @classmethod
    def of(cls, results: Mapping[str, Any]) -> RunResults:
        """Collect results by stage name.

        Parameters
        ----------
        results : mapping of str to object
            Stage name -> result; stages left out did not run.

        Returns
        -------
        RunResults
            The results, checked against each stage's result type.

        Raises
        ------
        KeyError
            For a name that is no stage.
        TypeError
            For a result that is not of its stage's result type.
        """
        unknown = sorted(set(results) - set(_FIELDS))
        if unknown:
            raise KeyError(f"no stage named {unknown[0]!r}")
        for name, got in results.items():
            if got is not None and not isinstance(got, _TYPES[name]):
                raise TypeError(
                    f"stage {name}: expected a {_TYPES[name].__name__}, got {type(got).__name__}"
                )
        return cls(**results)

    def ran(self) -> tuple[str, ...]:
        """Name the stages that ran (or were loaded from the cache), in the order they run.

        Returns
        -------
        tuple of str
            Stage names whose result is not None.
        """
        return tuple(n for n in _FIELDS if getattr(self, n) is not None)


def _result_types() -> dict[str, type]:
    """RunResults' attributes and their types, checked against the stages' result types."""
    hints = typing.get_type_hints(RunResults)
    types = {}
    for f in dataclasses.fields(RunResults):
        (t,) = (a for a in typing.get_args(hints[f.name]) if a is not type(None))
        types[f.name] = t
    made = {s.name: _hints(s.run, s.name)["return"] for s in STAGES}
    if types != made:
        raise StageDefinitionError(
            f"RunResults' attributes {types} differ from the stages' results {made}"
        )
    return types


_TYPES = _result_types()
_FIELDS = tuple(_TYPES)

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
_unknown = [n for n, _ in SECTIONS if n not in _FIELDS]
if _unknown:
    raise StageDefinitionError(f"SECTIONS names no stage {_unknown[0]!r}")
