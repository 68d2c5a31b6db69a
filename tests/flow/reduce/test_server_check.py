"""The server check: NVLink and PCIe inside a server, and the fallback to the general LP
when they cannot carry the contracted solution."""

from __future__ import annotations

import pytest

from topo.builders import build
from topo.flow import alltoall_bandwidth

NIC = 50.0  # GB/s: a 400 Gb/s NIC, 400e9 / 8 / 1e9


def test_800g_nics_on_pcie_gen5_are_bound_by_pcie():
    # An 800 Gb/s NIC (100 GB/s) behind a 64 GB/s PCIe Gen5 x16 link: every byte a GPU sends
    # to another server crosses some GPU-NIC PCIe link, so lambda (N - G) <= 64 GB/s per GPU
    # (one PCIe link per GPU): lambda = 64 / (N - G), and the PCIe links are the bottleneck.
    G = build("mpft", switch_ports=8, gpus_per_node=2, nics_per_node=2, link_gbps=800)
    r = alltoall_bandwidth(G)
    assert r.pair_rate_Bps / 1e9 == pytest.approx(64 / (64 - 2), rel=1e-6)
    assert r.nic_utilization == pytest.approx(0.64, rel=1e-6)
    assert set(r.bottleneck_tiers) <= {"gpu->nic", "nic->gpu"}
    assert r.method == "reduced"
    general = alltoall_bandwidth(G, method="general")
    assert general.pair_rate_Bps / 1e9 == pytest.approx(64 / 62, rel=1e-6)


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
    assert r.pair_rate_Bps / 1e9 == pytest.approx(1 / 32, rel=1e-6)
    assert set(r.bottleneck_tiers) <= {"gpu->nvswitch", "nvswitch->gpu"}
