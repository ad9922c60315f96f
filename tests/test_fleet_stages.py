"""A fleet's stages after attribution from its attributed parts (reliability.analyses.fleet)
against the serial calls on the whole Dataset: run ETTR and lemon features one cluster per
task, node health on the streaming engine over the parts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest
from generators import generate_b
from polars.testing import assert_frame_equal

from reliability import Dataset
from reliability.analyses import (
    ettr_by_cluster,
    features_by_cluster,
    write_attributed_by_cluster,
)
from reliability.attribution import attribute_failures
from reliability.models.nodes import node_features, node_health
from reliability.models.recovery import job_run_ettr
from reliability.parallel import Executor

#: float aggregates over the parts may add in another order than over the whole frame
_SUM_RTOL = 1e-12


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """Three clusters of generator B that start on different days (so the fleet's first day,
    not a cluster's own, anchors the feature windows), attributed part by part."""
    root = tmp_path_factory.mktemp("fleet")
    ds = Dataset(root / "ds")
    t0 = datetime(2025, 3, 3, tzinfo=UTC)
    for i, (name, nodes, late_h) in enumerate(
        [("tern", 40, 0), ("gull", 32, 61), ("skua", 24, 133)]
    ):
        h = generate_b(
            root / name,
            seed=21 + i,
            n_nodes=nodes,
            days=22 - late_h / 24,
            cluster=name,
            start=t0 + timedelta(hours=late_h),
        )
        h.ingest(ds)
    with Executor("serial") as ex:
        write_attributed_by_cluster(ds, ex, root / "attributed")
    return ds, root / "attributed"


def test_fleet_fixture_spans_clusters_of_different_starts(fleet):
    ds, _ = fleet
    firsts = (
        ds.scan("jobs")
        .group_by("cluster")
        .agg(pl.col("start_time").min())
        .collect()
        .get_column("start_time")
    )
    assert firsts.n_unique() == 3  # (else the fleet-wide window start is not exercised)


@pytest.mark.parametrize("run_key", [None, ["cluster", "user", "name"]])
def test_ettr_by_cluster_equals_the_serial_run(fleet, tmp_path, run_key):
    ds, parts = fleet
    serial = job_run_ettr(ds, run_key=run_key, ckpt_min_gpus=8)
    assert serial.runs.get_column("cluster").n_unique() == 3
    assert serial.runs.get_column("hw_interruptions").sum() > 0
    with Executor("dask", workers=2, processes=False, retries=0) as ex:
        got = ettr_by_cluster(ds, ex, parts, tmp_path / "runs", run_key=run_key, ckpt_min_gpus=8)
    assert isinstance(got.runs, pl.LazyFrame)
    assert_frame_equal(got.runs.collect(), serial.runs)  # row for row, in key order
    assert got.notes == serial.notes
    assert got.notes
    assert got.observation_end == serial.observation_end
    assert got.sample_sizes == serial.sample_sizes
    for name in ("summary", "by_size", "by_priority"):
        assert_frame_equal(getattr(got, name), getattr(serial, name), rel_tol=_SUM_RTOL, abs_tol=0)
    assert str(got) == str(serial)


def test_ettr_by_cluster_takes_the_fleet_observation_end(fleet, tmp_path):
    """An end before the last cluster's data: the censoring is the serial call's."""
    ds, parts = fleet
    end = datetime(2025, 3, 20, 6, tzinfo=UTC)
    serial = job_run_ettr(ds, observation_end=end)
    with Executor("serial") as ex:
        got = ettr_by_cluster(ds, ex, parts, tmp_path / "runs", observation_end=end)
    assert serial.runs.get_column("open").sum() > 0
    assert_frame_equal(got.runs.collect(), serial.runs)
    assert got.notes == serial.notes


def test_features_by_cluster_equal_the_serial_run(fleet, tmp_path):
    ds, parts = fleet
    serial = node_features(ds, 14, 7)
    assert serial.get_column("cluster").n_unique() == 3
    with Executor("dask", workers=2, processes=False, retries=0) as ex:
        got = features_by_cluster(ds, ex, parts, tmp_path / "features", 14, 7)
    assert_frame_equal(got.collect(), serial)
    # a rerun writes the same parts over the old ones
    with Executor("serial") as ex:
        again = features_by_cluster(ds, ex, parts, tmp_path / "features", 14, 7)
    assert_frame_equal(again.collect(), serial)
    assert len(list((tmp_path / "features").glob("features-*.parquet"))) == 3


def test_node_health_on_the_parts_equals_the_frame(fleet):
    ds, parts = fleet
    frame = attribute_failures(ds)
    scan = pl.scan_parquet(sorted(parts.glob("attributed-*.parquet")))
    eager = node_health(ds, attributed=frame, jobs=frame)
    lazy = node_health(ds, attributed=scan, jobs=scan)
    assert eager.offenders.height
    assert eager.open_now.height
    for name in ("intervals", "by_node", "open_now", "offenders", "fleet", "by_period"):
        assert_frame_equal(getattr(lazy, name), getattr(eager, name))
    assert (lazy.start, lazy.end, lazy.n_nodes, lazy.notes) == (
        eager.start,
        eager.end,
        eager.n_nodes,
        eager.notes,
    )


def test_parts_of_another_dataset_are_refused(fleet, tmp_path):
    ds, parts = fleet
    other = Dataset(tmp_path / "other")
    generate_b(tmp_path / "raw", seed=3, n_nodes=8, days=3, cluster="tern").ingest(other)
    with Executor("serial") as ex:
        with pytest.raises(ValueError, match="another Dataset"):
            ettr_by_cluster(other, ex, parts, tmp_path / "runs")
        with pytest.raises(ValueError, match=r"attributed\.json is missing"):
            features_by_cluster(ds, ex, tmp_path / "nothing", tmp_path / "f", 14, 7)
        # a key led by another column would put the runs out of the serial order
        with pytest.raises(ValueError, match="must start with 'cluster'"):
            ettr_by_cluster(ds, ex, parts, tmp_path / "runs", run_key=["user", "cluster"])


def test_a_part_swapped_for_another_clusters_is_refused(fleet, tmp_path):
    """A part holding another cluster's rows (copied over by hand) is refused before any task
    runs (its size and time are not the written part's), and a task refuses to read a part
    as a cluster it does not hold, not read as the wrong cluster."""
    import shutil

    from reliability.analyses.fleet import _part

    ds, parts = fleet
    copy = tmp_path / "attributed"
    shutil.copytree(parts, copy)
    shutil.copyfile(copy / "attributed-00000.parquet", copy / "attributed-00001.parquet")
    with Executor("serial", retries=0) as ex, pytest.raises(ValueError, match="00001"):
        ettr_by_cluster(ds, ex, copy, tmp_path / "runs")
    with pytest.raises(ValueError, match=r"holds cluster\(s\) \['gull'\], not 'skua'"):
        _part(str(parts / "attributed-00000.parquet"), "skua")


def test_run_fleet_report_equals_the_serial_analyses(fleet, tmp_path):
    """The fleet run's numbers are the serial calls' on the whole Dataset; its per-cluster
    table is counted here from the Dataset independently; the report is written."""
    from reliability.models.failures import failure_rate_series, fit_mttf
    from reliability.pipeline.analysis import AnalysisConfig
    from reliability.pipeline.fleet import run_fleet

    ds, _ = fleet
    a = AnalysisConfig(min_gpus=8)
    with Executor("dask", workers=2, processes=False, retries=0) as ex:
        run = run_fleet(ds, tmp_path / "out", executor=ex, analysis=a, formats=("html",))
    frame = attribute_failures(ds)
    end = ds.observation_end
    gpn = int(
        frame.filter(pl.col("start_time").is_not_null())
        .select((pl.col("n_accelerators") / pl.col("n_nodes")).ceil().max())
        .item()
    )
    m = fit_mttf(frame, min_gpus=8, gpus_per_node=gpn, observation_end=end)
    assert_frame_equal(run.mttf.summary, m.summary)
    assert_frame_equal(run.mttf.by_size, m.by_size)
    r = failure_rate_series(frame, min_gpus=8, observation_end=end)
    assert_frame_equal(run.rates.series, r.series)
    e = job_run_ettr(frame, observation_end=end)
    assert_frame_equal(run.ettr.runs.collect(), e.runs)
    h = node_health(ds, attributed=frame, jobs=frame)
    assert_frame_equal(run.node_health.by_node, h.by_node)
    # the history (22 days) is shorter than the features' window ([analysis] default 56
    # days): said, in the pipeline's key, not faked
    assert run.features is None
    assert any("less than one 56-day window" in n for n in run.notes)
    assert "[analysis].lemon_window_days sets the window" in str(run)
    want = (
        frame.group_by("cluster")
        .agg(
            attempts=pl.len(),
            hardware_failures=pl.col("failure_domain").is_in(["hardware", "infrastructure"]).sum(),
            nodes=pl.col("nodes").explode().n_unique(),
        )
        .sort("cluster")
    )
    got = run.by_cluster.select(want.columns)
    assert_frame_equal(got, want, check_dtypes=False)
    html = (tmp_path / "out" / "report.html").read_text()
    for title in ("Clusters of the fleet", "MTTF vs job size", "ETTR of job runs", "Node health"):
        assert title in html
    assert "skua" in (tmp_path / "out" / "data" / "fleet_by_cluster.csv").read_text()


def test_fleet_cli_refuses_workers_without_a_local_scheduler(fleet, tmp_path, capsys):
    from reliability.cli import main

    ds, _ = fleet
    code = main(["fleet", str(ds.path), "--out", str(tmp_path / "o"), "--workers", "2"])
    assert code != 0
    assert "--workers: only with --scheduler local" in capsys.readouterr().err


def test_parts_are_refused_once_an_input_is_added(fleet, tmp_path):
    """A copy of the Dataset (same parts, another folder) reads the parts; once an input is
    added to it, the parts are of the Dataset as it was and are refused."""
    import shutil

    ds, parts = fleet
    shutil.copytree(ds.path, tmp_path / "copy")
    copy = Dataset(tmp_path / "copy")
    with Executor("serial") as ex:
        got = ettr_by_cluster(copy, ex, parts, tmp_path / "runs")
        assert_frame_equal(got.runs.collect(), job_run_ettr(ds).runs)
        generate_b(tmp_path / "raw", seed=9, n_nodes=8, days=3, cluster="wren").ingest(copy)
        with pytest.raises(ValueError, match="before an input was added"):
            ettr_by_cluster(copy, ex, parts, tmp_path / "runs")


def test_parts_of_a_rerun_that_failed_or_changed_by_hand_are_refused(fleet, tmp_path, monkeypatch):
    """A rerun that stops half-way (one cluster's task fails) leaves parts of two runs: they
    are refused, not read as one attribution; so is a part rewritten after it was written."""
    import shutil

    import reliability.analyses.distributed as dist
    from reliability.errors import TaskError

    ds, parts = fleet
    copy = tmp_path / "attributed"
    shutil.copytree(parts, copy)
    real = dist._attribute_cluster

    def fails_on_skua(path, cluster, *rest):
        if cluster == "skua":
            raise OSError("disk full")
        return real(path, cluster, *rest)

    monkeypatch.setattr(dist, "_attribute_cluster", fails_on_skua)
    with Executor("serial", retries=0) as ex:
        with pytest.raises(TaskError, match="attribution of cluster 'skua'"):
            write_attributed_by_cluster(ds, ex, copy, before_min=600, after_min=600)
        with pytest.raises(ValueError, match=r"attributed\.json is missing"):
            ettr_by_cluster(ds, ex, copy, tmp_path / "runs")
    monkeypatch.setattr(dist, "_attribute_cluster", real)
    shutil.rmtree(copy)
    shutil.copytree(parts, copy)
    # (an attributed part of the same cluster, written again: another size or time)
    pl.read_parquet(copy / "attributed-00002.parquet").head(10).write_parquet(
        copy / "attributed-00002.parquet"
    )
    with Executor("serial") as ex, pytest.raises(ValueError, match="changed since"):
        features_by_cluster(ds, ex, copy, tmp_path / "f", 14, 7)


def test_features_of_a_cluster_that_starts_after_the_end(fleet, tmp_path):
    """An observation end before the last cluster's first attempt: its nodes' events and
    states still make their rows, as in the serial call (its task does not refuse)."""
    ds, parts = fleet
    end = datetime(2025, 3, 8, 6, tzinfo=UTC)
    late = ds.scan("jobs").filter(pl.col("cluster") == "skua").select(pl.col("start_time").min())
    assert late.collect().item() > end  # (skua's first attempt starts after the end)
    serial = node_features(ds, 1, 1, observation_end=end)
    with Executor("serial") as ex:
        got = features_by_cluster(ds, ex, parts, tmp_path / "f", 1, 1, observation_end=end)
    assert_frame_equal(got.collect(), serial)


def test_options_key_names_options_by_their_values():
    """Equal values give equal keys (a tuple is its list; a ReasonRules' source, which it does
    not compare on, does not count); another value, another key; a value that cannot be
    compared gives no key at all."""
    from reliability.analyses.distributed import options_key
    from reliability.reasons import ReasonRules

    base = {"before_min": 10.0, "requeue_exit_codes": (75,), "reasons": ReasonRules()}
    same = {"reasons": ReasonRules(source="elsewhere"), "requeue_exit_codes": [75]}
    assert options_key(base) == options_key({**same, "before_min": 10.0})
    assert options_key(base) != options_key({**base, "before_min": 20.0})
    other = ReasonRules().extended(fault=[r"\bfrobnicated\b"])
    assert options_key(base) != options_key({**base, "reasons": other})
    assert options_key(base) != options_key({**base, "reasons": None})
    assert options_key({"x": object()}) is None


def test_reused_parts_are_those_of_the_same_dataset_options_and_version(
    fleet, tmp_path, monkeypatch
):
    """With ``reuse``, parts written for the same Dataset, options and package version are
    read without attributing again (and equal attribute_failures on the whole Dataset);
    other options, another version or a part touched since make it attribute again."""
    import reliability.analyses.distributed as dist
    from reliability.analyses import reusable_parts
    from reliability.analyses.distributed import reuse_refusal
    from reliability.errors import TaskError

    ds, _ = fleet
    folder = tmp_path / "attributed"
    assert not reusable_parts(ds, folder)  # (no parts yet)
    with Executor("serial") as ex:
        write_attributed_by_cluster(ds, ex, folder, before_min=15.0)
        assert reusable_parts(ds, folder, before_min=15.0)
        assert "other options" in reuse_refusal(ds, folder)  # (another before_min)
        stamps = {p.name: p.stat().st_mtime_ns for p in folder.glob("attributed-*.parquet")}

        def no_attribution(*args, **kwargs):
            raise AssertionError("attributed again")

        with monkeypatch.context() as m:
            m.setattr(dist, "_attribute_cluster", no_attribution)
            kept = write_attributed_by_cluster(ds, ex, folder, reuse=True, before_min=15.0)
        assert_frame_equal(kept.collect(), attribute_failures(ds, before_min=15.0))
        assert stamps == {p.name: p.stat().st_mtime_ns for p in folder.glob("attributed-*.parquet")}
        # another build of the package wrote them (here: on another polars): not kept
        with monkeypatch.context() as m:
            m.setattr(dist.pl, "__version__", "0.0.0-other")
            assert "another build" in reuse_refusal(ds, folder, before_min=15.0)
        # other options attribute again; a rerun that fails half-way withdraws the parts
        with monkeypatch.context() as m:
            m.setattr(dist, "_attribute_cluster", no_attribution)
            with pytest.raises(TaskError, match="attributed again"):
                write_attributed_by_cluster(ds, ex, folder, reuse=True, before_min=20.0)
        assert "holds no finished run's" in reuse_refusal(ds, folder, before_min=15.0)
        again = write_attributed_by_cluster(ds, ex, folder, reuse=True, before_min=15.0)
        assert_frame_equal(again.collect(), attribute_failures(ds, before_min=15.0))
        assert reusable_parts(ds, folder, before_min=15.0)
        # a part touched since: not kept
        part = sorted(folder.glob("attributed-*.parquet"))[1]
        part.write_bytes(part.read_bytes())
        assert "changed since they were written" in reuse_refusal(ds, folder, before_min=15.0)


def test_run_fleet_keeps_the_last_runs_attribution_only_when_asked(fleet, tmp_path):
    """reuse_attribution: the first run attributes (nothing to keep, and says so), the second
    keeps its parts and gives the same numbers; without it the parts are written again."""
    from reliability.pipeline.analysis import AnalysisConfig
    from reliability.pipeline.fleet import run_fleet

    ds, _ = fleet
    a = AnalysisConfig(min_gpus=8)
    lines: list[list[str]] = [[], [], []]
    runs = []
    for i, reuse in enumerate([True, True, False]):
        runs.append(
            run_fleet(
                ds,
                tmp_path / "out",
                analysis=a,
                report=False,
                reuse_attribution=reuse,
                progress=lines[i].append,
            )
        )
        if i == 0:
            parts = sorted((tmp_path / "out" / "parts" / "attributed").glob("*.parquet"))
            stamps = [p.stat().st_mtime_ns for p in parts]
        if i == 1:
            after_second = [p.stat().st_mtime_ns for p in parts]
    assert any("not kept" in line and "holds no finished run's" in line for line in lines[0])
    assert any("parts of the last run kept" in line for line in lines[1])
    assert not any("kept" in line for line in lines[2])
    assert after_second == stamps  # (the second run read them)
    assert [p.stat().st_mtime_ns for p in parts] != stamps  # (the third run wrote them again)
    for run in runs[1:]:
        assert_frame_equal(run.mttf.summary, runs[0].mttf.summary)
        assert_frame_equal(run.ettr.runs.collect(), runs[0].ettr.runs.collect())


def test_reused_parts_of_one_export_keep_its_row_order(tmp_path, monkeypatch):
    """A Dataset whose jobs are one export (the parts carry its row numbers) and a Dataset
    with no attempts: the kept parts read back as attribute_failures gives them, in order."""
    import reliability.analyses.distributed as dist
    from reliability.analyses.distributed import attributed_scan

    ds = Dataset(tmp_path / "ds")
    generate_b(tmp_path / "raw", seed=5, n_nodes=12, days=4, cluster="wren").ingest(ds)
    assert sum("jobs" in (i.get("parts") or {}) for i in ds.inputs) == 1
    empty = Dataset(tmp_path / "empty")

    def no_attribution(*args, **kwargs):
        raise AssertionError("attributed again")

    with Executor("serial") as ex:
        for d, folder in ((ds, tmp_path / "one"), (empty, tmp_path / "none")):
            write_attributed_by_cluster(d, ex, folder)
            with monkeypatch.context() as m:
                m.setattr(dist, "_attribute_cluster", no_attribution)
                m.setattr(dist, "attribute_failures", no_attribution)
                kept = write_attributed_by_cluster(d, ex, folder, reuse=True)
            assert_frame_equal(kept.collect(), attribute_failures(d))
            assert_frame_equal(attributed_scan(d, folder).collect(), attribute_failures(d))
