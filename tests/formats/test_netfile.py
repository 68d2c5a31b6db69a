"""Tests of topo.formats.netfile: a fabric written in ibnetdiscover format reads back the same.

The reference of a round trip is the fabric written: its switches keep their names, its NICs
become ``<host>/mlx5_<index>/p1`` (the description ``"<host> mlx5_<index>"`` read back by the
reader's own rule), every cable keeps its count and rate.
"""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest

from topo.builders import build
from topo.errors import SpecError
from topo.fabric import SWITCH_KINDS
from topo.formats import read_ibnetdiscover, write_ibnetdiscover
from topo.formats.netfile import width_and_speed


def nic_name(G: nx.Graph, v: str) -> str:
    d = G.nodes[v]
    host = f"node{d['node']}" if isinstance(d["node"], int) else d["node"]
    return f"{host}/mlx5_{d['index']}/p1"


def cables(G: nx.Graph, rename: dict[str, str] | None = None) -> dict[frozenset[str], tuple]:
    """Switch-switch and NIC-switch edges: ends -> (links, capacity B/s)."""
    rename = rename or {}
    out = {}
    for u, v, d in G.edges(data=True):
        if d["kind"] in ("fabric", "endpoint"):
            key = frozenset((rename.get(u, u), rename.get(v, v)))
            out[key] = (d["links"], d["capacity"])
    return out


@pytest.mark.parametrize(
    "family, options",
    [
        ("ft2", {"switch_ports": 8, "gpus": 32, "gpus_per_node": 1, "nics_per_node": 1}),
        ("ft3", {"switch_ports": 4, "gpus_per_node": 1, "nics_per_node": 1}),
        ("mpft", {"switch_ports": 8, "gpus": 256}),
        ("mrft", {"switch_ports": 8, "gpus": 32}),
        ("ft2", {"switch_ports": 8, "gpus": 48, "link_gbps": 200, "oversubscription": 3}),
    ],
)
def test_write_then_read_gives_the_same_cables(tmp_path: Path, family: str, options: dict) -> None:
    G = build(family, **options)
    path = tmp_path / "fabric.net"
    path.write_text(write_ibnetdiscover(G))
    back = read_ibnetdiscover(path)
    rename = {v: nic_name(G, v) for v, k in G.nodes(data="kind") if k == "nic"}
    assert cables(back) == cables(G, rename)
    switches = {v for v, k in G.nodes(data="kind") if k in SWITCH_KINDS}
    assert {v for v, k in back.nodes(data="kind") if k == "switch"} == switches
    for s in switches:  # the tier the reader infers is the tier the builder gave
        assert back.nodes[s]["tier"] == G.nodes[s]["tier"], s
    assert back.graph["planes"] == G.graph["planes"]


def test_each_cable_appears_from_both_ends_with_matching_ports() -> None:
    # 4 leaves of 2 down ports, 2 spines: 8 NIC cables + 4 x 2 leaf-spine cables.
    G = build("ft2", switch_ports=4, gpus=8, gpus_per_node=1, nics_per_node=1)
    text = write_ibnetdiscover(G)
    lines = [ln for ln in text.splitlines() if ln.startswith("[")]
    assert len(lines) == 2 * (8 + 8)  # each from both ends
    assert text.count("Switch 4 ") == 6 and text.count("Ca 1 ") == 8
    # leaf0's port 3 goes to spine0's port 1, and spine0's port 1 comes back to leaf0's 3
    leaf0 = text.split("\n\n")[0].splitlines()
    assert leaf0[3].startswith('[3] "S-0002c90000000005"[1] # "spine0"')
    spine0 = next(r for r in text.split("\n\n") if '# "spine0"' in r.splitlines()[0])
    assert spine0.splitlines()[1].startswith('[1] "S-0002c90000000001"[3] # "leaf0"')


def test_one_plane_at_a_time(tmp_path: Path) -> None:
    G = build("mpft", switch_ports=8, gpus=256)
    texts = [write_ibnetdiscover(G, plane=p) for p in range(8)]
    for p, text in enumerate(texts):
        path = tmp_path / f"plane{p}.net"
        path.write_text(text)
        back = read_ibnetdiscover(path)
        assert back.graph["planes"] == 1
        assert {v for v, k in back.nodes(data="kind") if k == "switch"} == {
            v for v, d in G.nodes(data=True) if d["kind"] in SWITCH_KINDS and d["plane"] == p
        }
    guids = [
        ln.split('"')[1] for t in texts for ln in t.splitlines() if ln.startswith(("Switch", "Ca"))
    ]
    assert len(guids) == len(set(guids))  # no GUID shared between the planes' files
    with pytest.raises(SpecError, match="plane 8 does not exist: the fabric has 8"):
        write_ibnetdiscover(G, plane=8)


@pytest.mark.parametrize(
    "gbps, ibsim, expected",
    [
        (400, True, "8xHDR"),  # ibsim 0.10 has no NDR: 8 lanes x 50 Gb/s
        (400, False, "4xNDR"),
        (200, True, "4xHDR"),
        (100, True, "4xEDR"),
        (800, False, "4xXDR"),
        (40, True, "4xFDR10"),
    ],
)
def test_width_and_speed(gbps: float, ibsim: bool, expected: str) -> None:
    assert width_and_speed(gbps * 1e9 / 8, ibsim=ibsim) == expected


def test_a_rate_no_lane_gives_is_refused() -> None:
    with pytest.raises(SpecError, match="a cable of 800 Gb/s is no width"):
        width_and_speed(100e9)
    with pytest.raises(SpecError, match="a cable of 333 Gb/s"):
        width_and_speed(333e9 / 8, ibsim=False)


@pytest.mark.parametrize(
    "dump", ["topograph_dgx_gb200_ndr_superpod.out", "loginoff_fdr10_sx6036.topo"]
)
def test_an_imported_fabric_keeps_its_dump_s_labels(tmp_path: Path, dump: str) -> None:
    """A fresh-user trial: the GB200 SuperPOD's 4xNDR cables (the real dump's label) were
    written back as 8xHDR. Each cable keeps the label the real ibnetdiscover printed; the
    dump written reads back with the same speeds on the same cables."""
    from formats._real import real_file

    path = real_file("ibnetdiscover", dump)
    G = read_ibnetdiscover(path)
    text = write_ibnetdiscover(G)
    out = tmp_path / "back.net"
    out.write_text(text)
    back = read_ibnetdiscover(out)
    assert back.graph["link_speeds"] == G.graph["link_speeds"]
    labels = {line.rsplit(" ", 1)[-1] for line in text.splitlines() if line.startswith("[")}
    real = {
        line.split('"')[-1].split()[-1]
        for line in path.read_text().splitlines()
        if line.startswith("[") and " lid " in line.split('"')[-1]
    }
    assert labels <= real and "8xHDR" not in labels


def test_a_label_that_no_longer_matches_the_capacity_is_not_kept() -> None:
    from topo.formats.netfile import recorded_speed

    assert recorded_speed({"capacity": 50e9, "links": 1, "speed": "4xNDR"}) == "4xNDR"
    assert recorded_speed({"capacity": 100e9, "links": 2, "speed": "4xNDR"}) == "4xNDR"
    assert recorded_speed({"capacity": 25e9, "links": 1, "speed": "4xNDR"}) is None  # edited
    assert recorded_speed({"capacity": 75e9, "links": 2, "speed": "4xHDR+4xNDR"}) is None
    assert recorded_speed({"capacity": 50e9, "links": 1}) is None  # built: the rule's label
    assert recorded_speed({"capacity": 50e9, "links": 1, "speed": "nvlink"}) is None
