"""Classic synthetic traffic patterns over a fabric's terminals (the uniform all-to-all is in
:mod:`topo.traffic.demand`).

Units: bytes per ordered pair of terminals.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import networkx as nx

from topo.errors import TopoError
from topo.traffic.demand import Demand, Level, fabric_terminals


def permutation(
    G: nx.Graph,
    mapping: Mapping[Hashable, Hashable],
    bytes_per_pair: float = 1.0,
    *,
    level: Level | None = None,
) -> Demand:
    """Permutation traffic: terminal ``a`` sends ``bytes_per_pair`` to ``mapping[a]``.

    Every terminal sends to at most one other and receives from at most one other (a partial
    permutation: terminals left out of ``mapping`` are idle). Fixed points (``a -> a``) carry
    no fabric traffic and are left out.

    Parameters
    ----------
    G : networkx.Graph
        A fabric (:mod:`topo.fabric`).
    mapping : Mapping[terminal, terminal]
        Destination of each sending terminal; one-to-one.
    bytes_per_pair : float
        Bytes each sender sends (B).
    level : {"gpu", "server"}, optional
        What the terminals are (default: GPUs on fabrics with GPUs), as in
        :func:`topo.traffic.demand.fabric_terminals`.

    Returns
    -------
    Demand
        Explicit entries ``{(a, mapping[a]): bytes_per_pair}``; the fabric's terminals at
        ``level``.

    Raises
    ------
    TopoError
        Two terminals map to the same destination, a name is not a terminal of the fabric,
        ``bytes_per_pair`` is not finite and > 0, or every terminal maps to itself.

    Examples
    --------
    >>> from topo.builders import build
    >>> G = build("ft2", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    >>> d = permutation(G, {0: 1, 1: 0, 2: 2}, 5.0, level="server")
    >>> sorted(d.pairs()), d.total_bytes
    ([((0, 1), 5.0), ((1, 0), 5.0)], 10.0)

    References
    ----------
    W. J. Dally and B. Towles, "Principles and Practices of Interconnection Networks",
    Morgan Kaufmann 2004, §3.2 (permutation traffic).
    """
    if not (0 < bytes_per_pair < float("inf")):
        raise TopoError(f"bytes per pair must be finite and > 0, not {bytes_per_pair}")
    seen: dict[Hashable, Hashable] = {}
    for a, b in mapping.items():
        if b in seen:
            raise TopoError(f"not a permutation: {seen[b]!r} and {a!r} both send to {b!r}")
        seen[b] = a
    lvl, terms = fabric_terminals(G, level)
    entries = {(a, b): float(bytes_per_pair) for a, b in mapping.items() if a != b}
    if not entries and mapping:
        raise TopoError("the permutation maps every terminal to itself: no fabric traffic")
    return Demand(level=lvl, terminals=terms, entries=entries, name="permutation")
