"""``manifest.json``: the Dataset's commit point, and the identity of an ingested input.

An entry per input (see :func:`reliability.store.parts.new_entry`): name, path, size and
sha256 of the input, reader kind and options, rows read / kept / quarantined, rows per
table, its parts (file, rows, bytes, sha256), notes, observation window, ingest time and
package version. Version 1 manifests (parts as plain file names, no hashes) are read too;
their parts are checked only for existence.

An input is identified by its content and how it was read: (sha256, kind, options). The same
file read with the same options is a no-op; with other options it is refused, or replaced
with ``replace=True`` (:func:`option_changes`).

A manifest that contradicts itself is refused by every read and write (``reliability verify``
names what, ``reliability repair`` mends it; :func:`manifest_problems`): rows read that are
not rows kept + quarantined, counts that are not the rows of the parts, an input listed twice,
a part path outside the Dataset folder, a field outside its domain (``manifest_version``,
``options.tz``, ``observation.from`` / ``until``: :func:`field_problems`).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from reliability import schema
from reliability._atomic import write_json_atomic
from reliability._version import __version__
from reliability.errors import DatasetDamagedError, DatasetError, Hint, Hinted
from reliability.store.observation import FUTURE_MARGIN
from reliability.store.parts import part_path_problem

__all__ = [
    "FORMAT",
    "MANIFEST",
    "MANIFEST_VERSION",
    "describe_entry",
    "empty_manifest",
    "entry_problems",
    "field_problems",
    "load_manifest",
    "manifest_problems",
    "normalise_options",
    "option_changes",
    "version_problem",
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
    return {
        "format": FORMAT,
        "schema_version": schema.SCHEMA_VERSION,
        "manifest_version": MANIFEST_VERSION,
        "inputs": [],
    }


def _normalise_entry(entry: Any, n: int) -> dict[str, Any]:
    """Give a version 1 entry the version 2 form; None-free ``parts``; refuse a wrong shape."""
    parts = entry.get("parts") if isinstance(entry, dict) else None
    if not isinstance(entry, dict) or not isinstance(parts or {}, dict):
        raise ValueError(f"entry {n} of its inputs is not an input record with parts by table")
    if any(not isinstance(p, (dict, str)) for p in (parts or {}).values()):
        raise ValueError(f"entry {n} of its inputs has a part that is not a record")
    entry["parts"] = {
        t: (p if isinstance(p, dict) else {"file": p, "rows": None, "bytes": None, "sha256": None})
        for t, p in (parts or {}).items()
    }
    counts = {**(entry.get("rows_out") or {}), "quarantine": entry.get("rows_quarantined")}
    for t, p in entry["parts"].items():
        if p.get("rows") is None:
            p["rows"] = counts.get(t)
    return entry


def load_manifest(root: Path, *, check: bool = True) -> dict[str, Any] | None:
    """Load the manifest of a Dataset.

    Parameters
    ----------
    root : Path
        The Dataset folder.
    check : bool
        Refuse a manifest that contradicts itself (:func:`manifest_problems`); ``verify`` and
        ``repair`` load it unchecked to say what is wrong and mend it.

    Returns
    -------
    dict of str to object or None
        The manifest, or None if there is no manifest file.

    Raises
    ------
    DatasetDamagedError
        If it is unreadable (``reliability repair`` rebuilds it), or contradicts itself (the
        message names the input and the counts or path; ``reliability repair`` mends it).
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
    v = m.get("manifest_version")
    if isinstance(v, int) and not isinstance(v, bool) and v > MANIFEST_VERSION:
        raise DatasetError(
            f"{p}: manifest version {v}, this package reads 1 to {MANIFEST_VERSION} (written by a "
            "newer version of the package: upgrade it to read this Dataset)"
        )
    if not isinstance(m.get("inputs"), list):
        raise DatasetDamagedError(
            f"{p}: the manifest has no list of inputs; run `reliability repair {root}`"
        )
    try:
        m["inputs"] = [_normalise_entry(e, n) for n, e in enumerate(m["inputs"], 1)]
    except ValueError as exc:
        raise DatasetDamagedError(
            f"{p}: {exc}; run `reliability repair {root}` to rebuild it from the parts"
        ) from None
    problems = manifest_problems(m) if check else []
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise DatasetDamagedError(
            f"{p}: the manifest contradicts itself: {problems[0]}{more}; nothing was read; run "
            f"`reliability verify {root}` for details and `reliability repair {root}` to mend it"
        )
    return m


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def entry_problems(entry: dict[str, Any], who: str) -> list[str]:
    """Say where one entry contradicts itself: its counts and its part paths.

    Parameters
    ----------
    entry : dict of str to object
        An input's manifest entry.
    who : str
        How messages name it (:func:`describe_entry`).

    Returns
    -------
    list of str
        One line per problem (see :func:`manifest_problems`); empty if there is none.
    """
    out = [
        f"{who}: no {key}"
        for key in ("sha256", "id")
        if not isinstance(entry.get(key), str) or not entry.get(key)
    ]
    for table, part in entry["parts"].items():
        problem = part_path_problem(part.get("file"))
        if problem is not None:
            out.append(f"{who}: table {table!r}: {problem}")
    read, kept, quarantined = (entry.get(k) for k in ("rows_read", "rows_kept", "rows_quarantined"))
    if not all(_is_count(c) for c in (read, kept, quarantined)):
        out.append(
            f"{who}: rows read {read!r}, kept {kept!r}, quarantined {quarantined!r} "
            "are not all counts"
        )
        return out
    if read != kept + quarantined:
        out.append(f"{who}: rows read {read} != kept {kept} + quarantined {quarantined}")
    q_part = entry["parts"].get("quarantine")
    in_part = 0 if q_part is None else q_part.get("rows")
    if in_part is not None and in_part != quarantined:
        out.append(
            f"{who}: quarantined {quarantined}, but its quarantine part holds {in_part} rows"
        )
    rows_out = entry.get("rows_out") or {}
    for table, part in entry["parts"].items():
        if table in rows_out and part.get("rows") is not None and rows_out[table] != part["rows"]:
            out.append(
                f"{who}: {rows_out[table]} {table} rows out, but its {table} part holds "
                f"{part['rows']}"
            )
    return out + field_problems(entry, who)


def _zone_problem(tz: Any) -> str | None:
    if not isinstance(tz, str) or not tz.strip():
        return "not an IANA time zone name"
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return "not an IANA time zone (such as 'UTC' or 'Europe/Berlin')"
    return None


def _utc_problem(value: Any) -> tuple[datetime | None, str | None]:
    if not isinstance(value, str):
        return None, "not a timestamp"
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        return None, "not an ISO 8601 timestamp"
    if t.tzinfo is None or t.utcoffset() != timedelta(0):
        return None, "not a UTC timestamp (ISO 8601 with +00:00)"
    return t, None


def field_problems(entry: dict[str, Any], who: str) -> list[str]:
    """Say which fields of an entry hold a value outside their domain.

    ``options.tz`` must be an IANA time zone; ``observation.from`` and ``observation.until``
    UTC timestamps (or absent), the start not after the end and the end not past this
    machine's clock (by more than :data:`~reliability.store.observation.FUTURE_MARGIN`: an
    export cannot record what had not happened yet).

    Parameters
    ----------
    entry : dict of str to object
        An input's manifest entry.
    who : str
        How messages name it (:func:`describe_entry`).

    Returns
    -------
    list of str
        One line per field, naming it and its value; empty if there is none.
    """
    out: list[str] = []
    options = entry.get("options")
    if options is not None and not isinstance(options, dict):
        out.append(f"{who}: options {options!r} is not a record of reader options")
        options = None
    if options and "tz" in options and (why := _zone_problem(options["tz"])) is not None:
        out.append(f"{who}: options.tz {options['tz']!r}: {why}")
    obs = entry.get("observation")
    if obs is None:
        return out
    if not isinstance(obs, dict):
        return [*out, f"{who}: observation {obs!r} is not a record"]
    times: dict[str, datetime] = {}
    for key in ("from", "until"):
        if obs.get(key) is None:
            continue
        t, why = _utc_problem(obs[key])
        if why is not None:
            out.append(f"{who}: observation.{key} {obs[key]!r}: {why}")
        elif t is not None:
            times[key] = t
    if "from" in times and "until" in times and times["from"] > times["until"]:
        out.append(
            f"{who}: observation.until {obs['until']!r} is before observation.from {obs['from']!r}"
        )
    now = datetime.now(UTC)
    if "until" in times and times["until"] > now + FUTURE_MARGIN:
        out.append(
            f"{who}: observation.until {obs['until']!r} is in the future (this machine's "
            f"clock says {now:%Y-%m-%dT%H:%M:%SZ})"
        )
    return out


def version_problem(manifest: dict[str, Any]) -> str | None:
    """Say what is wrong with a manifest's ``manifest_version`` (None if it is one this reads).

    Parameters
    ----------
    manifest : dict of str to object
        A manifest.

    Returns
    -------
    str or None
        The problem, naming the field and its value.
    """
    if "manifest_version" not in manifest:
        return None  # version 1 manifests did not always record it
    v = manifest["manifest_version"]
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MANIFEST_VERSION:
        return (
            f"manifest_version {v!r}: not a manifest version this package writes (1 to "
            f"{MANIFEST_VERSION})"
        )
    return None


def describe_entry(entry: dict[str, Any], n: int) -> str:
    """Name an input for messages: ``input 'a.psv' (slurm, entry 3)``.

    Parameters
    ----------
    entry : dict of str to object
        The input's manifest entry.
    n : int
        Its 1-based position in the manifest's inputs.

    Returns
    -------
    str
        The input's name, kind and position.
    """
    return f"input {entry.get('name')!r} ({entry.get('kind')}, entry {n})"


def manifest_problems(manifest: dict[str, Any]) -> list[str]:
    """Say where a manifest contradicts itself.

    An entry's rows read must be its rows kept + quarantined, its quarantine part must hold its
    quarantined rows and each table's part its rows out, its part paths must stay inside the
    Dataset folder, and no input (sha256) or entry id may be listed twice (a reader would count
    its rows twice).

    Parameters
    ----------
    manifest : dict of str to object
        A manifest as :func:`load_manifest` returns it.

    Returns
    -------
    list of str
        One line per problem, naming the input (name, kind, entry number) and the counts or
        path; empty if there is none.
    """
    out: list[str] = []
    if (bad := version_problem(manifest)) is not None:
        out.append(bad)
    seen: dict[tuple[str, Any], int] = {}
    for n, entry in enumerate(manifest["inputs"], 1):
        who = describe_entry(entry, n)
        out += entry_problems(entry, who)
        for key in ("sha256", "id"):
            value = entry.get(key)
            if not isinstance(value, str) or not value:
                continue  # said by entry_problems
            first = seen.setdefault((key, value), n)
            if first != n:
                shown = f"sha256 {value[:12]}..." if key == "sha256" else f"id {value}"
                out.append(
                    f"{who}: the same input ({shown}) as entry {first}: listed twice, its "
                    "rows would be counted twice"
                )
                break
    return out


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
        then = Hint(k, a, action=False) if a is not None else Hinted("no ", Hint(k, action=False))
        now = Hint(k, b, action=False) if b is not None else Hinted("no ", Hint(k, action=False))
        out.append(Hinted(then, " then, ", now, " now"))
    return out
