"""Time to deliver an arbitrary server-to-server traffic matrix over a fabric.

The all-to-all of :mod:`topo.flow.alltoall` is one traffic pattern; collectives (a ring's
neighbour exchange) and expert parallelism (an MoE layer's dispatch and combine) give others.
For a byte matrix ``D[a, b]`` between servers, the shortest time in which all of it can be
delivered at once is ``1 / theta``, where ``theta`` is the maximum concurrent flow of the demand
``D`` (bytes) on arc capacities in B/s (Shahrokhi and Matula, J. ACM 37(2), 1990): every pair
then flows at ``theta * D[a, b]`` B/s and finishes at the same moment, and no schedule finishes
sooner (a schedule finishing in ``T`` is, averaged over time, a concurrent flow with
``theta = 1/T``).

The model, and what it leaves out:

- **Servers are contracted** (as in :mod:`topo.flow.alltoall`): a server is one vertex joined to
  the switches its NICs reach, each NIC counting as the tighter of its cable and its PCIe side.
  Any NIC of a server may carry any of its GPUs' bytes (NVLink forwarding, NCCL's PXN), and
  NVLink inside a server is not a constraint here: callers account for intra-server traffic and
  NVLink themselves. Servers never forward other servers' traffic.
- **Planes are folded exactly**: when the switch graph is P isomorphic planes with every server
  attached identically to each (checked, as for the all-to-all), one plane carrying ``D / P`` is
  solved; averaging any solution over plane permutations shows this loses nothing.
- One commodity per source server, aggregated over its sinks (exact; see :mod:`topo.flow.lp`).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from topo.errors import InfeasibleError, LPTooLarge, TopoError
from topo.fabric import natural_key, switch_components
from topo.flow.hosts import hosts
from topo.flow.lp import DEFAULT_MAX_VARIABLES, Commodity, max_concurrent_flow
from topo.flow.network import Reduced, bottleneck_links, network
from topo.flow.planes import scope
from topo.flow.result import BottleneckLink


@dataclass(frozen=True)
class DemandReport:
    """How fast a server-to-server byte matrix crosses the fabric (:func:`server_demand_time`).

    Attributes
    ----------
    time_s : float
        Shortest time to deliver the whole matrix at once (s); ``1 / theta``.
    theta : float
        Maximum concurrent flow of the demand: every pair ``(a, b)`` can flow at
        ``theta * demand[a, b]`` B/s simultaneously (1/s).
    total_bytes : float
        Sum of the demand (B).
    bottleneck_tiers : dict of str to int
        Binding link directions per tier, e.g. ``{"nic->leaf": 16}``.
    bottleneck_links : list of BottleneckLink
        The link directions whose capacity binds (positive shadow price).
    planes : int
        Planes folded into one (1 when no plane decomposition applied).
    reductions : list of str
        What was reduced and how it was checked.
    lp_variables : int
        Flow variables of the LP solved.
    solve_seconds : float
        Wall time of the whole call (s).
    """

    time_s: float
    theta: float
    total_bytes: float
    bottleneck_tiers: dict[str, int]
    bottleneck_links: list[BottleneckLink]
    planes: int
    reductions: list[str]
    lp_variables: int
    solve_seconds: float
    extra: dict[str, Any] = field(default_factory=dict)


def server_demand_time(
    G: nx.Graph,
    demand: Mapping[tuple[Hashable, Hashable], float],
    *,
    max_variables: int = DEFAULT_MAX_VARIABLES,
) -> DemandReport:
    """Shortest time to deliver a server-to-server byte matrix over the fabric's network.

    Parameters
    ----------
    G : networkx.Graph
        A fabric (schema in :mod:`topo.fabric`).
    demand : Mapping[(a, b), float]
        Bytes from server ``a`` to server ``b``. Servers are the ``node`` attribute of the GPUs
        (ints for built fabrics); on fabrics without GPUs (imported dumps) they are the host
        endpoints' vertex names. ``a != b``; zero entries are ignored.
    max_variables : int
        Refuse LPs with more flow variables than this (memory guard).

    Returns
    -------
    DemandReport
        ``time_s = 1 / theta``, with the binding links.

    Raises
    ------
    TopoError
        A pair names an unknown server, a server sends to itself, or a byte count is negative,
        not finite, or all are zero.
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
    t0 = time.perf_counter()
    hs, terminal = hosts(G)
    by_id = {h.id: h for h in hs}
    clean: dict[tuple[Hashable, Hashable], float] = {}
    for (a, b), x in demand.items():
        for s in (a, b):
            if s not in by_id:
                what = "server" if terminal == "gpu" else "host endpoint"
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
    used = sorted({s for pair in clean for s in pair}, key=natural_key)
    loose = [s for s in used if not by_id[s].attach]
    if loose:
        raise InfeasibleError(
            f"{len(loose)} server(s) in the demand have no NIC cabled to a switch "
            f"(e.g. {', '.join(map(str, loose[:3]))})"
        )
    sc = scope(G, hs)
    reductions = []
    if terminal == "gpu":
        reductions.append(f"server contraction: {len(used)} servers (NVLink not modelled)")
    if sc.planes > 1:
        reductions.append(f"plane decomposition: {sc.planes} isomorphic planes, one solved")
    elif sc.copies is not None:
        reductions.append("plane merging: identical planes solved as one of multiplied capacity")
    # Every pair must be joined through the switches of the scope.
    where = {v: i for i, c in enumerate(switch_components(G)) for v in c}
    for a, b in clean:
        ca = {where[s] for s in by_id[a].attach if s in sc.switches}
        cb = {where[s] for s in by_id[b].attach if s in sc.switches}
        if not ca & cb:
            raise InfeasibleError(f"no path from server {a!r} to server {b!r}: the rate is 0")

    index = {s: i for i, s in enumerate(used)}
    classes = [[by_id[s]] for s in used]
    arcs, cap, origin = network(G, sc, classes)
    sinks: dict[int, dict[Hashable, float]] = {}
    for (a, b), x in clean.items():
        sinks.setdefault(index[a], {})[("in", index[b])] = x / sc.planes
    commodities = [Commodity(source=("out", ci), demands=sinks[ci]) for ci in sorted(sinks)]
    red = Reduced(
        classes=classes, arcs=arcs, capacity=cap, origin=origin, commodities=commodities, sc=sc
    )
    # Size first (each commodity may use every arc but the other sources' out-arcs), so a
    # refused LP costs nothing.
    out_arcs = Counter(o[1] for o in origin if o[0] == "up")
    total_out = sum(out_arcs.values())
    n_vars = sum(len(arcs) - total_out + out_arcs[ci] for ci in sinks)
    if n_vars > max_variables:
        raise LPTooLarge(
            f"the demand LP would have {n_vars:,} variables, over the limit of "
            f"{max_variables:,} ({len(sinks):,} sending servers)"
        )
    sol = max_concurrent_flow(
        arcs,
        red.capacity,
        commodities,
        commodity_arcs=[red.commodity_arcs(ci) for ci in sorted(sinks)],
        max_variables=max_variables,
    )
    links = bottleneck_links(G, red, sol)
    return DemandReport(
        time_s=1.0 / sol.theta,
        theta=sol.theta,
        total_bytes=sum(clean.values()),
        bottleneck_tiers=dict(sorted(Counter(b.tier for b in links).items())),
        bottleneck_links=sorted(links, key=lambda b: (b.tier, natural_key(b.source))),
        planes=sc.planes,
        reductions=reductions,
        lp_variables=sol.variables,
        solve_seconds=time.perf_counter() - t0,
    )
