"""Slurm advice for a job mix: the ``BlockSizes`` and tree that keep each job inside the fewest
switches, and the cost of fragmentation.

Slurm's ``topology/block`` plugin (``topology.conf(5)``, ``BlockName=`` / ``BlockSizes=``)
places a job inside one block of the smallest size it lists that holds the job: the base block
``B`` (here one leaf group: the servers of one leaf, or of one leaf index across the rails or
planes, :func:`topo.export.slurm_blocks`), or an aggregate of ``2^j`` consecutive base blocks.
Its ``topology/tree`` plugin (``SwitchName=``) picks the fewest leaf switches. For a job of
``n`` servers:

- the **fewest leaf switches** that can hold it: the fewest leaf groups whose servers add up
  to ``n``, the largest first (``ceil(n / B)`` when every group holds ``B``);
- its **block size**: the smallest size the fabric aligns (``topo.export.slurm_blocks``: B
  times a power of two, kept inside a pod of a three-layer fat tree) that is ``>= n``; none
  when the job is larger than every aligned block;
- the advised ``BlockSizes``: ``B``, then each job's block size, once each, increasing. One
  size is one level: a mix of one job size above a leaf needs two levels (``B`` and that
  size), every other size one level more.

The **cost of fragmentation**: the same jobs placed ``packed`` (whole leaves in order, what a
block or tree placement gives an empty cluster) and ``fragmented`` (a seeded random choice, as
an idle cluster hands out servers after churn), each mix's shared busbw solved as
:func:`topo.place.place` does; per job the ratio packed / fragmented shared busbw (> 1: what
fragmentation costs it). Jobs given by their servers keep them in both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import networkx as nx
import numpy as np

from topo.errors import TopoError
from topo.export import fabric_hosts, slurm_blocks, write_block_conf
from topo.flow.solve import DEFAULT_MAX_VARIABLES
from topo.place.jobs import Job, server_blocks
from topo.place.share import place

__all__ = ["JobAdvice", "SlurmAdvice", "slurm_advice"]


@dataclass(frozen=True)
class JobAdvice:
    """One job's place in Slurm's blocks and what fragmentation costs it.

    Attributes
    ----------
    name : str
        The job.
    servers : int
        Its servers (Slurm nodes).
    leaf_switches : int
        The fewest leaf switches (leaf groups) that hold it, the largest first; 0 when the
        fabric's groups hold fewer servers than it asks for.
    block_size : int or None
        The smallest aligned block size (nodes) that holds it; None when none does.
    packed_blocks, fragmented_blocks : int
        Leaf groups (blocks below the top, :func:`topo.place.server_blocks`) its servers span
        when placed packed and fragmented.
    packed_busbw_Bps, fragmented_busbw_Bps : float
        Its shared busbw (B/s) beside the other jobs, each placement.
    fragmentation_cost : float
        ``packed_busbw_Bps / fragmented_busbw_Bps``.
    """

    name: str
    servers: int
    leaf_switches: int
    block_size: int | None
    packed_blocks: int
    fragmented_blocks: int
    packed_busbw_Bps: float
    fragmented_busbw_Bps: float
    fragmentation_cost: float


@dataclass(frozen=True)
class SlurmAdvice:
    """What :func:`slurm_advice` returns.

    Attributes
    ----------
    base_block : int
        ``B``: nodes of the smallest leaf group (Slurm's base block).
    block_sizes : tuple of int
        The advised ``BlockSizes`` (nodes), increasing, ``B`` first.
    aligned_sizes : tuple of int
        Every block size the fabric aligns (``topo.export.slurm_blocks``).
    topology_conf : str
        ``topology.conf`` for ``topology/block``: the ``BlockName=`` lines and the advised
        ``BlockSizes=`` line.
    jobs : tuple of JobAdvice
        In the order given.
    """

    base_block: int
    block_sizes: tuple[int, ...]
    aligned_sizes: tuple[int, ...]
    topology_conf: str
    jobs: tuple[JobAdvice, ...]

    def to_dict(self) -> dict[str, Any]:
        """The advice as ``topo place --slurm --json`` prints it (rates in GB/s).

        Returns
        -------
        dict
            ``base_block``, ``block_sizes``, ``aligned_sizes``, ``topology_conf`` and
            ``jobs`` (each ``name``, ``servers``, ``leaf_switches``, ``block_size``,
            ``packed_blocks``, ``fragmented_blocks``, ``packed_busbw_GBps``,
            ``fragmented_busbw_GBps``, ``fragmentation_cost``).
        """
        return {
            "base_block": self.base_block,
            "block_sizes": list(self.block_sizes),
            "aligned_sizes": list(self.aligned_sizes),
            "topology_conf": self.topology_conf,
            "jobs": [
                {
                    "name": j.name,
                    "servers": j.servers,
                    "leaf_switches": j.leaf_switches,
                    "block_size": j.block_size,
                    "packed_blocks": j.packed_blocks,
                    "fragmented_blocks": j.fragmented_blocks,
                    "packed_busbw_GBps": j.packed_busbw_Bps / 1e9,
                    "fragmented_busbw_GBps": j.fragmented_busbw_Bps / 1e9,
                    "fragmentation_cost": j.fragmentation_cost,
                }
                for j in self.jobs
            ],
        }


def slurm_advice(
    G: nx.Graph,
    jobs: Sequence[Job],
    *,
    seed: int | np.random.Generator | None = 0,
    max_variables: int = DEFAULT_MAX_VARIABLES,
) -> SlurmAdvice:
    """The ``BlockSizes`` that keep each job in the fewest leaf switches, and what
    fragmentation costs each job (module notes).

    Parameters
    ----------
    G : networkx.Graph
        A fabric with GPUs.
    jobs : sequence of Job
        The job mix (a job's ``policy`` is replaced by ``packed``, then ``fragmented``).
    seed : int, numpy.random.Generator or None
        The random stream of the fragmented placement.
    max_variables : int
        As :func:`topo.place.place`.

    Returns
    -------
    SlurmAdvice
        The base block, the advised and the aligned block sizes, the ``topology.conf`` text,
        and per job its leaf switches, block size and fragmentation cost.

    Raises
    ------
    TopoError
        No job; as :func:`topo.place.place` and :func:`topo.export.slurm_blocks`.

    Examples
    --------
    >>> from topo.builders import build
    >>> G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1)  # leaves of 2
    >>> a = slurm_advice(G, [Job("a", "alltoall", count=3), Job("b", "ring", count=2)])
    >>> a.block_sizes, [j.leaf_switches for j in a.jobs]
    ((2, 4), [2, 1])

    References
    ----------
    SchedMD, ``topology.conf(5)`` (``BlockName``, ``BlockSizes``, ``SwitchName``) and the
    Topology Guide, https://slurm.schedmd.com/topology.html.
    """
    if not jobs:
        raise TopoError("no jobs to advise on")
    blocks = slurm_blocks(G, fabric_hosts(G, None))
    base = blocks.sizes[0]
    groups = sorted((len(nodes) for _, nodes in blocks.blocks), reverse=True)
    sizes = [j.count if j.count is not None else len(j.servers or ()) for j in jobs]
    fit = [next((b for b in blocks.sizes if b >= n), None) for n in sizes]
    advised = tuple(sorted({base, *(b for b in fit if b is not None)}))
    packed = place(G, _as(jobs, "packed"), seed=seed, max_variables=max_variables)
    fragmented = place(G, _as(jobs, "fragmented"), seed=seed, max_variables=max_variables)
    where = server_blocks(G)
    out = []
    for j, n, b, p, f in zip(jobs, sizes, fit, packed.jobs, fragmented.jobs, strict=True):
        pb, fb = p.shared_busbw_Bps, f.shared_busbw_Bps
        out.append(
            JobAdvice(
                name=j.name,
                servers=n,
                leaf_switches=_fewest(groups, n),
                block_size=b,
                packed_blocks=len({where[s] for s in p.servers}),
                fragmented_blocks=len({where[s] for s in f.servers}),
                packed_busbw_Bps=pb,
                fragmented_busbw_Bps=fb,
                fragmentation_cost=pb / fb if fb > 0 else float("inf"),
            )
        )
    conf = write_block_conf(
        replace(blocks, sizes=advised),
        f"{G.graph.get('name', 'fabric')}: TopologyPlugin=topology/block, advised by topo place",
    )
    return SlurmAdvice(base, advised, blocks.sizes, conf, tuple(out))


def _fewest(groups: list[int], n: int) -> int:
    """The fewest of the groups (sizes, largest first) that add up to ``n`` or more."""
    total = 0
    for i, g in enumerate(groups, start=1):
        total += g
        if total >= n:
            return i
    return 0


def _as(jobs: Sequence[Job], policy: str) -> list[Job]:
    """The jobs placed by ``policy`` (jobs given by their servers keep them)."""
    return [replace(j, policy=policy) if j.count is not None else j for j in jobs]
