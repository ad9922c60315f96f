"""The analyses layer (:mod:`reliability.analyses`): the GPUs per node come from the data the
same way for the CLI, the pipeline and a notebook, and ``analyze_cluster`` composes the models
as the report does. Checked against a hand-written sacct export of a 4-GPU-per-node cluster
(the closed form 24 / (N_nodes r_f) with N_nodes = GPUs / 4) and hand-built frames."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pytest

from reliability.analyses import DEFAULT_GPUS_PER_NODE, analyze_cluster, attribute, gpus_per_node_of
from reliability.store import Dataset

T = datetime(2025, 1, 1, tzinfo=UTC)


def test_gpus_per_node_is_the_most_one_node_held():
    jobs = pl.DataFrame(
        {"n_accelerators": [4, 16, 6, 64], "n_nodes": [1, 4, 2, 1], "start_time": [T, T, T, None]},
    )
    # 64 GPUs on one node never started: not evidence; 6 on 2 nodes is 3 each
    assert gpus_per_node_of(jobs) == (4, "the most one node held in the data")
    cpu = pl.DataFrame({"n_accelerators": [0, 0], "n_nodes": [2, 1], "start_time": [T, T]})
    per_node, basis = gpus_per_node_of(cpu)
    assert per_node == DEFAULT_GPUS_PER_NODE
    assert "assumed" in basis


def _export(path):
    head = "JobID|JobName|User|State|ExitCode|Submit|Start|End|NNodes|AllocTRES|NodeList|Cluster"
    rows = []
    for i in range(40):
        day = 1 + i // 2
        state = "NODE_FAIL" if i % 5 == 0 else "COMPLETED"
        rows.append(
            f"{100 + i}|train|u|{state}|0:0|2025-01-{day:02d}T00:00:00|2025-01-{day:02d}T00:01:00|"
            f"2025-01-{day:02d}T10:01:00|8|gres/gpu=32,node=8|g[{1 + (i % 4) * 8:02d}-{8 + (i % 4) * 8:02d}]|c4"
        )
    path.write_text("\n".join([head, *rows]) + "\n")


@pytest.fixture(scope="module")
def four_gpu_dataset(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("a")
    _export(tmp / "sacct.psv")
    ds = Dataset(tmp / "ds")
    ds.ingest("slurm", [tmp / "sacct.psv"], tz="UTC", observed_at=datetime(2025, 1, 25, tzinfo=UTC))
    return ds


def test_analyze_cluster_turns_gpus_into_nodes_with_the_data_s_gpus_per_node(four_gpu_dataset):
    c = analyze_cluster(four_gpu_dataset, min_gpus=32)
    assert c.attribution.gpus_per_node == 4
    assert c.mttf.gpus_per_node == 4
    # 8 failures (every 5th of 40 attempts) over 40 attempts x 10 h x 8 nodes
    node_days = 40 * 10 * 8 / 24
    assert c.mttf.failures_ == 8
    assert c.mttf.node_days_ == pytest.approx(node_days, rel=1e-9)
    r_f = 8 / node_days
    row = c.mttf.by_size.filter(pl.col("bucket") == "32").row(0, named=True)
    assert row["model_mttf_h"] == pytest.approx(24 / ((32 / 4) * r_f), rel=1e-9)
    assert "GPUs per node: 4 (the most one node held in the data)" in str(c)


def test_a_given_gpus_per_node_wins_and_is_checked(four_gpu_dataset):
    a = attribute(four_gpu_dataset, gpus_per_node=8)
    assert (a.gpus_per_node, a.gpus_per_node_basis) == (8, "given")
    with pytest.raises(ValueError, match="gpus_per_node"):
        attribute(four_gpu_dataset, gpus_per_node=0)
