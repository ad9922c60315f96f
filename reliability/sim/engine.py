"""A small, typed discrete-event kernel shared by the simulators.

Events are callbacks scheduled at a time; the kernel pops them in order of (time, priority,
insertion) so that runs are exactly reproducible, and it keeps no statistics of its own:
simulators append what happened to an :class:`EventLog` and the models read that log
afterwards (SimPy's separation of kernel and monitoring; see STYLE.md). Callbacks rather
than generator processes keep millions of events cheap.

Time is a float in whatever unit the simulator chooses (the cluster simulator uses seconds).
"""

from __future__ import annotations

import contextlib
import gc
import heapq
import itertools
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import polars as pl

__all__ = ["EventLog", "Handle", "Kernel", "SchedulingError", "paused_gc"]


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector inside the block (restored as it was after it).

    An event loop allocates millions of short-lived tuples, and every burst of allocations
    starts a collection whose full passes walk every long-lived object of the simulation (job
    tables, the event log) again and again: a quarter of a cluster run's time. The events
    create no garbage cycles to speak of, and reference counting still frees everything else.

    Yields
    ------
    None
        Inside the block the collector is paused; it is enabled again after it if it was.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class SchedulingError(ValueError):
    """An event scheduled in the past or at a non-finite time."""


class Handle:
    """A scheduled event; pass it to :meth:`Kernel.cancel` to withdraw it.

    Parameters
    ----------
    time : float
        When it runs [simulated s].
    priority : int
        Order among events at the same time (lower first).
    action : callable
        What runs.
    args : tuple
        The arguments ``action`` is called with.
    """

    __slots__ = ("action", "args", "cancelled", "priority", "time")

    def __init__(
        self, time: float, priority: int, action: Callable[..., Any], args: tuple[Any, ...]
    ) -> None:
        self.time = time
        self.priority = priority
        self.action = action
        self.args = args
        self.cancelled = False

    def __repr__(self) -> str:
        return f"Handle(time={self.time}, priority={self.priority}, action={self.action!r})"


class Kernel:
    """The event loop.

    Parameters
    ----------
    start : initial simulation time

    Ordering: earlier time first; at equal times, lower ``priority`` first; at equal
    priority, the order of scheduling (FIFO).

    Events scheduled at the current time (a zero delay: most of a simulator's follow-up
    events, such as the cluster's scheduling passes) wait in a second heap, ``_soon``, that
    holds only a few: the loop runs the smaller of the two heads, so the order is the one a
    single heap gives, without sifting those events through the big heap of future ones.
    """

    def __init__(self, start: float = 0.0) -> None:
        self.now = float(start)
        # entries are (time, priority, seq, action, args, handle or None): tuples compare in C
        # and the unique seq breaks ties FIFO (so the action is never compared)
        self._heap: list[
            tuple[float, int, int, Callable[..., Any], tuple[Any, ...], Handle | None]
        ] = []
        #: entries scheduled at the time that was current then (not after any in ``_heap``
        #: of a later time): the same entries, kept apart because there are few of them
        self._soon: list[
            tuple[float, int, int, Callable[..., Any], tuple[Any, ...], Handle | None]
        ] = []
        self._seq = itertools.count()
        self.processed = 0

    def __getstate__(self) -> dict[str, Any]:
        # the FIFO counter is kept as its next value (pickling an itertools.count is deprecated)
        state = self.__dict__.copy()
        state["_seq"] = next(self._seq)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        state["_seq"] = itertools.count(state["_seq"])
        state.setdefault("_soon", [])  # a checkpoint from before the second heap
        self.__dict__.update(state)

    def at(self, time: float, action: Callable[..., Any], *args: Any, priority: int = 0) -> Handle:
        """Schedule ``action(*args)`` at absolute ``time`` (not before :attr:`now`).

        Parameters
        ----------
        time : float
            When it runs [simulated s].
        action : callable
            What runs.
        *args : object
            The arguments ``action`` is called with.
        priority : int
            Order among events at the same time (lower first; then first scheduled first).

        Returns
        -------
        Handle
            The scheduled event (for :meth:`cancel`).

        Raises
        ------
        SchedulingError
            If ``time`` is not finite or is in the past.
        """
        if not (self.now <= time < math.inf):  # also rejects nan
            raise self._refusal(time)
        h = Handle(float(time), priority, action, args)
        heap = self._soon if h.time == self.now else self._heap
        heapq.heappush(heap, (h.time, priority, next(self._seq), action, args, h))
        return h

    def post_at(
        self, time: float, action: Callable[..., Any], *args: Any, priority: int = 0
    ) -> None:
        """Schedule ``action(*args)`` at ``time`` for good: :meth:`at` without a handle.

        The cheap path for the simulators' hot loops (most events are never withdrawn).

        Parameters
        ----------
        time : float
            When it runs [simulated s].
        action : callable
            What runs.
        *args : object
            The arguments ``action`` is called with.
        priority : int
            Order among events at the same time (lower first; then first scheduled first).

        Raises
        ------
        SchedulingError
            If ``time`` is not finite or is in the past.
        """
        if not (self.now <= time < math.inf):
            raise self._refusal(time)
        time = float(time)
        heap = self._soon if time == self.now else self._heap
        heapq.heappush(heap, (time, priority, next(self._seq), action, args, None))

    def post_after(
        self, delay: float, action: Callable[..., Any], *args: Any, priority: int = 0
    ) -> None:
        """Schedule ``action(*args)`` ``delay`` from now for good: :meth:`after` without a handle.

        Parameters
        ----------
        delay : float
            How long from now [simulated s]; at least 0.
        action : callable
            What runs.
        *args : object
            The arguments ``action`` is called with.
        priority : int
            Order among events at the same time (lower first).

        Raises
        ------
        SchedulingError
            If ``delay`` is negative or the time is not finite.
        """
        if delay < 0:
            raise SchedulingError(f"negative delay {delay}")
        time = self.now + float(delay)
        if not time < math.inf:  # also rejects nan
            raise self._refusal(time)
        heap = self._soon if time == self.now else self._heap
        heapq.heappush(heap, (time, priority, next(self._seq), action, args, None))

    def _refusal(self, time: float) -> SchedulingError:
        """Give the error for an event time that is not finite or is in the past."""
        if not math.isfinite(time):
            return SchedulingError(f"event time {time!r} is not finite")
        return SchedulingError(f"event at {time} is in the past (now {self.now})")

    def after(
        self, delay: float, action: Callable[..., Any], *args: Any, priority: int = 0
    ) -> Handle:
        """Schedule ``action(*args)`` ``delay`` time units from now.

        Parameters
        ----------
        delay : float
            How long from now [simulated s]; at least 0.
        action : callable
            What runs.
        *args : object
            The arguments ``action`` is called with.
        priority : int
            Order among events at the same time (lower first).

        Returns
        -------
        Handle
            The scheduled event (for :meth:`cancel`).
        """
        if delay < 0:
            raise SchedulingError(f"negative delay {delay}")
        return self.at(self.now + delay, action, *args, priority=priority)

    def clear(self) -> None:
        """Drop every event still scheduled (the run is over).

        Scheduled events hold the simulator's bound methods, and the simulator holds its
        kernel: a reference cycle that only a garbage collection would free. Clearing the
        events lets a finished simulator (its job tables, hundreds of MB on a large run) be
        freed as soon as it is no longer referenced.
        """
        self._heap.clear()
        self._soon.clear()

    @staticmethod
    def cancel(handle: Handle) -> None:
        """Withdraw a scheduled event (a no-op if it already ran or was cancelled).

        Parameters
        ----------
        handle : Handle
            The event, as :meth:`at` or :meth:`after` returned it.
        """
        handle.cancelled = True

    @property
    def pending(self) -> int:
        """Events still scheduled (cancelled ones included until they are popped)."""
        return len(self._heap) + len(self._soon)

    def peek(self) -> float:
        """Give the time of the next live event.

        Live means not cancelled through its handle; an event whose action finds nothing to do
        when it runs (a model's own withdrawal, such as the cluster's planned end of an attempt
        that already ended) is live here.

        Returns
        -------
        float
            Its time [simulated s], or ``inf`` if none is scheduled.
        """
        while True:
            heap = self._next_heap()
            if heap is None:
                return math.inf
            if heap[0][5] is None or not heap[0][5].cancelled:
                return heap[0][0]
            heapq.heappop(heap)

    def _next_heap(
        self,
    ) -> list[tuple[float, int, int, Callable[..., Any], tuple[Any, ...], Handle | None]] | None:
        """Give the heap whose head is the next event (None if both are empty)."""
        heap, soon = self._heap, self._soon
        if soon and (not heap or soon[0] < heap[0]):
            return soon
        return heap or None

    def step(self) -> bool:
        """Run the next live event.

        Returns
        -------
        bool
            False if there was none.
        """
        while (heap := self._next_heap()) is not None:
            time, _, _, action, args, h = heapq.heappop(heap)
            if h is not None and h.cancelled:
                continue
            self.now = time
            self.processed += 1
            action(*args)
            return True
        return False

    def run(self, until: float | None = None) -> int:
        """Run events with time < ``until`` (all if None); then set ``now = until``.

        Parameters
        ----------
        until : float, optional
            Stop before this time [simulated s]; None runs every event.

        Returns
        -------
        int
            The number of events processed by this call.
        """
        before = self.processed
        if until is not None and until < self.now:
            raise SchedulingError(f"until={until} is in the past (now {self.now})")
        with paused_gc():
            if until is None:
                while self.step():
                    pass
                return self.processed - before
            heap, soon, pop = self._heap, self._soon, heapq.heappop
            n = 0  # events run (added to processed at the end: actions may decrement it)
            try:
                while True:
                    # the next event is the smaller head of the two heaps (see the class)
                    if soon and (not heap or soon[0] < heap[0]):
                        if soon[0][0] >= until:
                            break
                        time, _, _, action, args, h = pop(soon)
                    elif heap and heap[0][0] < until:
                        time, _, _, action, args, h = pop(heap)
                    else:
                        break
                    if h is not None and h.cancelled:
                        continue
                    self.now = time
                    n += 1
                    action(*args)
            finally:
                self.processed += n
            self.now = float(until)
            return self.processed - before


class EventLog:
    """Append-only record of what a simulation did, one column-wise table per event kind.

    ``log.add("job_end", t, job_id="7", state="COMPLETED")``; ``log.frame("job_end")`` gives
    a polars frame with a ``time`` column and one column per field (fields must be the same
    for every record of a kind). A field whose value is a ``list`` becomes a list column; it
    is stored flattened, so millions of short lists stay cheap.
    """

    #: rows :meth:`add_row` buffers per kind before moving them into the columns
    FLUSH_ROWS = 65536

    def __init__(self) -> None:
        self._cols: dict[str, dict[str, list[Any]]] = {}
        self._lists: dict[str, dict[str, tuple[list[Any], list[int]]]] = {}
        self._frames: dict[str, pl.DataFrame] = {}
        self._keys: dict[str, frozenset[str]] = {}
        self._order: dict[str, tuple[str, ...]] = {}  # declared kinds: their field order
        self._pending: dict[str, list[tuple[Any, ...]]] = {}

    def declare(self, kind: str, fields: tuple[str, ...], lists: tuple[str, ...] = ()) -> None:
        """Declare the fields of ``kind`` so that :meth:`add_row` can record it positionally.

        Parameters
        ----------
        kind : str
            The event kind (not recorded yet).
        fields : tuple of str
            Its field names, in the order :meth:`add_row` takes their values.
        lists : tuple of str
            The fields whose values are lists (list columns).

        Raises
        ------
        ValueError
            If ``kind`` was already recorded or declared, or ``lists`` names an unknown field.
        """
        if kind in self._cols:
            raise ValueError(f"event {kind!r} is already recorded")
        unknown = sorted(set(lists) - set(fields))
        if unknown:
            raise ValueError(f"event {kind!r}: list fields {unknown} are not among its fields")
        self._cols[kind] = {"time": [], **{k: [] for k in fields if k not in lists}}
        self._lists[kind] = {k: ([], []) for k in fields if k in lists}
        self._keys[kind] = frozenset(fields)
        self._order[kind] = tuple(fields)
        self._pending[kind] = []

    def add_row(self, kind: str, row: tuple[Any, ...]) -> None:
        """Record one event of a declared ``kind``: ``row`` is (time, *values in field order).

        The cheap path for the simulators' hot loops (no keyword dictionary per event).

        Parameters
        ----------
        kind : str
            A kind declared with :meth:`declare`.
        row : tuple
            Its time [simulated s] then one value per declared field.
        """
        buf = self._pending[kind]
        buf.append(row)
        if self._frames:
            self._frames.pop(kind, None)
        if len(buf) >= self.FLUSH_ROWS:
            self._flush(kind)

    def _flush(self, kind: str) -> None:
        buf = self._pending.get(kind)
        if not buf:
            return
        order = self._order[kind]
        if set(map(len, buf)) != {len(order) + 1}:
            raise ValueError(f"event {kind!r}: a row does not have time and {len(order)} fields")
        cols, lists = self._cols[kind], self._lists[kind]
        columns = list(zip(*buf, strict=True))
        cols["time"].extend(columns[0])
        for name, values in zip(order, columns[1:], strict=True):
            if name in lists:
                flat, lengths = lists[name]
                flat.extend(itertools.chain.from_iterable(values))
                lengths.extend(map(len, values))
            else:
                cols[name].extend(values)
        buf.clear()

    def add(self, kind: str, time: float | None, **fields: Any) -> None:
        """Record one event of ``kind`` at ``time``.

        Parameters
        ----------
        kind : str
            The event kind (one table per kind).
        time : float or None
            When it happened [simulated s].
        **fields : object
            Its fields: the same names for every event of a kind; lists become list columns.

        Raises
        ------
        ValueError
            If the fields differ from those of the kind's first event.
        """
        cols = self._cols.get(kind)
        if cols is None:
            cols = self._cols[kind] = {"time": []}
            lists = self._lists[kind] = {}
            for k, v in fields.items():
                if isinstance(v, list):
                    lists[k] = ([], [])
                else:
                    cols[k] = []
            self._keys[kind] = frozenset(fields)
        lists = self._lists[kind]
        if self._pending.get(kind):
            self._flush(kind)
        if fields.keys() != self._keys[kind]:
            known = sorted([*(c for c in cols if c != "time"), *lists])
            raise ValueError(f"event {kind!r}: fields {sorted(fields)} differ from {known}")
        if self._frames:
            self._frames.pop(kind, None)
        cols["time"].append(time)
        for k, v in fields.items():
            if k in lists:
                flat, lengths = lists[k]
                flat.extend(v)
                lengths.append(len(v))
            else:
                cols[k].append(v)

    @property
    def kinds(self) -> list[str]:
        """Event kinds recorded so far."""
        return [k for k, c in self._cols.items() if c["time"] or self._pending.get(k)]

    def __len__(self) -> int:
        return sum(len(c["time"]) for c in self._cols.values()) + sum(
            map(len, self._pending.values())
        )

    def frame(self, kind: str, schema: dict[str, pl.DataType] | None = None) -> pl.DataFrame:
        """Build the records of ``kind`` as a frame.

        Parameters
        ----------
        kind : str
            The event kind.
        schema : dict of str to polars.DataType, optional
            Column types (and the columns of the empty frame if none were recorded).

        Returns
        -------
        polars.DataFrame
            One row per event: ``time`` and one column per field.
        """
        self._flush(kind)
        cols = self._cols.get(kind)
        if cols is None or not cols["time"]:  # never recorded (or declared only)
            return pl.DataFrame(schema=schema or {"time": pl.Float64})
        cached = self._frames.get(kind)
        if cached is not None and schema is None:
            return cached
        frame = pl.DataFrame(cols, schema_overrides=schema, strict=False)
        n = frame.height
        for name, (flat, lengths) in self._lists[kind].items():
            rows = np.repeat(np.arange(n, dtype=np.int64), lengths)
            values = pl.DataFrame({"__r": rows, name: pl.Series(flat, strict=False)})
            grouped = values.group_by("__r").agg(pl.col(name))
            col = (
                pl.DataFrame({"__r": np.arange(n, dtype=np.int64)})
                .join(grouped, on="__r", how="left", maintain_order="left")
                .get_column(name)
            )
            if values.height:
                col = col.fill_null(pl.lit([], dtype=col.dtype))
            frame = frame.with_columns(col.alias(name))
        if schema is None:
            self._frames[kind] = frame
        return frame
