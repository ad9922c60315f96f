"""By-hand expectations for the fixes of the cold tester's findings (events, kernel, DCGM,
pod, health and LANL readers)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from reliability.errors import IngestError
from reliability.ingest.slurm_nodes import read_sacctmgr_events

_HEAD = "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User\n"


def _counts(r):
    assert r.rows_read == r.rows_kept + r.rows_quarantined
    return r.rows_read, r.rows_kept, r.rows_quarantined


def test_events_exact_duplicate_line_is_quarantined(tmp_path):
    line = "c1|n1|2026-01-01T00:00:00|2026-01-01T01:00:00|DOWN|bad disk|root\n"
    p = tmp_path / "e.psv"
    p.write_text(_HEAD + line + "c1|n2|2026-01-01T00:00:00|Unknown|DRAIN|x|root\n" + line)
    r = read_sacctmgr_events(p, tz="UTC")
    assert _counts(r) == (3, 2, 1)
    assert r.quarantine.select("line_no", "reason").rows() == [(4, "exact duplicate of line 2")]
    assert r.frames["node_states"].height == 2


def test_events_same_key_in_one_input_merges_as_across_inputs(tmp_path):
    p = tmp_path / "e.psv"
    p.write_text(
        _HEAD
        + "c1|n1|2026-01-01T00:00:00|2026-01-01T03:00:00|DOWN|bad|root\n"
        + "c1|n1|2026-01-01T00:00:00|2026-01-01T01:00:00|DOWN|bad|root\n"
        + "c1|n2|2026-01-01T00:00:00|Unknown|DOWN|bad|root\n"
        + "c1|n2|2026-01-01T00:00:00|2026-01-01T02:00:00|DOWN|bad|root\n"
    )
    r = read_sacctmgr_events(p, tz="UTC")
    assert _counts(r) == (4, 4, 0)
    ns = r.frames["node_states"].sort("node")
    assert ns.select("node", "end").rows() == [
        ("n1", datetime(2026, 1, 1, 3, tzinfo=UTC)),  # the later end
        ("n2", datetime(2026, 1, 1, 2, tzinfo=UTC)),  # closed beats open
    ]
    assert any("2 interval(s) repeat the cluster, node, state and start" in n for n in r.notes)


@pytest.mark.parametrize("missing", ["TimeEnd", "State"])
def test_events_without_a_required_field_is_refused(tmp_path, missing):
    names = ["Cluster", "NodeName", "TimeStart", "TimeEnd", "State", "Reason"]
    vals = ["c1", "n1", "2026-01-01T00:00:00", "2026-01-01T01:00:00", "DOWN", "bad"]
    keep = [i for i, n in enumerate(names) if n != missing]
    p = tmp_path / "e.psv"
    p.write_text("|".join(names[i] for i in keep) + "\n" + "|".join(vals[i] for i in keep) + "\n")
    with pytest.raises(IngestError, match=f"has no {missing} field") as exc:
        read_sacctmgr_events(p, tz="UTC")
    assert exc.value.field == missing
    assert exc.value.line == 1


def test_events_of_the_cluster_only_need_no_node_fields(tmp_path):
    p = tmp_path / "e.psv"
    p.write_text(
        "Cluster|TRES|TimeStart|TimeEnd|Cluster Nodes\nc1|cpu=8|2026-01-01T00:00:00|Unknown|n1\n"
    )
    r = read_sacctmgr_events(p, tz="UTC")
    assert _counts(r) == (1, 1, 0)
    assert r.frames["node_states"].height == 0


def test_kernel_xid_code_in_non_ascii_digits_is_quarantined(tmp_path):
    from reliability.ingest.kernel_log import read_kernel_log

    p = tmp_path / "k.log"
    p.write_text(
        "[Sun Mar  8 05:30:00 2026] NVRM: Xid (PCI:0000:9b:00): \u0667\u0669, pid=1\n"
        "[Sun Mar  8 05:31:00 2026] NVRM: Xid (PCI:0000:9b:00): 48, pid=1, DBE\n"
    )
    r = read_kernel_log(p, cluster="c", node="gpu01", tz="UTC")
    assert _counts(r) == (2, 1, 1)
    assert r.frames["health_events"].get_column("code").to_list() == ["48"]
    assert r.quarantine.item(0, "line_no") == 1


def test_kernel_local_time_in_a_dst_gap_is_quarantined_and_a_repeated_hour_noted(tmp_path):
    from reliability.ingest.kernel_log import read_kernel_log

    p = tmp_path / "k.log"
    p.write_text(
        "[Sun Mar  8 02:30:00 2026] NVRM: Xid (PCI:0000:9b:00): 79, pid=1\n"
        "[Sun Nov  1 01:30:00 2026] NVRM: Xid (PCI:0000:9b:00): 48, pid=1\n"
    )
    r = read_kernel_log(p, cluster="c", node="gpu01", tz="America/New_York")
    assert _counts(r) == (2, 1, 1)
    assert r.quarantine.select("line_no", "reason").rows() == [
        (
            1,
            "timestamp 'Sun Mar  8 02:30:00 2026' cannot be read: it does not exist in "
            "America/New_York (a daylight-saving gap)",
        )
    ]
    # 01:30 EDT (the earlier reading, as the sacct reader) is 05:30Z
    assert r.frames["health_events"].item(0, "time") == datetime(2026, 11, 1, 5, 30, tzinfo=UTC)
    assert any("hour repeated" in n for n in r.notes)


def test_kernel_rfc3339_without_offset_and_no_tz_says_so(tmp_path):
    from reliability.ingest.kernel_log import read_kernel_log

    p = tmp_path / "k.log"
    p.write_text(
        "2026-03-08T05:30:00 gpu01 kernel: NVRM: Xid (PCI:0000:9b:00): 79, pid=1\n"
        "2026-03-08T05:30:01Z gpu01 kernel: NVRM: Xid (PCI:0000:9b:00): 48, pid=1\n"
    )
    r = read_kernel_log(p, cluster="c")
    assert _counts(r) == (2, 1, 1)
    assert r.quarantine.item(0, "reason") == (
        "timestamp '2026-03-08T05:30:00' has no UTC offset: pass tz= (--tz)"
    )


def test_dcgm_non_ascii_value_and_newline_host_are_quarantined(tmp_path):
    from reliability.ingest.dcgm import read_dcgm

    p = tmp_path / "d.prom"
    p.write_text(
        'DCGM_FI_DEV_XID_ERRORS{gpu="0",Hostname="gpu07"} \u0667\u0669\n'
        'DCGM_FI_DEV_XID_ERRORS{gpu="0",Hostname="gpu\\n07"} 79\n'
        'DCGM_FI_DEV_XID_ERRORS{gpu="1",Hostname="gpu07"} 48\n'
    )
    r = read_dcgm(p, cluster="c", scraped_at=datetime(2026, 1, 1, tzinfo=UTC))
    assert _counts(r) == (3, 1, 1 + 1)
    assert r.frames["health_events"].select("node", "code").rows() == [("gpu07", "48")]
    assert r.quarantine.select("line_no", "reason").rows() == [
        (1, "value '\u0667\u0669' is not a number (ASCII digits only)"),
        (2, "host label 'gpu\\n07' is not a host name (a control character)"),
    ]


def test_health_csv_time_in_non_ascii_digits_is_not_a_number_or_time(tmp_path):
    from reliability.ingest.health import read_health

    p = tmp_path / "h.csv"
    arabic = "".join(chr(0x660 + int(c)) for c in "1795600000")
    p.write_text(
        "cluster,node,time,source,component,code,severity,device,message\n"
        f"c1,n1,{arabic},sim,gpu,79,critical,,x\n"
        "c1,n2,1795600000,sim,gpu,79,critical,,x\n"
    )
    r = read_health(p)
    assert _counts(r) == (2, 1, 1)
    reason = r.quarantine.item(0, "reason")
    assert reason.startswith("column time: cannot read")
    assert "1990-2200" not in reason


def test_pod_json_lines_repeated_keys_and_non_finite_numbers_are_quarantined(tmp_path):
    from reliability.ingest.pod_log import read_pod_log

    fail = '"time":"2026-01-01T00:00:00Z","event":"component_fail","component_type":"machine"'
    p = tmp_path / "p.jsonl"
    p.write_text(
        '{"time":"2026-01-01T00:00:00Z","event":"healthd","event":"component_fail",'
        '"component_type":"machine","component_id":"h1"}\n'
        f'{{{fail},"component_id":"h2","x":NaN}}\n'
        f'{{{fail},"component_id":"h3","x":1e400}}\n'
        f'{{{fail},"component_id":"h4","time":"2026-01-02T00:00:00Z"}}\n'
        f'{{{fail},"component_id":"h5"}}\n'
    )
    r = read_pod_log(p, cluster="c")
    assert _counts(r) == (5, 1, 4)
    assert r.quarantine.select("line_no", "reason").rows() == [
        (1, "key 'event' given twice in one object (ambiguous)"),
        (2, "NaN is not JSON (not a finite number)"),
        (3, "number 1e400 is not a finite number (too large for a float)"),
        (4, "key 'time' given twice in one object (ambiguous)"),
    ]
    assert r.frames["component_failures"].height == 1


def test_health_jsonl_repeated_key_is_quarantined(tmp_path):
    from reliability.ingest.health import read_health

    rest = '"time":"2026-01-01T00:00:00Z","source":"sim","component":"gpu","code":"79",'
    rest += '"severity":"critical","message":"x"'
    p = tmp_path / "h.jsonl"
    p.write_text(
        f'{{"cluster":"c1","node":"gpu01","node":"gpu02",{rest}}}\n'
        f'{{"cluster":"c1","node":"gpu03",{rest}}}\n'
    )
    r = read_health(p)
    assert _counts(r) == (2, 1, 1)
    assert r.quarantine.select("line_no", "reason").rows() == [
        (1, "key 'node' given twice in one object (ambiguous)")
    ]
    assert r.frames["health_events"].get_column("node").to_list() == ["gpu03"]


def test_pod_second_failure_without_repair_is_quarantined(tmp_path):
    from reliability.ingest.pod_log import read_pod_log

    def ev(t, event):
        return (
            f'{{"time":"2026-01-01T0{t}:00:00Z","event":"{event}",'
            '"component_type":"machine","component_id":"h1"}\n'
        )

    p = tmp_path / "p.jsonl"
    p.write_text(
        ev(0, "component_fail")
        + ev(1, "component_fail")
        + ev(2, "component_repair")
        + ev(3, "component_fail")
    )
    r = read_pod_log(p, cluster="c")
    assert _counts(r) == (4, 3, 1)
    assert r.quarantine.select("line_no", "reason").rows() == [
        (2, "machine h1 already failed at line 1 (no repair in between)")
    ]
    cf = r.frames["component_failures"]
    assert cf.select("failed_at", "repaired_at").rows() == [
        (datetime(2026, 1, 1, 0, tzinfo=UTC), datetime(2026, 1, 1, 2, tzinfo=UTC)),
        (datetime(2026, 1, 1, 3, tzinfo=UTC), None),
    ]
    assert r.frames["node_states"].height == 2


_LANL_HEAD = (
    "System,machine type,nodes,procstot,procsinnode,nodenum,nodenumz,node install,node prod,"
    "node decom,fru type,mem,cputype,memtype,num intercon,purpose,Prob Started,Prob Fixed,"
    "Down Time,Facilities,Hardware,Human Error,Network,Undetermined,Software,Same Event\n"
)


def _lanl_row(node, started, fixed, down):
    return (
        f"2,cluster,49,6152,80,{node},{node},5-Apr,5-Jun,current,part,80,1,1,0,graphics.fe,"
        f"{started},{fixed},{down},,Graphics Accel Hdwr,,,,,No\n"
    )


def test_lanl_down_time_contradicting_the_interval_is_noted(tmp_path):
    from reliability.ingest.lanl import read_lanl

    p = tmp_path / "lanl.csv"
    p.write_text(
        _LANL_HEAD
        + _lanl_row(0, "6/21/2005 10:54", "6/21/2005 11:00", 6)
        + _lanl_row(1, "6/21/2005 10:54", "6/21/2005 11:00", 6000)
        + _lanl_row(2, "6/21/2005 10:54", "6/21/2005 11:00", 5)  # rounding: fine
    )
    r = read_lanl(p)
    assert _counts(r) == (3, 3, 0)
    down = [n for n in r.notes if "Down Time" in n]
    assert len(down) == 1
    assert down[0].startswith("1 record(s) give a Down Time")
    assert "(lines 3)" in down[0]


def test_lanl_time_in_non_ascii_digits_is_quarantined(tmp_path):
    from reliability.ingest.lanl import read_lanl

    p = tmp_path / "lanl.csv"
    p.write_text(
        _LANL_HEAD
        + _lanl_row(0, "6/21/200\u0665 10:54", "6/21/2005 11:00", 6)
        + _lanl_row(1, "6/21/2005 10:54", "6/21/2005 11:00", 6)
    )
    r = read_lanl(p)
    assert _counts(r) == (2, 1, 1)
    assert r.quarantine.select("line_no", "reason").rows() == [
        (2, "field Prob Started: '6/21/200\u0665 10:54' is not a number or time (ASCII digits)")
    ]


def test_events_overlapping_intervals_of_one_node_and_state_are_noted(tmp_path):
    p = tmp_path / "e.psv"
    p.write_text(
        _HEAD
        + "c1|n1|2026-01-01T00:00:00|2026-01-01T03:00:00|DOWN|a|root\n"
        + "c1|n1|2026-01-01T02:00:00|2026-01-01T04:00:00|DOWN|b|root\n"
        + "c1|n1|2026-01-01T05:00:00|Unknown|DOWN|c|root\n"
        + "c1|n1|2026-01-01T06:00:00|2026-01-01T07:00:00|DOWN|d|root\n"
        + "c1|n1|2026-01-01T02:30:00|2026-01-01T02:45:00|DRAIN|e|root\n"
    )
    r = read_sacctmgr_events(p, tz="UTC")
    assert _counts(r) == (5, 5, 0)
    assert r.frames["node_states"].height == 5
    notes = [n for n in r.notes if "overlap" in n]
    assert notes == [
        "2 interval(s) overlap an earlier one of the same node and state (lines 3, 5): kept "
        "as printed, so the time they share is in both"
    ]


def test_events_time_in_a_dst_gap_says_so(tmp_path):
    p = tmp_path / "e.psv"
    p.write_text(
        _HEAD
        + "c1|n1|2026-03-08T02:30:00|2026-03-08T04:00:00|DOWN|a|root\n"
        + "c1|n2|2026-03-08T01:30:00|2026-03-08T04:00:00|DOWN|a|root\n"
    )
    r = read_sacctmgr_events(p, tz="America/New_York")
    assert _counts(r) == (2, 1, 1)
    assert r.quarantine.select("line_no", "reason").rows() == [
        (
            2,
            "field TimeStart: cannot read time '2026-03-08T02:30:00': it does not exist in "
            "America/New_York (a daylight-saving gap)",
        )
    ]
