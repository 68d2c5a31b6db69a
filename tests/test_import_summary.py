"""``topo import ibnetdiscover``'s summary says what the fabric's all-to-all runs between, as
``topo bandwidth`` counts it: the endpoints (CAs cabled to a switch) of a dump without GPUs, or
the GPUs given with ``--gpus-per-host`` (a fresh user's trial saw ``gpus 0`` and then 542
endpoints in ``topo bandwidth``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.formats._real import real_file
from topo.cli import app

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
