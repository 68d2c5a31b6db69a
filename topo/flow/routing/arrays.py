"""The arcs of a fabric as integer arrays: what the as-routed models compute on.

Nodes are numbered in the graph's order; arc ``2i`` is edge ``i`` as networkx lists it and arc
``2i + 1`` its reverse. Capacities are B/s per direction (all parallel cables of the edge).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from topo.fabric import SWITCH_KINDS, tier_name

GPU, NIC, NVSWITCH, SWITCH = 0, 1, 2, 3
"""Node kind codes of :attr:`Arcs.kind` (every switch kind is ``SWITCH``)."""

KIND_CODE = {"gpu": GPU, "nic": NIC, "nvswitch": NVSWITCH}
"""Kind attribute -> code, for the kinds that are not switches."""


@dataclass
class Arcs:
    """A fabric as integer arrays: its nodes and every directed arc.

    Attributes
    ----------
    nodes : list
        Vertex names; a node id is an index into it.
    kind : numpy.ndarray
        (nodes,) int: ``GPU``, ``NIC``, ``NVSWITCH`` or ``SWITCH``.
    tier : numpy.ndarray
        (nodes,) int: switch tier (1 leaf, 2 spine, 3 core), 0 for the others.
    label : numpy.ndarray
        (nodes,) int: index into ``labels``.
    labels : list of str
        Sorted names of the node classes (``leaf``, ``spine``, ``gpu``, ``nic``...).
    u, v : numpy.ndarray
        (arcs,) int: tail and head node ids.
    cap : numpy.ndarray
        (arcs,) float: capacity in B/s per direction, all cables.
    cables : numpy.ndarray
        (arcs,) int: parallel cables (the edge's ``links``).
    keys, order : numpy.ndarray
        Sorted ``u * len(nodes) + v`` and the arc ids in that order (for :meth:`find`).
    ports : numpy.ndarray
        (nodes,) int: a switch's ``ports``, 0 for the others.
    """

    nodes: list[Any]
    kind: np.ndarray
    tier: np.ndarray
    label: np.ndarray
    labels: list[str]
    u: np.ndarray
    v: np.ndarray
    cap: np.ndarray
    cables: np.ndarray
    keys: np.ndarray
    order: np.ndarray
    ports: np.ndarray

    def find(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Arc ids of the arcs ``u -> v``.

        Parameters
        ----------
        u, v : numpy.ndarray
            Node ids, same shape; every arc ``u -> v`` must exist.

        Returns
        -------
        numpy.ndarray
            Arc ids, the shape of ``u``.
        """
        n = len(self.nodes)
        want = np.asarray(u, dtype=np.int64) * n + np.asarray(v, dtype=np.int64)
        pos = np.searchsorted(self.keys, want)
        pos = np.minimum(pos, len(self.keys) - 1)
        if (self.keys[pos] != want).any():  # pragma: no cover - a bug
            raise AssertionError("arc not in the graph")
        found: np.ndarray = self.order[pos]
        return found

    def tier_classes(self) -> tuple[np.ndarray, np.ndarray]:
        """The tier of every arc as a code into the tier names.

        Returns
        -------
        names : numpy.ndarray
            (tiers,) str: ``<label>-><label>``, e.g. ``leaf->spine``, one per tier present.
        code : numpy.ndarray
            (arcs,) int: the index of each arc's tier in ``names``.
        """
        n_lab = len(self.labels)
        code = self.label[self.u] * n_lab + self.label[self.v]
        # (np.unique of the codes, by counting: fewer than n_lab**2 of them)
        uniq = np.flatnonzero(np.bincount(code, minlength=n_lab * n_lab))
        rank = np.zeros(n_lab * n_lab, dtype=np.int64)
        rank[uniq] = np.arange(len(uniq))
        names = np.array([f"{self.labels[c // n_lab]}->{self.labels[c % n_lab]}" for c in uniq])
        return names, rank[code]

    def tier_names(self) -> np.ndarray:
        """``<label>-><label>`` of every arc, e.g. ``leaf->spine``: (arcs,) str."""
        names, code = self.tier_classes()
        named: np.ndarray = names[code]
        return named


def fabric_arcs(G: nx.Graph) -> Arcs:
    """The nodes and directed arcs of a fabric as :class:`Arcs`.

    Parameters
    ----------
    G : networkx.Graph
        A fabric (schema in :mod:`topo.fabric`); not modified.

    Returns
    -------
    Arcs
        Two arcs per edge (``2i`` as listed, ``2i + 1`` reversed), capacities in B/s.
    """
    node, adj = G._node, G._adj  # the raw dicts: networkx's views cost more than the walk
    nodes = list(node)
    nid = {v: i for i, v in enumerate(nodes)}
    kinds: list[int] = []
    tiers: list[int] = []
    lab: list[str] = []
    ports: list[int] = []
    for d in node.values():
        k = KIND_CODE.get(d["kind"], SWITCH)
        kinds.append(k)
        tiers.append(int(d["tier"]) if k == SWITCH else 0)
        ports.append(int(d["ports"]) if k == SWITCH else 0)
        lab.append(tier_name(int(d["tier"])) if d["kind"] in SWITCH_KINDS else str(d["kind"]))
    labels = sorted(set(lab))
    code = {s: i for i, s in enumerate(labels)}
    eu: list[int] = []
    ev: list[int] = []
    cap: list[float] = []
    links: list[int] = []
    for i, nbrs in enumerate(adj.values()):  # G.edges order: neighbours not listed before
        for b, e in nbrs.items():
            j = nid[b]
            if j >= i:
                eu.append(i)
                ev.append(j)
                cap.append(e["capacity"])
                links.append(e["links"])
    E = len(eu)
    u = np.empty(2 * E, dtype=np.int64)
    v = np.empty(2 * E, dtype=np.int64)
    u[0::2], u[1::2] = eu, ev
    v[0::2], v[1::2] = ev, eu
    keys = u * len(nodes) + v
    order = np.argsort(keys, kind="stable")
    return Arcs(
        nodes=nodes,
        kind=np.array(kinds, dtype=np.int64),
        tier=np.array(tiers, dtype=np.int64),
        label=np.array([code[s] for s in lab], dtype=np.int64),
        labels=labels,
        u=u,
        v=v,
        cap=np.repeat(np.array(cap, dtype=np.float64), 2),
        cables=np.repeat(np.array(links, dtype=np.int64), 2),
        keys=keys[order],
        order=order,
        ports=np.array(ports, dtype=np.int64),
    )


__all__ = ["GPU", "KIND_CODE", "NIC", "NVSWITCH", "SWITCH", "Arcs", "fabric_arcs"]
