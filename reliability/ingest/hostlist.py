"""Alias of :mod:`reliability.hostlist`, where the hostlist functions live since 0.1.0.

They moved to the package's top so the simulator's writer and the readers share one module
without the simulator importing ``reliability.ingest``. Kept so ``reliability.ingest.hostlist``
still imports; new code uses :mod:`reliability.hostlist`.
"""

from __future__ import annotations

from reliability.hostlist import (
    MAX_HOSTLIST_NODES,
    HostlistError,
    NodeBudgetError,
    compress,
    count,
    expand,
    expand_column,
    expand_table,
    node_lists,
    sizes,
)

__all__ = [
    "MAX_HOSTLIST_NODES",
    "HostlistError",
    "NodeBudgetError",
    "compress",
    "count",
    "expand",
    "expand_column",
    "expand_table",
    "node_lists",
    "sizes",
]
