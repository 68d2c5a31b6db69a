"""The solvers' entry points check a graph built in memory as the file loader checks a file:
every edge a finite capacity within topo.fabric.CAPACITY_RANGE_Bps, and the solver limits in
range (issue 41). Before, a NaN or infinite capacity made the edge unconstrained, -1 or 0 gave
a number, a missing one was a KeyError, and max_variables=-1 or time_limit_s=nan ran."""

from __future__ import annotations

import math

import numpy as np
import pytest

from topo.builders import build
from topo.errors import FormatError, SpecError
from topo.fabric import capacity_fault, check_schema
from topo.flow import (
    alltoall_bandwidth,
    concurrent_flow,
    damaged_bandwidth,
    max_concurrent_flow,
    resilience,
    routed_alltoall,
    server_demand_time,
)
from topo.flow.solve.lp import Commodity
from topo.traffic import uniform_alltoall

EDGE = ("leaf0", "spine0")  # a switch-to-switch cable of the 8-port fat tree


@pytest.fixture(scope="module")
def ft2():
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    assert G.has_edge(*EDGE)
    return G


DOORS = {
    "alltoall_bandwidth": lambda G: alltoall_bandwidth(G),
    "concurrent_flow": lambda G: concurrent_flow(G, uniform_alltoall(G)),
    "routed_alltoall": lambda G: routed_alltoall(G, "ecmp", seed=0),
    "damaged_bandwidth": lambda G: damaged_bandwidth(G, links=1),
    "resilience": lambda G: resilience(G, trials=2, links=1),
    "server_demand_time": lambda G: server_demand_time(G, {(0, 1): 1e9}),
}

RULE = "'capacity' must be a number of B/s from 1000 to 1e+15"


@pytest.mark.parametrize("door", sorted(DOORS))
@pytest.mark.parametrize(
    "capacity, got",
    [
        (math.nan, "got nan"),
        (math.inf, "got inf"),
        (-1, "got -1"),
        (0.0, "got 0.0"),
        (999.0, "got 999.0"),  # below 1 kB/s
        ("5e10", "got '5e10'"),
    ],
)
def test_a_bad_capacity_is_refused_naming_the_edge(ft2, door, capacity, got) -> None:
    G = ft2.copy()
    G.edges[EDGE]["capacity"] = capacity
    with pytest.raises(SpecError) as info:
        DOORS[door](G)
    assert str(info.value) == f"G: edge 'leaf0'-'spine0': {RULE}, {got}"
    assert info.value.param == "G"


@pytest.mark.parametrize("door", sorted(DOORS))
def test_a_missing_capacity_is_refused_not_a_key_error(ft2, door) -> None:
    G = ft2.copy()
    del G.edges[EDGE]["capacity"]
    with pytest.raises(SpecError, match=r"^G: edge 'leaf0'-'spine0' has no 'capacity' \(a num"):
        DOORS[door](G)


def test_the_first_bad_edge_in_edge_order_is_named(ft2) -> None:
    G = ft2.copy()
    edges = list(G.edges)
    first, later = edges[5], edges[-3]  # positions chosen in G.edges order
    G.edges[later]["capacity"] = math.nan
    G.edges[first]["capacity"] = -5
    assert capacity_fault(G) == f"edge {first[0]!r}-{first[1]!r}: {RULE}, got -5"


def test_numpy_and_huge_numbers_are_judged_as_numbers(ft2) -> None:
    G = ft2.copy()
    for _, _, d in G.edges(data=True):
        d["capacity"] = np.float64(d["capacity"])  # (not float: the per-edge path)
    assert capacity_fault(G) is None
    G.edges[EDGE]["capacity"] = 10**400  # beyond any float
    assert capacity_fault(G).endswith("got 1e+400 (an integer of 401 digits)")


def test_a_file_is_held_to_the_same_rule(ft2) -> None:
    G = ft2.copy()
    G.edges[EDGE]["capacity"] = math.inf
    with pytest.raises(FormatError) as info:
        check_schema(G, "f.json")
    assert str(info.value) == f"f.json: edge 'leaf0'-'spine0': {RULE}, got inf"


def test_an_intact_fabric_passes(ft2) -> None:
    # NIC-bound: a server's 2 x 50 GB/s shared by its 2 GPUs' traffic to the 30 GPUs of the
    # other 15 servers, so lambda = 2 * 50 / (2 * 30) GB/s and busbw = lambda * (32 - 1)
    r = alltoall_bandwidth(ft2)
    assert r.alltoall_busbw_Bps == pytest.approx(2 * 50e9 / (2 * 30) * 31, rel=1e-9)


@pytest.mark.parametrize(
    "kw, param",
    [
        (dict(max_variables=-1), "max_variables"),
        (dict(max_variables=0), "max_variables"),
        (dict(max_variables=2.5), "max_variables"),
        (dict(max_variables=True), "max_variables"),
        (dict(time_limit_s=math.nan), "time_limit_s"),
        (dict(time_limit_s=0), "time_limit_s"),
        (dict(time_limit_s=-1.0), "time_limit_s"),
        (dict(time_limit_s="60"), "time_limit_s"),
    ],
)
def test_solver_limits_out_of_range_are_refused(ft2, kw, param) -> None:
    for call in (
        lambda: alltoall_bandwidth(ft2, **kw),
        lambda: concurrent_flow(ft2, uniform_alltoall(ft2), **kw),
        lambda: damaged_bandwidth(ft2, links=1, **kw),
        lambda: resilience(ft2, trials=2, links=1, **kw),
        lambda: max_concurrent_flow([("s", "t")], [1.0], [Commodity("s", {"t": 1.0})], **kw),
    ):
        with pytest.raises(SpecError, match=rf"^{param} must be .*, got ") as info:
            call()
        assert info.value.param == param
    if "time_limit_s" not in kw:
        with pytest.raises(SpecError, match="^max_variables must be a whole number >= 1"):
            server_demand_time(ft2, {(0, 1): 1e9}, **kw)


def test_no_time_limit_is_none_or_inf(ft2) -> None:
    a = alltoall_bandwidth(ft2, time_limit_s=None).alltoall_busbw_Bps
    assert alltoall_bandwidth(ft2, time_limit_s=math.inf).alltoall_busbw_Bps == a
