"""Failures: remove cables and switches from a fabric, at random (seeded) or by name.

A *cable* is one physical link attached to a switch: an endpoint cable (NIC to leaf) or a
switch-to-switch link. An edge of the fabric graph may bundle several parallel cables
(attribute ``links``, capacity summed); failing one cable of a bundle removes its share of the
capacity, and the edge goes when its last cable does. A failed switch takes all its cables with
it. NVLink and PCIe inside servers do not fail here (a server's failure is its NICs' cables).

Random failures draw cables uniformly among all cables (so a bundle of 4 is 4 times as likely
to be hit as a single cable) and switches uniformly among switches, without replacement, from
the failures' own stream of the seed (:func:`topo.flow.seeds.stream`, child
:data:`~topo.flow.seeds.FAILURES` of ``numpy.random.SeedSequence(seed)``, independent of the
stream ECMP hashes with): the same seed on the same fabric fails the same elements.

After damage, some servers (or, on imported fabrics, host endpoints) may be cut off from the
rest: :func:`disconnected_terminals` names them, and the all-to-all is then computed among the
others, with the disconnected ones reported, never silently dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any

import networkx as nx
import numpy as np

from topo.errors import TopoError
from topo.fabric import SWITCH_KINDS, terminal_kind
from topo.flow.result import LINK_SEPARATOR, FailureSet
from topo.flow.seeds import FAILURES, stream

__all__ = [
    "LINK_SEPARATOR",
    "FailureSet",
    "cable_counts",
    "cables",
    "copy_fabric",
    "disconnected_terminals",
    "fail",
    "fail_cables",
    "island_sizes",
    "without_servers",
]


def copy_fabric(G: nx.Graph) -> nx.Graph:
    """A copy of ``G``, equal to ``G.copy()`` in every attribute and in the order of its
    vertices, of each vertex's neighbours and of every attribute dict, built on the raw
    dicts (networkx's ``copy`` adds every edge twice through ``add_edges_from``).

    Parameters
    ----------
    G : networkx.Graph
        The fabric (not modified).

    Returns
    -------
    networkx.Graph
        The graph, vertex and edge attribute dicts are shallow copies (an
        edge's one dict shared by both of its directions, as networkx keeps it).
    """
    if type(G) is not nx.Graph:  # (directed or multi: networkx's own copy)
        return G.copy()
    H = nx.Graph()
    H.graph.update(G.graph)
    H._node.update((n, d.copy()) for n, d in G._node.items())
    adj = H._adj
    adj.update((n, {}) for n in G._adj)
    for u, nbrs in G._adj.items():
        au = adj[u]
        for v, d in nbrs.items():
            if v not in au:  # (else set when (v, u) came, in the place networkx puts it)
                au[v] = adj[v][u] = d.copy()
    return H


def cables(G: nx.Graph) -> list[tuple[str, str]]:
    """Every switch-attached edge, in a fixed order (sorted by name), one entry per edge."""
    out = []
    kind = G._node
    for u, v in G.edges():
        if kind[u]["kind"] in SWITCH_KINDS or kind[v]["kind"] in SWITCH_KINDS:
            out.append((u, v) if str(u) <= str(v) else (v, u))
    out.sort(key=lambda e: (str(e[0]), str(e[1])))
    return out


def _which(G: nx.Graph) -> str:
    """The fabric as an error names it: by its name where it has one (a resilience run
    compares several)."""
    name = G.graph.get("name")
    return f"fabric {name}" if name else "the fabric"


def fail(
    G: nx.Graph,
    *,
    links: int = 0,
    switches: int = 0,
    seed: int | np.random.Generator = 0,
    named: Iterable[str] = (),
) -> tuple[nx.Graph, FailureSet]:
    """A damaged copy of the fabric.

    Parameters
    ----------
    G : networkx.Graph
        The fabric (not modified).
    links : int
        Random cables to fail (endpoint cables and switch-to-switch links alike).
    switches : int
        Random switches to fail.
    seed : int or numpy.random.Generator
        Seed of the random draw, >= 0: the failures' stream of it
        (:func:`topo.flow.seeds.stream` ``(seed, FAILURES)``), independent of ECMP's; a
        Generator is drawn from as is.
    named : iterable of str
        Switches (``spine3``) or links (``leaf0--spine3``, either order) to fail, each once;
        a named link that bundles several cables loses all of them.

    Returns
    -------
    (networkx.Graph, FailureSet)
        The damaged copy and what failed.

    Raises
    ------
    TopoError
        A negative count or seed, more failures than the fabric has elements, or a name that
        is not a switch or a link of the fabric.
    """
    if links < 0 or switches < 0:
        raise TopoError(
            "links and switches must be >= 0",
            param="links" if links < 0 else "switches",
            names=("links", "switches"),
        )
    H = copy_fabric(G)
    failed_links: list[tuple[Any, Any]] = []  # (vertex names: str, or an imported int id)
    failed_switches: list[Any] = []
    lost = 0.0
    for name in named:
        switch = [x for x in _named(G, name) if G.nodes[x]["kind"] in SWITCH_KINDS]
        ends = _named_links(G, name)
        if len(switch) + len(ends) > 1:
            meant = [repr(x) for x in switch] + [f"{u!r}-{v!r}" for u, v in ends]
            raise TopoError(
                f"named {name!r} names {' and '.join(meant)}: the fabric's names are ambiguous "
                f"here (they hold {LINK_SEPARATOR!r}, or an integer id reads as another's name)",
                param="named",
            )
        if switch:
            if switch[0] not in H:
                raise TopoError(f"named {name}: named twice", param="named")
            lost += _remove_switch(H, switch[0])
            failed_switches.append(switch[0])
            continue
        if ends and not H.has_edge(*ends[0]):
            raise TopoError(
                f"named {name}: already failed (named twice, or a failed switch's)", param="named"
            )
        if not ends:
            raise TopoError(_not_failable(G, name), param="named")
        u, v = ends[0]
        d = H.edges[u, v]
        lost += float(d["capacity"])
        failed_links += [(u, v)] * int(d.get("links", 1))
        H.remove_edge(u, v)

    rng = stream(seed, FAILURES)
    if switches:
        pool = sorted((v for v, k in H.nodes(data="kind") if k in SWITCH_KINDS), key=str)
        if switches > len(pool):
            raise TopoError(
                f"switches {switches}: {_which(G)} has {len(pool):,} switches", param="switches"
            )
        for i in sorted(rng.choice(len(pool), size=switches, replace=False)):
            lost += _remove_switch(H, pool[i])
            failed_switches.append(pool[i])
    if links:
        edges = cables(H)
        count = cable_counts(H, edges)
        total = int(count.sum())
        if links > total:
            left = " left after the other failures" if failed_links or failed_switches else ""
            raise TopoError(f"links {links}: {_which(G)} has {total:,} cables{left}", param="links")
        lost = fail_cables(H, edges, count, rng, links, failed_links, lost)
    return H, FailureSet(
        links=tuple(failed_links), switches=tuple(failed_switches), capacity_lost_Bps=lost
    )


def cable_counts(G: nx.Graph, edges: list[tuple[str, str]]) -> np.ndarray:
    """The cables of each edge of ``edges`` (its ``links``, 1 when unset), int64, shape
    ``(len(edges),)``."""
    return np.array([int(G.edges[e].get("links", 1)) for e in edges], dtype=np.int64)


def fail_cables(
    H: nx.Graph,
    edges: list[tuple[str, str]],
    count: np.ndarray,
    rng: np.random.Generator,
    links: int,
    failed: list[tuple[Any, Any]],
    lost: float = 0.0,
    before: Callable[[Any, Any], None] | None = None,
) -> float:
    """Fail ``links`` cables of ``H`` drawn uniformly without replacement (the draw of
    :func:`fail`), in place.

    Parameters
    ----------
    H : networkx.Graph
        The fabric being damaged (modified: an edge that loses every cable goes, one that
        loses some keeps the others' share of its capacity).
    edges : list of (str, str)
        Its cables' edges, :func:`cables` ``(H)``.
    count : numpy.ndarray
        Cables per edge, :func:`cable_counts` ``(H, edges)``; their sum is at least ``links``.
    rng : numpy.random.Generator
        The failures' stream.
    links : int
        Cables to fail.
    failed : list of (str, str)
        Extended with one ``(u, v)`` per failed cable, in the order of ``edges``.
    lost : float
        Capacity already removed by other failures (B/s), added to in order.
    before : callable, optional
        Called with ``(u, v)`` before the edge is changed or removed.

    Returns
    -------
    float
        ``lost`` plus the capacity removed (B/s, one direction).
    """
    # Cable c belongs to the edge whose cumulative count first exceeds c.
    picks = rng.choice(int(count.sum()), size=links, replace=False)
    owner = np.searchsorted(np.cumsum(count), picks, side="right")
    for ei, hits in zip(*np.unique(owner, return_counts=True), strict=True):
        u, v = edges[ei]
        if before is not None:
            before(u, v)
        d = H.edges[u, v]
        n = int(d.get("links", 1))
        per = float(d["capacity"]) / n
        lost += per * int(hits)
        failed += [(u, v)] * int(hits)
        if hits >= n:
            H.remove_edge(u, v)
        else:
            d["capacity"] = per * (n - int(hits))
            d["links"] = n - int(hits)
    return lost


def disconnected_terminals(G: nx.Graph) -> tuple[list[Hashable], list[Hashable]]:
    """Servers (or host endpoints) cut off from the largest connected group of them.

    Returns
    -------
    (kept, cut) : lists of server ids (GPU fabrics) or endpoint names (fabrics without GPUs)
        ``kept`` are the servers in the component holding the most GPUs (ties: the first by
        name); ``cut`` the others, including servers with no NIC cabled to a switch.
    """
    kind = terminal_kind(G)
    has_gpus = kind == "gpu"
    weight: dict[int, int] = {}
    members: dict[int, set[Hashable]] = {}
    comp_of: dict[Hashable, int] = {}
    for i, comp in enumerate(nx.connected_components(G)):
        for v in comp:
            comp_of[v] = i
        terms = [v for v in comp if G.nodes[v]["kind"] == kind]
        if not terms:
            continue
        weight[i] = len(terms)
        members[i] = {G.nodes[v]["node"] if has_gpus else v for v in terms}
    if not weight:
        return [], []
    switch_comps = {comp_of[v] for v, k in G.nodes(data="kind") if k in SWITCH_KINDS}
    # Only a component with a switch is a network; a lone server is cut.
    best = max(
        sorted(weight, key=lambda i: str(min(map(str, members[i])))),
        key=lambda i: (i in switch_comps, weight[i]),
    )
    if best not in switch_comps:
        return [], sorted({s for m in members.values() for s in m}, key=str)
    kept = members[best]
    cut = set().union(*(m for i, m in members.items() if i != best)) - kept
    if has_gpus:
        # A server whose GPUs sit in several components (e.g. NVLink cut) counts as kept
        # only if all its GPUs are in the kept component.
        split = {G.nodes[v]["node"] for v, k in G.nodes(data="kind") if k == "gpu"} & kept & cut
        kept = kept - split
        cut = cut | split
    return sorted(kept, key=str), sorted(cut, key=str)


def island_sizes(G: nx.Graph) -> tuple[int, ...]:
    """The GPUs (or host endpoints) of each connected group of ``G`` holding a switch.

    Parameters
    ----------
    G : networkx.Graph
        A (damaged) fabric.

    Returns
    -------
    tuple of int
        Terminal counts, largest first (one entry per island; a lone server without a switch
        is not an island).
    """
    kind = terminal_kind(G)
    sizes = []
    for comp in nx.connected_components(G):
        kinds = [G.nodes[v]["kind"] for v in comp]
        if any(k in SWITCH_KINDS for k in kinds):
            sizes.append(sum(1 for k in kinds if k == kind))
    return tuple(sorted((s for s in sizes if s), reverse=True))


def without_servers(G: nx.Graph, servers: Iterable[Hashable]) -> nx.Graph:
    """A copy of ``G`` without the given servers (their GPUs, NICs, NVSwitch) or endpoints."""
    drop = set(servers)
    has_gpus = terminal_kind(G) == "gpu"
    gone = [
        v
        for v, d in G.nodes(data=True)
        if d["kind"] not in SWITCH_KINDS and (d.get("node") in drop if has_gpus else v in drop)
    ]
    H = copy_fabric(G)
    H.remove_nodes_from(gone)
    return H


def _remove_switch(H: nx.Graph, name: Hashable) -> float:
    lost = sum(float(d["capacity"]) for _, _, d in H.edges(name, data=True))
    H.remove_node(name)
    return lost


def _named(G: nx.Graph, text: str) -> list[Hashable]:
    """The vertices ``text`` names: the one of that name, and the one of that integer id (a
    fabric's ids may be integers: ``7`` is written ``7``)."""
    found: list[Hashable] = [text] if text in G else []
    if text.isascii() and text.isdigit() and (text == "0" or text[0] != "0"):
        if int(text) in G:
            found.append(int(text))
    return found


def _not_failable(G: nx.Graph, name: str) -> str:
    """Why ``named`` entry ``name`` names nothing that can fail: a link inside a server (NVLink,
    PCIe), a vertex that is not a switch (with one of its cables to name instead), or
    nothing of the fabric at all."""
    inside = _named_links(G, name, cables_only=False)
    if inside:
        kind = G.edges[inside[0]].get("kind", "internal")
        return (
            f"named {name!r} is a link inside a server ({kind}): only cables to switches fail "
            "(NIC cables and switch-to-switch links) and switches"
        )
    vertices = _named(G, name)
    if vertices:
        v = vertices[0]
        cable = next((s for s in G.adj[v] if _is_cable(G, v, s)), None)
        kind = G.nodes[v]["kind"]
        if cable is None:
            return (
                f"named {name!r} is a {kind}, not a switch, and has no cable to a switch: "
                "only cables to switches (NIC cables and switch-to-switch links) and switches fail"
            )
        return (
            f"named {name!r} is a {kind}, not a switch: name one of its cables instead, e.g. "
            f"{v}{LINK_SEPARATOR}{cable}"
        )
    return (
        f"named {name!r} is neither a switch nor a link of the fabric (a link is "
        f"written END{LINK_SEPARATOR}END, e.g. its two vertex names as in the fabric JSON)"
    )


def _named_links(
    G: nx.Graph, text: str, *, cables_only: bool = True
) -> list[tuple[Hashable, Hashable]]:
    """The cables ``END--END`` names (every link, with ``cables_only`` False), at every place
    the separator can cut ``text`` (names may hold it): each ``(u, v)`` in the order
    written."""
    found = []
    at = text.find(LINK_SEPARATOR)
    while at >= 0:
        for u in _named(G, text[:at]):
            for v in _named(G, text[at + len(LINK_SEPARATOR) :]):
                if G.has_edge(u, v) and (not cables_only or _is_cable(G, u, v)):
                    found.append((u, v))
        at = text.find(LINK_SEPARATOR, at + 1)
    return found


def _is_cable(H: nx.Graph, u: Hashable, v: Hashable) -> bool:
    return H.nodes[u]["kind"] in SWITCH_KINDS or H.nodes[v]["kind"] in SWITCH_KINDS
