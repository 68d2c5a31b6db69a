"""The model's nccl-tests row for one size on a fabric: the tuner's choice, its expected time
and its ceiling.

:func:`predict_row` gives one :class:`Row` (nccl-tests' columns plus the choice and every
candidate the tuner weighed); :func:`fabric_constants` picks NCCL's constants for the fabric's
GPU generation; :func:`rates_summary` gives the sub-cluster's rates in GB/s; :func:`busbw_note`
says why a busbw may exceed the link rate (:func:`link_rate_Bps`). The size sweep
(:func:`topo.collective.report.collective_table`) and the comparison with a measured log
(:func:`topo.collective.compare.compare_log`) are built from these rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import networkx as nx

from topo.collective.choice import TunerRestriction, candidate_record, ranked_candidates
from topo.collective.constants import NcclConstants, load_constants
from topo.collective.expected import expected
from topo.collective.fabric_rates import FabricRates
from topo.collective.model import busbw_factor
from topo.fabric.gpus import gpu_arch, host_cpu_arch
from topo.units import Bps_to_GBps, s_to_us

if TYPE_CHECKING:
    from topo.formats.nccl_tests_records import NcclTestRow

GIB = 1 << 30
"""Bytes in a GiB."""
MIB = 1 << 20
"""Bytes in a MiB."""
FITTED_FROM_BYTES = MIB
"""The smallest size the expected curve's constants were fitted on (the training file's rows
start at 1 MiB, :func:`topo.collective.training.points`): below it the curve is not fitted."""


@dataclass(frozen=True)
class Row:
    """One size of the predicted table (nccl-tests' columns plus the choice).

    Attributes
    ----------
    size_bytes, count : int
        nccl-tests size (B) and element count per rank (per peer for alltoall).
    type, redop : str
        Data type; ``sum`` for reductions, ``none`` otherwise.
    root : int
        0 for broadcast and reduce, -1 otherwise.
    time_us, algbw_GBps, busbw_GBps : float
        The **expected** time (µs) and bandwidths (GB/s) of the tuner's choice: what NCCL
        typically achieves on this fabric (:mod:`topo.collective.expected`).
    algorithm, protocol : str
        The tuner's choice.
    latency_us : float
        Its latency term in NCCL's tuner (µs).
    bound : str
        What limits its bandwidth (the fabric's binding links, a per-channel cap, ...).
    busbw_note : str
        Why busbw exceeds the rate of the links it crosses, when it does (NVLS in-switch
        reduction, a tree across servers); empty otherwise (:func:`busbw_note`).
    candidates : list of dict
        Every (algorithm, protocol) the tuner weighed at this size (under NCCL_ALGO /
        NCCL_PROTO when given), fastest first, each as
        :func:`topo.collective.choice.candidate_record` shows it (``chosen`` marks the row's).
    ceiling_time_us, ceiling_algbw_GBps, ceiling_busbw_GBps : float
        The **ceiling**: the tuner's cost of the choice on the fabric's rates, NCCL's latency
        table plus size over the rate the fabric allows (:mod:`topo.collective.model`); a
        bound, never less than the expected time.
    binds : str
        The largest part of the expected time: ``bandwidth``, ``messages`` (the messages' way
        along the path: NCCL's per-message costs), ``latency`` (the operation's launch), or
        ``ceiling`` (NCCL's latency table exceeds the message model and is taken).
    binds_detail : str
        What in particular (the bound, the messages and their size, ...).
    expected : dict
        The expected time's parts (µs): ``launch_us`` (per operation), ``latency_us`` (the
        messages' way along the path), ``bandwidth_us`` (size over the bound's rate), and
        ``messages``, ``message_bytes`` (B) and ``channels`` of a channel.
    fitted : bool
        Whether the size is within the range the expected curve was fitted on (1 MiB and more,
        :data:`FITTED_FROM_BYTES`); below it the expected time is the message model with
        constants fitted on larger sizes, whose error there docs/collective.md reports.
    """

    size_bytes: int
    count: int
    type: str
    redop: str
    root: int
    time_us: float
    algbw_GBps: float
    busbw_GBps: float
    algorithm: str
    protocol: str
    latency_us: float
    bound: str
    busbw_note: str = ""
    candidates: list[dict[str, Any]] = field(default_factory=list)
    ceiling_time_us: float = math.nan
    ceiling_algbw_GBps: float = math.nan
    ceiling_busbw_GBps: float = math.nan
    binds: str = ""
    binds_detail: str = ""
    expected: dict[str, Any] = field(default_factory=dict)
    fitted: bool = True


def fabric_constants(G: nx.Graph, c: NcclConstants | None = None) -> NcclConstants:
    """The constants ``c`` (default :func:`load_constants`) for the GPU generation the fabric
    records (:func:`topo.fabric.gpus.gpu_arch`) and its hosts' CPU architecture
    (:func:`topo.fabric.gpus.host_cpu_arch`: arm for a Grace superchip's GPU), else as they
    are (the file's: hopper, x86).

    Examples
    --------
    >>> from topo.builders import build
    >>> G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    >>> G.graph["gpu_model"] = "NVIDIA A100-SXM4-80GB"
    >>> fabric_constants(G).arch
    'ampere'
    """
    c = c if c is not None else load_constants()
    arch = gpu_arch(G)
    c = c.with_arch(arch) if arch is not None and arch != c.arch else c
    cpu = host_cpu_arch(G)
    return c.with_cpu_arch(cpu) if cpu is not None and cpu != c.cpu_arch else c


def rates_summary(r: FabricRates, c: NcclConstants) -> dict[str, Any]:
    """The fabric-derived rates of a sub-cluster in GB/s, raw and as NCCL gets them.

    Across servers (absent on one server): ``ring_per_server_GBps`` and
    ``tree_per_server_GBps``, the flow rate of each pattern's unit per server;
    ``alltoall_internode_per_gpu_GBps``, what one GPU sends to the other servers; each None
    when the flow LP was refused (``<pattern>_method`` says why), with ``<pattern>_bottleneck``
    the binding link directions per tier.
    """
    out: dict[str, Any] = {
        "nvlink_per_gpu_GBps": Bps_to_GBps(r.nvlink_Bps),
        "nvlink_effective_GBps": Bps_to_GBps(r.nvlink_Bps * c.nvlink_efficiency),
        "nic_GBps": Bps_to_GBps(r.nic_Bps),
        "nics_per_node": r.nics_per_node,
        "server_nics_GBps": Bps_to_GBps(r.server_nic_Bps),
        "server_ceiling_GBps": Bps_to_GBps(r.server_nic_Bps * c.node_network_efficiency),
    }
    for name, p in (("ring", r.ring), ("tree", r.tree), ("alltoall", r.alltoall)):
        if p is None:
            continue
        # the pattern's unit per second; the all-to-all's unit is one byte per GPU pair
        rate = Bps_to_GBps(1 / p.seconds_per_byte) if p.seconds_per_byte else None
        if name == "alltoall":
            per_gpu = rate * (r.gpus - r.gpus_per_node) if rate else None
            out["alltoall_internode_per_gpu_GBps"] = per_gpu
        else:
            out[f"{name}_per_server_GBps"] = rate
        out[f"{name}_bottleneck"] = p.bottleneck
        out[f"{name}_method"] = p.method
    return out


def link_rate_Bps(r: FabricRates) -> float:
    """The link rate a ring's busbw cannot exceed on a sub-cluster (raw capacities, B/s).

    One server: the NVLink of one GPU per direction. Across servers: the smaller of the
    server's NICs in use (a ring crosses each server boundary once per channel) and NVLink x
    G/(G-1) (the ring's hops inside a server). nccl-tests' busbw is defined so that a ring
    reaches at most this (``doc/PERFORMANCE.md``); other algorithms move fewer bytes per link.
    """
    if r.nodes == 1:
        return r.nvlink_Bps
    net = r.nics_per_node * r.nic_Bps
    if r.gpus_per_node > 1 and r.nvlink_Bps > 0:
        return min(net, r.nvlink_Bps * r.gpus_per_node / (r.gpus_per_node - 1))
    return net


_WHY = {
    "nvls": "NVLS: the NVSwitch reduces (NVLink SHARP), so each GPU sends and receives its data "
    "about once, not the 2(n-1)/n times busbw counts",
    "nvls_tree": "NVLS-tree: the NVSwitch reduces inside each server and a tree joins the "
    "servers, so a link carries fewer bytes than busbw's 2(n-1)/n",
    "tree": "tree: each byte crosses the network once each way per tree, not the 2(n-1)/n "
    "times busbw counts",
}


def busbw_note(busbw_Bps: float, algorithm: str, r: FabricRates) -> str:
    """Why a predicted busbw exceeds the link rate (:func:`link_rate_Bps`), or ``""``.

    Parameters
    ----------
    busbw_Bps : float
        Predicted busbw (B/s).
    algorithm : str
        The tuner's algorithm (``nvls``, ``nvls_tree``, ``tree``, ...).
    r : FabricRates
        The sub-cluster.

    Returns
    -------
    str
        A sentence naming the link rate exceeded and the algorithm's reason, both rates
        printed with the fewest decimals (0 to 2) at which they differ; empty when busbw is
        within the link rate, equal to it at 2 decimals, or the algorithm has no such reason.
    """
    link = link_rate_Bps(r)
    if link <= 0 or busbw_Bps <= link * (1 + 1e-9) or algorithm not in _WHY:
        return ""
    # The fewest decimals (up to the table's 2) at which the two rates read differently:
    # "229 GB/s exceeds 229 GB/s" is no statement; equal at 2 decimals, no note.
    shown = Bps_to_GBps(busbw_Bps), Bps_to_GBps(link)
    digits = next((d for d in range(3) if f"{shown[0]:.{d}f}" != f"{shown[1]:.{d}f}"), None)
    if digits is None:
        return ""
    what = "NVLink" if r.nodes == 1 else "link"
    return (
        f"busbw {shown[0]:.{digits}f} GB/s exceeds the {what} rate "
        f"{shown[1]:.{digits}f} GB/s and is not a fault: {_WHY[algorithm]}"
    )


def predict_row(
    op: str,
    size_bytes: int,
    count: int,
    dtype: str,
    rates: FabricRates,
    c: NcclConstants,
    restriction: TunerRestriction | None = None,
) -> Row:
    """The predicted row for one size: the tuner's choice in nccl-tests' columns, its expected
    time (:func:`topo.collective.expected.expected`) and its ceiling.

    ``size_bytes`` is nccl-tests' size (B), ``count`` its element count (printed as given);
    the row's time is in µs and its bandwidths in GB/s (see :class:`Row`). The choice is the
    first of :func:`topo.collective.choice.ranked_candidates` under ``restriction`` (NCCL_ALGO,
    NCCL_PROTO; default none), which raises TopoError when it leaves nothing.
    """
    ranked = ranked_candidates(op, size_bytes, rates, c, restriction)
    best = ranked[0]
    exps = [expected(op, k, size_bytes, rates, c) for k in ranked]
    ex = exps[0]
    factor = busbw_factor(op, rates.gpus)
    algbw = size_bytes / ex.time_s
    ceiling = size_bytes / best.time_s
    return Row(
        size_bytes=size_bytes,
        count=count,
        type=dtype,
        redop="sum" if op in ("all_reduce", "reduce_scatter", "reduce") else "none",
        root=0 if op in ("broadcast", "reduce") else -1,
        time_us=s_to_us(ex.time_s),
        algbw_GBps=Bps_to_GBps(algbw),
        busbw_GBps=Bps_to_GBps(algbw * factor),
        algorithm=best.algorithm,
        protocol=best.protocol,
        latency_us=s_to_us(best.latency_s),
        bound=best.bound,
        busbw_note=busbw_note(algbw * factor, best.algorithm, rates),
        candidates=[
            candidate_record(k, op, size_bytes, rates.gpus, chosen=i == 0, expected_s=e.time_s)
            for i, (k, e) in enumerate(zip(ranked, exps, strict=True))
        ],
        ceiling_time_us=s_to_us(best.time_s),
        ceiling_algbw_GBps=Bps_to_GBps(ceiling),
        ceiling_busbw_GBps=Bps_to_GBps(ceiling * factor),
        binds=ex.binds,
        binds_detail=ex.binds_detail,
        fitted=size_bytes >= FITTED_FROM_BYTES,
        expected={
            "launch_us": s_to_us(ex.launch_s),
            "latency_us": s_to_us(ex.latency_s),
            "bandwidth_us": s_to_us(ex.bandwidth_s),
            "messages": ex.messages,
            "message_bytes": ex.message_bytes,
            "channels": ex.channels,
        },
    )


def predict_rows(
    op: str,
    rows: Sequence[NcclTestRow],
    rates: FabricRates,
    c: NcclConstants,
    restriction: TunerRestriction | None = None,
) -> list[Row]:
    """:func:`predict_row` of each measured row, in order: one per (size, count, type), the
    rows that repeat them (nccl-tests ``-N``, ``-d all -o all``, runs appended) sharing it (the
    same object: copy a row's ``candidates`` before changing them).

    Parameters
    ----------
    op : str
    rows : sequence of NcclTestRow
        A measured test's rows (their ``size_bytes`` in B, ``count``, ``type``).
    rates, c, restriction
        As :func:`predict_row`.

    Returns
    -------
    list of Row
        As many as ``rows`` (times in µs, bandwidths in GB/s).

    Raises
    ------
    TopoError
        As :func:`predict_row`.
    """
    once: dict[tuple[int, int, str], Row] = {}
    for m in rows:
        key = (m.size_bytes, m.count, m.type)
        if key not in once:
            once[key] = predict_row(op, m.size_bytes, m.count, m.type, rates, c, restriction)
    return [once[(m.size_bytes, m.count, m.type)] for m in rows]
