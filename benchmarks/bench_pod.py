"""The TPUv4 pod simulator, components and jobs, for 730 days on one core (target < 1 min).

python benchmarks/bench_pod.py [--days 730] [--seed 0]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", type=float, default=730.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from reliability import Dataset
    from reliability.sim.pod import simulate_pod

    t = time.perf_counter()
    r = simulate_pod("tpuv4", days=args.days, seed=args.seed)
    sim_s = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        r.write(Path(tmp) / "raw")
        write_s = time.perf_counter() - t
        t = time.perf_counter()
        ds = Dataset(Path(tmp) / "ds")
        (o,) = ds.ingest("pod", [Path(tmp) / "raw" / "pod_events.jsonl"])
        ingest_s = time.perf_counter() - t
    st = r.job_stats
    print(f"tpuv4, {args.days:g} days: simulate {sim_s:.1f} s + write {write_s:.1f} s = {sim_s + write_s:.1f} s "
          f"(target < 60 s); ingest {ingest_s:.1f} s ({o.rows_read:,} events, {o.rows_quarantined} quarantined)")  # fmt: skip
    print(f"  {st['jobs']:,} jobs, {st['interruptions']} hardware interruptions, {st['reroutes']} reroutes, "
          f"{st['preemptions']:,} preemptions, {st['preflight_fails']} preflight catches, "
          f"{st['crossconnect_changes']:,} OCS circuit changes")  # fmt: skip


if __name__ == "__main__":
    main()
