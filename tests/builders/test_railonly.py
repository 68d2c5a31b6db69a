"""Rail-only fabrics (topo.builders.railonly): counts by hand, and the all-to-all through
NVLink forwarding against its hand-worked bound."""

from __future__ import annotations

import pytest

from topo.builders import build, max_gpus
from topo.fabric import SWITCH_KINDS, summarize
from topo.flow import alltoall_bandwidth


def test_rail_only_full_size_counts_are_mpft_table3_without_a_shared_spine():
    # 64-port switches, 8 rails: each rail a two-layer Clos of 64 leaves (32 down ports) and
    # 32 spines, 64 x 32 = 2,048 domains of 8 GPUs: 16,384 GPUs; 8 x 96 = 768 switches,
    # 8 x 64 x 32 = 16,384 leaf-spine cables (Zhao et al., ISCA 2025, Table 3, MPFT row).
    s = summarize(build("rail-only"))
    assert (s.gpus, s.switches, s.links, s.planes) == (16384, 768, 16384, 8)
    assert s.switches_by_tier == {"leaf": 512, "spine": 256}
    assert max_gpus("rail-only") == 16384


def test_rail_only_rails_of_one_switch_have_no_spine_and_no_switch_links():
    # 64 domains of 8 GPUs fit a 64-port switch per rail: 8 switches, no switch-switch cable.
    G = build("rail-only", gpus=512)
    s = summarize(G)
    assert (s.switches, s.links, s.endpoint_links) == (8, 0, 512)
    for r in range(8):
        assert {G.nodes[w]["rail"] for w in G[f"node5/nic{r}"] if w.startswith("rail")} == {r}


def test_rail_only_two_layer_rail_counts():
    # 128 domains on 64-port rails: ceil(128/32) = 4 leaves; spines: smallest divisor S of 32
    # with 64 S >= 4 x 32, S = 2, 16 cables a pair: 6 switches and 128 cables per rail.
    s = summarize(build("rail-only", gpus=1024))
    assert s.switches_by_tier == {"leaf": 32, "spine": 16}
    assert s.links == 8 * 4 * 32


def test_rail_only_no_switch_joins_two_rails():
    G = build("rail-only", gpus=1024)
    for u, v in G.edges():
        if G.nodes[u]["kind"] in SWITCH_KINDS and G.nodes[v]["kind"] in SWITCH_KINDS:
            assert G.nodes[u]["plane"] == G.nodes[v]["plane"]


def test_rail_only_nvl72_domain_is_the_scale_out_unit():
    # A GB200 NVL72 rack of 18 trays of 4 GPUs, one NIC per GPU: 72 rails; 16 racks on
    # 64-port rail switches: 72 switches of 16 endpoints each.
    G = build("rail-only", gpus=16 * 72, gpus_per_node=72, nics_per_node=72, gpus_per_host=4)
    s = summarize(G)
    assert (s.nodes, s.switches, s.planes) == (16, 72, 72)
    assert G.nodes["node3/gpu9"]["host"] == "node3-2"


@pytest.mark.parametrize(
    ("nvlink_GBps", "binds"),
    [(200.0, "nic"), (20.0, "nvlink")],
)
def test_rail_only_alltoall_is_the_nvlink_forwarding_bound(nvlink_GBps, binds):
    # K = 4 GPUs a domain, 4 rails, S = 4 domains (N = 16 GPUs), one 8-port switch per rail,
    # NIC B = 400 Gb/s = 50 GB/s, PCIe 64 GB/s. A cross-rail byte must cross NVLink once
    # (no switch joins two rails; servers do not forward for others), an intra-domain byte
    # too. Per GPU and direction, NVLink carries (K-1) lam intra + (K-1)(N-K)/K lam forwarded
    # = (K-1) N lam / K <= V; per domain the NICs carry K (N-K) lam <= K B. So
    # lam = min(B / (N-K), K V / ((K-1) N)).
    K, N, B, V = 4, 16, 50e9, nvlink_GBps * 1e9
    nic_bound, nvl_bound = B / (N - K), K * V / ((K - 1) * N)
    lam = min(nic_bound, nvl_bound)
    assert (nic_bound < nvl_bound) == (binds == "nic")
    G = build(
        "rail-only",
        switch_ports=8,
        gpus=N,
        gpus_per_node=K,
        nics_per_node=K,
        nvlink_GBps=nvlink_GBps,
    )
    r = alltoall_bandwidth(G)
    assert r.pair_rate_Bps == pytest.approx(lam, rel=1e-6)
    assert r.alltoall_busbw_Bps == pytest.approx(lam * (N - 1), rel=1e-6)


@pytest.mark.parametrize("domain", [144, 576])
def test_rail_only_nvl144_and_nvl576_domains(domain):
    # NVL144 / NVL576: one NVLink domain of that many GPUs, one NIC per GPU, 4 GPUs a host.
    # 4 domains: each of the `domain` rails is one switch of 4 endpoints; 4 x domain / 4 hosts.
    G = build(
        "rail-only",
        gpus=4 * domain,
        gpus_per_node=domain,
        nics_per_node=domain,
        gpus_per_host=4,
    )
    s = summarize(G)
    assert (s.nodes, s.switches, s.links, s.endpoint_links) == (4, domain, 0, 4 * domain)
    assert len({d["host"] for _, d in G.nodes(data=True) if d["kind"] == "gpu"}) == domain


def test_rail_only_alltoall_between_nvl72_domains_is_nic_bound():
    # 2 NVL72 domains, one 400G NIC a GPU (NVLink 900 GB/s a GPU does not bind): the cut
    # around a domain is its 72 NICs: 72 (N - 72) lam = 72 x 50 GB/s, N = 144.
    G = build(
        "rail-only",
        gpus=144,
        gpus_per_node=72,
        nics_per_node=72,
        gpus_per_host=4,
        nvlink_GBps=900,
    )
    assert alltoall_bandwidth(G).pair_rate_Bps == pytest.approx(50e9 / 72, rel=1e-6)
