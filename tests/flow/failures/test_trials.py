"""Trials derived from the intact fabric read once (TrialFabric) against the same trials from
scratch (fail, then the all-to-all of the damaged copy): the same damaged fabric, the same
contracted servers and planes, the same result bit for bit; and the search between a failed
cable's ends against networkx's own path search."""

from __future__ import annotations

import pickle
from functools import cache
from unittest.mock import patch

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topo.builders import build
from topo.flow.exact import alltoall
from topo.flow.failures.damage import disconnected_terminals, fail
from topo.flow.failures.resilience import resilience_trial, summarised_trial, trial_summary
from topo.flow.failures.trials import TrialFabric, joined
from topo.flow.reduce.planes import scope
from topo.flow.reduce.servers import contract_servers

FABRICS = {
    # 4 planes of 8-port two-tier fat trees, 16 servers of 4 GPUs: failures make some planes
    # unlike the others (plane merging) and a server that loses all 4 cables is cut off
    "mpft": dict(family="mpft", switch_ports=8, gpus_per_node=4, nics_per_node=4),
    # 2 servers per leaf, leaf-spine bundles of 2 cables: a failure can take part of a bundle
    "ft2 bundles": dict(family="ft2", switch_ports=8, gpus=16),
    # 1 NIC per server: any failed NIC cable cuts its server off (run from scratch)
    "ft2 one nic": dict(family="ft2", switch_ports=8, gpus_per_node=1, nics_per_node=1),
    "mrft": dict(family="mrft", switch_ports=8, gpus_per_node=4, nics_per_node=4),
    "ft3": dict(family="ft3", switch_ports=4),
    # 2 planes of 4-port two-tier trees (4 leaves, 2 spines, 8 servers of 2 GPUs): two
    # failures at the same place of both planes leave them copies of each other
    "mpft two planes": dict(family="mpft", switch_ports=4, gpus_per_node=2, nics_per_node=2),
}


@cache
def _fabric(name: str) -> nx.Graph:
    kw = dict(FABRICS[name])
    family = str(kw.pop("family"))
    return build(family, **kw)


@cache
def _trial_fabric(name: str) -> TrialFabric:
    return TrialFabric(_fabric(name))


def _comparable(r):
    """A summarised trial without its timings (the rest must agree exactly)."""
    if r is None:
        return None
    d = r.report.to_dict()
    return {k: v for k, v in d.items() if "seconds" not in k}, r.failures


def _adjacency(G):
    """Every vertex's neighbours in order, with each edge's attributes."""
    return [(u, [(v, dict(e)) for v, e in nbrs.items()]) for u, nbrs in G._adj.items()]


@settings(max_examples=80, deadline=None)
@given(
    name=st.sampled_from(sorted(FABRICS)),
    links=st.integers(1, 12),
    seed=st.integers(0, 2**32 - 1),
    certify=st.booleans(),
)
def test_a_trial_derived_from_the_intact_fabric_equals_the_trial_from_scratch(
    name, links, seed, certify
):
    # certify: every reduced network counts as large, so the routing that meets a cut is
    # tried first (as on the 16,384-GPU MPFT); else the reduced LP decides (small fabrics).
    G = _fabric(name)
    task = dict(links=links, seed=seed, max_variables=200_000, time_limit_s=60.0)
    with patch.object(alltoall, "CERTIFY_ABOVE", 0 if certify else alltoall.CERTIFY_ABOVE):
        derived = summarised_trial(_trial_fabric(name), task)
        scratch = trial_summary(resilience_trial(G, **task))
    assert _comparable(derived) == _comparable(scratch)


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(sorted(FABRICS)),
    links=st.integers(1, 12),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_derived_damaged_fabric_is_the_copy_fail_makes(name, links, seed):
    # The graph, the failure set, the contracted servers and the planes' scope, each as the
    # flow code finds them on fail()'s damaged copy; or no derivation when servers are cut off.
    G = _fabric(name)
    d = _trial_fabric(name).damage(dict(links=links, seed=seed))
    H, failures = fail(G, links=links, seed=seed)
    _, cut = disconnected_terminals(H)
    if d is None:
        assert cut or not nx.is_connected(H)
        return
    assert not cut and nx.is_connected(H)
    assert d.failures == failures
    assert _adjacency(d.graph) == _adjacency(H)
    assert list(d.graph.nodes(data=True)) == list(H.nodes(data=True))
    assert d.graph.graph == H.graph
    hs, terminal = contract_servers(H)
    assert d.known.servers == hs and d.known.terminal == terminal
    for a, b in zip(d.known.servers, hs, strict=True):  # (sums run in these dicts' order)
        assert list(a.attach.items()) == list(b.attach.items())
        assert list(a.nics.items()) == list(b.nics.items())
    if d.known.scope is not None:
        assert d.known.scope() == scope(H, hs)
    # the intact fabric is untouched
    assert _adjacency(G) == _adjacency(_fabric(name)) and all(
        "links" not in e or e["links"] >= 1 for *_, e in G.edges(data=True)
    )


def test_the_intact_fabric_is_left_as_it_was():
    G = build("ft2", switch_ports=8, gpus=16)
    before = _adjacency(G)
    tf = TrialFabric(G)
    for seed in range(20):
        summarised_trial(tf, dict(links=6, seed=seed))
    assert _adjacency(G) == before


def test_a_trial_that_cuts_a_server_off_runs_from_scratch():
    # One NIC per server: a trial that fails a NIC cable cuts its server off, so it is not
    # derived, and it reports the servers fail() and disconnected_terminals() find.
    G = _fabric("ft2 one nic")
    tf = TrialFabric(G)
    tried = 0
    for seed in range(10):
        H, failures = fail(G, links=4, seed=seed)
        nic_cables = [(u, v) for u, v in failures.links if "/nic" in u or "/nic" in v]
        if not nic_cables:
            continue
        tried += 1
        _, cut = disconnected_terminals(H)
        assert len(cut) == len(nic_cables)  # each its own server's only cable
        assert tf.damage(dict(links=4, seed=seed)) is None
        r = summarised_trial(tf, dict(links=4, seed=seed))
        assert r is not None and list(r.failures.disconnected) == cut
        assert r.failures.disconnected_gpus == len(cut)  # one GPU per server
    assert tried


@pytest.mark.parametrize(
    "task",
    [
        dict(links=2, seed=1, switches=1),
        dict(links=0, switches=1, seed=1),
        dict(links=2, seed=1, routing="ecmp"),
        dict(links=2, seed=1, method="general"),
        dict(named=["leaf0--spine0"], seed=1),
        dict(links=10_000, seed=1),
    ],
)
def test_trials_outside_random_cables_under_the_optimal_routing_run_from_scratch(task):
    assert TrialFabric(build("ft2", switch_ports=8, gpus=16)).damage(task) is None


def test_a_trial_fabric_travels_as_its_graph_alone():
    tf = TrialFabric(build("ft2", switch_ports=8, gpus=16))
    summarised_trial(tf, dict(links=2, seed=1))  # reads the intact fabric
    back = pickle.loads(pickle.dumps(tf))
    assert set(vars(back)) == {"G", "_pairs"} and back._pairs == {}
    assert _adjacency(back.G) == _adjacency(tf.G)


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(2, 30),
    p=st.floats(0.0, 0.3),
    seed=st.integers(0, 10_000),
    keep=st.floats(0.3, 1.0),
)
def test_joined_agrees_with_networkx_has_path(n, p, seed, keep):
    G = nx.gnp_random_graph(n, p, seed=seed)
    within = {v for v in G if (v * 7919 + seed) % 100 < keep * 100} | {0, n - 1}
    assert joined(G._adj, 0, n - 1) == nx.has_path(G, 0, n - 1)
    assert joined(G._adj, 0, n - 1, within) == nx.has_path(G.subgraph(within), 0, n - 1)


def test_the_same_damage_in_every_plane_keeps_the_plane_decomposition():
    # Two cables at the same place of both planes (found among seeds 0..299): every plane
    # damaged alike, so the planes are still copies (one solved for both), as from scratch.
    G = _fabric("mpft two planes")
    tf = TrialFabric(G)
    alike = 0
    for seed in range(300):
        d = tf.damage(dict(links=2, seed=seed))
        if d is None or d.known.scope is None:
            continue
        sc = d.known.scope()
        H, _ = fail(G, links=2, seed=seed)
        assert sc == scope(H, contract_servers(H)[0])
        if sc.planes == 2:
            alike += 1
            # one cable in each plane (p0/..., p1/...), the same one without its prefix
            (u, v), (x, y) = d.failures.links
            assert {u[:3], x[:3]} == {"p0/", "p1/"} and (u[3:], v[3:]) == (x[3:], y[3:])
            task = dict(links=2, seed=seed)
            assert _comparable(summarised_trial(tf, task)) == _comparable(
                trial_summary(resilience_trial(G, **task))
            )
    assert alike
