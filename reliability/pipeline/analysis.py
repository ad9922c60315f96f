"""The ``[analysis]`` table of a pipeline as a typed, validated dataclass.

Each field declares its default, what it means and how its value is checked; one loop
(:meth:`AnalysisConfig.from_table`) validates a pipeline's table against them, so an error
always names the pipeline key (``[analysis].min_gpus: expected an integer >= 0, got -1``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reliability.errors import PipelineError

__all__ = ["ANALYSIS_DEFAULTS", "AnalysisConfig", "parse_shape"]


def parse_shape(text: str) -> tuple[tuple[int, int, int], bool]:
    """Parse a TPU slice shape.

    Parameters
    ----------
    text : str
        ``AxBxC`` in chips, each a multiple of 4, with an optional ``t`` for a twisted torus,
        e.g. ``"4x4x8t"``.

    Returns
    -------
    ((int, int, int), bool)
        The shape and whether it is twisted, e.g. ``((4, 4, 8), True)``.

    Raises
    ------
    ValueError
        For any other text.
    """
    twisted = text.endswith("t")
    parts = text.rstrip("t").split("x")
    if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 and int(p) % 4 == 0 for p in parts):
        raise ValueError(
            f"slice shape {text!r}: expected AxBxC in chips, multiples of 4, optional 't' for twisted"
        )
    return (int(parts[0]), int(parts[1]), int(parts[2])), twisted


def _got(value: object) -> str:
    return repr(value) if isinstance(value, bool) else f"{type(value).__name__} {value!r}"


def _number(
    *,
    low: float | None = None,
    high: float | None = None,
    open_low: bool = False,
    open_high: bool = False,
) -> Callable[[Any, Path], float]:
    if low == 0 and high is None:
        what = "a positive number" if open_low else "a non-negative number"
    elif low is not None and high is not None:
        what = f"a number in {'(' if open_low else '['}{low:g}, {high:g}{')' if open_high else ']'}"
    else:
        what = "a number"

    def check(value: Any, base: Path) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"expected {what}, got {_got(value)}")
        v = float(value)
        bad = (
            not math.isfinite(v)
            or (low is not None and (v <= low if open_low else v < low))
            or (high is not None and (v >= high if open_high else v > high))
        )
        if bad:
            raise ValueError(f"expected {what}, got {value}")
        return v

    return check


def _integer(low: int = 0) -> Callable[[Any, Path], int]:
    def check(value: Any, base: Path) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected an integer >= {low}, got {_got(value)}")
        if value < low:
            raise ValueError(f"expected an integer >= {low}, got {value}")
        return value

    return check


def _integers(low: int, high: int | None = None) -> Callable[[Any, Path], tuple[int, ...]]:
    what = f"a list of integers >= {low}" + ("" if high is None else f" and <= {high}")

    def check(value: Any, base: Path) -> tuple[int, ...]:
        ok = isinstance(value, list) and all(
            isinstance(v, int)
            and not isinstance(v, bool)
            and v >= low
            and (high is None or v <= high)
            for v in value
        )
        if not ok:
            raise ValueError(f"expected {what}, got {value!r}")
        return tuple(value)

    return check


def _weeks_of_days(value: Any, base: Path) -> int:
    # the lemon features step by 7 days: their window is whole weeks
    if isinstance(value, bool) or not isinstance(value, int) or value < 7 or value % 7:
        raise ValueError(
            f"expected a whole number of weeks in days (7, 14, ..., 56), got {_got(value)}"
        )
    return value


def _host_availability(value: Any, base: Path) -> str | float:
    if value == "measured":
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise ValueError(f'expected "measured" or a number in (0, 1], got {value!r}')
    return float(value)


def _shapes(value: Any, base: Path) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise ValueError(f'expected a list like ["4x4x4", "4x4x8t"], got {value!r}')
    for s in value:
        parse_shape(s)
    return tuple(value)


def _detector(value: Any, base: Path) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a path to a saved detector (JSON), got {_got(value)}")
    if not value:
        return ""
    path = (base / value).resolve()
    if not path.is_file():
        raise ValueError(f"no such file {value!r} (relative to {base})")
    return str(path)


def _key(default: Any, check: Callable[[Any, Path], Any], doc: str) -> Any:
    kw: dict[str, Any] = {"metadata": {"check": check, "doc": doc}}
    if isinstance(default, list | tuple):
        kw["default_factory"] = lambda: tuple(default)
    else:
        kw["default"] = default
    return field(**kw)


@dataclass(frozen=True)
class AnalysisConfig:
    """What a pipeline's analyses assume; every key of ``[analysis]`` is optional.

    Attributes
    ----------
    before_min, after_min : float
        Attribution window around a job's end [min] (HPCA'25 §III: 10, 5).
    requeue_exit_codes : tuple of int
        The cluster's RequeueExit / RequeueExitHold codes (requeues the application asked for are
        the user's, not the machine's).
    min_gpus : int
        Jobs that enter r_f [GPUs] (paper: > 128).
    gpus_per_node : int or None
        GPUs per node (turns GPUs into nodes for MTTF = 1/(N r_f)); None: the most one node
        held in the data (:func:`reliability.analyses.gpus_per_node_of`).
    ckpt_interval_min : float
        Assumed checkpoint interval of ETTR from logs [min].
    restart_min : float
        Assumed restart overhead u0 [min].
    ckpt_min_gpus : int
        Runs below this size are assumed not to checkpoint [GPUs].
    target_ettr : float
        The planner's target ETTR, in (0, 1).
    plan_gpus : tuple of int
        Job sizes to plan checkpoint intervals for [GPUs] (empty: the cluster's own job sizes of at
        least one node, and its largest job).
    host_availability : str or float
        Pod analytic curves: ``"measured"`` or a host availability in (0, 1].
    routing_shapes : tuple of str
        TPU slices for the routing table (``"4x4x8t"``: twisted).
    lemon_window_days : int
        Rolling window of the lemon features [days].
    lemon_model : str
        A saved detector (``reliability lemon train``) that scores the nodes; "" = no detector:
        the statistical test (:func:`reliability.models.nodes.lemon_test`), which needs no
        training.
    """

    before_min: float = _key(10.0, _number(low=0), "attribution window before a job's end [min]")
    after_min: float = _key(5.0, _number(low=0), "attribution window after a job's end [min]")
    requeue_exit_codes: tuple[int, ...] = _key(
        (), _integers(0, 255), "RequeueExit / RequeueExitHold codes (scontrol show config)"
    )
    min_gpus: int = _key(129, _integer(0), "jobs that enter r_f [GPUs] (paper: > 128)")
    gpus_per_node: int | None = _key(
        None, _integer(1), "GPUs per node (default: the most one node held in the data)"
    )
    ckpt_interval_min: float = _key(
        60.0, _number(low=0, open_low=True), "assumed checkpoint interval [min]"
    )
    restart_min: float = _key(5.0, _number(low=0), "assumed restart overhead u0 [min]")
    ckpt_min_gpus: int = _key(0, _integer(0), "runs below this size do not checkpoint [GPUs]")
    target_ettr: float = _key(
        0.9, _number(low=0, high=1, open_low=True, open_high=True), "the planner's target ETTR"
    )
    plan_gpus: tuple[int, ...] = _key((), _integers(1), "job sizes to plan for [GPUs]")
    host_availability: str | float = _key("measured", _host_availability, "pod host availability")
    routing_shapes: tuple[str, ...] = _key(
        ("4x4x4", "4x4x8t", "4x8x8t"), _shapes, "TPU slices of the routing table"
    )
    lemon_window_days: int = _key(
        56, _weeks_of_days, "rolling window of the lemon features [days, a multiple of 7]"
    )
    lemon_model: str = _key(
        "", _detector, "a saved lemon detector (JSON); '' = the statistical test"
    )

    @classmethod
    def from_table(cls, table: object, where: str, base: Path) -> AnalysisConfig:
        """Validate a pipeline's ``[analysis]`` table.

        Parameters
        ----------
        table : object
            The parsed ``[analysis]`` TOML table.
        where : str
            The pipeline file's name, for errors.
        base : Path
            The folder relative paths start from (the pipeline file's).

        Returns
        -------
        AnalysisConfig
            The checked values, defaults for the keys not given.

        Raises
        ------
        PipelineError
            Naming the file and the key for an unknown key or an invalid value.
        """
        if not isinstance(table, dict):
            raise PipelineError(
                f"{where}: [analysis]: expected a table, got {type(table).__name__}"
            )
        fields = {f.name: f for f in dataclasses.fields(cls)}
        extra = sorted(set(table) - set(fields))
        if extra:
            import difflib

            near = difflib.get_close_matches(extra[0], list(fields), n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise PipelineError(
                f"{where}: [analysis].{extra[0]}: unknown key{hint}; known: {', '.join(sorted(fields))}"
            )
        values = {}
        for key, value in table.items():
            try:
                values[key] = fields[key].metadata["check"](value, base)
            except ValueError as exc:
                raise PipelineError(f"{where}: [analysis].{key}: {exc}") from None
        return cls(**values)

    def pick(self, *keys: str) -> dict[str, Any]:
        """Return some keys' values, JSON-ready (tuples as lists), e.g. for a stage's cache key.

        Parameters
        ----------
        *keys : str
            Field names.

        Returns
        -------
        dict of str to object
            Key -> value.
        """
        return {
            k: list(v) if isinstance(v, tuple) else v
            for k, v in ((k, getattr(self, k)) for k in keys)
        }

    def as_dict(self) -> dict[str, Any]:
        """Return every key and value, JSON-ready.

        Returns
        -------
        dict of str to object
            Field name -> value (tuples as lists).
        """
        return self.pick(*(f.name for f in dataclasses.fields(self)))

    @property
    def ckpt_interval_h(self) -> float:
        """The checkpoint interval ``ckpt_interval_min`` in hours [h]."""
        return self.ckpt_interval_min / 60.0

    @property
    def restart_h(self) -> float:
        """The restart overhead ``restart_min`` in hours [h]."""
        return self.restart_min / 60.0


#: every ``[analysis]`` key with its default
ANALYSIS_DEFAULTS: dict[str, Any] = AnalysisConfig().as_dict()
