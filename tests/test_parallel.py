"""Scale-out: the executor on serial / processes / Dask, sweeps (identical across backends,
retries, resume), and partitioned ingestion equal to serial ingestion."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from reliability import Dataset
from reliability.cli import main
from reliability.errors import IngestError
from reliability.parallel import Executor
from reliability.sweep import MODELS, load_sweep, register_model, run_sweep

SWEEP = """
[sweep]
name = "t"
model = "{model}"
seeds = {seeds}
seeds_per_task = {per}
[grid]
{grid}
[fixed]
{fixed}
"""


def _spec(tmp: Path, model="ettr-monte-carlo", seeds=6, per=2, grid="ckpt_interval_h = [0.25, 1.0]",
          fixed="n_gpus = 16384\nrate_per_node_day = 0.0065\nrestart_h = 0.0833\njob_h = 100\nn_runs = 200") -> Path:  # fmt: skip
    p = tmp / "sweep.toml"
    p.write_text(
        SWEEP.format(model=model, seeds=seeds, per=per, grid=grid, fixed=fixed), encoding="utf-8"
    )
    return p


@pytest.mark.slow  # 44 s
def test_same_results_on_every_backend(tmp_path):
    spec = _spec(tmp_path)
    runs = {
        be: run_sweep(spec, backend=be, workers=2, out=tmp_path / be)
        for be in ("serial", "processes", "dask")
    }
    base = runs["serial"].results
    assert base.height == 2 * 6 * 2  # cells x seeds x keys
    for be, r in runs.items():
        assert not r.failures, be
        assert r.results.equals(base), be
    # the Monte Carlo mean agrees with the exact form within its interval
    agg = runs["serial"].aggregates
    for cell in agg["cell"].unique().to_list():
        mc = agg.filter((pl.col("cell") == cell) & (pl.col("key") == "mc_mean_ettr")).row(
            0, named=True
        )
        exact = agg.filter((pl.col("cell") == cell) & (pl.col("key") == "renewal_ettr"))["mean"][0]
        assert mc["ci_low"] - 0.002 <= exact <= mc["ci_high"] + 0.002


def _failing(params, seed):
    """A sweep model that raises for ``fail_seeds`` (module level: workers import it)."""
    if seed in params.get("fail_seeds", []):
        raise RuntimeError(f"seed {seed} is configured to fail")
    return [{"key": "value", "value": float(seed)}]


@pytest.mark.parametrize(
    "backend", ["serial", pytest.param("processes", marks=pytest.mark.slow)]
)  # 25 s
def test_failing_task_is_retried_and_reported(tmp_path, backend, monkeypatch):
    monkeypatch.setattr("reliability.sweep.MODELS", dict(MODELS))  # registration undone after
    register_model("failing", _failing)
    spec = _spec(
        tmp_path, model="failing", seeds=5, per=1, grid="x = [1]", fixed="fail_seeds = [3]"
    )
    r = run_sweep(spec, backend=backend, workers=2, retries=2, out=tmp_path / "out")
    assert len(r.failures) == 1
    f = r.failures[0]
    assert "seeds 3-3" in f.name
    assert f.attempts == 3
    assert "seed 3 is configured to fail" in f.error
    assert sorted(r.results["seed"].to_list()) == [0, 1, 2, 4]  # the others are kept
    with pytest.raises(ValueError, match="already registered"):
        register_model("failing", lambda p, s: [])


def test_no_test_models_in_the_registry():
    assert set(MODELS) == {"pod-availability", "ettr-monte-carlo"}


def test_interrupted_sweep_resumes(tmp_path):
    spec = _spec(tmp_path)
    first = run_sweep(spec, backend="serial", out=tmp_path / "o")
    parts = sorted((tmp_path / "o" / "parts").glob("*.parquet"))
    assert len(parts) == 6
    for p in parts[:2]:  # as if the run had been killed before these two tasks
        p.unlink()
    again = run_sweep(spec, backend="serial", out=tmp_path / "o")
    assert again.tasks_run == 2
    assert again.tasks_skipped == 4
    assert again.results.equals(first.results)


def test_sweep_file_errors(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("[sweep]\nmodel = 'nope'\n", encoding="utf-8")
    with pytest.raises(Exception, match=r"\[sweep\].model: expected one of"):
        load_sweep(p)
    with pytest.raises(ValueError, match="backend must be one of"):
        Executor("threads")


def test_sweep_cli(tmp_path, capsys):
    spec = _spec(tmp_path, seeds=2, per=1)
    assert main(["sweep", str(spec), "--backend", "serial", "--out", str(tmp_path / "cli")]) == 0
    assert "mc_mean_ettr" in capsys.readouterr().out
    assert (tmp_path / "cli" / "aggregates.parquet").is_file()


@pytest.fixture(scope="module")
def sim_logs(tmp_path_factory):
    from dataclasses import replace

    from reliability.sim.config import load_preset
    from reliability.sim.run import simulate_cluster

    out = tmp_path_factory.mktemp("sim") / "raw"
    cfg = load_preset(
        Path(__file__).resolve().parents[1] / "pipelines" / "demo-cluster.toml"
    ).with_days(40)
    # partitioned ingestion needs many kernel logs (one per node that logged an Xid): the
    # calibrated demo puts 73% of its failures on three lemons (~6 nodes log an Xid in 40
    # days), so here the failures are spread over every node at 20 per 1000 node-days
    # (~200 failures, a third with an Xid: some 60 kernel logs)
    cfg = replace(cfg, failures=replace(cfg.failures, lemon_fraction=0.0, lemon_failure_share=None,
                                        rate_start_per_1000_node_days=20.0,
                                        rate_end_per_1000_node_days=20.0,
                                        rate_mean_per_1000_node_days=None))  # fmt: skip
    simulate_cluster(cfg, seed=5).write(out)
    kernel = sorted((out / "kernel").glob("*.log"))
    assert len(kernel) >= 20
    return out, kernel


def _sacct_files(out: Path) -> list[Path]:
    import json

    return [out / f for f in json.loads((out / "manifest.json").read_text())["ingest"]["slurm"]]


def _tables(ds: Dataset) -> dict[str, pl.DataFrame]:
    out = {}
    for t in ("jobs", "health_events", "node_states", "quarantine"):
        f = ds.table(t)
        out[t] = f.sort(f.columns[:6]) if f.height else f
    return out


@pytest.mark.slow  # 15 s with the sim_logs fixture
def test_partitioned_ingestion_equals_serial(tmp_path, sim_logs):
    out, kernel = sim_logs
    serial, parallel = Dataset(tmp_path / "serial"), Dataset(tmp_path / "parallel")
    serial.ingest("kernel", kernel, cluster="demo")
    sacct = _sacct_files(out)
    serial.ingest("slurm", sacct, tz="UTC")
    with Executor("processes", workers=2) as ex:
        outs = parallel.ingest("kernel", kernel, cluster="demo", executor=ex)
        parallel.ingest("slurm", sacct, tz="UTC", executor=ex)
        assert [o.path for o in outs] == [str(p) for p in kernel]  # input order kept
        again = parallel.ingest("kernel", kernel, cluster="demo", executor=ex)
    assert all(o.status == "unchanged" for o in again)  # re-ingesting is a no-op
    a, b = _tables(serial), _tables(parallel)
    for t in a:
        assert a[t].equals(b[t]), t
    # the simulator's sacct exports hold one record per line (no newline inside a field)
    lines = {p.name: sum(1 for ln in p.read_text().splitlines()[1:] if ln.strip()) for p in sacct}
    for i in parallel.inputs:
        if i["kind"] == "slurm":
            assert i["rows_read"] == lines[i["name"]]
    key = lambda d: sorted((i["sha256"], i["rows_read"], i["rows_kept"]) for i in d.inputs)  # noqa: E731
    assert key(serial) == key(parallel)


@pytest.mark.slow  # the sim_logs fixture: 10 s
def test_partitioned_ingestion_reports_a_bad_file_and_keeps_the_rest(tmp_path, sim_logs):
    out, _ = sim_logs
    sacct = _sacct_files(out)
    bad = tmp_path / "broken.psv"
    bad.write_text(
        "JobID|State\n1|COMPLETED\n", encoding="utf-8"
    )  # no Submit/Start/End: unreadable
    ds = Dataset(tmp_path / "ds")
    with Executor("serial", retries=0) as ex, pytest.raises(IngestError) as err:
        ds.ingest("slurm", [*sacct, bad], tz="UTC", executor=ex)
    assert "broken.psv" in str(err.value)
    assert "1 of" in str(err.value)
    # the good inputs are committed, the bad one is not
    names = {i["name"] for i in ds.inputs}
    assert names == {p.name for p in sacct}


@pytest.mark.slow  # 15 s
def test_report_includes_a_sweep_figure(tmp_path):
    from reliability.pipeline import run_pipeline

    spec = _spec(tmp_path, seeds=3, per=3)
    (tmp_path / "p.toml").write_text(
        '[pipeline]\nname = "s"\nout = "rep"\n[[inputs]]\nkind = "simulate-pod"\npreset = "tpuv4"\ndays = 30\n'
        '[analysis]\nrouting_shapes = ["4x4x4"]\n[report]\nformats = ["html"]\nsweeps = ["sweep.toml"]\n',
        encoding="utf-8",
    )
    first = run_pipeline(tmp_path / "p.toml")
    assert "No results yet" in first.files["html"].read_text()
    run_sweep(spec, backend="serial")
    second = run_pipeline(tmp_path / "p.toml")  # the sweep's results changed: the report reruns
    html = second.files["html"].read_text()
    assert 'id="fig-sweep_t"' in html
    assert (tmp_path / "rep" / "data" / "sweep_t.csv").is_file()
