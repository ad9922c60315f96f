"""Recovery strategies: each closed form against a Monte Carlo of its assumptions over seeds,
the checkpoint-restart row against the package's renewal E[ETTR], spare counts against
scipy's Poisson quantile, and the order of the strategies where it must hold."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from reliability._result import frame_is_finite
from reliability.models.recovery import (
    compare_strategies,
    daly_interval_h,
    expected_ettr,
    simulate_strategy,
    spares_needed,
)
from reliability.models.recovery.strategies import mixed_restart_ettr

SEEDS = (0, 1, 2, 3)
#: a 2,048-GPU job at 10x RSC-1's rate: about one interruption every 3.5 h, so short runs see several
BASE = dict(n_gpus=2048, rate_per_node_day=0.1, ckpt_interval_h=1.0, restart_h=0.1)
COSTS = dict(queue_h=0.5, ckpt_write_h=0.05, repair_h=6.0, peer_restore_h=0.03)


def _z(sim, closed: float) -> float:
    return (sim.estimate - closed) / sim.stderr


@pytest.mark.parametrize(
    "kw",
    [
        dict(n_gpus=16384, rate_per_node_day=6.5e-3, ckpt_interval_h=1.0, restart_h=5 / 60),
        dict(n_gpus=1024, rate_per_node_day=2.34e-3, ckpt_interval_h=0.5, restart_h=0.2,
             queue_h=2.0, ckpt_write_h=0.1),
        dict(n_gpus=131072, rate_per_node_day=6.5e-3, ckpt_interval_h=0.1, restart_h=0.05, queue_h=0.25),
    ],
)  # fmt: skip
def test_checkpoint_restart_row_is_the_renewal_expectation(kw):
    c = compare_strategies(**kw)
    q, w = kw.get("queue_h", 0.0), kw.get("ckpt_write_h", 0.0)
    want = expected_ettr(kw["n_gpus"], kw["rate_per_node_day"], kw["ckpt_interval_h"], kw["restart_h"],
                         queue_h=q, ckpt_write_h=w, variant="renewal")  # fmt: skip
    assert c.row("checkpoint_restart")["ettr"] == pytest.approx(float(want), rel=1e-12)
    assert frame_is_finite(c.summary)


def test_mixed_restart_with_one_cost_is_the_renewal_form():
    for lam, dt, w, u, q in [
        (0.5, 1.0, 0.05, 0.1, 0.5),
        (3.0, 0.2, 0.0, 0.3, 2.0),
        (0.01, 4.0, 0.2, 0.0, 0.0),
    ]:
        # one node at r_f = 24 λ per node-day: λ per hour
        want = float(
            expected_ettr(8, 24 * lam, dt, u, queue_h=q, ckpt_write_h=w, variant="renewal")
        )
        assert mixed_restart_ettr(lam, dt, w, (u, 99.0), (1.0, 0.0), q) == pytest.approx(
            want, rel=1e-12
        )


def test_mixed_restart_against_the_first_order_cost():
    # small λ: ETTR ≈ 1/(1 + w/Δt) − λ (q + E[u] + (Δt + w)/2)/(1 + w/Δt), E[u] the mixture's mean
    lam, dt, w, q = 1e-4, 1.0, 0.01, 0.5
    got = mixed_restart_ettr(lam, dt, w, (0.1, 2.0), (0.7, 0.3), q)
    eu = 0.7 * 0.1 + 0.3 * 2.0
    approx = (1 - lam * (q + eu + (dt + w) / 2)) / (1 + w / dt)
    assert got == pytest.approx(approx, abs=1e-6)


@pytest.mark.parametrize("mu", [0.01, 0.3, 2.0, 11.7, 80.0])
@pytest.mark.parametrize("target", [0.9, 0.99, 0.999])
def test_spares_needed_against_scipy_poisson_ppf(mu, target):
    # a failure finds a spare free when the *other* nodes in repair number at most s − 1:
    # s − 1 is the Poisson(μ) quantile at the target
    s = spares_needed(mu / 6.0, 6.0, target)
    assert s == int(stats.poisson.ppf(target, mu)) + 1
    assert stats.poisson.cdf(s - 1, mu) >= target > stats.poisson.cdf(s - 2, mu)


def test_spares_row_uses_the_needed_count_and_its_wait_probability():
    c = compare_strategies(**BASE, **COSTS, target_no_wait=0.99)
    r = c.row("hot_spares")
    mu = (2048 / 8) * 0.1 / 24 * 6.0
    assert r["spare_nodes"] == int(stats.poisson.ppf(0.99, mu)) + 1
    assert r["p_wait"] == pytest.approx(1 - stats.poisson.cdf(r["spare_nodes"] - 1, mu), rel=1e-12)
    want = expected_ettr(
        2048, 0.1, 1.0, 0.1, queue_h=r["p_wait"] * 0.5, ckpt_write_h=0.05, variant="renewal"
    )
    assert r["ettr"] == pytest.approx(float(want), rel=1e-12)
    assert c.row("hot_spares")["extra_nodes"] == r["spare_nodes"]


def test_peer_interval_is_dalys_and_fallback_is_poisson():
    c = compare_strategies(**BASE, **COSTS, peer_write_h=20 / 3600, peer_copies=2)
    r = c.row("peer_checkpoint")
    lam = (2048 / 8) * 0.1 / 24
    assert r["ckpt_interval_h"] == pytest.approx(
        daly_interval_h(20 / 3600, 1 / lam, 0.03, order="higher")
    )
    window = 0.5 + 0.03
    assert r["fallback_prob"] == pytest.approx((1 - math.exp(-0.1 / 24 * window)) ** 2, rel=1e-12)


def test_elastic_closed_form_by_hand():
    c = compare_strategies(**BASE, **COSTS, replica_nodes=4, reconfig_h=0.02, elastic_slowdown=0.05)
    r = c.row("elastic")
    rho, heal = 4 * 0.1 / 24, 0.5 + 0.1  # heal: queue wait + restart
    lam = 256 * 0.1 / 24
    want = 0.95 * (1 - rho * heal / (1 + rho * heal) - 0.02 * lam / (1 + rho * heal))
    assert r["replicas"] == 64
    assert r["ettr"] == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_checkpoint_restart_against_monte_carlo(seed):
    c = compare_strategies(**BASE, **COSTS)
    sim = simulate_strategy(c, "checkpoint_restart", n_runs=4000, seed=seed)
    assert abs(_z(sim, c.row("checkpoint_restart")["ettr"])) < 3.5


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dist", ["exponential", "deterministic"])
def test_hot_spares_against_monte_carlo(seed, dist):
    # few spares on purpose (p_wait ~ 0.2): the wait matters and the pool's fraction is tested
    c = compare_strategies(**BASE, **COSTS, spare_nodes=8)
    r = c.row("hot_spares")
    assert 0.05 < r["p_wait"] < 0.5
    sim = simulate_strategy(c, "hot_spares", n_runs=4000, n_pools=300, pool_failures=300,
                            repair_distribution=dist, seed=seed)  # fmt: skip
    assert abs((sim.p_wait - r["p_wait"]) / sim.p_wait_stderr) < 3.5
    assert abs(_z(sim, r["ettr"])) < 3.5


@pytest.mark.parametrize("seed", SEEDS)
def test_peer_checkpoint_against_monte_carlo(seed):
    # a long queue wait and one copy: the copy is lost often enough (~20%) to test the mixture
    # (two nodes: the copy lives on the other replica; a one-node job has no peer)
    c = compare_strategies(16, 0.5, 1.0, 0.5, queue_h=10.0, peer_write_h=0.02, peer_restore_h=0.05)
    r = c.row("peer_checkpoint")
    assert 0.1 < r["fallback_prob"] < 0.3
    sim = simulate_strategy(c, "peer_checkpoint", n_runs=4000, n_segments=400, seed=seed)
    assert abs(_z(sim, r["ettr"])) < 3.5
    n_fail = sim.params["interruptions"]
    assert abs(sim.fallback_fraction - r["fallback_prob"]) < 4 * math.sqrt(
        r["fallback_prob"] * (1 - r["fallback_prob"]) / n_fail
    )


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dist", ["exponential", "deterministic"])
def test_elastic_against_monte_carlo(seed, dist):
    # 16 replicas of 2 nodes, a long heal so replicas are often out
    c = compare_strategies(256, 0.2, 1.0, 0.1, queue_h=3.0, replica_nodes=2, reconfig_h=0.05)
    r = c.row("elastic")
    sim = simulate_strategy(c, "elastic", n_runs=3000, repair_distribution=dist, seed=seed)
    assert abs(_z(sim, r["ettr"])) < 3.5


def test_order_where_it_must_hold():
    # a queue wait after failures, cheaper peer writes and restores than storage's, and a
    # data-parallel job whose replicas heal in the time a restart takes: elastic >= peer >= today,
    # and spares >= today
    for n in (1024, 16384, 131072):
        c = compare_strategies(n, 6.5e-3, 0.5, 0.1, queue_h=0.5, ckpt_write_h=0.05, repair_h=8.0,
                               peer_write_h=0.005, peer_restore_h=0.05)  # fmt: skip
        e = {
            s: c.row(s)["ettr"]
            for s in ("checkpoint_restart", "hot_spares", "peer_checkpoint", "elastic")
        }
        assert e["elastic"] >= e["peer_checkpoint"] >= e["checkpoint_restart"], (n, e)
        assert e["hot_spares"] > e["checkpoint_restart"], (n, e)


def test_spares_change_nothing_without_a_queue_wait():
    c = compare_strategies(**BASE, repair_h=6.0)
    assert c.row("hot_spares")["ettr"] == c.row("checkpoint_restart")["ettr"]
    assert any("change nothing" in n for n in c.notes)


def test_assumed_defaults_are_noted_and_text_is_clean():
    c = compare_strategies(**BASE, queue_h=0.5)
    text = str(c)
    assert "24 h assumed" in text
    assert "10 s assumed" in text
    assert "60 s per failure assumed" in text
    for word in ("nan", "inf"):
        assert f" {word}" not in text.lower()
    assert "<table" in c._repr_html_()


@pytest.mark.parametrize(
    ("kw", "msg"),
    [
        (dict(rate_per_node_day=0.0), "rate_per_node_day must be a positive"),
        (dict(ckpt_interval_h=0.0), "ckpt_interval_h must be"),
        (dict(queue_h=-1.0), "queue_h must be"),
        (dict(replica_nodes=10_000), "replica_nodes must be in"),
        (dict(spare_nodes=-1), "spare_nodes must be"),
        (dict(pool_nodes=3), "pool_nodes must be at least"),
        (dict(target_no_wait=1.0), "target_no_wait must be in"),
        (dict(elastic_slowdown=1.0), "elastic_slowdown must be in"),
    ],
)
def test_bad_input_is_refused_in_its_own_terms(kw, msg):
    with pytest.raises(ValueError, match=msg):
        compare_strategies(**{**BASE, **kw})


def test_simulation_is_seeded():
    c = compare_strategies(**BASE, **COSTS)
    a = simulate_strategy(c, "peer_checkpoint", n_runs=500, seed=7)
    b = simulate_strategy(c, "peer_checkpoint", n_runs=500, seed=7)
    assert a.estimate == b.estimate
    assert np.isfinite(a.stderr)


# ---------------------------------------------------------------- CLI


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    from reliability.cli import main

    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_compare_strategies_prints_the_library_table(capsys):
    argv = ["plan", "--gpus", "16384", "--rate", "6.5e-3", "--target-ettr", "0.5", "--restart-min", "5",
            "--queue-min", "30", "--interval-min", "30", "--repair-hours", "8", "--compare-strategies"]  # fmt: skip
    code, out, err = _cli(capsys, *argv)
    assert code == 0, err
    want = compare_strategies(16384, 6.5e-3, 0.5, 5 / 60, queue_h=0.5, repair_h=8.0)
    for row in want.summary.iter_rows(named=True):
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(row["strategy"] + " "))
        assert f"{row['ettr']:.4f}"[:5] in line
    assert "checkpoint interval: --interval-min" in out
    assert "(pass --peer-write-s)" in out
    assert "peer_write_h" not in out


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (["--repair-hours", "0"], "--repair-hours"),
        (["--spares", "-2"], "--spares"),
        (["--target-no-wait", "1"], "--target-no-wait"),
        (["--replica-nodes", "5000"], "--replica-nodes"),
        (["--peer-write-s", "-1"], "--peer-write-s"),
        (["--elastic-slowdown", "1.5"], "--elastic-slowdown"),
    ],
)
def test_cli_refuses_bad_strategy_flags_by_name(capsys, extra, flag):
    argv = ["plan", "--gpus", "1024", "--rate", "6.5e-3", "--target-ettr", "0.9", "--restart-min", "5",
            "--compare-strategies", *extra]  # fmt: skip
    code, _out, err = _cli(capsys, *argv)
    assert code == 2
    assert err.startswith(f"error: {flag}: expected"), err


def test_cli_compare_needs_a_restart_and_a_rate(capsys):
    code, _, err = _cli(capsys, "plan", "--gpus", "1024", "--rate", "6.5e-3", "--target-ettr", "0.9",
                        "--compare-strategies")  # fmt: skip
    assert code == 2
    assert "needs --restart-min" in err
    code, _, err = _cli(capsys, "plan", "--gpus", "1024", "--target-ettr", "0.9")
    assert code == 2
    assert err.startswith("error: --rate: expected"), err


# ---------------------------------------------------------------- new-user trial findings


@pytest.mark.parametrize("mu", [1e-9, 0.01, 0.3, 1.0, 7.5, 42.0, 1e3, 5.5e8])
@pytest.mark.parametrize("target", [1e-6, 0.01, 0.5, 0.9, 0.99, 0.999999])
def test_spares_are_the_poisson_quantile_plus_one(mu, target):
    # the definition, checked independently: P(X <= s-1) >= target and P(X <= s-2) < target
    s = spares_needed(mu, 1.0, target)
    assert s == int(stats.poisson.ppf(target, mu)) + 1
    if mu <= 1e3:
        assert stats.poisson.cdf(s - 1, mu) >= target * (1 - 1e-12)
        if s >= 2:
            assert stats.poisson.cdf(s - 2, mu) < target
    else:
        # at mu = 5.5e8 scipy's cdf is off by ~3e-7 in its far tail; check the quantile against the
        # Cornish-Fisher expansion instead: mu + z sqrt(mu) + (z^2 - 1)/6 - 1/2, error O(1/sqrt(mu))
        z = stats.norm.ppf(target)
        assert abs((s - 1) - (mu + z * math.sqrt(mu) + (z * z - 1) / 6 - 0.5)) <= 2


def test_spares_hand_values():
    # Poisson(1): P(X<=0) = e^-1 = 0.368, P(X<=1) = 2e^-1 = 0.736, P(X<=2) = 2.5e^-1 = 0.920
    assert spares_needed(1.0, 1.0, 0.3) == 1
    assert spares_needed(1.0, 1.0, 0.5) == 2
    assert spares_needed(1.0, 1.0, 0.9) == 3
    assert spares_needed(1.0, 1.0, 0.93) == 4
    # m = rate x repair underflows to 0: nobody is ever in repair, one spare
    assert spares_needed(1e-200, 1e-200, 0.999999) == 1


def test_spares_for_a_huge_repair_time_return_fast_and_say_so():
    import time

    t0 = time.perf_counter()
    c = compare_strategies(16384, 6.5e-3, 0.5, 5 / 60, queue_h=0.5, repair_h=1e9)
    assert time.perf_counter() - t0 < 5.0
    s = c.row("hot_spares")["spare_nodes"]
    mu = 2048 * 6.5e-3 / 24 * 1e9
    assert s == int(stats.poisson.ppf(0.99, mu)) + 1
    assert any("more than the job's own 2,048 nodes" in n for n in c.notes)
    assert f"{s:,} spare nodes" in c.row("hot_spares")["assumes"]


@pytest.mark.parametrize("target", [0.0, 1.0, -0.1, 1.5])
def test_spares_refuse_targets_outside_zero_one(target):
    with pytest.raises(ValueError, match="target_no_wait"):
        spares_needed(1.0, 1.0, target)


def test_best_interval_maximises_the_renewal_ettr():
    from reliability.models.recovery.strategies import SHORTEST_INTERVAL_H, best_interval_h

    # renewal form written out (Daly 2006 §3): B = (f(u) + (1 - p(u)) q) / p(u) with u = u0 + s,
    # A = f(s) + (1 - p(s))(q + B), ETTR = dt / A, s = dt + w
    lam = 16384 / 8 * 6.5e-3 / 24
    u0, q, w = 5 / 60, 0.5, 2 / 60

    def ettr(dt):
        s = dt + w
        f = lambda x: -math.expm1(-lam * x) / lam  # noqa: E731
        b = (f(u0 + s) + (1 - math.exp(-lam * (u0 + s))) * q) / math.exp(-lam * (u0 + s))
        return dt / (f(s) + (1 - math.exp(-lam * s)) * (q + b))

    grid = np.geomspace(SHORTEST_INTERVAL_H, 10, 20001)
    vals = np.array([ettr(x) for x in grid])
    dt, e = best_interval_h(16384, 6.5e-3, u0, queue_h=q, ckpt_write_h=w)
    assert e == pytest.approx(vals.max(), rel=1e-6)
    assert dt == pytest.approx(grid[vals.argmax()], rel=1e-2)
    # free checkpoints: the ETTR rises as the interval shrinks, so the shortest considered
    dt0, _ = best_interval_h(16384, 6.5e-3, u0, queue_h=q)
    assert dt0 == pytest.approx(SHORTEST_INTERVAL_H)


def test_elastic_replicas_whole_and_one_replica_does_not_apply():
    c = compare_strategies(2048 * 8, 6.5e-3, 0.5, 5 / 60, repair_h=8.0, replica_nodes=3)
    assert c.row("elastic")["replicas"] == 682  # floor(2048 / 3)
    assert any("not a whole number of replicas" in n for n in c.notes)
    one = compare_strategies(8, 6.5e-3, 0.5, 5 / 60, repair_h=8.0)
    assert one.row("elastic")["ettr"] is None
    assert any("elastic does not apply" in n for n in one.notes)
    assert "1 node" in one.row("hot_spares")["assumes"]
    assert "1 nodes" not in str(one)
    with pytest.raises(ValueError, match="peer_copies must be fewer"):
        compare_strategies(64, 6.5e-3, 0.5, 5 / 60, repair_h=8.0, peer_copies=8)


def test_no_winner_when_every_ettr_is_about_zero():
    # two nodes at 500 failures per node-day (an interruption every 1.4 min), 10 h queue waits:
    # checkpoint-restart ~ dt / (e^{lam(dt+u0)} (1/lam + q)) ~ 1e-12, all others below 0.01
    c = compare_strategies(16, 500.0, 0.5, 5 / 60, queue_h=10.0, repair_h=24.0, spare_nodes=0)
    assert c.summary.get_column("ettr").drop_nulls().max() < 0.01
    text = str(c)
    assert "Best:" not in text
    assert "No best strategy" in text


def test_write_times_assumed_are_noted():
    c = compare_strategies(1024, 6.5e-3, 1.0, 5 / 60, repair_h=8.0)
    note = next(n for n in c.notes if n.startswith("checkpoint writes assumed"))
    assert "to storage 0" in note
    assert "10 s" in note
    assert "favours checkpoint-restart" in note
    c2 = compare_strategies(1024, 6.5e-3, 1.0, 5 / 60, repair_h=8.0, ckpt_write_h=0.05)
    assert not any("favours" in n for n in c2.notes)


def test_plan_status_says_when_the_queue_wait_alone_caps_ettr():
    """Each interruption costs at least the wait for the rerun, so ETTR <= MTTF / (MTTF + q):
    with q = 30 h at 1,024 GPUs and 12 failures per 1000 node-days (MTTF 15.7 h) no interval
    reaches 0.9, and the status names the wait and the cap instead of the restart."""
    from reliability.models.recovery import plan
    from reliability.pipeline.steps.cluster import _status

    p = plan(1024, 12e-3, 0.9, restart_h=5 / 60, queue_h=30.0)
    assert p.recommended_interval_h is None
    mttf = 24 / (1024 / 8 * 12e-3)
    text = _status(p)
    assert f"caps it at {mttf / (mttf + 30):.3f}" in text
    assert "shorten the restart" not in text


def test_peer_checkpoints_do_not_apply_to_one_replica():
    """The copies live on other replicas' nodes: a one-node job has none (was given an ETTR)."""
    c = compare_strategies(8, 0.5, 1.0, 0.5, queue_h=1.0)
    r = c.row("peer_checkpoint")
    assert r["ettr"] is None
    assert "does not apply" in r["assumes"]
    assert any("no peer" in n for n in c.notes)
