"""Tell which reader an input is for, from its first lines.

Used to refuse a file given to the wrong reader (a sacct export to ``ingest dcgm``): the
reader would quarantine every line, each with a reason that says nothing about what the file
is. Only confident signatures count; a file none of them matches is left to its reader.
"""

from __future__ import annotations

import re
from pathlib import Path

from reliability.errors import ReliabilityError
from reliability.ingest._common import decode_text
from reliability.ingest._compressed import open_input
from reliability.ingest._json import loads_record
from reliability.ingest._slurm_text import _KIND, _WHAT, identify

__all__ = ["HEAD_BYTES", "input_kind"]

#: bytes of the start of a file looked at
HEAD_BYTES = 65536

_XID = re.compile(r"NVRM: Xid \(|SXid \(PCI")
#: what may come before an Xid message on a kernel log's line: a time stamp (dmesg's ISO form
#: has a decimal comma), a host, a tag; never a field separator or a quote (a CSV or JSON
#: field quoting an Xid message)
_KERNEL_PREFIX = re.compile(r"^(?:[^,|\"{]|,\d)*$")
_DCGM = ("DCGM_FI_", "DCGM_EXP_", "# HELP DCGM_", "# TYPE DCGM_")
_LANL = {"System", "nodenumz", "Prob Started", "Prob Fixed"}
_HEALTH = {"node", "time", "source", "component", "code", "severity"}


def _kernel_xid(line: str) -> bool:
    m = _XID.search(line)
    return m is not None and _KERNEL_PREFIX.match(line[: m.start()]) is not None


def input_kind(path: str | Path) -> tuple[str, str] | None:
    """Return the reader (CLI kind) the start of a file is for, and what the file is.

    Parameters
    ----------
    path : str or Path
        The input (gzip and UTF-16 are read as the readers read them).

    Returns
    -------
    (str, str) or None
        E.g. ``("slurm", "`sacct --parsable2` output")``; None when the start matches no
        signature with confidence (or cannot be read: the reader says why).
    """
    try:
        stream = open_input(path)
        try:
            raw = stream.read(HEAD_BYTES)
        finally:
            stream.close()
    except (OSError, ReliabilityError):
        return None
    text = decode_text(raw)[0].decode("utf-8", errors="replace")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()][:50]
    if not lines:
        return None
    # header signatures first: a CSV's text columns may quote anything (an Xid message)
    header = {f.strip() for f in lines[0].split(",")}
    if header >= _LANL:
        return "lanl", "the LANL failure records"
    if header >= _HEALTH:
        return "health", "a health_events CSV"
    fmt = identify(text)
    if fmt == "scontrol_node" and not any(ln.startswith("NodeName=") for ln in lines):
        fmt = None  # ("NodeName=" inside another log's line, e.g. slurmd's)
    if fmt in _KIND:
        return _KIND[fmt], _WHAT[fmt]
    if any(ln.startswith(_DCGM) for ln in lines):
        return "dcgm", "a DCGM exporter scrape (Prometheus text)"
    if any(_kernel_xid(ln) for ln in lines):
        return "kernel", "a kernel log with NVIDIA Xid messages"
    try:
        first, _ = loads_record(lines[0])
    except ValueError:  # not JSON, or nested too deeply (JsonLimitError) to be an event
        return None
    if isinstance(first, dict) and "event" in first and "time" in first:
        return "pod", "a TPU pod event log (JSON lines)"
    return None
