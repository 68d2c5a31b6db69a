"""Slurm's view of a fabric: ``topology.conf`` (tree and block plugins) and ``topology.yaml``.

Slurm places jobs by network locality: the ``topology/tree`` plugin reads switches and their
children (``SwitchName=s0 Nodes=node[0-7]``, ``SwitchName=top Switches=s[0-3]``), the
``topology/block`` plugin reads blocks of nodes and the sizes it may aggregate them to
(``BlockName=b0 Nodes=...``, ``BlockSizes=8,16``). Both need every node under exactly one
leaf-level name, which a multi-rail or multi-plane fabric does not give directly (a server's
eight NICs are on eight leaves). The grouping (docs/export.md):

- **leaf groups**: servers are joined with the leaf-level switches their NICs are cabled to,
  where the leaves of one index across rails or planes count as one (``rail3/leaf5`` and
  ``p3/leaf5`` are ``leaf5``); each connected group of servers and leaves is one Slurm leaf
  switch (or block), named after its first leaf. In MRFT and MPFT these are the servers that
  share their leaf index; in a fat tree the servers of one leaf.
- **domains** above them: the pods of a three-layer fat tree (the blocks below the top tier),
  the groups of a Dragonfly (``g{G}/r{R}`` routers; Slurm's ``TopologyParam=dragonfly``).
- **one top switch** named after the fabric, over all leaf groups or domains.

A fabric whose leaf-level switches have nothing above them and no Dragonfly groups (a Slim
Fly) has no tree Slurm can express; its block form (one block per router) still works.

Formats: Slurm's ``topology.conf(5)`` and ``topology.yaml(5)`` man pages; the block sizes
follow ``src/plugins/topology/block/block_record.c`` (the first size is the base block
size B; every size is a multiple of B by a power of two, at most 2^15).
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import networkx as nx

from topo.errors import SpecError
from topo.export.hostlist import hostlist_ranged
from topo.fabric import SWITCH_KINDS, blocks_below_top, named_servers, natural_key, servers

__all__ = [
    "SlurmBlocks",
    "SlurmSwitch",
    "block_sizes",
    "slurm_blocks",
    "slurm_name",
    "slurm_tree",
    "write_block_conf",
    "write_topology_conf",
    "write_topology_yaml",
]

MAX_BLOCK_LEVELS = 16
"""Slurm's ``MAX_BLOCK_LEVELS`` (block_record.h): sizes up to B * 2^15."""

_PLANE_PREFIX = re.compile(r"^(?:p|rail)\d+/")
_CHASSIS = re.compile(r"^MF0;([^:]+):")  # ibnetdiscover's "MF0;<name>:<model>/U1"
_BAD = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class SlurmSwitch:
    """One ``SwitchName=`` line: a leaf switch with nodes, or a switch with child switches.

    Attributes
    ----------
    name : str
        The switch name (at most 64 characters, no hostlist metacharacters).
    nodes : tuple of str
        Host names below a leaf switch, in order (empty above the leaves).
    switches : tuple of str
        Child switch names (empty for a leaf switch).
    """

    name: str
    nodes: tuple[str, ...] = ()
    switches: tuple[str, ...] = ()


@dataclass(frozen=True)
class SlurmBlocks:
    """A ``topology/block`` configuration.

    Attributes
    ----------
    blocks : tuple of (str, tuple of str)
        Block name and its host names, in the order Slurm pairs them (consecutive blocks
        aggregate into larger ones).
    sizes : tuple of int
        ``BlockSizes``: the base size B (nodes), then B times powers of two.
    """

    blocks: tuple[tuple[str, tuple[str, ...]], ...]
    sizes: tuple[int, ...]


def slurm_name(name: str) -> str:
    """A switch or block name Slurm's hostlist parser keeps whole.

    Parameters
    ----------
    name : str
        A switch vertex name (``pod0/leaf1``, ``MF0;A09-P1-IBLEAF-04-04:MQM9701/U1``).

    Returns
    -------
    str
        An ibnetdiscover chassis name ``MF0;<name>:<model>/U1`` becomes ``<name>``; ``/`` and
        any other run of characters outside letters, digits, ``.``, ``_`` and ``-`` becomes
        ``-``; at most 64 characters (Slurm's limit for a switch name).

    Examples
    --------
    >>> slurm_name("pod0/leaf1"), slurm_name("MF0;A09-P1-IBLEAF-04-04:MQM9701/U1")
    ('pod0-leaf1', 'A09-P1-IBLEAF-04-04')
    """
    m = _CHASSIS.match(name)
    text = m.group(1) if m else name
    return _BAD.sub("-", text).strip("-")[:64] or "switch"


class _Union:
    def __init__(self) -> None:
        self.parent: dict[Hashable, Hashable] = {}

    def find(self, x: Hashable) -> Hashable:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def join(self, a: Hashable, b: Hashable) -> None:
        self.parent[self.find(a)] = self.find(b)


@dataclass(frozen=True)
class _Group:
    name: str
    servers: tuple[int, ...]
    keys: tuple[str, ...]


def _leaf_key(G: nx.Graph, switch: str) -> str:
    if G.graph.get("family") in ("mpft", "mrft"):
        return _PLANE_PREFIX.sub("", str(switch))
    return str(switch)


def _leaf_groups(G: nx.Graph) -> list[_Group]:
    """The leaf groups of the module docstring, ordered by their first server."""
    ids = list(servers(G))
    if not ids:
        raise SpecError("the fabric has no servers: no Slurm node to place under a switch")
    index = {n: i for i, n in enumerate(ids)}
    uf = _Union()
    attached = set()
    for u, v, kind in G.edges(data="kind"):
        if kind != "endpoint":
            continue
        nic, sw = (u, v) if G.nodes[v]["kind"] in SWITCH_KINDS else (v, u)
        i = index[G.nodes[nic]["node"]]
        attached.add(i)
        uf.join(("s", i), ("k", _leaf_key(G, sw)))
    missing = [ids[i] for i in range(len(ids)) if i not in attached]
    if missing:
        raise SpecError(
            f"{named_servers(G, missing)} {'has' if len(missing) == 1 else 'have'} no NIC "
            "cabled to a switch; Slurm puts every node under a leaf switch"
        )
    members: dict[Hashable, tuple[list[int], list[str]]] = {}
    for item in list(uf.parent):
        srv, keys = members.setdefault(uf.find(item), ([], []))
        (srv if item[0] == "s" else keys).append(item[1])  # type: ignore[index, arg-type]
    groups = [
        _Group(
            slurm_name(sorted(k, key=natural_key)[0]),
            tuple(sorted(s)),
            tuple(sorted(k, key=natural_key)),
        )
        for s, k in members.values()
    ]
    return sorted(groups, key=lambda g: g.servers[0])


def _domains(G: nx.Graph, groups: list[_Group]) -> list[tuple[str, list[_Group]]] | None:
    """Groups by domain (pod, Dragonfly group), or None when nothing sits between the leaf
    groups and the top."""
    switches = [v for v, k in G.nodes(data="kind") if k in SWITCH_KINDS]
    top = max(int(G.nodes[s]["tier"]) for s in switches)
    label: dict[str, str] = {}
    if G.graph.get("family") == "dragonfly":
        label = {_leaf_key(G, s): str(s).split("/")[0] for s in switches}
    elif top >= 3:
        for i, block in enumerate(blocks_below_top(G, switches)):
            heads = {_leaf_key(G, s).split("/")[0] for s in block if "/" in str(s)}
            name = (
                heads.pop()
                if len(heads) == 1 and all("/" in str(s) for s in block)
                else f"block{i}"
            )
            label.update({_leaf_key(G, s): name for s in block})
    else:
        return None
    uf = _Union()
    for g in groups:
        for key in g.keys:
            uf.join(("g", g.name), ("d", label[key]))
    by: dict[Hashable, list[_Group]] = {}
    names: dict[Hashable, str] = {}
    for g in groups:
        root = uf.find(("g", g.name))
        by.setdefault(root, []).append(g)
        names.setdefault(root, slurm_name(label[g.keys[0]]))
    return [(names[r], gs) for r, gs in by.items()]


def slurm_tree(G: nx.Graph, hosts: Sequence[str]) -> tuple[SlurmSwitch, ...]:
    """The ``topology/tree`` switches of a fabric, top down (the grouping of the module).

    Parameters
    ----------
    G : networkx.Graph
        A fabric (built or imported).
    hosts : sequence of str
        One host name per server, in the order of ``topo.fabric.servers(G)``.

    Returns
    -------
    tuple of SlurmSwitch
        The top switch first (absent when the fabric is one leaf group), then the domains,
        then the leaf switches; every host under exactly one leaf switch.

    Raises
    ------
    SpecError
        If the fabric has no tree Slurm can express (leaf-level switches with nothing above
        them and no Dragonfly groups, e.g. a Slim Fly), a server has no cabled NIC, or two
        switch names coincide.
    """
    groups = _leaf_groups(G)
    leaves = [SlurmSwitch(g.name, nodes=tuple(hosts[i] for i in g.servers)) for g in groups]
    if len(groups) == 1:
        return tuple(leaves)
    domains = _domains(G, groups)
    top = slurm_name(str(G.graph.get("name", "fabric")))
    if domains is None:
        switches = [v for v, k in G.nodes(data="kind") if k in SWITCH_KINDS]
        if max(int(G.nodes[s]["tier"]) for s in switches) == 1:
            raise SpecError(
                f"Slurm's tree cannot express this {G.graph.get('family', 'fabric')} fabric: its "
                f"{len(groups)} leaf-level switch groups have no switch above them and no "
                "Dragonfly groups (use the block form: slurm_format block)",
                names=("slurm_format",),
            )
        out = [SlurmSwitch(top, switches=tuple(g.name for g in groups)), *leaves]
    else:
        mids = [SlurmSwitch(name, switches=tuple(g.name for g in gs)) for name, gs in domains]
        out = [SlurmSwitch(top, switches=tuple(m.name for m in mids)), *mids, *leaves]
    _unique([s.name for s in out], "switch")
    return tuple(out)


def _unique(names: Sequence[str], what: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise SpecError(
                f"two {what}es would both be named {name!r} in Slurm's configuration; rename "
                "the switches so that their names differ in letters, digits, '.', '_' or '-'"
            )
        seen.add(name)


def block_sizes(base: int, domains: Sequence[int], top: int) -> tuple[int, ...]:
    """``BlockSizes`` for base blocks of ``base`` nodes nested in ``domains``, under a top.

    Slurm aggregates 2^j consecutive base blocks into one block of level j. A level is offered
    where it stays inside one domain of the fabric: within domains of ``m`` blocks, 2^j blocks
    with 2^j dividing ``m``; at the top, where any blocks or domains are alike, every 2^j up to
    the count. A domain of ``m`` blocks that is no power of two ends the levels (nothing above
    it aligns). Levels stop at Slurm's limit, 2^15 base blocks.

    Parameters
    ----------
    base : int
        Nodes per base block (B), at least 1.
    domains : sequence of int
        Blocks (then domains) per domain at each level from the bottom, e.g. the leaf groups
        per pod of a three-layer fat tree; empty for a two-layer fabric.
    top : int
        Domains (or blocks, without domains) under the top switch; 0 for none.

    Returns
    -------
    tuple of int
        B, then B * 2^j for each level offered (increasing).

    Examples
    --------
    >>> block_sizes(32, [], 64)
    (32, 64, 128, 256, 512, 1024, 2048)
    >>> block_sizes(4, [6], 3)  # 6 leaves per pod: pairs stay in a pod, nothing above aligns
    (4, 8)
    >>> block_sizes(4, [4], 3)  # 4 leaves per pod, 3 pods: pods, then 2 pods
    (4, 8, 16, 32)
    """
    mult, sizes = 1, [base]
    for m, is_top in [*((d, False) for d in domains), (top, True)]:
        f = 2
        while f <= m and (is_top or m % f == 0) and mult * f <= 2 ** (MAX_BLOCK_LEVELS - 1):
            sizes.append(base * mult * f)
            f *= 2
        if is_top or m & (m - 1):
            break
        mult *= m
    return tuple(sizes)


def slurm_blocks(G: nx.Graph, hosts: Sequence[str]) -> SlurmBlocks:
    """The ``topology/block`` form: one block per leaf group, domains kept together.

    Parameters
    ----------
    G : networkx.Graph
        A fabric.
    hosts : sequence of str
        One host name per server, in the order of ``topo.fabric.servers(G)``.

    Returns
    -------
    SlurmBlocks
        Blocks ordered domain by domain; ``sizes`` from :func:`block_sizes` with B the
        smallest block (every block holds at least B nodes, as Slurm requires).
    """
    groups = _leaf_groups(G)
    domains = _domains(G, groups) if len(groups) > 1 else None
    ordered = [g for _, gs in domains for g in gs] if domains else groups
    blocks = tuple((g.name, tuple(hosts[i] for i in g.servers)) for g in ordered)
    _unique([b[0] for b in blocks], "block")
    base = min(len(b[1]) for b in blocks)
    if not domains:
        return SlurmBlocks(blocks, block_sizes(base, [], len(blocks)))
    counts = [len(gs) for _, gs in domains]
    if len(set(counts)) == 1:
        return SlurmBlocks(blocks, block_sizes(base, [counts[0]], len(domains)))
    # Unequal domains: aligned groups of 2^j blocks dividing every domain's count.
    return SlurmBlocks(blocks, block_sizes(base, [math.gcd(*counts)], 0))


def write_topology_conf(switches: Sequence[SlurmSwitch], header: str = "") -> str:
    """``topology.conf`` for ``TopologyPlugin=topology/tree``: one ``SwitchName=`` line each.

    Parameters
    ----------
    switches : sequence of SlurmSwitch
        From :func:`slurm_tree`, in the order to write them.
    header : str
        Comment lines to put first (each prefixed ``# ``).

    Returns
    -------
    str
        The file's text: ``SwitchName=<name> Nodes=<hostlist>`` for a leaf switch,
        ``SwitchName=<name> Switches=<hostlist>`` above (``topology.conf(5)``).
    """
    lines = [f"# {ln}" for ln in header.splitlines()]
    for s in switches:
        child = (
            f"Nodes={hostlist_ranged(s.nodes)}"
            if s.nodes
            else f"Switches={hostlist_ranged(s.switches)}"
        )
        lines.append(f"SwitchName={s.name} {child}")
    return "\n".join(lines) + "\n"


def write_block_conf(blocks: SlurmBlocks, header: str = "") -> str:
    """``topology.conf`` for ``TopologyPlugin=topology/block``.

    Parameters
    ----------
    blocks : SlurmBlocks
        From :func:`slurm_blocks`.
    header : str
        Comment lines to put first.

    Returns
    -------
    str
        ``BlockName=<name> Nodes=<hostlist>`` lines, then ``BlockSizes=B,...``
        (``topology.conf(5)``).
    """
    lines = [f"# {ln}" for ln in header.splitlines()]
    lines += [f"BlockName={name} Nodes={hostlist_ranged(nodes)}" for name, nodes in blocks.blocks]
    lines.append("BlockSizes=" + ",".join(map(str, blocks.sizes)))
    return "\n".join(lines) + "\n"


def write_topology_yaml(
    name: str,
    switches: Sequence[SlurmSwitch] | None,
    blocks: SlurmBlocks,
    header: str = "",
) -> str:
    """Slurm's ``topology.yaml`` (Slurm 25.05 and later; ``topology.yaml(5)``).

    Parameters
    ----------
    name : str
        The fabric's name; the topologies are ``<name>-tree`` and ``<name>-block``.
    switches : sequence of SlurmSwitch or None
        The tree (:func:`slurm_tree`), or None for a fabric without one.
    blocks : SlurmBlocks
        The block form (:func:`slurm_blocks`).
    header : str
        Comment lines to put first.

    Returns
    -------
    str
        A YAML list: the tree entry (``cluster_default: true``) when there is a tree, then the
        block entry (the default when there is no tree).
    """
    lines = [f"# {ln}" for ln in header.splitlines()] + ["---"]
    if switches is not None:
        lines += [f"- topology: {name}-tree", "  cluster_default: true", "  tree:", "    switches:"]
        for s in switches:
            lines.append(f"      - switch: {s.name}")
            if s.nodes:
                lines.append(f"        nodes: {hostlist_ranged(s.nodes)}")
            else:
                lines.append(f"        children: {hostlist_ranged(s.switches)}")
    lines += [
        f"- topology: {name}-block",
        f"  cluster_default: {'false' if switches is not None else 'true'}",
        "  block:",
        "    block_sizes:",
        *[f"      - {size}" for size in blocks.sizes],
        "    blocks:",
    ]
    for block, nodes in blocks.blocks:
        lines += [f"      - block: {block}", f"        nodes: {hostlist_ranged(nodes)}"]
    return "\n".join(lines) + "\n"
