"""Exact all-to-all without the LP: a routing that reaches a cut bound.

Weak duality gives an exact answer whenever a feasible concurrent flow reaches an upper bound:
no flow exceeds a cut's bound, so a routing at that rate is optimal. Damaged two-tier fabrics
(MPFT, MRFT, FT2 with random dead cables) are usually bound by a cut (the NIC cables of the
server that lost the most), break most of the symmetry the reduced LP rests on
(:mod:`topo.flow.symmetry`), and are routed at the cut's rate by a simple split:

- **Across planes, coupled at the servers.** The traffic of each pair of server classes is
  split over the planes (switch components) both reach, in proportions found by iterative
  proportional fitting (Deming and Stephan, Ann. Math. Stat. 11(4), 1940) so that every
  class sends into and receives from each plane in proportion to its capacity there: each of
  a server's NIC cables then carries the same fraction of its capacity.
- **Inside a plane, by leaves.** A class's share of a plane splits over its cables there in
  proportion to their capacity; the leaf-to-leaf traffic that results is split over the
  spines common to both leaves in proportion to the smaller of the two cables' capacity
  (two hops, leaf, spine, leaf).

The routing's rate is the least capacity over load; it is certified exact when it is within
:data:`CERTIFY_TOL` of the tightest cut of :func:`cut_bound` (the LP itself is solved to
HiGHS' primal feasibility tolerance, 1e-7), and the servers' insides carry it
(:func:`topo.flow.server_check.inside_theta`). Otherwise nothing is claimed and the LP
decides. The method and its proof are in ``docs/bandwidth.md`` ("Exact by a routing that
meets a cut").
"""

from __future__ import annotations

import math
import time
from collections.abc import Hashable
from dataclasses import dataclass, replace
from typing import Any

import networkx as nx
import numpy as np

from topo.fabric import SWITCH_KINDS, blocks_below_top, natural_key, switch_components
from topo.flow.hosts import Host, InnerSignature, terminal_count
from topo.flow.lp import NO_LP
from topo.flow.network import links, twin_classes
from topo.flow.planes import Scope
from topo.flow.result import BandwidthResult, BottleneckLink
from topo.flow.server_check import FEASIBILITY_TOL, Load, inside_theta
from topo.flow.uniform_report import build_report

CERTIFY_TOL = 1e-7
"""Relative gap between the routing's rate and the cut bound below which the rate is exact
(HiGHS' default primal feasibility tolerance, the precision of the LP's own optimum)."""

IPF_ROUNDS = 400
"""Most rounds of proportional fitting of the plane split."""

MAX_CELLS = 30_000_000
"""Largest array (class pairs x planes, or leaf pairs x spines) the routing builds (floats)."""

SATURATED = 1e-9
"""A link whose load is within this fraction of its capacity at the rate is saturated."""


def cut_bound(G: nx.Graph, hs: list[Host], terminal: str) -> tuple[float, str]:
    """The tightest of the server and switch-block cuts: (lambda bound in B/s, the cut named).

    For a vertex set ``S`` holding ``W`` of the ``n`` terminals, ``lambda <= c(S) / (W (n -
    W))`` (Leighton and Rao, J. ACM 46(6), 1999). Cuts tried: every server alone, and every
    switch and every block below the top tier (a pod) with every host attached to it.

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    hs : list of Host
        Its hosts (:func:`topo.flow.hosts.hosts`), at least two terminals.
    terminal : {"gpu", "endpoint"}
        What the terminals are.

    Returns
    -------
    (float, str)
        The bound on the pair rate (B/s) and the cut that gives it.
    """
    best, what, _ = _tightest_cut(G, hs, terminal)
    return best, what


def _tightest_cut(
    G: nx.Graph, hs: list[Host], terminal: str
) -> tuple[float, str, tuple[set[str], list[Host]]]:
    """:func:`cut_bound`, and its side: (the switches in it, the hosts in it)."""
    n = terminal_count(hs)
    best, what = math.inf, ""
    side: tuple[set[str], list[Host]] = (set(), [])
    for h in hs:
        dem = h.weight * (n - h.weight)
        cap = sum(h.attach.values())
        if dem and cap / dem < best:
            who = f"server {h.id}" if terminal == "gpu" else f"endpoint {h.id}"
            best, what, side = cap / dem, f"the NIC cables of {who}", (set(), [h])
    by_switch: dict[str, list[Host]] = {}
    for h in hs:
        for s in h.attach:
            by_switch.setdefault(s, []).append(h)
    blocks: list[set[str]] = [{s} for s in by_switch]
    adj = G._adj  # the raw dicts (no views): these loops visit every link
    is_switch = {v for v, k in G.nodes(data="kind") if k in SWITCH_KINDS}
    blocks += [set(b) for b in blocks_below_top(G) if len(b) > 1]
    for block in blocks:
        members = {id(h): h for s in block for h in by_switch.get(s, [])}
        W = sum(h.weight for h in members.values())
        if W == 0 or W == n:
            continue
        cap = 0.0
        for s in block:
            for t, e in adj[s].items():
                if t in is_switch and t not in block:
                    cap += float(e["capacity"])
        for h in members.values():
            cap += sum(c for s, c in h.attach.items() if s not in block)
        bound = cap / (W * (n - W))
        if bound < best:
            name = min(block, key=str) if len(block) == 1 else f"the block of {min(block, key=str)}"
            best, what = bound, f"{name} with its {len(members)} attached host(s)"
            side = (block, list(members.values()))
    return best, what, side


def cut_links(G: nx.Graph, hs: list[Host], terminal: str) -> list[BottleneckLink] | None:
    """The link directions of the tightest cut of :func:`cut_bound`, each at its capacity.

    A concurrent flow at the cut's rate ``lambda = c(S) / (W (n - W))`` sends ``W (n - W)
    lambda = c(S)`` across the cut each way (every pair split by it crosses it at least once),
    so at that rate every cable of the cut is full in both directions: when a feasible rate
    meets the cut bound, these are bottleneck links of every optimal flow.

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    hs : list of Host
        Its hosts, at least two terminals.
    terminal : {"gpu", "endpoint"}
        What the terminals are.

    Returns
    -------
    list of BottleneckLink or None
        Both directions of every switch link and NIC cable that leaves the cut's side, with
        load equal to capacity (B/s); None when a NIC of the cut is bound by its PCIe side
        (the cable is then not what binds) or the fabric has no finite cut.
    """
    rate, _, (block, members) = _tightest_cut(G, hs, terminal)
    if not math.isfinite(rate):
        return None
    is_switch = {v for v, k in G.nodes(data="kind") if k in SWITCH_KINDS}
    arcs: list[tuple[Hashable, Hashable, float, float]] = []
    for s in sorted(block, key=natural_key):
        for t, e in G.adj[s].items():
            if t in is_switch and t not in block:
                c = float(e["capacity"])
                arcs += [(s, t, c, c), (t, s, c, c)]
    for h in members:
        for s, nics in h.nics.items():
            if s in block:
                continue
            if h.host_bound.intersection(nics):
                return None
            for nic in nics:
                c = float(G.edges[nic, s]["capacity"])
                arcs += [(nic, s, c, c), (s, nic, c, c)]
    return links(G, arcs)


@dataclass(frozen=True)
class SplitRouting:
    """The plane-split, two-hop routing of the uniform all-to-all, per unit pair rate.

    Attributes
    ----------
    rate_Bps : float
        The largest pair rate it carries (B/s): the least capacity over load.
    classes : list of list of Host
        The twin classes (same GPUs, inside and attachments).
    host_util : numpy.ndarray, shape (classes, planes, 2)
        Load over capacity per unit pair rate (s/B x B/s: 1/(B/s)) of every cable of a class's
        servers in each plane, up (0) and down (1); every cable of a class in one plane carries
        the same fraction of its capacity.
    plane_of : dict of str to int
        Switch -> its plane (switch component).
    switch_load : dict of (str, str) to float
        Load per unit pair rate of every switch link direction that carries traffic.
    switch_util : float
        The largest load over capacity among them, per unit pair rate (1/(B/s)).
    """

    rate_Bps: float
    classes: list[list[Host]]
    host_util: np.ndarray
    plane_of: dict[str, int]
    switch_load: dict[tuple[str, str], float]
    switch_util: float = math.inf


def split_routing(G: nx.Graph, hs: list[Host]) -> SplitRouting | None:
    """The plane-split, up/down routing (module notes) of the uniform all-to-all, or None.

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    hs : list of Host
        Its hosts.

    Returns
    -------
    SplitRouting or None
        None when a plane is not a two- or three-tier Clos (:func:`_structure`), a pair of
        servers shares no plane, two leaves with traffic share no path of the routing, or
        the arrays would exceed :data:`MAX_CELLS`.
    """
    found = _structure(G, hs)
    if found is None:
        return None
    leaves, plane_of, depth = found
    if len(leaves) ** 2 > MAX_CELLS:
        return None  # (known before the classes are formed)
    classes = twin_classes(hs, Scope(switches=set(plane_of)))
    planes = len(depth)
    if len(classes) ** 2 * planes > MAX_CELLS:
        return None
    li = {s: i for i, s in enumerate(leaves)}
    m = np.zeros((len(classes), len(leaves)))
    for ci, cls in enumerate(classes):
        for s, c in cls[0].attach.items():
            m[ci, li[s]] = len(cls) * c
    leaf_plane = np.array([plane_of[s] for s in leaves], dtype=int)
    cap = np.zeros((len(classes), planes))  # each class's cable capacity per plane (B/s)
    for p in range(planes):
        cap[:, p] = m[:, leaf_plane == p].sum(axis=1)
    x = plane_split(_pair_demand(classes), cap)
    if x is None:
        return None
    host_util = np.zeros((len(classes), planes, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        host_util[:, :, 0] = np.where(cap > 0, x.sum(axis=1) / cap, 0.0)
        host_util[:, :, 1] = np.where(cap > 0, x.sum(axis=0) / cap, 0.0)
    switch_load: dict[tuple[str, str], float] = {}
    for p in range(planes):
        in_p = np.nonzero(leaf_plane == p)[0]
        rows, cols = np.nonzero(m[:, in_p])
        vals = m[rows, in_p[cols]] / cap[rows, p]
        traffic = _leaf_traffic(x[:, :, p], rows, cols, vals, len(in_p))
        route = _two_hop if depth[p] == 2 else _three_tier
        if not route(G, [leaves[i] for i in in_p], traffic, switch_load):
            return None
    switch_util = _worst(G, switch_load)
    worst = max(float(host_util.max()), switch_util)
    if worst <= 0:
        return None
    return SplitRouting(
        rate_Bps=1.0 / worst,
        classes=classes,
        host_util=host_util,
        plane_of=plane_of,
        switch_load=switch_load,
        switch_util=switch_util,
    )


def _pair_demand(classes: list[list[Host]]) -> np.ndarray:
    """Terminal pairs between every two classes' servers (ordered; distinct servers)."""
    size = np.array([len(c) for c in classes], dtype=float)
    weight = np.array([c[0].weight for c in classes], dtype=float)
    D = np.outer(size * weight, size * weight)
    np.fill_diagonal(D, size * (size - 1) * weight**2)
    return D


def plane_split(D: np.ndarray, cap: np.ndarray) -> np.ndarray | None:
    """Split every class pair's demand over the planes both reach, so that each class sends
    into and receives from each plane in proportion to its capacity there.

    Parameters
    ----------
    D : numpy.ndarray, shape (K, K)
        Demand between classes (terminal pairs).
    cap : numpy.ndarray, shape (K, P)
        Each class's cable capacity in each plane (B/s).

    Returns
    -------
    numpy.ndarray, shape (K, K, P), or None
        ``x[c, d, p]``: the demand of ``(c, d)`` routed in plane ``p``; ``x.sum(axis=2) == D``
        exactly. The fitted marginals are met as closely as :data:`IPF_ROUNDS` rounds of
        iterative proportional fitting reach (the caller measures the loads). None if a pair
        with demand shares no plane.
    """
    x = D[:, :, None] * cap[:, None, :] * cap[None, :, :]
    total = x.sum(axis=2)
    if np.any((D > 0) & (total <= 0)):
        return None
    x *= np.divide(D, total, out=np.zeros_like(D), where=total > 0)[:, :, None]
    frac = cap / np.where(cap.sum(axis=1, keepdims=True) > 0, cap.sum(axis=1, keepdims=True), 1)
    out_target = D.sum(axis=1)[:, None] * frac
    in_target = D.sum(axis=0)[:, None] * frac
    for _ in range(IPF_ROUNDS):
        out_now = x.sum(axis=1)
        in_now = x.sum(axis=0)
        err = max(_rel_err(out_now, out_target), _rel_err(in_now, in_target))
        if err < 1e-13:
            break
        x *= _ratio(out_target, out_now)[:, None, :]
        x *= _ratio(in_target, x.sum(axis=0))[None, :, :]
        total = x.sum(axis=2)
        x *= np.divide(D, total, out=np.zeros_like(D), where=total > 0)[:, :, None]
    return np.asarray(x)


def _ratio(target: np.ndarray, now: np.ndarray) -> np.ndarray:
    return np.asarray(np.divide(target, now, out=np.ones_like(target), where=now > 0))


def _rel_err(now: np.ndarray, target: np.ndarray) -> float:
    ok = target > 0
    return float(np.abs(now[ok] / target[ok] - 1).max()) if ok.any() else 0.0


def _leaf_traffic(
    xp: np.ndarray, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, n: int
) -> np.ndarray:
    """``S^T xp S`` for the sparse class-to-leaf shares ``S[rows, cols] = vals``: the
    leaf-to-leaf traffic of one plane (per unit pair rate)."""
    xs = np.zeros((xp.shape[0], n))
    np.add.at(xs.T, cols, (xp[:, rows] * vals).T)
    T = np.zeros((n, n))
    np.add.at(T, cols, xs[rows] * vals[:, None])
    return T


def _worst(G: nx.Graph, switch_load: dict[tuple[str, str], float]) -> float:
    """The largest load over capacity of the switch link directions."""
    adj = G._adj  # the raw dicts (no views): these loops visit every link
    return max((x / float(adj[u][v]["capacity"]) for (u, v), x in switch_load.items()), default=0)


def _add_all(
    switch_load: dict[tuple[str, str], float], tails: list[str], heads: list[str], x: np.ndarray
) -> None:
    """Add ``x[e]`` to ``switch_load[(tails[e], heads[e])]`` for each ``e`` in turn."""
    get = switch_load.get
    for u, v, y in zip(tails, heads, x.tolist(), strict=True):
        switch_load[(u, v)] = get((u, v), 0.0) + y


def _structure(G: nx.Graph, hs: list[Host]) -> tuple[list[str], dict[str, int], list[int]] | None:
    """The leaves (switches hosts attach to), each switch's plane, and each plane's number of
    tiers, when every plane is a Clos of two or three tiers; else None.

    Two tiers: leaves linked only to other switches (spines), spines only to leaves. Three:
    every link joins adjacent tiers (the ``tier`` attribute), the leaves are the lowest tier,
    the plane has exactly three.
    """
    comps = switch_components(G)
    plane_of = {s: i for i, comp in enumerate(comps) for s in comp}
    leafset = {s for h in hs for s in h.attach}
    depth = []
    for comp in comps:
        if all((s in leafset) != (t in leafset) for s in comp for t in G._adj[s] if t in plane_of):
            depth.append(2)
            continue
        tier = {s: int(G._node[s].get("tier", -1)) for s in comp}
        low = min(tier.values())
        ok = set(tier.values()) == {low, low + 1, low + 2} and all(
            (s in leafset) == (tier[s] == low) for s in comp
        )
        if not ok or any(
            abs(tier[s] - tier[t]) != 1 for s in comp for t in G._adj[s] if t in plane_of
        ):
            return None
        depth.append(3)
    return sorted(leafset, key=natural_key), plane_of, depth


def _two_hop(
    G: nx.Graph,
    leaves: list[str],
    traffic: np.ndarray,
    switch_load: dict[tuple[str, str], float],
) -> bool:
    """Route the leaf-to-leaf ``traffic`` over the switches above the leaves common to both,
    in proportion to the smaller cable; add the loads to ``switch_load``. False if two leaves
    with traffic share none (or the arrays would exceed :data:`MAX_CELLS`)."""
    T = traffic.copy()
    np.fill_diagonal(T, 0.0)
    if not T.any():
        return True
    spines = sorted({t for s in leaves for t in G._adj[s] if G._node[t]["kind"] in SWITCH_KINDS})
    if not spines or len(leaves) ** 2 * len(spines) > MAX_CELLS:
        return False
    ki = {t: k for k, t in enumerate(spines)}
    C = np.zeros((len(leaves), len(spines)))
    for a, s in enumerate(leaves):
        for t, e in G._adj[s].items():
            if t in ki:
                C[a, ki[t]] = float(e["capacity"])
    v = np.minimum(C[:, None, :], C[None, :, :])
    norm = v.sum(axis=2)
    if np.any((T > 0) & (norm <= 0)):
        return False
    w = T / np.where(norm > 0, norm, 1.0)
    up = np.einsum("ab,abk->ak", w, v)
    down = np.einsum("ab,abk->kb", w, v)
    rows, cols = np.nonzero(up)
    _add_all(switch_load, [leaves[i] for i in rows], [spines[i] for i in cols], up[rows, cols])
    rows, cols = np.nonzero(down)
    _add_all(switch_load, [spines[i] for i in rows], [leaves[i] for i in cols], down[rows, cols])
    return True


@dataclass(frozen=True)
class _Clos3:
    """A three-tier plane: its leaves, aggregation switches and cores, their pods, and the
    cables between tiers as index arrays (tail, head, capacity B/s)."""

    leaves: list[str]
    aggs: list[str]
    cores: list[str]
    pods: list[np.ndarray]
    pod_leaf: np.ndarray
    pod_agg: np.ndarray
    la: tuple[np.ndarray, np.ndarray, np.ndarray]
    ac: tuple[np.ndarray, np.ndarray, np.ndarray]


def _clos3(G: nx.Graph, leaves: list[str]) -> _Clos3 | None:
    """The three-tier plane above ``leaves``, if every pod's leaves and aggregation switches
    are fully cabled and every core reaches every pod; else None."""
    li = {s: i for i, s in enumerate(leaves)}
    aggs = sorted({t for s in leaves for t in G._adj[s] if G._node[t]["kind"] in SWITCH_KINDS})
    ai = {k: i for i, k in enumerate(aggs)}
    cores = sorted(
        {t for k in aggs for t in G._adj[k] if G._node[t]["kind"] in SWITCH_KINDS and t not in li},
        key=natural_key,
    )
    ci = {c: i for i, c in enumerate(cores)}
    blocks = blocks_below_top(G, [*leaves, *aggs, *cores])
    pod_of = {s: q for q, b in enumerate(blocks) for s in b}
    pod_leaf = np.array([pod_of[s] for s in leaves])
    pod_agg = np.array([pod_of[k] for k in aggs])
    adj = G._adj
    la = [
        (li[s], ai[k], float(e["capacity"])) for s in leaves for k, e in adj[s].items() if k in ai
    ]
    ac = [(ai[k], ci[c], float(e["capacity"])) for k in aggs for c, e in adj[k].items() if c in ci]
    if not la or not ac:
        return None
    la_arr = tuple(np.array(col) for col in zip(*la, strict=True))
    ac_arr = tuple(np.array(col) for col in zip(*ac, strict=True))
    n_pods = len(blocks)
    per_pod = np.bincount(pod_leaf[la_arr[0].astype(int)], minlength=n_pods)
    want = np.bincount(pod_leaf, minlength=n_pods) * np.bincount(pod_agg, minlength=n_pods)
    reach = np.zeros((len(cores), n_pods), dtype=bool)
    reach[ac_arr[1].astype(int), pod_agg[ac_arr[0].astype(int)]] = True
    if np.any(per_pod != want) or not reach.all():
        return None
    if set(ac_arr[0].astype(int)) != set(range(len(aggs))):
        return None  # an aggregation switch without a core
    return _Clos3(
        leaves=leaves,
        aggs=aggs,
        cores=cores,
        pods=[np.nonzero(pod_leaf == q)[0] for q in range(n_pods)],
        pod_leaf=pod_leaf,
        pod_agg=pod_agg,
        la=la_arr,  # type: ignore[arg-type]
        ac=ac_arr,  # type: ignore[arg-type]
    )


def _three_tier(
    G: nx.Graph,
    leaves: list[str],
    traffic: np.ndarray,
    switch_load: dict[tuple[str, str], float],
) -> bool:
    """Route one three-tier plane's leaf-to-leaf ``traffic``: inside a pod over its
    aggregation switches (:func:`_two_hop`); between pods up from the leaf over its cables in
    proportion to capacity, up from the aggregation switch over its cores likewise, down from
    the core to the destination pod's aggregation switches likewise, then to the leaf. Adds
    the loads to ``switch_load``; False if the plane is not fully cabled as that needs."""
    net = _clos3(G, leaves)
    if net is None:
        return False
    for pod in net.pods:
        if not _two_hop(G, [leaves[i] for i in pod], traffic[np.ix_(pod, pod)], switch_load):
            return False
    T = np.where(net.pod_leaf[:, None] == net.pod_leaf[None, :], 0.0, traffic)
    n_pods = len(net.pods)
    X = np.stack([T[:, pod].sum(axis=1) for pod in net.pods], axis=1)  # leaf -> other pods
    a_l, k_l, c_l = (net.la[0].astype(int), net.la[1].astype(int), net.la[2])
    k_a, c_a, cap_a = (net.ac[0].astype(int), net.ac[1].astype(int), net.ac[2])
    w = c_l / np.bincount(a_l, weights=c_l)[a_l]
    v = cap_a / np.bincount(k_a, weights=cap_a, minlength=len(net.aggs))[k_a]
    key = c_a * n_pods + net.pod_agg[k_a]
    u = cap_a / np.bincount(key, weights=cap_a)[key]
    by_agg = np.argsort(k_l, kind="stable")  # (every switch here has a cable below)
    leaf_slots = _cable_slots(a_l[by_agg], w[by_agg], np.bincount(k_l, minlength=len(net.aggs)))
    by_core = np.argsort(c_a, kind="stable")
    core_slots = _cable_slots(k_a[by_core], v[by_core], np.bincount(c_a, minlength=len(net.cores)))
    Y = _slot_sum(leaf_slots, X)  # what each aggregation switch sends up to each pod
    Z = _slot_sum(core_slots, Y)  # and each core down
    up_leaf = w * X.sum(axis=1)[a_l]
    up_agg = v * Y.sum(axis=1)[k_a]
    down_core = u * Z[c_a, net.pod_agg[k_a]]
    aggs, cores = [net.aggs[i] for i in k_a], [net.cores[i] for i in c_a]
    _add_all(switch_load, [leaves[i] for i in a_l], [net.aggs[i] for i in k_l], up_leaf)
    _add_all(switch_load, aggs, cores, up_agg)  # (the two directions' keys differ: the
    _add_all(switch_load, cores, aggs, down_core)  # order of the sums is unchanged)
    _three_tier_down(net, T, leaf_slots, v, u, switch_load)
    return True


def _three_tier_down(
    net: _Clos3,
    T: np.ndarray,
    leaf_slots: list[tuple[np.ndarray | None, np.ndarray, np.ndarray]],
    v: np.ndarray,
    u: np.ndarray,
    switch_load: dict[tuple[str, str], float],
) -> None:
    """The last hop between pods: aggregation switch to leaf. For each destination pod,
    ``R[k, k']`` is the fraction of what aggregation switch ``k`` sends up to that pod that
    arrives at its aggregation switch ``k'`` (over every core), and ``TW[b, k]`` what leaf
    ``b`` of the pod receives through ``k`` from the leaves of ``k``'s pod (the pod's own
    traffic is not in ``T``: it went the two-hop way); the hop ``k' -> b`` carries
    ``(TW R)[b, k']``. The sums over each switch's leaf cables (``leaf_slots``) run in
    cable order (:func:`_slot_sum`), one destination pod at a time (the arrays stay in
    cache)."""
    k_a, c_a = net.ac[0].astype(int), net.ac[1].astype(int)
    for q, pod in enumerate(net.pods):
        aggs_q = np.nonzero(net.pod_agg == q)[0]
        local = np.full(len(net.aggs), -1)
        local[aggs_q] = np.arange(len(aggs_q))
        R = _core_shares(k_a, c_a, v, u, local, len(net.cores), len(aggs_q), len(net.aggs))
        TW = _slot_sum(leaf_slots, T[:, pod])
        # destination leaf x aggregation switch of the pod (einsum: these products are small,
        # and a threaded BLAS spends more on its threads than on them)
        down = np.einsum("kb,kq->bq", TW, R)
        b, k = np.nonzero(down)
        tails = [net.aggs[i] for i in aggs_q[k]]
        _add_all(switch_load, tails, [net.leaves[i] for i in pod[b]], down[b, k])


def _cable_slots(
    rows: np.ndarray, w: np.ndarray, count: np.ndarray
) -> list[tuple[np.ndarray | None, np.ndarray, np.ndarray]]:
    """The cables of each switch (``rows``, ``w``: lower ends and weights, sorted by switch;
    ``count`` per switch, each at least 1) by rank ``r`` within their switch: per rank, the
    switches with an ``r``-th cable (None: all), that cable's lower end and its weight (a
    column). Adding rank by rank sums each switch's cables in their order, as a sequential
    sum over them does."""
    if count.min() < 1:  # pragma: no cover - _clos3 takes the switches from their cables
        raise AssertionError("a switch without a cable below")
    first = np.cumsum(count) - count
    out: list[tuple[np.ndarray | None, np.ndarray, np.ndarray]] = []
    for r in range(int(count.max())):
        has = np.nonzero(count > r)[0]
        at = first[has] + r
        out.append((None if len(has) == len(count) else has, rows[at], w[at][:, None]))
    return out


def _slot_sum(
    slots: list[tuple[np.ndarray | None, np.ndarray, np.ndarray]], M: np.ndarray
) -> np.ndarray:
    """``out[k] = sum of w[e] * M[rows[e]]`` over switch ``k``'s cables ``e``
    (:func:`_cable_slots`), added in cable order: the sums :func:`numpy.add.at` and a
    sequential :func:`numpy.add.reduceat` over the cables sorted by switch give, bit for bit."""
    out: np.ndarray = M[slots[0][1]] * slots[0][2]
    for has, rows, wr in slots[1:]:
        if has is None:
            out += M[rows] * wr
        else:
            out[has] += M[rows] * wr
    return out


def _core_shares(
    k_a: np.ndarray,
    c_a: np.ndarray,
    v: np.ndarray,
    u: np.ndarray,
    local: np.ndarray,
    n_cores: int,
    n_local: int,
    n_aggs: int,
) -> np.ndarray:
    """``R[k, k']``: the sum over aggregation switch ``k``'s core cables ``e`` (in order) of
    ``v[e] u[e']``, for each cable ``e'`` from the same core down to the destination pod's
    switch ``k'`` (``local[k']`` its column, -1 outside the pod). Only the pairs of cables
    meeting at a core are formed (a core has few cables into one pod), and each sum adds its
    terms in cable order, as the dense sum over every core does."""
    into = np.nonzero(local[k_a] >= 0)[0]
    into = into[np.argsort(c_a[into], kind="stable")]  # the cables into the pod, by core
    count = np.bincount(c_a[into], minlength=n_cores)
    first = np.cumsum(count) - count
    reps = count[c_a]
    e = np.repeat(np.arange(len(k_a)), reps)  # each cable once per cable of its core
    offset = np.arange(len(e)) - np.repeat(np.cumsum(reps) - reps, reps)
    down = into[first[c_a[e]] + offset]
    cell = k_a[e] * n_local + local[k_a[down]]
    R = np.bincount(cell, weights=v[e] * u[down], minlength=n_aggs * n_local)
    return R.reshape(-1, n_local)


def host_loads(r: SplitRouting, ci: int, rate: float) -> list[Load]:
    """What one server of class ``ci`` sends to and receives from each switch at ``rate``."""
    util = r.host_util[ci]
    return [
        (s, rate * c * util[r.plane_of[s], 0], rate * c * util[r.plane_of[s], 1])
        for s, c in r.classes[ci][0].attach.items()
    ]


def insides_carry(G: nx.Graph, r: SplitRouting, rate: float) -> tuple[bool, float]:
    """Can every server's NVLink and PCIe carry its share of the routing at ``rate`` (B/s)?
    One :func:`topo.flow.server_check.inside_theta` per distinct server load."""
    done: dict[tuple[InnerSignature, tuple[tuple[float, float], ...]], float] = {}
    worst = math.inf
    for ci, cls in enumerate(r.classes):
        loads = host_loads(r, ci, rate)
        # Loads equal to 1e-9 of the rate are one server's load (fitting leaves 1e-13).
        key = (
            cls[0].inner_sig,
            tuple(sorted((round(u / rate, 3), round(d / rate, 3)) for _, u, d in loads)),
        )
        if key not in done:
            done[key] = inside_theta(G, cls[0], loads, rate)
        worst = min(worst, done[key])
    return worst >= 1 - FEASIBILITY_TOL, worst


def _links(
    G: nx.Graph, r: SplitRouting, rate: float, saturated_only: bool
) -> list[tuple[Any, Any, float, float]]:
    """(tail, head, capacity, load) of the cables and switch links (B/s) at ``rate``: all of
    them, or those within :data:`SATURATED` of their capacity."""
    out: list[tuple[Hashable, Hashable, float, float]] = []
    edge = G._adj
    # (none of the switch links can be saturated when the most loaded is clearly below)
    if not saturated_only or r.switch_util * rate >= (1 - SATURATED) * (1 - 1e-12):
        for (u, v), x in r.switch_load.items():
            c = float(edge[u][v]["capacity"])
            if not saturated_only or rate * x >= c * (1 - SATURATED):
                out.append((u, v, c, rate * x))
    for ci, cls in enumerate(r.classes):
        for h in cls:
            for s, nics in h.nics.items():
                up, down = (r.host_util[ci, r.plane_of[s]] * rate).tolist()  # (as floats)
                if saturated_only and max(up, down) < 1 - SATURATED:
                    continue
                for nic in nics:
                    c = float(edge[nic][s]["capacity"])
                    out.append((nic, s, c, up * c))
                    out.append((s, nic, c, down * c))
    return [t for t in out if not saturated_only or t[3] >= t[2] * (1 - SATURATED)]


def certified_alltoall(
    G: nx.Graph,
    hs: list[Host],
    terminal: str,
    t0: float,
    reductions: list[str],
    want_loads: bool = False,
) -> BandwidthResult | None:
    """The exact all-to-all when the split routing reaches the tightest cut; else None.

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    hs : list of Host
        Its hosts.
    terminal : {"gpu", "endpoint"}
        What the terminals are.
    t0 : float
        ``time.perf_counter()`` at the start of the call.
    reductions : list of str
        What was reduced so far (copied, with this method's note, into the result).
    want_loads : bool
        Also return every NIC cable's and switch link direction's load (B/s).

    Returns
    -------
    BandwidthResult or None
        ``method == "certified"``, ``exact`` True, no LP; the bottleneck links are the ones the
        routing saturates. None when the routing does not exist or stays below the cut by more
        than :data:`CERTIFY_TOL`, or NVLink or PCIe cannot carry it.
    """
    r = split_routing(G, hs)
    if r is None:
        return None
    ub, cut = cut_bound(G, hs, terminal)
    if r.rate_Bps < ub * (1 - CERTIFY_TOL):
        return None
    ok, _ = insides_carry(G, r, r.rate_Bps) if terminal == "gpu" else (True, 1.0)
    if not ok:
        return None
    lam = r.rate_Bps
    note = (
        f"exact by a routing that meets a cut: each class pair split over its planes by "
        f"proportional fitting, two hops inside a plane, reaches the cut around {cut} "
        f"(gap {max(0.0, 1 - lam / ub):.1e})"
    )
    if terminal == "gpu":
        note += "; NVLink and PCIe carry it (checked)"
    binding: list[BottleneckLink] = links(G, _links(G, r, lam, saturated_only=True))
    report = build_report(
        G,
        hs,
        terminal,
        lam,
        binding,
        n=terminal_count(hs),
        method="certified",
        exact=True,
        reductions=[*reductions, note],
        sol=NO_LP,
        t0=t0,
    )
    if not want_loads:
        return report
    loads = {
        (u, v): 0.0
        for a, b in G.edges()
        if a in r.plane_of and b in r.plane_of
        for u, v in ((a, b), (b, a))
    }  # every switch link direction, idle ones too, as the LP's loads
    loads.update({(u, v): x for u, v, _, x in _links(G, r, lam, saturated_only=False)})
    return replace(report, link_load=loads, solve_seconds=time.perf_counter() - t0)
