"""Slim Fly and Dragonfly designs rated in closed form: their router graphs (the builders') fed
to :func:`topo.flow.routing.direct_rates` (ideal, minimal, Valiant and UGAL all-to-all with every
router filled; the model is :mod:`topo.flow.routing.direct`'s)."""

from __future__ import annotations

import networkx as nx
import numpy as np

from topo.builders.dragonfly import global_links
from topo.builders.slimfly import mms_graph, slimfly_sizes
from topo.errors import SpecError
from topo.flow.routing import (
    DirectRates,
    check_direct_servers,
    direct_rates,
    minimal_arc_loads,
    router_arcs,
)
from topo.units import gbps_to_Bps

__all__ = ["dragonfly_rates", "dragonfly_router_loads", "slimfly_rates"]


def slimfly_rates(
    q: int,
    endpoints_per_router: int,
    *,
    link_gbps: float = 400.0,
    gpus_per_node: int = 8,
    nics_per_node: int = 8,
    pcie_GBps: float = 64.0,
    nvlink_GBps: float = 200.0,
    time_limit_s: float | None = 60.0,
) -> DirectRates:
    """The all-to-all of the Slim Fly of ``q`` with every router holding its endpoints.

    Parameters
    ----------
    q : int
        The MMS graph's prime power (``2 q^2`` routers of network radix ``k'``).
    endpoints_per_router : int
        ``p``: NICs on each router, a multiple of ``nics_per_node``.
    link_gbps : float
        Router-to-router and NIC cable rate, Gb/s.
    gpus_per_node, nics_per_node : int
        Server shape; equal (one NIC per GPU).
    pcie_GBps, nvlink_GBps : float
        A GPU's PCIe to its NIC and its NVLink, GB/s per direction.
    time_limit_s : float or None
        HiGHS time limit of the router-level LP (s), solved only when no routing meets a
        bound; None: none.

    Returns
    -------
    DirectRates
        Pair rates in B/s (module docstring for the model).

    Raises
    ------
    SpecError
        ``q`` not constructible, a server shape the closed form does not cover, or an NVLink
        slower than a GPU's NIC share (its pairs would also take the network).

    Examples
    --------
    >>> r = slimfly_rates(5, 2, gpus_per_node=1, nics_per_node=1)
    >>> r.routers, r.gpus, r.minimal_load   # Hoffman-Singleton: 7 + 2 * 42 = 91 hops, 7 arcs
    (50, 100, 13.0)

    References
    ----------
    M. Besta and T. Hoefler, "Slim Fly", SC14 (MMS graphs, minimal and Valiant routing);
    L. G. Valiant and G. J. Brebner, STOC 1981.
    """
    sizes = slimfly_sizes(q, endpoints_per_router)
    check_direct_servers(endpoints_per_router, gpus_per_node, nics_per_node)
    M = mms_graph(q)
    A = nx.to_numpy_array(M, nodelist=sorted(M.nodes), dtype=float)
    loads = minimal_arc_loads(A)
    deg = A.sum(axis=1)
    N = A.shape[0]
    if not np.all(deg == sizes.network_radix):  # pragma: no cover - the builder's contract
        raise SpecError(f"slimfly q={q}: the MMS graph is not {sizes.network_radix}-regular")
    S = deg[0] + 2.0 * (N - 1 - deg[0])  # diameter 2
    mean = S / deg[0]
    w = endpoints_per_router * gpus_per_node // nics_per_node
    return direct_rates(
        "slimfly",
        N,
        w,
        gpus_per_node,
        gbps_to_Bps(link_gbps),
        float(loads.max()),
        mean,
        link_gbps,
        pcie_GBps,
        nvlink_GBps,
        router_arcs(A, gbps_to_Bps(link_gbps)),
        time_limit_s,
    )


def dragonfly_router_loads(
    a: int, h: int, g: int, arrangement: str = "consecutive"
) -> tuple[float, float]:
    """The most a local and a global link carries under Dragonfly minimal routing, per unit
    of router-pair demand (every ordered pair of routers exchanging 1).

    Within a group the pair takes its direct local link; between groups ``G`` and ``H`` the
    ``a^2`` router pairs split evenly over the ``m_GH`` global links joining them, each path
    local (to the link's router), global, local. So a global link carries ``a^2 / m_GH`` and
    the local link ``s -> x`` carries ``1 + f_s + f_x``, ``f_r = a * sum over r's global links
    of 1 / m_GH``.

    Parameters
    ----------
    a, h, g : int
        Routers per group, global ports per router, groups.
    arrangement : str
        As for :func:`topo.builders.dragonfly.global_links`.

    Returns
    -------
    (float, float)
        The highest local-link load and the highest global-link load (one cable each).

    Examples
    --------
    >>> dragonfly_router_loads(4, 2, 9)   # one link per group pair: f = 2 * 4, 16 a link
    (17.0, 16.0)
    """
    return _router_loads(a, g, global_links(a, h, g, arrangement))


def _router_loads(a: int, g: int, links: list[tuple[int, int, int, int]]) -> tuple[float, float]:
    """:func:`dragonfly_router_loads` of the global links ``links`` (group, router, group,
    router)."""
    m: dict[tuple[int, int], int] = {}
    for i, _, t, _ in links:
        key = (min(i, t), max(i, t))
        m[key] = m.get(key, 0) + 1
    f = np.zeros((g, a))
    for i, r, t, s in links:
        share = a / m[(min(i, t), max(i, t))]
        f[i, r] += share
        f[t, s] += share
    top2 = np.sort(f, axis=1)[:, -2:] if a > 1 else np.zeros((g, 1))
    local = float(1.0 + top2.sum(axis=1).max()) if a > 1 else 0.0
    glob = float(a * a / min(m.values())) if m else 0.0
    return local, glob


def dragonfly_rates(
    routers_per_group: int,
    endpoints_per_router: int,
    global_ports: int,
    groups: int,
    *,
    arrangement: str = "consecutive",
    link_gbps: float = 400.0,
    gpus_per_node: int = 8,
    nics_per_node: int = 8,
    pcie_GBps: float = 64.0,
    nvlink_GBps: float = 200.0,
    time_limit_s: float | None = 60.0,
) -> DirectRates:
    """The all-to-all of a Dragonfly with every router holding its endpoints.

    Parameters
    ----------
    routers_per_group, endpoints_per_router, global_ports, groups : int
        ``a``, ``p`` (a multiple of ``nics_per_node``), ``h``, ``g``.
    arrangement : str
        Global-link arrangement (:func:`topo.builders.dragonfly.global_links`).
    link_gbps, gpus_per_node, nics_per_node, pcie_GBps, nvlink_GBps, time_limit_s
        As for :func:`slimfly_rates`.

    Returns
    -------
    DirectRates
        Pair rates in B/s; ``ideal_Bps`` exact only when a routing meets the endpoint cut
        (the router graph is not regular: no distance bound is used).

    Raises
    ------
    SpecError
        A server shape the closed form does not cover; an NVLink slower than a GPU's NIC
        share (its pairs would also take the network); fewer than two groups.

    Examples
    --------
    >>> r = dragonfly_rates(4, 2, 2, 9, gpus_per_node=1, nics_per_node=1)
    >>> r.routers, r.gpus, r.minimal_load
    (36, 72, 17.0)

    References
    ----------
    J. Kim, W. J. Dally, S. Scott and D. Abts, "Technology-driven, highly-scalable dragonfly
    topology", ISCA 2008, §3 and §4.2 (MIN, VAL, UGAL).
    """
    a, p, h, g = routers_per_group, endpoints_per_router, global_ports, groups
    if g < 2:
        raise SpecError(f"dragonfly_rates needs at least 2 groups, got {g}", param="groups")
    check_direct_servers(p, gpus_per_node, nics_per_node)
    links = global_links(a, h, g, arrangement)
    local, glob = _router_loads(a, g, links)
    w = p * gpus_per_node // nics_per_node
    return direct_rates(
        "dragonfly",
        a * g,
        w,
        gpus_per_node,
        gbps_to_Bps(link_gbps),
        max(local, glob),
        0.0,
        link_gbps,
        pcie_GBps,
        nvlink_GBps,
        _dragonfly_arcs(a, g, links, gbps_to_Bps(link_gbps)),
        time_limit_s,
    )


def _dragonfly_arcs(
    a: int, g: int, links: list[tuple[int, int, int, int]], c: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Both arcs of every Dragonfly router link (parallel global cables summed), no dense
    matrix."""
    cables: dict[tuple[int, int], int] = {}
    for i in range(g):
        for r in range(a):
            for s in range(r + 1, a):
                cables[(i * a + r, i * a + s)] = 1
    for i, r, t, s in links:
        u, v = sorted((i * a + r, t * a + s))
        cables[(u, v)] = cables.get((u, v), 0) + 1
    uv = np.array(list(cables), dtype=np.int64).reshape(-1, 2)
    n = np.array(list(cables.values()), dtype=float)
    tail = np.concatenate((uv[:, 0], uv[:, 1]))
    head = np.concatenate((uv[:, 1], uv[:, 0]))
    return tail, head, np.concatenate((n, n)) * c
