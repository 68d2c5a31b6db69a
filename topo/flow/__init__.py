"""Flow solvers: maximum concurrent flow (LP, HiGHS through pulp) and all-to-all bandwidth."""

from topo.flow.alltoall import BandwidthReport, BottleneckLink, alltoall_bandwidth
from topo.flow.lp import Commodity, MCFSolution, max_concurrent_flow

__all__ = [
    "BandwidthReport",
    "BottleneckLink",
    "Commodity",
    "MCFSolution",
    "alltoall_bandwidth",
    "max_concurrent_flow",
]
