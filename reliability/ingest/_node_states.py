"""Rows of ``node_states`` from Slurm's node outputs: state flags, reason times, signals.

Shared by the node-state history reader (:mod:`reliability.ingest.slurm_events`) and the
snapshot readers (:mod:`reliability.ingest.slurm_nodes`). State flag sets such as
``IDLE+DRAIN`` or ``DOWN*+DRAIN`` are reduced to the most severe out-of-service state, in the
order DOWN > FAIL > DRAIN > MAINT. A DOWN / DRAIN / FAIL reason that names a hardware signal
also gives a ``health_events`` row per node (:func:`reliability.taxonomy.reason_signals`).
"""

from __future__ import annotations

import re
from functools import lru_cache

import polars as pl

from reliability import hostlist, schema, taxonomy
from reliability.errors import Hint, Hinted, IngestError
from reliability.ingest._bounds import bounds_text, latest_time, out_of_range_time
from reliability.ingest._common import RAW_PREFIX, ReadResult, clip_lines, quarantine_frame

__all__ = ["MAX_RECORD_BYTES", "STATE_PRECEDENCE", "reduce_state"]

#: Slurm state flags (long and ``sinfo %t`` short forms) -> canonical node state, most
#: severe first.
STATE_PRECEDENCE = (
    ("DOWN", "DOWN"),
    ("FAIL", "FAIL"),
    ("FAILING", "FAIL"),
    ("FAILG", "FAIL"),
    ("DRAIN", "DRAIN"),
    ("DRAINED", "DRAIN"),
    ("DRAINING", "DRAIN"),
    ("DRNG", "DRAIN"),
    ("MAINT", "MAINT"),
    ("REBOOT_REQUESTED", "MAINT"),
    ("REBOOT_ISSUED", "MAINT"),
)
_IN_SERVICE = frozenset(
    {"IDLE", "ALLOCATED", "ALLOC", "MIXED", "MIX", "COMPLETING", "COMP", "RESERVED", "RESV",
     "PLANNED", "PLND", "POWERED_DOWN", "POWER_DOWN", "POWERING_UP", "POWERING_DOWN", "POW_UP",
     "POW_DN", "CLOUD", "FUTURE", "FUTR", "NOT_RESPONDING", "NPC", "PERFCTRS", "UNKNOWN",
     "UNK", "POWER", "IDLE~", "DYNAMIC_NORM", "BOOT", "INVAL"}
)  # fmt: skip
#: states whose reasons are read for hardware signals (MAINT is planned work)
_SIGNAL_STATES = frozenset({"DOWN", "DRAIN", "FAIL"})
_TIME_FMT = "%Y-%m-%dT%H:%M:%S"
_NO_TIME = frozenset({"", "Unknown", "None", "N/A"})
#: an epoch of more digits than this is beyond year 5138: out of range before any arithmetic
_MAX_EPOCH_DIGITS = 11
#: longest line (and ``scontrol show node`` record) read [bytes]: Slurm prints node records of
#: 1-2 KB, and reasons kept by slurmdbd are at most 255 bytes (tinytext); a longer one is
#: quarantined unread (a 100 MiB record took 40 s, mostly in the reason's regexes)
MAX_RECORD_BYTES = 64 << 10


def reduce_state(flags: str) -> str | None:
    """Reduce a Slurm node state string to its most severe out-of-service state.

    Parameters
    ----------
    flags : str
        A state as Slurm prints it, flags joined by ``+`` and possibly suffixed (``IDLE+DRAIN``,
        ``down*``).

    Returns
    -------
    str or None
        The canonical out-of-service state (``IDLE+DRAIN`` -> ``DRAIN``), by
        :data:`STATE_PRECEDENCE`; None for in-service states (IDLE, MIXED, ...).

    Raises
    ------
    ValueError
        For an empty state or an unknown flag.
    """
    parts = [p.strip("*~#!%$@^-").upper() for p in flags.split("+") if p.strip()]
    if not parts:
        raise ValueError("empty state")
    found = {canon for flag, canon in STATE_PRECEDENCE if flag in parts}
    for _, canon in STATE_PRECEDENCE:
        if canon in found:
            return canon
    unknown = [p for p in parts if p not in _IN_SERVICE]
    if unknown:
        raise ValueError(f"unknown node state flag {unknown[0][:40]!r}")
    return None


def _user(u: str | None) -> str | None:
    if u is None or u.strip() == "":
        return None
    return re.sub(r"\(\d+\)$", "", u.strip())


def _to_utc(
    values: list[str | None], tz: str | None, src: str, field: str
) -> tuple[list[object], list[str | None]]:
    """Parse local ISO or epoch strings to UTC.

    Returns the times (None for sentinels and bad values) and, per value, None or the reason
    it is not a time (unreadable, or outside the sane bounds of ``_bounds``). Raises
    :class:`IngestError` naming ``tz=`` if local times appear and no zone was given.
    """
    clean = [None if v is None or v.strip() in _NO_TIME else v.strip() for v in values]
    n = _MAX_EPOCH_DIGITS
    df = pl.DataFrame({"t": clean}, schema={"t": pl.String}).with_columns(
        iso=pl.col("t").str.to_datetime(_TIME_FMT, strict=False, time_unit="us"),
        epoch=pl.col("t").str.extract(rf"^(\d{{1,{n}}})$").cast(pl.Int64),
        huge=pl.col("t").str.contains(rf"^\d{{{n + 1},}}$").fill_null(False),
    )
    if tz is None and df.get_column("iso").is_not_null().any():
        raise IngestError(
            src,
            Hinted(
                "Slurm prints local times without a zone: ",
                Hint("tz"),
                " (the zone of the host that ran the command, e.g. ",
                Hint("tz", "UTC", action=False),
                ")",
            ),
            field=field,
        )
    utc = pl.from_epoch("epoch", time_unit="s").dt.replace_time_zone("UTC").cast(schema.UTC_TIME)
    gap = pl.lit(False)
    if tz is not None:
        local = pl.col("iso").dt.replace_time_zone(tz, ambiguous="earliest", non_existent="null")
        utc = pl.coalesce(utc, local.dt.convert_time_zone("UTC").cast(schema.UTC_TIME))
        gap = pl.col("iso").is_not_null() & local.is_null()
    df = df.with_columns(gap=gap)
    latest = latest_time()
    df = df.with_columns(out=utc).with_columns(
        oob=out_of_range_time("out", latest) | pl.col("huge")
    )
    df = df.with_columns(out=pl.when(~pl.col("oob")).then(pl.col("out")))
    oob = df.get_column("oob").to_list()
    out = df.get_column("out")
    times = out.to_list()
    reasons: list[str | None] = []
    bounds = bounds_text(latest)
    gaps = df.get_column("gap").to_list()
    for raw, t, far, in_gap in zip(clean, times, oob, gaps, strict=True):
        if raw is None:
            reasons.append(None)
        elif in_gap:
            reasons.append(
                f"field {field}: cannot read time {raw[:40]!r}: it does not exist in {tz} "
                "(a daylight-saving gap)"
            )
        elif far:
            reasons.append(f"field {field}: time {raw[:40]!r} is {bounds}")
        elif t is None:
            reasons.append(f"field {field}: cannot read time {raw[:40]!r}")
        else:
            reasons.append(None)
    return times, reasons


@lru_cache(maxsize=4096)
def _signals(reason: str) -> tuple[taxonomy.ReasonSignal, ...]:
    return tuple(taxonomy.reason_signals(reason))


class _Builder:
    """Accumulates node_states, health_events and quarantine rows for one input."""

    def __init__(self, src: str) -> None:
        self.src = src
        self.rows: list[dict[str, object]] = []
        self.events: list[dict[str, object]] = []
        self.q: tuple[list[int], list[str], list[str]] = ([], [], [])
        self.read = 0

    def bad(self, line_no: int, raw: str, reason: str) -> None:
        self.q[0].append(line_no)
        self.q[1].append(raw)
        self.q[2].append(reason)

    def long_lines(self, lines: pl.DataFrame, what: str) -> pl.DataFrame:
        """Quarantine the lines over :data:`MAX_RECORD_BYTES` (each a record read), unread.

        Returns the other lines (``line_no``, ``line``).
        """
        cut = clip_lines(lines, MAX_RECORD_BYTES, RAW_PREFIX)
        long = cut.filter(pl.col("n_bytes").is_not_null())
        for no, raw, n in long.iter_rows():
            self.read += 1
            self.bad(no, raw, _too_long(n, what))
        return cut.filter(pl.col("n_bytes").is_null()).select("line_no", "line")

    def add(self, row: dict[str, object]) -> None:
        """One node_states row (its reason's hardware signals become health events)."""
        self.rows.append(row)

    def _add_events(self, row: dict[str, object]) -> None:
        """Record a health event per hardware signal in a row's reason."""
        reason = row["reason"]
        if not reason or row["state"] not in _SIGNAL_STATES:
            return
        for sig in _signals(str(reason)):
            c = sig.classification
            self.events.append(
                {
                    "cluster": row["cluster"],
                    "node": row["node"],
                    "time": row["start"],
                    "source": "slurm",
                    "component": c.component,
                    "code": sig.code,
                    "severity": c.severity,
                    "device": sig.device,
                    "message": f"Slurm {row['state']} reason: {reason}",
                }
            )

    def result(self, notes: list[str]) -> ReadResult:
        for row in self.rows:
            self._add_events(row)
        frame = pl.DataFrame(self.rows, schema=schema.TABLES["node_states"].schema, orient="row")
        events = pl.DataFrame(
            self.events, schema=schema.TABLES["health_events"].schema, orient="row"
        )
        if self.events:
            notes.append(
                f"{len(self.events)} hardware signal(s) in node-state reasons (Xid, ECC, "
                "NVLink...) recorded as health events (source slurm)"
            )
        q = quarantine_frame(self.src, *self.q)
        return ReadResult(
            self.src,
            {"node_states": frame, "health_events": events},
            q,
            self.read,
            self.read - q.height,
            notes,
        )


def _too_long(n_bytes: int, what: str) -> str:
    return (
        f"{what} of {n_bytes:,} bytes, longer than the {MAX_RECORD_BYTES:,}-byte limit "
        "of one (Slurm prints 1-2 KB): not read"
    )


def _expand(expr: str) -> list[str]:
    return hostlist.expand(expr)
