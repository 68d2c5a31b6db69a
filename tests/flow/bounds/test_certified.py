"""Certified bounds: the cut upper bound and the routing lower bound bracket the exact LP."""

from __future__ import annotations

import pytest

from topo.builders import build
from topo.flow import alltoall_bandwidth
from topo.flow.bounds.certified import cut_upper_bound, tree_lower_bound
from topo.flow.failures.damage import fail

NIC = 50e9  # B/s


def test_server_cut_of_a_non_blocking_ft2():
    # 16 servers x 2 GPUs: a server's 2 NICs carry 2 x 30 pair-units: lambda <= 100e9 / 60.
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    ub, what = cut_upper_bound(G)
    assert ub == pytest.approx(2 * NIC / (2 * 30))
    assert "server" in what


def test_leaf_cut_of_an_oversubscribed_ft2_is_tight():
    # 8-port FT2 at 3:1: 8 leaves of 3 servers (6 GPUs), 2 x 50 GB/s up each; 48 GPUs.
    # Leaf cut: 100e9 / (6 * 42); the server cut 100e9 / (2 * 46) is looser.
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2, oversubscription=3)
    ub, what = cut_upper_bound(G)
    assert ub == pytest.approx(2 * NIC / (6 * 42))
    assert "leaf" in what
    assert alltoall_bandwidth(G).pair_rate_Bps == pytest.approx(ub, rel=1e-6)


@pytest.mark.parametrize(
    "family,kw",
    [
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, oversubscription=3)),
        ("mpft", dict(switch_ports=8, gpus_per_node=4, nics_per_node=4)),
        ("ft3", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=40)),
    ],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_bounds_bracket_the_exact_rate(family, kw, seed):
    G = build(family, **kw)
    spine_links = [
        f"{u}--{v}" for u, v, d in G.edges(data=True) if d["kind"] == "fabric" and "leaf" in u + v
    ]
    G, _ = fail(G, named=spine_links[5 * seed : 5 * seed + 1])  # keeps up/down routes
    exact = alltoall_bandwidth(G)
    b = alltoall_bandwidth(G, max_variables=10)  # forces the bounds
    assert exact.exact
    if b.bounds is None:  # the routing met the cut: exact, and it must be the LP's optimum
        assert b.exact and b.method == "certified"
        assert b.pair_rate_Bps == pytest.approx(exact.pair_rate_Bps, rel=1e-7)
        return
    assert not b.exact and b.method == "bounds"
    lo, hi = b.bounds.lower_Bps * (b.gpus - 1) / 1e9, b.bounds.upper_Bps * (b.gpus - 1) / 1e9
    assert lo > 0
    assert lo <= exact.alltoall_busbw_Bps / 1e9 * (1 + 1e-6)
    assert hi >= exact.alltoall_busbw_Bps / 1e9 * (1 - 1e-6)
    assert b.alltoall_busbw_Bps / 1e9 == pytest.approx(lo)
    assert b.bounds.gap == pytest.approx(1 - lo / hi)


def test_time_limit_gives_bounds_around_the_exact_rate():
    # A damaged MPFT of 16-port switches: the exact LP takes a fraction of a second, so a
    # 1 ms HiGHS limit is reached, and the bounds must bracket the exact rate.
    G, _ = fail(build("mpft", switch_ports=16), links=6, seed=1)
    exact = alltoall_bandwidth(G)
    b = alltoall_bandwidth(G, time_limit_s=1e-3)
    assert exact.exact
    assert any("time limit" in r for r in b.reductions)
    if b.bounds is None:  # the bounds met: exact, and it must be the LP's optimum
        assert b.exact and b.method == "certified"
        assert b.pair_rate_Bps == pytest.approx(exact.pair_rate_Bps, rel=1e-7)
        return
    assert b.method == "bounds" and not b.exact
    assert b.bounds.lower_Bps * (b.gpus - 1) / 1e9 <= exact.alltoall_busbw_Bps / 1e9 * (1 + 1e-6)
    assert b.bounds.upper_Bps * (b.gpus - 1) / 1e9 >= exact.alltoall_busbw_Bps / 1e9 * (1 - 1e-6)


@pytest.mark.parametrize(
    "family,kw",
    [
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2)),
        ("slimfly", dict(q=5)),
        ("dragonfly", dict(switch_ports=8)),
        ("mrft", dict(switch_ports=8)),
    ],
)
def test_tree_lower_bound_is_feasible(family, kw):
    # Positive on every connected fabric, and never above the exact rate.
    G = build(family, **kw)
    lb, _ = tree_lower_bound(G)
    exact = alltoall_bandwidth(G).pair_rate_Bps
    assert 0 < lb <= exact * (1 + 1e-9)


def test_tree_lower_bound_of_a_two_leaf_tree_by_hand():
    # 4-port FT2: 4 leaves (2 down, 2 up) and 2 spines, 8 servers of 1 GPU/NIC: n = 8.
    # Every leaf holds 2 terminals; a BFS tree from a spine reaches every leaf through one
    # uplink (50 GB/s), which carries 2 x 6 pair-units; from a leaf, the root leaf's own
    # subtree edge to a spine holds the other 3 leaves' 6 terminals on the far side: 6 x 2.
    # Spine-spine paths go through a leaf carrying 2 leaves below (4 x 4 = 16 pair-units).
    # The worst average load over the trees decides; the server cables give 50 / 7.
    G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    lb, _ = tree_lower_bound(G)
    assert lb <= 50e9 / 7
    assert lb >= 50e9 / 16  # no tree edge carries more than 4 x 4 pair-units


def test_bounds_that_meet_at_a_cut_name_its_cables_as_the_bottleneck():
    # 8-port FT2, 16 servers x 2 GPUs (n = 32), leaf0--spine0 dead: leaf0 keeps 3 of its 4
    # 50 GB/s uplinks for its 2 servers (W = 4 GPUs). The leaf0 cut bounds the pair rate by
    # 3 x 50e9 / (4 x 28), and any flow at that rate fills its 3 cables both ways.
    G, _ = fail(
        build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2), named=["leaf0--spine0"]
    )
    b = alltoall_bandwidth(G, max_variables=10)  # no exact LP: the bounds path
    assert b.exact and b.method == "certified" and b.lp.variables == 0
    assert b.pair_rate_Bps == pytest.approx(3 * NIC / (4 * 28), rel=1e-9)
    got = {(x.source, x.target) for x in b.bottleneck_links}
    ups = {("leaf0", f"spine{i}") for i in (1, 2, 3)}
    assert got == ups | {(v, u) for u, v in ups}
    assert all(x.load_Bps == x.capacity_Bps == NIC for x in b.bottleneck_links)
    assert b.bottleneck_tiers == {"leaf->spine": 3, "spine->leaf": 3}
    # the exact LP agrees: its optimal flow fills these six directions
    lp = alltoall_bandwidth(G, method="general", link_loads=True)
    assert lp.pair_rate_Bps == pytest.approx(b.pair_rate_Bps, rel=1e-7)
    assert lp.link_load is not None
    for arc in got:
        assert lp.link_load[arc] == pytest.approx(NIC, rel=1e-6), arc
    assert b.to_dict()["bottleneck_identified"] is True


def test_bounds_that_meet_at_a_dual_bound_say_the_bottleneck_is_not_identified():
    # Slim Fly q=5, one GPU per router port: exact by the router LP's dual bound, which names no
    # cut; the result must not pretend to know the binding links.
    G = build("slimfly", q=5, gpus_per_node=1, nics_per_node=1)
    b = alltoall_bandwidth(G, max_variables=10)
    assert b.exact and b.method == "certified"
    assert b.bottleneck_links == ()
    assert b.to_dict()["bottleneck_identified"] is False
    assert any(r.startswith("bottleneck: not identified") for r in b.reductions)
