"""A timestamp later than the time of reading (beyond a two-day margin for clock skew and a
misread zone) is a clock or parse error: every reader quarantines its record, naming the field,
instead of keeping it (one DCGM scrape stamped 2199 stretched a report's observation window,
availability and downtime to 173 years). Times within the margin are kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from reliability.ingest import read_dcgm, read_kernel_log, read_sacct, read_sacctmgr_events
from reliability.ingest._bounds import FUTURE_MARGIN, latest_time

NOW = datetime.now(UTC).replace(microsecond=0)
#: far in the future (inside the old 1990-2200 bounds), just past the margin, and inside it
FAR, PAST_MARGIN, WITHIN = (
    datetime(2199, 11, 30, 1, 15, tzinfo=UTC),
    NOW + 3 * FUTURE_MARGIN,
    NOW + timedelta(hours=12),
)
CASES = [(FAR, False), (PAST_MARGIN, False), (WITHIN, True), (NOW - timedelta(days=30), True)]
REASON = "days past the time of reading"


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S")


def test_the_latest_time_is_the_margin_past_now():
    assert abs(latest_time() - (datetime.now(UTC) + FUTURE_MARGIN)) < timedelta(seconds=5)


@pytest.mark.parametrize(("when", "kept"), CASES)
def test_sacct(tmp_path, when, kept):
    head = "JobID|JobName|State|ExitCode|Submit|Start|End|NNodes|AllocTRES|NodeList|Cluster"
    start = NOW - timedelta(days=40)
    rows = [
        f"1|a|COMPLETED|0:0|{_iso(start)}|{_iso(start)}|{_iso(when)}|1||n1|c",
        f"2|b|COMPLETED|0:0|{_iso(start)}|{_iso(start)}|{_iso(start + timedelta(hours=1))}|1||n1|c",
    ]
    for sep_epoch in (False, True):  # ISO text, and SLURM_TIME_FORMAT=%s epoch seconds
        text = "\n".join([head, *rows]) + "\n"
        if sep_epoch:
            text = text.replace(_iso(when), str(int(when.timestamp())))
        p = tmp_path / f"s{int(sep_epoch)}.psv"
        p.write_text(text, encoding="utf-8")
        r = read_sacct(p, tz="UTC")
        assert r.rows_read == r.rows_kept + r.rows_quarantined == 2
        assert r.frames["jobs"].height == (2 if kept else 1)
        if not kept:
            reason = r.quarantine.item(0, "reason")
            assert reason.startswith("field End: time"), reason
            assert REASON in reason


@pytest.mark.parametrize(("when", "kept"), CASES)
def test_dcgm_scrape_time(tmp_path, when, kept):
    lab = 'gpu="0",UUID="GPU-1",Hostname="n1"'
    p = tmp_path / "n1.prom"
    p.write_text(
        f"# scraped_at {_iso(NOW - timedelta(days=31))}Z\nDCGM_FI_DEV_XID_ERRORS{{{lab}}} 0\n"
        f"# scraped_at {_iso(when)}Z\nDCGM_FI_DEV_XID_ERRORS{{{lab}}} 79\n",
        encoding="utf-8",
    )
    r = read_dcgm(p, cluster="c")
    assert r.rows_read == r.rows_kept + r.rows_quarantined == 2
    assert r.frames["health_events"].height == int(kept)
    if not kept:
        assert REASON in r.quarantine.item(0, "reason")


@pytest.mark.parametrize(("when", "kept"), CASES)
def test_kernel_log(tmp_path, when, kept):
    p = tmp_path / "kern.log"
    p.write_text(
        f"{_iso(when)}+00:00 gpu018 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n",
        encoding="utf-8",
    )
    r = read_kernel_log(p, cluster="c", tz="UTC")
    assert r.frames["health_events"].height == int(kept)
    if not kept:
        assert REASON in r.quarantine.item(0, "reason")


@pytest.mark.parametrize(("when", "kept"), CASES)
def test_sacctmgr_events(tmp_path, when, kept):
    p = tmp_path / "ev.psv"
    p.write_text(
        "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User\n"
        f"c|n1|{_iso(when)}|Unknown|DOWN|psu|root(0)\n",
        encoding="utf-8",
    )
    r = read_sacctmgr_events(p, tz="UTC")
    assert r.rows_read == r.rows_kept + r.rows_quarantined
    assert r.frames["node_states"].height == int(kept)
    if not kept:
        assert REASON in r.quarantine.item(0, "reason")
