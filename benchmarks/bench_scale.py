"""Scale-out benchmark: partitioned ingestion and a pod-availability sweep on serial, local
processes and a 2-worker Dask LocalCluster, and the peak memory of a streamed analysis.

    python benchmarks/bench_scale.py [--days 330] [--seeds 200] [--pod-days 90] [--workers 2]

1. Simulate an RSC-1-like cluster for ``--days`` and ingest its kernel logs (1,500+ files) and
   its sacct export split into ``--sacct-parts`` files with each backend; wall times and
   speed-up over serial.
2. A ``--seeds``-seed sweep of TPUv4 pod availability (simulate, ingest, measure) with each
   backend; wall times, speed-up, and the projection to more workers (tasks are independent:
   time ~ serial / workers + start-up, until the task count is the limit).
3. Peak resident memory of an attribution-based analysis run eagerly vs lazily on polars'
   streaming engine, each in a fresh process, beside the size of the jobs table in memory.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

ANALYSIS = """
import json, resource, sys, time
import polars as pl
from reliability import Dataset, attribute_failures
ds = Dataset(sys.argv[1]); mode = sys.argv[2]
t = time.perf_counter()
def summary(frame):
    return frame.group_by("failure_domain").agg(
        attempts=pl.len(),
        gpu_hours=(pl.col("n_accelerators") * (pl.col("end_time") - pl.col("start_time")).dt.total_seconds() / 3600).sum())
if mode == "streaming":
    out = summary(attribute_failures(ds, lazy=True)).collect(engine="streaming")
else:
    out = summary(attribute_failures(ds))
print(json.dumps({"seconds": time.perf_counter() - t, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "rows": int(out["attempts"].sum())}))
"""

JOBS_SIZE = """
import json, sys
from reliability import Dataset
j = Dataset(sys.argv[1]).jobs
print(json.dumps({"jobs_rows": j.height, "jobs_mb": j.estimated_size() / 2**20}))
"""


def _split(files: list[Path], parts: int, folder: Path) -> list[Path]:
    """Split sacct exports into ``parts`` files of whole lines, each with the header (a site
    exporting month by month gets the same)."""
    if parts <= 1:
        return files
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for f in files:
        lines = f.read_bytes().splitlines(keepends=True)
        head, body = lines[0], lines[1:]
        step = -(-len(body) // parts)
        for i in range(parts):
            chunk = body[i * step : (i + 1) * step]
            if chunk:
                p = folder / f"{f.stem}-{i:02d}{f.suffix}"
                p.write_bytes(head + b"".join(chunk))
                out.append(p)
    return out


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", type=float, default=330.0)
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--pod-days", type=float, default=90.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--sacct-parts",
        type=int,
        default=12,
        help="split the sacct export (as monthly exports would be)",
    )
    args = ap.parse_args()

    from reliability import Dataset
    from reliability.parallel import Executor
    from reliability.sim.run import simulate_cluster
    from reliability.sweep import SweepSpec, run_sweep

    work = Path(tempfile.mkdtemp(prefix="bench_scale_"))
    print(f"work folder {work}")
    secs, r = _timed(lambda: simulate_cluster("rsc1", days=args.days, seed=7))
    r.write(work / "raw")
    m = json.loads((work / "raw" / "manifest.json").read_text())
    sacct = _split(
        [work / "raw" / f for f in m["ingest"]["slurm"]], args.sacct_parts, work / "sacct-parts"
    )
    kernel = [work / "raw" / f for f in m["ingest"]["kernel"]]
    size = sum(p.stat().st_size for p in [*sacct, *kernel]) / 2**20
    print(
        f"simulated rsc1 for {args.days:g} days in {secs:.0f} s: {len(sacct)} sacct files + {len(kernel)} kernel logs, {size:,.0f} MB"
    )

    print("\n1. partitioned ingestion (kernel logs + sacct)")
    base = None
    for backend in ("serial", "processes", "dask"):
        ds = Dataset(work / f"ds-{backend}")
        with Executor(backend, workers=args.workers) as ex:
            t = time.perf_counter()
            ds.ingest(
                "kernel", kernel, cluster="rsc1", executor=ex if backend != "serial" else None
            )
            ds.ingest("slurm", sacct, tz="UTC", executor=ex if backend != "serial" else None)
            secs = time.perf_counter() - t
        base = base or secs
        print(
            f"  {backend:<10} {secs:7.1f} s   speed-up x{base / secs:.2f}   ({ds.jobs.height:,} attempts)"
        )

    print(
        f"\n2. pod-availability sweep: {args.seeds} seeds x {args.pod_days:g} days of a TPUv4 pod"
    )
    spec = SweepSpec(name="bench", model="pod-availability", seeds=tuple(range(args.seeds)), seeds_per_task=5,
                     grid={"preset": ["tpuv4"]}, fixed={"days": args.pod_days, "sizes": [3072, 3200]},
                     out=work / "sweep")  # fmt: skip
    base = None
    for backend in ("serial", "processes", "dask"):
        t = time.perf_counter()
        res = run_sweep(spec, backend=backend, workers=args.workers, out=work / f"sweep-{backend}")
        secs = time.perf_counter() - t
        base = base or secs
        print(
            f"  {backend:<10} {secs:7.1f} s   speed-up x{base / secs:.2f}   ({res.results.height:,} rows, {len(res.failures)} failures)"
        )
        if backend == "serial":
            per_task = secs / max(res.tasks_run, 1)
    n_tasks = -(-args.seeds // 5)
    print(f"  projection (independent tasks, {per_task:.2f} s each): " + ", ".join(
        f"{w} workers ~{n_tasks * per_task / min(w, n_tasks):.0f} s" for w in (4, 8, 16, 40)))  # fmt: skip
    agg = res.aggregates.filter(res.aggregates["key"].str.starts_with("measured_3200"))
    print(
        f"  measured availability at 3,200 chips: {agg['mean'][0]:.3f} [{agg['ci_low'][0]:.3f}, {agg['ci_high'][0]:.3f}]"
    )

    print("\n3. peak memory of an attribution analysis (fresh process each)")
    ds_path = str(work / "ds-serial")
    size = json.loads(
        subprocess.run(
            [sys.executable, "-c", JOBS_SIZE, ds_path], capture_output=True, text=True, check=True
        ).stdout
    )
    print(f"  jobs table: {size['jobs_rows']:,} rows, {size['jobs_mb']:,.0f} MB in memory")
    for mode in ("eager", "streaming"):
        out = json.loads(
            subprocess.run(
                [sys.executable, "-c", ANALYSIS, ds_path, mode],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        print(
            f"  {mode:<10} peak RSS {out['peak_mb']:7,.0f} MB   {out['seconds']:.1f} s   ({out['rows']:,} attempts)"
        )


if __name__ == "__main__":
    main()
