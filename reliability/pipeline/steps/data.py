"""Stages ``cluster_data`` and ``pod_data`` and the report's "Data and quarantine" section.

The stages read or simulate the inputs into a Dataset.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import polars as pl

from reliability._result import Result, fmt_num
from reliability.errors import ReliabilityError
from reliability.pipeline.config import InputSpec, PipelineConfig, pipeline_terms
from reliability.pipeline.steps.common import Context, sim_cluster_config
from reliability.report.model import Section, Table, Text
from reliability.store import Dataset, DatasetSummary
from reliability.store.parts import notes_of
from reliability.store.summary import display_path

__all__ = [
    "DataResult",
    "SplitResult",
    "backtest_input",
    "cluster_data",
    "cluster_split",
    "data_section",
    "pod_data",
    "split_day",
]

#: a reader note that says an export lacks attempts (``sacct`` without ``--duplicates``)
MISSING_DUPLICATES = "without --duplicates"


@dataclass
class DataResult(Result):
    """A Dataset the pipeline read or simulated, with what each input gave.

    Attributes
    ----------
    kind : str
        ``"cluster"`` or ``"pod"``.
    dataset : DatasetSummary
        The Dataset's summary (rows per table, inputs, quarantine).
    path : Path
        The Dataset folder.
    raw : list of Path or None
        Per input, the folder a simulator wrote its raw logs to (None for files).
    inputs : polars.DataFrame
        Per input: ``input`` (as the pipeline describes it), ``path`` (full path), ``reader``,
        ``rows_read``, ``rows_kept``, ``rows_quarantined``.
    reader_notes : polars.DataFrame
        ``path``, ``note``: what the readers decided that a user should know.
    observation_start, observation_end : datetime or None
        The Dataset's observation window [UTC].
    observation_basis : str
        How the end is known (``sacct --endtime``, or the latest timestamp).
    """

    title = "Data and quarantine"
    kind: str
    dataset: DatasetSummary
    path: Path
    raw: list[Path | None]
    inputs: pl.DataFrame
    reader_notes: pl.DataFrame
    observation_start: datetime | None
    observation_end: datetime | None
    observation_basis: str
    notes: list[str] = field(default_factory=list)

    def open(self) -> Dataset:
        """Open the stage's Dataset.

        Returns
        -------
        Dataset
            The Dataset at ``path``.
        """
        return Dataset(self.path)

    @property
    def quarantined(self) -> int:
        """Rows quarantined over all inputs."""
        return int(self.inputs.get_column("rows_quarantined").sum()) if self.inputs.height else 0

    @property
    def rows_read(self) -> int:
        """Rows read over all inputs."""
        return int(self.inputs.get_column("rows_read").sum()) if self.inputs.height else 0

    @property
    def missing_duplicates(self) -> pl.DataFrame:
        """The reader notes that say an export was made without ``--duplicates``."""
        return self.reader_notes.filter(
            pl.col("note").str.contains(MISSING_DUPLICATES, literal=True)
        )

    @property
    def summary(self) -> pl.DataFrame:
        """The per-input table (rows read, kept and quarantined)."""
        return self.inputs

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the result: inputs, rows read, rows quarantined."""
        return {
            "inputs": self.inputs.height,
            "rows read": self.rows_read,
            "quarantined": self.quarantined,
        }

    def tables(self) -> dict[str, pl.DataFrame]:
        """Return the result's tables by name.

        Returns
        -------
        dict of str to polars.DataFrame
            ``"inputs"``, ``"rows per table"`` and ``"reader notes"``.
        """
        return {
            "inputs": self.inputs,
            "rows per table": self.dataset.summary,
            "reader notes": self.reader_notes,
        }

    def _lines(self) -> list[str]:
        d = self.dataset
        if d.first is None:
            return [f"{self.inputs.height} input(s), no timestamped records"]
        span = f"{d.first:%Y-%m-%d %H:%M} to {d.last:%Y-%m-%d %H:%M} UTC"
        what = "GPU-hours" if self.kind == "cluster" else "accelerator-hours"
        return [
            f"{', '.join(d.clusters) or 'no cluster'}: {d.n_nodes:,} nodes, {span}, {fmt_num(d.accelerator_hours)} {what}",
            f"{self.rows_read:,} rows read from {self.inputs.height} input(s); {self.quarantined:,} quarantined "
            "(rows read = kept + quarantined for every input)",
            f"observation ends {self.observation_end:%Y-%m-%d %H:%M:%S} UTC ({self.observation_basis})"
            if self.observation_end
            else "observation end unknown",
        ]

    @classmethod
    def _example(cls) -> DataResult:
        """Build a tiny instance: one sacct export read into a Dataset (for contract tests)."""
        d = DatasetSummary._example()
        inputs = pl.DataFrame(
            {
                "input": ["slurm: tiny/sacct.psv"],
                "path": ["/data/tiny/sacct.psv"],
                "reader": ["slurm"],
                "rows_read": [119],
                "rows_kept": [118],
                "rows_quarantined": [1],
            }
        )
        notes = pl.DataFrame(
            {
                "path": ["/data/tiny/sacct.psv"],
                "note": ["1 row with an unparseable <Start> time quarantined"],
            }
        )
        return cls(
            kind="cluster",
            dataset=d,
            path=Path("data/tiny"),
            raw=[None],
            inputs=inputs,
            reader_notes=notes,
            observation_start=d.first,
            observation_end=d.observation_end,
            observation_basis=d.observation_end_basis,
        )


@dataclass
class SplitResult(Result):
    """The simulated cluster's state at the lemon backtest's split (stage ``cluster_split``).

    Attributes
    ----------
    checkpoint : Path or None
        The saved state (``simulate_cluster(checkpoint=...)``); None when no backtest runs.
    split_day : float or None
        Where the run was stopped [days since the start].
    seed : int or None
        The run's seed.
    note : str
        Why there is no checkpoint, when there is none.
    """

    title = "Simulated cluster at the backtest's split"
    checkpoint: Path | None = None
    split_day: float | None = None
    seed: int | None = None
    note: str = ""

    @property
    def summary(self) -> pl.DataFrame:
        """One row: the split day and the seed (null without a checkpoint)."""
        return pl.DataFrame(
            {"split_day": [self.split_day], "seed": [self.seed]},
            schema={"split_day": pl.Float64, "seed": pl.Int64},
        )

    def _lines(self) -> list[str]:
        if self.checkpoint is None:
            return [f"No checkpoint: {self.note}"]
        return [f"Run stopped at day {self.split_day:g} (seed {self.seed}) and saved"]

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """What the checkpoint holds: the days simulated before the split (empty without one)."""
        return {} if self.split_day is None else {"days simulated": self.split_day}

    @classmethod
    def _example(cls) -> SplitResult:
        """Build a tiny instance: a run stopped at day 10 (for contract tests)."""
        return cls(checkpoint=Path("work/cluster_split/state.pkl"), split_day=10.0, seed=1)


def backtest_input(cfg: PipelineConfig) -> tuple[InputSpec | None, str]:
    """Give the simulated cluster input the lemon backtest splits, or why there is none.

    The backtest reuses the pipeline's own simulation as its baseline when that is the only
    cluster input and it holds two feature windows (``[analysis].lemon_window_days``).

    Parameters
    ----------
    cfg : PipelineConfig
        The pipeline configuration.

    Returns
    -------
    tuple of (InputSpec or None, str)
        The input, or None and the reason.
    """
    from reliability.experiments.backtests import backtest_split_day

    specs = [s for s in cfg.inputs if not s.is_pod]
    if [s.kind for s in specs] != ["simulate-cluster"]:
        return (
            None,
            "the backtest reuses a simulated cluster only when it is the only cluster input",
        )
    window = cfg.analysis.lemon_window_days
    if backtest_split_day(sim_cluster_config(specs[0]).days) < window:
        return None, f"the simulated run is shorter than two {window}-day windows"
    return specs[0], ""


def split_day(cfg: PipelineConfig) -> float | None:
    """Give the day the lemon backtest splits the pipeline's simulated run (None: no backtest).

    Parameters
    ----------
    cfg : PipelineConfig
        The pipeline configuration.

    Returns
    -------
    float or None
        The split [days since the start], or None when :func:`backtest_input` gives no input.
    """
    from reliability.experiments.backtests import backtest_split_day

    spec, _ = backtest_input(cfg)
    return None if spec is None else backtest_split_day(sim_cluster_config(spec).days)


def cluster_split(cfg: PipelineConfig, work: Path) -> SplitResult:
    """Run stage ``cluster_split``: simulate the only cluster input to the backtest's split.

    ``cluster_data`` continues the run from the saved state to its end (the same run as one
    simulated in one go) while the lemon stage's quarantined run starts from the same state
    on a second process.

    Parameters
    ----------
    cfg : PipelineConfig
        The pipeline configuration.
    work : Path
        The stage's work folder: the checkpoint is written there.

    Returns
    -------
    SplitResult
        The checkpoint, or why none was made (then ``cluster_data`` simulates the whole run).
    """
    from reliability.experiments.backtests import backtest_split_day
    from reliability.sim.run import save_checkpoint

    spec, note = backtest_input(cfg)
    if spec is None:
        return SplitResult(note=note)
    sim_cfg = sim_cluster_config(spec)
    split = backtest_split_day(sim_cfg.days)
    path = save_checkpoint(sim_cfg, seed=spec.seed, day=split, path=work / "checkpoint.pkl")
    return SplitResult(checkpoint=path, split_day=split, seed=spec.seed)


def _ingest(
    specs: list[InputSpec],
    work: Path,
    kind: str,
    split: SplitResult | None = None,
    base: Path | None = None,
) -> DataResult:
    from reliability.sim.pod import simulate_pod
    from reliability.sim.run import resume_cluster, simulate_cluster
    from reliability.simulated import ingest_simulation

    ds = Dataset(work / "dataset")
    raw: list[Path | None] = []
    for i, spec in enumerate(specs):
        if spec.kind == "simulate-cluster":
            sim_cfg = sim_cluster_config(spec)
            if split is not None and split.checkpoint is not None:
                # stage cluster_split ran the first half (the backtest's split): go on from there
                run = resume_cluster(split.checkpoint, config=sim_cfg, seed=spec.seed)
            else:
                run = simulate_cluster(sim_cfg, seed=spec.seed)
            run.write(work / f"raw{i}")
            ingest_simulation(work / f"raw{i}", ds.path)
            raw.append(work / f"raw{i}")
        elif spec.kind == "simulate-pod":
            simulate_pod(spec.preset, days=spec.days, seed=spec.seed).write(work / f"raw{i}")
            ds.ingest("pod", [work / f"raw{i}" / "pod_events.jsonl"])
            raw.append(work / f"raw{i}")
        else:
            try:
                ds.ingest(
                    spec.reader, list(spec.paths), cluster=spec.cluster, tz=spec.tz, **spec.options
                )
            except ReliabilityError as exc:  # name the pipeline keys, not Python keywords
                raise spec.error(exc) from None
            raw.append(None)
    entries = ds.inputs if (ds.path / "manifest.json").exists() else []

    def shown(entry: dict) -> str:
        # an input the run made (a simulation) relative to the run's folder; a file of the
        # user's relative to the pipeline file, as its paths = [...] are written: the
        # report's tables are then the same wherever the pipeline runs
        path = display_path(entry, ds.path)
        if base is not None and Path(path).is_absolute():
            rel = os.path.relpath(path, base)
            return path if rel.startswith("..") else rel
        return path

    rows = [
        {
            "input": e.get("name") or "?",
            "path": shown(e),
            "reader": e["kind"],
            "rows_read": int(e["rows_read"]),
            "rows_kept": int(e["rows_kept"]),
            "rows_quarantined": int(e["rows_quarantined"]),
        }
        for e in entries
    ]
    inputs = pl.DataFrame(
        rows,
        schema={
            "input": pl.String,
            "path": pl.String,
            "reader": pl.String,
            "rows_read": pl.Int64,
            "rows_kept": pl.Int64,
            "rows_quarantined": pl.Int64,
        },
    )
    # a note naming an option (pass observed_at=) in the pipeline's terms, for the input it is on
    index = {str(p.resolve()): spec.index for spec in specs for p in spec.paths}

    def said(entry: dict, note: str) -> str:
        i = index.get(str(entry.get("path")))
        return note if i is None else pipeline_terms(note, i)

    notes = [{"path": shown(e), "note": said(e, n)} for e in entries for n in notes_of(e)]
    reader_notes = pl.DataFrame(notes, schema={"path": pl.String, "note": pl.String})
    start, end = ds.observation_window() if entries else (None, None)
    return DataResult(
        kind=kind,
        dataset=ds.summary(),
        path=ds.path,
        raw=raw,
        inputs=inputs,
        reader_notes=reader_notes,
        observation_start=start,
        observation_end=end,
        # the basis of the input that sets the end ("now"): given at ingest, or inferred
        observation_basis=(ds.observation_end_basis if entries else "") or "unknown",
    )


def cluster_data(cluster_split: SplitResult, cfg: PipelineConfig, work: Path) -> DataResult:
    """Run stage ``cluster_data``: ingest the cluster inputs (files or a simulated cluster).

    Parameters
    ----------
    cluster_split : SplitResult
        The simulated run's state at the backtest's split (the run continues from its
        checkpoint when there is one).
    cfg : PipelineConfig
        The pipeline configuration (its ``[[inputs]]`` that are not pod inputs).
    work : Path
        The stage's work folder: the Dataset (and any simulated logs) are written there.

    Returns
    -------
    DataResult
        The Dataset and the per-input row counts, notes and quarantine.
    """
    return _ingest(
        [s for s in cfg.inputs if not s.is_pod],
        work,
        "cluster",
        cluster_split,
        base=cfg.path.parent,
    )


def pod_data(cfg: PipelineConfig, work: Path) -> DataResult:
    """Run stage ``pod_data``: ingest the pod inputs (pod logs or a simulated pod).

    Parameters
    ----------
    cfg : PipelineConfig
        The pipeline configuration (its pod ``[[inputs]]``).
    work : Path
        The stage's work folder: the Dataset (and any simulated logs) are written there.

    Returns
    -------
    DataResult
        The Dataset and the per-input row counts, notes and quarantine.
    """
    return _ingest([s for s in cfg.inputs if s.is_pod], work, "pod", base=cfg.path.parent)


def data_section(data: DataResult, ctx: Context) -> list[Section]:
    """Build the "Data and quarantine" (cluster inputs) or "Pod data" (pod inputs) section.

    Parameters
    ----------
    data : DataResult
        The ``cluster_data`` or ``pod_data`` stage's result.
    ctx : Context
        The report context.

    Returns
    -------
    list of Section
        The one section: what was read, the per-input table, quarantine reasons and notes.
    """
    sec = Section("Data and quarantine" if data.kind == "cluster" else "Pod data")
    sec.blocks += [Text(line + ("" if line.endswith(".") else ".")) for line in data._lines()]
    sec.blocks.append(
        Table(
            "inputs" if data.kind == "cluster" else "pod_inputs",
            data.inputs.select("path", "reader", "rows_read", "rows_kept", "rows_quarantined"),
            "Rows read, kept and quarantined per input (full paths).",
            wrap=("path",),
        )
    )
    q = data.dataset.quarantine_reasons
    if q is not None and q.height:
        sec.blocks.append(
            Table(
                f"{data.kind}_quarantine_reasons",
                q,
                "Quarantined rows by reason (row-specific values blanked); `reliability info` "
                "shows example rows.",
                wrap=("reason",),
            )
        )
    if data.reader_notes.height:
        sec.blocks.append(
            Table(
                f"{data.kind}_reader_notes",
                data.reader_notes,
                "What the readers decided that you should know, per input.",
                max_rows=40,
                wrap=("path", "note"),
            )
        )
    sec.blocks.append(
        Table(f"{data.kind}_tables", data.dataset.summary, "Rows per canonical table.")
    )
    return [sec]
