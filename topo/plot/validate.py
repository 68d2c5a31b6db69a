"""Draw the defects of a fabric as built on its design's topology (``topo validate --html``).

The design is drawn as :func:`topo.plot.plot_fabric` draws it; each defect is a thick line
(or, for a missing device, a cross) over it, one trace per kind: ``missing`` cables red,
``extra`` purple, ``miswired`` orange (the design cable solid, where it is plugged dashed),
``speed`` gold, ``missing_switch`` and ``missing_host`` black crosses. Hovering a defect gives
its ends, cables, rates and its cost alone. In an aggregated view a defect is drawn between the
markers holding its ends.
"""

from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go

from topo.plot.fabric import fabric_data, plot_fabric
from topo.units import Bps_to_GBps, Bps_to_gbps
from topo.validate import Defect, ValidationReport

KIND_COLOURS = {
    "missing": "#d62728",
    "extra": "#9467bd",
    "miswired": "#ff7f0e",
    "speed": "#bcbd22",
    "missing_switch": "#000000",
    "missing_host": "#000000",
}


@dataclass(frozen=True)
class DefectTrace:
    """What one trace of defects draws: line segments (``x``, ``y`` with None between) or
    points, with one hover text per segment or point."""

    kind: str
    dashed: bool
    points: bool
    x: tuple[float | None, ...]
    y: tuple[float | None, ...]
    hover: tuple[str, ...]


def _hover(d: Defect, design_bw: float) -> str:
    cost = (
        ""
        if d.alone_busbw_Bps is None
        else f"<br>alone: {Bps_to_GBps(d.alone_busbw_Bps):.2f} GB/s busbw "
        f"(cost {Bps_to_GBps(design_bw - d.alone_busbw_Bps):.2f})"
    )
    ends = " - ".join(d.design_ends)
    built = " - ".join(d.as_built_ends)
    return (
        f"{d.kind}: {ends}<br>as built: {built or '(absent)'}<br>{d.links} cable(s), "
        f"{Bps_to_gbps(d.design_rate_Bps):g} -> {Bps_to_gbps(d.as_built_rate_Bps):g} Gb/s{cost}"
    )


def defects_data(report: ValidationReport, max_devices: int = 2000) -> list[DefectTrace]:
    """Compute the defect traces drawn over the design's layout.

    Parameters
    ----------
    report : ValidationReport
        From :func:`topo.validate.validate` (it carries the design graph).
    max_devices : int
        As :func:`topo.plot.plot_fabric`.

    Returns
    -------
    list of DefectTrace
        One per kind present (and one dashed trace of where miswired cables are plugged);
        a defect whose ends are not drawn (a device the design lacks) is left out.
    """
    assert report.design_graph is not None
    layout = fabric_data(report.design_graph, max_devices)

    def at(v: str) -> tuple[float, float] | None:
        marker = layout.marker_of.get(v)
        return layout.pos.get(marker) if marker is not None else None

    traces: dict[tuple[str, bool], tuple[list, list, list]] = {}
    for d in report.defects:
        keys = [(d.design_key, False), (d.built_key if d.kind == "miswired" else None, True)]
        if d.kind == "extra":
            keys = [(d.built_key, False)]
        text = _hover(d, report.design_busbw_Bps)
        if d.kind in ("missing_switch", "missing_host"):
            ends = [v for v in report.design_graph if _is_end(report, v, d)]
            xs, ys, hs = traces.setdefault((d.kind, False), ([], [], []))
            for p in filter(None, map(at, ends)):
                xs.append(p[0])
                ys.append(p[1])
                hs.append(text)
            continue
        for key, dashed in keys:
            ends_at = [at(v) for v in key] if key else [None]
            if None in ends_at:
                continue
            xs, ys, hs = traces.setdefault((d.kind, dashed), ([], [], []))
            (x0, y0), (x1, y1) = ends_at  # type: ignore[misc]
            xs += [x0, x1, None]
            ys += [y0, y1, None]
            hs.append(text)
    return [
        DefectTrace(kind, dashed, kind.startswith("missing_"), tuple(x), tuple(y), tuple(h))
        for (kind, dashed), (x, y, h) in traces.items()
    ]


def _is_end(report: ValidationReport, v: str, d: Defect) -> bool:
    G = report.design_graph
    assert G is not None
    if d.kind == "missing_switch":
        return v == d.design_ends[0]
    node = G.nodes[v].get("node")
    label = f"node{node}" if isinstance(node, int) else str(node)
    return G.nodes[v]["kind"] == "nic" and label == d.design_ends[0]


def plot_defects(report: ValidationReport, *, max_devices: int = 2000) -> go.Figure:
    """The design's topology with the defects of the fabric as built drawn over it.

    Parameters
    ----------
    report : ValidationReport
        From :func:`topo.validate.validate`.
    max_devices : int
        As :func:`topo.plot.plot_fabric`.

    Returns
    -------
    plotly.graph_objects.Figure
        The design's figure plus one trace per defect kind; the title gives the all-to-all of
        the design and as built.
    """
    assert report.design_graph is not None
    title = (
        f"{report.design} as built ({report.dump}): {len(report.defects)} defect(s), "
        f"all-to-all busbw {Bps_to_GBps(report.design_busbw_Bps):.2f} GB/s designed, "
        f"{Bps_to_GBps(report.as_built_busbw_Bps):.2f} GB/s as built"
    )
    fig = plot_fabric(report.design_graph, max_devices=max_devices, title=title)
    for t in defects_data(report, max_devices):
        colour = KIND_COLOURS[t.kind]
        name = t.kind + (" (as plugged)" if t.dashed else "")
        if t.points:
            fig.add_trace(
                go.Scatter(
                    x=t.x,
                    y=t.y,
                    mode="markers",
                    name=name,
                    hovertext=t.hover,
                    hoverinfo="text",
                    marker={"symbol": "x", "size": 14, "color": colour},
                )
            )
            continue
        fig.add_trace(
            go.Scatter(
                x=t.x,
                y=t.y,
                mode="lines",
                name=name,
                hoverinfo="skip",
                line={"color": colour, "width": 4, "dash": "dash" if t.dashed else "solid"},
            )
        )
        mids_x = [(t.x[i] + t.x[i + 1]) / 2 for i in range(0, len(t.x), 3)]  # type: ignore[operator]
        mids_y = [(t.y[i] + t.y[i + 1]) / 2 for i in range(0, len(t.y), 3)]  # type: ignore[operator]
        fig.add_trace(
            go.Scatter(
                x=mids_x,
                y=mids_y,
                mode="markers",
                name=name,
                showlegend=False,
                hovertext=t.hover,
                hoverinfo="text",
                marker={"size": 8, "color": colour},
            )
        )
    return fig
