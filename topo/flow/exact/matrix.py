"""The maximum concurrent flow of an explicit server-to-server byte matrix.

For a byte matrix ``D[a, b]`` between servers, the shortest time in which all of it can be
delivered at once is ``1 / theta``, where ``theta`` is the maximum concurrent flow of the demand
``D`` (bytes) on arc capacities in B/s (Shahrokhi and Matula, J. ACM 37(2), 1990): every pair
then flows at ``theta * D[a, b]`` B/s and finishes at the same moment, and no schedule finishes
sooner (a schedule finishing in ``T`` is, averaged over time, a concurrent flow with
``theta = 1/T``).

The model, and what it leaves out:

- **Servers are contracted** (:mod:`topo.flow.reduce.servers`): a server is one vertex joined to the
  switches its NICs reach, each NIC counting as the tighter of its cable and its PCIe side.
  Any NIC of a server may carry any of its GPUs' bytes (NVLink forwarding, NCCL's PXN), and
  NVLink inside a server is not a constraint here: callers account for intra-server traffic and
  NVLink themselves. Servers never forward other servers' traffic.
- **Planes are folded exactly** (:mod:`topo.flow.reduce.planes`): when the switch graph is P
  isomorphic planes with every server attached identically to each, one plane carrying
  ``D / P`` is solved; averaging any solution over plane permutations shows this loses nothing.
- One commodity per source server, aggregated over its sinks (exact; see :mod:`topo.flow.solve.lp`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Hashable, Mapping

import networkx as nx
import numpy as np

from topo.errors import InfeasibleError, LPTooLarge, TopoError
from topo.fabric import named_servers, natural_key, switch_components
from topo.flow.exact.report import lp_stats, sort_links
from topo.flow.reduce.network import Reduced, Scope, bottleneck_links, network
from topo.flow.reduce.planes import scope
from topo.flow.reduce.servers import ContractedServer, contract_servers
from topo.flow.result import BandwidthResult
from topo.flow.solve.lp import Commodity, MCFSolution, max_concurrent_flow
from topo.traffic import Demand
from topo.wording import count

Pairs = Mapping[tuple[Hashable, Hashable], float]


def server_level(G: nx.Graph, demand: Demand) -> Pairs:
    """The demand's bytes between distinct servers: a server-level matrix as it is, a GPU-level
    one summed over each pair of servers (bytes between GPUs of one server left out)."""
    assert demand.entries is not None
    if demand.level == "server":
        return demand.entries
    node = {v: G.nodes[v].get("node", v) for v in demand.terminals}
    out: dict[tuple[Hashable, Hashable], float] = {}
    for (a, b), x in demand.entries.items():
        key = (node[a], node[b])
        if key[0] != key[1]:
            out[key] = out.get(key, 0.0) + x
    return out


def matrix_flow(
    G: nx.Graph, demand: Demand, *, max_variables: int, time_limit_s: float | None = None
) -> BandwidthResult:
    """The maximum concurrent flow of an explicit demand, servers contracted.

    Parameters
    ----------
    G : networkx.Graph
        A fabric (:mod:`topo.fabric`).
    demand : Demand
        An explicit demand (``entries`` given), server- or GPU-level. A GPU-level demand is
        summed per pair of servers (bytes within a server are not fabric traffic).
    max_variables : int
        Refuse LPs with more flow variables than this (checked before building it).
    time_limit_s : float, optional
        HiGHS time limit (s).

    Returns
    -------
    BandwidthResult
        ``theta`` and ``time_s = 1 / theta`` (s), the binding links; ``uniform`` False.

    Raises
    ------
    TopoError
        A terminal with traffic is not a server (host endpoint) of the fabric, or no bytes are
        left between distinct servers.
    InfeasibleError
        A server with traffic has no NIC cabled to a switch, or a pair has no path.
    LPTooLarge
        The LP would have more than ``max_variables`` flow variables.
    SolverError
        HiGHS fails.
    """
    t0 = time.perf_counter()
    hs, terminal = contract_servers(G)
    by_id = {h.id: h for h in hs}
    pairs = server_level(G, demand)
    what = "server" if terminal == "gpu" else "host endpoint"
    for a, b in pairs:
        for s in (a, b):
            if s not in by_id:
                raise TopoError(f"demand names {s!r}, which is not a {what} of the fabric")
    if not pairs:
        raise TopoError("the demand is empty: no bytes between distinct servers")
    used = sorted({s for pair in pairs for s in pair}, key=natural_key)
    loose = [s for s in used if not by_id[s].attach]
    if loose:
        raise InfeasibleError(
            f"{named_servers(G, loose)} in the demand {'has' if len(loose) == 1 else 'have'} "
            f"no NIC cabled to a switch: no path carries {'its' if len(loose) == 1 else 'their'} "
            "traffic"
        )
    sc = scope(G, hs)
    _check_paths(G, sc, by_id, pairs)
    red, sources = _network(G, sc, [by_id[s] for s in used], pairs)
    sol = _solve(red, sources, max_variables, time_limit_s)
    return _result(G, demand, terminal, used, pairs, red, sol, t0)


def _check_paths(
    G: nx.Graph, sc: Scope, by_id: dict[Hashable, ContractedServer], pairs: Pairs
) -> None:
    """Every pair must be joined through the switches of the scope."""
    where = {v: i for i, c in enumerate(switch_components(G)) for v in c}
    for a, b in pairs:
        ca = {where[s] for s in by_id[a].attach if s in sc.switches}
        cb = {where[s] for s in by_id[b].attach if s in sc.switches}
        if not ca & cb:
            raise InfeasibleError(f"no path from server {a!r} to server {b!r}: the rate is 0")


def _network(
    G: nx.Graph, sc: Scope, used: list[ContractedServer], pairs: Pairs
) -> tuple[Reduced, list[int]]:
    """The network with one class per server in the demand, one commodity per sender."""
    index = {h.id: i for i, h in enumerate(used)}
    classes = [[h] for h in used]
    arcs, cap, origin = network(G, sc, classes)
    sinks: dict[int, dict[Hashable, float]] = {}
    for (a, b), x in pairs.items():
        sinks.setdefault(index[a], {})[("in", index[b])] = x / sc.planes
    sources = sorted(sinks)
    commodities = [Commodity(source=("out", ci), demands=sinks[ci]) for ci in sources]
    red = Reduced(
        classes=classes, arcs=arcs, capacity=cap, origin=origin, commodities=commodities, sc=sc
    )
    return red, sources


def _solve(
    red: Reduced, sources: list[int], max_variables: int, time_limit_s: float | None
) -> MCFSolution:
    """Size the LP first (each commodity may use every arc but the other sources' out-arcs),
    so a refused LP costs nothing; then solve it."""
    out_arcs = Counter(o[1] for o in red.origin if o[0] == "up")
    total_out = sum(out_arcs.values())
    n_vars = sum(len(red.arcs) - total_out + out_arcs[ci] for ci in sources)
    if n_vars > max_variables:
        raise LPTooLarge(
            f"the demand LP would have {n_vars:,} variables, over the limit of "
            f"{max_variables:,} ({len(sources):,} sending servers)"
        )
    return max_concurrent_flow(
        red.arcs,
        red.capacity,
        red.commodities,
        commodity_arcs=[red.commodity_arcs(ci) for ci in sources],
        max_variables=max_variables,
        time_limit_s=time_limit_s,
    )


def _result(
    G: nx.Graph,
    demand: Demand,
    terminal: str,
    used: list[Hashable],
    pairs: Pairs,
    red: Reduced,
    sol: MCFSolution,
    t0: float,
) -> BandwidthResult:
    sc = red.sc
    reductions = []
    if terminal == "gpu":
        reductions.append(f"server contraction: {count(len(used), 'server')} (NVLink not modelled)")
    if sc.planes > 1:
        reductions.append(f"plane decomposition: {sc.planes} isomorphic planes, one solved")
    elif sc.copies is not None:
        reductions.append("plane merging: identical planes solved as one of multiplied capacity")
    nic_caps = [
        float(G.adj[nic][s]["capacity"])
        for cls in red.classes
        for s, nics in cls[0].nics.items()
        for nic in nics
    ]
    return BandwidthResult(
        fabric=str(G.graph.get("name", "")),
        family=str(G.graph.get("family", "unknown")),
        terminal=terminal,
        demand=demand.name,
        uniform=False,
        gpus=sum(cls[0].weight for cls in red.classes),
        nodes=len(used),
        theta=sol.theta,
        total_bytes=demand.total_bytes,
        pair_rate_Bps=0.0,
        internode_per_gpu_Bps=0.0,
        internode_per_nic_Bps=0.0,
        nic_line_rate_Bps=float(np.median(nic_caps)) if nic_caps else 0.0,
        intranode_per_gpu_Bps=0.0,
        bottleneck_links=sort_links(bottleneck_links(G, red, sol)),
        method="reduced",
        exact=True,
        reductions=tuple(reductions),
        planes=sc.planes,
        lp=lp_stats(sol),
        solve_seconds=time.perf_counter() - t0,
    )
