"""The as-routed entry points: route a fabric's traffic by ECMP or D-mod-k and report it.

:func:`routed_flow` takes the traffic as a :class:`topo.traffic.Demand`; today's routers route
the uniform all-to-all among every terminal, and :func:`routed_alltoall` is that case. See
:mod:`topo.flow.routing` for the model.
"""

from __future__ import annotations

import time
from typing import TypeGuard

import networkx as nx
import numpy as np

from topo.errors import TopoError
from topo.fabric import require_fabric, terminal_kind
from topo.flow.result import BandwidthResult
from topo.flow.routing.arrays import GPU, Arcs, fabric_arcs
from topo.flow.routing.dmodk import route_dmodk
from topo.flow.routing.ecmp import route_ecmp
from topo.flow.routing.endpoints import check_routable, traffic_ends
from topo.flow.routing.ends import Ends
from topo.flow.routing.report import routed_report
from topo.flow.routing.updown import updown_tree
from topo.flow.seeds import ROUTING as ROUTING_STREAM
from topo.flow.seeds import stream
from topo.traffic import Demand

ROUTINGS = ("ecmp", "dmodk")
"""The routing models of :func:`routed_flow` and :func:`routed_alltoall`."""

MAX_FLOWS_PER_PAIR = 1024
"""Largest ``flows_per_pair`` accepted (queue pairs per GPU pair)."""


def routed_flow(
    G: nx.Graph,
    demand: Demand,
    routing: str = "ecmp",
    *,
    seed: int | np.random.Generator | None = 0,
    flows_per_pair: int = 1,
    pxn: bool = True,
    expected: bool = False,
) -> BandwidthResult:
    """A demand as real routing carries it: ECMP hashing or D-mod-k, with PXN.

    The routers route the uniform all-to-all: ``demand`` must be uniform and name every
    terminal of the fabric (:func:`topo.traffic.uniform_alltoall`). The report's rates are per
    ordered pair and do not depend on ``demand.bytes_per_pair`` (the all-to-all takes
    ``bytes_per_pair / pair rate`` seconds).

    Parameters
    ----------
    G : networkx.Graph
        A fabric (schema in :mod:`topo.fabric`) whose switches form up/down tiers (a fat
        tree: FT2, FT3, MRFT, MPFT, or an imported fat tree such as the GB200 SuperPOD dump).
        Terminals are its GPUs or, without GPUs, its host endpoints.
    demand : topo.traffic.Demand
        Uniform, over every GPU (``level="gpu"``) or, on a fabric without GPUs, every host
        endpoint (either level).
    routing : {"ecmp", "dmodk"}
        ``ecmp``: each flow hashes uniformly at random over the eligible ports (cables) at
        every hop; ``dmodk``: destination-mod-k port selection (OpenSM ``ftree``).
    seed : int, numpy.random.Generator or None
        Seeds the ECMP hashing: an int draws from its hashing stream
        (:func:`topo.flow.seeds.stream` ``(seed, ROUTING)``, independent of the failures drawn
        with the same seed), a Generator is drawn from as is, None is fresh entropy. D-mod-k
        is deterministic and draws nothing: a seed other than the default 0 (or None) is
        not refused (one seed for every routing of a loop is the common call) but said
        unused in the result's notes, whose ``routing.seed`` is None.
    flows_per_pair : int
        Flows (RDMA queue pairs) per ordered GPU pair, 1 to 1024, each carrying an equal share.
        D-mod-k routes by destination, so all flows of a pair share one path.
    pxn : bool
        (True or False; anything else is refused) NCCL's PXN: a flow to a destination whose
        NIC has another index first crosses NVLink to the local GPU of the NIC with that
        index (same rail or plane). Off: every GPU leaves by its own NIC (in MPFT,
        cross-plane pairs then have no route). Ignored for fabrics without GPUs.
    expected : bool
        (True or False) ECMP: route by the expected (evenly split) loads alone, without
        drawing flows (the routed loads are the expected ones; ``seed`` unused, reported
        None). D-mod-k is deterministic: no effect.

    Returns
    -------
    BandwidthResult
        The one result type of :mod:`topo.flow`, with ``routing`` (a
        :class:`~topo.flow.result.RoutingDetail`) set. ``pair_rate_Bps`` ``lambda``: the rate
        of every ordered pair when the all-to-all runs on these paths,
        ``min_e capacity_e / c_e`` over every cable, NIC link, PCIe and NVLink link (``c_e``:
        pair-units it carries per unit rate), B/s; ``alltoall_busbw_Bps`` = ``lambda (n - 1)``
        (nccl-tests); ``routing.expected_pair_rate_Bps`` the same with ECMP's expected (evenly
        split) loads, ``routing.collision_loss`` = 1 - their ratio (negative if the sample
        beats the even split);
        ``routing.tiers``: per-tier expected and sampled loads (B/s at ``lambda``);
        ``routing.loaded_links``; ``bottleneck_links``: the saturated link directions;
        ``link_load`` (and ``routing.expected_link_load``): B/s on every directed arc at
        ``lambda``. ``to_dict()`` gives the ``topo bandwidth --routing ... --json`` keys
        (GB/s).

    Raises
    ------
    TopoError
        A demand other than the uniform all-to-all among every terminal; unknown
        ``routing``; ``flows_per_pair`` outside 1 to 1024; a ``seed`` that is not a whole
        number >= 0, None or a Generator; ``pxn`` or ``expected`` not a bool; a fabric that
        is not up/down routable (cables within a tier or skipping one, hosts on upper
        tiers), or whose servers are not GPUs each with one NIC joined by an NVSwitch.
    InfeasibleError
        Fewer than two terminals, GPUs with no NIC cabled to a switch, or pairs with no
        up/down route (e.g. cross-plane pairs of an MPFT without PXN); the message gives the
        count.

    Examples
    --------
    >>> from topo.builders import build
    >>> G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    >>> from topo.traffic import uniform_alltoall
    >>> r = routed_flow(G, uniform_alltoall(G), "dmodk")
    >>> round(r.alltoall_busbw_Bps / 1e9, 2)   # contention-free: 50 GB/s x (n - 1) / (n - g)
    51.67

    References
    ----------
    E. Zahavi, "D-Mod-K Routing Providing Non-Blocking Traffic for Shift Permutations on Real
    Life Fat Trees", CCIT Report 776, Technion, 2010; OpenSM ``doc/current-routing.txt``
    (ftree); C. Hopps, RFC 2992, 2000 (ECMP); nccl-tests ``doc/PERFORMANCE.md`` (busbw).
    """
    if not isinstance(demand, Demand):
        raise TopoError(f"demand must be a topo.traffic.Demand, got {type(demand).__name__}")
    return _routed(G, demand, routing, seed, flows_per_pair, pxn, expected)


def routed_alltoall(
    G: nx.Graph,
    routing: str = "ecmp",
    *,
    seed: int | np.random.Generator | None = 0,
    flows_per_pair: int = 1,
    pxn: bool = True,
) -> BandwidthResult:
    """The uniform all-to-all as real routing carries it: ECMP hashing or D-mod-k, with PXN.

    The same as ``routed_flow(G, topo.traffic.uniform_alltoall(G), routing, ...)``
    (:func:`routed_flow`), without listing the terminals in order.

    Parameters
    ----------
    G, routing, seed, flows_per_pair, pxn
        As for :func:`routed_flow`.

    Returns
    -------
    BandwidthResult
        As for :func:`routed_flow`: the pair rate ``lambda`` (B/s), busbw ``lambda (n - 1)``,
        the expected rate, tier loads, the most loaded links and the load of every arc.

    Raises
    ------
    TopoError, InfeasibleError
        As for :func:`routed_flow` (all but the demand's checks).

    Examples
    --------
    >>> from topo.builders import build
    >>> G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    >>> r = routed_alltoall(G, "dmodk")
    >>> round(r.alltoall_busbw_Bps / 1e9, 2)   # contention-free: 50 GB/s x (n - 1) / (n - g)
    51.67

    References
    ----------
    See :func:`routed_flow`.
    """
    return _routed(G, None, routing, seed, flows_per_pair, pxn, False)


def _routed(
    G: nx.Graph,
    demand: Demand | None,
    routing: str,
    seed: int | np.random.Generator | None,
    flows_per_pair: int,
    pxn: bool,
    expected: bool,
) -> BandwidthResult:
    """The one body of :func:`routed_flow` and :func:`routed_alltoall` (``demand`` None: the
    fabric's own uniform all-to-all)."""
    t0 = time.perf_counter()
    require_fabric(G)
    _check_seed(seed)
    name = getattr(routing, "value", routing)
    if name not in ROUTINGS:
        raise TopoError(
            f"routing must be one of {', '.join(ROUTINGS)} here (optimal is "
            f"topo.flow.alltoall_bandwidth), got {name!r}",
            param="routing",
        )
    pxn, expected = _flag("pxn", pxn), _flag("expected", expected)
    F = _check_flows(flows_per_pair)
    if demand is not None:
        _check_demand(G, demand)
    arcs = fabric_arcs(G)
    tree = updown_tree(arcs)
    ends = traffic_ends(G, tree, arcs, pxn)
    if demand is not None:
        _check_terminals(demand, arcs, ends)
    check_routable(tree, ends, int(G.graph.get("planes", 1)))
    notes: list[str] = list(ends.notes)
    if name == "dmodk" and not (seed is None or (_is_whole(seed) and seed == 0)):
        notes.append(_UNUSED_SEED.format(seed=seed))
    sample = name == "ecmp" and not expected
    if name == "ecmp":
        rng = seed if isinstance(seed, np.random.Generator) else stream(seed, ROUTING_STREAM)
        # F flows of a pair on every NIC port: each carries 1 / (F * ports) pair-units
        loads = route_ecmp(tree, ends, F * ends.ports, rng, sample=sample)
        if sample and ends.dead:
            notes.append(
                "ECMP counts whole flows per leaf pair: the fractions of the flows of GPUs "
                "whose NIC is not cabled are rounded there"
            )
        if not sample:
            notes.append("expected loads: every flow split evenly over its equal-cost ports")
    else:
        loads = route_dmodk(tree, ends)
        if F > 1:
            notes.append("D-mod-k routes by destination: all flows of a pair share one path")
    if pxn and ends.terminal != "gpu":
        notes.append("no GPUs (imported fabric): PXN does not apply")
    report_seed = int(seed) if _is_whole(seed) and sample else None
    return routed_report(
        G,
        arcs,
        tree,
        ends,
        loads,
        routing=name,
        seed=report_seed,
        flows_per_pair=F,
        notes=notes,
        t0=t0,
    )


_UNUSED_SEED = "seed {seed!r} unused: D-mod-k is deterministic (the seed seeds only ECMP's hashing)"
"""The note of a D-mod-k result given a seed other than the default. Not refused: one seed
passed to every routing of a loop over :data:`ROUTINGS` is the common call, and D-mod-k's
result does not depend on it."""


def _is_whole(x: object) -> TypeGuard[int | np.integer]:
    """Python or numpy integer, not a bool."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _flag(name: str, value: object) -> bool:
    """``value`` as a bool; TopoError naming ``name`` unless it is True or False (numpy's
    included): None or 0 would otherwise mean False silently."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TopoError(f"{name} must be True or False, got {value!r}")


def _check_flows(flows_per_pair: object) -> int:
    """``flows_per_pair`` as an int; TopoError unless a whole number from 1 to
    :data:`MAX_FLOWS_PER_PAIR`."""
    if not _is_whole(flows_per_pair) or not 1 <= flows_per_pair <= MAX_FLOWS_PER_PAIR:
        raise TopoError(
            f"flows_per_pair must be a whole number from 1 to {MAX_FLOWS_PER_PAIR}, "
            f"got {flows_per_pair!r}",
            param="flows_per_pair",
        )
    return int(flows_per_pair)


def _check_seed(seed: object) -> None:
    """TopoError unless ``seed`` is None, a numpy Generator, or a whole number >= 0."""
    if seed is None or isinstance(seed, np.random.Generator):
        return
    if _is_whole(seed) and seed >= 0:
        return
    raise TopoError(f"seed must be a whole number >= 0 or a numpy Generator, got {seed!r}")


_SUPPORTED = "as-routed traffic supports only the uniform all-to-all among every"


def _check_demand(G: nx.Graph, demand: Demand) -> None:
    """TopoError (one line) unless ``demand`` is uniform at the level the routers route."""
    gpus = terminal_kind(G) == "gpu"
    who = "GPU" if gpus else "host endpoint"
    if not demand.uniform:
        pairs = len(demand.entries or {})
        raise TopoError(
            f"{_SUPPORTED} {who} (topo.traffic.uniform_alltoall); got an explicit demand "
            f"{demand.name or 'matrix'!r} of {pairs:,} pairs"
        )
    if gpus and demand.level != "gpu":
        raise TopoError(
            f"{_SUPPORTED} GPU (level 'gpu'); got a uniform demand at level {demand.level!r}"
        )


def _check_terminals(demand: Demand, arcs: Arcs, ends: Ends) -> None:
    """TopoError unless the demand's terminals are every terminal the routers route."""
    if ends.terminal == "gpu":
        have = [arcs.nodes[i] for i in np.nonzero(arcs.kind == GPU)[0].tolist()]
        who = "GPUs"
    else:
        have = [arcs.nodes[i] for i in ends.nic_ids.tolist()]
        who = "host endpoints"
    want = set(demand.terminals)
    if len(demand.terminals) != len(want) or want != set(have):
        inside = len(want & set(have))
        raise TopoError(
            f"{_SUPPORTED} terminal; got a uniform demand over {len(want):,} terminals, "
            f"{inside:,} of the fabric's {len(have):,} {who}"
        )


__all__ = ["MAX_FLOWS_PER_PAIR", "ROUTINGS", "routed_alltoall", "routed_flow"]
