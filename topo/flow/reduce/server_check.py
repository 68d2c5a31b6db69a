"""Can every server's inside (NVLink, PCIe) carry a contracted solution?

Server contraction (:mod:`topo.flow.reduce.servers`) relaxes the all-to-all: it lets any GPU use
any NIC of its server for free. The contracted optimum is exact when every server's inside can carry
its share of it with every GPU splitting its traffic over the switches in the same proportions
(which is what lets the aggregated paths be split per destination). This module checks that
with one small LP per distinct server load (``docs/bandwidth.md``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable

import networkx as nx

from topo.flow.reduce.servers import ContractedServer
from topo.flow.solve.lp import Commodity, max_concurrent_flow

FEASIBILITY_TOL = 1e-6
"""Relative tolerance of the server-contraction check (theta >= 1 - tol)."""

Load = tuple[str, float, float]
"""``(switch, up B/s, down B/s)``: what a server sends to and receives from one switch."""


def inside_theta(G: nx.Graph, h: ContractedServer, loads: list[Load], lam: float) -> float:
    """:func:`star_theta` when it shows the load fits, else :func:`server_theta` (the LP)."""
    fast = star_theta(G, h, loads, lam)
    return fast if fast is not None and fast >= 1.0 else server_theta(G, h, loads, lam)


def star_theta(G: nx.Graph, h: ContractedServer, loads: list[Load], lam: float) -> float | None:
    """A fraction of the load ``loads`` that server ``h``'s inside carries by one routing,
    without an LP; None for a server of another shape.

    The shape: one NVSwitch joined to every GPU, each NIC joined by PCIe to one GPU. The
    routing: each GPU sends ``1/w`` of every NIC's up load to it, over the NVSwitch and the
    NIC's GPU (directly when the NIC is its own), and receives ``1/w`` of every NIC's down
    load the same way back; ``lam`` between every two GPUs over the NVSwitch. A NIC's share
    of a switch's load is in proportion to its capacity (the tighter of cable and PCIe), as
    in the server contraction. The least capacity over load of this routing is a lower bound
    on :func:`server_theta`; 1 or more proves that the load fits.

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    h : ContractedServer
        The server.
    loads : list of Load
        What it sends to and receives from each switch (B/s).
    lam : float
        The pair rate between its GPUs (B/s).

    Returns
    -------
    float or None
        The routing's fraction (1 or more: it fits), or None when the server is not of this
        shape.
    """
    kind = G.nodes
    members = set(h.members)
    gpus = [v for v in h.members if kind[v]["kind"] == "gpu"]
    hubs = [v for v in h.members if kind[v]["kind"] == "nvswitch"]
    if len(hubs) != 1 or any(hubs[0] not in G.adj[g] for g in gpus):
        return None
    w, hub = len(gpus), hubs[0]
    up = dict.fromkeys(gpus, 0.0)
    down = dict.fromkeys(gpus, 0.0)
    theta = math.inf
    for s, u, d in loads:
        for nic in h.nics.get(s, []):
            owner = [g for g in G.adj[nic] if g in members]
            if len(owner) != 1 or kind[owner[0]]["kind"] != "gpu":
                return None
            pcie = float(G.adj[nic][owner[0]]["capacity"])
            eff = min(float(G.adj[nic][s]["capacity"]), pcie)
            share = eff / h.attach[s]
            up[owner[0]] += u * share
            down[owner[0]] += d * share
            theta = min(theta, _ratio(eff, max(u, d) * share))
    total_up, total_down = sum(up.values()), sum(down.values())
    for g in gpus:
        c_up, c_down = float(G.adj[g][hub]["capacity"]), float(G.adj[hub][g]["capacity"])
        to_hub = (total_up - up[g]) / w + lam * (w - 1) + down[g] * (w - 1) / w
        from_hub = (total_down - down[g]) / w + lam * (w - 1) + up[g] * (w - 1) / w
        theta = min(theta, _ratio(c_up, to_hub), _ratio(c_down, from_hub))
    return theta


def _ratio(cap: float, load: float) -> float:
    return cap / load if load > 0 else math.inf


def server_theta(G: nx.Graph, h: ContractedServer, loads: list[Load], lam: float) -> float:
    """The largest fraction of the load ``loads`` (and ``lam`` B/s between every two of its
    GPUs) that server ``h``'s inside carries; 1 or more means it fits.

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    h : ContractedServer
        The server.
    loads : list of Load
        What it sends to and receives from each switch (B/s).
    lam : float
        The pair rate between its GPUs (B/s).

    Returns
    -------
    float
        The concurrent-flow theta of that load on its NVLink, PCIe and NIC cables.
    """
    gpus = [v for v in h.members if G.nodes[v]["kind"] == "gpu"]
    w = len(gpus)
    arcs: list[tuple[Hashable, Hashable]] = []
    cap: list[float] = []
    members = set(h.members)
    for v in h.members:
        for u, e in G.adj[v].items():
            if u in members:
                arcs.append((v, u))
                cap.append(float(e["capacity"]))
    for s, nics in h.nics.items():
        for nic in nics:
            c = float(G.adj[nic][s]["capacity"])
            arcs += [(nic, ("sw", s)), (("sw", s), nic)]
            cap += [c, c]
    commodities = []
    for g in gpus:
        dem: dict[Hashable, float] = {("sw", s): u / w for s, u, _ in loads if u > 0}
        dem.update({g2: lam for g2 in gpus if g2 != g})
        commodities.append(Commodity(source=g, demands=dem))
    for s, _, d in loads:
        if d > 0:
            commodities.append(Commodity(source=("sw", s), demands={g: d / w for g in gpus}))
    return max_concurrent_flow(arcs, cap, commodities).theta
