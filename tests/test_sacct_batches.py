"""read_sacct expands node lists a batch of records at a time, into a compact form.

The tables (and quarantine, counts, notes) must not depend on the batch size: batches of 1, 7
and the whole input are compared on small fragmented exports (random placement: long, ragged
NodeLists; with bad node lists spread over the file) and on the real samples. The node lists
are checked against an independent row-by-row expansion (:func:`reliability.hostlist.expand`
of the NodeList field read by a bare ``polars.read_csv``), and the Dataset's parts (strings on
disk) against the compact tables cast back. The node budget refuses an input in the user's
terms, counting every name, whichever batch passes it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from reliability import Dataset, hostlist, schema
from reliability.errors import IngestError
from reliability.ingest import read_sacct
from reliability.ingest.sacct import mapped, parse
from reliability.ingest.sacct.reader import (
    MAX_NODE_NAMES_PER_INGEST,
    MAX_NODE_NAMES_PER_INPUT,
    node_budget,
)

ROOT = Path(__file__).resolve().parents[1]


def _bench_stages():
    spec = importlib.util.spec_from_file_location(
        "_bench_stages_for_tests", ROOT / "benchmarks" / "bench_stages.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


#: lines whose node lists are not valid or disagree with NNodes (each quarantined)
_BAD = (
    "r001n[05-03]",  # a descending range
    "r001n[01,01]",  # a host twice
    "r002n[01-02]",  # NNodes says 1
)


@pytest.fixture(scope="module")
def fragmented(tmp_path_factory) -> Path:
    """A 600-attempt fragmented export on 1,024 nodes, with three bad node lists inside."""
    folder = tmp_path_factory.mktemp("frag")
    x = _bench_stages().write_fragmented(folder, 600, seed=11)
    lines = x["sacct"].read_text().splitlines(keepends=True)
    head = lines[0].rstrip("\n").split("|")
    at = head.index("NodeList")
    nn = head.index("NNodes")
    for k, (row, bad) in enumerate(zip((50, 333, 590), _BAD, strict=True)):
        f = lines[row].rstrip("\n").split("|")
        f[at] = bad
        f[nn] = "1" if k == 2 else "2"
        lines[row] = "|".join(f) + "\n"
    x["sacct"].write_text("".join(lines))
    return x["sacct"]


def _read(path: Path, batch: int, monkeypatch, **kw):
    # the records read (and their node lists expanded) at a time, and the node lists expanded
    # at a time within them
    monkeypatch.setattr(mapped, "BATCH_ROWS", batch)
    monkeypatch.setattr(parse, "NODE_BATCH_ROWS", batch)
    return read_sacct(path, **kw)


def _same(a, b) -> None:
    for t in ("jobs", "job_steps"):
        assert_frame_equal(a.frames[t], b.frames[t])
    assert_frame_equal(a.quarantine, b.quarantine)
    assert (a.rows_read, a.rows_kept, a.rows_quarantined) == (
        b.rows_read,
        b.rows_kept,
        b.rows_quarantined,
    )
    assert a.notes == b.notes


def test_batch_size_changes_nothing_on_a_fragmented_export(fragmented, monkeypatch):
    whole = _read(fragmented, 10**9, monkeypatch, tz="UTC")
    assert whole.rows_quarantined == len(_BAD)
    reasons = whole.quarantine.get_column("reason").to_list()
    assert any("not a hostlist" in r or "descend" in r or "range" in r for r in reasons), reasons
    assert any("twice" in r for r in reasons), reasons
    assert any("NNodes: 1 nodes" in r for r in reasons), reasons
    for batch in (1, 7):
        _same(_read(fragmented, batch, monkeypatch, tz="UTC"), whole)


def test_compact_node_lists_are_the_expansion_of_each_nodelist(fragmented, monkeypatch):
    r = _read(fragmented, 7, monkeypatch, tz="UTC")
    jobs = r.frames["jobs"]
    assert jobs.schema["nodes"] == pl.List(pl.Categorical)
    raw = pl.read_csv(fragmented, separator="|", infer_schema=False, quote_char=None)
    bad = set(_BAD)
    want = {
        jid: hostlist.expand(nl)
        for jid, nl in zip(raw["JobIDRaw"], raw["NodeList"], strict=True)
        if nl not in bad
    }
    got = schema.canonical(jobs, "jobs").select("job_id", "nodes")
    assert got.height == len(want)
    assert got.schema["nodes"] == pl.List(pl.String)
    assert {j: n for j, n in got.iter_rows()} == want


def test_the_dataset_writes_the_node_lists_as_strings(fragmented, tmp_path, monkeypatch):
    r = _read(fragmented, 7, monkeypatch, tz="UTC")
    ds = Dataset(tmp_path / "ds")
    [o] = ds.ingest("slurm", fragmented, tz="UTC")
    assert (o.rows_read, o.rows_kept, o.rows_quarantined) == (
        r.rows_read,
        r.rows_kept,
        r.rows_quarantined,
    )
    jobs = Dataset(tmp_path / "ds").jobs
    assert jobs.schema["nodes"] == pl.List(pl.String)
    want = schema.canonical(r.frames["jobs"], "jobs").drop("line_no", strict=False)
    order = ["cluster", "job_id", "attempt"]
    assert_frame_equal(jobs.select(want.columns).sort(order), want.sort(order))


def _real_exports(shared: Path) -> list[Path]:
    run1 = shared / "slurm-real-run1"
    found = sorted(run1.glob("*_snapshot/sacct_*.psv")) + sorted(
        run1.glob("*_snapshot/sacct_default*.txt")
    )
    return found


def test_batch_size_changes_nothing_on_the_real_samples(shared, monkeypatch):
    paths = _real_exports(shared)
    assert len(paths) >= 10
    gc3pie = shared / "slurm-sacct-gc3pie" / "sacct_samples_gc3pie.txt"
    cases = [(p, {"tz": "America/New_York" if "TZ_America" in p.name else "UTC"}) for p in paths]
    gc3_fields = ["JobID", "ExitCode", "State", "NCPUS", "Elapsed", "TotalCPU", "Submit", "Start",
                  "End", "MaxRSS", "MaxVMSize"]  # fmt: skip
    cases.append((gc3pie, {"tz": "Europe/Zurich", "cluster": "gc3", "fields": gc3_fields}))
    read = 0
    for i, (path, kw) in enumerate(cases):
        try:
            whole = _read(path, 10**9, monkeypatch, **kw)
        except IngestError:  # a form read_sacct refuses (e.g. the fixed-width default)
            with pytest.raises(IngestError):
                _read(path, 1, monkeypatch, **kw)
            continue
        read += 1
        # batches of 1 (35 ms a record) on the first export read and gc3pie's; of 7 on all
        for batch in (1, 7) if read == 1 or i == len(cases) - 1 else (7,):
            _same(_read(path, batch, monkeypatch, **kw), whole)
    assert read >= 10


def _names_in(path: Path) -> int:
    """Host names the NodeList fields name, by a row-by-row expansion (0 for a malformed one)."""
    raw = pl.read_csv(path, separator="|", infer_schema=False, quote_char=None)
    total = 0
    for nl in raw["NodeList"].drop_nulls():
        with contextlib.suppress(hostlist.HostlistError):
            total += len(hostlist.expand(nl))
    return total


@pytest.mark.parametrize("batch", [7, 10**9])
def test_the_node_budget_refuses_in_the_users_terms(fragmented, monkeypatch, batch):
    total = _names_in(fragmented)
    monkeypatch.setattr(parse, "NODE_BATCH_ROWS", batch)
    budget = total // 3  # passed in a later batch of 7, or by the whole input at once
    with node_budget(budget, "read_sacct"), pytest.raises(IngestError) as err:
        read_sacct(fragmented, tz="UTC")
    msg = str(err.value)
    n_lines = len(fragmented.read_text().splitlines())
    # one batch of records read: every name is counted
    assert f"NodeList fields name {total:,} host names up to line {n_lines:,}" in msg, msg
    assert f"more than the {budget:,} read_sacct keeps of one input" in msg
    assert "split the export by --starttime/--endtime into at least 4 parts" in msg
    assert f"Dataset.ingest keeps up to {MAX_NODE_NAMES_PER_INGEST:,}" in msg
    # at the budget exactly, the input is read
    with node_budget(total, "read_sacct"):
        assert read_sacct(fragmented, tz="UTC").rows_kept > 0


@pytest.mark.parametrize("batch", [7, 10**9])
def test_the_refusal_counts_names_as_the_budget_does(fragmented, monkeypatch, tmp_path, batch):
    """A node list over the per-job cap, or not a hostlist, is quarantined and holds no names:
    the refusal's count leaves it out (it once printed 100,000,003 more names)."""
    lines = fragmented.read_text().splitlines(keepends=True)
    head = lines[0].rstrip("\n").split("|")
    at, nn = head.index("NodeList"), head.index("NNodes")
    for row, bad in ((20, "r001n[1-99999999]"), (400, "r001n01 r001n02,r001n03")):
        f = lines[row].rstrip("\n").split("|")
        f[at], f[nn] = bad, "2"
        lines[row] = "|".join(f) + "\n"
    odd = tmp_path / "odd.psv"
    odd.write_text("".join(lines))
    # hostlist.expand refuses the first; it reads the second as 2 names (one with a space),
    # which read_sacct quarantines as "not a hostlist": neither holds a name
    total = _names_in(odd) - len(hostlist.expand("r001n01 r001n02,r001n03"))
    monkeypatch.setattr(parse, "NODE_BATCH_ROWS", batch)
    with node_budget(total // 3, "read_sacct"), pytest.raises(IngestError) as err:
        read_sacct(odd, tz="UTC")
    assert f"NodeList fields name {total:,} host names up to line {len(lines):,}" in str(err.value)


def test_the_budget_is_passed_in_a_later_batch_of_records(fragmented, monkeypatch):
    """Read 100 records at a time: refused at the batch that passes the budget, naming the
    names of the records up to its last line (the rest of the input is not read)."""
    monkeypatch.setattr(mapped, "BATCH_ROWS", 100)
    total = _names_in(fragmented)
    budget = total // 3
    with node_budget(budget, "read_sacct"), pytest.raises(IngestError) as err:
        read_sacct(fragmented, tz="UTC")
    msg = str(err.value)
    m = re.search(r"name ([\d,]+) host names up to line ([\d,]+)", msg)
    assert m, msg
    names, line = (int(g.replace(",", "")) for g in m.groups())
    lines = fragmented.read_text().splitlines(keepends=True)
    head = lines[0]
    assert 1 < line < len(lines)
    part = fragmented.with_name("upto.psv")
    part.write_text("".join([head, *lines[1:line]]))
    assert names == _names_in(part)
    # the batches before it were within the budget
    assert names - _batch_names(lines, line) <= budget < names


def _batch_names(lines: list[str], line: int) -> int:
    """Names of the last batch of 100 records up to ``line`` (row-by-row expansion)."""
    head = lines[0].rstrip("\n").split("|")
    at = head.index("NodeList")
    total = 0
    for raw in lines[max(1, line - 100) : line]:
        with contextlib.suppress(hostlist.HostlistError):
            total += len(hostlist.expand(raw.rstrip("\n").split("|")[at]))
    return total


def test_dataset_ingest_has_its_own_larger_budget(fragmented, tmp_path, monkeypatch):
    import reliability.store.inputs as inputs

    assert MAX_NODE_NAMES_PER_INGEST >= 4 * MAX_NODE_NAMES_PER_INPUT
    total = _names_in(fragmented)
    # a read_sacct budget below the input does not limit Dataset.ingest
    with node_budget(total - 1, "read_sacct"):
        [o] = Dataset(tmp_path / "a").ingest("slurm", fragmented, tz="UTC")
    assert o.status == "ingested"
    monkeypatch.setattr(inputs, "MAX_NODE_NAMES_PER_INGEST", total - 1)
    ds = Dataset(tmp_path / "b")
    with pytest.raises(IngestError, match=f"more than the {total - 1:,} Dataset.ingest keeps"):
        ds.ingest("slurm", fragmented, tz="UTC")
    assert ds.inputs == []
    assert not list((tmp_path / "b").rglob("part-*.parquet"))


def test_write_fragmented_takes_the_fleet_and_the_start(tmp_path):
    from datetime import UTC

    x = _bench_stages().write_fragmented(
        tmp_path, 200, seed=1, n_nodes=64, start=datetime(2020, 3, 1, tzinfo=UTC)
    )
    raw = pl.read_csv(x["sacct"], separator="|", infer_schema=False, quote_char=None)
    names = {n for nl in raw["NodeList"] for n in hostlist.expand(nl)}
    assert x["n_nodes"] == 64
    assert len(names) <= 64
    assert raw["Start"].min() >= "2020-03-01T00:00:00"
    # 56 days per 10 attempts per node
    assert x["end"] == datetime(2020, 3, 1, tzinfo=UTC) + timedelta(days=56 * 200 / (10 * 64))
