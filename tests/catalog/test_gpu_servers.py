"""Today's GPU servers and NICs in the catalog, and the NCCL generation a fabric built from
each one is computed with.

Expected figures are the vendors' own, restated from the documents the catalog cites:

- DGX A100 user guide and NVIDIA's "Introducing HGX A100" post: 8 A100 SXM4, NVLink 3 at
  600 GB/s bidirectional per GPU (12 links), 8 single-port ConnectX-6 HDR 200 Gb/s, PCIe Gen4.
- DeepEP issue #16 (DeepSeek's reply): "The H20 NVLink's bi-directional bandwidth is 900 GB/s,
  while the theoretical unidirectional bandwidth is only 450 GB/s"; NV18 in nvidia-smi topo
  (18 NVLink 4 links of 25 GB/s per direction).
- DGX H200 user guide / BasePOD RA: NVLink 4 at 900 GB/s per GPU, eight ConnectX-7 400 Gb/s.
- DGX B200 user guide / BasePOD RA: 14.4 TB/s NVLink aggregate over 8 GPUs, eight ConnectX-7
  400 Gb/s; DGX B300: NVLink 5 1.8 TB/s per GPU, eight ConnectX-8 800 Gb/s.
- ConnectX-8 SuperNIC firmware release notes 40.44.0208: "800Gb/s or XDR IB or 2 x 400GbE",
  "planarized topology network"; ConnectX-6: 200 Gb/s, PCIe 4.0 x16.
- Alibaba HPN (Qian et al., SIGCOMM 2024, as restated in Q. Wu's paper notes and Tom's
  Hardware): 8 GPUs and 8 backend NICs of 2 x 200 Gb/s per host, one NIC a GPU, plus a frontend
  NIC; Alibaba's SimAI AlibabaHPN template: H100 GPUs, NVLink 2880 Gb/s per GPU (360 GB/s);
  a 400G NIC on PCIe Gen5 x16.
- PCI-SIG: 16 GT/s x 16 lanes / 8 = 32 GB/s per direction (Gen4, before 128b/130b coding);
  32 GT/s -> 64 GB/s (Gen5); 64 GT/s -> 128 GB/s (Gen6).

NCCL's generation of each GPU is its compute capability (CUDA C Programming Guide, table of
compute capabilities): A100 8.0 ampere; H100, H200, H20, H800 9.0 hopper; B200, B300, GB200,
GB300 10.x blackwell.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from topo import fabric as fabric_mod
from topo.catalog import load_catalog
from topo.cli import app
from topo.collective.gpu_models import resolve_gpu_model
from topo.fabric.gpus import arch_of_model, gpu_arch

runner = CliRunner()

# name: (GPUs, NVLink GB/s bidirectional per GPU, NIC Gb/s, PCIe generation of the NIC link)
VENDOR = {
    "a100": (8, 600, 200, 4),
    "h20": (8, 900, 400, 5),
    "h200": (8, 900, 400, 5),
    "b200": (8, 14_400 / 8, 400, 5),
    "b300": (8, 1800, 800, 6),
    "gb300-nvl72": (72, 1800, 800, 6),
    "hpn-host": (8, 2 * 2880 / 8, 400, 5),  # SimAI's 2880 Gb/s per direction = 360 GB/s
}
GEN_GBps = {4: 16 * 16 / 8, 5: 32 * 16 / 8, 6: 64 * 16 / 8}  # GT/s x 16 lanes / 8 bit

ARCH = {
    "a100": "ampere",
    "h800": "hopper",
    "h100": "hopper",
    "h200": "hopper",
    "h20": "hopper",
    "b200": "blackwell",
    "b300": "blackwell",
    "gb200-nvl72": "blackwell",
    "gb300-nvl72": "blackwell",
    "hpn-host": "hopper",
}


@pytest.mark.parametrize("name", sorted(VENDOR))
def test_server_figures_are_the_vendors(name):
    gpus, nvlink_bidir, nic_gbps, gen = VENDOR[name]
    cat = load_catalog()
    server = cat.node(name)
    assert (server.gpus, server.nics) == (gpus, gpus)  # one NIC per GPU
    assert server.nvlink_GBps == nvlink_bidir / 2  # topo's rates are per direction
    assert server.pcie_GBps == GEN_GBps[gen]
    assert cat.nic_gbps(name) == nic_gbps


def test_connectx_nics_as_their_documents_state():
    cat = load_catalog()
    cx6, cx8 = cat.get("nic", "cx6"), cat.get("nic", "cx8")
    assert (cx6.get("gbps"), cx6.get("pcie"), cx6.get("pcie_GBps")) == (200, "Gen4 x16", 32)
    assert cx8.get("gbps") == 800 and cx8.get("pcie_GBps") == GEN_GBps[6]
    # "800Gb/s ... or 2 x 400GbE": two planes of 400G ports
    assert cx8.get("multi_plane") is True and cx8.get("port_split") == "2 x 400GbE"
    assert "planarized" in cx8.source


def test_every_catalog_server_is_listed_with_the_generation_of_its_model():
    cat = load_catalog()
    assert set(cat.names("node")) == set(ARCH)
    for name, arch in ARCH.items():
        entry = cat.get("node", name)
        assert entry.get("arch") == arch
        assert arch_of_model(entry.get("model")) == arch, entry.get("model")
        assert arch_of_model(resolve_gpu_model(name)) == arch


@pytest.mark.parametrize("name", sorted(ARCH))
def test_a_fabric_built_from_a_server_records_its_generation(tmp_path, name):
    # the smallest fabric of two servers: topo build --node NAME records the model
    gpus = 2 * load_catalog().node(name).gpus
    out = tmp_path / "f.json"
    r = runner.invoke(app, ["build", "ft2", "--node", name, "--gpus", str(gpus), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert gpu_arch(fabric_mod.load(out)) == ARCH[name]


@pytest.mark.parametrize("name", ["a100", "h20", "b300"])
def test_collective_uses_the_generation_of_the_server_built_from(tmp_path, name):
    # NVLink as NCCL gets it is the link rate times efficiency.nvlink[arch] of the constants
    # file (read from the file itself), so it shows which generation's row was taken.
    from topo.collective.constants import default_constants_path
    from topo.spec import tomllib

    eff = tomllib.loads(default_constants_path().read_text())["efficiency"]["nvlink"]
    out = tmp_path / "f.json"
    r = runner.invoke(app, ["build", "ft2", "--node", name, "--gpus", "16", "-o", str(out)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(
        app, ["collective", str(out), "--min-bytes", "1G", "--max-bytes", "1G", "--json"]
    )
    assert r.exit_code == 0, r.output
    rates = json.loads(r.stdout)["rates"]
    nvlink = VENDOR[name][1] / 2
    assert rates["nvlink_per_gpu_GBps"] == nvlink
    assert rates["nvlink_effective_GBps"] == pytest.approx(nvlink * eff[ARCH[name]])
    assert "records no GPU model" not in r.stderr


def test_b300_on_two_planes_of_400g_ports():
    # a ConnectX-8 as two 400G ports, each on its own plane (--nic-ports 2): 64 GPUs of
    # b300 on ft2 of 64-port switches; each plane carries 64 ports of 400G
    r = runner.invoke(
        app,
        ["build", "ft2", "--node", "b300", "--nic-ports", "2", "--link-gbps", "400",
         "--gpus", "64", "--json"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["gpus"] == 64 and d["endpoints"] == 128


def test_hpn_host_nic_is_two_ports_of_200g_and_builds_the_papers_pod():
    # Qian et al.: each NIC 2 x 200 Gb/s, one port per ToR; a pod of 128-port ToRs is
    # 15 segments x 128 hosts x 8 GPUs = 15,360 GPUs, with 2 x 8 x 15 = 240 ToRs and 120
    # aggregation switches, and 2 port cables of 200G per NIC: 2 x 8 x 1,920 = 30,720.
    cat = load_catalog()
    nic = cat.get("nic", cat.get("node", "hpn-host").get("nic"))
    assert (nic.get("gbps"), nic.get("ports"), nic.get("port_gbps")) == (400, 2, 200)
    assert cat.get("node", "hpn-host").get("frontend_nics") == 1  # not in the backend fabric
    r = runner.invoke(
        app, ["build", "hpn", "--node", "hpn-host", "--switch-ports", "128", "--json"]
    )
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    assert (s["gpus"], s["switches_by_tier"]) == (15_360, {"leaf": 240, "spine": 120})
    assert s["endpoint_links"] == 30_720
