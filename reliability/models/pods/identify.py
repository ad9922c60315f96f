"""TPU pods in a Dataset: which pod each cluster is, and how its jobs fared (Zu et al. NSDI'24).

- :func:`identify_pods`: from the inventory, per cluster: a pod with optical circuit switches
  is a reconfigurable TPUv4 pod; without them it is static (16 cubes: TPUv3-like, else a
  static TPUv4-like pod); its size in cubes (16 hosts each).
- :func:`pod_job_stats`: per cluster, the jobs, the share of jobs that saw a hardware
  interruption (an attempt ended NODE_FAIL; NSDI'24 §6: about 1%), attempts and preemptions
  (defragmentation, maintenance), and the share of running time spent on fault-tolerant routing
  (the pod log's FT-routing steps; NSDI'24: under 2% of jobs at any time).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from reliability._result import Result
from reliability.topology import HOSTS_PER_CUBE

__all__ = ["PodJobStats", "identify_pods", "pod_job_stats"]


def identify_pods(inventory: pl.DataFrame) -> pl.DataFrame:
    """Identify the pod type of each cluster of a pod inventory.

    Parameters
    ----------
    inventory : polars.DataFrame
        One row per component: ``cluster``, ``component_type`` (``machine``, ``ocs``, ...).

    Returns
    -------
    polars.DataFrame
        One row per cluster, sorted by name: ``cluster``, ``pod`` (``tpuv4``, ``tpuv3``,
        ``tpuv4-static``), ``mode`` (``reconfigurable`` / ``static``), ``n_cubes``.
    """
    if inventory.height == 0:
        return pl.DataFrame(
            schema={"cluster": pl.String, "pod": pl.String, "mode": pl.String, "n_cubes": pl.Int64}
        )
    per = inventory.group_by(pl.col("cluster").cast(pl.String)).agg(
        machines=(pl.col("component_type") == "machine").sum(),
        ocs=(pl.col("component_type") == "ocs").sum(),
    )
    return (
        per.with_columns(n_cubes=(pl.col("machines") // HOSTS_PER_CUBE).cast(pl.Int64))
        .with_columns(
            mode=pl.when(pl.col("ocs") > 0)
            .then(pl.lit("reconfigurable"))
            .otherwise(pl.lit("static")),
            pod=pl.when(pl.col("ocs") > 0)
            .then(pl.lit("tpuv4"))
            .when(pl.col("n_cubes") == 16)
            .then(pl.lit("tpuv3"))
            .otherwise(pl.lit("tpuv4-static")),
        )
        .select("cluster", "pod", "mode", "n_cubes")
        .sort("cluster")
    )


@dataclass
class PodJobStats(Result):
    """How the jobs of each pod fared.

    Attributes
    ----------
    per_pod : polars.DataFrame
        Per cluster: ``jobs``, ``interrupted`` (share of jobs with a NODE_FAIL attempt),
        ``attempts``, ``preempted`` (attempts).
    ft_share : float or None
        Share of the jobs' running time on fault-tolerant routing (None without running time).
    run_h, ft_h : float
        Running time of ended attempts and of FT-routing steps [h].
    """

    title = "Jobs on the pods (Zu et al. NSDI'24 §6)"
    per_pod: pl.DataFrame
    ft_share: float | None
    run_h: float
    ft_h: float
    notes: list[str] = field(default_factory=list)

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the result: jobs and running hours [h]."""
        return {
            "jobs": int(self.per_pod.get_column("jobs").sum()) if self.per_pod.height else 0,
            "running hours": self.run_h,
        }

    @property
    def summary(self) -> pl.DataFrame:
        """The per-pod table (one row per pod)."""
        return self.per_pod

    def _lines(self) -> list[str]:
        if self.per_pod.height == 0:
            return ["No jobs in the pod logs."]
        lines = []
        for r in self.per_pod.iter_rows(named=True):
            lines.append(
                f"{r['cluster']}: {r['jobs']:,} jobs, {100 * r['interrupted']:.2f}% saw a hardware interruption "
                f"(NSDI'24: about 1%), {r['attempts']:,} attempts, {r['preempted']:,} preempted"
            )
        if self.ft_share is not None:
            lines.append(
                f"jobs ran on fault-tolerant routing for {100 * self.ft_share:.2f}% of their running time "
                "(NSDI'24: under 2% of jobs at any time)"
            )
        return lines

    @classmethod
    def _example(cls) -> PodJobStats:
        """Build a tiny instance: the jobs of a 14-day, 16-node cluster, one FT-routing step (for contract tests)."""
        from datetime import timedelta

        from reliability.models._examples import T0, tiny_tables
        from reliability.schema import TABLES

        steps = pl.DataFrame(
            {
                "cluster": ["tiny"],
                "job_id": ["0"],
                "step": ["ft"],
                "name": ["ft-routing"],
                "start_time": [T0 + timedelta(hours=1)],
                "end_time": [T0 + timedelta(hours=2)],
                "state": ["COMPLETED"],
                "exit_code": [0],
                "exit_signal": [None],
                "n_nodes": [1],
                "nodes": [["n00"]],
            },
            schema_overrides=dict(TABLES["job_steps"].schema),
            strict=False,
        )
        return pod_job_stats(tiny_tables()["jobs"], steps)


def pod_job_stats(jobs: pl.DataFrame, steps: pl.DataFrame) -> PodJobStats:
    """Jobs per pod, their hardware-interruption share, and the time on FT routing.

    Parameters
    ----------
    jobs : polars.DataFrame
        The pod log's jobs (one row per attempt).
    steps : polars.DataFrame
        The pod log's job steps (FT-routing periods: ``start_time``, ``end_time``).

    Returns
    -------
    PodJobStats
        Per pod: jobs, the share interrupted and the share of running time on fault-tolerant
        routing.
    """
    schema = {
        "cluster": pl.String,
        "jobs": pl.Int64,
        "interrupted": pl.Float64,
        "attempts": pl.Int64,
        "preempted": pl.Int64,
    }
    if jobs.height == 0:
        return PodJobStats(
            per_pod=pl.DataFrame(schema=schema),
            ft_share=None,
            run_h=0.0,
            ft_h=0.0,
            notes=["no jobs in the pod logs"],
        )
    ended = jobs.drop_nulls("end_time").drop_nulls("start_time")
    run_h = float((ended["end_time"] - ended["start_time"]).dt.total_seconds().sum()) / 3600.0
    ft_h = (
        float((steps["end_time"] - steps["start_time"]).dt.total_seconds().sum()) / 3600.0
        if steps.height
        else 0.0
    )
    hit = jobs.group_by("cluster", "job_id").agg(hw=(pl.col("state") == "NODE_FAIL").any())
    per = hit.group_by("cluster").agg(jobs=pl.len(), interrupted=pl.col("hw").mean())
    per = (
        per.join(
            jobs.group_by("cluster").agg(
                attempts=pl.len(), preempted=(pl.col("state") == "PREEMPTED").sum()
            ),
            on="cluster",
        )
        .with_columns(pl.col("cluster").cast(pl.String))
        .select(list(schema))
        .cast(schema)
        .sort("cluster")
    )  # type: ignore[arg-type]
    return PodJobStats(
        per_pod=per, ft_share=ft_h / run_h if run_h > 0 else None, run_h=run_h, ft_h=ft_h
    )
