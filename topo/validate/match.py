"""Match a fabric as built (an imported dump) to its design: hosts, NICs, then switches.

The design names every device; a dump names switches by their node descriptions and CAs by
``<host> <CA name>``. :func:`match_fabric` pairs them in three steps (docs/validate.md):

1. **Servers**: a design server ``n`` is the dump host of the same name (``node<n>`` for the
   builders' integer ids); the hosts and servers left over pair in natural order of their
   names.
2. **NICs**: NIC ``j`` of a host is the host's CA whose name ends in the number ``j``
   (``mlx5_3`` is NIC 3) when every CA of the host carries a distinct number, each one of the
   host's NICs; otherwise the host's CA ports in natural order. In a server of several hosts
   (trays, ``host``) this holds tray by tray (the dump's tray is the host part of the CA's
   name), trays of other names pairing in natural order.
3. **Switches**: by name where the dump's name is a design switch's; the others by structure,
   tier by tier: a dump switch votes for the design leaf its hosts' NICs are cabled to in the
   design (leaves by their hosts), then for the design switch its matched neighbours are
   cabled to in the design (spines by their leaves, cores by their spines), each vote weighted
   by the cables. A dump switch whose best-supported free design switch is unique takes it;
   when none is, one tie is broken (the highest tier first, then natural order of the dump's
   names, each taking the first of its tied design switches) and the votes are counted
   again. Breaking ties top down keeps equivalent switches consistent: in a three-layer tree,
   a core pinned fixes which spine of every pod is which before any of those is guessed.

What is left unmatched is a missing device (design side) or an extra one (dump side).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Hashable
from dataclasses import dataclass, field

import networkx as nx

from topo.fabric import SWITCH_KINDS, natural_key, servers

_TRAILING_NUMBER = re.compile(r"(\d+)\D*$")


@dataclass(frozen=True)
class Match:
    """Which device of the dump is which device of the design.

    Attributes
    ----------
    to_dump : dict of str to str
        Design vertex (NIC or switch) -> dump vertex.
    hosts : dict
        Design server id -> dump host name.
    by_name, by_structure : int
        Switches matched by their names, and by their cabling.
    """

    to_dump: dict[str, str]
    hosts: dict[Hashable, str]
    by_name: int = 0
    by_structure: int = 0
    to_design: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "to_design", {b: a for a, b in self.to_dump.items()})


def host_label(node: Hashable) -> str:
    """How a design server is named as a host: ``node<n>`` for an integer id, else the id.

    Examples
    --------
    >>> host_label(3), host_label("gpu-a17")
    ('node3', 'gpu-a17')
    """
    return f"node{node}" if isinstance(node, int) else str(node)


def match_fabric(design: nx.Graph, dump: nx.Graph) -> Match:
    """Pair the devices of ``dump`` (as built) with those of ``design``.

    Parameters
    ----------
    design : networkx.Graph
        The designed fabric (built, with servers).
    dump : networkx.Graph
        The fabric as discovered (:func:`topo.formats.import_ibnetdiscover`, with or without
        hosts): its NICs carry their host in ``node``.

    Returns
    -------
    Match
        The pairs; see the module docstring for the rules.
    """
    hosts = _match_hosts(design, dump)
    to_dump = _match_nics(design, dump, hosts)
    by_name = _match_switches_by_name(design, dump, to_dump)
    before = len(to_dump)
    _match_switches_by_structure(design, dump, to_dump)
    return Match(to_dump=to_dump, hosts=hosts, by_name=by_name, by_structure=len(to_dump) - before)


def _dump_hosts(dump: nx.Graph) -> dict[str, list[str]]:
    by: dict[str, list[str]] = defaultdict(list)
    for v, d in dump.nodes(data=True):
        if d["kind"] == "nic":
            by[str(d["node"])].append(v)
    return by


def _match_hosts(design: nx.Graph, dump: nx.Graph) -> dict[Hashable, str]:
    wanted = {n: host_label(n) for n, vs in servers(design).items()}
    have = set(_dump_hosts(dump))
    hosts = {n: h for n, h in wanted.items() if h in have}
    left_design = [n for n in wanted if n not in hosts]
    left_dump = sorted(have - set(hosts.values()), key=natural_key)
    hosts.update(zip(left_design, left_dump, strict=False))
    return hosts


def _match_nics(design: nx.Graph, dump: nx.Graph, hosts: dict[Hashable, str]) -> dict[str, str]:
    """Design NIC -> dump NIC, host by host (tray by tray in a server of several hosts)."""
    by_host = _dump_hosts(dump)
    numbering = _numbering(dump)
    to_dump: dict[str, str] = {}
    for n, vs in servers(design).items():
        if n not in hosts:
            continue
        ours: dict[str, list[str]] = defaultdict(list)
        for v in sorted(vs, key=lambda v: natural_key(design.nodes[v].get("index", 0))):
            if design.nodes[v]["kind"] == "nic":
                ours[str(design.nodes[v].get("host", ""))].append(v)
        trays = len(ours) > 1 or "" not in ours
        theirs: dict[str, list[str]] = defaultdict(list)
        for v in sorted(by_host[hosts[n]], key=natural_key):
            theirs[str(v).split("/")[0] if trays else ""].append(v)
        for tray, nics in _pair_trays(ours, theirs):
            to_dump.update(_match_tray(nics, theirs[tray], numbering))
    return to_dump


def _numbering(dump: nx.Graph) -> dict[str, list[int]]:
    """CA name prefix -> the numbers the dump's CAs of that prefix use, in order
    (``mlx5_`` -> ``[0, 1, 4, 5]`` on GB200 trays)."""
    used: dict[str, set[int]] = defaultdict(set)
    for v, d in dump.nodes(data=True):
        label = _ca_label(v) if d["kind"] == "nic" else None
        if label is not None:
            used[label[0]].add(label[1])
    return {p: sorted(ks) for p, ks in used.items()}


def _pair_trays(
    ours: dict[str, list[str]], theirs: dict[str, list[str]]
) -> list[tuple[str, list[str]]]:
    """(dump tray, the design tray's NICs): a design tray is the dump's of the same name, the
    others pair in natural order of their names (a server of one host is one tray ``""``)."""
    named = [(t, ours[t]) for t in ours if t in theirs]
    left = sorted(set(theirs) - set(ours), key=natural_key)
    rest = [ours[t] for t in sorted(ours, key=natural_key) if t not in theirs]
    return named + list(zip(left, rest, strict=False))


def _match_tray(
    nics: list[str], theirs: list[str], numbering: dict[str, list[int]]
) -> list[tuple[str, str]]:
    """Design NIC ``j`` of a host (by index) is the dump CA whose name ends in ``j`` when every
    CA of the host carries a distinct number, each one of the design's; else, when the dump's
    CAs of that name use as many numbers as the host has NICs (a GB200 tray's ``mlx5_0, 1, 4,
    5``), the CA whose number is the ``j``-th of those; otherwise the CA ports in natural
    order."""
    labels = [_ca_label(v) for v in theirs]
    if None in labels or len({lab[1] for lab in labels if lab}) != len(labels):
        return list(zip(nics, theirs, strict=False))
    numbers = [lab[1] for lab in labels if lab]
    if all(0 <= k < len(nics) for k in numbers):
        return [(nics[k], v) for k, v in zip(numbers, theirs, strict=True)]
    prefixes = {lab[0] for lab in labels if lab}
    if len(prefixes) == 1 and len(numbering[next(iter(prefixes))]) == len(nics):
        order = numbering[next(iter(prefixes))]
        return [(nics[order.index(k)], v) for k, v in zip(numbers, theirs, strict=True)]
    return list(zip(nics, theirs, strict=False))


def _ca_label(v: str) -> tuple[str, int] | None:
    """The CA name's prefix and the number it ends in (``node3/mlx5_2/p1`` -> ``("mlx5_",
    2)``), port 1 only."""
    parts = str(v).split("/")
    if len(parts) < 3 or parts[-1] != "p1":
        return None
    m = _TRAILING_NUMBER.search(parts[-2])
    return (parts[-2][: m.start(1)], int(m[1])) if m else None


def _switches(G: nx.Graph) -> list[str]:
    return [v for v, k in G.nodes(data="kind") if k in SWITCH_KINDS]


def _match_switches_by_name(design: nx.Graph, dump: nx.Graph, to_dump: dict[str, str]) -> int:
    ours = set(_switches(design))
    hits = [v for v in _switches(dump) if v in ours]
    to_dump.update((v, v) for v in hits)
    return len(hits)


def _match_switches_by_structure(design: nx.Graph, dump: nx.Graph, to_dump: dict[str, str]) -> None:
    """Vote; take every dump switch whose best design switch is unique; when none is, break one
    tie (the highest tier first, then natural order of the dump's names); repeat. Votes are
    counted again only for the switches an assignment can change: the neighbours of the dump
    switch just matched, and those that had the design switch just taken among their best."""
    to_design = {b: a for a, b in to_dump.items()}
    best: dict[str, tuple[int, list[str]]] = {}
    for s in _switches(dump):
        if s not in to_design:
            _count(design, dump, to_dump, to_design, s, best)
    while best:
        unique = sorted(
            ((n, s, xs[0]) for s, (n, xs) in best.items() if len(xs) == 1),
            key=lambda t: (-t[0], natural_key(t[1])),
        )
        pairs: dict[str, str] = {}
        for _, s, x in unique:
            if x not in pairs.values():
                pairs[s] = x
        if not pairs:
            s = min(best, key=lambda s: (-int(dump.nodes[s].get("tier", 0)), natural_key(s)))
            pairs[s] = best[s][1][0]
        taken = set(pairs.values())
        affected = {
            t for s in pairs for t in dump.adj[s] if t in best or _is_free(dump, t, to_design)
        }
        affected |= {t for t, (_, xs) in best.items() if taken & set(xs)}
        for s, x in pairs.items():
            to_dump[x] = s
            to_design[s] = x
            best.pop(s, None)
        for t in affected - set(pairs):
            _count(design, dump, to_dump, to_design, t, best)


def _is_free(dump: nx.Graph, t: str, to_design: dict[str, str]) -> bool:
    return dump.nodes[t]["kind"] in SWITCH_KINDS and t not in to_design


def _count(
    design: nx.Graph,
    dump: nx.Graph,
    to_dump: dict[str, str],
    to_design: dict[str, str],
    s: str,
    best: dict[str, tuple[int, list[str]]],
) -> None:
    """Set ``best[s]`` to (its best vote, the free design switches with it, natural order), or
    drop it when nothing votes; a vote per cable from a matched neighbour to a free design
    switch cabled to its match."""
    votes: Counter[str] = Counter()
    for t, d in dump.adj[s].items():
        ours = to_design.get(t)
        if ours is None:
            continue
        for x, e in design.adj[ours].items():
            if x not in to_dump and design.nodes[x]["kind"] in SWITCH_KINDS:
                votes[x] += min(int(d["links"]), int(e["links"]))
    if not votes:
        best.pop(s, None)
        return
    top = max(votes.values())
    best[s] = (top, sorted((x for x, n in votes.items() if n == top), key=natural_key))
