"""The real tools on a simulated fabric: a design written as an ibsim net file, discovered by
the real ``ibnetdiscover``, imported and validated; defects injected through ibsim's console
(``Unlink``, ``Link``) or in the net file (a cable trained at a lower speed).

The references are the design and the defects injected: the import must give the design's
counts and exact all-to-all, ``validate`` must list exactly the defects injected. Skipped where
ibsim-utils and infiniband-diags are not installed.
"""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest

from topo.builders import build
from topo.fabric import summarize
from topo.flow import alltoall_bandwidth
from topo.flow.routing.lft import routed_lft
from topo.formats import import_ibnetdiscover, read_ibnetdiscover, write_ibnetdiscover
from topo.formats.lft import read_lft
from topo.validate import validate

from ._ibsim import need_tools, simulator
from ._lfttrace import trace_busbw


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
