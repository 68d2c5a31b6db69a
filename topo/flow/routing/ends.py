"""The terminals as routing sees them: NICs, their leaves and classes, and the aggregated demand
``w(x, y) = S[x, c(y)] D[y]`` between NICs (:class:`Ends`, built by
:func:`topo.flow.routing.endpoints.traffic_ends`), with the sums the routers and the report take
of it: the demand between leaves, in chunks, per class and per source, and the pairs inside one
server that the aggregate counts and must be removed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

CHUNK_ELEMENTS = 1 << 22
"""Work-array budget (elements) for one chunk of destination leaves; a fixed constant, so that
the sequence of random draws, hence an ECMP result, depends on the seed alone."""


@dataclass
class Ends:
    """Terminals, NICs and the aggregated demand ``w(x, y) = S[x, c(y)] D[y]`` (other server).

    Attributes
    ----------
    terminal : {"gpu", "endpoint"}
        What the terminals are.
    n : int
        Terminals.
    servers : int
        Servers of the NICs (ids ``0 .. servers - 1``).
    nic_ids, nic_leaf, nic_server, nic_class : numpy.ndarray
        (nics,) int: node id, leaf (local index), server and destination class of each NIC
        that serves terminals, in port order (by server, then NIC index).
    R : int
        Destination classes (NIC indices with PXN, else 1).
    S : numpy.ndarray
        (nics, R) float: source terminals whose flows to class ``r`` leave by NIC ``x``.
    D : numpy.ndarray
        (nics,) float: terminals whose own NIC is ``y``.
    d : numpy.ndarray
        (nics,) int: D-mod-k destination index (leaf rank times the largest host count of a
        leaf, plus the rank below the leaf).
    up_arc, dn_arc : numpy.ndarray
        (nics,) int: the NIC -> leaf and leaf -> NIC arc ids.
    intra_arc, intra_load : numpy.ndarray
        Arcs inside servers (PCIe, NVLink) and their pair-units per unit pair rate.
    pxn : bool
        Whether PXN applied.
    node_names : int
        Distinct ``node`` attributes of the terminals' servers.
    ports : int
        Ports of the GPUs' NICs (each pair has ``flows_per_pair`` flows on every port).
    dead : int
        GPUs whose own NIC is not cabled, served by their server's other NICs (PXN).
    notes : tuple of str
        What the NIC model assumed (multi-port NICs, dead NICs), for the result's notes.

    With multi-port NICs or dead NICs (:mod:`topo.flow.routing.netdevs`) a NIC can appear in
    several rows, one per destination class it receives; such rows share the NIC's arcs and
    its D-mod-k index.
    """

    terminal: str
    n: int
    servers: int
    nic_ids: np.ndarray
    nic_leaf: np.ndarray
    nic_server: np.ndarray
    nic_class: np.ndarray
    R: int
    S: np.ndarray
    D: np.ndarray
    d: np.ndarray
    up_arc: np.ndarray
    dn_arc: np.ndarray
    intra_arc: np.ndarray
    intra_load: np.ndarray
    pxn: bool
    node_names: int
    ports: int = 1
    dead: int = 0
    notes: tuple[str, ...] = ()


def same_server_pairs(e: Ends) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The NIC pairs of one server, whose demand the aggregate counts and must be removed.

    Parameters
    ----------
    e : Ends

    Returns
    -------
    xs, ys, val : numpy.ndarray
        Every ``(x, y)`` NIC pair of one server with demand ``S[x, c(y)] D[y] > 0``
        (pair-units), same length.
    """
    order = np.argsort(e.nic_server, kind="stable")
    srv = e.nic_server[order]
    m = np.bincount(srv, minlength=e.servers)
    start = np.concatenate(([0], np.cumsum(m)[:-1]))
    reps = m[srv]
    xs = np.repeat(order, reps)
    pos = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
    ys = order[np.repeat(start[srv], reps) + pos]
    val = e.S[xs, e.nic_class[ys]] * e.D[ys]
    keep = val > 0
    return xs[keep], ys[keep], val[keep]


def leaf_demand(e: Ends, L: int) -> tuple[np.ndarray, np.ndarray]:
    """The demand's factors on the leaves.

    Parameters
    ----------
    e : Ends
    L : int
        Leaves.

    Returns
    -------
    SA : numpy.ndarray
        (L, R): source terminals per leaf and destination class.
    DB : numpy.ndarray
        (R, L): destination terminals per class and leaf.
    """
    SA = np.zeros((L, e.R))
    np.add.at(SA, e.nic_leaf, e.S)
    DB = np.zeros((e.R, L))
    np.add.at(DB, (e.nic_class, e.nic_leaf), e.D)
    return SA, DB


def leaf_matrix_chunks(e: Ends, L: int, J: int) -> Iterator[tuple[int, int, np.ndarray]]:
    """The leaf-to-leaf demand, ``J`` destination leaves at a time.

    Parameters
    ----------
    e : Ends
    L : int
        Leaves.
    J : int
        Destination leaves per chunk.

    Yields
    ------
    B0, B1 : int
        The chunk's destination leaves ``B0 .. B1 - 1``.
    W : numpy.ndarray
        (L, B1 - B0) float: pair-units from each leaf to those leaves (same-server pairs
        removed, round-off below 1e-9 set to 0).
    """
    SA, DB = leaf_demand(e, L)
    xs, ys, val = same_server_pairs(e)
    a_leaf, b_leaf = e.nic_leaf[xs], e.nic_leaf[ys]
    o = np.argsort(b_leaf, kind="stable")
    a_leaf, b_leaf, val = a_leaf[o], b_leaf[o], val[o]
    for B0 in range(0, L, J):
        B1 = min(L, B0 + J)
        W = SA @ DB[:, B0:B1]
        lo, hi = np.searchsorted(b_leaf, [B0, B1])
        corr = np.bincount(
            a_leaf[lo:hi] * (B1 - B0) + (b_leaf[lo:hi] - B0),
            weights=val[lo:hi],
            minlength=L * (B1 - B0),
        )
        W -= corr.reshape(L, B1 - B0)
        W[W < 1e-9] = 0.0
        yield B0, B1, W


def class_totals(e: Ends) -> np.ndarray:
    """(nics, R) float: destinations of class ``r`` outside NIC ``x``'s server (pair-units per
    source)."""
    DR = np.bincount(e.nic_class, weights=e.D, minlength=e.R)
    own = np.zeros((e.servers, e.R))
    np.add.at(own, (e.nic_server, e.nic_class), e.D)
    totals: np.ndarray = DR[None, :] - own[e.nic_server]
    return totals


def source_totals(e: Ends) -> np.ndarray:
    """(nics,) float: sources outside NIC ``y``'s server whose flows to ``y``'s class leave
    the server."""
    ST = e.S.sum(0)
    own = np.zeros((e.servers, e.R))
    np.add.at(own, e.nic_server, e.S)
    totals: np.ndarray = ST[e.nic_class] - own[e.nic_server, e.nic_class]
    return totals


__all__ = [
    "CHUNK_ELEMENTS",
    "Ends",
    "class_totals",
    "leaf_demand",
    "leaf_matrix_chunks",
    "same_server_pairs",
    "source_totals",
]
