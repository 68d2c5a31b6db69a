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
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from topo.errors import InfeasibleError, TopoError
from topo.flow.alltoall import alltoall_bandwidth
from topo.flow.failures import FailureSet, disconnected_terminals, fail, without_servers
from topo.flow.lp import DEFAULT_MAX_VARIABLES
from topo.flow.routing import routed_alltoall

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
    report : BandwidthReport or RoutedReport
        The all-to-all among the servers still connected (``routing`` says which kind).
    failures : FailureSet
        What failed.
    disconnected : list
        Servers (or host endpoints) cut off from the rest; their GPUs are out of the
        all-to-all in ``report``.
    disconnected_gpus : int
        GPUs (or endpoints) in those servers.
    routing : str
        ``optimal``, ``ecmp`` or ``dmodk``.
    graph : networkx.Graph
        The damaged fabric the report is about (cut-off servers removed).
    """

    report: Any
    failures: FailureSet
    disconnected: list[Hashable]
    disconnected_gpus: int
    routing: str
    graph: nx.Graph = field(repr=False, compare=False, default=None)  # type: ignore[assignment]

    def to_dict(self) -> dict[str, Any]:
        d = self.report.to_dict()
        d.update(self.failures.to_dict())
        d["disconnected"] = [str(s) for s in self.disconnected]
        d["disconnected_gpus"] = self.disconnected_gpus
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
    H, failures = fail(G, links=links, switches=switches, seed=seed, named=named)
    kept, cut = disconnected_terminals(H) if not failures.empty else ([], [])
    lost = 0
    if cut:
        lost = _terminals(H, cut)
        H = without_servers(H, cut)
    if routing == "optimal":
        report: Any = alltoall_bandwidth(
            H,
            method=method,
            max_variables=max_variables,
            link_loads=link_loads,
            time_limit_s=time_limit_s,
        )
    else:
        report = routed_alltoall(H, routing, seed=seed, flows_per_pair=flows_per_pair, pxn=pxn)
    return DamagedBandwidth(report, failures, cut, lost, routing, H)


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
    (``exact_trials`` says how many were exact; ``extra["upper_bound_busbw_GBps"]`` holds each
    trial's upper bound, equal to its value when exact).
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
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "extra"}
        d.update(self.extra)
        return d


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
    values: list[float] = []
    uppers: list[float] = []
    unroutable = 0
    cut_trials = 0
    worst_cut = 0
    exact = 0
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
            values.append(float(r.report.alltoall_busbw_GBps))
            if getattr(r.report, "exact", True):
                exact += 1
                uppers.append(values[-1])
            else:
                uppers.append(float(r.report.extra["upper_bound_busbw_GBps"]))
            if r.disconnected:
                cut_trials += 1
                worst_cut = max(worst_cut, r.disconnected_gpus)
        except InfeasibleError:
            # Optimal: fewer than two GPUs left connected. As routed: some pair has no
            # up/down route, so the all-to-all cannot complete on these paths.
            values.append(0.0)
            uppers.append(0.0)
            if routing == "optimal":
                cut_trials += 1
            else:
                unroutable += 1
        if progress is not None:
            progress(i + 1)
    v = np.array(values)
    return ResilienceReport(
        fabric=str(G.graph.get("name", "")),
        family=str(G.graph.get("family", "unknown")),
        routing=routing,
        trials=trials,
        fail_links=links,
        fail_switches=switches,
        seed=seed,
        intact_busbw_GBps=float(intact.alltoall_busbw_GBps),
        busbw_GBps=values,
        min_GBps=float(v.min()),
        p5_GBps=float(np.percentile(v, 5)),
        median_GBps=float(np.median(v)),
        mean_GBps=float(v.mean()),
        max_GBps=float(v.max()),
        trials_with_disconnected=cut_trials,
        max_disconnected_gpus=worst_cut,
        exact_trials=exact,
        seconds=time.perf_counter() - t0,
        extra={
            "upper_bound_busbw_GBps": uppers,
            "max_variables": max_variables,
            "trials_unroutable": unroutable,
        },
    )


__all__ = [
    "ROUTINGS",
    "DamagedBandwidth",
    "ResilienceReport",
    "damaged_bandwidth",
    "resilience",
]
