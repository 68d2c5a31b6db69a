"""Draw a fabric as a layered, interactive plotly figure, and write it as offline HTML.

The figure has one row per layer, bottom to top: NVSwitches, GPUs, NICs, then the switch tiers
(leaf, spine, core, ...). Planes (MPFT) or rails (MRFT) are laid side by side as separate
blocks and coloured apart; switches shared by all rails (MRFT spines) and NVSwitches span the
whole width in grey. Hovering a device shows its name, kind and the cables on each side;
hovering the middle of a cable shows its capacity in Gb/s and GB/s and the cable count.

A fabric with more vertices than ``max_devices`` is drawn *aggregated*: each leaf becomes one
marker standing for the leaf and every NIC and GPU attached to it, and the switches of each
higher tier are merged by plane or rail and by the part of the fabric they serve (a pod of a
three-layer fat tree, a plane of an MPFT). If even that has more than ``max_devices`` markers,
the leaves are merged the same way. Cables between merged groups are drawn once, with the
summed capacity and cable count in the hover text; the title says the view is aggregated and
how many devices each marker stands for.

Following the house style, :func:`_fabric_data` computes everything that is drawn (positions,
groups, segments, hover texts, the view) and :func:`plot_fabric` only turns it into plotly
traces: edges go into a handful of traces, one per plane or rail and edge kind, as
``None``-separated coordinate arrays, never one trace per cable.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from topo.errors import SpecError, TopoError
from topo.fabric import (
    SWITCH_KINDS,
    check_schema,
    natural_key,
    summarize,
    tier_name,
    write_atomic,
)
from topo.units import Bps_to_GBps, Bps_to_gbps

__all__ = ["plot_fabric", "write_html"]

VIEW_DETAILED = "detailed"
VIEW_LEAF_GROUPS = "aggregated: leaf groups"
VIEW_TIER_GROUPS = "aggregated: tier groups"

# Colours of planes or rails (D3's palette without its grey, which means "shared" here).
_PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#393b79",
    "#637939", "#e7969c", "#7b4173", "#3182bd", "#e6550d", "#31a354",
)  # fmt: skip
_SHARED_COLOUR = "#555555"
# Colours by kind, for fabrics with one plane and no rails (FT2, FT3, imported).
_KIND_COLOURS = {
    "NVSwitch": "#9467bd",
    "GPU": "#2ca02c",
    "NIC": "#1f77b4",
    "leaf": "#ff7f0e",
    "spine": "#d62728",
    "core": "#8c564b",
}
_KIND_EDGE_COLOURS = {"pcie": "#2ca02c", "endpoint": "#1f77b4", "fabric": "#555555"}
_EDGE_LABELS = {
    "nvlink": "NVLink",
    "pcie": "PCIe",
    "endpoint": "NIC–switch",
    "fabric": "switch–switch",
}
_NVLINK_GROUP = "NVLink (GPU–NVSwitch)"
# Rows, bottom to top: NVSwitch 0, GPU 1, NIC 2, switch tier t at 2 + t.
_ROW_OF_KIND = {"nvswitch": 0, "gpu": 1, "nic": 2}
_LABEL_OF_KIND = {"nvswitch": "NVSwitch", "gpu": "GPU", "nic": "NIC"}
_NOMINAL_PLOT_WIDTH_PX = 1100.0


# ---------------------------------------------------------------------------------------------
# The data behind the figure


@dataclass(frozen=True)
class _Markers:
    """One marker trace: the devices (or groups) of one kind in one plane, rail or kind group.

    ``members`` gives, for each marker, how many devices it stands for by kind (``gpu``,
    ``nic``, ``leaf``, ...; in the detailed view ``{kind: 1}``) and under ``nodes`` how many
    distinct servers its GPUs and NICs belong to.
    """

    name: str
    group: str
    kind: str
    row: int
    ids: tuple[str, ...]
    x: tuple[float, ...]
    y: tuple[float, ...]
    hover: tuple[str, ...]
    members: tuple[dict[str, int], ...]
    colour: str
    symbol: str
    size: float
    text: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Edges:
    """One line trace: cables of one kind in one plane, rail or kind group.

    ``x`` and ``y`` hold one segment per edge, ``(x0, x1, None)``; ``mid_x``, ``mid_y`` and
    ``hover`` put an invisible hover point in the middle of each segment. ``pairs`` names the
    two ends of each segment; ``links`` and ``capacity_Bps`` are per segment (B/s per
    direction, summed over the cables it stands for).
    """

    name: str
    group: str
    kind: str
    pairs: tuple[tuple[str, str], ...]
    x: tuple[float | None, ...]
    y: tuple[float | None, ...]
    mid_x: tuple[float, ...]
    mid_y: tuple[float, ...]
    hover: tuple[str, ...]
    links: tuple[int, ...]
    capacity_Bps: tuple[float, ...]
    colour: str
    width: float

    @property
    def n_edges(self) -> int:
        """Number of segments (graph edges, or group-to-group edges when aggregated)."""
        return len(self.pairs)


@dataclass(frozen=True)
class _Block:
    """A plane or rail drawn as one block: its label, colour and x range."""

    label: str
    colour: str
    x0: float
    x1: float
    y0: float
    y1: float
    label_on_top: bool


@dataclass(frozen=True)
class _FabricData:
    """Everything :func:`plot_fabric` draws.

    ``view`` is :data:`VIEW_DETAILED`, :data:`VIEW_LEAF_GROUPS` or :data:`VIEW_TIER_GROUPS`;
    ``colour_by`` is ``"plane"``, ``"rail"`` or ``None`` (colour by kind); ``devices`` the
    number of vertices of the fabric; ``rows`` the y value and label of each row; ``pos`` the
    position of every marker by id; ``note`` what an aggregated marker stands for (empty in the
    detailed view).
    """

    view: str
    title: str
    note: str
    colour_by: str | None
    devices: int
    markers: tuple[_Markers, ...]
    edges: tuple[_Edges, ...]
    rows: tuple[tuple[float, str], ...]
    blocks: tuple[_Block, ...]
    pos: dict[str, tuple[float, float]] = field(repr=False)

    @property
    def aggregated(self) -> bool:
        """True unless every device has its own marker."""
        return self.view != VIEW_DETAILED


@dataclass
class _Item:
    """A marker before layout: a device (detailed view) or a group of devices (aggregated)."""

    row: int
    block: int | None
    sort_key: tuple[Any, ...]
    kind: str
    hover: str
    members: dict[str, int]
    label: str = ""


@dataclass
class _Link:
    """An edge before layout: a graph edge, or the sum of the edges between two groups."""

    u: Hashable
    v: Hashable
    kind: str
    links: int
    capacity_Bps: float
    edges: int = 1


def _fabric_data(G: nx.Graph, max_devices: int, title: str | None = None) -> _FabricData:
    """Compute what :func:`plot_fabric` draws: positions, groups, segments, hover texts, view.

    Parameters
    ----------
    G : networkx.Graph
        A fabric following the schema of :mod:`topo.fabric`.
    max_devices : int
        Above this many vertices the fabric is aggregated; above this many leaf groups, the
        leaves are merged too.
    title : str, optional
        Title; by default the fabric's name and its GPU, endpoint and switch counts.

    Returns
    -------
    _FabricData
    """
    if max_devices < 1:
        raise SpecError(f"max_devices must be at least 1, got {max_devices}")
    check_schema(G)
    if G.number_of_nodes() == 0:
        raise TopoError("the fabric has no devices: nothing to draw")
    colour_by = _colour_by(G)
    block = _blocks(G, colour_by)
    has_switches = any(d["kind"] in SWITCH_KINDS for _, d in G.nodes(data=True))
    # Groups hang off switches: a fabric without any is drawn whole, whatever its size.
    if G.number_of_nodes() <= max_devices or not has_switches:
        view, items, links = VIEW_DETAILED, *_detailed(G, block)
        note = ""
        layout_adj: Mapping[Hashable, Iterable[Hashable]] = G.adj
    else:
        view, items, links, note = VIEW_LEAF_GROUPS, *_aggregate(G, block, merge_leaves=False)
        if len(items) > max_devices:
            view, items, links, note = VIEW_TIER_GROUPS, *_aggregate(G, block, merge_leaves=True)
        adj: dict[Hashable, list[Hashable]] = defaultdict(list)
        for lk in links:
            adj[lk.u].append(lk.v)
            adj[lk.v].append(lk.u)
        layout_adj = adj
        note = (
            f"aggregated view ({G.number_of_nodes():,} devices > max_devices "
            f"{max_devices:,}): {note}"
        )
    if title is None:
        title = _default_title(G)
    return _assemble(G, items, links, layout_adj, view, title, note, colour_by)


# ---------------------------------------------------------------------------------------------
# Planes, rails and blocks


def _colour_by(G: nx.Graph) -> str | None:
    """``plane`` if the switches lie on more than one plane, ``rail`` if some are rail leaves."""
    planes: set[int] = set()
    rails: set[int] = set()
    for _, d in G.nodes(data=True):
        if d["kind"] in SWITCH_KINDS:
            planes.add(int(d.get("plane", 0)))
            if int(d.get("rail", -1)) >= 0:
                rails.add(int(d["rail"]))
    if len(planes) > 1:
        return "plane"
    if rails:
        return "rail"
    return None


def _blocks(G: nx.Graph, colour_by: str | None) -> dict[Hashable, int | None]:
    """The plane or rail of every vertex (None: shared, or no planes and rails at all).

    A switch has its own ``plane`` or ``rail`` attribute; a NIC takes that of the switch it is
    cabled to (for built fabrics the NIC index), a GPU that of its NICs if they agree;
    NVSwitches, which join all planes of a server, are shared.
    """
    if colour_by is None:
        return dict.fromkeys(G, None)
    block: dict[Hashable, int | None] = {}
    for v, d in G.nodes(data=True):
        if d["kind"] in SWITCH_KINDS:
            b = int(d.get(colour_by, 0 if colour_by == "plane" else -1))
            block[v] = b if b >= 0 else None
    for v, d in G.nodes(data=True):
        if d["kind"] == "nic":
            found = {block[s] for s in G[v] if s in block and block[s] is not None}
            block[v] = found.pop() if len(found) == 1 else None
    for v, d in G.nodes(data=True):
        if d["kind"] == "gpu":
            found = {block.get(n) for n in G[v] if G.nodes[n]["kind"] == "nic"}
            block[v] = found.pop() if len(found) == 1 else None
        elif d["kind"] not in SWITCH_KINDS and v not in block:
            block[v] = None
    return block


def _block_label(colour_by: str | None, b: int | None) -> str:
    if colour_by is None:
        return ""
    return "shared" if b is None else f"{colour_by} {b}"


def _row(d: Mapping[str, Any]) -> int:
    kind = d["kind"]
    return _ROW_OF_KIND[kind] if kind in _ROW_OF_KIND else 2 + int(d["tier"])


def _row_label(row: int) -> str:
    if row < 3:
        return ("NVSwitch", "GPU", "NIC")[row]
    return tier_name(row - 2)


# ---------------------------------------------------------------------------------------------
# The detailed view: one marker per device


def _detailed(
    G: nx.Graph, block: Mapping[Hashable, int | None]
) -> tuple[dict[Hashable, _Item], list[_Link]]:
    items: dict[Hashable, _Item] = {}
    for v, d in G.nodes(data=True):
        row = _row(d)
        items[v] = _Item(
            row=row,
            block=block[v],
            sort_key=natural_key(v),
            kind=_row_label(row),
            hover=_device_hover(G, v, d),
            members={d["kind"]: 1, "nodes": 1 if d["kind"] in ("gpu", "nic") else 0},
        )
    links = [
        _Link(u, v, d["kind"], int(d["links"]), float(d["capacity"]))
        for u, v, d in G.edges(data=True)
    ]
    return items, links


def _device_hover(G: nx.Graph, v: Hashable, d: Mapping[str, Any]) -> str:
    kind = d["kind"]
    lines = [f"<b>{v}</b>"]
    if kind in SWITCH_KINDS:
        tier = int(d["tier"])
        where = ""
        if int(G.graph.get("planes", 1)) > 1 or int(d.get("plane", 0)) > 0:
            where += f", plane {d.get('plane', 0)}"
        if int(d.get("rail", -1)) >= 0:
            where += f", rail {d['rail']}"
        ports = f", {d['ports']} ports" if "ports" in d else ""
        lines.append(f"{tier_name(tier)} switch (tier {tier}){where}{ports}")
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
                lines.append(f"{side}: {_cables(int(sides[side][0]))}, {_rate(sides[side][1])}")
        if d.get("description") and str(d["description"]) != str(v):
            lines.append(str(d["description"]))
    else:
        node = d.get("node")
        if kind == "nvswitch":
            lines.append(f"NVSwitch of node {node}")
        else:
            lines.append(f"{_LABEL_OF_KIND[kind]} {d.get('index')} of node {node}")
        by_kind: dict[str, list[float]] = {}
        for _, e in G[v].items():
            acc = by_kind.setdefault(e["kind"], [0, 0.0])
            acc[0] += int(e["links"])
            acc[1] += float(e["capacity"])
        for ek in ("nvlink", "pcie", "endpoint"):
            if ek in by_kind:
                n_links, cap = by_kind[ek]
                lines.append(f"{_EDGE_LABELS[ek]}: {_cables(int(n_links))}, {_rate(cap)}")
    return "<br>".join(lines)


# ---------------------------------------------------------------------------------------------
# The aggregated views: one marker per leaf group (or per plane, rail or pod and tier)


def _aggregate(
    G: nx.Graph, block: Mapping[Hashable, int | None], *, merge_leaves: bool
) -> tuple[dict[Hashable, _Item], list[_Link], str]:
    """Group the devices, sum the edges between groups, and describe what a marker stands for.

    Without ``merge_leaves`` every leaf is a group with the NICs cabled to it and the GPUs of
    those NICs; with it, and for every higher tier, switches are grouped by tier, plane or rail
    and the connected part of the fabric below and at their tier (a plane, a pod). NVSwitches
    and NVLink stay inside servers and are not drawn.
    """
    tier = {v: int(d["tier"]) for v, d in G.nodes(data=True) if d["kind"] in SWITCH_KINDS}
    top = max(tier.values(), default=1)
    comp_at: dict[int, dict[Hashable, str]] = {}
    for level in sorted({max(min(t, top), 2 if top >= 2 else 1) for t in tier.values()}):
        comp_at[level] = _components(G, [s for s, t in tier.items() if t <= level])

    group: dict[Hashable, str] = {}
    for s, t in tier.items():
        if t == 1 and not merge_leaves:
            group[s] = str(s)
        else:
            level = max(t, 2) if top >= 2 else 1
            group[s] = f"{t}|{block[s]}|{comp_at[level][s]}"
    # Endpoints: a NIC joins the group of the leaf it is cabled to, a GPU that of its NIC.
    unattached = 0
    for v, d in G.nodes(data=True):
        if d["kind"] == "nic":
            leaves = [s for s in G[v] if tier.get(s) == 1]
            if leaves:
                group[v] = group[min(leaves, key=natural_key) if len(leaves) > 1 else leaves[0]]
            else:
                unattached += 1
    for v, d in G.nodes(data=True):
        if d["kind"] == "gpu":
            nics = [n for n in G[v] if n in group and G.nodes[n]["kind"] == "nic"]
            if nics:
                group[v] = group[min(nics, key=natural_key) if len(nics) > 1 else nics[0]]
            else:
                unattached += 1

    members: dict[str, Counter[str]] = defaultdict(Counter)
    names: dict[str, list[Hashable]] = defaultdict(list)
    nodes: dict[str, set[Any]] = defaultdict(set)
    for v, g in group.items():
        d = G.nodes[v]
        members[g][d["kind"]] += 1
        if d["kind"] in SWITCH_KINDS:
            names[g].append(v)
        else:
            nodes[g].add(d["node"])
    sums: dict[tuple[str, str, str], list[float]] = {}
    inside: dict[str, dict[str, list[float]]] = defaultdict(dict)
    for u, v, e in G.edges(data=True):
        gu, gv = group.get(u), group.get(v)
        if gu is None or gv is None:
            continue
        if gu == gv:
            acc = inside[gu].setdefault(e["kind"], [0, 0.0])
        else:
            key = (gu, gv, e["kind"]) if gu < gv else (gv, gu, e["kind"])
            acc = sums.setdefault(key, [0, 0.0, 0])
            acc[2] += 1
        acc[0] += int(e["links"])
        acc[1] += float(e["capacity"])

    items: dict[Hashable, _Item] = {}
    for g, switches in names.items():
        t = tier[switches[0]]
        label = _group_label(switches, t)
        m = dict(members[g])
        m["nodes"] = len(nodes[g])
        items[g] = _Item(
            row=2 + t,
            block=block[switches[0]] if len({block[s] for s in switches}) == 1 else None,
            sort_key=natural_key(min(switches, key=natural_key)),
            kind=f"{tier_name(t)} group",
            hover="",
            members=m,
            label=label,
        )
    links = [
        _Link(gu, gv, kind, int(acc[0]), float(acc[1]), int(acc[2]))
        for (gu, gv, kind), acc in sorted(sums.items())
    ]
    incident: dict[Hashable, list[_Link]] = defaultdict(list)
    for lk in links:
        incident[lk.u].append(lk)
        incident[lk.v].append(lk)
    for gid, it in items.items():
        it.hover = _group_hover(it, gid, items, incident[gid], inside[str(gid)])
    return items, links, _describe(items, unattached, G)


def _components(G: nx.Graph, switches: list[Hashable]) -> dict[Hashable, str]:
    """Connected component of each switch in the subgraph of ``switches``, named by a member."""
    comp: dict[Hashable, str] = {}
    for c in nx.connected_components(G.subgraph(switches)):
        name = str(min(c, key=natural_key))
        for s in c:
            comp[s] = name
    return comp


def _group_label(switches: list[Hashable], t: int) -> str:
    if len(switches) == 1:
        return str(switches[0])
    prefix = re.sub(r"\d+$", "", os.path.commonprefix(sorted(str(s) for s in switches)))
    count = f"{len(switches):,} {_PLURALS.get(tier_name(t), ('', f'{tier_name(t)} switches'))[1]}"
    return f"{prefix}* ({count})" if prefix else count


_PLURALS = {
    "leaf": ("leaf", "leaves"),
    "spine": ("spine", "spines"),
    "core": ("core switch", "core switches"),
    "switch": ("switch", "switches"),
    "nic": ("NIC", "NICs"),
    "gpu": ("GPU", "GPUs"),
}


def _members_text(m: Mapping[str, int]) -> str:
    """Say what a marker stands for.

    ``{"leaf": 1, "nic": 32, "gpu": 32, "nodes": 32}`` -> ``1 leaf, 32 NICs, 32 GPUs of 32 nodes``.
    """
    parts = [
        f"{m[kind]:,} {one if m[kind] == 1 else many}"
        for kind, (one, many) in _PLURALS.items()
        if m.get(kind)
    ]
    text = ", ".join(parts)
    if m.get("nodes"):
        text += f" of {m['nodes']:,} node{'s' if m['nodes'] > 1 else ''}"
    return text


def _short_text(m: Mapping[str, int]) -> str:
    """What a group marker stands for in a few words: its GPUs, else NICs, else switches."""
    for kind in ("gpu", "nic", *_PLURALS):
        if m.get(kind):
            one, many = _PLURALS[kind]
            return f"{m[kind]:,} {one if m[kind] == 1 else many}"
    return ""


def _group_hover(
    it: _Item,
    g: Hashable,
    items: Mapping[Hashable, _Item],
    incident: list[_Link],
    inside: Mapping[str, list[float]],
) -> str:
    """Hover text of a group: what it holds, its NIC cables, and its cables up and down."""
    lines = [f"<b>{it.label}</b>", _members_text(it.members)]
    if "endpoint" in inside:
        n_links, cap = inside["endpoint"]
        lines.append(f"to its NICs: {_cables(int(n_links))}, {_rate(cap)}")
    sides: dict[str, list[float]] = {}
    for lk in incident:
        other = items[lk.v if lk.u == g else lk.u]
        side = "down" if other.row < it.row else "up" if other.row > it.row else "same tier"
        acc = sides.setdefault(side, [0, 0.0])
        acc[0] += lk.links
        acc[1] += lk.capacity_Bps
    for side in ("down", "up", "same tier"):
        if side in sides:
            lines.append(f"{side}: {_cables(int(sides[side][0]))}, {_rate(sides[side][1])}")
    if "fabric" in inside:
        n_links, cap = inside["fabric"]
        lines.append(f"cables inside the group: {_cables(int(n_links))}, {_rate(cap)}")
    return "<br>".join(lines)


def _describe(items: Mapping[Hashable, _Item], unattached: int, G: nx.Graph) -> str:
    """What one marker of each tier stands for, e.g. ``each leaf marker: 1 leaf, 32 NICs ...``."""
    by_row: dict[int, list[_Item]] = defaultdict(list)
    for it in items.values():
        by_row[it.row].append(it)
    parts = []
    for row in sorted(by_row):
        its = by_row[row]
        keys = sorted({k for it in its for k, n in it.members.items() if n})
        span = {
            k: (min(it.members.get(k, 0) for it in its), max(it.members.get(k, 0) for it in its))
            for k in keys
        }
        lo = {k: s[0] for k, s in span.items()}
        hi = {k: s[1] for k, s in span.items()}
        text = _members_text(lo) if lo == hi else f"{_members_text(lo)} to {_members_text(hi)}"
        parts.append(f"each {tier_name(row - 2)} marker = {text}")
    if any(d["kind"] == "nvswitch" for _, d in G.nodes(data=True)):
        parts.append("NVSwitches and NVLink not drawn")
    if unattached:
        parts.append(f"{unattached:,} GPUs or NICs without a switch not drawn")
    return "; ".join(parts)


# ---------------------------------------------------------------------------------------------
# Layout and assembly into traces


def _assemble(
    G: nx.Graph,
    items: Mapping[Hashable, _Item],
    links: list[_Link],
    adj: Mapping[Hashable, Iterable[Hashable]],
    view: str,
    title: str,
    note: str,
    colour_by: str | None,
) -> _FabricData:
    rows = sorted({it.row for it in items.values()})
    y_of = {r: float(i) for i, r in enumerate(rows)}
    pos, spans, width, spacing = _layout(items, adj, rows, y_of)
    blocks = sorted(spans)

    def colour_of(label: str, b: int | None) -> str:
        if colour_by is None:
            return _KIND_COLOURS.get(label, _SHARED_COLOUR)
        return _SHARED_COLOUR if b is None else _PALETTE[b % len(_PALETTE)]

    # Markers: one trace per (plane or rail, row); by kind when there are no planes or rails.
    cells: dict[tuple[int | None, int], list[Hashable]] = defaultdict(list)
    for v, it in items.items():
        cells[(it.block, it.row)].append(v)
    markers = []
    aggregated = view != VIEW_DETAILED
    px_per_unit = _NOMINAL_PLOT_WIDTH_PX / max(width, 1.0)
    for (b, row), ids in sorted(cells.items(), key=lambda kv: (_block_order(kv[0][0]), kv[0][1])):
        ids.sort(key=lambda v: pos[v][0])
        first = items[ids[0]]
        kind_label = first.kind
        group = _block_label(colour_by, b) if colour_by else _row_label(row)
        base = 0.8 * spacing[(row, b)] * px_per_unit
        size = min(16.0 if aggregated else 14.0, max(6.0 if aggregated else 3.0, base))
        markers.append(
            _Markers(
                name=f"{group} {kind_label}" if colour_by else kind_label,
                group=group,
                kind=kind_label,
                row=row,
                ids=tuple(str(v) for v in ids),
                x=tuple(pos[v][0] for v in ids),
                y=tuple(pos[v][1] for v in ids),
                hover=tuple(items[v].hover for v in ids),
                members=tuple(dict(items[v].members) for v in ids),
                colour=colour_of(group, b),
                symbol=_symbol(row, aggregated),
                size=round(size, 1),
                # Name the few big group markers of a sparse row on the figure itself.
                text=tuple(_short_text(items[v].members) for v in ids)
                if aggregated and len(ids) <= 4
                else (),
            )
        )

    # Edges: one trace per (plane or rail, edge kind); NVLink on its own.
    many_blocks = len(blocks) > 1
    aggregated = view != VIEW_DETAILED
    bundles: dict[tuple[str, str, int | None], list[_Link]] = defaultdict(list)
    for lk in links:
        key: tuple[str, str, int | None]
        if lk.kind == "nvlink":
            key = (_NVLINK_GROUP, lk.kind, None)
        else:
            b = _edge_block(items[lk.u].block, items[lk.v].block)
            label = _block_label(colour_by, b) if colour_by else _EDGE_LABELS[lk.kind]
            key = (label, lk.kind, b)
        bundles[key].append(lk)
    edges = []
    for (group, kind, b), lks in sorted(
        bundles.items(),
        key=lambda kv: (
            kv[0][0] == _NVLINK_GROUP,
            _block_order(kv[0][2]),
            list(_EDGE_LABELS).index(kv[0][1]),
        ),
    ):
        xs: list[float | None] = []
        ys: list[float | None] = []
        mx, my, hover = [], [], []
        for lk in lks:
            (x0, y0), (x1, y1) = pos[lk.u], pos[lk.v]
            xs += [x0, x1, None]
            ys += [y0, y1, None]
            mx.append(round((x0 + x1) / 2, 2))
            my.append(round((y0 + y1) / 2, 2))
            hover.append(_edge_hover(lk, items, view))
        if kind == "nvlink":
            colour = "rgba(85,85,85,0.18)" if many_blocks else "rgba(85,85,85,0.35)"
        elif colour_by is None:
            # Tinted like the devices the cables reach: PCIe green, NIC cables blue.
            colour = _rgba(_KIND_EDGE_COLOURS[kind], 0.45)
        else:
            colour = _rgba(colour_of(group, b), 0.45)
        edges.append(
            _Edges(
                name=group
                if colour_by is None or kind == "nvlink"
                else f"{group} {_EDGE_LABELS[kind]}",
                group=group,
                kind=kind,
                pairs=tuple((str(lk.u), str(lk.v)) for lk in lks),
                x=tuple(xs),
                y=tuple(ys),
                mid_x=tuple(mx),
                mid_y=tuple(my),
                hover=tuple(hover),
                links=tuple(lk.links for lk in lks),
                capacity_Bps=tuple(lk.capacity_Bps for lk in lks),
                colour=colour,
                width=_edge_width(lks, view),
            )
        )

    block_shapes = []
    if colour_by is not None:
        for b in blocks:
            x0, x1, r0, r1 = spans[b]
            block_shapes.append(
                _Block(
                    label=_block_label(colour_by, b),
                    colour=colour_of("", b),
                    x0=x0,
                    x1=x1,
                    y0=y_of[r0] - 0.35,
                    y1=y_of[r1] + 0.35,
                    # Above the block if nothing is drawn above it, else under it.
                    label_on_top=r1 == rows[-1],
                )
            )
    row_labels = tuple(
        (y_of[r], (f"{_row_label(r)} groups" if view != VIEW_DETAILED else _row_label(r)))
        for r in rows
    )
    return _FabricData(
        view=view,
        title=title,
        note=note,
        colour_by=colour_by,
        devices=G.number_of_nodes(),
        markers=tuple(markers),
        edges=tuple(edges),
        rows=row_labels,
        blocks=tuple(block_shapes),
        pos={str(v): p for v, p in pos.items()},
    )


def _layout(
    items: Mapping[Hashable, _Item],
    adj: Mapping[Hashable, Iterable[Hashable]],
    rows: list[int],
    y_of: Mapping[int, float],
) -> tuple[
    dict[Hashable, tuple[float, float]],
    dict[int, tuple[float, float, int, int]],
    float,
    dict[tuple[int, int | None], float],
]:
    """Place every item: y by row, x by block and, inside a block, by its neighbours.

    The leaf row (or the lowest switch row) is ordered by name; each row above it by the mean
    x of its already placed neighbours below, each row under it by that of its neighbours
    above (ties by name), so NICs sit under their leaf and GPUs under their NIC. Each block is
    as wide as its fullest row; items of a row are spread evenly across their block, shared
    items across the whole width.

    Returns positions, the x span and row range of each block, the total width, and the
    spacing between neighbouring items of each (row, block) cell.
    """
    cells: dict[tuple[int, int | None], list[Hashable]] = defaultdict(list)
    for v, it in items.items():
        cells[(it.row, it.block)].append(v)
    blocks = sorted({b for _, b in cells if b is not None})
    bwidth = {b: max(len(cells.get((r, b), ())) for r in rows) for b in blocks}
    gap = max(1.0, 0.12 * max(bwidth.values())) if blocks else 0.0
    x0: dict[int, float] = {}
    cursor = 0.0
    for b in blocks:
        x0[b] = cursor
        cursor += bwidth[b] + gap
    width = max(cursor - gap, max(len(cells.get((r, None), ())) for r in rows), 1.0)

    switch_rows = [r for r in rows if r >= 3]
    anchor = switch_rows[0] if switch_rows else rows[-1]
    order = [r for r in rows if r >= anchor] + [r for r in reversed(rows) if r < anchor]
    pos: dict[Hashable, tuple[float, float]] = {}
    spacing: dict[tuple[int, int | None], float] = {}
    for r in order:
        for cell_block in [*blocks, None]:
            ids = cells.get((r, cell_block))
            if not ids:
                continue
            ids.sort(key=lambda v: (_barycentre(v, adj, pos), items[v].sort_key))
            if cell_block is None:
                start, span = 0.0, width
            else:
                start, span = x0[cell_block], float(bwidth[cell_block])
            step = span / len(ids)
            spacing[(r, cell_block)] = step
            for k, v in enumerate(ids):
                pos[v] = (round(start + (k + 0.5) * step, 2), y_of[r])
    spans = {}
    for b in blocks:
        block_rows = [r for r in rows if cells.get((r, b))]
        spans[b] = (x0[b] - gap / 3, x0[b] + bwidth[b] + gap / 3, block_rows[0], block_rows[-1])
    return pos, spans, width, spacing


def _barycentre(
    v: Hashable,
    adj: Mapping[Hashable, Iterable[Hashable]],
    pos: Mapping[Hashable, tuple[float, float]],
) -> float:
    xs = [pos[n][0] for n in adj.get(v, ()) if n in pos]
    return round(sum(xs) / len(xs), 6) if xs else math.inf


def _edge_block(a: int | None, b: int | None) -> int | None:
    if a == b or b is None:
        return a
    if a is None:
        return b
    return None


def _block_order(b: int | None) -> tuple[int, int]:
    return (1, 0) if b is None else (0, b)


def _edge_hover(lk: _Link, items: Mapping[Hashable, _Item], view: str) -> str:
    ends = [items[lk.u].label or str(lk.u), items[lk.v].label or str(lk.v)]
    if items[lk.u].row > items[lk.v].row:
        ends.reverse()
    head = f"{ends[0]} — {ends[1]}"
    label = _EDGE_LABELS[lk.kind]
    if view == VIEW_DETAILED:
        return f"{head}<br>{label}: {_cables(lk.links)}, {_rate(lk.capacity_Bps)} per direction"
    return (
        f"{head}<br>{label}: {_cables(lk.links)}, {_rate(lk.capacity_Bps)} per direction in total"
    )


def _edge_width(lks: list[_Link], view: str) -> float:
    if view == VIEW_DETAILED:
        return 1.0 if lks and lks[0].kind != "nvlink" else 0.6
    return 1.5


def _symbol(row: int, aggregated: bool) -> str:
    if row < 3:
        return ("diamond", "square", "circle")[row]
    return "hexagon" if aggregated else "triangle-up"


# ---------------------------------------------------------------------------------------------
# Small formatting helpers


def _num(x: float) -> str:
    if abs(x - round(x)) < 1e-9:
        return f"{round(x):,}"
    return f"{x:,.1f}" if abs(x) >= 100 else f"{x:.3g}"


def _rate(capacity_Bps: float) -> str:
    """``50e9`` -> ``400 Gb/s (50 GB/s)``."""
    return f"{_num(Bps_to_gbps(capacity_Bps))} Gb/s ({_num(Bps_to_GBps(capacity_Bps))} GB/s)"


def _cables(n: int) -> str:
    return f"{n:,} cable{'s' if n != 1 else ''}"


def _rgba(hex_colour: str, alpha: float) -> str:
    h = hex_colour.lstrip("#")
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def _default_title(G: nx.Graph) -> str:
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
# Drawing


def plot_fabric(G: nx.Graph, *, max_devices: int = 2000, title: str | None = None) -> go.Figure:
    """Draw fabric ``G`` as a layered figure: endpoints at the bottom, switch tiers above.

    Planes (MPFT) or rails (MRFT) are laid side by side and coloured apart; hovering a device
    or the middle of a cable shows its name, kind, capacity (Gb/s and GB/s per direction) and
    cable count. Fabrics with more than ``max_devices`` vertices are drawn aggregated: one
    marker per leaf with its NICs and GPUs, switches of higher tiers merged per plane, rail or
    pod, group-to-group cables summed (see the module docstring).

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
    data = _fabric_data(G, max_devices, title)
    fig = go.Figure()
    # Legend: one entry per plane or rail (or per kind), shown on its first marker trace;
    # edge groups without markers (NVLink, cables between blocks) get their own entry.
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
    shapes = []
    annotations = []
    for bl in data.blocks:
        shapes.append(
            {
                "type": "rect",
                "layer": "below",
                "x0": bl.x0,
                "x1": bl.x1,
                "y0": bl.y0,
                "y1": bl.y1,
                "fillcolor": _rgba(bl.colour, 0.07),
                "line": {"width": 0},
            }
        )
        annotations.append(
            {
                "x": (bl.x0 + bl.x1) / 2,
                "y": bl.y1 if bl.label_on_top else bl.y0,
                "yanchor": "bottom" if bl.label_on_top else "top",
                "text": f"<b>{bl.label}</b>",
                "showarrow": False,
                "font": {"color": bl.colour, "size": 12},
            }
        )
    note_lines = 0
    if data.note:
        note, note_lines = _note_annotation(data.note)
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
    return fig


def _wrap(text: str, width: int) -> str:
    """Break ``text`` with ``<br>`` at ``; `` separators so no line runs past ``width``."""
    lines: list[str] = []
    for part in text.split("; "):
        if lines and len(lines[-1]) + len(part) + 2 <= width:
            lines[-1] += "; " + part
        else:
            lines.append(part)
    return "<br>".join(lines)


def _note_annotation(text: str) -> tuple[dict[str, Any], int]:
    """A grey note above the plot's top left corner, wrapped at 150 characters; and its lines."""
    note = _wrap(text, 150)
    annotation = {
        "text": note,
        "xref": "paper",
        "yref": "paper",
        "x": 0,
        "y": 1,
        "xanchor": "left",
        "yanchor": "bottom",
        "yshift": 6,
        "align": "left",
        "showarrow": False,
        "font": {"size": 12, "color": "#444"},
    }
    return annotation, note.count("<br>") + 1


def write_html(fig: go.Figure, path: str | Path) -> None:
    """Write ``fig`` as a standalone HTML file that works offline, whole or not at all.

    plotly.js is embedded in the file (about 4.6 MB), so it opens without network access.

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
        E.g. from :func:`plot_fabric`.
    path : str or Path
        Output file (conventionally ``*.html``).

    Raises
    ------
    FormatError
        If the file cannot be written (its folder is missing or not writable).
    """
    html = fig.to_html(
        include_plotlyjs=True,
        full_html=True,
        config={"responsive": True, "displaylogo": False, "scrollZoom": True},
    )
    # plotly escapes every '/', '<', '>' and non-ASCII character of the figure JSON as \\uXXXX
    # (6 bytes each); in the figure's own script (after the bundle) undo the harmless ones.
    bundle = get_plotlyjs()
    cut = html.find(bundle)
    cut = cut + len(bundle) if cut >= 0 else len(html)
    write_atomic(path, html[:cut] + _unescape_json(html[cut:]))


_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u([0-9a-fA-F]{4})")
_ESCAPED_TAG = re.compile(r"(?<!\\)((?:\\\\)*)\\u003c(/?(?:br|b|sup))\\u003e")


def _unescape_json(text: str) -> str:
    """Turn ``\\u002f`` back into ``/``, ``\\u003cbr\\u003e`` into ``<br>`` and non-ASCII escapes
    into UTF-8, in JSON embedded in a ``<script>``.

    ``<`` stays escaped everywhere else, so no ``</script`` can appear; U+2028 and U+2029, which
    old JavaScript engines reject in strings, and surrogates stay escaped.
    """

    def char(m: re.Match[str]) -> str:
        code = int(m.group(2), 16)
        keep = code != 0x2F and (code < 0x80 or 0xD800 <= code < 0xE000 or code in (0x2028, 0x2029))
        return m.group(0) if keep else m.group(1) + chr(code)

    return _ESCAPED_TAG.sub(r"\1<\2>", _ESCAPE.sub(char, text))
