"""All-to-all bandwidth: closed forms, hand-worked bottlenecks, and every reduction held
against the general LP (one commodity per GPU, no reduction)."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest

from topo.builders import build
from topo.errors import InfeasibleError, SolverError, TopoError
from topo.fabric import vertex_label
from topo.flow import alltoall_bandwidth

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
