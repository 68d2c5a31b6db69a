"""The data behind a link-load figure: each link with its loads and utilisation, the
segments drawn, and a histogram of arc utilisation per tier.

What takes part, how aggregated edges and markers summarise their links and how arcs are
binned is described in :mod:`topo.plot.link_load`, which draws what :func:`link_load_data`
returns. Loads and capacities in B/s (capacity per direction; every link is full duplex).
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

from topo.errors import TopoError
from topo.fabric import natural_key, vertex_label
from topo.plot.fabric import default_title, fabric_data
from topo.plot.layout import VIEW_DETAILED, FabricData, row_of
from topo.plot.text import EDGE_LABELS, cables, num
from topo.plot.text import utilisation_text as _u
from topo.units import Bps_to_GBps

__all__ = [
    "N_BINS",
    "Histogram",
    "LinkLoad",
    "LinkLoadData",
    "Segment",
    "link_load_data",
    "utilisation_bins",
]

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


class LinkLoad(NamedTuple):
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
class Segment:
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
class Histogram:
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
class LinkLoadData:
    """Everything :func:`topo.plot.link_load.plot_link_load` draws.

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
    links: tuple[LinkLoad, ...]
    segments: tuple[Segment, ...]
    structure: tuple[tuple[tuple[float, float], tuple[float, float]], ...]
    histograms: tuple[Histogram, ...]
    marker_hover: dict[str, str] = field(repr=False)
    marker_util: dict[str, float] = field(repr=False, default_factory=dict)
    over_capacity: int = 0


def link_load_data(
    G: nx.Graph,
    link_load: Mapping[tuple[Any, Any], float],
    max_devices: int,
    title: str | None = None,
) -> LinkLoadData:
    """Compute what :func:`topo.plot.link_load.plot_link_load` draws.

    Parameters
    ----------
    G : networkx.Graph
        A fabric (edge ``capacity`` in B/s per direction).
    link_load : Mapping[(u, v), float]
        Load in B/s on the directed arc ``u -> v``; a missing arc carries 0.
    max_devices : int
        Largest number of vertices drawn one marker each; above it the view is aggregated.
    title : str, optional
        Figure title; by default ``link load:`` and the fabric's name and counts.

    Returns
    -------
    LinkLoadData
        The layout, every link with its loads, the coloured segments and the histograms.

    Raises
    ------
    TopoError
        As :func:`topo.plot.link_load.plot_link_load`.
    """
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
    return LinkLoadData(
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
) -> tuple[list[LinkLoad], set[str]]:
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
            LinkLoad(
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


def _link_segment(lk: LinkLoad, data: FabricData) -> Segment:
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
    return Segment(lk.a, lk.b, (x0, x1), (y0, y1), 1, lk.links, lk.capacity_Bps, u, u, hover)


def _aggregate_segments(
    links: list[LinkLoad], data: FabricData
) -> tuple[tuple[Segment, ...], dict[str, str], dict[str, float]]:
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
    between: dict[tuple[str, str], list[LinkLoad]] = defaultdict(list)
    inside: dict[str, dict[str, list[LinkLoad]]] = defaultdict(lambda: defaultdict(list))
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
            Segment(
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
    hovers: Mapping[str, str], inside: Mapping[str, Mapping[str, list[LinkLoad]]]
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


def _flip(lk: LinkLoad) -> LinkLoad:
    return LinkLoad(
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


def _direction_lines(lks: list[LinkLoad]) -> list[str]:
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


def utilisation_bins(us: np.ndarray) -> np.ndarray:
    """Histogram (and colour band) bin of each utilisation: ``i`` for ``[i/N, (i+1)/N)`` (the
    last bin closed at 1), ``N_BINS`` for arcs over capacity."""
    idx = np.minimum(np.floor(us * N_BINS + BIN_TOL), N_BINS - 1).astype(int)
    idx[us > 1 + OVER_TOL] = N_BINS
    return idx


def _histograms(links: list[LinkLoad], level: Mapping[str, int]) -> tuple[Histogram, ...]:
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
        counts = np.bincount(utilisation_bins(us), minlength=N_BINS + 1)
        out.append(
            Histogram(
                tier, tuple(int(c) for c in counts), len(us), float(us.max()), float(us.mean())
            )
        )
    return tuple(out)


def _summary(hists: tuple[Histogram, ...], over: int, unloaded: set[str]) -> str:
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


def _GBps(x_Bps: float) -> str:
    return f"{num(Bps_to_GBps(x_Bps))} GB/s"
