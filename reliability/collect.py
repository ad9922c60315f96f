"""Collect accounting data from a live Slurm cluster into a Dataset, incrementally.

:func:`collect_slurm` runs ``sacct`` and ``sacctmgr`` with the complete export (all users,
every attempt, the full field list: :func:`reliability.ingest.sacct.fields.sacct_export_args`)
over a window ``[since, until]``, in UTC (``TZ=UTC`` and ``SLURM_TIME_FORMAT=%s`` in the
child's environment, whatever the caller's), writes the raw exports beside the Dataset
(``DIR/raw/<until>/sacct.psv``, ``sacctmgr_events.psv``, ``collect.json``) so they can be
re-read, and ingests them with the window as their observation window. ``since="auto"`` starts
where the last collection ended (the latest ``sacct --endtime`` window recorded in the
Dataset's manifest), minus an overlap (1 h by default) for records slurmdbd received late.
Rerunning is idempotent: an identical export is not ingested twice, and the Dataset
deduplicates records that overlapping windows share.

What a time window cannot see (Slurm's semantics, not this module's): jobs that never became
eligible inside the window (held, unmet dependency, cancelled while pending) are not selected
by ``sacct --starttime``; they appear once they run or end. The rerun of a job requeued in the
window is such a record (its ``BeginTime`` is about two minutes after the requeue; a held
rerun has none): so every job whose last record in the window's export is a requeue is asked
for again by id (``sacct --jobs``, which lists every record of a job at any time), into
``sacct_requeued.psv``. A run waiting to restart is then seen as open, and one whose held
rerun was cancelled as ended.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from reliability._atomic import write_json_atomic
from reliability._result import Result
from reliability.errors import ReliabilityError
from reliability.ingest.sacct.fields import (
    sacct_export_args,
    sacct_jobs_args,
    sacctmgr_events_args,
)
from reliability.store import Dataset, IngestOutcome

__all__ = ["OVERLAP_H", "CollectError", "CollectResult", "collect_slurm", "last_collected"]

#: Overlap with the previous collection [h]: records slurmdbd receives late (an agent queue
#: after an outage) are still picked up. Longer outages: pass ``since`` explicitly.
OVERLAP_H = 1.0
#: Environment of the Slurm commands: UTC, epoch times (no zone to guess when reading)
CHILD_ENV = {"TZ": "UTC", "SLURM_TIME_FORMAT": "%s"}
RAW = "raw"
#: job ids per ``sacct --jobs`` command (bounds its argument list)
JOBS_PER_QUERY = 500
#: the last record of a job that means "its rerun may be pending" (see the module doc)
_REQUEUE_STATES = ("REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED")
#: sacct's window syntax; with TZ=UTC in the child, it is read as UTC
_ARG_TIME = "%Y-%m-%dT%H:%M:%S"
_DB_DOWN = re.compile(
    r"(?i)problem talking to the database|connection refused|unable to connect|slurmdbd|"
    r"persistent connection|communications connection failure"
)


class CollectError(ReliabilityError):
    """A Slurm command could not be run or failed; the message says which and what to do."""


@dataclass(frozen=True)
class CollectResult(Result):
    """What one collection did.

    Attributes
    ----------
    dataset : Path
        The Dataset folder.
    since, until : datetime
        The window exported [UTC].
    since_basis : str
        Where ``since`` came from (given, or the last collection minus the overlap).
    commands : tuple of str
        The commands, as shell lines with their environment.
    raw_dir : Path or None
        Where the raw exports were written (None for a dry run).
    outcomes : tuple of IngestOutcome
        One ingest outcome per raw export (empty for a dry run).
    requeue_exit_codes : tuple of int or None
        RequeueExit / RequeueExitHold of the cluster, when ``scontrol show config`` could be read
        (pass them to :func:`reliability.attribute_failures`); None when it could not, and
        ``requeue_exit_problem`` says why.
    requeued_jobs : int
        Jobs whose last record in the window's export was a requeue, asked for again by id.
    dry_run : bool
        Nothing was run.
    """

    dataset: Path
    since: datetime
    until: datetime
    since_basis: str
    commands: tuple[str, ...]
    raw_dir: Path | None = None
    outcomes: tuple[IngestOutcome, ...] = ()
    requeue_exit_codes: tuple[int, ...] | None = None
    requeue_exit_problem: str = ""
    requeued_jobs: int = 0
    dry_run: bool = False
    notes: tuple[str, ...] = field(default=())
    title = "Slurm collection"

    @property
    def summary(self) -> pl.DataFrame:
        """One row per raw export ingested: ``path, status, rows_read, rows_kept, rows_quarantined``."""
        return pl.DataFrame(
            [
                {
                    "path": o.path,
                    "status": o.status,
                    "rows_read": o.rows_read,
                    "rows_kept": o.rows_kept,
                    "rows_quarantined": o.rows_quarantined,
                }
                for o in self.outcomes
            ],
            schema={
                "path": pl.String,
                "status": pl.String,
                "rows_read": pl.Int64,
                "rows_kept": pl.Int64,
                "rows_quarantined": pl.Int64,
            },
        )

    def _lines(self) -> list[str]:
        lines = [
            f"window {self.since:%Y-%m-%dT%H:%M:%SZ} .. {self.until:%Y-%m-%dT%H:%M:%SZ} "
            f"({self.since_basis})"
        ]
        if self.dry_run:
            lines.append("would run:")
            lines += [f"  {c}" for c in self.commands]
            lines.append(f"and ingest the exports into {self.dataset} (dry run: nothing was run)")
            return lines
        lines += [f"ran: {c}" for c in self.commands]
        lines.append(f"raw exports: {self.raw_dir}")
        for o in self.outcomes:
            lines.append(o.line())
            lines += [f"  note: {n}" for n in o.notes]
        if self.requeued_jobs:
            lines.append(
                f"{self.requeued_jobs:,} job(s) ended the window in a requeue: asked for again by "
                "id (sacct --jobs) for their pending or cancelled reruns"
            )
        if self.requeue_exit_codes is not None:
            codes = ",".join(map(str, self.requeue_exit_codes)) or "none"
            lines.append(f"RequeueExit/RequeueExitHold codes on this cluster: {codes}")
        else:
            lines.append(
                "RequeueExit/RequeueExitHold codes: not read (`scontrol show config`: "
                f"{self.requeue_exit_problem or 'failed'}). Without them a requeue the application "
                "asked for (its exit code) counts as an admin requeue, or unknown: pass the codes "
                "to `reliability analyze --requeue-exit-codes` ([analysis].requeue_exit_codes in "
                "a pipeline); slurm.conf's RequeueExit and RequeueExitHold list them"
            )
        return lines

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the collection: raw exports ingested and the rows read from them."""
        return {"exports": len(self.outcomes), "rows read": sum(o.rows_read for o in self.outcomes)}

    @classmethod
    def _example(cls) -> CollectResult:
        """Build a tiny instance: one day's sacct export ingested (for contract tests)."""
        since = datetime(2025, 1, 6, tzinfo=UTC)
        out = IngestOutcome._example()
        return cls(
            Path("data/tiny"),
            since,
            since + timedelta(days=1),
            "given",
            ("sacct --parsable2 --duplicates --starttime 2025-01-06T00:00:00",),
            raw_dir=Path("data/tiny/raw"),
            outcomes=(out,),
            requeue_exit_codes=(42,),
        )


def _utc(value: datetime | str, name: str) -> datetime:
    """Convert a datetime or ISO 8601 text to an aware UTC datetime (no offset: read as UTC)."""
    if isinstance(value, str):
        text = value.strip()
        try:
            value = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise CollectError(
                f"--{name}: {text!r} is not an ISO 8601 time (e.g. 2026-01-31T00:00:00Z)"
            ) from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).replace(microsecond=0)


def last_collected(dataset: Dataset, cluster: str | None = None) -> datetime | None:
    """Find the end of the latest ``sacct --endtime`` window ingested into a Dataset.

    Parameters
    ----------
    dataset : Dataset
        The Dataset (one without a manifest has none).
    cluster : str or None
        Only windows collected for this cluster (``--clusters``); None: those collected without
        a cluster name.

    Returns
    -------
    datetime or None
        The window end [UTC], or None when there is none.
    """
    ends = []
    for entry in dataset.inputs if (dataset.path / "manifest.json").exists() else []:
        obs = entry.get("observation") or {}
        if entry.get("kind") != "slurm" or obs.get("basis") != "sacct --endtime":
            continue
        if (entry.get("options") or {}).get("cluster") != cluster:
            continue
        if obs.get("until"):
            ends.append(datetime.fromisoformat(obs["until"]))
    return max(ends) if ends else None


def _shell(args: list[str], env: Mapping[str, str]) -> str:
    return " ".join(
        [f"{k}={shlex.quote(v)}" for k, v in env.items()] + [shlex.quote(a) for a in args]
    )


def _run(args: list[str], env: dict[str, str], out: Path, timeout_s: float) -> None:
    """Run one Slurm command into ``out``; errors say what failed in the operator's terms."""
    name = Path(args[0]).name
    try:
        with open(out, "wb") as fh:
            proc = subprocess.run(
                args, stdout=fh, stderr=subprocess.PIPE, env=env, timeout=timeout_s, check=False
            )
    except FileNotFoundError:
        raise CollectError(
            f"{args[0]}: not found. Run `reliability collect` on a host with the Slurm client "
            "commands on PATH (Debian/Ubuntu package slurm-client)"
        ) from None
    except PermissionError:
        raise CollectError(f"{args[0]}: not executable") from None
    except subprocess.TimeoutExpired:
        raise CollectError(
            f"{name} did not finish in {timeout_s:g} s (slurmdbd busy or unreachable?): "
            f"{_shell(args, CHILD_ENV)}"
        ) from None
    err = proc.stderr.decode("utf-8", errors="replace").strip()
    if proc.returncode != 0 or (err and _DB_DOWN.search(err) and out.stat().st_size == 0):
        last = err.splitlines()[-1] if err else "(no message)"
        if _DB_DOWN.search(err):
            raise CollectError(
                f"{name} could not reach the accounting database: {last}. Check that slurmdbd is "
                "running and that AccountingStorageHost / AccountingStoragePort in slurm.conf "
                f"point at it (command: {_shell(args, CHILD_ENV)})"
            )
        raise CollectError(f"{name} failed (exit status {proc.returncode}): {last}")


def _requeue_codes(
    scontrol: str, env: dict[str, str], timeout_s: float
) -> tuple[tuple[int, ...] | None, str]:
    """RequeueExit + RequeueExitHold from ``scontrol show config``, or None and why not."""
    try:
        proc = subprocess.run(
            [scontrol, "show", "config"],
            capture_output=True,
            env=env,
            timeout=min(timeout_s, 30.0),
            check=False,
        )
    except FileNotFoundError:
        return None, f"{scontrol} not found"
    except subprocess.TimeoutExpired:
        return None, f"no answer in {min(timeout_s, 30.0):g} s (slurmctld down or busy?)"
    except OSError as exc:
        return None, f"{scontrol} could not run ({exc.strerror or exc})"
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", errors="replace").strip().splitlines()
        last = err[-1] if err else "no message"
        return None, f"exit status {proc.returncode}: {last} (slurmctld down?)"
    text = proc.stdout.decode("utf-8", errors="replace")
    codes: set[int] = set()
    found = False
    for key in ("RequeueExit", "RequeueExitHold"):
        m = re.search(rf"^{key}\s*=\s*(.*)$", text, flags=re.MULTILINE)
        if m:
            found = True
            codes.update(int(c) for c in re.findall(r"\d+", m.group(1)))
    if not found:
        return None, "it printed no RequeueExit or RequeueExitHold line"
    return tuple(sorted(codes)), ""


def _requeued_last(export: Path) -> list[str]:
    """Job ids whose last allocation record in a sacct export is a requeue."""
    from reliability.ingest import read_sacct

    try:
        jobs = read_sacct(export, tz="UTC").frames["jobs"]
    except ReliabilityError:
        return []  # the ingest that follows says what is wrong with the export
    if jobs.height == 0:
        return []
    last = (
        jobs.select("job_id", "start_time", "submit_time", pl.col("state").cast(pl.String))
        .sort(["job_id", "start_time", "submit_time"], nulls_last=True)
        .group_by("job_id", maintain_order=True)
        .agg(pl.col("state").last())
    )
    return sorted(last.filter(pl.col("state").is_in(_REQUEUE_STATES))["job_id"].to_list())


def collect_slurm(
    into: str | Path,
    *,
    cluster: str | None = None,
    since: datetime | str | None = "auto",
    until: datetime | str | None = None,
    overlap_h: float = OVERLAP_H,
    dry_run: bool = False,
    env: Mapping[str, str] | None = None,
    sacct: str = "sacct",
    sacctmgr: str = "sacctmgr",
    scontrol: str = "scontrol",
    timeout_s: float = 600.0,
    now: Callable[[], datetime] | None = None,
    wait_s: float = 0.0,
) -> CollectResult:
    """Export a window of Slurm accounting and node events and ingest it into a Dataset.

    Parameters
    ----------
    into : str or Path
        The Dataset folder (created on the first collection).
    cluster : str or None
        Slurm cluster name (``sacct --clusters``, ``sacctmgr ... Clusters=``); default: the
        cluster of the local slurm.conf.
    since : datetime or str or None
        Window start [UTC; ISO 8601, a time without offset is read as UTC], or ``"auto"`` /
        None: the end of the last collection recorded in the Dataset minus ``overlap_h``.
    until : datetime or str or None
        Window end [UTC], not in the future; default now.
    overlap_h : float
        Overlap with the previous collection for ``since="auto"`` [h], >= 0.
    dry_run : bool
        Only work out the window and the commands; run nothing.
    env : mapping of str to str or None
        Extra environment for the commands (e.g. ``SLURM_CONF``); ``TZ`` and
        ``SLURM_TIME_FORMAT`` are always set to UTC / epoch seconds.
    sacct, sacctmgr, scontrol : str
        The commands (paths or names on PATH).
    timeout_s : float
        Time limit per command [s].
    now : callable or None
        Clock returning the current aware datetime (tests pass a fixed one); None: the system
        clock in UTC.
    wait_s : float
        If another process is writing the Dataset, wait up to this long for it to finish
        before each of the two ingests [s] (0: refuse at once).

    Returns
    -------
    CollectResult
        The window, the commands run and one row per export ingested (its text form is what the
        CLI prints).

    Raises
    ------
    CollectError
        For a window ending in the future, a negative overlap, or a command that fails.
    """
    into = Path(into)
    ds = Dataset(into)
    clock = now or (lambda: datetime.now(UTC))
    t_now = _utc(clock(), "until")
    t_until = _utc(until, "until") if until is not None else t_now
    if t_until > t_now:
        # a window reaching into the future would claim observation (exposure) not yet seen
        raise CollectError(
            f"--until {t_until:%Y-%m-%dT%H:%M:%SZ} is in the future (now "
            f"{t_now:%Y-%m-%dT%H:%M:%SZ}): the export window must end by now"
        )
    if overlap_h < 0:
        raise CollectError(f"--overlap-h must be >= 0 hours (got {overlap_h:g})")
    if since is None or (isinstance(since, str) and since.strip().lower() == "auto"):
        last = last_collected(ds, cluster)
        if last is None:
            raise CollectError(
                f"{into}: no earlier collection recorded{f' for cluster {cluster}' if cluster else ''}; "
                "pass --since ISO (e.g. --since 2026-01-01T00:00:00Z) for the first one"
            )
        t_since = _utc(last - timedelta(hours=overlap_h), "since")
        basis = f"last collection ended {last:%Y-%m-%dT%H:%M:%SZ}, minus {overlap_h:g} h overlap"
    else:
        t_since = _utc(since, "since")
        basis = "--since"
    if t_since >= t_until:
        raise CollectError(
            f"--since {t_since:%Y-%m-%dT%H:%M:%SZ} is not before --until {t_until:%Y-%m-%dT%H:%M:%SZ}"
        )
    a, b = t_since.strftime(_ARG_TIME), t_until.strftime(_ARG_TIME)
    sacct_args = sacct_export_args(a, b)
    sacct_args[0] = sacct
    events_args = sacctmgr_events_args(a, b)
    events_args[0] = sacctmgr
    if cluster:
        sacct_args.insert(1, f"--clusters={cluster}")
        events_args.insert(-1, f"Clusters={cluster}")
    commands = (_shell(sacct_args, CHILD_ENV), _shell(events_args, CHILD_ENV))
    if dry_run:
        return CollectResult(into, t_since, t_until, basis, commands, dry_run=True)

    child_env = {**os.environ, **(env or {}), **CHILD_ENV}
    raw_root = into / RAW
    raw_root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".collect-", dir=raw_root))
    tmp.chmod(0o755)
    try:
        _run(sacct_args, child_env, tmp / "sacct.psv", timeout_s)
        _run(events_args, child_env, tmp / "sacctmgr_events.psv", timeout_s)
        requeued = _requeued_last(tmp / "sacct.psv")
        if requeued:
            commands += _export_jobs(requeued, sacct, cluster, child_env, tmp, timeout_s)
        codes, problem = _requeue_codes(scontrol, child_env, timeout_s)
        meta: dict[str, Any] = {
            "since": t_since.isoformat(),
            "until": t_until.isoformat(),
            "since_basis": basis,
            "cluster": cluster,
            "commands": list(commands),
            "requeue_exit_codes": None if codes is None else list(codes),
            "requeue_exit_problem": problem,
            "requeued_jobs": requeued,
        }
        raw_dir = _place(tmp, raw_root, t_until, meta)
    finally:
        if tmp.exists():
            for f in tmp.iterdir():
                f.unlink()
            tmp.rmdir()
    opts: dict[str, Any] = {"tz": "UTC", "cluster": cluster}
    w_since, w_until, replace, notes = _window(ds, raw_dir / "sacct.psv", t_since, t_until)
    outcomes = ds.ingest(
        "slurm",
        [raw_dir / "sacct.psv"],
        window_start=w_since,
        window_end=w_until,
        replace=replace,
        wait_s=wait_s,
        **opts,
    )
    outcomes += ds.ingest("events", [raw_dir / "sacctmgr_events.psv"], wait_s=wait_s, **opts)
    if (raw_dir / _REQUEUED).is_file():
        # every record of those jobs, as of now: recorded with the window, like the main export
        r_since, r_until, r_replace, r_notes = _window(ds, raw_dir / _REQUEUED, t_since, t_until)
        notes += r_notes
        outcomes += ds.ingest(
            "slurm",
            [raw_dir / _REQUEUED],
            window_start=r_since,
            window_end=r_until,
            replace=r_replace,
            wait_s=wait_s,
            **opts,
        )
    return CollectResult(
        into,
        t_since,
        t_until,
        basis,
        commands,
        raw_dir,
        tuple(outcomes),
        codes,
        requeue_exit_problem=problem,
        requeued_jobs=len(requeued),
        notes=tuple(notes),
    )


#: the raw export of the jobs asked for again by id
_REQUEUED = "sacct_requeued.psv"


def _export_jobs(
    job_ids: list[str], sacct: str, cluster: str | None, env: dict[str, str], tmp: Path,
    timeout_s: float,
) -> tuple[str, ...]:  # fmt: skip
    """Export every record of ``job_ids`` (``sacct --jobs``) into ``tmp/sacct_requeued.psv``.

    In batches of :data:`JOBS_PER_QUERY` ids; the header is kept once. Returns the commands.
    """
    commands = []
    out = tmp / _REQUEUED
    with open(out, "wb") as fh:
        for i in range(0, len(job_ids), JOBS_PER_QUERY):
            args = sacct_jobs_args(job_ids[i : i + JOBS_PER_QUERY])
            args[0] = sacct
            if cluster:
                args.insert(1, f"--clusters={cluster}")
            part = tmp / f".{_REQUEUED}.{i}"
            _run(args, env, part, timeout_s)
            lines = part.read_bytes().splitlines(keepends=True)
            part.unlink()
            fh.write(b"".join(lines if i == 0 else lines[1:]))
            commands.append(_shell(args, CHILD_ENV))
    return tuple(commands)


def _window(
    ds: Dataset, export: Path, since: datetime, until: datetime
) -> tuple[datetime, datetime, bool, list[str]]:
    """Work out the observation window to record for an export, and whether it replaces an input.

    An export byte-identical to one already ingested (nothing happened in between, e.g. a
    quiet cluster) says that the same records were all there was over both windows: when the
    windows overlap, the input is re-recorded over their union (``replace``: same rows, a
    longer observation), so that the Dataset's observation end moves on.
    """
    h = hashlib.sha256()
    with open(export, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    sha = h.hexdigest()
    for entry in ds.inputs if (ds.path / "manifest.json").exists() else []:
        if entry.get("sha256") != sha or entry.get("kind") != "slurm":
            continue
        obs = entry.get("observation") or {}
        if not (obs.get("from") and obs.get("until")):
            return since, until, True, []
        lo, hi = datetime.fromisoformat(obs["from"]), datetime.fromisoformat(obs["until"])
        if lo <= since and until <= hi:  # nothing new: the same input, the same window
            return lo, hi, False, []
        if lo <= until and since <= hi:
            lo, hi = min(lo, since), max(hi, until)
            return (
                lo,
                hi,
                True,
                [
                    f"export identical to {entry.get('name')} ingested before: "
                    f"its window extended to {lo:%Y-%m-%dT%H:%M:%SZ} .. {hi:%Y-%m-%dT%H:%M:%SZ}"
                ],
            )
        return since, until, True, []
    return since, until, False, []


def _place(tmp: Path, raw_root: Path, until: datetime, meta: dict[str, Any]) -> Path:
    """Move a finished export from ``tmp`` to ``raw/<until>/`` (atomically, by rename).

    An earlier export of the same window with the same bytes is reused; different bytes (records
    that arrived since) go to ``raw/<until>-2/``..., so no ingested file is ever rewritten.
    """
    stem = until.strftime("%Y%m%dT%H%M%SZ")
    exports = ("sacct.psv", "sacctmgr_events.psv", _REQUEUED)
    for n in range(1, 1000):
        target = raw_root / (stem if n == 1 else f"{stem}-{n}")
        if not target.exists():
            write_json_atomic(meta, tmp / "collect.json")
            tmp.rename(target)
            return target
        if all(
            (target / f).is_file() == (tmp / f).is_file()
            and (not (tmp / f).is_file() or (target / f).read_bytes() == (tmp / f).read_bytes())
            for f in exports
        ):
            return target
    raise CollectError(f"{raw_root}: too many exports for {stem}")  # pragma: no cover
