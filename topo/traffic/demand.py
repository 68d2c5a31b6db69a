"""The :class:`Demand` type: bytes per ordered pair of terminals, and the hose bound.

Units: bytes for demands, B/s for capacities, seconds for times.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Literal

import networkx as nx

from topo.errors import TopoError
from topo.fabric import SWITCH_KINDS, natural_key, terminal_kind

Level = Literal["server", "gpu"]


@dataclass(frozen=True)
class Demand:
    """A traffic matrix over a fabric's servers or GPUs (bytes per ordered pair).

    Attributes
    ----------
    level : {"server", "gpu"}
        What the terminals are: servers (the ``node`` id of their GPUs; for a fabric without
        GPUs, an imported dump, the host endpoints' vertex names) or GPUs (vertex names).
    terminals : tuple
        Every terminal of the demand, in natural order (also those that send nothing).
    entries : Mapping[(a, b), float] or None
        Bytes from ``a`` to ``b`` (``a != b``, both in ``terminals``, finite and > 0). ``None``
        for the *uniform* all-to-all: every ordered pair of distinct terminals carries
        ``bytes_per_pair``.
    bytes_per_pair : float
        The uniform demand's bytes per ordered pair (B); 0 for an explicit matrix.
    name : str
        What the demand is, for reports (``"alltoall"``, ``"ring step"``, ``"dispatch"``...).

    Raises
    ------
    TopoError
        On construction: a pair names a terminal not in ``terminals``, a terminal sends to
        itself, a byte count is negative or not finite, or an explicit matrix is all zero.
    """

    level: Level
    terminals: tuple[Hashable, ...]
    entries: Mapping[tuple[Hashable, Hashable], float] | None = None
    bytes_per_pair: float = 0.0
    name: str = ""
    _out: dict[Hashable, float] = field(default_factory=dict, init=False, repr=False, compare=False)
    _in: dict[Hashable, float] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.level not in ("server", "gpu"):
            raise TopoError(f"demand level must be 'server' or 'gpu', not {self.level!r}")
        if self.entries is None:
            if not (self.bytes_per_pair > 0 and self.bytes_per_pair < float("inf")):
                raise TopoError(f"bytes per pair must be finite and > 0, not {self.bytes_per_pair}")
            if len(self.terminals) < 2:
                raise TopoError("an all-to-all needs at least two terminals")
            return
        known = set(self.terminals)
        clean: dict[tuple[Hashable, Hashable], float] = {}
        for (a, b), x in self.entries.items():
            x = float(x)
            if a not in known or b not in known:
                raise TopoError(f"demand names unknown terminal {a if a not in known else b!r}")
            if a == b:
                raise TopoError(f"demand from {a!r} to itself; leave intra-terminal bytes out")
            if not (0.0 <= x < float("inf")):
                raise TopoError(f"demand {a!r} -> {b!r} must be finite and >= 0, not {x}")
            if x > 0:
                clean[(a, b)] = clean.get((a, b), 0.0) + x
        if not clean:
            raise TopoError("the demand is all zero")
        object.__setattr__(self, "entries", MappingProxyType(clean))
        for (a, b), x in clean.items():
            self._out[a] = self._out.get(a, 0.0) + x
            self._in[b] = self._in.get(b, 0.0) + x

    @property
    def uniform(self) -> bool:
        """True for the implicit uniform all-to-all."""
        return self.entries is None

    def pairs(self) -> Iterator[tuple[tuple[Hashable, Hashable], float]]:
        """Every ``((a, b), bytes)`` with bytes > 0. Materialises the uniform demand pair by
        pair: ``len(terminals)**2`` items, so callers of large uniform demands use
        :attr:`bytes_per_pair` instead."""
        if self.entries is not None:
            yield from self.entries.items()
            return
        for a in self.terminals:
            for b in self.terminals:
                if a != b:
                    yield (a, b), self.bytes_per_pair

    def out_bytes(self, t: Hashable) -> float:
        """Bytes terminal ``t`` sends (B)."""
        if self.entries is None:
            return self.bytes_per_pair * (len(self.terminals) - 1)
        return self._out.get(t, 0.0)

    def in_bytes(self, t: Hashable) -> float:
        """Bytes terminal ``t`` receives (B)."""
        if self.entries is None:
            return self.bytes_per_pair * (len(self.terminals) - 1)
        return self._in.get(t, 0.0)

    @property
    def total_bytes(self) -> float:
        """Sum of the demand (B)."""
        if self.entries is None:
            n = len(self.terminals)
            return self.bytes_per_pair * n * (n - 1)
        return sum(self._out.values())

    def load(self, t: Hashable) -> float:
        """The larger of the bytes terminal ``t`` sends and receives (B): its hose load."""
        return max(self.out_bytes(t), self.in_bytes(t))

    @cached_property
    def peak_bytes(self) -> float:
        """The busiest terminal's hose load, ``max_t max(out_t, in_t)`` (B)."""
        if self.entries is None:
            return self.bytes_per_pair * (len(self.terminals) - 1)
        return max(self.load(t) for t in self.terminals)

    def scaled(self, factor: float) -> Demand:
        """The same pattern with every byte count multiplied by ``factor`` (> 0, finite).

        Parameters
        ----------
        factor : float
            The multiplier (B per B of this demand).

        Returns
        -------
        Demand
            Same level, terminals and name.

        Raises
        ------
        TopoError
            ``factor`` is not finite and > 0.

        Examples
        --------
        >>> Demand("server", (0, 1), {(0, 1): 0.5}).scaled(1e9).entries[(0, 1)]
        500000000.0
        """
        if not (0 < factor < float("inf")):
            raise TopoError(f"a demand's scale factor must be finite and > 0, not {factor}")
        if self.entries is None:
            return Demand(self.level, self.terminals, None, self.bytes_per_pair * factor, self.name)
        entries = {k: x * factor for k, x in self.entries.items()}
        return Demand(self.level, self.terminals, entries, name=self.name)

    def hose_time(self, capacity_Bps: Mapping[Hashable, float] | float) -> float:
        """The hose bound: no fabric delivers the demand sooner than its busiest terminal's
        cables carry its bytes, ``max_t max(out_t, in_t) / c_t`` (s).

        Parameters
        ----------
        capacity_Bps : Mapping[terminal, float] or float
            Each terminal's total cable capacity into the fabric (B/s per direction); a number
            gives every terminal that capacity (the bound is then ``peak_bytes / c``, the same
            float as the mapping would give).

        Returns
        -------
        float
            The bound (s); 0 when no terminal with traffic has a capacity given.

        Raises
        ------
        TopoError
            A terminal with traffic has capacity 0 (it cannot send at all).

        References
        ----------
        N. G. Duffield et al., "A flexible model for resource management in virtual private
        networks" (the hose model), SIGCOMM 1999.
        """
        if not isinstance(capacity_Bps, Mapping):
            if not capacity_Bps > 0:
                raise TopoError(f"every terminal has traffic but no capacity ({capacity_Bps})")
            return self.peak_bytes / float(capacity_Bps)
        return hose_bound(((t, self.load(t)) for t in self.terminals), capacity_Bps)


def hose_bound(
    loads: Iterable[tuple[Hashable, float]], capacity_Bps: Mapping[Hashable, float]
) -> float:
    """The hose bound from each terminal's load: ``max_t load_t / c_t`` (s).

    The one place the bound is computed: :meth:`Demand.hose_time` calls it with its terminals'
    loads, and callers that have the loads already (per-GPU sums of a rank matrix, a NIC's
    share of its GPUs' bytes) call it without building a :class:`Demand`.

    Parameters
    ----------
    loads : iterable of (terminal, float)
        Each terminal's hose load, the larger of the bytes it sends and receives (B).
    capacity_Bps : Mapping[terminal, float]
        Each terminal's capacity (B/s per direction); terminals not in it are not bounded.

    Returns
    -------
    float
        The bound (s); 0 when no terminal with a load > 0 has a capacity given.

    Raises
    ------
    TopoError
        A terminal with a load has capacity <= 0 (it cannot send at all).

    Examples
    --------
    >>> hose_bound([("a", 6.0), ("b", 2.0), ("c", 9.0)], {"a": 2.0, "b": 0.5})
    4.0

    References
    ----------
    N. G. Duffield et al., "A flexible model for resource management in virtual private
    networks" (the hose model), SIGCOMM 1999.
    """
    worst = 0.0
    for t, load in loads:
        if load <= 0 or t not in capacity_Bps:
            continue
        cap = float(capacity_Bps[t])
        if cap <= 0:
            raise TopoError(f"terminal {t!r} has traffic but no capacity to the fabric")
        worst = max(worst, load / cap)
    return worst


def fabric_terminals(G: nx.Graph, level: Level | None = None) -> tuple[Level, tuple[Hashable, ...]]:
    """The traffic terminals of a fabric at a level, in natural order.

    Parameters
    ----------
    G : networkx.Graph
        A fabric (:mod:`topo.fabric`).
    level : {"gpu", "server"}, optional
        GPUs (default on fabrics with GPUs) or servers (their ``node`` ids). A fabric without
        GPUs (an imported dump) has its host endpoints, the NICs cabled to a switch, as
        terminals at either level, and its level is ``"server"``.

    Returns
    -------
    (str, tuple)
        The level and the terminals.

    Examples
    --------
    >>> from topo.builders import build
    >>> G = build("ft2", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    >>> fabric_terminals(G, "server")[1][:3], fabric_terminals(G)[1][0]
    ((0, 1, 2), 'node0/gpu0')
    """
    kind = terminal_kind(G)
    lvl: Level = level or ("gpu" if kind == "gpu" else "server")
    nodes = G._node  # the raw attribute dicts: this visits every vertex
    if kind == "gpu" and lvl == "server":
        terms = {d["node"] for d in nodes.values() if d["kind"] == "gpu"}
        return lvl, tuple(sorted(terms, key=natural_key))
    found = [v for v, d in nodes.items() if d["kind"] == kind]  # names: distinct already
    if kind == "nic":  # only NICs cabled to a switch are endpoints
        adj = G._adj
        found = [v for v in found if any(nodes[u]["kind"] in SWITCH_KINDS for u in adj[v])]
    return lvl, tuple(sorted(found, key=natural_key))


def uniform_alltoall(
    G: nx.Graph, bytes_per_pair: float = 1.0, *, level: Level | None = None
) -> Demand:
    """The uniform all-to-all: every terminal sends ``bytes_per_pair`` to every other.

    Parameters
    ----------
    G : networkx.Graph
        A fabric (:mod:`topo.fabric`).
    bytes_per_pair : float
        Bytes per ordered pair (B).
    level : {"gpu", "server"}, optional
        Terminals: GPUs (default on fabrics with GPUs) or servers. A fabric without GPUs has
        its host endpoints (NICs) as terminals at either level.

    Returns
    -------
    Demand
        Uniform (``entries is None``), terminals in natural order.

    Raises
    ------
    TopoError
        Fewer than two terminals, or ``bytes_per_pair`` not finite and > 0.

    Examples
    --------
    >>> from topo.builders import build
    >>> d = uniform_alltoall(build("ft2", switch_ports=8))
    >>> len(d.terminals), d.total_bytes
    (32, 992.0)
    """
    lvl, terms = fabric_terminals(G, level)
    return Demand(
        level=lvl,
        terminals=terms,
        bytes_per_pair=float(bytes_per_pair),
        name="alltoall",
    )
