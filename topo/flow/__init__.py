"""Flow solvers: maximum concurrent flow (LP, HiGHS through pulp), the all-to-all bandwidth of a
fabric (exact reductions, certified bounds), any server-to-server matrix, the all-to-all as
real routing carries it, and failures."""

from topo.flow.alltoall import BandwidthReport, BottleneckLink, alltoall_bandwidth
from topo.flow.demand import DemandReport, server_demand_time
from topo.flow.failures import FailureSet, fail
from topo.flow.lp import Commodity, MCFSolution, max_concurrent_flow
from topo.flow.resilience import DamagedBandwidth, ResilienceReport, damaged_bandwidth, resilience
from topo.flow.routing import RoutedReport, routed_alltoall

__all__ = [
    "BandwidthReport",
    "BottleneckLink",
    "Commodity",
    "DamagedBandwidth",
    "DemandReport",
    "FailureSet",
    "MCFSolution",
    "ResilienceReport",
    "RoutedReport",
    "alltoall_bandwidth",
    "damaged_bandwidth",
    "fail",
    "max_concurrent_flow",
    "resilience",
    "routed_alltoall",
    "server_demand_time",
]
