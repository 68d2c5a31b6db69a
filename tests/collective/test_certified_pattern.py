"""The ring and tree patterns across servers, exact without the LP when a routing meets the
servers' NIC bound (topo.collective.fabric_rates.certified_pattern).

Independent values: the NIC bound by hand (a server of 8 x 400G NICs sends and receives at
most 8 x 50 GB/s = 400 GB/s, so a ring step of 1 byte per server per unit takes at least
1/400e9 s per unit), and the max concurrent flow LP (topo.flow.door.server_demand_time, the
solver the certificate stands in for) on the same sub-fabric and demand.
"""

from __future__ import annotations

import pytest

from topo.builders import build
from topo.collective.fabric_rates import (
    certified_pattern,
    fabric_rates,
    select_subcluster,
)
from topo.flow.door import server_demand_time
from topo.flow.failures.damage import fail
from topo.traffic import Demand, double_binary_tree_step, ring_step

NIC_Bps = 400e9 / 8  # a 400G NIC, B/s


def lp_seconds_per_byte(sub, demand: Demand) -> float:
    return server_demand_time(sub, demand.scaled(1e9)).time_s / 1e9


def sub_and_servers(G):
    sub, servers, _, _ = select_subcluster(G, None, None)
    return sub, servers


def test_ring_on_a_non_blocking_fat_tree_meets_the_nic_bound():
    # ft2 of 8-port switches: 4 servers of 8 GPUs and 8 x 400G NICs
    sub, servers = sub_and_servers(build("ft2", switch_ports=8, gpus=32))
    r = certified_pattern(sub, ring_step(servers))
    assert r is not None and r.method == "certified"
    assert r.seconds_per_byte == pytest.approx(1 / (8 * NIC_Bps), rel=1e-12)
    assert r.bottleneck == {"nic->leaf": 8}  # one server's 8 NIC cables, sending
    rates = fabric_rates(build("ft2", switch_ports=8, gpus=32))
    assert rates.ring is not None and rates.ring.method == "certified"
    assert 1 / rates.ring.seconds_per_byte == pytest.approx(8 * NIC_Bps, rel=1e-12)


@pytest.mark.parametrize(
    "family, options",
    [
        ("ft2", dict(switch_ports=8, gpus=32)),
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2)),
        ("ft2", dict(switch_ports=16, gpus=64, nics_per_node=4)),
        ("mrft", dict(switch_ports=16, gpus=128)),
        ("mpft", dict(switch_ports=16, gpus=128)),
        ("ft3", dict(switch_ports=8)),
    ],
)
@pytest.mark.parametrize("pattern", [ring_step, double_binary_tree_step])
def test_certified_equals_the_lp_on_non_blocking_fabrics(family, options, pattern):
    sub, servers = sub_and_servers(build(family, **options))
    demand = pattern(servers)
    r = certified_pattern(sub, demand)
    assert r is not None, (family, options)
    assert r.seconds_per_byte == pytest.approx(lp_seconds_per_byte(sub, demand), rel=1e-7)


def test_an_oversubscribed_fabric_is_left_to_the_lp():
    # 3:1 at the leaves: the spine links bind, not the NICs; the LP says how much
    G = build("ft2", switch_ports=16, gpus=64, oversubscription=3)
    sub, servers = sub_and_servers(G)
    demand = ring_step(servers)
    assert certified_pattern(sub, demand) is None
    rates = fabric_rates(G)
    assert rates.ring is not None and rates.ring.method == "lp"
    assert rates.ring.seconds_per_byte == pytest.approx(lp_seconds_per_byte(sub, demand))
    assert rates.ring.seconds_per_byte > 1 / (8 * NIC_Bps) * (1 + 1e-6)  # slower than the NICs


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_damaged_fabrics_get_the_lps_rate_either_way(seed):
    # 3 random cables (NIC or switch links) of ft2 k8 fail: whichever way a pattern is solved,
    # its rate is the LP's
    H, _ = fail(build("ft2", switch_ports=8, gpus=32), links=3, seed=seed)
    sub, servers = sub_and_servers(H)
    rates = fabric_rates(H)
    for got, pattern in ((rates.ring, ring_step), (rates.tree, double_binary_tree_step)):
        assert got is not None
        want = lp_seconds_per_byte(sub, pattern(servers))
        assert got.seconds_per_byte == pytest.approx(want, rel=1e-7), got.method


def test_a_gpu_level_demand_is_not_certified():
    G = build("ft2", switch_ports=8, gpus=32)
    a, b = "node0/gpu0", "node1/gpu0"
    assert G.nodes[a]["kind"] == G.nodes[b]["kind"] == "gpu"
    assert certified_pattern(G, Demand("gpu", (a, b), {(a, b): 1.0})) is None


@pytest.mark.parametrize("family", ["mpft", "mrft"])
@pytest.mark.parametrize("nic", ["node0/nic3", "node5/nic0"])
def test_a_server_that_lost_a_nic_cable_gets_the_lps_rate(family, nic):
    # servers unlike the others (7 NICs left in one): the split by shares of NIC capacity
    # must not claim more than the LP
    G = build(family, switch_ports=16, gpus=128)
    (leaf,) = [w for w in G.adj[nic] if G.adj[nic][w]["kind"] == "endpoint"]
    H, _ = fail(G, named=[f"{nic}--{leaf}"])
    sub, servers = sub_and_servers(H)
    for pattern in (ring_step, double_binary_tree_step):
        demand = pattern(servers)
        got = certified_pattern(sub, demand)
        want = lp_seconds_per_byte(sub, demand)
        if got is not None:
            assert got.seconds_per_byte == pytest.approx(want, rel=1e-7)
        # the server that lost a NIC sends and receives over 7 x 50 GB/s: never faster
        assert want >= 1 / (7 * NIC_Bps) * (1 - 1e-7)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("family", ["mpft", "mrft"])
def test_damaged_planes_and_rails_get_the_lps_rate(family, seed):
    H, _ = fail(build(family, switch_ports=16, gpus=128), links=4, seed=seed)
    sub, servers = sub_and_servers(H)
    rates = fabric_rates(H)
    for got, pattern in ((rates.ring, ring_step), (rates.tree, double_binary_tree_step)):
        assert got is not None
        want = lp_seconds_per_byte(sub, pattern(servers))
        assert got.seconds_per_byte == pytest.approx(want, rel=1e-7), got.method
