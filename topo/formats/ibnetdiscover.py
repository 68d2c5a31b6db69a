"""Read ``ibnetdiscover`` topology dumps (and ibsim net files) into a fabric graph.

``ibnetdiscover`` (infiniband-diags, rdma-core) walks an InfiniBand subnet and prints one record
per device: a header line (``Switch 65 "S-<guid>" # "<description>" ...`` or
``Ca 1 "H-<guid>" # "<description>"``) followed by one line per cabled port
(``[p] "<remote id>"[q] # "<remote description>" lid N 4xNDR``). Every cable therefore appears
twice, once from each end; :func:`read_ibnetdiscover` pairs the two ends, checks that they agree,
and builds one graph following the schema of :mod:`topo.fabric`.

The same reader accepts the net files of the ibsim simulator (``Switch 8 "Switch1"``,
``[1] "Hca1"[1]``, optional ``w=``), which carry no GUIDs and no link speeds: their links are
4xSDR, ibsim's own default (``DEFAULT_LINKWIDTH`` 4x, ``DEFAULT_LINKSPEED`` SDR in ibsim's
``sim.h``), unless a port line says otherwise. The ``ibnetdiscover -p`` ports report and the
``-l``/``-S``/``-H`` node lists are other formats; they are recognised and refused with a message
that says what to run instead. See ``docs/import.md``.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

from topo.errors import FormatError
from topo.formats.ibnetdiscover_records import (
    DEFAULT_DESCRIPTION,
    IBSIM_DEFAULT_SPEED,
    IBSIM_DEFAULT_WIDTH,
    LANE_RATES_GBPS,
    LINK_WIDTHS,
    Device,
    PortEnd,
    link_rate_Bps,
    read_dump,
    read_name_map,
)
from topo.wording import count

__all__ = [
    "IBSIM_DEFAULT_SPEED",
    "IBSIM_DEFAULT_WIDTH",
    "LANE_RATES_GBPS",
    "LINK_WIDTHS",
    "link_rate_Bps",
    "read_ibnetdiscover",
    "read_ibnetdiscover_dumps",
    "read_name_map",
]


def read_ibnetdiscover(path: str | Path, *, name_map: str | Path | None = None) -> nx.Graph:
    """Read an ``ibnetdiscover`` topology dump (or an ibsim net file) into a fabric graph.

    Parameters
    ----------
    path : str or Path
        The output of plain ``ibnetdiscover`` (no ``-p``), or an ibsim net file.
    name_map : str or Path, optional
        A GUID -> name map for dumps whose CA descriptions are default strings such as
        ``"MT25408 ConnectX Mellanox Technologies"``: lines ``H-<guid> <hostname>`` (or
        ``0x<guid> "<name>"`` as in an ibnetdiscover/OpenSM node-name map). A name with a
        space (``"node01 HCA-1"``) gives the hostname and the CA name; a bare name is the
        hostname. Entries for switch GUIDs name the switch.

    Returns
    -------
    networkx.Graph
        A fabric following :mod:`topo.fabric`:

        - one node per switch, named by its description when that is unique (else by its id,
          ``S-<guid>``), with ``kind`` ``"switch"``, ``tier`` (1 = a host CA port is cabled to
          it; the others 1 + their hop distance from the nearest such switch; switches with no
          path to one get the largest tier + 1), ``plane`` 0, ``rail`` -1, ``ports`` (its port
          count, less its ports cabled to SHARP Aggregation Nodes: a Quantum-2 reports 65, of
          which port 65 is its internal Aggregation Node's), ``guid`` (16 hex digits, ``None``
          in ibsim files) and ``description``;
        - one node per host CA port cabled to a switch, named ``<hostname>/<CA name>/p<port>``
          (from a description ``"<hostname> <CA name>"``, or the name map), or
          ``H-<guid>/p<port>`` when no hostname is known, with ``kind`` ``"nic"``, ``node``
          (the hostname, or ``H-<guid>``), ``index`` (the CA port number), ``guid`` (the CA's
          node GUID) and ``description`` (as in the dump);
        - NIC-switch edges of ``kind`` ``"endpoint"`` and switch-switch edges of ``kind``
          ``"fabric"`` with ``capacity`` (B/s per direction, summed over parallel cables),
          ``links`` (cables) and ``speed`` (``"4xNDR"``; different speeds joined with ``+``).

        ``G.graph`` holds ``family`` (``"ibnetdiscover"``), ``name`` (the file's stem),
        ``source`` (``path`` as given), ``format`` (``"ibnetdiscover"`` or ``"ibsim"``),
        ``name_map`` (its path or ``None``), ``planes`` (connected components of the
        switch-only graph), ``aggregation_nodes`` (SHARP Aggregation Node CAs, left out),
        ``link_speeds`` (cables per speed over all edges), ``loopback_cables`` (switch ports
        cabled to the same switch, left out), ``unconnected_cas`` (CAs with no cabled port),
        ``ca_to_ca_cables`` (host-to-host cables, left out), ``routers`` (router records, left
        out with their cables), ``mismatched_cables`` (cables whose two ends report different
        widths or speeds; the slower is kept), ``unreachable_switches`` (switches with no path
        to a tier-1 switch) and ``skipped_lines`` (tool diagnostics such as
        ``src/query_smp.c:195; ...`` mixed into the dump).

    Raises
    ------
    FormatError
        If a file is missing, unreadable or binary; if it is the ``-p`` ports report or a node
        list; if a line is malformed (port line outside a record, bad port number, unknown
        width or speed, a cable described from one end only or whose ends disagree); if it
        has no switch or no cable. The message names the file, the line and what was
        expected.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> net = pathlib.Path(tempfile.mkdtemp()) / "net"
    >>> _ = net.write_text('Switch 8 "sw1"\\n[1] "h1"[1]\\n\\nHca 1 "h1"\\n[1] "sw1"[1]\\n')
    >>> G = read_ibnetdiscover(net)
    >>> sorted(G.nodes)
    ['h1/p1', 'sw1']
    >>> G.edges["h1/p1", "sw1"]["speed"], G.edges["h1/p1", "sw1"]["capacity"]
    ('4xSDR', 1000000000.0)

    References
    ----------
    ``ibnetdiscover(8)`` man page and ``infiniband-diags/ibnetdiscover.c`` (rdma-core);
    ibsim ``net-examples`` and ``ibsim/sim_net.c`` (linux-rdma/ibsim).
    """
    return read_ibnetdiscover_dumps([path], name_map=name_map)[0]


def read_ibnetdiscover_dumps(
    paths: Sequence[str | Path], *, name_map: str | Path | None = None
) -> list[nx.Graph]:
    """Read several ``ibnetdiscover`` dumps (one per plane) that name their switches together.

    Each dump is read as :func:`read_ibnetdiscover` reads it, except that a switch keeps its
    description (or map name) only when no other switch *of any of the dumps* has the same
    one; the others are named by their id ``S-<guid>``, as ``ibnetdiscover`` itself names
    them. Planes of the same switch models, discovered one by one, so get the names they get
    when their dumps are concatenated into one file.

    Parameters
    ----------
    paths : sequence of str or Path
        The dumps.
    name_map : str or Path, optional
        One GUID -> name map for all of them (see :func:`read_ibnetdiscover`).

    Returns
    -------
    list of networkx.Graph
        One fabric per dump, in the order of ``paths``.

    Raises
    ------
    FormatError
        As :func:`read_ibnetdiscover`, for the first dump at fault.
    """
    names = read_name_map(name_map) if name_map is not None else {}
    dumps = [(path, read_dump(path)) for path in paths]
    used = Counter(
        label
        for _, (dump, _) in dumps
        for label in _switch_labels(dump.devices, names).values()
        if label
    )
    graphs = []
    for path, (dump, cables) in dumps:
        G = _build_graph(path, dump.devices, cables, names, used)
        G.graph.update(
            format="ibsim" if dump.ibsim else "ibnetdiscover",
            name_map=None if name_map is None else str(name_map),
            skipped_lines=dump.skipped,
        )
        graphs.append(G)
    return graphs


# -- building the fabric -------------------------------------------------------------------


def _aggregation_ports(
    devices: dict[str, Device], cables: list[tuple[PortEnd, PortEnd]]
) -> Counter[str]:
    """Per switch id, its ports cabled to a SHARP Aggregation Node: a Quantum-2 (QM9700/9701)
    reports 65 ports, port 65 being its internal Aggregation Node's, not a port a cable can
    use (the switch has 64 NDR ports, 32 OSFP cages of two)."""
    out: Counter[str] = Counter()
    for a, b in cables:
        for end, other in ((a, b), (b, a)):
            if devices[end.device].type == "switch" and _is_aggregation_node(devices[other.device]):
                out[end.device] += 1
    return out


def _is_aggregation_node(dev: Device) -> bool:
    return dev.type == "ca" and "aggregation node" in dev.description.lower()


def _host_and_ca(dev: Device, names: dict[str, str]) -> tuple[str | None, str]:
    """(hostname, CA name) of a CA; hostname None when the dump and the map give none."""
    mapped = names.get(dev.guid) if dev.guid else None
    if mapped is not None:
        parts = mapped.split(None, 1)
        return parts[0], (parts[1].strip() if len(parts) == 2 else dev.id)
    description = dev.description.strip()
    parts = description.split(None, 1)
    if len(parts) < 2 or DEFAULT_DESCRIPTION.search(description):
        return None, dev.id
    return parts[0], parts[1].strip()


@dataclass
class _Cables:
    """The paired cables sorted by what they join, and the counts of those left out."""

    endpoints: list[tuple[Device, int, str, str, float]]  # CA, port, switch id, speed, B/s
    fabric: dict[tuple[str, str], list[tuple[str, float]]]  # switch pair -> (speed, B/s) each
    counts: Counter[str]  # mismatched_cables, loopback_cables, ca_to_ca_cables


def _sort_cables(devices: dict[str, Device], cables: list[tuple[PortEnd, PortEnd]]) -> _Cables:
    """Sort cables into host ports and switch-switch links; each at its slower end's rate."""
    sorted_ = _Cables(endpoints=[], fabric={}, counts=Counter())
    for a, b in cables:
        slow = min((a, b), key=lambda e: (e.rate_Bps, e.line))
        if (a.width, a.speed) != (b.width, b.speed):
            sorted_.counts["mismatched_cables"] += 1
        speed, capacity = f"{slow.width}{slow.speed}", slow.rate_Bps
        da, db = devices[a.device], devices[b.device]
        types = {da.type, db.type}
        if a.device == b.device:
            sorted_.counts["loopback_cables"] += 1
        elif "router" in types or _is_aggregation_node(da) or _is_aggregation_node(db):
            continue
        elif types == {"switch"}:
            pair = (a.device, b.device) if a.device < b.device else (b.device, a.device)
            sorted_.fabric.setdefault(pair, []).append((speed, capacity))
        elif types == {"ca"}:
            sorted_.counts["ca_to_ca_cables"] += 1
        else:
            sw_end, ca_end = (a, b) if da.type == "switch" else (b, a)
            sorted_.endpoints.append(
                (devices[ca_end.device], ca_end.port, sw_end.device, speed, capacity)
            )
    return sorted_


def _build_graph(
    path: str | Path,
    devices: dict[str, Device],
    cables: list[tuple[PortEnd, PortEnd]],
    names: dict[str, str],
    used: Counter[str],
) -> nx.Graph:
    """The fabric of one dump; ``used`` counts the switch labels over all dumps read together."""
    sorted_ = _sort_cables(devices, cables)
    switch_names, nic_names = _node_names(path, devices, sorted_.endpoints, names, used)
    sharp = _aggregation_ports(devices, cables)
    G = nx.Graph()
    for dev in devices.values():
        if dev.type == "switch":
            G.add_node(
                switch_names[dev.id],
                kind="switch",
                tier=0,
                plane=0,
                rail=-1,
                ports=max(1, dev.nports - sharp[dev.id]),
                guid=dev.guid,
                description=dev.description,
            )
    link_speeds = _add_links(G, sorted_, switch_names, nic_names, names)
    if G.number_of_edges() == 0:
        n = G.number_of_nodes()
        raise FormatError(
            path,
            f"no links: {count(n, 'switch', 'switches')} but no cable from a switch to a host "
            "or to another switch; expected a cabled fabric",
        )
    leaves = {switch_names[sw] for _, _, sw, *_ in sorted_.endpoints}
    unreachable = _assign_tiers(G, leaves)
    switches = [v for v, k in G.nodes(data="kind") if k == "switch"]
    connected = {
        dev.id
        for a, b in cables
        for dev in (devices[a.device], devices[b.device])
        if dev.type == "ca" and a.device != b.device
    }
    cas = [d for d in devices.values() if d.type == "ca" and not _is_aggregation_node(d)]
    G.graph.update(
        family="ibnetdiscover",
        name=Path(path).stem,
        source=str(path),
        planes=nx.number_connected_components(G.subgraph(switches)),
        aggregation_nodes=sum(_is_aggregation_node(d) for d in devices.values()),
        link_speeds=dict(sorted(link_speeds.items())),
        loopback_cables=sorted_.counts["loopback_cables"],
        unconnected_cas=sum(d.id not in connected for d in cas),
        ca_to_ca_cables=sorted_.counts["ca_to_ca_cables"],
        routers=sum(d.type == "router" for d in devices.values()),
        mismatched_cables=sorted_.counts["mismatched_cables"],
        unreachable_switches=unreachable,
    )
    return G


def _node_names(
    path: str | Path,
    devices: dict[str, Device],
    endpoints: list[tuple[Device, int, str, str, float]],
    names: dict[str, str],
    used: Counter[str],
) -> tuple[dict[str, str], dict[tuple[str, int], str]]:
    """Switch id -> node name and (CA id, port) -> node name, refusing a collision."""
    switch_names = _switch_names(devices, names, used)
    nic_names = _nic_names([(ca, port) for ca, port, *_ in endpoints], names)
    for dev_id, name in switch_names.items():
        if name in nic_names.values() and name != dev_id:
            switch_names[dev_id] = dev_id
    if len(set(switch_names.values()) | set(nic_names.values())) != len(switch_names) + len(
        nic_names
    ):
        raise FormatError(path, "device ids collide with host port names; cannot name the nodes")
    return switch_names, nic_names


def _add_links(
    G: nx.Graph,
    sorted_: _Cables,
    switch_names: dict[str, str],
    nic_names: dict[tuple[str, int], str],
    names: dict[str, str],
) -> Counter[str]:
    """Add the host ports with their endpoint cables, then the switch-switch edges (parallel
    cables summed); return the cables per speed."""
    link_speeds: Counter[str] = Counter()
    for host_ca, port, sw_id, speed, capacity in sorted_.endpoints:
        nic = nic_names[(host_ca.id, port)]
        host, _ = _host_and_ca(host_ca, names)
        G.add_node(
            nic,
            kind="nic",
            node=host or host_ca.id,
            index=port,
            guid=host_ca.guid,
            description=host_ca.description,
        )
        G.add_edge(
            nic, switch_names[sw_id], kind="endpoint", capacity=capacity, links=1, speed=speed
        )
        link_speeds[speed] += 1
    for (u, v), links in sorted_.fabric.items():
        speeds = sorted({s for s, _ in links})
        link_speeds.update(s for s, _ in links)
        G.add_edge(
            switch_names[u],
            switch_names[v],
            kind="fabric",
            capacity=sum(c for _, c in links),
            links=len(links),
            speed="+".join(speeds),
        )
    return link_speeds


def _switch_labels(devices: dict[str, Device], names: dict[str, str]) -> dict[str, str]:
    """Switch id -> its map name, else its description (stripped; may be empty)."""
    return {
        d.id: (names[d.guid] if d.guid and d.guid in names else d.description).strip()
        for d in devices.values()
        if d.type == "switch"
    }


def _switch_names(
    devices: dict[str, Device], names: dict[str, str], used: Counter[str]
) -> dict[str, str]:
    """Switch id -> node name: its label (:func:`_switch_labels`) if no other switch of the
    dumps read together (``used`` counts their labels) has it, else its id ``S-<guid>``."""
    labels = _switch_labels(devices, names)
    return {i: label if label and used[label] == 1 else i for i, label in labels.items()}


def _nic_names(
    ports: list[tuple[Device, int]], names: dict[str, str]
) -> dict[tuple[str, int], str]:
    """(CA id, port) -> node name; names shared by different CAs fall back to the CA id."""
    wanted: dict[tuple[str, int], tuple[str | None, str]] = {}
    for ca, port in ports:
        wanted[(ca.id, port)] = _host_and_ca(ca, names)

    def name(key: tuple[str, int], host: str | None, ca_name: str) -> str:
        return f"{host}/{ca_name}/p{key[1]}" if host else f"{key[0]}/p{key[1]}"

    used = Counter(name(k, h, c) for k, (h, c) in wanted.items())
    return {
        k: name(k, h, c) if used[name(k, h, c)] == 1 else name(k, h, k[0])
        for k, (h, c) in wanted.items()
    }


def _assign_tiers(G: nx.Graph, leaves: set[str]) -> int:
    """Set ``tier`` on every switch, breadth-first from the leaves; return how many are cut off."""
    switches = [v for v, k in G.nodes(data="kind") if k == "switch"]
    tier = dict.fromkeys(leaves, 1)
    queue = deque(leaves)
    while queue:
        u = queue.popleft()
        for v in G.adj[u]:
            if v not in tier and G.nodes[v]["kind"] == "switch":
                tier[v] = tier[u] + 1
                queue.append(v)
    top = max(tier.values(), default=0) + 1
    for v in switches:
        G.nodes[v]["tier"] = tier.get(v, top)
    return sum(v not in tier for v in switches)
