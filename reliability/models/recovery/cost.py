"""What recovery from a hardware interruption costs today, measured from the logs.

Definitions (per hardware interruption as counted in r_f: an attempt that ended, before the
observation end, with failure domain ``hardware`` or ``infrastructure`` from
:func:`reliability.attribute_failures`; Kokolis et al., HPCA'25 §III):

- **queue wait after failure**: the time from the interrupted attempt's end to the start of the
  next attempt of the same run (the same (cluster, job id) across requeues, or a ``run_key``
  that links resubmissions), in hours, 0 when the next attempt started before the end was
  recorded. An interruption with no later started attempt of its run before the observation
  end is **censored** (``censored``): its rerun had not started by then (``waiting_at_end``:
  a pending or held rerun is listed), or it was never resubmitted under the same key. The
  wait statistics (n, median, mean, p90) are over the observed waits only, so with many
  censored waits they understate the wait.
- **node repair time** (what hot spares need): the length of each out-of-service spell of a
  node (:func:`reliability.models.nodes.node_health` intervals in DOWN, DRAIN, FAIL or REPAIR whose
  reason is not administrative; overlapping intervals of one node merged into one spell), in
  hours. A spell still open at the observation end is censored (``open``).

The restart overhead (reloading a checkpoint) is not visible in scheduler logs: it stays a
parameter (``restart_h``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import polars as pl

from reliability._result import Result, fmt_count, fmt_duration_h
from reliability.models.failures.counts import clip_attempts
from reliability.models.failures.mttf import HARDWARE, attributed_jobs, size_bucket
from reliability.models.recovery.ettr_logs import run_key_columns

if TYPE_CHECKING:
    from reliability.models.nodes.health import NodeHealth
    from reliability.store import Dataset

__all__ = ["MIN_WAITS", "REPAIR_STATES", "RecoveryCosts", "component_repair_h", "recovery_costs"]

#: a size bucket's own mean wait is used only when it rests on at least this many waits
MIN_WAITS = 3
#: node states whose spells count as repair (MAINT is planned work)
REPAIR_STATES = ("DOWN", "DRAIN", "FAIL", "REPAIR")

_STATS = {
    "interruptions": pl.Int64,
    "n": pl.Int64,
    "median_h": pl.Float64,
    "mean_h": pl.Float64,
    "p90_h": pl.Float64,
    "censored": pl.Int64,
}


def _stats(col: str, censored: pl.Expr) -> list[pl.Expr]:
    v = pl.col(col).drop_nulls()
    return [
        pl.len().cast(pl.Int64).alias("interruptions"),
        v.len().cast(pl.Int64).alias("n"),
        v.median().alias("median_h"),
        v.mean().alias("mean_h"),
        v.quantile(0.9, "linear").alias("p90_h"),
        censored.sum().cast(pl.Int64).alias("censored"),
    ]


@dataclass
class RecoveryCosts(Result):
    """Queue wait after hardware interruptions by job size, and node repair times.

    Attributes
    ----------
    waits : polars.DataFrame
        One row per hardware interruption: the run key, ``attempt``, ``gpus``, ``bucket``,
        ``end_time``, ``next_start``, ``wait_h`` (null when censored), ``censored``,
        ``waiting_at_end``.
    by_size : polars.DataFrame
        Per size bucket [GPUs]: ``interruptions``, ``n`` (observed waits), ``median_h``,
        ``mean_h``, ``p90_h``, ``censored``.
    repairs : polars.DataFrame or None
        One row per node out-of-service spell: ``cluster``, ``node``, ``start``, ``hours``,
        ``open``; None when no node states were given.
    observation_end : datetime or None
        The observation end [UTC].
    """

    title = "Recovery costs: queue wait after hardware interruptions, node repair time"
    waits: pl.DataFrame
    by_size: pl.DataFrame
    repairs: pl.DataFrame | None = None
    observation_end: datetime | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def overall(self) -> pl.DataFrame:
        """The wait statistics over every size (one row)."""
        return self.waits.select(_stats("wait_h", pl.col("censored")))

    @property
    def repair_summary(self) -> pl.DataFrame:
        """Repair-time statistics (one row: ``spells``, ``n`` closed, median/mean/p90 [h], ``open``)."""
        r = (
            self.repairs
            if self.repairs is not None
            else pl.DataFrame(schema={"hours": pl.Float64, "open": pl.Boolean})
        )
        return r.select(
            pl.len().cast(pl.Int64).alias("spells"),
            pl.col("hours").filter(~pl.col("open")).len().cast(pl.Int64).alias("n"),
            pl.col("hours").filter(~pl.col("open")).median().alias("median_h"),
            pl.col("hours").filter(~pl.col("open")).mean().alias("mean_h"),
            pl.col("hours").filter(~pl.col("open")).quantile(0.9, "linear").alias("p90_h"),
            pl.col("open").sum().cast(pl.Int64).alias("open"),
        )

    @property
    def summary(self) -> pl.DataFrame:
        """Queue wait after hardware interruptions by job-size bucket."""
        return self.by_size

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the result: hardware interruptions, observed waits, repair spells."""
        out: dict[str, int | float] = {
            "hardware interruptions": self.waits.height,
            "observed waits": int(self.waits.get_column("wait_h").is_not_null().sum()),
        }
        if self.repairs is not None:
            out["repair spells"] = self.repairs.height
        return out

    def tables(self) -> dict[str, pl.DataFrame]:
        """Return the result's tables by name.

        Returns
        -------
        dict of str to polars.DataFrame
            ``"queue wait by size"`` and, with node states, ``"repair time"``.
        """
        t = {"queue wait by size": self.by_size}
        if self.repairs is not None:
            t["repair time"] = self.repair_summary
        return t

    def queue_h_for(self, n_gpus: int) -> tuple[float | None, str]:
        """Return the mean queue wait after a hardware interruption for a job size, and its basis.

        Parameters
        ----------
        n_gpus : int
            Job size [GPUs].

        Returns
        -------
        (float or None, str)
            The mean observed wait [h] of the size's bucket when it rests on at least
            :data:`MIN_WAITS` waits, else of the nearest smaller bucket that does, else of every
            GPU job size; None with the reason when no wait was observed.
        """
        bucket = _bucket_of(n_gpus)
        b = self.by_size.filter(pl.col("bucket") == bucket)
        if b.height and b.item(0, "n") >= MIN_WAITS:
            return float(b.item(0, "mean_h")), f"mean of {b.item(0, 'n')} waits at this size"
        # a size without enough waits (the next scale): the nearest smaller size that has them;
        # waits grow with the size of the job (it needs more free nodes at once), so an
        # average over every size would understate them
        below = self.by_size.filter(
            (pl.col("bucket") > 0) & (pl.col("bucket") < bucket) & (pl.col("n") >= MIN_WAITS)
        ).sort("bucket")
        if below.height:
            row = below.row(-1, named=True)
            return float(row["mean_h"]), (
                f"mean of {row['n']} waits of the nearest smaller size measured ({row['bucket']:,}+ GPUs; "
                "larger jobs usually wait longer)"
            )
        g = self.waits.filter(pl.col("bucket") > 0).get_column("wait_h").drop_nulls()
        if g.len():
            return float(g.mean()), f"mean of {g.len()} waits over every GPU job size"  # type: ignore[arg-type]
        return None, "no rerun after a hardware interruption of a GPU job was seen"

    @property
    def repair_h(self) -> float | None:
        """Mean length of the closed repair spells [h] (None: none measured)."""
        if self.repairs is None:
            return None
        v = self.repair_summary.item(0, "mean_h")
        return None if v is None else float(v)

    @classmethod
    def _example(cls, kind: str = "normal") -> RecoveryCosts:
        """Build a tiny instance: the recovery costs of a 14-day, 16-node cluster (for contract tests).

        ``kind="no failures"``: the same without hardware failures.
        """
        from reliability.models._examples import tiny_jobs, tiny_tables
        from reliability.models.nodes.health import node_health

        t = tiny_tables(kind=kind)
        end = tiny_jobs()[1]
        health = node_health(t, attributed=t["attributed"], end=end)
        return recovery_costs(t["attributed"], node_health=health, observation_end=end)

    def _lines(self) -> list[str]:
        o = self.overall.row(0, named=True)
        if not o["interruptions"]:
            lines = ["No hardware interruptions: no queue wait after failure to measure."]
        else:
            lines = [
                f"{o['interruptions']:,} hardware interruptions; {o['n']:,} reruns seen: wait from the failed attempt's "
                f"end to the rerun's start median {fmt_duration_h(o['median_h'])}, mean {fmt_duration_h(o['mean_h'])}, "
                f"p90 {fmt_duration_h(o['p90_h'])}; {o['censored']:,} with no rerun seen before the data end"
            ]
        if self.repairs is not None:
            r = self.repair_summary.row(0, named=True)
            if r["n"]:
                lines.append(
                    f"node repair: {r['n']:,} closed out-of-service spells, median {fmt_duration_h(r['median_h'])}, "
                    f"mean {fmt_duration_h(r['mean_h'])}, p90 {fmt_duration_h(r['p90_h'])}; {r['open']:,} still open"
                )
            else:
                lines.append(f"node repair: no closed out-of-service spell ({r['open']:,} open)")
        return lines


def _bucket_of(n_gpus: int) -> int:
    return int(pl.select(size_bucket(pl.lit(int(n_gpus), pl.Int64))).item())


def _repairs(health: NodeHealth) -> pl.DataFrame:
    """Merge each node's non-administrative out-of-service intervals into spells."""
    iv = health.intervals.filter(
        pl.col("state").is_in(REPAIR_STATES)
        & (pl.col("reason_class").fill_null("unclassified") != "administrative")
    )
    end = health.end
    iv = iv.with_columns(
        e=pl.when(pl.col("open"))
        .then(pl.lit(end).cast(pl.Datetime("us", "UTC")))
        .otherwise(pl.col("end"))
    ).sort("cluster", "node", "start")
    prev_max = pl.col("e").cum_max().shift(1).over("cluster", "node")
    iv = iv.with_columns(new=(prev_max.is_null() | (pl.col("start") > prev_max)))
    iv = iv.with_columns(spell=pl.col("new").cum_sum())
    return (
        iv.group_by("cluster", "node", "spell", maintain_order=True)
        .agg(
            start=pl.col("start").min(),
            hours=((pl.col("e").max() - pl.col("start").min()).dt.total_microseconds() / 3.6e9),
            open=pl.col("open").any(),
        )
        .drop("spell")
    )


def recovery_costs(
    source: Dataset | pl.DataFrame,
    *,
    node_health: NodeHealth | None = None,
    run_key: str | list[str] | None = None,
    observation_end: datetime | None = None,
) -> RecoveryCosts:
    """Measure the queue wait after each hardware interruption, and node repair times (module doc).

    Kokolis et al., HPCA '25, §III (hardware interruptions as counted in r_f) and §V (the
    queue wait q of the ETTR model).

    Parameters
    ----------
    source : Dataset or polars.DataFrame
        A Dataset, or a jobs frame (attributed or not).
    node_health : NodeHealth or None
        A :func:`reliability.models.nodes.node_health` result for the repair times (None: not measured).
    run_key : str or list of str or None
        Column(s) that identify a run; default (cluster, job_id).
    observation_end : datetime or None
        When the data end [UTC] (default: the Dataset's, else the latest time, noted).

    Returns
    -------
    RecoveryCosts
        Per interruption, by size bucket, and the repair spells.
    """
    jobs, obs_end, notes = attributed_jobs(source, observation_end)
    key = run_key_columns(jobs, run_key)
    # only the columns read below: the filter and the sort copy every column they carry (the
    # host lists alone are hundreds of MiB at a million attempts)
    used = (*key, "attempt", "start_time", "end_time", "failure_domain", "n_accelerators")
    jobs = jobs.select(list(dict.fromkeys(used)))
    started, _ = clip_attempts(jobs, obs_end)
    a = started.sort([*key, "start_time"])
    same = pl.all_horizontal([pl.col(c).eq_missing(pl.col(c).shift(-1)) for c in key]).fill_null(
        False
    )
    a = a.with_columns(next_start=pl.when(same).then(pl.col("start_time").shift(-1)))
    failed = a.filter(pl.col("failure_domain").is_in(HARDWARE) & ~pl.col("open"))
    # a rerun listed but not started at the end (pending or held): waiting, censored there
    pending = (
        jobs.filter(pl.col("start_time").is_null())
        .select(key)
        .unique()
        .with_columns(_pending=pl.lit(True))
    )
    w = failed.with_columns(
        wait_h=((pl.col("next_start") - pl.col("end_time")).dt.total_microseconds() / 3.6e9).clip(
            0.0
        ),
        censored=pl.col("next_start").is_null(),
        gpus=pl.col("n_accelerators").cast(pl.Int64),
        bucket=size_bucket(pl.col("n_accelerators")),
    ).join(pending, on=key, how="left", nulls_equal=True)
    w = w.with_columns(
        waiting_at_end=pl.col("censored") & pl.col("_pending").fill_null(False)
    ).select(
        *key,
        "attempt",
        "gpus",
        "bucket",
        "end_time",
        "next_start",
        "wait_h",
        "censored",
        "waiting_at_end",
    )
    by = (
        w.group_by("bucket").agg(_stats("wait_h", pl.col("censored"))).sort("bucket")
        if w.height
        else pl.DataFrame(schema={"bucket": pl.Int64, **_STATS})
    )
    n_cens = int(w.get_column("censored").sum()) if w.height else 0
    if n_cens:
        n_wait = int(w.get_column("waiting_at_end").sum())
        notes.append(
            f"{fmt_count(n_cens, 'hardware interruption')} {'has' if n_cens == 1 else 'have'} no rerun "
            f"started before the data end ({n_wait:,} with a "
            "pending rerun listed): censored, left out of the wait statistics (resubmissions under a new job id "
            "are linked only with run_key)"
        )
    repairs = None
    if node_health is not None:
        repairs = _repairs(node_health)
        n_open = int(repairs.get_column("open").sum()) if repairs.height else 0
        if n_open:
            notes.append(
                f"{n_open:,} node out-of-service spells are open at the data end: the mean repair time is over the "
                "closed ones (a lower bound)"
            )
    return RecoveryCosts(waits=w, by_size=by, repairs=repairs, observation_end=obs_end, notes=notes)


def component_repair_h(component_failures: pl.DataFrame) -> tuple[float | None, str]:
    """Mean node repair time from a ``component_failures`` table (``repaired_at - failed_at``).

    The fallback when node states give no repair spells (a LANL Dataset records repairs here):
    the rows of ``component_type = "node"`` with both times, ``repaired_at >= failed_at``.

    Parameters
    ----------
    component_failures : polars.DataFrame
        ``component_type``, ``failed_at``, ``repaired_at`` (the Dataset table).

    Returns
    -------
    tuple
        The mean repair time [h] (None: no closed node repairs) and a sentence saying its basis
        or why there is none.
    """
    need = {"component_type", "failed_at", "repaired_at"}
    if not need <= set(component_failures.columns) or component_failures.height == 0:
        return None, "no component_failures with failed_at and repaired_at"
    rows = component_failures.filter(
        (pl.col("component_type") == "node")
        & pl.col("repaired_at").is_not_null()
        & (pl.col("repaired_at") >= pl.col("failed_at"))
    )
    if rows.height == 0:
        return None, "no node rows of component_failures have a repaired_at"
    hours = (pl.col("repaired_at") - pl.col("failed_at")).dt.total_microseconds() / 3.6e9
    mean = float(rows.select(hours.mean()).item())
    return mean, (
        f"mean repaired_at - failed_at of {fmt_count(rows.height, 'node failure')} "
        f"({fmt_duration_h(mean)})"
    )
