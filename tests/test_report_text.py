"""Text in reports: floating-point residue prints as 0; any Unicode job or node name reaches
the PDF as text, or is replaced and noted, never drawn as a box; a `$` in a name is a dollar
sign, not mathtext."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from fractions import Fraction

import polars as pl
import pytest

from reliability._result import column_scales, fmt_num, fmt_pct, format_table
from reliability.models.recovery import job_run_ettr
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


# ---------------------------------------------------------------- names in the PDF

#: job names that matplotlib read as mathtext (two `$`: "lr_" failed to parse and `reliability
#: run` exited 2 with no PDF), and names in scripts DejaVu lacks (drawn as empty boxes)
DOLLARS = ["sweep_$lr_$bs", "$HOME", "cost $5 and $6"]
WIDE = ["训练作业", "日本語ジョブ", "한국어 작업", "rocket 🚀"]
NAMES = DOLLARS + WIDE
#: fonts CI installs (.ci/debian-packages.txt) for WIDE
FONTS = "fonts-wqy-zenhei and fonts-symbola"


def _sacct(path):
    """Per name: two NODE_FAIL attempts (5 and 6 h) and a completed one (10 h), on one day."""
    head = "JobID|JobName|User|State|ExitCode|Submit|Start|End|NNodes|AllocTRES|NodeList|Cluster"
    rows = []
    job = 100
    for d, name in enumerate(NAMES, start=2):
        for state, start, end in [("NODE_FAIL", "00:01", "05:00"), ("NODE_FAIL", "00:01", "06:00"),
                                  ("COMPLETED", "10:01", "20:00")]:  # fmt: skip
            job += 1
            day = f"2025-01-{d:02d}T"
            rows.append(
                f"{job}|{name}|alice|{state}|0:0|{day}{start[:3]}00:00|{day}{start}:00|{day}{end}:00|"
                "8|gres/gpu=64,node=8|gpu[01-08]|c1"
            )
    path.write_text("\n".join([head, *rows]) + "\n", encoding="utf-8")


def _pdf_text(path) -> str:
    from pypdf import PdfReader

    return "\n".join(page.extract_text() for page in PdfReader(path).pages)


def _fonts_cover(names) -> bool:
    from matplotlib.font_manager import FontProperties

    from reliability.report.fonts import drawable

    return all(
        not drawable(n, FontProperties(family=f)).missing
        for n in names
        for f in ("DejaVu Sans", "DejaVu Sans Mono")
    )


@pytest.mark.slow  # 46 s
def test_reliability_run_prints_every_job_name_in_the_pdf(tmp_path):
    """`reliability run` on a sacct export whose job names hold `$` pairs, CJK and an emoji:
    it exited 2 on a mathtext parse error, naming neither the string nor the input. The PDF
    now holds every name as text (the table of hardware-failed jobs), with the fonts CI
    installs; with warnings as errors, no "Glyph missing"."""
    from conftest import require

    from reliability.cli import main

    _sacct(tmp_path / "sacct.psv")
    (tmp_path / "p.toml").write_text(
        '[pipeline]\nname = "names $x$ 名字"\nout = "out"\n\n[[inputs]]\nkind = "files"\n'
        'reader = "slurm"\npaths = ["sacct.psv"]\ntz = "UTC"\n\n[analysis]\nmin_gpus = 64\n',
        encoding="utf-8",
    )
    assert main(["run", str(tmp_path / "p.toml")]) == 0
    text = _pdf_text(tmp_path / "out" / "report.pdf")
    for name in DOLLARS:
        assert name in text, name
    # the title: a dollar pair is no formula
    assert "names $x$" in text
    require(_fonts_cover(WIDE), f"no font for CJK and emoji here (CI installs {FONTS})")
    for name in WIDE:
        assert name in text, name
    assert "names $x$ 名字" in text
    assert "could not be drawn" not in text


def _report(names):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    from reliability import plots
    from reliability.report import Action, Card, Figure, Report, Section, Table, Text

    # node names on tick labels, a title and a legend entry from the data
    fig = MplFigure(figsize=(6.4, 3.0), layout="constrained")
    FigureCanvasAgg(fig)
    scores = pl.DataFrame(
        {"node": names, "probability": [0.9 - 0.1 * i for i in range(len(names))],
         "flagged": [i == 0 for i in range(len(names))]}
    )  # fmt: skip
    ax = plots.plot_lemon_suspects(scores, ax=fig.subplots(), threshold=0.5)
    ax.set_title(f"Lemon suspects of {names[0]}")
    ax.plot([0.1], [0], label=names[-1])
    return Report(
        title=f"Report of {names[0]}",
        subtitle=" · ".join(names),
        actions=[Action("job", f"Look at {names[1]}", f"{names[2]} failed twice", "Jobs")],
        headline=[Card(f"Worst job {names[0]}", names[1], f"because {names[2]}")],
        sections=[
            Section(
                f"Jobs {names[0]}",
                [
                    Text("Names: " + ", ".join(names)),
                    Text(f"Note on {names[1]}", kind="note"),
                    Table(
                        "jobs",
                        pl.DataFrame({"name": names, "n": range(len(names))}),
                        f"Caption {names[2]}",
                        wrap=("name",),
                    ),
                    Figure("lemon", fig, f"Figure caption {names[0]}"),
                ],
            )
        ],
    )


def test_the_pdf_and_svg_draw_dollars_as_text_everywhere(tmp_path):
    """Titles, text, tables, captions, cards, actions, tick labels, legends: a name between
    two `$` is text (mathtext failed on "lr_"), and no warning."""
    from matplotlib.text import Text as MplText

    from reliability.report import render_html, render_pdf

    report = _report(DOLLARS)
    render_pdf(report, tmp_path / "r.pdf")
    flat = _pdf_text(tmp_path / "r.pdf")
    for name in DOLLARS:
        assert f"Jobs {name}" in flat or name in flat, name
    assert f"Report of {DOLLARS[0]}" in flat
    assert f"Look at {DOLLARS[1]}" in flat
    assert f"Caption {DOLLARS[2]}" in flat
    assert f"Figure caption {DOLLARS[0]}" in flat
    fig = report.sections[0].blocks[3].figure
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert sorted(labels) == sorted(DOLLARS)
    assert not [t for t in fig.findobj(MplText) if t.get_parse_math()]
    assert "<svg" in render_html(report)


def test_a_plot_draws_dollars_as_text_on_its_own():
    """A plot function used in a notebook (no report): its names are text too."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    from reliability import plots

    fig = MplFigure()
    FigureCanvasAgg(fig)
    scores = pl.DataFrame({"node": DOLLARS, "probability": [0.9, 0.5, 0.1], "flagged": [1, 0, 0]})
    ax = plots.plot_lemon_suspects(scores.cast({"flagged": pl.Boolean}), ax=fig.subplots())
    fig.canvas.draw()  # parsed "lr_" as mathtext and failed
    assert sorted(t.get_text() for t in ax.get_yticklabels()) == sorted(DOLLARS)


def test_cjk_and_emoji_names_are_text_in_the_pdf(tmp_path):
    """With the fonts CI installs, every name is in the PDF as text, in an embedded font that
    has it (matplotlib falls back per glyph from DejaVu), and nothing is noted as missing."""
    from conftest import require
    from pypdf import PdfReader

    from reliability.report import render_pdf

    require(_fonts_cover(WIDE), f"no font for CJK and emoji here (CI installs {FONTS})")
    render_pdf(_report(WIDE), tmp_path / "r.pdf")
    text = _pdf_text(tmp_path / "r.pdf")
    for name in WIDE:
        assert name in text, name
    assert "could not be drawn" not in text
    fonts = set()
    for page in PdfReader(tmp_path / "r.pdf").pages:
        for f in page["/Resources"]["/Font"].values():
            fonts.add(str(f.get_object()["/BaseFont"]).split("+")[-1])
    assert "DejaVuSans" in fonts
    assert fonts - {"DejaVuSans", "DejaVuSans-Bold", "DejaVuSansMono", "DejaVuSansMono-Bold"}


def test_without_a_font_for_them_characters_are_replaced_and_named(tmp_path, monkeypatch):
    """A wheel installed on a machine with no font but matplotlib's DejaVu: CJK and the emoji
    print as U+FFFD (never an empty box, no "Glyph missing" warning) and the first page says
    which characters could not be drawn."""
    from reliability.report import fonts, render_pdf

    class NoFonts(fonts._Catalog):
        def cover(self, cps):
            self.absent |= cps

    monkeypatch.setattr(fonts, "_CATALOG", NoFonts())
    report = _report(WIDE)
    render_pdf(report, tmp_path / "r.pdf")
    text = _pdf_text(tmp_path / "r.pdf")
    assert "\ufffd\ufffd\ufffd\ufffd" in text  # 训练作业
    assert "rocket \ufffd" in text
    assert "한국어" not in text
    # each distinct character once (16: Han, kana, Hangul, the rocket), the first 12 by name
    distinct = {c for n in WIDE for c in n if ord(c) > 0x2FFF}
    first = " ".join(text.split("What to do")[0].split())
    assert f"{len(distinct)} characters could not be drawn in the PDF: U+8BAD CJK UNIFIED" in first
    assert f"and {len(distinct) - 12} more. No font on this machine has them" in first
    assert fonts.undrawn_note("🚀").startswith(
        "1 character could not be drawn in the PDF: U+1F680 ROCKET. No font on this machine has it"
    )
    assert fonts.undrawn_note("") is None
    # the figure's tick labels too (rasterised in the PDF: read from the figure)
    fig = report.sections[0].blocks[3].figure
    assert "rocket \ufffd" in [t.get_text() for t in fig.axes[0].get_yticklabels()]


def test_wide_characters_take_two_table_columns():
    from reliability.report.pdf import _width, _wrap

    assert _width("训练作业") == 8
    assert _width("rocket 🚀") == 9
    assert _width("e\u0301") == 1  # a combining accent takes no column
    assert _wrap("训练作业训练作业", 6) == ["训练作", "业训练", "作业"]
    assert _wrap("ab 训练 cd", 7) == ["ab 训练", "cd"]
    assert _wrap("plain words here", 11) == ["plain words", "here"]


def _cff_font(path, chars: str) -> None:
    """A font with CFF outlines (as Noto Sans CJK's) for ``chars``: a box each."""
    from fontTools.fontBuilder import FontBuilder
    from fontTools.pens.t2CharStringPen import T2CharStringPen

    names = [".notdef", *(f"uni{ord(c):04X}" for c in chars)]
    fb = FontBuilder(1000, isTTF=False)
    fb.setupGlyphOrder(names)
    fb.setupCharacterMap({ord(c): f"uni{ord(c):04X}" for c in chars})
    outlines = {}
    for n in names:
        pen = T2CharStringPen(600, None)
        pen.moveTo((100, 0))
        pen.lineTo((100, 700))
        pen.lineTo((500, 700))
        pen.lineTo((500, 0))
        pen.closePath()
        outlines[n] = pen.getCharString()
    fb.setupCFF("TestCFF-Regular", {"FullName": "Test CFF"}, outlines, {})
    fb.setupHorizontalMetrics({n: (600, 100) for n in names})
    fb.setupHorizontalHeader(ascent=800, descent=-200)
    fb.setupNameTable({"familyName": "Test CFF", "styleName": "Regular"})
    fb.setupOS2(sTypoAscender=800, usWinAscent=800, usWinDescent=200)
    fb.setupPost()
    fb.save(str(path))


def test_a_font_with_cff_outlines_is_embedded_as_type_3(tmp_path, monkeypatch):
    """matplotlib embeds a CFF font (Noto Sans CJK) as if it were TrueType under Type 42, a PDF
    that readers reject or warn about ("Mismatch between font type and embedded font file");
    a PDF that needs one embeds Type 3 fonts, and its text is still text."""
    import matplotlib.font_manager as fm
    from pypdf import PdfReader

    from reliability.report import Report, Section, Text, fonts, render_pdf

    chars = "\ue000\ue001"  # private use: no other font has them
    _cff_font(tmp_path / "cff.otf", chars)
    monkeypatch.setattr(fm.fontManager, "ttflist", [*fm.fontManager.ttflist])
    fm.fontManager.addfont(str(tmp_path / "cff.otf"))
    monkeypatch.setattr(fonts, "PREFERRED", ("Test CFF",))
    monkeypatch.setattr(fonts, "_CATALOG", fonts._Catalog())
    name = f"job{chars}"
    render_pdf(Report("t", "s", [], [], [Section("S", [Text(name)])]), tmp_path / "r.pdf")
    pdf = PdfReader(tmp_path / "r.pdf")
    assert name in pdf.pages[0].extract_text()
    kinds = {str(f.get_object()["/Subtype"]) for f in pdf.pages[0]["/Resources"]["/Font"].values()}
    assert kinds == {"/Type3"}
    # without the CFF font's characters the same report embeds TrueType (Type 42)
    render_pdf(Report("t", "s", [], [], [Section("S", [Text("job")])]), tmp_path / "plain.pdf")
    plain = PdfReader(tmp_path / "plain.pdf").pages[0]["/Resources"]["/Font"].values()
    assert {str(f.get_object()["/Subtype"]) for f in plain} == {"/Type0"}
