"""Shared by the builders: argument checks, the servers, switches, cables and graph attributes.

Private: the public face is :mod:`topo.builders` (``build``, ``max_gpus``) and the four family
builders in :mod:`topo.builders.clos` and :mod:`topo.builders.rails`.

A server ("node" ``n``) is ``gpus_per_node`` GPUs ``node{n}/gpu{i}``, one NVSwitch
``node{n}/nvswitch`` (always created, also with one GPU per node, so every server has the same
shape) joined to every GPU by an ``nvlink`` edge, and ``nics_per_node`` NICs ``node{n}/nic{j}``;
GPU ``i`` reaches NIC ``i * nics_per_node // gpus_per_node`` by a ``pcie`` edge.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import networkx as nx

from topo.errors import SpecError
from topo.units import GBps_to_Bps, gbps_to_Bps

TIERS = {"leaf": 1, "spine": 2, "core": 3}


@dataclass(frozen=True)
class Spec:
    """Checked builder arguments and the leaf port split they imply.

    Attributes
    ----------
    k : int
        Switch radix (ports per switch).
    up, down : int
        A leaf's up ports (to spines) and down ports (to NICs): ``up = k / (r + 1)``,
        ``down = k - up``.
    """

    family: str
    k: int
    link_gbps: float
    gpus_per_node: int
    nics_per_node: int
    nvlink_GBps: float
    pcie_GBps: float
    oversubscription: float
    up: int
    down: int

    @property
    def line_Bps(self) -> float:
        """Rate of one cable, B/s per direction."""
        return gbps_to_Bps(self.link_gbps)


def as_int(name: str, value: Any) -> int:
    """``value`` as an int, or SpecError if it is not a whole number (bools are refused)."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise SpecError(f"{name} must be a whole number, got {value!r}")
    return int(value)


RATE_RANGE = (1e-3, 1e6)
"""Accepted link, NVLink and PCIe rates (in their own units, Gb/s or GB/s): 1 Mb/s to
1 Pb/s. Outside that a number is a typo, and the flow LP could not resolve it next to
ordinary links."""

MAX_GPUS_PER_NODE = 1024
MAX_SWITCH_PORTS = 1024
"""Largest radix accepted (today's largest switches have 256 or 512 logical ports); bigger
values are typos that would make the size formulas and the plan's program explode."""
MAX_BUILD_GPUS = 1 << 19
"""The largest fabric :func:`topo.builders.build` makes in one graph: 524,288 GPUs (about
10 GiB of networkx graph)."""


def _positive_rate(name: str, value: Any, unit: str) -> float:
    x = float(value) if isinstance(value, Real) and not isinstance(value, bool) else math.nan
    if not (math.isfinite(x) and x > 0):
        raise SpecError(f"{name} must be a positive number of {unit}, got {value!r}")
    lo, hi = RATE_RANGE
    if not lo <= x <= hi:
        raise SpecError(f"{name} must be between {lo:g} and {hi:g} {unit}, got {value!r}")
    return x


def whole_ratios(k: int) -> list[int]:
    """The whole-number oversubscription ratios of a ``k``-port leaf: ``k/u - 1`` for ``u | k``,
    ``u <= k/2`` (for 64 ports: 1, 3, 7, 15, 31, 63)."""
    return sorted(k // u - 1 for u in range(1, k // 2 + 1) if k % u == 0)


def leaf_split(k: int, oversubscription: Any) -> tuple[int, int]:
    """A leaf's (up, down) ports for oversubscription ``r``: ``up = k/(r+1)`` must be whole, >= 1.

    Raises
    ------
    SpecError
        If ``r`` < 1, is not a finite number, or does not give a whole number of up ports.
    """
    ok = isinstance(oversubscription, Real) and not isinstance(oversubscription, bool)
    r = float(oversubscription) if ok else math.nan
    if not (math.isfinite(r) and r >= 1):
        raise SpecError(
            "oversubscription must be a number of at least 1 (1 = non-blocking), "
            f"got {oversubscription!r}"
        )
    up_exact = k / (r + 1)
    up = round(up_exact)
    if up < 1 or abs(up_exact - up) > 1e-9 * k:
        ratios = ", ".join(str(x) for x in whole_ratios(k))
        raise SpecError(
            f"oversubscription {r:g} does not give a whole number of up ports on a "
            f"{k}-port leaf ({k}/({r:g}+1) = {up_exact:.4g}); the whole-number ratios "
            f"for {k} ports are {ratios} (in general (k-u)/u for u = 1..{k // 2} up ports)"
        )
    return up, k - up


def check_spec(
    family: str,
    *,
    switch_ports: Any,
    link_gbps: Any = 400.0,
    gpus_per_node: Any = 8,
    nics_per_node: Any = 8,
    nvlink_GBps: Any = 200.0,
    pcie_GBps: Any = 64.0,
    oversubscription: Any = 1.0,
    nonblocking_only: bool = False,
) -> Spec:
    """Check the switch, node and rate arguments shared by every family.

    Raises
    ------
    SpecError
        Radix odd, below 4 or above :data:`MAX_SWITCH_PORTS`; ``gpus_per_node`` outside 1 to
        1024 or ``nics_per_node`` below 1; more NICs than GPUs per node or NICs not dividing
        GPUs; a rate outside 1e-3 to 1e6 (Gb/s for links, GB/s for NVLink and PCIe); a bad
        oversubscription (any value but 1 when ``nonblocking_only``).
    """
    k = as_int("switch_ports", switch_ports)
    if k < 4 or k % 2 or k > MAX_SWITCH_PORTS:
        raise SpecError(
            f"switch_ports must be an even number from 4 to {MAX_SWITCH_PORTS}, got {k}"
        )
    gpn = as_int("gpus_per_node", gpus_per_node)
    nics = as_int("nics_per_node", nics_per_node)
    if not 1 <= gpn <= MAX_GPUS_PER_NODE:
        raise SpecError(f"gpus_per_node must be from 1 to {MAX_GPUS_PER_NODE}, got {gpn}")
    if nics < 1:
        raise SpecError(f"nics_per_node must be at least 1, got {nics}")
    if nics > gpn:
        raise SpecError(
            f"nics_per_node ({nics}) must not exceed gpus_per_node ({gpn}): "
            "each GPU reaches the fabric through one NIC"
        )
    if gpn % nics:
        raise SpecError(
            f"nics_per_node ({nics}) must divide gpus_per_node ({gpn}) so every NIC serves "
            "the same number of GPUs"
        )
    link = _positive_rate("link_gbps", link_gbps, "Gb/s")
    nvlink = _positive_rate("nvlink_GBps", nvlink_GBps, "GB/s")
    pcie = _positive_rate("pcie_GBps", pcie_GBps, "GB/s")
    if nonblocking_only and (
        isinstance(oversubscription, bool)
        or not isinstance(oversubscription, Real)
        or oversubscription != 1
    ):
        raise SpecError(
            f"oversubscription must be 1 for {family} (this builder makes non-blocking "
            f"fabrics only), got {oversubscription!r}"
        )
    up, down = leaf_split(k, oversubscription)
    return Spec(
        family=family,
        k=k,
        link_gbps=link,
        gpus_per_node=gpn,
        nics_per_node=nics,
        nvlink_GBps=nvlink,
        pcie_GBps=pcie,
        oversubscription=float(oversubscription),
        up=up,
        down=down,
    )


def over_text(spec: Spec) -> str:
    """`` at oversubscription r`` when r != 1, else empty (for limit messages)."""
    return "" if spec.oversubscription == 1 else f" at oversubscription {spec.oversubscription:g}"


def check_gpus(gpus: Any, spec: Spec, max_gpus: int, limit: str) -> int:
    """The GPU count to build: ``max_gpus`` if ``gpus`` is None, else ``gpus`` checked.

    ``limit`` is the clause stating the family's ceiling ("a two-layer fat tree of 64-port
    switches holds at most ..."); the error appends "; asked for N GPUs".

    Raises
    ------
    SpecError
        If ``gpus`` is not a positive multiple of ``gpus_per_node`` or exceeds the ceiling.
    """
    gpn = spec.gpus_per_node
    if gpus is None:
        if max_gpus < gpn:
            raise SpecError(f"{limit}; not one node of {gpn} GPUs fits")
        return max_gpus
    n = as_int("gpus", gpus)
    if n < 1 or n % gpn:
        raise SpecError(f"gpus must be a positive multiple of gpus_per_node ({gpn}), got {n}")
    if n > max_gpus:
        raise SpecError(f"{limit}; asked for {n} GPUs")
    return n


def new_graph(spec: Spec, gpus: int, max_gpus: int, planes: int = 1) -> nx.Graph:
    """An empty fabric graph carrying the graph attributes of :mod:`topo.fabric`."""
    return nx.Graph(
        family=spec.family,
        name=f"{spec.family}-{gpus}",
        planes=planes,
        switch_ports=spec.k,
        link_gbps=spec.link_gbps,
        gpus_per_node=spec.gpus_per_node,
        nics_per_node=spec.nics_per_node,
        nvlink_GBps=spec.nvlink_GBps,
        pcie_GBps=spec.pcie_GBps,
        oversubscription=spec.oversubscription,
        max_gpus=max_gpus,
    )


def nic(n: int, j: int) -> str:
    """Name of NIC ``j`` of server ``n``."""
    return f"node{n}/nic{j}"


def add_servers(G: nx.Graph, nodes: int, spec: Spec) -> None:
    """Add servers ``0 .. nodes-1``: GPUs, one NVSwitch, NICs, and their nvlink and pcie edges."""
    gpn, nics = spec.gpus_per_node, spec.nics_per_node

    def vertices() -> Iterable[tuple[str, dict[str, Any]]]:
        for n in range(nodes):
            yield f"node{n}/nvswitch", {"kind": "nvswitch", "node": n}
            for i in range(gpn):
                yield f"node{n}/gpu{i}", {"kind": "gpu", "node": n, "index": i}
            for j in range(nics):
                yield nic(n, j), {"kind": "nic", "node": n, "index": j}

    G.add_nodes_from(vertices())
    G.add_edges_from(
        ((f"node{n}/gpu{i}", f"node{n}/nvswitch") for n in range(nodes) for i in range(gpn)),
        capacity=GBps_to_Bps(spec.nvlink_GBps),
        links=1,
        kind="nvlink",
    )
    G.add_edges_from(
        ((f"node{n}/gpu{i}", nic(n, i * nics // gpn)) for n in range(nodes) for i in range(gpn)),
        capacity=GBps_to_Bps(spec.pcie_GBps),
        links=1,
        kind="pcie",
    )


def add_switches(
    G: nx.Graph, names: Iterable[str], kind: str, spec: Spec, *, plane: int = 0, rail: int = -1
) -> None:
    """Add switches of one tier (``kind`` leaf, spine or core) with their schema attributes."""
    G.add_nodes_from(names, kind=kind, tier=TIERS[kind], plane=plane, rail=rail, ports=spec.k)


def join(G: nx.Graph, lower: list[str], upper: list[str], cables: int, spec: Spec) -> None:
    """Join every switch of ``lower`` to every switch of ``upper`` by ``cables`` parallel cables."""
    G.add_edges_from(
        ((a, b) for a in lower for b in upper),
        capacity=cables * spec.line_Bps,
        links=cables,
        kind="fabric",
    )


def add_endpoints(G: nx.Graph, pairs: Iterable[tuple[str, str]], spec: Spec) -> None:
    """Add one ``endpoint`` cable per (NIC, leaf) pair."""
    G.add_edges_from(pairs, capacity=spec.line_Bps, links=1, kind="endpoint")


def smallest_divisor(n: int, at_least: int) -> int:
    """The smallest divisor of ``n`` that is ``>= at_least`` (``n`` itself at worst)."""
    for d in range(max(1, at_least), n + 1):
        if n % d == 0:
            return d
    raise ValueError(f"no divisor of {n} is at least {at_least}")  # a bug: callers check
