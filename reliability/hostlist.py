"""Slurm hostlist expressions: ``node[001-004,007],gpu-a[1-2]`` <-> a list of host names.

Follows Slurm's rules: ranges keep their zero padding (``node[08-10]`` -> node08, node09,
node10), several bracket groups in one name form a product (``r[1-2]n[1-2]``), and commas
inside brackets do not separate hosts. ``None assigned`` and empty strings expand to ``[]``.

Sizes are bounded before anything is expanded: the number of names an expression stands for
is computed arithmetically (sums over ranges, products over bracket groups), and an expression
of more than :data:`MAX_HOSTLIST_NODES` names is refused
(:class:`HostlistError`), so ``r[1-100000]n[1-100000]`` costs nothing.

A leaf of the package (it imports nothing of it): the simulator's writer compresses with
:func:`compress` and the readers expand with :func:`expand` / :func:`node_lists`. The tests
check each against expansions written in the tests, not against each other, so a shared bug
cannot cancel out (``tests/test_hostlist.py``). Also importable as
``reliability.ingest.hostlist`` (its home until 0.1.0).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from itertools import product

import numpy as np
import polars as pl

__all__ = [
    "MAX_HOSTLIST_NODES",
    "HostlistError",
    "NodeBudgetError",
    "compress",
    "count",
    "expand",
    "expand_column",
    "expand_table",
    "node_lists",
    "sizes",
]

#: most node names one hostlist expression may expand to (bounded before expansion): the most
#: nodes one job attempt may hold (:data:`reliability.ingest._bounds.MAX_NODES_PER_JOB` is this)
MAX_HOSTLIST_NODES = 1_000_000

_EMPTY = frozenset({"", "None assigned", "(null)", "None"})
_MAX_DIGITS = 18  # host numbers fit in an int64
_TRAILING_NUM = re.compile(r"^(.*?)([0-9]+)$")


class HostlistError(ValueError):
    """A hostlist expression that cannot be expanded (unbalanced brackets, bad range)."""


def _split_top(expr: str) -> list[str]:
    """Split on commas that are not inside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(expr):
        if ch == "[":
            depth += 1
            if depth > 1:
                raise HostlistError(f"nested brackets in hostlist {expr!r}")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"unbalanced ']' in hostlist {expr!r}")
        elif ch == "," and depth == 0:
            parts.append(expr[start:i])
            start = i + 1
    if depth != 0:
        raise HostlistError(f"unbalanced '[' in hostlist {expr!r}")
    parts.append(expr[start:])
    return [p.strip() for p in parts if p.strip()]


def _range_items(body: str, expr: str) -> list[tuple[str, str, int, int]]:
    """Parse a bracket body ``01-04,07`` into (lo text, hi text, lo, hi) items."""
    out: list[tuple[str, str, int, int]] = []
    for item in body.split(","):
        item = item.strip()
        if not item:
            raise HostlistError(f"empty range item in hostlist {expr!r}")
        lo, dash, hi = item.partition("-")
        if not dash:
            hi = lo
        if not (lo.isdigit() and hi.isdigit() and lo.isascii() and hi.isascii()):
            raise HostlistError(f"bad range {item[:40]!r} in hostlist {expr[:80]!r}")
        if max(len(lo), len(hi)) > _MAX_DIGITS:
            raise HostlistError(f"host number too long in hostlist {expr[:80]!r}")
        a, b = int(lo), int(hi)
        if b < a:
            raise HostlistError(f"descending range {item!r} in hostlist {expr!r}")
        out.append((lo, hi, a, b))
    return out


def _pieces(part: str, expr: str) -> list[str | list[tuple[str, str, int, int]]]:
    """Split a name into literal text and parsed bracket groups."""
    if "[" not in part:
        if "]" in part:
            raise HostlistError(f"unbalanced ']' in hostlist {expr!r}")
        return [part]
    pieces: list[str | list[tuple[str, str, int, int]]] = []
    i = 0
    while i < len(part):
        j = part.find("[", i)
        if j < 0:
            if "]" in part[i:]:
                raise HostlistError(f"unbalanced ']' in hostlist {expr!r}")
            pieces.append(part[i:])
            break
        k = part.find("]", j)
        if k < 0:
            raise HostlistError(f"unbalanced '[' in hostlist {expr!r}")
        if j > i:
            pieces.append(part[i:j])
        pieces.append(_range_items(part[j + 1 : k], expr))
        i = k + 1
    return pieces


def _size(pieces: list[str | list[tuple[str, str, int, int]]]) -> int:
    n = 1
    for p in pieces:
        if not isinstance(p, str):
            n *= sum(b - a + 1 for _, _, a, b in p)
    return n


def count(expr: str | None) -> int:
    """Count the host names a hostlist expression stands for, without expanding it.

    Parameters
    ----------
    expr : str or None
        A Slurm hostlist, e.g. ``gpu[001-128],login1``.

    Returns
    -------
    int
        The number of names; 0 for None or an empty hostlist.

    Raises
    ------
    HostlistError
        On a malformed expression (not on a large one).
    """
    if expr is None or expr.strip() in _EMPTY:
        return 0
    expr = expr.strip()
    return sum(_size(_pieces(part, expr)) for part in _split_top(expr))


def _expand_items(items: list[tuple[str, str, int, int]]) -> list[str]:
    out: list[str] = []
    for lo, hi, a, b in items:
        width = len(lo) if lo.startswith("0") or len(lo) == len(hi) else 0
        out.extend(str(i).zfill(width) for i in range(a, b + 1))
    return out


@lru_cache(maxsize=65536)
def _expand_cached(expr: str) -> tuple[str, ...]:
    parts = [_pieces(part, expr) for part in _split_top(expr)]
    total = sum(_size(p) for p in parts)
    if total > MAX_HOSTLIST_NODES:
        raise HostlistError(
            f"hostlist {expr[:80]!r} names {total:,} hosts, more than the "
            f"{MAX_HOSTLIST_NODES:,} one job may hold (not expanded)"
        )
    hosts: list[str] = []
    for pieces in parts:
        options = [[p] if isinstance(p, str) else _expand_items(p) for p in pieces]
        hosts.extend("".join(t) for t in product(*options))
    return tuple(hosts)


def expand(expr: str | None) -> list[str]:
    """Expand a hostlist expression into host names, in Slurm's order.

    Parameters
    ----------
    expr : str or None
        A Slurm hostlist (``node[01-03],fat01``); None, ``""`` and ``None assigned`` mean no hosts.

    Returns
    -------
    list of str
        List of host names; raises :class:`HostlistError` on a malformed expression or one of more
        than :data:`MAX_HOSTLIST_NODES` names (checked before anything
        is expanded).
    """
    if expr is None:
        return []
    expr = expr.strip()
    if expr in _EMPTY:
        return []
    return list(_expand_cached(expr))


def compress(hosts: Iterable[str]) -> str:
    """Compress host names into a hostlist expression (inverse of :func:`expand`).

    Hosts sharing a prefix and a numeric suffix of the same width are merged into ranges; the
    order of first appearance of each prefix is kept, and duplicates are dropped.
    ``expand(compress(h)) == sorted-within-prefix unique h``.

    Parameters
    ----------
    hosts : iterable of str
        Host names.

    Returns
    -------
    str
        The hostlist expression (``""`` for no hosts).
    """
    groups: dict[tuple[str, int], list[int]] = {}
    order: list[tuple[str, int] | str] = []
    plain_seen: set[str] = set()
    for h in hosts:
        m = _TRAILING_NUM.match(h)
        if m is None or "[" in h or "]" in h or "," in h:
            if h not in plain_seen:
                plain_seen.add(h)
                order.append(h)
            continue
        prefix, digits = m.group(1), m.group(2)
        # A number without leading zero has "width 0" (free width); zero-padded ones keep width.
        width = len(digits) if digits.startswith("0") and len(digits) > 1 else 0
        key = (prefix, width)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(int(digits))
    out: list[str] = []
    for item in order:
        if isinstance(item, str):
            out.append(item)
            continue
        prefix, width = item
        nums = sorted(set(groups[item]))
        ranges: list[str] = []
        start = prev = nums[0]
        for n in [*nums[1:], None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            lo, hi = str(start).zfill(width), str(prev).zfill(width)
            ranges.append(lo if start == prev else f"{lo}-{hi}")
            if n is not None:
                start = prev = n
        if len(ranges) == 1 and "-" not in ranges[0]:
            out.append(prefix + ranges[0])
        else:
            out.append(f"{prefix}[{','.join(ranges)}]")
    return ",".join(out)


def categories(numbered: pl.Series, numbering: pl.Categories) -> pl.Series:
    """Give the strings of ``numbering`` by physical code, as ``numbering.to_series()`` does.

    ``numbered`` is the only Categorical cast with ``numbering`` (a fresh one), so it uses
    every code. ``Categories.to_series`` reads the strings one Python call each (0.5 s for the
    700 k distinct hostlists of a 3 M-record export); here each code's first row is gathered
    and cast, in order of code.

    Parameters
    ----------
    numbered : polars.Series
        A column cast to ``pl.Categorical(numbering)``, the only one cast with it.
    numbering : polars.Categories
        Its (fresh) categories.

    Returns
    -------
    polars.Series
        ``String``: entry ``i`` is the string of physical code ``i``.
    """
    first = numbered.gather(numbered.to_physical().arg_unique()).drop_nulls()
    codes = first.to_physical()
    order = codes.arg_sort()
    if not codes.gather(order).equals(pl.arange(0, first.len(), dtype=codes.dtype, eager=True)):
        return numbering.to_series()  # (codes not dense: not expected, read one by one)
    return first.gather(order).cast(pl.String).rename(numbered.name)


def _index(values: pl.Series) -> tuple[pl.Series, pl.Series]:
    """(distinct non-null values, index of each row's value in them; null for null rows)."""
    # numbered by a Categorical of its own: one hash per row (2x faster than unique + join,
    # 4x faster than replace_strict, on 3.3 M rows of 17 k distinct lists)
    numbering = pl.Categories.random(namespace="reliability")
    numbered = values.cast(pl.Categorical(numbering))
    keys = categories(numbered, numbering)
    idx = numbered.to_physical()
    del numbered
    return keys.rename(values.name), idx


#: distinct hostlist expressions expanded at a time by :func:`node_lists`
_KEYS_PER_BATCH = 100_000


class NodeBudgetError(ValueError):
    """The node lists of a column would expand to more names than the budget allows.

    Parameters
    ----------
    message : str
        What was refused.
    names : int or None
        How many host names the node lists hold in all, when counted.
    """

    def __init__(self, message: str, names: int | None = None) -> None:
        super().__init__(message)
        self.names = names


#: a hostlist of ``name`` and ``prefix[ranges]`` parts (one bracket group each, ASCII digits):
#: the common form, parsed by polars; others (``r[1-2]n[1-2]``, spaces, errors) by :func:`expand`
_SIMPLE_HOSTLIST = (
    r"^[\w\-.]+(\[[0-9]{1,18}(-[0-9]{1,18})?(,[0-9]{1,18}(-[0-9]{1,18})?)*\])?"
    r"(,[\w\-.]+(\[[0-9]{1,18}(-[0-9]{1,18})?(,[0-9]{1,18}(-[0-9]{1,18})?)*\])?)*$"
)
_NOT_HOSTLIST = r"[^\w\-.\[\],]"  # a character no hostlist holds
# kinds of expression
_BLANK, _SIMPLE, _OTHER, _ODD = 0, 1, 2, 3


def _kinds(keys: pl.Series) -> pl.Series:
    """Classify expressions: blank, simple (vectorised), other (Python) or not a hostlist."""
    e = pl.col("e")
    return (
        pl.DataFrame({"e": keys})
        .select(
            pl.when(e.str.strip_chars().is_in(list(_EMPTY)))
            .then(_BLANK)
            .when(e.str.contains(_SIMPLE_HOSTLIST))
            .then(_SIMPLE)
            .when(e.str.contains(_NOT_HOSTLIST))
            .then(_ODD)
            .otherwise(_OTHER)
            .cast(pl.Int8)
        )
        .to_series()
    )


def _segments(exprs: pl.Series, k: pl.Series) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Cut simple expressions at their brackets, in one vectorised pass.

    ``a,r1n[05,07-08],b`` -> ``a,r1n`` | ``05,07-08`` | ``,b``: segments alternately outside
    and inside a bracket group, kept verbatim (an outside segment followed by a group ends
    with that group's prefix).

    Parameters
    ----------
    exprs : polars.Series
        Expressions that match :data:`_SIMPLE_HOSTLIST`.
    k : polars.Series
        Their numbers (UInt32), carried to the segments.

    Returns
    -------
    (polars.DataFrame, polars.DataFrame)
        The segments, in order: ``r`` (segment number), ``k``, ``text``, ``inside`` (bool);
        and the range items (``lo-hi`` or one number) of the groups that hold a range:
        ``r``, ``k``, ``lo`` (str), ``a``, ``b`` (Int64), in order.
    """
    s = exprs.str.replace_all("]", "[", literal=True).str.split("[")
    n_seg = s.list.len()
    seg = (
        pl.DataFrame({"k": k, "text": s, "first": n_seg.cum_sum() - n_seg})
        .explode("text")
        .with_row_index("r")
        .select("r", "k", "text", inside=(pl.col("r") - pl.col("first")) % 2 == 1)
    )
    dash = pl.col("inside") & pl.col("text").str.contains("-", literal=True)
    items = (
        seg.filter(dash)
        .select("r", "k", item=pl.col("text").str.split(","))
        .explode("item")
        .with_columns(pl.col("item").str.split_exact("-", 1))
        .unnest("item")
        .select(
            "r",
            "k",
            lo="field_0",
            a=pl.col("field_0").cast(pl.Int64),
            b=pl.coalesce("field_1", "field_0").cast(pl.Int64),
        )
    )
    return seg, items


def _totals(exprs: pl.Series, k: pl.Series, items: pl.DataFrame, n_keys: int) -> pl.Series:
    """Count the names of each expression by arithmetic on its items.

    One per comma-separated item or name, ``hi - lo`` more for each range (Int64; null when a
    range descends or the sum may not fit an Int64), for each of ``n_keys`` expressions (0 for
    those not in ``k``).
    """
    extra = items.group_by("k").agg(
        x=(pl.col("b") - pl.col("a")).sum(),
        bad=(pl.col("b") < pl.col("a")).any()
        | ((pl.col("b") - pl.col("a")).cast(pl.Float64).sum() > 9e18),
    )
    n = (exprs.str.count_matches(",", literal=True) + 1).cast(pl.Int64)
    return (
        pl.DataFrame({"k": pl.arange(0, n_keys, dtype=pl.UInt32, eager=True)})
        .join(pl.DataFrame({"k": k, "n": n}), on="k", how="left")
        .join(extra, on="k", how="left")
        .sort("k")
        .select(
            pl.when(pl.col("bad"))
            .then(None)
            .otherwise(pl.col("n").fill_null(0) + pl.col("x").fill_null(0))
        )
        .to_series()
        .rename("n")
    )


def _python_counts(exprs: list[str]) -> list[int]:
    out = []
    for expr in exprs:
        try:
            out.append(count(expr))
        except HostlistError:
            out.append(-1)
    return out


def sizes(exprs: pl.Series) -> pl.Series:
    """Count the host names of each expression of a column, without expanding any.

    Parameters
    ----------
    exprs : polars.Series
        Hostlist expressions (strings).

    Returns
    -------
    polars.Series
        Int64 ``n``: the number of names, 0 for null or empty, -1 for a malformed expression.
    """
    if exprs.len() == 0:
        return pl.Series("n", [], dtype=pl.Int64)
    kind = _kinds(exprs)
    simple = (kind == _SIMPLE).fill_null(False)
    k = pl.arange(0, exprs.len(), dtype=pl.UInt32, eager=True)
    grouped = simple & exprs.str.contains("[", literal=True)  # others: one name per comma
    items = _segments(exprs.filter(grouped), k.filter(grouped))[1]
    n = _totals(exprs.filter(simple), k.filter(simple), items, exprs.len())
    n = pl.when(kind.is_null() | (kind == _BLANK)).then(0).when(simple).then(n)
    n = pl.select(n.cast(pl.Int64)).to_series()
    rest = n.is_null()
    if rest.any():  # a descending range, a product of groups, spaces, ...: counted in Python
        n = n.scatter(
            k.filter(rest), pl.Series(_python_counts(exprs.filter(rest).to_list()), dtype=pl.Int64)
        )
    return n.rename("n")


def _names(seg: pl.DataFrame, items: pl.DataFrame) -> pl.DataFrame:
    """Build the host names of each expression (``k``, ``host``: list), in Slurm's order.

    A group's items with a range are rewritten first (``07-09,12`` -> ``07,08,09,12``: padded
    to ``len(lo)`` when ``lo`` has a leading zero, as :func:`_expand_items` does; a range of
    equal-length bounds pads to the length of ``lo``, which every number from ``lo`` on already
    has). The segment before a group ends with its prefix, so a group's text only needs the
    prefix after each comma (``r1n`` | ``05,07`` -> ``r1n`` | ``05,r1n07``): an expression's
    segments joined are its names, comma-separated, split once into the list (no string is
    built per name but those of ranges and of a group's later items).
    """
    text = pl.col("text")
    if items.height:
        num = pl.col("i").cast(pl.String)
        width = pl.when(pl.col("lo").str.starts_with("0")).then(pl.col("lo").str.len_bytes())
        ranges = (
            items.select(
                "r", w=width.fill_null(0).cast(pl.UInt32), i=pl.int_ranges("a", pl.col("b") + 1)
            )
            .explode("i")
            .select("r", t=pl.when(pl.col("w") > 0).then(num.str.zfill(pl.col("w"))).otherwise(num))
            .group_by("r", maintain_order=True)
            .agg("t")  # then list.join: 6x faster than a str.join aggregation
            .with_columns(pl.col("t").list.join(","))
        )
        seg = seg.join(ranges, on="r", how="left", maintain_order="left").select(
            "k", "inside", text=pl.coalesce("t", "text")
        )
    # only groups of several names change (their rows filtered first: a per-row replacement
    # costs per row); the prefix is the end of the segment before
    several = pl.col("inside") & text.str.contains(",", literal=True)
    grown = (
        seg.with_row_index("j")
        .with_columns(before=text.shift())
        .filter(several)
        .select(
            "j",
            text=text.str.replace_all(
                ",",
                pl.concat_str(pl.lit(","), pl.col("before").str.extract(r"([^,]*)$", 1)),
                literal=True,
            ),
        )
    )
    joined = seg.get_column("text").scatter(grown.get_column("j"), grown.get_column("text"))
    return (
        pl.DataFrame({"k": seg.get_column("k"), "text": joined})
        .group_by("k", maintain_order=True)
        .agg(text)
        .select("k", host=text.list.join("").str.split(","))
    )


def repeat_error(expr: str, names: Iterable[str]) -> str:
    """Word the error of a hostlist that names a host twice (the first host repeated).

    Parameters
    ----------
    expr : str
        The hostlist expression, as written.
    names : iterable of str
        Its host names, in Slurm's order.

    Returns
    -------
    str
        The error, naming the first host that comes twice.

    Raises
    ------
    ValueError
        If no host comes twice (a caller's bug).
    """
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return f"'{expr}' names host '{name}' twice (a Slurm node set never repeats a host)"
        seen.add(name)
    raise ValueError(f"{expr!r} names no host twice")


def _expand_keys(
    keys: pl.Series, *, budget: int | None, distinct: bool, rows: np.ndarray | None = None
) -> tuple[pl.Series, dict[str, str]]:
    """Expand distinct expressions to ``list[str]`` (``[]`` for blank ones, null for errors).

    ``rows``: how many rows hold each expression (for the ``budget``; default one each).
    """
    n_keys = keys.len()
    kind = _kinds(keys)
    k = pl.arange(0, n_keys, dtype=pl.UInt32, eager=True)
    simple = kind == _SIMPLE
    # a simple expression without a bracket is its names, comma-separated (63% of the
    # distinct lists of the 200k fragmented benchmark export, though only 10% of its text);
    # only the others are cut into segments and items
    grouped = simple & keys.str.contains("[", literal=True)
    seg, items = _segments(keys.filter(grouped), k.filter(grouped))
    total = _totals(keys.filter(simple), k.filter(simple), items, n_keys)
    ok = simple & total.is_not_null() & (total <= MAX_HOSTLIST_NODES)
    # a descending range or too many names (in a simple expression) is left to expand(), which
    # names the error; so are the rare forms only it reads (products of groups, spaces)
    py = (kind == _OTHER) | (simple & ~ok)
    py_keys = keys.filter(py).to_list()
    py_k = k.filter(py)
    if budget is not None:
        per_key = total.set(~ok, 0)
        if py_keys:
            counts = pl.Series(_python_counts(py_keys), dtype=pl.Int64)
            per_key = per_key.scatter(py_k, counts.set(counts > MAX_HOSTLIST_NODES, 0).clip(0))
        weight = np.ones(n_keys, dtype=np.int64) if rows is None else rows
        n = int(per_key.fill_null(0).to_numpy() @ weight)
        if n > budget:
            raise NodeBudgetError(f"the node lists would hold {n:,} host names")
    errors = {expr: f"not a hostlist {expr[:80]!r}" for expr in keys.filter(kind == _ODD)}
    if not ok.all():
        good = pl.col("k").is_in(k.filter(ok).implode())
        seg, items = seg.filter(good), items.filter(good)
    named = _names(seg, items)
    flat = ok & ~grouped
    got_k: list[int] = []
    got: list[list[str]] = []
    for key_no, expr in zip(py_k.to_list(), py_keys, strict=True):
        try:
            got.append(expand(expr))
            got_k.append(key_no)
        except HostlistError as exc:
            errors[expr] = str(exc)
    blank = k.filter(kind == _BLANK)
    lists = pl.concat(
        [
            keys.filter(flat).str.split(","),
            named.get_column("host"),
            pl.Series(got, dtype=pl.List(pl.String)),
            pl.Series([[]] * blank.len(), dtype=pl.List(pl.String)),
            pl.Series([None], dtype=pl.List(pl.String)),  # keys with an error
        ],
        rechunk=True,
    )
    at = np.full(n_keys, lists.len() - 1, dtype=np.int64)
    at[
        pl.concat(
            [k.filter(flat), named.get_column("k"), pl.Series(got_k, dtype=pl.UInt32), blank]
        ).to_numpy()
    ] = np.arange(lists.len() - 1)
    out = lists.gather(at).rename("host")
    if distinct:
        # a list repeats a host if it has fewer distinct names than names (one hash pass)
        twice = (out.list.n_unique() < out.list.len()).fill_null(False)
        for key, names in zip(keys.filter(twice), out.filter(twice), strict=True):
            errors[key] = repeat_error(key, names)
    if errors:
        out = out.set(keys.is_in(list(errors)), None)
    return out, errors


def node_lists(
    nodelist: pl.Series, *, budget: int | None = None, distinct: bool = False
) -> tuple[pl.Series, dict[str, str], int]:
    """Expand a column of hostlists into ``list[str]`` (null or empty hostlist -> ``[]``).

    An expression without a bracket (on a fragmented export, many: random placement leaves
    few neighbours to make a range of) is its names, comma-separated: one ``str.split``.
    The others are cut once, by polars, at their brackets into segments kept verbatim
    (:func:`_segments`); an expression's size is arithmetic (one name per comma, ``hi - lo``
    more per range), checked before anything is expanded: an expression of more than
    :data:`MAX_HOSTLIST_NODES` names is an error (its rows get
    ``[]``). Ranges are rewritten as their numbers (``int_ranges``), a group's later items get
    its prefix, and an expression's segments joined are its names, split once
    (:func:`_names`): no string is built per name but those of ranges and of a group's later
    items. The lists are gathered back to the rows. Expressions of a rarer form (a product of
    bracket groups, spaces) go through
    :func:`expand`.

    Parameters
    ----------
    nodelist : polars.Series
        Hostlist expressions, one per row.
    budget : int or None
        Most host names all rows may hold in total; None: no limit.
    distinct : bool
        An expression that names a host twice (``n1,n1``, ``n[1,1]``) is an error: a Slurm
        job's node set never repeats a host (checked once per distinct expression, in one
        ``list.n_unique`` pass over the lists).

    Returns
    -------
    (polars.Series, dict of str to str, int)
        The node lists, {hostlist: error} for expressions that are not valid, and the total
        number of names in the returned lists.

    Raises
    ------
    NodeBudgetError
        If the rows would hold more than ``budget`` names, before the batch of expressions
        that would pass it is expanded (:data:`_KEYS_PER_BATCH` distinct expressions a batch).
    """
    keys, idx = _index(nodelist)
    if keys.len():
        rows = (
            np.bincount(idx.drop_nulls().to_numpy(), minlength=keys.len())
            if budget is not None
            else None
        )
        # the distinct expressions a batch at a time: the expansion's intermediate frames
        # (segments, exploded ranges, names) are held for one batch, not for every list
        parts, errors, used = [], {}, 0
        for a in range(0, keys.len(), _KEYS_PER_BATCH):
            part_rows = None if rows is None else rows[a : a + _KEYS_PER_BATCH]
            left = None if budget is None else budget - used
            try:
                got, errs = _expand_keys(
                    keys.slice(a, _KEYS_PER_BATCH), budget=left, distinct=distinct, rows=part_rows
                )
            except NodeBudgetError:
                if not used:  # the first batch: its count is the whole count so far
                    raise
                raise NodeBudgetError(
                    f"the node lists would hold more than {budget:,} host names"
                ) from None
            if part_rows is not None:
                used += int(got.list.len().fill_null(0).to_numpy() @ part_rows)
            parts.append(got)
            errors.update(errs)
        lists = pl.concat(parts, rechunk=False) if len(parts) > 1 else parts[0]
    else:
        lists, errors = pl.Series([], dtype=pl.List(pl.String)), {}
    n_keys = keys.len()
    if idx.len() == n_keys and not idx.has_nulls() and idx.is_sorted():
        # every row its own expression, in row order (random placement on a busy cluster: no
        # two node lists alike): the lists are the column as they are, not a gathered copy
        nodes = lists.rename("nodes")
        if nodes.has_nulls():  # invalid expressions: no nodes
            nodes = nodes.fill_null(pl.lit([], pl.List(pl.String)))
        return nodes, errors, int(nodes.list.len().sum() or 0)
    empty = pl.Series([[]], dtype=pl.List(pl.String))
    values = pl.concat([lists, empty], rechunk=True)
    if values.has_nulls():  # invalid expressions: no nodes
        values = values.set(values.is_null(), None).fill_null(pl.lit([], pl.List(pl.String)))
    nodes = values.gather(idx.fill_null(values.len() - 1)).rename("nodes")
    return nodes, errors, int(nodes.list.len().sum() or 0)


def expand_column(frame: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, str]]:
    """Add ``nodes`` (list[str]) from ``nodelist`` (see :func:`node_lists`).

    Parameters
    ----------
    frame : polars.DataFrame
        A frame with a ``nodelist`` column of hostlists.

    Returns
    -------
    (polars.DataFrame, dict of str to str)
        The frame with ``nodes``, and {hostlist: error} for expressions that are not valid.
    """
    nodes, errors, _ = node_lists(frame.get_column("nodelist"))
    return frame.with_columns(nodes), errors


def expand_table(exprs: pl.Series) -> tuple[pl.DataFrame, dict[str, str]]:
    """Expand distinct hostlist expressions.

    Expressions made of ``prefix[ranges]`` parts (one bracket group per part, the common case)
    are parsed and expanded with polars (as in :func:`node_lists`), after their sizes are
    checked; others go through :func:`expand`. Both follow the same zero-padding rule, checked
    by the tests.

    Parameters
    ----------
    exprs : polars.Series
        Distinct hostlist expressions (nulls are dropped).

    Returns
    -------
    (polars.DataFrame, dict of str to str)
        A frame ``nodelist`` -> ``_expanded`` (list of names), and {hostlist: error} for
        expressions that are not valid.
    """
    exprs = exprs.drop_nulls().unique(maintain_order=True)
    if exprs.len() == 0:
        return pl.DataFrame(schema={"nodelist": pl.String, "_expanded": pl.List(pl.String)}), {}
    lists, errors = _expand_keys(exprs, budget=None, distinct=False)
    table = pl.DataFrame({"nodelist": exprs, "_expanded": lists})
    return table.filter(pl.col("_expanded").is_not_null()), errors
