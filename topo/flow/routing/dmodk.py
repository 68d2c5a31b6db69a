"""D-mod-k routing (InfiniBand, OpenSM ``ftree`` style): port loads of the uniform all-to-all.

At an up hop from tier ``t`` a flow to destination ``d`` (its index in the tree,
:attr:`~topo.flow.routing.ends.Ends.d`) takes the ``(d // prod_{i<t} w_i) mod m``-th
eligible port, ``w_i`` the up-port count of tier ``i`` and ``m`` the eligible ports (those on a
minimal up*/down* route); down hops over parallel cables use the same digit. All flows of a
pair share one path. Masses are counted by (switch, destination NIC), never per flow.

References
----------
E. Zahavi, "D-Mod-K Routing Providing Non-Blocking Traffic for Shift Permutations on Real Life
Fat Trees", CCIT Report 776, Technion, 2010. C. Gómez, F. Gilabert, M. E. Gómez, P. López,
J. Duato, "Deterministic versus Adaptive Routing in Fat-Trees", IPDPS/CAC 2007. OpenSM
``doc/current-routing.txt`` (the ``ftree`` engine).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from topo.flow.routing.ends import Ends, leaf_demand, same_server_pairs
from topo.flow.routing.updown import INF, PortLoads, UpDownTree

_Masses = tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]


def route_dmodk(tree: UpDownTree, e: Ends) -> PortLoads:
    """D-mod-k port loads, in pair-units per unit pair rate.

    The leaf hop is done in aggregate: from a leaf with ``P`` up ports every destination ``y``
    leaves by port ``d(y) mod P``, so the demand ``SA[A, c(y)] D[y]`` (sources on leaf ``A``
    times destinations at ``y``) reaches the ports and the spines as products of small
    matrices. Pairs that must not climb (same leaf, same server) are removed by negative
    masses routed on the same paths, and pairs whose leaf has ineligible ports (a damaged or
    irregular tree) are moved to their true port. Above the leaves, (switch, destination)
    masses are merged and routed one hop at a time.

    Parameters
    ----------
    tree : UpDownTree
    e : Ends

    Returns
    -------
    PortLoads
        Routed and expected loads, equal (the routing is deterministic).
    """
    n_ports = len(tree.port_arc)
    port = np.zeros(n_ports)
    if tree.T == 1:
        return PortLoads(port=port, port_exp=port.copy())
    L = len(tree.names[1])
    Y = len(e.nic_ids)
    d, Bl, cls, D = e.d, e.nic_leaf, e.nic_class, e.D
    SA, _ = leaf_demand(e, L)
    pid, par, valid = tree.up_port[1], tree.up_parent[1], tree.up_valid[1]
    nv = valid.sum(1)
    # 1. every leaf sends to every destination, as if all pairs climbed
    ev, ey, em = _all_pairs_climb(tree, e, SA, nv, port)
    # 2. corrections (leaf, destination, mass) on the same aggregate port d(y) mod P
    xs, ys, val = same_server_pairs(e)
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
    return PortLoads(port=port, port_exp=port.copy())


def _all_pairs_climb(
    tree: UpDownTree, e: Ends, SA: np.ndarray, nv: np.ndarray, port: np.ndarray
) -> _Masses:
    """Step 1 of :func:`route_dmodk`: the leaf hop of every (leaf, destination) pair, loaded
    on ``port``; returns the (spine, destination, mass) entries it sends up."""
    d, cls, D = e.d, e.nic_class, e.D
    pid, par = tree.up_port[1], tree.up_parent[1]
    n2 = len(tree.names[2])
    ev: list[np.ndarray] = []
    ey: list[np.ndarray] = []
    em: list[np.ndarray] = []
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
    return ev, ey, em


def _irregular_leaf_pairs(
    tree: UpDownTree, e: Ends, SA: np.ndarray, xs: np.ndarray, ys: np.ndarray, val: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(leaf, destination, mass, true slot) of every climbing pair whose leaf has ports that do
    not lead to the destination's leaf (D-mod-k over the eligible ports only)."""
    L = len(tree.names[1])
    Bl = e.nic_leaf
    need: np.ndarray = ~tree.upfull[1] & ~np.eye(L, dtype=bool)
    has_up = np.asarray(tree.up_valid[1].any(axis=1))
    need &= has_up[:, None] & (tree.h[1] < INF)  # no route: no demand
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
    tree: UpDownTree, e: Ends, v: np.ndarray, y: np.ndarray, m: np.ndarray, port: np.ndarray
) -> None:
    """D-mod-k from tier 2 up: (switch, destination, mass) entries, one hop at a time."""
    T, Y, n_ports = tree.T, len(e.nic_ids), len(port)
    d, Bl = e.d, e.nic_leaf
    down: defaultdict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = defaultdict(list)
    for t in range(2, T + 1):
        B = Bl[y]
        bl = tree.below[t][v, B]
        down[t].append((v[bl], y[bl], m[bl]))
        v, y, m, B = v[~bl], y[~bl], m[~bl], B[~bl]
        if t == T:
            if v.size:  # pragma: no cover - excluded by check_routable
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
    _descend(tree, e, down, port)


def _descend(
    tree: UpDownTree,
    e: Ends,
    down: defaultdict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]],
    port: np.ndarray,
) -> None:
    """D-mod-k down hops: the entries that turned at each tier, from the top down."""
    Y, n_ports = len(e.nic_ids), len(port)
    d, Bl = e.d, e.nic_leaf
    for t in range(tree.T, 1, -1):
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


__all__ = ["route_dmodk"]
