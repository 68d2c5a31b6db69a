"""The up/down tables of a fabric's switch tree: ports, reachability and up*/down* distances.

Switches are grouped by ``tier`` (leaf 1, spine 2, core 3...) and numbered within their tier
in natural order of their names. Every cable between adjacent tiers is a *port* twice: once
going up (owned by the lower switch) and once going down (owned by the upper one); parallel
cables are ports of their own. A fabric is up/down routable when its switch cables only join
adjacent tiers and every tier between 1 and the top has switches.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from topo.errors import TopoError
from topo.fabric import natural_key
from topo.flow.routing.arrays import SWITCH, Arcs

INF = np.int32(1 << 20)
"""Hop count of a leaf that a switch cannot reach up*/down*."""


@dataclass
class UpDownTree:
    """The switch tiers as padded port tables (local indices within each tier).

    Attributes
    ----------
    T : int
        The top tier.
    names, ids : dict
        Tier -> switch names, and their node ids (numpy int array), in natural order.
    local : numpy.ndarray
        (nodes,) int: node id -> index within its tier (-1 if not a switch).
    up_parent, up_port, up_valid : dict
        Tier ``t < T`` -> (n_t, P) arrays: the tier-``t + 1`` switch (local index) at the
        other end of each up port, its port id, and whether the slot holds a port.
    dn_child, dn_port, dn_valid : dict
        Tier ``t >= 2`` -> (n_t, Q) arrays, the same for the down ports.
    port_arc : numpy.ndarray
        (ports,) int: the arc id of every port (up ports first).
    port_cap : numpy.ndarray
        (ports,) float: capacity of one cable, B/s.
    below : dict
        Tier -> (n_t, L) bool: leaf below the switch (reachable going down only).
    h : dict
        Tier -> (n_t, L) int32: up*/down* hops to the leaf over minimal routes (``INF``: none).
    upfull : dict
        Tier ``t < T`` -> (n_t, L) bool: every up port of the switch is on a minimal route
        to the leaf.
    div : dict
        Tier -> D-mod-k divisor, the product of the most common up-port counts of the
        tiers below.
    cache : dict
        Tables derived later by the routers (keyed by name and tier).
    """

    T: int
    names: dict[int, list[Any]]
    ids: dict[int, np.ndarray]
    local: np.ndarray
    up_parent: dict[int, np.ndarray]
    up_port: dict[int, np.ndarray]
    up_valid: dict[int, np.ndarray]
    dn_child: dict[int, np.ndarray]
    dn_port: dict[int, np.ndarray]
    dn_valid: dict[int, np.ndarray]
    port_arc: np.ndarray
    port_cap: np.ndarray
    below: dict[int, np.ndarray]
    h: dict[int, np.ndarray]
    upfull: dict[int, np.ndarray]
    div: dict[int, int]
    cache: dict[Any, Any] = field(default_factory=dict)


@dataclass
class PortLoads:
    """What a router puts on the ports of an :class:`UpDownTree`.

    Attributes
    ----------
    port : numpy.ndarray
        (ports,) float: pair-units per unit pair rate on each port, as routed (ECMP: this
        sample of whole flows, each ``1 / flows_per_pair``).
    port_exp : numpy.ndarray
        (ports,) float: the same with the expected routing (ECMP: the even split).
    """

    port: np.ndarray
    port_exp: np.ndarray


@dataclass
class _Tiers:
    T: int
    names: dict[int, list[Any]]
    ids: dict[int, np.ndarray]
    local: np.ndarray
    rank: np.ndarray  # node id -> rank among all switches in natural order
    tier: np.ndarray  # node id -> tier (the fabric's)


@dataclass
class _Ports:
    arc: np.ndarray
    cap: np.ndarray
    owner: np.ndarray
    other: np.ndarray
    cable: np.ndarray
    is_up: np.ndarray


def updown_tree(arcs: Arcs) -> UpDownTree:
    """The up/down tables of a fabric's switches.

    Parameters
    ----------
    arcs : Arcs
        The fabric (:func:`~topo.flow.routing.arrays.fabric_arcs`).

    Returns
    -------
    UpDownTree

    Raises
    ------
    TopoError
        No switches; a tier between 1 and the top with no switch; a cable joining two
        switches of one tier or of non-adjacent tiers (Dragonfly, Slim Fly, rings).
    """
    tiers = _tiers(arcs)
    cables = _switch_cables(arcs)
    _check_ports(arcs)
    ports = _ports(arcs, cables)
    T, n = tiers.T, {t: tiers.ids[t].size for t in tiers.ids}
    up_parent, up_port, up_valid, dn_child, dn_port, dn_valid = {}, {}, {}, {}, {}, {}
    for t in range(1, T + 1):
        if t < T:
            up_parent[t], up_port[t], up_valid[t] = _table(tiers, ports, t, n[t], up=True)
        if t > 1:
            dn_child[t], dn_port[t], dn_valid[t] = _table(tiers, ports, t, n[t], up=False)
    below = _below(T, n, dn_child, dn_valid)
    h, upfull = _distances(T, n, below, up_parent, up_valid)
    return UpDownTree(
        T=T,
        names=tiers.names,
        ids=tiers.ids,
        local=tiers.local,
        up_parent=up_parent,
        up_port=up_port,
        up_valid=up_valid,
        dn_child=dn_child,
        dn_port=dn_port,
        dn_valid=dn_valid,
        port_arc=ports.arc,
        port_cap=ports.cap,
        below=below,
        h=h,
        upfull=upfull,
        div=_divisors(T, up_valid),
    )


def _tiers(arcs: Arcs) -> _Tiers:
    """The switches of every tier in natural order; TopoError if a tier is empty."""
    sw = np.nonzero(arcs.kind == SWITCH)[0]
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
    return _Tiers(T=T, names=names, ids=ids, local=local, rank=rank, tier=tier)


def _switch_cables(arcs: Arcs) -> np.ndarray:
    """The forward arcs of the switch-to-switch edges; TopoError unless tiers are adjacent."""
    tier = arcs.tier
    fwd = np.arange(0, len(arcs.u), 2)  # one arc per edge
    a, b = arcs.u[fwd], arcs.v[fwd]
    both = (arcs.kind[a] == SWITCH) & (arcs.kind[b] == SWITCH)
    gap = np.abs(tier[a] - tier[b])
    bad = np.nonzero(both & (gap != 1))[0]
    if bad.size:
        x, y = arcs.nodes[a[bad[0]]], arcs.nodes[b[bad[0]]]
        if int(tier[arcs.kind == SWITCH].max()) == 1:
            # Every switch carries servers and they are cabled to each other: a direct
            # network (Dragonfly, Slim Fly, a ring), with no tier above to route up to.
            raise TopoError(
                f"not up/down routable: every switch is tier 1 and switches are cabled to "
                f"each other ({x}-{y}): a direct network (Dragonfly, Slim Fly, a ring) has no "
                "upper tier to route up to; ECMP and D-mod-k here route fat trees (folded "
                "Clos) only: use routing optimal",
                names=("routing",),
            )
        what = "two" if gap[bad[0]] == 0 else "non-adjacent"
        raise TopoError(
            f"not up/down routable: the cable {x}-{y} joins {what} tiers ({tier[a[bad[0]]]} and "
            f"{tier[b[bad[0]]]}); ECMP and D-mod-k here route fat trees (folded Clos) only, not "
            "Dragonfly, Slim Fly or rings"
        )
    cables: np.ndarray = fwd[both]
    return cables


MAX_BREAKOUT = 8
"""Most cables one switch port takes (a breakout: an 800G OSFP port split 8 x 100G, the widest
split of IEEE 802.3df's 8-lane ports), as :func:`_check_ports` counts them."""


def _check_ports(arcs: Arcs) -> None:
    """Refuse a switch with more cables (edge ``links``) than its ``ports`` hold: every cable is
    a port of its own here (each ECMP choice, each D-mod-k entry), so such a file would route
    cables no switch has, and with the schema's up to 10^6 links per edge allocate tables of
    that many ports per switch.

    A cable slower than the switch's fastest takes that share of a port (a breakout: HPN's
    ToR takes its hosts' 200G NIC ports two to a 400G port, Qian et al., SIGCOMM 2024), so a
    switch holds cables worth at most ``ports`` of its fastest, and at most
    :data:`MAX_BREAKOUT` cables a port."""
    # (two arcs per edge, one from each end: each end counts the edge's cables once)
    n = len(arcs.nodes)
    cables = np.bincount(arcs.u, weights=arcs.cables, minlength=n)
    rate = arcs.cap / arcs.cables  # B/s of one cable
    fastest = np.zeros(n)
    np.maximum.at(fastest, arcs.u, rate)
    share = np.divide(rate, fastest[arcs.u], out=np.ones_like(rate), where=fastest[arcs.u] > 0)
    worth = np.bincount(arcs.u, weights=arcs.cables * share, minlength=n)
    switch = np.nonzero(arcs.kind == SWITCH)[0]
    ports = arcs.ports[switch]
    over = switch[(worth[switch] > ports + 1e-9) | (cables[switch] > MAX_BREAKOUT * ports)]
    if over.size:
        i = int(over[0])
        worth_i = round(float(worth[i]), 2)
        what = (
            f"{int(cables[i]):,} cables"
            if worth_i == cables[i] or cables[i] > MAX_BREAKOUT * arcs.ports[i]
            else f"{int(cables[i]):,} cables worth {worth_i:,g} ports of its fastest"
        )
        raise TopoError(
            f"switch {arcs.nodes[i]!r} has {what} but {int(arcs.ports[i]):,} ports "
            f"({over.size:,} switch(es) so): as-routed models route every cable as a port "
            "of its own; fix the edges' 'links' or the switches' 'ports'"
        )


def _ports(arcs: Arcs, e: np.ndarray) -> _Ports:
    """Every cable of the switch edges ``e`` as an up port and a down port."""
    tier = arcs.tier
    up_is_fwd = tier[arcs.u[e]] < tier[arcs.v[e]]
    arc_up = np.where(up_is_fwd, e, e + 1)
    arc_dn = np.where(up_is_fwd, e + 1, e)
    m = arcs.cables[e]
    cable = np.arange(m.sum()) - np.repeat(np.cumsum(m) - m, m)
    arc_up, arc_dn = np.repeat(arc_up, m), np.repeat(arc_dn, m)
    port_arc = np.concatenate([arc_up, arc_dn])
    return _Ports(
        arc=port_arc,
        cap=arcs.cap[port_arc] / arcs.cables[port_arc],
        owner=arcs.u[port_arc],
        other=arcs.v[port_arc],
        cable=np.concatenate([cable, cable]),
        is_up=np.arange(len(port_arc)) < len(arc_up),
    )


def _table(
    tiers: _Tiers, ports: _Ports, t: int, n_t: int, *, up: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The up (or down) ports of tier ``t``: (n_t, P) other end, port id, valid slot; slots
    in order of the other end's rank, then cable."""
    local, owner, other = tiers.local, ports.owner, ports.other
    sel = np.nonzero((ports.is_up == up) & (tiers.tier[owner] == t))[0]
    o = sel[np.lexsort((ports.cable[sel], tiers.rank[other[sel]], local[owner[sel]]))]
    row = local[owner[o]]
    cnt = np.bincount(row, minlength=n_t)
    slot = np.arange(o.size) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    P = int(cnt.max()) if cnt.size else 0
    oth = np.zeros((n_t, P), dtype=np.int64)
    pid = np.zeros((n_t, P), dtype=np.int64)
    ok = np.zeros((n_t, P), dtype=bool)
    oth[row, slot] = local[other[o]]
    pid[row, slot] = o
    ok[row, slot] = True
    return oth, pid, ok


def _below(
    T: int, n: dict[int, int], dn_child: dict[int, np.ndarray], dn_valid: dict[int, np.ndarray]
) -> dict[int, np.ndarray]:
    """Tier -> (n_t, L) bool: the leaves reachable going down."""
    L = n[1]
    below = {1: np.eye(L, dtype=bool)}
    for t in range(2, T + 1):
        bl = np.zeros((n[t], L), dtype=bool)
        for q in range(dn_child[t].shape[1]):
            bl |= below[t - 1][dn_child[t][:, q]] & dn_valid[t][:, q, None]
        below[t] = bl
    return below


def _distances(
    T: int,
    n: dict[int, int],
    below: dict[int, np.ndarray],
    up_parent: dict[int, np.ndarray],
    up_valid: dict[int, np.ndarray],
) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """Up*/down* hops from every switch to every leaf, and where every up port is minimal."""
    L = n[1]
    h = {T: np.where(below[T], np.int32(T - 1), INF).astype(np.int32)}
    upfull: dict[int, np.ndarray] = {}
    for t in range(T - 1, 0, -1):
        # switches with the same parents have the same distances through them (in a fat
        # tree, a pod's leaves; the spines of one index in every pod): one row per parent set
        pset = np.where(up_valid[t], up_parent[t], -1)
        pset, group = np.unique(np.sort(pset, axis=1), axis=0, return_inverse=True)
        group = group.ravel()
        best = np.full((len(pset), L), INF, dtype=np.int32)
        worst = np.full((len(pset), L), -1, dtype=np.int32)
        for q in range(pset.shape[1]):
            hq = h[t + 1][pset[:, q]]
            ok = np.broadcast_to((pset[:, q] >= 0)[:, None], hq.shape)
            np.minimum(best, hq, out=best, where=ok)  # (an invalid slot leaves both as they are)
            np.maximum(worst, hq, out=worst, where=ok)
        # (per parent set, then one row per switch: fewer (switches x leaves) temporaries)
        full = (worst == best) & (best < INF)
        np.add(best, 1, out=best, where=best < INF)  # (INF stays INF)
        ht = best[group]
        ht[below[t]] = t - 1
        h[t] = ht
        # every valid up port is on a minimal route to the leaf (the usual case in a fat tree)
        upfull[t] = full[group] & ~below[t]
    return h, upfull


def _divisors(T: int, up_valid: dict[int, np.ndarray]) -> dict[int, int]:
    """D-mod-k: ``w_t`` = the most common up-port count of tier ``t`` (the XGFT parameter);
    the divisor of tier ``t`` is the product of ``w_i`` over ``i < t``."""
    div = {1: 1}
    for t in range(2, T + 1):
        counts = up_valid[t - 1].sum(1)
        counts = counts[counts > 0]
        w = Counter(counts.tolist()).most_common(1)[0][0] if counts.size else 1
        div[t] = div[t - 1] * int(w)
    return div


__all__ = ["INF", "PortLoads", "UpDownTree", "updown_tree"]
