import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reliability.ingest.hostlist import HostlistError, compress, expand


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


@settings(deadline=None)
@given(_hosts())
def test_compress_is_fixed_point(hosts):
    expr = compress(hosts)
    assert compress(expand(expr)) == expr


@settings(deadline=None)
@given(st.lists(_hosts(), min_size=1, max_size=5))
def test_vectorised_expansion_matches_reference(groups):
    """The polars expansion used by read_sacct agrees with hostlist.expand on every expression."""
    import polars as pl

    from reliability.ingest.hostlist import expand_table

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
