"""Tests of topo.plot.link_load: link load drawn on the topology, and the per-tier histograms.

Every expected utilisation is worked by hand below from the loads given and the capacities of
the built fabrics (400 Gb/s cables: 50 GB/s per direction; NVLink 200 GB/s per GPU). The LP
cases check a property of any optimum (complementary slackness, a saturated cut) rather than a
number the code under test produced.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from formats._real import real_file

from plot import render_check as rc
from topo.builders import build
from topo.errors import SpecError, TopoError
from topo.flow import alltoall_bandwidth, routed_alltoall
from topo.flow.solve.lp import Commodity, max_concurrent_flow
from topo.formats.ibnetdiscover import read_ibnetdiscover
from topo.plot import VIEW_DETAILED, VIEW_LEAF_GROUPS, VIEW_TIER_GROUPS, write_html
from topo.plot.link_load import plot_link_load
from topo.plot.link_load_data import N_BINS, link_load_data

GB = 1e9
CABLE_Bps = 50 * GB  # 400 Gb/s
NVLINK_Bps = 200 * GB

Arc = tuple[Hashable, Hashable]


# ---------------------------------------------------------------------------------------------
# Helpers


@pytest.fixture
def ft2() -> nx.Graph:
    """4 nodes of 2 GPUs and 2 NICs; node n's NICs on leaf n; 4 leaves, 2 spines; 50 GB/s."""
    G = build("ft2", switch_ports=4, gpus_per_node=2, nics_per_node=2)
    assert G.has_edge("node0/nic0", "leaf0") and G.has_edge("node3/nic1", "leaf3")
    return G


@pytest.fixture
def mpft() -> nx.Graph:
    """2 planes of 4 leaves and 2 spines; 4 nodes of 2 GPUs; 52 vertices."""
    G = build("mpft", switch_ports=4, gpus_per_node=2, nics_per_node=2)
    assert G.number_of_nodes() == 52
    return G


def utilisation_trace(fig: Any) -> Any:
    (trace,) = [t for t in fig.data if t.name == "utilisation"]
    return trace


def by_pair(fig: Any) -> dict[tuple[str, str], tuple[int, float, float]]:
    """(end a, end b) -> (links, max utilisation, mean utilisation), read from the figure."""
    tr = utilisation_trace(fig)
    out = {}
    for c, colour in zip(tr.customdata, tr.marker.color, strict=True):
        assert colour == c[3]  # the colour is the max utilisation
        out[(c[0], c[1])] = (int(c[2]), float(c[3]), float(c[4]))
    return out


def histograms(fig: Any) -> dict[str, list[int]]:
    """Tier -> counts per bin, read from the figure's bar traces."""
    out = {}
    for t in fig.data:
        if t.type == "bar":
            counts = [int(y) for y in t.y]
            out[t.name] = counts + [0] * (N_BINS + 1 - len(counts))
    return out


def counts(**bins: int) -> list[int]:
    """A histogram from ``b<i>=count`` entries."""
    out = [0] * (N_BINS + 1)
    for key, n in bins.items():
        out[int(key[1:])] = n
    return out


# Hand-made loads on the FT2 (capacity 50 GB/s per direction on every NIC and switch cable):
#   leaf0 -> spine0 25 GB/s (0.5), spine0 -> leaf0 40 GB/s (0.8): the link's utilisation 0.8
#   leaf1 -> spine1 50 GB/s (1.0)
#   leaf2 -> spine0 50 GB/s over two cables (100 GB/s, set below): 0.5
#   node0/nic0 -> leaf0 10 GB/s (0.2); leaf3 -> node3/nic1 5 GB/s (0.1)
FT2_LOADS: dict[Arc, float] = {
    ("leaf0", "spine0"): 25 * GB,
    ("spine0", "leaf0"): 40 * GB,
    ("leaf1", "spine1"): 50 * GB,
    ("leaf2", "spine0"): 50 * GB,
    ("node0/nic0", "leaf0"): 10 * GB,
    ("leaf3", "node3/nic1"): 5 * GB,
}


def double_cable(G: nx.Graph) -> nx.Graph:
    G.edges["leaf2", "spine0"].update(links=2, capacity=2 * CABLE_Bps)
    return G


# ---------------------------------------------------------------------------------------------
# The detailed view


def test_links_carry_the_hand_computed_utilisation(ft2: nx.Graph) -> None:
    fig = plot_link_load(double_cable(ft2), FT2_LOADS, title="hand loads")
    seen = by_pair(fig)
    expected = {
        ("leaf0", "spine0"): 0.8,
        ("leaf1", "spine1"): 1.0,
        ("leaf2", "spine0"): 0.5,
        ("node0/nic0", "leaf0"): 0.2,
        ("node3/nic1", "leaf3"): 0.1,
    }
    # 8 NIC cables and 8 switch cables; NVLink and PCIe got no loads and are not coloured.
    assert len(seen) == 16
    for pair, (links, mx, mean) in seen.items():
        assert links == 1
        assert mx == mean == pytest.approx(expected.get(pair, 0.0), abs=1e-12)
    assert fig.layout.title.text == "hand loads"


def test_hover_gives_ends_tier_capacity_and_both_directions(ft2: nx.Graph) -> None:
    fig = plot_link_load(double_cable(ft2), FT2_LOADS)
    tr = utilisation_trace(fig)
    hover = dict(zip((tuple(c[:2]) for c in tr.customdata), tr.hovertext, strict=True))
    h = hover[("leaf0", "spine0")]
    assert "leaf0 — spine0" in h
    assert "1 cable, 50 GB/s per direction" in h
    assert "leaf->spine: 25 GB/s, utilisation 0.5" in h
    assert "spine->leaf: 40 GB/s, utilisation 0.8" in h
    h = hover[("leaf2", "spine0")]
    assert "2 cables, 100 GB/s per direction" in h and "utilisation 0.5" in h
    assert "nic->leaf: 10 GB/s, utilisation 0.2" in hover[("node0/nic0", "leaf0")]
    assert "leaf->nic: 5 GB/s, utilisation 0.1" in hover[("node3/nic1", "leaf3")]


def test_line_colour_bands_and_colour_bar(ft2: nx.Graph) -> None:
    fig = plot_link_load(double_cable(ft2), FT2_LOADS)
    bands = {t.name: len(t.x) // 3 for t in fig.data if str(t.name).startswith("utilisation ")}
    # 0.8 -> band 0.80-0.85; 1.0 -> the last band (closed); 0.5 -> 0.50-0.55; 0.2; 0.1; 11 idle
    assert bands == {
        "utilisation 0.00–0.05": 11,
        "utilisation 0.10–0.15": 1,
        "utilisation 0.20–0.25": 1,
        "utilisation 0.50–0.55": 1,
        "utilisation 0.80–0.85": 1,
        "utilisation 0.95–1.00": 1,
    }
    marker = utilisation_trace(fig).marker
    assert (marker.cmin, marker.cmax, marker.showscale) == (0.0, 1.0, True)
    # NVLink and PCIe drawn as plain structure: 8 + 8 segments.
    (grey,) = [t for t in fig.data if t.name == "links without loads"]
    assert len(grey.x) // 3 == 16


def test_histogram_counts_per_tier(ft2: nx.Graph) -> None:
    fig = plot_link_load(double_cable(ft2), FT2_LOADS)
    hist = histograms(fig)
    # Tiers in order up the fabric, each direction on its own; 8 arcs in each.
    assert list(hist) == ["nic->leaf", "leaf->nic", "leaf->spine", "spine->leaf"]
    assert hist["nic->leaf"] == counts(b0=7, b4=1)  # 0.2 -> [0.20, 0.25)
    assert hist["leaf->nic"] == counts(b0=7, b2=1)  # 0.1
    assert hist["leaf->spine"] == counts(b0=5, b10=2, b19=1)  # 0.5, 0.5, 1.0 (last bin closed)
    assert hist["spine->leaf"] == counts(b0=7, b16=1)  # 0.8
    bar = next(t for t in fig.data if t.type == "bar")
    assert list(bar.x) == pytest.approx([(i + 0.5) / 20 for i in range(20)])


def test_arcs_over_capacity_get_their_own_bin(ft2: nx.Graph) -> None:
    # 60 GB/s on a 50 GB/s cable (as-routed loads can do that): 1.2.
    data = link_load_data(ft2, {("spine1", "leaf3"): 60 * GB}, 2000)
    (h,) = [h for h in data.histograms if h.tier == "spine->leaf"]
    assert h.counts == tuple(counts(b0=7, b20=1))
    assert h.max_util == pytest.approx(1.2)
    assert data.over_capacity == 1 and "1 arc over capacity" in data.note
    fig = plot_link_load(ft2, {("spine1", "leaf3"): 60 * GB})
    assert by_pair(fig)[("leaf3", "spine1")][1] == pytest.approx(1.2)
    assert len(histograms(fig)["spine->leaf"]) == N_BINS + 1


def test_server_links_take_part_when_given(ft2: nx.Graph) -> None:
    # 100 GB/s GPU -> NVSwitch on a 200 GB/s NVLink: 0.5. No PCIe load given.
    data = link_load_data(ft2, {("node0/gpu0", "node0/nvswitch"): 100 * GB}, 2000)
    tiers = [h.tier for h in data.histograms]
    assert tiers == [
        "nvswitch->gpu",
        "gpu->nvswitch",
        "nic->leaf",
        "leaf->nic",
        "leaf->spine",
        "spine->leaf",
    ]
    (h,) = [h for h in data.histograms if h.tier == "gpu->nvswitch"]
    assert h.counts == tuple(counts(b0=7, b10=1))
    assert "no loads given for PCIe links" in data.note
    assert len(data.structure) == 8  # the PCIe links
    assert len(data.segments) == 8 + 16


# ---------------------------------------------------------------------------------------------
# The aggregated views


MPFT_LOADS: dict[Arc, float] = {
    ("p0/leaf0", "p0/spine0"): 25 * GB,  # 0.5
    ("p0/spine1", "p0/leaf0"): 45 * GB,  # 0.9
    ("node0/nic0", "p0/leaf0"): 40 * GB,  # 0.8, inside the leaf group
}


def test_aggregated_leaf_groups_show_count_max_and_mean(mpft: nx.Graph) -> None:
    # 8 leaves + one spine group per plane = 10 markers <= 20 < 52 vertices.
    data = link_load_data(mpft, MPFT_LOADS, 20)
    assert data.fabric.view == VIEW_LEAF_GROUPS
    segs = {sg.a: sg for sg in data.segments}
    assert len(segs) == 8  # each leaf to its plane's spine group
    sg = segs["p0/leaf0"]
    # Its 2 links: leaf0-spine0 at 0.5, leaf0-spine1 at 0.9.
    assert (sg.links, sg.cables, sg.capacity_Bps) == (2, 2, 2 * CABLE_Bps)
    assert sg.max_util == pytest.approx(0.9)
    assert sg.mean_util == pytest.approx((0.5 + 0.9) / 2)
    assert "2 links (2 cables), 100 GB/s per direction in total" in sg.hover
    assert "max 0.9, mean 0.7" in sg.hover
    assert "leaf->spine: max 0.5, mean 0.25, 25 GB/s in total" in sg.hover
    assert "spine->leaf: max 0.9, mean 0.45, 45 GB/s in total" in sg.hover
    for leaf, other in segs.items():
        if leaf != "p0/leaf0":
            assert (other.links, other.max_util, other.mean_util) == (2, 0.0, 0.0)
    # node0/nic0's cable lies inside p0/leaf0's marker: its colour and hover say 0.8.
    assert data.marker_util["p0/leaf0"] == pytest.approx(0.8)
    assert (
        "NIC–switch links inside: 2, utilisation max 0.8, mean 0.4"
        in (data.marker_hover["p0/leaf0"])
    )
    fig = plot_link_load(mpft, MPFT_LOADS, max_devices=20)
    assert by_pair(fig)[("p0/leaf0", sg.b)] == (2, pytest.approx(0.9), pytest.approx(0.7))


def test_aggregated_tier_groups_show_count_max_and_mean(mpft: nx.Graph) -> None:
    # Even 10 markers are over 5: leaves merged per plane.
    data = link_load_data(mpft, MPFT_LOADS, 5)
    assert data.fabric.view == VIEW_TIER_GROUPS
    assert len(data.segments) == 2
    # A plane's leaf group to its spine group: 4 leaves x 2 spines = 8 links.
    p0 = max(data.segments, key=lambda sg: sg.max_util)
    p1 = min(data.segments, key=lambda sg: sg.max_util)
    assert (p0.links, p1.links) == (8, 8)
    assert p0.max_util == pytest.approx(0.9)
    assert p0.mean_util == pytest.approx((0.5 + 0.9) / 8)
    assert (p1.max_util, p1.mean_util) == (0.0, 0.0)


@pytest.mark.parametrize(
    "family, max_devices, view",
    [
        ("ft3", 30, VIEW_LEAF_GROUPS),
        ("ft3", 10, VIEW_TIER_GROUPS),
        ("mrft", 20, VIEW_LEAF_GROUPS),
        ("mrft", 4, VIEW_TIER_GROUPS),
        ("mpft", 2000, VIEW_DETAILED),
    ],
)
def test_every_switch_link_is_drawn_once(family: str, max_devices: int, view: str) -> None:
    G = build(family, switch_ports=4, gpus_per_node=2, nics_per_node=2)
    loads = {(u, v): 1 * GB for u, v, k in G.edges(data="kind") if k == "fabric"}
    data = link_load_data(G, loads, max_devices)
    assert data.fabric.view == view
    # Closed forms for 4-port switches: FT3 k^3/4 = 16 leaf-spine + 16 spine-core links;
    # MRFT: 2 rails x 2 leaves x 2 spines = 8; MPFT: 2 planes x 4 leaves x 2 spines = 16.
    fabric_links = {"ft3": 32, "mrft": 8, "mpft": 16}[family]
    drawn = sum(sg.links for sg in data.segments if not sg.a.startswith("node"))
    assert drawn == fabric_links
    # 1 GB/s on a 50 GB/s cable, each direction given for one arc only: 0.02 everywhere.
    assert {round(sg.max_util, 12) for sg in data.segments if not sg.a.startswith("node")} == {0.02}


# ---------------------------------------------------------------------------------------------
# Errors


@pytest.mark.parametrize(
    "loads, match",
    [
        ({("leaf0", "leaf1"): 1.0}, r"arc leaf0 -> leaf1 \(no cable joins them\) is not a link"),
        ({("leaf0", "spine9"): 1.0}, r"arc leaf0 -> spine9 \(no device spine9\)"),
        (
            {("leaf0", "leaf1"): 1.0, ("a", "b"): 2.0, ("leaf0", "spine0"): 1.0},
            r"leaf0 -> leaf1 .* of fabric 'ft2-8' \(and 1 more\)",
        ),
        ({"leaf0": 1.0}, r"key 'leaf0' is not an arc"),
        (
            {("leaf0", "spine0"): -1 * GB},
            r"load on arc leaf0 -> spine0 must be .* >= 0, got -1000000000.0",
        ),
        ({("leaf0", "spine0"): math.nan}, r"load on arc leaf0 -> spine0 .* got nan"),
        ({("leaf0", "spine0"): "fast"}, r"got 'fast'"),
    ],
)
def test_bad_loads_are_named(ft2: nx.Graph, loads: Any, match: str) -> None:
    with pytest.raises(TopoError, match=match):
        plot_link_load(ft2, loads)


def test_round_off_below_zero_reads_as_zero_and_max_devices_is_checked(ft2: nx.Graph) -> None:
    data = link_load_data(ft2, {("leaf0", "spine0"): -1e-9 * CABLE_Bps}, 2000)
    assert all(lk.util_ab == 0.0 for lk in data.links)
    with pytest.raises(TopoError, match="link_load must map arcs"):
        plot_link_load(ft2, [(("leaf0", "spine0"), 1.0)])  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="max_devices must be at least 1"):
        plot_link_load(ft2, {}, max_devices=0)


# ---------------------------------------------------------------------------------------------
# Loads from a solved LP


def test_loads_of_an_optimal_all_to_all_saturate_the_cut(ft2: nx.Graph) -> None:
    arcs = [a for u, v in ft2.edges for a in ((u, v), (v, u))]
    cap = [float(ft2.edges[a]["capacity"]) for a in arcs]
    gpus = [v for v, k in ft2.nodes(data="kind") if k == "gpu"]
    commodities = [Commodity(g, {h: 1.0 for h in gpus if h != g}) for g in gpus]
    sol = max_concurrent_flow(arcs, cap, commodities)
    # By hand: each node sends 2 GPUs x 6 remote GPUs x lambda over its 2 NICs (100 GB/s) and
    # its leaf's 2 uplinks (100 GB/s): lambda = 100/12 GB/s, and at that rate every NIC cable
    # and every switch cable is full in both directions (each node's cut is saturated by its
    # own traffic, so nothing else can pass through it).
    assert sol.theta == pytest.approx(100 * GB / 12, rel=1e-6)
    fig = plot_link_load(ft2, dict(zip(arcs, sol.arc_flow, strict=True)))
    hist = histograms(fig)
    for tier in ("nic->leaf", "leaf->nic", "leaf->spine", "spine->leaf"):
        assert hist[tier] == counts(b19=8), tier
    network = [v for (_, b), v in by_pair(fig).items() if ft2.nodes[b]["kind"] in ("leaf", "spine")]
    assert len(network) == 16
    assert all(mx == pytest.approx(1.0, abs=1e-6) for _, mx, _ in network)


def test_bottleneck_links_of_the_gb200_superpod_are_saturated() -> None:
    G = read_ibnetdiscover(real_file("ibnetdiscover", "topograph_dgx_gb200_ndr_superpod.out"))
    report = alltoall_bandwidth(G)
    loads = {(b.source, b.target): b.load_Bps for b in report.bottleneck_links}
    assert loads
    data = link_load_data(G, loads, 2000)
    # A bottleneck arc has a positive shadow price, so by complementary slackness its capacity
    # row is tight: utilisation 1 (NDR cables, 400 Gb/s = 50 GB/s each, in the file).
    for b in report.bottleneck_links:
        assert b.capacity_Bps == 50.0 * GB * G.edges[b.source, b.target]["links"]
        (lk,) = [lk for lk in data.links if {lk.a, lk.b} == {b.source, b.target}]
        u = lk.util_ab if lk.a == b.source else lk.util_ba
        assert u == pytest.approx(1.0, abs=1e-6)
    # Only the bottleneck arcs carry load: the last bin of each tier holds exactly them.
    last = {h.tier: h.counts[N_BINS - 1] for h in data.histograms}
    assert last == {t: report.bottleneck_tiers.get(t, 0) for t in last}
    assert sum(last.values()) == len(report.bottleneck_links)


# ---------------------------------------------------------------------------------------------
# The page


def test_page_renders_in_headless_chromium(tmp_path: Path, ft2: nx.Graph) -> None:
    if rc.find_chromium() is None:
        pytest.skip("chromium is not on PATH")
    path = tmp_path / "load.html"
    write_html(plot_link_load(double_cable(ft2), FT2_LOADS), path)
    html = path.read_text(encoding="utf-8")
    assert "leaf0 — spine0" in html and "25 GB/s, utilisation 0.5" in html
    png = tmp_path / "load.png"
    dom = rc.dump_dom(path, png=png, size=(1400, 1300))
    found = rc.check_dom(dom)
    # 28 devices and 16 link midpoints are drawn as points; 4 histograms as bars; a colour bar.
    assert found["points"] >= 28 + 16
    assert dom.count('class="trace bars"') == 4
    assert "colorbar" in dom
    assert rc.png_distinct_bytes(png) >= 32


@pytest.mark.slow
def test_16k_gpu_mpft_is_aggregated_and_small(tmp_path: Path) -> None:
    # How long this takes is measured in benchmarks/bench_plot.py.
    G = build("mpft")  # 2,048 nodes x 8 GPUs; 8 planes of 64 leaves and 32 spines
    # Hand-made loads: every NIC sends at its line rate (1.0), every leaf -> spine arc at half
    # its capacity (0.5); nothing down.
    loads: dict[Arc, float] = {}
    for u, v, d in G.edges(data=True):
        a, b = (u, v) if G.nodes[u]["kind"] in ("nic", "leaf") else (v, u)
        if d["kind"] == "endpoint":
            loads[(a, b)] = d["capacity"]
        elif d["kind"] == "fabric":
            loads[(a, b)] = 0.5 * d["capacity"]
    fig = plot_link_load(G, loads)
    path = tmp_path / "load.html"
    write_html(fig, path)
    data = link_load_data(G, loads, 2000)
    assert data.fabric.view == VIEW_LEAF_GROUPS
    # 8 planes x 64 leaves, each drawn once to its plane's spine group: 32 links at 0.5.
    assert len(data.segments) == 512
    assert {(sg.links, sg.max_util, sg.mean_util) for sg in data.segments} == {(32, 0.5, 0.5)}
    hist = {h.tier: h.counts for h in data.histograms}
    assert hist["nic->leaf"] == tuple(counts(b19=16384))
    assert hist["leaf->nic"] == tuple(counts(b0=16384))
    assert hist["leaf->spine"] == tuple(counts(b10=16384))
    assert hist["spine->leaf"] == tuple(counts(b0=16384))
    assert set(data.marker_util.values()) == {1.0}  # the NIC cables inside each leaf marker
    assert len(fig.data) <= 40
    assert path.stat().st_size < 5.6e6


@pytest.mark.parametrize("routing", ["ecmp", "dmodk"])
def test_loads_of_routed_all_to_all_are_drawn(routing: str) -> None:
    G = build("mpft", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    report = routed_alltoall(G, routing, seed=1)
    data = link_load_data(G, report.link_load, 2000)
    # Two computations of the same number: the router's own and the figure's, per graph edge
    # (every cable of a built fabric is its own edge, so per cable too).
    worst = max(h.max_util for h in data.histograms)
    assert worst == pytest.approx(report.routing.max_link_utilization, rel=1e-9)
    # The router gives every arc, NVLink and PCIe too (PXN), so every link is coloured: 32 nodes
    # x 2 GPUs; per plane 32 NIC cables and 8 leaves x 4 spines; 64 NVLink and 64 PCIe links.
    assert len(data.segments) == 2 * (32 + 8 * 4) + 64 + 64
    assert not data.structure
