"""An independent trace of forwarding tables: every ordered pair of host ports, hop by hop.

Reads the dump and the LFT text with its own few regular expressions (not topo's readers),
walks each pair's packets through the tables one switch at a time, and counts the pairs on
every switch-to-switch cable: the reference ``--routing lft`` is held to. Host ports are the
terminals (no GPUs), every ordered pair of distinct hosts carries one unit.
"""

from __future__ import annotations

import re
from collections import Counter

HEADER = re.compile(r'^(Switch|Ca)\s+\d+\s+"([SH]-[0-9a-fA-F]{16})"\s*#\s*"([^"]*)"')
PORT = re.compile(
    r'^\[(\d+)\](?:\(([0-9a-fA-F]+)\))?\s*"([SH]-[0-9a-fA-F]{16})"\[(\d+)\].*\s(\d+x[A-Z]+)\s*$'
)
LFT_SWITCH = re.compile(r"guid 0x([0-9a-fA-F]+)")
LFT_LINE = re.compile(r"^0x([0-9a-fA-F]+)\s+(\d+)\s*[:#].*portguid 0x([0-9a-fA-F]+)")
RATE_Bps = {"8xHDR": 50e9, "4xHDR": 25e9, "4xEDR": 12.5e9, "4xNDR": 50e9}


def parse_dump(text: str) -> tuple[dict, dict, dict]:
    """(device id, port) -> (far id, far port, rate B/s); port GUID -> (CA id, port);
    device id -> description."""
    cable, port_guid, desc = {}, {}, {}
    current = None
    for line in text.splitlines():
        line = line.strip()
        if m := HEADER.match(line):
            current = m[2]
            desc[current] = m[3]
            if current.startswith("S-"):
                port_guid[f"{int(current[2:], 16):016x}"] = (current, 0)
        elif current and (m := PORT.match(line)):
            cable[(current, int(m[1]))] = (m[3], int(m[4]), RATE_Bps[m[5]])
            if current.startswith("H-") and m[2]:
                port_guid[f"{int(m[2], 16):016x}"] = (current, int(m[1]))
    return cable, port_guid, desc


def parse_lft(text: str) -> tuple[dict, dict]:
    """switch GUID -> {lid: out port}; lid -> port GUID."""
    tables: dict[str, dict[int, int]] = {}
    lid_guid: dict[int, str] = {}
    current = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("Unicast lids"):
            current = f"{int(LFT_SWITCH.search(line)[1], 16):016x}"
            tables[current] = {}
        elif current and (m := LFT_LINE.match(line)):
            tables[current][int(m[1], 16)] = int(m[2])
            lid_guid[int(m[1], 16)] = f"{int(m[3], 16):016x}"
    return tables, lid_guid


def trace_busbw(dump_text: str, lft_text: str) -> tuple[float, Counter]:
    """The all-to-all busbw (B/s) of the host ports routed by the tables, and the pairs on
    every switch cable direction ``(switch id, port)``."""
    cable, port_guid, desc = parse_dump(dump_text)
    tables, lid_guid = parse_lft(lft_text)
    lid_of = {port_guid[g]: lid for lid, g in lid_guid.items() if g in port_guid}
    hosts = sorted(k for k in cable if k[0].startswith("H-"))
    host_name = {h: desc[h[0]].split()[0] for h in hosts}
    load: Counter = Counter()
    for x in hosts:
        for y in hosts:
            if host_name[x] == host_name[y]:
                continue
            sw = cable[x][0]
            for _hop in range(16):
                out = tables[f"{int(sw[2:], 16):016x}"][lid_of[y]]
                far, far_port, _ = cable[(sw, out)]
                if (far, far_port) == y:
                    break
                load[(sw, out)] += 1
                sw = far
            else:
                raise AssertionError(f"loop from {x} to {y}")
    n = len(hosts)
    per_host = Counter(host_name.values())
    nic_pairs = max(n - per_host[host_name[h]] for h in hosts)  # pairs each port sends
    nic_rate = min(cable[h][2] for h in hosts)
    lam = min([nic_rate / nic_pairs] + [cable[k][2] / c for k, c in load.items()])
    return lam * (n - 1), load
