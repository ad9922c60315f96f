"""Readers: one module per source, each declaring a :class:`ReaderSpec` and returning a :class:`ReadResult`.

:data:`READERS` maps each CLI kind (``reliability ingest KIND``, ``reader = "KIND"`` in a
pipeline) to its spec: the reader function, its options (from which the CLI flags and the
pipeline's input keys are built), the tables it fills, the signature by which a file given to
another reader is recognised, and a sample the tests read. :func:`reader_table` lists them.

A new reader is a module that declares its ``SPEC`` and ``read_<source>`` (see
:mod:`reliability.ingest._spec`), and one line below; the CLI, the pipelines, the wrong-kind
check and the test matrices pick it up.
"""

from __future__ import annotations

import polars as pl

from reliability.ingest import (
    dcgm,
    health,
    hostlist,
    kernel_log,
    lanl,
    pod_log,
    slurm,
    slurm_events,
    slurm_nodes,
)
from reliability.ingest._common import ReadResult
from reliability.ingest._spec import ReaderOption, ReaderSample, ReaderSpec
from reliability.ingest.dcgm import read_dcgm
from reliability.ingest.health import read_health
from reliability.ingest.kernel_log import read_kernel_log
from reliability.ingest.lanl import read_lanl
from reliability.ingest.pod_log import read_pod_log
from reliability.ingest.sacct.reader import (
    MAX_NODE_NAMES_PER_INGEST,
    MAX_NODE_NAMES_PER_INPUT,
    node_budget,
)
from reliability.ingest.slurm import read_sacct
from reliability.ingest.slurm_events import read_sacctmgr_events
from reliability.ingest.slurm_nodes import (
    read_node_snapshot,
    read_scontrol_nodes,
    read_sinfo_reasons,
)

__all__ = [
    "MAX_NODE_NAMES_PER_INGEST",
    "MAX_NODE_NAMES_PER_INPUT",
    "READERS",
    "ReadResult",
    "ReaderOption",
    "ReaderSample",
    "ReaderSpec",
    "hostlist",
    "node_budget",
    "read_dcgm",
    "read_health",
    "read_kernel_log",
    "read_lanl",
    "read_node_snapshot",
    "read_pod_log",
    "read_sacct",
    "read_sacctmgr_events",
    "read_scontrol_nodes",
    "read_sinfo_reasons",
    "reader_options",
    "reader_table",
]

#: CLI kind -> reader spec (``READERS[kind](path, **options)`` reads with it).
READERS: dict[str, ReaderSpec] = {
    spec.kind: spec
    for spec in (
        slurm.SPEC,
        slurm_events.SPEC,
        slurm_nodes.SPEC,
        kernel_log.SPEC,
        dcgm.SPEC,
        health.SPEC,
        lanl.SPEC,
        pod_log.SPEC,
    )
}


def reader_options() -> dict[str, ReaderOption]:
    """Return every reader option by name, as the CLI and pipelines spell them (one per name).

    Options of the same name in several readers are one option (the first reader's help);
    their types must agree.

    Returns
    -------
    dict of str to ReaderOption
        Option name -> option, in the order the readers declare them.

    Raises
    ------
    TypeError
        If two readers give an option of the same name different types.
    """
    out: dict[str, ReaderOption] = {}
    for spec in READERS.values():
        for o in spec.options:
            first = out.setdefault(o.name, o)
            if (first.type, first.choices) != (o.type, o.choices):
                raise TypeError(f"reader option {o.name}: {spec.kind!r} gives it another type")
    return out


def reader_table() -> pl.DataFrame:
    """List the readers: kind, what the files are, the tables filled and the options taken.

    Returns
    -------
    polars.DataFrame
        One row per reader: ``kind``, ``summary``, ``tables``, ``options`` (required options
        without a ``?``).
    """
    return pl.DataFrame(
        {
            "kind": list(READERS),
            "summary": [s.summary for s in READERS.values()],
            "tables": [", ".join(s.tables) for s in READERS.values()],
            "options": [
                ", ".join(o.name + ("" if o.required else "?") for o in s.options)
                for s in READERS.values()
            ],
        }
    )
