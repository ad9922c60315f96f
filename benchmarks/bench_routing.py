"""Table 2 of Zu et al. (NSDI'24): all-to-all throughput of the three slice shapes, healthy and
with one OCS down, by max concurrent flow (HiGHS). Prints the ratios beside the paper's and the
LP sizes/times, for one failed OCS in each dimension.

    python benchmarks/bench_routing.py
"""

from __future__ import annotations

import time

from reliability.models.pods import all_to_all_throughput, dimension_order_load


def main() -> None:
    print(
        f"{'slice':<16}{'OCS':<6}{'healthy':>9}{'failed':>9}{'ratio':>8}{'paper':>8}{'LP vars':>9}{'s':>7}"
    )
    for shape, twisted in (
        ((4, 4, 4), False),
        ((4, 4, 8), True),
        ((4, 8, 8), True),
        ((4, 4, 8), False),
    ):
        for dim in ("x", "z"):
            t = time.perf_counter()
            r = all_to_all_throughput(shape, twisted, failed_ocs=(dim, 5))
            secs = time.perf_counter() - t
            name = "x".join(map(str, shape)) + (" tw" if twisted else "")
            paper = "" if r.paper_ratio is None else f"{100 * r.paper_ratio:.1f}%"
            print(f"{name:<16}{dim + '5':<6}{r.healthy_per_chip:9.4f}{r.failed_per_chip:9.4f}{100 * r.ratio:7.1f}%{paper:>8}"
                  f"{r.lp_variables:9,}{secs:7.1f}")  # fmt: skip
    for shape in ((4, 4, 4), (4, 4, 8)):
        d = dimension_order_load(shape)
        print(f"dimension-order routing {shape}: max link load {d['max_load']:.1f}, "
              f"mean {d['mean_load']:.1f}, per chip {d['per_chip']:.4f}")  # fmt: skip


if __name__ == "__main__":
    main()
