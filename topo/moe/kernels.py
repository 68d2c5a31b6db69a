"""Expert-parallel kernels: how DeepEP's two kernel families and an NCCL all-to-all move the
dispatch and combine of one routing, and their bandwidths in DeepEP's own definitions.

``topo moe ... --kernel deepep-normal|deepep-ll|nccl`` (docs/moe.md, "Kernels"):

- ``deepep-normal`` (DeepEP ``internode.cu`` / ``intranode.cu``): a token goes once over RDMA to
  the GPU of the same local index on each target node other than its own, which forwards it
  over NVLink to the GPUs of that node holding its experts; targets on its own node get it
  over NVLink directly. Chunked and pipelined, so a phase takes as long as its busiest leg:
  ``max(RDMA bytes of the busiest NIC / RDMA rate, NVLink bytes of the busiest GPU / NVLink
  rate, forwarded bytes of the busiest GPU / (channels x per-channel forwarding rate))``,
  channels = SMs / 2. The last term is the SM budget: every token of a target node, own node
  and the relay itself included, passes one forwarder warp (one TMA copy per token and
  peer) of one channel. On one node only NVLink is used (``intranode.cu``, no forwarder).
- ``deepep-ll`` (``internode_ll.cu``): pure RDMA, one message per (token, expert) to the
  expert's GPU, on its own node too; FP8 messages carry 16 B of metadata more.
- ``nccl``: a pairwise all-to-all of the (token, GPU) copies: NVLink inside a node, RDMA across
  (PXN forwards to the NIC on the destination's rail over NVLink first, counted on NVLink).

Bandwidths are DeepEP's test definitions (``tests/test_internode.py``,
``test_intranode.py``, ``test_low_latency.py``): logical bytes over time, the logical bytes
counting a rank's traffic to itself. Normal kernels across nodes: ``RDMA GB/s`` = (token,
target node) pairs, own node included, x bytes per token / time; on one node: ``NVLink GB/s`` =
(token, target GPU) pairs received, own GPU included, x bytes / time. Low latency: (token,
expert) selections x bytes / time.

Rates (each cited beside its constant): NVLink 0.656 of nominal per direction (DeepEP issue
#16, the intranode test on H20); RDMA 0.94 of the NIC (NVSHMEM puts, DeepEP issue #155);
forwarding 10.41 / 12.10 GB/s per channel for dispatch / combine (DeepEP issue #493, 2 nodes
of H200 where neither link binds); 0.8 of the NIC for the low-latency kernels' per-token
messages ([ISCA25] §4.1); NCCL's own 48/50 and 20.6/25 for the NCCL all-to-all. No latency
term (see docs/moe.md, 9b).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from topo.errors import TopoError
from topo.moe.traffic import EPLayout
from topo.units import Bps_to_GBps, s_to_us

KERNELS = ("deepep-normal", "deepep-ll", "nccl")
"""The kernels of ``topo moe --kernel``."""

NVLINK_SHARE = 337.35 * 7 / 8 / 450.0
"""NVLink DeepEP's normal kernels reach per direction in their all-to-all, over the link's
nominal rate: 0.656. Source: DeepEP issue #16 (github.com/deepseek-ai/DeepEP/issues/16), the
intranode test at 24 SMs (the only SM count DeepEP's first ``tests/test_intranode.py`` ran) on
8 H20, whose NVLink is 450 GB/s per direction (the maintainers' reply there): "the max
bandwidth is 337.35 GB/s" (logical; the phase is in a screenshot, not the text), of which 7/8
crosses NVLink (the test counts a rank's tokens to itself). Used for dispatch and combine.
Assumption: that figure is NVLink-bound, not SM-bound (the maintainers there suggest trying
more SMs); the same NVLink 4 links carry the same pattern on H800. DeepEP's README "~160 GB/s
NVLink maximum" on H800 (0.8) is a peak, not the all-to-all rate (docs/moe.md, 9b)."""
RDMA_SHARE = 47.0 / 50.0
"""RDMA DeepEP's normal kernels reach over the NIC's rate: NVSHMEM ``shmem_put_bw`` between two
nodes of 8 H100 and 8 mlx5 NICs, "the expected bandwidth of around 47 GB/s" (DeepEP issue #155;
the NICs' speed is not stated there, 47 GB/s implies 400G; DeepEP moves its RDMA chunks with
NVSHMEM puts). [DeepEP] README gives "~50 GB/s maximum" for CX7 400G; NCCL 2.29 assumes 48
(``src/graph/search.cc`` sm90SpeedArrayInter[0])."""
DEEPEP_SMS = 24
"""SMs DeepEP's normal kernels are given: DeepEP ``tests/test_internode.py`` and
``test_intranode.py`` (``num_sms = 24``) and its README (``Buffer.set_num_sms(24)``); a channel
is a pair of SMs (``internode.cu``: ``num_channels = num_sms / 2``)."""
MAX_SMS = 132
"""Most SMs a GPU DeepEP's normal kernels run on has: the H100/H800 SXM5's 132 (NVIDIA H100
Tensor Core GPU Architecture whitepaper, 2022); DeepEP's kernels target Hopper (its README).
``--kernel-sms`` above it is refused."""
FORWARD_DISPATCH_Bps = 124.92e9 / 12
"""Token bytes one channel of DeepEP's internode dispatch delivers over its forwarding
pipeline (RDMA buffer -> forwarder SM, one warp and one TMA copy per token and NVLink peer ->
receiver SM), B/s: 10.41 GB/s. Source: DeepEP issue #493 (2 nodes x 8 H200, CX7 400G, 24 SMs,
FP8 dispatch): best 124.92 GB/s (NVL) over 12 channels, where neither NVLink (450 GB/s per
direction) nor the NIC (19 of 50 GB/s used) binds, so the SMs do. The same Hopper SM as the
H800's. Other public runs at 24 SMs on 2 nodes of H20: 139-147 GB/s (issues #137, #181)."""
FORWARD_COMBINE_Bps = 145.16e9 / 12
"""The same for the internode combine (BF16; forwarders reduce on the way back), B/s: 12.10
GB/s per channel. Source: DeepEP issue #493, best combine 145.16 GB/s (NVL) at 24 SMs."""
RDMA_SMALL_SHARE = 40.0 / 50.0
"""RDMA of small messages over the NIC's rate, for the low-latency kernels' one message per
(token, expert) of a few KiB: [ISCA25] §4.1 ("40 GB/s effective for small messages" of a
400G NIC's 50 GB/s)."""
NCCL_NIC_SHARE = 48.0 / 50.0
"""NCCL's per-NIC rate over a 400G NIC's (src/graph/search.cc sm90SpeedArrayInter[0])."""
NCCL_NVLINK_SHARE = 20.6 / 25.0
"""NCCL's NVLink rate over the link's (src/graph/topo.h SM90_NVLINK_BW over NVLink 4)."""
LL_META_BYTES = 16
"""Metadata per FP8 message of the low-latency kernels (DeepEP tests/test_low_latency.py:
``hidden + hidden / 128 * 4 + 16``)."""


@dataclass(frozen=True)
class KernelResult:
    """One kernel's dispatch and combine of one micro-batch.

    Attributes
    ----------
    kernel : str
        One of :data:`KERNELS`.
    dispatch_us, combine_us : float
        Phase times (µs).
    dispatch_GBps, combine_GBps : float
        DeepEP's logical bandwidth of each phase (GB/s = 1e9 B/s).
    bandwidth_kind : str
        ``nvlink`` (one node, normal kernels) or ``rdma``.
    dispatch_bottleneck, combine_bottleneck : str
        The leg that sets each phase: ``rdma``, ``nvlink``, or ``sm`` (the forwarding
        pipeline of the SMs DeepEP's normal kernels are given).
    """

    kernel: str
    dispatch_us: float
    combine_us: float
    dispatch_GBps: float
    combine_GBps: float
    bandwidth_kind: str
    dispatch_bottleneck: str
    combine_bottleneck: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the ``kernel`` object of ``topo moe --json``)."""
        return asdict(self)


@dataclass(frozen=True)
class _Legs:
    """Copies (in tokens) per rank on each leg, and logical copies per rank.

    ``fwd_out`` / ``fwd_in``: (token, GPU) pairs each rank forwards / receives through DeepEP's
    internode forwarding pipeline, its own included (zero where the kernel has none)."""

    rdma_out: np.ndarray
    rdma_in: np.ndarray
    nvl_out: np.ndarray
    nvl_in: np.ndarray
    logical: float
    fwd_out: np.ndarray | None = None
    fwd_in: np.ndarray | None = None


def _targets(layout: EPLayout, experts: np.ndarray) -> np.ndarray:
    """Boolean (tokens, ranks): the ranks holding each token's experts."""
    n = experts.shape[0]
    hit = np.zeros((n, layout.ep), dtype=bool)
    hit[np.arange(n)[:, None], layout.expert_rank[experts]] = True
    return hit


def _normal_legs(layout: EPLayout, experts: np.ndarray, T: int) -> _Legs:
    G, ep = layout.gpus_per_node, layout.ep
    nodes = layout.nodes
    hit = _targets(layout, experts)
    src = np.arange(experts.shape[0]) // T
    src_node, src_local = src // G, src % G
    node_hit: np.ndarray = np.asarray(hit.reshape(-1, nodes, G), dtype=bool)
    tgt_nodes: np.ndarray = np.asarray(node_hit.any(axis=2))  # (tokens, nodes)
    zeros = np.zeros(ep)
    rdma_out, rdma_in, nvl_out, nvl_in = zeros.copy(), zeros.copy(), zeros.copy(), zeros.copy()
    fwd_out = zeros.copy()
    for d in range(nodes):
        remote = tgt_nodes[:, d] & (src_node != d)
        relay = d * G + src_local  # the same-index GPU of node d
        np.add.at(rdma_out, src[remote], 1)
        np.add.at(rdma_in, relay[remote], 1)
        # forwarding (remote) or direct (own node) over NVLink, to every target but the sender
        sender = np.where(src_node == d, src, relay)
        # every token of a target node passes its relay's forwarder (own node: the source)
        np.add.at(fwd_out, relay[tgt_nodes[:, d]], node_hit[tgt_nodes[:, d], d, :].sum(axis=1))
        for g in range(G):
            r = d * G + g
            go = node_hit[:, d, g] & (sender != r)
            np.add.at(nvl_out, sender[go], 1)
            nvl_in[r] += go.sum()
    if nodes == 1:
        logical = hit.sum() / ep  # (token, GPU) pairs received, self included
    else:
        logical = tgt_nodes.sum() / ep  # (token, node) pairs, own node included
    if nodes == 1:  # intranode.cu: senders write straight to their peers, no forwarder
        return _Legs(rdma_out, rdma_in, nvl_out, nvl_in, float(logical))
    fwd_in = hit.sum(axis=0).astype(float)
    return _Legs(rdma_out, rdma_in, nvl_out, nvl_in, float(logical), fwd_out, fwd_in)


def _ll_legs(layout: EPLayout, experts: np.ndarray, T: int) -> _Legs:
    ep = layout.ep
    src = np.repeat(np.arange(experts.shape[0]) // T, experts.shape[1])
    dst = layout.expert_rank[experts].ravel()
    out, inn = np.zeros(ep), np.zeros(ep)
    other = src != dst
    np.add.at(out, src[other], 1)
    np.add.at(inn, dst[other], 1)
    zeros = np.zeros(ep)
    return _Legs(out, inn, zeros, zeros.copy(), experts.size / ep)


def _nccl_legs(layout: EPLayout, experts: np.ndarray, T: int) -> _Legs:
    G, ep = layout.gpus_per_node, layout.ep
    hit = _targets(layout, experts)
    src = np.arange(experts.shape[0]) // T
    same = (np.arange(ep)[None, :] // G) == (src // G)[:, None]
    own = np.arange(ep)[None, :] == src[:, None]
    local = hit & same & ~own
    remote = hit & ~same
    rdma_out = np.bincount(src, weights=remote.sum(axis=1), minlength=ep)
    rdma_in = remote.sum(axis=0).astype(float)
    # PXN: (G - 1) / G of the remote copies cross NVLink to the NIC on the destination's rail
    pxn = remote.sum(axis=1) * (G - 1) / G
    nvl_out = np.bincount(src, weights=local.sum(axis=1) + pxn, minlength=ep)
    nvl_in = local.sum(axis=0) + np.bincount(src, weights=pxn, minlength=ep)
    logical = hit.sum() if layout.nodes == 1 else hit.reshape(-1, layout.nodes, G).any(2).sum()
    return _Legs(rdma_out, rdma_in, nvl_out, nvl_in, float(logical) / ep)


def _phase(
    legs: _Legs, nbytes: float, rdma_Bps: float, nvl_Bps: float, fwd_Bps: float
) -> tuple[float, str]:
    """Time of one phase (s) and the leg that sets it: the slowest of RDMA, NVLink and, where
    the kernel forwards, the SMs' forwarding pipeline (``fwd_Bps`` per GPU)."""
    t_rdma = max(legs.rdma_out.max(), legs.rdma_in.max()) * nbytes / rdma_Bps if rdma_Bps else 0
    t_nvl = max(legs.nvl_out.max(), legs.nvl_in.max()) * nbytes / nvl_Bps if nvl_Bps else 0.0
    t_sm = 0.0
    if legs.fwd_out is not None and legs.fwd_in is not None and fwd_Bps > 0:
        t_sm = max(legs.fwd_out.max(), legs.fwd_in.max()) * nbytes / fwd_Bps
    t, bound = max((float(t_rdma), "rdma"), (float(t_nvl), "nvlink"), (float(t_sm), "sm"))
    return t, bound


def kernel_times(
    layout: EPLayout,
    experts: np.ndarray,
    tokens_per_gpu: int,
    dispatch_bytes: float,
    combine_bytes: float,
    kernel: str,
    num_sms: int = DEEPEP_SMS,
) -> KernelResult:
    """Dispatch and combine of one routing by one kernel, in DeepEP's bandwidth definitions.

    Parameters
    ----------
    layout : EPLayout
        EP ranks and experts (:func:`topo.moe.traffic.ep_layout`).
    experts : numpy.ndarray of int, shape (ep * tokens_per_gpu, k)
        Each token's routed experts; tokens ``r*T .. r*T+T-1`` start on rank ``r``.
    tokens_per_gpu : int
        ``T``.
    dispatch_bytes, combine_bytes : float
        Bytes of one token copy in each phase (B).
    kernel : str
        One of :data:`KERNELS`.
    num_sms : int
        SMs given to DeepEP's normal kernels (even; ``num_sms / 2`` channels, each forwarding
        at :data:`FORWARD_DISPATCH_Bps` / :data:`FORWARD_COMBINE_Bps` across nodes).

    Returns
    -------
    KernelResult
        Times in µs, bandwidths in GB/s.

    Raises
    ------
    TopoError
        Unknown kernel; a routing of another shape; RDMA needed with no NIC; an odd or
        non-positive SM count.
    """
    if kernel not in KERNELS:
        raise TopoError(
            f"kernel must be one of {', '.join(KERNELS)}, got {kernel!r}", param="kernel"
        )
    if experts.ndim != 2 or experts.shape[0] != layout.ep * tokens_per_gpu:
        raise TopoError("the routing must hold ep x tokens_per_gpu tokens")
    if num_sms < 2 or num_sms % 2 or num_sms > MAX_SMS:
        raise TopoError(
            f"num_sms must be an even number from 2 to {MAX_SMS} (a Hopper SXM GPU's SMs), "
            f"got {num_sms}",
            param="num_sms",
        )
    nic = np.array([sum(layout.nic_cable_Bps.get(n, 0.0) for n in nics)
                    for nics in layout.nic_of_rank])  # fmt: skip
    nic_Bps = float(nic.min()) if nic.size else 0.0
    nvl_Bps = float(layout.nvlink_Bps.min()) if layout.ep else 0.0
    legs = {"deepep-normal": _normal_legs, "deepep-ll": _ll_legs, "nccl": _nccl_legs}[kernel](
        layout, experts, tokens_per_gpu
    )
    if kernel == "nccl":
        rdma, nvl = nic_Bps * NCCL_NIC_SHARE, nvl_Bps * NCCL_NVLINK_SHARE
    elif kernel == "deepep-ll":
        rdma, nvl = nic_Bps * RDMA_SMALL_SHARE, 0.0
    else:
        rdma, nvl = nic_Bps * RDMA_SHARE, nvl_Bps * NVLINK_SHARE
    if (legs.rdma_out.any() or legs.rdma_in.any()) and rdma <= 0:
        raise TopoError(
            f"kernel {kernel}: the EP ranks' GPUs have no NIC for RDMA", param="kernel"
        )
    extra = LL_META_BYTES if kernel == "deepep-ll" else 0
    channels = num_sms // 2
    out = []
    for nbytes, fwd in (
        (dispatch_bytes + extra, channels * FORWARD_DISPATCH_Bps),
        (combine_bytes, channels * FORWARD_COMBINE_Bps),
    ):
        t, bound = _phase(legs, nbytes, rdma, nvl, fwd)
        gbps = Bps_to_GBps(legs.logical * nbytes / t) if t > 0 else 0.0
        out.append((s_to_us(t), gbps, bound))
    kind = "nvlink" if layout.nodes == 1 and kernel != "deepep-ll" else "rdma"
    (dt, dg, db), (ct, cg, cb) = out
    return KernelResult(kernel, dt, ct, dg, cg, kind, db, cb)


def kernel_report(report: Any, kernel: str, num_sms: int = DEEPEP_SMS) -> KernelResult:
    """:func:`kernel_times` of a report's headline routing (its node limit, its sizes).

    Parameters
    ----------
    report : MoEReport
        From :func:`topo.moe.moe_report`.
    kernel : str
        One of :data:`KERNELS`.
    num_sms : int
        As :func:`kernel_times`.

    Returns
    -------
    KernelResult

    Raises
    ------
    TopoError
        As :func:`kernel_times`.
    """
    experts = report.routings[report.headline.node_limit]
    return kernel_times(
        report.layout,
        experts,
        report.tokens_per_gpu,
        report.dispatch_bytes_per_copy,
        report.combine_bytes_per_copy,
        kernel,
        num_sms,
    )
