import polars as pl
import pytest

from reliability.errors import IngestError
from reliability.ingest import read_node_snapshot, read_sacctmgr_events
from reliability.ingest.slurm_nodes import reduce_state


def _data_lines(path) -> int:
    """Records of a one-record-per-line export with a header, counted here."""
    return sum(1 for ln in path.read_text().splitlines() if ln.strip()) - 1


@pytest.mark.parametrize(
    ("flags", "state"),
    [("IDLE+DRAIN", "DRAIN"), ("DOWN*+DRAIN", "DOWN"), ("MIXED+DRAIN", "DRAIN"), ("DOWN*", "DOWN"),
     ("FAIL", "FAIL"), ("IDLE", None), ("ALLOCATED+MAINT", "MAINT"), ("drained", "DRAIN")],
)  # fmt: skip
def test_reduce_state(flags, state):
    assert reduce_state(flags) == state


def test_reduce_state_unknown_flag():
    with pytest.raises(ValueError, match="WIBBLE"):
        reduce_state("IDLE+WIBBLE")


@pytest.mark.parametrize("name", ["sacctmgr_event.psv", "sacctmgr_event_fmt.psv", "sacctmgr_event_wide.psv",
                                  "sacctmgr_event_all_time.psv"])  # fmt: skip
def test_sacctmgr_events_real(run1, name):
    r = read_sacctmgr_events(run1 / name, tz="UTC")
    assert r.rows_read == r.rows_kept == _data_lines(run1 / name) == 9
    ns = r.frames["node_states"]
    # 8 node events; the cluster-level "Cluster Registered TRES" event gives none
    assert ns.height == 8
    assert any("cluster-level" in n for n in r.notes)
    rows = {(n, s): (reason, user, end) for n, s, reason, user, end in
            ns.select("node", pl.col("state").cast(pl.String), "reason", "user", "end").iter_rows()}  # fmt: skip
    # a '|' inside the reason is kept (delimiter collision repaired)
    assert (
        rows[("node02", "DRAIN")][0] == "maintenance: bad DIMM | ticket #4711, cc <ops@example.org>"
    )
    assert rows[("node04", "DOWN")][0] == "node04: kernel panic | hung task"
    # DOWN* "Not responding" -> DOWN, user "slurm(64030)" -> "slurm"
    assert rows[("node10", "DOWN")][:2] == ("Not responding", "slurm")
    # the still-open drain (TimeEnd Unknown) has no end; non-ASCII reasons kept
    assert rows[("node08", "DRAIN")][2] is None
    assert ns.filter(pl.col("reason").str.contains("Lüfter")).height == 1


def test_sacctmgr_cluster_only_and_empty(run1):
    r = read_sacctmgr_events(run1 / "sacctmgr_event_cluster.psv", tz="UTC")
    assert r.rows_read == 1
    assert r.frames["node_states"].height == 0
    with pytest.raises(IngestError, match="empty file"):
        read_sacctmgr_events(run1 / "sacctmgr_event_all_AS_REQUESTED.psv", tz="UTC")
    with pytest.raises(IngestError, match=r"field 'TimeStart'.*other than `sacctmgr show event`"):
        read_sacctmgr_events(run1 / "sacctmgr_tres.psv", tz="UTC")  # not an event export


@pytest.mark.parametrize("name", ["scontrol_show_node.txt", "scontrol_show_node_oneliner.txt"])
def test_scontrol_real(run1, name):
    r = read_node_snapshot(run1 / name, cluster="testclu", tz="UTC")
    # one record per node: count the NodeName= lines here
    nodes = sum(
        ln.lstrip().startswith("NodeName=") for ln in (run1 / name).read_text().splitlines()
    )
    assert r.rows_read == r.rows_kept == nodes == 10
    ns = r.frames["node_states"]
    assert ns.select("node", pl.col("state").cast(pl.String), "reason", "user").rows() == [
        ("node08", "DRAIN", "GPU ECC errors <xid 79> on gpu:1", "root")
    ]


def test_scontrol_inflight_has_down_node(shared):
    r = read_node_snapshot(shared / "slurm-real-run1/inflight_snapshot/scontrol_show_node.txt",
                           cluster="testclu", tz="UTC")  # fmt: skip
    assert sorted(r.frames["node_states"].get_column("node")) == ["node03", "node08"]


def test_scontrol_h100_excerpt(shared):
    r = read_node_snapshot(shared / "slurm-node-state-excerpts/scontrol_show_node_h100_idle_drain.txt",
                           cluster="c", tz="UTC")  # fmt: skip
    row = r.frames["node_states"].row(0, named=True)
    assert (row["node"], row["state"], row["reason"], row["user"]) == (
        "localhost",
        "DRAIN",
        "Kill task failed",
        "root",
    )
    assert row["start"].isoformat() == "2024-08-08T19:12:57+00:00"


def test_sinfo_reasons(shared):
    r = read_node_snapshot(
        shared / "slurm-node-state-excerpts/sinfo_R_aws_issue185.txt", cluster="c", tz="UTC"
    )
    # header glued to the command; a journal line that is not a sinfo row is quarantined
    path = shared / "slurm-node-state-excerpts/sinfo_R_aws_issue185.txt"
    journal = [i for i, ln in enumerate(path.read_text().splitlines(), 1) if "slurmd[" in ln]
    assert r.rows_read == _data_lines(path)
    assert r.quarantine["line_no"].to_list() == journal
    assert r.frames["node_states"].item(0, "node") == "ip-10-0-1-23"
    assert "recorded as DRAIN" in r.notes[-1]


def test_sinfo_with_state_column(tmp_path):
    p = tmp_path / "sinfo.txt"
    p.write_text(
        "REASON USER TIMESTAMP NODELIST STATE\nbad psu root 2025-01-01T00:00:00 n[1-3] down*\n"
    )
    ns = read_node_snapshot(p, cluster="c", tz="UTC").frames["node_states"]
    assert ns.get_column("node").to_list() == ["n1", "n2", "n3"]
    assert set(ns.get_column("state").cast(pl.String)) == {"DOWN"}
    assert ns.item(0, "reason") == "bad psu"


def test_node_snapshot_unknown_format(tmp_path):
    p = tmp_path / "x.txt"
    p.write_text("hello\n")
    with pytest.raises(IngestError, match="unknown format"):
        read_node_snapshot(p, cluster="c")


def test_sacctmgr_inflight_has_open_down(shared):
    r = read_sacctmgr_events(
        shared / "slurm-real-run1/inflight_snapshot/sacctmgr_event.psv", tz="UTC"
    )
    ns = r.frames["node_states"]
    path = shared / "slurm-real-run1/inflight_snapshot/sacctmgr_event.psv"
    assert r.rows_read == r.rows_kept == _data_lines(path)
    # node03 was DOWN (open) when this snapshot was taken; it is closed in the final one
    assert (
        ns.filter((pl.col("node") == "node03") & (pl.col("state") == "DOWN")).item(0, "end") is None
    )


def _events(r):
    he = r.frames["health_events"]
    return he.select("node", "time", pl.col("source").cast(pl.String), "code",
                     pl.col("component").cast(pl.String), pl.col("severity").cast(pl.String),
                     "device").rows()  # fmt: skip


def test_drain_reason_becomes_a_health_event_run1(run1):
    """Issue 15: node08 was drained by Slurm with "GPU ECC errors <xid 79> on gpu:1"; that
    reason is a signal (NVIDIA Xid 79: GPU fallen off the bus, a critical GPU fault)."""
    from datetime import UTC, datetime

    # sacctmgr: the event starts at 01:21:54 (TimeStart); no other reason names a signal
    # ("bad DIMM" is an operator's maintenance note, "Not responding", "Prolog error" are not
    # hardware signals)
    r = read_sacctmgr_events(run1 / "sacctmgr_event.psv", tz="UTC")
    t = datetime(2026, 11, 30, 1, 21, 54, tzinfo=UTC)
    assert _events(r) == [("node08", t, "slurm", "79", "gpu", "critical", "gpu:1")]
    assert r.frames["health_events"].item(0, "message").endswith("GPU ECC errors <xid 79> on gpu:1")
    # scontrol: the reason time [root@01:20:57]
    t = datetime(2026, 11, 30, 1, 20, 57, tzinfo=UTC)
    for name in ("scontrol_show_node.txt", "scontrol_show_node_oneliner.txt"):
        r = read_node_snapshot(run1 / name, cluster="testclu", tz="UTC")
        assert _events(r) == [("node08", t, "slurm", "79", "gpu", "critical", "gpu:1")]
    # sinfo -R cuts the reason to 20 characters ("GPU ECC errors <xid "): the Xid number
    # is lost, the ECC signal is not
    r = read_node_snapshot(run1 / "sinfo_R.txt", cluster="testclu", tz="UTC")
    assert _events(r) == [("node08", t, "slurm", "ecc", "gpu_memory", "critical", None)]


@pytest.mark.parametrize(
    ("reason", "code", "component", "device"),
    [("Xid 48", "48", "gpu_memory", None), ("xid=79 on GPU 3", "79", "gpu", "gpu:3"),
     ("GPU fell off the bus", "79", "gpu", None), ("NVLink down gpu7", "nvlink", "nvlink", "gpu:7"),
     ("ECC DBE on 0000:3B:00.0", "ecc_uncorrectable", "gpu_memory", "0000:3b:00"),
     ("high single-bit ECC count", "ecc_correctable", "gpu_memory", None),
     ("SXid 20034 on nvswitch", "SXid20034", "nvlink", None)],
)  # fmt: skip
def test_reason_phrasings(tmp_path, reason, code, component, device):
    """Common phrasings, classified as NVIDIA documents them (Xid 48 double-bit ECC, 79 off
    the bus, SXid 20034 NVSwitch link fault)."""
    p = tmp_path / "sinfo.txt"
    p.write_text(
        f"REASON|USER|TIMESTAMP|NODELIST|STATE\n{reason}|root|2025-01-01T00:00:00|n[1-2]|drained\n"
    )
    r = read_node_snapshot(p, cluster="c", tz="UTC")
    got = r.frames["health_events"].select(
        "node", "code", pl.col("component").cast(pl.String), "device"
    )
    assert got.rows() == [("n1", code, component, device), ("n2", code, component, device)]


@pytest.mark.parametrize("reason", ["Not responding", "Kill task failed", "maxid 5 reached",
                                    "proxied requests", "bad DIMM", "Prolog error"])  # fmt: skip
def test_reasons_without_a_signal(tmp_path, reason):
    p = tmp_path / "sinfo.txt"
    p.write_text(
        f"REASON|USER|TIMESTAMP|NODELIST|STATE\n{reason}|root|2025-01-01T00:00:00|n1|down\n"
    )
    r = read_node_snapshot(p, cluster="c", tz="UTC")
    assert r.frames["health_events"].height == 0
    assert r.frames["node_states"].height == 1


def test_maintenance_reasons_are_not_signals(tmp_path):
    p = tmp_path / "sinfo.txt"
    p.write_text(
        "REASON|USER|TIMESTAMP|NODELIST|STATE\nreplace NVLink bridge|root|2025-01-01T00:00:00|n1|maint\n"
    )
    r = read_node_snapshot(p, cluster="c", tz="UTC")
    assert r.frames["health_events"].height == 0


@pytest.mark.parametrize(
    ("name", "kind", "says"),
    [("sacctmgr_event.txt", "events", r"fixed-width `show event` table.*use --parsable2.*sacctmgr --parsable2 show event Start=.* End=.*Format=Cluster,NodeName,TimeStart,TimeEnd,State,Reason,User"),
     ("sacctmgr_event.txt", "nodes", r"fixed-width `show event` table.*--parsable2"),
     ("sinfo_Nel.txt", "nodes", r"`sinfo -N -l`.*no reason time.*scontrol show node.*--oneliner.*sinfo -R"),
     ("sinfo_Nel.txt", "events", r"`sinfo -N -l`"),
     ("sinfo_default.txt", "nodes", r"plain `sinfo`.*no reasons and no times.*scontrol show node.*sinfo -R"),
     ("sacctmgr_event.psv", "nodes", r"`sacctmgr --parsable2 show event` output: ingest it with `reliability ingest events`"),
     ("scontrol_show_node.txt", "events", r"`scontrol show node` output: ingest it with `reliability ingest nodes`"),
     ("sacct_default.txt", "nodes", r"sacct's fixed-width table.*--parsable2"),
     ("squeue_all.txt", "nodes", r"`squeue` output.*jobs, not node states")],
)  # fmt: skip
def test_refusals_say_what_the_file_is_run1(run1, name, kind, says):
    """Issue 15: refusals name the format and what to export instead (run-1's real files)."""
    reader = read_sacctmgr_events if kind == "events" else read_node_snapshot
    opts = {"tz": "UTC"} if kind == "events" else {"cluster": "testclu", "tz": "UTC"}
    with pytest.raises(IngestError, match=says) as info:
        reader(run1 / name, **opts)
    assert str(info.value).startswith(f"{run1 / name}:1: ")


def test_yaml_and_json_are_refused(tmp_path):
    p = tmp_path / "nodes.yaml"
    p.write_text("---\nmeta:\n  plugin: {}\nnodes:\n- name: n1\n")
    with pytest.raises(IngestError, match="YAML is not read"):
        read_node_snapshot(p, cluster="c", tz="UTC")
    with pytest.raises(IngestError, match="YAML is not read"):
        read_sacctmgr_events(p, tz="UTC")
    p.write_text('{"meta": {}, "nodes": []}\n')
    with pytest.raises(IngestError, match="JSON node/event output is not read"):
        read_node_snapshot(p, cluster="c", tz="UTC")


@pytest.mark.parametrize("reader", ["events", "scontrol", "sinfo"])
def test_option_errors_name_the_option(run1, reader):
    name = {"events": "sacctmgr_event.psv", "scontrol": "scontrol_show_node.txt",
            "sinfo": "sinfo_R.txt"}[reader]  # fmt: skip
    fn = read_sacctmgr_events if reader == "events" else read_node_snapshot
    base = {} if reader == "events" else {"cluster": "testclu"}
    with pytest.raises(IngestError, match=r"unknown time zone 'Mars/Olympus' \(option tz=\)"):
        fn(run1 / name, **base, tz="Mars/Olympus")
    with pytest.raises(IngestError, match="pass tz="):
        fn(run1 / name, **base)
    with pytest.raises(IngestError, match="option cluster="):
        fn(run1 / name, cluster="", tz="UTC")
