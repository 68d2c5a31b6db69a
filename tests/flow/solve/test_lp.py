"""The maximum-concurrent-flow LP against hand-solved cases, with its flows validated."""

from __future__ import annotations

import pytest

from topo.errors import SolverError
from topo.flow.solve import lp as lp_mod
from topo.flow.solve.lp import Commodity, max_concurrent_flow

from .._validate import validate_flows


def test_two_parallel_paths_add_up():
    # s->t directly (2) and through a (min(1, 1)): a single commodity's max flow is 3.
    arcs = [("s", "a"), ("a", "t"), ("s", "t")]
    cap = [1.0, 1.0, 2.0]
    com = [Commodity("s", {"t": 1.0})]
    sol = max_concurrent_flow(arcs, cap, com, keep_commodity_flows=True)
    assert sol.theta == pytest.approx(3.0)
    validate_flows(arcs, cap, com, sol)


def test_concurrent_flow_shares_a_bottleneck():
    # Two commodities, s1->t (demand 1) and s2->t (demand 3), both through the arc m->t of
    # capacity 8: theta (1 + 3) <= 8 -> theta = 2.
    arcs = [("s1", "m"), ("s2", "m"), ("m", "t")]
    cap = [10.0, 10.0, 8.0]
    com = [Commodity("s1", {"t": 1.0}), Commodity("s2", {"t": 3.0})]
    sol = max_concurrent_flow(arcs, cap, com, keep_commodity_flows=True)
    assert sol.theta == pytest.approx(2.0)
    validate_flows(arcs, cap, com, sol)
    # only the shared arc binds
    assert sol.arc_dual[2] == pytest.approx(1.0)
    assert sol.arc_dual[0] == pytest.approx(0.0) and sol.arc_dual[1] == pytest.approx(0.0)


def test_ring_all_to_all_hand_worked():
    # A bidirectional ring of 4 vertices, unit arcs, uniform all-to-all with demand 1.
    # Each ordered pair at distance 1 uses 1 arc, at distance 2 uses 2 arcs: total arc use per
    # theta is 4 * (1 + 1 + 2) = 16, and there are 8 arcs of capacity 1: theta <= 8/16 = 1/2,
    # achieved by sending distance-2 pairs half each way.
    nodes = range(4)
    arcs = [(i, (i + 1) % 4) for i in nodes] + [((i + 1) % 4, i) for i in nodes]
    cap = [1.0] * len(arcs)
    com = [Commodity(i, {j: 1.0 for j in nodes if j != i}) for i in nodes]
    sol = max_concurrent_flow(arcs, cap, com, keep_commodity_flows=True)
    assert sol.theta == pytest.approx(0.5)
    validate_flows(arcs, cap, com, sol)


def test_capacity_rows_bound_a_group_of_arcs():
    # Replace the per-arc rows by one row over both arcs into t: flow into t <= 2.5.
    arcs = [("s", "a"), ("a", "t"), ("s", "t")]
    sol = max_concurrent_flow(
        arcs,
        [1.0, 1.0, 2.0],
        [Commodity("s", {"t": 1.0})],
        capacity_rows=[((0,), 1.0), ((1, 2), 2.5)],
    )
    assert sol.theta == pytest.approx(2.5)


def test_commodity_arcs_forbid_a_path():
    # Forbidding the direct arc leaves only the path through a (capacity 1).
    arcs = [("s", "a"), ("a", "t"), ("s", "t")]
    sol = max_concurrent_flow(
        arcs, [1.0, 1.0, 2.0], [Commodity("s", {"t": 1.0})], commodity_arcs=[[0, 1]]
    )
    assert sol.theta == pytest.approx(1.0)


def test_large_units_are_conditioned():
    # Capacities in B/s (5e10) and demands as pair counts: theta comes back in B/s per pair.
    arcs = [("s", "t")]
    sol = max_concurrent_flow(arcs, [50e9], [Commodity("s", {"t": 4.0})])
    assert sol.theta == pytest.approx(12.5e9)


def test_unreachable_sink_gives_zero():
    sol = max_concurrent_flow([("s", "a")], [1.0], [Commodity("s", {"t": 1.0})])
    assert sol.theta == pytest.approx(0.0)


def test_size_guard():
    arcs = [("s", "t")] * 10
    with pytest.raises(SolverError, match="variables, over the limit of 5"):
        max_concurrent_flow(arcs, [1.0] * 10, [Commodity("s", {"t": 1.0})], max_variables=5)


def test_bad_arguments():
    with pytest.raises(ValueError, match="one entry per arc"):
        max_concurrent_flow([("s", "t")], [1.0, 2.0], [Commodity("s", {"t": 1.0})])
    with pytest.raises(ValueError, match="positive"):
        max_concurrent_flow([("s", "t")], [0.0], [Commodity("s", {"t": 1.0})])
    with pytest.raises(ValueError, match="to itself"):
        max_concurrent_flow([("s", "t")], [1.0], [Commodity("s", {"s": 1.0})])


def _ring_lp(rows: bool):
    # The bidirectional ring of 4 vertices, unit arcs, uniform all-to-all: theta = 1/2 (as
    # test_ring_all_to_all_hand_worked); with ``rows`` every arc is its own capacity row.
    nodes = range(4)
    arcs = [(i, (i + d) % 4) for i in nodes for d in (1, 3)]
    cap = [1.0] * len(arcs)
    com = [Commodity(i, {j: 1.0 for j in nodes if j != i}) for i in nodes]
    capacity_rows = [((a,), 1.0) for a in range(len(arcs))] if rows else None
    return arcs, cap, com, capacity_rows


@pytest.mark.parametrize("rows", [False, True])
@pytest.mark.parametrize("ipm", [False, True])
def test_interior_point_only_when_asked_and_over_the_threshold(monkeypatch, rows, ipm):
    # LPs asked for by interior point above IPM_ABOVE go to it, every other LP to HiGHS'
    # choice; both reach the hand-worked optimum, with or without orbit rows.
    chosen = []
    real = lp_mod._solve

    def spy(model, n_vars, time_limit_s, ipm=False):
        chosen.append(ipm)
        return real(model, n_vars, time_limit_s, ipm)

    monkeypatch.setattr(lp_mod, "_solve", spy)
    monkeypatch.setattr(lp_mod, "IPM_ABOVE", 10)  # (the ring LP has 32 flow variables)
    arcs, cap, com, capacity_rows = _ring_lp(rows)
    sol = max_concurrent_flow(arcs, cap, com, capacity_rows=capacity_rows, interior_point=ipm)
    assert sol.theta == pytest.approx(0.5, rel=1e-9)
    assert chosen == [ipm]
    monkeypatch.setattr(lp_mod, "IPM_ABOVE", 32)
    sol = max_concurrent_flow(arcs, cap, com, capacity_rows=capacity_rows, interior_point=ipm)
    assert sol.theta == pytest.approx(0.5, rel=1e-9)
    assert chosen == [ipm, False]
