import json
from datetime import UTC, datetime

import polars as pl
import pytest

from reliability import SchemaError, schema, validate
from reliability.errors import IngestError
from reliability.ingest import read_health


def test_csv_events(tmp_path):
    header = "cluster,node,time,source,component,code,severity,device,message"
    rows = [  # (record text, kept?)
        ('c1,n1,2025-01-01T00:00:00Z,ticket,dimm,T-1,critical,,"bad DIMM, replaced"', True),
        ('c1,n2,2025-01-01 01:00:00+02:00,health_check,gpu,79,critical,0000:1b:00,"fell off\nthe bus"', True),
        ("c1,n3,notatime,sim,gpu,1,critical,,x", False),
        ("c1,n4,2025-01-01T00:00:00Z,sim,flux_capacitor,1,critical,,x", False),
        (",n5,1700000000,sim,gpu,1,info,,x", True),
        ("c1,n6,2025-01-01T00:00:00Z,sim,gpu,1", False),
    ]  # fmt: skip
    p = tmp_path / "ev.csv"
    p.write_text("\n".join([header, *(r for r, _ in rows)]) + "\n")
    r = read_health(p, cluster="fallback")
    assert r.rows_read == len(rows)
    assert r.rows_kept == sum(ok for _, ok in rows)
    he = r.frames["health_events"]
    assert he.get_column("node").to_list() == ["n1", "n2", "n5"]
    assert he.item(1, "time") == datetime(2024, 12, 31, 23, tzinfo=UTC)
    assert he.item(1, "message") == "fell off\nthe bus"
    assert he.item(2, "cluster") == "fallback"
    reasons = dict(zip(r.quarantine["line_no"], r.quarantine["reason"], strict=True))
    assert "column time" in reasons[5]
    assert "allowed: gpu" in reasons[6]
    assert "6 fields, expected 9" in reasons[8]


def test_csv_stray_quote_takes_only_its_own_row(tmp_path):
    """Issue 16: a stray quote swallowed the rest of the file (989 of 1,000 rows vanished)."""
    header = "cluster,node,time,source,component,code,severity,device,message"
    rows = [f"c1,n{i},2025-01-01T00:00:00Z,sim,gpu,1,info,,msg {i}" for i in range(1000)]
    rows[10] = 'c1,n10,2025-01-01T00:00:00Z,sim,gpu,1,info,,"msg 10'
    p = tmp_path / "h.csv"
    p.write_text("\n".join([header, *rows]) + "\n")
    r = read_health(p)
    assert r.rows_read == 1000
    assert r.quarantine.select("line_no", "raw").rows() == [(12, rows[10])]
    assert "unterminated quote" in r.quarantine.item(0, "reason")
    assert r.frames["health_events"].get_column("node").to_list() == [
        f"n{i}" for i in range(1000) if i != 10
    ]


def test_csv_quoted_field_over_lines_keeps_blank_lines(tmp_path):
    p = tmp_path / "h.csv"
    msg = "line one\n\nline three, after a blank line"
    p.write_text(
        "cluster,node,time,source,component,code,severity,device,message\n\n"
        f'c1,n1,2025-01-01T00:00:00Z,sim,gpu,1,info,,"{msg}"\n\nc1,n2,2025-01-01T00:00:00Z,sim,gpu,1,info,,x\n'
    )
    r = read_health(p)
    assert r.rows_read == 2
    assert r.frames["health_events"].get_column("message").to_list() == [msg, "x"]


def test_jsonl_failures_and_inventory(tmp_path):
    p = tmp_path / "f.jsonl"
    rows = [
        {"cluster": "pod", "component_type": "ocs", "component_id": "ocs-3", "failed_at": "2025-01-01T00:00:00Z",
         "repaired_at": "2025-01-01T04:00:00Z"},
        {"cluster": "pod", "component_type": "machine", "component_id": "h7", "failed_at": "2025-01-02T00:00:00Z"},
        {"cluster": "pod", "component_type": "machine", "component_id": "h8", "failed_at": "2025-01-02T00:00:00Z",
         "repaired_at": "2025-01-01T00:00:00Z"},
    ]  # fmt: skip
    p.write_text("\n".join(json.dumps(x) for x in rows) + "\n{not json\n")
    r = read_health(p)
    assert list(r.frames) == ["component_failures"]
    # four records: three objects (one with repaired_at before failed_at) and a broken line
    assert (r.rows_read, r.rows_kept) == (len(rows) + 1, len(rows) - 1)
    assert sorted(r.quarantine["reason"].to_list())[0].startswith("not valid JSON")
    assert any("repaired_at is before failed_at" in x for x in r.quarantine["reason"])
    inv = tmp_path / "inv.csv"
    inv.write_text(
        "cluster,component_type,component_id,in_service,out_of_service\npod,machine,h1,2025-01-01T00:00:00Z,\n"
    )
    assert read_health(inv).frames["inventory"].height == 1


def test_naive_times_need_tz(tmp_path):
    p = tmp_path / "ev.csv"
    p.write_text(
        "cluster,node,time,source,component,code,severity,device,message\nc,n,2025-01-01T00:00:00,sim,gpu,1,info,,x\n"
    )
    with pytest.raises(IngestError, match="tz="):
        read_health(p)
    assert read_health(p, tz="Asia/Tokyo").frames["health_events"].item(0, "time") == datetime(
        2024, 12, 31, 15, tzinfo=UTC
    )


def test_extra_or_missing_columns_are_errors(tmp_path):
    p = tmp_path / "ev.csv"
    p.write_text("node,time,component,colour\nn,2025-01-01T00:00:00Z,gpu,red\n")
    with pytest.raises(IngestError, match="field 'colour'"):
        read_health(p)
    p.write_text("node,time,component\nn,2025-01-01T00:00:00Z,gpu\n")
    with pytest.raises(IngestError, match="field 'source'"):
        read_health(p)
    (tmp_path / "x.xml").write_text("<a/>")
    with pytest.raises(IngestError, match="unknown format"):
        read_health(tmp_path / "x.xml")


def test_validate_names_table_column_problem():
    jobs = schema.empty("jobs")
    assert validate(jobs, "jobs").height == 0
    with pytest.raises(SchemaError, match=r"^jobs\.state: dtype String"):
        validate(jobs.with_columns(pl.col("state").cast(pl.String)), "jobs")
    with pytest.raises(SchemaError, match=r"^jobs\.priority: missing column"):
        validate(jobs.drop("priority"), "jobs")
    with pytest.raises(SchemaError, match=r"^jobs\.extra: unexpected column"):
        validate(jobs.with_columns(extra=pl.lit(1)), "jobs")
    bad = pl.DataFrame({"source_file": ["f"], "line_no": [1], "raw": [None], "reason": ["r"]},
                       schema=schema.TABLES["quarantine"].schema)  # fmt: skip
    with pytest.raises(SchemaError, match=r"^quarantine\.raw: 1 null value"):
        validate(bad, "quarantine")
    with pytest.raises(SchemaError, match="unknown table"):
        validate(jobs, "nope")


def test_every_time_column_is_utc():
    for spec in schema.TABLES.values():
        for col, dtype in spec.schema.items():
            if isinstance(dtype, pl.Datetime):
                assert dtype.time_zone == "UTC", (spec.name, col)
