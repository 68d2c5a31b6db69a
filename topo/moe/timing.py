"""Time an MoE layer's dispatch and combine on a fabric, and what that bounds decode speed to.

For one phase (dispatch or combine of one micro-batch) with copy matrices ``C_ib`` and
``C_nvl`` (:mod:`topo.moe.traffic`) and ``b`` bytes per copy:

- **network time** ``t_ib``: the server-to-server byte matrix ``b * C_ib`` summed over the GPUs
  of each server, delivered at once over NICs and switches: ``1 / theta`` of its maximum
  concurrent flow (:func:`topo.flow.door.server_demand_time`; servers contracted, so any NIC
  of a server may carry any of its GPUs' bytes, as NCCL's PXN and DeepEP's NVLink forwarding
  do), divided by ``ib_efficiency``;
- **NVLink time** ``t_nvl``: every GPU reaches the NVSwitch over its own NVLink ports, a
  non-blocking crossbar, so the phase needs ``max_i max(out_i, in_i) / c_i`` with ``out_i`` and
  ``in_i`` the NVLink bytes GPU ``i`` sends and receives and ``c_i`` its NVLink capacity per
  direction (from the graph), divided by ``nvlink_efficiency``;
- **phase time** ``max(t_ib, t_nvl)``: DeepEP's normal kernels run the network and the NVLink
  traffic of a phase at once (forwarding is pipelined in chunks), and the naive scheme sends to
  every destination at once, so the slower medium sets the time. The bottleneck is NVLink or the
  binding tier of the network (NIC, a spine link).

Per layer: ``micro_batches * (t_dispatch + t_combine)`` (two micro-batches overlap computation
with communication, so the network is busy with one micro-batch's dispatch and combine after the
other). Per output token (TPOT): that times the MoE layers; decode speed ``1 / TPOT`` tokens/s
per sequence. Latency, computation and the dense layers are left out: the bound is the
communication's, as in the DeepSeek-V3 report's worked example.

References
----------
W. Zhao et al., "Insights into DeepSeek-V3: Scaling Challenges and Reflections on Hardware for
AI Architectures", ISCA 2025, §2.3.2 (the EP worked example, two micro-batches) and §4.3.
DeepEP README (normal kernels). F. Shahrokhi and D. W. Matula, "The maximum concurrent flow
problem", J. ACM 37(2), 1990.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import networkx as nx
import numpy as np

from topo.errors import InfeasibleError, TopoError
from topo.fabric import SWITCH_KINDS, natural_key
from topo.flow import BandwidthResult, server_demand_time
from topo.flow.solve import check_moe_matrices, check_moe_tokens
from topo.moe.cache import MoECache
from topo.moe.config import MoEConfig
from topo.moe.gating import CHUNK_TOKENS, GateResult, expert_probabilities, route_tokens
from topo.moe.results import MoEReport, PhaseResult, ScenarioResult
from topo.moe.traffic import (
    SCHEMES,
    SHARED_MODES,
    CopyMatrices,
    EPLayout,
    copy_matrices,
    destinations,
    ep_layout,
)
from topo.traffic import Demand, ep_server_demand, hose_bound

__all__ = [
    "DTYPE_BYTES",
    "MoEReport",
    "PhaseResult",
    "ScenarioResult",
    "copy_bytes",
    "moe_report",
    "time_phase",
]

T = TypeVar("T")

DTYPE_BYTES = {"fp8": 1, "bf16": 2, "fp16": 2, "fp32": 4}
"""Bytes per element of the activation formats."""
FP8_TILE = 128
"""FP8 activations carry one fp32 scale per 1 x 128 tile (DeepSeek-V3 §3.3)."""
FP8_SCALE_BYTES = 4
MAX_TOKENS = 4_194_304
"""Most tokens gated in one report (ep x tokens per GPU): a memory guard."""


def copy_bytes(hidden: int, dtype: str, *, fp8_scales: bool = True) -> int:
    """Bytes of one token's activation on the wire.

    ``hidden * bytes(dtype)``, plus, for FP8 with ``fp8_scales``, one 4-byte fp32 scale per
    1 x 128 tile: ``4 * ceil(hidden / 128)`` (DeepEP counts FP8 as ``hidden * (1 + 4/128)``).

    Parameters
    ----------
    hidden : int
        Elements per token.
    dtype : str
        One of :data:`DTYPE_BYTES` (fp8, bf16, fp16, fp32).
    fp8_scales : bool
        Count the FP8 block scales.

    Returns
    -------
    int
        Bytes.

    Raises
    ------
    TopoError
        Unknown dtype.

    Examples
    --------
    >>> copy_bytes(7168, "fp8"), copy_bytes(7168, "fp8", fp8_scales=False), copy_bytes(7168, "bf16")
    (7392, 7168, 14336)

    References
    ----------
    DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv 2412.19437, §3.3 (1 x 128 tile-wise
    activation scales); DeepEP ``tests/test_internode.py`` (``fp8_factor = (1 + 4/128) / 2``).
    """
    if dtype not in DTYPE_BYTES:
        raise TopoError(f"dtype must be one of {', '.join(DTYPE_BYTES)}, got {dtype!r}")
    size = hidden * DTYPE_BYTES[dtype]
    if dtype == "fp8" and fp8_scales:
        size += FP8_SCALE_BYTES * math.ceil(hidden / FP8_TILE)
    return size



def time_phase(
    G: nx.Graph,
    layout: EPLayout,
    copies: CopyMatrices,
    bytes_per_copy: int,
    phase: str,
    *,
    ib_efficiency: float = 1.0,
    nvlink_efficiency: float = 1.0,
    smallest_lp: bool = False,
    solved: dict[Any, tuple[float, float, dict[str, int], str]] | None = None,
    cache: MoECache | None = None,
) -> PhaseResult:
    """Time one phase: network by max concurrent flow, NVLink per GPU, the slower one binds.

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    layout : EPLayout
        Ranks and their GPUs and servers.
    copies : CopyMatrices
        Copies of the phase (rank to rank).
    bytes_per_copy : int
        Bytes of one copy (B).
    phase : str
        ``dispatch`` or ``combine`` (a label).
    ib_efficiency, nvlink_efficiency : float
        Fractions of the network and NVLink capacities that the kernels achieve, in (0, 1].
    smallest_lp : bool
        Solve the network time on the smallest fabric that gives the same time
        (:func:`network_time`); the binding links are then counted on that fabric.
    solved : dict, optional
        Network times already solved in this report (filled in as they are): a demand whose
        transpose is in it, scaled, takes that time scaled alike (on a fabric whose links
        carry the same rate both ways, a reversed flow serves the transposed demand).
    cache : MoECache, optional
        Where the cut and merged fabrics of the network LPs are kept for other phases and
        reports on the same fabric (:func:`network_time`).

    Returns
    -------
    PhaseResult
        Times in s; bytes per GPU.

    Raises
    ------
    TopoError
        NVLink copies but a GPU without NVLink; errors of
        :func:`topo.flow.door.server_demand_time` (no path, solver failure).

    References
    ----------
    Module notes; :func:`topo.flow.door.server_demand_time`.
    """
    ep = layout.ep
    ib = copies.ib.astype(float) * bytes_per_copy
    nvl = copies.nvlink.astype(float) * bytes_per_copy
    # NVLink: per GPU, the larger of sent and received bytes over its own capacity.
    nvl_load = np.maximum(nvl.sum(axis=1), nvl.sum(axis=0))
    busy = nvl_load > 0
    if np.any(busy & (layout.nvlink_Bps <= 0)):
        gpu = layout.gpus[int(np.flatnonzero(busy & (layout.nvlink_Bps <= 0))[0])]
        raise TopoError(f"GPU {gpu} has NVLink traffic but no nvlink edge in the fabric")
    nvl_times = np.divide(nvl_load, layout.nvlink_Bps, out=np.zeros(ep), where=busy)
    nvl_s = float(nvl_times.max()) / nvlink_efficiency if ep else 0.0
    busiest = layout.gpus[int(nvl_times.argmax())] if nvl_s > 0 else None
    # Network: server-to-server demand over the fabric.
    demand = ep_server_demand(ib, layout.servers, layout.gpus_per_node, name=phase)
    ib_s, method = 0.0, "-"
    tiers: dict[str, int] = {}
    if demand is not None:
        ib_s, tiers, method = _network(G, demand, smallest_lp, solved, cache)
        own = own_nic_time(layout, ib)
        if own > ib_s * (1 + 1e-9):
            ib_s, tiers = own, {"own NIC": 1}
            method += "; own-NIC bound binds"
        ib_s /= ib_efficiency
    time_s = max(ib_s, nvl_s)
    if time_s == 0:
        bottleneck = "-"
    elif ib_s >= nvl_s:
        bottleneck = _tier_label(tiers)
    else:
        bottleneck = "NVLink"
    return PhaseResult(
        phase=phase,
        bytes_per_copy=bytes_per_copy,
        nvlink_bytes_sent=float(nvl.sum() / ep),
        nvlink_bytes_max=float(nvl_load.max()) if ep else 0.0,
        ib_bytes_sent=float(ib.sum() / ep),
        ib_bytes_max=float(np.maximum(ib.sum(axis=1), ib.sum(axis=0)).max()) if ep else 0.0,
        nvlink_s=nvl_s,
        ib_s=ib_s,
        time_s=time_s,
        bottleneck=bottleneck,
        ib_bottleneck_tiers=tiers,
        ib_method=method,
        nvlink_busiest_gpu=busiest,
        ib_matrix=ib,
        nvlink_matrix=nvl,
    )


def _network(
    G: nx.Graph,
    demand: Demand,
    smallest_lp: bool,
    solved: dict[Any, tuple[float, float, dict[str, int], str]] | None,
    cache: MoECache | None = None,
) -> tuple[float, dict[str, int], str]:
    """The network time of ``demand`` (s), its binding tiers and how it was found: from
    ``solved`` when the transposed demand (scaled) is there, else by :func:`network_time`."""
    if solved is None:
        rep, method = network_time(G, demand, smallest_lp=smallest_lp, cache=cache)
        return rep.time_s, dict(rep.bottleneck_tiers), method
    assert demand.entries is not None
    total = sum(demand.entries.values())
    back = frozenset(((b, a), x / total) for (a, b), x in demand.entries.items())
    if back in solved:
        time_s, was, tiers, method = solved[back]
        return time_s * total / was, dict(tiers), method + "; the transposed demand's, scaled"
    rep, method = network_time(G, demand, smallest_lp=smallest_lp, cache=cache)
    key = frozenset(((a, b), x / total) for (a, b), x in demand.entries.items())
    solved[key] = (rep.time_s, total, dict(rep.bottleneck_tiers), method)
    return rep.time_s, dict(rep.bottleneck_tiers), method


def own_nic_time(layout: EPLayout, ib: np.ndarray) -> float:
    """Time for every GPU to move its network bytes through its own NIC.

    DeepEP's kernels (and a naive all-to-all) send a GPU's RDMA traffic through the GPU's own
    NIC and receive it on the destination GPU's own NIC, while the fabric solver pools a
    server's NICs. So the network time is at least, for every GPU ``i``, its hose bound
    ``max(out_i, in_i) / pcie_i`` and, for every NIC ``n``, the hose bound of the summed bytes
    of its GPUs over its cable capacity (GPUs sharing a NIC share its cable; a GPU with several
    NICs splits its bytes evenly), both by :func:`topo.traffic.demand.hose_bound`. GPUs
    without a NIC of their own are left to the solver.

    Parameters
    ----------
    layout : EPLayout
    ib : numpy.ndarray, shape (ep, ep)
        Network bytes from rank ``i`` to rank ``j`` (B).

    Returns
    -------
    float
        Seconds (0 when no GPU has a NIC of its own).
    """
    out, inn = ib.sum(axis=1), ib.sum(axis=0)
    ranks = zip(layout.gpus, layout.nic_of_rank, strict=True)
    own = [(i, gpu, nics) for i, (gpu, nics) in enumerate(ranks) if nics]
    pcie: dict[Hashable, float] = {
        gpu: float(layout.pcie_Bps[i]) for i, gpu, _ in own if layout.pcie_Bps[i] > 0
    }
    worst = hose_bound(((gpu, max(out[i], inn[i])) for i, gpu, _ in own), pcie)
    nic_out: dict[str, float] = {}
    nic_in: dict[str, float] = {}
    for i, _, nics in own:
        for n in nics:
            nic_out[n] = nic_out.get(n, 0.0) + out[i] / len(nics)
            nic_in[n] = nic_in.get(n, 0.0) + inn[i] / len(nics)
    cable: dict[Hashable, float] = {n: c for n, c in layout.nic_cable_Bps.items() if c > 0}
    nic_loads = ((n, max(nic_out[n], nic_in[n])) for n in nic_out)
    return float(max(worst, hose_bound(nic_loads, cable)))


HOSE_TOL = 1e-6
"""Relative tolerance of the hose-bound check of :func:`network_time`."""


def network_time(
    G: nx.Graph, demand: Demand, *, smallest_lp: bool = False, cache: MoECache | None = None
) -> tuple[BandwidthResult, str]:
    """Time a server-to-server demand on the fabric, solving a smaller fabric when exact.

    The fabric is first cut down to the servers that send or receive, the leaves they are
    cabled to and every switch above the leaves (other servers never forward traffic, and
    other leaves only offer detours). Removing arcs can only lengthen the time, and no fabric
    delivers a server's bytes faster than its NICs' cables carry them (the *hose bound*,
    :meth:`topo.traffic.Demand.hose_time`). So when the cut fabric reaches the hose bound, its
    time is exact for the whole fabric; otherwise the whole fabric is solved.

    Parameters
    ----------
    G : networkx.Graph
        The fabric.
    demand : Demand
        Server level: bytes between distinct servers (:mod:`topo.traffic.moe`).
    smallest_lp : bool
        First solve the demand's servers and their leaves alone, then with the switches on
        shortest paths between those leaves, twin switches merged
        (:func:`merge_twin_switches`); the first that reaches the hose bound is exact (the
        same argument as the cut above), else the steps above follow, twin switches merged.
        The same time from smaller LPs; the report's links are then those of the fabric
        solved.
    cache : MoECache, optional
        Keeps, per fabric and set of sending or receiving servers, the cut fabric, its inner
        fabrics and (``smallest_lp``) each fabric solved with its twins merged: they depend on
        those alone, not on the bytes. The same results.

    Returns
    -------
    (BandwidthResult, str)
        The report of :func:`topo.flow.door.server_demand_time` and how it was obtained.

    Raises
    ------
    TopoError, InfeasibleError, SolverError
        As :func:`topo.flow.door.server_demand_time`.

    References
    ----------
    :func:`topo.flow.door.server_demand_time`; docs/moe.md ("Solving the network time").
    """
    assert demand.entries is not None, "a uniform demand is solved by topo.flow.door"
    entries = dict(demand.entries)
    busy = frozenset(t for t in demand.terminals if demand.load(t) > 0)
    keep, cable = _fabric_piece(cache, G, ("cut", busy), lambda: _cut_fabric(G, set(busy)))

    def solved(vertices: set[Hashable] | None) -> nx.Graph:
        """The fabric on ``vertices`` (None: all of it), its twins merged with smallest_lp."""
        if not smallest_lp:
            return G if vertices is None else G.subgraph(vertices)
        H = G if vertices is None else G.subgraph(vertices)
        key = ("merged", None if vertices is None else frozenset(vertices))
        return _fabric_piece(cache, G, key, lambda: merge_twin_switches(H))

    twins = "; twin switches merged" if smallest_lp else ""
    hose = demand.hose_time({s: c for s, c in cable.items() if c > 0})
    if smallest_lp:
        inners = _fabric_piece(cache, G, ("inner", busy), lambda: _inner_fabrics(G, keep))
        for what, inner in inners:
            if len(inner) == len(keep):
                continue
            try:
                small = server_demand_time(solved(inner), entries)
            except InfeasibleError:  # a pair not joined in it
                continue
            if small.time_s <= hose * (1 + HOSE_TOL):
                n, m = len(inner), G.number_of_nodes()
                return small, (
                    f"{what} ({n:,} of {m:,} vertices) at the hose bound: exact{twins}"
                )
    if len(keep) < G.number_of_nodes():
        try:
            rep = server_demand_time(solved(keep), entries)
        except InfeasibleError:  # the cut removed a needed path: solve the whole fabric
            rep = None
        if rep is not None and rep.time_s <= hose * (1 + HOSE_TOL):
            n, m = len(keep), G.number_of_nodes()
            return rep, f"reduced fabric ({n:,} of {m:,} vertices) at the hose bound: exact{twins}"
    return server_demand_time(solved(None), entries), "whole fabric" + twins


def _fabric_piece(cache: MoECache | None, G: nx.Graph, key: Hashable, make: Callable[[], T]) -> T:
    """``make()``, kept in ``cache`` per fabric and ``key`` when there is one."""
    return make() if cache is None else cache.per_fabric(G, key, make)


def _inner_fabrics(G: nx.Graph, keep: set[Hashable]) -> list[tuple[str, set[Hashable]]]:
    """Of the cut fabric ``keep``, smallest first: its servers and their leaves (a demand
    whose servers share leaves, one per rail or plane, needs nothing above them); and those
    with the switches on a shortest path (in switch hops) between two of the leaves."""
    switches = [v for v in keep if G.nodes[v]["kind"] in SWITCH_KINDS]
    index = {v: i for i, v in enumerate(switches)}
    leaves = sorted(
        {
            w
            for v in keep
            if G.nodes[v]["kind"] == "nic"
            for w, e in G.adj[v].items()
            if e["kind"] == "endpoint" and w in index
        },
        key=natural_key,
    )
    servers = {v for v in keep if G.nodes[v]["kind"] not in SWITCH_KINDS}
    below = servers | set(leaves)
    if len(leaves) < 2:
        return [("servers and their leaves", below)]
    S = G.subgraph(switches)
    dist = np.full((len(leaves), len(switches)), np.inf)
    for i, a in enumerate(leaves):
        for v, d in nx.single_source_shortest_path_length(S, a).items():
            dist[i, index[v]] = d
    on = np.zeros(len(switches), dtype=bool)
    for i in range(len(leaves)):
        ab = dist[i, [index[b] for b in leaves]]  # distances from leaf i to every leaf
        on |= np.any(
            (dist[i][None, :] + dist == ab[:, None]) & np.isfinite(ab)[:, None], axis=0
        )
    return [
        ("servers and their leaves", below),
        ("shortest-path fabric", below | {v for v in switches if on[index[v]]}),
    ]


def merge_twin_switches(G: nx.Graph) -> nx.Graph:
    """The fabric with each set of twin switches merged into one, for the demand LPs.

    Switches are twins when they have the same neighbours with the same capacity to each
    (e.g. the spines of a two-layer fat tree, MRFT or MPFT plane, each cabled alike to every
    leaf; the cores of one group of a three-layer fat tree). ``m`` twins become their first
    (by name), cabled to each neighbour with the sum of their capacities and cables (``m``
    times one twin's; two groups of twins cabled to each other are merged alike, one after
    the other, ``m n`` times one cable's capacity). The maximum
    concurrent flow of any demand between servers is unchanged: a flow of the fabric summed
    over the twins is a flow of the merged one, and a flow of the merged one split evenly over
    the twins is a flow of the fabric (each twin carries ``1/m`` of the merged vertex's flow
    on every arc, within ``1/m`` of its capacity; twins are never each other's neighbours).

    Parameters
    ----------
    G : networkx.Graph
        A fabric (schema of :mod:`topo.fabric`), or a subgraph view of one.

    Returns
    -------
    networkx.Graph
        A new graph (``G``'s graph attributes); ``G`` itself is not changed. Servers (GPUs,
        NICs, NVSwitches) and switches without a twin keep their attributes and edges.

    Examples
    --------
    >>> from topo.builders import build
    >>> H = merge_twin_switches(build("ft2", switch_ports=8))     # 4 spines, alike
    >>> sorted(v for v, k in H.nodes(data="kind") if k == "spine")
    ['spine0']
    >>> H.edges["leaf0", "spine0"]["links"]
    4

    References
    ----------
    F. Shahrokhi and D. W. Matula, J. ACM 37(2), 1990 (maximum concurrent flow); the
    argument is the symmetrisation of ``docs/bandwidth.md`` ("Class symmetry") for a
    permutation of the twins, which fixes every server.
    """
    groups: dict[frozenset[tuple[Hashable, float]], list[Hashable]] = {}
    for v, kind in G.nodes(data="kind"):
        if kind in SWITCH_KINDS:
            sig = frozenset((w, float(e["capacity"])) for w, e in G.adj[v].items())
            groups.setdefault(sig, []).append(v)
    into: dict[Hashable, tuple[Hashable]] = {}
    for members in groups.values():
        if len(members) > 1:
            first = min(members, key=natural_key)
            for v in members:
                into[v] = (first,)
    H = nx.Graph(**G.graph)
    H.add_nodes_from((v, d) for v, d in G.nodes(data=True) if into.get(v, (v,))[0] == v)
    for u, v, e in G.edges(data=True):
        a, b = into.get(u, (u,))[0], into.get(v, (v,))[0]
        if H.has_edge(a, b):  # a twin's edge: the merged one carries the sum
            f = H.edges[a, b]
            f["capacity"] += float(e["capacity"])
            f["links"] += e["links"]
        else:
            H.add_edge(a, b, **{**e, "capacity": float(e["capacity"])})
    return H


def _cut_fabric(G: nx.Graph, servers: set[Hashable]) -> tuple[set[Hashable], dict[Hashable, float]]:
    """Vertices of the demand's servers, their leaves and all higher switches; and each server's
    summed NIC cable capacity (B/s)."""
    keep: set[Hashable] = set()
    cable: dict[Hashable, float] = {}
    for v, d in G.nodes(data=True):
        kind = d["kind"]
        if kind in ("gpu", "nic", "nvswitch") and d["node"] in servers:
            keep.add(v)
            if kind == "nic":
                for w, e in G[v].items():
                    if e["kind"] == "endpoint":
                        keep.add(w)
                        cable[d["node"]] = cable.get(d["node"], 0.0) + float(e["capacity"])
        elif kind in SWITCH_KINDS and int(d.get("tier", 1)) >= 2:
            keep.add(v)
    return keep, cable


def _tier_label(tiers: dict[str, int]) -> str:
    """Name the binding network tier(s): NIC, leaf link, spine link, core link."""
    names: list[str] = []
    for tier in tiers:
        if "nic" in tier.lower():
            name = "NIC"
        elif "core" in tier:
            name = "core link"
        elif "spine" in tier:
            name = "spine link"
        else:
            name = f"{tier} link"
        if name not in names:
            names.append(name)
    return " + ".join(names) if names else "network"


def moe_report(
    G: nx.Graph,
    config: MoEConfig,
    *,
    ep: int | None = None,
    tokens_per_gpu: int = 32,
    dispatch_dtype: str = "fp8",
    combine_dtype: str = "bf16",
    fp8_scales: bool = True,
    node_limit: int | None = None,
    shared: str = "remote",
    zipf: float | None = None,
    expert_load: Sequence[float] | np.ndarray | None = None,
    routing: np.ndarray | None = None,
    micro_batches: int = 2,
    ib_efficiency: float = 1.0,
    nvlink_efficiency: float = 1.0,
    schemes: Sequence[str] = SCHEMES,
    seed: int | None = 0,
    routing_label: str | None = None,
    compare_unlimited: bool = True,
    smallest_lp: bool = False,
    cache: MoECache | None = None,
) -> MoEReport:
    """Expert-parallel dispatch and combine of one MoE layer on a fabric; TPOT and decode speed.

    Parameters
    ----------
    G : networkx.Graph
        A fabric with GPUs (e.g. ``build("mpft", ...)``).
    config : MoEConfig
        The model (:func:`topo.moe.load_config`, :func:`topo.moe.default_config`).
    ep : int, optional
        EP size in GPUs (default :func:`topo.moe.traffic.default_ep`).
    tokens_per_gpu : int
        Tokens each EP rank dispatches per micro-batch (the report's worked example: 32).
    dispatch_dtype, combine_dtype : str
        Activation formats on the wire (fp8, bf16, fp16, fp32); FP8 with its block scales
        unless ``fp8_scales`` is False.
    node_limit : int, optional
        Nodes a token may reach, ``M`` (default ``config.default_node_limit``; 0 = unlimited).
    shared : str
        ``remote`` (the shared expert is one more destination, DeepSeek-V3 decode) or ``local``.
    zipf : float, optional
        Zipf exponent of a skewed expert load (default uniform).
    expert_load : sequence of float, optional
        Relative load per routed expert (instead of ``zipf``).
    routing : numpy.ndarray of int, shape (ep * tokens_per_gpu, k), optional
        A fixed routing (each token's routed experts) instead of gating; tokens
        ``r*T .. r*T+T-1`` start on rank ``r``. The node limit is then not applied.
    micro_batches : int
        Micro-batches per layer whose communication runs back to back (2 in DeepSeek-V3).
    ib_efficiency, nvlink_efficiency : float
        Achieved fractions of network and NVLink capacity, in (0, 1].
    schemes : sequence of str
        Delivery schemes to compute (``deepep`` first is the headline).
    seed : int or None
        Randomness of the gating and of the Zipf ranks.
    routing_label : str, optional
        How the routing is described in the report (default: uniform, zipf s=..., load vector,
        fixed).
    compare_unlimited : bool
        When the node limit binds, also time the unlimited routing (the report's
        ``node_limit_saving``); False times the limited routing only, the headline being the
        same (the routings are gated on the same scores, :func:`topo.moe.gating.route_tokens`).
    smallest_lp : bool
        Solve each network time on the smallest fabric that gives the same time
        (:func:`network_time`), and take each combine's times from its dispatch's: the
        combine moves the dispatch's copies back (the transposed matrices), and on a fabric
        whose every link carries the same rate both ways reversing a flow serves the
        transposed demand, so the network, own-NIC and NVLink times scale by
        ``combine bytes / dispatch bytes``. The same times (exact, to the LP's tolerance);
        the phases' ``ib_bottleneck_tiers`` count the smaller fabric's links, and the combine's
        are the dispatch's.
    cache : MoECache, optional
        Keeps what other reports share (:mod:`topo.moe.cache`): the EP layout per fabric and
        EP size, the routing per token count, probabilities, expert groups, limits and seed
        (an int seed; none is kept for another), and the network LPs' fabrics
        (:func:`network_time`). The same report as without; its layout and routings are then
        read-only and shared.

    Returns
    -------
    MoEReport
        One :class:`ScenarioResult` per scheme and per limit (the limit asked for, then
        unlimited, when the limit can bind).

    Raises
    ------
    TopoError
        Bad sizes (tokens, micro-batches, efficiencies, node limit), EP placement errors
        (:func:`topo.moe.traffic.ep_layout`), routing errors (:func:`topo.moe.gating.gate`),
        too many tokens (:data:`MAX_TOKENS`), rank-to-rank matrices over the memory limit
        (:func:`topo.flow.solve.memory.check_moe_matrices`, before allocating them), and the flow
        solver's errors.

    Examples
    --------
    >>> from topo.builders import build
    >>> from topo.moe import default_config
    >>> r = moe_report(build("mpft", switch_ports=16, gpus=64), default_config())
    >>> r.ep, r.nodes, r.node_limit, r.headline.label
    (64, 8, 4, 'deepep, M=4')
    >>> r.headline.nodes_per_token <= 4 < r.scenario("deepep", False).nodes_per_token
    True

    References
    ----------
    W. Zhao et al., ISCA 2025, §2.3.2 and §4.3; DeepSeek-AI, arXiv 2412.19437, §2.1.2, §3.4;
    DeepEP README.
    """
    _check_sizes(tokens_per_gpu, micro_batches, ib_efficiency, nvlink_efficiency, shared, schemes)
    E = config.n_routed_experts
    layout = _fabric_piece(cache, G, ("ep_layout", E, ep), lambda: _frozen(ep_layout(G, E, ep)))
    check_moe_matrices(layout.ep)
    n_tokens = layout.ep * tokens_per_gpu
    if n_tokens > MAX_TOKENS:
        raise TopoError(
            f"{layout.ep} ranks x {tokens_per_gpu} tokens = {n_tokens:,} tokens exceeds the "
            f"{MAX_TOKENS:,} topo gates at once; lower tokens_per_gpu",
            param="tokens_per_gpu",
        )
    limit, binding = _node_limit(config, layout, node_limit)
    check_moe_tokens(layout.ep, tokens_per_gpu, E, config.num_experts_per_tok,
                     at_once=CHUNK_TOKENS if routing is None else 0,
                     limited=binding)  # fmt: skip
    if routing is not None:
        routings = {0: _fixed_routing(config, routing, n_tokens)}
        limits = [0]
        label = routing_label or "fixed"
    else:
        probs = expert_probabilities(
            config.n_routed_experts, zipf=zipf, load=expert_load, seed=seed
        )
        limits = ([limit, 0] if compare_unlimited else [limit]) if binding else [0]
        k = config.num_experts_per_tok
        gated = _route(cache, n_tokens, probs, layout.expert_node, k, limits, seed)
        routings = {m: g.experts for m, g in gated.items()}
        label = routing_label or (
            f"zipf s={zipf:g}"
            if zipf is not None
            else "load vector"
            if expert_load is not None
            else "uniform"
        )
    d_bytes = copy_bytes(config.hidden_size, dispatch_dtype, fp8_scales=fp8_scales)
    c_bytes = copy_bytes(config.hidden_size, combine_dtype, fp8_scales=fp8_scales)
    use_shared = shared if config.n_shared_experts > 0 else "local"
    run = _Scenarios(G, layout, config, tokens_per_gpu, micro_batches, use_shared,
                     d_bytes, c_bytes, ib_efficiency, nvlink_efficiency, smallest_lp,
                     cache)  # fmt: skip
    scenarios = [run.scenario(scheme, m, routings[m]) for scheme in schemes for m in limits]
    return MoEReport(
        model=config,
        fabric=str(G.graph.get("name", G.graph.get("family", ""))),
        ep=layout.ep,
        nodes=layout.nodes,
        gpus_per_node=layout.gpus_per_node,
        tokens_per_gpu=tokens_per_gpu,
        micro_batches=micro_batches,
        moe_layers=config.moe_layers,
        dispatch_dtype=dispatch_dtype,
        combine_dtype=combine_dtype,
        dispatch_bytes_per_copy=d_bytes,
        combine_bytes_per_copy=c_bytes,
        shared=use_shared,
        routing=label,
        seed=seed,
        node_limit=limit,
        node_limit_binds=binding and routing is None,
        scenarios=scenarios,
        layout=layout,
        routings=routings,
    )


def _frozen(layout: EPLayout) -> EPLayout:
    """``layout`` with its arrays read-only (it is shared through a cache)."""
    for a in (layout.expert_rank, layout.nvlink_Bps, layout.pcie_Bps):
        a.setflags(write=False)
    return layout


def _route(
    cache: MoECache | None,
    n_tokens: int,
    probs: np.ndarray,
    groups: np.ndarray,
    k: int,
    limits: list[int],
    seed: int | None,
) -> dict[int, GateResult]:
    """:func:`topo.moe.gating.route_tokens`, kept in ``cache`` under every input it reads
    when the seed is an int (None draws afresh each time)."""
    if cache is None or isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        return route_tokens(n_tokens, probs, groups, k, limits, seed=seed)
    p, g = np.ascontiguousarray(probs), np.ascontiguousarray(groups)
    key = ("route_tokens", n_tokens, p.dtype.str, p.tobytes(), g.dtype.str, g.tobytes(), k,
           tuple(limits), int(seed), CHUNK_TOKENS)  # fmt: skip

    def make() -> dict[int, GateResult]:
        gated = route_tokens(n_tokens, probs, groups, k, limits, seed=seed)
        for r in gated.values():
            r.experts.setflags(write=False)
            r.weights.setflags(write=False)
        return gated

    return cache.by_value(key, make)


def _check_sizes(
    tokens_per_gpu: int,
    micro_batches: int,
    ib_efficiency: float,
    nvlink_efficiency: float,
    shared: str,
    schemes: Sequence[str],
) -> None:
    """Refuse bad sizes, efficiencies, shared-expert modes and schemes."""
    for name, value in (("tokens_per_gpu", tokens_per_gpu), ("micro_batches", micro_batches)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise TopoError(f"{name} must be an integer >= 1, got {value!r}", param=name)
    for name, eff in (("ib_efficiency", ib_efficiency), ("nvlink_efficiency", nvlink_efficiency)):
        if not (0 < eff <= 1):
            raise TopoError(f"{name} must be in (0, 1], got {eff}", param=name)
    if shared not in SHARED_MODES:
        raise TopoError(f"shared experts must be one of {', '.join(SHARED_MODES)}, got {shared!r}")
    if not schemes or any(s not in SCHEMES for s in schemes):
        raise TopoError(f"schemes must be among {', '.join(SCHEMES)}, got {list(schemes)}")


def _node_limit(config: MoEConfig, layout: EPLayout, node_limit: int | None) -> tuple[int, bool]:
    """The node limit asked for (default the model's), and whether it can bind."""
    k = config.num_experts_per_tok
    limit = config.default_node_limit if node_limit is None else node_limit
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise TopoError(f"node_limit must be an integer >= 0, got {limit!r}", param="node_limit")
    per_node = np.bincount(layout.expert_node, minlength=layout.nodes)
    binding = 0 < limit < layout.nodes
    most = int(np.sort(per_node)[::-1][:limit].sum())
    if binding and most < k:
        raise TopoError(
            f"node_limit {limit}: {limit} nodes hold at most {most} experts, "
            f"fewer than the {k} a token picks",
            param="node_limit",
        )
    return limit, binding


def _fixed_routing(config: MoEConfig, routing: np.ndarray, n_tokens: int) -> np.ndarray:
    """A fixed routing, checked: shape (tokens, k), experts of the model."""
    k = config.num_experts_per_tok
    experts = np.asarray(routing, dtype=np.int64)
    if experts.shape != (n_tokens, k):
        raise TopoError(f"a fixed routing must have shape ({n_tokens}, {k}), got {experts.shape}")
    if experts.min() < 0 or experts.max() >= config.n_routed_experts:
        raise TopoError("a fixed routing names an expert outside the model's routed experts")
    return experts


@dataclass(frozen=True)
class _Scenarios:
    """What every scenario of one report shares; :meth:`scenario` times one."""

    G: nx.Graph
    layout: EPLayout
    config: MoEConfig
    tokens_per_gpu: int
    micro_batches: int
    shared: str
    d_bytes: int
    c_bytes: int
    ib_efficiency: float
    nvlink_efficiency: float
    smallest_lp: bool = False
    cache: MoECache | None = None
    solved: dict[Any, tuple[float, float, dict[str, int], str]] = field(default_factory=dict)

    def scenario(self, scheme: str, node_limit: int, experts: np.ndarray) -> ScenarioResult:
        """Dispatch and combine of one routing under one delivery scheme."""
        lay, mb = self.layout, self.micro_batches
        n_tokens = experts.shape[0]
        kw: dict[str, Any] = dict(
            ib_efficiency=self.ib_efficiency,
            nvlink_efficiency=self.nvlink_efficiency,
            smallest_lp=self.smallest_lp,
            solved=self.solved if self.smallest_lp else None,
            cache=self.cache,
        )
        src, dest = destinations(lay, experts, self.tokens_per_gpu, self.shared)
        nodes = lay.expert_node[experts]
        nodes_per_token = float(np.mean(_distinct_per_row(nodes))) if n_tokens else 0.0
        copies = copy_matrices(src, dest, lay.gpus_per_node, lay.ep, scheme)
        disp = time_phase(self.G, lay, copies, self.d_bytes, "dispatch", **kw)
        comb = time_phase(self.G, lay, copies.transposed(), self.c_bytes, "combine", **kw)
        layer = mb * (disp.time_s + comb.time_s)
        tpot = self.config.moe_layers * layer
        return ScenarioResult(
            scheme=scheme,
            node_limit=node_limit,
            nodes_per_token=nodes_per_token,
            ib_copies_per_token=float(copies.ib.sum() / n_tokens) if n_tokens else 0.0,
            dispatch=disp,
            combine=comb,
            layer_s=layer,
            tpot_s=tpot,
            tokens_per_s=1.0 / tpot if tpot > 0 else math.inf,
            ib_bytes_per_gpu=mb * (disp.ib_bytes_sent + comb.ib_bytes_sent),
            nvlink_bytes_per_gpu=mb * (disp.nvlink_bytes_sent + comb.nvlink_bytes_sent),
        )


def _distinct_per_row(a: np.ndarray) -> np.ndarray:
    b = np.sort(a, axis=1)
    return 1 + (b[:, 1:] != b[:, :-1]).sum(axis=1)
