"""Attribution one cluster per Dask task against the serial run: speed-up with local workers.

    python benchmarks/bench_dask.py [--clusters 4] [--nodes 2000] [--days 35] [--workers 2]

Builds a Dataset of ``--clusters`` independent clusters of generator B (``tests/generators``;
nothing from ``reliability.sim``), then times ``attribute_failures(ds)`` (serial, in this
process) and :func:`reliability.analyses.attribute_by_cluster` on a ``LocalCluster`` of
``--workers`` worker processes (started before the clock runs, then warmed up on the same
Dataset), checks the two frames equal, and prints both times and the speed-up. The machine may
be shared: compare within one run.

Measured (2 shared cores; 2026-12-05): see the CHANGELOG entry of issue 39.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clusters", type=int, default=4)
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--days", type=float, default=35.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--work", type=Path, default=None)
    args = ap.parse_args()
    import polars as pl
    from generators import generate_b
    from polars.testing import assert_frame_equal

    from reliability import Dataset
    from reliability.analyses import attribute_by_cluster
    from reliability.attribution import attribute_failures
    from reliability.parallel import Executor

    work = args.work or Path(tempfile.mkdtemp(prefix="bench_dask_"))
    ds = Dataset(work / "ds")
    if not ds.inputs:
        for i in range(args.clusters):
            h = generate_b(
                work / f"c{i}", seed=100 + i, n_nodes=args.nodes, days=args.days, cluster=f"c{i}"
            )
            h.ingest(ds, kernel=False)  # (per-node kernel logs: thousands of parts)
    n = ds.scan("jobs").select(pl.len()).collect().item()
    print(f"{args.clusters} clusters of {args.nodes:,} nodes, {n:,} attempts ({work})")
    serial = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        ref = attribute_failures(ds)
        serial.append(time.perf_counter() - t)
    with Executor("dask", workers=args.workers) as ex:
        attribute_by_cluster(ds, ex)  # start the workers and import the package on them
        spread = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            got = attribute_by_cluster(ds, ex)
            spread.append(time.perf_counter() - t)
    assert_frame_equal(got, ref)
    s, d = min(serial), min(spread)
    print(
        f"serial {s:.2f} s, Dask {args.workers} local workers {d:.2f} s: x{s / d:.2f} "
        "(results equal)"
    )


if __name__ == "__main__":
    main()
