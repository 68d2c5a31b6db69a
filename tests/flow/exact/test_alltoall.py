"""The reduced all-to-all's order of work (topo/flow/exact/alltoall.py)."""

from __future__ import annotations

import time

import pytest

from topo.builders import build
from topo.flow import alltoall_bandwidth
from topo.flow.exact import alltoall
from topo.flow.failures.damage import fail
from topo.flow.reduce.planes import reduce
from topo.flow.reduce.servers import SolveContext, contract_servers
from topo.flow.reduce.symmetry import symmetry

SMALL = dict(switch_ports=8, gpus_per_node=4, nics_per_node=4)


@pytest.mark.parametrize(
    "G",
    [
        build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2),
        build("mrft", **SMALL),
        fail(build("mpft", **SMALL), links=5, seed=2)[0],
        fail(build("ft3", switch_ports=8, gpus_per_node=2, nics_per_node=2), links=3, seed=1)[0],
    ],
)
def test_the_lp_estimate_is_never_below_the_arcs(G):
    # K commodities over A arcs, U of them sources' up arcs: K (A - U) + U >= A; with
    # symmetry, orbits x A >= A. So more arcs than CERTIFY_ABOVE means a larger estimate.
    hs, _ = contract_servers(G)
    red = reduce(G, hs)
    gens = symmetry(G, red)
    assert red.lp_variables() >= len(red.arcs)
    assert alltoall._estimate(red, gens) >= len(red.arcs)


def test_many_arcs_try_the_routing_before_the_symmetry_search(monkeypatch):
    # A damaged 4-plane MPFT (128 GPUs; one NIC cable of node0 dead): its reduced network has
    # more arcs than a CERTIFY_ABOVE of 10, so the certified routing answers before any
    # symmetry search, with the hand value 3 x 50 GB/s / (4 x 124) and the general LP's.
    G = build("mpft", **SMALL)
    H, _ = fail(G, named=["node0/nic1--p1/leaf0"])
    searched = []
    monkeypatch.setattr(alltoall, "CERTIFY_ABOVE", 10)
    monkeypatch.setattr(alltoall, "symmetry", lambda *a: searched.append(1) or symmetry(*a))
    hs, terminal = contract_servers(H)
    r = alltoall.reduced_report(SolveContext(H, hs, terminal, time.perf_counter()), 10**6, False)
    assert searched == [] and r.method == "certified"
    assert r.pair_rate_Bps == pytest.approx(3 * 50e9 / (4 * 124), rel=1e-9)
    assert r.pair_rate_Bps == pytest.approx(
        alltoall_bandwidth(H, method="general").pair_rate_Bps, rel=1e-7
    )
