import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reliability.hostlist import HostlistError, compress, expand


@pytest.mark.parametrize(
    ("expr", "hosts"),
    [
        (
            "node[001-004,007],gpu-a[1-2]",
            ["node001", "node002", "node003", "node004", "node007", "gpu-a1", "gpu-a2"],
        ),
        ("node[08-10]", ["node08", "node09", "node10"]),
        ("fat01,node[01-02]", ["fat01", "node01", "node02"]),
        ("r[1-2]n[1-2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),
        ("node[8-10]", ["node8", "node9", "node10"]),
        ("ip-10-0-1-23", ["ip-10-0-1-23"]),
        ("None assigned", []),
        ("", []),
        (None, []),
    ],
)
def test_expand_known(expr, hosts):
    assert expand(expr) == hosts


@pytest.mark.parametrize(
    "bad", ["node[1-", "node]1[", "node[a-b]", "node[5-3]", "node[[1]]", "node[1,,2]"]
)
def test_expand_rejects_malformed(bad):
    with pytest.raises(HostlistError):
        expand(bad)


def test_compress_known():
    assert compress(["node01", "node02", "node03", "node07", "fat01"]) == "node[01-03,07],fat01"
    assert compress(["node5"]) == "node5"


_prefix = st.sampled_from(["node", "gpu-a", "r1n", "x", "ip-10-0-1-"])


@st.composite
def _hosts(draw):
    out = []
    for _ in range(draw(st.integers(1, 30))):
        num = draw(st.integers(0, 3000))
        width = draw(st.sampled_from([0, 2, 3, 4]))
        digits = str(num).zfill(width) if width else str(num)
        out.append(draw(_prefix) + digits)
    return out


@settings(deadline=None)
@given(_hosts())
def test_round_trip(hosts):
    """expand(compress(h)) gives back the same hosts (as a set, without duplicates)."""
    again = expand(compress(hosts))
    assert sorted(again) == sorted(set(hosts))
    assert len(again) == len(set(again))


@pytest.mark.slow  # 8 s
@settings(deadline=None)
@given(_hosts())
def test_compress_is_fixed_point(hosts):
    expr = compress(hosts)
    assert compress(expand(expr)) == expr


@pytest.mark.slow  # 15 s
@settings(deadline=None)
@given(st.lists(_hosts(), min_size=1, max_size=5))
def test_vectorised_expansion_matches_reference(groups):
    """The polars expansion used by read_sacct agrees with hostlist.expand on every expression."""
    import polars as pl

    from reliability.hostlist import expand_table

    exprs = sorted(
        {compress(h) for h in groups} | {"r[1-2]n[1-2]", "node[08-10],x[1-3,5]", "bad[3-1]"}
    )
    table, errors = expand_table(pl.Series(exprs))
    got = dict(table.iter_rows())
    for e in exprs:
        if e == "bad[3-1]":
            assert e in errors
            assert e not in got
        else:
            assert got[e] == expand(e), e


@pytest.mark.slow  # 10 s
@settings(deadline=None)
@given(st.lists(_hosts(), min_size=1, max_size=4))
def test_sizes_are_the_expanded_lengths(groups):
    """count() and the vectorised sizes() agree with the length of the expansion."""
    import polars as pl

    from reliability.hostlist import count, sizes

    exprs = [compress(h) for h in groups] + ["r[1-2]n[1-3],x", "a[01-03]b[5,7]", "None assigned"]
    got = sizes(pl.Series(exprs)).to_list()
    assert got == [len(expand(e)) for e in exprs]
    assert [count(e) for e in exprs] == got


@pytest.mark.parametrize(
    ("expr", "n"),
    [
        ("r[1-100000]n[1-100000]", 10**10),
        ("n[1-100000000]", 10**8),
        ("a[1-1000]b[1-1000]c[1-10]", 10**7),
    ],
)
def test_huge_expressions_are_refused_before_expansion(expr, n):
    """Sized arithmetically (a product over bracket groups): refused without building a name."""
    import polars as pl

    from reliability.hostlist import MAX_HOSTLIST_NODES, count, expand_table, node_lists, sizes

    assert count(expr) == n > MAX_HOSTLIST_NODES
    with pytest.raises(HostlistError, match=f"names {n:,} hosts"):
        expand(expr)
    assert sizes(pl.Series([expr])).item() == n
    table, errors = expand_table(pl.Series([expr, "ok[1-2]"]))
    assert expr in errors
    assert table.filter(pl.col("nodelist") == "ok[1-2]").item(0, "_expanded").to_list() == [
        "ok1",
        "ok2",
    ]
    nodes, errors, names = node_lists(pl.Series([expr, "ok[1-2]", None]), budget=10)
    assert nodes.to_list() == [[], ["ok1", "ok2"], []]
    assert names == 2


def test_the_node_budget_counts_rows_before_expanding():
    import polars as pl

    from reliability.hostlist import NodeBudgetError, node_lists

    col = pl.Series(["n[1-600000]"] * 200)  # each allowed, together 1.2e8 names
    with pytest.raises(NodeBudgetError, match="120,000,000 host names"):
        node_lists(col, budget=100_000_000)
    nodes, _, names = node_lists(pl.Series(["n[1-3]"] * 4), budget=12)
    assert names == 12
    assert nodes.to_list() == [["n1", "n2", "n3"]] * 4
