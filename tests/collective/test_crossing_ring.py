"""topo.collective.fabric_rates.crossing_ring: the ring step pinned to NIC i -> NIC i+1 of the
next server, against the uplinks of a rail-optimised fabric worked by hand."""

from __future__ import annotations

import pytest

from topo.builders import build
from topo.collective.fabric_rates import crossing_ring, fabric_rates
from topo.errors import TopoError


def _mrft(gpus: int, ports: int, oversubscription: float) -> object:
    return build(
        "mrft", gpus=gpus, gpus_per_node=8, nics_per_node=8, switch_ports=ports,
        oversubscription=oversubscription,
    )  # fmt: skip


def test_crossing_ring_on_a_3_to_1_rail_fabric_is_bound_by_the_rail_leaf_uplinks() -> None:
    # 8-port switches at 3:1: 6 servers on each rail leaf, 2 uplinks of 50 GB/s. Every byte
    # crosses rails, so each leaf sends its 6 NICs' 1/8 B per unit up: 0.75 B over 100 GB/s,
    # 133.3 GB/s per server (on its rail the ring stays in the leaf: 8 x 50 = 400 GB/s)
    G = _mrft(48, 8, 3)
    p = crossing_ring(G, 48, 8)
    assert 1 / p.seconds_per_byte == pytest.approx(2 * 50e9 / (6 / 8))
    # the same bytes come down as go up: the uplinks bind in both directions, and which one
    # the LP's dual names is the solver's choice
    assert p.bottleneck in ({"leaf->spine": 2}, {"spine->leaf": 2})
    assert 1 / fabric_rates(G, 48, 8).ring.seconds_per_byte == pytest.approx(400e9)


def test_crossing_ring_on_a_2_to_1_rail_fabric_halves_the_ring() -> None:
    # 12-port switches at 2:1: 8 servers per rail leaf, 4 uplinks: 8/8 B over 200 GB/s
    p = crossing_ring(_mrft(64, 12, 2), 64, 8)
    assert 1 / p.seconds_per_byte == pytest.approx(200e9)


def test_crossing_ring_on_a_non_blocking_spine_is_the_nic_bound() -> None:
    # 8-port switches at 1:1: 4 servers per rail leaf, 4 uplinks: 4/8 B over 200 GB/s is
    # under the NICs' own 1 B over 8 x 50 GB/s: the NIC bound, met by a routing
    p = crossing_ring(_mrft(32, 8, 1), 32, 8)
    assert 1 / p.seconds_per_byte == pytest.approx(400e9)
    assert p.method == "certified"


def test_crossing_ring_needs_two_nics_per_server() -> None:
    G = build("ft2", gpus=2, gpus_per_node=1, nics_per_node=1, switch_ports=8)
    with pytest.raises(TopoError, match="fewer than two cabled NICs"):
        crossing_ring(G, 2, 1)
