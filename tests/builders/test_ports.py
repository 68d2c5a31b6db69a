"""Multi-port NICs (``nic_ports``, topo.builders.ports): port p of every NIC on port plane p.

Expected values are counts of copies (P planes of the family's fabric) and all-to-all rates
worked by hand from the cable, PCIe and NVLink rates: with uniform traffic every GPU sends
``lambda`` to each of the ``n - g`` GPUs outside its server (``g`` GPUs per server), and the
rate is the tightest of the server's cut capacities divided by what crosses it.
"""

from __future__ import annotations

import json

import networkx as nx
import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.errors import SpecError
from topo.fabric import is_switch, summarize
from topo.flow import alltoall_bandwidth
from topo.spec import FabricSpec


def test_ports_are_copies_of_the_plane_fabric():
    one = summarize(build("mpft", switch_ports=8, gpus=64, gpus_per_node=2, nics_per_node=2))
    G = build("mpft", switch_ports=8, gpus=64, gpus_per_node=2, nics_per_node=2, nic_ports=3)
    s = summarize(G)
    assert s.planes == 3 * one.planes == 6
    assert s.switches == 3 * one.switches
    assert s.links == 3 * one.links
    assert s.endpoints == 3 * one.endpoints
    assert s.gpus == one.gpus
    switches = G.subgraph(v for v in G if is_switch(G, v))
    assert nx.number_connected_components(switches) == 6


def test_port_p_of_nic_j_is_on_plane_p_of_its_copy():
    G = build("ft2", switch_ports=8, gpus=32, gpus_per_node=2, nics_per_node=2, nic_ports=2)
    for p in range(2):
        port = f"node3/nic1/port{p}"
        assert G.nodes[port] == {"kind": "nic", "node": 3, "index": 1 * 2 + p}
        (leaf,) = (v for v in G[port] if is_switch(G, v))
        assert leaf.startswith(f"port{p}/") and G.nodes[leaf]["plane"] == p
    # the PCIe link of NIC 1 (to GPU 1) is shared by its two ports: 64 GB/s in all
    caps = [G.edges["node3/gpu1", f"node3/nic1/port{p}"]["capacity"] for p in range(2)]
    assert caps == [32e9, 32e9]


def test_pcie_bound_all_to_all_with_two_port_nics():
    # ft2 of 8-port switches, 16 servers of 2 GPUs and 2 NICs of 2 x 400G ports (50 GB/s
    # each): a server's cables carry 4 x 50 = 200 GB/s, its PCIe 2 x 64 = 128 GB/s. Each GPU
    # sends 30 * lambda off the server: 2 * 30 * lambda = 128 GB/s -> lambda = 64/30 GB/s.
    G = build("ft2", switch_ports=8, gpus=32, gpus_per_node=2, nics_per_node=2, nic_ports=2)
    r = alltoall_bandwidth(G)
    assert r.exact
    assert r.pair_rate_Bps == pytest.approx(64e9 / 30, rel=1e-9)
    assert set(r.bottleneck_tiers) == {"gpu->nic"}


def test_port_bound_all_to_all_of_a_multi_plane_fabric():
    # mpft of 8-port switches, 32 servers of 2 GPUs, 2 NICs of 2 ports at 200G (25 GB/s): 4
    # planes; cables 4 x 25 = 100 GB/s per server, PCIe 128. 2 GPUs x 62 remote x lambda = 100
    # -> lambda = 100/124 GB/s; busbw = lambda * 63.
    G = build(
        "mpft",
        switch_ports=8,
        gpus=64,
        gpus_per_node=2,
        nics_per_node=2,
        nic_ports=2,
        link_gbps=200,
    )
    r = alltoall_bandwidth(G)
    assert r.exact
    assert r.pair_rate_Bps == pytest.approx(100e9 / 124, rel=1e-9)
    assert r.alltoall_busbw_Bps == pytest.approx(100e9 / 124 * 63, rel=1e-9)
    assert set(r.bottleneck_tiers) == {"nic->leaf", "leaf->nic"}  # each server's cut is met


def test_one_port_changes_nothing():
    a = build("mrft", gpus=256)
    b = build("mrft", gpus=256, nic_ports=1)
    assert nx.utils.graphs_equal(a, b)


def test_nic_ports_refused_where_it_does_not_apply():
    with pytest.raises(SpecError) as e:
        FabricSpec.from_options("dragonfly", nic_ports=2)
    assert e.value.param == "nic_ports"
    with pytest.raises(SpecError, match="from 1 to 16"):
        FabricSpec("ft2", nic_ports=0)


def test_cli_nic_ports_as_optimal_and_routed(tmp_path):
    runner = CliRunner()
    out = tmp_path / "f.json"
    args = ["build", "mpft", "--switch-ports", "8", "--gpus", "64", "--gpus-per-node", "2"]
    args += ["--nics-per-node", "2", "--nic-ports", "2", "--link-gbps", "200", "-o", str(out)]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["bandwidth", str(out), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["pair_rate_GBps"] == pytest.approx(100 / 124, rel=1e-9)
    # as routed (topo.flow.routing.netdevs): every port a net device, pairs split over the
    # ports; D-mod-k on this non-oversubscribed fabric reaches the port bound
    r = runner.invoke(app, ["bandwidth", str(out), "--routing", "dmodk", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["pair_rate_GBps"] == pytest.approx(100 / 124, rel=1e-9)


def test_per_port_and_per_nic_rows_with_two_port_nics(tmp_path):
    # MPFT, 16 servers of 4 GPUs and 4 two-port NICs: each port's share of its NIC's 64 GB/s
    # PCIe link (32 GB/s) is below its 50 GB/s cable, so a server sends at most 8 x 32 GB/s
    # to the 60 GPUs outside it from its 4 GPUs: lambda = 256 / 240 GB/s; each of its 8 ports
    # carries 4 x 60 x lambda / 8 = 32 GB/s, each NIC (2 ports) 64 GB/s of 2 x 50.
    from topo.fabric import nic_ports, save

    G = build("mpft", switch_ports=8, gpus=64, gpus_per_node=4, nics_per_node=4, nic_ports=2)
    assert nic_ports(G) == 2
    assert nic_ports(build("mpft", switch_ports=8, gpus=64, gpus_per_node=4, nics_per_node=4)) == 1
    path = tmp_path / "mp2.json"
    save(G, path)
    r = CliRunner().invoke(app, ["bandwidth", str(path)])
    assert r.exit_code == 0, r.output
    rows = {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in r.stdout.splitlines()
        if line.count("│") == 3
    }
    assert rows["inter-node per NIC port (of median port rate)"] == "32.00 of 50.00 GB/s (64.0%)"
    assert rows["inter-node per NIC (2 ports)"] == "64.00 of 100.00 GB/s"
    assert "inter-node per NIC (of median NIC rate)" not in rows
    d = json.loads(CliRunner().invoke(app, ["bandwidth", str(path), "--json"]).stdout)
    assert d["pair_rate_GBps"] == pytest.approx(256 / 240)
    assert d["internode_per_nic_GBps"] == pytest.approx(32.0)  # per port, as before
    assert d["nic_ports"] == 2
    assert d["internode_per_nic_all_ports_GBps"] == pytest.approx(64.0)
