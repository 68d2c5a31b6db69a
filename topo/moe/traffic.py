"""Expert placement over the EP ranks, and the GPU-to-GPU copy matrices of dispatch and combine.

Placement
---------
The EP group is the fabric's first ``ep`` GPUs in server order (servers and their GPUs in
natural order, :func:`topo.fabric.servers`; by index on built fabrics): rank ``r`` is GPU
``r % G`` of the ``r // G``-th server, ``G`` GPUs per server, and the group spans whole
servers (or lies inside one). With ``ep <= E`` routed experts, expert ``e``
sits on rank ``e // (E / ep)`` (contiguous blocks, as DeepEP assumes; ``ep`` divides ``E``), so
a node holds ``E / nodes`` experts and is one gating group. With ``ep > E``, expert ``e`` sits on
rank ``e`` and ranks ``E .. ep - 1`` hold no routed expert: they host the shared experts, as in
DeepSeek-V3's decode deployment (EP320: 256 routed-expert GPUs, 64 for shared and redundant
experts).

Shared experts
--------------
``shared="local"``: every rank runs the shared experts on its own tokens (training, prefill,
DeepEP's benchmarks): no traffic. ``shared="remote"``: the shared expert is one more
destination that every token selects ("we treat the shared expert as a routed one", DeepSeek-V3
decode; the 9 experts of the ISCA worked example). Its replicas are spread so that each rank
serves an equal share: on the expert-free ranks when there are any (token ``t`` of a rank with
GPU index ``l`` on node ``n`` goes to the ``(n T + t) mod F_l``-th of the ``F_l`` free ranks with
the same GPU index ``l``, so that DeepEP's same-index network hop lands on it directly);
otherwise token ``t`` of rank ``r`` goes to rank ``r + G * (1 + t mod (N - 1))``
(mod ``ep``), the GPU with the same local index on one of the other ``N - 1`` nodes in turn,
and inside a single node to rank ``r + 1 + t mod (ep - 1)``. Every rank then receives exactly
``T`` shared copies per micro-batch. All shared experts of a model sit together, so a token
sends one shared copy.

Copies
------
Every token of rank ``s`` (node ``n_s``) has a set of destination ranks ``D`` (those of its
experts, plus the shared rank). Two ways to deliver it, each a pair of ``ep x ep`` matrices of
*copies* (one copy = one token's activation), one for InfiniBand hops and one for NVLink hops:

- **naive**: one copy per (token, expert) straight to the expert's rank, over NVLink inside the
  node and over the network otherwise; copies to the token's own rank stay local.
- **deepep** (DeepEP's normal kernels): one network copy per (token, distinct destination node
  other than ``n_s``), sent to the rank with the same local index on that node (the GPU on the
  same plane or rail); that GPU forwards one NVLink copy to each distinct destination rank of
  the node other than itself. Destinations on ``n_s`` get one NVLink copy per distinct rank
  other than ``s``.

Combine sends the expert outputs back along the same hops in reverse (DeepEP reduces on the
forwarding GPU before the network hop), so its copy matrices are the transposes of dispatch's.

References
----------
DeepEP README and ``csrc/kernels/internode.cu`` (normal kernels: RDMA to the same-index GPU of
each destination node, NVLink forwarding, combine in reverse); DeepSeek-AI, "DeepSeek-V3
Technical Report", arXiv 2412.19437, §3.4 (EP32 prefill; EP320 decode, shared expert routed).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import networkx as nx
import numpy as np

from topo.errors import TopoError
from topo.fabric import servers as fabric_servers
from topo.fabric.gpus import gpu_model
from topo.traffic import server_matrix

__all__ = ["EPLayout", "CopyMatrices", "ep_layout", "default_ep", "destinations", "copy_matrices"]

SCHEMES = ("deepep", "naive")
SHARED_MODES = ("remote", "local")


@dataclass(frozen=True)
class EPLayout:
    """Where the EP ranks and the experts are.

    Attributes
    ----------
    ep : int
        EP ranks (GPUs).
    gpus_per_node : int
        EP ranks per node ``G`` (``ep`` itself when the group lies inside one server).
    servers : list
        Server id (``node`` attribute) of each EP node, in rank order.
    gpus : list of str
        GPU vertex of each rank.
    expert_rank : numpy.ndarray of int, shape (experts,)
        Rank holding each routed expert.
    nvlink_Bps : numpy.ndarray, shape (ep,)
        NVLink capacity of each rank's GPU to its NVSwitch, B/s per direction (0 if none).
    pcie_Bps : numpy.ndarray, shape (ep,)
        PCIe capacity of each rank's GPU to its own NIC(s), B/s per direction (0 if none).
        Own NICs are those with a cable to the fabric (a NIC port of an undriven plane,
        :func:`topo.builders.planes_used.drive_planes`, is not one).
    nic_of_rank : list of tuple of str
        The cabled NIC(s) each rank's GPU reaches over PCIe (GPUs may share a NIC).
    nic_cable_Bps : dict of str to float
        Each of those NICs' cable capacity to the fabric, B/s per direction.
    gpu_model : str or None
        The GPU model the fabric records (``topo build --node``;
        :func:`topo.fabric.gpus.gpu_model`), None when it records none.
    """

    ep: int
    gpus_per_node: int
    servers: list[Hashable]
    gpus: list[str]
    expert_rank: np.ndarray
    nvlink_Bps: np.ndarray
    pcie_Bps: np.ndarray
    nic_of_rank: list[tuple[str, ...]]
    nic_cable_Bps: dict[str, float]
    gpu_model: str | None = None

    @property
    def nodes(self) -> int:
        """EP nodes (servers)."""
        return len(self.servers)

    @property
    def node_of_rank(self) -> np.ndarray:
        """Node index (0 .. nodes - 1) of each rank, shape (ep,)."""
        return np.arange(self.ep) // self.gpus_per_node

    @property
    def expert_node(self) -> np.ndarray:
        """Node index of each routed expert, shape (experts,): the gating groups."""
        return self.expert_rank // self.gpus_per_node

    def node_matrix(self, m: np.ndarray) -> np.ndarray:
        """Sum a rank-to-rank matrix, shape (ep, ep), into a node-to-node one, shape
        (nodes, nodes): the ranks of a node are a contiguous block of ``gpus_per_node``."""
        return server_matrix(m, self.gpus_per_node)

    @property
    def free_ranks(self) -> np.ndarray:
        """Ranks that hold no routed expert (``ep > experts``)."""
        used = np.zeros(self.ep, dtype=bool)
        used[self.expert_rank] = True
        return np.flatnonzero(~used)


def _server_gpus(G: nx.Graph) -> list[tuple[Hashable, list[str]]]:
    """The servers with GPUs, in natural order, each with its GPUs in natural order."""
    by_server = [
        (s, [v for v in vs if G.nodes[v]["kind"] == "gpu"]) for s, vs in fabric_servers(G).items()
    ]
    out = [(s, gpus) for s, gpus in by_server if gpus]
    if not out:
        raise TopoError("the fabric has no GPUs: topo moe needs a fabric built down to GPUs")
    return out


def default_ep(G: nx.Graph, n_experts: int) -> int:
    """The default EP size: the largest group of the fabric's first GPUs that spans whole
    servers (or lies in the first one) and divides the routed experts.

    Parameters
    ----------
    G : networkx.Graph
        A fabric with GPUs.
    n_experts : int
        Routed experts ``E``.

    Returns
    -------
    int
        EP size in GPUs (ranks); at least 1.

    Raises
    ------
    TopoError
        The fabric has no GPUs.

    Examples
    --------
    >>> from topo.builders import build
    >>> default_ep(build("ft2", switch_ports=16, gpus=64), 256)
    64
    """
    servers = _server_gpus(G)
    g = len(servers[0][1])
    total, best = 0, 1
    for size in range(1, g + 1):
        if n_experts % size == 0:
            best = size
    for _, gpus in servers:
        if len(gpus) != g:
            break
        total += g
        if n_experts % total == 0:
            best = max(best, total)
    return best


def ep_layout(G: nx.Graph, n_experts: int, ep: int | None = None) -> EPLayout:
    """Place the EP ranks on the fabric's GPUs and the routed experts on the ranks.

    Parameters
    ----------
    G : networkx.Graph
        A fabric with GPUs (schema of :mod:`topo.fabric`).
    n_experts : int
        Routed experts ``E``.
    ep : int, optional
        EP size (GPUs); default :func:`default_ep`.

    Returns
    -------
    EPLayout

    Raises
    ------
    TopoError
        The fabric has no GPUs; ``ep`` is below 1, above the fabric's GPUs, does not span whole
        servers (nor fit in the first), covers servers of different sizes, or (when
        ``ep <= E``) does not divide the routed experts.
    """
    servers = _server_gpus(G)
    if ep is None:
        ep = default_ep(G, n_experts)
    n_gpus = sum(len(g) for _, g in servers)
    if not 1 <= ep <= n_gpus:
        raise TopoError(
            f"ep must be from 1 to the fabric's {n_gpus} GPUs, got {ep}", param="ep"
        )
    g = len(servers[0][1])
    if ep <= g:
        per_node = ep
        chosen = servers[:1]
    else:
        if ep % g:
            raise TopoError(
                f"ep {ep} does not span whole servers of {g} GPUs (use a multiple of {g})",
                param="ep",
            )
        chosen = servers[: ep // g]
        sizes = {len(gpus) for _, gpus in chosen}
        if sizes != {g}:
            raise TopoError(
                f"ep {ep} covers servers with different GPU counts {sorted(sizes)}", param="ep"
            )
        per_node = g
    if ep <= n_experts:
        if n_experts % ep:
            raise TopoError(
                f"ep {ep} does not divide the {n_experts} routed experts "
                "(each rank holds the same number)",
                param="ep",
            )
        expert_rank = np.arange(n_experts) // (n_experts // ep)
    else:
        expert_rank = np.arange(n_experts)
    gpus = [v for _, vs in chosen for v in vs[:per_node]]
    nvl = np.array(
        [
            sum(float(e["capacity"]) for _, _, e in G.edges(v, data=True) if e["kind"] == "nvlink")
            for v in gpus
        ]
    )
    pcie, nics, cable = [], [], {}
    for v in gpus:
        # A GPU's own NICs are those cabled to the fabric: a NIC (port) of a plane the
        # software does not drive (topo.builders.planes_used) carries none of its bytes.
        mine = [
            (w, float(e["capacity"]))
            for w, e in G[v].items()
            if e["kind"] == "pcie" and any(f["kind"] == "endpoint" for f in G[w].values())
        ]
        pcie.append(sum(c for _, c in mine))
        nics.append(tuple(w for w, _ in mine))
        for w, _ in mine:
            cable[w] = sum(float(e["capacity"]) for e in G[w].values() if e["kind"] == "endpoint")
    return EPLayout(
        ep=ep,
        gpus_per_node=per_node,
        servers=[s for s, _ in chosen],
        gpus=gpus,
        expert_rank=expert_rank,
        nvlink_Bps=nvl,
        pcie_Bps=np.array(pcie),
        nic_of_rank=nics,
        nic_cable_Bps=cable,
        gpu_model=gpu_model(G),
    )


def destinations(
    layout: EPLayout, experts: np.ndarray, tokens_per_gpu: int, shared: str = "local"
) -> tuple[np.ndarray, np.ndarray]:
    """Source rank and destination ranks of every token.

    Parameters
    ----------
    layout : EPLayout
    experts : numpy.ndarray of int, shape (ep * tokens_per_gpu, k)
        Routed experts of each token; tokens ``r * T .. (r + 1) * T - 1`` start on rank ``r``.
    tokens_per_gpu : int
        ``T``.
    shared : str
        ``local`` (no shared copy) or ``remote`` (one more destination per token; placement in
        the module notes).

    Returns
    -------
    src : numpy.ndarray of int, shape (tokens,)
    dest : numpy.ndarray of int, shape (tokens, k) or (tokens, k + 1)
        Destination rank of each copy (the shared one last).
    """
    if shared not in SHARED_MODES:
        raise TopoError(f"shared experts must be one of {', '.join(SHARED_MODES)}, got {shared!r}")
    n_tok = experts.shape[0]
    if n_tok != layout.ep * tokens_per_gpu:
        raise TopoError(f"{n_tok} routed tokens; expected {layout.ep} ranks x {tokens_per_gpu}")
    src = np.arange(n_tok) // tokens_per_gpu
    dest = layout.expert_rank[experts]
    if shared == "remote":
        free = layout.free_ranks
        t = np.arange(n_tok) % tokens_per_gpu
        if free.size:
            g = layout.gpus_per_node
            extra = np.empty(n_tok, dtype=np.int64)
            for loc in np.unique(src % g):
                mine = src % g == loc
                cand = free[free % g == loc]  # free ranks on the same GPU index (plane, rail)
                if cand.size:
                    extra[mine] = cand[((src[mine] // g) * tokens_per_gpu + t[mine]) % cand.size]
                else:
                    extra[mine] = free[np.flatnonzero(mine) % free.size]
        elif layout.nodes >= 2:
            hop = 1 + t % (layout.nodes - 1)
            extra = (src + layout.gpus_per_node * hop) % layout.ep
        elif layout.ep >= 2:
            extra = (src + 1 + t % (layout.ep - 1)) % layout.ep
        else:
            extra = src
        dest = np.concatenate([dest, extra[:, None]], axis=1)
    return src, dest


@dataclass(frozen=True)
class CopyMatrices:
    """Copies (token activations) from rank ``i`` to rank ``j`` in one dispatch.

    Attributes
    ----------
    ib : numpy.ndarray of int, shape (ep, ep)
        Copies crossing the network (InfiniBand) from GPU ``i`` to GPU ``j``.
    nvlink : numpy.ndarray of int, shape (ep, ep)
        Copies crossing NVLink from GPU ``i`` to GPU ``j`` (same node).
    """

    ib: np.ndarray
    nvlink: np.ndarray

    def transposed(self) -> CopyMatrices:
        """The combine's copies: the same hops in reverse."""
        return CopyMatrices(ib=self.ib.T.copy(), nvlink=self.nvlink.T.copy())


def copy_matrices(
    src: np.ndarray, dest: np.ndarray, gpus_per_node: int, ep: int, scheme: str
) -> CopyMatrices:
    """Dispatch copy matrices, naive or DeepEP-style (rules in the module notes).

    Parameters
    ----------
    src : numpy.ndarray of int, shape (tokens,)
        Source rank of each token.
    dest : numpy.ndarray of int, shape (tokens, m)
        Destination ranks of each token (repeats allowed; -1 = none).
    gpus_per_node : int
        Ranks per node ``G``: rank ``r`` is on node ``r // G`` with local index ``r % G``.
    ep : int
        Ranks.
    scheme : str
        ``naive`` or ``deepep``.

    Returns
    -------
    CopyMatrices
        Integer copy counts; multiply by the bytes of one copy for bytes.

    Examples
    --------
    >>> src, dest = np.array([0]), np.array([[1, 2, 3]])     # 2 nodes of 2 GPUs
    >>> m = copy_matrices(src, dest, 2, 4, "deepep")
    >>> m.ib.tolist()
    [[0, 0, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]
    >>> m.nvlink.tolist()
    [[0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0]]
    """
    if scheme not in SCHEMES:
        raise TopoError(f"scheme must be one of {', '.join(SCHEMES)}, got {scheme!r}")
    src = np.asarray(src, dtype=np.int64)
    dest = np.asarray(dest, dtype=np.int64)
    g = gpus_per_node
    s = np.broadcast_to(src[:, None], dest.shape)
    if scheme == "naive":
        ok = (dest >= 0) & (dest != s)
        same = (dest // g) == (s // g)
        return CopyMatrices(
            ib=_count(s[ok & ~same], dest[ok & ~same], ep),
            nvlink=_count(s[ok & same], dest[ok & same], ep),
        )
    ranks = _row_unique(dest)  # distinct destination ranks, -1 elsewhere
    valid = ranks >= 0
    rnode = np.where(valid, ranks // g, -1)
    snode = s // g
    local = valid & (rnode == snode)
    # NVLink inside the source node.
    nv_src = [s[local & (ranks != s)]]
    nv_dst = [ranks[local & (ranks != s)]]
    # One network copy per distinct remote node, to the same local index there.
    nodes = _row_unique(np.where(valid & ~local, rnode, -1))
    remote = nodes >= 0
    sb = np.broadcast_to(src[:, None], nodes.shape)
    ib = _count(sb[remote], nodes[remote] * g + sb[remote] % g, ep)
    # NVLink fan-out on the destination node from the forwarding GPU.
    fwd = rnode * g + s % g
    fan = valid & ~local & (ranks != fwd)
    nv_src.append(fwd[fan])
    nv_dst.append(ranks[fan])
    return CopyMatrices(ib=ib, nvlink=_count(np.concatenate(nv_src), np.concatenate(nv_dst), ep))


def _row_unique(a: np.ndarray) -> np.ndarray:
    """Each row's distinct values (sorted), repeats replaced by -1; -1 entries stay -1."""
    b = np.sort(a, axis=1)
    dup = np.zeros_like(b, dtype=bool)
    dup[:, 1:] = b[:, 1:] == b[:, :-1]
    return np.where(dup, -1, b)


def _count(i: np.ndarray, j: np.ndarray, n: int) -> np.ndarray:
    flat = np.asarray(i, dtype=np.int64) * n + np.asarray(j, dtype=np.int64)
    return np.bincount(flat, minlength=n * n).reshape(n, n)
