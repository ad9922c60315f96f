"""The vectorised hostlist path (node_lists, expand_table, sizes) against the per-expression
reference :func:`expand` / :func:`count`, on random fragmented lists with padding edge cases,
repeated hosts, malformed and oversized expressions (issue 39). The node-list tests run twice:
on :func:`node_lists` (names built as strings) and on
:func:`reliability.hostlist_codes.compact_node_lists` (names read as tokens, compact), each
against the same reference."""

from __future__ import annotations

import re

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reliability.hostlist import (
    MAX_HOSTLIST_NODES,
    HostlistError,
    NodeBudgetError,
    count,
    expand,
    expand_table,
    sizes,
)
from reliability.hostlist import node_lists as _string_lists
from reliability.hostlist_codes import NODES_COMPACT, compact_node_lists


def _tokens(column: pl.Series, *, per_distinct: bool = False, **kw):
    """compact_node_lists, cut into slices of a row or more (3 threads), as strings;
    ``per_distinct``: each distinct hostlist expanded once and gathered to its rows."""
    import reliability.hostlist_codes as hc

    saved = hc._MIN_ROWS_PER_THREAD, hc._MIN_DISTINCT_ROWS, hc._DISTINCT_SHARE
    hc._MIN_ROWS_PER_THREAD = 1
    if per_distinct:
        hc._MIN_DISTINCT_ROWS, hc._DISTINCT_SHARE = 0, 2.0
    try:
        nodes, errors, total = compact_node_lists(column, threads=3, **kw)
    finally:
        hc._MIN_ROWS_PER_THREAD, hc._MIN_DISTINCT_ROWS, hc._DISTINCT_SHARE = saved
    assert nodes.dtype == NODES_COMPACT
    return nodes.cast(pl.List(pl.String)), errors, total


def _token_lists(column: pl.Series, **kw):
    return _tokens(column, **kw)


def _distinct_token_lists(column: pl.Series, **kw):
    return _tokens(column, per_distinct=True, **kw)


_IMPLS = pytest.mark.parametrize(
    "node_lists",
    [_string_lists, _token_lists, _distinct_token_lists],
    ids=["strings", "tokens", "tokens-per-distinct"],
)


# prefixes that end in a letter, a dash, a dot, an underscore, a digit (``n1[0-5]`` names
# n10..n15, which ``n[10-15]`` names too), and a plain-name-like prefix
_PREFIX = st.sampled_from(["node", "r001n", "gpu-a", "x.y", "ip-10-0-1-", "a_b", "n1", "n", "Ünï"])


@st.composite
def _number(draw) -> str:
    """A number's text: small or large, sometimes zero-padded (``007``, ``0``, ``00``)."""
    n = draw(st.one_of(st.integers(0, 12), st.integers(0, 150), st.integers(0, 10**6)))
    pad = draw(st.sampled_from([0, 0, 1, 2, 3, 5]))
    return str(n).zfill(pad) if pad else str(n)


@st.composite
def _item(draw) -> str:
    """A bracket item: one number or a range, ascending or (rarely) descending."""
    lo = draw(_number())
    if draw(st.booleans()):
        return lo
    span = draw(st.integers(-2, 25))  # negative: a descending range (an error)
    hi = int(lo) + span
    if hi < 0:
        hi = 0
    width = draw(st.sampled_from([0, 0, 1, len(lo), len(lo) + 1]))
    return f"{lo}-{str(hi).zfill(width) if width else hi}"


@st.composite
def _part(draw) -> str:
    prefix = draw(_PREFIX)
    kind = draw(st.sampled_from(["plain", "plain_num", "group", "group"]))
    if kind == "plain":
        return prefix
    if kind == "plain_num":
        return prefix + draw(_number())
    return f"{prefix}[{','.join(draw(st.lists(_item(), min_size=1, max_size=8)))}]"


_expr = st.lists(_part(), min_size=1, max_size=10).map(",".join)
# forms the vectorised path leaves to expand(), and malformed ones
_ODD = st.sampled_from(
    [
        "r[1-2]n[1-3]",
        "a[01-02]b[5,7],c",
        "n[1-3], m2",
        " n[1-2]",
        "node[1-",
        "node]1[",
        "node[a-b]",
        "node[[1]]",
        "node[1,,2]",
        "n[1-2]x",
        "n;rm",
        "None assigned",
        "",
        "(null)",
        "n[1-2000000]",
    ]
)


def _reference(expr: str, *, distinct: bool) -> tuple[list[str], str | None]:
    """(names, error kind) by the per-expression reference: ``expand`` and a set of names.

    A column's expression holding a character no hostlist holds (a space, ``;``) is not a
    hostlist (expand() alone strips spaces around names; a NodeList field never has them).
    """
    if re.search(r"[^\w\-.\[\],]", expr) and expr.strip() not in ("", "None assigned", "(null)"):
        return [], "error"
    try:
        names = expand(expr)
    except HostlistError:
        return [], "error"
    if distinct and len(set(names)) < len(names):
        return [], "twice"
    return names, None


def _first_repeat(names: list[str]) -> str:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    raise AssertionError("no repeat")


@_IMPLS
@settings(deadline=None, max_examples=100)
@given(st.lists(st.one_of(_expr, _expr, _expr, _ODD), min_size=1, max_size=12), st.booleans())
def test_node_lists_match_expand(node_lists, exprs, distinct):
    """Every row's list, error and the total agree with expand() applied expression by
    expression (rows repeat expressions, and nulls are mixed in)."""
    rows = [*exprs, *exprs[::2], None]
    nodes, errors, total = node_lists(pl.Series(rows, dtype=pl.String), distinct=distinct)
    assert nodes.dtype == pl.List(pl.String)
    assert nodes.len() == len(rows)
    want_total = 0
    for expr, got in zip(rows, nodes.to_list(), strict=True):
        if expr is None:
            assert got == []
            continue
        names, err = _reference(expr, distinct=distinct)
        assert got == names, expr
        want_total += len(names)
        if err is None:
            assert expr not in errors, expr
        else:
            assert expr in errors, expr
            if err == "twice":
                dup = _first_repeat(expand(expr))
                assert errors[expr] == (
                    f"'{expr}' names host '{dup}' twice (a Slurm node set never repeats a host)"
                )
    assert total == want_total


@settings(deadline=None, max_examples=100)
@given(st.lists(st.one_of(_expr, _expr, _ODD), min_size=1, max_size=12))
def test_sizes_and_expand_table_match_the_reference(exprs):
    """sizes() is count() (-1 for a malformed expression); expand_table() is expand()."""
    want = []
    for e in exprs:
        try:
            want.append(count(e))
        except HostlistError:
            want.append(-1)
    assert sizes(pl.Series(exprs, dtype=pl.String)).to_list() == want
    table, errors = expand_table(pl.Series(exprs, dtype=pl.String))
    got = dict(table.iter_rows())
    for e in set(exprs):
        names, err = _reference(e, distinct=False)
        if err:
            assert e in errors, e
            assert e not in got, e
        else:
            assert got[e] == names, e


@_IMPLS
@pytest.mark.parametrize(
    ("expr", "hosts"),
    [
        # Slurm's padding: lo's width when lo has a leading zero or both bounds are as long
        ("n[8-12]", ["n8", "n9", "n10", "n11", "n12"]),
        ("n[08-12]", ["n08", "n09", "n10", "n11", "n12"]),
        ("n[008-12]", ["n008", "n009", "n010", "n011", "n012"]),
        ("n[0-2]", ["n0", "n1", "n2"]),
        ("n[00-02]", ["n00", "n01", "n02"]),
        ("n[5-010]", ["n5", "n6", "n7", "n8", "n9", "n10"]),
        ("n[98-101]", ["n98", "n99", "n100", "n101"]),
        ("a,r1n[05,07-08],b", ["a", "r1n05", "r1n07", "r1n08", "b"]),
        ("n1[0-1],n[2-3]", ["n10", "n11", "n2", "n3"]),
    ],
)
def test_padding_and_order(node_lists, expr, hosts):
    nodes, errors, _ = node_lists(pl.Series([expr]), distinct=True)
    assert nodes.to_list() == [hosts] == [expand(expr)]
    assert errors == {}


@_IMPLS
@pytest.mark.parametrize(
    ("expr", "dup"),
    [
        ("n[8-12],n[10-12]", "n10"),  # widths 0 and 2 name the same hosts from 10 on
        ("n1[0-5],n[12-13]", "n12"),  # a prefix ending in a digit
        ("r1n05,r1n[01-09]", "r1n05"),  # a plain name inside a later range
        ("n[1-3,2]", "n2"),
        ("x,y,x", "x"),
    ],
)
def test_repeated_hosts_are_found(node_lists, expr, dup):
    nodes, errors, total = node_lists(pl.Series([expr, "ok[1-2]"]), distinct=True)
    assert errors == {
        expr: f"'{expr}' names host '{dup}' twice (a Slurm node set never repeats a host)"
    }
    assert nodes.to_list() == [[], ["ok1", "ok2"]]
    assert total == 2


@_IMPLS
@pytest.mark.parametrize("expr", ["n[5-9],n[05-09]", "n[1-3],n01", "n[9-10],n[010-011]"])
def test_same_numbers_other_names_are_not_repeats(node_lists, expr):
    nodes, errors, _ = node_lists(pl.Series([expr]), distinct=True)
    assert errors == {}
    assert nodes.to_list() == [expand(expr)]


@_IMPLS
@pytest.mark.parametrize("tail", [[None], []], ids=["null-row", "no-null"])
def test_budget_and_cap_on_fragmented_rows(node_lists, tail):
    """The budget counts names per row (repeats included) before expanding; an expression over
    the per-job cap is an error that costs nothing (with and without a null row: polars hands
    numpy a read-only view of a column without nulls)."""
    frag = ",".join(
        f"r{r:03d}n[{','.join(f'{s:02d}' for s in range(1, 30, 3))}]" for r in range(1, 40)
    )
    n = count(frag)
    over = f"n[1-{MAX_HOSTLIST_NODES + 1}]"
    col = pl.Series([frag] * 5 + [over, *tail])
    with pytest.raises(NodeBudgetError, match=f"{5 * n:,} host names"):
        node_lists(col, budget=5 * n - 1)
    # a budget one row passes: the message still counts every row's names
    with pytest.raises(NodeBudgetError, match=f"the node lists would hold {5 * n:,} host names"):
        node_lists(col, budget=n - 1)
    nodes, errors, total = node_lists(col, budget=5 * n, distinct=True)
    assert total == 5 * n
    assert nodes.to_list()[:5] == [expand(frag)] * 5
    assert list(errors) == [over]


# fragmented lists as random placement writes them: mostly plain names, bracket groups of one
# or several items (the later items of a group take its prefix), ranges with every padding
# rule, groups first, last and back to back, prefixes ending in a digit
_FRAG_PREFIX = st.sampled_from(["r001n", "r1n", "n", "n1", "gpu-a", "x.y", "ip-10-0-1-"])
_PAD_EDGE = st.sampled_from(["09-11", "8-10", "08-10", "0-0", "00-01", "9", "09", "010-012"])


@st.composite
def _frag_part(draw) -> str:
    prefix = draw(_FRAG_PREFIX)
    if draw(st.integers(0, 2)) == 0:  # a plain name, with or without a number
        return prefix + draw(st.one_of(_number(), st.just("")))
    items = draw(st.lists(st.one_of(_PAD_EDGE, _number(), _item()), min_size=1, max_size=6))
    return f"{prefix}[{','.join(items)}]"


_frag = st.lists(_frag_part(), min_size=1, max_size=25).map(",".join)
_plain = st.lists(
    st.builds(lambda p, n: p + n, _FRAG_PREFIX, _number()), min_size=1, max_size=25
).map(",".join)


@_IMPLS
@settings(deadline=None, max_examples=150)
@given(st.lists(st.one_of(_frag, _frag, _plain), min_size=1, max_size=10), st.booleans())
def test_fragmented_lists_match_expand(node_lists, exprs, distinct):
    """Fragmented and bracket-free lists (each through its own vectorised path) give what
    expand() gives expression by expression, in Slurm's order, errors and repeats included."""
    nodes, errors, total = node_lists(pl.Series([*exprs, *exprs[::-1]]), distinct=distinct)
    want_total = 0
    for expr, got in zip([*exprs, *exprs[::-1]], nodes.to_list(), strict=True):
        names, err = _reference(expr, distinct=distinct)
        assert got == names, expr
        assert (expr in errors) == (err is not None), expr
        want_total += len(names)
    assert total == want_total
    assert sizes(pl.Series(exprs)).to_list() == [
        len(expand(e)) if _reference(e, distinct=False)[1] is None else -1 for e in exprs
    ]


@_IMPLS
@pytest.mark.parametrize(
    ("expr", "hosts"),
    [
        ("n[09-11]", ["n09", "n10", "n11"]),
        ("n[8-10],m", ["n8", "n9", "n10", "m"]),
        ("a[1,3],b[05,7-8],c", ["a1", "a3", "b05", "b7", "b8", "c"]),  # back to back
        ("x,y1,z.2", ["x", "y1", "z.2"]),  # no bracket: the split itself
        ("r1n[01,03],r1n05", ["r1n01", "r1n03", "r1n05"]),
        ("n1[0,2],n[3]", ["n10", "n12", "n3"]),
    ],
)
def test_groups_of_several_items_take_their_prefix(node_lists, expr, hosts):
    nodes, errors, _ = node_lists(pl.Series([expr, expr]), distinct=True)
    assert nodes.to_list() == [hosts, hosts] == [expand(expr)] * 2
    assert errors == {}


def test_batched_expansion_equals_the_python_expander(monkeypatch):
    """Expressions expanded a few at a time (as for millions of records), with repeats, nulls,
    an invalid one and all-distinct rows, give what :func:`expand` gives row by row."""
    import reliability.hostlist as hl

    monkeypatch.setattr(hl, "_KEYS_PER_BATCH", 2)
    exprs = ["r1n[01-03]", "a,b", None, "r2n[7,09-10]", "a,b", "r[3-1]", "", "x[1-2],y"]
    nodes, errors, total = hl.node_lists(pl.Series(exprs), budget=1000)
    want = [[] if e is None or e in errors else hl.expand(e) for e in exprs]
    assert nodes.to_list() == want
    assert total == sum(len(w) for w in want)
    distinct = ["r1n[01-03]", "c,d", "z[5-6]"]  # each row its own expression, in order
    nodes, _, _ = hl.node_lists(pl.Series(distinct), distinct=True)
    assert nodes.to_list() == [hl.expand(e) for e in distinct]
    with pytest.raises(hl.NodeBudgetError):
        hl.node_lists(pl.Series(exprs), budget=5)
