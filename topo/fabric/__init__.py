"""The fabric graph: one undirected :class:`networkx.Graph` per cluster network.

Every link is full duplex; ``capacity`` is the rate of the edge *in each direction*. Parallel
cables between the same two devices are one edge whose ``links`` counts the cables and whose
``capacity`` is their sum. A reader enters here; the modules answer one question each:

- :mod:`topo.fabric.schema`: what a fabric's nodes, edges and graph carry, family by family,
  and the limits (``SWITCH_KINDS``, ``NODE_KEYS``, ``GRAPH_KEYS``, ``node_keys``,
  ``tier_name``, ``MAX_PORTS``, ...);
- :mod:`topo.fabric.checks`: whether a graph is a fabric (``require_fabric``,
  ``capacity_fault``, ``check_schema``, ``check_wiring``, ``vouched``);
- :mod:`topo.fabric.queries`: what a fabric holds (``servers``, ``hosts``,
  ``switch_components``, ``blocks_below_top``, ``natural_key``, ``summarize``, ...);
- :mod:`topo.fabric.io`: fabric files, node-link JSON (``load``, ``save``,
  ``check_fabric_path``);
- :mod:`topo.fabric.gpus`: the GPU a fabric records and NCCL's generation of it
  (``gpu_model``, ``gpu_arch``, ``gpu_family``, ``arch_of_model``, ``GPU_ARCHES``).

Every public name of the five is importable from here (``from topo.fabric import servers``).
"""

from __future__ import annotations

from topo.fabric.checks import (
    capacity_fault,
    check_schema,
    check_wiring,
    require_fabric,
    vouched,
)
from topo.fabric.gpus import GPU_ARCHES, arch_of_model, gpu_arch, gpu_family, gpu_model
from topo.fabric.io import FABRIC_SUFFIXES, check_fabric_path, load, save
from topo.fabric.queries import (
    FabricSummary,
    blocks_below_top,
    components_within,
    host_of_vertex,
    hosts,
    named_servers,
    natural_key,
    natural_sorted_groups,
    nic_ports,
    servers,
    spans_hosts,
    summarize,
    switch_components,
    terminal_kind,
    vertex_label,
)
from topo.fabric.schema import (
    ALLOWED_ENDS,
    BUILT_GRAPH_KEYS,
    EDGE_ENDS,
    EDGE_KEYS,
    EDGE_KINDS,
    END_CLASS,
    GRAPH_KEYS,
    IMPORTED_EDGE_KEYS,
    IMPORTED_NIC_KEYS,
    IN_SERVER_EDGES,
    MAX_INDEX,
    MAX_LINKS,
    MAX_PORTS,
    MAX_TIER,
    NODE_KEYS,
    NODE_KINDS,
    SWITCH_KINDS,
    TIER_NAMES,
    CAPACITY_RANGE_Bps,
    ca_key,
    edge_keys,
    is_int,
    is_switch,
    node_keys,
    tier_name,
)

__all__ = [
    # gpus
    "GPU_ARCHES",
    "arch_of_model",
    "gpu_arch",
    "gpu_family",
    "gpu_model",
    # schema
    "ALLOWED_ENDS",
    "BUILT_GRAPH_KEYS",
    "CAPACITY_RANGE_Bps",
    "EDGE_ENDS",
    "EDGE_KEYS",
    "EDGE_KINDS",
    "END_CLASS",
    "GRAPH_KEYS",
    "IMPORTED_EDGE_KEYS",
    "IMPORTED_NIC_KEYS",
    "IN_SERVER_EDGES",
    "MAX_INDEX",
    "MAX_LINKS",
    "MAX_PORTS",
    "MAX_TIER",
    "NODE_KEYS",
    "NODE_KINDS",
    "SWITCH_KINDS",
    "TIER_NAMES",
    "ca_key",
    "edge_keys",
    "is_int",
    "is_switch",
    "node_keys",
    "tier_name",
    # checks
    "capacity_fault",
    "check_schema",
    "check_wiring",
    "require_fabric",
    "vouched",
    # queries
    "FabricSummary",
    "blocks_below_top",
    "components_within",
    "host_of_vertex",
    "hosts",
    "named_servers",
    "natural_key",
    "natural_sorted_groups",
    "nic_ports",
    "servers",
    "spans_hosts",
    "summarize",
    "switch_components",
    "terminal_kind",
    "vertex_label",
    # io
    "FABRIC_SUFFIXES",
    "check_fabric_path",
    "load",
    "save",
]
