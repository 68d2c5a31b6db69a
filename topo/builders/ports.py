"""Multi-port NICs: port ``p`` of every NIC on port plane ``p``.

The DeepSeek-V3 hardware report's ideal (Zhao et al., ISCA 2025, §5.1, Fig. 4: "each NIC would
feature multiple physical ports, each connected to a separate network plane"). A fabric of
``P``-port NICs is ``P`` copies of the family's fabric (the port planes), port ``p`` of every NIC
cabled into copy ``p``:

- a NIC ``node{n}/nic{j}`` becomes ``P`` NIC vertices ``node{n}/nic{j}/port{p}`` (kind ``nic``,
  ``index = j*P + p``), each with its own ``endpoint`` cable of ``link_gbps`` (the rate of one
  port) into plane ``p``;
- the NIC's PCIe link to its GPUs is shared by its ports: each port vertex gets a ``pcie`` edge
  of ``pcie_GBps / P``. Under a demand symmetric over the planes (the uniform all-to-all) an
  optimal flow loads the ports alike, so the even split loses nothing; an uneven demand could
  use a port's PCIe share beyond ``1/P``, which this model does not allow (a lower bound);
- switch ``v`` of copy ``p`` is ``port{p}/v``, its ``plane`` ``p * planes + plane`` (``planes``
  of the family: 1, or ``nics_per_node`` for MPFT), so ``G.graph["planes"]`` is
  ``P * planes``. With ``P = 1`` nothing changes.

The vertices stay in the schema of :mod:`topo.fabric` (a NIC vertex per port), so the flow
solvers read such a fabric as they read any other.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import networkx as nx

from topo.fabric import SWITCH_KINDS

__all__ = ["port_name", "with_nic_ports"]


def port_name(nic: str, p: int) -> str:
    """The vertex of port ``p`` of NIC vertex ``nic``: ``{nic}/port{p}``."""
    return f"{nic}/port{p}"


def with_nic_ports(H: nx.Graph, ports: int) -> nx.Graph:
    """The fabric ``H`` (single-port NICs) with ``ports`` ports per NIC, one port plane each.

    Parameters
    ----------
    H : networkx.Graph
        A built fat tree (``ft2``, ``ft3``, ``mrft``, ``mpft``) with one port per NIC.
    ports : int
        Ports per NIC ``P`` (1 returns ``H`` itself).

    Returns
    -------
    networkx.Graph
        ``P`` copies of ``H``'s switches and cables, NIC ports and PCIe shares as in the module
        docstring; GPUs, NVSwitches and NVLink as in ``H``; ``G.graph`` as ``H``'s with
        ``planes`` multiplied by ``P``.
    """
    if ports == 1:
        return H
    planes = int(H.graph.get("planes", 1))
    G = nx.Graph(**{**H.graph, "planes": planes * ports})
    G.add_nodes_from(_vertices(H, ports, planes))
    G.add_edges_from(_edges(H, ports))
    return G


def _vertices(H: nx.Graph, ports: int, planes: int) -> Iterable[tuple[str, dict[str, Any]]]:
    for v, d in H.nodes(data=True):
        kind = d["kind"]
        if kind in SWITCH_KINDS:
            for p in range(ports):
                yield f"port{p}/{v}", {**d, "plane": p * planes + int(d["plane"])}
        elif kind == "nic":
            for p in range(ports):
                yield port_name(v, p), {**d, "index": int(d["index"]) * ports + p}
        else:
            yield v, d


def _edges(H: nx.Graph, ports: int) -> Iterable[tuple[str, str, dict[str, Any]]]:
    kind = dict(H.nodes(data="kind"))
    for u, v, d in H.edges(data=True):
        e = d["kind"]
        if e == "nvlink":
            yield u, v, d
            continue
        for p in range(ports):
            if e == "pcie":
                gpu, nic = (u, v) if kind[u] == "gpu" else (v, u)
                yield gpu, port_name(nic, p), {**d, "capacity": d["capacity"] / ports}
            elif e == "endpoint":
                nic, sw = (u, v) if kind[u] == "nic" else (v, u)
                yield port_name(nic, p), f"port{p}/{sw}", d
            else:
                yield f"port{p}/{u}", f"port{p}/{v}", d
