"""Three-layer MRFT and MPFT (``tiers=3``, topo.builders.pods) and the rail-optimised counts of
NVIDIA's DGX SuperPOD reference architectures.

Expected values: the k-ary fat tree's closed forms (Al-Fares et al., SIGCOMM 2008: k pods,
(k/2)^2 cores, 5k^2/4 switches, k^3/4 endpoints, k^3/2 switch-switch cables), and the SuperPOD
tables, copied here from NVIDIA's documents:

- DGX H100 SuperPOD (RA-11333-001, compute fabric, 31 DGX nodes per SU, one slot for UFM):
  1-4 SUs = 248 / 504 / 760 / 1,016 GPUs on 8/16/24/32 leaves and 4/8/16/16 spines;
- DGX B200 SuperPOD ("DGX SuperPOD Architecture", docs.nvidia.com/dgx-superpod/
  reference-architecture-scalable-infrastructure-b200): 32 nodes per SU, QM9700 switches;
  SUs, GPUs, leaves, spines, cores, node-leaf, leaf-spine, spine-core cables:
  2: 512, 16, 8, -, 512, 512, -; 4: 1,024, 32, 16; 8: 2,048, 64, 32;
  16: 4,096, 128, 128, 64, 4,096 x 3; 32: 8,192, 256, 256, 128, 8,192 x 3;
  64: 16,384, 512, 512, 256, 16,384 x 3;
- DGX B300 SuperPOD with XDR (Q3400, 144 ports of 800G; 72 nodes per SU): 1, 2, 4, 8, 18 SUs
  on 8/16/32/64/144 leaves and 4/8/18/36/72 spines; 18 SUs are 1,296 nodes and 10,368
  node-leaf cables (the table's GPU column says 9,216, which 1,296 x 8 contradicts).
"""

from __future__ import annotations

import networkx as nx
import pytest

from topo.builders import build, max_gpus
from topo.builders.rails import multi_plane_fat_tree, multi_rail_fat_tree
from topo.errors import SpecError
from topo.fabric import is_switch, summarize
from topo.spec import FabricSpec, ServerSpec, SwitchSpec


def cables_between(G, lower: str, upper: str) -> int:
    return sum(
        d["links"]
        for u, v, d in G.edges(data=True)
        if {G.nodes[u]["kind"], G.nodes[v]["kind"]} == {lower, upper}
    )


@pytest.mark.parametrize(
    "gpus, leaves, spines", [(248, 8, 4), (504, 16, 8), (760, 24, 16), (1016, 32, 16)]
)
def test_dgx_h100_superpod_1_to_4_su_two_layers(gpus, leaves, spines):
    s = summarize(build("mrft", gpus=gpus))
    assert s.switches_by_tier == {"leaf": leaves, "spine": spines}


@pytest.mark.parametrize(
    "su, leaves, spines, cores",
    [
        (16, 128, 128, 64),
        (32, 256, 256, 128),
        pytest.param(64, 512, 512, 256, marks=pytest.mark.slow),  # 16,384 GPUs
    ],
)
def test_dgx_b200_superpod_three_layers(su, leaves, spines, cores):
    gpus = su * 32 * 8
    G = build("mrft", gpus=gpus, tiers=3)
    s = summarize(G)
    assert s.switches_by_tier == {"leaf": leaves, "spine": spines, "core": cores}
    assert cables_between(G, "nic", "leaf") == gpus
    assert cables_between(G, "leaf", "spine") == gpus
    assert cables_between(G, "spine", "core") == gpus


@pytest.mark.parametrize("su, leaves, spines", [(2, 16, 8), (4, 32, 16), (8, 64, 32)])
def test_dgx_b200_superpod_two_layers(su, leaves, spines):
    assert summarize(build("mrft", gpus=su * 256)).switches_by_tier == {
        "leaf": leaves,
        "spine": spines,
    }


@pytest.mark.parametrize(
    "nodes, leaves, spines",
    [(72, 8, 4), (144, 16, 8), (288, 32, 18), (576, 64, 36), (1296, 144, 72)],
)
def test_dgx_b300_xdr_superpod_on_144_port_switches(nodes, leaves, spines):
    G = build("mrft", switch_ports=144, link_gbps=800, gpus=nodes * 8)
    s = summarize(G)
    assert s.switches_by_tier == {"leaf": leaves, "spine": spines}
    assert cables_between(G, "nic", "leaf") == cables_between(G, "leaf", "spine") == nodes * 8


def test_b300_xdr_superpod_of_18_sus_is_the_two_layer_ceiling():
    # 144 ports, 8 rails: 18 leaves of 72 down ports per rail.
    assert max_gpus("mrft", switch_ports=144) == 1296 * 8


@pytest.mark.parametrize("k", [4, 8, 16])
def test_mpft_three_layers_closed_form_per_plane(k):
    planes = 4
    G = multi_plane_fat_tree(SwitchSpec(k), ServerSpec(gpus=4, nics=planes), tiers=3)
    s = summarize(G)
    assert s.nodes == k**3 // 4
    assert s.switches == planes * 5 * k * k // 4
    assert s.switches_by_tier == {
        "leaf": planes * k * k // 2,
        "spine": planes * k * k // 2,
        "core": planes * k * k // 4,
    }
    assert s.links == planes * k**3 // 2
    switches = G.subgraph(v for v in G if is_switch(G, v))
    assert nx.number_connected_components(switches) == planes


def test_mpft_three_layers_64_ports_is_524288_gpus_max():
    # 8 planes of a 64-port k-ary fat tree: 8 * 64^3/4 endpoints, 8 * 5 * 64^2 / 4 switches.
    assert max_gpus("mpft", tiers=3) == 8 * 64**3 // 4 == 524288
    spec = FabricSpec("mpft", tiers=3)
    assert spec.options == {"tiers": 3}


@pytest.mark.parametrize("k", [8, 16])
def test_mrft_three_layers_full_closed_form(k):
    # k pods over the rails (k // R each): k^3/4 endpoints, 5k^2/4 switches, as a k-ary fat tree.
    rails = 4
    s = summarize(multi_rail_fat_tree(SwitchSpec(k), ServerSpec(gpus=4, nics=rails), tiers=3))
    assert s.endpoints == k**3 // 4
    assert s.switches == 5 * k * k // 4
    assert s.switches_by_tier["core"] == k * k // 4
    assert s.links == k**3 // 2


def test_mrft_three_layers_nic_j_on_rail_j_and_pods_of_one_rail():
    G = build("mrft", gpus=4096, tiers=3)
    leaf = next(v for v in G["node100/nic5"] if G.nodes[v]["kind"] == "leaf")
    # node 100 of 32-port leaves: leaf 3 of rail 5, pod 0 (16 leaves per pod at 16 SUs).
    assert leaf == "rail5/pod0/leaf3"
    assert G.nodes[leaf]["rail"] == 5
    spines = {v for v in G[leaf] if G.nodes[v]["kind"] == "spine"}
    assert spines == {f"rail5/pod0/spine{i}" for i in range(16)}
    assert all(G.edges[leaf, v]["links"] == 2 for v in spines)


def test_three_layer_mpft_all_to_all_is_the_nic_line_rate():
    # 8-port switches, 2 planes, 128 servers of 2 GPUs (a full 8-ary fat tree per plane, which
    # is non-blocking): each server sends 2 GPUs x 254 remote GPUs x lambda through its 2 NICs
    # of 50 GB/s (400 Gb/s), so lambda = 50/254 GB/s; the NICs are the bottleneck.
    from topo.flow import alltoall_bandwidth

    G = build("mpft", switch_ports=8, gpus=256, gpus_per_node=2, nics_per_node=2, tiers=3)
    assert summarize(G).switches_by_tier == {"leaf": 64, "spine": 64, "core": 32}
    r = alltoall_bandwidth(G)
    assert r.pair_rate_Bps == pytest.approx(50e9 / 254, rel=1e-6)
    assert r.exact
    # every server's cut is met: its NIC cables are full both ways in every optimal flow
    assert set(r.bottleneck_tiers) == {"nic->leaf", "leaf->nic"}


def test_tiers_refused_outside_2_or_3_and_for_other_families():
    with pytest.raises(SpecError) as e:
        FabricSpec("mpft", tiers=4)
    assert e.value.param == "tiers"
    with pytest.raises(SpecError) as e:
        FabricSpec.from_options("ft2", tiers=3)
    assert e.value.param == "tiers"


def test_mrft_three_layers_refuses_past_k_pods():
    with pytest.raises(SpecError, match="8 pods of 32 leaves"):
        build("mrft", tiers=3, gpus=65536 + 8)


@pytest.mark.parametrize(
    "family, gpus, k",
    [
        ("mrft", 4096, 64),
        ("mrft", 2000, 64),
        pytest.param("mrft", 8192 * 8, 64, marks=pytest.mark.slow),  # 65,536 GPUs
        pytest.param("mpft", 131072, 64, marks=pytest.mark.slow),
        ("mpft", 24, 8),
        ("mpft", 8 * 1000, 16),
        ("mrft", 8 * 100, 16),
    ],
)
def test_pod_counts_agree_with_the_built_graph(family, gpus, k):
    from topo.builders.pods import pod_counts

    spec = FabricSpec(family, SwitchSpec(k), gpus=gpus, tiers=3)
    nodes = gpus // 8
    groups, planes = (8, 1) if family == "mrft" else (1, 8)
    leaves, spines, cores, cables = pod_counts(nodes, groups, spec)
    s = summarize(build(spec))
    got = {"leaf": planes * leaves, "spine": planes * spines}
    if cores:
        got["core"] = planes * cores
    assert s.switches_by_tier == got
    assert s.links == planes * cables


@pytest.mark.slow
def test_full_three_layer_mpft_all_to_all_is_exact_at_the_nic_rate():
    # 524,288 GPUs, 65,536 servers of 8 GPUs and 8 NICs of 50 GB/s on 8 non-blocking planes:
    # each server sends 8 * (n - 8) * lambda through 8 * 50 GB/s -> lambda = 50/(n - 8) GB/s,
    # busbw = lambda * (n - 1).
    from topo.flow import alltoall_bandwidth

    G = build("mpft", tiers=3)
    n = 524_288
    r = alltoall_bandwidth(G)
    assert r.exact
    assert r.alltoall_busbw_Bps == pytest.approx(50e9 * (n - 1) / (n - 8), rel=1e-6)


def test_dgx_b200_superpod_example_spec():
    from pathlib import Path

    from topo.spec import load_spec

    path = Path(__file__).resolve().parents[2] / "examples" / "dgx-b200-superpod-16su.toml"
    s = summarize(build(load_spec(path)))
    assert s.switches_by_tier == {"leaf": 128, "spine": 128, "core": 64}
    assert s.links == 2 * 4096
