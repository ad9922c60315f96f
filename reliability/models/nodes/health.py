"""Node health: out-of-service time, open drains, repeat offenders and fleet availability.

When each node was out of service, why, for how long, which nodes are out right now, which
nodes cost the most jobs, and the fleet's availability over time.

From the ``node_states`` intervals (DOWN, DRAIN, FAIL, MAINT, REPAIR with their reasons) over
the observation window ``[start, end]``:

- an interval still open at the observation end (no end, or an end after it) is out of service
  *now*: it is clipped there and counted up to it (an open interval that began at the end
  itself, as in an export taken as a node went DOWN, is out of service now for 0 h so far);
- a node's **downtime** is the length of the union of its intervals (a node DOWN and DRAINED at
  once is out of service once, not twice); its **availability** is ``1 − downtime / window``;
- the **fleet availability** at time t is the share of nodes in service, a step function of t
  (exact, from the interval ends); per period it is the time-weighted mean of that function;
- **repeat offenders**: nodes ranked by their distinct hardware failures, *incidents*
  (:func:`reliability.models.failures.incidents.failures_by_node`: one DOWN, drain or Xid that ended
  every attempt running on the node is one failure, however many attempts it ended), from the
  hardware-attributed attempts (:func:`reliability.attribute_failures`: domain ``hardware`` or
  ``infrastructure``, the node being the attempt's ``culprit_node``, or its only node), with
  the attempts and jobs they ended and the GPU-hours of those attempts (the attempts' whole
  GPU time: an upper bound of the work lost, since the logs do not say when the last
  checkpoint was written).

Each interval's reason is classified as attribution does (:mod:`reliability.reasons`):
``reason_class`` (signal, slurm, unclassified, administrative), and ``domain`` when it names a
signal (``xid 79``, a component) or is one Slurm sets: ``hardware``, ``system_software`` or
null (an unclassified node fault, ``Not responding``, an administrator's drain).

The fleet is every node seen in the jobs, health events or node states (pass ``nodes=`` for
the real inventory: a node that never ran a job and never left service is otherwise missing).
Kokolis et al. HPCA'25 §VI use the out-of-service count per node as a lemon-node feature.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from reliability._result import Result, fmt_duration_h, fmt_num
from reliability.errors import Hint, Hinted
from reliability.models.failures.counts import as_utc
from reliability.models.failures.incidents import failures_by_node, unattributed_failures
from reliability.models.failures.mttf import HARDWARE

if TYPE_CHECKING:
    from reliability.reasons import ReasonRules
    from reliability.store import Dataset

__all__ = ["OUT_OF_SERVICE", "NodeHealth", "node_health", "reason_domains"]

#: the node states that take a node out of service
OUT_OF_SERVICE = ("DOWN", "DRAIN", "FAIL", "MAINT", "REPAIR")
_TS = pl.Datetime("us", "UTC")


def reason_domains(reasons: list[str | None], rules: ReasonRules | None = None) -> pl.DataFrame:
    """Classify node-state reasons by the hardware or Slurm signal they name.

    Parameters
    ----------
    reasons : list of str or None
        Node-state reasons as Slurm records them.
    rules : ReasonRules or None
        The reason rules (:mod:`reliability.reasons`; None: the built-in ones).

    Returns
    -------
    polars.DataFrame
        ``reason``, ``reason_class`` (signal, slurm, unclassified, administrative),
        ``component``, ``domain`` (null unless the reason names a signal or is one Slurm sets),
        ``signal`` (e.g. ``Xid 79``).
    """
    from reliability.reasons import ReasonRules

    rules = rules or ReasonRules()
    rows = []
    for r in dict.fromkeys(reasons):
        c = rules.classify(r)
        named = c["reason_class"] in ("signal", "slurm")
        rows.append(
            {
                "reason": r,
                "reason_class": c["reason_class"],
                "component": c["component"] if named else None,
                "domain": c["domain"] if named else None,
                "signal": c["signal"] if named else None,
            }
        )
    return pl.DataFrame(
        rows,
        schema={
            "reason": pl.String,
            "reason_class": pl.String,
            "component": pl.String,
            "domain": pl.String,
            "signal": pl.String,
        },
    )


@dataclass
class NodeHealth(Result):
    """Node health over an observation window.

    Out-of-service intervals, per-node downtime and availability, the nodes out of service at
    the observation end, repeat offenders and the fleet's availability over time.

    Attributes
    ----------
    intervals : polars.DataFrame
        One row per out-of-service interval inside the window: ``cluster, node, state, reason,
        start, end`` (null while open), ``hours`` (clipped to the window), ``open``, ``component``,
        ``reason_class``, ``domain``, ``signal`` (the reason's classification).
    by_node : polars.DataFrame
        One row per node of the fleet: ``intervals``, hours by state (``down_h``, ``drain_h``,
        ``fail_h``, ``maint_h``, ``repair_h``), ``downtime_h`` (union), ``availability``,
        ``out_now``, hardware ``failures`` (distinct incidents), the ``attempts_hit`` and
        ``jobs_hit`` they ended, ``gpu_hours_failed``; sorted by downtime.
    open_now : polars.DataFrame
        The intervals open at the observation end: ``node, state, reason, since, hours``,
        ``hardware`` (the reason names a hardware signal).
    offenders : polars.DataFrame
        Nodes with hardware failures, most first: ``failures`` (distinct incidents, not
        attempts), ``attempts_hit``, ``jobs_hit``, ``gpu_hours_failed`` [GPU-h],
        ``last_failure``, their ``downtime_h`` and ``out_now``.
    fleet : polars.DataFrame
        The fleet availability as a step function: ``time``, ``nodes_out``, ``availability`` (from
        that time to the next row).
    by_period : polars.DataFrame
        Per period: ``period`` (start), ``hours`` observed, ``node_hours_out``, ``availability``
        (time-weighted mean) and ``min_availability``.
    start, end : datetime or None
        The observation window [UTC].
    end_basis : str
        Why ``end`` is "now": the export time given at ingest, or the latest time in the inputs
        (a lower bound of when they were exported), with the input that sets it.
    n_nodes : int
        Nodes in the fleet; ``inventory_basis`` says where the list came from.
    every : str
        The period of ``by_period`` (polars duration, e.g. ``"1d"``).
    unattributed_failures : int
        Hardware-attributed attempts on several nodes with no culprit.
    offenders_assessed : bool
        False when no attributed jobs were given (``offenders`` is then empty by omission).
    """

    title = "Node health: out-of-service time, open drains and repeat offenders"
    intervals: pl.DataFrame
    by_node: pl.DataFrame
    open_now: pl.DataFrame
    offenders: pl.DataFrame
    fleet: pl.DataFrame
    by_period: pl.DataFrame
    start: datetime | None
    end: datetime | None
    n_nodes: int
    inventory_basis: str
    every: str
    unattributed_failures: int = 0
    end_basis: str = ""
    notes: list[str] = field(default_factory=list)
    #: False when no attributed jobs were given: repeat offenders were not looked for
    offenders_assessed: bool = True

    @property
    def window_h(self) -> float:
        """Length of the observation window [h] (0 when unknown)."""
        if self.start is None or self.end is None:
            return 0.0
        return max((self.end - self.start).total_seconds() / 3600.0, 0.0)

    @property
    def fleet_availability(self) -> float | None:
        """Share of node-hours in service over the window (None without a window or nodes)."""
        if self.window_h <= 0 or self.n_nodes == 0:
            return None
        out = float(self.by_node.get_column("downtime_h").sum()) if self.by_node.height else 0.0
        return 1.0 - out / (self.n_nodes * self.window_h)

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the result: nodes, out-of-service intervals, window hours, intervals open now."""
        return {
            "nodes": self.n_nodes,
            "out-of-service intervals": self.intervals.height,
            "window hours": self.window_h,
            "open now": self.open_now.height,
        }

    @property
    def summary(self) -> pl.DataFrame:
        """One row: nodes, window [h], intervals, node-hours out, fleet availability, nodes out now and with hardware failures."""
        out_h = float(self.by_node.get_column("downtime_h").sum()) if self.by_node.height else 0.0
        return self._mapping_frame(
            {
                "nodes": self.n_nodes,
                "window_h": self.window_h,
                "intervals": self.intervals.height,
                "node_hours_out": out_h,
                "fleet_availability": self.fleet_availability,
                "nodes_out_now": self.open_now.select("cluster", "node").n_unique()
                if self.open_now.height
                else 0,
                "nodes_with_hardware_failures": self.offenders.height,
                "hardware_failures_on_nodes": int(self.offenders.get_column("failures").sum())
                if self.offenders.height
                else 0,
            }
        )

    def tables(self) -> dict[str, pl.DataFrame]:
        """Return the result's tables by name.

        Returns
        -------
        dict of str to polars.DataFrame
            ``"summary"``, ``"out of service now"``, ``"repeat offenders"`` and ``"by node"`` (the
            50 nodes with the most downtime).
        """
        return {
            "summary": self.summary,
            "out of service now": self.open_now,
            "repeat offenders": self.offenders,
            "by node": self.by_node.head(50),
        }

    def _lines(self) -> list[str]:
        if self.window_h <= 0:
            return ["No observation window: node health not assessed."]
        lines = [
            f"{self.n_nodes:,} nodes over {fmt_duration_h(self.window_h)} "
            f"({self.start:%Y-%m-%d %H:%M} to {self.end:%Y-%m-%d %H:%M} UTC; the end, 'now', is "
            f"{self.end_basis or 'the latest time in the data'})"
        ]
        fa = self.fleet_availability
        if fa is not None:
            lines.append(
                f"fleet availability {100 * fa:.2f}% ({fmt_num(self.n_nodes * self.window_h * (1 - fa))} "
                f"node-hours out of service in {self.intervals.height:,} intervals)"
            )
        if self.open_now.height:
            lines.append(f"out of service at the observation end ({self.open_now.height}):")
            for r in self.open_now.head(20).iter_rows(named=True):
                lines.append(
                    f"  {r['node']} {r['state']} since {r['since']:%Y-%m-%d %H:%M} UTC "
                    f"({fmt_duration_h(r['hours'])}): {r['reason'] or 'no reason given'}"
                )
        else:
            lines.append("no node out of service at the observation end")
        if self.offenders.height:
            lines.append("nodes with the most distinct hardware failures:")
            for r in self.offenders.head(10).iter_rows(named=True):
                lines.append(
                    f"  {r['node']}: {r['failures']} failures (incidents), {r['attempts_hit']} attempts of "
                    f"{r['jobs_hit']} jobs, {fmt_num(r['gpu_hours_failed'])} GPU-hours of failed attempts"
                )
        elif not self.offenders_assessed:
            lines.append(
                Hinted(
                    "repeat offenders not assessed (no attributed jobs given: ",
                    Hint("attributed"),
                    ")",
                )
            )
        else:
            lines.append("no hardware-attributed failure names a node")
        return lines

    @classmethod
    def _example(cls, kind: str = "normal") -> NodeHealth:
        """Build a tiny instance: the drains of a 14-day, 16-node cluster (for contract tests).

        ``kind="no failures"``: the same without hardware failures.
        """
        from reliability.models._examples import tiny_jobs, tiny_tables

        t = tiny_tables(kind=kind)
        return node_health(t, attributed=t["attributed"], end=tiny_jobs()[1])


def _every(window_h: float) -> str:
    if window_h <= 3.0:
        return "10m"
    if window_h <= 72.0:
        return "1h"
    if window_h <= 24.0 * 90:
        return "1d"
    return "1w"


_JOB_COLUMNS = ("cluster", "nodes", "start_time", "end_time")
#: what the repeat-offender counts read of the attributed attempts
#: (:func:`~reliability.models.failures.incidents.failures_by_node`)
_OFFENDER_COLUMNS = (
    *_JOB_COLUMNS,
    "job_id",
    "n_accelerators",
    "failure_domain",
    "failure_cause",
    "culprit_node",
)


def _frames(
    source: Any, jobs: pl.DataFrame | pl.LazyFrame | None = None
) -> tuple[dict[str, Any], datetime | None, datetime | None, str]:
    if isinstance(source, dict):
        return source if jobs is None else {**source, "jobs": jobs}, None, None, ""
    start, end = source.observation_window()
    if jobs is None:
        jobs = source.scan("jobs").select(*_JOB_COLUMNS).collect()
    else:  # (a selection of columns shares the frame's memory: no copy; a LazyFrame stays lazy)
        jobs = jobs.select(*_JOB_COLUMNS)
    return (
        {
            "jobs": jobs,
            "node_states": source.node_states,
            "health_events": source.scan("health_events")
            .select("cluster", "node", "time")
            .collect(),
        },
        start,
        end,
        source.observation_end_basis,
    )


def _inventory(
    frames: dict[str, pl.DataFrame], nodes: list[str] | None
) -> tuple[pl.DataFrame, str]:
    if nodes is not None:
        cl = frames["node_states"].get_column("cluster").unique().to_list() or [None]
        clusters = [c for c in cl] if len(cl) == 1 else [None]
        return pl.DataFrame(
            {"cluster": [clusters[0]] * len(nodes), "node": nodes},
            schema={"cluster": pl.String, "node": pl.String},
        ), "given"
    parts = []
    jobs = frames.get("jobs")
    if jobs is not None and "nodes" in jobs.collect_schema().names():
        # on the streaming engine: the (attempt, node) rows (29 M at a million attempts) are
        # made and made unique a batch at a time, never held whole
        parts.append(
            jobs.lazy()
            .select("cluster", node=pl.col("nodes"))
            .explode("node")
            .unique()
            .collect(engine="streaming")
        )
    for name in ("node_states", "health_events"):
        f = frames.get(name)
        if f is not None and f.height:
            parts.append(f.select("cluster", "node").unique())
    if not parts:
        return pl.DataFrame(schema={"cluster": pl.String, "node": pl.String}), "no nodes seen"
    inv = (
        pl.concat(
            [
                p.with_columns(pl.col("cluster").cast(pl.String), pl.col("node").cast(pl.String))
                for p in parts
            ]
        )
        .drop_nulls("node")
        .unique()
        .sort("cluster", "node")
    )
    return inv, "every node seen in the jobs, health events or node states"


def _window(
    frames: dict[str, pl.DataFrame], start: datetime | None, end: datetime | None
) -> tuple[datetime | None, datetime | None]:
    times = []
    for name, cols in (
        ("jobs", ("start_time", "end_time")),
        ("node_states", ("start", "end")),
        ("health_events", ("time",)),
    ):
        f = frames.get(name)
        if f is None:
            continue
        have = [c for c in cols if c in f.collect_schema().names()]
        # (one pass over the columns; a LazyFrame of a fleet's parts reads only them)
        ends = f.lazy().select(
            *(pl.col(c).min().alias(f"{c}_lo") for c in have),
            *(pl.col(c).max().alias(f"{c}_hi") for c in have),
        )
        times += list(ends.collect(engine="streaming").row(0)) if have else []
    times = [t for t in times if t is not None]
    if start is None and times:
        start = min(times)
    if end is None and times:
        end = max(times)
    return start, end


def _merged(iv: pl.DataFrame) -> pl.DataFrame:
    """Union of each node's intervals (``s``, ``e``): one row per merged interval."""
    if iv.height == 0:
        return iv.select("cluster", "node", "s", "e")
    srt = iv.sort("cluster", "node", "s")
    return (
        srt.with_columns(
            prev_end=pl.col("e").cum_max().shift(1).over("cluster", "node"),
        )
        .with_columns(new=pl.col("prev_end").is_null() | (pl.col("s") > pl.col("prev_end")))
        .with_columns(g=pl.col("new").cast(pl.Int64).cum_sum().over("cluster", "node"))
        .group_by("cluster", "node", "g")
        .agg(s=pl.col("s").min(), e=pl.col("e").max())
        .drop("g")
    )


def _fleet(
    merged: pl.DataFrame, n_nodes: int, start: datetime, end: datetime, every: str
) -> tuple[pl.DataFrame, pl.DataFrame]:
    t0 = start.timestamp()
    s = (merged.get_column("s").dt.epoch("us").to_numpy() / 1e6) if merged.height else np.array([])
    e = (merged.get_column("e").dt.epoch("us").to_numpy() / 1e6) if merged.height else np.array([])
    times = np.concatenate([[t0], s, e, [end.timestamp()]])
    delta = np.concatenate([[0], np.ones(s.size), -np.ones(e.size), [0]])
    order = np.lexsort((delta, times))  # at one instant, ends before starts
    times, delta = times[order], delta[order]
    out = np.cumsum(delta)
    # one row per distinct time: the count after every change at that time
    last = np.r_[times[1:] != times[:-1], True]
    times, out = times[last], out[last]
    n = max(n_nodes, 1)
    fleet = pl.DataFrame(
        {
            "time": pl.Series((times * 1e6).astype(np.int64)).cast(_TS),
            "nodes_out": out.astype(np.int64),
            "availability": 1.0 - out / n,
        }
    )
    # cumulative node-seconds out at each change, then at the period bounds (piecewise linear)
    dt = np.diff(times, append=times[-1])
    cum = np.concatenate([[0.0], np.cumsum(out * dt)])[:-1]
    grid = pl.datetime_range(start, end, every, eager=True, time_zone="UTC")
    bounds = np.array([g.timestamp() for g in grid.to_list()] + [end.timestamp()])
    bounds = np.unique(np.clip(bounds, t0, end.timestamp()))
    at = np.interp(bounds, times, cum)
    rows = []
    for i in range(len(bounds) - 1):
        a, b = bounds[i], bounds[i + 1]
        if b <= a:
            continue
        inside = (times >= a) & (times < b)
        before = out[max(np.searchsorted(times, a, side="right") - 1, 0)]
        peak = max([before, *out[inside].tolist()])
        hours = (b - a) / 3600.0
        node_h = (at[i + 1] - at[i]) / 3600.0
        rows.append(
            {
                "period": datetime.fromtimestamp(a, UTC),
                "hours": hours,
                "node_hours_out": node_h,
                "availability": 1.0 - node_h / (n * hours),
                "min_availability": 1.0 - peak / n,
            }
        )
    by = pl.DataFrame(
        rows,
        schema={
            "period": _TS,
            "hours": pl.Float64,
            "node_hours_out": pl.Float64,
            "availability": pl.Float64,
            "min_availability": pl.Float64,
        },
    )
    return fleet, by


def _offenders(attributed: pl.DataFrame | pl.LazyFrame | None) -> tuple[pl.DataFrame, int]:
    """Distinct failures per node and the attempts charged to no node.

    A LazyFrame (a fleet's attributed parts) is read for its hardware-attributed attempts only,
    the columns the counts read, on the streaming engine: the counts see the same rows (in
    whatever order: they sort them by node and time, and equal keys are equal rows).
    """
    if isinstance(attributed, pl.LazyFrame):
        names = attributed.collect_schema().names()
        attributed = (
            attributed.filter(pl.col("failure_domain").is_in(HARDWARE))
            .select(c for c in _OFFENDER_COLUMNS if c in names)
            .collect(engine="streaming")
            if "failure_domain" in names
            else pl.DataFrame()
        )
    off = failures_by_node(attributed if attributed is not None else pl.DataFrame())
    lost = unattributed_failures(attributed) if attributed is not None else 0
    return off, lost


def node_health(
    source: Dataset | dict[str, pl.DataFrame],
    *,
    attributed: pl.DataFrame | pl.LazyFrame | None = None,
    jobs: pl.DataFrame | pl.LazyFrame | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
    nodes: list[str] | None = None,
    every: str | None = None,
) -> NodeHealth:
    """Out-of-service intervals, downtime, availability and repeat offenders per node.

    Parameters
    ----------
    source : Dataset or dict of str to polars.DataFrame
        A Dataset, or its ``node_states`` (and optionally ``jobs``, ``health_events``) frames.
    attributed : polars.DataFrame, polars.LazyFrame or None
        The attributed jobs (:func:`reliability.attribute_failures`) for the repeat offenders; None
        leaves them out. A LazyFrame (a fleet's parts,
        :func:`reliability.analyses.write_attributed_by_cluster`) is read for its
        hardware-attributed attempts only.
    jobs : polars.DataFrame, polars.LazyFrame or None
        The jobs already read (every attempt, with ``cluster, nodes, start_time, end_time``:
        the attributed attempts serve) for the fleet and the data's span, instead of reading the
        Dataset's (or the dict's) jobs again. A LazyFrame is read on polars' streaming engine,
        a batch of attempts at a time (the fleet's nodes, the span): a fleet's 50M attempts
        are never held.
    start, end : datetime or None
        The observation window [UTC]; default: the Dataset's, else the span of the data (an interval
        open at ``end`` is out of service now).
    nodes : list of str or None
        The fleet's node names (default: every node seen in the data).
    every : str or None
        Period of the availability table (polars duration); default from the window's length (10 min
        up to 3 h, hours up to 3 days, days up to 90, else weeks).

    Returns
    -------
    NodeHealth
        Intervals, per-node downtime and availability, nodes out now, repeat offenders and the
        fleet's availability over time (see :class:`NodeHealth`).
    """
    frames, ds_start, ds_end, basis_end = _frames(source, jobs)
    notes: list[str] = []
    if end is not None:
        basis_end = "given"
    elif ds_end is None:
        basis_end = "latest time in the data"
    start = as_utc(start, "start") if start is not None else ds_start
    end = as_utc(end, "end") if end is not None else ds_end
    start, end = _window(frames, start, end)
    states = frames.get("node_states")
    if states is None:
        raise ValueError("node_health needs a node_states table (a Dataset or a dict holding one)")
    inv, basis = _inventory(frames, nodes)
    n_nodes = inv.height
    empty_iv = {
        "cluster": pl.String,
        "node": pl.String,
        "state": pl.String,
        "reason": pl.String,
        "start": _TS,
        "end": _TS,
        "hours": pl.Float64,
        "open": pl.Boolean,
        "reason_class": pl.String,
        "component": pl.String,
        "domain": pl.String,
        "signal": pl.String,
    }
    if start is None or end is None or end <= start:
        notes.append("no observation window (no timestamps in the data): node health not assessed")
        e = pl.DataFrame(schema=empty_iv)
        return NodeHealth(
            intervals=e,
            by_node=pl.DataFrame(),
            open_now=pl.DataFrame(),
            offenders=pl.DataFrame(),
            fleet=pl.DataFrame(),
            by_period=pl.DataFrame(),
            start=start,
            end=end,
            n_nodes=n_nodes,
            inventory_basis=basis,
            every=every or "1d",
            end_basis=basis_end,
            notes=notes,
        )
    window_h = (end - start).total_seconds() / 3600.0
    every = every or _every(window_h)
    lo, hi = pl.lit(start).cast(_TS), pl.lit(end).cast(_TS)
    iv = (
        states.with_columns(
            pl.col("state").cast(pl.String),
            pl.col("cluster").cast(pl.String),
            pl.col("node").cast(pl.String),
            pl.col("reason").cast(pl.String),
        )
        # an interval still open at the end is out of service now, even one that began at
        # the end itself (an export taken as a node went DOWN: its latest time is that start)
        .filter(
            pl.col("state").is_in(OUT_OF_SERVICE)
            & ((pl.col("start") < hi) | (pl.col("end").is_null() & (pl.col("start") <= hi)))
        )
        .filter(pl.col("end").is_null() | (pl.col("end") > lo))
        .with_columns(
            open=pl.col("end").is_null() | (pl.col("end") > hi),
            s=pl.max_horizontal("start", lo),
            e=pl.min_horizontal(pl.col("end").fill_null(hi), hi),
        )
        .with_columns(hours=(pl.col("e") - pl.col("s")).dt.total_microseconds() / 3.6e9)
    )
    dropped = states.height - iv.height
    if dropped:
        notes.append(
            f"{dropped:,} node-state intervals outside the window or not out of service left out"
        )
    cls = (
        reason_domains(iv.get_column("reason").unique().to_list())
        if iv.height
        else reason_domains([])
    )
    iv = iv.join(cls, on="reason", how="left", nulls_equal=True)
    # nodes that only appear in node states are in the fleet already (inventory includes them)
    merged = _merged(iv)
    # (sums of whole microseconds, then hours: the same to the bit whatever order polars'
    # parallel group-by adds a node's intervals in; a float sum varied in its last digits)
    us = (pl.col("e") - pl.col("s")).dt.total_microseconds()
    down = merged.group_by("cluster", "node").agg(downtime_h=us.sum() / 3.6e9)
    per_state = iv.group_by("cluster", "node").agg(
        intervals=pl.len().cast(pl.Int64),
        out_now=pl.col("open").any(),
        **{f"{s.lower()}_h": us.filter(pl.col("state") == s).sum() / 3.6e9 for s in OUT_OF_SERVICE},
    )
    off, unattributed = _offenders(attributed)
    if unattributed:
        notes.append(
            f"{unattributed:,} hardware-attributed attempts ran on several nodes with no evidence naming one: "
            "not counted against any node"
        )
    by = (
        inv.join(per_state, on=["cluster", "node"], how="left", nulls_equal=True)
        .join(down, on=["cluster", "node"], how="left", nulls_equal=True)
        .join(off, on=["cluster", "node"], how="left", nulls_equal=True)
        .drop("last_failure")
        .with_columns(
            pl.col("intervals", "failures", "attempts_hit", "jobs_hit").fill_null(0),
            pl.col(
                "downtime_h", "gpu_hours_failed", *(f"{s.lower()}_h" for s in OUT_OF_SERVICE)
            ).fill_null(0.0),
            pl.col("out_now").fill_null(False),
        )
        .with_columns(availability=1.0 - pl.col("downtime_h") / window_h)
        .sort(["downtime_h", "failures", "node"], descending=[True, True, False])
    )
    open_now = (
        iv.filter(pl.col("open"))
        .select(
            "cluster",
            "node",
            "state",
            "reason",
            since=pl.col("start"),
            hours="hours",
            hardware=pl.col("domain").eq("hardware").fill_null(False),
            signal="signal",
        )
        .sort(["hardware", "since", "node"], descending=[True, False, False])
    )
    offenders = off.join(
        by.select("cluster", "node", "downtime_h", "out_now"),
        on=["cluster", "node"],
        how="left",
        nulls_equal=True,
    )
    fleet, by_period = _fleet(merged, n_nodes, start, end, every)
    if n_nodes and window_h < 24.0:
        notes.append(
            f"the window is {fmt_duration_h(window_h)} long: availability figures describe that span only, "
            "not a long-run availability"
        )
    intervals = iv.select(*empty_iv).sort("start", "node")
    return NodeHealth(
        intervals=intervals,
        by_node=by,
        open_now=open_now,
        offenders=offenders,
        fleet=fleet,
        by_period=by_period,
        start=start,
        end=end,
        n_nodes=n_nodes,
        inventory_basis=basis,
        every=every,
        unattributed_failures=unattributed,
        end_basis=basis_end,
        notes=notes,
        offenders_assessed=attributed is not None,
    )
