"""Values no Slurm record holds are quarantined per record with the field named; the others
are kept untouched. The expectations come from Slurm's documented semantics, not from the
reader:

- ExitCode / DerivedExitCode are ``code:signal`` (``man sacct``: "the exit code ... followed by
  the signal"): the exit status of a process is 0-255, the signal number 0-127 (the wait
  status's bit fields);
- a job or step in a finished state (COMPLETED, FAILED, NODE_FAIL, TIMEOUT, CANCELLED,
  OUT_OF_MEMORY, PREEMPTED, BOOT_FAIL, DEADLINE) has an End: Slurm prints ``Unknown`` only for
  records still pending or running;
- sacct prints C strings, which hold no NUL byte: a NUL is a corrupt line.
"""

from __future__ import annotations

import gzip

import pytest

from reliability.ingest import read_sacct

HEADER = "JobID|JobName|State|ExitCode|DerivedExitCode|Submit|Start|End|NNodes|NodeList|Cluster"
T0, T1, T2 = "2025-01-01T00:00:00", "2025-01-01T00:01:00", "2025-01-01T01:00:00"


def row(job: str, *, name: str = "j", state: str = "COMPLETED", exit_code: str = "0:0",
        derived: str = "0:0", start: str = T1, end: str = T2, cluster: str = "c") -> str:  # fmt: skip
    return "|".join([job, name, state, exit_code, derived, T0, start, end, "1", "n01", cluster])


def read(tmp_path, lines: list[str], gz: bool = False, name: str = "s.psv"):
    data = ("\n".join([HEADER, *lines]) + "\n").encode()
    p = tmp_path / (name + (".gz" if gz else ""))
    p.write_bytes(gzip.compress(data) if gz else data)
    return read_sacct(p, tz="UTC")


def quarantined(r) -> dict[int, str]:
    q = r.quarantine
    return dict(zip(q.get_column("line_no"), q.get_column("reason"), strict=True))


@pytest.mark.parametrize("gz", [False, True])
def test_exit_codes_outside_code_0_255_signal_0_127_are_quarantined(tmp_path, gz):
    good = ["0:0", "1:0", "255:0", "0:9", "0:127", "255:127"]
    bad = ["300:0", "256:0", "0:128", "0:-1", "0:200"]
    lines = [row(str(10 + i), exit_code=x) for i, x in enumerate(good + bad)]
    lines += [row("40", derived="256:0"), row("41", derived="0:-9"), row("42", derived="2:0")]
    lines += [row("43.batch", exit_code="1000:0"), row("44", exit_code="300")]
    # a negative code is no exit status but real old Slurm printed one (-2:0 on a cancelled
    # step): kept, its exit code unknown, with a note
    lines += [row("45", exit_code="-1:0")]
    r = read(tmp_path, lines, gz)
    jobs = r.frames["jobs"]
    kept = dict(zip(jobs.get_column("job_id"),
                    zip(jobs.get_column("exit_code"), jobs.get_column("exit_signal"), strict=True),
                    strict=True))  # fmt: skip
    expect = {str(10 + i): tuple(int(v) for v in x.split(":")) for i, x in enumerate(good)}
    expect["42"] = (0, 0)
    expect["45"] = (None, None)
    assert kept == expect
    assert any(n.startswith("1 record(s) with a negative ExitCode") for n in r.notes)
    q = quarantined(r)
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (len(lines), len(expect), len(q))
    for i, x in enumerate(bad):
        assert q[2 + len(good) + i] == (
            f"field ExitCode: '{x}' is out of range (code:signal, code 0-255, signal 0-127)"
        )
    first = 2 + len(good) + len(bad)
    assert q[first].startswith("field DerivedExitCode: '256:0' is out of range")
    assert q[first + 1].startswith("field DerivedExitCode: '0:-9' is out of range")
    assert q[first + 3].startswith("field ExitCode: '1000:0' is out of range")  # a step
    assert q[first + 4] == "field ExitCode: expected code:signal, got '300'"


@pytest.mark.parametrize(
    "state",
    ["COMPLETED", "FAILED", "NODE_FAIL", "TIMEOUT", "CANCELLED", "CANCELLED by 1000",
     "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL", "DEADLINE"],
)  # fmt: skip
def test_a_finished_state_without_an_end_is_not_kept_as_running(tmp_path, state):
    """A record that ran and finished has an End; one that never started (cancelled while
    pending: Start None) is kept, with neither start nor end (it is no running attempt)."""
    lines = [row("10", state=state, end="Unknown"), row("11", state=state, end=""),
             row("12", state="RUNNING", end="Unknown"), row("13", state="PENDING", end="Unknown"),
             row("14", state=state), row("15.batch", state=state, end="Unknown"),
             row("16", state=state, start="None", end="Unknown")]  # fmt: skip
    r = read(tmp_path, lines)
    jobs = r.frames["jobs"]
    assert sorted(jobs.get_column("job_id")) == ["12", "13", "14", "16"]
    # the ones still running / pending have no end; the finished one has its own
    ends = dict(zip(jobs.get_column("job_id"), jobs.get_column("end_time"), strict=True))
    starts = dict(zip(jobs.get_column("job_id"), jobs.get_column("start_time"), strict=True))
    assert [ends[j] is None for j in ("12", "13", "14", "16")] == [True, True, False, True]
    assert starts["16"] is None
    assert r.frames["job_steps"].height == 0
    q = quarantined(r)
    assert set(q) == {2, 3, 7}
    assert q[2] == (
        f"field End: 'Unknown' for a record that started ({T1}) and is in the finished State "
        f"{state} (Slurm sets End when a job or step finishes: a corrupt record, not one still "
        "running)"
    )
    assert q[3].startswith(f"field End: '' for a record that started ({T1}) and is in the")
    assert q[7].startswith(f"field End: 'Unknown' for a record that started ({T1})")
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (7, 4, 3)


@pytest.mark.parametrize("gz", [False, True])
def test_nul_bytes_never_reach_a_kept_row_nor_split_a_line(tmp_path, gz):
    lines = [row("10", name="tr\x00ain"), row("11"), row("12", cluster="c\x00"),
             row("13", name="\x00\x00"), row("14", exit_code="0:\x000"), row("15")]  # fmt: skip
    r = read(tmp_path, lines, gz)
    assert sorted(r.frames["jobs"].get_column("job_id")) == ["11", "15"]
    q = quarantined(r)
    assert q == {
        2: "field JobName: NUL byte (sacct prints none: a corrupt line; shown as U+FFFD in raw)",
        4: "field Cluster: NUL byte (sacct prints none: a corrupt line; shown as U+FFFD in raw)",
        5: "field JobName: NUL byte (sacct prints none: a corrupt line; shown as U+FFFD in raw)",
        6: "field ExitCode: NUL byte (sacct prints none: a corrupt line; shown as U+FFFD in raw)",
    }
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (6, 2, 4)
    # the raw text is whole (the NUL did not cut it) and holds no NUL
    raw = dict(zip(r.quarantine.get_column("line_no"), r.quarantine.get_column("raw"), strict=True))
    assert raw[2] == lines[0].replace("\x00", "\ufffd")
    assert not any("\x00" in x for x in raw.values())
    # the names kept are the ones written; no replaced-bytes note (the input is valid UTF-8)
    assert set(r.frames["jobs"].get_column("name")) == {"j"}
    assert not any("U+FFFD" in n for n in r.notes)
