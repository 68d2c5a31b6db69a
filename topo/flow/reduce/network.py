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

from topo.fabric import SWITCH_KINDS, natural_key
from topo.flow.reduce.servers import ContractedServer, InnerSignature
from topo.flow.result import BottleneckLink, links
from topo.flow.solve.lp import Commodity, MCFSolution

DUAL_TOL = 1e-6
"""A capacity row whose normalised shadow price exceeds this is a bottleneck."""

Arc = tuple[Hashable, Hashable]
Origin = tuple[Any, ...]
"""``("fabric", u, v)``, ``("up", ci, s)`` or ``("down", ci, s)``."""


@dataclass(frozen=True)
class Scope:
    """The switches an LP is written over, and how planes were folded into them.

    Attributes
    ----------
    switches : set of str
        The switches of the solved network.
    planes : int
        ``P`` when all ``P`` planes are alike (each pair's demand divided by ``P``), else 1.
    plane_maps : list of dict, optional
        With plane decomposition: for each plane, its switch -> plane 0's switch.
    copies : dict of str to list of str, optional
        With plane merging: representative switch -> its images in every plane of its group,
        itself first.
    rep_of : dict of str to str, optional
        With plane merging: switch -> its representative.
    """

    switches: set[str]
    planes: int = 1
    plane_maps: list[dict[str, str]] | None = None
    copies: dict[str, list[str]] | None = None
    rep_of: dict[str, str] | None = None

    def mult(self, s: object) -> int:
        """How many fabric switches the solved switch ``s`` stands for (merged planes)."""
        return len(self.copies[s]) if self.copies is not None else 1  # type: ignore[index]

    def to_plane0(self, s: str) -> str:
        """The solved switch a fabric switch ``s`` maps to (its representative, or its image
        in plane 0, or itself)."""
        if self.rep_of is not None:
            return self.rep_of[s]
        if self.plane_maps is None:
            return s
        for m in self.plane_maps:
            if s in m:
                return m[s]
        raise KeyError(s)


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


def arc_count(G: nx.Graph, sc: Scope, classes: list[list[ContractedServer]]) -> int:
    """``len(arcs)`` of :func:`network` ``(G, sc, classes)``, counted without writing them:
    two per switch link in the scope, two per class and switch of the scope it reaches."""
    switches, adj = sc.switches, G._adj  # (the raw adjacency dicts)
    ends = sum(len(adj[u].keys() & switches) for u in switches)  # (each link from both ends,
    loops = sum(1 for u in switches if u in adj[u])  # a switch's link to itself once)
    links = (ends - loops) // 2 + loops
    reach = sum(1 for cls in classes for s in cls[0].attach if s in switches)
    return 2 * (links + reach)


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
    switches = sc.switches
    for h in hosts:
        att = h.sorted_attach
        if not h.attach.keys() <= switches:
            att = tuple(a for a in att if a[0] in switches)
        groups[(h.weight, h.inner_sig, att)].append(h)
    return [groups[k] for k in sorted(groups, key=lambda k: natural_key(k[2][0][0]))]


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
