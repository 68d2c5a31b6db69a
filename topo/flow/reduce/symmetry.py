"""Class symmetry of the reduced network: verified automorphisms and the LP they shrink.

When a cyclic shift of the leaves (within each plane and rail), or of the blocks below the top
tier, is an automorphism of the reduced network (:mod:`topo.flow.reduce.network`) and merges classes
into fewer orbits, one commodity per class orbit suffices and each capacity row bounds an orbit
of arcs (average any solution over the group; ``docs/bandwidth.md``). Candidates are guesses;
each is verified arc by arc (:func:`is_automorphism`), so a wrong guess only costs the
reduction.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable
from dataclasses import replace
from typing import Any

import networkx as nx
import numpy as np

from topo.fabric import blocks_below_top, natural_key
from topo.flow.reduce.network import Reduced
from topo.flow.solve.lp import MCFSolution, max_concurrent_flow

Perm = dict[Hashable, Hashable]
"""A permutation of the reduced network's vertices (vertices it leaves out are fixed)."""
Signature = tuple[Any, ...]


def symmetry(G: nx.Graph, red: Reduced) -> list[Perm] | None:
    """Automorphisms of the reduced network that merge classes into fewer orbits, or None.

    Candidates (each verified arc by arc): a cyclic shift of the leaves that look alike (same
    plane, rail and upper switches, same classes below), and a cyclic shift of the blocks
    (pods) that look alike once the top tier is removed. A partly filled leaf or pod is left in
    place, so partial sizes keep most of the symmetry.

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    red : Reduced
        Its reduced network.

    Returns
    -------
    list of Perm, or None
        Generators of the group, each verified; None when none merges two classes.
    """
    sig = leaf_signatures(G, red)
    gens = []
    for cand in (leaf_shift(G, red, sig), block_shift(G, red, sig)):
        if cand is None:
            continue
        perm = extend_to_classes(red, cand)
        if perm is not None and is_automorphism(red, perm):
            gens.append(perm)
    if not gens or len(class_orbits(red, gens)) == len(red.classes):
        return None
    return gens


def _below_and_up(
    G: nx.Graph, red: Reduced
) -> tuple[dict[str, Signature], dict[str, tuple[str, ...]]]:
    """For each switch with hosts: its first colour (the classes below, the capacities up)
    and the names of the switches it reaches up."""
    below: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    for cls in red.classes:
        h = cls[0]
        for s, c in h.scoped(red.scope):
            below[s].append((h.weight, h.inner_sig, len(cls), c))
    color: dict[str, Signature] = {}
    uppers: dict[str, tuple[str, ...]] = {}
    for s, v in below.items():
        t = G.nodes[s]["tier"]
        ups = [u for u in G.adj[s] if u in red.scope and G.nodes[u]["tier"] > t]
        up = sorted(float(G.adj[s][u]["capacity"]) * red.mult(s) for u in ups)
        color[s] = (tuple(sorted(v)), tuple(up))
        uppers[s] = tuple(sorted((str(u) for u in ups), key=natural_key))
    return color, uppers


def leaf_signatures(G: nx.Graph, red: Reduced) -> dict[str, Signature]:
    """For each switch with hosts: what it looks like, refined once.

    First the classes below it (GPUs, inside, size, capacity) and the capacities of its links
    up; then, for each class below, the same description of the other switches that class
    attaches to, with the names of the switches those reach up (leaves of one plane cut from
    different spines differ). The refinement tells apart, e.g., the leaves of an undamaged
    plane whose servers sit under a damaged leaf of another plane, so a shift among look-alike
    leaves can still be consistent across planes (one round of colour refinement; the shift
    found is verified arc by arc anyway).
    """
    color, uppers = _below_and_up(G, red)
    refined: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    for cls in red.classes:
        att = list(cls[0].scoped(red.scope))
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
    return {s: (color[s], tuple(sorted(refined[s]))) for s in color}


def leaf_shift(G: nx.Graph, red: Reduced, sig: dict[str, Signature]) -> Perm | None:
    """A cyclic shift of the look-alike leaves of each plane and rail, or None if no two
    leaves look alike."""
    groups: dict[tuple[Any, ...], list[str]] = defaultdict(list)
    for s in sig:
        d = G.nodes[s]
        up = frozenset(u for u in G.adj[s] if u in red.scope and G.nodes[u]["tier"] > d["tier"])
        groups[(d.get("plane", 0), d.get("rail", -1), up, sig[s])].append(s)
    perm: Perm = {}
    for members in groups.values():
        members.sort(key=natural_key)
        for i, s in enumerate(members):
            perm[s] = members[(i + 1) % len(members)]
    return perm if any(len(m) > 1 for m in groups.values()) else None


def block_shift(G: nx.Graph, red: Reduced, sig: dict[str, Signature]) -> Perm | None:
    """A cyclic shift of the look-alike blocks below the top tier (pods), or None if no two
    blocks look alike."""
    groups: dict[tuple[Any, ...], list[list[str]]] = defaultdict(list)
    for members in blocks_below_top(G, red.scope):
        shape = tuple(
            (G.nodes[v]["tier"], sig.get(v, ()), sum(1 for u in G.adj[v] if u in red.scope))
            for v in members
        )
        groups[shape].append(members)
    perm: Perm = {}
    for blocks in groups.values():
        blocks.sort(key=lambda b: natural_key(b[0]))
        for i, b in enumerate(blocks):
            perm.update(zip(b, blocks[(i + 1) % len(blocks)], strict=True))
    return perm if any(len(b) > 1 for b in groups.values()) else None


def class_orbits(red: Reduced, gens: list[Perm]) -> list[list[int]]:
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


def extend_to_classes(red: Reduced, perm: Perm) -> Perm | None:
    """Extend a switch permutation to the class vertices it induces; None if it induces none."""
    sig_to_class: dict[tuple[Any, ...], int] = {}
    for ci, cls in enumerate(red.classes):
        h = cls[0]
        sig_to_class[(h.weight, h.inner_sig, len(cls), frozenset(h.scoped(red.scope)))] = ci
    full = dict(perm)
    for ci, cls in enumerate(red.classes):
        h = cls[0]
        image = frozenset((perm.get(s, s), c) for s, c in h.scoped(red.scope))
        cj = sig_to_class.get((h.weight, h.inner_sig, len(cls), image))
        if cj is None:
            return None
        full[("out", ci)] = ("out", cj)
        full[("in", ci)] = ("in", cj)
    return full


def is_automorphism(red: Reduced, perm: Perm) -> bool:
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


def arc_orbits(red: Reduced, gens: list[Perm]) -> list[list[int]]:
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


def solve_symmetric(
    red: Reduced,
    gens: list[Perm],
    max_variables: int,
    time_limit_s: float | None = None,
) -> MCFSolution:
    """One commodity per class orbit, one capacity row per arc orbit.

    Averaging any solution over the group generated by ``gens`` gives an invariant one, in
    which class ``k``'s commodity is the image of its orbit representative's, and every arc of
    an arc orbit ``O`` carries ``(1/|O|) sum_R |R| sum_{b in O} f_R(b)`` summed over the class
    orbits ``R``. So the rows ``sum_R |R| sum_{b in O} f_R(b) <= c_O |O|`` are exact
    (docs/bandwidth.md).

    Parameters
    ----------
    red : Reduced
        The reduced network.
    gens : list of Perm
        Verified automorphisms (:func:`symmetry`).
    max_variables : int
        Refuse LPs with more flow variables than this.
    time_limit_s : float, optional
        HiGHS time limit (s).

    Returns
    -------
    MCFSolution
        ``arc_flow`` is the invariant solution's load on every reduced arc (B/s);
        ``commodity_flow`` is None.

    Raises
    ------
    SolverError
        As :func:`topo.flow.solve.lp.max_concurrent_flow`.
    """
    orbits = arc_orbits(red, gens)
    class_orbs = class_orbits(red, gens)
    reps = [orb[0] for orb in class_orbs]
    weights = [float(len(orb)) for orb in class_orbs]
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
        interior_point=True,  # (lp.IPM_ABOVE)
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
