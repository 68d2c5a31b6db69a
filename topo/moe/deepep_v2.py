"""DeepEP V2 (``ElasticBuffer``): the SM and QP counts its code computes, and its SM budget.

DeepEP V2 sizes its dispatch and combine kernels analytically instead of auto-tuning
(``deep_ep/buffers/elastic.py``, ``ElasticBuffer.get_theoretical_num_sms`` and
``get_theoretical_num_qps``, DeepEP commit dd758ca of 2026-07-14, the V2 release "Public release
26/04", PR #605). This module carries that arithmetic over unchanged, so that ``topo moe
--kernel deepep-v2`` picks the SM count DeepEP would pick, and the per-SM HBM rates that
arithmetic assumes (200 GB/s read, 50 GB/s write per SM) bound the kernel when it is given
fewer SMs.
"""

from __future__ import annotations

import math

V2_SM_READ_Bps = 200e9
"""HBM read rate of one SM in DeepEP V2's SM model, B/s (``get_theoretical_num_sms``
``sm_read_gbs=200``, elastic.py, commit dd758ca)."""
V2_SM_WRITE_Bps = 50e9
"""HBM/NVLink write rate of one SM in DeepEP V2's SM model, B/s (``sm_write_gbs=50``)."""
V2_NVLINK_FACTOR = 0.9
"""DeepEP V2's NVLink efficiency in its SM model: ``get_nvlink_gbs(factor=0.9)`` times the
summed link rates ``nvidia-smi nvlink -s`` reports (deep_ep/utils/comm.py)."""
V2_SM_MARGIN = 1.25
"""Head-room factor on the computed SM count (``num_sms * 1.25``, then even, at least 4)."""
V2_MAX_SMS = 148
"""Most SMs of a GPU DeepEP V2 runs on: B200's 148 (NVIDIA Blackwell datasheet); H100/H800 have
132. ``--sms`` above the SMs of the fabric's GPU is refused
(:func:`topo.moe.kernels.device_sms`)."""
V2_QPS_ALLOCATED = 129
"""QPs DeepEP V2 allocates in hybrid mode without fast RDMA atomics (65 with them; 17 in direct
mode): ``ElasticBuffer.__init__``, ``num_allocated_qps``."""


def expected_topk(num_experts: int, num_topk: int, num_groups: int) -> float:
    """Expected distinct groups a token's top-k experts fall in, for a uniform gate.

    ``num_groups * (1 - C(E - E/g, k) / C(E, k))``: DeepEP V2's ``get_expected_topk``
    (elastic.py), the hypergeometric mean.

    Parameters
    ----------
    num_experts, num_topk, num_groups : int
        Experts ``E``, experts per token ``k``, groups ``g`` (ranks or nodes; divides ``E``).

    Returns
    -------
    float
        Expected groups per token.
    """
    if num_experts % num_groups:
        raise ValueError("num_groups must divide num_experts")
    rest = math.comb(num_experts - num_experts // num_groups, num_topk)
    return num_groups * (1 - rest / math.comb(num_experts, num_topk))


def v2_sm_coefficients(
    num_experts: int, num_topk: int, ranks: int, gpus_per_node: int
) -> dict[str, float]:
    """DeepEP V2's traffic coefficients per unit of scale-up traffic (one (token, rank) copy).

    Hybrid mode (``allow_hybrid_mode=True``, the default): scale-out ranks are the nodes,
    scale-up ranks the GPUs of a node. Returns ``sm_read``, ``sm_write``, ``rdma`` and ``nvlink``
    exactly as ``get_theoretical_num_sms`` (elastic.py, commit dd758ca) accumulates them.

    Parameters
    ----------
    num_experts, num_topk : int
        Routed experts and experts per token.
    ranks, gpus_per_node : int
        EP ranks and ranks per node.

    Returns
    -------
    dict of str to float
    """
    nodes = ranks // gpus_per_node
    ek = expected_topk(num_experts, num_topk, ranks)
    eso = expected_topk(num_experts, num_topk, nodes) if nodes > 1 else 0.0
    sm_read, sm_write = 1 / ek, 0.0
    if nodes > 1:
        sm_write += 1 / ek
        sm_write += (1 / ek) * (eso / nodes)
        rdma = (1 / ek) * (eso * (1 - 1 / nodes))
        sm_read += eso / ek
        sm_write += 1
        nvlink = 1 - 1 / gpus_per_node
    else:
        sm_write += 1.0  # num_nvlink_ranks / num_ranks
        nvlink = 1 - 1 / gpus_per_node
        rdma = 0.0
    return {"sm_read": sm_read, "sm_write": sm_write, "rdma": rdma, "nvlink": nvlink}


def v2_theoretical_sms(
    num_experts: int,
    num_topk: int,
    ranks: int,
    gpus_per_node: int,
    rdma_GBps: float,
    nvlink_GBps: float,
    *,
    device_sms: int = 132,
    prefer_overlap_with_compute: bool = True,
) -> int:
    """The SM count DeepEP V2 chooses (``ElasticBuffer.get_theoretical_num_sms``).

    The bounded link is RDMA when the scale-out traffic over ``rdma_GBps`` exceeds the
    scale-up traffic over ``nvlink_GBps``, else NVLink; the SMs are those whose reads at
    200 GB/s and writes at 50 GB/s keep pace with it, times 1.25, even, at least 4; with
    ``prefer_overlap_with_compute=False`` at least 64; at most the device's.

    Parameters
    ----------
    num_experts, num_topk, ranks, gpus_per_node : int
        As :func:`v2_sm_coefficients`.
    rdma_GBps : float
        The NIC's line rate, GB/s (V2 reads ``ibstat``'s rate / 8: 50 for 400G).
    nvlink_GBps : float
        The GPU's NVLink rate per direction, GB/s (V2 takes 0.9 of the summed link rates).
    device_sms : int
        The GPU's SMs (132 on H100/H800, 148 on B200).
    prefer_overlap_with_compute : bool
        The buffer's flag (the README's SM counts are those with True).

    Returns
    -------
    int
        SMs.

    Examples
    --------
    >>> v2_theoretical_sms(256, 8, 16, 8, 50, 450)   # README: SM90, CX7, EP 8 x 2
    12
    >>> v2_theoretical_sms(256, 8, 32, 8, 50, 450)   # EP 8 x 4
    6
    >>> v2_theoretical_sms(256, 8, 8, 8, 0, 900, device_sms=148)   # SM100, EP 8, min #SM
    24
    """
    c = v2_sm_coefficients(num_experts, num_topk, ranks, gpus_per_node)
    nvl = V2_NVLINK_FACTOR * nvlink_GBps
    nodes = ranks // gpus_per_node
    if nodes > 1 and c["rdma"] / rdma_GBps > c["nvlink"] / nvl:
        traffic, gbs = c["rdma"], rdma_GBps
    else:
        traffic, gbs = c["nvlink"], nvl
    n = float(device_sms)
    if traffic > 0:
        n = max(
            gbs / traffic * c["sm_read"] / (V2_SM_READ_Bps / 1e9),
            gbs / traffic * c["sm_write"] / (V2_SM_WRITE_Bps / 1e9),
        )
    sms = max(4, math.ceil(n * V2_SM_MARGIN))
    sms += sms % 2
    if not prefer_overlap_with_compute:
        sms = max(sms, 64)
    return min(sms, device_sms)


def v2_theoretical_qps(num_sms: int, *, hybrid: bool = True) -> int:
    """QPs DeepEP V2 uses (``get_theoretical_num_qps``): ``16 num_sms + 1`` in hybrid mode,
    ``min(num_sms, 9)`` in direct mode, capped by the allocated :data:`V2_QPS_ALLOCATED`.

    Examples
    --------
    >>> v2_theoretical_qps(6)
    97
    """
    qps = num_sms * 16 + 1 if hybrid else min(num_sms, 9)
    return min(qps, V2_QPS_ALLOCATED)
