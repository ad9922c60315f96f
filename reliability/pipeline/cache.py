"""A stage's cached result on disk: load, save, and run one stage into its folder.

Shared by the runner and the background stages' child processes (which import this module,
not the runner).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from reliability._atomic import write_json_atomic
from reliability._result_io import count_rows, load_result, save_result
from reliability.pipeline.config import PipelineConfig
from reliability.pipeline.stages import STAGES

__all__ = ["load_stage", "run_stage", "save_stage"]


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
    result = stage.run(cfg, outputs, Path(work))
    save_stage(Path(work), result, time.perf_counter() - t0)
