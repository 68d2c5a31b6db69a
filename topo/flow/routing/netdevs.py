"""NCCL's net devices: the NIC ports a GPU's flows use, with multi-port NICs and dead NICs.

The general case of :mod:`topo.flow.routing.endpoints`, used where some GPU has several NICs
on PCIe (``topo build ... --nic-ports P``: one NIC vertex per port) or a GPU's own NIC is not
cabled to a switch (a dead NIC cable). The model follows NCCL 2.30.7 (github NVIDIA/nccl,
``makefiles/version.mk``):

- **Every active port is a net device.** ``src/transport/net_ib/init.cc`` (``ncclIbInit``)
  walks every port of every HCA and skips a port whose state is not ``IBV_PORT_ACTIVE``: a NIC
  whose cable is dead is no net device at all.
- **A GPU spreads its channels over its local net devices.** ``ncclTopoGetLocalNetType``
  (``src/graph/topo.cc``) takes the nets at the best path from the GPU (``ncclTopoGetLocal``:
  highest bandwidth, then lowest path type) and puts channel ``c`` on net
  ``start + c mod netsPerGpu``; with one GPU per NIC, ``netsPerGpu`` is the number of local
  nets, so a GPU with a ``P``-port NIC puts channel ``c`` on port ``c mod P``. Fused into one
  virtual NIC (``NCCL_NET_MERGE_LEVEL``, default ``PORT``) the split is the same: queue pair
  ``i`` runs on port ``i mod P`` at both ends (``src/transport/net_ib/connect.cc``). Traffic is
  taken as spread evenly over the channels: a pair's bytes split ``1/P`` per port, port ``p``
  to port ``p``.
- **A GPU whose NIC is dead uses the server's other NICs over NVLink.** Its own NIC gone, its
  best paths to the other NICs are PXN paths (NVLink to the NIC's GPU, then PCIe;
  ``src/graph/paths.cc``, "Update paths for NICs"), all alike, so it spreads its channels over
  every active NIC of its server; receiving (``recvSetup`` in ``src/transport/net.cc`` asks for
  the receiver's own local net) it likewise arrives on those NICs and crosses NVLink. Without
  PXN (``NCCL_PXN_DISABLE=1``) it has no such path here and is disconnected.
- **PXN stays rail/plane aligned.** ``ncclTopoGetNetDev`` (``src/graph/search.cc``, P2P PXN
  level 2, the default) sends to a peer through the net the *local GPU with the peer's device
  index* would use on that channel: the local NIC of the destination's class when it is up,
  else that GPU's own local nets (the server's active NICs when its NIC is dead). The receiver
  picks its NIC independently (its own local net), so a flow between a server without the
  destination's plane and that plane crosses planes: in an MPFT there is no such route (the
  optimum enters another plane and forwards over the destination server's NVLink; NCCL's
  receiver never does), and the unroutable pairs are reported as an error.

The demand stays factored as ``w(x, y) = S[x, c(y)] D[y]`` over *rows* ``y``: a row is a
(cabled NIC, destination class) pair, the NIC's own class first, and extra rows where a GPU
whose NIC is dead receives on another NIC for its own class.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from topo.errors import InfeasibleError, TopoError
from topo.fabric import named_servers, natural_key
from topo.flow.routing.arrays import GPU, NIC, Arcs
from topo.wording import count as wcount

NCCL_SOURCE = "NCCL 2.30.7"
"""The NCCL release whose code the model follows (``makefiles/version.mk`` of NVIDIA/nccl)."""


@dataclass
class NetDevs:
    """Rows of the demand and the loads inside servers for the general NIC model.

    Attributes
    ----------
    nic_ids, nic_server, nic_class, base : numpy.ndarray
        (rows,) int: NIC node id, server, destination class, and the row of the NIC's own class
        (the first rows are the cabled NICs in (server, index) order, ``base[y] = y``).
    R : int
        Destination classes.
    S : numpy.ndarray
        (rows, R) float: source GPUs (fractions) whose flows to class ``r`` leave by the row's
        NIC (0 on extra rows).
    D : numpy.ndarray
        (rows,) float: destination GPUs (fractions) receiving class ``c`` traffic on the NIC.
    intra_arc, intra_load : numpy.ndarray
        PCIe and NVLink arcs and their pair-units per unit pair rate.
    ports : int
        Ports of the GPUs' NICs (the most of any GPU).
    dead : int
        GPUs none of whose own NIC ports is cabled, served by their server's other NICs.
    notes : tuple of str
        What was assumed, for the result's notes.
    """

    nic_ids: np.ndarray
    nic_server: np.ndarray
    nic_class: np.ndarray
    base: np.ndarray
    R: int
    S: np.ndarray
    D: np.ndarray
    intra_arc: np.ndarray
    intra_load: np.ndarray
    ports: int
    dead: int
    notes: tuple[str, ...]


@dataclass
class _Own:
    """Each GPU's own NIC ports (PCIe, same server): (gpu row, NIC node) pairs by index."""

    g: np.ndarray
    nic: np.ndarray
    count: np.ndarray  # (gpus,) ports of each GPU


def needs_netdevs(arcs: Arcs, srv: np.ndarray, sw_of: np.ndarray) -> bool:
    """Whether some GPU has other than one NIC on PCIe, or its NIC is not cabled.

    Parameters
    ----------
    arcs : Arcs
    srv : numpy.ndarray
        (nodes,) int: server of every GPU and NIC (-1 for the others).
    sw_of : numpy.ndarray
        (nodes,) int: the switch each NIC is cabled to (-1: none).

    Returns
    -------
    bool
    """
    kind, N = arcs.kind, len(arcs.nodes)
    gpus = np.nonzero(kind == GPU)[0]
    pc = _pcie(arcs, srv)
    n_pc = np.bincount(arcs.u[pc], minlength=N)[gpus]
    if (n_pc != 1).any():
        return True
    return bool((sw_of[arcs.v[pc]] < 0).any())


def _pcie(arcs: Arcs, srv: np.ndarray) -> np.ndarray:
    kind = arcs.kind
    pc = np.nonzero((kind[arcs.u] == GPU) & (kind[arcs.v] == NIC))[0]
    return np.asarray(pc[srv[arcs.u[pc]] == srv[arcs.v[pc]]])


def _own_ports(G: nx.Graph, arcs: Arcs, srv: np.ndarray, gpus: np.ndarray) -> _Own:
    """Every GPU's own NIC ports, ordered by GPU then by NIC ``index`` (natural order)."""
    N = len(arcs.nodes)
    row = np.full(N, -1, dtype=np.int64)
    row[gpus] = np.arange(gpus.size)
    pc = _pcie(arcs, srv)
    g, nic = row[arcs.u[pc]], arcs.v[pc]
    keys = [natural_key(G.nodes[arcs.nodes[x]].get("index", 0)) for x in nic.tolist()]
    order = sorted(range(g.size), key=lambda i: (int(g[i]), keys[i]))
    g, nic = g[order], nic[order]
    count = np.bincount(g, minlength=gpus.size)
    if (count == 0).any():
        a = gpus[int(np.argmax(count == 0))]
        server = named_servers(G, [G.nodes[arcs.nodes[a]]["node"]], devices=False)
        raise InfeasibleError(
            f"GPU {arcs.nodes[a]} of {server} has no NIC on PCIe; the routing model needs every "
            "GPU's own NIC"
        )
    return _Own(g=g, nic=nic, count=count)


@dataclass
class _Nics:
    """The NICs of :class:`_Own`: cabled rows, classes, and each GPU's local nets."""

    row_of: dict[int, int]  # NIC node -> base row (cabled NICs only)
    rows: list[int]  # base rows' NIC nodes
    cls: dict[int, int]  # NIC node -> destination class
    R: int
    local: list[list[tuple[int, float]]]  # per GPU: (row, fraction) of its local nets
    own: list[list[int]]  # per GPU: its own NIC nodes, by index


def _nics(
    G: nx.Graph,
    arcs: Arcs,
    o: _Own,
    srv: np.ndarray,
    srv_rank: np.ndarray,
    gpus: np.ndarray,
    gnv: np.ndarray,
    sw_of: np.ndarray,
    pxn: bool,
) -> _Nics:
    """Rows, classes and local nets (NCCL's ``ncclTopoGetLocal``) of every GPU."""
    own: list[list[int]] = [[] for _ in range(gpus.size)]
    for g, x in zip(o.g.tolist(), o.nic.tolist(), strict=True):
        own[g].append(x)
    nodes = sorted(set(o.nic.tolist()))
    index = {x: G.nodes[arcs.nodes[x]].get("index", 0) for x in nodes}
    idx_rank = {k: i for i, k in enumerate(sorted(set(index.values()), key=natural_key))}
    port_rank: dict[int, int] = {}
    for ports in own:
        for p, x in enumerate(ports):
            port_rank.setdefault(x, p)
    cls = {x: idx_rank[index[x]] if pxn else port_rank[x] for x in nodes}
    R = len(idx_rank) if pxn else int(o.count.max())
    alive = [x for x in nodes if sw_of[x] >= 0]
    alive.sort(key=lambda x: (int(srv_rank[srv[x]]), idx_rank[index[x]]))
    row_of = {x: r for r, x in enumerate(alive)}
    by_server: dict[int, list[int]] = {}
    for x in alive:
        by_server.setdefault(int(srv[x]), []).append(row_of[x])
    local: list[list[tuple[int, float]]] = []
    loose: list[int] = []
    for g in range(gpus.size):
        up = [row_of[x] for x in own[g] if x in row_of]
        if not up and pxn and gnv[g] >= 0:
            up = by_server.get(int(srv[gpus[g]]), [])
        if not up:
            loose.append(int(gpus[g]))
        local.append([(r, 1.0 / len(up)) for r in up] if up else [])
    if loose:
        hint = (
            " (without PXN a GPU reaches no other NIC of its server); route it with PXN "
            "(pxn, NCCL's default: such a GPU sends through its server's other NICs over "
            "NVLink) or with routing optimal"
            if pxn is False
            else "; routing optimal gives the all-to-all of the GPUs that are connected"
        )
        n = len(loose)
        first = arcs.nodes[loose[0]]
        where = named_servers(G, [G.nodes[arcs.nodes[x]]["node"] for x in loose], devices=False)
        raise InfeasibleError(
            f"{wcount(n, 'GPU')} {'has' if n == 1 else 'have'} no NIC cabled to a switch "
            f"({first} first, in {where}): as routed, {'it is' if n == 1 else 'they are'} "
            f"disconnected and the all-to-all rate is 0{hint}",
            names=("pxn", "routing") if pxn is False else ("routing",),
        )
    return _Nics(row_of=row_of, rows=alive, cls=cls, R=R, local=local, own=own)


def _receives(nc: _Nics) -> list[tuple[int, int, int, float]]:
    """(GPU, row NIC, class, fraction): where each GPU receives each of its own ports'
    traffic (the port itself when cabled, else its local nets)."""
    out: list[tuple[int, int, int, float]] = []
    for g, ports in enumerate(nc.own):
        w = 1.0 / len(ports)
        for q in ports:
            c = nc.cls[q]
            if q in nc.row_of:
                out.append((g, nc.row_of[q], c, w))
            else:
                out.extend((g, r, c, w * f) for r, f in nc.local[g])
    return out


def _exits(nc: _Nics, gpu_server: np.ndarray, pxn: bool) -> list[tuple[int, int, int, float]]:
    """(GPU, class, row NIC, fraction): the NIC each GPU's flows to each class leave by."""
    owner: dict[tuple[int, int], list[tuple[int, int]]] = {}  # (server, class) -> (gpu, nic)
    for g, ports in enumerate(nc.own):
        for q in ports:
            owner.setdefault((int(gpu_server[g]), nc.cls[q]), []).append((g, q))
    out: list[tuple[int, int, int, float]] = []
    for a, ports in enumerate(nc.own):
        s = int(gpu_server[a])
        for r in range(nc.R):
            if pxn:
                cand = {q for _, q in owner.get((s, r), [])}
                via = owner[(s, r)][0][0] if len(cand) == 1 else a
                q = next(iter(cand)) if len(cand) == 1 else -1
            else:
                via, q = a, (ports[r] if r < len(ports) else -1)
            if q in nc.row_of:
                out.append((a, r, nc.row_of[q], 1.0))
            else:
                out.extend((a, r, x, f) for x, f in nc.local[via])
    return out


def gpu_netdevs(
    G: nx.Graph,
    arcs: Arcs,
    srv: np.ndarray,
    srv_rank: np.ndarray,
    gpus: np.ndarray,
    gnv: np.ndarray,
    sw_of: np.ndarray,
    pxn: bool,
) -> NetDevs:
    """The demand rows and in-server loads of the GPUs under NCCL's net-device model.

    Parameters
    ----------
    G : networkx.Graph
        The fabric (NIC ``index`` attributes are read).
    arcs : Arcs
    srv, srv_rank : numpy.ndarray
        Server of every GPU and NIC (-1 else), and each server's rank in natural order.
    gpus, gnv : numpy.ndarray
        (gpus,) int: GPU node ids and their NVSwitch (-1: none).
    sw_of : numpy.ndarray
        (nodes,) int: the switch each NIC is cabled to (-1: none).
    pxn : bool
        NCCL's PXN.

    Returns
    -------
    NetDevs

    Raises
    ------
    TopoError
        A GPU without NVLink where its traffic is forwarded.
    InfeasibleError
        A GPU with no NIC on PCIe (naming it and its server); GPUs with no cabled NIC they can
        use (their own, or with PXN one of their server's).
    """
    own = _own_ports(G, arcs, srv, gpus)
    nc = _nics(G, arcs, own, srv, srv_rank, gpus, gnv, sw_of, pxn)
    gpu_server = srv[gpus]
    recv = _receives(nc)
    exits = _exits(nc, gpu_server, pxn)
    base_n = len(nc.rows)
    base_cls = [nc.cls[x] for x in nc.rows]
    extra = sorted({(r, c) for _, r, c, _ in recv if c != base_cls[r]})
    key = {(r, base_cls[r]): r for r in range(base_n)}
    key.update({k: base_n + i for i, k in enumerate(extra)})
    nic_rows = list(range(base_n)) + [r for r, _ in extra]
    nic_ids = np.array([nc.rows[r] for r in nic_rows], dtype=np.int64)
    D = np.zeros(len(nic_rows))
    for _, r, c, w in recv:
        D[key[(r, c)]] += w
    S = np.zeros((len(nic_rows), nc.R))
    for _, r, x, f in exits:
        S[x, r] += f
    intra_arc, intra_load = _inside(arcs, nc, gpus, gpu_server, gnv, recv, exits)
    dead = sum(1 for g in range(gpus.size) if not any(x in nc.row_of for x in nc.own[g]))
    return NetDevs(
        nic_ids=nic_ids,
        nic_server=srv[nic_ids],
        nic_class=np.array(
            [k[1] for k, _ in sorted(key.items(), key=lambda kv: kv[1])], dtype=np.int64
        ),
        base=np.array(nic_rows, dtype=np.int64),
        R=nc.R,
        S=S,
        D=D,
        intra_arc=intra_arc,
        intra_load=intra_load,
        ports=int(own.count.max()),
        dead=dead,
        notes=_notes(arcs, nc, gpus, int(own.count.max()), dead, pxn),
    )


def _inside(
    arcs: Arcs,
    nc: _Nics,
    gpus: np.ndarray,
    gpu_server: np.ndarray,
    gnv: np.ndarray,
    recv: list[tuple[int, int, int, float]],
    exits: list[tuple[int, int, int, float]],
) -> tuple[np.ndarray, np.ndarray]:
    """PCIe and NVLink arcs and their pair-units: own ports by PCIe, other NICs by NVLink to
    the GPUs on their PCIe (split evenly over them), both ways."""
    n = gpus.size
    g_s = np.bincount(gpu_server)
    Dsr = np.zeros((g_s.size, nc.R))
    for g, _, c, w in recv:
        Dsr[gpu_server[g], c] += w
    units = Dsr.sum(0)[None, :] - Dsr[gpu_server]  # (gpus, R) destinations off the server
    att: dict[int, list[int]] = {}
    for g, ports in enumerate(nc.own):
        for x in ports:
            att.setdefault(x, []).append(g)
    up = {(g, x): 0.0 for g, ports in enumerate(nc.own) for x in ports}
    dn = dict.fromkeys(up, 0.0)
    inside = (g_s[gpu_server] - 1).astype(float)
    nv_up, nv_dn = inside.copy(), inside.copy()
    for a, r, row, f in exits:
        x, amt = nc.rows[row], float(units[a, r]) * f
        if (a, x) in up:
            up[(a, x)] += amt
            continue
        nv_up[a] += amt
        for g in att[x]:
            up[(g, x)] += amt / len(att[x])
            nv_dn[g] += amt / len(att[x])
    for b, row, _, w in recv:
        x, amt = nc.rows[row], float(n - g_s[gpu_server[b]]) * w
        if (b, x) in dn:
            dn[(b, x)] += amt
            continue
        nv_dn[b] += amt
        for g in att[x]:
            dn[(g, x)] += amt / len(att[x])
            nv_up[g] += amt / len(att[x])
    fwd = (nv_up > inside + 1e-12) | (nv_dn > inside + 1e-12)
    if (fwd & (gnv < 0)).any():
        a = gpus[int(np.argmax(fwd & (gnv < 0)))]
        raise TopoError(f"GPU {arcs.nodes[a]} has no NVLink: PXN cannot forward its traffic")
    pg = np.array([gpus[g] for g, _ in up], dtype=np.int64)
    px = np.array([x for _, x in up], dtype=np.int64)
    has = np.nonzero(gnv >= 0)[0]
    intra_arc = np.concatenate(
        [
            arcs.find(pg, px),
            arcs.find(px, pg),
            arcs.find(gpus[has], gnv[has]),
            arcs.find(gnv[has], gpus[has]),
        ]
    )
    intra_load = np.concatenate(
        [np.array(list(up.values())), np.array(list(dn.values())), nv_up[has], nv_dn[has]]
    )
    return intra_arc, intra_load


def _notes(
    arcs: Arcs, nc: _Nics, gpus: np.ndarray, ports: int, dead: int, pxn: bool
) -> tuple[str, ...]:
    """What the model assumed, in the result's notes."""
    out: list[str] = []
    if ports > 1:
        out.append(
            f"multi-port NICs: every port is a net device ({NCCL_SOURCE}, net_ib/init.cc); a "
            f"GPU's flows to a peer are split evenly over its NIC's {ports} ports, port p to "
            "port p (channel c on port c mod P, graph/topo.cc ncclTopoGetLocalNetType); "
            "flows_per_pair flows on every port"
        )
    if dead:
        g = next(g for g in range(gpus.size) if not any(x in nc.row_of for x in nc.own[g]))
        out.append(
            f"{wcount(dead, 'GPU')} whose own NIC is not cabled (e.g. {arcs.nodes[gpus[g]]}) "
            f"{'sends and receives' if dead == 1 else 'send and receive'} through every cabled "
            "NIC of their server over NVLink, split evenly "
            f"({NCCL_SOURCE}: an inactive port is no net device, net_ib/init.cc; PXN paths, "
            "graph/paths.cc); flows to their rail leave by those NICs (graph/search.cc "
            "ncclTopoGetNetDev)"
        )
    partial = sum(
        1
        for ps in nc.own
        if any(x in nc.row_of for x in ps) and not all(x in nc.row_of for x in ps)
    )
    if partial:
        out.append(
            f"{wcount(partial, 'GPU')} with some of their NIC ports not cabled "
            f"{'uses its' if partial == 1 else 'use their'} cabled ports for every port's share"
        )
    return tuple(out)
