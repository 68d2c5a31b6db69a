"""Planes: which switches an LP is written over, and how the planes fold into them.

When the switch graph falls into components (planes) that are copies of one another, with every
host attached identically to each, one plane carrying ``1/P`` of every pair's demand is solved
(*plane decomposition*). When only some planes are alike (the undamaged planes of a damaged
MPFT), each group of alike planes is solved as one plane of multiplied capacity (*plane
merging*). Both are exact (average any solution over the plane permutations;
``docs/bandwidth.md``) and both rest on an explicit isomorphism, verified here.

:func:`reduce` writes the reduced network of the uniform all-to-all: the scope found here, then
the twin classes and their arcs (:mod:`topo.flow.reduce.network`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable

import networkx as nx

from topo.fabric import switch_components
from topo.flow.reduce.network import Reduced, Scope, network, twin_classes
from topo.flow.reduce.servers import ContractedServer
from topo.flow.solve.lp import Commodity
from topo.flow.solve.memory import check_demand_table

_PLANE_PREFIX = re.compile(r"^p\d+/")


Alike = Callable[[list[int], bool], "list[dict[str, str]] | None"]
"""``alike(which, partial)``: :func:`plane_isomorphism` of the planes ``comps[i]`` for ``i`` in
``which`` (``partial`` as there), or what a caller knows it to be."""


def scope(
    G: nx.Graph,
    hosts: list[ContractedServer],
    *,
    comps: list[list[str]] | None = None,
    alike: Alike | None = None,
) -> Scope:
    """Plane decomposition (all planes alike) or plane merging (groups alike), else all.

    Parameters
    ----------
    G : networkx.Graph
        A fabric.
    hosts : list of ContractedServer
        Its hosts (:func:`topo.flow.reduce.servers.contract_servers`).
    comps : list of list of str, optional
        :func:`topo.fabric.switch_components` ``(G)``, where the caller knows them.
    alike : callable, optional
        Stands in for :func:`plane_isomorphism` on ``comps`` (:data:`Alike`): a caller that
        knows which planes are copies (those a few failures left as they were) says so
        without comparing them again.

    Returns
    -------
    Scope
    """
    if comps is None:
        comps = switch_components(G)
    if alike is None:
        alike = _isomorphism(G, comps, hosts)
    maps = alike(list(range(len(comps))), False) if len(comps) > 1 else None
    if maps is not None:
        return Scope(switches=set(comps[0]), planes=len(comps), plane_maps=maps)
    merged = plane_classes(G, comps, hosts, alike=alike) if len(comps) > 1 else None
    if merged is not None:
        copies, rep_of = merged
        return Scope(switches=set(copies), copies=copies, rep_of=rep_of)
    return Scope(switches={v for c in comps for v in c})


def _isomorphism(G: nx.Graph, comps: list[list[str]], hosts: list[ContractedServer]) -> Alike:
    """:func:`plane_isomorphism` as an :data:`Alike`."""

    def alike(which: list[int], partial: bool) -> list[dict[str, str]] | None:
        return plane_isomorphism(G, [comps[i] for i in which], hosts, partial=partial)

    return alike


def plane_isomorphism(
    G: nx.Graph, comps: list[list[str]], hosts: list[ContractedServer], *, partial: bool = False
) -> list[dict[str, str]] | None:
    """Maps from each plane's switches to plane 0's, verified; None if the planes differ.

    Candidate: the name with its plane prefix (``p3/``) removed, or failing that the order of
    the naturally sorted names. Verified: capacities of every switch-switch edge and every
    host's attachments agree under the map.

    Parameters
    ----------
    G : networkx.Graph
        A fabric.
    comps : list of list of str
        The planes' switches (:func:`topo.fabric.switch_components`).
    hosts : list of ContractedServer
        The fabric's hosts.
    partial : bool
        ``comps`` may be some of the planes, and hosts need not attach to them.

    Returns
    -------
    list of dict, or None
        One map per plane (plane 0's is the identity).
    """
    if len(comps) < 2:
        return None
    maps = _candidate_maps(comps)
    if maps is None or not _edges_agree(G, comps, maps):
        return None
    where = {v: i for i, comp in enumerate(comps) for v in comp}
    for h in hosts:
        per_plane: list[dict[str, float]] = [{} for _ in comps]
        for s, c in h.attach.items():
            if s in where:
                per_plane[where[s]][maps[where[s]][s]] = c
        if any(p != per_plane[0] for p in per_plane[1:]) or not (per_plane[0] or partial):
            return None
    return maps


def _candidate_maps(comps: list[list[str]]) -> list[dict[str, str]] | None:
    """Each plane's switch -> plane 0's, by name without the plane prefix, else by order."""
    base = comps[0]
    maps: list[dict[str, str]] = []
    for comp in comps:
        if len(comp) != len(base):
            return None
        key0 = {_PLANE_PREFIX.sub("", str(v)): v for v in base}
        m = {v: key0.get(_PLANE_PREFIX.sub("", str(v)), "") for v in comp}
        if "" in m.values() or len(set(m.values())) != len(base):
            m = dict(zip(comp, base, strict=True))
        maps.append(m)
    return maps


def _edges_agree(G: nx.Graph, comps: list[list[str]], maps: list[dict[str, str]]) -> bool:
    """Does every plane's switch-switch edge map onto one of plane 0 of equal capacity?"""
    ref = _switch_arcs(G, comps[0])
    for comp, m in zip(comps[1:], maps[1:], strict=True):
        arcs = _switch_arcs(G, comp)
        if len(arcs) != len(ref):
            return False
        for (u, v), c in arcs.items():
            if ref.get((m[u], m[v])) != c:
                return False
    return True


def _switch_arcs(G: nx.Graph, comp: list[str]) -> dict[tuple[str, str], float]:
    """Both directions of every edge between the switches ``comp``, with its capacity."""
    inside = set(comp)
    adj = G._adj  # the raw adjacency dicts: this visits every link of a plane
    return {(u, v): e["capacity"] for u in comp for v, e in adj[u].items() if v in inside}


def plane_classes(
    G: nx.Graph,
    comps: list[list[str]],
    hosts: list[ContractedServer],
    *,
    alike: Alike | None = None,
) -> tuple[dict[str, list[str]], dict[str, str]] | None:
    """Group planes that are copies of one another (e.g. the undamaged planes of a damaged
    MPFT); None unless some group has two or more planes.

    Parameters
    ----------
    G : networkx.Graph
        A fabric.
    comps : list of list of str
        Its planes (:func:`topo.fabric.switch_components`).
    hosts : list of ContractedServer
        Its hosts.
    alike : callable, optional
        Stands in for :func:`plane_isomorphism` (:data:`Alike`, as in :func:`scope`).

    Returns
    -------
    (copies, rep_of) or None
        ``copies``: representative switch -> its images in every plane of its group, itself
        first, aligned across switches; ``rep_of``: switch -> representative. Each pair of
        planes is verified by :func:`plane_isomorphism`, hosts included.
    """
    if alike is None:
        alike = _isomorphism(G, comps, hosts)
    groups: list[tuple[int, list[dict[str, str]]]] = []
    for i, comp in enumerate(comps):
        for base, maps in groups:
            m = alike([base, i], True)
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


def reduce(
    G: nx.Graph,
    hosts: list[ContractedServer],
    sc: Scope | None = None,
    classes: list[list[ContractedServer]] | None = None,
) -> Reduced:
    """The reduced network of the uniform all-to-all among the hosts' terminals.

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    hosts : list of ContractedServer
        Its hosts (:func:`topo.flow.reduce.servers.contract_servers`).
    sc : Scope, optional
        :func:`scope` ``(G, hosts)``, where the caller has it.
    classes : list of list of ContractedServer, optional
        :func:`twin_classes_checked` ``(hosts, sc)``, where the caller has them (with ``sc``).

    Returns
    -------
    Reduced
        One commodity per class, demand 1 per ordered pair of terminals (divided by the planes
        folded into one).
    """
    if sc is None:
        sc = scope(G, hosts)
    if classes is None:
        classes = twin_classes_checked(hosts, sc)
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


def twin_classes_checked(hosts: list[ContractedServer], sc: Scope) -> list[list[ContractedServer]]:
    """:func:`topo.flow.reduce.network.twin_classes` of the hosts in scope ``sc``, refused
    when the reduced LP's demand table would not fit in memory.

    Raises
    ------
    LPTooLarge
        :func:`topo.flow.solve.memory.check_demand_table`.
    """
    classes = twin_classes(hosts, sc)
    check_demand_table(len(classes), len(hosts))
    return classes
