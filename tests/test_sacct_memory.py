"""Bounded memory: the peak resident set of a fresh process reading an export (VmHWM), with
the reader's block size lowered so that a small file spans many blocks. One bad line in the
middle of an export must cost what a clean export costs (before, it sent the whole file
through the in-memory path: 1.0 GB -> 3.2 GB on a 650 MB export), and a gzip bomb must be
refused before it inflates."""

from __future__ import annotations

import json
import subprocess
import sys
import zlib

import pytest

from reliability.testing import synthetic_sacct

CHILD = r"""
import json, sys

def hwm_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise SystemExit("no VmHWM")

from reliability.errors import IngestError
from reliability.ingest.sacct import io as _sacct_io
from reliability.ingest import read_sacct
_sacct_io.BLOCK_BYTES = int(sys.argv[2])
read_sacct(sys.argv[1], tz="UTC") if sys.argv[3] == "warm" else None
base = hwm_mb()
error = ""
try:
    r = read_sacct(sys.argv[1], tz="UTC")
    counts = [r.rows_read, r.rows_kept, r.rows_quarantined]
except IngestError as exc:
    error, counts = str(exc), []
print(json.dumps({"base": base, "peak": hwm_mb(), "counts": counts, "error": error}))
"""
BLOCK = 2 << 20


def _peak(path, block=BLOCK) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), str(block), "cold"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """A clean synthetic export (about 24 MB, 12 blocks), and copies with one bad line, and
    with one job name split by a newline, in the middle."""
    d = tmp_path_factory.mktemp("mem")
    clean = d / "clean.psv"
    synthetic_sacct(clean, 40_000, seed=5)
    lines = clean.read_bytes().split(b"\n")
    mid = len(lines) // 2
    bad_lines = list(lines)
    bad_lines[mid] = bad_lines[mid] + b"|one|extra|field"
    bad = d / "bad.psv"
    bad.write_bytes(b"\n".join(bad_lines))
    split = list(lines)
    k = next(i for i in range(mid, len(lines)) if b"|train_" in lines[i])
    split[k] = split[k].replace(b"|train_", b"|tr\nain_", 1)
    newline = d / "newline.psv"
    newline.write_bytes(b"\n".join(split))
    return {"clean": clean, "bad": bad, "newline": newline, "n_records": len(lines) - 2}


def test_one_bad_line_keeps_memory_bounded(exports):
    size_mb = exports["clean"].stat().st_size / 2**20
    clean = _peak(exports["clean"])
    n = exports["n_records"]
    assert clean["counts"] == [n, n, 0]
    for name in ("bad", "newline"):
        got = _peak(exports[name])
        # the bad line is quarantined, the split name rejoined: same number of records
        assert got["counts"] == ([n, n - 1, 1] if name == "bad" else [n, n, 0]), name
        used, used_clean = got["peak"] - got["base"], clean["peak"] - clean["base"]
        assert used <= 1.25 * used_clean + 16, (name, used, used_clean)
        # and it does not grow with the file beyond the output: a few blocks of temporaries
        assert used <= 4 * size_mb + 64 * BLOCK / 2**20, (name, used, size_mb)


def test_gzip_bomb_is_refused_within_bounded_memory(tmp_path):
    """256 MiB of one repeated record compressed about 300:1 into under 1 MB: refused by the ratio
    guard once RATIO_CHECK_AFTER bytes are out, before a block is parsed."""
    line = (
        b"12|sweep|NODE_FAIL|0:0|2025-01-01T00:00:00|2025-01-01T00:02:00|"
        b"2025-01-01T00:09:00|1|gres/gpu=1|n04|c\n"
    )
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [
        comp.compress(
            b"JobID|JobName|State|ExitCode|Submit|Start|End|NNodes|AllocTRES|NodeList|Cluster\n"
        )
    ]
    chunk = line * ((8 << 20) // len(line))
    for _ in range(32):  # 256 MiB
        parts.append(comp.compress(chunk))
    parts.append(comp.flush())
    bomb = tmp_path / "bomb.psv.gz"
    bomb.write_bytes(b"".join(parts))
    got = _peak(bomb, block=64 << 20)  # the production block size
    assert "decompression bomb" in got["error"]
    assert got["peak"] - got["base"] < 128, got
    print(
        f"gzip bomb ({bomb.stat().st_size / 1e6:.1f} MB -> 256 MiB): peak RSS {got['peak']:.0f} MB"
    )


def test_hostlist_bombs_are_bounded_before_expansion(tmp_path):
    """A product of huge ranges is quarantined, and many records of a million hosts each
    (each one allowed) are refused as a whole, both before a single name is built."""
    head = "JobID|State|Submit|Start|End|NodeList|Cluster\n"
    rec = "{}|COMPLETED|2025-01-01T00:00:00|2025-01-01T00:01:00|2025-01-01T01:00:00|{}|c\n"
    product = tmp_path / "product.psv"
    product.write_text(head + rec.format(1, "r[1-100000]n[1-100000]") + rec.format(2, "n[1-4]"))
    got = _peak(product)
    assert got["counts"] == [2, 1, 1]
    many = tmp_path / "many.psv"
    many.write_text(head + "".join(rec.format(i, f"n[{i}-{i + 999_999}]") for i in range(2000)))
    got = _peak(many)
    assert "refused before expanding them" in got["error"]
    for name in ("product", "many"):
        got = _peak(tmp_path / f"{name}.psv")
        assert got["peak"] - got["base"] < 128, (name, got)
