"""HTML view of an MoE report: the GPU-to-GPU traffic heat map and the phase times.

Left: the bytes each GPU sends to each other GPU in the headline scenario's dispatch, over the
network and NVLink hops together (a DeepEP-style copy forwarded over NVLink counts on both of
its hops; the hover text splits them); above :data:`MAX_HEATMAP_GPUS` ranks, the network bytes
between nodes. Right: dispatch and combine
times of every scenario, node-limited next to unlimited, DeepEP-style next to naive.

Following the house style, :func:`_moe_plot_data` computes what is drawn and
:func:`plot_moe` turns it into a plotly figure; the CLI writes it with
:func:`topo.plot.write_html`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

if TYPE_CHECKING:  # annotations only: drawing needs no MoE model at run time
    from topo.moe.timing import MoEReport

__all__ = ["plot_moe"]

MAX_HEATMAP_GPUS = 128
"""Above this many EP ranks the heat map shows nodes instead of GPUs."""


def _moe_plot_data(report: MoEReport, max_gpus: int = MAX_HEATMAP_GPUS) -> dict[str, Any]:
    """What the figure shows: the heat map matrix (MB) and labels, and the bars (µs).

    Returns
    -------
    dict
        ``matrix_MB`` (n x n, sender rows; ``ib_MB`` + ``nvlink_MB``), ``labels`` (n),
        ``level`` (``GPU`` or ``node``), ``what`` (the quantity shown),
        ``scenario`` (label of the headline), ``bars``: list of (scenario label, dispatch µs,
        combine µs).
    """
    h = report.headline
    ib, nvl = h.dispatch.ib_matrix, h.dispatch.nvlink_matrix
    layout = report.layout
    if layout.ep > max_gpus:
        # Nodes: the network bytes between them (NVLink stays inside a node, off this map).
        ib = layout.node_matrix(ib)
        nvl = np.zeros_like(ib)
        labels = [f"node {s}" for s in layout.servers]
        level, what = "node", "network bytes"
    else:
        labels = list(layout.gpus)
        level, what = "GPU", "bytes over network + NVLink hops"
    bars = [(s.label, s.dispatch.time_s * 1e6, s.combine.time_s * 1e6) for s in report.scenarios]
    return {
        "matrix_MB": (ib + nvl) / 1e6,
        "ib_MB": ib / 1e6,
        "nvlink_MB": nvl / 1e6,
        "labels": labels,
        "level": level,
        "what": what,
        "scenario": h.label,
        "bars": bars,
    }


def plot_moe(report: MoEReport, max_gpus: int = MAX_HEATMAP_GPUS) -> go.Figure:
    """The heat map of dispatch bytes between GPUs (or nodes) and the phase-time bars.

    Parameters
    ----------
    report : MoEReport
        From :func:`topo.moe.moe_report`.
    max_gpus : int
        Above this many EP ranks the heat map aggregates to nodes.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    d = _moe_plot_data(report, max_gpus)
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.55, 0.45],
        horizontal_spacing=0.12,
        subplot_titles=(
            f"dispatch {d['what']}, {d['level']} to {d['level']} (MB, {d['scenario']})",
            "phase time per micro-batch (µs)",
        ),
    )
    fig.add_trace(
        go.Heatmap(
            z=d["matrix_MB"],
            x=d["labels"],
            y=d["labels"],
            colorscale="Viridis",
            customdata=np.stack([d["ib_MB"], d["nvlink_MB"]], axis=-1),
            colorbar=dict(title="MB", x=0.5),
            hovertemplate="from %{y}<br>to %{x}<br>%{z:.3f} MB (network %{customdata[0]:.3f},"
            " NVLink %{customdata[1]:.3f})<extra></extra>",
        ),
        row=1,
        col=1,
    )
    names = [b[0] for b in d["bars"]]
    for i, (phase, colour) in enumerate((("dispatch", "#1f77b4"), ("combine", "#ff7f0e"))):
        fig.add_trace(
            go.Bar(
                name=phase,
                x=names,
                y=[b[1 + i] for b in d["bars"]],
                marker_color=colour,
                hovertemplate="%{x}<br>" + phase + " %{y:.2f} µs<extra></extra>",
            ),
            row=1,
            col=2,
        )
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    fig.update_yaxes(title_text="µs", row=1, col=2)
    fig.update_layout(
        barmode="group",
        title=(
            f"{report.model.name} EP{report.ep} on {report.fabric}: {report.tokens_per_gpu} tokens"
            f"/GPU, layer {report.headline.layer_s * 1e6:.1f} µs, TPOT "
            f"{report.headline.tpot_s * 1e3:.2f} ms"
        ),
        legend=dict(x=1.0, y=1.0),
        height=650,
    )
    return fig
