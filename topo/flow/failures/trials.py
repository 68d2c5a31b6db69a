"""Many failure trials on one fabric: the intact fabric read once, each trial's damage applied
to what was read.

A trial of :func:`topo.flow.failures.resilience.resilience` fails a few cables of a large
fabric (8 of the 32,768 of a 16,384-GPU MPFT). Copying the whole graph, finding its parts,
contracting every server and comparing every plane again for each trial costs far more than
the few cables change. :class:`TrialFabric` keeps what the intact fabric gives once, and
:meth:`TrialFabric.damage` derives each damaged fabric's from it:

- **the damaged graph** shares a copy of the intact one's vertex and edge attribute dicts
  and the adjacency rows of every vertex but the failed cables' ends, which get their own
  (in the order of the copy :func:`topo.flow.failures.damage.fail` damages,
  :func:`~topo.flow.failures.damage.copy_fabric`);
- **the failures** are drawn exactly as :func:`topo.flow.failures.damage.fail` draws them
  (:func:`~topo.flow.failures.damage.fail_cables`, the same stream, cable list and order);
- **connectivity**: the damaged fabric has the intact one's parts when the two ends of every
  removed cable are still joined (each removed edge joined two vertices already connected
  without it), found by a search from both ends that stops where they meet; likewise the
  switch components (planes), searching among switches only;
- **the contracted servers** are the intact ones, with those whose cables failed contracted
  again (:meth:`topo.flow.reduce.servers.ServerIndex.contract`, as
  :func:`~topo.flow.reduce.servers.contract_servers` contracts each);
- **the planes**: the failures touch few of them. A plane is *damaged* when one of its switch
  links failed or a server's attachment to it changed. When the intact planes are all copies
  of one another, two undamaged planes compare as they did intact (their links and
  attachments are unchanged), and a damaged plane is no copy of an undamaged one: it has
  fewer or weaker switch links or less attached capacity, and a plane isomorphism preserves
  both totals. Two damaged planes are copies only if their changes from the intact plane
  are equal: each switch link capacity lost and gained, and each server's attachment
  capacities lost and gained there (as multisets), all of which an isomorphism keeps. Only
  damaged planes with equal changes are compared on the damaged fabric.

Whenever a trial falls outside this (switch or named failures, a failed cable whose ends
fell apart, routing other than optimal, a fabric without GPUs), :meth:`TrialFabric.damage`
returns None and the trial runs from scratch. Either way its result is the from-scratch one,
bit for bit: every list handed on is the one the flow code would build, in the same order.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import networkx as nx
import numpy as np

from topo.fabric import switch_components, terminal_kind
from topo.flow.failures.damage import FailureSet, cable_counts, cables, copy_fabric, fail_cables
from topo.flow.reduce import (
    Alike,
    ContractedServer,
    Known,
    Scope,
    ServerIndex,
    plane_isomorphism,
    scope,
)
from topo.flow.seeds import FAILURES, stream

__all__ = ["Damaged", "TrialFabric", "joined"]

FAST_KEYS = frozenset(
    {
        "links",
        "switches",
        "seed",
        "routing",
        "flows_per_pair",
        "pxn",
        "max_variables",
        "time_limit_s",
        "named",
        "method",
        "link_loads",
    }
)
"""The trial arguments :meth:`TrialFabric.damage` understands (those of
:func:`topo.flow.failures.resilience.damaged_bandwidth`)."""


@dataclass(frozen=True)
class Damaged:
    """One trial's damaged fabric, derived from the intact one (:meth:`TrialFabric.damage`).

    Attributes
    ----------
    graph : networkx.Graph
        The damaged fabric; it shares attribute dicts and adjacency rows with the intact one,
        so it is read, never modified.
    failures : FailureSet
        What failed (nothing is cut off: a trial that cuts servers off runs from scratch).
    known : Known
        Its contracted servers, connectivity and planes, for
        :func:`topo.flow.door.uniform_flow`.
    """

    graph: nx.Graph
    failures: FailureSet
    known: Known


class TrialFabric:
    """The intact fabric of a study, and what every trial derives its damaged fabric from.

    What it reads of the fabric is read on first use, once; pickled (shipped to a Dask
    worker), it carries only the fabric, and each worker reads it again once.

    Parameters
    ----------
    G : networkx.Graph
        The intact fabric (not modified; not to be modified while this is in use).

    Examples
    --------
    >>> from topo.builders import build
    >>> tf = TrialFabric(build("mpft", switch_ports=8, gpus_per_node=4, nics_per_node=4))
    >>> d = tf.damage({"links": 2, "seed": 1})   # as fail(G, links=2, seed=1) draws them
    >>> d.failures.links
    (('node0/nic3', 'p3/leaf0'), ('p1/leaf4', 'p1/spine2'))
    >>> d.known.connected, len(d.known.servers)  # 32 servers of 4 GPUs, none cut off
    (True, 32)
    """

    def __init__(self, G: nx.Graph) -> None:
        self.G = G
        self._pairs: dict[tuple[int, int], list[dict[str, str]] | None] = {}

    def __reduce__(self) -> tuple[type[TrialFabric], tuple[nx.Graph]]:
        return TrialFabric, (self.G,)

    @cached_property
    def _base(self) -> nx.Graph:
        """The copy every damaged fabric starts from (:func:`fail` damages a copy, whose
        vertices list their neighbours in the copy's order, not always ``G``'s)."""
        return copy_fabric(self.G)

    @cached_property
    def _cables(self) -> tuple[list[tuple[str, str]], np.ndarray]:
        edges = cables(self._base)
        return edges, cable_counts(self._base, edges)

    @cached_property
    def _fast(self) -> bool:
        """Does the fast path apply to this fabric at all: GPUs, and connected?"""
        G = self._base
        return terminal_kind(G) == "gpu" and G.number_of_nodes() > 0 and nx.is_connected(G)

    @cached_property
    def _index(self) -> ServerIndex:
        return ServerIndex.of(self._base)

    @cached_property
    def _hosts(self) -> tuple[list[ContractedServer], dict[Hashable, int]]:
        """:func:`contract_servers` of the copy (it has GPUs), and each server's position."""
        index = self._index
        hs = [h for h in index.contract(self._base, index.members) if h.weight > 0]
        return hs, {h.id: i for i, h in enumerate(hs)}

    @cached_property
    def _planes(self) -> tuple[list[list[str]], dict[str, int], list[dict[str, str]] | None]:
        """The switch components, each switch's, and the planes' isomorphism when they are
        all alike (else None)."""
        G = self._base
        comps = switch_components(G)
        plane_of = {s: i for i, c in enumerate(comps) for s in c}
        maps = plane_isomorphism(G, comps, self._hosts[0]) if len(comps) > 1 else None
        return comps, plane_of, maps

    def read(self) -> None:
        """Read the intact fabric now (else on the first trial that needs it)."""
        if self._fast:
            self._cables, self._index.server_of, self._hosts, self._planes  # noqa: B018

    def damage(self, task: dict[str, Any]) -> Damaged | None:
        """The damaged fabric of one trial, or None when the trial is to run from scratch.

        Parameters
        ----------
        task : dict
            The trial's arguments (of :func:`topo.flow.failures.resilience.damaged_bandwidth`).

        Returns
        -------
        Damaged or None
            None unless the trial fails only random cables (``links`` >= 1, no switches,
            nothing named), its routing is optimal (``method`` auto), the fabric has GPUs
            and is connected, and every failed cable's ends are still joined.
        """
        if (
            not task.keys() <= FAST_KEYS
            or task.get("switches", 0)
            or tuple(task.get("named", ()))
            or task.get("routing", "optimal") != "optimal"
            or task.get("method", "auto") != "auto"
            or not self._fast
        ):
            return None
        links = int(task.get("links", 0))
        edges, count = self._cables
        if not 0 < links <= int(count.sum()):
            return None
        G = self._base
        H = nx.Graph()
        H.graph.update(G.graph)
        H._node.update(G._node)
        adj = H._adj
        adj.update(G._adj)
        own: set[Hashable] = set()
        touched: list[tuple[Any, Any]] = []

        def before(u: Any, v: Any) -> None:  # the edge and its ends' rows: the trial's own
            for x in (u, v):
                if x not in own:
                    adj[x] = dict(adj[x])
                    own.add(x)
            adj[u][v] = adj[v][u] = dict(adj[u][v])
            touched.append((u, v))

        failed: list[tuple[Any, Any]] = []
        lost = fail_cables(
            H, edges, count, stream(task.get("seed", 0), FAILURES), links, failed, before=before
        )
        failures = FailureSet(links=tuple(failed), capacity_lost_Bps=lost)
        removed = [(u, v) for u, v in touched if v not in adj[u]]
        if not all(joined(adj, u, v) for u, v in removed):
            return None
        index = self._index
        is_switch = index.is_switch
        comps, plane_of, maps = self._planes
        split = any(
            not joined(adj, u, v, is_switch)
            for u, v in removed
            if u in is_switch and v in is_switch
        )
        hs0, pos = self._hosts
        hs = list(hs0)
        # Each damaged plane's change: its switch links' capacities (-1 per one gone, +1 per
        # one come, as a multiset) and each server's attachment capacities there, likewise.
        links_change: dict[int, Counter[float]] = defaultdict(Counter)
        for u, v in touched:
            if u in is_switch and v in is_switch:
                change = links_change[plane_of[u]]
                change[float(G._adj[u][v]["capacity"])] -= 1
                if v in adj[u]:
                    change[float(adj[u][v]["capacity"])] += 1
        hosts_change: dict[int, set[tuple[Hashable, tuple[tuple[float, int], ...]]]]
        hosts_change = defaultdict(set)
        changed = {index.server_of[x] for e in touched for x in e if x not in is_switch}
        for sid in changed:
            i = pos.get(sid)
            if i is None:
                continue
            (h,) = index.contract(H, [sid])
            hs[i] = h
            was, now = hs0[i].attach, h.attach
            per_plane: dict[int, Counter[float]] = defaultdict(Counter)
            for s in was.keys() | now.keys():
                if was.get(s) != now.get(s):
                    change = per_plane[plane_of[s]]
                    if s in was:
                        change[was[s]] -= 1
                    if s in now:
                        change[now[s]] += 1
            for p, change in per_plane.items():
                hosts_change[p].add((sid, tuple(sorted((c, k) for c, k in change.items() if k))))
        if split:
            return Damaged(H, failures, Known(hs, "gpu", connected=True))
        damaged = {
            p: (
                tuple(sorted((c, k) for c, k in links_change.get(p, Counter()).items() if k)),
                frozenset(hosts_change.get(p, ())),
            )
            for p in links_change.keys() | hosts_change.keys()
        }

        def find_scope() -> Scope:
            alike = None if maps is None else self._alike(H, hs, damaged)
            return scope(H, hs, comps=comps, alike=alike)

        known = Known(hs, "gpu", connected=True, switch_components=comps, scope=find_scope)
        return Damaged(H, failures, known)

    def _alike(
        self, H: nx.Graph, hs: list[ContractedServer], damaged: Mapping[int, Hashable]
    ) -> Alike:
        """:func:`topo.flow.reduce.planes.plane_isomorphism` on the damaged fabric's planes,
        from what is known (module notes); ``damaged``: each damaged plane's change. Only
        damaged planes with equal changes are compared on ``H``. Valid when the intact planes
        are all alike."""
        comps, _, maps = self._planes
        hs0, _ = self._hosts

        def alike(which: list[int], partial: bool) -> list[dict[str, str]] | None:
            hit = [i for i in which if i in damaged]
            if not hit:
                if not partial and len(which) == len(comps):
                    return maps
                if partial and len(which) == 2:
                    key = (which[0], which[1])
                    if key not in self._pairs:
                        self._pairs[key] = plane_isomorphism(
                            self._base, [comps[i] for i in which], hs0, partial=True
                        )
                    return self._pairs[key]
            elif len(hit) < len(which):
                return None  # (a damaged plane is no copy of an undamaged one)
            elif len({damaged[i] for i in which}) > 1:
                return None  # (an isomorphism keeps both multisets: equal changes)
            return plane_isomorphism(H, [comps[i] for i in which], hs, partial=partial)

        return alike


def joined(
    adj: dict[Any, dict[Any, Any]], a: Hashable, b: Hashable, within: Iterable[Hashable] = ()
) -> bool:
    """Are ``a`` and ``b`` joined by a path (through vertices of ``within`` only, when
    given)? A breadth-first search from both ends, growing the smaller side, that stops
    where they meet or when one side is exhausted (then that side is a whole part).

    Parameters
    ----------
    adj : dict
        A graph's adjacency (``G._adj``).
    a, b : hashable
        Two vertices (of ``within``, when given).
    within : collection, optional
        The vertices a path may use (a set); empty: all.

    Returns
    -------
    bool
    """
    if a == b:
        return True
    inside = within if within else None
    seen = ({a}, {b})
    front = [[a], [b]]
    while front[0] and front[1]:
        i = 0 if len(front[0]) <= len(front[1]) else 1
        mine, other = seen[i], seen[1 - i]
        grown = []
        for x in front[i]:
            for y in adj[x]:
                if inside is not None and y not in inside:
                    continue
                if y in other:
                    return True
                if y not in mine:
                    mine.add(y)
                    grown.append(y)
        front[i] = grown
    return False
