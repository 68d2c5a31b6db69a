"""All-to-all bandwidth per GPU of each family of a cost comparison, by the flow solver.

The flow solver's exact reductions were written for Clos fabrics; Dragonfly and Slim Fly keep
one commodity per server class, so they are solved on a small instance of the same family
(:attr:`SolvedBandwidth.instance` says which), and the per-GPU rate of that instance stands for
the full size. :func:`topo.plot.plot_cost` draws the result next to the cost per endpoint.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from topo.builders import build
from topo.cost.compare import CompareRow
from topo.flow import alltoall_bandwidth

__all__ = ["SOLVE_GPUS", "SolvedBandwidth", "solve_bandwidth"]

SOLVE_GPUS = 16_384
"""Largest fat tree solved at full size (about 1 s); larger ones are solved at this size (a
partial non-blocking fat tree has the same per-GPU rate)."""


@dataclass(frozen=True)
class SolvedBandwidth:
    """All-to-all rate per GPU of one family, and the instance it was solved on.

    Attributes
    ----------
    family : str
    internode_GBps : float
        All-to-all rate per GPU across servers (the fabric's share, GB/s = 1e9 B/s): unlike
        nccl-tests' busbw it does not count the intra-server share, so a small instance does
        not flatter its family.
    instance : str
        What was solved, e.g. ``q = 5, 200 GPUs``.
    full_size : bool
        True if the instance is the compared fabric itself.
    solve_seconds : float
        Time to build and solve the instance, s.
    """

    family: str
    internode_GBps: float
    instance: str
    full_size: bool
    solve_seconds: float


def _instance(
    row: CompareRow, switch_ports: int, nics_per_node: int
) -> tuple[dict[str, Any], str, bool]:
    """Builder arguments of the instance to solve for ``row``, its label, and whether full."""
    base: dict[str, Any] = dict(switch_ports=switch_ports, nics_per_node=nics_per_node)
    if row.family in ("ft2", "mpft", "ft3", "rail-only", "hpn"):
        gpus = row.endpoints // nics_per_node * 8
        if gpus <= SOLVE_GPUS:
            return {**base, "family": row.family}, f"full size, {gpus:,} GPUs", True
        blocking = "" if row.family == "hpn" else " (non-blocking: same per-GPU rate)"
        return (
            {**base, "family": row.family, "gpus": SOLVE_GPUS},
            f"{SOLVE_GPUS:,} of {gpus:,} GPUs{blocking}",
            False,
        )
    if row.family == "slimfly":
        return (
            {**base, "family": "slimfly", "q": 5},
            "q = 5, 200 GPUs (full size too large for the flow solver)",
            False,
        )
    return (
        {
            **base,
            "family": "dragonfly",
            "routers_per_group": 4,
            "endpoints_per_router": 2,
            "global_ports": 2,
        },
        "a = 4, p = h = 2, 9 groups, 72 GPUs (full size too large for the flow solver)",
        False,
    )


def solve_bandwidth(
    rows: Sequence[CompareRow],
    *,
    switch_ports: int = 64,
    link_gbps: float = 400.0,
    nics_per_node: int = 8,
) -> list[SolvedBandwidth]:
    """All-to-all bandwidth per GPU of each compared family, by the flow solver.

    Servers: 8 GPUs and ``nics_per_node`` NICs, H800 NVLink and PCIe defaults.

    Parameters
    ----------
    rows : Sequence[CompareRow]
        From :func:`topo.cost.compare`.
    switch_ports : int, default 64
        Switch radix (ports).
    link_gbps : float, default 400.0
        Port and cable speed, Gb/s.
    nics_per_node : int, default 8
        NICs per server (MPFT planes).

    Returns
    -------
    list of SolvedBandwidth
        One per row, in order.

    Raises
    ------
    TopoError
        From the builders or the flow solver.
    """
    out = []
    for row in rows:
        args, label, full = _instance(row, switch_ports, nics_per_node)
        family = args.pop("family")
        t0 = time.perf_counter()
        G = build(family, link_gbps=link_gbps, **args)
        r = alltoall_bandwidth(G)
        out.append(
            SolvedBandwidth(
                row.family, r.internode_per_gpu_Bps / 1e9, label, full, time.perf_counter() - t0
            )
        )
    return out
