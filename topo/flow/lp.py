"""Maximum concurrent multicommodity flow as a linear program (pulp + HiGHS).

The model, in the edge (arc) formulation with commodities aggregated by source
(Shahrokhi and Matula, "The maximum concurrent flow problem", J. ACM 37(2), 1990;
Leighton and Rao, J. ACM 46(6), 1999):

.. math::

    \\max\\ \\theta \\quad\\text{s.t.}\\quad
    \\sum_{a \\in \\delta^+(v)} f_{k,a} - \\sum_{a \\in \\delta^-(v)} f_{k,a} = \\theta\\, b_k(v)
    \\quad \\forall k, v;\\qquad
    \\sum_k f_{k,a} \\le c_a \\quad \\forall a;\\qquad f \\ge 0,

where commodity ``k`` has one source ``s_k`` and demands ``d_k(t)`` at its sinks,
``b_k(s_k) = \\sum_t d_k(t)``, ``b_k(t) = -d_k(t)``. ``theta`` is the largest common scale at
which every demand can be routed at once. Aggregating all pairs with the same source into one
commodity is exact: any flow of commodity ``k`` decomposes into paths from ``s_k`` to its sinks
carrying the demanded amounts.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pulp

from topo.errors import LPTimeLimit, LPTooLarge, SolverError
from topo.interrupts import solving

DEFAULT_MAX_VARIABLES = 2_000_000
"""Largest LP (flow variables) that :func:`max_concurrent_flow` builds by default: about 4 GiB
of pulp objects and, for multicommodity LPs, many minutes of HiGHS. Larger problems raise
:class:`SolverError` at once instead of exhausting memory or patience."""

MAX_CAPACITY_SPREAD = 1e9
"""Largest ratio of the largest to the smallest arc capacity in one LP (HiGHS works to about
1e-7 relative: a wider spread would lose the small arcs)."""


@dataclass(frozen=True)
class Commodity:
    """Demands from one source.

    Attributes
    ----------
    source : hashable
        The vertex the commodity leaves.
    demands : Mapping[hashable, float]
        Sink vertex -> demand weight (any non-negative unit; the LP scales all of them by
        ``theta``).
    """

    source: Hashable
    demands: Mapping[Hashable, float]


@dataclass(frozen=True)
class MCFSolution:
    """An optimal maximum-concurrent-flow solution.

    Attributes
    ----------
    theta : float
        The largest common scale of all demands that can be routed at once, in capacity units
        per demand unit (B/s per unit of demand weight when capacities are in B/s).
    arc_flow : numpy.ndarray, shape (n_arcs,)
        Total flow on each arc, summed over commodities (capacity units).
    arc_dual : numpy.ndarray, shape (n_arcs,)
        Shadow price of each arc's capacity row, normalised so the largest is 1; positive means
        the arc is in the binding (bottleneck) set of this dual solution.
    commodity_flow : list of dict, or None
        Per commodity, ``{arc index: flow}`` for arcs with non-zero flow (only when asked for).
    variables, constraints : int
        Size of the LP.
    build_seconds, solve_seconds : float
        Wall time to build the pulp model and for HiGHS to solve it.
    """

    theta: float
    arc_flow: np.ndarray
    arc_dual: np.ndarray
    commodity_flow: list[dict[int, float]] | None
    variables: int
    constraints: int
    build_seconds: float
    solve_seconds: float


NO_LP = MCFSolution(
    theta=0.0,
    arc_flow=np.zeros(0),
    arc_dual=np.zeros(0),
    commodity_flow=None,
    variables=0,
    constraints=0,
    build_seconds=0.0,
    solve_seconds=0.0,
)
"""No LP solved (its size and times are zero)."""


def lp_size(n_arcs: int, commodity_arcs: Sequence[Sequence[int]] | None, n_commodities: int) -> int:
    """Number of flow variables of the LP: the sum of each commodity's usable arcs."""
    if commodity_arcs is None:
        return n_arcs * n_commodities
    return sum(len(a) for a in commodity_arcs)


def max_concurrent_flow(
    arcs: Sequence[tuple[Hashable, Hashable]],
    capacity: Sequence[float] | np.ndarray,
    commodities: Sequence[Commodity],
    *,
    commodity_arcs: Sequence[Sequence[int]] | None = None,
    capacity_rows: Sequence[tuple[Sequence[int], float]] | None = None,
    commodity_weight: Sequence[float] | None = None,
    keep_commodity_flows: bool = False,
    time_limit_s: float | None = None,
    max_variables: int = DEFAULT_MAX_VARIABLES,
) -> MCFSolution:
    """Solve the maximum concurrent flow LP with HiGHS through pulp.

    Parameters
    ----------
    arcs : sequence of (tail, head)
        Directed arcs. A full-duplex link is two arcs.
    capacity : sequence of float, shape (n_arcs,)
        Capacity of each arc (B/s, or any unit; results are in the same unit). Must be > 0.
    commodities : sequence of Commodity
        Sources with their sink demands (weights).
    commodity_arcs : sequence of sequence of int, optional
        For each commodity, the indices of the arcs it may use (default: all). Used to forbid
        transit through servers that are neither source nor sink.
    capacity_rows : sequence of (arc indices, bound), optional
        Replace the per-arc capacity rows by these: the flow summed over the listed arcs and all
        commodities is at most ``bound`` (same unit as ``capacity``). Used by the symmetry
        reduction, whose rows bound a whole orbit of arcs. ``arc_dual`` then holds, for each arc,
        the dual of the row it is in.
    commodity_weight : sequence of float, optional
        A coefficient per commodity on its flow in every capacity row (default 1): commodity
        ``k`` stands for ``commodity_weight[k]`` symmetric copies of itself.
    keep_commodity_flows : bool
        Return each commodity's arc flows (for validation; memory grows with the LP).
    time_limit_s : float, optional
        HiGHS time limit in seconds.
    max_variables : int
        Refuse to build an LP with more flow variables than this.

    Returns
    -------
    MCFSolution
        ``theta`` in capacity units per demand unit, flows and duals per arc.

    Raises
    ------
    SolverError
        If the LP is larger than ``max_variables``, capacities span more than
        ``MAX_CAPACITY_SPREAD``, the solver stops before optimality (time
        limit), or reports the problem infeasible or unbounded (e.g. a sink unreachable from its
        source makes ``theta`` = 0, which is reported as such, not as an error).

    Examples
    --------
    Two parallel paths of 1 and 2 units between ``s`` and ``t``:

    >>> sol = max_concurrent_flow([("s", "a"), ("a", "t"), ("s", "t")], [1.0, 1.0, 2.0],
    ...                           [Commodity("s", {"t": 1.0})])
    >>> round(sol.theta, 6)
    3.0

    References
    ----------
    F. Shahrokhi and D. W. Matula, "The maximum concurrent flow problem", J. ACM 37(2), 1990.
    """
    t0 = time.perf_counter()
    cap = np.asarray(capacity, dtype=float)
    n_arcs = len(arcs)
    n_vars = _check(cap, n_arcs, commodities, commodity_arcs, max_variables)
    # Normalise so that the largest capacity and the largest demand are 1 (conditioning).
    cap_scale = float(cap.max()) if n_arcs else 1.0
    dem_max = max((d for c in commodities for d in c.demands.values()), default=0.0)
    if dem_max <= 0:
        return MCFSolution(
            theta=float("inf"),
            arc_flow=np.zeros(n_arcs),
            arc_dual=np.zeros(n_arcs),
            commodity_flow=[{} for _ in commodities] if keep_commodity_flows else None,
            variables=0,
            constraints=0,
            build_seconds=0.0,
            solve_seconds=0.0,
        )

    prob = pulp.LpProblem("max_concurrent_flow", pulp.LpMaximize)
    with warnings.catch_warnings():
        # pulp 3.x warns that pulp 4 renames the modelling API; topo pins pulp < 4.
        warnings.simplefilter("ignore", DeprecationWarning)
        theta = pulp.LpVariable("theta", lowBound=0)
        flow = _flow_variables(n_arcs, len(commodities), commodity_arcs)
    prob += theta
    rows = 0
    rows += _add_conservation_rows(prob, arcs, commodities, flow, theta, dem_max)
    if capacity_rows is None:
        capacity_rows = [((a,), float(cap[a])) for a in range(n_arcs)]
    weights = [1.0] * len(commodities) if commodity_weight is None else list(commodity_weight)
    if len(weights) != len(commodities):
        raise ValueError("commodity_weight must have one entry per commodity")
    cap_rows = _add_capacity_rows(prob, capacity_rows, cap_scale, flow, weights, n_arcs)
    rows += sum(r is not None for r in cap_rows)
    build_s = time.perf_counter() - t0

    solve_s = _solve(prob, n_vars, time_limit_s)
    arc_flow, keep = _flows(flow, n_arcs, cap_scale, keep_commodity_flows)
    duals = np.zeros(n_arcs)
    for (arc_ids, _), r in zip(capacity_rows, cap_rows, strict=True):
        if r is not None:
            duals[list(arc_ids)] = abs(r.pi or 0.0)
    if duals.size and duals.max() > 0:
        duals = duals / duals.max()
    return MCFSolution(
        theta=float(theta.varValue or 0.0) * cap_scale / dem_max,
        arc_flow=arc_flow,
        arc_dual=duals,
        commodity_flow=keep,
        variables=n_vars + 1,
        constraints=rows,
        build_seconds=build_s,
        solve_seconds=solve_s,
    )


def _check(
    cap: np.ndarray,
    n_arcs: int,
    commodities: Sequence[Commodity],
    commodity_arcs: Sequence[Sequence[int]] | None,
    max_variables: int,
) -> int:
    """Validate the LP's inputs; return its number of flow variables."""
    if cap.shape != (n_arcs,):
        raise ValueError("capacity must have one entry per arc")
    if n_arcs and not np.all(cap > 0):
        raise ValueError("arc capacities must be positive")
    if commodity_arcs is not None and len(commodity_arcs) != len(commodities):
        raise ValueError("commodity_arcs must have one entry per commodity")
    if n_arcs and cap.max() > MAX_CAPACITY_SPREAD * cap.min():
        raise SolverError(
            f"arc capacities span {cap.min():.3g} to {cap.max():.3g}: more than "
            f"{MAX_CAPACITY_SPREAD:.0e} apart, which the LP cannot resolve reliably"
        )
    n_vars = lp_size(n_arcs, commodity_arcs, len(commodities))
    if n_vars > max_variables:
        raise LPTooLarge(
            f"the flow LP would have {n_vars:,} variables, over the limit of {max_variables:,}; "
            "the fabric's structure did not allow an exact reduction (see docs/bandwidth.md)"
        )
    return n_vars


def _solve(prob: pulp.LpProblem, n_vars: int, time_limit_s: float | None) -> float:
    """Run HiGHS on ``prob``; return its wall time (s). Non-optimal is an error."""
    t1 = time.perf_counter()
    # Interior point scales far better than simplex on these LPs; crossover (HiGHS' default)
    # still returns a basic optimal solution with exact duals.
    options = {"solver": "ipm"} if n_vars > 20_000 else {}
    with quiet_stdout(), solving():
        solver = pulp.HiGHS(msg=False, timeLimit=time_limit_s, mip=False, **options)
        prob.solve(solver)
    solve_s = time.perf_counter() - t1
    if prob.status != pulp.LpStatusOptimal or prob.sol_status != pulp.LpSolutionOptimal:
        if time_limit_s is not None and solve_s >= 0.9 * time_limit_s:
            raise LPTimeLimit(
                f"HiGHS reached the time limit of {time_limit_s:g} s on an LP of {n_vars:,} "
                "variables"
            )
        raise SolverError(
            f"HiGHS did not reach an optimal solution: status {pulp.LpStatus[prob.status]}"
            + (f" (time limit {time_limit_s} s)" if time_limit_s else "")
        )
    return solve_s


def _flows(
    flow: list[dict[int, pulp.LpVariable]],
    n_arcs: int,
    cap_scale: float,
    keep_commodity_flows: bool,
) -> tuple[np.ndarray, list[dict[int, float]] | None]:
    """Total flow per arc and, if asked for, each commodity's (capacity units)."""
    arc_flow = np.zeros(n_arcs)
    keep: list[dict[int, float]] | None = [] if keep_commodity_flows else None
    for fk in flow:
        dk: dict[int, float] = {}
        for a, var in fk.items():
            x = var.varValue or 0.0
            if x > 0:
                arc_flow[a] += x
                if keep is not None:
                    dk[a] = x * cap_scale
        if keep is not None:
            keep.append(dk)
    return arc_flow * cap_scale, keep


@contextlib.contextmanager
def quiet_stdout() -> Iterator[None]:
    """Send file descriptor 1 to /dev/null: HiGHS prints its banner there even with output off,
    which would corrupt ``--json`` on stdout."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no real stdout (embedded interpreters)
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def _flow_variables(
    n_arcs: int, n_comm: int, commodity_arcs: Sequence[Sequence[int]] | None
) -> list[dict[int, pulp.LpVariable]]:
    """f[k][a] >= 0 for each commodity k and each arc a it may use."""
    flow: list[dict[int, pulp.LpVariable]] = []
    for k in range(n_comm):
        usable = range(n_arcs) if commodity_arcs is None else commodity_arcs[k]
        flow.append({a: pulp.LpVariable(f"f{k}_{a}", lowBound=0) for a in usable})
    return flow


def _add_conservation_rows(
    prob: pulp.LpProblem,
    arcs: Sequence[tuple[Hashable, Hashable]],
    commodities: Sequence[Commodity],
    flow: list[dict[int, pulp.LpVariable]],
    theta: pulp.LpVariable,
    dem_max: float,
) -> int:
    """out(v) - in(v) = theta * b_k(v) for every commodity k and vertex v it touches."""
    rows = 0
    for k, (com, fk) in enumerate(zip(commodities, flow, strict=True)):
        terms: dict[Hashable, list[tuple[pulp.LpVariable, float]]] = {}
        for a, var in fk.items():
            u, v = arcs[a]
            terms.setdefault(u, []).append((var, 1.0))
            terms.setdefault(v, []).append((var, -1.0))
        supply = sum(com.demands.values()) / dem_max
        b: dict[Hashable, float] = {com.source: supply}
        for t, d in com.demands.items():
            if t == com.source:
                raise ValueError(f"commodity {k}: a demand from {t!r} to itself")
            b[t] = b.get(t, 0.0) - d / dem_max
        for v in b:
            terms.setdefault(v, [])
        for i, (v, tv) in enumerate(terms.items()):
            expr = pulp.LpAffineExpression(tv)
            bv = b.get(v, 0.0)
            if bv:
                expr.addterm(theta, -bv)
            prob.addConstraint(pulp.LpConstraint(expr, pulp.LpConstraintEQ, f"cons_{k}_{i}", 0.0))
            rows += 1
    return rows


def _add_capacity_rows(
    prob: pulp.LpProblem,
    capacity_rows: Sequence[tuple[Sequence[int], float]],
    cap_scale: float,
    flow: list[dict[int, pulp.LpVariable]],
    weights: list[float],
    n_arcs: int,
) -> list[pulp.LpConstraint | None]:
    """sum over the row's arcs and all commodities of w[k] f[k][a] <= bound, for every row."""
    per_arc: list[list[tuple[pulp.LpVariable, float]]] = [[] for _ in range(n_arcs)]
    for fk, w in zip(flow, weights, strict=True):
        for a, var in fk.items():
            per_arc[a].append((var, w))
    rows: list[pulp.LpConstraint | None] = []
    for i, (arc_ids, bound) in enumerate(capacity_rows):
        terms = [t for a in arc_ids for t in per_arc[a]]
        if not terms:
            rows.append(None)
            continue
        row = pulp.LpConstraint(
            pulp.LpAffineExpression(terms), pulp.LpConstraintLE, f"cap_{i}", bound / cap_scale
        )
        prob.addConstraint(row)
        rows.append(row)
    return rows
