"""The door of topo.flow (alltoall_bandwidth, concurrent_flow, server_demand_time): closed forms,
hand-worked bottlenecks, every reduction held against the general LP (one commodity per GPU, no
reduction), explicit matrices, and the checks at the door (capacities, solver limits)."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from topo.builders import build
from topo.errors import FormatError, InfeasibleError, SolverError, SpecError, TopoError
from topo.fabric import capacity_fault, check_schema, require_fabric, vertex_label, vouched
from topo.flow import (
    alltoall_bandwidth,
    concurrent_flow,
    damaged_bandwidth,
    max_concurrent_flow,
    resilience,
    routed_alltoall,
    server_demand_time,
)
from topo.flow.solve.lp import Commodity
from topo.traffic import Demand, uniform_alltoall

NIC = 50.0  # GB/s: a 400 Gb/s NIC, 400e9 / 8 / 1e9
REAL = Path(__file__).resolve().parents[3] / "shared" / "data" / "real" / "ibnetdiscover"


def real(name: str) -> Path:
    path = REAL / name
    if not path.exists():
        pytest.skip(f"real data not present: {path}")
    return path


# ----------------------------------------------------------------- closed forms, non-blocking


@pytest.mark.parametrize(
    ("family", "kw"),
    [
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2)),
        ("ft2", dict(switch_ports=16)),
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=20)),
        ("ft2", dict(switch_ports=64, gpus=1000)),
        ("mrft", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2)),
        ("mrft", dict(switch_ports=16, gpus_per_node=4, nics_per_node=4, gpus=96)),
        ("mpft", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2)),
        ("mpft", dict(switch_ports=16)),
        ("mpft", dict(switch_ports=64, gpus=1024)),
        ("ft3", dict(switch_ports=4, gpus_per_node=2, nics_per_node=2)),
        ("ft3", dict(switch_ports=8, gpus_per_node=4, nics_per_node=4)),
    ],
)
def test_non_blocking_fabrics_are_bound_by_the_nic(family, kw):
    # Non-blocking: every GPU's inter-node traffic lambda (N - G) fills its own NIC, so
    # lambda = c / (N - G), busbw = lambda (N - 1) (nccl-tests' alltoall factor (n-1)/n).
    G = build(family, **kw)
    n = sum(1 for _, k in G.nodes(data="kind") if k == "gpu")
    g = kw.get("gpus_per_node", 8)
    r = alltoall_bandwidth(G)
    lam = NIC / (n - g)
    assert r.gpus == n
    assert r.pair_rate_Bps / 1e9 == pytest.approx(lam, rel=1e-6)
    assert r.alltoall_busbw_Bps / 1e9 == pytest.approx(lam * (n - 1), rel=1e-6)
    assert r.internode_per_nic_Bps / 1e9 == pytest.approx(NIC, rel=1e-6)
    assert r.nic_utilization == pytest.approx(1.0, rel=1e-6)
    assert r.intranode_per_gpu_Bps / 1e9 == pytest.approx(lam * (g - 1), rel=1e-6)
    # Every server's cut is met (its NIC cables carry exactly its traffic), so every NIC cable
    # is full both ways in every optimal flow. A leaf that holds a single server has the same
    # cut with its uplinks (as many as the server's NICs there) in place of the cables, so
    # those are full too; nothing else is.
    assert set(r.bottleneck_tiers) == {"nic->leaf", "leaf->nic"} | _single_server_uplinks(G)
    assert r.exact


def _single_server_uplinks(G) -> set[str]:
    """The tiers of the uplinks of every leaf with exactly one server cabled to it and uplinks
    of the same capacity as that server's cables to it, both ways."""
    tiers = set()
    for v, d in G.nodes(data=True):
        if d["kind"] != "leaf":
            continue
        down = [u for u in G.adj[v] if G.nodes[u]["kind"] == "nic"]
        up = [u for u in G.adj[v] if G.nodes[u]["kind"] != "nic"]
        same = sum(G.edges[v, u]["capacity"] for u in down) == sum(
            G.edges[v, u]["capacity"] for u in up
        )
        if len({G.nodes[u]["node"] for u in down}) == 1 and same:
            for u in up:
                t = vertex_label(G, u)
                tiers |= {f"leaf->{t}", f"{t}->leaf"}
    return tiers


def test_shared_nics_halve_the_rate():
    # 4 GPUs share 2 NICs: a server's inter-node traffic 4 lambda (N - 4) fills 2 NICs.
    G = build("mpft", switch_ports=8, gpus_per_node=4, nics_per_node=2, gpus=32)
    r = alltoall_bandwidth(G)
    assert r.pair_rate_Bps / 1e9 == pytest.approx(2 * NIC / (4 * (32 - 4)), rel=1e-6)


# ----------------------------------------------------------------- hand-worked bottlenecks


@pytest.mark.parametrize(("k", "ratio"), [(8, 3), (16, 3), (16, 7)])
def test_oversubscribed_ft2_is_bound_by_the_leaf_uplinks(k, ratio):
    # A leaf has u = k/(r+1) uplinks and d = k - u endpoints; the k leaves are full, so
    # N = k d. Traffic leaving a leaf, d lambda (N - d), must fit in u c:
    # lambda = u c / (d (N - d)) (below the NIC bound c / (N - G)).
    G = build("ft2", switch_ports=k, gpus_per_node=2, nics_per_node=2, oversubscription=ratio)
    u = k // (ratio + 1)
    d = k - u
    n = k * d
    r = alltoall_bandwidth(G)
    assert r.gpus == n
    assert r.pair_rate_Bps / 1e9 == pytest.approx(u * NIC / (d * (n - d)), rel=1e-6)
    assert set(r.bottleneck_tiers) <= {"leaf->spine", "spine->leaf"}


def test_damaged_ft2_is_bound_by_the_damaged_leaf():
    # ft2 of 8-port switches: 8 leaves of 4 endpoints, 4 spines, one cable per leaf-spine
    # pair, 2 GPUs per server. Cut one uplink of leaf0: its 4 GPUs send 4 lambda (32 - 4)
    # through 3 uplinks of 50 GB/s: lambda = 150 / 112 GB/s (the NIC bound is 50 / 30).
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    assert G.edges["leaf0", "spine0"]["links"] == 1
    G.remove_edge("leaf0", "spine0")
    auto = alltoall_bandwidth(G)
    general = alltoall_bandwidth(G, method="general")
    assert auto.pair_rate_Bps / 1e9 == pytest.approx(150 / 112, rel=1e-6)
    assert general.pair_rate_Bps / 1e9 == pytest.approx(150 / 112, rel=1e-6)
    # The damage leaves leaves 1-7 alike: two class orbits (leaf0's class, the rest).
    assert any("into 2 orbits" in s for s in auto.reductions), auto.reductions
    tiers = set(auto.bottleneck_tiers)
    assert tiers <= {"leaf->spine", "spine->leaf"}
    assert all("leaf0" in (b.source, b.target) for b in auto.bottleneck_links)


# ----------------------------------------------------------------- reductions vs general LP


# ----------------------------------------------------------------- real fabrics


def test_gb200_superpod_is_bound_by_its_weakest_leaf():
    # Independent bound: a leaf with h hosts and uplink capacity U carries h (N - h) lambda
    # out, so lambda <= min over leaves of U / (h (N - h)). On this dump the LP attains it:
    # IBLEAF-02-03 has 18 hosts and 15 x 50 GB/s uplinks: 750 / (18 x 524).
    from topo.formats import read_ibnetdiscover

    G = read_ibnetdiscover(real("topograph_dgx_gb200_ndr_superpod.out"))
    n = sum(1 for _, k in G.nodes(data="kind") if k == "nic")
    bounds = []
    for v, d in G.nodes(data=True):
        if d["kind"] == "switch" and d["tier"] == 1:
            h = sum(1 for u in G.adj[v] if G.nodes[u]["kind"] == "nic")
            up = sum(e["capacity"] for u, e in G.adj[v].items() if G.nodes[u]["kind"] == "switch")
            bounds.append(up / 1e9 / (h * (n - h)))
    r = alltoall_bandwidth(G)
    assert n == 542 and r.gpus == 542 and r.terminal == "endpoint"
    assert min(bounds) == pytest.approx(750 / (18 * 524))
    assert r.pair_rate_Bps / 1e9 == pytest.approx(min(bounds), rel=1e-6)
    assert r.alltoall_busbw_Bps / 1e9 == pytest.approx(750 / (18 * 524) * 541, rel=1e-6)
    # The rate meets that leaf's cut, so its uplinks are full both ways in every optimal flow
    # (the LP's dual prices one direction): both directions of every uplink, nothing else.
    leaf = "MF0;A09-P1-IBLEAF-02-03:MQM9701/U1"
    uplinks = [u for u in G.adj[leaf] if G.nodes[u]["kind"] == "switch"]
    assert set(r.bottleneck_tiers) == {"spine->leaf", "leaf->spine"}
    assert {(b.source, b.target) for b in r.bottleneck_links} == {
        p for u in uplinks for p in ((u, leaf), (leaf, u))
    }


@pytest.mark.parametrize(
    "name",
    [
        "psmn_x5_qdr.topofile",
        "loginoff_fdr10_sx6036.topo",
        "ibtopotool_3.topo",
        "ibsim_net.2sw2path4hca",
    ],
)
def test_imported_fabrics_match_the_general_lp(name):
    from topo.formats import read_ibnetdiscover

    G = read_ibnetdiscover(real(name))
    auto = alltoall_bandwidth(G)
    general = alltoall_bandwidth(G, method="general")
    assert auto.pair_rate_Bps / 1e9 == pytest.approx(general.pair_rate_Bps / 1e9, rel=1e-6)


# ----------------------------------------------------------------- full scale


def test_full_mpft_16384_gpus():
    # DeepSeek-V3's fabric: lambda = 50 / (16384 - 8) GB/s, every NIC cable full both ways
    # (every server cut is met).
    r = alltoall_bandwidth(build("mpft"))
    assert r.gpus == 16384 and r.nodes == 2048
    assert r.pair_rate_Bps / 1e9 == pytest.approx(50 / 16376, rel=1e-9)
    assert r.alltoall_busbw_Bps / 1e9 == pytest.approx(50 * 16383 / 16376, rel=1e-9)
    assert r.bottleneck_tiers == {"leaf->nic": 16384, "nic->leaf": 16384}  # both ways
    assert any("plane decomposition: 8" in s for s in r.reductions)


@pytest.mark.slow
def test_full_ft3_65536_gpus():
    r = alltoall_bandwidth(build("ft3"))
    assert r.gpus == 65536
    assert r.pair_rate_Bps / 1e9 == pytest.approx(50 / (65536 - 8), rel=1e-6)


# ----------------------------------------------------------------- errors


def test_errors():
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    with pytest.raises(TopoError, match="auto or general"):
        alltoall_bandwidth(G, method="fast")
    lone = nx.Graph(G.subgraph(["node0/gpu0", "node0/nvswitch"]))
    with pytest.raises(InfeasibleError, match="no NIC cabled"):
        alltoall_bandwidth(lone)
    one = nx.Graph(G.subgraph(["node0/gpu0", "node0/nic0", "leaf0"]))
    with pytest.raises(InfeasibleError, match="at least two GPUs; the fabric has 1"):
        alltoall_bandwidth(one)
    split = G.copy()
    split.remove_edges_from([("leaf0", f"spine{s}") for s in range(4)])
    with pytest.raises(InfeasibleError, match="disconnected"):
        alltoall_bandwidth(split)
    with pytest.raises(SolverError, match="variables"):
        alltoall_bandwidth(G, method="general", max_variables=100)


def test_servers_on_disjoint_planes_are_refused():
    # Two-plane MPFT of 2-GPU servers: node0 keeps only its plane-0 NIC, node5 only its
    # plane-1 NIC. A host forwards nothing, so they exchange nothing (rate 0), though the
    # graph is connected through the intact servers' NVLink.
    G = build("mpft", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    G.remove_edges_from([("node0/nic1", "p1/leaf0"), ("node5/nic0", "p0/leaf1")])
    assert nx.is_connected(G)
    expected = (
        r"^servers 0 \(node0/gpu0\) and 5 \(node5/gpu0\) share no plane: the first is cabled "
        r"only to the plane of p0/leaf0, the second only to the plane of p1/leaf0, .*rate is 0$"
    )
    for method in ("auto", "general"):
        with pytest.raises(InfeasibleError, match=expected):
            alltoall_bandwidth(G, method=method)


# -------------------------------------------------------------------------------------------------
# concurrent_flow: one entry point for the uniform all-to-all and explicit matrices, held against
# closed forms and against its thin callers.


NIC_Bps = 50e9  # B/s: a 400 Gb/s NIC


def small():
    # 8-port FT2, 2 GPUs and 2 NICs per server: 32 GPUs, 16 servers, non-blocking.
    return build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)


def test_uniform_demand_is_the_alltoall_scaled_by_its_bytes() -> None:
    # NIC-bound: every GPU's inter-server traffic lambda (32 - 2) fills its NIC: lambda =
    # 50e9 / 30 B/s. With 2e6 bytes per pair, theta = lambda / 2e6 per second and the
    # all-to-all takes 2e6 / lambda s.
    G = small()
    r = concurrent_flow(G, uniform_alltoall(G, 2e6))
    assert r.uniform and r.demand == "alltoall" and r.exact
    assert r.pair_rate_Bps == pytest.approx(NIC_Bps / 30, rel=1e-6)
    assert r.theta == pytest.approx(NIC_Bps / 30 / 2e6, rel=1e-6)
    assert r.time_s == pytest.approx(2e6 * 30 / NIC_Bps, rel=1e-6)
    assert r.total_bytes == 2e6 * 32 * 31
    assert r.pair_rate_Bps == pytest.approx(alltoall_bandwidth(G).pair_rate_Bps, rel=1e-9)


def test_explicit_server_demand_matches_the_mapping_form() -> None:
    # 100 GB from server 0 to server 1 over its two 400G NICs: 100e9 / (2 x 50e9) = 1 s.
    G = small()
    d = Demand(level="server", terminals=tuple(range(16)), entries={(0, 1): 100e9})
    r = concurrent_flow(G, d)
    assert not r.uniform and r.time_s == pytest.approx(1.0, rel=1e-6)
    assert server_demand_time(G, d).time_s == pytest.approx(1.0, rel=1e-6)
    assert server_demand_time(G, {(0, 1): 100e9}).time_s == pytest.approx(1.0, rel=1e-6)


def test_gpu_demand_is_summed_per_pair_of_servers() -> None:
    # GPU-level: 50 GB from each GPU of server 0 to a GPU of server 1 (100 GB across the
    # fabric, as above: 1 s), plus bytes inside server 0, which are not fabric traffic.
    G = small()
    gpus = tuple(sorted(v for v, k in G.nodes(data="kind") if k == "gpu"))
    entries = {
        ("node0/gpu0", "node1/gpu0"): 50e9,
        ("node0/gpu1", "node1/gpu1"): 50e9,
        ("node0/gpu0", "node0/gpu1"): 7e9,
    }
    r = concurrent_flow(G, Demand(level="gpu", terminals=gpus, entries=entries))
    assert r.time_s == pytest.approx(1.0, rel=1e-6)


def test_a_uniform_demand_over_other_terminals_is_refused() -> None:
    G = small()
    with pytest.raises(TopoError, match="all 32 of the fabric's GPUs"):
        concurrent_flow(
            G, Demand(level="gpu", terminals=("node0/gpu0", "node1/gpu0"), bytes_per_pair=1.0)
        )
    with pytest.raises(TopoError, match="auto or general"):
        concurrent_flow(G, uniform_alltoall(G), method="fast")


# -------------------------------------------------------------------------------------------------
# server_demand_time: arbitrary server-to-server matrices, held against closed forms and the all-to-
# all LP.


NIC_Bps = 50e9  # a 400 Gb/s NIC, B/s


def test_one_pair_crosses_both_nics() -> None:
    # Two servers of 2 GPUs and 2 NICs under one 8-port leaf: 100 GB leave over 2 x 50 GB/s.
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    rep = server_demand_time(G, {(0, 1): 100e9})
    assert rep.time_s == pytest.approx(1.0, rel=1e-9)
    assert set(rep.bottleneck_tiers) <= {"nic->leaf", "leaf->nic"}


@pytest.mark.parametrize(
    "family,kw",
    [
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2)),
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, oversubscription=3)),
        ("mpft", dict(switch_ports=8, gpus_per_node=4, nics_per_node=4)),
        ("mrft", dict(switch_ports=8, gpus_per_node=4, nics_per_node=4)),
    ],
)
def test_uniform_server_matrix_matches_alltoall(family: str, kw: dict) -> None:
    # The all-to-all at pair rate lambda is the server matrix D[a, b] = g^2 (per second): the
    # demand solver's theta on D = g^2 bytes must be the all-to-all LP's lambda.
    G = build(family, **kw)
    lam = alltoall_bandwidth(G).pair_rate_Bps
    servers = sorted({d["node"] for _, d in G.nodes(data=True) if d["kind"] == "gpu"})
    g = kw["gpus_per_node"]
    D = {(a, b): float(g * g) for a, b in itertools.permutations(servers, 2)}
    rep = server_demand_time(G, D)
    assert rep.theta == pytest.approx(lam, rel=1e-6)
    if family == "mpft":
        assert rep.planes == 4


def test_shift_across_an_oversubscribed_leaf() -> None:
    # FT2 of 8-port switches, 3:1: a leaf has 6 down ports (3 servers of 2 NICs) and 2 up
    # ports. Servers 0, 1, 2 (leaf 0) each send 1 GB to servers 3, 4, 5 (leaf 1): the NICs
    # alone would take 1e9 / 100e9 = 10 ms, but leaf 0's 2 uplinks carry 3 GB: 30 ms.
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2, oversubscription=3)
    leaf = {
        d["node"]: s
        for v, d in G.nodes(data=True)
        if d["kind"] == "nic"
        for s in G.adj[v]
        if G.nodes[s]["kind"] == "leaf"
    }
    assert leaf[0] == leaf[1] == leaf[2] != leaf[3] == leaf[4] == leaf[5]
    rep = server_demand_time(G, {(0, 3): 1e9, (1, 4): 1e9, (2, 5): 1e9})
    assert rep.time_s == pytest.approx(3e9 / (2 * NIC_Bps), rel=1e-6)
    assert set(rep.bottleneck_tiers) & {"leaf->spine", "spine->leaf"}


def test_bad_demands_are_refused() -> None:
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    with pytest.raises(TopoError, match="not a server"):
        server_demand_time(G, {(0, 99): 1.0})
    with pytest.raises(TopoError, match="to itself"):
        server_demand_time(G, {(0, 0): 1.0})
    with pytest.raises(TopoError, match="finite"):
        server_demand_time(G, {(0, 1): -1.0})
    with pytest.raises(TopoError, match="empty"):
        server_demand_time(G, {(0, 1): 0.0})


def test_cut_server_is_infeasible() -> None:
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    for nic in [v for v, d in G.nodes(data=True) if d["kind"] == "nic" and d["node"] == 1]:
        for s in [s for s in G.adj[nic] if G.nodes[s]["kind"] == "leaf"]:
            G.remove_edge(nic, s)
    with pytest.raises(InfeasibleError, match="no NIC"):
        server_demand_time(G, {(0, 1): 1.0})


def test_too_large_is_refused_before_building_the_lp() -> None:
    # 8-port FT2 (16 servers of 2 NICs, 2 servers per leaf, 8 leaves x 4 spines): 64 leaf-spine
    # arcs, plus one out- and one in-arc per server in the demand (its 2 NICs reach one leaf):
    # 4 x 2 = 8. A commodity may use every arc but the other 3 servers' out-arcs: 69; two
    # senders: 138 flow variables (the LP adds theta: 139).
    from topo.errors import LPTooLarge

    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    demand = {(0, 2): 1e9, (1, 3): 1e9}
    with pytest.raises(LPTooLarge, match="138 variables"):
        server_demand_time(G, demand, max_variables=137)
    assert server_demand_time(G, demand, max_variables=138).lp.variables == 139


# -------------------------------------------------------------------------------------------------
# The solvers' entry points check a graph built in memory as the file loader checks a file: every
# edge a finite capacity within topo.fabric.CAPACITY_RANGE_Bps, and the solver limits in range
# (issue 41). Before, a NaN or infinite capacity made the edge unconstrained, -1 or 0 gave a number,
# a missing one was a KeyError, and max_variables=-1 or time_limit_s=nan ran.


EDGE = ("leaf0", "spine0")  # a switch-to-switch cable of the 8-port fat tree


@pytest.fixture(scope="module")
def ft2():
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    assert G.has_edge(*EDGE)
    return G


DOORS = {
    "alltoall_bandwidth": lambda G: alltoall_bandwidth(G),
    "concurrent_flow": lambda G: concurrent_flow(G, uniform_alltoall(G)),
    "routed_alltoall": lambda G: routed_alltoall(G, "ecmp", seed=0),
    "damaged_bandwidth": lambda G: damaged_bandwidth(G, links=1),
    "resilience": lambda G: resilience(G, trials=2, links=1),
    "server_demand_time": lambda G: server_demand_time(G, {(0, 1): 1e9}),
}

RULE = "'capacity' must be a number of B/s from 1000 to 1e+15"


@pytest.mark.parametrize("door", sorted(DOORS))
@pytest.mark.parametrize(
    "capacity, got",
    [
        (math.nan, "got nan"),
        (math.inf, "got inf"),
        (-1, "got -1"),
        (0.0, "got 0.0"),
        (999.0, "got 999.0"),  # below 1 kB/s
        ("5e10", "got '5e10'"),
    ],
)
def test_a_bad_capacity_is_refused_naming_the_edge(ft2, door, capacity, got) -> None:
    G = ft2.copy()
    G.edges[EDGE]["capacity"] = capacity
    with pytest.raises(SpecError) as info:
        DOORS[door](G)
    assert str(info.value) == f"G: edge 'leaf0'-'spine0': {RULE}, {got}"
    assert info.value.param == "G"


@pytest.mark.parametrize("door", sorted(DOORS))
def test_a_missing_capacity_is_refused_not_a_key_error(ft2, door) -> None:
    G = ft2.copy()
    del G.edges[EDGE]["capacity"]
    with pytest.raises(SpecError, match=r"^G: edge 'leaf0'-'spine0' has no 'capacity' \(a num"):
        DOORS[door](G)


def test_vouched_spares_that_graph_alone_and_inside_the_block_alone(ft2) -> None:
    # The command line vouches for the fabric it has just read (the loader checked every
    # capacity); a copy of it, or the same graph after the block, is checked as before.
    G = ft2.copy()
    G.edges[EDGE]["capacity"] = math.nan
    H = G.copy()
    with vouched(G):
        require_fabric(G)
        with pytest.raises(SpecError, match="got nan"):
            require_fabric(H)
        with pytest.raises(TopoError, match="must be a fabric"):
            require_fabric(nx.DiGraph(G))
    with pytest.raises(SpecError, match="got nan"):
        require_fabric(G)


def test_the_first_bad_edge_in_edge_order_is_named(ft2) -> None:
    G = ft2.copy()
    edges = list(G.edges)
    first, later = edges[5], edges[-3]  # positions chosen in G.edges order
    G.edges[later]["capacity"] = math.nan
    G.edges[first]["capacity"] = -5
    assert capacity_fault(G) == f"edge {first[0]!r}-{first[1]!r}: {RULE}, got -5"


def test_numpy_and_huge_numbers_are_judged_as_numbers(ft2) -> None:
    G = ft2.copy()
    for _, _, d in G.edges(data=True):
        d["capacity"] = np.float64(d["capacity"])  # (not float: the per-edge path)
    assert capacity_fault(G) is None
    G.edges[EDGE]["capacity"] = 10**400  # beyond any float
    assert capacity_fault(G).endswith("got 1e+400 (an integer of 401 digits)")


def test_a_file_is_held_to_the_same_rule(ft2) -> None:
    G = ft2.copy()
    G.edges[EDGE]["capacity"] = math.inf
    with pytest.raises(FormatError) as info:
        check_schema(G, "f.json")
    assert str(info.value) == f"f.json: edge 'leaf0'-'spine0': {RULE}, got inf"


def test_an_intact_fabric_passes(ft2) -> None:
    # NIC-bound: a server's 2 x 50 GB/s shared by its 2 GPUs' traffic to the 30 GPUs of the
    # other 15 servers, so lambda = 2 * 50 / (2 * 30) GB/s and busbw = lambda * (32 - 1)
    r = alltoall_bandwidth(ft2)
    assert r.alltoall_busbw_Bps == pytest.approx(2 * 50e9 / (2 * 30) * 31, rel=1e-9)


@pytest.mark.parametrize(
    "kw, param",
    [
        (dict(max_variables=-1), "max_variables"),
        (dict(max_variables=0), "max_variables"),
        (dict(max_variables=2.5), "max_variables"),
        (dict(max_variables=True), "max_variables"),
        (dict(time_limit_s=math.nan), "time_limit_s"),
        (dict(time_limit_s=0), "time_limit_s"),
        (dict(time_limit_s=-1.0), "time_limit_s"),
        (dict(time_limit_s="60"), "time_limit_s"),
    ],
)
def test_solver_limits_out_of_range_are_refused(ft2, kw, param) -> None:
    for call in (
        lambda: alltoall_bandwidth(ft2, **kw),
        lambda: concurrent_flow(ft2, uniform_alltoall(ft2), **kw),
        lambda: damaged_bandwidth(ft2, links=1, **kw),
        lambda: resilience(ft2, trials=2, links=1, **kw),
        lambda: max_concurrent_flow([("s", "t")], [1.0], [Commodity("s", {"t": 1.0})], **kw),
    ):
        with pytest.raises(SpecError, match=rf"^{param} must be .*, got ") as info:
            call()
        assert info.value.param == param
    if "time_limit_s" not in kw:
        with pytest.raises(SpecError, match="^max_variables must be a whole number >= 1"):
            server_demand_time(ft2, {(0, 1): 1e9}, **kw)


def test_no_time_limit_is_none_or_inf(ft2) -> None:
    a = alltoall_bandwidth(ft2, time_limit_s=None).alltoall_busbw_Bps
    assert alltoall_bandwidth(ft2, time_limit_s=math.inf).alltoall_busbw_Bps == a
