"""The switches of a fabric and the links between them as index arrays.

The certified routing (:mod:`topo.flow.exact.certify`) works on the switch graph alone: its planes,
tiers, pods and the loads of its link directions. Walking the graph's adjacency dicts for each
of these visits every switch's neighbours (NICs included) again and again: a 65,536-GPU FT3
has 5,120 switches with 64 neighbours each. :class:`SwitchArcs` walks them once, and the rest
is array arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter

import networkx as nx
import numpy as np

from topo.fabric import SWITCH_KINDS, natural_key


@dataclass(frozen=True)
class SwitchArcs:
    """Every switch link direction of a fabric, sorted by tail then head.

    Attributes
    ----------
    names : list of str
        The switches, in the graph's node order; a switch is known by its position here.
    index : dict of str to int
        Switch name -> position.
    tier : numpy.ndarray of int, shape (switches,)
        Each switch's ``tier`` attribute (-1 where it has none).
    tail, head : numpy.ndarray of int, shape (arcs,)
        The two ends of each link direction (both directions of every switch link).
    cap : numpy.ndarray of float, shape (arcs,)
        Its capacity (B/s).
    start : numpy.ndarray of int, shape (switches + 1,)
        The arcs leaving switch ``i`` are ``start[i]:start[i + 1]``.
    """

    names: list[str]
    index: dict[str, int]
    tier: np.ndarray
    tail: np.ndarray
    head: np.ndarray
    cap: np.ndarray
    start: np.ndarray

    @staticmethod
    def of(G: nx.Graph) -> SwitchArcs:
        """The switch arcs of fabric ``G`` (one pass over the switches' neighbours).

        Parameters
        ----------
        G : networkx.Graph
            A fabric (:mod:`topo.fabric`).

        Returns
        -------
        SwitchArcs
        """
        nodes, adj = G._node, G._adj  # the raw dicts: this visits every switch's neighbours
        names = [v for v, d in nodes.items() if d["kind"] in SWITCH_KINDS]
        index = {s: i for i, s in enumerate(names)}
        # Each switch's neighbours and capacities, looked up in C (map), non-switches as -1.
        heads: list[int] = []
        caps: list[float] = []
        count = []
        get, capacity = index.get, itemgetter("capacity")
        for s in names:
            nb = adj[s]
            heads.extend(map(get, nb, repeat(-1, len(nb))))
            caps.extend(map(capacity, nb.values()))
            count.append(len(nb))
        head = np.array(heads, dtype=np.int64)
        keep = head >= 0
        tail = np.repeat(np.arange(len(names)), count)[keep]
        head, cap = head[keep], np.array(caps, dtype=float)[keep]
        order = np.lexsort((head, tail))  # (by tail already; by head within each)
        start = np.zeros(len(names) + 1, dtype=np.int64)
        np.cumsum(np.bincount(tail, minlength=len(names)), out=start[1:])
        tier = np.array([int(nodes[s].get("tier", -1)) for s in names], dtype=np.int64)
        return SwitchArcs(names, index, tier, tail[order], head[order], cap[order], start)

    def ids(self, names: list[str]) -> np.ndarray:
        """The positions of the switches ``names``."""
        index = self.index
        return np.array([index[s] for s in names], dtype=np.int64)

    def leaving(self, switches: np.ndarray) -> np.ndarray:
        """The arcs leaving the given switches (positions), in arc order per switch."""
        lo, hi = self.start[switches], self.start[switches + 1]
        n = hi - lo
        if not n.sum():
            return np.zeros(0, dtype=np.int64)
        first = np.repeat(lo - (np.cumsum(n) - n), n)
        return np.asarray(first + np.arange(int(n.sum())))

    def arc_of(self, tail: np.ndarray, head: np.ndarray) -> np.ndarray:
        """The arc of each ``(tail, head)`` pair of switch positions (every pair must be a
        link direction of the fabric)."""
        n = len(self.names)
        key = self.tail * n + self.head  # (sorted: the arcs are by tail, then head)
        at = np.searchsorted(key, tail * n + head)
        if len(at) and (at.max() >= len(key) or np.any(key[at] != tail * n + head)):
            raise AssertionError("a load on a pair of switches that no link joins")
        return np.asarray(at)

    def components(self, keep: np.ndarray) -> np.ndarray:
        """The connected components of the switches with ``keep`` true, over the links
        between them: a label per switch (-1 where not kept), components numbered in the
        order of their first switch in natural name order.

        Min-label propagation with pointer jumping: each round every kept switch takes the
        least label among itself and its kept neighbours, then its label's label; rounds
        stop when nothing changes (at most the components' diameter, plus the jumps)."""
        n = len(self.names)
        inside = keep[self.tail] & keep[self.head]
        t, h = self.tail[inside], self.head[inside]
        label = np.arange(n)
        while True:
            new = label.copy()
            np.minimum.at(new, t, label[h])
            new = new[new]
            if np.array_equal(new, label):
                break
            label = new
        out = np.full(n, -1, dtype=np.int64)
        kept = np.flatnonzero(keep)
        first: dict[int, tuple[object, ...]] = {}  # each component's least natural name key
        for i, r in zip(kept.tolist(), label[kept].tolist(), strict=True):
            k = natural_key(self.names[i])
            if r not in first or k < first[r]:  # type: ignore[operator]
                first[r] = k
        number = {r: q for q, r in enumerate(sorted(first, key=first.__getitem__))}  # type: ignore[arg-type]
        out[kept] = [number[r] for r in label[kept].tolist()]
        return out


__all__ = ["SwitchArcs"]
