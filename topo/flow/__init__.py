"""Flow solvers: the maximum concurrent flow of a demand (LP, HiGHS) with exact
reductions and certified bounds, the all-to-all as real routing carries it, and failures.

Layers, bottom up (each imports only those below it): :mod:`~topo.flow.lp` (the LP) and
:mod:`~topo.flow.result` (the result type); :mod:`~topo.flow.hosts` (server contraction);
:mod:`~topo.flow.planes`; :mod:`~topo.flow.network` (the reduced network);
:mod:`~topo.flow.symmetry`, :mod:`~topo.flow.server_check`, :mod:`~topo.flow.general`;
:mod:`~topo.flow.uniform_report` (the all-to-all's result at a rate);
:mod:`~topo.flow.certify` (exact by a routing that meets a cut, no LP);
:mod:`~topo.flow.exact` (the exact all-to-all); :mod:`~topo.flow.bounds`;
:mod:`~topo.flow.matrix` (explicit matrices); :mod:`~topo.flow.concurrent` (the entry point);
:mod:`~topo.flow.alltoall` and :mod:`~topo.flow.demand` (its callers);
:mod:`~topo.flow.failures` and :mod:`~topo.flow.resilience`. :mod:`~topo.flow.routing` (as
routed) stands beside them.
"""

from topo.flow.alltoall import alltoall_bandwidth
from topo.flow.concurrent import concurrent_flow
from topo.flow.demand import server_demand_time
from topo.flow.failures import fail
from topo.flow.lp import Commodity, MCFSolution, max_concurrent_flow
from topo.flow.resilience import DamagedBandwidth, ResilienceReport, damaged_bandwidth, resilience
from topo.flow.result import (
    BandwidthResult,
    BottleneckLink,
    Bounds,
    FailureSet,
    LPStats,
    RoutingDetail,
)
from topo.flow.routing import routed_alltoall, routed_flow

__all__ = [
    "BandwidthResult",
    "BottleneckLink",
    "Bounds",
    "Commodity",
    "DamagedBandwidth",
    "FailureSet",
    "LPStats",
    "MCFSolution",
    "ResilienceReport",
    "RoutingDetail",
    "alltoall_bandwidth",
    "concurrent_flow",
    "damaged_bandwidth",
    "fail",
    "max_concurrent_flow",
    "resilience",
    "routed_alltoall",
    "routed_flow",
    "server_demand_time",
]
