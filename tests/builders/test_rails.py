"""Multi-rail (MRFT) and multi-plane (MPFT) fat trees (topo.builders.rails).

Expected counts come from the DeepSeek-V3 hardware report (ISCA'25, Table 3 and §5.1: MPFT of
64-port switches, 16,384 endpoints, 768 switches, 16,384 links; 2,048-GPU MRFT), the closed form
of a two-layer folded Clos (k leaves, k/2 spines, k^2/2 endpoints per plane) and the sizing rules
of docs/builders.md, worked by hand in each test.
"""

from __future__ import annotations

import networkx as nx
import pytest

from topo.builders import build, max_gpus
from topo.builders.rails import multi_plane_fat_tree, multi_rail_fat_tree
from topo.errors import SpecError
from topo.fabric import is_switch, summarize
from topo.spec import ServerSpec, SwitchSpec


def switch_graph(G):
    return G.subgraph(v for v in G if is_switch(G, v))


def leaf_of(G, nic):
    (leaf,) = (v for v in G[nic] if G.edges[nic, v]["kind"] == "endpoint")
    return leaf


# --- MPFT -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_mpft_full_64_port_matches_isca25_table3():
    # [ISCA25] Table 3, MPFT: 16,384 endpoints, 768 switches, 16,384 links; §5.1: 8 planes,
    # up to 16,384 GPUs. Per plane (k = 64): 64 leaves, 32 spines, 2048 endpoints, 2048 links.
    s = summarize(multi_plane_fat_tree())
    assert s.family == "mpft"
    assert s.planes == 8
    assert s.endpoints == s.gpus == 16384
    assert s.nodes == 2048
    assert s.switches == 768
    assert s.switches_by_tier == {"leaf": 8 * 64, "spine": 8 * 32}
    assert s.links == 16384
    assert s.max_gpus == 16384


@pytest.mark.parametrize("k", [4, 8, 16])
def test_mpft_full_closed_form(k):
    # 4 planes (4 NICs per node), each a full two-layer Clos of k^2/2 nodes.
    s = summarize(multi_plane_fat_tree(SwitchSpec(k), ServerSpec(gpus=4, nics=4)))
    assert s.planes == 4
    assert s.nodes == k * k // 2
    assert s.switches_by_tier == {"leaf": 4 * k, "spine": 4 * k // 2}
    assert s.links == 4 * k * k // 2


def test_mpft_planes_are_disconnected_in_the_switch_graph():
    for G in (multi_plane_fat_tree(SwitchSpec(8)), multi_plane_fat_tree(gpus=1000)):
        parts = list(nx.connected_components(switch_graph(G)))
        assert len(parts) == 8
        for part in parts:
            assert len({G.nodes[v]["plane"] for v in part}) == 1
        assert {G.nodes[v]["plane"] for v in G if is_switch(G, v)} == set(range(8))


def test_mpft_128_gpus_is_one_leaf_per_plane():
    # 16 nodes per plane <= 64 ports: one leaf per plane, no spines, no switch-switch links.
    G = multi_plane_fat_tree(gpus=128)
    s = summarize(G)
    assert s.switches_by_tier == {"leaf": 8}
    assert s.links == 0
    assert all(G.degree(f"p{p}/leaf0") == 16 for p in range(8))
    # still one fabric: planes meet inside the servers (NVLink)
    assert nx.is_connected(G)


def test_mpft_1000_gpus():
    # 125 nodes per plane: L = ceil(125/32) = 4 leaves, 128 uplinks -> S = 2 spines
    # (64 * 2 >= 128), 16 cables per pair. 8 planes: 48 switches, 8 * 128 = 1024 links.
    G = multi_plane_fat_tree(gpus=1000)
    s = summarize(G)
    assert s.switches_by_tier == {"leaf": 32, "spine": 16}
    assert s.links == 1024
    assert G.edges["p7/leaf3", "p7/spine1"]["links"] == 16


def test_mpft_places_nic_j_on_plane_j():
    # node n NIC j -> p{j}/leaf{n // 32}
    G = multi_plane_fat_tree(gpus=1000)
    assert leaf_of(G, "node0/nic0") == "p0/leaf0"
    assert leaf_of(G, "node31/nic5") == "p5/leaf0"
    assert leaf_of(G, "node32/nic5") == "p5/leaf1"
    assert leaf_of(G, "node124/nic7") == "p7/leaf3"
    assert G.nodes["p5/spine1"]["plane"] == 5
    assert G.nodes["p5/spine1"]["rail"] == -1


def test_mpft_with_four_nics_per_node():
    # 4 planes; each holds 2048 nodes, so 2048 * 8 = 16384 GPUs with 8 GPUs per node.
    assert max_gpus("mpft", nics_per_node=4) == 16384
    s = summarize(multi_plane_fat_tree(server=ServerSpec(nics=4), gpus=1024))
    # 128 nodes per plane: 4 leaves, 2 spines per plane
    assert s.planes == 4
    assert s.switches_by_tier == {"leaf": 16, "spine": 8}


def test_mpft_oversubscribed():
    # r = 3: 48 nodes per leaf, 64 leaves and 16 spines per plane, 3072 nodes: 24576 GPUs.
    assert max_gpus("mpft", oversubscription=3) == 3072 * 8
    # 1000 GPUs, 125 per plane: L = ceil(125/48) = 3, 48 uplinks -> S = 1 (64 >= 48),
    # 16 cables per leaf-spine pair.
    G = multi_plane_fat_tree(gpus=1000, oversubscription=3)
    assert summarize(G).switches_by_tier == {"leaf": 24, "spine": 8}
    assert G.edges["p0/leaf2", "p0/spine0"]["links"] == 16


def test_mpft_refuses_more_than_16384_gpus():
    with pytest.raises(
        SpecError,
        match=r"a two-layer plane of 64-port switches holds at most 2048 endpoints; "
        r"8 planes hold at most 16384 GPUs; asked for 20000",
    ):
        build("mpft", gpus=20000)


# --- MRFT -----------------------------------------------------------------------------------


def test_mrft_full_64_port():
    # 8 rails share k = 64 leaf slots of the spine layer: 8 leaves per rail of 32 nodes ->
    # 256 nodes, 2048 GPUs (the 2,048-GPU MRFT of [ISCA25] §5.1.2); 32 spines, 2048 links.
    G = multi_rail_fat_tree()
    s = summarize(G)
    assert s.family == "mrft"
    assert (s.gpus, s.nodes, s.endpoints) == (2048, 256, 2048)
    assert s.switches_by_tier == {"leaf": 64, "spine": 32}
    assert s.links == 2048
    assert s.planes == 1
    rails = [G.nodes[f"rail{r}/leaf{j}"]["rail"] for r in range(8) for j in range(8)]
    assert rails == [r for r in range(8) for _ in range(8)]


def test_mrft_rails_share_the_spines():
    G = multi_rail_fat_tree()
    for j in range(32):
        leaves = [v for v in G[f"spine{j}"] if G.nodes[v]["kind"] == "leaf"]
        assert len(leaves) == 64
        assert {G.nodes[v]["rail"] for v in leaves} == set(range(8))
        assert G.nodes[f"spine{j}"]["rail"] == -1
    assert nx.is_connected(switch_graph(G))


def test_mrft_places_nic_j_on_rail_j():
    G = multi_rail_fat_tree(gpus=1000)
    assert leaf_of(G, "node0/nic3") == "rail3/leaf0"
    assert leaf_of(G, "node31/nic3") == "rail3/leaf0"
    assert leaf_of(G, "node32/nic3") == "rail3/leaf1"
    assert leaf_of(G, "node124/nic7") == "rail7/leaf3"


def test_mrft_128_gpus():
    # 16 nodes: one leaf per rail, 8 leaves, 8 * 32 = 256 uplinks -> S = 4 (64 * 4 >= 256),
    # 8 cables per leaf-spine pair; 12 switches, 256 links.
    G = multi_rail_fat_tree(gpus=128)
    s = summarize(G)
    assert s.switches_by_tier == {"leaf": 8, "spine": 4}
    assert s.links == 256
    assert G.edges["rail0/leaf0", "spine3"]["links"] == 8


def test_mrft_1000_gpus():
    # 125 nodes: ceil(125/32) = 4 leaves per rail, 32 leaves, 1024 uplinks -> S = 16,
    # 2 cables per pair; 48 switches, 1024 links.
    s = summarize(multi_rail_fat_tree(gpus=1000))
    assert s.switches_by_tier == {"leaf": 32, "spine": 16}
    assert s.links == 1024


def test_mrft_six_rails_spines_fall_back_to_u():
    # 6 GPUs, 6 NICs per node, 64 ports: 64 // 6 = 10 leaves per rail, 60 leaves,
    # 10 * 32 = 320 nodes = 1920 GPUs. 60 * 32 = 1920 uplinks need S >= 30; the smallest divisor
    # of 32 that is >= 30 is 32: 32 spines, one cable each, 60 of 64 spine ports used.
    assert max_gpus("mrft", gpus_per_node=6, nics_per_node=6) == 1920
    G = multi_rail_fat_tree(server=ServerSpec(gpus=6, nics=6))
    s = summarize(G)
    assert s.switches_by_tier == {"leaf": 60, "spine": 32}
    assert s.links == 1920
    assert G.degree("spine0") == 60


def test_mrft_one_rail():
    # One NIC per node: one rail; up to 64 nodes on one leaf, no spine.
    G = multi_rail_fat_tree(server=ServerSpec(nics=1), gpus=512)
    assert summarize(G).switches_by_tier == {"leaf": 1}
    assert G.nodes["rail0/leaf0"]["rail"] == 0
    # 65 nodes: ceil(65/32) = 3 leaves, 96 uplinks -> 2 spines
    assert summarize(multi_rail_fat_tree(server=ServerSpec(nics=1), gpus=520)).switches_by_tier == {
        "leaf": 3,
        "spine": 2,
    }
    # full: 64 leaves of 32 nodes = 2048 nodes of 8 GPUs
    assert max_gpus("mrft", nics_per_node=1) == 16384


def test_mrft_refuses_more_than_it_holds():
    with pytest.raises(
        SpecError,
        match=r"a multi-rail fat tree of 64-port switches with 8 rails holds at most 8 leaves "
        r"of 32 down ports per rail.*2048 GPUs; asked for 4096 GPUs",
    ):
        multi_rail_fat_tree(gpus=4096)


def test_mrft_with_more_rails_than_ports():
    # 4-port spines reach 4 leaves: 8 rails do not fit.
    assert max_gpus("mrft", switch_ports=4) == 0
    with pytest.raises(SpecError, match=r"reaches at most 4 leaves, fewer than its 8 rails"):
        multi_rail_fat_tree(SwitchSpec(4))
    with pytest.raises(SpecError, match=r"fewer than its 8 rails.*asked for 8 GPUs"):
        multi_rail_fat_tree(SwitchSpec(4), gpus=8)


def test_mpft_and_mrft_full_build_is_connected():
    for G in (multi_plane_fat_tree(), multi_rail_fat_tree()):
        assert nx.is_connected(G)
