"""``sacct --parsable`` ends every line with ``|``; ``--parsable2`` does not. Files that mix
the two forms (a header of one, some lines of the other: concatenated exports) are read line
by line: a line off by exactly the trailing ``|`` is read by its own field count, any other
field-count mismatch is quarantined naming the expected and found counts, and no line ever
changes another record (a ragged line is never split into the columns of a clean block
because another ragged line made the block's total separator count right).

The expectations are the records as written (field values below), not the reader's output:
each kept row must carry its own record's job id, name, state and times.
"""

from __future__ import annotations

import gzip
from datetime import UTC, datetime

import pytest

from reliability.ingest import read_sacct

FIELDS = ["JobID", "JobName", "State", "ExitCode", "Submit", "Start", "End", "NNodes",
          "NodeList", "Cluster"]  # fmt: skip


def rec(job: int, name: str, state: str = "COMPLETED", minute: int = 1) -> dict[str, str]:
    return {
        "JobID": str(job), "JobName": name, "State": state, "ExitCode": "0:0",
        "Submit": "2025-01-01T00:00:00", "Start": f"2025-01-01T00:{minute:02d}:00",
        "End": f"2025-01-01T01:{minute:02d}:00", "NNodes": "1", "NodeList": f"n{job:02d}",
        "Cluster": "c",
    }  # fmt: skip


def line(r: dict[str, str], trailing: bool) -> str:
    return "|".join(r[f] for f in FIELDS) + ("|" if trailing else "")


def header(trailing: bool) -> str:
    return "|".join(FIELDS) + ("|" if trailing else "")


def expected(r: dict[str, str]) -> tuple:
    """(job_id, name, state, start, end) of a record, from its fields as written."""
    start = datetime.fromisoformat(r["Start"]).replace(tzinfo=UTC)
    end = datetime.fromisoformat(r["End"]).replace(tzinfo=UTC)
    return (r["JobID"], r["JobName"], r["State"], start, end)


def read(tmp_path, text: str, gz: bool):
    data = text.encode()
    p = tmp_path / ("s.psv.gz" if gz else "s.psv")
    p.write_bytes(gzip.compress(data) if gz else data)
    return read_sacct(p, tz="UTC")


def kept(r) -> list[tuple]:
    jobs = r.frames["jobs"].sort("job_id")
    return [
        (j, n, str(s), a, b)
        for j, n, s, a, b in jobs.select(
            "job_id", "name", "state", "start_time", "end_time"
        ).iter_rows()
    ]


RECS = [rec(10, "train", "COMPLETED", 1), rec(11, "eval", "FAILED", 2),
        rec(12, "sweep", "NODE_FAIL", 3), rec(13, "a|b", "TIMEOUT", 4),
        rec(14, "pre", "PREEMPTED", 5)]  # fmt: skip


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("head_trailing", [True, False])
@pytest.mark.parametrize(
    "forms",
    [
        (True, False, True, True, False),  # some lines of each form
        (False, False, False, True, True),  # consecutive lines of the other form
        (True, True, True, False, True),  # one line, with a '|' in its name, the other form
    ],
)
def test_a_line_off_by_the_trailing_bar_is_read_by_its_own_count(
    tmp_path, gz, head_trailing, forms
):
    text = (
        "\n".join([header(head_trailing), *(line(r, t) for r, t in zip(RECS, forms, strict=True))])
        + "\n"
    )
    r = read(tmp_path, text, gz)
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (5, 5, 0)
    assert kept(r) == [expected(x) for x in RECS]
    other = sum(t != head_trailing for t in forms)
    assert any(n.startswith(f"{other} line(s) in the other sacct form") for n in r.notes), r.notes


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("head_trailing", [True, False])
@pytest.mark.parametrize("bad_trailing", [True, False])
def test_any_other_count_mismatch_is_quarantined_alone(tmp_path, gz, head_trailing, bad_trailing):
    """A line missing a field (9 of 10) or with one too many that no free-text field can hold
    is quarantined by itself, naming the counts; its neighbours (of either form, one with a
    '|' in its name) are read as written. A line with one '|' too many and one with one too
    few compensate in the block's total: neither may change the other."""
    short = line(RECS[1], bad_trailing).replace("|FAILED|", "|", 1)  # State dropped: 9 fields
    extra = line(RECS[2], bad_trailing).replace("|NODE_FAIL|", "|NODE_FAIL|0:0|", 1)  # 11
    lines = [header(head_trailing), line(RECS[0], head_trailing), short, line(RECS[3], not head_trailing),
             extra, line(RECS[4], head_trailing)]  # fmt: skip
    r = read(tmp_path, "\n".join(lines) + "\n", gz)
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (5, 3, 2)
    assert kept(r) == [expected(RECS[i]) for i in (0, 3, 4)]
    q = dict(
        zip(r.quarantine.get_column("line_no"), r.quarantine.get_column("reason"), strict=True)
    )
    assert set(q) == {3, 5}
    if bad_trailing and not head_trailing:
        # 9 fields and a trailing '|' under a --parsable2 header are 10 fields, the last one
        # empty, by their count: no count can tell; the fields, shifted, are not well formed
        assert q[3] == "field Cluster: empty, and no cluster= was given", q[3]
        assert q[5].startswith("12 fields (the last one empty: the trailing '|' of"), q[5]
    else:
        assert q[3].startswith("9 fields, expected 10"), q[3]
        assert q[5].startswith("11 fields, expected 10"), q[5]


@pytest.mark.parametrize("gz", [False, True])
def test_compensating_ragged_lines_do_not_shift_each_other(tmp_path, gz):
    """--parsable2 header: a record whose name holds a '|' (one separator too many) and a
    record missing its last field (one too few) have, together, the separators of two clean
    lines. The first is still read with its name, the second quarantined by itself."""
    named = rec(20, "x|y")
    cut = line(rec(21, "z"), False).rsplit("|", 1)[0]  # no Cluster: 9 fields
    lines = [header(False), line(RECS[0], False), line(named, False), cut, line(RECS[2], False)]
    r = read(tmp_path, "\n".join(lines) + "\n", gz)
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (4, 3, 1)
    assert kept(r) == sorted(expected(x) for x in (RECS[0], named, RECS[2]))
    assert r.quarantine.item(0, "line_no") == 4
    assert r.quarantine.item(0, "reason").startswith("9 fields, expected 10")


def test_consecutive_lines_without_the_bar_are_never_joined(tmp_path):
    """--parsable header: a malformed line without the trailing '|' followed by a good one
    without it. Before, the two were joined into one record and quarantined together (the
    good record lost, rows read one short); now the malformed one is quarantined alone,
    naming the field, and the good one read."""
    bad = line(RECS[1], False).replace("|0:0|", "|zero|", 1)
    lines = [header(True), line(RECS[0], True), bad, line(RECS[2], False), line(RECS[4], True)]
    r = read(tmp_path, "\n".join(lines) + "\n", False)
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (4, 3, 1)
    assert kept(r) == [expected(x) for x in (RECS[0], RECS[2], RECS[4])]
    assert r.quarantine.item(0, "line_no") == 3
    reason = r.quarantine.item(0, "reason")
    assert reason.startswith("10 fields, expected 10 (--parsable: each line ends with '|')")
    assert "field ExitCode is not well formed: 'zero'" in reason


def test_a_newline_in_a_last_free_text_field_still_rejoins(tmp_path):
    """--parsable with JobName last: a name with a newline leaves a first line that lacks only
    the trailing '|' and a fragment 'rest|'; the two are one record (README: a record split
    by a newline is rejoined), not a record and a fragment."""
    fields = [f for f in FIELDS if f != "JobName"] + ["JobName"]
    r0, r1 = rec(30, "plain"), rec(31, "two\nlines")
    text = "\n".join(
        ["|".join(fields) + "|", *("|".join(x[f] for f in fields) + "|" for x in (r0, r1))]
    )
    r = read(tmp_path, text + "\n", False)
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (2, 2, 0)
    assert kept(r) == [expected(r0), expected(r1)]
