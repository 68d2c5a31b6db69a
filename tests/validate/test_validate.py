"""Tests of topo.validate: defects injected into a design are found, named and costed.

Each test damages a copy of the design by hand (the fabric as built, in the design's own
names), writes it in ibnetdiscover format, and holds ``validate`` to the damage: the defects it
lists are the ones injected, and its as-built all-to-all is the exact all-to-all of the damaged
copy solved directly (an independent construction of the same fabric). A dump of another
fabric (too few of its cables as designed) is refused before any LP, naming the share.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import networkx as nx
import pytest
from formats._real import real_file
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.errors import TopoError
from topo.fabric import save
from topo.flow import alltoall_bandwidth
from topo.formats import import_ibnetdiscover, read_ibnetdiscover, write_ibnetdiscover
from topo.validate import match_fabric, validate


@pytest.fixture(scope="module")
def design() -> nx.Graph:
    return build("mpft", switch_ports=8, gpus=256)


def as_built(tmp_path: Path, G: nx.Graph, name: str = "asbuilt.net") -> nx.Graph:
    path = tmp_path / name
    path.write_text(write_ibnetdiscover(G))
    return read_ibnetdiscover(path)


def kinds(report) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    return sorted((d.kind, d.design_ends, d.as_built_ends) for d in report.defects)


def test_a_fabric_built_as_designed_has_no_defect(tmp_path: Path, design: nx.Graph) -> None:
    r = validate(design, as_built(tmp_path, design))
    assert r.ok and r.defects == ()
    assert r.as_built_busbw_Bps == pytest.approx(r.design_busbw_Bps, rel=1e-9)
    assert r.switches_by_name == 96 and r.switches_by_structure == 0


def test_each_kind_is_found_with_both_ends_named(tmp_path: Path, design: nx.Graph) -> None:
    G = design.copy()
    # two NIC cables of node5 swapped between planes 2 and 3
    G.remove_edges_from([("node5/nic2", "p2/leaf1"), ("node5/nic3", "p3/leaf1")])
    G.add_edge("node5/nic2", "p3/leaf1", capacity=50e9, links=1, kind="endpoint")
    G.add_edge("node5/nic3", "p2/leaf1", capacity=50e9, links=1, kind="endpoint")
    G.remove_edge("node9/nic0", "p0/leaf2")  # a dead host cable
    G.edges["p1/leaf0", "p1/spine0"]["capacity"] = 25e9  # trained at 200 Gb/s
    G.remove_node("p4/spine1")  # a dead switch
    G.add_edge("p6/leaf0", "p6/leaf1", capacity=50e9, links=1, kind="fabric")  # extra
    for v in [v for v in G if G.nodes[v].get("node") == 30 and G.nodes[v]["kind"] == "nic"]:
        G.remove_edges_from(list(G.edges(v)))  # a host whose every cable is dead
    r = validate(design, as_built(tmp_path, G))
    assert kinds(r) == sorted(
        [
            ("miswired", ("node5/nic2", "p2/leaf1"), ("node5/mlx5_2/p1", "p3/leaf1")),
            ("miswired", ("node5/nic3", "p3/leaf1"), ("node5/mlx5_3/p1", "p2/leaf1")),
            ("missing", ("node9/nic0", "p0/leaf2"), ("p0/leaf2",)),
            ("speed", ("p1/leaf0", "p1/spine0"), ("p1/leaf0", "p1/spine0")),
            ("missing_switch", ("p4/spine1",), ()),
            ("extra", ("p6/leaf0", "p6/leaf1"), ("p6/leaf0", "p6/leaf1")),
            ("missing_host", ("node30",), ()),
        ]
    )
    speed = next(d for d in r.defects if d.kind == "speed")
    assert (speed.design_rate_Bps, speed.as_built_rate_Bps) == (50e9, 25e9)
    # The as-built all-to-all is that of the damaged copy itself, among the connected hosts.
    damaged = G.copy()
    damaged.remove_nodes_from([v for v, d in G.nodes(data=True) if d.get("node") == 30])
    assert r.disconnected == ("30",)
    assert r.as_built_busbw_Bps == pytest.approx(
        alltoall_bandwidth(damaged).alltoall_busbw_Bps, rel=1e-7
    )


def test_the_cost_of_a_defect_alone(tmp_path: Path, design: nx.Graph) -> None:
    G = design.copy()
    G.remove_edge("node9/nic0", "p0/leaf2")
    r = validate(design, as_built(tmp_path, G))
    (d,) = r.defects
    # alone, it is the whole damage: the damaged copy solved directly
    expected = alltoall_bandwidth(G).alltoall_busbw_Bps
    assert d.alone_busbw_Bps == pytest.approx(expected, rel=1e-7)
    assert r.as_built_busbw_Bps == pytest.approx(expected, rel=1e-7)
    assert expected < r.design_busbw_Bps
    out = d.to_dict(r.design_busbw_Bps)
    assert out["cost_GBps"] == pytest.approx((r.design_busbw_Bps - expected) / 1e9)


def test_a_missing_bundle_member(tmp_path: Path) -> None:
    # FT2 of 8-port switches, 16 hosts: 4 leaves of 4 down ports, 2 spines, 2 cables each.
    design = build("ft2", switch_ports=8, gpus=16, gpus_per_node=1, nics_per_node=1)
    assert design.edges["leaf0", "spine0"]["links"] == 2
    G = design.copy()
    G.edges["leaf0", "spine0"].update(links=1, capacity=50e9)
    r = validate(design, as_built(tmp_path, G))
    assert kinds(r) == [("missing", ("leaf0", "spine0"), ("leaf0", "spine0"))]
    assert r.defects[0].links == 1
    assert r.as_built_busbw_Bps == pytest.approx(alltoall_bandwidth(G).alltoall_busbw_Bps, rel=1e-7)


def test_switches_named_otherwise_are_matched_by_structure(
    tmp_path: Path, design: nx.Graph
) -> None:
    # The dump's switches carry vendor names: leaves are found by their hosts, spines by
    # their leaves; a leaf-spine cable moved to another spine is then miswired.
    rename = {
        v: f"MF0;sw{i:03d}:MQM9700/U1"
        for i, v in enumerate(
            sorted(v for v, k in design.nodes(data="kind") if "leaf" in k or "spine" in k)
        )
    }
    G = design.copy()
    G.remove_edge("p3/leaf2", "p3/spine1")
    G.add_edge("p3/leaf2", "p3/leaf5", capacity=50e9, links=1, kind="fabric")
    G = nx.relabel_nodes(G, rename)
    r = validate(design, as_built(tmp_path, G))
    assert r.switches_by_name == 0 and r.switches_by_structure == 96
    m = match_fabric(design, as_built(tmp_path, G, "again.net"))
    assert m.to_dump["p3/leaf2"] == rename["p3/leaf2"]
    assert m.to_dump["p0/leaf7"] == rename["p0/leaf7"]
    assert kinds(r) == [
        (
            "miswired",
            ("p3/leaf2", "p3/spine1"),
            (rename["p3/leaf2"], rename["p3/leaf5"]),
        )
    ]
    # whatever the names: the design spine reported is the one matched to the physical
    # switch that lost the cable
    (d,) = r.defects
    assert m.to_dump[d.design_ends[1]] == rename["p3/spine1"]


def test_a_three_layer_tree_renamed_at_random(tmp_path: Path) -> None:
    # Pod spines are told apart by the cores only: matching must pin cores before guessing
    # which spine of every pod is which. One spine-core cable cut: exactly one defect, on the
    # two physical switches of that cable.
    design = build("ft3", switch_ports=8, gpus_per_node=1, nics_per_node=1)
    switches = sorted(v for v, k in design.nodes(data="kind") if k in ("leaf", "spine", "core"))
    names = [f"SW-{i:04d}" for i in range(len(switches))]
    random.Random(3).shuffle(names)
    rename = dict(zip(switches, names, strict=True))
    G = design.copy()
    G.remove_edge("pod0/spine0", "core0")
    G = nx.relabel_nodes(G, rename)
    r = validate(design, as_built(tmp_path, G), cost=False)
    assert r.switches_by_name == 0 and r.switches_by_structure == 80
    (d,) = r.defects
    assert d.kind == "missing" and d.links == 1
    assert set(d.as_built_ends) == {rename["pod0/spine0"], rename["core0"]}


def test_cli_exit_status_json_and_html(tmp_path: Path, design: nx.Graph) -> None:
    path = tmp_path / "design.json"
    save(design, path)
    good, bad = tmp_path / "good.net", tmp_path / "bad.net"
    good.write_text(write_ibnetdiscover(design))
    G = design.copy()
    G.remove_edge("node9/nic0", "p0/leaf2")
    bad.write_text(write_ibnetdiscover(G))
    runner = CliRunner()
    r = runner.invoke(app, ["validate", str(path), str(good)])
    assert r.exit_code == 0, r.output
    html = tmp_path / "defects.html"
    r = runner.invoke(app, ["validate", str(path), str(bad), "--json", "--html", str(html)])
    assert r.exit_code == 3, r.output
    d = json.loads(r.stdout[r.stdout.index("{") :])
    assert d["defect_counts"] == {"missing": 1}
    assert d["defects"][0]["kind"] == "missing"
    assert d["design_busbw_GBps"] > d["as_built_busbw_GBps"] > 0
    assert d["defects"][0]["cost_GBps"] == pytest.approx(
        d["design_busbw_GBps"] - d["as_built_busbw_GBps"]
    )
    page = html.read_text()
    assert "node9/nic0 - p0/leaf2" in page
    r = runner.invoke(app, ["validate", str(path), str(bad), "--gpus-per-host", "4"])
    assert r.exit_code == 1 and "the design's servers have 8 GPUs" in r.output


def test_hosts_named_otherwise_pair_in_natural_order(tmp_path: Path, design: nx.Graph) -> None:
    G = design.copy()
    for _, d in G.nodes(data=True):
        if d["kind"] == "nic":
            d["node"] = f"gpu-{d['node']:04d}"  # real hostnames: "gpu-0017 mlx5_3"
    G.remove_edge("node17/nic3", "p3/leaf4")
    r = validate(design, as_built(tmp_path, G), cost=False)
    assert kinds(r) == [("missing", ("node17/nic3", "p3/leaf4"), ("p3/leaf4",))]
    m = match_fabric(design, as_built(tmp_path, G, "again.net"))
    assert m.hosts[17] == "gpu-0017" and m.to_dump["node17/nic2"] == "gpu-0017/mlx5_2/p1"


def test_an_imported_design_is_refused(tmp_path: Path) -> None:
    # A fresh user validated the dump against its own import: 16 defects and "all-to-all
    # busbw 0.00 GB/s designed". The design comes from topo build; an import is refused.
    from topo.errors import FormatError
    from topo.formats import import_ibnetdiscover

    design = build("mrft", gpus=128)
    net = tmp_path / "m.net"
    net.write_text(write_ibnetdiscover(design))
    back = tmp_path / "back.json"
    save(import_ibnetdiscover(net), back)
    r = CliRunner().invoke(app, ["validate", str(back), str(net), "--no-cost"])
    assert r.exit_code == 1, r.output
    assert r.output.strip().splitlines() == [
        f"topo: error: {back}: an imported fabric (from {net}), not a design: topo validate "
        "compares dumps with the fabric 'topo build -o' wrote"
    ]
    with pytest.raises(FormatError, match=r"^<design>: an imported fabric"):
        validate(import_ibnetdiscover(net, gpus_per_host=8), read_ibnetdiscover(net), cost=False)
    # The design itself is accepted: no defect.
    assert validate(design, read_ibnetdiscover(net), cost=False).ok


# -- a dump of another fabric is refused before any LP -----------------------------------------

SMALL = dict(switch_ports=8, gpus_per_node=2, nics_per_node=2)  # 32 GPUs, 64 cables


def test_an_unrelated_dump_is_refused_naming_the_share(tmp_path: Path) -> None:
    dump_path = real_file("ibnetdiscover", "topograph_dgx_gb200_ndr_superpod.out")
    design = build("ft2", gpus=128)
    dump = import_ibnetdiscover([dump_path])
    with pytest.raises(TopoError, match=r": not a dump of this design: [\d,]+ of its 1,074 "):
        validate(design, dump, dump_name=str(dump_path))
    path = tmp_path / "f.json"
    save(design, path)
    r = CliRunner().invoke(app, ["validate", str(path), str(dump_path)])
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    (line,) = r.stderr.splitlines()
    assert line.startswith(f"topo: error: {dump_path}: not a dump of this design: ")
    assert "(the design has 256); topo validate compares from 25%" in line
    # the library compares it all the same when asked to (listing only, no LP per defect)
    report = validate(design, dump, cost=False, min_matched=0)
    assert len(report.defects) > 256


def _partly_built(tmp_path: Path, hosts: float, fabric: float = 1.0) -> nx.Graph:
    """The design with only the first ``hosts`` share of its host cables plugged in and the
    first ``fabric`` share of its leaf-spine cables."""
    G = build("ft2", **SMALL)
    for kind, share in (("endpoint", hosts), ("fabric", fabric)):
        cables = [(u, v) for u, v, k in G.edges(data="kind") if k == kind]
        G.remove_edges_from(cables[round(share * len(cables)) :])
    path = tmp_path / f"built{hosts}-{fabric}.net"
    path.write_text(write_ibnetdiscover(G))
    return read_ibnetdiscover(path)


def test_a_fabric_being_built_is_compared_until_barely_begun(tmp_path: Path) -> None:
    design = build("ft2", **SMALL)  # 16 servers of 2 NICs: 32 host and 32 leaf-spine cables
    # Half the host cables in: 16 + 32 = 48 of 64 cables as designed (75%): compared; the
    # 8 servers without a cable are missing hosts.
    report = validate(design, _partly_built(tmp_path, 0.5), cost=False)
    assert [d.kind for d in report.defects] == ["missing_host"] * 8
    # No host cable in: 32 of 64 (50%), still compared.
    assert len(validate(design, _partly_built(tmp_path, 0.0), cost=False).defects) == 16
    # No host cable and 8 of the 32 leaf-spine cables: 8 of 64 (12%), below a quarter.
    with pytest.raises(TopoError, match=r"8 of its 8 cables are as designed, 12% of the larger"):
        validate(design, _partly_built(tmp_path, 0.0, 0.25), cost=False)
