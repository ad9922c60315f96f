"""One writer per Dataset: an ``flock`` on ``DIR/.lock``, with the holder's pid for messages.

Mutual exclusion is the kernel's: ``fcntl.flock(LOCK_EX)`` on the lock file, released by the
kernel when the holder exits in any way (``kill -9`` included), so a lock is never stale in
the sense of blocking forever. The file's content (pid, host, start time, command) only
serves the messages: who holds the lock, or whose leftover file was taken over.

A writer that finds the lock held is refused at once, or, given a wait (``wait_s``; the CLI's
``--wait SECONDS``), tries again until the lock is free or the wait is over, so that parallel
collectors and cron jobs take turns: a bounded wait, never an endless one.

Deleting ``.lock`` while an ingest runs lets a second writer in. Two defences keep every
committed input: (1) before each commit a writer checks that the path still names the file it
locked, and if not, takes the lock again (waiting for the other writer); (2) a commit
re-reads the manifest from disk and adds its own entries to what it finds, so it never writes
back a stale copy.

NFS: Linux emulates ``flock`` with POSIX byte-range locks on NFS (v4, or v3 with NLM), so the
lock works across hosts; a mount with ``local_lock=flock`` or ``local_lock=all`` makes it
local to each host, and two hosts could then write at once (the commit re-read above narrows
that window to the manifest rename, but does not close it). A pid can only be checked on the
host that recorded it; for another host's lock the message says so.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import math
import os
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reliability._atomic import HOST_TAG, temp_owner
from reliability.errors import DatasetLockedError, Hint, Hinted, Placeholder

__all__ = ["DatasetLock", "LockInfo", "crash_leftover", "pid_alive"]

#: a temporary file older than this is a leftover whoever wrote it (a writer on another host)
TEMP_MAX_AGE_S = 86400.0

LOCK_NAME = ".lock"


def pid_alive(pid: int) -> bool:
    """Tell whether a process with this pid exists on this host.

    Parameters
    ----------
    pid : int
        A process id.

    Returns
    -------
    bool
        True if it exists (also when owned by another user).
    """
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def crash_leftover(path: Path, now: float, max_age_s: float = TEMP_MAX_AGE_S) -> bool:
    """Tell whether a temporary file of :mod:`reliability._atomic` was left by a dead writer.

    Parameters
    ----------
    path : Path
        A file; one not named as that module names its temporary files is never a leftover.
    now : float
        The current time [s since the epoch].
    max_age_s : float
        Older than this [s], a temporary file is a leftover whoever wrote it (its writer may be
        on another host, where its pid cannot be checked).

    Returns
    -------
    bool
        True when the file is older than ``max_age_s``, or was written on this host by another
        process that no longer exists.
    """
    owner = temp_owner(path.name)
    if owner is None:
        return False
    try:
        old = now - path.stat().st_mtime > max_age_s
    except FileNotFoundError:
        return False
    mine = owner[0] == HOST_TAG
    return old or (mine and owner[1] != os.getpid() and not pid_alive(owner[1]))


@dataclass(frozen=True)
class LockInfo:
    """What a lock file says about the process that wrote it."""

    pid: int | None
    host: str | None
    started: str | None
    command: str | None

    @classmethod
    def parse(cls, text: str) -> LockInfo:
        """Parse the content of a lock file.

        Parameters
        ----------
        text : str
            The lock file's text: JSON (pid, host, started, command) or, from versions before 0.3,
            the pid alone.

        Returns
        -------
        LockInfo
            What it names; every field None when it cannot be parsed.
        """
        text = text.strip()
        if text.isdigit():  # written by versions before 0.3: the pid only
            return cls(int(text), None, None, None)
        try:
            d = json.loads(text)
        except ValueError:
            return cls(None, None, None, None)
        if not isinstance(d, dict):
            return cls(None, None, None, None)
        pid = d.get("pid")
        return cls(
            pid if isinstance(pid, int) else None, d.get("host"), d.get("started"), d.get("command")
        )

    @property
    def local(self) -> bool:
        """True if the lock was taken on this host (or names no host)."""
        return self.host in (None, socket.gethostname())

    def describe(self) -> str:
        """Describe the lock's holder in words, for messages.

        Returns
        -------
        str
            E.g. ``pid 4242 on node1, started 2025-03-01T08:00:00+00:00 (reliability ingest ...)``.
        """
        who = f"pid {self.pid}" if self.pid is not None else "an unknown process"
        if self.host:
            who += f" on {self.host}"
        if self.started:
            who += f", started {self.started}"
        if self.command:
            who += f" ({self.command})"
        return who


def _unnamed(info: LockInfo | None) -> bool:
    """Tell whether a lock file does not (yet) name a live holder on this host."""
    if info is None or info.pid is None:
        return True
    return info.local and not pid_alive(info.pid)


class DatasetLock:
    """The exclusive writer lock of one Dataset folder.

    Parameters
    ----------
    folder : Path
        The Dataset folder (created if missing).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / LOCK_NAME
        self.fd: int | None = None
        self.notes: list[str] = []

    # -- acquiring -----------------------------------------------------------------------
    def _open_locked(self, blocking: bool) -> tuple[int, LockInfo | None] | None:
        """Open and flock the lock file; None if another process holds it (non-blocking)."""
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    return None
                raise
            # the holder before us may have removed the file between our open and our flock:
            # then we hold a lock on a file nobody else can see; start again
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        with os.fdopen(os.dup(fd), "r", encoding="utf-8", errors="replace") as fh:
            previous = fh.read()
        info = LockInfo.parse(previous) if previous.strip() else None
        me = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
            "command": " ".join(
                os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv)
            )[:300],
        }
        text = (json.dumps(me) + "\n").encode()
        os.pwrite(fd, text, 0)  # then cut the rest: a reader never sees an empty file
        os.ftruncate(fd, len(text))
        return fd, info

    def holder(self) -> LockInfo | None:
        """Read who the lock file names.

        Returns
        -------
        LockInfo or None
            The holder, or None if there is no lock file.
        """
        try:
            return LockInfo.parse(self.path.read_text(encoding="utf-8", errors="replace"))
        except FileNotFoundError:
            return None

    def is_held_by_other(self) -> bool:
        """Tell whether another process holds the lock now (does not take it).

        Returns
        -------
        bool
            True when the lock file exists and another process holds its lock.
        """
        if self.fd is not None or not self.path.exists():
            return False
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(fd)
        return False

    def acquire(self, wait_s: float = 0.0) -> None:
        """Take the lock or raise :class:`DatasetLockedError` naming the holder.

        Parameters
        ----------
        wait_s : float
            How long to wait for another writer to finish [s]: the lock is tried again every
            0.05 s, backing off to every 1 s, until it is free or ``wait_s`` is over; 0 refuses
            at once.

        Raises
        ------
        DatasetLockedError
            If another process holds the lock (after ``wait_s``): the message names it, and how
            long this one waited.
        ValueError
            If ``wait_s`` is negative, infinite or not a number.
        """
        if not (math.isfinite(wait_s) and wait_s >= 0.0):
            raise ValueError(
                Hinted(
                    Hint("wait_s", wait_s, action=False),
                    ": expected a finite number of seconds >= 0",
                )
            )
        self.folder.mkdir(parents=True, exist_ok=True)
        deadline, pause = time.monotonic() + wait_s, 0.05
        got = self._open_locked(blocking=False)
        while got is None and (left := deadline - time.monotonic()) > 0:
            time.sleep(min(pause, left))
            pause = min(2 * pause, 1.0)
            got = self._open_locked(blocking=False)
        if got is None:
            info = self.holder()
            named_by = time.monotonic() + 0.5
            while _unnamed(info) and time.monotonic() < named_by:
                time.sleep(0.01)  # a holder that has just taken it writes its name next
                info = self.holder()
            if info is not None and info.local and info.pid is not None and not pid_alive(info.pid):
                detail = (
                    f"it is held by a process that inherited it from {info.describe()}, "
                    "which is no longer running"
                )
            elif info is not None:
                detail = f"it is held by {info.describe()}"
            else:
                detail = "it is held by another process"
            waited = f"; waited {wait_s:g} s for it to finish" if wait_s > 0 else ""
            raise DatasetLockedError(
                Hinted(
                    f"{self.folder}: another process is writing this Dataset ({detail}){waited}; "
                    "try again when it has finished (the lock is released when that process exits), "
                    "or let this call wait for it with ",
                    Hint("wait_s", Placeholder("SECONDS"), action=False),
                )
            )
        self.fd, info = got
        if info is not None and (info.pid != os.getpid() or not info.local):
            gone = info.local and info.pid is not None and not pid_alive(info.pid)
            self.notes.append(
                f"took over the lock of {self.folder} left by {info.describe()}"
                + (", which is no longer running" if gone else ", which no longer holds it")
            )

    def ensure_held(self) -> None:
        """Take the lock again before a commit if the lock file was removed or replaced meanwhile.

        Waits for any other writer to finish.
        """
        assert self.fd is not None
        try:
            same = os.path.samestat(os.fstat(self.fd), os.stat(self.path))
        except FileNotFoundError:
            same = False
        if same:
            return
        old = self.fd
        t0 = time.monotonic()
        got = self._open_locked(blocking=True)
        assert got is not None
        self.fd = got[0]
        os.close(old)
        waited = time.monotonic() - t0
        self.notes.append(
            f"{self.path} was removed while this ingest ran; took the lock again"
            + (f" after waiting {waited:.0f} s for another writer" if waited >= 1 else "")
            + " and merged this ingest into the manifest on disk"
        )

    def release(self) -> None:
        """Remove the lock file (while still holding it) and release the lock."""
        if self.fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            if os.path.samestat(os.fstat(self.fd), os.stat(self.path)):
                self.path.unlink()
        os.close(self.fd)
        self.fd = None

    @contextlib.contextmanager
    def held(self, wait_s: float = 0.0) -> Iterator[DatasetLock]:
        """Hold the lock for the duration of a ``with`` block.

        Parameters
        ----------
        wait_s : float
            How long to wait for another writer [s] (see :meth:`acquire`).

        Yields
        ------
        DatasetLock
            This lock, acquired; released on exit.
        """
        self.acquire(wait_s)
        try:
            yield self
        finally:
            self.release()

    def __enter__(self) -> DatasetLock:
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()
