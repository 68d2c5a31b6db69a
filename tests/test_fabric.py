"""Tests of the public queries of topo.fabric (natural_key, terminal_kind, servers,
switch_components, blocks_below_top), with values worked out by hand from the builders' naming
(docs/builders.md) and the ibnetdiscover record format; of ``load`` and its refusals; and of
JSON reading (``parse_json``): a file nested 100,000 levels deep is one line naming the file
from every reader of JSON, not a RecursionError traceback."""

from __future__ import annotations

import copy
import gc
import json
import os
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.errors import FormatError
from topo.fabric import (
    blocks_below_top,
    check_schema,
    components_within,
    load,
    natural_key,
    natural_sorted_groups,
    servers,
    summarize,
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
    # "p1/leaf10" splits into 'p', '1', '/leaf', '10', '' (re.split keeps the digit runs):
    # text and numbers alternate, after a tag that puts integer names first.
    assert natural_key("p1/leaf10") == (1, "p", 1, "/leaf", 10, "")
    assert natural_key(7) == (0, 7)
    assert natural_key(np.int64(7)) == natural_key(7)
    # A bool is not a number here: it is shown as its name.
    assert natural_key(True) == (1, "True")
    # Leading zeros compare by value: node01 and node1 tie.
    assert natural_key("node01") == natural_key("node1")


def test_natural_key_of_a_run_of_digits_past_pythons_conversion_limit() -> None:
    # int() refuses a str of over 4,300 digits; a name may hold one (it used to end the
    # command in a traceback): its value is converted piecewise, the order is by value.
    long = "leaf" + "1" * 5000
    assert natural_key(long) == (1, "leaf", int("1" * 4000) * 10**1000 + int("1" * 1000), "")
    names = ["leaf" + "1" * 4999 + "2", long, "leaf99", "p" + "0" * 6000 + "7/x1"]
    assert sorted(names, key=natural_key) == [names[2], long, names[0], names[3]]
    assert natural_key(names[3]) == natural_key("p7/x1")


def test_natural_key_orders_mixed_names_without_type_error() -> None:
    # ints: (0, n) come first; "2a" starts with an empty text part '' which
    # sorts before "node2"'s 'node'.
    assert sorted([10, "node2", 2, "2a"], key=natural_key) == [2, 10, "2a", "node2"]


_PARTS = ["", "0", "00", "1", "01", "9", "10", "12", "a", "b", "ab", "/", "gpu", "nic", "é", "١"]


@pytest.mark.parametrize("seed", range(4))
def test_natural_sorted_groups_is_sorted_by_natural_key(seed: int) -> None:
    # The shortcut over common prefixes gives what sorting each group by natural_key gives,
    # order of ties included (stable), whatever the names: shared prefixes that end in a digit
    # or in the middle of a number, Unicode digits, repeated remainders across groups, ints.
    rng = random.Random(seed)
    groups: dict[Any, list[Any]] = {}
    for g in range(300):
        stem = "".join(rng.choice(_PARTS) for _ in range(rng.randint(0, 3)))
        tails = [
            "".join(rng.choice(_PARTS) for _ in range(rng.randint(0, 3)))
            for _ in range(rng.randint(0, 8))
        ]
        if rng.random() < 0.5:  # the same remainders as an earlier group, under another stem
            tails = rng.choice(list(groups.values())) if groups else tails
            tails = [t[len(t) // 2 :] for t in tails if isinstance(t, str)]
        names: list[Any] = [stem + t for t in tails]
        if rng.random() < 0.05:
            names.append(rng.randint(0, 20))
        groups[rng.choice([g, f"node{g}", f"n{g % 7}"])] = names
    want = {k: sorted(groups[k], key=natural_key) for k in sorted(groups, key=natural_key)}
    got = natural_sorted_groups(groups)
    assert list(got) == list(want)
    for k in want:
        assert got[k] == want[k] and all(a is b for a, b in zip(got[k], want[k], strict=True))


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


# -- load: the same graph as networkx reads, the same first error ----------------------------


def reference_load(path: Path) -> nx.Graph:
    """What topo.fabric.load returned before it checked the lists itself: networkx's reading,
    copied to a simple graph, then check_schema."""
    G = nx.Graph(nx.node_link_graph(json.loads(path.read_text()), edges="edges"))
    check_schema(G, path)
    return G


def layout(G: nx.Graph) -> tuple[Any, ...]:
    """Everything order-sensitive about a graph: nodes, each neighbour list, edges, attributes."""
    return (
        list(G.nodes(data=True)),
        [(u, list(G.adj[u].items())) for u in G],
        list(G.edges(data=True)),
        G.graph,
    )


def _shuffle(key: str, seed: int) -> Callable[[dict[str, Any]], None]:
    return lambda d: random.Random(seed).shuffle(d[key])


def _int_ids(d: dict[str, Any]) -> None:
    ids = {n["id"]: 3 * i for i, n in enumerate(d["nodes"])}
    for n in d["nodes"]:
        n["id"] = ids[n["id"]]
    for e in d["edges"]:
        e["source"], e["target"] = ids[e["source"]], ids[e["target"]]


def _edge(d: dict[str, Any], i: int = 5) -> dict[str, Any]:
    return d["edges"][i]


SAME_GRAPH = {
    "as saved": lambda d: None,
    "edges shuffled": _shuffle("edges", 1),
    "nodes shuffled": _shuffle("nodes", 2),
    "edges reversed": lambda d: [
        e.update(source=e["target"], target=e["source"]) for e in d["edges"]
    ],
    "integer ids": _int_ids,
    "no multigraph key": lambda d: (d.pop("multigraph"), _edge(d).update(key=3)),
    "key attribute": lambda d: _edge(d).update(key=3),
    "extra attributes": lambda d: (_edge(d).update(color="red"), d["graph"].update(x=[1])),
    "no graph": lambda d: d.pop("graph"),
    "empty": lambda d: d.update(nodes=[], edges=[]),
}

SAME_ERROR = {
    "capacity 0": lambda d: _edge(d, 7).update(capacity=0),
    "capacity inf": lambda d: _edge(d, -1).update(capacity=float("inf")),
    "capacity bool": lambda d: _edge(d).update(capacity=True),
    "capacity huge int": lambda d: _edge(d).update(capacity=10**30),
    "links float": lambda d: _edge(d).update(links=1.5),
    "no kind": lambda d: _edge(d, 9).pop("kind"),
    "node kind": lambda d: d["nodes"][-1].update(kind="router"),
    "tier bool": lambda d: d["nodes"][-1].update(tier=True),
    "node bool": lambda d: d["nodes"][1].update(node=False),
    "no source": lambda d: _edge(d).pop("source"),
    "list source": lambda d: _edge(d).update(source=[1, 2]),
    "dict source": lambda d: _edge(d).update(source={"a": 1}),
    "planes 0": lambda d: d["graph"].update(planes=0),
    "repeated node, bad": lambda d: d["nodes"].append({**d["nodes"][-1], "tier": 0}),
    "shuffled, two bad edges": lambda d: (
        _shuffle("edges", 3)(d),
        _shuffle("nodes", 4)(d),
        _edge(d, 40).update(links=0),
        _edge(d, 10).update(kind="x"),
    ),
    "bad node and bad edge": lambda d: (
        d["nodes"][-1].update(kind="z"),
        _edge(d, 0).update(kind="z"),
    ),
}


@pytest.fixture(scope="module")
def saved() -> dict[str, Any]:
    """A small two-plane MPFT as node-link data (as save writes it)."""
    G = build("mpft", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    return nx.node_link_data(G, edges="edges")


def _write(tmp_path: Path, saved: dict[str, Any], mutate: Callable[[dict[str, Any]], Any]) -> Path:
    d = copy.deepcopy(saved)
    mutate(d)
    path = tmp_path / "fabric.json"
    path.write_text(json.dumps(d))
    return path


@pytest.mark.parametrize("mutate", SAME_GRAPH.values(), ids=SAME_GRAPH.keys())
def test_load_builds_the_graph_networkx_reads(tmp_path, saved, mutate) -> None:
    path = _write(tmp_path, saved, mutate)
    assert layout(load(path)) == layout(reference_load(path))


@pytest.mark.parametrize("mutate", SAME_ERROR.values(), ids=SAME_ERROR.keys())
def test_load_names_the_same_first_offender(tmp_path, saved, mutate) -> None:
    path = _write(tmp_path, saved, mutate)
    with pytest.raises(FormatError) as want:
        try:
            reference_load(path)
        except (KeyError, TypeError) as exc:  # networkx's own exceptions, before the check
            raise FormatError(path, f"not a node-link graph: {exc}") from None
    with pytest.raises(FormatError) as got:
        load(path)
    assert str(got.value) == str(want.value)


def test_load_messages(tmp_path, saved) -> None:
    path = _write(tmp_path, saved, SAME_ERROR["capacity 0"])
    with pytest.raises(
        FormatError,
        match=r"edge 'node1/nvswitch'-'node1/gpu1': 'capacity' must "
        r"be a number of B/s from 1000 to 1e\+15, got 0$",
    ):
        load(path)
    # An edge to a node the file does not list: networkx adds the node bare, and the schema
    # check blamed "node 'ghost': kind None"; load names the edge and the missing node.
    path = _write(tmp_path, saved, lambda d: d["edges"].insert(3, {**_edge(d), "target": "ghost"}))
    with pytest.raises(
        FormatError,
        match=r"fabric\.json: edge #3 'node0/nic1'-'ghost' names node 'ghost', which the file "
        r"does not list in 'nodes'$",
    ):
        load(path)
    # ... before any later fault of an edge (nodes first, as check_schema orders them).
    path = _write(
        tmp_path,
        saved,
        lambda d: (
            d["edges"].append({**_edge(d), "target": "ghost"}),
            _edge(d, 0).update(capacity=0),
        ),
    )
    with pytest.raises(FormatError, match=r"names node 'ghost', which the file does not list"):
        load(path)


def _pipe(data: bytes) -> str:
    """A pipe holding ``data`` (written whole and closed), as bash's ``<(...)`` gives one."""
    r, w = os.pipe()
    os.write(w, data)
    os.close(w)
    return f"/dev/fd/{r}"


@pytest.mark.skipif(not Path("/dev/fd").is_dir(), reason="no /dev/fd")
def test_load_reads_a_pipe_once(saved) -> None:
    # A pipe cannot be read twice: a fabric from one loads as from a file, and one whose fault
    # only the full check finds (capacity 0) is refused for that fault, not as an empty file.
    # (Small fabrics: their JSON fits in the pipe's buffer.)
    G = load(_pipe(json.dumps(saved).encode()))
    assert layout(G) == layout(nx.node_link_graph(saved, edges="edges"))
    bad = copy.deepcopy(saved)
    SAME_ERROR["capacity 0"](bad)
    with pytest.raises(FormatError, match=r"'capacity' must be a number of B/s from 1000"):
        load(_pipe(json.dumps(bad).encode()))


def test_load_refuses_a_null_edge_end(tmp_path, saved) -> None:
    # networkx raises ValueError("None cannot be a node"); load says it, naming the file.
    path = _write(tmp_path, saved, lambda d: _edge(d).update(source=None))
    with pytest.raises(
        FormatError, match=r"fabric.json: not a node-link graph: None cannot be a node"
    ):
        load(path)


def test_load_leaves_the_collector_as_it_was(tmp_path, saved) -> None:
    path = _write(tmp_path, saved, SAME_GRAPH["as saved"])
    assert gc.isenabled()
    load(path)
    assert gc.isenabled()
    gc.disable()
    try:
        load(path)
        assert not gc.isenabled()
    finally:
        gc.enable()


# -- load refuses what the solvers assume away ----------------------------------------------


def _node(d: dict[str, Any], name: str) -> dict[str, Any]:
    return next(n for n in d["nodes"] if n["id"] == name)


REFUSED = {
    # The cases: a GPU labelled server 1 but wired inside server 0 gave busbw 0.00.
    "gpu in another server": (
        lambda d: _node(d, "node0/gpu1").update(node=1, index=7),
        r"edge 'node0/nvswitch'-'node0/gpu1': an nvlink edge stays inside one server, but "
        r"'node0/nvswitch' has node 0 and 'node0/gpu1' node 1$",
    ),
    "gpu in another server, its index taken there": (
        lambda d: _node(d, "node0/gpu1").update(node=1),
        r"gpu 'node1/gpu1': gpu 'node0/gpu1' has the same node 1 and index 1; each gpu of a "
        r"server needs its own index$",
    ),
    "nic relabelled to another index": (
        lambda d: _node(d, "node0/nic1").update(index=0),
        r"nic 'node0/nic1': nic 'node0/nic0' has the same node 0 and index 0; each nic of a "
        r"server needs its own index$",
    ),
    "gpu index a string": (
        lambda d: _node(d, "node0/gpu1").update(index="1"),
        r"gpu 'node0/gpu1': 'index' must be an integer from 0 to 1,000,000, got '1'$",
    ),
    "nvswitch index nan": (
        lambda d: _node(d, "node0/nvswitch").update(index=float("nan")),
        r"nvswitch 'node0/nvswitch': 'index' must be an integer from 0 to 1,000,000, got nan$",
    ),
    "plane a string": (
        lambda d: _node(d, "p1/spine3").update(plane="1"),
        r"switch 'p1/spine3': 'plane' must be an integer from 0 to 1, got '1' \(the fabric "
        r"has 2 planes\)$",
    ),
    "plane past the planes": (
        lambda d: _node(d, "p1/spine3").update(plane=2),
        r"'plane' must be an integer from 0 to 1, got 2",
    ),
    "ports negative": (
        lambda d: _node(d, "p1/spine3").update(ports=-3),
        r"switch 'p1/spine3': 'ports' must be an integer from 1 to 65,536, got -3$",
    ),
    "links 1e30": (
        lambda d: _edge(d).update(links=10**30),
        r"edge 'node0/nic1'-'p1/leaf0': 'links' must be at most 1,000,000, got 1e\+30 "
        r"\(an integer of 31 digits\)$",
    ),
    "capacity of 400 digits": (
        lambda d: _edge(d).update(capacity=10**400),
        r"edge 'node0/nic1'-'p1/leaf0': 'capacity' must be a number of B/s from 1000 to "
        r"1e\+15, got 1e\+400 \(an integer of 401 digits\)$",
    ),
    "ports of 401 digits": (
        lambda d: _node(d, "p1/spine3").update(ports=10**400),
        r"switch 'p1/spine3': 'ports' must be an integer from 1 to 65,536, got 1e\+400 "
        r"\(an integer of 401 digits\)$",
    ),
    "gpu index of 35 digits": (
        lambda d: _node(d, "node0/gpu1").update(index=-123456 * 10**29),
        r"gpu 'node0/gpu1': 'index' must be an integer from 0 to 1,000,000, got -1\.23456e\+34 "
        r"\(an integer of 35 digits\)$",
    ),
    # the server shape and rates a design was built with, read by the commands as they are:
    # NaN GPUs a server or an NVLink of "x" went on into acceptance kits and reports
    "gpus_per_node nan": (
        lambda d: d["graph"].update(gpus_per_node=float("nan")),
        r"graph attribute 'gpus_per_node' must be a positive integer, got nan$",
    ),
    "gpus_per_node negative": (
        lambda d: d["graph"].update(gpus_per_node=-8),
        r"graph attribute 'gpus_per_node' must be a positive integer, got -8$",
    ),
    "nvlink_GBps a string": (
        lambda d: d["graph"].update(nvlink_GBps="x"),
        r"graph attribute 'nvlink_GBps' must be a finite positive number, got 'x'$",
    ),
    "link_gbps infinite": (
        lambda d: d["graph"].update(link_gbps=float("inf")),
        r"graph attribute 'link_gbps' must be a finite positive number, got inf$",
    ),
    "gdr a string": (
        lambda d: d["graph"].update(gdr="no"),
        r"graph attribute 'gdr' must be true or false, got 'no'$",
    ),
    "links 1e30 as a float": (
        lambda d: _edge(d).update(links=1e30),
        r"'links' must be a positive integer, got 1e\+30$",
    ),
    "server without pcie edges": (
        # Its NICs are cabled, its GPUs cannot reach them (topo moe raised a ValueError).
        lambda d: d.update(
            edges=[
                e for e in d["edges"] if not (e["kind"] == "pcie" and e["source"][:6] == "node0/")
            ]
        ),
        r"gpu 'node0/gpu0': no pcie edge to a NIC, but server 0 has NICs cabled to switches; "
        r"every GPU of a server in the network reaches it through a NIC$",
    ),
    "cabled NIC no GPU reaches": (
        # Both GPUs of server 0 on nic0: nic1 carried nothing, and the LP was given an arc of
        # capacity 0 ("ValueError: arc capacities must be positive" from topo bandwidth).
        lambda d: _edge(d, 3).update(target="node0/nic0"),
        r"nic 'node0/nic1': cabled to a switch but no GPU of server 0 reaches it by a pcie "
        r"edge; a server has at most as many NICs as GPUs, each NIC serving one GPU or more$",
    ),
    "endpoint edge between two leaves": (
        lambda d: _edge(d).update(source="p0/leaf0"),
        r"edge 'p0/leaf0'-'p1/leaf0': an endpoint edge joins a NIC and a switch, not a leaf "
        r"and a leaf$",
    ),
    "pcie edge to a switch": (
        lambda d: _edge(d, 2).update(target="p0/leaf0"),
        r"a pcie edge joins a GPU and a NIC, not a gpu and a leaf$",
    ),
    "self loop": (
        lambda d: d["edges"].append({**_edge(d), "source": "p0/leaf0", "target": "p0/leaf0"}),
        r"edge 'p0/leaf0'-'p0/leaf0': an edge joins two different devices$",
    ),
    "repeated node": (
        lambda d: d["nodes"].append({**d["nodes"][2], "extra": 1}),
        r"node 'node0/gpu1' is given twice \(nodes #2 and #\d+\); ids must be unique$",
    ),
    "repeated edge": (
        lambda d: d["edges"].append({**_edge(d), "capacity": 1e9}),
        r"edge 'node0/nic1'-'p1/leaf0' is given twice \(edges #5 and #\d+\); parallel cables "
        r"are one edge whose 'links' counts them$",
    ),
    "repeated edge, reversed": (
        lambda d: d["edges"].append({**_edge(d), "source": "p1/leaf0", "target": "node0/nic1"}),
        r"edge 'p1/leaf0'-'node0/nic1' is given twice \(edges #5 and #\d+\)",
    ),
    "repeated edge, bad first": (
        lambda d: d["edges"].insert(0, {**_edge(d, 30), "capacity": 0}),
        r"edge 'node5/nvswitch'-'node5/gpu0' is given twice \(edges #0 and #31\)",
    ),
    "repeated edge, good first": (
        lambda d: d["edges"].insert(0, {**_edge(d, 30), "capacity": 1e9}),
        r"edge 'node5/nvswitch'-'node5/gpu0' is given twice \(edges #0 and #31\)",
    ),
    "boolean id": (  # (JSON's true is no integer id; networkx would take it for 1)
        lambda d: d["nodes"].append({"id": True, "kind": "nvswitch", "node": 0}),
        r"node #\d+: expected an object with a string or integer 'id'$",
    ),
    "repeated edge in a multigraph": (
        lambda d: (d.pop("multigraph"), d["edges"].append({**_edge(d), "capacity": 1e9})),
        r"edge 'node0/nic1'-'p1/leaf0' is given twice",
    ),
}


@pytest.mark.parametrize(("mutate", "message"), REFUSED.values(), ids=REFUSED.keys())
def test_load_refuses_a_fabric_the_solvers_would_misread(tmp_path, saved, mutate, message):
    path = _write(tmp_path, saved, mutate)
    with pytest.raises(FormatError, match=r"fabric\.json: .*" + message):
        load(path)


def test_check_wiring_accepts_every_family() -> None:
    from topo.fabric import check_wiring

    for family in ("ft2", "ft3", "mrft", "mpft", "dragonfly", "slimfly"):
        kwargs = {"switch_ports": 8} if family != "slimfly" else {"q": 5}
        check_wiring(build(family, **kwargs))


def test_load_refuses_an_integer_past_pythons_limit(tmp_path, saved) -> None:
    # Issue 11: json raises a bare ValueError for integers of over 4,300 digits.
    text = json.dumps(saved, indent=1).replace('"links": 1', '"links": ' + "7" * 5000, 1)
    line = 1 + text[: text.index("7" * 5000)].count("\n")
    path = tmp_path / "fabric.json"
    path.write_text(text)
    with pytest.raises(FormatError, match=rf"fabric.json:{line}: a number of 5,000 digits") as e:
        load(path)
    assert e.value.line == line


@pytest.mark.parametrize("seed", range(6))
def test_components_within_are_networkx_components_of_the_subgraph(seed) -> None:
    rng = random.Random(seed)
    G = nx.gnm_random_graph(60, rng.randint(20, 90), seed=seed)
    within = rng.sample(range(70), 45)  # some not in G
    found = components_within(G, within)
    assert sorted(map(sorted, found)) == sorted(
        map(sorted, nx.connected_components(G.subgraph(within)))
    )
    firsts = [next(v for v in within if v in c) for c in found]
    assert firsts == sorted(firsts, key=within.index)  # by first vertex in ``within``


def test_an_edge_to_an_undeclared_node_is_named_as_such(tmp_path, saved) -> None:
    """An edge naming no declared node must not read "kind None is not one of
    ...", as if the file declared a node without a kind; the message says which edge names
    it, on load and in check_schema of a graph networkx made from such a file."""
    edge = saved["edges"][3]
    path = _write(tmp_path, saved, lambda d: d["edges"].insert(3, {**edge, "target": "ghost"}))
    with pytest.raises(FormatError) as got:
        load(path)
    assert str(got.value) == (
        f"{path}: edge #3 {edge['source']!r}-'ghost' names node 'ghost', which the file does "
        "not list in 'nodes'"
    )
    G = nx.node_link_graph(json.loads(path.read_text()), edges="edges")
    with pytest.raises(FormatError) as got:
        check_schema(G, path)
    assert str(got.value) == (
        f"{path}: node 'ghost': kind None is not one of gpu, nic, nvswitch, leaf, spine, core, "
        f"switch: it has no attributes, as when edge {edge['source']!r}-'ghost' names an id "
        "that no node of the file declares"
    )
    # a declared node without a kind and without edges is told only its kind
    path = _write(tmp_path, saved, lambda d: d["nodes"].append({"id": "lone"}))
    with pytest.raises(FormatError) as got:
        load(path)
    assert str(got.value).endswith(
        "node 'lone': kind None is not one of gpu, nic, nvswitch, leaf, spine, core, switch"
    )


@pytest.mark.parametrize("text", ["", "\n  \n"])
def test_an_empty_fabric_file_says_so(tmp_path: Path, text: str) -> None:
    # It said "not JSON: Expecting value".
    path = tmp_path / "fabric.json"
    path.write_text(text)
    with pytest.raises(
        FormatError,
        match=r"fabric\.json:1: empty file: expected a fabric JSON written by 'topo build -o' or "
        r"'topo import -o'$",
    ):
        load(path)


def test_a_fabric_file_with_a_byte_order_mark_loads(tmp_path: Path, saved) -> None:
    plain = _write(tmp_path, saved, lambda d: None)
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    assert summarize(load(bom)) == summarize(load(plain))


# -- a JSON file nested too deeply is one line naming the file, from every reader of JSON ---

runner = CliRunner()
DEEP = "[" * 100_000 + "]" * 100_000
TOO_DEEP = f"nested too deeply (over about {sys.getrecursionlimit():,} levels of arrays or objects)"


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path]:
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP + "\n")
    fabric = tmp_path / "c1.json"
    args = ["build", "ft2", "--switch-ports", "4", "--gpus-per-node", "1", "--nics-per-node", "1"]
    assert runner.invoke(app, [*args, "-o", str(fabric)]).exit_code == 0
    return deep, fabric


@pytest.mark.parametrize(
    ("args", "prefix"),
    [
        (["bandwidth", "{deep}"], "not JSON"),
        (["export", "cabling", "{deep}"], "not JSON"),
        (["moe", "{fabric}", "--model", "{deep}"], "not JSON"),
        (["moe", "{fabric}", "--expert-load", "{deep}"], "not JSON"),
        (["collective", "{fabric}", "--compare", "{deep}"], "not valid JSON"),
    ],
    ids=["bandwidth", "export", "moe-model", "moe-expert-load", "collective-compare"],
)
def test_a_deep_json_file_is_one_line(
    files: tuple[Path, Path], args: list[str], prefix: str
) -> None:
    deep, fabric = files
    argv = [a.format(deep=deep, fabric=fabric) for a in args]
    r = runner.invoke(app, argv)
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    assert r.stderr == f"topo: error: {deep}: {prefix}: {TOO_DEEP}\n"
