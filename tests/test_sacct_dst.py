"""A local-time sacct export across the end of daylight saving time (found by the
independent generator B): the hour 01:00-02:00 happens twice on 2025-11-02 in Chicago."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from reliability.ingest import read_sacct

HEAD = "JobID|JobName|Cluster|State|ExitCode|Submit|Start|End|NNodes|AllocTRES|NodeList"


def _job(jid: str, submit: str, start: str, end: str) -> str:
    return f"{jid}|j|c|COMPLETED|0:0|{submit}|{start}|{end}|1|gres/gpu=4,node=1|n1"


def test_a_job_across_the_repeated_hour_keeps_its_order(tmp_path: Path) -> None:
    # job 1 starts at 01:40 CDT (06:40 UTC) and ends 20 min later at 01:00 CST (07:00 UTC): read
    # as the earlier instant its end (06:00 UTC) was before its start, and it was quarantined
    # job 2 starts at 01:10 CST (the second 01:10, 07:10 UTC) after being submitted at 01:50 CDT
    # (06:50 UTC): read as the earlier instant its start came before its submission
    p = tmp_path / "sacct.psv"
    p.write_text("\n".join([
        HEAD,
        _job("1", "2025-11-02T01:30:00", "2025-11-02T01:40:00", "2025-11-02T01:00:00"),
        _job("2", "2025-11-02T01:50:00", "2025-11-02T01:10:00", "2025-11-02T03:00:00"),
        _job("3", "2025-11-01T10:00:00", "2025-11-01T10:00:00", "2025-11-01T11:00:00"),
    ]) + "\n")  # fmt: skip
    r = read_sacct(p, tz="America/Chicago")
    assert r.rows_quarantined == 0
    jobs = {row["job_id"]: row for row in r.frames["jobs"].iter_rows(named=True)}
    assert jobs["1"]["start_time"] == datetime(2025, 11, 2, 6, 40, tzinfo=UTC)
    assert jobs["1"]["end_time"] == datetime(2025, 11, 2, 7, 0, tzinfo=UTC)
    assert jobs["2"]["start_time"] == datetime(2025, 11, 2, 7, 10, tzinfo=UTC)
    assert jobs["3"]["end_time"] == datetime(2025, 11, 1, 16, 0, tzinfo=UTC)
    # the times in the repeated hour are said (4 of them: both of job 1's, job 2's start)
    note = next(n for n in r.notes if "repeated when daylight saving time ended" in n)
    assert note.startswith("3 start/end time(s)")
