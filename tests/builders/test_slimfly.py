"""Slim Fly (topo.builders.slimfly): MMS graphs and the fabric built on them.

Expected values: the closed forms of Besta and Hoefler (SC14, §II: ``2q²`` routers of network
radix ``k' = (3q - δ)/2``, ``p = ceil(k'/2)`` endpoints each), the defining property of the
MMS graph (diameter 2), the Hoffman-Singleton graph for q = 5, and the DeepSeek-V3 report's
Table 3 (SF of 64-port switches: 32,928 endpoints, 1,568 switches, 32,928 links).
"""

from __future__ import annotations

import networkx as nx
import pytest

from topo.builders import build, max_gpus
from topo.builders.slimfly import is_prime_power, mms_graph, slimfly_q, slimfly_sizes
from topo.errors import SpecError
from topo.fabric import EDGE_KEYS, NODE_KEYS, summarize

# q, δ (q = 4w + δ), network radix (3q - δ)/2 worked by hand
QS = [(3, -1, 5), (4, 0, 6), (5, 1, 7), (7, -1, 11), (8, 0, 12), (9, 1, 13), (11, -1, 17),
      (13, 1, 19), (16, 0, 24), (17, 1, 25)]  # fmt: skip


@pytest.mark.parametrize(("q", "delta", "radix"), QS)
def test_mms_graph_is_regular_of_diameter_two(q, delta, radix):
    G = mms_graph(q)
    assert G.number_of_nodes() == 2 * q * q
    assert {d for _, d in G.degree()} == {radix}
    assert nx.diameter(G) == 2
    assert slimfly_sizes(q).delta == delta


def test_q5_is_the_hoffman_singleton_graph():
    # The Hoffman-Singleton graph: 50 vertices, 7-regular, girth 5, diameter 2 (a Moore graph).
    G = mms_graph(5)
    assert (G.number_of_nodes(), G.number_of_edges()) == (50, 175)
    assert nx.girth(G) == 5


def test_table3_counts_from_the_formulas():
    # q = 28: k' = (84 - 0)/2 = 42, p = 21, 2*28^2 = 1568 routers, 1568*42/2 links.
    s = slimfly_sizes(28)
    assert (s.routers, s.network_radix, s.endpoints_per_router) == (1568, 42, 21)
    assert (s.endpoints, s.links) == (32928, 32928)
    assert not s.constructible  # 28 = 4 * 7


def test_largest_q_for_64_ports():
    # q = 28: 42 + 21 = 63 <= 64; q = 29 (δ = 1): k' = 43, p = 22, 65 > 64.
    assert slimfly_q(64, constructible=False) == 28
    # Prime powers below: 27 = 3^3 (δ = -1): k' = 41, p = 21, 62 <= 64.
    assert slimfly_q(64) == 27
    assert [q for q in range(2, 33) if is_prime_power(q)] == [
        2, 3, 4, 5, 7, 8, 9, 11, 13, 16, 17, 19, 23, 25, 27, 29, 31, 32
    ]  # fmt: skip


@pytest.mark.slow
def test_full_64_port_build_is_q27():
    s = summarize(build("slimfly"))
    # 2*27^2 = 1458 routers, 1458*41/2 = 29,889 links, 1458*21 = 30,618 ports -> 3,827 servers.
    assert (s.switches, s.links) == (1458, 29889)
    assert s.gpus == 30618 // 8 * 8 == max_gpus("slimfly")


def test_small_build_counts_and_schema():
    G = build("slimfly", switch_ports=12, gpus_per_node=1, nics_per_node=1)
    s = summarize(G)
    # q = 5 (7 + 4 <= 12; q = 7 needs 11 + 6): 50 routers, 175 links, 4 endpoints each.
    assert (s.switches, s.links, s.endpoints) == (50, 175, 200)
    for v, d in G.nodes(data=True):
        assert set(d) == NODE_KEYS[d["kind"]], v
        if d["kind"] == "leaf":
            assert (d["tier"], d["plane"], d["rail"], d["ports"]) == (1, 0, -1, 12)
            assert G.degree(v) <= 12
    for _, _, d in G.edges(data=True):
        assert set(d) == EDGE_KEYS
    routers = G.subgraph(v for v, d in G.nodes(data=True) if d["kind"] == "leaf")
    assert nx.diameter(routers) == 2
    assert G.graph["q"] == 5 and G.graph["endpoints_per_router"] == 4


def test_partial_size_takes_the_smallest_q_that_holds_it():
    # 1000 GPUs, 8 per server: 125 servers, 1000 endpoints. Full-bandwidth sizes 2q^2 * ceil(k'/2):
    # q=3: 54, q=4: 96, q=5: 200, q=7: 588, q=8: 768, q=9: 162 * 7 = 1134 >= 1000.
    G = build("slimfly", gpus=1000)
    assert G.graph["q"] == 9
    assert summarize(G).endpoints == 1000


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"q": 28}, "q = 28 is not a prime power.*q = 27 and q = 29"),
        ({"q": 6}, "q mod 4"),
        ({"q": 29}, "43 network ports \\+ 22 endpoint ports"),
        (
            {"switch_ports": 12, "gpus": 208, "gpus_per_node": 1, "nics_per_node": 1},
            "200 endpoints",
        ),
        ({"oversubscription": 3}, "oversubscription must be 1"),
        ({"endpoints_per_router": 0}, "at least 1"),
        ({"switch_ports": 6}, "no Slim Fly fits 6-port"),
        ({"groups": 3}, "slimfly takes no option groups"),
    ],
)
def test_refusals(kwargs, message):
    with pytest.raises(SpecError, match=message):
        build("slimfly", **kwargs)
