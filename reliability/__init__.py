"""reliability: how reliable is your ML training cluster, what do failures cost, what to change.

The public API. Ingestion turns raw logs (Slurm accounting, node-state history, kernel
logs, DCGM scrapes, canonical CSV/JSONL) into a :class:`Dataset` of canonical tables
(:mod:`reliability.schema`). Subpackages: :mod:`reliability.models` (the analyses),
:mod:`reliability.sim` (simulators), :mod:`reliability.pipeline` (``reliability run``),
:mod:`reliability.plots`, :mod:`reliability.report`, :mod:`reliability.parallel` and
:mod:`reliability.sweep` (scale-out).
"""

from reliability import hostlist
from reliability._version import __version__
from reliability.attribution import attribute_failures
from reliability.errors import IngestError, ReliabilityError, SchemaError
from reliability.ingest import (
    ReadResult,
    read_dcgm,
    read_health,
    read_kernel_log,
    read_node_snapshot,
    read_sacct,
    read_sacctmgr_events,
    read_scontrol_nodes,
    read_sinfo_reasons,
)
from reliability.schema import TABLES, validate
from reliability.simulated import ingest_simulation
from reliability.store import Dataset, DatasetSummary, IngestOutcome

__all__ = [
    "TABLES",
    "Dataset",
    "DatasetSummary",
    "IngestError",
    "IngestOutcome",
    "ReadResult",
    "ReliabilityError",
    "SchemaError",
    "__version__",
    "attribute_failures",
    "hostlist",
    "ingest_simulation",
    "read_dcgm",
    "read_health",
    "read_kernel_log",
    "read_node_snapshot",
    "read_sacct",
    "read_sacctmgr_events",
    "read_scontrol_nodes",
    "read_sinfo_reasons",
    "validate",
]
