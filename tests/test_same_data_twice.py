"""The same records read twice in different time zones are refused, and a zone mismatch
between job records and node states is said (issue 37).

Real Slurm 22.05 output (run 1): the same accounting printed with epoch times and with
TZ=America/New_York. Read the New York file as UTC and every job moves 5 h: refused. Read it
in its own zone and it is the same records: merged, nothing doubled.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from reliability import Dataset, attribute_failures
from reliability.attribution import zone_mismatch_note
from reliability.errors import IngestError
from reliability.parallel import Executor

EPOCH = "sacct_broad_duplicates_epoch.psv"
NEW_YORK = "sacct_broad_duplicates_TZ_America_New_York.psv"


def test_the_same_export_in_a_wrong_zone_is_refused(run1: Path, tmp_path: Path) -> None:
    ds = Dataset(tmp_path / "ds")
    ds.ingest("slurm", [run1 / EPOCH])
    n = ds.jobs.height
    with pytest.raises(IngestError) as e:
        ds.ingest("slurm", [run1 / NEW_YORK], tz="UTC")
    msg = str(e.value)
    assert f"as {EPOCH!r}" in msg
    assert "shifted by -5 h" in msg  # 20:28 New York read as 20:28 UTC is 5 h early
    assert "this one read as local times in 'UTC', that one as epoch times" in msg
    assert ds.jobs.height == n
    assert len(ds.inputs) == 1
    # in its own zone it is the same records: merged, not doubled, not refused
    ds.ingest("slurm", [run1 / NEW_YORK], tz="America/New_York")
    assert ds.jobs.height == n


def test_refused_in_a_partitioned_ingest_too(run1: Path, tmp_path: Path) -> None:
    ds = Dataset(tmp_path / "ds")
    ex = Executor("serial")
    with pytest.raises(IngestError, match=r"1 of 2 input\(s\) refused .*shifted by -5 h"):
        ds.ingest("slurm", [run1 / EPOCH, run1 / NEW_YORK], tz="UTC", executor=ex)
    # the first is committed alone, the copy left no part behind
    assert [i["name"] for i in ds.inputs] == [EPOCH]
    assert len(list((tmp_path / "ds" / "jobs").iterdir())) == 1


def _relabelled(src: Path, dst: Path, cluster: str) -> Path:
    lines = src.read_text().splitlines()
    at = lines[0].split("|").index("Cluster")
    out = [lines[0]]
    for line in lines[1:]:
        f = line.split("|")
        if len(f) > at:  # (a record; not a blank line)
            f[at] = cluster
        out.append("|".join(f))
    dst.write_text("\n".join(out) + "\n")
    return dst


def test_a_copy_is_found_among_other_clusters_inputs(run1: Path, tmp_path: Path) -> None:
    """Only the new input's clusters' rows are compared (a fleet's other clusters overlap it
    in time): the copy is still found, and named by its own cluster's input."""
    ds = Dataset(tmp_path / "ds")
    other = _relabelled(run1 / EPOCH, tmp_path / "other_epoch.psv", "other")
    ds.ingest("slurm", [other])
    ds.ingest("slurm", [run1 / EPOCH])
    with pytest.raises(IngestError, match=rf"as {EPOCH!r}.*shifted by -5 h"):
        ds.ingest("slurm", [run1 / NEW_YORK], tz="UTC")
    ny_other = _relabelled(run1 / NEW_YORK, tmp_path / "other_ny.psv", "other")
    with pytest.raises(IngestError, match=r"as 'other_epoch.psv'.*shifted by -5 h"):
        ds.ingest("slurm", [ny_other], tz="UTC")
    assert len(ds.inputs) == 2


def _events(rows: list[tuple[str, datetime, datetime, str]], shift_h: float = 0.0) -> str:
    f = "%Y-%m-%dT%H:%M:%S"
    d = timedelta(hours=shift_h)
    body = "".join(
        f"rsc|{node}|{(s + d):{f}}|{(e + d):{f}}|{state}|test reason|root(0)\n"
        for node, s, e, state in rows
    )
    return "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User\n" + body


T = datetime(2025, 1, 15, 12, tzinfo=UTC)
STATES = [(f"n{i:02d}", T + timedelta(hours=i), T + timedelta(hours=i, minutes=30), "DOWN")
          for i in range(6)]  # fmt: skip


def test_node_state_copy_in_another_zone_is_refused(tmp_path: Path) -> None:
    a, b = tmp_path / "events-utc.psv", tmp_path / "events-local.psv"
    a.write_text(_events(STATES))
    b.write_text(_events(STATES, shift_h=-8))  # the same history printed in Los Angeles time
    ds = Dataset(tmp_path / "ds")
    ds.ingest("events", [a], tz="UTC")
    with pytest.raises(IngestError, match=r"same 6 node-state intervals .* shifted by -8 h"):
        ds.ingest("events", [b], tz="UTC")
    ds.ingest("events", [b], tz="America/Los_Angeles")  # right zone: the same intervals
    assert ds.node_states.height == 6


def test_overlapping_exports_of_one_zone_are_not_a_copy(tmp_path: Path) -> None:
    a, b = tmp_path / "first.psv", tmp_path / "second.psv"
    a.write_text(_events(STATES[:4]))
    b.write_text(_events(STATES[2:]))  # shares two intervals exactly
    ds = Dataset(tmp_path / "ds")
    ds.ingest("events", [a, b], tz="UTC")
    assert ds.node_states.height == 6


def _sacct(rows: list[tuple[str, str, datetime, datetime]]) -> str:
    head = ("JobID|JobName|JobIDRaw|Cluster|Partition|Account|User|QOS|Priority|State|ExitCode|"
            "Submit|Start|End|Timelimit|NNodes|AllocTRES|ReqTRES|NodeList")  # fmt: skip
    tres = "cpu=8,gres/gpu=8,node=1"
    lines = [
        f"{j}|t|{j}|rsc|gpu|a|u|normal|1|NODE_FAIL|0:0|{int(s.timestamp())}|{int(s.timestamp())}|"
        f"{int(e.timestamp())}|1-00:00:00|1|{tres}|{tres}|{node}"
        for j, node, s, e in rows
    ]
    return "\n".join([head, *lines]) + "\n"


def test_node_fails_that_find_their_node_a_zone_away_get_a_note(tmp_path: Path) -> None:
    # each NODE_FAIL ends when its node goes DOWN; the events, printed in Los Angeles time,
    # are read as UTC: every DOWN is 8 h earlier than its NODE_FAIL
    jobs = [(str(100 + i), n, s - timedelta(hours=3), s) for i, (n, s, _, _) in enumerate(STATES)]
    sacct, events = tmp_path / "sacct.psv", tmp_path / "events.psv"
    sacct.write_text(_sacct(jobs))
    events.write_text(_events(STATES, shift_h=-8))
    ds = Dataset(tmp_path / "ds")
    ds.ingest("slurm", [sacct])
    ds.ingest("events", [events], tz="UTC")
    a = attribute_failures(ds)
    assert a.get_column("culprit_node").null_count() == 6
    note = zone_mismatch_note(a, ds.node_states)
    assert note is not None
    assert note.startswith("6 NODE_FAIL attempts have no node-state change near their end, but 6")
    assert "exactly 8 h earlier" in note
    assert "tz=" in note
    # read in its zone, each NODE_FAIL finds its node: no note
    ds.ingest("events", [events], tz="America/Los_Angeles", replace=True)
    a = attribute_failures(ds)
    assert a.filter(pl.col("culprit_node").is_null()).height == 0
    assert zone_mismatch_note(a, ds.node_states) is None


def test_in_a_pipeline_the_refusal_names_this_input_key_and_the_earlier_input_by_name(
    run1: Path, tmp_path: Path
) -> None:
    """inputs[1] repeats inputs[0] with a wrong tz: the message asks for inputs[1].tz and names
    the earlier input's zone as a zone, not as an option of inputs[1] (the cold tester found
    the earlier input's tz spelled as this input's key)."""
    from reliability.pipeline import PipelineError, run_pipeline

    p = tmp_path / "p.toml"
    p.write_text(
        '[pipeline]\nname = "t"\n'
        f'[[inputs]]\nkind = "files"\nreader = "slurm"\npaths = ["{run1 / EPOCH}"]\n'
        f'[[inputs]]\nkind = "files"\nreader = "slurm"\npaths = ["{run1 / NEW_YORK}"]\n'
        'tz = "UTC"\n'
    )
    with pytest.raises(PipelineError) as e:
        run_pipeline(p, out=tmp_path / "out", report=False)
    msg = str(e.value)
    assert "inputs[1]" in msg
    assert "inputs[0]" not in msg
    assert "this one read as local times in 'UTC', that one as epoch times" in msg
    assert f"as {EPOCH!r}" in msg
    assert "tz=" not in msg  # Python's spelling, respelled for the pipeline
