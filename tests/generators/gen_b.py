"""Generator B: a time-stepped first-fit Slurm cluster with random placement, no automatic
requeue (users resubmit under a new JobID), job arrays, and local times in a named zone.

The world (times in seconds since the window start ``t = 0``; no warm-up: the export covers
the cluster's history from an empty machine):

* **Fleet**: ``n_nodes`` nodes of 4 GPUs (``gres/gpu:a100``) in racks of ``rack_size``, named
  ``r<rack>n<slot>`` (``r03n17``), in cluster ``cluster``; host lists are fragmented across
  racks (``r01n[03,07-08],r04n12``).
* **Hardware failures**: the same failure law as generator A (Poisson per node, base rate
  ``base_rate_per_1000_node_days`` per 1000 node-days times a lognormal node factor of log-sd
  ``node_spread`` or ``lemon_factor`` for ``n_lemons`` lemons, times weekly Gamma
  multipliers of CV ``weekly_swing``, times ``trend ** (t / T)``), but sampled differently:
  candidates of a homogeneous process at the maximal intensity are thinned by ``m(t) / m_max``,
  and failures falling inside the repair of an earlier one are dropped (for a Poisson process
  this is the same law as stopping the clock during repairs). Mechanisms:

  - ``not_responding``: ``DOWN*`` "Not responding" (SlurmUser) and ``NODE_FAIL`` at once;
  - ``health_check``: the check drains the node (``DRAIN``, User ``root(0)``, recorded when
    requested: this site's Slurm records drains at request time) and the jobs end ``FAILED``
    0-30 s later;
  - ``xid``: an NVRM Xid in the node's kernel log, the jobs ``FAILED`` 10-300 s later, then a
    drain 5-60 min later (share 0.7) whose reason may or may not name the Xid;
  - ``silent`` (share ``silent_share``): the jobs end ``FAILED`` with no trace.

  Repairs are lognormal (median ``repair_median_h`` h, log-sd ``repair_sigma``); half of the
  repairs longer than a day are turned into an RMA: an admin sets the node ``DOWN`` with a
  hardware reason a few hours after the drain.
* **Not failures**: admin drains by named admins (``admin_drains_per_1000_node_days``, reasons
  from ``vocabulary.admin``), ``maintenance_windows`` rack-wide drains, and ``Epilog error``
  drains Slurm sets after some jobs end (``epilog_error_rate`` per node). Running jobs are
  never killed by a drain.
* **Workload**: single-node jobs (1, 2 or 4 GPUs), multi-node jobs (2-16 nodes, any count),
  large jobs (up to ``max_job_nodes``), and job arrays of 1-GPU tasks (``123_4``; the split
  tasks get new JobIDRaw values as they start, the last one keeps the array's, an
  unstarted remainder is one ``PENDING`` record ``123_[5-9%8]``), with QOS ``debug`` /
  ``normal`` / ``long``. User failures, cancellations, timeouts and OOM as in A. A job ended
  by a hardware failure (``NODE_FAIL`` or ``FAILED``) is resubmitted by its user under a new
  JobID with the same name (share ``resubmit_share``, after a delay of 2 min to a few
  hours), and so are some timed-out jobs.
* **Scheduler**: every ``sched_interval_s`` seconds (skipping intervals where nothing
  happened) pending jobs in submit order start wherever they fit (first fit), on nodes chosen
  at random among the idle healthy ones (sub-node jobs on a random node with enough free
  GPUs); a job waiting longer than ``starve_h`` hours that does not fit blocks the jobs
  behind it until it starts.
* **Outputs**: ``sacct.psv`` (``sacct --allusers --duplicates --parsable2``, local time in
  ``tz``, no step lines), ``sacctmgr_events.psv`` (local time), ``kernel/<node>.log`` (one
  syslog file per node that logged anything, local time; each starts with the driver's load
  message at boot) and ``truth/``.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import math
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

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
    misread_local,
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

__all__ = ["SITE_B_VOCABULARY", "generate_b"]

GPUS = 4
#: site B's reasons: home-grown health-check scripts, RT tickets, terse admin notes
SITE_B_VOCABULARY = Vocabulary(
    hardware={
        "gpu": (
            "hc: gpu_count 3/4",
            "GPU lost - nvidia-smi hangs",
            "GPU{gpu} unresponsive",
            "dcgm health: GPU {gpu} FAIL",
            "gpu fell off the bus",
        ),
        "gpu_memory": (
            "uncorrectable ECC GPU{gpu}",
            "hc: retired pages pending gpu{gpu}",
            "SRAM ECC gpu:{gpu}",
            "hc: remapped rows failure",
        ),
        "nvlink": (
            "NVL: link {port} inactive gpu{gpu}",
            "nvlink replay errors high",
            "NVLink error",
        ),
        "ib_link": ("ib0 no link", "HCA error mlx5_{port}", "IB port down mlx5_0"),
        "nic": ("bond0 degraded",),
        "psu": ("psu2 failed (ipmi)", "PSU redundancy lost", "BMC SEL: critical event"),
        "dimm": ("DIMM error P1-DIMMA1", "mce: memory errors", "memory less than configured"),
        "cpu": ("overheating CPU1", "mce: cpu machine check"),
        "disk": ("scratch ssd failed", "hc: /tmp read-only"),
        "machine": ("node hung, powercycled", "node unhealthy - see ops", "thermal throttle"),
        "unknown": ("check node - RT#{ticket}", "hc failed", "see ops"),
    },
    xid_drain=(
        "Xid{xid} GPU{gpu}",
        "Xid {xid} gpu{gpu} - RT#{ticket}",
        "Xid={xid} uncontained",
        "hc: gpu_count 3/4",
        "GPU{gpu} unresponsive",
        "check node - RT#{ticket}",
    ),
    admin=(
        "maintenance window {date}",
        "OS upgrade rocky9",
        "RESV: benchmark",
        "reserved for acceptance tests",
        "admin: testing new driver 550.54",
        "rack {rack} recabling",
        "draining for reinstall",
        "Wartung {date} ({admin})",
    ),
    admin_users=("mmueller(2001)", "tkowalski(2044)", "root(0)"),
    slurm_user="slurm(450)",
)

_CAUSES = (
    "gpu",
    "gpu_memory",
    "nvlink",
    "ib_link",
    "nic",
    "psu",
    "dimm",
    "cpu",
    "disk",
    "machine",
    "unknown",
)
_CAUSE_P = np.array([0.28, 0.22, 0.06, 0.12, 0.02, 0.06, 0.07, 0.03, 0.04, 0.06, 0.04])
# (not_responding, health_check, xid) per cause
_MECH_P = {
    "gpu": (0.25, 0.25, 0.50), "gpu_memory": (0.05, 0.35, 0.60), "nvlink": (0.0, 0.4, 0.6),
    "ib_link": (0.3, 0.7, 0.0), "nic": (0.5, 0.5, 0.0), "psu": (0.9, 0.1, 0.0),
    "dimm": (0.6, 0.4, 0.0), "cpu": (0.6, 0.4, 0.0), "disk": (0.2, 0.8, 0.0),
    "machine": (0.8, 0.2, 0.0), "unknown": (0.6, 0.4, 0.0),
}  # fmt: skip
_XIDS = {
    "gpu": ((79, 119, 61, 31), (0.55, 0.25, 0.1, 0.1)),
    "gpu_memory": ((48, 95, 63, 94, 92), (0.4, 0.3, 0.1, 0.1, 0.1)),
    "nvlink": ((74,), (1.0,)),
}
NR, HC, XID, SILENT = 0, 1, 2, 3
MECH_NAMES = ("not_responding", "health_check", "xid", "silent")
_PCI = ("0000:07:00", "0000:46:00", "0000:85:00", "0000:c7:00")
_USERS = (
    "kx3041", "mb7712", "ts0925", "hl5530", "rv2207", "jn8164", "ap4490", "dw1375", "sf6602",
    "yo3318", "ce9051", "gu2746", "lp5183", "nz7629", "ob1407", "qi8830", "ue4265", "wa0592",
    "xb6637", "zc2918",
)  # fmt: skip
_ACCOUNTS = ("proj0007", "proj0012", "proj0031", "proj0044", "proj0058")
_NAMES_SINGLE = ("train.sh", "run_md", "bert-ft", "infer", "cryoem_refine", "jupyter", "python")
_NAMES_MULTI = ("lammps_gpu", "ddp_train", "gromacs", "wrf-gpu", "vasp_job", "nemo_pt")
_NAMES_LARGE = ("gpt-pretrain", "climate-ens", "lattice_qcd")
_NAMES_ARRAY = ("sweep", "dock_screen", "param_scan", "eval_seed")


class _Job:
    __slots__ = (
        "account", "arr", "done", "exit", "frac", "gpn", "jid", "limit", "n_nodes",
        "name", "outcome", "partition", "qos", "raw", "resubmit_of", "submit", "task", "uid",
        "user", "work",
    )  # fmt: skip


def _failures(rng, clock, rate_s, t_end, silent_share, repair_median_h, repair_sigma):
    """Thinning: candidates at the maximal intensity, accepted with m(t)/m_max, then failures
    inside an earlier failure's repair dropped."""
    m_max = clock.max_factor(t_end)
    counts = rng.poisson(rate_s * m_max * t_end)
    node = np.repeat(np.arange(rate_s.size), counts)
    t = rng.uniform(0, t_end, node.size)
    keep = rng.random(node.size) * m_max < clock.factor(t)
    node, t = node[keep], np.floor(t[keep])
    order = np.lexsort((t, node))
    node, t = node[order], t[order]
    k = node.size
    cum_p = np.cumsum(_CAUSE_P / _CAUSE_P.sum())
    cause = np.minimum(np.searchsorted(cum_p, rng.random(k), side="right"), len(_CAUSES) - 1)
    mt = np.cumsum(np.array([_MECH_P[c] for c in _CAUSES])[cause], axis=1)
    u = rng.random(k)
    mech = np.where(u < mt[:, 0], NR, np.where(u < mt[:, 1], HC, XID))
    xid = np.zeros(k, dtype=np.int64)
    ux = rng.random(k)
    for ci, c in enumerate(_CAUSES):
        if c in _XIDS:
            codes, p = _XIDS[c]
            sel = cause == ci
            xid[sel] = np.asarray(codes)[
                np.minimum(np.searchsorted(np.cumsum(p), ux[sel], side="right"), len(codes) - 1)
            ]
    mech = np.where((mech == XID) & (xid == 0), HC, mech)
    mech = np.where(rng.random(k) < silent_share, SILENT, mech)
    drain_after = rng.random(k) < 0.7
    d2 = rng.uniform(300, 3600, k)
    repair = np.maximum(1800.0, rng.lognormal(math.log(repair_median_h * 3600.0), repair_sigma, k))
    rma = (repair > DAY) & (rng.random(k) < 0.5)
    rma_at = rng.uniform(1, 6, k) * 3600.0
    outage = np.select(
        [mech == SILENT, (mech == XID) & ~drain_after, mech == XID], [0.0, 0.0, d2 + repair], repair
    )
    gpu = rng.integers(0, GPUS, k)
    kept = np.ones(k, dtype=bool)
    busy_until, last = -1.0, -1
    for i in range(k):  # drop failures during the repair of an earlier one (same node)
        if node[i] != last:
            last, busy_until = node[i], -1.0
        if t[i] < busy_until:
            kept[i] = False
            continue
        busy_until = t[i] + outage[i]
    f = {"node": node, "t": t, "cause": cause, "mech": mech, "xid": xid, "drain_after": drain_after,
         "d2": d2, "outage": outage, "rma": rma, "rma_at": rma_at, "gpu": gpu}  # fmt: skip
    f = {key: v[kept] for key, v in f.items()}
    o = np.lexsort((f["node"], f["t"]))
    return {key: v[o] for key, v in f.items()}


def generate_b(
    out_dir: str | Path,
    *,
    seed: int,
    n_nodes: int = 512,
    days: float = 60.0,
    base_rate_per_1000_node_days: float = 8.0,
    weekly_swing: float = 0.5,
    trend: float = 1.0,
    n_lemons: int = 4,
    lemon_factor: float | tuple[float, float] = (5.0, 10.0),
    vocabulary: Vocabulary | None = None,
    cluster: str = "tern",
    tz: str = "America/Chicago",
    start: datetime | None = None,
    rack_size: int = 32,
    load: float = 0.9,
    node_spread: float = 0.2,
    silent_share: float = 0.05,
    resubmit_share: float = 0.75,
    repair_median_h: float = 18.0,
    repair_sigma: float = 1.2,
    admin_drains_per_1000_node_days: float = 5.0,
    maintenance_windows: int = 1,
    epilog_error_rate: float = 2e-4,
    sched_interval_s: int = 60,
    starve_h: float = 6.0,
    max_job_nodes: int | None = None,
) -> History:
    """Generate one history of site B and write its raw logs and truth under ``out_dir``.

    Parameters
    ----------
    out_dir : str or Path
        Output folder (created; files in it are overwritten).
    seed : int
        Seed of the only random generator (same seed, same files byte for byte).
    n_nodes : int
        Fleet size (4 GPUs each).
    days : float
        Length of the history [days].
    base_rate_per_1000_node_days : float
        The healthy fleet's mean hardware failure rate [failures per 1000 node-days].
    weekly_swing : float
        CV of the weekly Gamma rate multipliers (0 = constant).
    trend : float
        Rate at the end relative to the start (1 = none).
    n_lemons : int
        Planted lemon nodes.
    lemon_factor : float or (float, float)
        A lemon's rate relative to the base (a range: uniform per lemon).
    vocabulary : Vocabulary or None
        The site's reasons (default :data:`SITE_B_VOCABULARY`).
    cluster : str
        Cluster name.
    tz : str
        IANA zone the site's Slurm prints local times in (sacct, sacctmgr, syslog). A history
        that spans a fall-back DST change prints ambiguous local times, as Slurm does.
    start : datetime or None
        Start (aware); default midnight of Monday 2025-03-17 in ``tz``.
    rack_size : int
        Nodes per rack (host names ``r<rack>n<slot>``).
    load : float
        Offered load: planned node-time of the submitted jobs / fleet node-time.
    node_spread : float
        Log-sd of the healthy nodes' rate factors.
    silent_share : float
        Share of failures with no trace.
    resubmit_share : float
        Share of hardware-ended jobs that their users resubmit (new JobID, same name).
    repair_median_h, repair_sigma : float
        Lognormal repair time: median [h] and log-sd.
    admin_drains_per_1000_node_days : float
        Rate of administrative drains [per 1000 node-days].
    maintenance_windows : int
        Rack-wide planned drains.
    epilog_error_rate : float
        Probability per node of a job end that the epilog fails (node drained).
    sched_interval_s : int
        Scheduler period [s].
    starve_h : float
        Wait [h] after which a job that does not fit blocks the jobs behind it.
    max_job_nodes : int or None
        Largest job [nodes] (default ``max(2, n_nodes // 4)``).

    Returns
    -------
    History
        Paths, time zones and truth frames.
    """
    vocab = vocabulary or SITE_B_VOCABULARY
    zone = ZoneInfo(tz)
    if start is None:
        start = datetime(2025, 3, 17, tzinfo=zone)
    out = Path(out_dir)
    (out / "kernel").mkdir(parents=True, exist_ok=True)
    for old in (out / "kernel").glob("*.log"):
        old.unlink()
    config = {
        "generator": "B", "seed": seed, "n_nodes": n_nodes, "days": days,
        "base_rate_per_1000_node_days": base_rate_per_1000_node_days,
        "weekly_swing": weekly_swing, "trend": trend, "n_lemons": n_lemons,
        "lemon_factor": lemon_factor, "cluster": cluster, "tz": tz, "start": start.isoformat(),
        "rack_size": rack_size, "load": load, "node_spread": node_spread,
        "silent_share": silent_share, "resubmit_share": resubmit_share,
        "repair_median_h": repair_median_h, "repair_sigma": repair_sigma,
        "admin_drains_per_1000_node_days": admin_drains_per_1000_node_days,
        "maintenance_windows": maintenance_windows, "epilog_error_rate": epilog_error_rate,
        "sched_interval_s": sched_interval_s, "starve_h": starve_h,
        "max_job_nodes": max_job_nodes, "vocabulary": asdict(vocab) if vocabulary else "site B",
    }  # fmt: skip
    ss = np.random.SeedSequence([seed, 0xB])
    r_fleet, r_fail, r_admin, r_work, r_sim, r_out = (np.random.default_rng(s) for s in ss.spawn(6))
    epoch0 = int(start.timestamp())
    t_end = days * DAY
    names = [f"r{i // rack_size + 1:02d}n{i % rack_size + 1:02d}" for i in range(n_nodes)]

    rate_day, lemon, factor = node_base_rates(
        r_fleet, n_nodes, base_rate_per_1000_node_days, node_spread, n_lemons, lemon_factor
    )
    offset = monday_offset(epoch0)  # weeks of the rate swing are calendar weeks (UTC)
    weekly = weekly_multipliers(r_fleet, math.ceil((t_end + offset) / (7 * DAY)) + 1, weekly_swing)
    clock = HazardClock(weekly, trend, t_end, offset)
    rate_s = rate_day / DAY
    F = _failures(r_fail, clock, rate_s, t_end, silent_share, repair_median_h, repair_sigma)
    admin = _admin(r_admin, vocab, n_nodes, rack_size, t_end, epoch0, zone,
                   admin_drains_per_1000_node_days, maintenance_windows, F)  # fmt: skip
    max_nodes = max_job_nodes or max(2, n_nodes // 4)
    jobs = _workload(r_work, n_nodes, t_end, load, max_nodes)
    sim = _SimB(r_sim, n_nodes, F, admin, vocab, jobs, t_end, epilog_error_rate, resubmit_share,
                sched_interval_s, starve_h * 3600.0)  # fmt: skip
    sim.run()
    return _write(out, config, vocab, r_out, sim, names, rate_day, rate_s, lemon, factor, weekly,
                  clock, F, epoch0, t_end, start, cluster, tz, zone)  # fmt: skip


def _admin(rng, vocab, n_nodes, rack_size, t_end, epoch0, zone, rate, n_windows, F):
    """Admin drains (node, start, end, reason, user) clear of hardware outages."""
    cand = []
    n = int(rng.poisson(rate / 1000.0 * n_nodes * t_end / DAY))
    for _ in range(n):
        node = int(rng.integers(0, n_nodes))
        a = float(np.floor(rng.uniform(0, t_end)))
        b = a + float(np.floor(max(1800.0, rng.lognormal(math.log(8 * 3600.0), 1.1))))
        user = vocab.admin_users[int(rng.integers(0, len(vocab.admin_users)))]
        date = datetime.fromtimestamp(epoch0 + a, tz=zone).strftime("%Y-%m-%d")
        reason = render(vocab.admin[int(rng.integers(0, len(vocab.admin)))], rng, date=date,
                        admin=user.split("(")[0], rack=node // rack_size + 1)  # fmt: skip
        cand.append((node, a, b, reason, user))
    rackish = next((x for x in vocab.admin if "rack" in x), vocab.admin[0])
    n_racks = max(1, n_nodes // rack_size)
    for _ in range(n_windows):
        rack = int(rng.integers(0, n_racks))
        a = float(int(rng.integers(1, max(2, int(t_end // DAY) - 1))) * DAY + 13 * 3600)
        b = a + float(np.floor(rng.uniform(3, 8) * 3600))
        user = vocab.admin_users[0]
        date = datetime.fromtimestamp(epoch0 + a, tz=zone).strftime("%Y-%m-%d")
        reason = render(rackish, rng, rack=rack + 1, date=date, admin=user.split("(")[0])
        for node in range(rack * rack_size, min(n_nodes, (rack + 1) * rack_size)):
            cand.append((node, a, b, reason, user))
    cand.sort(key=lambda c: (c[0], c[1]))
    fs: dict[int, list[tuple[float, float]]] = {}
    for node, t, o in zip(F["node"], F["t"], F["outage"], strict=True):
        fs.setdefault(int(node), []).append((float(t), float(t + o)))
    kept, last = [], {}
    for node, a, b, reason, user in cand:
        if a < last.get(node, -1.0):
            continue
        outs = fs.get(node, [])
        if any(s <= a < e for s, e in outs):
            continue
        cut = [s for s, _ in outs if a < s < b]
        b = min([b, *cut])
        if b - a < 60:
            continue
        kept.append((node, a, b, reason, user))
        last[node] = b
    return kept


def _workload(rng, n_nodes, t_end, load, max_nodes):
    """Submissions (arrays expanded into tasks) until the planned node-time reaches ``load``.

    Kinds: arrays of 4-32 tasks of 1 GPU (20%: a whole node) with 1 h median runtime (8% of
    submissions), single-node jobs of 1, 2 or 4 GPUs (3 h), multi-node jobs of 2-16 nodes
    (8 h), large jobs of 24-128 nodes (16 h).
    """
    target = load * n_nodes * t_end
    menus = ((4, 8), (2, 8, 24, 48), (24, 48), (48, 72, 120))
    multi = np.array([2, 3, 4, 6, 8, 12, 16])
    large = np.array([c for c in (24, 32, 48, 64, 96, 128) if c <= max_nodes] or [max_nodes])
    parts, total = [], 0.0
    while total < target:
        m = 4000
        u = rng.random(m)
        kind = np.select([u < 0.08, u < 0.70, u < 0.96], [0, 1, 2], 3)
        ntask = np.where(kind == 0, rng.integers(4, 33, m), 1)
        gpn = np.where(kind == 0, np.where(rng.random(m) < 0.2, GPUS, 1),
                       np.where(kind == 1, rng.choice([1, 2, 4], m, p=[0.45, 0.25, 0.3]), GPUS))  # fmt: skip
        nodes = np.select(
            [kind == 2, kind == 3],
            [np.minimum(max_nodes, rng.choice(multi, m, p=[0.3, 0.1, 0.2, 0.1, 0.15, 0.05, 0.1])),
             rng.choice(large, m)],
            1,
        )  # fmt: skip
        r = rng.random(m)
        limit = (
            np.array([menus[k][int(x * len(menus[k]))] for k, x in zip(kind, r, strict=True)])
            * 3600.0
        )
        med = np.array([1.0, 3.0, 8.0, 16.0])[kind] * 3600
        sig = np.array([1.0, 1.2, 1.0, 0.8])[kind]
        work = np.maximum(
            120.0, rng.lognormal(np.log(np.repeat(med, ntask)), np.repeat(sig, ntask))
        )
        sub_of_task = np.repeat(np.arange(m), ntask)
        ns = np.bincount(
            sub_of_task,
            weights=np.repeat(nodes * gpn / GPUS, ntask)
            * np.minimum(work, np.repeat(limit, ntask)),
            minlength=m,
        )
        cum = total + np.cumsum(ns)
        keep = min(m, int(np.searchsorted(cum, target, side="left")) + 1)
        tk = int(ntask[:keep].sum())
        parts.append((kind[:keep], ntask[:keep], gpn[:keep], nodes[:keep], limit[:keep], work[:tk]))
        total = float(cum[keep - 1])
    kind, ntask, gpn, nodes, limit, work = (np.concatenate(x) for x in zip(*parts, strict=True))
    m = kind.size
    arr = np.zeros(0)
    while arr.size < m:
        c = rng.uniform(0, t_end, 3 * m)
        hour = (c % DAY) / 3600.0
        wd = (c // DAY).astype(np.int64) % 7
        f = (1 + 0.6 * np.cos(2 * math.pi * (hour - 14) / 24)) * np.where(wd >= 5, 0.5, 1.0)
        arr = np.concatenate([arr, c[rng.random(c.size) * 1.6 < f]])
    arr = np.sort(np.floor(arr[:m]))
    users = [(u, 31000 + 17 * i, _ACCOUNTS[i % len(_ACCOUNTS)]) for i, u in enumerate(_USERS)]
    uw = 1.0 / np.arange(1, len(users) + 1) ** 0.7
    who = rng.choice(len(users), m, p=uw / uw.sum())
    pick = rng.integers(0, 1000, m)
    throttle = np.where(kind == 0, rng.choice([0, 4, 8], m), 0)
    n = work.size
    uo, frac, ex = rng.random(n), rng.beta(0.8, 2.0, n), rng.integers(0, 8, n)
    exits = ("1:0", "1:0", "2:0", "127:0", "0:9", "139:0", "255:0", "0:15")
    pools = (_NAMES_ARRAY, _NAMES_SINGLE, _NAMES_MULTI, _NAMES_LARGE)
    pfail = (0.1, 0.15, 0.08, 0.05)
    jobs, t = [], 0
    for s in range(m):
        k, lim = int(kind[s]), float(limit[s])
        user, uid, acct = users[int(who[s])]
        qos = "debug" if lim <= 2 * 3600 else ("long" if lim > 48 * 3600 else "normal")
        part = {"debug": "debug", "long": "long"}.get(qos, "gpu")
        name = pools[k][int(pick[s]) % len(pools[k])]
        for task in range(int(ntask[s])):
            j = _Job()
            j.user, j.uid, j.account, j.name, j.qos, j.partition = user, uid, acct, name, qos, part
            j.n_nodes, j.gpn, j.limit, j.work = int(nodes[s]), int(gpn[s]), lim, float(work[t])
            pf = pfail[k]
            x = uo[t]
            j.outcome = (
                1
                if x < pf
                else (2 if x < pf + 0.05 else (3 if x < pf + 0.07 and j.n_nodes == 1 else 0))
            )
            j.frac, j.exit = float(frac[t]), exits[int(ex[t])]
            j.submit, j.done, j.resubmit_of = float(arr[s]), 0.0, None
            j.arr = (s, int(ntask[s]), int(throttle[s])) if k == 0 else None
            j.task = task
            jobs.append(j)
            t += 1
    return jobs


_FAIL, _UP, _ADMIN_ON, _ADMIN_OFF, _EPI_ON = range(5)


class _SimB:
    """Time-stepped scheduler: every ``dt`` seconds, first fit with random placement."""

    def __init__(self, rng, n_nodes, F, admin, vocab, jobs, t_end, epi_rate, resubmit, dt, starve):
        self.rng, self.N, self.F, self.vocab = rng, n_nodes, F, vocab
        self.t_end, self.epi_rate, self.resubmit, self.dt, self.starve = (
            t_end,
            epi_rate,
            resubmit,
            dt,
            starve,
        )
        self.free = np.full(n_nodes, GPUS, dtype=np.int64)
        self.out = np.zeros(n_nodes, dtype=np.int64)
        self.drain = np.zeros(n_nodes, dtype=np.int64)
        self.next_fail = np.full(n_nodes, np.inf)
        self.f_by_node: list[list[int]] = [[] for _ in range(n_nodes)]
        for fi, node in enumerate(F["node"]):
            self.f_by_node[int(node)].append(fi)
        self.fptr = [0] * n_nodes
        for n in range(n_nodes):
            if self.f_by_node[n]:
                self.next_fail[n] = F["t"][self.f_by_node[n][0]]
        self.nev: list[tuple[float, int, int, int, int]] = []  # node events
        self.seq = 0
        for fi in range(F["t"].size):
            self._push(F["t"][fi], _FAIL, int(F["node"][fi]), fi)
        self.admin = admin
        for k, (node, a, b, _, _) in enumerate(admin):
            self._push(a, _ADMIN_ON, node, k)
            self._push(b, _ADMIN_OFF, node, k)
        # job ids are handed out at submission (an array's tasks share one); split array
        # tasks take new ids from the same counter when they start
        self.arrivals = []  # (submit, order, job)
        self.next_id = 514_207
        for j in jobs:
            j.jid, j.raw = None, None
            self.arrivals.append((j.submit, len(self.arrivals), j))
        self.arr_ids: dict[int, int] = {}  # submission index of an array -> its id
        self.arr_unstarted: dict[int, int] = {}
        self.arr_running: dict[int, int] = {}
        self.n_resubmits = 0
        heapq.heapify(self.arrivals)
        self.pending: list[_Job | list[_Job]] = []  # a job, or an array's unstarted tasks
        self.arr_entry: dict[int, list[_Job]] = {}
        self.running: list[tuple[float, int]] = []  # (end, attempt)
        self.atts: list[dict] = []
        self.events: list[dict] = []
        self.fail_row: dict[int, int] = {}
        self.epi_row: dict[int, int] = {}

    def _push(self, t, kind, node, k):
        self.seq += 1
        heapq.heappush(self.nev, (float(math.floor(t)), kind, self.seq, int(node), int(k)))

    def add_event(self, node, state, start, reason, user, kind, failure=-1):
        self.events.append({"node": node, "state": state, "start": float(math.floor(start)), "end": None,
                            "reason": reason, "user": user, "kind": kind, "failure_id": failure})  # fmt: skip
        return len(self.events) - 1

    def run(self):
        t = 0.0
        dt = self.dt
        while t <= self.t_end:
            changed = self.advance(t)
            if changed and self.pending:
                self.schedule(t)
            nxt = min(
                self.nev[0][0] if self.nev else math.inf,
                self.running[0][0] if self.running else math.inf,
                self.arrivals[0][0] if self.arrivals else math.inf,
            )
            if not math.isfinite(nxt):
                break
            t = max(t + dt, math.ceil(nxt / dt) * dt)
        self.advance(self.t_end)  # what happened after the last scheduler pass

    def advance(self, t):
        """Apply everything that happened up to ``t``; True if the scheduler should run."""
        changed = False
        while True:
            cands = []
            if self.nev and self.nev[0][0] <= t:
                cands.append((self.nev[0][0], 0))
            if self.running and self.running[0][0] <= t:
                cands.append((self.running[0][0], 1))
            if self.arrivals and self.arrivals[0][0] <= t:
                cands.append((self.arrivals[0][0], 2))
            if not cands:
                return changed
            changed = True
            _, which = min(cands)
            if which == 0:
                tt, kind, _, node, k = heapq.heappop(self.nev)
                self.node_event(tt, kind, node, k)
            elif which == 1:
                tt, a = heapq.heappop(self.running)
                self.end(tt, self.atts[a])
            else:
                _, _, j = heapq.heappop(self.arrivals)
                if j.arr is None:
                    j.jid = self.next_id
                    self.next_id += 1
                else:
                    if j.arr[0] not in self.arr_ids:
                        self.arr_ids[j.arr[0]] = self.next_id
                        self.arr_unstarted[self.next_id] = j.arr[1]
                        self.next_id += 1
                    j.jid = self.arr_ids[j.arr[0]]
                if j.arr is not None and j.task > 0:
                    self.arr_entry[j.jid].append(j)  # the array waits as one entry
                else:
                    entry = [j] if j.arr is not None else j
                    if j.arr is not None:
                        self.arr_entry[j.jid] = entry
                    self.pending.append(entry)

    def node_event(self, t, kind, node, k):
        F, v, rng = self.F, self.vocab, self.rng
        if kind == _FAIL:
            self.fptr[node] += 1
            fl = self.f_by_node[node]
            self.next_fail[node] = (
                F["t"][fl[self.fptr[node]]] if self.fptr[node] < len(fl) else np.inf
            )
            if F["outage"][k] <= 0:
                return
            self.out[node] += 1
            self._push(t + F["outage"][k], _UP, node, k)
            mech, cause = int(F["mech"][k]), _CAUSES[int(F["cause"][k])]
            gpu, xid = int(F["gpu"][k]), int(F["xid"][k])
            if mech == NR:
                row = self.add_event(
                    node, "DOWN*", t, "Not responding", v.slurm_user, "hardware", k
                )
            elif mech == HC:
                pool = v.hardware_reasons(cause)
                row = self.add_event(node, "DRAIN", t, render(pool[int(rng.integers(0, len(pool)))], rng, gpu=gpu, xid=xid or None),
                                     "root(0)", "hardware", k)  # fmt: skip
            else:
                pool = v.xid_drain if rng.random() < 0.7 else v.hardware_reasons(cause)
                row = self.add_event(node, "DRAIN", t + F["d2"][k], render(pool[int(rng.integers(0, len(pool)))], rng, gpu=gpu, xid=xid),
                                     "root(0)", "hardware", k)  # fmt: skip
            self.fail_row[k] = row
            if F["rma"][k]:
                at = self.events[row]["start"] + F["rma_at"][k]
                if at < t + F["outage"][k] - 600:
                    pool = v.hardware_reasons(cause)
                    user = v.admin_users[int(rng.integers(0, len(v.admin_users)))]
                    self.events[row]["end"] = float(math.floor(at))
                    self.fail_row[k] = self.add_event(node, "DOWN", at, render(pool[int(rng.integers(0, len(pool)))], rng, gpu=gpu, xid=xid or None),
                                                      user, "hardware", k)  # fmt: skip
        elif kind == _UP:
            self.out[node] -= 1
            row = self.fail_row.get(k) if k >= 0 else self.epi_row.get(k)
            if row is not None and self.events[row]["end"] is None:
                self.events[row]["end"] = t
        elif kind == _ADMIN_ON:
            self.drain[node] += 1
            _, _, _, reason, user = self.admin[k]
            self.admin[k] = (
                *self.admin[k][:5],
                self.add_event(node, "DRAIN", t, reason, user, "admin"),
            )
        elif kind == _ADMIN_OFF:
            self.drain[node] -= 1
            self.events[self.admin[k][5]]["end"] = t
        elif kind == _EPI_ON:
            self.out[node] += 1
            row = self.add_event(node, "DRAIN", t, "Epilog error", v.slurm_user, "slurm_software")
            key = -1 - row
            self.epi_row[key] = row
            self._push(t + float(rng.uniform(1, 6)) * 3600, _UP, node, key)

    def end(self, t, att):
        j = att["job"]
        self.free[att["nodes"]] += j.gpn
        if j.arr is not None:
            self.arr_running[j.jid] -= 1
        rng = self.rng
        if att["state"] not in ("NODE_FAIL",) and rng.random() < min(
            0.2, self.epi_rate * len(att["nodes"])
        ):
            n = int(att["nodes"][int(rng.integers(0, len(att["nodes"])))])
            self._push(t + float(rng.uniform(0, 3)), _EPI_ON, n, 0)
        again = (att["fail"] >= 0 and rng.random() < self.resubmit) or (
            att["state"] == "TIMEOUT" and rng.random() < 0.3
        )
        if again and j.arr is None:
            elapsed = t - att["start"]
            n = _Job()
            for s in _Job.__slots__:
                setattr(n, s, getattr(j, s))
            n.done = j.done + max(0.0, elapsed - min(elapsed, float(rng.uniform(0, 3600))))
            if att["state"] == "TIMEOUT":
                n.work = j.work + float(rng.uniform(0.2, 1.0)) * j.limit
            n.submit = float(math.floor(t + max(120.0, rng.exponential(2700.0))))
            n.resubmit_of = j.jid
            n.jid, n.raw = None, None
            self.n_resubmits += 1
            heapq.heappush(self.arrivals, (n.submit, 10**9 + self.n_resubmits, n))

    def schedule(self, t):
        """One pass: entries in submit order start where they fit, on random nodes."""
        rng = self.rng
        usable = (self.out == 0) & (self.drain == 0)
        avail = np.where(usable, self.free, 0)
        full_mask = avail == GPUS
        n_full = int(full_mask.sum())
        max_free = int(avail.max()) if avail.size else 0
        keep: list[_Job | list[_Job]] = []
        stop = False
        for qi, entry in enumerate(self.pending):
            if stop or qi > 400:
                keep.append(entry)
                continue
            tasks = entry if isinstance(entry, list) else [entry]
            while tasks:
                j = tasks[0]
                if j.arr is not None and j.arr[2] and self.arr_running.get(j.jid, 0) >= j.arr[2]:
                    break  # throttled (%N)
                nodes = None
                if j.gpn == GPUS:
                    if n_full >= j.n_nodes:
                        nodes = np.sort(
                            rng.choice(np.flatnonzero(full_mask), size=j.n_nodes, replace=False)
                        )
                        full_mask[nodes] = False
                        n_full -= j.n_nodes
                        avail[nodes] = 0
                elif max_free >= j.gpn:
                    cand = np.flatnonzero(avail >= j.gpn)
                    n = int(cand[int(rng.integers(0, cand.size))])
                    nodes = np.array([n])
                    if full_mask[n]:
                        full_mask[n] = False
                        n_full -= 1
                    avail[n] -= j.gpn
                if nodes is None:
                    if t - j.submit > self.starve:
                        stop = True  # it has waited long enough: nothing behind it starts
                    break
                max_free = int(avail.max())
                self.start(j, nodes, t)
                tasks.pop(0)
            if tasks:
                keep.append(entry)
        self.pending = keep

    def start(self, j, nodes, t):
        rng = self.rng
        self.free[nodes] -= j.gpn
        if j.arr is not None:
            self.arr_running[j.jid] = self.arr_running.get(j.jid, 0) + 1
            self.arr_unstarted[j.jid] -= 1
            if self.arr_unstarted[j.jid] == 0:
                j.raw = j.jid  # the last task to start keeps the array's own id
            else:
                j.raw = self.next_id
                self.next_id += 1
        else:
            j.raw = j.jid
        if j.outcome == 0:
            rem, state, ex, why = j.work - j.done, "COMPLETED", "0:0", "completed"
        else:
            rem = j.frac * j.work - j.done
            state, ex, why = {1: ("FAILED", j.exit, "user_exit"), 2: (f"CANCELLED by {j.uid}", "0:0", "cancelled"),
                              3: ("OUT_OF_MEMORY", "0:125", "oom")}[j.outcome]  # fmt: skip
        rem = max(rem, 30.0)
        if rem >= j.limit:
            end, state, ex, why = (
                t + j.limit + float(rng.uniform(0, 60)),
                "TIMEOUT",
                "0:0",
                "timeout",
            )
        else:
            end = t + rem
        nf = self.next_fail[nodes]
        i = int(np.argmin(nf))
        fail, mech, culprit, cause = -1, None, None, None
        if nf[i] < end:
            k = float(nf[i])
            culprit = int(nodes[i])
            fail = self.f_by_node[culprit][self.fptr[culprit]]
            m = int(self.F["mech"][fail])
            mech, cause, why = MECH_NAMES[m], _CAUSES[int(self.F["cause"][fail])], "hardware"
            if m == NR:
                end, state, ex = k, "NODE_FAIL", "0:0"
            elif m == HC:
                end, state = k + float(rng.uniform(0, 30)), "FAILED"
                ex = ("1:0", "0:6", "134:0", "0:11")[int(rng.integers(0, 4))]
            elif m == XID:
                end, state = k + float(rng.uniform(10, 300)), "FAILED"
                ex = ("1:0", "0:6", "139:0")[int(rng.integers(0, 3))]
            else:
                end, state = k, "FAILED"
                ex = ("1:0", "0:6")[int(rng.integers(0, 2))]
        end = max(t, float(math.floor(end)))
        att = {"job": j, "start": t, "end": end, "state": state, "exit": ex, "nodes": nodes, "fail": fail,
               "mech": mech, "culprit": culprit, "cause": cause, "why": why}  # fmt: skip
        self.atts.append(att)
        heapq.heappush(self.running, (end, len(self.atts) - 1))


def _array_spec(tasks, throttle):
    ids = sorted(tasks)
    runs, lo, prev = [], ids[0], ids[0]
    for x in [*ids[1:], None]:
        if x is not None and x == prev + 1:
            prev = x
            continue
        runs.append(str(lo) if lo == prev else f"{lo}-{prev}")
        if x is not None:
            lo = prev = x
    return "[" + ",".join(runs) + (f"%{throttle}" if throttle else "") + "]"


@functools.cache
def _tres_b(k: int, gpn: int) -> tuple[str, str]:
    """AllocTRES and ReqTRES of a job of ``k`` nodes and ``gpn`` GPUs per node (16 cores and
    120 GB per GPU, billing 10 per GPU)."""
    g = gpn * k
    cpu, mem = 16 * g, f"{120 * g}G"
    alloc = tres(
        {"billing": g * 10, "cpu": cpu, "gres/gpu:a100": g, "gres/gpu": g, "mem": mem, "node": k}
    )
    return alloc, tres({"billing": g * 10, "cpu": cpu, "gres/gpu": g, "mem": mem, "node": k})


def _write(out, config, vocab, rng, sim, names, rate_day, rate_s, lemon, factor, weekly, clock, F,
           epoch0, t_end, start, cluster, tz, zone):  # fmt: skip
    obs = t_end
    recs = []  # dicts: job, job_id, raw, submit, start, end, state, exit, nodes, att
    for a in sim.atts:
        j = a["job"]
        jid = f"{j.jid}_{j.task}" if j.arr is not None else str(j.jid)
        if a["end"] > obs:
            recs.append(
                (
                    j,
                    jid,
                    j.raw,
                    j.submit,
                    a["start"],
                    None,
                    "RUNNING",
                    "0:0",
                    a["nodes"],
                    a,
                    "running",
                )
            )
        else:
            recs.append(
                (
                    j,
                    jid,
                    j.raw,
                    j.submit,
                    a["start"],
                    a["end"],
                    a["state"],
                    a["exit"],
                    a["nodes"],
                    a,
                    a["why"],
                )
            )
    pend: dict[int, list[_Job]] = {}
    for entry in sim.pending:
        if isinstance(entry, list):
            pend[entry[0].jid] = entry
        else:
            j = entry
            recs.append(
                (
                    j,
                    str(j.jid),
                    j.jid,
                    j.submit,
                    None,
                    None,
                    "PENDING",
                    "0:0",
                    np.zeros(0, np.int64),
                    None,
                    "pending",
                )
            )
    for jid, tasks in pend.items():
        j = tasks[0]
        spec = _array_spec([x.task for x in tasks], j.arr[2])
        recs.append(
            (
                j,
                f"{jid}_{spec}",
                jid,
                j.submit,
                None,
                None,
                "PENDING",
                "0:0",
                np.zeros(0, np.int64),
                None,
                "pending",
            )
        )
    recs.sort(key=lambda r: (r[3], r[0].jid, r[0].task, r[4] if r[4] is not None else math.inf))
    flat = []
    for r in recs:
        flat += [r[3], -1 if r[4] is None else r[4], -1 if r[5] is None else r[5]]
    txt = format_times(np.array(flat, dtype=np.int64), epoch0, tz)
    rows = []
    for i, r in enumerate(recs):
        j, jid, raw, _, st, _en, state, ex, nodes, _att, _ = r
        ran = st is not None
        k = j.n_nodes
        alloc_tres, req = _tres_b(k, j.gpn)
        alloc = alloc_tres if ran else ""
        prio = int(1000 + 5 * k + min(((st if ran else obs) - j.submit) / 60, 20000))
        rows.append([jid, j.name, str(raw), cluster, j.partition, j.account, j.user, j.qos, str(prio), state, ex,
                     txt[3 * i], txt[3 * i + 1], txt[3 * i + 2], duration(int(j.limit)), str(k), alloc, req,
                     compress_hostlist([names[n] for n in nodes]) if ran else "None assigned"])  # fmt: skip
    sacct = out / "sacct.psv"
    write_psv(sacct, SACCT_FIELDS, rows)

    ev = sorted(sim.events, key=lambda e: (e["node"], e["start"]))
    for a, b in itertools.pairwise(ev):
        if a["node"] == b["node"] and (a["end"] is None or a["end"] > b["start"]):
            a["end"] = b["start"]
    ev = [e for e in ev if e["start"] <= obs and (e["end"] is None or e["end"] > e["start"])]
    for e in ev:
        if e["end"] is not None and e["end"] > obs:
            e["end"] = None
    st_txt = format_times(np.array([e["start"] for e in ev], dtype=np.int64), epoch0, tz)
    en_txt = format_times(
        np.array([-1 if e["end"] is None else e["end"] for e in ev], dtype=np.int64), epoch0, tz
    )
    ev_rows = [
        [cluster, names[e["node"]], a, b, e["state"], e["reason"], e["user"]]
        for e, a, b in zip(ev, st_txt, en_txt, strict=True)
    ]
    events = out / "sacctmgr_events.psv"
    write_psv(events, EVENT_FIELDS, ev_rows)

    # kernel logs: one syslog file per node, local time
    lines = _kernel_lines(rng, sim, F, len(names), obs)
    paths = []
    if lines:
        lines.sort(key=lambda x: (x[1], x[0], x[3]))
        ts = format_times(
            np.array([int(x[0]) for x in lines], dtype=np.int64), epoch0, tz, fmt="%b %e %H:%M:%S"
        )
        by_node: dict[int, list[str]] = {}
        for (_, n, up, msg), s in zip(lines, ts, strict=True):
            by_node.setdefault(n, []).append(f"{s} {names[n]} kernel: [{up:12.6f}] {msg}\n")
        for n, ls in sorted(by_node.items()):
            p = out / "kernel" / f"{names[n]}.log"
            p.write_text("".join(ls))
            paths.append(p)
    kyear = datetime.fromtimestamp(epoch0, tz=zone).year

    # truth
    n_rec = len(recs)
    starts = np.array([-1.0 if r[4] is None else r[4] for r in recs])
    stops = np.array([obs if r[5] is None else r[5] for r in recs])
    hz, nd = attempt_hazard(
        [np.asarray(r[8], dtype=np.int64) for r in recs], starts, stops, rate_s, clock
    )
    hw = [r[9] is not None and r[9]["fail"] >= 0 and r[6] != "RUNNING" for r in recs]
    attempts = pl.DataFrame(
        {
            "cluster": [cluster] * n_rec,
            "job_id": [r[1] for r in recs],
            "attempt": [0] * n_rec,
            "raw_job_id": [str(r[2]) for r in recs],
            "name": [r[0].name for r in recs],
            "user": [r[0].user for r in recs],
            "qos": [r[0].qos for r in recs],
            "state": [r[6].split(" ")[0] for r in recs],
            "exit_code": [r[7] for r in recs],
            "submit_time": to_datetime(np.array([r[3] for r in recs]), epoch0),
            "start_time": to_datetime(starts, epoch0),
            "end_time": to_datetime(
                np.array([-1.0 if r[5] is None else r[5] for r in recs]), epoch0
            ),
            "nodes": node_lists([np.asarray(r[8], dtype=np.int64) for r in recs], names),
            "n_nodes": [r[0].n_nodes for r in recs],
            "n_gpus": [r[0].n_nodes * r[0].gpn for r in recs],
            "hardware": hw,
            "mechanism": [r[9]["mech"] if h else None for r, h in zip(recs, hw, strict=True)],
            "culprit_node": [
                names[r[9]["culprit"]] if h else None for r, h in zip(recs, hw, strict=True)
            ],
            "cause": [r[9]["cause"] if h else None for r, h in zip(recs, hw, strict=True)],
            "failure_id": [int(r[9]["fail"]) if h else None for r, h in zip(recs, hw, strict=True)],
            "end_reason": [r[10] for r in recs],
            "resubmit_of": [
                None if r[0].resubmit_of is None else str(r[0].resubmit_of) for r in recs
            ],
            "ambiguous_local_time": misread_local(np.array([r[3] for r in recs]), epoch0, tz)
            | misread_local(starts, epoch0, tz)
            | misread_local(np.array([-1.0 if r[5] is None else r[5] for r in recs]), epoch0, tz),
            "true_hazard": hz,
            "node_days": nd,
        },
        schema_overrides={"attempt": pl.UInt16, "failure_id": pl.Int64, "resubmit_of": pl.String},
    ).sort("job_id", "attempt")
    hits = attempts.filter(pl.col("hardware")).group_by("failure_id").len()
    hit = dict(zip(hits["failure_id"].to_list(), hits["len"].to_list(), strict=True))
    nf = F["t"].size
    failures = pl.DataFrame(
        {
            "failure_id": np.arange(nf),
            "node": [names[int(n)] for n in F["node"]],
            "time": to_datetime(F["t"], epoch0),
            "mechanism": [MECH_NAMES[int(x)] for x in F["mech"]],
            "cause": [_CAUSES[int(c)] for c in F["cause"]],
            "xid": [int(x) if x else None for x in F["xid"]],
            "silent": (F["mech"] == SILENT).tolist(),
            "outage_end": to_datetime(F["t"] + F["outage"], epoch0),
            "attempts_hit": [hit.get(i, 0) for i in range(nf)],
            "in_window": [True] * nf,
        },
        schema_overrides={"xid": pl.Int64},
    ).with_columns(
        hit_job=pl.col("attempts_hit") > 0, attempts_hit_in_export=pl.col("attempts_hit")
    )
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
        generator="B", out_dir=out, cluster=cluster, sacct=sacct, events=events, kernel=paths,
        tz=tz, kernel_tz=tz, kernel_year=kyear, start=start.astimezone(UTC), end=utc(epoch0 + int(obs)),
        gpus_per_node=GPUS, attempts=attempts, nodes=nodes, failures=failures, weeks=weeks,
        node_events=node_events, config=config,
    )  # fmt: skip
    write_truth(h)
    return h


def _kernel_lines(rng, sim, F, n_nodes, obs):
    """(time, node, uptime, message): the driver's load message at boot, Xids of failures,
    Xids of user bugs, background warnings."""
    boot = rng.uniform(2, 60, n_nodes) * DAY
    lines = []
    body: dict[int, list] = {}

    def add(t, n, msg):
        if 0 <= t <= obs:
            body.setdefault(int(n), []).append(
                (float(np.floor(t)), int(n), float(boot[n] + t), msg)
            )

    for fi in range(F["t"].size):
        if int(F["mech"][fi]) != XID:
            continue
        t, n, xid, gpu = float(F["t"][fi]), int(F["node"][fi]), int(F["xid"][fi]), int(F["gpu"][fi])
        add(t, n, f"NVRM: Xid (PCI:{_PCI[gpu]}): {xid}, {xid_message(xid, rng, gpu)}")
        if xid == 79:
            add(t + 1, n, f"NVRM: GPU {_PCI[gpu]}.0: GPU has fallen off the bus.")
    for a in sim.atts:
        if a["state"] == "FAILED" and a["fail"] < 0 and a["end"] <= obs and rng.random() < 0.1:
            n = int(a["nodes"][int(rng.integers(0, len(a["nodes"])))])
            code = (13, 31, 43)[int(rng.integers(0, 3))]
            gpu = int(rng.integers(0, GPUS))
            add(
                a["end"] - float(rng.uniform(1, 20)),
                n,
                f"NVRM: Xid (PCI:{_PCI[gpu]}): {code}, {xid_message(code, rng, gpu, 'python3')}",
            )
    for _ in range(int(rng.poisson(0.005 * n_nodes * obs / DAY))):
        n, gpu, t = (
            int(rng.integers(0, n_nodes)),
            int(rng.integers(0, GPUS)),
            float(rng.uniform(0, obs)),
        )
        code = 63 if rng.random() < 0.6 else 92
        add(t, n, f"NVRM: Xid (PCI:{_PCI[gpu]}): {code}, {xid_message(code, rng, gpu)}")
    for n in sorted(body):
        first = min(x[0] for x in body[n])
        t0 = float(np.floor(rng.uniform(0, min(first, 3600.0)))) if first > 0 else 0.0
        lines.append(
            (
                t0,
                n,
                float(boot[n] + t0),
                "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024",
            )
        )
        lines.extend(body[n])
    return lines
