"""Certified bounds on the all-to-all of direct networks (Slim Fly, Dragonfly): router-level LPs.

The exact LP of a direct network has one commodity per class of servers, and Slim Fly's and
Dragonfly's servers fall into thousands of classes (every router holds its own), so it is far
too large. This module bounds the all-to-all rate ``lambda`` (B/s per ordered GPU pair) from
both sides with LPs over the routers alone (``docs/bandwidth.md``, "Direct networks").

**The routing (lower bound).** Every server splits its traffic over the switches it is cabled
to in proportion to its capacity there (each NIC the tighter of its cable and PCIe, as in the
server contraction of :mod:`topo.flow.reduce.servers`), so router ``s`` sends and receives for
``m_s = sum_h w_h a_hs / A_h`` GPUs (``w_h`` GPUs of server ``h``, ``a_hs`` its capacity to
``s``, ``A_h`` its total). Between routers it carries ``m_max^2`` per ordered pair of routers
with terminals (at least what the GPUs need: ``m_s m_t <= m_max^2``), routed by one of:

- *orbit LP*: the exact router-level max concurrent flow of that uniform demand, folded by the
  router graph's automorphism group (found by bliss through python-igraph, each generator
  checked arc by arc): one commodity per orbit of routers, one capacity row per orbit of arcs,
  as :func:`topo.flow.reduce.symmetry.solve_symmetric` (average any solution over the group), then
  each commodity averaged over the stabiliser of its source (:func:`orbit_rate`). bliss finds
  one router orbit on Slim Fly q=5 (the Hoffman-Singleton graph) and two on q=27;
- *group split LP* (Dragonfly): minimal routes, local-global-local, with each ordered pair of
  groups' traffic split over the global links between them by an LP that minimises the
  highest link utilisation (Kim et al., ISCA 2008, minimal routing; the split is ours).

The server's cables then carry ``lambda w_h (n - w_h) a_hs / A_h`` each way (the server cut,
met with equality) and its inside is checked by :func:`topo.flow.reduce.server_check.inside_theta`;
the lower bound is ``min(router rate, server cut) x min(1, theta)``.

**The dual (upper bound).** For any lengths ``l >= 0`` on the arcs, every feasible flow has
``sum_a c_a l_a >= lambda sum_pairs dist_l(pair)`` (LP duality of the max concurrent flow;
Shahrokhi and Matula, J. ACM 37(2), 1990), so ``lambda <= sum_a c_a l_a / sum_pairs
dist_l``. The lengths are the orbit LP's duals on the router arcs (uniform lengths without
it), 0 on NVLink, PCIe and the cables of servers on one router, and ``t d / 2`` on the cables
of a server on several routers (``d`` the longest distance from one of its routers to another,
either way round, so at ``t >= 1`` no path through its NVLink is shorter than the routers' own;
``t`` over :data:`EPS_GRID`, the least bound kept); the distances are shortest paths over the
routers and through such servers' NVLink (two of their cables; of parallel arcs the shortest).
With uniform lengths this is the distance bound. The tighter of it and the cut bound of
:mod:`topo.flow.exact.certify` is kept.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import networkx as nx
import numpy as np

from topo.fabric import SWITCH_KINDS, natural_key
from topo.flow.bounds.router_lp import RouterNet, dual_value, folded_lp, router_distances, split_lp
from topo.flow.reduce.server_check import inside_theta
from topo.flow.reduce.servers import ContractedServer, terminal_count
from topo.flow.solve.memory import memory_limit_bytes

MAX_ROUTER_ORBITS = 64
"""Most orbits of terminal routers the folded router-level LP takes (one stabiliser and one
commodity each)."""

DISTANCE_BYTES = 24
"""Bytes per router pair the dual bound holds at once (distance matrices, float64): it is
skipped where that exceeds :func:`topo.flow.solve.memory.memory_limit_bytes`."""

SPLIT_LP_BYTES_PER_ENTRY = 200
"""Peak memory of the Dragonfly group-split LP per matrix entry (the arrays and HiGHS' own),
bytes: measured on the 511-group Dragonfly of the DeepSeek-V3 report's Table 3 (16.5 million
entries, 3.24 GB). The LP is skipped where it would exceed
:func:`topo.flow.solve.memory.memory_limit_bytes`."""

EPS_GRID = (0.0, 0.5, 0.75, 1.0, 1.5)
"""Cable lengths tried in the dual bound for servers cabled to several routers, as multiples
of half the distance between their routers (:func:`dual_bound`)."""


def router_net(G: nx.Graph, hs: list[ContractedServer]) -> RouterNet | None:
    """The router-level view of ``G``; None if a host has no cable or the switches are not
    connected."""
    routers = sorted((v for v, k in G.nodes(data="kind") if k in SWITCH_KINDS), key=natural_key)
    index = {s: i for i, s in enumerate(routers)}
    tail, head, cap = [], [], []
    for u, v, e in G.edges(data=True):
        if u in index and v in index:
            c = float(e["capacity"])
            tail += [index[u], index[v]]
            head += [index[v], index[u]]
            cap += [c, c]
    S = nx.Graph()
    S.add_nodes_from(range(len(routers)))
    S.add_edges_from(zip(tail, head, strict=True))
    if not routers or not nx.is_connected(S):
        return None
    mass = np.zeros(len(routers))
    host_routers, host_share = [], []
    for h in hs:
        total = sum(h.attach.values())
        if total <= 0:
            return None
        rs = np.array([index[s] for s in h.attach], dtype=np.int64)
        share = np.array([c / total for c in h.attach.values()])
        np.add.at(mass, rs, h.weight * share)
        host_routers.append(rs)
        host_share.append(share)
    return RouterNet(
        routers,
        np.array(tail, dtype=np.int64),
        np.array(head, dtype=np.int64),
        np.array(cap),
        mass,
        host_routers,
        host_share,
    )


def automorphisms(net: RouterNet, fix: int | None = None) -> list[np.ndarray]:
    """Generators of the automorphism group of the router graph that keep capacities and
    which routers hold terminals (and router ``fix``, if given: its stabiliser), each checked
    arc by arc (bliss, through python-igraph).

    Links of different capacities are told apart by a coloured vertex on each link.

    Returns
    -------
    list of numpy.ndarray of int, shape (routers,)
        Each generator as the image of every router; only those that move some router.
    """
    import igraph as ig

    n = net.n
    fwd = net.tail < net.head
    u, v, c = net.tail[fwd], net.head[fwd], net.cap[fwd]
    levels, cap_class = np.unique(c, return_inverse=True)
    color = list((net.mass > 0).astype(int))
    if fix is not None:
        color[fix] = -1
    if len(levels) == 1:
        g = ig.Graph(n=n, edges=list(zip(u.tolist(), v.tolist(), strict=True)))
    else:
        mid = np.arange(n, n + len(u))
        edges = np.concatenate((np.stack((u, mid), 1), np.stack((mid, v), 1)))
        g = ig.Graph(n=n + len(u), edges=edges.tolist())
        color += (2 + cap_class).tolist()
    color = [c + 1 for c in color]  # bliss wants colours >= 0
    gens = []
    for perm in g.automorphism_group(sh="fl", color=color):
        p = np.asarray(perm[:n], dtype=np.int64)
        ok = fix is None or p[fix] == fix
        if ok and np.any(p != np.arange(n)) and _is_automorphism(net, p):
            gens.append(p)
    return gens


def _is_automorphism(net: RouterNet, p: np.ndarray) -> bool:
    """Does ``p`` map every arc onto an arc of the same capacity, and terminals onto
    terminals?"""
    if sorted(p.tolist()) != list(range(net.n)):
        return False
    if np.any((net.mass[p] > 0) != (net.mass > 0)):
        return False
    image, hit = _arc_lookup(net, p)
    return bool(hit.all() and np.array_equal(net.cap[image], net.cap))


def orbits(size: int, images: list[np.ndarray]) -> np.ndarray:
    """Orbit label of each of ``size`` items under the permutations ``images`` (each the image
    of every item): the connected components of the graph joining every item to its images."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    src = np.concatenate([np.arange(size)] + [np.arange(size)] * len(images))
    dst = np.concatenate([np.arange(size)] + list(images))
    graph = csr_matrix((np.ones(len(src)), (src, dst)), shape=(size, size))
    _, label = connected_components(graph, directed=False)
    return np.asarray(label, dtype=np.int64)


@dataclass(frozen=True)
class RouterRate:
    """A router-level routing that carries every GPU pair's traffic between routers.

    Attributes
    ----------
    pair_rate_Bps : float
        The GPU pair rate it carries on the router links (B/s).
    lengths : numpy.ndarray or None, shape (arcs,)
        Dual lengths of the router arcs (orbit LP only), any positive scale.
    how : str
        What it is.
    """

    pair_rate_Bps: float
    lengths: np.ndarray | None
    how: str


def orbit_rate(
    net: RouterNet, max_variables: int, time_limit_s: float | None = None
) -> RouterRate | None:
    """The exact router-level rate of the uniform demand, folded twice by the automorphisms;
    None with fewer than two terminal routers, a folded LP over ``max_variables`` columns, or
    one HiGHS does not solve within ``time_limit_s`` seconds (None: no limit).

    First the group ``A``: one commodity per orbit of terminal routers (its representative
    ``r`` sends 1 to every other terminal router), one capacity row per ``A``-orbit ``O`` of
    arcs, ``sum_r |orbit(r)| sum_{b in O} x_r(b) <= c_O |O|`` (:func:`topo.flow.reduce.symmetry.
    solve_symmetric`). Then each commodity by the stabiliser ``A_r``, which leaves its demand
    unchanged: averaged over ``A_r``, its flow is equal on every ``A_r``-orbit ``B`` of arcs,
    so one column ``y_{r,B}`` per such orbit, and conservation holds at every router of an
    ``A_r``-orbit once it holds at one.
    """
    terms = np.flatnonzero(net.mass > 0)
    if len(terms) < 2:
        return None
    gens = automorphisms(net)
    v_orbit = orbits(net.n, gens)
    reps = [int(terms[v_orbit[terms] == o][0]) for o in np.unique(v_orbit[terms])]
    if len(reps) > MAX_ROUTER_ORBITS:
        return None
    a_orbit = orbits(len(net.tail), [arc_image(net, p) for p in gens])
    parts = [_commodity_part(net, r) for r in reps]
    if sum(len(p[1]) for p in parts) > max_variables:
        return None
    weight = [float(np.count_nonzero(v_orbit[terms] == v_orbit[r])) for r in reps]
    out = folded_lp(net, a_orbit, parts, weight, time_limit_s)
    if out is None:
        return None
    lam, lengths = out
    m = float(net.mass.max())
    n_rows = int(a_orbit.max()) + 1
    how = (
        f"router-level LP of {m:g}^2 per router pair, folded by the routers' automorphisms "
        f"({len(reps)} router orbit(s), {n_rows} arc orbit(s), "
        f"{sum(len(p[1]) for p in parts)} columns)"
    )
    return RouterRate(lam / m**2, lengths, how)


def arc_image(net: RouterNet, p: np.ndarray) -> np.ndarray:
    """Index of the image of every arc under the router automorphism ``p``."""
    return _arc_lookup(net, p)[0]


def _arc_lookup(net: RouterNet, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For every arc ``(u, v)``: the index of the arc ``(p[u], p[v])`` (any arc where there is
    none) and whether there is one."""
    key = net.tail * net.n + net.head
    order = np.argsort(key)
    image = p[net.tail] * net.n + p[net.head]
    pos = np.minimum(np.searchsorted(key[order], image), len(key) - 1)
    return np.asarray(order[pos]), key[order][pos] == image


def _commodity_part(net: RouterNet, r: int) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """Commodity ``r`` folded by its stabiliser: (``r``, size of each arc orbit ``B``, the
    orbit of every arc, one representative router per router orbit)."""
    stab = automorphisms(net, fix=r)
    b_label = orbits(len(net.tail), [arc_image(net, p) for p in stab])
    sizes = np.bincount(b_label)
    c_label = orbits(net.n, stab)
    _, first = np.unique(c_label, return_index=True)
    return r, sizes, b_label, first


def dragonfly_groups(G: nx.Graph, net: RouterNet) -> np.ndarray | None:
    """Group of each router of a Dragonfly built by topo (``g{i}/r{r}``); None otherwise."""
    if G.graph.get("family") != "dragonfly":
        return None
    found = [re.fullmatch(r"g(\d+)/r\d+", s) for s in net.routers]
    if any(f is None for f in found):
        return None
    return np.array([int(f.group(1)) for f in found if f is not None], dtype=np.int64)


def group_split_rate(
    G: nx.Graph, net: RouterNet, max_variables: int, time_limit_s: float | None = None
) -> RouterRate | None:
    """Minimal Dragonfly routing with each group pair's traffic split over its global links
    by an LP (module notes); None if ``G`` is not such a Dragonfly, two routers of a group
    have no path of one or two local links, the LP would have more than ``max_variables``
    rows and columns or need more than the memory limit (:data:`SPLIT_LP_BYTES_PER_ENTRY`), or
    HiGHS does not solve it within ``time_limit_s`` seconds (None: no limit)."""
    grp = dragonfly_groups(G, net)
    if grp is None or len(net.tail) + net.n > max_variables:
        return None
    glob = int(np.count_nonzero(grp[net.tail] != grp[net.head]))
    entries = glob * (2 * int(np.bincount(grp).max()) - 1)  # 1 global + 2(a - 1) local rows
    if entries * SPLIT_LP_BYTES_PER_ENTRY > memory_limit_bytes():
        return None
    mu = split_lp(net, grp, time_limit_s)
    if mu is None or mu <= 0:
        return None
    return RouterRate(
        1.0 / mu,
        None,
        "Dragonfly minimal routing (local, global, local), each group pair split over its "
        "global links by an LP",
    )


def host_cut_rate(hs: list[ContractedServer]) -> float:
    """The pair rate (B/s) at which the proportional split fills every server's cables."""
    n = terminal_count(hs)
    return min(sum(h.attach.values()) / (h.weight * (n - h.weight)) for h in hs)


def inside_factor(
    G: nx.Graph, hs: list[ContractedServer], net: RouterNet, lam: float, terminal: str
) -> float:
    """``min(1, theta)`` of every distinct server at pair rate ``lam`` (its NVLink and PCIe
    carrying its proportional split); 1 for endpoint fabrics."""
    if terminal != "gpu":
        return 1.0
    n = terminal_count(hs)
    done: dict[tuple[object, ...], float] = {}
    worst = 1.0
    for i, h in enumerate(hs):
        flow = lam * h.weight * (n - h.weight)
        loads = [
            (net.routers[r], flow * s, flow * s)
            for r, s in zip(net.host_routers[i], net.host_share[i], strict=True)
        ]
        key = (h.inner_sig, tuple(sorted(round(s, 9) for s in net.host_share[i])))
        if key not in done:
            done[key] = inside_theta(G, h, loads, lam)
        worst = min(worst, done[key])
    return max(0.0, worst)


def nvlink_span(net: RouterNet, dist: np.ndarray) -> np.ndarray:
    """Per host, the longest distance from one of the routers it is cabled to to another.

    The dual distances need not be symmetric (on Slim Fly q=27 only the arcs from one half of
    the routers to the other have a length), so both ways round count: a server whose NVLink
    costs at least this is no shortcut between any two of its routers. The least distance
    instead let a server on an ``x`` and an ``m`` router carry every ``m -> x`` path at no
    cost (Slim Fly q=27: an upper bound of 45.18 GB/s instead of 44.08).

    Parameters
    ----------
    net : RouterNet
        The routers and each host's routers.
    dist : numpy.ndarray, shape (routers, routers)
        Router distances (:func:`topo.flow.bounds.router_lp.router_distances`), any length unit.

    Returns
    -------
    numpy.ndarray, shape (hosts,)
        In the unit of ``dist``; 0 for a host on one router.
    """
    return np.array([float(dist[np.ix_(rs, rs)].max()) for rs in net.host_routers])


def dual_bound(
    hs: list[ContractedServer], net: RouterNet, lengths: np.ndarray | None
) -> tuple[float, str] | None:
    """The least dual upper bound (B/s) over the cable lengths of :data:`EPS_GRID` (module
    notes); None if no finite bound results.

    A server cabled to several routers ``R`` gets ``t d(R) / 2`` on each of its cables, ``d(R)``
    its :func:`nvlink_span`, for each ``t`` of the grid: at ``t >= 1`` its NVLink (two cables,
    ``t d(R)``) is no shorter path between two of its routers than the router links; every
    other server's cables get 0.
    """
    base_len = np.ones(len(net.tail)) if lengths is None else np.asarray(lengths, dtype=float)
    if not np.any(base_len > 0):
        return None
    base = router_distances(net, base_len)
    span = nvlink_span(net, base)
    best = (math.inf, 0.0)
    for t in EPS_GRID:
        ub = dual_value(hs, net, base_len, t * span / 2, base)
        if ub < best[0]:
            best = (ub, t)
    if not math.isfinite(best[0]):
        return None
    kind = "router LP duals" if lengths is not None else "uniform router-link lengths"
    return float(best[0]), (
        f"LP duality with {kind}; the cables of servers on several routers at {best[1]:g} x "
        "half the longest distance between their routers"
    )


def direct_bounds(
    G: nx.Graph,
    hs: list[ContractedServer],
    terminal: str,
    max_variables: int,
    time_limit_s: float | None = None,
) -> tuple[tuple[float, str], tuple[float, str]] | None:
    """Lower and upper bounds (B/s, with what they are) on the all-to-all pair rate of a fabric
    whose routers are too many for the exact LP (module notes); None where no router-level
    bound applies.

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    hs : list of ContractedServer
        Its hosts.
    terminal : {"gpu", "endpoint"}
        What the terminals are.
    max_variables : int
        Largest router-level LP to build (columns; rows too for the Dragonfly split).
    time_limit_s : float, optional
        HiGHS time limit of each router-level LP (s; None: none); one not solved in it gives
        no bound.

    Returns
    -------
    ((lower B/s, how), (upper B/s, how)) or None
        The lower bound is achieved by a routing checked on every link; the upper bound holds
        for every routing.
    """
    if any(d.get("tier", 1) != 1 for _, d in G.nodes(data=True) if d.get("kind") in SWITCH_KINDS):
        return None  # a tiered fabric (fat tree): its own bounds apply
    net = router_net(G, hs)
    if net is None or terminal_count(hs) < 2:
        return None
    rates = [
        r
        for r in (
            orbit_rate(net, max_variables, time_limit_s),
            group_split_rate(G, net, max_variables, time_limit_s),
        )
        if r is not None
    ]
    if not rates:
        return None
    best = max(rates, key=lambda r: r.pair_rate_Bps)
    cut = host_cut_rate(hs)
    lam = min(best.pair_rate_Bps, cut)
    lam *= inside_factor(G, hs, net, lam, terminal)
    orbit = next((r for r in rates if r.lengths is not None), None)
    ub = None
    if DISTANCE_BYTES * net.n**2 <= memory_limit_bytes():
        ub = dual_bound(hs, net, orbit.lengths if orbit is not None else None)
    lower = (float(lam), best.how + ("" if lam < cut else "; servers' cables full"))
    return lower, ub if ub is not None else (math.inf, "no dual bound")


__all__ = [
    "DISTANCE_BYTES",
    "EPS_GRID",
    "SPLIT_LP_BYTES_PER_ENTRY",
    "MAX_ROUTER_ORBITS",
    "RouterNet",
    "RouterRate",
    "automorphisms",
    "direct_bounds",
    "dragonfly_groups",
    "dual_bound",
    "group_split_rate",
    "host_cut_rate",
    "inside_factor",
    "nvlink_span",
    "orbit_rate",
    "orbits",
    "router_net",
]
