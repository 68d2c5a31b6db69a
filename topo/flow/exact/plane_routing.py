"""Inside one plane of the certified routing (:mod:`topo.flow.exact.certify`): the leaf-to-leaf
traffic routed over a two-tier or three-tier Clos, on the switch arcs' index arrays
(:class:`topo.flow.exact.switch_arcs.SwitchArcs`).

- **Two tiers** (:func:`route_two_tier`): the traffic of leaves ``a`` and ``b`` is split over
  the switches above both in proportion to the smaller of the two cables' capacity (two hops).
- **Three tiers** (:func:`route_three_tier`): inside a pod the same over its aggregation
  switches; between pods up from the leaf over its cables in proportion to capacity, up from
  the aggregation switch over its cores likewise, down from the core to the destination pod's
  aggregation switches likewise, then to the leaf.

Both add what each switch link direction carries (per unit pair rate) to a :class:`Loads`.
The method and its proof are in ``docs/bandwidth.md`` ("Exact by a routing that meets a cut").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from topo.flow.exact.switch_arcs import SwitchArcs

MAX_CELLS = 30_000_000
"""Largest array (leaf pairs x spines, pods x pod size x leaves) the routing builds (floats)."""


@dataclass
class Loads:
    """Loads on switch link directions, gathered as (tail, head, load) arrays of switch
    positions and added up at the end (:meth:`per_arc`)."""

    arcs: SwitchArcs
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)

    def add(self, tail: np.ndarray, head: np.ndarray, load: np.ndarray) -> None:
        """Add ``load[e]`` to the direction ``tail[e] -> head[e]`` (switch positions)."""
        self.parts.append((tail, head, load))

    def per_arc(self) -> np.ndarray:
        """The load of every arc of :attr:`arcs` (in its order)."""
        if not self.parts:
            return np.zeros(len(self.arcs.tail))
        tail, head, load = (np.concatenate(x) for x in zip(*self.parts, strict=True))
        at = self.arcs.arc_of(tail, head)
        return np.bincount(at, weights=load, minlength=len(self.arcs.tail))


def route_two_tier(arcs: SwitchArcs, leaves: np.ndarray, traffic: np.ndarray, out: Loads) -> bool:
    """Route the leaf-to-leaf ``traffic`` over the switches above the leaves common to both,
    in proportion to the smaller cable.

    Parameters
    ----------
    arcs : SwitchArcs
        The fabric's switch links.
    leaves : numpy.ndarray of int, shape (n,)
        The leaves (switch positions); every switch they link to is above them.
    traffic : numpy.ndarray, shape (n, n)
        Leaf-to-leaf traffic per unit pair rate (the diagonal stays at its leaf).
    out : Loads
        Where the loads go.

    Returns
    -------
    bool
        False if two leaves with traffic share no switch above (or the arrays would exceed
        :data:`MAX_CELLS`).
    """
    T = traffic.copy()
    np.fill_diagonal(T, 0.0)
    if not T.any():
        return True
    up_arcs = arcs.leaving(leaves)
    spines = np.unique(arcs.head[up_arcs])
    if not len(spines) or len(leaves) ** 2 * len(spines) > MAX_CELLS:
        return False
    at = np.full(len(arcs.names), -1)
    at[leaves] = np.arange(len(leaves))
    C = np.zeros((len(leaves), len(spines)))
    C[at[arcs.tail[up_arcs]], np.searchsorted(spines, arcs.head[up_arcs])] = arcs.cap[up_arcs]
    v = np.minimum(C[:, None, :], C[None, :, :])
    norm = v.sum(axis=2)
    if np.any((T > 0) & (norm <= 0)):
        return False
    w = T / np.where(norm > 0, norm, 1.0)
    up = np.einsum("ab,abk->ak", w, v)
    down = np.einsum("ab,abk->kb", w, v)
    rows, cols = np.nonzero(up)
    out.add(leaves[rows], spines[cols], up[rows, cols])
    rows, cols = np.nonzero(down)
    out.add(spines[rows], leaves[cols], down[rows, cols])
    return True


@dataclass(frozen=True)
class Clos3:
    """A three-tier plane: its leaves, aggregation switches and cores (switch positions),
    their pods, and the cables between tiers as index arrays into those lists.

    Attributes
    ----------
    leaves, aggs, cores : numpy.ndarray of int
        The switches of each tier (positions in :class:`SwitchArcs`).
    pods : list of numpy.ndarray
        Each pod's leaves (indices into ``leaves``), pods in the natural order of their first
        switch.
    pod_leaf, pod_agg : numpy.ndarray of int
        The pod of each leaf and aggregation switch.
    la, ac : tuple of numpy.ndarray
        The leaf-to-aggregation and aggregation-to-core cables: (lower end index, upper end
        index, capacity in B/s).
    """

    leaves: np.ndarray
    aggs: np.ndarray
    cores: np.ndarray
    pods: list[np.ndarray]
    pod_leaf: np.ndarray
    pod_agg: np.ndarray
    la: tuple[np.ndarray, np.ndarray, np.ndarray]
    ac: tuple[np.ndarray, np.ndarray, np.ndarray]

    @staticmethod
    def of(arcs: SwitchArcs, leaves: np.ndarray) -> Clos3 | None:
        """The three-tier plane above ``leaves``, if every pod's leaves and aggregation
        switches are fully cabled, every aggregation switch has a core and every core reaches
        every pod; else None."""
        is_leaf = np.zeros(len(arcs.names), dtype=bool)
        is_leaf[leaves] = True
        e_la = arcs.leaving(leaves)
        aggs = np.unique(arcs.head[e_la])
        e_ac = arcs.leaving(aggs)
        e_ac = e_ac[~is_leaf[arcs.head[e_ac]]]
        cores = np.unique(arcs.head[e_ac])
        if not len(e_la) or not len(e_ac):
            return None
        lower = is_leaf.copy()
        lower[aggs] = True
        pod = arcs.components(lower)  # the blocks below the cores
        pod_leaf, pod_agg = pod[leaves], pod[aggs]
        n_pods = int(pod_leaf.max()) + 1
        leaf_at = np.full(len(arcs.names), -1)
        leaf_at[leaves] = np.arange(len(leaves))
        la = (
            leaf_at[arcs.tail[e_la]],
            np.searchsorted(aggs, arcs.head[e_la]),
            arcs.cap[e_la],
        )
        ac = (np.searchsorted(aggs, arcs.tail[e_ac]), np.searchsorted(cores, arcs.head[e_ac]))
        per_pod = np.bincount(pod_leaf[la[0]], minlength=n_pods)
        want = np.bincount(pod_leaf, minlength=n_pods) * np.bincount(pod_agg, minlength=n_pods)
        reach = np.zeros((len(cores), n_pods), dtype=bool)
        reach[ac[1], pod_agg[ac[0]]] = True
        if np.any(per_pod != want) or not reach.all() or len(np.unique(ac[0])) != len(aggs):
            return None  # (the last: an aggregation switch without a core)
        return Clos3(
            leaves=leaves,
            aggs=aggs,
            cores=cores,
            pods=[np.flatnonzero(pod_leaf == q) for q in range(n_pods)],
            pod_leaf=pod_leaf,
            pod_agg=pod_agg,
            la=la,
            ac=(*ac, arcs.cap[e_ac]),
        )


def route_three_tier(arcs: SwitchArcs, leaves: np.ndarray, traffic: np.ndarray, out: Loads) -> bool:
    """Route one three-tier plane's leaf-to-leaf ``traffic`` (module notes).

    Parameters
    ----------
    arcs : SwitchArcs
        The fabric's switch links.
    leaves : numpy.ndarray of int, shape (n,)
        The plane's leaves (switch positions), the lowest of its three tiers.
    traffic : numpy.ndarray, shape (n, n)
        Leaf-to-leaf traffic per unit pair rate; each pod's own block is zeroed in place.
    out : Loads
        Where the loads go.

    Returns
    -------
    bool
        False if the plane is not fully cabled as the routing needs (:meth:`Clos3.of`), or
        the arrays would exceed :data:`MAX_CELLS`.

    Notes
    -----
    A pod's leaves and aggregation switches are fully cabled, so the sums over an
    aggregation switch's leaf cables are one small matrix product per pod
    (:class:`PodBlocks`).
    """
    net = Clos3.of(arcs, leaves)
    if net is None:
        return False
    for pod in net.pods:
        if not route_two_tier(arcs, leaves[pod], traffic[np.ix_(pod, pod)], out):
            return False
    a_l, k_l, c_l = net.la
    k_a, c_a, cap_a = net.ac
    w = c_l / np.bincount(a_l, weights=c_l)[a_l]
    pb = PodBlocks.of(net, w)
    if pb.cells(len(leaves)) > MAX_CELLS:
        return False
    T = traffic  # (in place: the pods' own traffic went the two-hop way)
    for pod in net.pods:
        T[np.ix_(pod, pod)] = 0.0
    TWt = pb.up_t(T)  # what each leaf receives through each aggregation switch, from its pod
    X = np.stack([T[:, pod].sum(axis=1) for pod in net.pods], axis=1)  # leaf -> other pods
    Y = np.stack([TWt[pod].sum(axis=0) for pod in net.pods], axis=1)  # aggregation -> pods
    v = cap_a / np.bincount(k_a, weights=cap_a, minlength=len(net.aggs))[k_a]
    key = c_a * len(net.pods) + net.pod_agg[k_a]
    u = cap_a / np.bincount(key, weights=cap_a)[key]
    Z = _core_sums(k_a, c_a, v, Y, len(net.cores))  # what each core sends down to each pod
    out.add(leaves[a_l], net.aggs[k_l], w * X.sum(axis=1)[a_l])
    out.add(net.aggs[k_a], net.cores[c_a], v * Y.sum(axis=1)[k_a])
    out.add(net.cores[c_a], net.aggs[k_a], u * Z[c_a, net.pod_agg[k_a]])
    _down_to_leaves(net, TWt, v, u, out)
    return True


@dataclass(frozen=True)
class PodBlocks:
    """The leaf-to-aggregation cable weights of a three-tier plane as one dense block per pod:
    ``Wt[p, j, i]`` is the weight of the cable from pod ``p``'s ``i``-th leaf to its ``j``-th
    aggregation switch (zero beyond a smaller pod's size); ``leaf_at`` and ``agg_at`` give
    each leaf's and aggregation switch's flat position (``p * size + i``)."""

    Wt: np.ndarray
    leaf_at: np.ndarray
    agg_at: np.ndarray

    @staticmethod
    def of(net: Clos3, w: np.ndarray) -> PodBlocks:
        """The blocks of ``net``'s leaf cables, of weight ``w`` each (in ``net.la`` order)."""
        a_l, k_l = net.la[0], net.la[1]
        n_pods = len(net.pods)
        lpos, size_l = _positions(net.pod_leaf, n_pods)
        apos, size_a = _positions(net.pod_agg, n_pods)
        Wt = np.zeros((n_pods, size_a, size_l))
        Wt[net.pod_leaf[a_l], apos[k_l], lpos[a_l]] = w
        return PodBlocks(Wt, net.pod_leaf * size_l + lpos, net.pod_agg * size_a + apos)

    def cells(self, columns: int) -> int:
        """Floats in the largest array :meth:`up_t` builds for ``columns`` columns."""
        return int(self.Wt.shape[0] * max(self.Wt.shape[1:]) * columns)

    def up_t(self, M: np.ndarray) -> np.ndarray:
        """``out[b, k] = sum of w[a, k] * M[a, b]`` over the leaves ``a`` cabled to
        aggregation switch ``k``: one (aggregation switches x leaves) x (leaves x columns)
        product per pod. ``M`` has a row per leaf; ``out`` a row per column of ``M`` and a
        column per aggregation switch."""
        n_pods, size_a, size_l = self.Wt.shape
        if len(self.leaf_at) == n_pods * size_l and _is_identity(self.leaf_at):
            Mb = M  # (the leaves are already pod by pod, in full pods)
        else:
            Mb = np.zeros((n_pods * size_l, M.shape[1]))
            Mb[self.leaf_at] = M
        # (einsum, not matmul: a threaded BLAS spends more on its threads than on products
        # this small, and far more when other processes share the cores)
        out = np.einsum("pal,plb->bpa", self.Wt, Mb.reshape(n_pods, size_l, -1))
        out = out.reshape(M.shape[1], n_pods * size_a)
        if len(self.agg_at) == n_pods * size_a and _is_identity(self.agg_at):
            return np.asarray(out)
        return np.asarray(out[:, self.agg_at])


def _is_identity(at: np.ndarray) -> bool:
    """Is ``at`` the sequence 0, 1, ..., len - 1?"""
    return bool(np.array_equal(at, np.arange(len(at))))


def _positions(pod: np.ndarray, n_pods: int) -> tuple[np.ndarray, int]:
    """Each item's position within its pod (in index order) and the largest pod's size."""
    order = np.argsort(pod, kind="stable")
    count = np.bincount(pod, minlength=n_pods)
    first = np.cumsum(count) - count
    pos = np.empty(len(pod), dtype=int)
    pos[order] = np.arange(len(pod)) - first[pod[order]]
    return pos, int(count.max())


def _core_sums(
    k_a: np.ndarray, c_a: np.ndarray, v: np.ndarray, Y: np.ndarray, n_cores: int
) -> np.ndarray:
    """``Z[c] = sum of v[e] * Y[k_a[e]]`` over core ``c``'s cables ``e``: what each core
    receives for each pod."""
    order = np.argsort(c_a, kind="stable")  # (every core has a cable: cores come from them)
    A = Y[k_a[order]]
    A *= v[order, None]
    start = np.cumsum(np.bincount(c_a, minlength=n_cores)) - np.bincount(c_a, minlength=n_cores)
    return np.asarray(np.add.reduceat(A, start, axis=0))


def _down_to_leaves(net: Clos3, TWt: np.ndarray, v: np.ndarray, u: np.ndarray, out: Loads) -> None:
    """The last hop between pods: aggregation switch to leaf. For each destination pod,
    ``R[k, k']`` is the fraction of what aggregation switch ``k`` sends up to that pod that
    arrives at its aggregation switch ``k'`` (over every core), and ``TWt[b, k]`` what leaf
    ``b`` of the pod receives through ``k`` from the leaves of ``k``'s pod (the pod's own
    traffic is not in it: it went the two-hop way); the hop ``k' -> b`` carries
    ``(TWt R)[b, k']``. ``R`` is sparse where the cores are grouped (each aggregation switch
    reaches one switch of a pod in a full FT3: 2,048 of its 65,536 cells): the product is
    then taken over its nonzero cells only (:func:`_times_sparse`)."""
    k_a, c_a = net.ac[0], net.ac[1]
    for q, pod in enumerate(net.pods):
        aggs_q = np.flatnonzero(net.pod_agg == q)
        local = np.full(len(net.aggs), -1)
        local[aggs_q] = np.arange(len(aggs_q))
        R = _core_shares(k_a, c_a, v, u, local, len(net.cores), len(aggs_q), len(net.aggs))
        down = _times_sparse(TWt, pod, R)  # destination leaf x its pod's switch
        b, k = np.nonzero(down)
        out.add(net.aggs[aggs_q[k]], net.leaves[pod[b]], down[b, k])


def _times_sparse(TWt: np.ndarray, rows: np.ndarray, R: np.ndarray) -> np.ndarray:
    """``TWt[rows] @ R``, shape ``(len(rows), R.shape[1])``: over ``R``'s nonzero cells when
    they are at most a quarter of it (each column's terms summed by ``numpy.add.reduceat``),
    else the dense product. The two sum in different orders: the last bits may differ."""
    k, col = np.nonzero(R)
    if 4 * len(k) > R.size:
        return np.asarray(np.einsum("bk,kq->bq", TWt[rows], R))
    order = np.argsort(col, kind="stable")  # by column, each column's rows increasing
    k, col = k[order], col[order]
    terms = TWt[np.ix_(rows, k)]
    terms *= R[k, col]
    out = np.zeros((len(rows), R.shape[1]))
    if len(k):
        cols, start = np.unique(col, return_index=True)
        out[:, cols] = np.add.reduceat(terms, start, axis=1)
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
    """``R[k, k']``: the sum over aggregation switch ``k``'s core cables ``e`` of
    ``v[e] u[e']``, for each cable ``e'`` from the same core down to the destination pod's
    switch ``k'`` (``local[k']`` its column, -1 outside the pod). Only the pairs of cables
    meeting at a core are formed (a core has few cables into one pod)."""
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


__all__ = ["MAX_CELLS", "Clos3", "Loads", "PodBlocks", "route_three_tier", "route_two_tier"]
