"""The arc arrays of a fabric: two arcs per edge, capacities, lookup and tier names."""

from __future__ import annotations

import numpy as np

from topo.builders import build
from topo.flow.routing.arrays import GPU, NIC, NVSWITCH, SWITCH, fabric_arcs


def test_every_edge_is_two_arcs_in_networkx_order():
    G = build("ft2", switch_ports=4, gpus_per_node=2, nics_per_node=2, gpus=8)
    a = fabric_arcs(G)
    edges = list(G.edges(data=True))
    assert len(a.u) == 2 * len(edges)
    for i, (x, y, e) in enumerate(edges):
        assert (a.nodes[a.u[2 * i]], a.nodes[a.v[2 * i]]) == (x, y)
        assert (a.nodes[a.u[2 * i + 1]], a.nodes[a.v[2 * i + 1]]) == (y, x)
        assert a.cap[2 * i] == a.cap[2 * i + 1] == e["capacity"]
        assert a.cables[2 * i] == e["links"]
    kinds = {G.nodes[v]["kind"] for v in np.array(a.nodes, dtype=object)[a.kind == SWITCH]}
    assert kinds == {"leaf", "spine"}
    assert {int(k) for k in a.kind} == {GPU, NIC, NVSWITCH, SWITCH}


def test_find_and_tier_names():
    G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1, gpus=8)
    a = fabric_arcs(G)
    nid = {v: i for i, v in enumerate(a.nodes)}
    u = np.array([nid["leaf0"], nid["spine0"]])
    v = np.array([nid["spine0"], nid["leaf0"]])
    arcs = a.find(u, v)
    assert [(a.nodes[a.u[k]], a.nodes[a.v[k]]) for k in arcs] == [
        ("leaf0", "spine0"),
        ("spine0", "leaf0"),
    ]
    names = a.tier_names()
    assert list(names[arcs]) == ["leaf->spine", "spine->leaf"]
    assert set(names) >= {"gpu->nic", "nic->gpu", "nic->leaf", "leaf->nic"}
