"""End-to-end: `reliability run` on a tiny pipeline writes both reports; the HTML is
self-contained and escaped, the PDF holds every section; stages are cached and rerun only
when their inputs change; bad pipeline files get clear errors."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from pypdf import PdfReader

from reliability.cli import main
from reliability.pipeline import PipelineError, load_pipeline, run_pipeline

HOSTILE = "<script>alert(1)</script>"
SECTIONS = [
    "Data and quarantine", "Node health", "Job states and sizes", "Failure taxonomy",
    "Secondary preemptions and crash loops", "Failure rate over time", "MTTF vs job size",
    "ETTR of job runs", "Checkpoint planning", "Lemon nodes", "Pod data",
    "TPU pod: failures and availability", "Routing around a failed OCS",
]  # fmt: skip


def _sacct(path: Path) -> None:
    head = "JobID|JobName|User|State|ExitCode|Submit|Start|End|NNodes|AllocTRES|NodeList|Cluster"
    rows = [
        f"9001|{HOSTILE}|mallory|NODE_FAIL|0:0|2025-01-02T00:00:00|2025-01-02T00:01:00|2025-01-02T05:00:00|2|gres/gpu=16,node=2|evil[01-02]|evil",
        "9002|fine|alice|COMPLETED|0:0|2025-01-02T00:00:00|2025-01-02T00:01:00|2025-01-02T03:00:00|1|gres/gpu=8,node=1|evil03|evil",
    ]  # fmt: skip
    path.write_text("\n".join([head, *rows]) + "\n", encoding="utf-8")


def _pipeline(tmp: Path, restart_min: float = 5.0, extra: str = "") -> Path:
    _sacct(tmp / "evil.psv")
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
paths = ["evil.psv"]
tz = "UTC"

[[inputs]]
kind = "simulate-pod"
preset = "tpuv4"
days = 60

[analysis]
min_gpus = 64
restart_min = {restart_min}
routing_shapes = ["4x4x4"]
lemon_window_days = 7
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


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pipe")
    lines: list[str] = []
    first = run_pipeline(_pipeline(tmp), progress=lines.append)
    return tmp, first, lines


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
    text = "\n".join(page.extract_text() for page in reader.pages)
    for title in SECTIONS:
        assert title in text, title
    assert manifest["versions"]["polars"]
    assert {s["stage"] for s in manifest["stages"]} >= {
        "cluster_data",
        "mttf",
        "ettr",
        "pod",
        "report",
    }


def test_stage_caching(tiny):
    tmp, _, _ = tiny
    again = run_pipeline(_pipeline(tmp))
    assert all(s["cached"] for s in again.stages)
    # a parameter that only ETTR uses reruns ETTR (and the report), nothing else
    changed = run_pipeline(_pipeline(tmp, restart_min=10.0))
    reran = {s["stage"] for s in changed.stages if not s["cached"]}
    assert reran == {"ettr", "plan", "report"}  # the planner assumes the restart overhead too
    # the attribution window reruns attribution and everything downstream of it
    wider = run_pipeline(_pipeline(tmp, restart_min=10.0, extra="before_min = 20.0"))
    reran = {s["stage"] for s in wider.stages if not s["cached"]}
    assert reran == {
        "attribution", "mttf", "rates", "workload", "node_health", "ettr", "plan", "report"
    }  # fmt: skip


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "[[inputs]]\nkind = 'simulate-cluster'\nseed = 'x'\n",
            "inputs[0]: seed: expected an integer, got str 'x'",
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
            "unknown key(s) ['restrat_min']",
        ),
        (
            "[[inputs]]\nkind = 'simulate-pod'\n[analysis]\nrouting_shapes = ['4x4x5']\n",
            "slice shape '4x4x5'",
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
