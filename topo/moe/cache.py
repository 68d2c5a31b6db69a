"""What many MoE reports on the same fabrics share: computed once, then reused.

A co-design search (:mod:`topo.engine.codesign`) times every (fabric, EP size, node limit) with
:func:`topo.moe.moe_report`. Much of that work depends on less than the whole point:

- the EP layout on the fabric and its EP size (not the node limit);
- the routing on the token count, the experts' probabilities, the expert-to-node groups, the
  experts per token, the node limits gated and the seed (not the fabric: every candidate
  fabric lays the same EP size out alike);
- the cut and merged fabrics of the network LPs on the fabric and the demand's servers (not
  the bytes between them).

:class:`MoECache` keeps each under exactly the inputs it depends on. Entries of one fabric are
keyed by the graph object itself, held weakly (they go when the graph does): a fabric must not
be changed while a cache holding it is in use. Entries that depend on values only (routings)
are keyed by those values and bounded in number (least recently used dropped first). Cached
arrays are made read-only, so a caller that would change a shared one fails at once instead of
changing another point's input. Threads may share a cache (a Dask worker of several
threads): its lookups are locked, and a value two threads miss at once is computed by both,
alike.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import networkx as nx

from topo.errors import TopoError

__all__ = ["VALUE_ENTRIES", "MoECache"]

T = TypeVar("T")

VALUE_ENTRIES = 64
"""Value-keyed entries (routings) a :class:`MoECache` keeps by default (one per token count,
probabilities, groups, experts per token, limits and seed): a co-design search of 6 EP sizes
and 4 node limits needs 18; the largest, 8,192 tokens x 8 experts, is 1 MB with its weights."""


class MoECache:
    """Results that many :func:`topo.moe.moe_report` calls share, each under the inputs it
    depends on.

    Parameters
    ----------
    value_entries : int
        Most value-keyed entries (routings) kept, >= 1; the least recently used goes first.

    Raises
    ------
    TopoError
        ``value_entries`` below 1.

    Examples
    --------
    >>> from topo.builders import build
    >>> cache = MoECache()
    >>> G = build("ft2", switch_ports=8)          # 8 leaves, 4 spines
    >>> calls = []
    >>> def switches():
    ...     calls.append(1)
    ...     return sum(k in ("leaf", "spine") for _, k in G.nodes(data="kind"))
    >>> cache.per_fabric(G, "switches", switches), cache.per_fabric(G, "switches", switches)
    (12, 12)
    >>> len(calls)                                   # computed once
    1
    """

    def __init__(self, value_entries: int = VALUE_ENTRIES) -> None:
        if value_entries < 1:
            raise TopoError(
                f"value_entries must be >= 1, got {value_entries}", param="value_entries"
            )
        self._fabrics: weakref.WeakKeyDictionary[nx.Graph, dict[Hashable, Any]] = (
            weakref.WeakKeyDictionary()
        )
        self._values: OrderedDict[Hashable, Any] = OrderedDict()
        self._max_values = value_entries
        self._lock = threading.Lock()
        self.hits = 0
        """Lookups answered from the cache (both kinds)."""
        self.misses = 0
        """Lookups computed."""

    def per_fabric(self, G: nx.Graph, key: Hashable, make: Callable[[], T]) -> T:
        """``make()`` once per fabric object ``G`` and ``key``; the stored value after.

        Parameters
        ----------
        G : networkx.Graph
            The fabric (identity, not contents: it must not change while cached).
        key : hashable
            Everything else the value depends on.
        make : callable
            Computes the value; an exception it raises is not stored.

        Returns
        -------
        The value.
        """
        with self._lock:
            entries = self._fabrics.setdefault(G, {})
            if key in entries:
                self.hits += 1
                return entries[key]
            self.misses += 1
        value = make()
        with self._lock:
            self._fabrics.setdefault(G, {})[key] = value
        return value

    def by_value(self, key: Hashable, make: Callable[[], T]) -> T:
        """``make()`` once per ``key`` (every input of the value, by value); the stored value
        after, while among the ``value_entries`` most recently used.

        Parameters
        ----------
        key : hashable
        make : callable
            Computes the value; an exception it raises is not stored.

        Returns
        -------
        The value.
        """
        with self._lock:
            if key in self._values:
                self.hits += 1
                self._values.move_to_end(key)
                return self._values[key]
            self.misses += 1
        value = make()
        with self._lock:
            self._values[key] = value
            self._values.move_to_end(key)
            while len(self._values) > self._max_values:
                self._values.popitem(last=False)
        return value

    def keys(self, G: nx.Graph | None = None) -> list[Hashable]:
        """The keys kept for fabric ``G``, or (None) the value-keyed ones, oldest first."""
        with self._lock:
            if G is None:
                return list(self._values)
            return list(self._fabrics.get(G, {}))

    def __len__(self) -> int:
        """Entries kept: per-fabric ones of the fabrics still alive, and value-keyed ones."""
        with self._lock:
            return sum(len(e) for e in self._fabrics.values()) + len(self._values)

    def clear(self) -> None:
        """Drop every entry (the counters stay)."""
        with self._lock:
            self._fabrics.clear()
            self._values.clear()
