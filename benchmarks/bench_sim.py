"""Cluster-simulator speed: the full rsc1 preset (2,000 nodes, 330 days) on one core.

    python benchmarks/bench_sim.py [--preset rsc1] [--days N] [--seed S]

Runs in a child process pinned to one CPU (``sched_setaffinity``, ``POLARS_MAX_THREADS=1``)
and prints: jobs, attempts, kernel events, simulate time, write time (raw logs + truth),
events per second, their CPU time (the fair figure on a shared machine), and peak memory
(VmHWM). Targets (issue): under 2 minutes wall and under
4 GiB peak, including writing the raw logs.

Figures (CPU s on one core of the shared 2-core machine, seed 7; before: main at be25ea5,
after: the simulator speed-up of issue 39, same output byte for byte), each run twice
alternating old and new code for 120 days:

    rsc1, 120 days   simulate 30.0 -> 24.3 / 30.1 -> 24.6   write 6.4 -> 4.9 / 6.1 -> 4.7
                     total 36.4 -> 29.2 / 36.2 -> 29.3 (-19%)
    rsc1, 330 days   simulate 86.6 -> 71.4   write 20.1 -> 13.8   total 106.8 -> 85.2 (-20%)
                     peak memory 3,061 -> 2,912 MB
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, os, sys, time
os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
from reliability.sim.run import simulate_cluster
preset, days, seed, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
t0, c0 = time.perf_counter(), time.process_time()
r = simulate_cluster(preset, days=None if days == "-" else float(days), seed=seed)
t1, c1 = time.perf_counter(), time.process_time()
r.write(out)
t2, c2 = time.perf_counter(), time.process_time()
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(out) for f in fs)
print(json.dumps({"jobs": r.jobs.height, "attempts": r.log.frame("attempt").height,
                  "events": r.events_processed, "sim_s": t1 - t0, "write_s": t2 - t1,
                  "sim_cpu_s": c1 - c0, "write_cpu_s": c2 - c1,
                  "hwm_mb": hwm / 1024, "out_mb": size / 1e6, "nodes": r.config.n_nodes,
                  "days": r.config.days}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="rsc1")
    ap.add_argument("--days", default="-", help="override the run length (default: the preset's)")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    env = {**os.environ, "POLARS_MAX_THREADS": "1"}
    with tempfile.TemporaryDirectory() as out:
        res = subprocess.run([sys.executable, "-c", CHILD, args.preset, args.days, str(args.seed), out],
                             check=True, capture_output=True, text=True, env=env)  # fmt: skip
    r = json.loads(res.stdout.strip().splitlines()[-1])
    total = r["sim_s"] + r["write_s"]
    print(
        f"preset {args.preset}: {r['nodes']:,} nodes, {r['days']:g} days, seed {args.seed}, one core"
    )
    print(f"jobs {r['jobs']:,}   attempts {r['attempts']:,}   kernel events {r['events']:,}")
    print(f"simulate {r['sim_s']:.1f} s ({r['events'] / r['sim_s']:,.0f} events/s)   write {r['write_s']:.1f} s "
          f"({r['out_mb']:,.0f} MB)   total {total:.1f} s   (target < 120 s)")  # fmt: skip
    print(f"CPU time: simulate {r['sim_cpu_s']:.1f} s, write {r['write_cpu_s']:.1f} s, total "
          f"{r['sim_cpu_s'] + r['write_cpu_s']:.1f} s (on a shared machine the wall time includes waiting)")  # fmt: skip
    print(f"peak memory {r['hwm_mb']:,.0f} MB   (target < 4096 MB)")


if __name__ == "__main__":
    main()
