"""NCCL-style alpha-beta costs of collectives on a fabric, and the tuner's choice.

For each algorithm NCCL has for an operation (ring; tree: a double binary tree across servers,
a chain inside; NVLS and NVLS-tree where the servers have an NVSwitch; PAT at one GPU per
server; pairwise exchange with PXN for alltoall and send/recv) and each protocol (LL, LL128,
Simple), the time of a size-``S`` operation is

    time = latency + S / algbw

``S`` is the size nccl-tests prints (per rank for all_reduce, broadcast, reduce, sendrecv; the
whole buffer of ``n`` chunks for all_gather, reduce_scatter and alltoall). The tuner takes the
fastest (algorithm, protocol), as NCCL's ``ncclTopoGetAlgoTime`` does (NVIDIA/nccl
``src/graph/tuning.cc``), and busbw is algbw times nccl-tests' factor
(``doc/PERFORMANCE.md``: all_reduce 2(n-1)/n; all_gather, reduce_scatter, alltoall (n-1)/n;
broadcast, reduce, sendrecv 1).

The latencies, protocol factors and per-channel caps are NCCL's (see the constants file). The
bandwidths are the fabric's (:mod:`topo.collective.fabric_rates`), times NCCL's NVLink and NIC
efficiencies and capped by what a server drives over all its NICs at once:

- ring: every ring link carries the ring's bus bandwidth ``B``; across servers each server
  sends ``B`` to the next (the ring pattern's flow rate), and inside a server every GPU but the
  one whose NIC leaves forwards over NVLink: ``B (G-1)/G <= NVLink``. algbw = B n / steps with
  steps 2(n-1) (all_reduce), n-1 (all_gather, reduce_scatter), n (broadcast, reduce).
- tree (all_reduce): the double binary tree moves 2S in and out of an inner server; the flow
  rate of that pattern is the network's algbw; the chain inside moves 2S per GPU over NVLink.
  NCCL's refinements (x0.92, per-channel caps, LL /3.8, LL128 120/128) and its medium-size
  correction table apply; its x0.85 for Hopper's and Blackwell's tree pattern only in the
  tuner's view, which the choice is made on.
- NVLS (one server): with NVLink SHARP each GPU sends and receives S (n+1)/n, so algbw =
  NVLink x nvlsEfficiency x G/(G+1); NVLS-tree adds the tree across servers (no tree factors;
  in the tuner's view on Blackwell x86 hosts, NCCL 2.29's treeCorrectionFactor under 1 GiB).
- PAT (all_gather, reduce_scatter at one GPU per server): the ring's network rate x 0.75.
- alltoall: each GPU sends S/n to every rank; the per-GPU share of the fabric's all-to-all
  flow bounds the inter-server part, NVLink the rest (with PXN, traffic for another rail's NIC
  crosses NVLink first: (G-1)/G of the inter-server bytes; none with ``pxn`` off).
- sendrecv: one GPU pair per hop: the GPU's own NIC(s) across servers, NVLink inside.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from topo.collective.channels import p2p_channels, search_channels
from topo.collective.constants import PROTOCOLS, NcclConstants, div_up, log2i, pow2_up
from topo.collective.fabric_rates import FabricRates, PatternRate
from topo.errors import TopoError
from topo.formats.nccl_tests_checks import busbw_factor as nccl_tests_busbw_factor
from topo.units import GBps_to_Bps

OPS = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "alltoall",
    "broadcast",
    "reduce",
    "sendrecv",
)
"""The operations of ``topo collective --op``, named as nccl-tests' binaries (``*_perf``)."""

TOTAL_SIZE_OPS = frozenset({"all_gather", "reduce_scatter", "alltoall"})
"""Operations whose nccl-tests size column is the whole buffer (n chunks), not one rank's."""


def _check_op(op: str) -> None:
    if op not in OPS:
        raise TopoError(f"op must be one of {', '.join(OPS)}, got {op!r}", param="op")


def busbw_factor(op: str, nranks: int) -> float:
    """nccl-tests' busbw / algbw factor for ``op`` on ``nranks`` ranks.

    Parameters
    ----------
    op : str
        One of :data:`OPS`.
    nranks : int
        Ranks n >= 1.

    Returns
    -------
    float
        2(n-1)/n for all_reduce; (n-1)/n for all_gather, reduce_scatter, alltoall; 1 for
        broadcast, reduce, sendrecv (dimensionless).

    Raises
    ------
    TopoError
        Unknown op, or fewer than one rank.

    References
    ----------
    NVIDIA/nccl-tests ``doc/PERFORMANCE.md`` and ``src/*.cu`` (``GetBw``).

    Examples
    --------
    >>> busbw_factor("all_reduce", 8), busbw_factor("alltoall", 8)
    (1.75, 0.875)
    """
    _check_op(op)
    if nranks < 1:
        raise TopoError(f"a collective needs at least one rank, got {nranks}")
    factor = nccl_tests_busbw_factor(op, nranks)
    assert factor is not None  # every op of OPS is one nccl-tests knows
    return factor


@dataclass(frozen=True)
class Candidate:
    """One (algorithm, protocol) and its cost for one size.

    Attributes
    ----------
    algorithm, protocol : str
        e.g. ``ring`` / ``Simple``.
    latency_s : float
        Latency term (s).
    algbw_Bps : float
        Bandwidth on the nccl-tests size (B/s).
    time_s : float
        latency + size / algbw (s).
    bound : str
        What limits ``algbw``: ``nvlink``, ``net <tiers>`` (the fabric's binding link
        directions), ``net NICs (no LP)`` (the flow LP was too large), ``server ceiling`` (the
        node_network efficiency), ``own NIC``, a protocol ceiling or a per-channel cap.
    tuner_time_s, tuner_algbw_Bps : float
        The time (s) and bandwidth (B/s) NCCL's tuner gives it: the same latency and caps,
        without the model's own limit of one NVLink's rate per channel, which NCCL's tuner
        does not have (its bandwidths are its graph's channels times their speed), and with
        the tuner's x0.85 on Hopper's and Blackwell's tree pattern, which the ceiling does not
        take; what the choice is made on. NaN where not worked out (then ``time_s`` is used).
    """

    algorithm: str
    protocol: str
    latency_s: float
    algbw_Bps: float
    time_s: float
    bound: str
    tuner_time_s: float = math.nan
    tuner_algbw_Bps: float = math.nan

    @property
    def rank_s(self) -> float:
        """What the tuner ranks it by (s): ``tuner_time_s``, else ``time_s``."""
        return self.time_s if math.isnan(self.tuner_time_s) else self.tuner_time_s


def _hose(p: PatternRate, server_Bps: float) -> float:
    """Seconds per unit of a pattern when every server moves ``server_Bps``: its hose bound."""
    return p.demand.hose_time(server_Bps)


class Rates:
    """Efficiency-adjusted rates of a sub-cluster under a set of constants.

    Parameters
    ----------
    r : FabricRates
        The sub-cluster's raw rates (B/s).
    c : NcclConstants
        The constants (efficiencies, caps, channel counts).
    tuner : bool
        NCCL's tuner's view: without the model's one-NVLink-per-channel limit on rings and
        trees, with the tuner's x0.85 on Hopper's and Blackwell's tree pattern (what
        :attr:`Candidate.tuner_time_s` is worked out on).

    Attributes
    ----------
    n, N, G : int
        Ranks, servers, ranks per server.
    nvl : float
        NVLink per GPU as NCCL gets it (B/s).
    node_cap : float
        A server's network ceiling, ``node_network`` x its NICs (B/s).
    tuner_channels : int
        The ring graph's channels, which NCCL's tuner multiplies its per-channel caps by
        (:func:`topo.collective.channels.search_channels`).
    """

    def __init__(self, r: FabricRates, c: NcclConstants, tuner: bool = False) -> None:
        self.r, self.c = r, c
        self.tuner = tuner
        self.n, self.N, self.G = r.gpus, r.nodes, r.gpus_per_node
        self.nvl = r.nvlink_Bps * c.nvlink_efficiency
        self.node_cap = c.node_network_efficiency * r.server_nic_Bps
        self.tuner_channels = search_channels(r, c)

    def pattern(self, p: PatternRate) -> tuple[float, str]:
        """Units per second of a pattern, and its bound."""
        c, r = self.c, self.r
        if p.seconds_per_byte > 0:
            t_net = p.seconds_per_byte / c.nic_efficiency
            net_label = f"net {', '.join(p.bottleneck) or 'links'}"
        else:  # LP refused: the hose bound over the NICs in use (a non-blocking fabric)
            t_net = _hose(p, r.nics_per_node * r.nic_Bps * c.nic_efficiency)
            net_label = "net NICs (no LP)"
        t_node = _hose(p, self.node_cap) if self.node_cap > 0 else math.inf
        if t_node > t_net:
            return 1.0 / t_node, "server ceiling"
        return 1.0 / t_net, net_label

    def ring_bus(self) -> tuple[float, str]:
        """Ring bus bandwidth (B/s per ring link) and its bound."""
        if self.N == 1:
            return self.nvl, "nvlink"
        assert self.r.ring is not None
        bw, bound = self.pattern(self.r.ring)
        if self.G > 1:
            nv = self.nvl * self.G / (self.G - 1)
            if nv < bw:
                bw, bound = nv, "nvlink"
        # one thread block per channel copies at most one NVLink's rate (the model's
        # assumption, as for send/recv); a server's rings carry `channels` of them
        cap = self.c.channels * GBps_to_Bps(self.c.nvlink_link_GBps())
        if cap < bw and not self.tuner:
            bw, bound = cap, f"{self.c.channels} channels"
        return bw, bound


def _hw_intra(rates: Rates) -> str:
    return "nvlink" if rates.r.nvswitch and rates.G > 1 else "pci"


def _ring(op: str, S: float, R: Rates) -> list[Candidate]:
    c, n, N = R.c, R.n, R.N
    bus, bound = R.ring_bus()
    nsteps = {"all_reduce": 2 * (n - 1), "all_gather": n - 1, "reduce_scatter": n - 1}.get(op, n)
    out = []
    for p in PROTOCOLS:
        b, why = bus, bound
        if p == "LL":
            cap = GBps_to_Bps(c.ll_max_GBps(N))
            b = bus * c.factor("ring_ll_factor")
            if cap < b:
                b, why = cap, "LL ceiling"
        elif p == "LL128":
            cap = GBps_to_Bps(R.tuner_channels * c.per_channel_GBps("per_channel_ring_ll128", N))
            b = bus * c.factor("ring_ll128_factor")
            if cap < b:
                b, why = cap, "LL128 cap"
        algbw = b * n / nsteps
        lat = c.base_latency_us("ring", p)
        if op in ("broadcast", "reduce"):
            hw = "net" if N > 1 else _hw_intra(R)
            hop = c.hw_latency_us(hw, "tree" if p == "Simple" else "ring", p)
            lat += nsteps * hop
        else:
            intra = c.hw_latency_us(_hw_intra(R), "ring", p)
            inter = c.hw_latency_us("net", "tree" if R.G == 1 else "ring", p)
            if N > 1:
                ovh = c.latency("net_overhead_us")
                if p == "Simple":
                    ovh *= c.latency("net_overhead_simple_factor")
                intra = max(intra, ovh)
            n_inter = 0 if N == 1 else (2 * (N - 1) if op == "all_reduce" else N - 1)
            lat += (nsteps - n_inter) * intra + n_inter * inter
            if op == "all_reduce" and p == "Simple" and N > 1 and S / (c.channels * n) >= 64:
                lat *= c.latency("ring_plateau_factor")
        lat += nsteps * c.latency("extra_step_us")
        out.append(_cand("ring", p, lat, algbw, S, why))
    return out


def _cand(algo: str, proto: str, lat_us: float, algbw: float, S: float, bound: str) -> Candidate:
    if not algbw > 0:
        raise TopoError(f"{algo}/{proto} has no bandwidth on this fabric (bound: {bound})")
    lat = lat_us * 1e-6
    return Candidate(algo, proto, lat, algbw, lat + S / algbw, bound)


def _tree_net(R: Rates) -> tuple[float, str]:
    """all_reduce bytes per second the tree pattern moves across servers (no NCCL factors)."""
    assert R.r.tree is not None
    bw, bound = R.pattern(R.r.tree)
    # the server's channels carry its tree traffic: at most `channels` thread blocks' worth
    # (one NVLink each, as for the ring) of the pattern's busiest server bytes per unit
    cap = R.c.channels * GBps_to_Bps(R.c.nvlink_link_GBps()) / R.r.tree.node_bytes
    if cap < bw and not R.tuner:
        return cap, f"{R.c.channels} channels"
    return bw, bound


def _tree(S: float, R: Rates) -> list[Candidate]:
    c, N, G = R.c, R.N, R.G
    if N == 1:
        raw, bound = R.nvl / 2, "nvlink"
    else:
        raw, bound = _tree_net(R)
        if G > 1 and R.nvl / 2 < raw:
            raw, bound = R.nvl / 2, "nvlink"
    out = []
    for p in PROTOCOLS:
        bus, why = 2 * raw, bound  # NCCL's tree busBw; algbw = busBw / 2
        cap = GBps_to_Bps(R.tuner_channels * c.per_channel_GBps("per_channel_tree", N))
        bus = bus * c.factor("tree_factor")
        if cap < bus:
            bus, why = cap, "tree cap"
        if p == "LL":
            llcap = GBps_to_Bps(c.ll_max_GBps(N))
            bus = bus * c.factor("tree_ll_factor")
            if llcap < bus:
                bus, why = llcap, "LL ceiling"
        elif p == "LL128":
            f = c.factor("tree_ll128_factor_one_node" if N == 1 else "tree_ll128_factor")
            cap128 = GBps_to_Bps(R.tuner_channels * c.per_channel_GBps("per_channel_tree_ll128", N))
            bus = bus * f
            if cap128 < bus:
                bus, why = cap128, "LL128 cap"
        if c.arch in ("hopper", "blackwell") and R.tuner:
            # NCCL's tuner ranks the TREE pattern (maxTreePattern, Hopper on) .85 lower; a
            # tree moves the channels' caps above (8 x B200: nChannels x perChMaxTreeBw on
            # 1, 2 and 4 to 62 servers within 3%, topo/data/training.toml), so the ceiling
            # does not take it
            bus *= c.factor("tree_pattern_factor")
        algbw = bus / 2 * c.tree_correction(p, S)
        intra = c.hw_latency_us(_hw_intra(R), "tree", p)
        inter = c.hw_latency_us("net", "tree", p)
        lat = c.base_latency_us("tree", p) + 2 * ((G - 1) * intra + log2i(N) * inter)
        lat += 2 * ((G - 1) + log2i(N)) * c.latency("extra_step_us")
        out.append(_cand("tree", p, lat, algbw, S, why))
    return out


def _nvls_ok(R: Rates) -> bool:
    return R.r.nvswitch and R.G > 1 and R.c.nvls_efficiency() > 0


def _nvls(op: str, S: float, R: Rates) -> list[Candidate]:
    c, G, n = R.c, R.G, R.n
    eff = R.nvl * c.nvls_efficiency()
    if op == "all_reduce":
        algbw = eff * G / (G + 1)
    else:  # all_gather / reduce_scatter on one server: busbw = NVLink x nvlsEfficiency
        algbw = eff * n / (n - 1)
    lat = c.hw_latency_us("nvlink", "nvls", "Simple") + c.latency("extra_step_us")
    return [_cand("nvls", "Simple", lat, algbw, S, "nvlink")]


def _nvls_tree(S: float, R: Rates) -> list[Candidate]:
    c, G, N, n = R.c, R.G, R.N, R.n
    intra = R.nvl * c.nvls_efficiency() * G / (G + 1)
    inter, bound = _tree_net(R)
    algbw, why = intra, "nvlink"
    if inter < algbw:
        algbw, why = inter, bound
    per_ch = c.per_channel_GBps("per_channel_nvls_tree", N)
    if per_ch > 0:
        cap = GBps_to_Bps(c.channels * per_ch) * n / (2 * (n - 1))
        if cap < algbw:
            algbw, why = cap, "NVLS-tree cap"
    if R.tuner and c.arch == "blackwell" and c.cpu_arch == "x86":
        # NCCL 2.29's ncclTopoGetAlgoTime: NVLS-tree all-reduce under 1 GiB on Blackwell x86
        # hosts, at treeCorrectionFactor of its size (the tuner's time only)
        algbw *= c.tree_correction("Simple", S, below=24)
    lat = (
        c.base_latency_us("nvls_tree", "Simple")
        + c.hw_latency_us("nvlink", "nvls_tree", "Simple")
        + 2 * log2i(N) * c.hw_latency_us("net", "nvls_tree", "Simple")
        + (1 + 2 * log2i(N)) * c.latency("extra_step_us")
    )
    return [_cand("nvls_tree", "Simple", lat, algbw, S, why)]


def _pat(S: float, R: Rates) -> list[Candidate]:
    c = R.c
    bus, bound = R.ring_bus()
    algbw = bus * c.factor("pat_factor")
    inter = c.hw_latency_us("net", "tree", "Simple")
    lat = (
        c.base_latency_us("pat", "Simple")
        + log2i(R.N) * inter / c.latency("pat_log_divisor")
        + R.n * c.latency("pat_per_rank_us")
        + R.n * c.latency("extra_step_us")
    )
    return [_cand("pat", "Simple", lat, algbw, S, bound)]


def _p2p_latency(R: Rates, p: str, peers: int) -> float:
    c = R.c
    hw = "net" if R.N > 1 else _hw_intra(R)
    lat = c.base_latency_us("ring", p) + c.hw_latency_us(hw, "ring", p)
    if R.N > 1:
        lat += peers * c.latency("net_overhead_us")
    # one step per round of at most NCCL_MAX_DEV_WORK_P2P_PER_BATCH peers
    return lat + div_up(peers, c.factor("p2p_per_batch")) * c.latency("extra_step_us")


def _p2p_protocols(R: Rates, per_peer: float) -> list[tuple[str, float]]:
    """Send/recv's protocols: LL up to NCCL_P2P_LL_THRESHOLD per peer, where the connection
    has LL buffers (across servers only with NCCL_ALLOC_P2P_NET_LL_BUFFERS=1: src/enqueue.cc,
    src/transport/net.cc, NCCL 2.29); Simple always."""
    out = [("Simple", 1.0)]
    net_ll = R.c.factor("p2p_net_ll_buffers") > 0
    if per_peer <= R.c.factor("p2p_ll_threshold_bytes") and (R.N == 1 or net_ll):
        out.append(("LL", R.c.factor("ring_ll_factor")))
    return out


def _alltoall(S: float, R: Rates) -> list[Candidate]:
    n, G, N = R.n, R.G, R.N
    chunk = S / n
    t_net, t_nvl = 0.0, 0.0
    bound = "nvlink"
    if N > 1:
        assert R.r.alltoall is not None
        units, bound = R.pattern(R.r.alltoall)
        t_net = chunk / units
    if G > 1:
        fwd = (n - G) * (G - 1) / G if N > 1 and R.r.pxn else 0.0
        t_nvl = ((G - 1) + fwd) * chunk / R.nvl
        if t_nvl > t_net:
            bound = "nvlink"
    per_chunk = max(t_net, t_nvl)
    algbw = S / per_chunk if per_chunk > 0 else math.inf
    out = []
    for p, f in _p2p_protocols(R, chunk):
        out.append(_cand("pairwise", p, _p2p_latency(R, p, n - 1), algbw * f, S, bound))
    return out


def p2p_channels_per_peer(R: Rates) -> int:
    """NCCL's ``p2pnChannelsPerPeer`` (src/graph/paths.cc, 2.29): over NVLink 2 channels per
    NVLink's worth of the path, over the network max(NICs, ceil(NIC GB/s / 14)) or
    ``NCCL_NCHANNELS_PER_NET_PEER`` when set; the least over the peers, a power of two, halved
    across servers until every peer fits in one round (not when the variable is set)."""
    c = R.c
    link = GBps_to_Bps(c.nvlink_link_GBps())
    nvl = 2 * max(1, int(R.nvl / link)) if R.G > 1 else 10**6
    per_peer = nvl
    net_set = c.nchannels_per_net_peer
    if R.N > 1:
        nic_GBps = R.r.gpu_nic_Bps / 1e9
        nics = max(1, round(R.r.nics_per_node / max(1, R.G)))
        net = max(nics, div_up(nic_GBps, c.factor("p2p_per_channel_net_GBps")))
        per_peer = min(per_peer, net if net_set is None else net_set)
    per_peer = pow2_up(per_peer)
    total = p2p_channels(R.r, c)
    if R.N > 1 and net_set is None:
        rounds = div_up(R.n, c.factor("p2p_per_batch"))
        while per_peer * rounds > total and per_peer > 1:
            per_peer //= 2
    return min(total, per_peer)


def p2p_op_channels(R: Rates, nbytes: float) -> int:
    """Channels NCCL splits one send (or recv) of ``nbytes`` over (src/enqueue.cc addP2pToPlan,
    2.29): at least ``nChannelsMin`` parts of >= chunk/2 (network) or chunk/8 (NVLink), doubled
    while a part exceeds one chunk (network) or 32 chunks (NVLink), up to the per-peer count."""
    c = R.c
    cmax = p2p_channels_per_peer(R)
    cmin = cmax
    while cmin * R.n > p2p_channels(R.r, c) and cmin > 1:
        cmin //= 2
    if R.N > 1:
        step = c.factor("p2p_net_chunk_bytes")
        min_part, max_part = step / 2, step
    else:
        step = c.factor("p2p_nvl_chunk_bytes")
        min_part, max_part = step / 8, step * 32
    k = min(cmin, div_up(nbytes, min_part))
    part = max(min_part, div_up(nbytes, k))
    while part > max_part and k <= cmax // 2:
        k *= 2
        part = div_up(nbytes, k)
    return max(1, k)


def _sendrecv(S: float, R: Rates) -> list[Candidate]:
    """nccl-tests' sendrecv: every rank sends S to the next and receives from the previous; the
    slowest pair (across servers when N > 1) sets the time. A pair moves at most its channels'
    worth (:func:`p2p_op_channels`; per channel one NVLink, or NCCL's 14 GB/s over the network)."""
    c = R.c
    k = p2p_op_channels(R, S)
    rates: list[tuple[float, str]] = []
    if R.G > 1 and R.N == 1:
        rates.append((R.nvl, "nvlink"))
        rates.append((k * GBps_to_Bps(c.nvlink_link_GBps()), f"{k} p2p channels"))
    if R.N > 1:
        nic = R.r.gpu_nic_Bps * c.nic_efficiency
        rates.append((nic, "own NIC"))
        rates.append((k * GBps_to_Bps(c.factor("p2p_per_channel_net_GBps")), f"{k} p2p channels"))
        if R.G > 1:
            rates.append((R.nvl, "nvlink"))
    bw, bound = min(rates)
    out = []
    for p, f in _p2p_protocols(R, S):
        out.append(_cand("p2p", p, _p2p_latency(R, p, 1), bw * f, S, bound))
    return out


def candidates(op: str, size_bytes: float, rates: FabricRates, c: NcclConstants) -> list[Candidate]:
    """Every (algorithm, protocol) NCCL would consider for ``op`` at ``size_bytes``.

    Parameters
    ----------
    op : str
        One of :data:`OPS`.
    size_bytes : float
        The nccl-tests size (B): per rank, or the whole buffer for all_gather,
        reduce_scatter and alltoall.
    rates : FabricRates
        The sub-cluster (:func:`topo.collective.fabric_rates.fabric_rates`).
    c : NcclConstants
        The constants.

    Returns
    -------
    list of Candidate
        Unsorted; ``time_s`` = latency + size / algbw (the ceiling), ``tuner_time_s`` the
        same as NCCL's tuner sees it (what :func:`choose` ranks by).

    Raises
    ------
    TopoError
        Unknown op, or size <= 0.
    """
    _check_op(op)
    if not size_bytes > 0:
        raise TopoError(f"size must be > 0 bytes, got {size_bytes}")
    S = float(size_bytes)
    ceiling = _candidates(op, S, Rates(rates, c))
    tuner = _candidates(op, S, Rates(rates, c, tuner=True))
    return [
        Candidate(
            k.algorithm,
            k.protocol,
            k.latency_s,
            k.algbw_Bps,
            k.time_s,
            k.bound,
            t.time_s,
            t.algbw_Bps,
        )
        for k, t in zip(ceiling, tuner, strict=True)
    ]


def _candidates(op: str, S: float, R: Rates) -> list[Candidate]:
    if op == "alltoall":
        return _alltoall(S, R)
    if op == "sendrecv":
        return _sendrecv(S, R)
    out = _ring(op, S, R)
    if op == "all_reduce":
        out += _tree(S, R)
        if _nvls_ok(R):
            out += _nvls(op, S, R) if R.N == 1 else _nvls_tree(S, R)
    elif op in ("all_gather", "reduce_scatter"):
        if R.N == 1 and _nvls_ok(R):
            out += _nvls(op, S, R)
        if R.G == 1 and R.N > 1:
            out += _pat(S, R)
    return out


def choose(op: str, size_bytes: float, rates: FabricRates, c: NcclConstants) -> Candidate:
    """The fastest candidate, as NCCL's tuner picks it (ties: the first in NCCL's order).

    Parameters
    ----------
    op, size_bytes, rates, c
        As for :func:`candidates` (size in B).

    Returns
    -------
    Candidate
        The (algorithm, protocol) of least ``tuner_time_s`` (s).

    Raises
    ------
    TopoError
        Unknown op, or size <= 0.

    References
    ----------
    NVIDIA/nccl ``src/graph/tuning.cc`` (``ncclTopoGetAlgoTime``, ``ncclTopoGetAlgoInfo``).

    Examples
    --------
    >>> from topo.builders import build
    >>> from topo.collective.constants import load_constants
    >>> from topo.collective.fabric_rates import fabric_rates
    >>> G = build("ft2", switch_ports=8, gpus_per_node=2, nics_per_node=2)
    >>> best = choose("all_reduce", 8, fabric_rates(G), load_constants())
    >>> best.protocol                      # tiny messages: the low-latency protocol
    'LL'
    """
    return min(candidates(op, size_bytes, rates, c), key=lambda k: k.rank_s)
