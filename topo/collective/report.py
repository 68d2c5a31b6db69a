"""The nccl-tests table a fabric allows, and how a measured log compares with it.

:func:`collective_table` sweeps sizes as nccl-tests does (``-b``, ``-e``, ``-f``) and returns
one row per size with the tuner's choice and every candidate it weighed (restricted as NCCL_ALGO
and NCCL_PROTO restrict it, when given); :func:`compare_log` predicts each row of a real
nccl-tests test and gives measured / predicted busbw; :func:`fit_alpha_beta` fits
``time = alpha + factor * size / beta`` to a measured table by least squares (numpy).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from topo.collective.choice import (
    TunerRestriction,
    candidate_record,
    ranked_candidates,
    tuner_restriction,
)
from topo.collective.constants import NcclConstants, load_constants
from topo.collective.expected import expected
from topo.collective.fabric_rates import FabricRates, fabric_rates, gpu_arch
from topo.collective.model import OPS, TOTAL_SIZE_OPS, busbw_factor
from topo.errors import TopoError
from topo.formats.nccl_tests_records import NcclTest
from topo.units import Bps_to_GBps, s_to_us

TYPE_BYTES = {
    "int8": 1,
    "uint8": 1,
    "half": 2,
    "bfloat16": 2,
    "float": 4,
    "int32": 4,
    "uint32": 4,
    "double": 8,
    "int64": 8,
    "uint64": 8,
}
"""nccl-tests' data types and their sizes (B)."""

GIB = 1 << 30
MIB = 1 << 20
FAR_BELOW = 0.5
"""Measured / expected busbw under this is reported as far below what the fabric should give."""
AGREES = 0.85
"""Measured / expected busbw from this to 1/AGREES is reported as agreeing with the model."""


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


@dataclass(frozen=True)
class CollectiveReport:
    """A predicted nccl-tests table (see :func:`collective_table`).

    ``algo`` and ``proto`` are the NCCL_ALGO and NCCL_PROTO lists the tuner's choice was
    restricted to, as given; None when not given, or for alltoall and sendrecv, which neither
    governs.
    """

    op: str
    fabric: str
    gpus: int
    nodes: int
    gpus_per_node: int
    nccl_release: str
    constants: str
    rates: dict[str, Any]
    rows: list[Row]
    algo: str | None = None
    proto: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; ``rows`` is a list of objects with nccl-tests' columns."""
        return asdict(self)


def fabric_constants(G: nx.Graph, c: NcclConstants | None = None) -> NcclConstants:
    """The constants ``c`` (default :func:`load_constants`) for the GPU generation the fabric
    records (:func:`topo.collective.fabric_rates.gpu_arch`), else as they are (the file's
    generation, hopper).

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
    return c.with_arch(arch) if arch is not None and arch != c.arch else c


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


def _count(op: str, size: int, n: int, elt: int) -> int:
    # nccl-tests (src/*.cu, *GetCollByteCount): per-rank chunks of the total-size ops are
    # rounded down to 16-byte multiples; the others keep size // element.
    if op in TOTAL_SIZE_OPS:
        align = max(1, 16 // elt)
        return ((size // elt) // n) // align * align
    return size // elt


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
        expected={
            "launch_us": s_to_us(ex.launch_s),
            "latency_us": s_to_us(ex.latency_s),
            "bandwidth_us": s_to_us(ex.bandwidth_s),
            "messages": ex.messages,
            "message_bytes": ex.message_bytes,
            "channels": ex.channels,
        },
    )


def collective_table(
    G: nx.Graph,
    op: str,
    *,
    gpus: int | None = None,
    gpus_per_node: int | None = None,
    min_bytes: int = 8,
    max_bytes: int = 8 * GIB,
    step_factor: int = 2,
    dtype: str = "float",
    constants: NcclConstants | None = None,
    algo: str | None = None,
    proto: str | None = None,
    rates: FabricRates | None = None,
) -> CollectiveReport:
    """Predict nccl-tests' table for ``op`` on a fabric, size by size.

    Parameters
    ----------
    G : networkx.Graph
        A fabric with GPUs (schema in :mod:`topo.fabric`).
    op : str
        One of :data:`topo.collective.model.OPS`.
    gpus, gpus_per_node : int, optional
        Ranks N and ranks per server G: the first N/G servers (default: every GPU).
    min_bytes, max_bytes : int
        Sweep limits (B), as nccl-tests' ``-b`` / ``-e``.
    step_factor : int
        Multiply the size by this each step (``-f``), >= 2.
    dtype : str
        nccl-tests data type (sizes are rounded to whole elements, 16-byte aligned, and for
        all_gather, reduce_scatter and alltoall to n chunks, as nccl-tests does).
    constants : NcclConstants, optional
        Default: :func:`fabric_constants` (the file's, for the fabric's GPU generation).
    algo, proto : str, optional
        Restrict the tuner's choice as NCCL_ALGO and NCCL_PROTO do (e.g. ``"ring"``,
        ``"^tree"``, ``"Simple"``; :func:`topo.collective.choice.tuner_restriction`); they do
        not govern alltoall and sendrecv (NCCL's send/recv ignores them).
    rates : FabricRates, optional
        ``fabric_rates(G, gpus, gpus_per_node)`` computed once for several ops (the
        sub-cluster's flow problems are the costly part on a large fabric); ``gpus`` and
        ``gpus_per_node`` are then those it was computed for. Default: computed here.

    Returns
    -------
    CollectiveReport
        One :class:`Row` per size (sizes rounding to zero elements are skipped), each with
        every candidate the tuner weighed (``candidates``).

    Raises
    ------
    TopoError
        Unknown op or type; min > max; sizes < 1; step factor < 2; no size that holds one
        element (an empty table); an ``algo`` or ``proto`` NCCL would refuse, or one that
        leaves no candidate for the op; see also
        :func:`topo.collective.fabric_rates.fabric_rates`.

    Examples
    --------
    >>> from topo.builders import build
    >>> G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    >>> rep = collective_table(G, "all_gather", min_bytes=1 << 30, max_bytes=1 << 30)
    >>> rep.rows[0].algorithm, rep.rows[0].protocol
    ('ring', 'Simple')
    """
    if op not in OPS:
        raise TopoError(f"op must be one of {', '.join(OPS)}, got {op!r}", param="op")
    if dtype not in TYPE_BYTES:
        raise TopoError(f"unknown data type {dtype!r}; one of {', '.join(TYPE_BYTES)}")
    if min_bytes < 1 or max_bytes < 1:
        raise TopoError(
            f"min_bytes and max_bytes must be >= 1, got {min_bytes}, {max_bytes}",
            param="min_bytes" if min_bytes < 1 else "max_bytes",
            names=("min_bytes", "max_bytes"),
        )
    if min_bytes > max_bytes:
        raise TopoError(
            f"min_bytes {min_bytes:,} exceeds max_bytes {max_bytes:,}",
            param="min_bytes",
            names=("min_bytes", "max_bytes"),
        )
    if step_factor < 2:
        raise TopoError(f"step_factor must be >= 2, got {step_factor}", param="step_factor")
    restriction = tuner_restriction(algo, proto)
    c = constants or fabric_constants(G)
    if rates is None:
        rates = fabric_rates(G, gpus, gpus_per_node)
    elt = TYPE_BYTES[dtype]
    rows = []
    size = min_bytes
    while size <= max_bytes:
        count = _count(op, size, rates.gpus, elt)
        if count > 0:
            eff = count * elt * (rates.gpus if op in TOTAL_SIZE_OPS else 1)
            rows.append(predict_row(op, eff, count, dtype, rates, c, restriction))
        size *= step_factor
    if not rows:
        raise TopoError(
            f"no size from min_bytes {min_bytes:,} to max_bytes {max_bytes:,} holds one "
            f"{dtype} ({elt} B) for {op} on {rates.gpus} ranks: every size rounds to zero "
            "elements; raise max_bytes",
            param="max_bytes",
            names=("min_bytes", "max_bytes", "max_bytes"),
        )
    return CollectiveReport(
        op=op,
        fabric=rates.fabric,
        gpus=rates.gpus,
        nodes=rates.nodes,
        gpus_per_node=rates.gpus_per_node,
        nccl_release=c.release,
        constants=c.origin,
        rates=rates_summary(rates, c),
        rows=rows,
        algo=algo if restriction.governs(op) else None,
        proto=proto if restriction.governs(op) else None,
    )


# ----------------------------------------------------------------------------- compare


@dataclass(frozen=True)
class CompareRow:
    """Measured against predicted, one size (bandwidths GB/s, times µs).

    ``predicted_*`` are the expected values (:class:`Row`'s ``time_us``, ``busbw_GBps``) and
    ``ratio`` = measured / expected busbw; ``ceiling_busbw_GBps`` is the ceiling and
    ``ceiling_ratio`` = measured / ceiling busbw; ``binds`` and ``candidates`` are the
    predicted row's."""

    size_bytes: int
    measured_time_us: float
    predicted_time_us: float
    measured_busbw_GBps: float
    predicted_busbw_GBps: float
    ratio: float
    algorithm: str
    protocol: str
    bound: str
    busbw_note: str = ""
    candidates: list[dict[str, Any]] = field(default_factory=list)
    ceiling_busbw_GBps: float = math.nan
    ceiling_ratio: float = math.nan
    binds: str = ""


@dataclass(frozen=True)
class Fit:
    """Least-squares fit of ``time = alpha + factor * size / beta`` (see :func:`fit_alpha_beta`).

    Attributes
    ----------
    alpha_us : float
        Fitted latency (µs).
    busbw_GBps : float
        Fitted beta: the bus bandwidth the sizes tend to (GB/s).
    residual : float
        RMS of the relative time residuals (fraction; 0.02 = 2%).
    points : int
        Sizes fitted.
    """

    alpha_us: float
    busbw_GBps: float
    residual: float
    points: int


@dataclass(frozen=True)
class Comparison:
    """A measured nccl-tests test against the model (see :func:`compare_log`).

    Attributes
    ----------
    op : str
        The test's operation.
    gpus, nodes, gpus_per_node : int
        The sub-cluster the model ran on.
    nccl_version : str
        The log's NCCL library version (e.g. ``22902``), empty when not printed.
    rows : list of CompareRow
        Measured against predicted, per size.
    median_ratio : float
        Median measured / predicted busbw over ``ratio_sizes`` (dimensionless).
    ratio_sizes : str
        ``1 GiB and more``, or ``every size`` when the log has none that large.
    verdict : str
        The plain verdict on ``median_ratio``.
    far_below : bool
        ``median_ratio`` under :data:`FAR_BELOW` (not set for sendrecv, whose model is an
        upper bound).
    fit : Fit or None
        With ``fit=True``: alpha and beta of the measured times.
    model_latency_us : float or None
        With ``fit=True``: the model's latency at the log's largest size (µs).
    rates : dict
        :func:`rates_summary` of the sub-cluster (GB/s).
    algo, proto : str or None
        NCCL_ALGO and NCCL_PROTO as given, when they govern the op (as
        :class:`CollectiveReport`).
    bands : list of dict
        A verdict per size band the log reaches (small, mid, large: :func:`size_bands`).
    """

    op: str
    gpus: int
    nodes: int
    gpus_per_node: int
    nccl_version: str
    rows: list[CompareRow]
    median_ratio: float
    ratio_sizes: str
    verdict: str
    far_below: bool
    fit: Fit | None = None
    model_latency_us: float | None = None
    rates: dict[str, Any] = field(default_factory=dict)
    algo: str | None = None
    proto: str | None = None
    bands: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return asdict(self)


def fit_alpha_beta(sizes: list[float], times_us: list[float], factor: float) -> Fit:
    """Fit ``time = alpha + factor * size / beta`` to measured times: least squares of the
    relative errors (each row weighted by ``1 / time``, so a 32 MiB row counts as much as a
    16 GiB one, and ``residual`` is what is minimised), with ``alpha >= 0`` and ``1/beta >= 0``.

    Parameters
    ----------
    sizes : list of float
        nccl-tests sizes (B).
    times_us : list of float
        Measured times (µs).
    factor : float
        nccl-tests' busbw factor of the op and rank count, so that beta is a bus bandwidth.

    Returns
    -------
    Fit

    Raises
    ------
    TopoError
        Fewer than two sizes, a time that is not a positive finite number of µs, or times
        that do not grow with size (no positive beta).

    References
    ----------
    R. Hockney, Parallel Computing 20(3), 1994 (the alpha-beta model); C. Lawson and R. Hanson,
    *Solving Least Squares Problems*, 1974, ch. 23 (non-negative least squares,
    ``scipy.optimize.nnls``). Unconstrained, the large sizes' scatter can drive ``alpha``
    below 0 (a negative latency), which no link has.

    Examples
    --------
    >>> f = fit_alpha_beta([1e6, 2e6, 4e6], [20.0, 30.0, 50.0], 1.0)
    >>> round(f.alpha_us, 6), round(f.busbw_GBps, 6)
    (10.0, 100.0)
    """
    if len(sizes) < 2 or len(set(sizes)) < 2:
        raise TopoError("fit needs at least two different sizes in the log", names=("fit",))
    x = np.asarray(sizes, dtype=float) * factor
    t = np.asarray(times_us, dtype=float) * 1e-6
    if not (np.isfinite(t).all() and (t > 0).all()):
        raise TopoError("fit: every measured time must be a positive number of µs", names=("fit",))
    A = np.column_stack([np.ones_like(x), x])
    scale = np.array([1.0, 1.0 / x.max()])  # columns of like size for the solver
    from scipy.optimize import nnls  # here: scipy.optimize costs every command 0.5 s

    coef, _ = nnls(A * scale / t[:, None], np.ones_like(t))
    alpha, inv_beta = coef * scale
    if not inv_beta > 0:
        raise TopoError(
            "fit: the measured times do not grow with size; no bandwidth to fit", names=("fit",)
        )
    resid = (A @ np.array([alpha, inv_beta]) - t) / t
    return Fit(
        alpha_us=s_to_us(float(alpha)),
        busbw_GBps=Bps_to_GBps(1.0 / float(inv_beta)),
        residual=float(np.sqrt(np.mean(resid**2))),
        points=len(sizes),
    )


def _verdict(op: str, median: float, which: str) -> tuple[str, bool]:
    """The plain verdict on a median measured / predicted busbw, and whether it is far below."""
    pct = f"{median * 100:.0f}%"
    if op == "sendrecv" and median < AGREES:
        # The model's sendrecv is NCCL's channels per peer, each at most one NVLink or NCCL's
        # 14 GB/s network budget (model.p2p_op_channels): a ceiling, which one pair's
        # placement, the NICs it lands on and its peers' traffic keep many healthy runs below,
        # so a low ratio alone is not called a fault.
        return (
            f"below the model: {pct} of the expected busbw at {which}; for sendrecv the "
            "model is the ceiling of NCCL's channels per peer (each at most one NVLink, or "
            "14 GB/s across servers: NCCL_P2P_PER_CHANNEL_NET_BW), which one pair may not "
            "reach on a healthy fabric; check the pair's NICs and NCCL_NCHANNELS_PER_NET_PEER",
            False,
        )
    if median < FAR_BELOW:
        return (
            f"FAR BELOW the model: at {which} the measurement reaches only {pct} of the busbw "
            "expected on this fabric; look for a slow or misconfigured node, NIC, cable or switch "
            "port on this path (this is not what the hardware can do)",
            True,
        )
    if median < AGREES:
        return (f"below the model: {pct} of the expected busbw at {which}", False)
    if median <= 1 / AGREES:
        return (f"agrees with the model: {pct} of the expected busbw at {which}", False)
    return (
        f"above the model: {pct} of the expected busbw at {which}; the model is pessimistic "
        "here (check that the fabric file is the cluster measured, then the constants; under 1 MiB "
        "the expected curve is not fitted: docs/collective.md)",
        False,
    )


def compare_log(
    G: nx.Graph,
    test: NcclTest,
    *,
    gpus: int | None = None,
    gpus_per_node: int | None = None,
    constants: NcclConstants | None = None,
    fit: bool = False,
    algo: str | None = None,
    proto: str | None = None,
) -> Comparison:
    """Predict each size of a measured nccl-tests test and compare busbw.

    Parameters
    ----------
    G : networkx.Graph
        The fabric the test ran on (or a design of it).
    test : NcclTest
        One test of :func:`topo.formats.nccl_tests.read_nccl_tests`.
    gpus, gpus_per_node : int, optional
        Default: the ranks and ranks per host listed in the log.
    constants : NcclConstants, optional
        Default: :func:`fabric_constants` (the file's, for the fabric's GPU generation).
    fit : bool
        Also fit alpha and beta to the measured out-of-place times.
    algo, proto : str, optional
        Predict under NCCL_ALGO / NCCL_PROTO, as :func:`collective_table` (e.g. the values the
        measured run was given).

    Returns
    -------
    Comparison
        ``ratio`` = measured / expected busbw per size (and ``ceiling_ratio`` against the
        ceiling); ``median_ratio`` over the sizes of 1 GiB and more (all sizes when none is
        that large), with a plain verdict, and a verdict per size band (``bands``);
        ``far_below`` when any median is under :data:`FAR_BELOW`.

    Raises
    ------
    TopoError
        The test's op is not one topo models; ranks unknown (no ``Rank`` lines and no
        ``gpus``); see :func:`collective_table`.
    """
    if test.op not in OPS:
        raise TopoError(f"the log's test {test.op}_perf is not one of {', '.join(OPS)}")
    restriction = tuner_restriction(algo, proto)
    n = gpus if gpus is not None else test.ranks
    g = gpus_per_node if gpus_per_node is not None else test.gpus_per_node
    if n is None:
        raise TopoError(f"the log lists no ranks for {test.op}_perf: give gpus", param="gpus")
    c = constants or fabric_constants(G)
    rates = fabric_rates(G, n, g)
    # nccl-tests prints rows of 0 bytes where -b is under ranks x a word (all_gather,
    # reduce_scatter, alltoall): nothing moves, nothing to compare
    measured = [m for m in test.rows if m.size_bytes > 0]
    if not measured:
        raise TopoError(f"the log's test {test.op}_perf has no row of more than 0 bytes")
    predicted = [
        predict_row(test.op, m.size_bytes, m.count, m.type, rates, c, restriction)
        for m in measured
    ]
    rows = [
        CompareRow(
            size_bytes=m.size_bytes,
            measured_time_us=m.time_us,
            predicted_time_us=p.time_us,
            measured_busbw_GBps=m.busbw_GBps,
            predicted_busbw_GBps=p.busbw_GBps,
            # from the times (busbw = factor x size / time on both sides): the log's busbw has
            # two decimals, too few at small sizes
            ratio=p.time_us / m.time_us if m.time_us > 0 else math.inf,
            algorithm=p.algorithm,
            protocol=p.protocol,
            bound=p.bound,
            busbw_note=p.busbw_note,
            candidates=p.candidates,
            ceiling_busbw_GBps=p.ceiling_busbw_GBps,
            ceiling_ratio=p.ceiling_time_us / m.time_us if m.time_us > 0 else math.inf,
            binds=p.binds,
        )
        for m, p in zip(measured, predicted, strict=True)
    ]
    large = [r for r in rows if r.size_bytes >= GIB]
    which = "1 GiB and more" if large else "every size"
    median = float(np.median([r.ratio for r in (large or rows)]))
    verdict, far = _verdict(test.op, median, which)
    bands = size_bands(test.op, rows)
    far = far or any(b["far_below"] for b in bands)
    f = None
    model_lat = None
    if fit:
        f = fit_alpha_beta(
            [m.size_bytes for m in measured],
            [m.time_us for m in measured],
            busbw_factor(test.op, rates.gpus),
        )
        model_lat = max(predicted, key=lambda p: p.size_bytes).latency_us
    return Comparison(
        op=test.op,
        gpus=rates.gpus,
        nodes=rates.nodes,
        gpus_per_node=rates.gpus_per_node,
        nccl_version=test.nccl_version,
        rows=rows,
        median_ratio=median,
        ratio_sizes=which,
        verdict=verdict,
        far_below=far,
        fit=f,
        model_latency_us=model_lat,
        rates=rates_summary(rates, c),
        algo=algo if restriction.governs(test.op) else None,
        proto=proto if restriction.governs(test.op) else None,
        bands=bands,
    )


SIZE_BANDS = (
    ("small", 0, MIB, "under 1 MiB"),
    ("mid", MIB, GIB, "1 MiB to 512 MiB"),
    ("large", GIB, math.inf, "1 GiB and more"),
)
"""The size bands a comparison gives a verdict on: (name, from B, to B (exclusive), label).
Small sizes are set by latency, mid sizes by NCCL's per-message costs, large ones by the
fabric's bandwidth."""


def size_bands(op: str, rows: list[CompareRow]) -> list[dict[str, Any]]:
    """A verdict per size band that the rows reach (:data:`SIZE_BANDS`).

    Returns
    -------
    list of dict
        Per band with rows: ``band`` (small, mid, large), ``sizes`` (its label), ``rows``,
        ``median_ratio`` (measured / expected busbw), ``verdict`` and ``far_below``, as
        :func:`compare_log`'s overall verdict words them.
    """
    out = []
    for name, lo, hi, label in SIZE_BANDS:
        inside = [r.ratio for r in rows if lo <= r.size_bytes < hi]
        if not inside:
            continue
        median = float(np.median(inside))
        verdict, far = _verdict(op, median, label)
        out.append(
            {
                "band": name,
                "sizes": label,
                "rows": len(inside),
                "median_ratio": median,
                "verdict": verdict,
                "far_below": far,
            }
        )
    return out


# ----------------------------------------------------------------------------- plot


def _busbw_data(
    report: CollectiveReport | None, comparisons: list[Comparison]
) -> list[tuple[str, list[int], list[float]]]:
    """The curves to plot: (name, sizes in B, busbw in GB/s)."""
    curves = []
    if report is not None:
        curves.append(
            (
                f"{report.op}: model ({report.gpus} GPUs)",
                [r.size_bytes for r in report.rows],
                [r.busbw_GBps for r in report.rows],
            )
        )
    for cmp in comparisons:
        sizes = [r.size_bytes for r in cmp.rows]
        curves.append(
            (
                f"{cmp.op}: model ({cmp.gpus} GPUs)",
                sizes,
                [r.predicted_busbw_GBps for r in cmp.rows],
            )
        )
        curves.append((f"{cmp.op}: measured", sizes, [r.measured_busbw_GBps for r in cmp.rows]))
    return curves


def plot_busbw(
    report: CollectiveReport | None = None, comparisons: list[Comparison] | None = None
) -> Any:
    """busbw against size (log x): the model's curve and, with comparisons, the measured ones.

    Parameters
    ----------
    report : CollectiveReport, optional
        A predicted table (:func:`collective_table`).
    comparisons : list of Comparison, optional
        Measured tests against the model (:func:`compare_log`): two curves each.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    import plotly.graph_objects as go

    comparisons = comparisons or []
    fig = go.Figure()
    for name, x, y in _busbw_data(report, comparisons):
        measured = name.endswith("measured")
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                name=name,
                mode="markers+lines",
                line={"dash": "dot"} if measured else {},
            )
        )
    ops = [report.op] if report is not None else [c.op for c in comparisons]
    fig.update_layout(
        title=f"{', '.join(ops)}: bus bandwidth (nccl-tests busbw) against size",
        xaxis={"title": "size (B)", "type": "log"},
        yaxis={"title": "busbw (GB/s)", "rangemode": "tozero"},
        template="plotly_white",
    )
    return fig
