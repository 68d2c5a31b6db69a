"""Certified bounds on the all-to-all rate when the exact LP is too large.

Both bounds are on ``lambda``, the rate every ordered pair of terminals (GPUs, or host
endpoints) gets in the uniform all-to-all (:mod:`topo.flow.door`), in B/s.

**Upper bound: cuts.** For any set ``S`` of vertices holding ``W`` of the ``n`` terminals,
every unit of the ``W (n - W) lambda`` that leaves ``S`` crosses an arc out of ``S``, so
``lambda <= c(S) / (W (n - W))`` (the cut condition; Leighton and Rao, J. ACM 46(6), 1999,
where the gap to the LP optimum is also bounded). Cuts tried: every server alone (its NIC
cables, each counted as the tighter of its cable and its PCIe side) and every switch block
(a switch of the top tier's complement: each switch, and each connected group of switches
below the top tier, i.e. a pod) together with every server attached to it, whose other
attachments then leave the set.

**Lower bound: a routing.** The expected-load ECMP routing of :mod:`topo.flow.routing` (every
flow split evenly over the equal-cost up/down paths, PXN on) is a feasible concurrent flow:
its rate, the slowest link's capacity over its load, is achievable. It exists for fabrics with
up/down tiers (fat trees, imported fat trees). Other routings tried: the plane split of
:mod:`topo.flow.exact.certify`, each plane solved alone, breadth-first spanning trees, and for
direct networks (Slim Fly, Dragonfly) the router-level LPs of :mod:`topo.flow.bounds.direct`, whose
LP duals also give an upper bound.

When the two bounds meet (within :data:`topo.flow.exact.certify.CERTIFY_TOL`) the rate is exact:
``method`` is ``"certified"``.

The true optimum lies between them; the report gives both and the relative gap
``1 - lower/upper``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable

import networkx as nx

from topo.errors import TopoError
from topo.fabric import SWITCH_KINDS, natural_key, switch_components
from topo.flow.exact.certify import CERTIFY_TOL, cut_bound, split_routing
from topo.flow.exact.cuts import with_met_cuts
from topo.flow.exact.report import build_report
from topo.flow.reduce.servers import (
    ContractedServer,
    SolveContext,
    check_terminals,
    contract_servers,
    terminal_count,
)
from topo.flow.result import BandwidthResult, BottleneckLink, Bounds
from topo.flow.solve.lp import NO_LP

ROUTER_LP_MAX_COLUMNS = 2_000_000
"""Largest router-level LP of :mod:`topo.flow.bounds.direct` (columns), whatever the exact
LP's limit: it holds one column per orbit of arcs, or per global link of a Dragonfly."""


def cut_upper_bound(G: nx.Graph) -> tuple[float, str]:
    """The tightest of the server and switch-block cuts: (lambda bound in B/s, the cut named).

    Raises
    ------
    TopoError
        Fewer than two terminals.
    """
    hs, terminal = contract_servers(G)
    if terminal_count(hs) < 2:
        raise TopoError("all-to-all needs at least two terminals")
    return cut_bound(G, hs, terminal)


def split_lower_bound(G: nx.Graph) -> tuple[float, str]:
    """A feasible all-to-all rate (B/s) from the plane-split, two-hop routing of
    :func:`topo.flow.exact.certify.split_routing`; (0, why) if the fabric has none."""
    hs, _ = contract_servers(G)
    r = split_routing(G, hs)
    if r is None:
        return 0.0, "no split-routing lower bound (not two tiers in every plane)"
    return r.rate_Bps, "each class pair split over its planes, two hops inside a plane"


Routed = Callable[..., BandwidthResult]
"""How a fabric is routed: :func:`topo.flow.routing.routed_alltoall`, ``(G, routing, seed=...)``."""

Exact = Callable[..., object]
"""How a fabric's all-to-all is solved exactly: :func:`topo.flow.exact.exact_alltoall`,
``(SolveContext, method=..., max_variables=..., want_loads=..., time_limit_s=...)`` to a
:class:`~topo.flow.result.BandwidthResult`, or anything else when it was given up."""


def routing_lower_bound(G: nx.Graph, routed: Routed) -> tuple[float, str]:
    """A feasible all-to-all rate (B/s) from the expected ECMP routing of ``routed``; (0, why)
    if none."""
    try:
        r = routed(G, "ecmp", seed=0)
    except TopoError as exc:
        return 0.0, f"no routing lower bound ({exc})"
    assert r.routing is not None
    return r.routing.expected_pair_rate_Bps, "ECMP with even splitting (expected loads), PXN"


def plane_lower_bound(
    G: nx.Graph, exact: Exact, max_variables: int, time_limit_s: float | None = None
) -> tuple[float, str]:
    """A feasible all-to-all rate (B/s) from solving every plane on its own; (0, why) if none.

    For a fabric whose switches fall into several planes (components), let ``S_p`` be the
    servers with a NIC on plane ``p`` and ``lambda_p`` the exact all-to-all rate among the
    GPUs of ``S_p`` on plane ``p`` alone (:func:`topo.flow.door.alltoall_bandwidth` on
    that sub-fabric). Running all the planes' flows at once is feasible, as planes share no
    switch or cable, so every pair of GPUs in servers ``a, b`` gets ``sum of lambda_p over the
    planes p holding both``, and the minimum over pairs is achievable. It is the rate without
    moving load between planes, so it is exact when the damage leaves every plane's own
    bottleneck where the whole fabric's is (a dead NIC cable; a fabric link of a plane with
    slack) and below the optimum otherwise. NVLink is assumed not to bind when the planes'
    flows add up inside a server (each plane's flow is checked alone).
    """
    comps = switch_components(G)
    if len(comps) < 2:
        return 0.0, "no plane lower bound (one plane)"
    hs, _ = contract_servers(G)
    where = {v: i for i, c in enumerate(comps) for v in c}
    masks: dict[Hashable, frozenset[int]] = {
        h.id: frozenset(where[s] for s in h.attach) for h in hs
    }
    rates = [
        _plane_rate(G, hs, i, where, masks, exact, max_variables, time_limit_s)
        for i in range(len(comps))
    ]
    distinct = set(masks.values())
    best = math.inf
    for a in distinct:
        for b in distinct:
            best = min(best, sum(rates[p] for p in a & b))
    if not math.isfinite(best) or best <= 0:
        return 0.0, "no plane lower bound (some pair of servers shares no working plane)"
    return best, f"each of the {len(comps)} planes solved alone, no load moved between planes"


def _plane_rate(
    G: nx.Graph,
    hs: list[ContractedServer],
    i: int,
    where: dict[str, int],
    masks: dict[Hashable, frozenset[int]],
    exact: Exact,
    max_variables: int,
    time_limit_s: float | None,
) -> float:
    """The exact all-to-all rate (B/s) among the servers on plane ``i``, on that plane alone;
    0 if fewer than two servers are on it or it cannot be solved exactly."""
    members = {h.id for h in hs if i in masks[h.id]}
    if len(members) < 2:
        return 0.0
    keep = {v for v, p in where.items() if p == i}
    for h in hs:
        if h.id not in members:
            continue
        keep.update(v for v in h.members if G.nodes[v]["kind"] != "nic")
        keep.update(n for s, nics in h.nics.items() if where[s] == i for n in nics)
    H = G.subgraph(keep).copy()
    try:
        sub, terminal = contract_servers(H)
        check_terminals(H, sub, terminal)
        r = exact(
            SolveContext(H, sub, terminal, time.perf_counter()),
            method="auto",
            max_variables=max_variables,
            want_loads=False,
            time_limit_s=time_limit_s,
        )
    except TopoError:
        return 0.0
    return r.pair_rate_Bps if isinstance(r, BandwidthResult) else 0.0


def tree_lower_bound(G: nx.Graph, roots: int = 32) -> tuple[float, str]:
    """A feasible all-to-all rate (B/s) from routing over breadth-first spanning trees.

    Any fabric whose switches are connected has one: each server hangs from the switch it
    has the most capacity to (its cables there, each the tighter of cable and PCIe); every
    pair's traffic is split evenly over ``k`` breadth-first spanning trees of the switch graph,
    rooted at ``k`` switches spread over the fabric, and follows each tree's unique path. A tree
    edge whose lower side holds ``X`` of the ``n`` terminals carries ``X (n - X) lambda`` each
    way in that tree (the cut it defines), so ``lambda`` is the smallest capacity over the
    average load of an edge, and over ``w (n - w)`` for each server's own cables. Weak for
    fabrics with much path diversity, but never zero on a connected fabric; used for the
    families the other lower bounds do not reach (Dragonfly, Slim Fly, irregular dumps).
    NVLink is assumed not to bind (a server's traffic reaches the chosen switch's NICs over it).
    """
    hs, _ = contract_servers(G)
    n = terminal_count(hs)
    if n < 2 or any(not h.attach for h in hs):
        return 0.0, "no tree lower bound (a server has no cable)"
    switches = sorted((v for v, k in G.nodes(data="kind") if k in SWITCH_KINDS), key=natural_key)
    S = nx.Graph()
    S.add_nodes_from(switches)
    for u, v, e in G.edges(data=True):
        if u in S and v in S:
            S.add_edge(u, v, capacity=float(e["capacity"]))
    if not nx.is_connected(S):
        return 0.0, "no tree lower bound (the switches are not connected)"
    weight = dict.fromkeys(switches, 0)
    best = math.inf
    for h in hs:
        s = max(h.attach, key=lambda t: (h.attach[t], str(t)))
        weight[s] += h.weight
        best = min(best, h.attach[s] / (h.weight * (n - h.weight)))
    step = max(1, len(switches) // roots)
    chosen = switches[::step][:roots]
    load: dict[tuple[str, str], float] = {}
    for r in chosen:
        order = list(nx.bfs_edges(S, r))  # (parent, child) in BFS order
        below = dict(weight)
        for parent, child in reversed(order):
            below[parent] += below[child]
        for parent, child in order:
            x = below[child]
            key = (parent, child) if str(parent) <= str(child) else (child, parent)
            load[key] = load.get(key, 0.0) + x * (n - x) / len(chosen)
    for (u, v), x in load.items():
        if x > 0:
            best = min(best, S.edges[u, v]["capacity"] / x)
    return best, f"even split over {len(chosen)} breadth-first spanning trees of the switches"


def bounds_report(
    ctx: SolveContext,
    why: str,
    max_variables: int,
    time_limit_s: float | None = None,
    *,
    exact: Exact,
    routed: Routed,
) -> BandwidthResult:
    """Certified lower and upper bounds instead of the exact LP (module notes).

    Parameters
    ----------
    ctx : SolveContext
        The solve: the fabric, its contracted servers, the terminal kind, the start time and
        what was reduced before the exact LP was given up.
    why : str
        Why the exact LP was not solved.
    max_variables : int
        LP limit of each plane's exact solve (:func:`plane_lower_bound`).
    time_limit_s : float, optional
        HiGHS time limit (s) of each plane's exact solve and of each router-level LP of
        :func:`topo.flow.bounds.direct.direct_bounds`.
    exact : callable
        The exact solve of each plane alone (:func:`plane_lower_bound`):
        :func:`topo.flow.exact.exact_alltoall`.
    routed : callable
        The routing of the routing lower bound (:func:`routing_lower_bound`):
        :func:`topo.flow.routing.routed_alltoall`.

    Returns
    -------
    BandwidthResult
        At the lower bound, ``method == "bounds"``, ``exact`` False; when the two bounds meet
        (within :data:`topo.flow.exact.certify.CERTIFY_TOL`), ``method == "certified"``,
        ``exact`` True and no ``bounds``.
    """
    G, hs, terminal = ctx.G, ctx.servers, ctx.terminal
    ub, cut = cut_upper_bound(G)
    upper_from = f"cut around {cut}"
    found = [
        routing_lower_bound(G, routed),
        split_lower_bound(G),
        plane_lower_bound(G, exact, max_variables, time_limit_s),
        tree_lower_bound(G),
    ]
    # imported here: scipy's graph routines and igraph cost every command 0.25 s to load
    from topo.flow.bounds.direct import direct_bounds

    direct = direct_bounds(G, hs, terminal, ROUTER_LP_MAX_COLUMNS, time_limit_s)
    if direct is not None:
        found.append(direct[0])
        if direct[1][0] < ub:
            ub, upper_from = direct[1]
    lb, how = max(found)
    lb = min(lb, ub)
    met = bool(lb >= ub * (1 - CERTIFY_TOL))  # the routing reaches the bound: the rate is exact
    ctx = ctx.noted(f"exact LP not solved: {why}")
    binding: list[BottleneckLink] = []
    if met:
        ctx = ctx.noted(f"exact: {how} meets {upper_from} (gap {max(0.0, 1 - lb / ub):.1e})")
        binding, said = _met_cut_links(ctx, lb)
        ctx = ctx.noted(*said)
    return build_report(
        ctx,
        lb,
        binding,
        n=terminal_count(hs),
        method="certified" if met else "bounds",
        exact=met,
        sol=NO_LP,
        bounds=None
        if met
        else Bounds(lower_Bps=lb, upper_Bps=ub, lower_from=how, upper_from=upper_from),
    )


def _met_cut_links(ctx: SolveContext, rate: float) -> tuple[list[BottleneckLink], tuple[str, ...]]:
    """The bottleneck of a rate exact because its bounds meet: the links of every cut the rate
    meets (:func:`topo.flow.exact.cuts.with_met_cuts`: every optimal flow fills them), else
    none; and the note saying which."""
    found, said = with_met_cuts(ctx, rate, [])
    if not found:
        said = (
            *said,
            "bottleneck: not identified (exact by meeting bounds; the upper bound names no links)",
        )
    return found, said
