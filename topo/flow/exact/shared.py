"""Several demands on one fabric at once: some scaled by a common ``theta``, the rest fixed.

For demands ``D_1 .. D_m`` (bytes per ordered pair of servers) and rates ``r_k`` (``None`` for
a demand that is scaled), :func:`shared_flow` finds the largest ``theta`` such that every
scaled demand flows at ``theta * D_k`` and every fixed one at ``r_k * D_k`` (B/s per byte of
demand) at the same time, each demand its own commodities, all sharing the capacities:

.. math::

    \\max\\ \\theta \\quad\\text{s.t.}\\quad
    \\sum_{a \\in \\delta^+(v)} f_{k,s,a} - \\sum_{a \\in \\delta^-(v)} f_{k,s,a}
    = \\rho_k\\, b_{k,s}(v) \\quad \\forall k, s, v;\\qquad
    \\sum_{k,s} f_{k,s,a} \\le c_a \\quad \\forall a;\\qquad f \\ge 0,

with ``rho_k = theta`` for a scaled demand and ``rho_k = r_k`` for a fixed one, and one
commodity ``(k, s)`` per demand and sending server ``s`` (aggregating a sender's sinks is exact,
as in :mod:`topo.flow.solve.lp`). This is the step of max-min fair allocation by progressive
filling (Bertsekas and Gallager, *Data Networks*, 2nd ed., 1992, section 6.5.2): raise the
unfrozen demands together, holding the frozen ones at their rates.

The network is the one :func:`topo.flow.exact.matrix.matrix_flow` solves: servers contracted
(:mod:`topo.flow.reduce.servers`; NVLink not a constraint, servers never forward; a server
without GPUs that a demand names, a storage host, is a terminal whose NICs count their
cables, and servers without GPUs that no demand names are left out), isomorphic
planes folded exactly (every demand carried ``1/P`` per plane). Servers that are *twins* (the
same attachments, and in every demand the same bytes to and from each server) are one vertex
of their summed capacity, one commodity per demand: a class flow split evenly among its
members is a flow of the members, so this is exact (storage servers on one leaf serving the
same readers are twins; servers of one all-to-all never are). The LP goes to HiGHS through
``scipy.optimize.linprog``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np

from topo.errors import InfeasibleError, LPTooLarge, SolverError, TopoError
from topo.fabric import natural_key, require_fabric
from topo.flow.reduce.network import Reduced, expand, network
from topo.flow.reduce.planes import scope
from topo.flow.reduce.servers import ContractedServer, contract_servers
from topo.flow.solve.lp import DEFAULT_MAX_VARIABLES, MCFSolution, check_solver_limits
from topo.traffic import Demand

__all__ = ["SharedFlow", "shared_flow"]

Pairs = dict[tuple[Hashable, Hashable], float]


@dataclass(frozen=True)
class SharedFlow:
    """The solution of :func:`shared_flow`.

    Attributes
    ----------
    theta : float
        The largest common scale of the scaled demands (B/s per byte of demand).
    rates : tuple of float
        Each demand's rate at the solution: ``theta`` for a scaled one, its fixed rate
        otherwise (B/s per byte of demand), in the order of the demands.
    link_load : tuple of dict
        Per demand, the load (B/s) it puts on every fabric link direction ``(tail, head)`` that
        it uses (NIC cables and switch links), at the optimum found (one among possibly many).
    """

    theta: float
    rates: tuple[float, ...]
    link_load: tuple[dict[tuple[str, str], float], ...]


def shared_flow(
    G: nx.Graph,
    demands: Sequence[Demand],
    rates: Sequence[float | None],
    *,
    max_variables: int = DEFAULT_MAX_VARIABLES,
) -> SharedFlow:
    """The largest common scale of the scaled demands, the fixed ones held at their rates.

    Parameters
    ----------
    G : networkx.Graph
        A fabric (:mod:`topo.fabric`).
    demands : sequence of Demand
        The demands (bytes per ordered pair; server- or GPU-level, summed per pair of servers;
        a uniform demand is taken pair by pair), at least one.
    rates : sequence of float or None
        One per demand: ``None`` for a demand scaled by ``theta``, else its fixed rate (B/s per
        byte of demand, >= 0).
    max_variables : int
        Refuse LPs with more flow variables than this (checked before building it).

    Returns
    -------
    SharedFlow
        ``theta``, each demand's rate, each demand's link loads (B/s). ``theta`` is 0 when a
        scaled demand's pair has no path, or only paths the fixed demands fill.

    Raises
    ------
    TopoError
        No demand to scale, ``rates`` not one per demand or a rate negative or not finite, a
        demand naming a server (GPU) that is not the fabric's, or a demand with no bytes
        between distinct servers.
    InfeasibleError
        The fixed rates cannot be carried together, a server with traffic has no NIC cabled to
        a switch, or a pair has no path.
    LPTooLarge
        The LP would have more than ``max_variables`` flow variables.
    SolverError
        HiGHS fails.

    Examples
    --------
    >>> from topo.builders import build
    >>> from topo.traffic import Demand
    >>> G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    >>> a = Demand("server", (0, 1), {(0, 1): 1.0})
    >>> b = Demand("server", (0, 1), {(0, 1): 1.0})
    >>> r = shared_flow(G, [a, b], [None, 20e9])   # 50 GB/s NIC, 20 GB/s of it held
    >>> round(r.theta / 1e9, 6)
    30.0

    References
    ----------
    D. Bertsekas and R. Gallager, *Data Networks*, 2nd ed., Prentice Hall, 1992, section 6.5.2
    (max-min fairness, progressive filling); F. Shahrokhi and D. W. Matula, J. ACM 37(2), 1990.
    """
    require_fabric(G)
    check_solver_limits(max_variables)
    if len(rates) != len(demands):
        raise TopoError(f"rates must be one per demand: {len(rates)} for {len(demands)} demands")
    if not any(r is None for r in rates):
        raise TopoError("no demand to scale: at least one rate must be None")
    for r in rates:
        if r is not None and not (0.0 <= r < float("inf")):
            raise TopoError(f"a fixed rate must be finite and >= 0, got {r}")
    pairs = [_server_pairs(G, d) for d in demands]
    for k, p in enumerate(pairs):
        if not p:
            raise TopoError(
                f"demand {k} ({demands[k].name or 'unnamed'}) has no bytes between "
                "distinct servers: nothing of it crosses the fabric"
            )
    named = {s for p in pairs for ab in p for s in ab}
    hs, _ = contract_servers(G, keep=named)  # storage hosts (no GPUs) a demand names stay
    by_id = {h.id: h for h in hs}
    for p in pairs:
        for ab in p:
            for s in ab:
                if s not in by_id:
                    raise TopoError(f"demand names {s!r}, which is not a server of the fabric")
    used = sorted(named, key=natural_key)
    loose = [s for s in used if not by_id[s].attach]
    if loose:
        raise InfeasibleError(f"server {loose[0]!r} has no NIC cabled to a switch")
    sc = scope(G, hs)
    classes = _twins([by_id[s] for s in used], sc.switches, pairs)
    index = {h.id: ci for ci, cls in enumerate(classes) for h in cls}
    arcs, cap, origin = network(G, sc, classes)
    red = Reduced(classes=classes, arcs=arcs, capacity=cap, origin=origin, commodities=[], sc=sc)
    flows, theta = _solve(red, pairs, index, rates, max_variables)
    loads = []
    for f in flows:
        sol = _as_solution(f, theta)
        load: dict[tuple[str, str], float] = {}
        for u, v, _, x in expand(G, red, sol, np.nonzero(f > 0)[0]):
            if x > 0:
                load[(u, v)] = load.get((u, v), 0.0) + float(x)
        loads.append(load)
    out = tuple(theta if r is None else float(r) for r in rates)
    return SharedFlow(theta=theta, rates=out, link_load=tuple(loads))


def _twins(
    hosts: list[ContractedServer], switches: set[str], pairs: list[Pairs]
) -> list[list[ContractedServer]]:
    """The servers in classes of twins: the same attachments (switch and capacity) and, in
    every demand, the same bytes to each server and from each server (so no bytes between
    them). A class is one source and sink vertex of its members' summed capacity; any class
    flow split evenly among its members is a flow of the servers (each sends and receives
    what the demands ask, each NIC within its capacity), so the rates are those of the
    servers apart. In natural order of the first member."""
    rows: list[dict[Hashable, list[tuple[Hashable, float]]]] = []
    cols: list[dict[Hashable, list[tuple[Hashable, float]]]] = []
    for p in pairs:
        r: dict[Hashable, list[tuple[Hashable, float]]] = {}
        c: dict[Hashable, list[tuple[Hashable, float]]] = {}
        for (a, b), x in p.items():
            r.setdefault(a, []).append((b, x))
            c.setdefault(b, []).append((a, x))
        rows.append(r)
        cols.append(c)
    groups: dict[Hashable, list[ContractedServer]] = {}
    for h in hosts:
        key = (
            tuple(sorted(h.scoped(switches))),
            tuple(
                (frozenset(r.get(h.id, ())), frozenset(c.get(h.id, ())))
                for r, c in zip(rows, cols, strict=True)
            ),
        )
        groups.setdefault(key, []).append(h)
    return sorted(groups.values(), key=lambda g: natural_key(g[0].id))


def _server_pairs(G: nx.Graph, demand: Demand) -> Pairs:
    """The demand's bytes between distinct servers (a GPU-level demand summed per pair of
    servers; a uniform one listed pair by pair)."""
    if demand.level == "server":
        node = {v: v for v in demand.terminals}
    else:
        for v in demand.terminals:
            if v not in G or "node" not in G.nodes[v]:
                raise TopoError(f"demand names {v!r}, which is not a GPU of the fabric")
        node = {v: G.nodes[v]["node"] for v in demand.terminals}
    out: Pairs = {}
    for (a, b), x in demand.pairs():
        key = (node[a], node[b])
        if key[0] != key[1]:
            out[key] = out.get(key, 0.0) + x
    return out


def _solve(
    red: Reduced,
    pairs: list[Pairs],
    index: dict[Hashable, int],
    rates: Sequence[float | None],
    max_variables: int,
) -> tuple[list[np.ndarray], float]:
    """Build and solve the LP; return each demand's arc flows (B/s) and theta."""
    arcs = red.arcs
    n_arcs = len(arcs)
    vid: dict[Hashable, int] = {}
    for a, b in arcs:
        vid.setdefault(a, len(vid))
        vid.setdefault(b, len(vid))
    tail = np.array([vid[a] for a, _ in arcs])
    head = np.array([vid[b] for _, b in arcs])
    # a commodity uses the switch links, its sender's up arcs and its sinks' down arcs (flow
    # into another server's sink vertex could not leave it: servers do not forward)
    fabric = np.array([o[0] == "fabric" for o in red.origin], dtype=bool)
    up_of: dict[int, list[int]] = {}
    down_of: dict[int, list[int]] = {}
    for i, o in enumerate(red.origin):
        if o[0] in ("up", "down"):
            (up_of if o[0] == "up" else down_of).setdefault(o[1], []).append(i)
    # commodities: (demand k, sender class ci, {sink class: bytes / planes})
    comms: list[tuple[int, int, dict[int, float]]] = []
    for k, p in enumerate(pairs):
        by_src: dict[int, dict[int, float]] = {}
        for (src, dst), x in p.items():
            sinks = by_src.setdefault(index[src], {})
            sinks[index[dst]] = sinks.get(index[dst], 0.0) + x / red.sc.planes
        comms += [(k, ci, by_src[ci]) for ci in sorted(by_src)]
    usable = []
    for _, ci, dem in comms:
        ok = fabric.copy()
        ok[up_of.get(ci, [])] = True
        for t in dem:
            ok[down_of.get(t, [])] = True
        usable.append(np.nonzero(ok)[0])
    n_vars = sum(len(u) for u in usable)
    if n_vars > max_variables:
        raise LPTooLarge(
            f"the shared-flow LP would have {n_vars:,} variables, over the limit of "
            f"{max_variables:,} ({len(comms):,} commodities)"
        )
    scale = float(np.max(red.capacity))  # capacities to about 1: HiGHS works to ~1e-7 relative
    theta_col = n_vars
    rows_eq: list[np.ndarray] = []
    cols_eq: list[np.ndarray] = []
    vals_eq: list[np.ndarray] = []
    b_eq: list[float] = []
    col0 = 0
    n_v = len(vid)
    for (k, ci, dem), use in zip(comms, usable, strict=True):
        cols = np.arange(col0, col0 + len(use))
        r0 = len(b_eq)
        rows_eq += [r0 + tail[use], r0 + head[use]]
        cols_eq += [cols, cols]
        vals_eq += [np.ones(len(use)), -np.ones(len(use))]
        net = np.zeros(n_v)
        net[vid[("out", ci)]] = sum(dem.values())
        for t, y in dem.items():
            net[vid[("in", t)]] -= y
        rate = rates[k]
        if rate is None:
            nz = np.nonzero(net)[0]
            rows_eq.append(r0 + nz)
            cols_eq.append(np.full(len(nz), theta_col))
            vals_eq.append(-net[nz])
            b_eq += [0.0] * n_v
        else:
            b_eq += (net * (float(rate) / scale)).tolist()
        col0 += len(use)
    # imported here: scipy.optimize costs every command about 0.5 s to load
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    A_eq = coo_matrix(
        (np.concatenate(vals_eq), (np.concatenate(rows_eq), np.concatenate(cols_eq))),
        shape=(len(b_eq), n_vars + 1),
    ).tocsr()
    all_arcs = np.concatenate(usable)
    A_ub = coo_matrix(
        (np.ones(n_vars), (all_arcs, np.arange(n_vars))), shape=(n_arcs, n_vars + 1)
    ).tocsr()
    c = np.zeros(n_vars + 1)
    c[theta_col] = -1.0
    res = linprog(
        c,
        A_ub=A_ub,
        b_ub=red.capacity / scale,
        A_eq=A_eq,
        b_eq=np.array(b_eq),
        bounds=(0, None),
        method="highs",
    )
    if res.status == 2:
        raise InfeasibleError("the fixed rates cannot be carried together on this fabric")
    if res.status != 0:
        raise SolverError(f"HiGHS failed on the shared-flow LP: {res.message}")
    x = res.x * scale
    flows = [np.zeros(n_arcs) for _ in range(len(pairs))]
    col0 = 0
    for (k, _, _), use in zip(comms, usable, strict=True):
        np.add.at(flows[k], use, x[col0 : col0 + len(use)])
        col0 += len(use)
    return flows, float(x[theta_col])


def _as_solution(arc_flow: np.ndarray, theta: float) -> MCFSolution:
    """One demand's arc flows in the shape :func:`topo.flow.reduce.network.expand` reads."""
    return MCFSolution(
        theta=theta,
        arc_flow=arc_flow,
        arc_dual=np.zeros(len(arc_flow)),
        commodity_flow=None,
        variables=0,
        constraints=0,
        build_seconds=0.0,
        solve_seconds=0.0,
    )
