"""--no-gdr: the fabric as NCCL uses it without GPUDirect RDMA (topo.builders.gdr)."""

from __future__ import annotations

import orjson
import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.builders.gdr import without_gdr
from topo.cli import app
from topo.collective import fabric_rates
from topo.errors import TopoError
from topo.fabric import save


def _one_gpu_servers(pcie_GBps: float = 64.0):
    # 1 GPU and one 400G NIC (50 GB/s) per server behind a PCIe link of pcie_GBps.
    return build("ft2", switch_ports=8, gpus_per_node=1, nics_per_node=1, pcie_GBps=pcie_GBps)


def test_without_gdr_halves_each_pcie_link_and_nothing_else():
    G = _one_gpu_servers()
    H = without_gdr(G)
    assert H.graph["gdr"] is False and "gdr" not in G.graph
    for u, v, e in G.edges(data=True):
        want = e["capacity"] / 2 if e["kind"] == "pcie" else e["capacity"]
        assert H[u][v]["capacity"] == want
    assert {e["capacity"] for *_, e in G.edges(data=True) if e["kind"] == "pcie"} == {64e9}


@pytest.mark.parametrize(
    ("pcie_GBps", "gdr_on", "gdr_off"),
    [
        # PCIe Gen5 x16 (64 GB/s): with GDR the 400G cable binds (50 GB/s); without, the
        # PCIe link carries each byte twice: 64 / 2 = 32 GB/s
        (64.0, 50.0, 32.0),
        # PCIe Gen6 x16 (128 GB/s): 128 / 2 = 64 GB/s is above the cable: still 50
        (128.0, 50.0, 50.0),
    ],
)
def test_without_gdr_nic_rate(pcie_GBps, gdr_on, gdr_off):
    G = _one_gpu_servers(pcie_GBps)
    assert fabric_rates(G, gpus=2).nic_Bps == pytest.approx(gdr_on * 1e9)
    assert fabric_rates(without_gdr(G), gpus=2).nic_Bps == pytest.approx(gdr_off * 1e9)


def test_without_gdr_refuses_what_is_not_a_fabric():
    with pytest.raises(TopoError):
        without_gdr(None)  # type: ignore[arg-type]


def test_cli_collective_no_gdr(tmp_path):
    path = tmp_path / "f.json"
    save(_one_gpu_servers(), path)
    args = ["collective", str(path), "--op", "all_gather", "--gpus", "2"]
    args += ["--min-bytes", "1G", "--max-bytes", "1G", "--json"]
    runner = CliRunner()
    on = runner.invoke(app, args)
    off = runner.invoke(app, [*args, "--no-gdr"])
    assert on.exit_code == 0 and off.exit_code == 0, off.output
    r_on, r_off = orjson.loads(on.stdout)["rows"][0], orjson.loads(off.stdout)["rows"][0]
    # all_gather of 2 ranks: each server sends S/2 over its NIC's rate, at NCCL's 0.96 of it
    # (the [expected] net efficiency): 2^29 B / (32e9 x 0.96) = 17,476.27 us without GDR
    assert r_off["expected"]["bandwidth_us"] == pytest.approx(2**29 / (32e9 * 0.96) * 1e6)
    assert r_on["expected"]["bandwidth_us"] == pytest.approx(2**29 / (50e9 * 0.96) * 1e6)
    assert r_off["bound"] == "net gpu->nic" and r_on["bound"] == "net nic->leaf"


def test_cli_collective_says_gdr_is_off(tmp_path):
    path = tmp_path / "f.json"
    save(_one_gpu_servers(), path)
    args = ["collective", str(path), "--op", "all_gather", "--gpus", "2"]
    args += ["--min-bytes", "1M", "--max-bytes", "1M"]
    runner = CliRunner()
    table = runner.invoke(app, [*args, "--no-gdr"])
    assert table.exit_code == 0, table.output
    assert "GPUDirect RDMA off (--no-gdr)" in table.stdout
    assert "GPUDirect RDMA off" not in runner.invoke(app, args).stdout
    assert orjson.loads(runner.invoke(app, [*args, "--json"]).stdout)["gdr"] is True
    assert orjson.loads(runner.invoke(app, [*args, "--json", "--no-gdr"]).stdout)["gdr"] is False


def test_cli_collective_no_gdr_on_one_server_warns_and_changes_nothing(tmp_path):
    path = tmp_path / "f.json"
    save(build("ft2", switch_ports=8, gpus=16), path)  # two servers of 8 GPUs
    args = ["collective", str(path), "--gpus", "8", "--min-bytes", "1G", "--max-bytes", "1G"]
    args += ["--json"]
    runner = CliRunner()
    on, off = runner.invoke(app, args), runner.invoke(app, [*args, "--no-gdr"])
    assert off.exit_code == 0 and "--no-gdr changes nothing here" in off.stderr
    r_on, r_off = orjson.loads(on.stdout)["rows"][0], orjson.loads(off.stdout)["rows"][0]
    assert r_on["time_us"] == r_off["time_us"]
