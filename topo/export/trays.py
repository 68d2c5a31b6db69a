"""The cluster software's view of NVLink domains larger than a host: hosts are the nodes.

Slurm, NCCL's per-host environment and a cabling plan see hosts (the compute trays of a GB200
NVL72 rack, each with its own hostname and HCAs), not the NVLink domain a solver contracts into
one server. :func:`host_view` gives a fabric whose servers are the hosts; :func:`domain_blocks`
gives Slurm's ``topology/block`` form with one block per NVLink domain, as NVIDIA's topograph
writes it for NVL72 racks (``BlockName=<domain> Nodes=<its trays>``; its golden file
``tests/ci/expected.slinky-dra-block.conf``).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import networkx as nx

from topo.export.slurm import SlurmBlocks, block_sizes, slurm_name
from topo.fabric import natural_key, servers


def host_view(G: nx.Graph) -> nx.Graph:
    """A copy of a fabric whose servers are its hosts.

    Parameters
    ----------
    G : networkx.Graph
        A fabric whose GPUs and NICs may carry ``host`` (NVLink domains of several hosts).

    Returns
    -------
    networkx.Graph
        ``G`` itself when no vertex carries ``host``; else a copy where each GPU's and NIC's
        ``node`` is its host (``host`` dropped) and the NVSwitches are gone with their NVLink
        edges (they join hosts; a host seen alone has none). Only for the exporters: it is
        not a fabric the solvers take.
    """
    if not any("host" in d for _, d in G.nodes(data=True)):
        return G
    H = G.copy()
    H.graph["hosts_named"] = True  # its servers are hosts, whose ids are their names
    H.remove_nodes_from([v for v, k in G.nodes(data="kind") if k == "nvswitch"])
    for _, d in H.nodes(data=True):
        if "host" in d:
            d["node"] = d.pop("host")
    return H


def compute_view(G: nx.Graph) -> nx.Graph:
    """A fabric without its servers of NICs alone, where other servers have GPUs.

    ``topo import ibnetdiscover --compute-host-regex`` leaves the hosts it does not match (a
    UFM host, ``localhost``, CAs with no hostname) as servers without GPUs: cabled, but no
    compute nodes, so neither Slurm's topology nor NCCL's environment lists them.

    Parameters
    ----------
    G : networkx.Graph
        A fabric.

    Returns
    -------
    networkx.Graph
        ``G`` itself when it has no GPUs or every server has some; else a copy without the
        NICs of the servers that have none (and their cables). Only for the exporters.
    """
    with_gpus = {d["node"] for _, d in G.nodes(data=True) if d["kind"] == "gpu"}
    if not with_gpus:
        return G
    idle = [v for v, d in G.nodes(data=True) if d["kind"] == "nic" and d["node"] not in with_gpus]
    if not idle:
        return G
    H = G.copy()
    H.remove_nodes_from(idle)
    return H


def domain_hosts(G: nx.Graph) -> dict[Hashable, list[Hashable]]:
    """The NVLink domains of several hosts (or of one host named otherwise), with their hosts.

    Returns
    -------
    dict
        Server id -> its hosts in natural order, for every server whose GPUs or NICs name a
        host other than the server; a host outside every domain (``node`` = ``host``) is left
        out.
    """
    out: dict[Hashable, list[Hashable]] = {}
    for s, members in servers(G).items():
        named = {G.nodes[v]["host"] for v in members if "host" in G.nodes[v]}
        if named and named != {s}:
            out[s] = sorted(named, key=natural_key)
    return out


def domain_blocks(
    domains: Mapping[Hashable, list[Hashable]], names: Mapping[Hashable, str]
) -> SlurmBlocks:
    """Slurm's ``topology/block`` form with one block per NVLink domain.

    Parameters
    ----------
    domains : mapping
        Domain id -> its hosts (:func:`domain_hosts`), in order.
    names : mapping
        Host id -> its Slurm node name.

    Returns
    -------
    SlurmBlocks
        ``BlockName=<domain>`` with its hosts, the domains in order; ``BlockSizes`` from
        :func:`topo.export.slurm.block_sizes` with the base size B the smallest domain's host
        count (Slurm requires every block to hold at least B nodes) and nothing between the
        domains and the top (a two-layer fabric's racks are alike).
    """
    blocks = tuple((_block_name(d), tuple(names[h] for h in hosts)) for d, hosts in domains.items())
    base = min(len(nodes) for _, nodes in blocks)
    return SlurmBlocks(blocks, block_sizes(base, [], len(blocks)))


def _block_name(domain: Hashable) -> str:
    """A domain's block name: an imported rack's own name, ``block<n>`` for a built server
    ``n`` (a bare number reads as a count in Slurm's files)."""
    return f"block{domain}" if isinstance(domain, int) else slurm_name(str(domain))
