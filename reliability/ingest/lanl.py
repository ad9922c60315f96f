"""Reader of the LANL failure records 1996-2005 (Schroeder & Gibson, DSN'06; LA-UR-05-7318).

One row per failure/interrupt of a node of one of 22 systems: ``Prob Started`` /
``Prob Fixed`` (``m/d/yyyy h:mm``, local time at LANL: pass ``tz``, default
``America/Denver``), the node (``nodenumz``), the system's production and decommission dates
(``Nov-96`` or ``2-Mar`` = March 2002, ``current``, ``before tracking``). Produces
``component_failures`` (``component_type = "node"``, cluster ``lanl-<system>``) and an
``inventory`` of the nodes that appear, in service from the system's production month until
its decommission month (open when ``current``).
"""

from __future__ import annotations

import calendar
import re
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import polars as pl

from reliability import schema
from reliability.errors import IngestError
from reliability.ingest._common import ReadResult, quarantine_frame, read_bytes

__all__ = ["read_lanl"]

_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_abbr) if m}
_REQUIRED = ("System", "nodenumz", "Prob Started", "Prob Fixed", "node prod", "node decom")


def _month(text: str) -> datetime | None:
    """``Nov-96`` / ``2-Mar`` -> first day of that month (naive); None for current / unknown."""
    t = text.strip().lower()
    m = re.fullmatch(r"([a-z]{3})-(\d{2})", t)
    if m and m.group(1) in _MONTHS:
        return datetime(
            1900 + int(m.group(2)) if int(m.group(2)) > 50 else 2000 + int(m.group(2)),
            _MONTHS[m.group(1)],
            1,
        )
    m = re.fullmatch(r"(\d{1,2})-([a-z]{3})", t)
    if m and m.group(2) in _MONTHS:
        return datetime(2000 + int(m.group(1)), _MONTHS[m.group(2)], 1)
    return None


def read_lanl(path: str | Path, *, tz: str = "America/Denver") -> ReadResult:
    """Read the LANL failure CSV into ``component_failures`` and ``inventory``."""
    import csv
    import io

    src = str(path)
    text = read_bytes(path).decode("utf-8", errors="replace")
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise IngestError(src, "empty file") from None
    missing = [c for c in _REQUIRED if c not in header]
    if missing:
        raise IngestError(src, "not the LANL failure CSV", line=1, field=missing[0])
    idx = {c: header.index(c) for c in header}
    zone = ZoneInfo(tz)
    fails: list[dict[str, object]] = []
    inv: dict[tuple[str, str], dict[str, object]] = {}
    q: tuple[list[int], list[str], list[str]] = ([], [], [])
    n = 0
    for line_no, rec in enumerate(reader, start=2):
        if not any(v.strip() for v in rec):
            continue
        n += 1
        raw = ",".join(rec)
        if len(rec) != len(header):
            (
                q[0].append(line_no),
                q[1].append(raw),
                q[2].append(f"{len(rec)} fields, expected {len(header)}"),
            )
            continue

        def get(c: str, rec: list[str] = rec) -> str:
            return rec[idx[c]].strip()

        try:
            started = datetime.strptime(get("Prob Started"), "%m/%d/%Y %H:%M").replace(tzinfo=zone)
            fixed = datetime.strptime(get("Prob Fixed"), "%m/%d/%Y %H:%M").replace(tzinfo=zone)
        except ValueError as exc:
            q[0].append(line_no), q[1].append(raw), q[2].append(f"field Prob Started/Fixed: {exc}")
            continue
        if fixed < started:
            (
                q[0].append(line_no),
                q[1].append(raw),
                q[2].append("Prob Fixed is before Prob Started (impossible order; not fixed)"),
            )
            continue
        cluster = f"lanl-{get('System')}"
        node = get("nodenumz")
        fails.append({"cluster": cluster, "component_type": "node", "component_id": node,
                      "failed_at": started, "repaired_at": fixed})  # fmt: skip
        prod = _month(get("node prod"))
        decom = _month(get("node decom"))
        key = (cluster, node)
        first = inv.get(key)
        start = prod.replace(tzinfo=zone) if prod else started
        if first is None or start < first["in_service"]:  # type: ignore[operator]
            inv[key] = {"cluster": cluster, "component_type": "node", "component_id": node, "in_service": start,
                        "out_of_service": decom.replace(tzinfo=zone) if decom else None}  # fmt: skip
    utc = schema.UTC_TIME
    cf = pl.DataFrame(fails, schema={"cluster": pl.String, "component_type": pl.String, "component_id": pl.String,
                                     "failed_at": pl.Datetime("us", tz), "repaired_at": pl.Datetime("us", tz)},
                      orient="row").with_columns(pl.col("failed_at", "repaired_at").dt.convert_time_zone("UTC").cast(utc))  # fmt: skip
    iv = pl.DataFrame(list(inv.values()), schema={"cluster": pl.String, "component_type": pl.String,
                      "component_id": pl.String, "in_service": pl.Datetime("us", tz), "out_of_service": pl.Datetime("us", tz)},
                      orient="row").with_columns(pl.col("in_service", "out_of_service").dt.convert_time_zone("UTC").cast(utc))  # fmt: skip
    qf = quarantine_frame(src, *q)
    notes = [
        "nodes enter the inventory from their system's production month (or their first record)"
    ]
    return ReadResult(src, {"component_failures": cf, "inventory": iv}, qf, n, n - qf.height, notes)
