"""A stage's cached result on disk: load, save, and run one stage into its folder.

Shared by the runner and the background stages' child processes (which import this module,
not the runner).

A stage's cache key covers the ``[analysis]`` keys it declares it reads (``Stage(reads=...)``,
put in the key by ``Stage.params``). A stage that reads a key it does not declare would be
served a stale result when that key changes, so every stage runs on a configuration that records
what it reads (:func:`run_checked`): reading an undeclared key is an error, not a stale cache.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from reliability._atomic import write_json_atomic
from reliability._result_io import count_rows, load_result, save_result
from reliability.pipeline.config import PipelineConfig
from reliability.pipeline.stages import STAGES, RunResults, Stage

__all__ = ["StaleKeyError", "load_stage", "run_checked", "run_stage", "save_stage"]


def load_stage(folder: Path) -> Any | None:
    """Load the result cached in ``folder``.

    None when there is none, or it cannot be read: a result written by another version of a
    class is recomputed, not trusted.

    Parameters
    ----------
    folder : pathlib.Path
        The stage's cache folder.

    Returns
    -------
    object or None
        The cached result.
    """
    if not (folder / "meta.json").is_file():
        return None
    try:
        return load_result(folder)
    except (OSError, ValueError, TypeError, KeyError):
        return None


def save_stage(folder: Path, result: Any, seconds: float) -> None:
    """Save a stage's result in ``folder`` with its ``meta.json`` (time taken [s], rows).

    Parameters
    ----------
    folder : pathlib.Path
        The stage's cache folder.
    result : object
        The stage's result.
    seconds : float
        How long the stage ran [s].
    """
    save_result(result, folder)
    write_json_atomic(
        {"result": type(result).__name__, "seconds": seconds, "rows": count_rows(result)},
        folder / "meta.json",
    )


def run_stage(cfg: PipelineConfig, name: str, deps: dict[str, str], work: str) -> None:
    """Run stage ``name`` into its cache folder ``work``, its inputs read from their folders.

    What a background stage's child process does (its time goes into ``meta.json``).

    Parameters
    ----------
    cfg : PipelineConfig
        The pipeline.
    name : str
        The stage.
    deps : dict of str to str
        The cache folder of each stage it needs, by stage name.
    work : str
        Its own cache folder.
    """
    stage = next(s for s in STAGES if s.name == name)
    outputs: dict[str, Any] = {}
    for need, folder in deps.items():
        got = load_stage(Path(folder))
        if got is None:
            raise RuntimeError(
                f"stage {name}: the result of stage {need} in {folder} cannot be read"
            )
        outputs[need] = got
    t0 = time.perf_counter()
    result = run_checked(stage, cfg, outputs, Path(work))
    save_stage(Path(work), result, time.perf_counter() - t0)


class StaleKeyError(RuntimeError):
    """A stage read configuration its cache key does not cover (a bug of the stage's declaration)."""


class _Reads:
    """A read-only view of a configuration object that records the attributes read through it.

    Properties are evaluated on the view, so what they read is recorded too (``restart_h``
    reads ``restart_min``).
    """

    def __init__(self, target: Any) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "names", set())

    def __getattr__(self, name: str) -> Any:
        attr = getattr(type(self._target), name, None)
        if isinstance(attr, property):
            return attr.fget(self)
        if not callable(getattr(self._target, name, None)):
            self.names.add(name)
        return getattr(self._target, name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"the configuration is read-only (setting {name})")


#: PipelineConfig attributes a stage may read only when its key covers them: name -> key
_KEYED_CONFIG = {"reasons_table": "reasons", "reasons": "reasons"}


def _recording(cfg: PipelineConfig) -> tuple[PipelineConfig, Callable[[], set[str]]]:
    """Copy ``cfg`` into a view that records what is read of it.

    Returns the view and a function giving the ``[analysis]`` keys and keyed settings read
    through it so far.
    """
    analysis = _Reads(cfg.analysis)
    reads: set[str] = set()
    fields = {f.name for f in dataclasses.fields(cfg.analysis)}

    class _Config(type(cfg)):  # type: ignore[misc]
        """The pipeline with what is read of it recorded."""

        def __getattribute__(self, name: str) -> Any:
            if name in _KEYED_CONFIG:
                reads.add(_KEYED_CONFIG[name])
            return object.__getattribute__(self, name)

    view = _Config(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)})
    object.__setattr__(view, "analysis", analysis)
    return view, lambda: reads | (analysis.names & fields)


def run_checked(
    stage: Stage, cfg: PipelineConfig, outputs: Mapping[str, Any] | RunResults, work: Path
) -> Any:
    """Run a stage and check that it read only the configuration its cache key covers.

    Parameters
    ----------
    stage : Stage
        The stage (:data:`~reliability.pipeline.stages.STAGES`).
    cfg : PipelineConfig
        The pipeline.
    outputs : RunResults or dict of str to object
        Upstream results by stage name (``outputs[name]``).
    work : pathlib.Path
        The stage's cache folder.

    Returns
    -------
    object
        The stage's result.

    Raises
    ------
    StaleKeyError
        If the stage read an ``[analysis]`` key (or the reason rules) that its ``reads`` do not
        declare and its ``key`` did not read to derive a value of it.
    """
    run_view, run_reads = _recording(cfg)
    result = stage(run_view, outputs, work)
    key_view, key_reads = _recording(cfg)
    declared = set(stage.params(key_view))
    declared |= key_reads()  # what the key holds, or derives its values from
    missing = sorted(run_reads() - declared)
    if missing:
        raise StaleKeyError(
            f"stage {stage.name} read {', '.join(missing)} but its cache key does not cover "
            f"{'it' if len(missing) == 1 else 'them'}: add {'it' if len(missing) == 1 else 'them'} "
            "to the stage's reads=(...) in reliability/pipeline/stages.py"
        )
    return result
