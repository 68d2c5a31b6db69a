"""The subnet manager's own routes: the all-to-all as the switches' forwarding tables carry it.

OpenSM (``ftree``, ``minhop``, ``updn``, ...) writes a linear forwarding table (LFT) into every
switch: destination LID -> out port. :func:`route_lft` follows those tables for the uniform
all-to-all, aggregated by (switch, destination NIC): the traffic every leaf injects towards a
destination (the demand :class:`~topo.flow.routing.ends.Ends` gives, PXN included) moves
one hop per step along the table's port, adding its mass to that port (one physical cable),
until it reaches the destination's NIC. :func:`routed_lft` is the entry point; its report is
the :class:`~topo.flow.result.BandwidthResult` of ``--routing dmodk``, with
``routing`` ``"lft"``.

References
----------
OpenSM ``doc/current-routing.txt`` (the engines, LFTs); InfiniBand Architecture Specification
Vol. 1, §18.2.4.3 (linear forwarding tables).
"""

from __future__ import annotations

import time

import networkx as nx
import numpy as np

from topo.errors import InfeasibleError
from topo.flow.result import BandwidthResult
from topo.flow.routing.arrays import SWITCH, Arcs, fabric_arcs
from topo.flow.routing.endpoints import traffic_ends
from topo.flow.routing.ends import Ends, leaf_demand, same_server_pairs
from topo.flow.routing.report import routed_report
from topo.flow.routing.updown import PortLoads, UpDownTree, updown_tree
from topo.formats.lft import ForwardingTables

_DELIVER = -1  # the next hop is the destination's own NIC


def routed_lft(G: nx.Graph, tables: ForwardingTables, *, pxn: bool = True) -> BandwidthResult:
    """The uniform all-to-all routed by the switches' forwarding tables.

    Parameters
    ----------
    G : networkx.Graph
        The fabric the tables belong to (an imported dump, with or without hosts).
    tables : ForwardingTables
        From :func:`topo.formats.lft.read_lft`.
    pxn : bool
        NCCL's PXN on fabrics with GPUs (as :func:`topo.flow.routing.routed_flow`).

    Returns
    -------
    BandwidthResult
        As for ``--routing dmodk``: the pair rate ``lambda = min_e capacity_e / c_e`` (B/s),
        busbw ``lambda (n - 1)``, tier loads, the most loaded links, the load of every arc.

    Raises
    ------
    InfeasibleError
        A destination with no LID in the tables, a switch with no entry for it, or a table
        that loops or sends it to a port leading elsewhere (naming the switch and the LID).
    TopoError
        As :func:`topo.flow.routing.routed_flow` for fabrics it cannot take.
    """
    t0 = time.perf_counter()
    arcs = fabric_arcs(G)
    tree = updown_tree(arcs)
    ends = traffic_ends(G, tree, arcs, bool(pxn))
    loads = route_lft(tree, ends, arcs, tables)
    notes = [f"routes: the forwarding tables of {tables.source}"]
    if pxn and ends.terminal != "gpu":
        notes.append("no GPUs (imported fabric): PXN does not apply")
    return routed_report(
        G,
        arcs,
        tree,
        ends,
        loads,
        routing="lft",
        seed=None,
        flows_per_pair=1,
        notes=notes,
        t0=t0,
    )


def route_lft(tree: UpDownTree, e: Ends, arcs: Arcs, tables: ForwardingTables) -> PortLoads:
    """Port loads of the uniform all-to-all along the forwarding tables, pair-units per unit
    pair rate.

    Parameters
    ----------
    tree : UpDownTree
        The switch tiers (for the port ids the report counts on).
    e : Ends
        Terminals and demand.
    arcs : Arcs
        The fabric.
    tables : ForwardingTables
        The LFTs.

    Returns
    -------
    PortLoads
        Routed and expected loads, equal (the tables are deterministic).
    """
    sw = np.nonzero(arcs.kind == SWITCH)[0]
    row = np.full(len(arcs.nodes), -1, dtype=np.int64)
    row[sw] = np.arange(len(sw))
    nxt_port, nxt_row = _next_hops(tree, e, arcs, tables, sw)
    mass = _injected(tree, e, row)
    Y = len(e.nic_ids)
    port = np.zeros(len(tree.port_arc))
    for _ in range(4 * max(tree.T, 1) + 4):
        s, y = np.nonzero(mass > 1e-12)
        if s.size == 0:
            return PortLoads(port=port, port_exp=port.copy())
        m = mass[s, y]
        p, r = nxt_port[s, y], nxt_row[s, y]
        bad = (p < 0) & (r != _DELIVER)
        if bad.any():
            _no_route(arcs, sw, e, tables, int(s[bad][0]), int(y[bad][0]))
        on = p >= 0
        port += np.bincount(p[on], weights=m[on], minlength=len(port))
        mass = np.zeros_like(mass)
        go = r >= 0
        np.add.at(mass.reshape(-1), r[go] * Y + y[go], m[go])
    s, y = np.nonzero(mass > 1e-12)
    raise InfeasibleError(
        f"the forwarding tables loop: traffic to {arcs.nodes[e.nic_ids[y[0]]]} is still in the "
        f"fabric at {arcs.nodes[sw[s[0]]]} after {4 * max(tree.T, 1) + 4} hops"
    )


def _injected(tree: UpDownTree, e: Ends, row: np.ndarray) -> np.ndarray:
    """(switches, destinations) mass each leaf injects: ``S[x, c(y)] D[y]`` summed over the
    leaf's source NICs ``x``, less the pairs of one server (which stay inside it)."""
    L = len(tree.names[1])
    SA, _ = leaf_demand(e, L)
    leaf_row = row[tree.ids[1]]
    mass = np.zeros((int(row.max()) + 1, len(e.nic_ids)))
    mass[leaf_row] = SA[:, e.nic_class] * e.D[None, :]
    xs, ys, val = same_server_pairs(e)
    np.add.at(mass, (leaf_row[e.nic_leaf[xs]], ys), -val)
    return np.maximum(mass, 0.0)


def _next_hops(
    tree: UpDownTree, e: Ends, arcs: Arcs, tables: ForwardingTables, sw: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(switch row, destination) -> the tree port taken (-1: none) and the next switch row
    (``_DELIVER`` when the port leads to the destination's NIC, -2 when nowhere)."""
    Y = len(e.nic_ids)
    node = {v: i for i, v in enumerate(arcs.nodes)}
    lids = np.array([_lid(tables, arcs.nodes[y]) for y in e.nic_ids.tolist()], dtype=np.int64)
    ports_of_arc: dict[int, list[int]] = {}
    for pid, a in enumerate(tree.port_arc.tolist()):
        ports_of_arc.setdefault(a, []).append(pid)
    row = {int(v): i for i, v in enumerate(sw.tolist())}
    nxt_port = np.full((len(sw), Y), -1, dtype=np.int64)
    nxt_row = np.full((len(sw), Y), -2, dtype=np.int64)
    for i, s in enumerate(sw.tolist()):
        name = arcs.nodes[s]
        table = tables.out_port.get(name)
        if table is None:
            continue
        out = np.where(lids < len(table), table[np.minimum(lids, len(table) - 1)], -1)
        phys = tables.ports.get(name, {})
        p_of = np.full(max(phys, default=0) + 2, -1, dtype=np.int64)
        r_of = np.full(len(p_of), -2, dtype=np.int64)
        far_node = np.full(len(p_of), -1, dtype=np.int64)
        for p, (far, k) in phys.items():
            f = node.get(far)
            if f is None:
                continue
            far_node[p] = f
            if arcs.kind[f] == SWITCH:
                a = int(arcs.find(np.array([s]), np.array([f]))[0])
                r_of[p] = row[f]
                p_of[p] = ports_of_arc[a][k] if k < len(ports_of_arc.get(a, [])) else -1
        ok = (out >= 0) & (out < len(p_of))
        o = np.where(ok, out, len(p_of) - 1)
        nxt_port[i] = np.where(ok, p_of[o], -1)
        nxt_row[i] = np.where(ok, r_of[o], -2)
        nxt_row[i, ok & (far_node[o] == e.nic_ids)] = _DELIVER
    return nxt_port, nxt_row


def _lid(tables: ForwardingTables, v: str) -> int:
    lid = tables.lid_of.get(v)
    if lid is None:
        raise InfeasibleError(f"{tables.source}: no LID for {v} (not in the forwarding tables)")
    return lid


def _no_route(
    arcs: Arcs, sw: np.ndarray, e: Ends, tables: ForwardingTables, s: int, y: int
) -> None:
    name, dest = arcs.nodes[sw[s]], arcs.nodes[e.nic_ids[y]]
    table = tables.out_port.get(name)
    lid = tables.lid_of[dest]
    if table is None:
        raise InfeasibleError(f"{tables.source}: no forwarding table for switch {name}")
    port = int(table[lid]) if lid < len(table) else -1
    where = "no entry" if port < 0 else f"port {port}, which does not lead towards it"
    raise InfeasibleError(f"{tables.source}: switch {name} forwards LID {lid} ({dest}) to {where}")


__all__ = ["route_lft", "routed_lft"]
