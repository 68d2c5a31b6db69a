"""Shared by the builders: argument checks, the servers, switches, cables and graph attributes.

Private: the public face is :mod:`topo.builders` (``build``, ``max_gpus``) and the family
builders in :mod:`topo.builders.clos`, :mod:`~topo.builders.rails`,
:mod:`~topo.builders.dragonfly` and :mod:`~topo.builders.slimfly`. The arguments arrive
checked, as a :class:`topo.spec.FabricSpec`.

A server ("node" ``n``) is ``gpus_per_node`` GPUs ``node{n}/gpu{i}``, one NVSwitch
``node{n}/nvswitch`` (always created, also with one GPU per node, so every server has the same
shape) joined to every GPU by an ``nvlink`` edge, and ``nics_per_node`` NICs ``node{n}/nic{j}``;
GPU ``i`` reaches NIC ``i * nics_per_node // gpus_per_node`` by a ``pcie`` edge.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import networkx as nx

from topo.errors import SpecError
from topo.spec import FabricSpec, ServerSpec, SwitchSpec
from topo.units import GBps_to_Bps

TIERS = {"leaf": 1, "spine": 2, "core": 3}

MAX_BUILD_GPUS = 1 << 19
"""The largest fabric :func:`topo.builders.build` makes in one graph: 524,288 GPUs (about
10 GiB of networkx graph)."""


def fabric_spec(
    family: str, switch: SwitchSpec | None, server: ServerSpec | None, **options: Any
) -> FabricSpec:
    """The checked spec of a family builder's arguments (None: the default switch, server)."""
    return FabricSpec(family, switch or SwitchSpec(), server or ServerSpec(), **options)


def over_text(spec: FabricSpec) -> str:
    """`` at oversubscription r`` when r != 1, else empty (for limit messages)."""
    return "" if spec.oversubscription == 1 else f" at oversubscription {spec.oversubscription:g}"


def check_gpus(spec: FabricSpec, max_gpus: int, limit: str, names: tuple[str, ...] = ()) -> int:
    """The GPU count to build: ``max_gpus`` if ``spec.gpus`` is None, else ``spec.gpus``
    checked against the ceiling.

    ``limit`` is the clause stating the family's ceiling ("a two-layer fat tree of 64-port
    switches holds at most ..."); the error appends "; asked for N GPUs". ``names`` are the
    parameters the clause spells (for :meth:`topo.errors.TopoError.render`).

    Raises
    ------
    SpecError
        If ``spec.gpus`` exceeds the ceiling, or not one server fits.
    """
    gpn = spec.server.gpus
    if spec.gpus is None:
        if max_gpus < gpn:
            raise SpecError(f"{limit}; not one node of {gpn} GPUs fits", param="gpus", names=names)
        return max_gpus
    if spec.gpus > max_gpus:
        raise SpecError(f"{limit}; asked for {spec.gpus} GPUs", param="gpus", names=names)
    return spec.gpus


def new_graph(spec: FabricSpec, gpus: int, max_gpus: int, planes: int = 1) -> nx.Graph:
    """An empty fabric graph carrying the graph attributes of :mod:`topo.fabric`."""
    return nx.Graph(
        family=spec.family,
        name=f"{spec.family}-{gpus}",
        planes=planes,
        switch_ports=spec.switch.ports,
        link_gbps=spec.switch.link_gbps,
        gpus_per_node=spec.server.gpus,
        nics_per_node=spec.server.nics,
        nvlink_GBps=spec.server.nvlink_GBps,
        pcie_GBps=spec.server.pcie_GBps,
        oversubscription=spec.oversubscription,
        max_gpus=max_gpus,
    )


def nic(n: int, j: int) -> str:
    """Name of NIC ``j`` of server ``n``."""
    return f"node{n}/nic{j}"


BUILT_HOST_REGEX = r"^(node\d+)-\d+\s"
"""Takes a built server ``node<n>`` from the node description of a CA of one of its hosts,
``"node<n>-<h> mlx5_<j>"`` (:func:`add_servers` names hosts ``node<n>-<h>``; ``topo export
ibnetdiscover`` writes that description): how ``topo validate`` groups a dump's hosts into the
servers of a design built with ``gpus_per_host``."""


def built_host(node: int, host: int) -> str:
    """The id of host ``host`` of built server ``node``: ``node<node>-<host>``."""
    return f"node{node}-{host}"


def add_servers(G: nx.Graph, nodes: int, spec: FabricSpec) -> None:
    """Add servers ``0 .. nodes-1``: GPUs, one NVSwitch, NICs, and their nvlink and pcie edges.

    A server of several hosts (``spec.server.gpus_per_host``: an NVLink domain such as a GB200
    NVL72 rack of compute trays) gives each GPU and NIC the attribute ``host``,
    ``"node<n>-<h>"`` (GPU ``i`` on host ``i // gpus_per_host``, NIC ``j`` on host
    ``j // (nics / hosts)``, so a GPU and its NIC share their host), as an import with
    ``--nvlink-domain-regex`` does; the solvers still see one server per NVLink domain.
    """
    gpn, nics = spec.server.gpus, spec.server.nics
    trays = spec.server.hosts

    def host(n: int, i: int, per: int) -> dict[str, Any]:
        return {"host": built_host(n, i // per)} if trays > 1 else {}

    def vertices() -> Iterable[tuple[str, dict[str, Any]]]:
        for n in range(nodes):
            yield f"node{n}/nvswitch", {"kind": "nvswitch", "node": n}
            for i in range(gpn):
                yield (
                    f"node{n}/gpu{i}",
                    {"kind": "gpu", "node": n, "index": i, **host(n, i, gpn // trays)},
                )
            for j in range(nics):
                yield nic(n, j), {"kind": "nic", "node": n, "index": j, **host(n, j, nics // trays)}

    G.add_nodes_from(vertices())
    G.add_edges_from(
        ((f"node{n}/gpu{i}", f"node{n}/nvswitch") for n in range(nodes) for i in range(gpn)),
        capacity=GBps_to_Bps(spec.server.nvlink_GBps),
        links=1,
        kind="nvlink",
    )
    G.add_edges_from(
        ((f"node{n}/gpu{i}", nic(n, i * nics // gpn)) for n in range(nodes) for i in range(gpn)),
        capacity=GBps_to_Bps(spec.server.pcie_GBps),
        links=1,
        kind="pcie",
    )


def add_switches(
    G: nx.Graph,
    names: Iterable[str],
    kind: str,
    spec: FabricSpec,
    *,
    plane: int = 0,
    rail: int = -1,
) -> None:
    """Add switches of one tier (``kind`` leaf, spine or core) with their schema attributes."""
    G.add_nodes_from(
        names, kind=kind, tier=TIERS[kind], plane=plane, rail=rail, ports=spec.switch.ports
    )


def join(G: nx.Graph, lower: list[str], upper: list[str], cables: int, spec: FabricSpec) -> None:
    """Join every switch of ``lower`` to every switch of ``upper`` by ``cables`` parallel cables."""
    G.add_edges_from(
        ((a, b) for a in lower for b in upper),
        capacity=cables * spec.switch.line_Bps,
        links=cables,
        kind="fabric",
    )


def add_endpoints(G: nx.Graph, pairs: Iterable[tuple[str, str]], spec: FabricSpec) -> None:
    """Add one ``endpoint`` cable per (NIC, leaf) pair."""
    G.add_edges_from(pairs, capacity=spec.switch.line_Bps, links=1, kind="endpoint")


def smallest_divisor(n: int, at_least: int) -> int:
    """The smallest divisor of ``n`` that is ``>= at_least`` (``n`` itself at worst)."""
    for d in range(max(1, at_least), n + 1):
        if n % d == 0:
            return d
    raise ValueError(f"no divisor of {n} is at least {at_least}")  # a bug: callers check
