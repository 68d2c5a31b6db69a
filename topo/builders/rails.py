"""Rail-optimised two-layer fabrics of GPU servers: multi-rail (MRFT) and multi-plane (MPFT).

Both give NIC ``j`` of every server its own set of leaves:

- MRFT: NIC ``j`` of server ``n`` goes to leaf ``rail{j}/leaf{n // d}``; the leaves of all rails
  share one spine layer, sized like a two-layer fat tree with ``rails * ceil(N/d)`` leaves.
- MPFT: NIC ``j`` of every server sits on plane ``j``, an independent two-layer fat tree
  (switches ``p{j}/leaf*``, ``p{j}/spine*``); traffic between planes crosses inside a server
  (NVLink, PCIe: NCCL's PXN). MPFT is a subset of MRFT with the spine layer cut per rail.

Leaves have ``u = k/(r+1)`` up and ``d = k - u`` down ports; spines are sized by
:func:`topo.builders.clos.spines_for` (see ``docs/builders.md``).
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
)
from topo.builders.clos import add_two_layer, spines_for
from topo.builders.pods import add_pods, max_pod_leaves
from topo.spec import FabricSpec, ServerSpec, SwitchSpec

__all__ = ["multi_rail_fat_tree", "multi_plane_fat_tree"]


def mrft_limit(spec: FabricSpec) -> tuple[int, str]:
    """The most GPUs a multi-rail fat tree of ``spec``'s switch and server holds (whole
    servers), and the sentence that states the ceiling (for error messages).

    Parameters
    ----------
    spec : FabricSpec
        The switch, server and family parameters (its ``gpus`` is not read).

    Returns
    -------
    tuple of (int, str)
        The most GPUs (whole servers; 0 with more rails than spine-reachable leaves), and the clause
        stating the ceiling (which the errors of the builder quote).
    """
    rails, k = spec.server.nics, spec.switch.ports
    per_rail = k // rails
    if spec.tiers == 3:
        return _mrft3_limit(spec, per_rail)
    if per_rail == 0:
        return 0, (
            f"a multi-rail fat tree of {k}-port switches reaches at most {k} leaves, fewer "
            f"than its {rails} rails (nics_per_node)"
        )
    down = spec.down_ports
    nodes = per_rail * down
    gpus = nodes * spec.server.gpus
    text = (
        f"a multi-rail fat tree of {k}-port switches{over_text(spec)} with {rails} rails holds "
        f"at most {per_rail} {'leaf' if per_rail == 1 else 'leaves'} of {down} down ports "
        f"per rail ({per_rail * rails} of "
        f"the {k} leaves its spines reach), {nodes} nodes of {spec.server.gpus} GPUs: "
        f"{gpus} GPUs"
    )
    return gpus, text


def _mrft3_limit(spec: FabricSpec, pods: int) -> tuple[int, str]:
    """The ceiling of a three-layer MRFT: ``k // rails`` pods of ``k/2`` leaves per rail."""
    k, half, down = spec.switch.ports, spec.switch.ports // 2, spec.down_ports
    nodes = pods * half * down
    gpus = nodes * spec.server.gpus
    text = (
        f"a three-layer multi-rail fat tree of {k}-port switches{over_text(spec)} with "
        f"{spec.server.nics} rails holds at most {pods} pods of {half} leaves of {down} down "
        f"ports per rail (the cores reach {k} pods), {nodes} nodes of {spec.server.gpus} GPUs: "
        f"{gpus} GPUs"
    )
    return gpus, text


def mpft_limit(spec: FabricSpec) -> tuple[int, str]:
    """The most GPUs a multi-plane fat tree of ``spec``'s switch and server holds (whole
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
    if spec.tiers == 3:
        per_plane = max_pod_leaves(spec) * spec.down_ports
        gpus = per_plane * spec.server.gpus
        text = (
            f"a three-layer plane of {spec.switch.ports}-port switches{over_text(spec)} holds "
            f"at most {per_plane} endpoints (k pods of k/2 leaves); {spec.server.nics} planes "
            f"hold at most {gpus} GPUs"
        )
        return gpus, text
    per_plane = spec.switch.ports * spec.down_ports
    gpus = per_plane * spec.server.gpus
    text = (
        f"a two-layer plane of {spec.switch.ports}-port switches{over_text(spec)} holds at most "
        f"{per_plane} endpoints; {spec.server.nics} planes hold at most {gpus} GPUs"
    )
    return gpus, text


def multi_rail_fat_tree(
    switch: SwitchSpec | None = None,
    server: ServerSpec | None = None,
    *,
    gpus: int | None = None,
    oversubscription: float = 1.0,
    tiers: int | None = None,
) -> nx.Graph:
    """Build a multi-rail fat tree (MRFT) of GPU servers: family ``mrft``.

    There are ``R = nics_per_node`` rails. NIC ``j`` of server ``n`` is cabled to leaf
    ``rail{j}/leaf{n // d}``, so each rail has ``ceil(N/d)`` leaves for ``N`` servers. All
    ``L = R*ceil(N/d)`` leaves share one spine layer ``spine{j}``: ``S`` spines, the smallest
    divisor of ``u`` with ``S*k >= L*u``, each leaf joined to each spine by ``u/S`` cables. A
    leaf has ``u = k/(r+1)`` up and ``d = k - u`` down ports; spines use all ``k`` downward.
    The spines reach at most ``k`` leaves, so a full MRFT has ``k // R`` leaves per rail. With
    one rail and ``N <= k`` servers a single leaf ``rail0/leaf0`` and no spine; with more rails
    there is always a spine layer (it carries traffic between rails).

    Parameters
    ----------
    switch : SwitchSpec or None
        The switch of every tier: radix ``k`` (ports), cable rate (Gb/s, NIC-leaf and
        switch-switch); None: 64 ports of 400 Gb/s.
    server : ServerSpec or None
        GPUs and NICs per server, NVLink and PCIe rates (GB/s per direction); None: 8 GPUs,
        8 NICs, 200 and 64 GB/s. The NICs per server are the rails.
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
        - ``leaf`` ``rail{r}/leaf{j}``: ``kind``, ``tier`` (1), ``plane`` (0), ``rail`` (``r``),
          ``ports`` (``k``);
        - ``spine`` ``spine{j}``: ``kind``, ``tier`` (2), ``plane`` (0), ``rail`` (-1),
          ``ports`` (``k``).

        Edge attributes ``capacity`` (B/s per direction, summed over cables), ``links``
        (cables) and ``kind``: ``nvlink`` GPU-NVSwitch (``nvlink_GBps``), ``pcie`` GPU ``i`` -
        NIC ``i*nics_per_node//gpus_per_node`` (``pcie_GBps``), ``endpoint`` NIC-leaf (one
        cable, ``link_gbps``), ``fabric`` leaf-spine (``u/S`` cables). ``G.graph``:
        ``family`` ("mrft"), ``name`` ("mrft-<gpus>"), ``planes`` (1: the rails share the
        spines), ``switch_ports``, ``link_gbps``, ``gpus_per_node``, ``nics_per_node``,
        ``nvlink_GBps``, ``pcie_GBps``, ``oversubscription``, ``max_gpus``.

    Raises
    ------
    SpecError
        Radix odd or below 4; ``nics_per_node`` above or not dividing ``gpus_per_node``; a rate
        not positive; ``oversubscription`` below 1 or not giving whole ports; ``gpus`` not a
        positive multiple of ``gpus_per_node`` or above ``(k // R) * d`` servers.

    Examples
    --------
    >>> from topo.fabric import summarize
    >>> s = summarize(multi_rail_fat_tree())
    >>> s.gpus, s.switches_by_tier, s.links
    (2048, {'leaf': 64, 'spine': 32}, 2048)
    >>> multi_rail_fat_tree(gpus=16).nodes["rail3/leaf0"]["rail"]
    3

    References
    ----------
    W. Zhao et al., "Insights into DeepSeek-V3: Scaling Challenges and Reflections on Hardware
    for AI Architectures", ISCA 2025, §5.1 (MRFT; MPFT as its subset; 2,048-GPU training on
    both, Table 4) and Table 3 (the two-layer counts of 64-port switches).
    """
    spec = fabric_spec(
        "mrft", switch, server, gpus=gpus, oversubscription=oversubscription, tiers=tiers
    )
    top, limit = mrft_limit(spec)
    # With more rails than switch ports the clause blames nics_per_node.
    n_gpus = check_gpus(spec, top, limit, names=("nics_per_node",) if top == 0 else ())
    nodes = n_gpus // spec.server.gpus
    rails = spec.server.nics
    G = new_graph(spec, n_gpus, top)
    add_servers(G, nodes, spec)
    d = spec.down_ports
    if spec.tiers == 3:
        rail_leaves = add_pods(G, [(f"rail{r}/", r) for r in range(rails)], nodes, spec)
        add_endpoints(
            G,
            ((nic(n, j), rail_leaves[j][n // d]) for n in range(nodes) for j in range(rails)),
            spec,
        )
        return G
    if rails == 1 and nodes <= spec.switch.ports:
        add_switches(G, ["rail0/leaf0"], "leaf", spec, rail=0)
        add_endpoints(G, ((nic(n, 0), "rail0/leaf0") for n in range(nodes)), spec)
        return G
    per_rail = -(-nodes // spec.down_ports)
    all_leaves: list[str] = []
    for r in range(rails):
        leaves = [f"rail{r}/leaf{j}" for j in range(per_rail)]
        add_switches(G, leaves, "leaf", spec, rail=r)
        all_leaves += leaves
    n_spines, cables = spines_for(len(all_leaves), spec)
    spines = [f"spine{j}" for j in range(n_spines)]
    add_switches(G, spines, "spine", spec)
    join(G, all_leaves, spines, cables, spec)
    add_endpoints(
        G, ((nic(n, j), f"rail{j}/leaf{n // d}") for n in range(nodes) for j in range(rails)), spec
    )
    return G


def multi_plane_fat_tree(
    switch: SwitchSpec | None = None,
    server: ServerSpec | None = None,
    *,
    gpus: int | None = None,
    oversubscription: float = 1.0,
    tiers: int | None = None,
) -> nx.Graph:
    """Build a multi-plane fat tree (MPFT, DeepSeek-V3's fabric) of GPU servers: family ``mpft``.

    There are ``nics_per_node`` planes; plane ``j`` is an independent two-layer fat tree of NIC
    ``j`` of every server (server ``n`` on leaf ``p{j}/leaf{n // d}``); no switch of one plane
    is cabled to another plane, traffic between planes crosses inside a server. Each plane,
    for ``N`` servers: if ``N <= k`` a single leaf ``p{j}/leaf0`` and no spine; otherwise
    ``L = ceil(N/d)`` leaves and ``S`` spines, ``S`` the smallest divisor of ``u`` with
    ``S*k >= L*u``, each leaf joined to each spine by ``u/S`` cables. A leaf has
    ``u = k/(r+1)`` up and ``d = k - u`` down ports; spines use all ``k`` downward.

    Parameters
    ----------
    switch : SwitchSpec or None
        The switch of every tier: radix ``k`` (ports), cable rate (Gb/s, NIC-leaf and
        switch-switch); None: 64 ports of 400 Gb/s.
    server : ServerSpec or None
        GPUs and NICs per server, NVLink and PCIe rates (GB/s per direction); None: 8 GPUs,
        8 NICs, 200 and 64 GB/s. The NICs per server are the planes.
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
        - ``leaf`` ``p{p}/leaf{j}`` and ``spine`` ``p{p}/spine{j}``: ``kind``, ``tier``
          (1, 2), ``plane`` (``p``), ``rail`` (-1), ``ports`` (``k``).

        Edge attributes ``capacity`` (B/s per direction, summed over cables), ``links``
        (cables) and ``kind``: ``nvlink`` GPU-NVSwitch (``nvlink_GBps``), ``pcie`` GPU ``i`` -
        NIC ``i*nics_per_node//gpus_per_node`` (``pcie_GBps``), ``endpoint`` NIC-leaf (one
        cable, ``link_gbps``), ``fabric`` leaf-spine (``u/S`` cables). ``G.graph``:
        ``family`` ("mpft"), ``name`` ("mpft-<gpus>"), ``planes`` (``nics_per_node``),
        ``switch_ports``, ``link_gbps``, ``gpus_per_node``, ``nics_per_node``,
        ``nvlink_GBps``, ``pcie_GBps``, ``oversubscription``, ``max_gpus``.

    Raises
    ------
    SpecError
        Radix odd or below 4; ``nics_per_node`` above or not dividing ``gpus_per_node``; a rate
        not positive; ``oversubscription`` below 1 or not giving whole ports; ``gpus`` not a
        positive multiple of ``gpus_per_node`` or above ``k*d`` servers (one endpoint per
        server on each plane).

    Examples
    --------
    >>> from topo.fabric import summarize
    >>> from topo.spec import SwitchSpec
    >>> s = summarize(multi_plane_fat_tree(SwitchSpec(ports=8)))
    >>> s.gpus, s.planes, s.switches_by_tier, s.links
    (256, 8, {'leaf': 64, 'spine': 32}, 256)
    >>> summarize(multi_plane_fat_tree(gpus=128)).switches_by_tier
    {'leaf': 8}

    References
    ----------
    W. Zhao et al., "Insights into DeepSeek-V3: Scaling Challenges and Reflections on Hardware
    for AI Architectures", ISCA 2025, §5.1 (MPFT: 8 planes of 400G NICs, each GPU-NIC pair on
    its own plane, up to 16,384 GPUs with two layers) and Table 3 (MPFT of 64-port switches:
    16,384 endpoints, 768 switches, 16,384 links).
    """
    spec = fabric_spec(
        "mpft", switch, server, gpus=gpus, oversubscription=oversubscription, tiers=tiers
    )
    top, limit = mpft_limit(spec)
    n_gpus = check_gpus(spec, top, limit)
    nodes = n_gpus // spec.server.gpus
    planes = spec.server.nics
    G = new_graph(spec, n_gpus, top, planes=planes)
    add_servers(G, nodes, spec)
    for p in range(planes):
        if spec.tiers == 3:
            (leaves,) = add_pods(G, [(f"p{p}/", -1)], nodes, spec, core_prefix=f"p{p}/", plane=p)
            add_endpoints(
                G, ((nic(n, p), leaves[n // spec.down_ports]) for n in range(nodes)), spec
            )
            continue
        leaves = add_two_layer(G, nodes, spec, prefix=f"p{p}/", plane=p)
        per_leaf = spec.down_ports if len(leaves) > 1 else spec.switch.ports
        add_endpoints(G, ((nic(n, p), leaves[n // per_leaf]) for n in range(nodes)), spec)
    return G
