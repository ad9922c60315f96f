"""The LANL failure records 1996-2005 (Schroeder & Gibson, DSN'06): the reader's inventory holds
every node of each system, node MTTF over every node (checked against a count made here from
the CSV with the csv module), and the Weibull shape of the time between failures against the
paper."""

from __future__ import annotations

import csv
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import polars as pl
import pytest

from reliability.ingest import read_lanl
from reliability.ingest.lanl import LANL_NODES_PER_SYSTEM
from reliability.models.failures import node_mttf
from reliability.models.lifetimes import fit_interfailure
from reliability.references import TBF_WEIBULL_SHAPE

CSV = "lanl-failure-1996-2005/LA-UR-05-7318-failure-data-1996-2005.csv"
MONTHS = {m: i for i, m in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep",
                                      "oct", "nov", "dec"], start=1)}  # fmt: skip


@pytest.fixture(scope="module")
def lanl(shared: Path):
    path = shared / CSV
    with path.open(newline="") as fh:
        records = [r for r in csv.DictReader(fh) if any(v.strip() for v in r.values())]
    return path, records, read_lanl(path)


def _prod_month(text: str) -> datetime:
    """``3-Sep`` = September 2003 (the only form the single-phase systems use)."""
    year, month = text.split("-")
    return datetime(2000 + int(year), MONTHS[month.lower()], 1, tzinfo=ZoneInfo("America/Denver"))


def test_every_record_reads(lanl):
    _, records, r = lanl
    assert r.rows_read == len(records) == 23739
    assert r.rows_quarantined == 0
    assert r.frames["component_failures"].height == len(records)


def test_inventory_holds_every_node(lanl):
    """Each system's inventory has the node count of its records' ``nodes`` column, not only
    the nodes that failed (system 12: 512 nodes, 134 of them in the records: node MTTF over
    the failed nodes alone was 3.8x too low)."""
    _, records, r = lanl
    nodes, failed = {}, defaultdict(set)
    for rec in records:
        if rec["nodes"].strip():
            nodes[rec["System"]] = int(rec["nodes"])
        failed[rec["System"]].add(rec["nodenumz"])
    inv = r.frames["inventory"].group_by("cluster").agg(n=pl.len())
    got = {c.removeprefix("lanl-"): n for c, n in inv.iter_rows()}
    for system, count in nodes.items():
        assert got[system] == count, system
        assert LANL_NODES_PER_SYSTEM[system] == count
    assert len(failed["12"]) == 134
    assert max(nodes[s] / len(failed[s]) for s in nodes) == pytest.approx(512 / 134)


def test_node_mttf_over_every_node(lanl):
    """For the systems with one production phase still in service at the end, node-days =
    nodes x (end of records − production month) and node MTTF = node-days / failures,
    computed here from the CSV; the reader + node_mttf agree to rounding."""
    _, records, r = lanl
    tz = ZoneInfo("America/Denver")
    end = max(
        datetime.strptime(rec[c].strip(), "%m/%d/%Y %H:%M").replace(tzinfo=tz)
        for rec in records for c in ("Prob Started", "Prob Fixed")
    )  # fmt: skip
    phases = defaultdict(set)
    count, nodes = defaultdict(int), {}
    for rec in records:
        phases[rec["System"]].add((rec["node prod"], rec["node decom"]))
        count[rec["System"]] += 1
        if rec["nodes"].strip():
            nodes[rec["System"]] = int(rec["nodes"])
    single = {s: next(iter(p))[0] for s, p in phases.items() if len(p) == 1 and next(iter(p))[1] == "current"
              and s in nodes and "-" in next(iter(p))[0] and next(iter(p))[0][0].isdigit()}  # fmt: skip
    assert len(single) >= 10
    assert r.observed_until == end
    m = node_mttf(r.frames["component_failures"], r.frames["inventory"], end=end)
    by = {
        c.removeprefix("lanl-"): row
        for c, *_ in m.iter_rows()
        for row in [m.filter(pl.col("cluster") == c).row(0, named=True)]
    }
    for system, prod in single.items():
        # aware datetimes of one zone subtract as wall clocks (no DST): subtract in UTC
        span = end.astimezone(ZoneInfo("UTC")) - _prod_month(prod).astimezone(ZoneInfo("UTC"))
        node_days = nodes[system] * span.total_seconds() / 86400
        row = by[system]
        assert row["components"] == nodes[system]
        assert row["component_days"] == pytest.approx(node_days, rel=1e-9), system
        assert row["mttf_days"] == pytest.approx(node_days / count[system], rel=1e-9), system


@pytest.mark.slow  # 16 s
def test_time_between_failures_matches_dsn06(lanl):
    """DSN'06: the time between failures is Weibull with a decreasing hazard, shape about
    0.7-0.8 (:data:`reliability.references.TBF_WEIBULL_SHAPE`). The paper looks at system 20
    in late production, after its first production year (an early phase with its own failure
    pattern): from 2003 on, the system-wide shape is within 0.7-0.8 and the median of the
    per-node shapes within ±0.1 of that range; over all years, every system with 1,000+
    failures shows a decreasing hazard system-wide."""
    _, _, r = lanl
    cf, inv = r.frames["component_failures"], r.frames["inventory"]
    lo, hi = TBF_WEIBULL_SHAPE.value
    late = cf.filter(
        (pl.col("cluster") == "lanl-20")
        & (pl.col("failed_at") >= datetime(2003, 1, 1, tzinfo=ZoneInfo("UTC")))
    )
    f = fit_interfailure(late, None, observation_end=r.observed_until)
    s = f.systems.row(0, named=True)
    assert lo <= s["system_shape"] <= hi, s
    assert lo - 0.1 <= f.nodes["shape"].median() <= hi + 0.1
    everything = fit_interfailure(cf, inv, observation_end=r.observed_until)
    big = everything.systems.filter(pl.col("failures") >= 1000)
    assert big.height >= 5
    assert (big["system_shape_high"] < 1.0).all(), big.select(
        "system", "system_shape", "system_shape_high"
    )
    text = str(everything)
    assert "decreasing hazard" in text
    assert "nan" not in text


def test_dataset_summary_counts_the_failure_records(lanl, tmp_path):
    """`reliability info` on LANL data: its systems, nodes and time span (was "clusters: -",
    "nodes: 0", "time span: empty" for 23,739 failures)."""
    from reliability import Dataset

    path, records, r = lanl
    ds = Dataset(tmp_path / "ds")
    ds.ingest("lanl", path)
    s = ds.summary()
    # each system's "nodes" column; system 17 has none: the nodes its records name
    nodes = {rec["System"]: int(rec["nodes"]) for rec in records if rec["nodes"].strip()}
    named = {(rec["System"], rec["nodenumz"]) for rec in records if rec["System"] not in nodes}
    assert s.clusters == sorted(f"lanl-{system}" for system in {rec["System"] for rec in records})
    assert s.n_nodes == sum(nodes.values()) + len(named) == 5007  # ids repeat across systems
    cf = r.frames["component_failures"]
    assert s.first == cf.get_column("failed_at").min()
    assert s.last == max(cf.get_column("failed_at").max(), cf.get_column("repaired_at").max())


def test_the_two_readings_of_never_failed_nodes_are_explicit(lanl):
    """Issue 40: system 12's 378 never-failed nodes get the nearest recorded node's dates by
    default, or the system's whole span with unrecorded='system'; node MTTF moves from about
    832 to about 1,409 days, and the reader says so with both node-day totals. Independent
    check of the 'system' reading: every unrecorded node of system 12 serves from the system's
    earliest production month (from the CSV) to the end of the records."""
    from reliability.models.failures import node_mttf

    path, records, near = lanl
    note = next(n for n in near.notes if n.startswith("system 12: 378 nodes without a record"))
    assert "unrecorded='nearest'" in note
    whole = read_lanl(path, unrecorded="system")
    m = {
        r: node_mttf(x.frames["component_failures"], x.frames["inventory"])
        .filter(pl.col("cluster") == "lanl-12")
        .item(0, "mttf_days")
        for r, x in (("nearest", near), ("system", whole))
    }
    assert m["nearest"] == pytest.approx(832, rel=0.01)
    assert m["system"] / m["nearest"] == pytest.approx(1.69, rel=0.02)
    first = min(_prod_month(r["node prod"]) for r in records if r["System"] == "12")
    recorded = {r["nodenumz"] for r in records if r["System"] == "12"}
    inv = whole.frames["inventory"].filter(
        (pl.col("cluster") == "lanl-12") & ~pl.col("component_id").is_in(list(recorded))
    )
    assert inv.height == 378
    assert inv["in_service"].unique().to_list() == [first.astimezone(UTC)]
    with pytest.raises(Exception, match="unrecorded='both'"):
        read_lanl(path, unrecorded="both")
