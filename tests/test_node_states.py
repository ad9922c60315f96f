import polars as pl
import pytest

from reliability.errors import IngestError
from reliability.ingest import read_node_snapshot, read_sacctmgr_events
from reliability.ingest.slurm_nodes import reduce_state


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
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (9, 9, 0)
    ns = r.tables["node_states"]
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
    assert r.tables["node_states"].height == 0
    with pytest.raises(IngestError, match="empty file"):
        read_sacctmgr_events(run1 / "sacctmgr_event_all_AS_REQUESTED.psv", tz="UTC")
    with pytest.raises(IngestError, match="field 'TimeStart'"):
        read_sacctmgr_events(run1 / "sacctmgr_tres.psv", tz="UTC")  # not an event export


@pytest.mark.parametrize("name", ["scontrol_show_node.txt", "scontrol_show_node_oneliner.txt"])
def test_scontrol_real(run1, name):
    r = read_node_snapshot(run1 / name, cluster="testclu", tz="UTC")
    assert (r.rows_read, r.rows_kept) == (10, 10)
    ns = r.tables["node_states"]
    assert ns.select("node", pl.col("state").cast(pl.String), "reason", "user").rows() == [
        ("node08", "DRAIN", "GPU ECC errors <xid 79> on gpu:1", "root")
    ]


def test_scontrol_inflight_has_down_node(shared):
    r = read_node_snapshot(shared / "slurm-real-run1/inflight_snapshot/scontrol_show_node.txt",
                           cluster="testclu", tz="UTC")  # fmt: skip
    assert sorted(r.tables["node_states"].get_column("node")) == ["node03", "node08"]


def test_scontrol_h100_excerpt(shared):
    r = read_node_snapshot(shared / "slurm-node-state-excerpts/scontrol_show_node_h100_idle_drain.txt",
                           cluster="c", tz="UTC")  # fmt: skip
    row = r.tables["node_states"].row(0, named=True)
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
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (2, 1, 1)
    assert r.tables["node_states"].item(0, "node") == "ip-10-0-1-23"
    assert "recorded as DRAIN" in r.notes[-1]


def test_sinfo_with_state_column(tmp_path):
    p = tmp_path / "sinfo.txt"
    p.write_text(
        "REASON USER TIMESTAMP NODELIST STATE\nbad psu root 2025-01-01T00:00:00 n[1-3] down*\n"
    )
    ns = read_node_snapshot(p, cluster="c", tz="UTC").tables["node_states"]
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
    ns = r.tables["node_states"]
    assert r.rows_read == r.rows_kept == 8
    # node03 was DOWN (open) when this snapshot was taken; it is closed in the final one
    assert (
        ns.filter((pl.col("node") == "node03") & (pl.col("state") == "DOWN")).item(0, "end") is None
    )
