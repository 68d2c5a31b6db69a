"""Builders of GPU-cluster fabrics, down to GPUs, NVSwitches and NICs.

Families: ``ft2`` (two-layer fat tree, :func:`~topo.builders.clos.two_layer_fat_tree`),
``ft3`` (three-layer fat tree, :func:`~topo.builders.clos.three_layer_fat_tree`), ``mrft``
(multi-rail fat tree, :func:`~topo.builders.rails.multi_rail_fat_tree`), ``mpft``
(multi-plane fat tree, :func:`~topo.builders.rails.multi_plane_fat_tree`), ``dragonfly``
(:func:`~topo.builders.dragonfly.dragonfly`), ``slimfly``
(:func:`~topo.builders.slimfly.slim_fly`), ``rail-only`` (rail switches, no spine,
:func:`~topo.builders.railonly.rail_only`) and ``hpn`` (Alibaba HPN's dual-ToR dual-plane
pod, :func:`~topo.builders.hpn.hpn`). :func:`~topo.builders.planes_used.drive_planes` is
the fabric as software sees it when it drives only some of the planes or rails. Every builder
returns a :class:`networkx.Graph` in the schema of :mod:`topo.fabric`; the sizing rules are in
``docs/builders.md``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import networkx as nx

from topo.builders import clos, dragonfly, hpn, railonly, rails, slimfly
from topo.builders._common import BUILT_HOST_REGEX, MAX_BUILD_GPUS
from topo.builders.clos import three_layer_fat_tree, two_layer_fat_tree
from topo.builders.counts import fabric_counts
from topo.builders.dragonfly import dragonfly as dragonfly_fabric
from topo.builders.hpn import hpn as hpn_pod
from topo.builders.multiplane import split_planes
from topo.builders.ports import with_nic_ports
from topo.builders.railonly import rail_only
from topo.builders.rails import multi_plane_fat_tree, multi_rail_fat_tree
from topo.builders.slimfly import slim_fly
from topo.errors import SpecError
from topo.spec import FAMILIES, FAMILY_OPTIONS, FabricSpec, ServerSpec, SwitchSpec

__all__ = [
    "BUILT_HOST_REGEX",
    "FAMILIES",
    "FabricSpec",
    "ServerSpec",
    "SwitchSpec",
    "build",
    "fabric_counts",
    "max_gpus",
    "two_layer_fat_tree",
    "three_layer_fat_tree",
    "multi_rail_fat_tree",
    "multi_plane_fat_tree",
    "dragonfly_fabric",
    "slim_fly",
    "rail_only",
    "hpn_pod",
]

_BUILDERS: dict[str, Callable[..., nx.Graph]] = {
    "ft2": two_layer_fat_tree,
    "ft3": three_layer_fat_tree,
    "mrft": multi_rail_fat_tree,
    "mpft": multi_plane_fat_tree,
    "dragonfly": dragonfly_fabric,
    "slimfly": slim_fly,
    "rail-only": rail_only,
    "hpn": hpn_pod,
}
_LIMITS: dict[str, Callable[[FabricSpec], tuple[int, str]]] = {
    "ft2": clos.ft2_limit,
    "ft3": clos.ft3_limit,
    "mrft": rails.mrft_limit,
    "mpft": rails.mpft_limit,
    "dragonfly": dragonfly.dragonfly_limit,
    "slimfly": slimfly.slimfly_limit,
    "rail-only": railonly.rail_only_limit,
    "hpn": hpn.hpn_limit,
}
OPTIONS = FAMILY_OPTIONS
"""Family-specific keyword arguments of :func:`build` and :func:`max_gpus`
(:data:`topo.spec.FAMILY_OPTIONS`)."""


def _spec(family: str | FabricSpec, options: dict[str, Any]) -> FabricSpec:
    """The spec of a call: a FabricSpec (with ``options`` changed), or one made from a family
    name and flat options."""
    if isinstance(family, FabricSpec):
        return family.replace(**options) if options else family
    return FabricSpec.from_options(family, **options)


def build(family: str | FabricSpec, **options: Any) -> nx.Graph:
    """Build a fabric of the named family.

    Dispatches to :func:`~topo.builders.clos.two_layer_fat_tree` (``ft2``),
    :func:`~topo.builders.clos.three_layer_fat_tree` (``ft3``),
    :func:`~topo.builders.rails.multi_rail_fat_tree` (``mrft``),
    :func:`~topo.builders.rails.multi_plane_fat_tree` (``mpft``),
    :func:`~topo.builders.dragonfly.dragonfly` (``dragonfly``),
    :func:`~topo.builders.slimfly.slim_fly` (``slimfly``),
    :func:`~topo.builders.railonly.rail_only` (``rail-only``) or
    :func:`~topo.builders.hpn.hpn` (``hpn``); their docstrings list the node
    names and every node and edge attribute. ``options`` are the family-specific arguments
    (:data:`OPTIONS`: ``routers_per_group``, ``endpoints_per_router``, ``global_ports``,
    ``groups``, ``arrangement`` for ``dragonfly``; ``q``, ``endpoints_per_router`` for
    ``slimfly``); options left at None take the family's default.

    Parameters
    ----------
    family : str or FabricSpec
        One of :data:`FAMILIES`, or the whole spec (then ``options`` change it).
    **options
        The fields of :class:`~topo.spec.FabricSpec` by their flat names (as spec files
        spell them): ``switch_ports`` (radix ``k``, even, at least 4; default 64),
        ``link_gbps`` (Gb/s per cable, 400), ``gpus`` (a positive multiple of
        ``gpus_per_node``; None builds the family's maximum, :func:`max_gpus`),
        ``gpus_per_node`` (8), ``nics_per_node`` (8; divides ``gpus_per_node``; rails in MRFT,
        planes in MPFT), ``nvlink_GBps`` (GPU to NVSwitch, GB/s per direction, 200),
        ``pcie_GBps`` (GPU to NIC, GB/s per direction, 64), ``oversubscription`` (leaf
        down/up bandwidth, 1 = non-blocking; must be 1 for ``ft3``), ``nic_ports`` (ports per
        NIC, each on its own port plane, :mod:`topo.builders.ports`), ``planes_per_nic``
        (1, 2 or 4 planes of a multi-plane NIC, the NIC's and every switch port's rate split
        over them, :mod:`topo.builders.multiplane`), ``name``, and the
        family options (``tiers`` 2 or 3 for ``mrft`` and ``mpft``).

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
    spec = split_planes(_spec(family, options))
    # Refuse a graph too large to hold before building it.
    target = spec.gpus if spec.gpus is not None else max_gpus(spec)
    if target > MAX_BUILD_GPUS:
        raise SpecError(
            f"topo builds at most {MAX_BUILD_GPUS:,} GPUs in one graph; this {spec.family} would "
            f"have {target:,}"
            + ("" if spec.gpus is not None else " (pass gpus for a smaller one)"),
            param="gpus",
        )
    G = _BUILDERS[spec.family](
        spec.switch,
        spec.server,
        gpus=spec.gpus,
        oversubscription=spec.oversubscription,
        **spec.options,
    )
    if spec.nic_ports is not None:
        G = with_nic_ports(G, spec.nic_ports)
    if spec.name is not None:
        G.graph["name"] = spec.name
    return G


def max_gpus(family: str | FabricSpec, **options: Any) -> int:
    """The most GPUs a family connects with the given switch and server, in whole servers.

    ``ft2``: ``k*d`` endpoints (``d = k - k/(r+1)`` leaf down ports; ``k^2/2`` when
    non-blocking); ``ft3``: ``k^3/4`` endpoints; ``mpft``: ``k*d`` servers (one endpoint per
    server on each of ``nics_per_node`` planes); ``mrft``: ``(k // nics_per_node) * d``
    servers (the shared spines reach ``k`` leaves, split evenly over the rails). Endpoint
    counts become whole servers of ``nics_per_node`` NICs and ``gpus_per_node`` GPUs.
    ``dragonfly``: ``a·p·g`` endpoints (``g = a·h + 1`` unless ``groups`` is given; balanced
    ``a = 2p = 2h``, 16 for 64 ports); ``slimfly``: ``2q²·p`` endpoints (``q`` the largest
    prime power whose ``k' + ceil(k'/2)`` fits the radix: 27 for 64 ports); ``rail-only``:
    ``k*d`` HB domains; ``hpn``: ``(k - k/16) // nics_per_node`` segments of ``k`` hosts (one
    pod: 15,360 GPUs for 128 ports). ``options`` as for
    :func:`build`.

    Parameters
    ----------
    family : str or FabricSpec
        One of :data:`FAMILIES`, or the whole spec (its ``gpus`` is ignored).
    **options
        Flat options as for :func:`build` (``switch_ports``, ``gpus_per_node``,
        ``nics_per_node``, ``oversubscription``, the family options, ...).

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
    [2048, 65536, 2048, 16384, 262656, 30616, 16384, 3584]
    >>> max_gpus("ft2", oversubscription=3)
    3072

    References
    ----------
    Closed forms of folded Clos networks (k-port two-layer: k leaves, k/2 spines, k^2/2
    endpoints; three-layer: 5k^2/4 switches, k^3/4 endpoints; M. Al-Fares et al., SIGCOMM
    2008); W. Zhao et al., ISCA 2025, Table 3 and §5.1.
    """
    spec = split_planes(dataclasses.replace(_spec(family, options), gpus=None))
    return _LIMITS[spec.family](spec)[0]
