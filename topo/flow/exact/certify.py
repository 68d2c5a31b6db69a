"""Exact all-to-all without the LP: a routing that reaches a cut bound.

Weak duality gives an exact answer whenever a feasible concurrent flow reaches an upper bound:
no flow exceeds a cut's bound, so a routing at that rate is optimal. Damaged two-tier fabrics
(MPFT, MRFT, FT2 with random dead cables) are usually bound by a cut (the NIC cables of the
server that lost the most), break most of the symmetry the reduced LP rests on
(:mod:`topo.flow.reduce.symmetry`), and are routed at the cut's rate by a simple split:

- **Across planes, coupled at the servers.** The traffic of each pair of server classes is
  split over the planes (switch components) both reach, in proportions found by iterative
  proportional fitting (Deming and Stephan, Ann. Math. Stat. 11(4), 1940) so that every
  class sends into and receives from each plane in proportion to its capacity there: each of
  a server's NIC cables then carries the same fraction of its capacity. When every class has
  the same fractions of its capacity in the planes (an intact multi-plane fabric), each
  pair's demand is split in those fractions, which meets the targets exactly without fitting
  or a classes x classes x planes array (:class:`PlaneSplit`).
- **Inside a plane, by leaves.** A class's share of a plane splits over its cables there in
  proportion to their capacity; the leaf-to-leaf traffic that results is split over the
  spines common to both leaves in proportion to the smaller of the two cables' capacity
  (two hops, leaf, spine, leaf).

The routing's rate is the least capacity over load; it is certified exact when it is within
:data:`CERTIFY_TOL` of the tightest cut of :func:`cut_bound` (the LP itself is solved to
HiGHS' primal feasibility tolerance, 1e-7), and the servers' insides carry it
(:func:`topo.flow.reduce.server_check.inside_theta`). Otherwise nothing is claimed and the LP
decides. The method and its proof are in ``docs/bandwidth.md`` ("Exact by a routing that
meets a cut").
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import networkx as nx
import numpy as np

from topo.fabric import natural_key
from topo.flow.exact.cuts import MET_TOL, cut_bound
from topo.flow.exact.plane_routing import MAX_CELLS, Loads, route_three_tier, route_two_tier
from topo.flow.exact.report import build_report
from topo.flow.exact.switch_arcs import SwitchArcs
from topo.flow.reduce.network import Scope, twin_classes
from topo.flow.reduce.server_check import FEASIBILITY_TOL, Load, inside_theta
from topo.flow.reduce.servers import ContractedServer, InnerSignature, SolveContext, terminal_count
from topo.flow.result import BandwidthResult, links
from topo.flow.solve.lp import NO_LP

CERTIFY_TOL = MET_TOL
"""Relative gap between the routing's rate and the cut bound below which the rate is exact
(HiGHS' default primal feasibility tolerance, the precision of the LP's own optimum)."""

IPF_ROUNDS = 400
"""Most rounds of proportional fitting of the plane split."""

SATURATED = 1e-9
"""A link whose load is within this fraction of its capacity at the rate is saturated."""


@dataclass(frozen=True)
class SplitRouting:
    """The plane-split, two-hop routing of the uniform all-to-all, per unit pair rate.

    Attributes
    ----------
    rate_Bps : float
        The largest pair rate it carries (B/s): the least capacity over load.
    classes : list of list of ContractedServer
        The twin classes (same GPUs, inside and attachments).
    host_util : numpy.ndarray, shape (classes, planes, 2)
        Load over capacity per unit pair rate (s/B x B/s: 1/(B/s)) of every cable of a class's
        servers in each plane, up (0) and down (1); every cable of a class in one plane carries
        the same fraction of its capacity.
    plane_of : dict of str to int
        Switch -> its plane (switch component).
    arcs : SwitchArcs
        The fabric's switch link directions.
    arc_load : numpy.ndarray, shape (arcs,)
        Load per unit pair rate of each of them (in ``arcs`` order).
    switch_util : float
        The largest load over capacity among them, per unit pair rate (1/(B/s)).
    fitted : bool
        Whether the plane split was fitted (:func:`plane_split`); False when every class has
        the same fraction of its capacity in each plane and the split is that fraction
        (:class:`PlaneSplit`), or there is one plane.
    """

    rate_Bps: float
    classes: list[list[ContractedServer]]
    host_util: np.ndarray
    plane_of: dict[str, int]
    arcs: SwitchArcs
    arc_load: np.ndarray
    switch_util: float = math.inf
    fitted: bool = True

    @property
    def switch_load(self) -> dict[tuple[str, str], float]:
        """Load per unit pair rate of every switch link direction that carries traffic."""
        names, a = self.arcs.names, self.arcs
        return {
            (names[a.tail[e]], names[a.head[e]]): float(self.arc_load[e])
            for e in np.flatnonzero(self.arc_load)
        }


def split_routing(G: nx.Graph, hs: list[ContractedServer]) -> SplitRouting | None:
    """The plane-split, up/down routing (module notes) of the uniform all-to-all, or None.

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    hs : list of ContractedServer
        Its hosts.

    Returns
    -------
    SplitRouting or None
        None when a plane is not a two- or three-tier Clos (:func:`_structure`), a pair of
        servers shares no plane, two leaves with traffic share no path of the routing, or
        the arrays would exceed :data:`MAX_CELLS`.
    """
    arcs = SwitchArcs.of(G)
    found = _structure(arcs, hs)
    if found is None:
        return None
    leaves, plane_of, depth = found
    leaf_plane = np.array([plane_of[s] for s in leaves], dtype=int)
    if len(leaves) and int(np.bincount(leaf_plane).max()) ** 2 > MAX_CELLS:
        return None  # (a plane's leaf-to-leaf table; known before the classes are formed)
    classes = twin_classes(hs, Scope(switches=set(plane_of)))
    planes = len(depth)
    li = {s: i for i, s in enumerate(leaves)}
    # each class's cables: (class, leaf, capacity of the class's servers there, B/s)
    share = [
        (ci, li[s], len(cls) * c)
        for ci, cls in enumerate(classes)
        for s, c in cls[0].attach.items()
    ]
    if not share:
        return None
    cls_of, leaf_of, share_cap = (np.array(col) for col in zip(*share, strict=True))
    cap = np.zeros((len(classes), planes))  # each class's cable capacity per plane (B/s)
    np.add.at(cap, (cls_of, leaf_plane[leaf_of]), share_cap)
    split = PlaneSplit.of(_pair_demand(classes), cap)
    if split is None:
        return None
    host_util = np.zeros((len(classes), planes, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        host_util[:, :, 0] = np.where(cap > 0, split.sent / cap, 0.0)
        host_util[:, :, 1] = np.where(cap > 0, split.received / cap, 0.0)
    loads = Loads(arcs)
    leaf_ids = arcs.ids(leaves)
    local = np.zeros(len(leaves), dtype=int)  # each leaf's position among its plane's
    for p in range(planes):
        in_p = np.flatnonzero(leaf_plane == p)
        local[in_p] = np.arange(len(in_p))
        e = np.flatnonzero(leaf_plane[leaf_of] == p)
        rows, cols = cls_of[e], local[leaf_of[e]]
        traffic = _leaf_traffic(split.plane(p), rows, cols, share_cap[e] / cap[rows, p], len(in_p))
        route = route_two_tier if depth[p] == 2 else route_three_tier
        if not route(arcs, leaf_ids[in_p], traffic, loads):
            return None
    arc_load = loads.per_arc()
    switch_util = float((arc_load / arcs.cap).max()) if len(arc_load) else 0.0
    worst = max(float(host_util.max()), switch_util)
    if worst <= 0:
        return None
    return SplitRouting(
        rate_Bps=1.0 / worst,
        classes=classes,
        host_util=host_util,
        plane_of=plane_of,
        arcs=arcs,
        arc_load=arc_load,
        switch_util=switch_util,
        fitted=split.x is not None and planes > 1,
    )


@dataclass(frozen=True)
class PlaneSplit:
    """How the class-to-class demand is split over the planes (:func:`plane_split`).

    Either ``x`` (shape ``(K, K, P)``, the fitted split) or, when every class has the same
    fraction of its cable capacity in each plane, ``D`` (shape ``(K, K)``) and those
    fractions ``frac`` (shape ``(P,)``): plane ``p`` then carries ``D * frac[p]``, which
    meets both fitted marginals exactly (each class sends and receives ``frac[p]`` of its
    demand in plane ``p``, the target of the fitting), without the ``K x K x P`` array
    (2,048 classes on 16 planes: 537 MB).

    Attributes
    ----------
    sent, received : numpy.ndarray, shape (K, P)
        What each class sends into and receives from each plane (terminal pairs).
    x : numpy.ndarray or None
        The fitted split, or None when ``frac`` applies.
    D : numpy.ndarray or None
        The class-to-class demand when ``frac`` applies.
    frac : numpy.ndarray or None
        Every class's fraction of its cable capacity in each plane.
    """

    sent: np.ndarray
    received: np.ndarray
    x: np.ndarray | None = None
    D: np.ndarray | None = None
    frac: np.ndarray | None = None

    @staticmethod
    def of(D: np.ndarray, cap: np.ndarray) -> PlaneSplit | None:
        """The split of ``D`` (shape ``(K, K)``, terminal pairs) over the planes of ``cap``
        (shape ``(K, P)``, B/s); None as :func:`plane_split`, or when the fitted array
        would exceed :data:`~topo.flow.exact.plane_routing.MAX_CELLS`."""
        total = cap.sum(axis=1, keepdims=True)
        if cap.shape[1] > 1 and len(cap) and np.all(total > 0):
            frac = cap / total
            if np.all(frac == frac[0]):  # (bit for bit: the planes' capacities are alike)
                f = frac[0]
                return PlaneSplit(
                    sent=D.sum(axis=1)[:, None] * f,
                    received=D.sum(axis=0)[:, None] * f,
                    D=D,
                    frac=f,
                )
        if len(cap) ** 2 * cap.shape[1] > MAX_CELLS:
            return None
        x = plane_split(D, cap)
        if x is None:
            return None
        return PlaneSplit(sent=x.sum(axis=1), received=x.sum(axis=0), x=x)

    def plane(self, p: int) -> np.ndarray:
        """The class-to-class demand routed in plane ``p`` (shape ``(K, K)``)."""
        if self.x is not None:
            return self.x[:, :, p]
        assert self.D is not None and self.frac is not None
        return self.D * self.frac[p]


def _pair_demand(classes: list[list[ContractedServer]]) -> np.ndarray:
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
    if cap.shape[1] == 1:  # one plane: every pair's demand goes there, which meets both
        reach = cap[:, 0] > 0  # marginals exactly (a class's only plane holds all of it)
        if np.any((D > 0) & ~(reach[:, None] & reach[None, :])):
            return None
        return D[:, :, None]
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
    if not len(cols):
        return np.zeros((n, n))
    order = np.argsort(cols, kind="stable")  # the shares grouped by leaf
    rows, cols, vals = rows[order], cols[order], vals[order]
    start = np.flatnonzero(np.r_[True, cols[1:] != cols[:-1]])
    if len(start) == len(cols) == n:  # one share per leaf: S's columns are scaled units
        T = xp[np.ix_(rows, rows)]
        T *= vals[:, None]
        T *= vals[None, :]
        return np.asarray(T)
    xs_t = _by_leaf(xp.T[rows], vals, cols, start, n)  # (xp S)^T: what each leaf receives
    return _by_leaf(np.ascontiguousarray(xs_t.T)[rows], vals, cols, start, n)


def _by_leaf(
    A: np.ndarray, vals: np.ndarray, cols: np.ndarray, start: np.ndarray, n: int
) -> np.ndarray:
    """``out[c] = sum of vals[e] * A[e]`` over the shares ``e`` of leaf ``c`` (``cols``
    sorted; runs beginning at ``start``), ``n`` rows; ``A`` is scaled in place."""
    A *= vals[:, None]
    out = np.zeros((n, A.shape[1]))
    out[cols[start]] = A if len(start) == len(A) else np.add.reduceat(A, start, axis=0)
    return out


def _structure(
    arcs: SwitchArcs, hs: list[ContractedServer]
) -> tuple[list[str], dict[str, int], list[int]] | None:
    """The leaves (switches hosts attach to), each switch's plane, and each plane's number of
    tiers, when every plane is a Clos of two or three tiers; else None.

    Two tiers: leaves linked only to other switches (spines), spines only to leaves. Three:
    every link joins adjacent tiers (the ``tier`` attribute), the leaves are the lowest tier,
    the plane has exactly three.
    """
    plane = arcs.components(np.ones(len(arcs.names), dtype=bool))
    names = arcs.names
    plane_of = dict(zip(names, plane.tolist(), strict=True))
    leafset = {s for h in hs for s in h.attach}
    is_leaf = np.zeros(len(names), dtype=bool)
    is_leaf[arcs.ids(sorted(leafset & plane_of.keys()))] = True
    n_planes = int(plane.max()) + 1 if len(plane) else 0
    # per plane: a link between two leaves or two non-leaves (not two-tier), and one whose
    # tiers are not adjacent (not three-tier)
    same = np.bincount(
        plane[arcs.tail], weights=is_leaf[arcs.tail] == is_leaf[arcs.head], minlength=n_planes
    )
    skip = np.bincount(
        plane[arcs.tail],
        weights=np.abs(arcs.tier[arcs.tail] - arcs.tier[arcs.head]) != 1,
        minlength=n_planes,
    )
    depth = []
    for p in range(n_planes):
        if not same[p]:
            depth.append(2)
            continue
        tier, leaf = arcs.tier[plane == p], is_leaf[plane == p]
        low = int(tier.min())
        tiers_ok = set(tier.tolist()) == {low, low + 1, low + 2}
        if skip[p] or not tiers_ok or np.any(leaf != (tier == low)):
            return None
        depth.append(3)
    return sorted(leafset, key=natural_key), plane_of, depth


def host_loads(r: SplitRouting, ci: int, rate: float) -> list[Load]:
    """What one server of class ``ci`` sends to and receives from each switch at ``rate``."""
    util = r.host_util[ci]
    return [
        (s, rate * c * util[r.plane_of[s], 0], rate * c * util[r.plane_of[s], 1])
        for s, c in r.classes[ci][0].attach.items()
    ]


def insides_carry(G: nx.Graph, r: SplitRouting, rate: float) -> tuple[bool, float]:
    """Can every server's NVLink and PCIe carry its share of the routing at ``rate`` (B/s)?
    One :func:`topo.flow.reduce.server_check.inside_theta` per distinct server load."""
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
) -> Iterator[tuple[Any, Any, float, float]]:
    """(tail, head, capacity, load) of the switch links, then the NIC cables (B/s) at
    ``rate``: all of them that carry load, or those within :data:`SATURATED` of their
    capacity, made one at a time (a 65,536-GPU FT3 has 131,072 saturated NIC cable
    directions; :func:`topo.flow.result.links` names them as they come)."""
    yield from _switch_directions(r, rate, saturated_only)
    keep = 1 - SATURATED if saturated_only else -math.inf
    edge = G._adj
    for s, nics, up, down in _host_cables(r, rate, saturated_only):
        for nic in nics:
            c = float(edge[nic][s]["capacity"])
            x = up * c
            if x >= c * keep:
                yield nic, s, c, x
            x = down * c
            if x >= c * keep:
                yield s, nic, c, x


def _switch_directions(
    r: SplitRouting, rate: float, saturated_only: bool
) -> list[tuple[Any, Any, float, float]]:
    """(tail, head, capacity, load) of the switch links (B/s) at ``rate`` with a load: all of
    them, or those within :data:`SATURATED` of their capacity."""
    a, names = r.arcs, r.arcs.names
    load = rate * r.arc_load
    busy = load >= a.cap * (1 - SATURATED) if saturated_only else r.arc_load > 0
    e = np.flatnonzero(busy)
    return [
        (names[u], names[v], c, x)
        for u, v, c, x in zip(
            a.tail[e].tolist(), a.head[e].tolist(), a.cap[e].tolist(), load[e].tolist(), strict=True
        )
    ]


def _host_cables(
    r: SplitRouting, rate: float, saturated_only: bool
) -> Iterator[tuple[Any, list[Any], float, float]]:
    """``(switch, its NICs of one host, up, down)``: each host's cables to a switch and their
    utilization at ``rate`` in each direction (load over capacity); with ``saturated_only``,
    only where one direction is within :data:`SATURATED` of its capacity."""
    util = (r.host_util * rate).tolist()  # (as floats: [class][plane] = [up, down])
    for ci, cls in enumerate(r.classes):
        for h in cls:
            for s, nics in h.nics.items():
                up, down = util[ci][r.plane_of[s]]
                if saturated_only and max(up, down) < 1 - SATURATED:
                    continue
                yield s, nics, up, down


def certified_alltoall(ctx: SolveContext, want_loads: bool = False) -> BandwidthResult | None:
    """The exact all-to-all when the split routing reaches the tightest cut; else None.

    Parameters
    ----------
    ctx : SolveContext
        The solve: the fabric, its contracted servers, the terminal kind, the start time and
        what was reduced so far (copied, with this method's note, into the result).
    want_loads : bool
        Also return every NIC cable's and switch link direction's load (B/s).

    Returns
    -------
    BandwidthResult or None
        ``method == "certified"``, ``exact`` True, no LP; the bottleneck links are the ones the
        routing saturates. None when the routing does not exist or stays below the cut by more
        than :data:`CERTIFY_TOL`, or NVLink or PCIe cannot carry it.
    """
    G, hs, terminal = ctx.G, ctx.servers, ctx.terminal
    r = split_routing(G, hs)
    if r is None:
        return None
    ub, cut = cut_bound(G, hs, terminal, r.arcs)
    if r.rate_Bps < ub * (1 - CERTIFY_TOL):
        return None
    ok, _ = insides_carry(G, r, r.rate_Bps) if terminal == "gpu" else (True, 1.0)
    if not ok:
        return None
    # Weak duality: no flow exceeds the cut bound, so a routing's rate above it (by the
    # rounding of 1 / its worst load, an ulp or so) is rounding; the bound is then the value.
    lam = min(r.rate_Bps, ub)
    planes = r.host_util.shape[1]
    if planes == 1:
        split = "one plane (no split over planes)"
    elif r.fitted:
        split = "each class pair split over its planes by proportional fitting"
    else:
        split = (
            f"each class pair split over the {planes} planes in the proportions of every "
            "class's capacity in them (alike for every class)"
        )
    note = (
        f"exact by a routing that meets a cut: {split}, leaf-to-leaf traffic spread over the "
        f"switches above both leaves, reaches the cut around {cut} "
        f"(gap {max(0.0, 1 - r.rate_Bps / ub):.1e})"
    )
    if terminal == "gpu":
        note += "; NVLink and PCIe carry it (checked)"
    binding = links(G, _links(G, r, lam, saturated_only=True))
    report = build_report(
        ctx.noted(note),
        lam,
        binding,
        n=terminal_count(hs),
        method="certified",
        exact=True,
        sol=NO_LP,
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
    return replace(report, link_load=loads, solve_seconds=time.perf_counter() - ctx.t0)
