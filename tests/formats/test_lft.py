"""Tests of topo.formats.lft and topo.flow.routing.lft: ``--routing lft`` against hand-written
forwarding tables, held to a closed form and to an independent trace of the same tables
(tests/formats/_lfttrace.py)."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.errors import FormatError, InfeasibleError
from topo.flow.routing import routed_alltoall
from topo.flow.routing.lft import routed_lft
from topo.formats import import_ibnetdiscover, read_ibnetdiscover, write_ibnetdiscover
from topo.formats.lft import read_lft

from ._lfttrace import parse_dump, trace_busbw


def lft_text(dump: str, rule) -> str:
    """opensm-lfts.dump text for the fabric of ``dump``: at each switch, LID of each host port
    -> the port ``rule(switch description, its ports, destination description)`` picks."""
    cable, port_guid, desc = parse_dump(dump)
    hosts = sorted((k for k in cable if k[0].startswith("H-")), key=lambda k: desc[k[0]])
    lids = {h: 100 + i for i, h in enumerate(hosts)}
    guid_of = {v: g for g, v in port_guid.items()}
    out = []
    for sw in sorted(d for d in desc if d.startswith("S-")):
        ports = {p: (far, q) for (dev, p), (far, q, _) in cable.items() if dev == sw}
        out.append(
            f"Unicast lids [0x0-0x{max(lids.values()):x}] of switch Lid 1 guid 0x{sw[2:]} "
            f"({desc[sw]}):"
        )
        out.append("  Lid  Out   Destination")
        out.append("       Port     Info ")
        for h in hosts:
            direct = [p for p, f in ports.items() if f == h]
            p = (
                direct[0]
                if direct
                else rule(desc[sw], {p: desc[f[0]] for p, f in ports.items()}, h, desc)
            )
            out.append(
                f"0x{lids[h]:04x} {p:03d} : (Channel Adapter portguid 0x{guid_of[h]}: "
                f"'{desc[h[0]]}')"
            )
        out.append(f"{len(hosts)} valid lids dumped ")
    return "\n".join(out) + "\n"


def leaf_of(h, desc, dump) -> str:
    cable, _, _ = parse_dump(dump)
    return desc[cable[h][0]]


@pytest.fixture()
def ft2(tmp_path: Path) -> tuple[Path, str, nx.Graph]:
    # 4 leaves of 2 host ports, 2 spines, one cable each: 8 hosts of 1 GPU and 1 NIC
    G = build("ft2", switch_ports=4, gpus=8, gpus_per_node=1, nics_per_node=1)
    text = write_ibnetdiscover(G)
    path = tmp_path / "ft2.topo"
    path.write_text(text)
    return path, text, read_ibnetdiscover(path)


def test_every_leaf_through_spine0(tmp_path: Path, ft2) -> None:
    dump, text, G = ft2

    def up_spine0(sw, ports, h, desc):
        if sw.startswith("leaf"):
            return next(p for p, d in ports.items() if d == "spine0")
        return next(p for p, d in ports.items() if d == leaf_of(h, desc, text))

    lft = tmp_path / "opensm-lfts.dump"
    lft.write_text(lft_text(text, up_spine0))
    r = routed_lft(G, read_lft(lft, dump, G))
    # each leaf's cable to spine0 carries its 2 hosts x 6 remote hosts = 12 pairs:
    # lambda = 50 GB/s / 12, busbw = lambda x 7
    assert r.alltoall_busbw_Bps == pytest.approx(50e9 / 12 * 7)
    assert r.pair_rate_Bps == pytest.approx(50e9 / 12)
    assert r.bottleneck_tiers == {"leaf->spine": 4, "spine->leaf": 4}
    assert r.alltoall_busbw_Bps == pytest.approx(trace_busbw(text, lft.read_text())[0])


def test_destination_mod_two_against_the_trace(tmp_path: Path, ft2) -> None:
    dump, text, G = ft2

    def by_destination(sw, ports, h, desc):
        if sw.startswith("leaf"):
            host = int(desc[h[0]].split()[0].removeprefix("node"))
            return next(p for p, d in ports.items() if d == f"spine{(host // 3) % 2}")
        return next(p for p, d in ports.items() if d == leaf_of(h, desc, text))

    lft = tmp_path / "lfts.txt"
    lft.write_text(lft_text(text, by_destination))
    r = routed_lft(G, read_lft(lft, dump, G))
    expected, load = trace_busbw(text, lft.read_text())
    assert r.alltoall_busbw_Bps == pytest.approx(expected)
    assert r.alltoall_busbw_Bps < 50e9  # the uneven split costs against the NIC bound


def test_cli_routing_lft(tmp_path: Path, ft2) -> None:
    dump, text, G = ft2
    lft = tmp_path / "lfts.txt"
    lft.write_text(
        lft_text(
            text,
            lambda sw, ports, h, desc: next(
                p
                for p, d in ports.items()
                if d == ("spine1" if sw.startswith("leaf") else leaf_of(h, desc, text))
            ),
        )
    )
    runner = CliRunner()
    r = runner.invoke(
        app, ["bandwidth", str(dump), "--routing", "lft", "--lft", str(lft), "--json"]
    )
    assert r.exit_code == 0, r.output
    assert '"routing": "lft"' in r.stdout
    assert '"alltoall_busbw_GBps": 29.16666' in r.stdout  # 50 / 12 x 7, as above
    r = runner.invoke(app, ["bandwidth", str(dump), "--routing", "lft"])
    assert r.exit_code == 1 and "--lft FILE and --routing lft go together" in r.output


def test_bad_tables(tmp_path: Path, ft2) -> None:
    dump, text, G = ft2
    bad = tmp_path / "bad.txt"
    bad.write_text("Unicast lids [0x0-0x1] of switch Lid 1 guid 0x1 (x):\nhello\n")
    with pytest.raises(FormatError, match=r"bad.txt:2: expected 'Unicast lids"):
        read_lft(bad, dump, G)
    bad.write_text("Unicast lids [0x0-0x1] of switch Lid 1 guid 0x99 (x):\n")
    with pytest.raises(FormatError, match="switch guid 0x0000000000000099 is not in the dump"):
        read_lft(bad, dump, G)
    # a table that sends a leaf's traffic back down to a host port it is not for
    loop = tmp_path / "loop.txt"
    loop.write_text(lft_text(text, lambda sw, ports, h, desc: min(ports)))
    with pytest.raises(InfeasibleError, match="forwards LID .* which does not lead towards it"):
        routed_lft(G, read_lft(loop, dump, G))


def test_gpus_and_pxn_through_the_tables(tmp_path: Path) -> None:
    # FT2 of 8-port switches, 16 servers of 2 GPUs and 2 NICs; every leaf spreads the
    # destinations over its 4 spines by NIC number mod 4. Contention-free: every GPU is held
    # only by its NIC, 50 GB/s x (n - 1) / (n - g) with n = 32 GPUs, g = 2 per server
    # (the inter-server share of its traffic), as D-mod-k gives on this fabric.
    design = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    text = write_ibnetdiscover(design)
    dump = tmp_path / "ft2.topo"
    dump.write_text(text)

    def mod4(sw, ports, h, desc):
        if sw.startswith("leaf"):
            host, ca = desc[h[0]].split()
            k = 2 * int(host.removeprefix("node")) + int(ca.removeprefix("mlx5_"))
            return next(p for p, d in ports.items() if d == f"spine{k % 4}")
        return next(p for p, d in ports.items() if d == leaf_of(h, desc, text))

    lft = tmp_path / "lfts.txt"
    lft.write_text(lft_text(text, mod4))
    G = import_ibnetdiscover(dump, gpus_per_host=2)
    r = routed_lft(G, read_lft(lft, dump, G))
    assert r.terminal == "gpu" and r.gpus == 32 and r.routing.pxn
    assert r.alltoall_busbw_Bps == pytest.approx(50e9 * 31 / 30)
    assert r.alltoall_busbw_Bps == pytest.approx(
        routed_alltoall(design, "dmodk").alltoall_busbw_Bps
    )
