"""Cut bounds of the uniform all-to-all, and the links every optimal flow fills.

For a vertex set ``S`` holding ``W`` of the ``n`` terminals, every ordered pair split by ``S``
crosses its boundary at least once, so a concurrent flow at pair rate ``lambda`` sends at least
``W (n - W) lambda`` across it each way: ``lambda <= c(S) / (W (n - W))``, with ``c(S)`` the
capacity (B/s) of the link directions leaving ``S`` (Leighton and Rao, J. ACM 46(6), 1999).
The family of cuts tried here: every server (host) alone, and every switch and every block of
switches below the top tier (a pod), each with every host attached to it.

When a feasible rate *meets* such a cut (``lambda = c(S) / (W (n - W))``), the crossing
traffic equals the crossing capacity, so every link of the cut is full in both directions in
every optimal flow: those links are bottlenecks whatever optimum a solver returns
(:func:`met_cut_links`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterator

import networkx as nx
import numpy as np

from topo.fabric import SWITCH_KINDS, natural_key
from topo.flow.exact.switch_arcs import SwitchArcs
from topo.flow.reduce.servers import ContractedServer, SolveContext, terminal_count
from topo.flow.result import BottleneckLink, links
from topo.wording import count

MET_TOL = 1e-7
"""A rate within this fraction of a cut's bound meets it (HiGHS' default primal feasibility
tolerance: the precision of an LP optimum, and :data:`topo.flow.exact.certify.CERTIFY_TOL`)."""

Side = tuple[list[str], list[ContractedServer]]
"""A cut's side: the switches in it (none for a server alone) and the hosts in it."""


def cut_bound(
    G: nx.Graph, hs: list[ContractedServer], terminal: str, arcs: SwitchArcs | None = None
) -> tuple[float, str]:
    """The tightest of the server and switch-block cuts: (lambda bound in B/s, the cut named).

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    hs : list of ContractedServer
        Its hosts (:func:`topo.flow.reduce.servers.contract_servers`), at least two terminals.
    terminal : {"gpu", "endpoint"}
        What the terminals are.
    arcs : SwitchArcs, optional
        ``G``'s switch arcs, where the caller has them.

    Returns
    -------
    (float, str)
        The bound on the pair rate (B/s), ``c(S) / (W (n - W))`` of the module notes, and the
        cut that gives it (``inf`` and "" when no cut splits the terminals).
    """
    best, side = math.inf, None
    for bound, block, members in cuts(G, hs, terminal, arcs):
        if bound < best:  # (the first of equal cuts: servers, then switches, then pods)
            best, side = bound, (block, members)
    return best, ("" if side is None else _name(side, terminal))


def cuts(
    G: nx.Graph, hs: list[ContractedServer], terminal: str, arcs: SwitchArcs | None = None
) -> Iterator[tuple[float, list[str], list[ContractedServer]]]:
    """Every cut of the family: ``(bound on lambda in B/s, its switches, its hosts)``.

    Servers first (in ``hs`` order, no switches), then every switch a host is attached to
    alone, then the pods (:func:`_blocks_below_top`); cuts that hold no terminal or all of
    them are left out.
    """
    n = terminal_count(hs)
    for h in hs:
        dem = h.weight * (n - h.weight)
        if dem:
            yield h.cabled_Bps / dem, [], [h]
    by_switch: dict[str, list[ContractedServer]] = {}
    for h in hs:
        for s in h.attach:
            by_switch.setdefault(s, []).append(h)
    a = arcs if arcs is not None else SwitchArcs.of(G)
    out_of = np.bincount(a.tail, weights=a.cap, minlength=len(a.names))  # (a switch alone)
    blocks: list[tuple[list[str], float]] = [([s], float(out_of[a.index[s]])) for s in by_switch]
    blocks += _blocks_below_top(a)
    for block, cap in blocks:
        if len(block) == 1:  # (a switch alone: each host's other cables, kept on the host)
            (s,) = block
            alone = by_switch.get(s, [])
            W = sum(h.weight for h in alone)
            if W == 0 or W == n:
                continue
            for h in alone:
                cap += h.cabled_outside_Bps(s)
            yield cap / (W * (n - W)), block, list(alone)
            continue
        inside = set(block)
        members = {id(h): h for s in block for h in by_switch.get(s, [])}
        W = sum(h.weight for h in members.values())
        if W == 0 or W == n:
            continue
        for h in members.values():
            cap += sum(c for s, c in h.attach.items() if s not in inside)
        yield cap / (W * (n - W)), block, list(members.values())


def _name(side: Side, terminal: str) -> str:
    """A cut as the reports name it."""
    block, members = side
    if not block:
        who = "server" if terminal == "gpu" else "endpoint"
        return f"the NIC cables of {who} {members[0].id}"
    name = min(block, key=str) if len(block) == 1 else f"the block of {min(block, key=str)}"
    return f"{name} with its {count(len(members), 'attached host')}"


def _blocks_below_top(a: SwitchArcs) -> list[tuple[list[str], float]]:
    """The blocks below the top tier with more than one switch (pods), each with the capacity
    of its links to switches outside it (B/s), in the order of
    :func:`topo.fabric.blocks_below_top`: by their first switch in (tier, natural name)."""
    lower = a.tier < a.tier.max() if len(a.names) else np.zeros(0, dtype=bool)
    if not lower.any():
        return []
    block = a.components(lower)
    n_blocks = int(block.max()) + 1
    size = np.bincount(block[block >= 0], minlength=n_blocks)
    cross = (block[a.tail] >= 0) & (block[a.tail] != block[a.head])
    out = np.bincount(block[a.tail[cross]], weights=a.cap[cross], minlength=n_blocks)
    members: dict[int, list[str]] = {}
    for i in np.flatnonzero((block >= 0) & (size[np.maximum(block, 0)] > 1)).tolist():
        members.setdefault(int(block[i]), []).append(a.names[i])
    first = {  # the natural key of each block's first switch by (tier, natural name)
        q: min((int(a.tier[a.index[s]]), natural_key(s)) for s in names)[1]
        for q, names in members.items()
    }
    return [(members[q], float(out[q])) for q in sorted(members, key=first.__getitem__)]


def met_cut_links(
    G: nx.Graph,
    hs: list[ContractedServer],
    terminal: str,
    rate: float,
    arcs: SwitchArcs | None = None,
) -> tuple[list[BottleneckLink], int]:
    """Both directions of every cable of every cut of :func:`cuts` that ``rate`` meets.

    A cut is met when ``rate >= bound (1 - MET_TOL)``; for a feasible ``rate`` (an optimum)
    its links are then full both ways in every optimal flow (module notes), so they are
    bottleneck links whichever optimum a solver returns, where an LP's dual prices only some
    of them. A cut whose hosts include a NIC bound by its PCIe side is skipped (its cable is
    not what binds).

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    hs : list of ContractedServer
        Its hosts, at least two terminals.
    terminal : {"gpu", "endpoint"}
        What the terminals are.
    rate : float
        A feasible pair rate (B/s), normally the optimum.
    arcs : SwitchArcs, optional
        ``G``'s switch arcs, where the caller has them.

    Returns
    -------
    (list of BottleneckLink, int)
        The link directions, each once, with load equal to capacity (B/s), in the order the
        cuts come; and how many cuts were met.
    """
    is_switch = {v for v, k in G.nodes(data="kind") if k in SWITCH_KINDS}
    found: dict[tuple[Hashable, Hashable], tuple[Hashable, Hashable, float, float]] = {}
    met = 0
    for bound, block, members in cuts(G, hs, terminal, arcs):
        if not rate >= bound * (1 - MET_TOL):
            continue
        crossing = _crossing(G, is_switch, block, members)
        if crossing is None:
            continue
        met += 1
        for u, v, c in crossing:
            found.setdefault((u, v), (u, v, c, c))
            found.setdefault((v, u), (v, u, c, c))
    return links(G, found.values()), met


def _crossing(
    G: nx.Graph, is_switch: set[Hashable], block: list[str], members: list[ContractedServer]
) -> list[tuple[Hashable, Hashable, float]] | None:
    """The cables leaving a cut's side, ``(inside end, outside end, capacity B/s)``: the
    block's links to other switches, then its hosts' NIC cables to switches outside it; None
    when one of those NICs is bound by its PCIe side."""
    inside = set(block)
    out: list[tuple[Hashable, Hashable, float]] = []
    adj = G._adj  # the raw adjacency dicts
    for s in sorted(block, key=natural_key):
        for t, e in adj[s].items():
            if t in is_switch and t not in inside:
                out.append((s, t, float(e["capacity"])))
    for h in members:
        for s, nics in h.nics.items():
            if s in inside:
                continue
            if h.host_bound.intersection(nics):
                return None
            out += [(nic, s, float(adj[nic][s]["capacity"])) for nic in nics]
    return out


def with_met_cuts(
    ctx: SolveContext, rate: float, certificate: list[BottleneckLink]
) -> tuple[list[BottleneckLink], tuple[str, ...]]:
    """The bottleneck links of an optimum: ``certificate`` (the link directions an LP's dual
    prices, or none), then the links of every cut ``rate`` meets that it lacks
    (:func:`met_cut_links`). A degenerate dual prices one certificate among several, often
    one server's cables where three servers bind alike, or one direction of cables full both
    ways; the met cuts name the others.

    Parameters
    ----------
    ctx : SolveContext
        The solve (fabric, contracted servers with at least two terminals, terminal kind).
    rate : float
        The optimal pair rate (B/s).
    certificate : list of BottleneckLink
        The links the LP's dual prices (may be empty).

    Returns
    -------
    (list of BottleneckLink, tuple of str)
        ``certificate`` followed by the added link directions (load = capacity, B/s), and the
        note saying what was added (none when nothing was).
    """
    cut, met = met_cut_links(ctx.G, ctx.servers, ctx.terminal, rate)
    have = {(b.source, b.target) for b in certificate}
    added = [b for b in cut if (b.source, b.target) not in have]
    if not added:
        return [*certificate], ()
    what = "the LP's dual certificate and " if certificate else ""
    note = (
        f"bottleneck: {what}the {count(len(cut) // 2, 'cable')} of {count(met, 'cut')} "
        "this rate meets (servers, switches or pods), full both ways in every optimal "
        "flow; other links may be full too"
    )
    return [*certificate, *added], (note,)
