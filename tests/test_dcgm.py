import random
from datetime import UTC, datetime

import polars as pl
import pytest

from reliability import datasets
from reliability.ingest import read_dcgm
from reliability.ingest.dcgm import is_blank

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _samples(path) -> int:
    """Sample lines of a Prometheus text file, counted here: non-blank, not a comment."""
    return sum(1 for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#"))


def test_bundled_sentinel_excerpt():
    path = datasets.sample_files()["dcgm/readme_sentinel_values.prom"]
    r = read_dcgm(path, cluster="c", scraped_at=T0)
    assert r.rows_read == _samples(path) == 3
    assert r.rows_quarantined == 0
    assert r.frames["health_events"].height == 0  # clocks and a blank temperature: no errors
    assert any("sentinel" in n for n in r.notes)


def test_real_excerpts(shared):
    d = shared / "dcgm-exporter-excerpts"
    r = read_dcgm(d / "issue250_v100_r6i3n0_partial.prom", cluster="c", scraped_at=T0)
    assert r.rows_read == _samples(d / "issue250_v100_r6i3n0_partial.prom")
    assert r.frames["health_events"].height == 0
    r = read_dcgm(d / "pr239_xid_errors_count_injected.prom", cluster="c", scraped_at=T0)
    he = r.frames["health_events"]
    assert he.select("node", "code", "device").row(0) == ("workstation", "42", "gpu0")
    r = read_dcgm(d / "dcgm_issue235_err_code_labels.txt", cluster="c", scraped_at=T0)
    # the one sample line shows the series without a value (as pasted in the issue)
    assert r.quarantine["line_no"].to_list() == [3]
    # said in the format's terms, not in the parser's Python ("could not convert string...")
    assert r.quarantine.item(0, "reason") == (
        'not a Prometheus sample (expected: name{label="..."} value)'
    )


def test_counters_between_scrapes(tmp_path):
    p = tmp_path / "n1.prom"
    lab = 'gpu="0",UUID="GPU-1",Hostname="n1"'
    p.write_text(
        "# scraped_at 2025-01-01T00:00:00Z\n"
        f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{lab}}} 0\n"
        f"DCGM_FI_DEV_PCIE_REPLAY_COUNTER{{{lab}}} 5\n"
        f"DCGM_FI_DEV_XID_ERRORS{{{lab}}} 0\n"
        f"DCGM_FI_DEV_GPU_TEMP{{{lab}}} 9223372036854775794\n"
        "# scraped_at 2025-01-01T00:00:30Z\n"
        f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{lab}}} 2\n"
        f"DCGM_FI_DEV_PCIE_REPLAY_COUNTER{{{lab}}} 5\n"
        f"DCGM_FI_DEV_XID_ERRORS{{{lab}}} 79\n"
        "# scraped_at 2025-01-01T00:01:00Z\n"
        f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{lab}}} 1\n"  # reset: the new value is the increase
        f"DCGM_FI_DEV_PCIE_REPLAY_COUNTER{{{lab}}} 9\n"
        f"DCGM_FI_DEV_XID_ERRORS{{{lab}}} 79\n"  # same last Xid: no new event
        f"DCGM_FI_DEV_XID_ERRORS{{{lab}}} 2147483647\n"  # int32 blank
        "this is not prometheus\n"
    )
    r = read_dcgm(p, cluster="c")
    assert r.rows_read == _samples(p)
    assert r.quarantine["raw"].to_list() == ["this is not prometheus"]
    he = r.frames["health_events"].select(
        "time", "code", pl.col("component").cast(pl.String), "message"
    )
    assert he.rows() == [
        (datetime(2025, 1, 1, 0, 0, 30, tzinfo=UTC), "ECC_DBE_VOL_TOTAL", "gpu_memory",
         "volatile double-bit ECC errors: +2 (counter now 2)"),
        (datetime(2025, 1, 1, 0, 0, 30, tzinfo=UTC), "79", "gpu",
         "DCGM last Xid 79: GPU has fallen off the bus"),
        (datetime(2025, 1, 1, 0, 1, tzinfo=UTC), "ECC_DBE_VOL_TOTAL", "gpu_memory",
         "volatile double-bit ECC errors: +1 (counter now 1)"),
        (datetime(2025, 1, 1, 0, 1, tzinfo=UTC), "PCIE_REPLAY_COUNTER", "pcie", "PCIe replays: +4 (counter now 9)"),
    ]  # fmt: skip


def test_err_code_label_and_mig(tmp_path):
    p = tmp_path / "n.prom"
    p.write_text(
        'DCGM_FI_DEV_XID_ERRORS{gpu="1",GPU_I_PROFILE="1g.6gb",GPU_I_ID="3",Hostname="a30",'
        'err_code="45",err_msg="Preemptive cleanup"} 1 1735689600000\n'
    )
    he = read_dcgm(p, cluster="c").frames["health_events"]
    assert he.select("node", "device", "code").row(0) == ("a30", "gpu1/gi3", "45")
    assert he.item(0, "time") == T0
    assert "first observation" in he.item(0, "message")


@pytest.mark.parametrize(("v", "blank"), [(9223372036854775794, True), (2147483632, True), (140737488355328.0, True),
                                          (0, False), (65.0, False), (2147483631, False)])  # fmt: skip
def test_is_blank(v, blank):
    assert is_blank(v) is blank


def test_openmetrics_exemplars_are_not_timestamps(tmp_path):
    """Issue 37: the exemplar after ' # ' was read as the sample's timestamp (its last number,
    as milliseconds: 1970), quarantining every sample that carried one. Per OpenMetrics the
    exemplar is not part of the sample, and a sample timestamp is in seconds."""
    lab = 'gpu="0",Hostname="n1"'
    ex = '# {trace_id="abc"} 1.0 1600000000.000'
    text = "\n".join([
        "# scraped_at 2025-01-01T00:00:00Z",
        f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{lab}}} 1 {ex}",
        f"DCGM_FI_DEV_XID_ERRORS{{{lab}}} 0 {ex}",
        "# scraped_at 2025-01-01T00:01:00Z",
        f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{lab}}} 3 {ex}",
        f"DCGM_FI_DEV_XID_ERRORS{{{lab}}} 79 1735689720.5 {ex}",  # own time: 2025-01-01T00:02:00.5Z
        'DCGM_FI_DEV_XID_ERRORS{gpu="1",Hostname="n # {2}"} 48 # {a="b"} 1',  # '#' in a label
        "# EOF",
    ]) + "\n"  # fmt: skip
    p = tmp_path / "om.prom"
    p.write_text(text)
    r = read_dcgm(p, cluster="c")
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (5, 5, 0)
    he = r.frames["health_events"].sort("time", "node")
    assert he.select("node", "time", "code").rows() == [
        ("n # {2}", datetime(2025, 1, 1, 0, 1, tzinfo=UTC), "48"),
        ("n1", datetime(2025, 1, 1, 0, 1, tzinfo=UTC), "ECC_DBE_VOL_TOTAL"),
        ("n1", datetime(2025, 1, 1, 0, 2, 0, 500000, tzinfo=UTC), "79"),
    ]
    assert he.filter(code="ECC_DBE_VOL_TOTAL").item(0, "message").endswith("+2 (counter now 3)")


def test_prometheus_text_timestamps_stay_milliseconds(tmp_path):
    """Without '# EOF' or exemplars the file is Prometheus text: timestamps in ms."""
    p = tmp_path / "p.prom"
    p.write_text('DCGM_FI_DEV_XID_ERRORS{gpu="0",Hostname="n1"} 79 1735689720500\n')
    he = read_dcgm(p, cluster="c").frames["health_events"]
    assert he["time"].to_list() == [datetime(2025, 1, 1, 0, 2, 0, 500000, tzinfo=UTC)]


#: one GPU's readings per minute from T0 (minutes 0-4): double-bit ECC counter (reset to 1
#: at minute 3), last-Xid gauge, and a second GPU's PCIe replay counter
_ECC = [0, 2, 5, 1, 1]
_XID = [0, 0, 79, 79, 0]
_PCIE = [3, 3, 4, 10, 10]
#: the events, worked out by hand from the readings above (time [min], code, message end)
_BY_HAND = [
    (1, "ECC_DBE_VOL_TOTAL", "+2 (counter now 2)"),
    (2, "79", "GPU has fallen off the bus"),
    (2, "ECC_DBE_VOL_TOTAL", "+3 (counter now 5)"),
    (2, "PCIE_REPLAY_COUNTER", "+1 (counter now 4)"),
    (3, "ECC_DBE_VOL_TOTAL", "+1 (counter now 1)"),  # 5 -> 1 in time order: a reset
    (3, "PCIE_REPLAY_COUNTER", "+6 (counter now 10)"),
]


def _scrape_lines(minutes: range, stamped: bool) -> list[str]:
    """Sample lines of the readings above, with their own timestamps [ms] or after a
    ``# scraped_at`` line per scrape."""
    g0, g1 = 'gpu="0",Hostname="n1"', 'gpu="1",Hostname="n1"'
    out: list[str] = []
    for k in minutes:
        ms = f" {1735689600000 + 60_000 * k}" if stamped else ""
        if not stamped:
            out.append(f"# scraped_at 2025-01-01T00:0{k}:00Z")
        out += [f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{g0}}} {_ECC[k]}{ms}",
                f"DCGM_FI_DEV_XID_ERRORS{{{g0}}} {_XID[k]}{ms}",
                f"DCGM_FI_DEV_PCIE_REPLAY_COUNTER{{{g1}}} {_PCIE[k]}{ms}"]  # fmt: skip
    return out


def _events(path) -> list[tuple[int, str, str]]:
    he = read_dcgm(path, cluster="c").frames["health_events"]
    got = [(int((t - T0).total_seconds() // 60), code, msg)
           for t, code, msg in he.select("time", "code", "message").rows()]  # fmt: skip
    return sorted(got)


def _matches_by_hand(got: list[tuple[int, str, str]]) -> bool:
    if len(got) != len(_BY_HAND):
        return False
    pairs = zip(got, _BY_HAND, strict=True)
    return all((m, c) == (hm, hc) and msg.endswith(end) for (m, c, msg), (hm, hc, end) in pairs)


@pytest.mark.parametrize("seed", range(6))
def test_counters_are_differenced_in_time_order_not_file_order(tmp_path, seed):
    """Cold tester: samples of one series out of time order in the file (scrapes merged)
    were differenced in file order, giving wrong increments and missing events. Any order of
    the lines of a timestamped scrape gives the events worked out by hand from the readings."""
    lines = _scrape_lines(range(5), stamped=True)
    in_order = tmp_path / "sorted.prom"
    in_order.write_text("\n".join(lines) + "\n")
    assert _matches_by_hand(_events(in_order))  # the control
    random.Random(seed).shuffle(lines)
    shuffled = tmp_path / "shuffled.prom"
    shuffled.write_text("\n".join(lines) + "\n")
    got = _events(shuffled)
    assert _matches_by_hand(got), got
    r = read_dcgm(shuffled, cluster="c")
    assert (r.rows_read, r.rows_kept, r.rows_quarantined) == (15, 15, 0)


def test_scrape_files_concatenated_later_first(tmp_path):
    """Two scrape files (``# scraped_at`` comments) concatenated in the wrong order: the later
    file's first reading is not a reset of the earlier file's last one."""
    p = tmp_path / "cat.prom"
    p.write_text(
        "\n".join(_scrape_lines(range(3, 5), False) + _scrape_lines(range(3), False)) + "\n"
    )
    r = read_dcgm(p, cluster="c")
    assert _matches_by_hand(_events(p))
    assert any("out of time order" in n for n in r.notes)
