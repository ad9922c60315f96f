"""Every pipeline stage's tables on a fragmented export: this tree against a baseline commit.

    python benchmarks/compare_stages.py --baseline COMMIT [--attempts 100000] [--work DIR]

Writes :func:`bench_stages.write_fragmented`'s export once, runs the pipeline of
``bench_pipeline.py`` on it with the code at ``COMMIT`` (``git archive`` into the work folder)
and with this tree, each in its own process, saves every stage result's tables (its
``summary``, ``tables()`` and the attributed ``jobs``) as parquet and its text (``str()``:
lines and notes), and compares them frame by frame and line by line, for every stage that ran
(the results are the typed ``RunResults``: one attribute per stage). Frames whose row order is not part of the result (the signal table's ties, which came
in no set order before the tie-break by name) are compared sorted when ``--sorted`` names them.
Used for issue 39's memory work: results must be equal to before.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CHILD = r"""
import json, sys
from pathlib import Path
tree, raw, work = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
sys.path[:0] = [tree, tree + "/tests", tree + "/benchmarks"]
import polars as pl
from reliability.pipeline import run_pipeline
x = json.loads((raw / "x.json").read_text())
kernel = {}
for p, year in x["kernel"]:
    kernel.setdefault(year, []).append(p)
toml = ['[pipeline]', 'name = "cmp"', f'out = "{work / "out"}"',
        '[[inputs]]', 'kind = "files"', 'reader = "slurm"', f'paths = ["{x["sacct"]}"]', 'tz = "UTC"',
        '[[inputs]]', 'kind = "files"', 'reader = "events"', f'paths = ["{x["events"]}"]', 'tz = "UTC"']
for year, paths in sorted(kernel.items()):
    toml += ['[[inputs]]', 'kind = "files"', 'reader = "kernel"', f'paths = {json.dumps(paths)}',
             'cluster = "bench"', 'tz = "UTC"', f'options = {{ year = {year} }}']
toml += ['[analysis]', 'min_gpus = 129']
work.mkdir(parents=True, exist_ok=True)
(work / "p.toml").write_text("\n".join(toml) + "\n")
res = run_pipeline(work / "p.toml", report=False)
dump = work / "dump"
dump.mkdir(exist_ok=True)
out = res.outputs
# a typed RunResults (one attribute per stage, None when it did not run), or a plain mapping
if isinstance(out, dict):
    items = list(out.items())
else:
    import dataclasses
    items = [(f.name, getattr(out, f.name)) for f in dataclasses.fields(out)]
ran = []
for name, r in items:
    if r is None:
        continue
    ran.append(name)
    tabs = dict(r.tables()) if hasattr(r, "tables") else {}
    tabs["summary"] = r.summary
    if isinstance(getattr(r, "jobs", None), pl.DataFrame):
        tabs["jobs"] = r.jobs
    for k, f in tabs.items():
        if isinstance(f, pl.DataFrame):
            f.write_parquet(dump / f"{name}__{k.replace(' ', '_').replace('/', '_')}.parquet")
    # the stage's text (its lines and notes), the run's own folder written out of it
    (dump / f"{name}__text.txt").write_text(str(r).replace(str(work), "<work>"))
(work / "stages.json").write_text(json.dumps(ran))
"""

GEN = r"""
import json, sys
from pathlib import Path
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/tests", sys.argv[1] + "/benchmarks"]
from bench_stages import write_fragmented
raw = Path(sys.argv[2])
x = write_fragmented(raw, int(sys.argv[3]), 3)
(raw / "x.json").write_text(json.dumps({"sacct": str(x["sacct"]), "events": str(x["events"]),
                                         "kernel": [[str(p), y] for p, y in x["kernel"]]}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--attempts", type=int, default=100_000)
    ap.add_argument("--sorted", nargs="*", default=["signals__signals", "signals__summary"])
    ap.add_argument("--work", type=Path, default=None)
    args = ap.parse_args()
    import polars as pl
    from polars.testing import assert_frame_equal

    work = args.work or Path(tempfile.mkdtemp(prefix="compare_stages_"))
    base = work / "baseline-tree"
    if not base.exists():
        base.mkdir(parents=True)
        tar = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.baseline], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=tar, check=True)
    raw = work / "raw"
    if not (raw / "x.json").exists():
        subprocess.run(
            [sys.executable, "-c", GEN, str(ROOT), str(raw), str(args.attempts)], check=True
        )
    for tree, name in ((base, "before"), (ROOT, "after")):
        subprocess.run(
            [sys.executable, "-c", CHILD, str(tree), str(raw), str(work / name)], check=True
        )
    before, after = work / "before" / "dump", work / "after" / "dump"
    bad = 0
    stages = [json.loads((work / w / "stages.json").read_text()) for w in ("before", "after")]
    if stages[0] != stages[1]:
        print(f"stages differ: before {stages[0]}, after {stages[1]}")
        bad += 1
    for f in sorted(before.iterdir()):
        g = after / f.name
        if not g.exists():
            print(f"missing after: {f.stem}")
            bad += 1
            continue
        if f.suffix == ".txt":
            if f.read_text() != g.read_text():
                print(f"text differs: {f.stem}")
                bad += 1
            continue
        a, b = pl.read_parquet(f), pl.read_parquet(g)
        if f.stem in args.sorted:
            a, b = a.sort(a.columns), b.sort(b.columns)
        try:
            assert_frame_equal(a, b)
        except AssertionError as exc:
            print(f"differs: {f.stem}: {str(exc)[:200]}")
            bad += 1
    n = len(list(before.iterdir()))
    print(
        f"{len(stages[0])} stages ran ({', '.join(stages[0])}); {n - bad} of {n} stage tables and "
        f"texts equal ({args.attempts:,} attempts, {args.baseline} vs this tree)"
    )
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
