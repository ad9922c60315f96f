"""Ingest a simulator's output folder into a :class:`~reliability.store.Dataset`.

A simulator (:mod:`reliability.sim`) writes the same raw formats a real cluster produces, plus
``manifest.json`` naming each file and the reader it needs. This module reads that manifest and
runs the ordinary readers, exactly as a user would; it never reads the simulator's ``truth/``
folder and never imports the simulator (data flows one way: sim -> files -> ingest -> Dataset).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from reliability.errors import ReliabilityError
from reliability.store import Dataset, IngestOutcome

__all__ = ["ingest_simulation"]

#: manifest key -> reader kind, in the order they are ingested
_KINDS = (("slurm", "slurm"), ("events", "events"), ("kernel", "kernel"), ("health", "health"))


def ingest_simulation(out: str | Path, dataset: str | Path) -> list[IngestOutcome]:
    """Ingest what a cluster simulation wrote in ``out`` into the Dataset at ``dataset``.

    Parameters
    ----------
    out : str or Path
        Folder written by :meth:`reliability.sim.ClusterResult.write` (it holds ``manifest.json``).
    dataset : str or Path
        Dataset folder (created if missing).

    Returns
    -------
    list of IngestOutcome
        The ingest outcomes, one per input file, in the order ingested (sacct, node events, kernel
        logs, health checks).
    """
    out = Path(out)
    try:
        m = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
        files, tz, cluster = m["ingest"], m["tz"], m["cluster"]
        # the exports are taken at the end of the run: what is still open is open then
        end = datetime.fromisoformat(m["start"]) + timedelta(days=float(m["days"]))
        # a run simulated past this machine's clock: its end is no export time; infer it
        observed_at = end if end <= datetime.now(UTC) else None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ReliabilityError(
            f"{out}: not a simulator output folder (manifest.json unreadable: {exc})"
        ) from None
    ds = Dataset(dataset)
    outcomes: list[IngestOutcome] = []
    for key, kind in _KINDS:
        paths = [out / f for f in files.get(key, [])]
        if not paths:
            continue
        if kind in ("slurm", "events"):
            outcomes += ds.ingest(kind, paths, tz=tz, observed_at=observed_at)
        else:
            outcomes += ds.ingest(kind, paths, cluster=cluster, observed_at=observed_at)
    return outcomes
