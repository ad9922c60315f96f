"""The Dataset store: a folder of parquet tables, a manifest, and the quarantine.

- :mod:`~reliability.store.dataset`: :class:`Dataset` (ingest, scan, summary, verify, repair)
- :mod:`~reliability.store.merge`: which record wins when inputs overlap (by data)
- :mod:`~reliability.store.manifest`: the commit point and an input's identity
- :mod:`~reliability.store.parts`: part files and the description in their footers
- :mod:`~reliability.store.lock`: one writer at a time (``flock``), stale locks
- :mod:`~reliability.store.integrity`: ``verify`` and ``repair``
"""

from reliability._atomic import file_sha256 as _file_sha256
from reliability.store.dataset import STDIN, Dataset, IngestOutcome
from reliability.store.integrity import RepairReport, VerifyReport
from reliability.store.merge import NODE_STATE_TOLERANCE
from reliability.store.summary import DatasetSummary

__all__ = [
    "NODE_STATE_TOLERANCE",
    "STDIN",
    "Dataset",
    "DatasetSummary",
    "IngestOutcome",
    "RepairReport",
    "VerifyReport",
]


def _sha256(path):  # kept for callers of the former single-module store (pipeline stages)
    return _file_sha256(path)
