"""Read the subnet manager's linear forwarding tables (LFTs) against the dump they belong to.

An InfiniBand switch forwards a packet by its destination LID through one port: the linear
forwarding table, which the subnet manager (OpenSM) computes and writes into every switch.
OpenSM dumps them with ``--dump_files_dir D -D 0x43`` as ``D/opensm-lfts.dump``, and
infiniband-diags prints them from a live fabric (``dump_fts``; ``ibroute <switch lid>`` for one
switch), all in one format: a header per switch, one line per LID::

    Unicast lids [0x0-0xe] of switch Lid 1 guid 0x0000000000200003 (leaf3):
      Lid  Out   Destination
           Port     Info
    0x0007 003 : (Channel Adapter portguid 0x0000000000100001: 'node0 mlx5_0')

(``dump_fts`` says ``switch DR path slid 0; dlid 0; 0,3,4 guid ...``; OpenSM 3.3's
``opensm-lfts.dump`` writes ``Unicast lids [0-14] of switch Lid 1 guid 0x... ('leaf3'):`` and
``0x0007 003 # Channel Adapter portguid 0x...: 'node0 mlx5_0'``). The destination's port
GUID names it; the ``ibnetdiscover`` dump of the same fabric gives each switch port's far end
and each CA port's GUID (``[1](100001) "S-..."[3]``), and so the vertex of
:func:`topo.formats.read_ibnetdiscover` every LID and every port leads to.
:func:`read_lft` returns that as :class:`ForwardingTables`.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import numpy as np

from topo.errors import FormatError
from topo.fabric import SWITCH_KINDS
from topo.files import read_text

_LFT_HEADER = re.compile(r"^Unicast lids \[[^\]]*\] of switch .*?guid 0x([0-9a-fA-F]+)")
# dump_fts / ibroute: "0x0007 003 : (Channel Adapter portguid 0x...: 'desc')";
# opensm-lfts.dump:   "0x0007 003 # Channel Adapter portguid 0x...: 'desc'"
_LFT_LINE = re.compile(r"^0x([0-9a-fA-F]+)\s+(\d+)\s*[:#]\s*\(?(.*?)portguid 0x([0-9a-fA-F]+)")
_LFT_SKIP = re.compile(
    r"^(Lid\s+Out|Port\s+Info|\d+ (valid )?lids? dumped|$|ibwarn:|iberror:|\S+\.c:\d+;)"
)  # column heads, counts, and the tools' diagnostics (stderr mixed in)
_RECORD = re.compile(r'^(Switch|Ca|Hca)\s+\d+\s+"([SH])-([0-9a-fA-F]{16})"')
_CABLE = re.compile(r'^\[(\d+)\](?:\(([0-9a-fA-F]+)\))?\s*"([SH])-([0-9a-fA-F]{16})"\[(\d+)\]')


@dataclass(frozen=True)
class ForwardingTables:
    """The LFTs of a fabric, in the names of its graph.

    Attributes
    ----------
    out_port : dict of str to numpy.ndarray
        Switch vertex -> (lids,) int: the out port of each destination LID (-1: none).
    lid_of : dict of str to int
        Vertex (a NIC, or a switch's port 0) -> its LID.
    ports : dict of str to dict of int to (str, int)
        Switch vertex -> physical port -> (the vertex at its far end, the rank of this port
        among the switch's ports to that vertex: parallel cables are 0, 1, ...).
    source : str
        The LFT file.
    """

    out_port: dict[str, np.ndarray]
    lid_of: dict[str, int]
    ports: dict[str, dict[int, tuple[str, int]]]
    source: str


def read_lft(path: str | Path, dump: str | Path, G: nx.Graph) -> ForwardingTables:
    """Read ``opensm-lfts.dump`` (or ``dump_fts`` / ``ibroute`` output) of the fabric ``G``.

    Parameters
    ----------
    path : str or Path
        The forwarding tables.
    dump : str or Path
        The ``ibnetdiscover`` dump of the same fabric (for its port GUIDs and cabling).
    G : networkx.Graph
        That dump read by :func:`topo.formats.read_ibnetdiscover` (or imported with hosts):
        its switches and NICs carry ``guid``.

    Returns
    -------
    ForwardingTables
        Every switch's table, the LID of every destination the tables name, every switch
        port's far end.

    Raises
    ------
    FormatError
        If a file is missing or not in the format above (naming the line), a table names a
        switch GUID the dump does not have, or the dump has no port GUIDs (an ibsim net file,
        not ``ibnetdiscover`` output).
    """
    tables = _parse_lfts(path)
    vertex_of, ports = _dump_ports(dump, G)
    switch_of = {
        str(d["guid"]): v
        for v, d in G.nodes(data=True)
        if d["kind"] in SWITCH_KINDS and d.get("guid")
    }
    out_port: dict[str, np.ndarray] = {}
    lid_of: dict[str, int] = {}
    for guid, (line, lids, outs, dests) in tables.items():
        sw = switch_of.get(guid)
        if sw is None:
            raise FormatError(
                path,
                f"switch guid 0x{guid} is not in the dump {dump}: a table of another fabric?",
                line,
            )
        table = np.full(int(lids.max(initial=0)) + 1, -1, dtype=np.int64)
        table[lids] = outs
        out_port[sw] = table
        for lid, port_guid in zip(lids.tolist(), dests, strict=True):
            v = vertex_of.get(port_guid)
            if v is not None:
                lid_of[v] = lid
    return ForwardingTables(out_port=out_port, lid_of=lid_of, ports=ports, source=str(path))


def _parse_lfts(
    path: str | Path,
) -> dict[str, tuple[int, np.ndarray, np.ndarray, list[str]]]:
    """Switch GUID -> (header line, LIDs, out ports, destination port GUIDs)."""
    text = read_text(path)
    out: dict[str, tuple[int, np.ndarray, np.ndarray, list[str]]] = {}
    current: tuple[str, int] | None = None
    lids: list[int] = []
    ports: list[int] = []
    dests: list[str] = []

    def close() -> None:
        if current is not None:
            out[current[0]] = (
                current[1],
                np.array(lids, dtype=np.int64),
                np.array(ports, dtype=np.int64),
                list(dests),
            )

    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if m := _LFT_HEADER.match(line):
            close()
            current = (f"{int(m[1], 16):016x}", lineno)
            lids, ports, dests = [], [], []
        elif m := _LFT_LINE.match(line):
            if current is None:
                raise FormatError(
                    path, "LID line before any 'Unicast lids ... of switch' header", lineno
                )
            lids.append(int(m[1], 16))
            ports.append(int(m[2]))
            dests.append(f"{int(m[4], 16):016x}")
        elif not _LFT_SKIP.match(line) and not line.startswith("#"):
            raise FormatError(
                path,
                "expected 'Unicast lids [0x..-0x..] of switch ... guid 0x...' or "
                "'0x<lid> <port> : (... portguid 0x...: ...)' (opensm-lfts.dump, dump_fts)",
                lineno,
            )
    close()
    if not out:
        raise FormatError(path, "no forwarding table: expected opensm-lfts.dump or dump_fts output")
    return out


def _dump_ports(
    dump: str | Path, G: nx.Graph
) -> tuple[dict[str, str], dict[str, dict[int, tuple[str, int]]]]:
    """Port GUID -> vertex (CA ports; a switch's port 0 is its node GUID), and every switch
    port's far vertex with its rank among the ports to that vertex."""
    switches = {
        str(d["guid"]): v
        for v, d in G.nodes(data=True)
        if d["kind"] in SWITCH_KINDS and d.get("guid")
    }
    nics = {
        (str(d["guid"]), int(d["index"])): v
        for v, d in G.nodes(data=True)
        if d["kind"] == "nic" and d.get("guid")
    }
    vertex_of = dict(switches)
    far: dict[str, list[tuple[int, str]]] = defaultdict(list)
    current: tuple[str, str] | None = None
    for raw in read_text(dump).splitlines():
        line = raw.strip()
        if m := _RECORD.match(line):
            current = (m[2], m[3].lower())
            continue
        m = _CABLE.match(line)
        if m is None or current is None:
            continue
        kind, guid = current
        if kind == "H" and m[2]:
            v = nics.get((guid, int(m[1])))
            if v is not None:
                vertex_of[f"{int(m[2], 16):016x}"] = v
        elif kind == "S" and guid in switches:
            remote = m[4].lower()
            v = switches.get(remote) if m[3] == "S" else nics.get((remote, int(m[5])))
            if v is not None:
                far[switches[guid]].append((int(m[1]), v))
    if len(vertex_of) == len(switches) and nics:
        raise FormatError(
            dump,
            "no CA port GUIDs ('[1](<port guid>) ...'): expected the "
            "output of ibnetdiscover, not an ibsim net file",
        )
    ports: dict[str, dict[int, tuple[str, int]]] = {}
    for sw, lst in far.items():
        rank: dict[str, int] = defaultdict(int)
        ports[sw] = {}
        for p, v in sorted(lst):
            ports[sw][p] = (v, rank[v])
            rank[v] += 1
    return vertex_of, ports
