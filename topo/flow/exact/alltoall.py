"""The exact all-to-all solves: the reduced LP (contraction, planes, twin classes, symmetry,
then the server check) and the general LP it falls back to, each returning a report.

The reductions and the proofs that they are exact are in :mod:`topo.flow.door` and
``docs/bandwidth.md``; the parts are :mod:`topo.flow.reduce.servers`,
:mod:`topo.flow.reduce.planes`, :mod:`topo.flow.reduce.network`, :mod:`topo.flow.reduce.symmetry`
and :mod:`topo.flow.reduce.server_check`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace

import networkx as nx
import numpy as np

from topo.errors import LPTimeLimit, LPTooLarge, SolverError
from topo.fabric import SWITCH_KINDS
from topo.flow.exact.certify import certified_alltoall
from topo.flow.exact.cuts import with_met_cuts
from topo.flow.exact.general import general_lp
from topo.flow.exact.report import build_report, lp_stats, sort_links
from topo.flow.reduce.network import (
    DUAL_TOL,
    Reduced,
    Scope,
    arc_count,
    bottleneck_links,
    link_loads,
)
from topo.flow.reduce.planes import reduce, twin_classes_checked
from topo.flow.reduce.planes import scope as find_scope
from topo.flow.reduce.server_check import FEASIBILITY_TOL, Load, inside_theta
from topo.flow.reduce.servers import ContractedServer, InnerSignature, SolveContext
from topo.flow.reduce.symmetry import Perm, class_orbits, solve_symmetric, symmetry
from topo.flow.result import BandwidthResult, link
from topo.flow.solve.lp import MCFSolution, max_concurrent_flow
from topo.runtime import gc_paused
from topo.units import Bps_to_GBps
from topo.wording import count

__all__ = [
    "CERTIFY_ABOVE",
    "CERTIFY_FIRST",
    "GivenUp",
    "build_report",
    "exact_alltoall",
    "lp_stats",
    "reduction_notes",
    "server_check",
    "sort_links",
]

CERTIFY_ABOVE = 20_000
"""Reduced LPs estimated above this many flow variables are first tried without an LP: a
routing that meets a cut bound (:mod:`topo.flow.exact.certify`) is exact and takes a second where
the LP takes tens (a damaged 16,384-GPU MPFT, NVL72-shaped servers straddling leaves)."""

CERTIFY_FIRST = 10_000_000
"""Fabrics with more host-switch pairs than this (the 65,536-GPU FT3: 8,192 servers and 5,120
switches) try the routing before building the reduced network at all, whose construction and
symmetry search alone take seconds there."""


@dataclass(frozen=True)
class GivenUp:
    """The exact LP given up under ``method="auto"``: it is over the variable limit or HiGHS
    reached its time limit (certified bounds can stand in, :mod:`topo.flow.bounds`).

    Attributes
    ----------
    error : SolverError
        Why: an :class:`~topo.errors.LPTooLarge` or :class:`~topo.errors.LPTimeLimit`.
    notes : tuple of str
        What was reduced before the LP was given up.
    """

    error: SolverError
    notes: tuple[str, ...] = ()


def exact_alltoall(
    ctx: SolveContext,
    *,
    method: str,
    max_variables: int,
    want_loads: bool,
    time_limit_s: float | None,
    check: Callable[[], None] | None = None,
    scope: Callable[[], Scope] | None = None,
) -> BandwidthResult | GivenUp:
    """The exact all-to-all: the reduced LP (``method="auto"``, more than one server) or the
    general LP.

    Parameters
    ----------
    ctx : SolveContext
        The solve: the fabric, its contracted servers (checked,
        :func:`topo.flow.reduce.servers.check_terminals`), the terminal kind, the start time.
    method : {"auto", "general"}
        As :func:`topo.flow.door.alltoall_bandwidth`.
    max_variables : int
        Refuse LPs with more flow variables than this.
    want_loads : bool
        Also return every link direction's load.
    time_limit_s : float, optional
        HiGHS time limit (s).
    check : callable, optional
        Run before any LP is built (raising what it raises): a check the certified routing
        makes needless, as :func:`topo.flow.reduce.servers.check_connected` (a routing at a
        positive rate joins every pair of terminals).
    scope : callable, optional
        Returns the reduced network's scope (:func:`topo.flow.reduce.planes.scope` of the
        fabric and its servers), where the caller can tell it without comparing the planes.

    Returns
    -------
    BandwidthResult or GivenUp
        The result; or, with ``method="auto"`` and more than one server, :class:`GivenUp`
        when the reduced LP is over ``max_variables`` or HiGHS reached ``time_limit_s``
        (with the notes of what was reduced, so bounds can still say it).

    Raises
    ------
    LPTooLarge, LPTimeLimit
        The general LP is over ``max_variables`` or HiGHS reached ``time_limit_s``.
    SolverError
        HiGHS fails.
    """
    hosts = ctx.servers
    if method == "auto" and len(hosts) == 1:
        ctx = ctx.noted("one server: nothing to reduce; general LP")
        method = "general"
    if method == "auto":
        try:
            if certify_first(ctx.G, hosts):
                with gc_paused():  # (arrays, and the report's links: no cycles)
                    done = certified_alltoall(ctx, want_loads)
                if done is not None:
                    return done
            if check is not None:
                check()
            return reduced_report(ctx, max_variables, want_loads, time_limit_s, scope)
        except (LPTooLarge, LPTimeLimit) as exc:
            return GivenUp(exc)
    if check is not None:
        check()
    try:
        return general_report(ctx, max_variables, want_loads, time_limit_s)
    except LPTimeLimit as exc:
        raise LPTimeLimit(
            f"the general LP: {exc}; use method auto (exact reductions) or a larger time_limit_s",
            names=("method", "time_limit_s"),
        ) from None


def certify_first(G: nx.Graph, hosts: list[ContractedServer]) -> bool:
    """Is the fabric large enough that the certified routing is tried before the reduced
    network is built (:data:`CERTIFY_FIRST`)?"""
    switches = sum(1 for d in G._node.values() if d["kind"] in SWITCH_KINDS)  # (raw dicts)
    return len(hosts) * switches > CERTIFY_FIRST


def reduced_report(
    ctx: SolveContext,
    max_variables: int,
    want_loads: bool,
    time_limit_s: float | None = None,
    scope: Callable[[], Scope] | None = None,
) -> BandwidthResult | GivenUp:
    """The all-to-all by the reduced LP, checked; the general LP if the server check fails.
    ``scope``: as :func:`exact_alltoall`.

    Returns
    -------
    BandwidthResult or GivenUp
        :class:`GivenUp` (with the notes so far) when the reduced LP (no verified symmetry)
        has more than ``max_variables`` variables or HiGHS reached ``time_limit_s``.

    Raises
    ------
    LPTooLarge
        The reduced network's tables would not fit in memory.
    SolverError
        HiGHS fails, or the server check fails and the general LP is too large.
    """
    G, hosts, terminal = ctx.G, ctx.servers, ctx.terminal
    n_terms = sum(h.weight for h in hosts)
    sc = find_scope(G, hosts) if scope is None else scope()
    classes = twin_classes_checked(hosts, sc)
    # Every estimate is at least the arcs (_estimate): over CERTIFY_ABOVE of them, the routing
    # is tried before the reduced network is written and searched for symmetry, which only
    # the LP needs.
    certify = arc_count(G, sc, classes) > CERTIFY_ABOVE
    if certify:
        done = certified_alltoall(ctx, want_loads)
        if done is not None:
            return done
    red = reduce(G, hosts, sc, classes)
    gens = symmetry(G, red)
    if not certify and _estimate(red, gens) > CERTIFY_ABOVE:
        done = certified_alltoall(ctx, want_loads)
        if done is not None:
            return done
    notes = [*ctx.notes, *reduction_notes(ctx, red)]
    try:
        sol, how = _solve_reduced(red, gens, max_variables, time_limit_s)
    except (LPTooLarge, LPTimeLimit) as exc:
        return GivenUp(exc, tuple(notes))
    notes += how
    lam = sol.theta
    if terminal == "gpu":
        ok, worst = server_check(G, red, sol, lam)
        if ok:
            notes[0] += " (checked: NVLink and PCIe carry the load)"
        else:
            notes.append(
                f"server contraction NOT exact (inside a server only {worst:.3f} of the "
                "load fits): general LP solved instead"
            )
            try:
                return general_report(replace(ctx, notes=tuple(notes)), max_variables, want_loads)
            except SolverError as exc:
                raise SolverError(
                    f"the server-contracted LP bounds busbw by "
                    f"{Bps_to_GBps(lam * (n_terms - 1)):.4g} GB/s, but NVLink/PCIe inside "
                    f"a server carry only {worst:.3f} of that load, and {exc}"
                ) from None
    binding, met = with_met_cuts(ctx, lam, bottleneck_links(G, red, sol))
    report = build_report(
        replace(ctx, notes=(*notes, *met)),
        lam,
        binding,
        n=n_terms,
        method="reduced",
        exact=True,
        sol=sol,
        planes=red.sc.planes,
    )
    return replace(report, link_load=link_loads(G, red, sol)) if want_loads else report


def server_check(G: nx.Graph, red: Reduced, sol: MCFSolution, lam: float) -> tuple[bool, float]:
    """Can every server's inside carry the contracted solution?

    Each GPU sends ``up_s / w`` to every switch ``s`` the server reaches and receives
    ``down_s / w`` from it, plus ``lam`` to and from every other GPU of the server.

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    red : Reduced
        The reduced network ``sol`` solves.
    sol : MCFSolution
        Its solution (arc flows in B/s).
    lam : float
        The pair rate (B/s).

    Returns
    -------
    (bool, float)
        Whether every server carries its load (theta >= 1 - :data:`FEASIBILITY_TOL`), and the
        worst theta.
    """
    up: dict[tuple[int, Hashable], float] = {}
    down: dict[tuple[int, Hashable], float] = {}
    for a, o in enumerate(red.origin):
        if o[0] == "up":
            up[(o[1], o[2])] = sol.arc_flow[a] / len(red.classes[o[1]])
        elif o[0] == "down":
            down[(o[1], o[2])] = sol.arc_flow[a] / len(red.classes[o[1]])
    worst = math.inf
    done: dict[tuple[InnerSignature, tuple[tuple[float, float], ...]], float] = {}
    for ci, cls in enumerate(red.classes):
        h = cls[0]
        loads: list[Load] = []
        for s in h.attach:
            base = red.sc.to_plane0(s)
            k = red.mult(base)
            loads.append((s, up.get((ci, base), 0.0) / k, down.get((ci, base), 0.0) / k))
        key = (h.inner_sig, tuple(sorted((round(u, 3), round(d, 3)) for _, u, d in loads)))
        if key not in done:
            done[key] = inside_theta(G, h, loads, lam)
        worst = min(worst, done[key])
    return worst >= 1 - FEASIBILITY_TOL, worst


def reduction_notes(ctx: SolveContext, red: Reduced) -> tuple[str, ...]:
    """Which reductions apply: server contraction, planes, twin classes (the result's
    ``reductions``, in that order)."""
    G, hosts = ctx.G, ctx.servers
    notes = []
    if ctx.terminal == "gpu":
        notes.append(f"server contraction: {count(len(hosts), 'server')}")
    if red.sc.planes > 1:
        notes.append(f"plane decomposition: {red.sc.planes} isomorphic planes, one solved")
    if red.sc.copies is not None:
        sizes = sorted(
            (red.mult(next(iter(c))) for c in nx.connected_components(G.subgraph(red.scope))),
            reverse=True,
        )
        notes.append(
            f"plane merging: {sum(sizes)} planes in {len(sizes)} groups of identical planes "
            f"({'+'.join(map(str, sizes))}, verified); each group solved as one plane of "
            "multiplied capacity"
        )
    notes.append(
        f"twin classes: {count(sum(len(c) for c in red.classes), 'host')} in "
        f"{count(len(red.classes), 'class', 'classes')}"
    )
    return tuple(notes)


def _estimate(red: Reduced, gens: list[Perm] | None) -> int:
    """Flow variables of the reduced LP (symmetrised: about one commodity per class orbit);
    never fewer than its arcs (``K (A - U) + U >= A`` for ``K >= 1`` commodities, ``A`` arcs,
    ``U`` of them sources' up arcs; orbits x arcs likewise)."""
    if gens is None:
        return red.lp_variables()
    return len(class_orbits(red, gens)) * len(red.arcs)


def _solve_reduced(
    red: Reduced,
    gens: list[Perm] | None,
    max_variables: int,
    time_limit_s: float | None,
) -> tuple[MCFSolution, tuple[str, ...]]:
    """The reduced LP, symmetrised when a verified symmetry merges classes, else as is; and the
    note saying how."""
    if gens is not None:
        sol = solve_symmetric(red, gens, max_variables, time_limit_s)
        return sol, (
            f"class symmetry: {count(len(gens), 'verified automorphism')} fold the "
            f"{len(red.classes)} classes into {count(len(class_orbits(red, gens)), 'orbit')}: one "
            "commodity per orbit, one capacity row per arc orbit",
        )
    n_vars = red.lp_variables()
    if n_vars > max_variables:
        raise LPTooLarge(
            f"the reduced all-to-all LP would have {n_vars:,} variables (limit "
            f"{max_variables:,}): the fabric has {len(red.classes):,} distinct server "
            "attachments and no verified symmetry between them"
        )
    sol = max_concurrent_flow(
        red.arcs,
        red.capacity,
        red.commodities,
        commodity_arcs=[red.commodity_arcs(ci) for ci in range(len(red.classes))],
        max_variables=max_variables,
        time_limit_s=time_limit_s,
    )
    return sol, ()


def general_report(
    ctx: SolveContext,
    max_variables: int,
    want_loads: bool = False,
    time_limit_s: float | None = None,
) -> BandwidthResult:
    """The all-to-all by the general LP (:func:`topo.flow.exact.general.general_lp`)."""
    G = ctx.G
    terms, arcs, cap, sol = general_lp(G, ctx.terminal, max_variables, time_limit_s=time_limit_s)
    links = []
    for a in np.nonzero(sol.arc_dual > DUAL_TOL)[0]:
        u, v = arcs[a]
        links.append(link(G, u, v, cap[a], sol.arc_flow[a]))
    links, met = with_met_cuts(ctx, sol.theta, links)
    report = build_report(
        ctx.noted(*met),
        sol.theta,
        links,
        n=len(terms),
        method="general",
        exact=True,
        sol=sol,
    )
    if not want_loads:
        return report
    is_sw = {v: k in SWITCH_KINDS for v, k in G.nodes(data="kind")}
    loads = {
        (u, v): float(sol.arc_flow[a]) for a, (u, v) in enumerate(arcs) if is_sw[u] or is_sw[v]
    }
    return replace(report, link_load=loads)
