"""All-to-all bandwidth: closed forms, hand-worked bottlenecks, and every reduction held
against the general LP (one commodity per GPU, no reduction)."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from topo.builders import build
from topo.errors import InfeasibleError, SolverError, TopoError
from topo.fabric import natural_key, switch_components
from topo.flow import alltoall_bandwidth
from topo.flow.alltoall import (
    _class_orbits,
    _extend_to_classes,
    _general,
    _hosts,
    _is_automorphism,
    _plane_isomorphism,
    _reduce,
    _solve_symmetric,
    _symmetry,
)
from topo.flow.lp import Commodity, max_concurrent_flow

from ._validate import validate_flows

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
    assert r.pair_rate_GBps == pytest.approx(lam, rel=1e-6)
    assert r.alltoall_busbw_GBps == pytest.approx(lam * (n - 1), rel=1e-6)
    assert r.internode_per_nic_GBps == pytest.approx(NIC, rel=1e-6)
    assert r.nic_utilization == pytest.approx(1.0, rel=1e-6)
    assert r.intranode_per_gpu_GBps == pytest.approx(lam * (g - 1), rel=1e-6)
    assert set(r.bottleneck_tiers) <= {"nic->leaf", "leaf->nic"}
    assert r.exact


def test_shared_nics_halve_the_rate():
    # 4 GPUs share 2 NICs: a server's inter-node traffic 4 lambda (N - 4) fills 2 NICs.
    G = build("mpft", switch_ports=8, gpus_per_node=4, nics_per_node=2, gpus=32)
    r = alltoall_bandwidth(G)
    assert r.pair_rate_GBps == pytest.approx(2 * NIC / (4 * (32 - 4)), rel=1e-6)


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
    assert r.pair_rate_GBps == pytest.approx(u * NIC / (d * (n - d)), rel=1e-6)
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
    assert auto.pair_rate_GBps == pytest.approx(150 / 112, rel=1e-6)
    assert general.pair_rate_GBps == pytest.approx(150 / 112, rel=1e-6)
    # The damage leaves leaves 1-7 alike: two class orbits (leaf0's class, the rest).
    assert any("into 2 orbit(s)" in s for s in auto.reductions), auto.reductions
    tiers = set(auto.bottleneck_tiers)
    assert tiers <= {"leaf->spine", "spine->leaf"}
    assert all("leaf0" in (b.source, b.target) for b in auto.bottleneck_links)


def test_damaged_plane_shifts_traffic_to_the_other_plane():
    # MPFT, 8-port switches, 2 GPUs and 2 NICs per server: 2 planes of 8 leaves x 4 servers.
    # Cut one uplink of p0/leaf0. The 4 servers under leaf0 of both planes (8 GPUs) send
    # 8 lambda (64 - 8) to other servers, out through leaf0 of both planes: 3 + 4 uplinks of
    # 50 GB/s (PXN moves traffic between planes inside the servers):
    # lambda = 350 / 448 GB/s, below the NIC bound 50 / 62.
    G = build("mpft", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    G.remove_edge("p0/leaf0", "p0/spine0")
    hosts, _ = _hosts(G)
    assert _plane_isomorphism(G, switch_components(G), hosts) is None
    auto = alltoall_bandwidth(G)
    assert not any("plane decomposition" in s for s in auto.reductions)
    assert auto.pair_rate_GBps == pytest.approx(350 / 448, rel=1e-6)
    general = alltoall_bandwidth(G, method="general")
    assert general.pair_rate_GBps == pytest.approx(350 / 448, rel=1e-6)


def test_800g_nics_on_pcie_gen5_are_bound_by_pcie():
    # An 800 Gb/s NIC (100 GB/s) behind a 64 GB/s PCIe Gen5 x16 link: every byte a GPU sends
    # to another server crosses some GPU-NIC PCIe link, so lambda (N - G) <= 64 GB/s per GPU
    # (one PCIe link per GPU): lambda = 64 / (N - G), and the PCIe links are the bottleneck.
    G = build("mpft", switch_ports=8, gpus_per_node=2, nics_per_node=2, link_gbps=800)
    r = alltoall_bandwidth(G)
    assert r.pair_rate_GBps == pytest.approx(64 / (64 - 2), rel=1e-6)
    assert r.nic_utilization == pytest.approx(0.64, rel=1e-6)
    assert set(r.bottleneck_tiers) <= {"gpu->nic", "nic->gpu"}
    assert r.method == "reduced"
    general = alltoall_bandwidth(G, method="general")
    assert general.pair_rate_GBps == pytest.approx(64 / 62, rel=1e-6)


def test_one_server():
    # 8 GPUs in one server: each sends 7 lambda. In an MPFT every NIC is alone on its plane,
    # so all of it crosses the GPU's 200 GB/s NVLink: busbw = 7 lambda = 200 GB/s. In an FT2
    # the 8 NICs share a leaf, so a GPU can also loop traffic through its NIC and the leaf,
    # min(PCIe 64, cable 50) = 50 GB/s more: busbw = 250 GB/s.
    assert alltoall_bandwidth(build("mpft", gpus=8)).alltoall_busbw_GBps == pytest.approx(200)
    assert alltoall_bandwidth(build("ft2", gpus=8)).alltoall_busbw_GBps == pytest.approx(250)


def test_starved_nvlink_fails_the_server_check_and_falls_back():
    # MPFT, 2 planes, 32 servers of 2 GPUs, NVLink 1 GB/s per GPU per direction. A byte
    # between GPUs on different planes (31 of each GPU's 62 remote peers, and its 1 local
    # peer) must cross NVLink once up and once down, in its source or destination server
    # (servers do not forward). NVLink arc capacity: 64 GPUs x 2 directions x 1 GB/s = 128.
    # So 2 (64 x 31 + 64 x 1) lambda <= 128: lambda = 1/32 GB/s (the NIC bound is 50/62).
    G = build("mpft", switch_ports=8, gpus_per_node=2, nics_per_node=2, nvlink_GBps=1)
    r = alltoall_bandwidth(G)
    assert r.method == "general"
    assert any("NOT exact" in s for s in r.reductions)
    assert r.pair_rate_GBps == pytest.approx(1 / 32, rel=1e-6)
    assert set(r.bottleneck_tiers) <= {"gpu->nvswitch", "nvswitch->gpu"}


# ----------------------------------------------------------------- reductions vs general LP


@pytest.mark.parametrize(
    ("family", "kw"),
    [
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2)),
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, oversubscription=3)),
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=22)),
        ("mrft", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=24)),
        ("mpft", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=40)),
        ("mpft", dict(switch_ports=8, gpus_per_node=4, nics_per_node=2, gpus=32)),
        ("ft3", dict(switch_ports=4, gpus_per_node=2, nics_per_node=2)),
        ("ft2", dict(switch_ports=8, gpus_per_node=2, nics_per_node=2, pcie_GBps=10)),
    ],
)
def test_reductions_match_the_general_lp(family, kw):
    G = build(family, **kw)
    auto = alltoall_bandwidth(G)
    general = alltoall_bandwidth(G, method="general")
    assert auto.pair_rate_GBps == pytest.approx(general.pair_rate_GBps, rel=1e-6)
    assert auto.gpus == general.gpus


def test_general_lp_flows_are_valid_and_never_transit_a_server():
    G = build("mpft", switch_ports=4, gpus_per_node=2, nics_per_node=2)
    terms, arcs, cap, sol = _general(G, "gpu", 10**7, keep_flows=True)
    assert len(terms) == 16
    coms = [Commodity(t, {t2: 1.0 for t2 in terms if t2 != t}) for t in terms]
    validate_flows(arcs, cap, coms, sol)
    kind = dict(G.nodes(data="kind"))
    for t, flows in zip(terms, sol.commodity_flow, strict=True):
        server = G.nodes[t]["node"]
        for a, x in flows.items():
            u, v = arcs[a]
            if x > 1e-9 and kind[u] == "nic" and kind[v] in ("leaf", "spine"):
                assert G.nodes[u]["node"] == server, "flow leaves a server it does not start in"


def _damaged_ft2():
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    G.remove_edge("leaf0", "spine0")
    return G


@pytest.mark.parametrize(
    ("make", "orbits"),
    [
        (
            lambda: build(
                "ft2", switch_ports=16, gpus_per_node=2, nics_per_node=2, oversubscription=3
            ),
            1,
        ),
        (lambda: build("ft3", switch_ports=4, gpus_per_node=2, nics_per_node=2), 1),
        (lambda: build("mrft", switch_ports=8, gpus_per_node=2, nics_per_node=2), 1),
        # partial sizes: the partly filled leaf (and pod) is its own orbit
        (lambda: build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=26), 2),
        (lambda: build("ft3", switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=90), 3),
        (lambda: build("mrft", switch_ports=8, gpus_per_node=2, nics_per_node=2, gpus=22), 2),
        (_damaged_ft2, 2),
    ],
)
def test_symmetric_lp_equals_the_full_reduced_lp(make, orbits):
    # The orbit LP (one commodity per class orbit) against the reduced LP with every class's
    # commodity and a capacity row per arc.
    G = make()
    hosts, _ = _hosts(G)
    red = _reduce(G, hosts)
    gens = _symmetry(G, red)
    assert gens is not None
    assert len(_class_orbits(red, gens)) == orbits
    sym = _solve_symmetric(red, gens, 10**7)
    full = max_concurrent_flow(
        red.arcs,
        red.capacity,
        red.commodities,
        commodity_arcs=[red.commodity_arcs(c) for c in range(len(red.classes))],
    )
    assert sym.theta == pytest.approx(full.theta, rel=1e-6)
    assert np.all(sym.arc_flow <= red.capacity * (1 + 1e-6))


def test_partial_ft3_keeps_its_symmetry():
    # 5,000 GPUs on 64-port switches: 625 servers, 156 full leaves of 32 NICs and one of 8,
    # in 5 pods. Non-blocking, so lambda = 50 / (5000 - 8); the orbits make it a small LP.
    r = alltoall_bandwidth(build("ft3", gpus=5000))
    assert r.pair_rate_GBps == pytest.approx(50 / 4992, rel=1e-6)
    assert r.lp_variables < 100_000


def test_symmetry_is_refused_when_a_capacity_differs():
    # leaf3's uplink to spine1 is doubled: a shift that moves leaf3 is no automorphism and is
    # refused by the arc-by-arc check; the symmetry found keeps leaf3 in place and still gives
    # the general LP's lambda.
    G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    G.edges["leaf3", "spine1"]["capacity"] *= 2
    hosts, _ = _hosts(G)
    red = _reduce(G, hosts)
    leaves = sorted((v for v, k in G.nodes(data="kind") if k == "leaf"), key=natural_key)
    naive = {s: leaves[(i + 1) % len(leaves)] for i, s in enumerate(leaves)}
    full = _extend_to_classes(red, naive)
    assert full is not None and not _is_automorphism(red, full)
    gens = _symmetry(G, red)
    assert gens is not None and all(g.get("leaf3", "leaf3") == "leaf3" for g in gens)
    r = alltoall_bandwidth(G)
    assert any("class symmetry" in line for line in r.reductions)
    assert r.pair_rate_GBps == pytest.approx(
        alltoall_bandwidth(G, method="general").pair_rate_GBps, rel=1e-6
    )


def test_planes_are_found_isomorphic_in_an_intact_mpft():
    G = build("mpft", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    hosts, _ = _hosts(G)
    maps = _plane_isomorphism(G, switch_components(G), hosts)
    assert maps is not None and len(maps) == 4
    assert maps[2]["p2/leaf3"] == "p0/leaf3"


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
    assert r.pair_rate_GBps == pytest.approx(min(bounds), rel=1e-6)
    assert r.alltoall_busbw_GBps == pytest.approx(750 / (18 * 524) * 541, rel=1e-6)
    assert set(r.bottleneck_tiers) == {"spine->leaf"}
    assert {b.target for b in r.bottleneck_links} == {"MF0;A09-P1-IBLEAF-02-03:MQM9701/U1"}


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
    assert auto.pair_rate_GBps == pytest.approx(general.pair_rate_GBps, rel=1e-6)


# ----------------------------------------------------------------- full scale


def test_full_mpft_16384_gpus():
    # DeepSeek-V3's fabric: lambda = 50 / (16384 - 8) GB/s, every NIC saturated.
    r = alltoall_bandwidth(build("mpft"))
    assert r.gpus == 16384 and r.nodes == 2048
    assert r.pair_rate_GBps == pytest.approx(50 / 16376, rel=1e-9)
    assert r.alltoall_busbw_GBps == pytest.approx(50 * 16383 / 16376, rel=1e-9)
    assert r.bottleneck_tiers == {"nic->leaf": 16384}
    assert any("plane decomposition: 8" in s for s in r.reductions)


@pytest.mark.slow
def test_full_ft3_65536_gpus():
    r = alltoall_bandwidth(build("ft3"))
    assert r.gpus == 65536
    assert r.pair_rate_GBps == pytest.approx(50 / (65536 - 8), rel=1e-6)


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
