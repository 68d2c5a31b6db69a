"""Demand: validation, sums and the hose bound, against hand counts."""

from __future__ import annotations

import math

import pytest

from topo.builders import build
from topo.errors import TopoError
from topo.traffic import Demand, hose_bound, uniform_alltoall


def test_explicit_sums_and_hose_bound():
    d = Demand("server", (0, 1, 2), {(0, 1): 30.0, (0, 2): 10.0, (2, 1): 5.0})
    assert d.total_bytes == 45.0
    assert (d.out_bytes(0), d.in_bytes(1), d.out_bytes(1)) == (40.0, 35.0, 0.0)
    # server 0 sends 40 B over 10 B/s; server 1 receives 35 B over 7 B/s: 4 s vs 5 s
    assert d.hose_time({0: 10.0, 1: 7.0, 2: 100.0}) == pytest.approx(5.0)
    assert sorted(d.pairs()) == [((0, 1), 30.0), ((0, 2), 10.0), ((2, 1), 5.0)]


def test_uniform_counts_from_the_closed_form():
    G = build("ft2", switch_ports=8, gpus_per_node=4, nics_per_node=4)  # 32 GPUs, 8 servers
    d = uniform_alltoall(G, 2.0)
    assert d.uniform and len(d.terminals) == 32
    assert d.total_bytes == 2.0 * 32 * 31
    assert d.out_bytes(d.terminals[0]) == 2.0 * 31
    s = uniform_alltoall(G, 1.0, level="server")
    assert s.terminals == tuple(range(8))
    assert sum(1 for _ in s.pairs()) == 8 * 7


@pytest.mark.parametrize(
    "entries, match",
    [
        ({(0, 0): 1.0}, "to itself"),
        ({(0, 9): 1.0}, "unknown terminal 9"),
        ({(0, 1): -1.0}, "finite and >= 0"),
        ({(0, 1): math.nan}, "finite and >= 0"),
        ({(0, 1): 0.0}, "all zero"),
    ],
)
def test_bad_entries_are_refused(entries, match):
    with pytest.raises(TopoError, match=match):
        Demand("server", (0, 1), entries)


def test_bad_uniform_and_level_are_refused():
    with pytest.raises(TopoError, match="bytes per pair"):
        Demand("gpu", ("a", "b"), bytes_per_pair=math.inf)
    with pytest.raises(TopoError, match="at least two"):
        Demand("gpu", ("a",), bytes_per_pair=1.0)
    with pytest.raises(TopoError, match="level"):
        Demand("rack", ("a", "b"), bytes_per_pair=1.0)  # type: ignore[arg-type]
    with pytest.raises(TopoError, match="no capacity"):
        Demand("server", (0, 1), {(0, 1): 1.0}).hose_time({0: 0.0})


def test_load_peak_and_scaled():
    d = Demand("server", (0, 1, 2), {(0, 1): 0.5, (2, 1): 1.0}, name="x")
    assert (d.load(0), d.load(1), d.load(2)) == (0.5, 1.5, 1.0)
    assert d.peak_bytes == 1.5
    # every terminal at 0.25 B/s: server 1's 1.5 B take 6 s, as with the capacities spelled out
    assert d.hose_time(0.25) == d.hose_time(dict.fromkeys(d.terminals, 0.25)) == 6.0
    with pytest.raises(TopoError, match="no capacity"):
        d.hose_time(0.0)
    s = d.scaled(1e9)
    assert dict(s.entries) == {(0, 1): 5e8, (2, 1): 1e9} and s.name == "x"
    u = uniform_alltoall(build("ft2", switch_ports=8), 2.0).scaled(3.0)
    assert u.uniform and u.bytes_per_pair == 6.0 and u.peak_bytes == 6.0 * 31
    with pytest.raises(TopoError, match="scale factor"):
        d.scaled(0.0)


def test_hose_bound_from_loads():
    # a: 6 B over 2 B/s = 3 s; b: 2 B over 0.5 B/s = 4 s; c has no capacity given; d no load
    loads = [("a", 6.0), ("b", 2.0), ("c", 9.0), ("d", 0.0)]
    assert hose_bound(loads, {"a": 2.0, "b": 0.5, "d": 0.0}) == 4.0
    assert hose_bound([], {"a": 1.0}) == 0.0
    with pytest.raises(TopoError, match="'a' has traffic but no capacity"):
        hose_bound(loads, {"a": 0.0})
