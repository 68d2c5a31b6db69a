"""Tests of the public queries of topo.fabric (natural_key, terminal_kind, servers,
switch_components, blocks_below_top), with values worked out by hand from the builders' naming
(docs/builders.md) and the ibnetdiscover record format."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from topo.builders import build
from topo.fabric import (
    blocks_below_top,
    natural_key,
    servers,
    switch_components,
    terminal_kind,
)
from topo.formats import read_ibnetdiscover


def imported(tmp_path: Path, text: str) -> nx.Graph:
    """An imported fabric from an ibsim net file (no GPUs: its terminals are NICs)."""
    path = tmp_path / "net"
    path.write_text(text)
    return read_ibnetdiscover(path)


# Two hosts named so that a plain string sort would put node10 first; one switch.
TWO_HOSTS = (
    'Switch 4 "sw1"\n[1] "node10"[1]\n[2] "node2"[1]\n\n'
    'Hca 1 "node10"\n[1] "sw1"[1]\n\n'
    'Hca 1 "node2"\n[1] "sw1"[2]\n'
)


# -- natural_key -----------------------------------------------------------------------------


def test_natural_key_compares_digit_runs_as_numbers() -> None:
    names = ["leaf10", "leaf2", "leaf1", "p1/leaf0", "p0/leaf11"]
    assert sorted(names, key=natural_key) == ["leaf1", "leaf2", "leaf10", "p0/leaf11", "p1/leaf0"]


def test_natural_key_parts() -> None:
    # "p1/leaf10" splits into 'p', '1', '/leaf', '10', '' (re.split keeps the digit runs).
    assert natural_key("p1/leaf10") == (
        (1, 0, "p"),
        (0, 1, ""),
        (1, 0, "/leaf"),
        (0, 10, ""),
        (1, 0, ""),
    )
    assert natural_key(7) == ((0, 7, ""),)
    assert natural_key(np.int64(7)) == natural_key(7)
    # A bool is not a number here: it is shown as its name.
    assert natural_key(True) == ((1, 0, "True"),)
    # Leading zeros compare by value: node01 and node1 tie.
    assert natural_key("node01") == natural_key("node1")


def test_natural_key_orders_mixed_names_without_type_error() -> None:
    # ints: ((0, n, ''),) come first; "2a" starts with an empty text part (1, 0, '') which
    # sorts before "node2"'s (1, 0, 'node').
    assert sorted([10, "node2", 2, "2a"], key=natural_key) == [2, 10, "2a", "node2"]


# -- terminal_kind ---------------------------------------------------------------------------


def test_terminal_kind() -> None:
    assert terminal_kind(build("ft2", switch_ports=4)) == "gpu"
    assert terminal_kind(build("dragonfly", switch_ports=8)) == "gpu"


def test_terminal_kind_of_an_imported_fabric_is_nic(tmp_path: Path) -> None:
    assert terminal_kind(imported(tmp_path, TWO_HOSTS)) == "nic"


# -- servers ---------------------------------------------------------------------------------


def test_servers_of_a_built_fabric() -> None:
    # ft2 of 4-port switches: 4 leaves of 2 down ports = 8 NICs; 1 NIC per node -> 8 servers
    # of 12 GPUs; each server lists its GPUs 0..11 (gpu10 after gpu9), its NIC, its NVSwitch.
    G = build("ft2", switch_ports=4, gpus_per_node=12, nics_per_node=1)
    s = servers(G)
    assert list(s) == list(range(8))
    assert s[0] == [f"node0/gpu{i}" for i in range(12)] + ["node0/nic0", "node0/nvswitch"]
    assert s[7][-2:] == ["node7/nic0", "node7/nvswitch"]


def test_servers_in_natural_order_of_int_ids() -> None:
    # 8 ports, 1 GPU and 1 NIC per node: 8 leaves x 4 down ports = 32 servers; ids 0..31 by
    # value (a string sort would put 10 before 2).
    s = servers(build("ft2", switch_ports=8, gpus_per_node=1, nics_per_node=1))
    assert list(s) == list(range(32))
    assert s[10] == ["node10/gpu0", "node10/nic0", "node10/nvswitch"]


def test_servers_of_an_imported_fabric(tmp_path: Path) -> None:
    # ibsim CA "node2" (one word, no CA name): hostname unknown, node = the CA id; its port 1
    # is the NIC "node2/p1".
    assert servers(imported(tmp_path, TWO_HOSTS)) == {
        "node2": ["node2/p1"],
        "node10": ["node10/p1"],
    }


# -- switch_components -----------------------------------------------------------------------


def test_switch_components_are_the_planes() -> None:
    # MPFT of 4-port switches, 2 NICs per node: 2 planes, each a two-layer tree of 4 leaves
    # and 2 spines; leaf before spine (natural order of "/leaf" < "/spine").
    G = build("mpft", switch_ports=4, gpus_per_node=2, nics_per_node=2)
    assert switch_components(G) == [
        ["p0/leaf0", "p0/leaf1", "p0/leaf2", "p0/leaf3", "p0/spine0", "p0/spine1"],
        ["p1/leaf0", "p1/leaf1", "p1/leaf2", "p1/leaf3", "p1/spine0", "p1/spine1"],
    ]


def test_one_plane_is_one_component() -> None:
    # ft2 of 12 ports: 12 leaves, 6 spines, in natural order (leaf10 after leaf9).
    (comp,) = switch_components(build("ft2", switch_ports=12))
    assert comp == [f"leaf{j}" for j in range(12)] + [f"spine{j}" for j in range(6)]


def test_switch_components_of_an_imported_fabric(tmp_path: Path) -> None:
    # Two switches with no cable between them, each with one host: two components.
    text = (
        'Switch 2 "sw2"\n[1] "h2"[1]\n\nSwitch 2 "sw10"\n[1] "h10"[1]\n\n'
        'Hca 1 "h2"\n[1] "sw2"[1]\n\nHca 1 "h10"\n[1] "sw10"[1]\n'
    )
    assert switch_components(imported(tmp_path, text)) == [["sw2"], ["sw10"]]


# -- blocks_below_top ------------------------------------------------------------------------


def test_blocks_below_top_are_the_pods_of_a_three_layer_tree() -> None:
    # ft3 of 4-port switches: 4 pods of 2 leaves and 2 spines under 4 cores; in each block the
    # leaves (tier 1) come before the spines (tier 2).
    blocks = blocks_below_top(build("ft3", switch_ports=4))
    assert blocks == [
        [f"pod{q}/leaf0", f"pod{q}/leaf1", f"pod{q}/spine0", f"pod{q}/spine1"] for q in range(4)
    ]


def test_blocks_below_top_of_a_two_layer_tree_are_its_leaves() -> None:
    # ft2 of 12 ports: the 12 leaves, one block each, in natural order.
    assert blocks_below_top(build("ft2", switch_ports=12)) == [[f"leaf{j}"] for j in range(12)]


def test_blocks_below_top_of_given_switches() -> None:
    # Only pod 1's switches: its top tier is the spines (2), so the blocks are its two leaves.
    G = build("ft3", switch_ports=4)
    pod1 = ["pod1/spine1", "pod1/leaf1", "pod1/spine0", "pod1/leaf0"]
    assert blocks_below_top(G, pod1) == [["pod1/leaf0"], ["pod1/leaf1"]]
    assert blocks_below_top(G, []) == []


def test_blocks_below_top_of_a_single_tier_fabric_is_empty() -> None:
    # Dragonfly routers are all leaves (tier 1): nothing below the top tier.
    assert blocks_below_top(build("dragonfly", switch_ports=8)) == []


@pytest.mark.parametrize("family", ["ft2", "ft3", "mrft", "mpft"])
def test_blocks_cover_the_switches_below_the_top(family: str) -> None:
    G = build(family, switch_ports=8)
    top = max(d["tier"] for _, d in G.nodes(data=True) if "tier" in d)
    below = {v for v, d in G.nodes(data=True) if d.get("tier", top) < top}
    blocks = blocks_below_top(G)
    assert sorted(v for b in blocks for v in b) == sorted(below)
