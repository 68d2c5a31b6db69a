"""Each job's rate alone and shared: max-min fair by progressive filling.

**Alone**: the job's demand (:func:`topo.place.jobs.job_demand`) on the whole fabric, its
maximum concurrent flow (:func:`topo.flow.shared_flow` with the one demand: servers contracted,
planes folded, as :func:`topo.flow.concurrent_flow` solves an explicit demand). A job cannot
beat its servers' NICs: its rate alone is at most its *NIC bound* (:func:`nic_bound`, each
server's cabled NIC capacity over the bytes it sends, and over the bytes it receives). A job
whose shared rate reaches its NIC bound has that bound as its rate alone, with no LP of its
own. **Shared**: every job is its own commodity on the one fabric, and the rates are max-min
fair in busbw (Bertsekas and Gallager, *Data Networks*, 2nd ed.,
1992, section 6.5.2), found by progressive filling:

1. solve the largest ``lambda`` with every unfrozen job at ``lambda`` and every frozen job at its
   fixed rate (:func:`topo.flow.shared_flow`);
2. for each unfrozen job, try to raise it alone (the other unfrozen jobs held at ``lambda``);
   a job that cannot grow past ``lambda`` (relative tolerance :data:`GROW_TOL`) is frozen at it
   (a job at its NIC bound, which its rate alone cannot pass, or the last one left, without
   the test);
3. repeat until every job is frozen.

No job's rate can be raised without lowering a job whose rate is no larger: the max-min fair
allocation, unique for a convex set of feasible rates (Bertsekas and Gallager, 6.5.2).

**Weighted**: with weights ``w_k`` (a job's ``weight``), the filling raises every unfrozen job
at ``w_k * lambda``: no job's ``rate / weight`` can be raised without lowering one whose
``rate / weight`` is no larger (weighted max-min fairness: the rule of section 6.5.2 applied
to ``rate / weight``; weighted fair queueing's share, Demers, Keshav and Shenker, SIGCOMM 1989).
It is solved as the plain rule on the demands ``w_k D_k``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from topo.errors import TopoError
from topo.fabric import natural_key
from topo.flow import shared_flow
from topo.flow.reduce import contract_servers
from topo.flow.solve import DEFAULT_MAX_VARIABLES
from topo.place.jobs import Job, PlacedJob, job_demand, place_jobs, server_gpus
from topo.traffic import Demand

__all__ = [
    "FAIRNESS",
    "GROW_TOL",
    "ContendedLink",
    "JobRate",
    "PlaceReport",
    "WEIGHTED_FAIRNESS",
    "max_min_rates",
    "nic_bound",
    "place",
]

FAIRNESS = "max-min fair"
"""The fairness rule of the shared rates (all weights 1)."""

WEIGHTED_FAIRNESS = "weighted max-min fair"
"""The fairness rule when a job's weight is not 1."""

GROW_TOL = 1e-6
"""A job whose rate, raised alone, grows by less than this fraction is frozen (HiGHS solves to
about 1e-7 relative)."""


@dataclass(frozen=True)
class JobRate:
    """One job's placement and rates.

    Attributes
    ----------
    name, traffic : str
        As the job names them.
    servers : tuple
        Its servers.
    gpus : int
        Its GPUs.
    alone_busbw_Bps : float
        Its busbw with the fabric to itself (B/s).
    shared_busbw_Bps : float
        Its busbw beside the other jobs, max-min fair (B/s).
    slowdown : float
        ``alone_busbw_Bps / shared_busbw_Bps`` (>= 1 up to solver tolerance).
    weight : float
        Its weight under weighted max-min fairness (1 unless the job says otherwise).
    bottleneck : str
        What binds its shared rate. At its NIC bound (:func:`nic_bound`, within
        :data:`GROW_TOL`): the NICs of the servers that set the bound, ``"storage NICs"`` or
        ``"NICs"`` (no fabric could do better). Below it: the full links it loads at the
        shared solution, ``"storage NICs"``, ``"NICs"``, ``"switch links"``. Kinds joined by
        ``" and "``; ``"none found"`` within solver tolerance.
    bottleneck_servers : tuple
        The servers whose NICs bind it (as ``bottleneck``).
    bottleneck_switch_links : int
        The switch-to-switch link directions it loads to capacity (0 at its NIC bound).
    """

    name: str
    traffic: str
    servers: tuple
    gpus: int
    alone_busbw_Bps: float
    shared_busbw_Bps: float
    slowdown: float
    weight: float = 1.0
    bottleneck: str = "none found"
    bottleneck_servers: tuple = ()
    bottleneck_switch_links: int = 0

    @property
    def shared_aggregate_Bps(self) -> float:
        """Shared busbw times GPUs (B/s): for storage traffic the job's aggregate read or
        write rate."""
        return self.shared_busbw_Bps * self.gpus


@dataclass(frozen=True)
class ContendedLink:
    """A link direction two or more jobs load at the shared solution.

    Attributes
    ----------
    tail, head : str
        The link direction (fabric vertex names).
    capacity_Bps, load_Bps : float
        Its capacity and the jobs' summed load (B/s).
    jobs : tuple of str
        The jobs on it, in job order.
    full : bool
        Loaded to its capacity (within :data:`GROW_TOL`): a link that binds the shares.
    """

    tail: str
    head: str
    capacity_Bps: float
    load_Bps: float
    jobs: tuple[str, ...]
    full: bool


@dataclass(frozen=True)
class PlaceReport:
    """What :func:`place` returns.

    Attributes
    ----------
    fabric : str
        The fabric's name.
    fairness : str
        The fairness rule: :data:`FAIRNESS`, or :data:`WEIGHTED_FAIRNESS` when a job's weight
        is not 1.
    jobs : tuple of JobRate
        In the order given.
    contended_links : tuple of ContendedLink
        Links loaded by two or more jobs at the shared solution found (one optimum among
        possibly many), most loaded first.
    """

    fabric: str
    fairness: str
    jobs: tuple[JobRate, ...]
    contended_links: tuple[ContendedLink, ...]

    def to_dict(self) -> dict[str, Any]:
        """The report as ``topo place --json`` prints it: rates in GB/s (1e9 B/s).

        Returns
        -------
        dict
            ``fabric``, ``fairness``, ``jobs`` (each ``name``, ``traffic``, ``servers``,
            ``gpus``, ``weight``, ``alone_busbw_GBps``, ``shared_busbw_GBps``, ``slowdown``,
            ``shared_aggregate_GBps``, ``bottleneck``, ``bottleneck_servers``,
            ``bottleneck_switch_links``) and
            ``contended_links`` (each ``tail``, ``head``, ``capacity_GBps``, ``load_GBps``,
            ``jobs``, ``full``).
        """
        return {
            "fabric": self.fabric,
            "fairness": self.fairness,
            "jobs": [
                {
                    "name": j.name,
                    "traffic": j.traffic,
                    "servers": list(j.servers),
                    "gpus": j.gpus,
                    "weight": j.weight,
                    "alone_busbw_GBps": j.alone_busbw_Bps / 1e9,
                    "shared_busbw_GBps": j.shared_busbw_Bps / 1e9,
                    "slowdown": j.slowdown,
                    "shared_aggregate_GBps": j.shared_aggregate_Bps / 1e9,
                    "bottleneck": j.bottleneck,
                    "bottleneck_servers": list(j.bottleneck_servers),
                    "bottleneck_switch_links": j.bottleneck_switch_links,
                }
                for j in self.jobs
            ],
            "contended_links": [
                {
                    "tail": c.tail,
                    "head": c.head,
                    "capacity_GBps": c.capacity_Bps / 1e9,
                    "load_GBps": c.load_Bps / 1e9,
                    "jobs": list(c.jobs),
                    "full": c.full,
                }
                for c in self.contended_links
            ],
        }


def place(
    G: nx.Graph,
    jobs: Sequence[Job],
    *,
    seed: int | np.random.Generator | None = 0,
    max_variables: int = DEFAULT_MAX_VARIABLES,
) -> PlaceReport:
    """Place the jobs, then each job's busbw alone and shared ((weighted) max-min fair).

    Parameters
    ----------
    G : networkx.Graph
        A fabric with GPUs (:mod:`topo.fabric`).
    jobs : sequence of Job
        At least one.
    seed : int, numpy.random.Generator or None
        The random stream of the ``fragmented`` policy.
    max_variables : int
        Refuse LPs with more flow variables than this.

    Returns
    -------
    PlaceReport
        Per job its servers, alone and shared busbw (B/s), slowdown, weight and bottleneck;
        the fairness rule; the contended links.

    Raises
    ------
    TopoError
        No job; as :func:`topo.place.jobs.place_jobs` and :func:`topo.place.jobs.job_demand`.
    InfeasibleError, SolverError
        As :func:`topo.flow.shared_flow`.

    Examples
    --------
    >>> from topo.builders import build
    >>> G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    >>> jobs = [Job(n, "storage_read", count=1, storage=(7,)) for n in ("a", "b")]
    >>> r = place(G, jobs)            # both read through storage server 7's one 50 GB/s NIC
    >>> [(j.alone_busbw_Bps / 1e9, round(j.shared_busbw_Bps / 1e9, 3)) for j in r.jobs]
    [(50.0, 25.0), (50.0, 25.0)]

    References
    ----------
    D. Bertsekas and R. Gallager, *Data Networks*, 2nd ed., Prentice Hall, 1992, section 6.5.2.
    """
    if not jobs:
        raise TopoError("no jobs to place")
    placed = place_jobs(G, jobs, seed=seed)
    gpus = server_gpus(G)
    demands = [job_demand(G, p, gpus) for p in placed]
    storage = {s for p in placed for s in p.job.storage}  # may be hosts without GPUs
    nic = {h.id: sum(h.attach.values()) for h in contract_servers(G, keep=storage)[0]}
    bound = [nic_bound(d, nic) for d in demands]
    weights = [p.job.weight for p in placed]
    rates, loads = max_min_rates(G, demands, max_variables, bound, weights)
    alone = [
        b
        if s >= b * (1 - GROW_TOL)
        else shared_flow(G, [d], [None], max_variables=max_variables).theta
        for d, b, s in zip(demands, bound, rates, strict=True)
    ]
    necks = [
        _nic_neck(p, d, nic, b) if s >= b * (1 - GROW_TOL) else _link_neck(G, p, load, loads)
        for p, d, b, s, load in zip(placed, demands, bound, rates, loads, strict=True)
    ]
    out = tuple(_rate(p, a, s, n) for p, a, s, n in zip(placed, alone, rates, necks, strict=True))
    return PlaceReport(
        fabric=str(G.graph.get("name", "")),
        fairness=FAIRNESS if all(w == 1.0 for w in weights) else WEIGHTED_FAIRNESS,
        jobs=out,
        contended_links=_contended(G, [p.job.name for p in placed], loads),
    )


def max_min_rates(
    G: nx.Graph,
    demands: Sequence[Demand],
    max_variables: int = DEFAULT_MAX_VARIABLES,
    ceiling: Sequence[float] | None = None,
    weights: Sequence[float] | None = None,
) -> tuple[list[float], tuple[dict[tuple[str, str], float], ...]]:
    """(Weighted) max-min fair rates of the demands as commodities, by progressive filling.

    Parameters
    ----------
    G : networkx.Graph
        A fabric.
    demands : sequence of Demand
        One per job.
    max_variables : int
        As :func:`topo.flow.shared_flow`.
    ceiling : sequence of float, optional
        An upper bound on each demand's rate alone (B/s per byte of demand: the rate alone
        itself, or :func:`nic_bound`): a demand that reaches it cannot grow further and is
        frozen without a test LP.
    weights : sequence of float, optional
        Each demand's weight (> 0; all 1 when not given): the rates are max-min fair in
        ``rate / weight`` (module notes).

    Returns
    -------
    (list of float, tuple of dict)
        Each demand's rate (B/s per byte of demand) and its link loads (B/s) at the solution.

    Raises
    ------
    TopoError
        Weights not one per demand, or one not > 0; as :func:`topo.flow.shared_flow`.
    InfeasibleError, SolverError
        As :func:`topo.flow.shared_flow`.

    Examples
    --------
    >>> from topo.builders import build
    >>> from topo.traffic import Demand
    >>> G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    >>> a = Demand("server", (0, 1), {(0, 1): 1.0})    # node0's NIC, shared with b
    >>> b = Demand("server", (0, 2), {(0, 2): 1.0})
    >>> c = Demand("server", (4, 5), {(4, 5): 1.0})    # alone on leaf2
    >>> [round(x / 1e9, 3) for x in max_min_rates(G, [a, b, c])[0]]
    [25.0, 25.0, 50.0]
    """
    if weights is not None and any(w != 1.0 for w in weights):
        if len(weights) != len(demands) or not all(w > 0 for w in weights):
            raise TopoError("weights must be one per demand, each > 0")
        scaled = [_scaled(d, w) for d, w in zip(demands, weights, strict=True)]
        cap = None if ceiling is None else [c / w for c, w in zip(ceiling, weights, strict=True)]
        lams, loads = max_min_rates(G, scaled, max_variables, cap)
        return [lam * w for lam, w in zip(lams, weights, strict=True)], loads
    rates: list[float | None] = [None] * len(demands)
    while True:
        r = shared_flow(G, demands, rates, max_variables=max_variables)
        lam = r.theta
        free = [k for k, x in enumerate(rates) if x is None]
        frozen = []
        for k in free:
            if len(free) == 1 or (ceiling is not None and lam >= ceiling[k] * (1 - GROW_TOL)):
                frozen.append(k)  # (the LP just solved was its test; or it is at its ceiling)
                continue
            trial = [lam if (x is None and i != k) else x for i, x in enumerate(rates)]
            grown = shared_flow(G, demands, trial, max_variables=max_variables).theta
            if grown <= lam * (1 + GROW_TOL):
                frozen.append(k)
        for k in frozen or free:  # (none frozen: tolerance; freeze all at lambda)
            rates[k] = lam
        if all(x is not None for x in rates):
            return [float(x) for x in rates if x is not None], r.link_load


def _scaled(d: Demand, w: float) -> Demand:
    """The demand with every entry times ``w``: its rate is the demand's over ``w``."""
    assert d.entries is not None
    return Demand(d.level, d.terminals, {ab: x * w for ab, x in d.entries.items()}, name=d.name)


def nic_bound(demand: Demand, nic_Bps: Mapping[Hashable, float]) -> float:
    """The most a server-level demand can flow at on any fabric: no server sends (receives)
    more than its NICs carry.

    Parameters
    ----------
    demand : Demand
        Server level, explicit entries (bytes per ordered pair of servers).
    nic_Bps : mapping
        Server id -> its cabled NIC capacity (B/s per direction; each NIC the tighter of its
        cable and its PCIe side, as :func:`topo.flow.reduce.contract_servers` counts it).

    Returns
    -------
    float
        ``min`` over servers ``s`` of ``nic_Bps[s] / out(s)`` and ``nic_Bps[s] / in(s)``
        (B/s per byte of demand), ``out(s)`` and ``in(s)`` the bytes ``s`` sends to and
        receives from other servers; ``inf`` for a demand with no such bytes.

    Examples
    --------
    >>> from topo.traffic import Demand
    >>> d = Demand("server", (0, 1, 2), {(0, 1): 1.0, (0, 2): 1.0, (1, 2): 0.5})
    >>> nic_bound(d, {0: 50e9, 1: 50e9, 2: 50e9}) / 1e9   # server 0 sends 2 bytes at 50 GB/s
    25.0

    References
    ----------
    The cut around one server (F. Shahrokhi and D. W. Matula, J. ACM 37(2), 1990: a concurrent
    flow's rate is at most any cut's capacity over the demand across it).
    """
    assert demand.entries is not None
    out: dict[Hashable, float] = {}
    into: dict[Hashable, float] = {}
    for (a, b), x in demand.entries.items():
        if a != b and x > 0:
            out[a] = out.get(a, 0.0) + x
            into[b] = into.get(b, 0.0) + x
    best = float("inf")
    for side in (out, into):
        for s, x in side.items():
            best = min(best, float(nic_Bps.get(s, 0.0)) / x)
    return best


def _nic_neck(
    p: PlacedJob, demand: Demand, nic: Mapping[Hashable, float], bound: float
) -> tuple[str, tuple, int]:
    """The servers whose NICs set the job's NIC bound (within :data:`GROW_TOL`)."""
    assert demand.entries is not None
    side: dict[tuple[Hashable, int], float] = {}
    for (a, b), x in demand.entries.items():
        side[(a, 0)] = side.get((a, 0), 0.0) + x
        side[(b, 1)] = side.get((b, 1), 0.0) + x
    found = {s for (s, _), x in side.items() if nic.get(s, 0.0) / x <= bound * (1 + GROW_TOL)}
    return _kinds(p, found, 0), tuple(sorted(found, key=natural_key)), 0


def _kinds(p: PlacedJob, servers: set, switch_links: int) -> str:
    kinds = []
    if servers & set(p.job.storage):
        kinds.append("storage NICs")
    if servers - set(p.job.storage):
        kinds.append("NICs")
    if switch_links:
        kinds.append("switch links")
    return " and ".join(kinds) or "none found"


def _link_neck(
    G: nx.Graph,
    p: PlacedJob,
    load: dict[tuple[str, str], float],
    loads: Sequence[dict[tuple[str, str], float]],
) -> tuple[str, tuple, int]:
    """The full link directions (within :data:`GROW_TOL`) the job loads: what they are, the
    servers whose NIC cables they are, and how many are switch links."""
    total: dict[tuple[str, str], float] = {}
    for other in loads:
        for uv, x in other.items():
            if uv in load:
                total[uv] = total.get(uv, 0.0) + x
    nodes = G.nodes
    found: set = set()
    switch_links = 0
    for (u, v), x in load.items():
        cap = float(G.edges[u, v]["capacity"])
        if x <= 1e-9 * cap or total[(u, v)] < cap * (1 - GROW_TOL):
            continue
        server = nodes[u].get("node", nodes[v].get("node"))
        if server is None:
            switch_links += 1
        else:
            found.add(server)
    return _kinds(p, found, switch_links), tuple(sorted(found, key=natural_key)), switch_links


def _rate(p: PlacedJob, alone: float, shared: float, neck: tuple[str, tuple, int]) -> JobRate:
    return JobRate(
        name=p.job.name,
        traffic=p.job.traffic,
        servers=p.servers,
        gpus=p.gpus,
        alone_busbw_Bps=alone,
        shared_busbw_Bps=shared,
        slowdown=alone / shared if shared > 0 else float("inf"),
        weight=p.job.weight,
        bottleneck=neck[0],
        bottleneck_servers=neck[1],
        bottleneck_switch_links=neck[2],
    )


def _contended(
    G: nx.Graph, names: list[str], loads: Sequence[dict[tuple[str, str], float]]
) -> tuple[ContendedLink, ...]:
    """Link directions loaded (above 1e-9 of capacity) by two or more jobs."""
    on: dict[tuple[str, str], list[int]] = {}
    for k, load in enumerate(loads):
        for uv, x in load.items():
            if x > 1e-9 * float(G.edges[uv]["capacity"]):
                on.setdefault(uv, []).append(k)
    out: list[ContendedLink] = []
    for (u, v), ks in on.items():
        if len(ks) < 2:
            continue
        cap = float(G.edges[u, v]["capacity"])
        total = sum(loads[k][(u, v)] for k in ks)
        jobs = tuple(names[k] for k in ks)
        out.append(ContendedLink(u, v, cap, total, jobs, full=total >= cap * (1 - GROW_TOL)))
    out.sort(key=lambda c: (-c.load_Bps / c.capacity_Bps, c.tail, c.head))
    return tuple(out)
