"""The server-to-server traffic of NCCL's collective algorithms: ring and double-binary-tree
steps, and the all-to-all of a sub-cluster.

A collective over ``nodes`` servers (in the order given: NCCL's ring order, the tree's rank
order) moves, per byte of its *unit*, the bytes below across the network. Intra-server traffic
(NVLink) is left out: it is not fabric traffic. Units: bytes.

References
----------
NCCL ``src/graph/rings.cc``, ``src/graph/trees.cc`` (``ncclGetBtree``, ``ncclGetDtree``);
P. Sanders, J. Speck and J. L. Träff, "Two-tree algorithms for full bandwidth broadcast,
reduction and scan", Parallel Computing 35(12), 2009.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from topo.errors import TopoError
from topo.fabric import natural_key
from topo.traffic.demand import Demand


def btree_parent(rank: int, nranks: int) -> int:
    """Parent of ``rank`` in NCCL's binary tree over ``nranks`` (-1 for the root, rank 0).

    The parent clears the rank's lowest set bit and sets the next one up, or only clears it
    when that falls outside the ranks (NCCL ``src/graph/trees.cc``, ``ncclGetBtree``).

    Parameters
    ----------
    rank : int
        A rank, ``0 <= rank < nranks``.
    nranks : int
        Ranks in the tree.

    Returns
    -------
    int
        The parent rank, or -1 for rank 0.

    Examples
    --------
    >>> [btree_parent(r, 4) for r in range(4)]
    [-1, 2, 0, 2]
    """
    if rank == 0:
        return -1
    bit = rank & -rank
    up = (rank ^ bit) | (bit << 1)
    return up if up < nranks else rank ^ bit


def double_binary_tree(nranks: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The two trees of NCCL's double binary tree, as (child, parent) edges.

    Tree 0 is :func:`btree_parent`'s tree; tree 1 is it mirrored (rank -> nranks-1-rank) when
    ``nranks`` is even and shifted by one when odd, so that the leaves of one tree are inner
    ranks of the other (NCCL ``ncclGetDtree``; Sanders, Speck and Träff, Parallel Computing
    35(12), 2009).

    Parameters
    ----------
    nranks : int
        Ranks (>= 1).

    Returns
    -------
    (list of (int, int), list of (int, int))
        The ``nranks - 1`` (child, parent) edges of each tree.

    Examples
    --------
    >>> double_binary_tree(4)
    ([(1, 2), (2, 0), (3, 2)], [(2, 1), (1, 3), (0, 1)])
    """
    t0 = [(r, btree_parent(r, nranks)) for r in range(1, nranks)]
    if nranks % 2 == 0:
        t1 = [(nranks - 1 - c, nranks - 1 - p) for c, p in t0]
    else:
        t1 = [((c + 1) % nranks, (p + 1) % nranks) for c, p in t0]
    return t0, t1


def _servers(servers: Sequence[Hashable], what: str) -> tuple[Hashable, ...]:
    if len(servers) < 2:
        raise TopoError(f"a {what} across servers needs at least two servers, got {len(servers)}")
    if len(set(servers)) != len(servers):
        raise TopoError(f"a {what} visits each server once; the servers given repeat")
    return tuple(sorted(servers, key=natural_key))


def ring_step(servers: Sequence[Hashable], bytes_per_server: float = 1.0) -> Demand:
    """One step of a ring across servers: each sends ``bytes_per_server`` to the next.

    Server ``servers[i]`` sends to ``servers[(i + 1) % n]`` (the last to the first), the
    neighbour exchange of NCCL's ring algorithms (each step of an all-reduce, all-gather or
    reduce-scatter moves one chunk per server this way).

    Parameters
    ----------
    servers : sequence of server ids
        The ring order (at least two, distinct).
    bytes_per_server : float
        Bytes each server sends to its successor (B).

    Returns
    -------
    Demand
        Server level; ``n`` entries (two servers exchange both ways).

    Raises
    ------
    TopoError
        Fewer than two servers, a repeated server, or ``bytes_per_server`` not finite and > 0.

    Examples
    --------
    >>> sorted(ring_step([0, 1, 2, 3], 2.0).pairs())
    [((0, 1), 2.0), ((1, 2), 2.0), ((2, 3), 2.0), ((3, 0), 2.0)]
    """
    terms = _servers(servers, "ring")
    _positive(bytes_per_server)
    n = len(servers)
    entries = {(servers[i], servers[(i + 1) % n]): float(bytes_per_server) for i in range(n)}
    return Demand("server", terms, entries, name="ring step")


def double_binary_tree_step(servers: Sequence[Hashable], buffer_bytes: float = 1.0) -> Demand:
    """An all-reduce's traffic across servers on NCCL's double binary tree.

    Each of the two trees (:func:`double_binary_tree` over ``len(servers)`` ranks, rank ``r``
    being ``servers[r]``) carries half the buffer: reduced up from child to parent and
    broadcast back down, so every tree edge carries ``buffer_bytes / 2`` each way, and a pair
    joined in both trees carries it twice.

    Parameters
    ----------
    servers : sequence of server ids
        The rank order (at least two, distinct).
    buffer_bytes : float
        The all-reduce buffer (B).

    Returns
    -------
    Demand
        Server level.

    Raises
    ------
    TopoError
        Fewer than two servers, a repeated server, or ``buffer_bytes`` not finite and > 0.

    Examples
    --------
    >>> d = double_binary_tree_step([0, 1], 2.0)   # both trees join 0 and 1
    >>> sorted(d.pairs())
    [((0, 1), 2.0), ((1, 0), 2.0)]
    """
    terms = _servers(servers, "tree")
    _positive(buffer_bytes)
    entries: dict[tuple[Hashable, Hashable], float] = {}
    for edges in double_binary_tree(len(servers)):
        for c, p in edges:
            for a, b in ((c, p), (p, c)):
                key = (servers[a], servers[b])
                entries[key] = entries.get(key, 0.0) + buffer_bytes / 2
    return Demand("server", terms, entries, name="tree step")


def subcluster_alltoall(
    servers: Sequence[Hashable], gpus_per_node: int, bytes_per_pair: float = 1.0
) -> Demand:
    """The all-to-all of ``gpus_per_node`` GPUs on each server, as server-to-server bytes.

    Every GPU sends ``bytes_per_pair`` to every GPU of the other servers: ``G**2 *
    bytes_per_pair`` per ordered pair of servers (the pairs inside a server cross NVLink, not
    the fabric).

    Parameters
    ----------
    servers : sequence of server ids
        The servers (at least two, distinct).
    gpus_per_node : int
        Ranks per server ``G`` (>= 1).
    bytes_per_pair : float
        Bytes per ordered pair of GPUs (B).

    Returns
    -------
    Demand
        Server level, uniform (implicit: a 2,048-server all-to-all has 4.2e6 pairs); every
        server sends and receives ``G**2 (n - 1) bytes_per_pair``.

    Raises
    ------
    TopoError
        Fewer than two servers, a repeated server, ``gpus_per_node < 1``, or
        ``bytes_per_pair`` not finite and > 0.

    Examples
    --------
    >>> subcluster_alltoall([0, 1, 2], 2).peak_bytes   # 2 x 2 GPU pairs to each of 2 servers
    8.0
    """
    terms = _servers(servers, "all-to-all")
    _positive(bytes_per_pair)
    if gpus_per_node < 1:
        raise TopoError(f"gpus per node must be >= 1, got {gpus_per_node}")
    x = float(gpus_per_node * gpus_per_node) * bytes_per_pair
    return Demand("server", terms, bytes_per_pair=x, name="alltoall")


def _positive(x: float) -> None:
    if not (0 < x < float("inf")):
        raise TopoError(f"bytes must be finite and > 0, not {x}")
