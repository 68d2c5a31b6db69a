"""Collectives where NVLink domains span hosts: NCCL's MNNVL clique (the domain) is one node.

NCCL 2.29.7 (``src/mnnvl.cc``, ``src/graph/topo.cc``): with MNNVL the local ranks are the
clique's, so ranks per NCCL node = ranks per host x hosts of the domain, and NVLS runs over the
domain. References: the fabric's own cables (a rack's NICs at 50 GB/s each), counted by hand.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from formats._real import real_file

from topo.builders import build
from topo.collective import collective_table, fabric_rates
from topo.errors import TopoError
from topo.fabric import hosts, servers
from topo.formats import import_ibnetdiscover, write_ibnetdiscover

GB200 = ("ibnetdiscover", "topograph_dgx_gb200_ndr_superpod.out")
RACK = r"-dgx-(\d+)-c\d+$"


def small_racks(tmp_path: Path, domains: bool = True):
    """A 32-GPU FT2 (8-port switches, hosts of 2 GPUs and 2 NICs, non-blocking) whose 16 hosts
    are ``r{k}-c{t}``: 4 racks of 4 hosts, each rack one NVLink domain when ``domains``."""
    text = write_ibnetdiscover(build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2))
    text = re.sub(r'"node(\d+) ', lambda m: f'"r{int(m[1]) // 4}-c{int(m[1]) % 4} ', text)
    path = tmp_path / "racks.net"
    path.write_text(text)
    regex = r"^(r\d+)-c" if domains else None
    return import_ibnetdiscover(path, gpus_per_host=2, nvlink_GBps=900, nvlink_domain_regex=regex)


def test_ranks_per_node_are_the_domains(tmp_path: Path) -> None:
    G = small_racks(tmp_path)
    assert len(hosts(G)) == 16 and len(servers(G)) == 4
    one = fabric_rates(G, gpus=8, gpus_per_node=2)  # 4 hosts: rack r0 alone
    assert (one.nodes, one.gpus_per_node, one.servers, one.nvswitch) == (1, 8, ["r0"], True)
    assert one.ring is None and one.nvlink_Bps == 900e9
    two = fabric_rates(G, gpus=16, gpus_per_node=2)
    assert (two.nodes, two.gpus_per_node, two.servers) == (2, 8, ["r0", "r1"])
    # The ring between two racks: each sends over its 8 NICs, 8 x 50 GB/s (non-blocking FT2).
    assert 1 / two.ring.seconds_per_byte == pytest.approx(400e9, rel=1e-9)
    every = fabric_rates(G)
    assert (every.gpus, every.nodes, every.gpus_per_node) == (32, 4, 8)
    # The same 16 GPUs with one NVSwitch per host: 8 nodes of 2, a node's ring 2 x 50 GB/s.
    trays = fabric_rates(small_racks(tmp_path, domains=False), gpus=16, gpus_per_node=2)
    assert (trays.nodes, trays.gpus_per_node) == (8, 2)
    assert 1 / trays.ring.seconds_per_byte == pytest.approx(100e9, rel=1e-9)


def test_uneven_domains_and_bad_ranks_are_refused(tmp_path: Path) -> None:
    G = small_racks(tmp_path)
    with pytest.raises(TopoError, match=r"fills NVLink domains unevenly \(4, 2 hosts\)"):
        fabric_rates(G, gpus=12, gpus_per_node=2)
    with pytest.raises(TopoError, match="ranks per host must be 1 to the 2 GPUs"):
        fabric_rates(G, gpus=12, gpus_per_node=3)
    with pytest.raises(TopoError, match="needs 17 hosts; the fabric has 16"):
        fabric_rates(G, gpus=34, gpus_per_node=2)


def test_gb200_rack_is_one_nccl_node_with_nvls() -> None:
    path = real_file(*GB200)
    G = import_ibnetdiscover(path, gpus_per_host=4, nvlink_GBps=900, nvlink_domain_regex=RACK)
    big = 8 << 30
    # Rack 01 (domain "01", first in order): its 10 trays are one NCCL node of 40 ranks, and
    # all_reduce runs NVLS on its NVSwitch, bound by NVLink.
    rep = collective_table(G, "all_reduce", gpus=40, gpus_per_node=4, min_bytes=big, max_bytes=big)
    assert (rep.nodes, rep.gpus_per_node) == (1, 40)
    assert (rep.rows[-1].algorithm, rep.rows[-1].bound) == ("nvls", "nvlink")
    # 80 ranks: rack 01's 10 trays and the first 10 of rack 02's 11, two nodes of 40.
    two = fabric_rates(G, gpus=80, gpus_per_node=4)
    assert (two.nodes, two.gpus_per_node, two.servers) == (2, 40, ["01", "02"])
    # Rack 01's 30 HCAs (its rail-3 leaf is absent) at 50 GB/s each.
    assert two.server_nic_Bps == pytest.approx(30 * 50e9)
    with pytest.raises(TopoError, match=r"unevenly \(10, 8 hosts\)"):
        fabric_rates(G, gpus=72, gpus_per_node=4)
    # The same 40 GPUs with one NVSwitch per tray are 10 nodes of 4: no single-node NVLS.
    trays = import_ibnetdiscover(path, gpus_per_host=4, nvlink_GBps=900)
    per_tray = collective_table(
        trays, "all_reduce", gpus=40, gpus_per_node=4, min_bytes=big, max_bytes=big
    )
    assert (per_tray.nodes, per_tray.gpus_per_node) == (10, 4)
    assert per_tray.rows[-1].algorithm != "nvls"


def test_cli_counts_ranks_per_host(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from topo.cli import app
    from topo.fabric import save

    save(small_racks(tmp_path), tmp_path / "racks.json")
    base = ["collective", str(tmp_path / "racks.json"), "--op", "all_reduce"]
    sizes = ["--min-bytes", "1G", "--max-bytes", "1G"]
    r = CliRunner().invoke(app, [*base, "--gpus", "16", "--gpus-per-node", "2", *sizes, "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    # 8 hosts of 2 ranks fill racks r0 and r1: two NCCL nodes of 8; each rack's ring over
    # its 8 NICs at 50 GB/s.
    assert (got["nodes"], got["gpus_per_node"]) == (2, 8)
    assert got["rates"]["ring_per_server_GBps"] == pytest.approx(400.0)
    r = CliRunner().invoke(app, [*base, "--gpus", "12", "--gpus-per-node", "2"])
    assert r.exit_code == 1 and "e.g. --gpus 8: 2 x the 4 hosts of domain 'r0'" in r.output
    assert len(r.output.strip().splitlines()) == 1
