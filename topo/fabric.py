"""The fabric graph: its schema, summary counts and the JSON file format.

A fabric is one undirected :class:`networkx.Graph`. Every link is full duplex; ``capacity`` is
the rate of the edge *in each direction*. Parallel cables between the same two devices are one
edge whose ``links`` counts the cables and whose ``capacity`` is their sum.

Schema
------
Node attribute ``kind`` is one of:

===========  ========================================================================
kind         attributes (exactly these)
===========  ========================================================================
``gpu``      ``kind``, ``node`` (server id, int or str), ``index`` (GPU index in it)
``nic``      ``kind``, ``node``, ``index`` (NIC index in the server, or the CA port
             number of an imported host); imported NICs add ``guid`` (the CA's node
             GUID, 16 hex digits, ``None`` in ibsim files) and ``description``
``nvswitch`` ``kind``, ``node``
``leaf``     ``kind``, ``tier`` (1), ``plane`` (int, 0 with one plane), ``rail`` (int,
             -1 unless a rail leaf of an MRFT), ``ports`` (radix); the routers of a
             Dragonfly (``g{group}/r{router}``) and of a Slim Fly (``x{a}/r{b}``,
             ``m{a}/r{b}``) are leaves with plane 0 and rail -1: their group and router
             ids are in their names only
``spine``    as leaf, ``tier`` 2
``core``     as leaf, ``tier`` 3
``switch``   an imported switch: ``kind``, ``tier`` (inferred: 1 = has hosts, then by
             hop distance from the leaves), ``plane`` (0), ``rail`` (-1), ``ports``,
             ``guid`` (``None`` in ibsim files), ``description``
===========  ========================================================================

:data:`NODE_KEYS` holds these sets (:data:`IMPORTED_NIC_KEYS` for imported NICs).

Edge attributes (exactly these, :data:`EDGE_KEYS`): ``capacity`` (B/s per direction, summed
over the cables), ``links`` (number of cables), ``kind`` (``nvlink`` GPU-NVSwitch, ``pcie``
GPU-NIC, ``endpoint`` NIC-switch, ``fabric`` switch-switch). Imported edges add ``speed``
(e.g. ``"4xNDR"``; parallel cables of different speeds are joined with ``+``):
:data:`IMPORTED_EDGE_KEYS`.

Graph attributes (``G.graph``, exactly these; :data:`GRAPH_KEYS` by family):

- every built fabric (``family`` ``ft2``, ``ft3``, ``mrft``, ``mpft``, ``dragonfly``,
  ``slimfly``, ``rail-only``, ``hpn``): ``family``, ``name`` (``<family>-<gpus>``),
  ``planes``, ``switch_ports``,
  ``link_gbps``, ``gpus_per_node``, ``nics_per_node``, ``nvlink_GBps``, ``pcie_GBps``,
  ``oversubscription``, ``max_gpus`` (:data:`BUILT_GRAPH_KEYS`);
- a Dragonfly adds ``routers_per_group``, ``endpoints_per_router``, ``global_ports``,
  ``groups`` and ``arrangement`` (``consecutive`` or ``palmtree``);
- a Slim Fly adds ``q`` (the MMS prime power), ``network_radix`` and
  ``endpoints_per_router``;
- an imported fabric (``family`` ``ibnetdiscover``) has ``family``, ``name`` (the file's
  stem), ``planes``, ``source``, ``format`` (``ibnetdiscover`` or ``ibsim``), ``name_map``,
  ``aggregation_nodes``, ``link_speeds`` (cables per speed), and the counts of what was left
  out or doubtful: ``loopback_cables``, ``unconnected_cas``, ``ca_to_ca_cables``,
  ``routers``, ``mismatched_cables``, ``unreachable_switches``, ``skipped_lines`` (see
  :func:`topo.formats.read_ibnetdiscover`). Imported with hosts
  (:func:`topo.formats.add_hosts`), it adds ``gpus_per_node``, ``nvlink_GBps``, ``pcie_GBps``
  and ``host_regex``, and GPUs and NVSwitches as a built server has, their ``nvlink`` and
  ``pcie`` edges carrying ``speed`` ``"nvlink"`` and ``"pcie"``. Imported with NVLink domains
  larger than a host (:mod:`topo.formats.nvlink_domains`, a GB200 NVL72 rack of 18 trays), a
  GPU's and a NIC's ``node`` is the domain (one NVSwitch joins its GPUs; the solvers contract it
  as one server) and each carries ``host``, the tray it sits in (a GPU's ``index`` is then its
  position in the domain); ``G.graph`` adds ``nvlink_domain_regex`` and
  ``hosts_outside_nvlink_domains``.

:func:`check_schema` (run by :func:`load`) checks the attributes the rest of topo relies on;
the others are documented here and kept as they are.

File format
-----------
networkx node-link JSON, ``networkx.node_link_data(G, edges="edges")``, written by
:func:`save` (whole or not at all) and read back, validated, by :func:`load`.
"""

from __future__ import annotations

import gc
import itertools
import json
import math
import os
import re
import stat
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import orjson

from topo.errors import FormatError, SpecError, TopoError
from topo.wording import shown

SWITCH_KINDS = ("leaf", "spine", "core", "switch")
NODE_KINDS = ("gpu", "nic", "nvswitch", *SWITCH_KINDS)
EDGE_KINDS = ("nvlink", "pcie", "endpoint", "fabric")
TIER_NAMES = {1: "leaf", 2: "spine", 3: "core"}

NODE_KEYS: dict[str, frozenset[str]] = {
    "gpu": frozenset({"kind", "node", "index"}),
    "nic": frozenset({"kind", "node", "index"}),
    "nvswitch": frozenset({"kind", "node"}),
    "leaf": frozenset({"kind", "tier", "plane", "rail", "ports"}),
    "spine": frozenset({"kind", "tier", "plane", "rail", "ports"}),
    "core": frozenset({"kind", "tier", "plane", "rail", "ports"}),
    "switch": frozenset({"kind", "tier", "plane", "rail", "ports", "guid", "description"}),
}
"""The attributes each kind of node carries in a built fabric (imported NICs add
``guid`` and ``description``; see :data:`IMPORTED_NIC_KEYS`)."""

IMPORTED_NIC_KEYS = frozenset({"kind", "node", "index", "guid", "description"})
"""The attributes of a NIC of an imported fabric (a host CA port)."""
EDGE_KEYS = frozenset({"capacity", "links", "kind"})
"""The attributes of every edge of a built fabric."""
IMPORTED_EDGE_KEYS = frozenset({"capacity", "links", "kind", "speed"})
"""The attributes of every edge of an imported fabric."""

BUILT_GRAPH_KEYS = frozenset(
    {
        "family",
        "name",
        "planes",
        "switch_ports",
        "link_gbps",
        "gpus_per_node",
        "nics_per_node",
        "nvlink_GBps",
        "pcie_GBps",
        "oversubscription",
        "max_gpus",
    }
)
"""The graph attributes every builder sets."""

GRAPH_KEYS: dict[str, frozenset[str]] = {
    "ft2": BUILT_GRAPH_KEYS,
    "ft3": BUILT_GRAPH_KEYS,
    "mrft": BUILT_GRAPH_KEYS,
    "mpft": BUILT_GRAPH_KEYS,
    "rail-only": BUILT_GRAPH_KEYS,
    "hpn": BUILT_GRAPH_KEYS,
    "dragonfly": BUILT_GRAPH_KEYS
    | {"routers_per_group", "endpoints_per_router", "global_ports", "groups", "arrangement"},
    "slimfly": BUILT_GRAPH_KEYS | {"q", "network_radix", "endpoints_per_router"},
    "ibnetdiscover": frozenset(
        {
            "family",
            "name",
            "planes",
            "source",
            "format",
            "name_map",
            "aggregation_nodes",
            "link_speeds",
            "loopback_cables",
            "unconnected_cas",
            "ca_to_ca_cables",
            "routers",
            "mismatched_cables",
            "unreachable_switches",
            "skipped_lines",
        }
    ),
}
"""``family`` -> the graph attributes (``G.graph`` keys) a fabric of that family carries."""


def node_keys(family: str, kind: str) -> frozenset[str]:
    """The attributes a node of ``kind`` carries in a fabric of ``family`` (exactly these).

    Parameters
    ----------
    family : str
        ``G.graph["family"]``: a builder's family or ``ibnetdiscover``.
    kind : str
        The node's ``kind`` (one of :data:`NODE_KINDS`).

    Returns
    -------
    frozenset of str
        :data:`IMPORTED_NIC_KEYS` for an imported NIC, else ``NODE_KEYS[kind]``.

    Raises
    ------
    KeyError
        If ``kind`` is not a node kind.

    Examples
    --------
    >>> sorted(node_keys("ft2", "nic")), sorted(node_keys("ibnetdiscover", "nic"))[:2]
    (['index', 'kind', 'node'], ['description', 'guid'])
    """
    if family == "ibnetdiscover" and kind == "nic":
        return IMPORTED_NIC_KEYS
    return NODE_KEYS[kind]


def edge_keys(family: str) -> frozenset[str]:
    """The attributes every edge of a fabric of ``family`` carries (exactly these).

    Returns
    -------
    frozenset of str
        :data:`IMPORTED_EDGE_KEYS` for ``ibnetdiscover``, else :data:`EDGE_KEYS`.
    """
    return IMPORTED_EDGE_KEYS if family == "ibnetdiscover" else EDGE_KEYS


def is_switch(G: nx.Graph, v: Any) -> bool:
    """True if vertex ``v`` of fabric ``G`` is a switch (leaf, spine, core or imported switch)."""
    return G.nodes[v]["kind"] in SWITCH_KINDS


def tier_name(tier: int) -> str:
    """Name of a switch tier: 1 -> ``leaf``, 2 -> ``spine``, 3 -> ``core``, 4 -> ``tier4``."""
    return TIER_NAMES.get(tier, f"tier{tier}")


def vertex_label(G: nx.Graph, v: Any) -> str:
    """How reports name a vertex's place: its tier for a switch (``leaf``, ``spine``, ...),
    its kind otherwise (``gpu``, ``nic``, ``nvswitch``). A link direction's tier is
    ``f"{vertex_label(G, u)}->{vertex_label(G, v)}"``, e.g. ``nic->leaf``."""
    d = G.nodes[v]
    return tier_name(int(d["tier"])) if d["kind"] in SWITCH_KINDS else str(d["kind"])


_DIGITS = re.compile(r"(\d+)")
_split_digits = _DIGITS.split


def natural_key(v: Hashable) -> tuple[Any, ...]:
    """Sort key that orders vertex names as people do: ``leaf2`` before ``leaf10``.

    The name (any hashable, shown with ``str``) is split into runs of digits and non-digits;
    digit runs compare as integers. Text and digit runs alternate from the start, so names
    mixing digits and letters in different places still compare (no ``TypeError``); integer
    names (Python or numpy) sort before every string, by value.

    Parameters
    ----------
    v : hashable
        A vertex name or server id.

    Returns
    -------
    tuple
        A key for :func:`sorted`.

    Examples
    --------
    >>> sorted(["leaf10", "leaf2", "p1/leaf0"], key=natural_key)
    ['leaf2', 'leaf10', 'p1/leaf0']
    """
    if type(v) is not str:  # names are strings; only other types pay for the checks
        if isinstance(v, int) and not isinstance(v, bool):
            return (0, v)
        if getattr(getattr(v, "dtype", None), "kind", "") in ("i", "u"):  # numpy integers
            return (0, int(v))  # type: ignore[call-overload]
        v = str(v)
    # split() with a capturing group alternates text and digit runs (text first, possibly
    # empty), so two keys hold the same type at every position: no per-part tags needed.
    parts: list[Any] = _split_digits(v)
    n = len(parts)  # (names of one or two numbers, written out: a third faster)
    try:
        if n == 5:
            return (1, parts[0], int(parts[1]), parts[2], int(parts[3]), parts[4])
        if n == 3:
            return (1, parts[0], int(parts[1]), parts[2])
        parts[1::2] = map(int, parts[1::2])
    except ValueError:  # a run of digits past Python's limit for converting a str at once
        parts[1::2] = map(_long_digits, parts[1::2])
    return (1, *parts)


def _long_digits(run: str) -> int:
    """The value of a run of decimal digits of any length (``int`` refuses more than
    ``sys.get_int_max_str_digits()``, 4,300 by default): converted 4,000 digits at a time."""
    value = 0
    for i in range(0, len(run), 4000):
        part = run[i : i + 4000]
        value = value * 10 ** len(part) + int(part)
    return value


def natural_sorted_groups(groups: dict[Hashable, list[Any]]) -> dict[Hashable, list[Any]]:
    """Each group's names in natural order, the groups in natural order of their keys: what
    ``{k: sorted(groups[k], key=natural_key) for k in sorted(groups, key=natural_key)}``
    gives, faster when the groups' names differ only after a common prefix, in the same way
    (a server's ``node12/gpu0`` ... ``node12/nic7``).

    The prefix common to a group's names, cut back to end in a non-digit, is taken off; the
    natural order of what is left is the natural order of the names (the prefix's last text
    run joins the first text run of every name alike, and no digit run is cut), so the order
    of each distinct tuple of remainders is worked out once. Sorting is stable, as
    :func:`sorted`: names of equal key (``a01``, ``a1``) keep their order.

    Parameters
    ----------
    groups : dict of hashable to list
        Group key -> its names (hashables; :func:`natural_key` of each).

    Returns
    -------
    dict
        The same groups, new lists.
    """
    orders: dict[tuple[str, ...], list[int]] = {}
    out = {}
    for k in sorted(groups, key=natural_key):
        names = groups[k]
        if len(names) < 2 or any(type(v) is not str for v in names):
            out[k] = sorted(names, key=natural_key)
            continue
        first, last = min(names), max(names)  # (the common prefix of all is theirs)
        cut = 0
        for a, b in zip(first, last, strict=False):  # (up to the shorter)
            if a != b:
                break
            cut += 1
        while cut and first[cut - 1].isdecimal():  # (what \d matches: Unicode digits too)
            cut -= 1
        rest = tuple(v[cut:] for v in names)
        order = orders.get(rest)
        if order is None:
            keys = list(map(natural_key, rest))
            order = orders[rest] = sorted(range(len(rest)), key=keys.__getitem__)
        out[k] = [names[i] for i in order]
    return out


def require_fabric(G: object, name: str = "G") -> None:
    """Refuse, with topo's own error, an argument that is not a fabric graph.

    Library entry points call it first, so that a wrong argument (``None``, a path, a directed
    graph, a graph built in memory with an edge of no, NaN, infinite, zero or negative
    capacity) gives one line naming it, not an AttributeError or KeyError deep inside a
    solver, nor a wrong number (a NaN or infinite capacity made the edge unconstrained). It
    checks the type and every edge's capacity (:func:`capacity_fault`, the rule
    :func:`load` applies to a file); :func:`check_schema` and :func:`check_wiring` check the
    rest.

    Parameters
    ----------
    G : object
        What the caller passed as the fabric.
    name : str
        The caller's parameter name, for the message.

    Raises
    ------
    TopoError
        ``G`` is not an undirected, simple ``networkx.Graph``.
    SpecError
        (``.param`` ``name``) an edge's capacity is missing or not a finite number of B/s
        within :data:`CAPACITY_RANGE_Bps`, naming the edge.

    Examples
    --------
    >>> G = nx.Graph()
    >>> G.add_edge("leaf0", "spine0", capacity=-1)
    >>> require_fabric(G)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topo.errors.SpecError: G: edge 'leaf0'-'spine0': 'capacity' must be a number of B/s ..., got -1
    """
    if not isinstance(G, nx.Graph) or G.is_directed() or G.is_multigraph():
        raise TopoError(
            f"{name} must be a fabric: an undirected networkx.Graph (topo.builders.build, "
            f"topo.fabric.load), got {type(G).__name__}"
        )
    fault = capacity_fault(G)
    if fault is not None:
        raise SpecError(f"{name}: {fault}", param=name)


def terminal_kind(G: nx.Graph) -> str:
    """What the fabric's traffic terminals are: ``"gpu"`` when it has GPUs, else ``"nic"``.

    Built fabrics (and imported ones given hosts) have GPUs; an imported fabric without a host
    model has only CA ports, and each NIC is then a terminal (reports call it an endpoint).
    """
    return "gpu" if any(k == "gpu" for _, k in G.nodes(data="kind")) else "nic"


def servers(G: nx.Graph) -> dict[Hashable, list[str]]:
    """The servers of a fabric in natural order of their ``node`` id, each with its vertices.

    Returns
    -------
    dict
        ``node`` id -> that server's GPUs, NICs and NVSwitches (every non-switch vertex with that
        ``node``), each list in natural order of the vertex names. Servers appear in natural order
        of their id (``node2`` before ``node10``; ints by value).

    Examples
    --------
    >>> from topo.builders import build
    >>> G = build("ft2", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    >>> s = servers(G); len(s), s[0][:2]
    (8, ['node0/gpu0', 'node0/gpu1'])
    """
    by: dict[Hashable, list[str]] = defaultdict(list)
    for v, d in G._node.items():  # the raw attribute dicts: this visits every vertex
        if d["kind"] not in SWITCH_KINDS:
            by[d["node"]].append(v)
    return natural_sorted_groups(by)


def named_servers(
    G: nx.Graph, ids: Iterable[Hashable], limit: int = 3, devices: bool = True
) -> str:
    """The first servers of ``ids`` for a message: each with one of its devices, so that a
    server numbered 3 reads ``server 3 (node3/gpu0)`` and an imported one
    ``server 'gpu01' (gpu01/mlx5_0/p1)``.

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    ids : iterable of hashable
        Server (``node``) ids, in any order; named in natural order.
    limit : int
        How many to name; the rest are counted (``and 5 more``).
    devices : bool
        Name a device of each (its first GPU, else its first NIC, by name); False: the ids.

    Returns
    -------
    str
        ``"server 3 (node3/gpu0)"``, ``"servers 3 (node3/gpu0), 7 (node7/gpu0) and 1 more"``.

    Examples
    --------
    >>> from topo.builders import build
    >>> G = build("ft2", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    >>> named_servers(G, [7, 3])
    'servers 3 (node3/gpu0) and 7 (node7/gpu0)'
    >>> named_servers(G, range(8), limit=2)
    'servers 0 (node0/gpu0), 1 (node1/gpu0) and 6 more'
    """
    wanted = sorted(set(ids), key=natural_key)
    first = set(wanted[:limit]) if devices else set()
    device: dict[Hashable, Any] = {}
    for v, d in G.nodes(data=True):
        n = d.get("node")
        if d.get("kind") in ("gpu", "nic") and n in first:
            rank = (d["kind"] != "gpu", natural_key(v))
            if n not in device or rank < device[n][0]:
                device[n] = (rank, v)
    items = [f"{n!r} ({device[n][1]})" if n in device else repr(n) for n in wanted[:limit]]
    if len(wanted) > limit:
        items.append(f"{len(wanted) - limit:,} more")
    listed = items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"
    return f"{'server' if len(wanted) == 1 else 'servers'} {listed}"


def host_of_vertex(d: dict[str, Any]) -> Hashable:
    """The host a GPU's or NIC's attributes place it in: its ``host`` where the fabric has
    NVLink domains larger than a host (:mod:`topo.formats.nvlink_domains`), else its ``node``
    (a server is one host)."""
    host: Hashable = d["host"] if "host" in d else d["node"]
    return host


def hosts(G: nx.Graph) -> dict[Hashable, list[str]]:
    """The hosts of a fabric (what Slurm and nccl-tests call nodes), each with its GPUs and NICs.

    On most fabrics a host is a server (:func:`servers`); where NVLink domains span several
    hosts (a GB200 NVL72 rack of 18 trays), a server is a domain and its GPUs and NICs name
    their host (tray) in a ``host`` attribute.

    Returns
    -------
    dict
        Host id -> its GPUs and NICs in natural order of their names; hosts in natural order of
        their ids. NVSwitches belong to a server, not to a host, and are not listed.

    Examples
    --------
    >>> from topo.builders import build
    >>> G = build("ft2", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    >>> h = hosts(G); len(h), h[0][:2]
    (8, ['node0/gpu0', 'node0/gpu1'])
    """
    by: dict[Hashable, list[str]] = defaultdict(list)
    for v, d in G._node.items():
        if d["kind"] in ("gpu", "nic"):
            by[host_of_vertex(d)].append(v)
    return natural_sorted_groups(by)


def spans_hosts(G: nx.Graph) -> bool:
    """Whether some server of the fabric is an NVLink domain of hosts (its GPUs carry ``host``)."""
    return any(d["kind"] == "gpu" and "host" in d for d in G._node.values())


def nic_ports(G: nx.Graph) -> int:
    """Ports per NIC: a server's NIC vertices over the fabric's ``nics_per_node``.

    A fabric of multi-port NICs (``topo build --nic-ports P``, :mod:`topo.builders.ports`)
    has one NIC vertex per port, ``P * nics_per_node`` per server. A fabric that does not
    record ``nics_per_node`` (an imported dump) counts each NIC vertex as a NIC of one port.

    Parameters
    ----------
    G : networkx.Graph
        A fabric.

    Returns
    -------
    int
        ``P`` (1 when the counts do not divide, or the fabric has no NIC).
    """
    per_node = G.graph.get("nics_per_node")
    if not isinstance(per_node, int) or per_node < 1:
        return 1
    counts = Counter(d.get("node") for d in G._node.values() if d["kind"] == "nic")
    most = max(counts.values(), default=0)
    return most // per_node if most > per_node and most % per_node == 0 else 1


def components_within(G: nx.Graph, within: Iterable[Hashable]) -> list[set[Any]]:
    """The connected components of the subgraph of ``G`` on the vertices ``within``.

    The sets of ``nx.connected_components(G.subgraph(within))``, found from the raw adjacency
    dicts (no subgraph views: 3 times faster on the switches of a 65,536-GPU FT3), in the
    order of their first vertex in ``within``.

    Parameters
    ----------
    G : networkx.Graph
        A graph.
    within : iterable
        Vertices (those not in ``G`` are ignored).

    Returns
    -------
    list of set
        The components.
    """
    adj = G._adj  # the raw dicts (no views): this visits every edge at the vertices kept
    order = [v for v in within if v in adj]  # (as a subgraph, vertices not in G are ignored)
    keep = set(order)
    seen: set[Any] = set()
    out = []
    for v in order:
        if v in seen:
            continue
        comp, todo = {v}, [v]
        while todo:
            for u in adj[todo.pop()]:
                if u in keep and u not in comp:
                    comp.add(u)
                    todo.append(u)
        seen |= comp
        out.append(comp)
    return out


def switch_components(G: nx.Graph) -> list[list[str]]:
    """The connected components of the switch graph (planes, in a multi-plane fabric).

    Returns
    -------
    list of list of str
        Each component's switches in natural order; components ordered by their first name.
    """
    switches = [v for v, k in G.nodes(data="kind") if k in SWITCH_KINDS]
    comps = [sorted(c, key=natural_key) for c in components_within(G, switches)]
    comps.sort(key=lambda c: natural_key(c[0]))
    return comps


def blocks_below_top(G: nx.Graph, switches: Iterable[Hashable] | None = None) -> list[list[str]]:
    """The blocks of a Clos: components of the switches below the top tier (pods, in a FT3).

    Parameters
    ----------
    G : networkx.Graph
        A fabric.
    switches : iterable, optional
        The switches to consider (default: all); the top tier is the highest ``tier`` among them.

    Returns
    -------
    list of list of str
        Each block's switches ordered by (tier, natural name); blocks ordered by their first
        switch. A two-layer fat tree's blocks are its single leaves.
    """
    scope = (
        list(switches)
        if switches is not None
        else [v for v, k in G.nodes(data="kind") if k in SWITCH_KINDS]
    )
    if not scope:
        return []
    top = max(int(G.nodes[s]["tier"]) for s in scope)
    lower = [s for s in scope if int(G.nodes[s]["tier"]) < top]
    blocks = [
        sorted(b, key=lambda v: (int(G.nodes[v]["tier"]), natural_key(v)))
        for b in components_within(G, lower)
    ]
    blocks.sort(key=lambda b: natural_key(b[0]))
    return blocks


@dataclass(frozen=True)
class FabricSummary:
    """Counts of a fabric, as the builders and ``topo build --json`` report them.

    Attributes
    ----------
    family : str
        ``ft2``, ``ft3``, ``mrft``, ``mpft`` or ``ibnetdiscover``.
    gpus, nodes, endpoints : int
        GPUs; servers (distinct ``node`` of GPUs and NICs); NIC ports attached to a switch.
    switches : int
        All switches; ``switches_by_tier`` splits them by tier name (leaf, spine, core, ...).
    links : int
        Switch-to-switch cables (the count the papers compare).
    endpoint_links : int
        NIC-to-switch cables (server to switch).
    cables : int
        All cables attached to a switch, ``links + endpoint_links``: what ``--fail-links``
        draws from (:func:`topo.flow.failures.cables`, a bundle counted cable by cable).
    planes : int
        Independent fabrics (MPFT: NICs per node; otherwise 1).
    max_gpus : int or None
        The family's ceiling for this switch and node (None for imported fabrics).
    """

    family: str
    gpus: int
    nodes: int
    endpoints: int
    switches: int
    switches_by_tier: dict[str, int]
    links: int
    endpoint_links: int
    planes: int
    max_gpus: int | None = None
    cables: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The summary as a JSON-ready dict; ``extra`` entries are merged in at the top level."""
        d = asdict(self)
        extra = d.pop("extra")
        d = {k: v for k, v in d.items() if k != "cables"}
        keys = list(d)
        at = keys.index("endpoint_links") + 1  # the total beside its two parts
        d = {**{k: d[k] for k in keys[:at]}, "cables": self.cables, **{k: d[k] for k in keys[at:]}}
        d.update(extra)
        return d


def summarize(G: nx.Graph) -> FabricSummary:
    """Count a fabric's GPUs, nodes, endpoints, switches by tier and cables.

    Parameters
    ----------
    G : networkx.Graph
        A fabric following the schema of this module.

    Returns
    -------
    FabricSummary
        ``links`` counts switch-to-switch cables (sum of ``links`` over ``fabric`` edges),
        ``endpoint_links`` NIC-to-switch cables.

    Examples
    --------
    >>> from topo.builders import build
    >>> summarize(build("ft2", switch_ports=8)).switches
    12
    """
    kinds = Counter(k for _, k in G.nodes(data="kind"))
    tiers: Counter[str] = Counter()
    for _, d in G.nodes(data=True):
        if d["kind"] in SWITCH_KINDS:
            tiers[tier_name(int(d["tier"]))] += 1
    links = endpoint_links = 0
    endpoints = set()
    for u, v, d in G.edges(data=True):
        if d["kind"] == "fabric":
            links += int(d["links"])
        elif d["kind"] == "endpoint":
            endpoint_links += int(d["links"])
            endpoints.add(u if G.nodes[u]["kind"] == "nic" else v)
    nodes = {d["node"] for _, d in G.nodes(data=True) if d["kind"] in ("gpu", "nic")}
    extra: dict[str, Any] = {}
    if G.graph.get("family") == "ibnetdiscover":
        extra["aggregation_nodes"] = G.graph.get("aggregation_nodes", 0)
        extra["link_speeds"] = G.graph.get("link_speeds", {})
    return FabricSummary(
        family=str(G.graph.get("family", "unknown")),
        gpus=kinds.get("gpu", 0),
        nodes=len(nodes),
        endpoints=len(endpoints),
        switches=sum(tiers.values()),
        switches_by_tier=dict(sorted(tiers.items(), key=lambda kv: _tier_order(kv[0]))),
        links=links,
        endpoint_links=endpoint_links,
        cables=links + endpoint_links,
        planes=int(G.graph.get("planes", 1)),
        max_gpus=G.graph.get("max_gpus"),
        extra=extra,
    )


def _tier_order(name: str) -> int:
    for t, n in TIER_NAMES.items():
        if n == name:
            return t
    return int(name.removeprefix("tier")) if name.startswith("tier") else 99


def check_writable(path: str | Path) -> tuple[Path, Path]:
    """Refuse an output :func:`write_atomic` would refuse, before anything is computed.

    Parameters
    ----------
    path : str or Path
        The output file.

    Returns
    -------
    (Path, Path)
        The file to be written and its folder.

    Raises
    ------
    FormatError
        ``path`` is ``-`` (a user means standard output by it), or a symbolic link (an
        output is never written through a link, nor replaces one: the file behind it, often
        another format's, or ``/dev/stdout``, would be overwritten without remark); it ends in
        ``/`` (a folder's name); it exists and is not a regular file; its folder does not
        exist or cannot be written (``os.access``: a user's permissions, not the
        superuser's).
    """
    raw = str(path)
    target = link_target(path)
    if raw == "-" or (target is not None and _file_descriptor_link(path)):
        what = (
            "'-' is not read as standard output here"
            if raw == "-"
            else "it leads to a file descriptor of this process (as /dev/stdout does), "
            "which is not written to"
        )
        raise FormatError(
            path,
            f"cannot write: {what}; give a file name (without the output option the "
            "command prints its table, or as_json, to standard output)",
            names=("as_json",),
        )
    if raw.endswith(("/", os.sep)):
        raise FormatError(
            path, "cannot write: a name ending in '/' names a folder; give a file name"
        )
    if os.path.islink(path):
        raise FormatError(
            path,
            f"cannot write: it is a symbolic link (to {os.readlink(path)}); an output is "
            "never written through a link nor replaces one: give the file's own name, or "
            "another",
        )
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise FormatError(path, f"cannot write: {exc.strerror or exc}") from None
    if mode is not None and not stat.S_ISREG(mode):
        what = "a folder" if stat.S_ISDIR(mode) else "not a regular file (a FIFO, device or socket)"
        raise FormatError(path, f"cannot write: it is {what}; refusing to replace it")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise FormatError(path, f"cannot write: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise FormatError(path, f"cannot write: folder {folder} is not writable")
    return path, folder


_DESCRIPTORS = re.compile(r"/proc/(?:self|thread-self|\d+)(?:/task/\d+)?/fd|/dev/fd")


def _file_descriptor_link(path: str | Path) -> bool:
    """Does the symbolic link ``path`` lead, link by link, through a folder of file
    descriptors (``/proc/<pid>/fd``, ``/dev/fd``), as ``/dev/stdout`` does?"""
    p = os.path.abspath(path)
    for _ in range(40):  # (the kernel's limit on links followed)
        if not os.path.islink(p):
            return False
        folder = os.path.realpath(os.path.dirname(p))
        if _DESCRIPTORS.fullmatch(folder):
            return True
        try:
            p = os.path.join(folder, os.readlink(p))
        except OSError:
            return False
    return False


def link_target(path: str | Path) -> Path | None:
    """The file a symbolic link ``path`` leads to (``os.path.realpath``), or None if ``path``
    is not a link."""
    return Path(os.path.realpath(path)) if os.path.islink(path) else None


def written_names(path: str | Path) -> list[tuple[str | Path, str]]:
    """The names whose suffix says what the file written at ``path`` holds: ``path``, and for
    a symbolic link the file it leads to (the one replaced), each with the words an error
    puts before its message (``""``, ``"a link to T: "``). For the suffix checks of
    :func:`check_fabric_path` and :func:`topo.plot.html.check_html_path`."""
    target = link_target(path)
    return [(path, "")] + ([(target, f"a link to {target}: ")] if target is not None else [])


def write_atomic(path: str | Path, text: str | bytes) -> None:
    """Write ``text`` to ``path`` whole or not at all (a temporary file beside it, then rename).

    Nothing that is not a regular file is written through or replaced: a symbolic link, a
    FIFO, a device such as ``/dev/full``, a socket, a folder. The temporary file is
    ``.NAME.PID.XXXXXXXX.tmp`` (``PID`` this process's id); a write of ``NAME`` first removes
    the temporary files of ``NAME`` whose process is gone (one killed mid-write, by SIGKILL or
    a power cut, leaves its file behind: Ctrl-C and SIGTERM remove theirs).

    Parameters
    ----------
    path : str or Path
        The output file.
    text : str or bytes
        The whole content: a string is written as UTF-8, bytes as they are (e.g. a Parquet
        table).

    Raises
    ------
    FormatError
        As :func:`check_writable`: the folder does not exist or cannot be written, ``path`` is
        a symbolic link or exists and is not a regular file, or ``path`` is ``-`` (a user
        means standard output by it; a file named ``-`` was written before).
    """
    path, folder = check_writable(path)
    remove_stale_temporaries(path)
    try:
        fd, tmp = tempfile.mkstemp(
            dir=folder, prefix=f".{path.name}.{os.getpid()}.", suffix=_TEMP_SUFFIX
        )
    except OSError as exc:
        raise FormatError(path, f"cannot write: {exc.strerror}") from None
    try:
        # mkstemp creates 0600; give the file the mode a plain open() would have.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8") if isinstance(text, str) else text)
        check_writable(path)  # (what may have taken its place meanwhile is not replaced)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise FormatError(path, f"cannot write: {exc.strerror or exc}") from None
        raise


_TEMP_SUFFIX = ".tmp"


def remove_stale_temporaries(path: str | Path) -> list[Path]:
    """Remove the temporary files that :func:`write_atomic` left beside ``path`` in a process
    that is gone (``.NAME.PID.XXXXXXXX.tmp`` whose ``PID`` no longer runs).

    A process killed while it wrote (SIGKILL, the machine's power) leaves its temporary file;
    the next write of the same name removes it. Those of running processes (another write
    under way) are kept.

    Parameters
    ----------
    path : str or Path
        The output file.

    Returns
    -------
    list of Path
        The files removed.
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    pattern = re.compile(
        rf"\.{re.escape(path.name)}\.(\d+)\.[A-Za-z0-9_]+{re.escape(_TEMP_SUFFIX)}"
    )
    removed: list[Path] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        m = pattern.fullmatch(name)
        if m is None or _process_runs(int(m[1])):
            continue
        stale = folder / name
        try:
            if stat.S_ISREG(os.lstat(stale).st_mode):
                stale.unlink()
                removed.append(stale)
        except OSError:  # (gone meanwhile, or not ours to remove)
            pass
    return removed


def _process_runs(pid: int) -> bool:
    """Whether a process with id ``pid`` exists (``kill(pid, 0)``; another user's counts)."""
    if pid <= 0:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True


def read_text(path: str | Path) -> str:
    """Read a UTF-8 text file whole (a leading byte order mark, as Windows editors write,
    is dropped).

    Raises
    ------
    FormatError
        If the file is missing, cannot be read, or is not UTF-8 text.
    """
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise FormatError(path, "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise FormatError(path, f"cannot read: {exc}") from None


MAX_NUMBER_DIGITS = 100
"""Longest run of digits accepted in an input file (no count, rate, GUID or time needs more;
Python refuses to convert integers of over 4,300 digits at all)."""

_LONG_NUMBER = re.compile(r"\d{" + str(MAX_NUMBER_DIGITS + 1) + ",}")


def long_number(path: str | Path, text: str) -> FormatError | None:
    """The error for the first run of more than :data:`MAX_NUMBER_DIGITS` digits in ``text``.

    Parameters
    ----------
    path : str or Path
        The file ``text`` came from (named in the error).
    text : str
        Its content.

    Returns
    -------
    FormatError or None
        Naming the file, the line and the number's length; None if every number is short.

    Examples
    --------
    >>> print(long_number("f.toml", "a = 1\\nb = " + "9" * 5000))
    f.toml:2: a number of 5,000 digits: numbers in input files have at most 100 digits
    """
    m = _LONG_NUMBER.search(text)
    if m is None:
        return None
    return FormatError(
        path,
        f"a number of {m.end() - m.start():,} digits: numbers in input files have at most "
        f"{MAX_NUMBER_DIGITS} digits",
        line=text.count("\n", 0, m.start()) + 1,
    )


def too_deep(path: str | Path, prefix: str = "not JSON") -> FormatError:
    """The error for a JSON file nested deeper than Python's parser can follow.

    ``json.loads`` recurses once per level of nesting and raises :class:`RecursionError` past
    the interpreter's recursion limit (:func:`sys.getrecursionlimit`, 1,000 by default); no
    file topo reads needs more than a few levels.

    Parameters
    ----------
    path : str or Path
        The file (named in the error).
    prefix : str
        The reader's own words for a file that is not JSON (``"not JSON"``).

    Returns
    -------
    FormatError
        ``"PATH: not JSON: nested too deeply (over about 1,000 levels of arrays or objects)"``.

    Examples
    --------
    >>> print(too_deep("deep.json"))
    deep.json: not JSON: nested too deeply (over about 1,000 levels of arrays or objects)
    """
    limit = sys.getrecursionlimit()
    return FormatError(
        path, f"{prefix}: nested too deeply (over about {limit:,} levels of arrays or objects)"
    )


def parse_json(path: str | Path, text: str) -> Any:
    """``json.loads(text)``, its errors as :class:`FormatError` naming ``path`` and the line.

    Raises
    ------
    FormatError
        If ``text`` is not JSON, holds an integer too long for Python to convert (over
        4,300 digits: ``json`` raises a plain ``ValueError``), or is nested too deeply
        (:func:`too_deep`).
    """
    try:
        return json.loads(text)
    except RecursionError:
        raise too_deep(path) from None
    except json.JSONDecodeError as exc:
        raise FormatError(path, f"not JSON: {exc.msg}", exc.lineno, exc.colno) from None
    except ValueError as exc:  # int-conversion limit
        raise (long_number(path, text) or FormatError(path, f"not JSON: {exc}")) from None


_TOML_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


def toml_error(path: str | Path, exc: ValueError, prefix: str = "not valid TOML") -> FormatError:
    """A ``tomllib.TOMLDecodeError`` as a :class:`FormatError` naming the file, the line and the
    column.

    Python 3.14's error carries ``lineno`` and ``colno``; older ones only say
    ``"... (at line 3, column 7)"`` at the end of the message, read from there.

    Examples
    --------
    >>> import tomllib
    >>> try:
    ...     tomllib.loads("a = 1\\nb = [1,\\n c")
    ... except tomllib.TOMLDecodeError as exc:
    ...     print(toml_error("spec.toml", exc))
    spec.toml:3:2: not valid TOML: Invalid value
    """
    text = str(exc)
    found = _TOML_AT.search(text)
    line = getattr(exc, "lineno", None) or (int(found[1]) if found else None)
    column = getattr(exc, "colno", None) or (int(found[2]) if found else None)
    msg = getattr(exc, "msg", None) or (text[: found.start()] if found else text)
    return FormatError(path, f"{prefix}: {msg}", line, column)


FABRIC_SUFFIXES = (".json",)
"""The suffixes a fabric file may have (or none): :func:`save` writes node-link JSON only."""


def check_fabric_path(path: str | Path) -> None:
    """Refuse a fabric file name whose suffix says another format (``ft2.csv``): the file
    would hold JSON under a name that promises CSV.

    Parameters
    ----------
    path : str or Path
        The file to be written; a name without a suffix passes.

    Raises
    ------
    FormatError
        Naming the file, its suffix and :data:`FABRIC_SUFFIXES`; for a symbolic link, the
        suffix of the file it leads to is checked too (that file is the one replaced).
    """
    for name, via in written_names(path):
        suffix = Path(name).suffix
        if suffix and suffix.lower() not in FABRIC_SUFFIXES:
            raise FormatError(
                path, f"{via}a fabric is written as node-link JSON: name it .json, not {suffix}"
            )


def save(G: nx.Graph, path: str | Path) -> None:
    """Write fabric ``G`` to ``path`` as networkx node-link JSON, whole or not at all.

    Parameters
    ----------
    G : networkx.Graph
        A fabric following the schema of this module.
    path : str or Path
        Output file (conventionally ``*.json``).

    Raises
    ------
    FormatError
        If the file cannot be written, or its name has a suffix other than ``.json``
        (:func:`check_fabric_path`).
    """
    check_fabric_path(path)
    data = nx.node_link_data(G, edges="edges")
    write_atomic(path, json.dumps(data, separators=(",", ":")))


def load(path: str | Path) -> nx.Graph:
    """Read a fabric written by :func:`save` (or ``topo build -o`` / ``topo import -o``).

    The node-link lists are checked as they are read, one pass each, and the graph is built
    from them in one go; a file that breaks a rule (or holds anything unusual: repeated
    nodes or edges, edges to undeclared nodes) is read again the way networkx reads it,
    ``nx.Graph(nx.node_link_graph(data, edges="edges"))``, and checked by
    :func:`check_schema`, which names the first offender. Both ways give the same graph, with
    the same node, neighbour and edge order.

    Parameters
    ----------
    path : str or Path
        A networkx node-link JSON file with ``edges="edges"``.

    Returns
    -------
    networkx.Graph
        The fabric, checked against the schema (node kinds, edge ``capacity`` > 0 in B/s,
        ``links`` >= 1, edge ``kind``).

    Raises
    ------
    FormatError
        If the file is missing, is not JSON, or does not follow the schema; the message names
        the file and the first offending node or edge.
    """
    path = Path(path)
    text = read_text(path)
    with gc_paused():  # the cyclic collector only slows building ~10^5 new dicts
        data = _parse_node_link(path, text)
        G = _graph_if_valid(data)
    if G is None:
        G = _checked_node_link_graph(path, json.loads(text))
        check_wiring(G, path)
    return G


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector inside the block (as it was, after).

    For a block that builds many objects that live on and form no cycles (a fabric's
    ~10^5 attribute dicts, its hosts, a report's link list): the collector would traverse
    each of them again and again (about 0.3 s of a 65,536-GPU FT3's all-to-all) and find
    nothing. Cycles made inside the block are collected after it.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if _freeze_paused:
            gc.freeze()
        if was_enabled:
            gc.enable()


_freeze_paused = False


def freeze_after_pauses() -> None:
    """For a process that makes one analysis and exits (``topo bandwidth``): at the end of
    every :func:`gc_paused` block from now on, the objects alive are moved to the cyclic
    collector's permanent generation (:func:`gc.freeze`), so that no later collection
    traverses them again (0.2 s of a 65,536-GPU FT3's all-to-all: the first collection after
    a block would visit its 10^6 new objects). Reference counting still frees them; a cycle
    among them would be kept until the process ends, which is why a loop of analyses
    (resilience trials, sweeps) does not call this."""
    global _freeze_paused
    _freeze_paused = True


_NOT_READ = object()


def _parse_node_link(path: Path, text: str) -> dict[str, Any]:
    """The JSON of a node-link file, its top level checked (an object with two lists)."""
    if not text.strip():
        raise FormatError(
            path,
            "empty file: expected a fabric JSON written by 'topo build -o' or 'topo import -o'",
            line=1,
        )
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:  # not strict JSON: read as Python's json reads it (NaN,
        data = _NOT_READ  # integers past 64 bits, deep nesting), or say where it is wrong
    try:
        if data is _NOT_READ:
            data = json.loads(text)
    except RecursionError:
        raise too_deep(path) from None
    except json.JSONDecodeError as exc:
        hint = (
            "; a raw ibnetdiscover dump is read with "
            "'topo import ibnetdiscover FILE -o FABRIC.json'"
            if not text.lstrip().startswith(("{", "["))
            else ""
        )
        raise FormatError(path, f"not JSON: {exc.msg}{hint}", exc.lineno, exc.colno) from None
    except ValueError as exc:  # an integer over Python's 4,300-digit conversion limit
        raise (long_number(path, text) or FormatError(path, f"not JSON: {exc}")) from None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("nodes"), list)
        or not isinstance(data.get("edges"), list)
    ):
        raise FormatError(
            path, "expected a topo fabric (networkx node-link JSON with 'nodes' and 'edges')"
        )
    if data.get("directed") or data.get("multigraph"):
        raise FormatError(
            path, "expected an undirected simple graph (directed and multigraph false)"
        )
    if not isinstance(data.get("graph", {}), dict):
        raise FormatError(path, "'graph' must be an object of fabric attributes")
    return data


def _checked_node_link_graph(path: Path, data: dict[str, Any]) -> nx.Graph:
    """The graph networkx reads from ``data``, checked item by item; raise on the first fault."""
    for i, item in enumerate(data["nodes"]):
        v = item.get("id") if isinstance(item, dict) else None
        if not isinstance(v, (str, int)) or isinstance(v, bool):  # (true is 1 to networkx)
            raise FormatError(path, f"node #{i}: expected an object with a string or integer 'id'")
    for i, item in enumerate(data["edges"]):
        if not isinstance(item, dict):
            raise FormatError(path, f"edge #{i}: expected an object with 'source' and 'target'")
    _check_edge_ends(path, data)
    repeat = _first_repeat(data)
    try:
        G = nx.Graph(nx.node_link_graph(data, edges="edges"))
    except (KeyError, TypeError, ValueError, AttributeError, nx.NetworkXError) as exc:
        raise FormatError(path, f"not a node-link graph: {exc}") from None
    check_schema(G, path)
    if repeat is not None:
        raise FormatError(path, repeat)
    return G


def _check_edge_ends(path: Path, data: dict[str, Any]) -> None:
    """Refuse an edge naming a node the file does not list (networkx would add it bare, and
    the schema check would then blame a node with no ``kind``)."""
    ids = {(type(item["id"]), item["id"]) for item in data["nodes"]}
    for i, item in enumerate(data["edges"]):
        for end in (item.get("source"), item.get("target")):
            if isinstance(end, (str, int)) and (type(end), end) not in ids:
                raise FormatError(
                    path,
                    f"edge #{i} {item.get('source')!r}-{item.get('target')!r} names node "
                    f"{end!r}, which the file does not list in 'nodes'",
                )


def _first_repeat(data: dict[str, Any]) -> str | None:
    """What the first node or edge given twice is (networkx would merge them: the last one's
    attributes win), or None."""
    ids: dict[Any, int] = {}
    for i, item in enumerate(data["nodes"]):
        first = ids.setdefault((type(item["id"]), item["id"]), i)
        if first != i:
            return (
                f"node {item['id']!r} is given twice (nodes #{first} and #{i}); ids must be unique"
            )
    ends: dict[frozenset[Any], int] = {}
    for i, item in enumerate(data["edges"]):
        try:
            key = frozenset((item.get("source"), item.get("target")))
        except TypeError:  # an unhashable end: networkx names it
            return None
        first = ends.setdefault(key, i)
        if first != i:
            u, v = item.get("source"), item.get("target")
            return (
                f"edge {u!r}-{v!r} is given twice (edges #{first} and #{i}); parallel cables "
                "are one edge whose 'links' counts them"
            )
    return None


_SERVER_KINDS = frozenset({"gpu", "nic", "nvswitch"})
_SWITCH_KIND_SET = frozenset(SWITCH_KINDS)


def _graph_if_valid(data: dict[str, Any]) -> nx.Graph | None:
    """The fabric of node-link ``data`` if every item follows the schema, else None.

    Modifies ``data``'s items (their ids are taken out). None also when the file holds what
    :func:`_checked_node_link_graph` must treat as networkx does: a node or an edge given
    twice, an edge to an undeclared node, an id that is not a plain str or int.
    """
    planes = data.get("graph", {}).get("planes", 1)
    if not _is_int(planes) or planes < 1:
        return None
    places: list[tuple[str, Any]] = []
    top_plane = planes - 1 if "planes" in data.get("graph", {}) else MAX_PORTS
    nodes = _valid_nodes(data["nodes"], places, top_plane)
    if nodes is None:
        return None
    index = {v: i for i, (v, _) in enumerate(nodes)}
    if len(index) != len(nodes):
        return None
    wired: set[int] = set()  # the GPUs and NICs with a pcie edge
    cabled: set[int] = set()  # the NICs with an endpoint edge
    G = nx.Graph()
    G.graph.update(data.get("graph", {}))
    # What add_nodes_from and add_edges_from build, straight into the raw dicts: the items'
    # own dicts become the attribute dicts (nothing else holds them; the ids are out).
    node, adj = G._node, G._adj
    node.update(nodes)
    nbrs: list[dict[Any, dict[str, Any]]] = [{} for _ in nodes]  # (by node position)
    adj.update(zip(node, nbrs, strict=True))
    items = data["edges"]
    in_order = _valid_edges(
        items, index, places, (wired, cabled), nbrs, drop_key="multigraph" not in data
    )
    if in_order is None:
        return None
    gpus = [i for i, p in enumerate(places) if p[0] == "gpu"]
    if not wired.issuperset(gpus):
        return None
    with_gpus = {places[i][1] for i in gpus}
    if with_gpus and any(places[i][1] in with_gpus for i in cabled - wired):
        return None  # a cabled NIC no GPU reaches: check_wiring names it
    # (no self-loops: each edge is in two neighbour dicts; fewer if one was given twice)
    if sum(map(len, nbrs)) != 2 * len(items):
        return None
    if not in_order and not _networkx_order(items, nbrs, index):
        return None
    return G


def _valid_nodes(
    items: list[Any], places: list[tuple[str, Any]], top_plane: int
) -> list[tuple[Any, dict[str, Any]]] | None:
    """``(id, attributes)`` of every node item, or None at the first one to look at closer
    (the node rules of :func:`check_wiring` included). Appends each node's end class and
    server (``node``, None for a switch) to ``places``."""
    nodes = []
    seen: set[tuple[Any, ...]] = set()
    switch_kinds, server_kinds, end_class = _SWITCH_KIND_SET, _SERVER_KINDS, _END_CLASS
    for item in items:
        if type(item) is not dict:
            return None
        v = item.pop("id", None)
        kind = item.get("kind")
        if (type(v) is not str and type(v) is not int) or type(kind) is not str:
            return None
        if kind in switch_kinds:
            tier, plane, rail, ports = (item.get(k) for k in ("tier", "plane", "rail", "ports"))
            if not (
                type(tier) is int
                and 1 <= tier <= MAX_TIER
                and type(plane) is int
                and 0 <= plane <= top_plane
                and type(rail) is int
                and -1 <= rail <= MAX_PORTS
                and type(ports) is int
                and 1 <= ports <= MAX_PORTS
            ):
                return None
        elif kind in server_kinds:
            node = item.get("node")
            if type(node) is not str and type(node) is not int:
                return None
            if "host" in item and type(item["host"]) is not str and type(item["host"]) is not int:
                return None
            if kind != "nvswitch":
                index = item.get("index")
                key = (
                    (kind, node, index) if "guid" not in item else _ca_key(kind, node, index, item)
                )
                if type(index) is not int or not 0 <= index <= MAX_INDEX or key in seen:
                    return None
                seen.add(key)
            elif "index" in item:  # not in the schema, but the solvers read it
                return None
        else:
            return None
        nodes.append((v, item))
        places.append((end_class[kind], item.get("node")))
    return nodes


def _valid_edges(
    items: list[Any],
    index: dict[Any, int],
    places: list[tuple[str, Any]],
    seen: tuple[set[int], set[int]],
    nbrs: list[dict[Any, dict[str, Any]]],
    *,
    drop_key: bool,
) -> bool | None:
    """Put every edge item into the neighbour dicts ``nbrs`` (by node position), in file
    order, its own dict as the edge's attributes; whether the file lists the edges in the
    order networkx's copy of the node-link graph does (by the earlier end's node position,
    then file order: :func:`_networkx_order` puts them so otherwise), or None at the first
    item to look at closer. ``drop_key``: a node-link file without ``multigraph`` is read as
    a multigraph, whose edge ``key`` is not an attribute. The wiring rules of
    :func:`check_wiring` on edges are checked here too; the positions of the GPUs and NICs
    with a pcie edge are added to ``seen[0]``, those of the NICs with an endpoint edge to
    ``seen[1]``."""
    wired, cabled = seen
    lo, hi = CAPACITY_RANGE_Bps
    allowed, in_server = _ALLOWED_ENDS, _IN_SERVER
    last, in_order = -1, True
    try:
        for item in items:
            u, v = item.pop("source"), item.pop("target")
            if drop_key:
                item.pop("key", None)
            cap, links = item.get("capacity"), item.get("links")
            if not (
                (type(cap) is float or type(cap) is int)
                and lo <= cap <= hi
                and type(links) is int
                and 1 <= links <= MAX_LINKS
            ):
                return None
            iu, iv = index[u], index[v]
            pu, pv = places[iu], places[iv]
            kind = item.get("kind")
            if (
                (kind, pu[0], pv[0]) not in allowed
                or iu == iv
                or (pu[1] != pv[1] and kind in in_server)
            ):
                return None
            if kind == "pcie":
                wired.add(iu)
                wired.add(iv)
            elif kind == "endpoint":
                cabled.add(iu if pu[0] == "nic" else iv)
            first = iu if iu < iv else iv
            if first < last:
                in_order = False
            last = first
            nbrs[iu][v] = item
            nbrs[iv][u] = item
    except (KeyError, TypeError, AttributeError):
        return None
    return in_order


def _networkx_order(
    items: list[dict[str, Any]], nbrs: list[dict[Any, dict[str, Any]]], index: dict[Any, int]
) -> bool:
    """Put the neighbour dicts ``nbrs`` (by node position; every edge of ``items`` in them,
    once) in the order networkx's copy of the node-link graph has: edges by their earlier
    end's node position, then in file order. False if an item is not in them."""
    ends: dict[int, tuple[Any, Any]] = {}
    for u, nb in zip(index, nbrs, strict=True):
        for w, d in nb.items():
            ends[id(d)] = (u, w)
    try:
        pairs = [ends[id(d)] for d in items]
    except KeyError:
        return False
    first = [min(index[u], index[v]) for u, v in pairs]
    for nb in nbrs:
        nb.clear()
    for i in sorted(range(len(items)), key=first.__getitem__):
        u, v = pairs[i]
        nbrs[index[u]][v] = items[i]
        nbrs[index[v]][u] = items[i]
    return True


CAPACITY_RANGE_Bps = (1e3, 1e15)
"""Accepted edge capacities, B/s per direction: 1 kB/s to 1 PB/s."""


def capacity_fault(G: nx.Graph) -> str | None:
    """The first edge, in ``G.edges`` order, whose ``capacity`` is missing or not a finite
    number of B/s within :data:`CAPACITY_RANGE_Bps`, as the message that names it; None when
    every edge's is.

    One pass over the edges gathers the capacities, which numpy then checks at once; the
    rule of :func:`check_schema` (a file) and of the solvers' entry points (a graph built in
    memory, :func:`require_fabric`).

    Parameters
    ----------
    G : networkx.Graph
        The fabric.

    Returns
    -------
    str or None
        ``edge 'u'-'v': 'capacity' must be a number of B/s from 1000 to 1e+15, got nan``, or
        ``edge 'u'-'v' has no 'capacity' (...)``.

    Examples
    --------
    >>> G = nx.Graph()
    >>> G.add_edge("a", "b", capacity=50e9)
    >>> G.add_edge("b", "c", capacity=float("inf"))
    >>> capacity_fault(G)
    "edge 'b'-'c': 'capacity' must be a number of B/s from 1000 to 1e+15, got inf"
    """
    lo, hi = CAPACITY_RANGE_Bps
    # Each edge's dict, twice (from each end), in the order G.edges first meets it: the raw
    # neighbour dicts, 3 times as fast as G.edges(data=True), which tracks the nodes seen.
    caps = [d.get("capacity") for nbrs in G._adj.values() for d in nbrs.values()]
    at: int | None = None
    if set(map(type, caps)) <= {float, int}:  # (the usual case: one numpy pass)
        try:
            values = np.array(caps, dtype=float)
        except OverflowError:  # an int beyond any float
            values = None
        if values is not None:
            ok = (values >= lo) & (values <= hi)  # (NaN is neither)
            if bool(ok.all()):
                return None
            at = int(np.argmin(ok))
    if at is None:
        at = next((i for i, c in enumerate(caps) if not (_is_number(c) and lo <= c <= hi)), None)
        if at is None:
            return None
    u, v = next(itertools.islice(((u, v) for u, nbrs in G._adj.items() for v in nbrs), at, None))
    rule = f"a number of B/s from {lo:g} to {hi:g}"
    if "capacity" not in G._adj[u][v]:
        return f"edge {u!r}-{v!r} has no 'capacity' ({rule})"
    return f"edge {u!r}-{v!r}: 'capacity' must be {rule}, got {shown(caps[at])}"


def check_schema(G: nx.Graph, path: str | Path = "<graph>") -> None:
    """Check the schema of fabric ``G``: node kinds and attributes, edge attributes.

    The rules, attribute by attribute (the module docstring lists every attribute of every
    family; those not named here are not needed to read a fabric and are not checked):

    - graph ``planes``: a positive integer when present (default 1);
    - node ``kind``: one of :data:`NODE_KINDS`;
    - switch (``leaf``, ``spine``, ``core``, ``switch``) ``tier``: an integer >= 1;
    - GPU, NIC and NVSwitch ``node``: a string or an integer; their ``host``
      (NVLink domains of several hosts), where present, too;
    - edge ``capacity``: a finite number of B/s within :data:`CAPACITY_RANGE_Bps`;
    - edge ``links``: a positive integer;
    - edge ``kind``: one of :data:`EDGE_KINDS`.

    Nodes are checked in order, then every edge's capacity (:func:`capacity_fault`), then
    the edges' other attributes, in ``G.edges`` order.

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    path : str or Path
        The file it came from, named in the message.

    Raises
    ------
    FormatError
        Naming ``path`` and the first node or edge that breaks a rule: an unknown
        ``kind``; a switch without an integer ``tier`` >= 1; a GPU, NIC or NVSwitch without a
        string or integer ``node`` (or with a ``host`` that is neither); an edge whose
        ``capacity`` is not a finite number of B/s within :data:`CAPACITY_RANGE_Bps`, whose
        ``links`` is not a positive integer, or whose ``kind`` is unknown; a ``planes`` graph
        attribute that is not a positive integer.
    """
    planes = G.graph.get("planes", 1)
    if not _is_int(planes) or planes < 1:
        raise FormatError(
            path, f"graph attribute 'planes' must be a positive integer, got {shown(planes)}"
        )
    for v, d in G.nodes(data=True):
        kind = d.get("kind")
        if kind not in NODE_KINDS:
            raise FormatError(path, _kind_fault(G, v, kind))
        if kind in SWITCH_KINDS and not (_is_int(d.get("tier")) and d["tier"] >= 1):
            raise FormatError(
                path, f"switch {v!r}: 'tier' must be an integer >= 1, got {shown(d.get('tier'))}"
            )
        if kind in ("gpu", "nic", "nvswitch") and not (
            isinstance(d.get("node"), str) or _is_int(d.get("node"))
        ):
            raise FormatError(path, f"{kind} {v!r}: 'node' must be a string or an integer")
        if (
            kind in ("gpu", "nic", "nvswitch")
            and "host" in d
            and not (isinstance(d["host"], str) or _is_int(d["host"]))
        ):
            raise FormatError(path, f"{kind} {v!r}: 'host' must be a string or an integer")
    fault = capacity_fault(G)
    if fault is not None:
        raise FormatError(path, fault)
    for u, v, d in G.edges(data=True):
        links = d.get("links")
        if not _is_int(links) or links < 1:
            raise FormatError(
                path, f"edge {u!r}-{v!r}: 'links' must be a positive integer, got {shown(links)}"
            )
        if d.get("kind") not in EDGE_KINDS:
            raise FormatError(
                path,
                f"edge {u!r}-{v!r}: kind {d.get('kind')!r} is not one of {', '.join(EDGE_KINDS)}",
            )


MAX_LINKS = 1_000_000
"""Most cables one edge may stand for (a Dragonfly's densest bundle is a few hundred)."""
MAX_PORTS = 65_536
"""Largest switch radix accepted (shipping switches have at most a few hundred ports)."""
MAX_INDEX = 1_000_000
"""Largest GPU or NIC index within a server accepted."""
MAX_TIER = 64
"""Highest switch tier accepted."""

_END_CLASS = {
    "gpu": "gpu",
    "nic": "nic",
    "nvswitch": "nvswitch",
    **{k: "switch" for k in SWITCH_KINDS},
}
_EDGE_ENDS: dict[str, frozenset[tuple[str, str]]] = {
    "nvlink": frozenset({("gpu", "nvswitch"), ("nvswitch", "gpu")}),
    "pcie": frozenset({("gpu", "nic"), ("nic", "gpu")}),
    "endpoint": frozenset({("nic", "switch"), ("switch", "nic")}),
    "fabric": frozenset({("switch", "switch")}),
}
_EDGE_RULE = {
    "nvlink": "an nvlink edge joins a GPU and an NVSwitch",
    "pcie": "a pcie edge joins a GPU and a NIC",
    "endpoint": "an endpoint edge joins a NIC and a switch",
    "fabric": "a fabric edge joins two switches",
}


def _kind_fault(G: nx.Graph, v: Any, kind: Any) -> str:
    """What is wrong with node ``v`` of unknown ``kind``; a node without any attribute that
    an edge names is what networkx makes of an edge end that no node of the file declares."""
    text = f"node {v!r}: kind {kind!r} is not one of {', '.join(NODE_KINDS)}"
    if G.nodes[v] or not G.adj[v]:
        return text
    u = next(iter(G.adj[v]))
    return (
        f"{text}: it has no attributes, as when edge {u!r}-{v!r} names an id that no node of "
        "the file declares"
    )


def check_wiring(G: nx.Graph, path: str | Path = "<graph>") -> None:
    """Check what the solvers assume of a fabric beyond :func:`check_schema`, in one pass.

    The rules (run by :func:`load` after :func:`check_schema`):

    - GPU and NIC ``index`` (and an NVSwitch's, where present): an integer from 0 to
      :data:`MAX_INDEX`; no two GPUs (no two
      NICs) share the same ``node`` and ``index`` (an imported NIC's index is its CA's port
      number: unique with the CA's ``guid`` and ``description``);
    - switch ``plane``: an integer from 0 to ``planes - 1`` (to :data:`MAX_PORTS` in a file
      without the ``planes`` graph attribute); ``rail``: an integer >= -1;
      ``ports``: an integer from 1 to :data:`MAX_PORTS`; ``tier`` at most :data:`MAX_TIER`;
    - edge ``links``: at most :data:`MAX_LINKS`;
    - an edge joins two different devices, and what its ``kind`` says: ``nvlink`` a GPU and
      an NVSwitch, ``pcie`` a GPU and a NIC, ``endpoint`` a NIC and a switch, ``fabric``
      two switches;
    - ``nvlink`` and ``pcie`` edges stay inside one server (both ends have the same ``node``);
    - a GPU of a server with a NIC cabled to a switch has a ``pcie`` edge, and so has a NIC
      cabled to a switch in a server with GPUs (a NIC no GPU reaches).

    A server with no NIC cabled at all is accepted: the solvers report it cut off.

    Parameters
    ----------
    G : networkx.Graph
        A fabric that passed :func:`check_schema`.
    path : str or Path
        The file it came from, named in the message.

    Raises
    ------
    FormatError
        Naming ``path``, the first node or edge that breaks a rule, and the rule.
    """
    _check_nodes(G, path)
    _check_edges(G, path)


def _check_nodes(G: nx.Graph, path: str | Path) -> None:
    """The node rules of :func:`check_wiring`."""
    planes = G.graph.get("planes", MAX_PORTS + 1)
    seen: dict[tuple[Any, ...], Any] = {}
    for v, d in G.nodes(data=True):
        kind = d["kind"]
        if kind in _SWITCH_KIND_SET:
            _check_switch(path, v, d, planes)
        elif kind != "nvswitch" or "index" in d:  # an NVSwitch's is read where present
            index = d.get("index")
            if not (_is_int(index) and 0 <= index <= MAX_INDEX):
                raise FormatError(
                    path,
                    f"{kind} {v!r}: 'index' must be an integer from 0 to {MAX_INDEX:,}, "
                    f"got {shown(index)}",
                )
            if kind == "nvswitch":
                continue
            # An imported NIC's index is its CA's port number: unique with the CA's GUID.
            key = (
                (kind, d["node"], index) if "guid" not in d else _ca_key(kind, d["node"], index, d)
            )
            other = seen.setdefault(key, v)
            if other != v:
                raise FormatError(
                    path,
                    f"{kind} {v!r}: {kind} {other!r} has the same node {d['node']!r} and "
                    f"index {index}; each {kind} of a server needs its own index",
                )


def _check_switch(path: str | Path, v: Any, d: dict[str, Any], planes: int) -> None:
    rules = (
        ("tier", 1, MAX_TIER),
        ("plane", 0, planes - 1),
        ("rail", -1, MAX_PORTS),
        ("ports", 1, MAX_PORTS),
    )
    for key, lo, hi in rules:
        x: Any = d.get(key)
        if not (_is_int(x) and lo <= x <= hi):
            raise FormatError(
                path,
                f"switch {v!r}: {key!r} must be an integer from {lo} to {hi:,}, got {shown(x)}"
                + (
                    f" (the fabric has {planes} planes)"
                    if key == "plane" and hi < MAX_PORTS
                    else ""
                ),
            )


def _check_edges(G: nx.Graph, path: str | Path) -> None:
    """The edge rules of :func:`check_wiring`: one test per edge, the message on a fault."""
    place = {v: (_END_CLASS[k], d.get("node")) for v, d in G.nodes(data=True) if (k := d["kind"])}
    allowed = _ALLOWED_ENDS
    in_server = _IN_SERVER
    wired: set[Any] = set()  # GPUs and NICs with a pcie edge
    cabled: set[Any] = set()  # servers with a NIC on a switch
    cabled_nics: set[Any] = set()
    for u, v, d in G.edges(data=True):
        pu, pv = place[u], place[v]
        kind = d["kind"]
        if (
            (kind, pu[0], pv[0]) not in allowed
            or d["links"] > MAX_LINKS
            or u == v
            or (pu[1] != pv[1] and kind in in_server)
        ):
            _edge_fault(G, path, u, v, d)
        if kind == "pcie":
            wired.update((u, v))
        elif kind == "endpoint":
            nic = u if pu[0] == "nic" else v
            cabled.add(place[nic][1])
            cabled_nics.add(nic)
    _check_served(G, path, wired, cabled, cabled_nics)


def _check_served(
    G: nx.Graph, path: str | Path, wired: set[Any], cabled: set[Any], cabled_nics: set[Any]
) -> None:
    """Every GPU of a cabled server has a pcie edge; every cabled NIC of a server with GPUs
    too (a NIC no GPU reaches is a port of capacity 0 to the solvers)."""
    with_gpus: set[Any] = set()
    for v, d in G.nodes(data=True):
        if d["kind"] != "gpu":
            continue
        with_gpus.add(d["node"])
        if v not in wired and d["node"] in cabled:
            raise FormatError(
                path,
                f"gpu {v!r}: no pcie edge to a NIC, but server {d['node']!r} has NICs cabled to "
                "switches; every GPU of a server in the network reaches it through a NIC",
            )
    idle = [v for v in cabled_nics - wired if G.nodes[v]["node"] in with_gpus]
    if idle:
        v = min(idle, key=natural_key)
        node = G.nodes[v]["node"]
        raise FormatError(
            path,
            f"nic {v!r}: cabled to a switch but no GPU of server {node!r} reaches it by a "
            "pcie edge; a server has at most as many NICs as GPUs, each NIC serving one "
            "GPU or more",
        )


_ALLOWED_ENDS = frozenset((kind, a, b) for kind, pairs in _EDGE_ENDS.items() for a, b in pairs)
_IN_SERVER = frozenset({"nvlink", "pcie"})


def _edge_fault(G: nx.Graph, path: str | Path, u: Any, v: Any, d: dict[str, Any]) -> None:
    """Raise the error of an edge :func:`_check_edges` found at fault."""
    du, dv = G.nodes[u], G.nodes[v]
    kind = d["kind"]
    if u == v:
        raise FormatError(path, f"edge {u!r}-{v!r}: an edge joins two different devices")
    if (_END_CLASS[du["kind"]], _END_CLASS[dv["kind"]]) not in _EDGE_ENDS[kind]:
        raise FormatError(
            path, f"edge {u!r}-{v!r}: {_EDGE_RULE[kind]}, not a {du['kind']} and a {dv['kind']}"
        )
    if d["links"] > MAX_LINKS:
        raise FormatError(
            path,
            f"edge {u!r}-{v!r}: 'links' must be at most {MAX_LINKS:,}, got {shown(d['links'])}",
        )
    raise FormatError(
        path,
        f"edge {u!r}-{v!r}: {'an' if kind == 'nvlink' else 'a'} {kind} edge stays inside one "
        f"server, but {u!r} has node {du['node']!r} and {v!r} node {dv['node']!r}",
    )


def _ca_key(kind: str, node: Any, index: Any, d: dict[str, Any]) -> tuple[Any, ...]:
    """What makes an imported NIC unique in its server: its index (the CA's port number)
    with the CA's GUID and description."""
    return (kind, node, index, _plain(d.get("guid")), _plain(d.get("description")))


def _plain(x: Any) -> Any:
    """``x`` if it is a str, an int or None, else its ``repr`` (hashable either way)."""
    return x if x is None or type(x) is str or type(x) is int else repr(x)


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x: Any) -> bool:
    # An int is finite (and may be too large for math.isfinite's float conversion).
    return _is_int(x) or (isinstance(x, float) and math.isfinite(x))
