"""As-routed all-to-all: link loads and rate under ECMP hashing or D-mod-k, with or without PXN.

:func:`topo.flow.alltoall_bandwidth` answers what the fabric *could* carry with optimal,
freely split routing. Real fabrics route every flow on one fixed path: Ethernet switches hash
each flow onto one of the equal-cost next hops (ECMP), InfiniBand subnet managers fill the
forwarding tables of a fat tree destination by destination (OpenSM ``ftree``, D-mod-k). This
module routes the uniform all-to-all that way and reports what it gets.

The model (``docs/routing.md``):

- **Terminals and flows.** Every ordered pair of GPUs (host endpoints on imported fabrics
  without GPUs) in different servers exchanges the same number of bytes, as
  ``flows_per_pair`` flows (RDMA queue pairs) of equal size. Pairs inside a server use NVLink.
- **Inside a server.** A GPU leaves by its own NIC (its ``pcie`` neighbour). With PXN
  (NCCL's default, ``NCCL_PXN_DISABLE=0``) a flow whose destination's NIC has another index first
  crosses NVLink to a local GPU of the NIC with the destination's index (same rail or plane),
  then leaves rail-aligned. It arrives at the destination GPU's own NIC.
- **In the fabric.** Up*/down* routing on the switch tiers (``tier``: leaf 1, spine 2,
  core 3): a flow climbs to the lowest tier from which its destination leaf can be reached
  going down, over minimal paths only. **ECMP**: at every hop each flow picks one of the
  eligible ports (cables) uniformly at random, independently (a seeded
  :class:`numpy.random.Generator`); the expected loads are the exact even split. **D-mod-k**:
  the port at an up hop from tier ``t`` is the ``(d // prod_{i<t} w_i) mod m``-th eligible
  port, ``d`` the destination's index in the tree, ``w_i`` the up-port count of tier ``i``,
  ``m`` the eligible ports; down hops over parallel cables use the same digit.
- **Rate.** With every flow fixed, each link ``e`` carries ``c_e`` pair-units per unit pair
  rate; the all-to-all runs at ``lambda = min_e capacity_e / c_e`` (the slowest link sets the
  completion time). Parallel cables count one by one (a cable's capacity is its edge's over
  ``links``).

Everything is counted with numpy on aggregated flows: by (source leaf, destination NIC) for
D-mod-k and (switch, destination leaf) for ECMP, in chunks of destinations; nothing loops per
flow or per GPU pair. Full-size figures (16,384-GPU MPFT: 0.3 s D-mod-k, 0.6 s ECMP;
65,536-GPU FT3: 4 s and 24 s) are in ``docs/routing.md``.

References
----------
E. Zahavi, "D-Mod-K Routing Providing Non-Blocking Traffic for Shift Permutations on Real Life
Fat Trees", CCIT Report 776, Technion, 2010 (D-mod-k on XGFTs). C. Gómez, F. Gilabert,
M. E. Gómez, P. López, J. Duato, "Deterministic versus Adaptive Routing in Fat-Trees",
IPDPS/CAC 2007 (destination-mod-k up-port selection on k-ary n-trees). OpenSM
``doc/current-routing.txt`` (the ``ftree`` engine: up*/down*, congestion-free shift
routing). C. Hopps, "Analysis of an Equal-Cost Multi-Path Algorithm", RFC 2992, 2000 (per-flow
hashing over equal-cost next hops). NCCL 2.12 release notes and ``NCCL_P2P_PXN_LEVEL`` (PXN).
nccl-tests ``doc/PERFORMANCE.md`` (busbw of alltoall).
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import networkx as nx
import numpy as np

from topo.errors import InfeasibleError, TopoError
from topo.fabric import SWITCH_KINDS, natural_key, tier_name
from topo.units import Bps_to_GBps

ROUTINGS = ("ecmp", "dmodk")
"""The routing models of :func:`routed_alltoall`."""

MAX_FLOWS_PER_PAIR = 1024
"""Largest ``flows_per_pair`` accepted (queue pairs per GPU pair)."""

TOP_LINKS = 20
"""How many of the most loaded links the report lists."""

_INF = np.int32(1 << 20)
_SATURATED = 1 - 1e-9
# Work-array budget (elements) for one chunk of destinations; a fixed constant, so that the
# sequence of random draws, hence an ECMP result, depends on the seed alone.
_CHUNK_ELEMENTS = 1 << 22


# --------------------------------------------------------------------------- the report


@dataclass(frozen=True)
class TierLoad:
    """Loads of one tier of links (one direction, e.g. ``leaf->spine``), at the reported rate.

    Attributes
    ----------
    tier : str
        ``<lower or upper>-><...>``, e.g. ``nic->leaf``, ``leaf->spine``, ``spine->leaf``,
        ``gpu->nvswitch`` (NVLink), ``gpu->nic`` (PCIe).
    links : int
        Link directions in the tier (an edge of parallel cables counts once).
    capacity_GBps : float
        Median capacity of those link directions, GB/s.
    expected_mean_GBps, expected_max_GBps : float
        Mean and largest load of a link of the tier with the expected (ECMP: evenly split)
        routing, at the reported pair rate, GB/s.
    mean_GBps, max_GBps : float
        Mean and largest load with this seed's routing (D-mod-k: the routing), GB/s.
    max_utilization : float
        Largest load over capacity of a cable of the tier (1 on the bottleneck tier).
    """

    tier: str
    links: int
    capacity_GBps: float
    expected_mean_GBps: float
    expected_max_GBps: float
    mean_GBps: float
    max_GBps: float
    max_utilization: float


@dataclass(frozen=True)
class LoadedLink:
    """One direction of a link and its load at the reported pair rate.

    Attributes
    ----------
    source, target : str
        The link's ends, in the direction of the load.
    tier : str
        E.g. ``leaf->spine``.
    capacity_GBps, load_GBps : float
        Capacity (all its cables) and load in that direction, GB/s.
    expected_load_GBps : float
        Its load with the expected routing, GB/s.
    cables : int
        Parallel cables of the link.
    utilization : float
        Largest load over capacity of one of its cables.
    """

    source: str
    target: str
    tier: str
    capacity_GBps: float
    load_GBps: float
    expected_load_GBps: float
    cables: int
    utilization: float


@dataclass(frozen=True)
class RoutedReport:
    """The all-to-all as routed (see :func:`routed_alltoall`). Rates in GB/s (1e9 B/s).

    ``seed`` is the integer seed of an ECMP run (None for D-mod-k, or when a Generator was
    passed); ``pxn`` whether PXN applied (never for fabrics without GPUs).

    ``link_load`` (a property) maps every directed arc ``(u, v)`` of the fabric to its load in
    B/s at the reported pair rate; :meth:`to_dict` leaves it out unless asked.
    """

    fabric: str
    family: str
    terminal: str
    routing: str
    seed: int | None
    flows_per_pair: int
    pxn: bool
    gpus: int
    nodes: int
    flows: int
    pair_rate_GBps: float
    alltoall_algbw_GBps: float
    alltoall_busbw_GBps: float
    expected_pair_rate_GBps: float
    expected_alltoall_busbw_GBps: float
    collision_loss: float
    max_link_utilization: float
    bottleneck_tiers: dict[str, int]
    tiers: list[TierLoad]
    most_loaded_links: list[LoadedLink]
    notes: list[str]
    solve_seconds: float
    # (nodes, arc tails, arc heads, load, expected load): always set by routed_alltoall; None
    # only in the copy that to_dict serialises
    _arcs: tuple[list[Any], np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = field(
        default=None, repr=False, compare=False
    )

    def _arc_loads(self, expected: bool) -> list[tuple[Any, Any, float]]:
        """``(u, v, B/s)`` of every directed arc: sampled or expected loads."""
        if self._arcs is None:  # pragma: no cover - a bug
            raise AssertionError("RoutedReport built without its arcs")
        nodes, u, v, load, load_e = self._arcs
        x = load_e if expected else load
        return [
            (nodes[a], nodes[b], w)
            for a, b, w in zip(u.tolist(), v.tolist(), x.tolist(), strict=True)
        ]

    @property
    def link_load(self) -> dict[tuple[Any, Any], float]:
        """Load in B/s at the reported pair rate of every directed arc ``(u, v)`` of the fabric."""
        return {(a, b): x for a, b, x in self._arc_loads(expected=False)}

    @property
    def expected_link_load(self) -> dict[tuple[Any, Any], float]:
        """As :attr:`link_load` with the expected routing (ECMP's even split), B/s at the
        reported pair rate."""
        return {(a, b): x for a, b, x in self._arc_loads(expected=True)}

    def to_dict(self, *, link_load: bool = False) -> dict[str, Any]:
        """A JSON-ready dict; with ``link_load=True`` also ``link_load``, a list of
        ``[source, target, load_Bps]`` for every directed arc."""
        d = asdict(replace(self, _arcs=None))  # the arrays are not deep-copied
        d.pop("_arcs")
        if link_load:
            d["link_load"] = [[str(a), str(b), x] for a, b, x in self._arc_loads(expected=False)]
        return d


# --------------------------------------------------------------------------- the fabric


@dataclass
class _Arcs:
    """The graph as integer arrays: nodes, and every directed arc (arc ``2i`` is edge ``i`` as
    networkx lists it, arc ``2i + 1`` the reverse)."""

    nodes: list[Any]
    kind: np.ndarray  # node -> _GPU, _NIC, _NVSWITCH or _SWITCH
    tier: np.ndarray  # node -> switch tier (0 for the others)
    label: np.ndarray  # node -> index into labels
    labels: list[str]
    u: np.ndarray
    v: np.ndarray
    cap: np.ndarray  # B/s per direction (all cables)
    cables: np.ndarray
    _keys: np.ndarray
    _order: np.ndarray

    def find(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Arc ids of the arcs ``u -> v`` (node ids); every one must exist."""
        n = len(self.nodes)
        want = np.asarray(u, dtype=np.int64) * n + np.asarray(v, dtype=np.int64)
        pos = np.searchsorted(self._keys, want)
        pos = np.minimum(pos, len(self._keys) - 1)
        if (self._keys[pos] != want).any():  # pragma: no cover - a bug
            raise AssertionError("arc not in the graph")
        return self._order[pos]

    def tier_names(self) -> np.ndarray:
        """``<label>-><label>`` of every arc, e.g. ``leaf->spine``."""
        n_lab = len(self.labels)
        code = self.label[self.u] * n_lab + self.label[self.v]
        uniq, inv = np.unique(code, return_inverse=True)
        names = np.array([f"{self.labels[c // n_lab]}->{self.labels[c % n_lab]}" for c in uniq])
        return names[inv.ravel()]


_GPU, _NIC, _NVSWITCH, _SWITCH = 0, 1, 2, 3
_KIND_CODE = {"gpu": _GPU, "nic": _NIC, "nvswitch": _NVSWITCH}


@dataclass
class _Tree:
    """The switch tiers as padded port tables (local indices within each tier)."""

    T: int  # top tier
    names: dict[int, list[Any]]  # tier -> switch names
    ids: dict[int, np.ndarray]  # tier -> node ids
    local: np.ndarray  # node id -> local index in its tier (-1 if not a switch)
    up_parent: dict[int, np.ndarray]  # tier t -> (n_t, P) local index in tier t+1
    up_port: dict[int, np.ndarray]  # (n_t, P) port id
    up_valid: dict[int, np.ndarray]
    dn_child: dict[int, np.ndarray]  # tier t >= 2 -> (n_t, Q) local index in tier t-1
    dn_port: dict[int, np.ndarray]
    dn_valid: dict[int, np.ndarray]
    port_arc: np.ndarray  # port -> arc id
    port_cap: np.ndarray  # B/s of one cable
    below: dict[int, np.ndarray]  # (n_t, L) bool: leaf below the switch
    h: dict[int, np.ndarray]  # (n_t, L) int32: up*/down* hops to the leaf
    upfull: dict[int, np.ndarray]  # (n_t, L) bool: every up port of the switch leads there
    div: dict[int, int]  # D-mod-k divisor of tier t (product of lower up-port counts)
    cache: dict[Any, Any] = field(default_factory=dict)


def _arcs(G: nx.Graph) -> _Arcs:
    nodes = list(G)
    nid = {v: i for i, v in enumerate(nodes)}
    kinds: list[int] = []
    tiers: list[int] = []
    lab: list[str] = []
    for _, d in G.nodes(data=True):
        k = _KIND_CODE.get(d["kind"], _SWITCH)
        kinds.append(k)
        tiers.append(int(d["tier"]) if k == _SWITCH else 0)
        lab.append(tier_name(int(d["tier"])) if d["kind"] in SWITCH_KINDS else str(d["kind"]))
    kind = np.array(kinds, dtype=np.int64)
    tier = np.array(tiers, dtype=np.int64)
    labels = sorted(set(lab))
    code = {s: i for i, s in enumerate(labels)}
    label = np.array([code[s] for s in lab], dtype=np.int64)
    eu: list[int] = []
    ev: list[int] = []
    cap: list[float] = []
    links: list[int] = []
    for a, b, e in G.edges(data=True):
        eu.append(nid[a])
        ev.append(nid[b])
        cap.append(float(e["capacity"]))
        links.append(int(e["links"]))
    E = len(eu)
    u = np.empty(2 * E, dtype=np.int64)
    v = np.empty(2 * E, dtype=np.int64)
    u[0::2], u[1::2] = eu, ev
    v[0::2], v[1::2] = ev, eu
    keys = u * len(nodes) + v
    order = np.argsort(keys, kind="stable")
    return _Arcs(
        nodes,
        kind,
        tier,
        label,
        labels,
        u,
        v,
        np.repeat(cap, 2),
        np.repeat(np.array(links, dtype=np.int64), 2),
        keys[order],
        order,
    )


def _tree(arcs: _Arcs) -> _Tree:
    """Tiers, ports and up*/down* distances; TopoError if the fabric is not up/down routable."""
    sw = np.nonzero(arcs.kind == _SWITCH)[0]
    if sw.size == 0:
        raise TopoError("the fabric has no switches: nothing to route")
    tier = arcs.tier
    T = int(tier[sw].max())
    rank = np.zeros(len(arcs.nodes), dtype=np.int64)
    srt = sorted(sw.tolist(), key=lambda i: natural_key(arcs.nodes[i]))
    rank[srt] = np.arange(len(srt))
    names: dict[int, list[Any]] = {}
    ids: dict[int, np.ndarray] = {}
    local = np.full(len(arcs.nodes), -1, dtype=np.int64)
    for t in range(1, T + 1):
        ids[t] = np.array([i for i in srt if tier[i] == t], dtype=np.int64)
        if ids[t].size == 0:
            raise TopoError(
                f"not up/down routable: the fabric has no tier-{t} switch between tiers 1 and {T}"
            )
        names[t] = [arcs.nodes[i] for i in ids[t]]
        local[ids[t]] = np.arange(ids[t].size)
    fwd = np.arange(0, len(arcs.u), 2)  # one arc per edge
    a, b = arcs.u[fwd], arcs.v[fwd]
    both = (arcs.kind[a] == _SWITCH) & (arcs.kind[b] == _SWITCH)
    gap = np.abs(tier[a] - tier[b])
    bad = np.nonzero(both & (gap != 1))[0]
    if bad.size:
        x, y = arcs.nodes[a[bad[0]]], arcs.nodes[b[bad[0]]]
        what = "two" if gap[bad[0]] == 0 else "non-adjacent"
        raise TopoError(
            f"not up/down routable: the cable {x}-{y} joins {what} tiers ({tier[a[bad[0]]]} and "
            f"{tier[b[bad[0]]]}); ECMP and D-mod-k here route fat trees (folded Clos) only, not "
            "Dragonfly, Slim Fly or rings"
        )
    e = fwd[both]
    up_is_fwd = tier[arcs.u[e]] < tier[arcs.v[e]]
    arc_up = np.where(up_is_fwd, e, e + 1)
    arc_dn = np.where(up_is_fwd, e + 1, e)
    m = arcs.cables[e]
    cable = np.arange(m.sum()) - np.repeat(np.cumsum(m) - m, m)
    arc_up, arc_dn = np.repeat(arc_up, m), np.repeat(arc_dn, m)
    n_up = len(arc_up)
    port_arc = np.concatenate([arc_up, arc_dn])
    port_cap = arcs.cap[port_arc] / arcs.cables[port_arc]
    owner = arcs.u[port_arc]
    other = arcs.v[port_arc]
    cable = np.concatenate([cable, cable])
    is_up = np.arange(len(port_arc)) < n_up

    def table(t: int, up: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        sel = np.nonzero((is_up == up) & (tier[owner] == t))[0]
        o = sel[np.lexsort((cable[sel], rank[other[sel]], local[owner[sel]]))]
        row = local[owner[o]]
        cnt = np.bincount(row, minlength=ids[t].size)
        slot = np.arange(o.size) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        P = int(cnt.max()) if cnt.size else 0
        oth = np.zeros((ids[t].size, P), dtype=np.int64)
        pid = np.zeros((ids[t].size, P), dtype=np.int64)
        ok = np.zeros((ids[t].size, P), dtype=bool)
        oth[row, slot] = local[other[o]]
        pid[row, slot] = o
        ok[row, slot] = True
        return oth, pid, ok

    up_parent, up_port, up_valid, dn_child, dn_port, dn_valid = {}, {}, {}, {}, {}, {}
    for t in range(1, T + 1):
        if t < T:
            up_parent[t], up_port[t], up_valid[t] = table(t, True)
        if t > 1:
            dn_child[t], dn_port[t], dn_valid[t] = table(t, False)
    L = ids[1].size
    below = {1: np.eye(L, dtype=bool)}
    for t in range(2, T + 1):
        bl = np.zeros((ids[t].size, L), dtype=bool)
        for q in range(dn_child[t].shape[1]):
            bl |= below[t - 1][dn_child[t][:, q]] & dn_valid[t][:, q, None]
        below[t] = bl
    h = {T: np.where(below[T], np.int32(T - 1), _INF).astype(np.int32)}
    upfull: dict[int, np.ndarray] = {}
    for t in range(T - 1, 0, -1):
        best = np.full((ids[t].size, L), _INF, dtype=np.int32)
        worst = np.full((ids[t].size, L), -1, dtype=np.int32)
        for q in range(up_parent[t].shape[1]):
            hq = h[t + 1][up_parent[t][:, q]]
            ok = up_valid[t][:, q, None]
            np.minimum(best, np.where(ok, hq, _INF), out=best)
            np.maximum(worst, np.where(ok, hq, -1), out=worst)
        upd = np.where(best >= _INF, _INF, best + 1).astype(np.int32)
        h[t] = np.where(below[t], np.int32(t - 1), upd).astype(np.int32)
        # every valid up port is on a minimal route to the leaf (the usual case in a fat tree)
        upfull[t] = (worst == best) & (best < _INF) & ~below[t]
    # D-mod-k: w_t = the most common up-port count of tier t (the XGFT parameter).
    div = {1: 1}
    for t in range(2, T + 1):
        counts = up_valid[t - 1].sum(1)
        counts = counts[counts > 0]
        w = Counter(counts.tolist()).most_common(1)[0][0] if counts.size else 1
        div[t] = div[t - 1] * int(w)
    return _Tree(
        T,
        names,
        ids,
        local,
        up_parent,
        up_port,
        up_valid,
        dn_child,
        dn_port,
        dn_valid,
        port_arc,
        port_cap,
        below,
        h,
        upfull,
        div,
    )


# --------------------------------------------------------------------------- the endpoints


@dataclass
class _Ends:
    """Terminals, NICs and the aggregated demand ``w(x, y) = S[x, c(y)] D[y]`` (other server)."""

    terminal: str
    n: int  # terminals
    servers: int
    nic_ids: np.ndarray  # node ids of the NICs
    nic_leaf: np.ndarray  # leaf local index of each NIC
    nic_server: np.ndarray
    nic_class: np.ndarray  # destination class (NIC index with PXN, else 0)
    R: int
    S: np.ndarray  # (nics, R): source terminals whose flows to class r leave by NIC x
    D: np.ndarray  # (nics,): terminals whose own NIC is y
    d: np.ndarray  # (nics,): D-mod-k destination index
    up_arc: np.ndarray  # NIC -> leaf arc id
    dn_arc: np.ndarray  # leaf -> NIC arc id
    intra_arc: np.ndarray  # arcs inside servers (NVLink, PCIe) ...
    intra_load: np.ndarray  # ... and their pair-units per unit pair rate
    pxn: bool
    node_names: int  # distinct ``node`` attributes of the terminals' servers


def _ends(G: nx.Graph, tree: _Tree, arcs: _Arcs, pxn: bool) -> _Ends:
    kind = arcs.kind
    # NIC -> switch cables
    cab = np.nonzero((kind[arcs.u] == _NIC) & (kind[arcs.v] == _SWITCH))[0]
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
    if (kind == _GPU).any():
        return _gpu_ends(G, tree, arcs, sw_of, pxn)
    nics = sorted(arcs.u[cab].tolist(), key=lambda i: natural_key(arcs.nodes[i]))
    n = len(nics)
    if n < 2:
        raise InfeasibleError(f"all-to-all needs at least two host endpoints; the fabric has {n}")
    nic_ids = np.array(nics, dtype=np.int64)
    servers = len({G.nodes[arcs.nodes[i]]["node"] for i in nics})
    return _finish_ends(
        tree,
        arcs,
        "endpoint",
        n,
        nic_ids,
        sw_of,
        np.arange(n),
        np.zeros(n, dtype=np.int64),
        1,
        np.ones((n, 1)),
        np.ones(n),
        (np.zeros(0, dtype=np.int64), np.zeros(0)),
        False,
        servers,
    )


def _gpu_ends(G: nx.Graph, tree: _Tree, arcs: _Arcs, sw_of: np.ndarray, pxn: bool) -> _Ends:
    kind = arcs.kind
    N = len(arcs.nodes)
    gpus = np.nonzero(kind == _GPU)[0]
    nics_all = np.nonzero(kind == _NIC)[0]
    server_name: dict[Any, int] = {}
    srv = np.full(N, -1, dtype=np.int64)
    for i in np.concatenate([gpus, nics_all]).tolist():
        srv[i] = server_name.setdefault(G.nodes[arcs.nodes[i]]["node"], len(server_name))
    n_srv = len(server_name)
    srv_names = list(server_name)
    srv_rank = np.empty(n_srv, dtype=np.int64)
    srv_rank[sorted(range(n_srv), key=lambda s: natural_key(srv_names[s]))] = np.arange(n_srv)
    # each GPU's own NIC (PCIe, same server) and NVSwitch
    pc = np.nonzero((kind[arcs.u] == _GPU) & (kind[arcs.v] == _NIC))[0]
    pc = pc[srv[arcs.u[pc]] == srv[arcs.v[pc]]]
    n_pc = np.bincount(arcs.u[pc], minlength=N)[gpus]
    if (n_pc != 1).any():
        a = gpus[np.argmax(n_pc != 1)]
        raise TopoError(
            f"GPU {arcs.nodes[a]} has {np.bincount(arcs.u[pc], minlength=N)[a]} NICs on PCIe; the "
            "routing model needs exactly one NIC per GPU (its own)"
        )
    own = np.full(N, -1, dtype=np.int64)
    own[arcs.u[pc]] = arcs.v[pc]
    gpu_nic_node = own[gpus]
    loose = gpus[sw_of[gpu_nic_node] < 0]
    if loose.size:
        raise InfeasibleError(
            f"{loose.size} GPU(s) have no NIC cabled to a switch (e.g. {arcs.nodes[loose[0]]}): "
            "they are disconnected, their all-to-all rate is 0"
        )
    n = gpus.size
    if n < 2:
        raise InfeasibleError(f"all-to-all needs at least two GPUs; the fabric has {n}")
    nv = np.nonzero((kind[arcs.u] == _GPU) & (kind[arcs.v] == _NVSWITCH))[0]
    nvsw = np.full(N, -1, dtype=np.int64)
    nvsw[arcs.u[nv]] = arcs.v[nv]
    gpu_server = srv[gpus]
    g_s = np.bincount(gpu_server, minlength=n_srv)
    gnv = nvsw[gpus]
    first = np.full(n_srv, -2, dtype=np.int64)
    first[gpu_server[::-1]] = gnv[::-1]
    shared = (gnv >= 0) & (gnv == first[gpu_server])
    if ((g_s[gpu_server] > 1) & ~shared).any():
        a = gpus[np.argmax((g_s[gpu_server] > 1) & ~shared)]
        raise TopoError(
            f"GPU {arcs.nodes[a]} is not on its server's NVSwitch; the routing model needs the "
            "GPUs of a server joined by one NVSwitch"
        )
    # the NICs that serve GPUs, in (server, index) order
    nic_ids_u = np.unique(gpu_nic_node)
    nic_index = [G.nodes[arcs.nodes[i]].get("index", 0) for i in nic_ids_u.tolist()]
    idx_keys = sorted(set(nic_index), key=natural_key)
    idx_rank = {k: i for i, k in enumerate(idx_keys)}
    nic_idx = np.array([idx_rank[k] for k in nic_index], dtype=np.int64)
    o = np.lexsort((nic_idx, srv_rank[srv[nic_ids_u]]))
    nic_ids = nic_ids_u[o]
    nic_idx = nic_idx[o]
    pos = np.full(N, -1, dtype=np.int64)
    pos[nic_ids] = np.arange(nic_ids.size)
    gpu_nic = pos[gpu_nic_node]
    nic_server = srv[nic_ids]
    if pxn:
        nic_class, R = nic_idx, len(idx_keys)
    else:
        nic_class, R = np.zeros(nic_ids.size, dtype=np.int64), 1
    # exit NIC of GPU a for destination class r: the server's unique NIC of class r (PXN),
    # else its own NIC
    exit_nic = np.repeat(gpu_nic[:, None], R, axis=1)
    if pxn:
        key = nic_server * R + nic_class
        cnt = np.bincount(key, minlength=n_srv * R)
        table = np.full(n_srv * R, -1, dtype=np.int64)
        uniq = cnt[key] == 1
        table[key[uniq]] = np.nonzero(uniq)[0]
        cand = table[gpu_server[:, None] * R + np.arange(R)[None, :]]
        exit_nic = np.where(cand >= 0, cand, exit_nic)
    n_nic = nic_ids.size
    Sx = np.bincount((exit_nic * R + np.arange(R)[None, :]).ravel(), minlength=n_nic * R)
    D = np.bincount(gpu_nic, minlength=n_nic).astype(float)
    # inside the servers, in pair-units per unit pair rate
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
            arcs.find(gpus, gpu_nic_node),
            arcs.find(gpu_nic_node, gpus),
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
    return _finish_ends(
        tree,
        arcs,
        "gpu",
        n,
        nic_ids,
        sw_of,
        nic_server,
        nic_class,
        R,
        Sx.reshape(n_nic, R).astype(float),
        D,
        (intra_arc, intra_load),
        pxn,
        int(np.count_nonzero(g_s)),
    )


def _finish_ends(
    tree: _Tree,
    arcs: _Arcs,
    terminal: str,
    n: int,
    nic_ids: np.ndarray,
    sw_of: np.ndarray,
    nic_server: np.ndarray,
    nic_class: np.ndarray,
    R: int,
    S: np.ndarray,
    D: np.ndarray,
    intra: tuple[np.ndarray, np.ndarray],
    pxn: bool,
    node_names: int,
) -> _Ends:
    """D-mod-k index and NIC cable arcs; ``nic_ids`` come in port order (kept under each leaf)."""
    sw = sw_of[nic_ids]
    nic_leaf = tree.local[sw]
    # D-mod-k index: leaf rank times the largest host count of a leaf, plus the rank below it
    order = np.lexsort((np.arange(nic_ids.size), nic_leaf))
    per_leaf = np.bincount(nic_leaf, minlength=len(tree.names[1]))
    m1 = int(per_leaf.max()) if per_leaf.size else 1
    start = np.concatenate(([0], np.cumsum(per_leaf)[:-1]))
    rank = np.empty(nic_ids.size, dtype=np.int64)
    rank[order] = np.arange(nic_ids.size) - start[nic_leaf[order]]
    d = nic_leaf * m1 + rank
    servers = int(nic_server.max()) + 1 if nic_server.size else 0
    return _Ends(
        terminal,
        n,
        servers,
        nic_ids,
        nic_leaf,
        nic_server,
        nic_class,
        R,
        S,
        D,
        d,
        arcs.find(nic_ids, sw),
        arcs.find(sw, nic_ids),
        intra[0],
        intra[1],
        pxn,
        node_names,
    )


def _same_server_pairs(e: _Ends) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All (x, y) NIC pairs of one server with their demand ``S[x, c(y)] D[y]`` (to remove)."""
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


# --------------------------------------------------------------------------- routing


@dataclass
class _Loads:
    port: np.ndarray  # sampled pair-units per port (times flows_per_pair for ECMP)
    port_exp: np.ndarray  # expected pair-units per port


def _leaf_demand(e: _Ends, L: int) -> tuple[np.ndarray, np.ndarray]:
    """SA (L, R): sources per leaf and class; DB (R, L): destinations per class and leaf."""
    SA = np.zeros((L, e.R))
    np.add.at(SA, e.nic_leaf, e.S)
    DB = np.zeros((e.R, L))
    np.add.at(DB, (e.nic_class, e.nic_leaf), e.D)
    return SA, DB


def _leaf_matrix_chunks(e: _Ends, L: int, J: int):
    """Yield (B0, B1, W) with W (L, B1-B0) the pair-units from each leaf to leaves B0..B1."""
    SA, DB = _leaf_demand(e, L)
    xs, ys, val = _same_server_pairs(e)
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


def _check_routable(tree: _Tree, e: _Ends, planes: int) -> None:
    """InfeasibleError naming how many ordered pairs have demand but no up/down route."""
    L = len(tree.names[1])
    bad = 0.0
    example: tuple[Any, Any] = ("", "")
    J = max(1, _CHUNK_ELEMENTS // max(L, 1))
    for B0, B1, W in _leaf_matrix_chunks(e, L, J):
        cut = (tree.h[1][:, B0:B1] >= _INF) & (W > 0)
        if cut.any():
            bad += float(W[cut].sum())
            if not example[0]:
                a, b = np.argwhere(cut)[0]
                example = (tree.names[1][a], tree.names[1][B0 + b])
    if bad:
        who = "GPU" if e.terminal == "gpu" else "endpoint"
        hint = (
            f"; the fabric has {planes} disjoint planes: cross-plane traffic needs PXN "
            "(forwarding over NVLink), drop --no-pxn"
            if not e.pxn and planes > 1
            else ""
        )
        raise InfeasibleError(
            f"{int(round(bad)):,} ordered {who} pairs have no up/down route (e.g. from leaf "
            f"{example[0]} to leaf {example[1]}){hint}"
        )


def _route_dmodk(tree: _Tree, e: _Ends) -> _Loads:
    """D-mod-k port loads, in pair-units per unit pair rate.

    The leaf hop is done in aggregate: from a leaf with ``P`` up ports every destination ``y``
    leaves by port ``d(y) mod P``, so the demand ``SA[A, c(y)] D[y]`` (sources on leaf ``A``
    times destinations at ``y``) reaches the ports and the spines as products of small
    matrices. Pairs that must not climb (same leaf, same server) are removed by negative
    masses routed on the same paths, and pairs whose leaf has ineligible ports (a damaged or
    irregular tree) are moved to their true port. Above the leaves, (switch, destination)
    masses are merged and routed one hop at a time.
    """
    n_ports = len(tree.port_arc)
    port = np.zeros(n_ports)
    if tree.T == 1:
        return _Loads(port, port.copy())
    L = len(tree.names[1])
    Y = len(e.nic_ids)
    d, Bl, cls, D = e.d, e.nic_leaf, e.nic_class, e.D
    SA, _ = _leaf_demand(e, L)
    pid, par, valid = tree.up_port[1], tree.up_parent[1], tree.up_valid[1]
    nv = valid.sum(1)
    n2 = len(tree.names[2])
    ev: list[np.ndarray] = []
    ey: list[np.ndarray] = []
    em: list[np.ndarray] = []
    # 1. every leaf sends to every destination, as if all pairs climbed
    for P in np.unique(nv[nv > 0]).tolist():
        grp = np.nonzero(nv == P)[0]
        q = d % P
        Gq = np.zeros((e.R, P))
        np.add.at(Gq, (cls, q), D)
        np.add.at(port, pid[grp, :P], SA[grp] @ Gq)
        SP = np.zeros((P, n2, e.R))
        np.add.at(SP, (np.arange(P)[None, :], par[grp, :P]), SA[grp][:, None, :])
        key = q * e.R + cls
        by_key = np.argsort(key, kind="stable")
        bounds = np.searchsorted(key[by_key], np.arange(P * e.R + 1))
        for kk in range(P * e.R):
            ys = by_key[bounds[kk] : bounds[kk + 1]]
            qq, rr = divmod(kk, e.R)
            ps = np.nonzero(SP[qq, :, rr])[0]
            if ys.size and ps.size:
                ev.append(np.repeat(ps, ys.size))
                ey.append(np.tile(ys, ps.size))
                em.append((SP[qq, ps, rr][:, None] * D[ys][None, :]).ravel())
    # 2. corrections (leaf, destination, mass) on the same aggregate port d(y) mod P
    xs, ys, val = _same_server_pairs(e)
    apart = Bl[xs] != Bl[ys]
    tA = [Bl, Bl[xs[apart]]]
    tY = [np.arange(Y), ys[apart]]
    tM = [-SA[Bl, cls] * D, -val[apart]]
    # 3. pairs of leaves with ineligible up ports: move their mass to the true port
    fA, fY, fM, fS = _irregular_leaf_pairs(tree, e, SA, xs, ys, val)
    tA += [fA]
    tY += [fY]
    tM += [-fM]
    A = np.concatenate(tA)
    yy = np.concatenate(tY)
    m = np.concatenate(tM)
    keep = nv[A] > 0
    A, yy, m = A[keep], yy[keep], m[keep]
    slot = d[yy] % nv[A]
    A = np.concatenate([A, fA])
    yy = np.concatenate([yy, fY])
    m = np.concatenate([m, fM])
    slot = np.concatenate([slot, fS])
    port += np.bincount(pid[A, slot], weights=m, minlength=n_ports)
    ev.append(par[A, slot])
    ey.append(yy)
    em.append(m)
    v, y, mass = _merge(np.concatenate(ev), np.concatenate(ey), np.concatenate(em), Y)
    _climb_and_descend(tree, e, v, y, mass, port)
    return _Loads(port, port.copy())


def _irregular_leaf_pairs(
    tree: _Tree, e: _Ends, SA: np.ndarray, xs: np.ndarray, ys: np.ndarray, val: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(leaf, destination, mass, true slot) of every climbing pair whose leaf has ports that do
    not lead to the destination's leaf (D-mod-k over the eligible ports only)."""
    L = len(tree.names[1])
    Bl = e.nic_leaf
    need: np.ndarray = ~tree.upfull[1] & ~np.eye(L, dtype=bool)
    has_up = np.asarray(tree.up_valid[1].any(axis=1))
    need &= has_up[:, None] & (tree.h[1] < _INF)  # no route: no demand
    empty = (np.zeros(0, dtype=np.int64),) * 2 + (np.zeros(0), np.zeros(0, dtype=np.int64))
    if not need.any():
        return empty
    # every destination on the irregular leaf pairs
    Y = len(e.nic_ids)
    by_leaf = np.argsort(Bl, kind="stable")
    per_leaf = np.bincount(Bl, minlength=L)
    starts = np.concatenate(([0], np.cumsum(per_leaf)[:-1]))
    PA, PB = np.nonzero(need)
    c = per_leaf[PB]
    A = np.repeat(PA, c)
    ramp = np.arange(c.sum()) - np.repeat(np.cumsum(c) - c, c)
    y = by_leaf[np.repeat(starts[PB], c) + ramp]
    m = SA[A, e.nic_class[y]] * e.D[y]
    # minus the same-server pairs from leaf A to y
    skey = Bl[xs] * Y + ys
    o = np.argsort(skey, kind="stable")
    skey, sval = skey[o], np.cumsum(np.concatenate(([0.0], val[o])))
    q = A * Y + y
    m = m - (sval[np.searchsorted(skey, q, "right")] - sval[np.searchsorted(skey, q, "left")])
    keep = m > 1e-9
    A, y, m = A[keep], y[keep], m[keep]
    B = Bl[y]
    par, valid = tree.up_parent[1], tree.up_valid[1]
    elig = valid[A] & (tree.h[2][par[A], B[:, None]] == (tree.h[1][A, B] - 1)[:, None])
    cnt = elig.sum(1)
    k = e.d[y] % np.maximum(cnt, 1)
    slot = np.argmax(np.cumsum(elig, axis=1) > k[:, None], axis=1)
    return A, y, m, slot


def _merge(
    v: np.ndarray, y: np.ndarray, m: np.ndarray, Y: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sum the masses of equal (switch, destination) entries; drop the ones that cancel."""
    key, inv = np.unique(v * Y + y, return_inverse=True)
    tot = np.bincount(inv.ravel(), weights=m, minlength=len(key))
    keep = np.abs(tot) > 1e-6
    if (tot[keep] < 0).any():  # pragma: no cover - a bug
        raise AssertionError("negative mass after merging: a correction missed its path")
    return key[keep] // Y, key[keep] % Y, tot[keep]


def _climb_and_descend(
    tree: _Tree, e: _Ends, v: np.ndarray, y: np.ndarray, m: np.ndarray, port: np.ndarray
) -> None:
    """D-mod-k from tier 2 up: (switch, destination, mass) entries, one hop at a time."""
    T, Y, n_ports = tree.T, len(e.nic_ids), len(port)
    d, Bl = e.d, e.nic_leaf
    down: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = defaultdict(list)
    for t in range(2, T + 1):
        B = Bl[y]
        bl = tree.below[t][v, B]
        down[t].append((v[bl], y[bl], m[bl]))
        v, y, m, B = v[~bl], y[~bl], m[~bl], B[~bl]
        if t == T:
            if v.size:  # pragma: no cover - excluded by _check_routable
                raise AssertionError("mass left at the top tier: a route is missing")
            break
        par, pid, valid = tree.up_parent[t], tree.up_port[t], tree.up_valid[t]
        nv = valid.sum(1)[v]
        slot = (d[y] // tree.div[t]) % np.maximum(nv, 1)
        odd = np.nonzero(~tree.upfull[t][v, B])[0]
        if odd.size:
            vo, Bo = v[odd], B[odd]
            elig = valid[vo] & (
                tree.h[t + 1][par[vo], Bo[:, None]] == (tree.h[t][vo, Bo] - 1)[:, None]
            )
            k = (d[y[odd]] // tree.div[t]) % np.maximum(elig.sum(1), 1)
            slot[odd] = np.argmax(np.cumsum(elig, axis=1) > k[:, None], axis=1)
        port += np.bincount(pid[v, slot], weights=m, minlength=n_ports)
        v, y, m = _merge(par[v, slot], y, m, Y)
    for t in range(T, 1, -1):
        parts = down.pop(t, [])
        if not parts:
            continue
        cat = [np.concatenate(z) for z in zip(*parts, strict=True)]
        v, y, m = _merge(cat[0], cat[1], cat[2], Y)
        B = Bl[y]
        child, pid, valid = tree.dn_child[t], tree.dn_port[t], tree.dn_valid[t]
        elig = valid[v] & tree.below[t - 1][child[v], B[:, None]]
        k = (d[y] // tree.div[t - 1]) % np.maximum(elig.sum(1), 1)
        slot = np.argmax(np.cumsum(elig, axis=1) > k[:, None], axis=1)
        port += np.bincount(pid[v, slot], weights=m, minlength=n_ports)
        down[t - 1].append((child[v, slot], y, m))
    if down.get(1):
        v1 = np.concatenate([z[0] for z in down[1]])
        y1 = np.concatenate([z[1] for z in down[1]])
        if (v1 != Bl[y1]).any():  # pragma: no cover - a bug
            raise AssertionError("flows arrived at a leaf other than their destination")


def _route_ecmp(tree: _Tree, e: _Ends, F: int, rng: np.random.Generator) -> _Loads:
    """ECMP port loads in pair-units per unit pair rate: sampled (``F`` flows per pair, each
    ``1/F``) and expected, by chunks of destination leaves (a fixed chunk size, so the draws
    depend on the seed only)."""
    L = len(tree.names[1])
    n_ports = len(tree.port_arc)
    port = np.zeros(n_ports)
    port_exp = np.zeros(n_ports)
    widest = max(
        [len(tree.names[t]) * tree.up_parent[t].shape[1] for t in tree.up_parent]
        + [len(tree.names[t]) * tree.dn_child[t].shape[1] for t in tree.dn_child]
        + [1]
    )
    J = max(1, _CHUNK_ELEMENTS // widest)
    for B0, B1, W in _leaf_matrix_chunks(e, L, J):
        Bj = np.arange(B0, B1)
        W[Bj, np.arange(B1 - B0)] = 0.0
        flows = np.rint(W * F)
        _propagate(tree, flows, W, Bj, port, port_exp, rng)
    return _Loads(port / F, port_exp)


def _propagate(
    tree: _Tree,
    U: np.ndarray,
    Ue: np.ndarray,
    Bj: np.ndarray,
    port: np.ndarray,
    port_exp: np.ndarray,
    rng: np.random.Generator,
) -> None:
    """ECMP: route whole flows ``U`` (leaves x destination leaves ``Bj``) up*/down*, split at
    random at every hop, and the pair-units ``Ue`` split evenly alongside (the expectation)."""
    T = tree.T
    if T == 1:  # one leaf per component: every routable pair stays on its leaf
        return
    J = U.shape[1]
    cols = np.arange(J)
    down: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for t in range(1, T):
        if t > 1:
            bt = tree.below[t][:, Bj]
            down[t] = (np.where(bt, U, 0.0), np.where(bt, Ue, 0.0))
            U, Ue = np.where(bt, 0.0, U), np.where(bt, 0.0, Ue)
        U, Ue, turned = _turn(tree, t, U, Ue, Bj, port, port_exp, rng)
        if turned is not None:
            if t in down:
                turned = (turned[0] + down[t][0], turned[1] + down[t][1])
            down[t] = turned
        parent, pid, valid = tree.up_parent[t], tree.up_port[t], tree.up_valid[t]
        # eligible up ports: the parent is one hop closer to the destination leaf
        elig = valid[:, :, None] & (tree.h[t + 1][:, Bj][parent] == (tree.h[t][:, Bj] - 1)[:, None])
        U, Ue = _hop(elig, parent, pid, len(tree.names[t + 1]), U, Ue, port, port_exp, rng)
    down[T] = (U, Ue)
    for t in range(T, 1, -1):
        M, Me = down.pop(t)
        child, pid, valid = tree.dn_child[t], tree.dn_port[t], tree.dn_valid[t]
        elig = valid[:, :, None] & tree.below[t - 1][:, Bj][child]
        M, Me = _hop(elig, child, pid, len(tree.names[t - 1]), M, Me, port, port_exp, rng)
        if t - 1 in down:
            M, Me = M + down[t - 1][0], Me + down[t - 1][1]
        down[t - 1] = (M, Me)
    arrived = down[1][0]
    if not np.allclose(arrived.sum(0), arrived[Bj, cols]):  # pragma: no cover - a bug
        raise AssertionError("flows arrived at a leaf other than their destination")


def _one_way_down(tree: _Tree, t: int) -> tuple[np.ndarray, np.ndarray]:
    """For the switches of tier ``t + 1``: the single down port toward each leaf and the
    tier-``t`` switch it reaches, or -1 where there is none or more than one."""
    key = ("one_way", t)
    if key not in tree.cache:
        child, pid, valid = tree.dn_child[t + 1], tree.dn_port[t + 1], tree.dn_valid[t + 1]
        L = len(tree.names[1])
        cnt = np.zeros((len(tree.names[t + 1]), L), dtype=np.int64)
        one_port = np.full((len(tree.names[t + 1]), L), -1, dtype=np.int64)
        one_child = np.full((len(tree.names[t + 1]), L), -1, dtype=np.int64)
        for q in range(child.shape[1]):
            ok = valid[:, q, None] & tree.below[t][child[:, q]]
            cnt += ok
            one_port = np.where(ok, pid[:, q, None], one_port)
            one_child = np.where(ok, child[:, q, None], one_child)
        single = cnt == 1
        tree.cache[key] = (np.where(single, one_port, -1), np.where(single, one_child, -1))
    return tree.cache[key]


def _turn_groups(tree: _Tree, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tier-``t`` switches grouped by their set of parents: the group of each switch, and per
    group and leaf whether every parent turns down by one single port into one and the same
    tier-``t`` switch, and which."""
    key = ("turn", t)
    if key not in tree.cache:
        one_port, one_child = _one_way_down(tree, t)
        parent, valid = tree.up_parent[t], tree.up_valid[t]
        sets: dict[tuple[int, ...], int] = {}
        gid = np.array(
            [
                sets.setdefault(tuple(parent[v, valid[v]].tolist()), len(sets))
                for v in range(len(parent))
            ],
            dtype=np.int64,
        )
        L = len(tree.names[1])
        gconv = np.zeros((len(sets), L), dtype=bool)
        gw = np.full((len(sets), L), -1, dtype=np.int64)
        for ps, g in sets.items():
            if not ps:
                continue
            op, oc = one_port[list(ps)], one_child[list(ps)]
            gconv[g] = (op >= 0).all(0) & (oc == oc[0]).all(0)
            gw[g] = oc[0]
        tree.cache[key] = (gid, gconv, gw)
    return tree.cache[key]


def _turn(
    tree: _Tree,
    t: int,
    U: np.ndarray,
    Ue: np.ndarray,
    Bj: np.ndarray,
    port: np.ndarray,
    port_exp: np.ndarray,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """ECMP over a turn: where every up port of a tier-``t`` switch ``v`` reaches a switch
    that turns down toward the destination leaf by one single port, into one and the same
    tier-``t`` switch ``w`` (a three-tier fat tree: spine, any core of its group, the same
    spine index in the destination pod), the random choice only loads ``v -> p -> w``; the
    flows then continue from ``w`` whichever ``p`` they took. So destinations are merged by
    ``(v, w)`` for the draw (exact: independent flows), and the masses move to ``w``.
    Returns the rest of ``U``, ``Ue`` and the moved masses (tier ``t``), or None."""
    one_port, _ = _one_way_down(tree, t)
    parent, pid, valid = tree.up_parent[t], tree.up_port[t], tree.up_valid[t]
    n_t, P = parent.shape
    J = len(Bj)
    if P == 0:
        return U, Ue, None
    gid, gconv, gw = _turn_groups(tree, t)
    cand = tree.upfull[t][:, Bj] & ((U > 0) | (Ue > 0)) & gconv[gid][:, Bj]
    v, j = np.nonzero(cand)
    if not v.size:
        return U, Ue, None
    w = gw[gid[v], Bj[j]]
    key = v * n_t + w
    uk, inv = np.unique(key, return_inverse=True)
    inv = inv.ravel()
    M = np.rint(np.bincount(inv, weights=U[v, j])).astype(np.int64)
    Me = np.bincount(inv, weights=Ue[v, j])
    rep = np.zeros(uk.size, dtype=np.int64)
    rep[inv] = np.arange(v.size)  # one candidate of each (v, w)
    sv = uk // n_t
    nv = valid[sv].sum(1)
    X = np.zeros((uk.size, P))
    rem, left = M.copy(), nv.copy()
    for q in range(P):
        vq = valid[sv, q]
        take = np.where(vq & (left == 1), rem, 0)
        draw = np.nonzero(vq & (left > 1) & (rem > 0))[0]
        if draw.size:
            take[draw] = rng.binomial(rem[draw], 1.0 / left[draw])
        X[:, q] = take
        rem -= take
        left -= vq
    share = np.where(valid[sv], (Me / nv)[:, None], 0.0)
    up = pid[sv]
    # the single down port of each parent toward the destination leaf, (states, P)
    dn = one_port[parent[sv], Bj[j[rep]][:, None]]
    m = valid[sv]
    for ports in (up, dn):
        port += np.bincount(ports[m], weights=X[m], minlength=len(port))
        port_exp += np.bincount(ports[m], weights=share[m], minlength=len(port))
    moved = (
        np.bincount(w * J + j, weights=U[v, j], minlength=n_t * J).reshape(n_t, J),
        np.bincount(w * J + j, weights=Ue[v, j], minlength=n_t * J).reshape(n_t, J),
    )
    return np.where(cand, 0.0, U), np.where(cand, 0.0, Ue), moved


def _hop(
    elig: np.ndarray,
    other: np.ndarray,
    pid: np.ndarray,
    n_next: int,
    U: np.ndarray,
    Ue: np.ndarray,
    port: np.ndarray,
    port_exp: np.ndarray,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """One ECMP hop of every (switch, destination leaf) over its eligible ports ``elig``
    (switches x ports x destinations): a multinomial split of the whole flows ``U``, drawn
    port by port as conditional binomials, and the even split of ``Ue``."""
    n_t, P, J = elig.shape
    if not (U.any() or Ue.any()):
        return np.zeros((n_next, J)), np.zeros((n_next, J))
    cnt = elig.sum(1)  # (n_t, J)
    used = (U > 0) | (Ue > 0)
    if (used & (cnt == 0)).any():  # pragma: no cover - excluded by _check_routable
        raise AssertionError("a flow has no eligible port")
    rem = np.rint(U).astype(np.int64)
    if bool((cnt[used] == 1).all()):
        # one eligible port wherever there is traffic (a down hop): nothing to draw
        slot = np.argmax(elig, axis=1)  # (n_t, J)
        rows = np.arange(n_t)[:, None]
        where = pid[rows, slot][used]
        to = (other[rows, slot] * J + np.arange(J)[None, :])[used]
        port += np.bincount(where, weights=rem[used], minlength=len(port))
        port_exp += np.bincount(where, weights=Ue[used], minlength=len(port))
        nxt = np.bincount(to, weights=rem[used], minlength=n_next * J)
        nxt_e = np.bincount(to, weights=Ue[used], minlength=n_next * J)
        return nxt.reshape(n_next, J), nxt_e.reshape(n_next, J)
    share = Ue / np.maximum(cnt, 1)  # expected pair-units on each eligible port
    # every port eligible wherever there is traffic: scalar probabilities 1/(P - q)
    full = bool((cnt[used] == P).all())
    left = cnt.astype(np.int64)
    cols = np.arange(J)
    nxt = np.zeros(n_next * J)
    nxt_e = np.zeros(n_next * J)
    for q in range(P):
        if full:
            take = rng.binomial(rem, 1.0 / (P - q)) if q < P - 1 else rem.copy()
            sh = share
        else:
            eq = elig[:, q, :]
            take = np.where(eq & (left == 1), rem, 0)
            draw = eq & (left > 1) & (rem > 0)
            if draw.any():
                take[draw] = rng.binomial(rem[draw], 1.0 / left[draw])
            left -= eq
            sh = np.where(eq, share, 0.0)
        rem -= take
        to = ((other[:, q] * J)[:, None] + cols).ravel()
        port += np.bincount(pid[:, q], weights=take.sum(1), minlength=len(port))
        port_exp += np.bincount(pid[:, q], weights=sh.sum(1), minlength=len(port))
        nxt += np.bincount(to, weights=take.ravel(), minlength=n_next * J)
        nxt_e += np.bincount(to, weights=sh.ravel(), minlength=n_next * J)
    return nxt.reshape(n_next, J), nxt_e.reshape(n_next, J)


# --------------------------------------------------------------------------- entry point


def routed_alltoall(
    G: nx.Graph,
    routing: str = "ecmp",
    *,
    seed: int | np.random.Generator | None = 0,
    flows_per_pair: int = 1,
    pxn: bool = True,
) -> RoutedReport:
    """The uniform all-to-all as real routing carries it: ECMP hashing or D-mod-k, with PXN.

    Parameters
    ----------
    G : networkx.Graph
        A fabric (schema in :mod:`topo.fabric`) whose switches form up/down tiers (a fat
        tree: FT2, FT3, MRFT, MPFT, or an imported fat tree such as the GB200 SuperPOD dump).
        Terminals are its GPUs or, without GPUs, its host endpoints.
    routing : {"ecmp", "dmodk"}
        ``ecmp``: each flow hashes uniformly at random over the eligible ports (cables) at
        every hop; ``dmodk``: destination-mod-k port selection (OpenSM ``ftree``).
    seed : int, numpy.random.Generator or None
        Seeds the ECMP hashing (``numpy.random.default_rng(seed)``); ignored by D-mod-k.
    flows_per_pair : int
        Flows (RDMA queue pairs) per ordered GPU pair, 1 to 1024, each carrying an equal share.
        D-mod-k routes by destination, so all flows of a pair share one path.
    pxn : bool
        NCCL's PXN: a flow to a destination whose NIC has another index first crosses NVLink
        to the local GPU of the NIC with that index (same rail or plane). Off: every GPU
        leaves by its own NIC (in MPFT, cross-plane pairs then have no route). Ignored for
        fabrics without GPUs.

    Returns
    -------
    RoutedReport
        ``pair_rate_GBps`` ``lambda``: the rate of every ordered pair when the all-to-all
        runs on these paths, ``min_e capacity_e / c_e`` over every cable, NIC link, PCIe and
        NVLink link (``c_e``: pair-units it carries per unit rate); ``alltoall_busbw_GBps`` =
        ``lambda (n - 1)`` (nccl-tests); ``expected_pair_rate_GBps`` the same with ECMP's
        expected (evenly split) loads, ``collision_loss`` = 1 - their ratio; ``tiers``:
        per-tier expected and sampled loads (GB/s at ``lambda``); ``most_loaded_links``;
        ``link_load``: B/s on every directed arc at ``lambda``.

    Raises
    ------
    TopoError
        Unknown ``routing``; ``flows_per_pair`` outside 1 to 1024; a fabric that is not
        up/down routable (cables within a tier or skipping one, hosts on upper tiers), or
        whose servers are not GPUs each with one NIC joined by an NVSwitch.
    InfeasibleError
        Fewer than two terminals, GPUs with no NIC cabled to a switch, or pairs with no
        up/down route (e.g. cross-plane pairs of an MPFT without PXN); the message gives the
        count.

    Examples
    --------
    >>> from topo.builders import build
    >>> G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    >>> r = routed_alltoall(G, "dmodk")
    >>> round(r.alltoall_busbw_GBps, 2)   # contention-free: 50 GB/s x (n - 1) / (n - g)
    51.67

    References
    ----------
    E. Zahavi, "D-Mod-K Routing Providing Non-Blocking Traffic for Shift Permutations on Real
    Life Fat Trees", CCIT Report 776, Technion, 2010; OpenSM ``doc/current-routing.txt``
    (ftree); C. Hopps, RFC 2992, 2000 (ECMP); nccl-tests ``doc/PERFORMANCE.md`` (busbw).
    """
    t0 = time.perf_counter()
    name = getattr(routing, "value", routing)
    if name not in ROUTINGS:
        raise TopoError(
            f"--routing must be one of {', '.join(ROUTINGS)} here (optimal is "
            f"topo.flow.alltoall_bandwidth), got {name!r}"
        )
    if (
        isinstance(flows_per_pair, bool)
        or not isinstance(flows_per_pair, (int, np.integer))
        or not 1 <= flows_per_pair <= MAX_FLOWS_PER_PAIR
    ):
        raise TopoError(
            f"--flows-per-pair must be a whole number from 1 to {MAX_FLOWS_PER_PAIR}, "
            f"got {flows_per_pair!r}"
        )
    F = int(flows_per_pair)
    arcs = _arcs(G)
    tree = _tree(arcs)
    ends = _ends(G, tree, arcs, bool(pxn))
    planes = int(G.graph.get("planes", 1))
    _check_routable(tree, ends, planes)
    notes: list[str] = []
    if name == "ecmp":
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        loads = _route_ecmp(tree, ends, F, rng)
    else:
        loads = _route_dmodk(tree, ends)
        if F > 1:
            notes.append("D-mod-k routes by destination: all flows of a pair share one path")
    if pxn and ends.terminal != "gpu":
        notes.append("no GPUs (imported fabric): PXN does not apply")
    report_seed = seed if isinstance(seed, int) and name == "ecmp" else None
    return _report(G, arcs, tree, ends, loads, name, report_seed, F, notes, t0)


def _report(
    G: nx.Graph,
    arcs: _Arcs,
    tree: _Tree,
    e: _Ends,
    loads: _Loads,
    routing: str,
    seed: int | None,
    F: int,
    notes: list[str],
    t0: float,
) -> RoutedReport:
    n_arcs = len(arcs.u)
    # pair-units per arc (sampled and expected): fabric ports, NIC cables, inside servers
    cnt = np.bincount(tree.port_arc, weights=loads.port, minlength=n_arcs)
    cnt_e = np.bincount(tree.port_arc, weights=loads.port_exp, minlength=n_arcs)
    nic_up = (e.S * _class_totals(e)).sum(1)
    nic_dn = e.D * _source_totals(e)
    for arr in (cnt, cnt_e):
        np.add.at(arr, e.up_arc, nic_up)
        np.add.at(arr, e.dn_arc, nic_dn)
        np.add.at(arr, e.intra_arc, e.intra_load)
    # per-cable ratio load/capacity (fabric arcs cable by cable, the others as a whole)
    is_port_arc = np.zeros(n_arcs, dtype=bool)
    is_port_arc[tree.port_arc] = True
    ratio = np.where(is_port_arc, 0.0, cnt / arcs.cap)
    ratio_e = np.where(is_port_arc, 0.0, cnt_e / arcs.cap)
    np.maximum.at(ratio, tree.port_arc, loads.port / tree.port_cap)
    np.maximum.at(ratio_e, tree.port_arc, loads.port_exp / tree.port_cap)
    lam = float(1.0 / ratio.max())
    lam_e = float(1.0 / ratio_e.max())
    n = e.n
    util = ratio * lam
    load = cnt * lam
    load_e = cnt_e * lam
    tier_arr = arcs.tier_names()
    tiers = []
    for t in sorted(set(tier_arr.tolist()), key=_tier_sort):
        m = tier_arr == t
        tiers.append(
            TierLoad(
                tier=t,
                links=int(m.sum()),
                capacity_GBps=Bps_to_GBps(float(np.median(arcs.cap[m]))),
                expected_mean_GBps=Bps_to_GBps(float(load_e[m].mean())),
                expected_max_GBps=Bps_to_GBps(float(load_e[m].max())),
                mean_GBps=Bps_to_GBps(float(load[m].mean())),
                max_GBps=Bps_to_GBps(float(load[m].max())),
                max_utilization=float(util[m].max()),
            )
        )
    top = np.argsort(-util, kind="stable")[:TOP_LINKS]
    links = [
        LoadedLink(
            source=str(arcs.nodes[arcs.u[a]]),
            target=str(arcs.nodes[arcs.v[a]]),
            tier=str(tier_arr[a]),
            capacity_GBps=Bps_to_GBps(float(arcs.cap[a])),
            load_GBps=Bps_to_GBps(float(load[a])),
            expected_load_GBps=Bps_to_GBps(float(load_e[a])),
            cables=int(arcs.cables[a]),
            utilization=float(util[a]),
        )
        for a in top
        if util[a] > 0
    ]
    bottleneck = Counter(tier_arr[util >= _SATURATED].tolist())
    nodes = e.node_names
    flows = int(round(float(e.D @ _source_totals(e)))) * F
    return RoutedReport(
        fabric=str(G.graph.get("name", "")),
        family=str(G.graph.get("family", "unknown")),
        terminal=e.terminal,
        routing=routing,
        seed=seed,
        flows_per_pair=F,
        pxn=e.pxn,
        gpus=n,
        nodes=nodes,
        flows=flows,
        pair_rate_GBps=Bps_to_GBps(lam),
        alltoall_algbw_GBps=Bps_to_GBps(lam * n),
        alltoall_busbw_GBps=Bps_to_GBps(lam * (n - 1)),
        expected_pair_rate_GBps=Bps_to_GBps(lam_e),
        expected_alltoall_busbw_GBps=Bps_to_GBps(lam_e * (n - 1)),
        collision_loss=float(max(0.0, 1.0 - lam / lam_e)),
        max_link_utilization=float(util.max()),
        bottleneck_tiers=dict(sorted(bottleneck.items())),
        tiers=tiers,
        most_loaded_links=links,
        notes=notes,
        solve_seconds=time.perf_counter() - t0,
        _arcs=(arcs.nodes, arcs.u, arcs.v, load, load_e),
    )


def _class_totals(e: _Ends) -> np.ndarray:
    """(nics, R): destinations of class r outside NIC x's server (pair-units per source)."""
    DR = np.bincount(e.nic_class, weights=e.D, minlength=e.R)
    own = np.zeros((e.servers, e.R))
    np.add.at(own, (e.nic_server, e.nic_class), e.D)
    return DR[None, :] - own[e.nic_server]


def _source_totals(e: _Ends) -> np.ndarray:
    """(nics,): sources outside NIC y's server whose flows to y's class leave the server."""
    ST = e.S.sum(0)
    own = np.zeros((e.servers, e.R))
    np.add.at(own, e.nic_server, e.S)
    return ST[e.nic_class] - own[e.nic_server, e.nic_class]


_TIER_ORDER = {"gpu": 0, "nvswitch": 1, "nic": 2, "leaf": 3, "spine": 4, "core": 5}


def _tier_sort(t: str) -> tuple:
    a, b = t.split("->")
    ka = _TIER_ORDER.get(a, 6 + int(a[4:]) if a.startswith("tier") else 9)
    kb = _TIER_ORDER.get(b, 6 + int(b[4:]) if b.startswith("tier") else 9)
    return (max(ka, kb), kb < ka, t)


__all__ = ["ROUTINGS", "LoadedLink", "RoutedReport", "TierLoad", "routed_alltoall"]
