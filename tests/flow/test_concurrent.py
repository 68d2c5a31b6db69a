"""concurrent_flow: one entry point for the uniform all-to-all and explicit matrices, held
against closed forms and against its thin callers."""

from __future__ import annotations

import pytest

from topo.builders import build
from topo.errors import TopoError
from topo.flow import alltoall_bandwidth, concurrent_flow, server_demand_time
from topo.traffic import Demand, uniform_alltoall

NIC = 50e9  # B/s: a 400 Gb/s NIC


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
    assert r.pair_rate_Bps == pytest.approx(NIC / 30, rel=1e-6)
    assert r.theta == pytest.approx(NIC / 30 / 2e6, rel=1e-6)
    assert r.time_s == pytest.approx(2e6 * 30 / NIC, rel=1e-6)
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
