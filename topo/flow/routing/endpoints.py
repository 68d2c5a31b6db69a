"""The ends of the traffic: terminals, their NICs, PXN, and the demand aggregated on leaves.

Terminals are the fabric's GPUs or, without GPUs (an imported dump), its host endpoints (NICs
cabled to a switch). Every ordered pair of terminals in different servers exchanges one
pair-unit. A GPU leaves by its own NIC; with PXN (NCCL's default) a flow whose destination's
NIC has another index first crosses NVLink to the local GPU of the NIC with that index. The
demand is kept aggregated: ``w(x, y) = S[x, c(y)] D[y]`` pair-units from NIC ``x`` to NIC
``y`` of another server, ``c(y)`` the destination class (the NIC index with PXN, else 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from topo.errors import InfeasibleError, TopoError
from topo.fabric import natural_key, terminal_kind
from topo.flow.routing.arrays import GPU, NIC, NVSWITCH, SWITCH, Arcs
from topo.flow.routing.ends import CHUNK_ELEMENTS, Ends, leaf_matrix_chunks
from topo.flow.routing.netdevs import gpu_netdevs, needs_netdevs
from topo.flow.routing.updown import INF, UpDownTree
from topo.wording import count


@dataclass
class _Sources:
    """What the GPU or endpoint model gives :func:`_finish` to complete an :class:`Ends`."""

    terminal: str
    n: int
    nic_ids: np.ndarray
    nic_server: np.ndarray
    nic_class: np.ndarray
    R: int
    S: np.ndarray
    D: np.ndarray
    intra_arc: np.ndarray
    intra_load: np.ndarray
    pxn: bool
    node_names: int
    base: np.ndarray | None = None  # row of the NIC's own class (None: every row is its own)
    ports: int = 1
    dead: int = 0
    notes: tuple[str, ...] = ()


def traffic_ends(G: nx.Graph, tree: UpDownTree, arcs: Arcs, pxn: bool) -> Ends:
    """The terminals of the uniform all-to-all and where their traffic enters the switches.

    Parameters
    ----------
    G : networkx.Graph
        The fabric (its ``node`` and NIC ``index`` attributes are read).
    tree : UpDownTree
        Its switch tables.
    arcs : Arcs
        Its arcs.
    pxn : bool
        NCCL's PXN (ignored without GPUs).

    Returns
    -------
    Ends

    Raises
    ------
    TopoError
        A NIC cabled to several switches or to a switch above tier 1; a GPU without a NIC on
        PCIe, off its server's NVSwitch, or without NVLink where PXN forwards.
    InfeasibleError
        Fewer than two terminals, or GPUs with no cabled NIC they can use (their own; with PXN
        one of their server's).
    """
    kind = arcs.kind
    # NIC -> switch cables
    cab = np.nonzero((kind[arcs.u] == NIC) & (kind[arcs.v] == SWITCH))[0]
    per_nic = np.bincount(arcs.u[cab], minlength=len(arcs.nodes))
    if (per_nic > 1).any():
        x = int(np.argmax(per_nic > 1))
        raise TopoError(
            f"NIC {arcs.nodes[x]} is cabled to {per_nic[x]} switches; the routing model needs "
            "one switch per NIC port"
        )
    high = cab[arcs.tier[arcs.v[cab]] != 1]
    if high.size:
        x, s = arcs.nodes[arcs.u[high[0]]], arcs.nodes[arcs.v[high[0]]]
        raise TopoError(
            f"not up/down routable: NIC {x} is cabled to {s}, a tier-"
            f"{arcs.tier[arcs.v[high[0]]]} switch (hosts must hang from tier-1 leaves)"
        )
    sw_of = np.full(len(arcs.nodes), -1, dtype=np.int64)
    sw_of[arcs.u[cab]] = arcs.v[cab]
    if terminal_kind(G) == "gpu":
        src = _gpu_sources(G, arcs, sw_of, pxn)
    else:
        src = _endpoint_sources(G, arcs, arcs.u[cab])
    return _finish(tree, arcs, sw_of, src)


def _endpoint_sources(G: nx.Graph, arcs: Arcs, cabled: np.ndarray) -> _Sources:
    """Every cabled NIC a terminal and a server of its own (no PXN, nothing inside)."""
    nics = sorted(cabled.tolist(), key=lambda i: natural_key(arcs.nodes[i]))
    n = len(nics)
    if n < 2:
        raise InfeasibleError(f"all-to-all needs at least two host endpoints; the fabric has {n}")
    return _Sources(
        terminal="endpoint",
        n=n,
        nic_ids=np.array(nics, dtype=np.int64),
        nic_server=np.arange(n),
        nic_class=np.zeros(n, dtype=np.int64),
        R=1,
        S=np.ones((n, 1)),
        D=np.ones(n),
        intra_arc=np.zeros(0, dtype=np.int64),
        intra_load=np.zeros(0),
        pxn=False,
        node_names=len({G._node[arcs.nodes[i]]["node"] for i in nics}),
    )


@dataclass
class _Gpus:
    """The GPUs (node ids) with their server, own NIC (node id) and NVSwitch (-1: none)."""

    ids: np.ndarray
    server: np.ndarray
    nic_node: np.ndarray
    nvswitch: np.ndarray
    per_server: np.ndarray  # GPUs of each server


def _gpu_sources(G: nx.Graph, arcs: Arcs, sw_of: np.ndarray, pxn: bool) -> _Sources:
    """GPUs as terminals: NICs in (server, index) order, PXN's exit NICs, NVLink and PCIe."""
    srv, srv_rank = _servers(G, arcs)
    if needs_netdevs(arcs, srv, sw_of):
        return _netdev_sources(G, arcs, srv, srv_rank, sw_of, pxn)
    g = _gpus(arcs, srv)
    nic_ids, nic_idx, n_idx = _serving_nics(G, arcs, g.nic_node, srv, srv_rank)
    N = len(arcs.nodes)
    pos = np.full(N, -1, dtype=np.int64)
    pos[nic_ids] = np.arange(nic_ids.size)
    gpu_nic = pos[g.nic_node]
    nic_server = srv[nic_ids]
    if pxn:
        nic_class, R = nic_idx, n_idx
    else:
        nic_class, R = np.zeros(nic_ids.size, dtype=np.int64), 1
    exit_nic = _exit_nics(gpu_nic, g.server, nic_server, nic_class, R, len(srv_rank), pxn)
    n_nic = nic_ids.size
    Sx = np.bincount((exit_nic * R + np.arange(R)[None, :]).ravel(), minlength=n_nic * R)
    D = np.bincount(gpu_nic, minlength=n_nic).astype(float)
    intra_arc, intra_load = _inside_servers(arcs, g, gpu_nic, exit_nic, nic_class, R, D)
    return _Sources(
        terminal="gpu",
        n=g.ids.size,
        nic_ids=nic_ids,
        nic_server=nic_server,
        nic_class=nic_class,
        R=R,
        S=Sx.reshape(n_nic, R).astype(float),
        D=D,
        intra_arc=intra_arc,
        intra_load=intra_load,
        pxn=pxn,
        node_names=int(np.count_nonzero(g.per_server)),
    )


def _netdev_sources(
    G: nx.Graph,
    arcs: Arcs,
    srv: np.ndarray,
    srv_rank: np.ndarray,
    sw_of: np.ndarray,
    pxn: bool,
) -> _Sources:
    """GPUs with multi-port or dead NICs: the general model of :mod:`.netdevs`."""
    gpus = np.nonzero(arcs.kind == GPU)[0]
    gnv, g_s = _nvswitches(arcs, srv, gpus)
    nd = gpu_netdevs(G, arcs, srv, srv_rank, gpus, gnv, sw_of, pxn)
    return _Sources(
        terminal="gpu",
        n=gpus.size,
        nic_ids=nd.nic_ids,
        nic_server=nd.nic_server,
        nic_class=nd.nic_class,
        R=nd.R,
        S=nd.S,
        D=nd.D,
        intra_arc=nd.intra_arc,
        intra_load=nd.intra_load,
        pxn=pxn,
        node_names=int(np.count_nonzero(g_s)),
        base=nd.base,
        ports=nd.ports,
        dead=nd.dead,
        notes=nd.notes,
    )


def _servers(G: nx.Graph, arcs: Arcs) -> tuple[np.ndarray, np.ndarray]:
    """Server id of every GPU and NIC (-1 for the others; ids in order of appearance) and the
    rank of each server in natural order of its ``node``."""
    kind = arcs.kind
    members = np.nonzero((kind == GPU) | (kind == NIC))[0]
    server_name: dict[Any, int] = {}
    srv = np.full(len(arcs.nodes), -1, dtype=np.int64)
    gpus, nics = members[kind[members] == GPU], members[kind[members] == NIC]
    attrs, names = G._node, arcs.nodes  # (the raw attribute dicts: one look-up per device)
    for i in np.concatenate([gpus, nics]).tolist():
        srv[i] = server_name.setdefault(attrs[names[i]]["node"], len(server_name))
    n_srv = len(server_name)
    srv_names = list(server_name)
    srv_rank = np.empty(n_srv, dtype=np.int64)
    srv_rank[sorted(range(n_srv), key=lambda s: natural_key(srv_names[s]))] = np.arange(n_srv)
    return srv, srv_rank


def _gpus(arcs: Arcs, srv: np.ndarray) -> _Gpus:
    """Each GPU's own NIC (PCIe, same server; exactly one, cabled: :func:`needs_netdevs` is
    false) and NVSwitch, checked."""
    kind, N = arcs.kind, len(arcs.nodes)
    gpus = np.nonzero(kind == GPU)[0]
    pc = np.nonzero((kind[arcs.u] == GPU) & (kind[arcs.v] == NIC))[0]
    pc = pc[srv[arcs.u[pc]] == srv[arcs.v[pc]]]
    own = np.full(N, -1, dtype=np.int64)
    own[arcs.u[pc]] = arcs.v[pc]
    gnv, g_s = _nvswitches(arcs, srv, gpus)
    return _Gpus(ids=gpus, server=srv[gpus], nic_node=own[gpus], nvswitch=gnv, per_server=g_s)


def _nvswitches(arcs: Arcs, srv: np.ndarray, gpus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each GPU's NVSwitch (-1: none) and the GPUs of each server, checked."""
    kind, N = arcs.kind, len(arcs.nodes)
    if gpus.size < 2:
        raise InfeasibleError(f"all-to-all needs at least two GPUs; the fabric has {gpus.size}")
    nv = np.nonzero((kind[arcs.u] == GPU) & (kind[arcs.v] == NVSWITCH))[0]
    nvsw = np.full(N, -1, dtype=np.int64)
    nvsw[arcs.u[nv]] = arcs.v[nv]
    gpu_server = srv[gpus]
    g_s = np.bincount(gpu_server, minlength=int(srv.max()) + 1)
    gnv = nvsw[gpus]
    first = np.full(g_s.size, -2, dtype=np.int64)
    first[gpu_server[::-1]] = gnv[::-1]
    shared = (gnv >= 0) & (gnv == first[gpu_server])
    if ((g_s[gpu_server] > 1) & ~shared).any():
        a = gpus[np.argmax((g_s[gpu_server] > 1) & ~shared)]
        raise TopoError(
            f"GPU {arcs.nodes[a]} is not on its server's NVSwitch; the routing model needs the "
            "GPUs of a server joined by one NVSwitch"
        )
    return gnv, g_s


def _serving_nics(
    G: nx.Graph, arcs: Arcs, gpu_nic_node: np.ndarray, srv: np.ndarray, srv_rank: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int]:
    """The NICs that serve GPUs in (server, index) order, the rank of their index among the
    fabric's NIC indices (natural order), and how many indices there are."""
    nic_ids_u = np.unique(gpu_nic_node)
    attrs, names = G._node, arcs.nodes
    nic_index = [attrs[names[i]].get("index", 0) for i in nic_ids_u.tolist()]
    idx_keys = sorted(set(nic_index), key=natural_key)
    idx_rank = {k: i for i, k in enumerate(idx_keys)}
    nic_idx = np.array([idx_rank[k] for k in nic_index], dtype=np.int64)
    o = np.lexsort((nic_idx, srv_rank[srv[nic_ids_u]]))
    return nic_ids_u[o], nic_idx[o], len(idx_keys)


def _exit_nics(
    gpu_nic: np.ndarray,
    gpu_server: np.ndarray,
    nic_server: np.ndarray,
    nic_class: np.ndarray,
    R: int,
    n_srv: int,
    pxn: bool,
) -> np.ndarray:
    """(gpus, R): the NIC GPU ``a`` leaves by toward class ``r``: the server's unique NIC of
    class ``r`` with PXN (where there is one), else its own NIC."""
    exit_nic = np.repeat(gpu_nic[:, None], R, axis=1)
    if pxn:
        key = nic_server * R + nic_class
        cnt = np.bincount(key, minlength=n_srv * R)
        table = np.full(n_srv * R, -1, dtype=np.int64)
        uniq = cnt[key] == 1
        table[key[uniq]] = np.nonzero(uniq)[0]
        cand = table[gpu_server[:, None] * R + np.arange(R)[None, :]]
        exit_nic = np.where(cand >= 0, cand, exit_nic)
    return exit_nic


def _inside_servers(
    arcs: Arcs,
    g: _Gpus,
    gpu_nic: np.ndarray,
    exit_nic: np.ndarray,
    nic_class: np.ndarray,
    R: int,
    D: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """PCIe and NVLink arcs and their pair-units per unit pair rate."""
    n, n_nic, n_srv = g.ids.size, D.size, g.per_server.size
    gpus, gpu_server, g_s, gnv = g.ids, g.server, g.per_server, g.nvswitch
    cls = nic_class[gpu_nic]
    total_r = np.bincount(cls, minlength=R)
    own_r = np.bincount(gpu_server * R + cls, minlength=n_srv * R).reshape(-1, R)
    units = (total_r[None, :] - own_r)[gpu_server].astype(float)  # (gpus, R)
    fwd = exit_nic != gpu_nic[:, None]
    direct = np.where(~fwd, units, 0.0).sum(1)
    forwarded = np.where(fwd, units, 0.0).sum(1)
    fw_nic = np.bincount(exit_nic[fwd], weights=units[fwd], minlength=n_nic)
    per_gpu_fw = (fw_nic / np.maximum(D, 1))[gpu_nic]  # split over the GPUs of the exit NIC
    if ((forwarded > 0) & (gnv < 0)).any():
        a = gpus[np.argmax((forwarded > 0) & (gnv < 0))]
        raise TopoError(f"GPU {arcs.nodes[a]} has no NVLink: PXN cannot forward its traffic")
    has_nv = gnv >= 0
    intra_arc = np.concatenate(
        [
            arcs.find(gpus, g.nic_node),
            arcs.find(g.nic_node, gpus),
            arcs.find(gpus[has_nv], gnv[has_nv]),
            arcs.find(gnv[has_nv], gpus[has_nv]),
        ]
    )
    inside = (g_s[gpu_server] - 1).astype(float)
    intra_load = np.concatenate(
        [
            direct + per_gpu_fw,
            (n - g_s[gpu_server]).astype(float),
            (inside + forwarded)[has_nv],
            (inside + per_gpu_fw)[has_nv],
        ]
    )
    return intra_arc, intra_load


def _finish(tree: UpDownTree, arcs: Arcs, sw_of: np.ndarray, src: _Sources) -> Ends:
    """D-mod-k index and NIC cable arcs; ``nic_ids`` come in port order (kept under each leaf)."""
    nic_ids = src.nic_ids
    sw = sw_of[nic_ids]
    nic_leaf = tree.local[sw]
    base = np.arange(nic_ids.size) if src.base is None else src.base
    nb = int(np.count_nonzero(base == np.arange(base.size)))  # the first rows, one per NIC
    b_leaf = nic_leaf[:nb]
    # D-mod-k index: leaf rank times the largest host count of a leaf, plus the rank below it
    order = np.lexsort((np.arange(nb), b_leaf))
    per_leaf = np.bincount(b_leaf, minlength=len(tree.names[1]))
    m1 = int(per_leaf.max()) if per_leaf.size else 1
    start = np.concatenate(([0], np.cumsum(per_leaf)[:-1]))
    rank = np.empty(nb, dtype=np.int64)
    rank[order] = np.arange(nb) - start[b_leaf[order]]
    d = (b_leaf * m1 + rank)[base]
    servers = int(src.nic_server.max()) + 1 if src.nic_server.size else 0
    return Ends(
        terminal=src.terminal,
        n=src.n,
        servers=servers,
        nic_ids=nic_ids,
        nic_leaf=nic_leaf,
        nic_server=src.nic_server,
        nic_class=src.nic_class,
        R=src.R,
        S=src.S,
        D=src.D,
        d=d,
        up_arc=arcs.find(nic_ids, sw),
        dn_arc=arcs.find(sw, nic_ids),
        intra_arc=src.intra_arc,
        intra_load=src.intra_load,
        pxn=src.pxn,
        node_names=src.node_names,
        ports=src.ports,
        dead=src.dead,
        notes=src.notes,
    )


def check_routable(tree: UpDownTree, e: Ends, planes: int) -> None:
    """Refuse a demand some of whose pairs have no up/down route.

    Parameters
    ----------
    tree : UpDownTree
    e : Ends
    planes : int
        The fabric's planes (for the hint about PXN).

    Raises
    ------
    InfeasibleError
        Naming how many ordered pairs have demand but no route, and one leaf pair.
    """
    L = len(tree.names[1])
    if L and not (tree.h[1] >= INF).any():  # every leaf reaches every leaf: nothing to look at
        return
    bad = 0.0
    example: tuple[Any, Any] = ("", "")
    J = max(1, CHUNK_ELEMENTS // max(L, 1))
    for B0, B1, W in leaf_matrix_chunks(e, L, J):
        cut = (tree.h[1][:, B0:B1] >= INF) & (W > 0)
        if cut.any():
            bad += float(W[cut].sum())
            if not example[0]:
                a, b = np.argwhere(cut)[0]
                example = (tree.names[1][a], tree.names[1][B0 + b])
    if bad:
        who = "GPU" if e.terminal == "gpu" else "endpoint"
        names: tuple[str, ...] = ("no_pxn",) if not e.pxn and planes > 1 else ()
        hint = (
            f"; the fabric has {planes} disjoint planes: cross-plane traffic needs PXN "
            "(forwarding over NVLink), drop no_pxn"
            if not e.pxn and planes > 1
            else ""
        )
        if e.dead and planes > 1:  # (one plane: the cut is in the switches, not the NICs)
            names += ("routing",)
            hint += (
                f"; {count(e.dead, 'GPU')} whose own NIC is not cabled send and receive through "
                "their server's other NICs, and NCCL connects those to the peer's own NIC (its "
                "receiver never takes another plane's NIC and forwards over NVLink): across "
                "disjoint planes there is no route; routing optimal gives the all-to-all "
                "without that constraint (a flow may change planes over NVLink at either end)"
            )
        raise InfeasibleError(
            f"{int(round(bad)):,} ordered {who} pairs have no up/down route (e.g. from leaf "
            f"{example[0]} to leaf {example[1]}){hint}",
            names=names,
        )


__all__ = ["check_routable", "traffic_ends"]
