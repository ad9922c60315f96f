"""``manifest.json``: the Dataset's commit point, and the identity of an ingested input.

An entry per input (see :func:`reliability.store.parts.new_entry`): name, path, size and
sha256 of the input, reader kind and options, rows read / kept / quarantined, rows per
table, its parts (file, rows, bytes, sha256), notes, observation window, ingest time and
package version. Version 1 manifests (parts as plain file names, no hashes) are read too;
their parts are checked only for existence.

An input is identified by its content and how it was read: (sha256, kind, options). The same
file read with the same options is a no-op; with other options it is refused, or replaced
with ``replace=True`` (:func:`option_changes`).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reliability import schema
from reliability._atomic import write_json_atomic
from reliability._version import __version__
from reliability.errors import DatasetDamagedError, DatasetError

__all__ = [
    "FORMAT",
    "MANIFEST",
    "MANIFEST_VERSION",
    "empty_manifest",
    "load_manifest",
    "normalise_options",
    "option_changes",
    "write_manifest",
]

MANIFEST = "manifest.json"
FORMAT = "reliability-dataset"
MANIFEST_VERSION = 2


def empty_manifest() -> dict[str, Any]:
    """Make a manifest with no inputs.

    Returns
    -------
    dict of str to object
        The format, schema and manifest versions and an empty ``inputs`` list.
    """
    return {"format": FORMAT, "schema_version": schema.SCHEMA_VERSION,
            "manifest_version": MANIFEST_VERSION, "inputs": []}  # fmt: skip


def _normalise_entry(entry: dict[str, Any]) -> dict[str, Any]:
    parts = entry.get("parts") or {}
    entry["parts"] = {
        t: (p if isinstance(p, dict) else {"file": p, "rows": None, "bytes": None, "sha256": None})
        for t, p in parts.items()
    }
    counts = {**(entry.get("rows_out") or {}), "quarantine": entry.get("rows_quarantined")}
    for t, p in entry["parts"].items():
        if p.get("rows") is None:
            p["rows"] = counts.get(t)
    return entry


def load_manifest(root: Path) -> dict[str, Any] | None:
    """Load the manifest of a Dataset.

    Parameters
    ----------
    root : Path
        The Dataset folder.

    Returns
    -------
    dict of str to object or None
        The manifest, or None if there is no manifest file.

    Raises
    ------
    DatasetDamagedError
        If it is unreadable (``reliability repair`` rebuilds it).
    DatasetError
        If it cannot be read, is not a Dataset manifest, or is of another schema version.
    """
    p = root / MANIFEST
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise DatasetError(f"{p}: cannot read the manifest: {exc.strerror or exc}") from None
    try:
        m = json.loads(text)
    except ValueError as exc:
        raise DatasetDamagedError(
            f"{p}: unreadable manifest ({exc}); run `reliability repair {root}` to rebuild it "
            "from the parts"
        ) from None
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        raise DatasetError(f"{p}: not a reliability dataset manifest")
    if m.get("schema_version") != schema.SCHEMA_VERSION:
        raise DatasetError(
            f"{p}: schema version {m.get('schema_version')}, this package reads {schema.SCHEMA_VERSION}"
        )
    if not isinstance(m.get("inputs"), list):
        raise DatasetDamagedError(
            f"{p}: the manifest has no list of inputs; run `reliability repair {root}`"
        )
    m["inputs"] = [_normalise_entry(e) for e in m["inputs"]]
    return m


def write_manifest(root: Path, manifest: dict[str, Any]) -> None:
    """Write the manifest atomically (temp file, fsync, rename): the commit point.

    Stamps it with the manifest version, the package version and the time of the update.

    Parameters
    ----------
    root : Path
        The Dataset folder.
    manifest : dict of str to object
        The manifest (updated in place with the stamps).
    """
    manifest["manifest_version"] = MANIFEST_VERSION
    manifest["package_version"] = __version__
    manifest["updated"] = datetime.now(UTC).isoformat(timespec="microseconds")
    write_json_atomic(manifest, root / MANIFEST)


def manifest_stamp(root: Path) -> tuple[int, int, int] | None:
    """Return a stamp of the manifest file that changes on every commit.

    Parameters
    ----------
    root : Path
        The Dataset folder.

    Returns
    -------
    (int, int, int) or None
        (inode, size [bytes], mtime [ns]) of the manifest file, or None if there is none.
    """
    try:
        st = os.stat(root / MANIFEST)
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _norm(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def normalise_options(options: dict[str, Any]) -> dict[str, str]:
    """Convert reader options to the form the manifest records (strings; None dropped).

    Parameters
    ----------
    options : dict of str to object
        Reader options as passed.

    Returns
    -------
    dict of str to str
        Sorted by name.
    """
    return {k: _norm(v) for k, v in sorted(options.items()) if v is not None}


def option_changes(entry: dict[str, Any], kind: str, options: dict[str, str]) -> list[str]:
    """Describe how an ingest's kind and options differ from the way an input was ingested.

    Parameters
    ----------
    entry : dict of str to object
        The input's manifest entry.
    kind : str
        The input kind now.
    options : dict of str to str
        The options now (:func:`normalise_options`).

    Returns
    -------
    list of str
        One phrase per difference (``tz='UTC' then, tz='America/New_York' now``); empty if they
        are the same.
    """
    out: list[str] = []
    if entry.get("kind") != kind:
        out.append(f"read as {entry.get('kind')!r} inputs then, as {kind!r} now")
    old = entry.get("options") or {}
    for k in sorted(set(old) | set(options)):
        a, b = old.get(k), options.get(k)
        if a == b:
            continue
        then = f"{k}={a!r}" if a is not None else f"no {k}="
        now = f"{k}={b!r}" if b is not None else f"no {k}="
        out.append(f"{then} then, {now} now")
    return out
