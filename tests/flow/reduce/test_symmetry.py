"""Class symmetry: verified automorphisms, the orbit LP held against the full reduced LP."""

from __future__ import annotations

import numpy as np
import pytest

from topo.builders import build
from topo.fabric import natural_key
from topo.flow import alltoall_bandwidth
from topo.flow.reduce.planes import reduce
from topo.flow.reduce.servers import contract_servers
from topo.flow.reduce.symmetry import (
    class_orbits,
    extend_to_classes,
    is_automorphism,
    solve_symmetric,
    symmetry,
)
from topo.flow.solve.lp import max_concurrent_flow


def _damaged_ft2():
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    G.remove_edge("leaf0", "spine0")
    return G


@pytest.mark.parametrize(
    ("make", "orbits"),
    [
        (
            lambda: build(
                "ft2", switch_ports=16, gpus_per_node=2, nics_per_node=2, oversubscription=3
            ),
            1,
        ),
        (lambda: build("ft3", switch_ports=4, gpus_per_node=2, nics_per_node=2), 1),
        (lambda: build("mrft", switch_ports=8, gpus_per_node=2, nics_per_node=2), 1),
        # partial sizes: the partly filled leaf (and pod) is its own orbit
        (lambda: build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=26), 2),
        (lambda: build("ft3", switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=90), 3),
        (lambda: build("mrft", switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=22), 2),
        (_damaged_ft2, 2),
    ],
)
def test_symmetric_lp_equals_the_full_reduced_lp(make, orbits):
    # The orbit LP (one commodity per class orbit) against the reduced LP with every class's
    # commodity and a capacity row per arc.
    G = make()
    hs, _ = contract_servers(G)
    red = reduce(G, hs)
    gens = symmetry(G, red)
    assert gens is not None
    assert len(class_orbits(red, gens)) == orbits
    sym = solve_symmetric(red, gens, 10**7)
    full = max_concurrent_flow(
        red.arcs,
        red.capacity,
        red.commodities,
        commodity_arcs=[red.commodity_arcs(c) for c in range(len(red.classes))],
    )
    assert sym.theta == pytest.approx(full.theta, rel=1e-6)
    assert np.all(sym.arc_flow <= red.capacity * (1 + 1e-6))


def test_partial_ft3_keeps_itssymmetry():
    # 5,000 GPUs on 64-port switches: 625 servers, 156 full leaves of 32 NICs and one of 8,
    # in 5 pods. Non-blocking, so lambda = 50 / (5000 - 8); the orbits make it a small LP.
    r = alltoall_bandwidth(build("ft3", gpus=5000))
    assert r.pair_rate_Bps / 1e9 == pytest.approx(50 / 4992, rel=1e-6)
    assert r.lp.variables < 100_000


def test_symmetry_is_refused_when_a_capacity_differs():
    # leaf3's uplink to spine1 is doubled: a shift that moves leaf3 is no automorphism and is
    # refused by the arc-by-arc check; the symmetry found keeps leaf3 in place and still gives
    # the general LP's lambda.
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    G.edges["leaf3", "spine1"]["capacity"] *= 2
    hs, _ = contract_servers(G)
    red = reduce(G, hs)
    leaves = sorted((v for v, k in G.nodes(data="kind") if k == "leaf"), key=natural_key)
    naive = {s: leaves[(i + 1) % len(leaves)] for i, s in enumerate(leaves)}
    full = extend_to_classes(red, naive)
    assert full is not None and not is_automorphism(red, full)
    gens = symmetry(G, red)
    assert gens is not None and all(g.get("leaf3", "leaf3") == "leaf3" for g in gens)
    r = alltoall_bandwidth(G)
    assert any("class symmetry" in line for line in r.reductions)
    assert r.pair_rate_Bps / 1e9 == pytest.approx(
        alltoall_bandwidth(G, method="general").pair_rate_Bps / 1e9, rel=1e-6
    )
