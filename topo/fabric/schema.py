"""The schema of a fabric graph: node, edge and graph attributes of every family, and their limits.

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

:func:`topo.fabric.check_schema` (run by :func:`topo.fabric.load`) checks the attributes the
rest of topo relies on, :func:`topo.fabric.check_wiring` the ranges and the wiring; the others
are documented here and kept as they are. The limits (:data:`CAPACITY_RANGE_Bps`,
:data:`MAX_LINKS`, :data:`MAX_PORTS`, :data:`MAX_INDEX`, :data:`MAX_TIER`) and which kinds of
device each kind of edge joins (:data:`EDGE_ENDS`) are here, for the checks and the reader
alike.
"""

from __future__ import annotations

from typing import Any

import networkx as nx

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


CAPACITY_RANGE_Bps = (1e3, 1e15)
"""Accepted edge capacities, B/s per direction: 1 kB/s to 1 PB/s."""


MAX_LINKS = 1_000_000
"""Most cables one edge may stand for (a Dragonfly's densest bundle is a few hundred)."""
MAX_PORTS = 65_536
"""Largest switch radix accepted (shipping switches have at most a few hundred ports)."""
MAX_INDEX = 1_000_000
"""Largest GPU or NIC index within a server accepted."""
MAX_TIER = 64
"""Highest switch tier accepted."""

END_CLASS: dict[str, str] = {
    "gpu": "gpu",
    "nic": "nic",
    "nvswitch": "nvswitch",
    **{k: "switch" for k in SWITCH_KINDS},
}
"""Node ``kind`` -> what an edge may join it as: ``gpu``, ``nic``, ``nvswitch`` or ``switch``
(every switch kind alike)."""
EDGE_ENDS: dict[str, frozenset[tuple[str, str]]] = {
    "nvlink": frozenset({("gpu", "nvswitch"), ("nvswitch", "gpu")}),
    "pcie": frozenset({("gpu", "nic"), ("nic", "gpu")}),
    "endpoint": frozenset({("nic", "switch"), ("switch", "nic")}),
    "fabric": frozenset({("switch", "switch")}),
}
"""Edge ``kind`` -> the pairs of :data:`END_CLASS` it joins, in either order."""
ALLOWED_ENDS = frozenset((kind, a, b) for kind, pairs in EDGE_ENDS.items() for a, b in pairs)
"""``(edge kind, end class, end class)`` of every edge the schema allows (:data:`EDGE_ENDS`
flattened, for one set lookup per edge)."""
IN_SERVER_EDGES = frozenset({"nvlink", "pcie"})
"""The edge kinds that stay inside one server (both ends have the same ``node``)."""


def ca_key(kind: str, node: Any, index: Any, d: dict[str, Any]) -> tuple[Any, ...]:
    """What makes an imported NIC unique in its server: its ``index`` (the CA's port number)
    with the CA's GUID and description. (A built GPU or NIC is unique by
    ``(kind, node, index)``; the checks call this only for a vertex with a ``guid``.)

    Parameters
    ----------
    kind : str
        ``gpu`` or ``nic``.
    node, index
        The vertex's ``node`` and ``index``.
    d : dict
        The vertex's attributes (``guid`` and ``description`` are read).

    Returns
    -------
    tuple
        ``(kind, node, index, guid, description)``, hashable: a GUID or description that is
        not a str, an int or None is taken as its ``repr``.
    """
    return (kind, node, index, _plain(d.get("guid")), _plain(d.get("description")))


def _plain(x: Any) -> Any:
    """``x`` if it is a str, an int or None, else its ``repr`` (hashable either way)."""
    return x if x is None or type(x) is str or type(x) is int else repr(x)


def is_int(x: Any) -> bool:
    """Whether ``x`` is an integer in the schema's sense: an ``int``, not a ``bool`` (JSON's
    ``true`` is no count)."""
    return isinstance(x, int) and not isinstance(x, bool)
