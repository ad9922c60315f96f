"""Text in reports: floating-point residue prints as 0; any Unicode job or node name reaches
the PDF as text, or is replaced and noted, never drawn as a box; a `$` in a name is a dollar
sign, not mathtext."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from fractions import Fraction

import polars as pl

from reliability._result import column_scales, fmt_num, fmt_pct, format_table
from reliability.models import job_run_ettr
from reliability.report.html import cell_text, table_html

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _attempt(job, attempt, submit_min, start_min, end_min, state, qos, gpus=64):
    m = lambda x: T0 + timedelta(minutes=x)  # noqa: E731
    return {"cluster": "c", "job_id": job, "attempt": attempt, "submit_time": m(submit_min),
            "start_time": m(start_min), "end_time": m(end_min), "state": state, "n_accelerators": gpus,
            "n_nodes": gpus // 8, "qos": qos, "priority": 1, "user": "u", "name": job,
            "failure_domain": "hardware" if state == "NODE_FAIL" else "none"}  # fmt: skip


#: queued 4533 min, then NODE_FAIL after 36 min, restarted at once, NODE_FAIL after 39 min
LOST_RUN = [
    _attempt("7", 0, 0, 4533, 4569, "NODE_FAIL", "low"),
    _attempt("7", 1, 4569, 4569, 4608, "NODE_FAIL", "low"),
]
#: queued 1 h, ran 10 h to completion
GOOD_RUN = [_attempt("8", 0, 0, 60, 660, "COMPLETED", "high")]


def _ettr(rows):
    return job_run_ettr(
        pl.DataFrame(rows),
        ckpt_interval_h=1.0,
        restart_h=5 / 60,
        observation_end=T0 + timedelta(days=5),
    )


def test_the_ettr_of_a_run_that_lost_all_its_work_prints_as_0():
    """By hand, in exact fractions: checkpoints every 60 min and a 5-min restart; neither
    attempt reaches a checkpoint, so all work is lost: scheduled 75 min, restart overhead 5 min,
    lost 36 + (39 - 5) min, productive 75 - 5 - 70 = 0 over a wall of 4608 min. In floating
    point (scheduled - overhead - lost) / wall leaves 2.2e-16 h / 76.8 h: the ETTR table
    printed 2.891e-18."""
    scheduled, overhead, lost = Fraction(75, 60), Fraction(5, 60), Fraction(36 + 34, 60)
    assert scheduled - overhead - lost == 0
    r = _ettr(LOST_RUN + GOOD_RUN)
    table = r.by_priority
    low = table.filter(pl.col("priority_class") == "low").row(0, named=True)
    # the residue is there in the numbers (what the CSV beside the report holds) ...
    assert 0 < low["ettr_by_gpu_time"] < 1e-17
    assert f"{low['ettr_by_gpu_time']:.4g}" == "2.891e-18"
    assert low["ettr_by_run"] == low["ettr_by_gpu_time"]
    # ... and no table prints it: HTML, PDF cells (cell_text), text
    scales = column_scales(table, r.table_scales)
    assert cell_text(low["ettr_by_gpu_time"], scales["ettr_by_gpu_time"]) == "0"
    doc = table_html(table, scales=r.table_scales)
    text = format_table(table, scales=r.table_scales)
    for out in (doc, text):
        assert "e-1" not in out, out  # no 2.891e-18, no residue of any other column
    # the run that worked keeps its value: ETTR 600 min / 660 min
    good = table.filter(pl.col("priority_class") == "high").row(0, named=True)
    assert fmt_num(good["ettr_by_gpu_time"], scale=scales["ettr_by_gpu_time"]) == "0.9091"
    assert "0.9091" in doc
    assert "0.9091" in text


def test_a_one_row_ettr_table_of_residue_prints_0_too():
    """With only the lost run, every ETTR column holds nothing but residue: read against 1
    (an ETTR is a fraction) it is still 0, in the summary table and the text lines."""
    r = _ettr(LOST_RUN)
    assert 0 < r.summary["ettr_by_gpu_time"][0] < 1e-17
    buf = io.StringIO()
    r.print_summary(file=buf)
    out = buf.getvalue() + r._repr_html_()
    assert "e-18" not in out, out
    assert "0 by GPU time" in str(r)


def test_residue_is_relative_to_the_column_and_small_measurements_stay():
    # a column of rates [per node-day]: 2.3e-6 is a measurement, not residue
    rates = pl.DataFrame({"rate": [0.5, 2.3e-6, 1.1e-7], "n": [3, 1, 1]})
    sc = column_scales(rates)
    assert sc == {"rate": 0.5}
    assert [cell_text(v, sc["rate"]) for v in rates["rate"]] == ["0.5", "2.3e-06", "1.1e-07"]
    assert fmt_num(2.3e-6) == fmt_num(2.3e-6, scale=1.0) == "2.3e-06"
    # a lone number with no scale is never zeroed (a p-value of 1e-20 is a measurement)
    assert fmt_num(1e-20) == "1e-20"
    # residue: 12 orders of magnitude below its scale; the boundary is RESIDUE = 1e-12
    assert fmt_num(-1.1e-16, scale=1.0) == "0"
    assert fmt_num(2e-15, scale=3.0) == "0"
    assert fmt_num(2e-12, scale=1.0) == "2e-12"
    assert fmt_num(0.9e-12, scale=1.0) == "0"
    # GPU-hours in the thousands: a residue of 1e-10 is 0, a tenth of an hour is not
    assert fmt_num(1e-10, scale=5000.0) == "0"
    assert fmt_num(0.1, scale=5000.0) == "0.1"
    # never a negative zero
    assert fmt_num(-0.0) == "0"
    assert fmt_pct(-0.0) == fmt_pct(-1e-18) == fmt_pct(1e-18) == "0.00%"
    assert fmt_pct(-0.004) == "-0.40%"
    # columns with no finite value or no float: no scale, nothing changes
    assert column_scales(pl.DataFrame({"x": [None, float("nan")], "s": ["a", "b"]})) == {}
    assert column_scales(pl.DataFrame({"x": [1e-18]}), {"x": 1.0}) == {"x": 1.0}
