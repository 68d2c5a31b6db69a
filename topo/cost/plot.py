"""The cost comparison as a grouped bar chart: cost per endpoint and all-to-all bandwidth per
dollar, the bandwidth from the flow solver (:func:`topo.flow.alltoall_bandwidth`).

The flow solver's exact reductions were written for Clos fabrics; Dragonfly and Slim Fly keep
one commodity per server class, so they are solved on a small instance of the same family
(the chart says which), and the per-GPU rate of that instance stands for the full size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from topo.cost.compare import CompareRow

SOLVE_GPUS = 16_384
"""Largest fat tree the chart solves at full size (about 1 s); larger ones are solved at this
size (a partial non-blocking fat tree has the same per-GPU rate)."""


@dataclass(frozen=True)
class SolvedBandwidth:
    """All-to-all rate per GPU of one family, and the instance it was solved on.

    Attributes
    ----------
    family : str
    internode_GBps : float
        All-to-all rate per GPU across servers (the fabric's share, GB/s = 1e9 B/s): unlike
        nccl-tests' busbw it does not count the intra-server share, so a small instance does
        not flatter its family.
    instance : str
        What was solved, e.g. ``q = 5, 200 GPUs``.
    full_size : bool
        True if the instance is the compared fabric itself.
    solve_seconds : float
    """

    family: str
    internode_GBps: float
    instance: str
    full_size: bool
    solve_seconds: float


def _instance(
    row: CompareRow, switch_ports: int, nics_per_node: int
) -> tuple[dict[str, Any], str, bool]:
    """Builder arguments of the instance to solve for ``row``, its label, and whether full."""
    base: dict[str, Any] = dict(switch_ports=switch_ports, nics_per_node=nics_per_node)
    if row.family in ("ft2", "mpft", "ft3"):
        gpus = row.endpoints // nics_per_node * 8
        if gpus <= SOLVE_GPUS:
            return {**base, "family": row.family}, f"full size, {gpus:,} GPUs", True
        return (
            {**base, "family": row.family, "gpus": SOLVE_GPUS},
            f"{SOLVE_GPUS:,} of {gpus:,} GPUs (non-blocking: same per-GPU rate)",
            False,
        )
    if row.family == "slimfly":
        return (
            {**base, "family": "slimfly", "q": 5},
            "q = 5, 200 GPUs (full size too large for the flow solver)",
            False,
        )
    return (
        {
            **base,
            "family": "dragonfly",
            "routers_per_group": 4,
            "endpoints_per_router": 2,
            "global_ports": 2,
        },
        "a = 4, p = h = 2, 9 groups, 72 GPUs (full size too large for the flow solver)",
        False,
    )


def solve_bandwidth(
    rows: Sequence[CompareRow],
    *,
    switch_ports: int = 64,
    link_gbps: float = 400.0,
    nics_per_node: int = 8,
) -> list[SolvedBandwidth]:
    """All-to-all bandwidth per GPU of each compared family, by the flow solver.

    Servers: 8 GPUs and ``nics_per_node`` NICs, H800 NVLink and PCIe defaults.

    Raises
    ------
    TopoError
        From the builders or the flow solver.
    """
    import time

    from topo.builders import build
    from topo.flow import alltoall_bandwidth

    out = []
    for row in rows:
        args, label, full = _instance(row, switch_ports, nics_per_node)
        family = args.pop("family")
        t0 = time.perf_counter()
        G = build(family, link_gbps=link_gbps, **args)
        r = alltoall_bandwidth(G)
        out.append(
            SolvedBandwidth(
                row.family, r.internode_per_gpu_Bps / 1e9, label, full, time.perf_counter() - t0
            )
        )
    return out


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
