"""TPUv4-like pod topology: cubes, hosts, optical ICI links, OCSes, slices and cross-connects.

Zu et al., NSDI'24 §2-3 and Jouppi et al., ISCA'23:

- a pod is 64 cubes; a cube is 4x4x4 chips = 16 hosts of 2x2x1 chips; 4,096 chips;
- each cube exposes 96 optical links, 16 per face: link id ``(cube, dim, index, polarity)``
  with ``index`` the position on the 4x4 face and ``polarity`` ``+``/``-``; 6,144 links;
- 48 OCSes, one per ``(dim, index)``, each with 128 ports: one per cube per polarity; an OCS
  cross-connect joins the ``+`` port of one cube to the ``-`` port of the next cube of a slice
  along ``dim``, so one OCS down takes down one link in every cube of every slice that uses
  that dimension;
- a slice of ``(4a, 4b, 4c)`` chips uses ``a x b x c`` cubes as a torus; twisted tori
  (``k x k x 2k`` and ``k x 2k x 2k`` chips) shift the wrap-around of the short axis by ``k``
  chips along the long axis (both long axes for ``k x 2k x 2k``); sub-cube slices live inside
  one cube and use no OCS.

Everything here is pure (no randomness); the pod simulator (:mod:`reliability.sim`) and the
models (:mod:`reliability.models`) both import it; it imports neither.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "CHIPS_PER_CUBE_SIDE",
    "CUBES_PER_POD",
    "DIMS",
    "FACE_LINKS",
    "CrossConnect",
    "Link",
    "Port",
    "Slice",
    "all_links",
    "all_ocs",
    "crossconnect_diff",
    "host_chips",
    "host_links",
    "links_broken_by_ocs",
    "subcube_placements",
]

DIMS = ("x", "y", "z")
CHIPS_PER_CUBE_SIDE = 4
CUBES_PER_POD = 64
FACE_LINKS = CHIPS_PER_CUBE_SIDE * CHIPS_PER_CUBE_SIDE  # 16 optical links per cube face
HOSTS_PER_CUBE = 16
CHIPS_PER_HOST = (2, 2, 1)


@dataclass(frozen=True, order=True)
class Link:
    """An optical link end on a cube face: ``(cube, dim, index, polarity)``."""

    cube: int
    dim: str
    index: int
    polarity: str  # "+" or "-"

    @property
    def ocs(self) -> tuple[str, int]:
        """The OCS this link plugs into: ``(dim, index)``."""
        return (self.dim, self.index)


@dataclass(frozen=True, order=True)
class Port:
    """An OCS port: the one for ``cube`` with ``polarity`` on OCS ``(dim, index)``."""

    dim: str
    index: int
    cube: int
    polarity: str

    @property
    def number(self) -> int:
        """Port number 0..127 on its OCS (two per cube: ``-`` then ``+``)."""
        return 2 * self.cube + (1 if self.polarity == "+" else 0)


@dataclass(frozen=True, order=True)
class CrossConnect:
    """An OCS circuit from the ``+`` port of cube ``a`` to the ``-`` port of cube ``b``."""

    dim: str
    index: int
    a: int
    b: int

    @property
    def ports(self) -> tuple[Port, Port]:
        """The two OCS ports this circuit joins."""
        return Port(self.dim, self.index, self.a, "+"), Port(self.dim, self.index, self.b, "-")


def all_links(n_cubes: int = CUBES_PER_POD) -> list[Link]:
    """List every optical link end of a pod.

    Parameters
    ----------
    n_cubes : int
        Cubes in the pod.

    Returns
    -------
    list of Link
        ``n_cubes × 96`` link ends (3 dims × 16 face links × 2 directions per cube).
    """
    return [
        Link(c, d, i, p)
        for c in range(n_cubes)
        for d in DIMS
        for i in range(FACE_LINKS)
        for p in "-+"
    ]


def all_ocs() -> list[tuple[str, int]]:
    """List the 48 OCS ids ``(dim, index)``.

    Returns
    -------
    list of (str, int)
        One per dimension and face-link index.
    """
    return [(d, i) for d in DIMS for i in range(FACE_LINKS)]


def host_chips(host: int) -> list[tuple[int, int, int]]:
    """List the chip coordinates (within its cube) of a host, a 2x2x1 block.

    Parameters
    ----------
    host : int
        Host index in its cube, 0..15.

    Returns
    -------
    list of (int, int, int)
        The host's 4 chips.

    Raises
    ------
    ValueError
        For a host outside 0..15.
    """
    if not 0 <= host < HOSTS_PER_CUBE:
        raise ValueError(f"host {host} outside 0..15")
    hx, hy, hz = host % 2, (host // 2) % 2, host // 4
    return [(2 * hx + dx, 2 * hy + dy, hz) for dx in range(2) for dy in range(2)]


def host_links(host: int) -> list[tuple[tuple[int, int, int], str, int]]:
    """List the 24 unidirectional ICI links a host watches.

    Parameters
    ----------
    host : int
        Host index in its cube, 0..15.

    Returns
    -------
    list of ((int, int, int), str, int)
        (chip, dim, direction +1/-1) per link.
    """
    return [(chip, d, s) for chip in host_chips(host) for d in DIMS for s in (+1, -1)]


def _face_index(chip: tuple[int, int, int], dim: str) -> int:
    """Position of a chip's optical port on the cube face perpendicular to ``dim``."""
    x, y, z = (c % CHIPS_PER_CUBE_SIDE for c in chip)
    u, v = {"x": (y, z), "y": (x, z), "z": (x, y)}[dim]
    return u * CHIPS_PER_CUBE_SIDE + v


@dataclass(frozen=True)
class Slice:
    """A multi-cube slice: ``shape`` in chips (multiples of 4), placed on ``cubes``.

    Cubes are laid out in the cube grid ``(shape / 4)`` in row-major order (x fastest).
    ``twisted`` asks for a twisted torus (allowed for ``k x k x 2k`` / ``k x 2k x 2k``).
    """

    shape: tuple[int, int, int]
    cubes: tuple[int, ...]
    twisted: bool = False

    def __post_init__(self) -> None:
        if any(s <= 0 or s % CHIPS_PER_CUBE_SIDE for s in self.shape):
            raise ValueError(
                f"slice shape {self.shape}: every side must be a positive multiple of 4"
            )
        if len(self.cubes) != self.n_cubes or len(set(self.cubes)) != len(self.cubes):
            raise ValueError(
                f"slice {self.shape} needs {self.n_cubes} distinct cubes, got {self.cubes}"
            )
        if self.twisted and self.twist is None:
            raise ValueError(
                f"{self.shape} is not a twisted-torus shape (k x k x 2k or k x 2k x 2k)"
            )

    @property
    def grid(self) -> tuple[int, int, int]:
        """Cubes along each dimension."""
        a, b, c = (s // CHIPS_PER_CUBE_SIDE for s in self.shape)
        return (a, b, c)

    @property
    def n_cubes(self) -> int:
        """Cubes in the slice."""
        a, b, c = self.grid
        return a * b * c

    @property
    def twist(self) -> dict[str, tuple[int, int, int]] | None:
        """For twisted shapes: short dim -> the cube offset its wrap-around adds; else None."""
        k = min(self.shape)
        longs = [d for d, s in zip(DIMS, self.shape, strict=True) if s == 2 * k]
        shorts = [d for d, s in zip(DIMS, self.shape, strict=True) if s == k]
        if not longs or len(longs) + len(shorts) != 3 or len(shorts) == 0:
            return None
        shift = k // CHIPS_PER_CUBE_SIDE  # k chips along the long axis, in cubes
        offset = tuple(shift if d in longs else 0 for d in DIMS)
        return {d: offset for d in shorts}  # type: ignore[misc]

    def position(self, cube: int) -> tuple[int, int, int]:
        """Return the grid position of a cube of this slice.

        Parameters
        ----------
        cube : int
            A cube id of the slice.

        Returns
        -------
        (int, int, int)
            Its position in the slice's cube grid.
        """
        i = self.cubes.index(cube)
        a, b, _ = self.grid
        return (i % a, (i // a) % b, i // (a * b))

    def cube_at(self, pos: Sequence[int]) -> int:
        """Return the cube at a grid position (wrapping around the torus).

        Parameters
        ----------
        pos : sequence of int
            A grid position; each coordinate is taken modulo the grid's size.

        Returns
        -------
        int
            The cube id.
        """
        a, b, c = self.grid
        x, y, z = (p % g for p, g in zip(pos, (a, b, c), strict=True))
        return self.cubes[x + a * (y + b * z)]

    def neighbours(self) -> list[tuple[int, int, str, bool]]:
        """List the cube hops: ``from``'s ``+dim`` face to ``to``'s ``-dim`` face.

        A dimension one cube long still wraps (the cube's ``+`` face joins its own ``-`` face through
        the OCS). Twisted wrap-arounds land on the shifted cube.

        Returns
        -------
        list of (int, int, str, bool)
            ``(from, to, dim, wraps)`` per hop.
        """
        twist = self.twist if self.twisted else None
        out = []
        for cube in self.cubes:
            pos = self.position(cube)
            for k, d in enumerate(DIMS):
                nxt = list(pos)
                nxt[k] += 1
                wraps = nxt[k] == self.grid[k]
                if wraps and twist and d in twist:
                    nxt = [p + o for p, o in zip(nxt, twist[d], strict=True)]
                out.append((cube, self.cube_at(nxt), d, wraps))
        return out

    def crossconnects(self) -> set[CrossConnect]:
        """List the OCS circuits this slice needs: for every cube hop, one per face index.

        Returns
        -------
        set of CrossConnect
            The circuits.
        """
        return {
            CrossConnect(d, i, a, b) for a, b, d, _ in self.neighbours() for i in range(FACE_LINKS)
        }

    def chip_links(
        self,
    ) -> list[tuple[tuple[int, int, int], tuple[int, int, int], str, tuple[str, int] | None]]:
        """List the chip-level torus links in slice coordinates.

        Links that cross a cube face go through OCS ``(dim, face index)``; the rest are electrical
        (None).

        Returns
        -------
        list of ((int, int, int), (int, int, int), str, (str, int) or None)
            List of ((int, int, int), (int, int, int), str, (str, int) or None) ``(chip, next chip,
            dim, ocs or None)`` per link.
        """
        twist = self.twist if self.twisted else None
        links = []
        for chip in itertools.product(*(range(s) for s in self.shape)):
            for k, d in enumerate(DIMS):
                nxt = list(chip)
                nxt[k] += 1
                crosses_face = nxt[k] % CHIPS_PER_CUBE_SIDE == 0
                if nxt[k] == self.shape[k]:
                    nxt[k] = 0
                    if twist and d in twist:
                        off = [o * CHIPS_PER_CUBE_SIDE for o in twist[d]]
                        nxt = [(p + o) % s for p, o, s in zip(nxt, off, self.shape, strict=True)]
                ocs = (d, _face_index(chip, d)) if crosses_face else None
                links.append((chip, tuple(nxt), d, ocs))  # type: ignore[arg-type]
        return links


def links_broken_by_ocs(
    slc: Slice, ocs: Iterable[tuple[str, int]]
) -> list[tuple[tuple[int, int, int], tuple[int, int, int], str]]:
    """List the chip-level links of a slice that go down when some OCSes fail.

    Parameters
    ----------
    slc : Slice
        The slice.
    ocs : iterable of (str, int)
        The failed OCS ids ``(dim, index)``.

    Returns
    -------
    list of ((int, int, int), (int, int, int), str)
        List of ((int, int, int), (int, int, int), str) ``(chip, next chip, dim)`` of every broken
        link.
    """
    down = set(ocs)
    return [(a, b, d) for a, b, d, o in slc.chip_links() if o is not None and o in down]


def crossconnect_diff(
    current: Iterable[CrossConnect], wanted: Iterable[CrossConnect]
) -> tuple[set[CrossConnect], set[CrossConnect]]:
    """Work out the circuits to switch to go from one set of cross-connects to another.

    Only changed circuits are switched (Zu et al., NSDI '24, §3.4.1): a circuit already in place
    stays. A port can hold one circuit, so an existing circuit that conflicts on a port with a
    wanted one is torn down even if the job that made it is still listed.

    Parameters
    ----------
    current : iterable of CrossConnect
        The circuits in place.
    wanted : iterable of CrossConnect
        The circuits needed.

    Returns
    -------
    (set of CrossConnect, set of CrossConnect)
        (circuits to tear down, circuits to set up).
    """
    cur, want = set(current), set(wanted)
    add = want - cur
    busy = {p for c in add for p in c.ports}
    remove = {c for c in cur - want if busy & set(c.ports)}
    return remove, add


def subcube_placements(shape: tuple[int, int, int]) -> list[tuple[int, int, int]]:
    """List where a sub-cube slice fits inside one cube, on host boundaries.

    x and y in steps of 2, z in steps of 1; mesh only, no OCS.

    Parameters
    ----------
    shape : (int, int, int)
        The slice shape [chips], each side at most 4; x and y multiples of 2.

    Returns
    -------
    list of (int, int, int)
        Origins (chip coordinates) of the placements.

    Raises
    ------
    ValueError
        For a shape that does not fit in 4x4x4 or is not whole hosts.
    """
    if any(s <= 0 or s > CHIPS_PER_CUBE_SIDE for s in shape):
        raise ValueError(f"sub-cube shape {shape} must fit in 4x4x4")
    if shape[0] % 2 or shape[1] % 2:
        raise ValueError(f"sub-cube shape {shape}: x and y must be whole hosts (multiples of 2)")
    steps = (2, 2, 1)
    return [
        (x, y, z)
        for z in range(0, CHIPS_PER_CUBE_SIDE - shape[2] + 1, steps[2])
        for y in range(0, CHIPS_PER_CUBE_SIDE - shape[1] + 1, steps[1])
        for x in range(0, CHIPS_PER_CUBE_SIDE - shape[0] + 1, steps[0])
        if x % shape[0] == 0 and y % shape[1] == 0 and z % shape[2] == 0
    ]
