"""Published fleets re-derived from their printed counts, their tables checked.

:func:`published_fleets` re-derives each published fleet's rate from its printed count and
exposure with the package's own estimator (:func:`~reliability.models.failures.counts.estimate_rate`:
one period, so the exact Garwood Poisson interval, Garwood 1936), recomputes every printed share
from the counts and flags the tables that do not add up (a share off by more than
:data:`SHARE_TOLERANCE`, parts that do not sum to the printed total).

A cluster is set beside these fleets by :func:`reliability.models.fleets.compare.compare_fleets`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from reliability._result import Result, fmt_num
from reliability.fleets import FLEETS, Fleet
from reliability.models.failures.counts import estimate_rate
from reliability.models.failures.mttf import HARDWARE

__all__ = ["SHARE_TOLERANCE", "PublishedFleets", "published_fleets", "total_failures"]

#: a printed share further than this from its recomputed value is flagged [fraction: 0.5 pp]
SHARE_TOLERANCE = 0.005

_SUMMARY_SCHEMA = {
    "fleet": pl.String, "key": pl.String, "hardware": pl.String, "gpus": pl.Int64,
    "gpus_per_node": pl.Int64, "nodes": pl.Int64, "days": pl.Float64, "basis": pl.String,
    "failure_definition": pl.String, "exposure_basis": pl.String, "failures": pl.Int64,
    "node_days": pl.Float64, "gpu_hours": pl.Float64, "rate_per_node_day": pl.Float64,
    "ci_low": pl.Float64, "ci_high": pl.Float64, "rate_per_gpu_day": pl.Float64,
    "gpu_ci_low": pl.Float64, "gpu_ci_high": pl.Float64, "hardware_failures": pl.Int64,
    "hardware_rate_per_node_day": pl.Float64, "hardware_ci_low": pl.Float64,
    "hardware_ci_high": pl.Float64, "published_mtbf_h": pl.Float64, "component_shares": pl.String,
    "flags": pl.String, "source": pl.String, "checked": pl.String, "caveat": pl.String,
}  # fmt: skip
_SHARES_SCHEMA = {
    "fleet": pl.String, "key": pl.String, "label": pl.String, "category": pl.String,
    "count": pl.Int64, "printed_share": pl.Float64, "share": pl.Float64, "off_pp": pl.Float64,
    "component": pl.String, "domain": pl.String, "why": pl.String,
}  # fmt: skip


def total_failures(f: Fleet) -> int:
    """Return the count a fleet's shares are of: its published count, else its rows' sum.

    Parameters
    ----------
    f : Fleet
        The fleet.

    Returns
    -------
    int
        Failures [count].
    """
    return f.failures if f.failures is not None else sum(r.count for r in f.components)


def _flags(f: Fleet) -> list[str]:
    """Every way the fleet's printed table disagrees with itself."""
    out: list[str] = []
    total = total_failures(f)
    rows = f.components
    if rows and f.failures is not None and sum(r.count for r in rows) != f.failures:
        out.append(f"rows add up to {sum(r.count for r in rows):,}, not the printed {f.failures:,}")
    for r in rows:
        if r.printed_share is not None and total > 0:
            share = r.count / total
            if abs(share - r.printed_share) > SHARE_TOLERANCE:
                out.append(
                    f"{r.label} {r.count:,}: printed {100 * r.printed_share:.1f}% but "
                    f"{r.count:,}/{total:,} = {100 * share:.1f}%"
                )
    printed = [r.printed_share for r in rows if r.printed_share is not None]
    # each share is rounded to 0.1 pp: their sum may be off by 0.05 pp per row
    if (
        rows
        and len(printed) == len(rows)
        and abs(sum(printed) - 1.0) > 0.0005 * len(printed) + 1e-9
    ):
        out.append(f"printed shares add up to {100 * sum(printed):.1f}%, not 100%")
    for c in f.claims:
        if c.categories and total > 0:
            n = sum(r.count for r in rows if r.category in c.categories)
            if abs(n / total - c.printed) > SHARE_TOLERANCE:
                out.append(
                    f"{c.what}: printed {100 * c.printed:.1f}% but the rows of category "
                    f"{'/'.join(c.categories)} add up to {n:,}/{total:,} = {100 * n / total:.1f}%"
                )
        elif c.parts and sum(c.parts) != c.printed:
            out.append(
                f"{c.what}: {' + '.join(f'{p:,}' for p in c.parts)} = {sum(c.parts):,}, not the "
                f"printed {c.printed:,.0f}"
            )
    return out


def _rate(k: int, exposure: float, alpha: float) -> tuple[float, float, float]:
    """Rate and exact interval from one count over one exposure, by the package's estimator."""
    est = estimate_rate([k], [exposure], alpha=alpha, label="published")
    return (est.rate if est.rate is not None else 0.0), est.poisson_low, est.poisson_high


def _fleet_row(f: Fleet, alpha: float) -> dict[str, Any]:
    gpn = f.gpus_per_node
    gpu_days = (
        f.gpu_hours / 24.0 if f.gpu_hours else (f.gpus * f.days if f.gpus and f.days else None)
    )
    node_days = (f.nodes * f.days if f.nodes and f.days else None) or (
        gpu_days / gpn if gpu_days and gpn else None
    )
    row: dict[str, Any] = dict.fromkeys(_SUMMARY_SCHEMA)
    row.update(
        fleet=f.name,
        key=f.key,
        hardware=f.hardware,
        gpus=f.gpus,
        gpus_per_node=gpn,
        nodes=f.nodes,
        days=f.days,
        basis=f.basis,
        failure_definition=f.failure_definition,
        exposure_basis=f.exposure_basis,
        failures=f.failures,
        node_days=node_days,
        gpu_hours=gpu_days * 24.0 if gpu_days else None,
        published_mtbf_h=f.mtbf_h,
        source=f.cite(),
        checked=f.checked,
        caveat=f.caveat,
    )
    if f.basis == "counts" and f.failures is not None and gpu_days:
        r, lo, hi = _rate(f.failures, gpu_days, alpha)
        row.update(rate_per_gpu_day=r, gpu_ci_low=lo, gpu_ci_high=hi)
        if gpn:
            row.update(rate_per_node_day=r * gpn, ci_low=lo * gpn, ci_high=hi * gpn)
        hw = sum(c.count for c in f.components if c.domain in HARDWARE)
        if f.components and node_days:
            r, lo, hi = _rate(hw, node_days, alpha)
            row.update(
                hardware_failures=hw,
                hardware_rate_per_node_day=r,
                hardware_ci_low=lo,
                hardware_ci_high=hi,
            )
    elif f.published_rate_per_node_day is not None:
        row["rate_per_node_day"] = f.published_rate_per_node_day
        if gpn:
            row["rate_per_gpu_day"] = f.published_rate_per_node_day / gpn
    total = total_failures(f)
    if f.components and f.failures is not None and total > 0:
        top = sorted(f.components, key=lambda c: -c.count)[:3]
        row["component_shares"] = ", ".join(f"{c.label} {100 * c.count / total:.1f}%" for c in top)
    else:
        row["component_shares"] = f.headline
    row["flags"] = "; ".join(_flags(f))
    return row


def _shares(f: Fleet) -> list[dict[str, Any]]:
    total = total_failures(f)
    out = []
    for c in f.components:
        share = c.count / total if total > 0 else None
        off = (
            100 * (c.printed_share - share)
            if c.printed_share is not None and share is not None
            else None
        )
        out.append(
            {
                "fleet": f.name,
                "key": f.key,
                "label": c.label,
                "category": c.category,
                "count": c.count,
                "printed_share": c.printed_share,
                "share": share,
                "off_pp": off,
                "component": c.component,
                "domain": c.domain or None,
                "why": c.why,
            }
        )
    return out


@dataclass
class PublishedFleets(Result):
    """Published fleets with their rates re-derived, component shares recomputed, tables checked.

    Attributes
    ----------
    summary : polars.DataFrame
        One row per fleet: ``fleet``, ``key``, ``hardware``, ``gpus``, ``gpus_per_node``,
        ``nodes``, ``days``, ``basis``, ``failure_definition``, ``exposure_basis``, ``failures``,
        ``node_days``, ``gpu_hours``, ``rate_per_node_day`` with ``ci_low``/``ci_high``
        [failures per node-day; the exact interval where counts and exposure are published,
        null otherwise], ``rate_per_gpu_day`` with ``gpu_ci_low``/``gpu_ci_high``,
        ``hardware_failures`` and ``hardware_rate_per_node_day`` with its interval (the rows
        the taxonomy puts in the hardware domains), ``published_mtbf_h`` [h] (a mean time
        between failures as printed: of one GPU, one node or one job, as ``component_shares``
        says), ``component_shares`` (the top three recomputed where counts are published, else
        the headline), ``flags`` (every inconsistency; empty when
        none), ``source``, ``checked``, ``caveat``.
    shares : polars.DataFrame
        Long form, one row per printed component: ``fleet``, ``key``, ``label``, ``category``,
        ``count``, ``printed_share``, ``share`` (recomputed), ``off_pp`` (printed minus
        recomputed [percentage points]), ``component`` and ``domain`` in the taxonomy (null
        when unmapped), ``why``.
    alpha : float
        1 − confidence level of the intervals.
    """

    title = "Published fleets, re-derived"
    summary: pl.DataFrame
    shares: pl.DataFrame
    alpha: float = 0.05
    notes: list[str] = field(default_factory=list)

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Fleets and printed component rows."""
        return {"fleets": self.summary.height, "component rows": self.shares.height}

    def row(self, key: str) -> dict[str, Any]:
        """Return one fleet's summary row.

        Parameters
        ----------
        key : str
            The fleet key (``"llama3"``).

        Returns
        -------
        dict of str to object
            The row by column.
        """
        rows = self.summary.filter(pl.col("key") == key).to_dicts()
        if not rows:
            raise KeyError(f"no fleet {key!r}; known: {', '.join(self.summary['key'])}")
        return rows[0]

    def tables(self) -> dict[str, pl.DataFrame]:
        """Return the summary and the component shares.

        Returns
        -------
        dict of str to polars.DataFrame
            ``"fleets"`` and ``"component shares"``.
        """
        return {"fleets": self.summary, "component shares": self.shares}

    def _lines(self) -> list[str]:
        pct = f"{100 * (1 - self.alpha):.0f}%"
        out = []
        for r in self.summary.iter_rows(named=True):
            if r["rate_per_node_day"] is not None and r["ci_low"] is not None:
                rate = (
                    f"{fmt_num(1000 * r['rate_per_node_day'])} per 1000 node-days ({pct} CI "
                    f"{fmt_num(1000 * r['ci_low'])}-{fmt_num(1000 * r['ci_high'])}; {r['failures']:,} "
                    f"in {fmt_num(r['node_days'])} node-days)"
                )
            elif r["rate_per_gpu_day"] is not None and r["gpu_ci_low"] is not None:
                rate = (
                    f"{fmt_num(1000 * r['rate_per_gpu_day'])} per 1000 GPU-days ({pct} CI "
                    f"{fmt_num(1000 * r['gpu_ci_low'])}-{fmt_num(1000 * r['gpu_ci_high'])}; "
                    f"{r['failures']:,} in {fmt_num(r['gpu_hours'])} GPU-hours)"
                )
            elif r["rate_per_node_day"] is not None:
                rate = f"{fmt_num(1000 * r['rate_per_node_day'])} per 1000 node-days as printed (no counts: no interval)"
            else:
                rate = f"{r['basis']}: {r['component_shares']}"
            out.append(f"{r['fleet']} [{r['source']}]: {rate}")
            if r["flags"]:
                out.append(f"  does not add up: {r['flags']}")
        return out

    @classmethod
    def _example(cls, kind: str = "normal") -> PublishedFleets:
        """Build the instance (the published tables themselves: there is nothing smaller)."""
        from reliability.models._examples import check_kind

        check_kind(kind)
        return published_fleets()


def published_fleets(*, alpha: float = 0.05) -> PublishedFleets:
    """Re-derive every published fleet's rate and check its tables (see the module doc).

    Parameters
    ----------
    alpha : float
        1 − confidence level of the intervals.

    Returns
    -------
    PublishedFleets
        One row per fleet of :data:`reliability.fleets.FLEETS`, and the component shares.

    Examples
    --------
    >>> from reliability.models.fleets.published import published_fleets
    >>> row = published_fleets().row("llama3")
    >>> round(1000 * row["rate_per_node_day"], 2)  # 419 / (2,048 nodes x 54 days)
    3.79
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha: expected a number between 0 and 1, got {alpha}")
    rows = [_fleet_row(f, alpha) for f in FLEETS]
    shares = [s for f in FLEETS for s in _shares(f)]
    notes = [
        "rates from counts use the exact (Garwood) Poisson interval of one count over one "
        "exposure: it assumes a constant rate over the period",
        "numbers marked 'checked against a secondary summary' could not be checked against the "
        "paper itself here",
    ]
    return PublishedFleets(
        summary=pl.DataFrame(rows, schema=_SUMMARY_SCHEMA),
        shares=pl.DataFrame(shares, schema=_SHARES_SCHEMA),
        alpha=alpha,
        notes=notes,
    )
