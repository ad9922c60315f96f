"""The note on an export made without ``--duplicates``, against a brute-force reference.

Slurm numbers jobs in submission order and resets Submit only when it requeues a job. An
export without ``--duplicates`` holds one record per job id, and a requeued job then shows a
Submit later than that of a higher id. The reader names such jobs. Here the jobs and their
Submit times are generated with known requeues, the expected set is computed pair by pair,
and the rows are given in several orders (exports are usually in id order; none is assumed).
"""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from reliability.ingest.sacct.post import _resubmitted, missing_duplicates_note


def _allocs(seed: int, n: int = 300) -> tuple[pl.DataFrame, set[str]]:
    rng = random.Random(seed)
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    ids, submits = [], []
    for k in range(n):
        job = 1000 + k
        u = rng.random()  # array tasks (12_3) and heterogeneous jobs' components (12+1)
        name = (
            f"{job}_{rng.randint(0, 9)}"
            if u < 0.1
            else f"{job}+{rng.randint(0, 2)}"
            if u < 0.15
            else str(job)
        )
        submit = t0 + timedelta(seconds=60 * k)
        if rng.random() < 0.08:  # requeued: Submit reset later
            submit += timedelta(seconds=60 * rng.randint(2, 200))
        ids.append(name)
        submits.append(submit)
    # brute force: a plain id whose Submit is later than that of some higher id
    base = [int(re.split(r"[_+]", i)[0]) for i in ids]
    expected = {
        ids[a]
        for a in range(n)
        if "_" not in ids[a]
        and any(base[b] > base[a] and submits[b] < submits[a] for b in range(n))
    }
    frame = pl.DataFrame(
        {"cluster": "c", "job_id": ids, "state": "COMPLETED", "submit_time": submits},
        schema_overrides={"state": pl.String},
    )
    return frame, expected


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("order", ["ascending", "descending", "shuffled"])
def test_requeued_jobs_are_found_in_any_row_order(seed, order):
    frame, expected = _allocs(seed)
    assert expected  # the generator made some
    if order == "descending":
        frame = frame.reverse()
    elif order == "shuffled":
        frame = frame.sample(fraction=1.0, shuffle=True, seed=seed)
    assert set(_resubmitted(frame)) == expected


def test_the_note_names_them_and_an_export_with_duplicates_gets_none():
    frame, expected = _allocs(7)
    note = missing_duplicates_note(frame)
    assert note is not None
    assert f"{len(expected)} job(s)" in note
    # the same export with the earlier attempt of one requeued job: ids repeat, no note
    job = sorted(expected)[0]
    again = frame.filter(pl.col("job_id") == job).with_columns(
        submit_time=pl.col("submit_time") - timedelta(hours=1)
    )
    assert missing_duplicates_note(pl.concat([frame, again])) is None
