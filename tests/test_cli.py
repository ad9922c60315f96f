"""The ``reliability`` command. Every count it prints is checked against a count the test makes
itself from the input (a plain parse of the file, the ``sacct --json`` export of the same jobs,
the simulator's event log and truth) or against a reference computation (scipy)."""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import math
import re
from collections import Counter
from datetime import datetime
from importlib.metadata import version
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats as scipy_stats

from reliability import Dataset
from reliability.cli import main
from reliability.datasets import load_sample_dataset, sample_files
from reliability.sweep import load_sweep
from reliability.testing import synthetic_sacct

ROOT = Path(__file__).resolve().parents[1]
OUTCOME = re.compile(r"read (\d+), kept (\d+), quarantined (\d+) \(([^)]*)\)")
SXID_FILE = "gpud/sxid-readme-xid79-sxid20034.log"
XID_FILE = "gpud/dmesg-with-xid-119.log"


def _outcomes(text: str) -> dict[str, tuple[int, int, int, dict[str, int]]]:
    """File name -> (read, kept, quarantined, rows per table) from ingest output lines."""
    out = {}
    for line in text.splitlines():
        m = OUTCOME.search(line)
        if m:
            tables = dict(kv.split("=") for kv in m.group(4).split(", ") if kv)
            name = Path(line[: line.index(": ")]).name
            out[name] = (*map(int, m.groups()[:3]), {k: int(v) for k, v in tables.items()})
    return out


def _table_rows(info: str) -> dict[str, int]:
    """The 'rows per table' block of ``reliability info``."""
    block = info.split("rows per table:")[1].split("\n\n")[0]
    return {ln.split()[0]: int(ln.split()[1].replace(",", "")) for ln in block.strip().splitlines()}


def _psv(path: Path) -> list[dict[str, str]]:
    """A ``--parsable2`` export as dicts (no field of these files holds a newline or '|')."""
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln]
    head = lines[0].split("|")
    return [dict(zip(head, ln.split("|"), strict=True)) for ln in lines[1:]]


def _xid_events(path: Path) -> list[str]:
    """Codes of the Xid lines and of the SXid record headers (``..., Fatal|Non-fatal, ...``);
    NVSwitch codes are ``SXid<n>``, apart from the GPU's Xid numbers."""
    text = path.read_text(encoding="utf-8")
    xid = re.findall(r"NVRM: Xid \([^)]*\): (\d+),", text)
    sxid = re.findall(r"SXid \([^)]*\): (\d+), (?:Non-)?[Ff]atal,", text)
    return xid + [f"SXid{c}" for c in sxid]


def test_ingest_and_info(tmp_path, run1, capsys):
    """The counts printed for the real Slurm 22.05 export equal those of ``sacct --json`` run
    against the same database: one record per job attempt (the resized job's second record is
    a record of its own there too) and one per step, none refused."""
    export = json.loads(gzip.decompress((run1 / "sacct.json.gz").read_bytes()))["jobs"]
    n_steps = sum(len(j["steps"]) for j in export)
    path = run1 / "sacct_broad_duplicates.psv"
    assert main(["ingest", "slurm", str(path), "--into", str(tmp_path / "ds"), "--tz", "UTC"]) == 0
    read, kept, quarantined, tables = _outcomes(capsys.readouterr().out)[path.name]
    assert (read, kept, quarantined) == (len(export) + n_steps, len(export) + n_steps, 0)
    assert tables == {"jobs": len(export), "job_steps": n_steps}
    assert main(["info", str(tmp_path / "ds")]) == 0
    rows = _table_rows(capsys.readouterr().out)
    assert (rows["jobs"], rows["job_steps"], rows["quarantine"]) == (len(export), n_steps, 0)


def test_fatal_error_names_file_and_line(tmp_path, run1, capsys):
    rc = main(["ingest", "slurm", str(run1 / "sacct_default_parsable.psv"), "--into", str(tmp_path / "d"),
               "--tz", "UTC", "--cluster", "x"])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2
    assert "sacct_default_parsable.psv:1: field 'Submit'" in err
    assert "Traceback" not in err


def test_strict_fails_on_quarantine(tmp_path, capsys):
    """One record of three has an unreadable Submit: --strict refuses the file, writes nothing."""
    path = tmp_path / "sacct.psv"
    path.write_text(
        "JobID|State|Submit|Start|End|Cluster\n"
        "1|COMPLETED|2025-01-01T00:00:00|2025-01-01T00:01:00|2025-01-01T01:00:00|c\n"
        "2|COMPLETED|yesterday|2025-01-01T00:01:00|2025-01-01T01:00:00|c\n"
        "3|FAILED|2025-01-01T00:00:00|2025-01-01T00:02:00|2025-01-01T00:30:00|c\n",
        encoding="utf-8",
    )
    rc = main(
        ["ingest", "slurm", str(path), "--into", str(tmp_path / "d"), "--tz", "UTC", "--strict"]
    )
    assert rc == 2
    err = capsys.readouterr().err
    assert "would be quarantined" in err
    assert not (tmp_path / "d" / "manifest.json").exists()
    # without --strict the two good records are kept and the bad one is quarantined with its line
    assert main(["ingest", "slurm", str(path), "--into", str(tmp_path / "d"), "--tz", "UTC"]) == 0
    assert _outcomes(capsys.readouterr().out)[path.name][:3] == (3, 2, 1)
    q = Dataset(tmp_path / "d").quarantine
    assert q["line_no"].to_list() == [3]
    assert q["raw"].item(0).startswith("2|COMPLETED|yesterday|")


def test_info_on_non_dataset(tmp_path, capsys):
    assert main(["info", str(tmp_path)]) == 2
    assert "not a Dataset folder" in capsys.readouterr().err


def test_kernel_options(tmp_path, capsys):
    """The bundled NVSwitch capture (gpud's README): one Xid 79 line and four SXid 20034 record
    headers (the 'Severity' and 'Data' lines continue a record); the other lines are context."""
    path = sample_files()[SXID_FILE]
    want = _xid_events(path)
    assert sorted(want) == ["79"] + ["SXid20034"] * 4
    rc = main(["ingest", "kernel", str(path), "--into", str(tmp_path / "d"), "--cluster", "c",
               "--node", "n1", "--boot-time", "2025-01-01T00:00:00Z"])  # fmt: skip
    assert rc == 0
    _, kept, quarantined, tables = _outcomes(capsys.readouterr().out)[path.name]
    assert (kept, quarantined, tables) == (len(want), 0, {"health_events": len(want)})
    ev = Dataset(tmp_path / "d").health_events
    assert sorted(ev["code"].to_list()) == sorted(want)
    # '[seconds since boot]' stamps are offsets from --boot-time
    first = float(re.match(r"\[\s*([\d.]+)\]", path.read_text().splitlines()[0]).group(1))
    t0 = datetime.fromisoformat("2025-01-01T00:00:00+00:00").timestamp()
    assert ev["time"].min().timestamp() == pytest.approx(t0 + first, abs=1e-3)
    assert main(["ingest", "kernel", "x.log", "--into", str(tmp_path / "d"), "--cluster", "c",
                 "--boot-time", "2025-01-01T00:00:00"]) == 2  # fmt: skip
    assert "needs a UTC offset" in capsys.readouterr().err
    # without --boot-time nothing in this capture can be placed in time: refused, naming the flag
    # (it used to exit 0 with every line quarantined)
    assert main(["ingest", "kernel", str(path), "--into", str(tmp_path / "e"), "--cluster", "c",
                 "--node", "n1"]) == 2  # fmt: skip
    assert "seconds since boot: pass --boot-time" in capsys.readouterr().err


def test_sample_dataset_is_idempotent(tmp_path):
    """Every bundled sample is ingested once (the manifest holds each file's sha256, computed here);
    the synthetic export's 2,000 allocations and the Xid lines of the two dmesg captures are all
    there; a second load changes nothing."""
    files = sample_files()
    assert {"synthetic/sacct_synth_2000.psv", "gc3pie/sacct_samples_gc3pie.txt"} <= set(files)
    ds = load_sample_dataset(tmp_path / "s")
    by_sha = {i["sha256"]: i for i in ds.inputs}
    for name, path in files.items():
        assert hashlib.sha256(path.read_bytes()).hexdigest() in by_sha, name
    synth = _psv(files["synthetic/sacct_synth_2000.psv"])
    synth_in = by_sha[
        hashlib.sha256(files["synthetic/sacct_synth_2000.psv"].read_bytes()).hexdigest()
    ]
    assert synth_in["rows_read"] == len(synth)
    alloc = [r for r in synth if "." not in r["JobID"]]
    assert len(alloc) == 2000
    assert ds.jobs.filter(pl.col("cluster") == "synth").height == len(alloc)
    n_xid = len(_xid_events(files[XID_FILE])) + len(_xid_events(files[SXID_FILE]))
    assert ds.health_events.filter(pl.col("source") == "kernel_log").height == n_xid
    manifest = (tmp_path / "s" / "manifest.json").read_bytes()
    assert len(load_sample_dataset(tmp_path / "s").inputs) == len(ds.inputs)
    assert (tmp_path / "s" / "manifest.json").read_bytes() == manifest


def test_version(capsys):
    """--version prints the installed distribution's version (package metadata)."""
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"reliability {version('mlcluster-reliability')}"


def test_ingest_help_lists_the_documented_readers(capsys):
    """`ingest --help` offers exactly the reader kinds the README documents."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    row = next(ln for ln in readme.splitlines() if ln.startswith("| `reliability ingest KIND"))
    documented = set(re.findall(r"`([a-z]+)`", row.split("(", 1)[1]))
    assert len(documented) >= 8
    with pytest.raises(SystemExit) as exc:
        main(["ingest", "--help"])
    assert exc.value.code == 0
    helptext = capsys.readouterr().out
    choices = re.search(r"positional arguments:\s*\{([a-z,]+)\}", helptext).group(1).split(",")
    assert set(choices) == documented


def test_simulate_cluster_cli(tmp_path, capsys):
    """The printed job and attempt counts are those of the written sacct export (an allocation
    line per attempt with --duplicates), and all of it reaches the Dataset."""
    rc = main(["simulate", "cluster", "--preset", "small", "--days", "3", "--seed", "4",
               "--out", str(tmp_path / "sim"), "--ingest", str(tmp_path / "ds")])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0
    rows = _psv(tmp_path / "sim" / "sacct.psv")
    alloc = [r for r in rows if "." not in r["JobID"]]
    m = re.search(r"small: 48 nodes, 3 days, seed 4: ([\d,]+) jobs, ([\d,]+) attempts", out)
    assert m, out
    assert int(m.group(2).replace(",", "")) == len(alloc)
    assert int(m.group(1).replace(",", "")) >= len({r["JobID"] for r in alloc})
    read, _, quarantined, tables = _outcomes(out)["sacct.psv"]
    assert (read, quarantined) == (len(rows), 0)
    assert tables["jobs"] == len(alloc) == Dataset(tmp_path / "ds").jobs.height
    assert main(["simulate", "cluster", "--preset", "nope", "--out", str(tmp_path / "x")]) == 2
    assert "unknown cluster preset" in capsys.readouterr().err


def _gpus(row: dict[str, str]) -> int:
    m = re.search(r"gres/gpu=(\d+)", row["AllocTRES"])
    return int(m.group(1)) if m else 0


def test_analyze_cli(tmp_path, capsys):
    """Checked against a plain parse of the simulated export and the simulator's truth: the
    job-state table (counts per state), the node-days of exposure behind r_f (jobs of >= 32
    GPUs, running ones censored at the end of the data: within 1%), the rate as the printed
    count over them, and the count itself: at least the NODE_FAIL attempts of that size (the
    paper's rule counts each) and no more than the hardware failures the simulator caused."""
    assert main(["simulate", "cluster", "--preset", "small", "--days", "20", "--seed", "1",
                 "--out", str(tmp_path / "sim"), "--ingest", str(tmp_path / "ds")]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["analyze", str(tmp_path / "ds"), "--min-gpus", "32"]) == 0
    out = capsys.readouterr().out
    alloc = [r for r in _psv(tmp_path / "sim" / "sacct.psv") if "." not in r["JobID"]]
    # job states: "  STATE   count   share%   gpu-share% of GPU time"
    states = Counter(r["State"].split()[0] for r in alloc)
    printed = dict(
        re.findall(r"^  ([A-Z_]+)\s+([\d,]+)\s+[\d.]+%\s+[\d.]+% of GPU time", out, re.M)
    )
    assert {k: int(v.replace(",", "")) for k, v in printed.items()} == dict(states)
    ts = lambda s: datetime.fromisoformat(s + "+00:00").timestamp()  # noqa: E731
    obs_end = max(ts(r[k]) for r in alloc for k in ("Submit", "Start", "End") if r[k][:1].isdigit())
    big = [r for r in alloc if _gpus(r) >= 32 and r["Start"][:1].isdigit()]
    node_days = (
        sum(
            int(r["NNodes"])
            * ((ts(r["End"]) if r["End"][:1].isdigit() else obs_end) - ts(r["Start"]))
            for r in big
        )
        / 86400
    )
    line = next(ln for ln in out.splitlines() if ln.startswith("r_f") and "node-days" in ln)
    rate = float(re.search(r"([\d.]+) per 1000 node-days", line).group(1))
    k, nd = re.search(r"(\d+) failures (?:in|over) ([\d,.]+) node-days", line).groups()
    k, nd = int(k), float(nd.replace(",", ""))
    assert nd == pytest.approx(node_days, rel=0.01)
    assert rate == pytest.approx(1000 * k / nd, rel=5e-3)
    truth = pl.read_parquet(tmp_path / "sim" / "truth" / "attempts.parquet")
    n_true = truth.filter(pl.col("hardware") & (pl.col("gpus") >= 32)).height
    n_node_fail = sum(r["State"] == "NODE_FAIL" for r in big)
    assert max(1, n_node_fail) <= k <= n_true
    assert main(["analyze", str(tmp_path)]) == 2


def test_simulate_pod_and_ingest(tmp_path, capsys):
    """The per-component table printed by `simulate pod` counts the inventory and failure events
    of the event log it wrote (counted here from the JSON lines); ingesting that log reads every
    line, and the inventory is the pod's geometry (NSDI'24: 64 cubes x 16 hosts, 96 optical links
    per cube, 48 OCSes)."""
    rc = main(["simulate", "pod", "--preset", "tpuv4", "--days", "30", "--seed", "2",
               "--out", str(tmp_path / "p")])  # fmt: skip
    assert rc == 0
    out = capsys.readouterr().out
    log = tmp_path / "p" / "pod_events.jsonl"
    events = [json.loads(ln) for ln in log.read_text(encoding="utf-8").splitlines() if ln]
    kinds = Counter((e["event"], e.get("component_type")) for e in events)
    printed = re.findall(r"^  (\w+)\s+([\d,]+) components\s+([\d,]+) failures", out, re.M)
    assert {t for t, _, _ in printed} == {"machine", "ici_link", "ocs"}
    for ctype, n, failures in printed:
        assert int(n.replace(",", "")) == kinds[("inventory", ctype)], ctype
        assert int(failures.replace(",", "")) == kinds[("component_fail", ctype)], ctype
    assert sum(kinds[("component_fail", t)] for t, _, _ in printed) > 0
    assert main(["ingest", "pod", str(log), "--into", str(tmp_path / "ds")]) == 0
    read, _, quarantined, _ = _outcomes(capsys.readouterr().out)[log.name]
    assert (read, quarantined) == (len(events), 0)
    ds = Dataset(tmp_path / "ds")
    assert ds.inventory.height == 64 * 16 + 64 * 96 + 48
    n_fail = sum(v for (ev, _), v in kinds.items() if ev == "component_fail")
    assert ds.component_failures.height == n_fail


def test_demo(tmp_path, capsys):
    """`reliability demo` (``simulated_demo``): the simulated small cluster and every bundled
    sample in one Dataset, counted against the files; a second run is a no-op."""
    assert main(["demo", "--into", str(tmp_path / "demo"), "--seed", "2"]) == 0
    out = capsys.readouterr().out
    ds = Dataset(tmp_path / "demo" / "dataset")
    sim = _psv(tmp_path / "demo" / "sim" / "sacct.psv")
    alloc = [r for r in sim if "." not in r["JobID"]]
    assert ds.jobs.filter(pl.col("cluster") == "small").height == len(alloc) > 1000
    shas = {i["sha256"] for i in ds.inputs}
    for name, path in sample_files().items():
        assert hashlib.sha256(path.read_bytes()).hexdigest() in shas, name
    with open(tmp_path / "demo" / "sim" / "health_checks.csv", newline="") as f:
        n_checks = sum(1 for _ in csv.DictReader(f))
    assert ds.health_events.filter(pl.col("source") == "health_check").height == n_checks
    assert f"{ds.jobs.height:,}" in out  # the summary shows the Dataset's job count
    manifest = (tmp_path / "demo" / "dataset" / "manifest.json").read_bytes()
    assert main(["demo", "--into", str(tmp_path / "demo"), "--seed", "2"]) == 0
    assert (tmp_path / "demo" / "dataset" / "manifest.json").read_bytes() == manifest


def test_sweep_cli_intervals(tmp_path, capsys):
    """`reliability sweep`: each cell's mean and 95% t-interval over seeds, recomputed from the
    stored per-seed results (numpy and scipy's t quantile); one seed prints no interval (not nan)."""
    spec = tmp_path / "s.toml"
    body = ('[sweep]\nname = "t"\nmodel = "ettr-monte-carlo"\nseeds = {n}\nseeds_per_task = 1\n'
            'backend = "serial"\n[grid]\nckpt_interval_h = [0.5]\n[fixed]\nn_gpus = 4096\n'
            "rate_per_node_day = 0.0065\nrestart_h = 0.0833\njob_h = 50\nn_runs = 50\n")  # fmt: skip
    spec.write_text(body.format(n=3), encoding="utf-8")
    assert main(["sweep", str(spec), "--out", str(tmp_path / "three")]) == 0
    out = capsys.readouterr().out
    res = pl.read_parquet(tmp_path / "three" / "results.parquet")
    v = np.sort(res.filter(pl.col("key") == "mc_mean_ettr")["value"].to_numpy())
    assert len(v) == 3
    half = scipy_stats.t.ppf(0.975, 2) * v.std(ddof=1) / math.sqrt(3)
    line = next(ln for ln in out.splitlines() if "mc_mean_ettr" in ln)
    assert f"{v.mean():.5f}  [{v.mean() - half:.5f}, {v.mean() + half:.5f}]  n=3" in line
    spec.write_text(body.format(n=1), encoding="utf-8")
    assert main(["sweep", str(spec), "--out", str(tmp_path / "one")]) == 0
    out = capsys.readouterr().out
    assert "(one seed: no interval)" in out
    assert "nan" not in out.lower()


def test_bundled_synthetic_export_is_reproducible(tmp_path):
    """datasets/README.md: the bundled export is what
    ``synthetic_sacct(path, 2000, seed=7, n_nodes=256, days=30)`` writes, byte for byte."""
    synthetic_sacct(tmp_path / "s.psv", 2000, seed=7, n_nodes=256, days=30)
    bundled = sample_files()["synthetic/sacct_synth_2000.psv"].read_bytes()
    assert (tmp_path / "s.psv").read_bytes() == bundled


def test_synthetic_sacct_fits_the_cluster(tmp_path):
    """On a 48-node cluster no allocation names a node beyond node47 (1,024-GPU jobs need 128
    nodes: they are not drawn), and bad arguments are refused."""
    synthetic_sacct(tmp_path / "s.psv", 3000, seed=1, n_nodes=48)
    alloc = [r for r in _psv(tmp_path / "s.psv") if "." not in r["JobID"]]
    assert len(alloc) == 3000
    numbers = [
        int(x) for r in alloc for x in re.findall(r"\d+", r["NodeList"].removeprefix("node"))
    ]
    assert numbers
    assert max(numbers) <= 47
    assert max(int(r["NNodes"]) for r in alloc) <= 48
    for kwargs, match in [({"n_jobs": 0}, "n_jobs"), ({"n_nodes": 0}, "n_nodes"), ({"days": 0}, "days"),
                          ({"start": datetime(2025, 1, 1)}, "time-zone")]:  # fmt: skip
        args = {"n_jobs": 10, "seed": 1} | kwargs
        with pytest.raises(ValueError, match=match):
            synthetic_sacct(tmp_path / "x.psv", args.pop("n_jobs"), **args)


def test_sweep_files_are_checked(tmp_path, capsys):
    """The shipped sweep files load; a parameter the model does not take (a typo would give
    identical cells), a missing one, or one in both tables is refused naming the key."""
    for path in sorted((ROOT / "pipelines").glob("sweep-*.toml")):
        spec = load_sweep(path)
        assert spec.cells(), path
    head = '[sweep]\nmodel = "pod-availability"\nseeds = 2\n'
    for body, message in [
        ("[grid]\nmachine_repair_median = [48.0, 96.0]\n", "[grid].machine_repair_median: not a parameter"),
        ("[grid]\ndays = [30]\n[fixed]\ndays = 30\n", "'days' is in both [grid] and [fixed]"),
        ('[sweep]\nmodel = "ettr-monte-carlo"\n[fixed]\nn_gpus = 8\n', "needs ckpt_interval_h, rate_per_node_day, restart_h"),
    ]:  # fmt: skip
        spec = tmp_path / "bad.toml"
        spec.write_text(body if body.startswith("[sweep]") else head + body, encoding="utf-8")
        assert main(["sweep", str(spec), "--out", str(tmp_path / "o")]) == 2
        assert message in capsys.readouterr().err


def test_analyze_takes_the_accelerators_per_node_from_the_data(tmp_path, capsys):
    """A TPU pod's hosts hold 4 chips: the model MTTF of a 64-chip job is 1/(16 r_f), not
    1/(8 r_f) as with the default of 8 GPUs per node (it came out twice the measured)."""
    import polars as pl

    assert (
        main(["simulate", "pod", "--days", "30", "--seed", "2", "--out", str(tmp_path / "p")]) == 0
    )
    assert (
        main(
            [
                "ingest",
                "pod",
                str(tmp_path / "p" / "pod_events.jsonl"),
                "--into",
                str(tmp_path / "d"),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["analyze", str(tmp_path / "d"), "--min-gpus", "64"]) == 0
    out = capsys.readouterr().out
    assert "accelerators per node: 4 (the most one node held in the data" in out
    analysis = tmp_path / "d" / "analysis"
    rate = pl.read_parquet(analysis / "mttf_summary.parquet").item(0, "rate_per_1000_node_days")
    row = pl.read_parquet(analysis / "mttf_by_size.parquet").filter(pl.col("bucket") == "64")
    # MTTF [h] = 24 / (N r_f) with N = 64 chips / 4 per host = 16 hosts
    assert row.item(0, "model_mttf_h") == pytest.approx(24 / (16 * rate / 1000), rel=1e-9)


# ---------------------------------------------------------------- plan --compare-strategies

BASE16K = [
    "plan",
    "--gpus",
    "16384",
    "--rate",
    "6.5e-3",
    "--target-ettr",
    "0.9",
    "--restart-min",
    "5",
]


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (["--repair-hours", "1e9"], "--repair-hours"),
        (["--repair-hours", "inf"], "--repair-hours"),
        (["--repair-hours", "0"], "--repair-hours"),
        (["--replica-nodes", "3"], "--replica-nodes"),
        (["--peer-copies", "5000"], "--peer-copies"),
        (["--variant", "foo"], "--variant"),
    ],
)
def test_plan_compare_refuses_naming_the_flag(extra, flag, capsys):
    assert main([*BASE16K, "--compare-strategies", *extra]) != 0
    err = capsys.readouterr().err
    assert f"error: {flag}" in err
    assert "replica_nodes" not in err
    assert "variant must" not in err


def test_plan_help_lists_every_variant_and_explains_flags(capsys):
    from reliability.models.recovery.ettr import VARIANTS

    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert all(v in out for v in VARIANTS)
    for flag in ("--target-ettr", "--gpus-per-node"):
        assert re.search(re.escape(flag) + r" \S+ [A-Za-z]", out), flag


def test_plan_compare_when_the_target_is_unreachable(capsys):
    # 2,048 nodes at 6.5e-3 per node-day with a 30-min queue: lam (q + u0) alone is 0.3, so no
    # interval reaches 0.9; the comparison is made at the best interval (write 2 min)
    args = [*BASE16K, "--queue-min", "30", "--write-min", "2", "--compare-strategies"]
    assert main(args) == 0
    out = capsys.readouterr().out
    m = re.search(r"compared at ([\d.]+) min, the interval that maximises", out)
    assert m, out
    # independent check: the renewal ETTR (Daly 2006 §3) on a fine grid peaks there
    lam, u0, q, w = 2048 * 6.5e-3 / 24, 5 / 60, 0.5, 2 / 60

    def ettr(dt):
        s = dt + w
        b = (-math.expm1(-lam * (u0 + s)) / lam + -math.expm1(-lam * (u0 + s)) * q) / math.exp(
            -lam * (u0 + s)
        )
        return dt / (-math.expm1(-lam * s) / lam + -math.expm1(-lam * s) * (q + b))

    grid = np.linspace(1 / 60, 2, 200001)
    best_min = 60 * grid[np.argmax([ettr(x) for x in grid])]
    assert float(m.group(1)) == pytest.approx(best_min, abs=0.051)
    assert "Best:" in out
    assert "target" in out


def test_plan_compare_counts_read_as_words(capsys):
    assert (
        main(
            [
                "plan",
                "--gpus",
                "8",
                "--rate",
                "6.5e-3",
                "--target-ettr",
                "0.9",
                "--restart-min",
                "5",
                "--interval-min",
                "30",
                "--compare-strategies",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "1 nodes" not in out
    assert "1 replicas" not in out
    assert "elastic does not apply" in out
    assert (
        main([*BASE16K, "--interval-min", "30", "--repair-hours", "8000", "--compare-strategies"])
        == 0
    )
    out = capsys.readouterr().out
    s = int(scipy_stats.poisson.ppf(0.99, 2048 * 6.5e-3 / 24 * 8000)) + 1
    assert f"{s:,} spare nodes" in out
    assert "more than the job's own 2,048 nodes" in out


def test_plan_compare_repair_time_from_component_failures(tmp_path, capsys):
    # no node states, two closed node repairs of 2 h and 6 h and one open: the mean is 4 h
    f = tmp_path / "cf.csv"
    f.write_text(
        "component_type,component_id,failed_at,repaired_at\n"
        "node,n1,2026-01-01T00:00:00Z,2026-01-01T02:00:00Z\n"
        "node,n2,2026-01-02T00:00:00Z,2026-01-02T06:00:00Z\n"
        "node,n3,2026-01-03T00:00:00Z,\n",
        encoding="utf-8",
    )
    assert (
        main(["ingest", "health", str(f), "--into", str(tmp_path / "ds"), "--cluster", "c1"]) == 0
    )
    capsys.readouterr()
    args = ["plan", "--gpus", "1024", "--rate", "6.5e-3", "--dataset", str(tmp_path / "ds"),
            "--target-ettr", "0.9", "--restart-min", "5", "--write-min", "1", "--compare-strategies"]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "node repair time not given" not in out
    assert "no closed repair spells in its node states" in out
    assert "2 node failures (4.0 h)" in out
    assert "repaired in 4.0 h on average" in out
