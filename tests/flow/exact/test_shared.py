"""shared_flow: several demands at once, some scaled and some fixed, against hand-worked cuts and
the door's single-demand LP."""

from __future__ import annotations

import pytest

from topo.builders import build
from topo.errors import InfeasibleError, TopoError
from topo.flow import concurrent_flow, shared_flow
from topo.traffic import Demand, permutation

NIC_Bps = 50e9  # one 400G cable: 400e9 / 8 B/s per direction


@pytest.fixture(scope="module")
def ft2():
    """Non-blocking FT2 of 4-port switches: 4 leaves of 2 servers, 1 GPU and 1 NIC each."""
    return build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1)


def one_pair(a, b):
    return Demand("server", (a, b), {(a, b): 1.0})


def test_fixed_demand_takes_its_share_of_a_nic_first(ft2):
    # both demands leave node0 through its one NIC: theta = 50 - 20 GB/s
    r = shared_flow(ft2, [one_pair(0, 1), one_pair(0, 2)], [None, 20e9])
    assert r.theta == pytest.approx(NIC_Bps - 20e9, rel=1e-6)
    assert r.rates == pytest.approx((30e9, 20e9), rel=1e-6)


def test_two_scaled_demands_on_one_nic_get_half_each(ft2):
    r = shared_flow(ft2, [one_pair(0, 1), one_pair(0, 3)], [None, None])
    assert r.theta == pytest.approx(NIC_Bps / 2, rel=1e-6)


def test_link_loads_are_per_demand(ft2):
    # demand 0 -> 1 stays in leaf0; demand 2 -> 3 in leaf1: disjoint cables, each at 50 GB/s
    r = shared_flow(ft2, [one_pair(0, 1), one_pair(2, 3)], [None, None])
    assert r.theta == pytest.approx(NIC_Bps, rel=1e-6)
    assert r.link_load[0] == pytest.approx(
        {("node0/nic0", "leaf0"): NIC_Bps, ("leaf0", "node1/nic0"): NIC_Bps}, rel=1e-6
    )
    assert r.link_load[1] == pytest.approx(
        {("node2/nic0", "leaf1"): NIC_Bps, ("leaf1", "node3/nic0"): NIC_Bps}, rel=1e-6
    )


def test_one_demand_matches_the_door():
    # a 2:1 oversubscribed FT2 and a permutation of its 24 servers: the door's LP is the reference
    G = build("ft2", switch_ports=6, gpus_per_node=1, nics_per_node=1, oversubscription=2)
    d = permutation(G, {i: (7 * i + 5) % 24 for i in range(24)}, level="server")
    assert shared_flow(G, [d], [None]).theta == pytest.approx(concurrent_flow(G, d).theta, rel=1e-6)


def test_planes_are_folded_exactly():
    # MPFT, 2 planes: a server's 2 NICs (one per plane) carry 2 x 50 GB/s to its peer
    G = build("mpft", switch_ports=4, gpus_per_node=2, nics_per_node=2)
    r = shared_flow(G, [one_pair(0, 1), one_pair(2, 3)], [None, 60e9])
    assert r.theta == pytest.approx(2 * NIC_Bps, rel=1e-6)
    loads = r.link_load[1]
    assert loads[("node2/nic0", "p0/leaf1")] == pytest.approx(30e9, rel=1e-6)


def test_fixed_rates_too_high_are_infeasible(ft2):
    with pytest.raises(InfeasibleError, match="fixed rates cannot be carried"):
        shared_flow(ft2, [one_pair(0, 1), one_pair(0, 2), one_pair(4, 5)], [60e9, None, None])


@pytest.mark.parametrize(
    ("rates", "match"),
    [
        ([1e9, 1e9], "no demand to scale"),
        ([None], "one per demand"),
        ([None, -1.0], "finite and >= 0"),
        ([None, float("nan")], "finite and >= 0"),
    ],
)
def test_bad_rates_are_refused(ft2, rates, match):
    with pytest.raises(TopoError, match=match):
        shared_flow(ft2, [one_pair(0, 1), one_pair(2, 3)], rates)


def test_unknown_server_is_refused(ft2):
    with pytest.raises(TopoError, match="99.*not a server of the fabric"):
        shared_flow(ft2, [one_pair(0, 99)], [None])


def test_gpu_level_demands_are_summed_per_server_pair(ft2):
    # node0/gpu0 -> node1/gpu0 is server 0 -> server 1: the NIC's 50 GB/s
    d = Demand("gpu", ("node0/gpu0", "node1/gpu0"), {("node0/gpu0", "node1/gpu0"): 1.0})
    assert shared_flow(ft2, [d], [None]).theta == pytest.approx(NIC_Bps, rel=1e-6)
    bad = Demand("gpu", ("node0/gpu0", "ghost"), {("node0/gpu0", "ghost"): 1.0})
    with pytest.raises(TopoError, match="'ghost', which is not a GPU of the fabric"):
        shared_flow(ft2, [bad], [None])


def test_a_demand_inside_one_server_is_refused():
    G = build("ft2", switch_ports=4, gpus_per_node=2, nics_per_node=2)
    inside = Demand("gpu", ("node0/gpu0", "node0/gpu1"), {("node0/gpu0", "node0/gpu1"): 1.0})
    with pytest.raises(TopoError, match="demand 0 .* no bytes between distinct servers"):
        shared_flow(G, [inside], [None])


def read(storage, readers):
    """Each reader takes 1 B, spread evenly over the storage servers."""
    entries = {(s, r): 1.0 / len(storage) for s in storage for r in readers}
    return Demand("server", tuple(sorted({*storage, *readers})), entries)


def test_twin_storage_servers_split_their_readers_evenly(ft2):
    # storage 6, 7 (both on leaf3, one 50 GB/s NIC each) serve readers 0..3: each sends
    # 4 x theta / 2 <= 50, theta = 25 GB/s; each NIC carries 50 GB/s, full
    r = shared_flow(ft2, [read((6, 7), (0, 1, 2, 3))], [None])
    assert r.theta == pytest.approx(25e9, rel=1e-6)
    load = r.link_load[0]
    assert load[("node6/nic0", "leaf3")] == pytest.approx(NIC_Bps, rel=1e-6)
    assert load[("node7/nic0", "leaf3")] == pytest.approx(NIC_Bps, rel=1e-6)


def test_servers_a_demand_tells_apart_are_not_twins(ft2):
    # as above, and 6 also sends 40 GB/s to 4 (fixed): 6's NIC carries 2 theta + 40 <= 50,
    # theta = 5 GB/s (6 and 7 pooled as one vertex would give 4 theta + 40 <= 100, 15 GB/s)
    r = shared_flow(ft2, [read((6, 7), (0, 1, 2, 3)), one_pair(6, 4)], [None, 40e9])
    assert r.theta == pytest.approx(5e9, rel=1e-6)
