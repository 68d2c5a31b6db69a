"""The cost comparison as a grouped bar chart: cost per endpoint and all-to-all bandwidth per
dollar.

It only draws: the comparison comes from :func:`topo.cost.compare`, the bandwidth per family
from :func:`topo.cost.solve_bandwidth` (the flow solver), both computed by the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go

if TYPE_CHECKING:  # annotations only: drawing needs no cost model at run time
    from topo.cost.bandwidth import SolvedBandwidth
    from topo.cost.compare import CompareRow

__all__ = ["plot_cost"]


def _cost_chart_data(
    rows: Sequence[CompareRow], bandwidth: Sequence[SolvedBandwidth]
) -> dict[str, list[Any]]:
    """Columns of the chart: family, cost per endpoint (k$), GB/s per k$ per GPU, label."""
    bw = {b.family: b for b in bandwidth}
    data: dict[str, list[Any]] = {
        "family": [],
        "kusd_per_endpoint": [],
        "GBps_per_kusd": [],
        "label": [],
    }
    for r in rows:
        per_ep = r.cost_per_endpoint_usd / 1e3
        b = bw.get(r.family)
        data["family"].append(r.family)
        data["kusd_per_endpoint"].append(per_ep)
        data["GBps_per_kusd"].append(None if b is None else b.internode_GBps / per_ep)
        data["label"].append(
            ("" if b is None else f"{b.internode_GBps:.2f} GB/s per GPU ({b.instance})")
            + ("; counts from the formulas" if r.formula_only else "")
        )
    return data


def plot_cost(
    rows: Sequence[CompareRow], bandwidth: Sequence[SolvedBandwidth], title: str = ""
) -> go.Figure:
    """Grouped bars per family: cost per endpoint (k$, left axis) and all-to-all bandwidth per
    dollar (inter-node all-to-all rate per GPU over cost per endpoint, GB/s per k$, right
    axis).

    Parameters
    ----------
    rows : Sequence[CompareRow]
        The comparison, from :func:`topo.cost.compare`.
    bandwidth : Sequence[SolvedBandwidth]
        All-to-all rate per GPU by family, from :func:`topo.cost.solve_bandwidth`; a family
        without one gets no bandwidth bar.
    title : str, optional
        Figure title; by default ``cost per endpoint and all-to-all bandwidth per dollar``.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    d = _cost_chart_data(rows, bandwidth)
    fig = go.Figure()
    fig.add_bar(
        x=d["family"],
        y=d["kusd_per_endpoint"],
        name="cost per endpoint (k$)",
        offsetgroup="cost",
        yaxis="y",
        text=[f"{v:.2f}" for v in d["kusd_per_endpoint"]],
        hovertext=d["label"],
    )
    fig.add_bar(
        x=d["family"],
        y=d["GBps_per_kusd"],
        name="all-to-all rate per GPU over cost per endpoint (GB/s per k$)",
        offsetgroup="bw",
        yaxis="y2",
        text=[("" if v is None else f"{v:.2f}") for v in d["GBps_per_kusd"]],
        hovertext=d["label"],
    )
    notes = "<br>".join(
        f"{f}: {lab}" for f, lab in zip(d["family"], d["label"], strict=True) if lab
    )
    fig.update_layout(
        title=title or "cost per endpoint and all-to-all bandwidth per dollar",
        barmode="group",
        yaxis={"title": "k$ per endpoint"},
        yaxis2={"title": "GB/s per k$", "overlaying": "y", "side": "right"},
        legend={"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
        margin={"t": 110, "b": 170},
        annotations=[
            {
                "text": notes,
                "xref": "paper",
                "yref": "paper",
                "x": 0,
                "y": -0.12,
                "yanchor": "top",
                "showarrow": False,
                "align": "left",
                "font": {"size": 11},
            }
        ],
    )
    return fig
