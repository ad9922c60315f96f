"""Results do not depend on how many threads polars runs on.

In child processes with polars' pool at 1 and at 4 threads, ingestion, attribution and the
models give the same frames to the last bit on a fragmented cluster written by an independent
generator (random placement, rack names, kernel logs: ``tests/generators/gen_b.py``). A sum
over a column that polars' threads split into chunks, or a parallel group-by that keeps rows
in the order its threads finish, differs between the two (the workload summary's GPU-time
shares did).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from generators import generate_b
from polars.testing import assert_frame_equal

_CHILD = r"""
import json, sys
from datetime import datetime
from pathlib import Path

import polars as pl

from reliability import Dataset, attribute_failures
from reliability.models.failures import failure_rate_series, fit_mttf, workload_summary
from reliability.models.nodes import node_features, node_health
from reliability.models.recovery import job_run_ettr

spec = json.loads(sys.argv[1])
out = Path(sys.argv[2])
end = datetime.fromisoformat(spec["end"])
ds = Dataset(out / "ds")
ds.ingest("slurm", [spec["sacct"]], tz=spec["tz"], observed_at=end)
ds.ingest("events", [spec["events"]], tz=spec["tz"], observed_at=end)
ds.ingest("kernel", spec["kernel"], cluster=spec["cluster"], tz=spec["kernel_tz"],
          year=spec["year"], observed_at=end)
jobs = attribute_failures(ds)
mttf = fit_mttf(jobs, min_gpus=8)
frames = {
    "threads": pl.DataFrame({"n": [pl.thread_pool_size()]}),
    "attributed": jobs,
    "mttf": mttf.summary,
    "mttf_by_size": mttf.by_size,
    "rates": failure_rate_series(jobs, min_gpus=8).series,
    "ettr": job_run_ettr(jobs, 1.0).summary,
    "workload": workload_summary(jobs).summary,
    "health": node_health(ds).summary,
    "features": node_features(ds, window_days=7, step_days=7),
}
for name, frame in frames.items():
    frame.write_parquet(out / f"{name}.parquet")
"""


def _run(spec: dict, out: Path, threads: int) -> dict[str, pl.DataFrame]:
    out.mkdir()
    env = {**os.environ, "POLARS_MAX_THREADS": str(threads)}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(spec), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return {p.stem: pl.read_parquet(p) for p in sorted(out.glob("*.parquet"))}


@pytest.mark.slow
def test_results_are_the_same_on_one_thread_and_on_four(tmp_path):
    h = generate_b(tmp_path / "raw", seed=3, n_nodes=256, days=21)
    spec = {
        "sacct": str(h.sacct),
        "events": str(h.events),
        "kernel": [str(p) for p in h.kernel],
        "tz": h.tz,
        "kernel_tz": h.kernel_tz,
        "cluster": h.cluster,
        "end": h.end.isoformat(),
        "year": h.kernel_year,
    }
    one = _run(spec, tmp_path / "one", 1)
    four = _run(spec, tmp_path / "four", 4)
    assert one.pop("threads")["n"][0] == 1
    assert four.pop("threads")["n"][0] == 4
    assert one.keys() == four.keys()
    assert one["attributed"].height > 1000  # (a cluster big enough for polars to split work)
    assert one["attributed"]["failure_domain"].is_in(["hardware"]).sum() > 0
    for name in one:
        try:
            assert_frame_equal(one[name], four[name], check_exact=True)
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}") from None
