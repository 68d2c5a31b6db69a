"""Dragonfly: groups of routers joined all to all inside, groups joined by global links.

Kim, Dally, Scott and Abts (2008): each router has ``p`` endpoint ports, ``a - 1`` local ports
(one to every other router of its group) and ``h`` global ports; radix ``k = p + a - 1 + h``.
A group has ``a·h`` global ports, so at most ``g = a·h + 1`` groups are joined with one global
link between every pair; the balanced choice is ``a = 2p = 2h``.

Sizes for ``g`` groups: ``a·g`` routers, ``a·p·g`` endpoints, ``g·a(a-1)/2`` local links and
``g·a·h/2`` global links when every global port is used (with fewer than ``a·h + 1`` groups the
spare ports give some pairs of groups a second link, as Kim et al. suggest for smaller
systems; when ``g·a·h`` is odd one port stays free).

Global-link arrangements (Camarero, Vallejo and Beivide, ACM TACO 2014, name them): a group
lists its global links to the other groups in an order and gives link ``j`` to router
``j // h``:

- ``consecutive`` (also "absolute"): the other groups in increasing number, so router ``r`` of
  group ``i`` reaches groups ``r·h ..`` (skipping ``i``);
- ``palmtree``: by distance going down, group ``i``'s link ``j`` goes to group ``i - j - 1``
  (mod ``g``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import networkx as nx

from topo.builders._common import (
    add_endpoints,
    add_servers,
    add_switches,
    check_gpus,
    fabric_spec,
    new_graph,
    nic,
)
from topo.errors import SpecError
from topo.spec import ARRANGEMENTS, FabricSpec, ServerSpec, SwitchSpec, as_int

__all__ = [
    "dragonfly",
    "dragonfly_design",
    "dragonfly_sizes",
    "ARRANGEMENTS",
    "global_link_count",
    "global_links",
]


@dataclass(frozen=True)
class DragonflySizes:
    """Counts of a Dragonfly from the closed forms (Kim et al., ISCA 2008, §3).

    Attributes
    ----------
    routers_per_group, endpoints_per_router, global_ports, groups : int
        ``a``, ``p``, ``h``, ``g``.
    radix : int
        Ports a router uses: ``p + a - 1 + h``.
    max_groups : int
        ``a·h + 1``.
    routers, endpoints, local_links, global_links, links : int
        ``a·g``, ``a·p·g``, ``g·a(a-1)/2``, ``floor(g·a·h/2)`` (0 with one group), their sum.
    """

    routers_per_group: int
    endpoints_per_router: int
    global_ports: int
    groups: int
    radix: int
    max_groups: int
    routers: int
    endpoints: int
    local_links: int
    global_links: int
    links: int


def dragonfly_sizes(
    routers_per_group: int, endpoints_per_router: int, global_ports: int, groups: int | None = None
) -> DragonflySizes:
    """Counts of the Dragonfly ``(a, p, h, g)`` from the closed forms.

    Parameters
    ----------
    routers_per_group, endpoints_per_router, global_ports : int
        ``a``, ``p``, ``h`` (all at least 1).
    groups : int or None
        ``g``, from 1 to ``a·h + 1``; None takes ``a·h + 1``.

    Returns
    -------
    DragonflySizes

    Raises
    ------
    SpecError
        If a parameter is below 1 or ``g`` exceeds ``a·h + 1``.

    Examples
    --------
    >>> s = dragonfly_sizes(32, 16, 16, 511)     # DeepSeek-V3 report, Table 3
    >>> s.routers, s.endpoints, s.links, s.radix
    (16352, 261632, 384272, 63)

    References
    ----------
    J. Kim, W. J. Dally, S. Scott, D. Abts, "Technology-Driven, Highly-Scalable Dragonfly
    Topology", ISCA 2008, §3 (``k = p + a + h - 1``, ``N = a·p·(a·h + 1)``, ``a = 2p = 2h``).
    """
    a = as_int("routers_per_group", routers_per_group)
    p = as_int("endpoints_per_router", endpoints_per_router)
    h = as_int("global_ports", global_ports)
    for name, v in (("routers_per_group", a), ("endpoints_per_router", p), ("global_ports", h)):
        if v < 1:
            raise SpecError(f"{name} must be at least 1, got {v}", param=name)
    top = a * h + 1
    g = top if groups is None else as_int("groups", groups)
    if not 1 <= g <= top:
        raise SpecError(
            f"groups must be from 1 to a*h + 1 = {top} (each group has {a * h} global ports), "
            f"got {g}",
            param="groups",
        )
    local = g * a * (a - 1) // 2
    glob = 0 if g == 1 else g * a * h // 2
    return DragonflySizes(
        routers_per_group=a,
        endpoints_per_router=p,
        global_ports=h,
        groups=g,
        radix=p + a - 1 + h,
        max_groups=top,
        routers=a * g,
        endpoints=a * p * g,
        local_links=local,
        global_links=glob,
        links=local + glob,
    )


def balanced(switch_ports: int) -> tuple[int, int, int]:
    """The balanced ``(a, p, h) = (2p, p, p)`` with the largest ``p`` such that
    ``4p - 1 <= switch_ports`` (Kim et al. 2008, §3.1). ``64`` -> ``(32, 16, 16)``."""
    p = (switch_ports + 1) // 4
    return 2 * p, p, p


def global_links(
    a: int, h: int, g: int, arrangement: str = "consecutive"
) -> list[tuple[int, int, int, int]]:
    """The global links of a Dragonfly as ``(group, router, group', router')`` tuples.

    Every pair of groups gets ``m = floor(a·h/(g-1))`` links; the ``r = a·h - m(g-1)`` spare
    ports of each group are paired by distance (groups ``i`` and ``i + d`` for ``d = 1 ..
    r/2``, and ``i`` and ``i + g/2`` for an odd ``r`` with ``g`` even). Each group then orders
    its links by the arrangement and gives link ``j`` to router ``j // h``.

    Raises
    ------
    SpecError
        Unknown arrangement.
    """
    _check_arrangement(arrangement)
    if g < 2:
        return []
    ports = a * h
    m, r = divmod(ports, g - 1)
    pairs: list[tuple[int, int]] = []
    for i in range(g):
        for t in range(i + 1, g):
            pairs += [(i, t)] * m
    for d in range(1, r // 2 + 1):
        pairs += [(i, (i + d) % g) for i in range(g)]
    if r % 2 and g % 2 == 0:
        pairs += [(i, i + g // 2) for i in range(g // 2)]
    peers: list[list[int]] = [[] for _ in range(g)]
    for i, t in pairs:
        peers[i].append(t)
        peers[t].append(i)

    slot: dict[tuple[int, int], list[int]] = {}
    for i in range(g):
        if arrangement == "consecutive":
            order = sorted(peers[i])
        else:
            order = sorted(peers[i], key=functools.partial(_palmtree_slot, i, g))
        for j, t in enumerate(order):
            slot.setdefault((i, t), []).append(j // h)
    out = []
    used: dict[tuple[int, int], int] = {}
    for i, t in pairs:
        n = used.get((i, t), 0)
        used[(i, t)] = n + 1
        out.append((i, slot[(i, t)][n], t, slot[(t, i)][n]))
    return out


def global_link_count(a: int, h: int, g: int) -> int:
    """The number of global links :func:`global_links` places, without listing them.

    Parameters
    ----------
    a, h, g : int
        Routers per group, global ports per router, groups (``1 <= g <= a·h + 1``).

    Returns
    -------
    int
        ``m·g(g-1)/2 + g·floor(r/2) + (g/2 if r odd and g even)``, with ``a·h = m(g-1) + r``:
        ``g·a·h/2`` when every global port is used; one port per group stays free when ``r``
        and ``g`` are both odd (0 with one group).

    Examples
    --------
    >>> global_link_count(32, 16, 511), global_link_count(3, 1, 3)
    (130816, 3)

    References
    ----------
    J. Kim et al., ISCA 2008, §3 (``g·a·h/2`` global links at ``g = a·h + 1``); the pairing
    rule of :func:`global_links`.
    """
    if g < 2:
        return 0
    m, r = divmod(a * h, g - 1)
    return m * g * (g - 1) // 2 + g * (r // 2) + (g // 2 if r % 2 and g % 2 == 0 else 0)


def dragonfly_design(spec: FabricSpec) -> tuple[DragonflySizes, int, str]:
    """The Dragonfly :func:`dragonfly` builds for ``spec``: its sizes (``a``, ``p``, ``h`` and
    the groups built), the most GPUs it holds and the clause stating that ceiling.

    Parameters
    ----------
    spec : FabricSpec
        A ``dragonfly`` spec; without ``groups``, ``gpus`` picks the fewest groups that hold
        them.

    Returns
    -------
    tuple of (DragonflySizes, int, str)

    Raises
    ------
    SpecError
        A router needing more than ``switch_ports`` ports, ``groups`` above ``a·h + 1``.
    """
    return _choose(spec)


def _check_arrangement(arrangement: str) -> None:
    if arrangement not in ARRANGEMENTS:
        raise SpecError(
            f"unknown arrangement {arrangement!r}; choose one of {', '.join(ARRANGEMENTS)}",
            param="arrangement",
            names=(),
        )


def _palmtree_slot(i: int, g: int, t: int) -> int:
    """Position of group ``t`` in group ``i``'s palmtree order: ``(i - t - 1) mod g``."""
    return (i - t - 1) % g


def _choose(spec: FabricSpec) -> tuple[DragonflySizes, int, str]:
    """(sizes, max GPUs, limit text) of the Dragonfly of ``spec``; the spec has checked that
    the ``a``, ``p``, ``h`` given are whole and at least 1."""
    k = spec.switch.ports
    a, p, h, groups = (
        spec.routers_per_group,
        spec.endpoints_per_router,
        spec.global_ports,
        spec.groups,
    )
    if h is None:
        h = p if p is not None else balanced(k)[2]
    if p is None:
        p = h
    if a is None:
        a = 2 * h
    full = dragonfly_sizes(a, p, h, groups)
    if full.radix > k:
        raise SpecError(
            f"a Dragonfly router with p = {p}, a = {a}, h = {h} needs p + a - 1 + h = "
            f"{full.radix} ports, more than switch_ports ({k})",
            param="switch_ports",
        )
    nodes = full.endpoints // spec.server.nics
    top = nodes * spec.server.gpus
    text = (
        f"a Dragonfly of {k}-port routers (a = {a}, p = {p}, h = {h}) with {full.groups} groups "
        f"holds at most {full.endpoints} endpoints, {nodes} nodes of {spec.server.gpus} GPUs: "
        f"{top} GPUs" + ("" if groups is not None else f" (a*h + 1 = {full.max_groups} groups)")
    )
    if spec.gpus is not None and groups is None and spec.gpus <= top:
        need = -(-spec.gpus // spec.server.gpus) * spec.server.nics
        full = dragonfly_sizes(a, p, h, max(1, -(-need // (full.routers_per_group * p))))
    return full, top, text


def dragonfly_limit(spec: FabricSpec) -> tuple[int, str]:
    """The most GPUs the Dragonfly of ``spec`` holds (whole servers, ``groups`` or
    ``a·h + 1`` groups), and the sentence that states the ceiling.

    Parameters
    ----------
    spec : FabricSpec
        The switch, server and family parameters (its ``gpus`` is not read).

    Returns
    -------
    tuple of (int, str)
        The most GPUs (whole servers; 0 if not one server fits), and the clause
        stating the ceiling (which the errors of the builder quote).
    """
    _, top, text = _choose(spec)
    return top, text


def dragonfly(
    switch: SwitchSpec | None = None,
    server: ServerSpec | None = None,
    *,
    gpus: int | None = None,
    oversubscription: float = 1.0,
    routers_per_group: int | None = None,
    endpoints_per_router: int | None = None,
    global_ports: int | None = None,
    groups: int | None = None,
    arrangement: str = "consecutive",
) -> nx.Graph:
    """Build a Dragonfly of GPU servers: family ``dragonfly``.

    Routers are switches of kind ``leaf`` (tier 1): every router takes endpoints, and topo's
    tiers count switches from the hosts up (as imported fabrics do). Router ``r`` of group
    ``i`` is ``g{i}/r{r}``; the routers of a group are joined all to all by one cable each
    (local links), the groups by global links placed by ``arrangement`` (see
    :func:`global_links`). NICs take the routers' endpoint ports consecutively: endpoint
    ``e = n*nics_per_node + j`` on router ``e // p`` (group ``e // (a·p)``).

    Parameters
    ----------
    switch : SwitchSpec or None
        Router radix ``k`` (needs ``p + a - 1 + h <= k``) and cable rate (Gb/s); None: 64
        ports of 400 Gb/s.
    server : ServerSpec or None
        Server shape, as for every family; None: 8 GPUs, 8 NICs.
    gpus : int or None
        GPUs to connect (a positive multiple of the server's GPUs); None fills every router.
        Without ``groups``, the fewest groups that hold them are built.
    oversubscription : float
        Must be 1 (the endpoint share is set by ``endpoints_per_router``).
    routers_per_group, endpoints_per_router, global_ports : int or None
        ``a``, ``p``, ``h``. Defaults: the balanced ``a = 2p = 2h`` with the largest ``p`` such
        that ``4p - 1 <= k`` (16 for 64 ports); a given ``p`` or ``h`` sets the other.
    groups : int or None
        ``g`` from 1 to ``a·h + 1``; None takes ``a·h + 1`` (or the fewest that hold ``gpus``).
    arrangement : str
        ``consecutive`` or ``palmtree``.

    Returns
    -------
    networkx.Graph
        Schema of :mod:`topo.fabric`. Routers: ``kind`` ``leaf``, ``tier`` 1, ``plane`` 0,
        ``rail`` -1, ``ports`` ``k``. Servers as every builder makes them. Edges: ``fabric``
        router-router (``links`` 2 where a pair of groups gets two global links between the
        same two routers), ``endpoint`` NIC-router, ``nvlink``, ``pcie``. ``G.graph`` has the
        keys of every builder (``family`` "dragonfly") plus ``routers_per_group``,
        ``endpoints_per_router``, ``global_ports``, ``groups``, ``arrangement``.

    Raises
    ------
    SpecError
        Bad switch or server arguments; ``oversubscription`` not 1; a router needing more
        than ``k`` ports; ``groups`` above ``a·h + 1``; unknown arrangement; ``gpus`` above
        the fabric's endpoints.

    Examples
    --------
    >>> from topo.fabric import summarize
    >>> from topo.spec import ServerSpec, SwitchSpec
    >>> s = summarize(dragonfly(SwitchSpec(8), ServerSpec(gpus=1, nics=1)))
    >>> s.switches, s.endpoints, s.links       # a = 4, p = h = 2: 9 groups, 54 + 36 links
    (36, 72, 90)

    References
    ----------
    J. Kim, W. J. Dally, S. Scott, D. Abts, "Technology-Driven, Highly-Scalable Dragonfly
    Topology", ISCA 2008. C. Camarero, E. Vallejo, R. Beivide, "Topological Characterization of
    Hamming and Dragonfly Networks and Its Implications on Routing", ACM TACO 11(4), 2014.
    W. Zhao et al., "Insights into DeepSeek-V3", ISCA 2025, Table 3 (DF of 64-port switches:
    261,632 endpoints, 16,352 switches, 384,272 links: a = 32, p = h = 16, 511 groups).
    """
    spec = fabric_spec(
        "dragonfly",
        switch,
        server,
        gpus=gpus,
        oversubscription=oversubscription,
        routers_per_group=routers_per_group,
        endpoints_per_router=endpoints_per_router,
        global_ports=global_ports,
        groups=groups,
        arrangement=arrangement,
    )
    sizes, top, limit = _choose(spec)
    n_gpus = check_gpus(spec, top, limit)
    nodes = n_gpus // spec.server.gpus
    endpoints = nodes * spec.server.nics
    a, p, h, g = (
        sizes.routers_per_group,
        sizes.endpoints_per_router,
        sizes.global_ports,
        sizes.groups,
    )
    G = new_graph(spec, n_gpus, top)
    G.graph.update(
        routers_per_group=a,
        endpoints_per_router=p,
        global_ports=h,
        groups=g,
        arrangement=arrangement,
    )
    add_servers(G, nodes, spec)
    routers = [f"g{i}/r{r}" for i in range(g) for r in range(a)]
    add_switches(G, routers, "leaf", spec)
    G.add_edges_from(
        ((f"g{i}/r{r}", f"g{i}/r{s}") for i in range(g) for r in range(a) for s in range(r + 1, a)),
        capacity=spec.switch.line_Bps,
        links=1,
        kind="fabric",
    )
    for i, r, t, s in global_links(a, h, g, arrangement):
        u, v = f"g{i}/r{r}", f"g{t}/r{s}"
        if G.has_edge(u, v):
            G.edges[u, v]["links"] += 1
            G.edges[u, v]["capacity"] += spec.switch.line_Bps
        else:
            G.add_edge(u, v, capacity=spec.switch.line_Bps, links=1, kind="fabric")
    nics = spec.server.nics
    add_endpoints(G, ((nic(e // nics, e % nics), routers[e // p]) for e in range(endpoints)), spec)
    return G
