"""Hostile input for every reader (issue 16): crafted cases with outcomes known by
construction, and hypothesis properties over mutations of clean samples.

Properties, for every reader (``read_sacct`` and ``read_lanl`` included, read-only):

1. any mutation of a file gives a ReadResult or an IngestError naming the file, never
   another exception; for line-per-record formats the records read equal a count made here
   from the bytes;
2. mutating one record never changes the output rows of any other record (rows are grouped
   by their unit: node, job id, component id), and every unit whose records an independent
   strict parse decides (:mod:`hostile.oracles`) has exactly the rows it gives;
3. lossless re-encodings (UTF-16 with or without BOM, UTF-8 BOM, CRLF, gzip) give exactly the
   output of the plain UTF-8 file.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from hostile import oracles
from hostile.cases import Case, all_cases
from hostile.mutations import (
    LOSSLESS_ENCODINGS,
    _encode,
    by_unit,
    file_mutation,
    header_tokens,
    read,
    record_edit,
)
from hostile.samples import GENERATORS, READERS, Sample
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reliability import datasets
from reliability.errors import IngestError
from reliability.ingest import ReadResult

PROPERTY = settings(
    max_examples=50,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
CASES = all_cases()
GENERATOR_READER = {name: fn for name, (fn, _) in READERS.items()}
#: samples whose first line is a delimited header (header injection applies)
_DELIMITED = ("sacct", "events", "health_csv", "lanl")
LOCALITY_READERS = list(GENERATORS)
ENCODING_PARAMS = [(r, e) for r in GENERATORS for e in LOSSLESS_ENCODINGS]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_crafted_case(case: Case, tmp_path: Path) -> None:
    path = tmp_path / case.filename
    path.write_bytes(case.data)
    if case.error is not None:
        with pytest.raises(IngestError, match=case.error) as info:
            case.reader(path, **case.options)
        assert str(info.value).startswith(str(path))
        return
    r = case.reader(path, **case.options)
    assert isinstance(r, ReadResult)
    assert (r.rows_read, r.rows_kept) == (case.read, case.kept), r.quarantine.rows()
    got = dict(zip(r.quarantine["line_no"], r.quarantine["reason"], strict=True))
    assert set(got) == set(case.quarantined), got
    for line, word in case.quarantined.items():
        assert word in got[line], (line, got[line])
    if case.events is not None:
        assert r.frames["health_events"].height == case.events
    if case.forbid is not None:
        for frame in r.frames.values():
            if "message" in frame.columns:
                assert not frame["message"].str.contains(case.forbid, literal=True).any()


def _write(tmp: Path, sample: Sample, data: bytes) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / sample.filename
    path.write_bytes(data)
    return path


_CLEAN: dict[str, tuple[Sample, dict[str, list[tuple[object, ...]]]]] = {}


def _clean(reader: str, tmp: Path) -> tuple[Sample, dict[str, list[tuple[object, ...]]]]:
    if reader not in _CLEAN:
        sample = GENERATORS[reader]()
        r = read(sample, _write(tmp / "clean", sample, sample.text().encode()))
        assert isinstance(r, ReadResult), r
        assert r.rows_quarantined == 0, r.quarantine.rows()
        assert r.rows_read == sample.rows_read
        _CLEAN[reader] = (sample, by_unit(r, reader))
    return _CLEAN[reader]


def test_clean_samples_read_fully(tmp_path: Path) -> None:
    """Every generated record is read and kept, and each produces rows of its own unit."""
    for reader in GENERATORS:
        sample, units = _clean(reader, tmp_path / reader)
        all_units = {rec.unit for rec in sample.records}
        assert set(units) <= all_units, reader
        assert len(units) >= len(all_units) / 2, reader  # the locality property has teeth


@pytest.mark.parametrize("reader", LOCALITY_READERS)
@PROPERTY
@given(data=st.data())
def test_mutating_one_record_changes_no_other(reader, data, tmp_path_factory) -> None:
    tmp = tmp_path_factory.mktemp(f"loc-{reader}")
    sample, clean = _clean(reader, tmp)
    k = data.draw(st.integers(0, len(sample.records) - 1), label="record")
    rec = sample.records[k]
    old = "\n".join(sample.lines[rec.start : rec.stop])
    extra = tuple(header_tokens(sample.lines[0])) if sample.reader in _DELIMITED else ()
    new = data.draw(record_edit(old, extra), label="mutated record")
    text = "\n".join([*sample.lines[: rec.start], new, *sample.lines[rec.stop :]]) + "\n"
    r = read(sample, _write(tmp, sample, text.encode("utf-8", errors="surrogatepass")))
    if isinstance(r, IngestError):
        # a mutated record may make the file unreadable only if it was the first record
        # (e.g. a header-like first line); the error names the file
        assert str(r).startswith(str(tmp / sample.filename))
        return
    got = by_unit(r, reader)
    for unit, rows in clean.items():
        if unit == rec.unit or unit in new:
            continue
        assert got.get(unit) == rows, (unit, new)


def test_the_oracles_decide_every_clean_record(tmp_path: Path) -> None:
    """The independent parse decides every record of each clean sample (a pod job's rows
    depend on its other lines: those are left to the locality property) and agrees with
    the reader there: so the property below has teeth."""
    for reader in GENERATORS:
        sample = GENERATORS[reader]()
        r = read(sample, _write(tmp_path / reader, sample, sample.text().encode()))
        assert isinstance(r, ReadResult)
        want = oracles.expected(sample, sample.lines)
        units = {rec.unit for rec in sample.records if not rec.unit.startswith("job")}
        assert units <= set(want), (reader, units - set(want))
        got = oracles.kept(reader, r.frames)
        for unit, rows in want.items():
            assert got.get(unit, []) == rows, (reader, unit)
        assert sum(len(v) for v in want.values()) > 0, reader


@pytest.mark.parametrize("reader", LOCALITY_READERS)
@PROPERTY
@given(data=st.data())
def test_kept_rows_equal_an_independent_parse(reader, data, tmp_path_factory) -> None:
    """Issue 37: under a mutation of one record, every unit whose records an independent
    strict parse (:mod:`hostile.oracles`) decides has exactly the rows that parse gives: a
    record that kept its form is read as written, one with a value no reader may keep gives
    no row, and the others are untouched."""
    tmp = tmp_path_factory.mktemp(f"oracle-{reader}")
    sample = GENERATORS[reader]()
    k = data.draw(st.integers(0, len(sample.records) - 1), label="record")
    rec = sample.records[k]
    extra = tuple(header_tokens(sample.lines[0])) if sample.reader in _DELIMITED else ()
    new = data.draw(record_edit("\n".join(sample.lines[rec.start : rec.stop]), extra),
                    label="mutated record")  # fmt: skip
    lines = [*sample.lines[: rec.start], *new.split("\n"), *sample.lines[rec.stop :]]
    text = "\n".join(lines) + "\n"
    r = read(sample, _write(tmp, sample, text.encode("utf-8", errors="surrogatepass")))
    if isinstance(r, IngestError):
        return  # (a refusal of the whole file is the other properties' business)
    want = oracles.expected(sample, lines, k, new)
    got = oracles.kept(reader, r.frames)
    for unit, rows in want.items():
        assert got.get(unit, []) == rows, (unit, new)


def _bundled_samples() -> list[tuple[Sample, bytes]]:
    files = datasets.sample_files()
    out = []
    for name, reader, opts in [
        ("gpud/dmesg-with-xid-119.log", "kernel", {"cluster": "c", "node": "n", "tz": "UTC"}),
        ("gpud/sxid-readme-xid79-sxid20034.log", "kernel",
         {"cluster": "c", "node": "n", "boot_time": datasets.SAMPLE_BOOT_TIME}),
        ("dcgm/readme_sentinel_values.prom", "dcgm",
         {"cluster": "c", "scraped_at": datasets.SAMPLE_BOOT_TIME}),
    ]:  # fmt: skip
        s = Sample(reader, Path(name).name, [], options=opts)
        out.append((s, files[name].read_bytes()))
    synth = files["synthetic/sacct_synth_2000.psv"].read_bytes().split(b"\n")[:80]
    out.append((Sample("sacct", "sacct.psv", [], options={"tz": "UTC"}), b"\n".join(synth)))
    for gen in GENERATORS.values():
        s = gen()
        out.append((s, s.text().encode()))
    return out


BUNDLED = _bundled_samples()


def _nonblank(data: bytes, skip_comments: bool) -> int:
    """Records of a line-per-record input, counted from its bytes: non-blank lines (after
    the same decoding as the readers: UTF-16 BOM, else UTF-8 with replacement); -1 when it
    cannot be counted here (gzip, or NUL bytes without a BOM: maybe BOM-less UTF-16)."""
    if data[:2] == b"\x1f\x8b":
        return -1
    for bom, enc in ((b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
        if data.startswith(bom):
            text = data[2:].decode(enc, errors="replace")
            break
    else:
        if b"\x00" in data:
            return -1
        text = data.decode("utf-8", errors="replace")
    text = text.removeprefix("\ufeff")
    n = 0
    for line in text.split("\n"):
        s = line.strip()
        if s and not (skip_comments and s.startswith("#")):
            n += 1
    return n


@pytest.mark.parametrize(
    ("sample", "data"), BUNDLED, ids=[f"{s.reader}:{s.filename}" for s, _ in BUNDLED]
)
@PROPERTY
@given(mutation=st.data())
def test_any_mutation_parses_or_refuses(sample, data, mutation, tmp_path_factory) -> None:
    tmp = tmp_path_factory.mktemp(f"mut-{sample.reader}")
    mutated = mutation.draw(file_mutation(data), label="mutated file")
    path = _write(tmp, sample, mutated)
    r = read(sample, path)
    if isinstance(r, IngestError):
        assert str(r).startswith(str(path)), r
        return
    n_lines = mutated.count(b"\n") + 1
    assert r.quarantine["line_no"].is_between(1, n_lines).all()
    if sample.reader in ("health_jsonl", "pod", "dcgm"):
        expected = _nonblank(mutated, skip_comments=sample.reader == "dcgm")
        if expected >= 0:
            assert r.rows_read == expected


@pytest.mark.parametrize(("reader", "encoding"), ENCODING_PARAMS)
def test_lossless_encodings_give_the_same_output(reader, encoding, tmp_path) -> None:
    sample = GENERATORS[reader]()
    plain = read(sample, _write(tmp_path / "plain", sample, sample.text().encode()))
    other = read(sample, _write(tmp_path / "enc", sample, _encode(sample.text(), encoding)))
    assert isinstance(plain, ReadResult)
    assert isinstance(other, ReadResult), other
    assert other.rows_read == plain.rows_read == sample.rows_read
    for table, frame in plain.frames.items():
        assert other.frames[table].equals(frame), table


def test_drain_reason_signals_follow_the_taxonomy(tmp_path) -> None:
    """Generated events: each DOWN/DRAIN/FAIL reason naming a signal gives one health event
    per node; the expected rows are written here from NVIDIA's Xid catalogue (79: GPU fell
    off the bus, 48: double-bit ECC), not taken from the taxonomy module."""
    sample = GENERATORS["events"]()
    r = read(sample, _write(tmp_path, sample, sample.text().encode()))
    assert isinstance(r, ReadResult)
    expected = []
    for rec in sample.records:
        fields = sample.lines[rec.start].split("|")
        reason = "|".join(fields[5:-1])
        table = {"GPU ECC errors <xid 79> on gpu:1": ("79", "gpu", "critical", "gpu:1"),
                 "Xid 48": ("48", "gpu_memory", "critical", None),
                 "NVLink down on gpu 3": ("nvlink", "nvlink", "critical", "gpu:3")}  # fmt: skip
        if reason in table:
            code, comp, sev, dev = table[reason]
            expected.append((fields[1], code, comp, sev, dev))
    he = r.frames["health_events"].select(
        "node", "code", pl.col("component").cast(pl.String), pl.col("severity").cast(pl.String),
        "device",
    )  # fmt: skip
    assert sorted(he.rows(), key=repr) == sorted(expected, key=repr)
    assert set(r.frames["health_events"]["source"].cast(pl.String)) <= {"slurm"}


@pytest.mark.parametrize(
    ("reader", "options", "pattern"),
    [("health_csv", {"tz": "Mars/Olympus"}, r"unknown time zone 'Mars/Olympus' \(option tz=\)"),
     ("health_csv", {"tz": "localtime"}, r"option tz="),
     ("health_csv", {"cluster": ""}, r"option cluster="),
     ("health_jsonl", {"tz": "Not/AZone"}, r"option tz="),
     ("dcgm", {"cluster": "a\nb"}, r"option cluster="),
     ("dcgm", {"node": ""}, r"option node="),
     ("dcgm", {"scraped_at": "2025-01-01"}, r"option scraped_at= must be a datetime"),
     ("kernel", {"tz": "Mars/Olympus"}, r"option tz="),
     ("kernel", {"year": "2025"}, r"option year="),
     ("kernel", {"boot_time": 0}, r"option boot_time="),
     ("kernel_syslog", {"year": None}, r"pass year="),
     ("kernel_syslog", {"tz": None}, r"pass tz="),
     ("events", {"tz": "Mars/Olympus"}, r"option tz="),
     ("scontrol", {"tz": "Mars/Olympus"}, r"option tz="),
     ("sinfo", {"cluster": ""}, r"option cluster="),
     ("pod", {"cluster": ""}, r"option cluster=")],
)  # fmt: skip
def test_bad_options_are_ingest_errors_naming_the_option(reader, options, pattern, tmp_path):
    """Issue 15: option errors are IngestErrors phrased with the option the user passed (the
    CLI maps ``tz=`` to ``--tz``); a bad zone is never a traceback."""
    sample = GENERATORS[reader]()
    sample.options = {**sample.options, **options}
    path = _write(tmp_path, sample, sample.text().encode())
    with pytest.raises(IngestError, match=pattern) as info:
        GENERATOR_READER[reader](path, **{k: v for k, v in sample.options.items() if v is not None})
    assert str(info.value).startswith(str(path))
