"""Tests of topo.plot.aggregate: leaf groups and tier groups above ``max_devices``, the cables
summed between them, what a marker stands for, and the vertex-to-marker map."""

from __future__ import annotations

import networkx as nx
import pytest

from plot._fabrics import NVLINK_Bps, edges_of, imported, markers_by_row, member_sums
from topo.builders import build
from topo.plot import VIEW_DETAILED, VIEW_LEAF_GROUPS, VIEW_TIER_GROUPS
from topo.plot.aggregate import aggregate
from topo.plot.fabric import fabric_data
from topo.plot.layout import block_of, colour_by


def test_aggregated_view_starts_above_max_devices(mpft: nx.Graph) -> None:
    assert fabric_data(mpft, max_devices=28).view == VIEW_DETAILED
    assert fabric_data(mpft, max_devices=27).view == VIEW_LEAF_GROUPS


def test_leaf_groups_sum_to_the_device_counts(mpft: nx.Graph) -> None:
    # 4 leaf groups + 2 spine groups = 6 markers <= 10.
    data = fabric_data(mpft, max_devices=10)
    assert data.view == VIEW_LEAF_GROUPS and data.aggregated
    leaf_groups = [m for ms in data.markers if ms.kind == "leaf group" for m in ms.members]
    assert len(leaf_groups) == 4
    # Each leaf serves 2 nodes: 2 NICs and the 2 GPUs behind them.
    assert all(m == {"leaf": 1, "nic": 2, "gpu": 2, "nodes": 2} for m in leaf_groups)
    sums = member_sums(data, "leaf group")
    assert (sums["leaf"], sums["nic"], sums["gpu"]) == (4, 8, 8)
    spine_groups = [m for ms in data.markers if ms.kind == "spine group" for m in ms.members]
    assert spine_groups == [{"spine": 2, "nodes": 0}] * 2
    # Each leaf group has one edge to its plane's spines: 2 cables, 800 Gb/s.
    segments = edges_of(data)
    assert len(segments) == 4
    for _, _, links, cap, hover in segments:
        assert (links, cap) == (2, 100e9)
        assert "2 cables, 800 Gb/s (100 GB/s) per direction in total" in hover
    assert "aggregated" in data.note
    assert "each leaf marker = 1 leaf, 2 NICs, 2 GPUs of 2 nodes" in data.note
    assert "each spine marker = 2 spines" in data.note
    assert {ms.group for ms in data.markers} == {"plane 0", "plane 1"}


def test_tier_groups_when_even_leaf_groups_are_too_many(mpft: nx.Graph) -> None:
    # Leaf groups would need 6 markers > 5: one marker per plane and tier, 4 in all.
    data = fabric_data(mpft, max_devices=5)
    assert data.view == VIEW_TIER_GROUPS
    leaf = [m for ms in data.markers if ms.kind == "leaf group" for m in ms.members]
    assert leaf == [{"leaf": 2, "nic": 4, "gpu": 4, "nodes": 4}] * 2
    segments = edges_of(data)
    # Per plane: 2 leaves x 2 spines x 1 cable = 4 cables, 1,600 Gb/s = 200 GB/s.
    assert [(n, cap) for _, _, n, cap, _ in segments] == [(4, 200e9), (4, 200e9)]
    assert "4 cables, 1,600 Gb/s (200 GB/s)" in segments[0][4]


def test_three_layer_spines_are_grouped_by_pod() -> None:
    # k = 4: 4 pods of 2 leaves and 2 spines, 4 cores, 16 endpoints; 2 GPUs per node gives
    # 16 GPUs + 16 NICs + 8 NVSwitches + 8 + 8 + 4 switches = 60 vertices.
    G = build("ft3", switch_ports=4, gpus_per_node=2, nics_per_node=2)
    assert G.number_of_nodes() == 60
    data = fabric_data(G, max_devices=30)
    assert data.view == VIEW_LEAF_GROUPS
    assert markers_by_row(data) == {"leaf groups": 8, "spine groups": 4, "core groups": 1}
    spine = [m for ms in data.markers if ms.kind == "spine group" for m in ms.members]
    assert spine == [{"spine": 2, "nodes": 0}] * 4
    assert member_sums(data, "core group")["core"] == 4
    assert (member_sums(data, "leaf group")["gpu"], member_sums(data, "leaf group")["nic"]) == (
        16,
        16,
    )
    up = {(u, v): (n, cap) for u, v, n, cap, _ in edges_of(data)}
    # A leaf has one cable to each of its pod's 2 spines; a pod's 2 spines have 2 cables each
    # to the cores.
    assert sorted(up.values()) == [(2, 100e9)] * 8 + [(4, 200e9)] * 4
    hovers = {v: h for ms in data.markers for v, h in zip(ms.ids, ms.hover, strict=True)}
    assert any("pod3/spine* (2 spines)" in h for h in hovers.values())


def test_imported_fabric_aggregates_without_gpus() -> None:
    data = fabric_data(imported(), max_devices=5)
    assert data.view == VIEW_LEAF_GROUPS
    leaf = sorted(
        (m for ms in data.markers if ms.kind == "leaf group" for m in ms.members),
        key=str,
    )
    assert leaf == [{"switch": 1, "nic": 4, "nodes": 2}] * 2
    assert [(n, cap) for _, _, n, cap, _ in edges_of(data)] == [(2, 100e9), (2, 100e9)]


@pytest.mark.parametrize(
    "max_devices, view", [(2000, VIEW_DETAILED), (10, VIEW_LEAF_GROUPS), (5, VIEW_TIER_GROUPS)]
)
def test_marker_of_places_every_drawn_vertex_in_its_marker(
    mpft: nx.Graph, max_devices: int, view: str
) -> None:
    data = fabric_data(mpft, max_devices=max_devices)
    assert data.view == view
    marker_of = data.marker_of
    assert set(marker_of.values()) == {i for ms in data.markers for i in ms.ids}
    # The lines between markers are exactly the graph edges between the vertices they hold.
    ours = {frozenset((marker_of[u], marker_of[v])) for u, v in mpft.edges if u in marker_of}
    assert {p for p in ours if len(p) == 2} == {frozenset(p) for es in data.edges for p in es.pairs}
    if view == VIEW_DETAILED:
        assert marker_of == {str(v): str(v) for v in mpft}
        return
    # NVSwitches are not drawn; a GPU is drawn with its NIC, a NIC with its leaf (node0 and
    # node1 on leaf0 of each plane), a plane's spines together.
    assert not any("nvswitch" in v for v in marker_of)
    assert len(marker_of) == 28 - 4
    assert marker_of["node0/gpu1"] == marker_of["node1/nic1"] == marker_of["p1/leaf0"]
    assert marker_of["p0/spine0"] == marker_of["p0/spine1"] != marker_of["p1/spine0"]
    leaves = {marker_of[f"p{p}/leaf{j}"] for p in range(2) for j in range(2)}
    assert len(leaves) == (4 if view == VIEW_LEAF_GROUPS else 2)


def test_a_fabric_without_switches_is_drawn_whole() -> None:
    # One server of 2 GPUs on an NVSwitch: nothing to group by, so never aggregated.
    G = nx.Graph(family="ft2", name="one-node", planes=1)
    G.add_node("node0/nvswitch", kind="nvswitch", node=0)
    for i in range(2):
        G.add_node(f"node0/gpu{i}", kind="gpu", node=0, index=i)
        G.add_edge(f"node0/gpu{i}", "node0/nvswitch", capacity=NVLINK_Bps, links=1, kind="nvlink")
    data = fabric_data(G, max_devices=1)
    assert data.view == VIEW_DETAILED
    assert markers_by_row(data) == {"NVSwitch": 1, "GPU": 2}


def test_aggregation_returns_the_marker_of_every_drawn_vertex() -> None:
    # FT3 of 4-port switches, 2 GPUs per node: 4 pods of 2 leaves (2 NICs each) and 2 spines,
    # 4 cores. Leaf groups: 8 leaf markers, one spine marker per pod, one core marker.
    G = build("ft3", switch_ports=4, gpus_per_node=2, nics_per_node=2)
    agg = aggregate(G, block_of(G, colour_by(G)), merge_leaves=False)
    assert set(agg.marker_of.values()) == set(agg.items)
    assert len(agg.items) == 8 + 4 + 1
    # Every GPU, NIC and switch is drawn; the 8 NVSwitches are not.
    assert len(agg.marker_of) == 60 - 8
    for v, kind in G.nodes(data="kind"):
        if kind == "nic":
            (leaf,) = [s for s in G[v] if G.nodes[s]["kind"] == "leaf"]
            assert agg.marker_of[v] == agg.marker_of[leaf] == str(leaf)
        elif kind == "gpu":
            (nic,) = [n for n in G[v] if G.nodes[n]["kind"] == "nic"]
            assert agg.marker_of[v] == agg.marker_of[nic]
    spines = {agg.marker_of[f"pod{q}/spine{j}"] for q in range(4) for j in range(2)}
    assert len(spines) == 4 and len({agg.marker_of[f"core{c}"] for c in range(4)}) == 1
    # Merged leaves: one leaf marker per pod.
    merged = aggregate(G, block_of(G, colour_by(G)), merge_leaves=True)
    assert len({merged.marker_of[f"pod{q}/leaf{j}"] for q in range(4) for j in range(2)}) == 4
