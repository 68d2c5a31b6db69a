"""Tests of topo.formats.ibnetdiscover.

Expected values of the real dumps were counted with grep/awk on the files themselves (the
command is in the comment above each figure), never by running the reader. The dumps live in
../shared/data/real/ibnetdiscover beside the checkout (see its PROVENANCE.md); tests that need
them are skipped when that folder is absent.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import networkx as nx
import pytest

from topo.errors import FormatError, SpecError
from topo.fabric import (
    IMPORTED_EDGE_KEYS,
    IMPORTED_NIC_KEYS,
    NODE_KEYS,
    check_schema,
    load,
    save,
    summarize,
)
from topo.formats import (
    import_ibnetdiscover,
    link_rate_Bps,
    read_ibnetdiscover,
    read_ibnetdiscover_dumps,
)
from topo.formats.ibnetdiscover import LANE_RATES_GBPS, read_name_map

from ._real import real_file


def ibnd(name: str) -> Path:
    return real_file("ibnetdiscover", name)


def write(tmp_path: Path, text: str, name: str = "fabric.topo") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def assert_schema(G: nx.Graph) -> None:
    """Every node and edge carries exactly the keys of the imported-fabric schema."""
    for v, d in G.nodes(data=True):
        want = IMPORTED_NIC_KEYS if d["kind"] == "nic" else NODE_KEYS["switch"]
        assert set(d) == want, v
    for u, v, d in G.edges(data=True):
        assert set(d) == IMPORTED_EDGE_KEYS, (u, v)
        kinds = {G.nodes[u]["kind"], G.nodes[v]["kind"]}
        assert d["kind"] == ("fabric" if kinds == {"switch"} else "endpoint")
        if d["kind"] == "endpoint":
            assert kinds == {"nic", "switch"} and d["links"] == 1
    check_schema(G)


def by_tier(G: nx.Graph) -> Counter[int]:
    return Counter(d["tier"] for _, d in G.nodes(data=True) if d["kind"] == "switch")


def edges_of(G: nx.Graph, kind: str) -> list[dict]:
    return [d for _, _, d in G.edges(data=True) if d["kind"] == kind]


# A small hand-written dump in the exact layout of ibnetdiscover (tabs, GUID ids):
# leaf1 (4 ports) has host1's port 1 and one cable to spine1; line numbers matter below.
BASE = (
    'Switch\t4 "S-0000000000000001"\t\t# "leaf1" enhanced port 0 lid 1 lmc 0\n'  # 1
    '[1]\t"H-00000000000000a1"[1](a1) \t\t# "host1 HCA-1" lid 10 4xNDR\n'  # 2
    '[3]\t"S-0000000000000002"[1]\t\t# "spine1" lid 2 4xNDR\n'  # 3
    "\n"  # 4
    'Switch\t4 "S-0000000000000002"\t\t# "spine1" enhanced port 0 lid 2 lmc 0\n'  # 5
    '[1]\t"S-0000000000000001"[3]\t\t# "leaf1" lid 1 4xNDR\n'  # 6
    "\n"  # 7
    'Ca\t1 "H-00000000000000a1"\t\t# "host1 HCA-1"\n'  # 8
    '[1](a1) \t"S-0000000000000001"[1]\t\t# lid 10 lmc 0 "leaf1" lid 1 4xNDR\n'  # 9
)


# -- link rates --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("speed", "gbps_4x"),
    # data rate per lane x 4 lanes (docs/import.md; REFERENCES.md "InfiniBand lane rates")
    [
        ("SDR", 8),
        ("DDR", 16),
        ("QDR", 32),
        ("FDR10", 40),
        ("FDR", 54.56),
        ("EDR", 100),
        ("HDR", 200),
        ("NDR", 400),
        ("XDR", 800),
    ],
)
def test_link_rate_4x_is_four_lanes_of_data_rate(speed: str, gbps_4x: float) -> None:
    assert link_rate_Bps("4x", speed) == pytest.approx(gbps_4x * 1e9 / 8)


def test_link_rate_widths_and_headline_values() -> None:
    assert link_rate_Bps("4x", "NDR") == 50e9  # sold as 400 Gb/s
    assert link_rate_Bps("1x", "SDR") == 0.25e9  # 2 Gb/s data (2.5 Gb/s signalling)
    assert link_rate_Bps("12x", "QDR") == pytest.approx(12 * 8e9 / 8)
    assert link_rate_Bps("2x", "HDR") == pytest.approx(100e9 / 8)  # HDR100
    assert link_rate_Bps("4x", "ndr") == 50e9


def test_lane_table_lists_signalling_above_data_rate() -> None:
    # REFERENCES.md: SDR 2.5/2 ... XDR 212.5/200
    assert LANE_RATES_GBPS["SDR"] == (2.5, 2.0)
    assert LANE_RATES_GBPS["FDR"] == (14.0625, 13.64)
    assert LANE_RATES_GBPS["NDR"] == (106.25, 100.0)
    assert all(sig > data for sig, data in LANE_RATES_GBPS.values())


@pytest.mark.parametrize(
    ("width", "speed", "match"),
    [("3x", "NDR", "unknown InfiniBand link width '3x'"), ("4x", "GDR", "link speed 'GDR'")],
)
def test_link_rate_rejects_unknown(width: str, speed: str, match: str) -> None:
    with pytest.raises(SpecError, match=match):
        link_rate_Bps(width, speed)


# -- real dumps --------------------------------------------------------------------------------


def test_gb200_superpod() -> None:
    path = ibnd("topograph_dgx_gb200_ndr_superpod.out")
    G = read_ibnetdiscover(path)  # its reading time is in benchmarks/bench_load.py
    assert_schema(G)
    # grep -c '^Switch' -> 40. Leaves/spines by description: grep '^Switch' | grep -c IBLEAF -> 31,
    # grep -c IBSPINE -> 9. awk over switch blocks: every IBLEAF block has port lines to "H-"
    # hosts other than the Aggregation Node, no IBSPINE block has any.
    assert by_tier(G) == {1: 31, 2: 9}
    tier2 = [d["description"] for _, d in G.nodes(data=True) if d.get("tier") == 2]
    assert all("IBSPINE" in s for s in tier2)
    # grep '^Ca' | grep -c 'Aggregation Node' -> 40 (the string occurs 80 times: 40 Ca headers
    # plus the 40 switch port lines that point at them; PROVENANCE.md's "80" counts lines).
    assert G.graph["aggregation_nodes"] == 40
    # grep -c '^Ca' -> 582 CAs, each "Ca\t1" with exactly one port line (awk: 582 port lines
    # inside Ca blocks), all to "S-" ids: 582 - 40 aggregation nodes = 542 host ports cabled.
    s = summarize(G)
    assert s.endpoints == s.endpoint_links == 542
    # Port lines in Switch blocks: 1646 (awk). Minus 542 to hosts and 40 to aggregation
    # nodes = 1064 lines to "S-" ids, each cable seen from both ends -> 532 cables.
    assert s.links == 532
    # grep '^\[' | grep -o '[0-9]*x[A-Z0-9]*$' | sort | uniq -c -> 2228 4xNDR, nothing else;
    # cables in the graph: 542 + 532.
    assert G.graph["link_speeds"] == {"4xNDR": 1074}
    for _, _, d in G.edges(data=True):
        assert d["speed"] == "4xNDR" and d["capacity"] == d["links"] * 50e9
    # IBSPINE-02's block names all 31 leaves (grep -o IBLEAF-.. | sort -u | wc -l) -> one plane.
    assert G.graph["planes"] == 1
    assert G.graph["unconnected_cas"] == G.graph["loopback_cables"] == 0
    assert G.graph["family"] == "ibnetdiscover"
    assert G.graph["name"] == "topograph_dgx_gb200_ndr_superpod"
    assert G.graph["source"] == str(path)
    # Line 11: [1] "H-e09d7303007a4bd8"[1] ... "a08-p1-dgx-04-c01 mlx5_5" on IBLEAF-04-04.
    nic = G.nodes["a08-p1-dgx-04-c01/mlx5_5/p1"]
    assert nic == {
        "kind": "nic",
        "node": "a08-p1-dgx-04-c01",
        "index": 1,
        "guid": "e09d7303007a4bd8",
        "description": "a08-p1-dgx-04-c01 mlx5_5",
    }
    assert G.has_edge("a08-p1-dgx-04-c01/mlx5_5/p1", "MF0;A09-P1-IBLEAF-04-04:MQM9701/U1")
    # Line 55: a CA with the default description "MT4129 ConnectX7   Mellanox Technologies".
    assert G.nodes["H-e09d730300858d88/p1"]["node"] == "H-e09d730300858d88"
    leaf = G.nodes["MF0;A09-P1-IBLEAF-04-04:MQM9701/U1"]
    # Its header says 65 ports; port 65 is cabled to its internal SHARP Aggregation Node
    # (grep -c '^\[65\].*Aggregation Node' -> 40, one per switch): a QM9701 has 64 NDR ports,
    # and topo cost priced it "switch 65x400G" when the import counted port 65.
    assert leaf["ports"] == 64 and leaf["guid"] == "2c5eab0300b87b40" and leaf["plane"] == 0
    assert {d["ports"] for _, d in G.nodes(data=True) if d["kind"] == "switch"} == {64}
    assert leaf["rail"] == -1
    # Lines 28-43, that leaf's ports 35-50: 2 cables to each of IBSPINE-02..09.
    spine2 = "MF0;A10-P1-IBSPINE-02:MQM9701/U1"
    assert G.edges["MF0;A09-P1-IBLEAF-04-04:MQM9701/U1", spine2]["links"] == 2


def test_gb200_round_trips_through_fabric_json(tmp_path: Path) -> None:
    G = read_ibnetdiscover(ibnd("topograph_dgx_gb200_ndr_superpod.out"))
    save(G, tmp_path / "gb200.json")
    H = load(tmp_path / "gb200.json")
    assert summarize(H) == summarize(G)
    assert H.graph["link_speeds"] == {"4xNDR": 1074}


def test_psmn_without_map_names_hosts_by_guid() -> None:
    G = read_ibnetdiscover(ibnd("psmn_x5_qdr.topofile"))
    assert_schema(G)
    s = summarize(G)
    # grep -c '^Switch' -> 11; grep -c '^Ca' -> 89, every description the default
    # "MT25408 ConnectX Mellanox Technologies", one port line each.
    assert s.switches == 11
    assert s.endpoints == 89 == s.nodes
    assert all(v.startswith("H-") for v, k in G.nodes(data="kind") if k == "nic")
    # Port lines to "S-" ids inside Switch blocks (awk): 12+12+19+16+16+6+4+19+12+12+12 = 140
    # -> 70 cables, all 4xQDR; host lines: 46 4xDDR + 132 4xQDR, halved.
    assert s.links == 70
    assert G.graph["link_speeds"] == {"4xDDR": 23, "4xQDR": 70 + 66}
    caps = Counter((d["speed"], d["capacity"] / d["links"]) for _, _, d in G.edges(data=True))
    assert set(caps) == {("4xDDR", 2e9), ("4xQDR", 4e9)}  # 16 and 32 Gb/s of data
    # Six switches have "H-" port lines (awk): tier 1. psmn_x5.spine lists the other five as
    # spines; four of them are cabled to leaves (tier 2), but 4036-86A2 (S-0008f105001086a2)
    # has no hosts and is cabled only to spines 108530 and 10851e (its block at line 156; and
    # lines 249-251, 271-273 of theirs): tier 3.
    assert by_tier(G) == {1: 6, 2: 4, 3: 1}
    spines = {
        line.strip().removeprefix("S-")
        for line in ibnd("psmn_x5.spine").read_text().splitlines()
        if line.startswith("S-")
    }
    upper = {d["guid"] for _, d in G.nodes(data=True) if d["kind"] == "switch" and d["tier"] > 1}
    assert upper == spines
    assert G.nodes["Voltaire 4036 # 4036-86A2"]["tier"] == 3
    # "Voltaire 4036 - 36 QDR ports switch" is used by 4 switches: named by id; "Voltaire 4036 #
    # 4036-8C5C" (a '#' inside the description) is unique: named by description.
    assert "S-0008f10500200b50" in G
    assert G.nodes["Voltaire 4036 # 4036-8C5C"]["guid"] == "0008f10500108c5c"


def test_psmn_with_map_names_hosts() -> None:
    G = read_ibnetdiscover(ibnd("psmn_x5_qdr.topofile"), name_map=ibnd("psmn_x5.map"))
    assert_schema(G)
    # comm of the Ca ids and the map's keys: 86 in both, 3 Ca ids not in the map.
    hosts = Counter(d["node"].startswith("H-") for _, d in G.nodes(data=True) if d["kind"] == "nic")
    assert hosts == {False: 86, True: 3}
    # psmn_x5.map line 2: H-003048c74e4a0000 x5570comp1
    nic = G.nodes["x5570comp1/H-003048c74e4a0000/p1"]
    assert nic["node"] == "x5570comp1"
    assert nic["description"] == "MT25408 ConnectX Mellanox Technologies"
    assert G.graph["name_map"] == str(ibnd("psmn_x5.map"))


def test_read_name_map() -> None:
    names = read_name_map(ibnd("psmn_x5.map"))
    assert len(names) == 86  # grep -c '^H-' psmn_x5.map
    assert names["0002c90300080e84"] == "r510gluster1"


def test_loginoff_fdr10_uplinks_qdr_hosts() -> None:
    G = read_ibnetdiscover(ibnd("loginoff_fdr10_sx6036.topo"))
    assert_schema(G)
    s = summarize(G)
    # awk over blocks: Switch->S lines are all 4xFDR10: 8+7+8+8+8+8+23+24 = 94 -> 47 cables.
    # Switch->H lines 4xQDR: 24*5 + 22 + 3 = 145 = the Ca port lines (143 + tank1's 2 ports).
    assert s.links == 47 and s.endpoint_links == 145
    assert G.graph["link_speeds"] == {"4xFDR10": 47, "4xQDR": 145}
    for d in edges_of(G, "fabric"):
        assert d["speed"] == "4xFDR10" and d["capacity"] == pytest.approx(d["links"] * 5e9)
    for d in edges_of(G, "endpoint"):
        assert d["speed"] == "4xQDR" and d["capacity"] == 4e9  # 32 Gb/s < FDR10's 40
    # ib8 has no host lines (tier 2); ib7 has 3 (tank1 x2 + one) so it counts as a leaf.
    assert by_tier(G) == {1: 7, 2: 1}
    assert G.nodes["MF0;ib8:SX6036/U1"]["tier"] == 2
    assert G.nodes["MF0;ib7:SX6036/U1"]["tier"] == 1
    # Lines 1130-1132: "tank1 mlx4_0" with both ports cabled to ib7.
    assert G.nodes["tank1/mlx4_0/p2"]["index"] == 2
    assert s.nodes == 144


def test_ibtopotool_1_man_page_example_mixed_widths() -> None:
    G = read_ibnetdiscover(ibnd("ibtopotool_1.topo"))
    assert_schema(G)
    # Two switches (ISR9024 with hosts on 22, 8, 12; SW-6IB4 with hosts on 6, 4): both tier 1.
    assert by_tier(G) == {1: 2}
    # Two cables ISR9024[10]-SW-6IB4[1] and [6]-[3]. The first is 4xSDR seen from the ISR9024
    # and 1xSDR from the SW-6IB4 (the man page example disagrees with itself); the slower end
    # wins: 1xSDR = 2 Gb/s = 0.25e9 B/s, plus 4xSDR = 1e9 B/s.
    e = G.edges["ISR9024 Voltaire", "SW-6IB4 Voltaire"]
    assert e["links"] == 2
    assert e["speed"] == "1xSDR+4xSDR"
    assert e["capacity"] == pytest.approx(0.25e9 + 1e9)
    # H-0008f10403960558 port 1: 1xSDR from the CA, 4xSDR from the switch -> 1xSDR.
    assert G.edges["H-0008f10403960558/p1", "ISR9024 Voltaire"]["capacity"] == 0.25e9
    assert G.edges["H-0008f10403960558/p2", "ISR9024 Voltaire"]["capacity"] == 1e9
    assert G.graph["mismatched_cables"] == 2
    assert G.graph["link_speeds"] == {"1xSDR": 2, "4xSDR": 5}
    assert summarize(G).endpoints == 5  # 4 CAs, one with both ports cabled


def test_ibtopotool_2_hosts_from_descriptions() -> None:
    G = read_ibnetdiscover(ibnd("ibtopotool_2.topo"))
    assert_schema(G)
    assert sorted(v for v, k in G.nodes(data="kind") if k == "nic") == [
        "compute-00-00/HCA-1/p2",
        "compute-00-01/HCA-1/p1",
    ]
    assert G.nodes["MT43132 Mellanox Technologies"]["tier"] == 1
    assert summarize(G).links == 0


def test_ibtopotool_3_loopbacks_and_error_line() -> None:
    G = read_ibnetdiscover(ibnd("ibtopotool_3.topo"))
    assert_schema(G)
    # Line 1 is an error message from the tool; SwitchIB ports 1<->2, 19<->21, 29<->30 are
    # cabled to the switch itself (6 lines, 3 cables).
    assert G.graph["skipped_lines"] == 1
    assert G.graph["loopback_cables"] == 3
    sw, sx = "SwitchIB Mellanox Technologies", "MF0;switch-de779e:SX6012/U1"
    assert not G.has_edge(sw, sw)
    e = G.edges[sw, sx]
    assert (e["links"], e["speed"]) == (1, "4xFDR")
    assert e["capacity"] == pytest.approx(4 * 13.64e9 / 8)
    assert G.edges["r-ufm216/HCA-2/p1", sw]["capacity"] == 12.5e9  # 4xEDR, 100 Gb/s
    assert G.edges["r-ufm96/HCA-1/p1", sx]["capacity"] == 1e9  # 4xSDR
    assert G.nodes["r-ufm101/HCA-2/p1"]["node"] == "r-ufm101"
    assert G.graph["link_speeds"] == {"4xEDR": 1, "4xFDR": 3, "4xQDR": 2, "4xSDR": 1}


def test_ibtopotool_4_solaris_era_format() -> None:
    G = read_ibnetdiscover(ibnd("ibtopotool_4.topo"))
    assert_schema(G)
    assert set(G.nodes) == {"Sun DCS 36 QDR switch localhost", "nsn33-43/HCA-1/p2"}
    assert G.edges["nsn33-43/HCA-1/p2", "Sun DCS 36 QDR switch localhost"]["capacity"] == 4e9


def test_ibsim_net_defaults_to_4x_sdr() -> None:
    G = read_ibnetdiscover(ibnd("ibsim_net"))
    assert_schema(G)
    assert G.graph["format"] == "ibsim"
    # Switch1 has Hca1[1] and Hca2[2]; Switch2 has no hosts and two cables to Switch1.
    assert set(G.nodes) == {"Switch1", "Switch2", "Hca1/p1", "Hca2/p2"}
    assert (G.nodes["Switch1"]["tier"], G.nodes["Switch2"]["tier"]) == (1, 2)
    assert G.nodes["Switch1"]["guid"] is None and G.nodes["Switch1"]["ports"] == 8
    e = G.edges["Switch1", "Switch2"]
    assert (e["links"], e["speed"], e["capacity"]) == (2, "4xSDR", 2e9)


def test_ibsim_parallel_cables_are_one_edge() -> None:
    G = read_ibnetdiscover(ibnd("ibsim_net.2sw2path"))
    # Switch1[3]-Switch2[3] and Switch1[5]-Switch2[5]; one host on each switch.
    assert by_tier(G) == {1: 2}
    assert G.number_of_edges() == 3
    e = G.edges["Switch1", "Switch2"]
    assert (e["links"], e["capacity"]) == (2, 2 * 1e9)


def test_ibsim_two_port_hosts() -> None:
    G = read_ibnetdiscover(ibnd("ibsim_net.2sw2path4hca2port"))
    assert {v for v, k in G.nodes(data="kind") if k == "nic"} == {
        "Hca1/p1",
        "Hca1/p2",
        "Hca2/p1",
        "Hca2/p2",
    }
    assert summarize(G).nodes == 2


@pytest.mark.parametrize(
    "name",
    [
        "infiniband_exporter_ports_test.out",
        "infiniband_exporter_ports_test2.out",
        "infiniband_exporter_ports_test3.out",
    ],
)
def test_ports_report_is_refused_with_advice(name: str) -> None:
    with pytest.raises(FormatError, match=r":1: this is the 'ibnetdiscover -p' ports report.*"):
        read_ibnetdiscover(ibnd(name))


def test_single_ca_dump_has_no_switches() -> None:
    with pytest.raises(FormatError, match=r"example-bad\.out: no switches: .*1 CA"):
        read_ibnetdiscover(ibnd("topograph_example-bad.out"))


def test_truncated_real_dump(tmp_path: Path) -> None:
    lines = ibnd("topograph_dgx_gb200_ndr_superpod.out").read_text().splitlines(keepends=True)
    # Cut after 300 lines: the Ca records (from line 1896 on) are gone; the first port line,
    # line 11, names H-e09d7303007a4bd8, which now has no record.
    path = write(tmp_path, "".join(lines[:300]))
    with pytest.raises(FormatError, match=r":11: .*no record for \"H-e09d7303007a4bd8\""):
        read_ibnetdiscover(path)
    # Cut in the middle of line 300 (a port line): its width and speed are missing.
    path = write(tmp_path, "".join(lines[:299]) + lines[299][:40])
    with pytest.raises(FormatError, match=r":300: missing link width and speed"):
        read_ibnetdiscover(path)


# -- a hand-written dump: structure, naming, decisions ------------------------------------------


def test_small_dump(tmp_path: Path) -> None:
    G = read_ibnetdiscover(write(tmp_path, BASE))
    assert_schema(G)
    assert set(G.nodes) == {"leaf1", "spine1", "host1/HCA-1/p1"}
    assert (G.nodes["leaf1"]["tier"], G.nodes["spine1"]["tier"]) == (1, 2)
    assert G.edges["leaf1", "spine1"] == {
        "kind": "fabric",
        "capacity": 50e9,
        "links": 1,
        "speed": "4xNDR",
    }
    assert G.graph["format"] == "ibnetdiscover"
    assert G.graph["name"] == "fabric"


def test_crlf_and_chassis_headers(tmp_path: Path) -> None:
    text = "#\n# Topology file\n\nNon-Chassis Nodes\n\nvendid=0x2c9\ndevid=0xd2f2\n" + BASE
    G = read_ibnetdiscover(write(tmp_path, text.replace("\n", "\r\n")))
    assert G.number_of_nodes() == 3


def test_aggregation_nodes_are_left_out(tmp_path: Path) -> None:
    text = BASE.replace(
        '[3]\t"S-',
        '[4]\t"H-00000000000000ee"[1](ee) \t\t# "Mellanox Technologies Aggregation '
        'Node" lid 5 4xNDR\n[3]\t"S-',
    ) + (
        '\nCa\t1 "H-00000000000000ee"\t\t# "Mellanox Technologies Aggregation Node"\n'
        '[1](ee) \t"S-0000000000000001"[4]\t\t# lid 5 lmc 0 "leaf1" lid 1 4xNDR\n'
    )
    G = read_ibnetdiscover(write(tmp_path, text))
    assert G.graph["aggregation_nodes"] == 1
    assert G.number_of_nodes() == 3
    assert G.graph["link_speeds"] == {"4xNDR": 2}


def test_unconnected_ca_is_counted(tmp_path: Path) -> None:
    G = read_ibnetdiscover(write(tmp_path, BASE + '\nCa\t2 "H-00000000000000b1"\t\t# "h2 HCA-1"\n'))
    assert G.graph["unconnected_cas"] == 1
    assert G.number_of_nodes() == 3


def test_ca_to_ca_cable_is_left_out(tmp_path: Path) -> None:
    text = BASE + (
        '\nCa\t1 "H-00000000000000b1"\t\t# "h2 HCA-1"\n'
        '[1](b1) \t"H-00000000000000c1"[1] (c1) \t\t# lid 3 lmc 0 "h3 HCA-1" lid 4 4xNDR\n'
        '\nCa\t1 "H-00000000000000c1"\t\t# "h3 HCA-1"\n'
        '[1](c1) \t"H-00000000000000b1"[1] (b1) \t\t# lid 4 lmc 0 "h2 HCA-1" lid 3 4xNDR\n'
    )
    G = read_ibnetdiscover(write(tmp_path, text))
    assert G.graph["ca_to_ca_cables"] == 1
    assert G.graph["unconnected_cas"] == 0
    assert set(G.nodes) == {"leaf1", "spine1", "host1/HCA-1/p1"}


def test_switch_without_path_to_a_leaf(tmp_path: Path) -> None:
    text = BASE + (
        '\nSwitch\t4 "S-0000000000000003"\t\t# "lonely-a" enhanced port 0 lid 7 lmc 0\n'
        '[1]\t"S-0000000000000004"[1]\t\t# "lonely-b" lid 8 4xHDR\n'
        '\nSwitch\t4 "S-0000000000000004"\t\t# "lonely-b" enhanced port 0 lid 8 lmc 0\n'
        '[1]\t"S-0000000000000003"[1]\t\t# "lonely-a" lid 7 4xHDR\n'
    )
    G = read_ibnetdiscover(write(tmp_path, text))
    # leaf1 tier 1, spine1 tier 2; the two others have no path to a leaf: tier 2 + 1.
    assert G.nodes["lonely-a"]["tier"] == G.nodes["lonely-b"]["tier"] == 3
    assert G.graph["unreachable_switches"] == 2
    assert G.graph["planes"] == 2
    assert G.edges["lonely-a", "lonely-b"]["capacity"] == 25e9


def test_same_description_on_two_hosts_falls_back_to_guid(tmp_path: Path) -> None:
    text = BASE.replace('"host1 HCA-1"', '"localhost HCA-1"').replace(
        '[3]\t"S-',
        '[2]\t"H-00000000000000b1"[1](b1) \t\t# "localhost HCA-1" lid 11 4xNDR\n[3]\t"S-',
    ) + (
        '\nCa\t1 "H-00000000000000b1"\t\t# "localhost HCA-1"\n'
        '[1](b1) \t"S-0000000000000001"[2]\t\t# lid 11 lmc 0 "leaf1" lid 1 4xNDR\n'
    )
    G = read_ibnetdiscover(write(tmp_path, text))
    nics = {v: d["node"] for v, d in G.nodes(data=True) if d["kind"] == "nic"}
    assert nics == {
        "localhost/H-00000000000000a1/p1": "localhost",
        "localhost/H-00000000000000b1/p1": "localhost",
    }


def test_same_description_on_two_switches_uses_ids(tmp_path: Path) -> None:
    G = read_ibnetdiscover(write(tmp_path, BASE.replace('"spine1"', '"leaf1"')))
    assert {"S-0000000000000001", "S-0000000000000002"} <= set(G.nodes)
    assert G.nodes["S-0000000000000002"]["description"] == "leaf1"


def test_name_map_with_quoted_names_and_switches(tmp_path: Path) -> None:
    names = write(
        tmp_path,
        '# map\n0x00000000000000a1 "gpu01 mlx5_0"\nS-0000000000000002 core-a\n',
        "names.map",
    )
    G = read_ibnetdiscover(write(tmp_path, BASE), name_map=names)
    assert "gpu01/mlx5_0/p1" in G and "core-a" in G
    assert G.nodes["core-a"]["description"] == "spine1"


def test_ibsim_port_options(tmp_path: Path) -> None:
    text = (
        'Switch 8 "A"\n[1] "H"[1] w=12 s=7\n[2] "B"[2] s=2\n\n'
        'Switch 8 "B"\n[2] "A"[2] s=6\n\n'
        'Hca 2 "H"\n[1] "A"[1] w=12 s=5\n'
    )
    G = read_ibnetdiscover(write(tmp_path, text, "net"))
    # H-A: 12 lanes both ends; speed masks 7 and 5 -> QDR on both: 12 x 8 Gb/s.
    assert G.edges["H/p1", "A"]["speed"] == "12xQDR"
    assert G.edges["H/p1", "A"]["capacity"] == 12e9
    # A-B: DDR (mask 2) against QDR (mask 6): the slower end, 4xDDR.
    assert G.edges["A", "B"]["speed"] == "4xDDR"
    assert G.graph["mismatched_cables"] == 1


def test_ibsim_remote_port_defaults_to_one(tmp_path: Path) -> None:
    G = read_ibnetdiscover(write(tmp_path, 'Switch 8 "A"\n[3] "H"\n\nHca 1 "H"\n[1] "A"[3]\n'))
    assert G.has_edge("H/p1", "A")


# -- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [
        # a bad port number: port 7 on a 4-port switch, and port 0
        ('[3]\t"S-', '[7]\t"S-', r":3: bad port number \[7\] on \"S-0000000000000001\""),
        ('[1]\t"S-', '[0]\t"S-', r":6: bad port number \[0\] .*expected 1 to 4"),
        # unknown width / speed
        ("lid 2 4xNDR", "lid 2 4xGDR", r":3: unknown link width/speed '4xGDR'"),
        ("lid 2 4xNDR", "lid 2 3xNDR", r":3: unknown link width/speed '3xNDR'"),
        ("lid 2 4xNDR", "lid 2 4x???", r":3: unknown link width/speed '4x\?\?\?'"),
        ("lid 2 4xNDR", "lid 2", r":3: missing link width and speed"),
        # the two ends disagree: spine1[1] says leaf1[2], leaf1[3] says spine1[1]
        ('"S-0000000000000001"[3]', '"S-0000000000000001"[2]', r":6: .*two ends of a cable"),
        # a cable described from one end only
        ('[1]\t"S-0000000000000001"[3]\t\t# "leaf1" lid 1 4xNDR\n', "", r":3: .*has no line for"),
        # remote port beyond the far device's port count
        ('"S-0000000000000002"[1]', '"S-0000000000000002"[9]', r":3: bad remote port number"),
        # a device named on a port line but without a record
        ('"S-0000000000000002"[1]', '"S-0000000000000009"[1]', r":3: .*no record for"),
        ('"H-00000000000000a1"[1](a1)', '"H-00000000000000a1"(a1)', r":2: missing remote port"),
        # malformed lines
        ("[3]\t", "[x]\t", r":3: malformed port line: expected \[<port>\]"),
        ('Switch\t4 "S-0000000000000002"', "Switch\tfour", r":5: malformed device header"),
        ('Switch\t4 "S-0000000000000002"', 'Switch\t0 "S-2"', r":5: bad port count 0"),
        ('"S-0000000000000002"[1]\t', '"S-0000000000000002"[1] junk\t', r":3: unexpected text"),
        ("\n\nCa", "\nhello world\n\nCa", r":7: unrecognised line 'hello world'"),
        # a port line with no record open (the blank line closed leaf1's record)
        ('[3]\t"S-', '\n[3]\t"S-', r":4: port line outside a device record"),
    ],
)
def test_malformed_dump(tmp_path: Path, old: str, new: str, match: str) -> None:
    assert old in BASE
    with pytest.raises(FormatError, match=match):
        read_ibnetdiscover(write(tmp_path, BASE.replace(old, new, 1)))


def test_port_line_described_twice(tmp_path: Path) -> None:
    text = BASE.replace("lid 1 4xNDR\n\n", "lid 1 4xNDR\n" + BASE.splitlines()[5] + "\n\n", 1)
    with pytest.raises(
        FormatError, match=r":7: port \[1\] of .* described twice \(first at line 6"
    ):
        read_ibnetdiscover(write(tmp_path, text))


def test_second_record_for_a_device(tmp_path: Path) -> None:
    text = BASE + "\n" + BASE.splitlines()[0] + "\n"
    with pytest.raises(FormatError, match=r":11: second record for \"S-0000000000000001\""):
        read_ibnetdiscover(write(tmp_path, text))


def test_port_line_before_any_header(tmp_path: Path) -> None:
    text = "#\n# Topology file\n" + BASE.splitlines()[1] + "\n\n" + BASE
    with pytest.raises(FormatError, match=r":3: port line outside a device record"):
        read_ibnetdiscover(write(tmp_path, text))


def test_no_links(tmp_path: Path) -> None:
    text = 'Switch\t4 "S-0000000000000001"\t\t# "leaf1" enhanced port 0 lid 1 lmc 0\n'
    with pytest.raises(FormatError, match=r"fabric\.topo: no links: 1 switch"):
        read_ibnetdiscover(write(tmp_path, text))


def test_node_list_is_refused(tmp_path: Path) -> None:
    text = 'Switch\t : 0x0002c90200417670 ports 36 devid 0xbd36 vendid 0x2c9 "sw"\n'
    with pytest.raises(FormatError, match=r":1: this is an ibnetdiscover node list"):
        read_ibnetdiscover(write(tmp_path, text))


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('width=4\nSwitch 8 "A"\n', r":1: ibsim's net-wide 'width=' line is not supported"),
        ('Switch 8 "A"\n[1] "H"[1] w=3\n', r":2: bad port option 'w=3'"),
        ('Switch 8 "A"\n[1] "H"[1] x=3\n', r":2: bad port option 'x=3'"),
        ('Switch 8 "A"\n[1] "H"[1] s=8\n', r":2: bad port option 's=8'"),
    ],
)
def test_bad_ibsim_file(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(FormatError, match=match):
        read_ibnetdiscover(write(tmp_path, text, "net"))


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"", r"empty file"),
        (b"#\n# Topology file: generated on ...\n#\n", r"no Switch or Ca records"),
        (b"\x7fELF\x02\x01\x01\x00\x00\x00", r"binary file"),
    ],
)
def test_not_a_dump(tmp_path: Path, content: bytes, match: str) -> None:
    path = tmp_path / "x.topo"
    path.write_bytes(content)
    with pytest.raises(FormatError, match=match):
        read_ibnetdiscover(path)


def test_missing_or_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match=r"nope\.topo: no such file"):
        read_ibnetdiscover(tmp_path / "nope.topo")
    with pytest.raises(FormatError, match=r"cannot read"):
        read_ibnetdiscover(tmp_path)  # a directory


def test_bad_name_map(tmp_path: Path) -> None:
    dump = write(tmp_path, BASE)
    with pytest.raises(FormatError, match=r"names\.map:2: expected '<guid> <name>'"):
        read_ibnetdiscover(dump, name_map=write(tmp_path, "# map\nnode01\n", "names.map"))
    with pytest.raises(FormatError, match=r"missing\.map: no such file"):
        read_ibnetdiscover(dump, name_map=tmp_path / "missing.map")


def test_grouped_output_with_chassis_and_external_ports(tmp_path: Path) -> None:
    # ibnetdiscover -g: chassis headers, '# Spine Nodes' comments, '[p][ext n]' port numbers.
    text = (
        "Chassis 1 (guid 0x0008f104003f15e8)\n\n# Spine Nodes\n"
        "switchguid=0x1(1)\t# ISR9288/ISR9096 Voltaire sLB-24\n"
        # leaf1's local port 3 (line 3) and spine1's remote port 3 (line 6) get '[ext 3]'
        + BASE.replace("[3]\t", "[3][ext 3]\t")
    )
    G = read_ibnetdiscover(write(tmp_path, text))
    assert G.edges["leaf1", "spine1"]["links"] == 1


def test_real_file_skips_when_shared_data_is_absent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from . import _real

    monkeypatch.setattr(_real, "REAL_DATA", tmp_path / "absent")
    with pytest.raises(pytest.skip.Exception, match="real data not available"):
        _real.real_file("ibnetdiscover", "ibtopotool_1.topo")


def test_gb200_switches_are_priced_without_their_aggregation_node_port(tmp_path: Path) -> None:
    # topo cost priced the 40 QM9701 of the dump as "switch 65x400G"; they are 64-port NDR
    # switches (NVIDIA QM9700/QM9701: 64 x 400G), the 65th port being the internal SHARP
    # Aggregation Node's, which the import already leaves out and counts apart.
    from typer.testing import CliRunner

    from topo.cli import app

    G = read_ibnetdiscover(ibnd("topograph_dgx_gb200_ndr_superpod.out"))
    assert G.graph["aggregation_nodes"] == 40
    fabric = tmp_path / "gb.json"
    save(G, fabric)
    r = CliRunner().invoke(app, ["cost", str(fabric)])
    assert r.exit_code == 0, r.output
    assert "switch 64x400G" in r.stdout and "65x" not in r.stdout


def test_a_dump_and_a_map_with_a_byte_order_mark_read_as_without(tmp_path: Path) -> None:
    # A dump saved by a Windows editor starts with U+FEFF: it was refused as
    # "unrecognised line '\ufeffSwitch ...'".
    dump = ibnd("topograph_dgx_gb200_ndr_superpod.out")
    bom = tmp_path / "bom.out"
    bom.write_bytes(b"\xef\xbb\xbf" + dump.read_bytes())
    assert summarize(read_ibnetdiscover(bom)) == summarize(read_ibnetdiscover(dump))
    name_map = ibnd("psmn_x5.map")
    bom_map = tmp_path / "bom.map"
    bom_map.write_bytes(b"\xef\xbb\xbf" + name_map.read_bytes())
    assert read_name_map(bom_map) == read_name_map(name_map)


def test_a_map_naming_one_guid_twice_is_refused_with_both_lines(tmp_path: Path) -> None:
    lines = ibnd("psmn_x5.map").read_text().splitlines()
    first = next(i for i, x in enumerate(lines, 1) if x.startswith("H-003048c74e4a0000"))
    path = tmp_path / "x.map"
    path.write_text("\n".join([*lines, "0x003048c74e4a0000 x5570comp99"]) + "\n")
    with pytest.raises(
        FormatError,
        match=rf"x\.map:{len(lines) + 1}: GUID 003048c74e4a0000 is mapped twice, to "
        rf"'x5570comp1' \(line {first}\) and to 'x5570comp99': a GUID names one device$",
    ):
        read_name_map(path)
    # The same name twice is the same map.
    path.write_text("\n".join([*lines, "0x003048c74e4a0000 x5570comp1"]) + "\n")
    assert read_name_map(path) == read_name_map(ibnd("psmn_x5.map"))


def test_descriptions_shared_across_dumps_give_guid_names(tmp_path: Path) -> None:
    # Two planes, one dump each: both leaves say "leaf1" (so both are named by their ids,
    # S-<guid>, as ibnetdiscover names them), the spines "spine1" and "spine2" (unique over
    # both dumps: kept). Read concatenated, the same names.
    other = (
        BASE.replace("S-000000000000000", "S-00000000000000b")
        .replace("H-00000000000000a1", "H-00000000000000c1")
        .replace("(a1)", "(c1)")
        .replace("host1", "host2")
        .replace('"spine1"', '"spine2"')
    )
    a, b, both = tmp_path / "a.topo", tmp_path / "b.topo", tmp_path / "both.topo"
    a.write_text(BASE)
    b.write_text(other)
    both.write_text(BASE + "\n" + other)
    G = import_ibnetdiscover([a, b])
    switches = sorted(v for v, k in G.nodes(data="kind") if k == "switch")
    assert switches == ["S-0000000000000001", "S-00000000000000b1", "spine1", "spine2"]
    assert G.nodes["S-00000000000000b1"]["description"] == "leaf1"
    assert G.nodes["S-00000000000000b1"]["guid"] == "00000000000000b1"
    assert [g.graph["name"] for g in read_ibnetdiscover_dumps([a, b])] == ["a", "b"]
    assert nx.utils.graphs_equal(nx.Graph(import_ibnetdiscover(both).edges), nx.Graph(G.edges))
    # Read alone, each dump's "leaf1" is unique in it, and kept.
    assert "leaf1" in read_ibnetdiscover(b)
