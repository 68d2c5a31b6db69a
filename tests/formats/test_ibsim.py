"""The real tools on a simulated fabric: a design written as an ibsim net file, discovered by
the real ``ibnetdiscover``, imported and validated; defects injected through ibsim's console
(``Unlink``, ``Link``) or in the net file (a cable trained at a lower speed).

The references are the design and the defects injected: the import must give the design's
counts and exact all-to-all, ``validate`` must list exactly the defects injected. Skipped where
ibsim-utils and infiniband-diags are not installed.
"""

from __future__ import annotations

import re
from pathlib import Path

import networkx as nx
import pytest

from topo.builders import build
from topo.fabric import summarize
from topo.flow import alltoall_bandwidth
from topo.flow.failures.resilience import damaged_bandwidth
from topo.flow.routing.lft import routed_lft
from topo.formats import import_ibnetdiscover, read_ibnetdiscover, write_ibnetdiscover
from topo.formats.lft import read_lft
from topo.validate import validate

from ._ibsim import need_tools, simulator
from ._lfttrace import trace_busbw
from ._real import real_file


def guid_of(text: str, name: str) -> str:
    """The node id ``write_ibnetdiscover`` gave the device described ``name``."""
    for line in text.splitlines():
        if line.startswith(("Switch", "Ca")) and f'# "{name}"' in line:
            return line.split('"')[1]
    raise KeyError(name)


def port_to(text: str, a: str, b: str) -> int:
    """The port of device ``a`` cabled to device ``b`` (both by description)."""
    ida, idb = guid_of(text, a), guid_of(text, b)
    record = next(r for r in text.split("\n\n") if f'"{ida}"' in r.splitlines()[0])
    for line in record.splitlines()[1:]:
        if f'"{idb}"' in line:
            return int(line[1 : line.index("]")])
    raise KeyError((a, b))


@pytest.fixture(scope="module")
def tools() -> None:
    need_tools()


def test_discovered_ft2_imports_as_the_design(tools: None, tmp_path: Path) -> None:
    design = build("ft2", switch_ports=8, gpus=32, gpus_per_node=2, nics_per_node=2)
    net = tmp_path / "ft2.net"
    net.write_text(write_ibnetdiscover(design))
    with simulator(net) as sim:
        dump = tmp_path / "ft2.topo"
        dump.write_text(sim.ibnetdiscover())
    G = import_ibnetdiscover(dump, gpus_per_host=2)
    a, b = summarize(G), summarize(design)
    assert (a.gpus, a.nodes, a.endpoints, a.switches, a.links) == (
        b.gpus,
        b.nodes,
        b.endpoints,
        b.switches,
        b.links,
    )
    assert G.graph["format"] == "ibnetdiscover" and G.graph["link_speeds"] == {"8xHDR": 64}
    assert alltoall_bandwidth(G).alltoall_busbw_Bps == pytest.approx(
        alltoall_bandwidth(design).alltoall_busbw_Bps, rel=1e-9
    )
    assert validate(design, import_ibnetdiscover(dump), cost=False).ok


def test_mpft_planes_discovered_one_by_one(tools: None, tmp_path: Path) -> None:
    design = build("mpft", switch_ports=8, gpus=256)
    text = write_ibnetdiscover(design)
    net = tmp_path / "mpft.net"
    net.write_text(text)
    dumps = []
    with simulator(net) as sim:
        for p in range(8):  # SIM_HOST: attach in plane p, discover that plane only
            dumps.append(tmp_path / f"plane{p}.topo")
            dumps[-1].write_text(sim.ibnetdiscover(sim_host=guid_of(text, f"p{p}/leaf0")))
    G = import_ibnetdiscover(dumps, gpus_per_host=8)
    assert G.graph["planes"] == 8 and summarize(G).gpus == 256
    assert alltoall_bandwidth(G).alltoall_busbw_Bps == pytest.approx(
        alltoall_bandwidth(design).alltoall_busbw_Bps, rel=1e-9
    )
    concatenated = tmp_path / "all.topo"
    concatenated.write_text("\n".join(d.read_text() for d in dumps))
    H = import_ibnetdiscover(concatenated, gpus_per_host=8)
    assert nx.utils.graphs_equal(nx.Graph(H.edges), nx.Graph(G.edges))


def test_defects_injected_are_the_defects_found(tools: None, tmp_path: Path) -> None:
    # 6 leaves of 4 hosts' NICs, 4 spines with 2 free ports each; 2 GPUs and 2 NICs per host
    design = build("ft2", switch_ports=8, gpus=24, gpus_per_node=2, nics_per_node=2)
    slow = design.copy()
    slow.edges["leaf1", "spine2"]["capacity"] = 25e9  # trained at 4xHDR, 200 Gb/s
    text = write_ibnetdiscover(slow)
    net = tmp_path / "ft2.net"
    # ibsim's own settings for the ports no line describes (the spare spine ports a cable is
    # re-plugged into): 8x enabled (LINKWIDTH_8x = 4) at HDR (LINKSPEEDEXT_HDR = 4), ibsim's
    # sim.h; without them ibsim refuses a link between an 8x port and a 4x one.
    net.write_text("width=4\nextspeed=4\n\n" + text)
    gid = {name: guid_of(text, name) for name in ("leaf0", "leaf2", "spine2", "spine3")}
    with simulator(net) as sim:
        sim.console(f'Unlink "{guid_of(text, "node2 mlx5_1")}"[1]')  # a dead host cable
        # leaf0's cable to spine3 plugged into spine2's free port 7
        p = port_to(text, "leaf0", "spine3")
        sim.console(
            f'Unlink "{gid["leaf0"]}"[{p}]', f'Link "{gid["leaf0"]}"[{p}] "{gid["spine2"]}"[7]'
        )
        # the cables of node0's NIC 0 (leaf0) and node4's NIC 0 (leaf2) swapped
        a, b = guid_of(text, "node0 mlx5_0"), guid_of(text, "node4 mlx5_0")
        pa, pb = port_to(text, "leaf0", "node0 mlx5_0"), port_to(text, "leaf2", "node4 mlx5_0")
        sim.console(f'Unlink "{a}"[1]', f'Unlink "{b}"[1]')
        sim.console(
            f'Link "{a}"[1] "{gid["leaf2"]}"[{pb}]', f'Link "{b}"[1] "{gid["leaf0"]}"[{pa}]'
        )
        dump = tmp_path / "asbuilt.topo"
        dump.write_text(sim.ibnetdiscover())
    r = validate(design, import_ibnetdiscover(dump))
    found = sorted((d.kind, d.design_ends, d.as_built_ends) for d in r.defects)
    assert found == sorted(
        [
            ("missing", ("leaf1", "node2/nic1"), ("leaf1",)),
            ("speed", ("leaf1", "spine2"), ("leaf1", "spine2")),
            ("miswired", ("leaf0", "spine3"), ("leaf0", "spine2")),
            ("miswired", ("leaf0", "node0/nic0"), ("leaf2", "node0/mlx5_0/p1")),
            ("miswired", ("leaf2", "node4/nic0"), ("leaf0", "node4/mlx5_0/p1")),
        ]
    ), found
    # The fabric as built, solved directly from the design's own names, is what validate says.
    G = slow.copy()
    G.remove_edges_from(
        [
            ("node2/nic1", "leaf1"),
            ("leaf0", "spine3"),
            ("node0/nic0", "leaf0"),
            ("node4/nic0", "leaf2"),
        ]
    )
    G.add_edge("leaf0", "spine2", capacity=100e9, links=2, kind="fabric")
    G.add_edge("node0/nic0", "leaf2", capacity=50e9, links=1, kind="endpoint")
    G.add_edge("node4/nic0", "leaf0", capacity=50e9, links=1, kind="endpoint")
    assert r.as_built_busbw_Bps == pytest.approx(alltoall_bandwidth(G).alltoall_busbw_Bps, rel=1e-7)


def run_opensm(sim, engine: str, out: Path) -> Path:
    """OpenSM once (``-o``) with routing engine ``engine``; its LFT dump."""
    out.mkdir()
    sim.run(
        "opensm",
        "-o",
        "-R",
        engine,
        "--dump_files_dir",
        str(out),
        "-D",
        "0x43",
        "-f",
        str(out / "opensm.log"),
    )
    return out / "opensm-lfts.dump"


@pytest.mark.parametrize("engine", ["ftree", "minhop", "updn"])
@pytest.mark.parametrize(
    "family, options",
    [
        ("ft2", {"switch_ports": 4, "gpus": 8}),  # 4 leaves, 2 spines
        ("ft3", {"switch_ports": 4}),  # 16 hosts, 4 pods
    ],
)
def test_opensm_routes(tools: None, tmp_path: Path, engine: str, family: str, options) -> None:
    need_tools("opensm")
    design = build(family, gpus_per_node=1, nics_per_node=1, **options)
    net = tmp_path / "fabric.net"
    net.write_text(write_ibnetdiscover(design))
    with simulator(net) as sim:
        lfts = run_opensm(sim, engine, tmp_path / "osm")
        dump = tmp_path / "fabric.topo"
        dump.write_text(sim.ibnetdiscover())
        fts = tmp_path / "dump_fts.txt"
        fts.write_text(sim.run("dump_fts"))
    G = read_ibnetdiscover(dump)
    expected, _ = trace_busbw(dump.read_text(), lfts.read_text())
    r = routed_lft(G, read_lft(lfts, dump, G))
    assert r.alltoall_busbw_Bps == pytest.approx(expected, rel=1e-12)
    # dump_fts reads the same tables back from the switches
    again = routed_lft(G, read_lft(fts, dump, G))
    assert again.alltoall_busbw_Bps == pytest.approx(r.alltoall_busbw_Bps, rel=1e-12)
    if engine == "ftree":  # contention-free on a full fat tree: the NIC bound, 50 GB/s
        assert r.alltoall_busbw_Bps == pytest.approx(50e9)


@pytest.mark.slow
def test_mpft_16384_gpus_round_trip(tools: None, tmp_path: Path) -> None:
    # DeepSeek-V3's MPFT: 8 planes of 64-port switches, 2,048 servers of 8 GPUs (ISCA 2025,
    # Table 3: 16,384 endpoints, 768 switches, 16,384 links); 17,152 devices in one ibsim.
    design = build("mpft", gpus=16384)
    text = write_ibnetdiscover(design)
    net = tmp_path / "mpft.net"
    net.write_text(text)
    dumps = []
    with simulator(net, "-N", "20000", "-S", "1024", "-P", "80000") as sim:
        for p in range(8):
            dumps.append(tmp_path / f"plane{p}.topo")
            dumps[-1].write_text(sim.ibnetdiscover(sim_host=guid_of(text, f"p{p}/leaf0")))
    G = import_ibnetdiscover(dumps, gpus_per_host=8)
    s = summarize(G)
    assert (s.gpus, s.nodes, s.endpoints, s.switches, s.links, s.planes) == (
        16384,
        2048,
        16384,
        768,
        16384,
        8,
    )
    assert alltoall_bandwidth(G).alltoall_busbw_Bps == pytest.approx(
        alltoall_bandwidth(design).alltoall_busbw_Bps, rel=1e-9
    )
    report = validate(design, import_ibnetdiscover(dumps), cost=False)
    assert report.ok and report.switches_by_name == 768
    assert report.as_built_busbw_Bps == pytest.approx(report.design_busbw_Bps, rel=1e-9)


def _two_man_page_fabrics(tmp_path: Path, joined: bool) -> tuple[Path, str, str]:
    """A net file of two copies of ``man ibnetdiscover``'s fabric (an ISR9024 and an SW-6IB4
    Voltaire switch, 4 hosts' CAs); the copy's ids start ``S-01``/``H-01``. ``joined``: a
    cable between the two ISR9024s (free ports 1) makes one subnet; else two planes."""
    text = real_file("ibnetdiscover", "ibtopotool_1.topo").read_text()
    # ibsim takes a device's GUID from the dump's switchguid=/caguid= lines: the copy has
    # none, so ibsim numbers its devices itself (from 0x100000 and 0x200000).
    copy = re.sub(r"(?m)^\w+=.*\n", "", text).replace('"S-00', '"S-01').replace('"H-00', '"H-01')
    a, b = "S-005442ba00003080", "S-015442ba00003080"
    if joined:
        text = text.replace(
            f'"{a}"         # "ISR9024 Voltaire" base port 0 lid 6 lmc 0\n',
            f'"{a}"         # "ISR9024 Voltaire" base port 0 lid 6 lmc 0\n'
            f'[1]     "{b}"[1]         # "ISR9024 Voltaire" lid 7 4xSDR\n',
        )
        copy = copy.replace(
            f'"{b}"         # "ISR9024 Voltaire" base port 0 lid 6 lmc 0\n',
            f'"{b}"         # "ISR9024 Voltaire" base port 0 lid 6 lmc 0\n'
            f'[1]     "{a}"[1]         # "ISR9024 Voltaire" lid 6 4xSDR\n',
        )
    both = text + "\n" + copy
    # Host names for the CAs (the man page's are all the default "MT23108 InfiniHost ..."),
    # in the Ca headers, where ibsim reads a node's description: host0 ... host7.
    hosts = iter(range(8))
    both = re.sub(
        r'(?m)^(Ca\s+\d+\s+"H-[0-9a-f]+"\s+# )"[^"]*"',
        lambda m: f'{m[1]}"host{next(hosts)} HCA-1"',
        both,
    )
    net = tmp_path / "two.net"
    net.write_text(both)
    return net, a, b


def test_switches_sharing_a_description_are_named_by_guid(tools: None, tmp_path: Path) -> None:
    # The fresh-user trial: two planes of the same switch models, discovered one by one by the
    # real ibnetdiscover. Every description is shared by two switches, so each is named by its
    # ibnetdiscover id S-<guid> (the GUID ibsim gave it), as when the dumps are concatenated.
    net, a, b = _two_man_page_fabrics(tmp_path, joined=False)
    dumps = [tmp_path / "plane0.topo", tmp_path / "plane1.topo"]
    with simulator(net) as sim:
        for dump, host in zip(dumps, (a, b), strict=True):
            dump.write_text(sim.ibnetdiscover(sim_host=host))
    ids = {}  # the S-<guid> id and description of each switch record of each dump
    for dump in dumps:
        for line in dump.read_text().splitlines():
            if line.startswith("Switch"):
                ids[line.split('"')[1]] = line.split('"')[3]
    assert sorted(ids.values()) == ["ISR9024 Voltaire"] * 2 + ["SW-6IB4 Voltaire"] * 2
    G = import_ibnetdiscover(dumps)
    switches = {v: d for v, d in G.nodes(data=True) if d["kind"] == "switch"}
    assert set(switches) == set(ids)
    for v, d in switches.items():
        assert v == f"S-{d['guid']}" and d["description"] == ids[v]
    concatenated = tmp_path / "all.topo"
    concatenated.write_text("\n".join(d.read_text() for d in dumps))
    H = import_ibnetdiscover(concatenated)
    assert nx.utils.graphs_equal(nx.Graph(H.edges), nx.Graph(G.edges))


def test_opensm_tables_follow_guid_names(tools: None, tmp_path: Path) -> None:
    # One subnet of the two copies joined (all four switches carry hosts: a direct network,
    # which --routing lft's up/down model refuses, so the tables are checked, not routed).
    need_tools("opensm")
    net, a, _ = _two_man_page_fabrics(tmp_path, joined=True)
    with simulator(net) as sim:
        lfts = run_opensm(sim, "minhop", tmp_path / "osm")
        dump = tmp_path / "joined.topo"
        dump.write_text(sim.ibnetdiscover(sim_host=a))
    G = read_ibnetdiscover(dump)
    names = sorted(v for v, k in G.nodes(data="kind") if k == "switch")
    assert len(names) == 4 and all(v == f"S-{G.nodes[v]['guid']}" for v in names)
    # Each table is matched to its switch by GUID (OpenSM's 'guid 0x...'), whatever its name:
    # every switch has one, and port 1 of each ISR9024 is the cable added between them.
    tables = read_lft(lfts, dump, G)
    assert sorted(tables.out_port) == names
    isr = sorted(v for v in names if G.nodes[v]["description"] == "ISR9024 Voltaire")
    assert tables.ports[isr[0]][1] == (isr[1], 0) and tables.ports[isr[1]][1] == (isr[0], 0)
    nics = [v for v, k in G.nodes(data="kind") if k == "nic"]
    assert len(nics) == 10 and all(v in tables.lid_of for v in nics)
    # --fail by that name: an SW-6IB4 carries 2 of the 10 CA ports (its ports 6 and 4 in the
    # man page) and nothing else hangs on it, so failing it cuts exactly those 2 off.
    sw = next(v for v in names if G.nodes[v]["description"] == "SW-6IB4 Voltaire")
    damaged = damaged_bandwidth(G, named=[sw])
    assert damaged.failures.switches == (sw,) and len(damaged.failures.disconnected) == 2
