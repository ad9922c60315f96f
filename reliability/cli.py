"""The ``reliability`` command: a thin layer over the library.

reliability ingest KIND FILE...|- --into DIR [--cluster NAME] [--tz ZONE] [--strict] [--replace]
                  [--wait SECONDS]
reliability info DIR
reliability verify DIR
reliability repair DIR
reliability run PIPELINE.toml [--out DIR]
reliability lemon train DIR (--labels FILE | --sim-truth SIMDIR) --out MODEL
reliability lemon score DIR [--model MODEL]
reliability availability --mode static|reconfigurable --host-availability A [--target T]
reliability plan --gpus N --rate R_F --target-ettr E [--restart-min U0] [--write-min W]
                 [--dataset DIR] [--compare-strategies ...]
reliability collect slurm --into DIR [--cluster NAME] [--since ISO|auto] [--until ISO] [--dry-run]
                   [--wait SECONDS]
reliability demo [--into DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from reliability._version import __version__
from reliability.errors import (
    Hint,
    ReliabilityError,
    message_of,
    render_message,
    replace_text,
    value_text,
)
from reliability.ingest import READERS, reader_options
from reliability.store import Dataset, IngestOutcome

if TYPE_CHECKING:
    from reliability.models.failures import MTTFResult
    from reliability.models.recovery import PlanResult, RecoveryCosts, StrategyComparison

__all__ = ["main"]

_LARGE = 50 * 1024 * 1024  # show a progress bar when the inputs add up to more than this


def _preset_help(kind: str) -> str:
    """Say ``--preset``'s choices: the bundled presets of one kind (``cluster`` or ``pod``).

    Read from the preset files without importing the simulator (the CLI's help stays fast).
    """
    from importlib import resources

    root = resources.files("reliability") / "sim" / "presets"
    names = sorted(
        p.name.removesuffix(".toml")
        for p in root.iterdir()
        if p.name.endswith(".toml") and f"[{kind}]" in p.read_text(encoding="utf-8")
    )
    return f"{', '.join(names)}, or a TOML file"


def _count(text: str) -> int:
    """Parse a count of GPUs (an integer >= 0) for argparse."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="reliability", description="Reliability analytics for ML clusters."
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    _add_ingest(sub)
    _add_dataset_commands(sub)
    an = _add_analyze(sub)
    _add_signals(sub)
    _add_simulate(sub)
    _add_plan(sub)
    _add_lemon(sub)
    _add_sweep_and_run(sub)
    _add_fleet(sub)
    _add_availability(sub)
    _add_collect(sub)
    _add_compare(sub, an)
    return p


def _add_ingest(sub: Any) -> None:
    """Add the ``ingest`` command: a reader kind, files and the reader options as flags."""
    ing = sub.add_parser("ingest", help="read raw logs into a Dataset folder")
    ing.add_argument(
        "kind",
        choices=sorted(READERS),
        help="what the files are: "
        + "; ".join(f"{k}: {s.summary}" for k, s in sorted(READERS.items())),
    )
    ing.add_argument("files", nargs="+", help="input files; - reads standard input")
    ing.add_argument("--into", required=True, type=Path, help="Dataset folder (created if missing)")
    _reader_flags(ing)
    ing.add_argument("--strict", action="store_true", help="fail if any row would be quarantined")
    ing.add_argument(
        "--replace",
        action="store_true",
        help="re-read files already ingested (e.g. with a corrected --tz) and replace their rows",
    )
    ing.add_argument(
        "--wait",
        dest="wait_s",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="if another process is writing the Dataset, wait up to SECONDS for it to finish "
        "(default 0: refuse at once)",
    )
    ing.add_argument(
        "--backend",
        choices=["serial", "processes", "dask"],
        help="partitioned ingestion: one task per file on local processes or a Dask cluster",
    )
    ing.add_argument("--workers", type=int, help="worker processes (default: all cores)")
    ing.add_argument("--scheduler", help="Dask scheduler address, e.g. tcp://host:8786")
    ing.add_argument(
        "--observed-at",
        help="when the export was taken (ISO 8601 with offset): what was still open then is "
        "open 'now' (default: the latest time in the file, said when it matters)",
    )


def _add_dataset_commands(sub: Any) -> None:
    """Add the commands on a Dataset folder itself: ``info``, ``verify``, ``repair``."""
    info = sub.add_parser("info", help="summarise a Dataset folder (tables, inputs, quarantine)")
    info.add_argument("dataset", type=Path)
    ver = sub.add_parser(
        "verify", help="check every part of a Dataset against its manifest (sizes, sha256, rows)"
    )
    ver.add_argument("dataset", type=Path)
    rep = sub.add_parser(
        "repair", help="rebuild a lost manifest from the parts, or drop damaged inputs"
    )
    rep.add_argument("dataset", type=Path)


def _add_analyze(sub: Any) -> argparse.ArgumentParser:
    """Add the ``analyze`` command (its attribution and r_f options are also ``compare``'s)."""
    an = sub.add_parser(
        "analyze", help="attribute failures, fit r_f and MTTF(N), print the headline table"
    )
    an.add_argument("dataset", type=Path)
    an.add_argument(
        "--min-gpus",
        type=_count,
        default=129,
        help="job size for r_f (paper: > 128 GPUs)",
    )
    an.add_argument(
        "--before-min",
        type=float,
        default=10.0,
        help="attribution window before an attempt's end [min]",
    )
    an.add_argument(
        "--after-min",
        type=float,
        default=5.0,
        help="attribution window after an attempt's end [min]",
    )
    an.add_argument(
        "--gpus-per-node",
        type=int,
        help="accelerators per node, for MTTF = 1/(N r_f) with N nodes (default: the most one "
        "node held in the data, 8 if no job held any; TPU hosts hold 4)",
    )
    an.add_argument(
        "--requeue-exit-codes",
        type=int,
        nargs="*",
        default=[],
        metavar="CODE",
        help="the cluster's RequeueExit / RequeueExitHold codes (scontrol show config): requeues "
        "the application asked for count as the user's, not the machine's",
    )
    an.add_argument(
        "--reasons",
        type=Path,
        metavar="FILE",
        help="TOML with your site's node-state reason patterns (administrative = [...], fault = "
        "[...], [components]); see reliability.reasons",
    )
    return an


def _add_signals(sub: Any) -> None:
    """Add the ``signals`` command."""
    sg = sub.add_parser(
        "signals",
        help="which signals (Xids, DCGM fields, health checks, drain reasons) predicted job "
        "failures on this cluster, and what drain policies built on them would have caught",
    )
    sg.add_argument("dataset", type=Path)
    sg.add_argument(
        "--horizon-h",
        type=float,
        default=6.0,
        help="a job failure within this many hours after a signal counts [h]",
    )
    sg.add_argument("--reasons", type=Path, metavar="FILE", help="your reason patterns (TOML)")
    sg.add_argument("--csv", type=Path, help="write the signal table to this CSV file")


def _add_simulate(sub: Any) -> None:
    """Add the ``simulate cluster`` and ``simulate pod`` commands."""
    sim = sub.add_parser("simulate", help="run a bundled simulator and write its raw logs")
    simsub = sim.add_subparsers(dest="simulator", required=True)
    cl = simsub.add_parser("cluster", help="Slurm-like GPU research cluster (HPCA'25)")
    cl.add_argument("--preset", default="small", help=_preset_help("cluster"))
    cl.add_argument("--days", type=float, help="override the run length")
    cl.add_argument("--seed", type=int, default=0)
    cl.add_argument("--out", type=Path, required=True, help="output folder (raw logs + truth/)")
    cl.add_argument("--ingest", type=Path, help="also ingest the output into this Dataset folder")
    pod = simsub.add_parser(
        "pod",
        help="TPUv4-like pod: failures, repairs, maintenance, jobs and recovery paths (NSDI'24)",
    )
    pod.add_argument("--preset", default="tpuv4", help=_preset_help("pod"))
    pod.add_argument("--days", type=float)
    pod.add_argument("--seed", type=int, default=0)
    pod.add_argument("--out", type=Path, required=True)
    pod.add_argument(
        "--mode",
        choices=("reconfigurable", "static"),
        help="pod arrangement (default: the preset's): reconfigurable = cubes joined by OCSes "
        "(TPUv4), static = a fixed arrangement without OCSes (TPUv3-like)",
    )
    pod.add_argument(
        "--ft-routing",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="whether jobs may run on fault-tolerant routing around a failed OCS (default: yes; "
        "--no-ft-routing: every OCS failure interrupts the jobs on it)",
    )


def _add_plan(sub: Any) -> None:
    """Add the ``plan`` command: the checkpoint planner and the recovery strategies."""
    pl_ = sub.add_parser(
        "plan", help="checkpoint interval and restart overhead needed for a target ETTR (HPCA'25)"
    )
    pl_.add_argument("--gpus", type=int, required=True, help="job size [GPUs]")
    pl_.add_argument(
        "--rate",
        type=float,
        help="r_f, failures per node-day (e.g. 2.34e-3); required unless --dataset fits it",
    )
    pl_.add_argument(
        "--target-ettr",
        type=float,
        required=True,
        help="ETTR the job must reach: expected productive fraction of wall time, in (0, 1) (e.g. 0.9)",
    )
    pl_.add_argument("--restart-min", type=float, help="restart overhead u0 [min]")
    pl_.add_argument("--write-min", type=float, default=0.0, help="blocking checkpoint write [min]")
    pl_.add_argument(
        "--queue-min",
        type=float,
        help="queue wait per interruption [min] (default: measured with --dataset, else 0)",
    )
    pl_.add_argument(
        "--gpus-per-node",
        type=int,
        default=8,
        help="GPUs per node (default 8): job nodes = GPUs / this",
    )
    pl_.add_argument(
        "--variant",
        default="renewal",
        help="ETTR form: renewal (exact, default), simplified, queue, hpca, finite (finite needs a job "
        "length, which plan does not take: refused)",
    )
    # recovery strategies (issue 36 §2)
    pl_.add_argument(
        "--dataset",
        type=Path,
        help="a Dataset: fit r_f from it (when --rate is not given) and measure the queue wait after "
        "hardware interruptions and node repair times (the defaults of --queue-min and --repair-hours)",
    )
    pl_.add_argument(
        "--min-gpus", type=_count, default=129, help="with --dataset: jobs that enter r_f"
    )
    pl_.add_argument(
        "--compare-strategies",
        action="store_true",
        help="compare checkpoint-restart, hot spares, peer (in-memory) checkpoints and elastic training",
    )
    pl_.add_argument(
        "--interval-min",
        type=float,
        help="today's checkpoint interval [min] (default: the planner's recommendation)",
    )
    pl_.add_argument("--repair-hours", type=float, help="mean node repair time [h] (hot spares)")
    pl_.add_argument(
        "--spares", type=int, help="hot spare nodes (default: the fewest for --target-no-wait)"
    )
    pl_.add_argument(
        "--target-no-wait",
        type=float,
        default=0.99,
        help="probability that an interruption finds a spare free",
    )
    pl_.add_argument("--pool-nodes", type=float, help="nodes the spares serve (default: the job's)")
    pl_.add_argument("--peer-write-s", type=float, help="peer checkpoint write [s] (default 10)")
    pl_.add_argument(
        "--peer-restore-min", type=float, help="restore from a peer [min] (default: --restart-min)"
    )
    pl_.add_argument(
        "--peer-copies", type=int, default=1, help="peers holding each checkpoint copy"
    )
    pl_.add_argument(
        "--replica-nodes", type=float, default=1.0, help="nodes per data-parallel replica (elastic)"
    )
    pl_.add_argument(
        "--heal-min",
        type=float,
        help="time a failed replica is out [min] (default: queue + restart)",
    )
    pl_.add_argument("--reconfig-s", type=float, help="elastic pause per failure [s] (default 60)")
    pl_.add_argument(
        "--elastic-slowdown",
        type=float,
        default=0.0,
        help="steady throughput cost of elastic training, a fraction in [0, 1)",
    )


def _add_lemon(sub: Any) -> None:
    """Add the ``lemon train`` and ``lemon score`` commands."""
    lem = sub.add_parser("lemon", help="train or apply the lemon-node detector (HPCA'25)")
    lemsub = lem.add_subparsers(dest="lemon_command", required=True)
    lt = lemsub.add_parser("train", help="fit a detector on a Dataset with known lemon nodes")
    lt.add_argument("dataset", type=Path)
    labels = lt.add_mutually_exclusive_group(required=True)
    labels.add_argument(
        "--labels", type=Path, help="text/CSV file: one known lemon node name per line"
    )
    labels.add_argument(
        "--sim-truth", type=Path, help="a simulator output folder (uses its truth/nodes.parquet)"
    )
    lt.add_argument("--out", type=Path, required=True, help="model file to write (JSON)")
    lt.add_argument("--window-days", type=int, default=56)
    lt.add_argument("--target-precision", type=float, default=0.85)
    ls = lemsub.add_parser(
        "score",
        help="flag lemon nodes: a statistical test of each node's failures against the fleet's "
        "rate (default), or a detector you trained (--model)",
    )
    ls.add_argument("dataset", type=Path)
    ls.add_argument(
        "--model",
        type=Path,
        help="a detector trained on your own history (reliability lemon train), or 'bundled' (trained "
        "on this package's simulator: it does not transfer to other fleets); default: the "
        "statistical test, which needs no training",
    )
    ls.add_argument(
        "--window-days",
        type=int,
        help="the test: only the last N days (default: all); a detector: its feature window (56)",
    )
    ls.add_argument("--fdr", type=float, default=0.1, help="the test's false-discovery rate")
    ls.add_argument("--csv", type=Path, help="write one row per node to this CSV file")
    ls.add_argument("--top", type=int, default=20)


def _add_sweep_and_run(sub: Any) -> None:
    """Add the ``sweep`` and ``run`` commands (a sweep or a pipeline file)."""
    sw = sub.add_parser("sweep", help="run a parameter sweep (simulator or Monte Carlo) over seeds")
    sw.add_argument("spec", type=Path, help="sweep TOML (see pipelines/sweep-*.toml)")
    sw.add_argument("--backend", choices=["serial", "processes", "dask"])
    sw.add_argument("--workers", type=int)
    sw.add_argument("--scheduler", help="Dask scheduler address, e.g. tcp://host:8786")
    sw.add_argument("--out", type=Path)
    run = sub.add_parser("run", help="run a pipeline file and write its report (HTML, PDF)")
    run.add_argument("pipeline", type=Path, help="pipeline TOML (see pipelines/)")
    run.add_argument(
        "--out", type=Path, help="output folder (default: the pipeline's [pipeline].out)"
    )
    run.add_argument(
        "--scheduler",
        help="Dask scheduler address (tcp://host:8786, or 'local'): attribute one cluster per "
        "task there (default: the pipeline's [pipeline].scheduler, else in this process)",
    )


def _add_fleet(sub: Any) -> None:
    """Add the ``fleet`` command: a Dataset larger than memory, part by part."""
    fl = sub.add_parser(
        "fleet",
        help="analyse a fleet of clusters part by part (larger than memory) and write its report",
    )
    fl.add_argument("dataset", type=Path)
    fl.add_argument("--out", type=Path, required=True, help="output folder (report and parts)")
    fl.add_argument(
        "--scheduler",
        help="Dask scheduler address (tcp://host:8786, or 'local' for workers on this machine): "
        "one cluster per task there (default: in this process); the workers must see the "
        "Dataset and --out at the same paths",
    )
    fl.add_argument(
        "--workers", type=int, help="with --scheduler local: worker processes (default: CPUs)"
    )
    fl.add_argument(
        "--analysis",
        type=Path,
        metavar="FILE",
        help="a pipeline TOML whose [analysis] and [attribution.reasons] tables to use "
        "(default: the defaults)",
    )
    fl.add_argument("--title", default="Fleet reliability")
    fl.add_argument(
        "--reuse-attribution",
        action="store_true",
        help="keep the attributed parts of the last run into --out when they are of this "
        "Dataset as it is now, with the same attribution settings, by this build of the "
        "package (default: attribute again)",
    )


def _fleet(args: argparse.Namespace) -> int:
    """Run ``reliability fleet``."""
    import tomllib

    from reliability.parallel import Executor
    from reliability.pipeline.analysis import AnalysisConfig
    from reliability.pipeline.fleet import run_fleet
    from reliability.reasons import ReasonRules

    if args.workers is not None and args.scheduler != "local":
        raise ReliabilityError("--workers: only with --scheduler local (workers on this machine)")
    if args.workers is not None and args.workers < 1:
        raise ReliabilityError(f"--workers: expected an integer >= 1, got {args.workers}")
    analysis, reasons = None, None
    if args.analysis is not None:
        try:
            table = tomllib.loads(args.analysis.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            raise ReliabilityError(f"--analysis {args.analysis}: {e}") from None
        where = str(args.analysis)
        analysis = AnalysisConfig.from_table(table.get("analysis", {}), where, args.analysis.parent)
        rules = (table.get("attribution") or {}).get("reasons") or {}
        reasons = ReasonRules.from_mapping(rules, f"{where}: [attribution.reasons]")
    ds = _dataset(args.dataset)
    if args.scheduler is None:
        ex = Executor("serial")
    elif args.scheduler == "local":
        ex = Executor("dask", workers=args.workers)
    else:
        ex = Executor("dask", scheduler=args.scheduler)
    with ex:
        run = run_fleet(
            ds,
            args.out,
            executor=ex,
            analysis=analysis,
            reasons=reasons,
            title=args.title,
            reuse_attribution=args.reuse_attribution,
            progress=lambda line: print(line, file=sys.stderr),
        )
    print(run)
    return 0


def _add_availability(sub: Any) -> None:
    """Add the ``availability`` command (NSDI'24 Figure 1)."""
    av = sub.add_parser(
        "availability", help="job availability vs size of a TPU pod (NSDI'24 Figure 1)"
    )
    av.add_argument("--mode", choices=["reconfigurable", "static"], default="reconfigurable")
    av.add_argument("--host-availability", type=float, required=True)
    av.add_argument(
        "--pod", default=None, help="tpuv4 (default for reconfigurable), tpuv3, tpuv4-static"
    )
    av.add_argument(
        "--no-ft-routing",
        action="store_true",
        help="OCS faults interrupt jobs (with --ocs-availability, reconfigurable mode)",
    )
    av.add_argument("--ocs-availability", type=float)
    av.add_argument("--link-availability", type=float)
    av.add_argument(
        "--target", type=float, help="also print the host availability this job availability needs"
    )


def _add_collect(sub: Any) -> None:
    """Add the ``collect`` and ``demo`` commands."""
    col = sub.add_parser(
        "collect", help="export sacct / sacctmgr from a live Slurm and ingest it (incremental)"
    )
    col.add_argument("source", choices=["slurm"])
    col.add_argument("--into", required=True, type=Path, help="Dataset folder (raw: DIR/raw/)")
    col.add_argument("--cluster", help="Slurm cluster name (sacct --clusters); default: local")
    col.add_argument(
        "--since",
        default="auto",
        help="window start, ISO 8601 (UTC if no offset), or 'auto' (default): where the last "
        "collection ended, minus --overlap-h",
    )
    col.add_argument("--until", help="window end, ISO 8601 (UTC if no offset); default: now")
    col.add_argument("--overlap-h", type=float, default=1.0, help="overlap for --since auto [h]")
    col.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    col.add_argument(
        "--wait",
        dest="wait_s",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="if another process is writing the Dataset, wait up to SECONDS for it to finish "
        "(default 0: refuse at once)",
    )
    demo = sub.add_parser(
        "demo",
        help="simulate the small cluster, ingest it with the bundled samples, print the summary",
    )
    demo.add_argument("--into", type=Path, default=Path("reports/demo"))
    demo.add_argument("--seed", type=int, default=0)


def _add_compare(sub: Any, an: argparse.ArgumentParser) -> None:
    """Add the ``compare`` command, with ``analyze``'s attribution and r_f options."""
    cmp = sub.add_parser(
        "compare",
        help="your r_f, failure components and largest-job MTTF beside published fleets "
        "(RSC-1/2, Llama 3, FT-HSDP, Delta, ...)",
    )
    cmp.add_argument("dataset", type=Path)
    for a in an._actions:  # the same attribution and r_f options as `analyze`
        if a.dest not in ("help", "dataset"):
            cmp._add_action(a)


def _reader_flags(ing: argparse.ArgumentParser) -> None:
    """Add a flag per reader option (:func:`reliability.ingest.reader_options`) to ``ingest``."""
    for name, o in reader_options().items():
        if not o.cli:
            continue
        kinds = [k for k, s in READERS.items() if s.option(name) is not None]
        extra = {"type": int} if o.type == "year" else {}
        if o.choices:
            extra["choices"] = list(o.choices)
        for_kinds = "" if len(kinds) > 2 else f" [{', '.join(kinds)}]"
        ing.add_argument(o.flag, dest=name, help=o.help + for_kinds, **extra)  # type: ignore[arg-type]


def _options(args: argparse.Namespace) -> dict[str, object]:
    """Return the reader options given as flags, in the reader's terms (``cluster``, ``tz`` apart)."""
    opts: dict[str, object] = {}
    for name, o in reader_options().items():
        value = getattr(args, name, None) if o.cli else None
        if value is None or value == "" or name in ("cluster", "tz"):
            continue
        if o.type == "names":
            value = [f.strip() for f in value.split(",") if f.strip()]
        elif o.type == "time":
            value = _aware_time(o.flag, value)
        opts[name] = value
    if args.observed_at:
        from reliability.store.observation import check_observed_at

        opts["observed_at"] = check_observed_at(args.observed_at)
    return opts


def _aware_time(flag: str, text: str) -> datetime:
    """Parse an ISO 8601 time with a UTC offset given to ``flag``."""
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ReliabilityError(
            f"{flag} {text!r}: expected ISO 8601 with a UTC offset (e.g. 2025-01-01T00:00:00Z)"
        ) from None
    if t.tzinfo is None:
        raise ReliabilityError(f"{flag} needs a UTC offset (e.g. 2025-01-01T00:00:00Z)")
    return t


def _ingest(args: argparse.Namespace) -> int:
    made = not args.into.exists()
    try:
        return _ingest_into(args)
    except BaseException:
        # a first ingest that failed leaves no empty folder behind (it is not a Dataset)
        if made and args.into.is_dir() and not any(args.into.iterdir()):
            args.into.rmdir()
        raise


def _ingest_into(args: argparse.Namespace) -> int:
    ds = Dataset(args.into)
    files = [Path(f) for f in args.files]
    total = sum(f.stat().st_size for f in files if str(f) != "-" and f.is_file())
    bar = None
    if total > _LARGE or len(args.files) > 20:
        from tqdm import tqdm

        bar = tqdm(total=len(args.files), unit="file", file=sys.stderr, disable=None)
    executor = None
    if args.backend:
        from reliability.parallel import Executor

        executor = Executor(args.backend, workers=args.workers, scheduler=args.scheduler)
    elif args.scheduler:
        raise ReliabilityError("--scheduler needs --backend dask")
    try:
        outcomes = ds.ingest(
            args.kind,
            [f if f == "-" else Path(f) for f in args.files],
            cluster=args.cluster,
            tz=args.tz,
            strict=args.strict,
            replace=args.replace,
            progress=(lambda p: bar.set_postfix_str(p.name)) if bar else None,
            executor=executor,
            wait_s=args.wait_s,
            **_options(args),
        )
    finally:
        if bar is not None:
            bar.update(len(args.files))
            bar.close()
        if executor is not None:
            executor.close()
    quarantined = 0
    for o in outcomes:
        print(o.line())
        for note in o.notes:
            print(f"  note: {_cli_terms(note, args)}")
        _mtime_hint(o)
        quarantined += o.rows_quarantined if o.status != "unchanged" else 0
    if quarantined:
        print(
            f"{quarantined} row(s) quarantined: see `reliability info {args.into}` and the quarantine table"
        )
    return 0


def _mtime_hint(outcome: IngestOutcome) -> None:
    """After a note that the export time was inferred, offer the file's modification time."""
    from reliability.store.observation import INFERRED_NOTE_END

    if not any(INFERRED_NOTE_END in n for n in outcome.notes) or outcome.path == "-":
        return
    try:
        t = datetime.fromtimestamp(Path(outcome.path).stat().st_mtime, UTC)
    except OSError:
        return
    latest = outcome.observed_until
    if latest is None or not latest <= t <= latest + MTIME_PLAUSIBLE:
        # a copied or touched file: its time says nothing about the export
        return
    print(
        f"  note: {outcome.path} was last written at {t:%Y-%m-%dT%H:%M:%SZ}: if the export wrote "
        "it then and it was not copied or edited since, that is when it was exported: ingest it "
        f"with --replace --observed-at {t:%Y-%m-%dT%H:%M:%SZ}"
    )


#: a file written this long after its latest record may still be the export itself
MTIME_PLAUSIBLE = timedelta(hours=6)


def _check_window(args: argparse.Namespace) -> None:
    """Refuse an attribution window that is not a finite number of minutes >= 0, naming the flag."""
    import math

    for flag, value in (("--before-min", args.before_min), ("--after-min", args.after_min)):
        if not (math.isfinite(value) and value >= 0):
            raise ReliabilityError(f"{flag}: expected a number of minutes >= 0, got {value:g}")


def _analyze(args: argparse.Namespace) -> int:
    from reliability._atomic import write_parquet_atomic

    bad = [c for c in args.requeue_exit_codes if not 0 <= c <= 255]
    if bad:
        raise ReliabilityError(f"--requeue-exit-codes: exit codes are 0-255, got {bad}")
    _check_window(args)
    ds = _dataset(args.dataset, jobs_for="reliability analyze")
    if args.gpus_per_node is not None and args.gpus_per_node < 1:
        raise ReliabilityError(
            f"--gpus-per-node: expected an integer >= 1, got {args.gpus_per_node}"
        )
    from reliability.analyses import analyze_cluster
    from reliability.reasons import ReasonRules

    rules = ReasonRules.from_file(args.reasons) if args.reasons else None
    c = analyze_cluster(
        ds,
        before_min=args.before_min,
        after_min=args.after_min,
        requeue_exit_codes=tuple(args.requeue_exit_codes),
        reasons=rules,
        min_gpus=args.min_gpus,
        gpus_per_node=args.gpus_per_node,
    )
    a, m, series, w = c.attribution, c.mttf, c.rates, c.workload
    jobs = a.jobs
    if args.gpus_per_node is None:
        print(
            f"accelerators per node: {a.gpus_per_node} ({a.gpus_per_node_basis}; pass --gpus-per-node)"
        )
    for zone in a.notes:
        print(f"note: {_cli_terms(zone, args)}")
    # the results' text forms: what could not be estimated is said, never printed as nan
    for result in (m, series):
        print(result.text(lambda n: _cli_terms(n, args)))
    print("job states (attempts, GPU time):")
    pct = lambda x: "–" if x is None else f"{100 * x:.2f}%"  # noqa: E731 - null: no GPU time
    for r in w.states.iter_rows(named=True):
        print(
            f"  {r['state']:<14} {r['attempts']:>10,}  {pct(r['share']):>7}  {pct(r['gpu_share']):>7} of GPU time"
        )
    print(w.text(lambda n: _cli_terms(n, args)))
    out = args.dataset / "analysis"
    frames = {
        "attributed_jobs": jobs,
        "mttf_by_size": m.by_size,
        "mttf_summary": m.summary,
        "survival": m.survival,
        "failure_rate_weekly": series.series,
        "job_states": w.states,
        "job_sizes": w.sizes,
        "projections": m.projection(),
    }
    for name, frame in frames.items():
        write_parquet_atomic(frame, out / f"{name}.parquet")
    print(f"wrote {len(frames)} tables to {out}")
    return 0


def _compare_fleets(args: argparse.Namespace) -> int:
    from reliability.analyses import attribute
    from reliability.models.failures import fit_mttf
    from reliability.models.fleets import compare_fleets
    from reliability.reasons import ReasonRules

    if args.min_gpus < 1:
        raise ReliabilityError(f"--min-gpus: expected an integer >= 1, got {args.min_gpus}")
    bad = [c for c in args.requeue_exit_codes if not 0 <= c <= 255]
    if bad:
        raise ReliabilityError(f"--requeue-exit-codes: exit codes are 0-255, got {bad}")
    if args.gpus_per_node is not None and args.gpus_per_node < 1:
        raise ReliabilityError(
            f"--gpus-per-node: expected an integer >= 1, got {args.gpus_per_node}"
        )
    _check_window(args)
    ds = _dataset(args.dataset, jobs_for="reliability compare")
    rules = ReasonRules.from_file(args.reasons) if args.reasons else None
    a = attribute(
        ds,
        before_min=args.before_min,
        after_min=args.after_min,
        requeue_exit_codes=tuple(args.requeue_exit_codes),
        reasons=rules,
        gpus_per_node=args.gpus_per_node,
    )
    jobs = a.jobs
    fit = fit_mttf(
        jobs,
        min_gpus=args.min_gpus,
        gpus_per_node=a.gpus_per_node,
        observation_end=ds.observation_end,
    )
    if fit.node_days_ <= 0:
        largest = int(jobs.get_column("n_accelerators").max() or 0) if jobs.height else 0
        raise ReliabilityError(
            f"{args.dataset}: no exposure from jobs of >= {args.min_gpus:,} GPUs (largest job: "
            f"{largest:,} GPUs), so there is no r_f to set beside the published fleets"
            + (f"; pass --min-gpus {largest} or lower" if largest >= 1 else "")
        )
    result = compare_fleets(jobs, fit=fit, observation_end=ds.observation_end)
    print(result.text(lambda n: _cli_terms(n, args)))
    return 0


def _simulate(args: argparse.Namespace) -> int:
    import math
    import time

    if args.days is not None and not (math.isfinite(args.days) and args.days > 0):
        raise ReliabilityError(f"--days: expected a run length in days > 0, got {args.days:g}")
    if args.seed < 0:
        raise ReliabilityError(f"--seed: expected an integer >= 0, got {args.seed}")
    from reliability.sim import budget

    # a run is held in memory: refuse up front one that cannot be (names --days and the limit)
    length = "--days" if args.days is not None else f"--preset {args.preset}: days ="
    if args.simulator == "pod":
        from reliability._result import fmt_pct
        from reliability.sim.pod import load_pod_preset, simulate_pod

        pod_cfg = load_pod_preset(args.preset)
        budget.refuse_run(budget.pod_run_size(pod_cfg, args.days), length)
        r = simulate_pod(
            pod_cfg, days=args.days, seed=args.seed, mode=args.mode, ft_routing=args.ft_routing
        )
        r.write(args.out)
        print(
            f"{r.config.name}: {r.config.n_cubes} cubes ({r.config.mode}), {r.config.days:g} days, seed {args.seed}: "
            f"{r.events.height:,} events -> {args.out / 'pod_events.jsonl'}"
        )
        for row in r.truth.iter_rows(named=True):
            print(
                f"  {row['component_type']:<9} {row['components']:>6,} components  {row['failures']:>6,} failures  "
                f"availability {fmt_pct(row['availability'])}"
            )
        st = r.job_stats
        if st:
            # a job still queued at the end never started: it is in no log (nor in an ingest)
            ran = r.jobs.filter(r.jobs["attempts"] > 0) if r.jobs.height else r.jobs
            hit = fmt_pct(float((ran["hardware_interruptions"] > 0).mean()) if ran.height else None)
            print(
                f"  jobs: {st['jobs']:,} submitted, {ran.height:,} started ({hit} of those saw a hardware "
                f"interruption), {st['reroutes']} reroutes "
                f"around OCS faults, {st['preemptions']:,} preemptions, {st['preflight_fails']} preflight catches, "
                f"{st['crossconnect_changes']:,} OCS circuit changes"
            )
        return 0
    from tqdm import tqdm

    from reliability.sim.config import load_preset
    from reliability.sim.run import simulate_cluster
    from reliability.simulated import ingest_simulation

    cfg = load_preset(args.preset)
    budget.refuse_run(budget.cluster_run_size(cfg, args.days), length)
    if args.days is not None:
        cfg = cfg.with_days(args.days)
    t0 = time.perf_counter()
    with tqdm(
        total=round(cfg.days), unit="day", file=sys.stderr, disable=None, desc=cfg.name
    ) as bar:
        result = simulate_cluster(
            cfg, seed=args.seed, progress=lambda t: bar.update(round(t / 86400) - bar.n)
        )
    result.write(args.out)
    secs = time.perf_counter() - t0
    attempts = result.log.frame("attempt").height
    print(
        f"{cfg.name}: {cfg.n_nodes} nodes, {cfg.days:g} days, seed {args.seed}: {result.jobs.height:,} jobs, "
        f"{attempts:,} attempts, {result.events_processed:,} events in {secs:.1f} s -> {args.out}"
    )
    if args.ingest:
        for o in ingest_simulation(args.out, args.ingest):
            print(o.line())  # type: ignore[attr-defined]
    return 0


def _read_labels(path: Path) -> set[str]:
    """Read the node names of a ``--labels`` file.

    One per line (a CSV's first column), ``#`` comments; a first line ``node`` (a header) is
    skipped, names that start with "node" are names.
    """
    names = [
        ln.split(",")[0].strip()
        for ln in path.read_text(encoding="utf-8").splitlines()
        if ln.strip() and not ln.lstrip().startswith("#")
    ]
    if names and names[0].lower() in ("node", "nodename", "node_name"):
        names = names[1:]
    if not names:
        raise ReliabilityError(f"--labels: {path} names no node")
    return set(names)


#: fewer known lemon nodes than this: a trained detector's figures are not to be trusted
_FEW_LEMONS = 5


def _signals(args: argparse.Namespace) -> int:
    """``reliability signals``: the signal table and the drain policies."""
    import math

    from reliability._atomic import write_bytes_atomic
    from reliability.models.nodes.signals import signal_calibration
    from reliability.reasons import ReasonRules
    from reliability.report import csv_safe

    if not (math.isfinite(args.horizon_h) and args.horizon_h > 0):
        raise ReliabilityError(
            f"--horizon-h: expected a number of hours > 0, got {args.horizon_h:g}"
        )
    rules = ReasonRules.from_file(args.reasons) if args.reasons else None
    ds = _dataset(args.dataset, jobs_for="reliability signals")
    s = signal_calibration(ds, horizon_h=args.horizon_h, reasons=rules)
    print(s.text(lambda n: _cli_terms(n, args)))
    if s.policies.height:
        print(
            "drain policies (precision: firings followed by a hardware failure of the node within "
            f"{args.horizon_h:g} h; recall: hardware failures a firing preceded):"
        )
        for r in s.policies.iter_rows(named=True):
            prec = "-" if r["precision"] is None else f"{r['precision']:.2f}"
            rec = "-" if r["recall"] is None else f"{r['recall']:.2f}"
            print(
                f"  {r['signal']:<34} {r['k']} within {r['within_h']:g} h: {r['firings']:>5} firings, "
                f"precision {prec}, recall {rec}"
            )
    if args.csv:
        write_bytes_atomic(csv_safe(s.signals).write_csv().encode(), args.csv)
        print(f"wrote {s.signals.height} signal kinds to {args.csv}")
    return 0


def _lemon_test(args: argparse.Namespace) -> int:
    """``lemon score`` without ``--model``: the statistical test, one row per node."""
    from reliability._atomic import write_bytes_atomic
    from reliability.models.nodes.lemon_testing import lemon_test
    from reliability.report import csv_safe

    if args.window_days is not None and args.window_days < 1:
        raise ReliabilityError(
            f"--window-days: expected a number of days >= 1, got {args.window_days}"
        )
    if not 0.0 < args.fdr < 1.0:
        raise ReliabilityError(f"--fdr: expected a rate in (0, 1) (e.g. 0.1), got {args.fdr:g}")
    if args.top < 1:
        raise ReliabilityError(f"--top: expected a number of nodes >= 1, got {args.top}")
    ds = _dataset(args.dataset, jobs_for="reliability lemon score")
    t = lemon_test(ds, fdr=args.fdr, window_days=args.window_days)
    print(t.text(lambda n: _cli_terms(n, args)))
    if args.csv:
        # node names and reasons come from the logs: no spreadsheet formulas
        write_bytes_atomic(csv_safe(t.nodes).write_csv().encode(), args.csv)
        print(f"wrote {t.nodes.height:,} nodes to {args.csv}")
    return 0


def _lemon(args: argparse.Namespace) -> int:
    import polars as pl

    if args.lemon_command == "score" and args.model is None:
        return _lemon_test(args)
    if args.window_days is None:
        args.window_days = 56
    from reliability.analyses import lemon_report, load_detector
    from reliability.models.nodes import LemonDetector, node_features
    from reliability.models.nodes.lemon_features import FEATURES

    if args.window_days < 7 or args.window_days % 7:
        raise ReliabilityError(
            f"--window-days: expected a whole number of weeks in days (7, 14, ..., 56; the "
            f"features step by 7 days), got {args.window_days}"
        )
    if args.lemon_command == "train" and not 0.0 < args.target_precision < 1.0:
        raise ReliabilityError(
            f"--target-precision: expected a fraction in (0, 1) (e.g. 0.85), got {args.target_precision:g}"
        )
    if args.lemon_command == "score":
        if args.top < 1:
            raise ReliabilityError(f"--top: expected a number of nodes >= 1, got {args.top}")
        if args.model is not None and str(args.model) != "bundled" and not args.model.is_file():
            raise ReliabilityError(f"--model: {args.model}: no such file")
    if args.lemon_command == "train" and args.labels and not args.labels.is_file():
        raise ReliabilityError(f"--labels: {args.labels}: no such file")
    det = None
    if args.lemon_command == "score":
        bundled = str(args.model) == "bundled"
        det = load_detector(args.model)
        if bundled:
            print(
                "warning: the bundled detector was trained on this package's simulator; on two "
                "independent generators' fleets it found none of 24 lemons on one and 5 of 24 "
                "(with 2 false flags) on the other (benchmarks/lemon_transfer.py): prefer the "
                "statistical test (no --model) or a detector trained on your own history",
                file=sys.stderr,
            )
        trained = getattr(det, "window_days_", None)
        if trained is not None and trained != args.window_days:
            # counts grow with the window: on another one the probabilities are not calibrated
            raise ReliabilityError(
                f"--window-days: the detector was trained on {trained}-day windows, and its "
                f"probabilities hold for that window only (the features are counts over it); "
                f"pass --window-days {trained}, or train one on {args.window_days}-day windows: "
                f"reliability lemon train --window-days {args.window_days}"
            )
        if trained is None:
            print(
                f"warning: {args.model} does not record the window it was trained on (fitted "
                f"without window_days=, or saved before windows were recorded): its "
                f"probabilities are taken to hold for the {args.window_days}-day window asked "
                "for; retrain it with `reliability lemon train` to be sure",
                file=sys.stderr,
            )
    ds = _dataset(args.dataset, jobs_for=f"reliability lemon {args.lemon_command}")
    if args.lemon_command == "score":
        # the report's scoring, the same call (the window was checked against the detector's)
        report = lemon_report(ds, window_days=args.window_days, model=det)
        if report.scores.height == 0:
            raise ReliabilityError("; ".join(_cli_terms(n, args) for n in report.notes))
    else:
        feats = node_features(ds, args.window_days, 7)
    if ds.scan("health_events").select(pl.len()).collect().item() == 0 and (
        ds.scan("node_states").select(pl.len()).collect().item() == 0
    ):
        print(
            "warning: the Dataset holds no health events and no node states (only jobs): the "
            "detector's strongest signals (Xids, downs, time out of service) are missing, so a "
            "low score is no all-clear; ingest the kernel logs and sacctmgr events too",
            file=sys.stderr,
        )
    if args.lemon_command == "train":
        if args.labels:
            lemons = _read_labels(args.labels)
        else:
            truth = args.sim_truth / "truth" / "nodes.parquet"
            if not truth.is_file():
                raise ReliabilityError(
                    f"{args.sim_truth}: no truth/nodes.parquet (not a simulator output folder)"
                )
            lemons = set(pl.read_parquet(truth).filter(pl.col("lemon"))["node"].to_list())
        unknown = lemons - set(feats["node"].to_list())
        if unknown:
            raise ReliabilityError(f"labels name nodes not in the Dataset: {sorted(unknown)[:5]}")
        y = feats["node"].is_in(list(lemons)).to_numpy()
        det = LemonDetector(target_precision=args.target_precision).fit(
            feats.select(FEATURES), y, window_days=args.window_days
        )
        det.save(args.out)
        print(
            f"trained on {feats.height:,} node-windows ({len(lemons)} lemon node{'s' if len(lemons) != 1 else ''}): "
            f"threshold {det.threshold_:.3g}, out-of-fold precision {det.oof_precision_:.3f}, "
            f"recall {det.oof_recall_:.3f} -> {args.out}"
        )
        if det.oof_precision_ < args.target_precision:
            print(
                f"warning: the out-of-fold precision {det.oof_precision_:.3f} is below the target "
                f"{args.target_precision:g}: its flags will be wrong more often than asked",
                file=sys.stderr,
            )
        if len(lemons) < _FEW_LEMONS:
            print(
                f"warning: {len(lemons)} lemon node(s) to learn from (fewer than {_FEW_LEMONS}): the "
                "threshold and the precision rest on too few positives to trust",
                file=sys.stderr,
            )
        return 0
    scores = report.scores
    n_flag = int(scores["flagged"].sum())
    print(
        f"{n_flag} of {scores.height} nodes flagged at threshold {det.threshold_:.3f} "
        f"(window ending {scores['window_end'][0]:%Y-%m-%d}):"
    )
    print(f"  {'node':<24} {'probability':>11}  flagged  drivers")
    for node, p, flagged, drivers in (
        scores.select("node", "probability", "flagged", "drivers").head(args.top).iter_rows()
    ):
        print(f"  {node:<24} {p:11.3f}  {'yes' if flagged else 'no ':<7}  {drivers}")
    return 0


def _availability(args: argparse.Namespace) -> int:
    from reliability._result import fmt_pct
    from reliability.models.pods.availability import (
        PODS,
        job_availability,
        required_host_availability,
    )

    pod = args.pod or ("tpuv4" if args.mode == "reconfigurable" else "tpuv3")
    if pod not in PODS:
        raise ReliabilityError(f"--pod: unknown pod {pod!r}; known: {', '.join(sorted(PODS))}")
    for flag, p in (
        ("--host-availability", args.host_availability),
        ("--ocs-availability", args.ocs_availability),
        ("--link-availability", args.link_availability),
    ):
        if p is not None and not 0.0 <= p <= 1.0:
            raise ReliabilityError(f"{flag}: expected a probability in [0, 1], got {p:g}")
    if args.target is not None and not 0.0 < args.target < 1.0:
        raise ReliabilityError(
            f"--target: expected a job availability in (0, 1), got {args.target:g}"
        )
    spec = PODS[pod]
    if args.mode == "reconfigurable" and not spec.reconfigurable:
        raise ReliabilityError(
            f"--pod {pod}: fixed wiring (no OCS), so only --mode static applies to it"
        )
    no_ocs_faults = args.ocs_availability is None or args.ocs_availability >= 1.0
    if args.no_ft_routing and (args.mode == "static" or no_ocs_faults):
        # without an OCS that can be down, routing around one changes nothing: the table would
        # look like an answer to a question it did not model
        raise ReliabilityError(
            "--no-ft-routing: fault-tolerant routing only matters when an OCS can be down; "
            + (
                "--mode static has no OCS"
                if args.mode == "static"
                else "pass --ocs-availability below 1 (e.g. 0.9995) to model OCS faults"
            )
        )
    ft = not args.no_ft_routing
    print(
        f"{spec.name} ({spec.n_chips:,} chips, {args.mode}{', FT routing' if ft and args.mode == 'reconfigurable' else ''}) "
        f"at host availability {100 * args.host_availability:.2f}%:"
    )
    print("   chips   job availability" + ("   host availability needed" if args.target else ""))
    sizes = [
        s for s in (64, 128, 256, 512, 1024, 2048, 3072, 3200, 3584, 4096) if s <= spec.n_chips
    ]
    for n in sizes:
        v = float(
            job_availability(
                n,
                args.host_availability,
                args.mode,
                ft_routing=ft,
                pod=pod,
                ocs_availability=args.ocs_availability,
                link_availability=args.link_availability,
            )
        )
        line = f"  {n:>6}   {fmt_pct(v):>15}"
        if args.target:
            need = required_host_availability(
                n,
                args.target,
                args.mode,
                pod,
                ft_routing=ft,
                ocs_availability=args.ocs_availability,
                link_availability=args.link_availability,
            )
            line += "   " + ("unreachable" if need != need else f"{100 * need:.3f}%")
        print(line)
    return 0


def _subparser(args: argparse.Namespace) -> argparse.ArgumentParser:
    """Return the parser of the subcommand ``args`` were parsed by (``lemon score``)."""
    parser = _parser()
    for name in ("command", "simulator", "lemon_command"):
        choice = getattr(args, name, None)
        if choice is None:  # (``lemon score`` has no ``simulator``)
            continue
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is None or choice not in sub.choices:
            break
        parser = sub.choices[choice]
    return parser


def _flags(args: argparse.Namespace) -> dict[str, str]:
    """Python option name -> this subcommand's flag (``tz`` -> ``--tz``)."""
    parser = _subparser(args)
    return {a.dest: max(a.option_strings, key=len) for a in parser._actions if a.option_strings}


#: r_f [per node-day] above which ``--rate`` is probably given per 1000 node-days: one failure
#: per node every 10 days, 15x RSC-1's rate (Kokolis et al., HPCA '25, Fig. 7)
_IMPLAUSIBLE_RATE_PER_NODE_DAY = 0.1


#: longest mean node repair --repair-hours accepts [h]: a year (a node out longer is gone)
_LONGEST_REPAIR_H = 8766


def _plan(args: argparse.Namespace) -> int:
    """``reliability plan``: its flags checked in the CLI's terms, then the planner."""
    import math

    from reliability.models.recovery.planner import plan
    from reliability.references import RSC1_FAILURE_RATE

    if args.gpus < 1:
        raise ReliabilityError(f"--gpus: expected a job size of at least 1 GPU, got {args.gpus}")
    if args.gpus_per_node < 1:
        raise ReliabilityError(f"--gpus-per-node: expected at least 1, got {args.gpus_per_node}")
    if args.rate is None and args.dataset is None:
        raise ReliabilityError(
            "--rate: expected failures per node-day (e.g. 2.34e-3), or --dataset DIR to fit it from"
        )
    if args.rate is not None and not (math.isfinite(args.rate) and args.rate > 0):
        raise ReliabilityError(
            f"--rate: expected a positive number of failures per node-day (e.g. 2.34e-3), "
            f"got {args.rate:g}"
        )
    if not 0.0 < args.target_ettr < 1.0:
        raise ReliabilityError(
            f"--target-ettr: expected a fraction in (0, 1) (e.g. 0.9), got {args.target_ettr:g}"
        )
    from reliability.models.recovery.ettr import VARIANTS

    if args.variant not in VARIANTS:
        raise ReliabilityError(
            f"--variant: expected one of {', '.join(VARIANTS)}, got {args.variant!r}"
        )
    if args.variant == "finite":
        raise ReliabilityError(
            "--variant finite: needs the job's length, which plan does not take; use --variant renewal "
            "(the long-job limit)"
        )
    for flag, v in (
        ("--restart-min", args.restart_min),
        ("--write-min", args.write_min),
        ("--queue-min", args.queue_min),
    ):
        if v is not None and not (math.isfinite(v) and v >= 0):
            raise ReliabilityError(f"{flag}: expected minutes >= 0, got {v:g}")
    if args.rate is not None and args.rate > _IMPLAUSIBLE_RATE_PER_NODE_DAY:
        print(
            f"warning: --rate {args.rate:g} failures per node-day is {1000 * args.rate:,.0f} per 1000 "
            f"node-days, far above the published clusters' (RSC-1: {RSC1_FAILURE_RATE.value:.2f}, "
            f"{RSC1_FAILURE_RATE.paper.short}); --rate is per node-day: for {args.rate:g} per 1000 "
            f"node-days pass --rate {args.rate / 1000:g}",
            file=sys.stderr,
        )
    if args.compare_strategies:
        _check_strategy_flags(args)
    rate, costs = args.rate, None
    if args.dataset is not None:
        rate, costs = _plan_dataset(args)
    queue_h = None if args.queue_min is None else args.queue_min / 60.0
    queue_basis = "--queue-min" if queue_h is not None else "not given: 0"
    if queue_h is None and costs is not None:
        queue_h, why = costs.queue_h_for(args.gpus)
        queue_basis = (
            f"measured in --dataset: {why}" if queue_h is not None else f"--dataset: {why}; 0 used"
        )
    queue_h = queue_h or 0.0
    result = plan(
        args.gpus,
        rate,
        args.target_ettr,
        restart_h=None if args.restart_min is None else args.restart_min / 60.0,
        ckpt_write_h=args.write_min / 60.0,
        queue_h=queue_h,
        gpus_per_node=args.gpus_per_node,
        variant=args.variant,
    )
    print(result.text(lambda n: _cli_terms(n, args)))
    if costs is not None:
        print()
        print(costs.text(lambda n: _cli_terms(n, args)))
    if args.compare_strategies:
        print()
        print(
            _compare(args, result, costs, queue_h, queue_basis).text(lambda n: _cli_terms(n, args))
        )
    return 0


def _plan_dataset(args: argparse.Namespace) -> tuple[float | MTTFResult, RecoveryCosts]:
    """``plan --dataset``: the r_f fit (unless --rate) and the measured recovery costs."""
    from reliability.attribution import attribute_failures
    from reliability.models.failures import fit_mttf
    from reliability.models.nodes import node_health
    from reliability.models.recovery import recovery_costs

    ds = _dataset(args.dataset)
    jobs = attribute_failures(ds)
    rate = args.rate
    if rate is None:
        if args.min_gpus < 1:
            raise ReliabilityError(f"--min-gpus: expected at least 1 GPU, got {args.min_gpus}")
        rate = fit_mttf(
            jobs,
            min_gpus=args.min_gpus,
            gpus_per_node=args.gpus_per_node,
            observation_end=ds.observation_end,
        )
        if rate.node_days_ <= 0:
            raise ReliabilityError(
                f"--dataset {args.dataset}: no jobs of >= {args.min_gpus} GPUs to fit r_f from; pass a lower "
                "--min-gpus or give --rate"
            )
    health = node_health(ds) if ds.node_states.height else None
    return rate, recovery_costs(jobs, node_health=health, observation_end=ds.observation_end)


def _check_strategy_flags(args: argparse.Namespace) -> None:
    """Check the flags of ``plan --compare-strategies`` (before anything is printed)."""
    import math

    if args.restart_min is None:
        raise ReliabilityError(
            "--compare-strategies: needs --restart-min (today's restart overhead)"
        )
    for flag, v, positive in (
        ("--interval-min", args.interval_min, True),
        ("--repair-hours", args.repair_hours, True),
        ("--peer-write-s", args.peer_write_s, True),
        ("--peer-restore-min", args.peer_restore_min, False),
        ("--heal-min", args.heal_min, False),
        ("--reconfig-s", args.reconfig_s, False),
        ("--replica-nodes", args.replica_nodes, True),
        ("--pool-nodes", args.pool_nodes, True),
    ):
        if v is not None and not (math.isfinite(v) and (v > 0 if positive else v >= 0)):
            raise ReliabilityError(
                f"{flag}: expected a number {'> 0' if positive else '>= 0'}, got {v:g}"
            )
    if args.spares is not None and args.spares < 0:
        raise ReliabilityError(
            f"--spares: expected a whole number of nodes >= 0, got {args.spares}"
        )
    if args.peer_copies < 1:
        raise ReliabilityError(f"--peer-copies: expected at least 1, got {args.peer_copies}")
    if args.repair_hours is not None and args.repair_hours > _LONGEST_REPAIR_H:
        raise ReliabilityError(
            f"--repair-hours: expected a mean node repair time of at most {_LONGEST_REPAIR_H:,} h (a year: "
            f"a node out longer is gone, not in repair), got {args.repair_hours:g}"
        )
    if not 0.0 < args.target_no_wait < 1.0:
        raise ReliabilityError(
            f"--target-no-wait: expected a probability in (0, 1), got {args.target_no_wait:g}"
        )
    if not 0.0 <= args.elastic_slowdown < 1.0:
        raise ReliabilityError(
            f"--elastic-slowdown: expected a fraction in [0, 1), got {args.elastic_slowdown:g}"
        )


def _compare(
    args: argparse.Namespace,
    result: PlanResult,
    costs: RecoveryCosts | None,
    queue_h: float,
    queue_basis: str,
) -> StrategyComparison:
    """``plan --compare-strategies``: its flags checked in the CLI's terms, then the comparison."""
    from reliability._result import fmt_duration_h, fmt_num
    from reliability.models.recovery import compare_strategies
    from reliability.models.recovery.cost import component_repair_h
    from reliability.models.recovery.strategies import (
        DEFAULT_REPAIR_H,
        SHORTEST_INTERVAL_H,
        best_interval_h,
    )

    _check_strategy_flags(args)
    n_nodes = max(args.gpus / args.gpus_per_node, 1.0)
    if args.replica_nodes > n_nodes:
        raise ReliabilityError(
            f"--replica-nodes: expected at most the job's {n_nodes:g} nodes, got {args.replica_nodes:g}"
        )
    replicas = n_nodes / args.replica_nodes
    if abs(replicas - round(replicas)) > 1e-9 * replicas:
        raise ReliabilityError(
            f"--replica-nodes: the job's {n_nodes:,g} nodes are not a whole number of replicas of "
            f"{args.replica_nodes:g} node(s) ({replicas:,.1f}); pass a divisor of {n_nodes:,g}"
        )
    if round(replicas) >= 2 and args.peer_copies >= round(replicas):
        raise ReliabilityError(
            f"--peer-copies: expected fewer than the job's {round(replicas):,} replicas (the peers are "
            f"other replicas' nodes), got {args.peer_copies:,}"
        )
    if args.pool_nodes is not None and args.pool_nodes < n_nodes:
        raise ReliabilityError(
            f"--pool-nodes: expected at least the job's {n_nodes:g} nodes, got {args.pool_nodes:g}"
        )
    if args.interval_min is not None:
        interval_h, interval_basis = args.interval_min / 60.0, "--interval-min"
    elif result.recommended_interval_h is not None:
        interval_h, interval_basis = result.recommended_interval_h, "the planner's recommendation"
    else:
        interval_h, best = best_interval_h(
            args.gpus,
            result.rate_per_node_day,
            args.restart_min / 60.0,
            queue_h=queue_h,
            ckpt_write_h=args.write_min / 60.0,
            gpus_per_node=args.gpus_per_node,
        )
        interval_basis = (
            f"no interval reaches --target-ettr {args.target_ettr:g}: compared at "
            f"{fmt_duration_h(interval_h)}, the interval that maximises checkpoint-restart's expected "
            f"ETTR ({fmt_num(best, 4, scale=1)})"
        )
        if interval_h <= SHORTEST_INTERVAL_H * (1 + 1e-9):
            interval_basis += (
                " - the shortest considered: with --write-min 0 checkpoints are free and the ETTR "
                "rises as the interval shrinks"
            )
        interval_basis += "; pass --interval-min for today's interval"
    repair_h, repair_basis = args.repair_hours, "--repair-hours"
    no_repair_note = None
    if repair_h is None and costs is not None and costs.repair_h is not None:
        repair_h, repair_basis = costs.repair_h, "measured in --dataset (mean out-of-service spell)"
    elif repair_h is None and args.dataset is not None:
        repair_h, why = component_repair_h(_dataset(args.dataset).component_failures)
        if repair_h is not None:
            repair_basis = (
                "--dataset has no closed repair spells in its node states; measured instead from "
                f"component_failures: {why}"
            )
        else:
            no_repair_note = (
                f"--dataset has no closed repair spells in its node states and {why}: "
                f"{DEFAULT_REPAIR_H:g} h assumed for the spares (pass --repair-hours)"
            )
    c = compare_strategies(
        args.gpus,
        result.rate_per_node_day,
        interval_h,
        args.restart_min / 60.0,
        queue_h=queue_h,
        ckpt_write_h=args.write_min / 60.0,
        gpus_per_node=args.gpus_per_node,
        spare_nodes=args.spares,
        repair_h=repair_h,
        target_no_wait=args.target_no_wait,
        pool_nodes=args.pool_nodes,
        peer_write_h=None if args.peer_write_s is None else args.peer_write_s / 3600.0,
        peer_restore_h=None if args.peer_restore_min is None else args.peer_restore_min / 60.0,
        peer_copies=args.peer_copies,
        replica_nodes=args.replica_nodes,
        heal_h=None if args.heal_min is None else args.heal_min / 60.0,
        reconfig_h=None if args.reconfig_s is None else args.reconfig_s / 3600.0,
        elastic_slowdown=args.elastic_slowdown,
    )
    c.notes[:0] = [
        f"checkpoint interval: {interval_basis}",
        f"queue wait after an interruption: {queue_basis}",
    ]
    if repair_h is not None:
        c.notes.insert(2, f"node repair time: {repair_basis}")
    if no_repair_note is not None:
        c.notes = [
            no_repair_note if n.startswith("node repair time not given") else n for n in c.notes
        ]
    # the repair time's other way out, in the CLI's terms (its flag is the hint's)
    c.notes = [
        replace_text(
            n, "or measure it from node states with recovery_costs", "or --dataset to measure it"
        )
        for n in c.notes
    ]
    return c


#: library option -> CLI flag, where the flag is not the option's own name (``--repair-hours``
#: sets ``repair_h``). The flags in other units (``--peer-write-s`` for ``peer_write_h``) only
#: spell hints without a value. An option with no flag of the command is said in the library's
#: spelling (``pass min_gpus=4`` from ``reliability ingest``).
_FLAG_OF = {
    "repair_h": "--repair-hours",
    "peer_write_h": "--peer-write-s",
    "reconfig_h": "--reconfig-s",
    "ckpt_write_h": "--write-min",
}


def _cli_terms(message: str, args: argparse.Namespace) -> str:
    """Translate a library message into the CLI's terms.

    A :class:`~reliability.errors.Hinted` message's hints are spelled as this command's flags
    (``pass tz=`` -> ``pass --tz``, ``tz='UTC'`` -> ``--tz UTC``); an option the command has no
    flag for keeps the library's spelling (a mention of one, as in a list of what an input
    takes, adds "(no flag here)"). Plain text is shown as it is.
    """
    flags = _flags(args)
    known = set(flags.values())

    def spell(hint: Hint) -> str:
        flag = flags.get(hint.option) if hint.option != "help" else None
        if flag is None and _FLAG_OF.get(hint.option) in known:
            flag = _FLAG_OF[hint.option]
            if hint.value is not None:  # (its flag's value is in other units)
                return hint.library()
        if flag is None:  # no flag of this command: the library's words, and a mention says so
            return hint.library() if hint.action else f"{hint.library()} (no flag here)"
        shown = "" if hint.value is None or isinstance(hint.value, bool) else hint.value
        text = flag if shown == "" else f"{flag} {value_text(shown, 'shell')}"  # a switch: no value
        return f"pass {text}" if hint.action else text

    return render_message(message_of(message), spell)


def _os_error_text(exc: OSError, args: argparse.Namespace) -> str:
    """Return an operating-system error in the CLI's terms: the flag and path, and the reason.

    ``[Errno 20] Not a directory: '/x/y'`` -> ``--out /x/y (/x): Not a directory``. Only the
    arguments that are paths are considered (a ``--preset small`` never takes the blame for
    ``small/sim``), compared as absolute paths; the argument that is the path itself wins over
    one the path is inside of, or one inside the path.
    """
    if exc.filename is None:
        return _cli_terms(message_of(exc), args)
    where = Path(os.path.abspath(str(exc.filename)))
    reason = exc.strerror or str(exc)
    best: tuple[int, str] | None = None
    for label, value in _path_args(args):
        given = Path(os.path.abspath(str(value)))
        rank = 0 if where == given else 1 if given in where.parents or where in given.parents else 2
        if rank < 2 and (best is None or rank < best[0]):
            inner = "" if rank == 0 else f" ({exc.filename})"
            best = (rank, f"{label}{value}{inner}: {reason}")
    return best[1] if best else f"{exc.filename}: {reason}"


def _path_args(args: argparse.Namespace) -> list[tuple[str, object]]:
    """Return (flag and a space, or "" if positional; value) of the arguments that are paths."""
    parser = _subparser(args)
    out: list[tuple[str, object]] = []
    for action in parser._actions:
        value = getattr(args, action.dest, None)
        is_path = action.type is Path or action.dest == "files"
        if not is_path or value is None:
            continue
        label = f"{max(action.option_strings, key=len)} " if action.option_strings else ""
        for v in value if isinstance(value, list) else [value]:
            if str(v) and str(v) != "-":
                out.append((label, v))
    return out


def _dataset(path: Path, jobs_for: str | None = None) -> Dataset:
    """Open an existing Dataset folder (a clear error if there is none).

    ``jobs_for`` names a command that needs job accounting: a Dataset without job attempts
    (node failure records, kernel logs, DCGM only) is then refused instead of giving a page
    of "not estimable".
    """
    if not path.is_dir():
        raise ReliabilityError(f"{path}: no such Dataset folder")
    ds = Dataset(path)
    if not (path / "manifest.json").exists():
        ds.manifest  # noqa: B018 - refuses a folder with parts and no manifest (damaged)
        raise ReliabilityError(f"{path}: no manifest.json (not a Dataset folder)")
    if jobs_for is not None and ds.scan("jobs").select(pl.len()).collect().item() == 0:
        kinds = sorted({i["kind"] for i in ds.inputs}) or ["none"]
        raise ReliabilityError(
            f"{path}: the Dataset holds no job attempts (its inputs: {', '.join(kinds)}): "
            f"`{jobs_for}` needs job accounting; ingest a sacct export first "
            f"(reliability ingest slurm FILE --into {path})"
        )
    return ds


def _damaged_part(args: argparse.Namespace) -> str | None:
    """After polars failed to read: name the damaged part of the command's Dataset, if any."""
    from reliability.store.integrity import damaged_part

    path = getattr(args, "dataset", None)
    if not isinstance(path, Path) or not (path / "manifest.json").is_file():
        return None
    return damaged_part(Dataset(path))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``reliability`` command.

    Parameters
    ----------
    argv : sequence of str or None
        Command-line arguments without the program name; None: ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit code: 0 on success; 1 when a check fails (``verify`` finds a problem, a sweep
        has failures); 2 on an error, printed to stderr in the CLI's terms (``error: ...``).
    """
    args = _parser().parse_args(argv)
    try:
        if args.command == "ingest":
            return _ingest(args)
        if args.command == "info":
            print(_dataset(args.dataset).summary())
            return 0
        if args.command == "verify":
            if not args.dataset.is_dir():
                raise ReliabilityError(f"{args.dataset}: no such Dataset folder")
            report = Dataset(args.dataset).verify()
            print(report)
            return 0 if report.ok else 1
        if args.command == "repair":
            print(Dataset(args.dataset).repair())
            return 0
        if args.command == "analyze":
            return _analyze(args)
        if args.command == "simulate":
            return _simulate(args)
        if args.command == "compare":
            return _compare_fleets(args)
        if args.command == "plan":
            return _plan(args)
        if args.command == "signals":
            return _signals(args)
        if args.command == "lemon":
            return _lemon(args)
        if args.command == "sweep":
            from reliability.sweep import run_sweep

            res = run_sweep(
                args.spec,
                backend=args.backend,
                workers=args.workers,
                scheduler=args.scheduler,
                out=args.out,
                progress=lambda name: print(f"done {name}", file=sys.stderr),
            )
            print(res)
            return 1 if res.failures else 0
        if args.command == "run":
            from reliability.pipeline import run_pipeline

            res = run_pipeline(
                args.pipeline,
                out=args.out,
                progress=lambda line: print(line, file=sys.stderr),
                scheduler=args.scheduler,
            )
            for kind, path in res.files.items():
                print(f"{kind}: {path}")
            return 0
        if args.command == "availability":
            return _availability(args)
        if args.command == "fleet":
            return _fleet(args)
        if args.command == "collect":
            from reliability.collect import collect_slurm

            print(
                collect_slurm(
                    args.into,
                    cluster=args.cluster,
                    since=args.since,
                    until=args.until,
                    overlap_h=args.overlap_h,
                    dry_run=args.dry_run,
                    wait_s=args.wait_s,
                )
            )
            return 0
        if args.command == "demo":
            from reliability.datasets import simulated_demo

            ds = simulated_demo(args.into, seed=args.seed)
            print(f"simulated raw logs in {args.into / 'sim'}, Dataset in {ds.path}\n")
            print(ds.summary())
            return 0
    except BrokenPipeError:
        # the reader of the output went away (`reliability ... | head`): stop quietly, as
        # other commands do, and keep the interpreter's final flush from failing again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        print(f"error: {_os_error_text(exc, args)}", file=sys.stderr)
        return 2
    except (ReliabilityError, ValueError) as exc:
        print(f"error: {_cli_terms(message_of(exc), args)}", file=sys.stderr)
        return 2
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException):
        # a part damaged in place (same size): reads check sizes and footers, not every byte
        damaged = _damaged_part(args)
        if damaged is None:
            raise
        print(f"error: {damaged}", file=sys.stderr)
        return 2
    return 1  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
