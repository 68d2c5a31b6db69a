"""Phase times, layer, TPOT: the paper's worked example through the general path, hand-worked
bottlenecks, and DeepSeek-R1's config end to end on built MPFTs against an independent count."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from formats._real import real_file

from topo.builders import build
from topo.errors import TopoError
from topo.flow.door import server_demand_time
from topo.moe import (
    config_from_dict,
    copy_matrices,
    destinations,
    ep_layout,
    expert_probabilities,
    load_config,
    moe_report,
    route_tokens,
    time_phase,
)
from topo.moe.timing import network_time
from topo.traffic import Demand

NIC = 50e9  # B/s: one 400 Gb/s NIC
NVLINK = 200e9  # B/s per direction: the builders' default (H800)


# ------------------------------------------------------------------ the paper's worked example


def paper_configured(G, ep, routed_offsets):
    """The worked example's assumptions: 32 tokens, 8 routed + 1 shared experts, one copy per
    expert (naive) on another GPU, FP8 (1 B, no scales) dispatch + BF16 (2 B) combine, hidden
    7,000, 61 layers."""
    cfg = config_from_dict(dict(hidden_size=7000, n_routed_experts=ep, num_experts_per_tok=8,
                                n_shared_experts=1, num_hidden_layers=61))  # fmt: skip
    ranks = np.repeat(np.arange(ep), 32)
    routing = (ranks[:, None] + np.array(routed_offsets)[None, :]) % ep  # one expert per rank
    return moe_report(G, cfg, ep=ep, tokens_per_gpu=32, fp8_scales=False, routing=routing,
                      shared="remote", schemes=["naive"])  # fmt: skip


def test_general_path_reproduces_the_paper_example_on_400g():
    # 16 single-GPU servers on one 400G NIC each, non-blocking: every copy crosses the network.
    G = build("ft2", switch_ports=8, gpus=16, gpus_per_node=1, nics_per_node=1)
    # The routed experts sit on 8 other ranks; the shared copies spread over the other 15.
    r = paper_configured(G, 16, [1, 2, 3, 4, 5, 6, 7, 9])
    h = r.headline
    # Each GPU sends and receives 32 x 9 copies: 1 B x 7,000 dispatch, 2 B x 7,000 combine.
    assert h.dispatch.time_s == pytest.approx(32 * 9 * 7000 * 1 / NIC, rel=1e-9)
    assert h.combine.time_s == pytest.approx(32 * 9 * 7000 * 2 / NIC, rel=1e-9)
    step_us = (h.dispatch.time_s + h.combine.time_s) * 1e6
    assert f"{step_us:.2f}" == "120.96"
    assert f"{h.layer_s * 1e6:.2f}" == "241.92"
    assert f"{h.tpot_s * 1e3:.2f}" == "14.76"
    assert int(h.tokens_per_s) == 67
    assert h.dispatch.bottleneck == "NIC" and h.dispatch.nvlink_s == 0


def test_general_path_reproduces_the_paper_example_on_nvl72():
    # GB200 NVL72: one NVLink domain of 72 GPUs at 900 GB/s each; no network hop.
    G = build("ft2", switch_ports=4, gpus=72, gpus_per_node=72, nics_per_node=1,
              nvlink_GBps=900)  # fmt: skip
    r = paper_configured(G, 72, list(range(1, 9)))
    h = r.headline
    assert f"{(h.dispatch.time_s + h.combine.time_s) * 1e6:.2f}" == "6.72"
    assert f"{h.tpot_s * 1e3:.2f}" == "0.82"
    assert round(h.tokens_per_s, -2) == 1200
    assert h.dispatch.bottleneck == "NVLink" and h.dispatch.ib_s == 0


# ------------------------------------------------------------------ a hand-worked small case


def test_phase_time_hand_worked():
    # 2 servers x 2 GPUs x 2 NICs (100 GB/s per server); DeepEP copies of test_traffic: 2 network
    # copies each way between the servers, GPU 1 sends 2 NVLink copies to GPU 0.
    G = build("ft2", switch_ports=8, gpus=4, gpus_per_node=2, nics_per_node=2)
    lay = ep_layout(G, 4)
    src, dest = destinations(lay, np.array([[2, 3], [0, 3], [2, 0], [0, 1]]), 1)
    m = copy_matrices(src, dest, 2, 4, "deepep")
    b = 7392
    p = time_phase(G, lay, m, b, "dispatch")
    assert p.ib_s == pytest.approx(2 * b / (2 * NIC), rel=1e-9)
    assert p.nvlink_s == pytest.approx(2 * b / NVLINK, rel=1e-9)
    assert p.time_s == p.ib_s and p.bottleneck == "NIC"
    assert p.ib_bytes_sent == pytest.approx(4 * b / 4) and p.nvlink_bytes_sent == 3 * b / 4
    # At 30% of NIC capacity the network takes 2b / 30 GB/s > NVLink's 2b / 200 GB/s.
    q = time_phase(G, lay, m, b, "dispatch", ib_efficiency=0.3, nvlink_efficiency=0.1)
    assert q.ib_s == pytest.approx(2 * b / (0.3 * 2 * NIC)) and q.nvlink_s == pytest.approx(
        2 * b / (0.1 * NVLINK)
    )
    assert q.bottleneck == "NVLink"


# ------------------------------------------------------------------ DeepSeek-R1 end to end


def independent_deepep(experts, ep, g, tokens):
    """DeepEP-style byte counts token by token with dicts (no numpy matrices)."""
    ib, nvl = defaultdict(int), defaultdict(int)
    for t, row in enumerate(experts):
        s = t // tokens
        hop = 1 + (t % tokens) % (ep // g - 1)  # shared copy: 1 + t mod (N - 1) nodes on
        ranks = {int(e) * ep // 256 for e in row} | {(s + g * hop) % ep}
        for node in {d // g for d in ranks} - {s // g}:  # one network copy per remote node
            ib[(s, node * g + s % g)] += 1
        for d in ranks - {s}:  # one NVLink copy per rank, from the source or the forwarder
            fwd = s if d // g == s // g else (d // g) * g + s % g
            if d != fwd:
                nvl[(fwd, d)] += 1
    return ib, nvl


def hose_times(ib, nvl, g, nics, b, reverse=False):
    """Non-blocking fabric (closed forms): a server's bytes over its NICs, each GPU's bytes over
    its own NIC (one 400G NIC per GPU, PCIe 64 GB/s above it), NVLink per GPU."""
    srv_out, srv_in, nic_out, nic_in, gpu_out, gpu_in = (defaultdict(float) for _ in range(6))
    for (i, j), c in ib.items():
        i, j = (j, i) if reverse else (i, j)
        srv_out[i // g] += c * b
        srv_in[j // g] += c * b
        nic_out[i] += c * b
        nic_in[j] += c * b
    for (i, j), c in nvl.items():
        i, j = (j, i) if reverse else (i, j)
        gpu_out[i] += c * b
        gpu_in[j] += c * b
    t_srv = max(max(srv_out.values()), max(srv_in.values())) / (nics * NIC)
    t_nic = max(max(nic_out.values()), max(nic_in.values())) / NIC
    t_nvl = max(max(gpu_out.values()), max(gpu_in.values())) / NVLINK
    return max(t_srv, t_nic), t_nvl


def check_r1(G, ep, tokens):
    cfg = load_config(real_file("moe_configs", "deepseek-r1_hf_config.json"))
    r = moe_report(G, cfg, ep=ep, tokens_per_gpu=tokens, seed=11)
    g, nodes = 8, ep // 8
    assert (r.ep, r.nodes, r.node_limit, r.moe_layers) == (ep, nodes, 4, 58)
    assert [s.label for s in r.scenarios] == [
        "deepep, M=4", "deepep, unlimited", "naive, M=4", "naive, unlimited"]  # fmt: skip
    # The same gating, recounted and retimed independently.
    experts = route_tokens(ep * tokens, expert_probabilities(256), np.arange(256) * ep // 256 // g,
                           8, [4, 0], seed=11)  # fmt: skip
    for scen, m in ((r.scenarios[0], 4), (r.scenarios[1], 0)):
        rows = experts[m].experts
        node_counts = [len({int(e) * ep // 256 // g for e in row}) for row in rows]
        assert scen.nodes_per_token == pytest.approx(np.mean(node_counts))
        if m:
            assert max(node_counts) <= 4
        ib, nvl = independent_deepep(rows, ep, g, tokens)
        for phase, b, rev in (
            (scen.dispatch, 7168 + 4 * 56, False),
            (scen.combine, 2 * 7168, True),
        ):
            t_ib, t_nvl = hose_times(ib, nvl, g, 8, b, rev)
            assert phase.ib_s == pytest.approx(t_ib, rel=1e-6)
            assert phase.nvlink_s == pytest.approx(t_nvl, rel=1e-6)
            assert phase.time_s == pytest.approx(max(t_ib, t_nvl), rel=1e-6)
            assert phase.ib_bytes_sent == pytest.approx(b * sum(ib.values()) / ep)
        assert scen.layer_s == pytest.approx(2 * (scen.dispatch.time_s + scen.combine.time_s))
        assert scen.tpot_s == pytest.approx(58 * scen.layer_s)
        assert scen.tokens_per_s == pytest.approx(1 / scen.tpot_s)
    on, off = r.scenarios[0], r.scenarios[1]
    assert on.nodes_per_token < off.nodes_per_token
    assert on.ib_bytes_per_gpu < off.ib_bytes_per_gpu
    # Naive sends one network copy per expert: more bytes than DeepEP's one per node.
    assert r.scenarios[2].ib_bytes_per_gpu > on.ib_bytes_per_gpu
    d = r.to_dict()
    for key in ("dispatch_us", "combine_us", "layer_us", "tpot_ms", "tokens_per_s",
                "ib_bytes_per_gpu", "nodes_per_token"):  # fmt: skip
        assert isinstance(d[key], float)
    assert d["layer_us"] == pytest.approx(on.layer_s * 1e6)
    return r


def test_deepseek_r1_on_a_small_mpft():
    # EP64 over 8 servers of an MPFT of 16-port switches: one group of 32 experts per node.
    check_r1(build("mpft", switch_ports=16, gpus=64), 64, 32)


@pytest.mark.slow
def test_deepseek_r1_on_the_full_mpft():
    # DeepSeek-V3's 16,384-GPU MPFT; EP256 over 32 servers (one expert per GPU).
    r = check_r1(build("mpft", switch_ports=64), 256, 32)
    assert r.fabric == "mpft-16384"


# ------------------------------------------------------------------ options and refusals


def test_skew_loads_some_gpus_more():
    G = build("mpft", switch_ports=16, gpus=64)
    cfg = config_from_dict(dict(hidden_size=1024, n_routed_experts=64, num_experts_per_tok=4,
                                n_group=8, topk_group=2, num_hidden_layers=2))  # fmt: skip
    flat = moe_report(G, cfg, tokens_per_gpu=64, shared="local", schemes=["deepep"])
    hot = moe_report(G, cfg, tokens_per_gpu=64, shared="local", schemes=["deepep"], zipf=1.2)
    assert hot.routing == "zipf s=1.2"
    ratio = lambda p: p.ib_bytes_max / p.ib_bytes_sent  # noqa: E731
    assert ratio(hot.headline.combine) > ratio(flat.headline.combine)


def test_fp8_scales_count():
    G = build("mpft", switch_ports=16, gpus=64)
    r = moe_report(G, load_config(real_file("moe_configs", "deepseek-r1_hf_config.json")),
                   schemes=["deepep"], tokens_per_gpu=4)  # fmt: skip
    assert r.dispatch_bytes_per_copy == 7168 + 4 * 7168 // 128
    assert r.combine_bytes_per_copy == 2 * 7168


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        (dict(node_limit=1), r"^node_limit 1: 1 nodes hold at most 2 experts, fewer than the 4"),
        (dict(tokens_per_gpu=0), r"^tokens_per_gpu must be an integer >= 1"),
        (dict(ib_efficiency=1.5), r"^ib_efficiency must be in \(0, 1\]"),
        (dict(ep=3), r"^ep 3 does not span whole servers of 2 GPUs"),
        (dict(dispatch_dtype="int4"), r"dtype must be one of fp8, bf16, fp16, fp32"),
        (dict(shared="elsewhere"), r"shared experts must be one of remote, local"),
        (dict(routing=np.zeros((3, 4), dtype=int)), r"a fixed routing must have shape \(8, 4\)"),
    ],
)
def test_refusals(kw, match):
    # 4 servers x 2 GPUs, 8 experts (2 per server), 4 per token.
    G = build("ft2", switch_ports=8, gpus=8, gpus_per_node=2, nics_per_node=2)
    cfg = config_from_dict(dict(hidden_size=64, n_routed_experts=8, num_experts_per_tok=4,
                                n_shared_experts=1, n_group=4, topk_group=2,
                                num_hidden_layers=1))  # fmt: skip
    kw = {"tokens_per_gpu": 1, **kw}
    with pytest.raises(TopoError, match=match):
        moe_report(G, cfg, **kw)


# ------------------------------------------------------------------ the cut fabric


def test_network_time_cut_fabric_is_exact_or_falls_back():
    # Non-blocking: 4 of 32 servers exchange bytes; the cut fabric reaches the hose bound.
    G = build("ft2", switch_ports=8, gpus=32, gpus_per_node=1, nics_per_node=1)
    demand = {(0, 5): 3e9, (5, 9): 1e9, (9, 0): 2e9, (13, 0): 1e9}
    rep, how = network_time(G, Demand("server", tuple(range(32)), demand))
    assert how.startswith("reduced fabric") and how.endswith("exact")
    assert rep.time_s == pytest.approx(server_demand_time(G, demand).time_s, rel=1e-6)
    assert rep.time_s == pytest.approx(3e9 / NIC, rel=1e-6)  # server 0: 3 GB out over 50 GB/s
    # 3:1 oversubscribed leaves: leaf-to-spine links bind, above the hose bound -> whole fabric.
    H = build("ft2", switch_ports=8, gpus=48, gpus_per_node=1, nics_per_node=1,
              oversubscription=3)  # fmt: skip
    demand = {(a, b): 1e9 for a in range(6) for b in range(6, 12)}
    rep, how = network_time(H, Demand("server", tuple(range(12)), demand))
    assert how == "whole fabric"
    assert rep.time_s == pytest.approx(server_demand_time(H, demand).time_s, rel=1e-9)
    assert rep.time_s > 6e9 / NIC * (1 + 1e-3)


def test_own_nic_bound():
    # Four tokens of GPU 0 all go to node 1: DeepEP sends them through GPU 0's NIC to GPU 2's
    # NIC. Pooling the server's two NICs would take 4b / 100 GB/s; GPU 0's own NIC needs twice
    # that, 4b / 50 GB/s.
    G = build("ft2", switch_ports=8, gpus=4, gpus_per_node=2, nics_per_node=2)
    lay = ep_layout(G, 4)
    m = copy_matrices(np.zeros(4, dtype=int), np.array([[2], [2], [3], [3]]), 2, 4, "deepep")
    b = 1000
    p = time_phase(G, lay, m, b, "dispatch")
    assert p.ib_s == pytest.approx(4 * b / NIC, rel=1e-9)
    assert p.ib_bottleneck_tiers == {"own NIC": 1} and p.bottleneck == "NIC"
    assert "own-NIC bound binds" in p.ib_method
    assert p.nvlink_s == pytest.approx(2 * b / NVLINK)  # GPU 2 forwards two copies to GPU 3


def test_seed_reproduces_the_report():
    G = build("mpft", switch_ports=16, gpus=64)
    cfg = config_from_dict(dict(hidden_size=512, n_routed_experts=64, num_experts_per_tok=4,
                                n_group=8, topk_group=2, num_hidden_layers=2))  # fmt: skip
    a, b, c = (moe_report(G, cfg, tokens_per_gpu=8, seed=s).to_dict() for s in (5, 5, 6))
    assert a == b
    assert a["scenarios"] != c["scenarios"]


# ------------------------------------------------------------------ twin switches merged


def test_merge_twin_switches_by_hand():
    from topo.moe import merge_twin_switches

    # FT2 of 8-port switches: u = 4 uplinks per leaf, 4 spines (one cable to each leaf), all
    # alike: one spine of 4 cables (4 x 50 GB/s) to each of the 8 leaves; servers untouched.
    G = build("ft2", switch_ports=8)
    H = merge_twin_switches(G)
    spines = [v for v, k in H.nodes(data="kind") if k == "spine"]
    assert spines == ["spine0"]
    assert all(H.edges[f"leaf{j}", "spine0"]["links"] == 4 for j in range(8))
    assert H.edges["leaf0", "spine0"]["capacity"] == pytest.approx(4 * NIC)
    assert H.number_of_nodes() == G.number_of_nodes() - 3
    assert H.number_of_edges() == G.number_of_edges() - 3 * 8
    # FT3 of 8-port switches: 4 core groups of 4 cores, each core cabled once to spine i of
    # every pod: each group merges into one core of 4 cables to each of its 8 spines; the pod
    # spines differ (each reaches its own group and pod), and so do the leaves
    F = merge_twin_switches(build("ft3", switch_ports=8))
    kinds = [k for _, k in F.nodes(data="kind")]
    assert (kinds.count("core"), kinds.count("spine"), kinds.count("leaf")) == (4, 32, 32)
    assert {F.edges[u, v]["links"] for u, v in F.edges if "core" in u + v} == {4}


@pytest.mark.parametrize(
    ("family", "options"),
    [
        ("ft2", dict(switch_ports=8, gpus=64, gpus_per_node=2, nics_per_node=1,
                     oversubscription=3)),  # fmt: skip
        ("mrft", dict(switch_ports=8, gpus=64, gpus_per_node=4, nics_per_node=2)),
        ("ft3", dict(switch_ports=8, gpus=128, gpus_per_node=4, nics_per_node=4)),
    ],
)
def test_network_time_with_twins_merged_is_the_fabrics(family, options):
    # The same demand LP on the fabric and on its twins merged: the same time (the LP's
    # optimum, to its tolerance), on a skewed demand that is not at the hose bound everywhere.
    from topo.moe import merge_twin_switches

    G = build(family, **options)
    rng = np.random.default_rng(3)
    servers = sorted({d["node"] for _, d in G.nodes(data=True) if d["kind"] == "gpu"})
    entries = {
        (a, b): float(rng.integers(1, 100)) * 1e6
        for a in servers
        for b in servers
        if a != b and rng.random() < 0.5
    }
    whole = server_demand_time(G, entries).time_s
    merged = server_demand_time(merge_twin_switches(G), entries).time_s
    assert merged == pytest.approx(whole, rel=1e-6)
    demand = Demand(level="server", terminals=tuple(servers), entries=entries)
    fast, how = network_time(G, demand, smallest_lp=True)
    slow, _ = network_time(G, demand)
    assert fast.time_s == pytest.approx(slow.time_s, rel=1e-6) and "twin switches merged" in how


def test_network_time_on_shortest_paths_of_one_pod():
    # FT3 of 8-port switches, 4 NICs a server: a pod's 4 leaves hold 16 NICs, 4 servers. A
    # demand among the 4 servers of pod 0 only needs pod 0's leaves and spines: the
    # shortest-path fabric drops the cores and the other pods, and (pod 0's spines then
    # alike) merges the spines; at the hose bound (each server's 4 cables of 50 GB/s, the
    # pod non-blocking) the time is the busiest server's bytes over 200 GB/s.
    G = build("ft3", switch_ports=8, gpus=128, gpus_per_node=4, nics_per_node=4)
    entries = {(a, b): 1e9 * (1 + a + 2 * b) for a in range(4) for b in range(4) if a != b}
    demand = Demand(level="server", terminals=tuple(range(4)), entries=entries)
    fast, how = network_time(G, demand, smallest_lp=True)
    slow, _ = network_time(G, demand)
    busiest = max(
        max(sum(x for (a, _), x in entries.items() if a == s),
            sum(x for (_, b), x in entries.items() if b == s))
        for s in range(4)
    )  # fmt: skip
    assert fast.time_s == pytest.approx(busiest / (4 * NIC), rel=1e-6)
    assert slow.time_s == pytest.approx(fast.time_s, rel=1e-6)
    assert how.startswith("shortest-path fabric") and "twin switches merged" in how


@pytest.mark.parametrize(
    ("family", "options", "ep", "limit"),
    [
        ("ft2", dict(switch_ports=8, oversubscription=3, gpus=48), 32, 2),
        ("mrft", dict(switch_ports=8, gpus=64, gpus_per_node=4, nics_per_node=2), 64, 0),
        ("ft3", dict(switch_ports=8, gpus=64, gpus_per_node=4, nics_per_node=4), 64, 2),
        ("mpft", dict(switch_ports=8, gpus=64), 64, 4),
    ],
)
def test_smallest_lp_gives_the_reports_headline(family, options, ep, limit):
    # The codesign path (headline only, smallest LPs, each combine from its dispatch) against
    # the full report: the same TPOT and phase times, to the LP's tolerance.
    G = build(family, **options)
    cfg = load_config(real_file("moe_configs", "deepseek-r1_hf_config.json"))
    full = moe_report(G, cfg, ep=ep, node_limit=limit)
    lean = moe_report(
        G, cfg, ep=ep, node_limit=limit, schemes=("deepep",), compare_unlimited=False,
        smallest_lp=True,
    )  # fmt: skip
    assert len(lean.scenarios) == 1 and lean.headline.label == full.headline.label
    assert lean.headline.tpot_s == pytest.approx(full.headline.tpot_s, rel=1e-6)
    for phase in ("dispatch", "combine"):
        a, b = getattr(lean.headline, phase), getattr(full.headline, phase)
        assert (a.ib_s, a.nvlink_s) == pytest.approx((b.ib_s, b.nvlink_s), rel=1e-6)
        assert (a.ib_bytes_max, a.nvlink_bytes_max) == (b.ib_bytes_max, b.nvlink_bytes_max)
