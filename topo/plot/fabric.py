"""The fabric page: a fabric drawn as a layered, interactive plotly figure.

The figure has one row per layer, bottom to top: NVSwitches, GPUs, NICs, then the switch tiers
(leaf, spine, core, ...), planes or rails side by side as blocks (see :mod:`topo.plot.layout`).
Hovering a device shows its name, kind and the cables on each side; hovering the middle of a
cable shows its capacity in Gb/s and GB/s and the cable count. A fabric with more vertices
than ``max_devices`` is drawn aggregated (see :mod:`topo.plot.aggregate`); the title says so
and how many devices each marker stands for.

Following the house style, :func:`fabric_data` computes everything that is drawn (positions,
groups, segments, hover texts, the view) and :func:`plot_fabric` only turns it into plotly
traces: edges go into a handful of traces, one per plane or rail and edge kind, as
``None``-separated coordinate arrays, never one trace per cable.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Mapping
from typing import Any

import networkx as nx
import plotly.graph_objects as go

from topo.errors import SpecError, TopoError
from topo.fabric import SWITCH_KINDS, check_schema, natural_key, summarize, tier_name
from topo.plot.aggregate import aggregate
from topo.plot.layout import (
    VIEW_DETAILED,
    VIEW_LEAF_GROUPS,
    VIEW_TIER_GROUPS,
    FabricData,
    Item,
    Link,
    assemble,
    block_decorations,
    block_of,
    colour_by,
    row_label,
    row_of,
)
from topo.plot.text import EDGE_LABELS, cables, note_annotation, rate

__all__ = ["default_title", "fabric_data", "plot_fabric"]

_LABEL_OF_KIND = {"nvswitch": "NVSwitch", "gpu": "GPU", "nic": "NIC"}


# ---------------------------------------------------------------------------------------------
# The data behind the figure


def fabric_data(G: nx.Graph, max_devices: int, title: str | None = None) -> FabricData:
    """Compute what :func:`plot_fabric` draws: positions, groups, segments, hover texts, view.

    Parameters
    ----------
    G : networkx.Graph
        A fabric following the schema of :mod:`topo.fabric`.
    max_devices : int
        Above this many vertices the fabric is aggregated; above this many leaf groups, the
        leaves are merged too.
    title : str, optional
        Title; by default the fabric's name and its GPU, endpoint and switch counts
        (:func:`default_title`).

    Returns
    -------
    FabricData

    Raises
    ------
    SpecError
        If ``max_devices`` is below 1.
    FormatError
        If ``G`` does not follow the fabric schema.
    TopoError
        If ``G`` has no vertices.
    """
    if max_devices < 1:
        raise SpecError(f"max_devices must be at least 1, got {max_devices}")
    check_schema(G)
    if G.number_of_nodes() == 0:
        raise TopoError("the fabric has no devices: nothing to draw")
    by = colour_by(G)
    block = block_of(G, by)
    has_switches = any(d["kind"] in SWITCH_KINDS for _, d in G.nodes(data=True))
    # Groups hang off switches: a fabric without any is drawn whole, whatever its size.
    if title is None:
        title = default_title(G)
    if G.number_of_nodes() <= max_devices or not has_switches:
        items, links = _detailed(G, block)
        marker_of = {str(v): str(v) for v in G}
        return assemble(G, items, links, G.adj, VIEW_DETAILED, title, "", by, marker_of)
    view, agg = VIEW_LEAF_GROUPS, aggregate(G, block, merge_leaves=False)
    if len(agg.items) > max_devices:
        view, agg = VIEW_TIER_GROUPS, aggregate(G, block, merge_leaves=True)
    adj: dict[Hashable, list[Hashable]] = defaultdict(list)
    for lk in agg.links:
        adj[lk.u].append(lk.v)
        adj[lk.v].append(lk.u)
    note = (
        f"aggregated view ({G.number_of_nodes():,} devices > max_devices "
        f"{max_devices:,}): {agg.note}"
    )
    marker_of = {str(v): g for v, g in agg.marker_of.items()}
    return assemble(G, agg.items, agg.links, adj, view, title, note, by, marker_of)


def default_title(G: nx.Graph) -> str:
    """The fabric's name and its GPU, endpoint, switch, link and plane counts.

    Parameters
    ----------
    G : networkx.Graph
        A fabric.

    Returns
    -------
    str
        E.g. ``mpft: 16,384 GPUs, 16,384 endpoints, 768 switches, 16,384 switch links,
        8 planes``.
    """
    s = summarize(G)
    name = G.graph.get("name") or s.family
    parts = []
    if s.gpus:
        parts.append(f"{s.gpus:,} GPUs")
    parts.append(f"{s.endpoints:,} endpoints")
    parts.append(f"{s.switches:,} switches")
    parts.append(f"{s.links:,} switch links")
    if s.planes > 1:
        parts.append(f"{s.planes} planes")
    return f"{name}: " + ", ".join(parts)


# ---------------------------------------------------------------------------------------------
# The detailed view: one marker per device


def _detailed(
    G: nx.Graph, block: Mapping[Hashable, int | None]
) -> tuple[dict[Hashable, Item], list[Link]]:
    items: dict[Hashable, Item] = {}
    for v, d in G.nodes(data=True):
        row = row_of(d)
        items[v] = Item(
            row=row,
            block=block[v],
            sort_key=natural_key(v),
            kind=row_label(row),
            hover=_device_hover(G, v, d),
            members={d["kind"]: 1, "nodes": 1 if d["kind"] in ("gpu", "nic") else 0},
        )
    links = [
        Link(u, v, d["kind"], int(d["links"]), float(d["capacity"]))
        for u, v, d in G.edges(data=True)
    ]
    return items, links


def _device_hover(G: nx.Graph, v: Hashable, d: Mapping[str, Any]) -> str:
    if d["kind"] in SWITCH_KINDS:
        return "<br>".join([f"<b>{v}</b>", *_switch_lines(G, v, d)])
    node = d.get("node")
    lines = [f"<b>{v}</b>"]
    if d["kind"] == "nvswitch":
        lines.append(f"NVSwitch of node {node}")
    else:
        lines.append(f"{_LABEL_OF_KIND[d['kind']]} {d.get('index')} of node {node}")
    by_kind: dict[str, list[float]] = {}
    for _, e in G[v].items():
        acc = by_kind.setdefault(e["kind"], [0, 0.0])
        acc[0] += int(e["links"])
        acc[1] += float(e["capacity"])
    for ek in ("nvlink", "pcie", "endpoint"):
        if ek in by_kind:
            n_links, cap = by_kind[ek]
            lines.append(f"{EDGE_LABELS[ek]}: {cables(int(n_links))}, {rate(cap)}")
    return "<br>".join(lines)


def _switch_lines(G: nx.Graph, v: Hashable, d: Mapping[str, Any]) -> list[str]:
    """A switch's tier, plane or rail, ports, its cables down and up, and its description."""
    tier = int(d["tier"])
    where = ""
    if int(G.graph.get("planes", 1)) > 1 or int(d.get("plane", 0)) > 0:
        where += f", plane {d.get('plane', 0)}"
    if int(d.get("rail", -1)) >= 0:
        where += f", rail {d['rail']}"
    ports = f", {d['ports']} ports" if "ports" in d else ""
    lines = [f"{tier_name(tier)} switch (tier {tier}){where}{ports}"]
    sides: dict[str, list[float]] = {}
    for n, e in G[v].items():
        nd = G.nodes[n]
        ntier = int(nd["tier"]) if nd["kind"] in SWITCH_KINDS else 0
        side = "down" if ntier < tier else "up" if ntier > tier else "same tier"
        acc = sides.setdefault(side, [0, 0.0])
        acc[0] += int(e["links"])
        acc[1] += float(e["capacity"])
    for side in ("down", "up", "same tier"):
        if side in sides:
            lines.append(f"{side}: {cables(int(sides[side][0]))}, {rate(sides[side][1])}")
    if d.get("description") and str(d["description"]) != str(v):
        lines.append(str(d["description"]))
    return lines


# ---------------------------------------------------------------------------------------------
# Drawing


def plot_fabric(G: nx.Graph, *, max_devices: int = 2000, title: str | None = None) -> go.Figure:
    """Draw fabric ``G`` as a layered figure: endpoints at the bottom, switch tiers above.

    Planes (MPFT) or rails (MRFT) are laid side by side and coloured apart; hovering a device
    or the middle of a cable shows its name, kind, capacity (Gb/s and GB/s per direction) and
    cable count. Fabrics with more than ``max_devices`` vertices are drawn aggregated: one
    marker per leaf with its NICs and GPUs, switches of higher tiers merged per plane, rail or
    pod, group-to-group cables summed (see :mod:`topo.plot.aggregate`).

    Parameters
    ----------
    G : networkx.Graph
        A fabric following the schema of :mod:`topo.fabric` (built or imported).
    max_devices : int, default 2000
        Largest number of vertices drawn one marker each.
    title : str, optional
        Figure title; by default the fabric's name and its GPU, endpoint and switch counts.
        An aggregated figure adds a line saying what each marker stands for.

    Returns
    -------
    plotly.graph_objects.Figure
        A handful of traces (one per plane or rail and kind), whatever the fabric's size.

    Raises
    ------
    SpecError
        If ``max_devices`` is below 1.
    FormatError
        If ``G`` does not follow the fabric schema.
    TopoError
        If ``G`` has no vertices.

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.Graph(family="ft2", name="tiny", planes=1)
    >>> G.add_node("leaf0", kind="leaf", tier=1, plane=0, rail=-1, ports=4)
    >>> G.add_node("node0/nic0", kind="nic", node=0, index=0)
    >>> G.add_edge("node0/nic0", "leaf0", capacity=50e9, links=1, kind="endpoint")
    >>> fig = plot_fabric(G)
    >>> len(fig.data)
    4
    """
    data = fabric_data(G, max_devices, title)
    fig = go.Figure()
    shown = _add_edges(fig, data)
    _add_markers(fig, data, shown)
    _update_layout(fig, data)
    return fig


def _add_edges(fig: go.Figure, data: FabricData) -> set[str]:
    """Line traces and their hover points; returns the legend groups given an entry.

    Legend: one entry per plane or rail (or per kind), shown on its first marker trace; edge
    groups without markers (NVLink, cables between blocks) get their own entry.
    """
    with_markers = {ms.group for ms in data.markers}
    shown: set[str] = set()
    for es in data.edges:
        own_entry = es.group not in with_markers and es.group not in shown
        if own_entry:
            shown.add(es.group)
        fig.add_trace(
            go.Scatter(
                x=list(es.x),
                y=list(es.y),
                mode="lines",
                name=es.group if own_entry else es.name,
                legendgroup=es.group,
                showlegend=own_entry,
                line={"color": es.colour, "width": es.width},
                hoverinfo="skip",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=list(es.mid_x),
                y=list(es.mid_y),
                mode="markers",
                name=es.name,
                legendgroup=es.group,
                showlegend=False,
                marker={"size": 8, "color": es.colour, "opacity": 0},
                hovertext=list(es.hover),
                hoverinfo="text",
            )
        )
    return shown


def _add_markers(fig: go.Figure, data: FabricData, shown: set[str]) -> None:
    for ms in data.markers:
        first = ms.group not in shown
        shown.add(ms.group)
        fig.add_trace(
            go.Scatter(
                x=list(ms.x),
                y=list(ms.y),
                mode="markers+text" if ms.text else "markers",
                text=list(ms.text) or None,
                textposition="bottom center" if ms.row <= 3 else "top center",
                textfont={"size": 11, "color": ms.colour},
                name=ms.group if first else ms.name,
                legendgroup=ms.group,
                showlegend=first,
                marker={
                    "size": ms.size,
                    "color": ms.colour,
                    "symbol": ms.symbol,
                    "line": {"width": 0.5, "color": "white"},
                },
                hovertext=list(ms.hover),
                hoverinfo="text",
            )
        )


def _update_layout(fig: go.Figure, data: FabricData) -> None:
    shapes, annotations = block_decorations(data.blocks, 0.07)
    note_lines = 0
    if data.note:
        note, note_lines = note_annotation(data.note)
        annotations.append(note)
    n_rows = len(data.rows)
    fig.update_layout(
        title={"text": data.title, "x": 0, "xref": "paper", "xanchor": "left"},
        # No template: plotly_white alone would add 7 kB to every file.
        template="none",
        paper_bgcolor="white",
        plot_bgcolor="white",
        height=max(420, 200 + 130 * n_rows),
        margin={"l": 90, "r": 20, "t": 70 + 18 * note_lines, "b": 30},
        hovermode="closest",
        hoverlabel={"align": "left"},
        legend={"title": {"text": data.colour_by or "kind"}, "itemsizing": "constant"},
        shapes=shapes,
        annotations=annotations,
        xaxis={"visible": False, "showgrid": False, "zeroline": False},
        yaxis={
            "tickvals": [y for y, _ in data.rows],
            "ticktext": [label for _, label in data.rows],
            "range": [-0.6, n_rows - 0.3],
            "showgrid": False,
            "zeroline": False,
            "fixedrange": False,
        },
    )
