"""A fleet's analysis and report from its attributed parts, for Datasets larger than memory.

``reliability fleet DATASET --out DIR`` or :func:`run_fleet`: the stages of a pipeline run
that scale to a fleet of clusters and years (Kokolis et al. HPCA'25 §III-VI), each on the
engine that keeps it within one machine's memory, and the same report sections:

- attribution one cluster per task, each task writing its part
  (:func:`reliability.analyses.write_attributed_by_cluster`);
- r_f, MTTF by size and the weekly rates read from the parts column by column
  (:func:`~reliability.models.failures.fit_mttf`,
  :func:`~reliability.models.failures.failure_rate_series`);
- run ETTR and the lemon features one cluster per task
  (:func:`reliability.analyses.ettr_by_cluster`,
  :func:`reliability.analyses.features_by_cluster`);
- node health on the streaming engine over the parts
  (:func:`~reliability.models.nodes.node_health`);
- a per-cluster table, then the MTTF, rates, ETTR and node-health sections of the pipeline's
  report (:mod:`reliability.pipeline.steps`), written as HTML and PDF.

The tasks run on a :class:`reliability.parallel.Executor`: in this process, on a Dask
``LocalCluster`` or on any scheduler address (the workers must see the Dataset's and the
output folder at the same paths). The analysis settings are a pipeline's ``[analysis]``
table (:class:`~reliability.pipeline.analysis.AnalysisConfig`); the report's notes name its
keys.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import polars as pl

from reliability._version import __version__
from reliability.analyses import (
    attributed_parts,
    ettr_by_cluster,
    features_by_cluster,
    gpus_per_node_of,
    write_attributed_by_cluster,
)
from reliability.analyses.distributed import attributed_scan, fingerprint, reuse_refusal
from reliability.errors import DatasetError, Hint, Hinted
from reliability.models.failures import (
    MTTFResult,
    RateSeries,
    failure_rate_series,
    fit_mttf,
)
from reliability.models.failures.counts import resolve_observation_end
from reliability.models.failures.mttf import HARDWARE
from reliability.models.nodes import NodeHealth, node_health
from reliability.models.nodes.lemon_features import ShortHistoryError
from reliability.models.recovery import RunETTR
from reliability.pipeline.analysis import AnalysisConfig
from reliability.pipeline.config import PipelineConfig
from reliability.pipeline.steps.cluster import ettr_section, mttf_section, rates_section
from reliability.pipeline.steps.common import Context, analysis_terms
from reliability.pipeline.steps.health import health_section
from reliability.reasons import ReasonRules
from reliability.report.actions import checkpoint_actions, headline_cards, node_actions
from reliability.report.model import Report, Section, Table, Text

if TYPE_CHECKING:
    from reliability.parallel import Executor
    from reliability.store import Dataset

__all__ = ["FleetRun", "run_fleet"]

#: the step between the lemon features' windows [days] (their length: ``[analysis]
#: lemon_window_days``, a multiple of it)
_STEP_DAYS = 7


@dataclass
class FleetRun:
    """A fleet's analyses from its attributed parts, and what :func:`write_report` needs.

    A run's record over parts on disk (as :class:`~reliability.pipeline.RunResult` is a
    pipeline run's), not a result saved with ``to_disk``: its runs and features are the parts.

    Attributes
    ----------
    config : PipelineConfig
        The title, formats and ``[analysis]`` settings (no inputs: the Dataset is given).
    dataset : Path
        The fleet's Dataset.
    clusters : list of str
        The clusters, sorted (the parts' order).
    mttf, rates, ettr, node_health
        The results, as a pipeline run's stages of those names.
    features : polars.LazyFrame or None
        The lemon features' parts (None, and a note, when the history is shorter than one
        window).
    by_cluster : polars.DataFrame
        Per cluster: attempts, hardware failures, runs, ETTR by run, nodes, availability,
        nodes out of service at the end.
    seconds : dict of str to float
        Wall time of each step [s].
    notes : list of str
        What was not computed and why.
    """

    config: PipelineConfig
    dataset: Path
    clusters: list[str]
    mttf: MTTFResult
    rates: RateSeries
    ettr: RunETTR
    node_health: NodeHealth
    features: pl.LazyFrame | None
    by_cluster: pl.DataFrame
    seconds: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    files: dict[str, Path] = field(default_factory=dict)
    pdf_pages: int | None = None

    def __str__(self) -> str:
        b = self.by_cluster
        lines = [
            f"Fleet {self.dataset.name}: {_n(len(self.clusters), 'cluster')}, "
            f"{int(b['attempts'].sum()):,} attempts, {int(b['nodes'].sum()):,} nodes",
            *self.mttf._lines()[:1],
            *self.ettr._lines()[:1],
            "took " + ", ".join(f"{k} {v:.0f} s" for k, v in self.seconds.items()),
            *(f"wrote {p}" for p in self.files.values()),
        ]
        notes = [*self.notes, *self.mttf.notes, *self.ettr.notes, *self.node_health.notes]
        notes = [analysis_terms(n) for n in notes]  # (in the [analysis] keys: --analysis FILE)
        return "\n".join(lines + (["Notes:", *(f"  - {n}" for n in notes)] if notes else []))

    def build_report(self) -> Report:
        """Build the fleet's :class:`~reliability.report.Report`.

        Returns
        -------
        Report
            Headline cards, actions, the per-cluster table and the MTTF, rates, ETTR and node
            health sections (as a pipeline run's).
        """
        results = SimpleNamespace(
            mttf=self.mttf,
            node_health=self.node_health,
            plan=None,
            lemon=None,
            attribution=None,
            pod=None,
        )
        ctx = Context(self.config, results)
        actions = [*node_actions(self.node_health, None), *checkpoint_actions(None, self.mttf)]
        for a in actions:
            a.text, a.evidence = analysis_terms(a.text), analysis_terms(a.evidence)
        cards = headline_cards(results)
        for c in cards:
            c.explanation = analysis_terms(c.explanation)
        sections = [self._fleet_section()]
        sections += mttf_section(self.mttf, ctx)
        sections += rates_section(self.rates, ctx)
        sections += ettr_section(self.ettr, ctx)
        sections += health_section(self.node_health, ctx)
        sections.append(self._features_section())
        subtitle = (
            f"Fleet {self.dataset.name}: {_n(len(self.clusters), 'cluster')} - generated "
            f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC by reliability {__version__}"
        )
        return Report(
            title=self.config.title,
            subtitle=subtitle,
            actions=actions,
            headline=cards,
            sections=sections,
        )

    def _fleet_section(self) -> Section:
        sec = Section("Clusters of the fleet")
        b = self.by_cluster
        sec.blocks.append(
            Text(
                f"{_n(len(self.clusters), 'cluster')}, {int(b['attempts'].sum()):,} attempts and "
                f"{int(b['nodes'].sum()):,} nodes, analysed from their attributed parts (one "
                "cluster per task for attribution, run ETTR and the lemon features; the rates and "
                "node health over the parts on polars' streaming engine). Took "
                + ", ".join(f"{k} {v:.0f} s" for k, v in self.seconds.items())
                + "."
            )
        )
        sec.blocks.append(
            Table(
                "fleet_by_cluster",
                b,
                "Per cluster: attempts, hardware-attributed failures, job runs and their mean ETTR, "
                "nodes, mean node availability over the window, nodes out of service at its end.",
                scales={"ettr_by_run": 1.0, "availability": 1.0},
            )
        )
        sec.blocks += [Text(analysis_terms(n), kind="note") for n in self.notes]
        return sec

    def _features_section(self) -> Section:
        sec = Section("Lemon-node features")
        if self.features is None:
            sec.blocks.append(Text("Not computed: see the notes of the fleet section.", "note"))
            return sec
        last = self.features.select(pl.col("window_end").max()).collect().item()
        top = (
            self.features.filter(pl.col("window_end") == last)
            .sort(
                ["hw_culprit", "failed", "cluster", "node"], descending=[True, True, False, False]
            )
            .head(25)
            .select("cluster", "node", "window_end", "attempts", "failed", "hw_culprit", "xid")
            .collect(engine="streaming")
        )
        rows = self.features.select(pl.len()).collect(engine="streaming").item()
        window = self.config.analysis.lemon_window_days
        sec.blocks.append(
            Text(
                f"{rows:,} rows of per-node features ({window}-day windows every {_STEP_DAYS} "
                "days, [analysis].lemon_window_days; Kokolis et al. HPCA'25 §VI), the input of a "
                "lemon detector (`reliability lemon score` on a cluster's Dataset); the nodes with "
                "the most hardware failures charged to them in the last window are below."
            )
        )
        sec.blocks.append(
            Table(
                "lemon_features_last_window",
                top,
                f"Last window (ending {last:%Y-%m-%d}): the nodes with the most hardware-attributed "
                "failures charged to them, then failed attempts.",
            )
        )
        return sec


def run_fleet(
    dataset: Dataset,
    out: str | Path,
    *,
    executor: Executor | None = None,
    analysis: AnalysisConfig | None = None,
    reasons: ReasonRules | None = None,
    title: str = "Fleet reliability",
    formats: tuple[str, ...] = ("html", "pdf"),
    report: bool = True,
    reuse_attribution: bool = False,
    progress: Callable[[str], None] | None = None,
) -> FleetRun:
    """Analyse a fleet part by part and write its report.

    Parameters
    ----------
    dataset : Dataset
        The fleet's Dataset (several clusters; any size).
    out : str or Path
        Output folder: the report, and the parts under ``out/parts`` (attributed attempts,
        runs, features; rewritten on every run).
    executor : Executor or None
        Where the per-cluster tasks run; None: in this process, one after the other.
    analysis : AnalysisConfig or None
        A pipeline's ``[analysis]`` settings (None: the defaults).
    reasons : ReasonRules or None
        The node-state reason rules attribution classifies with (None: the built-in ones).
    title : str
        The report's title.
    formats : tuple of str
        ``"html"`` and/or ``"pdf"``.
    report : bool
        Write the report; False: only the analyses.
    reuse_attribution : bool
        Keep the attributed parts of an earlier run into the same ``out`` when they stand for
        this Dataset as it is now, with the same attribution settings (``before_min``,
        ``after_min``, ``requeue_exit_codes``, ``reasons``), by this build of the package (its
        code and polars' version), untouched since
        (:func:`reliability.analyses.reusable_parts`); otherwise attribute again, which is the
        default.
    progress : callable or None
        Receives one line per step.

    Returns
    -------
    FleetRun
        The results, the per-cluster table and each step's time.

    Raises
    ------
    ValueError
        If the Dataset holds no job attempts.
    """
    from reliability.parallel import Executor
    from reliability.report import write_report

    a = analysis or AnalysisConfig()
    say = progress or (lambda line: None)
    folder = Path(out).resolve()
    parts = folder / "parts"
    clusters = dataset.clusters("jobs")
    if not clusters:
        raise ValueError(f"{dataset.path}: the Dataset holds no job attempts: nothing to analyse")
    cfg = PipelineConfig(
        path=folder / "fleet",
        name=f"fleet {dataset.path.name}",
        out=folder,
        inputs=(),
        analysis=a,
        title=title,
        formats=formats,
        raw={},
    )
    seconds: dict[str, float] = {}
    notes: list[str] = []
    own = executor is None
    ex = Executor("serial") if own else executor
    was = fingerprint(dataset)
    options: dict[str, Any] = {
        "before_min": a.before_min,
        "after_min": a.after_min,
        "requeue_exit_codes": a.requeue_exit_codes,
        "reasons": reasons or ReasonRules(),  # (None is the built-in rules: one key)
    }
    try:
        t = time.perf_counter()
        why = reuse_refusal(dataset, parts / "attributed", **options) if reuse_attribution else ""
        if why is None:  # (checked again as it is read: a part changed since is refused)
            scan = attributed_scan(dataset, parts / "attributed")
        else:
            scan = write_attributed_by_cluster(dataset, ex, parts / "attributed", **options)
        seconds["attribution"] = time.perf_counter() - t
        if why is None:
            say(
                f"attribution: the parts of the last run kept ({_n(len(clusters), 'cluster')}: "
                "the same Dataset, options and build of the package)"
            )
        else:
            if why:
                say(f"attribution: the last run's parts are not kept: {why}")
            say(f"attribution: {_n(len(clusters), 'cluster')} in {seconds['attribution']:.0f} s")
        end, note = resolve_observation_end(dataset, scan, None)
        notes += [note] if note else []
        gpn = a.gpus_per_node or gpus_per_node_of(scan)[0]
        t = time.perf_counter()
        mttf = fit_mttf(scan, min_gpus=a.min_gpus, gpus_per_node=gpn, observation_end=end)
        rates = failure_rate_series(scan, min_gpus=a.min_gpus, observation_end=end)
        seconds["rates"] = time.perf_counter() - t
        say(f"r_f, MTTF and rates in {seconds['rates']:.0f} s")
        t = time.perf_counter()
        ettr = ettr_by_cluster(
            dataset,
            ex,
            parts / "attributed",
            parts / "runs",
            a.ckpt_interval_h,
            a.restart_h,
            ckpt_min_gpus=a.ckpt_min_gpus,
            observation_end=end,
        )
        seconds["ETTR"] = time.perf_counter() - t
        say(f"run ETTR in {seconds['ETTR']:.0f} s")
        t = time.perf_counter()
        try:
            features = features_by_cluster(
                dataset,
                ex,
                parts / "attributed",
                parts / "features",
                a.lemon_window_days,
                _STEP_DAYS,
                observation_end=end,
            )
        except ShortHistoryError as e:
            features = None
            notes.append(
                Hinted(
                    f"lemon features not computed: {e}; ",
                    Hint("lemon_window_days", action=False),
                    " sets the window",
                )
            )
        seconds["lemon features"] = time.perf_counter() - t
        say(f"lemon features in {seconds['lemon features']:.0f} s")
    except ValueError:
        if fingerprint(dataset) != was:  # (the parts' check refused them: say why, here)
            raise DatasetError(
                f"{dataset.path}: the Dataset changed while the fleet ran (an input was added or "
                "removed): run it again"
            ) from None
        raise
    finally:
        if own:
            ex.close()
    # (the parts as they are: node health and the per-cluster counts do not depend on the
    # rows' order, and a single export's parts would otherwise be sorted back to its order)
    unsorted = pl.scan_parquet(attributed_parts(dataset, parts / "attributed")[1])
    t = time.perf_counter()
    health = node_health(dataset, attributed=unsorted, jobs=unsorted)
    seconds["node health"] = time.perf_counter() - t
    say(f"node health in {seconds['node health']:.0f} s")
    run = FleetRun(
        config=cfg,
        dataset=Path(dataset.path),
        clusters=clusters,
        mttf=mttf,
        rates=rates,
        ettr=ettr,
        node_health=health,
        features=features,
        by_cluster=_by_cluster(unsorted, ettr, health),
        seconds=seconds,
        notes=notes,
    )
    if report:
        t = time.perf_counter()
        run.files = write_report(run, folder)
        say(f"report in {time.perf_counter() - t:.0f} s")
    return run


def _by_cluster(scan: pl.LazyFrame, ettr: RunETTR, health: NodeHealth) -> pl.DataFrame:
    """One row per cluster: attempts, failures, runs, ETTR, nodes, availability, out now."""
    attempts = (
        scan.group_by("cluster")
        .agg(
            attempts=pl.len(),
            hardware_failures=pl.col("failure_domain").is_in(HARDWARE).sum(),
        )
        .collect(engine="streaming")
    )
    runs = (
        ettr.runs.lazy()
        .group_by("cluster")
        .agg(runs=pl.len(), ettr_by_run=pl.col("ettr").mean())
        .collect(engine="streaming")
    )
    nodes = health.by_node.group_by("cluster").agg(
        nodes=pl.len(),
        availability=pl.col("availability").mean(),
        out_now=pl.col("out_now").sum(),
    )
    key = pl.col("cluster").cast(pl.String)
    return (
        attempts.with_columns(key)
        .join(runs.with_columns(key), on="cluster", how="left")
        .join(nodes.with_columns(key), on="cluster", how="left")
        .with_columns(pl.col("runs", "nodes", "out_now").fill_null(0))
        .sort("cluster")
    )


def _n(k: int, what: str) -> str:
    """``1 cluster``, ``50 clusters``."""
    return f"{k:,} {what}{'' if k == 1 else 's'}"
