r"""Pipeline files: TOML that says what to read or simulate, what to analyse, and what to write.

```toml
[pipeline]
name = "demo"
out = "../reports/demo"            # relative to this file; `reliability run --out` overrides

[[inputs]]                         # a bundled simulator run ...
kind = "simulate-cluster"          # or "simulate-pod"
preset = "small"                   # small, rsc1, rsc2 / tpuv4, tpuv3-static, or a TOML path
seed = 0
days = 30                          # optional: override the preset

[[inputs]]                         # ... or files to ingest
kind = "files"
reader = "slurm"                   # a kind of reliability.ingest.READERS (`reliability ingest -h`)
paths = ["exports/sacct-*.psv"]    # globs, relative to this file (also exports/*/sacct.psv, **)
cluster = "rsc"
tz = "America/Los_Angeles"
observed_at = 2025-12-01T08:00:00Z # when the export was taken: what was open then is open "now"
                                   # (default: the latest time in each file, said in the report)
options = { }                      # other reader options (fields, node, year, ...)

[attribution.reasons]              # optional: your site's drain/down reason wording (see
administrative = ["^quiesce"]      # reliability.reasons): patterns of administrators' drains,
fault = ["^HC:"]                   # of node faults, and components named in reasons
components = { psu = ["\\bPDU\\b"] }

[analysis]                         # every key optional; defaults below
before_min = 10.0                  # attribution window before a job's end
after_min = 5.0                    # ... and after
requeue_exit_codes = []            # RequeueExit / RequeueExitHold (scontrol show config)
min_gpus = 129                     # jobs that enter r_f (paper: > 128 GPUs)
gpus_per_node = 8                  # default: the most one node held in the data
ckpt_interval_min = 60.0           # assumed checkpoint interval for ETTR from logs
restart_min = 5.0                  # assumed restart overhead u0
ckpt_min_gpus = 0                  # runs below this size are assumed not to checkpoint
target_ettr = 0.9                  # the planner's target
plan_gpus = []                     # job sizes to plan for; [] = the cluster's own sizes
host_availability = "measured"     # pod analytic curves: "measured" or a number
routing_shapes = ["4x4x4", "4x4x8t", "4x8x8t"]   # Table 2 slices ("t" = twisted)
lemon_window_days = 56              # rolling window of the lemon features
lemon_model = ""                    # a saved detector (reliability lemon train); "" = no
                                    # detector: the statistical test (lemon_test)

[report]
title = "Cluster reliability report"
formats = ["html", "pdf"]
sweeps = ["sweep-checkpoint.toml"]  # include these sweeps' figures (run them with `reliability sweep`)
```

:func:`load_pipeline` validates every key and raises :class:`PipelineError` naming the file,
the key and what was expected; ``[analysis]`` becomes an
:class:`~reliability.pipeline.analysis.AnalysisConfig`.
"""

from __future__ import annotations

import glob
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reliability.errors import (
    Hint,
    PipelineError,
    ReliabilityError,
    message_of,
    render_message,
    value_text,
)
from reliability.ingest import READERS
from reliability.pipeline.analysis import ANALYSIS_DEFAULTS, AnalysisConfig, parse_shape
from reliability.reasons import ReasonRules
from reliability.store.inputs import INGEST_OPTIONS, reader_options
from reliability.store.observation import check_observed_at

__all__ = [
    "ANALYSIS_DEFAULTS",
    "AnalysisConfig",
    "InputSpec",
    "PipelineConfig",
    "PipelineError",
    "load_pipeline",
    "parse_shape",
]


_INPUT_KINDS = ("simulate-cluster", "simulate-pod", "files")


@dataclass(frozen=True)
class InputSpec:
    """One input: a simulator run or files for one reader."""

    kind: str
    preset: str | None = None
    seed: int = 0
    days: float | None = None
    reader: str | None = None
    paths: tuple[Path, ...] = ()
    cluster: str | None = None
    tz: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    #: position in the file's [[inputs]] (0-based) and the pipeline file, for messages
    index: int = 0
    where: str = ""

    @property
    def is_pod(self) -> bool:
        """True for a pod input (a simulated pod or a pod event log)."""
        return self.kind == "simulate-pod" or self.reader == "pod"

    def describe(self) -> str:
        """Describe the input in a few words for progress lines.

        Returns
        -------
        str
            E.g. ``slurm: 3 file(s)`` or ``simulate small seed 0, 30 days``.
        """
        if self.kind == "files":
            return f"{self.reader}: {len(self.paths)} file(s)"
        return f"{self.kind} {self.preset} seed {self.seed}" + (
            f", {self.days:g} days" if self.days else ""
        )

    def error(self, exc: Exception) -> PipelineError:
        """Restate an error raised while reading this input in the pipeline's terms.

        Parameters
        ----------
        exc : Exception
            The error.

        Returns
        -------
        PipelineError
            Naming the pipeline file, this input and its keys (``pass tz=`` -> ``set
            inputs[0].tz``).
        """
        return PipelineError(
            f"{self.where}: inputs[{self.index}] ({self.reader} files): "
            + pipeline_terms(message_of(exc), self.index)
        )


#: the keys of an ``[[inputs]]`` entry that are options (others go in its ``options`` table)
_INPUT_KEYS = ("tz", "cluster", *INGEST_OPTIONS)
#: the library's ingest switches a pipeline has no key for: said in the library's spelling
_NO_INPUT_KEY = ("replace", "strict", "wait_s")


def pipeline_terms(message: str, index: int, keys: Mapping[str, str] | None = None) -> str:
    """Translate a library message into a pipeline's terms.

    The message's hints (:class:`~reliability.errors.Hinted`) are spelled as the keys of input
    ``index``: option ``tz=`` becomes ``inputs[index].tz``, a reader option ``year=`` (or one
    no reader knows, a misspelling) ``inputs[index].options.year``, and ``pass`` becomes
    ``set``. The store's switches (``replace=``...) have no key and keep the library's words.

    Parameters
    ----------
    message : str
        The library's message (an exception's: :func:`~reliability.errors.message_of`).
    index : int
        Position of the input in the pipeline's ``[[inputs]]``.
    keys : mapping of str to str, optional
        Option -> its key, for options spelled otherwise (default: the rule above).

    Returns
    -------
    str
        The message with the options respelled.
    """

    def spell(hint: Hint) -> str:
        if keys is not None and hint.option in keys:
            key = keys[hint.option]
        elif hint.option in _NO_INPUT_KEY:
            return hint.library()
        elif hint.option in _INPUT_KEYS:
            key = f"inputs[{index}].{hint.option}"
        else:
            key = f"inputs[{index}].options.{hint.option}"
        if hint.value is not None:
            key += f" = {value_text(hint.value, 'toml')}"
        return f"set {key}" if hint.action else key

    return render_message(message_of(message), spell)


def _glob(pattern: str, base: Path) -> list[Path]:
    """List the files matching ``pattern`` (relative to ``base`` unless absolute).

    Wildcards work in every path component, ``**`` matches any depth.
    """
    if not any(c in pattern for c in "*?["):
        p = Path(pattern)
        return [p if p.is_absolute() else Path(os.path.normpath(base / p))]
    if Path(pattern).is_absolute():
        hits = glob.glob(pattern, recursive=True)
    else:
        hits = [str(base / h) for h in glob.glob(pattern, root_dir=base, recursive=True)]
    return sorted(Path(os.path.normpath(h)) for h in hits)


def _reasons_table(where: str, section: object) -> dict[str, Any]:
    """Validate ``[attribution.reasons]`` (see :mod:`reliability.reasons`); return the table."""
    if not isinstance(section, dict):
        raise PipelineError(f"{where}: [attribution]: expected a table")
    extra = sorted(set(section) - {"reasons"})
    if extra:
        raise PipelineError(f"{where}: [attribution].{extra[0]}: unknown key; allowed: reasons")
    table = section.get("reasons", {})
    if not isinstance(table, dict):
        raise PipelineError(f"{where}: [attribution.reasons]: expected a table")
    try:
        ReasonRules.from_mapping(table, f"{where}: [attribution.reasons]")
    except ReliabilityError as exc:
        raise PipelineError(str(exc)) from None
    return table


@dataclass(frozen=True)
class PipelineConfig:
    """A validated pipeline file.

    ``reasons_table`` is ``[attribution.reasons]`` as written (operators' reason patterns, see
    :mod:`reliability.reasons`); :attr:`reasons` builds the rules from it.
    """

    path: Path
    name: str
    out: Path
    inputs: tuple[InputSpec, ...]
    analysis: AnalysisConfig
    title: str
    formats: tuple[str, ...]
    raw: dict[str, Any]
    sweeps: tuple[Path, ...] = ()
    reasons_table: dict[str, Any] = field(default_factory=dict)
    #: ``[pipeline].scheduler``: a Dask scheduler address the per-cluster work goes to
    #: (``"local"``: a LocalCluster on this machine); None: in this process
    scheduler: str | None = None

    @property
    def reasons(self) -> ReasonRules:
        """The reason rules: the built-in ones extended with ``[attribution.reasons]``."""
        return ReasonRules.from_mapping(self.reasons_table, f"{self.path}: [attribution.reasons]")


def _type_name(value: object) -> str:
    return type(value).__name__


def _expect(where: str, key: str, value: object, kind: type | tuple[type, ...], what: str) -> None:
    # an input's key as the pipeline spells it (inputs[0].tz); a section's as given
    at = f"{where}: {key}" if key.startswith("[") else f"{where}.{key}"
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise PipelineError(f"{at}: expected {what}, got {value!r}")
    if not isinstance(value, kind):
        raise PipelineError(f"{at}: expected {what}, got {_type_name(value)} {value!r}")


def _input(where: str, i: int, item: object, base: Path) -> InputSpec:
    loc = f"{where}: inputs[{i}]"
    if not isinstance(item, dict):
        raise PipelineError(f"{loc}: expected a table ([[inputs]]), got {_type_name(item)}")
    kind = item.get("kind")
    if kind not in _INPUT_KINDS:
        raise PipelineError(f"{loc}.kind: expected one of {', '.join(_INPUT_KINDS)}, got {kind!r}")
    allowed = (
        {"kind", "preset", "seed", "days"}
        if kind != "files"
        else {"kind", "reader", "paths", "cluster", "tz", "observed_at", "options"}
    )
    extra = sorted(set(item) - allowed)
    if extra:
        import difflib

        near = difflib.get_close_matches(extra[0], sorted(allowed), n=1)
        hint = f" (did you mean {near[0]}?)" if near else ""
        if kind == "files" and any(s.option(extra[0]) for s in READERS.values()):
            # a reader option written beside the input's own keys
            hint = f" (a reader option: set it in the input's options table, inputs[{i}].options.{extra[0]})"
        raise PipelineError(
            f"{loc}.{extra[0]}: unknown key for kind {kind!r}{hint}; allowed: "
            f"{', '.join(sorted(allowed))}"
        )
    if kind != "files":
        preset = item.get("preset", "small" if kind == "simulate-cluster" else "tpuv4")
        _expect(loc, "preset", preset, str, "a preset name or a TOML path")
        seed = item.get("seed", 0)
        _expect(loc, "seed", seed, int, "an integer")
        if seed < 0:
            raise PipelineError(f"{loc}.seed: expected an integer >= 0, got {seed}")
        days = item.get("days")
        if days is not None:
            _expect(loc, "days", days, (int, float), "a number of days")
            if not 0 < days < float("inf"):
                raise PipelineError(f"{loc}.days: expected a positive number of days, got {days}")
        if preset.endswith(".toml"):
            preset = str((base / preset).resolve())
        # the preset is read now, so that a misspelled name or a bad value is refused before
        # anything runs, naming the key
        from reliability.sim.config import load_preset
        from reliability.sim.pod import load_pod_preset

        try:
            (load_preset if kind == "simulate-cluster" else load_pod_preset)(preset)
        except (ValueError, OSError) as exc:
            raise PipelineError(f"{loc}.preset: {exc}") from None
        return InputSpec(
            kind=kind, preset=preset, seed=seed, days=None if days is None else float(days)
        )
    reader = item.get("reader")
    if reader not in READERS:  # the one registry of readers
        raise PipelineError(f"{loc}.reader: expected one of {', '.join(READERS)}, got {reader!r}")
    paths = item.get("paths")
    if isinstance(paths, str):
        paths = [paths]
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
        raise PipelineError(f"{loc}.paths: expected a list of file paths or globs, got {paths!r}")
    found: list[Path] = []
    for pattern in paths:
        hits = [h for h in _glob(pattern, base) if h.is_file()]
        if not hits:
            raise PipelineError(f"{loc}.paths: no file matches {pattern!r} (relative to {base})")
        found += [h for h in hits if h not in found]
    for key in ("cluster", "tz"):
        if key in item:
            _expect(loc, key, item[key], str, "a string")
    options = item.get("options", {})
    _expect(loc, "options", options, dict, "a table of reader options")
    for key in ("observed_at", "tz", "cluster"):  # (keys of the input itself)
        if key in options:
            raise PipelineError(f"{loc}.options.{key}: set it as inputs[{i}].{key}")
    for key in _NO_INPUT_KEY:
        if key in options:
            raise PipelineError(
                f"{loc}.options.{key}: not an option of a pipeline input (it is a switch of "
                "Dataset.ingest and of `reliability ingest`; a pipeline ingests its inputs into its "
                "own Dataset)"
            )
    if "observed_at" in item:
        # when the export was taken (a TOML time with an offset, or ISO 8601 text)
        try:
            options = {**options, "observed_at": check_observed_at(item["observed_at"])}
        except ReliabilityError as exc:
            raise PipelineError(
                f"{loc} ({reader} files): {pipeline_terms(message_of(exc), i)}"
            ) from None
    spec = InputSpec(
        kind="files",
        reader=reader,
        paths=tuple(found),
        cluster=item.get("cluster"),
        tz=item.get("tz"),
        options=dict(options),
        index=i,
        where=where,
    )
    try:
        reader_options(reader, spec.cluster, spec.tz, spec.options)
    except ReliabilityError as exc:
        raise spec.error(exc) from None
    return spec


def read_toml(path: Path, error: type[ReliabilityError], what: str) -> dict[str, Any]:
    """Read the TOML table of a file.

    Parameters
    ----------
    path : Path
        The file.
    error : type of ReliabilityError
        The error class raised (e.g. :class:`PipelineError`).
    what : str
        What the file is, for the message (``"pipeline"``, ``"sweep"``).

    Returns
    -------
    dict of str to object
        The parsed table.

    Raises
    ------
    ReliabilityError
        ``error``, naming the file, if it is missing or not valid TOML.
    """
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{path}: no such {what} file") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML: {exc}") from None


def load_pipeline(path: str | Path) -> PipelineConfig:
    """Read and validate a pipeline file (see the module doc for the keys).

    Parameters
    ----------
    path : str or Path
        The pipeline's TOML file; relative paths in it start from its folder.

    Returns
    -------
    PipelineConfig
        The validated configuration.

    Raises
    ------
    PipelineError
        Naming the file and the key for every unknown section or key and every invalid value.
    """
    path = Path(path)
    where = str(path)
    raw = read_toml(path, PipelineError, "pipeline")
    extra = sorted(set(raw) - {"pipeline", "inputs", "analysis", "attribution", "report"})
    if extra:
        raise PipelineError(
            f"{where}: unknown section(s) {extra}; expected [pipeline], [[inputs]], [analysis], "
            "[attribution], [report]"
        )
    base = path.resolve().parent
    head = raw.get("pipeline", {})
    if not isinstance(head, dict):
        raise PipelineError(f"{where}: [pipeline]: expected a table")
    name = head.get("name", path.stem)
    _expect(where, "[pipeline].name", name, str, "a string")
    out = head.get("out", f"reports/{name}")
    _expect(where, "[pipeline].out", out, str, "a folder path")
    scheduler = head.get("scheduler")
    if scheduler is not None and (not isinstance(scheduler, str) or not scheduler.strip()):
        raise PipelineError(
            f'{where}: [pipeline].scheduler: expected a Dask scheduler address ("tcp://host:8786") '
            f'or "local", got {scheduler!r}'
        )
    inputs = raw.get("inputs")
    if not isinstance(inputs, list) or not inputs:
        raise PipelineError(f"{where}: [[inputs]]: expected at least one input table")
    specs = tuple(_input(where, i, item, base) for i, item in enumerate(inputs))
    first: dict[Path, InputSpec] = {}
    for spec in specs:  # (a file is one input: the Dataset keeps one reading of it)
        for file in spec.paths or ():
            seen = first.setdefault(file.resolve(), spec)
            if seen is not spec:
                raise PipelineError(
                    f"{where}: inputs[{spec.index}].paths: {file} is also a file of "
                    f"inputs[{seen.index}] ({seen.reader} files); give each file to one input"
                )
    analysis = AnalysisConfig.from_table(raw.get("analysis", {}), where, base)
    reasons_table = _reasons_table(where, raw.get("attribution", {}))
    rep = raw.get("report", {})
    if not isinstance(rep, dict):
        raise PipelineError(f"{where}: [report]: expected a table")
    title = rep.get("title", "Cluster reliability report")
    _expect(where, "[report].title", title, str, "a string")
    sweeps = rep.get("sweeps", [])
    if not isinstance(sweeps, list) or not all(isinstance(x, str) for x in sweeps):
        raise PipelineError(
            f"{where}: [report].sweeps: expected a list of sweep files, got {sweeps!r}"
        )
    sweep_paths = []
    for x in sweeps:
        sp = (base / x).resolve()
        if not sp.is_file():
            raise PipelineError(f"{where}: [report].sweeps: no such sweep file {x!r}")
        sweep_paths.append(sp)
    formats = rep.get("formats", ["html", "pdf"])
    if not isinstance(formats, list) or not formats or not set(formats) <= {"html", "pdf"}:
        raise PipelineError(
            f'{where}: [report].formats: expected a list drawn from ["html", "pdf"], got {formats!r}'
        )
    return PipelineConfig(
        path=path,
        name=name,
        out=(base / out).resolve(),
        inputs=specs,
        analysis=analysis,
        title=title,
        formats=tuple(formats),
        raw=raw,
        sweeps=tuple(sweep_paths),
        reasons_table=reasons_table,
        scheduler=scheduler,
    )
