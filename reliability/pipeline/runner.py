"""Run a pipeline: stages in order, each cached by a hash of its parameters and its inputs.

A stage's cache key is the SHA-256 of its name, its parameters (JSON), its upstream stages'
keys, the package version and a hash of the package's code; its typed result lives in
``OUT/.cache/<stage>-<key16>/`` (its frames as parquet and ``result.json``, no pickle:
:mod:`reliability._result_io`), with ``meta.json`` (timing and row counts) written last as the
commit point.
A rerun with nothing changed loads every stage from the cache; changing one parameter reruns
only the stages whose key it enters. The report is written atomically beside a run manifest
(``run_manifest.json``: config, package and dependency versions, per-stage timings and rows).

A stage marked ``background`` (slow work on one core: the lemon stage's backtest, the pod's
simulated data, the routing table's solves) runs on a child process
(:mod:`~reliability.pipeline.background`) as soon as the stages it needs are done, while the
stages after them run here; its result reaches this process through its cache folder, exactly
as a cached result does, so the run's results do not depend on it, and its error is raised
here as it would have been.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any

import polars as pl

from reliability._atomic import write_json_atomic
from reliability._result import Result
from reliability._result_io import count_rows
from reliability._version import __version__
from reliability.pipeline.background import BackgroundStage
from reliability.pipeline.cache import load_stage, run_checked, save_stage
from reliability.pipeline.config import PipelineConfig, load_pipeline
from reliability.pipeline.stages import STAGES, RunResults

__all__ = ["RunResult", "RunResults", "run_pipeline"]

_DEPENDENCIES = (
    "polars",
    "numpy",
    "scipy",
    "statsmodels",
    "scikit-learn",
    "matplotlib",
    "lifelines",
)


@dataclass
class RunResult(Result):
    """The result of a pipeline run.

    The typed result of every stage that ran (``outputs``: :class:`RunResults`, one attribute
    per stage), per-stage records, and the files written. A result like the stages': its
    ``summary`` is the table of stages (``stage, key, cached, seconds, rows``), its text form
    says what ran and what was written.
    """

    title = "Pipeline run"

    config: PipelineConfig
    outputs: RunResults
    stages: list[dict[str, Any]]
    files: dict[str, Path] = field(default_factory=dict)
    pdf_pages: int | None = None

    @property
    def summary(self) -> pl.DataFrame:
        """One row per stage: ``stage, key, cached, seconds, rows``."""
        return pl.DataFrame(
            self.stages,
            schema={
                "stage": pl.String,
                "key": pl.String,
                "cached": pl.Boolean,
                "seconds": pl.Float64,
                "rows": pl.Int64,
            },
        )

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Stages run (or taken from the cache) and files written."""
        return {
            "stages": len(self.stages),
            "from the cache": sum(bool(s["cached"]) for s in self.stages),
            "files": len(self.files),
        }

    def _lines(self) -> list[str]:
        lines = [f"Pipeline {self.config.name}: {len(self.stages)} stage(s)"]
        lines += [
            f"  {s['stage']:<13} {'cached' if s['cached'] else 'ran'} in {s['seconds']:.2f} s, {s['rows']:,} rows"
            for s in self.stages
        ]
        lines += [f"wrote {path}" for path in self.files.values()]
        return lines

    @classmethod
    def _example(cls) -> RunResult:
        """Build a tiny instance: two analysis stages of a pipeline and its report (for contract tests)."""
        from reliability.models.failures import MTTFResult, RateSeries
        from reliability.pipeline.analysis import AnalysisConfig

        cfg = PipelineConfig(
            path=Path("pipelines/tiny.toml"),
            name="tiny",
            out=Path("reports/tiny"),
            inputs=(),
            analysis=AnalysisConfig(),
            title="Tiny cluster",
            formats=("html",),
            raw={},
        )
        stages = [
            {
                "stage": "mttf",
                "key": "0123456789abcdef",
                "cached": False,
                "seconds": 0.41,
                "rows": 3,
            },
            {
                "stage": "rates",
                "key": "fedcba9876543210",
                "cached": True,
                "seconds": 0.02,
                "rows": 2,
            },
            {
                "stage": "report",
                "key": "00ff00ff00ff00ff",
                "cached": False,
                "seconds": 1.3,
                "rows": 0,
            },
        ]
        outputs = RunResults(mttf=MTTFResult._example(), rates=RateSeries._example())
        return cls(
            config=cfg,
            outputs=outputs,
            stages=stages,
            files={"html": Path("reports/tiny/report.html")},
        )

    def cached(self, name: str) -> bool:
        """Tell whether a stage's result came from the cache.

        Parameters
        ----------
        name : str
            The stage name.

        Returns
        -------
        bool
            True if the stage was not recomputed.
        """
        return next(s["cached"] for s in self.stages if s["stage"] == name)

    def build_report(self) -> Any:
        """Build the run's :class:`~reliability.report.Report`.

        See :func:`reliability.pipeline.report.build_report`.

        Returns
        -------
        Report
            Action list, headline numbers, one section per analysis.
        """
        from reliability.pipeline.report import build_report

        return build_report(self)


_CODE: str | None = None


def _code_hash() -> str:
    """Hash the package's own files.

    A code change invalidates every cached stage, even without a version bump (a stale result
    would be worse than a rerun).
    """
    global _CODE
    if _CODE is None:
        root = Path(__file__).resolve().parents[1]
        h = hashlib.sha256()
        for f in sorted(root.rglob("*")):
            if (
                f.is_file()
                and f.suffix in (".py", ".json", ".toml")
                and "__pycache__" not in f.parts
            ):
                h.update(f.relative_to(root).as_posix().encode())
                h.update(f.read_bytes())
        _CODE = h.hexdigest()
    return _CODE


def _key(name: str, params: dict[str, Any], upstream: list[str]) -> str:
    blob = json.dumps(
        {
            "stage": name,
            "params": params,
            "upstream": upstream,
            "version": __version__,
            "code": _code_hash(),
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def _fresh(work: Path) -> None:
    """Make ``work`` an empty folder (a crashed earlier attempt leaves files behind)."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)


def _versions() -> dict[str, str]:
    out = {"reliability": __version__, "python": sys.version.split()[0]}
    for dist in _DEPENDENCIES:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:  # pragma: no cover
            out[dist] = "not installed"
    return out


def run_pipeline(
    pipeline: str | Path | PipelineConfig,
    *,
    out: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    report: bool = True,
    background: bool | None = None,
    scheduler: str | None = None,
) -> RunResult:
    """Run a pipeline and write its report.

    Each stage is recomputed only when its parameters, its upstream stages or the package's code
    changed; otherwise its cached result is reused.

    Parameters
    ----------
    pipeline : str or Path or PipelineConfig
        The pipeline file, or a loaded configuration.
    out : str or Path or None
        Output folder; None: the pipeline's ``[pipeline].out``.
    progress : callable or None
        Receives one line per stage.
    report : bool
        Write the report (HTML/PDF and data files); False: only run the stages.
    background : bool or None
        Run the ``background`` stages on a second process (None: when this process may use
        two CPUs or more). The results are the same either way.
    scheduler : str or None
        A Dask scheduler address (``tcp://host:8786``, or ``"local"`` for a LocalCluster) the
        per-cluster attribution goes to; None: the pipeline's ``[pipeline].scheduler``. The
        results are the same either way.

    Returns
    -------
    RunResult
        Every stage's result (``outputs``: :class:`RunResults`), the per-stage records and the
        files written.
    """
    cfg = pipeline if isinstance(pipeline, PipelineConfig) else load_pipeline(pipeline)
    if scheduler is not None:
        cfg = replace(cfg, scheduler=scheduler)
    folder = Path(out).resolve() if out is not None else cfg.out
    cache = folder / ".cache"
    cache.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda line: None)
    keys: dict[str, str] = {}
    outputs: dict[str, Any] = {}
    records: list[dict[str, Any]] = []
    active = [s for s in STAGES if s.optional(cfg)]
    live: set[str] = set()
    if background is None:
        background = (
            len(os.sched_getaffinity(0)) >= 2 if hasattr(os, "sched_getaffinity") else False
        )
    running: dict[str, BackgroundStage] = {}
    folders: dict[str, Path] = {}

    def stage_key(stage: Any) -> str:
        return _key(stage.name, stage.params(cfg), [keys[n] for n in stage.needs])

    def launch_ready() -> None:
        for stage in active:
            if not (stage.background and background) or stage.name in running:
                continue
            if stage.name in keys or not all(n in outputs for n in stage.needs):
                continue
            work = cache / f"{stage.name}-{stage_key(stage)[:16]}"
            if (work / "meta.json").is_file():
                continue  # cached: loaded in its turn (or rerun there if it cannot be read)
            _fresh(work)
            deps = {n: folders[n] for n in stage.needs}
            running[stage.name] = BackgroundStage(cfg, stage.name, deps, work)

    try:
        launch_ready()  # the background stages that need no other stage
        for i, stage in enumerate(active, 1):
            key = stage_key(stage)
            keys[stage.name] = key
            work = cache / f"{stage.name}-{key[:16]}"
            folders[stage.name] = work
            live.add(work.name)
            t0 = time.perf_counter()
            where = ""
            if stage.name in running:
                # waited on before it leaves ``running``: interrupted here, it is still killed
                secs = running[stage.name].result()  # its error, if it failed
                del running[stage.name]
                got = load_stage(work)
                if got is None:  # pragma: no cover - the worker saved it
                    raise RuntimeError(f"stage {stage.name}: its result in {work} cannot be read")
                cached, where = (
                    False,
                    f" (on a second process; waited {time.perf_counter() - t0:.2f} s)",
                )
            else:
                got = load_stage(work)
                cached = got is not None
                if got is None:
                    _fresh(work)
                    got = run_checked(stage, cfg, outputs, work)
                    save_stage(work, got, time.perf_counter() - t0)
                secs = time.perf_counter() - t0
            outputs[stage.name] = got
            launch_ready()
            rows = count_rows(got)
            records.append(
                {
                    "stage": stage.name,
                    "key": key[:16],
                    "cached": cached,
                    "seconds": round(secs, 3),
                    "rows": rows,
                }
            )
            say(
                f"[{i}/{len(active) + int(report)}] {stage.name:<13} {'cached' if cached else 'ran'} in {secs:6.2f} s, {rows:,} rows{where}"
            )
    finally:
        for job in running.values():  # this run failed first: do not wait for them
            job.kill()
    # stale cache entries of this output folder (older parameters) are removed
    for old in cache.iterdir():
        if old.is_dir() and old.name not in live:
            shutil.rmtree(old, ignore_errors=True)
    result = RunResult(config=cfg, outputs=RunResults.of(outputs), stages=records)
    report_key = None
    if report:
        from reliability.report import write_report

        t0 = time.perf_counter()
        sweeps = []
        for sf in cfg.sweeps:  # a sweep's figure changes when its results do
            from reliability.sweep import load_sweep

            agg = load_sweep(sf).out / "aggregates.parquet"
            sweeps.append(
                hashlib.sha256(agg.read_bytes()).hexdigest() if agg.is_file() else "missing"
            )
        report_key = _key(
            "report",
            {"title": cfg.title, "formats": list(cfg.formats), "sweeps": sweeps},
            list(keys.values()),
        )
        files = {f: folder / f"report.{f}" for f in cfg.formats}
        previous = _previous(folder)
        cached = previous.get("report_key") == report_key and all(
            p.is_file() for p in files.values()
        )
        if cached:
            result.files = files
            result.pdf_pages = previous.get("pdf_pages")
        else:
            result.files = write_report(result, folder)
        secs = time.perf_counter() - t0
        records.append(
            {
                "stage": "report",
                "key": report_key[:16],
                "cached": cached,
                "seconds": round(secs, 3),
                "rows": 0,
            }
        )
        verb = "unchanged" if cached else "wrote"
        say(
            f"[{len(active) + 1}/{len(active) + 1}] {'report':<13} {verb} {', '.join(p.name for p in result.files.values())} in {secs:.2f} s"
        )
    write_json_atomic(
        {
            "pipeline": str(cfg.path),
            "name": cfg.name,
            "config": cfg.raw,
            "analysis": cfg.analysis.as_dict(),
            "versions": _versions(),
            "stages": records,
            "report_key": report_key,
            "pdf_pages": result.pdf_pages,
            "files": {k: str(v) for k, v in result.files.items()},
        },
        folder / "run_manifest.json",
    )
    return result


def _previous(folder: Path) -> dict[str, Any]:
    """Read the folder's previous run manifest ({} if there is none)."""
    try:
        return json.loads((folder / "run_manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
