"""The whole pipeline on a fragmented export: every stage's time, its growth, and peak memory.

    python benchmarks/bench_pipeline.py [--sizes 10000 100000] [--million] [--work DIR]
    python benchmarks/bench_pipeline.py --sizes 5000000 --nodes 20480 --start 2023-01-02T00:00:00+00:00 \
        --work DIR [--reuse]

Each size is :func:`bench_stages.write_fragmented`'s export (random placement: a 512-node job's
NodeList is hundreds of ranges; sacct, sacctmgr events, kernel Xid logs; nothing from
``reliability.sim``), run through a pipeline file the way a user runs their own cluster
(``pipelines/slurm-export.toml``'s shape: ingest, attribution, MTTF, rates, workload, node
health, ETTR, the planner, signals, lemons, fleets, component lifetimes, report), each size in
a fresh process so its peak resident memory is its own (the export is written by another
process; ``--reuse`` runs the pipeline again on a work folder's export of the same size).

It prints per size: each stage's wall time, the total, the growth per 10x of data, the bare
``polars.read_csv`` parse of the same sacct file measured in the same process (the floor the
ingest ratio is against), and the peak RSS. The machine may be shared: compare ratios within
a run.

Measured (2 shared cores, one run; 2026-12-05, after the signal stage's fixes):

===================  ==========  ===========  ============  ====================
attempts (nodes)     pipeline    peak RSS     sacct floor   slowest stages
===================  ==========  ===========  ============  ====================
10,000 (1,024)       7.2 s       445 MiB      0.01 s        report 4.8 s
100,000 (10,000)     12.4 s      1,190 MiB    0.10 s        report 5.4, ingest 2.4
1,000,000 (10,240)   76.0 s      8,078 MiB    0.81 s        signals 18.1, ingest 17.8,
                                                            report 11.8, attribution 8.3
===================  ==========  ===========  ============  ====================

Growth per 10x from 100k to 1M: ingest x7.5, attribution x7.7, mttf x10.0, workload x9.6,
node_health x12.7, ettr x12.8, signals x12.1, lemon x8.6 (background stages' peak: 2.1 GiB at
1M). With categorical node names in the signal stage (a later run): 1M in 70.0 s, peak RSS
6,416 MiB (after ingest 4.2 GiB, node_health 4.7, signals 6.4). Before the signal fixes the 1M run was killed by the kernel at 24 GiB (signals joined
every event with every run of its node); with the first fix it took 109 s (signals 61 s).

Issue 39's memory work (same day, 1M attempts, machine loaded by another session): peak RSS
6,316 -> 5,951 MiB (after cluster_data 4,043 -> 3,017 MiB; the signal stage no longer raises
the peak), pipeline 107 -> 125 s wall on the loaded machine. The peak is now the lemon stage's
(5,951 MiB: node_features attributes the Dataset again), then node_health (4,684 MiB).

Issue 39's stage memory (2026-12-06, 1M attempts on 10,240 nodes, the machine shared with three
other jobs at load 5-14 on 2 cores: wall times vary 2-4x between runs of the same code; two runs
each, before = aeb1e74): peak RSS 5,948 / 5,982 -> 3,652 / 3,622 MiB. Before, the lemon stage
raised the peak by about 2,100 MiB (it read the whole jobs table and exploded every host list)
and mttf by about 650 MiB; after, no stage between attribution and signals raises it, and the
peak is the signal stage's (+400-500 MiB over attribution's) and ingest's. Stage times that
moved beyond the noise: lemon 34.0 / 8.9 -> 4.3 / 6.0 s, mttf 9.1 / 2.9 -> 1.1 / 1.2 s, plan
3.0 / 3.4 -> 0.5 / 2.5 s; on the 1M attributed attempts alone (one process, same load), ETTR
33 -> 15-21 s and +1,600 -> +440 MiB, the secondary-preemption match 6.9 -> 2.9 s and
+1,550 -> +240 MiB. Whole pipeline 262 / 115 s before, 214 / 216 s after: the load, not the
code (attribution, unchanged, took 16-57 s across the four runs).

After the merges of 2026-12-06 (ingest per batch with compact node lists, stage memory), the
machine otherwise idle, one run:

===================  ==========  ===========  ============  ====================
attempts (nodes)     pipeline    peak RSS     sacct floor   slowest stages
===================  ==========  ===========  ============  ====================
10,000 (1,024)       8.8 s       425 MiB      0.02 s        report 5.9 s
100,000 (10,000)     13.4 s      1,027 MiB    0.07 s        report 7.0, ingest 2.3
1,000,000 (10,240)   52.3 s      3,437 MiB    0.66 s        ingest 16.2, signals 9.9,
                                                            attribution 8.6, report 7.2
===================  ==========  ===========  ============  ====================

Growth per 10x from 100k to 1M: ingest x6.9, attribution x7.2, mttf x5.5, rates x7.6, workload
x9.5, node_health x3.4, ettr x9.1, plan x2.1, signals x8.0, lemon x3.5, fleets x9.1 (every stage
within x12). Peak after ingest 1,657 MiB, after attribution 3,078, after signals 3,437.

Later the same day (5M within 8 GiB; the export now written by a process of its own, so the
figures are the pipeline's alone; the machine otherwise idle, one run each):

===================  ==========  ===========  ============  ====================
attempts (nodes)     pipeline    peak RSS     sacct floor   slowest stages
===================  ==========  ===========  ============  ====================
10,000 (1,024)       6.7 s       428 MiB      0.01 s        report 4.6 s
100,000 (10,000)     9.9 s       1,030 MiB    0.15 s        report 4.9, ingest 1.9
1,000,000 (10,240)   40.1 s      2,560 MiB    0.99 s        ingest 13.6, signals 8.1,
                                                            attribution 6.6, report 5.4
5,000,000 (20,480)   186.8 s     7,138 MiB    8.23 s        ingest 60.9, signals 45.0,
                                                            attribution 39.1, workload 10.2
===================  ==========  ===========  ============  ====================

After the node-list changes of the next session (2026-12-06, dc17a90 and later; machine
otherwise idle, one run each; ``--sizes 100000 1000000``, then the 5M command above):

===================  ==========  ===========  ============  ====================
attempts (nodes)     pipeline    peak RSS     sacct floor   slowest stages
===================  ==========  ===========  ============  ====================
100,000 (10,000)     11.7 s      987 MiB      0.07 s        report 6.3, ingest 2.1
1,000,000 (10,240)   40.0 s      2,791 MiB    0.57 s        ingest 13.7, signals 7.1,
                                                            attribution 6.7, report 6.6
5,000,000 (20,480)   180.9 s     7,368 MiB    5.08 s        ingest 60.3, signals 39.3,
                                                            attribution 38.8, workload 10.5
===================  ==========  ===========  ============  ====================

Growth per 10x from 100k to 1M: every stage within x9.0 (ettr x9.0, workload x6.8, ingest x6.5,
signals x7.6, attribution x5.6). At 5M the peak is the signal stage's (after attribution 5,970
MiB, workload 7,066). These exports have no job steps, so the node lists are read row by row
as before.

At 5M (``--nodes 20480 --start 2023-01-02T00:00:00+00:00``) the same day's code before: 327 s,
peak 14,418 MiB (attribution +6 GiB, rates +0.8, signals +2.5). Growth per 10x from 100k to 1M:
every stage within x10.8 (ettr x10.8, workload x9.2, signals x8.3, ingest x7.1, attribution x6.5).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/tests", sys.argv[1] + "/benchmarks"]
import polars as pl
from bench_stages import write_fragmented
from reliability.pipeline import run_pipeline

from datetime import datetime
work, attempts, seed = Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
n_nodes = int(sys.argv[5]) or None
start = datetime.fromisoformat(sys.argv[6]) if sys.argv[6] else None
saved = work / "export.json"
if sys.argv[7] == "write":  # (a process of its own: its memory is not the pipeline's)
    t = time.perf_counter()
    x = write_fragmented(work / "raw", attempts, seed, n_nodes=n_nodes, start=start)
    gen = time.perf_counter() - t
    t = time.perf_counter()
    pl.read_csv(x["sacct"], separator="|", infer_schema=False, quote_char=None)
    floor = time.perf_counter() - t
    saved.write_text(json.dumps({"x": {**x, "sacct": str(x["sacct"]), "events": str(x["events"]),
                                       "kernel": [[str(p), y] for p, y in x["kernel"]]},
                                 "key": sys.argv[3:7], "floor": floor, "gen": gen}, default=str))
    print(json.dumps({"floor": floor, "gen": gen}))
    sys.exit(0)
x = json.loads(saved.read_text())["x"]
x["sacct"], x["events"] = Path(x["sacct"]), Path(x["events"])
kernel = {}
for p, year in x["kernel"]:
    kernel.setdefault(year, []).append(str(p))
toml = [
    '[pipeline]', 'name = "bench"', f'out = "{work / "out"}"',
    '[[inputs]]', 'kind = "files"', 'reader = "slurm"', f'paths = ["{x["sacct"]}"]', 'tz = "UTC"',
    '[[inputs]]', 'kind = "files"', 'reader = "events"', f'paths = ["{x["events"]}"]', 'tz = "UTC"',
]
for year, paths in sorted(kernel.items()):
    toml += ['[[inputs]]', 'kind = "files"', 'reader = "kernel"', f'paths = {json.dumps(paths)}',
             'cluster = "bench"', 'tz = "UTC"', f'options = {{ year = {year} }}']
toml += ['[analysis]', 'min_gpus = 129']
(work / "p.toml").write_text("\n".join(toml) + "\n")
import shutil
shutil.rmtree(work / "out", ignore_errors=True)  # (a fresh run, not the cache of the last)
lines, peaks = [], []
def progress(line):
    lines.append(line)
    peaks.append(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
t = time.perf_counter()
run_pipeline(work / "p.toml", progress=progress)
total = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"lines": lines, "peaks": peaks, "total": total,
                  "rss_mib": rss, "children_rss_mib": kids, "n_nodes": x["n_nodes"],
                  "sacct_mib": x["sacct"].stat().st_size / 2**20}))
"""

_STAGE = re.compile(r"\] (\S+)\s+(?:ran|cached|wrote)\D*?([\d.]+) s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--million", action="store_true", help="add 1,000,000 attempts")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--nodes", type=int, default=0, help="fleet size (default: by the size)")
    ap.add_argument(
        "--start", default="", help="history start, ISO 8601 (a long history ends after today)"
    )
    ap.add_argument(
        "--reuse", action="store_true", help="reuse the work folder's export of the same size"
    )
    args = ap.parse_args()
    sizes = sorted({*args.sizes, *([1_000_000] if args.million else [])})
    work = args.work or Path(tempfile.mkdtemp(prefix="bench_pipeline_"))
    print(f"work folder {work}")
    runs = {}
    for n in sizes:
        folder = work / f"p-{n}"
        folder.mkdir(parents=True, exist_ok=True)
        r = {}
        saved = folder / "export.json"
        key = [str(n), str(args.seed), str(args.nodes), args.start]
        if args.reuse and saved.exists() and json.loads(saved.read_text())["key"] == key:
            r.update({k: json.loads(saved.read_text())[k] for k in ("floor", "gen")})
            steps = ("run",)
        else:
            steps = ("write", "run")
        for step in steps:  # the export (and the floor), then the pipeline alone
            out = subprocess.run(
                [sys.executable, "-c", CHILD, str(ROOT), str(folder), str(n), str(args.seed),
                 str(args.nodes), args.start, step],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if out.returncode:
                sys.exit(f"{n:,} attempts failed:\n{out.stderr[-3000:]}")
            r.update(json.loads(out.stdout.strip().splitlines()[-1]))
        r["stages"] = {
            m.group(1): float(m.group(2)) for ln in r["lines"] if (m := _STAGE.search(ln))
        }
        # the process's peak RSS after each stage: where the memory goes
        r["peak_after"] = {
            m.group(1): p
            for ln, p in zip(r["lines"], r["peaks"], strict=True)
            if (m := _STAGE.search(ln))
        }
        runs[n] = r
        print(
            f"{n:>10,} attempts on {r['n_nodes']:,} nodes ({r['sacct_mib']:.0f} MiB sacct): pipeline "
            f"{r['total']:.1f} s, sacct floor {r['floor']:.2f} s, peak RSS {r['rss_mib']:,.0f} MiB "
            f"(background stages {r['children_rss_mib']:,.0f} MiB)"
        )
        if r["floor"] > 0 and "cluster_data" in r["stages"]:
            # (cluster_data reads every input, sacct events and kernel logs too, into the Dataset)
            print(
                f"{'':>10} ingest of every input x{r['stages']['cluster_data'] / r['floor']:.1f} "
                "the bare polars parse of the sacct file"
            )
    names = list(dict.fromkeys(s for r in runs.values() for s in r["stages"]))
    big = runs[sizes[-1]]
    print(f"\npeak RSS after each stage at {sizes[-1]:,} attempts [MiB]:")
    print(
        "  "
        + ", ".join(f"{s} {big['peak_after'][s]:,.0f}" for s in names if s in big["peak_after"])
    )
    head = f"{'stage':<16}" + "".join(f"{n:>14,}" for n in sizes) + "   growth per 10x"
    print("\n" + head)
    for s in [*names, "total"]:
        vals = [runs[n]["total"] if s == "total" else runs[n]["stages"].get(s) for n in sizes]
        cells = "".join(f"{v:>13.2f}s" if v is not None else f"{'-':>14}" for v in vals)
        growth = []
        pairs = list(zip(sizes, vals, strict=True))
        for (a, va), (b, vb) in itertools.pairwise(pairs):
            if va and vb and va > 0.05:
                growth.append(f"x{(vb / va) ** (1 / math.log10(b / a)):.1f}")
        print(f"{s:<16}{cells}   {' '.join(growth)}")


if __name__ == "__main__":
    main()
