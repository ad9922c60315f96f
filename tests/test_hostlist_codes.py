"""compact_node_lists' own paths (issue 39): the fallbacks it takes, against :func:`expand`.

The general agreement with :func:`expand` on random and fragmented hostlists is in
``test_hostlist_vectorised.py`` (both readers run there); these are the cases a random draw
rarely reaches.
"""

from __future__ import annotations

import polars as pl
import pytest

import reliability.hostlist_codes as hc
from reliability.hostlist import NodeBudgetError, expand


def _as_strings(column: list[str | None], **kw) -> tuple[list[list[str]], dict[str, str], int]:
    nodes, errors, total = hc.compact_node_lists(pl.Series(column, dtype=pl.String), **kw)
    assert nodes.dtype == hc.NODES_COMPACT
    return nodes.cast(pl.List(pl.String)).to_list(), errors, total


def test_sparse_numbering_is_expanded_otherwise(monkeypatch):
    """A family whose numbers span more than the name table may hold goes through
    node_lists: the same names (and node00001..node5000000 would be 5 M strings otherwise)."""
    col = ["node[1,5000000]", "gpu[01-03],node7", None]
    got, errors, total = _as_strings(col)
    assert got == [expand(e) if e else [] for e in col]
    assert (errors, total) == ({}, 6)
    monkeypatch.setattr(hc, "MAX_TABLE", 2)  # the dense path refused for small spans too
    assert _as_strings(col)[0] == got


# sparse numbers, padded ones up to 18 digits, in groups and plain, as a random draw writes them
_SPARSE = [
    "ip-10-0-1-[943412-0943427,12,0-0,00099-114,9,15776],r1n[08-10,680976],n[34]",
    "x.y[31,704986-705010,09,000,010-012,00-01],r001n[29147,007,00029-00034]",
    "gpu-a37259,r1n151,n[1999990-1999999],n7",
    "a[000000000000000001-000000000000000003],a[1-2]",
]


def test_a_sparse_name_table_is_left_to_the_string_path(monkeypatch):
    """A few rows over a sparse numbering (943,427 numbers of one family for 80 names) go
    through node_lists, not through a name table of every number between; either way the
    names are expand()'s, and with the sparse rule off the token path gives them too."""
    col = pl.Series(_SPARSE, dtype=pl.String)
    assert hc._fast(col, None) is None
    assert hc._fast(pl.Series(["r1n[01-40],r2n[07,09-12]"]), None) is not None  # dense
    want = [expand(e) for e in _SPARSE]
    assert _as_strings(_SPARSE)[0] == want
    monkeypatch.setattr(hc, "_TABLE_PER_NAME", 10**9)
    monkeypatch.setattr(hc, "MAX_TABLE", 1 << 23)  # (a table of 3.4 M names)
    assert hc._fast(col, None) is not None
    assert _as_strings(_SPARSE)[0] == want


def test_a_row_that_does_not_balance_leaves_the_next_rows_alone():
    """Bracket depth is counted from each row's start: an unclosed group is an error of its
    own row only; the rows after it read as expand() reads them."""
    col = ["a[1-2", "b[1-2]", "c]", "d[3],e", "f[1,", "07", "g[08-10]", "h[5", "1-2"]
    got, errors, total = _as_strings(col, distinct=True)
    good = {"b[1-2]": ["b1", "b2"], "d[3],e": ["d3", "e"], "g[08-10]": ["g08", "g09", "g10"]}
    good |= {"07": ["07"], "1-2": ["1-2"]}  # host names, not items of the group left open
    assert got == [good.get(e, []) for e in col]
    assert set(errors) == {"a[1-2", "c]", "f[1,", "h[5"}
    assert total == 9
    assert _as_strings(["x[1", "07"])[0] == [[], ["07"]]  # not x07


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_slices_read_in_threads_give_the_same_lists(monkeypatch, threads):
    """Rows cut into slices (one per thread) keep their order and their own names."""
    monkeypatch.setattr(hc, "_MIN_ROWS_PER_THREAD", 1)
    col = [
        f"r{i % 7}n[{i % 5:02d}-{i % 5 + 2:02d}],x{i}" if i % 4 else "None assigned"
        for i in range(23)
    ]
    got, errors, total = _as_strings(col, threads=threads, distinct=True)
    want = [expand(e) for e in col]
    assert got == want
    assert errors == {}
    assert total == sum(map(len, want))


def test_only_host_names_join_the_categories():
    """The tokens a hostlist is cut into (``r1n[05``, ``07]``) are not host names: the
    compact lists' categories hold names only."""
    # (numbers no other test writes: the categories are shared by the whole process)
    nodes, _, _ = hc.compact_node_lists(pl.Series(["zq9n[0577,0779-0781],zq9x"]))
    assert nodes.cast(pl.List(pl.String)).to_list() == [
        ["zq9n0577", "zq9n0779", "zq9n0780", "zq9n0781", "zq9x"]
    ]
    cats = nodes.dtype.inner.categories.to_series()  # every string of the numbering
    assert "zq9n0577" in cats.to_list()
    assert not cats.is_in(["zq9n[0577", "0779-0781]", "0779-0781"]).any()


def test_lists_repeated_far_apart_are_expanded_once_each(monkeypatch):
    """A batch of allocations then their steps (each list twice, 25,000 rows apart: a sample of
    the first rows sees no repeat) is expanded per distinct list: the same lists, errors and
    count as the string reader gives row by row."""
    from reliability.hostlist import node_lists

    calls = []
    by_distinct = hc._by_distinct
    monkeypatch.setattr(
        hc, "_by_distinct", lambda *a, **kw: calls.append(1) or by_distinct(*a, **kw)
    )
    allocs = [f"q{i % 97}n[{i % 50:02d},{i % 7 + 60}-{i % 7 + 62}],z{i}" for i in range(25_000)]
    allocs[3] = "q1n[5-2]"  # an error, in both halves
    col = pl.Series([*allocs, *allocs, None], dtype=pl.String)
    nodes, errors, total = hc.compact_node_lists(col, distinct=True)
    assert calls == [1]
    want, want_errors, want_total = node_lists(col, distinct=True)
    assert nodes.cast(pl.List(pl.String)).to_list() == want.to_list()
    assert (errors, total) == (want_errors, want_total)
    assert list(errors) == ["q1n[5-2]"]


def test_categories_in_code_order_match_polars():
    """hostlist.categories gives what ``Categories.to_series`` gives (polars' own reader,
    one string at a time), on columns with nulls and repeats, and on a numbering another
    column shares (codes not dense from 0: read one by one)."""
    import random

    from reliability.hostlist import categories

    rng = random.Random(7)
    for n in (0, 1, 5, 3_000, 200_000):
        values = [
            None if rng.random() < 0.05 else f"h{rng.randrange(n // 3 + 1)}" for _ in range(n)
        ]
        numbering = pl.Categories.random(namespace="reliability")
        numbered = pl.Series(values, dtype=pl.String).cast(pl.Categorical(numbering))
        want = numbering.to_series()
        got = categories(numbered, numbering)
        assert got.dtype == pl.String
        assert got.to_list() == want.to_list()
        # each row's string is its code's entry
        codes = numbered.to_physical().drop_nulls().to_list()
        assert [got[c] for c in codes[:1000]] == [v for v in values if v is not None][:1000]

    shared = pl.Categories.random(namespace="reliability")
    first = pl.Series(["zq9-a", "zq9-b"]).cast(pl.Categorical(shared))
    second = pl.Series(["zq9-c", None, "zq9-c"]).cast(pl.Categorical(shared))
    assert categories(second, shared).to_list() == shared.to_series().to_list()
    assert first.len() == 2


def _outcome(f, col, **kw):
    try:
        lists, errors, total = f(col, **kw)
    except NodeBudgetError as exc:
        return "refused", str(exc)
    return lists.cast(pl.List(pl.String)).to_list(), errors, total


@pytest.mark.parametrize(
    ("column", "budgets"),
    [
        # a list naming a host twice counts its names in the budget, on both paths
        (["n1,n1"] * 30_000 + ["a[1-3]"] * 10, [100, 60_029, 60_030]),
        (["n1,n1"] * 27_000 + ["a[1-10]"] * 3_000, [11, 100, 84_000]),
        # not a hostlist: an error holding no names, counted as none
        (["a b"] * 5, [0, 4]),
        (["a b", "n1"] * 15_000, [14_999, 15_000]),
    ],
    ids=["repeats-per-distinct", "repeats-message", "odd-rows", "odd-per-distinct"],
)
def test_budget_counts_as_the_string_reader(column, budgets):
    """The budget counts what hostlist.node_lists counts (the reference): repeated-host lists
    by their names, invalid expressions as none; a refusal names every row's count, whatever
    the budget and whichever path (per row or per distinct list) the column takes."""
    from reliability.hostlist import node_lists

    col = pl.Series(column, dtype=pl.String)
    for budget in budgets:
        want = _outcome(node_lists, col, budget=budget, distinct=True)
        assert _outcome(hc.compact_node_lists, col, budget=budget, distinct=True) == want
