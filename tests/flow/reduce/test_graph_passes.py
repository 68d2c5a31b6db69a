"""The fast graph passes of the exact all-to-all give what their definitions give: the
contraction's server insides against :func:`inner_signature`, the reduced network's switch
links against ``G.edges`` order, the report order against a sort by (tier, natural key), the
links' names against :func:`link`."""

from __future__ import annotations

import random

from topo.builders import build
from topo.fabric import SWITCH_KINDS, natural_key
from topo.flow.exact.report import sort_links
from topo.flow.failures.damage import fail
from topo.flow.reduce.network import network, twin_classes
from topo.flow.reduce.planes import scope
from topo.flow.reduce.servers import contract_servers, inner_signature
from topo.flow.result import BottleneckLink, link, links

SMALL = dict(switch_ports=8, gpus_per_node=4, nics_per_node=4)


def test_hosts_inner_signature_is_the_reference_one():
    G = build("mpft", gpus=64, **SMALL)
    hs, terminal = contract_servers(G)
    assert terminal == "gpu" and len(hs) == 16
    for h in hs:
        assert h.inner_sig == inner_signature(G, h.members)
        assert h.weight == sum(G.nodes[v]["kind"] == "gpu" for v in h.members) == 4


def test_reduced_network_lists_switch_links_in_edge_order():
    G, _ = fail(build("ft3", switch_ports=8, gpus_per_node=4, nics_per_node=4), links=3, seed=2)
    hs, _ = contract_servers(G)
    sc = scope(G, hs)
    arcs, cap, origin = network(G, sc, twin_classes(hs, sc))
    fabric = [a for a, o in zip(arcs, origin, strict=True) if o[0] == "fabric"]
    want = []
    for u, v in G.edges():
        if u in sc.switches and v in sc.switches:
            want += [(u, v), (v, u)]
    assert fabric == want and len(want) > 0


def test_sort_links_is_tier_then_natural_source_and_stable():
    names = ["leaf10", "leaf2", "a01", "a1", "p1/leaf0", "leaf2", "spine3"]
    rng = random.Random(4)
    items = [
        BottleneckLink(s, f"t{i}", rng.choice(["nic->leaf", "leaf->spine"]), 1.0, float(i))
        for i, s in enumerate(names * 3)
    ]
    rng.shuffle(items)
    want = sorted(items, key=lambda b: (b.tier, natural_key(b.source)))  # stable, by definition
    assert list(sort_links(items)) == want
    # "a01" and "a1" have one natural key: they keep the order they came in.
    ties = [b.source for b in want if b.source in ("a01", "a1") and b.tier == want[0].tier]
    assert ties == [b.source for b in items if b.source in ties and b.tier == want[0].tier]


def test_links_name_each_direction_as_link_does():
    G = build("ft2", **SMALL)
    edges = [(u, v, 2.0 * i, float(i)) for i, (u, v) in enumerate(G.edges())]
    edges += [(v, u, c, x) for u, v, c, x in edges]
    assert links(G, edges) == [link(G, *e) for e in edges]
    assert any(G.nodes[u]["kind"] in SWITCH_KINDS for u, *_ in edges)
