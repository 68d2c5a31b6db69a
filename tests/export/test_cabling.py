"""The cabling plan: one row per cable, ports within radix, hosts low and uplinks high."""

from __future__ import annotations

import csv
import io
import re
from collections import Counter

from tests.formats._real import real_file
from topo.builders import build
from topo.export import CABLING_COLUMNS, cabling_plan, export, fabric_hosts
from topo.fabric import summarize
from topo.formats import read_ibnetdiscover


def rows(G):
    return list(csv.DictReader(io.StringIO(export(G, "cabling").text)))


def check_ports(G, plan):
    """Every switch port used at most once, each within 1..radix."""
    used = Counter()
    for r in plan:
        for name, kind, port in (
            ("A-Node Name", "A-Type", "A-Port"),
            ("Z-Node Name", "Z-Type", "Z-Port"),
        ):
            if r[kind] == "Switch":
                assert 1 <= int(r[port]) <= G.nodes[r[name]]["ports"]
                used[(r[name], int(r[port]))] += 1
    assert max(used.values()) == 1


def test_header_is_ufm_p2p():
    G = build("ft2", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    header = export(G, "cabling").text.splitlines()[0].split(",")
    # UFM Cable Validation's P2P columns, then cable class and length class
    assert header[:6] == ["A-Node Name", "A-Type", "A-Port", "Z-Node Name", "Z-Type", "Z-Port"]
    assert tuple(header) == CABLING_COLUMNS


def test_mpft_rows_and_ports():
    # k = 8: 32 servers x 8 NICs = 256 host cables; 8 planes x 8 leaves x 4 uplinks = 256 links
    G = build("mpft", switch_ports=8)
    plan = rows(G)
    assert Counter(r["Cable"] for r in plan) == {"endpoint": 256, "optical": 256}
    check_ports(G, plan)
    # leaf: hosts on ports 1-4 (server n on port n % 4 + 1), spines on 5-8
    leaf = [r for r in plan if r["Z-Node Name"] == "p3/leaf1"]
    assert [(r["A-Node Name"], r["A-Port"], r["Z-Port"]) for r in leaf] == [
        (f"node{n}", "4", str(n % 4 + 1)) for n in range(4, 8)
    ]
    up = [r for r in plan if r["A-Node Name"] == "p3/leaf1"]
    assert sorted(int(r["A-Port"]) for r in up) == [5, 6, 7, 8]
    assert {r["Length"] for r in leaf} == {"short"} and {r["Length"] for r in up} == {"medium"}


def test_oversubscribed_leaf_uplinks_on_the_top_ports():
    # k = 8 at 3:1: u = 8 / 4 = 2 up ports (7, 8), 6 down (docs/builders.md)
    G = build("ft2", switch_ports=8, oversubscription=3, gpus_per_node=1, nics_per_node=1)
    plan = rows(G)
    check_ports(G, plan)
    up = sorted(int(r["A-Port"]) for r in plan if r["A-Node Name"] == "leaf0")
    down = sorted(int(r["Z-Port"]) for r in plan if r["Z-Node Name"] == "leaf0")
    assert up == [7, 8] and down == [1, 2, 3, 4, 5, 6]


def test_ft3_lengths_and_counts():
    G = build("ft3", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    plan = rows(G)
    s = summarize(G)
    assert len(plan) == s.links + s.endpoint_links
    check_ports(G, plan)
    lengths = Counter((r["A-Node Name"].split("/")[-1][:4], r["Length"]) for r in plan)
    assert lengths[("leaf", "medium")] == 16 and lengths[("spin", "long")] == 16


def test_imported_fabric_every_cable_once():
    G = read_ibnetdiscover(real_file("ibnetdiscover", "loginoff_fdr10_sx6036.topo"))
    plan = cabling_plan(G, fabric_hosts(G))
    s = summarize(G)
    assert len(plan) == s.links + s.endpoint_links
    check_ports(G, [dict(zip(CABLING_COLUMNS, map(str, c.row()), strict=True)) for c in plan])


def test_dragonfly_hosts_then_local_then_global():
    # a = 4 routers per group, p = 2 hosts, h = 2 global ports: 2 + 3 + 2 = 7 ports used
    G = build(
        "dragonfly",
        routers_per_group=4,
        endpoints_per_router=2,
        global_ports=2,
        groups=9,
        gpus_per_node=1,
        nics_per_node=1,
    )
    plan = rows(G)
    check_ports(G, plan)
    ports = {}
    for r in plan:
        for end, other in (("A", "Z"), ("Z", "A")):
            if r[f"{end}-Node Name"] == "g0/r1":
                ports[int(r[f"{end}-Port"])] = (r[f"{other}-Node Name"], r["Length"])
    assert [ports[p][0].startswith("node") for p in (1, 2)] == [True, True]
    assert {ports[p][0] for p in (3, 4, 5)} == {"g0/r0", "g0/r2", "g0/r3"}
    assert {ports[p][1] for p in (3, 4, 5)} == {"medium"}
    assert all(not ports[p][0].startswith("g0/") and ports[p][1] == "long" for p in (6, 7))


def test_host_ports_follow_the_dumps_hca_names():
    # NVIDIA topograph's GB200 SuperPOD dump: each compute tray's CAs are named mlx5_0, mlx5_1,
    # mlx5_4, mlx5_5 in their descriptions ("<host> <device>"). UFM's mapping port n <-> HCA
    # n - 1 puts mlx5_N on port N + 1, cabled to the leaf the dump's switch section lists it on.
    path = real_file("ibnetdiscover", "topograph_dgx_gb200_ndr_superpod.out")
    switch = re.compile(r'^Switch\s+\d+\s+"[^"]+"\s+# "([^"]+)"')
    ca_port = re.compile(r'^\[\d+\]\s+"H-[0-9a-f]+"\[\d+\].*# "(\S+) (mlx5_(\d+))"')
    want, leaf = set(), None
    for line in path.read_text().splitlines():
        if m := switch.match(line):
            leaf = m.group(1)
        elif line.startswith(("Ca", "vendid", "devid", "sysimgguid", "caguid")) or not line:
            leaf = None if line.startswith("Ca") else leaf
        elif leaf is not None and (m := ca_port.match(line)):
            want.add((m.group(1), int(m.group(3)) + 1, leaf))
    headers = [x for x in path.read_text().splitlines() if x.startswith("Ca") and "mlx5_" in x]
    assert len(want) == len(headers) == 72  # every CA named mlx5_N, each cabled once
    tray = {(p, s) for h, p, s in want if h == "a08-p1-dgx-04-c01"}
    assert sorted(p for p, _ in tray) == [1, 2, 5, 6]
    G = read_ibnetdiscover(path)
    plan = [
        c
        for c in cabling_plan(G, fabric_hosts(G))
        if c.a_type == "Host" and c.a_name in {h for h, _, _ in want}
    ]
    assert {(c.a_name, c.a_port, c.z_name) for c in plan} == want
    check_ports(G, [dict(zip(CABLING_COLUMNS, map(str, c.row()), strict=True)) for c in plan])


def test_built_hosts_keep_nic_order():
    # a built NIC i is mlx5_i (hca_names), so port i + 1 as before
    G = build("ft2", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    plan = [r for r in rows(G) if r["A-Node Name"] == "node1"]
    got = sorted((int(r["A-Port"]), r["Z-Node Name"]) for r in plan)
    assert got == sorted(
        (i + 1, next(s for s in G.adj[f"node1/nic{i}"] if G.nodes[s]["kind"] == "leaf"))
        for i in range(4)
    )
