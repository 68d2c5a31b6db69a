"""Tests of topo.formats.hosts: CAs grouped into servers, multi-plane dumps as one fabric.

The reference of an imported design is the design itself: a built fabric written in
ibnetdiscover format and imported with its servers must have the design's counts and the
design's exact all-to-all (both solved from their own graphs).

``topo import ibnetdiscover``'s summary says what the fabric's all-to-all runs between, as
``topo bandwidth`` counts it: the endpoints (CAs cabled to a switch) of a dump without GPUs, or
the GPUs given with ``--gpus-per-host`` (never ``gpus 0`` beside 542 endpoints). The reference
is the real GB200 dump's Ca records, counted with a regular expression (not topo's reader).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.formats._real import real_file
from topo.builders import build
from topo.cli import app
from topo.errors import FormatError, SpecError
from topo.fabric import check_schema, load, summarize
from topo.flow import alltoall_bandwidth
from topo.formats import (
    add_hosts,
    import_ibnetdiscover,
    read_ibnetdiscover,
    write_ibnetdiscover,
)
from topo.formats.hosts import host_of


def mpft_files(tmp_path: Path) -> tuple:
    G = build("mpft", switch_ports=8, gpus=256)
    whole = tmp_path / "all.net"
    whole.write_text(write_ibnetdiscover(G))
    planes = []
    for p in range(8):
        planes.append(tmp_path / f"plane{p}.net")
        planes[-1].write_text(write_ibnetdiscover(G, plane=p))
    return G, whole, planes


def test_an_mpft_without_hosts_is_eight_planes_of_nics(tmp_path: Path) -> None:
    _, whole, _ = mpft_files(tmp_path)
    G = read_ibnetdiscover(whole)
    assert G.graph["planes"] == 8 and summarize(G).gpus == 0


def test_hosts_make_the_design_again(tmp_path: Path) -> None:
    design, whole, planes = mpft_files(tmp_path)
    for source in (whole, planes):  # concatenated, or one file per plane
        G = import_ibnetdiscover(source, gpus_per_host=8, nvlink_GBps=200, pcie_GBps=64)
        check_schema(G)
        a, b = summarize(G), summarize(design)
        assert (a.gpus, a.nodes, a.endpoints, a.switches, a.links, a.planes) == (
            b.gpus,
            b.nodes,
            b.endpoints,
            b.switches,
            b.links,
            b.planes,
        )
        # GPU i of a host reaches its NIC mlx5_i (8 GPUs, 8 NICs), as in the design.
        assert set(G.adj["node5/gpu3"]) == {"node5/nvswitch", "node5/mlx5_3/p1"}
        assert G.edges["node5/gpu3", "node5/mlx5_3/p1"]["capacity"] == 64e9
        assert G.edges["node5/gpu3", "node5/nvswitch"]["capacity"] == 200e9
        assert G.graph["gpus_per_node"] == 8
    built = alltoall_bandwidth(design).alltoall_busbw_Bps
    imported = alltoall_bandwidth(G).alltoall_busbw_Bps
    assert imported == pytest.approx(built, rel=1e-9)


def test_fewer_nics_than_gpus_share_them_as_the_builder_does(tmp_path: Path) -> None:
    design = build("mrft", switch_ports=8, gpus=32, gpus_per_node=8, nics_per_node=4)
    path = tmp_path / "mrft.net"
    path.write_text(write_ibnetdiscover(design))
    G = import_ibnetdiscover(path, gpus_per_host=8)
    # GPU i -> NIC i*4//8: GPUs 6 and 7 on mlx5_3
    assert "node1/mlx5_3/p1" in G.adj["node1/gpu6"] and "node1/mlx5_3/p1" in G.adj["node1/gpu7"]
    assert alltoall_bandwidth(G).alltoall_busbw_Bps == pytest.approx(
        alltoall_bandwidth(design).alltoall_busbw_Bps, rel=1e-9
    )


@pytest.mark.parametrize("gpus", [1, 7])
def test_more_nics_than_gpus_is_refused_as_the_builder_does(tmp_path: Path, gpus: int) -> None:
    # 8 NICs per server: with fewer GPUs a NIC had no GPU behind it, and topo bandwidth died
    # with "ValueError: arc capacities must be positive" (topo build refuses the same shape).
    design = build("mrft", gpus=128)
    path = tmp_path / "m.net"
    path.write_text(write_ibnetdiscover(design))
    with pytest.raises(
        SpecError,
        match=rf"^gpus_per_host {gpus}: host 'node0' of .*m\.net has 8 NICs, more than its "
        rf"{gpus} GPUs \(16 hosts do\); each NIC needs a GPU behind it: give gpus_per_host 8 "
        "or more$",
    ):
        import_ibnetdiscover(path, gpus_per_host=gpus)
    assert summarize(import_ibnetdiscover(path, gpus_per_host=8)).gpus == 128


def test_host_regex(tmp_path: Path) -> None:
    text = (
        'Switch 4 "S-0000000000000001" # "leaf" enhanced port 0 lid 1 lmc 0\n'
        '[1] "H-0000000000000011"[1] # "rack1-n1-hca0" lid 2 4xHDR\n'
        '[2] "H-0000000000000012"[1] # "rack1-n1-hca1" lid 3 4xHDR\n'
        '[3] "H-0000000000000013"[1] # "rack1-n2-hca0" lid 4 4xHDR\n\n'
    )
    for i, (guid, desc) in enumerate(
        [("11", "rack1-n1-hca0"), ("12", "rack1-n1-hca1"), ("13", "rack1-n2-hca0")], 1
    ):
        text += (
            f'Ca 1 "H-00000000000000{guid}" # "{desc}"\n'
            f'[1](00000000000000{guid}) "S-0000000000000001"[{i}] # lid {i + 1} lmc 0 '
            f'"leaf" lid 1 4xHDR\n\n'
        )
    path = tmp_path / "regex.topo"
    path.write_text(text)
    G = import_ibnetdiscover(path, gpus_per_host=2, host_regex=r"(?P<host>rack\d+-n\d+)")
    assert summarize(G).nodes == 2 and summarize(G).gpus == 4
    assert G.nodes["H-0000000000000012/p1"]["node"] == "rack1-n1"
    with pytest.raises(FormatError, match=r"does not match its description 'rack1-n1-hca0'"):
        import_ibnetdiscover(path, gpus_per_host=2, host_regex=r"^node\d+")
    with pytest.raises(SpecError, match="not a regular expression"):
        import_ibnetdiscover(path, gpus_per_host=2, host_regex=r"(")
    with pytest.raises(SpecError, match="^host_regex groups CAs into servers: give gpus_per_host"):
        import_ibnetdiscover(path, host_regex=r"rack")


def test_host_of() -> None:
    assert host_of("gpu017 mlx5_3", r"^(\S+)\s") == "gpu017"
    assert host_of("gpu017 mlx5_3", r"gpu\d+") == "gpu017"
    assert host_of("gpu017 mlx5_3", r"^node") is None


def test_bad_host_arguments(tmp_path: Path) -> None:
    _, whole, planes = mpft_files(tmp_path)
    G = read_ibnetdiscover(whole)
    with pytest.raises(SpecError, match="from 1 to 1024, got 0"):
        add_hosts(G, 0, nvlink_GBps=200, pcie_GBps=64)
    with pytest.raises(SpecError, match="^pcie_GBps must be a number of GB/s"):
        add_hosts(G, 8, nvlink_GBps=200, pcie_GBps=-1)
    H = add_hosts(G, 8, nvlink_GBps=200, pcie_GBps=64)
    with pytest.raises(SpecError, match="already has GPUs"):
        add_hosts(H, 8, nvlink_GBps=200, pcie_GBps=64)
    with pytest.raises(FormatError, match="is also in .*plane0.net: each dump must be a different"):
        import_ibnetdiscover([planes[0], planes[0]])


def test_cli_import_with_hosts_then_bandwidth(tmp_path: Path) -> None:
    design, _, planes = mpft_files(tmp_path)
    out = tmp_path / "asbuilt.json"
    runner = CliRunner()
    r = runner.invoke(
        app,
        [
            "import",
            "ibnetdiscover",
            *map(str, planes),
            "--gpus-per-host",
            "8",
            "--pcie-GBps",
            "32",
            "-o",
            str(out),
        ],
    )
    assert r.exit_code == 0, r.output
    G = load(out)
    assert summarize(G).gpus == 256 and G.graph["pcie_GBps"] == 32.0
    assert G.edges["node0/gpu0", "node0/mlx5_0/p1"]["capacity"] == 32e9
    r = runner.invoke(app, ["import", "ibnetdiscover", str(planes[0]), "--host-regex", "x"])
    assert r.exit_code == 1 and "give --gpus-per-host too" in r.output


# -- topo import ibnetdiscover's summary: what the fabric's all-to-all runs between --------

GB200 = ("ibnetdiscover", "topograph_dgx_gb200_ndr_superpod.out")


def run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def host_cas(dump: Path) -> dict[str, int]:
    """Host -> its CAs, read from the dump's Ca records. SHARP aggregation nodes are no
    host's; a CA with the adapter's default description (``MT4129 ConnectX7 Mellanox
    Technologies``: no hostname, PROVENANCE.md) is a server of its own, by its GUID. Every Ca
    record of this dump has its one port cabled."""
    hosts: dict[str, int] = {}
    records = re.findall(r'^Ca\s+\d+\s+"H-([0-9a-f]+)"\s+#\s+"([^"]*)"', dump.read_text(), re.M)
    for guid, desc in records:
        if "Aggregation Node" in desc:
            continue
        host = guid if desc.startswith("MT4129 ") else desc.split()[0]
        hosts[host] = hosts.get(host, 0) + 1
    return hosts


@pytest.fixture(scope="module")
def gb200(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int], Path]:
    dump = real_file(*GB200)
    return dump, host_cas(dump), tmp_path_factory.mktemp("gb200")


def test_without_gpus_the_terminals_are_the_endpoints(gb200) -> None:
    dump, hosts, folder = gb200
    out = folder / "f.json"
    r = run("import", "ibnetdiscover", dump, "--json", "-o", out)
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    cas = sum(hosts.values())
    assert cas == 542
    assert (s["terminal"], s["terminals"]) == ("endpoint", cas)
    assert s["gpus"] == 0 and s["endpoints"] == cas  # the existing keys keep their values
    b = json.loads(run("bandwidth", out, "--json").stdout)
    assert (b["terminal"], b["gpus"]) == (s["terminal"], s["terminals"])
    table = run("import", "ibnetdiscover", dump).stdout
    assert re.search(r"terminals\s+│\s+542 endpoints \(CAs cabled to a switch\)", table)
    assert re.search(r"gpus\s+│\s+none \(--gpus-per-host G gives each host G\)", table)
    assert not re.search(r"gpus\s+│\s+0 │", table)


def test_with_gpus_per_host_the_terminals_are_the_gpus(gb200) -> None:
    dump, hosts, folder = gb200
    out = folder / "hosted.json"
    r = run("import", "ibnetdiscover", dump, "--gpus-per-host", 4, "--json", "-o", out)
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    # 122 named hosts and 69 CAs without a hostname: 191 servers of 4 GPUs
    assert len(hosts) == s["nodes"] == 191
    assert (s["terminal"], s["terminals"]) == ("gpu", 4 * len(hosts))
    assert s["gpus"] == s["terminals"]
    b = json.loads(run("bandwidth", out, "--json").stdout)
    assert (b["terminal"], b["gpus"]) == (s["terminal"], s["terminals"])
    table = run("import", "ibnetdiscover", dump, "--gpus-per-host", 4).stdout
    assert re.search(r"terminals\s+│\s+764 GPUs", table)


def test_server_rates_need_gpus_per_host(tmp_path: Path) -> None:
    dump = real_file("ibnetdiscover", "ibtopotool_2.topo")  # 1 switch + 2 CAs
    r = run("import", "ibnetdiscover", dump, "--nvlink-GBps", 100, "--pcie-GBps", 32)
    assert r.exit_code == 1 and "Traceback" not in r.output
    (line,) = r.stderr.strip().splitlines()
    assert line == (
        "topo: error: --nvlink-GBps, --pcie-GBps apply to the servers of --gpus-per-host G: "
        "without it the fabric has no GPUs, so no NVLink or PCIe links"
    )
    # Why: without servers the fabric has no nvlink or pcie edge for the rates to set
    out = tmp_path / "f.json"
    assert run("import", "ibnetdiscover", dump, "-o", out).exit_code == 0
    from topo.fabric import load

    G = load(out)
    assert {k for *_, k in G.edges(data="kind")} == {"endpoint"}
    # with servers they are the servers' links: 100 GB/s NVLink, 32 GB/s PCIe per direction
    r = run("import", "ibnetdiscover", dump, "--gpus-per-host", 1, "--nvlink-GBps", 100,
            "--pcie-GBps", 32, "-o", out)  # fmt: skip
    assert r.exit_code == 0, r.output
    H = load(out)
    rates = {d["kind"]: d["capacity"] for _, _, d in H.edges(data=True)}
    assert rates["pcie"] == 32e9 and rates["nvlink"] == 100e9
