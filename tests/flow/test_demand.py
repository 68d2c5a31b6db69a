"""server_demand_time: arbitrary server-to-server matrices, held against closed forms and the
all-to-all LP."""

from __future__ import annotations

import itertools

import pytest

from topo.builders import build
from topo.errors import InfeasibleError, TopoError
from topo.flow import alltoall_bandwidth
from topo.flow.door import server_demand_time

NIC = 50e9  # a 400 Gb/s NIC, B/s


def test_one_pair_crosses_both_nics() -> None:
    # Two servers of 2 GPUs and 2 NICs under one 8-port leaf: 100 GB leave over 2 x 50 GB/s.
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    rep = server_demand_time(G, {(0, 1): 100e9})
    assert rep.time_s == pytest.approx(1.0, rel=1e-9)
    assert set(rep.bottleneck_tiers) <= {"nic->leaf", "leaf->nic"}


@pytest.mark.parametrize(
    "family,kw",
    [
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2)),
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, oversubscription=3)),
        ("mpft", dict(switch_ports=8, gpus_per_node=4, nics_per_node=4)),
        ("mrft", dict(switch_ports=8, gpus_per_node=4, nics_per_node=4)),
    ],
)
def test_uniform_server_matrix_matches_alltoall(family: str, kw: dict) -> None:
    # The all-to-all at pair rate lambda is the server matrix D[a, b] = g^2 (per second): the
    # demand solver's theta on D = g^2 bytes must be the all-to-all LP's lambda.
    G = build(family, **kw)
    lam = alltoall_bandwidth(G).pair_rate_Bps
    servers = sorted({d["node"] for _, d in G.nodes(data=True) if d["kind"] == "gpu"})
    g = kw["gpus_per_node"]
    D = {(a, b): float(g * g) for a, b in itertools.permutations(servers, 2)}
    rep = server_demand_time(G, D)
    assert rep.theta == pytest.approx(lam, rel=1e-6)
    if family == "mpft":
        assert rep.planes == 4


def test_shift_across_an_oversubscribed_leaf() -> None:
    # FT2 of 8-port switches, 3:1: a leaf has 6 down ports (3 servers of 2 NICs) and 2 up
    # ports. Servers 0, 1, 2 (leaf 0) each send 1 GB to servers 3, 4, 5 (leaf 1): the NICs
    # alone would take 1e9 / 100e9 = 10 ms, but leaf 0's 2 uplinks carry 3 GB: 30 ms.
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2, oversubscription=3)
    leaf = {
        d["node"]: s
        for v, d in G.nodes(data=True)
        if d["kind"] == "nic"
        for s in G.adj[v]
        if G.nodes[s]["kind"] == "leaf"
    }
    assert leaf[0] == leaf[1] == leaf[2] != leaf[3] == leaf[4] == leaf[5]
    rep = server_demand_time(G, {(0, 3): 1e9, (1, 4): 1e9, (2, 5): 1e9})
    assert rep.time_s == pytest.approx(3e9 / (2 * NIC), rel=1e-6)
    assert set(rep.bottleneck_tiers) & {"leaf->spine", "spine->leaf"}


def test_bad_demands_are_refused() -> None:
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    with pytest.raises(TopoError, match="not a server"):
        server_demand_time(G, {(0, 99): 1.0})
    with pytest.raises(TopoError, match="to itself"):
        server_demand_time(G, {(0, 0): 1.0})
    with pytest.raises(TopoError, match="finite"):
        server_demand_time(G, {(0, 1): -1.0})
    with pytest.raises(TopoError, match="empty"):
        server_demand_time(G, {(0, 1): 0.0})


def test_cut_server_is_infeasible() -> None:
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    for nic in [v for v, d in G.nodes(data=True) if d["kind"] == "nic" and d["node"] == 1]:
        for s in [s for s in G.adj[nic] if G.nodes[s]["kind"] == "leaf"]:
            G.remove_edge(nic, s)
    with pytest.raises(InfeasibleError, match="no NIC"):
        server_demand_time(G, {(0, 1): 1.0})


def test_too_large_is_refused_before_building_the_lp() -> None:
    # 8-port FT2 (16 servers of 2 NICs, 2 servers per leaf, 8 leaves x 4 spines): 64 leaf-spine
    # arcs, plus one out- and one in-arc per server in the demand (its 2 NICs reach one leaf):
    # 4 x 2 = 8. A commodity may use every arc but the other 3 servers' out-arcs: 69; two
    # senders: 138 flow variables (the LP adds theta: 139).
    from topo.errors import LPTooLarge

    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    demand = {(0, 2): 1e9, (1, 3): 1e9}
    with pytest.raises(LPTooLarge, match="138 variables"):
        server_demand_time(G, demand, max_variables=137)
    assert server_demand_time(G, demand, max_variables=138).lp.variables == 139
