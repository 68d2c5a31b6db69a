"""Folded Clos networks (fat trees) of GPU servers: two layers (FT2) and three layers (FT3).

Sizing rules (see ``docs/builders.md``):

- A leaf of ``k`` ports at oversubscription ``r`` has ``u = k/(r+1)`` up ports and
  ``d = k - u`` down ports. Spines use all ``k`` ports downward.
- Two layers for ``E`` endpoints: if ``E <= k`` one leaf and no spine; otherwise
  ``L = ceil(E/d)`` leaves, each keeping its ``u`` uplinks, and ``S`` spines, the smallest divisor
  of ``u`` with ``S*k >= L*u``; each leaf is joined to each spine by ``u/S`` parallel cables.
  Full size: ``k`` leaves, ``u`` spines, ``k*d`` endpoints (``k^2/2`` when non-blocking).
- Three layers (non-blocking only) for ``E`` endpoints: if ``E <= k`` one leaf; otherwise
  ``P = ceil(E / (k/2)^2)`` pods, each of ``k/2`` leaves and ``k/2`` pod spines joined all to all by
  single cables; with ``P > 1`` a core layer of ``k/2`` groups of ``c`` cores, ``c`` the smallest
  divisor of ``k/2`` with ``c*k >= P*k/2``; spine ``i`` of every pod is joined to each core of
  group ``i`` by ``(k/2)/c`` cables. Full size: ``k`` pods, ``(k/2)^2`` cores, ``5k^2/4``
  switches, ``k^3/4`` endpoints.

NICs are placed consecutively: endpoint ``e = n*nics_per_node + j`` (NIC ``j`` of server ``n``)
takes the ``e``-th leaf down port.
"""

from __future__ import annotations

import networkx as nx

from topo.builders._common import (
    add_endpoints,
    add_servers,
    add_switches,
    check_gpus,
    fabric_spec,
    join,
    new_graph,
    nic,
    over_text,
    smallest_divisor,
)
from topo.spec import FabricSpec, ServerSpec, SwitchSpec

__all__ = ["two_layer_fat_tree", "three_layer_fat_tree"]


def spines_for(leaves: int, spec: FabricSpec) -> tuple[int, int]:
    """Spines and cables per leaf-spine pair for ``leaves`` leaves of ``spec.up_ports`` uplinks.

    The smallest divisor ``S`` of ``u`` with ``S*k >= leaves*u``; each leaf-spine pair gets
    ``u/S`` cables. Needs ``leaves <= k``.
    """
    need = -(-leaves * spec.up_ports // spec.switch.ports)
    spines = smallest_divisor(spec.up_ports, need)
    return spines, spec.up_ports // spines


def two_layer_sizes(endpoints: int, spec: FabricSpec) -> tuple[int, int, int]:
    """(leaves, spines, cables per leaf-spine pair) of the smallest two-layer fabric for
    ``endpoints`` endpoints; ``(1, 0, 0)`` when they fit on one switch."""
    if endpoints <= spec.switch.ports:
        return 1, 0, 0
    leaves = -(-endpoints // spec.down_ports)
    spines, cables = spines_for(leaves, spec)
    return leaves, spines, cables


def add_two_layer(
    G: nx.Graph, endpoints: int, spec: FabricSpec, *, prefix: str = "", plane: int = 0
) -> list[str]:
    """Add the leaves and spines of a two-layer fabric for ``endpoints`` endpoints.

    Switches are named ``{prefix}leaf{j}`` and ``{prefix}spine{j}``. Returns the leaf names;
    endpoint ``e`` belongs on leaf ``e // spec.down_ports`` (on leaf 0 when there is a single leaf).
    """
    n_leaves, n_spines, cables = two_layer_sizes(endpoints, spec)
    leaves = [f"{prefix}leaf{j}" for j in range(n_leaves)]
    spines = [f"{prefix}spine{j}" for j in range(n_spines)]
    add_switches(G, leaves, "leaf", spec, plane=plane)
    add_switches(G, spines, "spine", spec, plane=plane)
    if spines:
        join(G, leaves, spines, cables, spec)
    return leaves


def ft2_limit(spec: FabricSpec) -> tuple[int, str]:
    """The most GPUs a two-layer fat tree of ``spec``'s switch and server holds (whole
    servers), and the sentence that states the ceiling (for error messages).

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
    k, down = spec.switch.ports, spec.down_ports
    endpoints = k * down
    nodes = endpoints // spec.server.nics
    gpus = nodes * spec.server.gpus
    text = (
        f"a two-layer fat tree of {k}-port switches{over_text(spec)} holds at most "
        f"{endpoints} endpoints ({k} leaves of {down} down ports), {nodes} nodes of "
        f"{spec.server.gpus} GPUs and {spec.server.nics} NICs: {gpus} GPUs"
    )
    return gpus, text


def ft3_limit(spec: FabricSpec) -> tuple[int, str]:
    """The most GPUs a three-layer fat tree of ``spec``'s switch and server holds (whole
    servers), and the sentence that states the ceiling (for error messages).

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
    k = spec.switch.ports
    endpoints = k**3 // 4
    nodes = endpoints // spec.server.nics
    gpus = nodes * spec.server.gpus
    text = (
        f"a three-layer fat tree of {k}-port switches holds at most {endpoints} endpoints "
        f"(k^3/4), {nodes} nodes of {spec.server.gpus} GPUs and {spec.server.nics} NICs: "
        f"{gpus} GPUs"
    )
    return gpus, text


def two_layer_fat_tree(
    switch: SwitchSpec | None = None,
    server: ServerSpec | None = None,
    *,
    gpus: int | None = None,
    oversubscription: float = 1.0,
) -> nx.Graph:
    """Build a two-layer fat tree (folded Clos, leaf-spine) of GPU servers: family ``ft2``.

    Every NIC is cabled to a leaf; NICs take the leaves' down ports consecutively (NIC ``j`` of
    server ``n`` is endpoint ``e = n*nics_per_node + j`` on leaf ``e // d``). A leaf of ``k``
    ports has ``u = k/(r+1)`` up and ``d = k - u`` down ports; spines use all ``k`` ports
    downward. For ``E`` endpoints: if ``E <= k`` a single leaf ``leaf0`` and no spine;
    otherwise ``L = ceil(E/d)`` leaves and ``S`` spines, ``S`` the smallest divisor of ``u``
    with ``S*k >= L*u``, every leaf joined to every spine by ``u/S`` cables (one edge).

    Parameters
    ----------
    switch : SwitchSpec or None
        The switch of every tier: radix ``k`` (ports), cable rate (Gb/s, NIC-leaf and
        switch-switch); None: 64 ports of 400 Gb/s.
    server : ServerSpec or None
        GPUs and NICs per server, NVLink and PCIe rates (GB/s per direction); None: 8 GPUs,
        8 NICs, 200 and 64 GB/s. Every NIC is a fabric endpoint.
    gpus : int or None
        GPUs to connect, a positive multiple of the server's GPUs; None builds the family's
        maximum, :func:`topo.builders.max_gpus`.
    oversubscription : float
        Leaf down-port over up-port bandwidth ``r`` (1 = non-blocking); ``k/(r+1)`` must be a
        whole number.

    Returns
    -------
    networkx.Graph
        The fabric (schema of :mod:`topo.fabric`). Node attributes:

        - ``gpu`` ``node{n}/gpu{i}``: ``kind``, ``node`` (int ``n``), ``index`` (int ``i``);
        - ``nvswitch`` ``node{n}/nvswitch``: ``kind``, ``node`` (also with one GPU per node);
        - ``nic`` ``node{n}/nic{j}``: ``kind``, ``node``, ``index`` (int ``j``);
        - ``leaf`` ``leaf{j}`` and ``spine`` ``spine{j}``: ``kind``, ``tier`` (1, 2),
          ``plane`` (0), ``rail`` (-1), ``ports`` (``k``).

        Edge attributes ``capacity`` (B/s per direction, summed over cables), ``links``
        (cables) and ``kind``: ``nvlink`` GPU-NVSwitch (``nvlink_GBps``), ``pcie`` GPU ``i`` -
        NIC ``i*nics_per_node//gpus_per_node`` (``pcie_GBps``), ``endpoint`` NIC-leaf (one
        cable, ``link_gbps``), ``fabric`` leaf-spine (``u/S`` cables). ``G.graph``:
        ``family`` ("ft2"), ``name`` ("ft2-<gpus>"), ``planes`` (1), ``switch_ports``,
        ``link_gbps``, ``gpus_per_node``, ``nics_per_node``, ``nvlink_GBps``, ``pcie_GBps``,
        ``oversubscription``, ``max_gpus``.

    Raises
    ------
    SpecError
        Radix odd or below 4; ``nics_per_node`` above or not dividing ``gpus_per_node``; a rate
        not positive; ``oversubscription`` below 1 or not giving whole ports; ``gpus`` not a
        positive multiple of ``gpus_per_node`` or above the ``k*d`` endpoints of a full fabric.

    Examples
    --------
    >>> from topo.fabric import summarize
    >>> from topo.spec import SwitchSpec
    >>> s = summarize(two_layer_fat_tree(SwitchSpec(ports=8)))
    >>> s.switches_by_tier, s.endpoints, s.links
    ({'leaf': 8, 'spine': 4}, 32, 32)
    >>> summarize(two_layer_fat_tree(gpus=1000)).switches_by_tier
    {'leaf': 32, 'spine': 16}

    References
    ----------
    C. Clos, "A study of non-blocking switching networks", Bell System Technical Journal, 1953.
    A k-port two-layer folded Clos: k leaves, k/2 spines, k^2/2 endpoints. W. Zhao et al.,
    "Insights into DeepSeek-V3: Scaling Challenges and Reflections on Hardware for AI
    Architectures", ISCA 2025, Table 3 (FT2 of 64-port switches: 2,048 endpoints, 96 switches,
    2,048 links).
    """
    spec = fabric_spec("ft2", switch, server, gpus=gpus, oversubscription=oversubscription)
    top, limit = ft2_limit(spec)
    n_gpus = check_gpus(spec, top, limit)
    nodes = n_gpus // spec.server.gpus
    endpoints = nodes * spec.server.nics
    G = new_graph(spec, n_gpus, top)
    add_servers(G, nodes, spec)
    leaves = add_two_layer(G, endpoints, spec)
    per_leaf = spec.down_ports if len(leaves) > 1 else spec.switch.ports
    nics = spec.server.nics
    add_endpoints(
        G, ((nic(e // nics, e % nics), leaves[e // per_leaf]) for e in range(endpoints)), spec
    )
    return G


def three_layer_fat_tree(
    switch: SwitchSpec | None = None,
    server: ServerSpec | None = None,
    *,
    gpus: int | None = None,
    oversubscription: float = 1.0,
) -> nx.Graph:
    """Build a three-layer k-ary fat tree (pods of leaves and spines, then cores): ``ft3``.

    Non-blocking only. A pod is ``k/2`` leaves and ``k/2`` pod spines joined all to all by
    single cables; it holds ``(k/2)^2`` endpoints. NICs take the leaves' down ports
    consecutively: endpoint ``e = n*nics_per_node + j`` sits in pod ``e // (k/2)^2`` on leaf
    ``(e mod (k/2)^2) // (k/2)``. For ``E`` endpoints: if ``E <= k`` a single leaf
    ``pod0/leaf0``; otherwise ``P = ceil(E/(k/2)^2)`` full pods; with one pod there is no core
    layer (its spines' up ports stay free); with ``P > 1`` there are ``k/2`` core groups of
    ``c`` cores, ``c`` the smallest divisor of ``k/2`` with ``c*k >= P*k/2``, spine ``i`` of
    every pod joined to each core of group ``i`` by ``(k/2)/c`` cables. Full size (``P = k``):
    ``(k/2)^2`` cores, ``5k^2/4`` switches, ``k^3/4`` endpoints, ``k^3/2`` switch-switch cables.

    Parameters
    ----------
    switch : SwitchSpec or None
        The switch of every tier: radix ``k`` (ports), cable rate (Gb/s, NIC-leaf and
        switch-switch); None: 64 ports of 400 Gb/s.
    server : ServerSpec or None
        GPUs and NICs per server, NVLink and PCIe rates (GB/s per direction); None: 8 GPUs,
        8 NICs, 200 and 64 GB/s. Every NIC is a fabric endpoint.
    gpus : int or None
        GPUs to connect, a positive multiple of the server's GPUs; None builds the family's
        maximum, :func:`topo.builders.max_gpus`.
    oversubscription : float
        Must be 1: the three-layer builder is non-blocking only.

    Returns
    -------
    networkx.Graph
        The fabric (schema of :mod:`topo.fabric`). Node attributes:

        - ``gpu`` ``node{n}/gpu{i}``: ``kind``, ``node`` (int ``n``), ``index`` (int ``i``);
        - ``nvswitch`` ``node{n}/nvswitch``: ``kind``, ``node`` (also with one GPU per node);
        - ``nic`` ``node{n}/nic{j}``: ``kind``, ``node``, ``index`` (int ``j``);
        - ``leaf`` ``pod{q}/leaf{j}``, ``spine`` ``pod{q}/spine{j}``, ``core`` ``core{j}``:
          ``kind``, ``tier`` (1, 2, 3), ``plane`` (0), ``rail`` (-1), ``ports`` (``k``).

        Edge attributes ``capacity`` (B/s per direction, summed over cables), ``links``
        (cables) and ``kind``: ``nvlink`` GPU-NVSwitch (``nvlink_GBps``), ``pcie`` GPU ``i`` -
        NIC ``i*nics_per_node//gpus_per_node`` (``pcie_GBps``), ``endpoint`` NIC-leaf (one
        cable, ``link_gbps``), ``fabric`` leaf-spine (1 cable) and spine-core (``(k/2)/c``
        cables). ``G.graph``: ``family`` ("ft3"), ``name`` ("ft3-<gpus>"), ``planes`` (1),
        ``switch_ports``, ``link_gbps``, ``gpus_per_node``, ``nics_per_node``,
        ``nvlink_GBps``, ``pcie_GBps``, ``oversubscription`` (1.0), ``max_gpus``.

    Raises
    ------
    SpecError
        Radix odd or below 4; ``nics_per_node`` above or not dividing ``gpus_per_node``; a rate
        not positive; ``oversubscription`` other than 1; ``gpus`` not a positive multiple of
        ``gpus_per_node`` or above the ``k^3/4`` endpoints of a full fabric.

    Examples
    --------
    >>> from topo.fabric import summarize
    >>> from topo.spec import SwitchSpec
    >>> s = summarize(three_layer_fat_tree(SwitchSpec(ports=8)))
    >>> s.switches_by_tier, s.endpoints, s.links
    ({'leaf': 32, 'spine': 32, 'core': 16}, 128, 256)

    References
    ----------
    M. Al-Fares, A. Loukissas, A. Vahdat, "A Scalable, Commodity Data Center Network
    Architecture", SIGCOMM 2008 (k-ary fat tree: k pods, (k/2)^2 cores, 5k^2/4 switches,
    k^3/4 hosts). W. Zhao et al., "Insights into DeepSeek-V3", ISCA 2025, Table 3 (FT3 of
    64-port switches: 65,536 endpoints, 5,120 switches, 131,072 links).
    """
    spec = fabric_spec("ft3", switch, server, gpus=gpus, oversubscription=oversubscription)
    top, limit = ft3_limit(spec)
    n_gpus = check_gpus(spec, top, limit)
    nodes = n_gpus // spec.server.gpus
    endpoints = nodes * spec.server.nics
    G = new_graph(spec, n_gpus, top)
    add_servers(G, nodes, spec)
    nics = spec.server.nics
    if endpoints <= spec.switch.ports:
        add_switches(G, ["pod0/leaf0"], "leaf", spec)
        add_endpoints(G, ((nic(e // nics, e % nics), "pod0/leaf0") for e in range(endpoints)), spec)
        return G
    half = spec.switch.ports // 2
    pods = -(-endpoints // (half * half))
    spines_of_pod = []
    for q in range(pods):
        leaves = [f"pod{q}/leaf{j}" for j in range(half)]
        spines = [f"pod{q}/spine{j}" for j in range(half)]
        add_switches(G, leaves, "leaf", spec)
        add_switches(G, spines, "spine", spec)
        join(G, leaves, spines, 1, spec)
        spines_of_pod.append(spines)
    if pods > 1:
        group = smallest_divisor(half, -(-pods * half // spec.switch.ports))
        for i in range(half):
            cores = [f"core{i * group + m}" for m in range(group)]
            add_switches(G, cores, "core", spec)
            join(G, [spines[i] for spines in spines_of_pod], cores, half // group, spec)
    add_endpoints(
        G,
        (
            (nic(e // nics, e % nics), f"pod{e // (half * half)}/leaf{e % (half * half) // half}")
            for e in range(endpoints)
        ),
        spec,
    )
    return G
