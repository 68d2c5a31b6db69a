"""The all-to-all of a full Slim Fly or Dragonfly in closed form: ideal, minimal and Valiant.

A direct network whose every router holds ``p`` endpoints, grouped in whole servers of ``g``
GPUs and ``m = g`` NICs (each GPU on its own NIC), runs the uniform all-to-all at the pair rate
``lambda`` (B/s per ordered GPU pair) set by two separate parts, because servers do not forward
other servers' traffic (``docs/bandwidth.md``):

- **the servers**: each GPU sends ``lambda (n - g)`` through its NIC (cable ``c`` and PCIe, the
  tighter) and ``lambda (g - 1)`` over NVLink: ``lambda_e = min(min(c, pcie) / (n - g),
  nvlink / (g - 1))``; cut bounds, met by every GPU using its own NIC;
- **the routers**: every ordered pair of routers exchanges ``w^2 lambda`` (``w = p g / m``
  GPUs a router), carried by the routing; with ``L`` the most any router arc carries per unit
  of router-pair demand, ``lambda_R = c / (w^2 L)``.

``lambda = min(lambda_e, lambda_R)`` under each routing:

- **minimal**: Slim Fly: every pair split evenly over its shortest paths (one hop or, through
  each common neighbour, two: MMS graphs have diameter 2; Besta and Hoefler, SC14, §4.1);
  Dragonfly: within a group the direct local link, between groups split evenly over the global
  links joining the two groups, local-global-local (Kim et al., ISCA 2008, §4.2, MIN);
- **Valiant**: every pair split evenly over all ``N`` routers as intermediates, each leg
  minimal (Valiant and Brebner, STOC 1981; Kim et al.'s VAL). Summing the legs arc by arc,
  ``L_val = 2 (N - 1) / N * L_min`` on any network: exact, no approximation;
- **UGAL**: the better of minimal and Valiant (a fluid UGAL that sends all traffic the way its
  queues favour; Kim et al., §4.2): on the uniform all-to-all that is minimal;
- **ideal** (the max concurrent flow over any paths, what :func:`topo.flow.alltoall_bandwidth`
  solves): ``min(lambda_e, theta / w^2)`` with ``theta`` the router-level max concurrent flow.
  Exact without an LP when a routing above meets an upper bound (the endpoint cut
  ``lambda_e``, or on a regular router graph the distance bound ``c k' / (w^2 S)``, ``k'`` arcs
  a router, ``S`` the sum of its distances to the others; Shahrokhi and Matula, J. ACM 37(2),
  1990); otherwise ``theta`` is the router-level LP folded by the router graph's automorphisms
  (:func:`topo.flow.bounds.direct.orbit_rate`, exact). Should that LP not be solved
  :attr:`DirectRates.ideal_Bps` is None and the certified bounds are given.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from topo.builders.dragonfly import global_links
from topo.builders.slimfly import mms_graph, slimfly_sizes
from topo.errors import SpecError
from topo.flow.bounds.direct import orbit_rate
from topo.flow.bounds.router_lp import RouterNet
from topo.units import GBps_to_Bps, gbps_to_Bps

__all__ = [
    "DirectRates",
    "dragonfly_rates",
    "dragonfly_router_loads",
    "minimal_arc_loads",
    "slimfly_rates",
]


@dataclass(frozen=True)
class DirectRates:
    """The uniform all-to-all of a direct network with every router filled.

    Attributes
    ----------
    family : str
        ``slimfly`` or ``dragonfly``.
    routers, gpus : int
        Routers; GPUs (every router's ``endpoints_per_router`` filled, whole servers).
    gpus_per_router : int
    endpoint_Bps : float
        ``lambda_e``: the pair rate the servers' NICs, PCIe and NVLink allow, B/s.
    minimal_Bps, valiant_Bps, ugal_Bps : float
        Pair rate under minimal, Valiant and UGAL routing, B/s per ordered GPU pair.
    ideal_Bps : float or None
        The max concurrent flow's pair rate when proven exact, else None, B/s.
    ideal_lower_Bps, ideal_upper_Bps : float
        Certified bounds on it (equal when exact), B/s.
    minimal_load, max_distance_load : float
        Most any router arc carries under minimal routing, and the mean the distance bound
        needs (``S / k'``; regular router graphs only, else 0), per unit router-pair demand.
    """

    family: str
    routers: int
    gpus: int
    gpus_per_router: int
    endpoint_Bps: float
    minimal_Bps: float
    valiant_Bps: float
    ugal_Bps: float
    ideal_Bps: float | None
    ideal_lower_Bps: float
    ideal_upper_Bps: float
    minimal_load: float
    max_distance_load: float

    def busbw_Bps(self, pair_Bps: float) -> float:
        """nccl-tests' all-to-all busbw per GPU of a pair rate: ``lambda (n - 1)``, B/s."""
        return pair_Bps * (self.gpus - 1)


def minimal_arc_loads(adj: np.ndarray) -> np.ndarray:
    """Arc loads of the uniform demand (1 per ordered router pair) split evenly over shortest
    paths, on a graph of diameter at most 2.

    Parameters
    ----------
    adj : numpy.ndarray
        ``(N, N)`` symmetric 0/1 adjacency matrix, zero diagonal.

    Returns
    -------
    numpy.ndarray
        ``(N, N)``: entry ``[u, v]`` the load of arc ``u -> v`` (0 where there is no arc).

    Raises
    ------
    SpecError
        The graph has a diameter above 2.

    Examples
    --------
    >>> import networkx as nx
    >>> A = nx.to_numpy_array(nx.petersen_graph())  # 3 + 2*6 = 15 hops from each vertex
    >>> float(minimal_arc_loads(A).max())             # over 3 arcs: 5 each (arc-transitive)
    5.0
    """
    A = np.asarray(adj, dtype=float)
    n = A.shape[0]
    C = A @ A
    far = (A == 0) & ~np.eye(n, dtype=bool)
    if np.any(far & (C == 0)):
        raise SpecError("minimal_arc_loads: the router graph has a diameter above 2")
    R = np.zeros_like(A)
    R[far] = 1.0 / C[far]
    # first hop u -> w of pairs (u, v): sum_v R[u, v] A[w, v]; second hop u -> w of (x, w):
    # sum_x A[x, u] R[x, w]
    return A * (1.0 + R @ A + A @ R)


def _endpoint_rate(
    gpus: int, g: int, link_gbps: float, pcie_GBps: float, nvlink_GBps: float
) -> float:
    nic = min(gbps_to_Bps(link_gbps), GBps_to_Bps(pcie_GBps))
    rate = nic / (gpus - g)
    if g > 1:
        rate = min(rate, GBps_to_Bps(nvlink_GBps) / (g - 1))
    return rate


def _check_servers(p: int, gpus_per_node: int, nics_per_node: int) -> None:
    if gpus_per_node != nics_per_node:
        raise SpecError(
            "the closed-form direct-network all-to-all needs one NIC per GPU; got "
            f"{gpus_per_node} GPUs and {nics_per_node} NICs per server",
            param="nics_per_node",
        )
    if p % nics_per_node:
        raise SpecError(
            f"the closed-form direct-network all-to-all needs whole servers on each router: "
            f"endpoints_per_router {p} is not a multiple of {nics_per_node} NICs per server",
            param="endpoints_per_router",
        )


def _rates(
    family: str,
    routers: int,
    w: int,
    g: int,
    c: float,
    load: float,
    mean_load: float,
    link_gbps: float,
    pcie_GBps: float,
    nvlink_GBps: float,
    arcs: tuple[np.ndarray, np.ndarray, np.ndarray],
    time_limit_s: float | None,
) -> DirectRates:
    n = routers * w
    lam_e = _endpoint_rate(n, g, link_gbps, pcie_GBps, nvlink_GBps)
    lam_min = min(lam_e, c / (w * w * load))
    lam_val = min(lam_e, c / (w * w * load * 2.0 * (routers - 1) / routers))
    lam_ugal = lower = max(lam_min, lam_val)
    upper = lam_e if mean_load <= 0 else min(lam_e, c / (w * w * mean_load))
    exact = lower >= upper * (1 - 1e-12)
    if not exact:
        tail, head, cap = arcs
        net = RouterNet(
            [str(i) for i in range(routers)], tail, head, cap, np.full(routers, float(w)), [], []
        )
        lp = orbit_rate(net, max_variables=2_000_000, time_limit_s=time_limit_s)
        if lp is not None:  # the router-level LP, exact (a routing of it meets its rate)
            upper = lower = min(lam_e, lp.pair_rate_Bps)
            exact = True
    return DirectRates(
        family=family,
        routers=routers,
        gpus=n,
        gpus_per_router=w,
        endpoint_Bps=lam_e,
        minimal_Bps=lam_min,
        valiant_Bps=lam_val,
        ugal_Bps=lam_ugal,
        ideal_Bps=upper if exact else None,
        ideal_lower_Bps=upper if exact else lower,
        ideal_upper_Bps=upper,
        minimal_load=load,
        max_distance_load=float(mean_load),
    )


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
        ``q`` not constructible, or a server shape the closed form does not cover.

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
    _check_servers(endpoints_per_router, gpus_per_node, nics_per_node)
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
    return _rates(
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
        _arcs(A, gbps_to_Bps(link_gbps)),
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
    links = global_links(a, h, g, arrangement)
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
        A server shape the closed form does not cover; fewer than two groups.

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
    _check_servers(p, gpus_per_node, nics_per_node)
    local, glob = dragonfly_router_loads(a, h, g, arrangement)
    w = p * gpus_per_node // nics_per_node
    return _rates(
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
        _dragonfly_arcs(a, h, g, arrangement, gbps_to_Bps(link_gbps)),
        time_limit_s,
    )


def _arcs(cables: np.ndarray, c: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Both arcs of every router link of a cable-count matrix, with capacity ``cables x c``."""
    tail, head = np.nonzero(cables)
    return tail.astype(np.int64), head.astype(np.int64), cables[tail, head] * c


def _dragonfly_arcs(
    a: int, h: int, g: int, arrangement: str, c: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Both arcs of every Dragonfly router link (parallel global cables summed), no dense
    matrix."""
    cables: dict[tuple[int, int], int] = {}
    for i in range(g):
        for r in range(a):
            for s in range(r + 1, a):
                cables[(i * a + r, i * a + s)] = 1
    for i, r, t, s in global_links(a, h, g, arrangement):
        u, v = sorted((i * a + r, t * a + s))
        cables[(u, v)] = cables.get((u, v), 0) + 1
    uv = np.array(list(cables), dtype=np.int64).reshape(-1, 2)
    n = np.array(list(cables.values()), dtype=float)
    tail = np.concatenate((uv[:, 0], uv[:, 1]))
    head = np.concatenate((uv[:, 1], uv[:, 0]))
    return tail, head, np.concatenate((n, n)) * c
