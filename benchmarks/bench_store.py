"""Dataset reads at scale: merging overlapping inputs by data vs by ingest order.

    python benchmarks/bench_store.py [--attempts 3000000] [--inputs 1000] [--overlap 0.1]

Builds a Dataset of ``--attempts`` job attempts spread over ``--inputs`` inputs (as monthly or
daily exports would be), where a fraction ``--overlap`` of the attempts also appear, still
RUNNING, in the previous input (an export taken while they ran). Then times, in the same run:

- baseline: the former read (concatenate the parts, keep the last row per natural key in
  ingest order, renumber attempts with a window);
- this version: ``Dataset.scan("jobs")`` (part checks, merge by data, attempts renumbered);
- node_states with snapshots reconciled against the history (``--nodes`` nodes).

Prints wall times, the ratio to the baseline, and peak memory of each in a fresh process.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUILD = r"""
import sys, numpy as np, polars as pl
from datetime import datetime, UTC
from pathlib import Path
from reliability import schema
from reliability.ingest import ReadResult
from reliability.store.manifest import empty_manifest, write_manifest
from reliability.store.parts import new_entry, write_parts
root, n, k, overlap, n_nodes = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
rng = np.random.default_rng(7)
t0 = int(datetime(2025, 1, 1, tzinfo=UTC).timestamp() * 1e6)
span = 330 * 86400 * 10**6
submit = np.sort(rng.integers(t0, t0 + span, n))
start = submit + rng.integers(0, 3600 * 10**6, n)
end = start + rng.integers(60 * 10**6, 48 * 3600 * 10**6, n)
part = np.minimum((submit - t0) * k // span, k - 1)
jobs = pl.DataFrame({
    "cluster": "rsc", "job_id": pl.Series(np.arange(n) // 2).cast(pl.String), "attempt": pl.Series(np.arange(n) % 2, dtype=pl.UInt16),
    "name": "train", "user": "u", "account": "a", "partition": "p", "qos": "normal",
    "submit_time": pl.Series(submit).cast(pl.Datetime("us", "UTC")), "start_time": pl.Series(start).cast(pl.Datetime("us", "UTC")),
    "end_time": pl.Series(end).cast(pl.Datetime("us", "UTC")),
    "state": pl.Series(rng.choice(["COMPLETED", "FAILED", "NODE_FAIL"], n, p=[0.8, 0.19, 0.01])).cast(schema.JobState),
    "exit_code": pl.Series(np.zeros(n, dtype=np.int32)), "exit_signal": pl.Series(np.zeros(n, dtype=np.int32)),
    "n_nodes": pl.Series(np.ones(n, dtype=np.uint32)), "n_accelerators": pl.Series(np.full(n, 8, dtype=np.uint32)),
    "nodes": pl.Series([[f"n{i % n_nodes:04d}"] for i in range(n)]), "time_limit_s": 86400, "priority": 1, "topology": None,
}, schema_overrides={"topology": pl.String}).with_columns(__part=pl.Series(part))
jobs = schema.validate(jobs.with_columns(pl.col("time_limit_s", "priority").cast(pl.Int64)).drop("__part"), "jobs").with_columns(__part=pl.Series(part))
ov = rng.random(n) < overlap
running = jobs.filter(pl.Series(ov) & (pl.col("__part") > 0)).with_columns(
    state=pl.lit("RUNNING").cast(schema.JobState), end_time=pl.lit(None, schema.UTC_TIME), __part=pl.col("__part") - 1)
allrows = pl.concat([jobs, running]).partition_by("__part", as_dict=True)
q = schema.empty("quarantine")
m = empty_manifest()
for (i,), f in sorted(allrows.items()):
    f = f.drop("__part")
    r = ReadResult(f"sacct-{i:04d}.psv", {"jobs": f}, q, f.height, f.height)
    e = new_entry("slurm", f"sacct-{i:04d}.psv", f"/exports/sacct-{i:04d}.psv", f"{i:064x}", 0, r, {"tz": "UTC"})
    m["inputs"].append(write_parts(root, e, r, {"pid": 0, "host": "bench", "call": ""}))
# node states: history (sacctmgr) + weekly snapshots that see the open ones
starts = np.sort(rng.integers(t0, t0 + span, n_nodes * 10))
hist = pl.DataFrame({"cluster": "rsc", "node": [f"n{i % n_nodes:04d}" for i in range(starts.size)],
    "state": pl.Series(rng.choice(["DRAIN", "DOWN"], starts.size)).cast(schema.NodeState),
    "start": pl.Series(starts).cast(schema.UTC_TIME), "end": pl.Series(starts + rng.integers(600, 86400 * 3, starts.size) * 10**6).cast(schema.UTC_TIME),
    "reason": "GPU ECC errors <xid 79>", "user": "slurm"})
r = ReadResult("events.psv", {"node_states": hist}, q, hist.height, hist.height)
e = new_entry("events", "events.psv", "/exports/events.psv", "e" * 64, 0, r, {"tz": "UTC"})
m["inputs"].append(write_parts(root, e, r, {"pid": 0, "host": "bench", "call": ""}))
for w in range(47):
    snap = hist.sample(fraction=0.02, seed=w).with_columns(start=pl.col("start") - pl.duration(seconds=57), end=pl.lit(None, schema.UTC_TIME), user=pl.lit("root"))
    r = ReadResult(f"scontrol-{w}.txt", {"node_states": snap}, q, snap.height, snap.height)
    e = new_entry("nodes", f"scontrol-{w}.txt", f"/exports/scontrol-{w}.txt", f"{w:063x}s", 0, r, {"cluster": "rsc"})
    m["inputs"].append(write_parts(root, e, r, {"pid": 0, "host": "bench", "call": ""}))
write_manifest(root, m)
print(jobs.height + running.height)
"""

READ = r"""
import json, resource, sys, time
import polars as pl
from reliability import Dataset, schema
ds = Dataset(sys.argv[1]); mode = sys.argv[2]
t = time.perf_counter()
if mode == "baseline":   # the former Dataset.scan("jobs")
    files = [ds.path / i["parts"]["jobs"]["file"] for i in ds.inputs if "jobs" in i["parts"]]
    lf = pl.concat([pl.scan_parquet(f) for f in files]).unique(subset=list(schema.TABLES["jobs"].key), keep="last", maintain_order=True)
    lf = (lf.with_row_index("__order").sort("cluster", "job_id", "start_time", "submit_time", "__order", nulls_last=True)
          .with_columns(attempt=pl.int_range(pl.len(), dtype=pl.UInt16).over("cluster", "job_id")).sort("__order").drop("__order"))
    rows = lf.collect().height
elif mode == "jobs":
    rows = ds.scan("jobs").collect().height
elif mode == "jobs-again":   # a second scan in the same process (part checks cached)
    ds.scan("jobs").select(pl.len()).collect()
    t = time.perf_counter()
    rows = ds.scan("jobs").collect().height
else:
    rows = ds.scan("node_states").collect().height
print(json.dumps({"seconds": time.perf_counter() - t, "rows": rows,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--attempts", type=int, default=3_000_000)
    ap.add_argument("--inputs", type=int, default=1000)
    ap.add_argument("--overlap", type=float, default=0.1)
    ap.add_argument("--nodes", type=int, default=2000)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_store_"))
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", BUILD, str(work), str(args.attempts), str(args.inputs),
                          str(args.overlap), str(args.nodes)], check=True, capture_output=True, text=True)  # fmt: skip
    rows = int(out.stdout.strip().splitlines()[-1])
    print(f"built {work}: {rows:,} job rows ({args.attempts:,} attempts + overlapping RUNNING copies) "
          f"in {args.inputs} inputs, {args.nodes} nodes, in {time.perf_counter() - t:.0f} s")  # fmt: skip
    res = {}
    for mode in ("baseline", "jobs", "jobs-again", "node_states"):
        r = subprocess.run([sys.executable, "-c", READ, str(work), mode], check=True,
                           capture_output=True, text=True)  # fmt: skip
        res[mode] = json.loads(r.stdout.strip().splitlines()[-1])
    base = res["baseline"]["seconds"]
    for mode, r in res.items():
        ratio = f"x{r['seconds'] / base:.2f} of baseline" if mode != "node_states" else ""
        print(
            f"  {mode:<12} {r['seconds']:7.2f} s  {ratio:<20} {r['rows']:>10,} rows  peak {r['peak_mb']:,.0f} MB"
        )


if __name__ == "__main__":
    main()
