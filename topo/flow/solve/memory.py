"""Memory estimates of the dense structures topo builds, checked before they are allocated.

Two structures grow with the square of a problem's size:

- the reduced all-to-all's demand table (:func:`topo.flow.reduce.planes.reduce`): one entry per
  ordered pair of twin classes, ``classes²`` entries of about :data:`BYTES_PER_DEMAND_ENTRY`
  each; a fabric without symmetry (the full Dragonfly: 16,416 classes) needs over 35 GB;
- the MoE copy matrices (:mod:`topo.moe`): rank-to-rank counts of shape ``(ep, ep)``, int64 or
  float64, :data:`MOE_RANK_MATRICES` of them alive at once.

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
