"""The Slurm accounting (``sacct``) reader's parts.

The reader itself is :func:`reliability.ingest.read_sacct` (:mod:`reliability.ingest.slurm`).

==========  ==============================================================================
module      what it holds
==========  ==============================================================================
fields      the field map: required and used fields, field shapes, sentinels, and the export
            commands every message, the README and ``reliability collect`` quote
io          reading the file: blocks, line boundaries, the header, encodings
records     record assembly around lines that are not clean (``|`` or newlines in text)
parse       the typed parse of a block of records into job rows (polars expressions)
post        Slurm's attempt semantics: requeues, resizes, duplicates, steps
mapped      the memory-mapped fast path for a plain file
reader      :class:`~reliability.ingest.sacct.reader.SacctReader`, which runs them
json        the ``sacct --json`` reader
==========  ==============================================================================

Importing this package loads only :mod:`~reliability.ingest.sacct.fields` (the constants
below); the other modules load when the reader does.
"""

from __future__ import annotations

from reliability.ingest.sacct.fields import (
    EXPORT_FIELDS,
    RECOMMENDED_FORMAT,
    SACCT_EXPORT_COMMAND,
    SACCTMGR_EVENTS_COMMAND,
    sacct_export_args,
    sacctmgr_events_args,
)

__all__ = [
    "EXPORT_FIELDS",
    "RECOMMENDED_FORMAT",
    "SACCTMGR_EVENTS_COMMAND",
    "SACCT_EXPORT_COMMAND",
    "sacct_export_args",
    "sacctmgr_events_args",
]
