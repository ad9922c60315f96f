"""A file that is not of the reader's format at all is refused, not read as empty.

Cold tester: a JSON document, an image, random text or another tool's output given to
`ingest dcgm`, `ingest kernel` or `ingest pod` kept nothing (every line quarantined, or no
record read) and exited 0. Each foreign input here is written in the test so that, by
construction, none of its lines is a DCGM sample, a kernel log line or a pod event; the
mixed inputs hold a known number of good lines, counted here.
"""

from __future__ import annotations

import json
import random
import struct
from datetime import UTC, datetime

import pytest

from reliability.cli import main
from reliability.errors import IngestError
from reliability.ingest import read_dcgm, read_kernel_log, read_pod_log

_RNG = random.Random(20250301)
_WORDS = ["lorem", "ipsum", "dolor", "sit", "amet", "node", "gpu", "error", "42"]
#: foreign inputs: none has a line starting with DCGM_, a kernel log timestamp, NVRM or SXid,
#: nor a JSON object with "time" and "event"
FOREIGN: dict[str, bytes] = {
    "document.json": json.dumps(
        {"jobs": [{"id": 1, "state": "COMPLETED", "time": "2025-01-01T00:00:00Z"}]}, indent=2
    ).encode(),
    "array.json": json.dumps(
        [{"time": "2025-01-01T00:00:00Z", "event": "inventory", "component_id": "h1"}]
    ).encode(),
    "image.png": b"\x89PNG\r\n\x1a\n"
    + struct.pack(">I4sIIBBBBB", 13, b"IHDR", 64, 64, 8, 2, 0, 0, 0)
    + bytes(_RNG.randrange(256) for _ in range(4000)),
    "random.bin": bytes(_RNG.randrange(256) for _ in range(4000)),
    "words.txt": "\n".join(
        " ".join(_RNG.choice(_WORDS) for _ in range(7)) for _ in range(30)
    ).encode(),
    "table.csv": b"host,metric,value\nn1,temp,41\nn2,temp,43\n",
    "node_exporter.prom": (
        b"# HELP node_load1 1m load average.\n# TYPE node_load1 gauge\nnode_load1 0.52\n"
        b'node_cpu_seconds_total{cpu="0",mode="idle"} 12345.6\n'
    ),
    "blank.txt": b"\n   \n\t\n",
}
#: what each reader says it did not find
LOOKED_FOR = {"dcgm": "DCGM sample line", "kernel": "kernel log line", "pod": "pod event line"}
READERS = {
    "dcgm": lambda p: read_dcgm(p, cluster="c"),
    "kernel": lambda p: read_kernel_log(p, cluster="c", tz="UTC", year=2025),
    "pod": lambda p: read_pod_log(p, cluster="c"),
}


@pytest.mark.parametrize("name", sorted(FOREIGN))
@pytest.mark.parametrize("kind", sorted(LOOKED_FOR))
def test_a_foreign_file_is_refused_on_the_cli(tmp_path, capsys, kind, name):
    path = tmp_path / name
    path.write_bytes(FOREIGN[name])
    into = tmp_path / "ds"
    code = main(["ingest", kind, str(path), "--into", str(into), "--cluster", "c"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith(f"error: {path}: ")
    assert f"no {LOOKED_FOR[kind]} found (expected " in err
    assert "Traceback" not in err
    assert not (into / "manifest.json").exists()  # nothing kept


@pytest.mark.parametrize("name", ["image.png", "random.bin"])
@pytest.mark.parametrize("kind", sorted(LOOKED_FOR))
def test_a_binary_file_is_said_to_be_binary(tmp_path, kind, name):
    path = tmp_path / name
    path.write_bytes(FOREIGN[name])
    with pytest.raises(IngestError, match=r"bytes that are not text \(binary data\?\)") as exc:
        READERS[kind](path)
    assert exc.value.path == str(path)
    assert exc.value.line is None  # the whole file, not a line of it


def test_the_refusal_quotes_the_first_line(tmp_path):
    path = tmp_path / "table.csv"
    path.write_bytes(FOREIGN["table.csv"])
    with pytest.raises(IngestError, match=r"line 1: 'host,metric,value'"):
        read_dcgm(path, cluster="c")
    with pytest.raises(IngestError, match=r"line 1: not valid JSON"):
        read_pod_log(path, cluster="c")


def test_some_good_lines_are_kept_and_the_rest_quarantined(tmp_path):
    """A file with some lines of the format is read as before: 2 DCGM samples (counter 0
    then 3: one event of +3) and 3 garbage lines; 1 Xid line among 3 lines of other text
    (not records of a kernel log); 2 pod events and 2 lines that are not."""
    lab = 'gpu="0",Hostname="n1"'
    garbage = ["lorem ipsum", '{"a": 1}', "a,b,c"]
    dcgm = tmp_path / "n1.prom"
    sample = f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{lab}}}"
    lines = [f"{sample} 0 1735689600000", *garbage, f"{sample} 3 1735689660000"]
    dcgm.write_text("\n".join(lines) + "\n")
    r = read_dcgm(dcgm, cluster="c")
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (5, 2, 3)
    assert r.quarantine["line_no"].to_list() == [2, 3, 4]
    assert r.frames["health_events"]["message"].to_list() == [
        "volatile double-bit ECC errors: +3 (counter now 3)"
    ]
    kern = tmp_path / "k.log"
    xid = "NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus."
    kern.write_text("\n".join([*garbage, f"2025-01-21T04:41:44.283+00:00 n1 kernel: {xid}"]) + "\n")
    r = read_kernel_log(kern, cluster="c")
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (1, 1, 0)
    assert r.frames["health_events"].select("node", "time", "code").rows() == [
        ("n1", datetime(2025, 1, 21, 4, 41, 44, 283000, tzinfo=UTC), "79")
    ]
    pod = tmp_path / "pod.jsonl"
    ev = {"time": "2025-01-01T00:00:00+00:00", "component_type": "machine", "component_id": "h1"}
    lines = [json.dumps({**ev, "event": "inventory"}), garbage[0], garbage[1]]
    lines.append(json.dumps({**ev, "event": "component_fail"}))
    pod.write_text("\n".join(lines) + "\n")
    r = read_pod_log(pod, cluster="p")
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (4, 2, 2)
    assert r.quarantine["line_no"].to_list() == [2, 3]
    assert r.frames["component_failures"].height == 1


def test_pod_events_every_one_bad_are_still_quarantined(tmp_path):
    """Lines that are pod events (JSON objects with "time" and "event") with bad values make
    a pod log whose every line is quarantined, not a foreign file."""
    pod = tmp_path / "pod.jsonl"
    bad_time = {"time": "2025-13-01T00:00:00+00:00", "event": "inventory"}
    unknown = {"time": "2025-01-01T00:00:00+00:00", "event": "no_such_event",
               "component_type": "machine", "component_id": "h1"}  # fmt: skip
    pod.write_text(json.dumps(bad_time) + "\n" + json.dumps(unknown) + "\n")
    r = read_pod_log(pod, cluster="p")
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (2, 0, 2)


@pytest.mark.parametrize(
    ("text", "options"),
    [("[ 1843.308145] usb 1-1: new high-speed USB device number 2\n", {}),
     ("[Sun Feb 23 16:24:18 2025] EXT4-fs (sda1): mounted filesystem\n", {"tz": "UTC"}),
     ("<6>[   12.5] pci 0000:3b:00.0: enabling device\n", {}),
     ("Jan 21 04:41:44 n1 kernel: EXT4-fs (sda1): mounted filesystem\n", {"tz": "UTC", "year": 2025}),
     ("kern  :info  : 2025-01-21T04:41:44,283302+00:00 EXT4-fs (sda1): mounted\n", {})],
)  # fmt: skip
def test_a_kernel_log_without_xids_reads_no_record(tmp_path, text, options):
    """A healthy node's log (each form the reader reads, no NVIDIA line) is a kernel log
    with no record, not a foreign file."""
    p = tmp_path / "n1.log"
    p.write_text(text)
    r = read_kernel_log(p, cluster="c", node="n1", **options)
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (0, 0, 0)
