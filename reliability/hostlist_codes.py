"""Hostlists to compact node lists (``List(Categorical)``) without a string per host name.

:func:`reliability.hostlist.node_lists` builds each host name as a string and the reader then
numbers them (a hash per name). On a busy cluster's export (random placement: a 512-node job's
NodeList is hundreds of ``rack[a,b-c]`` parts) that is most of the read. This module reads the
hostlists as *tokens* instead: an expression split at its commas is a sequence of tokens of few
shapes (``r12n03``, ``r12n[03``, ``07``, ``09-11]``, ``r12n[05]``), and a whole export has few
distinct tokens (tens of thousands for millions of names). Each distinct token is classified
once; a row's tokens are checked against the grammar by arithmetic (bracket depth by a running
sum); the numbers of a range are a range of integers; the prefix of a bracket group is carried
to its items by a forward fill. A host name is then an index into a small table of names
(the distinct bare tokens, and every ``prefix + number`` of a family's numbers from its smallest
to its largest), built once per batch and numbered once; the lists are that table gathered.

What the token grammar does not cover (products of groups ``r[1-2]n[1-2]``, spaces, empty
items, errors) goes through :func:`reliability.hostlist.node_lists`, which names the error:
the result is the same list, in the same (Slurm's) order, as :func:`reliability.hostlist.expand`
gives, which the tests check against expansions written by hand and against that function.
"""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np
import polars as pl

from reliability import hostlist

__all__ = ["budget_count", "compact_node_lists"]

#: the compact dtype of node lists (``List(String)`` once cast, frame-equal)
NODES_COMPACT = pl.List(pl.Categorical)

_N = r"[0-9]{1,18}"
_NAME = r"[\w\-.]+"
_ITEM = rf"({_N})(?:-({_N}))?"
# token kinds: a name outside brackets, a name opening a group (with its first item), a group
# of one item, an item inside a group, the item closing a group
_BARE, _OPEN, _ONE, _INNER, _CLOSE = 1, 2, 3, 4, 5
#: most entries of the name table of one batch (a family's numbers from smallest to largest):
#: sparser numbering (``node[1,1000000]``) goes through :func:`hostlist.node_lists`
MAX_TABLE = 1 << 21
#: and at most this many entries per name the batch holds, beyond :data:`_SMALL_TABLE`: a
#: sparse family (``n[9,943427]``) costs a string per number of its span, which building
#: the names themselves does not (a few rows of sparse numbers: 0.5 s against 15 ms)
_TABLE_PER_NAME = 4
_SMALL_TABLE = 1 << 16
_WIDTHS = 20  # zero-padding widths 0..18, and one spare


# shape of a distinct token (bit flags): opens a group, closes one, is a host name (outside
# brackets), is an item (``07`` or ``07-09``, inside brackets)
_OPENS, _CLOSES, _NAME_OK, _ITEM_OK = 1, 2, 4, 8


def _kinds_by_shape() -> np.ndarray:
    """Kind of a token by ``shape * 3 + depth`` (depth before it: 0, 1, or more): 0 if invalid."""
    lut = np.zeros(16 * 3, dtype=np.int8)
    for shape in range(16):
        opens, closes = bool(shape & _OPENS), bool(shape & _CLOSES)
        if shape & _NAME_OK and not (opens or closes):
            lut[shape * 3] = _BARE
        elif opens:
            lut[shape * 3] = _ONE if closes else _OPEN
        if shape & _ITEM_OK and not opens:
            lut[shape * 3 + 1] = _CLOSE if closes else _INNER
    return lut


_KIND = _kinds_by_shape()


def _token_table(tokens: pl.Series) -> pl.DataFrame:
    """Classify distinct tokens: shape, bracket step, prefix, first number, count, padding."""
    t = pl.col("t")
    o = t.str.extract_groups(rf"^({_NAME})\[{_ITEM}(\]?)$").struct
    i = t.str.extract_groups(rf"^{_ITEM}(\]?)$").struct
    lo = pl.coalesce(o.field("2"), i.field("1"))
    hi = pl.coalesce(o.field("3"), o.field("2"), i.field("2"), i.field("1"))
    opens = o.field("1").is_not_null()
    closes = (pl.coalesce(o.field("4"), i.field("3")) == "]").fill_null(False)
    # a descending range is left to node_lists (which names the error): no shape
    lo_n, hi_n = lo.cast(pl.Int64).fill_null(0), hi.cast(pl.Int64).fill_null(0)
    shape = (
        opens.cast(pl.Int8) * _OPENS
        + closes.cast(pl.Int8) * _CLOSES
        + t.str.contains(rf"^{_NAME}$").fill_null(False).cast(pl.Int8) * _NAME_OK
        + i.field("1").is_not_null().cast(pl.Int8) * _ITEM_OK
    )
    return pl.DataFrame({"t": tokens}).select(
        shape=pl.when(hi_n < lo_n).then(pl.lit(0, pl.Int8)).otherwise(shape).cast(pl.Int8),
        step=opens.cast(pl.Int32) - closes.cast(pl.Int32),
        prefix=o.field("1"),
        lo=lo_n,
        count=(hi_n - lo_n + 1).clip(1),
        width=pl.when(lo.str.starts_with("0")).then(lo.str.len_bytes()).otherwise(0).cast(pl.Int64),
    )


class _Batch(NamedTuple):
    """Rows of a batch expanded by :func:`_fast`."""

    ok: np.ndarray  # per row: expanded here (else left to hostlist.node_lists)
    names: int  # names of the rows expanded here
    flat: pl.Series  # their names, in row order (Categorical)
    row: np.ndarray  # the row of each name


def _fast(exprs: pl.Series, budget: int | None) -> _Batch | None:
    """Expand the rows the token grammar covers (None: the batch's name table is too sparse).

    Raises :class:`hostlist.NodeBudgetError` before building any name when the rows expanded
    here would hold more than ``budget`` names. None when the name table would pass
    :data:`MAX_TABLE` entries or be sparse (over :data:`_TABLE_PER_NAME` entries per name
    beyond :data:`_SMALL_TABLE`): the caller expands the batch otherwise.
    """
    n_rows = exprs.len()
    blank = (exprs.is_null() | exprs.is_in(list(hostlist._EMPTY))).to_numpy()
    pieces = exprs.set(pl.Series(blank), None).str.split(",")
    lens = pieces.list.len().fill_null(0).to_numpy().astype(np.int64)
    numbering = pl.Categories.random(namespace="reliability")
    tok = pieces.explode().drop_nulls().cast(pl.Categorical(numbering))
    del pieces
    code = tok.to_physical().to_numpy()
    tokens = hostlist.categories(tok, numbering)
    del tok
    if not code.size:  # every row blank
        return _Batch(blank, 0, pl.Series([], dtype=pl.Categorical), code.astype(np.int32))
    table = _token_table(tokens)
    n_tok = code.size
    row = np.repeat(np.arange(n_rows, dtype=np.int32), lens)
    ends = np.cumsum(lens)
    has = lens > 0
    step = table.get_column("step").to_numpy()[code]
    after = np.cumsum(step, dtype=np.int32)
    depth = after - step
    del step
    # bracket depth before each token, counted from its row's start (not 0 only after a row
    # whose brackets do not balance)
    row_start = np.zeros(n_rows, dtype=np.int32)
    row_start[has] = depth[(ends - lens)[has]]
    if row_start.any():
        depth -= row_start[row]
    kind = _KIND[(table.get_column("shape").to_numpy() * 3)[code] + np.clip(depth, 0, 2)]
    del depth
    # a row is read here when every token has its kind and its last group is closed
    ok_row = np.ones(n_rows, dtype=bool)
    ok_row[row[kind == 0]] = False
    ok_row[has] &= after[ends[has] - 1] == row_start[has]
    ok_row = (ok_row & has) | blank
    del after
    numeric = kind >= _OPEN
    count = np.where(numeric, table.get_column("count").to_numpy()[code], 1)
    total = int(count.sum())
    most = int(lens.max()) * int(table.get_column("count").max() or 1)  # bounds a row's names
    if total > hostlist.MAX_HOSTLIST_NODES and most > hostlist.MAX_HOSTLIST_NODES:
        # a row may pass it: left to node_lists, which names the error
        size = np.bincount(row, weights=count, minlength=n_rows)
        ok_row &= size <= hostlist.MAX_HOSTLIST_NODES
    if not ok_row.all():
        keep = ok_row[row]
        code, row, kind, numeric, count = (
            code[keep],
            row[keep],
            kind[keep],
            numeric[keep],
            count[keep],
        )
        n_tok, total = code.size, int(count.sum())
    if budget is not None and total > budget:
        raise hostlist.NodeBudgetError(f"the node lists would hold {total:,} host names", total)
    # the family (prefix, padding) of each numeric token: its group's prefix, opened last
    prefix_numbering = pl.Categories.random(namespace="reliability")
    prefix_no = table.get_column("prefix").cast(pl.Categorical(prefix_numbering))
    prefix_names = hostlist.categories(prefix_no, prefix_numbering)
    prefix_at = prefix_no.to_physical().fill_null(0).to_numpy().astype(np.int64)
    opened = np.flatnonzero((kind == _OPEN) | (kind == _ONE))
    del kind
    lead = int(opened[0]) if opened.size else n_tok
    prefix = np.repeat(
        np.concatenate([[0], prefix_at[code[opened]] * _WIDTHS]),
        np.concatenate([[lead], np.diff(opened, append=n_tok)]),
    )
    n_fam = prefix_names.len() * _WIDTHS + 1  # the last: bare tokens
    prefix += table.get_column("width").to_numpy()[code]
    family = np.where(numeric, prefix, n_fam - 1)
    del prefix
    lo = table.get_column("lo").to_numpy()[code]
    low = np.full(n_fam, np.iinfo(np.int64).max)
    high = np.full(n_fam, np.iinfo(np.int64).min)
    np.minimum.at(low, family, lo)
    np.maximum.at(high, family, lo + count - 1)
    used = high[:-1] >= low[:-1]
    span = np.where(used, high[:-1] - low[:-1] + 1, 0)
    size = int(span.sum())
    if size > MAX_TABLE or size > _TABLE_PER_NAME * total + _SMALL_TABLE:
        return None
    base = table.height + np.concatenate([[0], np.cumsum(span)]).astype(np.int64)
    low[-1] = 0
    # each token's first entry in the name table (a bare token is its own entry)
    first = np.where(numeric, base[family] + lo - low[family], code)
    del family, lo, numeric
    if total == n_tok:
        entry = first
    else:  # ranges: one entry per number, in order (the k-th name of a token: first + k)
        starts = np.cumsum(count) - count
        entry = np.repeat(first - starts, count)
        entry += np.arange(total, dtype=entry.dtype)
        row = np.repeat(row, count)
    # the name table: the distinct tokens (bare ones are names) and each family's numbers
    fams = np.flatnonzero(used)
    fam_rep = np.repeat(fams, span[fams])
    number = np.arange(fam_rep.size) - np.repeat(np.cumsum(span[fams]) - span[fams], span[fams])
    num = pl.Series(number + low[fam_rep], dtype=pl.Int64).cast(pl.String)
    w = pl.Series(fam_rep % _WIDTHS, dtype=pl.Int64)
    family_names = pl.select(
        pl.concat_str(
            pl.lit(prefix_names).gather(pl.lit(pl.Series(fam_rep // _WIDTHS, dtype=pl.UInt32))),
            pl.when(pl.lit(w) > 0).then(pl.lit(num).str.zfill(pl.lit(w))).otherwise(pl.lit(num)),
        )
    ).to_series()
    # (only bare tokens are names: the others are not added to the global categories)
    bare_names = tokens.set(pl.Series(table.get_column("shape").to_numpy() & _NAME_OK == 0), None)
    names = pl.concat([bare_names, family_names]).cast(pl.Categorical)
    return _Batch(ok_row, total, names.gather(pl.Series(entry, dtype=pl.UInt32)), row)


#: rows below which :func:`compact_node_lists` uses one thread
_MIN_ROWS_PER_THREAD = 10_000
#: a column of more than ``_MIN_DISTINCT_ROWS`` rows is expanded per distinct hostlist (then
#: gathered to the rows) when its distinct hostlists hold less than ``_DISTINCT_SHARE`` of its
#: text (a compact export; a fragmented one with its steps, which repeat the allocation's
#: list). Text, not rows: random placement repeats its one-node lists, not its long ones
#: (half the rows of a batch distinct, 98% of the text). Measured on the whole column: a
#: step's list may be far from its allocation's.
_MIN_DISTINCT_ROWS = 20_000
_DISTINCT_SHARE = 0.75  # (the index and the gather cost far less than an expansion)


def _sizes(exprs: pl.Series) -> np.ndarray:
    """Names each hostlist counts for in the budget, int64, as :func:`hostlist.node_lists` counts.

    0 for an invalid expression or one over the per-job cap; a list that names a host twice
    counts its names (the budget is checked before the lists are).
    """
    n = hostlist.sizes(exprs).to_numpy().astype(np.int64)  # (a copy: a view is read-only)
    odd = (hostlist._kinds(exprs) == hostlist._ODD).fill_null(False).to_numpy()
    n[(n < 0) | (n > hostlist.MAX_HOSTLIST_NODES) | odd] = 0
    return n


def budget_count(exprs: pl.Series) -> int:
    """Count the host names the node lists of ``exprs`` hold for the budget, in all.

    As :func:`compact_node_lists` and :func:`hostlist.node_lists` count them, without expanding:
    an expression that is not a hostlist, or one over the per-job cap, counts none; a list that
    names a host twice counts its names (the budget is checked before the lists are).

    Parameters
    ----------
    exprs : polars.Series
        Slurm hostlist expressions (String; nulls count none).

    Returns
    -------
    int
        Host names [count].
    """
    return int(_sizes(exprs).sum())


def _by_distinct(
    exprs: pl.Series, *, budget: int | None, distinct: bool, threads: int
) -> tuple[pl.Series, dict[str, str], int]:
    """Expand each distinct hostlist once and gather the lists to the rows.

    For compact exports (a few thousand distinct lists for millions of records) and
    fragmented ones with their steps. The distinct lists hold no more names than the rows, so
    they are expanded within the budget, then every row's names are counted against it before
    any is gathered.
    """
    keys, idx = hostlist._index(exprs)
    rows = np.bincount(idx.drop_nulls().to_numpy(), minlength=keys.len())
    try:
        lists, errors, _ = _by_rows(keys, budget=budget, distinct=distinct, threads=threads)
        n_keys = lists.list.len().to_numpy().astype(np.int64)
        if errors:  # a list that names a host twice is [] but counts its names, as in _sizes
            bad = keys.is_in(list(errors)).to_numpy()
            n_keys[bad] = _sizes(keys.filter(pl.Series(bad)))
    except hostlist.NodeBudgetError:  # the rows' count, for the message
        n_keys, lists = _sizes(keys), None
    n = int(n_keys @ rows)
    if (budget is not None and n > budget) or lists is None:
        raise hostlist.NodeBudgetError(f"the node lists would hold {n:,} host names", n)
    values = pl.concat([lists, pl.Series([[]], dtype=NODES_COMPACT)], rechunk=True)
    nodes = values.gather(idx.fill_null(values.len() - 1)).rename("nodes")
    return nodes, errors, int(nodes.list.len().sum() or 0)


def compact_node_lists(
    nodelist: pl.Series, *, budget: int | None = None, distinct: bool = False, threads: int = 2
) -> tuple[pl.Series, dict[str, str], int]:
    """Expand a column of hostlists into compact node lists (``List(Categorical)``).

    The same lists, errors and count as :func:`reliability.hostlist.node_lists` (cast to
    :data:`NODES_COMPACT`), read as tokens (see the module's text), ``threads`` slices of the
    rows at a time (numpy and polars let go of the interpreter while they work).

    Parameters
    ----------
    nodelist : polars.Series
        Hostlist expressions, one per row.
    budget : int or None
        Most host names all rows may hold in total; None: no limit. Each slice checks its own
        count against it before building a name, and the whole is checked before the rows
        left to :func:`reliability.hostlist.node_lists` are expanded (so at most ``threads``
        times the budget is built before a refusal).
    distinct : bool
        An expression that names a host twice is an error (a Slurm node set never repeats one).
    threads : int
        Slices expanded at a time.

    Returns
    -------
    (polars.Series, dict of str to str, int)
        The node lists (``nodes``; ``[]`` for an empty, null or invalid hostlist), {hostlist:
        error} for expressions that are not valid, and the number of names in the lists.

    Raises
    ------
    NodeBudgetError
        If the rows would hold more than ``budget`` names.
    """
    n_rows = nodelist.len()
    exprs = nodelist.cast(pl.String)
    if n_rows > _MIN_DISTINCT_ROWS:
        e = pl.col("e")
        distinct_bytes, all_bytes = (
            pl.DataFrame({"e": exprs})
            .select(
                d=e.filter(e.is_first_distinct()).str.len_bytes().sum(), a=e.str.len_bytes().sum()
            )
            .row(0)
        )
        if distinct_bytes < _DISTINCT_SHARE * all_bytes:
            return _by_distinct(exprs, budget=budget, distinct=distinct, threads=threads)
    return _by_rows(exprs, budget=budget, distinct=distinct, threads=threads)


def _by_rows(
    nodelist: pl.Series, *, budget: int | None, distinct: bool, threads: int
) -> tuple[pl.Series, dict[str, str], int]:
    """:func:`compact_node_lists` of each row's hostlist (``String``), ``threads`` slices at a time."""
    n_rows = nodelist.len()
    k = max(1, min(threads, n_rows // _MIN_ROWS_PER_THREAD))
    cuts = [n_rows * i // k for i in range(k + 1)]
    slices = [nodelist.slice(a, b - a) for a, b in itertools.pairwise(cuts)]
    try:
        if k > 1:
            with ThreadPoolExecutor(max_workers=k) as pool:
                got = list(pool.map(lambda s: _fast(s, budget), slices))
        else:
            got = [_fast(s, budget) if s.len() else None for s in slices]
    except hostlist.NodeBudgetError:  # a slice passed it: the message counts every row
        n = budget_count(nodelist)
        raise hostlist.NodeBudgetError(f"the node lists would hold {n:,} host names", n) from None
    if any(g is None for g in got):
        lists, errors, n = hostlist.node_lists(nodelist, budget=budget, distinct=distinct)
        return lists.cast(NODES_COMPACT), errors, n
    ok_row = np.concatenate([g.ok for g in got])
    rest = np.flatnonzero(~ok_row)
    n = sum(g.names for g in got)
    if budget is not None:
        if rest.size:
            n += budget_count(nodelist.gather(rest))  # (too many names is an error: none held)
        if n > budget:
            raise hostlist.NodeBudgetError(f"the node lists would hold {n:,} host names", n)
    name_row = np.concatenate([g.row.astype(np.int64) + a for g, a in zip(got, cuts, strict=False)])
    flat = pl.concat([g.flat for g in got], rechunk=False)
    del got
    grouped = (
        pl.DataFrame({"row": pl.Series(name_row, dtype=pl.UInt32).set_sorted(), "nodes": flat})
        .group_by("row", maintain_order=True)
        .agg("nodes")
    )
    del name_row, flat
    errors: dict[str, str] = {}
    if distinct and grouped.height:
        twice = grouped.filter(pl.col("nodes").list.n_unique() < pl.col("nodes").list.len())
        for r, names in twice.iter_rows():
            errors[nodelist[r]] = hostlist.repeat_error(nodelist[r], names)
        grouped = grouped.filter(~pl.col("row").is_in(twice.get_column("row").implode()))
    parts = [grouped]
    if rest.size:
        lists, errs, _ = hostlist.node_lists(nodelist.gather(rest), distinct=distinct)
        errors.update(errs)
        parts.append(
            pl.DataFrame(
                {"row": pl.Series(rest, dtype=pl.UInt32), "nodes": lists.cast(NODES_COMPACT)}
            )
        )
    filled = (
        pl.DataFrame({"row": pl.arange(0, n_rows, dtype=pl.UInt32, eager=True)})
        .join(pl.concat(parts), on="row", how="left", maintain_order="left")
        .get_column("nodes")
        .fill_null(pl.lit([], NODES_COMPACT))
    )
    total = int(filled.list.len().sum() or 0)
    return filled.rename("nodes"), errors, total
