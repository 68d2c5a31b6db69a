"""Multi-plane Ethernet NICs (topo.builders.multiplane, ``planes_per_nic``): counts by hand,
the per-GPU all-to-all unchanged by the split, and the argument checks."""

from __future__ import annotations

import pytest

from topo.builders import build, max_gpus
from topo.builders.planes_used import drive_planes
from topo.errors import SpecError
from topo.fabric import nic_ports, summarize
from topo.flow import alltoall_bandwidth


def test_four_planes_split_the_nic_and_every_switch_port():
    # SN5600 of 64 x 800G, 4 planes: 256 ports of 200G a switch, 4 ports of 200G a NIC.
    # 1,024 GPUs, one NIC each: 1,024 endpoints a plane; leaves of 128 down ports: 8; spines:
    # smallest divisor S of 128 with 256 S >= 8 x 128: 4; per plane 12 switches, 8 x 128
    # leaf-spine cables.
    G = build("ft2", switch_ports=64, link_gbps=800, planes_per_nic=4, gpus=1024)
    s = summarize(G)
    assert (s.planes, s.switches, s.links, s.endpoints) == (4, 48, 4096, 4096)
    assert (G.graph["switch_ports"], G.graph["link_gbps"]) == (256, 200.0)
    assert nic_ports(G) == 4
    assert {d["capacity"] for _, _, d in G.edges(data=True) if d["kind"] == "endpoint"} == {25e9}


def test_flat_two_tier_ceiling_grows_with_the_planes():
    # a two-layer plane of k' ports holds k'^2/2 endpoints, one per NIC: k' = 64 P.
    ceilings = [
        max_gpus("ft2", switch_ports=64, link_gbps=800, planes_per_nic=p) for p in (1, 2, 4)
    ]
    assert ceilings == [64 * 64 // 2, 128 * 128 // 2, 256 * 256 // 2]


@pytest.mark.parametrize("planes", [1, 2, 4])
def test_per_gpu_alltoall_is_the_nic_rate_whatever_the_planes(planes):
    # 2 GPUs and 2 NICs of 800G a server, PCIe 128 GB/s (ConnectX-8, Gen6): the cut around a
    # server is its 2 x 100 GB/s of NIC ports however they are split; N = 16 GPUs:
    # 2 (N - 2) lam = 200 GB/s.
    G = build(
        "ft2",
        switch_ports=8,
        link_gbps=800,
        planes_per_nic=planes,
        gpus=16,
        gpus_per_node=2,
        nics_per_node=2,
        pcie_GBps=128,
    )
    assert alltoall_bandwidth(G).pair_rate_Bps == pytest.approx(200e9 / (2 * 14), rel=1e-6)


def test_one_plane_of_four_driven_is_a_quarter():
    G = build(
        "ft2",
        switch_ports=8,
        link_gbps=800,
        planes_per_nic=4,
        gpus=16,
        gpus_per_node=2,
        nics_per_node=2,
        pcie_GBps=128,
    )
    one = alltoall_bandwidth(drive_planes(G, 1)).pair_rate_Bps
    assert one == pytest.approx(50e9 / (2 * 14), rel=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"planes_per_nic": 3}, r"planes_per_nic must be 1, 2 or 4"),
        ({"planes_per_nic": 2, "nic_ports": 2}, r"give nic_ports or planes_per_nic, not both"),
        ({"family": "dragonfly", "planes_per_nic": 2}, r"planes_per_nic applies to the fat"),
        ({"switch_ports": 512, "planes_per_nic": 4}, r"into 2048, above 1024"),
    ],
)
def test_planes_per_nic_refuses(kwargs, message):
    kwargs = dict(kwargs)
    family = kwargs.pop("family", "ft2")
    with pytest.raises(SpecError, match=message):
        build(family, **kwargs)
