"""Alibaba HPN pods (topo.builders.hpn): the paper's counts, and the rate a pod keeps when it
loses a ToR, against a hand-worked cut."""

from __future__ import annotations

import pytest

from topo.builders import build, max_gpus
from topo.errors import SpecError
from topo.fabric import nic_ports, summarize
from topo.flow import alltoall_bandwidth, fail


def test_hpn_pod_counts_match_the_paper_and_simai():
    # Qian et al., SIGCOMM 2024: 1,024 GPUs a segment (128 hosts of 8 GPUs), 15 segments a
    # pod: 15,360 GPUs. aliyun/SimAI gen_Topo_Template.py, AlibabaHPN --dp: 240 ASW (ToRs) of
    # 128 NIC ports, 120 PSW (aggregation), each PSW on the 120 ASW of its plane.
    # By hand: ToRs = 15 segments x 8 rails x 2 planes = 240; aggregation = 2 planes x 60
    # uplinks = 120; ToR-aggregation cables 240 x 60 = 14,400; NIC-port cables 1,920 hosts
    # x 8 NICs x 2 ports = 30,720.
    G = build("hpn", switch_ports=128)
    s = summarize(G)
    assert (s.gpus, s.nodes, s.planes) == (15360, 1920, 2)
    assert s.switches_by_tier == {"leaf": 240, "spine": 120}
    assert (s.links, s.endpoint_links) == (14400, 30720)
    assert max_gpus("hpn", switch_ports=128) == 15360
    # every ToR: 128 ports of 200G down, 60 of 400G up (1.067:1), every aggregation switch
    # 120 ToRs down (8 of its 128 ports left for the core: 15:1)
    tor = "seg14/rail7/tor1"
    assert sum(1 for w in G[tor] if G[tor][w]["kind"] == "endpoint") == 128
    assert {G[tor][w]["capacity"] for w in G[tor] if G[tor][w]["kind"] == "endpoint"} == {25e9}
    assert sum(1 for w in G[tor] if G[tor][w]["kind"] == "fabric") == 60
    assert len(G["p1/agg59"]) == 120
    assert G.graph["oversubscription"] == pytest.approx(1.0667, abs=1e-4)


def test_hpn_each_nic_port_on_its_own_tor_and_plane():
    G = build("hpn", switch_ports=32, gpus=64)
    assert nic_ports(G) == 2
    for p in (0, 1):
        (tor,) = G[f"node3/nic5/port{p}"].keys() - {"node3/gpu5"}
        assert tor == f"seg0/rail5/tor{p}"
        assert G.nodes[tor]["plane"] == p
        assert G[f"node3/nic5/port{p}"]["node3/gpu5"]["capacity"] == 32e9  # half of PCIe


def test_hpn_refuses_a_radix_not_a_multiple_of_32():
    with pytest.raises(SpecError, match="multiple of 32"):
        build("hpn", switch_ports=48)


def test_hpn_pod_ceiling_names_the_segments():
    with pytest.raises(SpecError, match="15 segments of 128 hosts"):
        build("hpn", switch_ports=128, gpus=15368)


def test_hpn_tor_lost_costs_half_a_nic_not_the_server():
    # 32-port switches (ToR: 32 hosts a segment, 15 uplinks), 2 GPUs and 2 NICs (2 x 200G
    # ports = 25 GB/s each) a host; 34 hosts: segment 0 holds 32, segment 1 holds 2; N = 68.
    # Intact, the cut around a host is its 4 ports: 2 (N - 2) lam <= 4 x 25 GB/s.
    # With ToR seg0/rail0/tor0 lost, every host of segment 0 keeps 3 ports: 2 (N - 2) lam
    # <= 75 GB/s; NVLink (200 GB/s) lets both GPUs use the 3 ports, and no ToR or uplink is
    # nearer its capacity.
    N = 68
    G = build("hpn", switch_ports=32, gpus=N, gpus_per_node=2, nics_per_node=2)
    intact = alltoall_bandwidth(G)
    assert intact.pair_rate_Bps == pytest.approx(100e9 / (2 * (N - 2)), rel=1e-6)
    H, _ = fail(G, named=["seg0/rail0/tor0"])
    lost = alltoall_bandwidth(H)
    assert lost.pair_rate_Bps == pytest.approx(75e9 / (2 * (N - 2)), rel=1e-6)
