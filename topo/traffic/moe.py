"""The network traffic of an expert-parallel (EP) MoE layer: dispatch and combine.

An EP group of ``ep`` ranks spans ``ep / G`` servers, ``G`` ranks each: rank ``r`` is on the
``r // G``-th server (:class:`topo.moe.traffic.EPLayout`). A phase's network hops are a
rank-to-rank matrix of *copies* (one copy = one token's activation; naive or DeepEP-style
delivery, :func:`topo.moe.traffic.copy_matrices`). Times the bytes of one copy, summed over the
ranks of each server, it is the server-to-server demand the fabric must carry; combine sends
dispatch's copies back along the same hops (the transpose). Units: bytes.

References
----------
DeepEP README and ``csrc/kernels/internode.cu`` (RDMA to the same-index GPU of each destination
node, NVLink forwarding, combine in reverse); DeepSeek-AI, "DeepSeek-V3 Technical Report",
arXiv 2412.19437, §3.4.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from topo.errors import TopoError
from topo.fabric import natural_key
from topo.traffic.demand import Demand


def server_matrix(rank_bytes: np.ndarray, gpus_per_node: int) -> np.ndarray:
    """Sum a rank-to-rank matrix into a server-to-server one.

    Parameters
    ----------
    rank_bytes : numpy.ndarray, shape (ep, ep)
        Bytes (or copies) from rank ``i`` to rank ``j``; the ranks of a server are a contiguous
        block of ``gpus_per_node``.
    gpus_per_node : int
        Ranks per server ``G`` (divides ``ep``).

    Returns
    -------
    numpy.ndarray, shape (ep / G, ep / G)
        Entry ``[a, b]``: the sum over ranks of server ``a`` to ranks of server ``b`` (the
        diagonal holds the intra-server sums).

    Examples
    --------
    >>> server_matrix(np.arange(16).reshape(4, 4), 2).tolist()
    [[10, 18], [42, 50]]
    """
    m = np.asarray(rank_bytes)
    n = m.shape[0] // gpus_per_node
    out: np.ndarray = m.reshape(n, gpus_per_node, n, gpus_per_node).sum(axis=(1, 3))
    return out


def ep_server_demand(
    rank_bytes: np.ndarray,
    servers: Sequence[Hashable],
    gpus_per_node: int,
    *,
    name: str = "dispatch",
) -> Demand | None:
    """The server-to-server demand of a rank-to-rank byte matrix.

    Parameters
    ----------
    rank_bytes : numpy.ndarray, shape (ep, ep)
        Network bytes from rank ``i`` to rank ``j`` (B); ``ep = len(servers) * gpus_per_node``.
    servers : sequence of server ids
        The server of each block of ``gpus_per_node`` consecutive ranks, in rank order.
    gpus_per_node : int
        Ranks per server ``G``.
    name : str
        The phase, for reports.

    Returns
    -------
    Demand or None
        Server level, ``D[s_a, s_b] = sum of rank_bytes[i, j]`` over ranks ``i`` of server
        ``a`` and ``j`` of server ``b != a``; None when no byte crosses between servers.

    Raises
    ------
    TopoError
        The matrix is not ``ep x ep``, or has a negative or non-finite entry.

    Examples
    --------
    >>> m = np.zeros((4, 4)); m[0, 2] = 3.0; m[1, 3] = 4.0; m[0, 1] = 9.0   # 2 servers x 2
    >>> sorted(ep_server_demand(m, ["a", "b"], 2).pairs())
    [(('a', 'b'), 7.0)]
    """
    n, g = len(servers), gpus_per_node
    m = np.asarray(rank_bytes, dtype=float)
    if g < 1 or m.shape != (n * g, n * g):
        raise TopoError(
            f"a rank matrix of {n} servers x {g} ranks is {n * g} x {n * g}, not {m.shape}"
        )
    node = server_matrix(m, g)
    np.fill_diagonal(node, 0.0)
    entries = {
        (servers[a], servers[b]): float(node[a, b]) for a, b in zip(*np.nonzero(node), strict=True)
    }
    if not entries:
        return None
    return Demand("server", tuple(sorted(servers, key=natural_key)), entries, name=name)


def dispatch(
    ib_copies: np.ndarray, bytes_per_copy: float, servers: Sequence[Hashable], gpus_per_node: int
) -> Demand | None:
    """The server-to-server demand of an EP dispatch.

    Parameters
    ----------
    ib_copies : numpy.ndarray of int, shape (ep, ep)
        Network copies from rank ``i`` to rank ``j``
        (:attr:`topo.moe.traffic.CopyMatrices.ib`).
    bytes_per_copy : float
        Bytes of one token's activation on the wire (B).
    servers : sequence of server ids
        The server of each block of ``gpus_per_node`` ranks, in rank order.
    gpus_per_node : int
        Ranks per server.

    Returns
    -------
    Demand or None
        As :func:`ep_server_demand` of ``bytes_per_copy * ib_copies``.

    Examples
    --------
    >>> c = np.zeros((4, 4), dtype=int); c[0, 2] = 1; c[1, 2] = 2   # 2 servers x 2 ranks
    >>> sorted(dispatch(c, 100, [0, 1], 2).pairs())
    [((0, 1), 300.0)]
    """
    m = np.asarray(ib_copies).astype(float) * bytes_per_copy
    return ep_server_demand(m, servers, gpus_per_node, name="dispatch")


def combine(
    ib_copies: np.ndarray, bytes_per_copy: float, servers: Sequence[Hashable], gpus_per_node: int
) -> Demand | None:
    """The server-to-server demand of the combine that returns a dispatch's tokens.

    Parameters
    ----------
    ib_copies : numpy.ndarray of int, shape (ep, ep)
        The *dispatch's* network copies; combine sends them back (the transpose).
    bytes_per_copy : float
        Bytes of one expert output on the wire (B).
    servers, gpus_per_node
        As :func:`dispatch`.

    Returns
    -------
    Demand or None
        As :func:`ep_server_demand` of ``bytes_per_copy * ib_copies.T``.

    Examples
    --------
    >>> c = np.zeros((4, 4), dtype=int); c[0, 2] = 1; c[1, 2] = 2
    >>> sorted(combine(c, 200, [0, 1], 2).pairs())
    [((1, 0), 600.0)]
    """
    m = np.asarray(ib_copies).T.astype(float) * bytes_per_copy
    return ep_server_demand(m, servers, gpus_per_node, name="combine")
