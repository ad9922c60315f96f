"""Per-node features over rolling windows, for lemon-node detection (Kokolis et al. HPCA'25 §VI).

Lemon nodes repeatedly fail jobs yet pass the health checks. For every node and every window
``[window_end − window_days, window_end)`` stepping by ``step_days`` this computes, from the
canonical tables only (polars expressions, no per-node Python loop):

==========================  ================================================================
``attempts``                job attempts that ended on the node in the window
``failed``                  of those, ended FAILED / NODE_FAIL / REQUEUED / OUT_OF_MEMORY
``node_fail``               ended NODE_FAIL
``single_node_failed``      failed attempts that ran on this node only
``multi_node_failed``       failed attempts that spanned several nodes
``single_node_fail_rate``   single_node_failed / single-node attempts (0 when none)
``hw_culprit``              attempts attributed to hardware with this node as the culprit
``hw_share``                hw_culprit / failed
``distinct_causes``         distinct attributed causes among hw_culprit
``cofailures``              minutes in which two or more attempts on the node failed together
                            (a crash that escaped the health check takes every job with it)
``xid``                     kernel-log (Xid/SXid) events of the node's own hardware (not the
                            application Xids of the software component); ``xid_<component>``
                            per component
``critical_events``         critical health events (any source) of the node's own hardware
                            (filesystem and software events are not the node's fault)
``out_of_service``          node-state intervals (drain, down, repair...) that began in the window
``drains`` / ``downs``      of those, DRAIN / DOWN
``hours_out``               hours out of service within the window
``<count>_vs_fleet``        the node's rate relative to the fleet's in the same window, shrunk
                            toward 1 (see below), for failed, hw_culprit, cofailures, xid,
                            critical_events, out_of_service, downs, hours_out: a lemon stands
                            out from its peers at any fleet rate
==========================  ================================================================

The fleet-relative features are empirical-Bayes rate ratios, not raw ratios to the fleet's
mean: with ``c`` the node's count, ``e`` its days in service in the window (the window less
its hours out of service), ``λ = Σc / Σe`` the fleet's rate in the window and ``E = λ·e`` the
count the node would have at the fleet's rate, the feature is ``(c + A) / (A + E)``, the
posterior mean of the node's rate ratio under a Gamma(A, A) prior (mean 1) with
``A =`` :data:`PRIOR_COUNTS`. A node with no events reads about 1 at a quiet fleet and below 1
at a busy one; one event where the fleet expects 0.05 reads 1.5, not the 10 a ratio to a
near-zero mean gave (one Xid then flagged an ordinary node, issue 40); ten events read 5.9.
``hours_out_vs_fleet`` is ``(h + 24) / (mean h + 24)``: a day of pseudo-downtime on both sides.

The paper's "jobs excluded from the node" and "repair tickets" are not in the data contract;
repair tickets appear here as REPAIR node states when a site ingests them.

Censoring at the observation end: an attempt still running then (RUNNING / SUSPENDED, or
ending after it) counts as an attempt on its nodes in the window holding the observation
end, never as a failure; an out-of-service interval still open counts its hours up to the
observation end, not to the end of the window; events after it are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import polars as pl

from reliability._result import fmt_duration_h
from reliability.attribution import attribute_failures
from reliability.models.failures.counts import as_utc, clip_attempts

if TYPE_CHECKING:
    from reliability.store import Dataset

__all__ = ["FEATURES", "PRIOR_COUNTS", "XID_COMPONENTS", "ShortHistoryError", "node_features"]

XID_COMPONENTS = ("gpu", "gpu_memory", "nvlink", "pcie", "nic", "ib_link", "dimm", "psu", "unknown")
FEATURES = (
    "attempts", "failed", "node_fail", "single_node_failed", "multi_node_failed",
    "single_node_fail_rate", "hw_culprit", "hw_share", "distinct_causes", "cofailures", "xid",
    *(f"xid_{c}" for c in XID_COMPONENTS), "critical_events", "out_of_service", "drains", "downs",
    "hours_out",
    *(f"{c}_vs_fleet" for c in ("failed", "hw_culprit", "cofailures", "xid", "critical_events",
                                 "out_of_service", "downs", "hours_out")),
)  # fmt: skip
_RELATIVE = (
    "failed",
    "hw_culprit",
    "cofailures",
    "xid",
    "critical_events",
    "out_of_service",
    "downs",
)
#: prior strength of the fleet-relative rate ratios, in events (a Gamma(A, A) prior, mean 1)
PRIOR_COUNTS = 2.0
#: pseudo-downtime added to a node's and the fleet's mean hours out of service [h]
PRIOR_HOURS_OUT = 24.0
#: components that are not the node's own hardware (a missing mount is the filesystem's fault)
_NOT_NODE = ("filesystem", "software")
_FAILED = ("FAILED", "NODE_FAIL", "REQUEUED", "OUT_OF_MEMORY")
_HW = ("hardware",)  # the node's own hardware, not infrastructure (filesystem)


class ShortHistoryError(ValueError):
    """The data span less than one feature window."""


def _windows(times: pl.Expr, origin: datetime, step: timedelta, n_back: int) -> pl.Expr:
    """For each event time, the list of window ends whose window holds it."""
    step_us = int(step.total_seconds() * 1e6)
    k = ((times - pl.lit(origin)).dt.total_microseconds() // step_us) + 1  # first window end index
    return pl.int_ranges(k, k + n_back).alias("_k")


def node_features(
    source: Dataset | dict[str, pl.DataFrame],
    window_days: int = 28,
    step_days: int = 7,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    observation_end: datetime | None = None,
) -> pl.DataFrame:
    """Compute rolling per-node features for the lemon classifier.

    One row per (cluster, node, window_end) for every node seen in the data and every window end
    from ``start + window_days`` to ``end`` (default: the data's span, windows aligned to
    ``start``). ``window_days`` must be a multiple of ``step_days``. Kokolis et al., HPCA '25,
    §VI (lemon nodes).

    Parameters
    ----------
    source : Dataset or dict
        A Dataset (attributed here) or a dict with ``jobs`` (attributed or not),
        ``health_events`` and ``node_states``.
    window_days, step_days : float
        Window length and the step between window ends [days].
    start, end : datetime or None
        First window start and last window end [UTC]; None: the data's span.
    observation_end : datetime or None
        When the data end [UTC]: open attempts and intervals are censored there (see the module
        doc). Default: the Dataset's observation end, else the latest timestamp in the tables.

    Returns
    -------
    polars.DataFrame
        One row per (cluster, node, window_end) with :data:`FEATURES`.
    """
    check_grid(window_days, step_days)
    jobs, he, ns, obs = _inputs(source, observation_end)
    return features_of(jobs, he, ns, obs, window_days, step_days, start, end)


def check_grid(window_days: int, step_days: int) -> None:
    """Refuse a window that is not a positive multiple of the step.

    Parameters
    ----------
    window_days, step_days : int
        Window length and the step between window ends [days].

    Raises
    ------
    ValueError
        Otherwise.
    """
    if window_days <= 0 or step_days <= 0 or window_days % step_days:
        raise ValueError("window_days must be a positive multiple of step_days")


def check_history(t0: datetime, t1: datetime, window_days: int) -> None:
    """Refuse a span from ``t0`` to ``t1`` shorter than one window (no window ends in it).

    Parameters
    ----------
    t0, t1 : datetime
        The first window's start and the last window's end [UTC].
    window_days : int
        Window length [days] (a multiple of the step: a whole window fits iff a step count
        of windows does).

    Raises
    ------
    ShortHistoryError
        Saying the span.
    """
    if t1 - t0 < timedelta(days=window_days):
        span = fmt_duration_h((t1 - t0).total_seconds() / 3600)
        raise ShortHistoryError(f"the data span {span}, less than one {window_days}-day window")


def features_of(
    jobs: pl.DataFrame,
    he: pl.DataFrame,
    ns: pl.DataFrame,
    obs: datetime | None,
    window_days: int,
    step_days: int,
    start: datetime | None,
    end: datetime | None,
    *,
    some_attempts: bool = True,
) -> pl.DataFrame:
    """:func:`node_features` on its inputs read (attributed jobs, events, states, the end).

    Parameters
    ----------
    jobs, he, ns : polars.DataFrame
        Attributed attempts, health events and node states.
    obs : datetime or None
        The observation end [UTC].
    window_days, step_days : int
        As :func:`node_features` [days].
    start, end : datetime or None
        As :func:`node_features` [UTC].
    some_attempts : bool
        Refuse inputs with no attempt started before the end (:func:`node_features`). False
        for one cluster of a fleet (:func:`reliability.analyses.features_by_cluster`, which
        gives ``start``): its nodes' events and states still make their rows, as they do in
        the whole fleet's call.

    Returns
    -------
    polars.DataFrame
        As :func:`node_features`.
    """
    step = timedelta(days=step_days)
    n_back = window_days // step_days
    ended, he, ns = _censored(jobs, he, ns, obs)
    if ended.height == 0 and some_attempts:
        raise ValueError(
            "no job attempts: the lemon features count each node's attempts and failures "
            "(ingest the cluster's job accounting, a sacct export)"
        )
    t0 = start or min(
        x for x in (ended["start_time"].min(), he["time"].min(), ns["start"].min()) if x is not None
    )
    t1 = (
        end
        or obs
        or max(
            x
            for x in (ended["end_time"].max(), he["time"].max(), ns["start"].max())
            if x is not None
        )
    )
    check_history(t0, t1, window_days)
    w = _Windows(t0, step, n_back, int((t1 - t0) / step))
    a, attempt_nodes = _attempt_counts(ended, w)
    e, event_nodes = _event_counts(he, w)
    s, state_nodes = _state_counts(ns, w)
    nodes = pl.concat([attempt_nodes, event_nodes, state_nodes]).unique()
    return _features(nodes, a, e, s, w, window_days)


@dataclass(frozen=True)
class _Windows:
    """The window grid: ends at ``t0 + k * step`` for k in ``n_back .. n_windows``."""

    t0: datetime
    step: timedelta
    n_back: int
    n_windows: int

    @property
    def ends(self) -> pl.DataFrame:
        return pl.DataFrame(
            {"_k": list(range(self.n_back, self.n_windows + 1))}, schema={"_k": pl.Int64}
        )

    @property
    def end_expr(self) -> pl.Expr:
        """The end of window ``_k`` [UTC]."""
        return pl.lit(self.t0) + pl.duration(
            microseconds=pl.col("_k") * int(self.step.total_seconds() * 1e6)
        )

    def per_window(self, frame: pl.DataFrame, time_col: str) -> pl.DataFrame:
        """One row per (row of ``frame``, window holding its ``time_col``)."""
        return (
            frame.with_columns(_windows(pl.col(time_col), self.t0, self.step, self.n_back))
            .explode("_k")
            .join(self.ends, on="_k", how="semi")
        )


def _inputs(
    source: Dataset | dict[str, pl.DataFrame], observation_end: datetime | None
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, datetime | None]:
    """Attributed jobs, health events, node states and the observation end [UTC]."""
    obs = observation_end
    if isinstance(source, dict):
        jobs, he, ns = source["jobs"], source["health_events"], source["node_states"]
        if "failure_domain" not in jobs.columns:
            jobs = attribute_failures(jobs, health_events=he, node_states=ns)
    else:
        jobs = attribute_failures(source)
        he, ns = source.health_events, source.node_states
        obs = obs or source.observation_end
    if obs is None:
        obs = max(
            (
                x
                for x in (
                    jobs["end_time"].max(),
                    jobs["start_time"].max(),
                    he["time"].max(),
                    ns["start"].max(),
                    ns["end"].max(),
                )
                if x is not None
            ),
            default=None,
        )
    if obs is not None:
        obs = as_utc(obs, "observation_end")
    return jobs, he, ns, obs


def _censored(
    jobs: pl.DataFrame, he: pl.DataFrame, ns: pl.DataFrame, obs: datetime | None
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Censor the attempts, events and intervals at the observation end (module doc)."""
    # open attempts are censored at the observation end: they ran there, they did not fail
    ended, _ = clip_attempts(jobs, obs)
    # an open attempt was running in the last instant before the end: the window holding it
    ended = ended.with_columns(
        end_time=pl.when(pl.col("open"))
        .then(pl.col("stop") - timedelta(microseconds=1))
        .otherwise("stop")
    )
    if obs is not None:
        obs_lit = pl.lit(obs).cast(pl.Datetime("us", "UTC"))
        he = he.filter(pl.col("time") <= obs_lit)
        ns = ns.filter(pl.col("start") < obs_lit).with_columns(
            end=pl.min_horizontal(pl.col("end").fill_null(obs_lit), obs_lit)
        )
    return ended, he, ns


def _attempt_counts(ended: pl.DataFrame, w: _Windows) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per-window attempt counts per node, and the nodes the attempts ran on."""
    t0, step, n_back, n_windows = w.t0, w.step, w.n_back, w.n_windows
    # Attempts are many (millions, each on many nodes): count them once per node and step,
    # then sum the steps of each window, instead of copying every attempt into its windows.
    step_us = int(step.total_seconds() * 1e6)
    # Per attempt first, then one row per (attempt, node): only narrow columns are copied to
    # every node of a long host list (the culprit's node and cause only for the few attempts
    # charged to hardware).
    hw = pl.col("failure_domain").is_in(_HW) & ~pl.col("open")
    k = (pl.col("end_time") - pl.lit(t0)).dt.total_microseconds() // step_us + 1
    exploded = (
        ended.lazy()
        .select(
            "cluster",
            "end_time",
            failed=pl.col("state").cast(pl.String).is_in(_FAILED) & ~pl.col("open"),
            node_fail=(pl.col("state").cast(pl.String) == "NODE_FAIL") & ~pl.col("open"),
            single=pl.col("nodes").list.len() == 1,
            _k=k,
            node=pl.col("nodes"),
        )
        .explode("node")
        .drop_nulls("node")
    ).collect()
    in_range = pl.col("_k").is_between(1, n_windows)
    att = exploded.lazy().filter(in_range)
    # the attempts charged to a node's hardware (few) on that node: its culprit rows
    # (as the host lists' names: a column of nulls, or categorical lists, join all the same)
    culprit = pl.col("culprit_node").cast(ended.schema["nodes"].inner)
    culprit_rows = (
        ended.lazy()
        .filter(hw & pl.col("culprit_node").is_not_null())
        .select(
            "cluster",
            "end_time",
            "failure_cause",
            _k=k,
            node=culprit,
            _in=pl.col("nodes").list.contains(culprit),
        )
        .filter(pl.col("_in") & in_range)
        .drop("_in")
    )
    # several attempts on the node failing in the same minute: a crash that took them all
    # (minutes counted from the epoch: the times are UTC)
    co = (
        att.filter(pl.col("failed"))
        .group_by("cluster", "node", "_k", pl.col("end_time").dt.epoch("us") // 60_000_000)
        .agg(n=pl.len())
        .group_by("cluster", "node", "_k")
        .agg(cofailures=(pl.col("n") >= 2).sum())
    )
    steps, culprits = pl.collect_all(
        [
            att.group_by("cluster", "node", "_k")
            .agg(
                attempts=pl.len(),
                failed=pl.col("failed").sum(),
                node_fail=pl.col("node_fail").sum(),
                single_node_failed=(pl.col("failed") & pl.col("single")).sum(),
                multi_node_failed=(pl.col("failed") & ~pl.col("single")).sum(),
                single_attempts=pl.col("single").sum(),
            )
            .join(co, on=["cluster", "node", "_k"], how="left")
            .join(
                culprit_rows.group_by("cluster", "node", "_k").agg(hw_culprit=pl.len()),
                on=["cluster", "node", "_k"],
                how="left",
            )
            .with_columns(pl.col("hw_culprit").fill_null(0)),
            culprit_rows.select("cluster", "node", "end_time", "failure_cause"),
        ]
    )
    counts = [c for c in steps.columns if c not in ("cluster", "node", "_k")]
    a = (
        steps.select("cluster", "node")
        .unique()
        .join(
            pl.DataFrame({"_k": list(range(1, n_windows + 1))}, schema={"_k": pl.Int64}),
            how="cross",
        )
        .join(steps, on=["cluster", "node", "_k"], how="left")
        .with_columns(pl.col(counts).fill_null(0))
        .sort("cluster", "node", "_k")
        .with_columns(pl.col(counts).rolling_sum(n_back, min_samples=1).over("cluster", "node"))
        .filter(pl.col("_k") >= n_back)
    )
    # distinct causes do not add up over steps: the few culprit attempts go into their windows
    causes = (
        w.per_window(culprits, "end_time")
        .group_by("cluster", "node", "_k")
        .agg(distinct_causes=pl.col("failure_cause").n_unique())
    )
    a = a.join(causes, on=["cluster", "node", "_k"], how="left")
    nodes = pl.concat(
        [
            steps.select("cluster", "node"),
            exploded.filter(~in_range.fill_null(False)).select("cluster", "node").drop_nulls(),
        ]
    )
    return a, nodes


def _event_counts(he: pl.DataFrame, w: _Windows) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per-window health-event counts per node, and the nodes with events."""
    ev = w.per_window(
        he.select("cluster", "node", "time", "source", "component", "severity"), "time"
    )
    xid_by_component = [
        ((pl.col("source") == "kernel_log") & (pl.col("component") == c)).sum().alias(f"xid_{c}")
        for c in XID_COMPONENTS
    ]
    e = ev.group_by("cluster", "node", "_k").agg(
        # the node's own hardware: application Xids (13, 31, 43: software) follow the workload
        # (a node running many small jobs logs many), not the node's health
        ((pl.col("source") == "kernel_log") & ~pl.col("component").is_in(_NOT_NODE))
        .sum()
        .alias("xid"),
        ((pl.col("severity") == "critical") & ~pl.col("component").is_in(_NOT_NODE))
        .sum()
        .alias("critical_events"),
        *xid_by_component,
    )
    return e, ev.select("cluster", "node")


def _state_counts(ns: pl.DataFrame, w: _Windows) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per-window out-of-service counts and hours per node, and the nodes with intervals."""
    st = w.per_window(ns.select("cluster", "node", "start", "end", "state"), "start")
    s = (
        st.with_columns(_end=w.end_expr)
        .with_columns(
            hours=(
                pl.min_horizontal(pl.col("end").fill_null(pl.col("_end")), pl.col("_end"))
                - pl.col("start")
            )
            .dt.total_seconds()
            .clip(lower_bound=0)
            / 3600.0
        )
        .group_by("cluster", "node", "_k")
        .agg(
            out_of_service=pl.len(),
            drains=(pl.col("state") == "DRAIN").sum(),
            downs=(pl.col("state") == "DOWN").sum(),
            hours_out=pl.col("hours").sum(),
        )
    )
    return s, st.select("cluster", "node")


def _features(
    nodes: pl.DataFrame,
    a: pl.DataFrame,
    e: pl.DataFrame,
    s: pl.DataFrame,
    w: _Windows,
    window_days: int,
) -> pl.DataFrame:
    """Every node's counts in every window, with the rates and the fleet-relative features."""
    window_end = w.end_expr
    grid = nodes.join(w.ends, how="cross")
    out = (
        grid.join(a, on=["cluster", "node", "_k"], how="left")
        .join(e, on=["cluster", "node", "_k"], how="left")
        .join(s, on=["cluster", "node", "_k"], how="left")
        .with_columns(pl.exclude("cluster", "node", "_k").fill_null(0))
        .with_columns(
            single_node_fail_rate=pl.when(pl.col("single_attempts") > 0)
            .then(pl.col("single_node_failed") / pl.col("single_attempts"))
            .otherwise(0.0),
            hw_share=pl.when(pl.col("failed") > 0)
            .then(pl.col("hw_culprit") / pl.col("failed"))
            .otherwise(0.0),
            window_end=window_end,
        )
        # days in service in the window: the exposure of the fleet-relative rates
        .with_columns(_days=(window_days - pl.col("hours_out") / 24.0).clip(lower_bound=0.0))
        .with_columns(
            # relative to the fleet in the same window: a lemon is an outlier among its peers,
            # whatever the cluster-wide failure rate is doing at the time; shrunk toward 1 so
            # one event at a quiet fleet is not an outlier
            [
                (
                    (pl.col(c) + PRIOR_COUNTS)
                    / (
                        PRIOR_COUNTS
                        + pl.col("_days")
                        * pl.col(c).sum().over("cluster", "_k")
                        / pl.col("_days").sum().over("cluster", "_k").clip(lower_bound=1e-9)
                    )
                ).alias(f"{c}_vs_fleet")
                for c in _RELATIVE
            ],
            hours_out_vs_fleet=(pl.col("hours_out") + PRIOR_HOURS_OUT)
            / (pl.col("hours_out").mean().over("cluster", "_k") + PRIOR_HOURS_OUT),
        )
        .select("cluster", "node", "window_end", *[pl.col(f).cast(pl.Float64) for f in FEATURES])
        .sort("cluster", "node", "window_end")
    )
    return out
