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

from reliability.ingest._sacct_parse import _EXIT_DTYPE, ValueTable, _exit_parts, _gpu_count

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
