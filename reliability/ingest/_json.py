r"""Bounded JSON parsing for the readers: nesting depth, record size, lone surrogates.

Python's :mod:`json` recurses once per level of nesting (a line of 100,000 ``[`` is a
``RecursionError``) and builds every value of a text at once (a 100 MiB line of ``{},{},...``
takes about 3 GB). The readers therefore parse JSON only through this module:

- :func:`structure` finds the structural characters of a JSON text (brackets and commas
  outside strings) and their nesting depth with numpy, a block at a time, without building
  any value: so the depth and the extent of each record are known before :mod:`json` sees it;
- :func:`loads_record` parses one record (a line of a JSON-lines file, one job of a
  ``sacct --json`` export) after checking its size (:data:`MAX_LINE_BYTES`) and depth
  (:data:`MAX_DEPTH`), and replaces lone surrogate escapes (``"\ud800"``, not text) by
  U+FFFD, as undecodable bytes are elsewhere.

The limits are far above what the sources write: a health or pod event line is a few hundred
bytes nested 1-2 levels; ``sacct --json`` nests about 10 levels.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from reliability.ingest._common import RAW_PREFIX

__all__ = [
    "MAX_DEPTH",
    "MAX_LINE_BYTES",
    "RAW_PREFIX",
    "JsonLimitError",
    "JsonValueError",
    "Mark",
    "Structure",
    "blank",
    "fix_surrogates",
    "list_items",
    "loads_record",
    "shallow_marks",
    "structure",
    "too_deep",
]

#: deepest nesting of arrays and objects accepted in any JSON input
MAX_DEPTH = 64
#: longest line of a JSON-lines input (health events, pod events) that is parsed [bytes]
MAX_LINE_BYTES = 1 << 20
#: bytes scanned per numpy block (bounds the scan's temporaries to a few times this)
_BLOCK = 1 << 20

# byte classes: 1 opening bracket, 2 closing bracket, 3 comma, 4 quote, 5 backslash
_CLASS = np.zeros(256, np.int8)
_CLASS[[ord("["), ord("{")]] = 1
_CLASS[[ord("]"), ord("}")]] = 2
_CLASS[ord(",")] = 3
_CLASS[ord('"')] = 4
_CLASS[ord("\\")] = 5
_CLASS_TABLE = _CLASS.tobytes()
_STRUCT_TABLE = ((_CLASS >= 1) & (_CLASS <= 3)).astype(np.int8).tobytes()
_STEP = np.array([0, 1, -1, 0], np.int64)
_SPACE = re.compile(rb"[ \t\r\n]*")


class JsonLimitError(ValueError):
    """A JSON record breaks a limit of this module (depth or size); the message says which.

    Parameters
    ----------
    message : str
        The limit broken, in words.
    pos : int or None
        Offset in the text where it is broken, when known.
    """

    def __init__(self, message: str, pos: int | None = None) -> None:
        super().__init__(message)
        self.pos = pos


class JsonValueError(ValueError):
    """A JSON record that :mod:`json` reads but that is ambiguous or not JSON (the message)."""


def _no_repeated_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in pairs:
        if k in out:
            raise JsonValueError(f"key {k[:40]!r} given twice in one object (ambiguous)")
        out[k] = v
    return out


def _no_constant(token: str) -> object:
    raise JsonValueError(f"{token} is not JSON (not a finite number)")


def _finite_float(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise JsonValueError(f"number {text[:40]} is not a finite number (too large for a float)")
    return v


_LINE_HOOKS = {
    "object_pairs_hook": _no_repeated_keys,
    "parse_constant": _no_constant,
    "parse_float": _finite_float,
}


@dataclass(frozen=True)
class Structure:
    """The structural characters of one block of a JSON text, outside strings.

    Attributes
    ----------
    pos : numpy.ndarray
        Offsets in the text (int64), increasing.
    kind : numpy.ndarray
        1 for ``[`` / ``{``, 2 for ``]`` / ``}``, 3 for ``,`` (int8).
    depth : numpy.ndarray
        Nesting depth after each character (int64): an opening bracket at depth 0 leaves 1.
    """

    pos: np.ndarray
    kind: np.ndarray
    depth: np.ndarray


def structure(
    data: bytes | memoryview, start: int = 0, stop: int | None = None, depth: int = 0
) -> Iterator[Structure]:
    """Yield the structural characters of ``data[start:stop]``, a block at a time.

    Quotes escaped by an odd run of backslashes do not open or close a string. JSON's
    structural characters are ASCII, so UTF-8 text is scanned as bytes. The text need not be
    valid JSON: the result is then whatever its quotes imply, and the caller's :mod:`json`
    parse of each piece finds the error.

    Parameters
    ----------
    data : bytes or memoryview
        UTF-8 JSON text.
    start, stop : int
        The range scanned [offsets]; ``start`` must be outside any string.
    depth : int
        Nesting depth at ``start``.

    Yields
    ------
    Structure
        One per block of about 1 MiB that holds any structural character.
    """
    view = memoryview(data).cast("B")
    stop = len(view) if stop is None else stop
    inside = 0  # 1 within a string at the block start
    slashes = 0  # backslashes that end the previous block
    for lo in range(start, stop, _BLOCK):
        hi = min(lo + _BLOCK, stop)
        chunk = bytes(view[lo:hi])
        cls = np.frombuffer(chunk.translate(_CLASS_TABLE), np.int8)
        quotes, slashes = _real_quotes(chunk, cls, slashes)
        struct = np.frombuffer(chunk.translate(_STRUCT_TABLE), np.bool_)
        if quotes.size:
            # the bytes between a quote and the next are alternately inside and outside
            bounds = np.empty(quotes.size + 2, np.int64)
            bounds[0], bounds[1:-1], bounds[-1] = 0, quotes, len(chunk)
            outside = np.zeros(quotes.size + 1, np.bool_)
            outside[inside::2] = True
            struct = struct & np.repeat(outside, np.diff(bounds))
            inside = (inside + quotes.size) & 1
        elif inside:
            continue
        pos = np.flatnonzero(struct)
        if pos.size == 0:
            continue
        kinds = cls[pos]
        after = depth + np.cumsum(_STEP[kinds])
        depth = int(after[-1])
        yield Structure(pos + lo, kinds, after)


def _real_quotes(chunk: bytes, cls: np.ndarray, slashes: int) -> tuple[np.ndarray, int]:
    """Offsets of the quotes of a block that no odd run of backslashes escapes.

    ``slashes`` backslashes end the previous block (a run may continue into this one).
    Returns the quotes and the number of backslashes that end this block.
    """
    quotes = np.flatnonzero(cls == 4)
    if b"\\" not in chunk:
        if slashes % 2 and quotes.size and quotes[0] == 0:
            quotes = quotes[1:]  # the quote at the block start ends an odd run
        return quotes, 0
    slash = np.flatnonzero(cls == 5)
    # each backslash's run of consecutive backslashes starts at offset first[i]
    first = np.zeros(slash.size, np.int64)
    breaks = np.flatnonzero(np.diff(slash) != 1) + 1
    first[breaks] = breaks
    first = slash[np.maximum.accumulate(first)]
    # the quotes right after a backslash (or at the block start) may be escaped
    after_slash = (quotes > 0) & (cls[np.maximum(quotes - 1, 0)] == 5)
    cand = np.flatnonzero(after_slash | (quotes == 0))
    if cand.size:
        q = quotes[cand]
        k = np.searchsorted(slash, q) - 1
        begin = first[np.maximum(k, 0)]
        run = np.where(after_slash[cand], q - begin, 0)
        # (a run that starts the block continues the previous block's)
        run += np.where(~after_slash[cand] | (begin == 0), slashes, 0)
        quotes = np.delete(quotes, cand[run % 2 == 1])
    end = len(cls) - 1
    carry = int(end + 1 - first[-1]) + (slashes if first[-1] == 0 else 0)
    return quotes, (carry if slash[-1] == end else 0)


def too_deep(text: str | bytes) -> int | None:
    """Return the nesting depth of a JSON text if it is deeper than :data:`MAX_DEPTH`.

    Parameters
    ----------
    text : str or bytes
        The text (UTF-8 if bytes).

    Returns
    -------
    int or None
        The deepest nesting of arrays and objects when it exceeds :data:`MAX_DEPTH`, else None.
        A text with at most :data:`MAX_DEPTH` brackets is not scanned.
    """
    if isinstance(text, str):
        if text.count("[") + text.count("{") <= MAX_DEPTH:
            return None
        text = text.encode("utf-8", "surrogatepass")
    elif text.count(b"[") + text.count(b"{") <= MAX_DEPTH:
        return None
    top = 0
    for block in structure(text):
        top = max(top, int(block.depth.max()))
    return top if top > MAX_DEPTH else None


class Mark(NamedTuple):
    """A structural character found by :func:`shallow_marks`."""

    pos: int  #: its offset in the text
    kind: int  #: 1 opening bracket, 2 closing bracket, 3 comma, 0 the end of the scan
    depth: int  #: nesting depth after it
    index: int  #: structural characters before it since the scan's start


def shallow_marks(
    data: bytes | memoryview,
    start: int = 0,
    stop: int | None = None,
    *,
    depth: int = 0,
    level: int = 1,
) -> Iterator[Mark]:
    """Yield the structural characters of ``data[start:stop]`` that delimit values at ``level``.

    Those are the commas at depth ``level``, the brackets that open a value from depth
    ``level`` or less, and those that close one back to it: the members of the top-level
    object for ``level=1``, the items of an array at depth 2 for ``level=2``. Everything
    deeper is counted, not listed.

    Parameters
    ----------
    data : bytes or memoryview
        UTF-8 JSON text.
    start, stop : int
        The range scanned [offsets]; ``start`` must be outside any string.
    depth : int
        Nesting depth at ``start``.
    level : int
        The depth whose delimiters are listed.

    Yields
    ------
    Mark
        In order of position; last, the end of the range (kind 0, the depth there and the
        number of structural characters in the range).

    Raises
    ------
    JsonLimitError
        If the text nests deeper than :data:`MAX_DEPTH` (counting ``depth``), with the offset.
    """
    seen = 0
    for block in structure(data, start, stop, depth):
        after = block.depth
        top = int(after.max())
        if top > MAX_DEPTH:
            at = int(block.pos[np.argmax(after > MAX_DEPTH)])
            raise JsonLimitError(f"JSON nested deeper than {MAX_DEPTH} levels", at)
        before = after - np.where(block.kind == 1, 1, np.where(block.kind == 2, -1, 0))
        hit = np.flatnonzero(np.minimum(before, after) <= level)
        for i in hit.tolist():
            yield Mark(int(block.pos[i]), int(block.kind[i]), int(after[i]), seen + i)
        seen += block.pos.size
        depth = int(after[-1])
    end = len(data) if stop is None else stop
    yield Mark(end, 0, depth, seen)


def fix_surrogates(value: object) -> tuple[object, bool]:
    r"""Replace lone surrogates (from ``\ud800``-style escapes) in every string by U+FFFD.

    Parameters
    ----------
    value : object
        A value :func:`json.loads` returned (nesting at most :data:`MAX_DEPTH`).

    Returns
    -------
    (object, bool)
        The value with its strings (keys included) fixed, and whether any was.
    """
    changed = False

    def fix(v: object) -> object:
        nonlocal changed
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                changed = True
                return v.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            return v
        if isinstance(v, list):
            return [fix(x) for x in v]
        if isinstance(v, dict):
            return {fix(k): fix(x) for k, x in v.items()}
        return v

    return fix(value), changed


def blank(data: bytes, lo: int = 0, hi: int | None = None) -> bool:
    """Tell whether ``data[lo:hi]`` is only white space (or empty).

    Parameters
    ----------
    data : bytes
        The text.
    lo, hi : int
        The range [offsets]; ``hi`` None: the end.

    Returns
    -------
    bool
        True for white space only.
    """
    hi = len(data) if hi is None else hi
    m = _SPACE.match(data, lo, hi)
    return m is not None and m.end() == hi


def list_items(data: bytes, lo: int, hi: int, *, depth: int) -> Iterator[tuple[int, int, int]]:
    """Yield the extent of each item of a JSON array, without parsing any.

    Parameters
    ----------
    data : bytes
        UTF-8 JSON text.
    lo, hi : int
        Offsets of the array's ``[`` and ``]``.
    depth : int
        Nesting depth inside the array (1 for a top-level array).

    Yields
    ------
    (int, int, int)
        The item's start and stop offsets (white space around it included) and the number of
        brackets and commas inside it (a bound on the values :mod:`json` would build).
    """
    prev, before, seen = lo, -1, 0
    for block in structure(data, lo + 1, hi, depth):
        commas = np.flatnonzero((block.kind == 3) & (block.depth == depth))
        for i, pos in zip((commas + seen).tolist(), block.pos[commas].tolist(), strict=True):
            yield prev + 1, pos, i - before - 1
            prev, before = pos, i
        seen += block.pos.size
    if before >= 0 or not blank(data, prev + 1, hi):
        yield prev + 1, hi, seen - before - 1


def loads_record(
    text: str | bytes,
    *,
    max_bytes: int = MAX_LINE_BYTES,
    what: str = "line",
    depth_checked: bool = False,
    repeated_keys: list[str] | None = None,
    strict: bool = False,
) -> tuple[object, bool]:
    """Parse one JSON record within the limits.

    Parameters
    ----------
    text : str or bytes
        The record's text (UTF-8 if bytes).
    max_bytes : int
        Longest record parsed [bytes].
    what : str
        What the record is, for the messages (``"line"``, ``"job record"``).
    depth_checked : bool
        The caller has checked the nesting already (:func:`shallow_marks`).
    repeated_keys : list of str or None
        If given, the keys named twice in one object are appended to it (``json.loads`` keeps
        the last value silently: the caller decides).
    strict : bool
        Refuse what :mod:`json` accepts but JSON (RFC 8259) leaves undefined or forbids
        (:class:`JsonValueError`): a key given twice in one object (``json`` keeps the last
        silently), ``NaN`` / ``Infinity`` tokens, and numbers too large for a float (``1e400``
        read as infinity). The JSON-lines readers (health, pod events) parse this way.

    Returns
    -------
    (object, bool)
        The value (lone surrogates replaced by U+FFFD) and whether any was replaced.

    Raises
    ------
    JsonLimitError
        If the record is longer than ``max_bytes`` or nested deeper than :data:`MAX_DEPTH`.
    JsonValueError
        (``strict``) If the record is ambiguous or holds a non-finite number.
    ValueError
        If it is not valid JSON (:class:`json.JSONDecodeError`, :class:`UnicodeDecodeError`, or
        an integer too long to convert).
    """
    size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise JsonLimitError(
            f"{what} of {size:,} bytes is longer than the {max_bytes:,}-byte limit of one JSON "
            "record: not parsed"
        )
    if not depth_checked and (depth := too_deep(text)) is not None:
        raise JsonLimitError(f"JSON nested deeper than {MAX_DEPTH} levels ({depth}): not parsed")
    if strict:
        value = json.loads(text, **_LINE_HOOKS)
    elif repeated_keys is None:
        value = json.loads(text)
    else:

        def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
            obj = dict(items)
            if len(obj) != len(items):
                seen: set[str] = set()
                repeated_keys.extend(k for k, _ in items if k in seen or seen.add(k))  # type: ignore[func-returns-value]
            return obj

        value = json.loads(text, object_pairs_hook=pairs)
    escaped = b"\\u" in text if isinstance(text, bytes) else "\\u" in text
    return fix_surrogates(value) if escaped else (value, False)
