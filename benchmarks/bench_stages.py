"""Per-stage scaling on fragmented exports: attribution, lemon node features and MTTF.

    python benchmarks/bench_stages.py [--sizes 10000 100000] [--million] [--days 35]
                                      [--baseline COMMIT] [--repeat 1] [--work DIR]

Each size is a history of the independent generator B (``tests/generators``: random placement
on rack-named nodes, so a multi-node job's NodeList is long and fragmented, with node-state
events and kernel Xid logs), written as a real export (sacct, sacctmgr events, kernel logs) and
ingested into a :class:`reliability.Dataset`; the cluster grows with the size (about 0.73
attempts per node-day: 10k attempts on ~390 nodes, 100k on ~3,900, 1M on ~39,000 over 35 days).
Nothing here imports ``reliability.sim``.

For each size it prints the wall time of ``attribute_failures(ds)``, ``node_features`` (on the
attributed jobs, so attribution is not counted twice), ``fit_mttf`` (on the attributed jobs),
and the growth per 10x of data (time ratio scaled to a 10x step in attempts). With
``--baseline COMMIT`` the two stages are also timed with the code of ``attribution.py`` and
``models/lemon_features.py`` at that commit, back to back with the working tree's (the machine
may be shared: compare ratios in one run, not runs), and their outputs are checked equal.

Measured with ``--million --baseline adcbd42`` (2 shared cores, loaded: one run each; the
attribution difference is within the noise at 1M, an earlier A/B gave x1.14-x1.25):

==================  ==================  ==================  ==================  ============
attempts (nodes)    attribution before  attribution after   node_features       fit_mttf
                                                            before -> after
==================  ==================  ==================  ==================  ============
10,000 (1,024)      0.11 s              0.10 s              0.14 -> 0.09 s      0.03 s
100,000 (10,000)    1.20 s (x10.5)      1.16 s (x11.1)      2.25 -> 0.89 s      0.24 s (x7.1)
1,000,000 (10,240)  9.12 s (x7.6)       11.03 s (x9.5)      28.2 -> 10.6 s      2.77 s (x11.6)
==================  ==================  ==================  ==================  ============

(growth per 10x in brackets; node_features x16.0 / x12.5 per 10x before, x9.9 / x12.0 after)
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import time
import types
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # this tree's package, not an installed one

#: attempts per node-day of generator B at its default load (measured)
ATTEMPTS_PER_NODE_DAY = 0.73


def _load_at(commit: str, path: str, name: str, **inject) -> types.ModuleType:
    """Load one module of the package as it was at ``commit`` (other modules: the working tree's)."""
    src = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{commit}:{path}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    mod = types.ModuleType(name)
    mod.__file__ = f"{commit}:{path}"
    sys.modules[name] = mod
    exec(compile(src, mod.__file__, "exec"), mod.__dict__)
    mod.__dict__.update(inject)
    return mod


def _timed(repeat: int, fn, *args, **kwargs):
    best, out = math.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn(*args, **kwargs)
        best = min(best, time.perf_counter() - t)
    return best, out


def _history(work: Path, target: int, days: float, seed: int):
    from generators import generate_b

    from reliability import Dataset

    n_nodes = max(64, round(target / (ATTEMPTS_PER_NODE_DAY * days)))
    folder = work / f"b-{target}"
    t = time.perf_counter()
    h = generate_b(folder / "raw", seed=seed, n_nodes=n_nodes, days=days)
    gen = time.perf_counter() - t
    ds_path = folder / "ds"
    if ds_path.exists():
        import shutil

        shutil.rmtree(ds_path)
    ds = Dataset(ds_path)
    t = time.perf_counter()
    h.ingest(ds)
    ing = time.perf_counter() - t
    return h, ds, n_nodes, gen, ing


RACK = 32
#: (share, node counts) of the job sizes: most jobs small, a tail of very large ones
SIZES = ((0.55, (1,)), (0.25, (2, 3, 4, 6, 8, 12, 16)), (0.15, (24, 32, 48, 64, 96, 128)),
         (0.05, (192, 256, 384, 512)))  # fmt: skip
STATES = (("COMPLETED", 0.78), ("FAILED", 0.12), ("CANCELLED", 0.03), ("TIMEOUT", 0.02),
          ("NODE_FAIL", 0.02), ("REQUEUED", 0.01), ("OUT_OF_MEMORY", 0.02))  # fmt: skip
XID_CRIT = ((79, "GPU has fallen off the bus."), (48, "An uncorrectable double bit error (DBE) has been detected on GPU"),
            (74, "NVLink: fatal error detected on link 3"), (94, "Contained ECC error."))  # fmt: skip
XID_WARN = ((63, "Row remapping event"), (92, "High single-bit ECC error rate"))
XID_APP = ((13, "Graphics SM Warp Exception on (GPC 3, TPC 1, SM 0): Out Of Range Address"),
           (31, "Ch 00000010, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted"))  # fmt: skip


def write_fragmented(
    folder: Path,
    attempts: int,
    seed: int,
    *,
    n_nodes: int | None = None,
    start: datetime | None = None,
) -> dict:
    """Write a fragmented export: sacct, sacctmgr events and kernel logs (UTC times).

    ``attempts`` attempts (about 10 per node, 1,024 to 10,240 nodes named ``r<rack>n<slot>``
    unless ``n_nodes`` is given, the history lengthening beyond that: 56 days per 10 attempts
    per node, from ``start``, default 2025-01-06 UTC) of jobs placed at random on the fleet (a 512-node job's
    NodeList is hundreds of ranges), with the node-state changes and Xids of their failures:
    a DOWN at every NODE_FAIL, a health-check DRAIN at a fifth of the FAILED ends (with a
    critical Xid before a third of them), a DRAIN at every REQUEUED end, Epilog-error drains,
    administrators' drains, hardware warnings and application Xids in the background.

    A long history on a small fleet ends after today unless it starts earlier: 5M attempts on
    20,480 nodes span about 3.7 years (``start=datetime(2023, 1, 2, tzinfo=UTC)`` ends in
    2026). The sacct file is written a batch of lines at a time (5M attempts: about 2.3 GB).

    Returns
    -------
    dict
        ``sacct``, ``events``, ``kernel`` (list of (path, year)), ``end``, ``n_nodes``, ``days``.
    """
    import numpy as np

    from reliability.hostlist import compress

    rng = np.random.default_rng(seed)
    if n_nodes is None:
        n_nodes = min(10_240, max(1_024, attempts // 10))
    days = 56.0 * attempts / (10 * n_nodes)
    t0 = start if start is not None else datetime(2025, 1, 6, tzinfo=UTC)
    span = days * 86400.0
    names = np.array([f"r{i // RACK + 1:03d}n{i % RACK + 1:02d}" for i in range(n_nodes)])
    share = np.array([s for s, _ in SIZES])
    kind = rng.choice(len(SIZES), attempts, p=share / share.sum())
    size = np.array([SIZES[k][1][rng.integers(len(SIZES[k][1]))] for k in kind])
    size = np.minimum(size, n_nodes)
    dur = np.clip(rng.lognormal(np.log(3 * 3600), 1.2, attempts), 60, 3 * 86400)
    start = np.sort(rng.uniform(0, span - 3600, attempts))
    end = np.minimum(start + dur, span - 1)
    submit = start - rng.exponential(1800, attempts)
    st_names = [s for s, _ in STATES]
    st_p = np.array([p for _, p in STATES])
    state = rng.choice(len(STATES), attempts, p=st_p / st_p.sum())
    nodes = [rng.choice(n_nodes, k, replace=False) for k in size]

    def stamp(sec):
        return (t0 + timedelta(seconds=float(sec))).strftime("%Y-%m-%dT%H:%M:%S")

    head = ("JobID|JobName|JobIDRaw|Cluster|Partition|Account|User|QOS|Priority|State|ExitCode|"
            "Submit|Start|End|Timelimit|NNodes|AllocTRES|ReqTRES|NodeList\n")  # fmt: skip
    events, xids = [], []  # (node, start, end, state, reason, user), (node, t, code, msg)
    folder.mkdir(parents=True, exist_ok=True)
    sacct = folder / "sacct.psv"
    out = sacct.open("w")
    lines = [head]
    for i in range(attempts):
        if len(lines) >= 100_000:
            out.write("".join(lines))
            lines.clear()
        st = st_names[state[i]]
        k = int(size[i])
        tres = f"billing={16 * k},cpu={64 * k},gres/gpu={4 * k},mem={480 * k}G,node={k}"
        code = "0:0" if st in ("COMPLETED", "NODE_FAIL", "CANCELLED", "TIMEOUT") else "1:0"
        jid = 1_000_000 + i
        lines.append(
            f"{jid}|job{i % 97}|{jid}|bench|gpu|proj{i % 31:04d}|u{i % 211:04d}|normal|1000|{st}|"
            f"{code}|{stamp(submit[i])}|{stamp(start[i])}|{stamp(end[i])}|3-00:00:00|{k}|"
            f"{tres}|{tres}|{compress(names[nodes[i]])}\n"
        )
        culprit = names[nodes[i][0]]
        e = end[i]
        if st == "NODE_FAIL":
            events.append((culprit, e - rng.uniform(0, 5), e + rng.uniform(3600, 86400), "DOWN",
                           "Not responding", "slurm(64030)"))  # fmt: skip
        elif st == "FAILED" and rng.random() < 0.2:
            if rng.random() < 0.35:
                c, m = XID_CRIT[rng.integers(len(XID_CRIT))]
                xids.append((culprit, e - rng.uniform(10, 300), c, m))
                reason = f"Xid {c}"
            else:
                reason = "Kernel health check failed"
            events.append((culprit, e + rng.uniform(-30, 30), e + rng.uniform(3600, 86400),
                           "DRAIN", reason, "root(0)"))  # fmt: skip
        elif st == "REQUEUED":
            events.append((culprit, e + rng.uniform(0, 5), e + rng.uniform(600, 7200), "DRAIN",
                           "NHC: check_gpu failed", "root(0)"))  # fmt: skip
        elif st == "FAILED" and rng.random() < 0.1:
            c, m = XID_APP[rng.integers(len(XID_APP))]
            xids.append((culprit, e - rng.uniform(1, 60), c, m))
        if rng.random() < 2e-3:
            events.append((culprit, e + rng.uniform(5, 60), e + rng.uniform(600, 3600), "DRAIN",
                           "Epilog error", "slurm(64030)"))  # fmt: skip
    node_days = n_nodes * days
    for _ in range(rng.poisson(5e-3 * node_days)):  # administrators' drains
        t = rng.uniform(0, span)
        events.append((names[rng.integers(n_nodes)], t, t + rng.uniform(3600, 8 * 3600), "DRAIN",
                       "reinstall for OS upgrade", "admin(2001)"))  # fmt: skip
    for _ in range(rng.poisson(2e-2 * node_days)):  # hardware warnings
        c, m = XID_WARN[rng.integers(len(XID_WARN))]
        xids.append((names[rng.integers(n_nodes)], rng.uniform(0, span), c, m))
    out.write("".join(lines))
    out.close()
    del lines, nodes
    ev = folder / "sacctmgr_events.psv"
    ev.write_text(
        "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User\n"
        + "".join(
            f"bench|{n}|{stamp(a)}|{stamp(min(b, span - 1)) if b < span else 'Unknown'}|{s}|{r}|{u}\n"
            for n, a, b, s, r, u in sorted(events, key=lambda x: (x[0], x[1]))
            if a < span - 1
        )
    )
    kernel: dict[int, list[str]] = {}
    for n, t, c, m in sorted([x for x in xids if x[1] < span - 1], key=lambda x: x[1]):
        when = t0 + timedelta(seconds=float(t))
        kernel.setdefault(when.year, []).append(
            f"{when.strftime('%b %e %H:%M:%S')} {n} kernel: [{t:.6f}] NVRM: Xid "
            f"(PCI:0000:{int(t) % 8 * 16 + 7:02x}:00): {c}, pid={int(t) % 99991}, {m}\n"
        )
    files = []
    for year, text in kernel.items():
        p = folder / f"kern-{year}.log"
        p.write_text(
            f"{t0.strftime('%b %e %H:%M:%S')} r001n01 kernel: [0.0] NVRM: loading NVIDIA UNIX "
            "x86_64 Kernel Module  550.54.15\n" + "".join(text)
        )
        files.append((p, year))
    return {"sacct": sacct, "events": ev, "kernel": files, "end": t0 + timedelta(seconds=span),
            "n_nodes": n_nodes, "days": days}  # fmt: skip


def _fragmented(work: Path, target: int, seed: int):
    from reliability import Dataset

    folder = work / f"f-{target}"
    t = time.perf_counter()
    x = write_fragmented(folder / "raw", target, seed)
    gen = time.perf_counter() - t
    ds_path = folder / "ds"
    if ds_path.exists():
        import shutil

        shutil.rmtree(ds_path)
    ds = Dataset(ds_path)
    t = time.perf_counter()
    ds.ingest("slurm", [str(x["sacct"])], tz="UTC", observed_at=x["end"])
    ds.ingest("events", [str(x["events"])], tz="UTC", observed_at=x["end"])
    for p, year in x["kernel"]:
        ds.ingest("kernel", [str(p)], cluster="bench", tz="UTC", year=year, observed_at=x["end"])
    ing = time.perf_counter() - t
    return x["sacct"], ds, x["n_nodes"], x["days"], gen, ing


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--million", action="store_true", help="add 1,000,000 attempts")
    ap.add_argument(
        "--source",
        choices=["fragmented", "gen_b"],
        default="fragmented",
        help="this file's fragmented-export writer, or generator B (--days, fleet grows)",
    )
    ap.add_argument("--days", type=float, default=35.0, help="history length of gen_b")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=1, help="best of N per stage")
    ap.add_argument("--baseline", help="also time the two stages at this commit")
    ap.add_argument("--work", type=Path, default=None)
    args = ap.parse_args()

    import tempfile

    import polars as pl
    from polars.testing import assert_frame_equal

    from reliability import attribute_failures
    from reliability.models.failures.mttf import fit_mttf
    from reliability.models.nodes.lemon_features import node_features

    sizes = sorted({*args.sizes, *([1_000_000] if args.million else [])})
    work = args.work or Path(tempfile.mkdtemp(prefix="bench_stages_"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"work folder {work}")
    old = None
    if args.baseline:
        old_attr = _load_at(args.baseline, "reliability/attribution.py", "_baseline_attribution")
        old_lemon = _load_at(
            args.baseline,
            "reliability/models/nodes/lemon_features.py",
            "_baseline_lemon_features",
        )
        old_lemon.attribute_failures = old_attr.attribute_failures
        old = (old_attr.attribute_failures, old_lemon.node_features)

    rows = []
    for target in sizes:
        if args.source == "gen_b":
            h, ds, n_nodes, gen, ing = _history(work, target, args.days, args.seed)
            sacct, days = h.sacct, args.days
        else:
            sacct, ds, n_nodes, days, gen, ing = _fragmented(work, target, args.seed)
        obs = ds.observation_end
        nlist = pl.read_csv(sacct, separator="|", columns=["NodeList"], infer_schema=False)
        ln = nlist["NodeList"].str.len_chars()
        print(
            f"\n{ds.jobs.height:,} attempts on {n_nodes:,} nodes over {days:g} d "
            f"(NodeList {ln.mean():.0f} chars on average, up to {ln.max():,}; "
            f"{ds.node_states.height:,} node states, {ds.health_events.height:,} health events); "
            f"generated in {gen:.1f} s, ingested in {ing:.1f} s"
        )
        r = {"attempts": ds.jobs.height, "nodes": n_nodes}
        t, jobs = _timed(args.repeat, attribute_failures, ds)
        r["attribute_failures"] = t
        tables = {"jobs": jobs, "health_events": ds.health_events, "node_states": ds.node_states}
        t, feats = _timed(args.repeat, node_features, tables, observation_end=obs)
        r["node_features"] = t
        r["fit_mttf"], _ = _timed(
            args.repeat, fit_mttf, jobs, gpus_per_node=4, min_gpus=1, observation_end=obs
        )
        if old:
            t, ojobs = _timed(args.repeat, old[0], ds)
            r["attribute_failures (baseline)"] = t
            assert_frame_equal(ojobs, jobs)
            t, ofeats = _timed(args.repeat, old[1], tables, observation_end=obs)
            r["node_features (baseline)"] = t
            assert_frame_equal(ofeats, feats)
            print("  outputs equal to the baseline's")
        for k, v in r.items():
            if k not in ("attempts", "nodes"):
                print(f"  {k:<32} {v:8.2f} s")
        rows.append(r)

    stages = [k for k in rows[0] if k not in ("attempts", "nodes")]
    print("\n| attempts (nodes) | " + " | ".join(stages) + " |")
    print("|---|" + "---|" * len(stages))
    for i, r in enumerate(rows):
        cells = []
        for k in stages:
            cell = f"{r[k]:.2f} s"
            if i:
                p = rows[i - 1]
                per10 = (r[k] / p[k]) ** (1 / math.log10(r["attempts"] / p["attempts"]))
                cell += f" (x{per10:.1f}/10x)"
            cells.append(cell)
        print(f"| {r['attempts']:,} ({r['nodes']:,}) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
