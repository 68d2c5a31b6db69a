"""One sweep point evaluated by the library: build the fabric, count it, and, as the spec
asks, price it (:mod:`topo.cost`), fail the point's cables and switches and solve the exact
all-to-all (:mod:`topo.flow`), predict one collective (:mod:`topo.collective`) and time the
MoE layer and TPOT (:mod:`topo.moe`).

Each row's keys are those of the verbs' JSON (``family``, ``gpus``, ``cost_usd``,
``alltoall_busbw_GBps``, ``tpot_ms``, ...), so a row is reproduced by ``topo build`` with the
point's arguments followed by ``topo cost``, ``topo bandwidth --fail-links K --seed SEED``,
``topo collective`` and ``topo moe --ep E --node-limit M``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from topo.builders import build
from topo.collective import collective_table
from topo.cost import PriceBook, bill_of_materials
from topo.errors import TopoError
from topo.fabric import summarize
from topo.flow.failures import damaged_bandwidth
from topo.moe import MoEConfig, moe_report
from topo.spec import FabricSpec

BUILD_AXES = {
    "switch_ports": "switch_ports",
    "link_gbps": "link_gbps",
    "gpus": "gpus",
    "gpus_per_node": "gpus_per_node",
    "planes": "nics_per_node",
    "oversubscription": "oversubscription",
}
"""Grid axes that are arguments of :func:`topo.builders.build` (axis -> keyword)."""

COUNT_COLUMNS = ("family", "gpus", "nodes", "endpoints", "switches", "links")
RESULT_COLUMNS: dict[str, tuple[str, ...]] = {
    "cost": ("cost_usd", "cost_per_endpoint_usd"),
    "alltoall": (
        "failed_links",
        "failed_switches",
        "alltoall_busbw_GBps",
        "exact",
        "lower_bound_busbw_GBps",
        "upper_bound_busbw_GBps",
        "disconnected_gpus",
    ),
    "collective": (
        "collective_op",
        "collective_size_bytes",
        "collective_time_us",
        "collective_busbw_GBps",
    ),
    "moe": ("ep", "node_limit", "dispatch_us", "combine_us", "layer_us", "tpot_ms", "tokens_per_s"),
}
"""The columns each evaluation adds (keys as in the verbs' JSON)."""


@dataclass(frozen=True)
class Context:
    """What every point of a sweep shares (scattered to each worker once).

    Attributes
    ----------
    evaluate : tuple of str
        Of :data:`topo.engine.spec.EVALUATE`.
    prices : PriceBook or None
        For ``cost`` (None: topo's default book).
    config : MoEConfig or None
        For ``moe``.
    moe : dict
        ``tokens_per_gpu``, ``micro_batches``, ``seed`` (``topo moe``'s defaults if absent).
    collective : dict
        ``op`` (default all_reduce) and ``size_bytes`` (default 1 GiB).
    """

    evaluate: tuple[str, ...]
    prices: PriceBook | None = None
    config: MoEConfig | None = None
    moe: dict[str, Any] = field(default_factory=dict)
    collective: dict[str, Any] = field(default_factory=dict)


def columns(axes: list[str], evaluate: tuple[str, ...]) -> list[str]:
    """The table's columns, in order: point, seed, the axes, the counts, each evaluation's,
    error (a name appears once).

    Parameters
    ----------
    axes : list of str
        The grid's axes.
    evaluate : tuple of str
        What the sweep evaluates.

    Returns
    -------
    list of str
    """
    names = ["point", "seed", *axes, *COUNT_COLUMNS]
    for e in evaluate:
        names += RESULT_COLUMNS[e]
    names.append("error")
    return list(dict.fromkeys(names))


def fabric_of(point: dict[str, Any]) -> nx.Graph:
    """The point's fabric: :func:`topo.builders.build` of its family and build axes.

    Raises
    ------
    SpecError
        A combination the family refuses (e.g. more GPUs than it holds).
    """
    args = {kw: point[axis] for axis, kw in BUILD_AXES.items() if axis in point}
    return build(FabricSpec.from_options(point["family"], **args))


def evaluate_point(ctx: Context, point: dict[str, Any]) -> dict[str, Any]:
    """One row of the sweep table.

    Parameters
    ----------
    ctx : Context
        The sweep's shared inputs.
    point : dict
        ``point``, ``seed`` and the grid axes' values (:meth:`SweepSpec.points`).

    Returns
    -------
    dict
        The point, its counts and what ``ctx.evaluate`` asks (rates GB/s, times µs or ms,
        money US$); ``error`` is empty, or the refusal of a combination the library cannot
        build or solve (one line; the other values then None).
    """
    row: dict[str, Any] = dict(point)
    try:
        G = fabric_of(point)
        counts = summarize(G).to_dict()
        row.update({k: counts[k] for k in COUNT_COLUMNS})
        for e in ctx.evaluate:
            row.update(_EVALUATORS[e](G, ctx, point))
        row["error"] = ""
    except TopoError as exc:
        row["error"] = " ".join(str(exc).split())
    return row


def _cost(G: nx.Graph, ctx: Context, point: dict[str, Any]) -> dict[str, Any]:
    report = bill_of_materials(G, ctx.prices).to_dict()
    return {k: report[k] for k in RESULT_COLUMNS["cost"]}


def failed_links(G: nx.Graph, point: dict[str, Any]) -> int:
    """Cables the point fails: ``fail_links``, or ``fail_link_rate`` of all the fabric's cables
    (NIC cables and switch-to-switch links, the set the random draw takes them from:
    :func:`topo.flow.failures.damaged_bandwidth`) rounded to the nearest whole cable (half
    up), or 0.

    Parameters
    ----------
    G : networkx.Graph
        The point's fabric.
    point : dict
        The point's axes.

    Returns
    -------
    int
    """
    if "fail_links" in point:
        return int(point["fail_links"])
    rate = float(point.get("fail_link_rate", 0.0))
    if not 0.0 <= rate <= 1.0:
        raise TopoError(f"fail_link_rate must be in [0, 1], got {rate}", param="fail_link_rate")
    return int(rate * summarize(G).cables + 0.5)


def _alltoall(G: nx.Graph, ctx: Context, point: dict[str, Any]) -> dict[str, Any]:
    links = failed_links(G, point)
    switches = int(point.get("fail_switches", 0))
    d = damaged_bandwidth(G, links=links, switches=switches, seed=point["seed"]).to_dict()
    return {
        "failed_links": links,
        "failed_switches": switches,
        "alltoall_busbw_GBps": d["alltoall_busbw_GBps"],
        "exact": d["exact"],
        # the certified bounds where the rate is unknown (its column is then null)
        "lower_bound_busbw_GBps": d.get("lower_bound_busbw_GBps"),
        "upper_bound_busbw_GBps": d.get("upper_bound_busbw_GBps"),
        "disconnected_gpus": d["disconnected_gpus"],
    }


def _collective(G: nx.Graph, ctx: Context, point: dict[str, Any]) -> dict[str, Any]:
    op = ctx.collective.get("op", "all_reduce")
    size = int(ctx.collective.get("size_bytes", 1 << 30))
    row = collective_table(G, op, min_bytes=size, max_bytes=size).to_dict()["rows"][0]
    return {
        "collective_op": op,
        "collective_size_bytes": row["size_bytes"],
        "collective_time_us": row["time_us"],
        "collective_busbw_GBps": row["busbw_GBps"],
        "collective_ceiling_busbw_GBps": row["ceiling_busbw_GBps"],
    }


def _moe(G: nx.Graph, ctx: Context, point: dict[str, Any]) -> dict[str, Any]:
    if ctx.config is None:
        raise TopoError("evaluate moe needs a model (the sweep's [moe] model)")
    report = moe_report(
        G,
        ctx.config,
        ep=point.get("ep"),
        node_limit=point.get("node_limit"),
        tokens_per_gpu=ctx.moe.get("tokens_per_gpu", 32),
        micro_batches=ctx.moe.get("micro_batches", 2),
        seed=ctx.moe.get("seed", 0),
    ).to_dict()
    return {k: report[k] for k in RESULT_COLUMNS["moe"]}


_EVALUATORS = {"cost": _cost, "alltoall": _alltoall, "collective": _collective, "moe": _moe}
