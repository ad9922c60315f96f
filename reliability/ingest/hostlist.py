"""Slurm hostlist expressions: ``node[001-004,007],gpu-a[1-2]`` <-> a list of host names.

Follows Slurm's rules: ranges keep their zero padding (``node[08-10]`` -> node08, node09,
node10), several bracket groups in one name form a product (``r[1-2]n[1-2]``), and commas
inside brackets do not separate hosts. ``None assigned`` and empty strings expand to ``[]``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from itertools import product

import polars as pl

__all__ = ["HostlistError", "compress", "expand", "expand_column", "expand_table"]

_EMPTY = frozenset({"", "None assigned", "(null)", "None"})
_TRAILING_NUM = re.compile(r"^(.*?)(\d+)$")


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


def _expand_range(body: str, expr: str) -> list[str]:
    out: list[str] = []
    for item in body.split(","):
        item = item.strip()
        if not item:
            raise HostlistError(f"empty range item in hostlist {expr!r}")
        if "-" in item:
            lo, _, hi = item.partition("-")
            if not (lo.isdigit() and hi.isdigit()):
                raise HostlistError(f"bad range {item!r} in hostlist {expr!r}")
            a, b = int(lo), int(hi)
            if b < a:
                raise HostlistError(f"descending range {item!r} in hostlist {expr!r}")
            if b - a > 1_000_000:
                raise HostlistError(f"range {item!r} too large in hostlist {expr!r}")
            width = len(lo) if lo.startswith("0") or len(lo) == len(hi) else 0
            out.extend(str(i).zfill(width) for i in range(a, b + 1))
        else:
            if not item.isdigit():
                raise HostlistError(f"bad range item {item!r} in hostlist {expr!r}")
            out.append(item)
    return out


def _expand_one(part: str, expr: str) -> list[str]:
    if "[" not in part:
        if "]" in part:
            raise HostlistError(f"unbalanced ']' in hostlist {expr!r}")
        return [part]
    pieces: list[list[str]] = []
    i = 0
    while i < len(part):
        j = part.find("[", i)
        if j < 0:
            pieces.append([part[i:]])
            break
        k = part.find("]", j)
        if k < 0:
            raise HostlistError(f"unbalanced '[' in hostlist {expr!r}")
        if j > i:
            pieces.append([part[i:j]])
        pieces.append(_expand_range(part[j + 1 : k], expr))
        i = k + 1
    return ["".join(p) for p in product(*pieces)]


@lru_cache(maxsize=65536)
def _expand_cached(expr: str) -> tuple[str, ...]:
    hosts: list[str] = []
    for part in _split_top(expr):
        hosts.extend(_expand_one(part, expr))
    return tuple(hosts)


def expand(expr: str | None) -> list[str]:
    """Expand a hostlist expression into host names, in Slurm's order.

    Parameters
    ----------
    expr : a Slurm hostlist (``node[01-03],fat01``); None, ``""`` and ``None assigned``
        mean no hosts.

    Returns
    -------
    list of host names; raises :class:`HostlistError` on a malformed expression.
    """
    if expr is None:
        return []
    expr = expr.strip()
    if expr in _EMPTY:
        return []
    return list(_expand_cached(expr))


def compress(hosts: Iterable[str]) -> str:
    """Compress host names into a hostlist expression (inverse of :func:`expand`).

    Hosts sharing a prefix and a numeric suffix of the same width are merged into ranges;
    the order of first appearance of each prefix is kept, and duplicates are dropped.
    ``expand(compress(h)) == sorted-within-prefix unique h``.
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


def expand_column(frame: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, str]]:
    """Add ``nodes`` (list[str]) from ``nodelist``.

    Each distinct hostlist is expanded once (in polars for the common forms, with
    :func:`expand` for the rest) and gathered back by index. Returns the frame and
    {hostlist: error} for expressions that are not valid.
    """
    col = frame.get_column("nodelist")
    distinct = col.unique().drop_nulls()
    bracketed = distinct.filter(distinct.str.contains("[", literal=True))
    plain = distinct.filter(~distinct.str.contains("[", literal=True))
    mapping, errors = expand_table(bracketed)
    table = pl.concat(
        [pl.DataFrame({"nodelist": plain, "_expanded": plain.str.split(",")}), mapping]
    )
    keys = table.get_column("nodelist")
    idx = col.replace_strict(
        keys, pl.int_range(len(keys), eager=True), default=None, return_dtype=pl.Int64
    )
    empty = pl.Series([[]], dtype=pl.List(pl.String))
    values = pl.concat([table.get_column("_expanded"), empty])
    nodes = values.gather(idx.fill_null(len(keys)))  # unknown / null hostlist -> []
    return frame.with_columns(nodes=nodes), errors


_SIMPLE_HOSTLIST = (
    r"^[\w\-.]+(\[\d+(-\d+)?(,\d+(-\d+)?)*\])?(,[\w\-.]+(\[\d+(-\d+)?(,\d+(-\d+)?)*\])?)*$"
)


def expand_table(exprs: pl.Series) -> tuple[pl.DataFrame, dict[str, str]]:
    """Expand distinct hostlist expressions: (frame ``nodelist`` -> ``_expanded``, errors).

    Expressions made of ``prefix[ranges]`` parts (one bracket group per part, the common
    case) are expanded with polars; others go through :func:`expand`. Both follow
    the same zero-padding rule, checked by the tests.
    """
    exprs = exprs.drop_nulls()
    simple = exprs.filter(exprs.str.contains(_SIMPLE_HOSTLIST))
    other = exprs.filter(~exprs.str.contains(_SIMPLE_HOSTLIST))
    out: list[pl.DataFrame] = []
    if simple.len():
        parts = (
            pl.DataFrame({"nodelist": simple})
            .with_row_index("eid")
            .with_columns(part=pl.col("nodelist").str.extract_all(r"[\w\-.]+(?:\[[^\]]*\])?"))
            .explode("part")
            .with_row_index("pid")
            .with_columns(
                prefix=pl.col("part").str.extract(r"^([^\[]+)", 1),
                body=pl.col("part").str.extract(r"\[([^\]]*)\]", 1),
            )
        )
        plain_parts = parts.filter(pl.col("body").is_null()).select("eid", "pid", host="part")
        ranges = (
            parts.filter(pl.col("body").is_not_null())
            .with_columns(item=pl.col("body").str.split(","))
            .explode("item")
            .with_row_index("rid")
            .with_columns(
                lo=pl.col("item").str.extract(r"^(\d+)", 1),
                hi=pl.coalesce(pl.col("item").str.extract(r"-(\d+)$", 1), pl.col("item").str.extract(r"^(\d+)", 1)),
            )
            .with_columns(
                width=pl.when(pl.col("lo").str.starts_with("0") | (pl.col("lo").str.len_chars() == pl.col("hi").str.len_chars()))
                .then(pl.col("lo").str.len_chars())
                .otherwise(0),
                a=pl.col("lo").cast(pl.Int64),
                b=pl.col("hi").cast(pl.Int64),
            )
        )  # fmt: skip
        bad_eids = ranges.filter(
            (pl.col("b") < pl.col("a")) | (pl.col("b") - pl.col("a") > 1_000_000)
        )
        bad_eids = set(bad_eids.get_column("eid").to_list())
        hosts = (
            ranges.filter(~pl.col("eid").is_in(list(bad_eids)))
            .with_columns(n=pl.int_ranges("a", pl.col("b") + 1))
            .explode("n")
            .select(
                "eid",
                "pid",
                "rid",
                host=pl.col("prefix") + pl.col("n").cast(pl.String).str.zfill(pl.col("width")),
            )
        )
        allh = pl.concat(
            [plain_parts.select("eid", "pid", rid=pl.lit(0, pl.UInt32), host="host"), hosts],
            how="vertical_relaxed",
        )
        table = (
            allh.filter(~pl.col("eid").is_in(list(bad_eids)))
            .sort("eid", "pid", "rid", maintain_order=True)
            .group_by("eid", maintain_order=True)
            .agg(_expanded=pl.col("host"))
            .join(parts.select("eid", "nodelist").unique("eid"), on="eid")
            .select("nodelist", "_expanded")
        )
        out.append(table)
        if bad_eids:
            other = pl.concat([other, simple.gather(sorted(bad_eids))])
    errors: dict[str, str] = {}
    py_keys: list[str] = []
    py_vals: list[list[str]] = []
    for expr in other.to_list():
        try:
            py_vals.append(expand(expr))
            py_keys.append(expr)
        except HostlistError as exc:
            errors[expr] = str(exc)
    if py_keys:
        out.append(pl.DataFrame({"nodelist": py_keys, "_expanded": py_vals},
                                schema={"nodelist": pl.String, "_expanded": pl.List(pl.String)}))  # fmt: skip
    if not out:
        return pl.DataFrame(schema={"nodelist": pl.String, "_expanded": pl.List(pl.String)}), errors
    return pl.concat(out), errors
