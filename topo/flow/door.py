"""The door of :mod:`topo.flow`: the maximum concurrent flow of a demand over a fabric.

A reader starts here. :func:`alltoall_bandwidth` (the uniform all-to-all), :func:`concurrent_flow`
(any :class:`topo.traffic.Demand`) and :func:`server_demand_time` (a server-to-server byte
matrix) check their arguments and choose the method; the methods are the sub-packages:
:mod:`topo.flow.exact` (the reduced LP and what certifies it without one), :mod:`topo.flow.bounds`
(certified bounds when the exact LP is out of reach), both over :mod:`topo.flow.reduce` (server
contraction, planes, symmetry, the server check) and :mod:`topo.flow.solve` (the LP and HiGHS).
Failures (:mod:`topo.flow.failures`) and routing as switches do it (:mod:`topo.flow.routing`)
stand beside.

The question: every GPU (for imported fabrics, every host endpoint) sends to every other at the
same rate ``lambda`` at once; what is the largest ``lambda``? That is the maximum concurrent
multicommodity flow of the uniform all-to-all demand (:mod:`topo.flow.solve.lp`). Flows may take any
path, split freely, and use NVLink inside their source and destination servers (PXN), but never
pass *through* a third server: servers do not forward other servers' traffic, as in real
fabrics.

Solving that LP as written (one commodity per GPU, every arc) is out of reach at 16,384 GPUs, so
:func:`alltoall_bandwidth` reduces it first. Each reduction is exact under a condition that is
checked on the fabric at hand, never assumed (proofs in ``docs/bandwidth.md``):

1. **Server contraction.** A server (GPUs, NVSwitch, NICs) becomes one vertex joined to the
   switches its NICs reach. This relaxes the problem, so it gives an upper bound; it is exact
   when the server's inside (NVLink, PCIe) can carry the contracted solution's traffic with
   every GPU splitting its traffic over the switches in the same proportions. That is checked
   afterwards by a small LP per distinct server load; if it fails, the general LP is solved.
2. **Plane decomposition.** When the switch graph falls into components (planes) that are
   copies of one another, with every server attached identically to each, a solution for one
   plane carrying ``1/P`` of every pair's demand is optimal for all ``P`` (average any
   solution over the plane permutations). Checked: an explicit isomorphism between the planes.
3. **Twin classes.** Servers with identical attachments and GPU counts are merged into one
   source and one sink vertex whose cables carry the class's summed capacity. Exact for a
   uniform demand when servers are not transit vertices (split every aggregated path evenly
   among the class's members).
4. **Class symmetry.** When a cyclic shift of the leaves (within each plane and rail) is an
   automorphism of the reduced network and permutes the classes in one cycle, one commodity
   suffices and each capacity row bounds an orbit of arcs (average any solution over the
   group). Checked: the shift is verified arc by arc; orbits are computed, not assumed.

References
----------
F. Shahrokhi and D. W. Matula, "The maximum concurrent flow problem", J. ACM 37(2), 1990.
nccl-tests ``doc/PERFORMANCE.md`` (algbw, busbw for alltoall).
"""

from __future__ import annotations

import math
import time
from collections.abc import Hashable, Mapping
from dataclasses import replace

import networkx as nx

from topo.errors import TopoError
from topo.fabric import natural_key, require_fabric, terminal_kind
from topo.flow.bounds.certified import bounds_report
from topo.flow.exact.alltoall import GivenUp, exact_alltoall
from topo.flow.exact.matrix import matrix_flow
from topo.flow.reduce.known import Known
from topo.flow.reduce.servers import (
    SolveContext,
    attached,
    check_connected,
    check_terminals,
    contract_servers,
)
from topo.flow.result import BandwidthResult, BottleneckLink
from topo.flow.routing.routed import routed_alltoall
from topo.flow.solve.lp import DEFAULT_MAX_VARIABLES, check_solver_limits
from topo.runtime import gc_paused
from topo.traffic import Demand

__all__ = [
    "METHODS",
    "BandwidthResult",
    "BottleneckLink",
    "alltoall_bandwidth",
    "concurrent_flow",
    "server_demand_time",
    "server_matrix",
    "uniform_flow",
]

METHODS = ("auto", "general")
"""``auto``: the exact reductions, each checked; ``general``: the LP as defined (uniform
all-to-all on small fabrics only)."""


def concurrent_flow(
    G: nx.Graph,
    demand: Demand,
    *,
    method: str = "auto",
    max_variables: int = DEFAULT_MAX_VARIABLES,
    link_loads: bool = False,
    time_limit_s: float | None = None,
) -> BandwidthResult:
    """The maximum concurrent flow of ``demand`` over the fabric ``G``.

    Flows may take any path, split freely, and use NVLink inside their source and destination
    servers, but never pass through a third server.

    Parameters
    ----------
    G : networkx.Graph
        A fabric (:mod:`topo.fabric`).
    demand : Demand
        The traffic. The uniform all-to-all (:func:`topo.traffic.uniform_alltoall`) must be
        over all of the fabric's terminals (GPUs, or host endpoints); an explicit matrix may be
        server- or GPU-level (summed per pair of servers).
    method : {"auto", "general"}
        ``auto`` applies the exact reductions, each checked, and gives certified bounds when
        the exact LP is over ``max_variables`` or past ``time_limit_s``; ``general`` solves the
        uniform all-to-all's LP as defined (small fabrics; explicit demands take ``auto``).
    max_variables : int
        Refuse LPs with more flow variables than this (memory guard).
    link_loads : bool
        Uniform all-to-all: also return every NIC cable's and switch link direction's load
        at the optimum found (``result.link_load``, B/s).
    time_limit_s : float, optional
        HiGHS time limit (s).

    Returns
    -------
    BandwidthResult
        ``theta`` (1/s per byte of demand) and ``time_s``; for the uniform all-to-all also
        ``pair_rate_Bps = theta * demand.bytes_per_pair``, the per-GPU figures, and
        ``bounds`` when the exact LP was not solved.

    Raises
    ------
    TopoError
        An unknown method, a uniform demand that is not over the fabric's terminals, or an
        explicit demand naming terminals that are not the fabric's.
    SpecError
        An edge of ``G`` without a finite capacity within
        :data:`topo.fabric.CAPACITY_RANGE_Bps` (``.param`` ``G``, naming the edge), or
        ``max_variables`` or ``time_limit_s`` out of range
        (:func:`topo.flow.solve.lp.check_solver_limits`).
    InfeasibleError
        Fewer than two terminals, terminals with no cable, or a pair with no path.
    SolverError
        HiGHS fails, or an LP is too large where no bounds apply (``method="general"``, an
        explicit demand: :class:`topo.errors.LPTooLarge`).

    Examples
    --------
    >>> from topo.builders import build
    >>> from topo.traffic import uniform_alltoall
    >>> G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    >>> r = concurrent_flow(G, uniform_alltoall(G))
    >>> round(r.alltoall_busbw_Bps / 1e9, 3)    # NIC-bound: 2 x 50 / (2 x 30) x 31 GB/s
    51.667

    References
    ----------
    F. Shahrokhi and D. W. Matula, "The maximum concurrent flow problem", J. ACM 37(2), 1990.
    """
    require_fabric(G)
    check_solver_limits(max_variables, time_limit_s)
    if method not in METHODS:
        raise TopoError(f"method must be auto or general, got {method!r}", param="method")
    if demand.entries is not None:
        return matrix_flow(G, demand, max_variables=max_variables, time_limit_s=time_limit_s)
    return uniform_flow(G, demand, method, max_variables, link_loads, time_limit_s)


def uniform_flow(
    G: nx.Graph,
    demand: Demand | None,
    method: str,
    max_variables: int,
    link_loads: bool,
    time_limit_s: float | None,
    known: Known | None = None,
) -> BandwidthResult:
    """The uniform all-to-all: exact, or certified bounds when the exact LP is out of reach.

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    demand : Demand or None
        A uniform demand over all of the fabric's terminals; None: the fabric's own
        all-to-all of 1 B per ordered pair (:func:`topo.flow.door.alltoall_bandwidth`),
        without listing its terminals (sorting 65,536 GPU names takes 0.2 s).
    method, max_variables, link_loads, time_limit_s
        As :func:`concurrent_flow` (``time_limit_s`` in seconds).
    known : Known, optional
        What the caller knows of ``G`` (:class:`topo.flow.reduce.known.Known`: its contracted
        servers, connectivity, planes), taken instead of finding it again; the result is
        the same.

    Returns
    -------
    BandwidthResult
        As :func:`concurrent_flow`: rates in B/s, ``theta`` the pair rate over the demand's
        bytes per pair.

    Raises
    ------
    TopoError
        As :func:`concurrent_flow`; also a demand not over all of the fabric's terminals.
    """
    t0 = time.perf_counter()
    if known is not None:
        hs, terminal = known.servers, known.terminal
    else:
        with gc_paused():  # (8,192 servers on a 65,536-GPU FT3: objects that stay, no cycles)
            hs, terminal = contract_servers(G)
    check_terminals(G, hs, terminal, connectivity=False)  # (connected: checked by need, below)
    n = sum(h.weight for h in hs)
    if demand is not None and (
        len(demand.terminals) != n or (demand.level == "server" and terminal == "gpu")
    ):
        raise TopoError(
            f"a uniform demand must be over all {n:,} of the fabric's "
            f"{'GPUs' if terminal == 'gpu' else 'host endpoints'}; "
            f"it has {len(demand.terminals):,} {demand.level} terminals"
        )
    ctx = SolveContext(G, hs, terminal, t0)
    r = exact_alltoall(
        ctx,
        method=method,
        max_variables=max_variables,
        want_loads=link_loads,
        time_limit_s=time_limit_s,
        check=lambda: check_connected(
            G,
            hs,
            terminal,
            connected=known is not None and known.connected,
            comps=None if known is None else known.switch_components,
        ),
        scope=None if known is None else known.scope,
    )
    if isinstance(r, GivenUp):  # (method auto, more than one server)
        r = bounds_report(
            ctx.noted(*r.notes),
            str(r.error),
            max_variables,
            time_limit_s,
            exact=exact_alltoall,
            routed=routed_alltoall,
        )
    if demand is None:
        return replace(r, demand="alltoall", theta=r.pair_rate_Bps, total_bytes=float(n * (n - 1)))
    b = demand.bytes_per_pair
    return replace(r, demand=demand.name, theta=r.pair_rate_Bps / b, total_bytes=demand.total_bytes)


def alltoall_bandwidth(
    G: nx.Graph,
    *,
    method: str = "auto",
    max_variables: int = DEFAULT_MAX_VARIABLES,
    link_loads: bool = False,
    time_limit_s: float | None = None,
) -> BandwidthResult:
    """All-to-all bandwidth per GPU: the maximum concurrent flow of the uniform all-to-all.

    Parameters
    ----------
    G : networkx.Graph
        A fabric (schema in :mod:`topo.fabric`). Terminals are its GPUs or, when it has none
        (imported fabrics), its host endpoints (NIC ports cabled to a switch).
    method : {"auto", "general"}
        ``auto`` applies the exact reductions of this module, each checked, and falls back to
        the general LP when a check fails; ``general`` solves the LP as defined, one commodity
        per terminal (small fabrics only; the reference the reductions are tested against).
    max_variables : int
        Refuse LPs with more flow variables than this (memory guard).
    link_loads : bool
        Also return the load of every NIC cable and switch link direction at the optimum
        found (``result.link_load``, B/s; one optimum among possibly many).
    time_limit_s : float, optional
        HiGHS time limit (s) for the reduced LP; when reached, certified bounds are reported
        as for an LP over ``max_variables``.

    Returns
    -------
    BandwidthResult
        ``pair_rate_Bps`` is ``lambda``, the rate every ordered pair sends at (B/s);
        ``alltoall_busbw_Bps`` = ``lambda (n - 1)`` and ``alltoall_algbw_Bps`` =
        ``lambda n``, as nccl-tests' alltoall would print them (its size column counts the
        rank's whole buffer, n chunks, and its busbw factor is (n - 1)/n);
        ``internode_per_nic_Bps`` is the inter-server traffic each NIC carries on average,
        ``nic_line_rate_Bps`` the median NIC cable rate and ``nic_utilization`` their ratio;
        ``bottleneck_links`` are the link directions whose capacity rows have a positive shadow
        price in the dual solution HiGHS returns: a certificate of the bound, one of possibly
        several when the dual is degenerate (docs/bandwidth.md).

    Raises
    ------
    TopoError
        An unknown ``method``; ``G`` not a fabric (:func:`topo.fabric.require_fabric`).
    SpecError
        An edge of ``G`` without a finite capacity within
        :data:`topo.fabric.CAPACITY_RANGE_Bps` (``.param`` ``G``, naming the edge), or
        ``max_variables`` or ``time_limit_s`` out of range
        (:func:`topo.flow.solve.lp.check_solver_limits`).
    InfeasibleError
        Fewer than two terminals, or terminals with no cable to any switch.
    SolverError
        HiGHS fails, or (``method="general"``) the LP is too large. With ``method="auto"``
        an LP over ``max_variables`` gives certified bounds instead (``method == "bounds"``,
        ``exact`` False, ``bounds`` holding the lower and upper pair rate and the gap;
        :mod:`topo.flow.bounds.certified`).

    Examples
    --------
    >>> from topo.builders import build
    >>> r = alltoall_bandwidth(build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2))
    >>> round(r.alltoall_busbw_Bps / 1e9, 3)     # NIC-bound: 2 x 50 / (2 x 30) x 31 GB/s
    51.667

    References
    ----------
    F. Shahrokhi and D. W. Matula, J. ACM 37(2), 1990 (maximum concurrent flow); nccl-tests
    ``doc/PERFORMANCE.md`` (busbw of alltoall).
    """
    require_fabric(G)
    check_solver_limits(max_variables, time_limit_s)
    if method not in METHODS:
        raise TopoError(f"method must be auto or general, got {method!r}", param="method")
    # (the demand over all terminals, not listed: fewer than two, or a server without a NIC
    # cabled to a switch, are refused in the fabric's own terms by check_terminals)
    return uniform_flow(G, None, method, max_variables, link_loads, time_limit_s)


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
        (:func:`topo.flow.solve.lp.check_solver_limits`).
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
