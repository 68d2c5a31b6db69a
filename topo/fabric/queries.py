"""What a fabric holds: its servers, hosts, switch planes and blocks, names in natural order,
and its counts.

- names: :func:`natural_key` (``leaf2`` before ``leaf10``), :func:`natural_sorted_groups`,
  :func:`vertex_label` (a vertex's tier or kind, as reports name it), :func:`named_servers`
  (servers for a message);
- servers and hosts: :func:`terminal_kind`, :func:`servers`, :func:`hosts`,
  :func:`host_of_vertex`, :func:`spans_hosts`, :func:`nic_ports`;
- switches: :func:`components_within`, :func:`switch_components` (planes),
  :func:`blocks_below_top` (pods);
- counts: :func:`summarize`, returning a :class:`FabricSummary`.

Every function takes a fabric following :mod:`topo.fabric.schema` and changes nothing.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import networkx as nx

from topo.fabric.schema import SWITCH_KINDS, TIER_NAMES, tier_name

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


def vertex_label(G: nx.Graph, v: Any) -> str:
    """How reports name a vertex's place: its tier for a switch (``leaf``, ``spine``, ...),
    its kind otherwise (``gpu``, ``nic``, ``nvswitch``). A link direction's tier is
    ``f"{vertex_label(G, u)}->{vertex_label(G, v)}"``, e.g. ``nic->leaf``."""
    d = G._node[v]  # (the raw attribute dict: G.nodes[v] goes through a view, 3x slower)
    return tier_name(int(d["tier"])) if d["kind"] in SWITCH_KINDS else str(d["kind"])


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
        A fabric following the schema of :mod:`topo.fabric.schema`.

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
