"""Generator A: an event-driven Slurm cluster with priorities, EASY backfill, contiguous
placement, ``--requeue`` and QOS preemption; sacct times as epoch seconds.

The world (every time in seconds since the simulation start ``t = 0``, which is
``warmup_days`` before the export window opens; the export covers ``days`` days after that):

* **Fleet**: ``n_nodes`` nodes of 8 GPUs (``gres/gpu:h100``), named ``<node_prefix>0001``...
  (``gpu-a0001``), in cluster ``cluster``.
* **Hardware failures**: node ``n`` fails as a Poisson process of intensity
  ``r_n * w(week) * trend**(t / T)`` while in service (the clock stops during repairs),
  sampled by inverting the integrated intensity (:class:`~generators._common.HazardClock`).
  ``r_n`` is ``base_rate_per_1000_node_days / 1000`` per node-day times a lognormal factor
  (log-sd ``node_spread``), or ``lemon_factor`` times the base for ``n_lemons`` planted lemons;
  ``w`` are weekly Gamma multipliers of mean 1 and CV ``weekly_swing``; ``T`` is the simulated
  length. Each failure gets a component (``cause``) from the site's mix and a mechanism:

  - ``not_responding``: Slurm sets the node ``DOWN*`` "Not responding" (SlurmUser) and ends
    every job on it ``NODE_FAIL`` in the same second; jobs with ``--requeue`` get a new
    attempt (same JobID, Submit = the failure, eligible 120 s later);
  - ``health_check``: a health check drains the node (a reason from the vocabulary); its jobs
    end ``FAILED`` within 20 s (the application crashes), or ``REQUEUED`` by the check
    (share ``hc_requeue_share`` of requeueable jobs). Slurm 22.05 records a drain of a busy
    node when it becomes DRAINED, i.e. when its last job ended, with User SlurmUser (as in the
    real run-1 corpus); on an idle node at once, User ``root(0)``;
  - ``xid``: an NVRM Xid in the kernel log; the jobs on the node end ``FAILED`` 5-180 s later;
    then 200-1800 s after the Xid the node is drained (reason that may or may not name the
    Xid), or Slurm sets it ``DOWN`` "Node unexpectedly rebooted" for 5-20 min, or nothing
    happens (the node stays in service);
  - ``silent`` (share ``silent_share``): the jobs end ``FAILED``, nothing is logged, the
    node stays in service.

  Out of service: lognormal repair of median ``repair_median_h`` hours and log-sd
  ``repair_sigma`` (after the drain for Xid drains). A failure on an idle node just takes it
  out of service.
* **Not failures**: admin drains (``admin_drains_per_1000_node_days``, median 6 h, reasons from
  ``vocabulary.admin``, by a named admin or root) and ``maintenance_windows`` planned windows on
  a contiguous block of nodes; jobs keep running through a drain and end normally (a drain
  requested on a busy node is recorded when the node becomes idle, by SlurmUser; one resumed
  while still draining leaves no record). ``Prolog error`` drains (a job start fails on a node,
  share ``prolog_error_rate`` per node started; the job is REQUEUED) and ``Kill task failed``
  drains after some cancelled / timed-out jobs are Slurm's own reasons.
* **Workload**: jobs arrive with a diurnal and weekly pattern until the offered load (node
  time of their planned runtimes) is ``load`` of the fleet; classes from 1-GPU development
  jobs to pre-training runs of up to ``max_job_nodes`` nodes (most jobs small, most GPU time in
  large jobs); lognormal runtimes, a time limit from a menu (TIMEOUT at the limit), user
  failures (exit codes 1-255 and signals), cancellations (``CANCELLED by <uid>``, running or
  pending), OUT_OF_MEMORY (``0:125``). QOS ``high`` > ``normal`` > ``low`` (partition
  ``scavenger``, preempted by ``high`` jobs with PreemptMode=REQUEUE: ``PREEMPTED`` then a new
  attempt). ``requeue_share`` of jobs have ``--requeue``.
* **Scheduler**: event-driven; at each event time, pending jobs in priority order (QOS, then
  age) start on idle healthy nodes: whole-node jobs on the best-fitting contiguous range of
  node indices, sub-node jobs packed onto partly used nodes from the top of the range; the
  first job that does not fit gets a reservation (the nodes that free up first by their
  running jobs' time limits) and later jobs may only backfill around it (EASY backfill).
* **Outputs** (``out_dir``): ``sacct.psv`` (``SLURM_TIME_FORMAT=%s sacct --allusers
  --duplicates --parsable2`` with the package's field list, with ``.batch`` / ``.extern`` /
  ``.0`` step lines), ``sacctmgr_events.psv`` (epoch times), ``kern.log`` (one syslog file for
  the whole fleet, UTC) and ``truth/`` (parquet + ``config.json``). Records that ended before
  the window are left out, as ``sacct --starttime`` does; attempts still running at the end
  are ``RUNNING`` (End ``Unknown``), queued ones ``PENDING``.
"""

from __future__ import annotations

import bisect
import functools
import heapq
import itertools
import math
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl

from generators._common import (
    DAY,
    EVENT_FIELDS,
    SACCT_FIELDS,
    HazardClock,
    History,
    Vocabulary,
    attempt_hazard,
    compress_hostlist,
    duration,
    format_times,
    monday_offset,
    node_base_rates,
    node_lists,
    render,
    to_datetime,
    tres,
    utc,
    weekly_multipliers,
    write_psv,
    write_truth,
    xid_message,
)

__all__ = ["SITE_A_VOCABULARY", "generate_a"]

GPUS = 8
#: site A's reasons: an NHC-based site with free-text operator notes
SITE_A_VOCABULARY = Vocabulary(
    hardware={
        "gpu": (
            "NHC: check_hw_gpu failed",
            "gpu fell off the bus gpu:{gpu}",
            "nvidia-smi timeout",
            "HC FAIL: dcgmi diag -r 3",
            "GPU{gpu} missing from nvidia-smi, RMA INC{ticket}",
            "Xid {xid} on gpu:{gpu} - RMA",
        ),
        "gpu_memory": (
            "GPU ECC errors <xid {xid}> on gpu:{gpu}",
            "Xid 48 DBE",
            "row remap failure gpu:{gpu}",
            "NHC: check_nv_ecc uncorrectable > 0",
            "HC FAIL: dcgmi diag -r 3",
        ),
        "nvlink": ("NVLink error", "nvlink down gpu:{gpu}", "HC FAIL: nvbandwidth below threshold"),
        "ib_link": (
            "IB port down mlx5_{port}",
            "HC FAIL: ibstat mlx5_{port} not Active",
            "IB link errors - ticket {ticket}",
        ),
        "nic": ("eth0 link flapping", "NHC: check_hw_eth failed"),
        "psu": (
            "PSU redundancy lost",
            "BMC SEL: critical event",
            "power supply fault - ticket {ticket}",
        ),
        "dimm": ("NHC: check_hw_physmem failed", "EDAC: CE storm on mc1", "DIMM B2 uncorrectable"),
        "bios": ("NHC: check_hw_cpuinfo failed", "BIOS settings drift"),
        "disk": ("disk /local failed", "NHC: check_fs_mount /local", "nvme0n1 I/O errors"),
        "machine": (
            "node unhealthy - see ops",
            "thermal throttle",
            "kernel panic - ticket {ticket}",
            "fan failure ticket #{ticket}",
        ),
        "unknown": ("node unhealthy - see ops", "HC FAIL", "investigating - {admin}"),
    },
    xid_drain=(
        "Xid {xid} on gpu:{gpu}",
        "GPU ECC errors <xid {xid}> on gpu:{gpu}",
        "NHC: check_hw_gpu failed",
        "HC FAIL: dcgmi diag -r 3",
        "gpu fell off the bus",
        "node unhealthy - see ops",
        "XID:{xid} reset required",
    ),
    admin=(
        "maintenance window {date}",
        "reboot for kernel upgrade",
        "RESV: benchmark",
        "draining for reinstall",
        "admin: testing new driver",
        "firmware update INC{ticket}",
        "cable audit rack {rack}",
        "held for NCCL tests - {admin}",
        "burn-in after GPU swap (was Xid 79)",
    ),
    admin_users=("root(0)", "jsmith(1203)", "akovacs(1187)", "opsbot(990)"),
    slurm_user="slurm(64030)",
)

# component mix of hardware failures, and mechanism shares per component:
# (not_responding, health_check, xid)
_CAUSES = (
    "gpu",
    "gpu_memory",
    "nvlink",
    "ib_link",
    "psu",
    "dimm",
    "machine",
    "disk",
    "bios",
    "nic",
    "unknown",
)
_CAUSE_P = np.array([0.30, 0.20, 0.08, 0.10, 0.05, 0.07, 0.08, 0.03, 0.02, 0.03, 0.04])
_MECH_P = {
    "gpu": (0.15, 0.30, 0.55), "gpu_memory": (0.0, 0.35, 0.65), "nvlink": (0.0, 0.5, 0.5),
    "ib_link": (0.2, 0.8, 0.0), "psu": (0.8, 0.2, 0.0), "dimm": (0.5, 0.5, 0.0),
    "machine": (0.7, 0.3, 0.0), "disk": (0.1, 0.9, 0.0), "bios": (0.0, 1.0, 0.0),
    "nic": (0.5, 0.5, 0.0), "unknown": (0.5, 0.5, 0.0),
}  # fmt: skip
_XIDS = {
    "gpu": ((79, 119, 62, 154, 13, 31), (0.45, 0.2, 0.1, 0.1, 0.1, 0.05)),
    "gpu_memory": ((48, 95, 94, 64, 63), (0.35, 0.25, 0.15, 0.15, 0.10)),
    "nvlink": ((74,), (1.0,)),
}
NR, HC, XID, SILENT = 0, 1, 2, 3
MECH_NAMES = ("not_responding", "health_check", "xid", "silent")
_XID_DRAIN, _XID_REBOOT, _XID_NONE = 0, 1, 2
_PCI = ("0000:18:00", "0000:2a:00", "0000:3a:00", "0000:5d:00", "0000:9a:00", "0000:ab:00",
        "0000:ba:00", "0000:db:00")  # fmt: skip

# workload classes: name, share, nodes (or None: one node), gpus per node choices, runtime
# median [h], log-sd, limits [h], user-failure share, qos
_CLASSES = (
    ("dev", 0.44, None, ((1, 2, 4, 8), (0.4, 0.25, 0.2, 0.15)), 0.4, 1.0, (1, 2, 4), 0.25),
    ("small", 0.42, None, ((1, 2, 4, 8), (0.3, 0.2, 0.2, 0.3)), 5.0, 1.1, (12, 24, 48), 0.12),
    ("multi", 0.09, (2, 4, 8, 16), None, 10.0, 1.0, (24, 48, 72), 0.08),
    ("large", 0.02, (32, 64, 128, 256), None, 20.0, 0.8, (48, 72), 0.06),
    ("scav", 0.03, (1, 2, 4), None, 6.0, 1.0, (24, 48), 0.10),
)
_NAMES = {
    "dev": ("bash", "interactive", "jupyter", "debug_nccl", "test.sh", "profile run"),
    "small": ("sft_run", "eval_harness", "tokenize", "ft-lora", "reward_model", "bench_attn"),
    "multi": ("ft-13b", "train_vit", "dpo_sweep", "speech-asr", "mm-align"),
    "large": ("pretrain-7b", "pretrain-70b", "llm-base-v3", "moe_scale"),
    "scav": ("hparam_sweep", "scav-eval", "ablation"),
}
_USERS = (
    "jdoe", "mchen", "akumar", "spatel", "lgarcia", "nnguyen", "okim", "rsingh", "tbrown",
    "ewilson", "hzhang", "pmartin", "cliu", "dlee", "fyang", "gwang", "ijones", "kmiller",
    "mdavis", "nlopez", "ptaylor", "qanderson", "rthomas", "sjackson", "uwhite", "vharris",
    "wclark", "xlewis", "yrobinson", "zwalker",
)  # fmt: skip
_ACCOUNTS = ("llm-pretrain", "vision", "speech", "alignment", "infra", "rl")
_QOS = ("low", "normal", "high")
_QOS_W = (1000, 20000, 100000)


class _Job:
    __slots__ = (
        "account", "cls", "done", "eligible", "exit", "frac", "gpn", "i", "jid", "key",
        "limit", "n_att", "n_nodes", "n_requeue", "name", "outcome", "partition", "qos",
        "rec_submit", "requeue", "seq", "submit", "tier", "uid", "user", "work",
    )  # fmt: skip


class _Att:
    __slots__ = (
        "alive", "cause", "culprit", "end", "exit", "fail", "job", "k", "k_global", "mech",
        "nodes", "prio", "reason", "start", "state", "submit",
    )  # fmt: skip


def _failures(rng, clock, rate_s, t_end, silent_share, repair_median_h, repair_sigma):
    """Sample every node's failures by inversion, round by round (all nodes at once)."""
    n = rate_s.size
    t = np.zeros(n)
    active = rate_s > 0
    out: dict[str, list[np.ndarray]] = {
        k: [] for k in ("node", "t", "cause", "mech", "xid", "action", "d2", "outage", "gpu")
    }
    cum_p = np.cumsum(_CAUSE_P / _CAUSE_P.sum())
    mech_tab = np.array([_MECH_P[c] for c in _CAUSES])
    med = repair_median_h * 3600.0
    while active.any():
        idx = np.flatnonzero(active)
        h = clock.cum(t[idx]) + rng.exponential(size=idx.size) / rate_s[idx]
        tf = np.floor(clock.inv(h))  # whole seconds, as every log records them
        ok = tf < t_end
        active[idx[~ok]] = False
        idx, tf = idx[ok], tf[ok]
        k = idx.size
        if k == 0:
            break
        cause = np.minimum(np.searchsorted(cum_p, rng.random(k), side="right"), len(_CAUSES) - 1)
        u = rng.random(k)
        cm = np.cumsum(mech_tab[cause], axis=1)
        mech = np.where(u < cm[:, 0], NR, np.where(u < cm[:, 1], HC, XID))
        mech = np.where(rng.random(k) < silent_share, SILENT, mech)
        xid = np.zeros(k, dtype=np.int64)
        ux = rng.random(k)
        for ci, c in enumerate(_CAUSES):
            if c in _XIDS:
                codes, p = _XIDS[c]
                sel = cause == ci
                j = np.minimum(np.searchsorted(np.cumsum(p), ux[sel], side="right"), len(codes) - 1)
                xid[sel] = np.asarray(codes)[j]
        # an Xid mechanism needs an Xid: a component without one fails by a health check
        mech = np.where((mech == XID) & (xid == 0), HC, mech)
        ua = rng.random(k)
        action = np.where(ua < 0.6, _XID_DRAIN, np.where(ua < 0.8, _XID_REBOOT, _XID_NONE))
        d2 = np.where(action == _XID_REBOOT, rng.uniform(200, 900, k), rng.uniform(200, 1800, k))
        repair = np.maximum(1800.0, rng.lognormal(math.log(med), repair_sigma, k))
        reboot = rng.uniform(300, 1200, k)
        outage = np.select(
            [mech == SILENT, (mech == XID) & (action == _XID_NONE),
             (mech == XID) & (action == _XID_REBOOT), mech == XID],
            [0.0, 0.0, d2 + reboot, d2 + repair],
            repair,
        )  # fmt: skip
        gpu = rng.integers(0, GPUS, k)
        for key, v in (("node", idx), ("t", tf), ("cause", cause), ("mech", mech), ("xid", xid),
                       ("action", action), ("d2", d2), ("outage", outage), ("gpu", gpu)):  # fmt: skip
            out[key].append(v)
        t[idx] = tf + outage
    f = {k: (np.concatenate(v) if v else np.zeros(0)) for k, v in out.items()}
    order = np.lexsort((f["node"], f["t"])) if f["t"].size else np.zeros(0, dtype=np.int64)
    return {k: v[order] for k, v in f.items()}


def _workload(rng, n_nodes, t_sim, load, max_nodes):
    """Draw jobs until their planned node-time reaches ``load`` of the fleet's."""
    shares = np.array([c[1] for c in _CLASSES])
    shares = shares / shares.sum()
    target = load * n_nodes * t_sim
    chunks = []
    total = 0.0
    while total < target:
        m = 2000
        cls = rng.choice(len(_CLASSES), size=m, p=shares)
        nodes = np.ones(m, dtype=np.int64)
        gpn = np.full(m, GPUS, dtype=np.int64)
        work = np.zeros(m)
        limit = np.zeros(m)
        ufail = np.zeros(m)
        for ci, (_, _, nodes_c, gpus_c, med, sig, lims, pf) in enumerate(_CLASSES):
            sel = np.flatnonzero(cls == ci)
            if sel.size == 0:
                continue
            if nodes_c is None:
                g, p = gpus_c
                gpn[sel] = rng.choice(g, size=sel.size, p=p)
            else:
                choices = np.array(
                    [x for x in nodes_c if x <= max_nodes] or [min(nodes_c[0], max_nodes)]
                )
                p = choices.astype(float) ** -0.8
                nodes[sel] = rng.choice(choices, size=sel.size, p=p / p.sum())
            work[sel] = np.maximum(60.0, rng.lognormal(math.log(med * 3600), sig, sel.size))
            limit[sel] = rng.choice(np.array(lims) * 3600.0, size=sel.size)
            ufail[sel] = pf
        eq = nodes * gpn / GPUS
        ns = eq * np.minimum(work, limit)
        cum = total + np.cumsum(ns)
        keep = int(np.searchsorted(cum, target, side="left")) + 1
        keep = min(keep, m)
        chunks.append(
            (cls[:keep], nodes[:keep], gpn[:keep], work[:keep], limit[:keep], ufail[:keep])
        )
        total = float(cum[keep - 1])
    cls, nodes, gpn, work, limit, ufail = (np.concatenate(x) for x in zip(*chunks, strict=True))
    m = cls.size
    # arrival times: diurnal (peak 15:00 UTC) and weekly (weekends at 60%) by thinning
    arr = np.zeros(0)
    while arr.size < m:
        c = rng.uniform(0, t_sim, 3 * m)
        hour = (c % DAY) / 3600.0
        wd = ((c // DAY).astype(np.int64)) % 7
        f = (1 + 0.5 * np.cos(2 * math.pi * (hour - 15) / 24)) * np.where(wd >= 5, 0.6, 1.0)
        arr = np.concatenate([arr, c[rng.random(c.size) * 1.5 < f]])
    arr = np.sort(arr[:m])
    return cls, nodes, gpn, work, limit, ufail, arr


def generate_a(
    out_dir: str | Path,
    *,
    seed: int,
    n_nodes: int = 512,
    days: float = 60.0,
    base_rate_per_1000_node_days: float = 6.0,
    weekly_swing: float = 0.4,
    trend: float = 1.0,
    n_lemons: int = 3,
    lemon_factor: float | tuple[float, float] = (5.0, 10.0),
    vocabulary: Vocabulary | None = None,
    cluster: str = "kestrel",
    node_prefix: str = "gpu-a",
    start: datetime = datetime(2025, 9, 1, tzinfo=UTC),
    warmup_days: float = 2.0,
    load: float = 1.0,
    node_spread: float = 0.25,
    silent_share: float = 0.04,
    requeue_share: float = 0.85,
    hc_requeue_share: float = 0.5,
    repair_median_h: float = 10.0,
    repair_sigma: float = 1.0,
    admin_drains_per_1000_node_days: float = 8.0,
    maintenance_windows: int = 2,
    prolog_error_rate: float = 2e-4,
    max_job_nodes: int | None = None,
) -> History:
    """Generate one history of site A and write its raw logs and truth under ``out_dir``.

    Parameters
    ----------
    out_dir : str or Path
        Output folder (created; files in it are overwritten).
    seed : int
        Seed of the only random generator (same seed, same files byte for byte).
    n_nodes : int
        Fleet size (8 GPUs each).
    days : float
        Length of the export window [days].
    base_rate_per_1000_node_days : float
        The healthy fleet's mean hardware failure rate [failures per 1000 node-days].
    weekly_swing : float
        CV of the fleet's weekly Gamma rate multipliers (0 = constant).
    trend : float
        Rate at the end of the simulation relative to its start (1 = none, 2 = doubling).
    n_lemons : int
        Planted lemon nodes.
    lemon_factor : float or (float, float)
        A lemon's rate relative to the base (a range: drawn uniformly per lemon).
    vocabulary : Vocabulary or None
        The site's reasons (default :data:`SITE_A_VOCABULARY`).
    cluster : str
        Cluster name.
    node_prefix : str
        Host names are ``<node_prefix>NNNN`` (zero-padded to 4 digits, from 0001).
    start : datetime
        Start of the export window (aware); a Monday keeps weeks aligned with calendar weeks.
    warmup_days : float
        Simulated days before the window (the cluster is busy when the export starts).
    load : float
        Offered load: planned node-time of the submitted jobs / fleet node-time.
    node_spread : float
        Log-sd of the healthy nodes' rate factors (0 = identical nodes).
    silent_share : float
        Share of failures that leave no event at all (the jobs end FAILED).
    requeue_share : float
        Share of jobs submitted with ``--requeue``.
    hc_requeue_share : float
        Share of health-check failures that requeue (rather than crash) requeueable jobs.
    repair_median_h, repair_sigma : float
        Lognormal repair time after a failure: median [h] and log-sd.
    admin_drains_per_1000_node_days : float
        Rate of administrative drains (not failures) [per 1000 node-days].
    maintenance_windows : int
        Planned maintenance windows (a block of contiguous nodes drained for 4-10 h).
    prolog_error_rate : float
        Probability per node of a job start that the prolog fails (job REQUEUED, node
        drained ``Prolog error``).
    max_job_nodes : int or None
        Largest job [nodes] (default ``max(2, n_nodes // 4)``).

    Returns
    -------
    History
        Paths, time zones and truth frames.
    """
    vocab = vocabulary or SITE_A_VOCABULARY
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config = {
        "generator": "A", "seed": seed, "n_nodes": n_nodes, "days": days,
        "base_rate_per_1000_node_days": base_rate_per_1000_node_days,
        "weekly_swing": weekly_swing, "trend": trend, "n_lemons": n_lemons,
        "lemon_factor": lemon_factor, "cluster": cluster, "node_prefix": node_prefix,
        "start": start.isoformat(), "warmup_days": warmup_days, "load": load,
        "node_spread": node_spread, "silent_share": silent_share,
        "requeue_share": requeue_share, "hc_requeue_share": hc_requeue_share,
        "repair_median_h": repair_median_h, "repair_sigma": repair_sigma,
        "admin_drains_per_1000_node_days": admin_drains_per_1000_node_days,
        "maintenance_windows": maintenance_windows, "prolog_error_rate": prolog_error_rate,
        "max_job_nodes": max_job_nodes, "vocabulary": asdict(vocab) if vocabulary else "site A",
    }  # fmt: skip
    ss = np.random.SeedSequence(seed)
    r_fleet, r_fail, r_admin, r_work, r_sim, r_out = (np.random.default_rng(s) for s in ss.spawn(6))
    s0 = start.astimezone(UTC)
    warm = warmup_days * DAY
    t_sim = warm + days * DAY
    epoch0 = int((s0 - timedelta(seconds=warm)).timestamp())
    t_win = warm  # window start in sim seconds
    names = [f"{node_prefix}{i + 1:04d}" for i in range(n_nodes)]

    # ---- fleet and failures
    rate_day, lemon, factor = node_base_rates(
        r_fleet, n_nodes, base_rate_per_1000_node_days, node_spread, n_lemons, lemon_factor
    )
    offset = monday_offset(epoch0)  # weeks of the rate swing are calendar weeks (UTC)
    n_weeks = math.ceil((t_sim + offset) / (7 * DAY)) + 1
    weekly = weekly_multipliers(r_fleet, n_weeks, weekly_swing)
    clock = HazardClock(weekly, trend, t_sim, offset)
    rate_s = rate_day / DAY
    F = _failures(r_fail, clock, rate_s, t_sim, silent_share, repair_median_h, repair_sigma)
    f_by_node: list[list[int]] = [[] for _ in range(n_nodes)]
    for fi, node in enumerate(F["node"].astype(np.int64)):
        f_by_node[node].append(fi)

    # ---- administrative drains (not failures), kept clear of hardware outages
    admin = _admin_drains(r_admin, vocab, n_nodes, t_sim, epoch0, admin_drains_per_1000_node_days,
                          maintenance_windows, F, f_by_node)  # fmt: skip

    # ---- workload
    max_nodes = max_job_nodes or max(2, n_nodes // 4)
    cls, jn, jg, jwork, jlim, jufail, jarr = _workload(r_work, n_nodes, t_sim, load, max_nodes)
    m = cls.size
    users = [(u, 1100 + i, _ACCOUNTS[i % len(_ACCOUNTS)]) for i, u in enumerate(_USERS)]
    uw = 1.0 / np.arange(1, len(users) + 1) ** 0.8
    uid_idx = r_work.choice(len(users), size=m, p=uw / uw.sum())
    big_users = np.array([0, 2, 5, 9])  # the pre-training teams
    uid_idx = np.where(cls == 3, big_users[r_work.integers(0, big_users.size, m)], uid_idx)
    uo = r_work.random(m)
    outcome = np.where(
        uo < jufail, 1, np.where(uo < jufail + 0.06, 2, np.where(uo < jufail + 0.08, 3, 0))
    )
    outcome = np.where((outcome == 3) & (jn > 1), 1, outcome)  # OOM: single-node jobs
    frac = r_work.beta(0.7, 2.0, m)
    exit_choices = ("1:0", "2:0", "1:0", "127:0", "0:9", "0:11", "255:0", "134:0", "1:0", "3:0")
    jexit = r_work.integers(0, len(exit_choices), m)
    jreq = r_work.random(m) < requeue_share
    hi = (r_work.random(m) < 0.10) & ((cls == 2) | (cls == 3))
    tier = np.where(cls == 4, 0, np.where(hi, 2, 1))
    pcancel = r_work.random(m) < 0.01
    cwait = r_work.exponential(2 * 3600.0, m)
    name_pick = r_work.integers(0, 1000, m)
    base_id = 3_817_204
    jobs: list[_Job] = []
    for i in range(m):
        j = _Job()
        j.i, j.jid, j.cls = i, base_id + i, int(cls[i])
        cname = _CLASSES[j.cls][0]
        pool = _NAMES[cname]
        j.name = pool[name_pick[i] % len(pool)]
        u = users[int(uid_idx[i])]
        j.user, j.uid, j.account = u
        j.tier = int(tier[i])
        j.qos = _QOS[j.tier]
        j.partition = "scavenger" if j.tier == 0 else ("interactive" if cname == "dev" else "batch")
        j.n_nodes = int(jn[i])
        j.gpn = int(jg[i]) if j.n_nodes == 1 else GPUS
        j.limit = float(jlim[i])
        j.work = float(jwork[i])
        j.outcome = int(outcome[i])
        j.frac = float(frac[i])
        j.exit = exit_choices[int(jexit[i])]
        j.requeue = bool(jreq[i])
        j.submit = float(np.floor(jarr[i]))
        j.rec_submit = j.submit
        j.eligible = j.submit
        j.done = 0.0
        j.n_att = 0
        j.n_requeue = 0
        j.seq = i
        jobs.append(j)

    sim = _SimA(
        r_sim, n_nodes, F, f_by_node, admin, vocab, jobs, t_sim, prolog_error_rate, hc_requeue_share
    )
    for j in jobs:
        sim.push(j.submit, _ARRIVE, j.i)
        if pcancel[j.i]:
            sim.push(j.submit + 60 + cwait[j.i], _CANCEL_PENDING, j.i)
    sim.run()

    return _write(out, config, vocab, r_out, sim, jobs, names, rate_day, rate_s, lemon, factor,
                  weekly, clock, F, epoch0, t_win, t_sim, s0, cluster)  # fmt: skip


def _admin_drains(rng, vocab, n_nodes, t_sim, epoch0, rate, n_windows, F, f_by_node):
    """Admin drain intervals (node, start, end, reason, user), none inside a hardware outage."""
    cand: list[tuple[int, float, float, str, str]] = []
    n = int(rng.poisson(rate / 1000.0 * n_nodes * t_sim / DAY))
    nodes = rng.integers(0, n_nodes, n)
    starts = rng.uniform(0, t_sim, n)
    lens = np.maximum(1800.0, rng.lognormal(math.log(6 * 3600.0), 1.0, n))
    for k in range(n):
        date = utc(epoch0 + int(starts[k])).strftime("%Y-%m-%d")
        tmpl = vocab.admin[int(rng.integers(0, len(vocab.admin)))]
        user = vocab.admin_users[int(rng.integers(0, len(vocab.admin_users)))]
        reason = render(tmpl, rng, date=date, admin=user.split("(")[0])
        cand.append((int(nodes[k]), float(starts[k]), float(starts[k] + lens[k]), reason, user))
    maint = next((a for a in vocab.admin if "maint" in a.lower()), vocab.admin[0])
    for _ in range(n_windows):
        size = int(min(max(8, n_nodes // 16), 64, n_nodes))
        first = int(rng.integers(0, n_nodes - size + 1))
        day = int(rng.integers(1, max(2, int(t_sim // DAY) - 1)))
        t0 = day * DAY + 14 * 3600.0
        length = float(rng.uniform(4, 10)) * 3600.0
        user = vocab.admin_users[-1 if len(vocab.admin_users) > 1 else 0]
        reason = render(maint, rng, date=utc(epoch0 + int(t0)).strftime("%Y-%m-%d"),
                        admin=user.split("(")[0])  # fmt: skip
        for node in range(first, first + size):
            cand.append((node, t0, t0 + length, reason, user))
    cand.sort(key=lambda c: (c[0], c[1]))
    kept: list[tuple[int, float, float, str, str]] = []
    last_end: dict[int, float] = {}
    ft, fo = F["t"], F["outage"]
    for node, a, b, reason, user in cand:
        if a < last_end.get(node, -1.0):
            continue
        fl = f_by_node[node]
        inside = any(ft[f] <= a < ft[f] + fo[f] for f in fl)
        if inside:
            continue
        nxt = [ft[f] for f in fl if a < ft[f] < b]
        if nxt:
            b = min(nxt)
        if b - a < 60:
            continue
        kept.append((node, a, b, reason, user))
        last_end[node] = b
    return kept


(
    _NODE_DOWN,
    _NODE_UP,
    _FAIL_PASS,
    _ADMIN_START,
    _ADMIN_END,
    _JOB_END,
    _ARRIVE,
    _CANCEL_PENDING,
    _DYN_DRAIN,
) = range(9)
_DEPTH = 120


class _SimA:
    """The event-driven scheduler and the node / job bookkeeping of generator A."""

    def __init__(
        self, rng, n_nodes, F, f_by_node, admin, vocab, jobs, t_end, prolog_rate, hc_requeue
    ):
        self.rng = rng
        self.N = n_nodes
        self.F = F
        self.jobs = jobs
        self.t_end = t_end
        self.vocab = vocab
        self.prolog_rate = prolog_rate
        self.hc_requeue = hc_requeue
        self.heap: list[tuple[float, int, int, int, int]] = []
        self.seq = 0
        self.free = np.full(n_nodes, GPUS, dtype=np.int64)
        self.down = np.zeros(n_nodes, dtype=np.int64)
        self.drain = np.zeros(n_nodes, dtype=np.int64)
        self.busy_until = np.zeros(n_nodes)
        self.node_atts: list[set[int]] = [set() for _ in range(n_nodes)]
        self.next_fail = np.full(n_nodes, np.inf)
        self.fptr = [0] * n_nodes
        self.f_by_node = f_by_node
        for n in range(n_nodes):
            if f_by_node[n]:
                self.next_fail[n] = F["t"][f_by_node[n][0]]
        self.queue: list[tuple[float, int, _Job]] = []
        self.atts: list[_Att] = []
        self.pending_cancelled: list[tuple[_Job, float]] = []
        self.events: list[dict] = []  # node-state intervals
        self.admin = admin
        self.admin_pending: dict[int, int] = {}  # node -> admin index waiting for the node to idle
        self.admin_event: dict[int, int] = {}  # admin index -> events row
        self.fail_event: dict[int, int] = {}
        self.low_alive: dict[int, _Att] = {}
        self.dirty = True  # capacity grew since the last pass: try the whole queue
        self.fresh: list[tuple[float, int, _Job]] = []  # queue entries added since the last pass
        self.last_res: tuple[np.ndarray | None, float] = (None, math.inf)
        for k, (node, a, b, _, _) in enumerate(admin):
            self.push(a, _ADMIN_START, node, k)
            self.push(b, _ADMIN_END, node, k)
        for fi in range(F["t"].size):
            node, t = int(F["node"][fi]), float(F["t"][fi])
            self.push(t, _FAIL_PASS, node, fi)
            if F["outage"][fi] > 0:
                self.push(t, _NODE_DOWN, node, fi)
                self.push(t + F["outage"][fi], _NODE_UP, node, fi)

    def push(self, t, kind, a, b=0):
        """Queue an event; every simulated time is a whole second (as Slurm records them)."""
        self.seq += 1
        heapq.heappush(self.heap, (float(math.floor(t)), kind, self.seq, int(a), int(b)))

    # -- events ----------------------------------------------------------------------------
    def run(self):
        heap = self.heap
        while heap:
            now = heap[0][0]
            if now > self.t_end:
                break
            while heap and heap[0][0] == now:
                _, kind, _, a, b = heapq.heappop(heap)
                self.handle(now, kind, a, b)
            if self.dirty and self.queue:
                self.schedule(now)
            elif self.fresh and self.queue:
                self.schedule(now, only=sorted(self.fresh))  # Slurm's quick try of new jobs
            self.dirty = False
            self.fresh = []

    def handle(self, now, kind, a, b):
        if kind == _ARRIVE:
            j = self.jobs[a]
            self.enqueue(j)
        elif kind == _JOB_END:
            self.job_end(now, self.atts[a])
        elif kind == _FAIL_PASS:
            self.fptr[a] += 1
            fl = self.f_by_node[a]
            self.next_fail[a] = self.F["t"][fl[self.fptr[a]]] if self.fptr[a] < len(fl) else np.inf
        elif kind == _NODE_DOWN:  # less capacity: no reason to run the scheduler
            self.down[a] += 1
            self.hw_event(now, a, b)
        elif kind == _NODE_UP:
            self.down[a] -= 1
            self.dirty = True
            row = self.fail_event.get(b)
            if row is not None and self.events[row]["end"] is None:
                self.events[row]["end"] = now
        elif kind == _ADMIN_START:
            self.drain[a] += 1
            _node, _, _, reason, user = self.admin[b]
            if self.node_atts[a]:
                self.admin_pending[a] = b
            else:
                self.admin_event[b] = self.add_event(a, "DRAIN", now, reason, user, "admin")
        elif kind == _ADMIN_END:
            self.drain[a] -= 1
            self.dirty = True
            if self.admin_pending.get(a) == b:
                del self.admin_pending[a]  # resumed while still draining: no record
            row = self.admin_event.get(b)
            if row is not None:
                self.events[row]["end"] = now
        elif kind == _CANCEL_PENDING:
            j = self.jobs[a]
            if j.n_att == 0 and any(e[2] is j for e in self.queue):
                self.queue = [e for e in self.queue if e[2] is not j]
                self.pending_cancelled.append((j, now))
        elif kind == _DYN_DRAIN:  # a drain Slurm sets itself (Kill task failed): b = its length [s]
            self.down[a] += 1
            row = self.add_event(
                a, "DRAIN", now, "Kill task failed", self.vocab.slurm_user, "slurm_software"
            )
            self.push(now + b, _NODE_UP, a, -1 - row)
            self.fail_event[-1 - row] = row

    def add_event(self, node, state, start, reason, user, kind, failure=-1):
        self.events.append({"node": node, "state": state, "start": start, "end": None,
                            "reason": reason, "user": user, "kind": kind, "failure_id": failure})  # fmt: skip
        return len(self.events) - 1

    def hw_event(self, now, node, fi):
        """Node-state records of a hardware failure (the node goes out of service now)."""
        F, rng, v = self.F, self.rng, self.vocab
        mech, cause = int(F["mech"][fi]), _CAUSES[int(F["cause"][fi])]
        gpu, xid = int(F["gpu"][fi]), int(F["xid"][fi])
        if mech == NR:
            row = self.add_event(node, "DOWN*", now, "Not responding", v.slurm_user, "hardware", fi)
        elif mech == HC:
            tmpl = v.hardware_reasons(cause)[int(rng.integers(0, len(v.hardware_reasons(cause))))]
            reason = render(tmpl, rng, gpu=gpu, xid=xid or None)
            busy = [self.atts[k] for k in self.node_atts[node]]
            if busy:  # recorded when DRAINED: when its last job has ended
                t_rec = max(a.end for a in busy)
                row = self.add_event(node, "DRAIN", t_rec, reason, v.slurm_user, "hardware", fi)
            else:
                row = self.add_event(node, "DRAIN", now, reason, "root(0)", "hardware", fi)
        else:  # XID with a drain or a reboot
            action, d2 = int(F["action"][fi]), float(F["d2"][fi])
            if action == _XID_REBOOT:
                row = self.add_event(node, "DOWN", now + d2, "Node unexpectedly rebooted",
                                     v.slurm_user, "hardware", fi)  # fmt: skip
            else:
                pool = v.xid_drain if rng.random() < 0.6 else v.hardware_reasons(cause)
                reason = render(pool[int(rng.integers(0, len(pool)))], rng, gpu=gpu, xid=xid)
                row = self.add_event(node, "DRAIN", now + d2, reason, "root(0)", "hardware", fi)
        self.fail_event[fi] = row

    # -- queue and attempts ----------------------------------------------------------------
    def enqueue(self, j):
        age_rate = 1.0 / 60.0  # one priority point per minute of age
        static = _QOS_W[j.tier] + 10 * j.n_nodes
        key = -(static) + j.submit * age_rate
        entry = (key, j.seq, j)
        bisect.insort(self.queue, entry)
        self.fresh.append(entry)

    def priority(self, j, now):
        return int(_QOS_W[j.tier] + 10 * j.n_nodes + min((now - j.submit) / 60.0, 10080))

    def job_end(self, now, att):
        if not att.alive:
            return
        att.alive = False
        self.low_alive.pop(att.k_global, None)
        j = att.job
        nodes = att.nodes
        self.free[nodes] += j.gpn
        self.dirty = True
        for n in nodes:
            s = self.node_atts[n]
            s.discard(att.k_global)
            if not s:
                self.busy_until[n] = 0.0
                k = self.admin_pending.pop(int(n), None)
                if k is not None:
                    _, _, _, reason, _ = self.admin[k]
                    self.admin_event[k] = self.add_event(
                        int(n), "DRAIN", now, reason, self.vocab.slurm_user, "admin"
                    )
        if att.state in ("CANCELLED", "TIMEOUT") and len(nodes) <= 4 and self.rng.random() < 0.01:
            n = int(nodes[int(self.rng.integers(0, len(nodes)))])
            self.push(
                now + self.rng.uniform(60, 240), _DYN_DRAIN, n, int(self.rng.uniform(1, 6) * 3600)
            )
        requeue = (att.state == "NODE_FAIL" and j.requeue) or att.state in ("REQUEUED", "PREEMPTED")
        if requeue and j.n_requeue < 5:
            elapsed = now - att.start
            lost = min(elapsed, float(self.rng.uniform(0, 3600)))
            j.done += max(0.0, elapsed - lost)
            j.n_requeue += 1
            j.rec_submit = now
            j.eligible = now + 120
            self.push(j.eligible, _ARRIVE, j.i)

    def start(self, j, nodes, now):
        att = _Att()
        att.job, att.k, att.submit = j, j.n_att, j.rec_submit
        j.n_att += 1
        att.start, att.nodes, att.alive = now, nodes, True
        att.fail, att.mech, att.culprit, att.cause, att.reason = -1, None, None, None, None
        att.prio = self.priority(j, now)
        att.k_global = len(self.atts)
        self.atts.append(att)
        self.free[nodes] -= j.gpn
        self.busy_until[nodes] = np.maximum(self.busy_until[nodes], now + j.limit + 60)
        for n in nodes:
            self.node_atts[n].add(att.k_global)
        if j.tier == 0:
            self.low_alive[att.k_global] = att
        rng = self.rng
        # natural end of this attempt
        if j.outcome == 0:
            rem, state, ex = j.work - j.done, "COMPLETED", "0:0"
        else:
            rem = j.frac * j.work - j.done
            state, ex = {1: ("FAILED", j.exit), 2: (f"CANCELLED by {j.uid}", "0:0"),
                         3: ("OUT_OF_MEMORY", "0:125")}[j.outcome]  # fmt: skip
        rem = max(rem, 30.0)
        if rem >= j.limit:
            end, state, ex, why = (
                now + j.limit + float(rng.uniform(0, 45)),
                "TIMEOUT",
                "0:0",
                "timeout",
            )
        else:
            end = now + rem
            why = {"COMPLETED": "completed", "FAILED": "user_exit", "OUT_OF_MEMORY": "oom"}.get(
                state, "cancelled"
            )
        # a prolog failure on one of its nodes
        if rng.random() < min(0.2, self.prolog_rate * len(nodes)):
            n = int(nodes[int(rng.integers(0, len(nodes)))])
            end = now + float(rng.uniform(1, 8))
            state, ex, why = "REQUEUED", "0:0", "prolog_error"
            att.culprit = n
            fix = float(rng.uniform(1, 8)) * 3600
            row = self.add_event(
                n, "DRAIN", end, "Prolog error", self.vocab.slurm_user, "slurm_software"
            )
            self.down[n] += 1
            self.push(end + fix, _NODE_UP, n, -1 - row)
            self.fail_event[-1 - row] = row
        else:
            nf = self.next_fail[nodes]
            i = int(np.argmin(nf))
            k = float(nf[i])
            if k < end:
                n = int(nodes[i])
                fi = self.f_by_node[n][self.fptr[n]]
                mech = int(self.F["mech"][fi])
                att.fail, att.mech, att.culprit = fi, MECH_NAMES[mech], n
                att.cause = _CAUSES[int(self.F["cause"][fi])]
                why = "hardware"
                if mech == NR:
                    end, state, ex = k, "NODE_FAIL", "0:0"
                elif mech == HC:
                    if j.requeue and rng.random() < self.hc_requeue:
                        end, state, ex = k + float(rng.uniform(0, 3)), "REQUEUED", "0:0"
                    else:
                        end, state = k + float(rng.uniform(0, 20)), "FAILED"
                        ex = ("1:0", "0:6", "134:0", "0:11", "255:0")[int(rng.integers(0, 5))]
                elif mech == XID:
                    end, state = k + float(rng.uniform(5, 180)), "FAILED"
                    ex = ("1:0", "0:6", "134:0", "0:11")[int(rng.integers(0, 4))]
                else:
                    end, state = k, "FAILED"
                    ex = ("1:0", "0:6", "0:11")[int(rng.integers(0, 3))]
        att.end = float(np.floor(end))
        if att.end < now:
            att.end = now
        att.state, att.exit, att.reason = state, ex, why
        self.push(att.end, _JOB_END, att.k_global)
        return att

    def schedule(self, now, only=None):
        """A scheduling pass: the queue in priority order, EASY backfill around the first
        job that does not fit. With ``only`` (new submissions while nothing freed up), only
        those jobs are tried, around the reservation of the last full pass."""
        G = GPUS
        usable = (self.down == 0) & (self.drain == 0)
        free = self.free
        full = usable & (free == G)
        n_full = int(full.sum())
        part = usable & (free > 0)
        part_max = int(free[part].max()) if part.any() else 0
        if part_max == 0 and not any(e[2].tier == 2 and e[2].eligible <= now for e in self.queue):
            return  # no free GPU anywhere and nobody who may preempt
        if only is None:
            self.last_res = (None, math.inf)
        reserved, shadow = self.last_res
        n_unres = n_full if reserved is None else int((full & ~reserved).sum())
        started: list[tuple[float, int, _Job]] = []
        tested = 0
        for entry in self.queue if only is None else only:
            j = entry[2]
            if j.eligible > now:
                continue
            tested += 1
            if tested > _DEPTH:
                break
            fits_before = now + j.limit + 60 <= shadow
            if j.gpn == G:
                k = j.n_nodes
                if reserved is None:
                    if n_full >= k:
                        nodes = _contiguous(full, k)
                    elif j.tier == 2 and self.preempt(j, now, usable):
                        full = usable & (free == G)
                        n_full = int(full.sum())
                        nodes = _contiguous(full, k) if n_full >= k else None
                    elif only is None:
                        nodes = None
                        reserved, shadow = self.reserve(k, now, usable, full)
                        n_unres = int((full & ~reserved).sum())
                        self.last_res = (reserved, shadow)
                    else:
                        nodes = None
                else:
                    if (n_full if fits_before else n_unres) < k:
                        continue
                    cand = full if fits_before else full & ~reserved
                    nodes = _contiguous(cand, k)
                if nodes is None:
                    continue
                full[nodes] = False
                n_full -= k
                if reserved is not None:
                    n_unres -= int((~reserved[nodes]).sum())
            else:
                g = j.gpn
                if part_max < g:
                    continue
                cand = usable & (free >= g)
                if reserved is not None and not fits_before:
                    cand &= ~reserved
                idx = np.flatnonzero(cand)
                if idx.size == 0:
                    continue
                score = free[idx] * (self.N + 1) - idx
                n = int(idx[int(np.argmin(score))])
                nodes = np.array([n])
                if full[n]:
                    full[n] = False
                    n_full -= 1
                    if reserved is not None and not reserved[n]:
                        n_unres -= 1
            self.start(j, nodes, now)
            started.append(entry)
            part = usable & (free > 0)
            part_max = int(free[part].max()) if part.any() else 0
            if part_max == 0:
                break  # the machine is full
        for entry in started:
            del self.queue[bisect.bisect_left(self.queue, entry)]

    def reserve(self, k, now, usable, full):
        rel = np.where(full, now, np.maximum(self.busy_until, now))
        rel = np.where(usable, rel, np.inf)
        if k > self.N:
            return np.zeros(self.N, dtype=bool), math.inf
        order = np.argpartition(rel, k - 1)[:k]
        res = np.zeros(self.N, dtype=bool)
        shadow = float(rel[order].max())
        if math.isfinite(shadow):
            res[order] = True
        return res, shadow

    def preempt(self, j, now, usable):
        """Preempt low-QOS jobs (newest first) so that a high-QOS job fits; True if it does."""
        k = j.n_nodes
        full = usable & (self.free == GPUS)
        low = sorted(self.low_alive.values(), key=lambda a: (-a.start, a.k_global))
        gain = full.copy()
        chosen = []
        for a in low:
            if int(gain.sum()) >= k:
                break
            if not usable[a.nodes].all():
                continue
            # its nodes become free only if nothing else runs there
            if all(len(self.node_atts[n]) == 1 for n in a.nodes):
                chosen.append(a)
                gain[a.nodes] = True
        if int(gain.sum()) < k or not chosen:
            return False
        for a in chosen:
            a.end, a.state, a.exit, a.reason = now, "PREEMPTED", "0:0", "preempted"
            a.fail, a.mech, a.culprit, a.cause = -1, None, None, None
            self.job_end(now, a)
        return True


def _contiguous(mask, k):
    """Pick ``k`` nodes of ``mask``: the best-fitting run of consecutive indices, else the
    largest runs together."""
    m = np.concatenate(([0], mask.astype(np.int8), [0]))
    d = np.diff(m)
    st = np.flatnonzero(d == 1)
    ln = np.flatnonzero(d == -1) - st
    if ln.sum() < k:
        return None
    ok = np.flatnonzero(ln >= k)
    if ok.size:
        j = ok[int(np.argmin(ln[ok]))]
        return np.arange(st[j], st[j] + k)
    order = np.argsort(-ln, kind="stable")
    picked: list[np.ndarray] = []
    need = k
    for j in order:
        take = min(need, int(ln[j]))
        picked.append(np.arange(st[j], st[j] + take))
        need -= take
        if need == 0:
            break
    return np.sort(np.concatenate(picked))


@functools.cache
def _tres_a(k: int, gpn: int) -> tuple[str, str, str, str]:
    """AllocTRES, ReqTRES, the batch step's TRES and an srun step's TRES of a job of ``k``
    nodes and ``gpn`` GPUs per node (24 cores and 250 GB per GPU)."""
    g = gpn * k
    cpu, mem = 24 * g, f"{250 * g}G"
    alloc = tres(
        {"billing": cpu, "cpu": cpu, "gres/gpu:h100": g, "gres/gpu": g, "mem": mem, "node": k}
    )
    req = tres({"billing": cpu, "cpu": cpu, "gres/gpu": g, "mem": mem, "node": k})
    node = tres(
        {"cpu": 24 * gpn, "gres/gpu:h100": gpn, "gres/gpu": gpn, "mem": f"{250 * gpn}G", "node": 1}
    )
    step = tres({"cpu": cpu, "gres/gpu:h100": g, "gres/gpu": g, "mem": mem, "node": k})
    return alloc, req, node, step


def _write(out, config, vocab, rng, sim, jobs, names, rate_day, rate_s, lemon, factor, weekly,
           clock, F, epoch0, t_win, t_sim, s0, cluster):  # fmt: skip
    """Export window, sacct / sacctmgr / kernel files and the truth."""
    obs = t_sim
    # ---- attempts in the export: ended at or after the window start, or still open
    recs = []  # (job, k, submit, start, end, state, exit, nodes, prio, att or None)
    for a in sim.atts:
        if a.end > obs:  # still running at the export
            recs.append(
                (a.job, a.submit, a.start, None, "RUNNING", "0:0", a.nodes, a.prio, a, "running")
            )
        elif a.end >= t_win:
            recs.append(
                (a.job, a.submit, a.start, a.end, a.state, a.exit, a.nodes, a.prio, a, a.reason)
            )
    for j, t in sim.pending_cancelled:
        if t >= t_win:
            recs.append((j, j.rec_submit, None, t, f"CANCELLED by {j.uid}", "0:0", np.zeros(0, np.int64),
                         sim.priority(j, t), None, "cancelled"))  # fmt: skip
    for _, _, j in sim.queue:
        if j.rec_submit <= obs:
            recs.append((j, j.rec_submit, None, None, "PENDING", "0:0", np.zeros(0, np.int64),
                         sim.priority(j, obs), None, "pending"))  # fmt: skip
    # attempt numbers as the package gives them: by start time within the job, unstarted last
    recs.sort(key=lambda r: (r[0].jid, r[2] is None, r[2] if r[2] is not None else 0, r[1]))
    att_no = []
    prev, k = None, 0
    for r in recs:
        k = k + 1 if r[0].jid == prev else 0
        prev = r[0].jid
        att_no.append(k)
    # ---- sacct lines, in the order records were created (requeues when they happened)
    order = sorted(range(len(recs)), key=lambda i: (recs[i][1], recs[i][0].jid, att_no[i]))

    def ts(t):  # SLURM_TIME_FORMAT=%s
        return "Unknown" if t is None else str(epoch0 + int(t))

    rows: list[list[str]] = []
    for i in order:
        j, sub, st, en, state, ex, nodes, prio, att, _ = recs[i]
        t_sub, t_st, t_en = ts(sub), ts(st), ts(en)
        if st is None and en is not None:
            t_st = "None"
        ran = st is not None
        hl = compress_hostlist([names[n] for n in nodes]) if ran else "None assigned"
        k = j.n_nodes
        alloc_tres, req, node_tres, step_tres = _tres_a(k, j.gpn)
        alloc = alloc_tres if ran else ""
        rows.append([str(j.jid), j.name, str(j.jid), cluster, j.partition, j.account, j.user, j.qos,
                     str(prio), state, ex, t_sub, t_st, t_en, duration(int(j.limit)), str(k),
                     alloc, req, hl])  # fmt: skip
        if not ran or (att is not None and att.reason == "prolog_error"):
            continue
        # steps: batch (first node), extern (all nodes), .0 (srun across the nodes) for multi-node
        plain = state.split(" ")[0]
        step_end = t_en
        if plain == "RUNNING":
            bst, bex, est, eex = "RUNNING", "0:0", "RUNNING", "0:0"
        elif plain == "COMPLETED":
            bst, bex, est, eex = "COMPLETED", "0:0", "COMPLETED", "0:0"
        elif plain == "FAILED":
            bst, bex, est, eex = "FAILED", ex, "COMPLETED", "0:0"
        elif plain == "NODE_FAIL":
            bst, bex, est, eex = "CANCELLED", "", "CANCELLED", ""
        elif plain == "OUT_OF_MEMORY":
            bst, bex, est, eex = "OUT_OF_MEMORY", "0:125", "COMPLETED", "0:0"
        else:  # REQUEUED, PREEMPTED, TIMEOUT, CANCELLED by
            bst, bex, est, eex = "CANCELLED", "0:15", "COMPLETED", "0:0"
        if bst == "CANCELLED" and bex == "0:15" and en is not None and en + 1 <= t_sim:
            step_end = ts(en + 1)
        first = names[int(nodes[0])]
        for step, sname, sst, sex, snodes, stres, send in (
            ("batch", "batch", bst, bex, "1", node_tres, step_end),
            ("extern", "extern", est, eex, str(k), alloc, t_en),
        ):
            rows.append([f"{j.jid}.{step}", sname, f"{j.jid}.{step}", cluster, "", j.account, "", "", "",
                         sst, sex, t_st, t_st, send, "", snodes, stres, "", first if step == "batch" else hl])  # fmt: skip
        if k > 1:
            s0_ = st + 5 if en is None else min(st + 5, en)
            t0 = ts(s0_)
            sst = bst if bst != "FAILED" else "FAILED"
            rows.append([f"{j.jid}.0", "python", f"{j.jid}.0", cluster, "", j.account, "", "", "",
                         sst, bex, t0, t0, t_en, "", str(k), step_tres, "", hl])  # fmt: skip
    sacct = out / "sacct.psv"
    write_psv(sacct, SACCT_FIELDS, rows)

    # ---- node-state events: cut overlaps (a new state closes the previous one), window
    ev = sorted(sim.events, key=lambda e: (e["node"], e["start"]))
    for a, b in itertools.pairwise(ev):
        if a["node"] == b["node"] and (a["end"] is None or a["end"] > b["start"]):
            a["end"] = b["start"]
    ev = [
        e
        for e in ev
        if e["start"] <= obs
        and (e["end"] is None or e["end"] >= t_win)
        and (e["end"] is None or e["end"] > e["start"])
    ]
    for e in ev:
        e["start"] = float(np.floor(e["start"]))
        if e["end"] is not None:
            e["end"] = float(np.floor(e["end"]))
            if e["end"] > obs:
                e["end"] = None
    st_txt = format_times(np.array([e["start"] for e in ev], dtype=np.int64), epoch0, None)
    en_txt = format_times(
        np.array([-1 if e["end"] is None else e["end"] for e in ev], dtype=np.int64), epoch0, None
    )
    ev_rows = [
        [cluster, "", str(epoch0 - 40 * 86400 + 1234), "Unknown", "", "Cluster Registered TRES", ""]
    ]
    for e, a, b in zip(ev, st_txt, en_txt, strict=True):
        ev_rows.append([cluster, names[e["node"]], a, b, e["state"], e["reason"], e["user"]])
    events = out / "sacctmgr_events.psv"
    write_psv(events, EVENT_FIELDS, ev_rows)

    # ---- kernel log (one syslog file, UTC)
    klines = _kernel_lines(rng, sim, jobs, F, names, t_win, obs)
    klines.sort(key=lambda x: (x[0], x[1]))
    ktimes = format_times(
        np.array([int(x[0]) for x in klines], dtype=np.int64), epoch0, "UTC", fmt="%b %e %H:%M:%S"
    )
    kern = out / "kern.log"
    kern.write_text(
        "".join(
            f"{ts} {names[n]} kernel: [{up:12.6f}] {msg}\n"
            for ts, (_, n, up, msg) in zip(ktimes, klines, strict=True)
        )
    )
    kyear = utc(epoch0 + int(klines[0][0])).year if klines else utc(epoch0 + int(t_win)).year

    # ---- truth
    n_rec = len(recs)
    idx_lists = [np.asarray(r[6], dtype=np.int64) for r in recs]
    starts = np.array([-1.0 if r[2] is None else r[2] for r in recs])
    stops = np.array([obs if r[3] is None else r[3] for r in recs])
    hz, nd = attempt_hazard(idx_lists, starts, stops, rate_s, clock)
    att_of = [r[8] for r in recs]
    hw = np.array(
        [
            a is not None and a.fail >= 0 and r[4] != "RUNNING"
            for a, r in zip(att_of, recs, strict=True)
        ]
    )
    attempts = pl.DataFrame(
        {
            "cluster": [cluster] * n_rec,
            "job_id": [str(r[0].jid) for r in recs],
            "attempt": att_no,
            "raw_job_id": [str(r[0].jid) for r in recs],
            "name": [r[0].name for r in recs],
            "user": [r[0].user for r in recs],
            "qos": [r[0].qos for r in recs],
            "state": [r[4].split(" ")[0] for r in recs],
            "exit_code": [r[5] for r in recs],
            "submit_time": to_datetime(np.array([r[1] for r in recs]), epoch0),
            "start_time": to_datetime(starts, epoch0),
            "end_time": to_datetime(
                np.array([-1.0 if r[3] is None else r[3] for r in recs]), epoch0
            ),
            "nodes": node_lists(idx_lists, names),
            "n_nodes": [r[0].n_nodes for r in recs],
            "n_gpus": [r[0].n_nodes * r[0].gpn for r in recs],
            "hardware": hw.tolist(),
            "mechanism": [a.mech if h else None for a, h in zip(att_of, hw, strict=True)],
            "culprit_node": [
                names[a.culprit]
                if (a is not None and a.culprit is not None and (h or a.reason == "prolog_error"))
                else None
                for a, h in zip(att_of, hw, strict=True)
            ],
            "cause": [
                a.cause
                if h
                else ("software" if a is not None and a.reason == "prolog_error" else None)
                for a, h in zip(att_of, hw, strict=True)
            ],
            "failure_id": [int(a.fail) if h else None for a, h in zip(att_of, hw, strict=True)],
            "end_reason": [r[9] for r in recs],
            "resubmit_of": [None] * n_rec,  # users do not resubmit here: --requeue
            "ambiguous_local_time": [False] * n_rec,  # epoch times
            "true_hazard": hz,
            "node_days": nd,
        },
        schema_overrides={"attempt": pl.UInt16, "failure_id": pl.Int64, "resubmit_of": pl.String},
    ).sort("job_id", "attempt")
    hits = attempts.filter(pl.col("hardware")).group_by("failure_id").len()
    hit_map = dict(zip(hits["failure_id"].to_list(), hits["len"].to_list(), strict=True))
    # every attempt a failure ended, also those outside the export window
    all_hits: dict[int, int] = {}
    for a in sim.atts:
        if a.fail >= 0 and a.end <= obs:
            all_hits[a.fail] = all_hits.get(a.fail, 0) + 1
    nf = F["t"].size
    failures = pl.DataFrame(
        {
            "failure_id": np.arange(nf),
            "node": [names[int(n)] for n in F["node"]],
            "time": to_datetime(np.floor(F["t"]), epoch0),
            "mechanism": [MECH_NAMES[int(x)] for x in F["mech"]],
            "cause": [_CAUSES[int(c)] for c in F["cause"]],
            "xid": [int(x) if x else None for x in F["xid"]],
            "silent": (F["mech"] == SILENT).tolist(),
            "outage_end": to_datetime(np.floor(F["t"] + F["outage"]), epoch0),
            "attempts_hit": [all_hits.get(i, 0) for i in range(nf)],
            "attempts_hit_in_export": [hit_map.get(i, 0) for i in range(nf)],
            "in_window": (F["t"] >= t_win).tolist(),
        },
        schema_overrides={"xid": pl.Int64},
    ).with_columns(hit_job=pl.col("attempts_hit") > 0)
    nodes = pl.DataFrame({"node": names, "index": np.arange(len(names)), "base_rate_per_day": rate_day,
                          "factor": factor, "is_lemon": lemon})  # fmt: skip
    ws = clock.week_starts()
    weeks = pl.DataFrame(
        {
            "week": np.arange(weekly.size),
            "multiplier": weekly,
            "trend_factor": np.exp(clock.kappa * np.maximum(ws, 0)),
        }
    ).with_columns(
        week_start=(
            pl.Series((ws + epoch0) * 1e6)
            .cast(pl.Int64)
            .cast(pl.Datetime("us"))
            .dt.replace_time_zone("UTC")
        )
    )
    node_events = pl.DataFrame(
        {
            "node": [names[e["node"]] for e in ev],
            "state": [e["state"] for e in ev],
            "start": to_datetime(np.array([e["start"] for e in ev]), epoch0),
            "end": to_datetime(
                np.array([-1.0 if e["end"] is None else e["end"] for e in ev]), epoch0
            ),
            "reason": [e["reason"] for e in ev],
            "user": [e["user"] for e in ev],
            "kind": [e["kind"] for e in ev],
            "failure_id": [e["failure_id"] if e["failure_id"] >= 0 else None for e in ev],
        },
        schema_overrides={"failure_id": pl.Int64},
    )
    h = History(
        generator="A", out_dir=out, cluster=cluster, sacct=sacct, events=events, kernel=[kern],
        tz=None, kernel_tz="UTC", kernel_year=kyear, start=s0, end=utc(epoch0 + int(obs)),
        gpus_per_node=GPUS, attempts=attempts, nodes=nodes, failures=failures, weeks=weeks,
        node_events=node_events, config=config,
    )  # fmt: skip
    write_truth(h)
    return h


def _kernel_lines(rng, sim, jobs, F, names, t_win, obs):
    """(time, node, uptime, message) of every NVRM line in the window."""
    n_nodes = len(names)
    boot = rng.uniform(1, 40, n_nodes) * DAY  # uptime at t = 0
    lines: list[tuple[float, int, float, str]] = []

    def add(t, n, msg):
        if t_win <= t <= obs:
            lines.append((float(np.floor(t)), int(n), float(boot[n] + t), msg))

    for fi in range(F["t"].size):
        t, n = float(F["t"][fi]), int(F["node"][fi])
        mech, xid, gpu = int(F["mech"][fi]), int(F["xid"][fi]), int(F["gpu"][fi])
        pci = _PCI[gpu]
        if mech == XID or (mech == HC and xid and rng.random() < 0.3):
            tx = t if mech == XID else t - float(rng.uniform(5, 120))
            if xid == 79 and rng.random() < 0.5:
                add(
                    tx,
                    n,
                    f"NVRM: GPU at PCI:{pci}: GPU-{rng.integers(0, 2**32):08x}-5e2c-a1f0-3b7d-{rng.integers(0, 2**48):012x}",
                )
            add(tx, n, f"NVRM: Xid (PCI:{pci}): {xid}, {xid_message(xid, rng, gpu)}")
            if xid in (48, 95) and rng.random() < 0.5:
                add(
                    tx + 1,
                    n,
                    f"NVRM: Xid (PCI:{pci}): 45, pid={int(rng.integers(2000, 4_000_000))}, name=python, Ch 00000008",
                )
    # user bugs that print an Xid as the job dies (not hardware: Xid 13 / 31 / 43)
    for a in sim.atts:
        if a.state == "FAILED" and a.fail < 0 and a.end <= obs and rng.random() < 0.15:
            n = int(a.nodes[int(rng.integers(0, len(a.nodes)))])
            code = (13, 31, 43)[int(rng.integers(0, 3))]
            gpu = int(rng.integers(0, GPUS))
            add(
                a.end - float(rng.uniform(1, 30)),
                n,
                f"NVRM: Xid (PCI:{_PCI[gpu]}): {code}, {xid_message(code, rng, gpu)}",
            )
    # background: row-remap notices and kernel chatter that is not NVIDIA's
    n_bg = int(rng.poisson(0.01 * n_nodes * (obs - t_win) / DAY))
    for _ in range(n_bg):
        t, n, gpu = (
            float(rng.uniform(t_win, obs)),
            int(rng.integers(0, n_nodes)),
            int(rng.integers(0, GPUS)),
        )
        u = rng.random()
        if u < 0.4:
            add(t, n, f"NVRM: Xid (PCI:{_PCI[gpu]}): 63, {xid_message(63, rng, gpu)}")
        elif u < 0.7:
            add(
                t,
                n,
                "mlx5_core 0000:0c:00.0: mlx5_pcie_event:298:(pid 0): PCIe slot advertised sufficient power (27W).",
            )
        else:
            add(t, n, "EDAC MC1: 1 CE memory read error on CPU_SrcID#1_Ha#0_Chan#1_DIMM#0")
    return lines
