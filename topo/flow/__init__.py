"""Flow: the maximum concurrent flow of a demand over a fabric, as the optimum, as routed, and
under failures.

The door is :mod:`topo.flow.door` (:func:`alltoall_bandwidth`, :func:`concurrent_flow`,
:func:`server_demand_time`): it checks the arguments and chooses the method;
:func:`shared_flow` (:mod:`topo.flow.exact.shared`) solves several demands at once, some held at
fixed rates. The sub-packages, each with a face (its ``__init__``) that names what callers use,
answer one question each:

- :mod:`topo.flow.solve`: how is one LP solved? (the model, HiGHS, memory, the LP's result)
- :mod:`topo.flow.reduce`: how is the all-to-all made small? (server contraction, planes, twin
  classes, symmetry, the server check)
- :mod:`topo.flow.exact`: what is the exact rate? (the reduced or general LP, or a routing
  that meets a cut; explicit matrices)
- :mod:`topo.flow.bounds`: what is certain when the exact LP is out of reach? (cut upper
  bounds, routing lower bounds)
- :mod:`topo.flow.routing`: what do ECMP, D-mod-k and the subnet manager's tables carry?
- :mod:`topo.flow.failures`: what is left after failures? (damage, resilience trials)

:mod:`topo.flow.result` holds the result types every method returns; :mod:`topo.flow.seeds`
the random streams. Callers outside ``flow/`` import from here or from a face.
"""

from topo.flow.door import alltoall_bandwidth, concurrent_flow, server_demand_time
from topo.flow.exact import SharedFlow, shared_flow
from topo.flow.failures import (
    DamagedBandwidth,
    FailureSet,
    ResilienceReport,
    damaged_bandwidth,
    fail,
    resilience,
)
from topo.flow.result import (
    BandwidthResult,
    BottleneckLink,
    Bounds,
    LoadedLink,
    LPStats,
    RoutingDetail,
    TierLoad,
    links,
)
from topo.flow.routing import routed_alltoall, routed_flow
from topo.flow.solve import Commodity, MCFSolution, max_concurrent_flow

__all__ = [
    "BandwidthResult",
    "BottleneckLink",
    "Bounds",
    "Commodity",
    "DamagedBandwidth",
    "FailureSet",
    "LPStats",
    "LoadedLink",
    "MCFSolution",
    "ResilienceReport",
    "SharedFlow",
    "RoutingDetail",
    "TierLoad",
    "alltoall_bandwidth",
    "concurrent_flow",
    "damaged_bandwidth",
    "fail",
    "links",
    "max_concurrent_flow",
    "resilience",
    "routed_alltoall",
    "routed_flow",
    "server_demand_time",
    "shared_flow",
]
