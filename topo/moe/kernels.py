"""Expert-parallel kernels: how DeepEP V1 and V2, NCCL EP and an NCCL all-to-all move the
dispatch and combine of one routing, and their bandwidths in each library's own definitions.

``topo moe ... --kernel deepep-normal|deepep-ll|deepep-v2|nccl|nccl-ep-ll|nccl-ep-ht``
(docs/moe.md, "Kernels"):

- ``deepep-normal`` (DeepEP ``internode.cu`` / ``intranode.cu``): a token goes once over RDMA to
  the GPU of the same local index on each target node other than its own, which forwards it
  over NVLink to the GPUs of that node holding its experts; targets on its own node get it
  over NVLink directly. Chunked and pipelined, so a phase takes as long as its busiest leg:
  ``max(RDMA bytes of the busiest NIC / RDMA rate, NVLink bytes of the busiest GPU / NVLink
  rate, forwarded bytes of the busiest GPU / (channels x per-channel forwarding rate))``,
  channels = SMs / 2. The last term is the SM budget: every token of a target node, own node
  and the relay itself included, passes one forwarder warp (one TMA copy per token and
  peer) of one channel. On one node only NVLink is used (``intranode.cu``, no forwarder).
- ``deepep-ll`` (``internode_ll.cu`` since DeepEP PR #173): one message per (token, expert) to
  the expert's GPU, over NVLink (warp stores) inside the node, over RDMA (IBGDA puts through the
  GPU's own NIC) across; dispatch messages carry a 16 B header. Combine takes as long as its
  slower leg (``max(t_rdma, t_nvl)``): ``combine`` gives each warp group one (destination rank,
  local expert) pair, so the groups writing to the node's GPUs (TMA stores) and those posting
  puts to other nodes run side by side (``internode_ll.cu`` at dd758ca, the send phase of
  ``combine``). Dispatch's legs add up (``t_rdma + t_nvl``), chosen on DeepEP's H20 rows of
  PR #173 (the training file); its code issues both from one token step (warp ``i`` sends the
  token's ``i``-th copy), which alone would let them overlap, and the rows reject that.
- ``deepep-v2`` (``ElasticBuffer``, hybrid mode): the path of ``deepep-normal`` (RDMA to the
  same-index GPU of each target node, NVLink from there), on the SM count V2's code computes
  (:mod:`topo.moe.deepep_v2`), its per-SM HBM rates bounding the kernel when given fewer.
- ``nccl-ep-ll`` (NCCL EP 0.1.0, ``contrib/nccl_ep/device/low_latency.cu``, adapted from
  DeepEP's low-latency kernels): as ``deepep-ll``; ``nccl-ep-ht`` (its hybrid-EP kernels): the
  hierarchical path of ``deepep-normal`` without an SM term. At most 64 GPUs, 8 per node,
  BF16 combine (contrib/nccl_ep/RELEASE.md, ``ncclEpCombine``).
- ``nccl``: a pairwise all-to-all of the (token, GPU) copies: NVLink inside a node, RDMA across
  (PXN forwards to the NIC on the destination's rail over NVLink first, counted on NVLink).

Bandwidths are each library's test definitions: logical bytes over time, counting a rank's
traffic to itself. DeepEP (``tests/legacy/test_internode.py``, ``test_intranode.py``,
``test_low_latency.py``; V2 ``tests/elastic/test_ep.py``): normal kernels and V2 across nodes
(token, target node) pairs, own node included, x bytes per token / time; on one node (token,
target GPU) pairs received, own GPU included; low latency (token, expert) selections x bytes.
NCCL EP (``contrib/nccl_ep/ep_bench.cu``): LL selections x hidden x 2 B; HT ``total_send``,
(token, node) pairs x hidden x 2 B. The low-latency kernels' times are the kernel's
(DeepEP's ``tests/test_low_latency.py`` times them with ``bench_kineto``; ``ep_bench``'s
"Kernel-only performance"), not a host-timed window: NCCL EP's README table times combine from
dispatch's end event, host synchronize and launch included (docs/moe.md 9c).

Rates (each cited beside its constant): NVLink 0.656 of nominal per direction (DeepEP issue
#16, the intranode test on H20); RDMA 0.94 of the NIC (NVSHMEM puts, DeepEP issue #155);
forwarding 10.41 / 12.10 GB/s per channel for dispatch / combine (DeepEP issue #493, 2 nodes
of H200 where neither link binds); for the low-latency kernels' per-(token, expert) messages
0.853 of the NIC and 0.418 / 0.502 of NVLink (fitted, topo/data/training.toml); NCCL's own
48/50 and 20.6/25 for the NCCL all-to-all; DeepEP V2's own 200 / 50 GB/s per SM. No latency
term (see docs/moe.md, 9b and 9c).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from topo.errors import TopoError
from topo.fabric.gpus import arch_of_model
from topo.flow.solve import check_moe_kernel
from topo.moe.deepep_v2 import (
    V2_MAX_SMS,
    V2_SM_READ_Bps,
    V2_SM_WRITE_Bps,
    v2_theoretical_qps,
    v2_theoretical_sms,
)
from topo.moe.traffic import EPLayout
from topo.units import Bps_to_GBps, s_to_us

KERNELS = ("deepep-normal", "deepep-ll", "deepep-v2", "nccl", "nccl-ep-ll", "nccl-ep-ht")
"""The kernels of ``topo moe --kernel``."""

RELEASES = {
    "deepep-normal": "DeepEP V1 normal kernels (legacy; csrc/kernels/legacy/internode.cu, "
    "intranode.cu at v1.2.1)",
    "deepep-ll": "DeepEP V1 low-latency kernels with NVLink (PR #173, 2025-06; "
    "csrc/kernels/legacy/internode_ll.cu at v1.2.1, commit dd758ca)",
    "deepep-v2": "DeepEP V2 ElasticBuffer (release 26/04, PR #605; deep_ep/buffers/elastic.py "
    "at commit dd758ca, 2026-07-14)",
    "nccl": "NCCL 2.29 all-to-all (src/graph/search.cc, topo.h)",
    "nccl-ep-ll": "NCCL EP 0.1.0 low-latency (NVIDIA/nccl contrib/nccl_ep, commit 9d22d5d, "
    "2026-06-08)",
    "nccl-ep-ht": "NCCL EP 0.1.0 high-throughput (NVIDIA/nccl contrib/nccl_ep, commit 9d22d5d, "
    "2026-06-08)",
}
"""The release each kernel's model reads its code from (``release`` in ``--json``)."""

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
LL_RDMA_SHARE = 0.853
"""RDMA rate of the low-latency kernels' per-(token, expert) messages (7.4 KiB FP8, 14 KiB BF16)
through the GPU's own NIC, over the NIC's rate: 0.853 (42.7 GB/s of a 400G NIC). Fitted
(``topo/data/training.toml``, ``[[ep_kernel]]`` ``deepep-ll-pure-rdma-h800``) to DeepEP's
low-latency table from before PR #173 (pure RDMA, H800 + CX7 400G, EP8 to EP256, both phases;
EP128 and EP256 are unchanged in the current table), as the geometric mean of measured over
modelled on topo's seeded routing (the busiest NIC sets the time). [ISCA25] §4.1's "40 GB/s
effective for small messages" (0.8) is 6% lower."""
NCCL_NIC_SHARE = 48.0 / 50.0
"""NCCL's per-NIC rate over a 400G NIC's (src/graph/search.cc sm90SpeedArrayInter[0])."""
NCCL_NVLINK_SHARE = 20.6 / 25.0
"""NCCL's NVLink rate over the link's (src/graph/topo.h SM90_NVLINK_BW over NVLink 4)."""
LL_META_BYTES = 16
"""Header of each dispatch message of the low-latency kernels, B: ``sizeof(int4)`` (DeepEP
``internode_ll.cu``: ``num_bytes_per_msg = sizeof(int4) + hidden bytes + scales``; its test
counts FP8 as ``hidden + hidden / 128 * 4 + 16``). NCCL EP's LL kernel, adapted from it, is
given the same header."""
LL_NVLINK_DISPATCH_SHARE = 0.418
"""NVLink rate of the low-latency dispatch's warp copies (one per (token, expert) on the node)
over the link's nominal rate per direction: 0.418. Fitted (``topo/data/training.toml``,
``[[ep_kernel]]`` ``deepep-pr173-h20``) to DeepEP PR #173's EP8 row on 8 H20 (NVLink 450 GB/s
per direction), 128 tokens, hidden 7,168, top-8, FP8: 37 µs, 203.2 GB/s logical, on topo's
seeded routing (the busiest GPU sets the time; a rank's messages to itself stay local)."""
LL_NVLINK_COMBINE_SHARE = 0.502
"""The same for the low-latency combine (BF16): PR #173's EP8 combine, 59 µs, 244.2 GB/s."""
LL_DEVICE_SMS = 132
"""SMs of the GPU the low-latency kernels are sized for (H800/H100 SXM5: 132)."""
NCCL_EP_MAX_GPUS = 64
"""Most GPUs NCCL EP 0.1.0 supports: "Up to 8 nodes ... Maximum of 64 GPUs (8 nodes x 8
GPUs)" (contrib/nccl_ep/RELEASE.md, Known Limitations)."""
NCCL_EP_MAX_GPUS_PER_NODE = 8
"""Most GPUs per node NCCL EP 0.1.0 supports ("Up to 8 ranks per node", RELEASE.md)."""
NCCL_EP_HT_SMS = 16
"""SMs NCCL EP's high-throughput kernels take by default (``HYBRIDEP_MAX_NUM_SMS_PER_RANK``,
contrib/nccl_ep/device/hybridep_configs.cuh)."""


def ll_sms(num_experts: int, device_sms: int = LL_DEVICE_SMS) -> int:
    """SMs DeepEP V1's low-latency dispatch launches (and NCCL EP's LL with ``max_num_sms``
    auto): ``ceil(E / ceil(E / device_sms))`` (``internode_ll.cu``, host ``dispatch``:
    ``num_warp_groups = ceil_div(num_experts, num_device_sms)``, ``num_sms =
    ceil_div(num_experts, num_warp_groups)``).

    Examples
    --------
    >>> ll_sms(288), ll_sms(256), ll_sms(64)
    (96, 128, 64)
    """
    groups = -(-num_experts // device_sms)
    return -(-num_experts // groups)


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
        The leg that sets each phase: ``rdma``, ``nvlink``, or ``sm`` (the SMs the kernel is
        given); for the low-latency kernels, the larger of the two legs.
    release : str
        The library release whose code the model reads (:data:`RELEASES`).
    bandwidth_name : str
        The library's own name of the bandwidth: DeepEP V1/V2 "bottleneck bandwidth",
        DeepEP LL "RDMA bandwidth", NCCL EP ``ep_bench``'s "throughput" (LL) or
        "total_send" (HT).
    sms : int or None
        SMs the kernel runs on (given, or as the library's code computes them).
    qps : int or None
        RDMA queue pairs per rank the library's code computes (DeepEP V2), else None.
    layer_us, tpot_ms, tokens_per_s : float or None
        With the report's micro-batches and MoE layers (:func:`kernel_report`): a layer's
        ``micro_batches x (dispatch + combine)`` (µs), its time per output token over the MoE
        layers (ms) and ``1 / TPOT`` per sequence; None from :func:`kernel_times` alone.
    """

    kernel: str
    dispatch_us: float
    combine_us: float
    dispatch_GBps: float
    combine_GBps: float
    bandwidth_kind: str
    dispatch_bottleneck: str
    combine_bottleneck: str
    release: str = ""
    bandwidth_name: str = ""
    sms: int | None = None
    qps: int | None = None
    layer_us: float | None = None
    tpot_ms: float | None = None
    tokens_per_s: float | None = None

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
        tn = tgt_nodes[:, d]
        remote = tn & (src_node != d)
        relay = d * G + src_local  # the same-index GPU of node d
        rdma_out += np.bincount(src[remote], minlength=ep)
        rdma_in += np.bincount(relay[remote], minlength=ep)
        # forwarding (remote) or direct (own node) over NVLink, to every target but the sender
        sender = np.where(src_node == d, src, relay)
        # every token of a target node passes its relay's forwarder (own node: the source)
        fwd_out += np.bincount(relay[tn], weights=node_hit[tn, d, :].sum(axis=1), minlength=ep)
        go = node_hit[:, d, :] & (sender[:, None] != d * G + np.arange(G)[None, :])
        nvl_out += np.bincount(sender, weights=go.sum(axis=1), minlength=ep)
        nvl_in[d * G : (d + 1) * G] += go.sum(axis=0)
    if nodes == 1:
        logical = hit.sum() / ep  # (token, GPU) pairs received, self included
    else:
        logical = tgt_nodes.sum() / ep  # (token, node) pairs, own node included
    if nodes == 1:  # intranode.cu: senders write straight to their peers, no forwarder
        return _Legs(rdma_out, rdma_in, nvl_out, nvl_in, float(logical))
    fwd_in = hit.sum(axis=0).astype(float)
    return _Legs(rdma_out, rdma_in, nvl_out, nvl_in, float(logical), fwd_out, fwd_in)


def _ll_legs(layout: EPLayout, experts: np.ndarray, T: int, nvlink: bool = True) -> _Legs:
    """One message per (token, expert): NVLink to the other GPUs of the sender's node (when
    ``nvlink``), RDMA through the sender's own NIC to other nodes; to itself, local."""
    G, ep = layout.gpus_per_node, layout.ep
    src = np.repeat(np.arange(experts.shape[0]) // T, experts.shape[1])
    dst = layout.expert_rank[experts].ravel()
    other = src != dst
    near = other & (src // G == dst // G) if nvlink else np.zeros_like(other)
    far = other & ~near
    rdma_out = np.bincount(src[far], minlength=ep).astype(float)
    rdma_in = np.bincount(dst[far], minlength=ep).astype(float)
    nvl_out = np.bincount(src[near], minlength=ep).astype(float)
    nvl_in = np.bincount(dst[near], minlength=ep).astype(float)
    return _Legs(rdma_out, rdma_in, nvl_out, nvl_in, experts.size / ep)


def _v2_sm_time(
    layout: EPLayout, experts: np.ndarray, T: int, nbytes: float, num_sms: int
) -> float:
    """DeepEP V2's SM budget (s): per rank, the token bytes its SMs read at 200 GB/s and write
    at 50 GB/s each (``get_theoretical_num_sms``' terms, counted on the routing): read its own
    tokens and, across nodes, every token it relays; write the send buffer, the own-node bypass
    and every copy it issues over NVLink (its own included)."""
    G, ep, nodes = layout.gpus_per_node, layout.ep, layout.nodes
    hit = _targets(layout, experts)
    src = np.arange(experts.shape[0]) // T
    node_hit = hit.reshape(-1, nodes, G)
    tgt_nodes: np.ndarray = np.asarray(node_hit.any(axis=2), dtype=bool)
    read = np.full(ep, float(T))
    write = np.zeros(ep)
    if nodes > 1:
        own = tgt_nodes[np.arange(len(src)), src // G]
        write += T + np.bincount(src, weights=own, minlength=ep)
        for d in range(nodes):
            relay = d * G + src % G
            sel = tgt_nodes[:, d]
            read += np.bincount(relay[sel], minlength=ep)
            write += np.bincount(relay[sel], weights=node_hit[sel, d, :].sum(axis=1), minlength=ep)
    else:
        write += np.bincount(src, weights=hit.sum(axis=1), minlength=ep)
    t_read = read.max() * nbytes / (num_sms * V2_SM_READ_Bps)
    t_write = write.max() * nbytes / (num_sms * V2_SM_WRITE_Bps)
    return float(max(t_read, t_write))


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


def _nic_and_nvlink_Bps(layout: EPLayout) -> tuple[float, float]:
    """The slowest rank's share of its NIC cable(s) and its NVLink, per direction, B/s: a NIC
    that ``m`` EP ranks reach as their own gives each ``1/m`` of its cable (two GPUs behind one
    NIC, as on servers with 4 NICs for 8 GPUs, each move half a NIC)."""
    sharers: dict[str, int] = {}
    for nics in layout.nic_of_rank:
        for n in nics:
            sharers[n] = sharers.get(n, 0) + 1
    nic = np.array([sum(layout.nic_cable_Bps.get(n, 0.0) / sharers[n] for n in nics)
                    for nics in layout.nic_of_rank])  # fmt: skip
    nic_Bps = float(nic.min()) if nic.size else 0.0
    nvl_Bps = float(layout.nvlink_Bps.min()) if layout.ep else 0.0
    return nic_Bps, nvl_Bps


DEVICE_SMS = {"hopper": MAX_SMS, "blackwell": V2_MAX_SMS}
"""SMs of the GPU of each generation DeepEP V2 runs on (SM90, SM100): an H100/H800 SXM5's 132
(NVIDIA H100 Tensor Core GPU Architecture whitepaper, 2022) and a B200's 148 (NVIDIA
Blackwell datasheet), as DeepEP V2's README sizes its SM90 and SM100 runs."""


def device_sms(gpu_model: str | None) -> tuple[int, str]:
    """The SMs of a fabric's GPU for DeepEP V2, and how the count was found (for a message).

    Parameters
    ----------
    gpu_model : str or None
        The GPU model the fabric records (:attr:`topo.moe.traffic.EPLayout.gpu_model`).

    Returns
    -------
    (int, str)
        :data:`DEVICE_SMS` of the model's generation
        (:func:`topo.fabric.gpus.arch_of_model`); a Hopper GPU's 132 when the
        fabric records no model or one of another generation, as ``topo collective`` assumes
        Hopper then.

    Examples
    --------
    >>> device_sms("NVIDIA DGX B200 / HGX B200 8-GPU")[0], device_sms(None)[0]
    (148, 132)
    """
    arch = arch_of_model(gpu_model)
    if arch in DEVICE_SMS:
        gpu = "a Blackwell GPU" if arch == "blackwell" else "a Hopper SXM GPU"
        return DEVICE_SMS[arch], f"the SMs of {gpu}, the fabric's {gpu_model!r}"
    what = "records no GPU model" if gpu_model is None else f"records GPU model {gpu_model!r}"
    return MAX_SMS, (
        f"the SMs of a Hopper SXM GPU, assumed: the fabric {what} (a fabric built for a server "
        "model records its GPU)"
    )


def check_kernel_sms(kernel: str, num_sms: int | None, gpu_model: str | None = None) -> None:
    """Refuse an SM count a kernel's model cannot take: out of the device's range for DeepEP's
    normal (even, at most the H100's 132) and V2 kernels (at most the fabric's GPU's,
    :func:`device_sms`), or given at all to a kernel whose model has no SM budget.

    Parameters
    ----------
    kernel : str
        One of :data:`KERNELS`.
    num_sms : int or None
        SMs given to the kernel (None: its default).
    gpu_model : str or None
        The GPU model the fabric records (bounds DeepEP V2's SMs; None: a Hopper GPU).

    Raises
    ------
    TopoError
        Naming ``num_sms``.
    """
    if num_sms is None:
        return
    if kernel == "deepep-normal":
        if num_sms < 2 or num_sms % 2 or num_sms > MAX_SMS:
            more = ""
            if arch_of_model(gpu_model) == "blackwell":
                more = (
                    f"; the fabric's {gpu_model!r} has {DEVICE_SMS['blackwell']}, which "
                    "deepep-v2 can take"
                )
            raise TopoError(
                f"num_sms must be an even number from 2 to {MAX_SMS} (deepep-normal models "
                f"DeepEP V1's normal kernels on a Hopper SXM GPU's SMs, as its published table's "
                f"H800s{more}), got {num_sms}",
                param="num_sms",
            )
    elif kernel == "deepep-v2":
        most, why = device_sms(gpu_model)
        if not 1 <= num_sms <= most:
            raise TopoError(
                f"num_sms must be from 1 to {most} ({why}), got {num_sms}", param="num_sms"
            )
    else:
        why = {
            "deepep-ll": "its SMs follow from the experts (internode_ll.cu: "
            "ceil(E / ceil(E / 132)))",
            "nccl-ep-ll": "its SMs follow from the experts, as DeepEP's low-latency kernels",
            "nccl-ep-ht": f"no public per-SM rate of its kernels ({NCCL_EP_HT_SMS} SMs by default)",
            "nccl": "NCCL picks its own channels",
        }[kernel]
        raise TopoError(
            f"num_sms applies to deepep-normal and deepep-v2; the model of {kernel} has no SM "
            f"budget: {why}",
            param="num_sms",
        )


class KernelLimitError(TopoError):
    """A kernel's own limits refuse the EP layout (NCCL EP above 64 GPUs or 8 per node).

    ``limit`` is the limit in words without the layout's own figure, the same for every layout
    it refuses (``topo codesign`` says it once for all the EP sizes refused).
    """

    def __init__(self, message: str = "", *, limit: str = "", param: str | None = None) -> None:
        super().__init__(message, param=param)
        self.limit = limit


def _check_nccl_ep(layout: EPLayout, kernel: str) -> None:
    for over, limit, asked in (
        (
            layout.ep > NCCL_EP_MAX_GPUS,
            f"NCCL EP 0.1.0 supports at most {NCCL_EP_MAX_GPUS} GPUs (8 nodes x 8 GPUs, "
            "contrib/nccl_ep/RELEASE.md)",
            f"asked for EP{layout.ep}",
        ),
        (
            layout.gpus_per_node > NCCL_EP_MAX_GPUS_PER_NODE,
            f"NCCL EP 0.1.0 supports at most {NCCL_EP_MAX_GPUS_PER_NODE} GPUs per node "
            "(contrib/nccl_ep/RELEASE.md)",
            f"the EP group has {layout.gpus_per_node}",
        ),
    ):
        if over:
            raise KernelLimitError(f"{kernel}: {limit}; {asked}", limit=limit, param="kernel")


def _node_pairs(layout: EPLayout, experts: np.ndarray) -> float:
    """(token, target node) pairs per rank, the token's own node included."""
    hit = _targets(layout, experts).reshape(-1, layout.nodes, layout.gpus_per_node)
    return float(hit.any(axis=2).sum()) / layout.ep


def kernel_times(
    layout: EPLayout,
    experts: np.ndarray,
    tokens_per_gpu: int,
    dispatch_bytes: float,
    combine_bytes: float,
    kernel: str,
    num_sms: int | None = None,
    *,
    ll_nvlink: bool = True,
) -> KernelResult:
    """Dispatch and combine of one routing by one kernel, in its library's bandwidth definitions.

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
    num_sms : int, optional
        SMs given to the kernel: DeepEP's normal kernels (even, default 24; ``num_sms / 2``
        channels, each forwarding at :data:`FORWARD_DISPATCH_Bps` / :data:`FORWARD_COMBINE_Bps`
        across nodes) or DeepEP V2 (from 1 to the SMs of the fabric's GPU, :func:`device_sms`;
        default: the count its code computes, :func:`topo.moe.deepep_v2.v2_theoretical_sms`,
        on that GPU). Other kernels take none.
    ll_nvlink : bool
        DeepEP's ``allow_nvlink_for_low_latency_mode`` (low-latency kernels): False sends every
        message over RDMA, as the kernels before PR #173 and ``--disable-nvlink`` do.

    Returns
    -------
    KernelResult
        Times in µs, bandwidths in GB/s.

    Raises
    ------
    TopoError
        Unknown kernel; a routing of another shape; RDMA needed with no NIC; an SM count out of
        range or given to a kernel without one; NCCL EP above 64 GPUs or 8 GPUs per node;
        arrays over the memory limit (:func:`topo.flow.solve.memory.check_moe_kernel`, before
        allocating them).
    """
    if kernel not in KERNELS:
        raise TopoError(
            f"kernel must be one of {', '.join(KERNELS)}, got {kernel!r}", param="kernel"
        )
    if experts.ndim != 2 or experts.shape[0] != layout.ep * tokens_per_gpu:
        raise TopoError("the routing must hold ep x tokens_per_gpu tokens")
    check_kernel_sms(kernel, num_sms, layout.gpu_model)
    check_moe_kernel(kernel, layout.ep, tokens_per_gpu, experts.shape[1])
    if kernel.startswith("nccl-ep"):
        _check_nccl_ep(layout, kernel)
    nic_Bps, nvl_Bps = _nic_and_nvlink_Bps(layout)
    T = tokens_per_gpu
    low_latency = kernel in ("deepep-ll", "nccl-ep-ll")
    if low_latency:
        legs = _ll_legs(layout, experts, T, nvlink=ll_nvlink)
    elif kernel == "nccl":
        legs = _nccl_legs(layout, experts, T)
    else:
        legs = _normal_legs(layout, experts, T)
    if kernel == "nccl":
        rdma, nvl = nic_Bps * NCCL_NIC_SHARE, nvl_Bps * NCCL_NVLINK_SHARE
    elif low_latency:
        rdma, nvl = nic_Bps * LL_RDMA_SHARE, nvl_Bps * LL_NVLINK_DISPATCH_SHARE
    else:
        rdma, nvl = nic_Bps * RDMA_SHARE, nvl_Bps * NVLINK_SHARE
    if (legs.rdma_out.any() or legs.rdma_in.any()) and rdma <= 0:
        bare = sum(
            1
            for nics in layout.nic_of_rank
            if sum(layout.nic_cable_Bps.get(n, 0.0) for n in nics) <= 0
        )
        raise TopoError(
            f"kernel {kernel}: {bare} of the {layout.ep} EP ranks have no NIC to send over RDMA "
            "(none of their own carries anything: absent, or on planes or rails the software "
            "does not drive); the kernel sends a rank's network traffic through its own NICs",
            param="kernel",
        )
    sms: int | None = None
    qps: int | None = None
    if kernel == "deepep-normal":
        sms = num_sms or DEEPEP_SMS
    elif kernel == "deepep-v2":
        sms = num_sms or v2_theoretical_sms(
            len(layout.expert_rank),
            experts.shape[1],
            layout.ep,
            layout.gpus_per_node,
            nic_Bps / 1e9,
            nvl_Bps / 1e9,
            device_sms=device_sms(layout.gpu_model)[0],
        )
        qps = v2_theoretical_qps(sms) if layout.nodes > 1 else None
    elif low_latency:
        sms = ll_sms(len(layout.expert_rank))
    elif kernel == "nccl-ep-ht":
        sms = NCCL_EP_HT_SMS
    header = LL_META_BYTES if low_latency else 0
    out = []
    for phase, nbytes in (("dispatch", dispatch_bytes + header), ("combine", combine_bytes)):
        t, bound = _kernel_phase(kernel, legs, layout, experts, T, nbytes, phase, rdma, nvl, sms)
        logical_bytes, logical = nbytes, legs.logical
        if kernel == "nccl-ep-ll":
            logical_bytes = combine_bytes  # ep_bench: hidden x 2 (BF16) per selection
        elif kernel == "nccl-ep-ht":
            logical_bytes, logical = combine_bytes, _node_pairs(layout, experts)
        gbps = Bps_to_GBps(logical * logical_bytes / t) if t > 0 else 0.0
        out.append((s_to_us(t), gbps, bound))
    pure_rdma = low_latency and not ll_nvlink
    kind = "nvlink" if layout.nodes == 1 and not pure_rdma else "rdma"
    name = {
        "deepep-normal": "bottleneck bandwidth",
        "deepep-v2": "bottleneck bandwidth",
        "deepep-ll": "RDMA bandwidth",
        "nccl": "logical bandwidth",
        "nccl-ep-ll": "throughput",
        "nccl-ep-ht": "total_send",
    }[kernel]
    (dt, dg, db), (ct, cg, cb) = out
    return KernelResult(kernel, dt, ct, dg, cg, kind, db, cb, RELEASES[kernel], name, sms, qps)


def _kernel_phase(
    kernel: str,
    legs: _Legs,
    layout: EPLayout,
    experts: np.ndarray,
    T: int,
    nbytes: float,
    phase: str,
    rdma: float,
    nvl: float,
    sms: int | None,
) -> tuple[float, str]:
    """Time of one phase (s) and the leg that sets it, by the kernel's composition rule.

    Low-latency kernels (DeepEP ``csrc/kernels/legacy/internode_ll.cu`` at dd758ca; NCCL EP
    ``contrib/nccl_ep/device/low_latency.cu``, adapted from it): combine ``max(t_rdma,
    t_nvl)``, its warp groups each serving one (destination rank, local expert) pair
    (``responsible_expert_idx``), NVLink destinations by TMA stores, remote ones by IBGDA / GIN
    puts, concurrently; dispatch ``t_rdma + t_nvl`` (topo/data/training.toml,
    ``deepep-pr173-h20``)."""
    if kernel in ("deepep-ll", "nccl-ep-ll"):
        share = LL_NVLINK_COMBINE_SHARE if phase == "combine" else LL_NVLINK_DISPATCH_SHARE
        nvl_ll = nvl / LL_NVLINK_DISPATCH_SHARE * share
        t_rdma = max(legs.rdma_out.max(), legs.rdma_in.max()) * nbytes / rdma if rdma else 0.0
        t_nvl = max(legs.nvl_out.max(), legs.nvl_in.max()) * nbytes / nvl_ll if nvl_ll else 0.0
        bound = "rdma" if t_rdma >= t_nvl else "nvlink"
        if phase == "combine":
            return float(max(t_rdma, t_nvl)), bound
        return float(t_rdma + t_nvl), bound
    if kernel == "deepep-normal":
        ch = (sms or DEEPEP_SMS) // 2
        fwd = ch * (FORWARD_COMBINE_Bps if phase == "combine" else FORWARD_DISPATCH_Bps)
        return _phase(legs, nbytes, rdma, nvl, fwd)
    t, bound = _phase(legs, nbytes, rdma, nvl, 0.0)
    if kernel == "deepep-v2" and sms:
        t_sm = _v2_sm_time(layout, experts, T, nbytes, sms)
        if t_sm > t:
            return t_sm, "sm"
    return t, bound


def kernel_report(
    report: Any, kernel: str, num_sms: int | None = None, *, ll_nvlink: bool = True
) -> KernelResult:
    """:func:`kernel_times` of a report's headline routing (its node limit, its sizes).

    Parameters
    ----------
    report : MoEReport
        From :func:`topo.moe.moe_report`.
    kernel : str
        One of :data:`KERNELS`.
    num_sms : int, optional
        As :func:`kernel_times`.
    ll_nvlink : bool
        As :func:`kernel_times`.

    Returns
    -------
    KernelResult
        With ``layer_us``, ``tpot_ms`` and ``tokens_per_s`` over the report's micro-batches and
        MoE layers, as the report's own (``micro_batches x (dispatch + combine)`` per layer).

    Raises
    ------
    TopoError
        As :func:`kernel_times`; NCCL EP with a combine other than BF16 (``ncclEpCombine``
        asserts ``ncclBfloat16``, contrib/nccl_ep/nccl_ep.cc) or a dispatch other than BF16 or
        FP8 (LL takes BF16 and casts to FP8 on the wire; HT takes BF16 or FP8 with scales).
    """
    if kernel.startswith("nccl-ep"):
        if report.combine_dtype != "bf16":
            raise TopoError(
                f"{kernel}: NCCL EP 0.1.0 combines BF16 only (ncclEpCombine asserts "
                f"ncclBfloat16); got combine_dtype {report.combine_dtype}",
                param="combine_dtype",
            )
        if report.dispatch_dtype not in ("bf16", "fp8"):
            raise TopoError(
                f"{kernel}: NCCL EP 0.1.0 dispatches BF16 or FP8; got dispatch_dtype "
                f"{report.dispatch_dtype}",
                param="dispatch_dtype",
            )
    experts = report.routings[report.headline.node_limit]
    k = kernel_times(
        report.layout,
        experts,
        report.tokens_per_gpu,
        report.dispatch_bytes_per_copy,
        report.combine_bytes_per_copy,
        kernel,
        num_sms,
        ll_nvlink=ll_nvlink,
    )
    layer_us = report.micro_batches * (k.dispatch_us + k.combine_us)
    tpot_s = layer_us * 1e-6 * report.moe_layers
    return replace(
        k,
        layer_us=layer_us,
        tpot_ms=tpot_s * 1e3,
        tokens_per_s=1 / tpot_s if tpot_s > 0 else None,
    )
