"""TPU pod, job side: Borg-like scheduling, preflight checks and the two recovery paths.

Zu et al. NSDI'24 §3-5. Phase 2 of the pod simulator, driven by the component timeline of
:func:`reliability.sim.pod.simulate_pod`.

- **Jobs** arrive as a Poisson stream; sizes are whole cubes (1-64, mostly small), durations
  log-normal, two priority classes (``prod`` and ``batch``); 95% opt into fault-tolerant (FT)
  routing.
- **Scheduling** by priority then submission time, with backfill; a job without FT routing
  does not start while an OCS is down. ``reconfigurable``: any free
  usable cubes, joined by the OCSes (the cross-connect changes are counted with
  :func:`reliability.topology.crossconnect_diff`, NSDI'24 Fig. 13); ``static``: an aligned
  contiguous block of the fixed arrangement. A ``prod`` job that does not fit preempts ``batch``
  jobs to defragment (they requeue from their last checkpoint).
- **Preflight** before every start: a latent machine fault is caught with the configured
  probability; the machine goes to repair and the job is rescheduled onto other cubes.
- **Recovery** when a component fails under a running job: machine or ICI cable -> path 1,
  *reconfigure*: the job is evicted, loses the work since its last checkpoint and restarts
  after a reconfiguration downtime on other cubes; OCS -> path 2, *reroute* for FT jobs: the job
  keeps its cubes and runs slower by a step-time tax drawn from Table 3's 0.5-8.6% until the OCS
  is repaired; jobs without FT routing are interrupted (path 1). Planned maintenance evicts with
  a fresh checkpoint (no lost work).

Everything is appended to the pod event log (``job_submit``, ``job_start``, ``job_end``,
``reroute_start``, ``reroute_end``, ``preflight_fail``, ``crossconnect``).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from reliability.sim.engine import Kernel
from reliability.topology import FACE_LINKS as FACE
from reliability.topology import Slice

__all__ = ["PodJobConfig", "simulate_pod_jobs"]

#: job size mix [cubes -> weight]
DEFAULT_SIZES = {1: 0.60, 2: 0.15, 4: 0.10, 8: 0.08, 16: 0.04, 32: 0.02, 48: 0.007, 64: 0.003}


@dataclass(frozen=True)
class PodJobConfig:
    """Job stream, scheduling and recovery parameters of the pod simulator."""

    #: for a 64-cube pod (scaled with the pod size): with the durations below ~70% busy
    arrivals_per_day: float = 78.0
    sizes: dict[int, float] = field(default_factory=lambda: dict(DEFAULT_SIZES))
    #: median work of a job [h]. A job of c cubes running h hours meets a machine or ICI cable
    #: failure with probability about 16 c h (0.0008 + 6 * 0.00005) / 24 (NSDI'24 §6 rates):
    #: with this mix (a mean of 3.75 cubes) a 2.5-hour median makes about 1% of jobs see a
    #: hardware interruption, as NSDI'24 reports (a 4-hour median gave 1.8%)
    duration_median_h: float = 2.5
    duration_sigma: float = 1.0
    prod_share: float = 0.3
    ft_routing_share: float = 0.95
    ckpt_interval_h: float = 1.0
    reconfigure_downtime_min: float = 10.0
    preflight_catch_prob: float = 0.003
    preflight_repair_h: float = 24.0
    tax_low: float = 0.005
    tax_high: float = 0.086


def _shape(k: int) -> tuple[int, int, int]:
    """Return a compact (a, b, c) cube arrangement with a*b*c == k and each side <= 4."""
    best = None
    for a in range(1, 5):
        for b in range(a, 5):
            if k % (a * b) == 0 and k // (a * b) <= 4 and k // (a * b) >= b:
                c = k // (a * b)
                score = c - a
                if best is None or score < best[0]:
                    best = (score, (a, b, c))
    if best is None:  # not a box of <= 4 per side: a (4, 4, ceil) prism is the best we can do
        return (4, 4, max(1, math.ceil(k / 16)))
    return best[1]


class _PodJobs:
    def __init__(
        self, cfg, jobs_cfg: PodJobConfig, components: pl.DataFrame, rng: np.random.Generator
    ) -> None:
        self.cfg, self.j, self.rng = cfg, jobs_cfg, rng
        self.k = Kernel()
        self.static = cfg.mode == "static"
        self.n_cubes = cfg.n_cubes
        self.bad = [0] * self.n_cubes  # down components per cube
        self.ocs_down: set[str] = set()
        self.owner: list[int | None] = [None] * self.n_cubes
        self.plus: dict[tuple[str, int], int] = {}  # (dim, cube) -> the cube its + face joins
        self.minus: dict[tuple[str, int], int] = {}
        self.rows: list[tuple[float, str, str, str, str | None]] = []
        self.pending: list[tuple[int, float, int]] = []
        self.running: dict[int, dict] = {}
        self.jobs: list[dict] = []
        self.stats = {
            "interruptions": 0,
            "preemptions": 0,
            "preflight_fails": 0,
            "reroutes": 0,
            "crossconnect_changes": 0,
            "maintenance_evictions": 0,
        }
        self.reroute_samples: list[tuple[float, int, int]] = []
        for t, event, ctype, cid, _ in components.select(
            "time_s", "event", "component_type", "component_id", "detail"
        ).rows():
            if event in (
                "component_fail",
                "component_repair",
                "maintenance_start",
                "maintenance_end",
            ):
                self.k.at(t, self._component, event, ctype, cid, priority=-1)

    # -- helpers ------------------------------------------------------------------------
    def log(self, t: float, event: str, ctype: str, cid: str, detail: str | None) -> None:
        self.rows.append((t, event, ctype, cid, detail))

    def _cube(self, cid: str) -> int:
        return int(cid[1:3])

    def _usable_free(self) -> list[int]:
        return [c for c in range(self.n_cubes) if self.bad[c] == 0 and self.owner[c] is None]

    def _place(self, k: int) -> list[int] | None:
        if self.static:
            size = 1 << math.ceil(math.log2(k))
            for start in range(0, self.n_cubes - size + 1, size):
                block = list(range(start, start + size))
                if all(self.bad[c] == 0 and self.owner[c] is None for c in block):
                    return block[:k] if size == k else block
            return None
        free = self._usable_free()
        return free[:k] if len(free) >= k else None

    # -- jobs -----------------------------------------------------------------------------
    def add_jobs(self, jobs: list[dict]) -> None:
        """Schedule given jobs instead of a drawn stream.

        Dicts with ``submit_s``, ``cubes``, ``work_h`` and optionally ``prod``, ``ft``.
        """
        for i, spec in enumerate(jobs):
            k = int(spec["cubes"])
            a, b, c = _shape(k)
            self.jobs.append(
                {
                    "id": i,
                    "cubes": a * b * c,
                    "shape": (4 * a, 4 * b, 4 * c),
                    "twisted": False,
                    "work": float(spec["work_h"]) * 3600.0,
                    "done": 0.0,
                    "prio": int(bool(spec.get("prod", False))),
                    "ft": bool(spec.get("ft", True)),
                    "submit": float(spec["submit_s"]),
                    "attempt": 0,
                    "eligible": float(spec["submit_s"]),
                    "hw": 0,
                }
            )
            self.k.at(float(spec["submit_s"]), self._submit, i, priority=-2)

    def generate(self) -> None:
        j, rng = self.j, self.rng
        n = rng.poisson(j.arrivals_per_day * self.cfg.days)
        times = np.sort(rng.uniform(0.0, self.cfg.horizon_s, n))
        sizes = np.array(list(j.sizes), dtype=int)
        p = np.array(list(j.sizes.values()), dtype=float)
        drawn = rng.choice(sizes, size=n, p=p / p.sum())
        dur = rng.lognormal(math.log(j.duration_median_h * 3600.0), j.duration_sigma, n)
        prod = rng.random(n) < j.prod_share
        ft = rng.random(n) < j.ft_routing_share
        for i in range(n):
            k = int(min(drawn[i], self.n_cubes))
            a, b, c = _shape(k)
            twisted = (sorted((a, b, c)) in ([1, 1, 2], [1, 2, 2], [2, 2, 4], [2, 4, 4])) and (
                i % 2 == 0
            )
            self.jobs.append(
                {
                    "id": i,
                    "cubes": a * b * c,
                    "shape": (4 * a, 4 * b, 4 * c),
                    "twisted": twisted,
                    "work": float(dur[i]),
                    "done": 0.0,
                    "prio": 1 if prod[i] else 0,
                    "ft": bool(ft[i]),
                    "submit": float(times[i]),
                    "attempt": 0,
                    "eligible": float(times[i]),
                    "hw": 0,
                }
            )
            self.k.at(float(times[i]), self._submit, i, priority=-2)

    def _submit(self, i: int) -> None:
        job = self.jobs[i]
        self.log(
            self.k.now,
            "job_submit",
            "job",
            str(i),
            f"cubes={job['cubes']};prio={'prod' if job['prio'] else 'batch'};ft={int(job['ft'])}",
        )
        self._enqueue(i)

    def _enqueue(self, i: int) -> None:
        job = self.jobs[i]
        heapq.heappush(self.pending, (-job["prio"], job["eligible"], i))
        self.k.at(max(self.k.now, job["eligible"]), self._schedule, priority=5)

    def _schedule(self) -> None:
        now = self.k.now
        waiting = []
        # usable free cubes, recounted only when a start or a defragmentation changed them; a
        # job larger than that cannot be placed, and a prod job larger than one whose
        # defragmentation already failed since then cannot be either (same result, no rescan)
        n_free = len(self._usable_free())
        defrag_failed = math.inf
        # likewise a job at least as large as one that found no place (a static pod's aligned
        # blocks nest: no free block of a size means none of twice the size)
        place_failed = math.inf
        while self.pending:
            prio, elig, i = heapq.heappop(self.pending)
            job = self.jobs[i]
            if elig > now:
                waiting.append((prio, elig, i))
                continue
            if self.ocs_down and not self.static and not job["ft"]:
                waiting.append((prio, elig, i))  # needs every OCS of its torus: wait for the repair
                continue
            k = job["cubes"]
            cubes = self._place(k) if k <= n_free and k < place_failed else None
            if cubes is None:
                place_failed = min(place_failed, k)
            if cubes is None and job["prio"] == 1 and k < defrag_failed:
                cubes = self._defragment(job)
                if cubes is None:
                    defrag_failed = k
                else:
                    defrag_failed = place_failed = math.inf
                n_free = len(self._usable_free())
            if cubes is None:
                waiting.append((prio, elig, i))
                continue
            self._start(i, cubes)
            n_free = len(self._usable_free())
            defrag_failed = place_failed = math.inf
        for w in waiting:
            heapq.heappush(self.pending, w)

    def _defragment(self, job: dict) -> list[int] | None:
        """Preempt batch jobs (latest started first) until the prod job fits."""
        victims = sorted(
            (r["start"], jid) for jid, r in self.running.items() if self.jobs[jid]["prio"] == 0
        )
        usable_free = len(self._usable_free())
        freeable = sum(
            1 for _, jid in victims for c in self.running[jid]["cubes"] if self.bad[c] == 0
        )
        if self.static or usable_free + freeable < job["cubes"]:
            return None
        for _, jid in reversed(victims):
            if len(self._usable_free()) >= job["cubes"]:
                break
            self._stop(jid, "PREEMPTED", lost_to_checkpoint=True)
            self.stats["preemptions"] += 1
        return self._place(job["cubes"])

    def _start(self, i: int, cubes: list[int]) -> None:
        job, now = self.jobs[i], self.k.now
        # preflight: a latent machine fault on the allocation is caught before the job runs
        if self.rng.random() < self.j.preflight_catch_prob * len(cubes):
            c = cubes[int(self.rng.integers(len(cubes)))]
            host = f"c{c:02d}-h{int(self.rng.integers(16)):02d}"
            self.stats["preflight_fails"] += 1
            self.log(now, "preflight_fail", "machine", host, f"job={i}")
            self.bad[c] += 1
            self.k.after(self.j.preflight_repair_h * 3600.0, self._preflight_repair, c, priority=-1)
            self._enqueue(i)
            return
        if not self.static:
            changed = self._crossconnect(Slice(job["shape"], tuple(cubes), twisted=job["twisted"]))
            self.stats["crossconnect_changes"] += changed
            self.log(now, "crossconnect", "ocs", "pod", f"changed={changed}")
        for c in cubes:
            self.owner[c] = i
        speed = 1.0
        taxes = {}
        if self.ocs_down and not self.static and job["ft"]:  # starts on a pod with OCS down
            taxes = {o: self._tax() for o in sorted(self.ocs_down)}
            speed = 1.0 - max(taxes.values())
        run = {
            "cubes": cubes,
            "start": now,
            "seg_start": now,
            "speed": speed,
            "taxes": taxes,
            "handle": None,
        }
        self.running[i] = run
        topo = "x".join(map(str, job["shape"])) + (" twisted" if job["twisted"] else "")
        self.log(
            now,
            "job_start",
            "job",
            str(i),
            f"attempt={job['attempt']};cubes={','.join(map(str, cubes))};topology={topo}",
        )
        for ocs in sorted(taxes):  # started around OCSes that are down: on FT routing from now
            self.stats["reroutes"] += 1
            self.log(now, "reroute_start", "job", str(i), f"ocs={ocs};tax={taxes[ocs]:.4f}")
        self._arm(i)

    def _crossconnect(self, slc: Slice) -> int:
        """Switch the OCS circuits the slice needs; returns how many circuits changed.

        Every OCS of a dimension carries the same cube hop (one circuit per face index), so
        the state is kept per hop ``(dim, from cube) -> to cube``: adding a hop switches 16
        circuits, and an existing hop that holds one of its ports is torn down (16 more), as
        :func:`reliability.topology.crossconnect_diff` does circuit by circuit.
        """
        changed = 0
        for a, b, d, _ in slc.neighbours():
            if self.plus.get((d, a)) == b:
                continue
            old_b = self.plus.pop((d, a), None)
            if old_b is not None:
                self.minus.pop((d, old_b), None)
                changed += FACE
            old_a = self.minus.pop((d, b), None)
            if old_a is not None:
                self.plus.pop((d, old_a), None)
                changed += FACE
            self.plus[(d, a)] = b
            self.minus[(d, b)] = a
            changed += FACE
        return changed

    def _tax(self) -> float:
        return float(self.rng.uniform(self.j.tax_low, self.j.tax_high))

    def _arm(self, i: int) -> None:
        run, job = self.running[i], self.jobs[i]
        if run["handle"] is not None:
            Kernel.cancel(run["handle"])
        left = max(job["work"] - job["done"], 0.0)
        run["handle"] = self.k.after(left / run["speed"], self._finish, i)

    def _progress(self, i: int) -> None:
        run, job = self.running[i], self.jobs[i]
        job["done"] += (self.k.now - run["seg_start"]) * run["speed"]
        run["seg_start"] = self.k.now

    def _finish(self, i: int) -> None:
        self._progress(i)
        self._stop(i, "COMPLETED")

    def _stop(
        self, i: int, state: str, lost_to_checkpoint: bool = False, downtime_s: float = 0.0
    ) -> None:
        run = self.running.pop(i)
        job = self.jobs[i]
        if run["handle"] is not None and state != "COMPLETED":
            Kernel.cancel(run["handle"])
            job["done"] += (self.k.now - run["seg_start"]) * run["speed"]
        for c in run["cubes"]:
            self.owner[c] = None
        if run["taxes"]:
            self.log(self.k.now, "reroute_end", "job", str(i), "job ended")
        self.log(self.k.now, "job_end", "job", str(i), f"attempt={job['attempt']};state={state}")
        if state != "COMPLETED":
            if lost_to_checkpoint:
                ck = self.j.ckpt_interval_h * 3600.0
                job["done"] = math.floor(job["done"] / ck) * ck
            job["attempt"] += 1
            job["eligible"] = self.k.now + downtime_s
            self._enqueue(i)
        self.k.after(0.0, self._schedule, priority=5)

    # -- components -----------------------------------------------------------------------
    def _preflight_repair(self, c: int) -> None:
        self.bad[c] -= 1
        self.k.after(0.0, self._schedule, priority=5)

    def _component(self, event: str, ctype: str, cid: str) -> None:
        down = event in ("component_fail", "maintenance_start")
        if ctype == "ocs":
            if down:
                self.ocs_down.add(cid)
                self._ocs_fault(cid)
            else:
                self.ocs_down.discard(cid)
                self._ocs_repair(cid)
            return
        c = self._cube(cid)
        if down:
            self.bad[c] += 1
            i = self.owner[c]
            if i is not None:
                if event == "maintenance_start":
                    self.stats["maintenance_evictions"] += 1
                    self._stop(i, "PREEMPTED")  # checkpointed first: no lost work
                else:
                    self.stats["interruptions"] += 1
                    self.jobs[i]["hw"] += 1
                    self._stop(
                        i,
                        "NODE_FAIL",
                        lost_to_checkpoint=True,
                        downtime_s=self.j.reconfigure_downtime_min * 60.0,
                    )
        else:
            self.bad[c] -= 1
            self.k.after(0.0, self._schedule, priority=5)

    def _ocs_fault(self, ocs: str) -> None:
        hit = len(self.running)  # jobs running when the OCS fails (the non-FT ones stop)
        for i in sorted(self.running):
            job, run = self.jobs[i], self.running[i]
            if job["ft"]:
                self._progress(i)
                run["taxes"][ocs] = self._tax()
                run["speed"] = 1.0 - max(run["taxes"].values())
                self.stats["reroutes"] += 1
                self.log(
                    self.k.now,
                    "reroute_start",
                    "job",
                    str(i),
                    f"ocs={ocs};tax={run['taxes'][ocs]:.4f}",
                )
                self._arm(i)
            else:
                self.stats["interruptions"] += 1
                job["hw"] += 1
                self._stop(
                    i,
                    "NODE_FAIL",
                    lost_to_checkpoint=True,
                    downtime_s=self.j.reconfigure_downtime_min * 60.0,
                )
        self.reroute_samples.append(
            (self.k.now, sum(1 for r in self.running.values() if r["taxes"]), hit)
        )

    def _ocs_repair(self, ocs: str) -> None:
        self.k.after(0.0, self._schedule, priority=5)  # jobs without FT routing may start again
        for i in sorted(self.running):
            run = self.running[i]
            if ocs in run["taxes"]:
                self._progress(i)
                del run["taxes"][ocs]
                run["speed"] = 1.0 - max(run["taxes"].values()) if run["taxes"] else 1.0
                self.log(self.k.now, "reroute_end", "job", str(i), f"ocs={ocs}")
                self._arm(i)
        self.reroute_samples.append(
            (self.k.now, sum(1 for r in self.running.values() if r["taxes"]), len(self.running))
        )

    def run(self) -> None:
        self.k.run(until=self.cfg.horizon_s)


def simulate_pod_jobs(
    cfg,
    components: pl.DataFrame,
    jobs_cfg: PodJobConfig,
    rng: np.random.Generator,
    jobs: list[dict] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame, dict]:
    """Run the job side over the component events of a pod run.

    Jobs are scheduled on the cubes, preflighted, preempted and recovered as the module
    docstring describes, until the end of the run.

    Parameters
    ----------
    cfg : PodConfig
        The pod (``mode``, ``n_cubes``, ``days``).
    components : polars.DataFrame
        The component events (``time_s, event, component_type, component_id, detail`` rows,
        as :func:`reliability.sim.pod.simulate_pod` draws them); failures, repairs and
        maintenance windows drive the job side.
    jobs_cfg : PodJobConfig
        The job stream, scheduling and recovery parameters.
    rng : numpy.random.Generator
        Source of randomness (job stream, preflight catches, step-time taxes).
    jobs : list of dict or None
        Replaces the drawn job stream: dicts with ``submit_s`` [s since the start], ``cubes``,
        ``work_h`` [h], optional ``prod`` (bool, default False), ``ft`` (bool, default True).

    Returns
    -------
    events : polars.DataFrame
        The job events (``time_s, event, component_type, component_id, detail``).
    truth : polars.DataFrame
        One row per job: ``job_id``, ``cubes``, ``prod``, ``ft_routing``, ``submit_s``,
        ``attempts``, ``hardware_interruptions``, ``done_h``, ``work_h`` [h], ``completed``
        (empty without jobs).
    stats : dict
        Counters (``interruptions``, ``preemptions``, ``preflight_fails``, ``reroutes``,
        ``crossconnect_changes``, ``maintenance_evictions``, ``jobs``) and
        ``reroute_samples``: a row per OCS failure and repair, ``time_s``, ``rerouted`` (jobs
        on fault-tolerant routing just after it) and ``running`` (jobs running just before a
        failure, just after a repair).
    """
    sim = _PodJobs(cfg, jobs_cfg, components, rng)
    if jobs is None:
        sim.generate()
    else:
        sim.add_jobs(jobs)
    sim.run()
    events = pl.DataFrame(
        sim.rows,
        schema={
            "time_s": pl.Float64,
            "event": pl.String,
            "component_type": pl.String,
            "component_id": pl.String,
            "detail": pl.String,
        },
        orient="row",
    )
    truth = (
        pl.DataFrame(
            [
                {
                    "job_id": str(j["id"]),
                    "cubes": j["cubes"],
                    "prod": bool(j["prio"]),
                    "ft_routing": j["ft"],
                    "submit_s": j["submit"],
                    "attempts": j["attempt"]
                    + (1 if j["id"] in sim.running or j["done"] > 0 else 0),
                    "hardware_interruptions": j["hw"],
                    "done_h": j["done"] / 3600.0,
                    "work_h": j["work"] / 3600.0,
                    "completed": j["done"] >= j["work"] - 1e-6,
                }
                for j in sim.jobs
            ]
        )
        if sim.jobs
        else pl.DataFrame()
    )
    samples = pl.DataFrame(
        sim.reroute_samples,
        schema={"time_s": pl.Float64, "rerouted": pl.Int64, "running": pl.Int64},
        orient="row",
    )
    stats = {**sim.stats, "jobs": len(sim.jobs), "reroute_samples": samples}
    return events, truth, stats
