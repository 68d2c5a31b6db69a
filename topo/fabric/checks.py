"""Whether a graph is a fabric: the checks of the schema and of the wiring.

- :func:`require_fabric`: the type and every edge's capacity, run first by the library's entry
  points on a graph built in memory;
- :func:`capacity_fault`: the first edge whose capacity is not a finite number of B/s within
  :data:`topo.fabric.schema.CAPACITY_RANGE_Bps`;
- :func:`check_schema` and :func:`check_wiring`: what :func:`topo.fabric.load` checks in a file
  read the way networkx reads it, each naming the file and the first offending node or edge.

The rules themselves (kinds, keys, limits, which devices an edge joins) are data in
:mod:`topo.fabric.schema`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from topo.errors import FormatError, SpecError, TopoError
from topo.fabric.queries import natural_key
from topo.fabric.schema import (
    ALLOWED_ENDS,
    EDGE_ENDS,
    EDGE_KINDS,
    END_CLASS,
    IN_SERVER_EDGES,
    MAX_INDEX,
    MAX_LINKS,
    MAX_PORTS,
    MAX_TIER,
    NODE_KINDS,
    SWITCH_KINDS,
    CAPACITY_RANGE_Bps,
    ca_key,
    is_int,
)
from topo.wording import shown

_SWITCH_KIND_SET = frozenset(SWITCH_KINDS)
_EDGE_RULE = {
    "nvlink": "an nvlink edge joins a GPU and an NVSwitch",
    "pcie": "a pcie edge joins a GPU and a NIC",
    "endpoint": "an endpoint edge joins a NIC and a switch",
    "fabric": "a fabric edge joins two switches",
}


def require_fabric(G: object, name: str = "G") -> None:
    """Refuse, with topo's own error, an argument that is not a fabric graph.

    Library entry points call it first, so that a wrong argument (``None``, a path, a directed
    graph, a graph built in memory with an edge of no, NaN, infinite, zero or negative
    capacity) gives one line naming it, not an AttributeError or KeyError deep inside a
    solver, nor a wrong number (a NaN or infinite capacity made the edge unconstrained). It
    checks the type and every edge's capacity (:func:`capacity_fault`, the rule
    :func:`topo.fabric.load` applies to a file); :func:`check_schema` and
    :func:`check_wiring` check the rest.

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
    if any(g is G for g in _VOUCHED):
        return
    fault = capacity_fault(G)
    if fault is not None:
        raise SpecError(f"{name}: {fault}", param=name)


_VOUCHED: list[nx.Graph] = []
"""The graphs whose capacities :func:`require_fabric` takes as checked (:func:`vouched`)."""


@contextmanager
def vouched(G: nx.Graph) -> Iterator[None]:
    """Inside the block, :func:`require_fabric` checks ``G``'s type but not again its every
    edge's capacity (one pass over the edges: 0.2 s on a 65,536-GPU FT3).

    For a caller that holds ``G`` just as :func:`topo.fabric.load` returned it (which checks
    the same rule as it reads the file) and changes none of its capacities inside the block:
    the command line, between reading a fabric and solving it. A graph derived from ``G``
    (a copy, a damaged fabric) is checked as any other.

    Parameters
    ----------
    G : networkx.Graph
        The fabric, as :func:`topo.fabric.load` returned it.

    Examples
    --------
    >>> G = nx.Graph()
    >>> G.add_edge("leaf0", "spine0", capacity=50e9)
    >>> with vouched(G):
    ...     require_fabric(G)
    """
    _VOUCHED.append(G)
    try:
        yield
    finally:
        _VOUCHED.remove(G)


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


GRAPH_COUNTS = (
    "planes",
    "switch_ports",
    "gpus_per_node",
    "nics_per_node",
    "max_gpus",
    "routers_per_group",
    "endpoints_per_router",
    "global_ports",
    "groups",
    "q",
    "network_radix",
)
"""Graph attributes that are counts: a positive integer where present."""

GRAPH_RATES = ("link_gbps", "nvlink_GBps", "pcie_GBps", "oversubscription")
"""Graph attributes that are rates or ratios (Gb/s, GB/s, :1): a finite positive number where
present."""


def graph_fault(graph: dict[str, Any]) -> str | None:
    """What is wrong with a fabric's graph attributes, or None: a count of
    :data:`GRAPH_COUNTS` that is not a positive integer, a rate of :data:`GRAPH_RATES` that is
    not a finite positive number, a ``gdr`` that is not true or false. The commands read
    these (the server shape, the rates a design was built with) as they are."""
    for key in GRAPH_COUNTS:
        if key in graph and not (is_int(graph[key]) and graph[key] >= 1):
            return f"graph attribute {key!r} must be a positive integer, got {shown(graph[key])}"
    for key in GRAPH_RATES:
        value = graph.get(key)
        if key in graph and not (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
            and value > 0
        ):
            return f"graph attribute {key!r} must be a finite positive number, got {shown(value)}"
    if "gdr" in graph and not isinstance(graph["gdr"], bool):
        return f"graph attribute 'gdr' must be true or false, got {shown(graph['gdr'])}"
    return None


def check_schema(G: nx.Graph, path: str | Path = "<graph>") -> None:
    """Check the schema of fabric ``G``: node kinds and attributes, edge attributes.

    The rules, attribute by attribute (:mod:`topo.fabric.schema` lists every attribute of every
    family; those not named here are not needed to read a fabric and are not checked):

    - graph attributes (:func:`graph_fault`): ``planes`` and the other counts positive
      integers, the rates finite positive numbers, when present (``planes`` defaults to 1);
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
        ``links`` is not a positive integer, or whose ``kind`` is unknown; a graph attribute
        :func:`graph_fault` refuses.
    """
    fault = graph_fault(G.graph)
    if fault is not None:
        raise FormatError(path, fault)
    for v, d in G.nodes(data=True):
        kind = d.get("kind")
        if kind not in NODE_KINDS:
            raise FormatError(path, _kind_fault(G, v, kind))
        if kind in SWITCH_KINDS and not (is_int(d.get("tier")) and d["tier"] >= 1):
            raise FormatError(
                path, f"switch {v!r}: 'tier' must be an integer >= 1, got {shown(d.get('tier'))}"
            )
        if kind in ("gpu", "nic", "nvswitch") and not (
            isinstance(d.get("node"), str) or is_int(d.get("node"))
        ):
            raise FormatError(path, f"{kind} {v!r}: 'node' must be a string or an integer")
        if (
            kind in ("gpu", "nic", "nvswitch")
            and "host" in d
            and not (isinstance(d["host"], str) or is_int(d["host"]))
        ):
            raise FormatError(path, f"{kind} {v!r}: 'host' must be a string or an integer")
    fault = capacity_fault(G)
    if fault is not None:
        raise FormatError(path, fault)
    for u, v, d in G.edges(data=True):
        links = d.get("links")
        if not is_int(links) or links < 1:
            raise FormatError(
                path, f"edge {u!r}-{v!r}: 'links' must be a positive integer, got {shown(links)}"
            )
        if d.get("kind") not in EDGE_KINDS:
            raise FormatError(
                path,
                f"edge {u!r}-{v!r}: kind {d.get('kind')!r} is not one of {', '.join(EDGE_KINDS)}",
            )


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

    The rules (run by :func:`topo.fabric.load` after :func:`check_schema`):

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
            if not (is_int(index) and 0 <= index <= MAX_INDEX):
                raise FormatError(
                    path,
                    f"{kind} {v!r}: 'index' must be an integer from 0 to {MAX_INDEX:,}, "
                    f"got {shown(index)}",
                )
            if kind == "nvswitch":
                continue
            # An imported NIC's index is its CA's port number: unique with the CA's GUID.
            key = (kind, d["node"], index) if "guid" not in d else ca_key(kind, d["node"], index, d)
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
        if not (is_int(x) and lo <= x <= hi):
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
    place = {v: (END_CLASS[k], d.get("node")) for v, d in G.nodes(data=True) if (k := d["kind"])}
    allowed = ALLOWED_ENDS
    in_server = IN_SERVER_EDGES
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


def _edge_fault(G: nx.Graph, path: str | Path, u: Any, v: Any, d: dict[str, Any]) -> None:
    """Raise the error of an edge :func:`_check_edges` found at fault."""
    du, dv = G.nodes[u], G.nodes[v]
    kind = d["kind"]
    if u == v:
        raise FormatError(path, f"edge {u!r}-{v!r}: an edge joins two different devices")
    if (END_CLASS[du["kind"]], END_CLASS[dv["kind"]]) not in EDGE_ENDS[kind]:
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


def _is_number(x: Any) -> bool:
    # An int is finite (and may be too large for math.isfinite's float conversion).
    return is_int(x) or (isinstance(x, float) and math.isfinite(x))
