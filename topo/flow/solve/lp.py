"""Maximum concurrent multicommodity flow as a linear program (HiGHS).

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

**The model as arrays** (:class:`FlowModel`, :func:`flow_model`), passed to HiGHS directly.
Building the model through a modelling layer (one Python object per variable, term and row)
cost more than HiGHS' own solve on the reduced LPs of large fabrics; here every column, row and
matrix entry is a numpy array, and the model goes to HiGHS in one ``passModel`` call (column-wise
sparse matrix).

The LP above is laid out as the modelling layer the project used
before (pulp 3) laid it out, so that HiGHS sees the same model and takes the same path:

- columns: one flow variable ``f{k}_{a}`` per commodity ``k`` and arc ``a`` it may use, then
  ``theta``, all in the order of their names as strings (pulp sorts its variables by name);
  every column has bounds ``[0, inf)``; the objective minimises ``-theta``;
- rows: for each commodity in turn, one conservation row per vertex it touches, in order of
  first appearance along its usable arcs (tail, then head), then its source and sinks not yet
  seen: ``out(v) - in(v) - theta b_k(v) = 0``; then one capacity row per entry of
  ``capacity_rows`` that holds a flow variable: ``sum w_k f_{k,a} <= bound``.

Entries of equal row and column are summed; zero entries are left out.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from topo.errors import LPTimeLimit, LPTooLarge, SolverError, SpecError
from topo.interrupts import solving

if TYPE_CHECKING:
    import highspy

DEFAULT_MAX_VARIABLES = 2_000_000
"""Largest LP (flow variables) that :func:`max_concurrent_flow` builds by default: for
multicommodity LPs, many minutes of HiGHS (and several GiB inside it). Larger problems raise
:class:`SolverError` at once instead of exhausting memory or patience."""

IPM_ABOVE = 20_000
"""LPs asked for by interior point (``interior_point=True``: the symmetry-reduced all-to-all,
:func:`topo.flow.reduce.symmetry.solve_symmetric`, and the general LP,
:func:`topo.flow.exact.general.general_lp`) with more flow variables than this are solved by
HiGHS' interior point method with crossover (a basic optimal solution, exact duals); every
other LP by HiGHS' own choice for LPs (dual simplex). Chosen by measurement on the LPs the
benchmarks and tests build (``benchmarks/README.md``, "HiGHS: simplex or interior point"):
interior point alone finished FT3's orbit LP in time; simplex was 1.2 to 40 times faster on
the per-class, per-job and ring-step LPs, with the same optimum."""

MAX_CAPACITY_SPREAD = 1e9
"""Largest ratio of the largest to the smallest arc capacity in one LP (HiGHS works to about
1e-7 relative: a wider spread would lose the small arcs)."""


def check_solver_limits(max_variables: int, time_limit_s: float | None = None) -> None:
    """Refuse solver limits that mean nothing, as the command line's ``--max-variables`` and
    ``--time-limit`` do: the solvers' entry points call it first.

    Parameters
    ----------
    max_variables : int
        Largest LP to solve, in flow variables: a whole number >= 1.
    time_limit_s : float, optional
        HiGHS time limit, s: a number > 0; None or ``inf``: no limit (HiGHS's default).

    Raises
    ------
    SpecError
        (``.param`` ``max_variables`` or ``time_limit_s``) either out of its range, naming
        it and the value.

    Examples
    --------
    >>> check_solver_limits(2_000_000, 120.0)
    >>> check_solver_limits(-1)
    Traceback (most recent call last):
    ...
    topo.errors.SpecError: max_variables must be a whole number >= 1, got -1
    """
    if (
        isinstance(max_variables, bool)
        or not isinstance(max_variables, (int, np.integer))
        or max_variables < 1
    ):
        raise SpecError(
            f"max_variables must be a whole number >= 1, got {max_variables!r}",
            param="max_variables",
        )
    if time_limit_s is not None and (
        isinstance(time_limit_s, bool)
        or not isinstance(time_limit_s, (int, float, np.integer, np.floating))
        or math.isnan(time_limit_s)
        or time_limit_s <= 0
    ):
        raise SpecError(
            f"time_limit_s must be a number of seconds > 0 (inf or None: no limit), got "
            f"{time_limit_s!r}",
            param="time_limit_s",
        )


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
        Wall time to build the model and for HiGHS to solve it.
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
    interior_point: bool = False,
) -> MCFSolution:
    """Solve the maximum concurrent flow LP with HiGHS.

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
    interior_point : bool
        Solve by interior point when over :data:`IPM_ABOVE` variables (else HiGHS' choice,
        dual simplex): for the LPs measured faster that way.

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
    check_solver_limits(max_variables, time_limit_s)
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

    if capacity_rows is None:
        capacity_rows = [((a,), float(cap[a])) for a in range(n_arcs)]
    weights = [1.0] * len(commodities) if commodity_weight is None else list(commodity_weight)
    if len(weights) != len(commodities):
        raise ValueError("commodity_weight must have one entry per commodity")
    model = flow_model(
        arcs,
        [(c.source, c.demands) for c in commodities],
        commodity_arcs,
        capacity_rows,
        weights,
        dem_max,
        cap_scale,
    )
    build_s = time.perf_counter() - t0
    ipm = interior_point and n_vars > IPM_ABOVE
    x, row_dual, solve_s = _solve(model, n_vars, time_limit_s, ipm)
    arc_flow, keep = _flows(model, x, n_arcs, len(commodities), cap_scale, keep_commodity_flows)
    duals = np.zeros(n_arcs)
    for (arc_ids, _), r in zip(capacity_rows, model.capacity_row, strict=True):
        if r is not None:
            duals[list(arc_ids)] = abs(row_dual[r])
    if duals.size and duals.max() > 0:
        duals = duals / duals.max()
    return MCFSolution(
        theta=float(x[model.theta_column]) * cap_scale / dem_max,
        arc_flow=arc_flow,
        arc_dual=duals,
        commodity_flow=keep,
        variables=n_vars + 1,
        constraints=model.lp.num_row_,
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


def _solve(
    model: FlowModel, n_vars: int, time_limit_s: float | None, ipm: bool = False
) -> tuple[np.ndarray, np.ndarray, float]:
    """Run HiGHS on ``model`` (by interior point and crossover if ``ipm``, else HiGHS' own
    choice, :data:`IPM_ABOVE`); return the column values, the row duals and its wall time (s).
    Non-optimal is an error."""
    import highspy  # (here: loading HiGHS takes 0.05 s, and most commands solve no LP)

    t1 = time.perf_counter()
    with quiet_stdout(), solving():
        h = highspy.Highs()  # type: ignore[no-untyped-call]
        h.setOptionValue("output_flag", False)
        if time_limit_s is not None:
            h.setOptionValue("time_limit", float(time_limit_s))
        if ipm:  # (crossover, HiGHS' default, still gives a basic solution, exact duals)
            h.setOptionValue("solver", "ipm")
        h.passModel(model.lp)
        h.run()
    solve_s = time.perf_counter() - t1
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        if time_limit_s is not None and (
            status == highspy.HighsModelStatus.kTimeLimit or solve_s >= 0.9 * time_limit_s
        ):
            raise LPTimeLimit(
                f"HiGHS reached the time limit of {time_limit_s:g} s on an LP of {n_vars:,} "
                "variables"
            )
        raise SolverError(
            f"HiGHS did not reach an optimal solution: status {h.modelStatusToString(status)}"
            + (f" (time limit {time_limit_s} s)" if time_limit_s else "")
        )
    sol = h.getSolution()
    return np.asarray(sol.col_value), np.asarray(sol.row_dual), solve_s


def _flows(
    model: FlowModel,
    x: np.ndarray,
    n_arcs: int,
    n_comm: int,
    cap_scale: float,
    keep_commodity_flows: bool,
) -> tuple[np.ndarray, list[dict[int, float]] | None]:
    """Total flow per arc and, if asked for, each commodity's (capacity units). Values at or
    below 0 (round-off) count as no flow."""
    f = x[model.var_column]
    f = np.where(f > 0, f, 0.0)
    arc_flow = np.bincount(model.var_arc, weights=f, minlength=n_arcs) * cap_scale
    if not keep_commodity_flows:
        return arc_flow, None
    keep: list[dict[int, float]] = [{} for _ in range(n_comm)]
    for k, a, v in zip(
        model.var_commodity.tolist(), model.var_arc.tolist(), f.tolist(), strict=True
    ):
        if v > 0:
            keep[k][a] = v * cap_scale
    return arc_flow, keep


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


@dataclass(frozen=True)
class FlowModel:
    """The LP as arrays, and how to read a solution back.

    Attributes
    ----------
    lp : highspy.HighsLp
        The model, ready for ``Highs.passModel``.
    var_commodity, var_arc : numpy.ndarray of int, shape (flow variables,)
        Commodity and arc of each flow variable, commodity by commodity, each commodity's arcs
        in the order given.
    var_column : numpy.ndarray of int, shape (flow variables,)
        Column of each flow variable.
    theta_column : int
        Column of ``theta``.
    capacity_row : list of int or None
        HiGHS row of each entry of the capacity rows (None: it holds no flow variable and was
        left out).
    conservation_rows : int
        Rows before the capacity rows.
    """

    lp: highspy.HighsLp
    var_commodity: np.ndarray
    var_arc: np.ndarray
    var_column: np.ndarray
    theta_column: int
    capacity_row: list[int | None]
    conservation_rows: int


@dataclass
class _Entries:
    """Matrix entries collected so far: rows, flow variables (or -1 for theta), values."""

    rows: list[np.ndarray]
    vars: list[np.ndarray]
    vals: list[np.ndarray]

    def add(self, rows: np.ndarray, vars_: np.ndarray, vals: np.ndarray) -> None:
        self.rows.append(rows)
        self.vars.append(vars_)
        self.vals.append(vals)


def flow_model(
    arcs: Sequence[tuple[Hashable, Hashable]],
    commodities: Sequence[tuple[Hashable, Mapping[Hashable, float]]],
    commodity_arcs: Sequence[Sequence[int]] | None,
    capacity_rows: Sequence[tuple[Sequence[int], float]],
    weights: Sequence[float],
    dem_max: float,
    cap_scale: float,
) -> FlowModel:
    """The maximum concurrent flow LP as a :class:`FlowModel` (layout in the module docstring).

    Parameters
    ----------
    arcs : sequence of (tail, head)
        Directed arcs.
    commodities : sequence of (source, {sink: demand})
        Demands from each source (any non-negative unit).
    commodity_arcs : sequence of sequence of int, or None
        Arcs each commodity may use (None: all).
    capacity_rows : sequence of (arc indices, bound)
        Rows ``sum over the arcs and commodities of w_k f_{k,a} <= bound`` (capacity units).
    weights : sequence of float
        ``w_k`` per commodity.
    dem_max, cap_scale : float
        Demands are divided by ``dem_max`` and bounds by ``cap_scale`` (conditioning).

    Returns
    -------
    FlowModel

    Raises
    ------
    ValueError
        A commodity with a demand from its source to itself.
    """
    vid: dict[Hashable, int] = {}
    tail = np.fromiter((vid.setdefault(u, len(vid)) for u, _ in arcs), np.int64, len(arcs))
    head = np.fromiter((vid.setdefault(v, len(vid)) for _, v in arcs), np.int64, len(arcs))
    if commodity_arcs is None:
        usable = [np.arange(len(arcs))] * len(commodities)
    else:
        usable = [np.asarray(a, dtype=np.int64) for a in commodity_arcs]
    var_arc = np.concatenate(usable) if usable else np.zeros(0, np.int64)
    var_commodity = np.repeat(np.arange(len(usable)), [len(a) for a in usable])
    entries = _Entries([], [], [])
    n_cons = _conservation(entries, tail, head, vid, commodities, usable, dem_max)
    capacity_row, n_cap, upper = _capacity(
        entries, capacity_rows, var_arc, var_commodity, weights, len(arcs), n_cons, cap_scale
    )
    var_column, theta_column = _columns(var_commodity, var_arc)
    lp = _highs_lp(entries, var_column, theta_column, n_cons, n_cap, upper)
    return FlowModel(
        lp=lp,
        var_commodity=var_commodity,
        var_arc=var_arc,
        var_column=var_column,
        theta_column=theta_column,
        capacity_row=capacity_row,
        conservation_rows=n_cons,
    )


def _conservation(
    entries: _Entries,
    tail: np.ndarray,
    head: np.ndarray,
    vid: dict[Hashable, int],
    commodities: Sequence[tuple[Hashable, Mapping[Hashable, float]]],
    usable: list[np.ndarray],
    dem_max: float,
) -> int:
    """Add every commodity's conservation rows; return how many there are."""
    base = 0
    offset = 0
    for k, ((source, demands), arcs_k) in enumerate(zip(commodities, usable, strict=True)):
        b: dict[Hashable, float] = {source: sum(demands.values()) / dem_max}
        for t, d in demands.items():
            if t == source:
                raise ValueError(f"commodity {k}: a demand from {t!r} to itself")
            b[t] = b.get(t, 0.0) - d / dem_max
        seq = np.empty(2 * len(arcs_k), dtype=np.int64)
        seq[0::2], seq[1::2] = tail[arcs_k], head[arcs_k]
        uniq, first = np.unique(seq, return_index=True)
        order = uniq[np.argsort(first, kind="stable")].tolist()
        seen = set(order)
        for v in b:
            i = vid.setdefault(v, len(vid))
            if i not in seen:
                order.append(i)
                seen.add(i)
        rank = np.zeros(len(vid), dtype=np.int64)
        rank[np.asarray(order, dtype=np.int64)] = np.arange(base, base + len(order))
        own = np.arange(offset, offset + len(arcs_k))
        entries.add(rank[tail[arcs_k]], own, np.ones(len(arcs_k)))
        entries.add(rank[head[arcs_k]], own, -np.ones(len(arcs_k)))
        theta_rows = [(int(rank[vid[v]]), -bv) for v, bv in b.items() if bv]
        if theta_rows:
            r, x = zip(*theta_rows, strict=True)
            entries.add(np.asarray(r), np.full(len(r), -1), np.asarray(x, dtype=float))
        base += len(order)
        offset += len(arcs_k)
    return base


def _capacity(
    entries: _Entries,
    capacity_rows: Sequence[tuple[Sequence[int], float]],
    var_arc: np.ndarray,
    var_commodity: np.ndarray,
    weights: Sequence[float],
    n_arcs: int,
    first_row: int,
    cap_scale: float,
) -> tuple[list[int | None], int, np.ndarray]:
    """Add the capacity rows that hold a flow variable; return each row's HiGHS row (or None),
    how many were added, and their upper bounds."""
    lens = np.fromiter((len(a) for a, _ in capacity_rows), np.int64, len(capacity_rows))
    row_of_pair = np.repeat(np.arange(len(capacity_rows)), lens)
    arc_of_pair = np.fromiter(
        (a for arc_ids, _ in capacity_rows for a in arc_ids), np.int64, int(lens.sum())
    )
    by_arc = np.argsort(var_arc, kind="stable")  # each arc's variables in commodity order
    count = np.bincount(var_arc, minlength=n_arcs)
    start = np.concatenate(([0], np.cumsum(count)[:-1]))
    per_pair = count[arc_of_pair]
    total = int(per_pair.sum())
    pair_first = np.concatenate(([0], np.cumsum(per_pair)[:-1]))
    step = np.arange(total) - np.repeat(pair_first, per_pair)
    var = by_arc[np.repeat(start[arc_of_pair], per_pair) + step]
    row = np.repeat(row_of_pair, per_pair)
    used = np.bincount(row, minlength=len(capacity_rows)) > 0
    renumber = np.cumsum(used) - 1 + first_row
    w = np.asarray(weights, dtype=float)
    entries.add(renumber[row], var, w[var_commodity[var]])
    capacity_row: list[int | None] = [
        int(r) if u else None for r, u in zip(renumber.tolist(), used.tolist(), strict=True)
    ]
    bounds = np.fromiter((b for _, b in capacity_rows), float, len(capacity_rows))
    return capacity_row, int(used.sum()), bounds[used] / cap_scale


def _columns(var_commodity: np.ndarray, var_arc: np.ndarray) -> tuple[np.ndarray, int]:
    """Column of each flow variable and of ``theta``: the variables' names (``f{k}_{a}``,
    ``theta``) in string order."""
    names = np.array(
        [f"f{k}_{a}" for k, a in zip(var_commodity.tolist(), var_arc.tolist(), strict=True)]
    )
    column = np.empty(len(names), dtype=np.int64)
    column[np.argsort(names, kind="stable")] = np.arange(len(names))
    return column, len(names)  # "theta" sorts after every "f..." name


def _highs_lp(
    entries: _Entries,
    var_column: np.ndarray,
    theta_column: int,
    n_cons: int,
    n_cap: int,
    cap_upper: np.ndarray,
) -> highspy.HighsLp:
    """The HiGHS model: bounds, objective ``min -theta``, column-wise matrix."""
    import highspy  # (loaded when an LP is built: topo.flow.solve.lp)

    n_col = theta_column + 1
    n_row = n_cons + n_cap
    rows = np.concatenate(entries.rows) if entries.rows else np.zeros(0, np.int64)
    vars_ = np.concatenate(entries.vars) if entries.vars else np.zeros(0, np.int64)
    vals = np.concatenate(entries.vals) if entries.vals else np.zeros(0)
    cols = np.where(vars_ < 0, theta_column, var_column[np.maximum(vars_, 0)])
    key = cols.astype(np.int64) * max(n_row, 1) + rows
    uniq, inverse = np.unique(key, return_inverse=True)
    summed = np.bincount(inverse, weights=vals, minlength=len(uniq))
    keep = summed != 0
    uniq, summed = uniq[keep], summed[keep]
    col_of, row_of = np.divmod(uniq, max(n_row, 1))
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n_col, n_row
    cost = np.zeros(n_col)
    cost[theta_column] = -1.0
    lp.col_cost_ = cost
    lp.col_lower_ = np.zeros(n_col)
    lp.col_upper_ = np.full(n_col, highspy.kHighsInf)
    lp.row_lower_ = np.concatenate((np.zeros(n_cons), np.full(n_cap, -highspy.kHighsInf)))
    lp.row_upper_ = np.concatenate((np.zeros(n_cons), cap_upper))
    m = lp.a_matrix_
    m.format_ = highspy.MatrixFormat.kColwise
    m.num_col_, m.num_row_ = n_col, n_row
    m.start_ = np.searchsorted(col_of, np.arange(n_col + 1)).astype(np.int32)
    m.index_ = row_of.astype(np.int32)
    m.value_ = summed
    return lp
