"""The all-to-all LP as defined: one commodity per terminal, every arc of the fabric, no transit
through a third server. Small fabrics only; the reference the reductions are tested against,
and the fallback when the server check (:mod:`topo.flow.reduce.server_check`) fails."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable

import networkx as nx
import numpy as np

from topo.errors import LPTooLarge
from topo.fabric import SWITCH_KINDS, natural_key
from topo.flow.reduce.servers import attached
from topo.flow.solve.lp import Commodity, MCFSolution, max_concurrent_flow


def terminals(G: nx.Graph, terminal: str) -> list[str]:
    """The fabric's terminals in natural order: its GPUs (``terminal="gpu"``) or its NICs
    cabled to a switch."""
    kinds = G.nodes(data="kind")
    if terminal == "gpu":
        return sorted((v for v, k in kinds if k == "gpu"), key=natural_key)
    return sorted((v for v, k in kinds if k == "nic" and attached(G, v)), key=natural_key)


def general_lp(
    G: nx.Graph,
    terminal: str,
    max_variables: int,
    keep_flows: bool = False,
    time_limit_s: float | None = None,
) -> tuple[list[str], list[tuple[str, str]], np.ndarray, MCFSolution]:
    """Solve the uniform all-to-all as defined (demand 1 per ordered pair of terminals).

    A commodity may leave its own server and enter its destination's, but never use the arcs
    out of another server into a switch (no transit through servers).

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    terminal : {"gpu", "endpoint"}
        What the terminals are.
    max_variables : int
        Refuse LPs with more flow variables than this (checked before building it).
    keep_flows : bool
        Keep each commodity's flows (``sol.commodity_flow``).
    time_limit_s : float, optional
        HiGHS time limit (s).

    Returns
    -------
    (terms, arcs, capacity, sol)
        The terminals, both directions of every edge, their capacities (B/s, shape
        ``(len(arcs),)``) and the solution (``theta`` is the pair rate in B/s).

    Raises
    ------
    LPTooLarge
        More than ``max_variables`` flow variables.
    SolverError
        HiGHS fails or hits the time limit.
    """
    terms = terminals(G, terminal)
    arcs: list[tuple[str, str]] = []
    cap: list[float] = []
    for u, v, e in G.edges(data=True):
        arcs += [(u, v), (v, u)]
        cap += [float(e["capacity"])] * 2
    is_sw = {v: k in SWITCH_KINDS for v, k in G.nodes(data="kind")}
    server = {v: (None if is_sw[v] else G.nodes[v]["node"]) for v in G}
    exit_server = {a: server[u] for a, (u, v) in enumerate(arcs) if not is_sw[u] and is_sw[v]}
    others = [a for a in range(len(arcs)) if a not in exit_server]
    by_server: dict[Hashable, list[int]] = defaultdict(list)
    for a, s in exit_server.items():
        by_server[s].append(a)
    # Size first: the demands alone are n^2 entries.
    n = sum(len(others) + len(by_server[server[t]]) for t in terms)
    if n > max_variables:
        raise LPTooLarge(
            f"the general all-to-all LP would have {n:,} variables (limit {max_variables:,}); "
            "use the default method, which reduces the fabric exactly where it can"
        )
    commodities = [Commodity(source=t, demands={t2: 1.0 for t2 in terms if t2 != t}) for t in terms]
    sol = max_concurrent_flow(
        arcs,
        cap,
        commodities,
        commodity_arcs=[others + by_server[server[t]] for t in terms],
        keep_commodity_flows=keep_flows,
        time_limit_s=time_limit_s,
        max_variables=max_variables,
        interior_point=True,  # (lp.IPM_ABOVE)
    )
    return terms, arcs, np.array(cap), sol
