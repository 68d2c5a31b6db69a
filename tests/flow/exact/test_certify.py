"""A routing that meets a cut is exact: held against the general LP on small damaged fabrics,
against hand values, and refused where the routing stays below the cut."""

from __future__ import annotations

import time

import numpy as np
import pytest

from topo.builders import build
from topo.flow import alltoall_bandwidth
from topo.flow.exact import certify, plane_routing
from topo.flow.exact.certify import (
    PlaneSplit,
    certified_alltoall,
    cut_bound,
    plane_split,
    split_routing,
)
from topo.flow.failures.damage import fail
from topo.flow.reduce.server_check import server_theta, star_theta
from topo.flow.reduce.servers import SolveContext, contract_servers

NIC = 50e9  # B/s per 400G NIC
OVERSUBSCRIBED = dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, oversubscription=3)


def certified(G):
    hs, terminal = contract_servers(G)
    return certified_alltoall(SolveContext(G, hs, terminal, time.perf_counter()))


@pytest.mark.parametrize(
    "family,kw,seed,links,switches",
    [
        ("mpft", dict(switch_ports=8, gpus_per_node=4, nics_per_node=4, gpus=64), 1, 3, 0),
        ("mpft", dict(switch_ports=8, gpus_per_node=4, nics_per_node=4, gpus=64), 2, 2, 1),
        ("mpft", dict(switch_ports=8, gpus_per_node=4, nics_per_node=4, gpus=64), 3, 2, 1),
        ("mrft", dict(switch_ports=8, gpus_per_node=4, nics_per_node=4), 2, 3, 0),
        (
            "ft2",
            dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, oversubscription=3),
            0,
            3,
            0,
        ),
        (
            "ft2",
            dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, oversubscription=3),
            3,
            2,
            1,
        ),
    ],
)
def test_certified_equals_the_general_lp_on_damaged_fabrics(family, kw, seed, links, switches):
    # The damage these cases were chosen with: drawn from numpy.random.default_rng(seed) itself
    # (before the failures had their own stream of the seed, topo.flow.seeds).
    rng = np.random.default_rng(seed)
    G, _ = fail(build(family, **kw), links=links, switches=switches, seed=rng)
    r = certified(G)
    assert r is not None and r.exact and r.method == "certified" and r.lp.variables == 0
    general = alltoall_bandwidth(G, method="general")
    assert r.pair_rate_Bps == pytest.approx(general.pair_rate_Bps, rel=1e-7)


def test_a_dead_nic_cable_in_mpft_by_hand():
    # 128 GPUs in 32 servers of 4 (4 planes): the server that lost a cable sends its
    # 4 x 124 pair-units through 3 cables: lambda = 3 x 50 GB/s / (4 x 124).
    G = build("mpft", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    nic = "node0/nic1"
    leaf = next(s for s in G.adj[nic] if G.nodes[s]["kind"] == "leaf")
    r = certified(fail(G, named=[f"{nic}--{leaf}"])[0])
    assert r is not None
    assert r.pair_rate_Bps == pytest.approx(3 * NIC / (4 * 124), rel=1e-9)
    assert {b.source for b in r.bottleneck_links if b.tier == "nic->leaf"} == {
        f"node0/nic{i}" for i in (0, 2, 3)
    }


def test_servers_straddling_leaves_nvl72_shaped():
    # Servers of 6 GPUs and 6 NICs on 8-port leaves (4 down): NICs straddle leaves, no two
    # servers alike. Non-blocking: every NIC full, lambda = 6 x 50 GB/s / (6 x (n - 6)).
    G = build("ft2", switch_ports=8, gpus_per_node=6, nics_per_node=6, gpus=30)
    r = certified(G)
    assert r is not None
    assert r.pair_rate_Bps == pytest.approx(NIC / 24, rel=1e-9)
    assert r.pair_rate_Bps == pytest.approx(
        alltoall_bandwidth(G, method="general").pair_rate_Bps, rel=1e-7
    )


def test_a_failed_spine_is_refused_the_lp_moves_load_between_planes():
    # A dead spine leaves every leaf of its plane 3 of 4 uplinks. The plane split sends a
    # quarter of each server's traffic into the plane: a leaf's 4 servers send 4 x 112 lambda
    # up (4 GPUs each to the 112 under other leaves) over 3 cables, lambda = 3 x 50 / 448
    # GB/s, below the server cut 4 x 50 / (4 x 124): nothing is claimed. The LP moves load to
    # the other planes and reaches the cut (nothing lost).
    G = build("mpft", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    H, _ = fail(G, named=["p1/spine0"])
    hs, terminal = contract_servers(H)
    assert certified(H) is None
    r = split_routing(H, hs)
    ub, _ = cut_bound(H, hs, terminal)
    assert r is not None and r.rate_Bps == pytest.approx(3 * NIC / 448, rel=1e-9)
    assert alltoall_bandwidth(H).pair_rate_Bps == pytest.approx(ub, rel=1e-6)


def test_three_tier_clos_is_certified_and_matches_the_general_lp():
    # 8-port FT3, 64 servers of 2 GPUs (128), non-blocking: every NIC full, lambda = 2 x 50
    # GB/s / (2 x 126), routed between pods over the cores. With one of node3's two NIC
    # cables dead it sends through the other: lambda = 50 / (2 x 126) GB/s.
    G = build("ft3", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    r = certified(G)
    assert r is not None and r.pair_rate_Bps == pytest.approx(2 * NIC / (2 * 126), rel=1e-9)
    H, _ = fail(G, named=["node3/nic0--pod0/leaf1"])
    r = certified(H)
    assert r is not None and r.pair_rate_Bps == pytest.approx(NIC / (2 * 126), rel=1e-9)
    # 32 GPUs (16 servers in 2 pods): the same against the general LP.
    small = build("ft3", switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=32)
    H, _ = fail(small, named=["node3/nic0--pod0/leaf1"])
    r = certified(H)
    general = alltoall_bandwidth(H, method="general")
    assert r is not None and general.pair_rate_Bps == pytest.approx(NIC / (2 * 30), rel=1e-6)
    assert r.pair_rate_Bps == pytest.approx(general.pair_rate_Bps, rel=1e-7)


def test_a_dead_core_is_refused_the_lp_keeps_the_intact_rate():
    # A dead core leaves its aggregation switches 3 uplinks for 4 leaves: the routing (which
    # splits at the leaf by its own cables) overloads them; the LP shifts load to the other
    # aggregation switches of the pod and keeps the intact rate.
    G = build("ft3", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    H, _ = fail(G, named=["core0"])
    assert certified(H) is None
    assert alltoall_bandwidth(H).pair_rate_Bps == pytest.approx(2 * NIC / (2 * 126), rel=1e-6)


def test_partial_pods_and_direct_networks_have_no_split_routing():
    for G in (
        build("ft3", switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=40),
        build("slimfly", q=5),
    ):
        hs, _ = contract_servers(G)
        assert split_routing(G, hs) is None


def test_plane_split_meets_the_demand_and_balances_the_planes():
    # Three classes on two planes; class 2 reaches only plane 0. Each pair's demand is met
    # exactly, and each class sends into each plane in proportion to its capacity there.
    D = np.array([[0.0, 4.0, 2.0], [4.0, 0.0, 2.0], [2.0, 2.0, 0.0]])
    cap = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 0.0]])
    x = plane_split(D, cap)
    assert x is not None
    assert np.allclose(x.sum(axis=2), D, rtol=1e-12)
    assert x[2, :, 1].sum() == 0 and x[:, 2, 1].sum() == 0
    # Class 0 sends 6: 3 per plane; 2 of it to class 2 in plane 0, so 1 to class 1 there.
    assert np.allclose(x[0, :, 0].sum(), 3.0) and np.allclose(x[0, 1], [1.0, 3.0])


def test_star_theta_is_a_lower_bound_on_the_server_lp():
    G = build("mpft", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    hs, _ = contract_servers(G)
    h = hs[0]
    lam = NIC / 124
    loads = [(s, 4 * 124 * lam / 4, 4 * 124 * lam / 4) for s in h.attach]
    fast = star_theta(G, h, loads, lam)
    assert fast is not None and 1.0 <= fast <= server_theta(G, h, loads, lam) * (1 + 1e-9)
    starved = [(s, 4 * u, 4 * d) for s, u, d in loads]  # four times the cable: cannot fit
    assert star_theta(G, h, starved, lam) == pytest.approx(0.25)


def test_link_loads_carry_the_all_to_all_within_capacity():
    # The certified routing's loads: no link over its capacity, and the NIC cables up carry
    # exactly what the servers send to other servers, lambda g (n - g) each.
    G = build("mpft", switch_ports=8, gpus_per_node=4, nics_per_node=4, gpus=64)
    H, _ = fail(G, links=3, seed=1)
    hs, terminal = contract_servers(H)
    r = certified_alltoall(SolveContext(H, hs, terminal, time.perf_counter()), want_loads=True)
    assert r is not None and r.link_load
    for (u, v), x in r.link_load.items():
        assert x <= H.adj[u][v]["capacity"] * (1 + 1e-9)
    switch_arcs = {
        d for a, b in H.edges() if "leaf" in a + b and "nic" not in a + b for d in ((a, b), (b, a))
    }
    assert switch_arcs <= set(r.link_load)  # every switch link direction, idle ones too
    n = sum(h.weight for h in hs)
    up = sum(x for (u, v), x in r.link_load.items() if H.nodes[u]["kind"] == "nic")
    assert up == pytest.approx(r.pair_rate_Bps * sum(h.weight * (n - h.weight) for h in hs))


def test_core_links_that_bind_are_the_bottleneck_links():
    # The 8-port FT3 of the test above with its core cables at half rate (25 GB/s): a pod's
    # 16 GPUs reach the other 112 over 4 x 4 core cables, lambda = 16 x 25 GB/s / (16 x 112)
    # (below the NICs' 2 x 50 / (2 x 126)); the split routing loads every core cable alike, so
    # all 8 x 16 of them are saturated both ways, and nothing else is.
    G = build("ft3", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    for u, v, d in G.edges(data=True):
        if {G.nodes[u].get("tier"), G.nodes[v].get("tier")} == {2, 3}:
            d["capacity"] = NIC / 2
    r = certified(G)
    assert r is not None and r.pair_rate_Bps == pytest.approx(16 * NIC / 2 / (16 * 112), rel=1e-9)
    assert len(r.bottleneck_links) == 2 * 8 * 16
    assert {b.tier for b in r.bottleneck_links} == {"spine->core", "core->spine"}


@pytest.mark.parametrize("certify_first", [0, 10**18])
def test_two_disjoint_fabrics_are_refused_whichever_path_runs_first(monkeypatch, certify_first):
    # Two 8-port FT2s side by side, no cable between them: the terminals are in two parts.
    # Where the certified routing is tried before anything (a fabric past CERTIFY_FIRST), it
    # finds no routing and the connectivity check, deferred to then, still names the parts.
    import networkx as nx

    from topo.errors import InfeasibleError
    from topo.flow.exact import alltoall as exact

    one = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    G = nx.union(one, one, rename=("a:", "b:"))
    for v, d in G.nodes(data=True):
        if "node" in d:
            d["node"] = f"{v.split(':')[0]}:{d['node']}"
    monkeypatch.setattr(exact, "CERTIFY_FIRST", certify_first)
    with pytest.raises(InfeasibleError, match="2 disconnected parts"):
        alltoall_bandwidth(G)
    assert certified(G) is None


def test_note_of_a_one_plane_fabric_says_there_is_no_split():
    """FT3 is one plane (one switch component): nothing is split over planes, and the note
    says so; an MPFT's note names the split. FT3 is NIC-bound (full bisection): by hand the
    server cut gives lam = C / (n - 8), C = 50 GB/s per NIC, 8 GPUs per server, so each GPU
    sends lam (n - 8) = C off its server, its NIC's line rate: utilisation 1.0 exactly."""
    r = certified(build("ft3", switch_ports=8))
    assert r is not None
    note = next(x for x in r.reductions if x.startswith("exact by a routing"))
    assert "one plane (no split over planes)" in note and "proportional fitting" not in note
    assert r.pair_rate_Bps == 50e9 / (r.gpus - 8)
    assert r.nic_utilization == 1.0
    mp = certified(build("mpft", switch_ports=8))
    assert mp is not None
    assert any("split over the 8 planes in the proportions" in x for x in mp.reductions)
    H, _ = fail(build("mpft", switch_ports=8), named=["node0/nic1--p1/leaf0"])
    damaged = certified(H)
    assert damaged is not None
    assert any("split over its planes by proportional fitting" in x for x in damaged.reductions)


def test_planes_alike_split_each_pair_in_capacity_proportion():
    # Two classes whose capacity is 1:3 over the two planes (rows proportional): plane p
    # carries D * frac[p], frac = (1/4, 3/4), so each class sends and receives a quarter of
    # its demand in plane 0; the fitted split meets the same marginals.
    D = np.array([[2.0, 8.0], [8.0, 6.0]])
    cap = np.array([[1.0, 3.0], [2.0, 6.0]])
    s = PlaneSplit.of(D, cap)
    assert s is not None and s.x is None
    assert np.array_equal(s.plane(0), D / 4) and np.array_equal(s.plane(1), D * 0.75)
    assert np.allclose(s.sent, [[2.5, 7.5], [3.5, 10.5]], rtol=1e-15)
    fitted = plane_split(D, cap)
    assert fitted is not None
    assert np.allclose(fitted.sum(axis=1), s.sent, rtol=1e-12)
    assert np.allclose(fitted.sum(axis=0), s.received, rtol=1e-12)
    # Rows not proportional: the fitted split.
    other = PlaneSplit.of(D, np.array([[1.0, 3.0], [2.0, 5.0]]))
    assert other is not None and other.x is not None


def test_intact_planes_routed_unfitted_as_before_and_as_the_lp():
    # An intact MPFT of 4 planes, 128 GPUs in 32 servers of 4: every NIC full, lambda =
    # 4 x 50 GB/s / (4 x 124). The split without fitting gives the fitted path's loads and
    # the general LP's rate.
    G = build("mpft", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    hs, _ = contract_servers(G)
    alike = split_routing(G, hs)
    assert alike is not None and not alike.fitted
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(
            certify.PlaneSplit,
            "of",
            staticmethod(lambda D, cap: certify.PlaneSplit(*_fitted(D, cap))),
        )
        fit = split_routing(G, hs)
    assert fit is not None and fit.fitted
    assert alike.rate_Bps == pytest.approx(fit.rate_Bps, rel=1e-12)
    assert np.allclose(alike.arc_load, fit.arc_load, rtol=1e-12, atol=0)
    assert np.allclose(alike.host_util, fit.host_util, rtol=1e-12, atol=0)
    r = certified(G)
    assert r is not None and r.pair_rate_Bps == pytest.approx(NIC / 124, rel=1e-9)
    assert r.pair_rate_Bps == pytest.approx(
        alltoall_bandwidth(G, method="general").pair_rate_Bps, rel=1e-7
    )
    assert any("alike for every class" in x for x in r.reductions)


def _fitted(D, cap):
    x = plane_split(D, cap)
    return x.sum(axis=1), x.sum(axis=0), x


def test_many_planes_are_limited_by_one_plane_s_leaves(monkeypatch):
    # 4 planes of 8 leaves: 32 leaves in all (32^2 = 1,024 cells), 8 in a plane (64 cells;
    # 8^2 x 4 spines = 256 for the two-hop routing). Under a limit of 300 cells the routing
    # is built plane by plane and certified.
    monkeypatch.setattr(certify, "MAX_CELLS", 300)
    monkeypatch.setattr(plane_routing, "MAX_CELLS", 300)
    G = build("mpft", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    r = certified(G)
    assert r is not None and r.pair_rate_Bps == pytest.approx(NIC / 124, rel=1e-9)


@pytest.mark.parametrize(
    "family,kw,fail_links",
    [
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2), 0),
        ("ft2", OVERSUBSCRIBED, 0),
        ("mpft", dict(switch_ports=8, gpus_per_node=4, nics_per_node=4, gpus=64), 3),
        ("ft3", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2), 0),
    ],
)
def test_the_binding_links_made_one_at_a_time_are_the_saturated_ones(family, kw, fail_links):
    # certify._links filters the saturated directions as it makes them (FT3's 131,072 NIC
    # cable directions are never held twice); they must be those of all the loaded
    # directions within SATURATED of their capacity, in the same order.
    from topo.flow.result import links

    G = build(family, **kw)
    if fail_links:
        G, _ = fail(G, links=fail_links, seed=1)
    hs, _ = contract_servers(G)
    r = split_routing(G, hs)
    if r is None:
        pytest.skip("no split routing on this fabric")

    def saturated(rate):
        every = certify._links(G, r, rate, saturated_only=False)
        return links(G, [t for t in every if t[3] >= t[2] * (1 - certify.SATURATED)])

    full, half = saturated(r.rate_Bps), saturated(0.5 * r.rate_Bps)
    assert full and not half  # (something binds at the routing's rate, nothing at half)
    assert links(G, certify._links(G, r, r.rate_Bps, saturated_only=True)) == full
    assert links(G, certify._links(G, r, 0.5 * r.rate_Bps, saturated_only=True)) == []
