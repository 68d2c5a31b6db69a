"""The up/down tables: tiers, hops and divisors of a fat tree; fabrics that are not up/down
routable."""

from __future__ import annotations

import numpy as np
import pytest

from topo.builders import build
from topo.errors import TopoError
from topo.flow.routing import routed_alltoall
from topo.flow.routing.arrays import fabric_arcs
from topo.flow.routing.updown import updown_tree

from ._helpers import NIC


def test_a_fabric_that_is_not_up_down_routable_is_refused():
    # Two leaves cabled to each other (a ring, Dragonfly-like): no tiers to route up and down.
    G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1, gpus=8)
    G.add_edge("leaf0", "leaf1", capacity=NIC, links=1, kind="fabric")
    with pytest.raises(
        TopoError, match="not up/down routable: the cable leaf0-leaf1 joins two tiers"
    ):
        routed_alltoall(G, "dmodk")


def test_ft3_tables_give_up_down_hops_and_dmodk_divisors():
    # FT3, k = 4: 4 pods of 2 leaves and 2 spines, 4 cores; each leaf has 2 up ports, each
    # spine 2. From a leaf: 0 hops to itself, 2 to the other leaf of its pod (up, down), 4 to
    # a leaf of another pod (up to a core and down).
    G = build("ft3", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    tree = updown_tree(fabric_arcs(G))
    assert tree.T == 3
    assert [len(tree.names[t]) for t in (1, 2, 3)] == [8, 8, 4]
    assert tree.names[1][:3] == ["pod0/leaf0", "pod0/leaf1", "pod1/leaf0"]
    h = tree.h[1]
    assert (np.diag(h) == 0).all()
    assert h[0, 1] == 2 and h[0, 2] == 4
    assert tree.below[3].all() and tree.upfull[1][0, 1] and tree.upfull[1][0, 2]
    assert tree.div == {1: 1, 2: 2, 3: 4}
    assert tree.up_valid[1].sum(1).tolist() == [2] * 8


@pytest.mark.parametrize("family", ["slimfly", "dragonfly"])
def test_a_direct_network_is_refused_in_its_own_terms(family):
    """A fresh-user trial: ECMP on a Slim Fly read "the cable x0/r0-x0/r1 joins two tiers (1
    and 1)"; every router is tier 1, so the message says the fabric is a direct network."""
    G = build(family, switch_ports=8, gpus_per_node=1, nics_per_node=1)
    assert {d["tier"] for _, d in G.nodes(data=True) if "tier" in d} == {1}
    with pytest.raises(TopoError) as got:
        routed_alltoall(G, "ecmp")
    message = str(got.value)
    assert message.startswith(
        "not up/down routable: every switch is tier 1 and switches are cabled to each other ("
    )
    assert "a direct network (Dragonfly, Slim Fly, a ring) has no upper tier" in message
    assert "(1 and 1)" not in message
