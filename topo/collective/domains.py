"""Collectives on NVLink domains larger than a host: NCCL's MNNVL clique is one node.

On a GB200 NVL72 rack each compute tray is a host (4 GPUs, 4 NICs; nccl-tests lists ranks per
host), but NCCL with MNNVL treats every GPU of the NVLink domain as one node (NVIDIA/nccl
2.29.7):

- ``src/mnnvl.cc`` ``ncclMnnvlCheck``: the *clique* is the ranks whose GPUs report the same
  fabric cluster UUID and clique id (one NVLink domain); ``comm->MNNVL`` is set when it holds
  more than one rank;
- ``src/graph/topo.cc`` ``ncclTopoGetSystem``: with ``comm->MNNVL`` the local ranks are the
  clique's (``nLocalRanks = comm->clique.size``), not the ranks of the same host hash, and the
  XML topologies of all of them are fused into one system;
- ``src/init.cc``: ``nNodes`` counts the distinct first ranks of the rings, so the clique is one
  node, and ``initNvlDomainInfo`` sets ``nNvlDomains = nNodes``;
- ``src/transport/nvls.cc``: NVLS runs over the clique (``multiNode = clique.size < nRanks``).

So on a fabric whose servers are NVLink domains of hosts (:func:`topo.fabric.spans_hosts`),
``--gpus-per-node G`` keeps nccl-tests' meaning, ranks per *host*; :func:`select_domain_subcluster`
places ``N / G`` hosts in order (domains in natural order of their ids, hosts in natural order
inside each, ``G`` GPUs of each), and the NCCL node of the model is the domain: ranks per node =
``G`` x the hosts used in each domain, NVLS and NVLS-tree over the whole domain.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import networkx as nx

from topo.errors import TopoError
from topo.fabric import host_of_vertex, natural_key, servers


def _domains(G: nx.Graph) -> dict[Hashable, dict[Hashable, list[Any]]]:
    """Domains with GPUs, in order: host -> its GPUs by index (hosts in natural order)."""
    out: dict[Hashable, dict[Hashable, list[Any]]] = {}
    for s, vertices in servers(G).items():
        by: dict[Hashable, list[Any]] = {}
        for v in vertices:
            d = G.nodes[v]
            if d["kind"] == "gpu":
                by.setdefault(host_of_vertex(d), []).append(v)
        if by:
            out[s] = {
                h: sorted(by[h], key=lambda v: G.nodes[v]["index"])
                for h in sorted(by, key=natural_key)
            }
    return out


def _ranks(
    gpus: int | None, gpus_per_node: int | None, per_host: int, n_hosts: int
) -> tuple[int, int]:
    """(N, G): ranks and ranks per host, checked as :func:`select_domain_subcluster` says."""
    if gpus_per_node is not None:
        g = gpus_per_node
    elif gpus is not None and 1 <= gpus < per_host:
        g = gpus
    else:
        g = per_host
    if not 1 <= g <= per_host:
        raise TopoError(
            f"gpus_per_node {g}: ranks per host must be 1 to the {per_host} GPUs of the "
            "fabric's hosts (its servers are NVLink domains of hosts)",
            param="gpus_per_node",
        )
    n = g * n_hosts if gpus is None else gpus
    if n < 2:
        raise TopoError(f"gpus must be >= 2 (a collective needs two ranks), got {n}", param="gpus")
    if n % g:
        raise TopoError(
            f"gpus {n} must be a multiple of gpus_per_node {g}",
            param="gpus",
            names=("gpus", "gpus_per_node"),
        )
    if n // g > n_hosts:
        raise TopoError(
            f"gpus {n} at {g} per host needs {n // g} hosts; the fabric has {n_hosts} "
            f"(at most {g * n_hosts} GPUs)",
            param="gpus",
        )
    return n, g


def _uneven(
    n: int, g: int, given: bool, used: list[int], inv: dict[Hashable, dict[Hashable, list[Any]]]
) -> TopoError:
    """The error for ranks that fill the domains unevenly, with the ``gpus`` that would do.

    Domains fill in order, each taking as many of its hosts as ranks are left, so several
    domains hold the same count only at the first domain's ``h`` hosts: the largest even fill
    is ``g * h * d`` for the largest ``d`` whose fill (:func:`_fill`) is even (one domain alone
    takes any ``g * c``, ``c <= h``)."""
    ids = list(inv)
    sizes = [len(inv[s]) for s in ids]
    h = sizes[0]
    d = max(k for k in range(1, len(ids) + 1) if len(set(_fill(sizes, h * k))) == 1)
    what = (
        f"gpus {n} at {g} per host fills"
        if given
        else f"all {n} GPUs at {g} per host (no gpus given) fill"
    )
    one = f"one domain (e.g. gpus {g * h}: {g} x the {h} hosts of domain {ids[0]!r})"
    many = (
        f"gpus {g * h * d} ({g} x {h} hosts in each of the domains {ids[0]!r} to "
        f"{ids[d - 1]!r}), or "
    )
    return TopoError(
        f"{what} NVLink domains unevenly ({_runs(used)} hosts): NCCL's nodes are the "
        f"domains, and the model takes the same ranks on each; give {many if d > 1 else ''}{one}",
        param="gpus",
        names=("gpus",) * (3 if d > 1 else 2),
    )


def _fill(sizes: list[int], hosts: int) -> list[int]:
    """How many hosts each domain gives ``hosts`` hosts' ranks, domains of ``sizes`` hosts
    taken in order (what :func:`select_domain_subcluster` takes)."""
    out = []
    for size in sizes:
        if hosts == 0:
            break
        out.append(min(size, hosts))
        hosts -= out[-1]
    return out


def _runs(counts: list[int]) -> str:
    """``10, 11, 18, 72 x 1``: the counts in order, a run of three or more equal ones as
    ``k x c``."""
    parts: list[str] = []
    i = 0
    while i < len(counts):
        j = i
        while j < len(counts) and counts[j] == counts[i]:
            j += 1
        parts += [f"{j - i} x {counts[i]}"] if j - i >= 3 else [str(counts[i])] * (j - i)
        i = j
    return ", ".join(parts)


def select_domain_subcluster(
    G: nx.Graph, gpus: int | None, gpus_per_node: int | None
) -> tuple[nx.Graph, list[Hashable], int, int]:
    """The sub-fabric a collective runs on when the servers are NVLink domains of hosts.

    Parameters
    ----------
    G : networkx.Graph
        A fabric whose GPUs carry ``host`` (:func:`topo.fabric.spans_hosts`).
    gpus : int, optional
        Ranks N (default: ``G`` per host on every host).
    gpus_per_node : int, optional
        Ranks per host G, as nccl-tests counts them (default: the GPUs of a host, or N when
        N is fewer).

    Returns
    -------
    (networkx.Graph, list, int, int)
        The sub-fabric (every switch; of the ``N / G`` hosts used, their first ``G`` GPUs by
        index, the NICs cabled to those over PCIe, and their domain's NVSwitch), the domains
        used in order (the NCCL nodes), N, and the ranks per NCCL node: ``G`` x the hosts used
        in each domain.

    Raises
    ------
    TopoError
        No GPUs; G < 1 or more than a host holds; N < 2, not a multiple of G, or more than the
        fabric's hosts hold; hosts that fill the domains unevenly (the model takes the same
        ranks on every node).
    """
    inv = _domains(G)
    if not inv:
        raise TopoError("the fabric has no GPUs: collectives need a built fabric with servers")
    n_hosts = sum(len(h) for h in inv.values())
    per_host = min(len(gs) for h in inv.values() for gs in h.values())
    n, g = _ranks(gpus, gpus_per_node, per_host, n_hosts)
    left = n // g
    used: list[tuple[Hashable, list[Hashable]]] = []
    for s, by_host in inv.items():
        if left == 0:
            break
        take = list(by_host)[:left]
        used.append((s, take))
        left -= len(take)
    counts = sorted({len(take) for _, take in used})
    if len(counts) > 1:
        raise _uneven(n, g, gpus is not None, [len(t) for _, t in used], inv)
    keep: set[Any] = {v for v, d in G.nodes(data=True) if d["kind"] not in ("gpu", "nic")}
    keep -= {v for v, d in G.nodes(data=True) if d["kind"] == "nvswitch"}
    members = servers(G)
    for s, take in used:
        keep.update(v for v in members[s] if G.nodes[v]["kind"] == "nvswitch")
        for h in take:
            for gv in inv[s][h][:g]:
                keep.add(gv)
                keep.update(w for w in G.neighbors(gv) if G.nodes[w]["kind"] == "nic")
    chosen = [s for s, _ in used]
    if len(keep) == G.number_of_nodes():
        return G, chosen, n, g * counts[0]
    return G.subgraph(keep).copy(), chosen, n, g * counts[0]
