"""Peak memory and wall time of reading a fragmented export: the polars floor, read_sacct, Dataset.ingest.

    python benchmarks/bench_ingestmem.py --attempts 1000000 [--nodes 10240] [--start 2023-01-02]
                                         [--work DIR] [--code DIR ...] [--keep]

Writes (once per size, kept in ``--work``) :func:`bench_stages.write_fragmented`'s export
(random placement: a 512-node job's NodeList is hundreds of ranges; sacct, sacctmgr events,
kernel Xid logs), then runs, each in a fresh process so its peak resident memory is its own:

- ``floor``: a bare ``polars.read_csv`` of the sacct file (every field a string);
- ``read_sacct``: :func:`reliability.ingest.read_sacct` of it;
- ``ingest``: :meth:`reliability.Dataset.ingest` of the sacct file, the events and the kernel
  logs into a fresh Dataset (what a user's first ingest costs).

``--code DIR`` runs the package found in DIR (e.g. ``git archive`` of an older commit) instead
of this tree's, for a before / after comparison in one run on the same files (the machine may
be shared: compare within a run; ``--rounds N`` alternates the codes N times). Prints peak RSS
[MiB] (``ru_maxrss`` of the child), wall and CPU time [s] (user + system: less sensitive to a
loaded machine, though two threads count twice), and each against the fastest floor.

Measured (2 shared cores loaded by other sessions, 2026-12-06; before = ``aeb1e74``, after =
this branch, ``--rounds 2`` alternating; wall times are upper bounds, CPU is user + system):

======================  ==============  ===============  ===============  ===============
attempts (nodes), file  stage           peak RSS [MiB]   CPU [s]          wall [s]
                                        before -> after  before -> after  before -> after
======================  ==============  ===============  ===============  ===============
100k (10,000), 43 MiB   floor           195              0.1              0.3
                        read_sacct      456-518 ->       1.0-1.1 ->       2.1-2.9 ->
                                        480-487          1.0-1.1          2.3-4.1
                        Dataset.ingest  464-506 ->       1.9 -> 2.0-2.1   4.4-4.7 ->
                                        496-549                           3.4-5.1
1M (10,240), 435 MiB    floor           1,012-1,016      1.1-1.2          1.0-1.1
                        read_sacct      2,352-2,418 ->   9.8-11.6 ->      11.0-25.7 ->
                                        995-1,025        10.1-10.5        13.2-22.4
                        Dataset.ingest  2,357-2,446 ->   19.8 ->          21.2-22.3 ->
                                        1,079-1,128      17.6-18.2        20.1-20.8
5M (20,480), 2,213 MiB  floor           3,633            -                5.6
                        read_sacct      refused (more than 100M names, both)
                        Dataset.ingest  refused ->       - -> 82.4        - -> 82.8
                                        2,339
======================  ==============  ===============  ===============  ===============

At 5M the node lists hold 144,915,982 host names: read_sacct alone refuses the input (its
budget is 100M; the refusal names the line where it was passed), Dataset.ingest (400M) reads
it below the bare parse's own peak. Against the floor the wall ratio of read_sacct stays far
from issue 39's 3x on these exports (about 9x its CPU time at 1M).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

WRITE = r"""
import json, sys
from datetime import datetime
from pathlib import Path
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/benchmarks"]
from bench_stages import write_fragmented
start = datetime.fromisoformat(sys.argv[5]) if sys.argv[5] else None
nodes = int(sys.argv[4]) if sys.argv[4] != "0" else None
x = write_fragmented(Path(sys.argv[2]), int(sys.argv[3]), 3, n_nodes=nodes, start=start)
print(json.dumps({"sacct": str(x["sacct"]), "events": str(x["events"]),
                  "kernel": [[str(p), y] for p, y in x["kernel"]], "end": x["end"].isoformat(),
                  "n_nodes": x["n_nodes"]}))
"""

CHILD = r"""
import json, resource, shutil, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
method, x, work = sys.argv[2], json.loads(sys.argv[3]), Path(sys.argv[4])
import polars as pl
from reliability import Dataset
from reliability.ingest import read_sacct
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
r0 = resource.getrusage(resource.RUSAGE_SELF)
t = time.perf_counter()
if method == "floor":
    rows = pl.read_csv(x["sacct"], separator="|", infer_schema=False, quote_char=None).height
elif method == "read_sacct":
    r = read_sacct(x["sacct"], tz="UTC")
    rows = sum(f.height for f in r.frames.values())
else:
    ds_path = work / "ds"
    if ds_path.exists():
        shutil.rmtree(ds_path)
    ds = Dataset(ds_path)
    ds.ingest("slurm", [x["sacct"]], tz="UTC", observed_at=x["end"])
    ds.ingest("events", [x["events"]], tz="UTC", observed_at=x["end"])
    for p, year in x["kernel"]:
        ds.ingest("kernel", [p], cluster="bench", tz="UTC", year=year, observed_at=x["end"])
    rows = ds.scan("jobs").select(pl.len()).collect().item()  # (not the table: its strings)
secs = time.perf_counter() - t
r1 = resource.getrusage(resource.RUSAGE_SELF)
cpu = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
peak = r1.ru_maxrss / 1024
print(json.dumps({"secs": secs, "cpu_s": cpu, "peak_mib": peak, "base_mib": base, "rows": rows}))
"""


def _export(work: Path, attempts: int, nodes: int, start: str) -> dict:
    folder = work / f"f-{attempts}-{nodes}"
    meta = folder / "export.json"
    if meta.exists():
        return json.loads(meta.read_text())
    out = subprocess.run(
        [sys.executable, "-c", WRITE, str(ROOT), str(folder / "raw"), str(attempts), str(nodes), start],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    x = json.loads(out.stdout.strip().splitlines()[-1])
    meta.write_text(json.dumps(x))
    return x


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--attempts", type=int, default=100_000)
    ap.add_argument("--nodes", type=int, default=0, help="fleet size (0: the writer's default)")
    ap.add_argument("--start", default="", help="first day of the history (ISO date, UTC)")
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--code", nargs="+", default=[str(ROOT)], help="package roots to compare")
    ap.add_argument("--methods", nargs="+", default=["floor", "read_sacct", "ingest"])
    ap.add_argument("--rounds", type=int, default=1, help="runs of each (code, method), in turn")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench_ingestmem_"))
    work.mkdir(parents=True, exist_ok=True)
    start = datetime.fromisoformat(args.start).replace(tzinfo=UTC).isoformat() if args.start else ""
    x = _export(work, args.attempts, args.nodes, start)
    size = Path(x["sacct"]).stat().st_size / 2**20
    print(f"{args.attempts:,} attempts on {x['n_nodes']:,} nodes: sacct file {size:,.0f} MiB")
    floor = None
    for method in args.methods:
        order = [c for _ in range(args.rounds) for c in args.code]
        for code in ["-"] * args.rounds if method == "floor" else order:
            out = subprocess.run(
                [sys.executable, "-c", CHILD, code if code != "-" else str(ROOT), method,
                 json.dumps(x), str(work)],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if out.returncode:
                print(f"  {method} ({code}) failed:\n{out.stderr[-2000:]}")
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            if method == "floor" and (floor is None or r["secs"] < floor["secs"]):
                floor = r
            ratio = (
                f"  ({r['secs'] / floor['secs']:.1f}x time, {r['peak_mib'] / floor['peak_mib']:.1f}x"
                " memory of the floor)"
                if floor and method != "floor"
                else ""
            )
            print(
                f"  {method:<11} {code:<28} {r['secs']:8.1f} s (CPU {r['cpu_s']:6.1f} s)  peak "
                f"{r['peak_mib']:8,.0f} MiB"
                f" ({r['rows']:,} rows){ratio}",
                flush=True,
            )


if __name__ == "__main__":
    main()
