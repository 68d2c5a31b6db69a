"""Fabric files: networkx node-link JSON, written whole and read back checked.

File format
-----------
networkx node-link JSON, ``networkx.node_link_data(G, edges="edges")``, written by
:func:`save` (whole or not at all, :func:`topo.files.write_atomic`) and read back, validated,
by :func:`load`: every node and edge follows :mod:`topo.fabric.schema`, checked as the lists
are read (:func:`topo.fabric.check_schema` and :func:`topo.fabric.check_wiring` name the
first offender of a file that breaks a rule).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import networkx as nx
import orjson

from topo.errors import FormatError
from topo.fabric.checks import check_schema, check_wiring, graph_fault
from topo.fabric.schema import (
    ALLOWED_ENDS,
    END_CLASS,
    IN_SERVER_EDGES,
    MAX_INDEX,
    MAX_LINKS,
    MAX_PORTS,
    MAX_TIER,
    SWITCH_KINDS,
    CAPACITY_RANGE_Bps,
    ca_key,
)
from topo.files import (
    decode_text,
    long_number,
    read_bytes,
    read_text,
    too_deep,
    write_atomic,
    written_names,
)
from topo.runtime import gc_paused

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
        A fabric following the schema of :mod:`topo.fabric.schema`.
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
    raw = read_bytes(path)  # once: a pipe (``<(...)``) cannot be read again
    with gc_paused():  # the cyclic collector only slows building ~10^5 new dicts
        # (strict JSON is parsed from the file's bytes, not decoded to text first)
        data = _strict_json(raw)
        if data is _NOT_READ:
            data = _parse_node_link(path, decode_text(path, raw))
        else:
            _check_node_link(path, data)
        # a file is read again if the checks below need its text (its bytes are not held)
        kept = None if path.is_file() else raw
        del raw
        G = _graph_if_valid(data)
    if G is None:
        text = decode_text(path, kept) if kept is not None else read_text(path)
        G = _checked_node_link_graph(path, json.loads(text))
        check_wiring(G, path)
    return G


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
    _check_node_link(path, data)
    return data


def _strict_json(raw: bytes) -> Any:
    """A file's strict JSON (orjson, from its bytes), or ``_NOT_READ`` when it cannot be
    read so (not strict JSON, not UTF-8, a byte order mark): :func:`_parse_node_link` then
    reads it as text and says what is wrong."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _NOT_READ


def _check_node_link(path: Path, data: Any) -> None:
    """Refuse JSON whose top level is not a node-link fabric (an object with two lists)."""
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
    graph = data.get("graph", {})
    if not isinstance(graph, dict) or graph_fault(graph) is not None:
        return None
    planes = graph.get("planes", 1)
    places: list[tuple[str, Any]] = []
    top_plane = planes - 1 if "planes" in graph else MAX_PORTS
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
    switch_kinds, server_kinds, end_class = _SWITCH_KIND_SET, _SERVER_KINDS, END_CLASS
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
                key = (kind, node, index) if "guid" not in item else ca_key(kind, node, index, item)
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
    ids = list(index)
    lo, hi = CAPACITY_RANGE_Bps
    allowed, in_server = ALLOWED_ENDS, IN_SERVER_EDGES
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
            nbrs[iu][ids[iv]] = item  # (keyed by the node's own id object: one string less)
            nbrs[iv][ids[iu]] = item
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
