"""Attribution on real Slurm 22.05 output: run 1 of ../shared/data/slurm-real-run1.

Each test names the job id and the scenario it was submitted for; the ids are checked against
the run's own manifest.tsv (what the workload script recorded as it submitted each job), and
the RequeueExit codes are read from the slurm.conf the run used, so nothing here is copied
from the package's output.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from reliability import Dataset, attribute_failures


@pytest.fixture(scope="module")
def run1_dir(shared: Path) -> Path:
    return shared / "slurm-real-run1"


@pytest.fixture(scope="module")
def scenarios(run1_dir: Path) -> dict[str, str]:
    """job id -> scenario, from manifest.tsv (later lines win: a few ids were reused)."""
    out = {}
    for line in (run1_dir / "manifest.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        job, _, scenario, _ = line.split("\t")
        out[job] = scenario
    return out


@pytest.fixture(scope="module")
def requeue_codes(run1_dir: Path) -> list[int]:
    """RequeueExit and RequeueExitHold of the slurm.conf the run used."""
    conf = (run1_dir / "config_as_run" / "slurm.conf").read_text(encoding="utf-8")
    codes = []
    for key in ("RequeueExit", "RequeueExitHold"):
        m = re.search(rf"^{key}=([\d,]+)\s*$", conf, flags=re.MULTILINE)
        codes += [int(c) for c in m.group(1).split(",")]
    return codes


@pytest.fixture(scope="module")
def dataset(run1_dir: Path, tmp_path_factory) -> Dataset:
    ds = Dataset(tmp_path_factory.mktemp("run1") / "ds")
    final = run1_dir / "final_snapshot"
    ds.ingest("slurm", [final / "sacct_broad_duplicates.psv"], tz="UTC")
    ds.ingest("events", [final / "sacctmgr_event.psv"], tz="UTC")
    return ds


@pytest.fixture(scope="module")
def attributed(dataset: Dataset, requeue_codes: list[int]) -> pl.DataFrame:
    return attribute_failures(dataset, requeue_exit_codes=requeue_codes)


def _attempts(frame: pl.DataFrame, job: str) -> list[dict]:
    return (
        frame.filter(pl.col("job_id") == job)
        .sort("attempt")
        .select("attempt", "state", "failure_domain", "failure_cause", "culprit_node")
        .to_dicts()
    )


def _first(frame: pl.DataFrame, job: str) -> tuple:
    a = _attempts(frame, job)[0]
    return a["state"], a["failure_domain"], a["culprit_node"]


def test_config_and_manifest(requeue_codes, scenarios):
    assert requeue_codes == [99, 100]
    assert scenarios["16"] == "scontrol_requeue"
    assert scenarios["120"] == "resize_shrink"  # run 2's README calls it 123
    assert scenarios["121"] == "prolog_fail"  # run 2's README calls it 124


def test_job16_scontrol_requeue_is_admin(attributed, scenarios):
    assert scenarios["16"] == "scontrol_requeue"
    assert _first(attributed, "16") == ("REQUEUED", "admin", None)


def test_job17_scontrol_requeuehold_is_admin(attributed, scenarios):
    assert scenarios["17"] == "scontrol_requeuehold"
    assert _first(attributed, "17") == ("REQUEUED", "admin", None)


def test_job42_requeue_exit_99_is_user(attributed, scenarios):
    assert scenarios["42"] == "requeue_exit99"
    assert _first(attributed, "42") == ("REQUEUED", "user", None)


def test_job43_requeue_exit_hold_100_is_user(attributed, scenarios):
    assert scenarios["43"] == "special_exit100_released"
    assert _first(attributed, "43") == ("REQUEUED", "user", None)


def test_job44_requeue_exit_hold_100_left_held_is_user(attributed, scenarios):
    assert scenarios["44"] == "special_exit100_left"
    assert _first(attributed, "44") == ("REQUEUED", "user", None)


def test_exit_code_requeues_without_the_codes_are_admin_not_unknown(dataset):
    """Without RequeueExit codes (Slurm's default) 42-44 are still never 'unknown' with a
    culprit: node07's FAIL 27 s after they ended is not theirs."""
    plain = attribute_failures(dataset)
    for job in ("42", "43", "44"):
        assert _first(plain, job) == ("REQUEUED", "admin", None), job


def test_job120_resize_segment_is_not_a_failure(attributed, scenarios):
    assert scenarios["120"] == "resize_shrink"
    attempts = _attempts(attributed, "120")
    # the RESIZING segment (before `scontrol update NumNodes=1`) and the segment after it
    # (however the reader keeps it) are not failures
    assert "RESIZING" in [a["state"] for a in attempts]
    assert {a["failure_domain"] for a in attempts} == {"none"}


def test_job121_prolog_failure_is_the_nodes(attributed, scenarios):
    """Prolog exit 1: Slurm drains node07 'Prolog error' and requeues the job held."""
    assert scenarios["121"] == "prolog_fail"
    a = _attempts(attributed, "121")[0]
    assert (a["state"], a["failure_domain"], a["failure_cause"], a["culprit_node"]) == (
        "REQUEUED", "system_software", "software", "node07",
    )  # fmt: skip
    assert _attempts(attributed, "121")[1]["failure_domain"] == "none"  # released, COMPLETED


def test_job1_node_fail_no_requeue_is_node03(attributed, scenarios):
    assert scenarios["1"] == "nodefail_norequeue"
    assert _first(attributed, "1") == ("NODE_FAIL", "hardware", "node03")


def test_job2_node_fail_requeued_is_node04(attributed, scenarios):
    assert scenarios["2"] == "nodefail_requeue"
    assert _first(attributed, "2") == ("NODE_FAIL", "hardware", "node04")
    assert _attempts(attributed, "2")[1]["failure_domain"] == "none"  # the rerun COMPLETED


def test_job3_slurmd_killed_is_node10(attributed, scenarios):
    assert scenarios["3"] == "slurmd_killed"
    assert _first(attributed, "3") == ("NODE_FAIL", "hardware", "node10")


def test_job4_preempted_cancel_mode(attributed, scenarios):
    assert scenarios["4"] == "preempt_cancel"
    assert _first(attributed, "4") == ("PREEMPTED", "preemption", None)


def test_job5_preempted_requeue_mode(attributed, scenarios):
    assert scenarios["5"] == "preempt_requeue"
    assert _first(attributed, "5") == ("PREEMPTED", "preemption", None)


def test_user_failures_on_node07_are_not_blamed_on_its_later_fail_state(attributed, scenarios):
    """39, 45+1, 49_7, 73 failed on node07 with their own exit codes 21-29 s before an admin
    set node07 FAIL ('scontrol FAIL test'): user failures, no culprit."""
    assert scenarios["39"] == "failed_exit1_multistep"
    assert scenarios["73"] == "dep_failing_parent"
    for job in ("39", "45+1", "49_7", "73"):
        assert _first(attributed, job) == ("FAILED", "user", None), job


def test_no_culprit_outside_its_attempt(attributed, dataset):
    """Every culprit is one of the attempt's nodes and has a node-state change that begins
    inside [start, end + 5 s] on it."""
    ns = dataset.node_states
    culprits = attributed.filter(pl.col("culprit_node").is_not_null())
    assert culprits.height >= 4
    for row in culprits.iter_rows(named=True):
        assert row["culprit_node"] in row["nodes"]
        near = ns.filter(
            (pl.col("node") == row["culprit_node"])
            & (pl.col("start") >= row["start_time"])
            & (pl.col("start") <= row["end_time"] + pl.duration(seconds=5))
        )
        assert near.height >= 1, row["job_id"]


def test_requeues_without_node_history_are_unknown_without_culprit(run1_dir, tmp_path):
    """sacct alone cannot tell an admin requeue from a health-check one."""
    ds = Dataset(tmp_path / "ds")
    ds.ingest("slurm", [run1_dir / "final_snapshot" / "sacct_broad_duplicates.psv"], tz="UTC")
    a = attribute_failures(ds)
    assert _first(a, "16") == ("REQUEUED", "unknown", None)
    assert _first(a, "1") == ("NODE_FAIL", "hardware", None)


def test_cpu_only_jobs_keep_zero_gpus(attributed):
    """Run 1's NODE_FAIL jobs (1, 2, 3) ran on CPU-only nodes: they are cpu_only, 0 GPUs;
    job 27 had gres/gpu=2."""
    for job in ("1", "2", "3"):
        row = attributed.filter(pl.col("job_id") == job).row(0, named=True)
        assert (row["n_accelerators"], row["resource_class"]) == (0, "cpu_only"), job
    row = attributed.filter(pl.col("job_id") == "27").row(0, named=True)
    assert (row["n_accelerators"], row["resource_class"]) == (2, "accelerator")
