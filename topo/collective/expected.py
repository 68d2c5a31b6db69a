"""The expected time of a collective: how NCCL moves the data, message by message.

:mod:`topo.collective.model` gives, for each (algorithm, protocol), NCCL's tuner cost on the
fabric's rates: ``latency + size / algbw``. That is a **ceiling**: the rate the fabric allows
NCCL, with NCCL's own latency table, which is made for ranking algorithms, not for timing them.
Between 1 MiB and 512 MiB real runs sit well under it. This module gives the **expected** time
of the candidate NCCL's tuner picks, from the way NCCL 2.29 moves the data (NVIDIA/nccl
v2.29.2-1):

- Every algorithm runs on ``nch`` channels, each moving its data as **messages**: a ring step
  moves one chunk per channel, cut into slices (Simple: ``SlicePerChunk`` = 2 slices a step,
  ``src/device/prims_simple.h``; LL and LL128: 1); a tree, NVLS or NVLS-tree channel moves the
  buffer in chunks whose size ``calcCollChunking`` (``src/enqueue.cc``) sets from the
  operation's bytes; a send/recv moves parts of ``NCCL_P2P_*_CHUNKSIZE``.
- A message crosses a hop in ``o + s / r_ch``: a fixed cost ``o`` (across the network: the GPU
  posting the slot, the proxy thread seeing it and posting the RDMA write, the receiving proxy
  seeing the completion and flushing, the flag reaching the receiving GPU,
  ``net_message_us``; over NVLink: the flag and the thread block's barrier,
  ``nvlink_message_us``; an NVLS step: a multimem reduce or broadcast through the NVSwitch,
  ``nvls_message_us_per_gpu`` per GPU of the domain) plus its bytes at one channel's copy
  rate ``r_ch`` (one NVLink's worth, NCCL's ``ncclTopoNVLinkBw``, as the ceiling assumes);
  or in ``s / r_share``, its bytes at the channel's share of the binding link, when that is
  slower: the fixed cost then hides behind the other channels sharing the link. ``r_share``
  is the ceiling's bandwidth split over the channels' messages, so oversubscription, failed
  links and NIC counts enter as in the ceiling.
- The first message of a channel crosses every hop of its path; the rest follow at the
  channel's share: ``time = launch + depth + size / algbw``. A ring's path is its ``K`` steps
  (step ``k`` of a rank needs step ``k-1`` of its predecessor; across servers the network hop
  paces every step), a tree's its levels up and down, NVLS's its reduce and broadcast,
  NVLS-tree's both, a send/recv's one hop. alltoall adds a setup cost per round of
  ``NCCL_MAX_DEV_WORK_P2P_PER_BATCH`` peers across servers (``p2p_round_us``).
- Every operation pays ``launch_us`` once (the kernel launch and the host's enqueue, as
  nccl-tests times them), and ``net_launch_us`` more when it crosses the network (the proxy
  picking the operation up).
- An NVLS or NVLS-tree channel gives at most ``nvls_channel_GBps`` of bus bandwidth
  (``nvls_channel_GBps_blackwell`` on Blackwell): the data each GPU exchanges with the domain's
  other ``G - 1``, ``(G - 1) / G`` of the buffer per pass, as nccl-tests' busbw counts it;
  all_reduce takes two passes (a multimem reduce, then a broadcast), all_gather and
  reduce_scatter one. The algbw cap is ``channels x rate / passes x G / (G - 1)``. NCCL's
  NVLS channel counts are ``src/transport/nvls.cc``'s; NVLS-tree's network legs go through
  the domain's NVLS heads only, at most ``nvls_tree_heads`` NICs' worth.

The fixed costs and NVLS rates are **fitted** (``[expected]`` of the constants file): each
names the mechanism it stands for, and the measurements they were fitted to are listed, with
their sources, in ``topo/data/training.toml`` (:mod:`topo.collective.training`);
docs/collective.md reports the error on clusters left out of the fit. Everything else (chunk
sizes, slices, channel counts, the ceiling's rates) comes from NCCL's code or the fabric.

The expected time is never below the ceiling's: where the message model gives less (tiny sizes
on NCCL's latency table), the ceiling's time is taken and ``binds`` says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from topo.collective.channels import coll_channels, p2p_channels
from topo.collective.constants import PROTOCOLS, NcclConstants, div_up, log2i
from topo.collective.fabric_rates import FabricRates
from topo.collective.model import Candidate, Rates, p2p_channels_per_peer, p2p_op_channels
from topo.wording import binary_bytes

COST_KEYS = (
    "launch_us",
    "net_launch_us",
    "net_message_us",
    "ring_net_step_us",
    "nvlink_message_us",
    "nvls_message_us_per_gpu",
    "p2p_round_us",
)
"""The ``[expected]`` per-operation and per-message costs (µs; per protocol where a list): what
a latency scale multiplies (:mod:`topo.collective.calibrate`) and what a test zeroes to make
the expected time the ceiling's."""

RING_STEPS = {"all_reduce": 2, "all_gather": 1, "reduce_scatter": 1}
"""Ring steps per rank, as a multiple of ``n - 1`` (NCCL ``src/device/all_reduce.h``,
``all_gather.h``, ``reduce_scatter.h``: all-reduce is a reduce-scatter then an all-gather)."""


@dataclass(frozen=True)
class Expected:
    """The expected time of one (algorithm, protocol) at one size, and its parts.

    Attributes
    ----------
    time_s : float
        Expected time (s): ``launch_s + latency_s + bandwidth_s``, or the ceiling's time where
        that is larger.
    ceiling_s : float
        The ceiling's time (NCCL's tuner cost on the fabric's rates, s).
    launch_s : float
        The per-operation costs (s).
    latency_s : float
        The first message's way along the path, beyond its bytes at the channel's share,
        plus alltoall's rounds (s).
    bandwidth_s : float
        size / algbw: the bytes at the rate of ``bound`` (s).
    messages : int
        Messages a channel moves (ring: steps x slices x loops; a pipeline lane's chunks).
    message_bytes : float
        Bytes of one message (B).
    channels : int
        Channels the operation runs on.
    binds : str
        The largest part of the time: ``bandwidth`` (bytes at the rate of ``bound``),
        ``messages`` (the messages' way along the path: ``latency_s``), ``latency`` (the
        operation's launch), or ``ceiling`` (NCCL's latency table gives more than the message
        model: the ceiling's time is taken, and its own latency exceeds its bytes' time).
    binds_detail : str
        What in particular: the bound, the messages and their size, or the latency's parts.
    bound : str
        What limits the bandwidth: the ceiling's bound, or the NVLS channels where their
        fitted rate is lower.
    """

    time_s: float
    ceiling_s: float
    launch_s: float
    latency_s: float
    bandwidth_s: float
    messages: int
    message_bytes: float
    channels: int
    binds: str
    binds_detail: str
    bound: str


def _proto_factor(c: NcclConstants, protocol: str) -> float:
    """NCCL's protocol bandwidth factor (tuning.cc): LL 0.5, LL128 0.92, Simple 1."""
    if protocol == "LL":
        return c.factor("ring_ll_factor")
    if protocol == "LL128":
        return c.factor("ring_ll128_factor")
    return 1.0


def _ex(c: NcclConstants, key: str) -> float:
    return float(c.data["expected"][key])


def _per_proto(c: NcclConstants, key: str, protocol: str) -> float:
    return float(c.data["expected"][key][PROTOCOLS.index(protocol)])


def _chunk(c: NcclConstants, key: str, protocol: str) -> float:
    return float(c.data["expected"]["chunk"][key][PROTOCOLS.index(protocol)])


def _message_s(c: NcclConstants, protocol: str, network: bool) -> float:
    """The fixed cost of one message (s): across the network, or over NVLink."""
    if network:
        return _per_proto(c, "net_message_us", protocol) * 1e-6
    return _ex(c, "nvlink_message_us") * 1e-6


def _hop_s(o: float, s: float, r_ch: float, r_share: float) -> float:
    """One message's time across one hop (s): its fixed cost ``o`` plus its bytes at one
    channel's copy rate ``r_ch``, or its bytes at the channel's share ``r_share`` of the
    binding link when that is slower (the fixed cost then hides behind the channels that
    share the link)."""
    return max(o + s / r_ch, s / r_share)


def _ring(op: str, cand: Candidate, S: float, R: Rates) -> tuple[float, float, int, float, int]:
    """(latency, bandwidth time, messages, message bytes, channels) of a ring.

    A step of rank ``r`` needs step ``k-1`` of its predecessor: the first loop's ``K`` steps
    are a chain of hops, each taking :func:`_hop_s` for a message (the slowest hop, across
    the network when the ring leaves the server, paces every step); later loops and slices
    follow at the channel's share of the link. So ``K x (hop - s / r_share) + size / algbw``.
    broadcast and reduce are a chain from the root instead: the first chunk crosses ``n - N``
    NVLink hops and ``N - 1`` network hops one after another, the others follow at the share.
    """
    c, n, N = R.c, R.n, R.N
    p = cand.protocol
    nch = coll_channels(R.r, c) if N > 1 else c.channels
    slices = int(c.data["expected"]["ring_slices"][PROTOCOLS.index(p)])
    steps = RING_STEPS.get(op, 1) * (n - 1)
    chunk = _chunk(c, "ring", p)
    loops = max(1, div_up(S, nch * n * chunk))
    s = S / (loops * nch * n * slices)
    M = steps * loops * slices
    chain = op in ("broadcast", "reduce")
    if chain:  # a chain of n-1 hops moving S / nch per channel: a pipeline
        M = max(1, div_up(S, nch * chunk)) * slices
        s = S / (M * nch)
        steps = n - 1
    t_bw = S / cand.algbw_Bps
    r_share = M * s / t_bw
    r_ch = _channel_Bps(c, p, N > 1)
    if chain:  # the first chunk crosses n - N NVLink hops and N - 1 network hops, one by one
        o_hop = _per_proto(c, "ring_net_step_us", p) * 1e-6
        net_hop = _hop_s(o_hop, s, r_ch, r_share)
        o_nvl = _message_s(c, p, False)
        r_nvl = _channel_Bps(c, p, False)
        # across servers the NICs bind and an NVLink hop goes at a channel's copy rate
        nvl_hop = o_nvl + s / r_nvl if N > 1 else _hop_s(o_nvl, s, r_nvl, r_share)
        fill = (n - N) * nvl_hop + (N - 1) * net_hop
        return fill - s / r_share, t_bw, M, s, nch
    if N > 1:
        # the step waits for the slowest of its N network hops: for hop delays drawn
        # independently from an exponential distribution of mean o, the expected maximum is
        # o x H_N (the N-th harmonic number)
        o = _per_proto(c, "ring_net_step_us", p) * 1e-6 * harmonic(N)
    else:
        o = _message_s(c, p, False)
    hop = _hop_s(o, s, r_ch, r_share)
    return steps * (hop - s / r_share), t_bw, M, s, nch


def harmonic(N: int) -> float:
    """The N-th harmonic number ``1 + 1/2 + ... + 1/N``: the expected maximum of N
    independent exponential delays of mean 1.

    Examples
    --------
    >>> harmonic(1), harmonic(2), round(harmonic(10), 4)
    (1.0, 1.5, 2.929)
    """
    return sum(1.0 / k for k in range(1, N + 1))


def _channel_Bps(c: NcclConstants, protocol: str, network: bool) -> float:
    """How fast a message's bytes hold up its hop (B/s). Across the network every protocol
    stores and forwards: the proxy posts a step once the GPU has written it, copied at one
    channel's rate (one NVLink's, NCCL's ``ncclTopoNVLinkBw``, the ceiling's assumption),
    times the protocol's factor. Over NVLink, LL and LL128 forward each line as it arrives (a
    flag in every 8 or 128 bytes, ``src/device/prims_ll.h``, ``prims_ll128.h``): their bytes
    do not hold up a hop (infinite); Simple stores and forwards a slice."""
    if not network and protocol in ("LL", "LL128"):
        return math.inf
    return c.nvlink_link_GBps() * 1e9 * _proto_factor(c, protocol)


def _tree_chunk(c: NcclConstants, p: str, S: float, nch: int, R: Rates) -> float:
    """calcCollChunking for the tree (src/enqueue.cc): LL128 halves its chunk for small ops."""
    chunk = _chunk(c, "tree", p)
    if p == "LL128":
        ppn = R.n / R.N
        steps = 1 + log2i(R.N) + 0.1 * ppn
        while S // (nch * chunk) < steps * 64 / ppn and chunk > 131072:
            chunk //= 2
        while S // (nch * chunk) < steps * 16 / ppn and chunk > 32768:
            chunk //= 2
    return chunk


def _pipeline(
    cand: Candidate,
    S: float,
    R: Rates,
    lanes: int,
    chunk: float,
    hops: list[tuple[float, int, bool, bool]],
    rate_Bps: float | None = None,
) -> tuple[float, float, int, float]:
    """(latency, bandwidth time, messages, message bytes) of ``lanes`` pipelines (channels x
    heads) moving ``S`` in chunks through the stages ``hops``, given as (fixed cost per
    message, count, on the binding link, across the network). The first chunk crosses every
    stage (:func:`_hop_s` on the binding link, ``o + s / r_ch`` on another); the others
    follow at the lane's share of the binding link: ``sum(hops) + (M - 1) x s / r_share``,
    written as a latency plus ``size / algbw``. ``rate_Bps`` (algbw) replaces the ceiling's
    where a limit of the expected model is tighter."""
    c = R.c
    M = max(1, div_up(S, lanes * chunk))
    s = S / (M * lanes)
    t_bw = S / (rate_Bps if rate_Bps is not None else cand.algbw_Bps)
    r_share = M * s / t_bw
    depth = 0.0
    for o, k, binding, network in hops:
        r_ch = _channel_Bps(c, cand.protocol, network)
        depth += k * (_hop_s(o, s, r_ch, r_share) if binding else o + s / r_ch)
    return depth - s / r_share, t_bw, M, s


def _nvls_tree_heads_Bps(R: Rates) -> float:
    """algbw (B/s) NVLS-tree's network legs allow when only the NVLS heads' NICs carry them.

    In NVLS-tree only a *head* rank of the NVLink domain sends the domain's reduced data up
    the tree across domains and receives the result back (``src/device/all_reduce.h``,
    ``RunWorkColl<..., NCCL_ALGO_NVLS_TREE, ...>``: the reduce and broadcast warps run where
    ``nvls->headRank != -1``; ``src/graph/connect.cc`` ``connectNvls`` joins head ``h`` of
    every domain into the trees). The heads are the NVLS graph's channels, which NCCL's search
    sets and topo does not replay; ``nvls_tree_heads`` (fitted) is their effective number, so
    a domain drives at most ``min(heads, NICs)`` NICs' worth of the tree: ``heads x NIC x
    nic_efficiency / node_bytes`` (``node_bytes``: the tree pattern's bytes per byte of the
    operation at its busiest server, 1 on two domains, 2 beyond). On servers of 8 GPUs with 8
    NICs every NIC is a head's and this is the ceiling's own NIC bound; on a GB200 NVL72 rack
    (72 NICs) it is what binds."""
    r, c = R.r, R.c
    if r.tree is None or r.nic_Bps <= 0 or r.tree.node_bytes <= 0:
        return math.inf
    heads = min(_ex(c, "nvls_tree_heads"), float(r.nics_per_node))
    return heads * r.nic_Bps * c.nic_efficiency / r.tree.node_bytes


def _ceil_log2(N: int) -> int:
    return 0 if N <= 1 else (N - 1).bit_length()


def _nvls_channels(c: NcclConstants, N: int) -> int:
    """NCCL's NVLS channels (src/transport/nvls.cc ncclNvlsTuning): SM90 16; SM100 24 on one
    NVLink domain (NVLS_NCHANNELS_SM100_NVL), 32 across (NVLS_NCHANNELS_SM100)."""
    table = c.data["expected"]["nvls_channels"]
    if c.arch == "blackwell":
        return c.cap_channels(int(table["blackwell_one_node" if N == 1 else "blackwell"]))
    return c.cap_channels(int(table["hopper"]))


def _nvls_chunk(c: NcclConstants, S: float, ops: int, tree: bool, N: int) -> int:
    """calcCollChunking for NVLS and NVLS-tree (src/enqueue.cc; nvlsChunkSize 128 KiB,
    nvlsTreeMaxChunkSize 64 KiB from 4 nodes on, src/transport/nvls.cc)."""
    chunk = int(c.data["expected"]["chunk"]["nvls"])
    if tree:
        if N >= 4:
            chunk = min(chunk, int(c.data["expected"]["chunk"]["nvls_tree_max_4_nodes"]))
        for f, size in ((32, 262144), (16, 131072), (4, 65536), (1, 32768)):
            if S < f * ops * chunk and chunk > size:
                chunk = size
    else:
        for f, size in ((64, 65536), (8, 32768), (2, 16384)):
            if S < f * ops * chunk and chunk > size:
                chunk = size
    return chunk


def _p2p_chunk(c: NcclConstants, per_channel: float, network: bool, protocol: str) -> float:
    """NCCL's p2p chunk (src/enqueue.cc): NCCL_P2P_NET/NVL_CHUNKSIZE, a quarter below one
    chunk (Simple), a half below eight."""
    step = c.factor("p2p_net_chunk_bytes" if network else "p2p_nvl_chunk_bytes")
    if protocol == "Simple" and per_channel < step:
        return step / 4
    if per_channel < 8 * step:
        return step / 2
    return step


def expected(
    op: str, cand: Candidate, size_bytes: float, rates: FabricRates, c: NcclConstants
) -> Expected:
    """The expected time of one candidate of :func:`topo.collective.model.candidates`.

    Parameters
    ----------
    op : str
        One of :data:`topo.collective.model.OPS`.
    cand : Candidate
        The (algorithm, protocol) and its ceiling (``algbw_Bps``, ``time_s``) at this size.
    size_bytes : float
        nccl-tests' size (B), as for the candidate.
    rates : FabricRates
        The sub-cluster.
    c : NcclConstants
        The constants; the ``[expected]`` table holds the fitted per-message and launch costs
        (µs) and NCCL's chunk sizes (B).

    Returns
    -------
    Expected
        Times in s; ``time_s >= cand.time_s``.

    References
    ----------
    NVIDIA/nccl v2.29.2-1: ``src/enqueue.cc`` (``calcCollChunking``, ``addP2pToPlan``),
    ``src/device/prims_simple.h`` (slices), ``src/transport/nvls.cc`` (NVLS channels and
    chunks), ``src/include/collectives.h`` (chunk and slice steps). Fitted constants:
    ``topo/data/training.toml``.
    """
    R = Rates(rates, c)
    S = float(size_bytes)
    a, p = cand.algorithm, cand.protocol
    net = R.N > 1
    o_net = _message_s(c, p, True)
    o_nvl = _message_s(c, p, False)
    # an NVLS step reads (reduce) or writes (broadcast) the chunk at every GPU of the domain
    o_nvls = _ex(c, "nvls_message_us_per_gpu") * 1e-6 * R.G
    extra = 0.0
    if a == "ring":
        lat, t_bw, M, s, nch = _ring(op, cand, S, R)
    elif a == "tree":
        nch = coll_channels(rates, c)
        chunk = _tree_chunk(c, p, S, nch, R)
        hops = [(o_nvl, 2 * (R.G - 1), False, False), (o_net, 2 * _ceil_log2(R.N), True, True)]
        lat, t_bw, M, s = _pipeline(cand, S, R, nch, chunk, hops)
    elif a in ("nvls", "nvls_tree"):
        nch = _nvls_channels(c, R.N)
        lanes = nch * R.G
        chunk = _nvls_chunk(c, S, lanes, a == "nvls_tree", R.N)
        # all_reduce takes two multimem passes over each chunk (a reduce, then a
        # broadcast); all_gather one broadcast, reduce_scatter one reduce
        passes = 2 if op == "all_reduce" else 1
        hops = [(o_nvls, passes, True, False)]
        if a == "nvls_tree":
            hops.append((o_net, 2 * _ceil_log2(R.N), True, True))
        # one NVLS channel (a thread block issuing multimem loads and stores, and with
        # NVLS-tree also driving the network) gives at most so much bus bandwidth (fitted):
        # each GPU exchanges (G - 1) / G of the buffer with the others per pass
        key = "nvls_channel_GBps_blackwell" if c.arch == "blackwell" else "nvls_channel_GBps"
        cap = nch * _ex(c, key) * 1e9 / passes * R.G / (R.G - 1)
        if a == "nvls_tree":
            cap = min(cap, _nvls_tree_heads_Bps(R))
        lat, t_bw, M, s = _pipeline(cand, S, R, lanes, chunk, hops, min(cand.algbw_Bps, cap))
    elif a == "pairwise":
        lat, t_bw, M, s, nch, extra = _pairwise(cand, S, R)
    elif a == "p2p":
        nch = p2p_op_channels(R, S)
        chunk = _p2p_chunk(c, S / nch, net, p)
        hop = (o_net if net else o_nvl, 1, True, net)
        lat, t_bw, M, s = _pipeline(cand, S, R, nch, chunk, [hop])
    else:  # PAT: the ceiling's own latency model
        nch, M, s = coll_channels(rates, c), 1, S
        lat, t_bw = cand.latency_s, S / cand.algbw_Bps
    fill = max(0.0, lat) + extra
    launch = _ex(c, "launch_us") * 1e-6
    if net:
        launch += _ex(c, "net_launch_us") * 1e-6
    total = launch + fill + t_bw
    bound = cand.bound
    if t_bw > S / cand.algbw_Bps * (1 + 1e-9):
        bound = f"{nch} NVLS channels"
    if total < cand.time_s:
        # the ceiling's time is taken, with its own parts: NCCL's latency and the bytes
        total, launch, fill = cand.time_s, 0.0, cand.latency_s
        t_bw = S / cand.algbw_Bps
        bound = cand.bound
        if t_bw >= fill:
            binds, detail = "bandwidth", bound
        else:
            binds, detail = "ceiling", "NCCL's latency table exceeds the message model"
    elif t_bw >= launch + fill:
        binds, detail = "bandwidth", bound
    elif fill >= launch:
        size = binary_bytes(s) if s >= 1 else "under 1 B (more lanes than bytes)"
        binds, detail = "messages", f"{size} messages through {_depth_word(a)}"
    else:
        binds, detail = "latency", "the operation's launch"
    return Expected(
        time_s=total,
        ceiling_s=cand.time_s,
        launch_s=launch,
        latency_s=fill,
        bandwidth_s=t_bw,
        messages=int(M),
        message_bytes=float(s),
        channels=int(nch),
        binds=binds,
        binds_detail=detail,
        bound=bound,
    )


def _pairwise(cand: Candidate, S: float, R: Rates) -> tuple[float, float, int, float, int, float]:
    """alltoall as NCCL runs it: n-1 sends and receives of S/n, each split over the per-peer
    channels in parts of NCCL's p2p chunk, the parts of all peers spread over the p2p channels
    (src/enqueue.cc addP2pToPlan; src/graph/paths.cc); across servers the peers are served in
    rounds of NCCL_MAX_DEV_WORK_P2P_PER_BATCH, each with a fitted setup cost.
    (latency, bandwidth time, messages, message bytes, channels, rounds' cost)."""
    c, n, N = R.c, R.n, R.N
    net = N > 1
    k = p2p_channels_per_peer(R)
    total = p2p_channels(R.r, c)
    per_peer = S / n
    chunk = _p2p_chunk(c, per_peer / k, net, cand.protocol)
    parts = max(1, div_up(per_peer / k, chunk))
    s = per_peer / (k * parts)
    M = max(1, div_up((n - 1) * k * parts, total))
    t_bw = S / cand.algbw_Bps
    r_share = M * s / t_bw
    r_ch = _channel_Bps(c, cand.protocol, net)
    hop = _hop_s(_message_s(c, cand.protocol, net), s, r_ch, r_share)
    rounds = div_up(n - 1, c.factor("p2p_per_batch")) if net else 0
    return hop - s / r_share, t_bw, M, s, total, rounds * _ex(c, "p2p_round_us") * 1e-6


def _depth_word(algorithm: str) -> str:
    """How the messages line up, for ``binds_detail``."""
    return {
        "ring": "the ring's steps",
        "pairwise": "the peers' rounds",
        "p2p": "one hop",
    }.get(algorithm, "the pipeline's stages")


__all__ = ["Expected", "expected"]
