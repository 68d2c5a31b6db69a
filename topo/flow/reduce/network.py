"""The reduced network: the switches of a scope plus a source and a sink vertex per class of
hosts, its arcs and capacities, and the way back from a reduced solution to the fabric's links.

Arcs are ``(tail, head)``; a class ``ci``'s source vertex is ``("out", ci)`` and its sink
``("in", ci)``. Each arc has an *origin*: ``("fabric", u, v)`` for a switch link direction,
``("up", ci, s)`` and ``("down", ci, s)`` for the cables of class ``ci`` to switch ``s``.
Capacities are in B/s, multiplied by the class size and by the number of planes a solved switch
stands for (plane merging).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import networkx as nx
import numpy as np

from topo.fabric import SWITCH_KINDS, natural_key, vertex_label
from topo.flow.reduce.planes import Scope, scope
from topo.flow.reduce.servers import ContractedServer, InnerSignature
from topo.flow.result import BottleneckLink
from topo.flow.solve.lp import Commodity, MCFSolution
from topo.flow.solve.memory import check_demand_table

DUAL_TOL = 1e-6
"""A capacity row whose normalised shadow price exceeds this is a bottleneck."""

Arc = tuple[Hashable, Hashable]
Origin = tuple[Any, ...]
"""``("fabric", u, v)``, ``("up", ci, s)`` or ``("down", ci, s)``."""


@dataclass(frozen=True)
class Reduced:
    """The reduced network: switches of the scope plus a source/sink vertex per class.

    Attributes
    ----------
    classes : list of list of ContractedServer
        The twin classes (hosts with identical attachments in the scope, GPUs and inside).
    arcs : list of (tail, head)
        Both directions of every switch link in the scope, and a source and a sink arc per
        class and switch.
    capacity : numpy.ndarray
        Capacity of each arc (B/s), shape ``(len(arcs),)``.
    origin : list of tuple
        What each arc stands for (module notes).
    commodities : list of Commodity
        One per class (its source vertex, its demands to the sink vertices).
    sc : Scope
        The switches solved and how planes were folded.
    """

    classes: list[list[ContractedServer]]
    arcs: list[Arc]
    capacity: np.ndarray
    origin: list[Origin]
    commodities: list[Commodity]
    sc: Scope

    @property
    def scope(self) -> set[str]:
        """The switches of the solved network."""
        return self.sc.switches

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

    def arc_index(self) -> dict[Arc, int]:
        """Arc -> its position in :attr:`arcs`."""
        return {a: i for i, a in enumerate(self.arcs)}


def network(
    G: nx.Graph, sc: Scope, classes: list[list[ContractedServer]]
) -> tuple[list[Arc], np.ndarray, list[Origin]]:
    """Arcs of the solved network, their capacities and origins.

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    sc : Scope
        The switches solved (:func:`topo.flow.reduce.planes.scope`).
    classes : list of list of ContractedServer
        The classes, each a source and a sink vertex.

    Returns
    -------
    (arcs, capacity, origin)
        Both directions of every switch link in the scope and a source and a sink arc per class
        and switch; capacities in B/s, times the class size and the merged planes'
        multiplicity, shape ``(len(arcs),)``; origins (module notes).
    """
    arcs: list[Arc] = []
    cap: list[float] = []
    origin: list[Origin] = []
    switches = sc.switches
    for u, v, e in _switch_edges(G, switches):
        for a, b in ((u, v), (v, u)):
            arcs.append((a, b))
            cap.append(sc.mult(u) * float(e["capacity"]))
            origin.append(("fabric", a, b))
    for ci, cls in enumerate(classes):
        n = len(cls)
        for s, c in cls[0].attach.items():
            if s not in switches:
                continue
            arcs += [(("out", ci), s), (s, ("in", ci))]
            cap += [sc.mult(s) * n * c] * 2
            origin += [("up", ci, s), ("down", ci, s)]
    return arcs, np.array(cap), origin


def _switch_edges(
    G: nx.Graph, switches: set[str]
) -> Iterator[tuple[Hashable, Hashable, dict[str, Any]]]:
    """The edges between ``switches`` as ``G.edges(data=True)`` lists them (each once, from
    the end first in the graph's order), visiting only the switches' adjacency."""
    seen: set[Hashable] = set()
    for u, nbrs in G._adj.items():
        if u in switches:
            for v, e in nbrs.items():
                if v in switches and v not in seen:
                    yield u, v, e
            seen.add(u)


def twin_classes(hosts: list[ContractedServer], sc: Scope) -> list[list[ContractedServer]]:
    """Hosts with the same GPUs, inside and attachments in the scope, in natural order of
    their first switch."""
    groups: dict[tuple[int, InnerSignature, tuple[tuple[str, float], ...]], list[ContractedServer]]
    groups = defaultdict(list)
    for h in hosts:
        att = tuple(sorted(h.scoped(sc.switches)))
        groups[(h.weight, h.inner_sig, att)].append(h)
    return [groups[k] for k in sorted(groups, key=lambda k: natural_key(k[2][0][0]))]


def reduce(G: nx.Graph, hosts: list[ContractedServer]) -> Reduced:
    """The reduced network of the uniform all-to-all among the hosts' terminals.

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    hosts : list of ContractedServer
        Its hosts (:func:`topo.flow.reduce.servers.contract_servers`).

    Returns
    -------
    Reduced
        One commodity per class, demand 1 per ordered pair of terminals (divided by the planes
        folded into one).
    """
    sc = scope(G, hosts)
    classes = twin_classes(hosts, sc)
    check_demand_table(len(classes), len(hosts))
    arcs, cap, origin = network(G, sc, classes)
    commodities = []
    for ci, ci_cls in enumerate(classes):
        wi, ni = ci_cls[0].weight, len(ci_cls)
        dem: dict[Hashable, float] = {}
        for cj, cj_cls in enumerate(classes):
            wj, nj = cj_cls[0].weight, len(cj_cls)
            pairs = ni * (ni - 1) if ci == cj else ni * nj
            if pairs:
                dem[("in", cj)] = pairs * wi * wj / sc.planes
        commodities.append(Commodity(source=("out", ci), demands=dem))
    return Reduced(
        classes=classes, arcs=arcs, capacity=cap, origin=origin, commodities=commodities, sc=sc
    )


def expand(
    G: nx.Graph, red: Reduced, sol: MCFSolution, which: Iterable[int]
) -> Iterator[tuple[str, str, float, float]]:
    """The fabric's arcs behind the reduced arcs ``which``: (tail, head, capacity, load), B/s.

    A reduced fabric arc stands for its images in every plane (each carrying the same flow,
    or an equal share of a merged group's); a class's up/down arc for its hosts' NIC cables,
    split in proportion to capacity (the symmetric solution every reduction rests on). Where a
    NIC's PCIe side is tighter than its cable, its PCIe links are named instead.
    """
    adj = G._adj  # the raw adjacency dicts: this visits every NIC cable of a class
    for a in which:
        o = red.origin[a]
        if o[0] == "fabric":
            k = red.mult(o[1])
            for u, v in zip(red.images(o[1]), red.images(o[2]), strict=True):
                yield u, v, red.capacity[a] / k, sol.arc_flow[a] / k
            continue
        k = red.mult(o[2])
        cls = red.classes[o[1]]
        up = o[0] == "up"
        for s in red.images(o[2]):
            for h in cls:
                if s not in h.attach:
                    continue
                share = sol.arc_flow[a] / len(cls) / (k * h.attach[s])
                for nic in h.nics[s]:
                    if nic in h.host_bound:  # the NIC's PCIe side binds, not its cable
                        for g, e in adj[nic].items():
                            if g in h.members:
                                c = float(e["capacity"])
                                yield (g, nic, c, share * c) if up else (nic, g, c, share * c)
                        continue
                    c = float(adj[nic][s]["capacity"])
                    yield (nic, s, c, share * c) if up else (s, nic, c, share * c)


def bottleneck_links(G: nx.Graph, red: Reduced, sol: MCFSolution) -> list[BottleneckLink]:
    """The fabric link directions behind the reduced arcs whose capacity rows have a positive
    shadow price (:data:`DUAL_TOL`) in ``sol``."""
    which = np.nonzero(sol.arc_dual > DUAL_TOL)[0]
    return links(G, expand(G, red, sol, which))


def link_loads(G: nx.Graph, red: Reduced, sol: MCFSolution) -> dict[tuple[str, str], float]:
    """Load (B/s) of every NIC cable and switch link direction at the optimum found."""
    loads: dict[tuple[str, str], float] = {}
    nodes = G._node
    for u, v, _, x in expand(G, red, sol, range(len(red.arcs))):
        if nodes[u]["kind"] in SWITCH_KINDS or nodes[v]["kind"] in SWITCH_KINDS:
            loads[(u, v)] = loads.get((u, v), 0.0) + float(x)
    return loads


def links(
    G: nx.Graph, directions: Iterable[tuple[Hashable, Hashable, float, float]]
) -> list[BottleneckLink]:
    """The link directions ``(tail, head, capacity, load)`` (B/s) as a report names them, in
    the order given: :func:`link` of each, with each vertex's label looked up once."""
    label: dict[Hashable, str] = {}
    tier: dict[tuple[str, str], str] = {}
    out = []
    for u, v, cap, load in directions:
        a = label.get(u)
        if a is None:
            a = label[u] = vertex_label(G, u)
        b = label.get(v)
        if b is None:
            b = label[v] = vertex_label(G, v)
        t = tier.get((a, b))
        if t is None:
            t = tier[(a, b)] = f"{a}->{b}"
        cables = int(G._adj[u][v]["links"])
        out.append(BottleneckLink(str(u), str(v), t, float(cap), float(load), cables))
    return out


def link(G: nx.Graph, u: Hashable, v: Hashable, cap: float, load: float) -> BottleneckLink:
    """The link direction ``u -> v`` as a report names it, capacity and load in B/s."""
    return BottleneckLink(
        source=str(u),
        target=str(v),
        tier=f"{vertex_label(G, u)}->{vertex_label(G, v)}",
        capacity_Bps=float(cap),
        load_Bps=float(load),
        cables=int(G._adj[u][v]["links"]),
    )
