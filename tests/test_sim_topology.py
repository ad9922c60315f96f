"""TPUv4 pod topology against Zu et al. NSDI'24 §2-3 (Figure 10) and the ISCA'23 twisted tori."""

import itertools
from collections import Counter

import pytest

from reliability.topology import (
    CrossConnect,
    Slice,
    all_links,
    all_ocs,
    crossconnect_diff,
    host_chips,
    host_links,
    links_broken_by_ocs,
    subcube_placements,
)


def test_pod_inventory():
    links = all_links()
    assert len(links) == 6144  # 64 cubes x 96 optical links
    assert len(all_ocs()) == 48  # 16 per dimension
    per_ocs = Counter(link.ocs for link in links)
    assert set(per_ocs.values()) == {128}  # one port per cube per polarity
    # one OCS down = one link end of each polarity in every cube
    down = [link for link in links if link.ocs == ("x", 5)]
    assert Counter(link.cube for link in down) == dict.fromkeys(range(64), 2)


def test_hosts():
    chips = [c for h in range(16) for c in host_chips(h)]
    assert sorted(chips) == sorted(itertools.product(range(4), repeat=3))  # 16 hosts x 4 chips
    assert len(host_links(0)) == 24
    with pytest.raises(ValueError, match="outside"):
        host_chips(16)


def test_figure10_one_x_ocs_in_4x4x8():
    """NSDI'24 Fig. 10: in a 4x4x8 torus one OCS in X breaks two X links in one XZ plane,
    four hops apart in Z."""
    slc = Slice((4, 4, 8), (10, 20))
    for index in range(16):
        broken = links_broken_by_ocs(slc, [("x", index)])
        assert len(broken) == 2
        (a1, _, d1), (a2, _, d2) = broken
        assert d1 == d2 == "x"
        assert a1[0] == a2[0] == 3  # the X wrap-around, from x=3 to x=0
        assert a1[1] == a2[1]  # same XZ plane (same y)
        assert abs(a1[2] - a2[2]) == 4  # repeating every 4 hops in Z


def test_crossconnects_of_a_slice():
    slc = Slice((4, 4, 8), (10, 20))
    cc = slc.crossconnects()
    # 2 cubes x 3 dims = 6 cube hops, each on 16 OCSes
    assert len(cc) == 96
    assert CrossConnect("z", 0, 10, 20) in cc
    assert CrossConnect("z", 0, 20, 10) in cc
    assert CrossConnect("x", 3, 10, 10) in cc  # a one-cube dimension wraps onto itself
    # every port is used at most once
    ports = Counter(p for c in cc for p in c.ports)
    assert set(ports.values()) == {1}


def test_chip_links_agree_with_crossconnects():
    for shape, twisted in [
        ((8, 4, 4), False),
        ((4, 4, 8), True),
        ((4, 8, 8), True),
        ((8, 8, 8), False),
    ]:
        slc = Slice(
            shape, tuple(range(100, 100 + (shape[0] * shape[1] * shape[2]) // 64)), twisted=twisted
        )
        cc = slc.crossconnects()

        def cube_of(chip, slc=slc):
            return slc.cube_at([c // 4 for c in chip])

        for a, b, d, ocs in slc.chip_links():
            if ocs is not None:
                assert CrossConnect(d, ocs[1], cube_of(a), cube_of(b)) in cc


@pytest.mark.parametrize(("shape", "twisted"), [((4, 4, 8), True), ((8, 8, 16), True), ((4, 8, 8), True),
                                                 ((8, 16, 16), True), ((12, 8, 4), False)])  # fmt: skip
def test_every_chip_has_one_neighbour_each_way(shape, twisted):
    """A (twisted) torus: along each dimension, 'next chip' is a permutation of the chips."""
    n = shape[0] * shape[1] * shape[2] // 64
    slc = Slice(shape, tuple(range(n)), twisted=twisted)
    links = slc.chip_links()
    for d in "xyz":
        nxt = [b for _, b, dd, _ in links if dd == d]
        assert len(nxt) == len(set(nxt)) == shape[0] * shape[1] * shape[2]


def test_twist_shifts_the_short_axis_wraparound():
    k2 = Slice((4, 4, 8), (0, 1), twisted=True)
    hops = {(a, d): b for a, b, d, _ in k2.neighbours()}
    assert hops[(0, "x")] == 1
    assert hops[(0, "y")] == 1
    assert hops[(0, "z")] == 1
    assert hops[(1, "z")] == 0
    chip = {(a, d): b for a, b, d, _ in k2.chip_links()}
    assert chip[((3, 2, 1), "x")] == (0, 2, 5)  # +k chips along z
    kk = Slice((4, 8, 8), (0, 1, 2, 3), twisted=True)
    assert kk.twist == {"x": (0, 1, 1)}  # k x 2k x 2k: diagonal (+k, +k) seam
    with pytest.raises(ValueError, match="not a twisted-torus shape"):
        Slice((4, 4, 12), (0, 1, 2), twisted=True)


def test_invalid_slices():
    with pytest.raises(ValueError, match="multiple of 4"):
        Slice((4, 4, 6), (0,))
    with pytest.raises(ValueError, match="distinct cubes"):
        Slice((4, 4, 8), (0, 0))


def test_crossconnect_diff_switches_only_changes():
    old = Slice((4, 4, 8), (0, 1)).crossconnects()
    new = Slice((4, 4, 8), (0, 2)).crossconnects()
    remove, add = crossconnect_diff(old, new)
    assert add == new - old
    unchanged = old & new
    # cube 0's own wrap circuits in x and y stay in place; nothing of those is switched
    assert unchanged == {c for c in old if c.a == c.b == 0}
    # the old z circuits hold cube 0's z ports, which the new slice needs: exactly those go;
    # cube 1's own wrap circuits conflict with nothing and are left alone
    assert remove == {c for c in old if c.dim == "z"}
    # a second run with the same state changes nothing
    assert crossconnect_diff(new, new) == (set(), set())


def test_subcube_placements():
    assert len(subcube_placements((2, 2, 1))) == 16  # one per host
    assert subcube_placements((4, 4, 4)) == [(0, 0, 0)]
    assert len(subcube_placements((2, 2, 4))) == 4
    assert len(subcube_placements((4, 4, 2))) == 2
    with pytest.raises(ValueError, match="whole hosts"):
        subcube_placements((1, 2, 2))
