"""Server contraction: the traffic sources and sinks of the flow problems.

A server (its GPUs, NVSwitch and NICs) becomes one :class:`ContractedServer` joined to the
switches its NICs reach, each NIC counting as the tighter of its cable and its links
into the server (PCIe).
On a fabric without GPUs (an imported dump without a host model) every NIC cabled to a switch
is a host of its own, of weight 1 (an *endpoint*). A server without GPUs on a fabric with GPUs
(a storage host of an import with ``compute_host_regex``) is left out unless a caller keeps it
as a terminal of its demand: then it is a vertex of weight 0 whose NICs count their cables.
Why the contraction is a relaxation, and when it is exact, is in :mod:`topo.flow.door` and
``docs/bandwidth.md``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Hashable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import networkx as nx

from topo.errors import InfeasibleError
from topo.fabric import (
    SWITCH_KINDS,
    named_servers,
    natural_key,
    natural_sorted_groups,
    switch_components,
    terminal_kind,
)

InnerSignature = tuple[tuple[tuple[str, int], tuple[str, int], float], ...]
"""The inside of a server without its name: ``((kind, index), (kind, index), capacity)`` per
link, sorted."""


@dataclass(frozen=True)
class ContractedServer:
    """A server contracted to one vertex: a traffic source and sink joined to the switches its
    NICs reach (on a fabric without GPUs, one endpoint). Not a Slurm host
    (:func:`topo.fabric.hosts`): a contracted server is the flow problems' vertex.

    Attributes
    ----------
    id : hashable
        The server's ``node`` id, or the endpoint's vertex name on a fabric without GPUs.
    weight : int
        Terminals it holds: its GPUs, 1 for an endpoint, 0 for a server without GPUs kept as
        a demand's terminal (a storage host; ``contract_servers(keep=...)``).
    attach : dict of str to float
        Switch -> capacity (B/s per direction) of this host's cables to it, each NIC counted
        as the tighter of its cable and its PCIe side.
    nics : dict of str to list of str
        Switch -> the host's NIC vertices cabled to it.
    members : list of str
        The host's vertices (GPUs, NICs, NVSwitch).
    inner_sig : InnerSignature
        The shape of the server's inside (:func:`inner_signature`), for class grouping.
    host_bound : frozenset of str
        NICs whose PCIe side is below their cable.
    """

    id: Hashable
    weight: int
    attach: dict[str, float]
    nics: dict[str, list[str]]
    members: list[str]
    inner_sig: InnerSignature = ()
    host_bound: frozenset[str] = frozenset()

    def scoped(self, scope: set[str]) -> Iterable[tuple[str, float]]:
        """The host's attachments ``(switch, B/s)`` to the switches in ``scope``."""
        return ((s, c) for s, c in self.attach.items() if s in scope)

    @cached_property
    def sorted_attach(self) -> tuple[tuple[str, float], ...]:
        """Its attachments ``(switch, B/s)``, sorted (kept: each reduction groups by them);
        switch ids of mixed types (integer ids in node-link JSON) sorted by their text."""
        items = list(self.attach.items())
        try:
            return tuple(sorted(items))
        except TypeError:
            return tuple(sorted(items, key=lambda a: str(a[0])))

    @cached_property
    def cabled_Bps(self) -> float:
        """Its attachments' capacity (B/s per direction): ``sum(attach.values())``, summed in
        their order (kept: many cuts of many trials read it)."""
        return sum(self.attach.values())

    def cabled_outside_Bps(self, switch: str) -> float:
        """Its attachments' capacity to switches other than ``switch`` (B/s per direction),
        summed in their order (kept per switch)."""
        seen = self._outside
        if switch not in seen:
            seen[switch] = sum(c for s, c in self.attach.items() if s != switch)
        return seen[switch]

    @cached_property
    def _outside(self) -> dict[str, float]:
        return {}


@dataclass(frozen=True)
class SolveContext:
    """One all-to-all solve: the fabric, its contracted servers, what its terminals are, when
    the solve started, and what has been said about it so far.

    Frozen: a step that has something to say returns its notes, and the caller makes the next
    context with :meth:`noted`; nothing is appended in place.

    Attributes
    ----------
    G : networkx.Graph
        The fabric (not modified).
    servers : list of ContractedServer
        Its contracted servers (:func:`contract_servers`), checked
        (:func:`check_terminals`).
    terminal : {"gpu", "endpoint"}
        What the terminals are.
    t0 : float
        ``time.perf_counter()`` at the start of the solve (s), for ``solve_seconds``.
    notes : tuple of str
        What was reduced and how, in order: the result's ``reductions``.
    """

    G: nx.Graph = field(repr=False)
    servers: list[ContractedServer] = field(repr=False)
    terminal: str
    t0: float
    notes: tuple[str, ...] = ()

    def noted(self, *notes: str) -> SolveContext:
        """This context with ``notes`` said after its own."""
        return replace(self, notes=(*self.notes, *notes)) if notes else self


def contract_servers(
    G: nx.Graph, keep: Collection[Hashable] = ()
) -> tuple[list[ContractedServer], str]:
    """Contract every server to one vertex (when the fabric has GPUs), or take the endpoints as
    they are.

    Parameters
    ----------
    G : networkx.Graph
        A fabric (:mod:`topo.fabric`).
    keep : collection of hashable
        Server ids kept even when they have no GPUs: the terminals of a demand that reads from
        or writes to storage hosts (hosts with NICs and no GPUs, as ``topo import
        --compute-host-regex`` leaves the hosts it does not match). Such a server has weight
        0, no inside (``inner_sig`` empty) and each of its NICs counts its cable in full: it
        has no PCIe or GPU side to bound it. Ids that are not servers, or servers with GPUs,
        change nothing. Ignored on a fabric without GPUs (every NIC is a terminal there).

    Returns
    -------
    (list of ContractedServer, str)
        The hosts (servers in natural order of their id; endpoints in the graph's order) and
        the terminal: ``"gpu"`` or ``"endpoint"``. Servers without a GPU are left out unless
        in ``keep``; a server with no NIC cabled to a switch is kept with an empty ``attach``.

    Examples
    --------
    >>> from topo.builders import build
    >>> G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    >>> hs, terminal = contract_servers(G)
    >>> len(hs), terminal, hs[0].weight, hs[0].attach
    (8, 'gpu', 1, {'leaf0': 50000000000.0})
    """
    if terminal_kind(G) == "gpu":
        index = ServerIndex.of(G)
        kept = set(keep)
        out = index.contract(G, index.members)
        return [h for h in out if h.weight > 0 or h.id in kept], "gpu"
    kind = dict(G.nodes(data="kind"))
    found = []
    for v, k in kind.items():
        if k != "nic":
            continue
        attach: dict[str, float] = {}
        nics: dict[str, list[str]] = defaultdict(list)
        for s, e in G.adj[v].items():
            if kind[s] in SWITCH_KINDS:
                attach[s] = attach.get(s, 0.0) + float(e["capacity"])
                nics[s].append(v)
        if attach:
            found.append(ContractedServer(id=v, weight=1, attach=attach, nics=nics, members=[v]))
    return found, "endpoint"


@dataclass(frozen=True)
class ServerIndex:
    """What server contraction reads of every vertex of a fabric with GPUs, read once: a
    fabric whose cables change (failures) keeps it, and its changed servers are contracted
    again alone (:meth:`contract`).

    Attributes
    ----------
    is_switch : set
        The switches.
    label : dict
        Every other vertex -> ``(kind, index)`` (index -1 where it has none).
    members : dict
        Server id -> its vertices, servers in natural order (:func:`topo.fabric.servers`).
    """

    is_switch: set[Hashable]
    label: dict[Hashable, tuple[str, int]]
    members: dict[Hashable, list[str]]

    @cached_property
    def server_of(self) -> dict[Hashable, Hashable]:
        """Every non-switch vertex -> its server id."""
        return {v: sid for sid, m in self.members.items() for v in m}

    @staticmethod
    def of(G: nx.Graph) -> ServerIndex:
        """The index of fabric ``G`` (one pass over its vertices).

        Parameters
        ----------
        G : networkx.Graph
            A fabric with GPUs.

        Returns
        -------
        ServerIndex
        """
        # One pass over the raw attribute dicts: the switches, the others' labels, and the
        # servers' vertices as topo.fabric.servers groups them (then put in natural order).
        is_switch: set[Hashable] = set()
        label: dict[Hashable, tuple[str, int]] = {}
        by: dict[Hashable, list[str]] = defaultdict(list)
        switch_kinds = SWITCH_KINDS
        for v, d in G._node.items():
            kind = d["kind"]
            if kind in switch_kinds:
                is_switch.add(v)
            else:
                label[v] = (str(kind), int(d.get("index", -1)))
                by[d["node"]].append(v)
        return ServerIndex(is_switch, label, natural_sorted_groups(by))

    def contract(self, G: nx.Graph, ids: Iterable[Hashable]) -> list[ContractedServer]:
        """The servers ``ids`` of ``G`` contracted, in the order given, each as
        :func:`contract_servers` contracts it (GPU-less ones included).

        Parameters
        ----------
        G : networkx.Graph
            The indexed fabric, or one with the same vertices and attributes whose cables
            differ (a damaged copy).
        ids : iterable of hashable
            Server ids of the index.

        Returns
        -------
        list of ContractedServer
        """
        adj = G._adj  # the raw adjacency dicts: this visits every edge of these servers
        return [
            _server_host(adj, self.is_switch, self.label, sid, self.members[sid]) for sid in ids
        ]


def _server_host(
    adj: dict[Any, dict[Any, dict[str, Any]]],
    is_switch: set[Any],
    label: dict[Hashable, tuple[str, int]],
    sid: Hashable,
    members: list[str],
) -> ContractedServer:
    """One server contracted: its attachments, NICs and inside (``adj``: the raw adjacency
    dicts; ``is_switch``: the switches; ``label``: each vertex's ``(kind, index)``)."""
    attach: dict[str, float] = {}
    nics: dict[str, list[str]] = defaultdict(list)
    bound: set[str] = set()
    own = {v: label[v] for v in members}
    edges: list[tuple[tuple[str, int], tuple[str, int], float]] = []
    kinds = [lab[0] for lab in own.values()]
    gpuless = "gpu" not in kinds
    for v in members:
        inner = 0.0
        cables = []
        lv = own[v]
        for u, e in adj[v].items():
            c = float(e["capacity"])
            lu = own.get(u)
            if lu is not None:
                inner += c
                if lv < lu:  # each internal link once, from its lower end
                    edges.append((lv, lu, c))
            elif u in is_switch:
                cables.append((u, c))
            else:
                inner += c
        # What a NIC passes is bounded by its cable and by its links into the server
        # (PCIe): the tighter of the two keeps the contraction a tight relaxation. A server
        # without GPUs (a storage host) is its NICs: its traffic starts and ends there.
        for s, cable in cables:
            attach[s] = attach.get(s, 0.0) + (cable if gpuless else min(cable, inner))
            nics[s].append(v)
            if inner < cable and not gpuless:
                bound.add(v)
    edges.sort()
    return ContractedServer(
        id=sid,
        weight=kinds.count("gpu"),
        attach=attach,
        nics=nics,
        members=members,
        inner_sig=tuple(edges),
        host_bound=frozenset(bound),
    )


def inner_signature(G: nx.Graph, members: list[str]) -> InnerSignature:
    """The inside of a server, independent of its name: kinds, indices, capacities.

    Parameters
    ----------
    G : networkx.Graph
        A fabric.
    members : list of str
        The server's vertices.

    Returns
    -------
    InnerSignature
        One ``((kind, index), (kind, index), capacity in B/s)`` per internal link, sorted.
    """
    label = {v: (str(G.nodes[v]["kind"]), int(G.nodes[v].get("index", -1))) for v in members}
    edges = []
    for v in members:
        for u, e in G.adj[v].items():
            if u in label and label[v] < label[u]:
                edges.append((label[v], label[u], float(e["capacity"])))
    return tuple(sorted(edges))


def terminal_count(hosts: Iterable[ContractedServer]) -> int:
    """Terminals (GPUs or endpoints) of the hosts."""
    return sum(h.weight for h in hosts)


def check_terminals(
    G: nx.Graph, hosts: list[ContractedServer], terminal: str, *, connectivity: bool = True
) -> None:
    """Refuse an all-to-all whose rate is 0 by construction.

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    hosts : list of ContractedServer
        Its hosts (:func:`hosts`).
    terminal : {"gpu", "endpoint"}
        What the terminals are.
    connectivity : bool
        Also check that the terminals are connected (:func:`check_connected`); a caller that
        runs that check later, where it is still needed, passes False.

    Raises
    ------
    InfeasibleError
        A server with GPUs has no NIC cabled to a switch, fewer than two terminals, or the
        terminals lie in several disconnected parts of the fabric.
    """
    if terminal == "gpu":
        loose = [h.id for h in hosts if not h.attach]
        if loose:
            raise InfeasibleError(
                f"{named_servers(G, loose)} {'has' if len(loose) == 1 else 'have'} GPUs but "
                f"no NIC cabled to a switch: {'its' if len(loose) == 1 else 'their'} all-to-all "
                "rate is 0"
            )
    n = terminal_count(hosts)
    what = "GPUs" if terminal == "gpu" else "host endpoints"
    if n < 2:
        raise InfeasibleError(f"all-to-all needs at least two {what}; the fabric has {n}")
    if connectivity:
        check_connected(G, hosts, terminal)


def check_connected(
    G: nx.Graph,
    hosts: list[ContractedServer],
    terminal: str,
    *,
    connected: bool = False,
    comps: list[list[str]] | None = None,
) -> None:
    """Refuse terminals that lie in several disconnected parts of the fabric.

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    hosts : list of ContractedServer
        Its hosts (:func:`hosts`; not read: the parts are the graph's).
    terminal : {"gpu", "endpoint"}
        What the terminals are.
    connected : bool
        The caller knows ``G`` to be connected (a damaged copy of a connected fabric whose
        failed cables' ends are still joined): its parts are not searched.
    comps : list of list of str, optional
        :func:`topo.fabric.switch_components` ``(G)``, where the caller knows them.

    Raises
    ------
    InfeasibleError
        The parts of the fabric with terminals, and the smallest one's least vertex.
    """
    what = "GPUs" if terminal == "gpu" else "host endpoints"
    kind = "gpu" if terminal == "gpu" else "nic"
    parts = (
        []
        if connected
        else [c for c in nx.connected_components(G) if any(G.nodes[v]["kind"] == kind for v in c)]
    )
    if len(parts) > 1:
        example = min(parts, key=len)
        raise InfeasibleError(
            f"the fabric falls into {len(parts)} disconnected parts with {what} (the smallest "
            f"holds {min(map(str, example))}): the all-to-all rate is 0"
        )
    apart = hosts_apart(G, hosts, comps)
    if apart is not None:
        (a, pa), (b, pb) = sorted(apart, key=lambda x: natural_key(x[0].id))
        who = (
            named_servers(G, [a.id, b.id]) if terminal == "gpu" else f"endpoints {a.id} and {b.id}"
        )
        raise InfeasibleError(
            f"{who} share no plane: the first is cabled only to {pa}, the second only to "
            f"{pb}, and traffic does not cross planes through another host: the all-to-all "
            "rate is 0"
        )


def hosts_apart(
    G: nx.Graph, hosts: list[ContractedServer], comps: list[list[str]] | None = None
) -> tuple[tuple[ContractedServer, str], tuple[ContractedServer, str]] | None:
    """Two hosts cabled to no common switch component (plane), each with its planes named
    (their first switches), or None. ``comps``: :func:`topo.fabric.switch_components`
    ``(G)``, where the caller knows them.

    A flow between hosts runs host, switches, host: a host forwards nothing (its NICs and
    NVLink carry only its own GPUs' traffic; the LP's server contraction), so two hosts whose
    NICs reach disjoint sets of planes (a multi-plane server that lost the cables of all but
    one plane, another that lost that one) exchange nothing, though the graph, joined inside
    every intact server, is connected.
    """
    if comps is None:
        comps = switch_components(G)
    if len(comps) < 2:
        return None
    comp_of = {s: i for i, c in enumerate(comps) for s in c}
    by_set: dict[frozenset[int], ContractedServer] = {}
    for h in hosts:
        if h.attach:
            by_set.setdefault(frozenset(comp_of[s] for s in h.attach), h)
    sets = list(by_set)
    for i, x in enumerate(sets):
        for y in sets[i + 1 :]:
            if not x & y:
                return (by_set[x], _planes(comps, x)), (by_set[y], _planes(comps, y))
    return None


def _planes(comps: list[list[str]], which: frozenset[int]) -> str:
    """Switch components named by their first switch: ``the plane of p0/leaf0``."""
    return " and ".join(f"the plane of {comps[q][0]}" for q in sorted(which))


def attached(G: nx.Graph, v: Hashable) -> bool:
    """True if vertex ``v`` has a cable to a switch."""
    return any(G.nodes[u]["kind"] in SWITCH_KINDS for u in G.adj[v])
