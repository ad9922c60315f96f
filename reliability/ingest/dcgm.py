"""Reader of DCGM exporter scrapes (Prometheus text format) -> ``health_events``.

A file holds one or more scrapes of one or more hosts. Events are emitted for

- error counters that increased between two scrapes of the same series (double-bit ECC,
  row-remap failures, NVLink CRC / recovery errors, PCIe replays; see
  :data:`reliability.taxonomy.DCGM_FIELDS`); a counter that went down was reset and its new
  value counts as the increase; the first scrape of a series is only a baseline. Each series
  is read in time order, not file order (scrape files concatenated or merged out of order
  are one history; the notes say when a series was out of order);
- ``DCGM_FI_DEV_XID_ERRORS``, a gauge holding the *last* Xid seen (not a count): an event when
  it changes to a non-zero code, and at its first observation if non-zero (the Xid may predate
  the scrape: the message says so). Newer exporters put the code in an ``err_code`` label;
- ``DCGM_EXP_XID_ERRORS_COUNT`` (label ``xid``): an event when the windowed count rises.

Values that are not readings never make events (issue 16, "phantom events"):

- a non-finite value (``NaN``, ``+Inf``, ``-Inf``) is quarantined with the reason;
- a negative error counter or Xid value is quarantined (a counter never goes below zero; a
  reset shows as a smaller non-negative value);
- a series that appears twice in one scrape (same host, metric, labels and time) is
  quarantined: repeats with the same value as "exact duplicate of line N", and every copy
  when the values differ (which one is real is unknown); the series keeps its earlier
  baseline;
- a sample or ``# scraped_at`` time that cannot be read or lies outside 1990-2200 or after the time of reading
  quarantines the samples it times.

OpenMetrics (a file with a ``# EOF`` line or exemplars): an exemplar after the value
(``metric{...} 3 # {trace_id="abc"} 1.0 1600000000.000``) is not part of the sample and is
ignored, and a sample timestamp is in seconds; in the Prometheus text format it is in
milliseconds.

Scrape times: the sample's own timestamp if present; else the last ``# scraped_at <ISO-8601>``
comment line above it (``{ echo "# scraped_at $(date -Is)"; curl -s host:9400/metrics; }``
appends one); else ``scraped_at=``; else the file's modification time (noted).
DCGM's blank sentinels (e.g. 9223372036854775794) are "no value", never readings.
Samples are parsed with ``prometheus_client``'s parser, one line at a time, so that a bad
line is quarantined with its line number instead of failing the file. A file without one
sample line of a ``DCGM_`` metric (a JSON document, an image, another exporter's or tool's
output) is refused with an :class:`~reliability.errors.IngestError`, not read as empty.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
from prometheus_client.parser import text_string_to_metric_families

from reliability import schema, taxonomy
from reliability.errors import IngestError
from reliability.ingest._bounds import bounds_text, latest_time, time_out_of_bounds
from reliability.ingest._common import (
    ReadResult,
    check_name_option,
    check_time_option,
    not_this_format,
    quarantine_frame,
    read_lines,
)
from reliability.ingest._spec import CLUSTER, NODE, FileHead, ReaderOption, ReaderSample, ReaderSpec

__all__ = ["NODE_LABELS", "SPEC", "is_blank", "read_dcgm"]

#: Labels that name the host, in order of preference.
NODE_LABELS = ("Hostname", "hostname", "node", "kubernetes_node", "nodename", "instance")
_SCRAPED_AT = re.compile(r"^#\s*scraped_at[:=\s]\s*(?P<ts>\S+)\s*$")
# DCGM blank values: int32 0x7ffffff0.., int64 0x7ffffffffffffff0.., FP64 >= 2**47 (DCGM_FP64_BLANK)
_INT32_BLANK = (0x7FFFFFF0, 0x7FFFFFFF)
_INT64_BLANK = 0x7FFFFFFFFFFFFFF0
_FP64_BLANK = 140737488355328.0

#: the form the reader reads, for the refusal of a file with no DCGM sample line
_EXPECTED = (
    'Prometheus text from dcgm-exporter, e.g. `DCGM_FI_DEV_XID_ERRORS{gpu="0",Hostname="node017"} '
    "0 [timestamp]`"
)
#: largest value read as an Xid code from the last-Xid gauge
_MAX_XID = 65535
#: how a DCGM exporter's lines start, for the file-kind signature
_DCGM_LINE = ("DCGM_FI_", "DCGM_EXP_", "# HELP DCGM_", "# TYPE DCGM_")


def _is_scrape(head: FileHead) -> str | None:
    if any(ln.startswith(_DCGM_LINE) for ln in head.lines):
        return "a DCGM exporter scrape (Prometheus text)"
    return None


SPEC = ReaderSpec(
    kind="dcgm",
    summary="DCGM exporter scrapes (Prometheus text)",
    options=(
        CLUSTER.required_(),
        NODE,
        ReaderOption("scraped_at", "time", "time of a scrape without time stamps", cli=False),
    ),
    tables=("health_events",),
    signature=_is_scrape,
    rank=40,
    sample=ReaderSample(
        "dcgm.prom",
        "# scraped_at 2025-01-01T00:00:00Z\n"
        "# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.\n"
        "# TYPE DCGM_FI_DEV_XID_ERRORS gauge\n"
        'DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-1",Hostname="n1"} 79\n',
        {"cluster": "c"},
    ),
)


def is_blank(value: float) -> bool:
    """Tell whether a DCGM value is one of its "blank" sentinels.

    The sentinels mean not supported / not found / not permissioned. Non-finite values (NaN,
    +Inf, -Inf) are not sentinels: the reader quarantines them.

    Parameters
    ----------
    value : float
        A field value as exported by DCGM.

    Returns
    -------
    bool
        True for a blank sentinel (int32, int64 or fp64 blank range).
    """
    if not math.isfinite(value):
        return False
    return (
        (_INT32_BLANK[0] <= value <= _INT32_BLANK[1])
        or value >= _FP64_BLANK
        or value >= _INT64_BLANK
    )


def _node(labels: dict[str, str], default: str) -> tuple[str, bool]:
    for key in NODE_LABELS:
        v = labels.get(key)
        if v:
            return (v.rsplit(":", 1)[0] if key == "instance" else v), False
    return default, True


def _device(labels: dict[str, str]) -> str | None:
    gpu = labels.get("gpu")
    if gpu is None:
        return labels.get("UUID")
    dev = f"gpu{gpu}"
    gi = labels.get("GPU_I_ID")
    return f"{dev}/gi{gi}" if gi not in (None, "") else dev


#: a sample's name and labels (quoted label values may hold '#', '}' and spaces)
_NAME_LABELS = re.compile(r'[^\s{]*(?:\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?')


def _split_sample(text: str) -> tuple[str, list[str], bool]:
    """Split a sample line at the end of its name and labels.

    Returns the name and labels, the tokens after them (value, timestamp) and whether an
    OpenMetrics exemplar (``# {...} value [timestamp]``) follows them (it is dropped).
    """
    m = _NAME_LABELS.match(text)
    end = m.end() if m is not None else 0
    rest, exemplar, _ = text[end:].partition("#")
    return text[:end], rest.split(), bool(exemplar)


def _is_openmetrics(lines: pl.DataFrame) -> bool:
    """Tell an OpenMetrics exposition (``# EOF``, or an exemplar on a sample line)."""
    text = lines.get_column("line").str.strip_chars()
    if (text == "# EOF").any():
        return True
    maybe = text.filter(~text.str.starts_with("#") & text.str.contains("#", literal=True))
    return any(_split_sample(t)[2] for t in maybe.to_list())


@dataclass
class _Sample:
    line_no: int
    line: str
    name: str
    labels: dict[str, str]
    value: float
    when: datetime | None
    host: str
    key: tuple[object, ...]


def _parse_time(text: str) -> tuple[datetime | None, str | None]:
    """Parse a ``# scraped_at`` value into (UTC time, None) or (None, why)."""
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None, f"'# scraped_at {text[:40]}' is not an ISO-8601 time"
    if t.tzinfo is None or t.utcoffset() is None:
        return None, f"'# scraped_at {text[:40]}' has no UTC offset"
    try:
        t = t.astimezone(UTC)
    except (OverflowError, ValueError):
        return None, f"'# scraped_at {text[:40]}' is {bounds_text(latest_time())}"
    if (outside := time_out_of_bounds(t)) is not None:
        return None, f"'# scraped_at {text[:40]}' is {outside}"
    return t, None


def _sample_time(ts: object) -> tuple[datetime | None, str | None]:
    """Read a sample timestamp [s since the epoch] into (UTC time, None) or (None, why)."""
    try:
        secs = float(ts)  # type: ignore[arg-type]
        if not math.isfinite(secs):
            raise ValueError(ts)
        t = datetime.fromtimestamp(secs, tz=UTC)
    except (OverflowError, ValueError, OSError, TypeError):
        return None, f"sample timestamp {ts!r} is {bounds_text(latest_time())}"
    if (outside := time_out_of_bounds(t)) is not None:
        return None, f"sample timestamp {ts!r} is {outside}"
    return t, None


@SPEC.reads
def read_dcgm(
    path: str | Path,
    *,
    cluster: str,
    node: str | None = None,
    scraped_at: datetime | None = None,
) -> ReadResult:
    """Read DCGM exporter scrapes and emit health events for error counters and Xids.

    Parameters
    ----------
    path : str or Path
        Prometheus text (one or more scrapes), plain or gzip.
    cluster : str
        Cluster name for every event.
    node : str or None
        Host for samples without a ``Hostname`` (or similar) label; default file name stem.
    scraped_at : datetime or None
        UTC-aware time of a single-scrape file without timestamps.

    Returns
    -------
    ReadResult
        The read, with ``health_events`` (source ``dcgm``). Rows read are sample lines (comments
        and ``# HELP``/``# TYPE`` are not rows); a sample is kept when it is a reading (it parses,
        is finite, is not a duplicate; a counter or Xid is not negative), whether or not it produces
        an event.

    Raises
    ------
    IngestError
        If an option is invalid, or the file is empty or holds no sample line of a ``DCGM_``
        metric (it is not a DCGM scrape).
    """
    src = str(path)
    check_name_option(src, cluster, "cluster")
    check_name_option(src, node, "node")
    check_time_option(src, scraped_at, "scraped_at")
    lines, notes = read_lines(path)
    if lines.height == 0:
        raise IngestError(src, "empty file")
    if not lines.get_column("line").str.strip_chars_start().str.starts_with("DCGM_").any():
        raise not_this_format(src, lines, "DCGM sample line", _EXPECTED)
    scan = _Scan(src, node or Path(src).name.split(".")[0], scraped_at, _is_openmetrics(lines))
    for line_no, line in lines.iter_rows():
        scan.line(line_no, line)
    kept = _drop_repeats(scan.samples, scan.bad)
    rows, baselines, unordered = _events(kept, cluster)
    frame = pl.DataFrame(rows, schema=schema.TABLES["health_events"].schema, orient="row")
    if scan.blanks:
        notes.append(f"{scan.blanks} DCGM blank sentinel value(s) (no reading) ignored")
    if baselines:
        notes.append(f"{baselines} counter series seen for the first time: baseline only, no event")
    if unordered:
        notes.append(
            f"{unordered} series have samples out of time order in the file (scrapes "
            "concatenated or merged?): differenced in time order"
        )
    if scan.used_mtime:
        notes.append("no sample timestamps or '# scraped_at' lines: file modification time used")
    if scan.used_default_node:
        notes.append(f"samples without a Hostname label assigned to node {scan.default_node!r}")
    qf = quarantine_frame(src, *scan.q).sort("line_no")
    n_read = scan.n_read
    return ReadResult(src, {"health_events": frame}, qf, n_read, n_read - qf.height, notes)


class _Scan:
    """The samples of a scrape file, read one line at a time.

    Each sample line becomes a :class:`_Sample`, or is quarantined with the reason (``q``), or
    is skipped (blank sentinels, other metrics); comments set the scrape time.
    """

    def __init__(
        self, src: str, default_node: str, scraped_at: datetime | None, openmetrics: bool
    ) -> None:
        self.src = src
        self.default_node = default_node
        self.openmetrics = openmetrics
        self.current: datetime | None = scraped_at
        self.current_bad: str | None = None  # why the current scrape has no usable time
        self.mtime: datetime | None = None
        self.used_mtime = self.used_default_node = False
        self.blanks = 0
        self.n_read = 0
        self.samples: list[_Sample] = []
        self.q: tuple[list[int], list[str], list[str]] = ([], [], [])

    def bad(self, line_no: int, line: str, reason: str) -> None:
        """Quarantine a line."""
        self.q[0].append(line_no)
        self.q[1].append(line)
        self.q[2].append(reason)

    def line(self, line_no: int, line: str) -> None:
        """Read one physical line."""
        text = line.strip()
        if not text:
            return
        if text.startswith("#"):
            m = _SCRAPED_AT.match(text)
            if m:
                self.current, why = _parse_time(m.group("ts"))
                self.current_bad = None if why is None else f"{why} (line {line_no})"
            return
        self.n_read += 1
        parsed = _parse_sample(text, self.openmetrics)
        if isinstance(parsed, str):
            self.bad(line_no, line, parsed)
            return
        sample, value, seconds = parsed
        if not math.isfinite(value):
            self.bad(line_no, line, f"value {sample.value} is not a reading (non-finite)")
            return
        if is_blank(value):
            self.blanks += 1
            return
        if sample.name not in taxonomy.DCGM_FIELDS:
            return
        when, why = self._when(seconds, sample.timestamp)
        labels = dict(sample.labels)
        host, defaulted = _node(labels, self.default_node)
        why = why or _bad_labels(labels, host)
        if why is None:
            self.used_default_node |= defaulted
            why = _bad_value(sample.name, labels, value)
        if why is not None:
            self.bad(line_no, line, why)
            return
        key = (host, sample.name, tuple(sorted(labels.items())))
        self.samples.append(_Sample(line_no, line, sample.name, labels, value, when, host, key))

    def _when(self, seconds: str | None, stamp: object) -> tuple[datetime | None, str | None]:
        """Return the time of a sample: its own, else its scrape's, else the file's mtime."""
        if seconds is not None:
            return _sample_time(seconds)
        if stamp is not None:
            return _sample_time(stamp)
        if self.current_bad is not None:
            return None, f"scrape time unknown: {self.current_bad}"
        if self.current is not None:
            return self.current, None
        if self.mtime is None:
            self.mtime = datetime.fromtimestamp(Path(self.src).stat().st_mtime, tz=UTC)
        self.used_mtime = True
        return self.mtime, None


def _parse_sample(text: str, openmetrics: bool) -> tuple[Any, float, str | None] | str:
    """Parse a sample line.

    Returns (the parser's sample, its value, an OpenMetrics timestamp [s]) or why the line is
    not a sample.
    """
    seconds: str | None = None  # an OpenMetrics timestamp (the parser's are ms)
    _, after, _ = _split_sample(text)
    if odd := next((t for t in after if not t.isascii()), None):
        # Python's float() reads '٧٩' as 79; Prometheus numbers are ASCII only
        what = "value" if odd is after[0] else "timestamp"
        return f"{what} {odd[:40]!r} is not a number (ASCII digits only)"
    try:
        if openmetrics:
            head, tokens, _ = _split_sample(text)
            if not 1 <= len(tokens) <= 2:
                raise ValueError("value [timestamp] expected")
            seconds = tokens[1] if len(tokens) == 2 else None
            text = f"{head} {tokens[0]}"
        families = list(text_string_to_metric_families(text + "\n"))
        sample = families[0].samples[0]
        value = float(sample.value)
    except Exception:  # any failure of the third-party parser is a bad line
        # (its messages are Python's, e.g. "could not convert string to float: ''")
        return 'not a Prometheus sample (expected: name{label="..."} value)'
    return sample, value, seconds


def _bad_labels(labels: dict[str, str], host: str) -> str | None:
    """Say why a sample's labels are not a reading's (None: they are)."""
    if not host.isprintable():
        return f"host label {host[:60]!r} is not a host name (a control character)"
    code = labels.get("err_code")
    if code and not (code.isascii() and code.isdigit()):
        return f"label err_code: {code[:40]!r} is not an Xid code (ASCII digits)"
    return None


def _bad_value(name: str, labels: dict[str, str], value: float) -> str | None:
    """Say why a DCGM field's value is not a reading (None: it is one)."""
    kind = taxonomy.DCGM_FIELDS[name][1]
    if value < 0 and kind in ("counter", "last_xid", "xid_window_count"):
        what = "an error counter" if kind == "counter" else "an Xid value"
        return f"negative value {value:g} for {what} (not a reading; not a reset)"
    bad_xid = not value.is_integer() or value > _MAX_XID
    if kind == "last_xid" and bad_xid and not labels.get("err_code"):
        return f"last-Xid value {value:g} is not an Xid code"
    return None


def _drop_repeats(samples: list[_Sample], bad: Callable[[int, str, str], None]) -> list[_Sample]:
    """Quarantine a series seen twice in one scrape; return the samples kept.

    Exact repeats are quarantined after the first; conflicting copies all (which is real is
    unknown).
    """
    groups: dict[tuple[object, ...], list[_Sample]] = {}
    for smp in samples:
        groups.setdefault((smp.key, smp.when), []).append(smp)
    dropped: set[int] = set()
    for group in groups.values():
        if len(group) < 2:
            continue
        first = group[0]
        if all(g.value == first.value for g in group):
            for g in group[1:]:
                bad(
                    g.line_no,
                    g.line,
                    f"exact duplicate of line {first.line_no} (same series, same scrape)",
                )
                dropped.add(g.line_no)
        else:
            nos = ", ".join(str(g.line_no) for g in group)
            vals = ", ".join(f"{g.value:g}" for g in group)
            for g in group:
                bad(
                    g.line_no,
                    g.line,
                    f"series appears {len(group)} times in one scrape with different values ({vals}; lines {nos}): which is real is unknown",
                )
                dropped.add(g.line_no)
    return [smp for smp in samples if smp.line_no not in dropped]


def _events(kept: list[_Sample], cluster: str) -> tuple[list[dict[str, object]], int, int]:
    """Difference each series in time order into events.

    Time order, not file order: scrapes may be concatenated or merged out of order (a stable
    sort keeps the file order of samples taken at the same time).

    Returns the ``health_events`` rows, the number of counter baselines and of series out of
    time order in the file.
    """
    last_seen: dict[tuple[object, ...], datetime] = {}
    unordered: set[tuple[object, ...]] = set()
    for smp in kept:
        seen = last_seen.get(smp.key)
        if seen is not None and smp.when < seen:  # type: ignore[operator]
            unordered.add(smp.key)
        else:
            last_seen[smp.key] = smp.when  # type: ignore[assignment]
    kept = sorted(kept, key=lambda smp: smp.when)  # type: ignore[arg-type, return-value]
    prev: dict[tuple[object, ...], float] = {}
    rows: list[dict[str, object]] = []
    baselines = 0
    for smp in kept:
        before = prev.get(smp.key)
        prev[smp.key] = smp.value
        if before is None and taxonomy.DCGM_FIELDS[smp.name][1] == "counter":
            baselines += 1
            continue
        event = _event(smp, before)
        if event is None:
            continue
        cls, code, msg = event
        rows.append(
            {
                "cluster": cluster,
                "node": smp.host,
                "time": smp.when,
                "source": "dcgm",
                "component": cls.component,
                "code": code,
                "severity": cls.severity,
                "device": _device(smp.labels),
                "message": msg,
            }
        )
    return rows, baselines, len(unordered)


def _event(smp: _Sample, before: float | None) -> tuple[Any, str, str] | None:
    """Return the event of a sample after the series' previous value ``before``.

    (classification, code, message), or None when the sample makes none.
    """
    cls, kind = taxonomy.DCGM_FIELDS[smp.name]
    value, labels = smp.value, smp.labels
    code = smp.name.removeprefix("DCGM_FI_DEV_").removeprefix("DCGM_EXP_")
    if kind == "counter":
        inc = value - before if value >= before else value  # type: ignore[operator]
        if inc <= 0:
            return None
        return cls, code, f"{cls.description}: +{inc:g} (counter now {value:g})"
    if kind == "last_xid":
        xid = labels.get("err_code") or (str(int(value)) if value else "")
        if xid in ("", "0") or (before is not None and before == value):
            return None  # no Xid, or the gauge still holds the one already recorded
        cls = taxonomy.classify_xid(xid)
        first = " (first observation: may predate this scrape)" if before is None else ""
        msg = f"DCGM last Xid {xid}: {cls.description}{first}"
        if labels.get("err_msg"):
            msg += f" [{labels['err_msg']}]"
        return cls, xid, msg
    # windowed Xid count
    xid = labels.get("xid", "")
    if not xid or value <= 0 or (before is not None and value <= before):
        return None
    cls = taxonomy.classify_xid(xid)
    return cls, xid, f"{value:g} Xid {xid} in DCGM window: {cls.description}"
