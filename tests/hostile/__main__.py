"""Run the hostile corpus against every reader and print what happened.

    cd tests && ../.venv/bin/python -m hostile [--examples N]

For each reader: the crafted cases (outcome known by construction), then N hypothesis
mutations of one record (locality: no other record's output may change) and N mutations of
the whole file (only a ReadResult or an IngestError may come out). Prints the inputs tried,
tracebacks (any exception but IngestError) and silent drops (a crafted case whose counts or
quarantined lines differ from the construction, a mutation that changed another record's
output, or a unit whose rows differ from the independent parse of :mod:`hostile.oracles`),
with the first input of each failure.
"""

from __future__ import annotations

import argparse
import tempfile
import traceback
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hostile import oracles
from hostile.cases import all_cases
from hostile.mutations import by_unit, file_mutation, header_tokens, read, record_edit
from hostile.samples import GENERATORS, Sample
from reliability.errors import IngestError
from reliability.ingest import ReadResult


def _crafted(tmp: Path, tried: Counter, bad: dict) -> None:
    for case in all_cases():
        tried["crafted"] += 1
        path = tmp / case.filename
        path.write_bytes(case.data)
        try:
            r = case.reader(path, **case.options)
        except IngestError as exc:
            if case.error is None:
                bad.setdefault("silent", []).append((case.name, f"refused: {exc}"))
            continue
        except Exception:  # report, do not stop
            bad.setdefault("traceback", []).append((case.name, traceback.format_exc(limit=3)))
            continue
        q = set(r.quarantine["line_no"].to_list())
        if (r.rows_read, r.rows_kept) != (case.read, case.kept) or q != set(case.quarantined):
            bad.setdefault("silent", []).append((case.name, r.summary_line()))


def _mutations(reader: str, n: int, tmp: Path, tried: Counter, bad: dict) -> None:
    sample: Sample = GENERATORS[reader]()
    clean_path = tmp / f"clean-{sample.filename}"
    clean_path.write_text(sample.text())
    clean = read(sample, clean_path)
    assert isinstance(clean, ReadResult), clean
    units = by_unit(clean, reader)
    extra = (
        tuple(header_tokens(sample.lines[0]))
        if reader in ("sacct", "events", "health_csv", "lanl")
        else ()
    )
    opts = settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))  # fmt: skip

    def run(data: bytes, label: str, check_units: tuple[int, str] | None) -> None:
        tried[reader] += 1
        path = tmp / sample.filename
        path.write_bytes(data)
        try:
            r = read(sample, path)
        except Exception:
            bad.setdefault("traceback", []).append(
                (f"{reader} {label}", traceback.format_exc(limit=4))
            )
            return
        if check_units is None or isinstance(r, IngestError):
            return
        k, new = check_units
        got = by_unit(r, reader)
        for unit, rows in units.items():
            if unit != sample.records[k].unit and unit not in new and got.get(unit) != rows:
                bad.setdefault("silent", []).append((f"{reader} record {k} -> {new[:120]!r}", unit))
                return
        # kept rows against the independent parse of the same bytes
        rec = sample.records[k]
        lines = [*sample.lines[: rec.start], *new.split("\n"), *sample.lines[rec.stop :]]
        kept = oracles.kept(reader, r.frames)
        for unit, rows in oracles.expected(sample, lines, k, new).items():
            if kept.get(unit, []) != rows:
                bad.setdefault("silent", []).append(
                    (f"{reader} record {k} -> {new[:120]!r}", f"{unit}: not as parsed")
                )
                return

    @opts
    @given(data=st.data())
    def one_record(data: st.DataObject) -> None:
        k = data.draw(st.integers(0, len(sample.records) - 1))
        rec = sample.records[k]
        new = data.draw(record_edit("\n".join(sample.lines[rec.start : rec.stop]), extra))
        text = "\n".join([*sample.lines[: rec.start], new, *sample.lines[rec.stop :]]) + "\n"
        run(text.encode("utf-8", errors="surrogatepass"), "record", (k, new))

    @opts
    @given(data=st.data())
    def whole_file(data: st.DataObject) -> None:
        run(data.draw(file_mutation(sample.text().encode())), "file", None)

    one_record()
    whole_file()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=200, help="mutations per reader and kind")
    ap.add_argument("--only", nargs="*", default=None, help="readers to mutate (default: all)")
    ap.add_argument("--all", action="store_true", help="print every failure, not the first")
    args = ap.parse_args()
    tried: Counter[str] = Counter()
    bad: dict[str, list[tuple[str, str]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        _crafted(Path(tmp), tried, bad)
        for reader in GENERATORS:
            if args.only is None or reader in args.only:
                _mutations(reader, args.examples, Path(tmp), tried, bad)
    print(
        f"inputs tried: {sum(tried.values())} ({', '.join(f'{k} {v}' for k, v in tried.items())})"
    )
    for kind in ("traceback", "silent"):
        items = bad.get(kind, [])
        by_reader = Counter(name.split()[0] for name, _ in items)
        print(f"{kind}s: {len(items)} {dict(by_reader) if items else ''}")
        seen: set[str] = set()
        for name, detail in items:
            if args.all or name.split()[0] not in seen:
                seen.add(name.split()[0])
                print(f"  first {kind} in {name}:\n    {detail.strip().splitlines()[-1][:300]}")


if __name__ == "__main__":
    main()
