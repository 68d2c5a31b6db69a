"""As-routed all-to-all (ECMP, D-mod-k, PXN): hand-counted link loads, an independent per-pair
router, properties of the hashing, and the optimal LP as an upper bound."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from functools import cache

import networkx as nx
import numpy as np
import pytest
from formats._real import real_file

from topo.builders import build
from topo.errors import InfeasibleError, TopoError
from topo.fabric import SWITCH_KINDS
from topo.flow import alltoall_bandwidth
from topo.flow.routing import routed_alltoall

NIC = 50e9  # B/s: a 400 Gb/s NIC or cable
GB200 = "topograph_dgx_gb200_ndr_superpod.out"


def counts(r) -> dict[tuple[str, str], float]:
    """Pair-units per directed arc: the load at the reported rate over that rate."""
    lam = r.pair_rate_GBps * 1e9
    return {k: x / lam for k, x in r.link_load.items()}


def expected_counts(r) -> dict[tuple[str, str], float]:
    lam = r.pair_rate_GBps * 1e9
    return {k: x / lam for k, x in r.expected_link_load.items()}


def whole(x: float) -> bool:
    return abs(x - round(x)) < 1e-9


def tier_of(G, u, v) -> str:
    def lab(x):
        d = G.nodes[x]
        return (
            {1: "leaf", 2: "spine", 3: "core"}[d["tier"]]
            if d["kind"] in SWITCH_KINDS
            else d["kind"]
        )

    return f"{lab(u)}->{lab(v)}"


# ---------------------------------------------------------------- D-mod-k, counted by hand


def test_dmodk_loads_counted_by_hand_on_a_partial_two_leaf_spine():
    # k = 4, one GPU and one NIC per server, 5 servers: leaf0 holds node0, node1; leaf1 node2,
    # node3; leaf2 node4 only. Two spines, one cable from each leaf to each.
    # D-mod-k index d = leaf * 2 + position below the leaf: node0..4 -> 0, 1, 2, 3, 4.
    # Up port at a leaf = d mod 2: destinations node0, node2, node4 go by spine0, node1, node3
    # by spine1.
    G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1, gpus=5)
    r = routed_alltoall(G, "dmodk")
    c = counts(r)
    want = {
        # leaf -> spine: (sources on the leaf) x (destinations on other leaves with that port)
        ("leaf0", "spine0"): 2 * 2,  # node0,1 -> node2, node4
        ("leaf0", "spine1"): 2 * 1,  # node0,1 -> node3
        ("leaf1", "spine0"): 2 * 2,  # node2,3 -> node0, node4
        ("leaf1", "spine1"): 2 * 1,  # node2,3 -> node1
        ("leaf2", "spine0"): 1 * 2,  # node4 -> node0, node2
        ("leaf2", "spine1"): 1 * 2,  # node4 -> node1, node3
        # spine -> leaf: (sources on other leaves) x (destinations below with that port)
        ("spine0", "leaf0"): 3,  # node2,3,4 -> node0
        ("spine1", "leaf0"): 3,  # node2,3,4 -> node1
        ("spine0", "leaf1"): 3,  # node0,1,4 -> node2
        ("spine1", "leaf1"): 3,  # node0,1,4 -> node3
        ("spine0", "leaf2"): 4,  # node0..3 -> node4
        ("spine1", "leaf2"): 0,  # nothing: D-mod-k leaves this cable idle
    }
    for arc, x in want.items():
        assert c[arc] == pytest.approx(x, abs=1e-9), arc
    # every NIC sends to and receives from the 4 other GPUs
    for n in range(5):
        leaf = f"leaf{n // 2}"
        assert c[(f"node{n}/nic0", leaf)] == pytest.approx(4)
        assert c[(leaf, f"node{n}/nic0")] == pytest.approx(4)
    # the busiest carry 4 pair-units on 50 GB/s: lambda = 12.5 GB/s, busbw = 4 lambda
    assert r.pair_rate_GBps == pytest.approx(12.5)
    assert r.alltoall_busbw_GBps == pytest.approx(50.0)
    assert r.max_link_utilization == pytest.approx(1.0)
    assert r.bottleneck_tiers == {
        "leaf->nic": 5,
        "leaf->spine": 2,
        "nic->leaf": 5,
        "spine->leaf": 1,
    }


def test_dmodk_on_a_full_two_layer_fat_tree_is_balanced_and_at_line_rate():
    # k = 8, one GPU per server: 8 leaves of 4 NICs, 4 spines. Up port d mod 4 = the position
    # below the leaf, so every leaf->spine cable carries its 4 sources to one destination on
    # each of the 7 other leaves (28), and every spine->leaf cable one destination's traffic
    # from the 28 sources on other leaves.
    G = build("ft2", switch_ports=8, gpus_per_node=1, nics_per_node=1)
    r = routed_alltoall(G, "dmodk")
    c = counts(r)
    fab = [(u, v) for (u, v) in c if tier_of(G, u, v) in ("leaf->spine", "spine->leaf")]
    assert len(fab) == 2 * 8 * 4
    assert all(c[a] == pytest.approx(28) for a in fab)
    n = 32
    assert r.pair_rate_GBps * 1e9 == pytest.approx(NIC / (n - 1))  # the NIC binds
    assert r.alltoall_busbw_GBps == pytest.approx(50.0)


@pytest.mark.parametrize(
    ("family", "kw"),
    [
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2)),
        ("ft2", dict(switch_ports=16)),
        ("mrft", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2)),
        ("mpft", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2)),
        ("ft3", dict(switch_ports=4, gpus_per_node=2, nics_per_node=2)),
        ("ft3", dict(switch_ports=8, gpus_per_node=4, nics_per_node=4)),
    ],
)
def test_dmodk_reaches_the_closed_form_on_non_blocking_fabrics(family, kw):
    # Non-blocking with PXN: lambda = c / (n - g), busbw = c (n - 1) / (n - g) (docs/bandwidth.md)
    G = build(family, **kw)
    r = routed_alltoall(G, "dmodk")
    n = r.gpus
    g = kw.get("gpus_per_node", 8)
    assert r.pair_rate_GBps * 1e9 == pytest.approx(NIC / (n - g))
    assert r.alltoall_busbw_GBps * 1e9 == pytest.approx(NIC * (n - 1) / (n - g))
    assert r.collision_loss == 0.0


# ---------------------------------------------------------------- an independent router


def _natural(s):
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(s)))


def brute_force(G, routing, pxn=True):
    """Route every ordered GPU pair one by one (Python loops; small fabrics only).

    D-mod-k: at an up hop from tier t, port (d // prod of lower up-port counts) mod (eligible
    ports), d = leaf rank * (largest NIC count of a leaf) + rank below it; ECMP expectation:
    even split over the eligible ports at every hop. Returns pair-units per arc (fabric and
    NIC cables); parallel cables are ports of their own, in the order of their switch.
    """
    sw = {v for v, k in G.nodes(data="kind") if k in SWITCH_KINDS}
    tier = {v: G.nodes[v]["tier"] for v in sw}
    gpus = [v for v, k in G.nodes(data="kind") if k == "gpu"]
    nic_of = {a: next(u for u in G[a] if G.nodes[u]["kind"] == "nic") for a in gpus}
    leaf_of = {x: next(u for u in G[x] if u in sw) for x in nic_of.values()}
    server = {a: G.nodes[a]["node"] for a in gpus}
    parents = {
        v: sorted((u for u in G[v] if u in sw and tier[u] > tier[v]), key=_natural) for v in sw
    }
    children = {
        v: sorted((u for u in G[v] if u in sw and tier[u] < tier[v]), key=_natural) for v in sw
    }

    @cache
    def below(v):
        return frozenset([v]) if tier[v] == 1 else frozenset().union(*map(below, children[v]))

    @cache
    def hops(v, B):
        if B in below(v):
            return tier[v] - 1
        return 1 + min((hops(p, B) for p in parents[v]), default=10**6)

    leaves = sorted((v for v in sw if tier[v] == 1), key=_natural)
    under = defaultdict(list)
    for x in sorted(leaf_of, key=lambda x: (_natural(G.nodes[x]["node"]), G.nodes[x]["index"])):
        under[leaf_of[x]].append(x)
    m1 = max(len(v) for v in under.values())
    d = {x: leaves.index(leaf_of[x]) * m1 + under[leaf_of[x]].index(x) for x in leaf_of}
    top = max(tier.values())
    w = [None] + [
        max(sum(G.edges[v, p]["links"] for p in parents[v]) for v in sw if tier[v] == t)
        for t in range(1, top)
    ]  # up-port (cable) counts

    def div(t):
        return int(np.prod(w[1:t])) if t > 1 else 1

    load = defaultdict(float)

    def route(v, y, mass):
        B = leaf_of[y]
        if v == B:
            load[(v, y)] += mass
            return
        if B in below(v):
            nxt = [c for c in children[v] if B in below(c)]
            t_low = tier[v] - 1
        else:
            nxt = [p for p in parents[v] if hops(p, B) == hops(v, B) - 1]
            t_low = tier[v]
        ports = [u for u in nxt for _ in range(G.edges[v, u]["links"])]  # one per cable
        if routing == "dmodk":
            steps = [(ports[(d[y] // div(t_low)) % len(ports)], mass)]
        else:
            steps = [(u, mass / len(ports)) for u in ports]
        for u, m in steps:
            load[(v, u)] += m
            route(u, y, m)

    for a in gpus:
        for b in gpus:
            if server[a] == server[b]:
                continue
            y = nic_of[b]
            x = nic_of[a]
            if pxn:
                same = [
                    u
                    for u in G.nodes
                    if G.nodes[u]["kind"] == "nic"
                    and G.nodes[u]["node"] == server[a]
                    and G.nodes[u]["index"] == G.nodes[y]["index"]
                ]
                x = same[0] if len(same) == 1 else x
            load[(x, leaf_of[x])] += 1
            route(leaf_of[x], y, 1.0)
    return load


@pytest.mark.parametrize(
    ("family", "kw", "pxn"),
    [
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=20), True),
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, oversubscription=3), True),
        ("ft2", dict(switch_ports=8, gpus_per_node=1, nics_per_node=1, gpus=13), True),
        ("mrft", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2), True),
        ("mrft", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2), False),
        ("mrft", dict(switch_ports=8, gpus_per_node=4, nics_per_node=4, gpus=24), True),
        ("mpft", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=40), True),
        ("ft3", dict(switch_ports=4, gpus_per_node=2, nics_per_node=2), True),
        ("ft3", dict(switch_ports=4, gpus_per_node=1, nics_per_node=1, gpus=11), True),
        ("ft3", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=50), True),
        # partial sizes: leaf-spine and spine-core pairs joined by 2 parallel cables
        ("ft3", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=64), True),
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=12), True),
    ],
)
def test_switch_loads_match_a_pair_by_pair_router(family, kw, pxn):
    G = build(family, **kw)
    _compare_with_brute_force(G, pxn)


@pytest.mark.parametrize(
    ("family", "kw", "cut"),
    [
        # FT3, k = 4: spine i of every pod reaches cores 2i and 2i + 1; k = 8: cores 4i..4i+3
        (
            "ft3",
            dict(switch_ports=4, gpus_per_node=2, nics_per_node=2),
            [("pod0/leaf0", "pod0/spine1"), ("pod1/spine0", "core0")],
        ),
        (
            "ft3",
            dict(switch_ports=8, gpus_per_node=2, nics_per_node=2),
            [("pod1/spine2", "core9"), ("pod0/leaf3", "pod0/spine0")],
        ),
        (
            "ft2",
            dict(switch_ports=8, gpus_per_node=2, nics_per_node=2),
            [("leaf0", "spine0"), ("leaf5", "spine3"), ("leaf5", "spine2")],
        ),
        # partial FT3 of 4 pods: each spine reaches 2 cores by 2 cables each
        (
            "ft3",
            dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=64),
            [("pod1/spine2", "core5"), ("pod0/leaf3", "pod0/spine0")],
        ),
    ],
)
def test_damaged_fabrics_match_the_pair_by_pair_router(family, kw, cut):
    # Cut cables leave leaves and spines with ports that do not lead everywhere: D-mod-k then
    # takes the modulus over the eligible ports, ECMP splits over them.
    G = build(family, **kw)
    G.remove_edges_from(cut)
    _compare_with_brute_force(G, True)


def _compare_with_brute_force(G, pxn):
    for routing in ("dmodk", "ecmp"):
        r = routed_alltoall(G, routing, pxn=pxn)
        want = brute_force(G, routing, pxn)
        got = counts(r) if routing == "dmodk" else expected_counts(r)
        for (u, v), x in got.items():
            if {G.nodes[u]["kind"], G.nodes[v]["kind"]} & {"gpu", "nvswitch"}:
                continue  # inside servers: counted by hand in the PXN test
            assert x == pytest.approx(want.get((u, v), 0.0), abs=1e-9), (routing, u, v)


# ---------------------------------------------------------------- ECMP


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
        assert r.expected_pair_rate_GBps * 1e9 == pytest.approx(NIC / 31)


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
        assert r.expected_pair_rate_GBps == pytest.approx(d.pair_rate_GBps)
        assert r.pair_rate_GBps < r.expected_pair_rate_GBps
        assert r.collision_loss == pytest.approx(1 - r.pair_rate_GBps / r.expected_pair_rate_GBps)
        assert r.alltoall_busbw_GBps < d.alltoall_busbw_GBps


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
    g1 = routed_alltoall(G, "ecmp", seed=np.random.default_rng(7))
    assert g1.link_load == a.link_load


def test_more_flows_per_pair_split_each_pair_and_keep_the_totals():
    # With F flows per pair each carries 1/F: loads are multiples of 1/F pair-units and the
    # per-tier totals are unchanged.
    G = build("ft2", switch_ports=8, gpus_per_node=1, nics_per_node=1)
    r = routed_alltoall(G, "ecmp", seed=3, flows_per_pair=4)
    c = counts(r)
    arcs = [a for a in c if tier_of(G, *a) == "leaf->spine"]
    assert sum(c[a] for a in arcs) == pytest.approx(8 * 4 * 28)
    assert all(whole(c[a] * 4) for a in arcs)
    assert r.flows == 32 * 31 * 4


# ---------------------------------------------------------------- PXN


def test_pxn_keeps_mrft_traffic_on_its_rail():
    # MRFT, k = 4, 2 rails, 4 servers of 2 GPUs: rail r has leaves rail{r}/leaf0 (servers 0, 1)
    # and rail{r}/leaf1 (servers 2, 3); two spines shared by all four leaves. n = 8, and each
    # GPU has 6 peers on other servers, 3 on each rail.
    G = build("mrft", switch_ports=4, gpus_per_node=2, nics_per_node=2, gpus=8)
    up = lambda r: sum(x for a, x in counts(r).items() if tier_of(G, *a) == "leaf->spine")  # noqa: E731
    on, off = routed_alltoall(G, "dmodk", pxn=True), routed_alltoall(G, "dmodk", pxn=False)
    # PXN: a pair climbs only between server groups {0,1} and {2,3}: 8 ordered server pairs x
    # 4 GPU pairs = 32. Without: every cross-server pair except same rail in the same group,
    # 48 - 2 rails x 4 ordered server pairs in a group = 40.
    assert up(on) == pytest.approx(32)
    assert up(off) == pytest.approx(40)
    c_on, c_off = counts(on), counts(off)
    for s in range(4):
        for i in range(2):
            gpu, nvs, nic = f"node{s}/gpu{i}", f"node{s}/nvswitch", f"node{s}/nic{i}"
            # NVLink: 1 peer in the server, plus (PXN) 3 peers on the other rail forwarded
            assert c_on[(gpu, nvs)] == pytest.approx(1 + 3)
            assert c_on[(nvs, gpu)] == pytest.approx(1 + 3)
            assert c_off[(gpu, nvs)] == pytest.approx(1)
            # PCIe out: its own 3 same-rail peers and the other GPU's 3, or all 6 of its own
            assert c_on[(gpu, nic)] == pytest.approx(6)
            assert c_off[(gpu, nic)] == pytest.approx(6)
            assert c_on[(nic, gpu)] == pytest.approx(6)


def test_mpft_without_pxn_names_the_unroutable_pairs():
    # 4 servers of 2 GPUs on 2 planes: each GPU has 3 peers on other servers on the other
    # plane: 8 x 3 = 24 ordered pairs cannot leave their plane without NVLink forwarding.
    G = build("mpft", switch_ports=4, gpus_per_node=2, nics_per_node=2, gpus=8)
    with pytest.raises(InfeasibleError, match=r"^24 ordered GPU pairs have no up/down route.*PXN"):
        routed_alltoall(G, "ecmp", pxn=False)
    assert routed_alltoall(G, "ecmp", pxn=True).gpus == 8


# ---------------------------------------------------------------- against the optimum


@pytest.mark.parametrize(
    ("family", "kw"),
    [
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=20)),
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, oversubscription=3)),
        ("ft2", dict(switch_ports=16)),
        ("mrft", dict(switch_ports=8, gpus_per_node=4, nics_per_node=4, gpus=24)),
        ("mpft", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=40)),
        ("ft3", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=50)),
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, link_gbps=800)),
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, nvlink_GBps=1)),
    ],
)
def test_as_routed_never_beats_the_optimum(family, kw):
    G = build(family, **kw)
    best = alltoall_bandwidth(G).pair_rate_Bps / 1e9
    for routing in ("dmodk", "ecmp"):
        r = routed_alltoall(G, routing, seed=1)
        assert r.pair_rate_GBps <= best * (1 + 1e-9)
        assert r.expected_pair_rate_GBps <= best * (1 + 1e-9)


def test_pcie_and_nvlink_bind_as_routed_too():
    # 800G NICs behind 64 GB/s PCIe: each GPU's n - g inter-server pair-units cross its PCIe
    # link, so lambda = 64e9 / (n - g), as the optimum (docs/bandwidth.md).
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2, link_gbps=800)
    r = routed_alltoall(G, "dmodk")
    n, g = 32, 2
    assert r.pair_rate_GBps * 1e9 == pytest.approx(64e9 / (n - g))
    assert set(r.bottleneck_tiers) == {"gpu->nic", "nic->gpu"}


def test_the_gb200_import_shows_the_gap_between_optimal_and_routed():
    # The real GB200 fabric: leaves with 7 to 9 spines, so minimal up/down routes between
    # two leaves use only the spines they share; the optimal flow also detours over other
    # leaves. Both routings stay below the optimum; D-mod-k well below it.
    from topo.formats.ibnetdiscover import read_ibnetdiscover

    G = read_ibnetdiscover(real_file("ibnetdiscover", GB200))
    best = alltoall_bandwidth(G)
    d = routed_alltoall(G, "dmodk")
    e = routed_alltoall(G, "ecmp", seed=0)
    # Terminals: the file's 582 Ca blocks (grep -c '^Ca') minus its 40 SHARP "Aggregation
    # Node" CAs, each with one cabled port; every ordered pair is one flow (each host is its
    # own server).
    assert d.terminal == "endpoint" and d.gpus == 582 - 40 == 542
    assert d.flows == 542 * 541
    assert d.alltoall_busbw_GBps < 0.7 * best.alltoall_busbw_Bps / 1e9
    assert e.expected_alltoall_busbw_GBps < best.alltoall_busbw_Bps / 1e9
    assert "PXN does not apply" in " ".join(d.notes)


# ---------------------------------------------------------------- errors and the report


def test_bad_arguments_are_topo_errors():
    G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1, gpus=4)
    with pytest.raises(TopoError, match="--routing must be one of ecmp, dmodk"):
        routed_alltoall(G, "optimal")
    for bad in (0, 1025, True, 1.5):
        with pytest.raises(TopoError, match="--flows-per-pair must be a whole number from 1"):
            routed_alltoall(G, "ecmp", flows_per_pair=bad)


def test_a_fabric_that_is_not_up_down_routable_is_refused():
    # Two leaves cabled to each other (a ring, Dragonfly-like): no tiers to route up and down.
    G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1, gpus=8)
    G.add_edge("leaf0", "leaf1", capacity=NIC, links=1, kind="fabric")
    with pytest.raises(
        TopoError, match="not up/down routable: the cable leaf0-leaf1 joins two tiers"
    ):
        routed_alltoall(G, "dmodk")


def test_disconnected_gpus_are_reported():
    G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1, gpus=8)
    G.remove_edge("node3/nic0", "leaf1")
    with pytest.raises(InfeasibleError, match=r"^1 GPU\(s\) have no NIC cabled to a switch"):
        routed_alltoall(G, "ecmp")


def test_a_cut_uplink_moves_dmodk_to_the_remaining_spine():
    # Full FT2, k = 4, one GPU per server, cable leaf0-spine0 cut: leaf0 climbs only to
    # spine1 (2 sources x 6 destinations = 12), and every flow to leaf0 comes down from
    # spine1 (6 sources x 2 destinations = 12). The cut bounds the optimum the same way.
    G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    G.remove_edge("leaf0", "spine0")
    r = routed_alltoall(G, "dmodk")
    c = counts(r)
    assert c[("leaf0", "spine1")] == pytest.approx(12)
    assert c[("spine1", "leaf0")] == pytest.approx(12)
    assert ("spine0", "leaf0") not in c and ("leaf0", "spine0") not in c
    assert r.pair_rate_GBps * 1e9 == pytest.approx(NIC / 12)
    assert r.pair_rate_GBps == pytest.approx(alltoall_bandwidth(G).pair_rate_Bps / 1e9)


def test_dmodk_doubles_up_below_a_leaf_that_lost_an_uplink():
    # Full FT2, k = 8, one GPU per server, cable leaf0-spine3 cut. Traffic to leaf0's NICs
    # (d = 0..3) can only come down from spines 0..2, taken as d mod 3: d = 0 and d = 3 both
    # use spine0, whose cable into leaf0 then carries 2 destinations x 28 sources = 56
    # pair-units (a NIC carries 31): lambda = 50 GB/s / 56. ECMP's expected split spreads the
    # 4 x 28 over the 3 cables (37.33 each), a feasible routing: the optimum is at least that.
    G = build("ft2", switch_ports=8, gpus_per_node=1, nics_per_node=1)
    G.remove_edge("leaf0", "spine3")
    r = routed_alltoall(G, "dmodk")
    c = counts(r)
    assert c[("spine0", "leaf0")] == pytest.approx(56)
    assert c[("spine1", "leaf0")] == pytest.approx(28)
    assert c[("spine2", "leaf0")] == pytest.approx(28)
    assert r.pair_rate_GBps * 1e9 == pytest.approx(NIC / 56)
    e = routed_alltoall(G, "ecmp")
    assert expected_counts(e)[("spine0", "leaf0")] == pytest.approx(4 * 28 / 3)
    best = alltoall_bandwidth(G).pair_rate_Bps
    assert best >= NIC / (4 * 28 / 3) * (1 - 1e-9)


def test_report_is_json_ready_and_names_the_busiest_links():
    G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1, gpus=5)
    r = routed_alltoall(G, "dmodk")
    d = json.loads(json.dumps(r.to_dict()))
    assert "link_load" not in d
    for key in (
        "routing",
        "seed",
        "flows_per_pair",
        "pxn",
        "gpus",
        "nodes",
        "pair_rate_GBps",
        "alltoall_busbw_GBps",
        "expected_pair_rate_GBps",
        "max_link_utilization",
        "tiers",
        "most_loaded_links",
    ):
        assert key in d
    assert d["gpus"] == 5 and d["nodes"] == 5 and d["routing"] == "dmodk"
    full = json.loads(json.dumps(r.to_dict(link_load=True)))
    assert len(full["link_load"]) == 2 * G.number_of_edges()
    top = r.most_loaded_links[0]
    assert top.utilization == pytest.approx(1.0)
    assert top.load_GBps == pytest.approx(50.0)
    tiers = {t.tier: t for t in r.tiers}
    assert tiers["spine->leaf"].max_GBps == pytest.approx(4 * 12.5)
    assert tiers["spine->leaf"].max_utilization == pytest.approx(1.0)


# ---------------------------------------------------------------- full scale


@pytest.mark.slow
@pytest.mark.parametrize(("family", "n", "g"), [("mpft", 16384, 8), ("ft2", 2048, 8)])
def test_full_scale_dmodk_meets_the_closed_form(family, n, g):
    r = routed_alltoall(build(family), "dmodk")
    assert r.gpus == n
    assert r.alltoall_busbw_GBps * 1e9 == pytest.approx(NIC * (n - 1) / (n - g))


@pytest.mark.slow
def test_full_scale_ft3_dmodk_meets_the_closed_form():
    r = routed_alltoall(build("ft3"), "dmodk")
    n, g = 65536, 8
    assert r.alltoall_busbw_GBps * 1e9 == pytest.approx(NIC * (n - 1) / (n - g))


@pytest.mark.slow
def test_full_scale_mpft_ecmp_loses_to_collisions():
    r = routed_alltoall(build("mpft"), "ecmp", seed=0)
    assert r.expected_alltoall_busbw_GBps * 1e9 == pytest.approx(NIC * (16383) / (16384 - 8))
    assert r.pair_rate_GBps < r.expected_pair_rate_GBps


def test_networkx_graph_is_not_modified():
    G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1, gpus=5)
    before = nx.to_dict_of_dicts(G)
    routed_alltoall(G, "ecmp")
    assert nx.to_dict_of_dicts(G) == before
