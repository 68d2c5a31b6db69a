"""Tests of topo.plot.fabric: the data behind the fabric page (hover texts, views, refusals)
and the figure; the built MPFT and MRFT drawn whole, the 16,384-GPU MPFT aggregated."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import networkx as nx
import pytest

from plot._fabrics import LINK_Bps, edges_of, imported, markers_by_row, member_sums, two_layer
from topo.builders import build
from topo.errors import FormatError, SpecError, TopoError
from topo.fabric import summarize
from topo.plot import VIEW_DETAILED, VIEW_LEAF_GROUPS, plot_fabric, write_html
from topo.plot.fabric import fabric_data


def test_hover_texts_name_devices_and_give_capacity_in_both_units(ft2: nx.Graph) -> None:
    data = fabric_data(ft2, max_devices=2000)
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


def test_imported_fabric_has_nic_and_switch_rows(mpft: nx.Graph) -> None:
    data = fabric_data(imported(), max_devices=2000)
    assert markers_by_row(data) == {"NIC": 8, "leaf": 2, "spine": 1}
    hovers = {v: h for ms in data.markers for v, h in zip(ms.ids, ms.hover, strict=True)}
    assert "NIC 2 of node host3" in hovers["host3/mlx5_0/p2"]
    assert "MF0;spine" in hovers["S-spine"]
    assert "2 cables, 800 Gb/s (100 GB/s)" in edges_of(data, "fabric")[0][4]


def test_max_devices_must_be_positive(mpft: nx.Graph) -> None:
    with pytest.raises(SpecError, match="max_devices must be at least 1, got 0"):
        plot_fabric(mpft, max_devices=0)


def test_an_empty_fabric_is_refused() -> None:
    with pytest.raises(TopoError, match="no devices"):
        plot_fabric(nx.Graph())


def test_a_graph_off_the_schema_is_refused() -> None:
    G = nx.Graph()
    G.add_node("x", kind="router")
    with pytest.raises(FormatError, match="kind 'router'"):
        plot_fabric(G)


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


@pytest.mark.parametrize("family, colour_by", [("mpft", "plane"), ("mrft", "rail")])
def test_built_fabrics_are_drawn_whole(family: str, colour_by: str) -> None:
    G = build(family, switch_ports=8)
    data = fabric_data(G, max_devices=max(2000, G.number_of_nodes()))
    assert data.view == VIEW_DETAILED
    assert data.colour_by == colour_by
    s = summarize(G)
    kinds = Counter(k for ms in data.markers for m in ms.members for k, n in m.items() if n)
    assert kinds["gpu"] == s.gpus
    assert kinds["leaf"] == s.switches_by_tier["leaf"]
    assert sum(es.n_edges for es in data.edges) == G.number_of_edges()
    assert len(data.blocks) == (s.planes if family == "mpft" else G.graph.get("nics_per_node", 8))


def _check_16k(G: nx.Graph, tmp_path: Path) -> None:
    # How long this takes is measured in benchmarks/bench_plot.py.
    s = summarize(G)
    fig = plot_fabric(G)
    path = tmp_path / "mpft.html"
    write_html(fig, path)
    data = fabric_data(G, max_devices=2000)
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


@pytest.mark.slow
def test_16k_gpu_mpft_is_aggregated_and_small(tmp_path: Path) -> None:
    # 2,048 nodes of 8 GPUs, 8 planes of 64 leaves and 32 spines (64-port switches), NVLink
    # 400 GB/s: 16,384 GPUs + 16,384 NICs + 2,048 NVSwitches + 8 x 96 switches.
    G = build("mpft", nvlink_GBps=400)
    assert G.number_of_nodes() == 16384 * 2 + 2048 + 8 * 96
    _check_16k(G, tmp_path)


@pytest.mark.slow
def test_built_16k_gpu_mpft_is_aggregated_and_small(tmp_path: Path) -> None:
    _check_16k(build("mpft"), tmp_path)
