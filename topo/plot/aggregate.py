"""The aggregated views of a large fabric: devices grouped into markers, cables summed.

A fabric with more vertices than ``max_devices`` is drawn aggregated: each leaf becomes one
marker standing for the leaf and every NIC and GPU attached to it (*leaf groups*), and the
switches of each higher tier are merged by plane or rail and by the part of the fabric they
serve (a pod of a three-layer fat tree, a plane of an MPFT). If even that has more than
``max_devices`` markers, the leaves are merged the same way (*tier groups*). Cables between
two groups become one line with the summed capacity and cable count; NVSwitches and NVLink
stay inside servers and are not drawn.
"""

from __future__ import annotations

import os
import re
from collections import Counter, defaultdict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import networkx as nx

from topo.fabric import SWITCH_KINDS, natural_key, tier_name
from topo.plot.layout import Item, Link
from topo.plot.text import PLURALS, cables, members_text, rate

__all__ = ["Aggregation", "aggregate", "components"]


@dataclass(frozen=True)
class Aggregation:
    """An aggregated view: its markers, its lines, what a marker stands for, and who is where.

    Attributes
    ----------
    items : dict
        Group id -> :class:`~topo.plot.layout.Item` (its hover text, members and label).
    links : list of Link
        One per pair of groups and edge kind, cables and capacity (B/s) summed.
    note : str
        What one marker of each row stands for, and what is not drawn.
    marker_of : dict
        Vertex -> the id of the group marker it is drawn in; vertices not drawn (NVSwitches,
        GPUs and NICs without a switch) are left out.
    """

    items: dict[Hashable, Item]
    links: list[Link]
    note: str
    marker_of: dict[Hashable, str]


def aggregate(
    G: nx.Graph, block: Mapping[Hashable, int | None], *, merge_leaves: bool
) -> Aggregation:
    """Group the devices, sum the edges between groups, and describe what a marker stands for.

    Without ``merge_leaves`` every leaf is a group with the NICs cabled to it and the GPUs of
    those NICs; with it, and for every higher tier, switches are grouped by tier, plane or rail
    and the connected part of the fabric below and at their tier (a plane, a pod).

    Parameters
    ----------
    G : networkx.Graph
        A fabric following the schema of :mod:`topo.fabric`, with switches.
    block : Mapping[Hashable, int | None]
        The plane or rail of every vertex (:func:`topo.plot.layout.block_of`).
    merge_leaves : bool
        Merge the leaves too (tier groups) instead of one marker per leaf (leaf groups).

    Returns
    -------
    Aggregation
        The group markers and lines, the note, and the group of every drawn vertex.
    """
    tier = {v: int(d["tier"]) for v, d in G.nodes(data=True) if d["kind"] in SWITCH_KINDS}
    group, unattached = _group_map(G, block, tier, merge_leaves)
    sums, inside = _sum_edges(G, group)
    items = _group_items(G, group, block, tier)
    links = [
        Link(gu, gv, kind, int(acc[0]), float(acc[1]), int(acc[2]))
        for (gu, gv, kind), acc in sorted(sums.items())
    ]
    incident: dict[Hashable, list[Link]] = defaultdict(list)
    for lk in links:
        incident[lk.u].append(lk)
        incident[lk.v].append(lk)
    for gid, it in items.items():
        it.hover = _group_hover(it, gid, items, incident[gid], inside[str(gid)])
    return Aggregation(items, links, _describe(items, unattached, G), group)


def _group_map(
    G: nx.Graph,
    block: Mapping[Hashable, int | None],
    tier: Mapping[Hashable, int],
    merge_leaves: bool,
) -> tuple[dict[Hashable, str], int]:
    """The group id of every drawn vertex, and how many GPUs and NICs have no switch.

    A leaf is its own group ``str(leaf)`` (unless ``merge_leaves``); other switches are in
    group ``"{tier}|{block}|{component}"``. A NIC joins the group of the leaf it is cabled to
    (the first by name), a GPU that of its NIC.
    """
    top = max(tier.values(), default=1)
    comp_at: dict[int, dict[Hashable, str]] = {}
    for level in sorted({max(min(t, top), 2 if top >= 2 else 1) for t in tier.values()}):
        comp_at[level] = components(G, [s for s, t in tier.items() if t <= level])
    group: dict[Hashable, str] = {}
    for s, t in tier.items():
        if t == 1 and not merge_leaves:
            group[s] = str(s)
        else:
            level = max(t, 2) if top >= 2 else 1
            group[s] = f"{t}|{block[s]}|{comp_at[level][s]}"
    unattached = 0
    for v, d in G.nodes(data=True):
        if d["kind"] == "nic":
            leaves = [s for s in G[v] if tier.get(s) == 1]
            if leaves:
                group[v] = group[min(leaves, key=natural_key) if len(leaves) > 1 else leaves[0]]
            else:
                unattached += 1
    for v, d in G.nodes(data=True):
        if d["kind"] == "gpu":
            nics = [n for n in G[v] if n in group and G.nodes[n]["kind"] == "nic"]
            if nics:
                group[v] = group[min(nics, key=natural_key) if len(nics) > 1 else nics[0]]
            else:
                unattached += 1
    return group, unattached


def _sum_edges(
    G: nx.Graph, group: Mapping[Hashable, str]
) -> tuple[dict[tuple[str, str, str], list[float]], dict[str, dict[str, list[float]]]]:
    """Cables and capacity summed per (group, group, kind), and inside each group per kind."""
    sums: dict[tuple[str, str, str], list[float]] = {}
    inside: dict[str, dict[str, list[float]]] = defaultdict(dict)
    for u, v, e in G.edges(data=True):
        gu, gv = group.get(u), group.get(v)
        if gu is None or gv is None:
            continue
        if gu == gv:
            acc = inside[gu].setdefault(e["kind"], [0, 0.0])
        else:
            key = (gu, gv, e["kind"]) if gu < gv else (gv, gu, e["kind"])
            acc = sums.setdefault(key, [0, 0.0, 0])
            acc[2] += 1
        acc[0] += int(e["links"])
        acc[1] += float(e["capacity"])
    return sums, inside


def _group_items(
    G: nx.Graph,
    group: Mapping[Hashable, str],
    block: Mapping[Hashable, int | None],
    tier: Mapping[Hashable, int],
) -> dict[Hashable, Item]:
    """One item per group (its hover text is filled in later)."""
    members: dict[str, Counter[str]] = defaultdict(Counter)
    names: dict[str, list[Hashable]] = defaultdict(list)
    nodes: dict[str, set[Any]] = defaultdict(set)
    for v, g in group.items():
        d = G.nodes[v]
        members[g][d["kind"]] += 1
        if d["kind"] in SWITCH_KINDS:
            names[g].append(v)
        else:
            nodes[g].add(d["node"])
    items: dict[Hashable, Item] = {}
    for g, switches in names.items():
        t = tier[switches[0]]
        m = dict(members[g])
        m["nodes"] = len(nodes[g])
        items[g] = Item(
            row=2 + t,
            block=block[switches[0]] if len({block[s] for s in switches}) == 1 else None,
            sort_key=natural_key(min(switches, key=natural_key)),
            kind=f"{tier_name(t)} group",
            hover="",
            members=m,
            label=_group_label(switches, t),
        )
    return items


def components(G: nx.Graph, switches: list[Hashable]) -> dict[Hashable, str]:
    """Connected component of each switch in the subgraph of ``switches``, named by a member.

    Parameters
    ----------
    G : networkx.Graph
        A fabric.
    switches : list
        The switches to consider.

    Returns
    -------
    dict
        Switch -> the name of its component's first switch (natural order).
    """
    comp: dict[Hashable, str] = {}
    for c in nx.connected_components(G.subgraph(switches)):
        name = str(min(c, key=natural_key))
        for s in c:
            comp[s] = name
    return comp


def _group_label(switches: list[Hashable], t: int) -> str:
    if len(switches) == 1:
        return str(switches[0])
    prefix = re.sub(r"\d+$", "", os.path.commonprefix(sorted(str(s) for s in switches)))
    count = f"{len(switches):,} {PLURALS.get(tier_name(t), ('', f'{tier_name(t)} switches'))[1]}"
    return f"{prefix}* ({count})" if prefix else count


def _group_hover(
    it: Item,
    g: Hashable,
    items: Mapping[Hashable, Item],
    incident: list[Link],
    inside: Mapping[str, list[float]],
) -> str:
    """Hover text of a group: what it holds, its NIC cables, and its cables up and down."""
    lines = [f"<b>{it.label}</b>", members_text(it.members)]
    if "endpoint" in inside:
        n_links, cap = inside["endpoint"]
        lines.append(f"to its NICs: {cables(int(n_links))}, {rate(cap)}")
    sides: dict[str, list[float]] = {}
    for lk in incident:
        other = items[lk.v if lk.u == g else lk.u]
        side = "down" if other.row < it.row else "up" if other.row > it.row else "same tier"
        acc = sides.setdefault(side, [0, 0.0])
        acc[0] += lk.links
        acc[1] += lk.capacity_Bps
    for side in ("down", "up", "same tier"):
        if side in sides:
            lines.append(f"{side}: {cables(int(sides[side][0]))}, {rate(sides[side][1])}")
    if "fabric" in inside:
        n_links, cap = inside["fabric"]
        lines.append(f"cables inside the group: {cables(int(n_links))}, {rate(cap)}")
    return "<br>".join(lines)


def _describe(items: Mapping[Hashable, Item], unattached: int, G: nx.Graph) -> str:
    """What one marker of each tier stands for, e.g. ``each leaf marker: 1 leaf, 32 NICs ...``."""
    by_row: dict[int, list[Item]] = defaultdict(list)
    for it in items.values():
        by_row[it.row].append(it)
    parts = []
    for row in sorted(by_row):
        its = by_row[row]
        keys = sorted({k for it in its for k, n in it.members.items() if n})
        span = {
            k: (min(it.members.get(k, 0) for it in its), max(it.members.get(k, 0) for it in its))
            for k in keys
        }
        lo = {k: s[0] for k, s in span.items()}
        hi = {k: s[1] for k, s in span.items()}
        text = members_text(lo) if lo == hi else f"{members_text(lo)} to {members_text(hi)}"
        parts.append(f"each {tier_name(row - 2)} marker = {text}")
    if any(d["kind"] == "nvswitch" for _, d in G.nodes(data=True)):
        parts.append("NVSwitches and NVLink not drawn")
    if unattached:
        parts.append(f"{unattached:,} GPUs or NICs without a switch not drawn")
    return "; ".join(parts)
