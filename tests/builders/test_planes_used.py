"""--planes-used: the fabric the software drives (topo.builders.planes_used.drive_planes)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.builders.planes_used import drive_planes, plane_count
from topo.cli import app
from topo.errors import SpecError, TopoError
from topo.fabric import save, summarize
from topo.flow import alltoall_bandwidth
from topo.moe import default_config, moe_report


def _dual_plane(pcie_GBps: float = 200.0):
    # A dual-plane ConnectX-8 per GPU: every NIC has 2 ports of 400G, port p on plane p;
    # 8 servers of 8 GPUs on a two-layer fat tree of 16-port switches per plane.
    return build("ft2", switch_ports=16, gpus=64, nic_ports=2, pcie_GBps=pcie_GBps)


def test_plane_count_of_each_family():
    assert plane_count(build("mpft", gpus=64)) == 8
    assert plane_count(build("mrft", gpus=64)) == 8  # rails
    assert plane_count(build("hpn", gpus=64)) == 2
    assert plane_count(_dual_plane()) == 2


def test_one_plane_of_two_halves_the_alltoall_where_the_nics_bind():
    # N = 64 GPUs, 8 a server, PCIe 200 GB/s: the cut around a server is its NIC ports,
    # 8 x 2 x 50 GB/s with both planes, 8 x 50 GB/s with one: 8 (N - 8) lam <= that.
    G = _dual_plane()
    both = alltoall_bandwidth(G).pair_rate_Bps
    one = alltoall_bandwidth(drive_planes(G, 1)).pair_rate_Bps
    assert both == pytest.approx(800e9 / (8 * 56), rel=1e-6)
    assert one == pytest.approx(400e9 / (8 * 56), rel=1e-6)


def test_one_plane_of_two_doubles_deepep_rdma_time():
    # DeepEP V1 on one plane of a dual-plane CX8 (DeepEP PR #650): each GPU's RDMA bytes go
    # through its own NIC, 2 x 50 GB/s of ports with both planes, 50 GB/s with one (PCIe
    # 200 GB/s does not bind): the network time of the busiest GPU doubles.
    G = _dual_plane()
    for phase in ("dispatch", "combine"):
        both = getattr(moe_report(G, default_config()).scenarios[0], phase)
        one = getattr(moe_report(drive_planes(G, 1), default_config()).scenarios[0], phase)
        assert both.ib_bytes_max == one.ib_bytes_max
        assert both.ib_s == pytest.approx(both.ib_bytes_max / 100e9, rel=1e-9)
        assert one.ib_s == pytest.approx(one.ib_bytes_max / 50e9, rel=1e-9)


def test_drive_planes_keeps_the_first_k_planes_and_the_servers():
    G = build("mpft", gpus=64)
    H = drive_planes(G, 3)
    assert {d["plane"] for _, d in H.nodes(data=True) if "plane" in d} == {0, 1, 2}
    assert summarize(H).gpus == 64 and H.graph["planes"] == 3
    assert "node0/nic7" in H and G.graph["planes"] == 8  # G untouched
    assert drive_planes(G, 8).number_of_edges() == G.number_of_edges()


def test_drive_planes_on_mrft_drops_the_rail_leaves_and_keeps_the_spines():
    G = build("mrft", gpus=1024)
    H = drive_planes(G, 2)
    assert {d["rail"] for _, d in H.nodes(data=True) if d["kind"] == "leaf"} == {0, 1}
    assert summarize(H).switches_by_tier["spine"] == summarize(G).switches_by_tier["spine"]


@pytest.mark.parametrize("k", [0, 3, -1])
def test_drive_planes_refuses_k_out_of_range(k):
    with pytest.raises(SpecError, match=r"planes_used must be from 1 to 2 \(the planes"):
        drive_planes(build("hpn", gpus=64), k)


def test_drive_planes_refuses_a_fabric_of_one_plane_and_no_rails():
    with pytest.raises(TopoError, match="one plane and no rails"):
        drive_planes(build("ft2", gpus=64), 1)


def test_cli_bandwidth_planes_used_halves_busbw(tmp_path):
    path = tmp_path / "f.json"
    save(_dual_plane(), path)
    runner = CliRunner()
    full = runner.invoke(app, ["bandwidth", str(path)])
    half = runner.invoke(app, ["bandwidth", str(path), "--planes-used", "1"])
    assert full.exit_code == 0 and half.exit_code == 0, half.output
    # busbw = lam (N - 1): 800e9/448 x 63 = 112.50 GB/s; one plane 56.25 GB/s
    assert "112.50 GB/s" in full.output and "56.25 GB/s" in half.output
    bad = runner.invoke(app, ["bandwidth", str(path), "--planes-used", "3"])
    assert bad.exit_code != 0
    assert "--planes-used must be from 1 to 2" in bad.output
    assert "Traceback" not in bad.output
