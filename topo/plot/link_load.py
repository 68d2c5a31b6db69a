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

Following the house style, :func:`topo.plot.link_load_data.link_load_data` computes everything
that is drawn and :func:`plot_link_load` only turns it into traces. Lines are batched into one
trace per colour band (20 bands over [0, 1]), never one trace per link; a small point in the
middle of each segment, coloured on the continuous scale, carries the exact utilisation
(``marker.color``), the hover text and, in ``customdata``, the two ends, the number of links,
and the max and mean utilisation. Device markers are dark grey; planes and rails keep their
shaded blocks.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import networkx as nx
import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

from topo.plot.layout import VIEW_DETAILED, block_decorations
from topo.plot.link_load_data import (
    N_BINS,
    Histogram,
    LinkLoadData,
    Segment,
    link_load_data,
    utilisation_bins,
)
from topo.plot.text import note_annotation
from topo.plot.text import utilisation_text as _u

__all__ = ["plot_link_load"]

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
    data = link_load_data(G, link_load, max_devices, title)
    return _figure(data)


def _figure(data: LinkLoadData) -> go.Figure:
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


def _update_layout(fig: go.Figure, data: LinkLoadData, height: int) -> None:
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


def _draw_topology(fig: go.Figure, data: LinkLoadData, colours: list[str]) -> None:
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


def _draw_bands(fig: go.Figure, data: LinkLoadData, colours: list[str]) -> None:
    """One line trace per colour band of the segments' max utilisation."""
    width = 1.2 if data.fabric.view == VIEW_DETAILED else 2.5
    bands: dict[int, list[Segment]] = defaultdict(list)
    seg_bins = utilisation_bins(np.array([sg.max_util for sg in data.segments], dtype=float))
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


def _draw_midpoints(fig: go.Figure, data: LinkLoadData) -> None:
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


def _draw_markers(fig: go.Figure, data: LinkLoadData) -> None:
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


def _draw_histogram(fig: go.Figure, h: Histogram, colours: list[str], row: int, col: int) -> None:
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


def _colour_at(u: float) -> str:
    """Colour of utilisation ``u`` on :data:`COLOURSCALE` (clipped to [0, 1])."""
    return str(sample_colorscale(COLOURSCALE, [min(max(u, 0.0), 1.0)])[0])


def _band_colours() -> list[str]:
    """Colour of each band of :data:`N_BINS` over [0, 1], sampled at the band's centre."""
    return list(sample_colorscale(COLOURSCALE, [(i + 0.5) / N_BINS for i in range(N_BINS)]))
