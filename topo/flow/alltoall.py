"""All-to-all bandwidth of a fabric: maximum concurrent flow with exact reductions.

The question: every GPU (for imported fabrics, every host endpoint) sends to every other at the
same rate ``lambda`` at once; what is the largest ``lambda``? That is the maximum concurrent
multicommodity flow of the uniform all-to-all demand (:mod:`topo.flow.lp`). Flows may take any
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
import re
import time
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from typing import Any

import networkx as nx
import numpy as np

from topo.errors import InfeasibleError, LPTimeLimit, LPTooLarge, SolverError, TopoError
from topo.fabric import SWITCH_KINDS, natural_key, switch_components, vertex_label
from topo.flow.lp import (
    DEFAULT_MAX_VARIABLES,
    Commodity,
    MCFSolution,
    max_concurrent_flow,
)
from topo.units import Bps_to_GBps

FEASIBILITY_TOL = 1e-6
"""Relative tolerance of the server-contraction check (theta >= 1 - tol)."""
DUAL_TOL = 1e-6
"""A capacity row whose normalised shadow price exceeds this is a bottleneck."""


@dataclass(frozen=True)
class BottleneckLink:
    """One direction of a link whose capacity binds the all-to-all rate.

    Attributes
    ----------
    source, target : str
        The link's ends, in the direction of the binding flow.
    tier : str
        Where it sits, e.g. ``nic->leaf``, ``leaf->spine``, ``spine->leaf``.
    capacity_GBps, load_GBps : float
        Capacity and load in that direction (GB/s, 1e9 B/s).
    """

    source: str
    target: str
    tier: str
    capacity_GBps: float
    load_GBps: float


@dataclass(frozen=True)
class BandwidthReport:
    """The all-to-all bandwidth of a fabric (see :func:`alltoall_bandwidth`).

    Rates are in GB/s (1e9 B/s). ``gpus`` counts the traffic terminals: GPUs, or host
    endpoints for imported fabrics without GPUs (``terminal`` says which).
    """

    fabric: str
    family: str
    terminal: str
    gpus: int
    nodes: int
    pair_rate_GBps: float
    alltoall_algbw_GBps: float
    alltoall_busbw_GBps: float
    internode_per_gpu_GBps: float
    internode_per_nic_GBps: float
    nic_line_rate_GBps: float
    nic_utilization: float
    intranode_per_gpu_GBps: float
    bottleneck_tiers: dict[str, int]
    bottleneck_links: list[BottleneckLink]
    method: str
    exact: bool
    reductions: list[str]
    lp_variables: int
    lp_constraints: int
    lp_build_seconds: float
    lp_solve_seconds: float
    solve_seconds: float
    extra: dict[str, Any] = field(default_factory=dict)
    link_load: dict[tuple[str, str], float] | None = field(default=None, repr=False)
    """With ``link_loads=True``: load (B/s) of every NIC cable and switch link direction."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``extra`` merged in at the top level; ``link_load`` left out)."""
        d = asdict(replace(self, link_load=None))
        d.pop("link_load")
        d.update(d.pop("extra"))
        return d


# --------------------------------------------------------------------------- hosts


@dataclass
class _Host:
    """A traffic source/sink after server contraction."""

    id: Hashable
    weight: int  # terminals (GPUs, or 1 endpoint)
    attach: dict[str, float]  # switch -> capacity B/s of this host's cables to it
    nics: dict[str, list[str]]  # switch -> NIC vertices cabled to it
    members: list[str]  # the host's vertices (GPUs, NICs, NVSwitch)
    inner_sig: tuple = ()  # shape of the server's inside (for class grouping)
    host_bound: set[str] = field(default_factory=set)  # NICs whose PCIe is below the cable


def _hosts(G: nx.Graph) -> tuple[list[_Host], str]:
    """Contract servers (when the fabric has GPUs) or take endpoints as they are."""
    has_gpus = any(k == "gpu" for _, k in G.nodes(data="kind"))
    hosts: list[_Host] = []
    if has_gpus:
        by_server: dict[Hashable, list[str]] = defaultdict(list)
        for v, d in G.nodes(data=True):
            if d["kind"] not in SWITCH_KINDS:
                by_server[d["node"]].append(v)
        for server, members in by_server.items():
            weight = sum(G.nodes[v]["kind"] == "gpu" for v in members)
            if weight == 0:
                continue
            h = _Host(server, weight, {}, defaultdict(list), members)
            for v in members:
                # What a NIC passes is bounded by its cable and by its links into the server
                # (PCIe): the tighter of the two keeps the contraction a tight relaxation.
                inner = sum(
                    float(e["capacity"])
                    for u, e in G.adj[v].items()
                    if G.nodes[u]["kind"] not in SWITCH_KINDS
                )
                for s, e in G.adj[v].items():
                    if G.nodes[s]["kind"] in SWITCH_KINDS:
                        cable = float(e["capacity"])
                        h.attach[s] = h.attach.get(s, 0.0) + min(cable, inner)
                        h.nics[s].append(v)
                        if inner < cable:
                            h.host_bound.add(v)
            h.inner_sig = _inner_signature(G, members)
            hosts.append(h)
        return hosts, "gpu"
    for v, d in G.nodes(data=True):
        if d["kind"] != "nic":
            continue
        h = _Host(v, 1, {}, defaultdict(list), [v])
        for s, e in G.adj[v].items():
            if G.nodes[s]["kind"] in SWITCH_KINDS:
                h.attach[s] = h.attach.get(s, 0.0) + float(e["capacity"])
                h.nics[s].append(v)
        if h.attach:
            hosts.append(h)
    return hosts, "endpoint"


def _inner_signature(G: nx.Graph, members: list[str]) -> tuple:
    """The inside of a server, independent of its name: kinds, indices, capacities."""
    label = {v: (G.nodes[v]["kind"], G.nodes[v].get("index", -1)) for v in members}
    edges = []
    for v in members:
        for u, e in G.adj[v].items():
            if u in label and label[v] < label[u]:
                edges.append((label[v], label[u], float(e["capacity"])))
    return tuple(sorted(edges))


# --------------------------------------------------------------------------- planes


_PLANE_PREFIX = re.compile(r"^p\d+/")


def _plane_isomorphism(
    G: nx.Graph, comps: list[list[str]], hosts: list[_Host], *, partial: bool = False
) -> list[dict[str, str]] | None:
    """Maps from each plane's switches to plane 0's, verified; None if the planes differ.

    Candidate: the name with its plane prefix (``p3/``) removed, or failing that the order of
    the naturally sorted names. Verified: capacities of every switch-switch edge and every
    host's attachments agree under the map. With ``partial``, ``comps`` may be some of the
    planes, and hosts need not attach to them.
    """
    if len(comps) < 2:
        return None
    base = comps[0]
    maps: list[dict[str, str]] = []
    for comp in comps:
        if len(comp) != len(base):
            return None
        key0 = {_PLANE_PREFIX.sub("", v): v for v in base}
        m = {v: key0.get(_PLANE_PREFIX.sub("", v), "") for v in comp}
        if "" in m.values() or len(set(m.values())) != len(base):
            m = dict(zip(comp, base, strict=True))
        maps.append(m)
    # switch-switch edges
    ref = {(u, v): e["capacity"] for u, v, e in G.subgraph(base).edges(data=True)}
    ref.update({(v, u): c for (u, v), c in list(ref.items())})
    for comp, m in zip(comps[1:], maps[1:], strict=True):
        sub = G.subgraph(comp)
        if sub.number_of_edges() * 2 != len(ref):
            return None
        for u, v, e in sub.edges(data=True):
            if ref.get((m[u], m[v])) != e["capacity"]:
                return None
    # host attachments
    where = {v: i for i, comp in enumerate(comps) for v in comp}
    for h in hosts:
        per_plane: list[dict[str, float]] = [{} for _ in comps]
        for s, c in h.attach.items():
            if s in where:
                per_plane[where[s]][maps[where[s]][s]] = c
        if any(p != per_plane[0] for p in per_plane[1:]) or not (per_plane[0] or partial):
            return None
    return maps


def _plane_classes(
    G: nx.Graph, comps: list[list[str]], hosts: list[_Host]
) -> tuple[dict[str, list[str]], dict[str, str]] | None:
    """Group planes that are copies of one another (e.g. the undamaged planes of a damaged
    MPFT); None unless some group has two or more planes.

    Returns ``copies`` (representative switch -> its images in every plane of its group,
    itself first, aligned across switches) and ``rep_of`` (switch -> representative). Each
    pair is verified by :func:`_plane_isomorphism`, hosts included.
    """
    groups: list[tuple[int, list[dict[str, str]]]] = []
    for i, comp in enumerate(comps):
        for base, maps in groups:
            m = _plane_isomorphism(G, [comps[base], comp], hosts, partial=True)
            if m is not None:
                maps.append(m[1])
                break
        else:
            groups.append((i, [{v: v for v in comp}]))
    if all(len(maps) == 1 for _, maps in groups):
        return None
    copies: dict[str, list[str]] = {}
    rep_of: dict[str, str] = {}
    for base, maps in groups:
        inv = [{b: a for a, b in m.items()} for m in maps]
        for v in comps[base]:
            copies[v] = [i[v] for i in inv]
            for c in copies[v]:
                rep_of[c] = v
    return copies, rep_of


# --------------------------------------------------------------------------- reduced problem


@dataclass
class _Reduced:
    """The reduced network: switches of the scope plus a source/sink vertex per class."""

    classes: list[list[_Host]]
    arcs: list[tuple[Hashable, Hashable]]
    capacity: np.ndarray
    origin: list[tuple]  # ("fabric", u, v) | ("up", ci, s) | ("down", ci, s)
    commodities: list[Commodity]
    sc: _Scope

    @property
    def planes(self) -> int:
        return self.sc.planes

    @property
    def plane_maps(self) -> list[dict[str, str]] | None:
        return self.sc.plane_maps

    @property
    def scope(self) -> set[str]:
        """The switches of the solved network."""
        return self.sc.switches

    @property
    def copies(self) -> dict[str, list[str]] | None:
        return self.sc.copies

    @property
    def rep_of(self) -> dict[str, str] | None:
        return self.sc.rep_of

    def mult(self, s: Hashable) -> int:
        """How many switches the representative ``s`` stands for, with merged planes."""
        return self.sc.mult(s)

    @cached_property
    def _plane_images(self) -> dict[str, list[str]]:
        maps = self.sc.plane_maps or []
        inv = [{b: a for a, b in m.items()} for m in maps]
        return {s: [i[s] for i in inv] for s in (inv[0] if inv else {})}

    def images(self, s: str) -> list[str]:
        """The fabric switches the solved switch ``s`` stands for (itself, or its copies in
        every plane)."""
        if self.sc.copies is not None:
            return self.sc.copies[s]
        if self.sc.plane_maps is not None:
            return self._plane_images[s]
        return [s]

    def commodity_arcs(self, ci: int) -> list[int]:
        """Arcs class ``ci``'s commodity may use: all but other classes' source arcs."""
        return [
            a
            for a, (u, _) in enumerate(self.arcs)
            if not (isinstance(u, tuple) and u != ("out", ci))
        ]

    def lp_variables(self) -> int:
        """Flow variables of the unsymmetrised LP, without building it."""
        up = sum(1 for o in self.origin if o[0] == "up")
        return len(self.commodities) * (len(self.arcs) - up) + up

    def arc_index(self) -> dict[tuple[Hashable, Hashable], int]:
        return {a: i for i, a in enumerate(self.arcs)}


@dataclass
class _Scope:
    """The switches an LP is written over, and how planes were folded into them."""

    switches: set[str]
    planes: int  # P when all planes are alike (demand divided by P), else 1
    plane_maps: list[dict[str, str]] | None
    copies: dict[str, list[str]] | None  # merged planes: representative -> its copies
    rep_of: dict[str, str] | None

    def mult(self, s: Hashable) -> int:
        return len(self.copies[s]) if self.copies is not None else 1  # type: ignore[index]


def _scope(G: nx.Graph, hosts: list[_Host]) -> _Scope:
    """Plane decomposition (all planes alike) or plane merging (groups alike), else all."""
    comps = switch_components(G)
    maps = _plane_isomorphism(G, comps, hosts)
    if maps is not None:
        return _Scope(set(comps[0]), len(comps), maps, None, None)
    merged = _plane_classes(G, comps, hosts) if len(comps) > 1 else None
    if merged is not None:
        copies, rep_of = merged
        return _Scope(set(copies), 1, None, copies, rep_of)
    return _Scope({v for c in comps for v in c}, 1, None, None, None)


def _network(
    G: nx.Graph, sc: _Scope, classes: list[list[_Host]]
) -> tuple[list[tuple[Hashable, Hashable]], np.ndarray, list[tuple]]:
    """Arcs of the solved network (both directions of every switch link in the scope, and a
    source and sink arc per class and switch), their capacities (B/s, times the class size
    and the merged planes' multiplicity) and origins."""
    arcs: list[tuple[Hashable, Hashable]] = []
    cap: list[float] = []
    origin: list[tuple] = []
    scope = sc.switches
    for u, v, e in G.edges(data=True):
        if u in scope and v in scope:
            for a, b in ((u, v), (v, u)):
                arcs.append((a, b))
                cap.append(sc.mult(u) * float(e["capacity"]))
                origin.append(("fabric", a, b))
    for ci, cls in enumerate(classes):
        n = len(cls)
        for s, c in cls[0].attach.items():
            if s not in scope:
                continue
            arcs += [(("out", ci), s), (s, ("in", ci))]
            cap += [sc.mult(s) * n * c] * 2
            origin += [("up", ci, s), ("down", ci, s)]
    return arcs, np.array(cap), origin


def _reduce(G: nx.Graph, hosts: list[_Host]) -> _Reduced:
    sc = _scope(G, hosts)
    groups: dict[tuple, list[_Host]] = defaultdict(list)
    for h in hosts:
        att = tuple(sorted((s, c) for s, c in h.attach.items() if s in sc.switches))
        groups[(h.weight, h.inner_sig, att)].append(h)
    classes = [groups[k] for k in sorted(groups, key=lambda k: natural_key(k[2][0][0]))]
    arcs, cap, origin = _network(G, sc, classes)
    commodities = []
    for ci, ci_cls in enumerate(classes):
        wi, ni = ci_cls[0].weight, len(ci_cls)
        dem: dict[Hashable, float] = {}
        for cj, cj_cls in enumerate(classes):
            wj, nj = cj_cls[0].weight, len(cj_cls)
            pairs = ni * (ni - 1) if ci == cj else ni * nj
            if pairs:
                dem[("in", cj)] = pairs * wi * wj / sc.planes
        commodities.append(Commodity(("out", ci), dem))
    return _Reduced(classes, arcs, cap, origin, commodities, sc)


def _symmetry(G: nx.Graph, red: _Reduced) -> list[dict[Hashable, Hashable]] | None:
    """Automorphisms of the reduced network that merge classes into fewer orbits, or None.

    Candidates (each verified arc by arc, so a wrong guess only costs the reduction): a cyclic
    shift of the leaves that look alike (same plane, rail and upper switches, same classes
    below), and a cyclic shift of the blocks (pods) that look alike once the top tier is
    removed. A partly filled leaf or pod is left in place, so partial sizes keep most of the
    symmetry.
    """
    sig = _leaf_signatures(G, red)
    gens = []
    for cand in (_leaf_shift(G, red, sig), _block_shift(G, red, sig)):
        if cand is None:
            continue
        perm = _extend_to_classes(red, cand)
        if perm is not None and _is_automorphism(red, perm):
            gens.append(perm)
    if not gens or len(_class_orbits(red, gens)) == len(red.classes):
        return None
    return gens


def _leaf_signatures(G: nx.Graph, red: _Reduced) -> dict[str, tuple]:
    """For each switch with hosts: what it looks like, refined once.

    First the classes below it (GPUs, inside, size, capacity) and the capacities of its links
    up; then, for each class below, the same description of the other switches that class
    attaches to, with the names of the switches those reach up (leaves of one plane cut from
    different spines differ). The refinement tells apart, e.g., the leaves of an undamaged
    plane whose servers sit under a damaged leaf of another plane, so a shift among look-alike
    leaves can still be consistent across planes (one round of colour refinement; the shift found is
    verified arc by arc anyway).
    """
    below: dict[str, list[tuple]] = defaultdict(list)
    for cls in red.classes:
        h = cls[0]
        for s, c in _scoped(h, red.scope):
            below[s].append((h.weight, h.inner_sig, len(cls), c))
    color: dict[str, tuple] = {}
    uppers: dict[str, tuple] = {}  # which switches a leaf reaches up (names: within a plane)
    for s, v in below.items():
        t = G.nodes[s]["tier"]
        up = sorted(
            float(e["capacity"]) * red.mult(s)
            for u, e in G.adj[s].items()
            if u in red.scope and G.nodes[u]["tier"] > t
        )
        color[s] = (tuple(sorted(v)), tuple(up))
        uppers[s] = tuple(
            sorted(
                (str(u) for u in G.adj[s] if u in red.scope and G.nodes[u]["tier"] > t),
                key=natural_key,
            )
        )
    refined: dict[str, list[tuple]] = defaultdict(list)
    for cls in red.classes:
        att = list(_scoped(cls[0], red.scope))
        for s, c in att:
            others = tuple(
                sorted(
                    (
                        G.nodes[t].get("plane", -1),
                        G.nodes[t].get("rail", -1),
                        color[t],
                        ct,
                        uppers[t],
                    )
                    for t, ct in att
                    if t != s
                )
            )
            refined[s].append((c, others))
    return {s: (color[s], tuple(sorted(refined[s]))) for s in below}


def _leaf_shift(
    G: nx.Graph, red: _Reduced, sig: dict[str, tuple]
) -> dict[Hashable, Hashable] | None:
    groups: dict[tuple, list[str]] = defaultdict(list)
    for s in sig:
        d = G.nodes[s]
        up = frozenset(u for u in G.adj[s] if u in red.scope and G.nodes[u]["tier"] > d["tier"])
        groups[(d.get("plane", 0), d.get("rail", -1), up, sig[s])].append(s)
    perm: dict[Hashable, Hashable] = {}
    for members in groups.values():
        members.sort(key=natural_key)
        for i, s in enumerate(members):
            perm[s] = members[(i + 1) % len(members)]
    return perm if any(len(m) > 1 for m in groups.values()) else None


def _block_shift(
    G: nx.Graph, red: _Reduced, sig: dict[str, tuple]
) -> dict[Hashable, Hashable] | None:
    top = max(G.nodes[s]["tier"] for s in red.scope)
    lower = [s for s in red.scope if G.nodes[s]["tier"] < top]
    groups: dict[tuple, list[list[str]]] = defaultdict(list)
    for b in nx.connected_components(G.subgraph(lower)):
        members = sorted(b, key=lambda v: (G.nodes[v]["tier"], natural_key(v)))
        shape = tuple(
            (G.nodes[v]["tier"], sig.get(v, ()), sum(1 for u in G.adj[v] if u in red.scope))
            for v in members
        )
        groups[shape].append(members)
    perm: dict[Hashable, Hashable] = {}
    for blocks in groups.values():
        blocks.sort(key=lambda b: natural_key(b[0]))
        for i, b in enumerate(blocks):
            perm.update(zip(b, blocks[(i + 1) % len(blocks)], strict=True))
    return perm if any(len(b) > 1 for b in groups.values()) else None


def _class_orbits(red: _Reduced, gens: list[dict[Hashable, Hashable]]) -> list[list[int]]:
    """Orbits of the classes under the generated group, each sorted, representative first."""
    seen: set[int] = set()
    orbits = []
    for start in range(len(red.classes)):
        if start in seen:
            continue
        orbit, frontier = {start}, [start]
        while frontier:
            ci = frontier.pop()
            for g in gens:
                image = g[("out", ci)]
                assert isinstance(image, tuple)
                cj = image[1]
                if cj not in orbit:
                    orbit.add(cj)
                    frontier.append(cj)
        seen |= orbit
        orbits.append(sorted(orbit))
    return orbits


def _extend_to_classes(red: _Reduced, perm: dict[Hashable, Hashable]) -> dict | None:
    """Extend a switch permutation to the class vertices it induces; None if it induces none."""
    sig_to_class: dict[tuple, int] = {}
    for ci, cls in enumerate(red.classes):
        sig = (cls[0].weight, cls[0].inner_sig, len(cls), frozenset(_scoped(cls[0], red.scope)))
        sig_to_class[sig] = ci
    full = dict(perm)
    for ci, cls in enumerate(red.classes):
        image = frozenset((perm.get(s, s), c) for s, c in _scoped(cls[0], red.scope))
        cj = sig_to_class.get((cls[0].weight, cls[0].inner_sig, len(cls), image))
        if cj is None:
            return None
        full[("out", ci)] = ("out", cj)
        full[("in", ci)] = ("in", cj)
    return full


def _is_automorphism(red: _Reduced, perm: dict[Hashable, Hashable]) -> bool:
    """Does ``perm`` map every arc onto an arc of equal capacity (and so, being a bijection of
    a finite arc set, the network onto itself)?"""
    index = red.arc_index()
    images = set()
    for i, (u, v) in enumerate(red.arcs):
        j = index.get((perm.get(u, u), perm.get(v, v)))
        if j is None or red.capacity[j] != red.capacity[i]:
            return False
        images.add(j)
    return len(images) == len(red.arcs)


def _scoped(h: _Host, scope: set[str]) -> Iterable[tuple[str, float]]:
    """The host's attachments within the solved network."""
    return ((s, c) for s, c in h.attach.items() if s in scope)


def _arc_orbits(red: _Reduced, gens: list[dict[Hashable, Hashable]]) -> list[list[int]]:
    """Orbits of the arcs under the group the generators generate (union-find)."""
    index = red.arc_index()
    parent = list(range(len(red.arcs)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for g in gens:
        for i, (u, v) in enumerate(red.arcs):
            j = index[(g.get(u, u), g.get(v, v))]
            ri, rj = find(i), find(j)
            if ri != rj:
                parent[ri] = rj
    orbits: dict[int, list[int]] = defaultdict(list)
    for i in range(len(red.arcs)):
        orbits[find(i)].append(i)
    return list(orbits.values())


def _solve_symmetric(
    red: _Reduced,
    gens: list[dict[Hashable, Hashable]],
    max_variables: int,
    time_limit_s: float | None = None,
) -> MCFSolution:
    """One commodity per class orbit, one capacity row per arc orbit.

    Averaging any solution over the group generated by ``gens`` gives an invariant one, in
    which class ``k``'s commodity is the image of its orbit representative's, and every arc of
    an arc orbit ``O`` carries ``(1/|O|) sum_R |R| sum_{b in O} f_R(b)`` summed over the class
    orbits ``R``. So the rows ``sum_R |R| sum_{b in O} f_R(b) <= c_O |O|`` are exact
    (docs/bandwidth.md).
    """
    orbits = _arc_orbits(red, gens)
    class_orbits = _class_orbits(red, gens)
    reps = [orb[0] for orb in class_orbits]
    weights = [float(len(orb)) for orb in class_orbits]
    rows = [(orb, red.capacity[orb[0]] * len(orb)) for orb in orbits]
    sol = max_concurrent_flow(
        red.arcs,
        red.capacity,
        [red.commodities[r] for r in reps],
        commodity_arcs=[red.commodity_arcs(r) for r in reps],
        commodity_weight=weights,
        capacity_rows=rows,
        keep_commodity_flows=len(reps) > 1,
        max_variables=max_variables,
        time_limit_s=time_limit_s,
    )
    weighted = np.zeros(len(red.arcs))
    if sol.commodity_flow is None:  # one commodity: arc_flow is its flow
        weighted = sol.arc_flow * weights[0]
    else:
        for w, flows in zip(weights, sol.commodity_flow, strict=True):
            for a, x in flows.items():
                weighted[a] += w * x
    load = np.zeros(len(red.arcs))
    for orb in orbits:
        load[orb] = weighted[orb].sum() / len(orb)
    return replace(sol, arc_flow=load, commodity_flow=None)


# --------------------------------------------------------------------------- server check


def _server_check(G: nx.Graph, red: _Reduced, sol: MCFSolution, lam: float) -> tuple[bool, float]:
    """Can every server's inside carry the contracted solution? Returns (ok, worst theta).

    Each GPU sends ``up_s / w`` to every switch ``s`` the server reaches and receives
    ``down_s / w`` from it (the same proportions for every GPU, which is what lets the
    aggregated paths be split per destination), plus ``lam`` to and from every other GPU of the
    server. A small LP per distinct server load checks it.
    """
    up: dict[tuple[int, Hashable], float] = {}
    down: dict[tuple[int, Hashable], float] = {}
    for a, o in enumerate(red.origin):
        if o[0] == "up":
            up[(o[1], o[2])] = sol.arc_flow[a] / len(red.classes[o[1]])
        elif o[0] == "down":
            down[(o[1], o[2])] = sol.arc_flow[a] / len(red.classes[o[1]])
    inv_maps = red.plane_maps
    worst = math.inf
    done: dict[tuple, float] = {}
    for ci, cls in enumerate(red.classes):
        h = cls[0]
        loads = []
        for s in h.attach:
            if red.rep_of is not None:
                base = red.rep_of[s]
            else:
                base = s if inv_maps is None else _to_plane0(s, inv_maps)
            k = red.mult(base)
            loads.append((s, up.get((ci, base), 0.0) / k, down.get((ci, base), 0.0) / k))
        key = (h.inner_sig, tuple(sorted((round(u, 3), round(d, 3)) for _, u, d in loads)))
        if key not in done:
            done[key] = _server_theta(G, h, loads, lam)
        worst = min(worst, done[key])
    return worst >= 1 - FEASIBILITY_TOL, worst


def _to_plane0(s: str, maps: list[dict[str, str]]) -> str:
    for m in maps:
        if s in m:
            return m[s]
    raise KeyError(s)


def _server_theta(
    G: nx.Graph, h: _Host, loads: list[tuple[str, float, float]], lam: float
) -> float:
    gpus = [v for v in h.members if G.nodes[v]["kind"] == "gpu"]
    w = len(gpus)
    arcs: list[tuple[Hashable, Hashable]] = []
    cap: list[float] = []
    members = set(h.members)
    for v in h.members:
        for u, e in G.adj[v].items():
            if u in members:
                arcs.append((v, u))
                cap.append(float(e["capacity"]))
    for s, nics in h.nics.items():
        for nic in nics:
            c = float(G.edges[nic, s]["capacity"])
            arcs += [(nic, ("sw", s)), (("sw", s), nic)]
            cap += [c, c]
    commodities = []
    for g in gpus:
        dem: dict[Hashable, float] = {("sw", s): u / w for s, u, _ in loads if u > 0}
        dem.update({g2: lam for g2 in gpus if g2 != g})
        commodities.append(Commodity(g, dem))
    for s, _, d in loads:
        if d > 0:
            commodities.append(Commodity(("sw", s), {g: d / w for g in gpus}))
    sol = max_concurrent_flow(arcs, cap, commodities)
    return sol.theta


# --------------------------------------------------------------------------- general LP


def _general(
    G: nx.Graph,
    terminal: str,
    max_variables: int,
    keep_flows: bool = False,
    time_limit_s: float | None = None,
) -> tuple[list[str], list[tuple[str, str]], np.ndarray, MCFSolution]:
    """The LP as defined: one commodity per terminal, every arc, no transit through servers."""
    terms = sorted(
        (v for v, k in G.nodes(data="kind") if k == terminal)
        if terminal == "gpu"
        else (v for v, k in G.nodes(data="kind") if k == "nic" and _attached(G, v)),
        key=natural_key,
    )
    arcs: list[tuple[str, str]] = []
    cap: list[float] = []
    for u, v, e in G.edges(data=True):
        arcs += [(u, v), (v, u)]
        cap += [float(e["capacity"])] * 2
    is_sw = {v: k in SWITCH_KINDS for v, k in G.nodes(data="kind")}
    server = {v: (None if is_sw[v] else G.nodes[v]["node"]) for v in G}
    exits = [a for a, (u, v) in enumerate(arcs) if not is_sw[u] and is_sw[v]]
    exit_server = {a: server[arcs[a][0]] for a in exits}
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
    commodities = [Commodity(t, {t2: 1.0 for t2 in terms if t2 != t}) for t in terms]
    commodity_arcs = [others + by_server[server[t]] for t in terms]
    sol = max_concurrent_flow(
        arcs,
        cap,
        commodities,
        commodity_arcs=commodity_arcs,
        keep_commodity_flows=keep_flows,
        time_limit_s=time_limit_s,
        max_variables=max_variables,
    )
    return terms, arcs, np.array(cap), sol


def _attached(G: nx.Graph, v: str) -> bool:
    return any(G.nodes[u]["kind"] in SWITCH_KINDS for u in G.adj[v])


# --------------------------------------------------------------------------- the report


def alltoall_bandwidth(
    G: nx.Graph,
    *,
    method: str = "auto",
    max_variables: int = DEFAULT_MAX_VARIABLES,
    link_loads: bool = False,
    time_limit_s: float | None = None,
) -> BandwidthReport:
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
        found (``report.link_load``; one optimum among possibly many).
    time_limit_s : float, optional
        HiGHS time limit (s) for the reduced LP; when reached, certified bounds are reported
        as for an LP over ``max_variables``.

    Returns
    -------
    BandwidthReport
        ``pair_rate_GBps`` is ``lambda``, the rate every ordered pair sends at (GB/s);
        ``alltoall_busbw_GBps`` = ``lambda (n - 1)`` and ``alltoall_algbw_GBps`` =
        ``lambda n``, as nccl-tests' alltoall would print them (its size column counts the
        rank's whole buffer, n chunks, and its busbw factor is (n - 1)/n);
        ``internode_per_nic_GBps`` is the inter-server traffic each NIC carries on average,
        ``nic_line_rate_GBps`` the median NIC cable rate and ``nic_utilization`` their ratio;
        ``bottleneck_links`` are the link directions whose capacity rows have a positive shadow
        price in the dual solution HiGHS returns: a certificate of the bound, one of possibly
        several when the dual is degenerate (docs/bandwidth.md).

    Raises
    ------
    InfeasibleError
        Fewer than two terminals, or terminals with no cable to any switch.
    SolverError
        HiGHS fails, or (``method="general"``) the LP is too large. With ``method="auto"``
        an LP over ``max_variables`` gives certified bounds instead (``method == "bounds"``,
        ``exact`` False, ``extra`` holding ``lower_bound_busbw_GBps``,
        ``upper_bound_busbw_GBps`` and ``gap``; :mod:`topo.flow.bounds`).

    Examples
    --------
    >>> from topo.builders import build
    >>> r = alltoall_bandwidth(build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2))
    >>> round(r.alltoall_busbw_GBps, 3)     # NIC-bound: 2 x 50 / (2 x 30) x 31 GB/s
    51.667

    References
    ----------
    F. Shahrokhi and D. W. Matula, J. ACM 37(2), 1990 (maximum concurrent flow); nccl-tests
    ``doc/PERFORMANCE.md`` (busbw of alltoall).
    """
    if method not in ("auto", "general"):
        raise TopoError(f"--method must be auto or general, got {method!r}")
    t0 = time.perf_counter()
    hosts, terminal = _hosts(G)
    _check_terminals(G, hosts, terminal)
    n_terms = sum(h.weight for h in hosts)
    reductions: list[str] = []
    if method == "auto" and len(hosts) == 1:
        reductions.append("one server: nothing to reduce; general LP")
        method = "general"
    if method == "auto":
        try:
            return _reduced_report(
                G,
                hosts,
                terminal,
                n_terms,
                max_variables,
                link_loads,
                t0,
                reductions,
                time_limit_s,
            )
        except (LPTooLarge, LPTimeLimit) as exc:
            return _bounds_report(
                G, hosts, terminal, n_terms, t0, reductions, str(exc), max_variables, time_limit_s
            )
    try:
        return _general_report(
            G, hosts, terminal, max_variables, t0, reductions, link_loads, time_limit_s
        )
    except LPTimeLimit as exc:
        raise LPTimeLimit(
            f"the general LP: {exc}; use --method auto (exact reductions) or a larger --time-limit"
        ) from None


def _reduced_report(
    G: nx.Graph,
    hosts: list[_Host],
    terminal: str,
    n_terms: int,
    max_variables: int,
    link_loads: bool,
    t0: float,
    reductions: list[str],
    time_limit_s: float | None = None,
) -> BandwidthReport:
    red = _reduce(G, hosts)
    if terminal == "gpu":
        reductions.append(f"server contraction: {len(hosts)} servers")
    if red.planes > 1:
        reductions.append(f"plane decomposition: {red.planes} isomorphic planes, one solved")
    if red.copies is not None:
        sizes = sorted(
            (red.mult(next(iter(c))) for c in nx.connected_components(G.subgraph(red.scope))),
            reverse=True,
        )
        reductions.append(
            f"plane merging: {sum(sizes)} planes in {len(sizes)} groups of identical planes "
            f"({'+'.join(map(str, sizes))}, verified); each group solved as one plane of "
            "multiplied capacity"
        )
    reductions.append(
        f"twin classes: {sum(len(c) for c in red.classes)} hosts in {len(red.classes)} classes"
    )
    gens = _symmetry(G, red)
    if gens is not None:
        sol = _solve_symmetric(red, gens, max_variables, time_limit_s)
        n_orbits = len(_class_orbits(red, gens))
        reductions.append(
            f"class symmetry: {len(gens)} verified automorphism(s) fold the "
            f"{len(red.classes)} classes into {n_orbits} orbit(s): one commodity per "
            "orbit, one capacity row per arc orbit"
        )
    else:
        n_vars = red.lp_variables()
        if n_vars > max_variables:
            raise LPTooLarge(
                f"the reduced all-to-all LP would have {n_vars:,} variables (limit "
                f"{max_variables:,}): the fabric has {len(red.classes):,} distinct server "
                "attachments and no verified symmetry between them"
            )
        sol = max_concurrent_flow(
            red.arcs,
            red.capacity,
            red.commodities,
            commodity_arcs=[red.commodity_arcs(ci) for ci in range(len(red.classes))],
            max_variables=max_variables,
            time_limit_s=time_limit_s,
        )
    lam = sol.theta
    if terminal == "gpu":
        ok, worst = _server_check(G, red, sol, lam)
        if ok:
            reductions[0] += " (checked: NVLink and PCIe carry the load)"
        else:
            reductions.append(
                f"server contraction NOT exact (inside a server only {worst:.3f} of the "
                "load fits): general LP solved instead"
            )
            try:
                return _general_report(
                    G, hosts, terminal, max_variables, t0, reductions, link_loads
                )
            except SolverError as exc:
                raise SolverError(
                    f"the server-contracted LP bounds busbw by "
                    f"{Bps_to_GBps(lam * (n_terms - 1)):.4g} GB/s, but NVLink/PCIe inside "
                    f"a server carry only {worst:.3f} of that load, and {exc}"
                ) from None
    links = _bottlenecks_reduced(G, red, sol)
    report = _report(G, hosts, terminal, n_terms, lam, links, "reduced", True, reductions, sol, t0)
    return replace(report, link_load=_fabric_loads(G, red, sol)) if link_loads else report


def _bounds_report(
    G: nx.Graph,
    hosts: list[_Host],
    terminal: str,
    n_terms: int,
    t0: float,
    reductions: list[str],
    why: str,
    max_variables: int,
    time_limit_s: float | None = None,
) -> BandwidthReport:
    """Certified lower and upper bounds instead of the exact LP (:mod:`topo.flow.bounds`)."""
    from topo.flow.bounds import (
        cut_upper_bound,
        plane_lower_bound,
        routing_lower_bound,
        tree_lower_bound,
    )

    ub, cut = cut_upper_bound(G)
    lb, how = max(
        routing_lower_bound(G),
        plane_lower_bound(G, max_variables, time_limit_s),
        tree_lower_bound(G),
    )
    lb = min(lb, ub)
    reductions = [*reductions, f"exact LP not solved: {why}"]
    sol = MCFSolution(lb, np.zeros(0), np.zeros(0), None, 0, 0, 0.0, 0.0)
    report = _report(G, hosts, terminal, n_terms, lb, [], "bounds", False, reductions, sol, t0)
    extra = {
        "lower_bound_busbw_GBps": Bps_to_GBps(lb * (n_terms - 1)),
        "upper_bound_busbw_GBps": Bps_to_GBps(ub * (n_terms - 1)),
        "gap": 1.0 - lb / ub if ub > 0 else 0.0,
        "lower_bound_from": how,
        "upper_bound_from": f"cut around {cut}",
    }
    return replace(report, extra=extra)


def _general_report(
    G: nx.Graph,
    hosts: list[_Host],
    terminal: str,
    max_variables: int,
    t0: float,
    reductions: list[str],
    link_loads: bool = False,
    time_limit_s: float | None = None,
) -> BandwidthReport:
    terms, arcs, cap, sol = _general(G, terminal, max_variables, time_limit_s=time_limit_s)
    links = []
    for a in np.nonzero(sol.arc_dual > DUAL_TOL)[0]:
        u, v = arcs[a]
        links.append(_link(G, u, v, cap[a], sol.arc_flow[a]))
    report = _report(
        G, hosts, terminal, len(terms), sol.theta, links, "general", True, reductions, sol, t0
    )
    if not link_loads:
        return report
    is_sw = {v: k in SWITCH_KINDS for v, k in G.nodes(data="kind")}
    loads = {
        (u, v): float(sol.arc_flow[a]) for a, (u, v) in enumerate(arcs) if is_sw[u] or is_sw[v]
    }
    return replace(report, link_load=loads)


def _check_terminals(G: nx.Graph, hosts: list[_Host], terminal: str) -> None:
    if terminal == "gpu":
        loose = [h.id for h in hosts if not h.attach]
        if loose:
            raise InfeasibleError(
                f"{len(loose)} server(s) have GPUs but no NIC cabled to a switch "
                f"(e.g. {', '.join(map(str, loose[:3]))}): their all-to-all rate is 0"
            )
    n = sum(h.weight for h in hosts)
    if n < 2:
        raise InfeasibleError(
            f"all-to-all needs at least two {'GPUs' if terminal == 'gpu' else 'host endpoints'}; "
            f"the fabric has {n}"
        )
    kind = "gpu" if terminal == "gpu" else "nic"
    parts = [c for c in nx.connected_components(G) if any(G.nodes[v]["kind"] == kind for v in c)]
    if len(parts) > 1:
        example = min(parts, key=len)
        raise InfeasibleError(
            f"the fabric falls into {len(parts)} disconnected parts with "
            f"{'GPUs' if terminal == 'gpu' else 'host endpoints'} (the smallest holds "
            f"{min(map(str, example))}): the all-to-all rate is 0"
        )


def _bottlenecks_reduced(G: nx.Graph, red: _Reduced, sol: MCFSolution) -> list[BottleneckLink]:
    links: list[BottleneckLink] = []
    for u, v, cap, load in _expand(G, red, sol, np.nonzero(sol.arc_dual > DUAL_TOL)[0]):
        links.append(_link(G, u, v, cap, load))
    return links


def _expand(
    G: nx.Graph, red: _Reduced, sol: MCFSolution, which: Iterable[int]
) -> Iterator[tuple[str, str, float, float]]:
    """The fabric's arcs behind the reduced arcs ``which``: (tail, head, capacity, load), B/s.

    A reduced fabric arc stands for its images in every plane (each carrying the same flow,
    or an equal share of a merged group's); a class's up/down arc for its hosts' NIC cables,
    split in proportion to capacity (the symmetric solution every reduction rests on). Where a
    NIC's PCIe side is tighter than its cable, its PCIe links are named instead.
    """
    for a in which:
        o = red.origin[a]
        if o[0] == "fabric":
            k = red.mult(o[1])
            for u, v in zip(red.images(o[1]), red.images(o[2]), strict=True):
                yield u, v, red.capacity[a] / k, sol.arc_flow[a] / k
            continue
        ci, s0 = o[1], o[2]
        k = red.mult(s0)
        cls = red.classes[ci]
        for s in red.images(s0):
            for h in cls:
                if s not in h.attach:
                    continue
                share = sol.arc_flow[a] / len(cls) / (k * h.attach[s])
                for nic in h.nics[s]:
                    if nic in h.host_bound:  # the NIC's PCIe side binds, not its cable
                        for g, e in G.adj[nic].items():
                            if g in h.members:
                                c = float(e["capacity"])
                                u, v = (g, nic) if o[0] == "up" else (nic, g)
                                yield u, v, c, share * c
                        continue
                    c = float(G.edges[nic, s]["capacity"])
                    u, v = (nic, s) if o[0] == "up" else (s, nic)
                    yield u, v, c, share * c


def _fabric_loads(G: nx.Graph, red: _Reduced, sol: MCFSolution) -> dict[tuple[str, str], float]:
    """Load (B/s) of every NIC cable and switch link direction at the optimum found."""
    loads: dict[tuple[str, str], float] = {}
    for u, v, _, x in _expand(G, red, sol, range(len(red.arcs))):
        if G.nodes[u]["kind"] in SWITCH_KINDS or G.nodes[v]["kind"] in SWITCH_KINDS:
            loads[(u, v)] = loads.get((u, v), 0.0) + float(x)
    return loads


def _link(G: nx.Graph, u: str, v: str, cap: float, load: float) -> BottleneckLink:
    return BottleneckLink(
        source=str(u),
        target=str(v),
        tier=f"{vertex_label(G, u)}->{vertex_label(G, v)}",
        capacity_GBps=Bps_to_GBps(float(cap)),
        load_GBps=Bps_to_GBps(float(load)),
    )


def _report(
    G: nx.Graph,
    hosts: list[_Host],
    terminal: str,
    n: int,
    lam: float,
    links: list[BottleneckLink],
    method: str,
    exact: bool,
    reductions: list[str],
    sol: MCFSolution,
    t0: float,
) -> BandwidthReport:
    # Inter-server traffic: each terminal sends lam to every terminal outside its server.
    inter_total = (
        sum(h.weight * (n - h.weight) * lam for h in hosts)
        if terminal == "gpu"
        else (n * (n - 1) * lam)
    )
    nics = sum(len(v) for h in hosts for v in h.nics.values())
    nic_caps = [
        float(G.edges[nic, s]["capacity"]) for h in hosts for s, vs in h.nics.items() for nic in vs
    ]
    line = float(np.median(nic_caps)) if nic_caps else 0.0
    per_nic = inter_total / nics if nics else 0.0
    intra = sum(h.weight * (h.weight - 1) * lam for h in hosts) / n if terminal == "gpu" else 0.0
    tiers = Counter(link.tier for link in links)
    return BandwidthReport(
        fabric=str(G.graph.get("name", "")),
        family=str(G.graph.get("family", "unknown")),
        terminal=terminal,
        gpus=n,
        nodes=len(hosts) if terminal == "gpu" else len({G.nodes[h.id]["node"] for h in hosts}),
        pair_rate_GBps=Bps_to_GBps(lam),
        alltoall_algbw_GBps=Bps_to_GBps(lam * n),
        alltoall_busbw_GBps=Bps_to_GBps(lam * (n - 1)),
        internode_per_gpu_GBps=Bps_to_GBps(inter_total / n),
        internode_per_nic_GBps=Bps_to_GBps(per_nic),
        nic_line_rate_GBps=Bps_to_GBps(line),
        nic_utilization=per_nic / line if line else 0.0,
        intranode_per_gpu_GBps=Bps_to_GBps(intra),
        bottleneck_tiers=dict(sorted(tiers.items())),
        bottleneck_links=sorted(links, key=lambda b: (b.tier, natural_key(b.source))),
        method=method,
        exact=exact,
        reductions=reductions,
        lp_variables=sol.variables,
        lp_constraints=sol.constraints,
        lp_build_seconds=sol.build_seconds,
        lp_solve_seconds=sol.solve_seconds,
        solve_seconds=time.perf_counter() - t0,
    )
