"""Write a fabric in ``ibnetdiscover`` topology format (which ibsim also reads as a net file).

:func:`write_ibnetdiscover` prints one record per switch and per NIC of a fabric graph, each
cable from both ends, in the format ``ibnetdiscover`` prints and
:func:`topo.formats.read_ibnetdiscover` reads::

    Switch 64 "S-0002c90000000001" # "p0/leaf0" enhanced port 0 lid 1 lmc 0
    [1] "H-0002c90100000001"[1] # "node0 mlx5_0" lid 2 8xHDR

    Ca 1 "H-0002c90100000001" # "node0 mlx5_0"
    [1](0002c90100000001) "S-0002c90000000001"[1] # lid 2 lmc 0 "p0/leaf0" lid 1 8xHDR

ibsim (``ibsim -s FILE``) reads the same text as its net file (``ibsim/sim_net.c``: the node
header, ``[port] "remote"[port]`` and the ``lid <n> <width><speed>`` after the last quote), so
the real ``ibnetdiscover`` can then discover the fabric. ibsim assigns its own GUIDs; the
descriptions (switch names, ``<host> mlx5_<j>`` of the NICs) carry the names across.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Hashable
from typing import Any

import networkx as nx

from topo.errors import SpecError
from topo.fabric import SWITCH_KINDS, host_of_vertex, natural_key
from topo.formats.hca_names import hca_names
from topo.formats.ibnetdiscover import LANE_RATES_GBPS, LINK_WIDTHS, link_rate_Bps
from topo.units import Bps_to_gbps

IBSIM_SPEEDS = ("SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR")
"""The lane speeds ibsim 0.10 parses (``parse_port_link_width_and_speed`` in ``sim_net.c``);
NDR came only with ibsim 0.12, so 400 Gb/s is written as 8xHDR for it (8 x 50 Gb/s)."""

_LABEL = re.compile(r"^(\d+x)([A-Za-z0-9]+)$")  # <width><speed>, as ibnetdiscover prints it
_WIDTH_ORDER = ("4x", "8x", "12x", "2x", "1x")  # 4x is the common cable; then the others
_SWITCH_GUID_BASE = 0x0002C90000000000
_CA_GUID_BASE = 0x0002C90100000000


def width_and_speed(rate_Bps: float, *, ibsim: bool = True) -> str:
    """The InfiniBand ``<width><speed>`` of a link of ``rate_Bps`` (e.g. ``"4xNDR"``).

    Parameters
    ----------
    rate_Bps : float
        Data rate of one cable, B/s per direction.
    ibsim : bool
        Use only the lane speeds ibsim 0.10 knows (:data:`IBSIM_SPEEDS`): 400 Gb/s is then
        ``8xHDR`` rather than ``4xNDR``.

    Returns
    -------
    str
        The first width of 4x, 8x, 12x, 2x, 1x that with some lane speed gives ``rate_Bps``
        exactly (data rates of :data:`topo.formats.ibnetdiscover.LANE_RATES_GBPS`).

    Raises
    ------
    SpecError
        If no width and speed give that rate.

    Examples
    --------
    >>> width_and_speed(50e9), width_and_speed(50e9, ibsim=False), width_and_speed(25e9)
    ('8xHDR', '4xNDR', '4xHDR')
    """
    speeds = IBSIM_SPEEDS if ibsim else tuple(LANE_RATES_GBPS)
    for width in _WIDTH_ORDER:
        for speed in speeds:
            if abs(link_rate_Bps(width, speed) - rate_Bps) <= 1e-9 * rate_Bps:
                return f"{width}{speed}"
    known = "ibsim's lane speeds" if ibsim else "InfiniBand lane speeds"
    raise SpecError(
        f"a cable of {Bps_to_gbps(rate_Bps):g} Gb/s is no width ({', '.join(LINK_WIDTHS)}) "
        f"times one of {known} ({', '.join(speeds)})",
        param="link_gbps",
    )


def write_ibnetdiscover(G: nx.Graph, *, plane: int | None = None, ibsim: bool = True) -> str:
    """A fabric as the text ``ibnetdiscover`` prints (and ibsim reads as a net file).

    Parameters
    ----------
    G : networkx.Graph
        A fabric (:mod:`topo.fabric`): built or imported.
    plane : int, optional
        Write only the switches of this switch-graph component (``topo.fabric.switch_components``
        order; plane ``p`` of an MPFT) and the NICs cabled to them; default: everything.
    ibsim : bool
        Write link speeds ibsim 0.10 knows (400 Gb/s as ``8xHDR``, see :func:`width_and_speed`);
        False writes the plainest width and speed (``4xNDR``). Either way a cable of an
        imported fabric is written with the label its dump printed (``speed``, e.g.
        ``4xNDR``, :func:`recorded_speed`) while its capacity is still that label's rate.

    Returns
    -------
    str
        One record per switch (``Switch <ports> "S-<guid>" # "<name>" enhanced port 0 lid <n>
        lmc 0``), then one per NIC (``Ca 1 "H-<guid>" # "<host> <device>"``: its host, a tray's
        own where NVLink domains span hosts, and the device
        :func:`topo.formats.hca_names.hca_names` names: an imported CA's name from its dump,
        else ``mlx5_<k>``, ``k`` its position within its host), each cabled
        port once per record, so every cable appears from both ends. A switch's ports: its NICs
        first, then its switch neighbours, in natural order of the names, one port per cable
        (an edge of ``links`` n is n ports of ``capacity / n``); the header says
        ``max(ports, used)``. GUIDs are made up (``0002c900...`` switches, ``0002c901...``
        CAs), LIDs numbered from 1. Reading it back with
        :func:`topo.formats.read_ibnetdiscover` gives the same switches (named by their
        names), the same cables and capacities, and a NIC ``<host>/<device>/p1`` for each
        NIC.

    Raises
    ------
    SpecError
        If a cable's rate is no InfiniBand width and speed, or ``plane`` is out of range.

    Examples
    --------
    >>> from topo.builders import build
    >>> text = write_ibnetdiscover(build("ft2", switch_ports=4, gpus=8, gpus_per_node=1,
    ...                                  nics_per_node=1))
    >>> text.splitlines()[1]
    '[1] "H-0002c90100000001"[1] # "node0 mlx5_0" lid 7 8xHDR'

    References
    ----------
    ``ibnetdiscover(8)`` (rdma-core); ibsim ``sim_net.c`` (``parse_switch``,
    ``parse_port_connection_data``).
    """
    switches, nics = _scope(G, plane)
    ids = _ids(G)
    lids = {v: i + 1 for i, v in enumerate([*switches, *nics])}
    ports = _port_numbers(G, switches, nics)
    hcas = hca_names(G)
    names = {v: _description(G, v, hcas) for v in [*switches, *nics]}
    lines: list[str] = []
    for v in switches:
        nports = max(int(G.nodes[v].get("ports", 0)), len(ports[v]))
        lines.append(
            f'Switch {nports} "{ids[v]}" # "{names[v]}" enhanced port 0 lid {lids[v]} lmc 0'
        )
        lines += _port_lines(G, v, ports, (ids, names), lids, ibsim)
        lines.append("")
    for v in nics:
        lines.append(f'Ca 1 "{ids[v]}" # "{names[v]}"')
        lines += _port_lines(G, v, ports, (ids, names), lids, ibsim)
        lines.append("")
    return "\n".join(lines)


def _scope(G: nx.Graph, plane: int | None) -> tuple[list[str], list[str]]:
    """The switches and the switch-cabled NICs to write, each in natural order."""
    switch_set = {v for v, k in G.nodes(data="kind") if k in SWITCH_KINDS}
    if plane is not None:
        comps = [c for c in nx.connected_components(G.subgraph(switch_set)) if len(c)]
        comps.sort(key=lambda c: natural_key(min(c, key=natural_key)))
        if not 0 <= plane < len(comps):
            raise SpecError(
                f"plane {plane} does not exist: the fabric has {len(comps)} plane(s)",
                param="plane",
            )
        switch_set = set(comps[plane])
    nics = {u for s in switch_set for u in G.adj[s] if G.nodes[u]["kind"] == "nic"}
    return sorted(switch_set, key=natural_key), sorted(nics, key=natural_key)


def _ids(G: nx.Graph) -> dict[str, str]:
    """Made-up node ids (``S-``/``H-`` GUIDs), numbered over the whole fabric in natural order
    (so the files of different planes never share a GUID)."""
    switches, nics = _scope(G, None)
    ids = {v: f"S-{_SWITCH_GUID_BASE + i + 1:016x}" for i, v in enumerate(switches)}
    ids.update({v: f"H-{_CA_GUID_BASE + i + 1:016x}" for i, v in enumerate(nics)})
    return ids


def _description(G: nx.Graph, v: Hashable, hcas: dict[Any, str]) -> str:
    """A switch's name, or ``<host> <device>`` for a NIC (as real hosts describe a CA): its
    host (a tray's own where NVLink domains span hosts) and :func:`hca_names`' device."""
    d = G.nodes[v]
    if d["kind"] != "nic":
        return str(v).replace('"', "'")
    node = host_of_vertex(d)
    host = f"node{node}" if isinstance(node, int) else str(node)
    return f"{host} {hcas[v]}".replace('"', "'")


def recorded_speed(d: dict[str, Any]) -> str | None:
    """The ``<width><speed>`` an imported edge recorded from its dump (``speed``, e.g.
    ``"4xNDR"``), when it is one label whose rate is the edge's capacity per cable; else None
    (a built edge, parallel cables of different speeds, or a capacity edited since).

    Parameters
    ----------
    d : dict
        The edge's attributes (``capacity`` in B/s, ``links``, optional ``speed``).

    Returns
    -------
    str or None
        The label as the dump printed it.
    """
    speed = d.get("speed")
    if not isinstance(speed, str):
        return None
    m = _LABEL.match(speed.strip())
    if m is None or m.group(1).lower() not in LINK_WIDTHS:
        return None
    if m.group(2).upper() not in LANE_RATES_GBPS:
        return None
    rate = float(d["capacity"]) / int(d["links"])
    if abs(link_rate_Bps(m.group(1), m.group(2)) - rate) > 1e-9 * rate:
        return None
    return speed.strip()


def _port_numbers(
    G: nx.Graph, switches: list[str], nics: list[str]
) -> dict[str, list[tuple[str, float, str | None]]]:
    """Vertex -> its cabled ports in order: (far end, B/s of the cable, the label its dump
    recorded or None); port p is entry p-1."""
    written = set(switches) | set(nics)
    ports: dict[str, list[tuple[str, float, str | None]]] = defaultdict(list)
    for v in [*switches, *nics]:
        far = sorted(
            (u for u in G.adj[v] if u in written),
            key=lambda u: (G.nodes[u]["kind"] in SWITCH_KINDS, natural_key(u)),
        )
        for u in far:
            d = G.edges[v, u]
            links = int(d["links"])
            ports[v] += [(u, float(d["capacity"]) / links, recorded_speed(d))] * links
    return ports


def _port_lines(
    G: nx.Graph,
    v: str,
    ports: dict[str, list[tuple[str, float, str | None]]],
    labels: tuple[dict[str, str], dict[str, str]],
    lids: dict[str, int],
    ibsim: bool,
) -> list[str]:
    """The port lines of ``v``: each cable with the far end's port number for the same cable
    (``labels``: the node ids and the descriptions)."""
    ids, names = labels
    lines = []
    seen: dict[str, int] = defaultdict(int)
    for p, (u, rate, label) in enumerate(ports[v], 1):
        k = seen[u]  # the k-th cable between v and u: the far end's k-th port towards v
        seen[u] += 1
        far_port = [q for q, (w, _, _) in enumerate(ports[u], 1) if w == v][k]
        rate_text = label or width_and_speed(rate, ibsim=ibsim)
        if G.nodes[v]["kind"] == "nic":
            guid = ids[v][2:]
            lines.append(
                f'[{p}]({guid}) "{ids[u]}"[{far_port}] # lid {lids[v]} lmc 0 '
                f'"{names[u]}" lid {lids[u]} {rate_text}'
            )
        else:
            lines.append(f'[{p}] "{ids[u]}"[{far_port}] # "{names[u]}" lid {lids[u]} {rate_text}')
    return lines
