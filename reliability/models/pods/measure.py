"""Measured job availability of a pod from its component history (NSDI'24 Fig. 1, empirically).

The pod's state is sampled every ``step_h`` hours: a host is down while it is in a node state
(repair, maintenance) or has an open machine failure; an optical link while its failure is
open; an OCS likewise. At each sample a job of k cubes *can be placed* when (reconfigurable)
at least k cubes are usable, and (without fault-tolerant routing) every OCS is up, or (static)
one of the aligned blocks of k cubes is entirely usable, exactly the placement rules of
:mod:`reliability.models.pods.availability`. The measured availability is the fraction of samples;
its standard error comes from batch means over contiguous periods (the state is autocorrelated
over repair times, so samples are not independent).

Host ids follow the pod simulator: ``cCC-hHH`` (cube CC, host HH), links ``cCC-...``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from reliability._result import Result
from reliability.models.pods.availability import CHIPS_PER_HOST, HOSTS_PER_CUBE

if TYPE_CHECKING:
    from reliability.store import Dataset

__all__ = ["MeasuredAvailability", "measured_job_availability"]


@dataclass
class MeasuredAvailability(Result):
    """Measured availability by job size (``curve``) and the component availabilities.

    Attributes
    ----------
    curve : polars.DataFrame
        ``n_chips, mode, ft_routing, measured`` (fraction of samples the job could be placed),
        ``stderr`` (batch means).
    host_availability, link_availability, ocs_availability : time-average availability of one
        host, optical link and OCS
    n_cubes : int
        Cubes in the pod.
    samples : int
        State samples taken.
    """

    title = "Measured job availability of a pod (Zu et al. NSDI'24 Fig. 1, from its history)"
    curve: pl.DataFrame
    host_availability: float
    link_availability: float
    ocs_availability: float
    n_cubes: int
    samples: int
    notes: list[str] = field(default_factory=list)

    @property
    def sample_sizes(self) -> dict[str, int | float]:
        """Counts behind the result: availability samples and cubes."""
        return {"samples": self.samples, "cubes": self.n_cubes}

    @property
    def summary(self) -> pl.DataFrame:
        """One row: cubes, samples, and the measured host, link and OCS availability."""
        return self._mapping_frame(
            {
                "n_cubes": self.n_cubes,
                "samples": self.samples,
                "host_availability": self.host_availability,
                "link_availability": self.link_availability,
                "ocs_availability": self.ocs_availability,
            }
        )

    def tables(self) -> dict[str, pl.DataFrame]:
        """Return the result's tables by name.

        Returns
        -------
        dict of str to polars.DataFrame
            ``"summary"`` and ``"by job size"`` (measured availability per size and mode).
        """
        return {"summary": self.summary, "by job size": self.curve}

    def _lines(self) -> list[str]:
        lines = [
            f"{self.samples:,} samples of a {self.n_cubes}-cube pod: host availability {100 * self.host_availability:.3f}%, "
            f"link {100 * self.link_availability:.4f}%, OCS {100 * self.ocs_availability:.4f}%"
        ]
        for r in self.curve.iter_rows(named=True):
            ft = "" if r["ft_routing"] is None else (" FT" if r["ft_routing"] else " no-FT")
            lines.append(
                f"  {r['n_chips']:>5} chips {r['mode']}{ft}: {100 * r['measured']:.2f}% ± {100 * r['stderr']:.2f}"
            )
        return lines

    @classmethod
    def _example(cls) -> MeasuredAvailability:
        """Build a tiny instance: two job sizes of a 4-cube pod (for contract tests)."""
        curve = pl.DataFrame(
            {
                "n_chips": [64, 256, 256],
                "mode": ["reconfigurable"] * 3,
                "ft_routing": [None, False, True],
                "measured": [0.999, 0.97, 0.99],
                "stderr": [0.0005, 0.004, 0.002],
            }
        )
        return cls(
            curve=curve,
            host_availability=0.998,
            link_availability=0.99995,
            ocs_availability=0.99998,
            n_cubes=4,
            samples=336,
        )


def _down_matrix(
    ids: list[str],
    intervals: pl.DataFrame,
    t: np.ndarray,
    id_col: str,
    s_col: str,
    e_col: str,
    unit: dict[str, int] | None = None,
) -> np.ndarray:
    """Return a boolean (units, len(t)) matrix: some component of the unit is down at t.

    Down means inside one of its intervals. Units are the components themselves unless ``unit``
    maps component id -> unit index.
    """
    index = unit if unit is not None else {c: i for i, c in enumerate(ids)}
    n_units = (max(index.values()) + 1) if index else 0
    diff = np.zeros((n_units, len(t) + 1), dtype=np.int32)
    if intervals.height:
        comp = np.array([index.get(c, -1) for c in intervals.get_column(id_col).to_list()])
        s = intervals.get_column(s_col).dt.epoch("us").to_numpy().astype(float) / 1e6
        e = (
            intervals.get_column(e_col)
            .dt.epoch("us")
            .fill_null(np.iinfo(np.int64).max)
            .to_numpy()
            .astype(float)
            / 1e6
        )
        keep = comp >= 0
        i0 = np.searchsorted(t, s[keep], side="left")
        i1 = np.searchsorted(t, e[keep], side="left")
        np.add.at(diff, (comp[keep], i0), 1)
        np.add.at(diff, (comp[keep], i1), -1)
    return np.cumsum(diff[:, :-1], axis=1) > 0


def measured_job_availability(
    source: Dataset | dict[str, pl.DataFrame],
    sizes_chips: list[int],
    *,
    mode: str = "reconfigurable",
    step_h: float = 1.0,
    start: datetime | None = None,
    end: datetime | None = None,
    batches: int = 20,
) -> MeasuredAvailability:
    """Measure the fraction of time a job of each size could be placed (see module doc).

    The measured counterpart of Zu et al., NSDI '24, Fig. 1.

    Parameters
    ----------
    source : Dataset or dict of str to polars.DataFrame
        A Dataset of an ingested pod log, or its ``inventory``, ``component_failures`` and
        ``node_states`` frames.
    sizes_chips : list of int
        Job sizes [chips].
    mode : {"reconfigurable", "static"}
        Pod placement mode; ``"reconfigurable"`` reports both with and without fault-tolerant
        routing.
    step_h : float
        Time between availability samples [h].
    start, end : datetime or None
        The window measured [UTC]; None: from the first component's ``in_service`` to the last
        recorded failure, repair or state change.
    batches : int
        Batches of consecutive samples for the standard error (batch means).

    Returns
    -------
    MeasuredAvailability
        Measured host, link and OCS availability and, per size and mode, the measured job
        availability with its standard error.

    Raises
    ------
    ValueError
        For an unknown mode, an inventory without machines, or a window holding fewer samples
        than ``batches``.
    """
    if mode not in ("reconfigurable", "static"):
        raise ValueError(f"mode must be 'reconfigurable' or 'static', got {mode!r}")
    get = (lambda n: source[n]) if isinstance(source, dict) else (lambda n: getattr(source, n))
    inv, fails, states = get("inventory"), get("component_failures"), get("node_states")
    hosts = sorted(
        inv.filter(pl.col("component_type") == "machine").get_column("component_id").to_list()
    )
    links = sorted(
        inv.filter(pl.col("component_type") == "ici_link").get_column("component_id").to_list()
    )
    ocs = sorted(inv.filter(pl.col("component_type") == "ocs").get_column("component_id").to_list())
    if not hosts:
        raise ValueError("no machines in the inventory: is this a pod log?")
    cubes = sorted({h.split("-")[0] for h in hosts})
    n_cubes = len(cubes)
    t0 = (start or inv.get_column("in_service").min()).timestamp()
    if end is None:
        last = [
            fails.get_column("failed_at").max(),
            fails.get_column("repaired_at").max(),
            states.get_column("start").max(),
            states.get_column("end").max(),
        ]
        end = max(x for x in last if x is not None)
    t1 = end.timestamp()
    step = step_h * 3600.0
    t = t0 + step * (np.arange(int((t1 - t0) // step)) + 0.5)
    if t.size < batches:
        raise ValueError(
            f"the period holds {t.size} samples of {step_h} h; need at least {batches}"
        )
    machine_fail = fails.filter(pl.col("component_type") == "machine")
    host_iv = pl.concat(
        [
            states.select(id=pl.col("node"), s=pl.col("start"), e=pl.col("end")),
            machine_fail.select(
                id=pl.col("component_id"), s=pl.col("failed_at"), e=pl.col("repaired_at")
            ),
        ]
    )
    host_down = _down_matrix(hosts, host_iv, t, "id", "s", "e")
    link_fails = fails.filter(pl.col("component_type") == "ici_link")
    cube_index = {c: i for i, c in enumerate(cubes)}
    link_cube_down = _down_matrix(
        links,
        link_fails,
        t,
        "component_id",
        "failed_at",
        "repaired_at",
        unit={x: cube_index[x.split("-")[0]] for x in links},
    )
    link_down_s = (
        float(
            (
                link_fails.get_column("repaired_at").fill_null(end).dt.epoch("us").cast(pl.Float64)
                / 1e6
            )
            .clip(t0, t1)
            .sum()
            - (link_fails.get_column("failed_at").dt.epoch("us").cast(pl.Float64) / 1e6)
            .clip(t0, t1)
            .sum()
        )
        if link_fails.height
        else 0.0
    )
    ocs_down = _down_matrix(
        ocs,
        fails.filter(pl.col("component_type") == "ocs"),
        t,
        "component_id",
        "failed_at",
        "repaired_at",
    )
    cube_of_host = np.array([cubes.index(h.split("-")[0]) for h in hosts])
    cube_bad = np.zeros((n_cubes, t.size), dtype=bool)
    np.logical_or.at(cube_bad, cube_of_host, host_down)
    if links:
        cube_bad |= link_cube_down
    usable = (~cube_bad).sum(axis=0)
    ocs_all_up = ~ocs_down.any(axis=0) if ocs else np.ones(t.size, dtype=bool)
    # hosts in (cube, host-in-cube) order for sub-cube groups
    order = np.lexsort((np.array([h.split("-")[1] for h in hosts]), cube_of_host))
    host_up = ~host_down[order]

    def stat(ok: np.ndarray) -> tuple[float, float]:
        means = np.array([b.mean() for b in np.array_split(ok.astype(float), batches)])
        return float(ok.mean()), float(means.std(ddof=1) / math.sqrt(batches))

    rows = []
    for n in sizes_chips:
        n_hosts = 1 << max(0, math.ceil(math.log2(math.ceil(n / CHIPS_PER_HOST))))
        if n_hosts < HOSTS_PER_CUBE:
            g = host_up.reshape(-1, n_hosts, t.size).all(axis=1).any(axis=0)
            variants = [(None, g)]
        elif mode == "static":
            k = n_hosts // HOSTS_PER_CUBE
            ok = (
                (~cube_bad).reshape(-1, k, t.size).all(axis=1).any(axis=0)
                if k <= n_cubes
                else np.zeros(t.size, bool)
            )
            variants = [(None, ok)]
        else:
            k = math.ceil(n / (HOSTS_PER_CUBE * CHIPS_PER_HOST))
            variants = [(True, usable >= k), (False, (usable >= k) & ocs_all_up)]
        for ft, ok in variants:
            m, se = stat(ok)
            rows.append({"n_chips": n, "mode": mode, "ft_routing": ft, "measured": m, "stderr": se})
    curve = pl.DataFrame(
        rows,
        schema={
            "n_chips": pl.Int64,
            "mode": pl.String,
            "ft_routing": pl.Boolean,
            "measured": pl.Float64,
            "stderr": pl.Float64,
        },
    )
    return MeasuredAvailability(
        curve=curve,
        host_availability=float(1.0 - host_down.mean()),
        link_availability=1.0 - link_down_s / (len(links) * (t1 - t0)) if links else 1.0,
        ocs_availability=float(1.0 - ocs_down.mean()) if ocs else 1.0,
        n_cubes=n_cubes,
        samples=int(t.size),
    )
