"""The all-to-all bandwidth of each design of a plan, and the plan ranked by it.

:func:`topo.cost.plan` minimises cost; it says nothing of what a design delivers. Here each
feasible design is built (:func:`topo.builders.build` of :attr:`PlanRow.design`, as the plan's
check builds it) and solved by the flow solver (:func:`topo.flow.alltoall_bandwidth`: the
maximum concurrent flow of the uniform all-to-all, exact by its reductions, or certified
bounds when the exact LP is out of reach in the time limit). A row carries the exact busbw per
GPU, or, when only bounds are known, the two bounds in their own fields and no value: a bound
is never put where the value goes, nor ranked as one.

:func:`rank_plan` orders the rows by cost (the plan's own order), by bandwidth (highest exact
busbw first) or by cost per bandwidth (``cost_usd / (gpus x busbw)``, US$ per GB/s of the
whole all-to-all, lowest first); rows whose busbw is unknown follow those ranked, by cost, and
the infeasible rows come last, as in the plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from topo.builders import build
from topo.cost.plan import MAX_CHECK_GPUS, PlanRow
from topo.errors import TopoError
from topo.flow import alltoall_bandwidth
from topo.units import Bps_to_GBps

__all__ = ["PLAN_BANDWIDTH_TIME_LIMIT_S", "RANK_BY", "rank_plan", "with_bandwidth"]

PLAN_BANDWIDTH_TIME_LIMIT_S = 10.0
"""Default HiGHS time limit (s) of each design's all-to-all in ``topo plan``: past it, the
certified bounds (and no value)."""

RANK_BY = ("cost", "bandwidth", "cost-per-bandwidth")
"""The orders of :func:`rank_plan` (``topo plan --rank-by``)."""


def with_bandwidth(
    rows: Sequence[PlanRow],
    *,
    time_limit_s: float = PLAN_BANDWIDTH_TIME_LIMIT_S,
    max_gpus: int = MAX_CHECK_GPUS,
) -> list[PlanRow]:
    """The rows with the all-to-all bandwidth of each feasible design, in the same order.

    Parameters
    ----------
    rows : sequence of PlanRow
        From :func:`topo.cost.plan`.
    time_limit_s : float
        HiGHS time limit of each design's exact LP (s); past it, certified bounds.
    max_gpus : int
        Largest design built and solved (GPUs); larger ones get a note instead.

    Returns
    -------
    list of PlanRow
        Each feasible row with ``alltoall_method`` and, when exact, ``alltoall_busbw_GBps``
        (GB/s per GPU) and ``cost_per_GBps_usd`` (US$ per GB/s); when only bounded,
        ``alltoall_lower_busbw_GBps`` and ``alltoall_upper_busbw_GBps``; when not solved,
        ``alltoall_note`` saying why. Infeasible rows as they are.

    Examples
    --------
    >>> from topo.cost import plan
    >>> from topo.spec import ServerSpec, SwitchSpec
    >>> (row,) = with_bandwidth(plan(8, SwitchSpec(8), ServerSpec(1, 1), families=("ft2",)))
    >>> round(row.alltoall_busbw_GBps, 6), row.alltoall_method  # one 50 GB/s NIC per GPU
    (50.0, 'reduced')
    """
    return [_solved(r, time_limit_s, max_gpus) for r in rows]


def _solved(row: PlanRow, time_limit_s: float, max_gpus: int) -> PlanRow:
    """One row with its design's all-to-all (or why there is none)."""
    if not row.feasible:
        return row
    if row.gpus > max_gpus:
        note = f"not solved: {row.gpus:,} GPUs, above the {max_gpus:,} a plan builds"
        return replace(row, alltoall_note=note)
    args = {k: v for k, v in row.design.items() if k != "family"}
    try:
        r = alltoall_bandwidth(build(row.design["family"], **args), time_limit_s=time_limit_s)
    except TopoError as exc:
        return replace(row, alltoall_note=f"not solved: {exc}")
    if r.exact:
        busbw = Bps_to_GBps(r.alltoall_busbw_Bps)
        per = (row.cost_usd or 0.0) / (row.gpus * busbw) if busbw > 0 else None
        return replace(
            row, alltoall_busbw_GBps=busbw, alltoall_method=r.method, cost_per_GBps_usd=per
        )
    assert r.bounds is not None  # not exact: the certified bounds
    n = r.gpus
    return replace(
        row,
        alltoall_method=r.method,
        alltoall_lower_busbw_GBps=Bps_to_GBps(r.bounds.lower_Bps * (n - 1)),
        alltoall_upper_busbw_GBps=Bps_to_GBps(r.bounds.upper_Bps * (n - 1)),
    )


def rank_plan(rows: Sequence[PlanRow], by: str = "cost") -> list[PlanRow]:
    """The plan's rows in the order ``by`` asks.

    Parameters
    ----------
    rows : sequence of PlanRow
        From :func:`topo.cost.plan` (by cost), with :func:`with_bandwidth` for the other
        orders.
    by : {"cost", "bandwidth", "cost-per-bandwidth"}
        ``cost``: the rows as given; ``bandwidth``: the highest exact busbw first;
        ``cost-per-bandwidth``: the lowest ``cost_per_GBps_usd`` first. Ties, and the rows
        whose busbw is unknown (after the ranked ones), by cost; infeasible rows last.

    Returns
    -------
    list of PlanRow

    Raises
    ------
    TopoError
        ``by`` not one of :data:`RANK_BY`.
    """
    if by not in RANK_BY:
        raise TopoError(f"rank_by must be one of {', '.join(RANK_BY)}, got {by!r}", param="rank_by")
    if by == "cost":
        return list(rows)

    def key(r: PlanRow) -> tuple[int, float, float, str]:
        value = r.alltoall_busbw_GBps if by == "bandwidth" else r.cost_per_GBps_usd
        if not r.feasible:
            return (2, 0.0, 0.0, r.family)
        if value is None:
            return (1, 0.0, r.cost_usd or 0.0, r.family)
        return (0, -value if by == "bandwidth" else value, r.cost_usd or 0.0, r.family)

    return sorted(rows, key=key)
