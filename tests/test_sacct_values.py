"""The per-distinct-value parse of sacct fields (``ValueTable``) against a row-by-row parse.

Fields such as ExitCode, Timelimit and AllocTRES take few distinct values over millions of rows,
so the reader parses each distinct text once and gathers the results. These tests feed the
same rows, in batches, to that parse and to a plain Python parse written here, and compare.
"""

from __future__ import annotations

import gc
import random

import polars as pl
import pytest

from reliability.ingest.sacct.parse import _EXIT_DTYPE, ValueTable, _exit_parts, _gpu_count

INT32 = range(-(2**31), 2**31)


def _exit_reference(text: str | None) -> tuple[int | None, int | None]:
    """code:signal as 32-bit integers, by hand (fields after the second are ignored)."""
    if text is None:
        return None, None
    parts = [*text.split(":"), ""][:2]

    def num(p: str) -> int | None:
        try:
            v = int(p)
        except ValueError:
            return None
        return v if v in INT32 and p.strip() == p and "_" not in p else None

    if ":" not in text:
        return num(text), None
    return num(parts[0]), num(parts[1])


def _gpu_reference(text: str | None) -> int | None:
    if text is None:
        return None
    for item in text.split(","):
        if item.startswith("gres/gpu="):
            return int(item.split("=")[1])
    return None


@pytest.mark.parametrize("seed", range(5))
def test_exit_codes_in_batches_match_a_row_by_row_parse(seed):
    rng = random.Random(seed)
    pool = ["0:0", "1:0", "0:1", "0:125", "-1:0", "2:9", "abc", "1:x", "99999999999:0", "1:2:3",
            "0:15", None, "127:0", ":0", "3"]  # fmt: skip
    table = ValueTable()
    for _ in range(6):  # batches: later ones meet values seen before and new ones
        batch = [rng.choice(pool) for _ in range(rng.randint(0, 400))]
        got = table.lookup(pl.Series(batch, dtype=pl.String), "ExitCode", _exit_parts, _EXIT_DTYPE)
        gc.collect()  # (the numbering must survive between batches)
        rows = got.struct.unnest().rows()
        assert rows == [_exit_reference(t) for t in batch]


def test_new_values_in_later_batches_get_their_own_parse():
    table = ValueTable()
    first = ["billing=1,gres/gpu=16", "gres/gpu=8", None, "gres/gpu=1"]
    second = ["gres/gpu=1", "gres/gpu=3", "cpu=4", "gres/gpu=16", "billing=1,gres/gpu=16"]
    for batch in (first, second, first[::-1]):
        gc.collect()
        got = table.lookup(pl.Series(batch, dtype=pl.String), "AllocTRES", _gpu_count, pl.Int64())
        assert got.to_list() == [_gpu_reference(t) for t in batch]


def test_keys_are_numbered_apart():
    # one table, two fields with the same texts: each keeps its own parse
    table = ValueTable()
    s = pl.Series(["1:0", "0:0"])
    codes = table.lookup(s, "ExitCode", _exit_parts, _EXIT_DTYPE)
    lens = table.lookup(s, "other", lambda e: e.str.len_chars(), pl.UInt32())
    assert codes.struct.field("exit_code").to_list() == [1, 0]
    assert lens.to_list() == [3, 3]


# -- times: either form first, the same result ----------------------------------------------
_TIME_POOL = [
    "2025-03-01T10:00:00", "2025-03-01T11:30:00", "1741000000", "1741003600", "Unknown",
    "None", None, "abc", "2025-13-01T00:00:00", "1975-01-01T00:00:00", "2199-01-01T00:00:00",
    "0", "99999999999", "-5", "2025-03-09T02:30:00",  # (a DST gap in New York)
]  # fmt: skip


def _expected_time(text: str | None):
    """The UTC time a text stands for in a UTC export, by hand: None for none, "bad" else."""
    from datetime import UTC, datetime

    from reliability.ingest._bounds import TIME_MIN, latest_time

    if text is None or text in ("Unknown", "None"):
        return None
    if text.lstrip("-").isdigit():
        t = datetime.fromtimestamp(int(text), UTC) if abs(int(text)) < 10**11 else None
    else:
        try:
            t = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
        except ValueError:
            return "bad"
    return t if t is not None and TIME_MIN <= t <= latest_time() else "bad"


def _records(seed: int, n: int = 300) -> pl.DataFrame:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        submit, start, end = (rng.choice(_TIME_POOL) for _ in range(3))
        rows.append({"line_no": i + 2, "JobID": str(100 + i), "State": "COMPLETED",
                     "Submit": submit, "Start": start, "End": end, "Cluster": "c"})  # fmt: skip
    return pl.DataFrame(rows, schema=dict.fromkeys(rows[0], pl.String) | {"line_no": pl.Int64})


def _parse(recs: pl.DataFrame, times: str, tz: str):
    from reliability.ingest.sacct.parse import finish, typed_plan

    typed = typed_plan(recs.lazy(), set(recs.columns), tz=tz, cluster=None, times=times)

    def raw(lines):
        return recs.filter(pl.col("line_no").is_in(pl.Series(lines, dtype=pl.Int64).implode()))

    return finish(typed.collect(), raw, tz=tz, gpu=False)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("tz", ["UTC", "America/New_York"])
def test_time_form_hint_changes_only_the_cost(seed, tz):
    recs = _records(seed)
    a, b = _parse(recs, "iso", tz), _parse(recs, "epoch", tz)
    assert a.allocs.equals(b.allocs)
    # (a line can have several reasons: compare as sets, in a total order)
    assert a.bad.sort(a.bad.columns).equals(b.bad.sort(b.bad.columns))


@pytest.mark.parametrize("times", ["iso", "epoch"])
def test_mixed_time_forms_against_a_hand_parse(times):
    recs = _records(11)
    got = _parse(recs, times, "UTC")
    kept = dict(
        zip(
            got.allocs["line_no"],
            got.allocs.select("submit_time", "start_time", "end_time").rows(),
            strict=True,
        )
    )
    reasons = dict(got.bad.rows())
    for line, submit, start, end in recs.select("line_no", "Submit", "Start", "End").rows():
        exp = [_expected_time(t) for t in (submit, start, end)]
        # (every record is COMPLETED: one that started has an End, Slurm sets it on finishing)
        ok = (
            "bad" not in exp
            and exp[0] is not None
            and not (exp[1] is not None and exp[2] is not None and exp[1] > exp[2])
            and not (exp[1] is not None and exp[2] is None)
        )
        if ok:
            assert list(kept[line]) == exp, (line, submit, start, end)
        else:
            assert line in reasons, (line, submit, start, end)
            assert line not in kept
