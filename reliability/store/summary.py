"""``Dataset.summary()`` / ``reliability info``: rows per table, span, inputs and the quarantine."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from reliability._result import Result, fmt_num
from reliability.store.parts import DATA_TABLES

if TYPE_CHECKING:  # pragma: no cover
    from reliability.store._view import DatasetView as Dataset  # Dataset satisfies it

__all__ = ["DatasetSummary", "display_path", "summarise"]

#: quarantine reasons shown by ``reliability info`` (most frequent first), and example rows
TOP_REASONS = 10
EXAMPLE_ROWS = 3
_RAW_WIDTH = 100


def display_path(entry: dict[str, Any], root: Path) -> str:
    """Show an input's path relative to the Dataset's parent folder.

    So that two snapshots' ``sacct.psv`` can be told apart.

    Parameters
    ----------
    entry : dict of str to object
        The input's manifest entry (``path`` or ``name``).
    root : Path
        The Dataset folder.

    Returns
    -------
    str
        The relative path, the absolute one if it lies outside the parent folder, or the
        recorded name for ``<stdin>``.
    """
    path = entry.get("path") or entry.get("name") or "?"
    if path.startswith("<"):
        return path
    parent = root.resolve().parent
    try:
        return str(Path(path).relative_to(parent))
    except ValueError:
        rel = os.path.relpath(path, parent)
        return path if rel.startswith("..") else rel


def reason_kind(reason: pl.Expr) -> pl.Expr:
    """Blank the row-specific values of a quarantine reason, for counting reasons by kind.

    Parameters
    ----------
    reason : polars.Expr
        A string expression of reasons.

    Returns
    -------
    polars.Expr
        The reason with quoted text as ``'…'``, timestamps as ``<time>`` and numbers as ``N``.
    """
    return (
        reason.str.replace_all(r"'[^']*'", "'…'")
        .str.replace_all(r'"[^"]*"', '"…"')
        .str.replace_all(
            r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?([+-]\d\d:?\d\d|Z)?", "<time>"
        )
        .str.replace_all(r"\b\d+\b", "N")
    )


@dataclass
class DatasetSummary(Result):
    """Overview of a Dataset.

    Attributes
    ----------
    summary : polars.DataFrame
        One row per table: ``table``, ``rows``.
    inputs : polars.DataFrame
        One row per input: ``name`` (path relative to the Dataset's parent), ``kind``,
        ``rows_read``, ``rows_kept``, ``rows_quarantined``, ``observed_until`` (the end of its
        observation: what is open in it is open then [UTC]) and ``observation_basis`` (how
        that end was found: given at ingest, or the latest time in the input).
    clusters : list of str
        Cluster names seen.
    n_nodes : int
        Distinct node names in jobs, health events and node states.
    first, last : datetime or None
        Earliest and latest time in the data [UTC].
    observation_end : datetime or None
        The Dataset's observation end, "now" for what is still open [UTC];
        ``observation_end_basis`` says how it was found.
    accelerators_per_node : int
        Most accelerators seen on one node of one job attempt.
    accelerator_hours : float
        Accelerator-hours of all started attempts, running ones up to the observation end [h].
    quarantine_reasons : polars.DataFrame or None
        ``reason`` (row-specific values blanked), ``rows``, ``inputs``, most frequent first.
    quarantine_examples : polars.DataFrame or None
        The first rows of each of the top reasons: ``reason``, ``source_file``, ``line_no``,
        ``raw``, ``detail`` (the full reason).
    quarantine_reasons_hidden : int
        How many further reasons ``quarantine_reasons`` leaves out.
    """

    summary: pl.DataFrame
    inputs: pl.DataFrame
    clusters: list[str]
    n_nodes: int
    first: datetime | None
    last: datetime | None
    accelerators_per_node: int
    accelerator_hours: float
    quarantine_reasons: pl.DataFrame | None = None
    quarantine_examples: pl.DataFrame | None = None
    quarantine_reasons_hidden: int = 0
    observation_end: datetime | None = None
    observation_end_basis: str = ""
    title = "Dataset"

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the summary: inputs and nodes."""
        return {"inputs": self.inputs.height, "nodes": self.n_nodes}

    def tables(self) -> dict[str, pl.DataFrame]:
        """Return the summary's tables by name.

        Returns
        -------
        dict of str to polars.DataFrame
            ``"rows per table"``, ``"inputs"`` and, when rows were quarantined,
            ``"quarantine reasons"``.
        """
        t = {"rows per table": self.summary, "inputs": self.inputs}
        if self.quarantine_reasons is not None and self.quarantine_reasons.height:
            t["quarantine reasons"] = self.quarantine_reasons
        return t

    def _lines(self) -> list[str]:
        span = (
            f"{self.first:%Y-%m-%d %H:%M} .. {self.last:%Y-%m-%d %H:%M} UTC"
            if self.first
            else "empty"
        )
        head = [
            f"clusters: {', '.join(self.clusters) or '-'}",
            f"time span: {span}",
            "observation end ('now'): "
            + (
                f"{self.observation_end:%Y-%m-%d %H:%M:%S} UTC, {self.observation_end_basis}"
                if self.observation_end
                else "unknown"
            ),
            f"nodes: {self.n_nodes}, accelerators per node (max seen): {self.accelerators_per_node}, "
            f"accelerator-hours: {fmt_num(self.accelerator_hours, digits=3)}",
            "",
            "rows per table:",
            *(f"  {t:<20} {n:>12,}" for t, n in self.summary.iter_rows()),
            "",
            "inputs (read = kept + quarantined):",
        ]
        width = max([50, *(len(n) for n in self.inputs["name"])]) if self.inputs.height else 50
        for name, kind, r, k, q, until, basis in self.inputs.iter_rows():
            head.append(
                f"  {kind:<7} {name:<{width}} read {r:>10,}  kept {k:>10,}  quarantined {q:>7,}"
            )
            if until is not None:
                head.append(f"          observed until {until:%Y-%m-%d %H:%M:%S} UTC ({basis})")
        reasons = self.quarantine_reasons
        if reasons is not None and reasons.height:
            total = int(self.inputs["rows_quarantined"].sum())
            head += ["", f"quarantine: {total:,} row(s), by reason (most frequent first):"]
            examples = self.quarantine_examples
            for reason, n, n_inputs in reasons.iter_rows():
                head.append(f"  {n:>8,}  {reason}  ({n_inputs} input(s))")
                if examples is None:
                    continue
                for _, src, line, raw, detail in examples.filter(
                    pl.col("reason") == reason
                ).iter_rows():
                    shown = raw.replace("\n", "\\n").replace("\t", "\\t")
                    if len(shown) > _RAW_WIDTH:
                        shown = shown[: _RAW_WIDTH - 1] + "…"
                    head.append(f"            {src}:{line}: {shown}")
                    if detail != reason:
                        head.append(f"              ({detail})")
            hidden = self.quarantine_reasons_hidden
            if hidden:
                head.append(f"  ... and {hidden:,} more reason(s): see Dataset.quarantine")
        return head

    @classmethod
    def _example(cls) -> DatasetSummary:
        """Build a tiny instance: one sacct export with one quarantined row (for contract tests)."""
        t0 = datetime(2025, 1, 6, tzinfo=UTC)
        counts = pl.DataFrame({"table": ["jobs", "job_steps", "quarantine"], "rows": [80, 38, 1]})
        inputs = pl.DataFrame(
            {
                "name": ["tiny/sacct.psv"],
                "kind": ["slurm"],
                "rows_read": [119],
                "rows_kept": [118],
                "rows_quarantined": [1],
                "observed_until": [t0 + timedelta(days=14)],
                "observation_basis": ["given at ingest"],
            }
        )
        reasons = pl.DataFrame({"reason": ["unparseable time <Start>"], "rows": [1], "inputs": [1]})
        examples = pl.DataFrame(
            {
                "reason": ["unparseable time <Start>"],
                "source_file": ["tiny/sacct.psv"],
                "line_no": [7],
                "raw": ["12|job<b>|alice|Unknown"],
                "detail": ["Start: 'Unknown' is not a time"],
            }
        )
        return cls(
            summary=counts,
            inputs=inputs,
            clusters=["tiny"],
            n_nodes=16,
            first=t0,
            last=t0 + timedelta(days=14),
            accelerators_per_node=8,
            accelerator_hours=21504.0,
            quarantine_reasons=reasons,
            quarantine_examples=examples,
            observation_end=t0 + timedelta(days=14),
            observation_end_basis="given at ingest",
        )


def _quarantine(ds: Dataset) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    q = ds.scan("quarantine").with_columns(kind=reason_kind(pl.col("reason")))
    reasons = (
        q.group_by("kind")
        .agg(rows=pl.len(), inputs=pl.col("source_file").n_unique())
        .sort(["rows", "kind"], descending=[True, False])
        .rename({"kind": "reason"})
        .collect()
    )
    n_hidden = max(reasons.height - TOP_REASONS, 0)
    reasons = reasons.head(TOP_REASONS)
    examples = (
        q.filter(pl.col("kind").is_in(reasons["reason"].implode()))
        .sort("source_file", "line_no")
        .group_by("kind", maintain_order=True)
        .head(EXAMPLE_ROWS)
        .select(
            reason="kind", source_file="source_file", line_no="line_no", raw="raw", detail="reason"
        )
        .collect()
    )
    return reasons, examples, n_hidden


def _until(entry: dict[str, Any]) -> datetime | None:
    until = (entry.get("observation") or {}).get("until")
    return datetime.fromisoformat(until) if until else None


def summarise(ds: Dataset) -> DatasetSummary:
    """Summarise a Dataset.

    Parameters
    ----------
    ds : Dataset
        The Dataset.

    Returns
    -------
    DatasetSummary
        Row counts, time span, clusters, nodes, accelerators, inputs and the quarantine reasons.
    """
    tables = (*DATA_TABLES, "quarantine")
    counts = pl.DataFrame(
        {
            "table": list(tables),
            "rows": [ds.scan(t).select(pl.len()).collect().item() for t in tables],
        },
        schema={"table": pl.String, "rows": pl.Int64},
    )
    jobs, he, ns = ds.scan("jobs"), ds.scan("health_events"), ds.scan("node_states")
    # component records (LANL-style failure data, inventories) count too; their nodes are
    # the components of type "node", named by id within their cluster
    cf, inv = ds.scan("component_failures"), ds.scan("inventory")
    clusters = pl.concat([f.select("cluster") for f in (jobs, he, ns, cf, inv)]).unique().collect()
    nodes = (
        pl.concat(
            [
                jobs.select("cluster", node="nodes").explode("node"),
                he.select("cluster", "node"),
                ns.select("cluster", "node"),
                *(
                    f.filter(pl.col("component_type") == "node").select(
                        "cluster", node="component_id"
                    )
                    for f in (cf, inv)
                ),
            ]
        )
        .drop_nulls()
        .unique()
        .select(pl.len())
        .collect()
        .item()
    )
    times = (
        pl.concat(
            [
                jobs.select(pl.col("submit_time").alias("t")),
                jobs.select(pl.col("end_time").alias("t")),
                he.select(pl.col("time").alias("t")),
                ns.select(pl.col("start").alias("t")),
                cf.select(pl.col("failed_at").alias("t")),
                cf.select(pl.col("repaired_at").alias("t")),
            ]
        )
        .select(pl.col("t").min().alias("first"), pl.col("t").max().alias("last"))
        .collect()
    )
    # attempts still running are counted up to the observation end (censored, not dropped)
    obs_end = ds.observation_end
    end = pl.col("end_time")
    if obs_end is not None:
        end = pl.coalesce(end, pl.lit(obs_end).cast(jobs.collect_schema()["end_time"]))
    acc = jobs.select(
        per_node=(pl.col("n_accelerators") / pl.col("n_nodes").clip(lower_bound=1)).ceil().max(),
        hours=(
            pl.col("n_accelerators") * (end - pl.col("start_time")).dt.total_seconds().clip(0)
        ).sum()
        / 3600.0,
    ).collect()
    inputs = ds.inputs
    inp = pl.DataFrame(
        {
            "name": [display_path(i, ds.path) for i in inputs],
            "kind": [i["kind"] for i in inputs],
            "rows_read": [i["rows_read"] for i in inputs],
            "rows_kept": [i["rows_kept"] for i in inputs],
            "rows_quarantined": [i["rows_quarantined"] for i in inputs],
            "observed_until": [_until(i) for i in inputs],
            "observation_basis": [(i.get("observation") or {}).get("basis") for i in inputs],
        },
        schema={
            "name": pl.String,
            "kind": pl.String,
            "rows_read": pl.Int64,
            "rows_kept": pl.Int64,
            "rows_quarantined": pl.Int64,
            "observed_until": pl.Datetime("us", "UTC"),
            "observation_basis": pl.String,
        },
    )
    reasons, examples, hidden = _quarantine(ds)
    return DatasetSummary(
        summary=counts,
        inputs=inp,
        clusters=sorted(clusters.get_column("cluster").to_list()),
        n_nodes=int(nodes),
        first=times.item(0, "first"),
        last=times.item(0, "last"),
        accelerators_per_node=int(acc.item(0, "per_node") or 0),
        accelerator_hours=float(acc.item(0, "hours") or 0.0),
        quarantine_reasons=reasons,
        quarantine_examples=examples,
        quarantine_reasons_hidden=hidden,
        observation_end=obs_end,
        observation_end_basis=ds.observation_end_basis,
    )
