"""``reliability verify`` and ``reliability repair``: check a Dataset, rebuild its manifest.

The Dataset is checked against its manifest, and a manifest is rebuilt from the parts.

- :func:`verify` reads every part in full: it exists, its size and sha256 are the ones the
  manifest records, its footer's row count is the recorded one, and its footer names the
  input and table it is listed under. Part files that no entry names are listed too (crash
  leftovers: not part of the Dataset).
- :func:`repair` rebuilds a lost or unreadable manifest from the descriptions every part
  carries in its footer: an input is restored when all the parts its description lists are
  present and whole (a crash between two parts leaves an incomplete input, which is left
  out); the latest read of each input wins; the order is the original ingest order. With a
  readable manifest, it drops the entries whose parts are missing or damaged (and says how to
  ingest them again), so the rest of the Dataset is readable.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reliability._atomic import file_sha256
from reliability.errors import DatasetDamagedError, DatasetError
from reliability.store.footer import FooterError
from reliability.store.lock import DatasetLock
from reliability.store.manifest import MANIFEST, empty_manifest, load_manifest, write_manifest
from reliability.store.parts import part_files, read_part_meta

if TYPE_CHECKING:  # pragma: no cover
    from reliability.store.dataset import Dataset

__all__ = ["RepairReport", "VerifyReport", "repair", "verify"]


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
        One line per mismatch, naming the part file and what differs.
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
        """True if every part matches the manifest."""
        return not self.problems

    def __str__(self) -> str:
        lines = [f"{self.path}: {self.inputs} input(s), {self.parts} part file(s) checked "
                 "(size, sha256, footer row count, footer identity)"]  # fmt: skip
        if self.problems:
            lines.append(f"{len(self.problems)} problem(s):")
            lines += [f"  {p}" for p in self.problems]
            lines.append(f"run `reliability repair {self.path}` to drop the damaged input(s) "
                         "from the manifest (then ingest them again)")  # fmt: skip
        else:
            lines.append("every part matches the manifest")
        if self.unreferenced:
            lines.append(f"{len(self.unreferenced)} part file(s) not in the manifest (left by an "
                         "interrupted ingest; not part of the Dataset):")  # fmt: skip
            lines += [f"  {u}" for u in self.unreferenced[:20]]
        return "\n".join(lines)


def _part_problem(
    root: Path, entry: dict[str, Any], table: str, part: dict[str, Any]
) -> str | None:
    """Say what is wrong with one committed part (None if nothing)."""
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
        if part.get("rows") is not None and meta["num_rows"] != part["rows"]:
            return f"{part['file']}: {meta['num_rows']} rows in its footer, the manifest records {part['rows']}"
        inp = meta.get("input") or {}
        if inp.get("sha256") != entry["sha256"] or meta.get("table") != table:
            return (f"{part['file']}: its footer says it holds table {meta.get('table')!r} of input "
                    f"{inp.get('name')!r} (sha256 {str(inp.get('sha256'))[:12]}...), the manifest "
                    f"lists it as table {table!r} of {entry.get('name')!r}")  # fmt: skip
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
        m = load_manifest(ds.path)
    except DatasetDamagedError as exc:
        report.problems.append(str(exc))
        return report
    files = part_files(ds.path) if ds.path.is_dir() else []
    if m is None:
        if files:
            report.problems.append(f"{MANIFEST}: missing, but {len(files)} part file(s) exist")
        return report
    referenced: set[str] = set()
    for entry in m["inputs"]:
        report.inputs += 1
        for table, part in entry["parts"].items():
            report.parts += 1
            referenced.add(part["file"])
            problem = _part_problem(ds.path, entry, table, part)
            if problem:
                report.problems.append(f"{problem} (input {entry.get('name')!r}, {entry['kind']})")
    report.unreferenced = [f"{f.parent.name}/{f.name}" for f in files
                           if f"{f.parent.name}/{f.name}" not in referenced]  # fmt: skip
    return report


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
    moved_aside : Path or None
        Where an unreadable manifest was moved (kept for inspection).
    """

    path: Path
    rebuilt: bool = False
    kept: int = 0
    dropped: list[str] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)
    moved_aside: Path | None = None

    def __str__(self) -> str:
        head = ("rebuilt the manifest from the parts" if self.rebuilt
                else "checked the manifest against the parts")  # fmt: skip
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
        return "\n".join(lines)


def _again(entry: dict[str, Any], root: Path) -> str:
    """Return the CLI command that ingests ``entry`` again."""
    opts = entry.get("options") or {}
    args = ["reliability", "ingest", entry.get("kind", "?"), entry.get("path") or entry.get("name", "?"),
            "--into", str(root)]  # fmt: skip
    for k, v in opts.items():
        if k in ("window_start", "window_end"):
            continue
        args += [f"--{k.replace('_', '-')}", v]
    return " ".join(shlex.quote(a) for a in args)


def _complete_inputs(root: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Rebuild from the part footers the inputs whose every part is present and whole.

    Returns {input id: manifest entry}, and descriptions of the incomplete ones.
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
        by_id.setdefault(inp["id"], {})[rel] = meta
        meta_of[inp["id"]] = inp
    complete: dict[str, dict[str, Any]] = {}
    incomplete: list[str] = []
    for pid, found in by_id.items():
        inp = meta_of[pid]
        listed = inp.get("parts") or {}
        missing = [p["file"] for p in listed.values() if p["file"] not in found]
        wrong = [p["file"] for p in listed.values()
                 if p["file"] in found and found[p["file"]]["num_rows"] != p["rows"]]  # fmt: skip
        if missing or wrong or not listed:
            incomplete.append(f"{inp.get('name')!r} ({inp.get('kind')}, ingested {str(inp.get('ingested_at'))[:19]}): "
                              f"{len(found)} of {len(listed)} part(s) present")  # fmt: skip
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
        complete[pid] = entry
    return complete, incomplete


def _order(entry: dict[str, Any]) -> tuple[str, int, str]:
    order = entry.get("order") or [entry.get("ingested_at", ""), 0]
    return (str(order[0]), int(order[1]), str(entry.get("ingested_at", "")))


def repair(ds: Dataset) -> RepairReport:
    """Repair a Dataset's manifest, holding the writer lock.

    The manifest is rebuilt from the parts if it is missing or unreadable (the unreadable one is
    moved aside); else the entries whose parts are damaged or missing are dropped.

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
            m = load_manifest(ds.path)
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
                latest[entry["sha256"]] = entry  # a later read of the same input wins
            m = empty_manifest()
            m["inputs"] = sorted(latest.values(), key=_order)
            m["repaired"] = datetime.now(UTC).isoformat(timespec="seconds")
            if m["inputs"] or report.moved_aside:
                write_manifest(ds.path, m)
        else:
            keep = []
            for entry in m["inputs"]:
                problems = [p for t, part in entry["parts"].items()
                            if (p := _part_problem(ds.path, entry, t, part))]  # fmt: skip
                if problems:
                    report.dropped.append(f"{entry.get('name')!r}: {problems[0]}; to ingest it again: "
                                          f"{_again(entry, ds.path)}")  # fmt: skip
                else:
                    keep.append(entry)
            if len(keep) != len(m["inputs"]):
                m["inputs"] = keep
                m["repaired"] = datetime.now(UTC).isoformat(timespec="seconds")
                write_manifest(ds.path, m)
        report.kept = len(m["inputs"])
    ds._cache = None
    return report
