"""Tests of topo.plot: the data behind the fabric figure, the figure, and the offline HTML file.

The fabrics are built here by small helpers that follow the schema of ``topo.fabric``; the
expected counts, sums and capacities are worked by hand from their sizes. When
``topo.builders.build`` is available, the built MPFT and MRFT are drawn too.
"""

from __future__ import annotations

import importlib.util
import json
import re
import time
from collections import Counter
from pathlib import Path

import networkx as nx
import pytest

from topo.errors import FormatError, SpecError, TopoError
from topo.fabric import check_schema, summarize
from topo.plot import VIEW_DETAILED, VIEW_LEAF_GROUPS, VIEW_TIER_GROUPS, plot_fabric, write_html
from topo.plot.fabric import fabric_data as _fabric_data
from topo.plot.html import _unescape_json
from topo.plot.layout import FabricData as _FabricData

LINK_Bps = 50e9  # 400 Gb/s
NVLINK_Bps = 400e9
PCIE_Bps = 64e9


# ---------------------------------------------------------------------------------------------
# Small fabrics, built by hand


def two_layer(
    family: str,
    *,
    nodes: int,
    gpus_per_node: int,
    leaves: int,
    spines: int,
    links_per_pair: int = 1,
) -> nx.Graph:
    """A two-layer fabric of ``nodes`` servers with one NIC per GPU.

    ``mpft``: one plane per NIC index, each with ``leaves`` leaves ``p{p}/leaf{j}`` and
    ``spines`` spines ``p{p}/spine{j}``; NIC i of node n goes to ``p{i}/leaf{n // (nodes /
    leaves)}``. ``mrft``: one rail per NIC index with ``leaves`` leaves ``rail{r}/leaf{j}``, all
    rails sharing ``spines`` spines ``spine{j}``. ``ft2``: one plane, NICs fill ``leaf{j}`` in
    order. Every leaf is cabled to every spine of its plane with ``links_per_pair`` cables.
    """
    blocks = gpus_per_node if family in ("mpft", "mrft") else 1
    G = nx.Graph(family=family, name=f"test-{family}", planes=blocks if family == "mpft" else 1)

    def leaf(b: int, j: int) -> str:
        return {"mpft": f"p{b}/leaf{j}", "mrft": f"rail{b}/leaf{j}"}.get(family, f"leaf{j}")

    def spine(b: int, j: int) -> str:
        return f"p{b}/spine{j}" if family == "mpft" else f"spine{j}"

    down = nodes * gpus_per_node // blocks // leaves
    for b in range(blocks):
        plane, rail = (b, -1) if family == "mpft" else (0, b if family == "mrft" else -1)
        for j in range(leaves):
            G.add_node(
                leaf(b, j),
                kind="leaf",
                tier=1,
                plane=plane,
                rail=rail,
                ports=down + spines * links_per_pair,
            )
            for s in range(spines):
                G.add_node(
                    spine(b, s),
                    kind="spine",
                    tier=2,
                    plane=plane,
                    rail=-1,
                    ports=leaves * links_per_pair * (blocks if family == "mrft" else 1),
                )
                G.add_edge(
                    leaf(b, j),
                    spine(b, s),
                    capacity=links_per_pair * LINK_Bps,
                    links=links_per_pair,
                    kind="fabric",
                )
    for n in range(nodes):
        nvswitch = f"node{n}/nvswitch"
        G.add_node(nvswitch, kind="nvswitch", node=n)
        for i in range(gpus_per_node):
            gpu, nic = f"node{n}/gpu{i}", f"node{n}/nic{i}"
            G.add_node(gpu, kind="gpu", node=n, index=i)
            G.add_node(nic, kind="nic", node=n, index=i)
            G.add_edge(gpu, nvswitch, capacity=NVLINK_Bps, links=1, kind="nvlink")
            G.add_edge(gpu, nic, capacity=PCIE_Bps, links=1, kind="pcie")
            if blocks > 1:
                to = leaf(i, n // (nodes // leaves))
            else:
                to = leaf(0, (n * gpus_per_node + i) // down)
            G.add_edge(nic, to, capacity=LINK_Bps, links=1, kind="endpoint")
    check_schema(G)
    return G


def ft3(k: int, gpus_per_node: int) -> nx.Graph:
    """A three-layer fat tree of k-port switches: k pods of k/2 leaves and k/2 spines, (k/2)^2
    cores; spine j of every pod goes to cores j*k/2 ... j*k/2 + k/2 - 1."""
    h = k // 2
    G = nx.Graph(family="ft3", name=f"test-ft3-k{k}", planes=1)
    for c in range(h * h):
        G.add_node(f"core{c}", kind="core", tier=3, plane=0, rail=-1, ports=k)
    for q in range(k):
        for j in range(h):
            G.add_node(f"pod{q}/leaf{j}", kind="leaf", tier=1, plane=0, rail=-1, ports=k)
            G.add_node(f"pod{q}/spine{j}", kind="spine", tier=2, plane=0, rail=-1, ports=k)
        for j in range(h):
            for s in range(h):
                G.add_edge(
                    f"pod{q}/leaf{j}", f"pod{q}/spine{s}", capacity=LINK_Bps, links=1, kind="fabric"
                )
                G.add_edge(
                    f"pod{q}/spine{j}",
                    f"core{j * h + s}",
                    capacity=LINK_Bps,
                    links=1,
                    kind="fabric",
                )
    for n in range(k**3 // 4 // gpus_per_node):
        G.add_node(f"node{n}/nvswitch", kind="nvswitch", node=n)
        for i in range(gpus_per_node):
            e = n * gpus_per_node + i
            gpu, nic = f"node{n}/gpu{i}", f"node{n}/nic{i}"
            G.add_node(gpu, kind="gpu", node=n, index=i)
            G.add_node(nic, kind="nic", node=n, index=i)
            G.add_edge(gpu, f"node{n}/nvswitch", capacity=NVLINK_Bps, links=1, kind="nvlink")
            G.add_edge(gpu, nic, capacity=PCIE_Bps, links=1, kind="pcie")
            G.add_edge(
                nic,
                f"pod{e // (h * h)}/leaf{e % (h * h) // h}",
                capacity=LINK_Bps,
                links=1,
                kind="endpoint",
            )
    check_schema(G)
    return G


def imported() -> nx.Graph:
    """An imported (ibnetdiscover-like) fabric: 4 hosts with a two-port CA, no GPUs, two leaves
    and one spine of kind ``switch``, each leaf cabled to the spine with 2 cables."""
    G = nx.Graph(
        family="ibnetdiscover",
        name="lab",
        planes=1,
        source="lab.txt",
        aggregation_nodes=0,
        link_speeds={"4xNDR": 12},
    )
    for s in range(2):
        G.add_node(
            f"S-leaf{s}",
            kind="switch",
            tier=1,
            plane=0,
            rail=-1,
            ports=40,
            guid=f"0x{s:x}",
            description=f"MF0;leaf{s}",
        )
        G.add_edge(
            f"S-leaf{s}", "S-spine", capacity=2 * LINK_Bps, links=2, kind="fabric", speed="4xNDR"
        )
    G.add_node(
        "S-spine",
        kind="switch",
        tier=2,
        plane=0,
        rail=-1,
        ports=40,
        guid="0x9",
        description="MF0;spine",
    )
    for h in range(4):
        for p in (1, 2):
            nic = f"host{h}/mlx5_0/p{p}"
            G.add_node(
                nic,
                kind="nic",
                node=f"host{h}",
                index=p,
                guid=f"0x{h}{p}",
                description=f"host{h} mlx5_0",
            )
            G.add_edge(
                nic, f"S-leaf{h // 2}", capacity=LINK_Bps, links=1, kind="endpoint", speed="4xNDR"
            )
    check_schema(G)
    return G


@pytest.fixture
def mpft() -> nx.Graph:
    """2 planes; 4 nodes of 2 GPUs; per plane 2 leaves (2 NICs each) and 2 spines.
    8 GPUs + 8 NICs + 4 NVSwitches + 4 leaves + 4 spines = 28 vertices; 8 NVLink + 8 PCIe +
    8 NIC cables + 2 planes * 2 * 2 leaf-spine edges = 32 edges."""
    return two_layer("mpft", nodes=4, gpus_per_node=2, leaves=2, spines=2)


@pytest.fixture
def ft2() -> nx.Graph:
    """One plane; 2 nodes of 4 GPUs; 2 leaves of 4 NICs, 2 spines, 2 cables per leaf-spine
    pair. 8 GPUs + 8 NICs + 2 NVSwitches + 2 leaves + 2 spines = 22 vertices, 28 edges."""
    return two_layer("ft2", nodes=2, gpus_per_node=4, leaves=2, spines=2, links_per_pair=2)


@pytest.fixture
def mrft() -> nx.Graph:
    """2 rails; 4 nodes of 2 GPUs; 2 leaves per rail; 2 shared spines. 26 vertices."""
    return two_layer("mrft", nodes=4, gpus_per_node=2, leaves=2, spines=2)


# ---------------------------------------------------------------------------------------------
# Helpers to read _FabricData


def markers_by_row(data: _FabricData) -> Counter[str]:
    labels = dict(data.rows)
    out: Counter[str] = Counter()
    for ms in data.markers:
        out[labels[ms.y[0]]] += len(ms.ids)
    return out


def member_sums(data: _FabricData, kind: str) -> Counter[str]:
    """Sum of the devices the markers of ``kind`` (e.g. ``leaf group``) stand for, by kind."""
    out: Counter[str] = Counter()
    for ms in data.markers:
        if ms.kind == kind:
            for m in ms.members:
                out.update(m)
    return out


def edges_of(data: _FabricData, kind: str | None = None) -> list[tuple[str, str, int, float, str]]:
    """Every segment as (u, v, links, capacity_Bps, hover)."""
    return [
        (u, v, n, cap, hover)
        for es in data.edges
        if kind is None or es.kind == kind
        for (u, v), n, cap, hover in zip(es.pairs, es.links, es.capacity_Bps, es.hover, strict=True)
    ]


# ---------------------------------------------------------------------------------------------
# The detailed view


def test_detailed_view_has_one_marker_per_device_in_its_row(mpft: nx.Graph) -> None:
    data = _fabric_data(mpft, max_devices=2000)
    assert data.view == VIEW_DETAILED and not data.aggregated
    assert markers_by_row(data) == {"NVSwitch": 4, "GPU": 8, "NIC": 8, "leaf": 4, "spine": 4}
    # Rows bottom to top: NVSwitch, GPU, NIC, leaf, spine.
    assert [label for _, label in data.rows] == ["NVSwitch", "GPU", "NIC", "leaf", "spine"]
    assert data.pos["node0/gpu0"][1] < data.pos["node0/nic0"][1] < data.pos["p0/leaf0"][1]
    assert data.pos["p0/leaf0"][1] < data.pos["p0/spine0"][1]
    assert len(data.pos) == 28


def test_planes_are_coloured_apart_and_drawn_as_separate_blocks(mpft: nx.Graph) -> None:
    data = _fabric_data(mpft, max_devices=2000)
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
    pos = _fabric_data(mpft, max_devices=2000).pos
    for n in range(4):
        assert pos[f"node{n}/gpu1"][0] == pos[f"node{n}/nic1"][0]
    # p0/leaf0 serves nodes 0 and 1: its NICs lie on either side of it.
    assert pos["node0/nic0"][0] < pos["p0/leaf0"][0] < pos["node1/nic0"][0] < pos["p0/leaf1"][0]


def test_edge_segments_are_the_graph_edges(mpft: nx.Graph) -> None:
    data = _fabric_data(mpft, max_devices=2000)
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


def test_hover_texts_name_devices_and_give_capacity_in_both_units(ft2: nx.Graph) -> None:
    data = _fabric_data(ft2, max_devices=2000)
    assert data.colour_by is None
    fabric = edges_of(data, "fabric")
    assert len(fabric) == 4
    for _, _, links, cap, hover in fabric:
        # 2 cables of 400 Gb/s: 800 Gb/s = 100 GB/s per direction.
        assert links == 2 and cap == 100e9
        assert "2 cables, 800 Gb/s (100 GB/s) per direction" in hover
    for *_, hover in edges_of(data, "endpoint"):
        assert "1 cable, 400 Gb/s (50 GB/s)" in hover
    for *_, hover in edges_of(data, "nvlink"):
        assert "3,200 Gb/s (400 GB/s)" in hover
    for *_, hover in edges_of(data, "pcie"):
        assert "512 Gb/s (64 GB/s)" in hover
    hovers = {v: h for ms in data.markers for v, h in zip(ms.ids, ms.hover, strict=True)}
    # leaf0: 4 NICs below (4 x 400G), 2 spines above with 2 cables each (4 x 400G).
    assert "leaf0" in hovers["leaf0"] and "leaf switch (tier 1)" in hovers["leaf0"]
    assert "down: 4 cables, 1,600 Gb/s (200 GB/s)" in hovers["leaf0"]
    assert "up: 4 cables, 1,600 Gb/s (200 GB/s)" in hovers["leaf0"]
    assert "GPU 3 of node 1" in hovers["node1/gpu3"]
    assert "NVLink: 1 cable, 3,200 Gb/s (400 GB/s)" in hovers["node1/gpu3"]


def test_single_plane_fabric_is_coloured_by_kind(ft2: nx.Graph) -> None:
    data = _fabric_data(ft2, max_devices=2000)
    assert [ms.group for ms in data.markers] == ["NVSwitch", "GPU", "NIC", "leaf", "spine"]
    assert len({ms.colour for ms in data.markers}) == 5
    assert data.blocks == ()
    assert markers_by_row(data) == {"NVSwitch": 2, "GPU": 8, "NIC": 8, "leaf": 2, "spine": 2}


def test_rails_are_coloured_and_shared_spines_span_them(mrft: nx.Graph) -> None:
    data = _fabric_data(mrft, max_devices=2000)
    assert data.colour_by == "rail"
    group = {v: ms.group for ms in data.markers for v in ms.ids}
    assert group["rail1/leaf0"] == group["node2/nic1"] == "rail 1"
    assert group["spine0"] == group["spine1"] == "shared"
    # Rail leaf to shared spine cables belong to the rail: 2 leaves * 2 spines per rail.
    fabric = {es.group: es.n_edges for es in data.edges if es.kind == "fabric"}
    assert fabric == {"rail 0": 4, "rail 1": 4}
    x = {v: p[0] for v, p in data.pos.items()}
    assert max(x[f"rail0/leaf{j}"] for j in range(2)) < min(x[f"rail1/leaf{j}"] for j in range(2))


def test_imported_fabric_has_nic_and_switch_rows(mpft: nx.Graph) -> None:
    data = _fabric_data(imported(), max_devices=2000)
    assert markers_by_row(data) == {"NIC": 8, "leaf": 2, "spine": 1}
    hovers = {v: h for ms in data.markers for v, h in zip(ms.ids, ms.hover, strict=True)}
    assert "NIC 2 of node host3" in hovers["host3/mlx5_0/p2"]
    assert "MF0;spine" in hovers["S-spine"]
    assert "2 cables, 800 Gb/s (100 GB/s)" in edges_of(data, "fabric")[0][4]


# ---------------------------------------------------------------------------------------------
# The aggregated views


def test_aggregated_view_starts_above_max_devices(mpft: nx.Graph) -> None:
    assert _fabric_data(mpft, max_devices=28).view == VIEW_DETAILED
    assert _fabric_data(mpft, max_devices=27).view == VIEW_LEAF_GROUPS


def test_leaf_groups_sum_to_the_device_counts(mpft: nx.Graph) -> None:
    # 4 leaf groups + 2 spine groups = 6 markers <= 10.
    data = _fabric_data(mpft, max_devices=10)
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
    data = _fabric_data(mpft, max_devices=5)
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
    G = ft3(4, gpus_per_node=2)
    assert G.number_of_nodes() == 60
    data = _fabric_data(G, max_devices=30)
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
    data = _fabric_data(imported(), max_devices=5)
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
    data = _fabric_data(mpft, max_devices=max_devices)
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


def test_max_devices_must_be_positive(mpft: nx.Graph) -> None:
    with pytest.raises(SpecError, match="max_devices must be at least 1, got 0"):
        plot_fabric(mpft, max_devices=0)


def test_an_empty_fabric_is_refused() -> None:
    with pytest.raises(TopoError, match="no devices"):
        plot_fabric(nx.Graph())


def test_a_fabric_without_switches_is_drawn_whole() -> None:
    # One server of 2 GPUs on an NVSwitch: nothing to group by, so never aggregated.
    G = nx.Graph(family="ft2", name="one-node", planes=1)
    G.add_node("node0/nvswitch", kind="nvswitch", node=0)
    for i in range(2):
        G.add_node(f"node0/gpu{i}", kind="gpu", node=0, index=i)
        G.add_edge(f"node0/gpu{i}", "node0/nvswitch", capacity=NVLINK_Bps, links=1, kind="nvlink")
    data = _fabric_data(G, max_devices=1)
    assert data.view == VIEW_DETAILED
    assert markers_by_row(data) == {"NVSwitch": 1, "GPU": 2}


def test_a_graph_off_the_schema_is_refused() -> None:
    G = nx.Graph()
    G.add_node("x", kind="router")
    with pytest.raises(FormatError, match="kind 'router'"):
        plot_fabric(G)


# ---------------------------------------------------------------------------------------------
# The figure


def test_figure_batches_edges_into_a_few_traces() -> None:
    # 256 nodes of 8 GPUs on 8 planes of 16 leaves and 8 spines: 2,048 GPUs, 2,048 NICs, 256
    # NVSwitches, 192 switches = 4,544 vertices; 3 x 2,048 + 8 x 16 x 8 = 7,168 edges.
    G = two_layer("mpft", nodes=256, gpus_per_node=8, leaves=16, spines=8)
    assert (G.number_of_nodes(), G.number_of_edges()) == (4544, 7168)
    detailed = plot_fabric(G, max_devices=10_000)
    # Per plane: 3 edge kinds x (lines + hover points) + 4 marker rows; NVLink and
    # NVSwitches once.
    assert len(detailed.data) == 8 * (3 * 2 + 4) + 2 + 1
    lines = [tr for tr in detailed.data if tr.mode == "lines"]
    assert sum(len(tr.x) // 3 for tr in lines) == G.number_of_edges()
    aggregated = plot_fabric(G)
    assert len(aggregated.data) == 8 * (2 + 2)
    assert "aggregated view" in aggregated.layout.annotations[-1].text
    assert "each leaf marker = 1 leaf, 16 NICs, 16 GPUs of 16 nodes" in (
        aggregated.layout.annotations[-1].text.replace("<br>", " ")
    )


def test_figure_legend_has_one_entry_per_plane(mpft: nx.Graph) -> None:
    fig = plot_fabric(mpft, title="two planes")
    assert fig.layout.title.text == "two planes"
    entries = [tr.name for tr in fig.data if tr.showlegend]
    assert entries == ["NVLink (GPU–NVSwitch)", "plane 0", "plane 1", "shared"]
    assert [a.text for a in fig.layout.annotations] == ["<b>plane 0</b>", "<b>plane 1</b>"]
    assert list(fig.layout.yaxis.ticktext) == ["NVSwitch", "GPU", "NIC", "leaf", "spine"]


def test_default_title_counts_the_fabric(mpft: nx.Graph) -> None:
    fig = plot_fabric(mpft)
    assert fig.layout.title.text == (
        "test-mpft: 8 GPUs, 8 endpoints, 8 switches, 8 switch links, 2 planes"
    )


# ---------------------------------------------------------------------------------------------
# The HTML file


def test_write_html_embeds_plotly_js_and_needs_no_network(tmp_path: Path, mpft: nx.Graph) -> None:
    path = tmp_path / "fabric.html"
    write_html(plot_fabric(mpft), path)
    html = path.read_text(encoding="utf-8")
    assert html.startswith("<html>") or html.lower().startswith("<!doctype html>")
    assert re.search(r"plotly\.js v\d", html)
    assert not re.search(r"<script[^>]*\bsrc=[\"'][^\"']*cdn\.plot\.ly", html)
    assert "Plotly.newPlot" in html
    assert "node3/gpu1" in html and "<br>" in html
    assert 3e6 < path.stat().st_size < 6e6


def test_write_html_is_atomic(
    tmp_path: Path, mpft: nx.Graph, monkeypatch: pytest.MonkeyPatch
) -> None:
    fig = plot_fabric(mpft)
    with pytest.raises(FormatError, match="does not exist"):
        write_html(fig, tmp_path / "missing" / "fabric.html")
    assert not (tmp_path / "missing").exists()

    path = tmp_path / "fabric.html"
    path.write_text("old figure", encoding="utf-8")

    def fail(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("topo.fabric.os.replace", fail)
    with pytest.raises(FormatError, match="cannot write: disk full"):
        write_html(fig, path)
    assert path.read_text(encoding="utf-8") == "old figure"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fabric.html"]


@pytest.mark.parametrize(
    "text",
    ["a/b", "<br>x</b><b>", "</script><!-- x", "ü — ×", "back\\u002fslash", "\u2028", "\\"],
)
def test_unescaped_figure_json_decodes_to_the_same_text(text: str) -> None:
    from plotly.io.json import to_json_plotly

    safe = _unescape_json(to_json_plotly({"t": text}))
    assert json.loads(safe) == {"t": text}
    assert "</script" not in safe.lower() and "<!--" not in safe


# ---------------------------------------------------------------------------------------------
# Rendering in a browser


def _render_check():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "render_check", Path(__file__).with_name("render_check.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_html_renders_in_headless_chromium(tmp_path: Path, mpft: nx.Graph) -> None:
    rc = _render_check()
    if rc.find_chromium() is None:
        pytest.skip("chromium is not on PATH")
    path = tmp_path / "fabric.html"
    write_html(plot_fabric(mpft), path)
    counts = rc.check_html(path, tmp_path / "fabric.png")
    # 28 device markers and 32 edge hover points are drawn as SVG points.
    assert counts["points"] >= 28 + 32
    assert counts["png_distinct_bytes"] >= 32


# ---------------------------------------------------------------------------------------------
# Built fabrics (when topo.builders is there) and full scale


def _build():  # type: ignore[no-untyped-def]
    builders = pytest.importorskip("topo.builders")
    build = getattr(builders, "build", None)
    if build is None:
        pytest.skip("topo.builders.build is not available yet")
    return build


@pytest.mark.parametrize("family, colour_by", [("mpft", "plane"), ("mrft", "rail")])
def test_built_fabrics_are_drawn_whole(family: str, colour_by: str) -> None:
    G = _build()(family, switch_ports=8)
    data = _fabric_data(G, max_devices=max(2000, G.number_of_nodes()))
    assert data.view == VIEW_DETAILED
    assert data.colour_by == colour_by
    s = summarize(G)
    kinds = Counter(k for ms in data.markers for m in ms.members for k, n in m.items() if n)
    assert kinds["gpu"] == s.gpus
    assert kinds["leaf"] == s.switches_by_tier["leaf"]
    assert sum(es.n_edges for es in data.edges) == G.number_of_edges()
    assert len(data.blocks) == (s.planes if family == "mpft" else G.graph.get("nics_per_node", 8))


def _check_16k(G: nx.Graph, tmp_path: Path) -> None:
    s = summarize(G)
    start = time.perf_counter()
    fig = plot_fabric(G)
    path = tmp_path / "mpft.html"
    write_html(fig, path)
    elapsed = time.perf_counter() - start
    data = _fabric_data(G, max_devices=2000)
    assert data.view == VIEW_LEAF_GROUPS
    sums = member_sums(data, "leaf group")
    assert (
        (sums["gpu"], sums["nic"], sums["leaf"])
        == (s.gpus, s.endpoints, 512)
        == (16384, 16384, 512)
    )
    assert member_sums(data, "spine group")["spine"] == 256
    # 8 planes x 64 leaves, one edge each to its plane's 32 spines: 32 cables, 12,800 Gb/s.
    segments = edges_of(data)
    assert len(segments) == 512
    assert all((n, cap) == (32, 32 * LINK_Bps) for _, _, n, cap, _ in segments)
    assert path.stat().st_size < 5.2e6
    assert len(fig.data) <= 40
    assert elapsed < 10.0


@pytest.mark.slow
def test_16k_gpu_mpft_is_aggregated_small_and_quick(tmp_path: Path) -> None:
    # 2,048 nodes of 8 GPUs, 8 planes of 64 leaves and 32 spines (64-port switches).
    G = two_layer("mpft", nodes=2048, gpus_per_node=8, leaves=64, spines=32)
    assert G.number_of_nodes() == 35584
    _check_16k(G, tmp_path)


@pytest.mark.slow
def test_built_16k_gpu_mpft_is_aggregated_small_and_quick(tmp_path: Path) -> None:
    _check_16k(_build()("mpft"), tmp_path)
