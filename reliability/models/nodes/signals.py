"""Which signals predict job failures: each signal kind measured on the cluster's own history.

Operators drain nodes on fixed rules ("drain after an Xid 79", "after 3 Xid 48 in an hour"),
taken from vendor documents or folklore. This measures, per signal kind, on the user's own
logs, what those signals have been followed by:

- **signals**: every health event (a kernel Xid/SXid, a DCGM field, a health check, a ticket:
  ``source`` and ``code``), and every departure from service by the class of its reason
  (:mod:`reliability.reasons`: ``drain: unclassified``, ``DOWN: signal psu``...);
- **outcome**: a job attempt running on that node at the signal ends abnormally (FAILED,
  NODE_FAIL, REQUEUED, BOOT_FAIL, LAUNCH_FAILED) within ``horizon_h`` after it. The outcome
  does not use failure attribution, whose evidence is these same signals: the measure is not
  circular;
- **baseline**: the same outcome at any time the node ran jobs: the share of the node's busy
  time from which a job then running ended abnormally within the horizon (exactly: the union
  over its abnormal attempts of ``[max(start, end − h), end]``, over the union of all its
  attempts), averaged over the signal's events; **lift** = observed share / baseline share,
  with an exact (Clopper-Pearson) interval of the share divided by the baseline, and a
  one-sided binomial p-value of "no more failures than the baseline";
- **lead time**: the median time from the signal to the abnormal end, among those followed.

**Drain policies** (:func:`policy_table`): for a signal kind, "drain after ``k`` events within
``t`` hours" fires at the k-th event of a node in any ``t``-hour span. Its precision is the
share of firings followed by a hardware failure of that node (a distinct incident of the
attributed jobs, :func:`reliability.models.failures.node_incidents`) within the horizon; its recall
the share of those failures preceded by a firing within the horizon. (This outcome rests on
attribution, whose evidence includes the signals: a signal that is itself the evidence of a
failure at the same time is right by construction, with a lead time of 0.)

None of the anchors (gpud, the device plugins, NHC) measure this; they ship fixed rules.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import polars as pl
from scipy import stats

from reliability._result import Result, fmt_count, fmt_num, fmt_p
from reliability.models.failures.incidents import node_incidents

if TYPE_CHECKING:
    from reliability.reasons import ReasonRules

__all__ = ["ABNORMAL_STATES", "SignalCalibration", "policy_table", "signal_calibration"]

#: attempt states that end a job abnormally (the outcome a signal may predict)
ABNORMAL_STATES = ("FAILED", "NODE_FAIL", "REQUEUED", "BOOT_FAIL", "LAUNCH_FAILED")
_TS = pl.Datetime("us", "UTC")


@dataclass
class SignalCalibration(Result):
    """How often each signal kind was followed by a job failure on its node (see the module doc).

    Attributes
    ----------
    signals : polars.DataFrame
        One row per signal kind: ``signal``, ``events``, ``nodes``, ``exposed`` (events with a job
        running on the node), ``followed`` (of those, a running job ended abnormally within the
        horizon), ``share`` with ``share_low``/``share_high``, ``baseline`` (the share expected
        from the nodes' own rates), ``lift`` with ``lift_low``/``lift_high``, ``p`` (one-sided,
        no more than the baseline), ``lead_min_median`` [min]; most predictive first.
    policies : polars.DataFrame
        Drain policies for the signals with the most events (:func:`policy_table`).
    horizon_h : float
        The horizon after a signal [h].
    """

    title = "Which signals predict job failures"
    signals: pl.DataFrame
    policies: pl.DataFrame
    horizon_h: float
    alpha: float = 0.05
    notes: list[str] = field(default_factory=list)

    @property
    def summary(self) -> pl.DataFrame:
        """The signal table (see :attr:`signals`)."""
        return self.signals

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the result: signal kinds and events."""
        s = self.signals
        return {"signal kinds": s.height, "events": int(s["events"].sum()) if s.height else 0}

    def tables(self) -> dict[str, pl.DataFrame]:
        """Return the result's tables by name.

        Returns
        -------
        dict of str to polars.DataFrame
            ``"signals"`` and ``"drain policies"``.
        """
        return {"signals": self.signals, "drain policies": self.policies}

    def _lines(self) -> list[str]:
        s = self.signals
        if s.height == 0:
            return ["no health events or node-state changes: no signal to calibrate"]
        lines = [
            f"{s.height} signal kinds; share of events with a running job that ended abnormally "
            f"within {fmt_num(self.horizon_h)} h, against the nodes' own baseline:"
        ]
        for r in s.head(15).iter_rows(named=True):
            if r["exposed"] == 0:
                lines.append(
                    f"  {r['signal']}: {fmt_count(r['events'], 'event')}, none with a job running"
                )
                continue
            lead = (
                ""
                if r["lead_min_median"] is None
                else f", median lead {fmt_num(r['lead_min_median'])} min"
            )
            head = f"  {r['signal']}: {r['followed']}/{r['exposed']} = {100 * r['share']:.0f}% "
            if r["lift"] is None:
                lines.append(
                    head + f"(no baseline: these nodes never had an abnormal job end){lead}"
                )
                continue
            lines.append(
                head + f"(baseline {100 * r['baseline']:.1f}%, lift x{fmt_num(r['lift'])} "
                f"[{fmt_num(r['lift_low'])}-{fmt_num(r['lift_high'])}], p = {fmt_p(r['p'])}){lead}"
            )
        return lines

    @classmethod
    def _example(cls, kind: str = "normal") -> SignalCalibration:
        """Build a tiny instance: the signals of a 14-day, 16-node cluster (for contract tests).

        ``kind="no failures"``: the same without hardware failures.
        """
        from reliability.models._examples import tiny_tables

        t = tiny_tables(kind=kind)
        return signal_calibration(t, attributed=t["attributed"])


def _frames(source: Any) -> dict[str, Any]:
    """Return the evidence tables, and the jobs as a LazyFrame (a Dataset's scanned, not loaded)."""
    if isinstance(source, dict):
        return {**source, "jobs": source["jobs"].lazy()}
    return {
        "jobs": source.scan("jobs"),
        "health_events": source.health_events,
        "node_states": source.node_states,
    }


def _signal_events(frames: dict[str, pl.DataFrame], rules: ReasonRules | None) -> pl.DataFrame:
    """Every signal: ``cluster, node, t, signal``."""
    from reliability.reasons import classify_reasons

    parts = []
    he = frames.get("health_events")
    if he is not None and he.height:
        parts.append(
            he.select(
                pl.col("cluster").cast(pl.String),
                pl.col("node").cast(pl.String),
                t=pl.col("time"),
                signal=pl.col("source").cast(pl.String)
                + pl.lit(" ")
                + pl.when(
                    pl.col("source").cast(pl.String).is_in(["kernel_log", "slurm"])
                    & pl.col("code").str.contains(r"^\d+$")
                )
                .then(pl.lit("Xid ") + pl.col("code"))
                .otherwise(pl.col("code").fill_null("?")),
            )
        )
    ns = frames.get("node_states")
    if ns is not None and ns.height:
        st = ns.with_columns(
            pl.col("reason").cast(pl.String),
            user=pl.col("user").cast(pl.String)
            if "user" in ns.columns
            else pl.lit(None, pl.String),
        )
        cls = classify_reasons(st, rules)
        st = st.join(cls, on=["reason", "user"], how="left", nulls_equal=True)
        parts.append(
            st.select(
                pl.col("cluster").cast(pl.String),
                pl.col("node").cast(pl.String),
                t=pl.col("start"),
                signal=pl.col("state").cast(pl.String)
                + pl.lit(": ")
                + pl.col("reason_class")
                + pl.when(pl.col("component").is_not_null() & (pl.col("component") != "unknown"))
                .then(pl.lit(" ") + pl.col("component"))
                .otherwise(pl.lit("")),
            )
        )
    if not parts:
        return pl.DataFrame(
            schema={"cluster": pl.String, "node": pl.String, "t": _TS, "signal": pl.String}
        )
    return pl.concat(parts).drop_nulls(["node", "t"])


def _within(t: pl.Expr, lo: datetime | None, hi: datetime | None) -> pl.Expr:
    """``lo <= t < hi`` (an open end where None)."""
    out = pl.lit(True)
    if lo is not None:
        out = out & (t >= lo)
    if hi is not None:
        out = out & (t < hi)
    return out


def _time_slices(jobs: pl.LazyFrame) -> list[tuple[datetime | None, datetime | None]]:
    """Consecutive ``[lo, hi)`` spans of time, open at both ends, of about equally many runs.

    As many as hold about :data:`_PAIRS_PER_SLICE` (attempt, node) rows each (one span up to
    that), cut at quantiles of the attempts' starts.
    """
    cols = jobs.collect_schema().names()
    size = pl.col("n_nodes") if "n_nodes" in cols else pl.col("nodes").list.len()
    timed = pl.col("start_time").is_not_null() & pl.col("end_time").is_not_null()
    pairs = jobs.filter(timed).select(size.cast(pl.Int64).sum()).collect().item() or 0
    k = -(-int(pairs) // _PAIRS_PER_SLICE)
    if k <= 1:
        return [(None, None)]
    starts = jobs.filter(timed).select(pl.col("start_time").dt.epoch("us")).collect().to_series()
    cuts = sorted(
        {int(starts.quantile(i / k, interpolation="lower")) for i in range(1, k)}
        - {int(starts.min())}
    )
    bounds = [None, *(_from_us(c) for c in cuts), None]
    return list(itertools.pairwise(bounds))


def _from_us(us: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=us)


def _running(
    jobs: pl.LazyFrame, lo: datetime | None = None, hi: datetime | None = None
) -> pl.DataFrame:
    """Per attempt and node running at some time in ``[lo, hi)``: ``cluster, node, start, end, abnormal``.

    Only the five columns it needs are read, and the node lists are cast and exploded batch by
    batch on polars' streaming engine: the jobs' ``list[str]`` node column (29 M names at a
    million attempts) is never held whole.
    """
    overlaps = pl.lit(True)
    if hi is not None:
        overlaps = overlaps & (pl.col("start_time") < hi)
    if lo is not None:
        overlaps = overlaps & (pl.col("end_time") >= lo)
    return (
        jobs.select("cluster", "nodes", "start_time", "end_time", "state")
        .filter(pl.col("start_time").is_not_null() & pl.col("end_time").is_not_null() & overlaps)
        .select(
            pl.col("cluster").cast(pl.String).cast(pl.Categorical),
            # categorical node names (4 bytes a row): at a million attempts there are tens of
            # millions of (attempt, node) rows
            node=pl.col("nodes").list.eval(pl.element().cast(pl.Categorical)),
            start="start_time",
            end="end_time",
            abnormal=pl.col("state").cast(pl.String).is_in(ABNORMAL_STATES),
        )
        .explode("node")
        .drop_nulls("node")
        .collect(engine="streaming")
    )


def signal_calibration(
    source: Any,
    *,
    attributed: pl.DataFrame | None = None,
    horizon_h: float = 6.0,
    reasons: ReasonRules | None = None,
    min_events: int = 1,
    alpha: float = 0.05,
) -> SignalCalibration:
    """Measure, per signal kind, how often a job running on the node failed after it.

    Parameters
    ----------
    source : Dataset or dict of str to polars.DataFrame
        A Dataset, or its ``jobs``, ``health_events``, ``node_states`` frames.
    attributed : polars.DataFrame or None
        The attributed jobs, for the drain policies' outcome (None: attributed here).
    horizon_h : float
        How long after a signal a job failure counts [h], > 0.
    reasons : ReasonRules or None
        How node-state reasons are classified (:mod:`reliability.reasons`).
    min_events : int
        Signal kinds with fewer events are left out.
    alpha : float
        1 − confidence level of the intervals.

    Returns
    -------
    SignalCalibration
        The signal table (share followed, baseline, lift with interval, p, lead time) and the
        drain-policy table.
    """
    if not horizon_h > 0:
        raise ValueError(f"horizon_h must be > 0 hours, got {horizon_h}")
    frames = _frames(source)
    ev = _signal_events(frames, reasons).with_row_index("_e")
    h = timedelta(hours=horizon_h)
    notes: list[str] = []
    # the jobs a slice of time at a time (see _time_slices): the (attempt, node) rows of one
    # slice are held at once, not all of them
    busy, bad, hits = [], [], []
    for lo, hi in _time_slices(frames["jobs"]):
        runs = _running(frames["jobs"], lo, hi)
        # the same outcome at any time the node ran jobs (matched baseline), this slice's part
        b, a = _busy_us(runs, h, lo, hi)
        busy.append(b)
        bad.append(a)
        # attempts running on the node at a signal of this slice, and whether one ended
        # abnormally within h (each signal lies in one slice, with every run covering it)
        in_slice = ev.filter(_within(pl.col("t"), lo, hi))
        hits.append(
            _covering(in_slice, runs)
            .group_by("_e")
            .agg(
                followed=(pl.col("abnormal") & (pl.col("end") <= pl.col("t") + h)).any(),
                lead_s=pl.when(pl.col("abnormal") & (pl.col("end") <= pl.col("t") + h))
                .then((pl.col("end") - pl.col("t")).dt.total_seconds())
                .min(),
            )
        )
        del runs
    per_node = _baseline(busy, bad)
    hit = (
        pl.concat(hits)
        if hits
        else pl.DataFrame(schema={"_e": pl.UInt32, "followed": pl.Boolean, "lead_s": pl.Int64})
    )
    e = (
        ev.join(hit, on="_e", how="left")
        .join(per_node, on=["cluster", "node"], how="left")
        .with_columns(
            exposed=pl.col("followed").is_not_null(),
            followed=pl.col("followed").fill_null(False),
            base=pl.col("base").fill_null(0.0),
        )
    )
    table = (
        e.group_by("signal")
        .agg(
            events=pl.len().cast(pl.Int64),
            nodes=pl.col("node").n_unique().cast(pl.Int64),
            exposed=pl.col("exposed").sum().cast(pl.Int64),
            followed=pl.col("followed").sum().cast(pl.Int64),
            baseline=pl.col("base").filter(pl.col("exposed")).mean(),
            lead_min_median=(pl.col("lead_s").median() / 60.0),
        )
        .filter(pl.col("events") >= min_events)
    )
    rows = []
    for r in table.iter_rows(named=True):
        n, k, b = r["exposed"], r["followed"], r["baseline"]
        share = k / n if n else None
        lo = stats.beta.ppf(alpha / 2, k, n - k + 1) if n and k else 0.0
        hi = stats.beta.ppf(1 - alpha / 2, k + 1, n - k) if n and k < n else 1.0
        ok = n > 0 and b is not None and b > 0
        rows.append(
            {
                **r,
                "share": share,
                "share_low": float(lo) if n else None,
                "share_high": float(hi) if n else None,
                "lift": share / b if ok else None,
                "lift_low": lo / b if ok else None,
                "lift_high": hi / b if ok else None,
                "p": float(stats.binom.sf(k - 1, n, b)) if ok else None,
            }
        )
    schema = {
        "signal": pl.String,
        "events": pl.Int64,
        "nodes": pl.Int64,
        "exposed": pl.Int64,
        "followed": pl.Int64,
        "share": pl.Float64,
        "share_low": pl.Float64,
        "share_high": pl.Float64,
        "baseline": pl.Float64,
        "lift": pl.Float64,
        "lift_low": pl.Float64,
        "lift_high": pl.Float64,
        "p": pl.Float64,
        "lead_min_median": pl.Float64,
    }
    # (the signal's name breaks ties: the groups come in no set order)
    signals = (pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)).sort(
        ["lift_low", "events", "signal"], descending=[True, True, False], nulls_last=True
    )
    no_base = signals.filter(pl.col("exposed") > 0, pl.col("lift").is_null()).height
    if no_base:
        notes.append(
            f"{no_base} signal kind(s) fell on nodes that never had an abnormal job end: no baseline, no lift"
        )
    top = signals.filter(pl.col("events") >= 3).sort("events", descending=True).head(6)["signal"]
    if attributed is None:
        from reliability.attribution import attribute_failures

        attributed = (
            attribute_failures(
                frames["jobs"].collect(),
                health_events=frames.get("health_events"),
                node_states=frames.get("node_states"),
                reasons=reasons,
            )
            if isinstance(source, dict)
            else attribute_failures(source, reasons=reasons)
        )
    policies = policy_table(ev, node_incidents(attributed), top.to_list(), horizon_h=horizon_h)
    return SignalCalibration(
        signals=signals, policies=policies, horizon_h=horizon_h, alpha=alpha, notes=notes
    )


#: width of the time bins events and runs are matched in [µs] (one day)
_BIN_US = 86_400_000_000
#: (attempt, node) rows matched with the signals at a time, and node groups of the busy-time
#: unions: bounds the stage's working memory (a million attempts make 29 M such rows)
_RUNS_PER_SLICE = 4_000_000
#: (attempt, node) rows of the jobs read at a time (:func:`_time_slices`): about 0.5 GB each
_PAIRS_PER_SLICE = 20_000_000
_ON = ["cluster", "node", "_day"]


def _covering(ev: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """Pair each event with the runs on its node that cover its time (``start <= t <= end``).

    Matched on (cluster, node, day) before the interval test: a run is listed once per day it
    spans, an event in its day, so the pairs tried are the events times the runs of the same
    node on the same day, not every run the node ever had (at a million attempts on 10,000
    nodes the join on the node alone held hundreds of millions of pairs).
    """

    def day(col: str) -> pl.Expr:
        return pl.col(col).dt.epoch("us") // _BIN_US

    cat = [pl.col("cluster").cast(pl.Categorical), pl.col("node").cast(pl.Categorical)]
    events = ev.with_columns(*cat, _day=day("t"))
    # the runs a slice at a time (an inner join then a row filter: the pairs are the union of
    # the slices'), so the per-day spans are never held for all runs at once
    pairs = []
    for offset in range(0, runs.height, _RUNS_PER_SLICE):
        spans = (
            runs.slice(offset, _RUNS_PER_SLICE)
            .with_columns(*cat, _day=pl.int_ranges(day("start"), day("end") + 1))
            .explode("_day")
        )
        pairs.append(
            events.join(spans, on=_ON).filter(
                (pl.col("start") <= pl.col("t")) & (pl.col("end") >= pl.col("t"))
            )
        )
        del spans
    if not pairs:
        pairs.append(events.join(runs.with_columns(*cat, _day=day("start")), on=_ON))
    return (
        pl.concat(pairs)
        .drop("_day")
        .with_columns(pl.col("cluster").cast(pl.String), pl.col("node").cast(pl.String))
    )


def _union_us(iv: pl.DataFrame) -> pl.DataFrame:
    """Per (cluster, node): total length [µs] of the union of intervals ``s``-``e``.

    Sorted by start within each node, interval i adds ``max(0, e_i − max(s_i, m))`` to the
    union, ``m`` the latest end before it on the node. The sort is on one integer (node
    number and start packed into an int64) where they fit, and the sums are on the node
    number: at a million attempts (29M (job, node) rows) the sort and grouping on the node
    strings took most of the signal stage.
    """
    if iv.height == 0:
        return pl.DataFrame(schema={"cluster": pl.String, "node": pl.String, "len_us": pl.Int64})
    # (cluster, node) -> one integer: the node's category times the clusters, plus the cluster's
    # place among the (few) clusters
    iv = iv.with_columns(
        pl.col("cluster").cast(pl.Categorical), pl.col("node").cast(pl.Categorical)
    )
    clusters = iv.get_column("cluster").to_physical().unique().sort().to_list()
    key = pl.col("node").to_physical().cast(pl.Int64) * len(clusters) + pl.col(
        "cluster"
    ).to_physical().replace_strict(clusters, list(range(len(clusters))), return_dtype=pl.Int64)
    frame = iv.select(
        _k=key, cluster="cluster", node="node",
        s=pl.col("s").dt.epoch("us"), e=pl.col("e").dt.epoch("us"),
    )  # fmt: skip
    names = frame.select("_k", "cluster", "node").unique("_k")
    frame = frame.drop("cluster", "node")
    lims = frame.select(
        s0=pl.col("s").min(), s1=pl.col("s").max(), e0=pl.col("e").min(), e1=pl.col("e").max()
    ).row(0, named=True)
    t0 = int(lims["s0"])
    span_bits = max(max(int(lims["s1"]), int(lims["e1"])) - t0, 1).bit_length()
    key_bits = max(int(frame.get_column("_k").max()), 1).bit_length()
    packed = span_bits + key_bits <= 62 and int(lims["e0"]) >= t0
    if packed:
        # the latest end before each row on its node without a window over the nodes: with
        # node and time packed into one integer, the nodes' blocks are increasing, so a running
        # maximum over all rows is, within a block, that block's (null at a block's first row)
        base = pl.col("_k") * (1 << span_bits)
        prev = (
            pl.when(pl.col("_k") == pl.col("_k").shift(1))
            .then((base + (pl.col("e") - t0)).cum_max().shift(1) - base + t0)
            .otherwise(None)
        )
    else:
        prev = pl.col("e").cum_max().shift(1).over("_k")
    # the nodes in groups of about _RUNS_PER_SLICE rows (each node's union is its own): the
    # sort and its copies hold one group at a time
    n_groups = max(1, -(-frame.height // _RUNS_PER_SLICE))
    parts = []
    for g in range(n_groups):
        part = frame if n_groups == 1 else frame.filter(pl.col("_k") % n_groups == g)
        if packed:
            part = part.sort(pl.col("_k") * (1 << span_bits) + (pl.col("s") - t0))
        else:
            part = part.sort("_k", "s")
        parts.append(
            part.with_columns(m=prev)
            .with_columns(
                add=pl.when(pl.col("m").is_null())
                .then(pl.col("e") - pl.col("s"))
                .otherwise((pl.col("e") - pl.max_horizontal("s", "m")).clip(lower_bound=0))
            )
            .group_by("_k")
            .agg(len_us=pl.col("add").sum())
        )
        del part
    del frame
    return (
        pl.concat(parts)
        .join(names, on="_k")
        .select(pl.col("cluster").cast(pl.String), pl.col("node").cast(pl.String), "len_us")
    )


def _busy_us(
    runs: pl.DataFrame, h: timedelta, lo: datetime | None, hi: datetime | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per node, the busy time and the abnormal-end time [µs] in ``[lo, hi)``.

    Busy: the union of its attempts' ``[start, end]``; abnormal: of ``[max(start, end − h),
    end]`` over its abnormal attempts; each clipped to the span (the unions' lengths over
    consecutive spans add up to the whole history's).
    """

    def clip(s: pl.Expr, e: pl.Expr) -> dict[str, pl.Expr]:
        if lo is not None:
            s = pl.max_horizontal(s, pl.lit(lo))
        if hi is not None:
            e = pl.min_horizontal(e, pl.lit(hi))
        return {"s": s, "e": e}

    busy = _union_us(runs.select("cluster", "node", **clip(pl.col("start"), pl.col("end"))))
    bad = _union_us(
        runs.filter(pl.col("abnormal"))
        .select(
            "cluster",
            "node",
            **clip(pl.max_horizontal("start", pl.col("end") - h), pl.col("end")),
        )
        .filter(pl.col("e") >= pl.col("s"))
    )
    return busy, bad


def _baseline(busy: list[pl.DataFrame], bad: list[pl.DataFrame]) -> pl.DataFrame:
    """Per node: the share of its busy time from which a running job ended abnormally within h.

    ``busy`` and ``bad`` are :func:`_busy_us`'s parts, one per span of time.
    """

    def total(parts: list[pl.DataFrame]) -> pl.DataFrame:
        return (
            pl.concat(parts)
            .group_by("cluster", "node")
            .agg(len_s=pl.col("len_us").sum().cast(pl.Float64) / 1e6)
        )

    return (
        total(busy)
        .join(total(bad), on=["cluster", "node"], how="left", suffix="_bad")
        .select(
            "cluster",
            "node",
            base=pl.when(pl.col("len_s") > 0)
            .then(pl.col("len_s_bad").fill_null(0.0) / pl.col("len_s"))
            .otherwise(0.0),
        )
    )


def policy_table(
    events: pl.DataFrame,
    incidents: pl.DataFrame,
    signals: list[str],
    *,
    horizon_h: float = 6.0,
    counts: tuple[int, ...] = (1, 2, 3),
    spans_h: tuple[float, ...] = (1.0, 24.0),
) -> pl.DataFrame:
    """Precision and recall of "drain after k events within t hours" for each signal kind.

    Parameters
    ----------
    events : polars.DataFrame
        Signals: ``cluster, node, t, signal``.
    incidents : polars.DataFrame
        Node failures (:func:`reliability.models.failures.node_incidents`: ``cluster, node,
        first_failure``).
    signals : list of str
        The signal kinds to evaluate.
    horizon_h : float
        A firing counts as right when a node failure follows within this [h].
    counts : tuple of int
        The ``k`` of the policies.
    spans_h : tuple of float
        The ``t`` of the policies [h].

    Returns
    -------
    polars.DataFrame
        ``signal, k, within_h, firings, precision, recall, failures`` (hardware failure incidents
        in the data, the denominator of recall).
    """
    fails = incidents.select("cluster", "node", t=pl.col("first_failure"))
    n_fail = fails.height
    h_us = int(horizon_h * 3.6e9)
    rows = []
    for sig in signals:
        ev = events.filter(pl.col("signal") == sig).sort("cluster", "node", "t")
        for k in counts:
            for span in spans_h[:1] if k == 1 else spans_h:  # one event needs no span
                fire = _firings(ev, k, span)
                if fire.height == 0:
                    rows.append(
                        {
                            "signal": sig,
                            "k": k,
                            "within_h": span,
                            "firings": 0,
                            "precision": None,
                            "recall": 0.0 if n_fail else None,
                            "failures": n_fail,
                        }
                    )
                    continue
                pair = (
                    fire.join(fails, on=["cluster", "node"], suffix="_f")
                    .with_columns(d=(pl.col("t_f") - pl.col("t")).dt.total_microseconds())
                    .filter((pl.col("d") >= 0) & (pl.col("d") <= h_us))
                )
                right = pair.select("cluster", "node", "t").unique().height
                caught = pair.select("cluster", "node", "t_f").unique().height
                rows.append(
                    {
                        "signal": sig,
                        "k": k,
                        "within_h": span,
                        "firings": fire.height,
                        "precision": right / fire.height,
                        "recall": caught / n_fail if n_fail else None,
                        "failures": n_fail,
                    }
                )
    return pl.DataFrame(
        rows,
        schema={
            "signal": pl.String,
            "k": pl.Int64,
            "within_h": pl.Float64,
            "firings": pl.Int64,
            "precision": pl.Float64,
            "recall": pl.Float64,
            "failures": pl.Int64,
        },
    )


def _firings(ev: pl.DataFrame, k: int, span_h: float) -> pl.DataFrame:
    """List when a "k events within span_h" rule fires on each node (it re-arms after firing).

    ``ev`` is sorted by cluster, node and time. One pass over the events in arrays (the rule
    keeps state from event to event, so it is a loop; per-node frames cost 0.1 ms each).
    """
    schema = {"cluster": pl.String, "node": pl.String, "t": _TS}
    if ev.height == 0:
        return pl.DataFrame(schema=schema)
    if k <= 1:  # every event fires
        return ev.select("cluster", "node", "t").cast(schema)
    t = ev.get_column("t").dt.epoch("us").to_numpy()
    new = (
        ev.select(
            (pl.col("cluster") != pl.col("cluster").shift(1))
            | (pl.col("node") != pl.col("node").shift(1))
        )
        .to_series()
        .fill_null(True)
        .to_numpy()
    )
    span_us = span_h * 3.6e9
    fired: list[int] = []
    window: deque[int] = deque()
    for i in range(t.size):
        if new[i]:
            window.clear()
        ti = int(t[i])
        while window and ti - window[0] > span_us:
            window.popleft()
        window.append(ti)
        if len(window) >= k:
            fired.append(i)
            window.clear()
    return ev[fired].select("cluster", "node", "t").cast(schema)
