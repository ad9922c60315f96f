from datetime import UTC, datetime

import polars as pl
import pytest

from reliability import datasets, taxonomy
from reliability.errors import IngestError
from reliability.ingest import read_kernel_log

BOOT = datetime(2025, 1, 1, tzinfo=UTC)


BUNDLED = datasets.sample_files()  # byte-identical to ../shared/data/nvidia-xid-dmesg-gpud


def _xid_lines(path) -> int:
    """Xid records of a log, counted here: lines with 'NVRM: Xid (' or a Fatal/Non-fatal SXid."""
    lines = path.read_text().splitlines()
    return sum("NVRM: Xid (" in ln or ("SXid (" in ln and "atal," in ln) for ln in lines)


def test_dmesg_T_xid_119():
    path = BUNDLED["gpud/dmesg-with-xid-119.log"]
    r = read_kernel_log(path, cluster="c", node="n1", tz="UTC")
    he = r.frames["health_events"]
    # five Xid 119 lines amid 38 lines of RPC tables and a call trace
    assert he.height == r.rows_read == _xid_lines(path) == 5
    assert r.rows_quarantined == 0
    assert set(he.get_column("code")) == {"119"}
    assert set(he.get_column("device")) == {"0000:9b:00"}
    assert set(he.get_column("severity").cast(pl.String)) == {"critical"}
    assert he.item(0, "time") == datetime(2025, 2, 23, 16, 24, 18, tzinfo=UTC)
    assert he.item(3, "message").startswith("pid=1263500, name=cache_mgr_main")


def test_dmesg_T_local_zone():
    r = read_kernel_log(BUNDLED["gpud/dmesg-with-xid-119.log"], cluster="c", node="n1",
                        tz="America/Los_Angeles")  # fmt: skip
    assert r.frames["health_events"].item(0, "time") == datetime(2025, 2, 24, 0, 24, 18, tzinfo=UTC)


def test_seconds_since_boot_and_sxid():
    path = BUNDLED["gpud/sxid-readme-xid79-sxid20034.log"]
    r = read_kernel_log(path, cluster="c", node="n2", boot_time=BOOT)
    he = r.frames["health_events"]
    # Xid 79 once (the no-Xid "fallen off the bus" line repeats it) + 4 fatal SXid lines
    assert he.get_column("code").to_list() == [
        "79",
        "SXid20034",
        "SXid20034",
        "SXid20034",
        "SXid20034",
    ]
    assert he.item(0, "component") == "gpu"
    assert he.item(1, "component") == "nvlink"
    assert he.item(0, "time").timestamp() == pytest.approx(BOOT.timestamp() + 6781741.548779)
    assert any("repeat an Xid 79" in n for n in r.notes)
    # without a boot time nothing in this log can be placed in time: refused, naming the
    # option and the first such line (it used to read with every row quarantined, exit 0)
    first = next(
        i for i, ln in enumerate(path.read_text().splitlines(), 1) if "NVRM" in ln or "SXid" in ln
    )
    with pytest.raises(IngestError, match="seconds since boot: pass boot_time=") as err:
        read_kernel_log(path, cluster="c", node="n2")
    assert err.value.line == first


def test_a_line_stamped_since_boot_among_dated_lines_is_quarantined(tmp_path):
    """One dmesg line in a syslog file (year given): that line is quarantined with the reason,
    the dated Xid is kept (the refusal is for a log nothing of which can be placed in time)."""
    log = tmp_path / "mixed.log"
    log.write_text(
        "Mar  3 10:00:00 gpu7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"
        "[ 1843.308145] NVRM: Xid (PCI:0000:3b:00): 48, pid=2, An uncorrectable double bit error\n"
    )
    r = read_kernel_log(log, cluster="c", tz="UTC", year=2025)
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (2, 1, 1)
    assert r.frames["health_events"].item(0, "code") == "79"
    assert r.quarantine.item(0, "reason") == (
        "dmesg timestamp is seconds since boot: pass boot_time= to place it in time"
    )


def test_fallen_off_bus_without_xid(shared):
    r = read_kernel_log(shared / "nvidia-xid-dmesg-gpud/nvsentinel-issue155-fallen-off-bus-no-xid.log",
                        cluster="c", node="n3", boot_time=BOOT)  # fmt: skip
    he = r.frames["health_events"]
    assert he.height == 1
    assert he.item(0, "code") == "79"
    assert he.item(0, "device") == "0000:b3:00"
    assert "fallen off the bus" in he.item(0, "message")  # continuation lines joined


def test_line_without_timestamp_is_quarantined(shared):
    r = read_kernel_log(
        shared / "nvidia-xid-dmesg-gpud/ml-engineering-xid63-nvidia-smi-q.txt",
        cluster="c",
        node="n",
    )
    path = shared / "nvidia-xid-dmesg-gpud/ml-engineering-xid63-nvidia-smi-q.txt"
    assert r.rows_read == r.rows_quarantined == _xid_lines(path) == 1
    assert r.quarantine.item(0, "reason") == "no timestamp on the line"


def test_syslog_iso_and_year_rollover(tmp_path):
    p = tmp_path / "kern.log"
    p.write_text(
        "Dec 31 23:59:59 gpu017 kernel: [12.5] NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=python, DBE\n"
        "Jan  1 00:00:05 gpu017 kernel: NVRM: Xid (PCI:0000:3b:00): 999, pid=1, name=x, new code\n"
        "Jan  1 00:00:06 gpu017 sshd[1]: Accepted publickey\n"
        "2025-01-01T00:00:07.5+01:00 gpu018 kernel: NVRM: Xid (PCI:0000:3b:00): 31, pid=2, name=y, fault\n"
        "kern  :warn  : 2025-01-21T04:41:44,283302+00:00 NVRM: Xid (PCI:0000:38:00): 13, pid='<unknown>', name=<unknown>, Graphics\n"
    )
    r = read_kernel_log(p, cluster="c", tz="UTC", year=2024, node="fallback")
    he = r.frames["health_events"]
    assert he.get_column("node").to_list() == ["gpu017", "gpu017", "gpu018", "fallback"]
    assert [t.year for t in he.get_column("time")] == [2024, 2025, 2024, 2025]
    assert he.item(2, "time") == datetime(2024, 12, 31, 23, 0, 7, 500000, tzinfo=UTC)
    # unknown Xid kept as component "unknown", never dropped
    assert he.row(1, named=True)["component"] == "unknown"
    assert he.item(1, "code") == "999"
    assert he.item(0, "component") == "gpu_memory"
    with pytest.raises(IngestError, match="year="):
        read_kernel_log(p, cluster="c", tz="UTC")


def test_taxonomy_covers_required_codes():
    required = [
        13,
        31,
        43,
        45,
        48,
        61,
        62,
        63,
        64,
        68,
        69,
        74,
        79,
        92,
        94,
        95,
        109,
        119,
        120,
        122,
        123,
        140,
        143,
        154,
    ]
    for code in required:
        assert code in taxonomy.XID, code
    assert taxonomy.classify_xid(79).severity == "critical"
    assert taxonomy.classify_xid(13).domain == "user"
    assert taxonomy.classify_xid("12345").component == "unknown"
    assert taxonomy.classify_sxid(99999, fatal=False).severity == "warning"
    assert taxonomy.xid_table().height == len(taxonomy.XID)


def _syslog(stamps: list[str]) -> str:
    xid = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus."
    return "".join(f"{s} gpu017 kernel: {xid}\n" for s in stamps)


@pytest.mark.parametrize(
    ("stamps", "years"),
    [
        # a real New Year crossing
        (["Dec 30 10:00:00", "Dec 31 23:59:59", "Jan  1 00:00:05", "Jan  2 08:00:00"],
         [2024, 2024, 2025, 2025]),
        # one line with a wrong month (forward jump and back) moves no other line
        (["Jan  5 10:00:00", "Jan  6 10:00:00", "Dec  7 10:00:00", "Jan  8 10:00:00",
          "Jan  9 10:00:00"], [2024, 2024, 2024, 2024, 2024]),
        # one line jumping back (out of order) is not a crossing
        (["Jun  5 10:00:00", "Jan  6 10:00:00", "Jun  7 10:00:00", "Jul  1 00:00:00"],
         [2024, 2024, 2024, 2024]),
        # a gap of months is not an outlier
        (["Mar  5 10:00:00", "Jun  6 10:00:00", "Jun  7 10:00:00"], [2024, 2024, 2024]),
    ],
)  # fmt: skip
def test_syslog_year_from_the_dates_written(tmp_path, stamps, years):
    p = tmp_path / "kern.log"
    p.write_text(_syslog(stamps))
    he = read_kernel_log(p, cluster="c", tz="UTC", year=2024).frames["health_events"]
    assert [t.year for t in he.get_column("time")] == years
    assert [t.strftime("%b %e %H:%M:%S").replace("  ", " ") for t in he.get_column("time")] == [
        " ".join(s.split()) for s in stamps
    ]


def test_the_default_node_note_is_about_the_rows_kept(tmp_path):
    """A garbage line (no host, quarantined) before a syslog line that names its host: the
    kept event is on that host and no note says the node was defaulted; a dmesg line kept
    without a host gets the file's name and the note."""
    p = tmp_path / "garbage.log"
    p.write_text(
        "NVRM: Xid (PCI:0000:3b:00): 48, no time here\n"
        "2025-01-01T00:00:07+00:00 gpu018 kernel: NVRM: Xid (PCI:0000:3b:00): 31, pid=2, name=y, fault\n"
    )
    r = read_kernel_log(p, cluster="c", tz="UTC")
    assert r.frames["health_events"].get_column("node").to_list() == ["gpu018"]
    assert r.rows_quarantined == 1
    assert not any("no host name" in n for n in r.notes)
    q = tmp_path / "gpu3.log"
    q.write_text(
        "[Sat Feb 22 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 79, GPU has fallen off the bus.\n"
    )
    r = read_kernel_log(q, cluster="c", tz="UTC")
    node = r.frames["health_events"].get_column("node").to_list()
    assert len(node) == 1
    assert any(f"node set to {node[0]!r}" in n for n in r.notes)


def test_dmesg_raw_and_decoded_prefixes_are_read_like_plain_dmesg(tmp_path):
    """Issue 37: `dmesg -r` writes the syslog priority before each line (<4>), `dmesg -x` the
    decoded facility and level (kern  :warn  :); both lines were quarantined as 'no
    timestamp'. Expected times are boot + the seconds written, and the -T time in UTC."""
    xid = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus."
    sxid = "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 3 LTSSM Fault Up"
    lines = [f"<4>[   12.500000] {xid}",
             f"<12>[Sun Feb 23 16:24:18 2025] {xid.replace('3b', '5e')}",
             f"kern  :warn  : [   13.250000] {xid.replace('3b', '86')}",
             f"<4>[   14.000000] {sxid}",
             f"<4>{xid}",  # dmesg -r -t: no time, as plain dmesg -t
             xid]  # fmt: skip
    p = tmp_path / "k.log"
    p.write_text("\n".join(lines) + "\n")
    r = read_kernel_log(p, cluster="c", node="n", tz="UTC", boot_time=BOOT)
    he = r.frames["health_events"]
    assert he.select("time", "code", "device").rows() == [
        (datetime(2025, 1, 1, 0, 0, 12, 500000, tzinfo=UTC), "79", "0000:3b:00"),
        (datetime(2025, 2, 23, 16, 24, 18, tzinfo=UTC), "79", "0000:5e:00"),
        (datetime(2025, 1, 1, 0, 0, 13, 250000, tzinfo=UTC), "79", "0000:86:00"),
        (datetime(2025, 1, 1, 0, 0, 14, tzinfo=UTC), "SXid20034", "nvidia-nvswitch0@0000:05:00"),
    ]
    assert he["message"][0] == "pid=1, name=python, GPU has fallen off the bus."
    q = r.quarantine
    assert q["line_no"].to_list() == [5, 6]
    assert q["raw"][0] == lines[4]  # the raw line, prefix and all
    assert set(q["reason"]) == {"no timestamp on the line"}


def _xid(code: int, bus: str = "3b", pid: int = 1) -> str:
    return f"NVRM: Xid (PCI:0000:{bus}:00): {code}, pid={pid}, name=python, event"


def test_a_log_rotated_with_overlap_counts_each_xid_once(tmp_path):
    """Cold tester: the same kernel line twice (a log rotated with overlap, concatenated) gave
    two Xid events. Written here: 4 distinct Xid lines; the second file repeats lines 3-4 of
    the first (they are lines 6-7 of the concatenation, lines 5 and 8 are noise)."""
    first = [
        f"2025-01-21T04:41:4{i}.283+00:00 n1 kernel: {_xid(c)}"
        for i, c in enumerate([13, 31, 48, 79])
    ]
    noise = "2025-01-21T04:41:45.001+00:00 n1 kernel: usb 1-1: new high-speed USB device"
    later = "2025-01-21T04:41:46.000+00:00 n1 kernel: " + _xid(94)
    p = tmp_path / "kern.log"
    p.write_text("\n".join([*first, noise, first[2], first[3], noise, later]) + "\n")
    r = read_kernel_log(p, cluster="c")
    he = r.frames["health_events"]
    assert he.get_column("code").to_list() == ["13", "31", "48", "79", "94"]  # by hand
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (7, 5, 2)
    assert r.quarantine.select("line_no", "reason").rows() == [
        (6, "exact duplicate of line 3 (same host, time and message)"),
        (7, "exact duplicate of line 4 (same host, time and message)"),
    ]
    assert any("repeat an earlier line" in n for n in r.notes)


def test_dmesg_and_journalctl_of_one_boot_concatenated(tmp_path):
    """The same Xid printed by `dmesg -T` and by journalctl (host and time in other forms,
    a priority prefix) is one event; an Xid at the same time on another GPU, and the same
    message a second later, are other events."""
    p = tmp_path / "n1.log"
    p.write_text(
        f"[Tue Jan 21 04:41:44 2025] {_xid(79)}\n"
        f"[Tue Jan 21 04:41:44 2025] {_xid(79, bus='5e')}\n"
        f"<4>[Tue Jan 21 04:41:45 2025] {_xid(79)}\n"
        f"Jan 21 04:41:44 n1 kernel: {_xid(79)}\n"
        f"Jan 21 04:41:44 n1 kernel: {_xid(79, bus='5e')}\n"
        f"Jan 21 04:41:45 n1 kernel: {_xid(79)}\n"
    )
    r = read_kernel_log(p, cluster="c", node="n1", tz="UTC", year=2025)
    he = r.frames["health_events"]
    assert he.select("time", "device").rows() == [
        (datetime(2025, 1, 21, 4, 41, 44, tzinfo=UTC), "0000:3b:00"),
        (datetime(2025, 1, 21, 4, 41, 44, tzinfo=UTC), "0000:5e:00"),
        (datetime(2025, 1, 21, 4, 41, 45, tzinfo=UTC), "0000:3b:00"),
    ]
    assert dict(r.quarantine.select("line_no", "reason").rows()) == {
        4: "exact duplicate of line 1 (same host, time and message)",
        5: "exact duplicate of line 2 (same host, time and message)",
        6: "exact duplicate of line 3 (same host, time and message)",
    }
    assert r.rows_read == r.rows_kept + r.rows_quarantined == 6


def test_a_repeated_fallen_off_the_bus_message_is_one_xid_79(tmp_path):
    """The multi-line "fallen off the bus" message (no Xid printed) twice: one Xid 79."""
    msg = (
        "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
        "               NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
        "               NVRM: fallen off the bus and is not responding to commands.\n"
    )
    p = tmp_path / "dmesg.log"
    p.write_text(msg + msg)
    r = read_kernel_log(p, cluster="c", node="n3", boot_time=BOOT)
    assert r.frames["health_events"].get_column("code").to_list() == ["79"]
    assert r.quarantine.select("line_no", "reason").rows() == [
        (4, "exact duplicate of line 1 (same host, time and message)")
    ]
