"""What every builder owes the rest of topo (topo.builders, its shared parts).

The graph schema of topo.fabric (exact node and edge keys, types, units), the servers (GPUs,
NVSwitch, NICs), port budgets and non-blocking capacity at every switch, the JSON round trip,
and every argument check of ``build`` and ``max_gpus``.
"""

from __future__ import annotations

import enum
from collections import Counter

import networkx as nx
import pytest
from formats._real import real_file

import topo.fabric.schema
from topo.builders import FAMILIES, build, max_gpus
from topo.errors import SpecError
from topo.fabric import (
    BUILT_GRAPH_KEYS,
    EDGE_KEYS,
    GRAPH_KEYS,
    IMPORTED_EDGE_KEYS,
    IMPORTED_NIC_KEYS,
    NODE_KEYS,
    SWITCH_KINDS,
    edge_keys,
    load,
    node_keys,
    save,
    summarize,
)
from topo.formats import read_ibnetdiscover

CASES = [
    ("ft2", {"switch_ports": 8}),
    ("ft2", {"gpus": 1000}),
    ("ft2", {"gpus": 1000, "oversubscription": 3}),
    ("ft2", {"gpus": 64}),
    ("ft2", {"switch_ports": 6, "gpus_per_node": 3, "nics_per_node": 3}),
    ("ft3", {"switch_ports": 8}),
    ("ft3", {"switch_ports": 8, "gpus": 48}),
    ("ft3", {"gpus": 3000}),
    ("ft3", {"gpus": 1000}),
    ("ft3", {"gpus": 16}),
    ("mrft", {}),
    ("mrft", {"gpus": 128}),
    ("mrft", {"gpus": 1000, "oversubscription": 7}),
    ("mrft", {"gpus_per_node": 6, "nics_per_node": 6}),
    ("mrft", {"gpus": 520, "nics_per_node": 1}),
    ("mpft", {"switch_ports": 8}),
    ("mpft", {"gpus": 1000}),
    ("mpft", {"gpus": 128}),
    ("mpft", {"gpus": 1000, "oversubscription": 3, "nics_per_node": 4}),
    ("mpft", {"switch_ports": 16, "gpus_per_node": 1, "nics_per_node": 1}),
]
IDS = [f"{f}-" + ",".join(f"{k}={v}" for k, v in kw.items()) for f, kw in CASES]


@pytest.fixture(scope="module", params=CASES, ids=IDS)
def fabric(request):
    family, kwargs = request.param
    return build(family, **kwargs)


# --- schema ---------------------------------------------------------------------------------


def test_every_node_and_edge_carries_exactly_the_schema_keys(fabric):
    for v, d in fabric.nodes(data=True):
        assert isinstance(v, str)
        assert set(d) == NODE_KEYS[d["kind"]], v
    for u, v, d in fabric.edges(data=True):
        assert set(d) == EDGE_KEYS, (u, v)
    assert set(fabric.graph) == BUILT_GRAPH_KEYS


# Every family, built with its defaults at a small radix, and two imported dumps.
EVERY_FAMILY = [
    ("ft2", {"switch_ports": 8}),
    ("ft2", {"switch_ports": 8, "oversubscription": 3}),
    ("ft3", {"switch_ports": 8}),
    ("mrft", {"switch_ports": 8}),
    ("mpft", {"switch_ports": 8}),
    ("dragonfly", {"switch_ports": 8}),
    ("dragonfly", {"switch_ports": 8, "arrangement": "palmtree"}),
    ("slimfly", {"switch_ports": 12}),
    ("rail-only", {"switch_ports": 8}),
    ("rail-only", {"switch_ports": 8, "gpus": 64}),
    ("hpn", {"switch_ports": 32, "gpus": 128}),
    ("ibnetdiscover", {"dump": "ibtopotool_1.topo"}),
    ("ibnetdiscover", {"dump": "topograph_dgx_gb200_ndr_superpod.out"}),
]


@pytest.fixture(
    scope="module",
    params=EVERY_FAMILY,
    ids=[f"{f}-" + ",".join(f"{k}={v}" for k, v in kw.items()) for f, kw in EVERY_FAMILY],
)
def any_fabric(request):
    family, kwargs = request.param
    if family == "ibnetdiscover":
        return read_ibnetdiscover(real_file("ibnetdiscover", kwargs["dump"]))
    return build(family, **kwargs)


def test_every_family_carries_exactly_the_documented_keys(any_fabric):
    family = any_fabric.graph["family"]
    assert set(any_fabric.graph) == GRAPH_KEYS[family]
    for v, d in any_fabric.nodes(data=True):
        assert set(d) == node_keys(family, d["kind"]), v
    for u, v, d in any_fabric.edges(data=True):
        assert set(d) == edge_keys(family), (u, v)


def test_documented_keys_by_family():
    assert set(GRAPH_KEYS) == {*FAMILIES, "ibnetdiscover"}
    assert GRAPH_KEYS["dragonfly"] - BUILT_GRAPH_KEYS == {
        "routers_per_group",
        "endpoints_per_router",
        "global_ports",
        "groups",
        "arrangement",
    }
    assert GRAPH_KEYS["slimfly"] - BUILT_GRAPH_KEYS == {
        "q",
        "network_radix",
        "endpoints_per_router",
    }
    assert node_keys("ibnetdiscover", "nic") == IMPORTED_NIC_KEYS
    assert node_keys("ibnetdiscover", "switch") == NODE_KEYS["switch"]
    assert node_keys("dragonfly", "leaf") == NODE_KEYS["leaf"]
    assert edge_keys("ibnetdiscover") == IMPORTED_EDGE_KEYS
    assert edge_keys("slimfly") == EDGE_KEYS


def test_the_module_docstring_names_every_key():
    doc = topo.fabric.schema.__doc__
    keys = set().union(*GRAPH_KEYS.values(), *NODE_KEYS.values(), IMPORTED_NIC_KEYS)
    missing = sorted(k for k in keys | IMPORTED_EDGE_KEYS if f"``{k}``" not in doc)
    assert missing == []
    families = sorted(f for f in GRAPH_KEYS if f"``{f}``" not in doc)
    assert families == []


def test_attribute_types(fabric):
    for v, d in fabric.nodes(data=True):
        for key in ("node", "index", "tier", "plane", "rail", "ports"):
            if key in d:
                assert type(d[key]) is int, (v, key)
    for u, v, d in fabric.edges(data=True):
        assert type(d["capacity"]) is float and d["capacity"] > 0, (u, v)
        assert type(d["links"]) is int and d["links"] >= 1, (u, v)
    g = fabric.graph
    assert type(g["switch_ports"]) is int and type(g["max_gpus"]) is int
    for key in ("link_gbps", "nvlink_GBps", "pcie_GBps", "oversubscription"):
        assert type(g[key]) is float


def test_edges_join_the_right_kinds(fabric):
    tier = {"leaf": 1, "spine": 2, "core": 3}
    for u, v, d in fabric.edges(data=True):
        ku, kv = fabric.nodes[u]["kind"], fabric.nodes[v]["kind"]
        pair = {ku, kv}
        if d["kind"] == "nvlink":
            assert pair == {"gpu", "nvswitch"}
        elif d["kind"] == "pcie":
            assert pair == {"gpu", "nic"}
        elif d["kind"] == "endpoint":
            assert pair == {"nic", "leaf"}
        else:
            assert d["kind"] == "fabric"
            assert ku in SWITCH_KINDS and kv in SWITCH_KINDS
            assert abs(tier[ku] - tier[kv]) == 1
            assert fabric.nodes[u]["plane"] == fabric.nodes[v]["plane"]
        if {ku, kv} <= {"gpu", "nic", "nvswitch"}:
            assert fabric.nodes[u]["node"] == fabric.nodes[v]["node"]


def test_capacities_in_bytes_per_second(fabric):
    g = fabric.graph
    line = g["link_gbps"] * 1e9 / 8  # 400 Gb/s -> 50e9 B/s
    expected = {"nvlink": g["nvlink_GBps"] * 1e9, "pcie": g["pcie_GBps"] * 1e9, "endpoint": line}
    for u, v, d in fabric.edges(data=True):
        want = d["links"] * line if d["kind"] == "fabric" else expected[d["kind"]]
        assert d["capacity"] == pytest.approx(want), (u, v)
        if d["kind"] != "fabric":
            assert d["links"] == 1


def test_servers(fabric):
    g = fabric.graph
    gpn, nics = g["gpus_per_node"], g["nics_per_node"]
    per_node: dict[int, Counter] = {}
    for _, d in fabric.nodes(data=True):
        if d["kind"] in ("gpu", "nic", "nvswitch"):
            per_node.setdefault(d["node"], Counter())[d["kind"]] += 1
    assert sorted(per_node) == list(range(len(per_node)))
    assert all(c == Counter(gpu=gpn, nic=nics, nvswitch=1) for c in per_node.values())
    assert len(per_node) * gpn == summarize(fabric).gpus
    for n in per_node:
        for i in range(gpn):
            gpu = f"node{n}/gpu{i}"
            assert fabric.nodes[gpu]["index"] == i
            assert fabric.has_edge(gpu, f"node{n}/nvswitch")
            assert fabric.has_edge(gpu, f"node{n}/nic{i * nics // gpn}")
        for j in range(nics):
            cables = [v for v in fabric[f"node{n}/nic{j}"] if fabric.nodes[v]["kind"] == "leaf"]
            assert len(cables) == 1


def test_the_whole_fabric_is_connected(fabric):
    assert nx.is_connected(fabric)


def test_name_and_graph_attributes(fabric):
    g = fabric.graph
    s = summarize(fabric)
    assert g["name"] == f"{g['family']}-{s.gpus}"
    assert g["family"] in FAMILIES
    assert g["planes"] == (g["nics_per_node"] if g["family"] == "mpft" else 1)
    assert g["max_gpus"] == max_gpus(
        g["family"],
        switch_ports=g["switch_ports"],
        gpus_per_node=g["gpus_per_node"],
        nics_per_node=g["nics_per_node"],
        oversubscription=g["oversubscription"],
    )
    assert s.gpus <= g["max_gpus"]


def test_switch_attributes(fabric):
    family = fabric.graph["family"]
    for v, d in fabric.nodes(data=True):
        if d["kind"] not in SWITCH_KINDS:
            continue
        assert d["ports"] == fabric.graph["switch_ports"]
        assert d["tier"] == {"leaf": 1, "spine": 2, "core": 3}[d["kind"]]
        if family == "mpft":
            assert v.startswith(f"p{d['plane']}/")
        else:
            assert d["plane"] == 0
        if family == "mrft" and d["kind"] == "leaf":
            assert v.startswith(f"rail{d['rail']}/")
        else:
            assert d["rail"] == -1


# --- ports and non-blocking capacity --------------------------------------------------------


def test_ports_and_non_blocking_capacity(fabric):
    """Every switch uses at most its ports; below the top tier of its plane, a switch's up
    capacity times the oversubscription r covers its down capacity (r = 1 above the leaves);
    a leaf under spines keeps exactly u = k/(r+1) up ports; spines and cores only go down in the
    two-layer families and at the top."""
    g = fabric.graph
    k, r = g["switch_ports"], g["oversubscription"]
    u = round(k / (r + 1))
    top: dict[int, int] = {}
    for _, d in fabric.nodes(data=True):
        if d["kind"] in SWITCH_KINDS:
            top[d["plane"]] = max(top.get(d["plane"], 0), d["tier"])
    for v, d in fabric.nodes(data=True):
        if d["kind"] not in SWITCH_KINDS:
            continue
        up = down = up_ports = ports = 0
        for w, e in fabric[v].items():
            ports += e["links"]
            other = fabric.nodes[w]
            if other["kind"] in SWITCH_KINDS and other["tier"] > d["tier"]:
                up += e["capacity"]
                up_ports += e["links"]
            else:
                down += e["capacity"]
        assert ports <= k, v
        if d["tier"] < top[d["plane"]]:
            ratio = r if d["tier"] == 1 else 1.0
            assert up * ratio >= down * (1 - 1e-12), v
            if d["tier"] == 1:
                assert up_ports == u, v
        else:
            assert up == 0, v


# --- the JSON file --------------------------------------------------------------------------


def test_save_load_round_trip(tmp_path, fabric):
    path = tmp_path / "fabric.json"
    save(fabric, path)
    H = load(path)
    assert H.graph == fabric.graph
    assert dict(H.nodes(data=True)) == dict(fabric.nodes(data=True))
    assert {frozenset((u, v)): d for u, v, d in H.edges(data=True)} == {
        frozenset((u, v)): d for u, v, d in fabric.edges(data=True)
    }
    assert summarize(H) == summarize(fabric)


# --- one GPU per node -----------------------------------------------------------------------


def test_one_gpu_per_node_still_has_an_nvswitch():
    G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    assert G.nodes["node0/nvswitch"] == {"kind": "nvswitch", "node": 0}
    assert G.has_edge("node0/gpu0", "node0/nvswitch")
    assert G.has_edge("node0/gpu0", "node0/nic0")


def test_gpus_share_nics_in_order():
    # 8 GPUs, 4 NICs: GPU i uses NIC i*4//8 = i//2.
    G = build("ft2", gpus=8, nics_per_node=4)
    nics = [next(v for v in G[f"node0/gpu{i}"] if G.nodes[v]["kind"] == "nic") for i in range(8)]
    assert nics == [f"node0/nic{i // 2}" for i in range(8)]


# --- build and max_gpus ---------------------------------------------------------------------


def test_families():
    assert FAMILIES == (
        "ft2",
        "ft3",
        "mrft",
        "mpft",
        "dragonfly",
        "slimfly",
        "rail-only",
        "hpn",
    )


def test_max_gpus_closed_forms():
    # 64 ports, 8 GPUs and 8 NICs per node: FT2 k^2/2 = 2048; FT3 k^3/4 = 65536;
    # MRFT 8 rails of 8 leaves of 32 nodes = 2048 GPUs; MPFT 8 planes of 2048 = 16384.
    # Dragonfly, balanced a = 2p = 2h = k/2 (Kim et al. 2008): a p (a h + 1) endpoints,
    # 32 * 16 * 513 = 262656. Slim Fly (Besta and Hoefler 2014): the largest prime power q with
    # k' = (3q - delta)/2 network ports and p = ceil(k'/2) endpoint ports fitting in k;
    # q = 27 (delta = -1): k' = 41, p = 21, 2 q^2 = 1458 routers, 30618 endpoints, rounded
    # down to whole 8-GPU nodes: 30616. Rail-only: 8 rails of k^2/2 = 2048 domains of 8 GPUs =
    # 16384. HPN (k = 64): segments of 64 hosts, (64 - 64/16) // 8 = 7 segments: 3584 GPUs.
    assert [max_gpus(f) for f in FAMILIES] == [
        2048,
        65536,
        2048,
        16384,
        262656,
        30616,
        16384,
        3584,
    ]
    # 32 ports: FT2 512; FT3 8192; MRFT 32 // 8 = 4 leaves per rail of 16 nodes = 512 GPUs;
    # MPFT 512 nodes of 8 GPUs = 4096; Dragonfly 16 * 8 * 129 = 16512; Slim Fly q = 13
    # (delta = 1): k' = 19, p = 10, 338 routers, 3380 endpoints -> 3376 in 8-GPU nodes
    # (q = 16 would need 24 + 12 = 36 ports). Rail-only 32^2/2 = 512 domains = 4096 GPUs;
    # HPN (32 - 2) // 8 = 3 segments of 32 hosts = 768 GPUs.
    assert [max_gpus(f, switch_ports=32) for f in FAMILIES] == [
        512,
        8192,
        512,
        4096,
        16512,
        3376,
        4096,
        768,
    ]


def test_default_builds_the_maximum():
    G = build("ft2", switch_ports=8)
    assert summarize(G).gpus == G.graph["max_gpus"] == 32
    assert G.graph["name"] == "ft2-32"


def test_family_may_be_an_enum_member():
    class Family(str, enum.Enum):
        ft2 = "ft2"

    G = build(Family.ft2, switch_ports=4)
    assert G.graph["family"] == "ft2"
    assert G.graph["name"] == "ft2-8"
    assert max_gpus(Family.ft2, switch_ports=4) == 8


def test_whole_number_non_integer_ratio_is_accepted():
    # 64/(5/3 + 1) = 24 up ports, 40 down: 64 * 40 = 2560 endpoints.
    assert max_gpus("ft2", oversubscription=5 / 3) == 2560


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"family": "torus"},
            r"unknown family 'torus'; choose one of ft2, ft3, mrft, mpft, dragonfly, slimfly",
        ),
        ({"switch_ports": 7}, r"switch_ports must be an even number from 4 to 1024, got 7"),
        ({"switch_ports": 2}, r"switch_ports must be an even number from 4 to 1024, got 2"),
        ({"switch_ports": 0}, r"switch_ports must be an even number from 4 to 1024, got 0"),
        ({"switch_ports": 1026}, r"switch_ports must be an even number from 4 to 1024, got 1026"),
        ({"switch_ports": 64.0}, r"switch_ports must be a whole number, got 64.0"),
        ({"switch_ports": True}, r"switch_ports must be a whole number, got True"),
        ({"gpus_per_node": 0}, r"gpus_per_node must be from 1 to 1024, got 0"),
        ({"gpus_per_node": 2048, "nics_per_node": 1}, r"gpus_per_node must be from 1 to 1024"),
        ({"link_gbps": 1e300}, r"link_gbps must be between 0.001 and 1e\+06 Gb/s"),
        ({"link_gbps": 1e-300}, r"link_gbps must be between"),
        ({"nvlink_GBps": 1e7}, r"nvlink_GBps must be between 0.001 and 1e\+06 GB/s"),
        ({"nics_per_node": 0}, r"nics_per_node must be at least 1, got 0"),
        ({"nics_per_node": 16}, r"nics_per_node \(16\) must not exceed gpus_per_node \(8\)"),
        ({"nics_per_node": 3}, r"nics_per_node \(3\) must divide gpus_per_node \(8\)"),
        ({"nics_per_node": "8"}, r"nics_per_node must be a whole number, got '8'"),
        ({"link_gbps": 0}, r"link_gbps must be a positive number of Gb/s, got 0"),
        ({"link_gbps": -400.0}, r"link_gbps must be a positive number of Gb/s, got -400.0"),
        ({"link_gbps": float("nan")}, r"link_gbps must be a positive number of Gb/s, got nan"),
        ({"link_gbps": float("inf")}, r"link_gbps must be a positive number of Gb/s, got inf"),
        ({"nvlink_GBps": 0.0}, r"nvlink_GBps must be a positive number of GB/s, got 0.0"),
        ({"pcie_GBps": -1}, r"pcie_GBps must be a positive number of GB/s, got -1"),
        ({"oversubscription": 0.5}, r"oversubscription must be a number of at least 1 .*got 0.5"),
        ({"oversubscription": float("nan")}, r"oversubscription must be a number of at least 1"),
        (
            {"oversubscription": 2},
            r"oversubscription 2 does not give a whole number of up ports on a leaf of 64 ports "
            r"\(64/\(2\+1\) = 21.33\); the whole-number ratios for 64 ports are "
            r"1, 3, 7, 15, 31, 63",
        ),
        ({"oversubscription": 100}, r"oversubscription 100 does not give a whole number"),
        (  # the value as given, and digits enough to show the quotient is not whole
            {"oversubscription": 1.0000001},
            r"oversubscription 1.0000001 does not give .* \(64/\(1.0000001\+1\) = 31.9999984\)",
        ),
        (
            {"switch_ports": 6, "oversubscription": 3},
            r"whole-number ratios for 6 ports are 1, 2, 5 ",
        ),
        ({"gpus": 0}, r"gpus must be a positive multiple of gpus_per_node \(8\), got 0"),
        ({"gpus": -8}, r"gpus must be a positive multiple of gpus_per_node \(8\), got -8"),
        ({"gpus": 12}, r"gpus must be a positive multiple of gpus_per_node \(8\), got 12"),
        ({"gpus": 128.0}, r"gpus must be a whole number, got 128.0"),
        ({"family": "ft3", "oversubscription": 2}, r"oversubscription must be 1 for ft3"),
    ],
)
def test_build_refuses(kwargs, message):
    kwargs = dict(kwargs)
    family = kwargs.pop("family", "ft2")
    with pytest.raises(SpecError, match=message):
        build(family, **kwargs)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_refuses_one_node_too_many(family):
    k = 32 if family == "hpn" else 8  # (HPN's radix is a multiple of 32)
    top = max_gpus(family, switch_ports=k)
    with pytest.raises(SpecError, match=rf"holds at most .*asked for {top + 8} GPUs"):
        build(family, switch_ports=k, gpus=top + 8)
    assert summarize(build(family, switch_ports=k, gpus=top)).gpus == top


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"family": "torus"}, r"unknown family 'torus'"),
        ({"switch_ports": 5}, r"switch_ports must be an even number from 4 to 1024, got 5"),
        ({"nics_per_node": 5}, r"nics_per_node \(5\) must divide gpus_per_node \(8\)"),
        ({"oversubscription": 4}, r"oversubscription 4 does not give a whole number"),
    ],
)
def test_max_gpus_refuses(kwargs, message):
    kwargs = dict(kwargs)
    family = kwargs.pop("family", "mpft")
    with pytest.raises(SpecError, match=message):
        max_gpus(family, **kwargs)


def test_build_refuses_graphs_too_large_to_hold():
    # ft3 of 128-port switches reaches k^3/4 = 524,288 endpoints: at the limit, allowed by
    # max_gpus; 130 ports would give 130^3/4 = 549,250 > 2^19 = 524,288.
    assert max_gpus("ft3", switch_ports=128) == 128**3 // 4 == 1 << 19
    with pytest.raises(SpecError, match="at most 524,288 GPUs in one graph; this ft3 would have"):
        build("ft3", switch_ports=130)
    # 1,024 ports (the largest radix accepted): k^2/2 = 524,288 endpoints, at the limit; a
    # three-layer tree of them, k^3/4 = 268,435,456, is refused.
    assert max_gpus("ft2", switch_ports=1024, gpus_per_node=1, nics_per_node=1) == 1 << 19
    with pytest.raises(SpecError, match=r"this ft3 would have 268,435,456 \(pass gpus for"):
        build("ft3", switch_ports=1024, gpus_per_node=1, nics_per_node=1)
