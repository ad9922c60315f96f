"""Published fleets re-derived (reliability.fleets, reliability.models.published_fleets) and a
cluster set beside them (compare_fleets, `reliability compare`).

Independent checks: the published counts and exposures are quoted here from the papers (Llama 3
§3.3.4 and Table 5; ByteRobust's incident table as quoted), rates and shares are recomputed here
by hand, the intervals against Garwood's chi-square limits written in this file, their coverage
over many seeds of Poisson counts, and the CLI's rate against a plain count over node-days of
an export written here."""

from __future__ import annotations

import re

import numpy as np
import polars as pl
import pytest
from histories import job_histories
from scipy import stats

from reliability import references as ref
from reliability._result import frame_is_finite
from reliability.cli import main
from reliability.fleets import FLEETS, fleet
from reliability.models.failures import rate_interval
from reliability.models.fleets import (
    FleetComparison,
    PublishedFleets,
    compare_fleets,
    published_fleets,
)

#: Llama 3 405B (Dubey et al. 2024, §3.3.4 and Table 5): 419 unexpected interruptions in a
#: 54-day snapshot on 16,384 H100 = 2,048 servers of 8 GPUs
LLAMA3_K, LLAMA3_NODES, LLAMA3_DAYS = 419, 2048, 54


def garwood(k: int, exposure: float, alpha: float = 0.05) -> tuple[float, float]:
    """Exact Poisson limits for a rate, written from Garwood (1936) with scipy's chi2."""
    lo = stats.chi2.ppf(alpha / 2, 2 * k) / 2 if k > 0 else 0.0
    hi = stats.chi2.ppf(1 - alpha / 2, 2 * k + 2) / 2
    return lo / exposure, hi / exposure


@pytest.fixture(scope="module")
def pub() -> PublishedFleets:
    return published_fleets()


def test_llama3_rate_is_re_derived_with_an_interval_containing_it(pub):
    row = pub.row("llama3")
    expected = LLAMA3_K / (LLAMA3_NODES * LLAMA3_DAYS)  # 3.789e-3 per node-day
    assert row["failures"] == LLAMA3_K
    assert row["node_days"] == pytest.approx(LLAMA3_NODES * LLAMA3_DAYS, rel=1e-12)
    assert row["rate_per_node_day"] == pytest.approx(expected, rel=1e-12)
    assert round(1000 * row["rate_per_node_day"], 2) == 3.79
    assert row["ci_low"] < 3.79e-3 < row["ci_high"]
    # per GPU-day: the same count over 8 times the exposure
    assert row["rate_per_gpu_day"] == pytest.approx(expected / 8, rel=1e-12)
    assert "Dubey et al., 2024" in row["source"]
    assert "Table 5" in row["source"]


@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_intervals_are_garwoods(alpha):
    pub = published_fleets(alpha=alpha)
    lo, hi = garwood(LLAMA3_K, LLAMA3_NODES * LLAMA3_DAYS, alpha)
    row = pub.row("llama3")
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((lo, hi), rel=1e-9)
    # Delta H100 (Cui et al. SC'25, Table 1 as quoted): 24 errors, per-GPU MTBE 88,768 h
    d = pub.row("delta_h100")
    lo, hi = garwood(24, 24 * 88768 / 24.0, alpha)  # exposure in GPU-days
    assert (d["gpu_ci_low"], d["gpu_ci_high"]) == pytest.approx((lo, hi), rel=1e-9)
    assert d["rate_per_gpu_day"] / 24 == pytest.approx(1 / 88768, rel=1e-12)  # per GPU-hour
    # the hardware-only Llama 3 rate: the count of the rows counted as hardware, over the same
    h = row["hardware_failures"]
    lo, hi = garwood(h, LLAMA3_NODES * LLAMA3_DAYS, alpha)
    assert (row["hardware_ci_low"], row["hardware_ci_high"]) == pytest.approx((lo, hi), rel=1e-9)


@pytest.mark.parametrize("mean", [3.0, 30.0, 400.0])
def test_one_period_interval_covers_at_least_its_level(mean):
    """The estimator the published rows use (one count over one exposure) covers a known rate
    at least 95% of the time: exactly (the Poisson probability of every count whose interval
    covers it, summed here) and over 4 seeds x 5,000 simulated counts (within 3 standard
    errors of the exact coverage)."""
    exposure = 1000.0
    rate = mean / exposure
    ks = np.arange(0, int(mean + 12 * np.sqrt(mean) + 20))
    r = rate_interval(ks[:, None].astype(float), np.full((ks.size, 1), exposure))
    covers = (r["low"] <= rate) & (rate <= r["high"])
    exact = float(stats.poisson.pmf(ks, mean)[covers].sum())
    assert exact >= 0.95
    for seed in range(4):
        k = np.random.default_rng(seed).poisson(mean, 5000)
        got = covers[k].mean()
        assert abs(got - exact) <= 3 * np.sqrt(exact * (1 - exact) / 5000), (seed, got, exact)


def test_llama3_table_inconsistency_is_flagged(pub):
    flags = pub.row("llama3")["flags"]
    # Table 5 prints "Faulty GPU 148 30.1%", but 148 of 419 is 35.3%
    assert round(100 * 148 / 419, 1) == 35.3
    assert "Faulty GPU 148: printed 30.1% but 148/419 = 35.3%" in flags
    # the text's "GPU issues 58.7%": the GPU rows (148+72+19+17+6+6 = 268) are 64.0% of 419
    assert round(100 * (148 + 72 + 19 + 17 + 6 + 6) / 419, 1) == 64.0
    assert "58.7%" in flags
    assert "268/419 = 64.0%" in flags
    # the other rows' printed shares are right to the printed digit: only Faulty GPU is off
    shares = pub.shares.filter(pl.col("key") == "llama3")
    assert shares["count"].sum() == 419
    off = shares.filter(pl.col("off_pp").abs() > 0.5)
    assert off["label"].to_list() == ["Faulty GPU"]
    assert off["off_pp"][0] == pytest.approx(30.1 - 100 * 148 / 419)


def test_byterobust_parts_do_not_add_up_and_are_flagged(pub):
    parts = ref.BYTEROBUST_INCIDENT_PARTS.value
    assert sum(parts) == 38236 + 5948 + 9582 == 53766
    assert "53,766, not the printed 55,366" in pub.row("byterobust")["flags"]


def test_consistent_tables_are_not_flagged(pub):
    """FT-HSDP's 16 rows add up to its 678 and its shares are right to the printed digit;
    Delta, RSC and the shares-only rows print nothing to contradict."""
    fth = fleet("fthsdp")
    assert sum(c.count for c in fth.components) == 678 == ref.FTHSDP_INTERRUPTIONS.value
    for key in ("fthsdp", "delta_a100", "delta_h100", "rsc1", "rsc2", "acme", "philly"):
        assert pub.row(key)["flags"] == "", key
    # Delta's printed ratio (abstract: 3.2x) follows from its two MTBEs
    a100, h100 = ref.DELTA_MEMORY_MTBE.value
    assert round(a100 / h100, 1) == ref.DELTA_MTBE_RATIO.value


def test_every_fleet_row_has_a_source_and_what_it_counts(pub):
    assert pub.summary.height == len(FLEETS)
    for f, row in zip(FLEETS, pub.summary.iter_rows(named=True), strict=True):
        assert row["source"].startswith(f.paper.short), f.key
        assert f.paper.url.startswith("https://"), f.key
        for col in ("checked", "caveat", "failure_definition"):
            assert row[col], (f.key, col)
        assert row["basis"] in ("counts", "published rate", "MTBF only", "shares only"), f.key
        # a rate with an interval only where counts and exposure are published
        assert (row["ci_low"] is not None) <= (row["basis"] == "counts"), f.key
    # numbers only a summary gave say so
    assert "secondary" in pub.row("fthsdp")["checked"]
    assert "secondary" in ref.DELTA_MEMORY_ERRORS.note
    # every mapped component is one of the schema's
    from reliability.schema import COMPONENTS

    mapped = pub.shares.drop_nulls("component")["component"].unique().to_list()
    assert set(mapped) <= set(COMPONENTS)


def test_results_hold_no_nan_and_render(pub, tmp_path):
    rng = np.random.default_rng(3)
    jobs, end = job_histories(rng, days=60, rate_per_node_day=4e-3, slots=3, nodes_per_job=32)
    cmp_ = compare_fleets(jobs, observation_end=end)
    for res in (pub, cmp_):
        for name, frame in res.tables().items():
            assert frame_is_finite(frame), name
        text = str(res)
        assert not re.search(r"\b(nan|inf)\b", text, re.IGNORECASE)
        assert "<table" in res._repr_html_()
        res.to_disk(tmp_path / type(res).__name__)
        back = type(res).from_disk(tmp_path / type(res).__name__)
        assert back.summary.equals(res.summary)


def test_compare_sets_a_known_rate_beside_the_fleets():
    """Jobs of 32 nodes failing at a known 4e-3 per node-day: the user's row is the fit's r_f,
    each fleet's verdict follows the intervals, and the MTTF projections are 24 g / (N r)."""
    rng = np.random.default_rng(11)
    jobs, end = job_histories(rng, days=140, rate_per_node_day=4e-3, slots=4, nodes_per_job=32)
    c = compare_fleets(jobs, observation_end=end)
    assert isinstance(c, FleetComparison)
    yours = c.summary.row(0, named=True)
    k = int(jobs.filter(pl.col("failure_domain") == "hardware").height)
    assert yours["failures"] == k
    assert yours["rate_per_node_day"] == pytest.approx(k / yours["node_days"], rel=1e-12)
    assert yours["ci_low"] < yours["rate_per_node_day"] < yours["ci_high"]
    llama = c.summary.filter(pl.col("fleet") == "Llama 3 405B pre-training").row(0, named=True)
    lo, hi = garwood(LLAMA3_K, LLAMA3_NODES * LLAMA3_DAYS)
    overlap = not (yours["ci_low"] > hi or yours["ci_high"] < lo)
    assert (llama["versus_yours"] == "intervals overlap") == overlap
    rsc1 = c.summary.filter(pl.col("fleet").str.starts_with("RSC-1")).row(0, named=True)
    assert rsc1["ci_low"] is None
    assert "printed rate" in rsc1["versus_yours"]
    # every fleet is listed, also those without a rate
    for f in FLEETS:
        assert c.summary["fleet"].str.starts_with(f.name).any(), f.key
    # MTTF of the largest job (256 GPUs) at Llama 3's rate: 24 h / (32 nodes x 419/110,592)
    n = 32 * 8
    assert c.largest_gpus == n
    m = c.mttf.filter(pl.col("fleet") == "Llama 3 405B pre-training").row(0, named=True)
    assert m["mttf_h"] == pytest.approx(24 / (n / 8 * LLAMA3_K / (LLAMA3_NODES * 54)), rel=1e-9)
    assert m["mttf_h_low"] == pytest.approx(24 / (n / 8 * hi), rel=1e-9)
    # Delta H100: 4 GPUs per node, per-GPU MTBE 88,768 h: a 256-GPU job sees one every 88,768/256 h
    d = c.mttf.filter(pl.col("fleet").str.starts_with("NCSA Delta H100")).row(0, named=True)
    assert d["mttf_h"] == pytest.approx(88768 / n, rel=1e-9)


def test_compare_components_beside_llama3_and_fthsdp():
    rng = np.random.default_rng(5)
    jobs, end = job_histories(rng, days=90, rate_per_node_day=5e-3, slots=3, nodes_per_job=32)
    hw = jobs["failure_domain"] == "hardware"
    n_hw = int(hw.sum())
    assert n_hw >= 6
    causes = ["gpu", "gpu_memory", "ib_link"]
    jobs = jobs.with_columns(
        failure_cause=pl.when(hw)
        .then(pl.Series([causes[i % 3] for i in range(jobs.height)]))
        .otherwise(None)
    )
    c = compare_fleets(jobs, observation_end=end)
    comp = {r["component"]: r for r in c.components.iter_rows(named=True)}
    mine = jobs.filter(hw & (pl.col("end_time").is_not_null()))["failure_cause"].value_counts()
    for cause, count in mine.iter_rows():
        assert comp[cause]["yours"] == count
        assert comp[cause]["your_share"] == pytest.approx(count / n_hw)
    # Llama 3, Table 5: GPU = Faulty GPU 148 + GPU System Processor 17 + Thermal 6 = 171 of the
    # 350 rows in the hardware domains (419 - software bug 54 - NCCL timeouts 7 - SDC 6 -
    # dependency 2)
    assert comp["gpu"]["llama3"] == 171
    assert comp["gpu"]["llama3_share"] == pytest.approx(171 / 350)
    # FT-HSDP: HBM3 155 + SRAM 8 of 678 - 61 - 48 - 39 - 37 - 7 - 2 = 484 hardware rows
    assert comp["gpu_memory"]["fthsdp"] == 163
    assert comp["gpu_memory"]["fthsdp_share"] == pytest.approx(163 / 484)
    # what does not map is named, with why
    left = c.unmapped.filter(pl.col("fleet") == "Llama 3 405B pre-training")
    assert set(left["label"]) == {"Software Bug", "NCCL Watchdog Timeouts",
                                  "Silent Data Corruption", "Dependency"}  # fmt: skip
    assert left["why"].str.len_chars().min() > 10


def _sacct(path) -> None:
    head = "JobID|JobName|User|State|ExitCode|Submit|Start|End|NNodes|AllocTRES|NodeList|Cluster"
    rows = [
        "1|a|u|NODE_FAIL|0:0|2025-01-03T00:00:00|2025-01-03T00:00:00|2025-01-03T06:00:00|8|gres/gpu=64,node=8|n[01-08]|c",
        "2|a|u|NODE_FAIL|0:0|2025-01-04T00:00:00|2025-01-04T00:00:00|2025-01-04T09:00:00|8|gres/gpu=64,node=8|n[01-08]|c",
        "3|b|u|NODE_FAIL|0:0|2025-01-05T00:00:00|2025-01-05T00:00:00|2025-01-05T12:00:00|16|gres/gpu=128,node=16|n[01-16]|c",
        "4|a|u|COMPLETED|0:0|2025-01-06T00:00:00|2025-01-06T00:00:00|2025-01-08T00:00:00|8|gres/gpu=64,node=8|n[01-08]|c",
        "5|s|u|COMPLETED|0:0|2025-01-06T00:00:00|2025-01-06T00:00:00|2025-01-06T01:00:00|1|gres/gpu=8,node=1|n01|c",
    ]  # fmt: skip
    path.write_text("\n".join([head, *rows]) + "\n", encoding="utf-8")


def test_cli_compare_prints_your_row_and_refuses_without_exposure(tmp_path, capsys):
    _sacct(tmp_path / "s.psv")
    ds = tmp_path / "ds"
    assert main(["ingest", "slurm", str(tmp_path / "s.psv"), "--into", str(ds), "--tz", "UTC"]) == 0
    capsys.readouterr()
    assert main(["compare", str(ds), "--min-gpus", "64"]) == 0
    out = capsys.readouterr().out
    # 3 NODE_FAIL attempts of 64+ GPUs over 8x6 h + 8x9 h + 16x12 h + 8x48 h of node time
    node_days = (8 * 6 + 8 * 9 + 16 * 12 + 8 * 48) / 24
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("yours"))
    rate, lo, hi = (
        float(x) for x in re.search(r"yours\s+([\d.]+) \(([\d.]+)-([\d.]+)\)", line).groups()
    )
    assert rate == pytest.approx(1000 * 3 / node_days, rel=1e-3)
    plo, phi = garwood(3, node_days)  # too few weeks for the robust interval: exact Poisson
    assert (lo, hi) == pytest.approx((1000 * plo, 1000 * phi), rel=1e-3)
    assert "Llama 3 405B pre-training" in out
    assert "does not add up" in out
    assert "MTTF at 128 GPUs" in out
    # no job of 1,000+ GPUs: nothing to compare, said in the CLI's terms
    assert main(["compare", str(ds), "--min-gpus", "1000"]) == 2
    err = capsys.readouterr().err
    assert "no exposure from jobs of >= 1,000 GPUs (largest job: 128 GPUs)" in err
    assert "--min-gpus 128" in err
    assert main(["compare", str(tmp_path / "nope")]) == 2
    assert "no such Dataset folder" in capsys.readouterr().err
    assert main(["compare", str(ds), "--gpus-per-node", "0"]) == 2
    assert "--gpus-per-node: expected an integer >= 1, got 0" in capsys.readouterr().err


def test_unknown_fleet_key_names_the_known_ones(pub):
    with pytest.raises(KeyError, match="llama3"):
        fleet("nope")
    with pytest.raises(KeyError, match="llama3"):
        pub.row("nope")
    with pytest.raises(ValueError, match="alpha"):
        published_fleets(alpha=1.5)


def test_compare_without_failures_gives_your_upper_bound():
    """No hardware failure: your r_f is not estimable; the upper bound is Garwood's for 0
    failures (-ln(0.025) / node-days) and each fleet is placed against it."""
    rng = np.random.default_rng(2)
    jobs, end = job_histories(rng, days=20, rate_per_node_day=1e-9, slots=2, nodes_per_job=32)
    c = compare_fleets(jobs, observation_end=end)
    yours = c.summary.row(0, named=True)
    assert yours["failures"] == 0
    assert yours["rate_per_node_day"] is None
    assert yours["ci_high"] == pytest.approx(garwood(0, yours["node_days"])[1], rel=1e-9)
    assert yours["ci_high"] == pytest.approx(-np.log(0.025) / yours["node_days"], rel=1e-9)
    for r in c.summary.iter_rows(named=True):
        if r["fleet"] != "yours" and r["rate_per_node_day"] is not None:
            low = r["ci_low"] if r["ci_low"] is not None else r["rate_per_node_day"]
            side = "above" if low > yours["ci_high"] else "within"
            assert r["versus_yours"].startswith(side), r["fleet"]
    assert "upper bound" in str(c)


def test_a_job_smaller_than_a_node_is_projected_on_one_node_everywhere():
    """A 2-GPU job fails when its node fails: your row and each fleet's use one whole node
    (Llama 3: 24 h / (1 node x 419/110,592), not half a node), as 1/(N r_f) does."""
    rng = np.random.default_rng(5)
    jobs, end = job_histories(rng, days=60, rate_per_node_day=0.02, slots=6, nodes_per_job=1)
    jobs = jobs.with_columns(n_accelerators=pl.lit(2, jobs.schema["n_accelerators"]))
    c = compare_fleets(jobs, min_gpus=1, observation_end=end)
    assert c.largest_gpus == 2
    m = c.mttf.filter(pl.col("fleet") == "Llama 3 405B pre-training").row(0, named=True)
    assert m["mttf_h"] == pytest.approx(24 / (LLAMA3_K / (LLAMA3_NODES * LLAMA3_DAYS)), rel=1e-9)
    # Delta H100 nodes hold 4 GPUs: a 2-GPU job sees the node's 4 GPUs' errors
    d = c.mttf.filter(pl.col("fleet").str.starts_with("NCSA Delta H100")).row(0, named=True)
    assert d["mttf_h"] == pytest.approx(88768 / 4, rel=1e-9)
