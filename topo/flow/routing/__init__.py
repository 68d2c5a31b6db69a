"""As-routed all-to-all: link loads and rate under ECMP hashing or D-mod-k, with or without PXN.

:func:`topo.flow.alltoall_bandwidth` answers what the fabric *could* carry with optimal,
freely split routing. Real fabrics route every flow on one fixed path: Ethernet switches hash
each flow onto one of the equal-cost next hops (ECMP), InfiniBand subnet managers fill the
forwarding tables of a fat tree destination by destination (OpenSM ``ftree``, D-mod-k). This
package routes the uniform all-to-all that way and reports what it gets:
``routed_flow(G, demand, routing)`` takes the traffic as a :class:`topo.traffic.Demand` (today
the uniform all-to-all among every terminal), ``routed_alltoall(G, routing)`` is that case.

The model (``docs/routing.md``):

- **Terminals and flows.** Every ordered pair of GPUs (host endpoints on imported fabrics
  without GPUs) in different servers exchanges the same number of bytes, as
  ``flows_per_pair`` flows (RDMA queue pairs) of equal size. Pairs inside a server use NVLink.
- **Inside a server.** A GPU leaves by its own NIC (its ``pcie`` neighbour). With PXN
  (NCCL's default, ``NCCL_PXN_DISABLE=0``) a flow whose destination's NIC has another index first
  crosses NVLink to a local GPU of the NIC with the destination's index (same rail or plane),
  then leaves rail-aligned. It arrives at the destination GPU's own NIC.
- **Multi-port and dead NICs** (:mod:`~topo.flow.routing.netdevs`, NCCL 2.30.7's net
  devices): every cabled port is a net device, a pair splits evenly over the ports of its
  GPUs' NICs, port ``p`` to port ``p``; a GPU whose NIC cable is dead sends and receives
  through its server's other NICs over NVLink (with PXN), and flows that then cross disjoint
  planes (MPFT) are unroutable.
- **In the fabric.** Up*/down* routing on the switch tiers (``tier``: leaf 1, spine 2,
  core 3): a flow climbs to the lowest tier from which its destination leaf can be reached
  going down, over minimal paths only. **ECMP**: at every hop each flow picks one of the
  eligible ports (cables) uniformly at random, independently (a seeded
  :class:`numpy.random.Generator`); the expected loads are the exact even split. **D-mod-k**:
  the port at an up hop from tier ``t`` is the ``(d // prod_{i<t} w_i) mod m``-th eligible
  port, ``d`` the destination's index in the tree, ``w_i`` the up-port count of tier ``i``,
  ``m`` the eligible ports; down hops over parallel cables use the same digit.
- **Rate.** With every flow fixed, each link ``e`` carries ``c_e`` pair-units per unit pair
  rate; the all-to-all runs at ``lambda = min_e capacity_e / c_e`` (the slowest link sets the
  completion time). Parallel cables count one by one (a cable's capacity is its edge's over
  ``links``).

Everything is counted with numpy on aggregated flows: by (source leaf, destination NIC) for
D-mod-k and (switch, destination leaf) for ECMP, in chunks of destinations; nothing loops per
flow or per GPU pair. Full-size figures (16,384-GPU MPFT: 0.3 s D-mod-k, 0.6 s ECMP;
65,536-GPU FT3: 4 s and 24 s) are in ``docs/routing.md``.

The package, by part: :mod:`~topo.flow.routing.arrays` (the fabric as arc arrays),
:mod:`~topo.flow.routing.updown` (up/down tables of the switch tree),
:mod:`~topo.flow.routing.netdevs` (NCCL's net devices: multi-port and dead NICs),
:mod:`~topo.flow.routing.endpoints` (terminals, NICs, PXN, the demand on leaves),
:mod:`~topo.flow.routing.dmodk` and :mod:`~topo.flow.routing.ecmp` (the routers),
:mod:`~topo.flow.routing.report` (tier loads, loaded links, the report) and
:mod:`~topo.flow.routing.routed` (the entry points) and :mod:`~topo.flow.routing.lft` (the
subnet manager's own forwarding tables).

References
----------
E. Zahavi, "D-Mod-K Routing Providing Non-Blocking Traffic for Shift Permutations on Real Life
Fat Trees", CCIT Report 776, Technion, 2010 (D-mod-k on XGFTs). C. Gómez, F. Gilabert,
M. E. Gómez, P. López, J. Duato, "Deterministic versus Adaptive Routing in Fat-Trees",
IPDPS/CAC 2007 (destination-mod-k up-port selection on k-ary n-trees). OpenSM
``doc/current-routing.txt`` (the ``ftree`` engine: up*/down*, congestion-free shift
routing). C. Hopps, "Analysis of an Equal-Cost Multi-Path Algorithm", RFC 2992, 2000 (per-flow
hashing over equal-cost next hops). NCCL 2.12 release notes and ``NCCL_P2P_PXN_LEVEL`` (PXN).
nccl-tests ``doc/PERFORMANCE.md`` (busbw of alltoall).
"""

from topo.flow.result import LoadedLink, RoutingDetail, TierLoad
from topo.flow.routing.direct import (
    DirectRates,
    check_direct_servers,
    direct_rates,
    minimal_arc_loads,
    router_arcs,
)
from topo.flow.routing.lft import routed_lft
from topo.flow.routing.report import TOP_LINKS
from topo.flow.routing.routed import MAX_FLOWS_PER_PAIR, ROUTINGS, routed_alltoall, routed_flow

__all__ = [
    "DirectRates",
    "check_direct_servers",
    "direct_rates",
    "minimal_arc_loads",
    "router_arcs",
    "MAX_FLOWS_PER_PAIR",
    "ROUTINGS",
    "TOP_LINKS",
    "LoadedLink",
    "RoutingDetail",
    "TierLoad",
    "routed_alltoall",
    "routed_flow",
    "routed_lft",
]
