"""Two- and three-layer fat trees (topo.builders.clos).

Expected counts come from the closed forms of folded Clos networks (two layers of k ports:
k leaves, k/2 spines, k^2/2 endpoints; k-ary fat tree: 5k^2/4 switches, k^3/4 endpoints,
Al-Fares et al. 2008), the DeepSeek-V3 hardware report (ISCA'25, Table 3) and the sizing rules
of docs/builders.md, worked by hand in each test.
"""

from __future__ import annotations

import pytest

from topo.builders import build, max_gpus
from topo.builders.clos import three_layer_fat_tree, two_layer_fat_tree
from topo.errors import SpecError
from topo.fabric import summarize
from topo.spec import ServerSpec, SwitchSpec


def fabric_links(G, a, b):
    """Cables between switches a and b (0 if not joined)."""
    return G.edges[a, b]["links"] if G.has_edge(a, b) else 0


def leaf_of(G, nic):
    """The switch NIC `nic` is cabled to."""
    (leaf,) = (v for v in G[nic] if G.edges[nic, v]["kind"] == "endpoint")
    return leaf


# --- two layers -----------------------------------------------------------------------------


def test_ft2_full_64_port_matches_isca25_table3():
    # [ISCA25] Table 3, FT2: 2,048 endpoints, 96 switches, 2,048 links.
    # Closed form: k = 64 leaves, k/2 = 32 spines, k^2/2 = 2048 endpoints, 64 * 32 cables.
    s = summarize(two_layer_fat_tree())
    assert s.family == "ft2"
    assert s.endpoints == 2048
    assert s.switches == 96
    assert s.switches_by_tier == {"leaf": 64, "spine": 32}
    assert s.links == 2048
    assert s.endpoint_links == 2048
    assert (s.gpus, s.nodes, s.planes, s.max_gpus) == (2048, 256, 1, 2048)


@pytest.mark.parametrize("k", [4, 6, 8, 16, 32])
def test_ft2_full_closed_form(k):
    # One GPU and one NIC per node, so GPUs = endpoints = k^2/2.
    G = two_layer_fat_tree(SwitchSpec(k), ServerSpec(gpus=1, nics=1))
    s = summarize(G)
    assert s.switches_by_tier == {"leaf": k, "spine": k // 2}
    assert s.endpoints == s.gpus == k * k // 2
    assert s.links == k * k // 2
    # every leaf-spine pair joined by exactly one cable
    assert all(
        G.edges[f"leaf{i}", f"spine{j}"]["links"] == 1 for i in range(k) for j in range(k // 2)
    )


def test_ft2_oversubscribed_3_to_1():
    # 64 ports, r = 3: u = 64/4 = 16 up, d = 48 down; 64 leaves * 48 = 3072 endpoints,
    # u = 16 spines of 64 ports, one cable per leaf-spine pair: 64 * 16 = 1024 links.
    s = summarize(two_layer_fat_tree(oversubscription=3))
    assert s.endpoints == s.gpus == 3072
    assert s.switches_by_tier == {"leaf": 64, "spine": 16}
    assert s.links == 1024
    assert max_gpus("ft2", oversubscription=3) == 3072


def test_ft2_oversubscribed_7_to_1():
    # r = 7: u = 8, d = 56; 64 * 56 = 3584 endpoints = 448 nodes of 8; 8 spines; 512 links.
    s = summarize(two_layer_fat_tree(oversubscription=7))
    assert (s.endpoints, s.nodes) == (3584, 448)
    assert s.switches_by_tier == {"leaf": 64, "spine": 8}
    assert s.links == 512


def test_ft2_128_gpus():
    # 128 endpoints > 64: L = ceil(128/32) = 4 leaves, 4 * 32 = 128 uplinks;
    # S = smallest divisor of 32 with 64 S >= 128 -> 2 spines, 32/2 = 16 cables per pair.
    G = two_layer_fat_tree(gpus=128)
    s = summarize(G)
    assert s.switches_by_tier == {"leaf": 4, "spine": 2}
    assert s.links == 128
    assert {d["links"] for _, _, d in G.edges(data=True) if d["kind"] == "fabric"} == {16}
    assert G.graph["name"] == "ft2-128"
    assert G.graph["max_gpus"] == 2048


def test_ft2_1000_gpus():
    # 125 nodes, 1000 endpoints: L = ceil(1000/32) = 32; 32 * 32 = 1024 uplinks;
    # S = smallest divisor of 32 with 64 S >= 1024 -> 16; 2 cables per pair.
    G = two_layer_fat_tree(gpus=1000)
    s = summarize(G)
    assert (s.gpus, s.nodes, s.endpoints) == (1000, 125, 1000)
    assert s.switches_by_tier == {"leaf": 32, "spine": 16}
    assert s.links == 1024
    assert fabric_links(G, "leaf31", "spine15") == 2
    # the last leaf holds 1000 - 31 * 32 = 8 endpoints
    assert sum(1 for v in G["leaf31"] if G.nodes[v]["kind"] == "nic") == 8


def test_ft2_1000_gpus_oversubscribed_3():
    # d = 48, u = 16: L = ceil(1000/48) = 21; 21 * 16 = 336 uplinks, 336/64 = 5.25 -> S >= 6;
    # smallest divisor of 16 that is >= 6 is 8; 16/8 = 2 cables per pair.
    s = summarize(two_layer_fat_tree(gpus=1000, oversubscription=3))
    assert s.switches_by_tier == {"leaf": 21, "spine": 8}
    assert s.links == 21 * 16


def test_ft2_that_fits_one_switch_is_one_leaf():
    # 64 endpoints <= 64 ports: one leaf, all 64 ports down, no spine.
    G = two_layer_fat_tree(gpus=64)
    s = summarize(G)
    assert s.switches_by_tier == {"leaf": 1}
    assert s.links == 0
    assert G.degree("leaf0") == 64


def test_ft2_72_gpus_needs_spines():
    # 72 > 64: L = ceil(72/32) = 3, 96 uplinks -> S = 2 (64 * 2 >= 96), 16 cables per pair.
    s = summarize(two_layer_fat_tree(gpus=72))
    assert s.switches_by_tier == {"leaf": 3, "spine": 2}
    assert s.links == 96


def test_ft2_places_nics_consecutively():
    # endpoint e = 8 n + j on leaf e // 32: node 3 NIC 7 is e = 31 -> leaf0; node 4 NIC 0 is
    # e = 32 -> leaf1; node 124 NIC 7 is e = 999 -> leaf31.
    G = two_layer_fat_tree(gpus=1000)
    assert leaf_of(G, "node3/nic7") == "leaf0"
    assert leaf_of(G, "node4/nic0") == "leaf1"
    assert leaf_of(G, "node124/nic7") == "leaf31"
    # 4 NICs per node: e = 4 n + j, so node 8 NIC 0 is e = 32 -> leaf1
    H = two_layer_fat_tree(server=ServerSpec(nics=4), gpus=256)
    assert leaf_of(H, "node7/nic3") == "leaf0"
    assert leaf_of(H, "node8/nic0") == "leaf1"


def test_ft2_max_gpus_counts_whole_nodes():
    # 64 ports: 2048 endpoints. 8 GPUs with 2 NICs: 1024 nodes -> 8192 GPUs.
    assert max_gpus("ft2", gpus_per_node=8, nics_per_node=2) == 8192
    # 6-port switches, 3 NICs per node (gpus_per_node 3): 6 * 3 = 18 endpoints = 6 nodes
    assert max_gpus("ft2", switch_ports=6, gpus_per_node=3, nics_per_node=3) == 18
    # 4 ports: 8 endpoints, NICs in whole nodes of 3 -> 2 nodes (6 endpoints used)
    assert max_gpus("ft2", switch_ports=4, gpus_per_node=3, nics_per_node=3) == 6


def test_ft2_refuses_more_than_it_holds():
    with pytest.raises(
        SpecError,
        match=r"a two-layer fat tree of 64-port switches holds at most 2048 endpoints.*"
        r"2048 GPUs; asked for 4096 GPUs",
    ):
        two_layer_fat_tree(gpus=4096)
    with pytest.raises(SpecError, match=r"at oversubscription 3 holds at most 3072 endpoints"):
        build("ft2", gpus=3080, oversubscription=3)


# --- three layers ---------------------------------------------------------------------------


@pytest.mark.slow
def test_ft3_full_64_port_matches_isca25_table3():
    # [ISCA25] Table 3, FT3: 65,536 endpoints, 5,120 switches, 131,072 links.
    # Closed form (Al-Fares 2008), k = 64: k^3/4 = 65536 endpoints; k pods * (k/2 + k/2)
    # = 4096 pod switches + (k/2)^2 = 1024 cores = 5k^2/4 = 5120; cables: k^3/4 leaf-spine
    # + k^3/4 spine-core = 131072.
    s = summarize(three_layer_fat_tree())
    assert s.endpoints == s.gpus == 65536
    assert s.switches == 5120
    assert s.switches_by_tier == {"leaf": 2048, "spine": 2048, "core": 1024}
    assert s.links == 131072
    assert s.nodes == 8192


@pytest.mark.parametrize("k", [4, 8, 16])
def test_ft3_full_closed_form(k):
    G = three_layer_fat_tree(SwitchSpec(k), ServerSpec(gpus=2, nics=2))
    s = summarize(G)
    half = k // 2
    assert s.switches_by_tier == {"leaf": k * half, "spine": k * half, "core": half * half}
    assert s.switches == 5 * k * k // 4
    assert s.endpoints == s.gpus == k**3 // 4
    assert s.links == k**3 // 2
    # full size: every pod spine joined to each of its k/2 cores by one cable
    assert all(d["links"] == 1 for _, _, d in G.edges(data=True) if d["kind"] == "fabric")
    # spine i of every pod reaches cores i*k/2 .. i*k/2 + k/2 - 1 (group i)
    cores = {v for v in G["pod0/spine1"] if G.nodes[v]["kind"] == "core"}
    assert cores == {f"core{half + m}" for m in range(half)}


def test_ft3_1000_gpus_is_one_pod_without_cores():
    # 1000 endpoints <= (64/2)^2 = 1024: one pod of 32 leaves and 32 spines, no core layer;
    # leaf-spine all to all by single cables: 32 * 32 = 1024 links.
    s = summarize(three_layer_fat_tree(gpus=1000))
    assert s.switches_by_tier == {"leaf": 32, "spine": 32}
    assert s.links == 1024


def test_ft3_2048_gpus_is_two_pods():
    # P = 2 pods; cores per group c = smallest divisor of 32 with 64 c >= 2 * 32 -> 1;
    # 32 groups of 1 core; each pod spine joined to its core by 32 cables.
    # links: 2 * 1024 leaf-spine + 2 * 32 * 32 spine-core = 4096; switches 2 * 64 + 32 = 160.
    G = three_layer_fat_tree(gpus=2048)
    s = summarize(G)
    assert s.switches_by_tier == {"leaf": 64, "spine": 64, "core": 32}
    assert s.links == 4096
    assert G.edges["pod1/spine5", "core5"]["links"] == 32


def test_ft3_3000_gpus_is_three_pods():
    # 3000 endpoints: P = ceil(3000/1024) = 3; c >= 3 * 32 / 64 = 1.5 -> 2 (divides 32);
    # 32 groups of 2 = 64 cores, 16 cables per spine-core pair; a core uses 3 * 16 = 48 ports.
    # links: 3 * 1024 + 3 * 32 * 32 = 6144; switches 3 * 64 + 64 = 256.
    G = three_layer_fat_tree(gpus=3000)
    s = summarize(G)
    assert s.switches_by_tier == {"leaf": 96, "spine": 96, "core": 64}
    assert s.links == 6144
    assert G.edges["pod2/spine0", "core1"]["links"] == 16
    assert G.degree("core0") == 3


def test_ft3_5000_gpus_rounds_core_group_up_to_a_divisor():
    # P = ceil(5000/1024) = 5; c >= 5 * 32 / 64 = 2.5 -> 3, but 3 does not divide 32 -> 4;
    # 32 * 4 = 128 cores, 8 cables per spine-core pair, 5 * 8 = 40 ports used per core.
    G = three_layer_fat_tree(gpus=5000)
    s = summarize(G)
    assert s.switches_by_tier == {"leaf": 160, "spine": 160, "core": 128}
    assert G.edges["pod4/spine31", "core127"]["links"] == 8


def test_ft3_half_size():
    # 32768 GPUs: P = 32; c >= 32 * 32 / 64 = 16 -> 16 (divides 32): 512 cores, 2 cables per
    # pair; links 32 * 1024 + 32 * 32 * 32 = 65536; switches 32 * 64 + 512 = 2560.
    s = summarize(three_layer_fat_tree(gpus=32768))
    assert s.switches_by_tier == {"leaf": 1024, "spine": 1024, "core": 512}
    assert s.links == 65536


def test_ft3_that_fits_one_switch_is_one_leaf():
    G = three_layer_fat_tree(gpus=64)
    assert summarize(G).switches_by_tier == {"leaf": 1}
    assert G.degree("pod0/leaf0") == 64


def test_ft3_places_nics_consecutively():
    # e = 8 n + j -> pod e // 1024, leaf (e mod 1024) // 32.
    G = three_layer_fat_tree(gpus=3000)
    assert leaf_of(G, "node0/nic0") == "pod0/leaf0"
    assert leaf_of(G, "node127/nic7") == "pod0/leaf31"  # e = 1023
    assert leaf_of(G, "node128/nic0") == "pod1/leaf0"  # e = 1024
    assert leaf_of(G, "node374/nic7") == "pod2/leaf29"  # e = 2999: 951 // 32 = 29


def test_ft3_refuses_oversubscription():
    with pytest.raises(SpecError, match=r"oversubscription must be 1 for ft3"):
        three_layer_fat_tree(oversubscription=3)
    with pytest.raises(SpecError, match=r"oversubscription must be 1 for ft3"):
        max_gpus("ft3", oversubscription=3)


def test_ft3_refuses_more_than_it_holds():
    with pytest.raises(
        SpecError,
        match=r"a three-layer fat tree of 8-port switches holds at most 128 endpoints.*"
        r"asked for 136 GPUs",
    ):
        build("ft3", switch_ports=8, gpus=136)


def test_ft3_max_gpus():
    assert max_gpus("ft3") == 65536
    assert max_gpus("ft3", switch_ports=8) == 128
    assert max_gpus("ft3", switch_ports=8, gpus_per_node=4, nics_per_node=1) == 512
