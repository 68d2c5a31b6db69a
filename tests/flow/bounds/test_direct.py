"""Direct networks (Slim Fly, Dragonfly): the router-level bounds of topo.flow.bounds.direct.

Each bound is held against the exact LP (the reduced or general LP of topo.flow, an independent
path) on fabrics small enough for it, and against closed forms where there is one.
"""

from __future__ import annotations

import numpy as np
import pytest

from topo.builders import build
from topo.flow import alltoall_bandwidth
from topo.flow.bounds.direct import (
    automorphisms,
    direct_bounds,
    dragonfly_groups,
    group_split_rate,
    nvlink_span,
    orbit_rate,
    orbits,
    router_net,
)
from topo.flow.bounds.router_lp import RouterNet, router_distances, split_loads
from topo.flow.reduce.servers import contract_servers, terminal_count

NIC = 50e9  # B/s


def _bounds(G):
    hs, terminal = contract_servers(G)
    out = direct_bounds(G, hs, terminal, max_variables=2_000_000)
    assert out is not None
    (lo, _), (hi, _) = out
    return lo, hi


def test_orbits_by_hand():
    # (0 1 2) and (3 4): orbits {0, 1, 2}, {3, 4}, {5}.
    perms = [np.array([1, 2, 0, 3, 4, 5]), np.array([0, 1, 2, 4, 3, 5])]
    label = orbits(6, perms)
    assert label[0] == label[1] == label[2]
    assert label[3] == label[4] != label[0]
    assert len(set(label.tolist())) == 3


def test_hoffman_singleton_automorphisms():
    # The MMS graph of q = 5 is the Hoffman-Singleton graph (50 vertices, degree 7); its
    # automorphism group (order 252,000, PSigmaU(3, 25)) is transitive on vertices and on arcs.
    import igraph as ig

    G = build("slimfly", q=5, gpus_per_node=1, nics_per_node=1)
    hs, _ = contract_servers(G)
    net = router_net(G, hs)
    gens = automorphisms(net)
    assert len(set(orbits(net.n, gens).tolist())) == 1
    g = ig.Graph(n=net.n, edges=list(zip(net.tail.tolist(), net.head.tolist(), strict=True)))
    g = g.simplify()
    assert g.count_automorphisms() == 252_000
    assert all(d == 7 for d in g.degree())


@pytest.mark.parametrize("q", [5, pytest.param(7, marks=pytest.mark.slow)])
def test_uniform_slim_fly_bounds_meet_at_the_exact_rate(q):
    # One GPU per server, every router full: the folded router-level LP is the exact LP and its
    # duals certify it (strong duality), so both bounds equal the reduced LP's optimum.
    G = build("slimfly", q=q, gpus_per_node=1, nics_per_node=1)
    exact = alltoall_bandwidth(G)
    assert exact.exact and exact.method != "bounds"
    lo, hi = _bounds(G)
    assert lo == pytest.approx(exact.pair_rate_Bps, rel=1e-7)
    assert hi == pytest.approx(exact.pair_rate_Bps, rel=1e-7)


def test_bounds_path_results_are_written_as_json(tmp_path):
    # `topo bandwidth --json` on a fabric the bounds certify (Slim Fly q=5 of one-GPU servers)
    # and on one they only bracket (8-GPU servers): numpy scalars once reached the JSON writer.
    import json

    from typer.testing import CliRunner

    from topo.cli import app
    from topo.fabric import save

    for kw, method in [(dict(gpus_per_node=1, nics_per_node=1), "certified"), ({}, "bounds")]:
        path = tmp_path / "sf.json"
        save(build("slimfly", q=5, **kw), path)
        out = CliRunner().invoke(app, ["bandwidth", str(path), "--max-variables", "10", "--json"])
        assert out.exit_code == 0, out.output
        assert json.loads(out.stdout)["method"] == method


def test_uniform_slim_fly_is_certified_exact_when_the_lp_is_too_large():
    G = build("slimfly", q=5, gpus_per_node=1, nics_per_node=1)
    exact = alltoall_bandwidth(G)
    b = alltoall_bandwidth(G, max_variables=10)  # the reduced LP is refused: bounds path
    assert b.exact and b.method == "certified"
    assert b.pair_rate_Bps == pytest.approx(exact.pair_rate_Bps, rel=1e-7)
    assert any("meets" in r for r in b.reductions)


@pytest.mark.parametrize("q", [3, 4, 5, pytest.param(7, marks=pytest.mark.slow)])
def test_straddling_servers_are_bracketed(q):
    # 8-GPU servers on routers of 3 (q=3), 4 (q=4, q=5) or 6 (q=7) endpoints straddle two to four
    # routers: their NVLink is a path between them, which the exact LP uses and the router-level
    # routing does not; the bounds must still bracket the exact rate.
    G = build("slimfly", q=q)
    exact = alltoall_bandwidth(G)
    assert exact.exact
    lo, hi = _bounds(G)
    assert 0 < lo <= exact.pair_rate_Bps * (1 + 1e-7)
    assert hi >= exact.pair_rate_Bps * (1 - 1e-7)


def _router_lengths(q):
    G = build("slimfly", q=q)
    net = router_net(G, contract_servers(G)[0])
    lengths = orbit_rate(net, 2_000_000).lengths
    return net, lengths, router_distances(net, lengths)


@pytest.mark.parametrize("q", [3, 4, 7])
def test_nvlink_span_leaves_no_shortcut(q):
    # At t = 1 every server's NVLink costs its span, the longest distance between two of its
    # routers either way round: then no path through NVLink beats the router links (triangle
    # inequality), so the distances are the routers' own. The least distance (the span before)
    # does shorten some: the dual lengths are not symmetric.
    net, lengths, base = _router_lengths(q)
    span = nvlink_span(net, base)
    multi = [i for i, rs in enumerate(net.host_routers) if len(rs) > 1]
    assert multi
    tol = 1e-9 * base.max()
    for i in multi:
        rs = net.host_routers[i]
        assert span[i] == pytest.approx(base[np.ix_(rs, rs)].max())
    with_nvlink = router_distances(net, lengths, [(net.host_routers[i], span[i]) for i in multi])
    assert np.abs(with_nvlink - base).max() <= tol
    least = []
    for i in multi:
        sub = base[np.ix_(net.host_routers[i], net.host_routers[i])]
        least.append((net.host_routers[i], sub[~np.eye(len(sub), dtype=bool)].min()))
    assert (router_distances(net, lengths, least) < base - tol).any()


def test_router_distances_keep_the_shortest_of_parallel_arcs():
    # Two routers joined by a link of length 1 each way and by a server's NVLink of length
    # 0.25: the distance is 0.25 both ways (scipy's sparse matrix alone would add the two, 1.25).
    net = RouterNet(
        ["a", "b"],
        np.array([0, 1]),
        np.array([1, 0]),
        np.array([1.0, 1.0]),
        np.array([1.0, 1.0]),
        [np.array([0, 1])],
        [np.array([0.5, 0.5])],
    )
    d = router_distances(net, np.array([1.0, 1.0]), [(np.array([0, 1]), 0.25)])
    assert d[0, 1] == pytest.approx(0.25) and d[1, 0] == pytest.approx(0.25)
    assert router_distances(net, np.array([1.0, 1.0]))[0, 1] == pytest.approx(1.0)


def test_slim_fly_q5_router_rate_by_hand():
    # Hoffman-Singleton, 4 endpoints per router, 1 GPU each: the graph is distance-regular
    # (diameter 2, 7 neighbours, 42 at distance 2) and arc-transitive, so the optimum spreads
    # the distance-weighted load evenly: 16 (7 * 1 + 42 * 2) lambda per router = 7 links,
    # i.e. lambda = 7 * 50 / (16 * 91) GB/s, below the NIC cut 50 / 199.
    G = build("slimfly", q=5, gpus_per_node=1, nics_per_node=1)
    hs, _ = contract_servers(G)
    r = orbit_rate(router_net(G, hs), 2_000_000)
    assert r.pair_rate_Bps == pytest.approx(7 * NIC / (16 * 91), rel=1e-9)


@pytest.mark.parametrize(
    "kw",
    [
        dict(switch_ports=8, gpus_per_node=1, nics_per_node=1),
        dict(switch_ports=8, gpus_per_node=2, nics_per_node=2),
        dict(switch_ports=8, gpus_per_node=1, nics_per_node=1, groups=5),
        dict(switch_ports=12, gpus_per_node=1, nics_per_node=1, groups=6),
        dict(switch_ports=8, gpus_per_node=1, nics_per_node=1, arrangement="palmtree"),
    ],
)
def test_dragonfly_bounds_bracket_the_exact_rate(kw):
    G = build("dragonfly", **kw)
    exact = alltoall_bandwidth(G)
    assert exact.exact
    lo, hi = _bounds(G)
    assert 0 < lo <= exact.pair_rate_Bps * (1 + 1e-7)
    assert hi >= exact.pair_rate_Bps * (1 - 1e-7)


def test_dragonfly_split_loads_by_hand():
    # a = 4, p = h = 2, 9 groups of 8 endpoints: one global link per group pair, so the split
    # is forced. A global link carries 8 x 8 lambda. The local link u -> v carries u's 2
    # endpoints to the 2 groups v's global links reach (2 x 2 x 8), v's 2 endpoints from the 2
    # groups u's links land from (the same), and u -> v itself (2 x 2): 68 lambda.
    G = build("dragonfly", switch_ports=8, gpus_per_node=1, nics_per_node=1)
    hs, _ = contract_servers(G)
    net = router_net(G, hs)
    grp = dragonfly_groups(G, net)
    E = np.bincount(grp, weights=net.mass)
    glob = np.flatnonzero(grp[net.tail] != grp[net.head])
    loc = np.flatnonzero(grp[net.tail] == grp[net.head])
    load = split_loads(net, grp, E, glob, loc, np.ones(len(glob)))
    assert np.allclose(load[glob], 64)
    assert np.allclose(load[loc], 68)
    r = group_split_rate(G, net, 2_000_000)
    assert r.pair_rate_Bps == pytest.approx(NIC / 68, rel=1e-9)


def test_tiered_fabrics_are_left_to_their_own_bounds():
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    hs, terminal = contract_servers(G)
    assert direct_bounds(G, hs, terminal, max_variables=2_000_000) is None


def test_dragonfly_certified_exact_through_the_bounds_path():
    # The split routing carries NIC / 68 on the router links (above), more than the NIC cut
    # NIC / 71 (72 endpoints): the routing meets the cut, so the bounds path is exact.
    G = build("dragonfly", switch_ports=8, gpus_per_node=1, nics_per_node=1)
    assert terminal_count(contract_servers(G)[0]) == 72
    b = alltoall_bandwidth(G, max_variables=10)
    assert b.exact and b.method == "certified" and b.bounds is None
    assert b.pair_rate_Bps == pytest.approx(NIC / 71, rel=1e-9)
    assert alltoall_bandwidth(G).pair_rate_Bps == pytest.approx(NIC / 71, rel=1e-7)


@pytest.mark.slow
def test_slim_fly_q27_and_dragonfly_64_groups():
    # Issue 13's scale: the Dragonfly of 64 groups and the Slim Fly of q=27 (8-GPU servers
    # straddling routers) are certified within 2% (docs/bandwidth.md).
    df = alltoall_bandwidth(build("dragonfly", groups=64))
    assert df.bounds is not None and df.bounds.gap <= 0.02
    sf = alltoall_bandwidth(build("slimfly", q=27))
    assert sf.bounds is not None and sf.bounds.gap <= 0.02
    assert sf.bounds.lower_Bps * (sf.gpus - 1) / 1e9 > 40


def test_split_lp_is_skipped_over_the_memory_limit(monkeypatch):
    # 9 groups of 4 routers: 72 global arcs, each in 1 + 2 x 3 rows: 504 entries x 200 B.
    from topo.flow.solve.memory import MEMORY_LIMIT_ENV

    G = build("dragonfly", switch_ports=8, gpus_per_node=1, nics_per_node=1)
    net = router_net(G, contract_servers(G)[0])
    assert group_split_rate(G, net, 2_000_000) is not None
    monkeypatch.setenv(MEMORY_LIMIT_ENV, str(504 * 200 / 1e9 * 0.99))
    assert group_split_rate(G, net, 2_000_000) is None
    monkeypatch.setenv(MEMORY_LIMIT_ENV, str(504 * 200 / 1e9 * 1.01))
    assert group_split_rate(G, net, 2_000_000) is not None


def test_resilience_intact_value_of_a_bounds_only_fabric_is_a_range():
    # The intact busbw of a fabric known only within bounds is None with its range, as every
    # trial statistic; a fabric certified exact keeps its value.
    from topo.flow.failures.resilience import intact_busbw

    b = alltoall_bandwidth(build("slimfly", q=5), max_variables=10)
    assert b.bounds is not None and b.bounds.gap > 1e-6
    value, rng = intact_busbw(b)
    lo = b.bounds.lower_Bps * (b.gpus - 1) / 1e9
    hi = b.bounds.upper_Bps * (b.gpus - 1) / 1e9
    assert value is None and rng == pytest.approx([lo, hi])
    c = alltoall_bandwidth(build("dragonfly", switch_ports=8, gpus_per_node=1, nics_per_node=1))
    value, rng = intact_busbw(c)
    assert value == pytest.approx(c.alltoall_busbw_Bps / 1e9) and rng == [value, value]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_damaged_dragonfly_bounds_bracket_the_exact_rate(seed):
    # Failed cables, local ones included: a pair of routers without its local link sends over
    # the group's two-hop paths; the bounds still bracket the exact LP, and stay tight.
    from topo.flow.failures.damage import fail

    G = build("dragonfly", switch_ports=12, gpus_per_node=1, nics_per_node=1, groups=6)
    local = [
        f"{u}--{v}"
        for u, v, d in G.edges(data=True)
        if d["kind"] == "fabric" and u.split("/")[0] == v.split("/")[0]
    ]
    G, _ = fail(G, named=local[seed::17][:2])
    exact = alltoall_bandwidth(G)
    assert exact.exact
    lo, hi = _bounds(G)
    assert 0 < lo <= exact.pair_rate_Bps * (1 + 1e-7)
    assert hi >= exact.pair_rate_Bps * (1 - 1e-7)
    assert lo >= 0.8 * exact.pair_rate_Bps


def test_a_router_lp_past_its_time_limit_gives_no_bound():
    # A covering LP (300 rows >= 1, 3,000 columns): solved without a limit (its solution meets
    # every row), abandoned (None, no bound) at a limit of 0.1 ms; --time-limit reaches it.
    from topo.flow.bounds.router_lp import solve_lp

    rng = np.random.default_rng(0)
    m, n = 300, 3000
    rows = np.repeat(np.arange(m), 50)
    cols = rng.integers(0, n, m * 50)
    vals = rng.random(m * 50)
    args = ((rows, cols, vals), n, np.ones(m), np.full(m, np.inf), rng.random(n))
    out = solve_lp(*args)
    assert out is not None
    x = out[0]
    lhs = np.bincount(rows, weights=vals * x[cols], minlength=m)
    assert (lhs >= 1 - 1e-7).all() and (x >= -1e-9).all()
    assert solve_lp(*args, time_limit_s=1e-4) is None


def test_bounds_give_the_router_lps_the_time_limit(monkeypatch):
    import topo.flow.bounds.direct as direct_mod

    seen = []

    def spy(G, hs, terminal, max_variables, time_limit_s=None):
        seen.append(time_limit_s)
        return None

    monkeypatch.setattr(direct_mod, "direct_bounds", spy)
    G = build("slimfly", q=5)
    alltoall_bandwidth(G, max_variables=10, time_limit_s=7.0)
    assert seen == [7.0]
