"""What a collective gets from a fabric: NVLink, NIC and network rates of a sub-cluster.

A collective on ``N`` GPUs, ``G`` per node, runs on the first ``N / G`` servers of the fabric
(servers in natural order of their ``node`` id) and, in each, on GPUs ``0 .. G-1`` and the NICs
those GPUs are cabled to over PCIe (NCCL uses the NICs local to its GPUs). From the graph:

- NVLink per GPU: the summed capacity of the GPU's ``nvlink`` edges (to its NVSwitch);
- per NIC: the tighter of its ``endpoint`` cable and its PCIe side (the NIC's ``pcie`` edges to
  the GPUs in use); per server, the sum over all of its NICs (all GPUs);
- across servers, the time to deliver each collective's server-to-server traffic pattern at
  once, by maximum concurrent flow (:func:`topo.flow.door.server_demand_time`; the all-to-all
  by :func:`topo.flow.alltoall_bandwidth`): a ring's neighbour exchange, a double binary tree's
  up and down traffic, the all-to-all (the :class:`topo.traffic.Demand` of each from
  :mod:`topo.traffic.collective`). This is where oversubscription and failed links enter.

All rates here are the fabric's raw capacities (B/s); the efficiencies of NCCL and of the
server are applied by :mod:`topo.collective.model`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field, replace
from typing import Any

import networkx as nx

from topo.collective.domains import select_domain_subcluster
from topo.errors import InfeasibleError, SolverError, TopoError
from topo.fabric import SWITCH_KINDS, named_servers, spans_hosts, switch_components
from topo.fabric import servers as server_vertices
from topo.flow import alltoall_bandwidth, links, server_demand_time
from topo.flow.exact import MET_TOL
from topo.traffic import Demand, double_binary_tree_step, ring_step, subcluster_alltoall

UNIT_BYTES = 1e9
"""Bytes per server pair used to pose the flow problems (any scale gives the same rates)."""


@dataclass(frozen=True)
class PatternRate:
    """How fast one server-to-server traffic pattern crosses the network.

    Attributes
    ----------
    seconds_per_byte : float
        LP time to deliver the pattern, per byte of its unit (s/B; see each pattern).
    node_bytes : float
        Most bytes any server sends or receives per byte of the unit (B/B).
    bottleneck : dict of str to int
        Binding link directions per tier, from the LP (empty if not solved by LP).
    method : str
        ``lp`` or a note on the fallback used.
    demand : Demand
        The pattern, in bytes per byte of its unit (server level; :mod:`topo.traffic.collective`).
    """

    seconds_per_byte: float
    node_bytes: float
    bottleneck: dict[str, int]
    method: str
    demand: Demand


@dataclass(frozen=True)
class FabricRates:
    """The fabric-derived rates of a sub-cluster (raw capacities, B/s).

    Attributes
    ----------
    fabric : str
        The fabric's name.
    gpus, nodes, gpus_per_node : int
        Ranks, servers, ranks per server.
    servers : list
        The server ids used, in order (the ring order).
    nvswitch : bool
        Every server used has an NVSwitch joined to its GPUs.
    nvlink_Bps : float
        NVLink capacity per GPU per direction, smallest over the GPUs used (0 if G = 1).
    nic_Bps : float
        Rate of one NIC in use (smallest): min(cable, PCIe side).
    nics_per_node : int
        NICs in use per server (smallest over the servers).
    gpu_nic_Bps : float
        NIC rate one GPU can use alone over its own PCIe-attached NICs (smallest).
    server_nic_Bps : float
        Sum of the rates of all NICs of a server (smallest server), whether in use or not.
    ring, tree, alltoall : PatternRate or None
        The patterns across servers (None on one server). ``ring``: unit = one byte from every
        server to the next in order. ``tree``: unit = one byte of all-reduce buffer, spread
        over NCCL's double binary tree (each tree carries half, up and down).
        ``alltoall``: unit = one byte from every GPU to every GPU of the other servers.
    pxn : bool
        NCCL's PXN in use for alltoall and send/recv (``NCCL_PXN_DISABLE`` unset): a GPU's
        bytes for another rail's NIC cross NVLink first (the model's NVLink forwarding term).
    """

    fabric: str
    gpus: int
    nodes: int
    gpus_per_node: int
    servers: list[Hashable]
    nvswitch: bool
    nvlink_Bps: float
    nic_Bps: float
    nics_per_node: int
    gpu_nic_Bps: float
    server_nic_Bps: float
    ring: PatternRate | None
    tree: PatternRate | None
    alltoall: PatternRate | None
    extra: dict[str, Any] = field(default_factory=dict)
    pxn: bool = True


def _inventory(G: nx.Graph) -> dict[Hashable, dict[str, list[Any]]]:
    """Servers with GPUs, in natural order: their GPUs, NICs and NVSwitches (natural order)."""
    inv: dict[Hashable, dict[str, list[Any]]] = {}
    for s, vertices in server_vertices(G).items():
        parts: dict[str, list[Any]] = {"gpu": [], "nic": [], "nvswitch": []}
        for v in vertices:
            parts[G.nodes[v]["kind"]].append(v)
        if parts["gpu"]:
            inv[s] = parts
    return inv


def select_subcluster(
    G: nx.Graph, gpus: int | None, gpus_per_node: int | None
) -> tuple[nx.Graph, list[Hashable], int, int]:
    """The sub-fabric a collective of ``gpus`` ranks, ``gpus_per_node`` per server, runs on.

    Parameters
    ----------
    G : networkx.Graph
        A fabric with GPUs (schema in :mod:`topo.fabric`).
    gpus : int, optional
        Ranks N (default: every GPU of the fabric, at ``gpus_per_node`` per server).
    gpus_per_node : int, optional
        Ranks per server G (default: the GPUs of a server, or N when N is fewer).

    Returns
    -------
    (networkx.Graph, list, int, int)
        The sub-fabric (every switch; of the first N/G servers only GPUs 0..G-1, the NICs
        cabled to them over PCIe, and the NVSwitch; ``G`` itself, not a copy, when that is
        every device of it), the server ids in order, N and G.

    Raises
    ------
    TopoError
        No GPUs; G < 1 or more than a server holds; N < 2, not a multiple of G, or more than
        the fabric's servers hold.

    Notes
    -----
    Where the servers are NVLink domains of several hosts (:func:`topo.fabric.spans_hosts`, a
    GB200 NVL72 rack of trays), G counts ranks per host and the NCCL node is the domain:
    :func:`topo.collective.domains.select_domain_subcluster`.
    """
    sub, servers, n, g, _ = _select(G, gpus, gpus_per_node)
    return sub, servers, n, g


def _select(
    G: nx.Graph, gpus: int | None, gpus_per_node: int | None
) -> tuple[nx.Graph, list[Hashable], int, int, dict[Hashable, dict[str, list[Any]]] | None]:
    """:func:`select_subcluster`, and ``G``'s inventory (None for NVLink domains)."""
    if spans_hosts(G):
        return (*select_domain_subcluster(G, gpus, gpus_per_node), None)
    inv = _inventory(G)
    if not inv:
        raise TopoError("the fabric has no GPUs: collectives need a built fabric with servers")
    order = list(inv)
    per_server = min(len(inv[s]["gpu"]) for s in order)
    if gpus_per_node is not None:
        g = gpus_per_node
    elif gpus is not None and 1 <= gpus < per_server:
        g = gpus  # fewer ranks than a server holds: one server
    else:
        g = per_server
    if g < 1:
        raise TopoError(f"gpus_per_node must be >= 1, got {g}", param="gpus_per_node")
    if g > per_server:
        raise TopoError(
            f"gpus_per_node {g} exceeds the {per_server} GPUs of the fabric's servers",
            param="gpus_per_node",
        )
    n = g * len(order) if gpus is None else gpus
    if n < 2:
        raise TopoError(f"gpus must be >= 2 (a collective needs two ranks), got {n}", param="gpus")
    if g > 1 and n % g:
        raise TopoError(
            f"gpus {n} must be a multiple of gpus_per_node {g}",
            param="gpus",
            names=("gpus", "gpus_per_node"),
        )
    nodes = max(1, n // g) if g > 1 else n
    if g == 1 and n > len(order):
        raise TopoError(
            f"gpus {n} at 1 GPU per node needs {n} servers; the fabric has {len(order)}",
            param="gpus",
        )
    if nodes > len(order):
        raise TopoError(
            f"gpus {n} at {g} per node needs {nodes} servers; the fabric has {len(order)} "
            f"(at most {g * len(order)} GPUs)",
            param="gpus",
        )
    chosen = order[:nodes]
    keep: set[Any] = {
        v for v, d in G.nodes(data=True) if d["kind"] not in ("gpu", "nic", "nvswitch")
    }
    for s in chosen:
        gset = inv[s]["gpu"][:g]
        keep.update(gset)
        keep.update(inv[s]["nvswitch"])
        for gv in gset:
            keep.update(w for w in G.neighbors(gv) if G.nodes[w]["kind"] == "nic")
    if len(keep) == G.number_of_nodes():
        return G, chosen, n, g, inv  # every device in use: no copy (16,384 GPUs cost ~1 s)
    return G.subgraph(keep).copy(), chosen, n, g, inv


def _nic_rates(G: nx.Graph, nics: list[Any]) -> list[float]:
    rates = []
    for nic in nics:
        edges = G.adj[nic].values()  # (as G.edges(nic, data=True), without a view per NIC)
        cable = sum(e["capacity"] for e in edges if e["kind"] == "endpoint")
        pcie = sum(e["capacity"] for e in edges if e["kind"] == "pcie")
        if cable > 0:
            rates.append(min(cable, pcie) if pcie > 0 else cable)
    return rates


def _pattern(
    G: nx.Graph,
    demand: Demand,
    nics: dict[Hashable, list[tuple[Any, Any, float]]] | None,
    switches: SwitchGraph,
) -> PatternRate:
    """Solve one pattern (given per byte of its unit) by max concurrent flow, posed at
    :data:`UNIT_BYTES` per unit; first by a routing that meets the servers' NIC bound
    (:func:`certified_pattern`, with the sub-fabric's server NICs and switch graph), else by
    the LP."""
    certified = _certified(G, demand, nics, switches)
    if certified is not None:
        return certified
    posed = demand.scaled(UNIT_BYTES)
    assert posed.entries is not None
    try:
        rep = server_demand_time(G, posed)
    except SolverError as exc:
        return _refused(demand, exc)
    return PatternRate(
        rep.time_s / UNIT_BYTES, demand.peak_bytes, dict(rep.bottleneck_tiers), "lp", demand
    )


def fabric_rates(
    G: nx.Graph,
    gpus: int | None = None,
    gpus_per_node: int | None = None,
    *,
    switches: SwitchGraph | None = None,
) -> FabricRates:
    """NVLink, NIC and network rates of the sub-cluster a collective runs on.

    Parameters
    ----------
    G : networkx.Graph
        A fabric with GPUs (schema in :mod:`topo.fabric`).
    gpus, gpus_per_node : int, optional
        Ranks and ranks per server (see :func:`select_subcluster`).
    switches : SwitchGraph, optional
        :func:`switch_graph` of ``G``, or of any fabric with the same switches and switch
        links (the sub-fabrics of one design a caller asks for in turn): built once there
        rather than per call. Default: built here.

    Returns
    -------
    FabricRates
        Raw capacities in B/s and the LP times of the ring, tree and all-to-all patterns.

    Raises
    ------
    TopoError
        Bad ``gpus`` / ``gpus_per_node``; GPUs of a server without NVLink while G > 1.
    InfeasibleError
        Servers with no path between them; a server with no NIC cabled to a switch while
        N/G > 1 (naming the first ones, :func:`topo.fabric.named_servers`).

    Examples
    --------
    >>> from topo.builders import build
    >>> G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    >>> r = fabric_rates(G, gpus=4)
    >>> r.nodes, r.nic_Bps / 1e9, round(1 / r.ring.seconds_per_byte / 1e9, 6)  # 2 x 400G
    (2, 50.0, 100.0)
    """
    sub, servers, n, g, of_G = _select(G, gpus, gpus_per_node)
    full = of_G if of_G is not None else _inventory(G)
    inv = full if sub is G else _inventory(sub)
    nodes = len(servers)
    nvswitch = all(inv[s]["nvswitch"] for s in servers)
    nvlink = math.inf
    gpu_nic = math.inf
    nic_rates: list[float] = []
    nics_per_node = 10**9
    server_nic = math.inf
    loose: list[Hashable] = []  # servers with no NIC cabled to a switch
    for s in servers:
        # NICs cabled to a switch, at min(cable, PCIe side to the GPUs in use): each once
        cabled = {w: r for w in inv[s]["nic"] for r in _nic_rates(sub, [w])}
        for gv in inv[s]["gpu"]:
            nv = sum(e["capacity"] for e in sub.adj[gv].values() if e["kind"] == "nvlink")
            nvlink = min(nvlink, nv)
            own = 0.0
            for w in sub.neighbors(gv):
                if w in cabled:
                    sharers = sum(1 for x in sub.neighbors(w) if sub.nodes[x]["kind"] == "gpu")
                    own += cabled[w] / sharers
            gpu_nic = min(gpu_nic, own)
        nic_rates += cabled.values()
        nics_per_node = min(nics_per_node, len(cabled))
        if not cabled:
            loose.append(s)
        every = cabled.values() if sub is G else _nic_rates(G, full[s]["nic"])
        server_nic = min(server_nic, sum(every))
    if g > 1 and nvlink <= 0:
        raise TopoError(
            "GPUs without NVLink: intra-node collectives over PCIe are not modelled "
            "(the servers need an NVSwitch joined to their GPUs)"
        )
    if nodes > 1 and loose:
        raise InfeasibleError(
            f"{named_servers(G, loose)} in use {'has' if len(loose) == 1 else 'have'} no NIC "
            "cabled to a switch: collectives across servers need one"
        )
    if nodes > 1 and switches is None:
        switches = switch_graph(sub)
    ring, tree, a2a = _patterns(sub, servers, g, inv, switches)
    return FabricRates(
        fabric=str(G.graph.get("name", "fabric")),
        gpus=n,
        nodes=nodes,
        gpus_per_node=g,
        servers=servers,
        nvswitch=nvswitch,
        nvlink_Bps=0.0 if g == 1 else float(nvlink),
        nic_Bps=min(nic_rates) if nic_rates else 0.0,
        nics_per_node=nics_per_node if nic_rates else 0,
        gpu_nic_Bps=0.0 if math.isinf(gpu_nic) else float(gpu_nic),
        server_nic_Bps=0.0 if math.isinf(server_nic) else float(server_nic),
        ring=ring,
        tree=tree,
        alltoall=a2a,
    )


def _refused(demand: Demand, exc: SolverError) -> PatternRate:
    """Too large for an exact LP: the model falls back to the servers' NIC totals."""
    return PatternRate(0.0, demand.peak_bytes, {}, f"LP refused ({exc}); NIC-bound only", demand)


def _alltoall_pattern(sub: nx.Graph, servers: list[Hashable], g: int) -> PatternRate:
    """Uniform all-to-all across servers: unit = one byte per ordered pair of GPUs on
    different servers. The sub-fabric holds exactly the collective's GPUs, so its uniform
    all-to-all (solved with the symmetry reductions of :func:`topo.flow.alltoall_bandwidth`)
    is this demand; its pair rate lambda gives the time 1/lambda per unit."""
    demand = subcluster_alltoall(servers, g)
    try:
        rep = alltoall_bandwidth(sub)
    except SolverError as exc:
        return _refused(demand, exc)
    lam = rep.pair_rate_Bps
    return PatternRate(1.0 / lam, demand.peak_bytes, dict(rep.bottleneck_tiers), "lp", demand)


def _patterns(
    sub: nx.Graph,
    servers: list[Hashable],
    g: int,
    inv: dict[Hashable, dict[str, list[Any]]],
    switches: SwitchGraph | None,
) -> tuple[PatternRate | None, PatternRate | None, PatternRate | None]:
    """Ring, tree and all-to-all across the servers (None on one server); the server NICs
    (of the inventory ``inv``) and the switch graph found once for the ring and the tree."""
    if len(servers) < 2:
        return None, None, None
    assert switches is not None
    nics = _server_nics(sub, inv)
    ring = _pattern(sub, ring_step(servers), nics, switches)
    tree = _pattern(sub, double_binary_tree_step(servers), nics, switches)
    return ring, tree, _alltoall_pattern(sub, servers, g)


CERTIFY_WORK = 50_000_000
"""Most (destination switch x switch link) steps :func:`certified_pattern` spends on its
routing before leaving a pattern to the LP (a few seconds of Python)."""


def certified_pattern(G: nx.Graph, demand: Demand) -> PatternRate | None:
    """A server-level pattern's exact time, from a routing that meets the servers' NIC bound.

    No schedule delivers a server's bytes faster than its NICs send or receive them: with
    ``R_s`` the sum over server ``s``'s cabled NICs of min(cable, PCIe side) (the capacity of
    the server in the LP's contraction, :mod:`topo.flow.exact.matrix`), the time per unit is at
    least ``T = max_s max(out_s, in_s) / R_s``. The routing here splits each pair's bytes over
    the switch components (planes) both servers reach, in proportion to the smaller of their
    shares of NIC capacity there; inside a component, over the sender's and the receiver's
    NICs in proportion to their rates; between the two NICs' switches, at every switch over
    the links one hop nearer the destination in proportion to their capacity (shortest paths,
    ECMP by capacity). When no NIC and no switch link then carries more than its capacity
    times ``T`` (to :data:`topo.flow.exact.cuts.MET_TOL`), the routing delivers the pattern in
    ``T``: by weak duality ``T`` is the LP's optimum (the max concurrent flow, Shahrokhi and
    Matula, J. ACM 37(2), 1990), found without it. Non-blocking two- and three-layer fat
    trees, MRFTs and MPFTs of identical servers meet it for the ring and tree steps;
    oversubscribed or damaged fabrics usually do not.

    Parameters
    ----------
    G : networkx.Graph
        The sub-fabric of a collective (:func:`select_subcluster`).
    demand : Demand
        A server-level pattern, bytes per byte of its unit (:mod:`topo.traffic.collective`).

    Returns
    -------
    PatternRate or None
        ``seconds_per_byte = T`` (s/B), ``method`` ``"certified"``, the bottleneck the NIC
        cables of the first server (in the demand's order) whose bound is ``T``, in the
        direction that binds (send first); None when the routing does not meet the bound,
        the demand is not server level, a NIC has several cables, a pair shares no switch
        component, or the routing would cost more than :data:`CERTIFY_WORK` steps: then the
        LP decides.

    Examples
    --------
    >>> from topo.builders import build
    >>> from topo.traffic import ring_step
    >>> G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    >>> r = certified_pattern(G, ring_step([0, 1, 2]))
    >>> r.method, 1 / r.seconds_per_byte / 1e9  # each server sends 1 B per unit on 2 x 50 GB/s
    ('certified', 100.0)
    """
    return _certified(G, demand, _server_nics(G, _inventory(G)), switch_graph(G))


def _certified(
    G: nx.Graph,
    demand: Demand,
    nics: dict[Hashable, list[tuple[Any, Any, float]]] | None,
    switches: SwitchGraph,
) -> PatternRate | None:
    """:func:`certified_pattern` with ``G``'s server NICs and switch graph given."""
    if demand.level != "server" or not demand.entries or nics is None:
        return None
    total = {s: sum(r for _, _, r in ns) for s, ns in nics.items()}
    out: dict[Hashable, float] = {}
    into: dict[Hashable, float] = {}
    for (a, b), x in demand.entries.items():
        if a not in nics or b not in nics or a == b or not total[a] or not total[b]:
            return None
        out[a] = out.get(a, 0.0) + x
        into[b] = into.get(b, 0.0) + x
    bound = max(
        max(x / total[s] for s, x in out.items()), max(x / total[s] for s, x in into.items())
    )
    comp = {v: i for i, c in enumerate(switch_components(G)) for v in c}
    flows = _switch_flows(demand, nics, total, comp, bound)
    if flows is None or not _routed_within(switches, flows, bound):
        return None
    return PatternRate(
        bound, demand.peak_bytes, _nic_bottleneck(G, demand, nics, total, out, into, bound),
        "certified", demand,
    )  # fmt: skip


def _server_nics(
    G: nx.Graph, inv: dict[Hashable, dict[str, list[Any]]]
) -> dict[Hashable, list[tuple[Any, Any, float]]] | None:
    """Each server of the inventory ``inv`` of ``G``: its cabled NICs as (NIC, its switch,
    min(cable, PCIe side) in B/s); None when a NIC has more than one cable (left to the LP's
    own contraction)."""
    nics: dict[Hashable, list[tuple[Any, Any, float]]] = {}
    for s, parts in inv.items():
        mine = []
        for nic in parts["nic"]:
            cables = [(w, e["capacity"]) for w, e in G.adj[nic].items() if e["kind"] == "endpoint"]
            if not cables:
                continue
            if len(cables) > 1:
                return None
            pcie = sum(e["capacity"] for e in G.adj[nic].values() if e["kind"] == "pcie")
            cap = cables[0][1]
            mine.append((nic, cables[0][0], float(min(cap, pcie) if pcie > 0 else cap)))
        nics[s] = mine
    return nics


def _switch_flows(
    demand: Demand,
    nics: dict[Hashable, list[tuple[Any, Any, float]]],
    total: dict[Hashable, float],
    comp: dict[Any, int],
    bound: float,
) -> dict[Any, dict[Any, float]] | None:
    """Bytes per unit from each switch to each destination switch (by destination), the
    pattern split over components and NICs as :func:`certified_pattern` says; None when a
    pair shares no component, or a NIC sends or receives more than its rate times ``bound``
    (servers whose shares of NIC capacity differ between components)."""
    by_comp: dict[Hashable, dict[int, list[tuple[Any, Any, float]]]] = {}
    for s, ns in nics.items():
        d: dict[int, list[tuple[Any, Any, float]]] = {}
        for nic, sw, r in ns:
            d.setdefault(comp[sw], []).append((nic, sw, r))
        by_comp[s] = d
    flows: dict[Any, dict[Any, float]] = {}
    sent: dict[Any, float] = {}
    got: dict[Any, float] = {}
    assert demand.entries is not None
    for (a, b), x in demand.entries.items():
        ca, cb = by_comp[a], by_comp[b]
        common = {
            c: (sum(r for _, _, r in ca[c]), sum(r for _, _, r in cb[c]))
            for c in ca.keys() & cb.keys()
        }
        share = {c: min(ra / total[a], rb / total[b]) for c, (ra, rb) in common.items()}
        norm = sum(share.values())
        if norm <= 0:
            return None
        for c, w in share.items():
            ra, rb = common[c]
            here = x * w / norm
            for na, _, xa in ca[c]:
                sent[na] = sent.get(na, 0.0) + here * xa / ra
            for nb, _, xb in cb[c]:
                got[nb] = got.get(nb, 0.0) + here * xb / rb
            for _, sa, xa in ca[c]:
                for _, sb, xb in cb[c]:
                    if sa != sb:
                        row = flows.setdefault(sb, {})
                        row[sa] = row.get(sa, 0.0) + here * (xa / ra) * (xb / rb)
    limit = bound * (1 + MET_TOL)
    rate = {nic: r for ns in nics.values() for nic, _, r in ns}
    if any(x > rate[n] * limit for load in (sent, got) for n, x in load.items()):
        return None
    return flows


@dataclass
class SwitchGraph:
    """A fabric's switches and switch links, for routing patterns over them many times.

    Attributes
    ----------
    adj : dict
        Switch -> {neighbouring switch: capacity of the link(s), B/s per direction}.
    links : int
        Switch link directions (the sum of the adjacency lists' lengths).
    layers : dict
        Destination switch -> its breadth-first layers (hop distance 0, 1, ...) and each
        switch's distance, filled as patterns are routed to it.
    near : dict
        (switch, destination switch) -> its links one hop nearer, with their shares of that
        capacity, filled likewise.
    """

    adj: dict[Any, dict[Any, float]]
    links: int
    layers: dict[Any, tuple[list[list[Any]], dict[Any, int]]] = field(default_factory=dict)
    near: dict[tuple[Any, Any], list[tuple[Any, float]]] = field(default_factory=dict)

    def towards(self, t: Any) -> tuple[list[list[Any]], dict[Any, int]]:
        """Breadth-first layers from switch ``t`` and each switch's hop distance to it."""
        got = self.layers.get(t)
        if got is None:
            dist = {t: 0}
            layers = [[t]]
            while layers[-1]:
                nxt = []
                for v in layers[-1]:
                    for w in self.adj[v]:
                        if w not in dist:
                            dist[w] = len(layers)
                            nxt.append(w)
                layers.append(nxt)
            got = self.layers[t] = (layers, dist)
        return got

    def nearer(self, v: Any, t: Any, dist: dict[Any, int]) -> list[tuple[Any, float]]:
        """Switch ``v``'s neighbours one hop nearer to ``t`` (``dist``: :meth:`towards`'s),
        each with its share of their summed capacity."""
        got = self.near.get((v, t))
        if got is None:
            d = dist[v] - 1
            down = [(w, c) for w, c in self.adj[v].items() if dist[w] == d]
            cap = sum(c for _, c in down)
            got = self.near[(v, t)] = [(w, c / cap) for w, c in down]
        return got


def switch_graph(G: nx.Graph) -> SwitchGraph:
    """The switches of ``G`` and the links between them (:class:`SwitchGraph`).

    Parameters
    ----------
    G : networkx.Graph
        A fabric (schema in :mod:`topo.fabric`).

    Returns
    -------
    SwitchGraph
        Capacities in B/s per direction.

    Examples
    --------
    >>> from topo.builders import build
    >>> s = switch_graph(build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2))
    >>> len(s.adj), s.links  # 8 leaves, 4 spines, every leaf on every spine, both ways
    (12, 64)
    """
    kind = dict(G.nodes(data="kind"))
    adj = {
        v: {w: float(e["capacity"]) for w, e in G.adj[v].items() if kind[w] in SWITCH_KINDS}
        for v, k in kind.items()
        if k in SWITCH_KINDS
    }
    return SwitchGraph(adj, sum(len(n) for n in adj.values()))


def _routed_within(switches: SwitchGraph, flows: dict[Any, dict[Any, float]], bound: float) -> bool:
    """Route each destination's flows over shortest switch paths, split at every switch over
    the links one hop nearer in proportion to their capacity; True when every switch link
    direction carries at most its capacity times ``bound`` (to :data:`MET_TOL`)."""
    adj = switches.adj
    if len(flows) * switches.links > CERTIFY_WORK:
        return False
    load: dict[tuple[Any, Any], float] = {}
    for t, sources in flows.items():
        layers, dist = switches.towards(t)
        at = dict(sources)
        for layer in reversed(layers[1:-1]):
            for v in layer:
                f = at.pop(v, 0.0)
                if f <= 0:
                    continue
                for w, share in switches.nearer(v, t, dist):
                    part = f * share
                    load[(v, w)] = load.get((v, w), 0.0) + part
                    at[w] = at.get(w, 0.0) + part
        if any(v != t and f > 0 for v, f in at.items()):
            return False  # a source not joined to its destination
    limit = bound * (1 + MET_TOL)
    return all(x <= adj[u][v] * limit for (u, v), x in load.items())


def _nic_bottleneck(
    G: nx.Graph,
    demand: Demand,
    nics: dict[Hashable, list[tuple[Any, Any, float]]],
    total: dict[Hashable, float],
    out: dict[Hashable, float],
    into: dict[Hashable, float],
    bound: float,
) -> dict[str, int]:
    """Binding link directions per tier: the NIC cables of the first server, in the demand's
    terminal order, whose send (else receive) bound is ``bound``; for a NIC whose PCIe side is
    below its cable (GPUDirect RDMA off, :func:`topo.builders.gdr.without_gdr`), its GPUs'
    PCIe links instead."""
    for s in demand.terminals:
        for flow, towards in ((out, False), (into, True)):
            if flow.get(s, 0.0) / total[s] >= bound * (1 - MET_TOL):
                dirs = []
                for nic, sw, r in nics[s]:
                    if r < G._adj[nic][sw]["capacity"]:
                        gpus = [g for g, e in G._adj[nic].items() if e["kind"] == "pcie"]
                        dirs += [(nic, g, r, r) if towards else (g, nic, r, r) for g in gpus]
                    else:
                        dirs.append((sw, nic, r, r) if towards else (nic, sw, r, r))
                return dict(sorted(Counter(b.tier for b in links(G, dirs)).items()))
    return {}


def crossing_ring(
    G: nx.Graph, gpus: int | None = None, gpus_per_node: int | None = None, *, shift: int = 1
) -> PatternRate:
    """The ring step across servers with every hop crossing rails (NIC-pinned).

    NCCL's ring graph enters a server on one NIC and leaves it on another when the search
    allows crossing (``NCCL_CROSS_NIC=1``, or 2 after a failed same-NIC search: "NET n -> GPU
    a -> .. -> GPU x -> NET m", NCCL 2.30 ``src/graph/search.cc``), and the server's exit NIC
    connects to the next server's entry NIC. Here each server ``s`` sends ``1/K`` of its
    ring byte from each of its ``K`` cabled NICs, NIC ``i`` to NIC ``(i + shift) mod K`` of
    the next server in ring order (the last to the first): every byte enters the network on
    one rail and leaves it on another, as rings do when NCCL does not alternate them
    (``src/graph/connect.cc`` swaps rings ``c`` and ``c^1`` on odd servers only for an even
    channel count; the swap is undone by the NVIDIA/nccl#1494 bug, and NVIDIA/nccl#2345 shows
    rings crossing rails). Unlike the designed ring (:func:`topo.traffic.ring_step`, where the
    LP picks any NIC of a server), the bytes are pinned to those NIC pairs and cannot cross
    over NVLink: on a rail-optimised fabric they climb to the spines.

    Parameters
    ----------
    G : networkx.Graph
        A fabric with GPUs (schema in :mod:`topo.fabric`).
    gpus, gpus_per_node : int, optional
        Ranks and ranks per server (see :func:`select_subcluster`).
    shift : int
        The NIC index offset of each hop (1: NIC ``i`` to NIC ``i + 1``).

    Returns
    -------
    PatternRate
        Unit = one byte from every server to the next (as the designed ring), ``seconds_per_byte``
        in s/B; ``method`` ``"certified"`` (the NIC bound met, :func:`certified_pattern`) or
        ``"lp"`` (maximum concurrent flow over the NICs as terminals,
        :func:`topo.flow.server_demand_time`); ``demand`` the NIC-level pattern.

    Raises
    ------
    TopoError
        Fewer than two servers; a server in use with fewer than two cabled NICs (no rail to
        cross); servers that are NVLink domains of several hosts; NIC cables not one per NIC;
        the LP too large (:class:`topo.errors.SolverError`).

    Examples
    --------
    >>> from topo.builders import build
    >>> G = build("mrft", gpus=64, gpus_per_node=8, nics_per_node=8, switch_ports=12,
    ...           oversubscription=2)
    >>> p = crossing_ring(G, 64, 8)   # 8 NICs x 1/8 B up 4 x 50 GB/s of each rail leaf
    >>> round(1 / p.seconds_per_byte / 1e9)
    200
    """
    sub, ring, _, _, inv = _select(G, gpus, gpus_per_node)
    if inv is None:
        raise TopoError("rings crossing rails are not modelled on multi-host NVLink domains")
    if len(ring) < 2:
        raise TopoError("a ring crossing rails needs two servers or more")
    mine = {s: {**inv[s], "nic": [v for v in inv[s]["nic"] if v in sub]} for s in ring}
    nics = _server_nics(sub, mine)
    if nics is None:
        raise TopoError("a NIC with more than one cable: rails crossed are not modelled")
    few = [s for s in ring if len(nics[s]) < 2]
    if few:
        raise TopoError(f"{named_servers(G, few)} in use has fewer than two cabled NICs")
    entries: dict[tuple[Hashable, Hashable], float] = {}
    for a, b in zip(ring, ring[1:] + ring[:1], strict=True):
        src, dst = nics[a], nics[b]
        for i, (nic, _, _) in enumerate(src):
            to = dst[(i + shift) % len(dst)][0]
            entries[(nic, to)] = entries.get((nic, to), 0.0) + 1.0 / len(src)
    every = tuple(nic for s in ring for nic, _, _ in nics[s])
    demand = Demand("server", every, entries, name="ring step crossing rails")
    own = {nic: [(nic, sw, r)] for s in ring for nic, sw, r in nics[s]}
    got = _certified(sub, demand, own, switch_graph(sub))
    if got is not None:
        return replace(got, node_bytes=1.0)
    H = _nics_as_endpoints(sub, own)
    posed = {k: x * UNIT_BYTES for k, x in entries.items()}
    rep = server_demand_time(H, posed)
    return PatternRate(rep.time_s / UNIT_BYTES, 1.0, dict(rep.bottleneck_tiers), "lp", demand)


def _nics_as_endpoints(
    sub: nx.Graph, own: dict[Hashable, list[tuple[Any, Any, float]]]
) -> nx.Graph:
    """The switches and switch links of ``sub`` and the NICs of ``own`` alone (no GPUs, so
    each NIC is a terminal), each NIC's cable at min(cable, PCIe side) (B/s)."""
    keep = [v for v, k in sub.nodes(data="kind") if k in SWITCH_KINDS]
    H = sub.subgraph(keep).copy()
    for nic, [(_, sw, rate)] in own.items():
        H.add_node(nic, **sub.nodes[nic])
        H.add_edge(nic, sw, **{**sub.edges[nic, sw], "capacity": rate})
    return H
