"""Independent parses of the samples' records (issue 37, item 9): what each reader must keep.

For every record of a (mutated) sample, :func:`expected` parses its text with a strict
grammar of the form the generator writes, written here with the standard library (json,
csv, re, zoneinfo) and none of the readers' code, and decides:

- the output rows the record must give (``[(table, *values), ...]``, projected on the
  columns the parse determines: a classification table lookup is not a parse), or
- ``[]``: the text has the record's form but a value no reader may keep (a date that does not
  exist, a time outside 1990 - two days past now, an end before its start): no row, or
- ``None``: undecided (the text left the strict form; the reader may read or refuse it).

:func:`project` maps a reader's output rows to the same tuples. The property
(``test_hostile_readers.test_kept_rows_equal_an_independent_parse`` and ``python -m hostile``):
for every unit whose records are all decided, the reader's rows of that unit equal the union
of those records' expected rows.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from hostile.samples import Sample

Rows = list[tuple[object, ...]]
#: the accepted range of timestamps (the data contract's, as documented in the README)
EARLIEST = datetime(1990, 1, 1, tzinfo=UTC)


def _latest() -> datetime:
    return datetime.now(UTC) + timedelta(days=2)


def _in_range(t: datetime) -> bool:
    return EARLIEST <= t <= _latest()


def _iso(text: str, pattern: str, zone: ZoneInfo | None = None) -> datetime | bool | None:
    """Read a strict time.

    Returns the datetime, False if the text has the form but is no time in range, None if it
    does not have the form.
    """
    if not re.fullmatch(pattern, text):
        return None
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    if t.tzinfo is None:
        t = t.replace(tzinfo=zone or UTC)
    t = t.astimezone(UTC)
    return t if _in_range(t) else False


_ISO_Z = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
_ISO_OFFSET = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00"
_ISO_LOCAL = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"
_NAME = r"[A-Za-z0-9][\w.-]*"


# -- one record -> rows (None: undecided, []: must give no row) ------------------------------
def _health_jsonl(text: str, sample: Sample) -> Rows | None:
    if "\n" in text:  # (each line is a record of its own)
        return None
    obj = _json(text)
    keys = {"cluster", "node", "time", "source", "component", "code", "severity", "device",
            "message"}  # fmt: skip
    if not isinstance(obj, dict) or set(obj) != keys:
        return None
    if not all(isinstance(obj[k], str) for k in keys - {"device"}):
        return None
    if obj["device"] is not None and not isinstance(obj["device"], str):
        return None
    if not re.fullmatch(_NAME, obj["node"]) or obj["cluster"] != "c1":
        return None
    if obj["component"] != "gpu" or obj["severity"] != "warning" or not obj["code"]:
        return None
    if obj["source"] not in ("health_check", "ticket") or not obj["message"]:
        return None
    t = _iso(obj["time"], _ISO_OFFSET)
    if t is None:
        return None
    if t is False:
        return []
    return [("health_events", "c1", obj["node"], t, obj["source"], "gpu", obj["code"],
             "warning", obj["device"] or None, obj["message"])]  # fmt: skip


def _health_csv(text: str, sample: Sample) -> Rows | None:
    # a quoted field runs over lines only up to a line that is a whole record by itself (the
    # reader's documented rule, not RFC 4180's): such a line leaves the record undecided
    for line in text.split("\n")[1:]:
        if line.count(",") >= 8:
            return None
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error:
        return None
    if len(rows) != 1 or len(rows[0]) != 9:
        return None
    cluster, node, time, source, component, code, severity, device, message = rows[0]
    if cluster != "c1" or not re.fullmatch(_NAME, node) or not re.fullmatch(r"\w+", code):
        return None
    if component not in ("gpu", "dimm", "nic") or severity not in ("critical", "warning", "info"):
        return None
    if source not in ("health_check", "ticket") or not message:
        return None
    t = _iso(time, _ISO_Z)
    if t is None:
        return None
    if t is False:
        return []
    return [("health_events", "c1", node, t, source, component, code, severity,
             device or None, message)]  # fmt: skip


_XID = re.compile(
    rf"(?P<ts>{_ISO_LOCAL}\.\d{{6}}\+00:00) (?P<host>{_NAME}) kernel: NVRM: Xid "
    r"\(PCI:(?P<dev>0000:[0-9a-f]{2}:00)\): (?P<code>\d{1,6}), (?P<msg>[^\s].*)"
)
_SXID = re.compile(
    rf"(?P<ts>{_ISO_LOCAL}\.\d{{6}}\+00:00) (?P<host>{_NAME}) kernel: (?P<sw>nvidia-nvswitch\d): "
    r"SXid \(PCI:(?P<dev>0000:[0-9a-f]{2}:00)\.0\): (?P<code>\d{1,5}), (?P<msg>Fatal, .*)"
)


def _kernel(text: str, sample: Sample) -> Rows | None:
    if "\n" in text or "\r" in text:
        return None
    for pattern, sxid in ((_XID, False), (_SXID, True)):
        m = pattern.fullmatch(text)
        if m is None:
            continue
        t = _iso(m["ts"], _ISO_LOCAL + r"\.\d{6}\+00:00")
        if t is None:
            return None
        if t is False:
            return []
        code = f"SXid{m['code']}" if sxid else m["code"]
        device = f"{m['sw']}@{m['dev']}" if sxid else m["dev"]
        return [("health_events", m["host"], t, code, device, m["msg"].strip())]
    return None


_SYSLOG = re.compile(
    rf"(?P<mon>[A-Z][a-z]{{2}}) (?P<day>[ \d]\d) (?P<hms>\d\d:\d\d:\d\d) (?P<host>{_NAME}) "
    r"kernel: NVRM: Xid \(PCI:(?P<dev>0000:[0-9a-f]{2}:00)\): (?P<code>\d{1,6}), (?P<msg>[^\s].*)"
)
_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def _kernel_syslog(text: str, sample: Sample) -> Rows | None:
    """Syslog lines carry no year (the reader infers it across New Year): the month, day and
    time of day are compared, not the year."""
    m = _SYSLOG.fullmatch(text) if "\n" not in text else None
    if m is None or m["mon"] not in _MONTHS:
        return None
    month, day = _MONTHS.index(m["mon"]) + 1, int(m["day"])
    try:  # a day that no year has (Feb 30); Feb 29 depends on the year: undecided
        datetime(2024, month, day)
    except ValueError:
        return []
    if (month, day) == (2, 29):
        return None
    hms = tuple(int(x) for x in m["hms"].split(":"))
    if hms[0] > 23 or hms[1] > 59 or hms[2] > 59:
        return []
    return [("health_events", m["host"], (month, day, *hms), m["code"], m["dev"], m["msg"].strip())]


_STATES = {"DRAIN": "DRAIN", "DOWN": "DOWN", "DOWN*": "DOWN", "FAIL": "FAIL"}


def _events(text: str, sample: Sample) -> Rows | None:
    parts = text.split("|")
    if "\n" in text or len(parts) < 7:
        return None
    cluster, node, start, end, state = parts[:5]
    reason, user = "|".join(parts[5:-1]), parts[-1]
    if cluster != "c1" or not re.fullmatch(r"[a-z]+-[a-z]{3}\d{3}", node) or user != "root(0)":
        return None
    if state not in _STATES or not re.fullmatch(r"[\w <>:#|]+", reason):
        return None
    t0 = _iso(start, _ISO_LOCAL)
    t1 = None if end == "Unknown" else _iso(end, _ISO_LOCAL)
    if t0 is None or (end != "Unknown" and t1 is None):
        return None
    if t0 is False or t1 is False or (t1 is not None and t1 < t0):
        return []
    return [("node_states", "c1", node, _STATES[state], t0, t1, reason, "root")]


_SC_STATES = {"IDLE": None, "MIXED": None, "IDLE+DRAIN": "DRAIN", "DOWN*+DRAIN": "DOWN",
              "ALLOCATED+DRAIN": "DRAIN"}  # fmt: skip


def _scontrol(text: str, sample: Sample) -> Rows | None:
    lines = text.split("\n")
    if len(lines) not in (4, 5) or lines[1] != "   CPUAlloc=0 CPUTot=8":
        return None
    m0 = re.fullmatch(rf"NodeName=({_NAME}) Arch=x86_64 CoresPerSocket=4", lines[0])
    m2 = re.fullmatch(r"   State=(\S+) ThreadsPerCore=1", lines[2])
    if m0 is None or m2 is None or lines[3] != "   Partitions=gpu" or m2[1] not in _SC_STATES:
        return None
    state = _SC_STATES[m2[1]]
    if len(lines) == 4:
        return []  # healthy: no row; out of service without a reason time: quarantined
    m4 = re.fullmatch(rf"   Reason=([\w<>: ]*[\w>]) \[root@({_ISO_LOCAL})\]", lines[4])
    if m4 is None:
        return None
    t = _iso(m4[2], _ISO_LOCAL)
    if t is None:
        return None
    if t is False:
        return []
    return [] if state is None else [("node_states", "c1", m0[1], state, t, None, m4[1], "root")]


def _sinfo(text: str, sample: Sample) -> Rows | None:
    m = re.fullmatch(rf"([\w<>: ]*[\w<>:]) +root +({_ISO_LOCAL}) ({_NAME})", text)
    if m is None or not re.fullmatch(r"[a-z]+-[a-z]{3}\d{3}", m[3]):
        return None
    t = _iso(m[2], _ISO_LOCAL)
    if t is None:
        return None
    if t is False:
        return []
    return [("node_states", "c1", m[3], "DRAIN", t, None, m[1].strip(), "root")]


def _pod(text: str, sample: Sample) -> Rows | None:
    """Machine events (inventory, healthd); a job's rows depend on its other lines: undecided."""
    if "\n" in text:  # (each line is a record of its own)
        return None
    obj = _json(text)
    if not isinstance(obj, dict) or not all(isinstance(v, str) for v in obj.values()):
        return None
    base = {"time", "event", "component_type", "component_id"}
    if obj.get("component_type") != "machine" or not re.fullmatch(
        _NAME, obj.get("component_id", "")
    ):
        return None
    if obj.get("event") == "inventory" and set(obj) == base:
        kind = "inventory"
    elif obj.get("event") == "healthd" and set(obj) == base | {"detail"}:
        kind = "healthd"
        if obj["detail"] != "machine_unhealthy":
            return None
    else:
        return None
    t = _iso(obj["time"], _ISO_OFFSET)
    if t is None:
        return None
    if t is False:
        return []
    cid = obj["component_id"]
    if kind == "inventory":
        return [("inventory", "pod1", "machine", cid, t, None)]
    return [("health_events", "pod1", cid, t, "healthd", "machine", "machine_unhealthy",
             "critical", None, "machine_unhealthy")]  # fmt: skip


_DENVER = ZoneInfo("America/Denver")


def _lanl_time(text: str) -> datetime | bool | None:
    m = re.fullmatch(r"(\d{1,2})/(\d{1,2})/(\d{4}) (\d{1,2}):(\d\d)", text)
    if m is None:
        return None
    try:
        naive = datetime(int(m[3]), int(m[1]), int(m[2]), int(m[4]), int(m[5]))
    except ValueError:
        return False
    local = naive.replace(tzinfo=_DENVER)
    back = local.astimezone(UTC).astimezone(_DENVER).replace(tzinfo=None)
    if back != naive or local.replace(fold=1).utcoffset() != local.utcoffset():
        return None  # a daylight-saving gap or an ambiguous hour: the reader's choice
    t = local.astimezone(UTC)
    return t if _in_range(t) else False


def _lanl(text: str, sample: Sample) -> Rows | None:
    """The failure row (the inventory fills nodes without records: not per record)."""
    f = text.split(",")
    if "\n" in text or len(f) != 26 or not re.fullmatch(r"[1-9]\d*", f[6]):
        return None
    fixed = [*f[:5], *f[7:16], *f[19:]]
    if fixed != ["7", "smp", "128", "1024", "8", "2-Jan", "2-Mar", "current", "part", "8", "1",
                 "1", "0", "compute", "", "Memory Dimm", "", "", "", "", "No"]:  # fmt: skip
        return None
    if not re.fullmatch(r"\d+", f[5]) or not re.fullmatch(r"\d+", f[18]):
        return None
    a, b = _lanl_time(f[16]), _lanl_time(f[17])
    if a is None or b is None:
        return None
    if a is False or b is False or b < a:
        return []
    return [("component_failures", "lanl-7", "node", f[6], a, b)]


_TRES = r"billing=8,cpu=8,(?:gres/gpu=([^,|]*),)?mem=64G,node=1"
_SACCT_STATES = ("COMPLETED", "FAILED", "NODE_FAIL", "TIMEOUT")


def _sacct(text: str, sample: Sample) -> Rows | None:
    """The allocation line gives the jobs row and the .batch line the step's. A GPU count in
    AllocTRES that is not a plain integer (gres/gpu=-1, =8K) is no count: no jobs row (Slurm
    prints gres/gpu counts as integers: slurmdb_make_tres_string_from_simple)."""
    lines = text.split("\n")
    if len(lines) != 2:
        return None
    ts = rf"({_ISO_LOCAL})\|({_ISO_LOCAL})\|({_ISO_LOCAL})"
    a = re.fullmatch(rf"(\d{{1,7}})\|\1\|(job \d+, name)\|(u[a-z]{{3}}\d{{3}})\|(acct\d)\|gpu\|"
                     rf"(\w+)\|0:0\|{ts}\|1\|{_TRES}\|(node-[a-z]{{3}}\d{{3}})\|c1", lines[0])  # fmt: skip
    if a is None:
        return None
    b = re.fullmatch(rf"{a[1]}\.batch\|{a[1]}\.batch\|batch\|\|{a[4]}\|\|(\w+)\|0:0\|{ts}\|1\|"
                     rf"{_TRES}\|{a[10]}\|c1", lines[1])  # fmt: skip
    if b is None or a[5] not in _SACCT_STATES or b[1] not in _SACCT_STATES:
        return None
    times = [_iso(x, _ISO_LOCAL) for x in (a[6], a[7], a[8], b[2], b[3], b[4])]
    if not all(isinstance(t, datetime) for t in times):
        return None  # (the reader quarantines that line; the record's other line may stay)
    sub, st, en, _, s_st, s_en = times
    if not sub <= st <= en or s_st > s_en:  # type: ignore[operator]  # a resize, an impossible order
        return None
    job, node = a[1], (a[10],)
    step = ("job_steps", job, "batch", "batch", b[1], s_st, s_en, node)
    gpus = a[9] or "0"
    if not re.fullmatch(r"\d+", gpus):
        return [step]  # no jobs row: the allocation is quarantined
    if int(gpus) > 10_000_000:
        return None
    return [("jobs", job, a[2], a[3], a[4], "gpu", a[5], 0, 0, sub, st, en, 1, int(gpus), node),
            step]  # fmt: skip


#: reader sample name -> record oracle
RECORD: dict[str, Callable[[str, Sample], Rows | None]] = {
    "health_jsonl": _health_jsonl, "health_csv": _health_csv, "kernel": _kernel,
    "kernel_syslog": _kernel_syslog, "events": _events, "scontrol": _scontrol, "sinfo": _sinfo,
    "pod": _pod, "lanl": _lanl, "sacct": _sacct,
}  # fmt: skip


# -- DCGM: events come from a series' readings across scrapes, so the file is parsed whole ---
_SCRAPE = re.compile(rf"# scraped_at ({_ISO_LOCAL}\+00:00)")
_DCGM = re.compile(
    r'(DCGM_FI_DEV_(?:ECC_DBE_VOL_TOTAL|XID_ERRORS|GPU_TEMP))\{gpu="0",UUID="GPU-([\w-]+)",'
    r'Hostname="([\w-]+)"\} (\d{1,18})'
)
#: DCGM's blank sentinels (not readings): int32 0x7ffffff0-0x7fffffff, and from 2**47 on
_BLANK_INT32, _BLANK_FP64 = (0x7FFFFFF0, 0x7FFFFFFF), 2**47


def dcgm_expected(text: str) -> dict[str, Rows] | None:
    """Events per host of a DCGM scrape file: a double-bit ECC counter that rose since the
    host's previous reading (a drop is a reset: the new value is the rise), and a last-Xid
    gauge that turned to a non-zero code. Hosts named in a line outside the strict form are
    left out (undecided); None if a scrape time is not strict."""
    series: dict[tuple[str, str], int] = {}
    rows: dict[str, Rows] = defaultdict(list)
    undecided: set[str] = set()
    lines = text.split("\n")
    when: datetime | None = None
    scrape = 0
    seen: set[tuple[int, str, str]] = set()
    for line in lines:
        if not line.strip() or line.startswith("# TYPE "):
            continue
        m = _SCRAPE.fullmatch(line)
        if m is not None:
            t = _iso(m[1], _ISO_OFFSET)
            if not isinstance(t, datetime):
                return None
            when, scrape = t, scrape + 1
            continue
        m = _DCGM.fullmatch(line)
        if m is None or when is None or m[2] != m[3]:
            undecided.update(re.findall(r"[\w-]+", line))
            continue
        name, host, value = m[1], m[3], int(m[4])
        rows.setdefault(host, [])
        if (scrape, host, name) in seen:  # the series twice in one scrape: both quarantined
            undecided.add(host)
        seen.add((scrape, host, name))
        blank = _BLANK_INT32[0] <= value <= _BLANK_INT32[1] or value >= _BLANK_FP64
        if name.endswith("GPU_TEMP") or blank:
            continue
        prev = series.get((host, name))
        series[(host, name)] = value
        if name.endswith("ECC_DBE_VOL_TOTAL"):
            rise = value - prev if prev is not None and value >= prev else value
            if prev is not None and rise > 0:
                rows[host].append(("health_events", host, when, "ECC_DBE_VOL_TOTAL"))
        elif value > 65535:
            undecided.add(host)  # not an Xid code: quarantined (the series keeps its value)
        elif value and value != prev:
            rows[host].append(("health_events", host, when, str(value)))
    return {h: sorted(r, key=_order) for h, r in rows.items() if h not in undecided}


def expected(sample: Sample, lines: list[str], edited: int | None = None,
             new: str | None = None) -> dict[str, Rows]:  # fmt: skip
    """Expected rows per unit of a sample whose record ``edited`` now reads ``new``.

    Only units whose records are all decided are in the result.
    """
    if sample.reader == "dcgm":
        return dcgm_expected(_decoded("\n".join(lines))) or {}
    oracle = RECORD[sample.reader]
    out: dict[str, Rows] = defaultdict(list)
    undecided: set[str] = set()
    for k, rec in enumerate(sample.records):
        text = new if k == edited else "\n".join(sample.lines[rec.start : rec.stop])
        rows = oracle(_decoded(text), sample) if text is not None else None
        if rows is None:
            undecided.add(rec.unit)
            if k == edited and new is not None:  # its rows may be any unit it names
                undecided.update(r.unit for r in sample.records if r.unit in new)
            continue
        out.setdefault(rec.unit, [])
        for row in rows:
            out[_unit(sample.reader, row)].append(row)
    return {u: sorted(r, key=_order) for u, r in out.items() if u not in undecided}


def _json(text: str) -> object:
    """A JSON value with its lone surrogates (``\\ud800``: not text) as U+FFFD, as the readers
    document; None if the text is not JSON."""
    try:
        obj = json.loads(text)
    except ValueError:
        return None

    def text_of(v: object) -> object:
        if isinstance(v, str):
            return v.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        if isinstance(v, dict):
            return {text_of(k): text_of(x) for k, x in v.items()}
        return [text_of(x) for x in v] if isinstance(v, list) else v

    return text_of(obj)


def _decoded(text: str) -> str:
    """The text as the readers document they decode it: a NUL byte is U+FFFD."""
    return text.replace("\x00", "\ufffd")


def _order(row: tuple[object, ...]) -> tuple[str, ...]:
    """Sort key of a row (times by instant, whatever their tzinfo object)."""
    return tuple(x.astimezone(UTC).isoformat() if isinstance(x, datetime) else repr(x) for x in row)


def _unit(reader: str, row: tuple[object, ...]) -> str:
    table = row[0]
    if reader == "sacct":
        return str(row[1])
    if reader in ("pod",) and table == "inventory":
        return str(row[3])
    if reader == "lanl":
        return str(row[3])
    return str(row[2] if reader not in ("kernel", "kernel_syslog") and reader != "dcgm" else row[1])


def project(reader: str, table: str, row: dict[str, object]) -> tuple[object, ...] | None:
    """A reader's output row as :func:`expected` writes it (None: a table it does not decide)."""

    def s(v: object) -> object:
        return None if v is None else str(v)

    if reader in ("health_jsonl", "health_csv") and table == "health_events":
        return (table, row["cluster"], row["node"], row["time"], row["source"], s(row["component"]),
                row["code"], s(row["severity"]), row["device"], row["message"])  # fmt: skip
    if reader == "kernel" and table == "health_events":
        return (table, row["node"], row["time"], row["code"], row["device"], row["message"])
    if reader == "kernel_syslog" and table == "health_events":
        t = row["time"]
        assert isinstance(t, datetime)
        return (table, row["node"], (t.month, t.day, t.hour, t.minute, t.second), row["code"],
                row["device"], row["message"])  # fmt: skip
    if reader == "dcgm" and table == "health_events":
        return (table, row["node"], row["time"], row["code"])
    if reader in ("events", "scontrol", "sinfo") and table == "node_states":
        return (table, row["cluster"], row["node"], s(row["state"]), row["start"], row["end"],
                row["reason"], row["user"])  # fmt: skip
    if reader == "pod" and table == "inventory":
        return (table, row["cluster"], s(row["component_type"]), row["component_id"],
                row["in_service"], row["out_of_service"])  # fmt: skip
    if reader == "pod" and table == "health_events":
        return (table, row["cluster"], row["node"], row["time"], row["source"], s(row["component"]),
                row["code"], s(row["severity"]), row["device"], row["message"])  # fmt: skip
    if reader == "lanl" and table == "component_failures":
        return (table, row["cluster"], s(row["component_type"]), row["component_id"],
                row["failed_at"], row["repaired_at"])  # fmt: skip
    if reader == "sacct" and table == "jobs":
        return (table, row["job_id"], row["name"], row["user"], row["account"], row["partition"],
                s(row["state"]), row["exit_code"], row["exit_signal"], row["submit_time"],
                row["start_time"], row["end_time"], row["n_nodes"], row["n_accelerators"],
                tuple(row["nodes"]))  # type: ignore[arg-type]  # fmt: skip
    if reader == "sacct" and table == "job_steps":
        return (table, row["job_id"], row["step"], row["name"], s(row["state"]), row["start_time"],
                row["end_time"], tuple(row["nodes"]))  # type: ignore[arg-type]  # fmt: skip
    return None


def kept(reader: str, tables: dict[str, object]) -> dict[str, Rows]:
    """The reader's rows per unit, projected (tables the oracles do not decide left out)."""
    out: dict[str, Rows] = defaultdict(list)
    for table, frame in tables.items():
        for row in frame.iter_rows(named=True):  # type: ignore[attr-defined]
            p = project(reader, table, row)
            if p is not None:
                out[_unit(reader, p)].append(p)
    return {u: sorted(r, key=_order) for u, r in out.items()}
