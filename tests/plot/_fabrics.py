"""Small fabrics built by hand for the plot tests, and readers of :class:`FabricData`.

The fabrics follow the schema of ``topo.fabric``; the expected counts, sums and capacities in
the tests are worked by hand from their sizes.
"""

from __future__ import annotations

from collections import Counter

import networkx as nx

from topo.fabric import check_schema
from topo.plot.layout import FabricData

LINK_Bps = 50e9  # 400 Gb/s
NVLINK_Bps = 400e9
PCIE_Bps = 64e9


def two_layer(
    family: str,
    *,
    nodes: int,
    gpus_per_node: int,
    leaves: int,
    spines: int,
    links_per_pair: int = 1,
) -> nx.Graph:
    """A two-layer fabric of ``nodes`` servers with one NIC per GPU.

    ``mpft``: one plane per NIC index, each with ``leaves`` leaves ``p{p}/leaf{j}`` and
    ``spines`` spines ``p{p}/spine{j}``; NIC i of node n goes to ``p{i}/leaf{n // (nodes /
    leaves)}``. ``ft2``: one plane, NICs fill ``leaf{j}`` in order. Every leaf is cabled to
    every spine of its plane with ``links_per_pair`` cables. (The MRFT and FT3 of the tests are
    the builders': they make the same graphs as a hand-built one would.)
    """
    blocks = gpus_per_node if family == "mpft" else 1
    G = nx.Graph(family=family, name=f"test-{family}", planes=blocks)

    def leaf(b: int, j: int) -> str:
        return f"p{b}/leaf{j}" if family == "mpft" else f"leaf{j}"

    def spine(b: int, j: int) -> str:
        return f"p{b}/spine{j}" if family == "mpft" else f"spine{j}"

    down = nodes * gpus_per_node // blocks // leaves
    for b in range(blocks):
        plane = b if family == "mpft" else 0
        for j in range(leaves):
            G.add_node(
                leaf(b, j),
                kind="leaf",
                tier=1,
                plane=plane,
                rail=-1,
                ports=down + spines * links_per_pair,
            )
            for s in range(spines):
                G.add_node(
                    spine(b, s),
                    kind="spine",
                    tier=2,
                    plane=plane,
                    rail=-1,
                    ports=leaves * links_per_pair,
                )
                G.add_edge(
                    leaf(b, j),
                    spine(b, s),
                    capacity=links_per_pair * LINK_Bps,
                    links=links_per_pair,
                    kind="fabric",
                )
    for n in range(nodes):
        nvswitch = f"node{n}/nvswitch"
        G.add_node(nvswitch, kind="nvswitch", node=n)
        for i in range(gpus_per_node):
            gpu, nic = f"node{n}/gpu{i}", f"node{n}/nic{i}"
            G.add_node(gpu, kind="gpu", node=n, index=i)
            G.add_node(nic, kind="nic", node=n, index=i)
            G.add_edge(gpu, nvswitch, capacity=NVLINK_Bps, links=1, kind="nvlink")
            G.add_edge(gpu, nic, capacity=PCIE_Bps, links=1, kind="pcie")
            if blocks > 1:
                to = leaf(i, n // (nodes // leaves))
            else:
                to = leaf(0, (n * gpus_per_node + i) // down)
            G.add_edge(nic, to, capacity=LINK_Bps, links=1, kind="endpoint")
    check_schema(G)
    return G


def imported() -> nx.Graph:
    """An imported (ibnetdiscover-like) fabric: 4 hosts with a two-port CA, no GPUs, two leaves
    and one spine of kind ``switch``, each leaf cabled to the spine with 2 cables."""
    G = nx.Graph(
        family="ibnetdiscover",
        name="lab",
        planes=1,
        source="lab.txt",
        aggregation_nodes=0,
        link_speeds={"4xNDR": 12},
    )
    for s in range(2):
        G.add_node(
            f"S-leaf{s}",
            kind="switch",
            tier=1,
            plane=0,
            rail=-1,
            ports=40,
            guid=f"0x{s:x}",
            description=f"MF0;leaf{s}",
        )
        G.add_edge(
            f"S-leaf{s}", "S-spine", capacity=2 * LINK_Bps, links=2, kind="fabric", speed="4xNDR"
        )
    G.add_node(
        "S-spine",
        kind="switch",
        tier=2,
        plane=0,
        rail=-1,
        ports=40,
        guid="0x9",
        description="MF0;spine",
    )
    for h in range(4):
        for p in (1, 2):
            nic = f"host{h}/mlx5_0/p{p}"
            G.add_node(
                nic,
                kind="nic",
                node=f"host{h}",
                index=p,
                guid=f"0x{h}{p}",
                description=f"host{h} mlx5_0",
            )
            G.add_edge(
                nic, f"S-leaf{h // 2}", capacity=LINK_Bps, links=1, kind="endpoint", speed="4xNDR"
            )
    check_schema(G)
    return G


def markers_by_row(data: FabricData) -> Counter[str]:
    labels = dict(data.rows)
    out: Counter[str] = Counter()
    for ms in data.markers:
        out[labels[ms.y[0]]] += len(ms.ids)
    return out


def member_sums(data: FabricData, kind: str) -> Counter[str]:
    """Sum of the devices the markers of ``kind`` (e.g. ``leaf group``) stand for, by kind."""
    out: Counter[str] = Counter()
    for ms in data.markers:
        if ms.kind == kind:
            for m in ms.members:
                out.update(m)
    return out


def edges_of(data: FabricData, kind: str | None = None) -> list[tuple[str, str, int, float, str]]:
    """Every segment as (u, v, links, capacity_Bps, hover)."""
    return [
        (u, v, n, cap, hover)
        for es in data.edges
        if kind is None or es.kind == kind
        for (u, v), n, cap, hover in zip(es.pairs, es.links, es.capacity_Bps, es.hover, strict=True)
    ]
