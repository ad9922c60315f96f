"""``reliability verify`` and ``reliability repair``: check a Dataset, rebuild its manifest.

The Dataset is checked against its manifest, and a manifest is rebuilt from the parts.

- :func:`verify` checks that the manifest agrees with itself (rows read = kept + quarantined,
  no input listed twice, part paths inside the folder:
  :func:`~reliability.store.manifest.manifest_problems`) and reads every part in full: it
  exists, its size and sha256 are the ones the manifest records, its footer's row count is the
  recorded one, and its footer names the input and table it is listed under. Part files that
  no entry names are listed too (crash leftovers: not part of the Dataset).
- :func:`repair` rebuilds a lost or unreadable manifest from the descriptions every part
  carries in its footer: an input is restored when all the parts its description lists are
  present and whole (a crash between two parts leaves an incomplete input, which is left
  out); the latest read of each input wins; the order is the original ingest order. With a
  readable manifest, it drops the entries whose parts are missing or damaged (and says how to
  ingest them again), so the rest of the Dataset is readable; an entry whose counts or part
  paths contradict it is restored from its parts' footers (or dropped if they are not all
  there), and of an input listed twice the latest read is kept.
"""

from __future__ import annotations

import os
import shlex
import socket
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from reliability._atomic import file_sha256
from reliability.errors import DatasetDamagedError, DatasetError
from reliability.store.footer import FooterError
from reliability.store.lock import DatasetLock, pid_alive
from reliability.store.manifest import (
    MANIFEST,
    MANIFEST_VERSION,
    describe_entry,
    empty_manifest,
    entry_problems,
    load_manifest,
    manifest_problems,
    version_problem,
    write_manifest,
)
from reliability.store.observation import GIVEN, INFERRED
from reliability.store.parts import (
    UNSEALED,
    part_files,
    part_path_problem,
    read_part_meta,
    seal_problem,
)

if TYPE_CHECKING:  # pragma: no cover
    from reliability.store._view import DatasetView as Dataset  # Dataset satisfies it

__all__ = [
    "ORPHAN_MAX_AGE_S",
    "RepairReport",
    "VerifyReport",
    "damaged_part",
    "remove_orphans",
    "repair",
    "verify",
]

#: a part left by another host's writer is a crash leftover once it is this old [s] (its pid
#: cannot be checked from here; no ingest holds the lock that long)
ORPHAN_MAX_AGE_S = 86400.0


def _started_after(pid: int, t: float) -> bool:
    """Tell whether process ``pid`` started after time ``t`` [s since the epoch] (Linux /proc).

    A part whose writer's pid now names a process started after the part was written was left
    by an earlier process with the same pid (pids are reused). False when it cannot be told.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22: starttime [clock ticks]
        with open("/proc/stat", encoding="ascii") as fh:
            btime = next(int(ln.split()[1]) for ln in fh if ln.startswith("btime "))
        started = btime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return False
    return started > t + 2.0  # btime has a 1 s resolution


def writer_gone(writer: Any, mtime: float, call: str | None, now: float) -> str | None:
    """Say why the writer of a part can no longer commit it (None if it may still).

    Parameters
    ----------
    writer : object
        The ``writer`` record of the part's footer (pid, host, call).
    mtime : float
        The part's modification time [s since the epoch].
    call : str or None
        The id of the ingest call this process is running under the lock (its own parts are
        kept); None when none is (``repair``).
    now : float
        The time now [s since the epoch].

    Returns
    -------
    str or None
        Why it is gone (``pid 4242 on node1 is no longer running``), or None: it may still be
        writing (a part that names no writer is never taken for a leftover).
    """
    if not isinstance(writer, dict):
        return None
    pid, host = writer.get("pid"), writer.get("host")
    if not isinstance(pid, int) or not isinstance(host, str):
        return None
    who = f"pid {pid} on {host}"
    if host != socket.gethostname():
        if now - mtime > ORPHAN_MAX_AGE_S:
            return f"written by {who} {(now - mtime) / 3600:.0f} h ago"
        return None  # another host's live writer cannot be told from a dead one
    if pid == os.getpid():
        return None if writer.get("call") == call else f"an earlier ingest of this process ({who})"
    if not pid_alive(pid):
        return f"{who} is no longer running"
    if _started_after(pid, mtime):
        return f"{who} exited (that pid now names a later process)"
    return None


def remove_orphans(root: Path, manifest: dict[str, Any], call: str | None) -> list[str]:
    """Remove the part files no manifest entry names whose writer can no longer commit them.

    Such a part was left by an ingest killed after writing it and before its manifest commit
    (``kill -9``, a power cut), or belongs to an input dropped by ``repair``: it is not part
    of the Dataset. A part whose writer may still be running (it holds or waits for the lock,
    e.g. after ``.lock`` was deleted; or another host's writer, within
    :data:`ORPHAN_MAX_AGE_S`) is kept, as is one whose footer names no writer. Call this only
    while holding the writer lock.

    Parameters
    ----------
    root : Path
        The Dataset folder.
    manifest : dict of str to object
        The manifest as on disk (under the lock).
    call : str or None
        The ingest call this process runs (its own parts are kept), or None.

    Returns
    -------
    list of str
        One line per input whose parts were removed: its name and kind, the files, why its
        writer is gone, and the command that ingests it (so nothing is lost without a word).
    """
    if not root.is_dir():
        return []
    referenced = {p.get("file") for e in manifest["inputs"] for p in e["parts"].values()}
    now = datetime.now(UTC).timestamp()
    removed: dict[str, tuple[dict[str, Any], str, list[str]]] = {}
    for f in part_files(root):
        rel = f"{f.parent.name}/{f.name}"
        if rel in referenced:
            continue
        try:
            mtime = f.stat().st_mtime
            meta = read_part_meta(f)
        except (OSError, ValueError):
            continue  # unreadable or without a description: listed by verify, never deleted
        why = writer_gone(meta.get("writer"), mtime, call, now)
        if why is None:
            continue
        f.unlink(missing_ok=True)
        inp = meta.get("input") or {}
        key = str(inp.get("id") or rel)
        removed.setdefault(key, (inp, why, []))[2].append(rel)
    out = []
    for inp, why, files in removed.values():
        out.append(
            f"removed {len(files)} part file(s) no manifest entry names ({', '.join(files)}): "
            f"input {inp.get('name')!r} ({inp.get('kind')}), never committed or dropped; its "
            f"writer is gone ({why}); to ingest it: {_again(inp, root)}"
        )
    return out


@dataclass
class VerifyReport:
    """Outcome of :func:`verify`.

    Attributes
    ----------
    path : Path
        The Dataset folder.
    inputs, parts : int
        How many manifest entries and part files were checked.
    problems : list of str
        One line per mismatch: where the manifest contradicts itself (naming the input and the
        counts), or a part file and what differs.
    unreferenced : list of str
        Part files no manifest entry names (not part of the Dataset).
    """

    path: Path
    inputs: int = 0
    parts: int = 0
    problems: list[str] = field(default_factory=list)
    unreferenced: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True if the manifest agrees with itself and every part matches it."""
        return not self.problems

    def __str__(self) -> str:
        lines = [
            f"{self.path}: {self.inputs} input(s), {self.parts} part file(s) checked "
            "(size, sha256, footer row count, footer identity)"
        ]
        if self.problems:
            lines.append(f"{len(self.problems)} problem(s):")
            lines += [f"  {p}" for p in self.problems]
            lines.append(
                f"run `reliability repair {self.path}` to mend the manifest (an input it "
                "cannot restore from its parts is dropped, with the command that "
                "ingests it again)"
            )
        else:
            lines.append("every part matches the manifest")
        if self.unreferenced:
            lines.append(
                f"{len(self.unreferenced)} part file(s) not in the manifest (left by an "
                "interrupted ingest; not part of the Dataset):"
            )
            lines += [f"  {u}" for u in self.unreferenced[:20]]
            if len(self.unreferenced) > 20:
                lines.append(f"  ... and {len(self.unreferenced) - 20} more")
            lines.append(
                f"`reliability repair {self.path}` (or the next ingest) removes those "
                "whose writer is no longer running"
            )
        return "\n".join(lines)


def _part_problem(
    root: Path, entry: dict[str, Any], table: str, part: dict[str, Any]
) -> str | None:
    """Say what is wrong with one committed part (None if nothing)."""
    bad_path = part_path_problem(part.get("file"))
    if bad_path is not None:
        return bad_path
    path = root / part["file"]
    if not path.is_file():
        return f"{part['file']}: missing"
    sha, size = file_sha256(path)
    if part.get("bytes") is not None and size != part["bytes"]:
        return f"{part['file']}: {size} bytes, the manifest records {part['bytes']}"
    if part.get("sha256") is not None and sha != part["sha256"]:
        return (
            f"{part['file']}: sha256 {sha[:12]}..., the manifest records {part['sha256'][:12]}..."
        )
    try:
        meta = read_part_meta(path)
    except FooterError as exc:
        return f"{part['file']}: unreadable parquet footer ({exc})"
    except ValueError:
        meta = None  # a part written before parts carried metadata
    if meta is not None:
        seal = seal_problem(path, meta)
        if seal not in (None, UNSEALED):
            return f"{part['file']}: the part is damaged: {seal}"
        if part.get("rows") is not None and meta["num_rows"] != part["rows"]:
            return f"{part['file']}: {meta['num_rows']} rows in its footer, the manifest records {part['rows']}"
        inp = meta.get("input") or {}
        if inp.get("sha256") != entry["sha256"] or meta.get("table") != table:
            return (
                f"{part['file']}: its footer says it holds table {meta.get('table')!r} of input "
                f"{inp.get('name')!r} (sha256 {str(inp.get('sha256'))[:12]}...), the manifest "
                f"lists it as table {table!r} of {entry.get('name')!r}"
            )
    return None


def _flat(value: Any, prefix: str) -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flat(v, f"{prefix}.{k}"))
        return out
    return {prefix: value}


def footer_differences(root: Path, entry: dict[str, Any], n: int) -> list[str]:
    """Say which fields of a manifest entry differ from the copy its parts' footers carry.

    Every part's footer carries its input's entry as it was written (all but the parts' own
    sizes and hashes, which the files themselves give). A field that differs was changed in the
    manifest after the ingest (or the part is not the input's: said by the part check).

    Parameters
    ----------
    root : Path
        The Dataset folder.
    entry : dict of str to object
        The input's manifest entry.
    n : int
        Its 1-based position (messages name the field as ``inputs[n-1].field``).

    Returns
    -------
    list of str
        One line per field: its name, the manifest's value and the footers'; empty if they
        agree, or if no part of the entry carries a readable description of it.
    """
    inp: dict[str, Any] | None = None
    for part in entry["parts"].values():
        if part_path_problem(part.get("file")) is not None:
            continue
        try:
            meta = read_part_meta(root / part["file"])
        except (OSError, ValueError):
            continue
        candidate = meta.get("input") or {}
        if candidate.get("id") == entry.get("id"):
            inp = candidate
            break
    if inp is None:
        return []
    mine = _flat({k: v for k, v in entry.items() if k != "parts"}, f"inputs[{n - 1}]")
    theirs = _flat({k: v for k, v in inp.items() if k != "parts"}, f"inputs[{n - 1}]")
    out = []
    for key in sorted(set(mine) | set(theirs)):
        if mine.get(key, _ABSENT) != theirs.get(key, _ABSENT):
            a = "(absent)" if key not in mine else repr(mine[key])
            b = "(absent)" if key not in theirs else repr(theirs[key])
            out.append(
                f"{key} (input {entry.get('name')!r}): the manifest records {a[:80]}, its "
                f"parts' footers {b[:80]}: the manifest was edited after the ingest"
            )
    return out


_ABSENT = object()


def _seal_note(path: Path) -> str:
    """Say whether a part that disagrees with the manifest is itself intact (its seal)."""
    try:
        seal = seal_problem(path, read_part_meta(path))
    except (OSError, ValueError):
        return ""
    if seal is None:
        return (
            "; the part itself matches the sha256 it was sealed with: the manifest's record "
            "was changed, `reliability repair` restores it from the part"
        )
    if seal == UNSEALED:
        return ""
    return f"; the part is damaged: {seal}"


def _until_problem(root: Path, entry: dict[str, Any], n: int) -> str | None:
    """Say if an entry's ``observation.until`` is before the latest time in its own rows.

    Only for an end given at ingest or inferred from the input (an end the reader knows, such
    as sacct's ``--endtime``, may cut records that go on after it).
    """
    obs = entry.get("observation") or {}
    if obs.get("basis") not in (GIVEN, INFERRED) or not isinstance(obs.get("until"), str):
        return None
    try:
        until = datetime.fromisoformat(obs["until"])
    except ValueError:
        return None  # said by manifest_problems
    latest: tuple[datetime, str] | None = None
    for table, part in entry["parts"].items():
        if table == "quarantine" or part_path_problem(part.get("file")) is not None:
            continue
        try:
            lf = pl.scan_parquet(root / part["file"])
            cols = [c for c, t in lf.collect_schema().items() if isinstance(t, pl.Datetime)]
            if not cols:
                continue
            row = lf.select(pl.col(cols).max()).collect().row(0)
        except (pl.exceptions.PolarsError, OSError):
            continue  # a damaged part is said by the part check
        for col, t in zip(cols, row, strict=True):
            if (
                isinstance(t, datetime)
                and t.tzinfo is not None
                and (latest is None or t > latest[0])
            ):
                latest = (t, f"{table}.{col}")
    if latest is not None and latest[0] > until:
        return (
            f"inputs[{n - 1}].observation.until (input {entry.get('name')!r}): "
            f"{obs['until']!r} is before the latest time in its own rows, "
            f"{latest[0].isoformat()} ({latest[1]})"
        )
    return None


def verify(ds: Dataset) -> VerifyReport:
    """Check every part of a Dataset against its manifest (reads every part in full).

    Parameters
    ----------
    ds : Dataset
        The Dataset.

    Returns
    -------
    VerifyReport
        Inputs and parts checked, the problems found, and part files no entry names.
    """
    report = VerifyReport(ds.path)
    try:
        m = load_manifest(ds.path, check=False)
    except DatasetDamagedError as exc:
        report.problems.append(str(exc))
        return report
    files = part_files(ds.path) if ds.path.is_dir() else []
    if m is None:
        if files:
            report.problems.append(f"{MANIFEST}: missing, but {len(files)} part file(s) exist")
        return report
    report.problems += manifest_problems(m)
    referenced: set[str] = set()
    for n, entry in enumerate(m["inputs"], 1):
        report.inputs += 1
        report.problems += footer_differences(ds.path, entry, n)
        if (late := _until_problem(ds.path, entry, n)) is not None:
            report.problems.append(late)
        for table, part in entry["parts"].items():
            report.parts += 1
            if part_path_problem(part.get("file")) is not None:
                continue  # said above, and not followed
            referenced.add(part["file"])
            problem = _part_problem(ds.path, entry, table, part)
            if problem:
                note = (
                    "" if "the part is damaged" in problem else _seal_note(ds.path / part["file"])
                )
                report.problems.append(
                    f"{problem} (input {entry.get('name')!r}, {entry.get('kind')}){note}"
                )
    report.unreferenced = [
        f"{f.parent.name}/{f.name}" for f in files if f"{f.parent.name}/{f.name}" not in referenced
    ]
    return report


def damaged_part(ds: Dataset) -> str | None:
    """Name the damaged part after a read of the Dataset failed inside polars.

    A read checks each part's size and footer row count, not its bytes: a part damaged in
    place (same size) fails later, in polars. This runs :func:`verify` (every part's sha256),
    then, if it finds nothing, reads every part in full.

    Parameters
    ----------
    ds : Dataset
        The Dataset whose read failed.

    Returns
    -------
    str or None
        A message naming the part (and its input) and what to run (``reliability verify`` /
        ``repair``); None if every part matches the manifest and reads (the failure was not
        the Dataset's).
    """
    hint = (
        f"run `reliability verify {ds.path}` for details and `reliability repair {ds.path}` to fix"
    )
    report = verify(ds)
    if report.problems:
        more = f" (and {len(report.problems) - 1} more)" if len(report.problems) > 1 else ""
        return f"{ds.path}: the Dataset is damaged: {report.problems[0]}{more}; {hint}"
    m = load_manifest(ds.path, check=False) or empty_manifest()
    for entry in m["inputs"]:
        for table, part in entry["parts"].items():
            try:
                pl.read_parquet(ds.path / part["file"])
            except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as exc:
                why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                return (
                    f"{ds.path}: the Dataset is damaged: {part['file']}: table {table!r} of "
                    f"input {entry.get('name')!r} cannot be read ({why}); {hint}"
                )
    return None


@dataclass
class RepairReport:
    """Outcome of :func:`repair`.

    Attributes
    ----------
    path : Path
        The Dataset folder.
    rebuilt : bool
        True if the manifest was rebuilt from the parts (it was missing or unreadable).
    kept : int
        Inputs in the repaired manifest.
    dropped : list of str
        Inputs left out, each with why and the command that ingests it again.
    incomplete : list of str
        Inputs whose parts are not all present (an interrupted ingest), left out.
    mended : list of str
        Entries restored from their parts' footers (their counts or part paths contradicted the
        manifest), and inputs listed more than once (one entry kept).
    moved_aside : Path or None
        Where an unreadable manifest was moved (kept for inspection).
    removed : list of str
        Part files no entry names whose writer is gone, removed (one line per input, with the
        command that ingests it).
    """

    path: Path
    rebuilt: bool = False
    kept: int = 0
    dropped: list[str] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)
    mended: list[str] = field(default_factory=list)
    moved_aside: Path | None = None
    removed: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        head = (
            "rebuilt the manifest from the parts"
            if self.rebuilt
            else "checked the manifest against the parts"
        )
        lines = [f"{self.path}: {head}: {self.kept} input(s) in the Dataset"]
        if self.moved_aside:
            lines.append(f"the unreadable manifest was moved to {self.moved_aside}")
        if self.dropped:
            lines.append(
                f"{len(self.dropped)} input(s) dropped (their parts are damaged or missing):"
            )
            lines += [f"  {d}" for d in self.dropped]
        if self.incomplete:
            lines.append(
                f"{len(self.incomplete)} interrupted ingest(s) left out (not all parts written):"
            )
            lines += [f"  {d}" for d in self.incomplete]
        if self.mended:
            lines.append(f"{len(self.mended)} manifest record(s) mended:")
            lines += [f"  {d}" for d in self.mended]
        if self.removed:
            lines.append(f"{len(self.removed)} interrupted or dropped ingest(s) cleaned up:")
            lines += [f"  {d}" for d in self.removed]
        return "\n".join(lines)


def _again(entry: dict[str, Any], root: Path) -> str:
    """Return the CLI command that ingests ``entry`` again."""
    opts = entry.get("options") or {}
    args = [
        "reliability",
        "ingest",
        entry.get("kind", "?"),
        entry.get("path") or entry.get("name", "?"),
        "--into",
        str(root),
    ]
    for k, v in opts.items():
        if k in ("window_start", "window_end"):
            continue
        args += [f"--{k.replace('_', '-')}", v]
    return " ".join(shlex.quote(a) for a in args)


def _complete_inputs(root: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Rebuild from the part footers the inputs whose every part is present and whole.

    A part whose content no longer matches its seal (:func:`~reliability.store.parts.seal_problem`)
    is damaged: its input is left out, said. Returns {input id: manifest entry} (an entry all
    of whose parts match their seals carries ``_sealed = True``, removed before it is written),
    and descriptions of the inputs left out.
    """
    by_id: dict[str, dict[str, dict[str, Any]]] = {}
    meta_of: dict[str, dict[str, Any]] = {}
    for f in part_files(root):
        rel = f"{f.parent.name}/{f.name}"
        try:
            meta = read_part_meta(f)
        except (OSError, ValueError):
            continue
        inp = meta.get("input") or {}
        if not inp.get("id"):
            continue
        meta["seal"] = seal_problem(f, meta)
        by_id.setdefault(inp["id"], {})[rel] = meta
        if meta["seal"] is None or inp["id"] not in meta_of:
            meta_of[inp["id"]] = inp  # the description of a part that proves itself intact
    complete: dict[str, dict[str, Any]] = {}
    incomplete: list[str] = []
    for pid, found in by_id.items():
        inp = meta_of[pid]
        listed = inp.get("parts") or {}
        bad = _listed_problem(listed)
        if bad is not None:
            incomplete.append(
                f"{inp.get('name')!r} ({inp.get('kind')}): its parts' footers list {bad}"
            )
            continue
        damaged = [
            f"{rel}: {m['seal']}" for rel, m in found.items() if m["seal"] not in (None, UNSEALED)
        ]
        if damaged:
            incomplete.append(f"{inp.get('name')!r} ({inp.get('kind')}): {damaged[0]}")
            continue
        missing = [p["file"] for p in listed.values() if p["file"] not in found]
        wrong = [
            p["file"]
            for p in listed.values()
            if p["file"] in found and found[p["file"]]["num_rows"] != p["rows"]
        ]
        if missing or wrong or not listed:
            incomplete.append(
                f"{inp.get('name')!r} ({inp.get('kind')}, ingested {str(inp.get('ingested_at'))[:19]}): "
                f"{len(found)} of {len(listed)} part(s) present"
            )
            continue
        entry = {k: v for k, v in inp.items() if k != "parts"}
        entry["parts"] = {}
        for table, p in listed.items():
            sha, size = file_sha256(root / p["file"])
            entry["parts"][table] = {
                "file": p["file"],
                "rows": p["rows"],
                "bytes": size,
                "sha256": sha,
            }
        entry["_sealed"] = all(found[p["file"]]["seal"] is None for p in listed.values())
        complete[pid] = entry
    return complete, incomplete


def _listed_problem(listed: Any) -> str | None:
    """Say what is wrong with the parts a part's footer lists (None if nothing)."""
    if not isinstance(listed, dict) or not all(isinstance(p, dict) for p in listed.values()):
        return "parts that are not records"
    for p in listed.values():
        bad = part_path_problem(p.get("file"))
        if bad is not None:
            return bad
    return None


def _order(entry: dict[str, Any]) -> tuple[str, int, str]:
    order = entry.get("order") or [entry.get("ingested_at", ""), 0]
    return (str(order[0]), int(order[1]), str(entry.get("ingested_at", "")))


def _mend(root: Path, inputs: list[dict[str, Any]], report: RepairReport) -> list[dict[str, Any]]:
    """Return the entries of a readable manifest to keep, saying in ``report`` what changed.

    An entry that contradicts itself, its parts or their footers (counts, part paths, a part's
    size or sha256, a field its footers record otherwise) is rebuilt from its parts' footers
    when its parts prove themselves intact: every part it lists is there and matches the
    sha256 it was sealed with (parts written before seals: only for an entry whose own counts or
    paths contradict it, as long as the footers' row counts hold). Else it is dropped, saying
    which part is damaged. Of an input (or entry id) listed twice the latest read is kept.
    """
    footers: dict[str, dict[str, Any]] | None = None
    keep: list[dict[str, Any]] = []
    for n, entry in enumerate(inputs, 1):
        own = entry_problems(entry, describe_entry(entry, n))
        problems = list(own)
        if not own:
            problems += [
                f"{entry.get('name')!r}: {p}"
                for t, part in entry["parts"].items()
                if (p := _part_problem(root, entry, t, part))
            ]
            problems += footer_differences(root, entry, n)
        if not problems:
            keep.append(entry)
            continue
        if footers is None:
            footers, _ = _complete_inputs(root)
        restored = footers.get(str(entry.get("id")))
        if (
            restored is not None
            and (restored["_sealed"] or (own and not problems[len(own) :]))
            and not entry_problems(restored, "")
        ):
            proof = (
                "every part it lists is there and matches the sha256 it was sealed with"
                if restored["_sealed"]
                else "every part it lists is there with its rows"
            )
            keep.append(restored)
            report.mended.append(
                f"{problems[0]}: the parts are intact ({proof}): restored its "
                "record from its parts' footers, nothing dropped"
            )
            continue
        why = _why_not_restored(root, entry, restored)
        report.dropped.append(f"{problems[0]}; {why}; to ingest it again: {_again(entry, root)}")
    for e in keep:
        e.pop("_sealed", None)
    for key in ("sha256", "id"):
        latest: dict[Any, dict[str, Any]] = {}
        for entry in sorted(keep, key=_order):
            latest[entry.get(key)] = entry  # a later read of the same input wins
        for entry in keep:
            if latest[entry.get(key)] is not entry:
                kept = latest[entry.get(key)]
                report.mended.append(
                    f"{entry.get('name')!r} (sha256 {str(entry.get('sha256'))[:12]}...) was "
                    f"listed more than once: kept the read of {str(kept.get('ingested_at'))[:19]}"
                )
        keep = [e for e in keep if latest[e.get(key)] is e]
    return keep


def _why_not_restored(root: Path, entry: dict[str, Any], restored: dict[str, Any] | None) -> str:
    """Say why an entry could not be restored from its parts: the damaged part, or what lacks."""
    for part in entry["parts"].values():
        if part_path_problem(part.get("file")) is not None:
            continue
        path = root / part["file"]
        if not path.is_file():
            return f"its part {part['file']} is missing"
        try:
            meta = read_part_meta(path)
        except FooterError as exc:
            return f"its part {part['file']} is damaged (unreadable parquet footer: {exc})"
        except (OSError, ValueError):
            continue
        seal = seal_problem(path, meta)
        if seal not in (None, UNSEALED):
            return f"its part {part['file']} is damaged ({seal})"
    if restored is not None and not restored["_sealed"]:
        return (
            "its parts were written before parts were sealed (0.9), so they cannot prove "
            "themselves intact"
        )
    return "its parts' footers do not restore it (not all of its parts are there and whole)"


def repair(ds: Dataset) -> RepairReport:
    """Repair a Dataset's manifest, holding the writer lock.

    The manifest is rebuilt from the parts if it is missing or unreadable (the unreadable one is
    moved aside); else the entries whose parts are damaged or missing are dropped, an entry
    whose counts or part paths contradict the manifest is restored from its parts' footers, and
    of an input listed twice the latest read is kept. Then the part files no entry names whose
    writer is gone (an ingest killed before its commit) are removed (:func:`remove_orphans`).

    Parameters
    ----------
    ds : Dataset
        The Dataset.

    Returns
    -------
    RepairReport
        Whether the manifest was rebuilt, the inputs kept, dropped and left out as incomplete.

    Raises
    ------
    DatasetError
        If the folder does not exist.
    """
    report = RepairReport(ds.path)
    if not ds.path.is_dir():
        raise DatasetError(f"{ds.path}: no such Dataset folder")
    with DatasetLock(ds.path).held():
        try:
            m = load_manifest(ds.path, check=False)
        except DatasetDamagedError:
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
            aside = ds.path / f"{MANIFEST}.damaged-{stamp}"
            os.replace(ds.path / MANIFEST, aside)
            report.moved_aside = aside
            m = None
        if m is None:
            report.rebuilt = True
            complete, report.incomplete = _complete_inputs(ds.path)
            latest: dict[str, dict[str, Any]] = {}
            for entry in sorted(complete.values(), key=_order):
                entry.pop("_sealed", None)
                latest[entry["sha256"]] = entry  # a later read of the same input wins
            m = empty_manifest()
            m["inputs"] = sorted(latest.values(), key=_order)
            m["repaired"] = datetime.now(UTC).isoformat(timespec="seconds")
            if m["inputs"] or report.moved_aside:
                write_manifest(ds.path, m)
        else:
            keep = _mend(ds.path, m["inputs"], report)
            if (bad := version_problem(m)) is not None:
                report.mended.append(f"{bad}: set to {MANIFEST_VERSION}")
            if bad is not None or [id(e) for e in keep] != [id(e) for e in m["inputs"]]:
                m["inputs"] = keep
                m["repaired"] = datetime.now(UTC).isoformat(timespec="seconds")
                write_manifest(ds.path, m)
        report.kept = len(m["inputs"])
        report.removed = remove_orphans(ds.path, m, None)
    ds._cache = None
    return report
