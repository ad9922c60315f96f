"""Hostlists checked against expansions written here, not against the package's other half.

The simulator's writer compresses node names with :func:`reliability.hostlist.compress` (or
its index-based twin :func:`reliability.sim.emit.node_hostlist`) and the readers expand them
with :func:`reliability.hostlist.expand` / :func:`~reliability.hostlist.node_lists`. A round
trip through both cannot see a bug they share (say both drop the zero padding), so each half
is checked here on its own:

- the readers: expressions are built together with their hosts (no compress involved), then
  read by ``expand``, by the vectorised ``node_lists`` and by :func:`read_sacct` from a file;
- the writers: their expressions are expanded by :func:`_reference_expand`, a plain expander
  written from Slurm's rules (commas outside brackets separate names, bracket groups multiply,
  a range keeps the width of its lower bound), itself checked on examples written out by hand.
"""

from __future__ import annotations

import itertools
import re

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reliability.hostlist import compress, expand, node_lists
from reliability.ingest import read_sacct
from reliability.sim.emit import node_hostlist


def _reference_expand(expr: str | None) -> list[str]:
    """Expand a hostlist in Slurm's order, independently of the package."""
    if expr is None or expr in ("", "None assigned"):
        return []
    names, depth, cur = [], 0, ""
    for ch in expr:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            names.append(cur)
            cur = ""
        else:
            cur += ch
    names.append(cur)
    out: list[str] = []
    for name in names:
        choices = []
        for piece in re.split(r"(\[[^\]]*\])", name):
            if not piece.startswith("["):
                choices.append([piece])
                continue
            texts = []
            for item in piece[1:-1].split(","):
                lo, _, hi = item.partition("-")
                texts += [f"{n:0{len(lo)}d}" for n in range(int(lo), int(hi or lo) + 1)]
            choices.append(texts)
        out += ["".join(c) for c in itertools.product(*choices)]
    return out


@pytest.mark.parametrize(
    ("expr", "hosts"),
    [
        ("tux[1-3]", ["tux1", "tux2", "tux3"]),
        ("linux[00-02],fat", ["linux00", "linux01", "linux02", "fat"]),
        ("n[8-10]", ["n8", "n9", "n10"]),
        ("n[098-101]", ["n098", "n099", "n100", "n101"]),
        ("rack[1-2]n[3,5]", ["rack1n3", "rack1n5", "rack2n3", "rack2n5"]),
        ("a[1,3-4]b,c7", ["a1b", "a3b", "a4b", "c7"]),
        ("None assigned", []),
    ],
)
def test_the_reference_expander_on_examples_written_out(expr, hosts):
    assert _reference_expand(expr) == hosts


@st.composite
def _group(draw) -> tuple[str, list[str]]:
    """A bracket group and its numbers' texts: ascending, non-overlapping items."""
    items, texts, n = [], [], draw(st.integers(0, 120))
    for _ in range(draw(st.integers(1, 4))):
        lo = n + draw(st.integers(0, 30))
        hi = lo + draw(st.integers(0, 12))
        width = draw(st.sampled_from([0, 0, 2, 3, 4]))  # 0: no padding
        items.append(f"{lo:0{width}d}" if lo == hi else f"{lo:0{width}d}-{hi:0{width}d}")
        texts += [f"{k:0{width}d}" for k in range(lo, hi + 1)]
        n = hi + 1
    return f"[{','.join(items)}]", texts


@st.composite
def _expression(draw) -> tuple[str, list[str]]:
    """A hostlist and its hosts in Slurm's order, built together (no package code)."""
    prefixes = draw(
        st.lists(
            st.sampled_from(["node", "gpu-a", "r", "x.y", "a_b", "ip-10-0-1-"]),
            min_size=1,
            max_size=3,
            unique=True,
        )
    )
    parts, hosts = [], []
    for prefix in prefixes:
        kind = draw(st.sampled_from(["bare", "group", "group", "two_groups"]))
        if kind == "bare":
            name = prefix + draw(st.sampled_from(["", "7", "007", "login"]))
            parts.append(name)
            hosts.append(name)
        elif kind == "group":
            text, nums = draw(_group())
            parts.append(prefix + text)
            hosts += [prefix + x for x in nums]
        else:
            (t1, n1), (t2, n2) = draw(_group()), draw(_group())
            parts.append(f"{prefix}{t1}n{t2}")
            hosts += [f"{prefix}{a}n{b}" for a in n1 for b in n2]
    return ",".join(parts), hosts


@settings(max_examples=150, deadline=None)
@given(_expression())
def test_the_readers_expand_what_the_expression_says(case):
    expr, hosts = case
    assert expand(expr) == hosts
    nodes, errors, n_names = node_lists(pl.Series([expr, None, expr]), budget=10**6)
    assert not errors
    assert nodes.to_list() == [hosts, [], hosts]
    assert n_names == 2 * len(hosts)


@settings(max_examples=15, deadline=None)
@given(st.lists(_expression(), min_size=1, max_size=12))
def test_read_sacct_lists_the_hosts_of_each_record(tmp_path_factory, cases):
    """The reader's ``nodes`` column, from a file of NodeList fields (no NNodes: the count is
    the list's length)."""
    lines = ["JobID|State|Submit|Start|End|NodeList"]
    for i, (expr, _) in enumerate(cases):
        lines.append(
            f"{100 + i}|COMPLETED|2025-01-01T00:00:00|2025-01-01T00:01:00|2025-01-01T01:00:00|{expr}"
        )
    path = tmp_path_factory.mktemp("hl") / "sacct.psv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = read_sacct(path, tz="UTC", cluster="c")
    assert r.rows_quarantined == 0
    jobs = r.frames["jobs"].sort("job_id")
    assert jobs.get_column("nodes").to_list() == [h for _, h in cases]
    assert jobs.get_column("n_nodes").to_list() == [len(h) for _, h in cases]


_NAME = st.builds(
    lambda p, n, w: f"{p}{n:0{w}d}",
    st.sampled_from(["node", "gpu-a", "x.y", "login"]),
    st.integers(0, 3000),
    st.sampled_from([0, 2, 3, 4]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_NAME, min_size=1, max_size=40))
def test_compress_names_exactly_the_hosts(names):
    """What the writer prints expands (by the reference) to the hosts, each once."""
    got = _reference_expand(compress(names))
    assert sorted(got) == sorted(set(names))
    assert len(got) == len(set(got))


@settings(max_examples=200, deadline=None)
@given(
    width=st.integers(1, 5),
    nodes=st.lists(st.integers(0, 2999), min_size=1, max_size=100),
)
def test_the_simulator_writes_exactly_its_nodes(width, nodes):
    """The simulator's sacct writer: node indices -> names ``gpu`` + index + 1, zero-padded."""
    got = _reference_expand(node_hostlist(nodes, "gpu", width))
    assert sorted(got) == sorted({f"gpu{i + 1:0{width}d}" for i in nodes})
    assert len(got) == len(set(got))


def test_the_old_import_path_still_works():
    """``reliability.ingest.hostlist`` (the module's home until 0.1.0) names the same functions."""
    from reliability.ingest import hostlist as old

    assert old.expand is expand
    assert old.compress is compress
    assert old.node_lists is node_lists
