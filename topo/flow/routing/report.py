"""The as-routed result: per-tier loads, the most loaded links, the rate.

With every flow fixed, each arc ``e`` carries ``c_e`` pair-units per unit pair rate; the
all-to-all runs at ``lambda = min_e capacity_e / c_e`` (the slowest link sets the completion
time). Parallel cables count one by one (a cable's capacity is its edge's over ``links``).
Rates in B/s; GB/s (1e9 B/s) only in the result's ``to_dict()``.

References
----------
nccl-tests ``doc/PERFORMANCE.md`` (busbw of alltoall: ``lambda (n - 1)``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import networkx as nx
import numpy as np

from topo.flow.result import (
    ArcLoads,
    BandwidthResult,
    BottleneckLink,
    LoadedLink,
    LPStats,
    RoutingDetail,
    TierLoad,
)
from topo.flow.routing.arrays import Arcs
from topo.flow.routing.ends import Ends, class_totals, source_totals
from topo.flow.routing.updown import PortLoads, UpDownTree

TOP_LINKS = 20
"""How many of the most loaded links the report lists."""

SATURATED = 1 - 1e-9
"""Utilisation from which a link counts as a bottleneck."""


@dataclass
class _ArcLoads:
    """Pair-units per unit pair rate on every arc (routed, expected) and the largest ratio
    of load to capacity of a cable of the arc (fabric arcs cable by cable)."""

    cnt: np.ndarray
    cnt_e: np.ndarray
    ratio: np.ndarray
    ratio_e: np.ndarray


def routed_report(
    G: nx.Graph,
    arcs: Arcs,
    tree: UpDownTree,
    e: Ends,
    loads: PortLoads,
    *,
    routing: str,
    seed: int | None,
    flows_per_pair: int,
    notes: list[str],
    t0: float,
) -> BandwidthResult:
    """The report of a routed all-to-all from its port loads.

    Parameters
    ----------
    G : networkx.Graph
        The fabric (its ``name`` and ``family`` are reported).
    arcs, tree, e : Arcs, UpDownTree, Ends
        The fabric as routed.
    loads : PortLoads
        The router's port loads, pair-units per unit pair rate.
    routing : str
        ``"ecmp"`` or ``"dmodk"``.
    seed : int or None
        Reported as is.
    flows_per_pair : int
        Flows per ordered pair.
    notes : list of str
        Reported as is.
    t0 : float
        :func:`time.perf_counter` at the start of the call (``solve_seconds``).

    Returns
    -------
    BandwidthResult
        With :attr:`~topo.flow.result.BandwidthResult.routing` set: the pair rate
        ``lambda = min_e capacity_e / c_e`` over every cable, NIC link, PCIe and NVLink link
        (B/s), the loads at that rate, the saturated link directions as its bottlenecks.
    """
    al = _arc_loads(arcs, tree, e, loads)
    lam = float(1.0 / al.ratio.max())
    lam_e = float(1.0 / al.ratio_e.max())
    n = e.n
    util = al.ratio * lam
    load = al.cnt * lam
    load_e = al.cnt_e * lam
    tier_set, tier_code = arcs.tier_classes()
    detail = RoutingDetail(
        name=routing,
        seed=seed,
        flows_per_pair=flows_per_pair,
        pxn=e.pxn,
        flows=int(round(float(e.D @ source_totals(e)))) * flows_per_pair * e.ports,
        expected_pair_rate_Bps=lam_e,
        collision_loss=float(1.0 - lam / lam_e),
        max_link_utilization=float(util.max()),
        tiers=_tier_loads(arcs, tier_set, tier_code, load, load_e, util),
        loaded_links=_most_loaded_links(arcs, tier_set, tier_code, load, load_e, util),
        expected_link_load=ArcLoads(arcs.nodes, arcs.u, arcs.v, load_e),
    )
    per = _per_terminal(arcs, e, lam)
    return BandwidthResult(
        fabric=str(G.graph.get("name", "")),
        family=str(G.graph.get("family", "unknown")),
        terminal=e.terminal,
        demand="alltoall",
        uniform=True,
        gpus=n,
        nodes=e.node_names,
        theta=lam,
        total_bytes=float(n * (n - 1)),
        pair_rate_Bps=lam,
        internode_per_gpu_Bps=per.internode_per_gpu,
        internode_per_nic_Bps=per.internode_per_nic,
        nic_line_rate_Bps=per.nic_line_rate,
        intranode_per_gpu_Bps=per.intranode_per_gpu,
        bottleneck_links=_saturated(arcs, tier_set, tier_code, load, util),
        method=routing,
        exact=True,
        reductions=tuple(notes),
        planes=1,
        lp=LPStats(),
        solve_seconds=time.perf_counter() - t0,
        routing=detail,
        link_load=ArcLoads(arcs.nodes, arcs.u, arcs.v, load),
    )


@dataclass(frozen=True)
class _PerTerminal:
    """The uniform all-to-all's per-terminal figures (B/s)."""

    internode_per_gpu: float
    internode_per_nic: float
    nic_line_rate: float
    intranode_per_gpu: float


def _per_terminal(arcs: Arcs, e: Ends, lam: float) -> _PerTerminal:
    """The uniform all-to-all's per-terminal figures at pair rate ``lam`` (B/s), defined as
    for the optimal result: inter-server traffic per terminal and per NIC, the median NIC
    cable rate, and what each terminal sends inside its server."""
    w = np.bincount(e.nic_server, weights=e.D, minlength=e.servers)
    n = float(e.n)
    inter_total = lam * float((w * (n - w)).sum())
    up = np.unique(e.up_arc)  # a NIC can have several rows (netdevs)
    nics = up.size
    return _PerTerminal(
        internode_per_gpu=inter_total / n,
        internode_per_nic=inter_total / nics if nics else 0.0,
        nic_line_rate=float(np.median(arcs.cap[up])) if nics else 0.0,
        intranode_per_gpu=lam * float((w * (w - 1)).sum()) / n,
    )


def _saturated(
    arcs: Arcs, tier_set: np.ndarray, tier_code: np.ndarray, load: np.ndarray, util: np.ndarray
) -> tuple[BottleneckLink, ...]:
    """The arcs whose utilisation reaches :data:`SATURATED`, by tier then source."""
    links = [
        BottleneckLink(
            source=str(arcs.nodes[arcs.u[a]]),
            target=str(arcs.nodes[arcs.v[a]]),
            tier=str(tier_set[tier_code[a]]),
            capacity_Bps=float(arcs.cap[a]),
            load_Bps=float(load[a]),
            cables=int(arcs.cables[a]),
        )
        for a in np.nonzero(util >= SATURATED)[0].tolist()
    ]
    links.sort(key=lambda b: (b.tier, b.source, b.target))
    return tuple(links)


def _arc_loads(arcs: Arcs, tree: UpDownTree, e: Ends, loads: PortLoads) -> _ArcLoads:
    """Pair-units per arc: fabric ports, NIC cables, inside servers."""
    n_arcs = len(arcs.u)
    cnt = np.bincount(tree.port_arc, weights=loads.port, minlength=n_arcs)
    cnt_e = np.bincount(tree.port_arc, weights=loads.port_exp, minlength=n_arcs)
    nic_up = (e.S * class_totals(e)).sum(1)
    nic_dn = e.D * source_totals(e)
    for arr in (cnt, cnt_e):
        np.add.at(arr, e.up_arc, nic_up)
        np.add.at(arr, e.dn_arc, nic_dn)
        np.add.at(arr, e.intra_arc, e.intra_load)
    # per-cable ratio load/capacity (fabric arcs cable by cable, the others as a whole)
    is_port_arc = np.zeros(n_arcs, dtype=bool)
    is_port_arc[tree.port_arc] = True
    ratio = np.where(is_port_arc, 0.0, cnt / arcs.cap)
    ratio_e = np.where(is_port_arc, 0.0, cnt_e / arcs.cap)
    np.maximum.at(ratio, tree.port_arc, loads.port / tree.port_cap)
    np.maximum.at(ratio_e, tree.port_arc, loads.port_exp / tree.port_cap)
    return _ArcLoads(cnt=cnt, cnt_e=cnt_e, ratio=ratio, ratio_e=ratio_e)


def _tier_loads(
    arcs: Arcs,
    tier_set: np.ndarray,
    tier_code: np.ndarray,
    load: np.ndarray,
    load_e: np.ndarray,
    util: np.ndarray,
) -> tuple[TierLoad, ...]:
    """One :class:`TierLoad` per link direction class, lowest tiers first (B/s in, GB/s out).

    The arcs are grouped by a stable sort on their tier, so each tier's values are a slice
    in arc order (the same sums as a boolean mask, without scanning every arc per tier)."""
    # (a stable sort by tier, by counting: a few tiers)
    order = np.concatenate([np.flatnonzero(tier_code == k) for k in range(len(tier_set))])
    ends = np.cumsum(np.bincount(tier_code, minlength=len(tier_set)))
    cap, ld, ld_e, ut = arcs.cap[order], load[order], load_e[order], util[order]
    cables = arcs.cables[order]
    tiers = []
    for k in sorted(range(len(tier_set)), key=lambda k: _tier_sort(str(tier_set[k]))):
        m = slice(int(ends[k - 1]) if k else 0, int(ends[k]))
        tiers.append(
            TierLoad(
                tier=str(tier_set[k]),
                links=m.stop - m.start,
                capacity_Bps=float(np.median(cap[m])),
                expected_mean_Bps=float(ld_e[m].mean()),
                expected_max_Bps=float(ld_e[m].max()),
                mean_Bps=float(ld[m].mean()),
                max_Bps=float(ld[m].max()),
                max_utilization=float(ut[m].max()),
                cables=int(cables[m].sum()),
            )
        )
    return tuple(tiers)


def _most_loaded_links(
    arcs: Arcs,
    tier_set: np.ndarray,
    tier_code: np.ndarray,
    load: np.ndarray,
    load_e: np.ndarray,
    util: np.ndarray,
) -> tuple[LoadedLink, ...]:
    """The :data:`TOP_LINKS` arcs of highest utilisation (ties in arc order), loaded ones only."""
    # (the first TOP_LINKS of a stable sort by decreasing utilisation: only the arcs at or
    # above the TOP_LINKS-th largest utilisation are sorted)
    near = np.arange(len(util))
    if len(util) > TOP_LINKS:
        near = np.flatnonzero(util >= np.partition(util, len(util) - TOP_LINKS)[-TOP_LINKS])
    top = near[np.argsort(-util[near], kind="stable")[:TOP_LINKS]]
    return tuple(
        LoadedLink(
            source=str(arcs.nodes[arcs.u[a]]),
            target=str(arcs.nodes[arcs.v[a]]),
            tier=str(tier_set[tier_code[a]]),
            capacity_Bps=float(arcs.cap[a]),
            load_Bps=float(load[a]),
            expected_load_Bps=float(load_e[a]),
            cables=int(arcs.cables[a]),
            utilization=float(util[a]),
        )
        for a in top
        if util[a] > 0
    )


_TIER_ORDER = {"gpu": 0, "nvswitch": 1, "nic": 2, "leaf": 3, "spine": 4, "core": 5}


def _tier_sort(t: str) -> tuple[int, bool, str]:
    a, b = t.split("->")
    ka = _TIER_ORDER.get(a, 6 + int(a[4:]) if a.startswith("tier") else 9)
    kb = _TIER_ORDER.get(b, 6 + int(b[4:]) if b.startswith("tier") else 9)
    return (max(ka, kb), kb < ka, t)


__all__ = ["SATURATED", "TOP_LINKS", "routed_report"]
