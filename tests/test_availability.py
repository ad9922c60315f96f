"""Pod job availability (Zu et al. NSDI'24 Figure 1): closed forms, the published numbers,
brute-force enumeration, and the pod simulator's measured availability."""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import replace

import numpy as np
import polars as pl
import pytest
from scipy import stats

from reliability import Dataset
from reliability.cli import main
from reliability.models.pods import (
    PodSpec,
    availability_curve,
    job_availability,
    measured_job_availability,
    required_host_availability,
    steady_state_availability,
)
from reliability.sim.pod import load_pod_preset, simulate_pod
from reliability.sweep import run_sweep

A_FIG1 = 0.9896  # DESIGN.md §5: the host availability Figure 1's 94% at 50 cubes implies


def test_figure1_numbers():
    """TPUv4 (reconfigurable) about 94% at 3,200 chips; TPUv3 (static) near 0 at 1,024 chips."""
    assert job_availability(3200, A_FIG1) == pytest.approx(0.94, abs=0.01)
    assert job_availability(1024, A_FIG1, "static", pod="tpuv3") < 0.1
    # the binomial model of DESIGN.md §4, term by term
    c = A_FIG1**16
    assert job_availability(3200, A_FIG1) == pytest.approx(stats.binom.sf(49, 64, c))
    # the same TPUv4 hardware wired statically cannot run a 3,200-chip job at all in practice
    assert job_availability(3200, A_FIG1, "static", pod="tpuv4") < 1e-3
    # without FT routing every OCS must be up: o^48
    o = steady_state_availability(0.0004, 8.26)
    assert job_availability(3200, A_FIG1, ft_routing=False, ocs_availability=o) == pytest.approx(
        stats.binom.sf(49, 64, c) * o**48
    )
    curve = availability_curve(A_FIG1, "tpuv4")
    assert set(curve["mode"]) == {"reconfigurable", "static"}
    recon = curve.filter(mode="reconfigurable", ft_routing=True).sort("n_chips")["availability"]
    assert (recon.diff().drop_nulls() <= 1e-12).all()  # falls with size


def _needed_reconfigurable(n_cubes: int, target: float, pod_cubes: int = 64) -> float:
    """Host availability at which P(Binomial(pod_cubes, a^16) >= n_cubes) = target, inverted in
    closed form: P(Binomial(n, c) >= k) is the Beta(k, n - k + 1) CDF at c (no root finding)."""
    c = stats.beta.ppf(target, n_cubes, pod_cubes - n_cubes + 1)
    return float(c ** (1 / 16))


def test_host_availability_claim():
    """NSDI'24 §2: a static pod needs about 99.9% host availability where a reconfigurable one
    does with 99%. The whole TPUv3 static pod (1,024 chips, 256 hosts) has one placement, so it
    needs ``target^(1/256)``; a 3,200-chip job (50 cubes) on a reconfigurable TPUv4 pod, three
    times larger, needs the Beta-quantile inversion above. Both are recomputed here."""
    for target in (0.75, 0.9):
        static = target ** (1 / 256)
        recon = _needed_reconfigurable(50, target)
        assert required_host_availability(1024, target, "static", "tpuv3") == pytest.approx(
            static, rel=1e-9
        )
        assert required_host_availability(3200, target, "reconfigurable") == pytest.approx(
            recon, rel=1e-9
        )
        # the paper's claim, at a target of 75% and of 90%: ~99.9% static vs <= 99% reconfigurable
        assert static > 0.9988
        assert recon <= 0.99
    # round trip, and an unreachable target without FT routing: all 48 OCSes up has
    # probability 0.999^48 = 0.953 < 0.999 however good the hosts are
    a = required_host_availability(3072, 0.8, "reconfigurable")
    assert job_availability(3072, a) == pytest.approx(0.8, abs=1e-9)
    assert math.isnan(
        required_host_availability(3200, 0.999, ft_routing=False, ocs_availability=0.999)
    )


def test_static_formula_equals_brute_force_enumeration():
    """A small static pod of 4 cubes (64 hosts): enumerate every cube state exactly (2^4) for
    cube-sized jobs, and every host state of one cube (2^16) for sub-cube jobs."""
    pod = PodSpec("mini", 4, reconfigurable=False)
    a = 0.93
    c = a**16
    for k in (1, 2, 4):
        exact = 0.0
        for state in itertools.product((0, 1), repeat=4):
            p = math.prod(c if s else 1 - c for s in state)
            blocks = [state[i : i + k] for i in range(0, 4, k)]
            exact += p * any(all(b) for b in blocks)
        assert job_availability(64 * k, a, "static", pod=pod) == pytest.approx(exact, rel=1e-12)
    # sub-cube jobs of 2 hosts (8 chips) in a one-cube pod: aligned pairs of hosts
    one = PodSpec("one", 1, reconfigurable=False)
    states = np.array(list(itertools.product((0, 1), repeat=16)), dtype=bool)
    probs = np.prod(np.where(states, a, 1 - a), axis=1)
    ok = states.reshape(-1, 8, 2).all(axis=2).any(axis=1)
    assert job_availability(8, a, "static", pod=one) == pytest.approx(
        float(probs[ok].sum()), rel=1e-12
    )


def test_guards():
    with pytest.raises(ValueError, match="fixed wiring"):
        job_availability(64, 0.99, "reconfigurable", pod="tpuv3")
    with pytest.raises(ValueError, match="unknown pod"):
        job_availability(64, 0.99, pod="tpuv9")
    assert job_availability(8192, 0.99) == 0.0  # larger than the pod


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: job_availability(64, 1.2), "host_availability"),
        (lambda: job_availability(64, math.nan), "host_availability"),
        (lambda: job_availability(64, 0.99, ocs_availability=1.5), "ocs_availability"),
        (lambda: job_availability(64, 0.99, link_availability=-0.1), "link_availability"),
        (lambda: job_availability(0, 0.99), "n_chips"),
        (lambda: job_availability(64.5, 0.99), "n_chips"),
        (lambda: job_availability(64, 0.99, "elastic"), "mode"),
        (lambda: required_host_availability(3200, 1.0), "target"),
        (lambda: required_host_availability(8192, 0.9), "n_chips"),
        (lambda: steady_state_availability(-0.1, 8.0), "failures_per_day"),
        (lambda: steady_state_availability(0.1, math.inf), "mean_repair_h"),
    ],
)
def test_invalid_arguments_are_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_keyword_only_options():
    with pytest.raises(TypeError):
        job_availability(3200, 0.99, "reconfigurable", False)  # ft_routing must be named


@pytest.mark.parametrize(
    ("preset", "mode", "pod", "sizes"),
    [
        ("tpuv4", "reconfigurable", "tpuv4", [16, 64, 2048, 3072, 3200, 3584]),
        ("tpuv3-static", "static", "tpuv3", [16, 128, 256, 512, 1024]),
    ],
)
def test_analytic_matches_simulated_pod(tmp_path, preset, mode, pod, sizes):
    """Two simulated years: the measured fraction of time each job size could be placed agrees
    with the analytic curve at the measured component availabilities, within 3 batch-means
    standard errors (plus 0.2 points where both are ~1)."""
    r = simulate_pod(replace(load_pod_preset(preset), jobs=None), seed=5)  # components only
    r.write(tmp_path / "raw")
    ds = Dataset(tmp_path / "ds")
    ds.ingest("pod", [tmp_path / "raw" / "pod_events.jsonl"])
    m = measured_job_availability(ds, sizes, mode=mode)
    assert m.host_availability == pytest.approx(0.99, abs=0.003)
    assert m.samples > 17_000
    for row in m.curve.iter_rows(named=True):
        ft = True if row["ft_routing"] is None else row["ft_routing"]
        want = float(job_availability(row["n_chips"], m.host_availability, mode, ft_routing=ft,
                                      pod=pod, ocs_availability=m.ocs_availability,
                                      link_availability=m.link_availability))  # fmt: skip
        assert abs(row["measured"] - want) <= 3 * row["stderr"] + 0.002, row
    # the interesting sizes are not trivially 0 or 1
    assert m.curve.filter((m.curve["measured"] > 0.05) & (m.curve["measured"] < 0.98)).height >= 2


def _p_at_least(k: int, n: int, p: float) -> float:
    """P(Binomial(n, p) >= k), summed exactly in Python (no scipy)."""
    return math.fsum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


def _cli_rows(out: str) -> dict[int, list[str]]:
    return {
        int(m[0]): list(m[1:])
        for m in re.findall(r"^\s+(\d+)\s+([\d.]+)%(?:\s+([\d.]+%|unreachable))?$", out, re.M)
    }


def test_availability_cli(capsys):
    """Every row printed is recomputed here: reconfigurable TPUv4 with FT routing needs any
    ceil(chips / 64) of the 64 cubes (an exact binomial tail), the needed host availability is
    the Beta-quantile inversion; static TPUv3 places a job of h hosts (a power of two) at 256 / h
    aligned offsets: ``1 − (1 − a^h)^(256 / h)``."""
    assert main(["availability", "--host-availability", "0.9896", "--target", "0.9"]) == 0
    rows = _cli_rows(capsys.readouterr().out)
    assert {64, 1024, 3072, 3200, 4096} <= set(rows)
    for n, (pct, need) in rows.items():
        k = math.ceil(n / 64)
        assert float(pct) == pytest.approx(100 * _p_at_least(k, 64, 0.9896**16), abs=0.005), n
        assert float(need.rstrip("%")) == pytest.approx(
            100 * _needed_reconfigurable(k, 0.9), abs=0.0005
        ), n
    assert rows[3200][0] == "94.04"  # NSDI'24 Fig. 1: about 94% at 50 cubes (DESIGN.md §5)
    assert main(["availability", "--mode", "static", "--host-availability", "0.99"]) == 0
    out = capsys.readouterr().out
    assert "tpuv3 (1,024 chips, static)" in out
    static = _cli_rows(out)
    assert max(static) == 1024
    for n, (pct, _) in static.items():
        h = 2 ** math.ceil(math.log2(n / 4))
        assert float(pct) == pytest.approx(100 * (1 - (1 - 0.99**h) ** (256 // h)), abs=0.005), n
    assert main(["availability", "--pod", "nope", "--host-availability", "0.99"]) == 2
    assert main(["availability", "--host-availability", "99"]) == 2
    assert (
        "--host-availability: expected a probability in [0, 1], got 99" in capsys.readouterr().err
    )
    assert main(["availability", "--host-availability", "0.99", "--target", "94"]) == 2
    assert "--target: expected a job availability in (0, 1)" in capsys.readouterr().err


def test_pod_availability_sweep_model(tmp_path):
    """The ``pod-availability`` sweep model, on a TPUv3-like static pod with no ICI failures and
    no weekly swing: (1) its analytic rows are the static closed form at its measured host
    availability, ``1 − (1 − a^h)^(256 / h)`` for a job of h hosts; (2) its repair-time override
    takes effect with the size an alternating renewal process predicts: machines fail at
    λ = 0.0008/day (× 1.04 for the burst days: 2% of days at 3×) and repair in a lognormal time
    of mean ``median · e^{σ²/2}`` (σ = 0.8), so unavailability goes from ``λR/(1 + λR)`` at a
    24 h median to that at 192 h (within 4 standard errors over the seeds)."""
    spec = tmp_path / "sweep.toml"
    spec.write_text(
        '[sweep]\nname = "t"\nmodel = "pod-availability"\nseeds = 4\nseeds_per_task = 4\n'
        'backend = "serial"\n[grid]\nmachine_repair_median_h = [24.0, 192.0]\n[fixed]\n'
        'preset = "tpuv3-static"\ndays = 365\nici_rate_per_day = 0.0\nweekly_amplitude = 0.0\n'
        "sizes = [64, 256, 1024]\n",
        encoding="utf-8",
    )
    res = run_sweep(spec, out=tmp_path / "out")
    assert not res.failures
    wide = res.results.pivot(on="key", index=["cell", "seed"], values="value")
    assert wide.height == 8
    for row in wide.iter_rows(named=True):
        a = row["host_availability"]
        for n in (64, 256, 1024):
            h = n // 4
            want = 1 - (1 - a**h) ** (256 // h)
            assert row[f"analytic_{n}"] == pytest.approx(want, rel=1e-9, abs=1e-12), (row, n)
            assert 0.0 <= row[f"measured_{n}"] <= 1.0

    lam = 0.0008 * (1 + 0.02 * (3.0 - 1))  # per day

    def unavailable(median_h: float) -> float:
        x = lam * median_h * math.exp(0.8**2 / 2) / 24
        return x / (1 + x)

    down = {
        median: 1
        - wide.filter(pl.col("cell") == f"machine_repair_median_h={median}")[
            "host_availability"
        ].to_numpy()
        for median in (24.0, 192.0)
    }
    diff = down[192.0].mean() - down[24.0].mean()
    se = math.sqrt(down[192.0].var(ddof=1) / 4 + down[24.0].var(ddof=1) / 4)
    assert diff == pytest.approx(unavailable(192.0) - unavailable(24.0), abs=4 * se)
