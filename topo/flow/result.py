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
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from topo.units import Bps_to_GBps

LINK_SEPARATOR = "--"
"""Between the two ends of a named link: ``leaf3--spine0`` (``--fail``, ``failed_links``)."""


@dataclass(frozen=True)
class BottleneckLink:
    """One direction of a link whose capacity binds the rate.

    Attributes
    ----------
    source, target : str
        The link's ends, in the direction of the binding flow.
    tier : str
        Where it sits, e.g. ``nic->leaf``, ``leaf->spine``, ``spine->leaf``.
    capacity_Bps, load_Bps : float
        Capacity and load in that direction (B/s).
    """

    source: str
    target: str
    tier: str
    capacity_Bps: float
    load_Bps: float

    def to_dict(self) -> dict[str, Any]:
        """``source``, ``target``, ``tier``, ``capacity_GBps``, ``load_GBps``."""
        return {
            "source": self.source,
            "target": self.target,
            "tier": self.tier,
            "capacity_GBps": Bps_to_GBps(self.capacity_Bps),
            "load_GBps": Bps_to_GBps(self.load_Bps),
        }


@dataclass(frozen=True)
class Bounds:
    """Certified bounds on the pair rate when the exact LP was not solved
    (:mod:`topo.flow.bounds`).

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
    """

    links: tuple[tuple[str, str], ...] = ()
    switches: tuple[str, ...] = ()
    capacity_lost_Bps: float = 0.0
    disconnected: tuple[Hashable, ...] = ()
    disconnected_gpus: int = 0

    @property
    def empty(self) -> bool:
        """True when nothing failed."""
        return not self.links and not self.switches

    def to_dict(self) -> dict[str, Any]:
        """``failed_links`` (``u--v``), ``failed_switches``, ``capacity_lost_GBps``,
        ``disconnected`` (as strings), ``disconnected_gpus``."""
        return {
            "failed_links": [f"{u}{LINK_SEPARATOR}{v}" for u, v in self.links],
            "failed_switches": list(self.switches),
            "capacity_lost_GBps": Bps_to_GBps(self.capacity_lost_Bps),
            "disconnected": [str(s) for s in self.disconnected],
            "disconnected_gpus": self.disconnected_gpus,
        }


@dataclass(frozen=True)
class LPStats:
    """Size and time of the LP solved (zeros when none was).

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


@dataclass(frozen=True)
class RoutingDetail:
    """How an as-routed result was routed (None in an optimal result).

    Attributes
    ----------
    name : str
        The routing: ``ecmp``, ``dmodk``.
    seed : int or None
        The integer seed of an ECMP run (None for D-mod-k).
    flows_per_pair : int
        Flows (queue pairs) per GPU pair.
    pxn : bool
        Whether PXN applied.
    flows : int
        Flows routed.
    expected_pair_rate_Bps : float
        The pair rate with the expected (evenly split) routing (B/s).
    max_link_utilization : float
        Largest load over capacity of a cable.
    tiers : tuple
        Per-tier loads (the routing's tier records).
    loaded_links : tuple
        The most loaded link directions (the routing's link records).
    """

    name: str
    seed: int | None = None
    flows_per_pair: int = 1
    pxn: bool = False
    flows: int = 0
    expected_pair_rate_Bps: float = 0.0
    max_link_utilization: float = 0.0
    tiers: tuple[object, ...] = ()
    loaded_links: tuple[object, ...] = ()


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
        The link directions whose capacity binds, ordered by tier and source.
    method : str
        ``reduced``, ``general`` or ``bounds`` (optimal), or the routing's name.
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
    def bottleneck_tiers(self) -> dict[str, int]:
        """Binding link directions per tier, e.g. ``{"nic->leaf": 16}``, sorted by tier."""
        return dict(sorted(Counter(b.tier for b in self.bottleneck_links).items()))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, rates in GB/s (``link_load`` left out).

        The uniform all-to-all gives the keys ``topo bandwidth --json`` prints (with
        ``lower_bound_busbw_GBps``, ``upper_bound_busbw_GBps``, ``gap``, ``lower_bound_from``,
        ``upper_bound_from`` when bounded; the failure keys when :attr:`failures` is set; then
        ``routing``); an explicit demand gives ``time_s``, ``theta``, ``total_bytes`` and the
        bottlenecks.
        """
        d = self._alltoall_dict() if self.uniform else self._demand_dict()
        if self.bounds is not None:
            n = self.gpus
            d["lower_bound_busbw_GBps"] = Bps_to_GBps(self.bounds.lower_Bps * (n - 1))
            d["upper_bound_busbw_GBps"] = Bps_to_GBps(self.bounds.upper_Bps * (n - 1))
            d["gap"] = self.bounds.gap
            d["lower_bound_from"] = self.bounds.lower_from
            d["upper_bound_from"] = self.bounds.upper_from
        if self.failures is not None:
            d.update(self.failures.to_dict())
        d["routing"] = self.routing.name if self.routing is not None else "optimal"
        return d

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
            "nic_line_rate_GBps": Bps_to_GBps(self.nic_line_rate_Bps),
            "nic_utilization": self.nic_utilization,
            "intranode_per_gpu_GBps": Bps_to_GBps(self.intranode_per_gpu_Bps),
            "bottleneck_tiers": self.bottleneck_tiers,
            "bottleneck_links": [b.to_dict() for b in self.bottleneck_links],
            "method": self.method,
            "exact": self.exact,
            "reductions": list(self.reductions),
            "lp_variables": self.lp.variables,
            "lp_constraints": self.lp.constraints,
            "lp_build_seconds": self.lp.build_seconds,
            "lp_solve_seconds": self.lp.solve_seconds,
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
            "bottleneck_links": [b.to_dict() for b in self.bottleneck_links],
            "method": self.method,
            "exact": self.exact,
            "reductions": list(self.reductions),
            "planes": self.planes,
            "lp_variables": self.lp.variables,
            "solve_seconds": self.solve_seconds,
        }


BandwidthReport = BandwidthResult
"""The all-to-all's result (:func:`topo.flow.alltoall_bandwidth`): a :class:`BandwidthResult`."""

DemandReport = BandwidthResult
"""An explicit demand's result (:func:`topo.flow.server_demand_time`): a
:class:`BandwidthResult`."""
