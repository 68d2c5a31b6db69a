"""The fabric as NCCL uses it without GPUDirect RDMA: network data staged through host memory.

NCCL lets a NIC read and write GPU memory directly (GPUDirect RDMA) only when the GPU and the
NIC are close enough on PCIe: ``NCCL_NET_GDR_LEVEL`` (default ``PXB``, a PCIe switch between
them; NCCL docs, "Environment Variables", ``NCCL_NET_GDR_LEVEL``); past that distance, with the
``nvidia-peermem`` module missing, or with ``NCCL_NET_GDR_LEVEL=LOC``, the proxy stages every
network byte in host memory (NCCL 2.29.2 ``src/transport/net.cc``: the connections'
per-protocol buffers are mapped in device memory only when ``useGdr``). The GPU then writes
what it sends to host memory and reads what it receives from there, and the NIC does the
same: on the PCIe link the GPU and its NIC share towards the host, each direction carries
every sent and every received byte once from each side, twice what it carries with
GPUDirect RDMA while the collective sends and receives at once (ring, tree and all-to-all
steps all do). :func:`without_gdr` halves that link in the fabric, so every solver
(all-to-all, collectives, MoE) gives the rate for it with no special case.
"""

from __future__ import annotations

import networkx as nx

from topo.fabric import require_fabric

__all__ = ["GDR_OFF_PCIE_FACTOR", "without_gdr"]

GDR_OFF_PCIE_FACTOR = 0.5
"""The share of a GPU-NIC PCIe link's capacity left to network traffic without GPUDirect RDMA
(dimensionless): each direction carries each network byte twice, GPU to host and host to NIC
(module docstring; the same factor as ``topo explain``'s ``no_gdr`` cause)."""


def without_gdr(G: nx.Graph) -> nx.Graph:
    """The fabric with network data staged through host memory on every server.

    Contract: a copy of ``G`` whose every ``pcie`` edge (a GPU's link to its NIC) has
    :data:`GDR_OFF_PCIE_FACTOR` of its capacity (B/s) and ``G.graph["gdr"]`` set to ``False``;
    nothing else changes. A server whose NIC reaches its cable faster than half its PCIe side
    then sends and receives at that half (a 400G NIC behind a PCIe Gen5 x16 link of 64 GB/s:
    32 GB/s, not 50). ``G`` is not modified.

    Parameters
    ----------
    G : networkx.Graph
        A fabric (:mod:`topo.fabric`).

    Returns
    -------
    networkx.Graph
        The fabric without GPUDirect RDMA.

    Raises
    ------
    TopoError
        ``G`` is not a fabric (:func:`topo.fabric.require_fabric`).

    Examples
    --------
    >>> from topo.builders import build
    >>> G = without_gdr(build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2))
    >>> sorted({e["capacity"] / 1e9 for *_, e in G.edges(data=True) if e["kind"] == "pcie"})
    [32.0]
    """
    require_fabric(G)
    H = G.copy()
    for _, _, e in H.edges(data=True):
        if e["kind"] == "pcie":
            e["capacity"] = e["capacity"] * GDR_OFF_PCIE_FACTOR
    H.graph["gdr"] = False
    return H
