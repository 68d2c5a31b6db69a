"""D-mod-k routing: link loads counted by hand, closed forms, damaged trees."""

from __future__ import annotations

import pytest

from topo.builders import build
from topo.flow import alltoall_bandwidth
from topo.flow.routing import routed_alltoall
from topo.units import Bps_to_GBps as GB

from ._helpers import NIC, counts, expected_counts, tier_of


def test_dmodk_loads_counted_by_hand_on_a_partial_two_leaf_spine():
    # k = 4, one GPU and one NIC per server, 5 servers: leaf0 holds node0, node1; leaf1 node2,
    # node3; leaf2 node4 only. Two spines, one cable from each leaf to each.
    # D-mod-k index d = leaf * 2 + position below the leaf: node0..4 -> 0, 1, 2, 3, 4.
    # Up port at a leaf = d mod 2: destinations node0, node2, node4 go by spine0, node1, node3
    # by spine1.
    G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1, gpus=5)
    r = routed_alltoall(G, "dmodk")
    c = counts(r)
    want = {
        # leaf -> spine: (sources on the leaf) x (destinations on other leaves with that port)
        ("leaf0", "spine0"): 2 * 2,  # node0,1 -> node2, node4
        ("leaf0", "spine1"): 2 * 1,  # node0,1 -> node3
        ("leaf1", "spine0"): 2 * 2,  # node2,3 -> node0, node4
        ("leaf1", "spine1"): 2 * 1,  # node2,3 -> node1
        ("leaf2", "spine0"): 1 * 2,  # node4 -> node0, node2
        ("leaf2", "spine1"): 1 * 2,  # node4 -> node1, node3
        # spine -> leaf: (sources on other leaves) x (destinations below with that port)
        ("spine0", "leaf0"): 3,  # node2,3,4 -> node0
        ("spine1", "leaf0"): 3,  # node2,3,4 -> node1
        ("spine0", "leaf1"): 3,  # node0,1,4 -> node2
        ("spine1", "leaf1"): 3,  # node0,1,4 -> node3
        ("spine0", "leaf2"): 4,  # node0..3 -> node4
        ("spine1", "leaf2"): 0,  # nothing: D-mod-k leaves this cable idle
    }
    for arc, x in want.items():
        assert c[arc] == pytest.approx(x, abs=1e-9), arc
    # every NIC sends to and receives from the 4 other GPUs
    for n in range(5):
        leaf = f"leaf{n // 2}"
        assert c[(f"node{n}/nic0", leaf)] == pytest.approx(4)
        assert c[(leaf, f"node{n}/nic0")] == pytest.approx(4)
    # the busiest carry 4 pair-units on 50 GB/s: lambda = 12.5 GB/s, busbw = 4 lambda
    assert GB(r.pair_rate_Bps) == pytest.approx(12.5)
    assert GB(r.alltoall_busbw_Bps) == pytest.approx(50.0)
    assert r.routing.max_link_utilization == pytest.approx(1.0)
    assert r.bottleneck_tiers == {
        "leaf->nic": 5,
        "leaf->spine": 2,
        "nic->leaf": 5,
        "spine->leaf": 1,
    }


def test_dmodk_on_a_full_two_layer_fat_tree_is_balanced_and_at_line_rate():
    # k = 8, one GPU per server: 8 leaves of 4 NICs, 4 spines. Up port d mod 4 = the position
    # below the leaf, so every leaf->spine cable carries its 4 sources to one destination on
    # each of the 7 other leaves (28), and every spine->leaf cable one destination's traffic
    # from the 28 sources on other leaves.
    G = build("ft2", switch_ports=8, gpus_per_node=1, nics_per_node=1)
    r = routed_alltoall(G, "dmodk")
    c = counts(r)
    fab = [(u, v) for (u, v) in c if tier_of(G, u, v) in ("leaf->spine", "spine->leaf")]
    assert len(fab) == 2 * 8 * 4
    assert all(c[a] == pytest.approx(28) for a in fab)
    n = 32
    assert r.pair_rate_Bps == pytest.approx(NIC / (n - 1))  # the NIC binds
    assert GB(r.alltoall_busbw_Bps) == pytest.approx(50.0)


@pytest.mark.parametrize(
    ("family", "kw"),
    [
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2)),
        ("ft2", dict(switch_ports=16)),
        ("mrft", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2)),
        ("mpft", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2)),
        ("ft3", dict(switch_ports=4, gpus_per_node=2, nics_per_node=2)),
        ("ft3", dict(switch_ports=8, gpus_per_node=4, nics_per_node=4)),
    ],
)
def test_dmodk_reaches_the_closed_form_on_non_blocking_fabrics(family, kw):
    # Non-blocking with PXN: lambda = c / (n - g), busbw = c (n - 1) / (n - g) (docs/bandwidth.md)
    G = build(family, **kw)
    r = routed_alltoall(G, "dmodk")
    n = r.gpus
    g = kw.get("gpus_per_node", 8)
    assert r.pair_rate_Bps == pytest.approx(NIC / (n - g))
    assert r.alltoall_busbw_Bps == pytest.approx(NIC * (n - 1) / (n - g))
    assert r.routing.collision_loss == 0.0


def test_a_cut_uplink_moves_dmodk_to_the_remaining_spine():
    # Full FT2, k = 4, one GPU per server, cable leaf0-spine0 cut: leaf0 climbs only to
    # spine1 (2 sources x 6 destinations = 12), and every flow to leaf0 comes down from
    # spine1 (6 sources x 2 destinations = 12). The cut bounds the optimum the same way.
    G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    G.remove_edge("leaf0", "spine0")
    r = routed_alltoall(G, "dmodk")
    c = counts(r)
    assert c[("leaf0", "spine1")] == pytest.approx(12)
    assert c[("spine1", "leaf0")] == pytest.approx(12)
    assert ("spine0", "leaf0") not in c and ("leaf0", "spine0") not in c
    assert r.pair_rate_Bps == pytest.approx(NIC / 12)
    assert GB(r.pair_rate_Bps) == pytest.approx(alltoall_bandwidth(G).pair_rate_Bps / 1e9)


def test_dmodk_doubles_up_below_a_leaf_that_lost_an_uplink():
    # Full FT2, k = 8, one GPU per server, cable leaf0-spine3 cut. Traffic to leaf0's NICs
    # (d = 0..3) can only come down from spines 0..2, taken as d mod 3: d = 0 and d = 3 both
    # use spine0, whose cable into leaf0 then carries 2 destinations x 28 sources = 56
    # pair-units (a NIC carries 31): lambda = 50 GB/s / 56. ECMP's expected split spreads the
    # 4 x 28 over the 3 cables (37.33 each), a feasible routing: the optimum is at least that.
    G = build("ft2", switch_ports=8, gpus_per_node=1, nics_per_node=1)
    G.remove_edge("leaf0", "spine3")
    r = routed_alltoall(G, "dmodk")
    c = counts(r)
    assert c[("spine0", "leaf0")] == pytest.approx(56)
    assert c[("spine1", "leaf0")] == pytest.approx(28)
    assert c[("spine2", "leaf0")] == pytest.approx(28)
    assert r.pair_rate_Bps == pytest.approx(NIC / 56)
    e = routed_alltoall(G, "ecmp")
    assert expected_counts(e)[("spine0", "leaf0")] == pytest.approx(4 * 28 / 3)
    best = alltoall_bandwidth(G).pair_rate_Bps
    assert best >= NIC / (4 * 28 / 3) * (1 - 1e-9)


@pytest.mark.slow
@pytest.mark.parametrize(("family", "n", "g"), [("mpft", 16384, 8), ("ft2", 2048, 8)])
def test_full_scale_dmodk_meets_the_closed_form(family, n, g):
    r = routed_alltoall(build(family), "dmodk")
    assert r.gpus == n
    assert r.alltoall_busbw_Bps == pytest.approx(NIC * (n - 1) / (n - g))


@pytest.mark.slow
def test_full_scale_ft3_dmodk_meets_the_closed_form():
    r = routed_alltoall(build("ft3"), "dmodk")
    n, g = 65536, 8
    assert r.alltoall_busbw_Bps == pytest.approx(NIC * (n - 1) / (n - g))
