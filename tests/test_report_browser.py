"""The HTML report in a real browser (Debian's ``chromium``, headless): every figure is
visible with a non-zero size, nothing overflows the page width (on a desktop and a phone
width), and the page logs no console errors.

The report holds no script (``test_pipeline`` checks that), so the test renders a copy with
a probe: a script first in ``<head>`` that records error events (a resource that fails to
load, an exception), and one last in ``<body>`` that, on the load event (after every
resource has loaded or failed), measures the laid-out page and writes the measurements into
the DOM, which ``chromium --dump-dom`` prints. Console messages come
from Chromium's own log (``--enable-logging=stderr``). A control page with a console error,
an exception, a broken image and an overflowing block checks that the probe sees each.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import require
from test_pipeline import tiny_run

HEAD_PROBE = """<script>window.__errors=[];window.addEventListener('error',function(e){
window.__errors.push(e.message||((e.target&&(e.target.src||e.target.href))||'error'));},true);</script>"""
BODY_PROBE = """<script>window.addEventListener("load",function(){
var W=document.documentElement.clientWidth,out={W:W,scrollWidth:document.documentElement.scrollWidth,
figures:[],overflow:[],errors:window.__errors,sections:[]};
document.querySelectorAll('h2').forEach(function(h){var r=h.getBoundingClientRect();
 out.sections.push({text:h.textContent,h:r.height});});
document.querySelectorAll('figure').forEach(function(f){
 var r=f.getBoundingClientRect(),s=f.querySelector('svg'),sr=s?s.getBoundingClientRect():{width:0,height:0,right:0};
 var cs=getComputedStyle(f),ss=s?getComputedStyle(s):cs;
 out.figures.push({id:f.id,w:r.width,h:r.height,svg_w:sr.width,svg_h:sr.height,svg_right:sr.right,
  visible:cs.visibility==='visible'&&cs.display!=='none'&&ss.visibility==='visible'&&ss.display!=='none'&&parseFloat(cs.opacity)>0});
});
document.querySelectorAll('body *').forEach(function(e){
 var t=e.tagName.toLowerCase();
 if(t==='script')return;
 var wrap=e.closest('.table-wrap'); if(wrap&&wrap!==e)return;   /* scrolls inside its own box */
 var svg=e.closest('svg'); if(svg&&svg!==e)return;
 var r=e.getBoundingClientRect(); if(r.width&&r.right>W+0.5)out.overflow.push(t+'#'+e.id+'.'+e.className+' right='+r.right);
});
var pre=document.createElement('pre');pre.id='layout-probe';pre.textContent=JSON.stringify(out);document.body.appendChild(pre);
});</script>"""

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--enable-logging=stderr", "--v=0", "--hide-scrollbars",
]  # fmt: skip


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _render(html: str, tmp: Path, width: int) -> tuple[dict, list[str]]:
    """Load ``html`` (with the probes) at ``width`` CSS pixels; returns the measurements and
    the console messages Chromium logged."""
    page = tmp / f"probe-{width}.html"
    html = html.replace("<head>", "<head>" + HEAD_PROBE, 1).replace(
        "</body>", BODY_PROBE + "</body>"
    )
    page.write_text(html, encoding="utf-8")
    cmd = [_chromium(), *FLAGS, f"--user-data-dir={tmp / f'profile-{width}'}",
           f"--window-size={width},900", "--dump-dom", page.as_uri()]  # fmt: skip
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    m = re.search(r'<pre id="layout-probe">(.*?)</pre>', run.stdout, re.S)
    assert m, f"the probe did not run: {run.stdout[-500:]}"
    import html as h

    console = [ln for ln in run.stderr.splitlines() if ":CONSOLE" in ln]
    return json.loads(h.unescape(m.group(1))), console


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    require(_chromium() is not None, "chromium not installed (.ci/debian-packages.txt lists it)")
    return tmp_path_factory.mktemp("browser")


def test_probe_sees_errors_and_overflow(browser):
    """The control: without it, a probe that measured nothing would pass."""
    bad = (
        "<!DOCTYPE html><html><head></head><body><script>console.error('boom');</script>"
        "<figure id='fig-x'><svg width='100' height='50'></svg></figure>"
        "<figure id='fig-hidden' style='display:none'><svg width='100' height='50'></svg></figure>"
        "<div style='width:3000px'>wide</div><img src='missing.png'>"
        "<script>undefinedFunction();</script></body></html>"
    )
    got, console = _render(bad, browser, 800)
    assert any("boom" in c for c in console)
    assert any("undefinedFunction" in c for c in console)
    assert any("missing.png" in e for e in got["errors"])
    assert any(o.startswith("div") for o in got["overflow"])
    figs = {f["id"]: f for f in got["figures"]}
    assert figs["fig-x"]["visible"]
    assert figs["fig-x"]["svg_w"] == pytest.approx(100)
    assert not figs["fig-hidden"]["visible"]


@pytest.mark.parametrize("width", [1280, 420])
def test_report_renders_in_a_browser(browser, tmp_path_factory, width):
    _, res, _ = tiny_run(tmp_path_factory)
    doc = res.files["html"].read_text(encoding="utf-8")
    got, console = _render(doc, browser, width)
    assert console == []
    assert got["errors"] == []
    n_figures = len(re.findall(r"<figure ", doc))
    assert n_figures >= 10
    assert len(got["figures"]) == n_figures
    for f in got["figures"]:
        assert f["visible"], f
        assert f["svg_w"] > 50, f  # drawn, and not squeezed to nothing
        assert f["svg_h"] > 30, f
        assert f["svg_right"] <= got["W"] + 0.5, f
    assert got["overflow"] == []
    assert got["scrollWidth"] <= got["W"]
    # issue 36's three sections are laid out (the strategies are a table of the planning one)
    shown = {h["text"].strip(): h["h"] for h in got["sections"]}
    for title in (
        "Your fleet beside published fleets",
        "Does MTTF ∝ 1/N hold here?",
        "Checkpoint planning",
    ):
        assert shown.get(title, 0) > 0, (title, sorted(shown))
    assert 'id="fig-fleet_rates"' in doc
    assert "recovery_strategies" in doc  # the strategy table's data file is linked
