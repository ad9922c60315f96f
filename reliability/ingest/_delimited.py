"""Splitting ``|``-delimited exports (``sacct --parsable2``, ``sacctmgr --parsable2``).

Slurm does no escaping: a ``|`` inside a job name or a drain reason adds a column, and a
newline inside a job name splits a record over several physical lines. Records with the
expected number of separators are split in bulk (polars, no Python loop); the few others are
repaired here: consecutive short lines are rejoined (never a line that has separators enough
to be a record of its own, and only when the joined lines form a well-formed record: else
the first line alone is quarantined and the next ones are read again), and extra separators
are assigned to the free-text fields in the one way that leaves every other field well
formed. A record that cannot be repaired unambiguously is quarantined with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations_with_replacement

import polars as pl

__all__ = ["SplitResult", "split_delimited"]

_MAX_EXTRA = 8
_MAX_CANDIDATES = 20_000


@dataclass
class SplitResult:
    """Records split into string columns, plus the records that could not be split."""

    records: pl.DataFrame  # line_no, line (raw, physical lines joined by \n), *fields
    bad_line_no: list[int]
    bad_raw: list[str]
    bad_reason: list[str]


def _assign(parts: list[str], fields: Sequence[str], combo: tuple[int, ...]) -> list[str]:
    out, k = [], 0
    for i in range(len(fields)):
        take = 1 + combo.count(i)
        out.append("|".join(parts[k : k + take]))
        k += take
    return out


def _valid(
    values: list[str], fields: Sequence[str], patterns: Mapping[str, re.Pattern[str]]
) -> bool:
    for name, value in zip(fields, values, strict=True):
        pat = patterns.get(name)
        if pat is not None and pat.fullmatch(value) is None:
            return False
    return True


def _merge_extra(
    parts: list[str],
    fields: Sequence[str],
    text_fields: Sequence[str],
    patterns: Mapping[str, re.Pattern[str]],
) -> tuple[list[str] | None, str]:
    """Assign surplus separators to free-text fields; return (values, "") or (None, reason)."""
    extra = len(parts) - len(fields)
    text_idx = [i for i, f in enumerate(fields) if f in text_fields]
    if not text_idx:
        return (
            None,
            f"{len(parts)} fields, expected {len(fields)}, and no free-text field to hold '|'",
        )
    if extra > _MAX_EXTRA:
        return None, f"{len(parts)} fields, expected {len(fields)}: too many '|' to resolve"
    valid: list[list[str]] = []
    for n, combo in enumerate(combinations_with_replacement(text_idx, extra)):
        if n > _MAX_CANDIDATES:
            return None, "too many ways to place '|' in free-text fields"
        values = _assign(parts, fields, combo)
        if _valid(values, fields, patterns):
            valid.append(values)
    if not valid:
        return None, (
            f"{len(parts)} fields, expected {len(fields)}; no placement of the extra '|' in "
            f"free-text fields ({', '.join(fields[i] for i in text_idx)}) gives well-formed fields"
        )
    if len(valid) == 1:
        return valid[0], ""
    # Tie-breaks, in order: (1) Slurm repeats the job name / comment inside SubmitLine, so
    # prefer splits whose '|'-holding values reappear verbatim in another field; (2) prefer
    # fewer values that begin or end with '|' (an empty neighbour swallowed); (3) prefer the
    # fields that most often hold '|' (the order of ``text_fields``).
    rank = {f: r for r, f in enumerate(text_fields)}

    def key(values: list[str]) -> tuple[int, int, int]:
        reappear = edges = prio = 0
        for i in text_idx:
            v = values[i]
            if "|" not in v:
                continue
            if any(v in values[j] for j in range(len(values)) if j != i):
                reappear += 1
            if v.startswith("|") or v.endswith("|"):
                edges += 1
            prio += rank[fields[i]]
        return (-reappear, edges, prio)

    keys = [key(v) for v in valid]
    best = min(keys)
    if keys.count(best) == 1:
        return valid[keys.index(best)], ""
    names = ", ".join(fields[i] for i in text_idx)
    return None, f"ambiguous '|' inside free-text fields ({names}): cannot split unambiguously"


def _repair(
    raw: str,
    fields: Sequence[str],
    text_fields: Sequence[str],
    patterns: Mapping[str, re.Pattern[str]],
    trailing: bool,
) -> tuple[list[str] | None, str]:
    """Values of one (possibly rejoined) record, or (None, reason)."""
    n = len(fields)
    parts = raw.split("|")
    if trailing:
        if parts and parts[-1] == "":
            parts = parts[:-1]
        else:
            return None, "line does not end with '|' as --parsable output does"
    if len(parts) < n:
        return None, f"{len(parts)} fields, expected {n}: truncated or malformed record"
    if len(parts) == n:
        if _valid(parts, fields, patterns):
            return parts, ""
        return None, "rejoined lines do not form a well-formed record"
    return _merge_extra(parts, fields, text_fields, patterns)


def split_delimited(
    lines: pl.DataFrame,
    fields: Sequence[str],
    *,
    trailing: bool,
    text_fields: Sequence[str],
    patterns: Mapping[str, re.Pattern[str]],
) -> SplitResult:
    """Split ``|``-delimited lines into fields, repairing lines with stray separators.

    Parameters
    ----------
    lines : polars.DataFrame
        ``line_no``, ``line``: the data lines only (no header).
    fields : sequence of str
        Column names, in file order.
    trailing : bool
        True for ``--parsable`` output (every line ends with a spare ``|``).
    text_fields : sequence of str
        Fields that may legitimately contain ``|`` or newlines, most likely first: a line with
        too many separators is repaired by joining them back into one of these.
    patterns : mapping of str to re.Pattern
        Full-match regex per field, used to choose among repairs.

    Returns
    -------
    SplitResult
        The split rows (one string column per field) and the lines that could not be split, with
        the reason.
    """
    n = len(fields)
    expected = n - 1 + int(trailing)
    counted = lines.with_columns(nsep=pl.col("line").str.count_matches("|", literal=True))
    good = counted.filter(pl.col("nsep") == expected)
    names = [*fields, "__trailing__"] if trailing else list(fields)
    split = (
        good.select(
            "line_no",
            "line",
            pl.col("line")
            .str.split_exact("|", len(names) - 1)
            .struct.rename_fields(names)
            .alias("s"),
        )
        .unnest("s")
        .select("line_no", "line", *fields)
    )
    bad = counted.filter(pl.col("nsep") != expected).select("line_no", "line", "nsep").rows()
    rep_rows: list[list[object]] = []
    bad_no: list[int] = []
    bad_raw: list[str] = []
    bad_reason: list[str] = []
    i = 0
    while i < len(bad):
        line_no, text, k = bad[i]
        chunk, total, j = [text], k, i
        # rejoin a record split by newlines: only lines that are too short to be a record
        # of their own (a line with enough separators starts a record and is never absorbed)
        while (
            total < expected
            and j + 1 < len(bad)
            and bad[j + 1][0] == bad[j][0] + 1
            and bad[j + 1][2] < expected
        ):
            j += 1
            chunk.append(bad[j][1])
            total += bad[j][2]
        values, reason = _repair("\n".join(chunk), fields, text_fields, patterns, trailing)
        if values is None and j > i:
            # the joined lines do not form a record: the first line alone is bad, and the
            # lines after it are read again on their own (one bad line never takes others)
            values, reason = _repair(text, fields, text_fields, patterns, trailing)
            j = i
        raw = "\n".join(chunk[: j - i + 1])
        if values is None:
            bad_no.append(line_no)
            bad_raw.append(raw)
            bad_reason.append(reason)
        else:
            rep_rows.append([line_no, raw, *values])
        i = j + 1
    if rep_rows:
        rep = pl.DataFrame(
            rep_rows,
            schema={"line_no": pl.Int64, "line": pl.String, **dict.fromkeys(fields, pl.String)},
            orient="row",
        )
        split = pl.concat([split, rep]).sort("line_no")
    return SplitResult(split, bad_no, bad_raw, bad_reason)
