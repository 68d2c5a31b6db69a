"""The cut bound over servers, switches and pods (certify.cut_bound, on the switch arcs' index
arrays) against the same cuts written directly on the graph with networkx."""

from __future__ import annotations

import math

import networkx as nx
import pytest

from topo.builders import build
from topo.fabric import SWITCH_KINDS
from topo.flow.exact.certify import cut_bound
from topo.flow.failures.damage import fail
from topo.flow.reduce.servers import contract_servers


def _reference(G: nx.Graph) -> float:
    """lambda <= c(S) / (W (n - W)) over: each server; each switch with its hosts; each
    component (more than one switch) of the switches below the top tier with its hosts."""
    hs, _ = contract_servers(G)
    n = sum(h.weight for h in hs)
    switches = {v for v, k in G.nodes(data="kind") if k in SWITCH_KINDS}
    top = max(G.nodes[s]["tier"] for s in switches)
    lower = [s for s in switches if G.nodes[s]["tier"] < top]
    blocks = [{s} for h in hs for s in h.attach]
    blocks += [c for c in nx.connected_components(G.subgraph(lower)) if len(c) > 1]
    best = min(sum(h.attach.values()) / (h.weight * (n - h.weight)) for h in hs)
    for block in blocks:
        inside = [h for h in hs if set(h.attach) & block]
        W = sum(h.weight for h in inside)
        if W in (0, n):
            continue
        cap = sum(
            d["capacity"]
            for s in block
            for t, d in G.adj[s].items()
            if t in switches and t not in block
        )
        cap += sum(c for h in inside for s, c in h.attach.items() if s not in block)
        best = min(best, cap / (W * (n - W)))
    return best


@pytest.mark.parametrize(
    "family,kw",
    [
        ("ft3", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2)),
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, oversubscription=3)),
        ("mpft", dict(switch_ports=8, gpus_per_node=4, nics_per_node=4)),
        ("dragonfly", dict(groups=5)),
    ],
)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cut_bound_equals_the_cuts_written_on_the_graph(family, kw, seed):
    G = build(family, **kw)
    if seed:
        G, _ = fail(G, links=3 * seed, switches=1, seed=seed)
    hs, terminal = contract_servers(G)
    expected = _reference(G)
    got, _ = cut_bound(G, hs, terminal)
    assert math.isfinite(got)
    assert got == pytest.approx(expected, rel=1e-12)


def test_a_pod_cut_binds_where_the_cores_are_thin():
    # The 8-port FT3 with its core cables at a quarter of their rate: a pod's 16 GPUs reach
    # the other 112 over 16 core cables of 12.5 GB/s, lambda <= 16 x 12.5e9 / (16 x 112),
    # below every server's 2 x 50e9 / (2 x 126); the pod is the cut named.
    G = build("ft3", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    for u, v, d in G.edges(data=True):
        if {G.nodes[u].get("tier"), G.nodes[v].get("tier")} == {2, 3}:
            d["capacity"] /= 4
    hs, terminal = contract_servers(G)
    got, what = cut_bound(G, hs, terminal)
    assert got == pytest.approx(16 * 12.5e9 / (16 * 112), rel=1e-12)
    assert got == pytest.approx(_reference(G), rel=1e-12)
    assert what.startswith("the block of ")
