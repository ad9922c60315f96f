"""The event kernel: exact event sequences on tiny scenarios (as SimPy's tests do)."""

import math
import random

import polars as pl
import pytest

from reliability.sim import EventLog, Kernel, SchedulingError


def test_order_time_then_priority_then_fifo():
    k = Kernel()
    seen = []
    k.at(5, seen.append, "t5-first")
    k.at(1, seen.append, "t1")
    k.at(5, seen.append, "t5-second")
    k.at(5, seen.append, "t5-urgent", priority=-1)
    k.after(0, seen.append, "t0")
    assert k.run() == 5
    assert seen == ["t0", "t1", "t5-urgent", "t5-first", "t5-second"]
    assert k.now == 5


def test_cancel_and_run_until():
    k = Kernel(start=10)
    seen = []
    h = k.after(1, seen.append, "cancelled")
    k.after(2, seen.append, "kept")
    k.after(5, seen.append, "later")
    k.cancel(h)
    assert k.run(until=15) == 1  # events strictly before `until`
    assert seen == ["kept"]
    assert k.now == 15
    assert k.peek() == 15
    assert k.run() == 1
    assert seen == ["kept", "later"]
    assert k.peek() == math.inf
    assert k.step() is False


def test_run_pauses_the_garbage_collector_and_restores_it():
    import gc

    k = Kernel()
    seen = []
    k.at(1, lambda: seen.append(gc.isenabled()))
    k.at(2, lambda: 1 / 0)
    assert gc.isenabled()
    with pytest.raises(ZeroDivisionError):
        k.run()
    assert seen == [False]
    assert gc.isenabled()  # restored after an action raised
    gc.disable()
    try:
        k.at(3, seen.append, "ran")
        k.run(until=4)
        assert not gc.isenabled()  # left as it was found
    finally:
        gc.enable()
    assert seen == [False, "ran"]


def test_clear_drops_every_scheduled_event():
    k = Kernel()
    seen = []
    k.at(1, seen.append, "a")
    k.post_at(2, seen.append, "b")
    k.clear()
    assert k.pending == 0
    assert k.run() == 0
    assert seen == []


def test_scheduling_errors():
    k = Kernel(start=3)
    with pytest.raises(SchedulingError, match="in the past"):
        k.at(2, print)
    with pytest.raises(SchedulingError, match="negative delay"):
        k.after(-1, print)
    with pytest.raises(SchedulingError, match="not finite"):
        k.at(math.nan, print)
    with pytest.raises(SchedulingError, match="until"):
        k.run(until=1)


def test_posted_events_interleave_with_handled_ones():
    # post_at/post_after share at/after's order (time, priority, then first scheduled first)
    k = Kernel()
    seen = []
    k.at(5, seen.append, "t5-handled")
    k.post_at(5, seen.append, "t5-posted")
    k.post_at(5, seen.append, "t5-urgent", priority=-1)
    h = k.at(5, seen.append, "t5-cancelled")
    k.post_after(1, seen.append, "t1")
    k.cancel(h)
    assert k.peek() == 1
    assert k.run() == 4
    assert seen == ["t1", "t5-urgent", "t5-handled", "t5-posted"]


def test_events_at_the_current_time_run_in_the_order_of_one_queue():
    # the kernel keeps zero-delay events apart (a second heap); the order must be that of a
    # single queue by (time, priority, scheduling order): checked against a naive reference
    # that takes the minimum of a plain list, on a random cascade of follow-up events
    rng = random.Random(3)
    plans: dict[int, list[tuple[float, int, str]]] = {}
    for label in range(3000):
        plans[label] = [
            (rng.choice((0.0, 0.0, 0.0, 0.5, 1.0, 2.5)), rng.choice((-5, -1, 0, 10, 11)),
             rng.choice(("post_after", "post_at", "after", "at")))
            for _ in range(rng.choice((0, 1, 2, 2)))
        ]  # fmt: skip
    starts = [(0.0, 0), (0.0, 10), (1.0, 0), (1.0, -1), (2.0, 5)]

    k = Kernel()
    seen: list[int] = []
    count = iter(range(len(starts), 3000))

    def act(label: int) -> None:
        seen.append(label)
        for delay, prio, how in plans[label]:
            nxt = next(count, None)
            if nxt is None:
                return
            if how == "post_after":
                k.post_after(delay, act, nxt, priority=prio)
            elif how == "post_at":
                k.post_at(k.now + delay, act, nxt, priority=prio)
            elif how == "after":
                k.after(delay, act, nxt, priority=prio)
            else:
                k.at(k.now + delay, act, nxt, priority=prio)

    for label, (t, prio) in enumerate(starts):
        k.post_at(t, act, label, priority=prio)
    for until in (0.5, 1.0, 3.0, 3.0, 40.0):
        k.run(until=until)
        assert k.now == until
    k.run()

    # the reference: every event in one list, the smallest (time, priority, order) first
    want: list[int] = []
    queue = [(t, prio, i, i) for i, (t, prio) in enumerate(starts)]
    order, count = len(starts), iter(range(len(starts), 3000))
    while queue:
        item = min(queue)
        queue.remove(item)
        now, _, _, label = item
        want.append(label)
        for delay, prio, _ in plans[label]:
            nxt = next(count, None)
            if nxt is None:
                break
            queue.append((now + delay, prio, order, nxt))
            order += 1
    assert len(want) == 3000
    assert seen == want
    assert k.processed == len(want)


def test_posted_events_are_checked_like_handled_ones():
    k = Kernel(start=3)
    with pytest.raises(SchedulingError, match="in the past"):
        k.post_at(2, print)
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(SchedulingError, match="not finite"):
            k.post_at(bad, print)
    with pytest.raises(SchedulingError, match="negative delay"):
        k.post_after(-1, print)
    for bad in (math.nan, math.inf):
        with pytest.raises(SchedulingError, match="not finite"):
            k.post_after(bad, print)
    assert k.pending == 0


def _toy_cluster(k: Kernel, log: EventLog, fail_at: float | None, preempt_at: float | None):
    """Two jobs on one node; the node may fail (job requeued), a high-priority job may preempt."""
    state = {"running": None, "attempt": {"A": 0, "B": 0}, "ends": {}}

    def start(job, runtime):
        state["running"] = job
        log.add("start", k.now, job=job, attempt=state["attempt"][job])
        state["ends"][job] = k.after(runtime, end, job, "COMPLETED")

    def end(job, how):
        log.add("end", k.now, job=job, attempt=state["attempt"][job], state=how)
        state["running"] = None
        if how in ("NODE_FAIL", "PREEMPTED"):
            state["attempt"][job] += 1
            k.after(10, start, job, 100)  # requeue: same job id, next attempt
        elif job == "A":
            k.after(0, start, "B", 50)

    def fail():
        job = state["running"]
        if job is not None:
            k.cancel(state["ends"][job])
            end(job, "NODE_FAIL")

    def preempt():
        job = state["running"]
        if job == "B":
            k.cancel(state["ends"][job])
            end(job, "PREEMPTED")

    k.at(0, start, "A", 100)
    if fail_at is not None:
        k.at(fail_at, fail, priority=-1)
    if preempt_at is not None:
        k.at(preempt_at, preempt)


def test_exact_event_log_failure_and_requeue():
    k, log = Kernel(), EventLog()
    _toy_cluster(k, log, fail_at=30, preempt_at=None)
    k.run()
    ends = log.frame("end").rows()
    starts = log.frame("start").rows()
    assert starts == [(0.0, "A", 0), (40.0, "A", 1), (140.0, "B", 0)]
    assert ends == [
        (30.0, "A", 0, "NODE_FAIL"),
        (140.0, "A", 1, "COMPLETED"),
        (190.0, "B", 0, "COMPLETED"),
    ]


def test_exact_event_log_preemption():
    k, log = Kernel(), EventLog()
    _toy_cluster(k, log, fail_at=None, preempt_at=120)
    k.run()
    assert log.frame("end").rows() == [
        (100.0, "A", 0, "COMPLETED"), (120.0, "B", 0, "PREEMPTED"), (230.0, "B", 1, "COMPLETED"),
    ]  # fmt: skip
    assert len(log) == 6
    assert log.kinds == ["start", "end"]


def test_same_scenario_same_log():
    a, b = (EventLog(), EventLog())
    for log in (a, b):
        k = Kernel()
        _toy_cluster(k, log, fail_at=30, preempt_at=150)
        k.run()
    assert a.frame("end").equals(b.frame("end"))


def test_event_log_checks_fields():
    log = EventLog()
    log.add("x", 1.0, a=1)
    with pytest.raises(ValueError, match="differ"):
        log.add("x", 2.0, b=1)
    assert log.frame("missing", schema={"time": pl.Float64, "a": pl.Int64}).height == 0


@pytest.mark.parametrize("flush_rows", [2, 3, 65536])
def test_add_row_records_what_add_records(flush_rows, monkeypatch):
    """The positional fast path (declare + add_row, buffered and flushed in blocks) gives the
    same frame as one ``add`` per event, whatever the block size, mixed with ``add`` calls
    in any order, with list fields and None values."""
    monkeypatch.setattr(EventLog, "FLUSH_ROWS", flush_rows)
    rows = [(float(i), i, f"s{i % 3}", [i, i + 1][: i % 3], None if i % 4 == 0 else i / 2)
            for i in range(11)]  # fmt: skip
    slow, fast = EventLog(), EventLog()
    fast.declare("a", ("job", "state", "nodes", "x"), lists=("nodes",))
    assert fast.kinds == []
    assert len(fast) == 0
    for i, (t, job, state, nodes, x) in enumerate(rows):
        slow.add("a", t, job=job, state=state, nodes=nodes, x=x)
        if i % 5 == 4:  # the keyword path on a declared kind keeps the order
            fast.add("a", t, job=job, state=state, nodes=nodes, x=x)
        else:
            fast.add_row("a", (t, job, state, nodes, x))
        assert len(fast) == i + 1
    assert fast.kinds == ["a"]
    got, want = fast.frame("a"), slow.frame("a")
    assert got.equals(want)
    assert got.get_column("nodes").to_list() == [r[3] for r in rows]
    fast.add_row("a", (99.0, 99, "s", [7], 1.0))  # a row after a frame was built is seen
    assert fast.frame("a").height == 12


def test_declare_and_add_row_errors():
    log = EventLog()
    log.add("x", 1.0, a=1)
    with pytest.raises(ValueError, match="already recorded"):
        log.declare("x", ("a",))
    with pytest.raises(ValueError, match="list fields"):
        log.declare("y", ("a",), lists=("b",))
    log.declare("z", ("a", "b"))
    assert log.frame("z", schema={"time": pl.Float64}).height == 0  # declared, not recorded
    log.add_row("z", (1.0, 1))
    with pytest.raises(ValueError, match="time and 2 fields"):
        log.frame("z")
