"""Reference values for tests/test_routing.py, computed independently of reliability.models.pods.routing.

Run from the repository root (a few minutes on 2 cores):

    .venv/bin/python tests/results/routing_table2.py   # writes tests/results/routing_table2.json

Independent route: the torus is built here from its definition (not from reliability.topology),
the failed optical circuit switch is modelled as the links it carries, and the all-to-all
throughput is the maximum concurrent multicommodity flow written as the plain LP, one commodity
per source chip with no symmetry reduction (the package reduces the LP by the torus
automorphisms), solved with scipy's HiGHS interior point method.

Graphs (Zu et al., NSDI'24 §3 and Table 2):
- ``4x4x4``: one cube; every link is one of its 96 optical links. By the torus's translation and
  axis-permutation symmetry, one OCS down (one link) gives the same optimum whichever link it is.
- ``4x4x8`` regular and twisted (two cubes along z): the twisted torus shifts the x and y
  wrap-arounds by 4 chips along z. An OCS of dimension z carries the two z-links at one (x, y)
  face position that cross a cube boundary (z = 3-4 and z = 7-0); translations in x and y are
  symmetries of both tori, so the position does not matter.
"""

from __future__ import annotations

import itertools
import json
import platform
import time
from pathlib import Path

import numpy as np
import scipy
from scipy import optimize, sparse

Node = tuple[int, int, int]


def torus_links(shape: tuple[int, int, int], twisted: bool = False) -> set[frozenset[Node]]:
    """Undirected chip-to-chip links of a 3D torus; ``twisted`` (k x k x 2k only here): the
    wrap-around of each short axis lands k chips further along the long axis z."""
    sx, sy, sz = shape
    if twisted and not (sx == sy and sz == 2 * sx):
        raise ValueError(f"only k x k x 2k twisted tori here, got {shape}")
    links = set()
    for p in itertools.product(range(sx), range(sy), range(sz)):
        for d in range(3):
            q = list(p)
            q[d] += 1
            if q[d] == shape[d]:
                q[d] = 0
                if twisted and d < 2:
                    q[2] = (q[2] + sx) % sz
            links.add(frozenset((p, tuple(q))))
    return links


def max_concurrent_all_to_all(shape: tuple[int, int, int], links: set[frozenset[Node]]) -> float:
    """Largest θ such that every ordered pair of chips can exchange θ at once, each direction of
    each link carrying at most 1; returned per chip, ``(N − 1) θ`` [link bandwidths]."""
    nodes = list(itertools.product(*(range(s) for s in shape)))
    idx = {p: i for i, p in enumerate(nodes)}
    arcs = [(idx[a], idx[b]) for link in links for a, b in (tuple(link), tuple(link)[::-1])]
    n, m = len(nodes), len(arcs)
    tail = np.array([a for a, _ in arcs])
    head = np.array([b for _, b in arcs])
    nv = n * m + 1  # flow of source s on arc a, then θ
    rows, cols, vals = [], [], []
    for s in range(n):  # conservation at every node v for source s: out − in − demand·θ = 0
        rows += [s * n + tail, s * n + head]
        cols += [s * m + np.arange(m)] * 2
        vals += [np.ones(m), -np.ones(m)]
    demand = np.full(n * n, 1.0)
    demand[np.arange(n) * n + np.arange(n)] = -(n - 1.0)
    a_eq = sparse.csr_matrix(
        (
            np.concatenate([*vals, demand]),
            (
                np.concatenate([*rows, np.arange(n * n)]),
                np.concatenate([*cols, np.full(n * n, nv - 1)]),
            ),
        ),
        shape=(n * n, nv),
    )
    a_ub = sparse.csr_matrix(
        (np.ones(n * m), (np.tile(np.arange(m), n), np.arange(n * m))), shape=(m, nv)
    )
    c = np.zeros(nv)
    c[-1] = -1.0
    res = optimize.linprog(c, A_ub=a_ub, b_ub=np.ones(m), A_eq=a_eq, b_eq=np.zeros(n * n),
                           bounds=(0, None), method="highs-ipm")  # fmt: skip
    if res.status != 0:
        raise RuntimeError(res.message)
    return float(res.x[-1] * (n - 1))


def main() -> None:
    cases = {
        "4x4x4": ((4, 4, 4), False, [((0, 3, 0), (0, 0, 0))]),
        "4x4x8": ((4, 4, 8), False, [((0, 0, 3), (0, 0, 4)), ((0, 0, 7), (0, 0, 0))]),
        "4x4x8t": ((4, 4, 8), True, [((0, 0, 3), (0, 0, 4)), ((0, 0, 7), (0, 0, 0))]),
    }
    out: dict[str, object] = {
        "produced_by": "tests/results/routing_table2.py",
        "method": "max concurrent multicommodity flow, one commodity per source, no symmetry "
        "reduction; scipy.optimize.linprog(method='highs-ipm')",
        "python": platform.python_version(),
        "scipy": scipy.__version__,
        "numpy": np.__version__,
        "units": "link bandwidths per chip",
        "cases": {},
    }
    for name, (shape, twisted, failed) in cases.items():
        links = torus_links(shape, twisted)
        t0 = time.perf_counter()
        healthy = max_concurrent_all_to_all(shape, links)
        broken = {frozenset(link) for link in failed}
        assert broken <= links
        one_down = max_concurrent_all_to_all(shape, links - broken)
        out["cases"][name] = {  # type: ignore[index]
            "shape": list(shape), "twisted": twisted, "links": len(links),
            "links_removed": [sorted(map(list, link)) for link in failed],
            "healthy_per_chip": healthy, "failed_per_chip": one_down, "ratio": one_down / healthy,
            "seconds": round(time.perf_counter() - t0, 1),
        }  # fmt: skip
        print(name, out["cases"][name])  # type: ignore[index]
    path = Path(__file__).with_suffix(".json")
    path.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
