"""Lemon nodes by a statistical test: which nodes fail more often than the fleet's rate allows.

A lemon fails jobs again and again (Kokolis et al. HPCA'25 §VI). This needs no training:
each node's count of distinct failures (incidents) is tested against the fleet's rate times
that node's own exposure, allowing for the ordinary spread of rates between nodes, and the
false-discovery rate is controlled across the fleet.

Incidents of a node (one failure, however many records it left), from the canonical tables:

- every interval out of service (DOWN, FAIL, DRAIN, REPAIR) whose reason is not an
  administrator's (:mod:`reliability.reasons`), by its start;
- every hardware-attributed job failure charged to the node
  (:func:`reliability.models.failures.node_incidents`), by its first failure;

events of one node less than ``window_min`` apart are one incident.

Exposure of a node: the days it was in service over the window (the window less its union of
out-of-service intervals) when node-state history is there; without it only failures under
jobs are seen, and the exposure is the node-days it ran jobs.

The test, per node i with ``k_i`` incidents over exposure ``e_i``:

- the expected count ``μ_i = r₋ᵢ e_i``, ``r₋ᵢ`` the rate of the rest of the fleet (a lemon
  does not raise its own baseline);
- the spread of rates between ordinary nodes as a negative binomial (NB2: variance
  ``μ + α μ²``), ``α`` by moments over the nodes not flagged (three rounds), so that an
  ordinary heterogeneous fleet is not a fleet of lemons;
- ``p_i = P(K ≥ k_i)`` under that distribution; Benjamini-Hochberg adjusted ``q_i``; a node is
  flagged when ``q_i ≤ fdr`` and it has at least ``min_incidents`` incidents.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
from scipy import stats

from reliability._result import Result, fmt_num, fmt_p
from reliability.models.failures.incidents import INCIDENT_WINDOW_MIN, node_incidents

if TYPE_CHECKING:
    from reliability.reasons import ReasonRules

__all__ = ["LemonTest", "lemon_test", "nb_upper_tail"]

#: false-discovery rate the test controls across nodes
DEFAULT_FDR = 0.1
#: fewest incidents a flagged node has
DEFAULT_MIN_INCIDENTS = 3
#: shortest observation the test runs on [days]: a lemon fails again and again over weeks;
#: minutes or hours of data show bursts of one incident, not lemons
MIN_SPAN_DAYS = 7.0
_TS = pl.Datetime("us", "UTC")
_OUT = ("DOWN", "FAIL", "DRAIN", "REPAIR")


def nb_upper_tail(k: np.ndarray, mu: np.ndarray, alpha: float) -> np.ndarray:
    """Return ``P(K ≥ k)`` for K negative binomial with mean ``mu`` and variance ``mu + alpha mu²``.

    Parameters
    ----------
    k : numpy.ndarray
        Observed counts.
    mu : numpy.ndarray
        Expected counts (> 0).
    alpha : float
        NB2 dispersion (0: Poisson).

    Returns
    -------
    numpy.ndarray
        Upper-tail probabilities (1 where ``k <= 0``).
    """
    k = np.asarray(k, dtype=float)
    mu = np.maximum(np.asarray(mu, dtype=float), 1e-300)
    if alpha <= 1e-12:
        return np.where(k <= 0, 1.0, stats.poisson.sf(k - 1, mu))
    n = 1.0 / alpha
    p = n / (n + mu)
    return np.where(k <= 0, 1.0, stats.nbinom.sf(k - 1, n, p))


def _bh(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (q-values)."""
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p)
    ranked = p[order] * m / np.arange(1, m + 1)
    q = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(q, 1.0)
    return out


@dataclass
class LemonTest(Result):
    """Nodes tested against the fleet's failure rate (see the module doc).

    Attributes
    ----------
    nodes : polars.DataFrame
        One row per node: ``cluster, node, incidents, exposure_days``, ``expected`` (the
        fleet's rate times the node's exposure), ``excess`` (incidents / expected), ``p``,
        ``q`` (Benjamini-Hochberg), ``flagged``, ``evidence`` (what its incidents were); flagged
        first, then by p.
    fleet_rate_per_node_day : float or None
        Incidents per node-day of exposure over the fleet.
    dispersion : float
        NB2 ``α`` of ordinary nodes' rates (0: no spread beyond Poisson).
    fdr : float
        The false-discovery rate controlled.
    min_incidents : int
        Fewest incidents a flagged node has.
    exposure_basis : str
        ``"in service"`` (node-state history) or ``"running jobs"``.
    start, end : datetime or None
        The window tested [UTC].
    """

    title = "Lemon nodes: nodes that fail more often than the fleet's rate allows"
    nodes: pl.DataFrame
    fleet_rate_per_node_day: float | None
    dispersion: float
    fdr: float
    min_incidents: int
    exposure_basis: str
    start: datetime | None
    end: datetime | None
    notes: list[str] = field(default_factory=list)

    @property
    def flagged(self) -> pl.DataFrame:
        """The flagged nodes (see :attr:`nodes`)."""
        return self.nodes.filter(pl.col("flagged"))

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the test: nodes, incidents, exposure [node-days]."""
        n = self.nodes
        return {
            "nodes": n.height,
            "incidents": int(n["incidents"].sum()) if n.height else 0,
            "node-days": float(n["exposure_days"].sum()) if n.height else 0.0,
        }

    @property
    def summary(self) -> pl.DataFrame:
        """One row: nodes, incidents, fleet rate, dispersion, flagged, FDR."""
        return self._mapping_frame(
            {
                "nodes": self.nodes.height,
                "incidents": self.sample_sizes["incidents"],
                "fleet_rate_per_node_day": self.fleet_rate_per_node_day,
                "dispersion": self.dispersion,
                "flagged": self.flagged.height,
                "fdr": self.fdr,
                "min_incidents": self.min_incidents,
            }
        )

    def tables(self) -> dict[str, pl.DataFrame]:
        """Return the result's tables by name.

        Returns
        -------
        dict of str to polars.DataFrame
            ``"summary"`` and ``"flagged"`` (with the 20 most significant others).
        """
        return {"summary": self.summary, "nodes": self.nodes.head(max(20, self.flagged.height))}

    def _lines(self) -> list[str]:
        if self.fleet_rate_per_node_day is None:
            return [
                self.notes[-1]
                if self.notes
                else "no incidents or no exposure: lemon nodes not assessed"
            ]
        f = self.flagged
        lines = [
            f"{self.nodes.height:,} nodes, {self.sample_sizes['incidents']:,} incidents over "
            f"{fmt_num(self.sample_sizes['node-days'])} node-days {self.exposure_basis}: fleet rate "
            f"{fmt_num(1000 * self.fleet_rate_per_node_day)} per 1000 node-days, spread between nodes "
            f"(NB α) {self.dispersion:.2f}; {f.height} flagged at FDR {self.fdr:g} "
            f"(and >= {self.min_incidents} incidents)"
        ]
        for r in f.head(20).iter_rows(named=True):
            lines.append(
                f"  {r['node']}: {r['incidents']} incidents, {fmt_num(r['expected'])} expected "
                f"(x{fmt_num(r['excess'])}), p = {fmt_p(r['p'])}, q = {fmt_p(r['q'])}: {r['evidence']}"
            )
        return lines

    @classmethod
    def _example(cls, kind: str = "normal") -> LemonTest:
        """Build a tiny instance: the nodes of a 14-day, 16-node cluster (for contract tests).

        ``kind="no failures"``: the same without hardware failures.
        """
        from reliability.models._examples import tiny_tables

        t = tiny_tables(kind=kind)
        return lemon_test(t, attributed=t["attributed"], min_incidents=1)


def _frames(
    source: Any,
) -> tuple[pl.DataFrame | None, pl.DataFrame, datetime | None, datetime | None]:
    """Return the jobs, the node states and the Dataset's observation window.

    The jobs are None for a Dataset: it is attributed as a whole, never read here.
    """
    if isinstance(source, dict):
        return source["jobs"], source["node_states"], None, None
    start, end = source.observation_window()
    return None, source.node_states, start, end


def lemon_test(
    source: Any,
    *,
    attributed: pl.DataFrame | None = None,
    fdr: float = DEFAULT_FDR,
    min_incidents: int = DEFAULT_MIN_INCIDENTS,
    window_days: float | None = None,
    reasons: ReasonRules | None = None,
    window_min: float = INCIDENT_WINDOW_MIN,
    start: datetime | None = None,
    end: datetime | None = None,
) -> LemonTest:
    """Test every node's distinct failures against the fleet's rate (see the module doc).

    Parameters
    ----------
    source : Dataset or dict of str to polars.DataFrame
        A Dataset, or ``{"jobs": ..., "node_states": ...}``.
    attributed : polars.DataFrame or None
        The attributed jobs (:func:`reliability.attribute_failures`); None attributes them here.
    fdr : float
        False-discovery rate controlled across nodes, in (0, 1).
    min_incidents : int
        Fewest incidents a flagged node has, >= 1.
    window_days : float or None
        Test the last ``window_days`` days of the observation only [days]; None: all of it.
    reasons : ReasonRules or None
        How node-state reasons are classified (administrative intervals are not incidents).
    window_min : float
        Events of a node closer than this are one incident [min].
    start, end : datetime or None
        The window [UTC]; default: the Dataset's observation window, else the data's span.

    Returns
    -------
    LemonTest
        Per node: incidents, exposure, expected count, p and q, flagged; the fleet's rate and
        the spread between nodes.
    """
    from reliability.attribution import attribute_failures
    from reliability.reasons import classify_reasons

    if not 0 < fdr < 1:
        raise ValueError(f"fdr must be in (0, 1), got {fdr}")
    if isinstance(min_incidents, bool) or not isinstance(min_incidents, int) or min_incidents < 1:
        raise ValueError(f"min_incidents must be an integer >= 1, got {min_incidents!r}")
    jobs, states, ds_start, ds_end = _frames(source)
    if attributed is None:
        attributed = (
            attribute_failures(source, reasons=reasons)
            if jobs is None
            else attribute_failures(jobs, health_events=None, node_states=states, reasons=reasons)
        )
    lo, hi = _window(attributed, states, start or ds_start, end or ds_end)
    notes: list[str] = []
    if lo is None or hi is None or hi <= lo:
        return LemonTest(
            _empty(),
            None,
            0.0,
            fdr,
            min_incidents,
            "",
            lo,
            hi,
            ["no observation window: lemon nodes not assessed"],
        )
    if window_days is not None:
        lo = max(lo, hi - timedelta(days=window_days))
    span_d = (hi - lo).total_seconds() / 86400.0
    if span_d < MIN_SPAN_DAYS:
        from reliability._result import fmt_duration_h

        return LemonTest(
            _empty(),
            None,
            0.0,
            fdr,
            min_incidents,
            "",
            lo,
            hi,
            [
                f"no lemon test: the data hold {fmt_duration_h(24 * span_d)}, less than the "
                f"{MIN_SPAN_DAYS:g} days it needs (a lemon fails again and again over weeks; a shorter "
                "span shows bursts, not lemons); collect more history"
            ],
        )
    st = states.with_columns(
        pl.col("cluster").cast(pl.String),
        pl.col("node").cast(pl.String),
        pl.col("state").cast(pl.String),
        pl.col("reason").cast(pl.String),
        user=pl.col("user").cast(pl.String)
        if "user" in states.columns
        else pl.lit(None, pl.String),
    ).filter(pl.col("state").is_in(_OUT))
    history = st.height > 0
    cls = classify_reasons(st, reasons)
    st = st.join(
        cls.select("reason", "user", "reason_class"),
        on=["reason", "user"],
        how="left",
        nulls_equal=True,
    )
    lo_l, hi_l = pl.lit(lo).cast(_TS), pl.lit(hi).cast(_TS)
    # incidents: non-administrative departures from service, and job failures on the node
    dep = st.filter(
        (pl.col("reason_class") != "administrative")
        & (pl.col("start") >= lo_l)
        & (pl.col("start") < hi_l)
    ).select(
        "cluster",
        "node",
        t=pl.col("start"),
        what=pl.col("state") + pl.lit(" ") + pl.col("reason").fill_null("(no reason)"),
    )
    inc = node_incidents(attributed, window_min=window_min)
    jf = inc.filter((pl.col("first_failure") >= lo_l) & (pl.col("first_failure") < hi_l)).select(
        "cluster",
        "node",
        t=pl.col("first_failure"),
        what=pl.lit("job failure (") + pl.col("causes").fill_null("unknown") + pl.lit(")"),
    )
    events = pl.concat([dep, jf]).sort("cluster", "node", "t")
    gap = pl.col("t") - pl.col("t").shift(1).over("cluster", "node")
    events = events.with_columns(
        _new=(gap.is_null() | (gap > timedelta(minutes=window_min))).cast(pl.Int64)
    )
    per_node = events.group_by("cluster", "node").agg(
        incidents=pl.col("_new").sum(), evidence=pl.col("what").value_counts(sort=True)
    )
    # exposure
    if history:
        expo = _in_service(st, attributed, lo, hi)
        basis = "in service"
    else:
        expo = _running(attributed, lo, hi)
        basis = "running jobs"
        notes.append(
            "no node-state history: incidents are job failures only and exposure the node-days "
            "each node ran jobs (ingest sacctmgr events to see failures of idle nodes)"
        )
    nodes = (
        expo.join(per_node, on=["cluster", "node"], how="left", nulls_equal=True)
        .with_columns(pl.col("incidents").fill_null(0))
        .sort("cluster", "node")  # a fixed order: the sums below do not depend on the join's
    )
    nodes = nodes.filter(pl.col("exposure_days") > 0)
    k = nodes["incidents"].to_numpy().astype(float)
    e = nodes["exposure_days"].to_numpy().astype(float)
    K, E = k.sum(), e.sum()
    if nodes.height == 0 or K == 0 or E <= 0:
        out = nodes.with_columns(
            expected=pl.lit(0.0),
            excess=pl.lit(None, pl.Float64),
            p=pl.lit(1.0),
            q=pl.lit(1.0),
            flagged=pl.lit(False),
            evidence=pl.lit(""),
        )
        return LemonTest(
            _tidy(out),
            None,
            0.0,
            fdr,
            min_incidents,
            basis,
            lo,
            hi,
            [*notes, "no incidents in the window: no node stands out"],
        )
    rate_rest = np.where(E - e > 0, (K - k) / np.maximum(E - e, 1e-12), K / E)
    mu = np.maximum(rate_rest * e, 1e-12)
    alpha, keep = 0.0, np.ones(k.size, dtype=bool)
    for _ in range(3):
        p = nb_upper_tail(k, mu, alpha)
        keep = _bh(p) > fdr
        if keep.sum() < 3:
            break
        num = ((k[keep] - mu[keep]) ** 2 - k[keep]).sum()
        alpha = float(max(0.0, num / max((mu[keep] ** 2).sum(), 1e-300)))
    p = nb_upper_tail(k, mu, alpha)
    q = _bh(p)
    flagged = (q <= fdr) & (k >= min_incidents)
    out = nodes.with_columns(
        expected=pl.Series(mu),
        excess=pl.Series(k / mu),
        p=pl.Series(p),
        q=pl.Series(q),
        flagged=pl.Series(flagged),
        evidence=pl.col("evidence").map_elements(_say, return_dtype=pl.String),
    )
    if alpha > 0:
        notes.append(
            f"node rates spread beyond chance (NB α = {alpha:.2f}): a node is flagged only when it "
            "stands out from that spread"
        )
    return LemonTest(_tidy(out), K / E, alpha, fdr, min_incidents, basis, lo, hi, notes)


def _say(counts: Any) -> str:
    if counts is None:
        return ""
    counts = sorted(counts, key=lambda c: (-c["count"], c["what"]))
    parts = [f"{c['count']} x {c['what']}" for c in counts[:4]]
    more = len(counts) - 4
    return "; ".join(parts) + (f"; {more} more kinds" if more > 0 else "")


def _empty() -> pl.DataFrame:
    return pl.DataFrame(
        schema={
            "cluster": pl.String,
            "node": pl.String,
            "incidents": pl.Int64,
            "exposure_days": pl.Float64,
            "expected": pl.Float64,
            "excess": pl.Float64,
            "p": pl.Float64,
            "q": pl.Float64,
            "flagged": pl.Boolean,
            "evidence": pl.String,
        }
    )


def _tidy(frame: pl.DataFrame) -> pl.DataFrame:
    cols = list(_empty().schema)
    return (
        frame.select(cols)
        .cast(_empty().schema)  # type: ignore[arg-type]
        .sort(["flagged", "p", "node"], descending=[True, False, False])
    )


def _window(
    jobs: pl.DataFrame, states: pl.DataFrame, start: datetime | None, end: datetime | None
) -> tuple[datetime | None, datetime | None]:
    times = []
    for f, cols in ((jobs, ("start_time", "end_time")), (states, ("start", "end"))):
        for c in cols:
            if c in f.columns and f.height:
                times += [f[c].min(), f[c].max()]
    times = [t for t in times if t is not None]
    return (start or (min(times) if times else None), end or (max(times) if times else None))


def _in_service(st: pl.DataFrame, jobs: pl.DataFrame, lo: datetime, hi: datetime) -> pl.DataFrame:
    """Days each node of the fleet was in service over [lo, hi] (the union of its outages out)."""
    lo_l, hi_l = pl.lit(lo).cast(_TS), pl.lit(hi).cast(_TS)
    # the fleet: every node that ran an attempt or left service. On the streaming engine the
    # (attempt, node) rows (tens of millions at a million attempts on long host lists) are made
    # and made unique a batch at a time, never held whole.
    ran = (
        jobs.lazy()
        .select(pl.col("cluster").cast(pl.String), node=pl.col("nodes"))
        .explode("node")
        .drop_nulls("node")
        .with_columns(pl.col("node").cast(pl.String))
        .unique()
        .collect(engine="streaming")
    )
    fleet = pl.concat([ran, st.select("cluster", "node").drop_nulls("node")]).unique()
    iv = (
        st.filter(pl.col("start") < hi_l)
        .filter(pl.col("end").is_null() | (pl.col("end") > lo_l))
        .select(
            "cluster",
            "node",
            s=pl.max_horizontal("start", lo_l),
            e=pl.min_horizontal(pl.col("end").fill_null(hi_l), hi_l),
        )
        .sort("cluster", "node", "s")
        .with_columns(prev=pl.col("e").cum_max().shift(1).over("cluster", "node"))
        .with_columns(
            g=(pl.col("prev").is_null() | (pl.col("s") > pl.col("prev")))
            .cast(pl.Int64)
            .cum_sum()
            .over("cluster", "node")
        )
        .group_by("cluster", "node", "g")
        .agg(s=pl.col("s").min(), e=pl.col("e").max())
        .group_by("cluster", "node")
        # integer microseconds: exact sums, the same whatever order polars adds them in
        .agg(out_days=(pl.col("e") - pl.col("s")).dt.total_microseconds().sum() / 86_400e6)
    )
    window = (hi - lo).total_seconds() / 86400.0
    return fleet.join(iv, on=["cluster", "node"], how="left").select(
        "cluster", "node", exposure_days=(window - pl.col("out_days").fill_null(0.0)).clip(0.0)
    )


def _running(jobs: pl.DataFrame, lo: datetime, hi: datetime) -> pl.DataFrame:
    """Node-days each node ran job attempts over [lo, hi] (open attempts up to ``hi``)."""
    lo_l, hi_l = pl.lit(lo).cast(_TS), pl.lit(hi).cast(_TS)
    a = (
        jobs.lazy()
        .filter(pl.col("start_time").is_not_null())
        .select(
            pl.col("cluster").cast(pl.String),
            node=pl.col("nodes"),
            us=(
                pl.min_horizontal(pl.col("end_time").fill_null(hi_l), hi_l)
                - pl.max_horizontal("start_time", lo_l)
            )
            .dt.total_microseconds()
            .clip(0),
        )
        .explode("node")
        .drop_nulls("node")
    )
    # integer microseconds: exact sums, the same whatever order polars adds them in; on the
    # streaming engine the (attempt, node) rows are summed a batch at a time, never held whole
    return (
        a.group_by("cluster", pl.col("node").cast(pl.String))
        .agg(exposure_days=pl.col("us").sum() / 86_400e6)
        .collect(engine="streaming")
    )
