"""Run independent tasks serially, on local processes, or on a Dask cluster.

We do not schedule anything ourselves: ``processes`` is :class:`concurrent.futures.ProcessPoolExecutor`
(spawned workers: polars must not be forked), ``dask`` is ``dask.distributed`` (a ``Client``
given by address, ``tcp://host:8786``, or a ``LocalCluster`` started here). Tasks are pure,
module-level functions of their arguments; large results are written to disk by the task and
only small values (paths, row counts, manifest entries) travel back. A task that raises is
retried up to ``retries`` more times on the worker, then reported by name in
:class:`TaskFailure` while the other tasks' results are kept.

Workers die with their parent: a ``processes`` worker asks the kernel to kill it when the
process that started it dies (Linux ``PR_SET_PDEATHSIG``), and also watches its parent's pid
(other platforms), so ``kill -9`` of the parent leaves no worker running. Dask's
``LocalCluster`` nannies already stop their workers when the parent is gone.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Any

from reliability.errors import Hint, Hinted, join_messages, message_of

__all__ = ["BACKENDS", "Executor", "TaskFailure"]

BACKENDS = ("serial", "processes", "dask")


@dataclass(frozen=True)
class TaskFailure:
    """A task that still failed after its retries."""

    name: str
    attempts: int
    error: str

    def __str__(self) -> str:
        return str(self.message)

    @property
    def message(self) -> str:
        """The failure in words, the error's hints kept (:func:`~reliability.errors.message_of`)."""
        return join_messages(f"{self.name}: failed {self.attempts} time(s): ", self.error)


def _die_with_parent(parent_pid: int) -> None:
    """Worker initializer: end this process when ``parent_pid`` (its parent) dies."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # pragma: no cover - no prctl: the watcher below
            pass
    if os.getppid() != parent_pid:  # the parent died before the line above took effect
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name="reliability-parent-watch", daemon=True).start()


def _attempt(fn: Callable[..., Any], args: tuple, retries: int) -> tuple[bool, Any, int]:
    """Run ``fn(*args)`` up to ``retries + 1`` times; (ok, result or error text, attempts)."""
    last: str = ""
    for i in range(retries + 1):
        try:
            return True, fn(*args), i + 1
        except Exception as exc:
            tb = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            msg = message_of(exc)  # a Hinted message keeps its hints, in the same words
            hinted = isinstance(msg, Hinted) and tb.endswith(msg)
            last = join_messages(tb[: len(tb) - len(msg)], msg) if hinted else tb
    return False, last, retries + 1


class Executor:
    """Map a function over independent argument tuples on one backend.

    Parameters
    ----------
    backend : str
        ``serial``, ``processes`` (default: all local cores) or ``dask``.
    workers : int or None
        Worker processes (``processes``, or the ``LocalCluster`` for ``dask``).
    scheduler : str or None
        A Dask scheduler address (``tcp://host:8786``); None starts a ``LocalCluster``.
    retries : int
        Extra attempts per task before it is reported as failed.
    processes : bool
        The ``LocalCluster``'s workers are processes (default) or threads of this process
        (``False``: quicker to start, for tests and small runs).
    """

    def __init__(
        self,
        backend: str = "processes",
        workers: int | None = None,
        scheduler: str | None = None,
        retries: int = 2,
        processes: bool = True,
    ) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        if scheduler is not None and backend != "dask":
            raise ValueError(
                Hinted("a scheduler address needs ", Hint("backend", "dask", action=False))
            )
        self.backend = backend
        self.workers = workers or os.cpu_count() or 1
        self.scheduler = scheduler
        self.retries = retries
        self.processes = processes
        self._client = None
        self._cluster = None

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Shut down the worker pool or the dask client (a no-op when already closed)."""
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def _dask(self):
        if self._client is None:
            try:
                from dask.distributed import Client, LocalCluster
            except ImportError as exc:  # pragma: no cover - dask is a declared dependency
                raise RuntimeError("backend 'dask' needs dask[distributed] installed") from exc
            if self.scheduler:
                self._client = Client(self.scheduler)
            else:
                self._cluster = LocalCluster(
                    n_workers=self.workers,
                    threads_per_worker=1,
                    processes=self.processes,
                    # no dashboard; the scheduler's HTTP routes on a free port (its default,
                    # 8787, is often taken by another cluster on the machine)
                    dashboard_address=":0",
                )
                self._client = Client(self._cluster)
        return self._client

    def map(
        self,
        fn: Callable[..., Any],
        args: Sequence[tuple],
        names: Sequence[str] | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> tuple[dict[str, Any], list[TaskFailure]]:
        """Run a function over argument tuples, collecting results and failures by task name.

        A task that raises is retried up to ``retries`` more times, then reported in the failures;
        it never stops the other tasks.

        Parameters
        ----------
        fn : callable
            The task function (module-level, so that spawned workers can import it).
        args : sequence of tuple
            One argument tuple per task: each task runs ``fn(*a)``.
        names : sequence of str or None
            Unique task names, in the order of ``args``; None: ``"0"``, ``"1"``, ...
        progress : callable or None
            Called with each task's name as it finishes.

        Returns
        -------
        (dict of str to object, list of TaskFailure)
            The results by task name, and the tasks that still failed after their retries.

        Raises
        ------
        ValueError
            If task names repeat.
        """
        names = list(names) if names is not None else [str(i) for i in range(len(args))]
        if len(set(names)) != len(names):
            raise ValueError("task names must be unique")
        results: dict[str, Any] = {}
        failures: list[TaskFailure] = []

        def record(name: str, ok: bool, value: Any, attempts: int) -> None:
            if ok:
                results[name] = value
            else:
                failures.append(TaskFailure(name, attempts, message_of(value)))  # hints kept
            if progress is not None:
                progress(name)

        if not args:
            return results, failures
        if self.backend == "serial":
            for name, a in zip(names, args, strict=True):
                record(name, *_attempt(fn, a, self.retries))
        elif self.backend == "processes":
            with ProcessPoolExecutor(
                max_workers=min(self.workers, len(args)),
                mp_context=get_context("spawn"),
                initializer=_die_with_parent,
                initargs=(os.getpid(),),
            ) as pool:
                futs = {
                    pool.submit(_attempt, fn, a, self.retries): name
                    for name, a in zip(names, args, strict=True)
                }
                for fut in as_completed(futs):
                    try:
                        record(futs[fut], *fut.result())
                    except Exception as exc:
                        record(futs[fut], False, f"worker lost: {exc!r}", 1)
        else:
            from dask.distributed import as_completed as dask_completed

            client = self._dask()
            futs = {}
            for name, a in zip(names, args, strict=True):
                futs[
                    client.submit(
                        _attempt,
                        fn,
                        a,
                        self.retries,
                        pure=False,
                        key=f"reliability-{name}-{os.urandom(4).hex()}",
                    )
                ] = name
            for fut in dask_completed(list(futs)):
                name = futs.pop(fut)
                try:
                    record(name, *fut.result())
                except Exception as exc:
                    record(name, False, f"worker lost: {exc!r}", 1)
                # let the worker drop its copy: a result held by a future stays in the worker's
                # memory (a fleet's attribution: every cluster's frame on one worker at the end)
                fut.release()
        failures.sort(key=lambda f: f.name)
        return results, failures
