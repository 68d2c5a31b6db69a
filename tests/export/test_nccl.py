"""NCCL's environment and topology XML from a design, read back as NCCL reads them."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from tests.formats._real import real_file
from topo.builders import build
from topo.errors import SpecError
from topo.export import ExportOptions, export, fabric_hosts, nccl_env, nccl_nics, write_topo_xml
from topo.formats import read_ibnetdiscover


def parse_ib_hca(value: str) -> tuple[bool, list[tuple[str, int, int, int]]]:
    """NCCL_IB_HCA as NCCL 2.30's parseStringList (src/misc/utils.cc) reads it: an optional
    '=' (exact names), then comma-separated 'hca[:port[:rail[:plane]]]', empty or absent
    fields -1."""
    exact = value.startswith("=")
    out = []
    for entry in value.lstrip("=").split(","):
        fields = entry.split(":") + [""] * 3
        hca, port, rail, plane = fields[:4]
        out.append((hca, *(int(f) if f else -1 for f in (port, rail, plane))))
    return exact, out


def test_mpft_nic_i_is_on_plane_i():
    G = build("mpft", switch_ports=8)  # 8 NICs per server, NIC i on plane i
    env = nccl_env(G, node=5)
    exact, hcas = parse_ib_hca(env["NCCL_IB_HCA"])
    assert exact
    assert hcas == [(f"mlx5_{i}", 1, i, i) for i in range(8)]
    assert env["NCCL_CROSS_NIC"] == "0"  # planes never pair


def test_mrft_rails_one_plane():
    G = build("mrft", switch_ports=8, gpus_per_node=4, nics_per_node=4, gpus=32)
    env = nccl_env(G, node=0, hca_format="ib{index}")
    assert parse_ib_hca(env["NCCL_IB_HCA"])[1] == [(f"ib{i}", 1, i, 0) for i in range(4)]
    assert env["NCCL_CROSS_NIC"] == "0"  # rail-optimised: keep rings on a rail


def test_fat_tree_no_rails_cross_nic_allowed():
    G = build("ft2", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    env = nccl_env(G)
    assert env["NCCL_IB_HCA"] == "=mlx5_0:1::0,mlx5_1:1::0,mlx5_2:1::0,mlx5_3:1::0"
    assert parse_ib_hca(env["NCCL_IB_HCA"])[1][0] == ("mlx5_0", 1, -1, 0)
    assert env["NCCL_CROSS_NIC"] == "1"


def test_all_servers_share_one_block_when_alike():
    G = build("mpft", switch_ports=8)
    text = export(G, "nccl").text
    assert text.splitlines()[0] == "# node[0-31]"
    assert text.count("export NCCL_IB_HCA=") == 1


def test_topo_xml_net_attributes_are_ncclS():
    """Each <net> carries only attributes NCCL's own dumps have (a real NCCL_TOPO_DUMP_FILE)
    plus rail and plane (src/graph/topo.cc); speed in Mb/s as there (400G -> 400000)."""
    real = ET.parse(real_file("nccl_topo_xml", "rtx3090x8_1nic56g_topo.xml")).getroot()
    real_attrs = {a for net in real.iter("net") for a in net.attrib}
    assert {"name", "dev", "speed", "port"} <= real_attrs
    G = build("mpft", switch_ports=8)
    root = ET.fromstring(write_topo_xml(nccl_nics(G, 2), "node2"))
    assert root.tag == "system" and root.attrib == {"version": "1"} == real.attrib
    nets = list(root.iter("net"))
    assert len(nets) == 8
    for i, net in enumerate(nets):
        assert set(net.attrib) <= real_attrs | {"rail", "plane"}
        assert net.attrib["rail"] == net.attrib["plane"] == str(i)
        assert net.attrib["speed"] == "400000" and net.attrib["name"] == f"mlx5_{i}"
    # as in the real dump, each <net> sits in a <nic>
    assert all(len(nic) == 1 and nic[0].tag == "net" for nic in root.iter("nic"))


def test_export_writes_topo_xml(tmp_path):
    G = build("mpft", switch_ports=8)
    xml_path = str(tmp_path / "node3.xml")
    out = export(G, "nccl", ExportOptions(node=3, topo_xml=xml_path))
    assert out.text.splitlines() == [
        "# node3",
        "export NCCL_IB_HCA==" + ",".join(f"mlx5_{i}:1:{i}:{i}" for i in range(8)),
        "export NCCL_CROSS_NIC=0",
        f"export NCCL_TOPO_FILE={xml_path}",
    ]
    assert "<!-- node3:" in out.files[xml_path]


def test_imported_two_port_ca_is_one_device():
    """ibsim's 2sw2path4hca2port: Hca1 is one CA whose ports 1 and 2 go to the two switches;
    its descriptions name no device, so the default pattern names it."""
    G = read_ibnetdiscover(real_file("ibnetdiscover", "ibsim_net.2sw2path4hca2port"))
    i = fabric_hosts(G).index("Hca1")
    _, hcas = parse_ib_hca(nccl_env(G, node=i)["NCCL_IB_HCA"])
    assert [(h, p) for h, p, _, _ in hcas] == [("mlx5_0", 1), ("mlx5_0", 2)]


def test_imported_hosts_keep_their_device_names():
    """The GB200 dump names each CA '<host> mlx5_N': those names, read from the file here."""
    path = real_file("ibnetdiscover", "topograph_dgx_gb200_ndr_superpod.out")
    host = "a08-p1-dgx-04-c17"
    devices = sorted(set(re.findall(rf'"{host} (mlx5_\d+)"', path.read_text())))
    assert len(devices) == 4
    G = read_ibnetdiscover(path)
    env = nccl_env(G, node=fabric_hosts(G).index(host))
    assert parse_ib_hca(env["NCCL_IB_HCA"])[1] == [(d, 1, -1, 0) for d in devices]
    assert env["NCCL_CROSS_NIC"] == "2"  # hosts span leaves whose rails the dump does not name
    assert "=mlx5_0:1::0" in nccl_env(G, node=0, hca_format="mlx5_{index}")["NCCL_IB_HCA"]


def test_bad_node_and_hca_format():
    G = build("ft2", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    with pytest.raises(SpecError, match="from 0 to 7, got 8"):
        nccl_env(G, node=8)
    with pytest.raises(SpecError, match="one field"):
        nccl_env(G, hca_format="mlx5_{idx}")


def test_hpn_nic_is_one_bonded_hca_of_two_ports():
    # Qian et al., SIGCOMM 2024: each NIC's two 200G ports go to two ToRs, bonded by LACP; in
    # RoCE LAG mode a ConnectX shows one RDMA device for both ports, mlx5_bond_<n>, port 1.
    # A 32-port pod of 8 hosts: 8 NICs a host, NIC j on rail j (both its ToRs are rail j).
    G = build("hpn", switch_ports=32, gpus=64)
    nics = nccl_nics(G, node=3)
    assert [(n.hca, n.port, n.rail, n.plane) for n in nics] == [
        (f"mlx5_bond_{j}", 1, j, None) for j in range(8)
    ]
    assert {n.speed_Mbps for n in nics} == {400_000}  # 2 x 200G ports of a 400G NIC
    env = nccl_env(G, node=3)
    exact, hcas = parse_ib_hca(env["NCCL_IB_HCA"])
    assert exact and hcas == [(f"mlx5_bond_{j}", 1, j, -1) for j in range(8)]
    assert env["NCCL_CROSS_NIC"] == "0"


def test_hpn_bond_with_one_tor_lost_keeps_half_its_rate():
    G = build("hpn", switch_ports=32, gpus=64)
    G.remove_node("seg0/rail2/tor1")  # port 1 of NIC 2 of every host loses its ToR
    nics = nccl_nics(G, node=0, hca_format="bond{index}")
    assert [n.hca for n in nics] == [f"bond{j}" for j in range(8)]
    assert nics[2].speed_Mbps == 200_000 and nics[1].speed_Mbps == 400_000


def test_hpn_topo_xml_has_one_net_per_nic():
    G = build("hpn", switch_ports=32, gpus=64)
    root = ET.fromstring(write_topo_xml(nccl_nics(G, node=0), "host0"))
    nets = root.findall(".//net")
    assert [n.get("name") for n in nets] == [f"mlx5_bond_{j}" for j in range(8)]
    assert all(n.get("plane") is None and n.get("port") == "1" for n in nets)
