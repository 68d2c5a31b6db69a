"""The all-to-all of a non-blocking fat tree in closed form (topo.cost.clos_rates), held to the
LP on the built graph and to hand values."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from topo.builders import build, fabric_counts
from topo.cli import app
from topo.cost.clos_rates import clos_alltoall
from topo.flow import alltoall_bandwidth
from topo.spec import FabricSpec

SHAPES = [
    # (GPUs, NICs a server, PCIe GB/s a GPU-NIC link)
    (8, 8, 64.0),  # one 400G NIC a GPU: the cables bind, R = 8 x 50 = 400 GB/s
    (8, 4, 64.0),  # a NIC for 2 GPUs: R = 4 x min(50, 2 x 64) = 200
    (8, 8, 20.0),  # PCIe binds: R = 8 x 20 = 160
    (1, 1, 64.0),  # one GPU a server: (N-1)/(N-G) = 1
]


@pytest.mark.parametrize(("gpn", "nics", "pcie"), SHAPES)
@pytest.mark.parametrize(
    ("family", "extra"),
    [
        ("ft2", {}),
        ("ft3", {}),
        ("mrft", {}),
        ("mpft", {}),
        ("mpft", {"tiers": 3}),
        ("ft2", {"nic_ports": 2}),
    ],
)
@pytest.mark.parametrize("fill", ["full", "part"])
def test_closed_form_equals_the_lp_on_the_built_fabric(family, extra, gpn, nics, pcie, fill):
    spec = FabricSpec.from_options(
        family, switch_ports=8, gpus_per_node=gpn, nics_per_node=nics, pcie_GBps=pcie,
        nvlink_GBps=400, **extra,
    )  # fmt: skip
    if fill == "part":  # servers of a partly filled fabric: under half of it, whole servers
        n = max(2 * gpn, fabric_counts(spec).gpus // 2 // gpn * gpn - gpn)
        spec = spec.replace(gpus=n)
    gpus = fabric_counts(spec).gpus
    got = clos_alltoall(spec, gpus)
    lp = alltoall_bandwidth(build(spec)).alltoall_busbw_Bps / 1e9
    assert got.busbw_GBps == pytest.approx(lp, rel=1e-9)


def test_the_papers_designs_by_hand():
    # DeepSeek-V3's MPFT: 16,384 GPUs, 8 x 400G a server: 50 x 16383 / 16376
    a = clos_alltoall(FabricSpec("mpft"), 16384)
    assert a.server_GBps == 400.0
    assert a.busbw_GBps == pytest.approx(50 * 16383 / 16376)
    # three layers of 64-port switches, 8 planes: 524,288 GPUs, 50 x 524287 / 524280
    three = FabricSpec.from_options("mpft", tiers=3)
    assert clos_alltoall(three, 524288).busbw_GBps == pytest.approx(50 * 524287 / 524280)
    # two-port NICs: 16 planes, 1,048,576 endpoints; a port's PCIe share 64 / 2 = 32 GB/s
    # binds its 50 GB/s cable: R = 8 x 2 x 32 = 512 GB/s, 64 GB/s a GPU
    two = FabricSpec.from_options("mpft", tiers=3, nic_ports=2)
    assert fabric_counts(two).endpoints == 1_048_576
    assert clos_alltoall(two, 524288).busbw_GBps == pytest.approx(64 * 524287 / 524280)


def test_no_closed_form_where_it_would_not_be_exact():
    over = FabricSpec.from_options("ft2", switch_ports=16, oversubscription=3)
    assert clos_alltoall(over, 192).busbw_GBps is None
    assert "oversubscribed 3:1" in clos_alltoall(over, 192).method
    # NVLink of 1 GB/s: the servers' own share binds (the LP finds 51.0, not 50 x 127/120)
    slow = FabricSpec.from_options("ft2", switch_ports=16, nvlink_GBps=1)
    assert clos_alltoall(slow, 128).busbw_GBps is None
    assert alltoall_bandwidth(build(slow)).alltoall_busbw_Bps / 1e9 == pytest.approx(51.0)
    assert clos_alltoall(FabricSpec("ft2"), 8).busbw_GBps is None  # one server
    for family, opts in (("dragonfly", {}), ("rail-only", {}), ("hpn", {})):
        spec = FabricSpec.from_options(family, **opts)
        assert clos_alltoall(spec, 1024).busbw_GBps is None


def test_cli_build_json_prints_it_without_building():
    r = CliRunner().invoke(app, ["build", "mpft", "--tiers", "3", "--nic-ports", "2", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["endpoints"] == 1_048_576
    assert d["alltoall_busbw_GBps"] == pytest.approx(64 * 524287 / 524280)
    assert d["alltoall_method"].startswith("closed form")
