"""Reducing the all-to-all to a small LP, each step checked on the fabric at hand.

:mod:`~topo.flow.reduce.servers` contracts every server to one vertex (its GPUs' traffic source
and sink); :mod:`~topo.flow.reduce.planes` finds isomorphic planes and solves one;
:mod:`~topo.flow.reduce.network` merges servers with identical attachments into twin classes and
writes the reduced network; :mod:`~topo.flow.reduce.symmetry` finds verified automorphisms that
fold the classes into orbits; :mod:`~topo.flow.reduce.server_check` checks that every server's
inside (NVLink, PCIe) carries the contracted solution. Proofs: ``docs/bandwidth.md``.
"""

from topo.flow.reduce.known import Known
from topo.flow.reduce.network import Reduced, Scope, bottleneck_links, link_loads
from topo.flow.reduce.planes import Alike, plane_isomorphism, reduce, scope
from topo.flow.reduce.server_check import inside_theta
from topo.flow.reduce.servers import (
    ContractedServer,
    ServerIndex,
    attached,
    check_connected,
    check_terminals,
    contract_servers,
    terminal_count,
)
from topo.flow.reduce.symmetry import class_orbits, solve_symmetric, symmetry

__all__ = [
    "Alike",
    "ContractedServer",
    "Known",
    "Reduced",
    "Scope",
    "attached",
    "bottleneck_links",
    "check_connected",
    "check_terminals",
    "class_orbits",
    "contract_servers",
    "inside_theta",
    "link_loads",
    "plane_isomorphism",
    "reduce",
    "scope",
    "ServerIndex",
    "solve_symmetric",
    "symmetry",
    "terminal_count",
]
