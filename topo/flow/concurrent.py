"""One entry point for the maximum concurrent flow of any demand over a fabric.

:func:`concurrent_flow` takes a fabric and a :class:`topo.traffic.Demand`. The uniform
all-to-all (``demand.entries is None``) takes the reduced path of :mod:`topo.flow.exact`
(server contraction, planes, twin classes, symmetry, the server check), with certified bounds
(:mod:`topo.flow.bounds`) when the exact LP is too large or too slow; an explicit matrix takes
the server-level path of :mod:`topo.flow.matrix`. Both return a
:class:`topo.flow.result.BandwidthResult`.
"""

from __future__ import annotations

import time
from dataclasses import replace

import networkx as nx

from topo.errors import LPTimeLimit, LPTooLarge, TopoError
from topo.fabric import gc_paused, require_fabric
from topo.flow.bounds import bounds_report
from topo.flow.exact import exact_alltoall
from topo.flow.hosts import check_connected, check_terminals, hosts
from topo.flow.lp import DEFAULT_MAX_VARIABLES, check_solver_limits
from topo.flow.matrix import matrix_flow
from topo.flow.result import BandwidthResult
from topo.traffic import Demand

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
        (:func:`topo.flow.lp.check_solver_limits`).
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
) -> BandwidthResult:
    """The uniform all-to-all: exact, or certified bounds when the exact LP is out of reach.

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    demand : Demand or None
        A uniform demand over all of the fabric's terminals; None: the fabric's own
        all-to-all of 1 B per ordered pair (:func:`topo.flow.alltoall.alltoall_bandwidth`),
        without listing its terminals (sorting 65,536 GPU names takes 0.2 s).
    method, max_variables, link_loads, time_limit_s
        As :func:`concurrent_flow` (``time_limit_s`` in seconds).

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
    with gc_paused():  # (8,192 servers on a 65,536-GPU FT3: objects that stay, no cycles)
        hs, terminal = hosts(G)
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
    reductions: list[str] = []
    try:
        r = exact_alltoall(
            G,
            hs,
            terminal,
            method=method,
            max_variables=max_variables,
            want_loads=link_loads,
            time_limit_s=time_limit_s,
            t0=t0,
            reductions=reductions,
            check=lambda: check_connected(G, hs, terminal),
        )
    except (LPTooLarge, LPTimeLimit) as exc:
        if method != "auto" or len(hs) == 1:
            raise
        r = bounds_report(G, hs, terminal, t0, reductions, str(exc), max_variables, time_limit_s)
    if demand is None:
        return replace(r, demand="alltoall", theta=r.pair_rate_Bps, total_bytes=float(n * (n - 1)))
    b = demand.bytes_per_pair
    return replace(r, demand=demand.name, theta=r.pair_rate_Bps / b, total_bytes=demand.total_bytes)
