"""The result of a bandwidth solve, shared by every solver of :mod:`topo.flow`.

:class:`BandwidthResult` is what the maximum concurrent flow of a demand returns
(:func:`topo.flow.concurrent_flow`, and its callers :func:`topo.flow.alltoall_bandwidth` and
:func:`topo.flow.server_demand_time`): the rate, the binding links, how it was obtained, and,
as typed fields, the certified :class:`Bounds` when the exact LP was not solved and the
:class:`FailureSet` of a damaged fabric. An as-routed result (ECMP, D-mod-k) fills
:class:`RoutingDetail` in the same type.

Units: every rate is in B/s and every time in seconds inside; :meth:`BandwidthResult.to_dict`
(the ``--json`` of ``topo bandwidth``) and the renderers convert rates to GB/s (1e9 B/s).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import networkx as nx

from topo.fabric import vertex_label
from topo.units import GIGA, Bps_to_GBps

LINK_SEPARATOR = "--"
"""Between the two ends of a named link: ``leaf3--spine0`` (``--fail``, ``failed_links``)."""


class BottleneckLink(NamedTuple):
    """One direction of a link whose capacity binds the rate.

    A named tuple (immutable, by field name or position): a 65,536-GPU FT3 has 131,072 binding
    NIC cable directions, and a tuple is made several times faster than a frozen dataclass.

    Attributes
    ----------
    source, target : str
        The link's ends, in the direction of the binding flow.
    tier : str
        Where it sits, e.g. ``nic->leaf``, ``leaf->spine``, ``spine->leaf``.
    capacity_Bps, load_Bps : float
        Capacity and load in that direction (B/s), of all its cables.
    cables : int
        Parallel cables of the link (the edge's ``links``; 1 when unbundled).
    """

    source: str
    target: str
    tier: str
    capacity_Bps: float
    load_Bps: float
    cables: int = 1

    def to_dict(self) -> dict[str, Any]:
        """``source``, ``target``, ``tier``, ``capacity_GBps``, ``load_GBps``, ``cables``."""
        return link_dicts((self,))[0]


def link_dicts(links: Iterable[BottleneckLink]) -> list[dict[str, Any]]:
    """:meth:`BottleneckLink.to_dict` of each link, in one pass (a 65,536-GPU FT3 reports
    131,072 of them)."""
    g = GIGA  # (Bps_to_GBps: B/s over 1e9)
    return [
        {
            "source": s,
            "target": t,
            "tier": tier,
            "capacity_GBps": c / g,
            "load_GBps": x / g,
            "cables": n,
        }
        for s, t, tier, c, x, n in links
    ]


@dataclass(frozen=True)
class Bounds:
    """Certified bounds on the pair rate when the exact LP was not solved
    (:mod:`topo.flow.bounds.certified`).

    Attributes
    ----------
    lower_Bps : float
        A feasible pair rate (B/s): the rate the result reports.
    upper_Bps : float
        No concurrent flow exceeds it (B/s).
    lower_from, upper_from : str
        How each was obtained.
    """

    lower_Bps: float
    upper_Bps: float
    lower_from: str
    upper_from: str

    @property
    def gap(self) -> float:
        """``1 - lower / upper`` (0 when the upper bound is 0)."""
        return 1.0 - self.lower_Bps / self.upper_Bps if self.upper_Bps > 0 else 0.0


@dataclass(frozen=True)
class FailureSet:
    """What failed in a fabric, and whom it cut off.

    Attributes
    ----------
    links : tuple of (str, str)
        Failed cables, one entry per cable (a bundle of 2 failed twice appears twice).
    switches : tuple of str
        Failed switches.
    capacity_lost_Bps : float
        Capacity removed, one direction, B/s (switches' cables included).
    disconnected : tuple
        Servers (or host endpoints) cut off from the rest; their GPUs are out of the result.
    disconnected_gpus : int
        GPUs (or endpoints) in those servers.
    islands : tuple of int
        When the damage splits the fabric: the GPUs (or endpoints) of each connected group
        holding a switch, largest first (the result is about the first; among equal ones the
        one with the first server by name). Empty when nothing is cut off.
    """

    links: tuple[tuple[str, str], ...] = ()
    switches: tuple[str, ...] = ()
    capacity_lost_Bps: float = 0.0
    disconnected: tuple[Hashable, ...] = ()
    disconnected_gpus: int = 0
    islands: tuple[int, ...] = ()

    @property
    def empty(self) -> bool:
        """True when nothing failed."""
        return not self.links and not self.switches

    def to_dict(self) -> dict[str, Any]:
        """``failed_links`` (``u--v``), ``failed_switches``, ``capacity_lost_GBps``,
        ``disconnected`` (as strings), ``disconnected_gpus``, ``islands``."""
        return {
            "failed_links": [f"{u}{LINK_SEPARATOR}{v}" for u, v in self.links],
            "failed_switches": list(self.switches),
            "capacity_lost_GBps": Bps_to_GBps(self.capacity_lost_Bps),
            "disconnected": [str(s) for s in self.disconnected],
            "disconnected_gpus": self.disconnected_gpus,
            "islands": list(self.islands),
        }


@dataclass(frozen=True)
class LPStats:
    """Size and time of the exact LP solved (zeros when none was: certified bounds, a
    certificate without an LP).

    Attributes
    ----------
    variables, constraints : int
        Flow variables and rows.
    build_seconds, solve_seconds : float
        Wall time to build the model and for HiGHS to solve it (s).
    """

    variables: int = 0
    constraints: int = 0
    build_seconds: float = 0.0
    solve_seconds: float = 0.0

    @property
    def solved(self) -> bool:
        """An exact LP was solved (it has variables); False for the zeros of none."""
        return self.variables > 0

    def to_dict(self) -> dict[str, int | float | None]:
        """``lp_variables``, ``lp_constraints``, ``lp_build_seconds``, ``lp_solve_seconds``
        (s): None each when no exact LP was solved, so that no zero reads as an LP's size."""
        values = (self.variables, self.constraints, self.build_seconds, self.solve_seconds)
        keys = ("lp_variables", "lp_constraints", "lp_build_seconds", "lp_solve_seconds")
        return {k: (v if self.solved else None) for k, v in zip(keys, values, strict=True)}


@dataclass(frozen=True)
class TierLoad:
    """Loads of one tier of links (one direction, e.g. ``leaf->spine``) of an as-routed
    result, at its pair rate.

    Attributes
    ----------
    tier : str
        ``<lower or upper>-><...>``, e.g. ``nic->leaf``, ``leaf->spine``, ``spine->leaf``,
        ``gpu->nvswitch`` (NVLink), ``gpu->nic`` (PCIe).
    links : int
        Link directions in the tier (an edge of parallel cables counts once).
    capacity_Bps : float
        Median capacity of those link directions (B/s).
    expected_mean_Bps, expected_max_Bps : float
        Mean and largest load of a link of the tier with the expected (ECMP: evenly split)
        routing, at the reported pair rate (B/s).
    mean_Bps, max_Bps : float
        Mean and largest load with this seed's routing (D-mod-k: the routing), B/s.
    max_utilization : float
        Largest load over capacity of a cable of the tier (1 on the bottleneck tier).
    cables : int
        Cables in the tier (parallel cables one by one; ``links`` when none are bundled; 0
        when not counted).
    """

    tier: str
    links: int
    capacity_Bps: float
    expected_mean_Bps: float
    expected_max_Bps: float
    mean_Bps: float
    max_Bps: float
    max_utilization: float
    cables: int = 0

    def to_dict(self) -> dict[str, Any]:
        """``tier``, ``links``, ``capacity_GBps``, ``expected_mean_GBps``,
        ``expected_max_GBps``, ``mean_GBps``, ``max_GBps``, ``max_utilization``,
        ``cables``."""
        return {
            "tier": self.tier,
            "links": self.links,
            "capacity_GBps": Bps_to_GBps(self.capacity_Bps),
            "expected_mean_GBps": Bps_to_GBps(self.expected_mean_Bps),
            "expected_max_GBps": Bps_to_GBps(self.expected_max_Bps),
            "mean_GBps": Bps_to_GBps(self.mean_Bps),
            "max_GBps": Bps_to_GBps(self.max_Bps),
            "max_utilization": self.max_utilization,
            "cables": self.cables,
        }


@dataclass(frozen=True)
class LoadedLink:
    """One direction of a link of an as-routed result and its load at the pair rate.

    Attributes
    ----------
    source, target : str
        The link's ends, in the direction of the load.
    tier : str
        E.g. ``leaf->spine``.
    capacity_Bps, load_Bps : float
        Capacity (all its cables) and load in that direction (B/s).
    expected_load_Bps : float
        Its load with the expected routing (B/s).
    cables : int
        Parallel cables of the link.
    utilization : float
        Largest load over capacity of one of its cables.
    """

    source: str
    target: str
    tier: str
    capacity_Bps: float
    load_Bps: float
    expected_load_Bps: float
    cables: int
    utilization: float

    def to_dict(self) -> dict[str, Any]:
        """``source``, ``target``, ``tier``, ``capacity_GBps``, ``load_GBps``,
        ``expected_load_GBps``, ``cables``, ``utilization``."""
        return {
            "source": self.source,
            "target": self.target,
            "tier": self.tier,
            "capacity_GBps": Bps_to_GBps(self.capacity_Bps),
            "load_GBps": Bps_to_GBps(self.load_Bps),
            "expected_load_GBps": Bps_to_GBps(self.expected_load_Bps),
            "cables": self.cables,
            "utilization": self.utilization,
        }


class ArcLoads(Mapping[tuple[Any, Any], float]):
    """A read-only map ``(u, v) -> load`` (B/s) over arc arrays, built into a dict only when
    first looked up (an as-routed result has the loads of every arc as arrays).

    Parameters
    ----------
    nodes : sequence
        Vertex of each index.
    u, v : numpy.ndarray of int, shape (arcs,)
        Tail and head index of each arc.
    load : numpy.ndarray of float, shape (arcs,)
        Load of each arc (B/s).

    Iteration is in arc order.
    """

    def __init__(self, nodes: Sequence[Any], u: Any, v: Any, load: Any) -> None:
        self._nodes = nodes
        self._u, self._v, self._load = u, v, load
        self._map: dict[tuple[Any, Any], float] | None = None

    def triples(self) -> list[tuple[Any, Any, float]]:
        """``(u, v, B/s)`` of every arc, in arc order."""
        nodes = self._nodes
        return [
            (nodes[a], nodes[b], w)
            for a, b, w in zip(self._u.tolist(), self._v.tolist(), self._load.tolist(), strict=True)
        ]

    def _dict(self) -> dict[tuple[Any, Any], float]:
        if self._map is None:
            self._map = {(a, b): w for a, b, w in self.triples()}
        return self._map

    def __getitem__(self, key: tuple[Any, Any]) -> float:
        return self._dict()[key]

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        return iter(self._dict())

    def __len__(self) -> int:
        return len(self._u)


@dataclass(frozen=True)
class RoutingDetail:
    """How an as-routed result was routed, and what it loads (None in an optimal result).

    Attributes
    ----------
    name : str
        The routing: ``ecmp``, ``dmodk``.
    seed : int or None
        The integer seed of an ECMP run (None for D-mod-k, or when a Generator was passed).
    flows_per_pair : int
        Flows (queue pairs) per GPU pair.
    pxn : bool
        Whether PXN applied (never on fabrics without GPUs).
    flows : int
        Flows routed.
    expected_pair_rate_Bps : float
        The pair rate with the expected (evenly split) routing (B/s).
    collision_loss : float
        ``1 - pair rate / expected pair rate``: what hash collisions cost. Negative when this
        sample's busiest link is less loaded than the even split's busiest (possible where
        the even split is uneven, as on damaged fabrics: it is an average, not a bound).
    max_link_utilization : float
        Largest load over capacity of a cable.
    tiers : tuple of TierLoad
        Per-tier loads, lowest tiers first.
    loaded_links : tuple of LoadedLink
        The most loaded link directions, highest utilisation first.
    expected_link_load : Mapping[(u, v), float] or None
        Load (B/s) of every arc with the expected routing, at the reported pair rate.
    """

    name: str
    seed: int | None = None
    flows_per_pair: int = 1
    pxn: bool = False
    flows: int = 0
    expected_pair_rate_Bps: float = 0.0
    collision_loss: float = 0.0
    max_link_utilization: float = 0.0
    tiers: tuple[TierLoad, ...] = ()
    loaded_links: tuple[LoadedLink, ...] = ()
    expected_link_load: Mapping[tuple[Any, Any], float] | None = field(
        default=None, repr=False, compare=False
    )


@dataclass(frozen=True)
class BandwidthResult:
    """How fast a demand crosses a fabric: its maximum concurrent flow, or as routed.

    Attributes
    ----------
    fabric, family : str
        The fabric's name and family (``G.graph``).
    terminal : {"gpu", "endpoint"}
        What the traffic terminals are: GPUs, or host endpoints on fabrics without GPUs.
    demand : str
        The demand's name (:attr:`topo.traffic.Demand.name`), e.g. ``alltoall``.
    uniform : bool
        True for the uniform all-to-all (the pair rate and the per-GPU figures apply).
    gpus : int
        Terminals in the demand (GPUs or endpoints).
    nodes : int
        Servers in the demand.
    theta : float
        The maximum concurrent flow of the demand: every pair ``(a, b)`` flows at
        ``theta * D[a, b]`` B/s at once (1/s); ``1 / theta`` is the time to deliver it.
    total_bytes : float
        Sum of the demand (B).
    pair_rate_Bps : float
        Uniform demand: ``lambda``, the rate every ordered pair sends at (B/s); 0 otherwise.
    internode_per_gpu_Bps, internode_per_nic_Bps : float
        Uniform demand: the inter-server traffic each terminal sends and each NIC carries on
        average (B/s).
    nic_line_rate_Bps : float
        The median NIC cable rate (B/s).
    intranode_per_gpu_Bps : float
        Uniform demand: what each GPU sends to the GPUs of its own server (B/s).
    bottleneck_links : tuple of BottleneckLink
        The link directions whose capacity binds, ordered by tier and source; empty when
        none is known (certified bounds, or bounds that meet at a bound naming no links).
    method : str
        ``reduced``, ``general``, ``certified`` (a routing that meets a cut bound, no LP) or
        ``bounds`` (optimal), or the routing's name.
    exact : bool
        False when the rate is a certified lower bound (:attr:`bounds`).
    reductions : tuple of str
        What was reduced and how it was checked (or, as routed, the routing's notes).
    planes : int
        Planes folded into one (1 when no plane decomposition applied).
    lp : LPStats
        The LP solved.
    solve_seconds : float
        Wall time of the whole call (s).
    bounds : Bounds or None
        Set when the exact LP was not solved.
    failures : FailureSet or None
        Set for a damaged fabric (also when nothing failed, for ``topo bandwidth``).
    routing : RoutingDetail or None
        Set for an as-routed result.
    link_load : Mapping[(u, v), float] or None
        When asked for: load (B/s) of every NIC cable and switch link direction.
    nic_ports : int
        Ports per NIC (:func:`topo.fabric.nic_ports`): each port is a NIC vertex, so
        ``internode_per_nic_Bps`` and ``nic_line_rate_Bps`` are per port when it is above 1.
    """

    fabric: str
    family: str
    terminal: str
    demand: str
    uniform: bool
    gpus: int
    nodes: int
    theta: float
    total_bytes: float
    pair_rate_Bps: float
    internode_per_gpu_Bps: float
    internode_per_nic_Bps: float
    nic_line_rate_Bps: float
    intranode_per_gpu_Bps: float
    bottleneck_links: tuple[BottleneckLink, ...]
    method: str
    exact: bool
    reductions: tuple[str, ...]
    planes: int
    lp: LPStats
    solve_seconds: float
    bounds: Bounds | None = None
    failures: FailureSet | None = None
    routing: RoutingDetail | None = None
    link_load: Mapping[tuple[Any, Any], float] | None = field(
        default=None, repr=False, compare=False
    )
    nic_ports: int = 1

    @property
    def time_s(self) -> float:
        """Shortest time to deliver the whole demand at once, ``1 / theta`` (s)."""
        return 1.0 / self.theta if self.theta > 0 else math.inf

    @property
    def alltoall_algbw_Bps(self) -> float:
        """``lambda n``: the algbw nccl-tests' alltoall would print (B/s)."""
        return self.pair_rate_Bps * self.gpus

    @property
    def alltoall_busbw_Bps(self) -> float:
        """``lambda (n - 1)``: the busbw nccl-tests' alltoall would print (B/s)."""
        return self.pair_rate_Bps * (self.gpus - 1)

    @property
    def nic_utilization(self) -> float:
        """Average inter-server traffic per NIC over the NIC line rate."""
        return (
            self.internode_per_nic_Bps / self.nic_line_rate_Bps if self.nic_line_rate_Bps else 0.0
        )

    @property
    def internode_per_nic_all_ports_Bps(self) -> float:
        """Inter-server traffic per NIC with all its ports, ``nic_ports`` times
        ``internode_per_nic_Bps`` (the same for single-port NICs), B/s."""
        return self.internode_per_nic_Bps * self.nic_ports

    @property
    def bottleneck_tiers(self) -> dict[str, int]:
        """Binding link directions per tier, e.g. ``{"nic->leaf": 16}``, sorted by tier."""
        return dict(sorted(Counter(b.tier for b in self.bottleneck_links).items()))

    @property
    def bottleneck_cables(self) -> dict[str, int]:
        """Cables of the binding link directions per tier (a bundle counted cable by cable),
        sorted by tier."""
        n: Counter[str] = Counter()
        for b in self.bottleneck_links:
            n[b.tier] += b.cables
        return dict(sorted(n.items()))

    def to_dict(self, *, link_load: bool = False) -> dict[str, Any]:
        """A JSON-ready dict, rates in GB/s.

        The uniform all-to-all gives the keys ``topo bandwidth --json`` prints (with
        ``lower_bound_busbw_GBps``, ``upper_bound_busbw_GBps``, ``gap``, ``lower_bound_from``,
        ``upper_bound_from`` when bounded, and then, unless the bounds meet, ``null`` in the
        rate's keys, :data:`UNKNOWN_WHEN_BOUNDED`; the failure keys when :attr:`failures` is
        set; then ``routing``); an explicit demand gives ``time_s``, ``theta``,
        ``total_bytes`` and the bottlenecks (``bottleneck_identified`` false when no link is
        known to bind: only bounds, or bounds that meet without naming links). An as-routed
        result gives ``routing``, ``seed``, ``flows_per_pair``, ``pxn``, ``flows``, the rates,
        ``expected_pair_rate_GBps``, ``expected_alltoall_busbw_GBps``, ``collision_loss``,
        ``max_link_utilization``,
        ``bottleneck_tiers``, ``tiers``, ``most_loaded_links``, ``notes``, ``solve_seconds``,
        then the failure keys when set. ``link_load=True`` adds ``link_load``, a list of
        ``[source, target, load_Bps]`` for every directed arc (when :attr:`link_load` is set).
        """
        if self.routing is not None:
            d = self._routed_dict(self.routing)
            if self.failures is not None:
                d.update(self.failures.to_dict())
        else:
            d = self._optimal_dict()
        if link_load and self.link_load is not None:
            d["link_load"] = [[str(a), str(b), x] for a, b, x in _triples(self.link_load)]
        return d

    def _optimal_dict(self) -> dict[str, Any]:
        d = self._alltoall_dict() if self.uniform else self._demand_dict()
        if self.bounds is not None:
            n = self.gpus
            if not self.exact:  # the rate is unknown: a bound is not put where a value goes
                d.update(dict.fromkeys(k for k in UNKNOWN_WHEN_BOUNDED if k in d))
            d["lower_bound_busbw_GBps"] = Bps_to_GBps(self.bounds.lower_Bps * (n - 1))
            d["upper_bound_busbw_GBps"] = Bps_to_GBps(self.bounds.upper_Bps * (n - 1))
            d["gap"] = self.bounds.gap
            d["lower_bound_from"] = self.bounds.lower_from
            d["upper_bound_from"] = self.bounds.upper_from
        if self.failures is not None:
            d.update(self.failures.to_dict())
        d["routing"] = "optimal"
        return d

    def _routed_dict(self, r: RoutingDetail) -> dict[str, Any]:
        n = self.gpus
        return {
            "fabric": self.fabric,
            "family": self.family,
            "terminal": self.terminal,
            "routing": r.name,
            "seed": r.seed,
            "flows_per_pair": r.flows_per_pair,
            "pxn": r.pxn,
            "gpus": n,
            "nodes": self.nodes,
            "flows": r.flows,
            "pair_rate_GBps": Bps_to_GBps(self.pair_rate_Bps),
            "alltoall_algbw_GBps": Bps_to_GBps(self.alltoall_algbw_Bps),
            "alltoall_busbw_GBps": Bps_to_GBps(self.alltoall_busbw_Bps),
            "expected_pair_rate_GBps": Bps_to_GBps(r.expected_pair_rate_Bps),
            "expected_alltoall_busbw_GBps": Bps_to_GBps(r.expected_pair_rate_Bps * (n - 1)),
            "collision_loss": r.collision_loss,
            "max_link_utilization": r.max_link_utilization,
            "bottleneck_tiers": self.bottleneck_tiers,
            "tiers": [t.to_dict() for t in r.tiers],
            "most_loaded_links": [b.to_dict() for b in r.loaded_links],
            "notes": list(self.reductions),
            "solve_seconds": self.solve_seconds,
        }

    def _alltoall_dict(self) -> dict[str, Any]:
        return {
            "fabric": self.fabric,
            "family": self.family,
            "terminal": self.terminal,
            "gpus": self.gpus,
            "nodes": self.nodes,
            "pair_rate_GBps": Bps_to_GBps(self.pair_rate_Bps),
            "alltoall_algbw_GBps": Bps_to_GBps(self.alltoall_algbw_Bps),
            "alltoall_busbw_GBps": Bps_to_GBps(self.alltoall_busbw_Bps),
            "internode_per_gpu_GBps": Bps_to_GBps(self.internode_per_gpu_Bps),
            "internode_per_nic_GBps": Bps_to_GBps(self.internode_per_nic_Bps),
            "nic_ports": self.nic_ports,
            "internode_per_nic_all_ports_GBps": Bps_to_GBps(self.internode_per_nic_all_ports_Bps),
            "nic_line_rate_GBps": Bps_to_GBps(self.nic_line_rate_Bps),
            "nic_utilization": self.nic_utilization,
            "intranode_per_gpu_GBps": Bps_to_GBps(self.intranode_per_gpu_Bps),
            "bottleneck_tiers": self.bottleneck_tiers,
            "bottleneck_links": link_dicts(self.bottleneck_links),
            "bottleneck_identified": bool(self.bottleneck_links),
            "method": self.method,
            "exact": self.exact,
            "reductions": list(self.reductions),
            **self.lp.to_dict(),
            "solve_seconds": self.solve_seconds,
        }

    def _demand_dict(self) -> dict[str, Any]:
        return {
            "fabric": self.fabric,
            "family": self.family,
            "terminal": self.terminal,
            "demand": self.demand,
            "gpus": self.gpus,
            "nodes": self.nodes,
            "time_s": self.time_s,
            "theta": self.theta,
            "total_bytes": self.total_bytes,
            "bottleneck_tiers": self.bottleneck_tiers,
            "bottleneck_links": link_dicts(self.bottleneck_links),
            "bottleneck_identified": bool(self.bottleneck_links),
            "method": self.method,
            "exact": self.exact,
            "reductions": list(self.reductions),
            "planes": self.planes,
            "lp_variables": self.lp.to_dict()["lp_variables"],
            "solve_seconds": self.solve_seconds,
        }


UNKNOWN_WHEN_BOUNDED = (
    "pair_rate_GBps",
    "alltoall_algbw_GBps",
    "alltoall_busbw_GBps",
    "internode_per_gpu_GBps",
    "internode_per_nic_GBps",
    "internode_per_nic_all_ports_GBps",
    "nic_utilization",
    "intranode_per_gpu_GBps",
    "time_s",
    "theta",
)
"""The keys of :meth:`BandwidthResult.to_dict` that are ``null`` when only bounds are known
(``exact`` false with ``lower_bound_busbw_GBps`` and ``upper_bound_busbw_GBps``): each derives
from the rate, which lies somewhere between the bounds."""


def _triples(loads: Mapping[tuple[Any, Any], float]) -> list[tuple[Any, Any, float]]:
    """``(u, v, B/s)`` of a load map, in its order (arc order for :class:`ArcLoads`)."""
    if isinstance(loads, ArcLoads):
        return loads.triples()
    return [(a, b, float(x)) for (a, b), x in loads.items()]


def links(
    G: nx.Graph, directions: Iterable[tuple[Hashable, Hashable, float, float]]
) -> list[BottleneckLink]:
    """The link directions ``(tail, head, capacity, load)`` (B/s) as a report names them, in
    the order given: :func:`link` of each, with each vertex's label looked up once."""
    label: dict[Hashable, str] = {}
    tier: dict[tuple[str, str], str] = {}
    out: list[BottleneckLink] = []
    append, adj = out.append, G._adj
    new = tuple.__new__  # (what BottleneckLink(...) does, without its Python-level __new__)
    for u, v, cap, load in directions:
        a = label.get(u)
        if a is None:
            a = label[u] = vertex_label(G, u)
        b = label.get(v)
        if b is None:
            b = label[v] = vertex_label(G, v)
        t = tier.get((a, b))
        if t is None:
            t = tier[(a, b)] = f"{a}->{b}"
        cables = int(adj[u][v]["links"])
        append(new(BottleneckLink, (str(u), str(v), t, float(cap), float(load), cables)))
    return out


def link(G: nx.Graph, u: Hashable, v: Hashable, cap: float, load: float) -> BottleneckLink:
    """The link direction ``u -> v`` as a report names it, capacity and load in B/s."""
    return BottleneckLink(
        source=str(u),
        target=str(v),
        tier=f"{vertex_label(G, u)}->{vertex_label(G, v)}",
        capacity_Bps=float(cap),
        load_Bps=float(load),
        cables=int(G._adj[u][v]["links"]),
    )
