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
    assert r.tables["node_states"].height == 2


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
    ns = r.tables["node_states"].sort("node")
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
    assert r.tables["node_states"].height == 0
