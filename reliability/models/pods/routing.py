"""All-to-all throughput of a TPU slice, healthy and with a failed OCS (Zu et al. NSDI'24 Table 2).

The slice is its chip-level torus (regular, or twisted for ``k x k x 2k`` / ``k x 2k x 2k``) from
:class:`reliability.topology.Slice`; every chip-to-chip link is two directed edges of
capacity 1 (one link's bandwidth). All-to-all throughput is the *maximum concurrent
multicommodity flow*: the largest rate θ that every ordered pair of chips can exchange at once;
per chip that is ``(N − 1)·θ`` link-bandwidths. The linear programme aggregates commodities by
source (one flow per source chip that delivers θ to every other chip) and is solved with HiGHS.

Symmetry keeps it small: the automorphisms of the torus of the form ``p -> ±p + v`` (translations
and reflections) that map the failed links onto themselves form a group H; averaging any optimum over H gives an H-invariant optimum, so only
one source r per H-orbit needs flow variables, and an H-orbit E of edges carries
``Σ_r |H r| / |E| · Σ_{e in E} f_r(e)`` on each of its edges. A healthy torus is
vertex-transitive: one source suffices. For comparison :func:`dimension_order_load` gives the
per-link load of dimension-order routing (x, then y, then z; ties split evenly between the two
directions of a ring).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import optimize, sparse

from reliability._result import Result
from reliability.topology import DIMS, FACE_LINKS, Slice, links_broken_by_ocs

__all__ = ["ThroughputResult", "all_to_all_throughput", "dimension_order_load"]

TABLE2 = {  # NSDI'24 Table 2, all-to-all GB/s per chip: healthy, one OCS failed
    ((4, 4, 4), False): (75.9, 70.0),
    ((4, 4, 8), True): (62.1, 63.2),
    ((4, 8, 8), True): (54.3, 53.7),
}


@dataclass
class ThroughputResult(Result):
    """All-to-all throughput of a slice, healthy and with ``failed_ocs`` down.

    Attributes
    ----------
    shape : (int, int, int)
        Slice shape [chips].
    twisted : bool
        Twisted torus.
    failed_ocs : (str, int) or None
        The OCS taken down: (dimension, face index).
    healthy_per_chip : float
        Max concurrent all-to-all throughput per chip, healthy [link bandwidths].
    failed_per_chip : float or None
        The same with ``failed_ocs`` down [link bandwidths]; None without a failure.
    links_lost, links_total : int
        Chip-to-chip links the failure takes down / the slice has.
    solve_s : float
        Time spent building and solving the LPs [s].
    lp_variables : int
        Variables of the largest LP solved.
    """

    shape: tuple[int, int, int]
    twisted: bool
    failed_ocs: tuple[str, int] | None
    healthy_per_chip: float
    failed_per_chip: float | None
    links_lost: int
    links_total: int
    solve_s: float
    lp_variables: int
    title = "All-to-all throughput with an OCS down (Zu et al. NSDI'24 Table 2)"

    @property
    def ratio(self) -> float | None:
        """Failed / healthy (Table 2's last column)."""
        if self.failed_per_chip is None:
            return None
        return self.failed_per_chip / self.healthy_per_chip

    @property
    def paper_ratio(self) -> float | None:
        """Failed/healthy throughput ratio of Zu et al., NSDI '24, Table 2 for this shape (None if not listed)."""
        ref = TABLE2.get((tuple(sorted(self.shape)), self.twisted))
        return None if ref is None else ref[1] / ref[0]

    @property
    def summary(self) -> pl.DataFrame:
        """One row: shape, twist, failed OCS, per-chip throughput healthy and failed, their ratio and the paper's."""
        return pl.DataFrame(
            {
                "shape": ["x".join(map(str, self.shape))],
                "twisted": [self.twisted],
                "failed_ocs": [
                    None if self.failed_ocs is None else f"{self.failed_ocs[0]}{self.failed_ocs[1]}"
                ],
                "healthy_per_chip": [self.healthy_per_chip],
                "failed_per_chip": [self.failed_per_chip],
                "ratio": [self.ratio],
                "paper_ratio": [self.paper_ratio],
                "links_lost": [self.links_lost],
                "links_total": [self.links_total],
                "lp_variables": [self.lp_variables],
                "solve_s": [self.solve_s],
            }
        )

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the result: links and LP variables."""
        return {"links": self.links_total, "LP variables": self.lp_variables}

    def _lines(self) -> list[str]:
        name = "x".join(map(str, self.shape)) + (" twisted" if self.twisted else "")
        s = f"{name}: all-to-all {self.healthy_per_chip:.4f} link-bandwidths per chip healthy"
        if self.failed_per_chip is not None and self.ratio is not None:
            s += (
                f", {self.failed_per_chip:.4f} with OCS {self.failed_ocs} down ({self.links_lost} of {self.links_total} links): "
                f"{100 * self.ratio:.1f}%"
            )
            if self.paper_ratio is not None:
                s += f" (NSDI'24 Table 2: {100 * self.paper_ratio:.1f}%)"
        return [s]

    @classmethod
    def _example(cls) -> ThroughputResult:
        """Build a tiny instance: a 4x4x4 torus with one failed OCS (for contract tests)."""
        # the figures all_to_all_throughput((4, 4, 4), failed_ocs=("x", 0)) gives; its LP takes
        # seconds, too long for an example
        return cls(
            shape=(4, 4, 4),
            twisted=False,
            failed_ocs=("x", 0),
            healthy_per_chip=1.96875,
            failed_per_chip=1.9072265625,
            links_lost=1,
            links_total=192,
            solve_s=0.35,
            lp_variables=6877,
        )


def _graph(slc: Slice, failed: set[tuple[str, int]]):
    """Nodes (chip tuples), their index, and the directed edges (u, v) of the links that stay up."""
    nodes = list(itertools.product(*(range(s) for s in slc.shape)))
    index = {n: i for i, n in enumerate(nodes)}
    edges = []
    for a, b, _, ocs in slc.chip_links():
        if ocs is None or ocs not in failed:
            edges.append((index[a], index[b]))
            edges.append((index[b], index[a]))
    return nodes, index, edges


def _translate(
    slc: Slice,
    p: tuple[int, int, int],
    v: tuple[int, int, int],
    sign: tuple[int, int, int] = (1, 1, 1),
) -> tuple[int, int, int]:
    """Compute sign ⊙ p + v on the (twisted) torus.

    Short twisted dims carry their wrap offset into the long ones.
    """
    shape = slc.shape
    q = [sign[i] * p[i] + v[i] for i in range(3)]
    twist = slc.twist if slc.twisted else None
    if twist:
        for d, off in twist.items():
            k = DIMS.index(d)
            carry, q[k] = divmod(q[k], shape[k])
            for j in range(3):
                q[j] += carry * off[j] * 4 if j != k else 0
    return tuple(q[i] % shape[i] for i in range(3))  # type: ignore[return-value]


def all_to_all_throughput(
    shape: tuple[int, int, int],
    twisted: bool = False,
    failed_ocs: tuple[str, int] | None = None,
    *,
    use_symmetry: bool = True,
) -> ThroughputResult:
    """Max concurrent all-to-all flow per chip of a slice, healthy and with one OCS down.

    Parameters
    ----------
    shape : (int, int, int)
        Slice shape [chips]: positive multiples of 4 (whole cubes).
    twisted : bool
        Twisted torus (shapes ``k x k x 2k`` and ``k x 2k x 2k`` only).
    failed_ocs : (str, int) or None
        The OCS to take down: ``(dim, face_index)`` with dim in ``x, y, z`` and face index in
        0..15 (Zu et al. NSDI'24 §3: one OCS per position on a cube face and dimension).
    use_symmetry : bool
        Reduce the LP by the torus automorphisms that fix the failure (exact; see module doc).

    Returns
    -------
    ThroughputResult
        Throughputs [link bandwidths per chip], links lost, the LP's size and time.
    """
    if len(tuple(shape)) != 3:
        raise ValueError(f"shape must be three chip counts (x, y, z), got {shape!r}")
    if failed_ocs is not None:
        ok = (
            isinstance(failed_ocs, tuple)
            and len(failed_ocs) == 2
            and failed_ocs[0] in DIMS
            and isinstance(failed_ocs[1], int | np.integer)
            and 0 <= failed_ocs[1] < FACE_LINKS
        )
        if not ok:
            raise ValueError(
                f"failed_ocs must be (dim, face_index) with dim in {DIMS} and face_index in "
                f"0..{FACE_LINKS - 1}, e.g. ('z', 5), got {failed_ocs!r}"
            )
    n_cubes = int(np.prod([s // 4 for s in shape]))
    slc = Slice(tuple(shape), tuple(range(n_cubes)), twisted=twisted)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    healthy, nv = _solve(slc, set(), use_symmetry)
    failed = None
    lost = len(links_broken_by_ocs(slc, [failed_ocs])) if failed_ocs is not None else 0
    if failed_ocs is not None:
        failed, nv2 = _solve(slc, {failed_ocs}, use_symmetry)
        nv = max(nv, nv2)
    return ThroughputResult(
        shape=tuple(shape),
        twisted=twisted,
        failed_ocs=failed_ocs,
        healthy_per_chip=healthy,  # type: ignore[arg-type]
        failed_per_chip=failed,
        links_lost=lost,
        links_total=len(slc.chip_links()),
        solve_s=time.perf_counter() - t0,
        lp_variables=nv,
    )


def _solve(
    slc: Slice, failed: set[tuple[str, int]], use_symmetry: bool = True
) -> tuple[float, int]:
    nodes, index, edges = _graph(slc, failed)
    n, m = len(nodes), len(edges)
    edge_id = {e: i for i, e in enumerate(edges)}
    broken = {frozenset((index[a], index[b])) for a, b, _ in links_broken_by_ocs(slc, failed)}
    # automorphisms p -> sign ⊙ p + v that preserve the failed-link set (the group H)
    edge_set = set(edges)
    group = []
    for sign in itertools.product((1, -1), repeat=3) if use_symmetry else [(1, 1, 1)]:
        for v in nodes if use_symmetry else [(0, 0, 0)]:
            perm = np.array([index[_translate(slc, p, v, sign)] for p in nodes])
            if len(set(perm.tolist())) != n:
                continue
            if {frozenset((perm[a], perm[b])) for a, b in (tuple(x) for x in broken)} != broken:
                continue
            if all((int(perm[a]), int(perm[b])) in edge_set for a, b in edges):
                group.append(perm)
    # source representatives: one per H-orbit of nodes
    seen, reps, rep_orbit = set(), [], []
    for s in range(n):
        if s not in seen:
            orb = {int(g[s]) for g in group}
            reps.append(s)
            rep_orbit.append(len(orb))
            seen.update(orb)
    # H-orbits of edges
    orbit = np.full(m, -1)
    n_orbits = 0
    for i, (a, b) in enumerate(edges):
        if orbit[i] >= 0:
            continue
        for g in group:
            orbit[edge_id[(int(g[a]), int(g[b]))]] = n_orbits
        n_orbits += 1
    orbit_size = np.bincount(orbit, minlength=n_orbits)
    r = len(reps)
    nv = r * m + 1  # flows f[rep, edge] then theta
    tail = np.array([a for a, _ in edges])
    head = np.array([b for _, b in edges])
    # conservation: out - in - demand * theta = 0 for every (rep, node)
    rows, cols, vals = [], [], []
    for k in range(r):
        base = k * m
        rows += [k * n + tail, k * n + head]
        cols += [base + np.arange(m)] * 2
        vals += [np.ones(m), -np.ones(m)]
    rows_c = np.concatenate(rows)
    cols_c = np.concatenate(cols)
    vals_c = np.concatenate(vals)
    demand = np.full(r * n, 1.0)
    for k, s in enumerate(reps):
        demand[k * n + s] = -(n - 1.0)
    a_eq = sparse.coo_matrix(
        (
            np.concatenate([vals_c, demand]),
            (
                np.concatenate([rows_c, np.arange(r * n)]),
                np.concatenate([cols_c, np.full(r * n, nv - 1)]),
            ),
        ),
        shape=(r * n, nv),
    ).tocsr()
    # capacity per edge orbit E: sum over reps r of |H r| / |E| * (r's flow summed over E) <= 1
    ub_rows = np.tile(orbit, r)
    ub_cols = np.arange(r * m)
    ub_vals = np.concatenate([size / orbit_size[orbit] for size in rep_orbit]).astype(float)
    a_ub = sparse.coo_matrix((ub_vals, (ub_rows, ub_cols)), shape=(n_orbits, nv)).tocsr()
    c = np.zeros(nv)
    c[-1] = -1.0
    res = optimize.linprog(
        c,
        A_ub=a_ub,
        b_ub=np.ones(n_orbits),
        A_eq=a_eq,
        b_eq=np.zeros(r * n),
        bounds=(0, None),
        method="highs-ipm",
    )
    if res.status != 0:
        raise RuntimeError(f"routing LP failed for {slc.shape}: {res.message}")
    theta = float(res.x[-1])
    return theta * (n - 1), nv


def dimension_order_load(shape: tuple[int, int, int]) -> dict[str, float]:
    """Per-link load of dimension-order routing on a regular torus, uniform all-to-all traffic.

    Parameters
    ----------
    shape : (int, int, int)
        Torus shape [chips]: positive multiples of 4.

    Returns
    -------
    dict
        ``max_load`` and ``mean_load`` over directed links [flows of one unit per ordered pair],
        and ``per_chip``, the throughput it allows: ``(N − 1) / max load`` [link bandwidths].
        Ties between the two directions of a ring are split evenly. Twisted tori are not
        modelled (DOR routes on the untwisted coordinates).
    """
    if len(tuple(shape)) != 3 or any(int(s) != s or s < 1 or s % 4 for s in shape):
        raise ValueError(f"shape must be three positive multiples of 4, got {shape!r}")
    sx, sy, sz = shape
    n = sx * sy * sz
    load: dict[tuple, float] = {}

    def ring_steps(a: int, b: int, size: int) -> list[tuple[int, float]]:
        fwd = (b - a) % size
        back = (a - b) % size
        if fwd < back:
            return [(+1, 1.0)]
        if back < fwd:
            return [(-1, 1.0)]
        return [(+1, 0.5), (-1, 0.5)] if fwd else []

    nodes = list(itertools.product(range(sx), range(sy), range(sz)))
    for src in nodes:
        for dst in nodes:
            if src == dst:
                continue
            paths = [(list(src), 1.0)]
            for k in range(3):
                new = []
                for pos, w in paths:
                    for step, frac in ring_steps(pos[k], dst[k], shape[k]):
                        p = list(pos)
                        while p[k] != dst[k]:
                            nxt = list(p)
                            nxt[k] = (p[k] + step) % shape[k]
                            key = (tuple(p), tuple(nxt))
                            load[key] = load.get(key, 0.0) + w * frac
                            p = nxt
                        new.append((p, w * frac))
                    if not ring_steps(pos[k], dst[k], shape[k]):
                        new.append((pos, w))
                paths = new
    n_cubes = int(np.prod([s // 4 for s in shape]))
    directed = 2 * len(Slice(tuple(shape), tuple(range(n_cubes))).chip_links())  # type: ignore[arg-type]
    vals = np.array(list(load.values()))
    mx = float(vals.max())
    return {"max_load": mx, "mean_load": float(vals.sum() / directed), "per_chip": (n - 1) / mx}
