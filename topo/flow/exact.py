"""The exact all-to-all solves: the reduced LP (contraction, planes, twin classes, symmetry,
then the server check) and the general LP it falls back to, each returning a report.

The reductions and the proofs that they are exact are in :mod:`topo.flow.alltoall` and
``docs/bandwidth.md``; the parts are :mod:`topo.flow.hosts`, :mod:`topo.flow.planes`,
:mod:`topo.flow.network`, :mod:`topo.flow.symmetry` and :mod:`topo.flow.server_check`.
"""

from __future__ import annotations

import time
from dataclasses import replace

import networkx as nx
import numpy as np

from topo.errors import LPTimeLimit, LPTooLarge, SolverError
from topo.fabric import SWITCH_KINDS, natural_key
from topo.flow.general import general_lp
from topo.flow.hosts import Host
from topo.flow.lp import MCFSolution, max_concurrent_flow
from topo.flow.network import DUAL_TOL, Reduced, bottleneck_links, link, link_loads, reduce
from topo.flow.result import BandwidthResult, BottleneckLink, Bounds, LPStats
from topo.flow.server_check import server_check
from topo.flow.symmetry import class_orbits, solve_symmetric, symmetry
from topo.units import Bps_to_GBps


def exact_alltoall(
    G: nx.Graph,
    hosts: list[Host],
    terminal: str,
    *,
    method: str,
    max_variables: int,
    want_loads: bool,
    time_limit_s: float | None,
    t0: float,
    reductions: list[str],
) -> BandwidthResult:
    """The exact all-to-all: the reduced LP (``method="auto"``, more than one host) or the
    general LP.

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    hosts : list of Host
        Its hosts, checked (:func:`topo.flow.hosts.check_terminals`).
    terminal : {"gpu", "endpoint"}
        What the terminals are.
    method : {"auto", "general"}
        As :func:`topo.flow.alltoall.alltoall_bandwidth`.
    max_variables : int
        Refuse LPs with more flow variables than this.
    want_loads : bool
        Also return every link direction's load.
    time_limit_s : float, optional
        HiGHS time limit (s).
    t0 : float
        ``time.perf_counter()`` at the start of the call (for ``solve_seconds``).
    reductions : list of str
        What was reduced, appended to in place (so a caller that gives bounds instead can
        still say it).

    Returns
    -------
    BandwidthResult

    Raises
    ------
    LPTooLarge, LPTimeLimit
        The LP is over ``max_variables`` or HiGHS reached ``time_limit_s``.
    SolverError
        HiGHS fails.
    """
    if method == "auto" and len(hosts) == 1:
        reductions.append("one server: nothing to reduce; general LP")
        method = "general"
    if method == "auto":
        return reduced_report(
            G, hosts, terminal, max_variables, want_loads, t0, reductions, time_limit_s
        )
    try:
        return general_report(
            G, hosts, terminal, max_variables, t0, reductions, want_loads, time_limit_s
        )
    except LPTimeLimit as exc:
        raise LPTimeLimit(
            f"the general LP: {exc}; use --method auto (exact reductions) or a larger --time-limit"
        ) from None


def reduced_report(
    G: nx.Graph,
    hosts: list[Host],
    terminal: str,
    max_variables: int,
    want_loads: bool,
    t0: float,
    reductions: list[str],
    time_limit_s: float | None = None,
) -> BandwidthResult:
    """The all-to-all by the reduced LP, checked; the general LP if the server check fails.

    Raises
    ------
    LPTooLarge
        The reduced LP (no verified symmetry) has more than ``max_variables`` variables.
    LPTimeLimit
        HiGHS reached ``time_limit_s``.
    SolverError
        HiGHS fails, or the server check fails and the general LP is too large.
    """
    n_terms = sum(h.weight for h in hosts)
    red = reduce(G, hosts)
    _note_reductions(G, red, hosts, terminal, reductions)
    sol = _solve_reduced(G, red, max_variables, time_limit_s, reductions)
    lam = sol.theta
    if terminal == "gpu":
        ok, worst = server_check(G, red, sol, lam)
        if ok:
            reductions[0] += " (checked: NVLink and PCIe carry the load)"
        else:
            reductions.append(
                f"server contraction NOT exact (inside a server only {worst:.3f} of the "
                "load fits): general LP solved instead"
            )
            try:
                return general_report(G, hosts, terminal, max_variables, t0, reductions, want_loads)
            except SolverError as exc:
                raise SolverError(
                    f"the server-contracted LP bounds busbw by "
                    f"{Bps_to_GBps(lam * (n_terms - 1)):.4g} GB/s, but NVLink/PCIe inside "
                    f"a server carry only {worst:.3f} of that load, and {exc}"
                ) from None
    report = build_report(
        G,
        hosts,
        terminal,
        lam,
        bottleneck_links(G, red, sol),
        n=n_terms,
        method="reduced",
        exact=True,
        reductions=reductions,
        sol=sol,
        t0=t0,
        planes=red.sc.planes,
    )
    return replace(report, link_load=link_loads(G, red, sol)) if want_loads else report


def _note_reductions(
    G: nx.Graph, red: Reduced, hosts: list[Host], terminal: str, reductions: list[str]
) -> None:
    """Say which reductions apply (appended to ``reductions``)."""
    if terminal == "gpu":
        reductions.append(f"server contraction: {len(hosts)} servers")
    if red.sc.planes > 1:
        reductions.append(f"plane decomposition: {red.sc.planes} isomorphic planes, one solved")
    if red.sc.copies is not None:
        sizes = sorted(
            (red.mult(next(iter(c))) for c in nx.connected_components(G.subgraph(red.scope))),
            reverse=True,
        )
        reductions.append(
            f"plane merging: {sum(sizes)} planes in {len(sizes)} groups of identical planes "
            f"({'+'.join(map(str, sizes))}, verified); each group solved as one plane of "
            "multiplied capacity"
        )
    reductions.append(
        f"twin classes: {sum(len(c) for c in red.classes)} hosts in {len(red.classes)} classes"
    )


def _solve_reduced(
    G: nx.Graph,
    red: Reduced,
    max_variables: int,
    time_limit_s: float | None,
    reductions: list[str],
) -> MCFSolution:
    """The reduced LP: symmetrised when a verified symmetry merges classes, else as is."""
    gens = symmetry(G, red)
    if gens is not None:
        sol = solve_symmetric(red, gens, max_variables, time_limit_s)
        reductions.append(
            f"class symmetry: {len(gens)} verified automorphism(s) fold the "
            f"{len(red.classes)} classes into {len(class_orbits(red, gens))} orbit(s): one "
            "commodity per orbit, one capacity row per arc orbit"
        )
        return sol
    n_vars = red.lp_variables()
    if n_vars > max_variables:
        raise LPTooLarge(
            f"the reduced all-to-all LP would have {n_vars:,} variables (limit "
            f"{max_variables:,}): the fabric has {len(red.classes):,} distinct server "
            "attachments and no verified symmetry between them"
        )
    return max_concurrent_flow(
        red.arcs,
        red.capacity,
        red.commodities,
        commodity_arcs=[red.commodity_arcs(ci) for ci in range(len(red.classes))],
        max_variables=max_variables,
        time_limit_s=time_limit_s,
    )


def general_report(
    G: nx.Graph,
    hosts: list[Host],
    terminal: str,
    max_variables: int,
    t0: float,
    reductions: list[str],
    want_loads: bool = False,
    time_limit_s: float | None = None,
) -> BandwidthResult:
    """The all-to-all by the general LP (:func:`topo.flow.general.general_lp`)."""
    terms, arcs, cap, sol = general_lp(G, terminal, max_variables, time_limit_s=time_limit_s)
    links = []
    for a in np.nonzero(sol.arc_dual > DUAL_TOL)[0]:
        u, v = arcs[a]
        links.append(link(G, u, v, cap[a], sol.arc_flow[a]))
    report = build_report(
        G,
        hosts,
        terminal,
        sol.theta,
        links,
        n=len(terms),
        method="general",
        exact=True,
        reductions=reductions,
        sol=sol,
        t0=t0,
    )
    if not want_loads:
        return report
    is_sw = {v: k in SWITCH_KINDS for v, k in G.nodes(data="kind")}
    loads = {
        (u, v): float(sol.arc_flow[a]) for a, (u, v) in enumerate(arcs) if is_sw[u] or is_sw[v]
    }
    return replace(report, link_load=loads)


def build_report(
    G: nx.Graph,
    hosts: list[Host],
    terminal: str,
    lam: float,
    links: list[BottleneckLink],
    *,
    n: int,
    method: str,
    exact: bool,
    reductions: list[str],
    sol: MCFSolution,
    t0: float,
    planes: int = 1,
    bounds: Bounds | None = None,
) -> BandwidthResult:
    """The result of the uniform all-to-all at pair rate ``lam`` (B/s) among ``n`` terminals.

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    hosts : list of Host
        Its hosts.
    terminal : {"gpu", "endpoint"}
        What the terminals are.
    lam : float
        The pair rate (B/s).
    links : list of BottleneckLink
        The binding link directions.
    n : int
        Terminals.
    method, exact, reductions
        How the rate was obtained.
    sol : MCFSolution
        The LP solved (its size and times).
    t0 : float
        ``time.perf_counter()`` at the start of the call.
    planes : int
        Planes folded into one.
    bounds : Bounds, optional
        Certified bounds, when the rate is not exact.

    Returns
    -------
    BandwidthResult
        Of the all-to-all of 1 byte per ordered pair (``theta = lam``; the caller sets the
        demand's own scale).
    """
    # Inter-server traffic: each terminal sends lam to every terminal outside its server.
    gpu = terminal == "gpu"
    inter_total = sum(h.weight * (n - h.weight) * lam for h in hosts) if gpu else n * (n - 1) * lam
    nics = sum(len(v) for h in hosts for v in h.nics.values())
    nic_caps = [
        float(G.adj[nic][s]["capacity"]) for h in hosts for s, vs in h.nics.items() for nic in vs
    ]
    return BandwidthResult(
        fabric=str(G.graph.get("name", "")),
        family=str(G.graph.get("family", "unknown")),
        terminal=terminal,
        demand="alltoall",
        uniform=True,
        gpus=n,
        nodes=len(hosts) if gpu else len({G.nodes[h.id]["node"] for h in hosts}),
        theta=lam,
        total_bytes=float(n * (n - 1)),
        pair_rate_Bps=lam,
        internode_per_gpu_Bps=inter_total / n,
        internode_per_nic_Bps=inter_total / nics if nics else 0.0,
        nic_line_rate_Bps=float(np.median(nic_caps)) if nic_caps else 0.0,
        intranode_per_gpu_Bps=sum(h.weight * (h.weight - 1) * lam for h in hosts) / n
        if gpu
        else 0.0,
        bottleneck_links=sort_links(links),
        method=method,
        exact=exact,
        reductions=tuple(reductions),
        planes=planes,
        lp=lp_stats(sol),
        solve_seconds=time.perf_counter() - t0,
        bounds=bounds,
    )


def sort_links(links: list[BottleneckLink]) -> tuple[BottleneckLink, ...]:
    """Bottleneck links in report order: by tier, then source in natural order."""
    return tuple(sorted(links, key=lambda b: (b.tier, natural_key(b.source))))


def lp_stats(sol: MCFSolution) -> LPStats:
    """The size and times of the LP behind ``sol``."""
    return LPStats(
        variables=sol.variables,
        constraints=sol.constraints,
        build_seconds=sol.build_seconds,
        solve_seconds=sol.solve_seconds,
    )
