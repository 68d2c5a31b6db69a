"""Where everything of a fabric figure goes: rows (layers), blocks (planes, rails), positions,
colours, and the marker and line sets that the figures draw.

One row per layer, bottom to top: NVSwitches, GPUs, NICs, then the switch tiers (leaf, spine,
core, ...). Planes (MPFT) or rails (MRFT) are laid side by side as separate blocks and coloured
apart; switches shared by all rails (MRFT spines) and NVSwitches span the whole width in grey.
Inside a block the leaf row (or the lowest switch row) is in name order; each row above is
ordered by where its neighbours below sit, each row below by where its neighbours above sit.

:func:`assemble` turns the markers of a view (:class:`Item`, one per device or per group) and
its lines (:class:`Link`) into :class:`FabricData`, everything a figure draws; the detailed
view is made in :mod:`topo.plot.fabric`, the aggregated ones in :mod:`topo.plot.aggregate`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from topo.fabric import SWITCH_KINDS, tier_name
from topo.plot.text import EDGE_LABELS, cables, rate, rgba, short_text

__all__ = [
    "VIEW_DETAILED",
    "VIEW_LEAF_GROUPS",
    "VIEW_TIER_GROUPS",
    "Block",
    "Edges",
    "FabricData",
    "Item",
    "Link",
    "Markers",
    "assemble",
    "block_decorations",
    "block_label",
    "block_of",
    "colour_by",
    "place",
    "row_label",
    "row_of",
]

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
_NVLINK_GROUP = "NVLink (GPU–NVSwitch)"
# Rows, bottom to top: NVSwitch 0, GPU 1, NIC 2, switch tier t at 2 + t.
_ROW_OF_KIND = {"nvswitch": 0, "gpu": 1, "nic": 2}
_NOMINAL_PLOT_WIDTH_PX = 1100.0


# ---------------------------------------------------------------------------------------------
# What a figure draws


@dataclass(frozen=True)
class Markers:
    """One marker trace: the devices (or groups) of one kind in one plane, rail or kind group.

    ``members`` gives, for each marker, how many devices it stands for by kind (``gpu``,
    ``nic``, ``leaf``, ...; in the detailed view ``{kind: 1}``) and under ``nodes`` how many
    distinct servers its GPUs and NICs belong to. ``x`` and ``y`` are in layout units (one
    unit per marker of a block's fullest row; one unit per row).
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
class Edges:
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
class Block:
    """A plane or rail drawn as one shaded box: its label, colour and extent (layout units)."""

    label: str
    colour: str
    x0: float
    x1: float
    y0: float
    y1: float
    label_on_top: bool


@dataclass(frozen=True)
class FabricData:
    """Everything :func:`topo.plot.plot_fabric` draws, and the layout the link-load page reuses.

    ``view`` is :data:`VIEW_DETAILED`, :data:`VIEW_LEAF_GROUPS` or :data:`VIEW_TIER_GROUPS`;
    ``colour_by`` is ``"plane"``, ``"rail"`` or ``None`` (colour by kind); ``devices`` the
    number of vertices of the fabric; ``rows`` the y value and label of each row; ``pos`` the
    position of every marker by id; ``note`` what an aggregated marker stands for (empty in the
    detailed view); ``marker_of`` the id of the marker each vertex is drawn in, by vertex name
    (itself in the detailed view; its group when aggregated; vertices not drawn left out).
    """

    view: str
    title: str
    note: str
    colour_by: str | None
    devices: int
    markers: tuple[Markers, ...]
    edges: tuple[Edges, ...]
    rows: tuple[tuple[float, str], ...]
    blocks: tuple[Block, ...]
    pos: dict[str, tuple[float, float]] = field(repr=False)
    marker_of: dict[str, str] = field(repr=False)

    @property
    def aggregated(self) -> bool:
        """True unless every device has its own marker."""
        return self.view != VIEW_DETAILED


@dataclass
class Item:
    """A marker before layout: a device (detailed view) or a group of devices (aggregated).

    ``row`` is from :func:`row_of`; ``block`` the plane or rail (None: shared); ``sort_key``
    orders items of a row that their neighbours do not; ``kind`` the row's label (``leaf``,
    or ``leaf group``); ``members`` the devices it stands for by kind (see :class:`Markers`);
    ``label`` names a group in the hover texts of its lines (a device is named by its id).
    """

    row: int
    block: int | None
    sort_key: tuple[Any, ...]
    kind: str
    hover: str
    members: dict[str, int]
    label: str = ""


@dataclass
class Link:
    """A line before layout: a graph edge, or the sum of the edges between two groups.

    ``links`` counts cables, ``capacity_Bps`` is their summed capacity per direction (B/s),
    ``edges`` the number of graph edges the line stands for.
    """

    u: Hashable
    v: Hashable
    kind: str
    links: int
    capacity_Bps: float
    edges: int = 1


# ---------------------------------------------------------------------------------------------
# Rows, planes, rails and blocks


def colour_by(G: nx.Graph) -> str | None:
    """How the fabric's devices are coloured apart.

    Parameters
    ----------
    G : networkx.Graph
        A fabric following the schema of :mod:`topo.fabric`.

    Returns
    -------
    str or None
        ``"plane"`` if the switches lie on more than one plane, ``"rail"`` if some are rail
        leaves, else None (coloured by kind).
    """
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


def block_of(G: nx.Graph, by: str | None) -> dict[Hashable, int | None]:
    """The plane or rail of every vertex (None: shared, or no planes and rails at all).

    A switch has its own ``plane`` or ``rail`` attribute; a NIC takes that of the switch it is
    cabled to (for built fabrics the NIC index), a GPU that of its NICs if they agree;
    NVSwitches, which join all planes of a server, are shared.

    Parameters
    ----------
    G : networkx.Graph
        A fabric.
    by : str or None
        ``"plane"``, ``"rail"`` or None, from :func:`colour_by`.

    Returns
    -------
    dict
        Vertex -> block index or None.
    """
    if by is None:
        return dict.fromkeys(G, None)
    block: dict[Hashable, int | None] = {}
    for v, d in G.nodes(data=True):
        if d["kind"] in SWITCH_KINDS:
            b = int(d.get(by, 0 if by == "plane" else -1))
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


def block_label(by: str | None, b: int | None) -> str:
    """Label of block ``b``: ``plane 3``, ``rail 0``, ``shared``; empty without blocks.

    Parameters
    ----------
    by : str or None
        ``"plane"``, ``"rail"`` or None.
    b : int or None
        Block index; None for shared devices.

    Returns
    -------
    str
    """
    if by is None:
        return ""
    return "shared" if b is None else f"{by} {b}"


def row_of(d: Mapping[str, Any]) -> int:
    """Row of a vertex from its attributes: NVSwitch 0, GPU 1, NIC 2, switch tier t at 2 + t.

    Parameters
    ----------
    d : Mapping
        The vertex's attributes (``kind``, and ``tier`` for switches).

    Returns
    -------
    int
    """
    kind = d["kind"]
    return _ROW_OF_KIND[kind] if kind in _ROW_OF_KIND else 2 + int(d["tier"])


def row_label(row: int) -> str:
    """Label of a row: ``NVSwitch``, ``GPU``, ``NIC``, then the tier names (``leaf``, ...).

    Parameters
    ----------
    row : int
        From :func:`row_of`.

    Returns
    -------
    str
    """
    if row < 3:
        return ("NVSwitch", "GPU", "NIC")[row]
    return tier_name(row - 2)


def _colour_of(by: str | None, label: str, b: int | None) -> str:
    """Colour of block ``b``, or without blocks of the kind labelled ``label``."""
    if by is None:
        return _KIND_COLOURS.get(label, _SHARED_COLOUR)
    return _SHARED_COLOUR if b is None else _PALETTE[b % len(_PALETTE)]


# ---------------------------------------------------------------------------------------------
# Positions


def place(
    items: Mapping[Hashable, Item],
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

    Parameters
    ----------
    items : Mapping[Hashable, Item]
        The markers, by id.
    adj : Mapping[Hashable, Iterable[Hashable]]
        Neighbours of each id (the graph's adjacency, or the group-to-group lines).
    rows : list of int
        The rows drawn, bottom to top.
    y_of : Mapping[int, float]
        The y of each row.

    Returns
    -------
    pos : dict
        Id -> (x, y), in layout units.
    spans : dict
        Block -> (x0, x1, lowest row, highest row).
    width : float
        Total width.
    spacing : dict
        (row, block) -> distance between neighbouring items of that cell.
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


# ---------------------------------------------------------------------------------------------
# Assembly into marker and line sets


def assemble(
    G: nx.Graph,
    items: Mapping[Hashable, Item],
    links: list[Link],
    adj: Mapping[Hashable, Iterable[Hashable]],
    view: str,
    title: str,
    note: str,
    by: str | None,
    marker_of: Mapping[str, str],
) -> FabricData:
    """Lay out a view and cut it into the marker and line sets a figure draws.

    Parameters
    ----------
    G : networkx.Graph
        The fabric (for its number of vertices).
    items : Mapping[Hashable, Item]
        The markers of the view, by id.
    links : list of Link
        Its lines, between ids of ``items``.
    adj : Mapping[Hashable, Iterable[Hashable]]
        Neighbours of each id, for the order inside a row (see :func:`place`).
    view : str
        :data:`VIEW_DETAILED`, :data:`VIEW_LEAF_GROUPS` or :data:`VIEW_TIER_GROUPS`.
    title, note : str
        The figure's title and the note under it.
    by : str or None
        ``"plane"``, ``"rail"`` or None (:func:`colour_by`).
    marker_of : Mapping[str, str]
        The id of the marker each vertex is drawn in, by vertex name.

    Returns
    -------
    FabricData
        One marker set per (block, row), one line set per (block, edge kind), NVLink on its
        own; by kind instead of block when ``by`` is None.
    """
    rows = sorted({it.row for it in items.values()})
    y_of = {r: float(i) for i, r in enumerate(rows)}
    pos, spans, width, spacing = place(items, adj, rows, y_of)
    aggregated = view != VIEW_DETAILED
    row_labels = tuple(
        (y_of[r], (f"{row_label(r)} groups" if aggregated else row_label(r))) for r in rows
    )
    return FabricData(
        view=view,
        title=title,
        note=note,
        colour_by=by,
        devices=G.number_of_nodes(),
        markers=_marker_sets(items, pos, spacing, width, aggregated, by),
        edges=_edge_sets(items, links, pos, view, by, many_blocks=len(spans) > 1),
        rows=row_labels,
        blocks=_block_boxes(spans, y_of, rows, by),
        pos={str(v): p for v, p in pos.items()},
        marker_of=dict(marker_of),
    )


def _marker_sets(
    items: Mapping[Hashable, Item],
    pos: Mapping[Hashable, tuple[float, float]],
    spacing: Mapping[tuple[int, int | None], float],
    width: float,
    aggregated: bool,
    by: str | None,
) -> tuple[Markers, ...]:
    """One marker set per (plane or rail, row); by kind when there are no planes or rails."""
    cells: dict[tuple[int | None, int], list[Hashable]] = defaultdict(list)
    for v, it in items.items():
        cells[(it.block, it.row)].append(v)
    markers = []
    px_per_unit = _NOMINAL_PLOT_WIDTH_PX / max(width, 1.0)
    for (b, row), ids in sorted(cells.items(), key=lambda kv: (_block_order(kv[0][0]), kv[0][1])):
        ids.sort(key=lambda v: pos[v][0])
        kind_label = items[ids[0]].kind
        group = block_label(by, b) if by else row_label(row)
        base = 0.8 * spacing[(row, b)] * px_per_unit
        size = min(16.0 if aggregated else 14.0, max(6.0 if aggregated else 3.0, base))
        markers.append(
            Markers(
                name=f"{group} {kind_label}" if by else kind_label,
                group=group,
                kind=kind_label,
                row=row,
                ids=tuple(str(v) for v in ids),
                x=tuple(pos[v][0] for v in ids),
                y=tuple(pos[v][1] for v in ids),
                hover=tuple(items[v].hover for v in ids),
                members=tuple(dict(items[v].members) for v in ids),
                colour=_colour_of(by, group, b),
                symbol=_symbol(row, aggregated),
                size=round(size, 1),
                # Name the few big group markers of a sparse row on the figure itself.
                text=tuple(short_text(items[v].members) for v in ids)
                if aggregated and len(ids) <= 4
                else (),
            )
        )
    return tuple(markers)


def _edge_sets(
    items: Mapping[Hashable, Item],
    links: list[Link],
    pos: Mapping[Hashable, tuple[float, float]],
    view: str,
    by: str | None,
    *,
    many_blocks: bool,
) -> tuple[Edges, ...]:
    """One line set per (plane or rail, edge kind); NVLink on its own."""
    bundles: dict[tuple[str, str, int | None], list[Link]] = defaultdict(list)
    for lk in links:
        key: tuple[str, str, int | None]
        if lk.kind == "nvlink":
            key = (_NVLINK_GROUP, lk.kind, None)
        else:
            b = _edge_block(items[lk.u].block, items[lk.v].block)
            label = block_label(by, b) if by else EDGE_LABELS[lk.kind]
            key = (label, lk.kind, b)
        bundles[key].append(lk)
    order = sorted(
        bundles,
        key=lambda k: (k[0] == _NVLINK_GROUP, _block_order(k[2]), list(EDGE_LABELS).index(k[1])),
    )
    return tuple(
        _edge_set(group, kind, b, bundles[(group, kind, b)], items, pos, view, by, many_blocks)
        for group, kind, b in order
    )


def _edge_set(
    group: str,
    kind: str,
    b: int | None,
    lks: list[Link],
    items: Mapping[Hashable, Item],
    pos: Mapping[Hashable, tuple[float, float]],
    view: str,
    by: str | None,
    many_blocks: bool,
) -> Edges:
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
    elif by is None:
        # Tinted like the devices the cables reach: PCIe green, NIC cables blue.
        colour = rgba(_KIND_EDGE_COLOURS[kind], 0.45)
    else:
        colour = rgba(_colour_of(by, group, b), 0.45)
    return Edges(
        name=group if by is None or kind == "nvlink" else f"{group} {EDGE_LABELS[kind]}",
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


def _block_boxes(
    spans: Mapping[int, tuple[float, float, int, int]],
    y_of: Mapping[int, float],
    rows: list[int],
    by: str | None,
) -> tuple[Block, ...]:
    if by is None:
        return ()
    return tuple(
        Block(
            label=block_label(by, b),
            colour=_colour_of(by, "", b),
            x0=x0,
            x1=x1,
            y0=y_of[r0] - 0.35,
            y1=y_of[r1] + 0.35,
            # Above the block if nothing is drawn above it, else under it.
            label_on_top=r1 == rows[-1],
        )
        for b, (x0, x1, r0, r1) in sorted(spans.items())
    )


def block_decorations(
    blocks: Iterable[Block], alpha: float, refs: Mapping[str, str] | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The shaded boxes of the planes or rails and their labels, as plotly layout items.

    Parameters
    ----------
    blocks : Iterable[Block]
        From :attr:`FabricData.blocks`.
    alpha : float
        Opacity of the shading, 0 to 1.
    refs : Mapping[str, str], optional
        Axis references added to every shape and label (e.g. ``{"xref": "x", "yref": "y"}``
        in a figure of subplots).

    Returns
    -------
    shapes, annotations : list of dict
    """
    refs = dict(refs or {})
    shapes, annotations = [], []
    for bl in blocks:
        shapes.append(
            {
                "type": "rect",
                **refs,
                "layer": "below",
                "x0": bl.x0,
                "x1": bl.x1,
                "y0": bl.y0,
                "y1": bl.y1,
                "fillcolor": rgba(bl.colour, alpha),
                "line": {"width": 0},
            }
        )
        annotations.append(
            {
                "x": (bl.x0 + bl.x1) / 2,
                "y": bl.y1 if bl.label_on_top else bl.y0,
                **refs,
                "yanchor": "bottom" if bl.label_on_top else "top",
                "text": f"<b>{bl.label}</b>",
                "showarrow": False,
                "font": {"color": bl.colour, "size": 12},
            }
        )
    return shapes, annotations


def _edge_block(a: int | None, b: int | None) -> int | None:
    if a == b or b is None:
        return a
    if a is None:
        return b
    return None


def _block_order(b: int | None) -> tuple[int, int]:
    return (1, 0) if b is None else (0, b)


def _edge_hover(lk: Link, items: Mapping[Hashable, Item], view: str) -> str:
    ends = [items[lk.u].label or str(lk.u), items[lk.v].label or str(lk.v)]
    if items[lk.u].row > items[lk.v].row:
        ends.reverse()
    head = f"{ends[0]} — {ends[1]}"
    label = EDGE_LABELS[lk.kind]
    if view == VIEW_DETAILED:
        return f"{head}<br>{label}: {cables(lk.links)}, {rate(lk.capacity_Bps)} per direction"
    return f"{head}<br>{label}: {cables(lk.links)}, {rate(lk.capacity_Bps)} per direction in total"


def _edge_width(lks: list[Link], view: str) -> float:
    if view == VIEW_DETAILED:
        return 1.0 if lks and lks[0].kind != "nvlink" else 0.6
    return 1.5


def _symbol(row: int, aggregated: bool) -> str:
    if row < 3:
        return ("diamond", "square", "circle")[row]
    return "hexagon" if aggregated else "triangle-up"
