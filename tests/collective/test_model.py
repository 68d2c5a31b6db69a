"""The cost model against hand-worked values: busbw factors, alpha-beta limits, switch points.

Expected numbers are worked here from the constants file's NCCL values (tuning.cc) and the
fabric's capacities, independently of topo.collective.model.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from topo.builders import build
from topo.collective import (
    busbw_factor,
    candidates,
    choose,
    collective_table,
    fabric_rates,
    fit_alpha_beta,
    load_constants,
)
from topo.errors import LPTooLarge, TopoError

NVLINK = 450e9  # H100: 18 NVLink 4 links x 25 GB/s per direction
NCCL_NVLINK = 18 * 20.6e9  # NCCL's SM90_NVLINK_BW per link (topo.h)


@pytest.fixture(scope="module")
def c(tmp_path_factory):
    """The constants with a server ceiling as a cluster file of ``--calibrate`` would set it
    (node_network = 0.825: a server drives 82.5% of its NICs' summed rate at once)."""
    f = tmp_path_factory.mktemp("c") / "cluster.toml"
    f.write_text("[efficiency]\nnode_network = 0.825\n")
    return load_constants(f)


@pytest.fixture(scope="module")
def c_net(tmp_path_factory):
    """The constants without a server ceiling (node_network = 1, the default): NCCL's rates."""
    f = tmp_path_factory.mktemp("c") / "c.toml"
    f.write_text("[efficiency]\nnode_network = 1.0\n")
    return load_constants(f)


@pytest.fixture(scope="module")
def h100():
    """Two H100-like servers (8 GPUs, 8 x 400G NICs) on a non-blocking 8-port fat tree."""
    return build("ft2", switch_ports=8, gpus=16, gpus_per_node=8, nics_per_node=8, nvlink_GBps=450)


@pytest.mark.parametrize(
    "op, n, factor",
    [
        ("all_reduce", 8, 2 * 7 / 8),
        ("all_reduce", 80, 2 * 79 / 80),
        ("all_gather", 80, 79 / 80),
        ("reduce_scatter", 4, 3 / 4),
        ("alltoall", 16, 15 / 16),
        ("broadcast", 8, 1.0),
        ("reduce", 8, 1.0),
        ("sendrecv", 8, 1.0),
    ],
)
def test_busbw_factors_are_nccl_tests(op, n, factor):
    assert busbw_factor(op, n) == pytest.approx(factor)


def test_unknown_op_is_refused():
    with pytest.raises(TopoError, match="^op must be one of"):
        busbw_factor("allreduce", 8)


def test_rows_follow_nccl_tests_size_convention(h100, c):
    # nccl-tests rounds all_gather / alltoall sizes to n chunks of whole, 16-byte aligned
    # elements: 32 MiB of doubles on 16 ranks -> 262144 per rank, as in the pairwise log
    # (33554432 bytes, count 262144); all_reduce keeps 32 MiB, count 4194304.
    ag = collective_table(h100, "alltoall", min_bytes=1 << 25, max_bytes=1 << 25, dtype="double")
    assert (ag.rows[0].size_bytes, ag.rows[0].count) == (33554432, 262144)
    ag80 = collective_table(
        build("ft2", switch_ports=64, gpus=80, gpus_per_node=8, nics_per_node=8),
        "all_gather",
        min_bytes=1 << 25,
        max_bytes=1 << 25,
        dtype="double",
    )
    # the ten-node log: size 33553920, count 52428 (52428.8 rounded down to even)
    assert (ag80.rows[0].size_bytes, ag80.rows[0].count) == (33553920, 52428)
    ar = collective_table(h100, "all_reduce", min_bytes=1 << 25, max_bytes=1 << 25, dtype="double")
    assert (ar.rows[0].size_bytes, ar.rows[0].count) == (33554432, 4194304)
    for op in ("all_reduce", "all_gather", "alltoall", "broadcast"):
        for r in collective_table(h100, op, min_bytes=8, max_bytes=1 << 30, step_factor=16).rows:
            assert r.busbw_GBps == pytest.approx(r.algbw_GBps * busbw_factor(op, 16))
            assert r.algbw_GBps == pytest.approx(r.size_bytes / r.time_us / 1e3)


def test_sweep_sizes_and_options(h100):
    rows = collective_table(h100, "all_reduce", min_bytes=8, max_bytes=1 << 20, step_factor=4).rows
    assert [r.size_bytes for r in rows] == [8 * 4**k for k in range(9)]
    with pytest.raises(TopoError, match="^step_factor must be >= 2"):
        collective_table(h100, "all_reduce", step_factor=1)
    with pytest.raises(TopoError, match="exceeds max_bytes"):
        collective_table(h100, "all_reduce", min_bytes=1024, max_bytes=8)


def test_single_node_ring_limits_and_switch_point(h100, c):
    """all_gather on one H100 server: tiny -> ring/LL latency, huge -> NVLink busbw, and the
    LL -> next switch where the hand-worked times cross."""
    r = fabric_rates(h100, gpus=8)
    n = 8
    bus = NCCL_NVLINK  # 450 GB/s x 20.6/25
    assert r.nvlink_Bps * c.nvlink_efficiency == pytest.approx(bus)
    # hand-worked candidates (tuning.cc): latency = base + (n-1) hw, algbw = busBw n/(n-1)
    hand = {
        ("ring", "LL"): (6.6 + 7 * 0.6, min(141e9, 0.5 * bus) * n / (n - 1)),
        ("ring", "LL128"): (14.0 + 7 * 1.9, min(0.92 * bus, 16 * 36.7e9) * n / (n - 1)),
        ("ring", "Simple"): (8.4 + 7 * 3.4, bus * n / (n - 1)),
        ("nvls", "Simple"): (25.0, bus * 0.85 * n / (n - 1)),
    }
    got = {(k.algorithm, k.protocol): k for k in candidates("all_gather", 1 << 20, r, c)}
    assert set(got) == set(hand)
    for key, (lat_us, bw) in hand.items():
        assert got[key].latency_s == pytest.approx(lat_us * 1e-6)
        assert got[key].algbw_Bps == pytest.approx(bw)

    def t(key, S):
        lat, bw = hand[key]
        return lat * 1e-6 + S / bw

    # tiny: latency of ring/LL (10.8 us); huge: busbw -> NVLink as NCCL gets it
    tiny = choose("all_gather", 8, r, c)
    assert (tiny.algorithm, tiny.protocol) == ("ring", "LL")
    assert tiny.time_s == pytest.approx(10.8e-6, rel=1e-3)
    huge = choose("all_gather", 1 << 40, r, c)
    busbw = (1 << 40) / huge.time_s * busbw_factor("all_gather", n)
    assert busbw == pytest.approx(bus, rel=1e-4)
    # switch points: where the lower envelope of the hand-worked lines changes
    sizes = [2.0**k for k in range(3, 36)]
    best = [min(hand, key=lambda k: t(k, S)) for S in sizes]
    for S, want in zip(sizes, best, strict=True):
        k = choose("all_gather", S, r, c)
        assert (k.algorithm, k.protocol) == want
    # the LL -> following switch, solved for exactly
    nxt = best[best.index(("ring", "LL")) + sum(1 for b in best if b == ("ring", "LL"))]
    (l1, b1), (l2, b2) = hand[("ring", "LL")], hand[nxt]
    s_star = (l2 - l1) * 1e-6 / (1 / b1 - 1 / b2)
    below, above = (
        choose("all_gather", s_star * 0.99, r, c),
        choose("all_gather", s_star * 1.01, r, c),
    )
    assert (below.algorithm, below.protocol) == ("ring", "LL")
    assert (above.algorithm, above.protocol) == nxt


def test_multi_node_ring_bandwidth_and_latency(h100, c):
    """16 ranks on 2 servers: the ring's bus rate is its 16 channels of one NVLink each
    (16 x 20.6 = 329.6 GB/s, under the server ceiling 0.825 x 8 x 50 = 330 GB/s and 8 x 48 =
    384 GB/s of NCCL's NIC rate), and its Simple latency is NCCL's base + (steps - inter steps)
    max(NVLink hop, 3 x net overhead) + inter steps x net hop."""
    r = fabric_rates(h100)
    assert (r.nodes, r.gpus) == (2, 16)
    got = {(k.algorithm, k.protocol): k for k in candidates("all_gather", 1 << 30, r, c)}
    simple = got[("ring", "Simple")]
    assert simple.algbw_Bps == pytest.approx(16 * 20.6e9 * 16 / 15)
    assert simple.bound == "16 channels"
    assert simple.latency_s == pytest.approx((8.4 + (15 - 1) * 3.4 + 1 * 14.0) * 1e-6)
    ar = {(k.algorithm, k.protocol): k for k in candidates("all_reduce", 1 << 30, r, c)}
    # all_reduce: 2(n-1) steps, 2(N-1) across servers, x1.4 ring plateau (tuning.cc)
    lat = (8.4 + (30 - 2) * 3.4 + 2 * 14.0) * 1.4
    assert ar[("ring", "Simple")].latency_s == pytest.approx(lat * 1e-6)
    # NVLS-tree across 2 servers: each sends its S to the other (330 GB/s ceiling) versus
    # NVLS inside (NVLink x 0.85 x G/(G+1)); the smaller binds.
    nt = ar[("nvls_tree", "Simple")]
    assert nt.algbw_Bps == pytest.approx(min(330e9, NCCL_NVLINK * 0.85 * 8 / 9))
    assert nt.latency_s == pytest.approx((25.0 + 2 * 1 * 20.9) * 1e-6)


def test_alltoall_is_bounded_by_the_per_gpu_share(c_net, c):
    """One GPU and one 400G NIC per server, 4 servers: every GPU sends 3/4 of its buffer
    across servers at NCCL's 48 GB/s per NIC, so busbw -> 48 GB/s x (n-1)/(n-G) = 48."""
    G = build("ft2", switch_ports=8, gpus=4, gpus_per_node=1, nics_per_node=1)
    r = fabric_rates(G)
    k = choose("alltoall", 1 << 40, r, c_net)
    busbw = (1 << 40) / k.time_s * busbw_factor("alltoall", 4)
    assert busbw == pytest.approx(48e9, rel=1e-4)
    # with a server ceiling of 0.825, a one-NIC server drives 0.825 x 50 GB/s
    k = choose("alltoall", 1 << 40, r, c)
    busbw = (1 << 40) / k.time_s * busbw_factor("alltoall", 4)
    assert busbw == pytest.approx(0.825 * 50e9, rel=1e-4)
    # 2 GPUs per server sharing it: the node sends (n-G)/n of 4 GPUs' data; per GPU 24 GB/s
    # of NIC: busbw = 24 x (n-1)/(n-G) = 24 x 7/6
    G2 = build("ft2", switch_ports=8, gpus=8, gpus_per_node=2, nics_per_node=1)
    r2 = fabric_rates(G2)
    k2 = choose("alltoall", 1 << 40, r2, c_net)
    busbw2 = (1 << 40) / k2.time_s * busbw_factor("alltoall", 8)
    assert busbw2 == pytest.approx(24e9 * 7 / 6, rel=1e-4)


def test_one_gpu_per_node_uses_pat_for_small_all_gather(c_net):
    c = c_net
    G = build("ft2", switch_ports=8, gpus=8, gpus_per_node=1, nics_per_node=1)
    r = fabric_rates(G)
    got = {(k.algorithm, k.protocol): k for k in candidates("all_gather", 1 << 20, r, c)}
    pat = got[("pat", "Simple")]
    # PAT latency (tuning.cc): 8 + log2(8) x 14 / 3.5 + 8 x 2.8; bandwidth 0.75 x 48 GB/s
    assert pat.latency_s == pytest.approx((8 + 3 * 14 / 3.5 + 8 * 2.8) * 1e-6)
    assert pat.algbw_Bps == pytest.approx(0.75 * 48e9)


def test_oversubscription_binds_the_alltoall_not_the_ring(c_net):
    """12 one-GPU servers with one 400G NIC on an 8-port FT2 at 3:1 (6 down, 2 up per leaf):
    servers 0-5 on leaf 0, 6-11 on leaf 1.

    Ring 0 -> 1 -> ... -> 11 -> 0 crosses between the leaves once each way: 50 GB/s per server
    (NIC-bound). All-to-all: each leaf sends 6 x 6 pair flows up 2 x 50 GB/s of uplinks:
    lambda = 100 / 36 GB/s per pair, under the NIC's 50 / 11; busbw = lambda (n - 1).
    Tree (double binary, each server sends 2 x its buffer at most): 25 GB/s of all-reduce."""
    G = build("ft2", switch_ports=8, oversubscription=3, gpus_per_node=1, nics_per_node=1, gpus=12)
    r = fabric_rates(G)
    assert 1 / r.ring.seconds_per_byte == pytest.approx(50e9)
    assert 1 / r.alltoall.seconds_per_byte == pytest.approx(100e9 / 36)
    assert r.alltoall.bottleneck and set(r.alltoall.bottleneck) <= {"spine->leaf", "leaf->spine"}
    assert 1 / r.tree.seconds_per_byte == pytest.approx(25e9)
    k = choose("alltoall", 1 << 40, r, c_net)
    busbw = (1 << 40) / k.time_s * busbw_factor("alltoall", 12)
    assert busbw == pytest.approx(0.96 * 100e9 / 36 * 11, rel=1e-4)
    assert k.bound.startswith("net ")


def test_fit_recovers_alpha_and_beta():
    alpha, beta, factor = 25e-6, 300e9, 1.75
    sizes = [2.0**k for k in range(20, 34)]
    times = [(alpha + factor * s / beta) * 1e6 for s in sizes]
    f = fit_alpha_beta(sizes, times, factor)
    assert f.alpha_us == pytest.approx(25.0, rel=1e-6)
    assert f.busbw_GBps == pytest.approx(300.0, rel=1e-9)
    assert f.residual < 1e-9
    with pytest.raises(TopoError, match="do not grow"):
        fit_alpha_beta([1e6, 2e6], [10.0, 5.0], 1.0)
    with pytest.raises(TopoError, match="at least two"):
        fit_alpha_beta([1e6], [10.0], 1.0)


def test_subcluster_selection_errors(h100):
    with pytest.raises(TopoError, match="multiple of gpus_per_node"):
        fabric_rates(h100, gpus=12, gpus_per_node=8)
    with pytest.raises(TopoError, match="needs 3 servers; the fabric has 2"):
        fabric_rates(h100, gpus=24, gpus_per_node=8)
    with pytest.raises(TopoError, match="exceeds the 8 GPUs"):
        fabric_rates(h100, gpus=16, gpus_per_node=16)
    with pytest.raises(TopoError, match="^gpus must be >= 2"):
        fabric_rates(h100, gpus=1)
    r = fabric_rates(h100, gpus=8, gpus_per_node=4)  # two servers, 4 GPUs and 4 NICs each
    assert (r.nodes, r.nics_per_node, r.ring is not None) == (2, 4, True)
    assert 1 / r.ring.seconds_per_byte == pytest.approx(4 * 50e9)
    assert not math.isinf(r.server_nic_Bps)


def test_constants_override(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text("[efficiency]\nnode_network = 1.0\n[latency.base]\nring = [1.0, 2.0, 3.0]\n")
    c = load_constants(f)
    assert c.node_network_efficiency == 1.0
    assert c.base_latency_us("ring", "Simple") == 3.0
    assert c.base_latency_us("tree", "Simple") == 8.4  # untouched default
    bad = tmp_path / "bad.toml"
    bad.write_text("[efficiency]\nnode_networks = 1.0\n")
    with pytest.raises(TopoError, match="unknown key 'efficiency.node_networks'"):
        load_constants(bad)
    bad.write_text("[efficiency]\nnic = 1.5\n")
    with pytest.raises(TopoError, match=r"efficiency.nic must be in \(0, 1\]"):
        load_constants(bad)
    bad.write_text("[latency.base]\nring = [1.0, 2.0]\n")
    with pytest.raises(TopoError, match="shaped like the default"):
        load_constants(bad)


def test_fewer_gpus_than_a_server_default_to_one_server(h100):
    r = fabric_rates(h100, gpus=4)
    assert (r.nodes, r.gpus_per_node, r.nvlink_Bps) == (1, 4, NVLINK)


def test_plot_data(h100, c):
    from topo.collective.report import _busbw_data

    rep = collective_table(h100, "all_gather", min_bytes=1 << 20, max_bytes=1 << 22, constants=c)
    ((name, x, y),) = _busbw_data(rep, [])
    assert name.startswith("all_gather: model") and x == [r.size_bytes for r in rep.rows]
    assert y == [r.busbw_GBps for r in rep.rows]


@pytest.mark.parametrize(
    "op",
    ["all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv"],
)
def test_alpha_beta_limits_every_op(h100, c, op):
    """Tiny messages cost the smallest latency of any candidate; huge ones run at the largest
    bandwidth of any candidate (the two ends of the alpha-beta lines)."""
    r = fabric_rates(h100)
    tiny = choose(op, 8, r, c)
    lat = min(k.latency_s for k in candidates(op, 8, r, c))
    assert tiny.time_s == pytest.approx(lat, rel=1e-3)
    S = float(1 << 46)
    huge = choose(op, S, r, c)
    bw = max(k.algbw_Bps for k in candidates(op, S, r, c))
    assert S / huge.time_s == pytest.approx(bw, rel=1e-3)


def test_a_failed_nic_cable_slows_the_ring(c):
    """Server 0 loses one of its 8 NIC cables: the ring's flow rate per server falls from
    8 x 50 to 7 x 50 GB/s, and the server ceiling to 0.825 x 350 = 288.75 GB/s."""
    G = build("ft2", switch_ports=8, gpus=16, gpus_per_node=8, nics_per_node=8, nvlink_GBps=450)
    nic = "node0/nic3"
    (leaf,) = [w for w in G.neighbors(nic) if G.edges[nic, w]["kind"] == "endpoint"]
    G.remove_edge(nic, leaf)
    r = fabric_rates(G)
    assert 1 / r.ring.seconds_per_byte == pytest.approx(350e9)
    assert r.server_nic_Bps == pytest.approx(350e9)
    k = {(x.algorithm, x.protocol): x for x in candidates("all_gather", 1 << 30, r, c)}
    assert k[("ring", "Simple")].algbw_Bps == pytest.approx(
        min(0.96 * 350e9, 0.825 * 350e9) * 16 / 15
    )


def test_two_server_all_gather_switch_points(h100, c):
    """16 ranks on 2 servers (Intel hosts): the ceiling's ring bus rate is min(8 x 48, 0.825 x
    400, 370.8 x 8/7, 16 channels x 20.6) = 329.6 GB/s; NCCL's tuner sees its ring graph's 8
    channels at 48 GB/s (384 GB/s, no per-channel copy limit; here under the server ceiling of
    330 GB/s) and multiplies its LL128 cap by
    those 8 channels (tuning.cc ``graphs[a]->nChannels``). Its protocol refinements and
    latencies, worked here, give three lines whose lower envelope the tuner must follow."""
    r = fabric_rates(h100)
    # the fixture's server ceiling (node_network 0.825) bounds both views
    n, bus, tuner_bus = 16, 16 * 20.6e9, min(8 * 48e9, 0.825 * 400e9)
    lat = {
        # base + (steps - inter) x max(hop_nvl, net overhead [x3 Simple]) + inter x hop_net
        "LL": 6.6 + 14 * max(0.6, 1.0) + 1 * 2.7,
        "LL128": 14.0 + 14 * max(1.9, 1.0) + 1 * 4.0,
        "Simple": 8.4 + 14 * max(3.4, 3.0) + 1 * 14.0,
    }

    def rates(b):
        return {
            "LL": min(39.0e9, 0.5 * b),
            "LL128": min(0.92 * b, 8 * 36.7e9),
            "Simple": b,
        }

    ceiling, tuner = rates(bus), rates(tuner_bus)
    got = {x.protocol: x for x in candidates("all_gather", 1 << 20, r, c)}
    assert set(got) == set(lat)  # 8 GPUs per server: no PAT; 2 servers: no NVLS
    for p in lat:
        assert got[p].latency_s == pytest.approx(lat[p] * 1e-6)
        assert got[p].algbw_Bps == pytest.approx(ceiling[p] * n / (n - 1))
        assert got[p].tuner_algbw_Bps == pytest.approx(tuner[p] * n / (n - 1))
    hand = {p: (lat[p], tuner[p]) for p in lat}

    def t(p, S):
        lat, b = hand[p]
        return lat * 1e-6 + S / (b * n / (n - 1))

    # crossings: LL -> LL128 and LL128 -> Simple, solved for exactly
    def cross(p, q):
        (l1, b1), (l2, b2) = hand[p], hand[q]
        return (l2 - l1) * 1e-6 / ((n - 1) / n * (1 / b1 - 1 / b2))

    s1, s2 = cross("LL", "LL128"), cross("LL128", "Simple")
    assert s1 < s2
    for S, want in (
        (s1 * 0.98, "LL"),
        (s1 * 1.02, "LL128"),
        (s2 * 0.98, "LL128"),
        (s2 * 1.02, "Simple"),
    ):
        assert choose("all_gather", S, r, c).protocol == want
        assert min(hand, key=lambda p: t(p, S)) == want


def test_refused_lps_fall_back_to_the_nic_hose_bound(monkeypatch, c, c_net):
    """4 servers of 2 GPUs and 2 x 400G NICs with every LP refused (as on a 16k-GPU fabric):
    each pattern keeps its demand, and the model bounds it by its busiest server over the NICs
    in use, non-blocking. Per unit: the ring sends 1 B per server; the double binary tree of 4
    ranks (tree 0: 1, 3 -> 2 -> 0; tree 1 mirrored: 2, 0 -> 1 -> 3) gives servers 1 and 2
    three tree neighbours in one tree and one in the other, 4 x 1/2 B; the all-to-all 2 x 2 B
    to each of 3 servers."""

    def refuse(*args, **kwargs):
        raise LPTooLarge("refused for the test")

    module = sys.modules["topo.collective.fabric_rates"]  # the package exports the function
    monkeypatch.setattr(module, "server_demand_time", refuse)
    monkeypatch.setattr(module, "alltoall_bandwidth", refuse)
    monkeypatch.setattr(module, "_certified", lambda *args: None)  # no routing meets it
    G = build("ft2", switch_ports=8, gpus=8, gpus_per_node=2, nics_per_node=2)
    r = fabric_rates(G)
    for p in (r.ring, r.tree, r.alltoall):
        assert p.method.startswith("LP refused") and p.seconds_per_byte == 0 and not p.bottleneck
    assert (r.ring.node_bytes, r.tree.node_bytes, r.alltoall.node_bytes) == (1.0, 2.0, 12.0)
    size = float(1 << 33)
    # NICs in use at NCCL's 0.96: 2 x 50 x 0.96 = 96 GB/s per server; all_gather ring of 8
    # ranks: algbw = bus x n / (n - 1). With a server ceiling of 0.825 (x 100 GB/s) that
    # binds instead.
    ring = {(k.algorithm, k.protocol): k for k in candidates("all_gather", size, r, c_net)}
    assert ring[("ring", "Simple")].bound == "net NICs (no LP)"
    assert ring[("ring", "Simple")].algbw_Bps == pytest.approx(96e9 * 8 / 7)
    ring = {(k.algorithm, k.protocol): k for k in candidates("all_gather", size, r, c)}
    assert ring[("ring", "Simple")].bound == "server ceiling"
    assert ring[("ring", "Simple")].algbw_Bps == pytest.approx(82.5e9 * 8 / 7)


def test_an_empty_table_is_refused(h100):
    # Issue 11: 1 to 2 bytes of doubles (8 B) is no element: the table was empty, exit 0.
    with pytest.raises(TopoError, match=r"no size from min_bytes 1 to max_bytes 2 holds one "
                       r"double \(8 B\) for all_reduce on 16 ranks"):  # fmt: skip
        collective_table(h100, "all_reduce", min_bytes=1, max_bytes=2, dtype="double")
    # all_gather splits a size into 16 chunks, rounded down to 16-byte multiples (nccl-tests'
    # AllGatherGetCollByteCount): 256 B of floats is 16 B (4 floats) per rank; 128 B is 8 B,
    # which rounds to none.
    assert len(collective_table(h100, "all_gather", min_bytes=256, max_bytes=256).rows) == 1
    with pytest.raises(TopoError, match=r"holds one float \(4 B\) for all_gather on 16 ranks"):
        collective_table(h100, "all_gather", min_bytes=128, max_bytes=128)


def test_fit_keeps_the_latency_non_negative_and_weighs_rows_by_their_time():
    # Times that grow a little faster than linearly: an unconstrained fit puts alpha below 0.
    # With alpha >= 0 the optimum here is alpha = 0 and, for the relative errors
    # r_i = (x_i b - t_i) / t_i, b = sum(x/t) / sum((x/t)^2) (hand: d/db sum r_i^2 = 0).
    sizes = [1e6, 1e9, 2e9]
    times = [10.0, 10_000.0, 20_400.0]
    f = fit_alpha_beta(sizes, times, 1.0)
    x, t = np.array(sizes), np.array(times) * 1e-6
    b = (x / t).sum() / ((x / t) ** 2).sum()
    assert f.alpha_us == 0.0
    assert f.busbw_GBps == pytest.approx(1 / b / 1e9, rel=1e-9)
    resid = (x * b - t) / t
    assert f.residual == pytest.approx(float(np.sqrt(np.mean(resid**2))), rel=1e-9)
    unconstrained = np.linalg.lstsq(np.column_stack([np.ones(3), x]), t, rcond=None)[0]
    assert unconstrained[0] < 0  # what the old fit printed as a latency


@pytest.mark.parametrize("arch, factor", [("ampere", 1.0), ("hopper", 0.85), ("blackwell", 0.85)])
def test_the_tree_patterns_085_is_the_tuners_not_the_ceilings(arch, factor):
    """NCCL's tuner takes busBw x .85 for the TREE pattern on Hopper and Blackwell
    (tuning.cc, maxTreePattern); the ceiling does not, as 8 x B200 trees run at nChannels x
    perChMaxTreeBw (tests/collective/test_training.py). Everything else being the same, the
    tuner's tree algbw is the ceiling's x .85 there, and equal on Ampere."""
    G = build("ft2", switch_ports=16, gpus=32, gpus_per_node=8, nics_per_node=8, nvlink_GBps=900)
    r = fabric_rates(G, gpus=32)
    c = load_constants().with_arch(arch)
    tree = [k for k in candidates("all_reduce", 16 << 30, r, c) if k.algorithm == "tree"]
    assert {k.protocol for k in tree} == {"LL", "LL128", "Simple"}
    for k in tree:
        assert k.tuner_algbw_Bps == pytest.approx(k.algbw_Bps * factor), k.protocol
