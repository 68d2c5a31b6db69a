"""The maximum concurrent flow LP of :mod:`topo.flow.solve.lp` as arrays, passed to HiGHS directly.

Building the model through a modelling layer (one Python object per variable, term and row)
cost more than HiGHS' own solve on the reduced LPs of large fabrics; here every column, row and
matrix entry is a numpy array, and the model goes to HiGHS in one ``passModel`` call (column-wise
sparse matrix).

The LP is the one :mod:`topo.flow.solve.lp` states, laid out as the modelling layer the project used
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

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import highspy


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


__all__ = ["FlowModel", "flow_model"]
