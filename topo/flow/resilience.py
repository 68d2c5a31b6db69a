"""All-to-all bandwidth under failures: one damaged fabric, or many random failure sets.

:func:`damaged_bandwidth` fails what it is told (:mod:`topo.flow.failures`), sets aside the
servers the damage cuts off (reported, never dropped silently), and measures the all-to-all
among the others: optimally (the maximum concurrent flow, :mod:`topo.flow.alltoall`) or as
routed (ECMP, D-mod-k; :mod:`topo.flow.routing`). :func:`resilience` repeats it for ``trials``
independent random failure sets (seeds ``seed, seed + 1, ...``) and summarises the
distribution of the all-to-all busbw.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import networkx as nx
import numpy as np

from topo.errors import InfeasibleError, TopoError
from topo.flow.alltoall import alltoall_bandwidth
from topo.flow.failures import FailureSet, disconnected_terminals, fail, without_servers
from topo.flow.lp import DEFAULT_MAX_VARIABLES
from topo.flow.result import BandwidthResult
from topo.flow.routing import RoutedReport, routed_alltoall
from topo.units import Bps_to_GBps

ROUTINGS = ("optimal", "ecmp", "dmodk")

TRIAL_TIME_LIMIT_S = 60.0
"""Default HiGHS time limit per resilience trial (s): past it, the trial counts its certified
bounds (:mod:`topo.flow.bounds`)."""

TRIAL_MAX_VARIABLES = 200_000
"""Default LP limit per resilience trial: exact LPs of this size take seconds to tens of
seconds; larger ones (many failures scattered over a 16,384-GPU MPFT break most symmetry)
report certified bounds instead, so a run of many trials stays bounded in time."""


@dataclass(frozen=True)
class DamagedBandwidth:
    """The all-to-all of a damaged fabric.

    Attributes
    ----------
    report : BandwidthResult or RoutedReport
        The all-to-all among the servers still connected (``routing`` says which kind). An
        optimal result carries the failures in its own ``failures`` field.
    failures : FailureSet
        What failed, and the servers (or host endpoints) it cut off, whose GPUs are out of the
        all-to-all in ``report``.
    routing : str
        ``optimal``, ``ecmp`` or ``dmodk``.
    graph : networkx.Graph
        The fabric the report is about: damaged, cut-off servers removed (the input itself
        when nothing failed).
    """

    report: BandwidthResult | RoutedReport
    failures: FailureSet
    routing: str
    graph: nx.Graph = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The report's dict with the failure keys and ``routing`` (rates in GB/s)."""
        if isinstance(self.report, BandwidthResult):
            return self.report.to_dict()
        d = self.report.to_dict()
        d.update(self.failures.to_dict())
        d["routing"] = self.routing
        return d


def damaged_bandwidth(
    G: nx.Graph,
    *,
    links: int = 0,
    switches: int = 0,
    seed: int = 0,
    named: Iterable[str] = (),
    routing: str = "optimal",
    flows_per_pair: int = 1,
    pxn: bool = True,
    method: str = "auto",
    max_variables: int = DEFAULT_MAX_VARIABLES,
    link_loads: bool = False,
    time_limit_s: float | None = None,
) -> DamagedBandwidth:
    """All-to-all bandwidth after failing ``links`` random cables, ``switches`` random switches
    and the ``named`` elements (see :func:`topo.flow.failures.fail`).

    Parameters
    ----------
    G : networkx.Graph
        The intact fabric (not modified).
    links, switches, seed, named
        The failures (``seed`` also seeds ECMP hashing).
    routing : {"optimal", "ecmp", "dmodk"}
        ``optimal``: maximum concurrent flow; the others: :func:`topo.flow.routing.routed_alltoall`.
    flows_per_pair, pxn
        For ``ecmp``/``dmodk`` (see :func:`topo.flow.routing.routed_alltoall`).
    method, max_variables, link_loads, time_limit_s
        For ``optimal`` (see :func:`topo.flow.alltoall.alltoall_bandwidth`).

    Returns
    -------
    DamagedBandwidth

    Raises
    ------
    TopoError
        Bad failure counts or names, an unknown routing.
    InfeasibleError
        Fewer than two GPUs remain connected.
    """
    if routing not in ROUTINGS:
        raise TopoError(f"--routing must be one of {', '.join(ROUTINGS)}, got {routing!r}")
    H, failures = _damage(G, links, switches, seed, tuple(named))
    if routing != "optimal":
        routed = routed_alltoall(H, routing, seed=seed, flows_per_pair=flows_per_pair, pxn=pxn)
        return DamagedBandwidth(report=routed, failures=failures, routing=routing, graph=H)
    report = alltoall_bandwidth(
        H,
        method=method,
        max_variables=max_variables,
        link_loads=link_loads,
        time_limit_s=time_limit_s,
    )
    report = replace(report, failures=failures)
    return DamagedBandwidth(report=report, failures=failures, routing=routing, graph=H)


def _damage(
    G: nx.Graph, links: int, switches: int, seed: int, named: tuple[str, ...]
) -> tuple[nx.Graph, FailureSet]:
    """The damaged fabric without the servers it cuts off, and what failed and was cut off.

    Nothing to fail: the fabric itself (no copy) and an empty failure set.
    """
    if not (links or switches or named):
        return G, FailureSet()
    H, failures = fail(G, links=links, switches=switches, seed=seed, named=named)
    if failures.empty:
        return H, failures
    _, cut = disconnected_terminals(H)
    if not cut:
        return H, failures
    lost = _terminals(H, cut)
    H = without_servers(H, cut)
    return H, replace(failures, disconnected=tuple(cut), disconnected_gpus=lost)


def _terminals(G: nx.Graph, servers: list[Hashable]) -> int:
    has_gpus = any(k == "gpu" for _, k in G.nodes(data="kind"))
    if not has_gpus:
        return len(servers)
    drop = set(servers)
    return sum(1 for _, d in G.nodes(data=True) if d["kind"] == "gpu" and d["node"] in drop)


@dataclass(frozen=True)
class ResilienceReport:
    """The distribution of the all-to-all busbw over random failure sets.

    Rates in GB/s (nccl-tests' alltoall busbw, ``lambda (n - 1)``, among the GPUs still
    connected in each trial). ``p5`` is the 5th percentile (numpy's linear interpolation).
    A trial whose exact LP exceeds the variable limit counts its certified lower bound
    (``exact_trials`` says how many were exact; ``upper_bound_busbw_GBps`` holds each
    trial's upper bound, equal to its value when exact). ``max_variables`` is the LP limit
    each trial ran with; ``trials_unroutable`` counts the as-routed trials in which some pair
    had no route (counted as 0).
    """

    fabric: str
    family: str
    routing: str
    trials: int
    fail_links: int
    fail_switches: int
    seed: int
    intact_busbw_GBps: float
    busbw_GBps: list[float]
    min_GBps: float
    p5_GBps: float
    median_GBps: float
    mean_GBps: float
    max_GBps: float
    trials_with_disconnected: int
    max_disconnected_gpus: int
    exact_trials: int
    seconds: float
    upper_bound_busbw_GBps: list[float]
    max_variables: int
    trials_unroutable: int

    def to_dict(self) -> dict[str, Any]:
        """Every field, as is (JSON-ready; rates in GB/s)."""
        return dict(self.__dict__)


@dataclass
class _Tally:
    """What the trials of :func:`resilience` found so far."""

    values: list[float] = field(default_factory=list)
    uppers: list[float] = field(default_factory=list)
    unroutable: int = 0
    cut_trials: int = 0
    worst_cut: int = 0
    exact: int = 0

    def add(self, r: DamagedBandwidth) -> None:
        """One trial's result."""
        self.values.append(busbw_GBps(r.report))
        if getattr(r.report, "exact", True):
            self.exact += 1
            self.uppers.append(self.values[-1])
        else:
            assert isinstance(r.report, BandwidthResult) and r.report.bounds is not None
            upper = r.report.bounds.upper_Bps * (r.report.gpus - 1)
            self.uppers.append(Bps_to_GBps(upper))
        if r.failures.disconnected:
            self.cut_trials += 1
            self.worst_cut = max(self.worst_cut, r.failures.disconnected_gpus)

    def add_infeasible(self, routing: str, cut_gpus: int = 0) -> None:
        """A trial that cannot complete: fewer than two GPUs left connected (optimal), or some
        pair without an up/down route (as routed)."""
        self.values.append(0.0)
        self.uppers.append(0.0)
        if routing == "optimal":
            self.cut_trials += 1
            self.worst_cut = max(self.worst_cut, cut_gpus)
        else:
            self.unroutable += 1


def busbw_GBps(report: BandwidthResult | RoutedReport) -> float:
    """The all-to-all busbw of an optimal or as-routed report, GB/s."""
    if isinstance(report, BandwidthResult):
        return Bps_to_GBps(report.alltoall_busbw_Bps)
    return float(report.alltoall_busbw_GBps)


def resilience(
    G: nx.Graph,
    *,
    trials: int,
    links: int = 0,
    switches: int = 0,
    seed: int = 0,
    routing: str = "optimal",
    flows_per_pair: int = 1,
    pxn: bool = True,
    max_variables: int = TRIAL_MAX_VARIABLES,
    time_limit_s: float | None = TRIAL_TIME_LIMIT_S,
    progress: Callable[[int], None] | None = None,
) -> ResilienceReport:
    """Run ``trials`` random failure sets (seeds ``seed .. seed + trials - 1``) and summarise.

    Parameters
    ----------
    G : networkx.Graph
        The intact fabric.
    trials : int
        Number of independent failure sets, >= 1.
    links, switches : int
        Random cables and switches failed in each trial.
    seed : int
        Seed of the first trial.
    routing, flows_per_pair, pxn, max_variables, time_limit_s
        As for :func:`damaged_bandwidth` (per trial).
    progress : callable, optional
        Called with the number of trials done after each one (for a progress bar).

    Returns
    -------
    ResilienceReport

    Raises
    ------
    TopoError
        ``trials < 1``, or no failures asked for, or as :func:`damaged_bandwidth`.
    """
    if trials < 1:
        raise TopoError(f"--trials must be >= 1, got {trials}")
    if links <= 0 and switches <= 0:
        raise TopoError("give --fail-links N and/or --fail-switches M (at least one failure)")
    t0 = time.perf_counter()
    intact = damaged_bandwidth(
        G, routing=routing, seed=seed, flows_per_pair=flows_per_pair, pxn=pxn
    ).report
    tally = _Tally()
    for i in range(trials):
        try:
            r = damaged_bandwidth(
                G,
                links=links,
                switches=switches,
                seed=seed + i,
                routing=routing,
                flows_per_pair=flows_per_pair,
                pxn=pxn,
                max_variables=max_variables,
                time_limit_s=time_limit_s,
            )
            tally.add(r)
        except InfeasibleError:
            # The trial's damage again (the same seed), for the GPUs it cut off.
            _, cut = _damage(G, links, switches, seed + i, ())
            tally.add_infeasible(routing, cut.disconnected_gpus)
        if progress is not None:
            progress(i + 1)
    v = np.array(tally.values)
    return ResilienceReport(
        fabric=str(G.graph.get("name", "")),
        family=str(G.graph.get("family", "unknown")),
        routing=routing,
        trials=trials,
        fail_links=links,
        fail_switches=switches,
        seed=seed,
        intact_busbw_GBps=busbw_GBps(intact),
        busbw_GBps=tally.values,
        min_GBps=float(v.min()),
        p5_GBps=float(np.percentile(v, 5)),
        median_GBps=float(np.median(v)),
        mean_GBps=float(v.mean()),
        max_GBps=float(v.max()),
        trials_with_disconnected=tally.cut_trials,
        max_disconnected_gpus=tally.worst_cut,
        exact_trials=tally.exact,
        seconds=time.perf_counter() - t0,
        upper_bound_busbw_GBps=tally.uppers,
        max_variables=max_variables,
        trials_unroutable=tally.unroutable,
    )


__all__ = [
    "ROUTINGS",
    "DamagedBandwidth",
    "ResilienceReport",
    "damaged_bandwidth",
    "resilience",
]
