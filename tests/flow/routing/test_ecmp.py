"""ECMP routing: the even split, conserved flows, collisions, seeds, flows per pair."""

from __future__ import annotations

import random
from collections import defaultdict

import networkx as nx
import numpy as np
import pytest

from topo.builders import build
from topo.flow.routing import routed_alltoall, routed_flow
from topo.traffic import uniform_alltoall

from ._helpers import NIC, counts, expected_counts, same_report, tier_of, whole


def test_ecmp_expected_loads_are_the_even_split_and_flows_are_conserved():
    # Full FT2, k = 8, one GPU per server: each leaf sends 4 x 28 = 112 pair-units up, split
    # evenly over 4 spines: 28 per cable in expectation, whatever the seed. Every sample
    # carries the same total per tier (each flow crosses exactly one leaf->spine and one
    # spine->leaf cable).
    G = build("ft2", switch_ports=8, gpus_per_node=1, nics_per_node=1)
    for seed in (0, 1, 2):
        r = routed_alltoall(G, "ecmp", seed=seed)
        c, e = counts(r), expected_counts(r)
        for tier in ("leaf->spine", "spine->leaf"):
            arcs = [a for a in c if tier_of(G, *a) == tier]
            assert all(e[a] == pytest.approx(28) for a in arcs)
            assert sum(c[a] for a in arcs) == pytest.approx(8 * 4 * 28)
            assert all(whole(c[a]) for a in arcs)  # whole flows (1 per pair)
        assert r.routing.expected_pair_rate_Bps == pytest.approx(NIC / 31)


def test_ecmp_on_a_three_tier_fat_tree_conserves_flows_per_tier():
    # FT3, k = 4, one GPU per server: 4 pods of 2 leaves of 2 NICs, n = 16. Ordered pairs on
    # different leaves: 16 x 14 = 224 (each crosses one leaf->spine and one spine->leaf
    # cable); in different pods: 16 x 12 = 192 (each also crosses one spine->core and one
    # core->spine cable). Within a pod the 2 spines share 32 pairs evenly in expectation.
    G = build("ft3", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    for seed in (0, 5):
        r = routed_alltoall(G, "ecmp", seed=seed)
        c = counts(r)
        total = defaultdict(float)
        for a, x in c.items():
            total[tier_of(G, *a)] += x
        assert total["leaf->spine"] == pytest.approx(224)
        assert total["spine->leaf"] == pytest.approx(224)
        assert total["spine->core"] == pytest.approx(192)
        assert total["core->spine"] == pytest.approx(192)
        assert all(whole(x) for x in c.values() if x)


def test_ecmp_hash_collisions_cost_rate_where_the_fabric_tier_binds():
    # k = 16, 8 GPUs per server: one server per leaf, so all its off-server traffic climbs;
    # the leaf->spine tier carries exactly the NIC load in expectation. A sample's busiest
    # cable is at least the tier's mean, so the as-routed rate is below the expected one,
    # and D-mod-k (which spreads exactly) reaches the expected rate.
    G = build("ft2", switch_ports=16)
    d = routed_alltoall(G, "dmodk")
    for seed in range(3):
        r = routed_alltoall(G, "ecmp", seed=seed)
        assert r.routing.expected_pair_rate_Bps == pytest.approx(d.pair_rate_Bps)
        assert r.pair_rate_Bps < r.routing.expected_pair_rate_Bps
        assert r.routing.collision_loss == pytest.approx(
            1 - r.pair_rate_Bps / r.routing.expected_pair_rate_Bps
        )
        assert r.alltoall_busbw_Bps < d.alltoall_busbw_Bps


def test_ecmp_sample_mean_converges_to_the_expectation():
    # Full FT2, k = 4, one GPU per server: leaf0 sends 2 sources x 6 destinations = 12 flows
    # up, each to spine0 with probability 1/2: Binomial(12, 1/2), mean 6, sd sqrt(3). The mean
    # of 300 seeds has sd 0.1; allow 5 sd.
    G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    samples = [counts(routed_alltoall(G, "ecmp", seed=s))[("leaf0", "spine0")] for s in range(300)]
    assert all(0 <= x <= 12 and whole(x) for x in samples)
    assert np.mean(samples) == pytest.approx(6.0, abs=0.5)
    assert np.var(samples) == pytest.approx(3.0, rel=0.35)


def test_ecmp_is_reproducible_by_seed():
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    a = routed_alltoall(G, "ecmp", seed=7)
    b = routed_alltoall(G, "ecmp", seed=7)
    c = routed_alltoall(G, "ecmp", seed=8)
    assert a.link_load == b.link_load
    assert a.link_load != c.link_load
    # seed 7 hashes with child 1 (topo.flow.seeds.ROUTING) of SeedSequence(7), not with
    # default_rng(7), the stream the failures of seed 7 drew from before they had their own
    g1 = routed_alltoall(
        G, "ecmp", seed=np.random.default_rng(np.random.SeedSequence(7).spawn(2)[1])
    )
    assert g1.link_load == a.link_load
    assert routed_alltoall(G, "ecmp", seed=np.random.default_rng(7)).link_load != a.link_load


def test_more_flows_per_pair_split_each_pair_and_keep_the_totals():
    # With F flows per pair each carries 1/F: loads are multiples of 1/F pair-units and the
    # per-tier totals are unchanged.
    G = build("ft2", switch_ports=8, gpus_per_node=1, nics_per_node=1)
    r = routed_alltoall(G, "ecmp", seed=3, flows_per_pair=4)
    c = counts(r)
    arcs = [a for a in c if tier_of(G, *a) == "leaf->spine"]
    assert sum(c[a] for a in arcs) == pytest.approx(8 * 4 * 28)
    assert all(whole(c[a] * 4) for a in arcs)
    assert r.routing.flows == 32 * 31 * 4


def test_expected_routes_by_the_even_split_without_draws():
    G = build("ft2", switch_ports=16)
    sampled = routed_alltoall(G, "ecmp", seed=3)
    e = routed_flow(G, uniform_alltoall(G), "ecmp", seed=3, expected=True)
    # the routed loads are the expected ones (both at the reported rate, here the expected)
    assert e.link_load == e.routing.expected_link_load
    want = expected_counts(sampled)
    assert counts(e) == pytest.approx(want, rel=1e-12, abs=1e-12)
    assert (
        e.pair_rate_Bps
        == sampled.routing.expected_pair_rate_Bps
        == e.routing.expected_pair_rate_Bps
    )
    assert e.routing.collision_loss == 0.0 and e.routing.seed is None
    assert any("expected loads" in n for n in e.reductions)
    d = routed_alltoall(G, "dmodk")
    same_report(d, routed_flow(G, uniform_alltoall(G), "dmodk", expected=True))


@pytest.mark.slow
def test_full_scale_mpft_ecmp_loses_to_collisions():
    r = routed_alltoall(build("mpft"), "ecmp", seed=0)
    assert r.routing.expected_pair_rate_Bps * (r.gpus - 1) == pytest.approx(
        NIC * (16383) / (16384 - 8)
    )
    assert r.pair_rate_Bps < r.routing.expected_pair_rate_Bps


def test_a_sample_can_beat_the_even_split_on_a_damaged_fabric_and_says_so():
    # The even split is the average of the samples' loads, not a bound on one sample: where it
    # is uneven (a quarter of the switch cables of a 72-GPU FT2 cut), a sample can leave the
    # link the even split loads most with less. collision_loss is then negative (it was
    # clamped to 0, which read as "no collisions"), and always 1 - sampled / expected.
    G = build("ft2", switch_ports=12)
    kinds = nx.get_node_attributes(G, "kind")
    cables = sorted((u, v) for u, v in G.edges() if {kinds[u], kinds[v]} == {"leaf", "spine"})
    G.remove_edges_from(random.Random(0).sample(cables, len(cables) // 4))
    losses = []
    for seed in range(40):
        r = routed_alltoall(G, "ecmp", seed=seed)
        ratio = r.pair_rate_Bps / r.routing.expected_pair_rate_Bps
        assert r.routing.collision_loss == pytest.approx(1 - ratio, abs=1e-12)
        losses.append(r.routing.collision_loss)
    assert min(losses) < 0 < max(losses)


@pytest.mark.parametrize(
    ("family", "options", "cut"),
    [
        ("ft3", {"switch_ports": 8, "gpus_per_node": 2, "nics_per_node": 2}, 0),
        ("ft3", {"switch_ports": 8, "gpus_per_node": 2, "nics_per_node": 2}, 12),
        ("mrft", {"switch_ports": 8}, 5),
        ("ft2", {"switch_ports": 12}, 9),
    ],
)
def test_single_way_down_hops_equal_the_eligibility_table(monkeypatch, family, options, cut):
    # A down hop where every (switch, destination leaf) with traffic has one way down follows
    # the one-way table (ecmp._down) instead of building the switches x ports x destinations
    # eligibility table for _hop. Every down hop through the table (the way before) must give
    # the same report, loads bit for bit (a single way draws nothing), intact and with switch
    # cables cut (where some switches have two ways down, or none).
    from topo.flow.routing import ecmp

    G = build(family, **options)
    if cut:
        kinds = nx.get_node_attributes(G, "kind")
        ends = {"gpu", "nic", "nvswitch"}
        inner = sorted((u, v) for u, v in G.edges() if not ends & {kinds[u], kinds[v]})
        G.remove_edges_from(random.Random(cut).sample(inner, cut))
    fast = routed_alltoall(G, "ecmp", seed=4)
    calls = []

    def by_table(tree, t, Bj, M, Me, port, port_exp, rng):
        calls.append(t)
        child, pid, valid = tree.dn_child[t], tree.dn_port[t], tree.dn_valid[t]
        elig = valid[:, :, None] & tree.below[t - 1][:, Bj][child]
        n_next = len(tree.names[t - 1])
        return ecmp._hop(elig, child, pid, n_next, M, Me, port, port_exp, rng)

    monkeypatch.setattr(ecmp, "_down", by_table)
    table = routed_alltoall(G, "ecmp", seed=4)
    assert calls
    assert table.link_load == fast.link_load
    assert table.routing.expected_pair_rate_Bps == fast.routing.expected_pair_rate_Bps
    assert table.pair_rate_Bps == fast.pair_rate_Bps
