"""Closed-form Slim Fly and Dragonfly all-to-all: against hand counts, brute-force path
enumeration and an independent LP (scipy's HiGHS on the router-level max concurrent flow)."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
from scipy.optimize import linprog

from topo.builders import build
from topo.builders.dragonfly import global_links
from topo.builders.slimfly import mms_graph
from topo.cost.direct_rates import dragonfly_rates, dragonfly_router_loads, slimfly_rates
from topo.errors import SpecError
from topo.flow import alltoall_bandwidth
from topo.flow.routing import minimal_arc_loads

C = 50e9  # B/s: a 400 Gb/s cable


def _even_shortest_loads(G: nx.Graph) -> dict[tuple, float]:
    """Arc loads of 1 per ordered pair split evenly over all shortest paths (enumerated)."""
    load: dict[tuple, float] = {}
    for s, t in itertools.permutations(G.nodes, 2):
        paths = list(nx.all_shortest_paths(G, s, t))
        for path in paths:
            for u, v in zip(path[:-1], path[1:], strict=True):
                load[(u, v)] = load.get((u, v), 0.0) + 1.0 / len(paths)
    return load


def _router_lp(n: int, arcs: list[tuple[int, int, float]]) -> float:
    """Max concurrent flow of 1 per ordered router pair (source-aggregated commodities), B/s;
    capacities scaled to units of the largest (HiGHS drops coefficients below 1e-9)."""
    unit = max(cap for _, _, cap in arcs)
    m = len(arcs)
    nv = n * m + 1  # f[s, arc], theta last
    A_eq, b_eq = [], []
    for s in range(n):
        for v in range(n):
            if v == s:
                continue
            row = np.zeros(nv)
            for j, (a, b, _) in enumerate(arcs):
                if b == v:
                    row[s * m + j] += 1.0
                if a == v:
                    row[s * m + j] -= 1.0
            row[-1] = -1.0  # in - out = theta at every other router
            A_eq.append(row)
            b_eq.append(0.0)
    A_ub = np.zeros((m, nv))
    for j, (_, _, cap) in enumerate(arcs):
        A_ub[j, [s * m + j for s in range(n)]] = unit / cap
    cost = np.zeros(nv)
    cost[-1] = -1.0
    res = linprog(cost, A_ub=A_ub, b_ub=np.ones(m), A_eq=np.array(A_eq), b_eq=b_eq, method="highs")
    assert res.status == 0
    return float(res.x[-1]) * unit


def _dragonfly_graph(a: int, h: int, g: int) -> nx.MultiGraph:
    G = nx.MultiGraph()
    for i in range(g):
        for r, s in itertools.combinations(range(a), 2):
            G.add_edge((i, r), (i, s), kind="local")
    for i, r, t, s in global_links(a, h, g):
        G.add_edge((i, r), (t, s), kind="global")
    return G


def test_minimal_loads_petersen_by_hand():
    # Petersen: 3 neighbours and 6 at distance 2 (one path each): 15 hops over 3 arcs,
    # arc-transitive, so 5 on every arc
    A = nx.to_numpy_array(nx.petersen_graph())
    loads = minimal_arc_loads(A)
    assert np.allclose(loads[A > 0], 5.0)
    assert np.all(loads[A == 0] == 0)


def test_minimal_loads_match_enumerated_paths_on_an_uneven_graph():
    # a wheel: hub plus a 7-cycle, diameter 2, several shortest paths between rim vertices
    G = nx.wheel_graph(8)
    A = nx.to_numpy_array(G, nodelist=range(8))
    loads = minimal_arc_loads(A)
    for (u, v), x in _even_shortest_loads(G).items():
        assert loads[u, v] == pytest.approx(x)


def test_minimal_loads_refuse_diameter_three():
    with pytest.raises(SpecError, match="diameter above 2"):
        minimal_arc_loads(nx.to_numpy_array(nx.path_graph(4)))


def test_slimfly_q5_hoffman_singleton_by_hand():
    # MMS q=5 is the Hoffman-Singleton graph: 50 routers, k' = 7, girth 5: 7 + 2 * 42 = 91 hops
    # from each router, 13 an arc. p = 2 endpoints (1-GPU servers): n = 100 GPUs.
    r = slimfly_rates(5, 2, gpus_per_node=1, nics_per_node=1)
    assert (r.routers, r.gpus, r.gpus_per_router) == (50, 100, 2)
    assert r.minimal_load == 13.0 and r.max_distance_load == pytest.approx(13.0)
    # NIC: C / 99; minimal: C / (2^2 * 13) = C / 52, so the NIC binds (and the ideal too)
    assert r.endpoint_Bps == pytest.approx(C / 99)
    assert r.minimal_Bps == pytest.approx(C / 99)
    assert r.ideal_Bps == pytest.approx(C / 99)
    # Valiant: 2 * 49 / 50 * 13 an arc: C / (4 * 25.48) = C / 101.92, below the NIC's
    assert r.valiant_Bps == pytest.approx(C / (4 * 13 * 2 * 49 / 50))
    assert r.ugal_Bps == pytest.approx(C / 99)


def test_slimfly_valiant_matches_enumerated_valiant_paths():
    # every pair over each of the 50 routers as intermediate (1/50 each), legs split evenly over
    # their shortest paths: enumerate it on Hoffman-Singleton and take the busiest arc
    M = mms_graph(5)
    short = _even_shortest_loads(M)  # 1 per ordered pair
    per_pair = {}
    for s, t in itertools.permutations(M.nodes, 2):
        paths = list(nx.all_shortest_paths(M, s, t))
        per_pair[(s, t)] = [(p, 1.0 / len(paths)) for p in paths]
    load: dict[tuple, float] = {}
    nodes = list(M.nodes)
    for s, t in itertools.permutations(nodes, 2):
        for i in nodes:
            for leg in ((s, i), (i, t)):
                if leg[0] == leg[1]:
                    continue
                for path, share in per_pair[leg]:
                    for u, v in zip(path[:-1], path[1:], strict=True):
                        load[(u, v)] = load.get((u, v), 0.0) + share / len(nodes)
    assert max(short.values()) == pytest.approx(13.0)
    worst = max(load.values())
    r = slimfly_rates(5, 4, gpus_per_node=1, nics_per_node=1)  # w = 4: the fabric binds
    assert r.valiant_Bps == pytest.approx(C / (16 * worst))


def test_slimfly_ideal_against_an_independent_lp():
    # p = 8 (w = 8): n = 400, NIC C / 399; the routers carry 64 per pair: the fabric binds.
    # Hoffman-Singleton is arc-transitive: the LP meets the distance bound C * 7 / 91.
    M = mms_graph(5)
    idx = {v: i for i, v in enumerate(sorted(M.nodes))}
    arcs = [(idx[u], idx[v], C) for u, v in M.edges] + [(idx[v], idx[u], C) for u, v in M.edges]
    theta = _router_lp(50, arcs)
    assert theta == pytest.approx(C * 7 / 91, rel=1e-6)
    r = slimfly_rates(5, 8, gpus_per_node=1, nics_per_node=1)
    assert r.ideal_Bps == pytest.approx(theta / 64, rel=1e-6)


def test_dragonfly_minimal_loads_match_enumerated_paths():
    # a = 4, h = 2, g = 5: 8 global ports a group over 4 peers, 2 links a pair
    a, h, g = 4, 2, 5
    G = _dragonfly_graph(a, h, g)
    load: dict[tuple, float] = {}
    links: dict[tuple[int, int], list[tuple]] = {}
    for u, v, kind in G.edges(data="kind"):
        if kind == "global":
            links.setdefault((u[0], v[0]), []).append((u, v))
            links.setdefault((v[0], u[0]), []).append((v, u))
    for s, t in itertools.permutations(G.nodes, 2):
        if s[0] == t[0]:
            load[(s, t, "l")] = load.get((s, t, "l"), 0.0) + 1.0
            continue
        ways = links[(s[0], t[0])]
        for j, (x, y) in enumerate(ways):
            hops = [(s, x, "l"), (x, y, "g"), (y, t, "l")]
            for u, v, kind in hops:
                if u != v:
                    key = (u, v, kind) if kind == "l" else (u, v, "g", j)
                    load[key] = load.get(key, 0.0) + 1.0 / len(ways)
    local = max(x for k, x in load.items() if k[2] == "l")
    glob = max(x for k, x in load.items() if k[2] == "g")
    assert dragonfly_router_loads(a, h, g) == (pytest.approx(local), pytest.approx(glob))
    # by hand: a global cable carries a^2 / 2 = 8; a router's 2 links give f = 2 * 4 / 2 = 4
    assert glob == 8.0 and local == 9.0


def test_dragonfly_ideal_against_an_independent_lp():
    # a = 4, p = 4, h = 2, g = 9 (one global link a pair): w = 4, n = 144, NIC C / 143; minimal
    # routing's busiest local link carries 17 (C / (16 * 17) = C / 272): not at the NIC, so the
    # ideal is the router-level LP
    a, h, g = 4, 2, 9
    G = nx.Graph(_dragonfly_graph(a, h, g))
    idx = {v: i for i, v in enumerate(sorted(G.nodes))}
    arcs = [(idx[u], idx[v], C) for u, v in G.edges] + [(idx[v], idx[u], C) for u, v in G.edges]
    theta = _router_lp(len(idx), arcs)
    r = dragonfly_rates(a, 4, h, g, gpus_per_node=1, nics_per_node=1)
    assert r.minimal_Bps == pytest.approx(C / (16 * 17))
    assert r.ideal_Bps == pytest.approx(min(C / 143, theta / 16), rel=1e-6)
    assert r.ideal_Bps > r.minimal_Bps  # non-minimal paths help the ideal routing


def test_dragonfly_valiant_is_twice_minimal_less_one_in_n():
    # Valiant over all 36 routers: each arc 2 * 35 / 36 of its minimal load
    r = dragonfly_rates(4, 4, 2, 9, gpus_per_node=1, nics_per_node=1)
    assert r.valiant_Bps == pytest.approx(C / (16 * 17 * 2 * 35 / 36))
    assert r.ugal_Bps == r.minimal_Bps


def test_closed_form_refuses_servers_split_over_routers():
    with pytest.raises(SpecError, match="multiple of 8 NICs"):
        slimfly_rates(5, 4)
    with pytest.raises(SpecError, match="one NIC per GPU"):
        dragonfly_rates(4, 8, 2, 9, gpus_per_node=8, nics_per_node=4)


def test_dragonfly_of_the_16385_gpu_plan_by_hand():
    # a = 32, p = h = 16, 33 groups: 512 global ports a group over 32 peers, 16 links a pair.
    # A global cable carries 32^2 / 16 = 64; a router's 16 links give f = 16 * 32 / 16 = 32, so
    # a local link 1 + 32 + 32 = 65. n = 1,056 x 16 = 16,896 GPUs, w = 16 a router.
    r = dragonfly_rates(32, 16, 16, 33)
    assert dragonfly_router_loads(32, 16, 33) == (65.0, 64.0)
    assert r.gpus == 16_896
    # NIC: C / (16,896 - 8) a pair; minimal: C / (256 x 65) = C / 16,640, above it: NIC-bound
    assert r.busbw_Bps(r.ideal_Bps) == pytest.approx(C * 16_895 / 16_888)
    assert r.busbw_Bps(r.minimal_Bps) == pytest.approx(C * 16_895 / 16_888)
    # Valiant: 65 x 2 x 1,055 / 1,056 an arc, below the NIC
    assert r.busbw_Bps(r.valiant_Bps) == pytest.approx(C * 16_895 / (256 * 65 * 2 * 1055 / 1056))


def test_closed_form_refuses_an_nvlink_slower_than_the_nic_share():
    # 2 GPUs a server on 0.1 GB/s NVLink: NVLink / (g - 1) = 0.1 GB/s is below the NIC's
    # 50 GB/s / 98 pairs, so min() of the two would give 0.1 GB/s a pair (busbw 9.9 GB/s).
    # The pairs inside a server also take the NICs: every GPU sends 99 pairs at lambda
    # through NIC and NVLink together, 99 lambda = 50 + 0.1 (the 50 routers, 2 NICs each,
    # carry far more), so busbw = 99 lambda = 50.1 GB/s
    with pytest.raises(SpecError, match="NVLink to carry a server's own pairs"):
        slimfly_rates(5, 2, gpus_per_node=2, nics_per_node=2, nvlink_GBps=0.1)
    G = build("slimfly", q=5, endpoints_per_router=2, gpus_per_node=2, nics_per_node=2,
              nvlink_GBps=0.1)  # fmt: skip
    r = alltoall_bandwidth(G)
    assert r.exact
    assert r.alltoall_busbw_Bps == pytest.approx(50.1e9, rel=1e-6)
    # at the NIC's share exactly, NVLink does not bind and the closed form stands
    ok = slimfly_rates(5, 2, gpus_per_node=2, nics_per_node=2, nvlink_GBps=50 / 98)
    assert ok.endpoint_Bps == pytest.approx(50e9 / 98, rel=1e-12)
