"""Simulator runs too long to hold (issue 37): refused up front, naming ``--days`` and the limit.

The memory estimate is checked against what a real run takes (its peak resident memory,
measured in a fresh process), and the longest run it allows against a count of the jobs a short
run really draws."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from reliability.cli import main
from reliability.sim import budget
from reliability.sim.config import MAX_DAYS, ClusterConfig, load_preset
from reliability.sim.pod import load_pod_preset, simulate_pod
from reliability.sim.run import simulate_cluster

ROOT = Path(__file__).resolve().parents[1]
GIB = 2**30


def _peak_rss(*argv: str) -> int:
    """Run ``reliability`` in a fresh interpreter; return its peak resident memory [bytes].

    Its ``VmHWM`` (this process's own high-water mark: ``ru_maxrss`` would keep the parent's
    across the fork and exec)."""
    script = textwrap.dedent("""
        import json, sys
        from reliability.cli import main
        rc = main(sys.argv[1:])
        status = dict(ln.split(":", 1) for ln in open("/proc/self/status").read().splitlines())
        print(json.dumps([rc, int(status["VmHWM"].split()[0])]))
    """)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    r = subprocess.run([sys.executable, "-c", script, *argv], env=env, capture_output=True,
                       text=True, timeout=300)  # fmt: skip
    rc, kib = json.loads(r.stdout.strip().splitlines()[-1])
    assert rc == 0, r.stderr
    return kib * 1024


@pytest.mark.parametrize(
    ("simulator", "days", "size"),
    [("cluster", 20, lambda: budget.cluster_run_size(load_preset("small"), 20)),
     ("pod", 100, lambda: budget.pod_run_size(load_pod_preset("tpuv4"), 100))],
)  # fmt: skip
def test_the_memory_estimate_bounds_a_real_run_from_above(tmp_path, simulator, days, size):
    if not Path("/proc/self/status").exists():
        pytest.skip("needs /proc/self/status (VmHWM)")
    peak = _peak_rss("simulate", simulator, "--days", str(days), "--out", str(tmp_path / "o"))
    estimate = size().memory
    assert peak <= estimate <= 2 * peak, (peak / 2**20, estimate / 2**20)


@pytest.mark.parametrize("simulator", ["cluster", "pod"])
@pytest.mark.parametrize("days", ["1e9", "100000", "36526"])
def test_a_run_longer_than_a_century_is_refused_at_once(tmp_path, simulator, days, capsys):
    t0 = time.monotonic()
    assert main(["simulate", simulator, "--days", days, "--out", str(tmp_path / "o")]) == 2
    assert time.monotonic() - t0 < 5
    err = capsys.readouterr().err
    assert err.startswith(f"error: --days {float(days):g}: expected a run length in days > 0 "
                          "and at most 36,525 (a century")  # fmt: skip
    assert not (tmp_path / "o").exists()


def test_a_cluster_run_that_does_not_fit_in_memory_is_refused_with_the_longest_that_does(tmp_path, monkeypatch, capsys):  # fmt: skip
    monkeypatch.setattr(budget, "available_memory", lambda: 8 * GIB)
    assert main(["simulate", "cluster", "--days", "30000", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --days 30000: a 30000-day run of small (")
    assert "held in memory and needs about" in err
    assert "more than the 8.0 GiB available here" in err
    # the longest run that fits, from the jobs a real 10-day run draws (the estimate uses the
    # expected jobs a day in closed form)
    jobs = simulate_cluster("small", days=10, seed=0).jobs.height
    expect = (8 * GIB - budget.BASE_BYTES) / (budget.BYTES_PER_JOB * jobs / 10)
    said = int(err.split("at most about ")[1].split(" days fit")[0].replace(",", ""))
    assert said == pytest.approx(expect, rel=0.03)
    assert not (tmp_path / "o").exists()
    # a run that fits goes ahead
    assert main(["simulate", "cluster", "--days", "2", "--out", str(tmp_path / "ok")]) == 0


def test_a_pod_run_that_does_not_fit_in_memory_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(budget, "available_memory", lambda: 4 * GIB)
    assert main(["simulate", "pod", "--days", "20000", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --days 20000: a 20000-day run of tpuv4 (78 jobs a day)")
    # 78 arrivals a day (the preset) at 4 KiB each, and 16 KiB a day of rate grids
    expect = (4 * GIB - 256 * 2**20) / (78 * 4096 + 16 * 1024)
    said = int(err.split("at most about ")[1].split(" days fit")[0].replace(",", ""))
    assert said == pytest.approx(expect, rel=1e-3)


def test_a_presets_own_days_are_checked_too(tmp_path, capsys):
    preset = tmp_path / "long.toml"
    preset.write_text('[cluster]\nname = "long"\nn_nodes = 8\ndays = 1e9\n')
    assert main(["simulate", "cluster", "--preset", str(preset), "--out", str(tmp_path / "o")]) == 2
    assert f"error: --preset {preset}: days = 1e+09: expected a run length" in (
        capsys.readouterr().err
    )


def test_the_library_refuses_a_run_length_it_cannot_hold():
    with pytest.raises(ValueError, match=r"days=1e\+09: expected a run length .* at most 36,525"):
        ClusterConfig().with_days(1e9)
    with pytest.raises(ValueError, match=r"days=nan"):
        ClusterConfig().with_days(float("nan"))
    with pytest.raises(ValueError, match=r"days=100000: expected a run length"):
        simulate_pod("tpuv4", days=100000)
    assert ClusterConfig().with_days(MAX_DAYS).days == MAX_DAYS


def test_available_memory_is_what_linux_says_is_available():
    if not Path("/proc/meminfo").exists():
        pytest.skip("needs /proc/meminfo")
    info = dict(ln.split(":", 1) for ln in Path("/proc/meminfo").read_text().splitlines())
    total = int(info["MemTotal"].split()[0]) * 1024
    free = budget.available_memory()
    assert free is not None
    assert 0 < free <= total
