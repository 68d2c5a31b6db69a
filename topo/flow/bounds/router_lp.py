"""The array work of :mod:`topo.flow.bounds.direct`: the Dragonfly group-split LP and the dual
bound.

Both are stated in :mod:`topo.flow.bounds.direct`'s notes; this module builds them with numpy and
scipy (shortest paths) and passes the LP to HiGHS in one call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from topo.flow.reduce.servers import ContractedServer
from topo.flow.solve.lp import quiet_stdout
from topo.interrupts import solving


@dataclass(frozen=True)
class RouterNet:
    """The switches of a fabric, their links and the traffic each router carries.

    Attributes
    ----------
    routers : list of str
        The switches, in natural order.
    tail, head : numpy.ndarray of int, shape (arcs,)
        The switch-to-switch arcs (both directions of every link), as router indices.
    cap : numpy.ndarray, shape (arcs,)
        Their capacities (B/s).
    mass : numpy.ndarray, shape (routers,)
        GPUs (or endpoints) each router sends for under the proportional split.
    host_routers : list of numpy.ndarray of int
        Per host, the routers it is cabled to.
    host_share : list of numpy.ndarray
        Per host, the share of its capacity at each of those routers (sums to 1).
    """

    routers: list[str]
    tail: np.ndarray
    head: np.ndarray
    cap: np.ndarray
    mass: np.ndarray
    host_routers: list[np.ndarray]
    host_share: list[np.ndarray]

    @property
    def n(self) -> int:
        """Number of routers."""
        return len(self.routers)


def split_lp(net: RouterNet, grp: np.ndarray, time_limit_s: float | None = None) -> float | None:
    """The least highest utilisation ``mu`` (load per unit of pair rate over capacity, 1 / B/s)
    of the minimal Dragonfly routing with the best split of each ordered group pair's traffic
    over its global links; the routing carries pair rate ``1 / mu`` (B/s) on the router links.

    Parameters
    ----------
    net : RouterNet
        The routers (:func:`topo.flow.bounds.direct.router_net`).
    grp : numpy.ndarray of int, shape (routers,)
        Each router's group.
    time_limit_s : float, optional
        HiGHS time limit (s); None: none.

    Returns
    -------
    float or None
        ``mu`` recomputed from the LP's split (renormalised per group pair), so the rate is
        checked on every link (a failed local link's load goes over the group's two-hop
        paths, which the LP itself does not see); None when two routers of a group have no
        path of one or two local hops, two groups with traffic share no global link, or HiGHS
        does not solve the LP (within ``time_limit_s``).
    """
    tail, head, cap, e = net.tail, net.head, net.cap, net.mass
    ng = int(grp.max()) + 1
    E = np.bincount(grp, weights=e, minlength=ng)
    glob = np.flatnonzero(grp[tail] != grp[head])
    loc = np.flatnonzero(grp[tail] == grp[head])
    detours = local_detours(net, grp, loc)
    if detours is None:
        return None
    gi, gj = grp[tail[glob]], grp[head[glob]]
    pair = gi * ng + gj
    need = np.flatnonzero((E[:, None] * E[None, :] > 0) & ~np.eye(ng, dtype=bool))
    if not np.isin(need, pair).all():
        return None
    f = _solve_split(net, grp, E, glob, loc, pair, time_limit_s)
    if f is None:
        return None
    sums = np.bincount(pair, weights=f, minlength=ng * ng)
    f = f / sums[pair]
    load = split_loads(net, grp, E, glob, loc, f, detours)
    return float(np.max(load / cap))


Detours = list[tuple[int, int, np.ndarray, np.ndarray]]
"""Per ordered pair of routers of one group without a local link (a failed cable): ``(u, v,
first arcs, second arcs)`` of the two-hop paths ``u -> w -> v`` inside the group."""


def local_detours(net: RouterNet, grp: np.ndarray, loc: np.ndarray) -> Detours | None:
    """The two-hop paths inside the group of every pair of its routers with no local link
    (each direction); None if such a pair has none."""
    key = net.tail[loc] * net.n + net.head[loc]
    arc_of = dict(zip(key.tolist(), loc.tolist(), strict=True))
    out: Detours = []
    for g in np.unique(grp):
        members = np.flatnonzero(grp == g).tolist()
        for u in members:
            for v in members:
                if u == v or u * net.n + v in arc_of:
                    continue
                first, second = [], []
                for w in members:
                    a, b = arc_of.get(u * net.n + w), arc_of.get(w * net.n + v)
                    if a is not None and b is not None:
                        first.append(a)
                        second.append(b)
                if not first:
                    return None
                out.append((u, v, np.array(first), np.array(second)))
    return out


def split_loads(
    net: RouterNet,
    grp: np.ndarray,
    E: np.ndarray,
    glob: np.ndarray,
    loc: np.ndarray,
    f: np.ndarray,
    detours: Detours | None = None,
) -> np.ndarray:
    """Load (B/s per unit pair rate) on every router arc of the minimal routing with split
    ``f`` over the global arcs ``glob``: global ``E_i E_j f``; local ``u -> v`` the source side
    ``e_u sum_{l from v} E_j f_l``, the landing side ``e_v sum_{l into u} E_i f_l`` and the
    group's own ``e_u e_v``. A pair without its local link (``detours``) sends that load evenly
    over its two-hop paths inside the group."""
    tail, head, e = net.tail, net.head, net.mass
    load = np.zeros(len(tail))
    gi, gj = grp[tail[glob]], grp[head[glob]]
    load[glob] = E[gi] * E[gj] * f
    out_w = np.bincount(tail[glob], weights=E[gj] * f, minlength=net.n)
    in_w = np.bincount(head[glob], weights=E[gi] * f, minlength=net.n)
    u, v = tail[loc], head[loc]
    load[loc] = e[u] * out_w[v] + e[v] * in_w[u] + e[u] * e[v]
    for a, b, first, second in detours or []:
        x = (e[a] * out_w[b] + e[b] * in_w[a] + e[a] * e[b]) / len(first)
        np.add.at(load, first, x)
        np.add.at(load, second, x)
    return load


def _solve_split(
    net: RouterNet,
    grp: np.ndarray,
    E: np.ndarray,
    glob: np.ndarray,
    loc: np.ndarray,
    pair: np.ndarray,
    time_limit_s: float | None = None,
) -> np.ndarray | None:
    """Solve ``min mu`` over the split (module notes of :mod:`topo.flow.bounds.direct`); the split
    per global arc, or None if HiGHS does not reach an optimum (within ``time_limit_s``)."""
    import highspy  # (here: loading HiGHS takes 0.1 s, and most commands solve no LP)
    tail, head, e = net.tail, net.head, net.mass
    n_g, n_l = len(glob), len(loc)
    scale = float(E.max() ** 2)
    cmax = float(net.cap.max())
    gi, gj = grp[tail[glob]], grp[head[glob]]
    rows, cols, vals = [np.arange(n_g)], [np.arange(n_g)], [E[gi] * E[gj] / scale]
    # local arc u -> v, source side: every global arc leaving v, weighted e_u E_j
    row_of_arc = np.full(len(tail), -1)
    row_of_arc[loc] = n_g + np.arange(n_l)
    # local arc u -> v into the gateway v of a global arc: weight e_u E_j (source side)
    ell, arcs = _incident(loc, head, tail[glob], net.n)
    rows.append(row_of_arc[arcs])
    cols.append(ell)
    vals.append(e[tail[arcs]] * E[gj][ell] / scale)
    # local arc u -> v out of the landing router u of a global arc: weight e_v E_i
    ell, arcs = _incident(loc, tail, head[glob], net.n)
    rows.append(row_of_arc[arcs])
    cols.append(ell)
    vals.append(e[head[arcs]] * E[gi][ell] / scale)
    n_cap = n_g + n_l
    rows.append(np.arange(n_cap))
    cols.append(np.full(n_cap, n_g))
    vals.append(-np.concatenate((net.cap[glob], net.cap[loc])) / cmax)
    upper = np.concatenate((np.zeros(n_g), -e[tail[loc]] * e[head[loc]] / scale))
    pairs, pair_row = np.unique(pair, return_inverse=True)
    rows.append(n_cap + pair_row)
    cols.append(np.arange(n_g))
    vals.append(np.ones(n_g))
    inf = highspy.kHighsInf
    n_eq = len(pairs)
    cost = np.zeros(n_g + 1)
    cost[n_g] = 1.0
    out = solve_lp(
        (np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)),
        n_g + 1,
        np.concatenate((np.full(n_cap, -inf), np.ones(n_eq))),
        np.concatenate((upper, np.ones(n_eq))),
        cost,
        time_limit_s,
    )
    if out is None:
        return None
    return np.asarray(np.maximum(out[0][:n_g], 0.0))


def _incident(
    loc: np.ndarray, end: np.ndarray, at: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """For each global arc ``l`` and each local arc whose ``end`` (tail or head array) is
    ``at[l]``: the pairs ``(l, local arc)``, as two arrays."""
    by = loc[np.argsort(end[loc], kind="stable")]
    starts = np.searchsorted(end[by], np.arange(n + 1))
    cnt = starts[at + 1] - starts[at]
    ell = np.repeat(np.arange(len(at)), cnt)
    offs = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    return ell, by[np.repeat(starts[at], cnt) + offs]


def solve_lp(
    entries: tuple[np.ndarray, np.ndarray, np.ndarray],
    n_col: int,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    cost: np.ndarray,
    time_limit_s: float | None = None,
) -> tuple[np.ndarray, np.ndarray] | None:
    """``min cost @ x`` over ``x >= 0`` with ``row_lower <= A x <= row_upper``, ``A`` given as
    ``(rows, cols, values)`` entries (repeats summed); the column values and the row duals, or
    None when HiGHS does not reach an optimum (within ``time_limit_s`` seconds, if given)."""
    import highspy
    from scipy.sparse import csc_matrix  # (here: scipy.sparse takes 0.2 s to load)
    rows, cols, vals = entries
    n_row = len(row_lower)
    a = csc_matrix(
        (vals, (rows.astype(np.int32), cols.astype(np.int32))), shape=(n_row, n_col)
    )  # repeats summed, column-wise, 32-bit indices
    del rows, cols, vals
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n_col, n_row
    lp.col_cost_ = np.asarray(cost, dtype=float)
    lp.col_lower_ = np.zeros(n_col)
    lp.col_upper_ = np.full(n_col, highspy.kHighsInf)
    lp.row_lower_ = np.asarray(row_lower, dtype=float)
    lp.row_upper_ = np.asarray(row_upper, dtype=float)
    mat = lp.a_matrix_
    mat.format_ = highspy.MatrixFormat.kColwise
    mat.num_col_, mat.num_row_ = n_col, n_row
    mat.start_ = a.indptr.astype(np.int32)
    mat.index_ = a.indices.astype(np.int32)
    mat.value_ = a.data.astype(float)
    del a
    with quiet_stdout(), solving():
        h = highspy.Highs()  # type: ignore[no-untyped-call]
        h.setOptionValue("output_flag", False)
        if time_limit_s is not None:
            h.setOptionValue("time_limit", float(time_limit_s))
        h.passModel(lp)
        h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    sol = h.getSolution()
    return np.asarray(sol.col_value), np.asarray(sol.row_dual)


def folded_lp(
    net: RouterNet,
    a_orbit: np.ndarray,
    parts: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]],
    weight: list[float],
    time_limit_s: float | None = None,
) -> tuple[float, np.ndarray] | None:
    """Solve the doubly folded router-level LP of :func:`topo.flow.bounds.direct.orbit_rate`.

    Parameters
    ----------
    net : RouterNet
        The routers.
    a_orbit : numpy.ndarray of int, shape (arcs,)
        Orbit of every arc under the whole group (one capacity row each).
    parts : list of (source, sizes, b_label, reps)
        Per commodity: its source router, the size of each of its stabiliser's arc orbits,
        the orbit of every arc, one router per stabiliser orbit of routers.
    weight : list of float
        Routers in each commodity's orbit.
    time_limit_s : float, optional
        HiGHS time limit (s); None: none.

    Returns
    -------
    (float, numpy.ndarray) or None
        The router pair rate (B/s per unit of demand) and the dual length of every arc (its
        capacity row's dual per unit of flow on one arc, any common scale); None if HiGHS
        does not solve it (within ``time_limit_s``).
    """
    import highspy
    terminal = net.mass > 0
    n_term = int(terminal.sum())
    cmax = float(net.cap.max())
    n_orb = int(a_orbit.max()) + 1
    orb_size = np.bincount(a_orbit, minlength=n_orb).astype(float)
    orb_cap = np.zeros(n_orb)
    orb_cap[a_orbit] = net.cap / cmax
    rows, cols, vals = [], [], []
    col0, row0 = 0, n_orb
    for k, (source, sizes, b_label, reps) in enumerate(parts):
        # conservation at each representative router v: out - in - theta b(v) = 0
        idx = np.full(net.n, -1)
        idx[reps] = np.arange(len(reps))
        for end, sign in ((net.tail, 1.0), (net.head, -1.0)):
            at = idx[end]
            keep = at >= 0
            rows.append(row0 + at[keep])
            cols.append(col0 + b_label[keep])
            vals.append(np.full(int(keep.sum()), sign))
        b = np.where(terminal[reps], -1.0, 0.0)
        b[reps == source] = n_term - 1
        rows.append(row0 + np.arange(len(reps)))
        cols.append(np.full(len(reps), -1))
        vals.append(-b)
        # capacity rows, each over its orbit's size: weight_k |B| y_B / (n_term |O|)
        first = np.unique(b_label, return_index=True)[1]
        o = a_orbit[first]
        rows.append(o)
        cols.append(col0 + np.arange(len(sizes)))
        vals.append(weight[k] * sizes / (n_term * orb_size[o]))
        col0 += len(sizes)
        row0 += len(reps)
    theta = col0
    c = np.concatenate(cols)
    c[c < 0] = theta
    cost = np.zeros(theta + 1)
    cost[theta] = -1.0
    n_cons = row0 - n_orb
    out = solve_lp(
        (np.concatenate(rows), c, np.concatenate(vals)),
        theta + 1,
        np.concatenate((np.full(n_orb, -highspy.kHighsInf), np.zeros(n_cons))),
        np.concatenate((orb_cap, np.zeros(n_cons))),
        cost,
        time_limit_s,
    )
    if out is None:
        return None
    x, dual = out
    lengths = (np.abs(dual[:n_orb]) / orb_size)[a_orbit]
    return float(x[theta]) * cmax / n_term, lengths


def router_distances(
    net: RouterNet, lengths: np.ndarray, transit: list[tuple[np.ndarray, float]] | None = None
) -> np.ndarray:
    """Shortest distances between routers (routers x routers) with arc lengths ``lengths``,
    plus, for each ``(routers, length)`` of ``transit``, an arc of that length between every
    two of the routers (a path through a server's NVLink).

    Where several arcs join the same two routers (a link and a server's NVLink, or two
    servers' NVLinks) the shortest counts: scipy's sparse matrices would add their lengths.
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra
    tail, head, w = [net.tail], [net.head], [np.maximum(lengths, 0.0)]
    for rs, x in transit or []:
        a, b = np.meshgrid(rs, rs)
        keep = a != b
        tail.append(a[keep])
        head.append(b[keep])
        w.append(np.full(int(keep.sum()), x))
    t, hd, wt = np.concatenate(tail), np.concatenate(head), np.concatenate(w)
    key = t * net.n + hd
    order = np.lexsort((wt, key))  # by arc, shortest first
    first = order[np.flatnonzero(np.r_[True, np.diff(key[order]) != 0])]
    t, hd, wt = t[first], hd[first], wt[first]
    # scipy reads an explicit 0 as "no arc": shortest paths are unchanged by a tiny floor.
    floor = 1e-12 * max(float(wt.max()), 1.0)
    graph = csr_matrix((np.maximum(wt, floor), (t, hd)), shape=(net.n, net.n))
    return np.asarray(dijkstra(graph, directed=True))


def dual_value(
    hs: list[ContractedServer],
    net: RouterNet,
    lengths: np.ndarray,
    eps: np.ndarray,
    base: np.ndarray,
) -> float:
    """``sum_a c_a l_a / sum_pairs dist_l`` (B/s): the dual upper bound on the pair rate with
    router-arc lengths ``lengths``, length ``eps[h]`` on every cable of server ``h`` and 0 on
    NVLink and PCIe; inf if the distances are all 0.

    Distances run over the routers and through servers cabled to several routers (two cables,
    ``2 eps[h]``); a pair of GPUs in two servers adds both servers' cable lengths; pairs inside
    a server are at distance 0. ``base`` is :func:`router_distances` without servers, used as it
    is when no server is a shorter path.
    """
    n_terms = float(sum(h.weight for h in hs))
    own = 0.0  # sum over servers of eps_h * 2 * w_h (n - w_h): their cables in every pair
    nic = 0.0  # sum over servers of eps_h * (capacity up + down)
    transit = []
    shorter = False
    for i, (h, rs) in enumerate(zip(hs, net.host_routers, strict=True)):
        own += eps[i] * 2 * h.weight * (n_terms - h.weight)
        nic += eps[i] * 2 * sum(h.attach.values())
        if len(set(rs.tolist())) > 1:
            transit.append((rs, 2 * eps[i]))
            sub = base[np.ix_(rs, rs)]
            shorter = shorter or bool((2 * eps[i] < sub[sub > 0]).any())
    dist = router_distances(net, lengths, transit) if shorter else base
    alpha = _pair_distances(hs, net, dist) + own
    total = float(net.cap @ np.maximum(lengths, 0.0)) + nic
    if alpha <= 0 or not math.isfinite(alpha):
        return math.inf
    return total / alpha


def _pair_distances(hs: list[ContractedServer], net: RouterNet, dist: np.ndarray) -> float:
    """``sum over ordered pairs of GPUs in different servers`` of the router distance between
    their servers (the least over the routers each is cabled to)."""
    sets: dict[tuple[int, ...], float] = {}
    for h, rs in zip(hs, net.host_routers, strict=True):
        key = tuple(sorted(set(rs.tolist())))
        sets[key] = sets.get(key, 0.0) + h.weight
    keys = list(sets)
    weight = np.array([sets[k] for k in keys])
    single = np.array([len(k) == 1 for k in keys])
    first = np.array([k[0] for k in keys])
    reach = dist[first].copy()  # set -> router: the least over the set's routers
    for i in np.flatnonzero(~single):
        reach[i] = dist[list(keys[i])].min(axis=0)
    between = reach[:, first].copy()
    for j in np.flatnonzero(~single):
        between[:, j] = reach[:, list(keys[j])].min(axis=1)
    return float(weight @ between @ weight)


__all__ = [
    "RouterNet",
    "Detours",
    "dual_value",
    "folded_lp",
    "local_detours",
    "router_distances",
    "solve_lp",
    "split_loads",
    "split_lp",
]
