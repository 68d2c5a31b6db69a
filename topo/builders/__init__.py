"""Builders of GPU-cluster fabrics, down to GPUs, NVSwitches and NICs.

Families: ``ft2`` (two-layer fat tree, :func:`~topo.builders.clos.two_layer_fat_tree`),
``ft3`` (three-layer fat tree, :func:`~topo.builders.clos.three_layer_fat_tree`), ``mrft``
(multi-rail fat tree, :func:`~topo.builders.rails.multi_rail_fat_tree`), ``mpft``
(multi-plane fat tree, :func:`~topo.builders.rails.multi_plane_fat_tree`), ``dragonfly``
(:func:`~topo.builders.dragonfly.dragonfly`) and ``slimfly``
(:func:`~topo.builders.slimfly.slim_fly`). Every builder returns
a :class:`networkx.Graph` in the schema of :mod:`topo.fabric`; the sizing rules are in
``docs/builders.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import networkx as nx

from topo.builders import clos, dragonfly, rails, slimfly
from topo.builders._common import MAX_BUILD_GPUS, check_spec
from topo.builders.clos import three_layer_fat_tree, two_layer_fat_tree
from topo.builders.dragonfly import dragonfly as dragonfly_fabric
from topo.builders.rails import multi_plane_fat_tree, multi_rail_fat_tree
from topo.builders.slimfly import slim_fly
from topo.errors import SpecError

__all__ = [
    "FAMILIES",
    "build",
    "max_gpus",
    "two_layer_fat_tree",
    "three_layer_fat_tree",
    "multi_rail_fat_tree",
    "multi_plane_fat_tree",
    "dragonfly_fabric",
    "slim_fly",
]

FAMILIES: tuple[str, ...] = ("ft2", "ft3", "mrft", "mpft", "dragonfly", "slimfly")
"""The fabric families :func:`build` knows."""

_BUILDERS: dict[str, Callable[..., nx.Graph]] = {
    "ft2": two_layer_fat_tree,
    "ft3": three_layer_fat_tree,
    "mrft": multi_rail_fat_tree,
    "mpft": multi_plane_fat_tree,
    "dragonfly": dragonfly_fabric,
    "slimfly": slim_fly,
}
_LIMITS: dict[str, Callable[..., tuple[int, str]]] = {
    "ft2": clos._ft2_limit,
    "ft3": clos._ft3_limit,
    "mrft": rails._mrft_limit,
    "mpft": rails._mpft_limit,
    "dragonfly": dragonfly._dragonfly_limit,
    "slimfly": slimfly._slimfly_limit,
}
OPTIONS: dict[str, frozenset[str]] = {
    "dragonfly": frozenset(
        {"routers_per_group", "endpoints_per_router", "global_ports", "groups", "arrangement"}
    ),
    "slimfly": frozenset({"q", "endpoints_per_router"}),
}
"""Family-specific keyword arguments of :func:`build` and :func:`max_gpus`."""


def _family(family: Any) -> str:
    name = getattr(family, "value", family)  # a CLI Enum member or a plain string
    if name not in _BUILDERS:
        raise SpecError(f"unknown family {name!r}; choose one of {', '.join(FAMILIES)}")
    return str(name)


def build(
    family: str,
    *,
    switch_ports: int = 64,
    link_gbps: float = 400.0,
    gpus: int | None = None,
    gpus_per_node: int = 8,
    nics_per_node: int = 8,
    nvlink_GBps: float = 200.0,
    pcie_GBps: float = 64.0,
    oversubscription: float = 1.0,
    **options: Any,
) -> nx.Graph:
    """Build a fabric of the named family.

    Dispatches to :func:`~topo.builders.clos.two_layer_fat_tree` (``ft2``),
    :func:`~topo.builders.clos.three_layer_fat_tree` (``ft3``),
    :func:`~topo.builders.rails.multi_rail_fat_tree` (``mrft``),
    :func:`~topo.builders.rails.multi_plane_fat_tree` (``mpft``),
    :func:`~topo.builders.dragonfly.dragonfly` (``dragonfly``) or
    :func:`~topo.builders.slimfly.slim_fly` (``slimfly``); their docstrings list the node
    names and every node and edge attribute. ``options`` are the family-specific arguments
    (:data:`OPTIONS`: ``routers_per_group``, ``endpoints_per_router``, ``global_ports``,
    ``groups``, ``arrangement`` for ``dragonfly``; ``q``, ``endpoints_per_router`` for
    ``slimfly``); options left at None take the family's default.

    Parameters
    ----------
    family : str
        One of :data:`FAMILIES`.
    switch_ports : int
        Radix ``k`` of every switch (ports); even, at least 4.
    link_gbps : float
        Rate of one cable (NIC-switch and switch-switch), Gb/s.
    gpus : int or None
        GPUs to connect, a positive multiple of ``gpus_per_node``; None builds the family's
        maximum (:func:`max_gpus`).
    gpus_per_node : int
        GPUs per server.
    nics_per_node : int
        NICs (fabric endpoints) per server; divides ``gpus_per_node``. Rails in MRFT, planes
        in MPFT.
    nvlink_GBps : float
        NVLink rate from each GPU to the server's NVSwitch, GB/s per direction.
    pcie_GBps : float
        PCIe rate between a GPU and its NIC, GB/s per direction.
    oversubscription : float
        Leaf down-port over up-port bandwidth (1 = non-blocking); must be 1 for ``ft3``.

    Returns
    -------
    networkx.Graph
        The fabric in the schema of :mod:`topo.fabric`; capacities in B/s per direction.

    Raises
    ------
    SpecError
        Unknown family, or any argument the family's builder refuses (radix, node shape,
        rates, oversubscription, more GPUs than the family reaches), or more than
        524,288 GPUs (``MAX_BUILD_GPUS``: the largest graph topo builds).

    Examples
    --------
    >>> from topo.fabric import summarize
    >>> s = summarize(build("mpft"))
    >>> s.endpoints, s.switches, s.links
    (16384, 768, 16384)
    >>> build("ft2", gpus=128).graph["name"]
    'ft2-128'

    References
    ----------
    W. Zhao et al., "Insights into DeepSeek-V3: Scaling Challenges and Reflections on Hardware
    for AI Architectures", ISCA 2025, Table 3 and §5.1. M. Al-Fares et al., "A Scalable,
    Commodity Data Center Network Architecture", SIGCOMM 2008.
    """
    name = _family(family)
    options = _options(name, options)
    # Refuse a graph too large to hold before building it (bad types are the builder's to
    # report, so only whole numbers are compared here).
    target = gpus
    if gpus is None:
        target = max_gpus(
            name,
            switch_ports=switch_ports,
            gpus_per_node=gpus_per_node,
            nics_per_node=nics_per_node,
            oversubscription=oversubscription,
            **options,
        )
    if isinstance(target, int) and not isinstance(target, bool) and target > MAX_BUILD_GPUS:
        raise SpecError(
            f"topo builds at most {MAX_BUILD_GPUS:,} GPUs in one graph; this {name} would have "
            f"{target:,}" + ("" if gpus is not None else " (pass --gpus for a smaller one)")
        )
    return _BUILDERS[name](
        switch_ports=switch_ports,
        link_gbps=link_gbps,
        gpus=gpus,
        gpus_per_node=gpus_per_node,
        nics_per_node=nics_per_node,
        nvlink_GBps=nvlink_GBps,
        pcie_GBps=pcie_GBps,
        oversubscription=oversubscription,
        **options,
    )


def _options(name: str, options: dict[str, Any]) -> dict[str, Any]:
    """The family-specific options that are set; SpecError for one the family does not take."""
    given = {k: v for k, v in options.items() if v is not None}
    extra = set(given) - OPTIONS.get(name, frozenset())
    if extra:
        raise SpecError(f"{name} takes no option {', '.join(sorted(extra))}")
    return given


def max_gpus(
    family: str,
    *,
    switch_ports: int = 64,
    gpus_per_node: int = 8,
    nics_per_node: int = 8,
    oversubscription: float = 1.0,
    **options: Any,
) -> int:
    """The most GPUs a family connects with the given switch and server, in whole servers.

    ``ft2``: ``k*d`` endpoints (``d = k - k/(r+1)`` leaf down ports; ``k^2/2`` when
    non-blocking); ``ft3``: ``k^3/4`` endpoints; ``mpft``: ``k*d`` servers (one endpoint per
    server on each of ``nics_per_node`` planes); ``mrft``: ``(k // nics_per_node) * d``
    servers (the shared spines reach ``k`` leaves, split evenly over the rails). Endpoint
    counts become whole servers of ``nics_per_node`` NICs and ``gpus_per_node`` GPUs.
    ``dragonfly``: ``a·p·g`` endpoints (``g = a·h + 1`` unless ``groups`` is given; balanced
    ``a = 2p = 2h``, 16 for 64 ports); ``slimfly``: ``2q²·p`` endpoints (``q`` the largest
    prime power whose ``k' + ceil(k'/2)`` fits the radix: 27 for 64 ports). ``options`` as for
    :func:`build`.

    Parameters
    ----------
    family : str
        One of :data:`FAMILIES`.
    switch_ports : int
        Radix ``k`` (ports); even, at least 4.
    gpus_per_node : int
        GPUs per server.
    nics_per_node : int
        NICs per server; divides ``gpus_per_node``.
    oversubscription : float
        Leaf down-port over up-port bandwidth (1 = non-blocking); must be 1 for ``ft3``.

    Returns
    -------
    int
        GPUs (0 if not one server fits, e.g. an MRFT with more rails than switch ports).

    Raises
    ------
    SpecError
        Unknown family, bad radix, node shape or oversubscription.

    Examples
    --------
    >>> [max_gpus(f) for f in FAMILIES]
    [2048, 65536, 2048, 16384, 262656, 30616]
    >>> max_gpus("ft2", oversubscription=3)
    3072

    References
    ----------
    Closed forms of folded Clos networks (k-port two-layer: k leaves, k/2 spines, k^2/2
    endpoints; three-layer: 5k^2/4 switches, k^3/4 endpoints; M. Al-Fares et al., SIGCOMM
    2008); W. Zhao et al., ISCA 2025, Table 3 and §5.1.
    """
    name = _family(family)
    spec = check_spec(
        name,
        switch_ports=switch_ports,
        gpus_per_node=gpus_per_node,
        nics_per_node=nics_per_node,
        oversubscription=oversubscription,
        nonblocking_only=name in ("ft3", "dragonfly", "slimfly"),
    )
    return _LIMITS[name](spec, **_options(name, options))[0]
