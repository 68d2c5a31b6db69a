"""Dragonfly (topo.builders.dragonfly): closed forms and the defining properties of the graph.

Expected values: Kim et al. (ISCA 2008): radix ``p + a - 1 + h``, at most ``a·h + 1`` groups with
one global link between every pair, balanced ``a = 2p = 2h``; the arrangements as Camarero et
al. (TACO 2014) define them; the DeepSeek-V3 report's Table 3 (DF of 64-port switches: 261,632
endpoints, 16,352 switches, 384,272 links).
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import networkx as nx
import pytest

from topo.builders import build, max_gpus
from topo.builders.dragonfly import balanced, dragonfly_sizes, global_links
from topo.errors import SpecError
from topo.fabric import EDGE_KEYS, NODE_KEYS, summarize


def test_table3_counts():
    # a = 32, p = h = 16, 511 groups: 511*32 routers, 511*32*16 endpoints,
    # 511*(32*31/2) local + 511*32*16/2 global links.
    s = dragonfly_sizes(32, 16, 16, 511)
    assert (s.routers, s.endpoints) == (16352, 261632)
    assert (s.local_links, s.global_links, s.links) == (253456, 130816, 384272)
    assert s.radix == 63 and s.max_groups == 513


def test_table3_router_graph_has_a_link_between_every_pair_of_groups():
    links = global_links(32, 16, 511)
    assert len(links) == 130816
    pairs = Counter(frozenset((i, t)) for i, _, t, _ in links)
    assert len(pairs) == 511 * 510 // 2  # every pair at least once
    # 512 ports, 510 other groups: two spare ports per group, 511 pairs get a second link.
    assert Counter(pairs.values()) == {1: 511 * 510 // 2 - 511, 2: 511}
    per_router = Counter((i, r) for i, r, _, _ in links) + Counter((t, s) for _, _, t, s in links)
    assert set(per_router.values()) == {16}  # every router uses its h global ports


def test_balanced_default():
    assert balanced(64) == (32, 16, 16)  # 4p - 1 = 63 <= 64
    assert max_gpus("dragonfly") == 32 * 16 * 513  # 262,656: a*p*(a*h + 1)


def _groups(G):
    out = {}
    for v, d in G.nodes(data=True):
        if d["kind"] == "leaf":
            out[v] = int(v.split("/")[0][1:])
    return out


@pytest.mark.parametrize("arrangement", ["consecutive", "palmtree"])
def test_maximal_dragonfly_properties(arrangement):
    # a = 4, p = h = 2 (8 ports: 2 + 3 + 2 = 7), a*h + 1 = 9 groups.
    G = build(
        "dragonfly", switch_ports=8, gpus_per_node=1, nics_per_node=1, arrangement=arrangement
    )
    group = _groups(G)
    routers = G.subgraph(group)
    assert routers.number_of_nodes() == 36
    local = Counter()
    glob = Counter()
    for u, v, d in routers.edges(data=True):
        assert d["links"] == 1
        if group[u] == group[v]:
            local[group[u]] += 1
        else:
            glob[frozenset((group[u], group[v]))] += 1
    assert set(local.values()) == {6} and len(local) == 9  # each group complete: 4*3/2
    assert len(glob) == 36 and set(glob.values()) == {1}  # one link per pair of 9 groups
    assert {d for _, d in routers.degree()} == {3 + 2}  # a - 1 local + h global
    assert nx.diameter(routers) == 3  # local, global, local
    for v in group:
        assert G.degree(v) == 7  # p + a - 1 + h


def test_arrangement_rules():
    # Consecutive (absolute): group i's global port j reaches group j (j < i) or j + 1.
    # Palmtree: group i's port j reaches group (i - j - 1) mod g. Port j is on router j // h.
    a, h = 4, 2
    g = a * h + 1
    for arrangement, rule in (
        ("consecutive", lambda i, j: j if j < i else j + 1),
        ("palmtree", lambda i, j: (i - j - 1) % g),
    ):
        links = global_links(a, h, g, arrangement)
        reach = {(i, r, t) for i, r, t, _ in links} | {(t, s, i) for i, _, t, s in links}
        expected = {(i, j // h, rule(i, j)) for i in range(g) for j in range(a * h)}
        assert reach == expected, arrangement


@pytest.mark.parametrize("groups", [2, 5, 6, 8])
def test_fewer_groups_use_every_global_port(groups):
    # a = 4, h = 2: 8 global ports per group; a*h is even, so every port is used.
    G = build("dragonfly", switch_ports=8, gpus_per_node=1, nics_per_node=1, groups=groups)
    group = _groups(G)
    glob = Counter()
    for u, v, d in G.subgraph(group).edges(data=True):
        if group[u] != group[v]:
            glob[u] += d["links"]
            glob[v] += d["links"]
            glob[frozenset((group[u], group[v]))] += d["links"]
    assert all(glob[r] == 2 for r in group)
    assert all(glob[frozenset(p)] >= 1 for p in combinations(range(groups), 2))
    assert summarize(G).links == groups * 6 + groups * 8 // 2


def test_schema_and_partial_size():
    G = build("dragonfly", gpus=8192)  # 8192 endpoints / (32*16) = 16 groups
    assert G.graph["groups"] == 16
    s = summarize(G)
    assert (s.switches, s.links) == (512, 16 * 496 + 16 * 256)
    for v, d in G.nodes(data=True):
        assert set(d) == NODE_KEYS[d["kind"]], v
    for _, _, d in G.edges(data=True):
        assert set(d) == EDGE_KEYS


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"groups": 514}, "a\\*h \\+ 1 = 513"),
        ({"routers_per_group": 40}, "needs p \\+ a - 1 \\+ h = 71 ports"),
        ({"arrangement": "random"}, "unknown arrangement"),
        ({"oversubscription": 3}, "oversubscription must be 1"),
        ({"global_ports": 0}, "at least 1"),
        ({"groups": 2, "gpus": 2048}, "1024 endpoints"),
        ({"q": 5}, "dragonfly takes no option q"),
    ],
)
def test_refusals(kwargs, message):
    with pytest.raises(SpecError, match=message):
        build("dragonfly", **kwargs)


@pytest.mark.parametrize("name", ["routers_per_group", "endpoints_per_router", "global_ports"])
def test_a_bad_value_is_blamed_on_the_option_given(name):
    # p and h default to each other and a to 2h: a 0 given for one must not be reported as
    # a 0 of another derived from it.
    with pytest.raises(SpecError, match=f"^{name} must be at least 1, got 0$"):
        build("dragonfly", **{name: 0})
