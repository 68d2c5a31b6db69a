"""A fabric's counts in closed form: what :func:`topo.fabric.summarize` counts on the graph
:func:`topo.builders.build` would build, without building it.

Each family's counts come from the sizing rules its builder applies (the same helpers:
:func:`~topo.builders.clos.two_layer_sizes`, :func:`~topo.builders.clos.spines_for`,
:func:`~topo.builders.pods.pod_counts`, :func:`~topo.builders.railonly.rail_only_counts`,
:func:`~topo.builders.hpn.hpn_counts`, :func:`~topo.builders.dragonfly.dragonfly_design`,
:func:`~topo.builders.slimfly.slimfly_design`), which are also those :func:`topo.cost.plan`
prices (``docs/builders.md``). ``P``-port NICs (``nic_ports``, or ``planes_per_nic`` through
:func:`~topo.builders.multiplane.split_planes`) make ``P`` copies of the switches and cables
(:mod:`topo.builders.ports`). The tests hold every family against the built graph's counts.
"""

from __future__ import annotations

from typing import Any

from topo.builders import clos, dragonfly, hpn, railonly, rails, slimfly
from topo.builders._common import check_gpus, smallest_divisor
from topo.builders.multiplane import split_planes
from topo.builders.pods import pod_counts
from topo.fabric import FabricSummary
from topo.spec import FabricSpec

__all__ = ["fabric_counts"]

Tiers = dict[str, int]
"""Switches by tier name (``leaf``, ``spine``, ``core``), as :func:`topo.fabric.summarize`."""


def fabric_counts(family: str | FabricSpec, **options: Any) -> FabricSummary:
    """The counts of the fabric :func:`topo.builders.build` makes, in closed form.

    Parameters
    ----------
    family : str or FabricSpec
        As for :func:`topo.builders.build` (a family name, or the whole spec).
    **options
        As for :func:`topo.builders.build`.

    Returns
    -------
    FabricSummary
        Equal to ``topo.fabric.summarize(build(family, **options))``: GPUs, servers, endpoints
        (NIC ports cabled to a switch), switches by tier, switch-to-switch and endpoint
        cables, planes and the family's ceiling ``max_gpus`` (GPUs). No size limit: a fabric
        above the 524,288 GPUs :func:`topo.builders.build` holds in one graph is counted too.

    Raises
    ------
    SpecError
        What :func:`topo.builders.build` refuses (radix, node shape, oversubscription, a
        family option, more GPUs than the family reaches), with the same message.

    Examples
    --------
    >>> s = fabric_counts("mpft", tiers=3)      # 8 planes of k^3/4 endpoints, 5k^2/4 switches
    >>> s.gpus, s.switches, s.links
    (524288, 40960, 1048576)

    References
    ----------
    M. Al-Fares et al., SIGCOMM 2008 (k-ary fat tree: ``k^3/4`` hosts, ``5k^2/4`` switches);
    W. Zhao et al., ISCA 2025, Table 3; J. Kim et al., ISCA 2008 (Dragonfly); M. Besta and
    T. Hoefler, SC14 (Slim Fly); K. Qian et al., SIGCOMM 2024 (HPN).
    """
    if isinstance(family, FabricSpec):
        spec = family.replace(**options) if options else family
    else:
        spec = FabricSpec.from_options(family, **options)
    spec = split_planes(spec)
    tiers, links, endpoints, planes, gpus, top = _COUNTS[spec.family](spec)
    ports = spec.nic_ports or 1
    tiers = {t: n * ports for t, n in tiers.items() if n}
    return FabricSummary(
        family=spec.family,
        gpus=gpus,
        nodes=gpus // spec.server.gpus,
        endpoints=endpoints * ports,
        switches=sum(tiers.values()),
        switches_by_tier=tiers,
        links=links * ports,
        endpoint_links=endpoints * ports,
        planes=planes * ports,
        max_gpus=top,
        cables=(links + endpoints) * ports,
    )


Counted = tuple[Tiers, int, int, int, int, int]
"""(switches by tier, switch-to-switch cables, endpoint cables, planes, GPUs, ceiling)."""


def _gpus(spec: FabricSpec, limit: tuple[int, str], names: tuple[str, ...] = ()) -> int:
    return check_gpus(spec, limit[0], limit[1], names)


def _ft2(spec: FabricSpec) -> Counted:
    limit = clos.ft2_limit(spec)
    gpus = _gpus(spec, limit)
    endpoints = gpus // spec.server.gpus * spec.server.nics
    leaves, spines, cables = clos.two_layer_sizes(endpoints, spec)
    return {"leaf": leaves, "spine": spines}, leaves * spines * cables, endpoints, 1, gpus, limit[0]


def _ft3(spec: FabricSpec) -> Counted:
    limit = clos.ft3_limit(spec)
    gpus = _gpus(spec, limit)
    endpoints = gpus // spec.server.gpus * spec.server.nics
    if endpoints <= spec.switch.ports:
        return {"leaf": 1}, 0, endpoints, 1, gpus, limit[0]
    half = spec.switch.ports // 2
    pods = -(-endpoints // (half * half))
    # leaf-spine: half x half single cables a pod; with cores, every spine's half uplinks
    cores = half * smallest_divisor(half, -(-pods * half // spec.switch.ports))
    tiers = {"leaf": pods * half, "spine": pods * half, "core": cores if pods > 1 else 0}
    links = pods * half * half * (2 if pods > 1 else 1)
    return tiers, links, endpoints, 1, gpus, limit[0]


def _mrft(spec: FabricSpec) -> Counted:
    limit = rails.mrft_limit(spec)
    gpus = _gpus(spec, limit, ("nics_per_node",) if limit[0] == 0 else ())
    nodes, n_rails = gpus // spec.server.gpus, spec.server.nics
    endpoints = nodes * n_rails
    if spec.tiers == 3:
        leaves, spines, cores, links = pod_counts(nodes, n_rails, spec)
        return {"leaf": leaves, "spine": spines, "core": cores}, links, endpoints, 1, gpus, limit[0]
    if n_rails == 1 and nodes <= spec.switch.ports:
        return {"leaf": 1}, 0, endpoints, 1, gpus, limit[0]
    leaves = n_rails * -(-nodes // spec.down_ports)
    spines, cables = clos.spines_for(leaves, spec)
    return {"leaf": leaves, "spine": spines}, leaves * spines * cables, endpoints, 1, gpus, limit[0]


def _mpft(spec: FabricSpec) -> Counted:
    limit = rails.mpft_limit(spec)
    gpus = _gpus(spec, limit)
    nodes, planes = gpus // spec.server.gpus, spec.server.nics
    if spec.tiers == 3:
        leaves, spines, cores, links = pod_counts(nodes, 1, spec)
    else:
        leaves, spines, cables = clos.two_layer_sizes(nodes, spec)
        cores, links = 0, leaves * spines * cables
    tiers = {"leaf": planes * leaves, "spine": planes * spines, "core": planes * cores}
    return tiers, planes * links, nodes * planes, planes, gpus, limit[0]


def _rail_only(spec: FabricSpec) -> Counted:
    limit = railonly.rail_only_limit(spec)
    gpus = _gpus(spec, limit)
    nodes, n_rails = gpus // spec.server.gpus, spec.server.nics
    leaves, spines, links = railonly.rail_only_counts(nodes, spec)
    tiers = {"leaf": n_rails * leaves, "spine": n_rails * spines}
    return tiers, n_rails * links, nodes * n_rails, n_rails, gpus, limit[0]


def _hpn(spec: FabricSpec) -> Counted:
    limit = hpn.hpn_limit(spec)
    gpus = _gpus(spec, limit)
    tors, aggs, links, ports = hpn.hpn_counts(gpus // spec.server.gpus, spec)
    return {"leaf": tors, "spine": aggs}, links, ports, hpn.HPN_PORTS, gpus, limit[0]


def _dragonfly(spec: FabricSpec) -> Counted:
    sizes, top, text = dragonfly.dragonfly_design(spec)
    gpus = check_gpus(spec, top, text)
    a, g = sizes.routers_per_group, sizes.groups
    links = g * a * (a - 1) // 2 + dragonfly.global_link_count(a, sizes.global_ports, g)
    endpoints = gpus // spec.server.gpus * spec.server.nics
    return {"leaf": a * g}, links, endpoints, 1, gpus, top


def _slimfly(spec: FabricSpec) -> Counted:
    sizes, top, text = slimfly.slimfly_design(spec)
    gpus = check_gpus(spec, top, text)
    endpoints = gpus // spec.server.gpus * spec.server.nics
    return {"leaf": sizes.routers}, sizes.links, endpoints, 1, gpus, top


_COUNTS = {
    "ft2": _ft2,
    "ft3": _ft3,
    "mrft": _mrft,
    "mpft": _mpft,
    "dragonfly": _dragonfly,
    "slimfly": _slimfly,
    "rail-only": _rail_only,
    "hpn": _hpn,
}
