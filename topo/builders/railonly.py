"""Rail-only fabrics (no spine): family ``rail-only``.

Wang, Ghobadi et al. ("Rail-only: a low-cost high-performance network for training LLMs with
trillion parameters", HotI 2024, arXiv 2307.12169, §4) keep the rail switches of a
rail-optimised fabric and remove the spine layer that joins the rails. The scale-up (NVLink,
"high-bandwidth" HB) domain is the server of topo: its ``gpus_per_node`` GPUs are the HB domain
(8 in a DGX H100, 72 in a GB200 NVL72 rack: ``--gpus-per-node 72 --gpus-per-host 4``) and its
``nics_per_node`` NICs are the rails. Rail ``r`` joins NIC ``r`` of every HB domain and nothing
else; traffic between rails crosses NVLink inside a domain (the source's or the
destination's), a path the flow solvers find in the graph as they find PXN: no special case.

Sizing, for ``N`` domains (one endpoint per domain on each rail) and ``k``-port switches of
``u = k/(r+1)`` up and ``d = k - u`` down ports: a rail of ``N <= k`` endpoints is one switch
``rail{r}/leaf0``; a larger rail is its own two-layer Clos of ``ceil(N/d)`` leaves and ``S``
spines (the smallest divisor of ``u`` with ``S*k >= L*u``), the rail's spines joining that rail
only. Full size: ``k*d`` domains, ``k*d*gpus_per_node`` GPUs (``k^2/2`` domains when
non-blocking), the same switch and cable counts as an MPFT of ``nics_per_node`` planes
(Zhao et al., ISCA 2025, Table 3), with every rail an independent plane.
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
from topo.builders.clos import two_layer_sizes
from topo.spec import FabricSpec, ServerSpec, SwitchSpec

__all__ = ["rail_only", "rail_only_counts", "rail_only_limit"]


def rail_only_limit(spec: FabricSpec) -> tuple[int, str]:
    """The most GPUs a rail-only fabric of ``spec``'s switch and domain holds, and the clause
    stating the ceiling (for error messages).

    Parameters
    ----------
    spec : FabricSpec
        The switch, the server (the HB domain) and the leaf split (its ``gpus`` is not read).

    Returns
    -------
    tuple of (int, str)
        ``k*d`` domains of ``gpus_per_node`` GPUs (one endpoint per domain on each rail), and
        the clause stating it.
    """
    k, down = spec.switch.ports, spec.down_ports
    domains = k * down
    gpus = domains * spec.server.gpus
    text = (
        f"a rail-only fabric of {k}-port switches{over_text(spec)} holds at most {domains} "
        f"domains per rail ({k} leaves of {down} down ports, two layers per rail): {gpus} GPUs "
        f"in domains of {spec.server.gpus}"
    )
    return gpus, text


def rail_only_counts(domains: int, spec: FabricSpec) -> tuple[int, int, int]:
    """Switches per rail, spines per rail and switch-to-switch cables per rail for ``domains``
    HB domains.

    Parameters
    ----------
    domains : int
        HB domains (servers), one endpoint each on the rail.
    spec : FabricSpec
        The switch and leaf split.

    Returns
    -------
    tuple of int
        ``(leaves, spines, cables)`` of one rail: ``(1, 0, 0)`` when the rail fits one switch,
        else ``ceil(N/d)`` leaves, ``S`` spines and ``L*u`` cables.

    Examples
    --------
    >>> from topo.spec import FabricSpec
    >>> rail_only_counts(2048, FabricSpec("rail-only"))   # one full rail of 64-port switches
    (64, 32, 2048)
    """
    leaves, spines, cables = two_layer_sizes(domains, spec)
    return leaves, spines, leaves * spines * cables


def rail_only(
    switch: SwitchSpec | None = None,
    server: ServerSpec | None = None,
    *,
    gpus: int | None = None,
    oversubscription: float = 1.0,
) -> nx.Graph:
    """Build a rail-only fabric (rail switches, no spine joining the rails): ``rail-only``.

    Rail ``r`` (NIC ``r`` of every HB domain) is its own switch fabric: one switch
    ``rail{r}/leaf0`` when the ``N`` domains fit its ``k`` ports, else a two-layer Clos of
    ``ceil(N/d)`` leaves ``rail{r}/leaf{j}`` (domain ``n`` on leaf ``n // d``) and ``S`` spines
    ``rail{r}/spine{j}`` joined to that rail's leaves only. No switch of one rail is cabled to
    another rail: traffic between rails is forwarded over NVLink inside an HB domain.

    Parameters
    ----------
    switch : SwitchSpec or None
        The rail switch: radix ``k``, cable rate (Gb/s); None: 64 ports of 400 Gb/s.
    server : ServerSpec or None
        The HB (NVLink) domain: its GPUs (``gpus_per_node``, e.g. 8, 72, 144, 576), NICs (the
        rails), NVLink and PCIe rates (GB/s per direction), ``gpus_per_host`` for a domain of
        several hosts; None: 8 GPUs, 8 NICs, 200 and 64 GB/s.
    gpus : int or None
        GPUs to connect, a positive multiple of the domain's GPUs; None: the family's maximum.
    oversubscription : float
        Rail leaf down-port over up-port bandwidth ``r`` (1 = non-blocking); only read when a
        rail needs two layers.

    Returns
    -------
    networkx.Graph
        The fabric (schema of :mod:`topo.fabric`). Node attributes:

        - ``gpu`` ``node{n}/gpu{i}``, ``nvswitch`` ``node{n}/nvswitch``, ``nic``
          ``node{n}/nic{j}`` as in every built fabric (``host`` with ``gpus_per_host``);
        - ``leaf`` ``rail{r}/leaf{j}``: ``kind``, ``tier`` (1), ``plane`` (``r``), ``rail``
          (``r``), ``ports`` (``k``);
        - ``spine`` ``rail{r}/spine{j}``: ``kind``, ``tier`` (2), ``plane`` (``r``), ``rail``
          (-1), ``ports``.

        Edge attributes ``capacity`` (B/s per direction, summed over cables), ``links`` and
        ``kind``: ``nvlink``, ``pcie``, ``endpoint`` NIC-leaf (one cable, ``link_gbps``),
        ``fabric`` leaf-spine (``u/S`` cables). ``G.graph``: :data:`topo.fabric.BUILT_GRAPH_KEYS`
        with ``family`` ("rail-only"), ``name`` ("rail-only-<gpus>"), ``planes``
        (``nics_per_node``: every rail is an independent plane).

    Raises
    ------
    SpecError
        As :func:`topo.builders.rails.multi_plane_fat_tree`: radix, node shape, rates,
        oversubscription, ``gpus`` not a multiple of the domain or above ``k*d`` domains.

    Examples
    --------
    >>> from topo.fabric import summarize
    >>> s = summarize(rail_only(server=ServerSpec(gpus=8, nics=8), gpus=512))
    >>> s.switches_by_tier, s.links, s.endpoints
    ({'leaf': 8}, 0, 512)

    References
    ----------
    W. Wang, M. Ghobadi, K. Shakeri, Y. Zhang, N. Hasani, "Rail-only: A Low-Cost
    High-Performance Network for Training LLMs with Trillion Parameters", HotI 2024,
    arXiv 2307.12169, §4 (rail switches only, cross-rail traffic forwarded over the HB domain)
    and §6 (all-to-all through forwarding).
    """
    spec = fabric_spec("rail-only", switch, server, gpus=gpus, oversubscription=oversubscription)
    top, limit = rail_only_limit(spec)
    n_gpus = check_gpus(spec, top, limit)
    nodes = n_gpus // spec.server.gpus
    rails = spec.server.nics
    G = new_graph(spec, n_gpus, top, planes=rails)
    add_servers(G, nodes, spec)
    n_leaves, n_spines, cables = two_layer_sizes(nodes, spec)
    per_leaf = spec.down_ports if n_leaves > 1 else spec.switch.ports
    for r in range(rails):
        leaves = [f"rail{r}/leaf{j}" for j in range(n_leaves)]
        add_switches(G, leaves, "leaf", spec, plane=r, rail=r)
        if n_spines:
            spines = [f"rail{r}/spine{j}" for j in range(n_spines)]
            add_switches(G, spines, "spine", spec, plane=r)
            join(G, leaves, spines, cables, spec)
        add_endpoints(G, ((nic(n, r), leaves[n // per_leaf]) for n in range(nodes)), spec)
    return G
