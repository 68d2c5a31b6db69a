"""Tests of topo.plot.layout: rows, planes and rails as blocks, positions, colours, and the
marker and line sets of the detailed view (one marker per device)."""

from __future__ import annotations

from collections import Counter

import networkx as nx

from plot._fabrics import markers_by_row
from topo.plot import VIEW_DETAILED
from topo.plot.fabric import fabric_data


def test_detailed_view_has_one_marker_per_device_in_its_row(mpft: nx.Graph) -> None:
    data = fabric_data(mpft, max_devices=2000)
    assert data.view == VIEW_DETAILED and not data.aggregated
    assert markers_by_row(data) == {"NVSwitch": 4, "GPU": 8, "NIC": 8, "leaf": 4, "spine": 4}
    # Rows bottom to top: NVSwitch, GPU, NIC, leaf, spine.
    assert [label for _, label in data.rows] == ["NVSwitch", "GPU", "NIC", "leaf", "spine"]
    assert data.pos["node0/gpu0"][1] < data.pos["node0/nic0"][1] < data.pos["p0/leaf0"][1]
    assert data.pos["p0/leaf0"][1] < data.pos["p0/spine0"][1]
    assert len(data.pos) == 28


def test_planes_are_coloured_apart_and_drawn_as_separate_blocks(mpft: nx.Graph) -> None:
    data = fabric_data(mpft, max_devices=2000)
    assert data.colour_by == "plane"
    colours: dict[str, set[str]] = {}
    xs: dict[str, list[float]] = {}
    for ms in data.markers:
        colours.setdefault(ms.group, set()).add(ms.colour)
        xs.setdefault(ms.group, []).extend(ms.x)
    assert set(colours) == {"plane 0", "plane 1", "shared"}
    assert all(len(c) == 1 for c in colours.values())
    assert len({c for cs in colours.values() for c in cs}) == 3
    # GPU i and NIC i of every node are on plane i; NVSwitches are shared.
    plane_of = {v: ms.group for ms in data.markers for v in ms.ids}
    assert plane_of["node3/gpu1"] == plane_of["node3/nic1"] == plane_of["p1/spine0"] == "plane 1"
    assert plane_of["node3/nvswitch"] == "shared"
    assert max(xs["plane 0"]) < min(xs["plane 1"])
    assert [b.label for b in data.blocks] == ["plane 0", "plane 1"]
    assert data.blocks[0].x1 < data.blocks[1].x0


def test_nics_sit_under_their_leaf_and_gpus_under_their_nic(mpft: nx.Graph) -> None:
    pos = fabric_data(mpft, max_devices=2000).pos
    for n in range(4):
        assert pos[f"node{n}/gpu1"][0] == pos[f"node{n}/nic1"][0]
    # p0/leaf0 serves nodes 0 and 1: its NICs lie on either side of it.
    assert pos["node0/nic0"][0] < pos["p0/leaf0"][0] < pos["node1/nic0"][0] < pos["p0/leaf1"][0]


def test_edge_segments_are_the_graph_edges(mpft: nx.Graph) -> None:
    data = fabric_data(mpft, max_devices=2000)
    assert sum(es.n_edges for es in data.edges) == mpft.number_of_edges() == 32
    by_kind = Counter(es.kind for es in data.edges for _ in es.pairs)
    assert by_kind == {"nvlink": 8, "pcie": 8, "endpoint": 8, "fabric": 8}
    drawn = {frozenset(p) for es in data.edges for p in es.pairs}
    assert drawn == {frozenset((u, v)) for u, v in mpft.edges}
    for es in data.edges:
        assert len(es.x) == len(es.y) == 3 * es.n_edges
        assert es.x[2::3] == (None,) * es.n_edges
        for k, (u, v) in enumerate(es.pairs):
            assert (es.x[3 * k], es.y[3 * k]) == data.pos[u]
            assert (es.x[3 * k + 1], es.y[3 * k + 1]) == data.pos[v]
    # One trace per plane and edge kind, NVLink on its own: 2 planes * 3 kinds + 1.
    assert len(data.edges) == 7


def test_single_plane_fabric_is_coloured_by_kind(ft2: nx.Graph) -> None:
    data = fabric_data(ft2, max_devices=2000)
    assert [ms.group for ms in data.markers] == ["NVSwitch", "GPU", "NIC", "leaf", "spine"]
    assert len({ms.colour for ms in data.markers}) == 5
    assert data.blocks == ()
    assert markers_by_row(data) == {"NVSwitch": 2, "GPU": 8, "NIC": 8, "leaf": 2, "spine": 2}


def test_rails_are_coloured_and_shared_spines_span_them(mrft: nx.Graph) -> None:
    data = fabric_data(mrft, max_devices=2000)
    assert data.colour_by == "rail"
    group = {v: ms.group for ms in data.markers for v in ms.ids}
    assert group["rail1/leaf0"] == group["node2/nic1"] == "rail 1"
    assert group["spine0"] == group["spine1"] == "shared"
    # Rail leaf to shared spine cables belong to the rail: 2 leaves * 2 spines per rail.
    fabric = {es.group: es.n_edges for es in data.edges if es.kind == "fabric"}
    assert fabric == {"rail 0": 4, "rail 1": 4}
    x = {v: p[0] for v, p in data.pos.items()}
    assert max(x[f"rail0/leaf{j}"] for j in range(2)) < min(x[f"rail1/leaf{j}"] for j in range(2))
