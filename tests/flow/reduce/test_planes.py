"""Planes: the isomorphism between planes, verified, and what a damaged plane does to it."""

from __future__ import annotations

import pytest

from topo.builders import build
from topo.fabric import switch_components
from topo.flow import alltoall_bandwidth
from topo.flow.reduce.planes import plane_isomorphism
from topo.flow.reduce.servers import contract_servers


def test_planes_are_found_isomorphic_in_an_intact_mpft():
    G = build("mpft", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    hs, _ = contract_servers(G)
    maps = plane_isomorphism(G, switch_components(G), hs)
    assert maps is not None and len(maps) == 4
    assert maps[2]["p2/leaf3"] == "p0/leaf3"


def test_damaged_plane_shifts_traffic_to_the_other_plane():
    # MPFT, 8-port switches, 2 GPUs and 2 NICs per server: 2 planes of 8 leaves x 4 servers.
    # Cut one uplink of p0/leaf0. The 4 servers under leaf0 of both planes (8 GPUs) send
    # 8 lambda (64 - 8) to other servers, out through leaf0 of both planes: 3 + 4 uplinks of
    # 50 GB/s (PXN moves traffic between planes inside the servers):
    # lambda = 350 / 448 GB/s, below the NIC bound 50 / 62.
    G = build("mpft", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    G.remove_edge("p0/leaf0", "p0/spine0")
    hs, _ = contract_servers(G)
    assert plane_isomorphism(G, switch_components(G), hs) is None
    auto = alltoall_bandwidth(G)
    assert not any("plane decomposition" in s for s in auto.reductions)
    assert auto.pair_rate_Bps / 1e9 == pytest.approx(350 / 448, rel=1e-6)
    general = alltoall_bandwidth(G, method="general")
    assert general.pair_rate_Bps / 1e9 == pytest.approx(350 / 448, rel=1e-6)
