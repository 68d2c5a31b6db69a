"""The all-to-all of a full direct network (Slim Fly, Dragonfly) in closed form: ideal, minimal
and Valiant, from its router graph (:mod:`topo.cost.direct_rates` builds the families' graphs).

A direct network whose every router holds ``p`` endpoints, grouped in whole servers of ``g``
GPUs and ``m = g`` NICs (each GPU on its own NIC), runs the uniform all-to-all at the pair rate
``lambda`` (B/s per ordered GPU pair) set by two separate parts, because servers do not forward
other servers' traffic (``docs/bandwidth.md``):

- **the servers**: each GPU sends ``lambda (n - g)`` through its NIC (cable ``c`` and PCIe, the
  tighter): ``lambda_e = min(c, pcie) / (n - g)``, a cut bound met by every GPU using its own
  NIC, while NVLink carries the server's own ``g - 1`` pairs at least that fast
  (``nvlink / (g - 1) >= lambda_e``). A slower NVLink is refused (:class:`SpecError`): its
  pairs would also take the NICs and the network, which the closed form does not count (the
  flow solver on the built fabric does);
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

import numpy as np

from topo.errors import SpecError
from topo.flow.bounds.direct import orbit_rate
from topo.flow.bounds.router_lp import RouterNet
from topo.units import GBps_to_Bps, gbps_to_Bps

__all__ = [
    "DirectRates",
    "check_direct_servers",
    "direct_rates",
    "minimal_arc_loads",
    "router_arcs",
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
    """``lambda_e`` (B/s per ordered GPU pair): the NIC cut; :class:`SpecError` where NVLink
    would bind instead (module docstring)."""
    nic = min(gbps_to_Bps(link_gbps), GBps_to_Bps(pcie_GBps))
    rate = nic / (gpus - g)
    if g > 1 and GBps_to_Bps(nvlink_GBps) / (g - 1) < rate:
        raise SpecError(
            f"the closed-form direct-network all-to-all needs NVLink to carry a server's own "
            f"pairs at least as fast as its NICs carry the rest: {nvlink_GBps:g} GB/s over "
            f"{g - 1} peers is below {rate / 1e9:.4g} GB/s a pair",
            param="nvlink_GBps",
        )
    return rate


def check_direct_servers(p: int, gpus_per_node: int, nics_per_node: int) -> None:
    """Refuse a server shape the closed form does not cover (:class:`SpecError`): one NIC per
    GPU, whole servers of ``nics_per_node`` on each router of ``p`` endpoints."""
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


def direct_rates(
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
    """The rates of a direct network of ``routers`` routers with ``w`` GPUs each (module
    docstring): ``g`` GPUs a server, router links of ``c`` B/s per cable, ``load`` the most any
    router arc carries under minimal routing per unit of router-pair demand, ``mean_load`` the
    distance bound's ``S / k'`` (0 where the router graph is not regular), ``arcs`` the router
    arcs ``(tail, head, capacity B/s)`` for the router-level LP (HiGHS time limit
    ``time_limit_s``, s)."""
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


def router_arcs(cables: np.ndarray, c: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Both arcs of every router link of a cable-count matrix, with capacity ``cables x c``."""
    tail, head = np.nonzero(cables)
    return tail.astype(np.int64), head.astype(np.int64), cables[tail, head] * c
