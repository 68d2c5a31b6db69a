"""NVLink domains larger than a host (``--nvlink-domain-regex``): the trays of a GB200 NVL72
rack joined by one NVSwitch, each GPU and NIC keeping its tray.

References: the real GB200 dump's own counts (8 racks of trays ``aNN-p1-dgx-RR-cTT``, 4 HCAs
per tray, rack 01's rail-3 leaf absent so its 10 trays have 3 HCAs), the NIC cut of each
domain worked by hand, and the textbook all-to-all LP (``method="general"``) on a small case.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import networkx as nx
import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.errors import SpecError
from topo.fabric import load, save, servers
from topo.flow import alltoall_bandwidth
from topo.formats import add_hosts, import_ibnetdiscover, read_ibnetdiscover, write_ibnetdiscover
from topo.formats.nvlink_domains import domain_of, nvlink_domains

from ._real import real_file

GB200 = ("ibnetdiscover", "topograph_dgx_gb200_ndr_superpod.out")
RACK = r"-dgx-(\d+)-c\d+$"  # a05-p1-dgx-RR-cTT: the rack RR is the NVLink domain


def test_domain_of_takes_the_named_group_else_group_one() -> None:
    assert domain_of("a05-p1-dgx-01-c03", RACK) == "01"
    assert domain_of("a05-p1-dgx-01-c03", r"(?P<x>a\d+)-p1-dgx-(?P<domain>\d+)") == "01"
    assert domain_of("a05-p1-dgx-01-c03", r"dgx-\d+") == "dgx-01"
    assert domain_of("ubuntu", RACK) is None


def test_hosts_the_regex_misses_are_a_domain_each() -> None:
    got = nvlink_domains(["r2-c1", "r1-c2", "login", "r1-c1"], r"^(r\d+)-c")
    assert got == {"login": ["login"], "r1": ["r1-c1", "r1-c2"], "r2": ["r2-c1"]}
    with pytest.raises(SpecError, match="matches none of the 2 hosts"):
        nvlink_domains(["a", "b"], r"^r\d")
    with pytest.raises(SpecError, match="not a regular expression"):
        nvlink_domains(["a"], r"(")
    with pytest.raises(SpecError, match="also a host it does not match"):
        nvlink_domains(["r1-c1", "r1"], r"^(r\d+)-c")


def test_the_gb200_dump_as_racks_of_trays() -> None:
    G = import_ibnetdiscover(
        real_file(*GB200), gpus_per_host=4, nvlink_GBps=900, nvlink_domain_regex=RACK
    )
    # 119 named trays in 8 racks (10, 11, 18, 17, 18, 15, 16, 14 trays), and 72 hosts the
    # expression does not match (69 CAs with no hostname, a UFM host, 'ubuntu', 'localhost').
    assert G.graph["hosts_outside_nvlink_domains"] == 72
    by = servers(G)
    assert len(by) == 8 + 72
    racks = {"01": 10, "02": 11, "03": 18, "04": 17, "05": 18, "06": 15, "07": 16, "08": 14}
    for rack, trays in racks.items():
        gpus = [v for v in by[rack] if G.nodes[v]["kind"] == "gpu"]
        assert len(gpus) == 4 * trays
        assert len({G.nodes[v]["host"] for v in gpus}) == trays
        assert sorted(G.nodes[v]["index"] for v in gpus) == list(range(4 * trays))
        (nvswitch,) = [v for v in by[rack] if G.nodes[v]["kind"] == "nvswitch"]
        assert all(G.edges[g, nvswitch]["capacity"] == 900e9 for g in gpus)
    # A tray's GPU keeps its tray; GPU j reaches NIC j*m//4 of its own tray's m HCAs.
    g = G.nodes["a05-p1-dgx-01-c03/gpu3"]
    assert (g["node"], g["host"]) == ("01", "a05-p1-dgx-01-c03")
    nic = next(w for w in G["a05-p1-dgx-01-c03/gpu3"] if G.nodes[w]["kind"] == "nic")
    assert G.nodes[nic]["host"] == "a05-p1-dgx-01-c03"
    assert Counter(G.nodes[w]["host"] for w in by["01"] if G.nodes[w]["kind"] == "nic") == {
        f"a05-p1-dgx-01-c{t:02d}": 3 for t in (1, 3, 4, 9, 12, 13, 14, 15, 17, 18)
    }
    # A host outside every domain is its own server, its node its host.
    alone = G.nodes["ubuntu/gpu0"]
    assert (alone["node"], alone["host"]) == ("ubuntu", "ubuntu")


def named_trays_only() -> nx.Graph:
    """The GB200 dump without the CAs of hosts outside the racks (no hostname, UFM, ...)."""
    G = read_ibnetdiscover(real_file(*GB200))
    rx = re.compile(RACK)
    G.remove_nodes_from(
        [v for v, d in G.nodes(data=True) if d["kind"] == "nic" and not rx.search(d["node"])]
    )
    return G


def test_gb200_alltoall_rides_nvlink_inside_a_rack(tmp_path: Path) -> None:
    G = named_trays_only()
    N = 4 * 119  # GPUs
    # One NVSwitch per tray: a tray's 4 GPUs send to N - 4 peers; the 3-HCA trays of rack 01
    # (its rail-3 leaf is absent) bind: 4 (N - 4) r = 3 x 50 GB/s.
    per_tray = alltoall_bandwidth(add_hosts(G, 4, nvlink_GBps=900, pcie_GBps=64))
    assert per_tray.pair_rate_Bps / 1e9 == pytest.approx(150 / (4 * (N - 4)), rel=1e-9)
    # One NVLink domain per rack: rack 01's 40 GPUs reach 39 peers over NVLink and the other
    # N - 40 over its 30 HCAs: 40 (N - 40) r = 30 x 50 GB/s, 8.3% more. (The other racks'
    # cuts are looser: rack 03, 72 GPUs on 67 leaf uplinks, 67 x 50 / (72 x 404) = 0.115.)
    H = add_hosts(G, 4, nvlink_GBps=900, pcie_GBps=64, nvlink_domain_regex=RACK)
    save(H, tmp_path / "nvl.json")
    per_rack = alltoall_bandwidth(load(tmp_path / "nvl.json"))
    assert per_rack.pair_rate_Bps / 1e9 == pytest.approx(1500 / (40 * (N - 40)), rel=1e-9)
    # (rack 01's cut is met: its 30 HCA cables are full both ways in every optimal flow)
    assert per_rack.bottleneck_tiers == {"leaf->nic": 30, "nic->leaf": 30}


def test_the_whole_dump_is_bound_by_its_hosts_without_a_name() -> None:
    # Each CA with no hostname is a host of its own: 4 GPUs on one 50 GB/s HCA, whatever the
    # racks are: 4 (N - 4) r = 50 GB/s with N = 764 GPUs, with or without domains.
    path = real_file(*GB200)
    for regex in (None, RACK):
        G = import_ibnetdiscover(path, gpus_per_host=4, nvlink_GBps=900, nvlink_domain_regex=regex)
        r = alltoall_bandwidth(G)
        assert r.gpus == 764
        assert r.pair_rate_Bps / 1e9 == pytest.approx(50 / (4 * 760), rel=1e-9)


def small_racks(tmp_path: Path) -> Path:
    """A 32-GPU FT2 (8-port switches: 8 leaves of 2 hosts of 2 NICs) whose 16 hosts are
    renamed ``r{n // 4}-c{n % 4}``: racks of 4 hosts on two leaves each."""
    text = write_ibnetdiscover(build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2))
    text = re.sub(r'"node(\d+) ', lambda m: f'"r{int(m[1]) // 4}-c{int(m[1]) % 4} ', text)
    path = tmp_path / "racks.net"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("nvlink", "hand"), [(900.0, 400 / (8 * 24)), (10.0, None)])
def test_small_racks_against_the_general_lp(tmp_path: Path, nvlink: float, hand: float) -> None:
    G = import_ibnetdiscover(
        small_racks(tmp_path),
        gpus_per_host=2,
        nvlink_GBps=nvlink,
        nvlink_domain_regex=r"^(r\d+)-c",
    )
    assert len(servers(G)) == 4
    auto = alltoall_bandwidth(G)
    general = alltoall_bandwidth(G, method="general")
    assert auto.pair_rate_Bps == pytest.approx(general.pair_rate_Bps, rel=1e-6)
    if hand is not None:  # a rack's 8 GPUs to 24 peers over its 8 NICs: 8 x 24 r = 8 x 50
        assert auto.pair_rate_Bps / 1e9 == pytest.approx(hand, rel=1e-9)
    # One NVSwitch per host: 2 GPUs to 30 peers over 2 NICs, 2 x 30 r = 2 x 50.
    trays = alltoall_bandwidth(import_ibnetdiscover(small_racks(tmp_path), gpus_per_host=2))
    assert trays.pair_rate_Bps / 1e9 == pytest.approx(100 / 60, rel=1e-9)


def test_cli_import_with_domains(tmp_path: Path) -> None:
    runner = CliRunner()
    net = small_racks(tmp_path)
    base = ["import", "ibnetdiscover", str(net)]
    r = runner.invoke(
        app, [*base, "--gpus-per-host", "2", "--nvlink-domain-regex", r"^(r[0-2])-c", "--json"]
    )
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    # r0, r1, r2 are racks of 4 hosts; the 4 hosts of r3 stay a domain each.
    assert (got["hosts"], got["nvlink_domains"], got["hosts_outside_nvlink_domains"]) == (16, 7, 4)
    refused = [
        (["--nvlink-domain-regex", "r"], "give --gpus-per-host too"),
        (["--gpus-per-host", "2", "--nvlink-domain-regex", "("], "not a regular expression"),
        (["--gpus-per-host", "2", "--nvlink-domain-regex", "^x"], "matches none of the 16 hosts"),
    ]
    for extra, message in refused:
        r = runner.invoke(app, [*base, *extra])
        assert r.exit_code == 1 and message in r.output, r.output
        assert len(r.output.strip().splitlines()) == 1 and "Traceback" not in r.output


def test_a_host_that_is_not_a_name_is_refused_on_load(tmp_path: Path) -> None:
    from topo.errors import FormatError

    G = import_ibnetdiscover(small_racks(tmp_path), gpus_per_host=2, nvlink_domain_regex=r"^(r\d)")
    G.nodes["r0-c0/gpu0"]["host"] = [1]
    save(G, tmp_path / "bad.json")
    with pytest.raises(FormatError, match="'host' must be a string or an integer"):
        load(tmp_path / "bad.json")


@pytest.mark.parametrize("domains", [False, True])
def test_the_gb200_dump_with_fewer_gpus_than_nics_is_refused_at_import(
    tmp_path: Path, domains: bool
) -> None:
    # --gpus-per-host 2 on trays of 4 HCAs (3 in rack 01) left HCAs without a GPU, and
    # topo bandwidth died with "ValueError: arc capacities must be positive". The count of
    # hosts with more than 2 NICs is taken from the dump's NICs by their node.
    path = real_file(*GB200)
    nics = Counter(
        d["node"] for _, d in read_ibnetdiscover(path).nodes(data=True) if d["kind"] == "nic"
    )
    over = sorted(h for h, m in nics.items() if m > 2)
    assert len(over) == 120 and max(nics.values()) == 4
    extra = ["--nvlink-domain-regex", RACK] if domains else []
    out = tmp_path / "gb2.json"
    r = CliRunner().invoke(
        app, ["import", "ibnetdiscover", str(path), "--gpus-per-host", "2", *extra, "-o", str(out)]
    )
    assert r.exit_code == 1 and not out.exists(), r.output
    assert r.output.strip().splitlines() == [
        f"topo: error: --gpus-per-host 2: host 'a05-p1-dgx-01-c01' of {path} has 3 NICs, more "
        "than its 2 GPUs (120 hosts do); each NIC needs a GPU behind it: give --gpus-per-host 4 "
        "or more"
    ]
