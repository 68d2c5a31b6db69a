"""Slim Fly: routers joined by a McKay-Miller-Širáň (MMS) graph of diameter 2.

For a prime power ``q = 4w + δ`` (``δ`` in -1, 0, 1) the MMS graph has ``2q²`` routers
``(s, a, b)``, ``s`` in {0, 1}, ``a, b`` in GF(q), each of network radix
``k' = (3q - δ)/2``. With a primitive element ``ξ`` of GF(q) and the generator sets

- ``δ = 1``: ``X = {1, ξ², ..., ξ^(q-3)}``, ``X' = {ξ, ξ³, ..., ξ^(q-2)}``;
- ``δ = 0``: ``X = {1, ξ², ..., ξ^(q-2)}``, ``X' = {ξ, ξ³, ..., ξ^(q-1)}``;
- ``δ = -1``: ``X = {1, ξ², ..., ξ^(2w-2)} ∪ {ξ^(2w-1), ξ^(2w+1), ..., ξ^(4w-3)}``,
  ``X' = {ξ, ξ³, ..., ξ^(2w-1)} ∪ {ξ^(2w), ξ^(2w+2), ..., ξ^(4w-2)}``;

router ``(0, x, y)`` is joined to ``(0, x, y')`` when ``y - y'`` is in ``X``, ``(1, m, c)`` to
``(1, m, c')`` when ``c - c'`` is in ``X'``, and ``(0, x, y)`` to ``(1, m, c)`` when
``y = m·x + c``. Every router also takes ``p`` endpoints; full global bandwidth needs
``p = ceil(k'/2)`` (Besta and Hoefler), so a radix-``k`` switch holds ``k' + p <= k``.

Sizes: ``2q²`` routers, ``q²(3q - δ)/2`` router-router links, ``2q²·p`` endpoints. The MMS graph
exists only for prime powers ``q``; :func:`slimfly_sizes` gives the counts of any ``q`` (the
formulas), :func:`slim_fly` builds the constructible ones.
"""

from __future__ import annotations

import itertools
import math
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
from topo.spec import FabricSpec, ServerSpec, SwitchSpec, as_int

__all__ = [
    "slim_fly",
    "slimfly_design",
    "slimfly_sizes",
    "slimfly_q",
    "is_prime_power",
    "mms_graph",
]

MAX_Q = 128
"""Largest ``q`` the builder constructs (32,768 routers)."""


@dataclass(frozen=True)
class SlimFlySizes:
    """Counts of a Slim Fly from the closed forms (Besta and Hoefler, SC14, §II).

    Attributes
    ----------
    q : int
        The MMS parameter; ``q = 4w + δ``.
    delta : int
        -1, 0 or 1.
    network_radix : int
        ``k' = (3q - δ)/2`` router-router ports per router.
    endpoints_per_router : int
        ``p``.
    routers, links, endpoints : int
        ``2q²``, ``2q²·k'/2``, ``2q²·p``.
    constructible : bool
        True if ``q`` is a prime power (the MMS graph exists).
    """

    q: int
    delta: int
    network_radix: int
    endpoints_per_router: int
    routers: int
    links: int
    endpoints: int
    constructible: bool


def is_prime_power(q: int) -> bool:
    """True if ``q`` is ``p^m`` for a prime ``p`` and ``m >= 1``."""
    return _prime_power(q) is not None


def _prime_power(q: int) -> tuple[int, int] | None:
    if q < 2:
        return None
    p = next(d for d in range(2, q + 1) if q % d == 0)
    m, r = 0, q
    while r % p == 0:
        r //= p
        m += 1
    return (p, m) if r == 1 else None


def _delta(q: int) -> int | None:
    r = q % 4
    return {0: 0, 1: 1, 3: -1}.get(r)


def slimfly_sizes(q: int, endpoints_per_router: int | None = None) -> SlimFlySizes:
    """Counts of the Slim Fly of parameter ``q`` from the closed forms, constructible or not.

    Parameters
    ----------
    q : int
        At least 3, ``q mod 4`` in 0, 1, 3 (so ``q = 4w + δ``, ``δ`` in 0, 1, -1).
    endpoints_per_router : int or None
        ``p``; None takes ``ceil(k'/2)``, the full-global-bandwidth choice.

    Returns
    -------
    SlimFlySizes

    Raises
    ------
    SpecError
        If ``q`` is below 3 or ``q mod 4 == 2``.

    Examples
    --------
    >>> s = slimfly_sizes(28)        # DeepSeek-V3 report, Table 3 (not a prime power)
    >>> s.routers, s.network_radix, s.endpoints_per_router, s.endpoints, s.links
    (1568, 42, 21, 32928, 32928)

    References
    ----------
    M. Besta and T. Hoefler, "Slim Fly: A Cost Effective Low-Diameter Network Topology",
    SC14, §II (``N_r = 2q²``, ``k' = (3q - δ)/2``, ``p = ceil(k'/2)``).
    """
    q = as_int("q", q)
    delta = _delta(q)
    if q < 3 or delta is None:
        raise SpecError(
            f"q must be at least 3 with q mod 4 in 0, 1, 3 (q = 4w + δ), got {q}", param="q"
        )
    radix = (3 * q - delta) // 2
    p = math.ceil(radix / 2) if endpoints_per_router is None else endpoints_per_router
    routers = 2 * q * q
    return SlimFlySizes(
        q=q,
        delta=delta,
        network_radix=radix,
        endpoints_per_router=p,
        routers=routers,
        links=routers * radix // 2,
        endpoints=routers * p,
        constructible=is_prime_power(q),
    )


def slimfly_q(switch_ports: int, *, constructible: bool = True) -> int:
    """The largest ``q`` whose Slim Fly fits a ``switch_ports`` router with ``p = ceil(k'/2)``.

    ``k' + ceil(k'/2) <= switch_ports``; with ``constructible`` only prime powers count.

    Raises
    ------
    SpecError
        If no ``q >= 3`` fits.

    Examples
    --------
    >>> slimfly_q(64, constructible=False), slimfly_q(64)
    (28, 27)
    """
    best = None
    for q in range(3, switch_ports + 1):
        if _delta(q) is None or (constructible and not is_prime_power(q)):
            continue
        s = slimfly_sizes(q)
        if s.network_radix + s.endpoints_per_router <= switch_ports:
            best = q
    if best is None:
        raise SpecError(
            f"no Slim Fly fits {switch_ports}-port routers (q = 3 needs 8 ports)",
            param="switch_ports",
            names=(),
        )
    return best


class _GF:
    """Arithmetic of GF(p^m) on the integers 0..q-1 (base-p digits = polynomial coefficients)."""

    def __init__(self, q: int) -> None:
        pm = _prime_power(q)
        if pm is None:  # pragma: no cover - callers check
            raise ValueError(q)
        self.q, (self.p, self.m) = q, pm
        for tail in itertools.product(range(self.p), repeat=self.m):
            self.modulus = tail  # x^m + tail[m-1] x^(m-1) + ... + tail[0]
            mul = self._field_table()
            if mul is not None:
                self.mul = mul
                break
        self.add = [[self._digits_op(a, b, 1) for b in range(q)] for a in range(q)]
        self.sub = [[self._digits_op(a, b, -1) for b in range(q)] for a in range(q)]

    def _field_table(self) -> list[list[int]] | None:
        """The multiplication table modulo :attr:`modulus`, or None if that is not a field.

        A field: every ``a != 0`` has an inverse (its row holds a 1). A reducible modulus has a
        factor of low degree, a small value with no inverse, so its table is abandoned after a
        few rows (building every candidate's full table took 30 s for q = 128).
        """
        rows = [[0] * self.q]
        for a in range(1, self.q):
            row = [self._mul(a, b) for b in range(self.q)]
            if 1 not in row:
                return None
            rows.append(row)
        return rows

    def _digits(self, a: int) -> list[int]:
        return [(a // self.p**i) % self.p for i in range(self.m)]

    def _value(self, digits: list[int]) -> int:
        return sum(d * self.p**i for i, d in enumerate(digits))

    def _digits_op(self, a: int, b: int, sign: int) -> int:
        da, db = self._digits(a), self._digits(b)
        return self._value([(x + sign * y) % self.p for x, y in zip(da, db, strict=True)])

    def _mul(self, a: int, b: int) -> int:
        p, m = self.p, self.m
        prod = [0] * (2 * m)
        for i, x in enumerate(self._digits(a)):
            for j, y in enumerate(self._digits(b)):
                prod[i + j] = (prod[i + j] + x * y) % p
        for d in range(2 * m - 1, m - 1, -1):
            c = prod[d]
            if c:
                prod[d] = 0
                for i in range(m):
                    prod[d - m + i] = (prod[d - m + i] - c * self.modulus[i]) % p
        return self._value(prod[:m])

    def primitive(self) -> int:
        for g in range(1, self.q):
            x, seen = 1, set()
            for _ in range(self.q - 1):
                x = self.mul[x][g]
                seen.add(x)
            if len(seen) == self.q - 1:
                return g
        raise AssertionError("no primitive element")  # pragma: no cover - a field has one


def mms_graph(q: int) -> nx.Graph:
    """The McKay-Miller-Širáň graph of prime power ``q``: routers ``(s, a, b)`` only.

    Returns
    -------
    networkx.Graph
        ``2q²`` vertices ``(s, a, b)`` (``s`` in 0, 1; ``a``, ``b`` in 0..q-1 naming GF(q)
        elements), ``(3q - δ)/2``-regular, diameter 2.

    Raises
    ------
    SpecError
        If ``q`` is not a prime power at least 3 with ``q mod 4 != 2``.

    Examples
    --------
    >>> G = mms_graph(5)            # the Hoffman-Singleton graph
    >>> G.number_of_nodes(), {d for _, d in G.degree()}, nx.diameter(G)
    (50, {7}, 2)

    References
    ----------
    B. D. McKay, M. Miller, J. Širáň, "A note on large graphs of diameter two and given maximum
    degree", J. Combin. Theory B 74 (1998); P. R. Hafner, "Geometric realisation of the graphs
    of McKay-Miller-Širáň", J. Combin. Theory B 90 (2004); M. Besta and T. Hoefler, "Slim Fly",
    SC14, §II-B (the generator sets X, X').
    """
    sizes = slimfly_sizes(q)
    if not sizes.constructible:
        raise SpecError(
            f"q = {q} is not a prime power: no MMS graph (Slim Fly) exists for it",
            param="q",
            names=(),
        )
    F = _GF(q)
    xi = F.primitive()
    powers = [1]
    for _ in range(2 * q):
        powers.append(F.mul[powers[-1]][xi])
    delta, w = sizes.delta, (q - sizes.delta) // 4
    if delta == 1:
        X = {powers[i] for i in range(0, q - 2, 2)}
        Xp = {powers[i] for i in range(1, q - 1, 2)}
    elif delta == 0:
        X = {powers[i] for i in range(0, q - 1, 2)}
        Xp = {powers[i] for i in range(1, q, 2)}
    else:
        X = {powers[i] for i in range(0, 2 * w - 1, 2)} | {
            powers[i] for i in range(2 * w - 1, 4 * w - 2, 2)
        }
        Xp = {powers[i] for i in range(1, 2 * w, 2)} | {
            powers[i] for i in range(2 * w, 4 * w - 1, 2)
        }
    G = nx.Graph()
    G.add_nodes_from((s, a, b) for s in (0, 1) for a in range(q) for b in range(q))
    for a in range(q):
        for b in range(q):
            for b2 in range(b + 1, q):
                if F.sub[b][b2] in X:
                    G.add_edge((0, a, b), (0, a, b2))
                if F.sub[b][b2] in Xp:
                    G.add_edge((1, a, b), (1, a, b2))
    for x in range(q):
        for m in range(q):
            mx = F.mul[m][x]
            for c in range(q):
                G.add_edge((0, x, F.add[mx][c]), (1, m, c))
    return G


def router_name(s: int, a: int, b: int) -> str:
    """Name of Slim Fly router ``(s, a, b)``: ``x{a}/r{b}`` (s = 0) or ``m{a}/r{b}`` (s = 1)."""
    return f"{'x' if s == 0 else 'm'}{a}/r{b}"


def _choose(spec: FabricSpec) -> tuple[SlimFlySizes, int, str]:
    """(sizes, max GPUs, limit text) of the Slim Fly of ``spec``."""
    k, q, p = spec.switch.ports, spec.q, spec.endpoints_per_router
    if q is not None:
        if q > MAX_Q:
            raise SpecError(
                f"q must be at most {MAX_Q} ({2 * MAX_Q**2} routers), got {q}", param="q"
            )
        s = slimfly_sizes(q)
        if not s.constructible:
            lo = max(c for c in range(3, q) if _delta(c) is not None and is_prime_power(c))
            hi = next(c for c in range(q + 1, 4 * q) if _delta(c) is not None and is_prime_power(c))
            raise SpecError(
                f"q = {q} is not a prime power: no MMS graph (Slim Fly) exists for it; the "
                f"nearest constructible are q = {lo} and q = {hi}",
                param="q",
                names=(),
            )
    elif spec.gpus is None:
        q = _largest_q(k, p)
    else:
        need = -(-spec.gpus // spec.server.gpus) * spec.server.nics
        top = _largest_q(k, p)
        q = next(
            (
                c
                for c in range(3, top + 1)
                if _delta(c) is not None
                and is_prime_power(c)
                and slimfly_sizes(c, _p_for(c, k, p)).endpoints >= need
            ),
            top,
        )
    p_used = _p_for(q, k, p)
    s = slimfly_sizes(q, p_used)
    if s.network_radix + p_used > k:
        raise SpecError(
            f"a Slim Fly of q = {q} needs {s.network_radix} network ports + {p_used} endpoint "
            f"ports per router, more than switch_ports ({k})",
            param="switch_ports",
        )
    nodes = s.endpoints // spec.server.nics
    gpus_max = nodes * spec.server.gpus
    text = (
        f"a Slim Fly of {k}-port routers with q = {q} holds at most {s.endpoints} endpoints "
        f"({s.routers} routers of {p_used}), {nodes} nodes of {spec.server.gpus} GPUs: "
        f"{gpus_max} GPUs"
    )
    return s, gpus_max, text


def slimfly_design(spec: FabricSpec) -> tuple[SlimFlySizes, int, str]:
    """The Slim Fly :func:`slim_fly` builds for ``spec``: its sizes (``q``, ``p``), the most
    GPUs it holds and the clause stating that ceiling.

    Parameters
    ----------
    spec : FabricSpec
        A ``slimfly`` spec; without ``q``, the largest prime power that fits the radix, or the
        smallest that holds ``gpus``.

    Returns
    -------
    tuple of (SlimFlySizes, int, str)

    Raises
    ------
    SpecError
        ``q`` not a prime power or above :data:`MAX_Q`; a router needing more than
        ``switch_ports`` ports.
    """
    return _choose(spec)


def _p_for(q: int, k: int, p: int | None) -> int:
    """Endpoints per router: ``p`` if given (the spec checked it), else ``ceil(k'/2)``."""
    return p if p is not None else slimfly_sizes(q).endpoints_per_router


def _largest_q(k: int, p: int | None) -> int:
    if p is None:
        return slimfly_q(k)
    fits = [
        q
        for q in range(3, k + 1)
        if _delta(q) is not None and is_prime_power(q) and slimfly_sizes(q).network_radix + p <= k
    ]
    if not fits:
        raise SpecError(
            f"no Slim Fly fits {k}-port routers with {p} endpoints per router",
            param="endpoints_per_router",
            names=(),
        )
    return fits[-1]


def slimfly_limit(spec: FabricSpec) -> tuple[int, str]:
    """The most GPUs the Slim Fly of ``spec`` holds (whole servers; the largest ``q`` that
    fits unless ``q`` is given), and the sentence that states the ceiling.

    Parameters
    ----------
    spec : FabricSpec
        The switch, server and family parameters; with ``gpus`` set and no ``q``, the
        smallest ``q`` that holds them (:func:`topo.builders.max_gpus` passes none).

    Returns
    -------
    tuple of (int, str)
        The most GPUs (whole servers; 0 if not one server fits), and the clause
        stating the ceiling (which the errors of the builder quote).
    """
    _, top, text = _choose(spec)
    return top, text


def slim_fly(
    switch: SwitchSpec | None = None,
    server: ServerSpec | None = None,
    *,
    gpus: int | None = None,
    oversubscription: float = 1.0,
    q: int | None = None,
    endpoints_per_router: int | None = None,
) -> nx.Graph:
    """Build a Slim Fly (MMS graph of routers, diameter 2) of GPU servers: family ``slimfly``.

    Routers are switches of kind ``leaf`` (tier 1): every router takes endpoints, and topo's
    tiers count switches from the hosts up (as imported fabrics do). NICs take the routers'
    endpoint ports consecutively: endpoint ``e = n*nics_per_node + j`` on router ``e // p`` in
    the order ``x0/r0 .. x{q-1}/r{q-1}, m0/r0 ..``.

    Parameters
    ----------
    switch : SwitchSpec or None
        Router radix ``k`` (needs ``k' + p <= k``) and cable rate (Gb/s); None: 64 ports of
        400 Gb/s.
    server : ServerSpec or None
        Server shape, as for every family; None: 8 GPUs, 8 NICs.
    gpus : int or None
        GPUs to connect (a positive multiple of the server's GPUs); None fills every router.
        Without ``q``, the smallest prime power ``q`` that holds them is built.
    oversubscription : float
        Must be 1 (the endpoint share is set by ``endpoints_per_router``).
    q : int or None
        MMS parameter, a prime power; None takes the largest that fits the radix (27 for 64
        ports), or the smallest that holds ``gpus``.
    endpoints_per_router : int or None
        ``p``; None takes ``ceil(k'/2)``.

    Returns
    -------
    networkx.Graph
        Schema of :mod:`topo.fabric`. Routers ``x{a}/r{b}`` (MMS vertex ``(0, a, b)``) and
        ``m{a}/r{b}`` (``(1, a, b)``): ``kind`` ``leaf``, ``tier`` 1, ``plane`` 0, ``rail`` -1,
        ``ports`` ``k``. Servers as every builder makes them (``node{n}/gpu{i}``,
        ``node{n}/nvswitch``, ``node{n}/nic{j}``). Edges: ``fabric`` router-router (1 cable),
        ``endpoint`` NIC-router, ``nvlink``, ``pcie``. ``G.graph`` has the keys of every
        builder (``family`` "slimfly") plus ``q``, ``network_radix``, ``endpoints_per_router``.

    Raises
    ------
    SpecError
        Bad switch or server arguments; ``oversubscription`` not 1; ``q`` not a prime power
        (the message names the nearest constructible ones) or not fitting the radix; ``gpus``
        above the fabric's endpoints.

    Examples
    --------
    >>> from topo.fabric import summarize
    >>> from topo.spec import ServerSpec, SwitchSpec
    >>> s = summarize(slim_fly(SwitchSpec(12), ServerSpec(gpus=1, nics=1)))
    >>> s.switches, s.links, s.endpoints      # q = 5: 50 routers, radix 7, p = 4
    (50, 175, 200)

    References
    ----------
    M. Besta and T. Hoefler, "Slim Fly: A Cost Effective Low-Diameter Network Topology", SC14.
    W. Zhao et al., "Insights into DeepSeek-V3", ISCA 2025, Table 3 (SF of 64-port switches:
    32,928 endpoints, 1,568 switches, 32,928 links: q = 28 by the formulas).
    """
    spec = fabric_spec(
        "slimfly",
        switch,
        server,
        gpus=gpus,
        oversubscription=oversubscription,
        q=q,
        endpoints_per_router=endpoints_per_router,
    )
    sizes, top, limit = _choose(spec)
    n_gpus = check_gpus(spec, top, limit)
    nodes = n_gpus // spec.server.gpus
    endpoints = nodes * spec.server.nics
    G = new_graph(spec, n_gpus, top)
    G.graph.update(
        q=sizes.q,
        network_radix=sizes.network_radix,
        endpoints_per_router=sizes.endpoints_per_router,
    )
    add_servers(G, nodes, spec)
    M = mms_graph(sizes.q)
    order = [router_name(*v) for v in sorted(M.nodes)]
    add_switches(G, order, "leaf", spec)
    G.add_edges_from(
        ((router_name(*u), router_name(*v)) for u, v in M.edges),
        capacity=spec.switch.line_Bps,
        links=1,
        kind="fabric",
    )
    p, nics = sizes.endpoints_per_router, spec.server.nics
    add_endpoints(G, ((nic(e // nics, e % nics), order[e // p]) for e in range(endpoints)), spec)
    return G
