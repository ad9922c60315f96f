"""The data contract: canonical tables shared by every module (DESIGN.md section 3).

Every table is a polars schema; enums are ``pl.Enum`` so that a bad category is an error,
not a silent new string. All times are ``Datetime("us", "UTC")``.

``validate(frame, table)`` checks a frame against its table and raises
:class:`~reliability.errors.SchemaError` naming the table, column and problem.

A reader may hold a ``String`` column (or ``List(String)``, e.g. the node lists of the jobs)
in its compact form, ``Categorical`` (``List(Categorical)``): the same values, each distinct
string stored once. :func:`validate` accepts it; :func:`canonical` casts it back (a
:class:`polars.LazyFrame` casts batch by batch, as a streaming write does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

import polars as pl

from reliability.errors import SchemaError

__all__ = [
    "COMPONENTS",
    "HEALTH_SOURCES",
    "JOB_STATES",
    "NODE_STATES",
    "SCHEMA_VERSION",
    "SEVERITIES",
    "TABLES",
    "UNFINISHED_STATES",
    "TableSpec",
    "canonical",
    "compact_form",
    "empty",
    "validate",
]

SCHEMA_VERSION = 1

_F = TypeVar("_F", pl.DataFrame, pl.LazyFrame)

UTC_TIME = pl.Datetime("us", "UTC")

#: Job attempt states. DESIGN.md lists the first 13; the rest are real Slurm states seen in
#: accounting data (e.g. RESIZING in Slurm 22.05 output) and are kept rather than coerced.
JOB_STATES = (
    "COMPLETED",
    "FAILED",
    "NODE_FAIL",
    "PREEMPTED",
    "REQUEUED",
    "TIMEOUT",
    "CANCELLED",
    "OUT_OF_MEMORY",
    "BOOT_FAIL",
    "DEADLINE",
    "RUNNING",
    "PENDING",
    "SUSPENDED",
    "RESIZING",
    "REVOKED",
    "SPECIAL_EXIT",
    "LAUNCH_FAILED",
    "STOPPED",
    "SIGNALING",
    "REQUEUE_FED",
    "REQUEUE_HOLD",
    "COMPLETING",
    "CONFIGURING",
)
HEALTH_SOURCES = (
    "kernel_log",
    "dcgm",
    "slurm",
    "health_check",
    "healthd",
    "preflight",
    "ticket",
    "sim",
)
COMPONENTS = (
    "gpu",
    "gpu_memory",
    "nvlink",
    "pcie",
    "nic",
    "ib_link",
    "dimm",
    "cpu",
    "psu",
    "bios",
    "disk",
    "filesystem",
    "ici_link",
    "ocs",
    "machine",
    "software",
    "unknown",
)
SEVERITIES = ("info", "warning", "critical")
NODE_STATES = ("DOWN", "DRAIN", "FAIL", "MAINT", "REPAIR")

JobState = pl.Enum(JOB_STATES)
#: states of a job or step record that is not final yet (a record taken while it ran)
UNFINISHED_STATES = (
    "RUNNING", "PENDING", "SUSPENDED", "REQUEUE_HOLD", "REQUEUE_FED", "COMPLETING",
    "CONFIGURING", "SIGNALING", "STOPPED",
)  # fmt: skip
HealthSource = pl.Enum(HEALTH_SOURCES)
Component = pl.Enum(COMPONENTS)
Severity = pl.Enum(SEVERITIES)
NodeState = pl.Enum(NODE_STATES)


@dataclass(frozen=True)
class TableSpec:
    """One canonical table: its columns, which may be null, and its natural key."""

    name: str
    schema: pl.Schema
    nullable: frozenset[str]
    key: tuple[str, ...]

    def empty(self) -> pl.DataFrame:
        """Return a zero-row frame with this table's schema.

        Returns
        -------
        polars.DataFrame
            No rows, every canonical column with its dtype.
        """
        return pl.DataFrame(schema=self.schema)


def _spec(name: str, cols: list[tuple[str, pl.DataType, bool]], key: tuple[str, ...]) -> TableSpec:
    schema = pl.Schema([(c, t) for c, t, _ in cols])
    nullable = frozenset(c for c, _, null in cols if null)
    return TableSpec(name, schema, nullable, key)


TABLES: dict[str, TableSpec] = {
    "jobs": _spec(
        "jobs",
        [
            ("cluster", pl.String(), False),
            ("job_id", pl.String(), False),
            ("attempt", pl.UInt16(), False),
            ("name", pl.String(), True),
            ("user", pl.String(), True),
            ("account", pl.String(), True),
            ("partition", pl.String(), True),
            ("qos", pl.String(), True),
            ("submit_time", UTC_TIME, False),
            ("start_time", UTC_TIME, True),
            ("end_time", UTC_TIME, True),
            ("state", JobState, False),
            ("exit_code", pl.Int32(), True),
            ("exit_signal", pl.Int32(), True),
            ("n_nodes", pl.UInt32(), False),
            ("n_accelerators", pl.UInt32(), False),
            ("nodes", pl.List(pl.String()), False),
            ("time_limit_s", pl.Int64(), True),
            ("priority", pl.Int64(), True),
            ("topology", pl.String(), True),
        ],
        key=("cluster", "job_id", "submit_time", "start_time"),
    ),
    "job_steps": _spec(
        "job_steps",
        [
            ("cluster", pl.String(), False),
            ("job_id", pl.String(), False),
            ("step", pl.String(), False),
            ("name", pl.String(), True),
            ("start_time", UTC_TIME, True),
            ("end_time", UTC_TIME, True),
            ("state", JobState, False),
            ("exit_code", pl.Int32(), True),
            ("exit_signal", pl.Int32(), True),
            ("n_nodes", pl.UInt32(), True),
            ("nodes", pl.List(pl.String()), False),
        ],
        key=("cluster", "job_id", "step", "start_time"),
    ),
    "health_events": _spec(
        "health_events",
        [
            ("cluster", pl.String(), False),
            ("node", pl.String(), False),
            ("time", UTC_TIME, False),
            ("source", HealthSource, False),
            ("component", Component, False),
            ("code", pl.String(), False),
            ("severity", Severity, False),
            ("device", pl.String(), True),
            ("message", pl.String(), False),
        ],
        key=("cluster", "node", "time", "source", "code", "device", "message"),
    ),
    "node_states": _spec(
        "node_states",
        [
            ("cluster", pl.String(), False),
            ("node", pl.String(), False),
            ("state", NodeState, False),
            ("start", UTC_TIME, False),
            ("end", UTC_TIME, True),
            ("reason", pl.String(), True),
            ("user", pl.String(), True),
        ],
        key=("cluster", "node", "state", "start"),
    ),
    "component_failures": _spec(
        "component_failures",
        [
            ("cluster", pl.String(), False),
            ("component_type", pl.String(), False),
            ("component_id", pl.String(), False),
            ("failed_at", UTC_TIME, False),
            ("repaired_at", UTC_TIME, True),
        ],
        key=("cluster", "component_type", "component_id", "failed_at"),
    ),
    "inventory": _spec(
        "inventory",
        [
            ("cluster", pl.String(), False),
            ("component_type", pl.String(), False),
            ("component_id", pl.String(), False),
            ("in_service", UTC_TIME, False),
            ("out_of_service", UTC_TIME, True),
        ],
        key=("cluster", "component_type", "component_id", "in_service"),
    ),
    "quarantine": _spec(
        "quarantine",
        [
            ("source_file", pl.String(), False),
            ("line_no", pl.Int64(), False),
            ("raw", pl.String(), False),
            ("reason", pl.String(), False),
        ],
        key=("source_file", "line_no"),
    ),
}


def empty(table: str) -> pl.DataFrame:
    """Return a zero-row frame of a canonical table.

    Parameters
    ----------
    table : str
        A canonical table name (``jobs``, ``health_events``, ``node_states``, ...).

    Returns
    -------
    polars.DataFrame
        No rows, every canonical column with its dtype.
    """
    return _table(table).empty()


def _table(table: str) -> TableSpec:
    try:
        return TABLES[table]
    except KeyError:
        raise SchemaError(table, None, f"unknown table; expected one of {sorted(TABLES)}") from None


def compact_form(got: pl.DataType, dtype: pl.DataType) -> bool:
    """Say whether ``got`` is the compact form of the canonical ``dtype``.

    Parameters
    ----------
    got : polars.DataType
        A column's dtype.
    dtype : polars.DataType
        The canonical dtype.

    Returns
    -------
    bool
        True for ``Categorical`` where ``String`` is canonical, also inside a ``List``.
    """
    if isinstance(got, pl.List) and isinstance(dtype, pl.List):
        return compact_form(got.inner, dtype.inner)
    return isinstance(got, pl.Categorical) and dtype == pl.String


def canonical(frame: _F, table: str) -> _F:
    """Cast the compact columns of a frame of ``table`` (see :func:`compact_form`) back.

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        A frame that :func:`validate` accepts.
    table : str
        Its canonical table.

    Returns
    -------
    polars.DataFrame or polars.LazyFrame
        The same kind of frame, every column in its canonical dtype (a frame without compact
        columns is returned as it is).
    """
    spec = _table(table)
    have = frame.collect_schema()
    casts = {
        c: dtype for c, dtype in spec.schema.items() if c in have and compact_form(have[c], dtype)
    }
    return frame.with_columns(pl.col(c).cast(d) for c, d in casts.items()) if casts else frame


def validate(frame: pl.DataFrame, table: str) -> pl.DataFrame:
    """Check a frame against a canonical table's schema.

    Checks: every column present with the exact dtype (or its compact form, see
    :func:`compact_form`), no extra columns, no nulls in non-nullable columns, times UTC-aware.

    Parameters
    ----------
    frame : polars.DataFrame
        The frame to check.
    table : str
        The canonical table it should match.

    Returns
    -------
    polars.DataFrame
        ``frame`` unchanged but for its columns in the canonical order.

    Raises
    ------
    SchemaError
        Naming the table, column and problem on the first violation.
    """
    spec = _table(table)
    missing = [c for c in spec.schema if c not in frame.columns]
    if missing:
        raise SchemaError(table, missing[0], f"missing column (expected {spec.schema[missing[0]]})")
    extra = [c for c in frame.columns if c not in spec.schema]
    if extra:
        raise SchemaError(table, extra[0], "unexpected column (not in the data contract)")
    for col, dtype in spec.schema.items():
        got = frame.schema[col]
        if got != dtype and not compact_form(got, dtype):
            raise SchemaError(table, col, f"dtype {got}, expected {dtype}")
    null_counts = frame.null_count().row(0, named=True)
    for col in spec.schema:
        if col not in spec.nullable and null_counts[col]:
            raise SchemaError(table, col, f"{null_counts[col]} null value(s) in a required column")
    return frame.select(list(spec.schema))
