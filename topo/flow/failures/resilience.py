"""All-to-all bandwidth under failures: one damaged fabric, or many random failure sets.

:func:`damaged_bandwidth` fails what it is told (:mod:`topo.flow.failures.damage`), sets aside the
servers the damage cuts off (reported, never dropped silently), and measures the all-to-all
among the others: optimally (the maximum concurrent flow, :mod:`topo.flow.door`) or as
routed (ECMP, D-mod-k; :mod:`topo.flow.routing`). :func:`resilience` repeats it for ``trials``
independent random failure sets and summarises the distribution of the all-to-all busbw.
Trial ``i`` is seeded by :func:`topo.flow.seeds.trial_seeds` (child ``(TRIALS, i)`` of
``numpy.random.SeedSequence(seed)``), so runs of different seeds share no trial, and within a
trial the seed's failure and hashing streams are independent (:mod:`topo.flow.seeds`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import networkx as nx
import numpy as np

from topo.errors import InfeasibleError, TopoError
from topo.fabric import require_fabric
from topo.flow.door import METHODS, uniform_flow
from topo.flow.failures.damage import (
    FailureSet,
    disconnected_terminals,
    fail,
    island_sizes,
    without_servers,
)
from topo.flow.failures.trials import TrialFabric
from topo.flow.result import BandwidthResult
from topo.flow.routing import routed_alltoall
from topo.flow.seeds import trial_seeds
from topo.flow.solve.lp import DEFAULT_MAX_VARIABLES, check_solver_limits
from topo.units import Bps_to_GBps
from topo.wording import count

ROUTINGS = ("optimal", "ecmp", "dmodk")

TRIAL_TIME_LIMIT_S = 60.0
"""Default HiGHS time limit per resilience trial (s): past it, the trial counts its certified
bounds (:mod:`topo.flow.bounds.certified`)."""

MAX_TRIALS = 10_000
"""The most failure sets one :func:`resilience` run takes. Its statistics need no more: the
5th percentile of 10,000 trials is the one below which 5% +- 0.44 percentage points of all
failure sets fall (two standard deviations of a binomial fraction, sqrt(0.05 x 0.95 / n)),
and each trial is one LP solve of up to :data:`TRIAL_TIME_LIMIT_S` (10,000 trials of a
16,384-GPU MPFT already run for days)."""

SMALL_STUDY_S = 10.0
"""``topo resilience --workers N`` runs a study's first trial in this process and, when the
others would take less than this (s; the first trial's time times their number), the others
too, saying so (``in_process``; :func:`resilience` ``in_process_below_s``): starting local
Dask workers and shipping the
fabric costs seconds on a 2-core machine, so two workers ran 24 trials on a 2,048-GPU MPFT
(13.7 s in process) in 15.3 s (``benchmarks/README.md``)."""

TRIAL_MAX_VARIABLES = 200_000
"""Default LP limit per resilience trial: exact LPs of this size take seconds to tens of
seconds; larger ones (many failures scattered over a 16,384-GPU MPFT break most symmetry)
report certified bounds instead, so a run of many trials stays bounded in time."""


@dataclass(frozen=True)
class DamagedBandwidth:
    """The all-to-all of a damaged fabric.

    Attributes
    ----------
    report : BandwidthResult
        The all-to-all among the servers still connected, optimal or as routed (``routing``
        says which); it carries the failures in its own ``failures`` field.
    failures : FailureSet
        What failed, and the servers (or host endpoints) it cut off, whose GPUs are out of the
        all-to-all in ``report``.
    routing : str
        ``optimal``, ``ecmp`` or ``dmodk``.
    graph : networkx.Graph
        The fabric the report is about: damaged, cut-off servers removed (the input itself
        when nothing failed).
    """

    report: BandwidthResult
    failures: FailureSet
    routing: str
    graph: nx.Graph = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The report's dict with the failure keys and ``routing`` (rates in GB/s)."""
        return self.report.to_dict()


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
    and the ``named`` elements (see :func:`topo.flow.failures.damage.fail`).

    Parameters
    ----------
    G : networkx.Graph
        The intact fabric (not modified).
    links, switches, seed, named
        The failures (``seed`` also seeds ECMP hashing, from a stream independent of the
        failures': :mod:`topo.flow.seeds`).
    routing : {"optimal", "ecmp", "dmodk"}
        ``optimal``: maximum concurrent flow; the others: :func:`topo.flow.routing.routed_alltoall`.
    flows_per_pair, pxn
        For ``ecmp``/``dmodk`` (see :func:`topo.flow.routing.routed_alltoall`).
    method, max_variables, link_loads, time_limit_s
        For ``optimal`` (see :func:`topo.flow.door.alltoall_bandwidth`).

    Returns
    -------
    DamagedBandwidth

    Raises
    ------
    TopoError
        Bad failure counts or names, an unknown routing.
    SpecError
        An edge of ``G`` without a finite capacity within
        :data:`topo.fabric.CAPACITY_RANGE_Bps` (``.param`` ``G``, naming the edge), or
        ``max_variables`` or ``time_limit_s`` out of range
        (:func:`topo.flow.solve.lp.check_solver_limits`).
    InfeasibleError
        Fewer than two GPUs remain connected; every GPU cut off (no GPU keeps a switch),
        said plainly with the GPU count.
    """
    require_fabric(G)
    check_solver_limits(max_variables, time_limit_s)
    _check_routing(routing)
    if routing == "optimal" and method not in METHODS:
        raise TopoError(f"method must be auto or general, got {method!r}", param="method")
    return _damaged(
        G,
        links=links,
        switches=switches,
        seed=seed,
        named=named,
        routing=routing,
        flows_per_pair=flows_per_pair,
        pxn=pxn,
        method=method,
        max_variables=max_variables,
        link_loads=link_loads,
        time_limit_s=time_limit_s,
    )


def _check_routing(routing: str) -> None:
    if routing not in ROUTINGS:
        raise TopoError(
            f"routing must be one of {', '.join(ROUTINGS)}, got {routing!r}", param="routing"
        )


def _damaged(
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
    """:func:`damaged_bandwidth` on arguments already checked: a study checks the intact
    fabric and the limits once, not once per trial (the capacity check is a pass over every
    edge), and the damaged fabric, ``G`` less some elements, needs no check of its own."""
    H, failures = _damage(G, links, switches, seed, tuple(named))
    if failures.disconnected and not failures.islands:
        raise InfeasibleError(_all_cut_off(G, failures))
    if routing != "optimal":
        hashing = seed if routing == "ecmp" else None  # D-mod-k draws nothing
        routed = routed_alltoall(H, routing, seed=hashing, flows_per_pair=flows_per_pair, pxn=pxn)
        routed = replace(routed, failures=failures)
        return DamagedBandwidth(report=routed, failures=failures, routing=routing, graph=H)
    report = uniform_flow(H, None, method, max_variables, link_loads, time_limit_s)
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
    islands = island_sizes(H)
    H = without_servers(H, cut)
    return H, replace(failures, disconnected=tuple(cut), disconnected_gpus=lost, islands=islands)


def _all_cut_off(G: nx.Graph, failures: FailureSet) -> str:
    """The plain message for damage that leaves no GPU (endpoint) on any switch."""
    leaves = [v for v, k in G.nodes(data="kind") if k == "leaf"]
    dead = set(failures.switches)
    lost = sum(1 for v in leaves if v in dead)
    who = "GPUs" if any(k == "gpu" for _, k in G.nodes(data="kind")) else "endpoints"
    why = (
        f"all {len(leaves):,} leaves failed"
        if leaves and lost == len(leaves)
        else f"{lost:,} of {len(leaves):,} leaves and {count(len(failures.links), 'cable')} failed"
    )
    return (
        f"every {who[:-1]} is disconnected: all {failures.disconnected_gpus:,} {who} lost "
        f"their path to the fabric ({why}); there is no all-to-all to measure"
    )


def _terminals(G: nx.Graph, servers: list[Hashable]) -> int:
    has_gpus = any(k == "gpu" for _, k in G.nodes(data="kind"))
    if not has_gpus:
        return len(servers)
    drop = set(servers)
    return sum(1 for _, d in G.nodes(data=True) if d["kind"] == "gpu" and d["node"] in drop)


STATISTICS = ("min", "p5", "median", "mean", "max")
"""The summary statistics of a resilience run, in column order."""

P5_MIN_TRIALS = 20
"""Fewest trials with a rate for which ``p5`` is given: with ``n`` trials the smallest is
the 1/n quantile of the sample, so below 20 no trial lies at or below the 5th percentile and
numpy's interpolation between the two smallest would be a guess the sample cannot give
(``p5`` is then None, its range left out; ``min`` is the smallest trial)."""

KNOWN_TOL = 1e-9
"""A statistic whose certified range is narrower than this fraction of its upper end is known
(its value is the range's lower end)."""


def resilience_trial(G: nx.Graph, **task: Any) -> DamagedBandwidth | None:
    """One trial of :func:`resilience`: :func:`damaged_bandwidth` ``(G, **task)``, or None when
    it cannot complete (:class:`~topo.errors.InfeasibleError`: fewer than two GPUs connected).
    ``G`` and the limits are taken as :func:`resilience` checked them, once for every trial.

    Parameters
    ----------
    G : networkx.Graph
        The intact fabric.
    **task
        Keyword arguments of :func:`damaged_bandwidth` (``links``, ``seed``, ...).

    Returns
    -------
    DamagedBandwidth or None
    """
    try:
        return _damaged(G, **task)
    except InfeasibleError:
        return None


def summarised_trial(fabric: TrialFabric, task: dict[str, Any]) -> DamagedBandwidth | None:
    """:func:`trial_summary` of :func:`resilience_trial` ``(fabric.G, **task)``, its damaged
    fabric derived from the intact one where it can be (the same result, bit for bit:
    :meth:`topo.flow.failures.trials.TrialFabric.damage`).

    Parameters
    ----------
    fabric : TrialFabric
        The intact fabric, read once for all the trials.
    task : dict
        Keyword arguments of :func:`damaged_bandwidth` (``links``, ``seed``, ...).

    Returns
    -------
    DamagedBandwidth or None
        None when the trial cannot complete (:class:`~topo.errors.InfeasibleError`).
    """
    d = fabric.damage(task)
    if d is None:
        return trial_summary(resilience_trial(fabric.G, **task))
    try:
        report = uniform_flow(
            d.graph,
            None,
            task.get("method", "auto"),
            task.get("max_variables", DEFAULT_MAX_VARIABLES),
            task.get("link_loads", False),
            task.get("time_limit_s"),
            d.known,
        )
    except InfeasibleError:
        return None
    report = replace(report, failures=d.failures)
    return trial_summary(
        DamagedBandwidth(report=report, failures=d.failures, routing="optimal", graph=d.graph)
    )


def check_trials(trials: int) -> None:
    """Refuse a trial count outside ``1 .. MAX_TRIALS`` before any fabric is read or solved.

    Parameters
    ----------
    trials : int
        Random failure sets asked for (``--trials``).

    Raises
    ------
    TopoError
        Naming ``trials`` and :data:`MAX_TRIALS`.
    """
    if not 1 <= trials <= MAX_TRIALS:
        raise TopoError(
            f"trials must be from 1 to {MAX_TRIALS:,}, got {trials:,}: the 5th percentile of "
            f"{MAX_TRIALS:,} trials is known to +-0.44 percentage points, and each trial is one "
            "solve",
            param="trials",
        )


def trial_summary(r: DamagedBandwidth | None) -> DamagedBandwidth | None:
    """What :func:`resilience` keeps of a trial: its report and failures, without the damaged
    graph or the report's per-link detail (``routing``, ``link_load``). Kept whole, a trial
    of a 128-GPU ft2 held 256 kB (296 kB as routed by ECMP); summarised, 4.8 kB (measured
    with ``tracemalloc``, CPython 3.11), so the trials' memory no longer grows with the
    fabric."""
    if r is None:
        return None
    return replace(r, graph=nx.Graph(), report=replace(r.report, routing=None, link_load=None))


def _summarised_trials(
    fabric: TrialFabric,
    tasks: list[dict[str, Any]],
    progress: Callable[[int], None] | None = None,
) -> Iterator[DamagedBandwidth | None]:
    """The default trial map of :func:`resilience`: :func:`serial_trials`, one trial at a time,
    each summarised (:func:`summarised_trial`) before the next starts."""
    for i, task in enumerate(tasks):
        yield summarised_trial(fabric, task)
        if progress is not None:
            progress(i + 1)


TrialMap = Callable[
    [nx.Graph, list[dict[str, Any]], "Callable[[int], None] | None"],
    Iterable["DamagedBandwidth | None"],
]
"""How :func:`resilience` runs its trials: ``(G, tasks, progress)`` to one
:func:`resilience_trial` result per task, in the order of the tasks."""


def serial_trials(
    G: nx.Graph, tasks: list[dict[str, Any]], progress: Callable[[int], None] | None = None
) -> list[DamagedBandwidth | None]:
    """The trials one after the other in this process (the default :data:`TrialMap`).

    Parameters
    ----------
    G : networkx.Graph
        The intact fabric.
    tasks : list of dict
        Keyword arguments of :func:`resilience_trial`, one dict per trial.
    progress : callable, optional
        Called with the number of trials done after each one.

    Returns
    -------
    list of DamagedBandwidth or None
        One per task, in order.
    """
    out = []
    for i, task in enumerate(tasks):
        out.append(resilience_trial(G, **task))
        if progress is not None:
            progress(i + 1)
    return out


@dataclass(frozen=True)
class ResilienceReport:
    """The distribution of the all-to-all busbw over random failure sets.

    Rates in GB/s (nccl-tests' alltoall busbw, ``lambda (n - 1)``, among the GPUs still
    connected in each trial). ``p5`` is the 5th percentile (numpy's linear interpolation).

    A trial whose exact LP was not solved (over the variable limit or past the time limit)
    has only certified bounds: its ``busbw_GBps`` entry is None (unknown) unless they meet
    (within :data:`KNOWN_TOL`), and its bounds are
    in ``lower_bound_busbw_GBps`` and ``upper_bound_busbw_GBps`` (both equal to the value
    for a trial that is known). A statistic is never computed from bounds as if they were
    values: ``min_GBps`` ... ``max_GBps`` are None when it is not known, and
    ``range_GBps[stat]`` always holds ``[low, high]``, the statistic of the trials' lower
    bounds and of their upper bounds. Each statistic is non-decreasing in every trial's
    value (order statistics, their linear interpolation, the mean), so the true one lies in
    that range; when the range is narrower than :data:`KNOWN_TOL` the statistic is known.
    ``intact_busbw_GBps`` is None in the same way when the intact fabric itself is known only
    by bounds (a large Dragonfly or Slim Fly), with its range in ``range_GBps["intact"]``.

    ``exact_trials`` counts the trials whose outcome is known (optimal: solved exactly; as
    routed: every trial, each one's rate being computed from its routes, a value and not a
    bound); ``max_variables`` is the LP limit each trial ran with; ``trials_unroutable``
    counts the as-routed trials in which some pair had no route, so that the all-to-all never
    completes: they have no rate (None in ``busbw_GBps`` and both bound lists, their indices
    in ``unroutable_trials``) and stay out of the statistics, which cover the other
    ``statistics_trials`` trials. When every trial is unroutable, ``min_GBps`` ...
    ``max_GBps`` are None and ``range_GBps`` holds only ``intact``.

    ``trials_with_disconnected`` counts the trials that cut servers off (the most GPUs cut
    off in one: ``max_disconnected_gpus``); ``trials_apart`` those with the optimal routing
    that cut none off but left two servers whose NICs reach no common part of the switches
    (the switches fell apart, or a multi-plane server kept only one plane's cables and another
    lost that one: a host forwards nothing between parts), whose busbw is 0, known exactly.
    Both count among ``exact_trials``.

    ``in_process`` says why a study given Dask workers ran in this process (too small to
    gain from them, :data:`SMALL_STUDY_S`); None when it ran where it was sent.

    ``seed`` is the run's seed; ``trial_seeds[i]`` is trial ``i``'s own
    (:func:`topo.flow.seeds.trial_seeds`): :func:`damaged_bandwidth` with it and the same
    failure counts reproduces that trial.
    """

    fabric: str
    family: str
    routing: str
    trials: int
    fail_links: int
    fail_switches: int
    seed: int
    intact_busbw_GBps: float | None
    busbw_GBps: list[float | None]
    min_GBps: float | None
    p5_GBps: float | None
    median_GBps: float | None
    mean_GBps: float | None
    max_GBps: float | None
    trials_with_disconnected: int
    max_disconnected_gpus: int
    exact_trials: int
    seconds: float
    upper_bound_busbw_GBps: list[float | None]
    max_variables: int
    trials_unroutable: int
    lower_bound_busbw_GBps: list[float | None] = field(default_factory=list)
    range_GBps: dict[str, list[float]] = field(default_factory=dict)
    unroutable_trials: list[int] = field(default_factory=list)
    statistics_trials: int = 0
    trial_seeds: list[int] = field(default_factory=list)
    trials_apart: int = 0
    in_process: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every field, as is (JSON-ready; rates in GB/s; unknown values are None)."""
        return dict(self.__dict__)


def statistics(
    lower: list[float], upper: list[float]
) -> tuple[dict[str, float | None], dict[str, list[float]]]:
    """The summary statistics of trials known only within ``[lower, upper]`` each.

    Parameters
    ----------
    lower, upper : list of float
        Each trial's certified lower and upper bound (GB/s; equal for a trial known exactly).

    Returns
    -------
    (dict, dict)
        For each of :data:`STATISTICS`: its value (GB/s), or None when the trials' bounds
        leave it uncertain by more than :data:`KNOWN_TOL`; and its certified range
        ``[low, high]`` (GB/s).
    """
    lo, hi = np.array(lower), np.array(upper)

    def stat(v: np.ndarray) -> list[float]:
        return [
            float(v.min()),
            float(np.percentile(v, 5)),
            float(np.median(v)),
            float(v.mean()),
            float(v.max()),
        ]

    ranges = {k: [a, b] for k, a, b in zip(STATISTICS, stat(lo), stat(hi), strict=True)}
    values: dict[str, float | None] = {
        k: (a if b - a <= KNOWN_TOL * max(abs(b), 1.0) else None) for k, (a, b) in ranges.items()
    }
    if lo.size < P5_MIN_TRIALS:
        values["p5"] = None
        del ranges["p5"]
    return values, ranges


@dataclass
class _Tally:
    """What the trials of :func:`resilience` found so far."""

    values: list[float | None] = field(default_factory=list)
    lowers: list[float | None] = field(default_factory=list)
    uppers: list[float | None] = field(default_factory=list)
    unroutable: int = 0
    unrouted: list[int] = field(default_factory=list)
    cut_trials: int = 0
    worst_cut: int = 0
    apart: int = 0
    exact: int = 0

    def add(self, r: DamagedBandwidth, ceiling: float = math.inf) -> None:
        """One trial's result; ``ceiling`` (GB/s) caps the upper bound of a trial that cut no
        GPU off: failing cables or switches takes capacity away and keeps the terminals, so
        the rate cannot exceed the intact fabric's (its upper bound)."""
        value = busbw_GBps(r.report)
        self.lowers.append(value)
        if getattr(r.report, "exact", True):
            self.exact += 1
            self.values.append(value)
            self.uppers.append(value)
        else:
            assert isinstance(r.report, BandwidthResult) and r.report.bounds is not None
            upper = Bps_to_GBps(r.report.bounds.upper_Bps * (r.report.gpus - 1))
            if not r.failures.disconnected:
                upper = max(value, min(upper, ceiling))
            met = upper - value <= KNOWN_TOL * max(upper, 1.0)
            self.values.append(value if met else None)
            self.uppers.append(upper)
        if r.failures.disconnected:
            self.cut_trials += 1
            self.worst_cut = max(self.worst_cut, r.failures.disconnected_gpus)

    def add_infeasible(self, routing: str, cut_gpus: int = 0) -> None:
        """A trial that cannot complete. Optimal: fewer than two GPUs left connected
        (``cut_gpus`` of them cut off: a cut-off trial), or, with none cut off, two servers
        left whose NICs reach no common part of the switches (``trials_apart``); its busbw
        0 known exactly. As routed: some pair without an up/down route, so the all-to-all
        never completes; it has no rate, so its entries are None and it stays out of the
        statistics (counted in ``trials_unroutable``, its index in ``unroutable_trials``)."""
        self.exact += 1
        if routing == "optimal":
            self.values.append(0.0)
            self.lowers.append(0.0)
            self.uppers.append(0.0)
            if cut_gpus:
                self.cut_trials += 1
                self.worst_cut = max(self.worst_cut, cut_gpus)
            else:
                self.apart += 1
        else:
            self.unrouted.append(len(self.values))
            self.values.append(None)
            self.lowers.append(None)
            self.uppers.append(None)
            self.unroutable += 1

    def statistics(self) -> tuple[dict[str, float | None], dict[str, list[float]]]:
        """:func:`statistics` over the trials that have a rate (all but the unroutable);
        every statistic None and no ranges when no trial has one."""
        lo = [v for v in self.lowers if v is not None]
        hi = [v for v in self.uppers if v is not None]
        if not lo:
            return dict.fromkeys(STATISTICS), {}
        return statistics(lo, hi)


def busbw_GBps(report: BandwidthResult) -> float:
    """The all-to-all busbw of an optimal or as-routed result, GB/s."""
    return Bps_to_GBps(report.alltoall_busbw_Bps)


def intact_busbw(report: BandwidthResult) -> tuple[float | None, list[float]]:
    """The intact fabric's busbw (GB/s), None when it is known only by bounds further apart
    than :data:`KNOWN_TOL`, and its certified range ``[low, high]`` (GB/s; equal ends when it
    is known)."""
    value = busbw_GBps(report)
    if report.bounds is None:
        return value, [value, value]
    upper = Bps_to_GBps(report.bounds.upper_Bps * (report.gpus - 1))
    if upper - value <= KNOWN_TOL * max(upper, 1.0):
        return value, [value, upper]
    return None, [value, upper]


def _add_failed_trial(
    tally: _Tally, G: nx.Graph, links: int, switches: int, seed: int, routing: str
) -> None:
    """A trial that could not complete, told apart by its damage again (the same seed): every
    GPU cut off is a cut-off trial (0, known) whatever the routing; as routed otherwise, some
    pair had no route."""
    _, cut = _damage(G, links, switches, seed, ())
    every_gpu_cut = bool(cut.disconnected) and not cut.islands
    tally.add_infeasible("optimal" if every_gpu_cut else routing, cut.disconnected_gpus)


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
    trial_map: TrialMap | None = None,
    in_process_below_s: float | None = None,
) -> ResilienceReport:
    """Run ``trials`` random failure sets (trial ``i`` seeded ``trial_seeds(seed, trials)[i]``,
    :func:`topo.flow.seeds.trial_seeds`) and summarise.

    Parameters
    ----------
    G : networkx.Graph
        The intact fabric.
    trials : int
        Number of independent failure sets, >= 1.
    links, switches : int
        Random cables and switches failed in each trial.
    seed : int
        The run's seed, >= 0: it seeds the intact fabric's ECMP hashing and derives every
        trial's seed (:func:`topo.flow.seeds.trial_seeds`; runs of different seeds share no
        trial, the same seed gives the same trials).
    routing, flows_per_pair, pxn, max_variables, time_limit_s
        As for :func:`damaged_bandwidth` (per trial).
    progress : callable, optional
        Called with the number of trials done after each one (for a progress bar).
    trial_map : callable, optional
        Runs the trials: ``trial_map(G, tasks, progress)`` returns, in the order of ``tasks``,
        :func:`resilience_trial` ``(G, **task)`` of each (default: :func:`serial_trials`, in
        this process; :func:`topo.engine.trial_map` runs them on Dask workers).
    in_process_below_s : float, optional
        With ``trial_map``: run the first trial in this process, and the others too when they
        would take under this many seconds (the first trial's time times their number;
        ``topo resilience --workers`` passes :data:`SMALL_STUDY_S`), saying so in
        ``in_process``; ``trial_map`` is then never called. None: every trial goes to
        ``trial_map``.

    Returns
    -------
    ResilienceReport

    Raises
    ------
    TopoError
        ``trials`` outside 1 to :data:`MAX_TRIALS` (:func:`check_trials`), or no failures
        asked for, or as :func:`damaged_bandwidth`.
    """
    check_trials(trials)
    require_fabric(G)
    check_solver_limits(max_variables, time_limit_s)
    if links <= 0 and switches <= 0:
        raise TopoError(
            "give links N and/or switches M (at least one failure)", names=("links", "switches")
        )
    t0 = time.perf_counter()
    _check_routing(routing)
    intact = _damaged(G, routing=routing, seed=seed, flows_per_pair=flows_per_pair, pxn=pxn).report
    tally = _Tally()
    seeds = trial_seeds(seed, trials)
    tasks = [
        dict(
            links=links,
            switches=switches,
            seed=seeds[i],
            routing=routing,
            flows_per_pair=flows_per_pair,
            pxn=pxn,
            max_variables=max_variables,
            time_limit_s=time_limit_s,
        )
        for i in range(trials)
    ]
    results, in_process = _run_trials(G, tasks, progress, trial_map, in_process_below_s)
    intact_value, intact_range = intact_busbw(intact)
    ceiling = intact_range[1] if routing == "optimal" else math.inf
    for i, r in enumerate(results):
        if r is None:
            _add_failed_trial(tally, G, links, switches, seeds[i], routing)
        else:
            tally.add(r, ceiling)
    values, ranges = tally.statistics()
    ranges["intact"] = intact_range
    return ResilienceReport(
        fabric=str(G.graph.get("name", "")),
        family=str(G.graph.get("family", "unknown")),
        routing=routing,
        trials=trials,
        fail_links=links,
        fail_switches=switches,
        seed=seed,
        intact_busbw_GBps=intact_value,
        busbw_GBps=tally.values,
        min_GBps=values["min"],
        p5_GBps=values["p5"],
        median_GBps=values["median"],
        mean_GBps=values["mean"],
        max_GBps=values["max"],
        trials_with_disconnected=tally.cut_trials,
        max_disconnected_gpus=tally.worst_cut,
        exact_trials=tally.exact,
        seconds=time.perf_counter() - t0,
        upper_bound_busbw_GBps=tally.uppers,
        max_variables=max_variables,
        trials_unroutable=tally.unroutable,
        lower_bound_busbw_GBps=tally.lowers,
        range_GBps=ranges,
        unroutable_trials=tally.unrouted,
        statistics_trials=trials - tally.unroutable,
        trials_apart=tally.apart,
        trial_seeds=seeds,
        in_process=in_process,
    )


def _run_trials(
    G: nx.Graph,
    tasks: list[dict[str, Any]],
    progress: Callable[[int], None] | None,
    trial_map: TrialMap | None,
    below_s: float | None,
) -> tuple[Iterable[DamagedBandwidth | None], str | None]:
    """The trials' results in task order, and why they ran in this process although a
    ``trial_map`` was given (None otherwise): with ``below_s``, the first trial runs here,
    and the others too when they would take under ``below_s`` seconds."""
    fabric = TrialFabric(G)
    if trial_map is None:
        return _summarised_trials(fabric, tasks, progress), None
    if below_s is None:
        return trial_map(G, tasks, progress), None
    fabric.read()  # (once for every trial here: not counted as the first trial's time)
    t0 = time.perf_counter()
    first = summarised_trial(fabric, tasks[0])
    took = time.perf_counter() - t0
    if progress is not None:
        progress(1)
    rest = tasks[1:]

    def after_first(done: int) -> None:
        if progress is not None:
            progress(done + 1)

    if not rest:
        return [first], None
    if took * len(rest) < below_s:
        why = (
            f"{len(tasks)} trials of about {took:.2g} s each ran in this process: under "
            f"{below_s:g} s of work, less than starting Dask workers costs"
        )
        return [first, *_summarised_trials(fabric, rest, after_first)], why
    return [first, *trial_map(G, rest, after_first)], None


__all__ = [
    "ROUTINGS",
    "STATISTICS",
    "DamagedBandwidth",
    "ResilienceReport",
    "damaged_bandwidth",
    "TrialMap",
    "intact_busbw",
    "resilience",
    "resilience_trial",
    "serial_trials",
    "summarised_trial",
    "statistics",
    "check_trials",
    "trial_summary",
    "MAX_TRIALS",
    "SMALL_STUDY_S",
]
