"""The as-routed report: per-tier loads, the most loaded links, the rate, and the record.

With every flow fixed, each arc ``e`` carries ``c_e`` pair-units per unit pair rate; the
all-to-all runs at ``lambda = min_e capacity_e / c_e`` (the slowest link sets the completion
time). Parallel cables count one by one (a cable's capacity is its edge's over ``links``).
Rates in B/s inside; GB/s (1e9 B/s) only in the records.

References
----------
nccl-tests ``doc/PERFORMANCE.md`` (busbw of alltoall: ``lambda (n - 1)``).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import networkx as nx
import numpy as np

from topo.flow.routing.arrays import Arcs
from topo.flow.routing.endpoints import Ends, class_totals, source_totals
from topo.flow.routing.updown import PortLoads, UpDownTree
from topo.units import Bps_to_GBps

TOP_LINKS = 20
"""How many of the most loaded links the report lists."""

SATURATED = 1 - 1e-9
"""Utilisation from which a link counts as a bottleneck."""


@dataclass(frozen=True)
class TierLoad:
    """Loads of one tier of links (one direction, e.g. ``leaf->spine``), at the reported rate.

    Attributes
    ----------
    tier : str
        ``<lower or upper>-><...>``, e.g. ``nic->leaf``, ``leaf->spine``, ``spine->leaf``,
        ``gpu->nvswitch`` (NVLink), ``gpu->nic`` (PCIe).
    links : int
        Link directions in the tier (an edge of parallel cables counts once).
    capacity_GBps : float
        Median capacity of those link directions, GB/s.
    expected_mean_GBps, expected_max_GBps : float
        Mean and largest load of a link of the tier with the expected (ECMP: evenly split)
        routing, at the reported pair rate, GB/s.
    mean_GBps, max_GBps : float
        Mean and largest load with this seed's routing (D-mod-k: the routing), GB/s.
    max_utilization : float
        Largest load over capacity of a cable of the tier (1 on the bottleneck tier).
    """

    tier: str
    links: int
    capacity_GBps: float
    expected_mean_GBps: float
    expected_max_GBps: float
    mean_GBps: float
    max_GBps: float
    max_utilization: float


@dataclass(frozen=True)
class LoadedLink:
    """One direction of a link and its load at the reported pair rate.

    Attributes
    ----------
    source, target : str
        The link's ends, in the direction of the load.
    tier : str
        E.g. ``leaf->spine``.
    capacity_GBps, load_GBps : float
        Capacity (all its cables) and load in that direction, GB/s.
    expected_load_GBps : float
        Its load with the expected routing, GB/s.
    cables : int
        Parallel cables of the link.
    utilization : float
        Largest load over capacity of one of its cables.
    """

    source: str
    target: str
    tier: str
    capacity_GBps: float
    load_GBps: float
    expected_load_GBps: float
    cables: int
    utilization: float


@dataclass(frozen=True)
class RoutedReport:
    """The all-to-all as routed (see :func:`routed_alltoall`). Rates in GB/s (1e9 B/s).

    ``seed`` is the integer seed of an ECMP run (None for D-mod-k, or when a Generator was
    passed); ``pxn`` whether PXN applied (never for fabrics without GPUs).

    ``link_load`` (a property) maps every directed arc ``(u, v)`` of the fabric to its load in
    B/s at the reported pair rate; :meth:`to_dict` leaves it out unless asked.
    """

    fabric: str
    family: str
    terminal: str
    routing: str
    seed: int | None
    flows_per_pair: int
    pxn: bool
    gpus: int
    nodes: int
    flows: int
    pair_rate_GBps: float
    alltoall_algbw_GBps: float
    alltoall_busbw_GBps: float
    expected_pair_rate_GBps: float
    expected_alltoall_busbw_GBps: float
    collision_loss: float
    max_link_utilization: float
    bottleneck_tiers: dict[str, int]
    tiers: list[TierLoad]
    most_loaded_links: list[LoadedLink]
    notes: list[str]
    solve_seconds: float
    # (nodes, arc tails, arc heads, load, expected load): always set by routed_alltoall; None
    # only in the copy that to_dict serialises
    _arcs: tuple[list[Any], np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = field(
        default=None, repr=False, compare=False
    )

    def _arc_loads(self, expected: bool) -> list[tuple[Any, Any, float]]:
        """``(u, v, B/s)`` of every directed arc: sampled or expected loads."""
        if self._arcs is None:  # pragma: no cover - a bug
            raise AssertionError("RoutedReport built without its arcs")
        nodes, u, v, load, load_e = self._arcs
        x = load_e if expected else load
        return [
            (nodes[a], nodes[b], w)
            for a, b, w in zip(u.tolist(), v.tolist(), x.tolist(), strict=True)
        ]

    @property
    def link_load(self) -> dict[tuple[Any, Any], float]:
        """Load in B/s at the reported pair rate of every directed arc ``(u, v)`` of the fabric."""
        return {(a, b): x for a, b, x in self._arc_loads(expected=False)}

    @property
    def expected_link_load(self) -> dict[tuple[Any, Any], float]:
        """As :attr:`link_load` with the expected routing (ECMP's even split), B/s at the
        reported pair rate."""
        return {(a, b): x for a, b, x in self._arc_loads(expected=True)}

    def to_dict(self, *, link_load: bool = False) -> dict[str, Any]:
        """A JSON-ready dict; with ``link_load=True`` also ``link_load``, a list of
        ``[source, target, load_Bps]`` for every directed arc."""
        d = asdict(replace(self, _arcs=None))  # the arrays are not deep-copied
        d.pop("_arcs")
        if link_load:
            d["link_load"] = [[str(a), str(b), x] for a, b, x in self._arc_loads(expected=False)]
        return d


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
) -> RoutedReport:
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
    RoutedReport
        ``lambda = min_e capacity_e / c_e`` over every cable, NIC link, PCIe and NVLink link,
        and the loads at that rate.
    """
    al = _arc_loads(arcs, tree, e, loads)
    lam = float(1.0 / al.ratio.max())
    lam_e = float(1.0 / al.ratio_e.max())
    n = e.n
    util = al.ratio * lam
    load = al.cnt * lam
    load_e = al.cnt_e * lam
    tier_set, tier_code = arcs.tier_classes()
    tier_arr = tier_set[tier_code]
    bottleneck = Counter(tier_arr[util >= SATURATED].tolist())
    flows = int(round(float(e.D @ source_totals(e)))) * flows_per_pair
    return RoutedReport(
        fabric=str(G.graph.get("name", "")),
        family=str(G.graph.get("family", "unknown")),
        terminal=e.terminal,
        routing=routing,
        seed=seed,
        flows_per_pair=flows_per_pair,
        pxn=e.pxn,
        gpus=n,
        nodes=e.node_names,
        flows=flows,
        pair_rate_GBps=Bps_to_GBps(lam),
        alltoall_algbw_GBps=Bps_to_GBps(lam * n),
        alltoall_busbw_GBps=Bps_to_GBps(lam * (n - 1)),
        expected_pair_rate_GBps=Bps_to_GBps(lam_e),
        expected_alltoall_busbw_GBps=Bps_to_GBps(lam_e * (n - 1)),
        collision_loss=float(max(0.0, 1.0 - lam / lam_e)),
        max_link_utilization=float(util.max()),
        bottleneck_tiers=dict(sorted(bottleneck.items())),
        tiers=_tier_loads(arcs, tier_set, tier_code, load, load_e, util),
        most_loaded_links=_most_loaded_links(arcs, tier_arr, load, load_e, util),
        notes=notes,
        solve_seconds=time.perf_counter() - t0,
        _arcs=(arcs.nodes, arcs.u, arcs.v, load, load_e),
    )


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
) -> list[TierLoad]:
    """One :class:`TierLoad` per link direction class, lowest tiers first (B/s in, GB/s out).

    The arcs are grouped by a stable sort on their tier, so each tier's values are a slice
    in arc order (the same sums as a boolean mask, without scanning every arc per tier)."""
    order = np.argsort(tier_code, kind="stable")
    ends = np.cumsum(np.bincount(tier_code, minlength=len(tier_set)))
    cap, ld, ld_e, ut = arcs.cap[order], load[order], load_e[order], util[order]
    tiers = []
    for k in sorted(range(len(tier_set)), key=lambda k: _tier_sort(str(tier_set[k]))):
        m = slice(int(ends[k - 1]) if k else 0, int(ends[k]))
        tiers.append(
            TierLoad(
                tier=str(tier_set[k]),
                links=m.stop - m.start,
                capacity_GBps=Bps_to_GBps(float(np.median(cap[m]))),
                expected_mean_GBps=Bps_to_GBps(float(ld_e[m].mean())),
                expected_max_GBps=Bps_to_GBps(float(ld_e[m].max())),
                mean_GBps=Bps_to_GBps(float(ld[m].mean())),
                max_GBps=Bps_to_GBps(float(ld[m].max())),
                max_utilization=float(ut[m].max()),
            )
        )
    return tiers


def _most_loaded_links(
    arcs: Arcs, tier_arr: np.ndarray, load: np.ndarray, load_e: np.ndarray, util: np.ndarray
) -> list[LoadedLink]:
    """The :data:`TOP_LINKS` arcs of highest utilisation (ties in arc order), loaded ones only."""
    top = np.argsort(-util, kind="stable")[:TOP_LINKS]
    return [
        LoadedLink(
            source=str(arcs.nodes[arcs.u[a]]),
            target=str(arcs.nodes[arcs.v[a]]),
            tier=str(tier_arr[a]),
            capacity_GBps=Bps_to_GBps(float(arcs.cap[a])),
            load_GBps=Bps_to_GBps(float(load[a])),
            expected_load_GBps=Bps_to_GBps(float(load_e[a])),
            cables=int(arcs.cables[a]),
            utilization=float(util[a]),
        )
        for a in top
        if util[a] > 0
    ]


_TIER_ORDER = {"gpu": 0, "nvswitch": 1, "nic": 2, "leaf": 3, "spine": 4, "core": 5}


def _tier_sort(t: str) -> tuple[int, bool, str]:
    a, b = t.split("->")
    ka = _TIER_ORDER.get(a, 6 + int(a[4:]) if a.startswith("tier") else 9)
    kb = _TIER_ORDER.get(b, 6 + int(b[4:]) if b.startswith("tier") else 9)
    return (max(ka, kb), kb < ka, t)


__all__ = ["SATURATED", "TOP_LINKS", "LoadedLink", "RoutedReport", "TierLoad", "routed_report"]
