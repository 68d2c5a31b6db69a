"""Draw link load on a fabric: each link coloured by its utilisation, and a histogram per tier.

The page has two parts (plotly subplots):

1. **The topology**, laid out exactly as :func:`topo.plot.plot_fabric` lays it out (same rows,
   blocks, order and aggregation above ``max_devices`` vertices), with every link coloured by
   its *utilisation*: load / capacity in the worse of its two directions (links are full
   duplex; ``capacity`` is per direction). An aggregated edge between two groups stands for
   the links between them and is coloured by the largest utilisation among them; its hover
   gives their count, the max and mean utilisation, and per direction the max, mean and total
   load. In the aggregated view NIC cables lie inside the leaf markers: such a marker is
   coloured by the largest utilisation of the links inside it, and its hover gives their
   count, max and mean (per direction too); they are in the histograms as well. Markers with
   no link inside are dark grey.
2. **A histogram per tier** of the utilisation of every directed arc: ``nic->leaf``,
   ``leaf->nic``, ``leaf->spine``, ``spine->leaf``, ... (direction matters: the up and down
   directions of a fat tree load differently). Tier labels are those of the all-to-all report
   (:class:`topo.flow.door.BottleneckLink.tier`). Bins are 0.05 wide over [0, 1] (the last
   one closed); arcs over capacity, possible for as-routed loads, get a bin of their own.

Network links (``endpoint`` NIC–switch and ``fabric`` switch–switch cables) always take part:
an arc missing from ``link_load`` carries 0. Links inside servers (``nvlink``, ``pcie``) take
part only if ``link_load`` gives a load on at least one arc of that kind; otherwise (a report
that only routes the network) they are drawn in light grey without a utilisation, so that a
number the caller never computed is never shown as 0.

Following the house style, :func:`_load_data` computes everything that is drawn and
:func:`plot_link_load` only turns it into traces. Lines are batched into one trace per colour
band (20 bands over [0, 1]), never one trace per link; a small point in the middle of each
segment, coloured on the continuous scale, carries the exact utilisation (``marker.color``),
the hover text and, in ``customdata``, the two ends, the number of links, and the max and mean
utilisation. Device markers are dark grey; planes and rails keep their shaded blocks.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import networkx as nx
import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

from topo.errors import TopoError
from topo.fabric import natural_key, vertex_label
from topo.plot.fabric import default_title, fabric_data
from topo.plot.layout import VIEW_DETAILED, FabricData, block_decorations, row_of
from topo.plot.text import EDGE_LABELS, cables, note_annotation, num
from topo.units import Bps_to_GBps

__all__ = ["plot_link_load"]

N_BINS = 20
"""Histogram bins (and colour bands of the lines) over utilisation 0..1: 0.05 wide."""
BIN_TOL = 1e-6
"""Added to ``utilisation * N_BINS`` before flooring, so LP round-off (0.4999999999) lands in
the bin of the value it stands for (0.5)."""
OVER_TOL = 1e-9
"""An arc is over capacity when its utilisation exceeds ``1 + OVER_TOL``."""
NEGATIVE_TOL = 1e-6
"""Loads down to ``-NEGATIVE_TOL * capacity`` (solver round-off) are read as 0; below, an error."""
NETWORK_KINDS = ("endpoint", "fabric")
"""Edge kinds that always take part (missing arcs carry 0)."""

COLOURSCALE: list[list[Any]] = [
    [0.0, "#b4c3d4"],
    [0.5, "#f2b134"],
    [0.85, "#e0452b"],
    [1.0, "#6b0a0a"],
]
"""Utilisation 0 (idle, grey-blue, still visible on white) to 1 (saturated, dark red)."""
_STRUCTURE_COLOUR = "rgba(120,120,120,0.25)"
_MARKER_COLOUR = "#4a4a4a"
_HIST_ROW_PX = 220
_GAP_PX = 95  # between rows of subplots: room for an x title and a subplot title


# ---------------------------------------------------------------------------------------------
# The data behind the figure


class _LinkLoad(NamedTuple):
    """One link (graph edge) with its load in both directions.

    ``a`` is the end in the lower row (NIC below leaf below spine; by name on the same row).
    ``tier_ab`` labels the arc ``a -> b`` (e.g. ``nic->leaf``), ``tier_ba`` the arc back.
    Loads and capacity in B/s; ``capacity_Bps`` is per direction, summed over the cables.
    """

    a: str
    b: str
    kind: str
    links: int
    capacity_Bps: float
    tier_ab: str
    tier_ba: str
    load_ab_Bps: float
    load_ba_Bps: float

    @property
    def util_ab(self) -> float:
        """Utilisation of the arc ``a -> b``: load / capacity."""
        return self.load_ab_Bps / self.capacity_Bps

    @property
    def util_ba(self) -> float:
        """Utilisation of the arc ``b -> a``."""
        return self.load_ba_Bps / self.capacity_Bps

    @property
    def utilisation(self) -> float:
        """Utilisation of the link: the worse of its two directions."""
        return max(self.util_ab, self.util_ba)


@dataclass(frozen=True)
class _Segment:
    """One drawn line: a link (detailed view) or the links between two groups (aggregated).

    ``a`` and ``b`` are marker ids (device names, or group ids); ``links`` the number of graph
    edges it stands for, ``cables`` their cables, ``capacity_Bps`` their summed capacity per
    direction; ``max_util`` and ``mean_util`` the largest and the mean link utilisation.
    """

    a: str
    b: str
    x: tuple[float, float]
    y: tuple[float, float]
    links: int
    cables: int
    capacity_Bps: float
    max_util: float
    mean_util: float
    hover: str


@dataclass(frozen=True)
class _Histogram:
    """Utilisation of the arcs of one tier (direction), binned.

    ``counts`` has :data:`N_BINS` entries (bin ``i`` is ``[i/N, (i+1)/N)``, the last closed),
    plus one for arcs over capacity.
    """

    tier: str
    counts: tuple[int, ...]
    arcs: int
    max_util: float
    mean_util: float


@dataclass(frozen=True)
class _LoadData:
    """Everything :func:`plot_link_load` draws.

    ``fabric`` is the layout of :func:`topo.plot.fabric.fabric_data` (positions, rows, blocks,
    markers, view); ``links`` every link that takes part, with its loads; ``segments`` the
    coloured lines; ``structure`` grey lines of server-internal links without loads (detailed
    view only); ``marker_hover`` the hover text of each marker; ``marker_util`` the largest
    utilisation of the links inside an aggregated marker (NIC cables inside a leaf group), for
    the markers that hold any; ``histograms`` one per tier, in
    order up the fabric (``nic->leaf`` before ``leaf->nic`` before ``leaf->spine``).
    """

    fabric: FabricData
    title: str
    note: str
    links: tuple[_LinkLoad, ...]
    segments: tuple[_Segment, ...]
    structure: tuple[tuple[tuple[float, float], tuple[float, float]], ...]
    histograms: tuple[_Histogram, ...]
    marker_hover: dict[str, str] = field(repr=False)
    marker_util: dict[str, float] = field(repr=False, default_factory=dict)
    over_capacity: int = 0


def _load_data(
    G: nx.Graph,
    link_load: Mapping[tuple[Any, Any], float],
    max_devices: int,
    title: str | None = None,
) -> _LoadData:
    """Compute what :func:`plot_link_load` draws (see its docstring for the parameters)."""
    loads = _check_loads(G, link_load)
    kinds = set(NETWORK_KINDS) | {G._adj[u][v]["kind"] for u, v in loads}
    level = {v: row_of(d) for v, d in G.nodes(data=True)}
    links, all_kinds = _links(G, loads, kinds, level)
    if title is None:
        title = f"link load: {default_title(G)}"
    data = fabric_data(G, max_devices, title)
    if data.view == VIEW_DETAILED:
        segments = tuple(_link_segment(lk, data) for lk in links)
        structure = tuple(
            (data.pos[str(u)], data.pos[str(v)])
            for u, v, k in G.edges(data="kind")
            if k not in kinds
        )
        marker_hover = {i: h for ms in data.markers for i, h in zip(ms.ids, ms.hover, strict=True)}
        marker_util: dict[str, float] = {}
    else:
        segments, marker_hover, marker_util = _aggregate_segments(links, data)
        structure = ()
    histograms = _histograms(links, {str(v): x for v, x in level.items()})
    over = sum(u > 1 + OVER_TOL for lk in links for u in (lk.util_ab, lk.util_ba))
    note = _summary(histograms, over, all_kinds - kinds)
    if data.note:
        note = f"{data.note}; {note}"
    return _LoadData(
        fabric=data,
        title=title,
        note=note,
        links=tuple(links),
        segments=segments,
        structure=structure,
        histograms=histograms,
        marker_hover=marker_hover,
        marker_util=marker_util,
        over_capacity=over,
    )


def _check_loads(
    G: nx.Graph, link_load: Mapping[tuple[Any, Any], float]
) -> dict[tuple[Hashable, Hashable], float]:
    """Validate ``link_load``; return it with loads as floats (round-off below 0 set to 0)."""
    if not isinstance(link_load, Mapping):
        raise TopoError(
            f"link_load must map arcs (u, v) to loads in B/s, got {type(link_load).__name__}"
        )
    name = G.graph.get("name") or G.graph.get("family") or "fabric"
    loads: dict[tuple[Hashable, Hashable], float] = {}
    unknown: list[str] = []
    adj = G._adj  # plain dicts: 10x faster than G.has_edge and G.edges[u, v] per arc
    for key, value in link_load.items():
        if not (isinstance(key, tuple) and len(key) == 2):
            raise TopoError(f"link_load: key {key!r} is not an arc (u, v)")
        u, v = key
        edge = adj.get(u, {}).get(v)
        if edge is None:
            missing = [str(x) for x in (u, v) if x not in G]
            why = f"no device {', '.join(missing)}" if missing else "no cable joins them"
            unknown.append(f"{u} -> {v} ({why})")
            continue
        try:
            load = float(value)
        except (TypeError, ValueError):
            load = math.nan
        cap = float(edge["capacity"])
        if not math.isfinite(load) or load < -NEGATIVE_TOL * cap:
            raise TopoError(
                f"link_load: the load on arc {u} -> {v} must be a finite number of B/s >= 0, "
                f"got {value!r}"
            )
        loads[(u, v)] = max(load, 0.0)
    if unknown:
        more = f" (and {len(unknown) - 1:,} more)" if len(unknown) > 1 else ""
        raise TopoError(f"link_load: arc {unknown[0]} is not a link of fabric {name!r}{more}")
    return loads


def _links(
    G: nx.Graph,
    loads: Mapping[tuple[Hashable, Hashable], float],
    kinds: set[str],
    level: Mapping[Hashable, int],
) -> tuple[list[_LinkLoad], set[str]]:
    """The links of the kinds in ``kinds`` with their loads; and every edge kind in ``G``.

    ``level`` is each vertex's row (:func:`topo.plot.layout.row_of`): the end on the lower row
    becomes ``a``."""
    # Tier label per vertex, from the all-to-all report's own function, called once per
    # distinct (kind, row).
    label: dict[Hashable, str] = {}
    by_key: dict[tuple[str, int], str] = {}
    for v, d in G.nodes(data=True):
        key = (d["kind"], level[v])
        if key not in by_key:
            by_key[key] = vertex_label(G, v)
        label[v] = by_key[key]
    arc_tier: dict[tuple[str, str], str] = {}
    links = []
    seen: set[str] = set()
    for u, v, d in G.edges(data=True):
        kind = d["kind"]
        seen.add(kind)
        if kind not in kinds:
            continue
        lu, lv = level[u], level[v]
        if lu > lv or (lu == lv and natural_key(u) > natural_key(v)):
            u, v = v, u
        pu, pv = label[u], label[v]
        up = arc_tier.get((pu, pv))
        if up is None:
            up = arc_tier[(pu, pv)] = f"{pu}->{pv}"
            arc_tier[(pv, pu)] = f"{pv}->{pu}"
        links.append(
            _LinkLoad(
                str(u),
                str(v),
                kind,
                d["links"],
                float(d["capacity"]),
                up,
                arc_tier[(pv, pu)],
                loads.get((u, v), 0.0),
                loads.get((v, u), 0.0),
            )
        )
    return links, seen


def _link_segment(lk: _LinkLoad, data: FabricData) -> _Segment:
    (x0, y0), (x1, y1) = data.pos[lk.a], data.pos[lk.b]
    u = lk.utilisation
    hover = "<br>".join(
        [
            f"<b>{lk.a} — {lk.b}</b>",
            f"{EDGE_LABELS[lk.kind]}: {cables(lk.links)}, {_GBps(lk.capacity_Bps)} per direction",
            f"{lk.tier_ab}: {_GBps(lk.load_ab_Bps)}, utilisation {_u(lk.util_ab)}",
            f"{lk.tier_ba}: {_GBps(lk.load_ba_Bps)}, utilisation {_u(lk.util_ba)}",
            f"<b>utilisation {_u(u)}</b> (the worse direction)",
        ]
    )
    return _Segment(lk.a, lk.b, (x0, x1), (y0, y1), 1, lk.links, lk.capacity_Bps, u, u, hover)


def _aggregate_segments(
    links: list[_LinkLoad], data: FabricData
) -> tuple[tuple[_Segment, ...], dict[str, str], dict[str, float]]:
    """Merge the links between two groups into one segment; summarise links inside a group.

    A link's ends are placed in their groups by the map the aggregation returned
    (:attr:`topo.plot.layout.FabricData.marker_of`)."""
    labels = {}
    hovers = {}
    rows = {}
    for ms in data.markers:
        for i, h in zip(ms.ids, ms.hover, strict=True):
            labels[i] = re.sub(r"</?b>", "", h.split("<br>", 1)[0])
            hovers[i] = h
            rows[i] = ms.row
    between: dict[tuple[str, str], list[_LinkLoad]] = defaultdict(list)
    inside: dict[str, dict[str, list[_LinkLoad]]] = defaultdict(lambda: defaultdict(list))
    marker_of = data.marker_of
    for lk in links:
        ga, gb = marker_of.get(lk.a), marker_of.get(lk.b)
        if ga is None or gb is None:
            continue
        if ga == gb:
            inside[ga][lk.kind].append(lk)
            continue
        if rows[ga] > rows[gb] or (rows[ga] == rows[gb] and natural_key(ga) > natural_key(gb)):
            ga, gb = gb, ga
            lk = _flip(lk)
        between[(ga, gb)].append(lk)
    segments = []
    for (ga, gb), lks in sorted(between.items(), key=lambda kv: (natural_key(kv[0][0]), kv[0][1])):
        (x0, y0), (x1, y1) = data.pos[ga], data.pos[gb]
        utils = [lk.utilisation for lk in lks]
        n = len(lks)
        n_cables = sum(lk.links for lk in lks)
        cap = sum(lk.capacity_Bps for lk in lks)
        lines = [
            f"<b>{labels[ga]} — {labels[gb]}</b>",
            f"{n:,} links ({cables(n_cables)}), {_GBps(cap)} per direction in total",
            f"<b>utilisation: max {_u(max(utils))}, mean {_u(sum(utils) / n)}</b> "
            "(each link's worse direction)",
            *_direction_lines(lks),
        ]
        segments.append(
            _Segment(
                ga,
                gb,
                (x0, x1),
                (y0, y1),
                n,
                n_cables,
                cap,
                max(utils),
                sum(utils) / n,
                "<br>".join(lines),
            )
        )
    marker_hover, marker_util = _inside(hovers, inside)
    return tuple(segments), marker_hover, marker_util


def _inside(
    hovers: Mapping[str, str], inside: Mapping[str, Mapping[str, list[_LinkLoad]]]
) -> tuple[dict[str, str], dict[str, float]]:
    """Hover text and colour (largest utilisation) of the markers with links inside."""
    marker_hover = {}
    marker_util: dict[str, float] = {}
    for i, h in hovers.items():
        extra = []
        for kind, lks in sorted(inside.get(i, {}).items()):
            utils = [lk.utilisation for lk in lks]
            marker_util[i] = max(marker_util.get(i, 0.0), *utils)
            extra.append(
                f"{EDGE_LABELS[kind]} links inside: {len(lks):,}, utilisation max "
                f"{_u(max(utils))}, mean {_u(sum(utils) / len(utils))}"
            )
            extra += ["  " + s for s in _direction_lines(lks)]
        if extra:
            extra.insert(0, "<i>marker colour: the most loaded link inside</i>")
        marker_hover[i] = "<br>".join([h, *extra])
    return marker_hover, marker_util


def _flip(lk: _LinkLoad) -> _LinkLoad:
    return _LinkLoad(
        lk.b,
        lk.a,
        lk.kind,
        lk.links,
        lk.capacity_Bps,
        lk.tier_ba,
        lk.tier_ab,
        lk.load_ba_Bps,
        lk.load_ab_Bps,
    )


def _direction_lines(lks: list[_LinkLoad]) -> list[str]:
    """Per tier (direction): arcs' max and mean utilisation and their total load."""
    per: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for lk in lks:
        per[lk.tier_ab].append((lk.util_ab, lk.load_ab_Bps))
        per[lk.tier_ba].append((lk.util_ba, lk.load_ba_Bps))
    out = []
    for tier, vals in per.items():
        us = [x for x, _ in vals]
        out.append(
            f"{tier}: max {_u(max(us))}, mean {_u(sum(us) / len(us))}, "
            f"{_GBps(sum(load for _, load in vals))} in total"
        )
    return out


def _bins(us: np.ndarray) -> np.ndarray:
    """Histogram bin of each utilisation: ``i`` for ``[i/N, (i+1)/N)`` (the last bin closed at
    1), ``N_BINS`` for arcs over capacity."""
    idx = np.minimum(np.floor(us * N_BINS + BIN_TOL), N_BINS - 1).astype(int)
    idx[us > 1 + OVER_TOL] = N_BINS
    return idx


def _histograms(links: list[_LinkLoad], level: Mapping[str, int]) -> tuple[_Histogram, ...]:
    """One histogram per tier (direction); ``level`` maps a link end's name to its row."""
    per: dict[str, list[float]] = defaultdict(list)
    rank: dict[str, tuple[int, int]] = {}
    for lk in links:
        la, lb = level[lk.a], level[lk.b]
        for tier, u, (x, y) in (
            (lk.tier_ab, lk.util_ab, (la, lb)),
            (lk.tier_ba, lk.util_ba, (lb, la)),
        ):
            per[tier].append(u)
            # Up the fabric: lower pair first, the upward direction before the downward.
            rank.setdefault(tier, (min(x, y), int(x > y)))
    out = []
    for tier in sorted(per, key=lambda t: (rank[t], t)):
        us = np.asarray(per[tier])
        counts = np.bincount(_bins(us), minlength=N_BINS + 1)
        out.append(
            _Histogram(
                tier, tuple(int(c) for c in counts), len(us), float(us.max()), float(us.mean())
            )
        )
    return tuple(out)


def _summary(hists: tuple[_Histogram, ...], over: int, unloaded: set[str]) -> str:
    parts = []
    if hists:
        worst = max(hists, key=lambda h: (h.max_util, h.mean_util))
        parts.append(
            f"busiest tier {worst.tier}: utilisation max {_u(worst.max_util)}, mean "
            f"{_u(worst.mean_util)}"
        )
    if over:
        parts.append(f"{over:,} arc{'s' if over != 1 else ''} over capacity")
    inner = sorted(unloaded, key=list(EDGE_LABELS).index)
    if inner:
        parts.append(f"no loads given for {' and '.join(EDGE_LABELS[k] for k in inner)} links")
    return "; ".join(parts)


# ---------------------------------------------------------------------------------------------
# Formatting


def _u(x: float) -> str:
    return f"{x:.3f}".rstrip("0").rstrip(".") if x else "0"


def _GBps(x_Bps: float) -> str:
    return f"{num(Bps_to_GBps(x_Bps))} GB/s"


def _colour_at(u: float) -> str:
    """Colour of utilisation ``u`` on :data:`COLOURSCALE` (clipped to [0, 1])."""
    return str(sample_colorscale(COLOURSCALE, [min(max(u, 0.0), 1.0)])[0])


def _band_colours() -> list[str]:
    """Colour of each band of :data:`N_BINS` over [0, 1], sampled at the band's centre."""
    return list(sample_colorscale(COLOURSCALE, [(i + 0.5) / N_BINS for i in range(N_BINS)]))


# ---------------------------------------------------------------------------------------------
# Drawing


def plot_link_load(
    G: nx.Graph,
    link_load: Mapping[tuple[Any, Any], float],
    *,
    title: str | None = None,
    max_devices: int = 2000,
) -> go.Figure:
    """Draw the load of every link on the fabric's topology, and a utilisation histogram per tier.

    Utilisation of an arc is ``load / capacity`` (capacity per direction: every link is full
    duplex); a link is coloured by the worse of its two arcs, on a scale from 0 to 1 with a
    colour bar. The layout and the aggregation of fabrics with more than ``max_devices``
    vertices are those of :func:`topo.plot.plot_fabric`; an aggregated edge is coloured by the
    largest utilisation of the links it stands for, and its hover gives their count and their
    max and mean utilisation. Below the topology, one histogram per tier (``nic->leaf``,
    ``leaf->spine``, ``spine->leaf``, ...: direction matters) counts the arcs by utilisation in
    bins 0.05 wide. See the module docstring for which links take part.

    Parameters
    ----------
    G : networkx.Graph
        A fabric following the schema of :mod:`topo.fabric` (edge ``capacity`` in B/s per
        direction).
    link_load : Mapping[(u, v), float]
        Load in B/s on the directed arc ``u -> v``; both directions of a link may appear, a
        missing arc carries 0. Loads of NVLink or PCIe links are optional (see above).
    title : str, optional
        Figure title; by default ``link load:`` and the fabric's name and counts.
    max_devices : int, default 2000
        Largest number of vertices drawn one marker each; above it the view is aggregated.

    Returns
    -------
    plotly.graph_objects.Figure
        Subplots (:func:`plotly.subplots.make_subplots`): the topology on top, the histograms
        (up to four a row) below. Write it with :func:`topo.plot.write_html`.

    Raises
    ------
    TopoError
        If a key of ``link_load`` is not an arc of ``G`` (naming the first such arc and how
        many more), or a load is not a finite number >= 0 (loads down to ``-1e-6`` times the
        capacity, solver round-off, are read as 0).
    SpecError
        If ``max_devices`` is below 1.
    FormatError
        If ``G`` does not follow the fabric schema.

    Examples
    --------
    >>> from topo.builders import build
    >>> G = build("ft2", switch_ports=4, gpus_per_node=2, nics_per_node=2)
    >>> fig = plot_link_load(G, {("leaf0", "spine0"): 25e9, ("spine0", "leaf0"): 40e9})
    >>> mid = next(t for t in fig.data if t.name == "utilisation")
    >>> k = [tuple(c[:2]) for c in mid.customdata].index(("leaf0", "spine0"))
    >>> float(mid.marker.color[k])          # 40 GB/s of 50 GB/s, spine0 -> leaf0
    0.8

    References
    ----------
    Utilisation = load / capacity per direction of a full-duplex link, as in the link
    utilisation of the maximum concurrent flow LP (Shahrokhi and Matula, J. ACM 37(2), 1990):
    at the optimum every bottleneck arc has utilisation 1.
    """
    data = _load_data(G, link_load, max_devices, title)
    return _figure(data)


def _figure(data: _LoadData) -> go.Figure:
    hists = data.histograms
    cols = max(1, min(len(hists), 4))
    hist_rows = math.ceil(len(hists) / cols) if hists else 0
    topo_px = max(420, 200 + 130 * len(data.fabric.rows))
    specs: list[list[dict[str, Any] | None]] = [[{"colspan": cols}] + [None] * (cols - 1)]
    titles = [""]
    for r in range(hist_rows):
        row_specs: list[dict[str, Any] | None] = []
        for c in range(cols):
            i = r * cols + c
            row_specs.append({} if i < len(hists) else None)
            if i < len(hists):
                h = hists[i]
                titles.append(f"{h.tier} ({h.arcs:,} arcs, max {_u(h.max_util)})")
        specs.append(row_specs)
    fig = make_subplots(
        rows=1 + hist_rows,
        cols=cols,
        specs=specs,
        subplot_titles=titles,
        row_heights=[topo_px] + [_HIST_ROW_PX] * hist_rows,
        vertical_spacing=_GAP_PX / (topo_px + hist_rows * (_HIST_ROW_PX + _GAP_PX) - 120)
        if hist_rows
        else 0.0,
        horizontal_spacing=0.06,
    )
    colours = _band_colours()
    _draw_topology(fig, data, colours)
    for i, h in enumerate(hists):
        _draw_histogram(fig, h, colours, 2 + i // cols, 1 + i % cols)
    _update_layout(fig, data, topo_px + hist_rows * (_HIST_ROW_PX + _GAP_PX))
    return fig


def _update_layout(fig: go.Figure, data: _LoadData, height: int) -> None:
    fab = data.fabric
    shapes, blocks = block_decorations(fab.blocks, 0.06, {"xref": "x", "yref": "y"})
    annotations = [*fig.layout.annotations, *blocks]
    note_lines = 0
    if data.note:
        note, note_lines = note_annotation(data.note)
        annotations.append(note)
    fig.update_layout(
        title={"text": data.title, "x": 0, "xref": "paper", "xanchor": "left"},
        template="none",
        paper_bgcolor="white",
        plot_bgcolor="white",
        height=height,
        margin={"l": 90, "r": 30, "t": 70 + 18 * note_lines, "b": 50},
        hovermode="closest",
        hoverlabel={"align": "left"},
        showlegend=False,
        shapes=shapes,
        annotations=annotations,
        bargap=0.0,
    )
    fig.update_xaxes(visible=False, showgrid=False, zeroline=False, row=1, col=1)
    fig.update_yaxes(
        tickvals=[y for y, _ in fab.rows],
        ticktext=[label for _, label in fab.rows],
        range=[-0.6, len(fab.rows) - 0.3],
        showgrid=False,
        zeroline=False,
        row=1,
        col=1,
    )


def _draw_topology(fig: go.Figure, data: _LoadData, colours: list[str]) -> None:
    """The links (grey structure, colour bands, hover points) and the device markers."""
    if data.structure:
        xs: list[float | None] = []
        ys: list[float | None] = []
        for (x0, y0), (x1, y1) in data.structure:
            xs += [x0, x1, None]
            ys += [y0, y1, None]
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                name="links without loads",
                line={"color": _STRUCTURE_COLOUR, "width": 0.6},
                hoverinfo="skip",
            ),
            row=1,
            col=1,
        )
    _draw_bands(fig, data, colours)
    _draw_midpoints(fig, data)
    _draw_markers(fig, data)


def _draw_bands(fig: go.Figure, data: _LoadData, colours: list[str]) -> None:
    """One line trace per colour band of the segments' max utilisation."""
    width = 1.2 if data.fabric.view == VIEW_DETAILED else 2.5
    bands: dict[int, list[_Segment]] = defaultdict(list)
    seg_bins = _bins(np.array([sg.max_util for sg in data.segments], dtype=float))
    for sg, band in zip(data.segments, seg_bins, strict=True):
        bands[min(int(band), N_BINS - 1)].append(sg)
    for band in sorted(bands):
        xs: list[float | None] = []
        ys: list[float | None] = []
        for sg in bands[band]:
            xs += [sg.x[0], sg.x[1], None]
            ys += [sg.y[0], sg.y[1], None]
        lo, hi = band / N_BINS, (band + 1) / N_BINS
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                name=f"utilisation {lo:.2f}–{hi:.2f}",
                line={"color": colours[band], "width": width},
                hoverinfo="skip",
            ),
            row=1,
            col=1,
        )


def _draw_midpoints(fig: go.Figure, data: _LoadData) -> None:
    """The hover point of every segment, on the continuous scale, with the colour bar."""
    domain = fig.layout.yaxis.domain or (0.0, 1.0)
    segs = data.segments
    fig.add_trace(
        go.Scatter(
            x=[round((sg.x[0] + sg.x[1]) / 2, 3) for sg in segs],
            y=[round((sg.y[0] + sg.y[1]) / 2, 3) for sg in segs],
            mode="markers",
            name="utilisation",
            marker={
                "size": 5 if data.fabric.view == VIEW_DETAILED else 8,
                "color": [sg.max_util for sg in segs],
                "colorscale": COLOURSCALE,
                "cmin": 0.0,
                "cmax": 1.0,
                "showscale": True,
                "colorbar": {
                    "title": {"text": "utilisation"},
                    "len": domain[1] - domain[0],
                    "y": (domain[0] + domain[1]) / 2,
                    "yanchor": "middle",
                    "thickness": 14,
                },
            },
            customdata=[[sg.a, sg.b, sg.links, sg.max_util, sg.mean_util] for sg in segs],
            hovertext=[sg.hover for sg in segs],
            hoverinfo="text",
        ),
        row=1,
        col=1,
    )


def _draw_markers(fig: go.Figure, data: _LoadData) -> None:
    """Device markers in dark grey; an aggregated marker with links inside by its worst one."""
    for ms in data.fabric.markers:
        fig.add_trace(
            go.Scatter(
                x=list(ms.x),
                y=list(ms.y),
                mode="markers+text" if ms.text else "markers",
                text=list(ms.text) or None,
                textposition="bottom center" if ms.row <= 3 else "top center",
                textfont={"size": 11, "color": _MARKER_COLOUR},
                name=ms.name,
                marker={
                    "size": ms.size,
                    "color": [
                        _colour_at(data.marker_util[i]) if i in data.marker_util else _MARKER_COLOUR
                        for i in ms.ids
                    ],
                    "symbol": ms.symbol,
                    "line": {"width": 0.5, "color": "white"},
                },
                hovertext=[
                    data.marker_hover.get(i, h) for i, h in zip(ms.ids, ms.hover, strict=True)
                ],
                hoverinfo="text",
            ),
            row=1,
            col=1,
        )


def _draw_histogram(fig: go.Figure, h: _Histogram, colours: list[str], row: int, col: int) -> None:
    n = N_BINS + (1 if h.counts[N_BINS] else 0)
    x = [(i + 0.5) / N_BINS for i in range(n)]
    hover = []
    for i in range(n):
        span = f"{i / N_BINS:.2f}–{(i + 1) / N_BINS:.2f}" if i < N_BINS else "over 1"
        c = h.counts[i]
        hover.append(f"{h.tier}<br>utilisation {span}: {c:,} arc{'s' if c != 1 else ''}")
    fig.add_trace(
        go.Bar(
            x=x,
            y=list(h.counts[:n]),
            width=[1 / N_BINS] * n,
            name=h.tier,
            marker={"color": [*colours, "#000000"][:n], "line": {"width": 0}},
            hovertext=hover,
            hoverinfo="text",
        ),
        row=row,
        col=col,
    )
    fig.update_xaxes(
        range=[0, n / N_BINS],
        title={"text": "utilisation", "standoff": 4},
        showgrid=False,
        row=row,
        col=col,
    )
    fig.update_yaxes(
        title={"text": "arcs" if col == 1 else ""},
        rangemode="tozero",
        dtick=1 if max(h.counts) <= 5 else None,
        row=row,
        col=col,
    )
