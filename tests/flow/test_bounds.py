"""Certified bounds: the cut upper bound and the routing lower bound bracket the exact LP."""

from __future__ import annotations

import pytest

from topo.builders import build
from topo.flow import alltoall_bandwidth
from topo.flow.bounds import cut_upper_bound
from topo.flow.failures import fail

NIC = 50e9  # B/s


def test_server_cut_of_a_non_blocking_ft2():
    # 16 servers x 2 GPUs: a server's 2 NICs carry 2 x 30 pair-units: lambda <= 100e9 / 60.
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    ub, what = cut_upper_bound(G)
    assert ub == pytest.approx(2 * NIC / (2 * 30))
    assert "server" in what


def test_leaf_cut_of_an_oversubscribed_ft2_is_tight():
    # 8-port FT2 at 3:1: 8 leaves of 3 servers (6 GPUs), 2 x 50 GB/s up each; 48 GPUs.
    # Leaf cut: 100e9 / (6 * 42); the server cut 100e9 / (2 * 46) is looser.
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2, oversubscription=3)
    ub, what = cut_upper_bound(G)
    assert ub == pytest.approx(2 * NIC / (6 * 42))
    assert "leaf" in what
    assert alltoall_bandwidth(G).pair_rate_GBps * 1e9 == pytest.approx(ub, rel=1e-6)


@pytest.mark.parametrize(
    "family,kw",
    [
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, oversubscription=3)),
        ("mpft", dict(switch_ports=8, gpus_per_node=4, nics_per_node=4)),
        ("ft3", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=40)),
    ],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_bounds_bracket_the_exact_rate(family, kw, seed):
    G = build(family, **kw)
    spine_links = [
        f"{u}--{v}" for u, v, d in G.edges(data=True) if d["kind"] == "fabric" and "leaf" in u + v
    ]
    G, _ = fail(G, named=spine_links[5 * seed : 5 * seed + 1])  # keeps up/down routes
    exact = alltoall_bandwidth(G)
    b = alltoall_bandwidth(G, max_variables=10)  # forces the bounds
    assert exact.exact and not b.exact and b.method == "bounds"
    lo, hi = b.extra["lower_bound_busbw_GBps"], b.extra["upper_bound_busbw_GBps"]
    assert lo > 0
    assert lo <= exact.alltoall_busbw_GBps * (1 + 1e-6)
    assert hi >= exact.alltoall_busbw_GBps * (1 - 1e-6)
    assert b.alltoall_busbw_GBps == pytest.approx(lo)
    assert b.extra["gap"] == pytest.approx(1 - lo / hi)


def test_time_limit_gives_bounds_around_the_exact_rate():
    # A damaged MPFT of 16-port switches: the exact LP takes a fraction of a second, so a
    # 1 ms HiGHS limit is reached, and the bounds must bracket the exact rate.
    G, _ = fail(build("mpft", switch_ports=16), links=6, seed=1)
    exact = alltoall_bandwidth(G)
    b = alltoall_bandwidth(G, time_limit_s=1e-3)
    assert exact.exact and b.method == "bounds" and not b.exact
    assert "time limit" in b.reductions[-1]
    assert b.extra["lower_bound_busbw_GBps"] <= exact.alltoall_busbw_GBps * (1 + 1e-6)
    assert b.extra["upper_bound_busbw_GBps"] >= exact.alltoall_busbw_GBps * (1 - 1e-6)
