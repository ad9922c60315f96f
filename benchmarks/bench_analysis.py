"""Attribution + all fits on an rsc1-scale Dataset, on one core (target: under 30 s).

    python benchmarks/bench_analysis.py [DATASET]

Without DATASET, simulates the rsc1 preset (seed 7) and ingests it first (a few minutes).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    os.environ["POLARS_MAX_THREADS"] = "1"
    from reliability import Dataset, attribute_failures
    from reliability.models.failures import (
        failure_rate_series,
        fit_mttf,
        hardware_share,
        job_size_distribution,
        job_state_breakdown,
        secondary_preemptions,
    )
    from reliability.models.nodes import node_features
    from reliability.models.recovery import job_run_ettr

    if len(sys.argv) > 1:
        path = Path(sys.argv[1])
    else:
        from reliability.sim.run import simulate_cluster
        from reliability.simulated import ingest_simulation

        tmp = Path(tempfile.mkdtemp())
        simulate_cluster("rsc1", seed=7).write(tmp / "raw")
        ingest_simulation(tmp / "raw", tmp / "ds")
        path = tmp / "ds"
    ds = Dataset(path)
    t0 = time.perf_counter()
    jobs = attribute_failures(ds)
    t1 = time.perf_counter()
    m = fit_mttf(jobs)
    t2 = time.perf_counter()
    failure_rate_series(jobs)
    job_state_breakdown(jobs)
    job_size_distribution(jobs)
    hardware_share(jobs)
    secondary_preemptions(jobs)
    t3 = time.perf_counter()
    runs = job_run_ettr(jobs, ckpt_min_gpus=64)
    t4 = time.perf_counter()
    feats = node_features(ds, window_days=56, step_days=7)
    t5 = time.perf_counter()
    print(f"dataset {path}: {jobs.height:,} attempts, one core")
    print(f"attribution {t1 - t0:.1f} s, fit_mttf (incl. GLM + lifelines) {t2 - t1:.1f} s, "
          f"rates and breakdowns {t3 - t2:.1f} s, total {t3 - t0:.1f} s (target < 30 s)")  # fmt: skip
    print(f"run ETTR of {runs.runs.height:,} runs {t4 - t3:.1f} s; lemon node features "
          f"({feats['node'].n_unique():,} nodes x {feats['window_end'].n_unique()} windows) {t5 - t4:.1f} s")  # fmt: skip
    print(m)


if __name__ == "__main__":
    main()
