"""read_sacct against the polars parse floor on fragmented and compact node lists (issue 39).

    python benchmarks/bench_nodelists.py [--attempts 200000] [--repeat 2] [--profile] [--bounds]
                                         [--kinds fragmented compact] [--tile N] [--code DIR]

Writes (once, cached in ``benchmarks/_work/``) two sacct exports of ``--attempts`` allocation
records:

- ``fragmented``: :func:`bench_stages.write_fragmented` (jobs placed at random on 1,024 to
  10,240 ``r<rack>n<slot>`` nodes, so a 512-node job's NodeList is hundreds of ranges);
- ``compact``: :func:`reliability.testing.synthetic_sacct` (contiguous placement, short lists,
  with ``.batch`` / ``.extern`` / ``.0`` steps).

Then, for each, runs in fresh subprocesses, taking turns round by round (the machine is
shared: compare ratios of one run, not absolute times): ``read_sacct(path, tz="UTC")`` and the
bare ``polars.read_csv(path, separator="|")``; prints each time and their ratio (target of
issue 39: within 3x on fragmented lists, 2.5x on compact ones). With ``--profile`` one more
run of read_sacct under cProfile gives the share of ``hostlist.node_lists`` (and of its parts)
in read_sacct's time. ``--code DIR`` reads the package from another tree; ``--baseline DIR`` also runs read_sacct
from DIR in every round (a before / after comparison on the same files, in the same rounds).

Measured (2 cores shared with other jobs, load 3-5: compare ratios of one run; read_sacct /
floor, fastest of each). "d1c575d" and "cc69ce4" are read_sacct before issue 39's node-list work
and after its first pass (``--repeat 3 --baseline <d1c575d checkout>``, an earlier run);
"hostlist2" is this branch, against a cc69ce4 checkout in the same rounds (``--repeat 2
--baseline``; the tiled row ``--repeat 3``):

=============================================  =======  =====================  =========  ============
export                                         d1c575d  cc69ce4 (then / same   hostlist2  hostlist2 /
                                                        run as hostlist2)                 cc69ce4
=============================================  =======  =====================  =========  ============
fragmented 200k (100k distinct, 212 chars)     31.5x    16.0x / 15.7x          12.3x      0.79x
fragmented 200k, ``--tile 10`` (issue 39)      6.9x     5.7x / 5.4x            5.3x       0.98x
fragmented 1M, ``--tile 10`` (``--repeat 2``)  9.4x     6.4x                   --         --
compact 200k (665k records)                    2.65x    2.67x / 2.64x          2.63x      0.99x
compact 1M (3.3M records)                      1.6-2.4x 2.5-2.6x               --         --
=============================================  =======  =====================  =========  ============

Measured 2026-12-06 (2 cores, idle; ``--attempts 1000000 --repeat 3 --baseline <48b1413
checkout>``, read_sacct / floor, median of the rounds; the floor itself varies 1.5x from round
to round on the 3M-record file): a batch is expanded per distinct hostlist when its distinct
lists hold under 3/4 of its text, measured on the whole batch (before: when the first 20,000
rows held under half as many distinct lists; a batch's allocations come before its steps, so
a fragmented export's steps, which repeat their allocation's list, were never seen):

============================================  ===============  ===============  ===========
export                                        48b1413          this             after /
                                                                                before
============================================  ===============  ===============  ===========
fragmented 1M with ``--steps`` (3M records)   11.92 s, 6.07x   8.57 s, 4.34x    0.72x
fragmented 1M (no steps, 460k distinct)       4.82 s, 9.23x    4.74 s, 9.17x    0.98x
fragmented 1M, ``--tile 10``                  4.81 s, 8.93x    5.06 s, 9.37x    1.05x
compact 1M (3.3M records)                     2.90 s, 2.32x    3.00 s, 2.18x    1.03x
============================================  ===============  ===============  ===========

(Times: fastest of the rounds. The last two rows differ by noise: the node lists alone on the
tiled column, in one process, 48b1413 / this alternating 4 times: 2.83-3.57 s / 2.67-3.59 s.)
The tiled export repeats each list 100,000 records later, in another batch:
a cache of lists across batches would read it ten times faster, but a real export repeats a
long fragmented list mainly beside its allocation (its steps), which this reads once, or on a
reserved node set (consecutive jobs on the same nodes): not measured here.

node_lists alone, in one process on the same column (fastest of 3-5): untiled fragmented 1.43 ->
1.03 s wall (1.48 -> 1.11 s of CPU on one thread); tiled 0.244 -> 0.230 s wall (0.30 -> 0.21 s
of CPU on one thread: the two cores hid most of the gain); compact 0.064 -> 0.056 s of CPU.

cProfile, hostlist2: node_lists is 80% of read_sacct on the untiled fragmented export (1.24 of
1.55 s), 50% on the tiled one (0.38 of 0.76 s) and 16% on the compact one. The rest of
read_sacct alone is 2.2-2.9x the floor on both fragmented exports (0.31 s against 0.12 s
untiled; 0.32-0.38 s against 0.11-0.17 s tiled, two runs), so 3x needs node_lists near
0.05 s: it builds 5.8M host names as ``list[str]``, and a bare ``str.split(",")`` of the
untiled export's distinct lists already takes 0.11 s. On the untiled
export 63% of the distinct lists have no bracket (random placement leaves few ranges) and 68%
of the names are plain text, so a dictionary of numbers (prefix id, width, number -> host code)
does not remove the work: tried as a per-comma token table (numbers parsed per item, ranges by
offsets), node_lists took 2.4 s of CPU against 1.6 s (one thread); kept instead: bracket-free
lists are one ``str.split``, the others' segments are rewritten in place and each expression's
names split once, with list aggregations + ``list.join`` instead of ``str.join`` aggregations.

Lower bound (``--bounds``; measured 2026-12-07, 2 cores, idle; ``--attempts 1000000 --kinds
fragmented --repeat 3 --bounds``, three runs, the first without the repeat pass; ratios to the
fastest floor of each run): the
untiled fragmented export (435 MiB, 29.0M host names, 214 characters of NodeList a record)
reads at 10.1-10.5x the floor. Read with no name built at all, read_sacct is already
3.09-3.22x. One vectorised pass over every row's NodeList costs 0.44-0.57x (checking the
hostlist grammar), 0.81-0.89x (splitting at commas into ``List(String)``, no range expanded),
0.26-0.27x (``list.n_unique``: a list naming a host twice) and 1.58-1.65x (numbering the names
into ``List(Categorical)``, the compact form the 5M-attempt memory target relies on). Over each
distinct list once the passes cost 10-15% less, but finding the distinct lists costs 0.86x:
the 460k distinct lists hold nearly all the text (random placement repeats one-node lists,
not long ones). So a reader built of polars' string passes that expands the lists and keeps
its guarantees is at least 4.7-5.0x the floor on this export (6.3-6.6x in the compact form);
only a compiled reader could fuse the passes, and none is wanted. 3x needs the jobs table to
keep the ranges (the data contract's ``nodes`` is the expanded list) and the read-time check
of repeated hosts to move out of the reader (issue 39's closing note).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = HERE / "_work"

CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[3])
method, path = sys.argv[1], sys.argv[2]
import polars as pl
from reliability.ingest import read_sacct
from reliability.ingest import hostlist  # (also in trees before hostlist moved up)

t = time.perf_counter()
if method == "ours":
    r = read_sacct(path, tz="UTC")
    rows = r.frames["jobs"].height + r.frames["job_steps"].height
    names = int(r.frames["jobs"].get_column("nodes").list.len().sum())
elif method == "floor":
    rows, names = pl.read_csv(path, separator="|").height, 0
elif method == "profile":
    import cProfile, pstats
    prof = cProfile.Profile()
    prof.enable()
    r = read_sacct(path, tz="UTC")
    prof.disable()
    rows = r.frames["jobs"].height + r.frames["job_steps"].height
    names = 0
    cum = {}
    for (file, line, fn), (cc, nc, tt, ct, callers) in pstats.Stats(prof).stats.items():
        if file.endswith(("hostlist.py", "hostlist_codes.py")) or fn == "read_sacct":
            cum[fn] = max(cum.get(fn, 0.0), ct)
elif method == "rest":  # read_sacct with its node lists left empty (no name built)
    import reliability.ingest.sacct.parse as parse
    from reliability.hostlist_codes import NODES_COMPACT

    def _none(both, **kw):
        return pl.repeat(pl.lit([], NODES_COMPACT), both.len(), eager=True).rename("nodes"), {}, 0

    parse._compact_node_lists = _none
    t = time.perf_counter()
    r = read_sacct(path, tz="UTC")
    rows = r.frames["jobs"].height + r.frames["job_steps"].height
    names = 0
elif method == "passes":  # single vectorised passes over the NodeList column alone
    col = pl.read_csv(path, separator="|", columns=["NodeList"], infer_schema=False)["NodeList"]
    grammar = (r"^{n}(\[{i}(,{i})*\])?(,{n}(\[{i}(,{i})*\])?)*$"
               .format(n=r"[\w\-.]+", i=r"[0-9]{1,18}(-[0-9]{1,18})?"))
    passes = {}

    def _passes(c, tag):
        t = time.perf_counter()
        c.str.contains(grammar)
        passes[f"grammar{tag}"] = time.perf_counter() - t
        t = time.perf_counter()
        split = c.str.split(",")
        passes[f"split{tag}"] = time.perf_counter() - t
        t = time.perf_counter()
        (split.list.n_unique() < split.list.len()).sum()
        passes[f"repeats{tag}"] = time.perf_counter() - t
        t = time.perf_counter()
        split.cast(pl.List(pl.Categorical))
        passes[f"numbered{tag}"] = time.perf_counter() - t

    _passes(col, "")
    t = time.perf_counter()  # each distinct list once (then gathered back to the rows)
    keys = col.unique()
    passes["unique"] = time.perf_counter() - t
    _passes(keys, "_distinct")
    t = time.perf_counter()
    rows, names = col.len(), 0
secs = time.perf_counter() - t
out = {"secs": secs, "rows": rows, "names": names}
if method == "passes":
    out["passes"] = passes
if method == "profile":
    out["cum"] = cum
print(json.dumps(out))
"""


def run_once(method: str, path: Path, code: str) -> dict:
    """One fresh-process run of ``method`` on ``path`` with the package of tree ``code``."""
    out = subprocess.run([sys.executable, "-c", CHILD, method, str(path), code], check=True,
                         capture_output=True, text=True)  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def export(kind: str, attempts: int, seed: int, tile: int = 1, steps: bool = False) -> Path:
    """The cached export of ``kind`` (written the first time).

    ``tile`` > 1 (fragmented only): a fragmented export of ``attempts / tile`` attempts (on a
    smaller fleet: shorter lists), repeated ``tile`` times with new job ids (as issue 39's
    measurement: each node list stands for ``tile`` jobs). ``steps`` (fragmented only): each
    allocation record is followed by its ``.extern`` and ``.0`` steps on the same nodes, as
    ``sacct`` prints them (three records per attempt, each NodeList three times in a row).
    """
    WORK.mkdir(exist_ok=True)
    if steps:
        path = WORK / f"frag_{attempts}_{seed}_tiled{tile}_steps.psv"
        if not path.exists():
            head, *lines = export(kind, attempts, seed, tile).read_text().splitlines(True)
            out = [head]
            for line in lines:
                f = line.rstrip("\n").split("|")
                out.append(line)
                for step in ("extern", "0"):
                    g = [f"{f[0]}.{step}", step, f"{f[2]}.{step}", f[3], "", f[5], "", "", ""]
                    g += [f[9], f[10], f[11], f[12], f[13], "", f[15], f[16], "", f[18]]
                    out.append("|".join(g) + "\n")
            path.write_text("".join(out))
        return path
    if tile > 1:
        path = WORK / f"frag_{attempts}_{seed}_tiled{tile}.psv"
        if not path.exists():
            head, *lines = export(kind, attempts // tile, seed).read_text().splitlines(True)
            out = [head]
            for t in range(tile):
                for line in lines:
                    jid, name, _, rest = line.split("|", 3)
                    new = str(int(jid) + t * len(lines))
                    out.append(f"{new}|{name}|{new}|{rest}")
            path.write_text("".join(out))
        return path
    if kind == "compact":
        path = WORK / f"sacct_{attempts}_{seed}.psv"
        if not path.exists():
            sys.path[:0] = [str(HERE.parent)]
            from reliability.testing import synthetic_sacct

            synthetic_sacct(path, attempts, seed=seed, n_nodes=2000)
        return path
    folder = WORK / f"frag_{attempts}_{seed}"
    path = folder / "sacct.psv"
    if not path.exists():
        sys.path[:0] = [str(HERE), str(HERE.parent), str(HERE.parent / "tests")]
        from bench_stages import write_fragmented

        write_fragmented(folder, attempts, seed)
    return path


def bounds(rounds: dict[str, list[dict]], floor: float) -> None:
    """Print the lower bound of a reader that expands the node lists, as a ratio to the floor.

    ``rest``: read_sacct with no name built (every other check and column kept). Passes: the
    fastest of the rounds of one vectorised polars pass each, over every row's NodeList and
    over the distinct lists (plus finding them), what an expanding reader built of polars'
    string passes does per name at least: check the hostlist grammar (``str.contains``), split
    at commas (``List(String)``: no range expanded), find a list that names a host twice
    (``list.n_unique``), number the names (``List(Categorical)``, the compact form the 5M
    memory target needs). Separate passes: a compiled reader could fuse them.
    """
    rest = min(r["secs"] for r in rounds["rest"])
    p = {k: min(r["passes"][k] for r in rounds["passes"]) for k in rounds["passes"][0]["passes"]}
    print(f"  read_sacct without node lists: {rest:6.2f} s, {rest / floor:.2f}x the floor")
    for tag, what in (("", "every row's list"), ("_distinct", "each distinct list once")):
        print(f"  one pass over {what}: " + ", ".join(
            f"{k} {p[k + tag]:.2f} s ({p[k + tag] / floor:.2f}x)"
            for k in ("grammar", "split", "repeats", "numbered")))  # fmt: skip
    print(f"  (the distinct lists themselves: {p['unique']:.2f} s, {p['unique'] / floor:.2f}x)")
    rows = p["grammar"] + p["split"] + p["repeats"]
    keys = p["unique"] + p["grammar_distinct"] + p["split_distinct"] + p["repeats_distinct"]
    least = rest + min(rows, keys)
    numbered = least + (p["numbered"] if rows <= keys else p["numbered_distinct"])
    print(f"  least reader of these passes (rest + grammar + split + repeats, strings; the cheaper "
          f"of rows and distinct lists): {least / floor:.2f}x; numbered: {numbered / floor:.2f}x")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--attempts", type=int, default=200_000, help="allocation records")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=1, help="rounds; each method once per round")
    ap.add_argument("--kinds", nargs="+", choices=("fragmented", "compact"),
                    default=["fragmented", "compact"])  # fmt: skip
    ap.add_argument("--tile", type=int, default=1,
                    help="fragmented: attempts/TILE attempts repeated TILE times (issue 39's form)")  # fmt: skip
    ap.add_argument("--steps", action="store_true",
                    help="fragmented: each allocation followed by its .extern and .0 steps")  # fmt: skip
    ap.add_argument("--profile", action="store_true", help="node_lists' share (cProfile)")
    ap.add_argument("--bounds", action="store_true",
                    help="the lower bound of an expanding reader (see the module's text)")  # fmt: skip
    ap.add_argument("--code", default=str(HERE.parent), help="read the package from this tree")
    ap.add_argument("--baseline", default="",
                    help="also run read_sacct from this tree in each round (before / after)")  # fmt: skip
    args = ap.parse_args()
    import polars as pl

    print(f"code from {args.code}")
    for kind in args.kinds:
        t = time.perf_counter()
        frag = kind == "fragmented"
        path = export(kind, args.attempts, args.seed, args.tile if frag else 1, args.steps and frag)
        made = time.perf_counter() - t
        nl = pl.read_csv(path, separator="|", columns=["NodeList"], infer_schema=False)
        ln = nl["NodeList"].str.len_chars()
        print(f"\n{kind}: {path.name}, {path.stat().st_size / 2**20:,.0f} MiB, {nl.height:,} "
              f"records, NodeList {ln.mean():.0f} chars on average, up to {ln.max():,} "
              f"({nl['NodeList'].n_unique():,} distinct; ready in {made:.1f} s)")  # fmt: skip
        rounds: dict[str, list[dict]] = {"floor": [], "ours": []}
        if args.baseline:
            rounds["before"] = []
        if args.bounds:
            rounds["rest"], rounds["passes"] = [], []
        for _ in range(args.repeat):
            for method in rounds:
                code = args.baseline if method == "before" else args.code
                rounds[method].append(
                    run_once("ours" if method == "before" else method, path, code)
                )
        floor = min(r["secs"] for r in rounds["floor"])
        ours = min(r["secs"] for r in rounds["ours"])
        paired = [
            o["secs"] / f["secs"] for o, f in zip(rounds["ours"], rounds["floor"], strict=True)
        ]
        print(f"  polars.read_csv floor {floor:6.2f} s   read_sacct {ours:6.2f} s   "
              f"({rounds['ours'][0]['rows']:,} rows, {rounds['ours'][0]['names']:,} job host names)")  # fmt: skip
        print(f"  read_sacct / floor: {ours / floor:.2f}x (fastest / fastest); each round: "
              + ", ".join(f"{x:.2f}x" for x in paired)
              + f" (median {statistics.median(paired):.2f}x)")  # fmt: skip
        if args.baseline:
            before = min(r["secs"] for r in rounds["before"])
            paired_b = [
                b["secs"] / f["secs"]
                for b, f in zip(rounds["before"], rounds["floor"], strict=True)
            ]
            print(f"  baseline ({args.baseline}) read_sacct {before:6.2f} s: {before / floor:.2f}x the "
                  "floor; each round: " + ", ".join(f"{x:.2f}x" for x in paired_b)
                  + f" (median {statistics.median(paired_b):.2f}x); after / before "
                  f"{ours / before:.2f}x")  # fmt: skip
        if args.bounds:
            bounds(rounds, floor)
        if args.profile:
            p = run_once("profile", path, args.code)
            total = p["cum"].get("read_sacct", p["secs"])
            print(f"  cProfile: read_sacct {total:.2f} s; "
                  + ", ".join(f"{fn} {s:.2f} s ({s / total:.0%})"
                              for fn, s in sorted(p["cum"].items(), key=lambda x: -x[1])
                              if fn != "read_sacct" and s >= 0.01 * total))  # fmt: skip


if __name__ == "__main__":
    main()
