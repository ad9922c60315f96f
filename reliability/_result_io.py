"""Results to disk and back, without pickle.

Every polars frame of a result becomes a parquet file, everything else one JSON document that
names the result's classes.

The JSON form of a value:

- ``None``, booleans, integers, strings: themselves; finite floats too; nan and ±inf as
  ``{"__float__": "nan"}`` (JSON has no such numbers);
- a UTC datetime ``{"__datetime__": ISO 8601}``; a path ``{"__path__": ..., "relative": b}``
  (relative to the result's folder when it lies inside it, so a moved report folder still
  finds its Dataset);
- tuples ``{"__tuple__": [...]}``, lists as lists, dicts with string keys
  ``{"__map__": {...}}``, other dicts ``{"__items__": [[key, value], ...]}`` (keys encoded as
  values: an integer, a tuple); numpy arrays ``{"__array__": [...], "dtype": ...}``;
- a polars frame ``{"__frame__": "<name>"}`` beside ``<name>.parquet``;
- a dataclass ``{"__dataclass__": "module:Class", "fields": {...}}``: only dataclasses defined
  in this package are rebuilt (a result file can name no other code to run).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from reliability._atomic import write_json_atomic, write_parquet_atomic
from reliability.errors import Hint, Hinted

__all__ = ["RESULT_FILE", "count_rows", "load_result", "save_result"]

#: the JSON document of a saved result (written last: the commit point of the folder)
RESULT_FILE = "result.json"
_PACKAGE = "reliability."


class _Writer:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.frames: dict[str, pl.DataFrame] = {}

    def frame(self, frame: pl.DataFrame, where: str) -> dict[str, str]:
        name = f"f{len(self.frames):03d}"
        self.frames[name] = frame
        return {"__frame__": name, "where": where}

    def encode(self, value: Any, where: str) -> Any:
        if isinstance(value, Hinted):  # a message with its hints kept apart
            return {
                "__hinted__": [
                    p
                    if isinstance(p, str)
                    else [p.option, self.encode(p.value, f"{where} hint"), p.action]
                    for p in value.parts
                ]
            }
        if value is None or isinstance(value, bool | str):
            return value
        if isinstance(value, int | np.integer):
            return int(value)
        if isinstance(value, float | np.floating):
            x = float(value)
            return x if math.isfinite(x) else {"__float__": repr(x)}
        if isinstance(value, datetime):
            return {"__datetime__": value.isoformat()}
        if isinstance(value, Path):
            try:
                return {
                    "__path__": str(value.resolve().relative_to(self.folder.resolve())),
                    "relative": True,
                }
            except ValueError:
                return {"__path__": str(value), "relative": False}
        if isinstance(value, pl.DataFrame):
            return self.frame(value, where)
        if isinstance(value, np.ndarray):
            return {"__array__": value.tolist(), "dtype": str(value.dtype)}
        if isinstance(value, tuple):
            return {"__tuple__": [self.encode(v, f"{where}[{i}]") for i, v in enumerate(value)]}
        if isinstance(value, list):
            return [self.encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, dict):
            if all(isinstance(k, str) for k in value):
                return {"__map__": {k: self.encode(v, f"{where}.{k}") for k, v in value.items()}}
            # other keys (a size mix keyed by GPU count): key-value pairs, the keys encoded too
            return {
                "__items__": [
                    [self.encode(k, f"{where} key"), self.encode(v, f"{where}[{k!r}]")]
                    for k, v in value.items()
                ]
            }
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            cls = type(value)
            if not cls.__module__.startswith(_PACKAGE):
                raise TypeError(f"{where}: {cls.__name__} is not a result of this package")
            fields = {
                f.name: self.encode(getattr(value, f.name), f"{where}.{f.name}")
                for f in dataclasses.fields(value)
                if f.init
            }
            return {"__dataclass__": f"{cls.__module__}:{cls.__qualname__}", "fields": fields}
        raise TypeError(f"{where}: cannot save a {type(value).__name__}")


def save_result(result: Any, folder: str | Path) -> None:
    """Write a result into a folder: its frames as parquet, then :data:`RESULT_FILE`.

    The JSON document is written atomically and last, so a folder with it is complete.

    Parameters
    ----------
    result : dataclass
        A result dataclass of this package.
    folder : str or Path
        Destination folder; created if missing.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    w = _Writer(folder)
    doc = w.encode(result, type(result).__name__)
    for name, frame in w.frames.items():
        write_parquet_atomic(frame, folder / f"{name}.parquet")
    write_json_atomic({"format": 1, "result": doc}, folder / RESULT_FILE)


#: modules a result file written by an earlier release may name -> where the class lives now
#: (``reliability.models`` was grouped into subpackages)
MOVED_MODULES: dict[str, str] = {
    "reliability.models.counts": "reliability.models.failures.counts",
    "reliability.models.mttf": "reliability.models.failures.mttf",
    "reliability.models.rates": "reliability.models.failures.rates",
    "reliability.models.scaling": "reliability.models.failures.scaling",
    "reliability.models.jobs": "reliability.models.failures.jobs",
    "reliability.models.workload": "reliability.models.failures.workload",
    "reliability.models.incidents": "reliability.models.failures.incidents",
    "reliability.models.checkpoint": "reliability.models.recovery.checkpoint",
    "reliability.models.ettr": "reliability.models.recovery.ettr",
    "reliability.models.ettr_logs": "reliability.models.recovery.ettr_logs",
    "reliability.models.ettr_mc": "reliability.models.recovery.ettr_mc",
    "reliability.models.planner": "reliability.models.recovery.planner",
    "reliability.models.recovery_cost": "reliability.models.recovery.cost",
    "reliability.models.strategies": "reliability.models.recovery.strategies",
    "reliability.models.strategies_mc": "reliability.models.recovery.strategies_mc",
    "reliability.models.node_health": "reliability.models.nodes.health",
    "reliability.models.lemon": "reliability.models.nodes.lemon",
    "reliability.models.lemon_features": "reliability.models.nodes.lemon_features",
    "reliability.models.lemon_test": "reliability.models.nodes.lemon_testing",
    "reliability.models.signals": "reliability.models.nodes.signals",
    "reliability.models.availability": "reliability.models.pods.availability",
    "reliability.models.pod_measure": "reliability.models.pods.measure",
    "reliability.models.pod_recovery": "reliability.models.pods.recovery",
    "reliability.models.pods": "reliability.models.pods.identify",
    "reliability.models.routing": "reliability.models.pods.routing",
    "reliability.models.lifetimes": "reliability.models.lifetimes.weibull",
    "reliability.models.repairable": "reliability.models.lifetimes.repairable",
    "reliability.models.components": "reliability.models.lifetimes.components",
    "reliability.models.fleets": "reliability.models.fleets.published",
    "reliability.models.fleet_compare": "reliability.models.fleets.compare",
}


def _class(spec: str) -> type:
    module, _, name = spec.partition(":")
    if not module.startswith(_PACKAGE):
        raise ValueError(f"a result file names {spec!r}, which is not a class of this package")
    obj: Any = importlib.import_module(MOVED_MODULES.get(module, module))
    for part in name.split("."):
        obj = getattr(obj, part)
    if not (isinstance(obj, type) and dataclasses.is_dataclass(obj)):
        raise ValueError(f"a result file names {spec!r}, which is not a result class")
    return obj


def _decode(value: Any, folder: Path) -> Any:
    if isinstance(value, list):
        return [_decode(v, folder) for v in value]
    if not isinstance(value, dict):
        return value
    if "__hinted__" in value:
        return Hinted(
            *(
                p if isinstance(p, str) else Hint(p[0], _decode(p[1], folder), p[2])
                for p in value["__hinted__"]
            )
        )
    if "__float__" in value:
        return float(value["__float__"])
    if "__datetime__" in value:
        t = datetime.fromisoformat(value["__datetime__"])
        return t if t.tzinfo is not None else t.replace(tzinfo=UTC)
    if "__path__" in value:
        p = Path(value["__path__"])
        return folder / p if value["relative"] else p
    if "__frame__" in value:
        return pl.read_parquet(folder / f"{value['__frame__']}.parquet")
    if "__array__" in value:
        return np.asarray(value["__array__"], dtype=value["dtype"])
    if "__tuple__" in value:
        return tuple(_decode(v, folder) for v in value["__tuple__"])
    if "__map__" in value:
        return {k: _decode(v, folder) for k, v in value["__map__"].items()}
    if "__items__" in value:
        return {_decode(k, folder): _decode(v, folder) for k, v in value["__items__"]}
    if "__dataclass__" in value:
        cls = _class(value["__dataclass__"])
        return cls(**{k: _decode(v, folder) for k, v in value["fields"].items()})
    raise ValueError(f"unknown value in a result file: {sorted(value)}")


def load_result(folder: str | Path) -> Any:
    """Load the result saved in a folder by :func:`save_result`.

    Parameters
    ----------
    folder : str or Path
        The folder holding :data:`RESULT_FILE` and the frames' parquet files.

    Returns
    -------
    object
        The rebuilt result dataclass.

    Raises
    ------
    ValueError
        If the file has an unknown format version.
    """
    folder = Path(folder)
    doc = json.loads((folder / RESULT_FILE).read_text(encoding="utf-8"))
    if doc.get("format") != 1:
        raise ValueError(f"{folder / RESULT_FILE}: unknown result format {doc.get('format')!r}")
    return _decode(doc["result"], folder)


def count_rows(value: Any) -> int:
    """Count the rows of every polars frame inside a result, for progress lines.

    Parameters
    ----------
    value : object
        A result (dataclass), frame, or list/tuple/dict of them.

    Returns
    -------
    int
        Total rows of the frames found (0 when there are none).
    """
    if isinstance(value, pl.DataFrame):
        return value.height
    if isinstance(value, list | tuple):
        return sum(count_rows(v) for v in value)
    if isinstance(value, dict):
        return sum(count_rows(v) for v in value.values())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(count_rows(getattr(value, f.name)) for f in dataclasses.fields(value))
    return 0
