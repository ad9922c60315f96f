"""Readers: one module per source, each returning a :class:`ReadResult`.

=================  ========================================  ======================
kind (CLI)         reader                                    tables
=================  ========================================  ======================
``slurm``          :func:`read_sacct`                        jobs, job_steps
``events``         :func:`read_sacctmgr_events`              node_states
``nodes``          :func:`read_node_snapshot` (scontrol /    node_states
                   sinfo -R, detected from the content)
``kernel``         :func:`read_kernel_log`                   health_events
``dcgm``           :func:`read_dcgm`                         health_events
``health``         :func:`read_health` (CSV / JSONL)         health_events,
                                                             component_failures, inventory
=================  ========================================  ======================
"""

from __future__ import annotations

from pathlib import Path

from reliability.errors import IngestError
from reliability.ingest import hostlist
from reliability.ingest._common import ReadResult, decode_text, read_bytes
from reliability.ingest._slurm_text import identify, refusal
from reliability.ingest.dcgm import read_dcgm
from reliability.ingest.health import read_health
from reliability.ingest.kernel_log import read_kernel_log
from reliability.ingest.lanl import read_lanl
from reliability.ingest.pod_log import read_pod_log
from reliability.ingest.sacct.io import head
from reliability.ingest.slurm import read_sacct
from reliability.ingest.slurm_nodes import (
    read_sacctmgr_events,
    read_scontrol_nodes,
    read_sinfo_reasons,
)

__all__ = [
    "READERS",
    "ReadResult",
    "hostlist",
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
]


def read_node_snapshot(path: str | Path, *, cluster: str, tz: str | None = None) -> ReadResult:
    """Read ``scontrol show node`` or ``sinfo -R`` output, whichever the file holds.

    Any other Slurm output (``sinfo -N -l``, plain ``sinfo``, ``sacctmgr`` tables, YAML...) is
    refused with what the file is and the accepted forms.

    Parameters
    ----------
    path : str or Path
        The saved command output (plain or compressed).
    cluster : str
        Cluster name recorded on every row.
    tz : str or None
        Time zone of the timestamps in the file (IANA name, e.g. ``"Europe/Paris"``); None: the
        reader's default (see :func:`read_scontrol_nodes`, :func:`read_sinfo_reasons`).

    Returns
    -------
    ReadResult
        The node-state rows, quarantined lines and notes.

    Raises
    ------
    IngestError
        If the file is empty or holds another kind of output.
    """
    start = head(path)  # (the start decides: the reader reads the file itself)
    data, _ = decode_text(start)
    fmt = identify(data[:65536].decode("utf-8", errors="replace"))
    if fmt == "scontrol_node":
        return read_scontrol_nodes(path, cluster=cluster, tz=tz)
    if fmt == "sinfo_reasons":
        return read_sinfo_reasons(path, cluster=cluster, tz=tz)
    if not data.strip() and not decode_text(read_bytes(path))[0].strip():
        raise IngestError(str(path), "empty file")
    raise IngestError(str(path), refusal(fmt, "nodes"), line=1)


#: CLI kind -> reader.
READERS = {
    "slurm": read_sacct,
    "events": read_sacctmgr_events,
    "nodes": read_node_snapshot,
    "kernel": read_kernel_log,
    "dcgm": read_dcgm,
    "health": read_health,
    "lanl": read_lanl,
    "pod": read_pod_log,
}
