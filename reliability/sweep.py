"""Parameter sweeps: a model or simulator over a grid of parameters and many seeds, in parallel.

A sweep file (TOML):

```toml
[sweep]
name = "pod-availability"
model = "pod-availability"        # or "ettr-monte-carlo"
seeds = 200                        # seeds seed_start .. seed_start + seeds - 1
seed_start = 0
seeds_per_task = 10                # seeds batched into one task
out = "../reports/sweeps/pod"      # relative to this file
backend = "processes"              # serial, processes, dask
# scheduler = "tcp://host:8786"    # with backend = "dask"; default: a LocalCluster

[grid]                             # every combination is a cell
preset = ["tpuv4", "tpuv3-static"]
machine_repair_median_h = [48.0, 96.0, 192.0]

[fixed]                            # the same for every cell
days = 180
sizes = [1024, 3072, 3200]
```

Each task computes its cell's rows for its seeds and writes them to
``OUT/parts/<cell>-<first seed>.parquet`` (atomically); a rerun skips the parts already
there, so an interrupted sweep resumes. The results are one tidy table (a row per
parameters, seed and metric key) and aggregates per cell and key with a 95% t-interval.
Same seeds, same results, whatever the backend.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from scipy import stats

from reliability._atomic import write_json_atomic, write_parquet_atomic
from reliability._result import Result
from reliability.errors import Hint, Hinted, ReliabilityError
from reliability.parallel import BACKENDS, Executor, TaskFailure
from reliability.pipeline.config import read_toml

__all__ = [
    "MODELS",
    "MODEL_PARAMS",
    "SweepResult",
    "SweepSpec",
    "load_sweep",
    "register_model",
    "run_sweep",
]


class SweepError(ReliabilityError):
    """A sweep file is malformed, or tasks failed."""


# -- models: module-level so that worker processes can import them -----------------------
def _pod_availability(params: dict[str, Any], seed: int) -> list[dict[str, Any]]:
    """Run one simulated pod and measure its host and job availability.

    Per job size, the measured fraction of time it could be placed beside the analytic value at
    the measured host availability.
    """
    import tempfile
    from dataclasses import replace

    from reliability.models.pods.availability import job_availability
    from reliability.models.pods.measure import measured_job_availability
    from reliability.sim.pod import load_pod_preset, simulate_pod
    from reliability.store import Dataset

    cfg = load_pod_preset(params.get("preset", "tpuv4"))
    f = cfg.failures
    overrides = {
        k: params[k]
        for k in (
            "machine_rate_per_day",
            "machine_repair_median_h",
            "ocs_rate_per_day",
            "ici_rate_per_day",
            "weekly_amplitude",
        )
        if k in params
    }
    # the component side is all availability needs: no job stream
    cfg = replace(
        cfg, days=float(params.get("days", cfg.days)), failures=replace(f, **overrides), jobs=None
    )
    mode = cfg.mode
    pod = (
        "tpuv4" if mode == "reconfigurable" else ("tpuv3" if cfg.n_cubes == 16 else "tpuv4-static")
    )
    sizes = [int(s) for s in params.get("sizes", [1024, 3072, 3200])]
    with tempfile.TemporaryDirectory() as tmp:
        r = simulate_pod(cfg, seed=seed)
        r.write(Path(tmp) / "raw")
        ds = Dataset(Path(tmp) / "ds")
        ds.ingest("pod", [Path(tmp) / "raw" / "pod_events.jsonl"])
        m = measured_job_availability(ds, [s for s in sizes if s <= cfg.n_cubes * 64], mode=mode)
    rows = [{"key": "host_availability", "value": m.host_availability}]
    for row in m.curve.iter_rows(named=True):
        ft = "" if row["ft_routing"] is None else ("-ft" if row["ft_routing"] else "-noft")
        analytic = float(
            job_availability(
                row["n_chips"],
                m.host_availability,
                mode,
                ft_routing=row["ft_routing"] is not False,
                pod=pod,
                ocs_availability=m.ocs_availability,
                link_availability=m.link_availability,
            )
        )
        rows.append({"key": f"measured_{row['n_chips']}{ft}", "value": row["measured"]})
        rows.append({"key": f"analytic_{row['n_chips']}{ft}", "value": analytic})
    return rows


def _ettr_monte_carlo(params: dict[str, Any], seed: int) -> list[dict[str, Any]]:
    """Monte Carlo ETTR of one job configuration beside the exact renewal form."""
    from reliability.models.recovery.ettr import expected_ettr
    from reliability.models.recovery.ettr_mc import simulate_ettr

    p = {k: params[k] for k in ("n_gpus", "rate_per_node_day", "ckpt_interval_h", "restart_h")}
    job_h = float(params.get("job_h", 200.0))
    extra = {k: params[k] for k in ("queue_h", "ckpt_write_h") if k in params}
    mc = simulate_ettr(**p, job_h=job_h, n_runs=int(params.get("n_runs", 500)), seed=seed, **extra)
    exact = float(expected_ettr(**p, **extra, variant="renewal", job_h=job_h))
    return [{"key": "mc_mean_ettr", "value": mc.mean}, {"key": "renewal_ettr", "value": exact}]


MODELS: dict[str, Callable[[dict[str, Any], int], list[dict[str, Any]]]] = {
    "pod-availability": _pod_availability,
    "ettr-monte-carlo": _ettr_monte_carlo,
}
#: model -> (parameters it needs, parameters it also accepts); None: not declared (unchecked)
MODEL_PARAMS: dict[str, tuple[frozenset[str], frozenset[str]] | None] = {
    "pod-availability": (
        frozenset(),
        frozenset(
            {
                "preset",
                "days",
                "sizes",
                "machine_rate_per_day",
                "machine_repair_median_h",
                "ocs_rate_per_day",
                "ici_rate_per_day",
                "weekly_amplitude",
            }
        ),
    ),
    "ettr-monte-carlo": (
        frozenset({"n_gpus", "rate_per_node_day", "ckpt_interval_h", "restart_h"}),
        frozenset({"job_h", "n_runs", "queue_h", "ckpt_write_h"}),
    ),
}


def register_model(
    name: str,
    model: Callable[[dict[str, Any], int], list[dict[str, Any]]],
    *,
    required: set[str] | None = None,
    optional: set[str] | None = None,
    replace: bool = False,
) -> None:
    """Make ``model`` available to sweep files as ``[sweep].model = name``.

    Parameters
    ----------
    name : str
        The name sweep files use.
    model : callable
        ``model(params, seed) -> [{"key": str, "value": float}, ...]``: one cell's parameters
        (grid values and fixed values) and one seed. It must be a module-level function of an
        importable module: tasks carry it to worker processes by reference.
    required, optional : set of str or None
        The parameters the model needs and those it also accepts: a sweep file that lacks one
        or names another is refused when it is loaded. None (both): not checked.
    replace : bool
        Allow replacing a model already registered under ``name``.
    """
    if not callable(model):
        raise TypeError(f"model must be callable, got {model!r}")
    if name in MODELS and not replace and MODELS[name] is not model:
        raise ValueError(
            Hinted(
                f"a sweep model named {name!r} is already registered (",
                Hint("replace", True, action=False),
                " to replace it)",
            )
        )
    MODELS[name] = model
    if required is None and optional is None:
        MODEL_PARAMS[name] = None
    else:
        MODEL_PARAMS[name] = (frozenset(required or ()), frozenset(optional or ()))


def _cell_id(model: str, params: dict[str, Any]) -> str:
    """Stable id of a grid cell: its parts are named after it (so a rerun finds them)."""
    return hashlib.sha256(
        json.dumps([model, params], sort_keys=True, default=str).encode()
    ).hexdigest()[:12]


def _run_task(
    model: Callable[[dict[str, Any], int], list[dict[str, Any]]],
    cell: str,
    params: dict[str, Any],
    seeds: list[int],
    dest: str,
) -> int:
    """Worker: rows for ``seeds`` of one cell, written to ``dest``; returns the row count.

    ``model`` is the function itself (pickled by reference), so models registered with
    :func:`register_model` in the parent process run in workers too.
    """
    rows = []
    for seed in seeds:
        for r in model(params, seed):
            rows.append({"cell": cell, "seed": seed, **r})
    frame = pl.DataFrame(
        rows, schema={"cell": pl.String, "seed": pl.Int64, "key": pl.String, "value": pl.Float64}
    )
    write_parquet_atomic(frame, Path(dest))
    return frame.height


# -- spec -------------------------------------------------------------------------------
@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep file."""

    name: str
    model: str
    seeds: tuple[int, ...]
    seeds_per_task: int
    grid: dict[str, list[Any]]
    fixed: dict[str, Any]
    out: Path
    backend: str = "processes"
    scheduler: str | None = None
    workers: int | None = None

    def cells(self) -> list[tuple[str, dict[str, Any]]]:
        """List every grid combination of the sweep.

        Returns
        -------
        list of (str, dict of str to object)
            (cell label, parameters: the fixed ones and the combination), in a stable order.
        """
        keys = sorted(self.grid)
        out = []
        for combo in itertools.product(*(self.grid[k] for k in keys)):
            params = {**self.fixed, **dict(zip(keys, combo, strict=True))}
            label = ",".join(f"{k}={v}" for k, v in zip(keys, combo, strict=True)) or "all"
            out.append((label, params))
        return out


def load_sweep(path: str | Path) -> SweepSpec:
    """Read and validate a sweep file.

    Parameters
    ----------
    path : str or Path
        The sweep's TOML file.

    Returns
    -------
    SweepSpec
        The validated sweep.

    Raises
    ------
    SweepError
        Naming the file and the key for every invalid or missing value.
    """
    path = Path(path)
    where = str(path)
    raw = read_toml(path, SweepError, "sweep")
    head = raw.get("sweep")
    if not isinstance(head, dict):
        raise SweepError(f"{where}: [sweep]: expected a table")
    model = head.get("model")
    if model not in MODELS:
        raise SweepError(f"{where}: [sweep].model: expected one of {sorted(MODELS)}, got {model!r}")
    n = head.get("seeds", 10)
    start = head.get("seed_start", 0)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1 or not isinstance(start, int):
        raise SweepError(f"{where}: [sweep].seeds: expected a positive integer, got {n!r}")
    per = head.get("seeds_per_task", 10)
    if not isinstance(per, int) or per < 1:
        raise SweepError(
            f"{where}: [sweep].seeds_per_task: expected a positive integer, got {per!r}"
        )
    backend = head.get("backend", "processes")
    if backend not in BACKENDS:
        raise SweepError(f"{where}: [sweep].backend: expected one of {BACKENDS}, got {backend!r}")
    grid = raw.get("grid", {})
    if not isinstance(grid, dict) or not all(isinstance(v, list) and v for v in grid.values()):
        raise SweepError(
            f'{where}: [grid]: expected lists of values, e.g. mode = ["static", "reconfigurable"]'
        )
    fixed = raw.get("fixed", {})
    if not isinstance(fixed, dict):
        raise SweepError(f"{where}: [fixed]: expected a table")
    declared = MODEL_PARAMS.get(model)
    if declared is not None:
        required, optional = declared
        for table, keys in (("grid", grid), ("fixed", fixed)):
            for key in keys:
                if key not in required | optional:
                    raise SweepError(
                        f"{where}: [{table}].{key}: not a parameter of model {model!r}; "
                        f"known: {', '.join(sorted(required | optional))}"
                    )
        both = set(grid) & set(fixed)
        if both:
            raise SweepError(f"{where}: {sorted(both)[0]!r} is in both [grid] and [fixed]")
        missing = sorted(required - set(grid) - set(fixed))
        if missing:
            raise SweepError(
                f"{where}: model {model!r} needs {', '.join(missing)} in [grid] or [fixed]"
            )
    out = path.resolve().parent / head.get("out", f"sweeps/{head.get('name', path.stem)}")
    return SweepSpec(
        name=head.get("name", path.stem),
        model=model,
        seeds=tuple(range(start, start + n)),
        seeds_per_task=per,
        grid=grid,
        fixed=fixed,
        out=out,
        backend=backend,
        scheduler=head.get("scheduler"),
        workers=head.get("workers"),
    )


# -- running ----------------------------------------------------------------------------
@dataclass
class SweepResult(Result):
    """Tidy results (a row per cell, seed and key), aggregates per cell and key, failures.

    Attributes
    ----------
    results : polars.DataFrame
        ``cell, seed, key, value`` and the cell's parameters.
    aggregates : polars.DataFrame
        Per cell and key: ``n`` (seeds), ``mean``, ``sd``, ``ci_low``, ``ci_high`` (95% t-interval;
        null with one seed).
    failures : list of TaskFailure
        The tasks that raised.
    tasks_run, tasks_skipped : int
        Tasks run now, and resumed from disk.
    """

    title = "Sweep"
    results: pl.DataFrame
    aggregates: pl.DataFrame
    failures: list[TaskFailure] = field(default_factory=list)
    tasks_run: int = 0
    tasks_skipped: int = 0

    @property
    def summary(self) -> pl.DataFrame:
        """The aggregates (see the class doc)."""
        return self.aggregates

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the result: result rows, tasks run, resumed and failed."""
        return {
            "result rows": self.results.height,
            "tasks run": self.tasks_run,
            "tasks resumed": self.tasks_skipped,
            "failed tasks": len(self.failures),
        }

    def _lines(self) -> list[str]:
        lines = [
            f"{self.results.height:,} result rows ({self.tasks_run} tasks run, {self.tasks_skipped} resumed from disk)"
        ]
        for r in self.aggregates.iter_rows(named=True):
            if r["mean"] is None or not math.isfinite(r["mean"]):
                value = "not computed (a task returned a non-finite value)"
            elif r["ci_low"] is None:
                value = f"{r['mean']:.5f}  (one seed: no interval)"
            else:
                value = f"{r['mean']:.5f}  [{r['ci_low']:.5f}, {r['ci_high']:.5f}]"
            lines.append(f"  {r['cell']:<48} {r['key']:<28} {value}  n={r['n']}")
        lines += [f"FAILED {f}" for f in self.failures]
        return lines

    @classmethod
    def _example(cls) -> SweepResult:
        """Build a tiny instance: two cells, three seeds, one key (for contract tests)."""
        results = pl.DataFrame(
            {
                "cell": ["a"] * 3 + ["b"] * 3,
                "seed": [0, 1, 2] * 2,
                "key": ["ettr"] * 6,
                "value": [0.91, 0.93, 0.92, 0.85, 0.88, 0.86],
            }
        )
        return cls(results=results, aggregates=_aggregate(results), tasks_run=6)


def _aggregate(results: pl.DataFrame) -> pl.DataFrame:
    agg = (
        results.group_by("cell", "key")
        .agg(n=pl.len(), mean=pl.col("value").mean(), sd=pl.col("value").std())
        .sort("cell", "key")
    )
    n = agg["n"].to_numpy()
    tq = stats.t.ppf(0.975, np.maximum(n - 1, 1))
    half = pl.Series(tq * agg["sd"].fill_null(0.0).to_numpy() / np.sqrt(n))
    # one seed has no interval: null, not NaN
    return agg.with_columns(
        ci_low=pl.when(pl.col("n") > 1).then(pl.col("mean") - half),
        ci_high=pl.when(pl.col("n") > 1).then(pl.col("mean") + half),
    )


def run_sweep(
    spec: SweepSpec | str | Path,
    *,
    backend: str | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    out: str | Path | None = None,
    retries: int = 2,
    progress: Callable[[str], None] | None = None,
) -> SweepResult:
    """Run (or resume) a sweep; parts already written are not run again.

    Parameters
    ----------
    spec : SweepSpec or str or Path
        The sweep, or its TOML file.
    backend : str or None
        Executor backend (``serial``, ``processes``, ``dask``); None: the file's.
    workers : int or None
        Number of workers; None: the file's.
    scheduler : str or None
        dask scheduler address; None: the file's.
    out : str or Path or None
        Output folder; None: the file's ``out``.
    retries : int
        Extra attempts per task before it is reported as failed.
    progress : callable or None
        Called with each task's name as it finishes.

    Returns
    -------
    SweepResult
        Per-seed results, per-cell aggregates, and the failed tasks.
    """
    spec = spec if isinstance(spec, SweepSpec) else load_sweep(spec)
    folder = Path(out) if out is not None else spec.out
    parts = folder / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    tasks, names, skipped = [], [], 0
    cells = spec.cells()
    cell_ids = [_cell_id(spec.model, params) for _, params in cells]
    for (label, params), cell_id in zip(cells, cell_ids, strict=True):
        for i in range(0, len(spec.seeds), spec.seeds_per_task):
            seeds = list(spec.seeds[i : i + spec.seeds_per_task])
            dest = parts / f"{cell_id}-{seeds[0]:06d}-{len(seeds)}.parquet"
            if dest.is_file():
                skipped += 1
                continue
            tasks.append((MODELS[spec.model], label, params, seeds, str(dest)))
            names.append(f"{label}|seeds {seeds[0]}-{seeds[-1]}")
    be = backend or spec.backend
    with Executor(
        be, workers=workers or spec.workers, scheduler=scheduler or spec.scheduler, retries=retries
    ) as ex:
        _, failures = ex.map(_run_task, tasks, names, progress=progress)
    files = sorted(parts.glob("*.parquet"))
    wanted = set(cell_ids)
    frames = [pl.read_parquet(f) for f in files if f.name.split("-")[0] in wanted]
    results = (
        pl.concat(frames)
        if frames
        else pl.DataFrame(
            schema={"cell": pl.String, "seed": pl.Int64, "key": pl.String, "value": pl.Float64}
        )
    )
    results = results.sort("cell", "seed", "key")
    aggregates = _aggregate(results) if results.height else pl.DataFrame()
    write_parquet_atomic(results, folder / "results.parquet")
    if aggregates.height:
        write_parquet_atomic(aggregates, folder / "aggregates.parquet")
    write_json_atomic(
        {
            "name": spec.name,
            "model": spec.model,
            "seeds": len(spec.seeds),
            "cells": len(cells),
            "backend": be,
            "tasks_run": len(tasks),
            "tasks_resumed": skipped,
            "failures": [str(f) for f in failures],
        },
        folder / "sweep_manifest.json",
    )
    return SweepResult(
        results=results,
        aggregates=aggregates,
        failures=failures,
        tasks_run=len(tasks),
        tasks_skipped=skipped,
    )
