"""Slurm's topology from a design, held to the grouping worked by hand, the man pages' rules,
real topology files and, where installed, the real slurmctld."""

from __future__ import annotations

import re

import pytest

from tests.export._expand import expand
from tests.export._slurm import munged, parse_show_topology, require_slurm, slurmctld
from tests.formats._real import real_file
from topo.builders import build
from topo.errors import SpecError
from topo.export import (
    ExportOptions,
    block_sizes,
    export,
    fabric_hosts,
    hostlist_ranged,
    slurm_blocks,
    slurm_tree,
)
from topo.formats import read_ibnetdiscover


def slurm_block_sizes_ok(sizes) -> bool:
    """block_record.c: the first size is the base B; each is B * 2^j, j < 16, increasing."""
    base = sizes[0]
    levels = [s // base for s in sizes]
    return (
        all(s % base == 0 for s in sizes)
        and all(lv & (lv - 1) == 0 and lv.bit_length() <= 16 for lv in levels)
        and levels == sorted(set(levels))
    )


def mpft():
    # 8-port switches: a leaf has 4 down ports, so leaf j of every plane holds servers 4j..4j+3
    # (NIC i of server n on p{i}/leaf{n // 4}); 8 planes of 8 leaves, 32 servers.
    return build("mpft", switch_ports=8)


def test_mpft_tree_groups_servers_by_leaf_index():
    G = mpft()
    hosts = fabric_hosts(G)
    tree = slurm_tree(G, hosts)
    top, *leaves = tree
    assert top.name == "mpft-256" and top.switches == tuple(f"leaf{j}" for j in range(8))
    for j, leaf in enumerate(leaves):
        assert leaf.name == f"leaf{j}"
        assert leaf.nodes == tuple(f"node{n}" for n in range(4 * j, 4 * j + 4))
    text = export(G, "slurm").text.splitlines()
    assert text[1:3] == [
        "SwitchName=mpft-256 Switches=leaf[0-7]",
        "SwitchName=leaf0 Nodes=node[0-3]",
    ]


def test_mrft_tree_groups_rails():
    # 8-port leaves, 4 rails (4 NICs per server): 2 leaves per rail of 4 servers each; the
    # servers 0-3 share rail{r}/leaf0 for every r, 4-7 share rail{r}/leaf1.
    G = build("mrft", switch_ports=8, gpus_per_node=4, nics_per_node=4, gpus=32)
    tree = slurm_tree(G, fabric_hosts(G))
    assert [(s.name, s.nodes, s.switches) for s in tree] == [
        ("mrft-32", (), ("leaf0", "leaf1")),
        ("leaf0", tuple(f"node{n}" for n in range(4)), ()),
        ("leaf1", tuple(f"node{n}" for n in range(4, 8)), ()),
    ]


def test_ft3_tree_has_pods():
    # k = 4, one NIC per server: 4 pods of 2 leaves of 2 servers (endpoint e on
    # pod{e // 4}/leaf{e % 4 // 2}).
    G = build("ft3", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    tree = slurm_tree(G, fabric_hosts(G))
    names = [s.name for s in tree]
    assert names[:5] == ["ft3-16", "pod0", "pod1", "pod2", "pod3"]
    assert tree[0].switches == ("pod0", "pod1", "pod2", "pod3")
    assert tree[1].switches == ("pod0-leaf0", "pod0-leaf1")
    leaves = {s.name: s.nodes for s in tree[5:]}
    assert leaves["pod2-leaf1"] == ("node10", "node11")
    assert sorted(n for ns in leaves.values() for n in ns) == sorted(f"node{i}" for i in range(16))


def test_dragonfly_tree_has_groups():
    # a = 4 routers per group, p = 2 endpoints per router, one NIC per server: router r of
    # group g holds servers 8g + 2r, 8g + 2r + 1.
    G = build(
        "dragonfly",
        routers_per_group=4,
        endpoints_per_router=2,
        global_ports=2,
        groups=9,
        gpus_per_node=1,
        nics_per_node=1,
    )
    tree = slurm_tree(G, fabric_hosts(G))
    assert tree[0].switches == tuple(f"g{g}" for g in range(9))
    assert tree[1].name == "g0" and tree[1].switches == ("g0-r0", "g0-r1", "g0-r2", "g0-r3")
    leaf = {s.name: s.nodes for s in tree if s.nodes}
    assert leaf["g3-r2"] == ("node28", "node29")
    assert "TopologyParam=dragonfly" in export(G, "slurm").text


def test_slimfly_has_no_tree_but_blocks():
    G = build("slimfly", q=5, gpus_per_node=1, nics_per_node=1)
    with pytest.raises(SpecError, match="cannot express this slimfly"):
        export(G, "slurm")
    blocks = slurm_blocks(G, fabric_hosts(G))
    assert len(blocks.blocks) == 2 * 5 * 5  # 2 q^2 routers, one block each
    yaml_text = export(G, "slurm", ExportOptions(slurm_format="yaml")).text
    assert "tree:" not in yaml_text and "cluster_default: true" in yaml_text


def test_block_sizes_full_mpft():
    # 64-port MPFT: 32 servers per leaf index, 64 leaf indices -> 32 * 2^j up to 32 * 64.
    G = build("mpft", switch_ports=64, link_gbps=400, gpus=16384)
    blocks = slurm_blocks(G, fabric_hosts(G))
    assert len(blocks.blocks) == 64 and {len(b[1]) for b in blocks.blocks} == {32}
    assert blocks.sizes == tuple(32 * 2**j for j in range(7))
    assert slurm_block_sizes_ok(blocks.sizes)


@pytest.mark.parametrize(
    "base, domains, top, expected",
    [
        (8, [], 6, (8, 16, 32)),  # top level: any 2^j blocks up to the 6
        (4, [4], 3, (4, 8, 16, 32)),  # 4 leaves per pod (2, 4 blocks), then 2 pods (8 blocks)
        (4, [6], 3, (4, 8)),  # 6 per pod: pairs only; 6 is no power of two, nothing above
        (1, [], 2**20, tuple(2**j for j in range(16))),  # Slurm's 16 levels
        (5, [], 1, (5,)),
    ],
)
def test_block_sizes_rule(base, domains, top, expected):
    sizes = block_sizes(base, domains, top)
    assert sizes == expected
    assert slurm_block_sizes_ok(sizes)


def test_real_block_file_obeys_the_rule():
    """topograph's golden block file (BlockSizes=8,16,32) passes the checker used above."""
    text = real_file("slurm_topology", "topograph_expected_block.topology.conf").read_text()
    sizes = [int(s) for s in re.search(r"^BlockSizes=(\S+)$", text, re.M).group(1).split(",")]
    assert slurm_block_sizes_ok(sizes) and not slurm_block_sizes_ok([8, 24])


def test_formats_have_the_real_files_line_grammar():
    """Our lines parse as the real files' lines do: 'SwitchName=x Nodes|Switches=hostlist',
    'BlockName=x Nodes=hostlist', 'BlockSizes=n,...'."""
    grammar = re.compile(
        r"^(#.*|SwitchName=\S+ (Nodes|Switches)=\S+|BlockName=\S+ Nodes=\S+|BlockSizes=\d+(,\d+)*)$"
    )
    for name in ("topograph_expected_tree", "topograph_expected_block", "slurm_test_docker_3level"):
        real = real_file("slurm_topology", f"{name}.topology.conf").read_text().splitlines()
        assert all(grammar.match(ln) for ln in real if ln)
    G = build("ft3", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    for form in ("tree", "block"):
        ours = export(G, "slurm", ExportOptions(slurm_format=form)).text.splitlines()
        assert all(grammar.match(ln) for ln in ours)


def test_yaml_parses_as_the_man_page_lays_it_out():
    yaml = pytest.importorskip("yaml")
    G = build("ft3", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    doc = yaml.safe_load(export(G, "slurm", ExportOptions(slurm_format="yaml")).text)
    tree, block = doc
    assert tree["topology"] == "ft3-16-tree" and tree["cluster_default"] is True
    switches = {s["switch"]: s for s in tree["tree"]["switches"]}
    assert switches["ft3-16"]["children"] == "pod[0-3]"
    assert expand(switches["pod1-leaf0"]["nodes"]) == ["node4", "node5"]
    assert block["block"]["block_sizes"] == [2, 4, 8, 16]  # 2 per leaf; 2 leaves per pod; 4 pods
    assert len(block["block"]["blocks"]) == 8


def test_imported_multi_rail_fabric_groups_by_rack():
    """The GB200 SuperPOD dump: each compute tray's 4 HCAs are on 4 rail leaves of its rack
    (IBLEAF-<rail>-<rack>), so a leaf group is a rack's trays and its rail leaves."""
    G = read_ibnetdiscover(real_file("ibnetdiscover", "topograph_dgx_gb200_ndr_superpod.out"))
    hosts = fabric_hosts(G)
    tree = slurm_tree(G, hosts)
    leaves = [s for s in tree if s.nodes]
    assert sorted(n for s in leaves for n in s.nodes) == sorted(hosts)
    for s in leaves:
        racks = {int(m.group(1)) for n in s.nodes if (m := re.search(r"-dgx-(\d+)-c", n))}
        assert racks == {int(s.name.rsplit("-", 1)[1])}, s.name  # IBLEAF-<rail>-<rack>
    assert len(leaves) == 8  # 8 racks


def _check_against_slurmctld(tmp_path, G, hosts, extra=""):
    require_slurm()
    conf = export(G, "slurm").text
    tree = slurm_tree(G, hosts)
    with (
        munged(tmp_path / "munge") as sock,
        slurmctld(tmp_path / "ctld", sock, hostlist_ranged(hosts), conf, extra) as ctld,
    ):
        shown = parse_show_topology(ctld.scontrol("show", "topology"))
        log = ctld.log.read_text()
    assert "Invalid hostnames" not in log and "Multiple leaf switches" not in log
    assert "no switch can reach all nodes" not in log
    assert set(shown) == {s.name for s in tree}
    below: dict[str, set[str]] = {}
    height: dict[str, int] = {}
    for s in reversed(tree):  # leaves first
        below[s.name] = set(s.nodes).union(*(below[c] for c in s.switches))
        height[s.name] = 1 + max((height[c] for c in s.switches), default=-1)
    for name, fields in shown.items():
        assert set(expand(fields["Nodes"])) == below[name], name
        assert int(fields["Level"]) == height[name], name
        kids = next(s.switches for s in tree if s.name == name)
        if kids:
            assert expand(fields["Switches"]) == list(kids)
        else:
            assert "Switches" not in fields


def test_slurmctld_reads_mpft(tmp_path):
    G = mpft()
    _check_against_slurmctld(tmp_path, G, fabric_hosts(G))


def test_slurmctld_reads_ft3(tmp_path):
    G = build("ft3", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    _check_against_slurmctld(tmp_path, G, fabric_hosts(G))


def test_slurmctld_reads_dragonfly(tmp_path):
    G = build(
        "dragonfly",
        routers_per_group=4,
        endpoints_per_router=2,
        global_ports=2,
        groups=9,
        gpus_per_node=1,
        nics_per_node=1,
    )
    _check_against_slurmctld(tmp_path, G, fabric_hosts(G), "TopologyParam=dragonfly")


def test_slurmctld_reads_an_imported_fabric(tmp_path):
    """The real GB200 dump: its host names (trays, UFM hosts, unnamed HCAs as H-<guid>) and
    switch names from 'MF0;<name>:<model>/U1', read by slurmctld as exported."""
    G = read_ibnetdiscover(real_file("ibnetdiscover", "topograph_dgx_gb200_ndr_superpod.out"))
    _check_against_slurmctld(tmp_path, G, fabric_hosts(G))


def test_slurmctld_names_a_host_it_does_not_know(tmp_path):
    """The real tool's log names invalid host names: the export's host names must be the
    cluster's own (here node[0-30] configured, node31 not)."""
    require_slurm()
    G = mpft()
    with (
        munged(tmp_path / "munge") as sock,
        slurmctld(tmp_path / "ctld", sock, "node[0-30]", export(G, "slurm").text) as ctld,
    ):
        ctld.scontrol("show", "topology")
        log = ctld.log.read_text()
    assert re.search(r"Invalid hostnames in switch configuration: node31", log)
