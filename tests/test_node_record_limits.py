"""A node-state record or line over 64 KiB is quarantined unread (issue 37, item 8).

A 100 MiB ``scontrol show node`` record took 40-48 s (its Reason went through the reason
regexes and the taxonomy's, a few MB/s) and 1.1 GB; a 100 MiB ``sacctmgr`` event line 20 s,
a ``sinfo -R`` line 28 s.
"""

from __future__ import annotations

import time

import pytest
from test_json_bounds import _peak_mb

from reliability.ingest import read_node_snapshot
from reliability.ingest.slurm_nodes import MAX_RECORD_BYTES

XID = "[root@2025-01-01T00:00:00]"


def test_a_record_just_under_the_limit_is_read_and_one_over_is_not(tmp_path):
    """The limit counts the record's bytes, newlines included, over all its lines."""
    lines = ["NodeName=a1 Arch=x86_64", "   State=IDLE+DRAIN"]
    fixed = sum(len(x) + 1 for x in lines) + len("   Reason=Xid 79 ") + len(XID) + 1
    for extra, kept in ((0, 1), (1, 0)):
        pad = "p" * (MAX_RECORD_BYTES - fixed + extra)
        p = tmp_path / f"sc{extra}.txt"
        p.write_text("\n".join([*lines, f"   Reason=Xid 79 {pad}{XID}"]) + "\n")
        assert p.stat().st_size == MAX_RECORD_BYTES + extra
        r = read_node_snapshot(p, cluster="c", tz="UTC")
        assert (r.rows_read, r.rows_kept) == (1, kept)
        if not kept:
            reason = r.quarantine.item(0, "reason")
            assert reason.startswith(f"record of {MAX_RECORD_BYTES + 1:,} bytes, longer than")
            assert len(r.quarantine.item(0, "raw")) == 4096


@pytest.mark.slow
@pytest.mark.parametrize("form", ["scontrol", "sacctmgr"])
def test_a_100_mib_record_is_quick_and_bounded(tmp_path, form):
    p = tmp_path / "big.txt"
    with p.open("w") as f:
        if form == "scontrol":
            f.write("NodeName=a1 Arch=x86_64\n   State=IDLE+DRAIN\n   Reason=")
        else:
            f.write(
                "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User\nc|n1|2025-01-01T00:00:00|Unknown|DRAIN|"
            )
        f.write("x " * (50 << 20))
        f.write(f"{XID}\n" if form == "scontrol" else "|root(0)\n")
    call = (f"read_node_snapshot({str(p)!r}, cluster='c', tz='UTC')" if form == "scontrol"
            else f"read_sacctmgr_events({str(p)!r}, tz='UTC')")  # fmt: skip
    t0 = time.monotonic()
    grew, out = _peak_mb(
        "from reliability.ingest import read_node_snapshot, read_sacctmgr_events",
        f"r = {call}\nprint(r.rows_read, r.rows_kept)",
    )
    assert out == "1 0", out
    assert time.monotonic() - t0 < 15  # 40-48 s (scontrol), 20 s (sacctmgr) before
    assert grew < 1000, grew  # the file is 100 MiB; reading it whole costs a few times that
