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

__all__ = ["HostlistError", "compress", "expand"]

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
        if width:
            # padded numbers must all keep their exact width to survive the round trip
            pass
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
