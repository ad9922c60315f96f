"""Reader of NVIDIA driver messages in kernel logs -> ``health_events``.

Recognised records: ``NVRM: Xid (PCI:...): <code>, ...`` lines, NVSwitch
``nvidia-nvswitchN: SXid (PCI:...): <code>, Fatal|Non-fatal, ...`` lines, and "GPU has fallen
off the bus" reported without an Xid (possibly over several continuation lines), which is
recorded as Xid 79 unless an Xid 79 for the same GPU is within a minute of it.

Timestamp prefixes (after the ``<4>`` priority of ``dmesg -r`` or the ``kern  :warn  :``
of ``dmesg -x``, which are read past):

- ``[ 1843.308145]`` seconds since boot (needs ``boot_time``; otherwise quarantined),
- ``[Sun Feb 23 16:24:18 2025]`` (``dmesg -T``, local time: needs ``tz``),
- ``kern  :warn  : 2025-01-21T04:41:44,283302+00:00`` and ``2025-01-21T04:41:44.283+00:00``
  (``dmesg --time-format iso``, rsyslog RFC 3339, optionally followed by a host name),
- ``Nov 30 01:02:03 host kernel:`` (syslog / journalctl: local time without a year: needs
  ``tz`` and ``year``; a month going backwards rolls the year over).

A line that names ``NVRM: Xid`` or ``SXid`` but does not parse (no bus id, no numeric code) is
a record and is quarantined with the reason, as is a record whose timestamp is not a real
date (month 13, Feb 30), overflows, or lies outside 1990-2200 or after the time of reading.
A record that repeats an earlier one (same host, time, code, device and message: dmesg and
journalctl of one boot concatenated, a log rotated with overlap) is counted once; the repeat
is quarantined "exact duplicate of line N". A file with no NVRM / SXid line and no line
that starts like a kernel log's (a JSON document, an image, random text) is refused with an
:class:`~reliability.errors.IngestError`; a log without Xids reads no record. UTF-16 logs (with or without a
byte-order mark) are decoded. Every other line (kernel noise, RPC history tables, SXid detail
lines) is not a record; the notes say how many lines were skipped.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl

from reliability import schema, taxonomy
from reliability.errors import Hint, Hinted, IngestError
from reliability.ingest._bounds import (
    YEAR_MAX,
    YEAR_MIN,
    bounds_text,
    latest_time,
    time_out_of_bounds,
)
from reliability.ingest._common import (
    ReadResult,
    check_name_option,
    check_time_option,
    check_zone,
    not_this_format,
    quarantine_frame,
    read_lines,
)
from reliability.ingest._spec import (
    CLUSTER,
    NODE,
    TZ,
    FileHead,
    ReaderOption,
    ReaderSample,
    ReaderSpec,
)

__all__ = ["SPEC", "read_kernel_log"]

#: an Xid or SXid message, for the file-kind signature
_XID_LINE = re.compile(r"NVRM: Xid \(|SXid \(PCI")
#: what may come before an Xid message on a kernel log's line: a time stamp (dmesg's ISO form
#: has a decimal comma), a host, a tag; never a field separator or a quote (a CSV or JSON
#: field quoting an Xid message)
_LINE_PREFIX = re.compile(r"^(?:[^,|\"{]|,\d)*$")


def _is_kernel_log(head: FileHead) -> str | None:
    for line in head.lines:
        m = _XID_LINE.search(line)
        if m is not None and _LINE_PREFIX.match(line[: m.start()]) is not None:
            return "a kernel log with NVIDIA Xid messages"
    return None


SPEC = ReaderSpec(
    kind="kernel",
    summary="kernel logs (dmesg, journalctl -k, syslog) with NVIDIA Xid / SXid messages",
    options=(
        CLUSTER.required_(),
        NODE,
        TZ,
        ReaderOption("year", "year", "year of the first syslog line (syslog prints none)"),
        ReaderOption(
            "boot_time", "time", "boot time (ISO 8601 with offset) for dmesg [seconds] stamps"
        ),
    ),
    tables=("health_events",),
    signature=_is_kernel_log,
    rank=50,
    sample=ReaderSample(
        "kernel.log",
        "2025-01-21T04:41:44.283+00:00 n1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, "
        "GPU has fallen off the bus.\n",
        {"cluster": "c"},
    ),
)

#: ``dmesg -r`` (raw) starts each line with the syslog priority, ``<4>``; ``dmesg -x`` with
#: the decoded facility and level, ``kern  :warn  : ``
_PRIORITY = re.compile(r"^<[0-9]{1,3}>")
_DECODED = r"(?:[a-z]+\s*:\s*[a-z]+\s*:\s*)?"
_REL = re.compile(rf"^{_DECODED}\[\s*(?P<secs>[0-9]+\.[0-9]+)\]\s?(?P<rest>.*)$")
_CTIME = re.compile(
    rf"^{_DECODED}\[(?P<ts>[A-Z][a-z]{{2}} [A-Z][a-z]{{2}} +[0-9]{{1,2}} [0-9][0-9]:[0-9][0-9]:[0-9][0-9] [0-9]{{4}})\]"
    r"\s?(?P<rest>.*)$"
)
_ISO = re.compile(
    r"^(?:\w+\s*:\s*\w+\s*:\s*)?(?P<ts>[0-9]{4}-[0-9][0-9]-[0-9][0-9][T ][0-9][0-9]:[0-9][0-9]:[0-9][0-9](?:[.,][0-9]+)?(?:Z|[+-][0-9][0-9]:?[0-9][0-9])?)"
    r"\s+(?P<rest>.*)$"
)
_SYSLOG = re.compile(
    r"^(?P<ts>[A-Z][a-z]{2} +[0-9]{1,2} [0-9][0-9]:[0-9][0-9]:[0-9][0-9])\s+(?P<host>\S+)\s+(?P<rest>.*)$"
)
_HOSTED = re.compile(r"^(?P<host>[A-Za-z0-9][\w\-.]*)\s+kernel:\s*(?P<rest>.*)$")
_KERNEL_TAG = re.compile(r"^kernel:\s*(?:\[\s*[0-9]+\.[0-9]+\]\s*)?")
_XID = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<dev>[0-9A-Fa-f:.]+)\): (?P<code>[0-9]{1,6})(?![0-9]),?\s*(?P<msg>.*)$"
)
_SXID = re.compile(
    r"(?P<sw>nvidia-nvswitch[0-9]+): SXid \((?:PCI:)?(?P<dev>[0-9A-Fa-f:.]+)\): (?P<code>[0-9]{1,6}),\s*(?P<msg>.*)$"
)
_XID_MENTION = re.compile(r"NVRM: Xid\b")
_SXID_MENTION = re.compile(r"\bSXid\b")
_GPU_START = re.compile(r"NVRM: The NVIDIA GPU (?P<dev>[0-9A-Fa-f:.]+)")
_FALLEN = re.compile(r"NVRM: GPU (?P<dev>[0-9A-Fa-f:.]+): GPU has fallen off the bus")
_MONTHS = {
    m: i
    for i, m in enumerate(
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], 1
    )
}
_DEDUP_WINDOW = timedelta(seconds=60)
#: a line of a kernel log: one of the timestamp prefixes above, after a priority or decoded
#: facility and level (a log without any such line, nor an NVRM / SXid line, is not a log)
_STAMPED = (
    r"^(?:<[0-9]{1,3}>)?(?:[a-z]+\s*:\s*[a-z]+\s*:\s*)?(?:"
    r"\[\s*[0-9]+\.[0-9]+\]"
    r"|\[[A-Z][a-z]{2} [A-Z][a-z]{2} +[0-9]{1,2} [0-9][0-9]:[0-9][0-9]:[0-9][0-9] [0-9]{4}\]"
    r"|[0-9]{4}-[0-9][0-9]-[0-9][0-9][T ][0-9][0-9]:[0-9][0-9]:[0-9][0-9]\S*\s"
    rf"|(?:{'|'.join(_MONTHS)}) +[0-9]{{1,2}} [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\s+\S+\s)"
)
#: the forms read, for the refusal of a file that is not a kernel log
_EXPECTED = (
    "lines of dmesg, journalctl -k or syslog, each starting with a time such as "
    "`[ 1843.308145]`, `[Sun Feb 23 16:24:18 2025]`, `2025-01-21T04:41:44.283+00:00` or "
    "`Jan 21 04:41:44 host kernel:`, or NVIDIA `NVRM: Xid` / `SXid` lines"
)


def _bus_id(dev: str) -> str:
    """Normalise a PCI address to ``dddd:bb:dd`` (drop ``PCI:`` and the ``.function``)."""
    dev = dev.lower().removeprefix("pci:")
    parts = dev.split(":")
    if len(parts) == 2:
        parts = ["0000", *parts]
    last = parts[-1].split(".")[0]
    return ":".join([*parts[:-1], last])


class _LocalTimeError(Exception):
    """A local time that does not exist in the zone (the message says why)."""


class _Clock:
    """Turns the various prefixes into UTC datetimes."""

    def __init__(
        self, src: str, tz: str | None, year: int | None, boot_time: datetime | None
    ) -> None:
        self.src = src
        self.zone = check_zone(src, tz)
        self.year = year
        self.boot = boot_time
        self.last_month: int | None = None
        self.next_month: int | None = None  # month of the next syslog line (set by the caller)
        self.last_rel: timedelta | None = None  # seconds-since-boot of the last line, if any
        self.ambiguous = 0  # local times in the hour repeated when daylight saving ends
        self.no_boot: int | None = None  # first line stamped since boot, without boot_time

    def local(self, naive: datetime, line: int) -> datetime:
        if self.zone is None:
            raise IngestError(
                self.src,
                Hinted(
                    "local timestamps (dmesg -T, syslog) without a zone: ",
                    Hint("tz"),
                    " (the zone of the host that wrote the log, e.g. ",
                    Hint("tz", "UTC", action=False),
                    ")",
                ),
                line=line,
            )
        t = naive.replace(tzinfo=self.zone)  # fold=0: the earlier reading of a repeated hour
        back = t.astimezone(UTC).astimezone(self.zone).replace(tzinfo=None)
        if back != naive:
            raise _LocalTimeError(
                f"it does not exist in {self.zone.key} (a daylight-saving gap)"  # type: ignore[union-attr]
            )
        if naive.replace(fold=1, tzinfo=self.zone).utcoffset() != t.utcoffset():
            self.ambiguous += 1
        return t.astimezone(UTC)

    def parse(self, line: str, line_no: int) -> tuple[datetime | None, str | None, str, str | None]:
        """(time or None, host or None, message rest, why-no-time or None)."""
        self.last_rel = None
        m = _SYSLOG.match(line)
        if m and m.group("ts")[:3] in _MONTHS:
            if self.year is None:
                # (both options named at once when both are missing, not one run at a time)
                zone: tuple[str | Hint, ...] = (
                    (", and no zone: ", Hint("tz"), " (the zone of the host that wrote it)")
                    if self.zone is None
                    else ()
                )
                raise IngestError(
                    self.src,
                    Hinted("syslog timestamps have no year: ", Hint("year"), *zone),
                    line=line_no,
                )
            year = self._year_for(_MONTHS[m.group("ts")[:3]])
            rest = _KERNEL_TAG.sub("", m.group("rest"))
            try:
                naive = datetime.strptime(f"{year} {m.group('ts')}", "%Y %b %d %H:%M:%S")
            except ValueError:
                return None, m.group("host"), rest, self._bad_date(m.group("ts"))
            try:
                t = self.local(naive, line_no)
            except _LocalTimeError as exc:
                return None, m.group("host"), rest, self._not_here(m.group("ts"), exc)
            return self._checked(t, m.group("host"), rest, m.group("ts"))
        m = _ISO.match(line)
        if m:
            ts = m.group("ts").replace(",", ".").replace(" ", "T")
            rest, host = m.group("rest"), None
            h = _HOSTED.match(rest)
            if h:
                host, rest = h.group("host"), _KERNEL_TAG.sub("", "kernel: " + h.group("rest"))
            try:
                t = datetime.fromisoformat(ts)
            except (ValueError, OverflowError):
                return None, host, rest, self._bad_date(m.group("ts"))
            if t.tzinfo is None and self.zone is None:
                why = f"timestamp {m.group('ts')[:40]!r} has no UTC offset: pass tz= (--tz)"
                return None, host, rest, why
            try:
                t = t.astimezone(UTC) if t.tzinfo else self.local(t, line_no)
            except _LocalTimeError as exc:
                return None, host, rest, self._not_here(m.group("ts"), exc)
            except (ValueError, OverflowError):
                return None, host, rest, self._bad_date(m.group("ts"))
            return self._checked(t, host, rest, m.group("ts"))
        m = _CTIME.match(line)
        if m:
            try:
                naive = datetime.strptime(" ".join(m.group("ts").split()), "%a %b %d %H:%M:%S %Y")
            except ValueError:
                return None, None, m.group("rest"), self._bad_date(m.group("ts"))
            try:
                t = self.local(naive, line_no)
            except _LocalTimeError as exc:
                return None, None, m.group("rest"), self._not_here(m.group("ts"), exc)
            return self._checked(t, None, m.group("rest"), m.group("ts"))
        m = _REL.match(line)
        if m:
            secs = m.group("secs")
            try:
                self.last_rel = timedelta(seconds=float(secs))
            except OverflowError:
                return None, None, m.group("rest"), f"seconds since boot [{secs[:30]}] overflow"
            if self.boot is None:
                if self.no_boot is None:
                    self.no_boot = line_no
                return (
                    None,
                    None,
                    m.group("rest"),
                    ("dmesg timestamp is seconds since boot: pass boot_time= to place it in time"),
                )
            try:
                t = self.boot + self.last_rel
            except OverflowError:
                return (
                    None,
                    None,
                    m.group("rest"),
                    f"boot_time + [{secs[:30]}] s is {bounds_text(latest_time())}",
                )
            return self._checked(t, None, m.group("rest"), f"boot_time + {secs[:30]} s")
        return None, None, line.strip(), "no timestamp on the line"

    def _year_for(self, month: int) -> int:
        """Return the year of a syslog line (syslog prints none).

        The ``year=`` option, plus one each time the log crosses New Year, i.e. the month jumps back
        by six months or more.

        One line cannot move every later line to another year: a line whose month jumps
        away from its neighbours and straight back (a corrupt or out-of-order line) keeps
        the current year and does not count as a crossing.
        """
        assert self.year is not None
        ref, nxt = self.last_month, self.next_month
        if ref is None:
            self.last_month = month
            return self.year
        if month > ref + 1 and nxt is not None and nxt < month:
            return self.year  # isolated forward jump
        if month <= ref - 6:
            if nxt is not None and nxt > month + 1 and nxt >= ref - 1:
                return self.year  # isolated backward jump
            self.year += 1  # the log crossed New Year
        self.last_month = month
        return self.year

    @staticmethod
    def _not_here(ts: str, exc: Exception) -> str:
        return f"timestamp {ts[:40]!r} cannot be read: {exc}"

    @staticmethod
    def _bad_date(ts: str) -> str:
        return f"timestamp {ts[:40]!r} is not a valid date and time"

    @staticmethod
    def _checked(
        t: datetime, host: str | None, rest: str, shown: str
    ) -> tuple[datetime | None, str | None, str, str | None]:
        if (outside := time_out_of_bounds(t)) is not None:
            return None, host, rest, f"timestamp {shown[:40]!r} is {outside}"
        return t, host, rest, None


@SPEC.reads
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
    path : str or Path
        The log (plain or gzip).
    cluster : str
        Cluster name for every event.
    node : str or None
        Host name for lines that carry none (dmesg); default: the host in syslog lines, else the
        file name without extension (recorded in the notes).
    tz : str or None
        IANA zone of local timestamps (``dmesg -T``, syslog).
    year : int or None
        Year of the first syslog line (syslog prints none).
    boot_time : datetime or None
        UTC-aware boot time, for ``[seconds since boot]`` prefixes.

    Returns
    -------
    ReadResult
        The read, with ``health_events`` (source ``kernel_log``), classified with
        :mod:`reliability.taxonomy`.

    Raises
    ------
    IngestError
        If an option is invalid, a local or seconds-since-boot time needs an option that was
        not given, or the file is empty or is not a kernel log (no NVRM / SXid line and no line
        that starts with a kernel log's timestamp).
    """
    src = str(path)
    _check_options(src, cluster, node, year, boot_time)
    lines, notes = read_lines(path)
    if lines.height == 0:
        raise IngestError(src, "empty file")
    cand = lines.filter(pl.col("line").str.contains(r"NVRM|SXid"))
    if cand.height == 0 and not lines.get_column("line").str.contains(_STAMPED).any():
        raise not_this_format(src, lines, "kernel log line", _EXPECTED)
    skipped = lines.filter(pl.col("line").str.strip_chars() != "").height - cand.height
    clock = _Clock(src, tz, year, boot_time)
    scan = _Scan(clock, node, node or Path(src).name.split(".")[0])
    # (the raw line is kept for the quarantine; its priority prefix is not parsed)
    cand_rows = [(no, raw, _PRIORITY.sub("", raw, count=1)) for no, raw in cand.rows()]
    for (line_no, raw, line), next_month in zip(cand_rows, _next_months(cand_rows), strict=True):
        clock.next_month = next_month
        scan.line(line_no, raw, line)
    scan.close_group()
    duplicates = scan.merge_fallen()
    records = sorted([*scan.events, *scan.unparsed], key=lambda e: e["line_no"])  # type: ignore[arg-type, return-value]
    frame, q, repeats, used_default = _frame(records, cluster)
    if used_default:
        notes.append(
            Hinted(
                f"no host name in the log: node set to {scan.default_node!r} (",
                Hint("node"),
                ")",
            )
        )
    if skipped or scan.context:
        notes.append(
            f"{skipped + scan.context} line(s) are not Xid/SXid records (kernel messages, "
            "driver context, SXid detail lines) and were skipped"
        )
    if clock.ambiguous:
        notes.append(
            f"{clock.ambiguous} local time(s) fall in the hour repeated when daylight saving "
            f"time ended ({tz}): each read as the earlier instant (possibly an hour off)"
        )
    if duplicates:
        notes.append(f"{duplicates} 'fallen off the bus' line(s) repeat an Xid 79 already recorded")
    if repeats:
        notes.append(
            f"{repeats} record(s) repeat an earlier line exactly (same host, time and message: "
            "overlapping logs concatenated?): counted once, the repeats quarantined"
        )
    qf = quarantine_frame(src, *q)
    n_read = len(records)
    if clock.no_boot is not None and n_read == qf.height:
        # nothing placed in time and the stamps need the boot time: refused, as a missing
        # zone or year is (a log with some such lines among others quarantines just those)
        raise IngestError(
            src,
            Hinted("dmesg timestamps are seconds since boot: ", Hint("boot_time")),
            line=clock.no_boot,
        )
    return ReadResult(src, {"health_events": frame}, qf, n_read, n_read - qf.height, notes)


def _check_options(
    src: str, cluster: object, node: object, year: object, boot_time: object
) -> None:
    check_name_option(src, cluster, "cluster")
    check_name_option(src, node, "node")
    check_time_option(src, boot_time, "boot_time")
    if year is not None and (
        isinstance(year, bool) or not isinstance(year, int) or not YEAR_MIN <= year <= YEAR_MAX
    ):
        raise IngestError(
            src,
            Hinted(
                "option ",
                Hint("year", action=False),
                f" must be a year in {YEAR_MIN}-{YEAR_MAX}, got {year!r}",
            ),
        )


def _next_months(cand_rows: list[tuple[int, str, str]]) -> list[int | None]:
    """Return the month of the next syslog line after each line (None: no later one)."""
    months = [
        _MONTHS.get(m.group("ts")[:3]) if (m := _SYSLOG.match(line)) else None
        for _, _, line in cand_rows
    ]
    following: list[int | None] = [None] * len(months)
    upcoming: int | None = None
    for k in range(len(months) - 1, -1, -1):
        following[k] = upcoming
        if months[k] is not None:
            upcoming = months[k]
    return following


class _Scan:
    """The records of a kernel log's NVRM / SXid lines, one line at a time.

    ``events`` are Xid / SXid records, ``unparsed`` lines that name an Xid but do not parse,
    ``fallen`` "GPU has fallen off the bus" messages (merged with the Xid 79 they repeat by
    :meth:`merge_fallen`), ``context`` the driver's other lines.
    """

    def __init__(self, clock: _Clock, node: str | None, default_node: str) -> None:
        self.clock = clock
        self.node = node
        self.default_node = default_node
        self.events: list[dict[str, object]] = []
        self.unparsed: list[dict[str, object]] = []
        self.fallen: list[dict[str, object]] = []
        self.group: dict[str, object] | None = None  # a multi-line "The NVIDIA GPU ..." message
        self.context = 0

    def close_group(self) -> None:
        """End the multi-line message being read, if any."""
        if self.group is None:
            return
        if "fallen off the bus" in str(self.group["message"]):
            self.fallen.append(self.group)
        else:
            self.context += 1
        self.group = None

    def line(self, line_no: int, raw: str, line: str) -> None:
        """Read one line (``raw`` as in the file, ``line`` without its priority prefix)."""
        group = self.group
        if group is not None and line[:1].isspace() and line.strip().startswith("NVRM:"):
            group["message"] = f"{group['message']} {line.strip().removeprefix('NVRM:').strip()}"
            group["raw"] = f"{group['raw']}\n{raw}"
            return
        self.close_group()
        t, host, rest, why = self.clock.parse(line, line_no)
        base = {
            "line_no": line_no,
            "raw": raw,
            "time": t,
            "node": host if host is not None else self.node or self.default_node,
            "why": why,
            "tkey": t if t is not None else self.clock.last_rel,
            "defaulted": host is None and self.node is None,
        }
        if m := _XID.search(rest):
            c = taxonomy.classify_xid(m.group("code"))
            self.events.append(
                {
                    **base,
                    "code": m.group("code"),
                    "device": _bus_id(m.group("dev")),
                    "message": m.group("msg").strip(),
                    "cls": c,
                }
            )
        elif m := _SXID.search(rest):
            self._sxid(base, m)
        elif m := _GPU_START.search(rest):
            self.group = {
                **base,
                "device": _bus_id(m.group("dev")),
                "message": rest.split("NVRM:", 1)[1].strip(),
            }
        elif m := _FALLEN.search(rest):
            self.fallen.append(
                {
                    **base,
                    "device": _bus_id(m.group("dev")),
                    "message": rest.split("NVRM:", 1)[1].strip(),
                }
            )
        elif _XID_MENTION.search(rest) or _SXID_MENTION.search(rest):
            what = "NVRM: Xid" if _XID_MENTION.search(rest) else "SXid"
            self.unparsed.append(
                {
                    **base,
                    "why": f"line names '{what}' but has no '(PCI:<bus id>): <code>' that parses",
                    "unparsed": True,
                }
            )
        else:
            self.context += 1

    def _sxid(self, base: dict[str, object], m: re.Match[str]) -> None:
        msg = m.group("msg").strip()
        fatal = msg.lower().startswith("fatal")
        if not (fatal or msg.lower().startswith("non-fatal")):
            self.context += 1  # detail line of an SXid already recorded
            return
        c = taxonomy.classify_sxid(m.group("code"), fatal)
        self.events.append(
            {
                **base,
                "code": f"SXid{m.group('code')}",
                "device": f"{m.group('sw')}@{_bus_id(m.group('dev'))}",
                "message": msg,
                "cls": c,
            }
        )

    def merge_fallen(self) -> int:
        """Add each "fallen off the bus" message as an Xid 79, unless it repeats one.

        A repeat is an Xid 79 of the same host and device within a minute.

        Returns
        -------
        int
            The number of repeats (not added).
        """
        xid79 = [(e["node"], e["device"], e["tkey"]) for e in self.events if e["code"] == "79"]
        duplicates = 0
        for f in self.fallen:
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
            self.events.append(
                {**f, "code": "79", "message": f"(no Xid printed) {f['message']}", "cls": c}
            )
        return duplicates


def _frame(
    records: list[dict[str, object]], cluster: str
) -> tuple[pl.DataFrame, tuple[list[int], list[str], list[str]], int, bool]:
    """Build ``health_events`` from the records in line order.

    Returns the frame, the quarantine (lines without a time, unparsed, exact repeats), the
    number of repeats and whether a kept row has the default node.
    """
    q: tuple[list[int], list[str], list[str]] = ([], [], [])
    rows: list[dict[str, object]] = []
    used_default = False
    # the same record twice (dmesg and journalctl of one boot concatenated, a log rotated with
    # overlap): the same host, time, code, device and message is one event, counted once
    first_of: dict[tuple[object, ...], object] = {}
    repeats = 0
    for e in records:
        if e["time"] is None or e.get("unparsed"):
            q[0].append(e["line_no"])  # type: ignore[arg-type]
            q[1].append(e["raw"])  # type: ignore[arg-type]
            q[2].append(str(e["why"]))
            continue
        key = (e["node"], e["time"], e["code"], e["device"], e["message"])
        first = first_of.setdefault(key, e["line_no"])
        if first != e["line_no"]:
            repeats += 1
            q[0].append(e["line_no"])  # type: ignore[arg-type]
            q[1].append(e["raw"])  # type: ignore[arg-type]
            q[2].append(f"exact duplicate of line {first} (same host, time and message)")
            continue
        c: taxonomy.Classification = e["cls"]  # type: ignore[assignment]
        # the note on the default node is for the rows kept (a quarantined line lacks one too)
        used_default = used_default or bool(e.get("defaulted"))
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
    return frame, q, repeats, used_default
