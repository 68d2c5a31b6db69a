"""link_loads: the optimum's load on every NIC cable and switch link, expanded from the
reduced LP, checked by identities every feasible flow obeys."""

from __future__ import annotations

from collections import defaultdict

import pytest

from topo.builders import build
from topo.fabric import SWITCH_KINDS, switch_components
from topo.flow import alltoall_bandwidth
from topo.flow.failures.damage import fail
from topo.flow.reduce.network import Scope, arc_count, network, twin_classes
from topo.flow.reduce.servers import contract_servers

CASES = [
    ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2)),
    ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, oversubscription=3)),
    ("mpft", dict(switch_ports=8, gpus_per_node=4, nics_per_node=4)),
    ("mrft", dict(switch_ports=8, gpus_per_node=4, nics_per_node=4)),
    ("ft3", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=40)),
]


GENERAL = [c for c in CASES if c[0] in ("ft2", "ft3")]  # the general LP is slow on the others


@pytest.mark.parametrize(
    "family,kw,damaged,method",
    [(f, kw, d, "auto") for f, kw in CASES for d in (False, True)]
    + [(f, kw, d, "general") for f, kw in GENERAL for d in (False, True)],
)
def test_loads_are_a_feasible_flow_of_the_inter_server_traffic(family, kw, damaged, method):
    G = build(family, **kw)
    if damaged:
        G, _ = fail(G, links=2, seed=3)
    r = alltoall_bandwidth(G, link_loads=True, method=method)
    loads = r.link_load
    assert loads
    lam = r.pair_rate_Bps
    gpus = defaultdict(int)
    for _, d in G.nodes(data=True):
        if d["kind"] == "gpu":
            gpus[d["node"]] += 1
    n = sum(gpus.values())
    inter = sum(w * (n - w) for w in gpus.values()) * lam  # B/s leaving servers
    sw = {v for v, k in G.nodes(data="kind") if k in SWITCH_KINDS}
    up = sum(x for (u, v), x in loads.items() if u not in sw and v in sw)
    down = sum(x for (u, v), x in loads.items() if u in sw and v not in sw)
    if method == "auto":  # servers contracted: only inter-server traffic reaches the network
        assert up == pytest.approx(inter, rel=1e-5)
        assert down == pytest.approx(inter, rel=1e-5)
    else:  # the general LP may also send intra-server traffic out and back in
        assert up >= inter * (1 - 1e-5) and down >= inter * (1 - 1e-5)
    for (u, v), x in loads.items():
        assert G.has_edge(u, v)
        assert -1e-3 <= x <= G.edges[u, v]["capacity"] * (1 + 1e-6)
    # Conservation at every switch.
    net = defaultdict(float)
    for (u, v), x in loads.items():
        net[u] -= x
        net[v] += x
    for s in sw:
        assert net[s] == pytest.approx(0.0, abs=1e-6 * inter)


def test_non_blocking_ft2_loads_every_nic_cable_equally():
    # 16 servers x 2 GPUs on a non-blocking FT2: every NIC cable carries its share,
    # lambda * 2 * 30 / 2 each way = the full 50 GB/s.
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    r = alltoall_bandwidth(G, link_loads=True)
    nic_loads = [x for (u, v), x in r.link_load.items() if G.nodes[u]["kind"] == "nic"]
    assert len(nic_loads) == 32
    assert nic_loads == pytest.approx([50e9] * 32, rel=1e-6)
    assert "link_load" not in r.to_dict()


def test_arc_count_is_the_number_of_arcs_network_writes() -> None:
    # MPFT of 8-port switches, 4 planes. Plane 0 alone: 8 leaves x 4 spines = 32 links, and
    # 32 servers (4 GPUs, one NIC per plane) 4 to a leaf: 8 twin classes, each reaching one
    # switch of the plane: 2 x (32 + 8) = 80 arcs.
    G = build("mpft", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    hs, _ = contract_servers(G)
    comps = switch_components(G)
    for switches in ({s for c in comps for s in c}, set(comps[0])):
        sc = Scope(switches=switches)
        classes = twin_classes(hs, sc)
        arcs, _, _ = network(G, sc, classes)
        assert arc_count(G, sc, classes) == len(arcs)
    sc = Scope(switches=set(comps[0]))
    assert len(hs) == 32 and arc_count(G, sc, twin_classes(hs, sc)) == 80
