"""Job availability of a TPU pod versus job size: static vs reconfigurable (Zu et al. NSDI'24 §2, Fig. 1).

Hosts are up independently with probability ``a`` (host availability). A cube (16 hosts, 64
chips) is usable when all its hosts are up and, if given, all its 96 optical links
(``l^96``): ``c = a^16 · l^96``.

``mode="reconfigurable"`` (TPUv4 with OCS)
    A job of k cubes takes *any* k usable cubes, joined by the OCSes:
    ``P(Binomial(n_cubes, c) >= k)``. Without fault-tolerant routing it also needs every OCS
    its torus uses: every multi-cube slice (and a whole cube, whose wrap-around goes through the
    OCS) uses all 48, so the probability is multiplied by ``o^48``; with fault-tolerant routing
    an OCS fault is routed around (factor 1). Sub-cube jobs (fewer than 64 chips) need an
    aligned group of hosts inside one cube and use no OCS.
``mode="static"`` (TPUv2/v3-like, fixed wiring)
    A job needs a contiguous healthy block of the fixed arrangement. Slices come in
    power-of-two sizes and are placed at aligned offsets (the origin is a multiple of the
    slice's extent along each axis), so the ``H / n`` placements of a job of n hosts in a pod
    of H hosts are disjoint and the probability is exact:
    ``1 − (1 − a^n · l^(links))^(H / n)``. A job whose size is not a power of two takes the
    next power of two.

The host availability the Figure 1 numbers imply, ``a ≈ 0.9896``, gives 94% for a 50-cube
job on TPUv4 and about 7% for the whole 1,024-chip TPUv3 pod.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import optimize, stats

from reliability.errors import Hint, Hinted
from reliability.topology import CHIPS_PER_HOST as _HOST_SHAPE
from reliability.topology import DIMS, FACE_LINKS, HOSTS_PER_CUBE

__all__ = [
    "PODS",
    "PodSpec",
    "availability_curve",
    "job_availability",
    "required_host_availability",
    "steady_state_availability",
]

CHIPS_PER_HOST = math.prod(_HOST_SHAPE)  # 4
LINKS_PER_CUBE = 6 * FACE_LINKS  # 96 optical links: 16 per face
N_OCS = len(DIMS) * FACE_LINKS  # 48


@dataclass(frozen=True)
class PodSpec:
    """A pod for the availability model: its cubes (64-chip blocks of 16 hosts) and wiring."""

    name: str
    n_cubes: int
    reconfigurable: bool

    @property
    def n_hosts(self) -> int:
        """Hosts in the pod (cubes × hosts per cube)."""
        return self.n_cubes * HOSTS_PER_CUBE

    @property
    def n_chips(self) -> int:
        """Chips in the pod (hosts × chips per host)."""
        return self.n_hosts * CHIPS_PER_HOST


PODS = {
    "tpuv4": PodSpec("tpuv4", 64, True),
    "tpuv3": PodSpec("tpuv3", 16, False),
    "tpuv4-static": PodSpec("tpuv4-static", 64, False),
}


def steady_state_availability(failures_per_day: float, mean_repair_h: float) -> float:
    """Long-run availability of a component that fails while in service and is then repaired.

    An alternating renewal process: up for 1/rate days on average, then down for the repair,
    so the availability is ``1 / (1 + rate · repair)``.

    Parameters
    ----------
    failures_per_day : float
        Failure rate while in service [1/day], >= 0.
    mean_repair_h : float
        Mean time to repair [h], >= 0.

    Returns
    -------
    float
        The long-run fraction of time the component is up, in (0, 1].
    """
    _nonnegative(failures_per_day=failures_per_day, mean_repair_h=mean_repair_h)
    return 1.0 / (1.0 + failures_per_day * mean_repair_h / 24.0)


def _nonnegative(**values: float) -> None:
    for name, v in values.items():
        if not (math.isfinite(v) and v >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")


def _probability(name: str, v: float | None) -> float:
    """``v`` as a float in [0, 1] (None: 1, always up)."""
    if v is None:
        return 1.0
    v = float(v)
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1], got {v!r}")
    return v


def _pod(pod: str | PodSpec) -> PodSpec:
    if isinstance(pod, PodSpec):
        return pod
    if pod not in PODS:
        raise ValueError(f"unknown pod {pod!r}; known: {sorted(PODS)}")
    return PODS[pod]


def _next_pow2(n: int) -> int:
    return 1 << max(0, math.ceil(math.log2(n)))


def job_availability(
    n_chips: int | np.ndarray,
    host_availability: float | np.ndarray,
    mode: str = "reconfigurable",
    *,
    ft_routing: bool = True,
    pod: str | PodSpec = "tpuv4",
    ocs_availability: float | None = None,
    link_availability: float | None = None,
) -> np.ndarray:
    """Probability that a job of ``n_chips`` chips can be placed (Zu et al. NSDI'24 §2, Fig. 1).

    Parameters
    ----------
    n_chips : int or array of int
        Job size [chips], >= 1. Broadcasts with ``host_availability``.
    host_availability : float or array of float
        Probability that a host is up, in [0, 1].
    mode : {"reconfigurable", "static"}
        OCS-joined cubes (any k usable cubes) or fixed wiring (an aligned healthy block).
    ft_routing : bool
        Reconfigurable only: the job routes around a failed OCS (else it needs all 48).
    pod : str or PodSpec
        A name in :data:`PODS` or a :class:`PodSpec`.
    ocs_availability, link_availability : float or None
        Probability that an OCS / an optical link is up, in [0, 1]; None: always up.

    Returns
    -------
    numpy.ndarray
        The probability, shaped as the broadcast of the inputs (a numpy float for scalar
        inputs); 0 for a job larger than the pod.
    """
    spec = _pod(pod)
    if mode not in ("reconfigurable", "static"):
        raise ValueError(f"mode must be 'reconfigurable' or 'static', got {mode!r}")
    if mode == "reconfigurable" and not spec.reconfigurable:
        raise ValueError(
            Hinted(
                f"pod {spec.name!r} has fixed wiring: only ",
                Hint("mode", "static", action=False),
                " applies",
            )
        )
    a = np.asarray(host_availability, dtype=float)
    if np.any(~((a >= 0) & (a <= 1))):  # also refuses NaN
        raise ValueError("host_availability must be a probability in [0, 1]")
    o = _probability("ocs_availability", ocs_availability)
    link = _probability("link_availability", link_availability)
    raw = np.asarray(n_chips)
    if raw.dtype.kind not in "iu" and not np.all(np.mod(raw, 1) == 0):
        raise ValueError(f"n_chips must be whole chips, got {n_chips!r}")
    chips = raw.astype(np.int64)
    out = np.zeros(np.broadcast(chips, a).shape)
    for idx in np.ndindex(out.shape):
        n = int(np.broadcast_to(chips, out.shape)[idx])
        ai = float(np.broadcast_to(a, out.shape)[idx])
        out[idx] = _one(n, ai, mode, ft_routing, spec, o, link)
    return out if out.shape else out[()]


def _one(
    n_chips: int, a: float, mode: str, ft: bool, spec: PodSpec, o: float, link: float
) -> float:
    if n_chips < 1:
        raise ValueError("n_chips must be >= 1")
    if n_chips > spec.n_chips:
        return 0.0
    n_hosts = _next_pow2(math.ceil(n_chips / CHIPS_PER_HOST))
    cube = a**HOSTS_PER_CUBE * link**LINKS_PER_CUBE
    if n_hosts < HOSTS_PER_CUBE:
        # aligned host groups inside cubes; no OCS; the cube's optical links are not used
        groups = spec.n_hosts // n_hosts
        return float(-np.expm1(groups * np.log1p(-(a**n_hosts))) if a < 1 else 1.0)
    if mode == "static":
        k = n_hosts // HOSTS_PER_CUBE
        placements = spec.n_cubes // k
        p_block = cube**k
        return float(1.0 - (1.0 - p_block) ** placements)
    k = math.ceil(n_chips / (HOSTS_PER_CUBE * CHIPS_PER_HOST))
    p = float(stats.binom.sf(k - 1, spec.n_cubes, cube))
    return p if ft else p * o**N_OCS


def availability_curve(
    host_availability: float,
    pod: str | PodSpec = "tpuv4",
    *,
    sizes_chips: list[int] | None = None,
    ocs_availability: float | None = None,
    link_availability: float | None = None,
) -> pl.DataFrame:
    """Tabulate job availability vs job size for every mode the pod supports.

    Zu et al., NSDI '24, Fig. 1.

    Parameters
    ----------
    host_availability : float
        Probability that one host is up, in (0, 1].
    pod : str or PodSpec
        The pod (``"tpuv4"``, ...) or its spec.
    sizes_chips : list of int or None
        Job sizes [chips]; None: powers of two from 4 to 4096 plus 3072, 3200 and 3584. Sizes
        above the pod's are dropped.
    ocs_availability, link_availability : float or None
        Availability of one OCS and of one ICI link, as in :func:`job_availability`.

    Returns
    -------
    polars.DataFrame
        ``n_chips``, ``mode`` (``reconfigurable`` / ``static``), ``ft_routing`` (null for
        static), ``availability`` in [0, 1].
    """
    spec = _pod(pod)
    sizes = sizes_chips or sorted(
        {*(2**i for i in range(2, 13)), 1024, 2048, 3072, 3200, 3584, 4096}
    )
    sizes = [s for s in sizes if s <= spec.n_chips]
    variants = [("static", True)]
    if spec.reconfigurable:
        variants = [("reconfigurable", True), ("reconfigurable", False), ("static", True)]
    rows = []
    for mode, ft in variants:
        for n in sizes:
            rows.append(
                {
                    "n_chips": n,
                    "mode": mode,
                    "ft_routing": ft if mode == "reconfigurable" else None,
                    "availability": float(
                        job_availability(
                            n,
                            host_availability,
                            mode,
                            ft_routing=ft,
                            pod=spec,
                            ocs_availability=ocs_availability,
                            link_availability=link_availability,
                        )
                    ),
                }
            )
    return pl.DataFrame(
        rows,
        schema={
            "n_chips": pl.Int64,
            "mode": pl.String,
            "ft_routing": pl.Boolean,
            "availability": pl.Float64,
        },
    )


def required_host_availability(
    n_chips: int,
    target: float,
    mode: str = "reconfigurable",
    pod: str | PodSpec = "tpuv4",
    *,
    ft_routing: bool = True,
    ocs_availability: float | None = None,
    link_availability: float | None = None,
) -> float:
    """Find the smallest host availability at which a job of ``n_chips`` reaches ``target``.

    Zu et al., NSDI '24, Fig. 1 (the inverse of :func:`job_availability`).

    Parameters
    ----------
    n_chips : int
        Job size [chips], >= 1 and at most the pod's size.
    target : float
        Job availability wanted, in (0, 1).
    mode, pod, ft_routing, ocs_availability, link_availability
        As in :func:`job_availability`.

    Returns
    -------
    float
        The host availability, in (0, 1]; NaN when even perfect hosts do not reach the target
        (e.g. OCS faults without FT routing).
    """
    if not 0.0 < target < 1.0:
        raise ValueError(f"target must be in (0, 1), got {target}")
    spec = _pod(pod)
    if not 1 <= n_chips <= spec.n_chips:
        raise ValueError(
            f"n_chips must be in 1..{spec.n_chips} for pod {spec.name!r}, got {n_chips}"
        )

    def f(a: float) -> float:
        v = job_availability(
            n_chips,
            a,
            mode,
            ft_routing=ft_routing,
            pod=spec,
            ocs_availability=ocs_availability,
            link_availability=link_availability,
        )
        return float(v) - target

    if f(1.0) < 0:
        return math.nan
    lo = 1e-6
    if f(lo) >= 0:
        return lo
    return float(optimize.brentq(f, lo, 1.0, xtol=1e-12))
