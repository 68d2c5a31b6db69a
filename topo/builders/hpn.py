"""Alibaba HPN: dual-ToR, dual-plane two-tier pods of rail-optimised segments: family ``hpn``.

Qian et al., "Alibaba HPN: A Data Center Network for Large Language Model Training", SIGCOMM
2024: every NIC of a host has two ports, each cabled to its own ToR (dual-ToR, non-stacked);
the ToRs of port 0 form plane 0 and those of port 1 plane 1, and each plane has its own
aggregation switches (dual-plane), so a ToR lost costs the hosts under it half of one NIC,
not the server. The counts of one pod (the paper's 15K-GPU pod, and Alibaba's own SimAI
generator ``astra-sim-alibabacloud/inputs/topo/gen_Topo_Template.py``, template
``AlibabaHPN --dp``: 15,360 GPUs, 240 ToRs of 128 NIC ports, 120 aggregation switches, each
joined to the 120 ToRs of its plane, 200 Gb/s NIC ports and 400 Gb/s ToR uplinks):

- a NIC of ``link_gbps`` (400G) exposes 2 ports of ``link_gbps/2`` (200G);
- a segment is ``k`` hosts (128 for the 51.2 Tb/s switch of 128 x 400G ports): rail ``j`` of
  the segment has two ToRs ``seg{s}/rail{j}/tor{p}``, ToR ``p`` taking port ``p`` of NIC ``j``
  of every host of the segment on ``k`` down ports of ``link_gbps/2``: half of the ToR's
  bandwidth (the paper: 1,024 GPUs a segment with 8 GPUs a host);
- a ToR has ``u = 15k/32`` uplinks of ``link_gbps`` (60 of 128: the remaining ``k/32`` ports'
  bandwidth serves the paper's 8 backup hosts a segment, not built here), one to each of the
  ``u`` aggregation switches ``p{p}/agg{a}`` of its plane: the ToR's down/up ratio is
  ``(k/2)/u = 16/15`` (the paper's 1.067:1);
- an aggregation switch keeps ``k/16`` ports for the core (8 of 128, 15:1) and joins
  ``k - k/16`` ToRs of its plane: ``(k - k/16) // nics_per_node`` segments (15), so a pod
  holds ``15 x 128 x 8 = 15,360`` GPUs with 240 ToRs and 120 aggregation switches. topo builds
  one pod (the core tier above pods is not built).
"""

from __future__ import annotations

import networkx as nx

from topo.builders._common import (
    add_servers,
    add_switches,
    check_gpus,
    fabric_spec,
    join,
    new_graph,
    nic,
)
from topo.builders.ports import port_name
from topo.errors import SpecError
from topo.spec import FabricSpec, ServerSpec, SwitchSpec

__all__ = ["HPN_PORTS", "hpn", "hpn_counts", "hpn_limit", "hpn_sizes"]

HPN_PORTS = 2
"""Ports per NIC in HPN: two, each on its own ToR and plane (dual-ToR, dual-plane)."""


def hpn_sizes(spec: FabricSpec) -> tuple[int, int, int]:
    """Hosts per segment, ToR uplinks (= aggregation switches per plane) and segments per pod.

    Parameters
    ----------
    spec : FabricSpec
        The switch (``k`` ports of ``link_gbps``; ``k`` a multiple of 32) and server.

    Returns
    -------
    tuple of int
        ``(k, 15k/32, (k - k/16) // nics_per_node)``: for 128 ports and 8 NICs,
        ``(128, 60, 15)``.

    Raises
    ------
    SpecError
        ``switch_ports`` not a multiple of 32.

    Examples
    --------
    >>> from topo.spec import FabricSpec, SwitchSpec
    >>> hpn_sizes(FabricSpec("hpn", SwitchSpec(ports=128)))
    (128, 60, 15)
    """
    k = spec.switch.ports
    if k % 32:
        raise SpecError(
            f"hpn needs switch_ports a multiple of 32 (a ToR's 15k/32 uplinks and an "
            f"aggregation switch's k/16 core ports; the paper's ToR has 128), got {k}",
            param="switch_ports",
        )
    return k, 15 * k // 32, (k - k // 16) // spec.server.nics


def hpn_counts(hosts: int, spec: FabricSpec) -> tuple[int, int, int, int]:
    """ToRs, aggregation switches, ToR-aggregation cables and NIC-port cables of :func:`hpn`
    for ``hosts`` hosts.

    Parameters
    ----------
    hosts : int
        Hosts (servers) of the pod, at least 1.
    spec : FabricSpec
        The switch and server.

    Returns
    -------
    tuple of int
        ``(2 R S, 2 u, 2 R S u, 2 R hosts)`` for ``S = ceil(hosts / k)`` segments, ``R``
        NICs a host and ``u = 15k/32`` uplinks a ToR.

    Examples
    --------
    >>> from topo.spec import FabricSpec, SwitchSpec
    >>> hpn_counts(1920, FabricSpec("hpn", SwitchSpec(ports=128)))
    (240, 120, 14400, 30720)
    """
    per, uplinks, _ = hpn_sizes(spec)
    rails = spec.server.nics
    tors = HPN_PORTS * rails * -(-hosts // per)
    return tors, HPN_PORTS * uplinks, tors * uplinks, HPN_PORTS * rails * hosts


def hpn_limit(spec: FabricSpec) -> tuple[int, str]:
    """The most GPUs one HPN pod of ``spec``'s switch and server holds, and the clause stating
    the ceiling (for error messages).

    Returns
    -------
    tuple of (int, str)
        ``segments * k * gpus_per_node`` (15,360 for 128 ports and 8 GPUs, 8 NICs a host), and
        the clause.

    Raises
    ------
    SpecError
        As :func:`hpn_sizes`; ``oversubscription`` not 1.
    """
    if spec.oversubscription != 1:
        raise SpecError(
            "oversubscription must be 1 for hpn (the ToR's split is the paper's: k/2 down, "
            f"15k/32 up), got {spec.oversubscription:g}",
            param="oversubscription",
        )
    hosts, _, segments = hpn_sizes(spec)
    gpus = segments * hosts * spec.server.gpus
    text = (
        f"an HPN pod of {spec.switch.ports}-port switches holds at most {segments} segments of "
        f"{hosts} hosts ({spec.server.gpus} GPUs, {spec.server.nics} NICs each): {gpus} GPUs"
    )
    return gpus, text


def hpn(
    switch: SwitchSpec | None = None,
    server: ServerSpec | None = None,
    *,
    gpus: int | None = None,
    oversubscription: float = 1.0,
) -> nx.Graph:
    """Build one Alibaba HPN pod: dual-ToR, dual-plane, two tiers: family ``hpn``.

    Host ``n`` is in segment ``n // k``; port ``p`` of its NIC ``j``,
    ``node{n}/nic{j}/port{p}``, is cabled to ToR ``seg{n // k}/rail{j}/tor{p}``; every ToR of
    plane ``p`` is cabled once to each of the ``u`` aggregation switches ``p{p}/agg{a}``. Sizes
    in the module docstring.

    Parameters
    ----------
    switch : SwitchSpec or None
        ToR and aggregation switch: ``k`` ports of ``link_gbps`` (the paper's: 128 x 400G, a
        51.2 Tb/s chip); ``k`` a multiple of 32. None: 64 ports of 400 Gb/s.
    server : ServerSpec or None
        GPUs and NICs per host (each NIC of ``link_gbps``, two ports of half of it), NVLink and
        PCIe rates (GB/s per direction). None: 8 GPUs, 8 NICs, 200 and 64 GB/s.
    gpus : int or None
        GPUs to connect, a multiple of the host's GPUs; None: a full pod.
    oversubscription : float
        Must be 1: the ToR's split is the paper's (``k/2`` down, ``15k/32`` up).

    Returns
    -------
    networkx.Graph
        The fabric (schema of :mod:`topo.fabric`). Node attributes:

        - ``gpu``, ``nvswitch`` as in every built fabric;
        - ``nic`` ``node{n}/nic{j}/port{p}``: ``kind``, ``node``, ``index`` (``2j + p``), as
          :func:`topo.builders.ports.with_nic_ports` names NIC ports;
        - ``leaf`` (ToR) ``seg{s}/rail{j}/tor{p}``: ``kind``, ``tier`` (1), ``plane`` (``p``),
          ``rail`` (``j``), ``ports`` (``k``);
        - ``spine`` (aggregation) ``p{p}/agg{a}``: ``kind``, ``tier`` (2), ``plane`` (``p``),
          ``rail`` (-1), ``ports`` (``k``).

        Edges: ``nvlink`` GPU-NVSwitch (``nvlink_GBps``); ``pcie`` GPU ``i`` - each port of
        NIC ``i*nics_per_node//gpus_per_node`` (``pcie_GBps / 2`` each: the ports share the
        NIC's link); ``endpoint`` port-ToR (one cable of ``link_gbps/2``); ``fabric``
        ToR-aggregation (one cable of ``link_gbps``). ``G.graph``:
        :data:`topo.fabric.BUILT_GRAPH_KEYS`, ``family`` ("hpn"), ``planes`` (2),
        ``oversubscription`` (the ToR's ``(k/2)/u = 16/15``).

    Raises
    ------
    SpecError
        ``switch_ports`` not a multiple of 32; ``oversubscription`` not 1; more GPUs than a
        pod; the checks of :class:`topo.spec.FabricSpec`.

    Examples
    --------
    >>> from topo.fabric import summarize
    >>> s = summarize(hpn(SwitchSpec(ports=128, link_gbps=400)))
    >>> s.gpus, s.switches_by_tier
    (15360, {'leaf': 240, 'spine': 120})

    References
    ----------
    K. Qian et al., "Alibaba HPN: A Data Center Network for Large Language Model Training",
    SIGCOMM 2024 (dual-ToR, dual-plane, 1K GPUs a segment, 15K GPUs a pod, ToR 1.067:1,
    aggregation 15:1); aliyun/SimAI ``gen_Topo_Template.py`` (``AlibabaHPN`` template: 15,360
    GPUs, 240 ASW, 128 NIC ports per ASW, 120 PSW, 120 ASW per PSW with ``--dp``, 200 Gb/s NIC
    ports, 400 Gb/s ASW-PSW).
    """
    spec = fabric_spec("hpn", switch, server, gpus=gpus, oversubscription=oversubscription)
    top, limit = hpn_limit(spec)
    n_gpus = check_gpus(spec, top, limit)
    hosts, uplinks, _ = hpn_sizes(spec)
    nodes = n_gpus // spec.server.gpus
    nics = spec.server.nics
    G = new_graph(spec, n_gpus, top, planes=HPN_PORTS)
    G.graph["oversubscription"] = (hosts / 2) / uplinks
    add_servers(G, nodes, spec)
    _split_ports(G, nodes, spec)
    segments = -(-nodes // hosts)
    port_Bps = spec.switch.line_Bps / HPN_PORTS
    for p in range(HPN_PORTS):
        tors = []
        for j in range(nics):
            rail = [f"seg{s}/rail{j}/tor{p}" for s in range(segments)]
            add_switches(G, rail, "leaf", spec, plane=p, rail=j)
            tors += rail
        aggs = [f"p{p}/agg{a}" for a in range(uplinks)]
        add_switches(G, aggs, "spine", spec, plane=p)
        join(G, tors, aggs, 1, spec)
        G.add_edges_from(
            (
                (port_name(nic(n, j), p), f"seg{n // hosts}/rail{j}/tor{p}")
                for n in range(nodes)
                for j in range(nics)
            ),
            capacity=port_Bps,
            links=1,
            kind="endpoint",
        )
    return G


def _split_ports(G: nx.Graph, nodes: int, spec: FabricSpec) -> None:
    """Replace every NIC ``node{n}/nic{j}`` by its two ports, each with half its PCIe link."""
    for n in range(nodes):
        for j in range(spec.server.nics):
            v = nic(n, j)
            d = G.nodes[v]
            gpus = [(w, e) for w, e in G.adj[v].items()]
            for p in range(HPN_PORTS):
                port = port_name(v, p)
                G.add_node(port, **{**d, "index": j * HPN_PORTS + p})
                G.add_edges_from(
                    (port, w, {**e, "capacity": e["capacity"] / HPN_PORTS}) for w, e in gpus
                )
            G.remove_node(v)
