"""ECMP routing: every flow hashes onto one of the eligible ports at every hop.

At every hop each flow picks one of the eligible ports (cables: those on a minimal up*/down*
route to its destination leaf) uniformly at random, independently (a seeded
:class:`numpy.random.Generator`); the expected loads are the exact even split. Whole flows are
counted by (switch, destination leaf) in chunks of destination leaves and split over the
ports by an exact multinomial draw (:mod:`topo.flow.routing.split`, compiled), never flow by
flow.

References
----------
C. Hopps, "Analysis of an Equal-Cost Multi-Path Algorithm", RFC 2992, 2000 (per-flow hashing
over equal-cost next hops).
"""

from __future__ import annotations

import numpy as np

from topo.flow.routing.ends import CHUNK_ELEMENTS, Ends, leaf_matrix_chunks
from topo.flow.routing.updown import PortLoads, UpDownTree


def route_ecmp(
    tree: UpDownTree, e: Ends, F: int, rng: np.random.Generator, *, sample: bool = True
) -> PortLoads:
    """ECMP port loads in pair-units per unit pair rate, sampled and expected.

    Parameters
    ----------
    tree : UpDownTree
    e : Ends
    F : int
        Flows per ordered pair, each carrying ``1 / F``.
    rng : numpy.random.Generator
        The hashing. Chunks of destination leaves have a fixed size, so the draws depend on
        the generator's state only.
    sample : bool
        False: draw nothing; the routed loads are the expected ones.

    Returns
    -------
    PortLoads
        ``port``: this sample's whole flows (over ``F``); ``port_exp``: the even split.
    """
    L = len(tree.names[1])
    n_ports = len(tree.port_arc)
    port = np.zeros(n_ports)
    port_exp = np.zeros(n_ports)
    widest = max(
        [len(tree.names[t]) * tree.up_parent[t].shape[1] for t in tree.up_parent]
        + [len(tree.names[t]) * tree.dn_child[t].shape[1] for t in tree.dn_child]
        + [1]
    )
    J = max(1, CHUNK_ELEMENTS // widest)
    for B0, B1, W in leaf_matrix_chunks(e, L, J):
        Bj = np.arange(B0, B1)
        W[Bj, np.arange(B1 - B0)] = 0.0
        flows = np.rint(W * F) if sample else np.zeros_like(W)
        _propagate(tree, flows, W, Bj, port, port_exp, rng)
    if not sample:
        return PortLoads(port=port_exp.copy(), port_exp=port_exp)
    return PortLoads(port=port / F, port_exp=port_exp)


def _propagate(
    tree: UpDownTree,
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
        parent, pid = tree.up_parent[t], tree.up_port[t]
        elig = None if _every_port(tree, t, Bj, U, Ue) else _up_eligible(tree, t, Bj)
        U, Ue = _hop(elig, parent, pid, len(tree.names[t + 1]), U, Ue, port, port_exp, rng)
    down[T] = (U, Ue)
    for t in range(T, 1, -1):
        M, Me = down.pop(t)
        M, Me = _down(tree, t, Bj, M, Me, port, port_exp, rng)
        if t - 1 in down:
            M, Me = M + down[t - 1][0], Me + down[t - 1][1]
        down[t - 1] = (M, Me)
    arrived = down[1][0]
    if not np.allclose(arrived.sum(0), arrived[Bj, cols]):  # pragma: no cover - a bug
        raise AssertionError("flows arrived at a leaf other than their destination")


def _down(
    tree: UpDownTree,
    t: int,
    Bj: np.ndarray,
    M: np.ndarray,
    Me: np.ndarray,
    port: np.ndarray,
    port_exp: np.ndarray,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """One down hop from tier ``t``: where every (switch, destination leaf) with traffic has
    one single down port toward its leaf (:func:`_one_way_down`; a tree's down paths), the
    flows follow it, as :func:`_hop` moves them where one port is eligible, without the
    (switches x ports x destinations) eligibility table; elsewhere :func:`_hop` over it."""
    one_port, one_child = _one_way_down(tree, t - 1)
    op, oc = one_port[:, Bj], one_child[:, Bj]
    used = (M > 0) | (Me > 0)
    n_next, J = len(tree.names[t - 1]), len(Bj)
    if not used.any():
        return np.zeros((n_next, J)), np.zeros((n_next, J))
    if bool((op[used] >= 0).all()):
        rem = np.rint(M).astype(np.int64)
        return _follow(op, oc, used, rem, Me, n_next, port, port_exp)
    child, pid, valid = tree.dn_child[t], tree.dn_port[t], tree.dn_valid[t]
    elig = valid[:, :, None] & tree.below[t - 1][:, Bj][child]
    return _hop(elig, child, pid, n_next, M, Me, port, port_exp, rng)


def _follow(
    where: np.ndarray,
    to: np.ndarray,
    used: np.ndarray,
    rem: np.ndarray,
    Ue: np.ndarray,
    n_next: int,
    port: np.ndarray,
    port_exp: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Move every (switch, destination) with traffic (``used``) along its one port: the port
    index ``where`` and the next switch ``to`` (both (n_t, J)) take its whole flows ``rem``
    and its pair-units ``Ue``; nothing to draw. Returns the (n_next, J) flows and pair-units
    arriving at the next tier."""
    J = used.shape[1]
    at = where[used]
    nxt_at = (to * J + np.arange(J)[None, :])[used]
    port += np.bincount(at, weights=rem[used], minlength=len(port))
    port_exp += np.bincount(at, weights=Ue[used], minlength=len(port))
    nxt = np.bincount(nxt_at, weights=rem[used], minlength=n_next * J)
    nxt_e = np.bincount(nxt_at, weights=Ue[used], minlength=n_next * J)
    return nxt.reshape(n_next, J), nxt_e.reshape(n_next, J)


def _up_eligible(tree: UpDownTree, t: int, Bj: np.ndarray) -> np.ndarray:
    """(n_t, P, J) bool: the up ports of tier ``t`` one hop closer to each destination leaf."""
    parent, valid = tree.up_parent[t], tree.up_valid[t]
    elig: np.ndarray = valid[:, :, None] & (
        tree.h[t + 1][:, Bj][parent] == (tree.h[t][:, Bj] - 1)[:, None]
    )
    return elig


def _every_port(tree: UpDownTree, t: int, Bj: np.ndarray, U: np.ndarray, Ue: np.ndarray) -> bool:
    """Is every up port of tier ``t`` eligible (:func:`_up_eligible`) wherever there is
    traffic? True when every switch fills all ``P`` slots and every (switch, destination)
    with traffic is ``upfull`` (all its up ports minimal); the eligibility table is then
    not needed. (More than one port: a single one takes :func:`_hop`'s other branch.)"""
    valid = tree.up_valid[t]
    if valid.shape[1] < 2 or not bool(valid.all()):
        return False
    used = (U > 0) | (Ue > 0)
    return bool(tree.upfull[t][:, Bj][used].all())


def _one_way_down(tree: UpDownTree, t: int) -> tuple[np.ndarray, np.ndarray]:
    """For the switches of tier ``t + 1``: the single down port toward each leaf and the
    tier-``t`` switch it reaches, or -1 where there is none or more than one."""
    key = ("one_way", t)
    if key not in tree.cache:
        child, pid, valid = tree.dn_child[t + 1], tree.dn_port[t + 1], tree.dn_valid[t + 1]
        L = len(tree.names[1])
        # switches with the same children port by port reach the same leaves by the same
        # slots (in a fat tree, the cores of one group): one row per such list
        rows, group = np.unique(np.where(valid, child, -1), axis=0, return_inverse=True)
        group = group.ravel()
        cnt = np.zeros((len(rows), L), dtype=np.int64)
        slot = np.zeros((len(rows), L), dtype=np.int64)
        for q in range(rows.shape[1]):
            ok = tree.below[t][rows[:, q]]
            ok &= (rows[:, q] >= 0)[:, None]
            cnt += ok
            np.copyto(slot, q, where=ok)
        # the slot of each (row, leaf), or the extra column (-1) where there is no single one,
        # taken per switch from its row, as a flat position in the tables with that column
        width = rows.shape[1] + 1
        at = np.where(cnt == 1, slot, width - 1).astype(np.intp)[group]
        at += (np.arange(len(child), dtype=np.intp) * width)[:, None]
        tree.cache[key] = (np.take(_with_none(pid), at), np.take(_with_none(child), at))
    found: tuple[np.ndarray, np.ndarray] = tree.cache[key]
    return found


def _with_none(a: np.ndarray) -> np.ndarray:
    """``a`` (2-D) with a column of -1 after its last."""
    return np.concatenate([a, np.full((len(a), 1), -1, dtype=a.dtype)], axis=1)


def _turn_groups(tree: UpDownTree, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
    groups: tuple[np.ndarray, np.ndarray, np.ndarray] = tree.cache[key]
    return groups


def _turn(
    tree: UpDownTree,
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
    # numba: the candidates upfull & (U > 0 | Ue > 0) & gconv[gid] in row-major order, the
    # switch w each turns into, U and Ue without them, and their masses moved to (w, j)
    from topo.flow.routing.split import (
        seed_words,
        split_rows,
        turn_candidates,
        turn_ports,
        turn_sums,
    )

    U = np.ascontiguousarray(U, dtype=np.float64)
    Ue = np.ascontiguousarray(Ue, dtype=np.float64)
    v, j, w, rest, rest_e, moved, moved_e = turn_candidates(
        U,
        Ue,
        np.ascontiguousarray(tree.upfull[t][:, Bj]),
        gid,
        np.ascontiguousarray(gconv[:, Bj]),
        np.ascontiguousarray(gw[:, Bj]),
    )
    if not v.size:
        return U, Ue, None
    uk, inv = np.unique(v * n_t + w, return_inverse=True)
    M, Me, rep = turn_sums(inv.ravel(), U, Ue, v, j, uk.size)  # rep: one candidate of each
    sv = uk // n_t
    m = np.ascontiguousarray(valid[sv])
    X = split_rows(np.rint(M).astype(np.int64), m, seed_words(rng))
    # the single down port of each parent toward the destination leaf, (states, P)
    dn = one_port[parent[sv], Bj[j[rep]][:, None]]
    turn_ports(X, m, Me / m.sum(1), pid[sv], np.ascontiguousarray(dn), port, port_exp)
    return rest, rest_e, (moved.reshape(n_t, J), moved_e.reshape(n_t, J))


def _hop(
    elig: np.ndarray | None,
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
    (switches x ports x destinations; None: every port, wherever there is traffic): a
    multinomial split of the whole flows ``U`` (:func:`topo.flow.routing.split.split_rows`),
    and the even split of ``Ue``."""
    (n_t, J), P = U.shape, other.shape[1]
    if not (U.any() or Ue.any()):
        return np.zeros((n_next, J)), np.zeros((n_next, J))
    rem = np.rint(U).astype(np.int64)
    if elig is None:
        return _hop_full(other, pid, n_next, rem, Ue / P, port, port_exp, rng)
    cnt = elig.sum(1)  # (n_t, J)
    used = (U > 0) | (Ue > 0)
    if (used & (cnt == 0)).any():  # pragma: no cover - excluded by check_routable
        raise AssertionError("a flow has no eligible port")
    if bool((cnt[used] == 1).all()):
        # one eligible port wherever there is traffic (a down hop): nothing to draw
        slot = np.argmax(elig, axis=1)  # (n_t, J)
        rows = np.arange(n_t)[:, None]
        return _follow(pid[rows, slot], other[rows, slot], used, rem, Ue, n_next, port, port_exp)
    share = Ue / np.maximum(cnt, 1)  # expected pair-units on each eligible port
    if bool((cnt[used] == P).all()):  # every port eligible wherever there is traffic
        return _hop_full(other, pid, n_next, rem, share, port, port_exp, rng)
    from topo.flow.routing.split import seed_words, split_rows  # numba: only to sample

    rows = np.ascontiguousarray(elig.transpose(0, 2, 1)).reshape(n_t * J, P)
    X = split_rows(rem.ravel(), rows, seed_words(rng)).reshape(n_t, J, P)
    cols = np.arange(J)
    nxt = np.zeros(n_next * J)
    nxt_e = np.zeros(n_next * J)
    for q in range(P):
        eq = elig[:, q, :]
        take = X[:, :, q]
        sh = np.where(eq, share, 0.0)
        to = ((other[:, q] * J)[:, None] + cols).ravel()
        port += np.bincount(pid[:, q], weights=take.sum(1), minlength=len(port))
        port_exp += np.bincount(pid[:, q], weights=sh.sum(1), minlength=len(port))
        nxt += np.bincount(to, weights=take.ravel(), minlength=n_next * J)
        nxt_e += np.bincount(to, weights=sh.ravel(), minlength=n_next * J)
    return nxt.reshape(n_next, J), nxt_e.reshape(n_next, J)


def _hop_full(
    other: np.ndarray,
    pid: np.ndarray,
    n_next: int,
    rem: np.ndarray,
    share: np.ndarray,
    port: np.ndarray,
    port_exp: np.ndarray,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_hop` where every one of the ``P`` ports is eligible wherever there is traffic:
    the same ``share`` of ``Ue`` on every port, and the draws and sums compiled
    (:func:`topo.flow.routing.split.hop_full`)."""
    from topo.flow.routing.split import hop_full, seed_words  # numba: only to sample

    J = rem.shape[1]
    nxt = np.zeros(n_next * J)
    nxt_e = np.zeros(n_next * J)
    hop_full(
        np.ascontiguousarray(rem),
        np.ascontiguousarray(share, dtype=np.float64),
        np.ascontiguousarray(other, dtype=np.int64),
        np.ascontiguousarray(pid, dtype=np.int64),
        port,
        port_exp,
        nxt,
        nxt_e,
        seed_words(rng),
    )
    return nxt.reshape(n_next, J), nxt_e.reshape(n_next, J)


__all__ = ["route_ecmp"]
