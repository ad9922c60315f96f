"""End-to-end: `reliability run` on a tiny pipeline writes both reports; the HTML is
self-contained and escaped, the PDF holds every section; stages are cached and rerun only
when their inputs change; bad pipeline files get clear errors."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from bundled import BUNDLED_CLUSTER, BUNDLED_POD
from pypdf import PdfReader

from reliability.cli import main
from reliability.models.nodes.lemon import ModelFileError
from reliability.pipeline import PipelineError, load_pipeline, run_pipeline

HOSTILE = "<script>alert(1)</script>"
#: the hostile export, in a folder whose long name the PDF's input table must wrap, not cut
EVIL = "exports/" + "a_long_folder_name_" * 4 + "/evil.psv"
SECTIONS = [
    "Data and quarantine", "Node health", "Job states and sizes", "Failure taxonomy",
    "Secondary preemptions and crash loops", "Failure rate over time", "MTTF vs job size",
    "Does MTTF ∝ 1/N hold here?",
    "ETTR of job runs", "Checkpoint planning", "Which signals predict job failures", "Lemon nodes",
    "Your fleet beside published fleets", "Pod data",
    "TPU pod: failures and availability", "Routing around a failed OCS", "Component lifetimes (pods)",
]  # fmt: skip


def _sacct(path: Path) -> None:
    head = "JobID|JobName|User|State|ExitCode|Submit|Start|End|NNodes|AllocTRES|NodeList|Cluster"
    rows = [
        f"9001|{HOSTILE}|mallory|NODE_FAIL|0:0|2025-01-02T00:00:00|2025-01-02T00:01:00|2025-01-02T05:00:00|2|gres/gpu=16,node=2|evil[01-02]|evil",
        "9002|fine|alice|COMPLETED|0:0|2025-01-02T00:00:00|2025-01-02T00:01:00|2025-01-02T03:00:00|1|gres/gpu=8,node=1|evil03|evil",
        # hardware failures of large jobs written here, so the headline test has failures to
        # check whatever the simulator's calibration gives: 3 NODE_FAIL attempts of 64+ GPUs
        "9003|big|bob|NODE_FAIL|0:0|2025-01-03T00:00:00|2025-01-03T00:01:00|2025-01-03T06:00:00|8|gres/gpu=64,node=8|evil[01-08]|evil",
        "9004|big|bob|NODE_FAIL|0:0|2025-01-04T00:00:00|2025-01-04T00:01:00|2025-01-04T09:00:00|8|gres/gpu=64,node=8|evil[01-08]|evil",
        "9005|bigger|carol|NODE_FAIL|0:0|2025-01-05T00:00:00|2025-01-05T00:01:00|2025-01-05T12:00:00|16|gres/gpu=128,node=16|evil[01-16]|evil",
        "9006|big|bob|COMPLETED|0:0|2025-01-06T00:00:00|2025-01-06T00:01:00|2025-01-08T00:00:00|8|gres/gpu=64,node=8|evil[01-08]|evil",
    ]  # fmt: skip
    path.write_text("\n".join([head, *rows]) + "\n", encoding="utf-8")


def _pipeline(tmp: Path, restart_min: float = 5.0, extra: str = "", window_days: int = 7) -> Path:
    (tmp / EVIL).parent.mkdir(parents=True, exist_ok=True)
    _sacct(tmp / EVIL)
    p = tmp / "tiny.toml"
    p.write_text(f"""
[pipeline]
name = "tiny"
out = "out"

[[inputs]]
kind = "simulate-cluster"
preset = "small"
seed = 1
days = 10

[[inputs]]
kind = "files"
reader = "slurm"
paths = ["{EVIL}"]
tz = "UTC"

[[inputs]]
kind = "simulate-pod"
preset = "tpuv4"
days = 60

[analysis]
min_gpus = 64
restart_min = {restart_min}
routing_shapes = ["4x4x4"]
lemon_window_days = {window_days}
{extra}
""", encoding="utf-8")  # fmt: skip
    return p


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


_TINY: dict[str, tuple[Path, object, list[str]]] = {}


def tiny_run(tmp_path_factory) -> tuple[Path, object, list[str]]:
    """The tiny pipeline, run once per test session (the browser test renders its report too);
    nothing may rerun it in its folder (the caching test works on a copy)."""
    if "run" not in _TINY:
        tmp = tmp_path_factory.mktemp("pipe")
        lines: list[str] = []
        first = run_pipeline(_pipeline(tmp), progress=lines.append)
        _TINY["run"] = (tmp, first, lines)
    return _TINY["run"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_run(tmp_path_factory)


def test_report_files_and_html(tiny):
    tmp, res, lines = tiny
    html_path = res.files["html"]
    assert res.files["pdf"].is_file()
    assert html_path.parent == tmp / "out"
    assert len(lines) == len(res.stages)  # one progress line per stage
    doc = html_path.read_text(encoding="utf-8")
    p = _Collect()
    p.feed(doc)
    text = "".join(p.text)
    h2 = [t for t, _ in p.tags if t == "h2"]
    for title in SECTIONS:
        assert title in text, title
    assert len(h2) == len(SECTIONS) + 2  # + What to do, Summary
    # figures are inline SVG with a caption each; every figure's numbers are next to the report
    figures = [a for t, a in p.tags if t == "figure"]
    assert len(figures) >= 10
    assert sum(1 for t, _ in p.tags if t == "svg") == len(figures)
    for a in figures:
        name = a["id"].removeprefix("fig-")
        assert (tmp / "out" / "data" / f"{name}.csv").is_file(), name
    # self-contained: no scripts, no external resources
    assert not any(t in ("script", "link", "img", "iframe") for t, _ in p.tags)
    for _, attrs in p.tags:
        for k, v in attrs.items():
            if k in ("src", "href") and v:
                assert v.startswith("#"), (k, v)
    assert "url(http" not in doc
    # hostile strings from the input are text, not markup
    assert HOSTILE not in doc
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in doc
    assert HOSTILE in text
    # the backtest needs a longer run, and the report says so
    assert "No quarantine backtest" in text
    # nothing that is not a number reaches the reader
    for bad in ("nan", "inf", "unbounded", "out of reach"):
        assert not re.search(rf"\b{bad}\b", text, re.IGNORECASE), bad


def test_pdf_pages_and_text(tiny):
    tmp, res, _ = tiny
    reader = PdfReader(res.files["pdf"])
    manifest = json.loads((tmp / "out" / "run_manifest.json").read_text())
    assert len(reader.pages) == manifest["pdf_pages"] == res.pdf_pages
    pages = [page.extract_text() for page in reader.pages]
    text = "\n".join(pages)
    for title in SECTIONS:
        assert title in text, title
    # no blank or nearly blank page: the first holds the action list and the headline numbers
    assert "What to do" in pages[0]
    for i, page in enumerate(pages):
        assert len(page) > 300, (i, page)
    # input paths are printed in full (wrapped inside their column, never cut), as the
    # pipeline gives them (relative to its file)
    flat = re.sub(r"\s+", "", text)
    assert EVIL in flat
    # hostile text is printed as text
    assert HOSTILE in flat
    assert manifest["versions"]["polars"]
    assert {s["stage"] for s in manifest["stages"]} >= {
        "cluster_data",
        "mttf",
        "ettr",
        "pod",
        "report",
    }


@pytest.mark.slow  # 13 s
def test_stage_caching(tiny, tmp_path):
    import shutil

    tmp = tmp_path / "copy"  # the cache is keyed by content, not by folder
    shutil.copytree(tiny[0], tmp)
    again = run_pipeline(_pipeline(tmp))
    assert all(s["cached"] for s in again.stages)
    # a parameter that only ETTR uses reruns ETTR (and the report), nothing else
    changed = run_pipeline(_pipeline(tmp, restart_min=10.0))
    reran = {s["stage"] for s in changed.stages if not s["cached"]}
    assert reran == {"ettr", "plan", "report"}  # the planner assumes the restart overhead too
    # the attribution window reruns attribution and everything downstream of it
    # (without the report this time: its rerun on a changed stage is checked above)
    pipe = _pipeline(tmp, restart_min=10.0, extra="before_min = 20.0")
    wider = run_pipeline(pipe, report=False)
    reran = {s["stage"] for s in wider.stages if not s["cached"]}
    assert reran == {"attribution", "mttf", "rates", "workload", "node_health", "ettr", "plan",
                     "signals", "lemon", "fleets"}  # fmt: skip
    # the lemon window reruns the lemon stages only: this pipeline's cluster is not split for a
    # backtest either way, so cluster_split (keyed on its split day) and all after it stand
    pipe = _pipeline(tmp, restart_min=10.0, extra="before_min = 20.0", window_days=14)
    win = run_pipeline(pipe, report=False)
    assert {s["stage"] for s in win.stages if not s["cached"]} == {"lemon_quarantine", "lemon"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "[[inputs]]\nkind = 'simulate-cluster'\nseed = 'x'\n",
            "inputs[0].seed: expected an integer, got str 'x'",
        ),
        ("[[inputs]]\nkind = 'telepathy'\n", "inputs[0].kind: expected one of"),
        (
            "[[inputs]]\nkind = 'files'\nreader = 'slurm'\npaths = ['nope-*.psv']\n",
            "inputs[0].paths: no file matches 'nope-*.psv'",
        ),
        (
            "[[inputs]]\nkind = 'simulate-pod'\n[analysis]\ntarget_ettr = 2\n",
            "[analysis].target_ettr: expected a number in (0, 1), got 2",
        ),
        (
            "[[inputs]]\nkind = 'simulate-pod'\n[analysis]\nrestrat_min = 2\n",
            "[analysis].restrat_min: unknown key (did you mean restart_min?)",
        ),
        (
            "[[inputs]]\nkind = 'simulate-pod'\n[analysis]\nrouting_shapes = ['4x4x5']\n",
            "slice shape '4x4x5'",
        ),
        (
            "[[inputs]]\nkind = 'simulate-pod'\n[analysis]\nlemon_window_days = 10\n",
            "[analysis].lemon_window_days: expected a whole number of weeks in days",
        ),
        (
            "[[inputs]]\nkind = 'simulate-cluster'\npreset = 'smal'\n",
            "inputs[0].preset: unknown cluster preset 'smal'; bundled: "
            + ", ".join(BUNDLED_CLUSTER),
        ),
        (
            "[[inputs]]\nkind = 'simulate-pod'\npreset = 'small'\n",
            "inputs[0].preset: unknown pod preset 'small'; bundled: " + ", ".join(BUNDLED_POD),
        ),
        (
            "[[inputs]]\nkind = 'simulate-cluster'\nseed = -1\n",
            "inputs[0].seed: expected an integer >= 0",
        ),
        ("[pipeline\nname = 1\n", "not valid TOML"),
        ("[pipeline]\nname = 'x'\n", "[[inputs]]: expected at least one input table"),
    ],
)
def test_bad_pipeline_files(tmp_path, body, message):
    p = tmp_path / "bad.toml"
    p.write_text(body, encoding="utf-8")
    with pytest.raises(PipelineError) as err:
        load_pipeline(p)
    assert str(p) in str(err.value)
    assert message in str(err.value)


def test_run_cli_errors_cleanly(tmp_path, capsys):
    p = tmp_path / "bad.toml"
    p.write_text("[[inputs]]\nkind = 'files'\nreader = 'csv'\npaths = ['a']\n", encoding="utf-8")
    assert main(["run", str(p)]) == 2
    err = capsys.readouterr().err
    assert "inputs[0].reader: expected one of slurm" in err


def test_shipped_pipelines_load():
    root = Path(__file__).resolve().parents[1] / "pipelines"
    names = sorted(
        p.name
        for p in root.glob("*.toml")
        if p.name != "demo-cluster.toml" and not p.name.startswith("sweep-")
    )
    from reliability.sweep import load_sweep

    for sweep in root.glob("sweep-*.toml"):
        assert load_sweep(sweep).seeds
    assert {"demo.toml", "rsc1.toml", "tpuv4.toml"} <= set(names)
    for name in names:
        if name == "slurm-export.toml":
            continue  # a template: its paths point at the user's exports
        cfg = load_pipeline(root / name)
        assert cfg.inputs


# ---------------------------------------------------------------- headline values (issue 19 item 6)

_UNIT_H = {"s": 1 / 3600, "min": 1 / 60, "h": 1.0, "days": 24.0, "years": 8766.0}


def _hours(text: str) -> float:
    """``"6.8 h"`` / ``"7.0 days"`` / ``"55.7 min"`` -> hours (the first duration in ``text``)."""
    m = re.search(r"([\d,]+(?:\.\d+)?) (s|min|h|days|years)\b", text)
    assert m, text
    return float(m.group(1).replace(",", "")) * _UNIT_H[m.group(2)]


def _cards(doc: str) -> dict[str, tuple[str, str]]:
    """label -> (value, explanation) of the headline cards in the written HTML."""
    from html import unescape

    found = re.findall(
        r'<div class="card"><div class="l">(.*?)</div><div class="v">(.*?)</div>'
        r'<div class="e">(.*?)</div></div>',
        doc,
    )
    return {unescape(label): (unescape(v), unescape(e)) for label, v, e in found}


def test_headline_values_equal_direct_calls(tiny):
    """The report's headline numbers are the library's own answers on the same data: r_f and
    MTTF from fit_mttf (and MTTF = 1/(N r_f) in closed form), the checkpoint intervals from
    plan(), the lemon count and probabilities from the detector's predict_proba."""
    import polars as pl

    from reliability.attribution import attribute_failures
    from reliability.models.failures import fit_mttf
    from reliability.models.nodes.lemon_testing import lemon_test
    from reliability.models.recovery import plan

    tmp, res, _ = tiny
    a = res.config.analysis
    ds = res.outputs["cluster_data"].open()
    end = ds.observation_end
    jobs = attribute_failures(
        ds, before_min=a.before_min, after_min=a.after_min, requeue_exit_codes=a.requeue_exit_codes
    )
    # gpus_per_node not given: the most one node held (the Dataset summary counts it its own way)
    per_node = a.gpus_per_node or ds.summary().accelerators_per_node
    m = fit_mttf(jobs, min_gpus=a.min_gpus, gpus_per_node=per_node, observation_end=end)
    assert m.failures_ >= 3  # the data have hardware failures (at least evil.psv's three)
    assert m.rate_.rate is not None
    doc = res.files["html"].read_text(encoding="utf-8")
    cards = _cards(doc)

    rate_card = cards[f"Failure rate r_f (jobs of {a.min_gpus:,}+ GPUs)"][0]
    shown = float(rate_card.split()[0].replace(",", ""))
    assert shown == pytest.approx(1000 * m.rate_.rate, rel=5e-3)
    assert shown == pytest.approx(1000 * m.failures_ / m.node_days_, rel=5e-3)  # k / exposure

    largest = int(jobs["n_accelerators"].max())
    mttf_card = cards[f"MTTF of a {largest:,}-GPU job (the largest)"][0]
    closed_form_h = 24.0 / ((largest / per_node) * m.rate_.rate)  # 1/(N r_f), r_f per day
    assert _hours(mttf_card) == pytest.approx(closed_form_h, rel=0.01)

    # planned with the queue wait after an interruption the logs measured (recovery_costs is
    # checked against hand-built histories in test_recovery_cost)
    from reliability.models.recovery import recovery_costs

    costs = recovery_costs(jobs, observation_end=end)

    def queue_h(n: int) -> float:
        return costs.queue_h_for(n)[0] or 0.0

    p = plan(
        largest,
        m,
        a.target_ettr,
        restart_h=a.restart_h,
        gpus_per_node=per_node,
        queue_h=queue_h(largest),
    )
    assert p.recommended_interval_h is not None
    ck = cards[f"Checkpoint at {largest:,} GPUs"][0]
    assert _hours(ck) == pytest.approx(p.recommended_interval_h, rel=0.01)
    # the action list gives the interval for every planned size, each equal to plan()'s
    actions = re.search(r"Checkpoint at least: (.*?)<", doc).group(1)
    for n, interval in re.findall(r"([\d,]+) GPUs every ([^;]+)", actions):
        size = int(n.replace(",", ""))
        q = plan(
            size,
            m,
            a.target_ettr,
            restart_h=a.restart_h,
            gpus_per_node=per_node,
            queue_h=queue_h(size),
        )
        assert _hours(interval) == pytest.approx(q.recommended_interval_h, rel=0.01), n

    # lemon nodes: the statistical test by default, the same as a direct call
    t = lemon_test(ds)
    card = cards["Lemon nodes flagged"][0]
    assert card == f"{t.flagged.height} of {t.nodes.height:,}"
    shown_t = pl.read_csv(tmp / "out" / "data" / "lemon_test.csv")
    direct = dict(zip(t.nodes["node"].to_list(), t.nodes["p"].to_list(), strict=True))
    assert shown_t.height == min(50, t.nodes.height)
    for node, p_value in zip(shown_t["node"], shown_t["p"], strict=True):
        assert p_value == pytest.approx(direct[node], rel=1e-9)
    for node in t.flagged["node"]:
        assert f"Drain and inspect {node}" in doc


@pytest.mark.slow  # 34 s
def test_background_stage_gives_the_serial_result(tiny, tmp_path):
    # the lemon backtest's quarantined run (stage lemon_quarantine) runs on a second process
    # beside cluster_data and the stages after it; the oracle is the same pipeline with every
    # stage run here, one after the other
    _, res, lines = tiny
    for sub in ("bg", "serial"):
        (tmp_path / sub).mkdir()
    if not any("on a second process" in line for line in lines):  # a one-CPU machine
        res = run_pipeline(_pipeline(tmp_path / "bg"), report=False, background=True)
    serial_lines: list[str] = []
    serial = run_pipeline(
        _pipeline(tmp_path / "serial"), background=False, progress=serial_lines.append
    )
    assert not any("second process" in line for line in serial_lines)
    for name in ("lemon", "mttf", "workload", "ettr"):
        assert res.outputs[name].summary.equals(serial.outputs[name].summary), name
    # the report's data files from scratch are those of the first run, byte for byte (the
    # routing table carried the LP's wall time)
    first, again = tiny[0] / "out" / "data", tmp_path / "serial" / "out" / "data"
    names = sorted(p.name for p in first.glob("*.csv"))
    assert "routing.csv" in names
    assert names == sorted(p.name for p in again.glob("*.csv"))
    for name in names:
        assert (first / name).read_bytes() == (again / name).read_bytes(), name
    assert res.outputs["lemon"].scores.equals(serial.outputs["lemon"].scores)
    assert [s["stage"] for s in res.stages if s["stage"] != "report"] == [
        s["stage"] for s in serial.stages if s["stage"] != "report"
    ]


@pytest.mark.slow  # 37 s
def test_background_stage_error_reaches_the_caller(tmp_path, monkeypatch):
    # lemon_quarantine fails on its child process (a detector file that is not one): the caller
    # gets the error the stage raised, as when it runs here, with the child's traceback as a
    # note, and no child is left. The run starts in a folder holding another `reliability`
    # package: the child must not import it (it would fail with ImportError instead)
    shadow = tmp_path / "reliability"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("raise ImportError('the shadow package')\n")
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a detector"}', encoding="utf-8")
    pipe = _pipeline(tmp_path, extra=f'lemon_model = "{bad}"')
    with pytest.raises(ModelFileError, match=r"not a reliability\.lemon-detector") as err:
        run_pipeline(pipe, report=False, background=True)
    note = "\n".join(getattr(err.value, "__notes__", []))
    assert "ran on a child process" in note
    assert "steps/lemon.py" in note
    assert not [c for c in _cmdlines() if str(tmp_path) in c]
    assert not list((tmp_path / "out" / ".cache").glob("lemon*/_bg_job.pkl"))


def _cmdlines() -> list[str]:
    out = []
    for p in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            out.append(p.read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:  # the process ended meanwhile
            continue
    return out


def test_pod_headline_is_the_plotted_curves_point(tiny):
    """The TPUv4 card at 3,200 chips is the point of the curve the figure plots (hosts and the
    pod's measured links and OCS); hosts alone, the paper's Fig. 1 basis, is the closed form
    P(Bin(64, a^16) >= 50) at the same host availability a."""
    import polars as pl
    from scipy import stats

    _, res, _ = tiny
    pod = res.outputs["pod"]
    point = pod.curves.filter(
        (pl.col("pod") == "tpuv4") & (pl.col("n_chips") == 3200) & pl.col("ft_routing")
    ).item(0, "availability")
    assert pod.fig1_tpuv4_3200 == pytest.approx(point, rel=1e-12)
    a = pod.reference_host_availability
    assert pod.fig1_tpuv4_3200_hosts == pytest.approx(stats.binom.sf(49, 64, a**16), rel=1e-9)
    assert pod.fig1_tpuv4_3200 <= pod.fig1_tpuv4_3200_hosts


def test_pod_figure_numbers_hold_the_measured_points(tiny):
    """data/availability.csv holds the model lines and the measured points the figure plots
    (the caption promised the points; only the lines were written); pod_components has no
    leaked join column."""
    import polars as pl

    tmp, res, _ = tiny
    data = pl.read_csv(tmp / "out" / "data" / "availability.csv")
    assert set(data.get_column("kind")) == {"model", "measured"}
    measured = res.outputs["pod"].measured_curves
    assert data.filter(pl.col("kind") == "measured").height == measured.height > 0
    assert "n_cubes_right" not in pl.read_csv(tmp / "out" / "data" / "pod_components.csv").columns


@pytest.mark.parametrize(
    ("trained", "flags"), [(28, False), (7, True), (None, True)], ids=["28d", "7d", "unknown"]
)
def test_lemon_stage_flags_only_on_the_window_its_detector_was_trained_on(
    tiny, tmp_path, trained, flags
):
    """A detector of one's own (lemon_model=) trained on 28-day windows, scored on the tiny
    pipeline's 7-day window: its probabilities are not calibrated there (the features are
    counts over the window), so no node is flagged and a note says why; lemon_model= was
    taken as calibrated for any window. Trained on 7 days it flags as it scores; a file that
    does not say its window is taken at its word, with a note."""
    from dataclasses import replace

    import numpy as np
    import polars as pl

    from reliability.models.nodes import LEMON_FEATURES, LemonDetector
    from reliability.pipeline.steps.lemon import lemon, lemon_quarantine

    _, res, _ = tiny
    rng = np.random.default_rng(0)
    y = rng.random(400) < 0.2
    X = pl.DataFrame(rng.poisson(np.where(y[:, None], 6.0, 1.0), (400, len(LEMON_FEATURES))),
                     schema=list(LEMON_FEATURES)).cast(pl.Float64)  # fmt: skip
    # a low threshold, so that some nodes of the tiny run reach it
    det = LemonDetector(target_precision=0.2).fit(X, y, window_days=trained)
    model = det.save(tmp_path / "m.json")
    cfg = replace(res.config, analysis=replace(res.config.analysis, lemon_model=str(model)))
    assert cfg.analysis.lemon_window_days == 7
    o = res.outputs
    out = lemon(o.cluster_data, o.attribution, o.lemon_quarantine, cfg, tmp_path / "work")
    notes = " ".join(out.notes)
    reach = int((out.scores["probability"] >= det.threshold_).sum())
    assert reach > 0
    assert out.calibrated is flags
    assert out.flagged.height == (reach if flags else 0)
    if trained == 28:
        assert "the detector was trained on 28-day windows; on a 7-day window" in notes
        assert f"({reach:,} of {out.scores.height:,} nodes reach its threshold)" in notes
    assert ("does not record the window it was trained on" in notes) is (trained is None)
    # nor does the quarantine backtest drain the nodes an uncalibrated detector flags
    no_backtest = "no quarantine backtest: the detector was trained on 28-day windows"
    assert (no_backtest in notes) is (trained == 28)
    step = lemon_quarantine(o.cluster_split, cfg, tmp_path / "quarantine")
    if trained == 28:
        assert step.run is None
        assert step.backtest is None
        assert step.note.startswith(no_backtest)


def test_lemon_model_empty_is_the_statistical_test_and_the_docs_say_so(tiny, monkeypatch):
    """lemon_model = "" (the default) runs the statistical test, no detector (the CHANGELOG:
    the bundled detector did not transfer, so it is used only when asked for), and the
    configuration docs say so; a detector given the pipeline's default attribution (10/5 min,
    no requeue codes, built-in reasons: what detectors are trained with) reuses it."""
    import dataclasses

    import reliability.models.nodes.lemon_features as lf
    from reliability.analyses.lemons import TEST_DESCRIPTION, lemon_report
    from reliability.pipeline import analysis, config

    _, res, _ = tiny
    assert res.config.analysis.lemon_model == ""
    out = res.outputs["lemon"]
    assert out.test is not None
    assert out.detector == TEST_DESCRIPTION
    doc = {f.name: f.metadata["doc"] for f in dataclasses.fields(analysis.AnalysisConfig)}
    assert "'' = the statistical test" in doc["lemon_model"]
    for text in (config.__doc__, analysis.AnalysisConfig.__doc__):
        said = " ".join(text.split("lemon_model")[1].split()[:20])
        assert "bundled" not in said, said
        assert "statistical test" in said, said
    # a detector of one's own: the pipeline's attribution is reused, not made again
    det = _week_detector()
    cfg, o = res.config, res.outputs

    def refuse(*args, **kwargs):
        raise AssertionError("the Dataset was attributed again")

    monkeypatch.setattr(lf, "attribute_failures", refuse)
    scored = lemon_report(
        o.cluster_data.open(),
        o.attribution,
        window_days=cfg.analysis.lemon_window_days,
        model=det,
        reasons=cfg.reasons,
    )
    assert scored.test is None
    assert scored.scores.height > 0
    assert not [n for n in scored.notes if "attributed again" in n]


def _week_detector():
    """A detector trained on 7-day windows of synthetic features (lemons count 6x more)."""
    import numpy as np
    import polars as pl

    from reliability.models.nodes import LEMON_FEATURES, LemonDetector

    rng = np.random.default_rng(0)
    y = rng.random(400) < 0.2
    X = pl.DataFrame(rng.poisson(np.where(y[:, None], 6.0, 1.0), (400, len(LEMON_FEATURES))),
                     schema=list(LEMON_FEATURES)).cast(pl.Float64)  # fmt: skip
    return LemonDetector(target_precision=0.2).fit(X, y, window_days=7)


def test_plan_section_shows_recovery_costs_and_strategies(tiny):
    """The strategy table's checkpoint-restart rows are the renewal E[ETTR] at the planned rate, the
    configured interval and restart, and the measured queue wait shown beside them; the second
    size is the next power of two above the largest planned one."""
    import polars as pl

    from reliability.models.recovery import expected_ettr

    tmp, _res, _lines = tiny
    data = tmp / "out" / "data"
    costs = pl.read_csv(data / "recovery_costs.csv")
    assert {"gpus_from", "n", "median_h", "mean_h", "p90_h", "censored"} <= set(costs.columns)
    plan_t = pl.read_csv(data / "checkpoint_plan.csv")
    strat = pl.read_csv(data / "recovery_strategies.csv")
    largest = int(plan_t.get_column("n_gpus").max())
    sizes = strat.get_column("n_gpus").unique().sort().to_list()
    assert sizes == [largest, 1 << largest.bit_length()]
    rate = (
        float(plan_t.filter(pl.col("n_gpus") == largest).item(0, "rate_per_1000_node_days")) / 1000
    )
    for row in strat.filter(pl.col("strategy") == "checkpoint_restart").iter_rows(named=True):
        assert row["ckpt_interval_min"] == pytest.approx(
            60.0
        )  # [analysis].ckpt_interval_min default
        want = expected_ettr(
            row["n_gpus"], rate, 1.0, 5 / 60, queue_h=row["queue_min"] / 60, variant="renewal"
        )
        assert row["ettr"] == pytest.approx(float(want), rel=1e-3)
    assert set(strat.get_column("strategy")) == {
        "checkpoint_restart",
        "hot_spares",
        "peer_checkpoint",
        "elastic",
    }


def test_a_notebook_gets_the_report_s_numbers_from_the_analyses(tiny):
    """reliability.analyses called on the pipeline's Datasets with its [analysis] settings
    gives the pod, lemon and node-health stages' results: the same frames and text."""
    from polars.testing import assert_frame_equal

    from reliability.analyses import analyze_node_health, analyze_pods, lemon_report

    _, res, _ = tiny
    cfg, out = res.config, res.outputs
    ds, a = out["cluster_data"].open(), out["attribution"]
    pods = analyze_pods(out["pod_data"].open(), ckpt_interval_min=cfg.analysis.ckpt_interval_min)
    assert_frame_equal(pods.components, out["pod"].components)
    assert_frame_equal(pods.curves, out["pod"].curves)
    assert str(pods) == str(out["pod"])
    lemons = lemon_report(ds, a, window_days=cfg.analysis.lemon_window_days, reasons=cfg.reasons)
    assert_frame_equal(lemons.test.nodes, out["lemon"].test.nodes)
    assert_frame_equal(lemons.flagged, out["lemon"].flagged)
    health = analyze_node_health(ds, a)
    assert_frame_equal(health.by_node, out["node_health"].by_node)
    assert_frame_equal(health.offenders, out["node_health"].offenders)
