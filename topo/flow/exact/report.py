"""The result of a uniform all-to-all at a given pair rate: the per-GPU and per-NIC figures,
the bottleneck links in report order, the LP's size (shared by the exact, certified and
bounded paths)."""

from __future__ import annotations

import time

import numpy as np

from topo.fabric import natural_key, nic_ports
from topo.flow.reduce.servers import SolveContext
from topo.flow.result import BandwidthResult, BottleneckLink, Bounds, LPStats
from topo.flow.solve.lp import MCFSolution


def build_report(
    ctx: SolveContext,
    lam: float,
    links: list[BottleneckLink],
    *,
    n: int,
    method: str,
    exact: bool,
    sol: MCFSolution,
    planes: int = 1,
    bounds: Bounds | None = None,
) -> BandwidthResult:
    """The result of the uniform all-to-all at pair rate ``lam`` (B/s) among ``n`` terminals.

    Parameters
    ----------
    ctx : SolveContext
        The solve: the fabric, its contracted servers, the terminal kind, the start time
        (``solve_seconds`` counts from it) and the notes (the result's ``reductions``).
    lam : float
        The pair rate (B/s).
    links : list of BottleneckLink
        The binding link directions.
    n : int
        Terminals.
    method, exact
        How the rate was obtained.
    sol : MCFSolution
        The LP solved (its size and times).
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
    G, hosts, terminal = ctx.G, ctx.servers, ctx.terminal
    # Inter-server traffic: each terminal sends lam to every terminal outside its server.
    gpu = terminal == "gpu"
    inter_total = sum(h.weight * (n - h.weight) * lam for h in hosts) if gpu else n * (n - 1) * lam
    nics = sum(len(v) for h in hosts for v in h.nics.values())
    adj = G._adj  # the raw adjacency dicts: one look-up per NIC cable
    nic_caps = [
        float(adj[nic][s]["capacity"]) for h in hosts for s, vs in h.nics.items() for nic in vs
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
        reductions=ctx.notes,
        planes=planes,
        lp=lp_stats(sol),
        solve_seconds=time.perf_counter() - ctx.t0,
        bounds=bounds,
        nic_ports=nic_ports(G),
    )


def sort_links(links: list[BottleneckLink]) -> tuple[BottleneckLink, ...]:
    """Bottleneck links in report order: by tier, then source in natural order (stable: links
    of equal tier and source keep their order)."""
    # Each distinct tier and source is ranked once, so the sort compares integers.
    tier = {t: i for i, t in enumerate(sorted({b.tier for b in links}))}
    source: dict[str, int] = {}
    rank, previous = 0, None
    # (in the order the links come: Timsort gains from the runs already sorted)
    for key, s in sorted((natural_key(s), s) for s in dict.fromkeys(b.source for b in links)):
        if key != previous:  # names of equal key ("a01", "a1") share a rank
            rank, previous = len(source), key
        source[s] = rank
    n = len(source)
    keys = np.array([tier[b[2]] * n + source[b[0]] for b in links], dtype=np.int64)
    order = np.argsort(keys, kind="stable").tolist()
    return tuple(map(links.__getitem__, order))


def lp_stats(sol: MCFSolution) -> LPStats:
    """The size and times of the LP behind ``sol``."""
    return LPStats(
        variables=sol.variables,
        constraints=sol.constraints,
        build_seconds=sol.build_seconds,
        solve_seconds=sol.solve_seconds,
    )
