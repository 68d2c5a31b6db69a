"""The cheapest fabric for N GPUs, and each family's ceiling: one integer program per family.

Every family is a small integer linear program (pulp, solved by HiGHS) over the design choices
that the builders of :mod:`topo.builders` take, so a solution can be built, counted and priced
(``check=True`` does it). Notation: ``k`` switch radix, ``E`` endpoints per plane (whole
servers: ``ceil(N/gpus_per_node)`` servers, each with ``nics_per_node`` NICs), ``R`` the largest
oversubscription allowed, ``W`` the switch price, ``c_o`` an optical cable, ``c_e`` an
endpoint cable.

The programs themselves, family by family, are in :mod:`topo.cost.programs`; this module
reads the prices, solves each family's program (or counts the three-tier rail-optimised
designs, :data:`RAIL3_FAMILIES`), prices and, with ``check=True``, builds the solution.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from topo.builders import fabric_counts, max_gpus
from topo.builders.hpn import HPN_PORTS, hpn_counts
from topo.builders.pods import pod_counts
from topo.builders.railonly import rail_only_counts
from topo.cost.bom import CostReport, cables_from_counts, cost_from_counts
from topo.cost.prices import PriceBook, load_prices
from topo.cost.programs import (
    DEFAULT_PLAN_FAMILIES,
    PLAN_FAMILIES,
    NoDesign,
    PlanInputs,
    binding_rows,
    family_program,
    solution_value,
    solve_program,
)
from topo.errors import SolverError, SpecError
from topo.spec import FabricSpec, ServerSpec, SwitchSpec, as_int

__all__ = [
    "DEFAULT_PLAN_FAMILIES",
    "MAX_CHECK_GPUS",
    "PLAN_FAMILIES",
    "RAIL3_FAMILIES",
    "THREE_TIER_FAMILIES",
    "Ceiling",
    "PlanRow",
    "max_gpus_plan",
    "plan",
]

RAIL3_FAMILIES = ("mpft3", "mrft3")
"""The three-tier rail-optimised designs of :func:`plan`: no program, the counts of
:func:`topo.builders.pods.pod_counts` for the GPUs asked (non-blocking)."""

RULE_FAMILIES = ("rail-only", "hpn")
"""Designs of :func:`plan` whose counts their builder's rule fixes (no program): rail-only
(non-blocking rails) and one HPN pod."""

THREE_TIER_FAMILIES = ("ft3", "mpft3", "mrft3")
"""Families defined by a third switch tier (a core layer above pods of leaves and spines): a
design of theirs without one is degenerate (:attr:`PlanRow.degenerate`)."""

MAX_CHECK_GPUS = 70_000
"""Largest plan whose designs ``check=True`` counts and :func:`topo.cost.plan_bandwidth.
with_bandwidth` builds and solves (a fat tree of it: about 2 s and 1 GB)."""


@dataclass(frozen=True)
class PlanRow:
    """The cheapest design of one family for the GPUs asked (or why there is none).

    Attributes
    ----------
    family : str
    feasible : bool
    cost_usd, cost_per_endpoint_usd : float or None
        US dollars (None if infeasible).
    tiers, planes, switches, links, endpoints : int or None
        Switch tiers (routers of Dragonfly and Slim Fly count as one), planes, switches,
        switch-to-switch cables, endpoints (NICs on the fabric).
    gpus : int
        GPUs asked for, rounded up to whole servers.
    binding : str
        The constraints that hold with equality at the optimum (what stops it being cheaper),
        or, if infeasible, the limit that cannot be met.
    design : dict
        The builder's arguments for this design (``family`` plus keyword arguments of
        :func:`topo.builders.build`).
    status : str
        ``optimal``, ``infeasible``, ``time limit``, ``not solved`` (HiGHS stopped without a
        proven optimum before the time limit) or ``solver error: ...``.
    checked : bool or None
        True if the builder's counts of the design (switches, switch-to-switch links; by
        :func:`topo.builders.fabric_counts`, no graph) agree with the program's; None if not
        checked (``check=False`` or larger than :data:`MAX_CHECK_GPUS`).
    solve_seconds : float
        Time to build and solve the program, seconds.
    bom : list of dict
        The bill of materials (:class:`topo.cost.bom.BomLine` as dicts; empty if infeasible).
    alltoall_busbw_GBps : float or None
        The design's exact all-to-all busbw per GPU (nccl-tests' ``alltoall_perf`` busbw, GB/s)
        by the flow solver on the built design (:func:`topo.cost.plan_bandwidth.
        with_bandwidth`); None when not solved or only bounds are known.
    alltoall_lower_busbw_GBps, alltoall_upper_busbw_GBps : float or None
        The certified bounds on it when only they are known (never a value), else None.
    alltoall_method : str or None
        How it was found (:attr:`topo.flow.BandwidthResult.method`: ``reduced``, ``general``,
        ``certified``, ``bounds``); None when not solved.
    alltoall_note : str or None
        Why it was not solved (nothing built, too large, the solver's refusal).
    cost_per_GBps_usd : float or None
        ``cost_usd`` over the all-to-all bandwidth of all its GPUs (``gpus`` x busbw), US$ per
        GB/s; None unless the busbw is exact.
    alltoall_gpus : int or None
        GPUs of the fabric the all-to-all figures are for: ``gpus`` for the fat trees; for
        Slim Fly and Dragonfly the design with every router holding its
        ``endpoints_per_router`` (the symmetric design the closed form of
        :mod:`topo.flow.routing.direct` solves exactly), so at least ``gpus``.
    routed_busbw_GBps : dict of str to float
        The all-to-all busbw per GPU (GB/s) under each routing the family is deployed with:
        ``ecmp`` (hashed, seed 0, one flow per GPU pair, :func:`topo.flow.routing.
        routed_alltoall`) for the fat trees, rail-only and HPN; ``minimal``, ``valiant`` and
        ``ugal`` for Slim Fly and Dragonfly. Empty when not solved.
    deployed_routing : str or None
        The routing the family is rated under by default: ``ecmp``, or ``ugal`` (the better
        of minimal and Valiant) for Slim Fly and Dragonfly.
    deployed_busbw_GBps : float or None
        ``routed_busbw_GBps[deployed_routing]``, GB/s.
    deployed_cost_per_GBps_usd : float or None
        ``cost_usd`` over ``gpus`` x ``deployed_busbw_GBps``, US$ per GB/s.
    rated_by : str or None
        The rating :func:`topo.cost.plan_bandwidth.rank_plan` ranked and priced this row by:
        the deployed routing's name or ``ideal`` (the max concurrent flow); None before.
    degenerate : str or None
        Why the design is not what the family's name says, when it is not: a family of
        :data:`THREE_TIER_FAMILIES` whose GPUs fit one pod (``(k/2)^2`` endpoints a plane at
        ``R = 1``; Al-Fares et al., SIGCOMM 2008) has no core layer, so it is a two-layer
        design or one switch. None otherwise.
    routed_note : str or None
        Why ``routed_busbw_GBps`` is empty although the design was built or rated: the
        deployed routing's model refused it (its one-line reason). None otherwise.
    """

    family: str
    feasible: bool
    cost_usd: float | None
    cost_per_endpoint_usd: float | None
    tiers: int | None
    planes: int | None
    switches: int | None
    links: int | None
    endpoints: int | None
    gpus: int
    binding: str
    design: dict[str, Any]
    status: str
    checked: bool | None = None
    solve_seconds: float = 0.0
    bom: list[dict[str, Any]] = field(default_factory=list)
    alltoall_busbw_GBps: float | None = None
    alltoall_lower_busbw_GBps: float | None = None
    alltoall_upper_busbw_GBps: float | None = None
    alltoall_method: str | None = None
    alltoall_note: str | None = None
    cost_per_GBps_usd: float | None = None
    alltoall_gpus: int | None = None
    routed_busbw_GBps: dict[str, float] = field(default_factory=dict)
    deployed_routing: str | None = None
    deployed_busbw_GBps: float | None = None
    deployed_cost_per_GBps_usd: float | None = None
    rated_by: str | None = None
    degenerate: str | None = None
    routed_note: str | None = None

    @classmethod
    def infeasible(
        cls,
        family: str,
        gpus: int,
        binding: str,
        status: str,
        planes: int | None = None,
        solve_seconds: float = 0.0,
    ) -> PlanRow:
        """A row of no design: ``binding`` says why."""
        return cls(
            family=family,
            feasible=False,
            cost_usd=None,
            cost_per_endpoint_usd=None,
            tiers=None,
            planes=planes,
            switches=None,
            links=None,
            endpoints=None,
            gpus=gpus,
            binding=binding,
            design={},
            status=status,
            solve_seconds=solve_seconds,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Ceiling:
    """The most GPUs one family reaches with the switch and server given.

    Attributes
    ----------
    family : str
    max_gpus, endpoints : int
        Whole servers' GPUs; endpoints (all planes).
    design : dict
        Builder arguments of the largest design.
    binding : str
        The constraints that hold at the ceiling.
    closed_form : int
        The same ceiling from :func:`topo.builders.max_gpus` (they agree; tested).
    """

    family: str
    max_gpus: int
    endpoints: int
    design: dict[str, Any]
    binding: str
    closed_form: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _inputs(
    switch: SwitchSpec | None,
    server: ServerSpec | None,
    max_oversubscription: float,
    prices: PriceBook,
) -> PlanInputs:
    switch, server = switch or SwitchSpec(), server or ServerSpec()
    R = float(max_oversubscription)
    if not (math.isfinite(R) and R >= 1):
        raise SpecError(
            f"max_oversubscription must be a number of at least 1, got {max_oversubscription!r}",
            param="max_oversubscription",
        )
    gbps = switch.link_gbps
    return PlanInputs(
        switch=switch,
        server=server,
        R=R,
        W=prices.switch(switch.ports, gbps).price_usd,
        c_opt=prices.cable("optical", gbps).price_usd,
        c_local=prices.cable(
            "electrical" if prices.electrical_within_group else "optical", gbps
        ).price_usd,
        c_end=prices.cable("endpoint", gbps).price_usd,
    )


def _design(family: str, inp: PlanInputs, sol: dict[str, Any], gpus: int | None) -> dict[str, Any]:
    d: dict[str, Any] = dict(
        family=family,
        switch_ports=inp.k,
        link_gbps=inp.link_gbps,
        gpus_per_node=inp.gpus_per_node,
        nics_per_node=inp.nics_per_node,
    )
    if gpus is not None:
        d["gpus"] = gpus
    if family in ("ft2", "mpft") and sol["tiers"] == 2:
        d["oversubscription"] = sol["over"]
    for key in ("q", "endpoints_per_router", "routers_per_group", "global_ports", "groups"):
        if key in sol:
            d[key] = sol[key]
    return d


def _ceiling_text(family: str, inp: PlanInputs, top_gpus: int, gpus: int) -> str:
    k = inp.k
    if family == "mpft":
        per = k * k // 2 if inp.R == 1 else None
        lead = (
            f"a two-layer plane of {k}-port switches holds {per:,} endpoints; {inp.nics_per_node} "
            f"planes give {top_gpus:,} GPUs"
            if per
            else f"{inp.nics_per_node} two-layer planes of {k}-port switches give {top_gpus:,} GPUs"
        )
        return f"{lead}; {gpus:,} GPUs need a third tier or more planes"
    if family == "ft2":
        return (
            f"a two-layer fat tree of {k}-port switches holds {top_gpus:,} GPUs; {gpus:,} need a "
            "third tier, more planes or a higher oversubscription"
        )
    if family == "ft3":
        return (
            f"a three-layer fat tree of {k}-port switches holds k^3/4 endpoints: {top_gpus:,} GPUs"
        )
    if family == "slimfly":
        return f"the largest Slim Fly of {k}-port routers holds {top_gpus:,} GPUs"
    return f"the largest Dragonfly of {k}-port routers (g = a*h + 1) holds {top_gpus:,} GPUs"


def max_gpus_plan(
    switch: SwitchSpec | None = None,
    server: ServerSpec | None = None,
    *,
    max_oversubscription: float = 1.0,
    families: Sequence[str] = DEFAULT_PLAN_FAMILIES,
    prices: PriceBook | None = None,
    time_limit_s: float | None = 60.0,
) -> list[Ceiling]:
    """Each family's ceiling: the program of :mod:`topo.cost.plan` maximising endpoints.

    Parameters
    ----------
    switch, server, max_oversubscription, families, prices, time_limit_s
        As for :func:`plan` (time limit in seconds).

    Returns
    -------
    list of Ceiling
        GPUs in whole servers; ``closed_form`` from :func:`topo.builders.max_gpus` for the
        same switch and server (for Dragonfly and Slim Fly at ``R = 1``: their defaults).

    Raises
    ------
    SpecError
        Bad switch, server or oversubscription; an unknown family.
    SolverError
        HiGHS did not reach an optimum.

    Examples
    --------
    >>> [c.max_gpus for c in max_gpus_plan(families=("ft2", "mpft", "ft3"))]
    [2048, 16384, 65536]
    """
    prices = prices or load_prices()
    inp = _inputs(switch, server, max_oversubscription, prices)
    out = []
    for family in families:
        if family in RAIL3_FAMILIES:
            out.append(_rail3_ceiling(family, inp))
            continue
        if family in RULE_FAMILIES:
            out.append(_rule_ceiling(family, inp))
            continue
        try:
            m = family_program(family, inp, None)
        except NoDesign as exc:
            out.append(Ceiling(family, 0, 0, {}, str(exc), 0))
            continue
        status = solve_program(m, time_limit_s)
        if status != "optimal":
            raise SolverError(f"{family}: the ceiling program ended with status {status}")
        sol = m.read()
        endpoints = round(solution_value(m.endpoints)) * m.planes
        top = endpoints // inp.nics_per_node * inp.gpus_per_node
        design = _design(family, inp, sol, None)
        # The builders' closed form for the same design (a two-layer plane of one switch has
        # no oversubscription in its design: the default 1 is its ratio).
        closed = max_gpus(**{k: v for k, v in design.items() if k != "link_gbps"})
        out.append(
            Ceiling(
                family=family,
                max_gpus=top,
                endpoints=endpoints,
                design=design,
                binding=binding_rows(m),
                closed_form=closed,
            )
        )
    return out


def plan(
    gpus: int,
    switch: SwitchSpec | None = None,
    server: ServerSpec | None = None,
    *,
    max_oversubscription: float = 1.0,
    families: Sequence[str] = DEFAULT_PLAN_FAMILIES,
    prices: PriceBook | None = None,
    time_limit_s: float | None = 60.0,
    check: bool = True,
) -> list[PlanRow]:
    """The cheapest design of each family that connects ``gpus`` GPUs, ranked by cost.

    Parameters
    ----------
    gpus : int
        GPUs to connect (rounded up to whole servers).
    switch : SwitchSpec or None
        Radix ``k`` and port and cable speed (Gb/s); None: 64 ports of 400 Gb/s.
    server : ServerSpec or None
        Server shape (``mpft`` has as many planes as the server has NICs); None: 8 GPUs,
        8 NICs.
    max_oversubscription : float
        Largest leaf down/up ratio allowed (1 = non-blocking); Dragonfly and Slim Fly read it
        as endpoints per router over the full-bandwidth share (``h``; ``ceil(k'/2)``).
    families : sequence of str
        From :data:`PLAN_FAMILIES`.
    prices : PriceBook or None
        None reads the default price book.
    time_limit_s : float or None
        HiGHS time limit per family, seconds.
    check : bool
        Count each design up to :data:`MAX_CHECK_GPUS` GPUs by the builder's closed form
        (:func:`topo.builders.fabric_counts`) against the program's counts; a mismatch is a bug
        and raises ``AssertionError``. It also marks the designs
        :func:`topo.cost.plan_bandwidth.with_bandwidth` builds and solves.

    Returns
    -------
    list of PlanRow
        Feasible rows by cost, then the infeasible ones (with the binding limit).

    Raises
    ------
    SpecError
        ``gpus`` not positive; bad switch, server or oversubscription; unknown family; a price
        the book lacks.

    Examples
    --------
    >>> rows = plan(16385, families=("mpft", "ft3"), check=False)
    >>> [(r.family, r.feasible, r.tiers) for r in rows]
    [('ft3', True, 3), ('mpft', False, None)]

    References
    ----------
    W. Zhao et al., "Insights into DeepSeek-V3", ISCA 2025, §5.1 and Table 3; M. Al-Fares et
    al., SIGCOMM 2008; M. Besta and T. Hoefler, SC14; J. Kim et al., ISCA 2008.
    """
    n = as_int("gpus", gpus)
    if n < 1:
        raise SpecError(f"gpus must be at least 1, got {n}", param="gpus")
    prices = prices or load_prices()
    inp = _inputs(switch, server, max_oversubscription, prices)
    nodes = -(-n // inp.gpus_per_node)
    n_gpus = nodes * inp.gpus_per_node
    rows = [_plan_family(f, inp, n_gpus, prices, time_limit_s, check) for f in families]
    return sorted(rows, key=lambda r: (not r.feasible, r.cost_usd or 0.0, r.family))


def _plan_family(
    family: str,
    inp: PlanInputs,
    n_gpus: int,
    prices: PriceBook,
    time_limit_s: float | None,
    check: bool,
) -> PlanRow:
    """The cheapest design of one family for ``n_gpus`` GPUs (whole servers), or why none."""
    if family in RAIL3_FAMILIES:
        return _plan_rail3(family, inp, n_gpus, prices, check)
    if family in RULE_FAMILIES:
        return _plan_rule(family, inp, n_gpus, prices, check)
    endpoints = n_gpus // inp.gpus_per_node * inp.nics_per_node
    t0 = time.perf_counter()
    try:
        m = family_program(family, inp, endpoints)
    except NoDesign as exc:
        return PlanRow.infeasible(family, n_gpus, str(exc), "infeasible")
    status = solve_program(m, time_limit_s)
    secs = time.perf_counter() - t0
    if status != "optimal":
        binding = _no_design_text(family, inp, status, n_gpus, prices, time_limit_s)
        return PlanRow.infeasible(family, n_gpus, binding, status, m.planes, secs)
    sol = m.read()
    design = _design(family, inp, sol, n_gpus)
    cost = solution_value(m.prob.objective)
    bom = _priced(family, inp, n_gpus, endpoints, sol, prices)
    if abs(bom.cost_usd - cost) > 1e-6 * max(1.0, cost):  # pragma: no cover - a bug
        raise AssertionError(f"{family}: program cost {cost} != priced counts {bom.cost_usd}")
    checked = None
    if check and n_gpus <= MAX_CHECK_GPUS:
        checked = _check(design, sol)
    half = inp.k // 2
    return PlanRow(
        family=family,
        feasible=True,
        cost_usd=bom.cost_usd,
        cost_per_endpoint_usd=bom.cost_per_endpoint_usd,
        tiers=sol["tiers"],
        planes=m.planes,
        switches=sol["switches"],
        links=sol["links"],
        endpoints=endpoints,
        gpus=n_gpus,
        binding=binding_rows(m) or "none: the smallest size that holds N, spare ports left",
        design=design,
        status=status,
        checked=checked,
        solve_seconds=secs,
        bom=[asdict(x) for x in bom.lines],
        degenerate=_degenerate(family, sol["tiers"], n_gpus, inp, half * half),
    )


def _degenerate(family: str, tiers: int, n_gpus: int, inp: PlanInputs, pod: int) -> str | None:
    """Why a design of a three-tier family has no core layer (:attr:`PlanRow.degenerate`), or
    None. ``pod``: the endpoints one pod of ``k/2`` leaves holds (per plane or rail)."""
    if family not in THREE_TIER_FAMILIES or tiers >= 3:
        return None
    shape = "one switch (1 tier)" if tiers == 1 else "one pod of leaves and spines (2 tiers)"
    per = " a plane" if family == "mpft3" else ""
    return (
        f"no core layer at {n_gpus:,} GPUs: {shape}, a two-layer family's design; a "
        f"three-layer fabric of {inp.k}-port switches has one only past a pod's {pod:,} "
        f"endpoints{per} (k/2 leaves of {pod // (inp.k // 2):,} down ports)"
    )


def _priced(
    family: str,
    inp: PlanInputs,
    n_gpus: int,
    endpoints: int,
    sol: dict[str, Any],
    prices: PriceBook,
) -> CostReport:
    """The bill of materials of a design counted by a program or a rule (``sol``: switches,
    links, local_links)."""
    return cost_from_counts(
        family=family,
        name=f"{family}-{n_gpus}",
        endpoints=endpoints,
        switches={(inp.k, inp.link_gbps): sol["switches"]},
        cables=cables_from_counts(
            sol["links"], sol["local_links"], endpoints, inp.link_gbps, prices
        ),
        prices=prices,
    )


def _no_design_text(
    family: str,
    inp: PlanInputs,
    status: str,
    n_gpus: int,
    prices: PriceBook,
    time_limit_s: float | None,
) -> str:
    """Why a program ended without an optimum: the time limit, or the family's ceiling."""
    if status == "time limit":
        return f"HiGHS stopped at the time limit ({time_limit_s:g} s) without a proven optimum"
    if status == "not solved":
        return "HiGHS stopped without a proven optimum (status Not Solved), before any time limit"
    if status != "infeasible":
        return status
    ceiling = max_gpus_plan(
        inp.switch,
        inp.server,
        max_oversubscription=inp.R,
        families=(family,),
        prices=prices,
        time_limit_s=time_limit_s,
    )[0]
    return _ceiling_text(family, inp, ceiling.max_gpus, n_gpus)


def _check(design: dict[str, Any], sol: dict[str, Any]) -> bool:
    """The builder's closed-form counts of the design (:func:`topo.builders.fabric_counts`,
    equal to the built graph's; tested there) against the program's; AssertionError if they
    differ. The priced bill of materials is held against the built graph where the plan builds
    it (:func:`topo.cost.plan_bandwidth.with_bandwidth`)."""
    kwargs = {k: v for k, v in design.items() if k != "family"}
    s = fabric_counts(design["family"], **kwargs)
    if (s.switches, s.links) != (sol["switches"], sol["links"]):
        raise AssertionError(  # pragma: no cover - a bug, never a user error
            f"plan {design}: the program says {sol['switches']} switches, {sol['links']} links; "
            f"the builder counts {s.switches}, {s.links}"
        )
    return True


def _rail3_spec(family: str, inp: PlanInputs, gpus: int | None) -> FabricSpec:
    """The builder's spec of a three-tier MPFT or MRFT (``mpft3``, ``mrft3``)."""
    return FabricSpec(family[:-1], inp.switch, inp.server, gpus=gpus, tiers=3)


def _rail3_design(spec: FabricSpec) -> dict[str, Any]:
    keep = ("family", "switch_ports", "link_gbps", "gpus_per_node", "nics_per_node", "gpus")
    return {k: v for k, v in spec.to_options().items() if k in keep} | {"tiers": 3}


def _rail3_ceiling(family: str, inp: PlanInputs) -> Ceiling:
    """The ceiling of a three-tier MPFT or MRFT: the closed form (k pods per plane or over the
    rails)."""
    spec = _rail3_spec(family, inp, None)
    top = max_gpus(spec)
    return Ceiling(
        family=family,
        max_gpus=top,
        endpoints=top // inp.gpus_per_node * inp.nics_per_node,
        design=_rail3_design(spec),
        binding="core reach (k pods per core layer), pods of k/2 leaves",
        closed_form=top,
    )


def _plan_rail3(
    family: str, inp: PlanInputs, n_gpus: int, prices: PriceBook, check: bool
) -> PlanRow:
    """A three-tier MPFT or MRFT for ``n_gpus`` GPUs: counts by the design rule, priced."""
    t0 = time.perf_counter()
    top = max_gpus(_rail3_spec(family, inp, None))
    planes = inp.nics_per_node if family == "mpft3" else 1
    if n_gpus > top:
        why = f"three tiers of {inp.k}-port switches hold {top:,} GPUs in this design"
        return PlanRow.infeasible(family, n_gpus, why, "infeasible", planes)
    spec = _rail3_spec(family, inp, n_gpus)
    nodes = n_gpus // inp.gpus_per_node
    groups = 1 if family == "mpft3" else inp.nics_per_node
    leaves, spines, cores, links = (planes * x for x in pod_counts(nodes, groups, spec))
    tiers = 3 if cores else 2  # one pod (a plane's or the only rail's) has no core layer
    endpoints = nodes * inp.nics_per_node
    sol = {"switches": leaves + spines + cores, "links": links, "local_links": 0}
    bom = _priced(family, inp, n_gpus, endpoints, sol, prices)
    design = _rail3_design(spec)
    checked = None
    if check and n_gpus <= MAX_CHECK_GPUS:
        checked = _check(design, sol)
    return PlanRow(
        family=family,
        feasible=True,
        cost_usd=bom.cost_usd,
        cost_per_endpoint_usd=bom.cost_per_endpoint_usd,
        tiers=tiers,
        planes=planes,
        switches=sol["switches"],
        links=links,
        endpoints=endpoints,
        gpus=n_gpus,
        binding="none: the design rule fixes the counts (pods of k/2 leaves, non-blocking)",
        design=design,
        status="optimal",
        checked=checked,
        solve_seconds=time.perf_counter() - t0,
        bom=[asdict(x) for x in bom.lines],
        degenerate=_degenerate(family, tiers, n_gpus, inp, spec.down_ports * (inp.k // 2)),
    )


def _rule_ceiling(family: str, inp: PlanInputs) -> Ceiling:
    """The ceiling of a rail-only fabric or an HPN pod: the builder's closed form (0 when the
    switch does not fit the design, e.g. HPN's radix not a multiple of 32)."""
    try:
        spec = FabricSpec(family, inp.switch, inp.server)
        top = max_gpus(spec)
    except SpecError as exc:
        return Ceiling(family, 0, 0, {}, str(exc), 0)
    keep = ("family", "switch_ports", "link_gbps", "gpus_per_node", "nics_per_node")
    return Ceiling(
        family=family,
        max_gpus=top,
        endpoints=top // inp.gpus_per_node * inp.nics_per_node,
        design={k: v for k, v in spec.to_options().items() if k in keep},
        binding="rail reach (k*d domains a rail)" if family == "rail-only" else "one pod",
        closed_form=top,
    )


def _plan_rule(
    family: str, inp: PlanInputs, n_gpus: int, prices: PriceBook, check: bool
) -> PlanRow:
    """A rail-only fabric (non-blocking) or an HPN pod for ``n_gpus`` GPUs: counts by the
    builder's rule (:func:`topo.builders.railonly.rail_only_counts`,
    :func:`topo.builders.hpn.hpn_counts`), priced."""
    t0 = time.perf_counter()
    planes = inp.nics_per_node if family == "rail-only" else HPN_PORTS
    try:
        spec = FabricSpec(family, inp.switch, inp.server, gpus=n_gpus)
        top = max_gpus(spec)
    except SpecError as exc:
        return PlanRow.infeasible(family, n_gpus, str(exc), "infeasible", planes)
    if n_gpus > top:
        why = f"{family} of {inp.k}-port switches holds {top:,} GPUs in this design"
        return PlanRow.infeasible(family, n_gpus, why, "infeasible", planes)
    nodes = n_gpus // inp.gpus_per_node
    port_gbps = inp.link_gbps
    if family == "rail-only":
        leaves, spines, links = (planes * x for x in rail_only_counts(nodes, spec))
        switches, ends, tiers = leaves + spines, nodes * planes, 2 if spines else 1
    else:
        tors, aggs, links, _ = hpn_counts(nodes, spec)
        switches, tiers, port_gbps = tors + aggs, 2, inp.link_gbps / HPN_PORTS
        ends = nodes * inp.nics_per_node  # the NICs, as compare counts them: 2 cables each
    cables = {("optical", inp.link_gbps): links} if links else {}
    bom = cost_from_counts(
        family=family,
        name=f"{family}-{n_gpus}",
        endpoints=ends,
        switches={(inp.k, inp.link_gbps): switches},
        cables=cables | {("endpoint", port_gbps): ends * (HPN_PORTS if family == "hpn" else 1)},
        prices=prices,
    )
    keep = ("family", "switch_ports", "link_gbps", "gpus_per_node", "nics_per_node", "gpus")
    design = {k: v for k, v in spec.to_options().items() if k in keep}
    sol = {"switches": switches, "links": links}
    checked = None
    if check and n_gpus <= MAX_CHECK_GPUS:
        checked = _check(design, sol)
    return PlanRow(
        family=family,
        feasible=True,
        cost_usd=bom.cost_usd,
        cost_per_endpoint_usd=bom.cost_per_endpoint_usd,
        tiers=tiers,
        planes=planes,
        switches=switches,
        links=links,
        endpoints=ends,
        gpus=n_gpus,
        binding="none: the design rule fixes the counts",
        design=design,
        status="optimal",
        checked=checked,
        solve_seconds=time.perf_counter() - t0,
        bom=[asdict(x) for x in bom.lines],
    )
