"""Any ``--format`` order reads the same jobs (issue 37, item 3).

``sacct --format=JobName,JobID,...`` was refused as "no sacct header line": the reader wanted
JobID first, though the README says any field order works. Here the columns of real and
synthetic exports are permuted (by splitting their clean lines at ``|`` in the test) and the
tables must equal those of the export as it was.
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest

from reliability import datasets
from reliability.errors import IngestError
from reliability.ingest import read_sacct

REAL = Path("slurm-real-run1", "final_snapshot", "sacct_broad_duplicates.psv")


def _clean_lines(path: Path) -> list[str]:
    """The header and the lines that have its number of fields (one record each)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    n = lines[0].count("|")
    return [ln for ln in lines if ln.count("|") == n]


def _permute(lines: list[str], order: list[int]) -> list[str]:
    return ["|".join(ln.split("|")[i] for i in order) for ln in lines]


def _order(names: list[str], first: str, seed: int) -> list[int]:
    """A random field order that starts with ``first``."""
    rest = [i for i, n in enumerate(names) if n != first]
    random.Random(seed).shuffle(rest)
    return [names.index(first), *rest]


def _write(tmp: Path, name: str, lines: list[str], gz: bool = False) -> Path:
    data = ("\n".join(lines) + "\n").encode()
    p = tmp / (name + (".gz" if gz else ""))
    p.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    return p


def _same(a, b) -> None:
    assert (a.rows_read, a.rows_kept, a.rows_quarantined) == (
        b.rows_read, b.rows_kept, b.rows_quarantined,
    )  # fmt: skip
    for table, frame in a.frames.items():
        assert b.frames[table].equals(frame), table
    assert a.quarantine["line_no"].to_list() == b.quarantine["line_no"].to_list()


@pytest.mark.parametrize("gz", [False, True], ids=["mapped", "blocks"])
@pytest.mark.parametrize("first", ["JobName", "State", "Cluster", "NodeList"])
def test_synthetic_export_in_another_field_order(tmp_path, first, gz):
    lines = _clean_lines(datasets.sample_files()["synthetic/sacct_synth_2000.psv"])
    names = lines[0].split("|")
    order = _order(names, first, seed=len(first))
    plain = read_sacct(_write(tmp_path, "a.psv", lines, gz), tz="UTC")
    moved = read_sacct(_write(tmp_path, "b.psv", _permute(lines, order), gz), tz="UTC")
    assert plain.rows_kept > 6000
    _same(plain, moved)


@pytest.mark.parametrize("first", ["JobName", "Submit", "WorkDir"])
def test_real_export_in_another_field_order(tmp_path, shared, first):
    """A real Slurm 22.05 export of 62 fields (its clean lines)."""
    lines = _clean_lines(shared / REAL)
    names = lines[0].split("|")
    order = _order(names, first, seed=7)
    plain = read_sacct(_write(tmp_path, "a.psv", lines), tz="UTC")
    moved = read_sacct(_write(tmp_path, "b.psv", _permute(lines, order)), tz="UTC")
    assert plain.rows_kept > 300
    _same(plain, moved)


HEADER = "JobName|State|Submit|JobID|Cluster"


@pytest.mark.parametrize("gz", [False, True], ids=["mapped", "blocks"])
def test_job_name_first_pipes_repeated_header_and_a_job_named_jobname(tmp_path, gz):
    """A '|' in the first field is placed; a repeated header is skipped; a job named like the
    first field is a job, not a header."""
    rows = [HEADER, "train|COMPLETED|2025-01-01T00:00:00|1|c", "a|b|FAILED|2025-01-01T00:00:00|2|c",
            HEADER, "JobName|COMPLETED|2025-01-01T00:00:00|3|c",
            *[f"j{i}|COMPLETED|2025-01-01T00:00:00|{10 + i}|c" for i in range(40)]]  # fmt: skip
    r = read_sacct(_write(tmp_path, "n.psv", rows, gz), tz="UTC")
    jobs = dict(r.frames["jobs"].select("job_id", "name").iter_rows())
    assert (jobs["1"], jobs["2"], jobs["3"]) == ("train", "a|b", "JobName")
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (43, 43, 0)


def test_a_header_naming_unknown_fields_is_refused_naming_them(tmp_path):
    p = _write(
        tmp_path,
        "u.psv",
        ["JobName|JobID|Colour|Submit|State", "a|1|red|2025-01-01T00:00:00|COMPLETED"],
    )
    with pytest.raises(
        IngestError, match=r"u\.psv:1: a header line names fields sacct does not print \(Colour\)"
    ):
        read_sacct(p, tz="UTC", cluster="c")
