"""Output helpers shared by the two generators: the hazard clock, host lists, time formats,
the ``sacct`` / ``sacctmgr`` / syslog writers, reason vocabularies and the ``History`` result.

Nothing here imports ``reliability``: the generators are written from the specification
(Slurm's semantics, the failure model) and from real Slurm output only, so that the package's
inference can be validated on worlds it did not build. Only :meth:`History.ingest` calls the
package, as a convenience for tests.

Units: every simulated time is a float or integer number of **seconds** since the simulation
start (``t = 0``); ``epoch0`` (integer seconds since 1970, UTC) places it in calendar time.
Rates are per node-day in the public API and per node-second inside.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

DAY = 86400.0
WEEK = 7 * DAY

#: the fields of ``reliability.ingest.sacct.fields.SACCT_EXPORT_COMMAND``, in its order
#: (copied from the package's documented export; a test checks they are still the same)
SACCT_FIELDS = (
    "JobID", "JobName", "JobIDRaw", "Cluster", "Partition", "Account", "User", "QOS",
    "Priority", "State", "ExitCode", "Submit", "Start", "End", "Timelimit", "NNodes",
    "AllocTRES", "ReqTRES", "NodeList",
)  # fmt: skip
#: ``sacctmgr --parsable2 show event ... Format=`` of the package's documented export
EVENT_FIELDS = ("Cluster", "NodeName", "TimeStart", "TimeEnd", "State", "Reason", "User")

#: hardware components a failure can be charged to (the truth's ``cause``)
COMPONENTS = (
    "gpu", "gpu_memory", "nvlink", "pcie", "nic", "ib_link", "dimm", "cpu", "psu", "bios",
    "disk", "machine", "unknown",
)  # fmt: skip


# --------------------------------------------------------------------------------------------
# the failure model's time dependence
# --------------------------------------------------------------------------------------------


class HazardClock:
    """Fleet-wide modulation of the hardware failure rate, and its integral.

    A node ``n`` fails as a Poisson process of intensity ``r_n * m(t)`` where ``r_n`` is its
    base rate (per second) and ``m(t) = w[k(t)] * exp(kappa * t)``: ``w`` holds one multiplier
    per calendar week (week ``k`` runs from ``k * WEEK - offset_s`` to ``(k + 1) * WEEK -
    offset_s``, so week boundaries fall on Mondays 00:00 UTC when ``offset_s`` is the time since
    the last one; the first week is partial) and ``kappa = ln(trend) / horizon_s`` makes the
    rate ``trend`` times larger at ``horizon_s`` than at ``t = 0``. :meth:`cum` is
    ``M(t) = integral_0^t m``, so the expected number of failures of node ``n`` over ``[a, b]``
    in service is ``r_n * (M(b) - M(a))``; :meth:`inv` inverts it (for sampling by inversion).

    Parameters
    ----------
    weekly : sequence of float
        Multiplier of each week (> 0); the last one also applies past the last week.
    trend : float
        Rate at ``horizon_s`` relative to the rate at 0 (1 = no trend, 2 = doubling).
    horizon_s : float
        Length over which ``trend`` applies [s].
    offset_s : float
        Time [s] from the start of week 0 to ``t = 0`` (``0 <= offset_s < WEEK``).
    """

    def __init__(
        self, weekly: Sequence[float], trend: float, horizon_s: float, offset_s: float = 0.0
    ) -> None:
        self.weekly = np.asarray(weekly, dtype=float)
        if self.weekly.size == 0 or (self.weekly <= 0).any():
            raise ValueError("weekly multipliers must be positive")
        if trend <= 0:
            raise ValueError("trend must be positive")
        self.trend = float(trend)
        self.offset = float(offset_s)
        self.kappa = math.log(trend) / horizon_s if trend != 1.0 else 0.0
        self.edges = np.arange(self.weekly.size + 1, dtype=float) * WEEK - self.offset
        self.edges[0] = 0.0
        g = self._g(self.edges)
        self.c = np.concatenate([[0.0], np.cumsum(self.weekly * np.diff(g))])
        self.g_edges = g

    def week_starts(self) -> np.ndarray:
        """Return the start of each week [s] (the first one at ``-offset_s``)."""
        return np.arange(self.weekly.size, dtype=float) * WEEK - self.offset

    def _g(self, t: np.ndarray) -> np.ndarray:
        if self.kappa == 0.0:
            return np.asarray(t, dtype=float)
        return np.expm1(self.kappa * np.asarray(t, dtype=float)) / self.kappa

    def _g_inv(self, y: np.ndarray) -> np.ndarray:
        if self.kappa == 0.0:
            return np.asarray(y, dtype=float)
        return np.log1p(self.kappa * np.asarray(y, dtype=float)) / self.kappa

    def _week(self, t: np.ndarray) -> np.ndarray:
        k = np.floor((np.asarray(t, float) + self.offset) / WEEK).astype(np.int64)
        return np.clip(k, 0, self.weekly.size - 1)

    def factor(self, t: np.ndarray | float) -> np.ndarray:
        """Return ``m(t)``, the fleet multiplier of the base rate at time ``t`` [s]."""
        t = np.asarray(t, dtype=float)
        return self.weekly[self._week(t)] * np.exp(self.kappa * t)

    def max_factor(self, horizon_s: float) -> float:
        """Return an upper bound of ``m`` over ``[0, horizon_s]`` (for thinning)."""
        up = self.weekly.max()
        return float(up * max(1.0, math.exp(self.kappa * horizon_s)))

    def cum(self, t: np.ndarray | float) -> np.ndarray:
        """Return ``M(t) = integral_0^t m(s) ds`` [s]; vectorised over ``t`` (``t >= 0``)."""
        t = np.asarray(t, dtype=float)
        w = self._week(t)
        return self.c[w] + self.weekly[w] * (self._g(t) - self.g_edges[w])

    def inv(self, h: np.ndarray | float) -> np.ndarray:
        """Return the ``t`` with ``M(t) = h`` (``h >= 0``); vectorised."""
        h = np.asarray(h, dtype=float)
        w = np.clip(np.searchsorted(self.c, h, side="right") - 1, 0, self.weekly.size - 1)
        return self._g_inv(self.g_edges[w] + (h - self.c[w]) / self.weekly[w])


def monday_offset(epoch0: int) -> float:
    """Return the seconds from the last Monday 00:00 UTC to ``epoch0``.

    Parameters
    ----------
    epoch0 : int
        Seconds since 1970 (UTC).

    Returns
    -------
    float
        In ``[0, WEEK)``.
    """
    return float((epoch0 - 4 * 86400) % int(WEEK))


def weekly_multipliers(rng: np.random.Generator, weeks: int, swing: float) -> np.ndarray:
    """Draw the fleet's weekly rate multipliers: Gamma with mean 1 and CV ``swing``.

    Parameters
    ----------
    rng : numpy.random.Generator
        The caller's generator.
    weeks : int
        How many weeks.
    swing : float
        Coefficient of variation of the multipliers (0 = all exactly 1).

    Returns
    -------
    numpy.ndarray
        ``weeks`` positive multipliers.
    """
    if swing <= 0:
        return np.ones(weeks)
    shape = 1.0 / swing**2
    return np.maximum(rng.gamma(shape, 1.0 / shape, weeks), 1e-6)


def node_base_rates(
    rng: np.random.Generator,
    n_nodes: int,
    base_per_1000_node_days: float,
    spread: float,
    n_lemons: int,
    lemon_factor: float | tuple[float, float],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-node base failure rates [per node-day] with planted lemons.

    Healthy nodes get ``base * f`` with ``f`` lognormal of mean 1 and log-sd ``spread``
    (0 = all equal); ``n_lemons`` nodes chosen at random get ``base * L`` with ``L`` drawn
    uniformly in ``lemon_factor`` (a range) or equal to it (a number).

    Parameters
    ----------
    rng : numpy.random.Generator
        The caller's generator.
    n_nodes : int
        Fleet size.
    base_per_1000_node_days : float
        The fleet's base rate [failures per 1000 node-days].
    spread : float
        Log-sd of the healthy nodes' rate factors.
    n_lemons : int
        How many lemons.
    lemon_factor : float or (float, float)
        A lemon's rate relative to the base.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, numpy.ndarray)
        Rates per node-day, the lemon mask, and the factor of each node.
    """
    base = base_per_1000_node_days / 1000.0
    f = rng.lognormal(-0.5 * spread**2, spread, n_nodes) if spread > 0 else np.ones(n_nodes)
    lemon = np.zeros(n_nodes, dtype=bool)
    if n_lemons:
        idx = rng.choice(n_nodes, size=min(n_lemons, n_nodes), replace=False)
        lo, hi = (
            (lemon_factor, lemon_factor)
            if isinstance(lemon_factor, int | float)
            else (float(lemon_factor[0]), float(lemon_factor[1]))
        )
        f[idx] = rng.uniform(lo, hi, idx.size) if hi > lo else lo
        lemon[idx] = True
    return base * f, lemon, f


# --------------------------------------------------------------------------------------------
# reason vocabularies
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Vocabulary:
    """A site's node-state reasons (what its health checks and admins write).

    Templates may use ``{gpu}`` (GPU index), ``{xid}`` (the Xid of the failure, when there is
    one), ``{port}`` (an HCA port), ``{ticket}`` (a ticket number), ``{date}`` (YYYY-MM-DD of
    the event), ``{rack}`` and ``{admin}`` (an admin's login).

    Parameters
    ----------
    hardware : mapping of str to sequence of str
        Reasons a health check or an operator gives after a hardware failure, by component
        (keys of :data:`COMPONENTS`); ``"unknown"`` is the fallback for a component without
        its own list.
    xid_drain : sequence of str
        Reasons of drains that follow a kernel Xid (may name it with ``{xid}`` or not).
    admin : sequence of str
        Administrative reasons that are not failures (maintenance, reinstall, tests).
    admin_users : sequence of str
        ``name(uid)`` of the people who drain nodes by hand (``root(0)`` counts as one).
    slurm_user : str
        ``name(uid)`` of SlurmUser, who sets ``Not responding`` and Slurm's own reasons.
    """

    hardware: Mapping[str, Sequence[str]]
    xid_drain: Sequence[str]
    admin: Sequence[str]
    admin_users: Sequence[str] = ("root(0)",)
    slurm_user: str = "slurm(64030)"

    def hardware_reasons(self, cause: str) -> Sequence[str]:
        """Return the hardware reasons of a component (``unknown``'s when it has none).

        Parameters
        ----------
        cause : str
            A component.

        Returns
        -------
        sequence of str
            Reason templates.
        """
        got = self.hardware.get(cause)
        if got:
            return got
        return self.hardware.get("unknown") or ("node unhealthy",)

    def all_reasons(self) -> list[str]:
        """Return every template, for checks that an export used only this vocabulary.

        Returns
        -------
        list of str
            Hardware, Xid-drain and admin templates.
        """
        out: list[str] = []
        for v in self.hardware.values():
            out.extend(v)
        return [*out, *self.xid_drain, *self.admin]


def render(template: str, rng: np.random.Generator, **ctx: Any) -> str:
    """Fill a reason template; missing keys get plausible random values.

    Parameters
    ----------
    template : str
        A :class:`Vocabulary` template.
    rng : numpy.random.Generator
        For the random parts (ticket numbers, GPU index, port).
    **ctx
        Known values (``xid``, ``gpu``, ``date``, ``rack``, ``admin``...).

    Returns
    -------
    str
        The reason, with no ``|`` or newline (the readers split on them) and not empty.
    """
    values = {
        "gpu": int(rng.integers(0, 8)),
        "port": int(rng.integers(0, 4)),
        "ticket": int(rng.integers(10000, 99999)),
        "xid": 79,
        "date": "2025-01-01",
        "rack": int(rng.integers(1, 40)),
        "admin": "ops",
    }
    values.update({k: v for k, v in ctx.items() if v is not None})
    text = template.format(**values)
    text = re.sub(r"[|\r\n]+", " ", text).strip()
    return text or "unspecified"


# --------------------------------------------------------------------------------------------
# host lists and times
# --------------------------------------------------------------------------------------------

_TRAILING = re.compile(r"^(.*?)(\d+)$")


def compress_hostlist(names: Sequence[str]) -> str:
    """Write a host list the way Slurm prints it: ``gpu-a[0001-0003,0007],r02n[01-04]``.

    Names are grouped by the text before their trailing number (and its width, so zero padding
    is kept), groups in order of first appearance after sorting, numbers sorted and runs
    collapsed; a group of one host is printed bare.

    Parameters
    ----------
    names : sequence of str
        Host names (any order, no duplicates).

    Returns
    -------
    str
        The expression; ``"None assigned"`` for an empty list (as sacct prints it).
    """
    if len(names) == 0:
        return "None assigned"
    if len(names) == 1:
        return names[0]
    groups: dict[tuple[str, int], list[int]] = {}
    bare: list[str] = []
    for name in sorted(names):
        m = _TRAILING.match(name)
        if m is None:
            bare.append(name)
            continue
        groups.setdefault((m.group(1), len(m.group(2))), []).append(int(m.group(2)))
    parts = list(bare)
    for (prefix, width), nums in groups.items():
        nums.sort()
        if len(nums) == 1:
            parts.append(f"{prefix}{nums[0]:0{width}d}")
            continue
        runs: list[str] = []
        lo = prev = nums[0]
        for x in [*nums[1:], None]:
            if x is not None and x == prev + 1:
                prev = x
                continue
            runs.append(f"{lo:0{width}d}" if lo == prev else f"{lo:0{width}d}-{prev:0{width}d}")
            if x is not None:
                lo = prev = x
        parts.append(f"{prefix}[{','.join(runs)}]")
    return ",".join(parts)


def format_times(
    secs: np.ndarray | Sequence[int | None],
    epoch0: int,
    tz: str | None,
    *,
    missing: str = "Unknown",
    fmt: str = "%Y-%m-%dT%H:%M:%S",
) -> list[str]:
    """Format simulated times as Slurm prints them.

    Parameters
    ----------
    secs : array or sequence
        Integer seconds since the simulation start; negative or None = missing.
    epoch0 : int
        The simulation start [s since 1970, UTC].
    tz : str or None
        None for epoch seconds (``SLURM_TIME_FORMAT=%s``), else the IANA zone of the local
        wall-clock times Slurm prints without a zone.
    missing : str
        Text for a missing time (``Unknown``, ``None``).
    fmt : str
        strftime format of local times.

    Returns
    -------
    list of str
        One string per time.
    """
    arr = np.asarray(secs, dtype=object) if not isinstance(secs, np.ndarray) else secs
    if arr.dtype == object:
        arr = np.array([-1 if v is None else v for v in arr], dtype=np.float64)
    arr = np.floor(np.asarray(arr, dtype=np.float64))
    s = pl.Series("s", np.where(arr >= 0, arr, 0).astype(np.int64))
    s = pl.select(pl.when(pl.lit(pl.Series(arr >= 0))).then(pl.lit(s))).to_series()
    if tz is None:
        out = (s + epoch0).cast(pl.String)
    else:
        out = (
            pl.from_epoch(s + epoch0, time_unit="s")
            .dt.replace_time_zone("UTC")
            .dt.convert_time_zone(tz)
            .dt.strftime(fmt)
        )
    return out.fill_null(missing).to_list()


def misread_local(secs: np.ndarray, epoch0: int, tz: str | None) -> np.ndarray:
    """Mark times whose local wall-clock text is ambiguous (the repeated hour of a DST change).

    Slurm prints local times without a zone; a reader that takes an ambiguous time as the
    earlier instant (the usual choice) is an hour early for the second pass of the hour.

    Parameters
    ----------
    secs : numpy.ndarray
        Seconds since the simulation start (negative = missing).
    epoch0 : int
        The simulation start [s since 1970].
    tz : str or None
        The zone of the printed times (None: epoch seconds, never ambiguous).

    Returns
    -------
    numpy.ndarray
        True where the earlier reading of the printed text is not the true instant.
    """
    arr = np.floor(np.asarray(secs, dtype=np.float64))
    if tz is None or arr.size == 0:
        return np.zeros(arr.size, dtype=bool)
    ok = arr >= 0
    e = pl.Series(np.where(ok, arr, 0).astype(np.int64) + epoch0)
    local = pl.from_epoch(e, time_unit="s").dt.replace_time_zone("UTC").dt.convert_time_zone(tz)
    back = (
        local.dt.replace_time_zone(None)
        .dt.replace_time_zone(tz, ambiguous="earliest", non_existent="null")
        .dt.epoch("s")
    )
    return ok & (back != e).fill_null(True).to_numpy()


def duration(seconds: int | None) -> str:
    """Write a duration as ``[D-]HH:MM:SS`` (sacct's Timelimit / Elapsed form).

    Parameters
    ----------
    seconds : int or None
        Length [s]; None for ``UNLIMITED``.

    Returns
    -------
    str
        The text.
    """
    if seconds is None:
        return "UNLIMITED"
    d, rest = divmod(int(seconds), 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    return f"{d}-{h:02d}:{m:02d}:{s:02d}" if d else f"{h:02d}:{m:02d}:{s:02d}"


def tres(pairs: Mapping[str, str | int]) -> str:
    """Write a TRES string with its keys sorted as Slurm prints them (``billing=..,cpu=..``).

    Parameters
    ----------
    pairs : mapping
        TRES name -> value.

    Returns
    -------
    str
        ``key=value`` pairs joined by commas.
    """
    return ",".join(f"{k}={v}" for k, v in sorted(pairs.items()))


def write_psv(path: Path, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Write ``--parsable2`` text: a header line and one ``|``-joined line per row.

    Parameters
    ----------
    path : Path
        Output file (overwritten).
    header : sequence of str
        Field names.
    rows : sequence of sequences of str
        Records, each with one value per field.
    """
    lines = ["|".join(header)]
    lines.extend("|".join(r) for r in rows)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------------------------
# NVIDIA kernel messages
# --------------------------------------------------------------------------------------------

#: message text after ``NVRM: Xid (PCI:...): <code>, `` for the codes the generators use
XID_TEXT = {
    13: "pid={pid}, name={proc}, Graphics SM Warp Exception on (GPC 3, TPC 1, SM 0): Out Of Range Address",
    31: "pid={pid}, name={proc}, Ch 0000000e, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_3 faulted @ 0x7f3a_12c00000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
    43: "pid={pid}, name={proc}, Ch 00000010",
    48: "pid={pid}, name={proc}, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 1.",
    61: "pid={pid}, name={proc}, 0cde(20e4) 00000000 00000000",
    62: "pid={pid}, name={proc}, 1cb6(98c8) 00000000 00000000",
    63: "pid={pid}, name={proc}, Row Remapper: New row (0x00000000000fa2c1) is marked for remapping, reset gpu to activate.",
    64: "pid={pid}, name={proc}, Row Remapper Error: row remapping failed, bank 3",
    74: "pid={pid}, name={proc}, NVLink: fatal error detected on link {link}(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)",
    79: "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
    92: "pid={pid}, name={proc}, High single-bit ECC error rate",
    94: "pid={pid}, name={proc}, Contained: SM (0x1). RST: No, D-RST: No",
    95: "pid={pid}, name={proc}, Uncontained: FBHUB. RST: Yes, D-RST: No",
    119: "pid={pid}, name={proc}, Timeout after 6s of waiting for RPC response from GPU{gpu} GSP! Expected function 76 (GSP_RM_CONTROL) (0x2080014b 0x5).",
    154: "pid={pid}, name={proc}, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
}


def xid_message(code: int, rng: np.random.Generator, gpu: int, proc: str = "python") -> str:
    """Return the text of an Xid line after the code (as the NVIDIA driver prints it).

    Parameters
    ----------
    code : int
        The Xid.
    rng : numpy.random.Generator
        For the pid and the NVLink link number.
    gpu : int
        GPU index (named by some messages).
    proc : str
        Process name of the message.

    Returns
    -------
    str
        The message.
    """
    text = XID_TEXT.get(code, "pid={pid}, name={proc}, error")
    return text.format(
        pid=int(rng.integers(2000, 4_000_000)), proc=proc, gpu=gpu, link=int(rng.integers(0, 18))
    )


# --------------------------------------------------------------------------------------------
# truth
# --------------------------------------------------------------------------------------------


def attempt_hazard(
    node_idx: Sequence[np.ndarray],
    start: np.ndarray,
    stop: np.ndarray,
    rate_per_s: np.ndarray,
    clock: HazardClock,
) -> tuple[np.ndarray, np.ndarray]:
    """True hazard and node-days of attempts.

    ``true_hazard = sum over the attempt's nodes of r_n * (M(stop) - M(start))``, the expected
    number of hardware failures under it; ``node_days = n_nodes * (stop - start) / DAY``.

    Parameters
    ----------
    node_idx : sequence of int arrays
        The node indices of each attempt (empty for one that never ran).
    start, stop : numpy.ndarray
        Run interval of each attempt [s]; ignored (0 returned) where start < 0.
    rate_per_s : numpy.ndarray
        Base rate of each node [per s].
    clock : HazardClock
        The fleet modulation.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``true_hazard`` and ``node_days`` per attempt.
    """
    n = len(node_idx)
    sizes = np.fromiter((len(x) for x in node_idx), dtype=np.int64, count=n)
    rate_sum = np.zeros(n)
    if sizes.sum():
        flat = np.concatenate([np.asarray(x, dtype=np.int64) for x in node_idx if len(x)])
        offs = np.concatenate([[0], np.cumsum(sizes[sizes > 0])[:-1]])
        rate_sum[sizes > 0] = np.add.reduceat(rate_per_s[flat], offs)
    ran = (start >= 0) & (sizes > 0)
    s = np.where(ran, start, 0.0)
    e = np.where(ran, np.maximum(stop, start), 0.0)
    dm = np.where(ran, clock.cum(e) - clock.cum(s), 0.0)
    return rate_sum * dm, np.where(ran, sizes * (e - s) / DAY, 0.0)


def node_lists(node_idx: Sequence[np.ndarray], names: Sequence[str]) -> pl.Series:
    """Build a ``List(String)`` column of host names from per-row node index arrays (fast).

    Parameters
    ----------
    node_idx : sequence of int arrays
        The node indices of each row (may be empty).
    names : sequence of str
        Host name of each node index.

    Returns
    -------
    polars.Series
        One list of names per row, in the given order.
    """
    sizes = np.fromiter((len(x) for x in node_idx), dtype=np.int64, count=len(node_idx))
    if sizes.sum() == 0:
        return pl.Series("nodes", [[] for _ in node_idx], dtype=pl.List(pl.String))
    flat = np.concatenate([np.asarray(x, dtype=np.int64) for x in node_idx if len(x)])
    rows = np.repeat(np.arange(len(node_idx)), sizes)
    name_s = pl.Series("n", list(names), dtype=pl.String)
    g = (
        pl.DataFrame({"row": rows, "i": flat})
        .with_columns(node=name_s.gather(pl.Series(flat)))
        .group_by("row", maintain_order=True)
        .agg(pl.col("node"))
    )
    full = pl.DataFrame({"row": np.arange(len(node_idx))}).join(g, on="row", how="left")
    return full.get_column("node").fill_null(pl.lit([], dtype=pl.List(pl.String))).alias("nodes")


def to_datetime(secs: np.ndarray | Sequence[float | None], epoch0: int) -> pl.Series:
    """Turn simulated seconds into UTC datetimes (null for missing or negative values).

    Parameters
    ----------
    secs : array or sequence
        Seconds since the simulation start.
    epoch0 : int
        The simulation start [s since 1970].

    Returns
    -------
    polars.Series
        ``Datetime("us", "UTC")`` values.
    """
    arr = np.asarray(secs, dtype=object) if not isinstance(secs, np.ndarray) else secs
    if arr.dtype == object:
        arr = np.array([-1 if v is None else v for v in arr], dtype=np.float64)
    arr = np.asarray(arr, dtype=np.float64)
    ok = arr >= 0
    us = np.where(ok, np.round(arr * 1e6), 0).astype(np.int64) + epoch0 * 1_000_000
    s = pl.select(pl.when(pl.lit(pl.Series(ok))).then(pl.lit(pl.Series(us)))).to_series()
    return s.cast(pl.Datetime("us")).dt.replace_time_zone("UTC")


@dataclass
class History:
    """One generated cluster history: where its raw logs are, how to read them, and the truth.

    The package reads only the raw files; the truth frames (also written as parquet under
    ``out_dir / "truth"``) are for tests.

    Attributes
    ----------
    generator : str
        ``"A"`` or ``"B"``.
    out_dir : Path
        The output folder.
    cluster : str
        Cluster name (sacct's Cluster field).
    sacct : Path
        The ``sacct --allusers --duplicates --parsable2`` export.
    events : Path
        The ``sacctmgr --parsable2 show event`` export.
    kernel : list of Path
        Kernel logs (syslog format) with NVRM Xid lines.
    tz : str or None
        Zone of the local times in ``sacct`` and ``events`` (None: epoch seconds).
    kernel_tz : str
        Zone of the syslog timestamps.
    kernel_year : int
        Year of the first syslog line (syslog prints none).
    start, end : datetime
        The export window [UTC]; ``end`` is when the export was taken (observation end).
    gpus_per_node : int
        GPUs per node.
    attempts : polars.DataFrame
        One row per attempt the export holds: ``job_id`` (as sacct prints JobID), ``attempt``
        (0-based in start order, as the package numbers them), ``raw_job_id``, ``state``
        (sacct's state without ``by <uid>``), times (UTC), ``nodes``, ``n_nodes``, ``n_gpus``,
        ``hardware`` (ended by a hardware failure), ``mechanism`` (``not_responding``,
        ``health_check``, ``xid``, ``silent``), ``culprit_node``, ``cause`` (component),
        ``failure_id`` (row of :attr:`failures`), ``end_reason`` (``completed``,
        ``user_exit``, ``timeout``, ``cancelled``, ``oom``, ``preempted``, ``prolog_error``,
        ``hardware``, ``running``, ``pending``; a prolog error also names its node as
        ``culprit_node`` with cause ``software``, not hardware), ``resubmit_of`` (B: the JobID
        a user resubmitted), ``ambiguous_local_time`` (B: a time printed in the repeated hour of
        a DST change), ``true_hazard`` (expected number of hardware failures under the
        attempt: the integral of its nodes' rates over its run) and ``node_days`` (exposure up
        to the end, or to ``end`` of the export for open attempts).
    nodes : polars.DataFrame
        ``node``, ``index``, ``base_rate_per_day``, ``factor``, ``is_lemon``.
    failures : polars.DataFrame
        One row per hardware failure: ``failure_id``, ``node``, ``time``, ``mechanism``,
        ``cause``, ``xid``, ``silent``, ``outage_end``, ``hit_job``, ``attempts_hit``,
        ``in_window``.
    weeks : polars.DataFrame
        ``week``, ``week_start``, ``multiplier`` (and ``trend_factor`` at the week start).
    node_events : polars.DataFrame
        Every node-state interval written to ``events`` with its ``kind`` (hardware, admin,
        slurm_software, ...) and ``failure_id``.
    config : dict
        The parameters the history was generated with.
    """

    generator: str
    out_dir: Path
    cluster: str
    sacct: Path
    events: Path
    kernel: list[Path]
    tz: str | None
    kernel_tz: str
    kernel_year: int
    start: datetime
    end: datetime
    gpus_per_node: int
    attempts: pl.DataFrame
    nodes: pl.DataFrame
    failures: pl.DataFrame
    weeks: pl.DataFrame
    node_events: pl.DataFrame
    config: dict[str, Any] = field(default_factory=dict)

    def ingest(self, ds: Any, *, kernel: bool = True) -> list[Any]:
        """Ingest the raw files into a ``reliability.Dataset`` with the right options.

        Parameters
        ----------
        ds : reliability.Dataset
            The dataset.
        kernel : bool
            Also ingest the kernel logs.

        Returns
        -------
        list
            The ``IngestOutcome`` of every input.
        """
        out = list(ds.ingest("slurm", [str(self.sacct)], tz=self.tz, observed_at=self.end))
        out += ds.ingest("events", [str(self.events)], tz=self.tz, observed_at=self.end)
        if kernel and self.kernel:
            out += ds.ingest(
                "kernel",
                [str(p) for p in self.kernel],
                cluster=self.cluster,
                tz=self.kernel_tz,
                year=self.kernel_year,
                observed_at=self.end,
            )
        return out

    def true_rate(self, attempts: pl.DataFrame | None = None) -> float:
        """Return the true r_f of a set of attempts: sum(true_hazard) / sum(node_days).

        Parameters
        ----------
        attempts : polars.DataFrame or None
            A subset of :attr:`attempts` (default: all of them).

        Returns
        -------
        float
            Failures per node-day (nan without exposure).
        """
        a = self.attempts if attempts is None else attempts
        nd = float(a.get_column("node_days").sum())
        return float(a.get_column("true_hazard").sum()) / nd if nd > 0 else float("nan")


def write_truth(h: History) -> None:
    """Write the truth frames as parquet and the config as JSON under ``out_dir/truth``.

    Parameters
    ----------
    h : History
        The history.
    """
    d = h.out_dir / "truth"
    d.mkdir(parents=True, exist_ok=True)
    for name in ("attempts", "nodes", "failures", "weeks", "node_events"):
        getattr(h, name).write_parquet(d / f"{name}.parquet", statistics=False)
    (d / "config.json").write_text(
        json.dumps(h.config, indent=1, sort_keys=True, default=str) + "\n"
    )


def utc(epoch: int) -> datetime:
    """Return the UTC datetime of an epoch second.

    Parameters
    ----------
    epoch : int
        Seconds since 1970.

    Returns
    -------
    datetime
        Timezone-aware (UTC).
    """
    return datetime.fromtimestamp(epoch, tz=UTC)
