"""A Slurm-like GPU research cluster (Kokolis et al. HPCA'25), run on :mod:`engine`.

Scheduling: a queue in Slurm multifactor order (QOS priority plus an age term, so that no job
starves; the age counts from the attempt's eligible time, so a requeued job starts aging
again, as Slurm resets its begin time) scanned by coalesced scheduling passes; gang
allocation (whole nodes for jobs of one node or more, best-fit GPU packing for smaller ones);
EASY-style backfill behind a blocked head job (a later job may start if it ends, by its time
limit, before the head's shadow time, or leaves the head's nodes alone); preemption of
jobs of a lower, preemptible QOS that have run at least ``preempt_after_h`` when a whole-node
job of higher QOS is blocked (only the jobs on the nodes it takes; QOS decides who may
preempt, not the age term); automatic requeue (same job id, next attempt, eligible 120 s later) of jobs
killed by a node failure, a health check, an administrator or preemption, of jobs that ask for
it (RequeueExit), and of checkpointing training runs that crash on hardware, up to
``max_requeues`` times and within the job's lifetime (``max_lifetime_h`` from its first
start). A training run that still has work when its job reaches either limit continues as a
new submission of the same run (same user and name), from its last checkpoint.

Failures (:mod:`failures`): a cause that takes the node down ends its jobs NODE_FAIL after
``slurmd_timeout_s``; other causes crash the jobs on the node (FAILED, the driver logs the Xid)
and a health check at the node's next 5-minute tick drains it (if it catches the fault),
killing jobs that started in between; escaped faults leave the node in service. Repaired nodes
return to service. Everything that happens is appended to an :class:`EventLog`; nothing is
summarised inside the loop.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import numpy as np
import polars as pl

from reliability.sim.config import CAUSES, ClusterConfig, site_wording
from reliability.sim.engine import EventLog, Kernel, paused_gc
from reliability.sim.workload import PRIORITY

__all__ = ["ClusterSim"]

_JOB = itemgetter(2)  # the job of a queue entry

QUEUED, RUNNING, DONE = 0, 1, 2
_NO_JOB = -(2**62)  # the top QOS of a node without jobs (below every QOS priority)
REQUEUE_DELAY_S = 120.0
RESUBMIT_DELAY_S = 60.0  # a training run resubmits itself this long after its job ended
EPILOG_S = 30.0  # the job epilog's health check runs this long after a crash  # Slurm sets BeginTime about two minutes after a requeue
BACKFILL_DEPTH = 50  # jobs a backfill pass considers (Slurm bf_max_job_test, scaled down)
QUICK_DEPTH = 5  # jobs an event-triggered pass considers (Slurm default_queue_depth, scaled)
BACKFILL_INTERVAL_S = 180.0  # Slurm bf_interval (default 30 s; coarser here for speed: a
# job that only backfill can start waits up to 3 minutes more; event-triggered passes still
# start what fits at once)
#: seconds a blocked head job's reservation (and a failed preemption) is reused before the
#: plan is redone (Slurm's backfill re-plans every bf_interval; coarser here for speed)
REPLAN_S = 600.0
EXIT = {
    "COMPLETED": (0, 0),
    "FAILED": (1, 0),
    "CANCELLED": (0, 15),
    "OUT_OF_MEMORY": (0, 125),
    "TIMEOUT": (0, 1),
    "NODE_FAIL": (0, 0),
    "PREEMPTED": (0, 0),
    "REQUEUED": (0, 0),
}
#: the fields of an ``attempt`` event, in :meth:`EventLog.add_row` order
ATTEMPT_FIELDS = (
    "job",
    "attempt",
    "submit_s",
    "end_s",
    "state",
    "exit_code",
    "exit_signal",
    "nodes",
    "cause",
    "culprit",
    "productive_s",
    "lost_s",
    "overhead_s",
)
#: planned requeues (``requeue_kind`` codes of the workload) and the cause they log
REQUEUE_CAUSE = {1: "app_requeue", 2: "admin_requeue"}


class _Queue:
    """Pending jobs in Slurm's multifactor order.

    The order is ``priority + weight * min(age / max_age, 1)``, then submit time, then job
    index (smaller rank first).

    Among jobs younger than ``max_age`` the order never changes (every age grows alike), and
    among older ones it is by QOS priority then submit time; so two sorted lists hold the two
    groups (keys that do not depend on the time) and a third, sorted by submit time, moves
    jobs from the young list to the old one as they reach ``max_age``. :meth:`scan` walks the
    merged order without taking anything out (a scheduling pass looks at the first few dozen
    jobs and starts a few); :meth:`remove` takes out a job that started. :meth:`age` runs at
    the start of a pass.
    """

    __slots__ = ("aging", "entry", "max_age", "old", "prio", "submit", "weight", "young")

    def __init__(
        self, prio: list[int], submit: list[float], weight: float, max_age_s: float
    ) -> None:
        self.prio, self.submit = prio, submit
        self.weight = float(weight) if max_age_s > 0 else 0.0
        self.max_age = float(max_age_s)
        self.young: list[tuple[float, float, int]] = []  # (static key, submit, job), sorted
        self.old: list[tuple[float, float, int]] = []  # (key, submit, job), sorted
        #: (submit, job) of the young entries, sorted: jobs are queued about in the order of
        #: their submit times, so an entry goes at (or near) the end and leaves from the front
        self.aging: deque[tuple[float, int]] = deque()
        #: job -> its entry and whether it is in the old list
        self.entry: dict[int, tuple[tuple[float, float, int], bool]] = {}

    def __setstate__(self, state: tuple[None, dict[str, Any]]) -> None:
        for name, value in state[1].items():
            setattr(self, name, value)
        if not isinstance(self.aging, deque):  # a checkpoint from before: a heap
            self.aging = deque(sorted(self.aging))

    def __bool__(self) -> bool:
        return bool(self.entry)

    def __len__(self) -> int:
        return len(self.entry)

    def __contains__(self, job: int) -> bool:
        return job in self.entry

    def push(self, job: int, now: float) -> None:
        """Queue ``job`` (again: a job already queued is moved to its current key).

        Parameters
        ----------
        job : int
            Job index.
        now : float
            Simulated time [s].
        """
        if job in self.entry:
            self.remove(job)
        p, s = self.prio[job], self.submit[job]
        if self.weight == 0.0 or now - s >= self.max_age:
            self._push_old(job, s)
        else:
            e = (-(p - self.weight * s / self.max_age), s, job)
            bisect.insort(self.young, e)
            self.entry[job] = (e, False)
            aging, item = self.aging, (s, job)
            if not aging or aging[-1] <= item:
                aging.append(item)
            else:  # a requeued job: eligible from its end, queued 2 minutes later
                i = len(aging) - 1
                while i > 0 and aging[i - 1] > item:
                    i -= 1
                aging.insert(i, item)

    def remove(self, job: int) -> None:
        """Take ``job`` out of the queue.

        Parameters
        ----------
        job : int
            Job index (queued).
        """
        e, old = self.entry.pop(job)
        lst = self.old if old else self.young
        del lst[bisect.bisect_left(lst, e)]

    def age(self, now: float) -> None:
        """Move the jobs that reached the maximum age to the old list.

        Parameters
        ----------
        now : float
            Simulated time [s].
        """
        limit = now - self.max_age
        aging, entry = self.aging, self.entry
        while aging and aging[0][0] <= limit:
            s, job = aging.popleft()
            cur = entry.get(job)
            if cur is not None and not cur[1] and cur[0][1] == s:
                self.remove(job)
                self._push_old(job, s)

    def _push_old(self, job: int, s: float) -> None:
        """Insert ``job`` (eligible at ``s``) among the jobs at the maximum age."""
        e = (-(self.prio[job] + self.weight), s, job)
        bisect.insort(self.old, e)
        self.entry[job] = (e, True)

    def rank(self, job: int, now: float) -> tuple[float, float, int]:
        """Give ``job``'s sort key at ``now`` (smaller first).

        Parameters
        ----------
        job : int
            Job index.
        now : float
            Simulated time [s].

        Returns
        -------
        tuple of (float, float, int)
            (-(priority + age term), submit time [s], job).
        """
        s = self.submit[job]
        a = min(max(now - s, 0.0) / self.max_age, 1.0) if self.weight else 0.0
        return (-(self.prio[job] + self.weight * a), s, job)

    def scan(self, now: float) -> Iterator[int]:
        """Walk the queued jobs in order at ``now``, taking none out.

        The queue must not change while the walk goes on (collect what to :meth:`remove`).

        Parameters
        ----------
        now : float
            Simulated time [s] (ages are taken at it).

        Yields
        ------
        int
            Job indices, first in order first.
        """
        young, old = self.young, self.old
        ny, no = len(young), len(old)
        i = j = 0
        if ny and no:
            # a young job's key at ``now``: its static key minus weight * now / max_age
            shift = self.weight * now / self.max_age
            y, o = young[0], old[0]
            while True:
                if (y[0] - shift, y[1], y[2]) < o:
                    yield y[2]
                    i += 1
                    if i == ny:
                        break
                    y = young[i]
                else:
                    yield o[2]
                    j += 1
                    if j == no:
                        break
                    o = old[j]
        for k in range(i, ny):
            yield young[k][2]
        for k in range(j, no):
            yield old[k][2]

    def pop(self, now: float) -> int | None:
        """Remove and return the first job at ``now``.

        Parameters
        ----------
        now : float
            Simulated time [s].

        Returns
        -------
        int or None
            The job, or None if the queue is empty.
        """
        job = next(self.scan(now), None)
        if job is not None:
            self.remove(job)
        return job


@dataclass
class _Reservation:
    shadow_s: float
    need_whole: int


class ClusterSim:
    """One simulation run. Build with the drawn workload and failures, then :meth:`run`.

    Parameters
    ----------
    cfg : ClusterConfig
        The cluster, its workload and failure configuration.
    jobs : polars.DataFrame
        The drawn workload (:func:`~reliability.sim.workload.generate_workload`).
    failures : polars.DataFrame
        The drawn failure and false-alarm events (:func:`~reliability.sim.failures.draw_failures`).
    quarantine : dict of int to float, optional
        Node index -> time [s since the start] at which an admin drains it for good.
    """

    def __init__(
        self,
        cfg: ClusterConfig,
        jobs: pl.DataFrame,
        failures: pl.DataFrame,
        quarantine: dict[int, float] | None = None,
    ) -> None:
        self.cfg = cfg
        self.k = Kernel()
        self.log = EventLog()
        self.log.declare("attempt", ATTEMPT_FIELDS, lists=("nodes",))
        self.G = cfg.gpus_per_node
        n = jobs.height
        col = jobs.get_column
        self.gpus: list[int] = col("gpus").to_list()
        self.nn: list[int] = col("n_nodes").to_list()
        self.work: list[float] = col("work_s").to_list()
        self.prio: list[int] = col("priority").to_list()
        self.limit: list[float] = col("time_limit_s").to_list()
        self.outcome: list[str] = col("outcome").to_list()
        self.outcome_at: list[float] = col("outcome_at").to_list()
        self.training: list[bool] = col("training").to_list()
        self.submit: list[float] = col("submit_s").to_list()
        opt = lambda name, default: col(name).to_list() if name in jobs.columns else [default] * n  # noqa: E731
        #: planned requeue of the first attempt: 0 none, 1 RequeueExit, 2 admin (REQUEUE_CAUSE)
        self.requeue_kind: list[int] = opt("requeue_kind", 0)
        self.requeue_at: list[float] = opt("requeue_at", 0.5)
        self.state = [QUEUED] * n
        self.attempt = [0] * n
        self.requeues = [0] * n
        self.first_start = [math.nan] * n
        self.resumed = [False] * n  # a run's continuation: restarts from its checkpoint
        self.eligible = list(self.submit)  # submit time of the current attempt
        self.progress = [0.0] * n  # committed (checkpointed) productive work
        #: continuation jobs, in order: (job, parent, submit_s, work_s, outcome_at)
        self.continuations: list[tuple[int, int, float, float, float]] = []
        self.start_s: dict[int, float] = {}
        self.bound_s: dict[int, float] = {}  # latest end of a running attempt (limit, lifetime)
        self.alloc: dict[int, list[tuple[int, int]]] = {}  # job -> [(node, gpus)]
        # the running jobs by (latest end [s], job), as two lists (a search among floats is
        # cheaper than among tuples)
        self._end_t: list[float] = []
        self._end_job: list[int] = []
        w = cfg.workload
        self.ckpt_s = w.checkpoint_interval_min * 60.0
        self.u0_s = w.restart_overhead_min * 60.0
        self.preempt_after_s = w.preempt_after_h * 3600.0
        unknown = sorted(set(w.preemptible_qos) - set(PRIORITY))
        if unknown:
            raise ValueError(
                f"[workload] preemptible_qos: unknown QOS {unknown[0]!r}; known: {sorted(PRIORITY)}"
            )
        self.preemptible = frozenset(PRIORITY[q] for q in w.preemptible_qos)
        self.lifetime_s = w.max_lifetime_h * 3600.0
        self.max_requeues = w.max_requeues
        self.app_exit = w.app_requeue_exit_code
        # the age term counts from the current attempt's eligible time: Slurm resets a requeued
        # job's begin time, so a preempted job does not keep the age it had (else aged
        # low-QOS jobs go first, are preempted again, and churn the cluster)
        self.queue = _Queue(
            self.prio, self.eligible, w.age_priority_weight, w.age_priority_max_days * 86400.0
        )
        N = cfg.n_nodes
        self.free = [self.G] * N
        self.up = [True] * N
        self.on_node: list[set[int]] = [set() for _ in range(N)]
        # per node, for the preemption search: how many of its jobs are of a QOS that cannot
        # be preempted, the highest QOS among its jobs and the latest start of one of them
        # (arrays: the search tests every node at once; brought up to date for the nodes whose
        # jobs changed, ``_touched``, when a search runs)
        self.node_unpreemptible = np.zeros(N, dtype=np.int64)
        self.node_top_prio = np.full(N, _NO_JOB, dtype=np.int64)
        self.node_last_start = np.full(N, -math.inf)
        self._touched: set[int] = set()
        #: running jobs by QOS, each in the order they started: job -> start [s]
        self.running_by_prio: dict[int, dict[int, float]] = {p: {} for p in PRIORITY.values()}
        self.whole: list[int] = list(range(N))
        self.n_whole = N
        self.free_total = N * self.G
        self.part: list[list[int]] = [[] for _ in range(self.G)]
        self._sched = False
        self._res_cache: tuple[int, float, _Reservation] | None = None
        self._last_bf = -math.inf
        self._bf_timer = False
        self._force_deep = False
        self._preempt_failed: dict[int, float] = {}  # job -> when its preemption last failed
        self._lower_qos: dict[int, frozenset[int]] = {}  # QOS -> the preemptible ones below it
        self.down_since: dict[int, float] = {}
        self.down_info: dict[int, tuple[str, str, str]] = {}  # node -> state, reason, user
        #: node -> time [s] an admin drains it for good (a quarantined lemon suspect)
        self.quarantine = dict(quarantine or {})
        self.quarantined: set[int] = set()
        self.draining: set[int] = set()  # quarantined, still finishing its jobs
        self.failures = failures
        f = cfg.failures
        self.check_s = f.health_check_interval_s
        self.slurmd_timeout_s = f.slurmd_timeout_s

    def __setstate__(self, state: dict[str, Any]) -> None:
        ends = state.pop("_ends", None)
        if ends is not None:  # a checkpoint from before the two lists of running jobs
            state["_end_t"] = [t for t, _ in ends]
            state["_end_job"] = [j for _, j in ends]
        self.__dict__.update(state)

    # -- node capacity ---------------------------------------------------------------------
    def _mark(self, node: int) -> None:
        """Re-index a node after its free count or state changed (lazy heaps)."""
        if not self.up[node] or node in self.draining:
            return
        f = self.free[node]
        if f == self.G:
            heapq.heappush(self.whole, node)
        elif f > 0:
            heapq.heappush(self.part[f], node)

    def _take_whole(self, k: int) -> list[int]:
        out: list[int] = []
        whole, up, free, draining, G = self.whole, self.up, self.free, self.draining, self.G
        pop = heapq.heappop
        while len(out) < k:
            node = pop(whole)
            # a node taken already has free 0, so its duplicate entries in the heap are skipped
            if up[node] and free[node] == G and node not in draining:
                out.append(node)
                free[node] = 0
        self.n_whole -= k
        self.free_total -= k * self.G
        return out

    def _take_part(self, g: int) -> int | None:
        up, free, draining, part = self.up, self.free, self.draining, self.part
        pop = heapq.heappop
        for f in range(g, self.G):
            heap = part[f]
            while heap:
                node = pop(heap)
                if not up[node] or free[node] != f or node in draining:
                    continue  # a stale entry
                left = f - g
                free[node] = left
                self.free_total -= g
                if left > 0:  # _mark (the node is in service, not draining, and not whole)
                    heapq.heappush(part[left], node)
                return node
        return None

    def _fits(self, job: int) -> bool:
        g = self.gpus[job]
        if g >= self.G:
            return self.n_whole >= self.nn[job]
        if self.n_whole > 0:
            return True
        for f in range(g, self.G):
            heap = self.part[f]
            while heap and (
                not self.up[heap[0]] or self.free[heap[0]] != f or heap[0] in self.draining
            ):
                heapq.heappop(heap)
            if heap:
                return True
        return False

    def _allocate(self, job: int) -> list[tuple[int, int]]:
        g = self.gpus[job]
        if g >= self.G:
            return [(node, self.G) for node in self._take_whole(self.nn[job])]
        node = self._take_part(g)
        if node is None:
            (node,) = self._take_whole(1)
            self.free[node] = self.G - g
            self.free_total += self.G - g
            self._mark(node)
        return [(node, g)]

    # -- jobs ------------------------------------------------------------------------------
    # The hot paths below (an arrival, a start, an end, a scheduling pass: millions per run)
    # inline their small helpers and post their scheduling pass straight onto the kernel's heap
    # of events at the current time (an entry as Kernel.post_after(0.0, ...) makes it: time,
    # priority, FIFO number, action, args, no handle).
    def _arrive(self) -> None:
        job = self._next_submit
        nxt = self._next_submit = job + 1
        if nxt < self._n_drawn:
            k = self.k
            t = float(self.submit[nxt])
            if not (k.now <= t < math.inf):  # pragma: no cover - submissions are in order
                k.post_at(t, self._arrive, priority=-2)  # raises
            # Kernel.post_at, inline
            heapq.heappush(
                k._soon if t == k.now else k._heap, (t, -2, next(k._seq), self._arrive, (), None)
            )
        self.submit_job(job)

    def submit_job(self, job: int) -> None:
        """Submit ``job`` now: queue it (or, behind a blocked head job, try to backfill it).

        Parameters
        ----------
        job : int
            Index of the job (a drawn job or a run's continuation).
        """
        now = self.k.now
        head = self._res_cache
        # Behind a blocked head job, a new job of lower precedence can only backfill: try just
        # that instead of a whole scheduling pass (most submissions on a busy cluster).
        if head is not None and not self._sched and self.state[head[0]] == QUEUED:
            h = head[0]
            # the two jobs' order (_Queue.rank, inline)
            q, prio, elig = self.queue, self.prio, self.eligible
            w, m, s1, s2 = q.weight, q.max_age, elig[job], elig[h]
            a1 = min(max(now - s1, 0.0) / m, 1.0) if w else 0.0
            a2 = min(max(now - s2, 0.0) / m, 1.0) if w else 0.0
            if (-(prio[job] + w * a1), s1, job) > (-(prio[h] + w * a2), s2, h):
                if self._fits(job) and self._backfill_ok(job, head[2]):
                    self._start(job)
                else:
                    self.queue.push(job, now)
                return
        self.queue.push(job, now)
        if not self._sched:  # request_schedule
            self._sched = True
            k = self.k
            heapq.heappush(k._soon, (now, 10, next(k._seq), self._schedule, (), None))

    def request_schedule(self) -> None:
        """Ask for a scheduling pass at the current time (once, however often it is asked)."""
        if not self._sched:
            self._sched = True
            self.k.post_after(0.0, self._schedule, priority=10)

    def _start(self, job: int) -> None:
        """Start the next attempt of ``job`` now and plan its end.

        If nothing interrupts it, it ends at its planned outcome, its time limit, the job's
        lifetime, or a planned requeue.
        """
        k = self.k
        now = k.now
        self._preempt_failed.pop(job, None)
        self.alloc[job] = alloc = self._allocate(job)
        on_node, touched = self.on_node, self._touched
        for node, _ in alloc:
            on_node[node].add(job)
            touched.add(node)
        self.state[job] = RUNNING
        self.start_s[job] = now
        prio = self.prio[job]
        by_prio = self.running_by_prio.get(prio)
        if by_prio is None:
            by_prio = self.running_by_prio[prio] = {}
        by_prio[job] = now
        attempt = self.attempt[job]
        first = self.first_start[job]
        if attempt == 0 and math.isnan(first):
            first = self.first_start[job] = now
        limit = self.limit[job]
        life = first + self.lifetime_s - now
        bound = now + min(limit, life)
        self.bound_s[job] = bound
        end_t, end_job = self._end_t, self._end_job
        i = bisect.bisect_left(end_t, bound)
        while i < len(end_t) and end_t[i] == bound and end_job[i] < job:  # a tie: by job
            i += 1
        end_t.insert(i, bound)
        end_job.insert(i, job)
        # the planned end
        outcome = self.outcome[job]
        work = self.work[job]
        target = work if outcome in ("COMPLETED", "TIMEOUT") else work * self.outcome_at[job]
        training = self.training[job]
        done = self.progress[job] if training else 0.0
        # restart overhead u0: a training run reloading its checkpoint
        overhead = self.u0_s if (attempt > 0 or self.resumed[job]) and training else 0.0
        need = overhead + max(target - done, 0.0)
        cap = min(limit, life)
        if outcome == "TIMEOUT":
            dur, how, why = limit, "TIMEOUT", "user"
            if life < dur:
                dur, why = life, "lifetime"
        elif need > cap:
            dur, how, why = cap, "TIMEOUT", "lifetime" if life <= limit else "user"
        else:
            dur, how, why = need, outcome, "user" if outcome != "COMPLETED" else "none"
        kind = self.requeue_kind[job]
        if kind:
            self.requeue_kind[job] = 0  # once: the next attempt runs as planned
            dur, how, why = dur * self.requeue_at[job], "REQUEUED", REQUEUE_CAUSE[kind]
        # the planned end carries the attempt's number: if the attempt ends earlier (failure,
        # preemption, drain), the event finds the job done or in a later attempt and does nothing
        dur = max(dur, 0.0)
        t = now + dur
        if not t < math.inf:  # pragma: no cover - a planned end is finite
            k.post_after(dur, self._end_planned, job, attempt, how, why)  # raises
        # Kernel.post_after, inline
        heapq.heappush(
            k._soon if t == now else k._heap,
            (t, 0, next(k._seq), self._end_planned, (job, attempt, how, why), None),
        )

    def _end_planned(self, job: int, attempt: int, how: str, why: str) -> None:
        """End attempt ``attempt`` of ``job`` as planned, if it still runs."""
        if self.state[job] != RUNNING or self.attempt[job] != attempt:
            # that attempt already ended (a requeue numbers the next one, an end without
            # requeue leaves the job done): the event was withdrawn, not counted as processed,
            # as the kernel does not count a cancelled one
            self.k.processed -= 1
            return
        self._end(job, how, why, -1)

    def _end(self, job: int, how: str, cause: str, culprit: int) -> None:
        """Finish the current attempt of ``job`` now with state ``how``."""
        state = self.state
        if state[job] != RUNNING:
            return
        k = self.k
        now = k.now
        start = self.start_s.pop(job)
        del self.running_by_prio[self.prio[job]][job]
        end_t, end_job = self._end_t, self._end_job
        i = bisect.bisect_left(end_t, self.bound_s.pop(job))
        while end_job[i] != job:  # a tie
            i += 1
        del end_t[i]
        del end_job[i]
        elapsed = now - start
        attempt = self.attempt[job]
        training = self.training[job]
        # restart overhead u0: a training run reloading its checkpoint
        u0 = self.u0_s if (attempt > 0 or self.resumed[job]) and training else 0.0
        overhead = min(u0, elapsed)
        run = elapsed - overhead
        interrupted = how in ("NODE_FAIL", "PREEMPTED") or (
            how in ("FAILED", "REQUEUED") and cause not in ("user", "none", "app_requeue")
        )
        if training:
            committed = run if not interrupted else math.floor(run / self.ckpt_s) * self.ckpt_s
            lost = run - committed
            self.progress[job] += committed
            productive = committed
        else:
            productive = 0.0 if interrupted or how == "REQUEUED" else run
            lost = run if interrupted or how == "REQUEUED" else 0.0
        code, signal = (self.app_exit, 0) if cause == "app_requeue" else EXIT[how]
        # release the nodes
        nodes: list[int] = []
        on_node, touched, free, up, draining = (
            self.on_node,
            self._touched,
            self.free,
            self.up,
            self.draining,
        )
        G = self.G
        for node, g in self.alloc.pop(job):
            nodes.append(node)
            on_node[node].discard(job)
            touched.add(node)
            f = free[node] = free[node] + g
            if node in draining:  # capacity stays out; the node leaves once idle
                if not on_node[node]:
                    k.post_after(0.0, self._finish_drain, node, priority=-5)
                continue
            if up[node]:
                self.free_total += g
                if f == G:
                    self.n_whole += 1
                    heapq.heappush(self.whole, node)  # _mark
                elif f > 0:
                    heapq.heappush(self.part[f], node)
        self.log.add_row(
            "attempt",
            (
                start,
                job,
                attempt,
                self.eligible[job],
                now,
                how,
                code,
                signal,
                nodes,
                cause,
                culprit,
                productive,
                lost,
                overhead,
            ),
        )
        requeue = how in ("NODE_FAIL", "PREEMPTED", "REQUEUED") or (interrupted and training)
        if requeue and (
            self.requeues[job] >= self.max_requeues
            or now >= self.first_start[job] + self.lifetime_s
        ):
            requeue = False  # Slurm holds the job (MaxBatchRequeue) or its lifetime is over
            cause = "lifetime"
        if requeue:
            state[job] = QUEUED
            self.attempt[job] += 1
            self.requeues[job] += 1
            self.eligible[job] = now
            k.post_after(REQUEUE_DELAY_S, self._requeue, job)
            # the lifetime runs on while the job waits: if it is still pending when its
            # lifetime ends, it must not start (it would get nodes and end at once, TIMEOUT)
            k.post_at(
                self.first_start[job] + self.lifetime_s,
                self._expire,
                job,
                self.attempt[job],
                priority=-4,
            )
        else:
            state[job] = DONE
            if cause == "lifetime" and training:
                self._continue(job)
        if not self._sched:  # request_schedule
            self._sched = True
            heapq.heappush(k._soon, (now, 10, next(k._seq), self._schedule, (), None))

    def _continue(self, job: int) -> None:
        """Resubmit a training run whose job hit its lifetime or requeue limit.

        The new job of the same run has the work left and resumes from the last checkpoint.
        """
        work, done = self.work[job], self.progress[job]
        if self.outcome[job] in ("COMPLETED", "TIMEOUT"):
            target_left = 1.0
        else:
            left = self.work[job] * self.outcome_at[job] - done
            if left <= 0.0:
                return
            target_left = left / (work - done)
        if work - done <= 0.0:
            return
        new = len(self.gpus)
        when = self.k.now + RESUBMIT_DELAY_S
        for lst in (self.gpus, self.nn, self.prio, self.limit, self.outcome, self.training):
            lst.append(lst[job])
        self.work.append(work - done)
        self.outcome_at.append(target_left)
        self.submit.append(when)
        self.requeue_kind.append(0)
        self.requeue_at.append(0.5)
        self.state.append(QUEUED)
        self.attempt.append(0)
        self.requeues.append(0)
        self.first_start.append(math.nan)
        self.resumed.append(True)
        self.eligible.append(when)
        self.progress.append(0.0)
        self.continuations.append((new, job, when, work - done, target_left))
        self.k.post_at(when, self.submit_job, new, priority=-2)

    def _requeue(self, job: int) -> None:
        if self.state[job] != QUEUED:  # its lifetime ended during the requeue delay
            self.k.processed -= 1  # withdrawn, as _end_planned
            return
        self.queue.push(job, self.k.now)
        self.request_schedule()

    def _expire(self, job: int, attempt: int) -> None:
        """End a requeued ``job`` whose lifetime ran out before attempt ``attempt`` started.

        As when a requeue is refused at the lifetime (:meth:`_end`): the job is done, and a
        training run continues as a new job. No attempt is recorded: it never ran.
        """
        if self.state[job] != QUEUED or self.attempt[job] != attempt:
            self.k.processed -= 1  # withdrawn (it started, or ended otherwise), as _end_planned
            return
        if job in self.queue:
            self.queue.remove(job)
        self._preempt_failed.pop(job, None)
        self.state[job] = DONE
        if self.training[job]:
            self._continue(job)
        self.request_schedule()  # it may have been the blocked head job

    # -- scheduling ------------------------------------------------------------------------
    def _backfill_timer(self) -> None:
        self._bf_timer = False
        self._force_deep = True
        self.request_schedule()

    def _schedule(self) -> None:
        self._sched = False
        k = self.k
        now = k.now
        deep = self._force_deep or now - self._last_bf >= BACKFILL_INTERVAL_S
        if deep:
            self._last_bf = now
            self._force_deep = False
        elif not self._bf_timer:  # make sure the next backfill pass happens even if all is quiet
            self._bf_timer = True
            k.post_at(self._last_bf + BACKFILL_INTERVAL_S, self._backfill_timer, priority=11)
        queue = self.queue
        aging = queue.aging
        if aging and aging[0][0] <= now - queue.max_age:
            queue.age(now)
        if not queue.entry:
            return  # nothing is pending
        depth = BACKFILL_DEPTH if deep else QUICK_DEPTH
        young, old = queue.young, queue.old
        # the queue in order (it does not change during the pass); one list needs no merge
        jobs = queue.scan(now) if young and old else map(_JOB, young or old)
        started: list[int] = []
        res: _Reservation | None = None
        head_prio = math.inf
        scanned = 0
        state, gpus, nn, G, start = self.state, self.gpus, self.nn, self.G, started.append
        prio, limits, attempts, first_start = self.prio, self.limit, self.attempt, self.first_start
        lifetime, preempt_failed = self.lifetime_s, self._preempt_failed
        shadow = need_whole = 0.0
        # the head job is always considered (it may preempt); backfill needs free GPUs
        for job in jobs:
            if scanned >= depth or (self.free_total <= 0 and res is not None):
                break
            if state[job] != QUEUED:  # pragma: no cover - a queued job is QUEUED
                raise AssertionError(f"job {job} is queued but not pending")
            scanned += 1
            g = gpus[job]
            if res is not None and g > self.free_total:
                continue  # cannot fit anywhere now: skip the detailed checks
            if res is None and self.free_total == 0 and g < G:
                break
            # whether the job fits now (_fits, its common cases inline)
            fits = self.n_whole >= nn[job] if g >= G else (self.n_whole > 0 or self._fits(job))
            if res is None:
                if not fits and g >= G:  # _preempt_for's own first tests, inline
                    failed = preempt_failed.get(job)
                    if failed is None or now - failed >= REPLAN_S:
                        fits = self._preempt_for(job)
                if fits:
                    self._start(job)
                    start(job)
                    continue
                head_prio = prio[job]
                cached = self._res_cache
                if cached is not None and cached[0] == job and now - cached[1] < REPLAN_S:
                    res = cached[2]
                else:
                    res = self._shadow(job)
                    self._res_cache = (job, now, res)
                shadow, need_whole = res.shadow_s, res.need_whole
                continue
            ok = False
            if fits:  # _backfill_ok, inline
                limit = limits[job]
                if attempts[job] != 0:  # a job that never started has its whole lifetime ahead
                    first = first_start[job]
                    limit = min(limit, lifetime if first != first else first + lifetime - now)
                if now + limit <= shadow:
                    ok = True
                elif g >= G:
                    ok = self.n_whole - nn[job] >= need_whole
                elif self.n_whole - 1 >= need_whole:
                    ok = True
                else:
                    ok = self.n_whole >= need_whole and self._has_part(g)
            if ok:
                self._start(job)
                start(job)
            elif (
                prio[job] > head_prio
                and (now + limits[job] <= shadow or head_prio in self.preemptible)
                and self._preempt_for(job)
            ):
                # preemption follows QOS (Slurm preempt/qos): a job of a higher QOS than the
                # head (which got ahead by age) may still preempt lower-QOS work if it ends
                # before the head's reservation, or if the head is itself of a preemptible QOS
                # (it could preempt the head too: QOS, not age, decides who preempts whom)
                self._start(job)
                start(job)
        for job in started:
            queue.remove(job)

    def _backfill_ok(self, job: int, res: _Reservation) -> bool:
        # a job that never started has its whole lifetime ahead (limits are within it)
        limit = (
            self.limit[job]
            if self.attempt[job] == 0
            else min(self.limit[job], self._life_left(job))
        )
        if self.k.now + limit <= res.shadow_s:
            return True
        if self.gpus[job] >= self.G:
            return self.n_whole - self.nn[job] >= res.need_whole
        # a small job leaves the head's whole nodes alone if it fits on a partial node
        if self.n_whole - 1 >= res.need_whole:
            return True
        return self.n_whole >= res.need_whole and self._has_part(self.gpus[job])

    def _life_left(self, job: int) -> float:
        first = self.first_start[job]
        return self.lifetime_s if math.isnan(first) else first + self.lifetime_s - self.k.now

    def _has_part(self, g: int) -> bool:
        return any(self.part[f] for f in range(g, self.G))

    def _would_free(self, job: int, free: dict[int, int]) -> int:
        """Add ``job``'s GPUs to the hypothetical free counts ``free``.

        Returns how many of its (in-service) nodes that makes wholly free.
        """
        became_whole = 0
        for node, g in self.alloc[job]:
            if not self.up[node]:
                continue
            before = free.get(node, self.free[node])
            free[node] = before + g
            if free[node] == self.G and before < self.G:
                became_whole += 1
        return became_whole

    def _shadow(self, job: int) -> _Reservation:
        need = self.nn[job] if self.gpus[job] >= self.G else 1
        if self.n_whole >= need:
            return _Reservation(self.k.now, need)
        free: dict[int, int] = {}
        whole = self.n_whole
        up, now_free, alloc, G = self.up, self.free, self.alloc, self.G
        for t, j in zip(self._end_t, self._end_job, strict=True):
            for node, g in alloc[j]:  # _would_free
                if not up[node]:
                    continue
                before = free.get(node, now_free[node])
                after = free[node] = before + g
                if after == G and before < G:
                    whole += 1
            if whole >= need:
                return _Reservation(t, need)
        return _Reservation(math.inf, need)

    def _update_nodes(self) -> None:
        """Bring the per-node job summaries up to date for the nodes whose jobs changed."""
        touched = list(self._touched)
        if not touched:
            return
        prio, start, preemptible, on_node = self.prio, self.start_s, self.preemptible, self.on_node
        unpreemptible: list[int] = []
        top: list[int] = []
        last: list[float] = []
        for node in touched:
            jobs = on_node[node]
            if len(jobs) == 1:  # most nodes: one whole-node job
                (j,) = jobs
                p = prio[j]
                unpreemptible.append(0 if p in preemptible else 1)
                top.append(p)
                last.append(start[j])
            elif jobs:
                job_prio = [prio[j] for j in jobs]
                unpreemptible.append(len(job_prio) - sum(map(preemptible.__contains__, job_prio)))
                top.append(max(job_prio))
                last.append(max(map(start.__getitem__, jobs)))
            else:
                unpreemptible.append(0)
                top.append(_NO_JOB)
                last.append(-math.inf)
        self.node_unpreemptible[touched] = unpreemptible
        self.node_top_prio[touched] = top
        self.node_last_start[touched] = last
        self._touched.clear()

    def _preempt_for(self, job: int) -> bool:
        """Preempt lower-priority jobs (run >= preempt_after) to start whole-node ``job``.

        As Slurm does (select/cons_tres with preemption), the job is placed on nodes first and
        only the jobs on those nodes are preempted: a node is a candidate when every job on it
        is preemptable, and the nodes whose jobs have the lowest QOS are taken first (then in
        node order, as Slurm walks its node table), until enough nodes are wholly free.
        Preempting the youngest jobs cluster-wide instead kills many small jobs on nodes that
        never become free (a preemption storm). Preferring the nodes with the fewest jobs
        (tried: an invented rule, not Slurm's) spared small jobs and preempted less: 7.7% of
        attempts against 8.6% on a full rsc1 run (seed 900).
        """
        if self.gpus[job] < self.G:
            return False
        now = self.k.now
        failed = self._preempt_failed.get(job)
        if failed is not None and now - failed < REPLAN_S:
            return False
        need = self.nn[job] - self.n_whole
        prio, start, after = self.prio, self.start_s, self.preempt_after_s
        mine = prio[job]
        low = self._lower_qos.get(mine)
        if low is None:
            low = self._lower_qos[mine] = frozenset(p for p in self.preemptible if p < mine)
        # look again when the next lower-QOS job has run long enough to be preempted (each
        # QOS's running jobs are in the order they started: the young ones come last)
        first_young = math.inf
        for p in low:
            starts = list(self.running_by_prio[p].values())
            i = bisect.bisect_left(starts, True, key=lambda s: now - s < after)
            if i < len(starts) and starts[i] < first_young:
                first_young = starts[i]
        if first_young < math.inf:
            self.k.post_at(first_young + after, self.request_schedule, priority=9)
        # a candidate node: in service, and every job on it of a preemptible QOS below the
        # job's that has run long enough (so its latest job has)
        on_node, up, draining, top = self.on_node, self.up, self.draining, self.node_top_prio
        self._update_nodes()
        (idx,) = np.nonzero(
            (top < mine)
            & (top != _NO_JOB)
            & (self.node_unpreemptible == 0)
            & (now - self.node_last_start >= after)
        )
        # the lowest top QOS first, then in node order
        order = idx[np.argsort(top[idx], kind="stable")].tolist()
        cands = [n for n in order if up[n] and n not in draining]
        free: dict[int, int] = {}
        chosen: list[int] = []
        taken: set[int] = set()
        gained = 0
        for node in cands:
            for v in sorted(on_node[node] - taken, key=lambda j: (prio[j], -start[j], j)):
                taken.add(v)
                chosen.append(v)
                gained += self._would_free(v, free)
            if gained >= need:
                break
        if gained < need:
            self._preempt_failed[job] = now
            return False
        for v in chosen:
            self._end(v, "PREEMPTED", "preemption", -1)
        self._sched = False  # _end requested a pass; this pass continues
        return self._fits(job)

    # -- failures --------------------------------------------------------------------------
    def _next_check(self, node_phase: float, t: float) -> float:
        k = math.floor((t - node_phase) / self.check_s) + 1
        return node_phase + k * self.check_s

    def _failure(
        self, node: int, cause: str, detected: bool, repair_s: float, lemon: bool, phase: float
    ) -> None:
        now = self.k.now
        c = CAUSES[cause]
        if not self.up[node]:
            self.log.add(
                "failure",
                now,
                node=node,
                cause=cause,
                lemon=lemon,
                detected=False,
                effect="skipped",
            )
            return
        if c.xid is not None:
            self.log.add("xid", now, node=node, xid=c.xid, gpu=int(now * 7919) % self.G)
        if c.node_down:
            self.log.add(
                "failure",
                now,
                node=node,
                cause=cause,
                lemon=lemon,
                detected=True,
                effect="node_down",
            )
            self.k.post_after(
                self.slurmd_timeout_s,
                self._take_down,
                node,
                "DOWN",
                "Not responding",
                "slurm",
                repair_s,
                cause,
            )
            return
        crashed = sorted(self.on_node[node])
        for job in crashed:
            self._end(job, "FAILED", cause, node)
        self.log.add(
            "failure", now, node=node, cause=cause, lemon=lemon, detected=detected, effect="crash"
        )
        if detected and crashed:
            # the crashed jobs' epilog runs the health check before the node can take new work
            # (Slurm keeps it COMPLETING): it is out of service from now, the check reports at
            # the end of the epilog
            wording = site_wording(c.component, c.reason, node, self.k.now)
            self._take_down(node, "DRAIN", wording, "root", repair_s, cause)
            self.k.post_after(EPILOG_S, self._log_health, node, cause)
        elif detected:
            # an idle node is caught at its next periodic (5-minute) check
            self.k.post_at(self._next_check(phase, now), self._health_check, node, cause, repair_s)

    def _log_health(self, node: int, cause: str) -> None:
        c = CAUSES[cause]
        self.log.add(
            "health", self.k.now, node=node, component=c.component, code=cause, message=c.reason
        )

    def _health_check(self, node: int, cause: str | None, repair_s: float) -> None:
        if not self.up[node]:
            return
        reason = CAUSES[cause].reason if cause else "health check failed (transient)"
        component = CAUSES[cause].component if cause else "unknown"
        wording = site_wording(component, reason, node, self.k.now)
        self.log.add(
            "health",
            self.k.now,
            node=node,
            component=component,
            code=cause or "false_alarm",
            message=reason,
        )
        self._take_down(node, "DRAIN", wording, "root", repair_s, cause or "false_alarm")

    def _false_alarm(self, node: int, repair_s: float, phase: float) -> None:
        self.k.post_at(
            self._next_check(phase, self.k.now), self._health_check, node, None, repair_s
        )

    def _take_down(
        self, node: int, state: str, reason: str, user: str, repair_s: float, cause: str
    ) -> None:
        if not self.up[node]:
            return
        # a silent node: Slurm ends its jobs NODE_FAIL; a health check drain requeues them
        how = "NODE_FAIL" if state == "DOWN" else "REQUEUED"
        for job in sorted(self.on_node[node]):
            self._end(job, how, cause, node)
        if node in self.draining:  # its capacity is already out of the pools
            self.draining.discard(node)
        else:
            if self.free[node] == self.G:
                self.n_whole -= 1
            self.free_total -= self.free[node]
        self.up[node] = False
        now = self.k.now
        self.down_since[node] = now
        self.down_info[node] = (state, reason, user)
        if math.isfinite(repair_s):
            self.k.post_after(repair_s, self._return, node, state, reason, user)

    # -- quarantine (an admin drains a suspected lemon for good) ---------------------------
    QUARANTINE_REASON = "quarantined: suspected lemon node"

    def _quarantine(self, node: int) -> None:
        self.quarantined.add(node)
        if not self.up[node]:
            return  # out of service now; it will not come back (see _return)
        if not self.on_node[node]:
            self._take_down(node, "DRAIN", self.QUARANTINE_REASON, "admin", math.inf, "quarantine")
            return
        # Slurm DRAIN: running jobs finish, no new work is placed
        if self.free[node] == self.G:  # pragma: no cover - a node with jobs is never whole
            self.n_whole -= 1
        self.free_total -= self.free[node]
        self.draining.add(node)

    def _finish_drain(self, node: int) -> None:
        if node not in self.draining or self.on_node[node] or not self.up[node]:
            return
        self.draining.discard(node)
        self.up[node] = False
        self.down_since[node] = self.k.now
        self.down_info[node] = ("DRAIN", self.QUARANTINE_REASON, "admin")

    def _return(self, node: int, state: str, reason: str, user: str) -> None:
        start = self.down_since.pop(node)
        self.log.add(
            "node_state", start, node=node, state=state, end_s=self.k.now, reason=reason, user=user
        )
        if node in self.quarantined:  # repaired, but an admin keeps it out of service
            self.down_since[node] = self.k.now
            self.down_info[node] = ("DRAIN", self.QUARANTINE_REASON, "admin")
            return
        self.up[node] = True
        self.free_total += self.free[node]
        if self.free[node] == self.G:
            self.n_whole += 1
        self._mark(node)
        self.request_schedule()

    # -- run -------------------------------------------------------------------------------
    def run(self, progress: Callable[[float], None] | None = None) -> EventLog:
        """Run to the horizon; record what is still running, pending or down then.

        Parameters
        ----------
        progress : callable, optional
            Called with the simulated time [s] after each simulated day.

        Returns
        -------
        EventLog
            Everything the run did.
        """
        self.begin()
        self.advance(self.cfg.horizon_s, progress)
        return self.finish()

    def begin(self) -> None:
        """Schedule the first submission, every drawn failure and the quarantine drains."""
        k = self.k
        # submissions are fed one at a time (the next is scheduled when one arrives): the
        # event heap stays small instead of holding millions of future arrivals
        self._next_submit = 0
        self._n_drawn = len(self.submit)
        if self.submit:
            k.post_at(self.submit[0], self._arrive, priority=-2)
        fcols = self.failures.select(
            "node", "time_s", "kind", "cause", "detected", "repair_s", "lemon", "check_phase_s"
        ).rows()
        for node, t in sorted(self.quarantine.items()):
            k.post_at(t, self._quarantine, node, priority=-3)
        for node, t, kind, cause, detected, repair_s, lemon, phase in fcols:
            if kind == "failure":
                k.post_at(
                    t, self._failure, node, cause, detected, repair_s, lemon, phase, priority=-1
                )
            else:
                k.post_at(t, self._false_alarm, node, repair_s, phase, priority=-1)

    def add_quarantine(self, quarantine: dict[int, float]) -> None:
        """Drain nodes for good at the given times, not before the current time.

        For a run resumed from a checkpoint this is the same as if the drains had been
        scheduled by :meth:`begin`, since a drain runs before anything else at its time.

        Parameters
        ----------
        quarantine : dict of int to float
            Node index -> time [s since the start] of its drain.

        Raises
        ------
        ValueError
            If a drain time is before the current simulated time.
        """
        for node, t in sorted(quarantine.items()):
            if t < self.k.now:
                raise ValueError(
                    f"quarantine of node {node} at {t} s precedes now ({self.k.now} s)"
                )
            self.quarantine[node] = t
            self.k.post_at(t, self._quarantine, node, priority=-3)

    def advance(self, until: float, progress: Callable[[float], None] | None = None) -> None:
        """Run the events before ``until``, a simulated day at a time.

        Parameters
        ----------
        until : float
            Simulated time to stop at [s since the start]; at most the horizon.
        progress : callable, optional
            Called with the simulated time [s] after each simulated day.
        """
        until = min(until, self.cfg.horizon_s)
        day = 86400.0
        t = self.k.now
        with paused_gc():  # across the days too: see paused_gc
            while t < until:
                t = min((math.floor(t / day) + 1) * day, until)
                self.k.run(until=t)
                if progress is not None:
                    progress(t)

    def finish(self, horizon_s: float | None = None) -> EventLog:
        """Record what is still running, pending or down at the horizon.

        Parameters
        ----------
        horizon_s : float or None
            When the observation ends [s since the start]: the current time of a run stopped
            early (:func:`reliability.sim.run.snapshot_cluster`); None: the run's horizon.

        Returns
        -------
        EventLog
            Everything the run did.
        """
        horizon = self.cfg.horizon_s if horizon_s is None else horizon_s
        for job in sorted(self.start_s):
            self.log.add(
                "attempt",
                self.start_s[job],
                job=job,
                attempt=self.attempt[job],
                submit_s=self.eligible[job],
                end_s=None,
                state="RUNNING",
                exit_code=None,
                exit_signal=None,
                nodes=[n for n, _ in self.alloc[job]],
                cause="none",
                culprit=-1,
                productive_s=None,
                lost_s=None,
                overhead_s=None,
            )
        for job in range(len(self.state)):
            if self.state[job] == QUEUED and self.eligible[job] < horizon:
                self.log.add(
                    "attempt",
                    None,
                    job=job,
                    attempt=self.attempt[job],
                    submit_s=self.eligible[job],
                    end_s=None,
                    state="PENDING",
                    exit_code=None,
                    exit_signal=None,
                    nodes=[],
                    cause="none",
                    culprit=-1,
                    productive_s=None,
                    lost_s=None,
                    overhead_s=None,
                )
        for node in sorted(self.down_since):
            state, reason, user = self.down_info.get(node, ("DOWN", "", "slurm"))
            self.log.add(
                "node_state",
                self.down_since[node],
                node=node,
                state=state,
                end_s=None,
                reason=reason or "still out of service at the end of the run",
                user=user,
            )
        return self.log
