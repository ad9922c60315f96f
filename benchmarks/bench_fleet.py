"""A fleet of clusters: attribution serial against one cluster per Dask task, time and memory.

    python benchmarks/bench_fleet.py [--clusters 10] [--attempts 1000000] [--workers 1 2]
                                     [--work DIR] [--parts 2] [--no-serial]
                                     [--downstream [--downstream-only]]

Writes one fragmented export (:func:`bench_stages.write_fragmented`: sacct, sacctmgr events,
kernel Xid logs; nothing from ``reliability.sim``) of ``--attempts`` attempts, copies it under
``--clusters`` cluster names (``c0``, ``c1``, ...: the same history on each, so each cluster's
work is the same) and ingests them into one Dataset. Then, each in a fresh process so its peak
resident memory is its own (``getrusage``: the process and, for Dask, its largest worker):

- ``serial``: ``attribute_failures(ds)`` over the whole fleet;
- ``dask-N``: :func:`reliability.analyses.attribute_by_cluster` on a ``LocalCluster`` of N
  worker processes (one cluster per task; with one worker, one cluster's rows at a time).

Each run writes its frame; the Dask frames are checked equal to the serial one. Prints each
run's wall time and peak RSS. The machine may be shared: compare within one run.

With ``--parts N``, a fleet larger than memory: ``parts-N`` runs
:func:`reliability.analyses.write_attributed_by_cluster` on N Dask workers (each task writes
its cluster's part; the caller holds paths), then ``fit_mttf`` and ``failure_rate_series`` on
the scan of the parts (``--reuse-parts``: only the rates, on the parts of the last run);
``--parts-serial`` adds ``parts-serial``, the same tasks one after the
other in one process (the baseline of the speed-up). It is checked against ``one``, a Dataset of cluster ``c0`` alone
attributed serially: every part equals that frame (cluster relabelled, rows by the jobs key),
and the fleet's failures and node-days are ``--clusters`` times the cluster's. ``--no-serial``
skips the whole-fleet serial run (50M attempts do not fit in 24 GiB).

With ``--downstream`` (and ``--parts N``; ``--downstream-only``: on the parts of the last run),
the stages after attribution from the parts: ``ettr_by_cluster`` and ``features_by_cluster``
one cluster after the other, then on N Dask workers, and ``node_health`` on the streaming
engine; every runs and features part equal on both, the first and last equal to cluster c0's
computed alone (relabelled), the counts ``--clusters`` times c0's. Measured (2026-12-07): see
the CHANGELOG entry "A fleet's whole analysis and report from its parts".

Measured: see the CHANGELOG entries "A fleet of clusters on Dask (issue 39)" and "A fleet
larger than memory, part by part (issue 39)" (2026-12-06): 50 clusters of 1M attempts,
``--parts 2 --parts-serial --no-serial``: 648 s serial, 684 s on two workers, caller 349 MiB.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CHILD = r"""
import json, resource, sys, time
sys.path[:0] = [sys.argv[1]]
from reliability import Dataset
mode, ds_path, out = sys.argv[2], sys.argv[3], sys.argv[4]
ds = Dataset(ds_path)
t = time.perf_counter()
if mode == "serial":
    from reliability.attribution import attribute_failures
    frame = attribute_failures(ds)
else:
    from reliability.analyses import attribute_by_cluster
    from reliability.parallel import Executor
    with Executor("dask", workers=int(mode.split("-")[1])) as ex:
        t = time.perf_counter()  # (workers started)
        frame = attribute_by_cluster(ds, ex)
secs = time.perf_counter() - t
frame.write_parquet(out)
own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"secs": secs, "rows": frame.height, "self_mib": own / 1024,
                  "child_mib": kids / 1024}))
"""

PARTS = r"""
import json, resource, sys, time
sys.path[:0] = [sys.argv[1]]
import polars as pl
from reliability import Dataset
from reliability.models.failures import failure_rate_series, fit_mttf
mode, ds_path, out = sys.argv[2], sys.argv[3], sys.argv[4]
ds = Dataset(ds_path)
end = ds.observation_end
def mib(who):
    return resource.getrusage(who).ru_maxrss / 1024
t = time.perf_counter()
if mode == "one":
    from reliability.attribution import attribute_failures
    source = attribute_failures(ds)
    source.write_parquet(out)
    rows = source.height
elif mode == "rates":  # the parts an earlier run wrote (--reuse-parts; a fleet: merged,
    # so the parts carry no __order to sort by); "attribution" is then the row count only
    from pathlib import Path
    source = pl.scan_parquet(sorted(Path(out).glob("attributed-*.parquet")))
    rows = source.select(pl.len()).collect().item()
else:
    from reliability.analyses import write_attributed_by_cluster
    from reliability.parallel import Executor
    how = mode.split("-")[1]
    ex = Executor("serial") if how == "serial" else Executor("dask", workers=int(how))
    with ex:
        t = time.perf_counter()  # (workers started)
        source = write_attributed_by_cluster(ds, ex, out)
    rows = source.select(pl.len()).collect().item()
secs = time.perf_counter() - t
attr_mib = mib(resource.RUSAGE_SELF)
t = time.perf_counter()
m = fit_mttf(source, observation_end=end)
r = failure_rate_series(source, observation_end=end)
print(json.dumps({"secs": secs, "rows": rows, "model_secs": time.perf_counter() - t,
                  "attr_mib": attr_mib, "self_mib": mib(resource.RUSAGE_SELF),
                  "child_mib": mib(resource.RUSAGE_CHILDREN),
                  "failures": m.rate_.failures, "node_days": m.rate_.exposure,
                  "weeks_failures": int(r.series["failures"].sum()),
                  "weeks_node_days": float(r.series["node_days"].sum())}))
"""

DOWN = r"""
import json, resource, sys, time
sys.path[:0] = [sys.argv[1]]
import polars as pl
from pathlib import Path
from reliability import Dataset
from reliability.analyses import ettr_by_cluster, features_by_cluster
from reliability.models.nodes import node_health
from reliability.parallel import Executor
mode, ds_path, parts = sys.argv[2], sys.argv[3], Path(sys.argv[4])
out = parts.parent / f"down_{mode}"
ds = Dataset(ds_path)
how = mode.split("-")[1]
secs = {}
with Executor("serial") if how == "serial" else Executor("dask", workers=int(how)) as ex:
    t = time.perf_counter()
    e = ettr_by_cluster(ds, ex, parts, out / "runs")
    s = e.summary  # (aggregated over the runs' parts, here)
    secs["ettr"] = time.perf_counter() - t
    t = time.perf_counter()
    f = features_by_cluster(ds, ex, parts, out / "features")
    rows = f.select(pl.len()).collect().item()
    secs["features"] = time.perf_counter() - t
h = None
if how == "serial":  # (on the streaming engine here, not on the executor: once)
    t = time.perf_counter()
    scan = pl.scan_parquet(sorted(parts.glob("attributed-*.parquet")))
    h = node_health(ds, attributed=scan, jobs=scan)
    secs["health"] = time.perf_counter() - t
print(json.dumps({"secs": secs, "self_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "child_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
                  "runs": s["runs"].item(), "ettr_by_run": s["ettr_by_run"].item(),
                  "feature_rows": rows, "notes": e.notes,
                  **({} if h is None else {"nodes": h.n_nodes, "offenders": h.offenders.height,
                                          "availability": h.fleet_availability})}))
"""


def _relabel(src: Path, dst: Path, cluster: str, column: int) -> None:
    """Copy a ``|``-separated file with field ``column`` of every data line set to ``cluster``."""
    pat = re.compile(rf"^((?:[^|\n]*\|){{{column}}})[^|\n]*", re.M)
    head, _, body = src.read_text().partition("\n")
    dst.write_text(head + "\n" + pat.sub(lambda m: m.group(1) + cluster, body))


def build(work: Path, clusters: int, attempts: int, seed: int) -> Path:
    """The fleet Dataset (built the first time)."""
    sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(HERE)]
    from bench_stages import write_fragmented

    from reliability import Dataset

    ds_path = work / f"fleet_{clusters}x{attempts}_{seed}"
    if (ds_path / ".built").exists():
        return ds_path
    raw = work / f"raw_{attempts}_{seed}"
    info_path = raw / "export.json"
    if not info_path.exists():
        info = write_fragmented(raw, attempts, seed)
        info_path.write_text(json.dumps({"kernel": [[str(p), y] for p, y in info["kernel"]]}))
    kernel = json.loads(info_path.read_text())["kernel"]
    ds = Dataset(ds_path)
    for i in range(clusters):
        name = f"c{i}"
        folder = work / "fleet_raw" / name
        folder.mkdir(parents=True, exist_ok=True)
        _relabel(raw / "sacct.psv", folder / "sacct.psv", name, 3)  # JobID|JobName|JobIDRaw|Cluster
        _relabel(raw / "sacctmgr_events.psv", folder / "events.psv", name, 0)
        t = time.perf_counter()
        ds.ingest("slurm", folder / "sacct.psv", tz="UTC")
        ds.ingest("events", folder / "events.psv", tz="UTC")
        for path, year in kernel:  # (a copy of its own: the Dataset reads the same bytes once)
            own = folder / Path(path).name
            text = Path(path).read_text()
            stamp = text[:15]  # the first line's time, on a line of this cluster's own
            own.write_text(f"{stamp} {name}-head kernel: [0.0] fleet copy {name}\n{text}")
            ds.ingest("kernel", own, cluster=name, tz="UTC", year=year)
        (folder / "sacct.psv").unlink()  # (the Dataset holds it now)
        print(f"  {name} ingested in {time.perf_counter() - t:.1f} s", flush=True)
    (ds_path / ".built").write_text("")
    return ds_path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clusters", type=int, default=10)
    ap.add_argument("--attempts", type=int, default=1_000_000, help="attempts per cluster")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--parts", type=int, default=None,
                    help="also write the parts on this many Dask workers and fit the rates")  # fmt: skip
    ap.add_argument("--no-serial", action="store_true", help="skip the whole-fleet serial run")
    ap.add_argument("--parts-serial", action="store_true",
                    help="with --parts: also write the parts one cluster after the other here")  # fmt: skip
    ap.add_argument("--reuse-parts", action="store_true",
                    help="with --parts: fit the rates on the parts of the work folder's last run")  # fmt: skip
    ap.add_argument("--reuse-serial", action="store_true",
                    help="take the serial frame and figures from the work folder's last run")  # fmt: skip
    ap.add_argument("--downstream", action="store_true",
                    help="with --parts: then run ETTR, lemon features and node health on the parts")  # fmt: skip
    ap.add_argument("--downstream-only", action="store_true",
                    help="with --downstream: on the parts of the last run, nothing before")  # fmt: skip
    args = ap.parse_args()
    if args.downstream and not args.parts:
        ap.error("--downstream needs --parts N (the parts it reads, and its Dask workers)")
    if args.reuse_parts and not args.parts:
        ap.error("--reuse-parts needs --parts N (the folder parts_N of the last run)")
    work = args.work or Path(tempfile.mkdtemp(prefix="bench_fleet_"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"work folder {work}")
    ds_path = build(work, args.clusters, args.attempts, args.seed)
    runs: dict[str, dict] = {}
    if args.parts and not args.downstream_only:
        parts(work, ds_path, args)
    if args.downstream:
        downstream(work, ds_path, args)
    if args.no_serial:
        return
    for mode in ["serial", *(f"dask-{w}" for w in args.workers)]:
        out = work / f"attributed_{mode}.parquet"
        figures = work / f"attributed_{mode}.json"
        if mode == "serial" and args.reuse_serial and figures.exists():
            runs[mode] = json.loads(figures.read_text())
        else:
            res = subprocess.run([sys.executable, "-c", CHILD, str(ROOT), mode, str(ds_path),
                                  str(out)], check=True, capture_output=True, text=True)  # fmt: skip
            runs[mode] = json.loads(res.stdout.strip().splitlines()[-1])
            figures.write_text(json.dumps(runs[mode]))
        r = runs[mode]
        peak = max(r["self_mib"], r["child_mib"])
        print(f"  {mode:8s} {r['secs']:7.1f} s  {r['rows']:,} attempts  peak RSS {peak:,.0f} MiB "
              f"(process {r['self_mib']:,.0f}, largest child {r['child_mib']:,.0f})", flush=True)  # fmt: skip
    import polars as pl
    from polars.testing import assert_frame_equal

    ref = pl.read_parquet(work / "attributed_serial.parquet")
    for mode in runs:
        if mode != "serial":
            assert_frame_equal(pl.read_parquet(work / f"attributed_{mode}.parquet"), ref)
    s = runs["serial"]["secs"]
    print(f"{args.clusters} clusters x {args.attempts:,} attempts: Dask frames equal to the serial "
          "one; speed-up " + ", ".join(f"{m} x{s / r['secs']:.2f}" for m, r in runs.items()
                                        if m != "serial"))  # fmt: skip


def _child(script: str, mode: str, ds_path: Path, out: Path) -> dict:
    res = subprocess.run([sys.executable, "-c", script, str(ROOT), mode, str(ds_path), str(out)],
                         check=True, capture_output=True, text=True)  # fmt: skip
    return json.loads(res.stdout.strip().splitlines()[-1])


def parts(work: Path, ds_path: Path, args: argparse.Namespace) -> None:
    """``one`` (cluster c0 alone, serial) and ``parts-N`` (the fleet, parts on disk), checked."""
    import polars as pl
    from polars.testing import assert_frame_equal

    from reliability.schema import TABLES

    one_path = build(work, 1, args.attempts, args.seed)
    ref_out, folder = work / "attributed_one.parquet", work / f"parts_{args.parts}"
    runs = {"one": _child(PARTS, "one", one_path, ref_out)}
    if args.parts_serial:  # the same tasks one after the other in this process: the baseline
        runs["parts-serial"] = _child(PARTS, "parts-serial", ds_path, work / "parts_serial")
    if args.reuse_parts and not any(folder.glob("attributed-*.parquet")):
        raise SystemExit(f"--reuse-parts: no parts in {folder} (run --parts {args.parts} first)")
    mode = "rates" if args.reuse_parts else f"parts-{args.parts}"
    runs[f"parts-{args.parts}"] = _child(PARTS, mode, ds_path, folder)
    for mode, r in runs.items():
        print(f"  {mode:8s} attribution {r['secs']:7.1f} s (caller peak {r['attr_mib']:,.0f} MiB), "
              f"rates {r['model_secs']:6.1f} s; {r['rows']:,} attempts; peak RSS: caller "
              f"{r['self_mib']:,.0f} MiB, largest child {r['child_mib']:,.0f} MiB; "
              f"{r['failures']:,} failures over {r['node_days']:,.1f} node-days", flush=True)  # fmt: skip
    one, fleet = runs["one"], runs[f"parts-{args.parts}"]
    k = args.clusters
    assert fleet["rows"] == k * one["rows"], (fleet["rows"], one["rows"])
    assert fleet["failures"] == k * one["failures"] == fleet["weeks_failures"]
    if "parts-serial" in runs:
        here = runs["parts-serial"]
        assert (here["rows"], here["failures"], here["node_days"]) == (
            fleet["rows"], fleet["failures"], fleet["node_days"])  # fmt: skip
        print(f"  parts-{args.parts} against parts-serial: x{here['secs'] / fleet['secs']:.2f}")
    assert abs(fleet["node_days"] - k * one["node_days"]) <= 1e-9 * fleet["node_days"]
    assert abs(fleet["weeks_node_days"] - fleet["node_days"]) <= 1e-9 * fleet["node_days"]
    key = list(TABLES["jobs"].key)
    ref = pl.read_parquet(ref_out)
    ref = ref.sort(key)
    t = time.perf_counter()
    seen = []
    for part in sorted(folder.glob("attributed-*.parquet")):
        got = pl.read_parquet(part)
        [name] = got.get_column("cluster").unique().to_list()
        seen.append(name)
        want = ref.with_columns(pl.lit(name).cast(ref.schema["cluster"]).alias("cluster"))
        assert_frame_equal(got.sort(key), want)
    assert sorted(seen) == sorted(f"c{i}" for i in range(k)), seen
    print(f"{k} parts equal cluster c0 attributed alone (relabelled), checked in "
          f"{time.perf_counter() - t:.0f} s; fleet failures and node-days = {k} x c0's")  # fmt: skip


def downstream(work: Path, ds_path: Path, args: argparse.Namespace) -> None:
    """ETTR and lemon features one cluster per task (serial, then on ``--parts`` Dask
    workers) and node health on the streaming engine, from the parts; checked against each
    other and against cluster c0 alone."""
    import polars as pl
    from polars.testing import assert_frame_equal

    from reliability import Dataset
    from reliability.models.nodes import node_features, node_health
    from reliability.models.recovery import job_run_ettr

    folder = work / f"parts_{args.parts}"
    runs = {}
    for mode in ("down-serial", f"down-{args.parts}"):
        r = runs[mode] = _child(DOWN, mode, ds_path, folder)
        took = ", ".join(f"{k} {v:.1f} s" for k, v in r["secs"].items())
        print(f"  {mode:11s} {took}; peak RSS: caller {r['self_mib']:,.0f} MiB, largest child "
              f"{r['child_mib']:,.0f} MiB; {r['runs']:,} runs, ETTR {r['ettr_by_run']:.4f} by "
              f"run, {r['feature_rows']:,} feature rows", flush=True)  # fmt: skip
    a, b = (work / f"down_{m}" for m in runs)
    for kind in ("runs", "features"):
        for x in sorted((a / kind).glob("*.parquet")):
            assert_frame_equal(pl.read_parquet(b / kind / x.name), pl.read_parquet(x))
    k = args.clusters
    ser = runs["down-serial"]
    one_ds = Dataset(build(work, 1, args.attempts, args.seed))
    end = Dataset(ds_path).observation_end
    one = pl.read_parquet(work / "attributed_one.parquet")
    want_runs = job_run_ettr(one, observation_end=end).runs
    want_f = node_features(
        {"jobs": one, "health_events": one_ds.health_events, "node_states": one_ds.node_states},
        observation_end=end,
    )
    h1 = node_health(one_ds, attributed=one, jobs=one)
    assert ser["runs"] == k * want_runs.height
    assert ser["feature_rows"] == k * want_f.height
    assert (ser["nodes"], ser["offenders"]) == (k * h1.n_nodes, k * h1.offenders.height)
    names = sorted(f"c{i}" for i in range(k))  # (the parts' order: the clusters sorted)
    for i in (0, k - 1):
        name = names[i]
        for kind, want in (("runs", want_runs), ("features", want_f)):
            got = pl.read_parquet(a / kind / f"{kind}-{i:05d}.parquet")
            assert_frame_equal(got, want.with_columns(pl.lit(name).alias("cluster")))
    print(f"runs and features parts equal on both executors and, for {names[0]} and {names[-1]}, equal "
          f"cluster c0's alone (relabelled); {k} x its runs, feature rows, nodes and offenders; "
          f"speed-up x{sum(ser['secs'][s] for s in ('ettr', 'features')) / sum(runs[f'down-{args.parts}']['secs'].values()):.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
