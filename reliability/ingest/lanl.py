"""Reader of the LANL failure records 1996-2005 (Schroeder & Gibson, DSN'06; LA-UR-05-7318).

One row per failure/interrupt of a node of one of 22 systems: ``Prob Started`` /
``Prob Fixed`` (``m/d/yyyy h:mm``, local time at LANL: pass ``tz``, default
``America/Denver``), the node (``nodenumz``), the system's production and decommission dates
(``Nov-96`` or ``2-Mar`` = March 2002, ``current``, ``before tracking``). Produces
``component_failures`` (``component_type = "node"``, cluster ``lanl-<system>``) and an
``inventory`` of *every* node of each system, in service from its production month until its
decommission month (open when ``current``).

The records list only failures, so a node that never failed appears nowhere in them; an
inventory of the nodes that appear would hold a fraction of each system (e.g. 134 of system
12's 512 nodes) and divide the failures by too few node-days (node MTTF up to 3.8x too low).
The node count of each system is in :data:`LANL_NODES_PER_SYSTEM`; nodes without a record get
the ids missing from the system's number range (``0 .. nodes − 1``, or from
:data:`LANL_FIRST_NODE`). Their service dates are not in the records, and two readings are
defensible (option ``unrecorded``):

- ``"nearest"`` (default): the production/decommission dates of the recorded node with the
  nearest number (ties: the lower), since systems grew in phases and neighbouring numbers were
  installed together;
- ``"system"``: the whole system's span, from its earliest production month to its latest
  decommission (open when any recorded node is ``current``), as if every node served as long
  as the system.

They give a system's never-failed nodes different node-days, so node MTTF differs (one system:
832 vs about 1,460 days); the reader's notes give, per system where they differ by more than
10%, the node-days under both readings, so the choice is never silent. System 17's records
have no node count or node number: its inventory holds the one recorded (unnamed) node, noted.
"""

from __future__ import annotations

import calendar
import csv
import dataclasses
import re
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import polars as pl

from reliability import schema
from reliability.errors import Hint, Hinted, IngestError
from reliability.ingest._bounds import time_out_of_bounds
from reliability.ingest._common import ReadResult, decode_text, quarantine_frame, read_bytes
from reliability.ingest._spec import TZ, FileHead, ReaderOption, ReaderSample, ReaderSpec

#: a Down Time [min]; it may differ from Prob Fixed - Prob Started by a minute (rounding) or
#: an hour (daylight saving) in the records, more is a contradiction
_DOWN = re.compile(r"[0-9]{1,9}")
_DOWN_SLACK_MIN = 61

__all__ = ["LANL_FIRST_NODE", "LANL_NODES_PER_SYSTEM", "SPEC", "read_lanl"]

#: Nodes per LANL system. Source: the ``nodes`` column of LA-UR-05-7318-failure-data-1996-2005.csv
#: ("number of nodes" in the record layout of its README; the same value on every record of a
#: system) and Table 1 of Schroeder & Gibson, DSN'06 (:data:`reliability.references.DSN06`).
#: System 17 has no node count in the records.
LANL_NODES_PER_SYSTEM: dict[str, int] = {
    "2": 49, "3": 128, "4": 128, "5": 128, "6": 32, "7": 1, "8": 164, "9": 256, "10": 256,
    "11": 256, "12": 512, "13": 256, "14": 128, "15": 1, "16": 16, "18": 1024, "19": 1024,
    "20": 512, "21": 128, "22": 1, "23": 5, "24": 1,
}  # fmt: skip
#: First node number (``nodenumz``) of systems whose numbers do not start at 0: system 14's
#: 128 nodes are numbered 128-255 (its records name nodes 129-255 only)
LANL_FIRST_NODE: dict[str, int] = {"14": 128}

_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_abbr) if m}
_REQUIRED = ("System", "nodenumz", "Prob Started", "Prob Fixed", "node prod", "node decom")
#: the header fields that make a CSV the LANL records, for the file-kind signature
_SIGNATURE = {"System", "nodenumz", "Prob Started", "Prob Fixed"}


def _is_lanl(head: FileHead) -> str | None:
    return "the LANL failure records" if head.header >= _SIGNATURE else None


SPEC = ReaderSpec(
    kind="lanl",
    summary="the LANL failure records (LA-UR-05-7318, 1996-2005)",
    options=(
        dataclasses.replace(TZ, default="America/Denver"),
        ReaderOption(
            "unrecorded",
            "choice",
            "LANL records: service dates of nodes that never failed (the nearest recorded "
            "node's, or the system's whole span)",
            default="nearest",
            choices=("nearest", "system"),
        ),
    ),
    tables=("component_failures", "inventory"),
    signature=_is_lanl,
    rank=10,
    sample=ReaderSample(
        "lanl.csv",
        "System,machine type,nodes,procstot,procsinnode,nodenum,nodenumz,node install,node prod,"
        "node decom,fru type,mem,cputype,memtype,num intercon,purpose,Prob Started,Prob Fixed,"
        "Down Time,Facilities,Hardware,Human Error,Network,Undetermined,Software,Same Event\n"
        "2,cluster,49,6152,80,0,0,5-Apr,5-Jun,current,part,80,1,1,0,graphics.fe,"
        "6/21/2005 10:54,6/21/2005 11:00,6,,Graphics Accel Hdwr,,,,,No\n",
    ),
)


def _month(text: str) -> datetime | None:
    """``Nov-96`` / ``2-Mar`` -> first day of that month (naive); None for current / unknown."""
    t = text.strip().lower()
    m = re.fullmatch(r"([a-z]{3})-([0-9]{2})", t)
    if m and m.group(1) in _MONTHS:
        return datetime(
            1900 + int(m.group(2)) if int(m.group(2)) > 50 else 2000 + int(m.group(2)),
            _MONTHS[m.group(1)],
            1,
        )
    m = re.fullmatch(r"([0-9]{1,2})-([a-z]{3})", t)
    if m and m.group(2) in _MONTHS:
        return datetime(2000 + int(m.group(1)), _MONTHS[m.group(2)], 1)
    return None


@SPEC.reads
def read_lanl(
    path: str | Path, *, tz: str = "America/Denver", unrecorded: str = "nearest"
) -> ReadResult:
    """Read the LANL failure CSV into ``component_failures`` and ``inventory``.

    Parameters
    ----------
    path : str or Path
        The CSV (UTF-8, UTF-16 or with a byte-order mark; ``.gz`` is read transparently).
    tz : str
        Time zone of the records' local times.
    unrecorded : str
        Service dates of the nodes without a record: ``"nearest"`` (the recorded node with the
        nearest number) or ``"system"`` (the system's whole span); see the module doc.

    Returns
    -------
    ReadResult
        The read, with ``component_failures`` (one row per record) and ``inventory`` (every node of
        every system, see the module doc). Each line is one record, parsed on its own: a damaged
        line (a stray quote, a wrong field count, a bad time) is quarantined without touching its
        neighbours.
    """
    src = str(path)
    if unrecorded not in ("nearest", "system"):
        raise IngestError(
            src,
            Hinted(
                "option ",
                Hint("unrecorded", unrecorded, action=False),
                ": expected 'nearest' or 'system'",
            ),
        )
    data, decode_notes = decode_text(read_bytes(path))
    lines = data.decode("utf-8", errors="replace").splitlines()
    if not lines:
        raise IngestError(src, "empty file")
    header = [h.strip() for h in next(csv.reader([lines[0]]), [])]
    missing = [c for c in _REQUIRED if c not in header]
    if missing:
        raise IngestError(src, "not the LANL failure CSV", line=1, field=missing[0])
    idx = {c: header.index(c) for c in header}
    zone = ZoneInfo(tz)
    fails: list[dict[str, object]] = []
    inv: dict[tuple[str, str], dict[str, object]] = {}
    sizes: dict[str, set[str]] = {}
    q: tuple[list[int], list[str], list[str]] = ([], [], [])
    odd_down: list[int] = []  # lines whose Down Time contradicts Prob Started/Fixed
    n = 0
    for line_no, line in enumerate(lines[1:], start=2):
        rec = next(csv.reader([line]), [])
        if not any(v.strip() for v in rec):
            continue
        n += 1
        got = _record(rec, idx, len(header), zone)
        if isinstance(got, str):
            q[0].append(line_no), q[1].append(line), q[2].append(got)
            continue
        if got.pop("odd_down"):
            odd_down.append(line_no)
        _fold(got, zone, fails, inv, sizes)
    cf = _local_frame(fails, ("failed_at", "repaired_at"), tz)
    notes = [
        *decode_notes,
        "nodes enter the inventory from their system's production month (or their first record)",
    ]
    if odd_down:
        shown = ", ".join(map(str, odd_down[:5])) + (", ..." if len(odd_down) > 5 else "")
        notes.append(
            f"{len(odd_down)} record(s) give a Down Time [min] more than an hour away from Prob "
            f"Fixed - Prob Started (lines {shown}): the failure interval is read from Prob "
            "Started/Fixed, Down Time is not used"
        )
    inv_rows, inv_notes = _complete_inventory(inv, sizes, unrecorded, last_seen=_last(fails))
    notes += inv_notes
    iv = _local_frame(inv_rows, ("in_service", "out_of_service"), tz)
    qf = quarantine_frame(src, *q)
    last = cf.select(
        pl.max_horizontal(pl.col("failed_at").max(), pl.col("repaired_at").max())
    ).item()
    return ReadResult(
        src,
        {"component_failures": cf, "inventory": iv},
        qf,
        n,
        n - qf.height,
        notes,
        observed_until=last,
        observation_basis="latest failure or repair record in the LANL file",
    )


def _record(
    rec: list[str], idx: dict[str, int], n_fields: int, zone: ZoneInfo
) -> dict[str, object] | str:
    """Read one record's fields (``idx``: column -> position; ``n_fields`` in the header).

    Returns the failure (its fields, local times, whether its Down Time is odd) or why the
    record is quarantined.
    """
    if len(rec) != n_fields:
        return f"{len(rec)} fields, expected {n_fields}"

    def get(c: str) -> str:
        return rec[idx[c]].strip()

    odd = next((c for c in ("Prob Started", "Prob Fixed") if not get(c).isascii()), None)
    if odd is not None:  # (strptime reads any digits: 5/23/٣003 is the year 3003)
        return f"field {odd}: '{get(odd)[:40]}' is not a number or time (ASCII digits)"
    try:
        started = datetime.strptime(get("Prob Started"), "%m/%d/%Y %H:%M").replace(tzinfo=zone)
        fixed = datetime.strptime(get("Prob Fixed"), "%m/%d/%Y %H:%M").replace(tzinfo=zone)
    except ValueError as exc:
        return f"field Prob Started/Fixed: {exc}"
    outside = [
        (c, t)
        for c, t in (("Prob Started", started), ("Prob Fixed", fixed))
        if time_out_of_bounds(t) is not None
    ]
    if outside:  # (strptime reads any digits: 5/23/٣003 is the year 3003)
        c, t = outside[0]
        return f"field {c}: time '{get(c)[:40]}' is {time_out_of_bounds(t)}"
    if fixed < started:
        return "Prob Fixed is before Prob Started (impossible order; not fixed)"
    odd_down = False
    if "Down Time" in idx and _DOWN.fullmatch(get("Down Time")):
        span = (fixed - started).total_seconds() / 60
        odd_down = abs(int(get("Down Time")) - span) > _DOWN_SLACK_MIN
    return {
        "system": get("System"),
        "node": get("nodenumz"),
        "nodes": get("nodes") if "nodes" in idx else "",
        "prod": get("node prod"),
        "decom": get("node decom"),
        "started": started,
        "fixed": fixed,
        "odd_down": odd_down,
    }


def _fold(
    got: dict[str, object],
    zone: ZoneInfo,
    fails: list[dict[str, object]],
    inv: dict[tuple[str, str], dict[str, object]],
    sizes: dict[str, set[str]],
) -> None:
    """Add a record's failure, its node's earliest service start, its system's node count."""
    cluster, node = f"lanl-{got['system']}", str(got["node"])
    started: datetime = got["started"]  # type: ignore[assignment]
    sizes.setdefault(str(got["system"]), set()).add(str(got["nodes"]))
    fails.append(
        {
            "cluster": cluster,
            "component_type": "node",
            "component_id": node,
            "failed_at": started,
            "repaired_at": got["fixed"],
        }
    )
    prod = _month(str(got["prod"]))
    decom = _month(str(got["decom"]))
    key = (cluster, node)
    first = inv.get(key)
    start = prod.replace(tzinfo=zone) if prod else started
    if first is None or start < first["in_service"]:  # type: ignore[operator]
        inv[key] = {
            "cluster": cluster,
            "component_type": "node",
            "component_id": node,
            "in_service": start,
            "out_of_service": decom.replace(tzinfo=zone) if decom else None,
        }


def _local_frame(rows: list[dict[str, object]], times: tuple[str, str], tz: str) -> pl.DataFrame:
    """Build a component table from rows whose ``times`` are local to ``tz``, in UTC."""
    local = pl.Datetime("us", tz)
    return pl.DataFrame(
        rows,
        schema={
            "cluster": pl.String,
            "component_type": pl.String,
            "component_id": pl.String,
            **dict.fromkeys(times, local),
        },
        orient="row",
    ).with_columns(pl.col(*times).dt.convert_time_zone("UTC").cast(schema.UTC_TIME))


def _last(fails: list[dict[str, object]]) -> datetime | None:
    times = [
        t for f in fails for t in (f["failed_at"], f["repaired_at"]) if isinstance(t, datetime)
    ]
    return max(times) if times else None


def _days(rows: list[dict[str, object]], end: datetime | None) -> float:
    """Node-days in service of inventory rows, open ones up to ``end``."""
    total = 0.0
    for r in rows:
        a, b = r["in_service"], r["out_of_service"] or end
        if isinstance(a, datetime) and isinstance(b, datetime) and b > a:
            total += (b - a).total_seconds() / 86400.0
    return total


def _complete_inventory(
    inv: dict[tuple[str, str], dict[str, object]], sizes: dict[str, set[str]],
    unrecorded: str = "nearest", last_seen: datetime | None = None,
) -> tuple[list[dict[str, object]], list[str]]:  # fmt: skip
    """List recorded nodes plus the nodes of each system that never failed (see the module doc)."""
    notes: list[str] = []
    by_system: dict[str, list[dict[str, object]]] = {}
    for (cluster, _), row in inv.items():
        by_system.setdefault(cluster, []).append(row)
    out: list[dict[str, object]] = []
    added = 0
    for cluster in sorted(by_system):
        rows = by_system[cluster]
        out += rows
        system = cluster.removeprefix("lanl-")
        count = LANL_NODES_PER_SYSTEM.get(system)
        listed = sizes.get(system, set()) - {""}
        if listed and count is not None and listed != {str(count)}:
            notes.append(
                f"system {system}: the file says {sorted(listed)} nodes, the reader uses {count}"
            )
        if count is None:
            notes.append(
                f"system {system}: node count unknown; its inventory holds only the {len(rows)} node(s) in the records"
            )
            continue
        numbered = sorted(
            (int(str(r["component_id"])), r)
            for r in rows
            if str(r["component_id"]).isascii() and str(r["component_id"]).isdigit()
        )
        if not numbered:
            continue
        first = LANL_FIRST_NODE.get(system, 0)
        have = {i for i, _ in numbered}
        missing = [i for i in range(first, first + count) if i not in have][
            : max(count - len(rows), 0)
        ]
        ids = np.array([i for i, _ in numbered])
        nearest, whole = [], []
        span_start = min(r["in_service"] for r in rows)  # type: ignore[type-var]
        ends = [r["out_of_service"] for r in rows]
        span_end = None if any(e is None for e in ends) else max(ends)  # type: ignore[type-var]
        for i in missing:
            j = int(
                np.argmin(np.abs(ids - i))
            )  # nearest recorded number; argmin takes the lower on ties
            ref = numbered[j][1]
            nearest.append({**ref, "component_id": str(i)})
            whole.append(
                {
                    **ref,
                    "component_id": str(i),
                    "in_service": span_start,
                    "out_of_service": span_end,
                }
            )
        out += nearest if unrecorded == "nearest" else whole
        added += len(missing)
        if missing:
            d_near, d_whole = _days(rows + nearest, last_seen), _days(rows + whole, last_seen)
            if d_near > 0 and abs(d_whole / d_near - 1) > 0.10:
                notes.append(
                    Hinted(
                        f"system {system}: {len(missing)} nodes without a record; their service "
                        f"dates are not in the file: the system's node-days are {d_near:,.0f} with "
                        f"the nearest recorded node's dates, {d_whole:,.0f} with the system's whole "
                        f"span (x{d_whole / d_near:.2f} for its node MTTF); read with ",
                        Hint("unrecorded", unrecorded, action=False),
                    )
                )
        outside = [i for i in have if not first <= i < first + count]
        if outside:
            notes.append(
                f"system {system}: node number(s) {outside} outside its range {first}-{first + count - 1}; kept"
            )
    notes.append(
        f"{added:,} nodes without a failure record were added to the inventory from the node count of each system "
        "(LANL_NODES_PER_SYSTEM)"
    )
    return out, notes
