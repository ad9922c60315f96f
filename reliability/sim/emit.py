"""Write a cluster simulation in the raw formats the readers ingest, plus ``truth/``.

``OUT/sacct.psv``             ``sacct --parsable2 --duplicates`` (local time of ``config.tz``)
``OUT/sacctmgr_events.psv``   ``sacctmgr --parsable2 show event`` (local time)
``OUT/kernel/<node>.log``     NVRM Xid lines, rsyslog RFC 3339 format with the host name
``OUT/health_checks.csv``     canonical health events written by the health checks
``OUT/manifest.json``         what was written, the time zone, how to ingest it
``OUT/truth/*.parquet``       true end cause and productive time of every attempt, failures,
                              lemon nodes, the configured rate schedule; ``truth/config.json``

Models never read ``truth/``. Same result -> byte-identical files.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import numpy as np
import polars as pl

from reliability.hostlist import compress
from reliability.sim.config import CAUSES, ClusterConfig
from reliability.sim.engine import EventLog, paused_gc
from reliability.sim.failures import rate_schedule
from reliability.taxonomy import classify_xid

__all__ = ["SACCT_FIELDS", "truth_attempts", "write_cluster"]

SACCT_FIELDS = (
    "JobID", "JobIDRaw", "JobName", "User", "Account", "Partition", "QOS", "State", "ExitCode",
    "Submit", "Start", "End", "Elapsed", "Timelimit", "NNodes", "AllocTRES", "ReqTRES", "NodeList",
    "Priority", "Cluster",
)  # fmt: skip
#: PCI bus ids of the 8 GPUs of a node (DGX A100 layout)
GPU_BUS = (
    "0000:07:00",
    "0000:0f:00",
    "0000:47:00",
    "0000:4e:00",
    "0000:87:00",
    "0000:90:00",
    "0000:b7:00",
    "0000:bd:00",
)


#: schemas of the event kinds a short run may not have recorded at all
_EMPTY: dict[str, dict[str, pl.DataType]] = {
    "attempt": {"time": pl.Float64, "job": pl.Int64, "attempt": pl.Int64, "submit_s": pl.Float64,
                "end_s": pl.Float64, "state": pl.String, "exit_code": pl.Int64,
                "exit_signal": pl.Int64, "cause": pl.String, "culprit": pl.Int64,
                "productive_s": pl.Float64, "lost_s": pl.Float64, "overhead_s": pl.Float64,
                "nodes": pl.List(pl.Int64)},
    "node_state": {"time": pl.Float64, "node": pl.Int64, "state": pl.String, "end_s": pl.Float64,
                   "reason": pl.String, "user": pl.String},
    "xid": {"time": pl.Float64, "node": pl.Int64, "xid": pl.String, "gpu": pl.Int64},
    "health": {"time": pl.Float64, "node": pl.Int64, "component": pl.String, "code": pl.String,
               "message": pl.String},
    "failure": {"time": pl.Float64, "node": pl.Int64, "cause": pl.String, "lemon": pl.Boolean,
                "detected": pl.Boolean, "effect": pl.String},
}  # fmt: skip


def _attempts(log: EventLog) -> pl.DataFrame:
    """Give the run's attempt events (typed columns even when no attempt ended)."""
    frame = log.frame("attempt")  # (cached: not rebuilt with a schema on every call)
    return frame if frame.height else pl.DataFrame(schema=_EMPTY["attempt"])


def _clock(seconds: pl.Expr, start_us: int, tz: str) -> pl.Expr:
    """Whole seconds since the start -> local wall-clock text as sacct prints it."""
    us = pl.lit(start_us, pl.Int64) + seconds.floor().cast(pl.Int64) * 1_000_000
    t = us.cast(pl.Datetime("us", "UTC")).dt.convert_time_zone(tz)
    return t.dt.strftime("%Y-%m-%dT%H:%M:%S")


def _dhms(seconds: pl.Expr) -> pl.Expr:
    """Whole seconds -> ``[D-]HH:MM:SS`` as sacct prints a duration (seconds at least 0)."""
    s = seconds.cast(pl.Int64)
    d = s // 86400
    # the time of day of a naive datetime that many seconds after midnight: 4x faster than
    # formatting three zero-filled numbers
    hms = pl.from_epoch(s % 86400, time_unit="s").dt.strftime("%H:%M:%S")
    return pl.when(d > 0).then(pl.format("{}-{}", d, hms)).otherwise(hms)


def _slices(a: pl.DataFrame, rows: int = 250_000) -> Iterator[tuple[pl.Expr, pl.DataFrame]]:
    """Yield the attempts in slices of about ``rows`` jobs (by raw job id), each slice complete.

    Each with the filter on ``raw_id`` that selects it (and its jobs).
    """
    ids = a.get_column("raw_id").unique().sort()
    bounds = [*ids.gather_every(max(rows, 1)).to_list(), (ids.max() or 0) + 1]
    for lo, hi in pairwise(bounds):
        within = (pl.col("raw_id") >= lo) & (pl.col("raw_id") < hi)
        yield within, a.filter(within)


def _utc(seconds: pl.Expr, start_us: int) -> pl.Expr:
    return (pl.lit(start_us, pl.Int64) + (seconds * 1_000_000).cast(pl.Int64)).cast(
        pl.Datetime("us", "UTC")
    )


def _plain_prefix(prefix: str) -> bool:
    """Tell whether node names ``prefix`` + number parse back into that prefix and number."""
    return not prefix[-1:].isdigit() and not any(c in prefix for c in "[],")


def node_hostlist(nodes: list[int], prefix: str, width: int) -> str:
    """Compress node indices into the hostlist :func:`~reliability.hostlist.compress` gives.

    The same expression as ``compress`` of the nodes' names (``prefix`` followed by index + 1
    zero-padded to ``width``; the prefix must not end in a digit), without parsing the names:
    as there, numbers written with a leading zero and those without form separate groups, in
    the order of their first node, and duplicates are dropped.

    Parameters
    ----------
    nodes : list of int
        Node indices (0-based), in allocation order.
    prefix : str
        The node names' prefix.
    width : int
        Digits of the node number in a name.

    Returns
    -------
    str
        The hostlist expression (``""`` for no nodes).
    """
    padded = 10 ** (width - 1) if width > 1 else 0  # numbers below it have a leading zero
    groups: dict[bool, list[int]] = {}
    for node in nodes:
        v = node + 1
        groups.setdefault(v < padded, []).append(v)
    out: list[str] = []
    for zero, values in groups.items():
        w = width if zero else 0
        nums = sorted(set(values))
        ranges: list[str] = []
        start = prev = nums[0]
        for n in nums[1:]:
            if n == prev + 1:
                prev = n
                continue
            ranges.append(_range(start, prev, w))
            start = prev = n
        ranges.append(_range(start, prev, w))
        if len(ranges) == 1 and start == prev:
            out.append(prefix + ranges[0])
        else:
            out.append(f"{prefix}[{','.join(ranges)}]")
    return ",".join(out)


def _range(lo: int, hi: int, width: int) -> str:
    a = str(lo).zfill(width)
    return a if lo == hi else f"{a}-{str(hi).zfill(width)}"


def write_cluster(
    out: Path,
    *,
    config: ClusterConfig,
    seed: int,
    jobs: pl.DataFrame,
    log: EventLog,
    lemon: np.ndarray,
) -> Path:
    """Write a run under ``out`` (replacing what a previous run wrote there).

    The files are those of the module docstring; ``kernel/`` and ``truth/`` are removed first,
    so no file of an earlier run survives in them.

    Parameters
    ----------
    out : pathlib.Path
        Output folder (created if missing).
    config : ClusterConfig
        The run's configuration (cluster name, node names, start, time zone of the logs).
    seed : int
        The run's seed (recorded in ``manifest.json`` and ``truth/config.json``).
    jobs : polars.DataFrame
        The run's jobs (one row per job, as :class:`reliability.sim.ClusterResult.jobs`).
    log : EventLog
        The run's event log (attempts, node states, Xids, health checks, failures).
    lemon : numpy.ndarray
        Lemon-node mask, one bool per node in :meth:`ClusterConfig.node_names` order (truth).

    Returns
    -------
    pathlib.Path
        ``out``.
    """
    cfg = config
    out.mkdir(parents=True, exist_ok=True)
    for sub in ("kernel", "truth"):
        if (out / sub).exists():
            shutil.rmtree(out / sub)
    names = cfg.node_names()
    node_name = pl.Series("n", names)
    start_us = int(cfg.start.timestamp() * 1_000_000)
    # the writers make many short-lived Python objects and no reference cycles: a collection
    # would only walk the run's event log again and again
    with paused_gc():
        attempts = _with_node_lists(cfg, jobs, log, names)
        _write_sacct(out / "sacct.psv", cfg, jobs, attempts, start_us)
        del attempts
        _write_events(out / "sacctmgr_events.psv", cfg, log, node_name, start_us)
        _write_kernel(out / "kernel", log, node_name, start_us)
        _write_health(out / "health_checks.csv", cfg, log, node_name, start_us)
        _write_truth(out / "truth", cfg, seed, jobs, log, lemon, names, start_us)
    manifest = {
        "generator": "reliability.sim.simulate_cluster",
        "cluster": cfg.name,
        "seed": seed,
        "tz": cfg.tz,
        "start": cfg.start.isoformat(),
        "days": cfg.days,
        "ingest": {
            "slurm": ["sacct.psv"],
            "events": ["sacctmgr_events.psv"],
            "kernel": sorted(f"kernel/{p.name}" for p in (out / "kernel").iterdir()),
            "health": ["health_checks.csv"],
        },
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return out


def _with_node_lists(
    cfg: ClusterConfig, jobs: pl.DataFrame, log: EventLog, names: list[str]
) -> pl.DataFrame:
    """Return the attempts with their job's raw id (to write them in slices of jobs) and NodeList.

    The job's other fields are joined slice by slice (the whole join held 0.6 GB at rsc1).
    Single-node attempts (most of them) get their node's name directly, the others a host list
    compressed in Python.
    """
    attempts = _attempts(log)
    n_nodes = pl.col("nodes").list.len()
    a = attempts.join(jobs.select("job", "raw_id"), on="job", how="left", maintain_order="left")
    a = a.with_columns(
        __row=pl.int_range(pl.len(), dtype=pl.UInt32),
        __single=pl.when(n_nodes == 1).then(
            pl.col("nodes").list.first().replace_strict(list(range(len(names))), names)
        ),
    )
    multi = a.filter(n_nodes > 1)
    # the node lists as Python lists: slices of the flat values (converting the list column
    # itself cost as much as compressing the lists)
    flat = multi.get_column("nodes").explode().to_list()
    ends = multi.get_column("nodes").list.len().cum_sum().to_list()
    lists = [flat[lo:hi] for lo, hi in zip([0, *ends][:-1], ends, strict=True)]
    if _plain_prefix(cfg.node_prefix):
        width = len(names[0]) - len(cfg.node_prefix)
        hostlists = [node_hostlist(x, cfg.node_prefix, width) for x in lists]
    else:
        hostlists = [compress([names[i] for i in x]) for x in lists]
    lookup = pl.DataFrame(
        {"__row": multi.get_column("__row"), "__hl": pl.Series(hostlists, dtype=pl.String)}
    )
    return (
        a.join(lookup, on="__row", how="left", maintain_order="left")
        .with_columns(
            NodeList=pl.when(n_nodes == 0)
            .then(pl.lit("None assigned"))
            .when(n_nodes == 1)
            .then(pl.col("__single"))
            .otherwise(pl.col("__hl"))
        )
        .drop("__single", "__hl", "nodes", "__row")
    )


def _write_sacct(
    path: Path, cfg: ClusterConfig, jobs: pl.DataFrame, attempts: pl.DataFrame, start_us: int
) -> None:
    """Write ``sacct.psv`` in slices of jobs, so the text of only one slice is in memory."""
    job_fields = jobs.select(
        "job", "raw_id", "job_id", "name", "user", "qos", "time_limit_s", "gpus", "n_nodes",
        "priority",
    )  # fmt: skip
    with open(path, "wb") as fh:
        fh.write(("|".join(SACCT_FIELDS) + "\n").encode())
        for within, part in _slices(attempts):
            # the slice's jobs only (a job's attempts carry its raw id)
            fields = job_fields.filter(within).drop("raw_id")
            part = part.join(fields, on="job", how="left", maintain_order="left")
            _sacct_records(part, cfg, start_us).write_csv(
                fh, quote_style="never", include_header=False
            )


def _sacct_records(part: pl.DataFrame, cfg: ClusterConfig, start_us: int) -> pl.DataFrame:
    """Build the sacct records (allocation + .batch + .extern) of a slice of attempts.

    Returns one column, ``line``: each allocation's record (its fields joined by ``|``) and,
    if it ran, those of its ``.batch`` and ``.extern`` steps on the next lines; in the file's
    order (by job, then attempt).
    """
    part = part.sort("raw_id", "attempt", maintain_order=True)
    tz = cfg.tz
    state_txt = (
        pl.when(pl.col("state") == "CANCELLED")
        .then(pl.format("CANCELLED by {}", 1000 + pl.col("user")))
        .otherwise(pl.col("state"))
    )
    started = pl.col("time").is_not_null()
    ended = pl.col("end_s").is_not_null()
    # the TRES text of each job size, formatted once per size
    sizes = part.select("gpus", "n_nodes").unique()
    sizes = sizes.with_columns(
        __tres=pl.format(
            "billing={},cpu={},gres/gpu={},mem={}G,node={}",
            pl.col("gpus") * 12,
            pl.col("gpus") * 12,
            pl.col("gpus"),
            pl.col("gpus") * 120,
            pl.col("n_nodes"),
        )
    )
    part = part.join(sizes, on=["gpus", "n_nodes"], how="left", maintain_order="left")
    tres = pl.col("__tres")
    alloc = part.select(
        "raw_id",
        "attempt",
        JobID=pl.col("job_id"),
        JobIDRaw=pl.col("raw_id").cast(pl.String),
        JobName=pl.col("name"),
        User=pl.format("user{}", pl.col("user")),
        Account=pl.format("team{}", pl.col("user") % 40),
        Partition=pl.when(pl.col("qos") == "low")
        .then(pl.lit("scavenger"))
        .otherwise(pl.lit("learn")),
        QOS=pl.col("qos"),
        State=state_txt,
        ExitCode=pl.when(pl.col("exit_code").is_null())
        .then(pl.lit("0:0"))
        .otherwise(pl.format("{}:{}", "exit_code", "exit_signal")),
        Submit=_clock(pl.col("submit_s"), start_us, tz),
        Start=pl.when(started)
        .then(_clock(pl.col("time"), start_us, tz))
        .otherwise(pl.lit("Unknown")),
        End=pl.when(ended).then(_clock(pl.col("end_s"), start_us, tz)).otherwise(pl.lit("Unknown")),
        Elapsed=pl.when(started & ended)
        .then(_dhms(pl.col("end_s").floor() - pl.col("time").floor()))
        .otherwise(pl.lit("00:00:00")),
        Timelimit=_dhms(pl.col("time_limit_s")),
        NNodes=pl.col("n_nodes").cast(pl.String),
        AllocTRES=pl.when(started).then(tres).otherwise(pl.lit("")),
        ReqTRES=tres,
        NodeList=pl.col("NodeList"),
        Priority=pl.col("priority").cast(pl.String),
        Cluster=pl.lit(cfg.name),
        _cause=pl.col("cause"),
    )
    # steps as Slurm records them: a requeue by RequeueExit leaves the batch step FAILED
    # with the exit code, a requeue by scontrol (admin, health check) kills it (signal 15)
    requeued = pl.col("State") == "REQUEUED"
    app = pl.col("_cause") == "app_requeue"
    batch_state = (
        pl.when(requeued & app)
        .then(pl.lit("FAILED"))
        .when(requeued)
        .then(pl.lit("CANCELLED"))
        .otherwise(pl.col("State").str.replace(r" by \d+$", ""))
    )
    batch_exit = pl.when(requeued & ~app).then(pl.lit("0:15")).otherwise(pl.col("ExitCode"))
    extern_state = (
        pl.when(requeued)
        .then(pl.lit("COMPLETED"))
        .otherwise(pl.col("State").str.replace(r" by \d+$", ""))
    )
    extern_exit = pl.when(requeued).then(pl.lit("0:0")).otherwise(pl.col("ExitCode"))
    ran = pl.col("Start") != "Unknown"

    # a null field prints empty; a step's field is null only where the allocation's is (and
    # filling a column without nulls copies it: most of the time of building the lines)
    nullable = {c for c in SACCT_FIELDS if alloc.get_column(c).has_nulls()}

    def fields(**replace: pl.Expr) -> list[pl.Expr]:
        """Give a record's fields: the allocation's, ``replace`` replacing some of them."""
        cols = [(c, replace.get(c, pl.col(c))) for c in SACCT_FIELDS]
        return [e.fill_null("") if c in nullable else e for c, e in cols]

    def text(*records: list[pl.Expr]) -> pl.Expr:
        """Give the records' lines, one after another: one concatenation, no text copied twice."""
        parts: list[pl.Expr] = []
        for record in records:
            if parts:
                parts.append(pl.lit("\n"))
            for j, e in enumerate(record):
                if j:
                    parts.append(pl.lit("|"))
                parts.append(e)
        return pl.concat_str(parts)

    steps = [
        fields(
            JobID=pl.col("JobID") + f".{step}",
            JobIDRaw=pl.col("JobIDRaw") + f".{step}",
            JobName=pl.lit(step),
            User=pl.lit(""),
            QOS=pl.lit(""),
            Partition=pl.lit(""),
            Timelimit=pl.lit(""),
            Priority=pl.lit(""),
            ReqTRES=pl.lit(""),
            State=state,
            ExitCode=exit_code,
        )
        for step, state, exit_code in (
            ("batch", batch_state, batch_exit),
            ("extern", extern_state, extern_exit),
        )
    ]
    # each allocation's line, followed by the lines of its two steps if it ran: with the slice
    # sorted first, the records need no reordering (a gather of every record's text, after
    # they were built, cost a fifth of the write)
    return alloc.select(line=pl.when(ran).then(text(fields(), *steps)).otherwise(text(fields())))


def _write_events(
    path: Path, cfg: ClusterConfig, log: EventLog, node_name: pl.Series, start_us: int
) -> None:
    """Write the node-state changes as ``sacctmgr show event`` prints them."""
    tz = cfg.tz
    ns = log.frame("node_state", _EMPTY["node_state"])
    events = ns.select(
        Cluster=pl.lit(cfg.name),
        NodeName=node_name.gather(ns.get_column("node")) if ns.height else pl.lit(None, pl.String),
        TimeStart=_clock(pl.col("time"), start_us, tz),
        TimeEnd=pl.when(pl.col("end_s").is_null())
        .then(pl.lit("Unknown"))
        .otherwise(_clock(pl.col("end_s"), start_us, tz)),
        State=pl.col("state"),
        Reason=pl.col("reason"),
        User=pl.when(pl.col("user") == "root")
        .then(pl.lit("root(0)"))
        .otherwise(pl.lit("slurm(64030)")),
    ).sort("TimeStart", "NodeName")
    events.write_csv(path, separator="|", quote_style="never")


def _write_kernel(folder: Path, log: EventLog, node_name: pl.Series, start_us: int) -> None:
    """Write the Xids as kernel logs, one file per host (UTC timestamps)."""
    folder.mkdir()
    xid = log.frame("xid", _EMPTY["xid"])
    if xid.height:
        xid = xid.with_columns(
            host=node_name.gather(xid.get_column("node")),
            ts=_utc(pl.col("time"), start_us).dt.strftime("%Y-%m-%dT%H:%M:%S%.6f+00:00"),
            bus=pl.Series(GPU_BUS).gather(xid.get_column("gpu") % len(GPU_BUS)),
            desc=pl.col("xid").map_elements(
                lambda c: classify_xid(c).description, return_dtype=pl.String
            ),
        ).with_columns(
            line=pl.format(
                "{} {} kernel: NVRM: Xid (PCI:{}): {}, pid={}, name=python, {}",
                "ts",
                "host",
                "bus",
                "xid",
                (pl.col("time") * 13).cast(pl.Int64) % 90000 + 1000,
                "desc",
            ),
        )
        for (host,), part in xid.sort("time").group_by("host", maintain_order=True):
            (folder / f"{host}.log").write_text(
                "\n".join(part.get_column("line")) + "\n", encoding="utf-8"
            )


def _write_health(
    path: Path, cfg: ClusterConfig, log: EventLog, node_name: pl.Series, start_us: int
) -> None:
    """Write the health checks as the canonical CSV."""
    hc = log.frame("health", _EMPTY["health"])
    health = hc.select(
        cluster=pl.lit(cfg.name),
        node=node_name.gather(hc.get_column("node")) if hc.height else pl.lit(None, pl.String),
        time=_utc(pl.col("time"), start_us).dt.strftime("%Y-%m-%dT%H:%M:%S%.6fZ"),
        source=pl.lit("health_check"),
        component=pl.col("component"),
        code=pl.col("code"),
        severity=pl.when(pl.col("code") == "false_alarm")
        .then(pl.lit("warning"))
        .otherwise(pl.lit("critical")),
        device=pl.lit(None, pl.String),
        message=pl.col("message"),
    )
    health.write_csv(path)


def truth_attempts(
    cfg: ClusterConfig, jobs: pl.DataFrame, log: EventLog, names: list[str] | None = None
) -> pl.DataFrame:
    """Return the true end of every attempt (what ``truth/attempts.parquet`` holds).

    Parameters
    ----------
    cfg : ClusterConfig
        The run's configuration (start time, node names).
    jobs : polars.DataFrame
        The run's jobs (as :class:`reliability.sim.ClusterResult.jobs`).
    log : EventLog
        The run's event log (its ``attempt`` events).
    names : list of str or None
        Node names by node index (None: ``cfg.node_names()``).

    Returns
    -------
    polars.DataFrame
        One row per attempt: ``job_id``, ``attempt``, ``state``, ``cause``, ``culprit`` (node
        name, null when no node caused the end), ``hardware`` (a hardware cause of
        :data:`~reliability.sim.config.CAUSES` ended it), ``start_time``, ``end_time`` (UTC),
        ``gpus``, ``n_nodes``, ``training``, ``productive_s``, ``lost_s``, ``overhead_s`` [s].
    """
    names = names if names is not None else cfg.node_names()
    start_us = int(cfg.start.timestamp() * 1_000_000)
    node_name = pl.Series("n", [*names, None])
    a = _attempts(log).join(
        jobs.select("job", "job_id", "gpus", "n_nodes", "training", "work_s"), on="job"
    )
    return a.select(
        "job_id",
        "attempt",
        "state",
        "cause",
        culprit=node_name.gather(a.get_column("culprit").replace(-1, len(names))),
        hardware=pl.col("cause").is_in(list(CAUSES)),
        start_time=_utc(pl.col("time"), start_us),
        end_time=_utc(pl.col("end_s"), start_us),
        gpus="gpus",
        n_nodes="n_nodes",
        training="training",
        productive_s="productive_s",
        lost_s="lost_s",
        overhead_s="overhead_s",
    )


def _write_truth(
    truth: Path,
    cfg: ClusterConfig,
    seed: int,
    jobs: pl.DataFrame,
    log: EventLog,
    lemon: np.ndarray,
    names: list[str],
    start_us: int,
) -> None:
    truth.mkdir()
    node_name = pl.Series("n", [*names, None])
    truth_attempts(cfg, jobs, log, names).write_parquet(truth / "attempts.parquet")
    f = log.frame("failure", _EMPTY["failure"])
    f.select(
        node=node_name.gather(f.get_column("node")) if f.height else pl.lit(None, pl.String),
        time=_utc(pl.col("time"), start_us),
        cause="cause",
        component=pl.col("cause").replace_strict(
            {k: v.component for k, v in CAUSES.items()}, return_dtype=pl.String
        ),
        lemon="lemon",
        detected="detected",
        effect="effect",
    ).write_parquet(truth / "failures.parquet")
    pl.DataFrame({"node": names, "lemon": lemon.tolist()}).write_parquet(truth / "nodes.parquet")
    rate_schedule(cfg).with_columns(time=_utc(pl.col("t_s"), start_us)).write_parquet(
        truth / "rate_schedule.parquet"
    )
    doc = {**cfg.as_dict(), "seed": seed}
    (truth / "config.json").write_text(
        json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8"
    )
