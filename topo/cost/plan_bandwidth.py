"""The all-to-all bandwidth of each design of a plan, ideal and as deployed, and the plan ranked
by it.

:func:`topo.cost.plan` minimises cost; it says nothing of what a design delivers. Here each
feasible design gets two ratings of the uniform all-to-all, busbw per GPU:

- **ideal**: the maximum concurrent flow (any paths, freely split). Fat trees, rail-only and
  HPN are built once (:func:`topo.builders.build` of :attr:`PlanRow.design`) and solved by
  :func:`topo.flow.alltoall_bandwidth` (exact by its reductions, or certified bounds past the
  time limit). Slim Fly and Dragonfly are solved in closed form on the design with every
  router holding its ``endpoints_per_router`` (:mod:`topo.flow.routing.direct`: exact, no graph
  built); the plan's partly filled design breaks the router symmetry its exact reduction
  needs, so the filled design is the one rated (``alltoall_gpus`` GPUs).
- **deployed**: the routing the family runs in practice: ECMP hashing for the fat trees
  (:func:`topo.flow.routing.routed_alltoall`, on the same built graph), UGAL for Slim Fly and
  Dragonfly (the better of minimal and Valiant; each is reported too).

A row carries the exact ideal busbw, or, when only bounds are known, the two bounds in their
own fields and no value: a bound is never put where the value goes, nor ranked as one.

:func:`rank_plan` orders the rows by cost (the plan's own order), by bandwidth (highest busbw
first) or by cost per bandwidth (``cost_usd / (gpus x busbw)``, US$ per GB/s of the whole
all-to-all, lowest first), under the deployed rating by default (the ideal one idealises the
direct networks' routing most: non-minimal paths no deployed adaptive routing reaches) or the
ideal one; rows whose rating is unknown follow those ranked, by cost, and the infeasible rows
come last, as in the plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from topo.builders import build
from topo.cost.bom import bill_of_materials
from topo.cost.direct_rates import dragonfly_rates, slimfly_rates
from topo.cost.plan import MAX_CHECK_GPUS, PlanRow
from topo.cost.prices import PriceBook
from topo.errors import TopoError
from topo.flow import alltoall_bandwidth
from topo.flow.routing import DirectRates, routed_alltoall
from topo.units import Bps_to_GBps

__all__ = [
    "DIRECT_FAMILIES",
    "PLAN_BANDWIDTH_TIME_LIMIT_S",
    "RANK_BY",
    "RATINGS",
    "rank_plan",
    "with_bandwidth",
]

PLAN_BANDWIDTH_TIME_LIMIT_S = 10.0
"""Default HiGHS time limit (s) of each design's all-to-all in ``topo plan``: past it, the
certified bounds (and no value)."""

RANK_BY = ("cost", "bandwidth", "cost-per-bandwidth")
"""The orders of :func:`rank_plan` (``topo plan --rank-by``)."""

RATINGS = ("deployed", "ideal")
"""The ratings :func:`rank_plan` ranks by (``topo plan --rate-with``): the deployed routing's
busbw (default) or the ideal (max concurrent flow) one."""

DIRECT_FAMILIES = ("slimfly", "dragonfly")
"""Families rated in closed form on their filled design (:mod:`topo.flow.routing.direct`)."""


def with_bandwidth(
    rows: Sequence[PlanRow],
    *,
    time_limit_s: float = PLAN_BANDWIDTH_TIME_LIMIT_S,
    max_gpus: int = MAX_CHECK_GPUS,
    prices: PriceBook | None = None,
) -> list[PlanRow]:
    """The rows with the all-to-all bandwidth of each feasible design, ideal and deployed.

    Parameters
    ----------
    rows : sequence of PlanRow
        From :func:`topo.cost.plan`.
    time_limit_s : float
        HiGHS time limit of each design's exact LP (s); past it, certified bounds.
    max_gpus : int
        Largest design built and solved (GPUs); larger ones get a note instead (Slim Fly and
        Dragonfly, rated without a graph, have no such limit).
    prices : PriceBook or None
        Given: the bill of materials of each built design is held against the row's cost
        (``AssertionError`` if they differ: a bug).

    Returns
    -------
    list of PlanRow
        Each feasible row with ``alltoall_method``, ``alltoall_gpus`` and, when exact,
        ``alltoall_busbw_GBps`` (GB/s per GPU) and ``cost_per_GBps_usd`` (US$ per GB/s); when
        only bounded, ``alltoall_lower_busbw_GBps`` and ``alltoall_upper_busbw_GBps``; the
        deployed rating (``routed_busbw_GBps``, ``deployed_routing``, ``deployed_busbw_GBps``,
        ``deployed_cost_per_GBps_usd``); when not solved, ``alltoall_note`` saying why;
        when the design was solved but its deployed routing's model refused it,
        ``routed_note`` saying why.
        Infeasible rows as they are.

    Examples
    --------
    >>> from topo.cost import plan
    >>> from topo.spec import ServerSpec, SwitchSpec
    >>> (row,) = with_bandwidth(plan(8, SwitchSpec(8), ServerSpec(1, 1), families=("ft2",)))
    >>> round(row.alltoall_busbw_GBps, 6), row.alltoall_method  # one 50 GB/s NIC per GPU
    (50.0, 'reduced')
    >>> row.deployed_routing, round(row.deployed_busbw_GBps, 6)  # one switch: no hashing
    ('ecmp', 50.0)
    """
    return [_solved(r, time_limit_s, max_gpus, prices) for r in rows]


def _solved(row: PlanRow, time_limit_s: float, max_gpus: int, prices: PriceBook | None) -> PlanRow:
    """One row with its design's all-to-all (or why there is none)."""
    if not row.feasible:
        return row
    family = row.design["family"]
    args = {k: v for k, v in row.design.items() if k != "family"}
    routed_note = None
    if family in DIRECT_FAMILIES:
        try:
            return _direct(row, _direct_rates(family, args, time_limit_s))
        except TopoError as exc:  # a design the closed form does not cover: the flow solver
            routed_note = f"minimal, Valiant and UGAL not rated: {exc}"
    if row.gpus > max_gpus:
        note = f"not solved: {row.gpus:,} GPUs, above the {max_gpus:,} a plan builds"
        return replace(row, alltoall_note=note)
    try:
        G = build(family, **args)
        if prices is not None:
            _check_bom(row, G, prices)
        r = alltoall_bandwidth(G, time_limit_s=time_limit_s)
    except TopoError as exc:
        return replace(row, alltoall_note=f"not solved: {exc}")
    routed: dict[str, float] = {}
    if family not in DIRECT_FAMILIES:
        try:
            routed["ecmp"] = Bps_to_GBps(routed_alltoall(G, "ecmp").alltoall_busbw_Bps)
        except TopoError as exc:
            routed_note = f"ECMP not rated: {exc}"
    row = replace(
        row, alltoall_gpus=row.gpus, routed_note=routed_note, **_deployed(row, routed, "ecmp")
    )
    if r.exact:
        busbw = Bps_to_GBps(r.alltoall_busbw_Bps)
        return replace(
            row,
            alltoall_busbw_GBps=busbw,
            alltoall_method=r.method,
            cost_per_GBps_usd=_per(row, busbw),
        )
    assert r.bounds is not None  # not exact: the certified bounds
    n = r.gpus
    return replace(
        row,
        alltoall_method=r.method,
        alltoall_lower_busbw_GBps=Bps_to_GBps(r.bounds.lower_Bps * (n - 1)),
        alltoall_upper_busbw_GBps=Bps_to_GBps(r.bounds.upper_Bps * (n - 1)),
    )


def _direct_rates(family: str, args: dict[str, Any], time_limit_s: float) -> DirectRates:
    """The closed-form rates of a Slim Fly or Dragonfly design, every router filled."""
    common = dict(
        link_gbps=args["link_gbps"],
        gpus_per_node=args["gpus_per_node"],
        nics_per_node=args["nics_per_node"],
        time_limit_s=time_limit_s,
    )
    if family == "slimfly":
        return slimfly_rates(args["q"], args["endpoints_per_router"], **common)
    return dragonfly_rates(
        args["routers_per_group"],
        args["endpoints_per_router"],
        args["global_ports"],
        args["groups"],
        **common,
    )


def _direct(row: PlanRow, d: DirectRates) -> PlanRow:
    """A Slim Fly or Dragonfly row rated by :mod:`topo.flow.routing.direct`."""
    routed = {
        "minimal": Bps_to_GBps(d.busbw_Bps(d.minimal_Bps)),
        "valiant": Bps_to_GBps(d.busbw_Bps(d.valiant_Bps)),
        "ugal": Bps_to_GBps(d.busbw_Bps(d.ugal_Bps)),
    }
    row = replace(row, alltoall_gpus=d.gpus, **_deployed(row, routed, "ugal"))
    if d.ideal_Bps is None:
        return replace(
            row,
            alltoall_method="bounds",
            alltoall_lower_busbw_GBps=Bps_to_GBps(d.busbw_Bps(d.ideal_lower_Bps)),
            alltoall_upper_busbw_GBps=Bps_to_GBps(d.busbw_Bps(d.ideal_upper_Bps)),
        )
    busbw = Bps_to_GBps(d.busbw_Bps(d.ideal_Bps))
    return replace(
        row, alltoall_busbw_GBps=busbw, alltoall_method="direct", cost_per_GBps_usd=_per(row, busbw)
    )


def _deployed(row: PlanRow, routed: dict[str, float], routing: str) -> dict[str, Any]:
    """The deployed-rating fields of a row (empty ratings when the routing was not solved)."""
    busbw = routed.get(routing)
    return dict(
        routed_busbw_GBps=routed,
        deployed_routing=routing if busbw is not None else None,
        deployed_busbw_GBps=busbw,
        deployed_cost_per_GBps_usd=None if busbw is None else _per(row, busbw),
    )


def _per(row: PlanRow, busbw: float) -> float | None:
    """US$ per GB/s of the whole all-to-all: cost over GPUs x busbw."""
    return (row.cost_usd or 0.0) / (row.gpus * busbw) if busbw > 0 else None


def _check_bom(row: PlanRow, G: Any, prices: PriceBook) -> None:
    """The built design's bill of materials against the row's cost (a bug if they differ)."""
    got = bill_of_materials(G, prices).cost_usd
    cost = row.cost_usd or 0.0
    if abs(got - cost) > 1e-6 * max(cost, 1.0):  # pragma: no cover - a bug
        raise AssertionError(f"plan {row.design}: priced {cost:.2f} $, built {got:.2f} $")


def rank_plan(rows: Sequence[PlanRow], by: str = "cost", rating: str = "deployed") -> list[PlanRow]:
    """The plan's rows in the order ``by`` asks, under the rating ``rating``.

    Parameters
    ----------
    rows : sequence of PlanRow
        From :func:`topo.cost.plan` (by cost), with :func:`with_bandwidth` for the other
        orders.
    by : {"cost", "bandwidth", "cost-per-bandwidth"}
        ``cost``: the rows as given; ``bandwidth``: the highest busbw first;
        ``cost-per-bandwidth``: the lowest US$ per GB/s first. Ties, and the rows whose
        rating is unknown (after the ranked ones), by cost; infeasible rows last.
    rating : {"deployed", "ideal"}
        ``deployed``: ``deployed_busbw_GBps`` and ``deployed_cost_per_GBps_usd`` (each
        family under its deployed routing); ``ideal``: ``alltoall_busbw_GBps`` and
        ``cost_per_GBps_usd`` (the max concurrent flow).

    Returns
    -------
    list of PlanRow
        With ``rated_by`` set on every feasible row that has the rating: the deployed
        routing's name, or ``ideal``.

    Raises
    ------
    TopoError
        ``by`` not one of :data:`RANK_BY`, ``rating`` not one of :data:`RATINGS`.
    """
    if by not in RANK_BY:
        raise TopoError(f"rank_by must be one of {', '.join(RANK_BY)}, got {by!r}", param="rank_by")
    if rating not in RATINGS:
        raise TopoError(
            f"rating must be one of {', '.join(RATINGS)}, got {rating!r}", param="rating"
        )
    ideal = rating == "ideal"

    def rated(r: PlanRow) -> PlanRow:
        busbw = r.alltoall_busbw_GBps if ideal else r.deployed_busbw_GBps
        if busbw is None:
            return r
        return replace(r, rated_by="ideal" if ideal else r.deployed_routing)

    out = [rated(r) for r in rows]
    if by == "cost":
        return out

    def key(r: PlanRow) -> tuple[int, float, float, str]:
        if by == "bandwidth":
            value = r.alltoall_busbw_GBps if ideal else r.deployed_busbw_GBps
        else:
            value = r.cost_per_GBps_usd if ideal else r.deployed_cost_per_GBps_usd
        if not r.feasible:
            return (2, 0.0, 0.0, r.family)
        if value is None:
            return (1, 0.0, r.cost_usd or 0.0, r.family)
        return (0, -value if by == "bandwidth" else value, r.cost_usd or 0.0, r.family)

    return sorted(out, key=key)
