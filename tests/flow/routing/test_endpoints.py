"""Traffic ends: PXN inside servers, unroutable and disconnected terminals."""

from __future__ import annotations

import pytest

from topo.builders import build
from topo.errors import InfeasibleError
from topo.flow.routing import routed_alltoall

from ._helpers import counts, tier_of


def test_pxn_keeps_mrft_traffic_on_its_rail():
    # MRFT, k = 4, 2 rails, 4 servers of 2 GPUs: rail r has leaves rail{r}/leaf0 (servers 0, 1)
    # and rail{r}/leaf1 (servers 2, 3); two spines shared by all four leaves. n = 8, and each
    # GPU has 6 peers on other servers, 3 on each rail.
    G = build("mrft", switch_ports=4, gpus_per_node=2, nics_per_node=2, gpus=8)
    up = lambda r: sum(x for a, x in counts(r).items() if tier_of(G, *a) == "leaf->spine")  # noqa: E731
    on, off = routed_alltoall(G, "dmodk", pxn=True), routed_alltoall(G, "dmodk", pxn=False)
    # PXN: a pair climbs only between server groups {0,1} and {2,3}: 8 ordered server pairs x
    # 4 GPU pairs = 32. Without: every cross-server pair except same rail in the same group,
    # 48 - 2 rails x 4 ordered server pairs in a group = 40.
    assert up(on) == pytest.approx(32)
    assert up(off) == pytest.approx(40)
    c_on, c_off = counts(on), counts(off)
    for s in range(4):
        for i in range(2):
            gpu, nvs, nic = f"node{s}/gpu{i}", f"node{s}/nvswitch", f"node{s}/nic{i}"
            # NVLink: 1 peer in the server, plus (PXN) 3 peers on the other rail forwarded
            assert c_on[(gpu, nvs)] == pytest.approx(1 + 3)
            assert c_on[(nvs, gpu)] == pytest.approx(1 + 3)
            assert c_off[(gpu, nvs)] == pytest.approx(1)
            # PCIe out: its own 3 same-rail peers and the other GPU's 3, or all 6 of its own
            assert c_on[(gpu, nic)] == pytest.approx(6)
            assert c_off[(gpu, nic)] == pytest.approx(6)
            assert c_on[(nic, gpu)] == pytest.approx(6)


def test_mpft_without_pxn_names_the_unroutable_pairs():
    # 4 servers of 2 GPUs on 2 planes: each GPU has 3 peers on other servers on the other
    # plane: 8 x 3 = 24 ordered pairs cannot leave their plane without NVLink forwarding.
    G = build("mpft", switch_ports=4, gpus_per_node=2, nics_per_node=2, gpus=8)
    with pytest.raises(InfeasibleError, match=r"^24 ordered GPU pairs have no up/down route.*PXN"):
        routed_alltoall(G, "ecmp", pxn=False)
    assert routed_alltoall(G, "ecmp", pxn=True).gpus == 8


def test_disconnected_gpus_are_reported():
    G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1, gpus=8)
    G.remove_edge("node3/nic0", "leaf1")
    with pytest.raises(InfeasibleError, match=r"^1 GPU has no NIC cabled to a switch"):
        routed_alltoall(G, "ecmp")
