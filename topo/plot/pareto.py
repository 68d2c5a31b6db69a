"""The Pareto front of a sweep: cost against all-to-all bandwidth (higher is better) or
against TPOT (lower is better), every point drawn, the front joined.

It only draws: the rows come from :func:`topo.engine.sweep.run_sweep` (plain dicts).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

__all__ = ["pareto_front", "plot_pareto"]


def pareto_front(rows: Sequence[dict[str, Any]], x: str, y: str, *, maximize_y: bool) -> list[int]:
    """The rows no other row beats: none has an ``x`` as low and a ``y`` as good, one of the
    two strictly better.

    Parameters
    ----------
    rows : sequence of dict
        Rows with numeric ``x`` and ``y`` (rows missing either, or with an ``error``, are
        left out).
    x : str
        The key to minimise (e.g. ``cost_usd``).
    y : str
        The key to maximise (``alltoall_busbw_GBps``) or minimise (``tpot_ms``).
    maximize_y : bool
        Which way ``y`` is better.

    Returns
    -------
    list of int
        Indices into ``rows``, by increasing ``x``.

    Examples
    --------
    >>> rows = [{"c": 1, "b": 10}, {"c": 2, "b": 5}, {"c": 3, "b": 20}]
    >>> pareto_front(rows, "c", "b", maximize_y=True)
    [0, 2]
    """
    sign = -1.0 if maximize_y else 1.0
    pts = [
        (float(r[x]), sign * float(r[y]), i)
        for i, r in enumerate(rows)
        if r.get(x) is not None and r.get(y) is not None and not r.get("error")
    ]
    front, best = [], float("inf")
    for _x, py, i in sorted(pts):
        if py < best:
            front.append(i)
            best = py
    return front


def _pareto_data(
    rows: Sequence[dict[str, Any]], x: str, y: str, maximize_y: bool
) -> dict[str, Any]:
    """Traces of the figure: points by family, and the front in order of ``x``."""
    families: dict[str, dict[str, list[Any]]] = {}
    for r in rows:
        if r.get(x) is None or r.get(y) is None or r.get("error"):
            continue
        f = families.setdefault(str(r.get("family")), {"x": [], "y": [], "text": []})
        f["x"].append(r[x])
        f["y"].append(r[y])
        f["text"].append(
            ", ".join(f"{k} {r[k]}" for k in r if k not in (x, y, "error") and r[k] is not None)
        )
    return {"families": families, "fronts": _fronts(rows, x, y, maximize_y)}


def _fronts(
    rows: Sequence[dict[str, Any]], x: str, y: str, maximize_y: bool
) -> dict[str, tuple[list[Any], list[Any]]]:
    """The Pareto front of each GPU count (``gpus``), named by it when the rows hold several:
    a design of fewer GPUs costs less and is no answer for more GPUs, so one front across GPU
    counts would join designs that do not compete."""
    sizes = sorted({r.get("gpus") for r in rows}, key=lambda g: (g is None, g or 0))
    out: dict[str, tuple[list[Any], list[Any]]] = {}
    for g in sizes:
        group = [r for r in rows if r.get("gpus") == g]
        front = pareto_front(group, x, y, maximize_y=maximize_y)
        if not front:
            continue
        name = "Pareto front" if len(sizes) == 1 else f"Pareto front, {g} GPUs"
        out[name] = ([group[i][x] for i in front], [group[i][y] for i in front])
    return out


def plot_pareto(
    rows: Sequence[dict[str, Any]], x: str, y: str, *, maximize_y: bool, title: str = ""
) -> go.Figure:
    """Every successful row as a marker (coloured by family), the Pareto front as a line: one
    per GPU count when the rows hold several (designs of different sizes do not compete).

    Parameters
    ----------
    rows : sequence of dict
        The sweep's rows.
    x, y : str
        Columns on the axes (``cost_usd``; ``alltoall_busbw_GBps`` or ``tpot_ms``).
    maximize_y : bool
        True when a higher ``y`` is better.
    title : str, optional
        The figure's title.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    data = _pareto_data(rows, x, y, maximize_y)
    fig = go.Figure()
    for family, f in sorted(data["families"].items()):
        fig.add_trace(go.Scatter(x=f["x"], y=f["y"], text=f["text"], mode="markers", name=family))
    for name, (fx, fy) in data["fronts"].items():
        fig.add_trace(
            go.Scatter(
                x=fx,
                y=fy,
                mode="lines+markers",
                name=name,
                line={"shape": "hv", "color": "black" if len(data["fronts"]) == 1 else None},
            )
        )
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y, template="plotly_white")
    return fig
