"""Reader of NVIDIA driver messages in kernel logs -> ``health_events``.

Recognised records: ``NVRM: Xid (PCI:...): <code>, ...`` lines, NVSwitch
``nvidia-nvswitchN: SXid (PCI:...): <code>, Fatal|Non-fatal, ...`` lines, and "GPU has fallen
off the bus" reported without an Xid (possibly over several continuation lines), which is
recorded as Xid 79 unless an Xid 79 for the same GPU is within a minute of it.

Timestamp prefixes:

- ``[ 1843.308145]`` seconds since boot (needs ``boot_time``; otherwise quarantined),
- ``[Sun Feb 23 16:24:18 2025]`` (``dmesg -T``, local time: needs ``tz``),
- ``kern  :warn  : 2025-01-21T04:41:44,283302+00:00`` and ``2025-01-21T04:41:44.283+00:00``
  (``dmesg --time-format iso``, rsyslog RFC 3339, optionally followed by a host name),
- ``Nov 30 01:02:03 host kernel:`` (syslog / journalctl: local time without a year: needs
  ``tz`` and ``year``; a month going backwards rolls the year over).

Every other line (kernel noise, RPC history tables, SXid detail lines) is not a record; the
notes say how many lines were skipped.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import polars as pl

from reliability import schema, taxonomy
from reliability.errors import IngestError
from reliability.ingest._common import ReadResult, quarantine_frame, read_lines

__all__ = ["read_kernel_log"]

_REL = re.compile(r"^\[\s*(?P<secs>\d+\.\d+)\]\s?(?P<rest>.*)$")
_CTIME = re.compile(
    r"^\[(?P<ts>[A-Z][a-z]{2} [A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d \d{4})\]\s?(?P<rest>.*)$"
)
_ISO = re.compile(
    r"^(?:\w+\s*:\s*\w+\s*:\s*)?(?P<ts>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)"
    r"\s+(?P<rest>.*)$"
)
_SYSLOG = re.compile(
    r"^(?P<ts>[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d)\s+(?P<host>\S+)\s+(?P<rest>.*)$"
)
_HOSTED = re.compile(r"^(?P<host>[A-Za-z0-9][\w\-.]*)\s+kernel:\s*(?P<rest>.*)$")
_KERNEL_TAG = re.compile(r"^kernel:\s*(?:\[\s*\d+\.\d+\]\s*)?")
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<dev>[0-9A-Fa-f:.]+)\): (?P<code>\d+),?\s*(?P<msg>.*)$")
_SXID = re.compile(
    r"(?P<sw>nvidia-nvswitch\d+): SXid \((?:PCI:)?(?P<dev>[0-9A-Fa-f:.]+)\): (?P<code>\d+),\s*(?P<msg>.*)$"
)
_GPU_START = re.compile(r"NVRM: The NVIDIA GPU (?P<dev>[0-9A-Fa-f:.]+)")
_FALLEN = re.compile(r"NVRM: GPU (?P<dev>[0-9A-Fa-f:.]+): GPU has fallen off the bus")
_MONTHS = {
    m: i
    for i, m in enumerate(
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], 1
    )
}
_DEDUP_WINDOW = timedelta(seconds=60)


def _bus_id(dev: str) -> str:
    """Normalise a PCI address to ``dddd:bb:dd`` (drop ``PCI:`` and the ``.function``)."""
    dev = dev.lower().removeprefix("pci:")
    parts = dev.split(":")
    if len(parts) == 2:
        parts = ["0000", *parts]
    last = parts[-1].split(".")[0]
    return ":".join([*parts[:-1], last])


class _Clock:
    """Turns the various prefixes into UTC datetimes."""

    def __init__(
        self, src: str, tz: str | None, year: int | None, boot_time: datetime | None
    ) -> None:
        self.src = src
        try:
            self.zone = ZoneInfo(tz) if tz else None
        except (ZoneInfoNotFoundError, ValueError):
            raise IngestError(src, f"unknown time zone {tz!r}") from None
        self.year = year
        self.boot = boot_time
        self.last_month: int | None = None
        self.last_rel: timedelta | None = None  # seconds-since-boot of the last line, if any

    def local(self, naive: datetime, line: int) -> datetime:
        if self.zone is None:
            raise IngestError(self.src, "local timestamps without a zone: pass tz=", line=line)
        return naive.replace(tzinfo=self.zone).astimezone(UTC)

    def parse(self, line: str, line_no: int) -> tuple[datetime | None, str | None, str, str | None]:
        """(time or None, host or None, message rest, why-no-time or None)."""
        self.last_rel = None
        m = _SYSLOG.match(line)
        if m and m.group("ts")[:3] in _MONTHS:
            if self.year is None:
                raise IngestError(
                    self.src, "syslog timestamps have no year: pass year=", line=line_no
                )
            month = _MONTHS[m.group("ts")[:3]]
            if self.last_month is not None and month < self.last_month:
                self.year += 1  # the log crossed New Year
            self.last_month = month
            naive = datetime.strptime(f"{self.year} {m.group('ts')}", "%Y %b %d %H:%M:%S")
            return (
                self.local(naive, line_no),
                m.group("host"),
                _KERNEL_TAG.sub("", m.group("rest")),
                None,
            )
        m = _ISO.match(line)
        if m:
            ts = m.group("ts").replace(",", ".").replace(" ", "T")
            t = datetime.fromisoformat(ts)
            t = t.astimezone(UTC) if t.tzinfo else self.local(t, line_no)
            rest, host = m.group("rest"), None
            h = _HOSTED.match(rest)
            if h:
                host, rest = h.group("host"), _KERNEL_TAG.sub("", "kernel: " + h.group("rest"))
            return t, host, rest, None
        m = _CTIME.match(line)
        if m:
            naive = datetime.strptime(" ".join(m.group("ts").split()), "%a %b %d %H:%M:%S %Y")
            return self.local(naive, line_no), None, m.group("rest"), None
        m = _REL.match(line)
        if m:
            self.last_rel = timedelta(seconds=float(m.group("secs")))
            if self.boot is None:
                return (
                    None,
                    None,
                    m.group("rest"),
                    ("dmesg timestamp is seconds since boot: pass boot_time= to place it in time"),
                )
            return (
                self.boot + timedelta(seconds=float(m.group("secs"))),
                None,
                m.group("rest"),
                None,
            )
        return None, None, line.strip(), "no timestamp on the line"


def read_kernel_log(
    path: str | Path,
    *,
    cluster: str,
    node: str | None = None,
    tz: str | None = None,
    year: int | None = None,
    boot_time: datetime | None = None,
) -> ReadResult:
    """Read NVIDIA Xid / SXid events from a kernel log (dmesg, journalctl, syslog).

    Parameters
    ----------
    path : the log (plain or gzip)
    cluster : cluster name for every event
    node : host name for lines that carry none (dmesg); default: the host in syslog lines,
        else the file name without extension (recorded in the notes)
    tz : IANA zone of local timestamps (``dmesg -T``, syslog)
    year : year of the first syslog line (syslog prints none)
    boot_time : UTC-aware boot time, for ``[seconds since boot]`` prefixes

    Returns
    -------
    ReadResult with ``health_events`` (source ``kernel_log``), classified with
    :mod:`reliability.taxonomy`.
    """
    src = str(path)
    if boot_time is not None and boot_time.tzinfo is None:
        raise ValueError("boot_time must be timezone-aware (UTC)")
    lines, notes = read_lines(path)
    if lines.height == 0:
        raise IngestError(src, "empty file")
    cand = lines.filter(pl.col("line").str.contains(r"NVRM|SXid"))
    skipped = lines.filter(pl.col("line").str.strip_chars() != "").height - cand.height
    clock = _Clock(src, tz, year, boot_time)
    default_node = node or Path(src).name.split(".")[0]
    used_default = False
    events: list[dict[str, object]] = []
    fallen: list[dict[str, object]] = []
    q: tuple[list[int], list[str], list[str]] = ([], [], [])
    group: dict[str, object] | None = None  # a multi-line "The NVIDIA GPU ..." message
    context = 0

    def close_group() -> None:
        nonlocal group, context
        if group is None:
            return
        if "fallen off the bus" in str(group["message"]):
            fallen.append(group)
        else:
            context += 1
        group = None

    for line_no, line in cand.iter_rows():
        is_cont = line[:1].isspace() and line.strip().startswith("NVRM:")
        if is_cont and group is not None:
            group["message"] = f"{group['message']} {line.strip().removeprefix('NVRM:').strip()}"
            group["raw"] = f"{group['raw']}\n{line}"
            continue
        close_group()
        t, host, rest, why = clock.parse(line, line_no)
        if host is None:
            used_default = used_default or node is None
            host = node or default_node
        base = {
            "line_no": line_no,
            "raw": line,
            "time": t,
            "node": host,
            "why": why,
            "tkey": t if t is not None else clock.last_rel,
        }
        if m := _XID.search(rest):
            c = taxonomy.classify_xid(m.group("code"))
            events.append(
                {
                    **base,
                    "code": m.group("code"),
                    "device": _bus_id(m.group("dev")),
                    "message": m.group("msg").strip(),
                    "cls": c,
                }
            )
        elif m := _SXID.search(rest):
            msg = m.group("msg").strip()
            fatal = msg.lower().startswith("fatal")
            if not (fatal or msg.lower().startswith("non-fatal")):
                context += 1  # detail line of an SXid already recorded
                continue
            c = taxonomy.classify_sxid(m.group("code"), fatal)
            events.append(
                {
                    **base,
                    "code": f"SXid{m.group('code')}",
                    "device": f"{m.group('sw')}@{_bus_id(m.group('dev'))}",
                    "message": msg,
                    "cls": c,
                }
            )
        elif m := _GPU_START.search(rest):
            group = {
                **base,
                "device": _bus_id(m.group("dev")),
                "message": rest.split("NVRM:", 1)[1].strip(),
            }
        elif m := _FALLEN.search(rest):
            fallen.append(
                {
                    **base,
                    "device": _bus_id(m.group("dev")),
                    "message": rest.split("NVRM:", 1)[1].strip(),
                }
            )
        else:
            context += 1
    close_group()
    xid79 = [(e["node"], e["device"], e["tkey"]) for e in events if e["code"] == "79"]
    duplicates = 0
    for f in fallen:
        dup = any(
            n == f["node"]
            and d == f["device"]
            and t is not None
            and f["tkey"] is not None
            and type(t) is type(f["tkey"])
            and abs(t - f["tkey"]) <= _DEDUP_WINDOW  # type: ignore[operator]
            for n, d, t in xid79
        )
        if dup:
            duplicates += 1
            continue
        c = taxonomy.classify_xid(79)
        events.append({**f, "code": "79", "message": f"(no Xid printed) {f['message']}", "cls": c})
    rows: list[dict[str, object]] = []
    for e in sorted(events, key=lambda e: e["line_no"]):  # type: ignore[arg-type, return-value]
        if e["time"] is None:
            q[0].append(e["line_no"])  # type: ignore[arg-type]
            q[1].append(e["raw"])  # type: ignore[arg-type]
            q[2].append(str(e["why"]))
            continue
        c: taxonomy.Classification = e["cls"]  # type: ignore[assignment, no-redef]
        rows.append(
            {
                "cluster": cluster,
                "node": e["node"],
                "time": e["time"],
                "source": "kernel_log",
                "component": c.component,
                "code": e["code"],
                "severity": c.severity,
                "device": e["device"],
                "message": e["message"],
            }
        )
    frame = pl.DataFrame(rows, schema=schema.TABLES["health_events"].schema, orient="row")
    if used_default:
        notes.append(f"no host name in the log: node set to {default_node!r} (pass node=)")
    if skipped or context:
        notes.append(
            f"{skipped + context} line(s) are not Xid/SXid records (kernel messages, "
            "driver context, SXid detail lines) and were skipped"
        )
    if duplicates:
        notes.append(f"{duplicates} 'fallen off the bus' line(s) repeat an Xid 79 already recorded")
    qf = quarantine_frame(src, *q)
    n_read = len(events)
    return ReadResult(src, {"health_events": frame}, qf, n_read, n_read - qf.height, notes)
