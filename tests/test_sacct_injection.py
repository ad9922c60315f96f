"""Header injection and forged lines through a job name (issue 16, item 1).

sacct does not escape newlines or ``|``: a user can name a job ``evil\\n<a header line>`` or
``evil\\n<a line that looks like a record>``. A generator builds clean exports of several
users' jobs in several field orders, puts such a payload into one job's name, and the test
asserts that every other record reads exactly as in the clean export: nothing re-mapped,
nothing lost, nothing refused. The payload may change or drop only its own job's record;
where JobName comes right after JobID (the recommended export), a forged line can at most
relabel that job's own record with another job id, so any extra record must carry the
victim's own state, times and nodes. Where JobName is the last field, a forged full line
cannot be told from a record by any parser of --parsable2 (see ingest.sacct.records), so only
header-like payloads are generated for that order.
"""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reliability.ingest import read_sacct
from reliability.ingest.sacct.fields import EXPORT_FIELDS

_BASE = [
    "JobID", "State", "User", "Account", "ExitCode", "Submit", "Start", "End", "NNodes",
    "AllocTRES", "NodeList", "Cluster",
]  # fmt: skip
LAYOUTS = {
    "name second": ["JobID", "JobName", *_BASE[1:]],
    "name middle": [*_BASE[:3], "JobName", *_BASE[3:]],
    "name last": [*_BASE, "JobName"],
    "recommended": [*EXPORT_FIELDS, "Cluster"],
}
N_JOBS = 8


def _records() -> list[dict[str, str]]:
    out = []
    for i in range(N_JOBS):
        jid = str(100 + i)
        start = f"2025-01-01T0{i % 10}:01:00"
        rec = {
            "JobID": jid, "JobIDRaw": jid, "JobName": f"job{i}", "User": f"user{i % 3}",
            "Account": f"acct{i % 2}", "Partition": "gpu", "QOS": "normal", "Priority": str(1000 + i),
            "State": ["COMPLETED", "FAILED", "NODE_FAIL", "CANCELLED by 1001"][i % 4],
            "ExitCode": ["0:0", "1:0", "0:0", "0:15"][i % 4],
            "Submit": "2025-01-01T00:00:00", "Start": start, "End": f"2025-01-01T1{i % 10}:00:00",
            "Timelimit": "1-00:00:00", "NNodes": str(1 + i % 3),
            "AllocTRES": f"cpu={8 * (1 + i % 3)},gres/gpu={8 * (1 + i % 3)},node={1 + i % 3}",
            "ReqTRES": "cpu=8", "NodeList": f"n[{10 * i:03d}-{10 * i + i % 3:03d}]", "Cluster": "c",
        }  # fmt: skip
        out.append(rec)
        out.append({**rec, "JobID": jid + ".batch", "JobIDRaw": jid + ".batch",
                    "JobName": "batch", "User": "", "Account": "", "Priority": "",
                    "State": rec["State"].split(" ")[0], "NNodes": "1",
                    "NodeList": f"n{10 * i:03d}"})  # fmt: skip
    return out


def _export(fields: list[str], recs: list[dict[str, str]]) -> str:
    return "\n".join(["|".join(fields)] + ["|".join(r[f] for f in fields) for r in recs]) + "\n"


@st.composite
def _header_line(draw, fields: list[str]) -> str:
    kind = draw(st.sampled_from(["same", "swap", "subset", "lower", "trailing"]))
    names = list(fields)
    if kind == "swap":
        i, j = draw(st.lists(st.integers(1, len(names) - 1), min_size=2, max_size=2, unique=True))
        names[i], names[j] = names[j], names[i]
    elif kind == "subset":
        rest = draw(st.permutations(names[1:]))
        names = ["JobID", *rest[: draw(st.integers(2, len(rest)))]]
    line = "|".join(names)
    if kind == "lower":
        line = line.lower()
    if kind == "trailing":
        line += "|"
    return line


@st.composite
def _forged_line(draw, fields: list[str], recs: list[dict[str, str]]) -> str:
    """A line that looks like another user's record (possibly with fields moved)."""
    rec = dict(draw(st.sampled_from(recs)))
    rec["JobID"] = draw(st.sampled_from(["999", rec["JobID"], "999.batch"]))
    rec["State"] = draw(st.sampled_from(["NODE_FAIL", rec["State"]]))
    values = [rec[f] for f in fields]
    if draw(st.booleans()):
        values = values[: draw(st.integers(1, len(values)))]
    return "|".join(values)


@st.composite
def _case(draw):
    layout = draw(st.sampled_from(sorted(LAYOUTS)))
    fields = LAYOUTS[layout]
    recs = _records()
    lines = [draw(_header_line(fields))]
    if layout != "name last":
        for _ in range(draw(st.integers(0, 2))):
            lines.append(draw(st.one_of(_header_line(fields), _forged_line(fields, recs))))
    tail = draw(st.sampled_from(["", "x", "|", "123", "a|b"]))
    name = "evil\n" + "\n".join(lines) + ("\n" + tail if tail else "")
    victim = 2 * draw(st.integers(0, N_JOBS - 1))  # an allocation record
    return layout, fields, recs, victim, name


_CLEAN: dict[str, object] = {}


def _clean(tmp_path, layout: str, fields: list[str], recs: list[dict[str, str]]):
    """The clean export's parse, read once per layout."""
    if layout not in _CLEAN:
        path = tmp_path / f"clean-{layout.replace(' ', '_')}.psv"
        path.write_text(_export(fields, recs))
        _CLEAN[layout] = read_sacct(path, tz="UTC")
    return _CLEAN[layout]


def _rows(frame: pl.DataFrame) -> list[tuple]:
    # (read_sacct keeps the node lists compact: List(Categorical), strings once cast)
    return frame.with_columns(pl.col("nodes").cast(pl.List(pl.String)).list.join(",")).rows()


@pytest.mark.slow  # 23 s
@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(_case())
def test_injected_lines_change_no_other_record(tmp_path, case):
    layout, fields, recs, victim, name = case
    bad_path = tmp_path / "bad.psv"
    attacked = [dict(r) for r in recs]
    attacked[victim]["JobName"] = name
    bad_path.write_text(_export(fields, attacked))
    clean = _clean(tmp_path, layout, fields, recs)
    bad = read_sacct(bad_path, tz="UTC")  # never refused as a whole
    vid = recs[victim]["JobID"]
    for table in ("jobs", "job_steps"):
        c = clean.frames[table]
        b = bad.frames[table]
        want = _rows(c.filter(pl.col("job_id") != vid))
        got = _rows(b.filter(pl.col("job_id") != vid))
        missing = [row for row in want if row not in got]
        assert not missing, (layout, name, missing)
        extra = [row for row in got if row not in want]
        if extra:
            # only a relabelled copy of the victim's own record (name right after JobID)
            assert layout in ("name second", "recommended"), (layout, name, extra)
            own = c.filter(pl.col("job_id") == vid).row(0, named=True) if table == "jobs" else None
            cols = b.columns
            for row in extra:
                d = dict(zip(cols, row, strict=True))
                ref = own or clean.frames["jobs"].filter(pl.col("job_id") == vid).row(0, named=True)
                assert (d["state"], d["start_time"], d["end_time"]) == (
                    ref["state"], ref["start_time"], ref["end_time"],
                ), (layout, name, d)  # fmt: skip
                assert d["nodes"] == ",".join(ref["nodes"]), (layout, name, d)
    # the other users' records were not quarantined either
    assert bad.rows_kept >= clean.rows_kept - 2


def test_header_swapping_user_and_account_in_the_middle_of_a_file(tmp_path):
    """The worst case of the issue: a header with two fields swapped, JobName last, so the
    previous record looks complete. Nothing is re-mapped; the line becomes part of the name."""
    fields = LAYOUTS["name last"]
    recs = _records()
    swapped = list(fields)
    i, j = swapped.index("User"), swapped.index("Account")
    swapped[i], swapped[j] = swapped[j], swapped[i]
    recs2 = [dict(r) for r in recs]
    recs2[4]["JobName"] = "evil\n" + "|".join(swapped)
    (tmp_path / "a.psv").write_text(_export(fields, recs2))
    (tmp_path / "c.psv").write_text(_export(fields, recs))
    bad, clean = read_sacct(tmp_path / "a.psv", tz="UTC"), read_sacct(tmp_path / "c.psv", tz="UTC")
    assert bad.frames["jobs"].drop("name").equals(clean.frames["jobs"].drop("name"))
    assert bad.frames["job_steps"].equals(clean.frames["job_steps"])
    names = bad.frames["jobs"].get_column("name").to_list()
    assert names[2] == recs2[4]["JobName"]
    assert (bad.rows_read, bad.rows_quarantined) == (clean.rows_read, 0)


@pytest.mark.parametrize("layout", ["name last", "name second", "name middle", "recommended"])
@pytest.mark.parametrize("tail", ["", "123", "x|y"])
def test_a_forged_header_followed_by_its_copy_remaps_nothing(tmp_path, layout, tail):
    """Issue 37 (found by the independent-parse property of tests/hostile at 1,000
    mutations): a forged header whose next line was another header-like line (its copy, or
    a header run into text) had nothing after it to compare and was taken as a new section:
    every later record was read with two fields swapped (here User <-> Account), without a
    word (JobName last: the record before the forged lines is complete).
    The look-ahead now reads past such lines; only another, different header ends it."""
    fields = LAYOUTS[layout]
    recs = _records()
    swapped = list(fields)
    i, j = swapped.index("User"), swapped.index("Account")
    swapped[i], swapped[j] = swapped[j], swapped[i]
    forged = "|".join(swapped)
    attacked = [dict(r) for r in recs]
    attacked[4]["JobName"] = f"evil\n{forged}\n{forged}{tail}"
    (tmp_path / "a.psv").write_text(_export(fields, attacked))
    (tmp_path / "c.psv").write_text(_export(fields, recs))
    bad, clean = read_sacct(tmp_path / "a.psv", tz="UTC"), read_sacct(tmp_path / "c.psv", tz="UTC")
    vid = recs[4]["JobID"]
    for table in ("jobs", "job_steps"):
        want = _rows(clean.frames[table].filter(pl.col("job_id") != vid))
        got = _rows(bad.frames[table].filter(pl.col("job_id") != vid))
        assert got == want, (layout, tail)
