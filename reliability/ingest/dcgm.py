"""Reader of DCGM exporter scrapes (Prometheus text format) -> ``health_events``.

A file holds one or more scrapes of one or more hosts. Events are emitted for

- error counters that increased between two scrapes of the same series (double-bit ECC,
  row-remap failures, NVLink CRC / recovery errors, PCIe replays; see
  :data:`reliability.taxonomy.DCGM_FIELDS`); a counter that went down was reset and its new
  value counts as the increase; the first scrape of a series is only a baseline;
- ``DCGM_FI_DEV_XID_ERRORS``, a gauge holding the *last* Xid seen (not a count): an event when
  it changes to a non-zero code, and at its first observation if non-zero (the Xid may predate
  the scrape: the message says so). Newer exporters put the code in an ``err_code`` label;
- ``DCGM_EXP_XID_ERRORS_COUNT`` (label ``xid``): an event when the windowed count rises.

Scrape times: the sample's own timestamp if present; else the last ``# scraped_at <ISO-8601>``
comment line above it (``{ echo "# scraped_at $(date -Is)"; curl -s host:9400/metrics; }``
appends one); else ``scraped_at=``; else the file's modification time (noted).
DCGM's blank sentinels (e.g. 9223372036854775794) are "no value", never readings.
Samples are parsed with ``prometheus_client``'s parser, one line at a time, so that a bad
line is quarantined with its line number instead of failing the file.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
from prometheus_client.parser import text_string_to_metric_families

from reliability import schema, taxonomy
from reliability.errors import IngestError
from reliability.ingest._common import ReadResult, quarantine_frame, read_lines

__all__ = ["NODE_LABELS", "is_blank", "read_dcgm"]

#: Labels that name the host, in order of preference.
NODE_LABELS = ("Hostname", "hostname", "node", "kubernetes_node", "nodename", "instance")
_SCRAPED_AT = re.compile(r"^#\s*scraped_at[:=\s]\s*(?P<ts>\S+)\s*$")
# DCGM blank values: int32 0x7ffffff0.., int64 0x7ffffffffffffff0.., FP64 >= 2**47 (DCGM_FP64_BLANK)
_INT32_BLANK = (0x7FFFFFF0, 0x7FFFFFFF)
_INT64_BLANK = 0x7FFFFFFFFFFFFFF0
_FP64_BLANK = 140737488355328.0


def is_blank(value: float) -> bool:
    """True for DCGM's "blank" sentinels (not supported / not found / not permissioned)."""
    if value != value:  # NaN
        return True
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
    path : Prometheus text (one or more scrapes), plain or gzip
    cluster : cluster name for every event
    node : host for samples without a ``Hostname`` (or similar) label; default file name stem
    scraped_at : UTC-aware time of a single-scrape file without timestamps

    Rows read are sample lines (comments and ``# HELP``/``# TYPE`` are not rows); a sample is
    kept when it parses, whether or not it produces an event.
    """
    src = str(path)
    if scraped_at is not None and scraped_at.tzinfo is None:
        raise ValueError("scraped_at must be timezone-aware")
    lines, notes = read_lines(path)
    if lines.height == 0:
        raise IngestError(src, "empty file")
    default_node = node or Path(src).name.split(".")[0]
    current = scraped_at
    used_mtime = used_default_node = False
    blanks = baselines = 0
    prev: dict[tuple[object, ...], float] = {}
    rows: list[dict[str, object]] = []
    q: tuple[list[int], list[str], list[str]] = ([], [], [])
    n_read = 0
    for line_no, line in lines.iter_rows():
        text = line.strip()
        if not text:
            continue
        if text.startswith("#"):
            m = _SCRAPED_AT.match(text)
            if m:
                try:
                    t = datetime.fromisoformat(m.group("ts").replace("Z", "+00:00"))
                except ValueError:
                    raise IngestError(
                        src, f"bad scraped_at time {m.group('ts')!r}", line=line_no
                    ) from None
                if t.tzinfo is None:
                    raise IngestError(src, "scraped_at time needs a UTC offset", line=line_no)
                current = t.astimezone(UTC)
            continue
        n_read += 1
        try:
            families = list(text_string_to_metric_families(text + "\n"))
            sample = families[0].samples[0]
        except (ValueError, IndexError, KeyError, TypeError) as exc:
            q[0].append(line_no)
            q[1].append(line)
            q[2].append(f"not a Prometheus sample: {exc}")
            continue
        value = float(sample.value)
        if is_blank(value):
            blanks += 1
            continue
        spec = taxonomy.DCGM_FIELDS.get(sample.name)
        if spec is None:
            continue
        if sample.timestamp is not None:
            when = datetime.fromtimestamp(float(sample.timestamp), tz=UTC)
        elif current is not None:
            when = current
        else:
            when = datetime.fromtimestamp(Path(src).stat().st_mtime, tz=UTC)
            used_mtime = True
        labels = dict(sample.labels)
        host, defaulted = _node(labels, default_node)
        used_default_node |= defaulted
        device = _device(labels)
        cls, kind = spec
        key = (host, sample.name, tuple(sorted(labels.items())))
        before = prev.get(key)
        prev[key] = value
        code = sample.name.removeprefix("DCGM_FI_DEV_").removeprefix("DCGM_EXP_")
        if kind == "counter":
            if before is None:
                baselines += 1
                continue
            inc = value - before if value >= before else value
            if inc <= 0:
                continue
            msg = f"{cls.description}: +{inc:g} (counter now {value:g})"
        elif kind == "last_xid":
            xid = labels.get("err_code") or (str(int(value)) if value else "")
            if xid in ("", "0") or (before is not None and before == value):
                continue  # no Xid, or the gauge still holds the one already recorded
            cls = taxonomy.classify_xid(xid)
            code = xid
            first = " (first observation: may predate this scrape)" if before is None else ""
            msg = f"DCGM last Xid {xid}: {cls.description}{first}"
            if labels.get("err_msg"):
                msg += f" [{labels['err_msg']}]"
        else:  # windowed Xid count
            xid = labels.get("xid", "")
            if not xid or value <= 0 or (before is not None and value <= before):
                continue
            cls = taxonomy.classify_xid(xid)
            code = xid
            msg = f"{value:g} Xid {xid} in DCGM window: {cls.description}"
        rows.append(
            {
                "cluster": cluster,
                "node": host,
                "time": when,
                "source": "dcgm",
                "component": cls.component,
                "code": code,
                "severity": cls.severity,
                "device": device,
                "message": msg,
            }
        )
    frame = pl.DataFrame(rows, schema=schema.TABLES["health_events"].schema, orient="row")
    if blanks:
        notes.append(f"{blanks} DCGM blank sentinel value(s) (no reading) ignored")
    if baselines:
        notes.append(f"{baselines} counter series seen for the first time: baseline only, no event")
    if used_mtime:
        notes.append("no sample timestamps or '# scraped_at' lines: file modification time used")
    if used_default_node:
        notes.append(f"samples without a Hostname label assigned to node {default_node!r}")
    qf = quarantine_frame(src, *q)
    return ReadResult(src, {"health_events": frame}, qf, n_read, n_read - qf.height, notes)
