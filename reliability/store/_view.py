"""What :mod:`~reliability.store.integrity` and :mod:`~reliability.store.summary` use of a Dataset.

:class:`~reliability.store.dataset.Dataset` calls both modules (``verify``, ``repair``,
``summary``) and satisfies this protocol; they name the protocol, not the class, so neither
imports the module that imports it (no import cycle, not even a type-only one).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import polars as pl

__all__ = ["DatasetView"]


class DatasetView(Protocol):
    """A Dataset as its verification, repair and summary see it.

    Attributes
    ----------
    path : Path
        The Dataset folder.
    """

    path: Path
    #: the Dataset's cached manifest; ``repair`` sets it to None after rewriting the manifest
    _cache: Any

    @property
    def inputs(self) -> list[dict[str, Any]]:
        """The ingested inputs, in ingest order."""
        ...

    @property
    def observation_end(self) -> datetime | None:
        """When the observation ends [UTC] (None if empty)."""
        ...

    @property
    def observation_end_basis(self) -> str:
        """Say where the observation end comes from."""
        ...

    def scan(self, table: str) -> pl.LazyFrame:
        """Scan one table lazily.

        Parameters
        ----------
        table : str
            The table's name.

        Returns
        -------
        polars.LazyFrame
            The table's rows, overlapping inputs merged.
        """
        ...
