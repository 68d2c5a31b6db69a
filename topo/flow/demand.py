"""Time to deliver an arbitrary server-to-server traffic matrix over a fabric.

The all-to-all of :mod:`topo.flow.alltoall` is one traffic pattern; collectives (a ring's
neighbour exchange) and expert parallelism (an MoE layer's dispatch and combine) give others.
:func:`server_demand_time` checks a byte matrix given as a mapping (or takes a
:class:`topo.traffic.Demand`) and solves its maximum concurrent flow with
:func:`topo.flow.concurrent_flow`; the model is in :mod:`topo.flow.matrix`.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping

import networkx as nx

from topo.errors import TopoError
from topo.fabric import natural_key, require_fabric, terminal_kind
from topo.flow.concurrent import concurrent_flow
from topo.flow.hosts import attached
from topo.flow.lp import DEFAULT_MAX_VARIABLES, check_solver_limits
from topo.flow.result import BandwidthResult
from topo.traffic import Demand

__all__ = ["server_demand_time", "server_matrix"]


def server_demand_time(
    G: nx.Graph,
    demand: Demand | Mapping[tuple[Hashable, Hashable], float],
    *,
    max_variables: int = DEFAULT_MAX_VARIABLES,
) -> BandwidthResult:
    """Shortest time to deliver a server-to-server byte matrix over the fabric's network.

    Parameters
    ----------
    G : networkx.Graph
        A fabric (schema in :mod:`topo.fabric`).
    demand : Demand or Mapping[(a, b), float]
        An explicit :class:`topo.traffic.Demand`, or bytes from server ``a`` to server ``b``.
        Servers are the ``node`` attribute of the GPUs (ints for built fabrics); on fabrics
        without GPUs (imported dumps) they are the host endpoints' vertex names. ``a != b``;
        zero entries are ignored.
    max_variables : int
        Refuse LPs with more flow variables than this (memory guard).

    Returns
    -------
    BandwidthResult
        ``time_s = 1 / theta`` (s), with the binding links.

    Raises
    ------
    TopoError
        A pair names an unknown server, a server sends to itself, or a byte count is negative,
        not finite, or all are zero.
    SpecError
        An edge of ``G`` without a finite capacity within
        :data:`topo.fabric.CAPACITY_RANGE_Bps` (``.param`` ``G``, naming the edge), or
        ``max_variables`` out of range
        (:func:`topo.flow.lp.check_solver_limits`).
    InfeasibleError
        A server in the demand has no NIC cabled to a switch, or a pair has no path.
    SolverError
        The LP is too large (``max_variables``; :class:`topo.errors.LPTooLarge`, raised before
        any LP is built) or HiGHS fails.

    Examples
    --------
    >>> from topo.builders import build
    >>> G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    >>> rep = server_demand_time(G, {(0, 1): 100e9})   # 100 GB over two 400G NICs
    >>> round(rep.time_s, 6)                            # 100e9 / (2 * 50e9) s
    1.0
    """
    require_fabric(G)
    check_solver_limits(max_variables)
    if not isinstance(demand, Demand):
        demand = server_matrix(G, demand)
    return concurrent_flow(G, demand, max_variables=max_variables)


def server_matrix(G: nx.Graph, demand: Mapping[tuple[Hashable, Hashable], float]) -> Demand:
    """A server-level :class:`topo.traffic.Demand` from a mapping, checked against the fabric.

    Parameters
    ----------
    G : networkx.Graph
        A fabric.
    demand : Mapping[(a, b), float]
        Bytes from server ``a`` to server ``b`` (as :func:`server_demand_time`).

    Returns
    -------
    Demand
        Over all of the fabric's servers (host endpoints), the given entries summed per pair.

    Raises
    ------
    TopoError
        As :func:`server_demand_time`.
    """
    if terminal_kind(G) == "gpu":
        what = "server"
        known = {d["node"] for _, d in G.nodes(data=True) if d["kind"] == "gpu"}
    else:
        what = "host endpoint"
        known = {v for v, k in G.nodes(data="kind") if k == "nic" and attached(G, v)}
    clean: dict[tuple[Hashable, Hashable], float] = {}
    for (a, b), x in demand.items():
        for s in (a, b):
            if s not in known:
                raise TopoError(f"demand names {s!r}, which is not a {what} of the fabric")
        if a == b:
            raise TopoError(
                f"demand from server {a!r} to itself: intra-server traffic is not fabric traffic"
            )
        x = float(x)
        if not math.isfinite(x) or x < 0:
            raise TopoError(f"demand {a!r} -> {b!r} must be a finite number of bytes >= 0, got {x}")
        if x > 0:
            clean[(a, b)] = clean.get((a, b), 0.0) + x
    if not clean:
        raise TopoError("the demand is empty: no bytes between distinct servers")
    terms = tuple(sorted(known, key=natural_key))
    return Demand(level="server", terminals=terms, entries=clean, name="server matrix")
