"""Server contraction: a server is one host joined to its switches, each NIC counted as the
tighter of its cable and its PCIe side; endpoints of fabrics without GPUs are hosts alone."""

from __future__ import annotations

import networkx as nx
import pytest

from tests._ibdump import ib_dump
from topo.builders import build
from topo.errors import InfeasibleError
from topo.flow.reduce.servers import (
    ServerIndex,
    check_terminals,
    contract_servers,
    inner_signature,
)
from topo.formats import import_ibnetdiscover


def test_a_server_becomes_one_host_per_node() -> None:
    # ft2 of 8-port switches, 2 GPUs and 2 NICs per server: 32 endpoints, 16 servers, each
    # server's 2 NICs on one leaf (4 endpoints per leaf), 400 Gb/s = 50e9 B/s per cable.
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    hs, terminal = contract_servers(G)
    assert terminal == "gpu"
    assert [h.id for h in hs] == list(range(16))
    h = hs[0]
    assert h.weight == 2
    assert h.attach == {"leaf0": pytest.approx(2 * 50e9)}
    assert sorted(h.nics["leaf0"]) == ["node0/nic0", "node0/nic1"]
    assert not h.host_bound


def test_pcie_below_the_cable_bounds_the_attachment() -> None:
    # An 800 Gb/s NIC (100e9 B/s) behind PCIe Gen5 x16 (64e9 B/s): the host counts 64e9.
    G = build("mpft", switch_ports=8, gpus_per_node=2, nics_per_node=2, link_gbps=800)
    h = contract_servers(G)[0][0]
    assert sorted(h.attach.values()) == [pytest.approx(64e9)] * 2
    assert h.host_bound == {"node0/nic0", "node0/nic1"}


def test_servers_alike_have_the_same_inside() -> None:
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    hs, _ = contract_servers(G)
    assert len({h.inner_sig for h in hs}) == 1
    assert inner_signature(G, hs[3].members) == hs[0].inner_sig


def test_endpoints_without_gpus_are_hosts_of_weight_one() -> None:
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    G.remove_nodes_from([v for v, k in G.nodes(data="kind") if k in ("gpu", "nvswitch")])
    hs, terminal = contract_servers(G)
    assert terminal == "endpoint" and len(hs) == 32
    assert all(h.weight == 1 and h.members == [h.id] for h in hs)


def test_check_terminals_refuses_rate_zero() -> None:
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    lone = nx.Graph(G.subgraph(["node0/gpu0", "node0/nvswitch"]))
    with pytest.raises(InfeasibleError, match="no NIC cabled"):
        check_terminals(lone, *contract_servers(lone))


def test_a_host_without_gpus_is_kept_only_when_named(tmp_path) -> None:
    # One leaf: gpu01 (one 4xNDR CA, 50 GB/s, behind PCIe 64 GB/s) and stor01, a host the
    # compute regex leaves without GPUs (two 4xHDR CAs, 25 GB/s each).
    path = tmp_path / "one-leaf.topo"
    path.write_text(
        ib_dump(
            {"leaf1": 8},
            [
                ("leaf1", 1, "gpu01 HCA-1", 1, "4xNDR"),
                ("leaf1", 2, "stor01 HCA-1", 1, "4xHDR"),
                ("leaf1", 3, "stor01 HCA-2", 1, "4xHDR"),
            ],
        )
    )
    G = import_ibnetdiscover(path, gpus_per_host=1, compute_host_regex="^gpu")
    assert [h.id for h in contract_servers(G)[0]] == ["gpu01"]
    hs, terminal = contract_servers(G, keep={"stor01", "nowhere"})
    assert terminal == "gpu" and [h.id for h in hs] == ["gpu01", "stor01"]
    gpu, stor = hs
    assert gpu.weight == 1 and gpu.attach == {"leaf1": pytest.approx(50e9)}
    # no PCIe side: its two cables in full
    assert stor.weight == 0 and stor.attach == {"leaf1": pytest.approx(2 * 25e9)}
    assert sorted(stor.nics["leaf1"]) == ["stor01/HCA-1/p1", "stor01/HCA-2/p1"]
    assert stor.inner_sig == () and not stor.host_bound


def test_a_servers_cabled_capacity_in_all_and_outside_one_switch() -> None:
    # MPFT of 8-port switches, 4 GPUs and 4 NICs per server: NIC i on a leaf of plane i,
    # 400 Gb/s = 50e9 B/s per cable: 4 x 50e9 in all, 3 x 50e9 outside any one leaf.
    G = build("mpft", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    h = contract_servers(G)[0][0]
    assert h.cabled_Bps == 4 * 50e9
    leaves = sorted(h.attach)
    assert len(leaves) == 4 and h.cabled_outside_Bps(leaves[2]) == 3 * 50e9
    assert h.cabled_outside_Bps("a switch it is not cabled to") == 4 * 50e9
    assert h.sorted_attach == tuple((s, 50e9) for s in leaves)


def test_a_server_index_contracts_a_server_as_contract_servers_does() -> None:
    # After a cable of server 3 fails, contracting it alone on the damaged copy gives the
    # server contract_servers finds there: one leaf fewer, its NIC gone from nics.
    G = build("mpft", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    index = ServerIndex.of(G)
    H = G.copy()
    leaf = next(s for s in H.adj["node3/nic1"] if H.nodes[s]["kind"] == "leaf")
    H.remove_edge("node3/nic1", leaf)
    (h,) = index.contract(H, [3])
    assert h == contract_servers(H)[0][3]
    assert leaf not in h.attach and len(h.attach) == 3 and h.cabled_Bps == 3 * 50e9
    assert index.server_of["node3/nic1"] == 3
