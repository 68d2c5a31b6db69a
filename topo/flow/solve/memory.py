"""Memory estimates of the dense structures topo builds, checked before they are allocated.

Two structures grow with the square of a problem's size:

- the reduced all-to-all's demand table (:func:`topo.flow.reduce.planes.reduce`): one entry per
  ordered pair of twin classes, ``classes²`` entries of about :data:`BYTES_PER_DEMAND_ENTRY`
  each; a fabric without symmetry (the full Dragonfly: 16,416 classes) needs over 35 GB;
- the MoE copy matrices (:mod:`topo.moe`): rank-to-rank counts of shape ``(ep, ep)``, int64 or
  float64, :data:`MOE_RANK_MATRICES` of them alive at once.

and two grow with the product of two sizes, in an MoE report (:func:`topo.moe.moe_report`):

- the gating's score arrays: ``(tokens gated at once, routed experts)`` float64 or int64,
  :data:`MOE_GATE_ARRAYS` of them alive at once (:data:`MOE_GATE_ARRAYS_UNLIMITED` without a
  binding node limit);
- the token arrays of the routings, destinations and copies: about
  :data:`MOE_BYTES_PER_COPY` per (token, destination), ``k + 1`` destinations a token.

Each check compares the estimate with :func:`memory_limit_bytes` and raises before the first
byte is allocated, naming the estimate, the limit and the way out.
"""

from __future__ import annotations

import math
import os

from topo.errors import LPTooLarge, TopoError

DEFAULT_MEMORY_LIMIT_BYTES = 4 * 2**30
"""The memory one dense structure may take when ``TOPO_MEMORY_LIMIT_GB`` is not set: 4 GiB
(half of an 8 GB laptop or CI runner)."""

MEMORY_LIMIT_ENV = "TOPO_MEMORY_LIMIT_GB"
"""Environment variable that sets the limit, in GB (1e9 bytes)."""

BYTES_PER_DEMAND_ENTRY = 141
"""Bytes per entry of the reduced demand table (a dict slot, its ``("in", j)`` key and a float),
measured with ``tracemalloc`` on CPython 3.11 (1,000 x 1,000 entries: 140.7 B each)."""

MOE_RANK_MATRICES = 6
"""``(ep, ep)`` arrays of 8-byte numbers alive at once in one MoE scenario (read from
:mod:`topo.moe.traffic` and :mod:`topo.moe.timing`): the network and NVLink copy counts, the
``bincount`` buffer they are counted in, and the byte matrices of a phase for each link kind
with one temporary."""


MOE_GATE_ARRAYS = 4
"""``(tokens, experts)`` arrays of 8-byte numbers alive at once while a chunk of tokens is gated
with a binding node limit (read from :func:`topo.moe.gating.gate`): the scores, the scores
arranged by group (or their sorted copy), the scores masked to the chosen groups, and the
negated masked scores with ``argpartition``'s indices (one at a time; 4 at the peak)."""

MOE_GATE_ARRAYS_UNLIMITED = 3
"""The same without a node limit: the scores, their negation and ``argpartition``'s indices."""

MOE_BYTES_PER_COPY = 128
"""Peak bytes of an MoE report's token arrays per (token, destination), a token having
``k`` routed destinations and the shared one: measured with ``tracemalloc`` on
:func:`topo.moe.moe_report` (DeepSeek-V3's shape, EP64, 2 routings and 2 schemes, 1,048,576
tokens: 1,065 B a token, 118 B a destination; k = 2: 106 B; k = 16: 120 B; no shared
expert: 127 B), rounded up."""


MOE_KERNEL_BYTES = {
    "deepep-normal": (1, 10),
    "deepep-v2": (1, 10),
    "nccl-ep-ht": (1, 10),
    "deepep-ll": (0, 36),
    "nccl-ep-ll": (0, 36),
    "nccl": (6, 4),
}
"""Peak bytes of an EP kernel's model (:func:`topo.moe.kernels.kernel_times`) per (token, EP
rank) and per (token, routed expert): boolean ``(tokens, ranks)`` target arrays (the normal
kernels' one, the NCCL all-to-all's same-node, own, local and remote ones) and the per-copy
index arrays. Measured with ``tracemalloc`` (DeepSeek-V3's shape, EP32 and EP64 of 262,144
tokens: deepep-normal 107 and 137 B a token, deepep-ll 272, nccl 192 and 352), rounded up."""


def memory_limit_bytes() -> int:
    """The memory limit of one dense structure, bytes.

    Returns
    -------
    int
        ``TOPO_MEMORY_LIMIT_GB`` × 1e9 when set to a positive number, else
        :data:`DEFAULT_MEMORY_LIMIT_BYTES`.

    Raises
    ------
    TopoError
        If ``TOPO_MEMORY_LIMIT_GB`` is set to something that is not a positive finite number.
    """
    raw = os.environ.get(MEMORY_LIMIT_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_MEMORY_LIMIT_BYTES
    try:
        gb = float(raw)
    except ValueError:
        gb = math.nan
    if not (math.isfinite(gb) and gb > 0):
        raise TopoError(f"{MEMORY_LIMIT_ENV} must be a positive number of GB, got {raw!r}")
    return int(gb * 1e9)


def demand_table_bytes(classes: int) -> int:
    """Estimated bytes of the reduced all-to-all's demand table of ``classes`` twin classes."""
    return classes * classes * BYTES_PER_DEMAND_ENTRY


def check_demand_table(classes: int, servers: int) -> None:
    """Refuse a reduced all-to-all whose demand table would not fit in memory.

    Parameters
    ----------
    classes : int
        Twin classes of servers the reduction found.
    servers : int
        Servers of the fabric (named in the message).

    Raises
    ------
    LPTooLarge
        If :func:`demand_table_bytes` exceeds :func:`memory_limit_bytes`: the exact LP is out
        of reach, and :func:`topo.flow.concurrent_flow` reports certified bounds instead.
    """
    need, limit = demand_table_bytes(classes), memory_limit_bytes()
    if need > limit:
        raise LPTooLarge(
            f"the exact LP needs a demand table of {classes:,}² pairs of server classes (the "
            f"{servers:,} servers have little symmetry): about {need / 1e9:,.1f} GB, over the "
            f"memory limit of {limit / 1e9:.1f} GB ({MEMORY_LIMIT_ENV})"
        )


def moe_matrices_bytes(ep: int) -> int:
    """Estimated peak bytes of the MoE rank-to-rank matrices of ``ep`` ranks."""
    return MOE_RANK_MATRICES * 8 * ep * ep


def check_moe_matrices(ep: int) -> None:
    """Refuse an EP size whose rank-to-rank matrices would not fit in memory.

    Parameters
    ----------
    ep : int
        EP ranks (GPUs).

    Raises
    ------
    TopoError
        If :func:`moe_matrices_bytes` exceeds :func:`memory_limit_bytes`, naming the largest
        EP size that fits (``param`` ``ep``).
    """
    need, limit = moe_matrices_bytes(ep), memory_limit_bytes()
    if need > limit:
        fits = math.isqrt(limit // (MOE_RANK_MATRICES * 8))
        raise TopoError(
            f"ep must be at most {fits:,} ranks within the memory limit of {limit / 1e9:.1f} GB "
            f"({MEMORY_LIMIT_ENV}): {ep:,} ranks need {MOE_RANK_MATRICES} rank-to-rank matrices "
            f"of {ep:,}² entries, about {need / 1e9:,.1f} GB",
            param="ep",
        )


def moe_gating_bytes(tokens: int, experts: int, *, limited: bool = True) -> int:
    """Estimated peak bytes of gating ``tokens`` tokens at once over ``experts`` routed experts:
    :data:`MOE_GATE_ARRAYS` (``limited``) or :data:`MOE_GATE_ARRAYS_UNLIMITED` arrays of
    ``tokens x experts`` 8-byte numbers."""
    arrays = MOE_GATE_ARRAYS if limited else MOE_GATE_ARRAYS_UNLIMITED
    return arrays * 8 * tokens * experts


def moe_token_bytes(tokens: int, k: int) -> int:
    """Estimated peak bytes of an MoE report's token arrays: ``tokens x (k + 1)`` destinations
    of :data:`MOE_BYTES_PER_COPY` each."""
    return MOE_BYTES_PER_COPY * tokens * (k + 1)


def check_moe_tokens(
    ep: int, tokens_per_gpu: int, experts: int, k: int, *, at_once: int, limited: bool = True
) -> None:
    """Refuse an MoE report whose gating or token arrays would not fit in memory.

    Parameters
    ----------
    ep : int
        EP ranks (GPUs).
    tokens_per_gpu : int
        Tokens each rank dispatches; ``ep x tokens_per_gpu`` tokens are routed.
    experts : int
        Routed experts (the model's ``n_routed_experts``).
    k : int
        Routed experts per token.
    at_once : int
        Most tokens gated at once (:data:`topo.moe.gating.CHUNK_TOKENS`).
    limited : bool
        A node limit binds (the gating ranks groups: :data:`MOE_GATE_ARRAYS` arrays).

    Raises
    ------
    TopoError
        If :func:`moe_gating_bytes` of ``min(ep x tokens_per_gpu, at_once)`` tokens or
        :func:`moe_token_bytes` of ``ep x tokens_per_gpu`` tokens exceeds
        :func:`memory_limit_bytes`: one line with the estimate, the limit and the most
        tokens that fit (names ``ep`` and ``tokens_per_gpu``).
    """
    limit = memory_limit_bytes()
    tokens = ep * tokens_per_gpu
    chunk = min(tokens, at_once)
    names = ("ep", "tokens_per_gpu")
    per_token = moe_gating_bytes(1, experts, limited=limited)
    gating = per_token * chunk
    if gating > limit:
        arrays = MOE_GATE_ARRAYS if limited else MOE_GATE_ARRAYS_UNLIMITED
        fits = limit // per_token
        raise TopoError(
            f"gating ep {ep} x tokens_per_gpu {tokens_per_gpu} = {tokens:,} tokens over "
            f"{experts:,} routed experts (the model's n_routed_experts) takes {arrays} arrays of "
            f"{chunk:,} x {experts:,} x 8 B, about {gating / 1e9:,.2f} GB, over the memory "
            f"limit of {limit / 1e9:.2f} GB ({MEMORY_LIMIT_ENV}): at most {fits:,} tokens fit "
            f"with {experts:,} experts; lower ep x tokens_per_gpu or n_routed_experts",
            param="tokens_per_gpu",
            names=names * 2,
        )
    per_token = moe_token_bytes(1, k)
    need = per_token * tokens
    if need > limit:
        fits = limit // per_token
        raise TopoError(
            f"ep {ep} x tokens_per_gpu {tokens_per_gpu} = {tokens:,} tokens need their "
            f"arrays of {k} + 1 destinations, about {MOE_BYTES_PER_COPY} B per (token, "
            f"destination): {need / 1e9:,.2f} GB, over "
            f"the memory limit of {limit / 1e9:.2f} GB ({MEMORY_LIMIT_ENV}): at most "
            f"{fits:,} tokens fit; lower ep x tokens_per_gpu",
            param="tokens_per_gpu",
            names=names * 2,
        )


def moe_kernel_bytes(kernel: str, tokens: int, ep: int, k: int) -> int:
    """Estimated peak bytes of an EP kernel's model of ``tokens`` tokens on ``ep`` ranks, ``k``
    routed experts a token (:data:`MOE_KERNEL_BYTES`)."""
    per_rank, per_expert = MOE_KERNEL_BYTES[kernel]
    return tokens * (per_rank * ep + per_expert * k)


def check_moe_kernel(kernel: str, ep: int, tokens_per_gpu: int, k: int) -> None:
    """Refuse an EP kernel's model whose arrays would not fit in memory.

    Parameters
    ----------
    kernel : str
        One of :data:`MOE_KERNEL_BYTES`.
    ep, tokens_per_gpu, k : int
        EP ranks, tokens per rank, routed experts per token.

    Raises
    ------
    TopoError
        If :func:`moe_kernel_bytes` exceeds :func:`memory_limit_bytes` (names ``ep``,
        ``tokens_per_gpu`` and ``kernel``).
    """
    limit, tokens = memory_limit_bytes(), ep * tokens_per_gpu
    per_token = moe_kernel_bytes(kernel, 1, ep, k)
    need = per_token * tokens
    if need > limit:
        per_rank, per_expert = MOE_KERNEL_BYTES[kernel]
        fits = limit // per_token
        parts = [
            f"{b} B per (token, {what})"
            for b, what in ((per_rank, "rank"), (per_expert, "expert"))
            if b
        ]
        raise TopoError(
            f"kernel {kernel} on ep {ep} x tokens_per_gpu {tokens_per_gpu} = {tokens:,} tokens "
            f"needs about {' and '.join(parts)}, "
            f"{need / 1e9:,.2f} GB, over the memory limit of {limit / 1e9:.2f} GB "
            f"({MEMORY_LIMIT_ENV}): at most {fits:,} tokens fit; lower ep x tokens_per_gpu",
            param="tokens_per_gpu",
            names=("kernel", "ep", "tokens_per_gpu", "ep", "tokens_per_gpu"),
        )
